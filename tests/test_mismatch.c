/*
 * Mismatched calls (coll/call.c), suite "mismatch": ranks that call
 * different sizes, roots, counts, ops or collectives get an error naming
 * both calls instead of wrong data or a hang (timeout_ms stays 0: the
 * runner's 60 s watchdog fails a hang), nothing outside the buffers is
 * written, and the correct calls that follow give correct results.
 *  bcast    a root that sends more or less than the readers expect, inline,
 *           pipelined and multi-bank sizes, 0 bytes, p = 2..4, two roots;
 *           readers fail (TRUNCATE when the root's is larger), the root
 *           has finished its part; then Bcasts, Allreduce, Barrier check.
 *  allreduce counts 1000 against 2000 (and more pairs), SUM against MAX:
 *           every rank fails, guard bytes after the buffers stay intact.
 *  kinds    Bcast against Barrier, Allreduce against Bcast, Reduce with
 *           different roots: every rank that waits fails, none hangs.
 *  runahead no meeting after the bad call, the root goes on: each later
 *           call gives the right data or MISMATCH, and soon only data.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/team.h"
#include "nct.h"
#include "numacoll.h"

#define GUARD 64

static numacoll_team_t *make_team(const numacoll_bootstrap_t *b)
{
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    cfg.timeout_ms = 0;         /* a mismatch must not need one */
    numacoll_team_t *t = NULL;
    if (numacoll_team_create(b, &cfg, &t) != NUMACOLL_OK)
        return NULL;
    /* grown: these calls meet in the algorithms (a first large call's
     * staging vote in mismatched calls: the grow suite) */
    if (nc__grow_now(t) != NUMACOLL_OK) {
        numacoll_team_destroy(t);
        return NULL;
    }
    return t;
}

/* Out of band, as an application's point-to-point barrier would: every
 * rank has left the mismatched call before anyone starts the next. */
static int oob_sync(const numacoll_bootstrap_t *b)
{
    int mine = 0, all[64];
    return b->size <= 64 && b->allgather(&mine, all, sizeof mine, b->ctx) == 0;
}

static unsigned char pattern(size_t i, int round)
{
    return (unsigned char)(i * 131 + (size_t)round * 17 + 5);
}

/* The call after a mismatched one, whose status on each rank was rc: if
 * some rank finished it (a Bcast root, a Reduce leaf, a reader that got
 * its data), this Barrier must fail on every rank, the finisher's message
 * naming its finished call or an earlier call that differed, so that
 * every rank has had an error; where every rank failed it, or where the
 * only fault was a refusal (bad arguments, the same signature), the
 * Barrier must succeed everywhere. Every
 * rank checks every rank's outcome (an out-of-band allgather after the
 * Barrier). 0 or a failure code. */
static int told_check(const numacoll_bootstrap_t *b, numacoll_team_t *t,
                      int rc, unsigned long long bad_call)
{
    int mine[2] = {rc, numacoll_barrier(t)}, all[64][2];
    /* told at this call, or (no meeting between the calls) found failed
     * by the others while this rank waited in it */
    char told[64], found[64];
    const char *e = numacoll_team_last_error(t);
    snprintf(told, sizeof told, "call %llu, which rank %d finished",
             bad_call, b->rank);
    snprintf(found, sizeof found, "different in call %llu,", bad_call);
    char next[64];
    snprintf(next, sizeof next, "different in call %llu,", bad_call + 1);
    /* or found at this call: the signatures chain the calls before */
    if (rc == NUMACOLL_OK && mine[1] == NUMACOLL_ERR_MISMATCH &&
        !strstr(e, told) && !strstr(e, found) && !strstr(e, next) &&
        !strstr(e, "an earlier call differed")) {
        fprintf(stderr, "rank %d: told without naming its call: %s\n",
                b->rank, e);
        return 80;
    }
    if (b->size > 64 || b->allgather(mine, all, sizeof mine, b->ctx) != 0)
        return 81;
    int failed = 0, finished = 0;
    for (int r = 0; r < b->size; r++) {
        failed |= all[r][0] == NUMACOLL_ERR_MISMATCH ||
                  all[r][0] == NUMACOLL_ERR_TRUNCATE;
        finished |= all[r][0] == NUMACOLL_OK;
    }
    /* A refusal alone (bad arguments whose signature agreed) is no
     * mismatch; calls that differed and that some rank finished are,
     * whether a rank found it (told) or none could (the next call's
     * signature covers the call before). */
    int refused = 0;
    for (int r = 0; r < b->size; r++)
        refused |= all[r][0] == NUMACOLL_ERR_ARG;
    int expect = finished && (failed || !refused) ? NUMACOLL_ERR_MISMATCH
                                                  : NUMACOLL_OK;
    for (int r = 0; r < b->size; r++)
        if (all[r][1] != expect) {
            fprintf(stderr, "rank %d: after the bad call rank %d's Barrier "
                    "got %s, want %s\n", b->rank, r,
                    numacoll_strerror(all[r][1]), numacoll_strerror(expect));
            return 82;
        }
    return 0;
}

