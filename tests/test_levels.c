/*
 * Suite "levels": hierarchies by any list of hwloc levels (the parameter
 * `levels`). Level lists parse and print back; on synthetic and XML
 * machines with injected PUs, for every level list, placement, p up to 64,
 * radix and every root, the hierarchical tree is sound (nc__tree_check)
 * and follows the domains, checked against the records directly: an edge
 * that leaves a domain of some listed level joins the heads of both
 * domains (heads are members: the root in its own domain, the lowest rank
 * elsewhere), and exactly D - 1 edges cross the D domains of each level.
 * Then Bcast, Barrier, Reduce and Allreduce end to end at p = 8 and 16
 * under such a machine with several level lists.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/team.h"
#include "coll/tree.h"
#include "support/runner.h"
#include "topo/topo.h"
#include "nct.h"
#include "numacoll.h"

#define MAXP 64
#define M1 "synthetic:pack:2 numa:2 l3:4 core:4 pu:1"  /* 64 PUs */
#define M2 "synthetic:pack:2 numa:1 l3:8 core:4 pu:1"  /* 2 x 8 L3, 64 PUs */
#define M3 "synthetic:pack:2 l3:2 l2:2 l1:1 core:2 pu:2" /* SMT, 32 PUs */

static const char *const level_lists[] = {
    "numa", "l3", "package", "l2", "l1", "l3,numa", "l3,numa,package",
    "l2,l3,numa,package", "l1,l2,l3,numa,package", "numa,package",
    "l3,package", "package,numa", "l2,numa", "socket,l3",
};
#define NLISTS ((int)(sizeof level_lists / sizeof level_lists[0]))

/* ---- parsing ------------------------------------------------------------ */

static void test_parse(void)
{
    char buf[64];
    for (int i = 0; i < NLISTS; i++) {
        int lv = numacoll_levels_parse(level_lists[i]);
        CU_ASSERT(lv > 0);
        CU_ASSERT_EQUAL(numacoll_levels_format(lv, buf, sizeof buf), 0);
        CU_ASSERT_EQUAL(numacoll_levels_parse(buf), lv);
    }
    CU_ASSERT_EQUAL(numacoll_levels_parse("numa"), NUMACOLL_LEVEL_NUMA);
    CU_ASSERT_EQUAL(numacoll_levels_parse("L3+NUMA"),
                    numacoll_levels_parse("l3,numa"));
    CU_ASSERT_EQUAL(numacoll_levels_parse("l3, numa"),
                    numacoll_levels_parse("l3:numa"));
    CU_ASSERT_EQUAL(numacoll_levels_parse("socket"),
                    numacoll_levels_parse("package"));
    numacoll_levels_format(numacoll_levels_parse("l1,l2,l3,numa,package"),
                           buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "l1,l2,l3,numa,package");
    static const char *const bad[] = {"", ",", "numa,", "l4", "numa,numa",
                                      "l3,package,socket", "core", NULL};
    for (int i = 0; bad[i]; i++)
        CU_ASSERT_EQUAL(numacoll_levels_parse(bad[i]), -1);
    CU_ASSERT_EQUAL(numacoll_levels_parse(NULL), -1);
    /* packed values that are no list: 0, a code past the last, a gap, a
     * repeat, bits beyond five levels */
    int badv[] = {0, -1, 7, 6, 4 << 3, 4 | 4 << 3, 1 << 15};
    for (size_t i = 0; i < sizeof badv / sizeof badv[0]; i++) {
        CU_ASSERT_EQUAL(numacoll_levels_format(badv[i], buf, sizeof buf), -1);
        CU_ASSERT_STRING_EQUAL(buf, "");
    }
    /* the config check names the parameter */
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    CU_ASSERT_EQUAL(cfg.levels, NUMACOLL_LEVEL_NUMA);
    cfg.levels = 4 | 4 << 3;
    char msg[200];
    CU_ASSERT_EQUAL(numacoll_config_check(&cfg, msg, sizeof msg),
                    NUMACOLL_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "levels"));
}

