/*
 * Topology suite: discovery on this machine, on the XML fixtures of
 * tests/topo and on synthetic descriptions (with injected PUs, since hwloc
 * cannot tell where a process runs on a fake machine), then NUMA groups and
 * leaders over records from those fixtures and over hand-written arrays.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hwloc.h>

#include "nct.h"
#include "topo/topo.h"

#define MAXP 64

static void fixture_path(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", nct_topo_dir(), name);
}

/* ---- environment -------------------------------------------------------- */

/* The suite must not depend on (or leak) the caller's hwloc variables:
 * each test that touches them saves and restores both. */
typedef struct {
    char *xml, *syn;
} saved_env_t;

static char *dup_env(const char *name)
{
    const char *v = getenv(name);
    return v ? strdup(v) : NULL;
}

static saved_env_t env_clear(void)
{
    saved_env_t s = {dup_env("HWLOC_XMLFILE"), dup_env("HWLOC_SYNTHETIC")};
    unsetenv("HWLOC_XMLFILE");
    unsetenv("HWLOC_SYNTHETIC");
    return s;
}

static void env_restore1(const char *name, char *value)
{
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
    free(value);
}

static void env_restore(saved_env_t s)
{
    env_restore1("HWLOC_XMLFILE", s.xml);
    env_restore1("HWLOC_SYNTHETIC", s.syn);
}

/* ---- discovery on this machine ------------------------------------------ */

static void test_this_machine(void)
{
    saved_env_t env = env_clear();
    numacoll_locality_t loc;
    char msg[256];
    int rc = nc__topo_discover(NULL, -1, &loc, msg, sizeof msg);
    CU_ASSERT_EQUAL_FATAL(rc, NUMACOLL_OK);
    CU_ASSERT(loc.pu >= 0);
    CU_ASSERT(loc.numa >= 0);
    CU_ASSERT(loc.core >= -1);
    CU_ASSERT(loc.l3 >= -1);
    CU_ASSERT(loc.package >= -1);
    CU_ASSERT(loc.bound == 0 || loc.bound == 1);
    CU_ASSERT_EQUAL(loc.pid, (int32_t)getpid());

    /* Unpinned, the process may run on every PU the machine has, unless
     * a cgroup or the launcher confines it: only then may it count as
     * bound. */
    cpu_set_t aff;
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    if (sched_getaffinity(0, sizeof aff, &aff) == 0 && ncpu > 0 &&
        CPU_COUNT(&aff) == ncpu)
        CU_ASSERT_EQUAL(loc.bound, 0);
    env_restore(env);
}

static void test_this_machine_injected(void)
{
    saved_env_t env = env_clear();
    numacoll_locality_t a, b;
    char msg[256];
    CU_ASSERT_EQUAL_FATAL(nc__topo_discover(NULL, 0, &a, msg, sizeof msg),
                          NUMACOLL_OK);
    CU_ASSERT_EQUAL(a.pu, 0);
    CU_ASSERT_EQUAL(a.bound, 1);
    CU_ASSERT(a.numa >= 0);
    /* Any injected index wraps onto an existing PU. */
    CU_ASSERT_EQUAL_FATAL(nc__topo_discover(NULL, 1 << 20, &b, msg,
                                            sizeof msg), NUMACOLL_OK);
    CU_ASSERT(b.pu >= 0);
    CU_ASSERT_EQUAL(b.bound, 1);
    env_restore(env);
}