/* Correct calls after a mismatch: Bcasts of several sizes from every root,
 * an Allreduce and a Barrier, every result checked. 0 or a failure code. */
static int correct_calls(const numacoll_bootstrap_t *b, numacoll_team_t *t,
                         int round)
{
    static const size_t sizes[] = {0, 8, 56, 1000, 70000, 300000};
    unsigned char *buf = malloc(300000);
    if (!buf)
        return 90;
    int bad = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes && !bad; k++)
        for (int root = 0; root < b->size && !bad; root++) {
            size_t n = sizes[k];
            for (size_t i = 0; i < n; i++)
                buf[i] = b->rank == root ? pattern(i, round + root) : 0;
            int rc = numacoll_bcast(t, buf, n, root);
            if (rc != NUMACOLL_OK) {
                fprintf(stderr, "rank %d: correct bcast of %zu from %d: %s "
                        "(%s)\n", b->rank, n, root, numacoll_strerror(rc),
                        numacoll_team_last_error(t));
                bad = 91;
            }
            for (size_t i = 0; i < n && !bad; i++)
                if (buf[i] != pattern(i, round + root))
                    bad = 92;
        }
    double in[300], out[300];
    for (int i = 0; i < 300; i++)
        in[i] = b->rank + i;
    if (!bad && numacoll_allreduce(t, in, out, 300, NUMACOLL_DTYPE_DOUBLE,
                                   NUMACOLL_OP_SUM) != NUMACOLL_OK)
        bad = 93;
    for (int i = 0; i < 300 && !bad; i++)
        if (out[i] != (double)b->size * (b->size - 1) / 2 + (double)b->size * i)
            bad = 94;
    if (!bad && numacoll_barrier(t) != NUMACOLL_OK)
        bad = 95;
    free(buf);
    return bad;
}

/* ---- Bcast sizes --------------------------------------------------------- */

typedef struct bc_case {
    size_t root_n, reader_n;
    int root;
} bc_case_t;

static int bcast_body(const numacoll_bootstrap_t *b, void *arg)
{
    const bc_case_t *c = arg;
    numacoll_team_t *t = make_team(b);
    if (!t)
        return 10;
    int root = c->root % b->size, is_root = b->rank == root;
    size_t n = is_root ? c->root_n : c->reader_n;
    unsigned char *buf = malloc(n + GUARD);
    if (!buf)
        return 11;
    memset(buf, 0xee, n + GUARD);
    int rc = numacoll_bcast(t, buf, n, root);
    int bad = 0;
    if (is_root) {
        /* the root has finished its part before any reader compares */
        if (rc != NUMACOLL_OK)
            bad = 12;
    } else {
        int want = c->root_n > c->reader_n ? NUMACOLL_ERR_TRUNCATE
                                           : NUMACOLL_ERR_MISMATCH;
        const char *e = numacoll_team_last_error(t);
        char root_says[64], mine_says[64];
        snprintf(root_says, sizeof root_says, "bcast of %zu bytes",
                 c->root_n);
        snprintf(mine_says, sizeof mine_says, "bcast of %zu bytes",
                 c->reader_n);
        if (rc != want) {
            fprintf(stderr, "rank %d: got %d want %d (%s)\n", b->rank, rc,
                    want, e);
            bad = 13;
        } else if (!strstr(e, root_says) || !strstr(e, mine_says)) {
            fprintf(stderr, "rank %d: message does not name both calls: "
                    "%s\n", b->rank, e);
            bad = 14;
        }
    }
    for (size_t i = n; i < n + GUARD && !bad; i++)
        if (buf[i] != 0xee)
            bad = 15;
    free(buf);
    if (!bad)
        bad = told_check(b, t, rc, 1);
    if (!bad)
        bad = correct_calls(b, t, 1);
    numacoll_team_destroy(t);
    return bad;
}

