/*
 * Nonblocking and persistent collectives: MPI_Ibcast, MPI_Iallreduce,
 * MPI_Ireduce and MPI_Ibarrier many at a time, on several communicators at
 * once, interleaved with blocking collectives, completed through every
 * completion call (Waitall, Testall, Waitany, Testsome, Test, Wait), and
 * persistent Bcast, Allreduce, Reduce and Barrier started 1000 times.
 *
 * A round posts, on each of the four communicators of mpit_make_comms in
 * turn (so requests of all four are in flight together), 16 calls in a
 * fixed order: Ibcasts of sizes from 1 byte to past the queue (some of a
 * strided vector type, freed at once: the convertor path, and the type
 * must live on inside the request), Iallreduces and Ireduces of ints
 * (every root in turn; some with a user op on a contiguous type, also
 * freed at once), Ibarriers, and after every fourth call a blocking Bcast
 * or Allreduce on the same communicator. Results are checked byte for
 * byte: a receiver's Bcast buffer must equal the root's, the bytes past
 * it untouched; sums are exact integers computed from every rank's inputs.
 *
 * A blocking Barrier on one communicator while a large Ibcast on another
 * is in flight, the root waiting for it only after the Barrier, must not
 * hang (the blocking call must keep the other request moving; with single
 * copy off, as tests/mpi/run.sh runs it once, the root must feed the
 * pipeline, and a hang here was seen when Barrier took the direct path).
 *
 * Persistent collectives exist in MPI 4.0 (MPI_Bcast_init, ...) and, in
 * Open MPI 4.1, as MPIX_Bcast_init etc. of its pcollreq extension
 * (<mpi-ext.h>); the test uses whichever the library has and says so when
 * it has neither. The four requests are started together with
 * MPI_Startall 1000 times, their data changing every time.
 *
 * With NUMACOLL_EXPECT=core the MPI_T counters must show numacoll ran
 * every call and start (none handed back); the blocking calls made while
 * requests were in flight count as blocking ones.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpit.h"
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

/* Open MPI 5.0 has MPI-4's persistent collectives while it still says
 * MPI_VERSION 3 (it implements MPI 3.1 and most of 4.0). */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define NB_BCAST_INIT MPI_Bcast_init
#define NB_ALLREDUCE_INIT MPI_Allreduce_init
#define NB_REDUCE_INIT MPI_Reduce_init
#define NB_BARRIER_INIT MPI_Barrier_init
#define NB_PERSISTENT "MPI-4 persistent collectives"
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define NB_BCAST_INIT MPIX_Bcast_init
#define NB_ALLREDUCE_INIT MPIX_Allreduce_init
#define NB_REDUCE_INIT MPIX_Reduce_init
#define NB_BARRIER_INIT MPIX_Barrier_init
#define NB_PERSISTENT "Open MPI's MPIX_*_init (pcollreq)"
#endif

#define NCALLS 16           /* calls posted per communicator and round */
#define ROUNDS 3
#define GUARD 32
#define PERSISTENT_STARTS 1000

/* numacoll's counters of the nonblocking calls (mpit.h's cover the
 * blocking Bcast and Barrier). */
enum { IC_BCAST, IC_BARRIER, IC_REDUCE, IC_ALLREDUCE, IC_BCAST_FB,
       IC_BARRIER_FB, IC_REDUCE_FB, IC_ALLREDUCE_FB, IC_BLK_ALLREDUCE,
       IC_BLK_ALLREDUCE_FB, IC_N };
static const char *const ic_names[IC_N] = {
    "coll_numacoll_ibcast_count", "coll_numacoll_ibarrier_count",
    "coll_numacoll_ireduce_count", "coll_numacoll_iallreduce_count",
    "coll_numacoll_ibcast_fallback_count",
    "coll_numacoll_ibarrier_fallback_count",
    "coll_numacoll_ireduce_fallback_count",
    "coll_numacoll_iallreduce_fallback_count",
    "coll_numacoll_allreduce_count",
    "coll_numacoll_allreduce_fallback_count"};