/* Pinned to one CPU, discovery must find that CPU and report bound. */
static void test_this_machine_pinned(void)
{
    saved_env_t env = env_clear();
    cpu_set_t old, one;
    hwloc_topology_t topo;
    CU_ASSERT_EQUAL_FATAL(sched_getaffinity(0, sizeof old, &old), 0);
    CU_ASSERT_EQUAL_FATAL(hwloc_topology_init(&topo), 0);
    CU_ASSERT_EQUAL_FATAL(hwloc_topology_load(topo), 0);

    int cpu = -1;
    for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
        if (CPU_ISSET(c, &old))
            cpu = c;
    hwloc_obj_t obj = hwloc_get_pu_obj_by_os_index(topo, (unsigned)cpu);
    int complete = hwloc_bitmap_weight(hwloc_topology_get_complete_cpuset(topo));
    CU_ASSERT_PTR_NOT_NULL(obj);
    if (obj && complete > 1) {
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        CU_ASSERT_EQUAL_FATAL(sched_setaffinity(0, sizeof one, &one), 0);
        numacoll_locality_t loc;
        char msg[256];
        int rc = nc__topo_discover(NULL, -1, &loc, msg, sizeof msg);
        /* Restore before asserting: a failed assertion must not leave the
         * rest of the run pinned. */
        CU_ASSERT_EQUAL(sched_setaffinity(0, sizeof old, &old), 0);
        CU_ASSERT_EQUAL(rc, NUMACOLL_OK);
        CU_ASSERT_EQUAL(loc.pu, (int32_t)obj->logical_index);
        CU_ASSERT_EQUAL(loc.bound, 1);
    }
    hwloc_topology_destroy(topo);
    env_restore(env);
}

/* ---- discovery on fake machines ------------------------------------------ */

typedef struct {
    int pu;                            /* injected                          */
    int32_t want_pu, core, l3, package, numa;
} pu_case_t;

static void check_cases(const char *topology, const pu_case_t *cases, int n)
{
    for (int i = 0; i < n; i++) {
        const pu_case_t *c = &cases[i];
        numacoll_locality_t loc;
        char msg[512] = "";
        int rc = nc__topo_discover(topology, c->pu, &loc, msg, sizeof msg);
        CU_ASSERT_EQUAL(rc, NUMACOLL_OK);
        if (rc != NUMACOLL_OK) {
            fprintf(stderr, "\n  %s: %s\n", topology, msg);
            continue;
        }
        CU_ASSERT_EQUAL(loc.pu, c->want_pu);
        CU_ASSERT_EQUAL(loc.core, c->core);
        CU_ASSERT_EQUAL(loc.l3, c->l3);
        CU_ASSERT_EQUAL(loc.package, c->package);
        CU_ASSERT_EQUAL(loc.numa, c->numa);
        CU_ASSERT_EQUAL(loc.bound, 1);
        CU_ASSERT_EQUAL(loc.pid, (int32_t)getpid());
        if (loc.pu != c->want_pu || loc.core != c->core || loc.l3 != c->l3 ||
            loc.package != c->package || loc.numa != c->numa)
            fprintf(stderr, "\n  %s pu %d: got pu %d core %d l3 %d pack %d "
                    "numa %d\n", topology, c->pu, loc.pu, loc.core, loc.l3,
                    loc.package, loc.numa);
    }
}

#define CHECK_CASES(topology, cases) \
    check_cases(topology, cases, (int)(sizeof cases / sizeof cases[0]))

static void check_fixture_cases(const char *name, const pu_case_t *cases,
                                int n)
{
    char path[1024];
    fixture_path(path, sizeof path, name);
    check_cases(path, cases, n);
}

#define CHECK_FIXTURE(name, cases) \
    check_fixture_cases(name, cases, (int)(sizeof cases / sizeof cases[0]))

/* {pu, want_pu, core, l3, package, numa} */
static void test_xml_8c_2p2n(void)
{
    static const pu_case_t cases[] = {
        {0, 0, 0, 0, 0, 0}, {3, 3, 3, 0, 0, 0}, {4, 4, 4, 1, 1, 1},
        {7, 7, 7, 1, 1, 1}, {8, 0, 0, 0, 0, 0}, {13, 5, 5, 1, 1, 1},
    };
    CHECK_FIXTURE("8c-2p2n.xml", cases);
}

static void test_xml_16c_2p4n(void)
{
    static const pu_case_t cases[] = {
        {0, 0, 0, 0, 0, 0},    {3, 3, 3, 0, 0, 0},    {4, 4, 4, 1, 0, 1},
        {7, 7, 7, 1, 0, 1},    {8, 8, 8, 2, 1, 2},    {11, 11, 11, 2, 1, 2},
        {12, 12, 12, 3, 1, 3}, {15, 15, 15, 3, 1, 3}, {17, 1, 1, 0, 0, 0},
    };
    CHECK_FIXTURE("16c-2p4n.xml", cases);
}