/* A Bcast reader whose parent is in another collective: p = 4, ranks 0
 * and 2 in a pipelined Bcast from 0, rank 1 (the inline tree's parent of
 * rank 3) in a Reduce to 0 (a leaf there: it returns at once), rank 3 in
 * an inline Bcast from 0. Rank 3 must not
 * drain the root's call (its parent never forwards it): it hung there.
 * Every rank gets an error or its part done, then all are told. */
static int other_parent_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = make_team(b);
    if (!t)
        return 10;
    unsigned char buf[2000];
    uint32_t one = 1, sum = 0;
    memset(buf, 0x5a, sizeof buf);
    int rc = b->rank == 1
                 ? numacoll_reduce(t, &one, &sum, 1, NUMACOLL_DTYPE_UINT32,
                                   NUMACOLL_OP_SUM, 0)
                 : numacoll_bcast(t, buf, b->rank == 3 ? 20 : sizeof buf, 0);
    if (rc != NUMACOLL_OK && rc != NUMACOLL_ERR_MISMATCH &&
        rc != NUMACOLL_ERR_TRUNCATE) {
        fprintf(stderr, "rank %d: %s (%s)\n", b->rank, numacoll_strerror(rc),
                numacoll_team_last_error(t));
        return 11;
    }
    int bad = told_check(b, t, rc, 1);
    if (!bad)
        bad = correct_calls(b, t, 2);
    numacoll_team_destroy(t);
    return bad;
}

static void test_other_parent(void)
{
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL(nct_run(4, other_parent_body, NULL), 0);
}

static void test_bcast_sizes(void)
{
    static const size_t pairs[][2] = {
        {20, 10},   {10, 20},     {0, 20},       {20, 0},
        {2000, 1000}, {1000, 2000}, {20, 2000},  {2000, 20},
        {300000, 200000}, {200000, 300000}, {70000, 300000},
        /* inline, across line counts and up to the limit (167) */
        {100, 60},  {60, 100},    {167, 57},     {57, 167},
        {0, 150},   {150, 0},     {56, 57},      {57, 56},
        /* one inline, the other pipelined */
        {3000, 100}, {100, 3000}, {168, 167},    {167, 168},
    };
    for (int p = 2; p <= 4; p++)
        for (size_t k = 0; k < sizeof pairs / sizeof *pairs; k++)
            for (int root = 0; root < 2; root++) {
                bc_case_t c = {pairs[k][0], pairs[k][1], root ? p - 1 : 0};
                int rc = nct_run(p, bcast_body, &c);
                if (rc != 0)
                    fprintf(stderr, "p=%d root=%d root_n=%zu reader_n=%zu\n",
                            p, c.root, c.root_n, c.reader_n);
                CU_ASSERT_EQUAL(rc, 0);
            }
}

/* ---- Allreduce counts and ops ------------------------------------------ */

typedef struct ar_case {
    size_t n0, n1;           /* rank 0's count, everyone else's */
    int op0;                 /* rank 0's op; the others SUM     */
} ar_case_t;

static int allreduce_body(const numacoll_bootstrap_t *b, void *arg)
{
    const ar_case_t *c = arg;
    numacoll_team_t *t = make_team(b);
    if (!t)
        return 20;
    size_t n = b->rank == 0 ? c->n0 : c->n1;
    int op = b->rank == 0 ? c->op0 : NUMACOLL_OP_SUM;
    double *in = malloc((n + GUARD) * sizeof *in),
           *out = malloc((n + GUARD) * sizeof *out);
    if (!in || !out)
        return 21;
    for (size_t i = 0; i < n + GUARD; i++)
        in[i] = out[i] = -7.0;
    int rc = numacoll_allreduce(t, in, out, n, NUMACOLL_DTYPE_DOUBLE,
                                (numacoll_op_t)op);
    int bad = 0;
    const char *e = numacoll_team_last_error(t);
    if (rc != NUMACOLL_ERR_MISMATCH) {
        fprintf(stderr, "rank %d: allreduce %zu: got %d (%s)\n", b->rank, n,
                rc, e);
        bad = 22;
    } else if (!strstr(e, "mismatched calls")) {
        fprintf(stderr, "rank %d: %s\n", b->rank, e);
        bad = 23;
    }
    for (size_t i = n; i < n + GUARD && !bad; i++)
        if (out[i] != -7.0 || in[i] != -7.0)
            bad = 24;
    free(in);
    free(out);
    if (!bad && !oob_sync(b))
        bad = 25;
    if (!bad)
        bad = correct_calls(b, t, 2);
    numacoll_team_destroy(t);
    return bad;
}