/* ---- trees on machines ---------------------------------------------------- */

typedef struct machine {
    const char *topology;   /* "synthetic:..." or an XML file name */
    int npus;
} machine_t;

/* PU of rank r: in order (block), or strided so that consecutive ranks
 * land in different domains (the worst case for a rank-ordered tree). */
static int pu_of(int r, int npus, int placement)
{
    if (placement == 0)
        return r % npus;
    int stride = npus % 7 ? 7 : 5;
    return (r * stride + r / npus) % npus;
}

static int discover(const char *topology, int p, int npus, int placement,
                    nc__doms_t *doms)
{
    char msg[256];
    for (int r = 0; r < p; r++) {
        numacoll_locality_t loc;
        int32_t caches[2];
        if (nc__topo_discover_ex(topology, pu_of(r, npus, placement), &loc,
                                 caches, msg, sizeof msg) != NUMACOLL_OK) {
            fprintf(stderr, "\n  %s: %s\n", topology, msg);
            return -1;
        }
        nc__topo_doms(&loc, caches, &doms[r]);
    }
    return 0;
}

/* Dense domain numbers of list level i (nested: keyed by the ids of
 * levels i..n-1), the lowest rank of each, and the number of domains;
 * independent of topo/groups.c. */
typedef struct ref {
    int n, codes[NUMACOLL_LEVELS_MAX];
    int dom[NUMACOLL_LEVELS_MAX][MAXP], low[NUMACOLL_LEVELS_MAX][MAXP];
    int ndom[NUMACOLL_LEVELS_MAX];
} ref_t;

static int same_key(const nc__doms_t *a, const nc__doms_t *b, const ref_t *f,
                    int i)
{
    for (int l = i; l < f->n; l++)
        if (a->id[f->codes[l]] != b->id[f->codes[l]])
            return 0;
    return 1;
}

static void ref_build(ref_t *f, int levels, const nc__doms_t *doms, int p)
{
    f->n = nc__levels_unpack(levels, f->codes);
    for (int i = 0; i < f->n; i++) {
        f->ndom[i] = 0;
        for (int r = 0; r < p; r++) {
            int d = 0;
            while (d < f->ndom[i] &&
                   !same_key(&doms[f->low[i][d]], &doms[r], f, i))
                d++;
            if (d == f->ndom[i])
                f->low[i][f->ndom[i]++] = r;
            f->dom[i][r] = d;
        }
    }
}

static int ref_head(const ref_t *f, int i, int r, int root)
{
    return f->dom[i][r] == f->dom[i][root] ? root : f->low[i][f->dom[i][r]];
}

/* Every root of t against the reference; returns failures, printing the
 * first few. */
