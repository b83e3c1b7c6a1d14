/*
 * Bcast end to end through the forked runner: every p in {1,2,3,4,7,8}
 * (oversubscribed on small machines), every root, every tree kind, sizes at
 * every fragment and queue boundary, q in {1,2,4}, back-to-back calls with
 * rotating roots and no barrier between them, data that differs per call,
 * checked byte for byte on every rank; then the same under a synthetic
 * 4-NUMA topology, plus packed data and error paths (the barrier has its
 * own suite in test_reduce.c).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/cma.h"
#include "coll/copy.h"
#include "coll/team.h"
#include "coll/tree.h"
#include "support/runner.h"
#include "nct.h"
#include "numacoll.h"

#define MiB ((size_t)1 << 20)
#define FAKE4 "synthetic:pack:2 numa:2 core:4 pu:1"

typedef struct bcast_case {
    numacoll_config_t cfg;
    const size_t *sizes;
    int nsizes;
    int spread_pus;          /* inject PU (r % 4) * 4 + r / 4: 4 fake nodes */
    int check_placement;
} bcast_case_t;

/* Value of byte i of call `call`: differs per call, per position. */
static unsigned char pattern(uint64_t call, size_t i)
{
    uint64_t x = (call + 1) * 0x9e3779b97f4a7c15ULL + i * 0xbf58476d1ce4e5b9ULL;
    return (unsigned char)(x >> 56 ^ x >> 24 ^ i);
}

static int bcast_body(const numacoll_bootstrap_t *b, void *arg)
{
    const bcast_case_t *bc = arg;
    numacoll_config_t cfg = bc->cfg;
    if (bc->spread_pus)
        cfg.pu = (b->rank % 4) * 4 + b->rank / 4;
    numacoll_team_t *team;
    int rc = numacoll_team_create(b, &cfg, &team);
    if (rc != NUMACOLL_OK) {
        fprintf(stderr, "rank %d: team_create: %s\n", b->rank,
                numacoll_strerror(rc));
        return 10;
    }
    size_t max = 0;
    for (int k = 0; k < bc->nsizes; k++)
        if (bc->sizes[k] > max)
            max = bc->sizes[k];
    /* a guard byte past the message catches overruns */
    unsigned char *buf = malloc(max + 1);
    if (!buf)
        return 11;
    int errors = 0;
    uint64_t call = 0;
    for (int k = 0; k < bc->nsizes && errors == 0; k++) {
        size_t n = bc->sizes[k];
        for (int root = 0; root < b->size && errors == 0; root++, call++) {
            if (b->rank == root)
                for (size_t i = 0; i < n; i++)
                    buf[i] = pattern(call, i);
            else
                memset(buf, 0xEE, n);
            buf[n] = 0x5A;
            rc = numacoll_bcast(team, buf, n, root);
            if (rc != NUMACOLL_OK) {
                fprintf(stderr, "rank %d: bcast %zu root %d: %s: %s\n", b->rank,
                        n, root, numacoll_strerror(rc),
                        numacoll_team_last_error(team));
                errors++;
                break;
            }
            for (size_t i = 0; i < n; i++)
                if (buf[i] != pattern(call, i)) {
                    fprintf(stderr, "rank %d: bcast of %zu bytes from root %d "
                            "(tree %s, f %zu, s %u, q %u): byte %zu is 0x%02x, "
                            "want 0x%02x\n", b->rank, n, root,
                            cfg.tree < 0 ? "table" : numacoll_tree_name(cfg.tree),
                            cfg.frag_size,
                            cfg.queue_depth, cfg.banks, i, buf[i],
                            pattern(call, i));
                    errors++;
                    break;
                }
            if (buf[n] != 0x5A) {
                fprintf(stderr, "rank %d: bcast of %zu bytes wrote past the "
                        "end\n", b->rank, n);
                errors++;
            }
        }
    }
    if (bc->check_placement && errors == 0) {
        numacoll_placement_t pl;
        numacoll_team_placement(team, &pl);
        numacoll_locality_t loc;
        numacoll_team_locality(team, b->rank, &loc);
        /* this machine has one node: fake nodes 1..3 must degrade to it */
        int want_degraded = bc->spread_pus ? loc.numa != 0 : 0;
        if (pl.degraded != want_degraded || pl.pages == 0 ||
            (pl.pages_unknown == 0 && pl.pages_on_node != pl.pages)) {
            fprintf(stderr, "rank %d: placement: node %d bound %d degraded %d "
                    "pages %zu on node %zu unknown %zu\n", b->rank,
                    pl.intended_node, pl.bound_node, pl.degraded, pl.pages,
                    pl.pages_on_node, pl.pages_unknown);
            errors++;
        }
    }
    free(buf);
    numacoll_team_destroy(team);
    return errors ? 1 : 0;
}