static void test_allreduce(void)
{
    static const ar_case_t cases[] = {
        {1000, 2000, NUMACOLL_OP_SUM}, {2000, 1000, NUMACOLL_OP_SUM},
        {3, 5, NUMACOLL_OP_SUM},       {0, 4, NUMACOLL_OP_SUM},
        {200000, 100000, NUMACOLL_OP_SUM}, {1000, 1000, NUMACOLL_OP_MAX},
        {5, 5, NUMACOLL_OP_MAX},
    };
    for (int p = 2; p <= 4; p++)
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
            int rc = nct_run(p, allreduce_body, (void *)&cases[k]);
            if (rc != 0)
                fprintf(stderr, "p=%d n0=%zu n1=%zu\n", p, cases[k].n0,
                        cases[k].n1);
            CU_ASSERT_EQUAL(rc, 0);
        }
}

/* ---- different collectives ---------------------------------------------- */

enum { K_BCAST_BARRIER, K_BARRIER_BCAST, K_ALLREDUCE_BCAST, K_REDUCE_ROOTS,
       K_REDUCE_COUNTS, K_BCAST_ALLREDUCE, K_REFUSED, K_NKINDS };

/* Rank 0 makes one call, the others another. Ranks that wait must fail
 * with MISMATCH; a rank whose part needs nobody (a Bcast root, a Reduce
 * leaf) may succeed, and then hears of it at the next call (told_check).
 * Afterwards correct calls work on every rank. */
static int kinds_body(const numacoll_bootstrap_t *b, void *arg)
{
    int kind = *(int *)arg, me0 = b->rank == 0, rc = NUMACOLL_OK;
    numacoll_team_t *t = make_team(b);
    if (!t)
        return 30;
    double v[64] = {0}, r[64];
    switch (kind) {
    case K_BCAST_BARRIER:
        rc = me0 ? numacoll_bcast(t, v, 8, 0) : numacoll_barrier(t);
        if (!me0 && rc != NUMACOLL_ERR_MISMATCH)
            return 31;
        break;
    case K_BARRIER_BCAST:
        rc = me0 ? numacoll_barrier(t) : numacoll_bcast(t, v, 8, 1);
        if (me0 && rc != NUMACOLL_ERR_MISMATCH)
            return 32;
        break;
    case K_ALLREDUCE_BCAST:
        rc = me0 ? numacoll_allreduce(t, v, r, 64, NUMACOLL_DTYPE_DOUBLE,
                                      NUMACOLL_OP_SUM)
                 : numacoll_bcast(t, v, 64 * sizeof *v, 0);
        if (me0 && rc != NUMACOLL_ERR_MISMATCH)
            return 33;
        break;
    case K_REDUCE_ROOTS:
        rc = numacoll_reduce(t, v, r, 64, NUMACOLL_DTYPE_DOUBLE, NUMACOLL_OP_SUM,
                             me0 ? 0 : 1);
        if (b->size > 2 && rc == NUMACOLL_OK && b->rank <= 1)
            return 34;
        break;
    case K_REDUCE_COUNTS:
        rc = numacoll_reduce(t, v, r, me0 ? 64 : 32, NUMACOLL_DTYPE_DOUBLE,
                             NUMACOLL_OP_SUM, 0);
        if (me0 && rc != NUMACOLL_ERR_MISMATCH)
            return 35;
        break;
    case K_BCAST_ALLREDUCE:
        /* 512 bytes: the others' Allreduce is a Reduce, then a Bcast whose
         * words come from rank 0's Bcast; they must not drain it (their
         * reduce counters have moved) but resynchronise */
        rc = me0 ? numacoll_bcast(t, v, sizeof v, 0)
                 : numacoll_allreduce(t, v, r, 64, NUMACOLL_DTYPE_DOUBLE,
                                      NUMACOLL_OP_SUM);
        if (!me0 && rc != NUMACOLL_ERR_MISMATCH)
            return 38;
        break;
    case K_REFUSED:
        /* rank 0 passes a NULL buffer: it refuses, the others must not
         * wait for it (those that got their data may succeed), and the
         * call numbers stay in step */
        rc = numacoll_bcast(t, me0 ? NULL : v, 64, b->size - 1);
        if (me0 ? rc != NUMACOLL_ERR_ARG
                : rc != NUMACOLL_OK && rc != NUMACOLL_ERR_MISMATCH)
            return 39;
        break;
    }
    if (rc != NUMACOLL_OK && rc != NUMACOLL_ERR_ARG &&
        !strstr(numacoll_team_last_error(t), "mismatched calls"))
        return 36;
    int bad = oob_sync(b) ? told_check(b, t, rc, 1) : 37;
    if (!bad)
        bad = correct_calls(b, t, 3);
    numacoll_team_destroy(t);
    return bad;
}

