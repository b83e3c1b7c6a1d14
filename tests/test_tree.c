/*
 * Suite "tree": exact shapes on small goldens (child order included, since
 * the protocols notify in that order), then nc__tree_check over every
 * kind, p in 1..128, every root and radix 2..8, a checker that is shown to
 * fail on broken trees, argument validation and the max_children bound.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/tree.h"
#include "nct.h"

#define SWEEP_P 128
#define END (-1) /* ends a child list in a golden table */

/* ---- helpers ---------------------------------------------------------- */

/* Compare every rank's children (in order) with want[rank], a list ended
 * by END; also parent(child) == rank, parent(root) == -1 and the checker. */
static void expect_tree(const nc__tree_t *t, int root, const int want[][9])
{
    int out[SWEEP_P];
    char msg[256];
    CU_ASSERT_EQUAL(nc__tree_parent(t, root, root), -1);
    for (int r = 0; r < t->p; r++) {
        int n = nc__tree_children(t, root, r, out);
        int nw = 0;
        while (want[r][nw] != END)
            nw++;
        CU_ASSERT_EQUAL(n, nw);
        if (n != nw) {
            fprintf(stderr, "\n  kind %d root %d rank %d: %d children, "
                    "expected %d\n", t->kind, root, r, n, nw);
            continue;
        }
        for (int i = 0; i < n; i++) {
            CU_ASSERT_EQUAL(out[i], want[r][i]);
            CU_ASSERT_EQUAL(nc__tree_parent(t, root, out[i]), r);
        }
    }
    int rc = nc__tree_check(t, root, msg, sizeof msg);
    CU_ASSERT_EQUAL(rc, 0);
    if (rc != 0)
        fprintf(stderr, "\n  check: %s\n", msg);
}

enum { PAT_ONE, PAT_BLOCK2, PAT_BLOCK4, PAT_RR3, PAT_UNEVEN31, PAT_REVERSE,
       PAT_UNKNOWN, PAT_SINGLETON, PAT_COUNT };

/* Locality records for a few ways ranks spread over NUMA nodes. */
static void fill_loc(numacoll_locality_t *loc, int p, int pat)
{
    for (int r = 0; r < p; r++) {
        int node = 0;
        switch (pat) {
        case PAT_ONE:       node = 0; break;
        case PAT_BLOCK2:    node = r * 2 / p; break;
        case PAT_BLOCK4:    node = r * 4 / p; break;
        case PAT_RR3:       node = r % 3; break;                /* interleaved */
        case PAT_UNEVEN31:  node = 4 * r < 3 * p ? 0 : 1; break; /* 3 + 1 */
        case PAT_REVERSE:   node = 7 - r * 4 / p; break; /* ids against order */
        case PAT_UNKNOWN:   node = r % 4 == 3 ? -1 : r % 2; break;
        case PAT_SINGLETON: node = r; break;
        }
        loc[r] = (numacoll_locality_t){ .pu = r, .core = r, .l3 = node,
                                        .numa = node, .package = node,
                                        .bound = 1, .pid = 1000 + r };
    }
}

/* ---- goldens ---------------------------------------------------------- */