static unsigned long long made[IC_N];   /* calls made, by counter */
static unsigned long long made_bcast;   /* blocking Bcasts */
static unsigned long long made_barrier; /* blocking Barriers */

static const size_t bcast_sizes[] = {1, 8, 55, 56, 57, 1000, 8191, 8193,
                                     65536 + 3, 262144, 524289};
#define NSIZES (sizeof bcast_sizes / sizeof bcast_sizes[0])

/* ---- one posted call and how to check it ------------------------------ */

typedef enum { P_BCAST, P_BCAST_VEC, P_ALLREDUCE, P_REDUCE, P_REDUCE_USER,
               P_BARRIER } kind_t;

typedef struct post {
    kind_t kind;
    MPI_Comm comm;
    int root, count;
    size_t bytes;
    unsigned seed;
    unsigned char *buf;        /* bcast: buffer + GUARD; reduce: result   */
    int *send;
} post_t;

/* A rank's contribution to element i of a sum. */
static int contrib(unsigned seed, int rank, int i)
{
    return (int)((seed * 31u + (unsigned)i * 7u) % 1000u) + rank;
}

static int expected_sum(unsigned seed, int p, int i)
{
    int s = 0;
    for (int r = 0; r < p; r++)
        s += contrib(seed, r, i);
    return s;
}

/* A user op on pairs of ints: elementwise sum, so the result is checkable
 * like MPI_SUM's while taking the user-op path. */
static void pair_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const int *a = in;
    int *b = inout;
    for (int i = 0; i < 2 * *len; i++)
        b[i] += a[i];
}

/* The strided type of the vector Bcasts: blocks of 3 bytes every 5. */
static MPI_Datatype vec_type(int blocks)
{
    MPI_Datatype t;
    MPI_Type_vector(blocks, 3, 5, MPI_BYTE, &t);
    MPI_Type_commit(&t);
    return t;
}

/* Count a call numacoll may take: communicators of one process are not
 * numacoll's. */
static void made_on(MPI_Comm comm, unsigned long long *counter)
{
    int p;
    MPI_Comm_size(comm, &p);
    if (p > 1)
        (*counter)++;
}

static void post_call(post_t *c, MPI_Request *req, MPI_Op pair_op)
{
    int rank;
    MPI_Comm_rank(c->comm, &rank);
    switch (c->kind) {
    case P_BCAST:
        c->buf = malloc(c->bytes + 2 * GUARD);
        memset(c->buf, 0x5A, c->bytes + 2 * GUARD);
        if (rank == c->root)
            mpit_fill(c->buf + GUARD, c->bytes, c->seed);
        MPI_Ibcast(c->buf + GUARD, (int)c->bytes, MPI_BYTE, c->root, c->comm,
                   req);
        made_on(c->comm, &made[IC_BCAST]);
        break;
    case P_BCAST_VEC: {
        /* count blocks of 3 bytes, 5 apart; the gaps must stay 0x5A */
        c->bytes = (size_t)c->count * 5;
        c->buf = malloc(c->bytes + 2 * GUARD);
        memset(c->buf, 0x5A, c->bytes + 2 * GUARD);
        if (rank == c->root) {
            unsigned char *tmp = malloc((size_t)c->count * 3);
            mpit_fill(tmp, (size_t)c->count * 3, c->seed);
            for (int b = 0; b < c->count; b++)
                memcpy(c->buf + GUARD + 5 * b, tmp + 3 * b, 3);
            free(tmp);
        }
        MPI_Datatype t = vec_type(c->count);
        MPI_Ibcast(c->buf + GUARD, 1, t, c->root, c->comm, req);
        MPI_Type_free(&t);   /* the request must keep it */
        made_on(c->comm, &made[IC_BCAST]);
        break;
    }
    case P_ALLREDUCE:
    case P_REDUCE:
        c->send = malloc((size_t)c->count * sizeof(int));
        c->buf = malloc((size_t)c->count * sizeof(int));
        for (int i = 0; i < c->count; i++) {
            c->send[i] = contrib(c->seed, rank, i);
            ((int *)c->buf)[i] = -1;
        }
        if (c->kind == P_ALLREDUCE) {
            MPI_Iallreduce(c->send, c->buf, c->count, MPI_INT, MPI_SUM,
                           c->comm, req);
            made_on(c->comm, &made[IC_ALLREDUCE]);
        } else {
            MPI_Ireduce(c->send, c->buf, c->count, MPI_INT, MPI_SUM, c->root,
                        c->comm, req);
            made_on(c->comm, &made[IC_REDUCE]);
        }
        break;
    case P_REDUCE_USER: {
        c->send = malloc((size_t)c->count * 2 * sizeof(int));
        c->buf = malloc((size_t)c->count * 2 * sizeof(int));
        for (int i = 0; i < 2 * c->count; i++) {
            c->send[i] = contrib(c->seed, rank, i);
            ((int *)c->buf)[i] = -1;
        }
        MPI_Datatype pair;
        MPI_Type_contiguous(2, MPI_INT, &pair);
        MPI_Type_commit(&pair);
        MPI_Ireduce(c->send, c->buf, c->count, pair, pair_op, c->root,
                    c->comm, req);
        MPI_Type_free(&pair);
        made_on(c->comm, &made[IC_REDUCE]);
        break;
    }
    case P_BARRIER:
        MPI_Ibarrier(c->comm, req);
        made_on(c->comm, &made[IC_BARRIER]);
        break;
    }
}

