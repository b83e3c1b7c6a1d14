/*
 * Topology discovery: turns hwloc into one plain numacoll_locality_t record
 * for the calling thread (PU, core, L3, package, NUMA node).
 *
 * Nothing of hwloc leaves this file: groups, trees and segment placement
 * work on the exchanged records only and are tested without hwloc. The
 * topology can be this machine, a synthetic description or an XML file;
 * under the last two hwloc cannot tell where the process runs (its binding
 * queries are dummies that report every PU), so tests and fake-topology
 * runs inject the PU.
 *
 * A process creates a team per communicator, so discovery is cached per
 * process (below, "the per-process cache"): a team costs one binding query
 * of the calling thread, not a topology load.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <hwloc.h>

#include "topo/topo.h"

static const char synthetic_prefix[] = "synthetic:";

/* Write the error sentence (msg may be NULL: the caller only wants the code)
 * and return the status, so error paths stay one line. */
static int topo_error(char *msg, size_t msglen, const char *fmt, ...)
{
    if (msg && msglen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msglen, fmt, ap);
        va_end(ap);
    }
    return NUMACOLL_ERR_TOPO;
}

/* hwloc indexes are unsigned with (unsigned)-1 for "unknown"; the record
 * uses -1 for that, and for anything that would not fit. */
static int32_t index_or_none(unsigned idx)
{
    return idx == HWLOC_UNKNOWN_INDEX || idx > INT32_MAX ? -1 : (int32_t)idx;
}

static int32_t ancestor_index(hwloc_topology_t topo, hwloc_obj_t pu,
                              hwloc_obj_type_t type)
{
    hwloc_obj_t a = hwloc_get_ancestor_obj_by_type(topo, type, pu);
    return a ? index_or_none(a->logical_index) : -1;
}

/* In hwloc 2.x a NUMA node hangs off the memory side of the nearest normal
 * object that holds memory (package, group, L3, ...), possibly below a
 * memory-side cache, so it is never an ancestor of the PU: climb until an
 * object has memory children, then follow the first memory child down. */
static int32_t local_numa_os_index(hwloc_obj_t pu)
{
    for (hwloc_obj_t obj = pu; obj; obj = obj->parent) {
        if (obj->memory_arity == 0)
            continue;
        for (hwloc_obj_t m = obj->memory_first_child; m;
             m = m->memory_first_child)
            if (m->type == HWLOC_OBJ_NUMANODE)
                return index_or_none(m->os_index);
    }
    return -1;
}

/* The calling thread's binding and last CPU, the process's where a system
 * has no per-thread query. The thread comes first: it is the one that
 * creates the team and makes its calls, and the process-wide queries read
 * /proc for every thread (about 100 us under Open MPI's helper threads, on
 * every team) only to report the union of CPUs the library never runs on. */
static int thread_binding(hwloc_topology_t topo, hwloc_bitmap_t set)
{
    if (hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_THREAD) == 0)
        return 0;
    return hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS);
}

static int thread_location(hwloc_topology_t topo, hwloc_bitmap_t set)
{
    if (hwloc_get_last_cpu_location(topo, set, HWLOC_CPUBIND_THREAD) == 0)
        return 0;
    return hwloc_get_last_cpu_location(topo, set, HWLOC_CPUBIND_PROCESS);
}

/* Ask the OS where the thread runs; binding is its binding, NULL if that
 * query failed. Any failure degrades to PU 0, unbound: a wrong guess only
 * costs locality, never correctness. */
static hwloc_obj_t os_pu(hwloc_topology_t topo, hwloc_const_bitmap_t binding,
                         int32_t *bound)
{
    hwloc_obj_t pu = NULL;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    *bound = 0;
    if (set && thread_location(topo, set) == 0)
        pu = hwloc_get_obj_inside_cpuset_by_type(topo, set, HWLOC_OBJ_PU, 0);
    /* A location outside the binding is stale (the thread was re-bound and
     * has not run since); the binding is the better answer. */
    if (binding && !hwloc_bitmap_iszero(binding) &&
        (!pu || !hwloc_bitmap_isset(binding, pu->os_index))) {
        hwloc_obj_t in = hwloc_get_obj_inside_cpuset_by_type(
            topo, binding, HWLOC_OBJ_PU, 0);
        if (in)
            pu = in;
    }
    /* Under a fake topology the binding is a dummy (every PU): not evidence
     * of anything, so the thread counts as unbound. */
    if (pu && binding && hwloc_topology_is_thissystem(topo))
        *bound = !hwloc_bitmap_isincluded(
            hwloc_topology_get_complete_cpuset(topo), binding);
    if (!pu) {
        *bound = 0;
        pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, 0);
    }
    hwloc_bitmap_free(set);
    return pu;
}

