/*
 * The inline Bcast (coll/bcast/bcast_inline.c), suite "inline": sizes
 * around every line boundary up to and past the inline limit (the default
 * table's and one given as a tuning text), every root, p = 2..8, trees
 * flat, kary, knomial and chain; inline and pipelined calls interleaved
 * with changing roots and no barrier between them; long runs of
 * back-to-back calls (10000 at p = 2, 1000 at p = 8), every byte checked
 * with a guard byte after the message. Mismatched inline sizes are in the
 * mismatch suite (tests/test_mismatch.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nct.h"
#include "numacoll.h"

typedef struct inl_case {
    int tree;                 /* -1: the table's */
    unsigned radix;
    const char *tuning;       /* NULL: the built-in table */
    const size_t *sizes;
    int nsizes;
    int calls;                /* > 0: that many calls, sizes cycled */
    size_t max;               /* the largest of sizes: the buffer's size */
} inl_case_t;

static unsigned char pattern(unsigned long long call, size_t i)
{
    unsigned long long x = (call + 3) * 0x9e3779b97f4a7c15ULL +
                           i * 0xbf58476d1ce4e5b9ULL;
    return (unsigned char)(x >> 56 ^ x >> 29 ^ i);
}

/* One call of n bytes from root, checked on every rank; 0 or a code. */
static int one(numacoll_team_t *t, int rank, unsigned char *buf, size_t n,
               int root, unsigned long long call)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = rank == root ? pattern(call, i) : 0xEE;
    buf[n] = 0x5A;
    int rc = numacoll_bcast(t, buf, n, root);
    if (rc != NUMACOLL_OK) {
        fprintf(stderr, "rank %d: call %llu, bcast %zu from %d: %s (%s)\n",
                rank, call, n, root, numacoll_strerror(rc),
                numacoll_team_last_error(t));
        return 2;
    }
    for (size_t i = 0; i < n; i++)
        if (buf[i] != pattern(call, i)) {
            fprintf(stderr, "rank %d: call %llu, bcast %zu from %d: byte %zu "
                    "is 0x%02x, want 0x%02x\n", rank, call, n, root, i,
                    buf[i], pattern(call, i));
            return 3;
        }
    return buf[n] == 0x5A ? 0 : 4;
}

static int inline_body(const numacoll_bootstrap_t *b, void *arg)
{
    const inl_case_t *c = arg;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    if (c->tree >= 0) {
        cfg.tree = c->tree;
        cfg.radix = c->radix;
    }
    cfg.tuning_text = c->tuning;
    numacoll_team_t *t;
    if (numacoll_team_create(b, &cfg, &t) != NUMACOLL_OK)
        return 1;
    unsigned char *buf = malloc(c->max + 1);
    int bad = buf ? 0 : 5;
    unsigned long long call = 0;
    if (c->calls > 0) {
        /* back to back, sizes and roots changing every call */
        for (; call < (unsigned long long)c->calls && !bad; call++)
            bad = one(t, b->rank, buf, c->sizes[call % (unsigned)c->nsizes],
                      (int)(call * 7 % (unsigned)b->size), call);
    } else {
        for (int k = 0; k < c->nsizes && !bad; k++)
            for (int root = 0; root < b->size && !bad; root++, call++)
                bad = one(t, b->rank, buf, c->sizes[k], root, call);
    }
    if (!bad && numacoll_barrier(t) != NUMACOLL_OK)
        bad = 6;
    free(buf);
    numacoll_team_destroy(t);
    return bad;
}

/* Every boundary of the 56-byte lines, of 8-line chunks and of the limits
 * (167 built in, 4095 in big_text). */
static const size_t edges[] = {0, 1, 7, 55, 56, 57, 111, 112, 113, 167,
                               168, 169, 447, 448, 449, 1000, 2015, 2016,
                               2017, 4094, 4095, 4096, 4097, 8192};

/* Inline up to 4095 bytes (74 lines, 10 chunks), pipelined from 4 KiB:
 * multi-line inline through every tree (the built-in table stops at 167). */
