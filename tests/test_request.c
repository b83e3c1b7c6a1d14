/*
 * Nonblocking and persistent collectives (coll/request.c), suite
 * "request": many requests in flight on one team, of every collective and
 * every root, interleaved with blocking calls, completed by test loops and
 * by waits in any order; two teams at once; persistent requests started
 * 1000 times; a request freed in flight; a reader whose test returns while
 * the root has not even started (proof that a step never blocks); refused
 * arguments; a non-commutative user op in rank order. p up to 8 on the two
 * cores of the test machine; every byte checked.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "nct.h"
#include "numacoll.h"

static unsigned char pattern(unsigned call, size_t i)
{
    unsigned long long x = (call + 7) * 0x9e3779b97f4a7c15ULL +
                           i * 0xbf58476d1ce4e5b9ULL;
    return (unsigned char)(x >> 56 ^ x >> 31 ^ i);
}

static numacoll_team_t *team_of(const numacoll_bootstrap_t *b)
{
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    cfg.timeout_ms = 50000;
    numacoll_team_t *t;
    return numacoll_team_create(b, &cfg, &t) == NUMACOLL_OK ? t : NULL;
}

static int say(numacoll_team_t *t, int rank, const char *what, int rc)
{
    fprintf(stderr, "rank %d: %s: %s (%s)\n", rank, what,
            numacoll_strerror(rc), t ? numacoll_team_last_error(t) : "");
    return 2;
}

/* ---- many in flight --------------------------------------------------- */

#define NREQ 24
/* 104: an Allreduce or Reduce of two inline lines (every p, by the
 * built-in table), which awaits each rank's last line first. Eleven sizes
 * against four kinds: every pair meets within 44 calls. */
static const size_t sizes[] = {0, 1, 8, 57, 104, 448, 1000, 4096, 20000,
                               70000, 300000};
#define NSIZES (sizeof sizes / sizeof sizes[0])

typedef struct flight {
    int kind;            /* 0 bcast, 1 allreduce, 2 reduce, 3 barrier */
    int root;
    size_t n;            /* bytes (bcast) or int64 elements              */
    unsigned char *buf;  /* bcast buffer / allreduce, reduce send         */
    int64_t *res;        /* reduce results                                */
    numacoll_request_t *req;
} flight_t;

static int64_t contrib(unsigned call, int rank, size_t i)
{
    return (int64_t)(call * 1000003u + (unsigned)rank * 7919u + i);
}

/* Start call c of the mix; data set up first. */
static int launch(numacoll_team_t *t, int rank, int p, flight_t *f,
                  unsigned c)
{
    f->kind = (int)(c % 4);
    f->root = (int)(c * 5 % (unsigned)p);
    f->n = sizes[c % NSIZES];
    if (f->kind == 0) {
        f->buf = malloc(f->n + 1);
        for (size_t i = 0; i < f->n; i++)
            f->buf[i] = rank == f->root ? pattern(c, i) : 0xEE;
        f->buf[f->n] = 0x5A;
        return numacoll_ibcast(t, f->buf, f->n, f->root, &f->req);
    }
    if (f->kind == 3)
        return numacoll_ibarrier(t, &f->req);
    size_t n = f->n / 8;
    f->n = n;
    int64_t *in = malloc((n + 1) * sizeof *in);
    f->res = malloc((n + 1) * sizeof *f->res);
    for (size_t i = 0; i < n; i++) {
        in[i] = contrib(c, rank, i);
        f->res[i] = -1;
    }
    f->buf = (unsigned char *)in;
    if (f->kind == 1)
        return numacoll_iallreduce(t, in, f->res, n, NUMACOLL_DTYPE_INT64,
                                   NUMACOLL_OP_SUM, &f->req);
    return numacoll_ireduce(t, in, f->res, n, NUMACOLL_DTYPE_INT64,
                            NUMACOLL_OP_SUM, f->root, &f->req);
}