static int run_case(int p, bcast_case_t *bc)
{
    int rc = nct_run(p, bcast_body, bc);
    if (rc != 0)
        fprintf(stderr, "bcast case failed: p %d tree %s radix %u f %zu s %u "
                "q %u\n", p, bc->cfg.tree < 0 ? "table" : numacoll_tree_name(bc->cfg.tree),
                bc->cfg.radix,
                bc->cfg.frag_size, bc->cfg.queue_depth, bc->cfg.banks);
    return rc;
}

static const int team_sizes[] = {1, 2, 3, 4, 7, 8};

/* Sizes at every boundary of a small queue (f = 4 KiB, s = 8). */
static int boundary_sizes(size_t f, unsigned s, unsigned q, size_t *out,
                          int with_16m)
{
    size_t b = s * f;
    size_t v[] = {0, 1, 55, 56, 57, 63, 64, f - 1, f, f + 1, b / q, b, b + 1,
                  3 * b + 17};
    int n = 0;
    for (size_t i = 0; i < sizeof v / sizeof *v; i++)
        out[n++] = v[i];
    if (with_16m)
        out[n++] = 16 * MiB;
    return n;
}

/* Every p, root, tree kind and q with a small queue so every boundary is
 * crossed many times. */
static void test_matrix(void)
{
    for (int q = 1; q <= 4; q *= 2)
        for (int kind = 0; kind < NUMACOLL_TREE_COUNT; kind++)
            for (size_t i = 0; i < sizeof team_sizes / sizeof *team_sizes; i++) {
                bcast_case_t bc = {0};
                numacoll_config_init(&bc.cfg);
                bc.cfg.frag_size = 4096;
                bc.cfg.queue_depth = 8;
                bc.cfg.banks = (unsigned)q;
                bc.cfg.tree = kind;
                bc.cfg.radix = kind == NUMACOLL_TREE_KNOMIAL ? 3 : 2;
                size_t sizes[16];
                bc.nsizes = boundary_sizes(4096, 8, (unsigned)q, sizes, 0);
                bc.sizes = sizes;
                CU_ASSERT_EQUAL(run_case(team_sizes[i], &bc), 0);
            }
}

/* The built-in table (f = 8 KiB, s = 64, q = 2, binary tree) up to 16 MiB. */
static void test_defaults_16m(void)
{
    for (size_t i = 0; i < sizeof team_sizes / sizeof *team_sizes; i++) {
        bcast_case_t bc = {0};
        numacoll_config_init(&bc.cfg);
        size_t sizes[16];
        bc.nsizes = boundary_sizes(8192, 64, 2, sizes, 1);
        bc.sizes = sizes;
        bc.check_placement = 1;
        CU_ASSERT_EQUAL(run_case(team_sizes[i], &bc), 0);
    }
}

/* 16 MiB through every tree kind and q at p = 4 and 8. */
static void test_16m_every_tree(void)
{
    static const size_t sizes[] = {16 * MiB, 3 * MiB + 5};
    for (int q = 1; q <= 4; q *= 2)
        for (int kind = 0; kind < NUMACOLL_TREE_COUNT; kind++) {
            bcast_case_t bc = {.sizes = sizes, .nsizes = 2};
            numacoll_config_init(&bc.cfg);
            bc.cfg.banks = (unsigned)q;
            bc.cfg.tree = kind;
            CU_ASSERT_EQUAL(run_case(q == 2 ? 8 : 4, &bc), 0);
        }
}

/* The synthetic 4-NUMA machine: ranks spread over 4 fake nodes, every tree,
 * placement degraded to the one real node and reported as such. */