static int check_levels(const nc__tree_t *t, const ref_t *f, const char *what)
{
    static int printed;
    int bad = 0, kids[MAXP];
    char msg[256];
    for (int root = 0; root < t->p; root++) {
        if (nc__tree_check(t, root, msg, sizeof msg) != 0) {
            if (printed++ < 5)
                fprintf(stderr, "\n  %s root %d: %s\n", what, root, msg);
            bad++;
            continue;
        }
        int cross[NUMACOLL_LEVELS_MAX] = {0};
        for (int par = 0; par < t->p; par++) {
            int n = nc__tree_children(t, root, par, kids);
            for (int e = 0; e < n; e++) {
                int c = kids[e];
                for (int i = 0; i < f->n; i++) {
                    if (f->dom[i][c] == f->dom[i][par])
                        continue;
                    cross[i]++;
                    /* leaving a domain: both ends are its heads */
                    if (ref_head(f, i, c, root) != c ||
                        ref_head(f, i, par, root) != par) {
                        if (printed++ < 5)
                            fprintf(stderr, "\n  %s root %d: edge %d -> %d "
                                    "crosses level %d but joins no heads\n",
                                    what, root, par, c, i);
                        bad++;
                    }
                }
            }
        }
        /* relay (bcast_pipelined.c): every rank reads a copy inside its
         * innermost domain, or is a relay reading its parent's; whoever
         * is read holds a copy (the root or a relay) */
        for (int r = 0; r < t->p && f->n > 0; r++) {
            int src = nc__tree_relay_source(t, root, r);
            int relays = nc__tree_relays(t, root, r);
            int holds = src == root || nc__tree_relays(t, root, src);
            int ok = src >= 0 && src < t->p && holds &&
                     (relays ? src == nc__tree_parent(t, root, r)
                             : f->dom[0][src] == f->dom[0][r]) &&
                     (r != root || (src == root && !relays));
            if (!ok) {
                if (printed++ < 5)
                    fprintf(stderr, "\n  %s root %d: rank %d reads rank %d's "
                            "copy (relay %d)\n", what, root, r, src, relays);
                bad++;
            }
        }
        /* each domain is one subtree: D - 1 edges cross level i */
        for (int i = 0; i < f->n; i++)
            if (cross[i] != f->ndom[i] - 1) {
                if (printed++ < 5)
                    fprintf(stderr, "\n  %s root %d: %d edges cross the %d "
                            "domains of level %d\n", what, root, cross[i],
                            f->ndom[i], i);
                bad++;
            }
    }
    return bad;
}

/* Level trees of a rule (l3tree= ...): one of every shape at some level. */
static const uint16_t level_specs[2][NUMACOLL_LEVEL_END] = {
    {[NC_LT_TOP] = NC_LT(NUMACOLL_TREE_KNOMIAL, 4),
     [NUMACOLL_LEVEL_L1] = NC_LT(NUMACOLL_TREE_KARY, 3),
     [NUMACOLL_LEVEL_L2] = NC_LT(NUMACOLL_TREE_KARY, 3),
     [NUMACOLL_LEVEL_L3] = NC_LT(NUMACOLL_TREE_KARY, 3),
     [NUMACOLL_LEVEL_NUMA] = NC_LT(NUMACOLL_TREE_CHAIN, 0),
     [NUMACOLL_LEVEL_PACKAGE] = NC_LT(NUMACOLL_TREE_FLAT, 0)},
    {[NC_LT_TOP] = NC_LT(NUMACOLL_TREE_CHAIN, 0),
     [NUMACOLL_LEVEL_L1] = NC_LT(NUMACOLL_TREE_FLAT, 0),
     [NUMACOLL_LEVEL_L2] = NC_LT(NUMACOLL_TREE_KNOMIAL, 2),
     [NUMACOLL_LEVEL_L3] = NC_LT(NUMACOLL_TREE_CHAIN, 0),
     [NUMACOLL_LEVEL_NUMA] = NC_LT(NUMACOLL_TREE_KNOMIAL, 3),
     [NUMACOLL_LEVEL_PACKAGE] = NC_LT(NUMACOLL_TREE_KARY, 2)},
};