/* Point hwloc at the requested topology. NULL keeps hwloc's default, which
 * already honours HWLOC_XMLFILE / HWLOC_SYNTHETIC from the environment. */
static int select_source(hwloc_topology_t topo, const char *topology,
                         char *msg, size_t msglen)
{
    if (!topology)
        return NUMACOLL_OK;
    size_t plen = sizeof synthetic_prefix - 1;
    if (strncmp(topology, synthetic_prefix, plen) == 0) {
        if (hwloc_topology_set_synthetic(topo, topology + plen) != 0)
            return topo_error(msg, msglen,
                              "hwloc rejected the synthetic topology "
                              "description \"%s\" (see hwloc(7), e.g. "
                              "\"pack:2 numa:2 core:4 pu:1\").",
                              topology + plen);
        return NUMACOLL_OK;
    }
    if (hwloc_topology_set_xml(topo, topology) != 0) {
        int err = errno;
        return topo_error(msg, msglen,
                          "hwloc cannot read the XML topology file \"%s\": "
                          "%s.", topology, strerror(err));
    }
    return NUMACOLL_OK;
}

static const char *env_value(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* Names where the topology came from, for error sentences. Both variables
 * are named when both are set: which one wins is hwloc's choice. */
static const char *source_name(const char *topology, char *buf, size_t len)
{
    const char *xml = env_value("HWLOC_XMLFILE");
    const char *syn = env_value("HWLOC_SYNTHETIC");
    if (topology)
        snprintf(buf, len, "\"%s\"", topology);
    else if (xml && syn)
        snprintf(buf, len, "HWLOC_XMLFILE=\"%s\" / HWLOC_SYNTHETIC=\"%s\"",
                 xml, syn);
    else if (xml)
        snprintf(buf, len, "HWLOC_XMLFILE=\"%s\"", xml);
    else if (syn)
        snprintf(buf, len, "HWLOC_SYNTHETIC=\"%s\"", syn);
    else
        snprintf(buf, len, "this machine");
    return buf;
}

/* hwloc quietly falls back to the real machine when HWLOC_XMLFILE or
 * HWLOC_SYNTHETIC cannot be used; a run that asked for a fake machine must
 * not silently get this one. A fake topology reports is_thissystem == 0
 * unless HWLOC_THISSYSTEM overrides that, in which case we cannot tell. */
static int env_topology_ignored(hwloc_topology_t topo)
{
    return (env_value("HWLOC_XMLFILE") || env_value("HWLOC_SYNTHETIC")) &&
           !getenv("HWLOC_THISSYSTEM") && hwloc_topology_is_thissystem(topo);
}

/*
 * The per-process cache. Loading a topology costs ~14 ms and the process
 * queries of where it runs ~0.1 ms; a process creates a team per
 * communicator. So the last topology loaded is kept, keyed by where it came
 * from: the argument, HWLOC_XMLFILE, HWLOC_SYNTHETIC, HWLOC_THISSYSTEM and,
 * for an XML file, the file's identity (device, inode, size, modification
 * time), so a file rewritten in place is read again. The record derived
 * from it is kept too, keyed by that topology, the pu argument and (pu < 0)
 * the calling thread's binding, which is asked on every call: a thread
 * bound elsewhere gets a new record. An unbound thread keeps the record of
 * its first discovery: where it happens to run is a snapshot either way,
 * and one answer keeps its NUMA groups and trees the same in every team.
 * The lock serialises discovery (hwloc topologies are not safe for
 * concurrent use). Both live until the library is unloaded (below).
 */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static hwloc_topology_t cache_topo;
static unsigned long cache_gen;        /* bumped on every load            */
static char cache_key[2048];

static struct {
    int valid;
    unsigned long gen;                 /* cache_gen it was derived from   */
    int pu;                            /* the pu argument                 */
    hwloc_bitmap_t binding;            /* pu < 0: the thread's binding    */
    numacoll_locality_t loc;           /* pid is refreshed (fork)         */
    int32_t caches[2];                 /* L1, L2 of loc's PU              */
} loc_cache;

static hwloc_topology_t load_topology(const char *topology, char *msg,
                                      size_t msglen)
{
    hwloc_topology_t topo;
    char src[512];
    if (hwloc_topology_init(&topo) != 0) {
        int err = errno;
        topo_error(msg, msglen, "hwloc_topology_init failed for %s: %s.",
                   source_name(topology, src, sizeof src), strerror(err));
        return NULL;
    }
    if (select_source(topo, topology, msg, msglen) != NUMACOLL_OK)
        goto fail;
    if (hwloc_topology_load(topo) != 0) {
        int err = errno;
        topo_error(msg, msglen, "hwloc could not load the topology of %s: %s.",
                   source_name(topology, src, sizeof src), strerror(err));
        goto fail;
    }
    if (!topology && env_topology_ignored(topo)) {
        topo_error(msg, msglen, "hwloc could not use %s (unreadable file or "
                   "invalid description) and fell back to this machine; fix "
                   "or unset the variable.",
                   source_name(topology, src, sizeof src));
        goto fail;
    }
    return topo;
fail:
    hwloc_topology_destroy(topo);
    return NULL;
}

/* The identity of the XML file hwloc will read, if any, so that the
 * key changes when the file does. */
static void file_identity(const char *topology, char *buf, size_t len)
{
    const char *xml = topology;
    if (!topology)
        xml = env_value("HWLOC_XMLFILE");
    else if (strncmp(topology, synthetic_prefix, sizeof synthetic_prefix - 1) == 0)
        xml = NULL;
    struct stat st;
    if (!xml)
        snprintf(buf, len, "-");
    else if (stat(xml, &st) != 0)
        snprintf(buf, len, "errno %d", errno);
    else
        snprintf(buf, len, "%ju:%ju:%jd:%jd.%09ld", (uintmax_t)st.st_dev,
                 (uintmax_t)st.st_ino, (intmax_t)st.st_size,
                 (intmax_t)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

static hwloc_topology_t cached_topology(const char *topology, char *msg,
                                        size_t msglen)
{
    char key[sizeof cache_key], id[128];
    const char *xml = env_value("HWLOC_XMLFILE"),
               *syn = env_value("HWLOC_SYNTHETIC"),
               *thissys = getenv("HWLOC_THISSYSTEM");
    file_identity(topology, id, sizeof id);
    int n = snprintf(key, sizeof key, "%s\n%s\n%s\n%s\n%s",
                     topology ? topology : "", xml ? xml : "", syn ? syn : "",
                     thissys ? thissys : "(unset)", id);
    if (cache_topo && n > 0 && (size_t)n < sizeof key &&
        strcmp(key, cache_key) == 0)
        return cache_topo;
    hwloc_topology_t topo = load_topology(topology, msg, msglen);
    if (!topo)
        return NULL;
    if (cache_topo)
        hwloc_topology_destroy(cache_topo);
    cache_topo = topo;
    cache_gen++;
    /* an over-long key is never matched again: no cache, still correct */
    snprintf(cache_key, sizeof cache_key, "%s", (size_t)n < sizeof key ? key : "");
    return topo;
}

/* Open MPI closes its components at MPI_Finalize: without this the
 * topology would be lost memory once the library is gone. At exit it only
 * does early what the kernel would do; a discovery still running in
 * another thread holds the lock, and one after this loads afresh. */
__attribute__((destructor)) static void cache_fini(void)
{
    pthread_mutex_lock(&cache_lock);
    if (cache_topo)
        hwloc_topology_destroy(cache_topo);
    cache_topo = NULL;
    cache_key[0] = '\0';
    hwloc_bitmap_free(loc_cache.binding);
    loc_cache.binding = NULL;
    loc_cache.valid = 0;
    pthread_mutex_unlock(&cache_lock);
}

/* The record of PU obj, all but pid, and its L1 and L2 caches. */
static void derive(hwloc_topology_t topo, hwloc_obj_t obj,
                   numacoll_locality_t *loc, int32_t caches[2])
{
    caches[0] = ancestor_index(topo, obj, HWLOC_OBJ_L1CACHE);
    caches[1] = ancestor_index(topo, obj, HWLOC_OBJ_L2CACHE);
    loc->pu = index_or_none(obj->logical_index);
    loc->core = ancestor_index(topo, obj, HWLOC_OBJ_CORE);
    loc->l3 = ancestor_index(topo, obj, HWLOC_OBJ_L3CACHE);
    loc->package = ancestor_index(topo, obj, HWLOC_OBJ_PACKAGE);
    loc->numa = local_numa_os_index(obj);
}

/* The cached record, if it was derived from the same topology, pu and
 * binding (NULL: no binding known, never a match for pu < 0). */
static int loc_cache_hit(int pu, hwloc_const_bitmap_t binding)
{
    if (!loc_cache.valid || loc_cache.gen != cache_gen || loc_cache.pu != pu)
        return 0;
    if (pu >= 0)
        return 1;
    return binding && loc_cache.binding &&
           hwloc_bitmap_isequal(binding, loc_cache.binding);
}

static void loc_cache_store(int pu, hwloc_const_bitmap_t binding,
                            const numacoll_locality_t *loc,
                            const int32_t caches[2])
{
    loc_cache.valid = 0;
    if (pu < 0) {
        if (!binding)
            return;
        if (!loc_cache.binding && !(loc_cache.binding = hwloc_bitmap_alloc()))
            return;    /* no memory for the key: no cache, still correct */
        if (hwloc_bitmap_copy(loc_cache.binding, binding) != 0)
            return;
    }
    loc_cache.gen = cache_gen;
    loc_cache.pu = pu;
    loc_cache.loc = *loc;
    loc_cache.caches[0] = caches[0];
    loc_cache.caches[1] = caches[1];
    loc_cache.valid = 1;
}

int nc__topo_discover(const char *topology, int pu, numacoll_locality_t *loc,
                      char *msg, size_t msglen)
{
    int32_t caches[2];
    return nc__topo_discover_ex(topology, pu, loc, caches, msg, msglen);
}

int nc__topo_discover_ex(const char *topology, int pu, numacoll_locality_t *loc,
                         int32_t caches[2], char *msg, size_t msglen)
{
    if (!loc || !caches)
        return topo_error(msg, msglen, "nc__topo_discover: the locality "
                          "record is NULL.");
    /* Unknown until found, so a failed discovery leaves no stale values. */
    *loc = (numacoll_locality_t){.pu = -1, .core = -1, .l3 = -1, .numa = -1,
                                 .package = -1, .bound = 0,
                                 .pid = (int32_t)getpid()};
    caches[0] = caches[1] = -1;
    if (msg && msglen > 0)
        msg[0] = '\0';

    hwloc_obj_t obj;
    hwloc_bitmap_t binding = NULL;
    int npus;
    char src[512];
    pthread_mutex_lock(&cache_lock);
    hwloc_topology_t topo = cached_topology(topology, msg, msglen);
    int rc = NUMACOLL_ERR_TOPO;
    if (!topo)
        goto out;

    npus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    if (npus <= 0) {
        rc = topo_error(msg, msglen, "the topology of %s has no PU.",
                        source_name(topology, src, sizeof src));
        goto out;
    }

    if (pu < 0) {
        binding = hwloc_bitmap_alloc();
        if (binding && thread_binding(topo, binding) != 0) {
            hwloc_bitmap_free(binding);
            binding = NULL;
        }
    }
    if (loc_cache_hit(pu, binding)) {
        int32_t pid = loc->pid;
        *loc = loc_cache.loc;
        loc->pid = pid;
        caches[0] = loc_cache.caches[0];
        caches[1] = loc_cache.caches[1];
        rc = NUMACOLL_OK;
        goto out;
    }

    if (pu >= 0) {
        /* Modulo: an injected placement may oversubscribe the PUs. */
        obj = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned)(pu % npus));
        loc->bound = 1;
    } else {
        obj = os_pu(topo, binding, &loc->bound);
    }
    if (!obj) {
        rc = topo_error(msg, msglen, "no PU object found in the topology of "
                        "%s.", source_name(topology, src, sizeof src));
        goto out;
    }
    derive(topo, obj, loc, caches);
    loc_cache_store(pu, binding, loc, caches);
    rc = NUMACOLL_OK;
out:
    pthread_mutex_unlock(&cache_lock);
    hwloc_bitmap_free(binding);
    return rc;
}