static void test_fake_4numa(void)
{
    for (int kind = 0; kind < NUMACOLL_TREE_COUNT; kind++)
        for (int p = 7; p <= 8; p++) {
            bcast_case_t bc = {.spread_pus = 1, .check_placement = 1};
            numacoll_config_init(&bc.cfg);
            bc.cfg.topology = FAKE4;
            bc.cfg.verbose = 0;       /* the degradation is asserted instead */
            bc.cfg.frag_size = 4096;
            bc.cfg.queue_depth = 8;
            bc.cfg.tree = kind;
            size_t sizes[16];
            bc.nsizes = boundary_sizes(4096, 8, 2, sizes, 0);
            bc.sizes = sizes;
            CU_ASSERT_EQUAL(run_case(p, &bc), 0);
        }
}

/* The numa tree under the fake topology sees 4 groups led by ranks 0..3. */
static int numa_groups_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.topology = FAKE4;
    cfg.verbose = 0;
    cfg.tree = NUMACOLL_TREE_NUMA;
    cfg.pu = (b->rank % 4) * 4 + b->rank / 4;
    numacoll_team_t *team;
    if (numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK)
        return 10;
    int bad = 0;
    for (int r = 0; r < b->size; r++) {
        numacoll_locality_t loc;
        numacoll_team_locality(team, r, &loc);
        bad += loc.numa != r % 4 || loc.package != (r % 4) / 2 || !loc.bound;
    }
    numacoll_team_destroy(team);
    return bad ? 1 : 0;
}

static void test_fake_localities(void)
{
    CU_ASSERT_EQUAL(nct_run(8, numa_groups_body, NULL), 0);
}

/* Packed data: the root packs every other 8-byte word of a strided array;
 * readers unpack into a stride of three words. */
typedef struct strided {
    uint64_t *base;
    size_t stride;         /* in words */
} strided_t;

static int pack_strided(void *ctx, size_t off, void *dst, size_t n)
{
    strided_t *s = ctx;
    for (size_t i = 0; i < n; i++) {
        size_t byte = off + i;
        ((unsigned char *)dst)[i] =
            ((unsigned char *)&s->base[(byte / 8) * s->stride])[byte % 8];
    }
    return 0;
}

static int unpack_strided(void *ctx, size_t off, const void *src, size_t n)
{
    strided_t *s = ctx;
    for (size_t i = 0; i < n; i++) {
        size_t byte = off + i;
        ((unsigned char *)&s->base[(byte / 8) * s->stride])[byte % 8] =
            ((const unsigned char *)src)[i];
    }
    return 0;
}

static int fail_unpack(void *ctx, size_t off, const void *src, size_t n)
{
    (void)ctx, (void)off, (void)src, (void)n;
    return -1;
}

static int packed_body(const numacoll_bootstrap_t *b, void *arg)
{
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.tuning_text = arg;      /* NULL: the built-in table */
    cfg.single_copy = 2;        /* a cma rule runs as such, fast or not */
    cfg.frag_size = 1024;
    cfg.queue_depth = 4;
    numacoll_team_t *team;
    if (numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK)
        return 10;
    const size_t words_list[] = {1, 7, 128, 1000, 5000};
    int errors = 0;
    for (int k = 0; k < 5; k++)
        for (int root = 0; root < b->size; root++) {
            size_t words = words_list[k];
            size_t stride = b->rank == root ? 2 : 3;
            uint64_t *a = calloc(words * stride, sizeof *a);
            for (size_t w = 0; w < words; w++)
                a[w * stride] = b->rank == root ? w * 1000003u + (uint64_t)root
                                                : 0;
            strided_t s = {a, stride};
            int rc = numacoll_bcast_packed(team, words * 8, root, pack_strided,
                                           unpack_strided, &s);
            errors += rc != NUMACOLL_OK;
            for (size_t w = 0; w < words; w++) {
                errors += a[w * stride] != w * 1000003u + (uint64_t)root;
                for (size_t g = 1; g < stride; g++)
                    errors += a[w * stride + g] != 0;   /* gaps untouched */
            }
            free(a);
        }
    /* a failing unpack is reported on that rank; the others complete */
    unsigned char buf[3000] = {0};
    strided_t s0 = {(uint64_t *)buf, 1};
    int rc = numacoll_bcast_packed(team, sizeof buf, 0, pack_strided,
                                   b->rank == 1 ? fail_unpack : unpack_strided,
                                   &s0);
    errors += rc != (b->rank == 1 ? NUMACOLL_ERR_CALLBACK : NUMACOLL_OK);
    /* and the team stays usable */
    errors += numacoll_bcast(team, buf, 100, b->size - 1) != NUMACOLL_OK;
    numacoll_team_destroy(team);
    if (errors)
        fprintf(stderr, "rank %d: %d packed errors\n", b->rank, errors);
    return errors ? 1 : 0;
}