/* Check call c's result and free its buffers; 0 when right. */
static int check(int rank, int p, flight_t *f, unsigned c)
{
    int bad = 0;
    if (f->kind == 0) {
        for (size_t i = 0; i < f->n && !bad; i++)
            bad = f->buf[i] != pattern(c, i);
        bad |= f->buf[f->n] != 0x5A;
    } else if (f->kind != 3 && (f->kind == 1 || rank == f->root)) {
        for (size_t i = 0; i < f->n && !bad; i++) {
            int64_t want = 0;
            for (int r = 0; r < p; r++)
                want += contrib(c, r, i);
            bad = f->res[i] != want;
        }
    }
    if (bad)
        fprintf(stderr, "rank %d: call %u (kind %d, root %d, n %zu) wrong\n",
                rank, c, f->kind, f->root, f->n);
    free(f->buf);
    free(f->res);
    f->buf = NULL;
    f->res = NULL;
    return bad;
}

typedef struct mix {
    int rounds;
    int by_test;         /* complete by test loops, else waits (reversed) */
} mix_t;

static int mix_body(const numacoll_bootstrap_t *b, void *arg)
{
    const mix_t *m = arg;
    numacoll_team_t *t = team_of(b);
    if (!t)
        return 1;
    const int rank = b->rank, p = b->size;
    flight_t f[NREQ];
    unsigned call = 0;
    int bad = 0;
    for (int round = 0; round < m->rounds && !bad; round++) {
        unsigned first = call;
        for (int k = 0; k < NREQ && !bad; k++, call++) {
            memset(&f[k], 0, sizeof f[k]);
            int rc = launch(t, rank, p, &f[k], call);
            if (rc != NUMACOLL_OK)
                bad = say(t, rank, "start", rc);
        }
        if (m->by_test) {
            /* test them all, in any order, until all are done */
            int left = NREQ;
            while (left > 0 && !bad) {
                left = 0;
                for (int k = NREQ - 1; k >= 0 && !bad; k--) {
                    int done;
                    if (!f[k].req)
                        continue;
                    int rc = numacoll_test(&f[k].req, &done);
                    if (rc != NUMACOLL_OK)
                        bad = say(t, rank, "test", rc);
                    else if (!done)
                        left++;
                    else if (f[k].req)
                        bad = 3;   /* a finished request is freed */
                }
                sched_yield();
            }
        } else {
            /* last first: waiting for it completes all before it */
            for (int k = NREQ - 1; k >= 0 && !bad; k--) {
                int rc = numacoll_wait(&f[k].req);
                if (rc != NUMACOLL_OK)
                    bad = say(t, rank, "wait", rc);
            }
        }
        for (int k = 0; k < NREQ; k++)
            bad |= check(rank, p, &f[k], first + (unsigned)k) ? 4 : 0;
        /* a blocking call after them, ordered after them */
        unsigned char one = rank == round % p ? (unsigned char)round : 0;
        int rc = numacoll_bcast(t, &one, 1, round % p);
        if (rc != NUMACOLL_OK)
            bad = say(t, rank, "blocking bcast", rc);
        else if (one != (unsigned char)round)
            bad = 5;
    }
    numacoll_team_destroy(t);
    return bad;
}

static void test_many_in_flight(void)
{
    mix_t tm = {3, 1}, wm = {3, 0};
    for (int p = 1; p <= 8; p++) {
        CU_ASSERT_EQUAL(nct_run(p, mix_body, &tm), 0);
        CU_ASSERT_EQUAL(nct_run(p, mix_body, &wm), 0);
    }
}

/* ---- interleaved with blocking calls, two teams ------------------------ */