static void test_kinds(void)
{
    nct_run_kinds(2, 4, K_NKINDS, kinds_body, "kinds");
}

/* No meeting after the bad call: rank 0, a Bcast root whose part needs
 * nobody, runs ahead into the next calls while the others still find the
 * mismatch. Every later call must give the right data or fail with
 * MISMATCH (a call lost once), never other data; rank 0 must fail one of
 * them (it hears of the mismatch); from the sixth on all succeed: the
 * root's inline calls (every size here, 100 to 111 bytes) run ahead of the readers' acks
 * by at most NC_INL_SLOTS = 4 calls (coll/bcast/bcast_inline.c), and the
 * call after those tells every rank. */
static int runahead_body(const numacoll_bootstrap_t *b, void *arg)
{
    int bad_kind = *(int *)arg;
    numacoll_team_t *t = make_team(b);
    if (!t)
        return 40;
    unsigned char buf[200];
    int rc;
    if (b->rank == 0)
        rc = numacoll_bcast(t, buf, 8, 0);
    else
        rc = bad_kind ? numacoll_bcast(t, buf, 16, 0) : numacoll_barrier(t);
    if (b->rank != 0 && rc == NUMACOLL_OK)
        return 41;
    int bad = 0, errors = 0;
    for (int i = 0; i < 12 && !bad; i++) {
        size_t n = 100 + (size_t)i;
        for (size_t j = 0; j < n; j++)
            buf[j] = b->rank == 0 ? pattern(j, i) : 0;
        rc = numacoll_bcast(t, buf, n, 0);
        if (rc == NUMACOLL_OK) {
            for (size_t j = 0; j < n; j++)
                if (buf[j] != pattern(j, i))
                    bad = 42;
        } else if (rc == NUMACOLL_ERR_MISMATCH && i < 5) {
            errors++;
        } else {
            fprintf(stderr, "rank %d: call %d after the mismatch: %s (%s)\n",
                    b->rank, i, numacoll_strerror(rc),
                    numacoll_team_last_error(t));
            bad = 43;
        }
    }
    if (!bad && b->rank == 0 && errors == 0)
        bad = 44;
    if (!bad)
        bad = correct_calls(b, t, 5);
    numacoll_team_destroy(t);
    return bad;
}

/* A rank ahead by whole Barriers (it made two one-way Bcasts the others
 * did not) must not pass for the others' Barriers: some rank fails, and
 * after a meeting the calls work again. */
static int barrier_ahead_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = make_team(b);
    if (!t)
        return 50;
    unsigned char v[8] = {0};
    int fails = 0, last = b->size - 1;
    for (int i = 0; i < 3; i++) {
        int rc = b->rank == last && i < 2 ? numacoll_bcast(t, v, 8, last)
                                          : numacoll_barrier(t);
        fails += rc != NUMACOLL_OK;
    }
    int all[64], bad = 0;
    if (b->size > 64 || b->allgather(&fails, all, sizeof fails, b->ctx) != 0)
        return 51;
    int total = 0;
    for (int r = 0; r < b->size; r++)
        total += all[r];
    if (total == 0)
        bad = 52;           /* every call "succeeded": the mismatch hid */
    if (!bad)
        bad = correct_calls(b, t, 6);
    numacoll_team_destroy(t);
    return bad;
}

static void test_barrier_ahead(void)
{
    for (int p = 2; p <= 4; p++)
        CU_ASSERT_EQUAL(nct_run(p, barrier_ahead_body, NULL), 0);
}