static void test_packed(void)
{
    for (int p = 2; p <= 5; p += 3) {
        CU_ASSERT_EQUAL(nct_run(p, packed_body, NULL), 0);
    }
}

/* Whole-call adapt (coll/copy.h) at a 4 MiB root of the built-in table:
 * a blocking contiguous call counts in the root's record, a packed one,
 * a nonblocking one and the readers' parts do not; the data arrives
 * either way. arg: the tuning text (NULL: the built-in table). */
static int call_adapt_body(const numacoll_bootstrap_t *b, void *arg)
{
    numacoll_team_t *team;
    int rc = nct_team_tuned(b, arg, NULL, &team);
    if (rc != NUMACOLL_OK)
        return nct_say(NULL, b->rank, "team", rc);
    const size_t n = 4 * MiB, words = n / 8;
    uint64_t *a = malloc(n);
    int errors = !a;
    unsigned long before[2], after[2];
    nc__copy_call_count(n, before);
    for (int way = 0; way < 3 && !errors; way++) {
        for (size_t w = 0; w < words; w++)
            a[w] = b->rank == 0 ? w * 7 + (uint64_t)way : 0;
        strided_t s = {a, 1};
        numacoll_request_t *req = NULL;
        rc = way == 0 ? numacoll_bcast(team, a, n, 0)
             : way == 1 ? numacoll_bcast_packed(team, n, 0, pack_strided,
                                                unpack_strided, &s)
                        : numacoll_ibcast(team, a, n, 0, &req);
        if (rc == NUMACOLL_OK && req)
            rc = numacoll_wait(&req);
        errors += rc != NUMACOLL_OK;
        for (size_t w = 0; w < words && !errors; w++)
            errors += a[w] != w * 7 + (uint64_t)way;
    }
    nc__copy_call_count(n, after);
    const unsigned long calls = after[0] + after[1] - before[0] - before[1];
    errors += calls != (b->rank == 0 ? 1u : 0u);
    free(a);
    numacoll_team_destroy(team);
    if (errors)
        fprintf(stderr, "rank %d: whole-call adapt: %d errors, %lu calls "
                "counted\n", b->rank, errors, calls);
    return errors ? 1 : 0;
}

static void test_call_adapt(void)
{
    CU_ASSERT_EQUAL(nct_run(2, call_adapt_body, NULL), 0);
}

/* ---- single copy (alg=cma) ------------------------------------------------ */

#define CMA_RULE(tree) "bcast p=1-* size=57-* alg=cma f=4K tree=" tree " k=2\n"

/* This machine permits process_vm_readv between the test's ranks (same
 * user, no Yama restriction, no seccomp filter): with single_copy = 2 the
 * single-copy path must then really be taken, or these tests would pass
 * on the fallback. */
static int cma_state_body(const numacoll_bootstrap_t *b, void *arg)
{
    const int *want = arg;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.single_copy = *want;
    cfg.tuning_text = CMA_RULE("kary");
    cfg.verbose = 0;
    numacoll_team_t *team;
    if (numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK)
        return 10;
    const char *why = NULL;
    const int on = numacoll_team_single_copy(team, &why);
    int ok = why != NULL;
    if (ok && *want == 1)
        /* timed: on, or off naming the cost it measured and the way out */
        ok = on ? why[0] == '\0'
                : strstr(why, "x a memcpy") && strstr(why, "single_copy = 2");
    else if (ok)
        ok = on == (*want != 0) &&
             (*want ? why[0] == '\0' : strstr(why, "single_copy") != NULL);
    if (!ok)
        fprintf(stderr, "rank %d: single copy %d, want %d (%s)\n", b->rank,
                on, *want, why ? why : "");
    numacoll_team_destroy(team);
    return ok ? 0 : 1;
}