static void test_knomial_golden(void)
{
    nc__tree_t t;
    static const int bin7[7][9] = {
        {4, 2, 1, END}, {END}, {3, END}, {END}, {6, 5, END}, {END}, {END},
    };
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_KNOMIAL, 7, 2, NULL),
                          NUMACOLL_OK);
    expect_tree(&t, 0, bin7);
    CU_ASSERT_EQUAL(nc__tree_max_children(&t), 3);
    nc__tree_fini(&t);

    /* Trinomial, p = 11: digits in base 3, j = 1..2 per level; 18 >= p
     * cuts the top level to one child. */
    static const int tri11[11][9] = {
        {9, 3, 6, 1, 2, END}, {END}, {END}, {4, 5, END}, {END}, {END},
        {7, 8, END}, {END}, {END}, {10, END}, {END},
    };
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_KNOMIAL, 11, 3,
                                        NULL), NUMACOLL_OK);
    expect_tree(&t, 0, tri11);
    CU_ASSERT_EQUAL(nc__tree_max_children(&t), 5);
    nc__tree_fini(&t);

    /* The integer functions alone. */
    int out[8];
    CU_ASSERT_EQUAL(nc__knomial_parent(0, 2), -1);
    CU_ASSERT_EQUAL(nc__knomial_parent(6, 2), 4);
    CU_ASSERT_EQUAL(nc__knomial_parent(12, 2), 8);
    CU_ASSERT_EQUAL(nc__knomial_parent(8, 3), 6);
    CU_ASSERT_EQUAL(nc__knomial_parent(21, 3), 18);
    CU_ASSERT_EQUAL(nc__knomial_children(8, 2, 16, out), 3);
    CU_ASSERT(out[0] == 12 && out[1] == 10 && out[2] == 9);
    CU_ASSERT_EQUAL(nc__knomial_children(8, 2, 11, out), 2); /* truncated */
    CU_ASSERT(out[0] == 10 && out[1] == 9);
    CU_ASSERT_EQUAL(nc__knomial_children(5, 2, 16, out), 0);
}

static void test_knomial_rotated_golden(void)
{
    /* Binomial p = 7 rooted at 3: the root-0 shape with every rank + 3. */
    static const int bin7r3[7][9] = {
        {2, 1, END}, {END}, {END}, {0, 5, 4, END}, {END}, {6, END}, {END},
    };
    nc__tree_t t;
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_KNOMIAL, 7, 2, NULL),
                          NUMACOLL_OK);
    expect_tree(&t, 3, bin7r3);
    nc__tree_fini(&t);
}

static void test_kary_golden(void)
{
    nc__tree_t t;
    static const int bin7[7][9] = {
        {1, 2, END}, {3, 4, END}, {5, 6, END}, {END}, {END}, {END}, {END},
    };
    static const int bin7r5[7][9] = { /* rank = (v + 5) % 7 */
        {3, 4, END}, {END}, {END}, {END}, {END}, {6, 0, END}, {1, 2, END},
    };
    static const int tern6[6][9] = {
        {1, 2, 3, END}, {4, 5, END}, {END}, {END}, {END}, {END},
    };
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_KARY, 7, 2, NULL),
                          NUMACOLL_OK);
    expect_tree(&t, 0, bin7);
    expect_tree(&t, 5, bin7r5);
    CU_ASSERT_EQUAL(nc__tree_max_children(&t), 2);
    nc__tree_fini(&t);
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_KARY, 6, 3, NULL),
                          NUMACOLL_OK);
    expect_tree(&t, 0, tern6);
    nc__tree_fini(&t);

    int out[8];
    CU_ASSERT_EQUAL(nc__kary_parent(0, 4), -1);
    CU_ASSERT_EQUAL(nc__kary_parent(9, 4), 2);
    CU_ASSERT_EQUAL(nc__kary_children(2, 4, 11, out), 2);
    CU_ASSERT(out[0] == 9 && out[1] == 10);
}

static void test_chain_flat_golden(void)
{
    nc__tree_t t;
    static const int chain5r3[5][9] = {
        {1, END}, {2, END}, {END}, {4, END}, {0, END},
    };
    static const int flat5r2[5][9] = {
        {END}, {END}, {3, 4, 0, 1, END}, {END}, {END},
    };
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_CHAIN, 5, 0, NULL),
                          NUMACOLL_OK); /* radix unused by chain */
    expect_tree(&t, 3, chain5r3);
    CU_ASSERT_EQUAL(nc__tree_max_children(&t), 1);
    nc__tree_fini(&t);
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_FLAT, 5, 2, NULL),
                          NUMACOLL_OK);
    expect_tree(&t, 2, flat5r2);
    CU_ASSERT_EQUAL(nc__tree_max_children(&t), 4);
    nc__tree_fini(&t);
}

