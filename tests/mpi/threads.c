/*
 * Threads: MPI_THREAD_MULTIPLE, one communicator per thread (MPI forbids
 * two threads' collectives on one communicator at once). Each worker makes
 * Bcasts and Allreduces on its own duplicate of the world and checks their
 * data; the main thread reads numacoll's MPI_T counters meanwhile, which
 * must never go down. Two rounds of workers, so threads that exited
 * before a reading (their counts kept at exit) and threads alive at one
 * both count. With NUMACOLL_EXPECT=core every call must show in the
 * counters exactly once: the counters are per-thread shards summed at a
 * read (ompi/coll_numacoll.h), and a count lost or counted twice fails.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mpit.h"

#define WORKERS 3
#define ROUNDS 2
#define CALLS 150

static const char *const names[] = {"coll_numacoll_bcast_count",
                                    "coll_numacoll_allreduce_count"};
#define NNAMES 2

typedef struct {
    MPI_Comm comm;
    int id, bad;
} worker_t;

/* workers of the round that finished their calls (and are exiting) */
static atomic_int finished;

static void *work(void *v)
{
    worker_t *w = v;
    int p, r;
    MPI_Comm_size(w->comm, &p);
    MPI_Comm_rank(w->comm, &r);
    for (int i = 0; i < CALLS; i++) {
        int root = (i + w->id) % p, buf[4];
        for (int k = 0; k < 4; k++)
            buf[k] = r == root ? 1000 * w->id + 10 * i + k : -1;
        MPI_Bcast(buf, 4, MPI_INT, root, w->comm);
        for (int k = 0; k < 4; k++)
            w->bad += buf[k] != 1000 * w->id + 10 * i + k;
        int in = r + i + w->id, out = -1;
        MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, w->comm);
        w->bad += out != p * (p - 1) / 2 + p * (i + w->id);
    }
    atomic_fetch_add_explicit(&finished, 1, memory_order_release);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE;
    mpit_init_thread(&argc, &argv, "threads", MPI_THREAD_MULTIPLE, &provided);
    MPIT_CHECK(provided == MPI_THREAD_MULTIPLE,
               "MPI_THREAD_MULTIPLE requested, %d provided", provided);
    if (provided != MPI_THREAD_MULTIPLE)
        return mpit_finish();

    mpit_named_t pv;
    mpit_named_open(&pv, names, NNAMES);
    MPI_Comm comms[WORKERS];
    for (int t = 0; t < WORKERS; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    /* the teams exist before counting starts (Open MPI agrees on a dup's
     * id with a collective on the parent, which numacoll may serve) */
    for (int t = 0; t < WORKERS; t++)
        MPI_Barrier(comms[t]);
    MPI_Barrier(MPI_COMM_WORLD);

    unsigned long long start[NNAMES], last[NNAMES], now[NNAMES];
    mpit_named_read(&pv, start);
    memcpy(last, start, sizeof last);
    int down = 0;
    for (int round = 0; round < ROUNDS; round++) {
        pthread_t th[WORKERS];
        worker_t w[WORKERS];
        int started = 0;
        atomic_store_explicit(&finished, 0, memory_order_relaxed);
        for (int t = 0; t < WORKERS; t++) {
            w[t] = (worker_t){comms[t], t, 0};
            if (pthread_create(&th[t], NULL, work, &w[t]) == 0)
                started++;
            else
                break;
        }
        MPIT_CHECK(started == WORKERS, "round %d: %d of %d threads started",
                   round, started, WORKERS);
        if (started != WORKERS)
            MPI_Abort(MPI_COMM_WORLD, 2);   /* the peers' calls would hang */
        /* readings while the workers count, and on while they exit */
        for (int k = 0; k < 50 || atomic_load_explicit(
                                     &finished, memory_order_acquire) <
                                     WORKERS;
             k++) {
            mpit_named_read(&pv, now);
            for (int j = 0; j < NNAMES; j++)
                down += pv.present && now[j] < last[j];
            memcpy(last, now, sizeof last);
        }
        for (int t = 0; t < WORKERS; t++) {
            pthread_join(th[t], NULL);
            MPIT_CHECK(w[t].bad == 0, "round %d, thread %d: %d wrong results",
                       round, t, w[t].bad);
        }
    }
    /* and the main thread's own calls */
    for (int i = 0; i < CALLS; i++) {
        int x = i, s = -1;
        MPI_Bcast(&x, 1, MPI_INT, 0, comms[0]);
        MPI_Allreduce(&x, &s, 1, MPI_INT, MPI_SUM, comms[0]);
        MPIT_CHECK(s == mpit_size * i, "main thread's Allreduce %d: %d", i, s);
    }
    mpit_named_read(&pv, now);
    MPIT_CHECK(down == 0, "a counter went down %d times while threads ran",
               down);
    const unsigned long long want = (unsigned long long)WORKERS * ROUNDS *
                                        CALLS + CALLS;
    if (mpit_expect == MPIT_EXPECT_CORE && pv.present) {
        MPIT_CHECK(now[0] - start[0] == want, "bcast_count grew by %llu, "
                   "%llu calls made", now[0] - start[0], want);
        MPIT_CHECK(now[1] - start[1] == want, "allreduce_count grew by %llu, "
                   "%llu calls made", now[1] - start[1], want);
    }
    if (mpit_expect == MPIT_EXPECT_CORE)
        MPIT_CHECK(pv.present, "numacoll's MPI_T counters are missing");
    for (int t = 0; t < WORKERS; t++)
        MPI_Comm_free(&comms[t]);
    mpit_named_close(&pv);
    return mpit_finish();
}