static void check_call(post_t *c, const char *cname)
{
    int rank, p;
    MPI_Comm_rank(c->comm, &rank);
    MPI_Comm_size(c->comm, &p);
    switch (c->kind) {
    case P_BCAST: {
        unsigned char *want = malloc(c->bytes);
        mpit_fill(want, c->bytes, c->seed);
        size_t bad = c->bytes;
        for (size_t i = 0; i < c->bytes && bad == c->bytes; i++)
            if (c->buf[GUARD + i] != want[i])
                bad = i;
        int guards = 1;
        for (size_t i = 0; i < GUARD; i++)
            guards &= c->buf[i] == 0x5A && c->buf[GUARD + c->bytes + i] == 0x5A;
        MPIT_CHECK(bad == c->bytes && guards, "%s: Ibcast of %zu bytes from "
                   "root %d: %s at byte %zu", cname, c->bytes, c->root,
                   guards ? "wrong data" : "guard bytes overwritten", bad);
        free(want);
        break;
    }
    case P_BCAST_VEC: {
        unsigned char *tmp = malloc((size_t)c->count * 3);
        mpit_fill(tmp, (size_t)c->count * 3, c->seed);
        int ok = 1;
        for (int b = 0; b < c->count && ok; b++)
            ok = memcmp(c->buf + GUARD + 5 * b, tmp + 3 * b, 3) == 0 &&
                 (b == c->count - 1 ||
                  (c->buf[GUARD + 5 * b + 3] == 0x5A &&
                   c->buf[GUARD + 5 * b + 4] == 0x5A));
        MPIT_CHECK(ok, "%s: Ibcast of %d strided blocks from root %d: wrong "
                   "data or gaps written", cname, c->count, c->root);
        free(tmp);
        break;
    }
    case P_ALLREDUCE:
    case P_REDUCE:
    case P_REDUCE_USER: {
        int n = c->kind == P_REDUCE_USER ? 2 * c->count : c->count;
        if (c->kind != P_ALLREDUCE && rank != c->root)
            break;
        int bad = -1;
        for (int i = 0; i < n && bad < 0; i++)
            if (((int *)c->buf)[i] != expected_sum(c->seed, p, i))
                bad = i;
        MPIT_CHECK(bad < 0, "%s: %s of %d ints (root %d): element %d is %d, "
                   "expected %d", cname, c->kind == P_ALLREDUCE ? "Iallreduce"
                   : "Ireduce", n, c->root, bad,
                   bad < 0 ? 0 : ((int *)c->buf)[bad],
                   bad < 0 ? 0 : expected_sum(c->seed, p, bad));
        break;
    }
    case P_BARRIER:
        break;
    }
    free(c->buf);
    free(c->send);
    c->buf = NULL;
    c->send = NULL;
}