static void sweep_machine(const machine_t *m)
{
    static const int ps[] = {1, 2, 3, 5, 8, 13, 16, 31, 32, 47, 64};
    static nc__doms_t doms[MAXP];
    static ref_t f;
    int bad = 0, trees = 0;
    for (int placement = 0; placement < 2; placement++) {
        if (discover(m->topology, MAXP, m->npus, placement, doms) != 0) {
            CU_FAIL("discovery failed");
            return;
        }
        for (int li = 0; li < NLISTS; li++) {
            int levels = numacoll_levels_parse(level_lists[li]);
            for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
                int p = ps[pi];
                ref_build(&f, levels, doms, p);
                /* hier 2, 3: the level trees of level_specs */
                for (int k = 2; k <= 3; k++)
                    for (int hier = 0; hier <= 3; hier++) {
                        nc__tree_t t;
                        char what[160];
                        snprintf(what, sizeof what, "%s levels %s place %d "
                                 "p %d k %d hier %d", m->topology,
                                 level_lists[li], placement, p, k, hier);
                        const uint16_t *lt = hier >= 2 ? level_specs[hier - 2]
                                                       : NULL;
                        if (nc__tree_init_spec(&t, p, k, hier ? k : 0, lt,
                                               levels, doms) != NUMACOLL_OK) {
                            CU_FAIL("nc__tree_init_spec");
                            continue;
                        }
                        bad += check_levels(&t, &f, what);
                        trees++;
                        nc__tree_fini(&t);
                    }
            }
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(trees > 0);
}

static void test_synthetic_m1(void)
{
    sweep_machine(&(machine_t){M1, 64});
}

static void test_synthetic_m2(void)
{
    sweep_machine(&(machine_t){M2, 64});
}

static void test_synthetic_smt(void)
{
    sweep_machine(&(machine_t){M3, 32});
}

static void test_xml_uneven(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/28c-2p4n-uneven.xml", nct_topo_dir());
    sweep_machine(&(machine_t){path, 56});
    snprintf(path, sizeof path, "%s/4c-2n-asym.xml", nct_topo_dir());
    sweep_machine(&(machine_t){path, 4});
}

/* Level trees shape each level as named: on M1 (4 L3 of 4 cores per NUMA
 * node, 2 nodes per package), p = 64 with l3tree=chain numatree=flat
 * packagetree=chain toptree=flat, rooted at 0: 0 -> 1 -> 2 -> 3 inside its
 * L3, 0 -> 4, 8, 12 (the other L3 heads of NUMA 0), 0 -> 16 (NUMA 1's
 * head), 0 -> 32 (package 1's head), listed outermost first. A bad entry
 * is refused. */
static void test_level_shapes(void)
{
    static nc__doms_t doms[MAXP];
    CU_ASSERT_EQUAL_FATAL(discover(M1, 64, 64, 0, doms), 0);
    uint16_t lt[NUMACOLL_LEVEL_END] = {
        [NUMACOLL_LEVEL_L3] = NC_LT(NUMACOLL_TREE_CHAIN, 0),
        [NUMACOLL_LEVEL_NUMA] = NC_LT(NUMACOLL_TREE_FLAT, 0),
        [NUMACOLL_LEVEL_PACKAGE] = NC_LT(NUMACOLL_TREE_CHAIN, 0),
        [NC_LT_TOP] = NC_LT(NUMACOLL_TREE_FLAT, 0)};
    int levels = numacoll_levels_parse("l3,numa,package");
    nc__tree_t t;
    CU_ASSERT_EQUAL_FATAL(nc__tree_init_spec(&t, 64, 2, 0, lt, levels, doms),
                          NUMACOLL_OK);
    int kids[MAXP], n = nc__tree_children(&t, 0, 0, kids);
    static const int want0[] = {32, 16, 4, 8, 12, 1};
    CU_ASSERT_EQUAL(n, 6);
    CU_ASSERT(n == 6 && memcmp(kids, want0, sizeof want0) == 0);
    n = nc__tree_children(&t, 0, 16, kids);
    static const int want16[] = {20, 24, 28, 17};
    CU_ASSERT(n == 4 && memcmp(kids, want16, sizeof want16) == 0);
    CU_ASSERT_EQUAL(nc__tree_parent(&t, 0, 3), 2);
    CU_ASSERT_EQUAL(nc__tree_parent(&t, 0, 48), 32);   /* package chain */
    /* relay: 16 copies from 0, 17..19 read 16's copy, 1..3 the root's */
    CU_ASSERT(nc__tree_relays(&t, 0, 16) && !nc__tree_relays(&t, 0, 1));
    CU_ASSERT_EQUAL(nc__tree_relay_source(&t, 0, 16), 0);
    CU_ASSERT_EQUAL(nc__tree_relay_source(&t, 0, 19), 16);
    CU_ASSERT_EQUAL(nc__tree_relay_source(&t, 0, 2), 0);
    CU_ASSERT_EQUAL(nc__tree_relay_source(&t, 0, 52), 48);
    CU_ASSERT_EQUAL(nc__tree_relay_source(&t, 0, 48), 32);
    nc__tree_fini(&t);
    /* the same with the default shapes: knomial radix 2 inside the L3s */
    CU_ASSERT_EQUAL_FATAL(nc__tree_init_spec(&t, 64, 2, 0, NULL, levels, doms),
                          NUMACOLL_OK);
    CU_ASSERT_EQUAL(nc__tree_parent(&t, 0, 3), 2);
    CU_ASSERT_EQUAL(nc__tree_parent(&t, 0, 2), 0);
    nc__tree_fini(&t);
    lt[NUMACOLL_LEVEL_L3] = NC_LT(NUMACOLL_TREE_KARY, 1);
    CU_ASSERT_EQUAL(nc__tree_init_spec(&t, 64, 2, 0, lt, levels, doms),
                    NUMACOLL_ERR_ARG);
    lt[NUMACOLL_LEVEL_L3] = NC_LT(NUMACOLL_TREE_NUMA, 2);
    CU_ASSERT_EQUAL(nc__tree_init_spec(&t, 64, 2, 0, lt, levels, doms),
                    NUMACOLL_ERR_ARG);
    nc__tree_fini(&t);
}

/* The hierarchy printed for the machines of docs/parameters.md. */
static void expect_describe(const char *topology, const char *list, int p,
                            const char *want)
{
    static nc__doms_t doms[MAXP];
    CU_ASSERT_EQUAL_FATAL(discover(topology, p, 64, 0, doms), 0);
    nc__hier_t h;
    CU_ASSERT_EQUAL_FATAL(nc__hier_init(&h, p, numacoll_levels_parse(list),
                                        doms), NUMACOLL_OK);
    char buf[160];
    nc__hier_describe(&h, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, want);
    if (strcmp(buf, want) != 0)
        fprintf(stderr, "\n  %s %s: \"%s\", expected \"%s\"\n", topology, list,
                buf, want);
    nc__hier_fini(&h);
}

static void test_describe(void)
{
    expect_describe(M1, "l3,numa,package", 64,
                    "2 packages > 4 NUMA > 16 L3 > 64 ranks");
    expect_describe(M1, "numa", 64, "4 NUMA > 64 ranks");
    /* one NUMA node per package: numa splits as package does, dropped */
    expect_describe(M2, "l3,numa,package", 64, "2 packages > 16 L3 > 64 ranks");
    expect_describe(M2, "numa", 64, "2 NUMA > 64 ranks");
    /* 8 ranks all in package 0, NUMA 0, L3 0 and 1 */
    expect_describe(M1, "l3,numa,package", 8, "2 L3 > 8 ranks");
    expect_describe(M1, "package", 1, "1 rank");
}

/* The numa tree with levels = numa is the NUMA tree of before: levels and
 * locality records give the same shape. */
static void test_numa_is_levels_numa(void)
{
    static nc__doms_t doms[MAXP];
    numacoll_locality_t loc[MAXP];
    int a[MAXP], b[MAXP];
    CU_ASSERT_EQUAL_FATAL(discover(M1, 32, 64, 1, doms), 0);
    for (int r = 0; r < 32; r++)
        loc[r] = (numacoll_locality_t){.pu = r, .core = r, .l3 = doms[r].id[3],
                                       .numa = doms[r].id[4],
                                       .package = doms[r].id[5]};
    nc__tree_t t1, t2;
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t1, NUMACOLL_TREE_NUMA, 32, 2, loc),
                          NUMACOLL_OK);
    CU_ASSERT_EQUAL_FATAL(nc__tree_init_levels(&t2, 32, 2, 0,
                                               NUMACOLL_LEVEL_NUMA, doms),
                          NUMACOLL_OK);
    int diff = 0;
    for (int root = 0; root < 32; root++)
        for (int r = 0; r < 32; r++) {
            int na = nc__tree_children(&t1, root, r, a);
            int nb = nc__tree_children(&t2, root, r, b);
            diff += na != nb || memcmp(a, b, (size_t)na * sizeof *a) != 0;
        }
    CU_ASSERT_EQUAL(diff, 0);
    nc__tree_fini(&t1);
    nc__tree_fini(&t2);
    CU_ASSERT_EQUAL(nc__tree_init_levels(&t1, 4, 2, 1, NUMACOLL_LEVEL_NUMA,
                                         doms), NUMACOLL_ERR_ARG);
    CU_ASSERT_EQUAL(nc__tree_init_levels(&t1, 4, 2, 0, 4 | 4 << 3, doms),
                    NUMACOLL_ERR_ARG);
    CU_ASSERT_EQUAL(nc__tree_init_levels(&t1, 4, 2, 0, NUMACOLL_LEVEL_NUMA,
                                         NULL), NUMACOLL_ERR_ARG);
    nc__tree_fini(&t1);
}

