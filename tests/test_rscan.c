/*
 * Reduce_scatter(_block), Scan and Exscan (coll/reduce/reduce_scatter.c,
 * coll/reduce/scan.c), suite "rscan": every result compared bit for bit
 * with a rank-order fold computed here, guard bytes around every buffer.
 *  exact      p = 1..8, double SUM with values of wide-ranging exponents
 *             (the fold order shows in the bits), blocks of 0 to 3000
 *             elements and (p = 2, 3) 1.1 MB per block / rank; in place;
 *  uneven     Reduce_scatter's counts with zeros;
 *  user op    2x2 matrix products mod 2^32 (non-commutative): the rank
 *             order itself is checked;
 *  geometry   1 KiB slots, 2 deep: many rounds, every slot reused, mixed
 *             with Allreduce and Alltoallv on the same slots;
 *  requests   nonblocking ones in flight, persistent ones started 50 times;
 *  mismatch   different recvcounts with the same total, Scan against
 *             Exscan: an error, not a hang; correct calls work after;
 *  refused    bad arguments, with a sentence in last_error.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nct.h"
#include "numacoll.h"

#define GUARD NCT_GUARD
#define GBYTE NCT_GBYTE

enum { RSB, RSV, SCAN, EXSCAN };
static const char *const kind_name[] = {"reduce_scatter_block",
                                        "reduce_scatter", "scan", "exscan"};
enum { DSUM, MAT };

typedef nct_mat_t mat_t;
#define mat_mul nct_mat_mul

static const int magic = 0x5c5c;

/* inout = in * inout: in is the lower ranks' (MPI's rule). */
static void mat_fn(void *ctx, const void *in, void *inout, size_t n)
{
    if (ctx != &magic)
        abort();
    const mat_t *x = in;
    mat_t *y = inout;
    for (size_t i = 0; i < n; i++)
        y[i] = mat_mul(x[i], y[i]);
}

static uint64_t hval(unsigned call, int rank, size_t i)
{
    uint64_t x = (call + 7) * 0x9e3779b97f4a7c15ULL +
                 (uint64_t)(rank + 1) * 0xd6e8feb86659fd93ULL +
                 i * 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 31;
    x *= 0x94d049bb133111ebULL;
    return x ^ x >> 29;
}

static size_t esize(int opk)
{
    return opk == DSUM ? sizeof(double) : sizeof(mat_t);
}

/* Element i of rank r's contribution to call c, into dst. */
static void gen(int opk, unsigned call, int r, size_t i, void *dst)
{
    uint64_t h = hval(call, r, i);
    if (opk == DSUM) {
        /* exponents 2^-20..2^20, either sign: sums depend on the order */
        double v = ldexp((double)(h >> 11) / 9007199254740992.0,
                         (int)(h % 41) - 20);
        if (h & 1024)
            v = -v;
        memcpy(dst, &v, sizeof v);
    } else {
        mat_t m = {(uint32_t)h, (uint32_t)(h >> 32), (uint32_t)(h * 3),
                   (uint32_t)(h >> 17)};
        memcpy(dst, &m, sizeof m);
    }
}

/* acc = acc op rank r's element (the rank-order fold, left to right) */
static void fold_in(int opk, void *acc, unsigned call, int r, size_t i)
{
    if (opk == DSUM) {
        double a, b;
        memcpy(&a, acc, sizeof a);
        gen(opk, call, r, i, &b);
        a = a + b;
        memcpy(acc, &a, sizeof a);
    } else {
        mat_t a, b;
        memcpy(&a, acc, sizeof a);
        gen(opk, call, r, i, &b);
        a = mat_mul(a, b);
        memcpy(acc, &a, sizeof a);
    }
}

/* The reference: ranks lo..hi-1 folded in rank order, element i. */
static void ref_elem(int opk, unsigned call, int lo, int hi, size_t i,
                     void *out)
{
    gen(opk, call, lo, i, out);
    for (int r = lo + 1; r < hi; r++)
        fold_in(opk, out, call, r, i);
}

/* One call: what it is, its buffers, its request. */
typedef struct call {
    int kind, opk, in_place;
    size_t each, cnt[8], total, mine, offs;   /* offs: mine's first */
    unsigned id;
    unsigned char *send, *recv;
    numacoll_request_t *req;
} call_t;

