/*
 * Mismatched calls swept and fuzzed (coll/call.c), suite "mismatch sweep":
 * whatever the ranks disagree on, at whatever size and p, every rank gets
 * an error from the bad call or at the latest from the next one, never a
 * hang (the runner's 60 s watchdog; timeout_ms 0) and never data of a
 * call other than its own.
 *  sweep  p = 2..8, Bcast roots that differ (one rank its own root, two
 *         groups with a root each, every rank its own root), sizes,
 *         Allreduce counts, ops and types, one rank in another collective
 *         (Allreduce, Barrier, a Reduce to another root), 8 B to 4 MiB.
 *  fuzz   p = 2..4, random calls (Bcast, Allreduce, Reduce, Barrier,
 *         Allgather, Gather, Scatter, Alltoall, Scan) against a random
 *         set of ranks making a call that differs in one thing (the
 *         collective, size, root, op or type).
 * The rule after each bad call, checked by every rank on every rank's
 * statuses (out of band): if every rank failed it, the next call (a
 * Barrier) succeeds everywhere; otherwise the Barrier fails on every rank.
 * A Bcast reader that succeeded holds the data of the root it named, an
 * Allreduce that succeeded the sum of its own arguments. Then a correct
 * Bcast must succeed everywhere, and the ranks meet out of band.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nct.h"
#include "numacoll.h"

#ifdef __SANITIZE_ADDRESS__
#define FUZZ_CASES 1200     /* per p: three times that in all */
#else
#define FUZZ_CASES 3400     /* per p: 10,200 in all */
#endif
/* Cases per team: a mismatch is found after the waits' spin phase, in
 * yields, and with CPU-bound processes beside the ranks each yield can
 * cost a time slice: 425 cases took 30 s at p = 2 beside three busy
 * loops on 2 CPUs (5 s alone), so a chunk stays well within the
 * runner's 60 s watchdog. */
#define FUZZ_CHUNK 170
#define MAXB (4u << 20)

enum { C_BCAST, C_ALLREDUCE, C_REDUCE, C_BARRIER, C_ALLGATHER, C_GATHER,
       C_SCATTER, C_ALLTOALL, C_SCAN, C_COUNT };

/* One rank's call: the collective, bytes (a block for the gathers, the
 * vector for reductions), root, and for reductions type and op. */
typedef struct call {
    int coll, root, dtype, op;
    size_t nbytes;
} call_t;

static numacoll_team_t *make_team(const numacoll_bootstrap_t *b)
{
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    cfg.timeout_ms = 0;         /* a mismatch must not need one */
    numacoll_team_t *t = NULL;
    return numacoll_team_create(b, &cfg, &t) == NUMACOLL_OK ? t : NULL;
}

static unsigned char pattern(size_t i, int root, unsigned round)
{
    return (unsigned char)(i * 131 + (size_t)root * 29 + round * 17 + 5);
}

typedef struct bufs {
    unsigned char *a, *r;   /* send and receive, MAXB * 8 bytes each */
} bufs_t;

/* Run call c on this rank; *data_ok is cleared where a call that
 * succeeded left data other than its own call's. */