static void test_numa_golden(void)
{
    numacoll_locality_t loc[8];
    nc__tree_t t;

    /* Nodes {0,1,2,3} and {4,5,6,7}, binomial inside each. */
    fill_loc(loc, 8, PAT_BLOCK2);
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_NUMA, 8, 2, loc),
                          NUMACOLL_OK);
    CU_ASSERT_EQUAL(t.ngroups, 2);
    static const int r0[8][9] = {
        {4, 2, 1, END}, {END}, {3, END}, {END},
        {6, 5, END}, {END}, {7, END}, {END},
    };
    /* Root 5: its node rotated to 5,6,7,4, so 5 -> 7 (u=2), 6 (u=1). */
    static const int r5[8][9] = {
        {2, 1, END}, {END}, {3, END}, {END},
        {END}, {0, 7, 6, END}, {END}, {4, END},
    };
    expect_tree(&t, 0, r0);
    expect_tree(&t, 5, r5);
    CU_ASSERT_EQUAL(nc__tree_max_children(&t), 3);
    nc__tree_fini(&t);

    /* Interleaved: node 0 = {0,2,4}, node 1 = {1,3,5}; root 3 orders its
     * node 3,5,1. */
    for (int r = 0; r < 6; r++)
        loc[r].numa = r % 2;
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_NUMA, 6, 2, loc),
                          NUMACOLL_OK);
    static const int r3[6][9] = {
        {4, 2, END}, {END}, {END}, {0, 1, 5, END}, {END}, {END},
    };
    expect_tree(&t, 3, r3);
    nc__tree_fini(&t);
}

/* ---- sweeps ----------------------------------------------------------- */

/* Check one tree for every root; returns the number of failures, printing
 * the first few checker sentences. */
static int check_all_roots(const nc__tree_t *t, const char *what)
{
    static int printed;
    char msg[256];
    int bad = 0;
    for (int root = 0; root < t->p; root++)
        if (nc__tree_check(t, root, msg, sizeof msg) != 0) {
            bad++;
            if (printed++ < 5)
                fprintf(stderr, "\n  %s p=%d radix=%d root=%d: %s\n", what,
                        t->p, t->radix, root, msg);
        }
    return bad;
}

static void test_check_sweep(void)
{
    static numacoll_locality_t loc[SWEEP_P];
    int bad = 0;
    for (int p = 1; p <= SWEEP_P; p++)
        for (int k = 2; k <= 8; k++) {
            for (int kind = 0; kind < NUMACOLL_TREE_COUNT; kind++) {
                /* flat and chain ignore the radix: one radix is enough */
                if (kind == NUMACOLL_TREE_NUMA ||
                    ((kind == NUMACOLL_TREE_FLAT ||
                      kind == NUMACOLL_TREE_CHAIN) && k > 2))
                    continue;
                nc__tree_t t;
                CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, kind, p, k, NULL),
                                      NUMACOLL_OK);
                bad += check_all_roots(&t, numacoll_tree_name(kind));
                nc__tree_fini(&t);
            }
            for (int pat = 0; pat < PAT_COUNT; pat++) {
                nc__tree_t t;
                fill_loc(loc, p, pat);
                CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_NUMA, p,
                                                    k, loc), NUMACOLL_OK);
                bad += check_all_roots(&t, "numa");
                nc__tree_fini(&t);
            }
        }
    CU_ASSERT_EQUAL(bad, 0);
}

/* Every children() call stays within max_children (a canary after the
 * buffer catches a write past it), and the bound is reached by some rank,
 * so it is not slack. */
static void test_max_children(void)
{
    static numacoll_locality_t loc[SWEEP_P];
    int over = 0, slack = 0;
    for (int p = 1; p <= SWEEP_P; p += (p < 40 ? 1 : 7))
        for (int k = 2; k <= 8; k++)
            for (int v = 0; v < NUMACOLL_TREE_COUNT - 1 + PAT_COUNT; v++) {
                int kind = v < NUMACOLL_TREE_COUNT - 1 ? v : NUMACOLL_TREE_NUMA;
                nc__tree_t t;
                if (kind == NUMACOLL_TREE_NUMA)
                    fill_loc(loc, p, v - (NUMACOLL_TREE_COUNT - 1));
                CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, kind, p, k, loc),
                                      NUMACOLL_OK);
                int mc = nc__tree_max_children(&t), seen = 0;
                int *out = malloc(((size_t)mc + 1) * sizeof(int));
                CU_ASSERT_PTR_NOT_NULL_FATAL(out);
                for (int root = 0; root < p; root++)
                    for (int r = 0; r < p; r++) {
                        out[mc] = -12345;
                        int n = nc__tree_children(&t, root, r, out);
                        over += n > mc || out[mc] != -12345;
                        if (n > seen)
                            seen = n;
                    }
                slack += seen != mc;
                free(out);
                nc__tree_fini(&t);
            }
    CU_ASSERT_EQUAL(over, 0);
    CU_ASSERT_EQUAL(slack, 0);
}