static void test_xml_4c_2n_asym(void)
{
    static const pu_case_t cases[] = {
        {0, 0, 0, 0, 0, 0}, {1, 1, 1, 0, 0, 0}, {2, 2, 2, 0, 0, 0},
        {3, 3, 3, 1, 1, 1}, {4, 0, 0, 0, 0, 0}, {7, 3, 3, 1, 1, 1},
    };
    CHECK_FIXTURE("4c-2n-asym.xml", cases);
}

/* NUMA nodes behind memory-side caches (as in XML exported on machines
 * with HBM or MCDRAM caches), OS indexes 1 and 2. hwloc drops MemCache
 * objects by default, but the record must be right whatever the filter. */
static void test_xml_memcache(void)
{
    static const pu_case_t cases[] = {
        {0, 0, 0, -1, 0, 1}, {1, 1, 1, -1, 1, 2},
    };
    CHECK_FIXTURE("2c-2p2n-memcache.xml", cases);
}

/* NUMA nodes hang off Group objects; no L3 at all. */
static void test_synthetic_2p4n(void)
{
    static const pu_case_t cases[] = {
        {0, 0, 0, -1, 0, 0},   {3, 3, 3, -1, 0, 0}, {4, 4, 4, -1, 0, 1},
        {9, 9, 9, -1, 1, 2},   {15, 15, 15, -1, 1, 3},
        {16, 0, 0, -1, 0, 0},
    };
    CHECK_CASES("synthetic:pack:2 numa:2 core:4 pu:1", cases);
}

/* Two PUs per core, no package level. */
static void test_synthetic_smt(void)
{
    static const pu_case_t cases[] = {
        {0, 0, 0, -1, -1, 0}, {1, 1, 0, -1, -1, 0}, {3, 3, 1, -1, -1, 0},
        {4, 4, 2, -1, -1, 1}, {7, 7, 3, -1, -1, 1},
    };
    CHECK_CASES("synthetic:numa:2 core:2 pu:2", cases);
}

/* numa is the node's OS index (P#), not its logical index (L#). */
static void test_synthetic_numa_os_index(void)
{
    static const pu_case_t cases[] = {
        {0, 0, 0, -1, 0, 3}, {2, 2, 2, -1, 0, 1},
        {4, 4, 4, -1, 1, 2}, {7, 7, 7, -1, 1, 0},
    };
    CHECK_CASES("synthetic:pack:2 numa:2(indexes=3,1,2,0) core:2 pu:1",
                cases);
}

/* Two NUMA nodes on one package (e.g. DRAM + HBM): the first is local. */
static void test_synthetic_two_memories(void)
{
    static const pu_case_t cases[] = {
        {0, 0, 0, -1, 0, 0}, {1, 1, 1, -1, 0, 0}, {2, 2, 2, -1, 1, 2},
    };
    CHECK_CASES("synthetic:pack:2 [numa(memory=1GB)] [numa(memory=4GB)] "
                "core:2 pu:1", cases);
}

/* On a fake machine the OS query is a dummy: PU 0, unbound, no error. */
static void test_fake_uninjected(void)
{
    numacoll_locality_t loc;
    char msg[256];
    char path[1024];
    fixture_path(path, sizeof path, "16c-2p4n.xml");
    const char *tops[] = {path, "synthetic:pack:2 numa:2 core:4 pu:1"};
    for (size_t i = 0; i < sizeof tops / sizeof tops[0]; i++) {
        CU_ASSERT_EQUAL_FATAL(nc__topo_discover(tops[i], -1, &loc, msg,
                                                sizeof msg), NUMACOLL_OK);
        CU_ASSERT_EQUAL(loc.pu, 0);
        CU_ASSERT_EQUAL(loc.numa, 0);
        CU_ASSERT_EQUAL(loc.package, 0);
        CU_ASSERT_EQUAL(loc.bound, 0);
    }
}

/* ---- errors --------------------------------------------------------------- */