/* Block counts: the block form's each, or uneven with zeros. */
static void counts_of(call_t *c, int p, int me)
{
    c->total = c->offs = 0;
    for (int j = 0; j < p; j++) {
        c->cnt[j] = c->kind == RSV && (j + (int)c->id) % 3 == 1
                        ? 0
                        : c->each + (c->kind == RSV ? (size_t)j * 7 % 13 : 0);
        if (j < me)
            c->offs += c->cnt[j];
        c->total += c->cnt[j];
    }
    c->mine = c->cnt[me];
    if (c->kind >= SCAN)
        c->total = c->mine = c->each, c->offs = 0;
}

/* Contribution elements of this rank, results it receives. */
static void fill_send(call_t *c, int me)
{
    const size_t e = esize(c->opk);
    unsigned char *to = (c->in_place ? c->recv : c->send) + GUARD;
    for (size_t i = 0; i < c->total; i++)
        gen(c->opk, c->id, me, i, to + i * e);
}

/* mode: 0 blocking, 1 nonblocking, 2 persistent (not started) */
static int start(numacoll_team_t *t, int me, int p, call_t *c, int mode)
{
    const size_t e = esize(c->opk);
    counts_of(c, p, me);
    c->send = nct_gbuf(c->total * e);
    /* in place the contribution is in recv */
    c->recv = nct_gbuf((c->in_place ? c->total : c->mine) * e);
    fill_send(c, me);
    const void *s = c->in_place ? NUMACOLL_IN_PLACE : c->send + GUARD;
    void *r = c->recv + GUARD;
    numacoll_request_t **q = mode ? &c->req : NULL;
    numacoll_user_op_fn fn = mat_fn;
    void *ctx = (void *)&magic;
    const numacoll_dtype_t D = NUMACOLL_DTYPE_DOUBLE;
    const numacoll_op_t O = NUMACOLL_OP_SUM;
    const int u = c->opk == MAT;
    /* three forms of one call: blocking, nonblocking, persistent */
#define PICK(b, i, in) (mode == 0 ? (b) : mode == 1 ? (i) : (in))
#define FORMS(name, ...)                                                      \
    PICK(numacoll_##name(__VA_ARGS__), numacoll_i##name(__VA_ARGS__, q),      \
         numacoll_##name##_init(__VA_ARGS__, q))
    switch (c->kind) {
    case RSB:
        return u ? FORMS(reduce_scatter_block_user, t, s, r, c->each, e, fn,
                         ctx, 0)
                 : FORMS(reduce_scatter_block, t, s, r, c->each, D, O);
    case RSV:
        return u ? FORMS(reduce_scatter_user, t, s, r, c->cnt, e, fn, ctx, 0)
                 : FORMS(reduce_scatter, t, s, r, c->cnt, D, O);
    case SCAN:
        return u ? FORMS(scan_user, t, s, r, c->each, e, fn, ctx, 0)
                 : FORMS(scan, t, s, r, c->each, D, O);
    default:
        return u ? FORMS(exscan_user, t, s, r, c->each, e, fn, ctx, 0)
                 : FORMS(exscan, t, s, r, c->each, D, O);
    }
#undef FORMS
#undef PICK
}

/* Every result element against the reference, the guards; Exscan's rank
 * 0 must find its buffer as it was. 0 or a failure code. */
static int check(int me, int p, call_t *c)
{
    const size_t e = esize(c->opk);
    unsigned char want[32];
    const unsigned char *got = c->recv + GUARD;
    int bad = 0;
    size_t i = 0;
    if (c->kind == EXSCAN && me == 0) {
        for (i = 0; i < c->mine && !bad; i++) {
            if (c->in_place)
                gen(c->opk, c->id, me, i, want);
            else
                memset(want, GBYTE, e);
            bad = memcmp(got + i * e, want, e) != 0;
        }
    } else {
        int lo = 0, hi = c->kind == SCAN ? me + 1 : c->kind == EXSCAN ? me : p;
        for (i = 0; i < c->mine && !bad; i++) {
            ref_elem(c->opk, c->id, lo, hi, c->offs + i, want);
            bad = memcmp(got + i * e, want, e) != 0;
        }
    }
    if (bad)
        fprintf(stderr, "rank %d: %s (%s, in place %d) p %d each %zu call %u: "
                "element %zu wrong\n", me, kind_name[c->kind],
                c->opk == DSUM ? "double sum" : "matrix user op", c->in_place,
                p, c->each, c->id, i - 1);
    const size_t rn = (c->in_place ? c->total : c->mine) * e;
    if (!bad && (!nct_guards_ok(c->recv, rn) ||
                 !nct_guards_ok(c->send, c->total * e))) {
        fprintf(stderr, "rank %d: %s call %u: guard bytes overwritten\n", me,
                kind_name[c->kind], c->id);
        bad = 1;
    }
    return bad ? 20 : 0;
}

static void release(call_t *c)
{
    free(c->send);
    free(c->recv);
    c->send = c->recv = NULL;
}

static int one(numacoll_team_t *t, int me, int p, int kind, int opk,
               size_t each, int in_place, unsigned id)
{
    call_t c = {.kind = kind, .opk = opk, .in_place = in_place,
                .each = each, .id = id};
    int rc = start(t, me, p, &c, 0), bad;
    bad = rc != NUMACOLL_OK ? nct_say(t, me, kind_name[kind], rc)
                            : check(me, p, &c);
    release(&c);
    return bad;
}

/* ---- exact ------------------------------------------------------------- */

typedef struct sweep {
    const size_t *sizes;
    int nsizes, opk;
    size_t rf;
    unsigned rs;
} sweep_t;

static int sweep_body(const numacoll_bootstrap_t *b, void *arg)
{
    const sweep_t *S = arg;
    numacoll_team_t *t = nct_team(b, S->rf, S->rs, 50000);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    unsigned id = 0;
    int bad = 0;
    for (int z = 0; z < S->nsizes && !bad; z++)
        for (int kind = RSB; kind <= EXSCAN && !bad; kind++)
            for (int ip = 0; ip < 2 && !bad; ip++)
                bad = one(t, me, p, kind, S->opk, S->sizes[z], ip, id++);
    numacoll_team_destroy(t);
    return bad;
}

static const size_t sizes[] = {0, 1, 5, 64, 100, 3000};

static void test_exact(void)
{
    sweep_t S = {sizes, 6, DSUM, 0, 0};
    for (int p = 1; p <= 8; p++) {
        int rc = nct_run(p, sweep_body, &S);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc)
            fprintf(stderr, "exact: p = %d failed\n", p);
    }
    /* 1.1 MB per block (Reduce_scatter) and per rank (Scan) */
    static const size_t big[] = {140000};
    sweep_t L = {big, 1, DSUM, 0, 0};
    for (int p = 2; p <= 3; p++)
        CU_ASSERT_EQUAL(nct_run(p, sweep_body, &L), 0);
}