static int two_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *a = team_of(b), *c = team_of(b);
    if (!a || !c)
        return 1;
    const int rank = b->rank, p = b->size;
    int bad = 0;
    for (unsigned i = 0; i < 200 && !bad; i++) {
        const int root = (int)(i % (unsigned)p);
        const size_t n = sizes[i % NSIZES];
        unsigned char *x = malloc(n + 1), *y = malloc(n + 1);
        for (size_t k = 0; k < n; k++) {
            x[k] = rank == root ? pattern(i, k) : 0;
            y[k] = rank == root ? pattern(i + 1, k) : 0;
        }
        numacoll_request_t *ra, *rc;
        int64_t v = rank + 1, sum = 0;
        /* a: ibcast in flight while c runs a blocking allreduce and its own
         * ibcast, and a runs a blocking barrier behind its request */
        int st = numacoll_ibcast(a, x, n, root, &ra);
        if (st == NUMACOLL_OK)
            st = numacoll_ibcast(c, y, n, root, &rc);
        if (st == NUMACOLL_OK)
            st = numacoll_allreduce(c, &v, &sum, 1, NUMACOLL_DTYPE_INT64,
                                    NUMACOLL_OP_SUM);
        if (st == NUMACOLL_OK)
            st = numacoll_barrier(a);
        /* the blocking barrier completed it first */
        int done = 0;
        if (st == NUMACOLL_OK)
            st = numacoll_test(&ra, &done);
        if (st == NUMACOLL_OK && (!done || ra))
            bad = 6;
        if (st == NUMACOLL_OK)
            st = numacoll_wait(&rc);
        if (st != NUMACOLL_OK)
            bad = say(a, rank, "two teams", st);
        for (size_t k = 0; k < n && !bad; k++)
            bad = x[k] != pattern(i, k) || y[k] != pattern(i + 1, k);
        if (sum != (int64_t)p * (p + 1) / 2)
            bad = 7;
        free(x);
        free(y);
    }
    numacoll_team_destroy(c);
    numacoll_team_destroy(a);
    return bad;
}

static void test_two_teams(void)
{
    for (int p = 2; p <= 8; p += 3)
        CU_ASSERT_EQUAL(nct_run(p, two_body, NULL), 0);
}

/* ---- persistent ---------------------------------------------------------- */

static int persistent_body(const numacoll_bootstrap_t *b, void *arg)
{
    const size_t n = *(const size_t *)arg;
    numacoll_team_t *t = team_of(b);
    if (!t)
        return 1;
    const int rank = b->rank, p = b->size, root = p - 1;
    unsigned char *buf = malloc(n + 1);
    int64_t in[3], out[3];
    numacoll_request_t *bc, *ar, *ba;
    int bad = 0;
    int rc = numacoll_bcast_init(t, buf, n, root, &bc);
    if (rc == NUMACOLL_OK)
        rc = numacoll_allreduce_init(t, in, out, 3, NUMACOLL_DTYPE_INT64,
                                     NUMACOLL_OP_MAX, &ar);
    if (rc == NUMACOLL_OK)
        rc = numacoll_barrier_init(t, &ba);
    if (rc != NUMACOLL_OK)
        return say(t, rank, "init", rc);
    for (unsigned i = 0; i < 1000 && !bad; i++) {
        for (size_t k = 0; k < n; k++)
            buf[k] = rank == root ? pattern(i, k) : 0;
        buf[n] = 0x5A;
        for (int k = 0; k < 3; k++)
            in[k] = (int64_t)(i * 3 + (unsigned)k) * (rank == (int)(i % (unsigned)p) ? 2 : 1);
        rc = numacoll_start(bc);
        if (rc == NUMACOLL_OK)
            rc = numacoll_start(ar);
        if (rc == NUMACOLL_OK && i % 10 == 0)
            rc = numacoll_start(ba);
        int done = 0;
        while (rc == NUMACOLL_OK && !done && i % 2)
            rc = numacoll_test(&ar, &done);   /* completes bc first */
        if (rc == NUMACOLL_OK)
            rc = numacoll_wait(&bc);
        if (rc == NUMACOLL_OK)
            rc = numacoll_wait(&ar);
        if (rc == NUMACOLL_OK && i % 10 == 0)
            rc = numacoll_wait(&ba);
        if (rc != NUMACOLL_OK) {
            bad = say(t, rank, "persistent", rc);
            break;
        }
        if (!bc || !ar || !ba)
            bad = 9;   /* persistent requests stay */
        if (bad)
            fprintf(stderr, "rank %d: persistent call %u: %d\n", rank, i, bad);
        for (size_t k = 0; k < n && !bad; k++)
            bad = buf[k] != pattern(i, k) ? 10 : 0;
        for (int k = 0; k < 3 && !bad; k++)
            bad = out[k] != (int64_t)(i * 3 + (unsigned)k) * 2
                      ? 11 : 0;
        bad |= buf[n] != 0x5A ? 12 : 0;
    }
    /* an inactive persistent request tests done; freeing it works */
    int done = 0;
    if (!bad && (numacoll_test(&bc, &done) != NUMACOLL_OK || !done))
        bad = 13;
    if (numacoll_request_free(&bc) != NUMACOLL_OK || bc ||
        numacoll_request_free(&ar) != NUMACOLL_OK ||
        numacoll_request_free(&ba) != NUMACOLL_OK)
        bad = 14;
    free(buf);
    numacoll_team_destroy(t);
    return bad;
}