static void test_missing_xml(void)
{
    char path[1024];
    fixture_path(path, sizeof path, "no-such-topology.xml");
    numacoll_locality_t loc;
    char msg[1024] = "";
    CU_ASSERT_EQUAL(nc__topo_discover(path, 0, &loc, msg, sizeof msg),
                    NUMACOLL_ERR_TOPO);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, path));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, strerror(ENOENT)));
    /* A failed discovery leaves nothing that looks like a place. */
    CU_ASSERT_EQUAL(loc.pu, -1);
    CU_ASSERT_EQUAL(loc.numa, -1);
    /* msg is optional; a short one is truncated, still terminated. */
    CU_ASSERT_EQUAL(nc__topo_discover(path, 0, &loc, NULL, 0),
                    NUMACOLL_ERR_TOPO);
    char small[8];
    CU_ASSERT_EQUAL(nc__topo_discover(path, 0, &loc, small, sizeof small),
                    NUMACOLL_ERR_TOPO);
    CU_ASSERT_EQUAL(strlen(small), sizeof small - 1);
}

static void test_bad_xml(void)
{
    const char *tmp = getenv("TMPDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/nct-topo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    static const char junk[] = "<topology>not hwloc</nope>\n";
    CU_ASSERT_EQUAL(write(fd, junk, sizeof junk - 1), (ssize_t)(sizeof junk - 1));
    close(fd);
    numacoll_locality_t loc;
    char msg[1024] = "";
    CU_ASSERT_EQUAL(nc__topo_discover(path, 0, &loc, msg, sizeof msg),
                    NUMACOLL_ERR_TOPO);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, path));
    unlink(path);
}

static void test_bad_synthetic(void)
{
    numacoll_locality_t loc;
    char msg[1024] = "";
    CU_ASSERT_EQUAL(nc__topo_discover("synthetic:pack:2 bogus:3 pu:1", 0, &loc,
                                      msg, sizeof msg), NUMACOLL_ERR_TOPO);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "pack:2 bogus:3 pu:1"));
    CU_ASSERT_EQUAL(nc__topo_discover("synthetic:", 0, &loc, msg, sizeof msg),
                    NUMACOLL_ERR_TOPO);
}

static void test_null_record(void)
{
    char msg[256] = "";
    CU_ASSERT_EQUAL(nc__topo_discover(NULL, 0, NULL, msg, sizeof msg),
                    NUMACOLL_ERR_TOPO);
    CU_ASSERT(msg[0] != '\0');
}

/* ---- environment variables -------------------------------------------------- */

static void test_env_synthetic(void)
{
    saved_env_t env = env_clear();
    setenv("HWLOC_SYNTHETIC", "pack:2 numa:2 core:4 pu:1", 1);
    numacoll_locality_t loc;
    char msg[512] = "";
    int rc = nc__topo_discover(NULL, 9, &loc, msg, sizeof msg);
    CU_ASSERT_EQUAL(rc, NUMACOLL_OK);
    CU_ASSERT_EQUAL(loc.pu, 9);
    CU_ASSERT_EQUAL(loc.numa, 2);
    CU_ASSERT_EQUAL(loc.package, 1);
    CU_ASSERT_EQUAL(loc.core, 9);
    CU_ASSERT_EQUAL(loc.l3, -1);
    /* 16 PUs there, whatever this machine has. */
    rc = nc__topo_discover(NULL, 31, &loc, msg, sizeof msg);
    CU_ASSERT_EQUAL(rc, NUMACOLL_OK);
    CU_ASSERT_EQUAL(loc.pu, 15);
    CU_ASSERT_EQUAL(loc.numa, 3);
    /* An explicit topology overrides the environment. */
    char path[1024];
    fixture_path(path, sizeof path, "8c-2p2n.xml");
    rc = nc__topo_discover(path, 4, &loc, msg, sizeof msg);
    CU_ASSERT_EQUAL(rc, NUMACOLL_OK);
    CU_ASSERT_EQUAL(loc.numa, 1);
    CU_ASSERT_EQUAL(loc.l3, 1);
    unsetenv("HWLOC_SYNTHETIC");
    env_restore(env);
}

