/*
 * Errors reach the communicator's error handler as MPI error classes.
 *
 * Run with --mca coll_numacoll_timeout_ms 200. On a dup of the world the
 * first Bcast creates the team; then rank 0 (the root) arrives a second
 * late, so every other rank's wait times out: numacoll returns
 * MPI_ERR_OTHER, marks the team aborted, and rank 0 gets MPI_ERR_OTHER too
 * when it arrives. The same for MPI_Barrier on a second dup. On a third dup
 * with a user error handler, that handler runs exactly once per rank with
 * the class that MPI_Bcast then returns. On a fourth dup rank 0 comes late
 * to the first collective itself: the others' setup exchange times out,
 * they leave it and tell rank 0, which fails too when it comes; all get
 * MPI_ERR_OTHER, and from the next call on that communicator at once.
 *
 * Without numacoll (NUMACOLL_EXPECT unset) nothing times out: every call
 * must succeed and the handler must never run, so the program checks MPI
 * semantics either way.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpit.h"

#define LATE_MS 1000

static int handler_calls, handler_class;

static void handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handler_calls++;
    MPI_Error_class(*code, &handler_class);
}

static void late_root(MPI_Comm comm)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        struct timespec ts = {LATE_MS / 1000, (LATE_MS % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static void expect_class(int rc, const char *what)
{
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    if (mpit_expect == MPIT_EXPECT_CORE)
        MPIT_CHECK(cls == MPI_ERR_OTHER, "%s: error class %d, expected "
                   "MPI_ERR_OTHER (%d) from the timed-out wait", what, cls,
                   MPI_ERR_OTHER);
    else
        MPIT_CHECK(rc == MPI_SUCCESS, "%s returned %d", what, rc);
}

int main(int argc, char **argv)
{
    mpit_init(&argc, &argv, "errors");
    char buf[4096];
    MPI_Comm d1, d2, d3, d4;
    MPI_Comm_dup(MPI_COMM_WORLD, &d1);
    MPI_Comm_dup(MPI_COMM_WORLD, &d2);
    MPI_Comm_dup(MPI_COMM_WORLD, &d3);
    MPI_Comm_dup(MPI_COMM_WORLD, &d4);
    MPI_Comm_set_errhandler(d1, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(d2, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(d4, MPI_ERRORS_RETURN);
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(handler, &eh);
    MPI_Comm_set_errhandler(d3, eh);

    /* First blocking calls create the teams, with every rank present
     * (MPI_COMM_WORLD's too: mpit_finish's calls on it come after the late
     * ranks below, too late for a setup under a 200 ms timeout). */
    MPIT_CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS,
               "first Barrier on MPI_COMM_WORLD");
    memset(buf, mpit_rank, sizeof buf);
    MPIT_CHECK(MPI_Bcast(buf, sizeof buf, MPI_BYTE, 0, d1) == MPI_SUCCESS,
               "first Bcast on d1");
    MPIT_CHECK(MPI_Barrier(d2) == MPI_SUCCESS, "first Barrier on d2");
    MPIT_CHECK(MPI_Bcast(buf, sizeof buf, MPI_BYTE, 0, d3) == MPI_SUCCESS,
               "first Bcast on d3");

    late_root(d1);
    expect_class(MPI_Bcast(buf, sizeof buf, MPI_BYTE, 0, d1),
                 "Bcast with a late root");
    late_root(d2);
    expect_class(MPI_Barrier(d2), "Barrier with a late rank 0");

    late_root(d3);
    int rc = MPI_Bcast(buf, sizeof buf, MPI_BYTE, 0, d3);
    if (mpit_expect == MPIT_EXPECT_CORE) {
        MPIT_CHECK(handler_calls == 1, "user error handler ran %d times, "
                   "expected once", handler_calls);
        MPIT_CHECK(handler_class == MPI_ERR_OTHER && rc != MPI_SUCCESS,
                   "handler saw class %d, MPI_Bcast returned %d",
                   handler_class, rc);
    } else {
        MPIT_CHECK(handler_calls == 0 && rc == MPI_SUCCESS,
                   "handler ran %d times, MPI_Bcast returned %d",
                   handler_calls, rc);
    }

    /* The setup's own exchange, with rank 0 late to it (d4 has no team
     * yet); then a call on a communicator whose setup failed. */
    late_root(d4);
    expect_class(MPI_Barrier(d4), "first Barrier (the setup) with a late "
                 "rank 0");
    expect_class(MPI_Bcast(buf, sizeof buf, MPI_BYTE, 0, d4),
                 "Bcast after a failed setup");

    /* Freeing communicators whose teams aborted, or whose setup failed,
     * must work. */
    MPI_Comm_free(&d1);
    MPI_Comm_free(&d2);
    MPI_Comm_free(&d3);
    MPI_Comm_free(&d4);
    MPI_Errhandler_free(&eh);
    return mpit_finish();
}