static void test_persistent(void)
{
    static const size_t ns[] = {8, 3000, 200000};
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(nct_run(2, persistent_body, (void *)&ns[i]), 0);
        CU_ASSERT_EQUAL(nct_run(3, persistent_body, (void *)&ns[i]), 0);
    }
    CU_ASSERT_EQUAL(nct_run(5, persistent_body, (void *)&ns[0]), 0);
}

/* ---- a step never blocks -------------------------------------------------- */

/* Shared between the forked ranks: set by rank 0 once a test has come
 * back with the root not started. */
static _Atomic int *seen_pending;

static int noblock_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = team_of(b);
    if (!t)
        return 1;
    int bad = 0;
    for (int round = 0; round < 20 && !bad; round++) {
        const int root = b->size - 1;
        static unsigned char buf[100000];
        const size_t n = round % 2 ? 40 : sizeof buf;
        numacoll_request_t *r = NULL;
        if (b->rank == root) {
            /* the root starts only once rank 0's test has come back */
            while (atomic_load(seen_pending) <= round)
                sched_yield();
            memset(buf, round, n);
            bad = numacoll_bcast(t, buf, n, root) != NUMACOLL_OK;
        } else {
            memset(buf, 0xEE, n);
            int rc = numacoll_ibcast(t, buf, n, root, &r), done = 0;
            if (rc == NUMACOLL_OK)
                rc = numacoll_test(&r, &done);
            /* rank 0's is done before the root began: impossible (the
             * others may test after the root's call) */
            if (rc != NUMACOLL_OK || (done && b->rank == 0))
                bad = 15;
            if (b->rank == 0)
                atomic_store(&seen_pending[0], round + 1);
            while (!bad && !done) {
                rc = numacoll_test(&r, &done);
                if (rc != NUMACOLL_OK)
                    bad = say(t, b->rank, "test", rc);
            }
            for (size_t k = 0; k < n && !bad; k++)
                bad = buf[k] != (unsigned char)round ? 16 : 0;
        }
        /* Ibarrier also waits for every rank: test, do something, test */
        if (!bad) {
            int rc = numacoll_ibarrier(t, &r), done = 0;
            while (rc == NUMACOLL_OK && !done)
                rc = numacoll_test(&r, &done);
            if (rc != NUMACOLL_OK)
                bad = say(t, b->rank, "ibarrier", rc) + 15;
        }
    }
    numacoll_team_destroy(t);
    return bad;
}

static void test_never_blocks(void)
{
    seen_pending = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CU_ASSERT_FATAL(seen_pending != MAP_FAILED);
    for (int p = 2; p <= 4; p++) {
        atomic_store(seen_pending, 0);
        CU_ASSERT_EQUAL(nct_run(p, noblock_body, NULL), 0);
    }
    munmap((void *)seen_pending, 4096);
}

/* ---- freed in flight, refused arguments ----------------------------------- */

