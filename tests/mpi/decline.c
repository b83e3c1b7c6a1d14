/*
 * Tuning rules with decline=1 (docs/tuning.md): tests/mpi/run.sh gives
 * the component tests/mpi/tuning-decline.txt, whose rules decline Bcast
 * below 1 KiB, Allreduce above 56 bytes, Allgather blocks below 64 bytes
 * and every Barrier. The calls of each collective on both sides of the
 * boundaries, blocking and nonblocking, on the world and on a dup whose
 * first call is a declined Allgather (the team is made by it), must give
 * the right results, and numacoll's MPI_T counters must show exactly the
 * declined calls in *_declined_count, none in *_fallback_count and the
 * others in *_count. Reduce has no rule there: none declines.
 */
#include <stdlib.h>
#include <string.h>

#include "mpit.h"

enum {
    BC, BC_DEC, BC_FB, BA, BA_DEC, BA_FB, AR, AR_DEC, AR_FB, AG, AG_DEC,
    AG_FB, IBC, IBC_DEC, IAG_DEC, RE_DEC, N_CTR
};
static const char *const ctr_names[N_CTR] = {
    "coll_numacoll_bcast_count", "coll_numacoll_bcast_declined_count",
    "coll_numacoll_bcast_fallback_count", "coll_numacoll_barrier_count",
    "coll_numacoll_barrier_declined_count",
    "coll_numacoll_barrier_fallback_count", "coll_numacoll_allreduce_count",
    "coll_numacoll_allreduce_declined_count",
    "coll_numacoll_allreduce_fallback_count", "coll_numacoll_allgather_count",
    "coll_numacoll_allgather_declined_count",
    "coll_numacoll_allgather_fallback_count", "coll_numacoll_ibcast_count",
    "coll_numacoll_ibcast_declined_count",
    "coll_numacoll_iallgather_declined_count",
    "coll_numacoll_reduce_declined_count"};

/* A Bcast of n bytes from root 1 % p; its bytes checked. */
static void bcast(MPI_Comm comm, int n, int nonblocking)
{
    int p, me;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    unsigned char *b = malloc((size_t)n), *want = malloc((size_t)n);
    mpit_fill(want, (size_t)n, (unsigned)n);
    if (me == 1 % p)
        memcpy(b, want, (size_t)n);
    else
        memset(b, 0, (size_t)n);
    if (nonblocking) {
        MPI_Request r;
        MPI_Ibcast(b, n, MPI_BYTE, 1 % p, comm, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        MPI_Bcast(b, n, MPI_BYTE, 1 % p, comm);
    }
    MPIT_CHECK(memcmp(b, want, (size_t)n) == 0, "bcast of %d bytes", n);
    free(b);
    free(want);
}

/* An Allreduce (root < 0) or Reduce of n doubles, summed. */
static void reduce(MPI_Comm comm, int n, int root)
{
    int p, me;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    double *in = malloc(sizeof(double) * (size_t)n),
           *out = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < n; i++)
        in[i] = i + me;
    if (root < 0)
        MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, comm);
    else
        MPI_Reduce(in, out, n, MPI_DOUBLE, MPI_SUM, root, comm);
    int bad = 0;
    for (int i = 0; (root < 0 || me == root) && i < n; i++)
        bad += out[i] != (double)i * p + (double)p * (p - 1) / 2;
    MPIT_CHECK(bad == 0, "%s of %d doubles: %d wrong", root < 0 ? "allreduce"
               : "reduce", n, bad);
    free(in);
    free(out);
}

/* An Allgather of n ints a rank. */
static void allgather(MPI_Comm comm, int n, int nonblocking)
{
    int p, me;
    MPI_Comm_size(comm, &p);
    MPI_Comm_rank(comm, &me);
    int *in = malloc(sizeof(int) * (size_t)n),
        *out = malloc(sizeof(int) * (size_t)n * (size_t)p);
    for (int i = 0; i < n; i++)
        in[i] = me * 1000 + i;
    if (nonblocking) {
        MPI_Request r;
        MPI_Iallgather(in, n, MPI_INT, out, n, MPI_INT, comm, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else {
        MPI_Allgather(in, n, MPI_INT, out, n, MPI_INT, comm);
    }
    int bad = 0;
    for (int j = 0; j < p; j++)
        for (int i = 0; i < n; i++)
            bad += out[j * n + i] != j * 1000 + i;
    MPIT_CHECK(bad == 0, "allgather of %d ints: %d wrong", n, bad);
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    mpit_init(&argc, &argv, "decline");
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    mpit_named_t ctr;
    mpit_named_open(&ctr, ctr_names, N_CTR);
    unsigned long long c0[N_CTR], c1[N_CTR];
    mpit_named_read(&ctr, c0);

    allgather(dup, 4, 0);           /* the dup's first call: declined */
    bcast(MPI_COMM_WORLD, 8, 0);    /* declined (the world's team made) */
    bcast(MPI_COMM_WORLD, 1023, 0); /* declined */
    bcast(MPI_COMM_WORLD, 1024, 0);
    bcast(MPI_COMM_WORLD, 100000, 0);
    MPI_Barrier(MPI_COMM_WORLD);    /* declined */
    MPI_Barrier(dup);               /* declined */
    reduce(MPI_COMM_WORLD, 7, -1);  /* 56 bytes */
    reduce(MPI_COMM_WORLD, 8, -1);  /* 64 bytes: declined */
    reduce(MPI_COMM_WORLD, 5000, -1);   /* declined */
    reduce(MPI_COMM_WORLD, 5000, 0);    /* no Reduce rule declines */
    allgather(MPI_COMM_WORLD, 15, 0);   /* 60-byte blocks: declined */
    allgather(MPI_COMM_WORLD, 16, 0);
    allgather(MPI_COMM_WORLD, 1000, 0);
    bcast(MPI_COMM_WORLD, 64, 1);       /* declined */
    bcast(MPI_COMM_WORLD, 4096, 1);
    allgather(dup, 2, 1);               /* declined */

    mpit_named_read(&ctr, c1);
    if (ctr.present && mpit_size > 1) {
        static const unsigned long long want[N_CTR] = {
            [BC] = 2, [BC_DEC] = 2, [BA_DEC] = 2, [AR] = 1, [AR_DEC] = 2,
            [AG] = 2, [AG_DEC] = 2, [IBC] = 1, [IBC_DEC] = 1, [IAG_DEC] = 1};
        for (int i = 0; i < N_CTR; i++)
            MPIT_CHECK(c1[i] - c0[i] == want[i], "%s grew by %llu, "
                       "expected %llu", ctr_names[i], c1[i] - c0[i], want[i]);
    } else {
        MPIT_CHECK(mpit_expect != MPIT_EXPECT_CORE, "numacoll's MPI_T "
                   "counters are missing");
    }
    mpit_named_close(&ctr);
    MPI_Comm_free(&dup);
    return mpit_finish();
}