static int run_call(numacoll_team_t *t, const numacoll_bootstrap_t *b,
                    const call_t *c, bufs_t *u, unsigned round, int *data_ok)
{
    const int p = b->size, me = b->rank;
    size_t n = c->nbytes;
    int rc = NUMACOLL_OK;
    switch (c->coll) {
    case C_BCAST:
        for (size_t i = 0; i < n; i++)
            u->a[i] = me == c->root ? pattern(i, c->root, round) : 0;
        rc = numacoll_bcast(t, u->a, n, c->root);
        if (rc == NUMACOLL_OK)
            for (size_t i = 0; i < n && *data_ok; i++)
                *data_ok = u->a[i] == pattern(i, c->root, round);
        break;
    case C_ALLREDUCE:
    case C_REDUCE:
    case C_SCAN: {
        /* int64 or double: rank + i, exact in both */
        const size_t cnt = n / 8;
        for (size_t i = 0; i < cnt; i++) {
            if (c->dtype == NUMACOLL_DTYPE_DOUBLE) {
                double v = (double)(me + (int)(i % 1000));
                memcpy(u->a + 8 * i, &v, 8);
            } else {
                int64_t v = me + (int64_t)(i % 1000);
                memcpy(u->a + 8 * i, &v, 8);
            }
        }
        rc = c->coll == C_ALLREDUCE
                 ? numacoll_allreduce(t, u->a, u->r, cnt, c->dtype, c->op)
             : c->coll == C_REDUCE
                 ? numacoll_reduce(t, u->a, u->r, cnt, c->dtype, c->op,
                                   c->root)
                 : numacoll_scan(t, u->a, u->r, cnt, c->dtype, c->op);
        if (rc == NUMACOLL_OK && c->coll == C_ALLREDUCE &&
            c->op == NUMACOLL_OP_SUM)
            for (size_t i = 0; i < cnt && *data_ok; i++) {
                double want = (double)p * (double)(i % 1000) +
                              (double)p * (p - 1) / 2;
                if (c->dtype == NUMACOLL_DTYPE_DOUBLE) {
                    double v;
                    memcpy(&v, u->r + 8 * i, 8);
                    *data_ok = v == want;
                } else {
                    int64_t v;
                    memcpy(&v, u->r + 8 * i, 8);
                    *data_ok = (double)v == want;
                }
            }
        break;
    }
    case C_BARRIER:
        rc = numacoll_barrier(t);
        break;
    case C_ALLGATHER:
        rc = numacoll_allgather(t, u->a, u->r, n);
        break;
    case C_GATHER:
        rc = numacoll_gather(t, u->a, u->r, n, c->root);
        break;
    case C_SCATTER:
        rc = numacoll_scatter(t, u->a, u->r, n, c->root);
        break;
    case C_ALLTOALL:
        rc = numacoll_alltoall(t, u->a, u->r, n);
        break;
    }
    return rc;
}

/* The bad call (this rank's part c), then the rule of the file's header.
 * 0 or a failure code; *why says what was wrong. */
static int bad_call(numacoll_team_t *t, const numacoll_bootstrap_t *b,
                    const call_t *c, bufs_t *u, unsigned round)
{
    int data_ok = 1;
    int rc1 = run_call(t, b, c, u, round, &data_ok);
    int rc2 = numacoll_barrier(t);
    int mine[3] = {rc1, rc2, data_ok}, all[8][3];
    if (b->size > 8 || b->allgather(mine, all, sizeof mine, b->ctx) != 0)
        return 70;
    int allfail = 1;
    for (int r = 0; r < b->size; r++)
        allfail &= all[r][0] != NUMACOLL_OK;
    int bad = 0;
    for (int r = 0; r < b->size && !bad; r++) {
        if (!all[r][2])
            bad = 71;   /* another call's data */
        else if (all[r][0] != NUMACOLL_OK &&
                 all[r][0] != NUMACOLL_ERR_MISMATCH &&
                 all[r][0] != NUMACOLL_ERR_TRUNCATE)
            bad = 72;
        else if (allfail ? all[r][1] != NUMACOLL_OK
                         : all[r][1] != NUMACOLL_ERR_MISMATCH)
            bad = 73;   /* silent, or a spurious error */
    }
    if (bad && b->rank == 0) {
        fprintf(stderr, "mismatch sweep: p=%d round %u: coll %d root %d "
                "dtype %d op %d %zu bytes on rank 0: code %d; statuses",
                b->size, round, c->coll, c->root, c->dtype, c->op, c->nbytes,
                bad);
        for (int r = 0; r < b->size; r++)
            fprintf(stderr, " [%s %s%s]", numacoll_strerror(all[r][0]),
                    numacoll_strerror(all[r][1]),
                    all[r][2] ? "" : " wrong data");
        fprintf(stderr, " (%s)\n", numacoll_team_last_error(t));
    }
    if (bad)
        return bad;
    /* a correct call after it works everywhere */
    call_t ok = {.coll = C_BCAST, .root = (int)(round % (unsigned)b->size),
                 .nbytes = 24};
    data_ok = 1;
    int rc = run_call(t, b, &ok, u, round + 7, &data_ok);
    if (rc != NUMACOLL_OK || !data_ok) {
        fprintf(stderr, "rank %d: the correct Bcast after round %u: %s "
                "(%s)\n", b->rank, round, numacoll_strerror(rc),
                numacoll_team_last_error(t));
        return 74;
    }
    /* out of band, as applications meet between phases: a rank that ran
     * ahead into the next bad call could otherwise make one still in
     * this one give it up (docs/usage.md: calls lost without a meeting) */
    int z = 0, zs[8];
    return b->allgather(&z, zs, sizeof z, b->ctx) == 0 ? 0 : 75;
}