static void test_user_op(void)
{
    static const size_t us[] = {0, 1, 9, 700, 9000};
    sweep_t S = {us, 5, MAT, 0, 0};
    for (int p = 1; p <= 8; p++)
        CU_ASSERT_EQUAL(nct_run(p, sweep_body, &S), 0);
}

/* ---- geometry: small slots, other collectives on them between --------- */

static int geometry_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 1024, 2, 50000);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    static const size_t gs[] = {0, 3, 17, 128, 129, 1000};
    unsigned id = 500;
    int bad = 0;
    for (int z = 0; z < 6 && !bad; z++)
        for (int kind = RSB; kind <= EXSCAN && !bad; kind++) {
            bad = one(t, me, p, kind, z % 2 ? MAT : DSUM, gs[z], kind & 1,
                      id++);
            if (!bad)
                bad = nct_allreduce_probe(t, me, p);
        }
    numacoll_team_destroy(t);
    return bad;
}

static void test_geometry(void)
{
    for (int p = 1; p <= 5; p++)
        CU_ASSERT_EQUAL(nct_run(p, geometry_body, NULL), 0);
}

/* ---- nonblocking and persistent ------------------------------------------ */

#define NFLIGHT 16

static int requests_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 4096, 3, 50000);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    static const size_t rs[] = {0, 2, 40, 700, 5000};
    call_t c[NFLIGHT];
    int bad = 0, rc;
    for (int i = 0; i < NFLIGHT && !bad; i++) {
        c[i] = (call_t){.kind = i % 4, .opk = i / 4 % 2, .in_place = i % 3 == 2,
                        .each = rs[i % 5], .id = 100u + (unsigned)i};
        if ((rc = start(t, me, p, &c[i], 1)) != NUMACOLL_OK)
            bad = nct_say(t, me, "nonblocking start", rc);
        /* a blocking one between, which completes those before */
        if (!bad && i == 9)
            bad = one(t, me, p, SCAN, MAT, 33, 0, 99);
    }
    for (int i = NFLIGHT - 1; i >= 0 && !bad; i--)
        if ((rc = numacoll_wait(&c[i].req)) != NUMACOLL_OK)
            bad = nct_say(t, me, "wait", rc);
    for (int i = 0; i < NFLIGHT && !bad; i++)
        bad = check(me, p, &c[i]);
    for (int i = 0; i < NFLIGHT; i++)
        release(&c[i]);
    /* persistent: one of each kind, started 50 times with new data */
    call_t q[4];
    int made = 0;
    for (int k = 0; k < 4 && !bad; k++, made++) {
        q[k] = (call_t){.kind = k, .opk = k % 2, .in_place = k == 1,
                        .each = 1500, .id = 0};
        if ((rc = start(t, me, p, &q[k], 2)) != NUMACOLL_OK) {
            bad = nct_say(t, me, "init", rc);
            release(&q[k]);
        }
    }
    for (unsigned it = 1; it <= 50 && !bad; it++) {
        for (int k = 0; k < 4; k++) {
            q[k].id = it * 4 + (unsigned)k;
            fill_send(&q[k], me);
            if (!bad && (rc = numacoll_start(q[k].req)) != NUMACOLL_OK)
                bad = nct_say(t, me, "start", rc);
        }
        for (int k = 3; k >= 0 && !bad; k--)
            if ((rc = numacoll_wait(&q[k].req)) != NUMACOLL_OK)
                bad = nct_say(t, me, "persistent wait", rc);
        for (int k = 0; k < 4 && !bad; k++)
            bad = check(me, p, &q[k]);
    }
    for (int k = 0; k < made && !bad; k++) {
        numacoll_request_free(&q[k].req);
        release(&q[k]);
    }
    numacoll_team_destroy(t);
    return bad;
}