/* The i-th call of a round on a communicator of p ranks. */
static void plan_call(post_t *c, MPI_Comm comm, int p, int round, int i)
{
    memset(c, 0, sizeof *c);
    c->comm = comm;
    c->seed = (unsigned)(round * 1000 + i * 17 + p);
    c->root = (round * NCALLS + i) % p;    /* every root in turn */
    static const kind_t mix[8] = {P_BCAST, P_ALLREDUCE, P_BCAST, P_REDUCE,
                                  P_BCAST_VEC, P_BARRIER, P_BCAST,
                                  P_REDUCE_USER};
    c->kind = mix[(i + round) % 8];
    c->bytes = bcast_sizes[(i * 3 + round) % NSIZES];
    c->count = 1 + (int)((c->seed * 131u) % 20000u);
    if (c->kind == P_BCAST_VEC)
        c->count = 1 + (int)((c->seed * 29u) % 40000u);
}

/* One blocking collective while requests are in flight; checked at once. */
static void blocking_call(MPI_Comm comm, int k, const char *cname)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    if (k % 2 == 0) {
        unsigned char buf[1024], want[1024];
        int root = k % p;
        mpit_fill(want, sizeof want, (unsigned)k + 7u);
        if (rank == root)
            memcpy(buf, want, sizeof buf);
        else
            memset(buf, 0, sizeof buf);
        MPI_Bcast(buf, sizeof buf, MPI_BYTE, root, comm);
        made_on(comm, &made_bcast);
        MPIT_CHECK(memcmp(buf, want, sizeof buf) == 0, "%s: blocking Bcast "
                   "between requests: wrong data", cname);
    } else {
        int v[4] = {rank, 1, rank * k, k}, s[4];
        MPI_Allreduce(v, s, 4, MPI_INT, MPI_SUM, comm);
        made_on(comm, &made[IC_BLK_ALLREDUCE]);
        MPIT_CHECK(s[0] == p * (p - 1) / 2 && s[1] == p &&
                   s[2] == k * p * (p - 1) / 2 && s[3] == k * p,
                   "%s: blocking Allreduce between requests: wrong sum", cname);
    }
}

/* Complete every request of the round, by one of several methods. */
static void complete_all(MPI_Request *reqs, int n, int method)
{
    int done = 0, idx, flag, outcount, *idxs = malloc((size_t)n * sizeof *idxs);
    switch (method % 5) {
    case 0:
        MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
        break;
    case 1:
        while (!done)
            MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE);
        break;
    case 2:
        for (int k = 0; k < n; k++) {
            MPI_Waitany(n, reqs, &idx, MPI_STATUS_IGNORE);
            MPIT_CHECK(idx != MPI_UNDEFINED && reqs[idx] == MPI_REQUEST_NULL,
                       "MPI_Waitany returned index %d", idx);
        }
        break;
    case 3:
        while (done < n) {
            MPI_Testsome(n, reqs, &outcount, idxs, MPI_STATUSES_IGNORE);
            if (outcount == MPI_UNDEFINED)
                break;
            done += outcount;
        }
        break;
    case 4:  /* test each in turn until all are done */
        while (done < n) {
            done = 0;
            for (int k = 0; k < n; k++) {
                MPI_Test(&reqs[k], &flag, MPI_STATUS_IGNORE);
                done += flag;
            }
        }
        break;
    }
    for (int k = 0; k < n; k++)
        MPIT_CHECK(reqs[k] == MPI_REQUEST_NULL, "request %d not freed after "
                   "completion (method %d)", k, method % 5);
    free(idxs);
}