/* ---- end to end ------------------------------------------------------------ */

typedef struct e2e {
    const char *levels;
    _Atomic int *counter;       /* shared, for the Barrier check */
    const char *table;          /* a tuning table instead of the overrides */
    const char *topology;       /* NULL: M1 */
} e2e_t;

/* Level trees at every level and the Bcast relay on: each collective's
 * trees differ from the defaults at some level. */
static const char relay_table[] =
    "bcast p=1-* size=0-167 alg=inline tree=numa k=2 l3tree=kary:3 "
    "numatree=chain toptree=knomial:2\n"
    "bcast p=1-* size=168-* alg=pipelined f=4K s=8 q=2 tree=numa k=2 "
    "relay=1 l3tree=chain numatree=kary:2 packagetree=flat "
    "toptree=knomial:3\n"
    "barrier p=1-* alg=tree k=2 l3tree=chain numatree=flat toptree=kary:2\n"
    "reduce p=1-* size=* alg=pipelined f=1K s=4 k=2 ku=3 l3tree=kary:2 "
    "packagetree=chain\n"
    "allreduce p=1-* size=0-191 alg=inline\n"
    "allreduce p=1-* size=192-* alg=reduce_bcast f=1K s=4 k=3 "
    "numatree=knomial:2 toptree=flat\n";