static void test_env_xmlfile(void)
{
    saved_env_t env = env_clear();
    char path[1024];
    fixture_path(path, sizeof path, "16c-2p4n.xml");
    setenv("HWLOC_XMLFILE", path, 1);
    numacoll_locality_t loc;
    char msg[512] = "";
    CU_ASSERT_EQUAL(nc__topo_discover(NULL, 13, &loc, msg, sizeof msg),
                    NUMACOLL_OK);
    CU_ASSERT_EQUAL(loc.numa, 3);
    CU_ASSERT_EQUAL(loc.l3, 3);
    CU_ASSERT_EQUAL(loc.package, 1);
    unsetenv("HWLOC_XMLFILE");
    env_restore(env);
}

/* hwloc falls back to this machine when the variable is unusable; asking
 * for a fake machine and silently getting this one must be an error. */
static void test_env_unusable(void)
{
    saved_env_t env = env_clear();
    char *thissystem = dup_env("HWLOC_THISSYSTEM");
    unsetenv("HWLOC_THISSYSTEM");
    numacoll_locality_t loc;
    char msg[1024] = "";

    setenv("HWLOC_XMLFILE", "/nonexistent/nct-topo.xml", 1);
    CU_ASSERT_EQUAL(nc__topo_discover(NULL, 0, &loc, msg, sizeof msg),
                    NUMACOLL_ERR_TOPO);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "HWLOC_XMLFILE"));
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "/nonexistent/nct-topo.xml"));
    unsetenv("HWLOC_XMLFILE");

    setenv("HWLOC_SYNTHETIC", "bogus:3", 1);
    CU_ASSERT_EQUAL(nc__topo_discover(NULL, 0, &loc, msg, sizeof msg),
                    NUMACOLL_ERR_TOPO);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "HWLOC_SYNTHETIC=\"bogus:3\""));
    unsetenv("HWLOC_SYNTHETIC");

    /* Empty means unset. */
    setenv("HWLOC_XMLFILE", "", 1);
    CU_ASSERT_EQUAL(nc__topo_discover(NULL, 0, &loc, msg, sizeof msg),
                    NUMACOLL_OK);
    unsetenv("HWLOC_XMLFILE");

    env_restore1("HWLOC_THISSYSTEM", thissystem);
    env_restore(env);
}

/* ---- groups and leaders ---------------------------------------------------- */

typedef struct {
    int p, ngroups;
    int group_of[MAXP], leader_of[MAXP], members[MAXP], group_start[MAXP + 1];
} groups_t;

static void compute_groups(const numacoll_locality_t *loc, int p, groups_t *g)
{
    /* Poison, so an entry the function forgets to write is caught. */
    memset(g, 0x5a, sizeof *g);
    g->p = p;
    g->ngroups = nc__topo_numa_groups(loc, p, g->group_of, g->leader_of,
                                      g->members, g->group_start);
}

static void check_groups(const numacoll_locality_t *loc, int p, int ngroups,
                         const int *group_of, const int *leader_of,
                         const int *members, const int *group_start)
{
    groups_t g;
    compute_groups(loc, p, &g);
    CU_ASSERT_EQUAL_FATAL(g.ngroups, ngroups);
    int bad = 0;
    for (int r = 0; r < p; r++) {
        bad |= g.group_of[r] != group_of[r];
        bad |= g.leader_of[r] != leader_of[r];
        bad |= g.members[r] != members[r];
        CU_ASSERT_EQUAL(g.group_of[r], group_of[r]);
        CU_ASSERT_EQUAL(g.leader_of[r], leader_of[r]);
        CU_ASSERT_EQUAL(g.members[r], members[r]);
    }
    for (int i = 0; i <= ngroups; i++) {
        bad |= g.group_start[i] != group_start[i];
        CU_ASSERT_EQUAL(g.group_start[i], group_start[i]);
    }
    if (bad) {
        fprintf(stderr, "\n  p=%d groups: group_of/leader_of/members:", p);
        for (int r = 0; r < p; r++)
            fprintf(stderr, " %d/%d/%d", g.group_of[r], g.leader_of[r],
                    g.members[r]);
        fprintf(stderr, "\n");
    }
}

static void records_of_numa(numacoll_locality_t *loc, const int *numa, int p)
{
    for (int r = 0; r < p; r++)
        loc[r] = (numacoll_locality_t){.pu = r, .core = r, .l3 = -1,
                                       .numa = numa[r], .package = -1,
                                       .bound = 1, .pid = 1000 + r};
}