static int bufs_init(bufs_t *u, size_t n)
{
    u->a = malloc(n);
    u->r = malloc(n);
    return u->a && u->r;
}

static void bufs_free(bufs_t *u)
{
    free(u->a);
    free(u->r);
}

/* ---- sweep ------------------------------------------------------------- */

enum { K_ROOT_SELF, K_ROOT_GROUPS, K_ROOT_ALL, K_BC_SIZE, K_AR_COUNT,
       K_AR_OP, K_AR_TYPE, K_AR_BCAST, K_BARRIER_BCAST, K_REDUCE_ROOT,
       K_COUNT };

static const size_t sweep_sizes[] = {8,      64,     1000,   8192,
                                     65536,  262144, 300000, 409600,
                                     1 << 20, MAXB};

static call_t sweep_call(int kind, int me, int p, size_t n)
{
    const int last = me == p - 1;
    call_t c = {.coll = C_BCAST, .root = 0, .nbytes = n,
                .dtype = NUMACOLL_DTYPE_DOUBLE, .op = NUMACOLL_OP_SUM};
    switch (kind) {
    case K_ROOT_SELF:   /* rank p-1 its own root, the others root 0 */
        c.root = last ? p - 1 : 0;
        break;
    case K_ROOT_GROUPS: /* rank 0 root 0, the others root 1 */
        c.root = me == 0 ? 0 : 1;
        break;
    case K_ROOT_ALL:
        c.root = me;
        break;
    case K_BC_SIZE:
        c.nbytes = last ? n / 2 : n;
        break;
    case K_AR_COUNT:
        c.coll = C_ALLREDUCE;
        c.nbytes = last && n > 8 ? n / 2 : last ? 16 : n;
        break;
    case K_AR_OP:
        c.coll = C_ALLREDUCE;
        c.op = last ? NUMACOLL_OP_MAX : NUMACOLL_OP_SUM;
        break;
    case K_AR_TYPE:
        c.coll = C_ALLREDUCE;
        c.dtype = last ? NUMACOLL_DTYPE_INT64 : NUMACOLL_DTYPE_DOUBLE;
        break;
    case K_AR_BCAST:
        c.coll = last ? C_ALLREDUCE : C_BCAST;
        break;
    case K_BARRIER_BCAST:
        c.coll = last ? C_BARRIER : C_BCAST;
        break;
    case K_REDUCE_ROOT:
        c.coll = C_REDUCE;
        c.root = last ? p - 1 : 0;
        break;
    }
    return c;
}

static int sweep_body(const numacoll_bootstrap_t *b, void *arg)
{
    const int kind = *(const int *)arg;
    numacoll_team_t *t = make_team(b);
    bufs_t u;
    if (!t || !bufs_init(&u, MAXB))
        return 60;
    int bad = 0;
    for (size_t k = 0; k < sizeof sweep_sizes / sizeof *sweep_sizes && !bad;
         k++) {
        call_t c = sweep_call(kind, b->rank, b->size, sweep_sizes[k]);
        bad = bad_call(t, b, &c, &u, (unsigned)k);
        if (bad)
            fprintf(stderr, "rank %d: sweep kind %d, %zu bytes, p=%d: %d\n",
                    b->rank, kind, sweep_sizes[k], b->size, bad);
    }
    numacoll_team_destroy(t);
    bufs_free(&u);
    return bad;
}

static void test_sweep(void)
{
    nct_run_kinds(2, 8, K_COUNT, sweep_body, "sweep");
}

/* ---- fuzz -------------------------------------------------------------- */

/* xorshift64*: the same stream on every rank */
static uint64_t rnd(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dULL;
}

static size_t fuzz_size(uint64_t *s, int coll, int p)
{
    static const size_t sizes[] = {8,    16,    64,     200,    1024,
                                   4096, 20000, 65536, 300000, 1 << 20};
    /* mostly small: the inline and staged paths and their borders */
    size_t n = sizes[rnd(s) % (rnd(s) % 4 ? 6 : 10)];
    /* p blocks, doubled by a mismatch, within the buffers */
    if ((coll == C_ALLGATHER || coll == C_GATHER || coll == C_SCATTER ||
         coll == C_ALLTOALL) && n > MAXB / (2 * (size_t)p))
        n = MAXB / (2 * (size_t)p);
    return n;
}