/* 4 ranks per NUMA node of M1 in rounds, at uneven offsets inside it, so
 * that L3 domains hold 1 to 3 ranks and rank order interleaves nodes. */
static int e2e_pu(int r)
{
    return (r % 4) * 16 + (r / 4) * 3;
}

static uint64_t val(int rank, size_t i, int call)
{
    return (uint64_t)rank * 1000003u + i * 7u + (uint64_t)call;
}

static int e2e_body(const numacoll_bootstrap_t *b, void *arg)
{
    const e2e_t *e = arg;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.topology = e->topology ? e->topology : M1;
    cfg.pu = e2e_pu(b->rank);
    cfg.verbose = 0;
    cfg.tree = NUMACOLL_TREE_NUMA;
    cfg.levels = numacoll_levels_parse(e->levels);
    cfg.tuning_text = e->table;
    if (!e->table) {
        cfg.frag_size = 4096;       /* several fragments and bank turns */
        cfg.queue_depth = 8;
        cfg.banks = 2;
        cfg.barrier_radix = 2;
        cfg.reduce_radix = 2;
        cfg.reduce_frag_size = 1024;
    }
    numacoll_team_t *team;
    int rc = numacoll_team_create(b, &cfg, &team);
    if (rc != NUMACOLL_OK) {
        fprintf(stderr, "rank %d levels %s: team: %s\n", b->rank, e->levels,
                numacoll_strerror(rc));
        return 10;
    }
    int p = b->size, me = b->rank, bad = 0, call = 0;
    if (e->table) {
        /* the table's rules are in force: relays exist for root 0 */
        const nc__choice_t *ch = nc__team_choice(team, NC_COLL_BCAST, 40000);
        const nc__tree_t *tr = nc__team_tree(team, ch->tree, (int)ch->k, 0,
                                             ch->lt);
        int relays = 0;
        for (int r = 0; tr && r < p; r++)
            relays += nc__tree_relays(tr, 0, r);
        if (!ch->relay || !tr || relays == 0) {
            fprintf(stderr, "rank %d levels %s: relay %u, tree %p, %d relays "
                    "for root 0\n", me, e->levels, ch->relay, (void *)tr,
                    relays);
            bad++;
        }
    }
    static const size_t sizes[] = {1, 60, 3000, 40000};
    unsigned char *buf = malloc(40000);
    uint64_t *s = malloc(3000 * sizeof *s), *r = malloc(3000 * sizeof *r);
    if (!buf || !s || !r)
        return 11;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (int root = 0; root < p; root++, call++) {
            for (size_t i = 0; i < sizes[k]; i++)
                buf[i] = me == root ? (unsigned char)val(root, i, call) : 0;
            bad += numacoll_bcast(team, buf, sizes[k], root) != NUMACOLL_OK;
            for (size_t i = 0; i < sizes[k]; i++)
                bad += buf[i] != (unsigned char)val(root, i, call);
        }
    /* the relay in nonblocking steps too: a request resumes where a
     * blocking call would wait */
    for (int root = 0; e->table && root < p; root++, call++) {
        for (size_t i = 0; i < 40000; i++)
            buf[i] = me == root ? (unsigned char)val(root, i, call) : 0;
        numacoll_request_t *rq = NULL;
        int done = 0;
        if (numacoll_ibcast(team, buf, 40000, root, &rq) != NUMACOLL_OK) {
            bad++;
            continue;
        }
        while (!done)
            if (numacoll_test(&rq, &done) != NUMACOLL_OK) {
                bad++;
                break;
            }
        for (size_t i = 0; done && i < 40000; i++)
            bad += buf[i] != (unsigned char)val(root, i, call);
    }
    for (int it = 0; it < 20; it++) {
        atomic_fetch_add_explicit(e->counter, 1, memory_order_relaxed);
        bad += numacoll_barrier(team) != NUMACOLL_OK;
        /* relaxed: the Barrier's release/acquire orders the increments */
        bad += atomic_load_explicit(e->counter, memory_order_relaxed) <
               (it + 1) * p;
        bad += numacoll_barrier(team) != NUMACOLL_OK;
    }
    static const size_t counts[] = {1, 100, 3000};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        size_t n = counts[k];
        for (int root = 0; root < p; root++, call++) {
            for (size_t i = 0; i < n; i++)
                s[i] = val(me, i, call);
            memset(r, 0, n * sizeof *r);
            bad += numacoll_reduce(team, s, r, n, NUMACOLL_DTYPE_UINT64,
                                   NUMACOLL_OP_SUM, root) != NUMACOLL_OK;
            for (size_t i = 0; me == root && i < n; i++) {
                uint64_t want = 0;
                for (int q = 0; q < p; q++)
                    want += val(q, i, call);
                bad += r[i] != want;
            }
        }
        call++;
        for (size_t i = 0; i < n; i++)
            s[i] = val(me, i, call);
        bad += numacoll_allreduce(team, s, r, n, NUMACOLL_DTYPE_UINT64,
                                  NUMACOLL_OP_SUM) != NUMACOLL_OK;
        for (size_t i = 0; i < n; i++) {
            uint64_t want = 0;
            for (int q = 0; q < p; q++)
                want += val(q, i, call);
            bad += r[i] != want;
        }
    }
    free(buf);
    free(s);
    free(r);
    numacoll_team_destroy(team);
    if (bad)
        fprintf(stderr, "rank %d levels %s: %d errors\n", me, e->levels, bad);
    return bad ? 1 : 0;
}