/* ---- the checker can fail -------------------------------------------- */

static void expect_check_fails(const nc__tree_t *t, int root, const char *why)
{
    char msg[256] = "";
    int rc = nc__tree_check(t, root, msg, sizeof msg);
    CU_ASSERT_EQUAL(rc, -1);
    CU_ASSERT(msg[0] != '\0'); /* a sentence says what is wrong */
    if (rc != -1)
        fprintf(stderr, "\n  checker missed: %s\n", why);
}

static void test_check_detects_corruption(void)
{
    numacoll_locality_t loc[8];
    nc__tree_t t;
    fill_loc(loc, 8, PAT_BLOCK2);

    /* Swap two ranks of different nodes in members[] only: 5 is then listed
     * under 0 while its parent() still says 4. */
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_NUMA, 8, 2, loc),
                          NUMACOLL_OK);
    CU_ASSERT_EQUAL(nc__tree_check(&t, 0, NULL, 0), 0);
    int tmp = t.members[1];
    t.members[1] = t.members[5];
    t.members[5] = tmp;
    expect_check_fails(&t, 0, "members swapped");
    nc__tree_fini(&t);

    /* Rank 5 claims node 0's domain in up[] while members[] lists it under
     * node 1: 4's knomial lists 5, whose parent() then looks in node 0. */
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_NUMA, 8, 2, loc),
                          NUMACOLL_OK);
    t.h.up[5] = 0;
    expect_check_fails(&t, 0, "domain of a rank wrong");
    nc__tree_fini(&t);

    /* A wrong leader: node 1's lowest rank said to be 5, so 5 hangs off
     * the root while 4's knomial also lists it. */
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_NUMA, 8, 2, loc),
                          NUMACOLL_OK);
    nc__hier_at(&t.h, t.h.low, 0)[1] = 5;
    expect_check_fails(&t, 0, "lowest rank of a domain wrong");
    nc__tree_fini(&t);

    /* Positions disagree with members[]: 0 lists 2 (position 2) as its
     * child, but 2 computes its parent from position 3 and names itself. */
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_NUMA, 8, 2, loc),
                          NUMACOLL_OK);
    t.h.pos[2] = 3;
    t.h.pos[3] = 2;
    expect_check_fails(&t, 0, "positions swapped");
    nc__tree_fini(&t);

    /* Hand-built integer shapes with a radix init would refuse: nobody gets
     * children, so most ranks are not reached. */
    nc__tree_t bad = { .kind = NUMACOLL_TREE_KARY, .p = 5, .radix = 1 };
    expect_check_fails(&bad, 0, "kary radix 1");
    bad.kind = NUMACOLL_TREE_KNOMIAL;
    bad.radix = 0;
    expect_check_fails(&bad, 2, "knomial radix 0");

    /* Not a tree at all, and a root outside it. */
    nc__tree_t zero;
    memset(&zero, 0, sizeof zero);
    expect_check_fails(&zero, 0, "zeroed");
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_KARY, 4, 2, NULL),
                          NUMACOLL_OK);
    expect_check_fails(&t, 4, "root out of range");
    expect_check_fails(&t, -1, "negative root");
    nc__tree_fini(&t);
}

/* ---- arguments, names, lifetimes --------------------------------------- */

