/*
 * Suite "topo_cache": topology discovery is cached per process. Many teams
 * with one configuration load the hwloc topology at most once and ask the
 * OS only for the calling thread's binding (no process-wide query, which
 * reads /proc for every thread); the record follows the calling thread's
 * binding, also when it changes; an XML file rewritten in place is read
 * again.
 *
 * The hwloc calls are counted by wrapping them here: the test binary links
 * libnumacoll statically, so its calls bind to these definitions, which
 * forward to the library's (dlsym RTLD_NEXT). Every check runs in forked
 * ranks, so the counts and bindings of one check never leak into another.
 */
#include <CUnit/CUnit.h>
#include <dlfcn.h>
#include <hwloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/runner.h"
#include "nct.h"
#include "numacoll.h"
#include "topo/topo.h"

/* ---- counting wrappers -------------------------------------------------- */

static atomic_ulong n_load, n_location, n_cpubind, n_process_wide;

/* hwloc's own definitions, found once: the next ones after this binary's
 * (dlsym RTLD_NEXT). A function pointer comes back from dlsym as void *;
 * POSIX makes the representations the same, memcpy keeps the conversion
 * well-defined. */
static int (*real_load)(hwloc_topology_t);
static int (*real_location)(hwloc_topology_t, hwloc_cpuset_t, int);
static int (*real_cpubind)(hwloc_topology_t, hwloc_cpuset_t, int);
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

static void next_symbol(const char *name, void *fnptr, size_t size)
{
    void *sym = dlsym(RTLD_NEXT, name);
    if (!sym || size != sizeof sym) {
        fprintf(stderr, "topo_cache: cannot find hwloc's %s\n", name);
        abort();
    }
    memcpy(fnptr, &sym, size);
}

static void find_real(void)
{
    next_symbol("hwloc_topology_load", &real_load, sizeof real_load);
    next_symbol("hwloc_get_last_cpu_location", &real_location,
                sizeof real_location);
    next_symbol("hwloc_get_cpubind", &real_cpubind, sizeof real_cpubind);
}

int hwloc_topology_load(hwloc_topology_t topology)
{
    pthread_once(&real_once, find_real);
    atomic_fetch_add_explicit(&n_load, 1, memory_order_relaxed);
    return real_load(topology);
}

int hwloc_get_last_cpu_location(hwloc_topology_t topology, hwloc_cpuset_t set,
                                int flags)
{
    pthread_once(&real_once, find_real);
    atomic_fetch_add_explicit(&n_location, 1, memory_order_relaxed);
    if (flags & HWLOC_CPUBIND_PROCESS)
        atomic_fetch_add_explicit(&n_process_wide, 1, memory_order_relaxed);
    return real_location(topology, set, flags);
}

int hwloc_get_cpubind(hwloc_topology_t topology, hwloc_cpuset_t set, int flags)
{
    pthread_once(&real_once, find_real);
    atomic_fetch_add_explicit(&n_cpubind, 1, memory_order_relaxed);
    if (flags & HWLOC_CPUBIND_PROCESS)
        atomic_fetch_add_explicit(&n_process_wide, 1, memory_order_relaxed);
    return real_cpubind(topology, set, flags);
}

typedef struct {
    unsigned long load, location, cpubind, process_wide;
} counts_t;

static counts_t counts_now(void)
{
    return (counts_t){
        atomic_load_explicit(&n_load, memory_order_relaxed),
        atomic_load_explicit(&n_location, memory_order_relaxed),
        atomic_load_explicit(&n_cpubind, memory_order_relaxed),
        atomic_load_explicit(&n_process_wide, memory_order_relaxed)};
}

static int run_forked(int p, nc__rank_fn fn, void *arg)
{
    nc__run_opts_t o = {.p = p, .timeout_ms = 60000};
    return nc__run(&o, fn, arg, NULL, NULL);
}

/* The environment chooses the topology when the config does not. */
static void clear_topology_env(void)
{
    unsetenv("HWLOC_XMLFILE");
    unsetenv("HWLOC_SYNTHETIC");
}

/* ---- many teams, one discovery ------------------------------------------ */

enum { TEAMS = 20 };

typedef struct {
    const char *topology;  /* cfg.topology */
    int pu;                /* cfg.pu */
} teams_arg_t;