static const char big_text[] =
    "bcast p=1-* size=0-4095 alg=inline tree=kary k=2\n"
    "bcast p=1-* size=4K-131071 alg=pipelined f=8K s=64 q=2 tree=kary k=2\n"
    "bcast p=1-* size=128K-* alg=pipelined f=32K s=16 q=2 tree=kary k=2\n";

static void test_every_p_tree(void)
{
    static const struct { int tree; unsigned k; } trees[] = {
        {NUMACOLL_TREE_FLAT, 2}, {NUMACOLL_TREE_KARY, 2},
        {NUMACOLL_TREE_KARY, 3}, {NUMACOLL_TREE_KNOMIAL, 2},
        {NUMACOLL_TREE_CHAIN, 2},
    };
    for (int p = 2; p <= 8; p++)
        for (size_t i = 0; i < sizeof trees / sizeof *trees; i++) {
            inl_case_t c = {trees[i].tree, trees[i].k,
                            p % 2 ? NULL : big_text, edges,
                            (int)(sizeof edges / sizeof *edges), 0, 8192};
            int rc = nct_run(p, inline_body, &c);
            if (rc)
                fprintf(stderr, "p=%d tree=%d k=%u\n", p, trees[i].tree,
                        trees[i].k);
            CU_ASSERT_EQUAL(rc, 0);
        }
}

/* A limit that is not a line multiple, from a tuning text: the slots are
 * sized from it (1000 bytes: 18 lines). */
static const char limit_text[] =
    "bcast p=1-* size=0-1000 alg=inline tree=kary k=2\n"
    "bcast p=1-* size=1001-* alg=pipelined f=8K s=64 q=2 tree=kary k=2\n";

static void test_limit_from_table(void)
{
    static const size_t sizes[] = {0, 55, 56, 57, 999, 1000, 1001, 1008,
                                   1009, 5000};
    for (int p = 2; p <= 5; p += 3) {
        inl_case_t c = {-1, 0, limit_text, sizes,
                        (int)(sizeof sizes / sizeof *sizes), 0, 5000};
        CU_ASSERT_EQUAL(nct_run(p, inline_body, &c), 0);
        c.calls = 400;
        CU_ASSERT_EQUAL(nct_run(p, inline_body, &c), 0);
    }
}

/* Inline and pipelined (two bank geometries) interleaved, roots changing
 * every call, no barrier between calls. */
static void test_interleaved(void)
{
    static const size_t sizes[] = {8, 5000, 0, 4095, 70000, 56, 200000, 57,
                                   4096, 1, 300000, 3000};
    for (int p = 2; p <= 8; p += 3) {
        inl_case_t c = {-1, 0, p == 5 ? NULL : big_text, sizes,
                        (int)(sizeof sizes / sizeof *sizes), 240, 300000};
        int rc = nct_run(p, inline_body, &c);
        if (rc)
            fprintf(stderr, "p=%d\n", p);
        CU_ASSERT_EQUAL(rc, 0);
    }
}

/* Many back-to-back calls: slots reused thousands of times, the writer's
 * acks checks taken late and early. */
static void test_many(void)
{
    static const size_t sizes[] = {8, 4095, 1, 56, 57, 2000, 0, 113, 3333,
                                   64, 777};
    inl_case_t c = {-1, 0, big_text, sizes,
                    (int)(sizeof sizes / sizeof *sizes), 10000, 4095};
    CU_ASSERT_EQUAL(nct_run(2, inline_body, &c), 0);
    c.calls = 1000;
    CU_ASSERT_EQUAL(nct_run(8, inline_body, &c), 0);
    c.tree = NUMACOLL_TREE_CHAIN;
    c.radix = 2;
    CU_ASSERT_EQUAL(nct_run(8, inline_body, &c), 0);
}

int nct_register_inline(void)
{
    static const nct_test_t tests[] = {
        {"every size edge, root, p = 2..8 and tree", test_every_p_tree},
        {"limit from a tuning text, sizes around it", test_limit_from_table},
        {"inline and pipelined interleaved, roots changing",
         test_interleaved},
        {"10000 back-to-back calls at p = 2, 1000 at p = 8", test_many},
        {NULL, NULL},
    };
    return nct_add_suite("inline", tests);
}