static int misc_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = team_of(b);
    if (!t)
        return 1;
    const int rank = b->rank, p = b->size;
    int bad = 0;
    static unsigned char buf[5000];
    numacoll_request_t *r = NULL;
    memset(buf, rank == 0 ? 0x42 : 0, sizeof buf);
    /* freed in flight: it still runs, the blocking call after it waits */
    int rc = numacoll_ibcast(t, buf, sizeof buf, 0, &r);
    if (rc == NUMACOLL_OK)
        rc = numacoll_request_free(&r);
    if (rc != NUMACOLL_OK || r)
        bad = 20;
    if (numacoll_barrier(t) != NUMACOLL_OK)
        bad = 21;
    for (size_t k = 0; k < sizeof buf && !bad; k++)
        bad = buf[k] != 0x42 ? 22 : 0;
    /* refused on every rank: an error at once, no request, and the team
     * goes on */
    r = (numacoll_request_t *)buf;
    if (numacoll_ibcast(t, buf, 8, p + 3, &r) != NUMACOLL_ERR_ARG || r)
        bad = 23;
    if (numacoll_iallreduce(t, buf, buf + 64, 1, NUMACOLL_DTYPE_FLOAT,
                            NUMACOLL_OP_BAND, &r) != NUMACOLL_ERR_ARG || r)
        bad = 24;
    if (numacoll_ibarrier(t, NULL) != NUMACOLL_ERR_ARG)
        bad = 25;
    int64_t v = 1, s = 0;
    rc = numacoll_allreduce(t, &v, &s, 1, NUMACOLL_DTYPE_INT64,
                            NUMACOLL_OP_SUM);
    if (rc != NUMACOLL_OK || s != p)
        bad = rc != NUMACOLL_OK ? say(t, rank, "after refusals", rc) : 26;
    /* start of a nonblocking request, free of an active persistent one */
    if (numacoll_ibarrier(t, &r) != NUMACOLL_OK ||
        numacoll_start(r) != NUMACOLL_ERR_ARG ||
        numacoll_wait(&r) != NUMACOLL_OK)
        bad = 27;
    int done = 1;
    if (numacoll_barrier_init(t, &r) != NUMACOLL_OK ||
        numacoll_start(r) != NUMACOLL_OK)
        bad = 28;
    /* still active (the last rank to arrive may be done at once): a
     * start and a free are refused */
    numacoll_request_t *again = r;
    if (!bad && (p == 1 || numacoll_test(&again, &done) != NUMACOLL_OK))
        bad = p == 1 ? 0 : 28;
    if (!bad && !done && (numacoll_start(r) != NUMACOLL_ERR_ARG ||
                          numacoll_request_free(&r) != NUMACOLL_ERR_ARG))
        bad = 28;
    if (!bad && (numacoll_wait(&r) != NUMACOLL_OK ||
                 numacoll_request_free(&r) != NUMACOLL_OK || r))
        bad = 28;
    /* destroyed with requests in flight: they finish first */
    for (int k = 0; k < 4; k++)
        if (numacoll_ibarrier(t, &r) != NUMACOLL_OK ||
            numacoll_request_free(&r) != NUMACOLL_OK)
            bad = 29;
    numacoll_team_destroy(t);
    return bad;
}

static void test_misc(void)
{
    for (int p = 1; p <= 4; p++)
        CU_ASSERT_EQUAL(nct_run(p, misc_body, NULL), 0);
}

/* ---- user op in rank order ------------------------------------------------ */

/* 2x2 integer matrices, product in rank order (not commutative) */
static void matmul(void *ctx, const void *in, void *inout, size_t n)
{
    (void)ctx;
    const int64_t *a = in;
    int64_t *b = inout;
    for (size_t k = 0; k < n; k++, a += 4, b += 4) {
        int64_t c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3],
                        a[2] * b[0] + a[3] * b[2], a[2] * b[1] + a[3] * b[3]};
        memcpy(b, c, sizeof c);
    }
}

static void mat_of(int rank, size_t k, int64_t *m)
{
    m[0] = 1;
    m[1] = rank + (int64_t)k;
    m[2] = 0;
    m[3] = 1 + (rank == 1);
}