static void test_invalid_args(void)
{
    numacoll_locality_t loc[4];
    nc__tree_t t;
    fill_loc(loc, 4, PAT_BLOCK2);
    CU_ASSERT_EQUAL(nc__tree_init(NULL, NUMACOLL_TREE_FLAT, 4, 2, NULL),
                    NUMACOLL_ERR_ARG);
    CU_ASSERT_EQUAL(nc__tree_init(&t, NUMACOLL_TREE_FLAT, 0, 2, NULL),
                    NUMACOLL_ERR_ARG);
    CU_ASSERT_EQUAL(nc__tree_init(&t, NUMACOLL_TREE_CHAIN, -3, 2, NULL),
                    NUMACOLL_ERR_ARG);
    CU_ASSERT_EQUAL(nc__tree_init(&t, -1, 4, 2, NULL), NUMACOLL_ERR_ARG);
    CU_ASSERT_EQUAL(nc__tree_init(&t, NUMACOLL_TREE_COUNT, 4, 2, NULL),
                    NUMACOLL_ERR_ARG);
    CU_ASSERT_EQUAL(nc__tree_init(&t, NUMACOLL_TREE_KARY, 4, 1, NULL),
                    NUMACOLL_ERR_ARG);
    CU_ASSERT_EQUAL(nc__tree_init(&t, NUMACOLL_TREE_KNOMIAL, 4, 0, NULL),
                    NUMACOLL_ERR_ARG);
    CU_ASSERT_EQUAL(nc__tree_init(&t, NUMACOLL_TREE_NUMA, 4, 1, loc),
                    NUMACOLL_ERR_ARG);
    CU_ASSERT_EQUAL(nc__tree_init(&t, NUMACOLL_TREE_NUMA, 4, 2, NULL),
                    NUMACOLL_ERR_ARG);
    nc__tree_fini(&t); /* a failed init leaves a struct fini accepts */

    /* Radix is irrelevant to flat and chain, so any value is accepted. */
    CU_ASSERT_EQUAL(nc__tree_init(&t, NUMACOLL_TREE_FLAT, 4, 0, NULL),
                    NUMACOLL_OK);
    nc__tree_fini(&t);

    /* Out-of-range queries answer "none" rather than reading out of range. */
    int out[4];
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_NUMA, 4, 2, loc),
                          NUMACOLL_OK);
    CU_ASSERT_EQUAL(nc__tree_parent(&t, 0, 4), -1);
    CU_ASSERT_EQUAL(nc__tree_parent(&t, -1, 1), -1);
    CU_ASSERT_EQUAL(nc__tree_children(&t, 4, 0, out), 0);
    CU_ASSERT_EQUAL(nc__tree_children(&t, 0, -1, out), 0);
    CU_ASSERT_EQUAL(nc__tree_children(NULL, 0, 0, out), 0);
    nc__tree_fini(&t);
    CU_ASSERT_EQUAL(nc__knomial_parent(-1, 2), -1);
    CU_ASSERT_EQUAL(nc__knomial_children(3, 2, 3, out), 0);
    CU_ASSERT_EQUAL(nc__kary_children(0, 1, 4, out), 0);
}

static void test_names(void)
{
    static const char *names[] = { "flat", "chain", "kary", "knomial", "numa" };
    for (int k = 0; k < NUMACOLL_TREE_COUNT; k++) {
        const char *n = numacoll_tree_name((numacoll_tree_kind_t)k);
        CU_ASSERT_PTR_NOT_NULL_FATAL(n);
        CU_ASSERT_STRING_EQUAL(n, names[k]);
        CU_ASSERT_EQUAL(numacoll_tree_parse(n), k);
    }
    CU_ASSERT_PTR_NULL(numacoll_tree_name(NUMACOLL_TREE_COUNT));
    CU_ASSERT_EQUAL(numacoll_tree_parse(NULL), -1);
    CU_ASSERT_EQUAL(numacoll_tree_parse(""), -1);
    CU_ASSERT_EQUAL(numacoll_tree_parse("binomial"), -1);
    CU_ASSERT_EQUAL(numacoll_tree_parse("kary "), -1);
}