static int fuzz_body(const numacoll_bootstrap_t *b, void *arg)
{
    const unsigned chunk = *(const unsigned *)arg;
    const int p = b->size;
    uint64_t s = 0x9e3779b97f4a7c15ULL * (chunk + 1) + (uint64_t)p;
    numacoll_team_t *t = make_team(b);
    bufs_t u;
    if (!t || !bufs_init(&u, (size_t)MAXB * 2))
        return 60;
    int bad = 0;
    for (unsigned i = 0; i < FUZZ_CHUNK && !bad; i++) {
        call_t base = {.coll = (int)(rnd(&s) % C_COUNT),
                       .root = (int)(rnd(&s) % (uint64_t)p),
                       .dtype = rnd(&s) % 2 ? NUMACOLL_DTYPE_DOUBLE
                                            : NUMACOLL_DTYPE_INT64,
                       .op = rnd(&s) % 2 ? NUMACOLL_OP_SUM
                                         : NUMACOLL_OP_MAX};
        base.nbytes = fuzz_size(&s, base.coll, p);
        /* the ranks that differ: a non-empty proper subset */
        unsigned mask = 0;
        while (mask == 0 || mask == (1u << p) - 1)
            mask = (unsigned)(rnd(&s) % (1u << p));
        call_t other = base;
        const int rooted = base.coll == C_BCAST || base.coll == C_REDUCE ||
                           base.coll == C_GATHER || base.coll == C_SCATTER;
        const int red = base.coll == C_ALLREDUCE ||
                        base.coll == C_REDUCE || base.coll == C_SCAN;
        /* a Barrier differs only by being another collective */
        switch (base.coll == C_BARRIER ? 0 : rnd(&s) % 5) {
        case 0:
            other.coll = (base.coll + 1 + (int)(rnd(&s) % (C_COUNT - 1))) %
                         C_COUNT;
            other.nbytes = fuzz_size(&s, other.coll, p);
            break;
        case 1:
            other.nbytes = base.nbytes * 2;
            break;
        case 2:
            if (rooted) {
                other.root = (base.root + 1 +
                              (int)(rnd(&s) % (uint64_t)(p - 1))) % p;
                break;
            }
            /* fall through */
        case 3:
            if (red) {
                other.op = base.op == NUMACOLL_OP_SUM ? NUMACOLL_OP_MAX
                                                      : NUMACOLL_OP_SUM;
                break;
            }
            /* fall through */
        default:
            if (red)
                other.dtype = base.dtype == NUMACOLL_DTYPE_DOUBLE
                                  ? NUMACOLL_DTYPE_INT64
                                  : NUMACOLL_DTYPE_DOUBLE;
            else if (base.coll == C_BARRIER)
                other.coll = C_BCAST;
            else
                other.nbytes = base.nbytes + 8;
            break;
        }
        const call_t *mine = mask >> b->rank & 1 ? &other : &base;
        bad = bad_call(t, b, mine, &u, chunk * FUZZ_CHUNK + i);
    }
    numacoll_team_destroy(t);
    bufs_free(&u);
    return bad;
}

static void test_fuzz(void)
{
    unsigned cases = 0;
    for (int p = 2; p <= 4; p++)
        for (unsigned c = 0; c * FUZZ_CHUNK < FUZZ_CASES; c++) {
            int rc = nct_run(p, fuzz_body, &c);
            if (rc != 0)
                fprintf(stderr, "fuzz p=%d chunk=%u\n", p, c);
            CU_ASSERT_EQUAL(rc, 0);
            cases += FUZZ_CHUNK;
        }
    printf("(%u mismatched calls) ", cases);
}

int nct_register_mismatch_sweep(void)
{
    static const nct_test_t tests[] = {
        {"roots, sizes, counts, ops, types, collectives: 8 B-4 MiB, "
         "p = 2..8", test_sweep},
        {"random mismatched calls at p = 2..4", test_fuzz},
        {NULL, NULL},
    };
    return nct_add_suite("mismatch sweep", tests);
}