static int teams_body(const numacoll_bootstrap_t *b, void *arg)
{
    const teams_arg_t *a = arg;
    clear_topology_env();
    counts_t c0 = counts_now();
    for (int i = 0; i < TEAMS + 1; i++) {
        numacoll_config_t cfg;
        numacoll_config_init(&cfg);
        cfg.verbose = 0;
        cfg.topology = a->topology;
        cfg.pu = a->pu >= 0 ? (a->pu + b->rank) : -1;
        numacoll_team_t *team;
        if (numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK)
            return 10;
        numacoll_team_destroy(team);
    }
    counts_t c = counts_now();
    unsigned long load = c.load - c0.load, loc = c.location - c0.location,
                  bind = c.cpubind - c0.cpubind,
                  wide = c.process_wide - c0.process_wide;
    /* At most the first team loads and locates; every team may ask for
     * the thread's binding (one system call), never process-wide. */
    if (load > 1 || loc > 1 || bind > TEAMS + 1 || wide != 0) {
        fprintf(stderr, "rank %d, %d teams (topology %s, pu %d): %lu topology "
                "loads, %lu location queries, %lu binding queries, %lu "
                "process-wide; expected <= 1, <= 1, <= %d, 0\n", b->rank,
                TEAMS + 1, a->topology ? a->topology : "this machine", a->pu,
                load, loc, bind, wide, TEAMS + 1);
        return 1;
    }
    return 0;
}

static void test_many_teams_one_discovery(void)
{
    teams_arg_t here = {NULL, -1};
    CU_ASSERT_EQUAL(run_forked(2, teams_body, &here), 0);
    CU_ASSERT_EQUAL(run_forked(3, teams_body, &here), 0);
    char xml[512];
    snprintf(xml, sizeof xml, "%s/8c-2p2n.xml", nct_topo_dir());
    teams_arg_t fake = {xml, 2};
    CU_ASSERT_EQUAL(run_forked(2, teams_body, &fake), 0);
    teams_arg_t syn = {"synthetic:pack:2 numa:2 core:2 pu:1", -1};
    CU_ASSERT_EQUAL(run_forked(2, teams_body, &syn), 0);
}

/* ---- the calling thread's binding --------------------------------------- */

static void *park(void *arg)
{
    char c;
    /* returns when the test closes the pipe's write end */
    while (read(*(int *)arg, &c, 1) > 0)
        ;
    return NULL;
}

/* Logical index of the PU with OS index cpu, -2 if none. */
static int logical_pu(hwloc_topology_t topo, int cpu)
{
    hwloc_obj_t o = hwloc_get_pu_obj_by_os_index(topo, (unsigned)cpu);
    return o ? (int)o->logical_index : -2;
}

static int pin(int cpu)
{
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(0, sizeof one, &one);   /* 0: this thread */
}

/* Discover with the calling thread pinned to `cpu` while another thread of
 * the process stays unbound: the record must be the thread's. */
static int expect_pinned(hwloc_topology_t topo, int cpu, const char *when)
{
    numacoll_locality_t loc;
    char msg[256];
    if (pin(cpu) != 0)
        return 2;
    if (nc__topo_discover(NULL, -1, &loc, msg, sizeof msg) != NUMACOLL_OK) {
        fprintf(stderr, "discovery failed: %s\n", msg);
        return 3;
    }
    if (loc.pu != logical_pu(topo, cpu) || loc.bound != 1) {
        fprintf(stderr, "%s: thread pinned to CPU %d (PU %d), another "
                "thread unbound: discovered PU %d, bound %d; expected PU %d, "
                "bound 1\n", when, cpu, logical_pu(topo, cpu), loc.pu,
                loc.bound, logical_pu(topo, cpu));
        return 4;
    }
    return 0;
}