static void test_fini_safe(void)
{
    nc__tree_t t;
    memset(&t, 0, sizeof t);
    nc__tree_fini(&t);
    nc__tree_fini(NULL);
    numacoll_locality_t loc[3];
    fill_loc(loc, 3, PAT_RR3);
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_NUMA, 3, 2, loc),
                          NUMACOLL_OK);
    nc__tree_fini(&t);
    nc__tree_fini(&t); /* twice: fini zeroes the struct */
    CU_ASSERT_PTR_NULL(t.h.up);
}

/* Shapes that need no memory work at any p; the k^i and k*v loops and the
 * rotations must not overflow near INT_MAX (UBSan watches). */
static void test_no_overflow(void)
{
    int out[512];
    /* 64^5 < INT_MAX < 64^6: five full levels of 63, one child at 64^5. */
    CU_ASSERT_EQUAL(nc__knomial_children(0, 64, INT_MAX, out), 5 * 63 + 1);
    CU_ASSERT_EQUAL(nc__knomial_children(1 << 30, 2, INT_MAX, out), 30);
    CU_ASSERT_EQUAL(nc__knomial_children(3, INT_MAX, INT_MAX, out), 0);
    CU_ASSERT_EQUAL(nc__knomial_parent(INT_MAX, 2), INT_MAX - 1);
    CU_ASSERT_EQUAL(nc__knomial_parent(1 << 30, 2), 0);
    CU_ASSERT_EQUAL(nc__knomial_parent(1 << 30, 1 << 30), 0);
    CU_ASSERT_EQUAL(nc__knomial_parent(INT_MAX - 1, 1 << 30), 1 << 30);
    CU_ASSERT_EQUAL(nc__kary_children(INT_MAX / 2, 3, INT_MAX, out), 0);
    CU_ASSERT_EQUAL(nc__kary_children(INT_MAX / 2 - 1, 2, INT_MAX, out), 2);
    CU_ASSERT_EQUAL(out[1], INT_MAX - 1);

    /* p = INT_MAX, root R = INT_MAX-2: rank INT_MAX-1 is v=1, rank 0 is
     * v=2, rank 1 is v=3. */
    const int R = INT_MAX - 2;
    nc__tree_t t;
    CU_ASSERT_EQUAL_FATAL(nc__tree_init(&t, NUMACOLL_TREE_KNOMIAL, INT_MAX,
                                        2, NULL), NUMACOLL_OK);
    CU_ASSERT_EQUAL(nc__tree_max_children(&t), 31);
    CU_ASSERT_EQUAL(nc__tree_parent(&t, R, INT_MAX - 1), R);
    CU_ASSERT_EQUAL(nc__tree_parent(&t, R, 0), R);
    CU_ASSERT_EQUAL(nc__tree_parent(&t, R, 1), 0);
    CU_ASSERT_EQUAL(nc__tree_children(&t, R, 0, out), 1);
    CU_ASSERT_EQUAL(out[0], 1);
    CU_ASSERT_EQUAL(nc__tree_children(&t, R, R, out), 31);
    CU_ASSERT_EQUAL(out[0], (1 << 30) - 2); /* v = 2^30 wraps past p */
    CU_ASSERT_EQUAL(out[30], INT_MAX - 1);  /* v = 1 */
    nc__tree_fini(&t);
}

int nct_register_tree(void)
{
    static const nct_test_t tests[] = {
        {"knomial golden (p=7 binomial, p=11 trinomial)", test_knomial_golden},
        {"knomial rotated root", test_knomial_rotated_golden},
        {"kary golden", test_kary_golden},
        {"chain and flat golden", test_chain_flat_golden},
        {"numa golden (blocks, interleaved, rotated root)", test_numa_golden},
        {"check passes: every kind, p 1..128, root, radix 2..8",
         test_check_sweep},
        {"children within max_children, bound reached", test_max_children},
        {"check fails on corrupted trees", test_check_detects_corruption},
        {"invalid arguments rejected", test_invalid_args},
        {"tree names and parser", test_names},
        {"fini safe on zeroed, failed and finished trees", test_fini_safe},
        {"no int overflow near INT_MAX", test_no_overflow},
        {NULL, NULL},
    };
    return nct_add_suite("tree", tests);
}