static void test_cma_probe(void)
{
    int untimed = 2, timed = 1, off = 0;
    CU_ASSERT_EQUAL(nct_run(2, cma_state_body, &untimed), 0);
    CU_ASSERT_EQUAL(nct_run(3, cma_state_body, &timed), 0);
    CU_ASSERT_EQUAL(nct_run(3, cma_state_body, &off), 0);
}

/* The verdict on the probes' figures: the slowest rank above 2 memcpys
 * turns single copy off; an unmeasured rank (0) never does. */
static void test_cma_verdict(void)
{
    const uint32_t none[] = {0, 150, 200}, one[] = {150, 201, 0},
                   two[] = {250, 180, 400};
    CU_ASSERT_EQUAL(nc__cma_too_slow(none, sizeof *none, 3), -1);
    CU_ASSERT_EQUAL(nc__cma_too_slow(one, sizeof *one, 3), 1);
    CU_ASSERT_EQUAL(nc__cma_too_slow(two, sizeof *two, 3), 2);
    /* a stride over a struct, as the setup exchange lays them out */
    struct { int32_t err; uint32_t cost; } m[2] = {{0, 100}, {0, 900}};
    CU_ASSERT_EQUAL(nc__cma_too_slow(&m[0].cost, sizeof *m, 2), 1);
    CU_ASSERT_EQUAL(nc__cma_too_slow(&m[0].cost, sizeof *m, 1), -1);
    /* the probe itself gives a figure here (self-reads are permitted) */
    CU_ASSERT(nc__cma_cost() > 0);
}

/* Three Bcast rules of three trees, for nc__bcast_kin's ways. */
#define KIN_RULES                                                              \
    "bcast p=1-* size=0-167 alg=inline tree=kary k=2\n"                        \
    "bcast p=1-* size=168-4095 alg=pipelined f=1K s=4 q=1 tree=knomial k=3\n"  \
    "bcast p=1-* size=4K-* alg=pipelined f=4K s=4 q=2 tree=flat\n"

/* nc__bcast_kin against the tree's own answers, rules and roots in an
 * order that keeps replacing its ways (and repeats pairs it keeps). */
static int kin_body(const numacoll_bootstrap_t *b, void *arg)
{
    numacoll_team_t *t;
    const int rc = nct_team_tuned(b, arg, NULL, &t);
    if (rc != NUMACOLL_OK)
        return nct_say(NULL, b->rank, "team", rc);
    static const size_t sizes[] = {8, 1000, 5000};
    int kids[64], bad = 0;
    uint64_t x = 12345;
    for (int i = 0; i < 400 && !bad; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        const int root = (int)(x >> 33) % b->size;
        const nc__choice_t *ch =
            nc__team_choice(t, NC_COLL_BCAST, sizes[(x >> 20) % 3]);
        const nc__tree_t *tree, *want = nc__team_tree(
                                    t, ch->tree, (int)ch->k, 0, ch->lt);
        const int *got;
        int parent;
        const int n = nc__bcast_kin(t, ch, root, &tree, &parent, &got);
        const int m = nc__tree_children(want, root, b->rank, kids);
        bad = tree != want || n != m ||
              parent != nc__tree_parent(want, root, b->rank) ||
              (n > 0 && memcmp(got, kids, (size_t)n * sizeof *kids) != 0);
    }
    numacoll_team_destroy(t);
    if (bad)
        fprintf(stderr, "rank %d: nc__bcast_kin differs from the tree\n",
                b->rank);
    return bad ? 6 : 0;
}

static void test_kin(void)
{
    for (int p = 2; p <= 7; p += 5)
        CU_ASSERT_EQUAL(nct_run(p, kin_body, KIN_RULES), 0);
}

/* Every p, root and tree with pieces of 4 KiB around their boundaries, then
 * the same with single copy forced unavailable (the rules then run as the
 * pipelined copy-in/copy-out). */