static int user_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = team_of(b);
    if (!t)
        return 1;
    enum { N = 100 };
    static int64_t in[N * 4], out[N * 4], red[N * 4], want[N * 4];
    for (size_t k = 0; k < N; k++)
        mat_of(b->rank, k, in + 4 * k);
    for (size_t k = 0; k < N; k++) {
        mat_of(0, k, want + 4 * k);
        for (int r = 1; r < b->size; r++) {
            int64_t m[4];
            mat_of(r, k, m);
            matmul(NULL, want + 4 * k, m, 1);
            memcpy(want + 4 * k, m, sizeof m);
        }
    }
    numacoll_request_t *r1, *r2;
    int rc = numacoll_iallreduce_user(t, in, out, N, 32, matmul, NULL, 0,
                                      &r1);
    if (rc == NUMACOLL_OK)
        rc = numacoll_ireduce_user(t, in, red, N, 32, matmul, NULL, 0,
                                   b->size - 1, &r2);
    if (rc == NUMACOLL_OK)
        rc = numacoll_wait(&r2);
    if (rc == NUMACOLL_OK)
        rc = numacoll_wait(&r1);
    int bad = rc != NUMACOLL_OK ? say(t, b->rank, "user op", rc) : 0;
    if (!bad && memcmp(out, want, sizeof want))
        bad = 30;
    if (!bad && b->rank == b->size - 1 && memcmp(red, want, sizeof want))
        bad = 31;
    numacoll_team_destroy(t);
    return bad;
}

static void test_user_op(void)
{
    for (int p = 1; p <= 6; p++)
        CU_ASSERT_EQUAL(nct_run(p, user_body, NULL), 0);
}

/* ---- mismatched nonblocking calls fail, by test loops or by waits ------- */

static int mismatch_body(const numacoll_bootstrap_t *b, void *arg)
{
    const int by_test = *(const int *)arg;
    numacoll_team_t *t = team_of(b);
    if (!t)
        return 1;
    static unsigned char buf[3000];
    int64_t v = 1, s = 0;
    numacoll_request_t *r;
    /* rank 0 broadcasts, the others reduce: every rank must get an error */
    int rc = b->rank == 0
                 ? numacoll_ibcast(t, buf, sizeof buf, 0, &r)
                 : numacoll_iallreduce(t, &v, &s, 1, NUMACOLL_DTYPE_INT64,
                                       NUMACOLL_OP_SUM, &r);
    int done = 0;
    while (rc == NUMACOLL_OK && by_test && !done)
        rc = numacoll_test(&r, &done);
    if (rc == NUMACOLL_OK && !by_test)
        rc = numacoll_wait(&r);
    /* the root of a Bcast needs nobody: it hears of it at its next call */
    if (rc == NUMACOLL_OK && b->rank == 0)
        rc = numacoll_barrier(t);
    int bad = rc == NUMACOLL_ERR_MISMATCH || rc == NUMACOLL_ERR_TRUNCATE
                  ? 0 : say(t, b->rank, "mismatch not found", rc);
    /* the team goes on afterwards */
    if (!bad && numacoll_barrier(t) != NUMACOLL_OK &&
        numacoll_barrier(t) != NUMACOLL_OK)
        bad = say(t, b->rank, "after the mismatch", NUMACOLL_ERR_MISMATCH);
    numacoll_team_destroy(t);
    return bad;
}

static void test_mismatch(void)
{
    static const int by_test = 1, by_wait = 0;
    for (int p = 2; p <= 4; p++) {
        CU_ASSERT_EQUAL(nct_run(p, mismatch_body, (void *)&by_test), 0);
        CU_ASSERT_EQUAL(nct_run(p, mismatch_body, (void *)&by_wait), 0);
    }
}

/* ---- fast and general paths meet ------------------------------------ */

/* Call c's kind and size (bytes; int64 elements for Allreduce) */
static const size_t fg_sizes[] = {1, 8, 40, 48, 56, 13};

/* One call of the mix, through the blocking fast path where fast, else
 * as a nonblocking call waited for at once (op, begin(), the step): both
 * must publish the same signature, or the call fails as mismatched. */