static void test_requests(void)
{
    for (int p = 1; p <= 5; p++)
        CU_ASSERT_EQUAL(nct_run(p, requests_body, NULL), 0);
}

/* ---- mismatch ----------------------------------------------------------- */

static int mismatch_body(const numacoll_bootstrap_t *b, void *arg)
{
    const int how = *(const int *)arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 0);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    /* how 3, 4: cases 0, 1 at inline sizes */
    const size_t N = how >= 3 ? 5 : 3000;
    double *in = calloc((size_t)p * N + 8, sizeof *in);
    double *out = calloc((size_t)p * N + 8, sizeof *out);
    size_t cnt[8];
    for (int j = 0; j < p; j++)
        cnt[j] = N;
    int rc;
    if (how == 0 || how == 2 || how == 3) {
        /* rank 0 moves an element from block 1 to block 0: same total
         * (how 2: blocks of one element, in the slot's line) */
        for (int j = 0; j < p && how == 2; j++)
            cnt[j] = 1;
        if (me == 0)
            cnt[0]++, cnt[1]--;
        rc = numacoll_reduce_scatter(t, in, out, cnt, NUMACOLL_DTYPE_DOUBLE,
                                     NUMACOLL_OP_SUM);
    } else {
        rc = me == p - 1 ? numacoll_exscan(t, in, out, N, NUMACOLL_DTYPE_DOUBLE,
                                           NUMACOLL_OP_SUM)
                         : numacoll_scan(t, in, out, N, NUMACOLL_DTYPE_DOUBLE,
                                         NUMACOLL_OP_SUM);
    }
    int all[64], bad = 0, failed = 0;
    if (!nct_oob_all(b, rc, all))
        bad = 11;
    for (int j = 0; j < p; j++)
        failed += all[j] != NUMACOLL_OK;
    if (!bad && !failed) {
        fprintf(stderr, "rank %d: mismatched calls (case %d) passed on every "
                "rank\n", me, how);
        bad = 12;
    }
    if (!bad && rc != NUMACOLL_OK && rc != NUMACOLL_ERR_MISMATCH)
        bad = nct_say(t, me, "mismatched call", rc);
    (void)numacoll_barrier(t);
    if (!bad && !nct_oob_all(b, 0, all))
        bad = 13;
    for (int k = RSB; k <= EXSCAN && !bad; k++)
        bad = one(t, me, p, k, DSUM, 77, 0, 600u + (unsigned)k);
    free(in);
    free(out);
    numacoll_team_destroy(t);
    return bad;
}