static int binding_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)b;
    (void)arg;
    clear_topology_env();
    cpu_set_t all;
    if (sched_getaffinity(0, sizeof all, &all) != 0)
        return 10;
    int first = -1, last = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all)) {
            if (first < 0)
                first = c;
            last = c;
        }
    if (first == last) {
        printf("(one CPU allowed: nothing to tell apart) ");
        return 0;
    }
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) != 0 || hwloc_topology_load(topo) != 0)
        return 11;
    /* The helper thread starts unbound (it inherits the full set) and
     * stays so while this thread is pinned. */
    int fds[2];
    pthread_t helper;
    if (pipe(fds) != 0 || pthread_create(&helper, NULL, park, &fds[0]) != 0)
        return 12;
    int rc = expect_pinned(topo, last, "first discovery");
    /* a changed binding is seen: not the cached record of the first */
    if (rc == 0)
        rc = expect_pinned(topo, first, "after re-binding");
    if (rc == 0)
        rc = expect_pinned(topo, last, "after re-binding back");
    close(fds[1]);
    pthread_join(helper, NULL);
    close(fds[0]);
    hwloc_topology_destroy(topo);
    return rc;
}

static void test_thread_binding(void)
{
    CU_ASSERT_EQUAL(run_forked(1, binding_body, NULL), 0);
}

/* ---- an XML file rewritten in place ------------------------------------- */

static int copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
    char buf[4096];
    size_t n;
    int bad = !in || !out;
    while (!bad && (n = fread(buf, 1, sizeof buf, in)) > 0)
        bad = fwrite(buf, 1, n, out) != n;
    if (in)
        fclose(in);
    if (out && fclose(out) != 0)
        bad = 1;
    return bad ? -1 : 0;
}

static int same_record(const numacoll_locality_t *a,
                       const numacoll_locality_t *b)
{
    return a->pu == b->pu && a->core == b->core && a->l3 == b->l3 &&
           a->numa == b->numa && a->package == b->package &&
           a->bound == b->bound;
}

static int rewrite_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)b;
    (void)arg;
    clear_topology_env();
    char small[512], big[512], path[128], msg[512];
    snprintf(small, sizeof small, "%s/8c-2p2n.xml", nct_topo_dir());
    snprintf(big, sizeof big, "%s/16c-2p4n.xml", nct_topo_dir());
    snprintf(path, sizeof path, "/tmp/nct-topo-cache-%d.xml", (int)getpid());
    /* PU 13 lies on NUMA node 3 of 16c-2p4n, on node 1 of 8c-2p2n (13
     * wraps to 5): the two files give different records. */
    const int pu = 13;
    numacoll_locality_t want_small, want_big, got;
    if (nc__topo_discover(small, pu, &want_small, msg, sizeof msg) != 0 ||
        nc__topo_discover(big, pu, &want_big, msg, sizeof msg) != 0) {
        fprintf(stderr, "fixture: %s\n", msg);
        return 10;
    }
    if (same_record(&want_small, &want_big))
        return 11;   /* the fixtures no longer tell the files apart */
    int rc = 0;
    if (copy_file(small, path) != 0 ||
        nc__topo_discover(path, pu, &got, msg, sizeof msg) != 0 ||
        !same_record(&got, &want_small))
        rc = 12;
    /* the same path, other contents (written in place: same inode) */
    if (rc == 0 && (copy_file(big, path) != 0 ||
                    nc__topo_discover(path, pu, &got, msg, sizeof msg) != 0))
        rc = 13;
    if (rc == 0 && !same_record(&got, &want_big)) {
        fprintf(stderr, "%s rewritten with 16c-2p4n.xml: PU %d still on NUMA "
                "node %d of package %d (the old file), expected node %d of "
                "package %d\n", path, pu, got.numa, got.package,
                want_big.numa, want_big.package);
        rc = 14;
    }
    /* and through HWLOC_XMLFILE too */
    if (rc == 0 && (copy_file(small, path) != 0 ||
                    setenv("HWLOC_XMLFILE", path, 1) != 0 ||
                    nc__topo_discover(NULL, pu, &got, msg, sizeof msg) != 0 ||
                    !same_record(&got, &want_small)))
        rc = 15;
    unlink(path);
    return rc;
}

static void test_xml_rewritten(void)
{
    CU_ASSERT_EQUAL(run_forked(1, rewrite_body, NULL), 0);
}

int nct_register_topo_cache(void)
{
    static const nct_test_t tests[] = {
        {"21 teams: one topology load, no process-wide query",
         test_many_teams_one_discovery},
        {"the calling thread's binding, also when it changes",
         test_thread_binding},
        {"an XML file rewritten in place is read again", test_xml_rewritten},
        {NULL, NULL},
    };
    return nct_add_suite("topo_cache", tests);
}