static void cma_matrix(int single_copy)
{
    static const char *const texts[] = {CMA_RULE("flat"), CMA_RULE("kary"),
                                        CMA_RULE("chain"), CMA_RULE("knomial")};
    static const size_t sizes[] = {0,    1,    56,   57,        4095,
                                   4096, 4097, 3 * 4096 + 17, MiB + 3};
    for (size_t k = 0; k < sizeof texts / sizeof *texts; k++)
        for (int p = 2; p <= 8; p++) {
            bcast_case_t bc = {.sizes = sizes,
                               .nsizes = sizeof sizes / sizeof *sizes};
            numacoll_config_init(&bc.cfg);
            bc.cfg.tuning_text = texts[k];
            bc.cfg.single_copy = single_copy;
            CU_ASSERT_EQUAL(run_case(p, &bc), 0);
        }
}

static void test_cma_matrix(void) { cma_matrix(2); }
static void test_cma_fallback(void) { cma_matrix(0); }

static void test_cma_packed(void)
{
    for (int p = 2; p <= 5; p += 3)
        CU_ASSERT_EQUAL(nct_run(p, packed_body, CMA_RULE("kary")), 0);
}

/* Bad calls fail with NUMACOLL_ERR_ARG and a message, and nothing hangs. */
static int bad_args_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *team;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    int errors = 0;
    /* a config every rank rejects */
    cfg.frag_size = 100;
    cfg.verbose = 0;
    errors += numacoll_team_create(b, &cfg, &team) != NUMACOLL_ERR_ARG;
    /* a config only rank 1 rejects: all must fail together, none hang */
    cfg.frag_size = b->rank == 1 ? 100 : 8192;
    errors += numacoll_team_create(b, &cfg, &team) != NUMACOLL_ERR_ARG;
    cfg.frag_size = 8192;
    errors += numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK;
    char buf[200] = {0};
    errors += numacoll_bcast(team, buf, 10, b->size) != NUMACOLL_ERR_ARG;
    errors += strstr(numacoll_team_last_error(team), "root") == NULL;
    errors += numacoll_bcast(team, buf, 10, -1) != NUMACOLL_ERR_ARG;
    errors += numacoll_bcast(team, NULL, 10, 0) != NUMACOLL_ERR_ARG;
    errors += numacoll_bcast(team, NULL, 0, 0) != NUMACOLL_OK;
    errors += numacoll_bcast(NULL, buf, 10, 0) != NUMACOLL_ERR_ARG;
    numacoll_team_destroy(team);
    /* a bootstrap that lies about its rank */
    numacoll_bootstrap_t bad = *b;
    bad.rank = b->size;
    errors += numacoll_team_create(&bad, NULL, &team) != NUMACOLL_ERR_ARG;
    errors += numacoll_team_create(b, NULL, NULL) != NUMACOLL_ERR_ARG;
    return errors ? 1 : 0;
}

static void test_bad_args(void)
{
    CU_ASSERT_EQUAL(nct_run(3, bad_args_body, NULL), 0);
}

int nct_register_bcast(void)
{
    static const nct_test_t tests[] = {
        {"every p, root, tree, q and boundary size", test_matrix},
        {"defaults up to 16 MiB, placement verified", test_defaults_16m},
        {"16 MiB through every tree and q", test_16m_every_tree},
        {"fake 4-NUMA topology, every tree", test_fake_4numa},
        {"fake 4-NUMA localities and groups", test_fake_localities},
        {"packed data through callbacks", test_packed},
        {"bad arguments", test_bad_args},
        {"single copy: probed, timed, or off by parameter", test_cma_probe},
        {"single copy: the timed verdict", test_cma_verdict},
        {"a rank's place in the tree, kept per rule and root", test_kin},
        {"whole-call adapt: blocking contiguous roots only", test_call_adapt},
        {"single copy: every p, root, tree and boundary", test_cma_matrix},
        {"single copy forced off: the same on the fallback", test_cma_fallback},
        {"single copy: packed data through callbacks", test_cma_packed},
        {NULL, NULL},
    };
    return nct_add_suite("bcast", tests);
}