static void rounds(MPI_Comm comms[MPIT_NCOMMS], MPI_Op pair_op)
{
    post_t *calls = malloc(MPIT_NCOMMS * NCALLS * sizeof *calls);
    MPI_Request *reqs = malloc(MPIT_NCOMMS * NCALLS * sizeof *reqs);
    for (int round = 0; round < ROUNDS; round++) {
        int n = 0;
        /* Calls alternate between communicators, so every communicator
         * has requests in flight while the others post theirs. */
        for (int i = 0; i < NCALLS; i++)
            for (int c = 0; c < MPIT_NCOMMS; c++) {
                int p;
                MPI_Comm_size(comms[c], &p);
                plan_call(&calls[n], comms[c], p, round, i);
                post_call(&calls[n], &reqs[n], pair_op);
                n++;
                if (i % 4 == 3)
                    blocking_call(comms[c], round * NCALLS + i + c,
                                  mpit_comm_names[c]);
            }
        complete_all(reqs, n, round + mpit_size);
        for (int k = 0; k < n; k++)
            check_call(&calls[k], mpit_comm_names[k % MPIT_NCOMMS]);
    }
    free(calls);
    free(reqs);
}

/*
 * A blocking call on one communicator while a request on another is in
 * flight, the request waited for at different points: the root after the
 * blocking call, the others before it. The Ibcast is larger than the
 * queue, so the root must keep feeding it while it sits in the blocking
 * Barrier; the Barrier cannot finish before the others have their data.
 * Without progress of other requests inside blocking calls this hangs.
 */
static void cross_progress(MPI_Comm a, MPI_Comm b, int round)
{
    int rank;
    MPI_Comm_rank(a, &rank);
    const size_t n = (size_t)3 << 20;
    unsigned char *buf = malloc(n), *want = malloc(n);
    mpit_fill(want, n, 4242u + (unsigned)round);
    if (rank == 0)
        memcpy(buf, want, n);
    else
        memset(buf, 0, n);
    MPI_Request req;
    MPI_Ibcast(buf, (int)n, MPI_BYTE, 0, a, &req);
    made_on(a, &made[IC_BCAST]);
    if (rank == 0) {
        MPI_Barrier(b);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Barrier(b);
    }
    made_on(b, &made_barrier);
    MPIT_CHECK(memcmp(buf, want, n) == 0, "Ibcast of %zu bytes waited for "
               "after a blocking Barrier on another communicator: wrong "
               "data", n);
    free(buf);
    free(want);
}

#ifdef NB_BCAST_INIT
/* Persistent Bcast, Allreduce, Reduce and Barrier on comm, started
 * together PERSISTENT_STARTS times; data changes every start. */
static void persistent(MPI_Comm comm, const char *cname)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    enum { B = 200, N = 33 };
    unsigned char bbuf[B];
    int send[N], ar[N], rd[N];
    MPI_Request r[4];
    const int root = p - 1;
    NB_BCAST_INIT(bbuf, B, MPI_BYTE, 0, comm, MPI_INFO_NULL, &r[0]);
    NB_ALLREDUCE_INIT(send, ar, N, MPI_INT, MPI_SUM, comm, MPI_INFO_NULL,
                      &r[1]);
    NB_REDUCE_INIT(send, rd, N, MPI_INT, MPI_MAX, root, comm, MPI_INFO_NULL,
                   &r[2]);
    NB_BARRIER_INIT(comm, MPI_INFO_NULL, &r[3]);
    long bad = 0;
    for (int it = 0; it < PERSISTENT_STARTS; it++) {
        unsigned char want[B];
        mpit_fill(want, B, (unsigned)it);
        if (rank == 0)
            memcpy(bbuf, want, B);
        else
            memset(bbuf, 0, B);
        for (int i = 0; i < N; i++) {
            send[i] = contrib((unsigned)it, rank, i);
            ar[i] = rd[i] = -1;
        }
        MPI_Startall(4, r);
        if (it % 2)
            MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
        else
            for (int k = 0; k < 4; k++)
                MPI_Wait(&r[k], MPI_STATUS_IGNORE);
        bad += memcmp(bbuf, want, B) != 0;
        for (int i = 0; i < N; i++) {
            bad += ar[i] != expected_sum((unsigned)it, p, i);
            if (rank == root)
                bad += rd[i] != contrib((unsigned)it, p - 1, i);
        }
    }
    made[IC_BCAST] += PERSISTENT_STARTS;
    made[IC_ALLREDUCE] += PERSISTENT_STARTS;
    made[IC_REDUCE] += PERSISTENT_STARTS;
    made[IC_BARRIER] += PERSISTENT_STARTS;
    MPIT_CHECK(bad == 0, "%s: %ld wrong results in %d persistent starts",
               cname, bad, PERSISTENT_STARTS);
    for (int k = 0; k < 4; k++) {
        MPI_Request_free(&r[k]);
        MPIT_CHECK(r[k] == MPI_REQUEST_NULL, "%s: persistent request %d not "
                   "freed", cname, k);
    }
}
#endif