static void test_end_to_end(void)
{
    static const char *const lists[] = {"l3,numa,package", "l3,package",
                                        "numa", "l2,l3"};
    _Atomic int *counter = nc__run_shared_alloc(sizeof *counter);
    CU_ASSERT_PTR_NOT_NULL_FATAL(counter);
    for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++)
        for (int p = 8; p <= 16; p += 8) {
            atomic_store_explicit(counter, 0, memory_order_relaxed);
            e2e_t e = {.levels = lists[i], .counter = counter};
            int rc = nct_run(p, e2e_body, &e);
            CU_ASSERT_EQUAL(rc, 0);
            if (rc)
                fprintf(stderr, "\n  levels %s p %d failed\n", lists[i], p);
        }
    nc__run_shared_free(counter, sizeof *counter);
}

/* The same with a table that sets a tree per level for every collective
 * and the Bcast's leader relay (members read their domain head's copy). */
static void test_end_to_end_relay(void)
{
    static const char *const lists[] = {"l3,numa,package", "numa", "l3"};
    char xml[512];
    snprintf(xml, sizeof xml, "%s/28c-2p4n-uneven.xml", nct_topo_dir());
    /* every list on M1; the first on an uneven machine from XML */
    const char *const tops[] = {M1, xml};
    const size_t nl = sizeof lists / sizeof lists[0];
    _Atomic int *counter = nc__run_shared_alloc(sizeof *counter);
    CU_ASSERT_PTR_NOT_NULL_FATAL(counter);
    for (size_t ti = 0; ti < 2; ti++)
        for (size_t i = 0; i < (ti ? 1 : nl); i++)
            for (int p = 8; p <= 16; p += 8) {
                atomic_store_explicit(counter, 0, memory_order_relaxed);
                e2e_t e = {.levels = lists[i],
                           .counter = counter, .table = relay_table,
                           .topology = tops[ti]};
                int rc = nct_run(p, e2e_body, &e);
                CU_ASSERT_EQUAL(rc, 0);
                if (rc)
                    fprintf(stderr, "\n  relay, %s levels %s p %d failed\n",
                            tops[ti], e.levels, p);
            }
    nc__run_shared_free(counter, sizeof *counter);
}