/* Records as each rank's own discovery would produce them, rank r on
 * PU pu_of[r] of the fixture. */
static int records_from_fixture(numacoll_locality_t *loc, const char *name,
                                const int *pu_of, int p)
{
    char path[1024], msg[512];
    fixture_path(path, sizeof path, name);
    for (int r = 0; r < p; r++)
        if (nc__topo_discover(path, pu_of[r], &loc[r], msg, sizeof msg) !=
            NUMACOLL_OK) {
            fprintf(stderr, "\n  %s\n", msg);
            return -1;
        }
    return 0;
}

static void test_groups_8c_2p2n(void)
{
    numacoll_locality_t loc[MAXP];
    /* Compact: rank r on PU r. */
    static const int compact[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    CU_ASSERT_EQUAL_FATAL(records_from_fixture(loc, "8c-2p2n.xml", compact, 8), 0);
    check_groups(loc, 8, 2, (int[]){0, 0, 0, 0, 1, 1, 1, 1},
                 (int[]){0, 0, 0, 0, 4, 4, 4, 4},
                 (int[]){0, 1, 2, 3, 4, 5, 6, 7}, (int[]){0, 4, 8});
    /* Interleaved: rank r on node r % 2. */
    static const int inter[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    CU_ASSERT_EQUAL_FATAL(records_from_fixture(loc, "8c-2p2n.xml", inter, 8), 0);
    check_groups(loc, 8, 2, (int[]){0, 1, 0, 1, 0, 1, 0, 1},
                 (int[]){0, 1, 0, 1, 0, 1, 0, 1},
                 (int[]){0, 2, 4, 6, 1, 3, 5, 7}, (int[]){0, 4, 8});
    /* Three ranks, all on node 1. */
    static const int node1[3] = {5, 6, 7};
    CU_ASSERT_EQUAL_FATAL(records_from_fixture(loc, "8c-2p2n.xml", node1, 3), 0);
    check_groups(loc, 3, 1, (int[]){0, 0, 0}, (int[]){0, 0, 0},
                 (int[]){0, 1, 2}, (int[]){0, 3});
}

static void test_groups_16c_2p4n(void)
{
    numacoll_locality_t loc[MAXP];
    int pu_of[MAXP];
    /* p = 11, compact: nodes 0,0,0,0,1,1,1,1,2,2,2. */
    for (int r = 0; r < 11; r++)
        pu_of[r] = r;
    CU_ASSERT_EQUAL_FATAL(records_from_fixture(loc, "16c-2p4n.xml", pu_of, 11), 0);
    check_groups(loc, 11, 3, (int[]){0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2},
                 (int[]){0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8},
                 (int[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10},
                 (int[]){0, 4, 8, 11});
    /* p = 16, round robin over the nodes: rank r on node r % 4. */
    for (int r = 0; r < 16; r++)
        pu_of[r] = (r % 4) * 4 + r / 4;
    CU_ASSERT_EQUAL_FATAL(records_from_fixture(loc, "16c-2p4n.xml", pu_of, 16), 0);
    check_groups(loc, 16, 4,
                 (int[]){0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3},
                 (int[]){0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3},
                 (int[]){0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15},
                 (int[]){0, 4, 8, 12, 16});
    /* p = 20 oversubscribed: ranks 16..19 wrap onto PUs 0..3 (node 0). */
    for (int r = 0; r < 20; r++)
        pu_of[r] = r;
    CU_ASSERT_EQUAL_FATAL(records_from_fixture(loc, "16c-2p4n.xml", pu_of, 20), 0);
    check_groups(loc, 20, 4,
                 (int[]){0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3,
                         0, 0, 0, 0},
                 (int[]){0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12,
                         0, 0, 0, 0},
                 (int[]){0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 8, 9, 10, 11,
                         12, 13, 14, 15},
                 (int[]){0, 8, 12, 16, 20});
    /* Ranks placed from the last node backwards: groups are numbered by
     * their lowest rank, not by node. */
    for (int r = 0; r < 8; r++)
        pu_of[r] = 15 - 2 * r;    /* nodes 3,3,2,2,1,1,0,0 */
    CU_ASSERT_EQUAL_FATAL(records_from_fixture(loc, "16c-2p4n.xml", pu_of, 8), 0);
    CU_ASSERT_EQUAL(loc[0].numa, 3);
    check_groups(loc, 8, 4, (int[]){0, 0, 1, 1, 2, 2, 3, 3},
                 (int[]){0, 0, 2, 2, 4, 4, 6, 6},
                 (int[]){0, 1, 2, 3, 4, 5, 6, 7}, (int[]){0, 2, 4, 6, 8});
}

static void test_groups_4c_2n_asym(void)
{
    numacoll_locality_t loc[MAXP];
    static const int compact[4] = {0, 1, 2, 3};
    CU_ASSERT_EQUAL_FATAL(records_from_fixture(loc, "4c-2n-asym.xml", compact, 4), 0);
    check_groups(loc, 4, 2, (int[]){0, 0, 0, 1}, (int[]){0, 0, 0, 3},
                 (int[]){0, 1, 2, 3}, (int[]){0, 3, 4});
    /* Reversed, plus a fifth rank that wraps onto PU 3 (node 1):
     * nodes 1,0,0,0,1. */
    static const int rev[5] = {3, 2, 1, 0, 7};
    CU_ASSERT_EQUAL_FATAL(records_from_fixture(loc, "4c-2n-asym.xml", rev, 5), 0);
    check_groups(loc, 5, 2, (int[]){0, 1, 1, 1, 0}, (int[]){0, 1, 1, 1, 0},
                 (int[]){0, 4, 1, 2, 3}, (int[]){0, 2, 5});
}

static void test_groups_hand_written(void)
{
    numacoll_locality_t loc[MAXP];

    /* One rank. */
    records_of_numa(loc, (int[]){0}, 1);
    check_groups(loc, 1, 1, (int[]){0}, (int[]){0}, (int[]){0}, (int[]){0, 1});

    /* One node. */
    records_of_numa(loc, (int[]){0, 0, 0, 0, 0, 0}, 6);
    check_groups(loc, 6, 1, (int[]){0, 0, 0, 0, 0, 0},
                 (int[]){0, 0, 0, 0, 0, 0}, (int[]){0, 1, 2, 3, 4, 5},
                 (int[]){0, 6});

    /* Interleaved nodes. */
    records_of_numa(loc, (int[]){0, 1, 0, 1}, 4);
    check_groups(loc, 4, 2, (int[]){0, 1, 0, 1}, (int[]){0, 1, 0, 1},
                 (int[]){0, 2, 1, 3}, (int[]){0, 2, 4});

    /* The 3+1 machine, one rank per core. */
    records_of_numa(loc, (int[]){0, 0, 0, 1}, 4);
    check_groups(loc, 4, 2, (int[]){0, 0, 0, 1}, (int[]){0, 0, 0, 3},
                 (int[]){0, 1, 2, 3}, (int[]){0, 3, 4});

    /* Sparse, unordered node numbers. */
    records_of_numa(loc, (int[]){7, 3, 7, 3, 5}, 5);
    check_groups(loc, 5, 3, (int[]){0, 1, 0, 1, 2}, (int[]){0, 1, 0, 1, 4},
                 (int[]){0, 2, 1, 3, 4}, (int[]){0, 2, 4, 5});

    /* Unknown nodes (any negative) form one group of their own. */
    records_of_numa(loc, (int[]){-1, 0, -1, 1, -3}, 5);
    check_groups(loc, 5, 3, (int[]){0, 1, 0, 2, 0}, (int[]){0, 1, 0, 3, 0},
                 (int[]){0, 2, 4, 1, 3}, (int[]){0, 3, 4, 5});

    /* Every node unknown. */
    records_of_numa(loc, (int[]){-1, -1, -1}, 3);
    check_groups(loc, 3, 1, (int[]){0, 0, 0}, (int[]){0, 0, 0},
                 (int[]){0, 1, 2}, (int[]){0, 3});

    /* No rank: no group, group_start[0] still 0. */
    groups_t g;
    compute_groups(loc, 0, &g);
    CU_ASSERT_EQUAL(g.ngroups, 0);
    CU_ASSERT_EQUAL(g.group_start[0], 0);
}

/* Random arrays against the definition: same node <=> same group, leader
 * is the lowest rank of the node, groups ordered by leader, members
 * ascending per group. Fixed seed: reproducible. */
static void test_groups_random(void)
{
    unsigned long long x = 0x9e3779b97f4a7c15ull;
    numacoll_locality_t loc[MAXP];
    int numa[MAXP];
    for (int iter = 0; iter < 500; iter++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int p = 1 + (int)((x >> 33) % MAXP);
        int nodes = 1 + (int)((x >> 45) % 9);
        for (int r = 0; r < p; r++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            numa[r] = (int)((x >> 33) % (unsigned)(nodes + 1)) - 1;
        }
        records_of_numa(loc, numa, p);
        groups_t g;
        compute_groups(loc, p, &g);

        int distinct = 0, ok = 1;
        for (int r = 0; r < p; r++) {
            int first = r;
            for (int s = 0; s < r; s++)
                if ((numa[s] < 0 ? -1 : numa[s]) ==
                    (numa[r] < 0 ? -1 : numa[r])) {
                    first = s;
                    break;
                }
            distinct += first == r;
            ok &= g.leader_of[r] == first;
            ok &= g.group_of[r] == g.group_of[first];
            ok &= g.group_of[r] >= 0 && g.group_of[r] < g.ngroups;
        }
        ok &= g.ngroups == distinct;
        ok &= g.group_start[0] == 0 && g.group_start[g.ngroups] == p;
        for (int k = 0; ok && k < g.ngroups; k++) {
            int lo = g.group_start[k], hi = g.group_start[k + 1];
            ok &= lo < hi;
            if (!ok)
                break;
            /* Leaders ascend with the group index. */
            ok &= k == 0 || g.members[lo] > g.members[g.group_start[k - 1]];
            for (int i = lo; i < hi; i++) {
                ok &= g.group_of[g.members[i]] == k;
                ok &= i == lo || g.members[i] > g.members[i - 1];
                ok &= g.leader_of[g.members[i]] == g.members[lo];
            }
        }
        CU_ASSERT(ok);
        if (!ok) {
            fprintf(stderr, "\n  random groups failed at iteration %d, p=%d\n",
                    iter, p);
            break;
        }
    }
}

int nct_register_topo(void)
{
    static const nct_test_t tests[] = {
        {"discover this machine", test_this_machine},
        {"discover this machine, injected PU", test_this_machine_injected},
        {"discover this machine, pinned to one CPU", test_this_machine_pinned},
        {"discover 8c-2p2n.xml", test_xml_8c_2p2n},
        {"discover 16c-2p4n.xml", test_xml_16c_2p4n},
        {"discover 4c-2n-asym.xml", test_xml_4c_2n_asym},
        {"discover 2c-2p2n-memcache.xml", test_xml_memcache},
        {"discover synthetic pack:2 numa:2 core:4", test_synthetic_2p4n},
        {"discover synthetic SMT, no package", test_synthetic_smt},
        {"discover synthetic, NUMA OS indexes", test_synthetic_numa_os_index},
        {"discover synthetic, two NUMA nodes per package",
         test_synthetic_two_memories},
        {"discover fake topology without injected PU", test_fake_uninjected},
        {"missing XML file", test_missing_xml},
        {"invalid XML file", test_bad_xml},
        {"invalid synthetic description", test_bad_synthetic},
        {"NULL record", test_null_record},
        {"HWLOC_SYNTHETIC honoured", test_env_synthetic},
        {"HWLOC_XMLFILE honoured", test_env_xmlfile},
        {"unusable HWLOC_XMLFILE / HWLOC_SYNTHETIC", test_env_unusable},
        {"groups on 8c-2p2n.xml", test_groups_8c_2p2n},
        {"groups on 16c-2p4n.xml", test_groups_16c_2p4n},
        {"groups on 4c-2n-asym.xml", test_groups_4c_2n_asym},
        {"groups of hand-written records", test_groups_hand_written},
        {"groups of random records", test_groups_random},
        {NULL, NULL},
    };
    return nct_add_suite("topo", tests);
}