static void test_mismatch(void)
{
    for (int how = 0; how < 3; how++)
        for (int p = 2; p <= 4; p++) {
            int rc = nct_run(p, mismatch_body, &how);
            CU_ASSERT_EQUAL(rc, 0);
            if (rc)
                fprintf(stderr, "mismatch case %d p %d failed\n", how, p);
        }
}

/* ---- inline (coll/reduce/rscan_inline.c) ------------------------------- */

#define RS_INLINE                                                             \
    "allreduce p=1-* size=0-8192 alg=inline\n"                                \
    "reduce_scatter p=1-* size=0-8192 alg=inline\n"                           \
    "scan p=1-* size=0-8192 alg=inline\n"                                     \
    "exscan p=1-* size=0-8192 alg=inline\n"

/* Back to back: the four kinds (both ops, in place every third call) and
 * an inline Allreduce, 150 rounds on the same lines (the reuse rule:
 * Scan's readers are the ranks above, Reduce_scatter's all). */
static int inl_mixed_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 50000);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    int bad = 0;
    for (unsigned i = 0; i < 150 && !bad; i++) {
        for (int k = RSB; k <= EXSCAN && !bad; k++)
            bad = one(t, me, p, k, (int)(i + (unsigned)k) % 2, 1 + i % 9,
                      (i + (unsigned)k) % 3 == 0, 5000 + i * 4 + (unsigned)k);
        if (!bad)
            bad = nct_allreduce_probe(t, me, p);
    }
    numacoll_team_destroy(t);
    return bad;
}

/* Sizes around the lines' edges (7 doubles or 3 matrices a line) up to
 * past the rules' 8192 bytes (staged). */
static const size_t inl_sizes[] = {0, 1, 2, 3, 6, 7, 8, 15, 64, 300, 1100};

static void test_inline(void)
{
    nct_team_rules = RS_INLINE;
    for (int opk = DSUM; opk <= MAT; opk++) {
        sweep_t S = {inl_sizes, 11, opk, 0, 0};
        for (int p = 1; p <= 8; p++) {
            int rc = nct_run(p, sweep_body, &S);
            CU_ASSERT_EQUAL(rc, 0);
            if (rc)
                fprintf(stderr, "inline: op %d p = %d failed\n", opk, p);
        }
    }
    for (int p = 1; p <= 8; p++) {
        int rc = nct_run(p, inl_mixed_body, NULL);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc)
            fprintf(stderr, "inline mixed: p = %d failed\n", p);
    }
    for (int p = 1; p <= 5; p++)
        CU_ASSERT_EQUAL(nct_run(p, requests_body, NULL), 0);
    /* recvcounts of the same total, scan against exscan, in the lines */
    for (int how = 3; how < 5; how++)
        for (int p = 2; p <= 4; p++) {
            int rc = nct_run(p, mismatch_body, &how);
            CU_ASSERT_EQUAL(rc, 0);
            if (rc)
                fprintf(stderr, "inline mismatch case %d p %d failed\n", how,
                        p);
        }
    nct_team_rules = NULL;
}

/* ---- refused arguments ------------------------------------------------- */