static int fg_call(numacoll_team_t *t, int rank, int p, unsigned c, int fast)
{
    const int kind = (int)(c % 8);
    const size_t n = fg_sizes[c / 8 % (sizeof fg_sizes / sizeof *fg_sizes)];
    const int root = (int)(c % (unsigned)p);
    numacoll_request_t *r = NULL;
    int rc = NUMACOLL_OK, bad = 0;
    if (kind == 0) {
        unsigned char buf[64];
        for (size_t i = 0; i < n; i++)
            buf[i] = rank == root ? pattern(c, i) : 0;
        rc = fast ? numacoll_bcast(t, buf, n, root)
                  : numacoll_ibcast(t, buf, n, root, &r);
        if (rc == NUMACOLL_OK && r)
            rc = numacoll_wait(&r);
        for (size_t i = 0; rc == NUMACOLL_OK && i < n; i++)
            bad |= buf[i] != pattern(c, i);
    } else if (kind == 7) {
        /* Reduce_scatter_block of int64 sums, blocks of 1 to 8 / p
         * elements (the inline rule's 64 bytes in all), in place every
         * other time */
        int64_t in[64], out[64];
        const size_t b = 1 + n % (8 / (size_t)p);
        /* every other round of sizes a Reduce_scatter of 0 to 2 elements
         * a block (at p = 5 past the inline rule now and then) */
        const int v = (c / 48) % 2;
        size_t cnt[8], at[8], all = 0;
        for (int j = 0; j < p; j++) {
            cnt[j] = v ? (n + (size_t)j) % 3 : b;
            at[j] = all;
            all += cnt[j];
        }
        const int in_place = c % 2;
        for (size_t i = 0; i < all; i++)
            (in_place ? out : in)[i] = contrib(c, rank, i);
        const void *send = in_place ? NUMACOLL_IN_PLACE : in;
        const numacoll_dtype_t dt = NUMACOLL_DTYPE_INT64;
        const numacoll_op_t sum = NUMACOLL_OP_SUM;
        if (v)
            rc = fast ? numacoll_reduce_scatter(t, send, out, cnt, dt, sum)
                      : numacoll_ireduce_scatter(t, send, out, cnt, dt, sum,
                                                 &r);
        else
            rc = fast ? numacoll_reduce_scatter_block(t, send, out, b, dt,
                                                      sum)
                      : numacoll_ireduce_scatter_block(t, send, out, b, dt,
                                                       sum, &r);
        if (rc == NUMACOLL_OK && r)
            rc = numacoll_wait(&r);
        for (size_t i = 0; rc == NUMACOLL_OK && i < cnt[rank]; i++) {
            int64_t want = 0;
            for (int j = 0; j < p; j++)
                want += contrib(c, j, at[rank] + i);
            bad |= out[i] != want;
        }
    } else if (kind == 1 || (kind >= 4 && kind <= 6)) {
        /* int64 sums: an Allreduce (1) or a Reduce to root (4) of up to
         * 13 elements (one line or two: 56-byte lines of 7), in place at
         * the root every other time; a Scan (5) or Exscan (6) of 1 to 8
         * (their inline rules' 64 bytes), in place every other time, and
         * Exscan's rank 0 passing no receive buffer every third time */
        int64_t in[16], out[16];
        const int all = kind == 1, scan = kind >= 5, ex = kind == 6;
        const size_t m = scan ? (n % 9 ? n % 9 : 1) : (n % 14 ? n % 14 : 1);
        const int mine = all || (scan && (!ex || rank > 0)) ||
                         (kind == 4 && rank == root);
        const int in_place = (scan || (kind == 4 && mine)) && c % 2;
        for (size_t i = 0; i < m; i++)
            (in_place ? out : in)[i] = contrib(c, rank, i);
        const void *send = in_place ? NUMACOLL_IN_PLACE : in;
        void *recv = ex && rank == 0 && !in_place && c % 3 == 0 ? NULL : out;
        const numacoll_dtype_t dt = NUMACOLL_DTYPE_INT64;
        const numacoll_op_t sum = NUMACOLL_OP_SUM;
        if (all)
            rc = fast ? numacoll_allreduce(t, send, recv, m, dt, sum)
                      : numacoll_iallreduce(t, send, recv, m, dt, sum, &r);
        else if (!scan)
            rc = fast ? numacoll_reduce(t, send, recv, m, dt, sum, root)
                      : numacoll_ireduce(t, send, recv, m, dt, sum, root, &r);
        else if (ex)
            rc = fast ? numacoll_exscan(t, send, recv, m, dt, sum)
                      : numacoll_iexscan(t, send, recv, m, dt, sum, &r);
        else
            rc = fast ? numacoll_scan(t, send, recv, m, dt, sum)
                      : numacoll_iscan(t, send, recv, m, dt, sum, &r);
        if (rc == NUMACOLL_OK && r)
            rc = numacoll_wait(&r);
        /* the ranks whose contributions this rank's result sums */
        const int upto = !scan ? p : ex ? rank : rank + 1;
        for (size_t i = 0; rc == NUMACOLL_OK && mine && i < m; i++) {
            int64_t want = 0;
            for (int j = 0; j < upto; j++)
                want += contrib(c, j, i);
            bad |= out[i] != want;
        }
    } else if (kind == 2) {
        rc = fast ? numacoll_barrier(t) : numacoll_ibarrier(t, &r);
        if (rc == NUMACOLL_OK && r)
            rc = numacoll_wait(&r);
    } else {   /* kind 3 */
        /* an Allgather, or every other round of sizes an Allgatherv of
         * blocks of 0 to 56 bytes in reverse rank order (past the fast
         * path's 48 bytes now and then) */
        const int v = (c / 48) % 2;
        size_t cnt[8], dsp[8], at = 0;
        for (int j = p - 1; j >= 0; j--) {
            cnt[j] = v ? (n + (size_t)j * 7) % 57 : n;
            dsp[j] = v ? at : (size_t)j * n;
            at += cnt[j];
        }
        unsigned char mine[64], all[8 * 64];
        for (size_t i = 0; i < cnt[rank]; i++)
            mine[i] = pattern(c + (unsigned)rank, i);
        if (v)
            rc = fast ? numacoll_allgatherv(t, mine, cnt[rank], all, cnt, dsp)
                      : numacoll_iallgatherv(t, mine, cnt[rank], all, cnt,
                                             dsp, &r);
        else
            rc = fast ? numacoll_allgather(t, mine, all, n)
                      : numacoll_iallgather(t, mine, all, n, &r);
        if (rc == NUMACOLL_OK && r)
            rc = numacoll_wait(&r);
        for (int j = 0; rc == NUMACOLL_OK && j < p; j++)
            for (size_t i = 0; i < cnt[j]; i++)
                bad |= all[dsp[j] + i] != pattern(c + (unsigned)j, i);
    }
    if (rc != NUMACOLL_OK)
        return say(t, rank, fast ? "fast path" : "general path", rc);
    if (bad) {
        fprintf(stderr, "rank %d: call %u (kind %d, %zu): wrong data\n",
                rank, c, kind, n);
        return 2;
    }
    return 0;
}