/*
 * A large Ibcast pending while its communicator is freed (MPI lets it
 * complete). a has had no call yet: its first, a Barrier, makes its team.
 */
static void freed_while_pending(MPI_Comm a)
{
    int rank;
    MPI_Comm_rank(a, &rank);
    MPI_Barrier(a);
    made_on(a, &made_barrier);
    const size_t n = (size_t)1 << 20;
    unsigned char *buf = malloc(n), *want = malloc(n);
    mpit_fill(want, n, 777u);
    if (rank == 0)
        memcpy(buf, want, n);
    else
        memset(buf, 0, n);
    MPI_Request q;
    MPI_Ibcast(buf, (int)n, MPI_BYTE, 0, a, &q);
    made_on(a, &made[IC_BCAST]);
    MPI_Comm_free(&a);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPIT_CHECK(memcmp(buf, want, n) == 0, "Ibcast of %zu bytes whose "
               "communicator was freed while it was pending: wrong data", n);
    free(buf);
    free(want);
}

int main(int argc, char **argv)
{
    mpit_init(&argc, &argv, "nonblocking");
    mpit_named_t ic;
    mpit_named_open(&ic, ic_names, IC_N);
    MPI_Comm comms[MPIT_NCOMMS];
    mpit_make_comms(comms);
    MPI_Op pair_op;
    MPI_Op_create(pair_sum, 1, &pair_op);

    /* made before the counters are read: Open MPI's MPI_Comm_dup runs
     * Iallreduces on the parent */
    MPI_Comm freed;
    MPI_Comm_dup(comms[0], &freed);

    mpit_counters_t b0, b1;
    unsigned long long before[IC_N], after[IC_N];
    mpit_counters(&b0);
    mpit_named_read(&ic, before);

    rounds(comms, pair_op);
    for (int round = 0; round < 3; round++)
        cross_progress(comms[round % 2 ? 3 : 0], comms[1], round);
#ifdef NB_BCAST_INIT
    persistent(comms[1], "dup");
    persistent(comms[3], "reversed");
#else
    if (mpit_rank == 0)
        printf("nonblocking: this MPI has no persistent collectives; that "
               "part is skipped\n");
#endif

    freed_while_pending(freed);

    mpit_counters(&b1);
    mpit_named_read(&ic, after);
    /* (the Ibarriers and persistent Barriers count as ibarrier) */
    mpit_check_ran(&b0, &b1, made_bcast, made_barrier,
                   "blocking calls among requests");
    if (mpit_expect == MPIT_EXPECT_CORE && ic.present)
        for (int k = 0; k < IC_N; k++)
            MPIT_CHECK(after[k] - before[k] == made[k], "%s: %llu, expected "
                       "%llu (numacoll must run every nonblocking call and "
                       "start)", ic_names[k], after[k] - before[k], made[k]);
    else if (mpit_expect == MPIT_EXPECT_CORE)
        MPIT_CHECK(0, "numacoll's nonblocking counters are missing");

    MPI_Op_free(&pair_op);
    mpit_free_comms(comms);
    mpit_named_close(&ic);
    return mpit_finish();
}