/* Ranks that set levels differently cannot form a team: it is a shape
 * parameter, hashed into the agreement at creation. */
static int mismatch_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.topology = M1;
    cfg.pu = e2e_pu(b->rank);
    cfg.verbose = 0;
    cfg.levels = numacoll_levels_parse(b->rank == 1 ? "l3,numa" : "numa");
    numacoll_team_t *team;
    int rc = numacoll_team_create(b, &cfg, &team);
    if (rc == NUMACOLL_OK)
        numacoll_team_destroy(team);
    return rc == NUMACOLL_ERR_ARG ? 0 : 1;
}

static void test_levels_must_agree(void)
{
    CU_ASSERT_EQUAL(numacoll_config_param_is_local("levels"), 0);
    CU_ASSERT_EQUAL(nct_run(4, mismatch_body, NULL), 0);
}

int nct_register_levels(void)
{
    static const nct_test_t tests[] = {
        {"level lists parse, print and are checked", test_parse},
        {"hierarchy described outermost first", test_describe},
        {"levels=numa is the numa tree", test_numa_is_levels_numa},
        {"level trees shape each level as named", test_level_shapes},
        {"trees on pack:2 numa:2 l3:4 core:4, every list and root",
         test_synthetic_m1},
        {"trees on pack:2 numa:1 l3:8 core:4, every list and root",
         test_synthetic_m2},
        {"trees on an SMT machine with L1/L2, every list and root",
         test_synthetic_smt},
        {"trees on uneven XML machines, every list and root", test_xml_uneven},
        {"Bcast, Barrier, Reduce, Allreduce at p = 8, 16 by levels",
         test_end_to_end},
        {"the same with level trees and the Bcast relay", test_end_to_end_relay},
        {"levels must be equal on every rank", test_levels_must_agree},
        {NULL, NULL},
    };
    return nct_add_suite("levels", tests);
}