static int refused_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    /* 64-byte slots: 4 matrices, fewer than the 5 ranks need */
    numacoll_team_t *t = nct_team(b, 64, 2, 0);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    double in[64] = {0}, out[64];
    int bad = 0, rc;
    rc = numacoll_reduce_scatter(t, in, out, NULL, NUMACOLL_DTYPE_DOUBLE,
                                 NUMACOLL_OP_SUM);
    if (rc != NUMACOLL_ERR_ARG ||
        !strstr(numacoll_team_last_error(t), "recvcounts"))
        bad = nct_say(t, me, "reduce_scatter without counts accepted", rc);
    rc = numacoll_scan(t, NULL, out, 4, NUMACOLL_DTYPE_DOUBLE,
                       NUMACOLL_OP_SUM);
    if (!bad && rc != NUMACOLL_ERR_ARG)
        bad = nct_say(t, me, "scan from NULL accepted", rc);
    rc = numacoll_reduce_scatter_block(t, in, out, 2, NUMACOLL_DTYPE_DOUBLE,
                                       NUMACOLL_OP_BAND);
    if (!bad && rc != NUMACOLL_ERR_ARG)
        bad = nct_say(t, me, "BAND on double accepted", rc);
    rc = numacoll_reduce_scatter_block_user(t, in, out, 1, sizeof(mat_t),
                                            mat_fn, (void *)&magic, 0);
    if (!bad && p == 5 &&
        (rc != NUMACOLL_ERR_ARG ||
         !strstr(numacoll_team_last_error(t), "staging slot")))
        bad = nct_say(t, me, "reduce_scatter of p elements over the slot "
                  "accepted", rc);
    /* a rank whose Reduce_scatter block is empty needs no receive
     * buffer */
    size_t cnt[8];
    for (int j = 0; j < p; j++)
        cnt[j] = j == 1 ? 0 : 3;
    rc = numacoll_reduce_scatter(t, in, me == 1 ? NULL : out, cnt,
                                 NUMACOLL_DTYPE_DOUBLE, NUMACOLL_OP_SUM);
    if (!bad && rc != NUMACOLL_OK)
        bad = nct_say(t, me, "reduce_scatter with a NULL recvbuf for an empty "
                      "block", rc);
    /* Exscan's rank 0 needs no receive buffer */
    rc = numacoll_exscan(t, in, me ? out : NULL, 4, NUMACOLL_DTYPE_DOUBLE,
                         NUMACOLL_OP_SUM);
    if (!bad && rc != NUMACOLL_OK)
        bad = nct_say(t, me, "exscan with a NULL recvbuf at rank 0", rc);
    (void)numacoll_barrier(t);
    int all[64];
    nct_oob_all(b, 0, all);
    (void)numacoll_barrier(t);
    if (!bad)
        bad = one(t, me, p, RSV, DSUM, 3, 0, 7);
    numacoll_team_destroy(t);
    return bad;
}

static void test_refused(void)
{
    for (int p = 2; p <= 5; p += 3)
        CU_ASSERT_EQUAL(nct_run(p, refused_body, NULL), 0);
}

/* NaN payloads: the inline fold ends each line with the same kernel in
 * place and not (its last op writes either the receive buffer or, where
 * this rank's operand lies there, a scratch line), so a Scan rank's bits
 * do not depend on that choice; the op kernels' two forms can keep
 * different payloads of NaN + NaN. p = 3, float sums of NaNs that differ
 * per rank and element; every rank calls once not in place, then in
 * place. */
static int nan_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 50000);
    if (!t)
        return 10;
    const int me = b->rank;
    int bad = 0;
    for (size_t n = 1; n <= 14 && !bad; n++) {
        uint32_t in[14], out[14], inpl[14];
        for (size_t i = 0; i < n; i++)
            in[i] = 0x7fc00000u | (uint32_t)(me + 1) << 12 | (uint32_t)i;
        memcpy(inpl, in, sizeof in);
        if (numacoll_scan(t, in, out, n, NUMACOLL_DTYPE_FLOAT,
                          NUMACOLL_OP_SUM) != NUMACOLL_OK ||
            numacoll_scan(t, NUMACOLL_IN_PLACE, inpl, n, NUMACOLL_DTYPE_FLOAT,
                          NUMACOLL_OP_SUM) != NUMACOLL_OK)
            bad = 11;
        else if (memcmp(out, inpl, n * sizeof *out) != 0)
            bad = 12;
        if (bad)
            fprintf(stderr, "rank %d: scan of %zu NaNs: %d\n", me, n, bad);
    }
    numacoll_team_destroy(t);
    return bad;
}

static void test_nan(void)
{
    CU_ASSERT_EQUAL(nct_run(3, nan_body, NULL), 0);
}

int nct_register_rscan(void)
{
    static const nct_test_t tests[] = {
        {"reduce_scatter(_block), scan, exscan bit-exact against a rank-order "
         "fold, p = 1..8, 0 elements to 1.1 MB, in place", test_exact},
        {"non-commutative user op (2x2 matrices) in rank order",
         test_user_op},
        {"1 KiB slots, 2 deep, mixed with Allreduce", test_geometry},
        {"nonblocking in flight, persistent started 50 times", test_requests},
        {"mismatched recvcounts, scan against exscan: an error, not a hang",
         test_mismatch},
        {"refused arguments", test_refused},
        {"inline: 0..1100 elements, both ops, p = 1..8, 600 back to back "
         "with allreduce, in flight, persistent; mismatches", test_inline},
        {"scan of NaNs: the same bits in place and not", test_nan},
        {NULL, NULL}};
    return nct_add_suite("rscan", tests);
}
