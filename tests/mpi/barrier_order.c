/*
 * MPI_Barrier ordering: no rank leaves a barrier before every rank has
 * entered it.
 *
 * The ranks of a communicator share one counter in an MPI shared-memory
 * window. In round i each rank adds 1 to it, then calls MPI_Barrier, then
 * reads it. A correct barrier gives every reader at least (i+1)*p (all
 * increments of round i happened before anyone left) and at most (i+2)*p
 * (nobody can add for round i+2 before this reader has entered barrier
 * i+1). One rank per round, chosen in turn, is late by a millisecond, so the
 * last rank to arrive moves around the tree. Runs on the world, a dup, the
 * halves and the reversed world.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "mpit.h"

#define ROUNDS 200

static void late(void)
{
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
}

/* Barrier rounds on comm, and numacoll's counters around them (window
 * creation and destruction call the communicator's collectives too, so
 * they stay outside the counted span). */
static void rounds(MPI_Comm comm, const char *cname)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);

    MPI_Win win;
    long long *counter;
    MPI_Aint size = rank == 0 ? (MPI_Aint)sizeof *counter : 0;
    MPI_Win_allocate_shared(size, (int)sizeof *counter, MPI_INFO_NULL, comm,
                            &counter, &win);
    MPI_Aint qsize;
    int disp;
    MPI_Win_shared_query(win, 0, &qsize, &disp, &counter);
    if (rank == 0)
        __atomic_store_n(counter, 0, __ATOMIC_SEQ_CST);
    /* MPI_Win_sync needs a passive-target epoch (MPICH checks it) */
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    MPI_Win_sync(win);
    /* The initial store is ordered before any increment by the MPI call;
     * the window is only used through the atomic builtins below. */
    MPI_Barrier(comm);

    int bad = 0;
    mpit_counters_t before, after;
    mpit_counters(&before);
    for (int i = 0; i < ROUNDS; i++) {
        if (rank == i % p)
            late();
        __atomic_add_fetch(counter, 1, __ATOMIC_SEQ_CST);
        MPI_Barrier(comm);
        long long v = __atomic_load_n(counter, __ATOMIC_SEQ_CST);
        long long lo = (long long)(i + 1) * p, hi = (long long)(i + 2) * p;
        if (v < lo || v > hi) {
            if (bad++ < 3)
                MPIT_CHECK(0, "%s round %d: counter %lld after the barrier, "
                           "expected %lld..%lld (a rank left early)", cname, i,
                           v, lo, hi);
        }
    }
    mpit_counters(&after);
    MPIT_CHECK(bad == 0, "%s: %d of %d rounds out of order", cname, bad,
               ROUNDS);
    /* MPI_Barrier returns early on a single process. */
    mpit_check_ran(&before, &after, 0, p >= 2 ? ROUNDS : 0, cname);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
    mpit_init(&argc, &argv, "barrier_order");
    MPI_Comm comms[MPIT_NCOMMS];
    mpit_make_comms(comms);

    for (int c = 0; c < MPIT_NCOMMS; c++)
        rounds(comms[c], mpit_comm_names[c]);
    mpit_free_comms(comms);
    return mpit_finish();
}