/* A rank that finished its part of a bad call and destroyed the team: the
 * others get an error, at their resynchronisation, not a hang. */
static int gone_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = make_team(b);
    if (!t)
        return 60;
    unsigned char v[8] = {0};
    if (b->rank == 0) {
        if (numacoll_bcast(t, v, 8, 0) != NUMACOLL_OK)
            return 61;
        numacoll_team_destroy(t);
        return 0;
    }
    int rc = numacoll_barrier(t);
    if (rc != NUMACOLL_ERR_MISMATCH && rc != NUMACOLL_ERR_ABORTED)
        return 62;
    rc = numacoll_barrier(t);
    if (rc != NUMACOLL_ERR_ABORTED)
        return 63;
    numacoll_team_destroy(t);
    return 0;
}

static void test_gone(void)
{
    for (int p = 2; p <= 4; p++)
        CU_ASSERT_EQUAL(nct_run(p, gone_body, NULL), 0);
}

/* Ranks 0 and 1 each take themselves for the root of a small Bcast (the
 * others follow rank 0): one root waits for a bank the other has claimed,
 * while that one goes on to its next call; it must find that out, with no
 * timeout (it used to wait forever). Then correct Bcasts from root 0:
 * each gives the right data or MISMATCH, never other data; ranks 0 and 1
 * each get an error within the first 6; from the 7th on all succeed. */
static int two_roots_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = make_team(b);
    if (!t)
        return 50;
    unsigned char buf[64];
    memset(buf, 0x11, sizeof buf);
    int rc = numacoll_bcast(t, buf, sizeof buf, b->rank == 1 ? 1 : 0);
    if (rc != NUMACOLL_OK && rc != NUMACOLL_ERR_MISMATCH &&
        rc != NUMACOLL_ERR_TRUNCATE)
        return 51;
    int bad = 0, errors = rc != NUMACOLL_OK;
    for (int i = 0; i < 12 && !bad; i++) {
        for (size_t j = 0; j < sizeof buf; j++)
            buf[j] = b->rank == 0 ? pattern(j, i) : 0;
        rc = numacoll_bcast(t, buf, sizeof buf, 0);
        if (rc == NUMACOLL_OK) {
            for (size_t j = 0; j < sizeof buf; j++)
                if (buf[j] != pattern(j, i))
                    bad = 52;
        } else if (rc == NUMACOLL_ERR_MISMATCH && i < 6) {
            errors++;
        } else {
            fprintf(stderr, "rank %d: call %d after two roots: %s (%s)\n",
                    b->rank, i, numacoll_strerror(rc),
                    numacoll_team_last_error(t));
            bad = 53;
        }
    }
    if (!bad && b->rank <= 1 && errors == 0)
        bad = 54;
    if (!bad)
        bad = correct_calls(b, t, 7);
    numacoll_team_destroy(t);
    return bad;
}

static void test_two_roots(void)
{
    for (int p = 2; p <= 4; p++) {
        int rc = nct_run(p, two_roots_body, NULL);
        if (rc != 0)
            fprintf(stderr, "p=%d\n", p);
        CU_ASSERT_EQUAL(rc, 0);
    }
}

static void test_runahead(void)
{
    for (int p = 2; p <= 4; p++)
        for (int k = 0; k < 2; k++) {
            int rc = nct_run(p, runahead_body, &k);
            if (rc != 0)
                fprintf(stderr, "p=%d kind=%d\n", p, k);
            CU_ASSERT_EQUAL(rc, 0);
        }
}

int nct_register_mismatch(void)
{
    static const nct_test_t tests[] = {
        {"bcast: root and readers disagree on the size", test_bcast_sizes},
        {"allreduce: counts or ops differ", test_allreduce},
        {"different collectives, roots, reduce counts", test_kinds},
        {"a root that runs ahead: right data or an error", test_runahead},
        {"two ranks each the root of a Bcast: an error, no hang, no wrong "
         "data", test_two_roots},
        {"a rank Barriers ahead: not taken for the others'", test_barrier_ahead},
        {"an inline reader whose parent is in a Reduce: no hang",
         test_other_parent},
        {"a rank that destroyed the team: an error, no hang", test_gone},
        {NULL, NULL},
    };
    return nct_add_suite("mismatch", tests);
}