static int fast_general_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = team_of(b);
    if (!t)
        return 2;
    int bad = 0;
    /* each rank switches paths on its own rhythm, so every pair of paths
     * meets in every kind and size */
    for (unsigned c = 0; c < 600 && !bad; c++)
        bad = fg_call(t, b->rank, b->size, c,
                      (int)((c / (unsigned)(b->rank + 1)) % 2));
    numacoll_team_destroy(t);
    return bad;
}

static void test_fast_general(void)
{
    for (int p = 2; p <= 5; p++)
        CU_ASSERT_EQUAL(nct_run(p, fast_general_body, NULL), 0);
}

int nct_register_request(void)
{
    static const nct_test_t tests[] = {
        {"24 in flight of every kind and root, p = 1..8, test and wait",
         test_many_in_flight},
        {"two teams, interleaved with blocking calls", test_two_teams},
        {"persistent Bcast, Allreduce, Barrier started 1000 times",
         test_persistent},
        {"a reader's test returns before the root has started",
         test_never_blocks},
        {"freed in flight, refused arguments, wrong starts and frees",
         test_misc},
        {"user op in rank order, nonblocking Reduce and Allreduce",
         test_user_op},
        {"mismatched nonblocking calls fail in test loops and waits",
         test_mismatch},
        {"blocking fast paths and the general path meet in one call",
         test_fast_general},
        {NULL, NULL}};
    return nct_add_suite("request", tests);
}
