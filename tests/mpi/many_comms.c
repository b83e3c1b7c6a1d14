/*
 * Many communicators: 200 alive at once (MPI_Comm_dup and MPI_Comm_split in
 * turn), each used by one Bcast and one Barrier, then all freed; three
 * cycles. Checks the data, that numacoll made one team per communicator it
 * accepted (MPI_T "coll_numacoll_teams"), that freeing releases them all,
 * and that no segment of this job is left in /dev/shm.
 *
 * Run with a tiny coll_numacoll_node_budget and NUMACOLL_EXPECT=fallback,
 * the same program shows that communicators beyond the budget fall back to
 * the previous component instead of failing; with a budget that fits some
 * teams and NUMACOLL_EXPECT=mixed, that both kinds coexist.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpit.h"

#define NCOMMS 200
#define CYCLES 3
#define BYTES 4096

/* Segments are named /numacoll-<uid>-<host>-<pid of rank 0>-...; this rank
 * looks for ones that a team of its own created. */
static int leftover_segments(void)
{
    char tag[32];
    int n = 0;
    snprintf(tag, sizeof tag, "-%d-", (int)getpid());
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strncmp(e->d_name, "numacoll-", 9) == 0 && strstr(e->d_name, tag))
            n++;
    closedir(d);
    return n;
}

int main(int argc, char **argv)
{
    mpit_init(&argc, &argv, "many_comms");
    static MPI_Comm comms[NCOMMS];
    unsigned char *buf = malloc(BYTES);
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 2);

    /* Open MPI 4.1 agrees on a new communicator's id with MPI_Iallreduce
     * on the parent, which numacoll serves: the world's own team would be
     * created by the first MPI_Comm_dup below. Make it now, so the counts
     * below are the new communicators' alone. */
    MPI_Barrier(MPI_COMM_WORLD);
    mpit_counters_t start, end;
    mpit_counters(&start);
    for (int cycle = 0; cycle < CYCLES; cycle++) {
        unsigned long long bcasts = 0, barriers = 0;
        unsigned accepted = 0;
        mpit_counters_t before, used;
        mpit_counters(&before);
        for (int i = 0; i < NCOMMS; i++) {
            if (i % 2 == 0)
                MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);
            else  /* interleaved halves, in reversed rank order */
                MPI_Comm_split(MPI_COMM_WORLD, mpit_rank % 2, -mpit_rank,
                               &comms[i]);
        }
        for (int i = 0; i < NCOMMS; i++) {
            int rank, p;
            MPI_Comm_rank(comms[i], &rank);
            MPI_Comm_size(comms[i], &p);
            int root = (i + cycle) % p;
            unsigned seed = (unsigned)(cycle * NCOMMS + i);
            if (rank == root)
                mpit_fill(buf, BYTES, seed);
            else
                memset(buf, 0, BYTES);
            int rc = MPI_Bcast(buf, BYTES, MPI_BYTE, root, comms[i]);
            unsigned char *want = malloc(BYTES);
            if (want) {
                mpit_fill(want, BYTES, seed);
                MPIT_CHECK(rc == MPI_SUCCESS && memcmp(buf, want, BYTES) == 0,
                           "cycle %d comm %d (p=%d, root %d): wrong data, rc "
                           "%d", cycle, i, p, root, rc);
                free(want);
            }
            rc = MPI_Barrier(comms[i]);
            MPIT_CHECK(rc == MPI_SUCCESS, "cycle %d comm %d: Barrier rc %d",
                       cycle, i, rc);
            if (p >= 2) {
                bcasts++;
                barriers++;
                accepted++;
            }
        }
        mpit_counters(&used);
        mpit_check_ran(&before, &used, bcasts, barriers, "200 communicators");
        if (mpit_expect == MPIT_EXPECT_CORE)
            MPIT_CHECK(used.teams - before.teams == accepted,
                       "cycle %d: %u teams alive for %u communicators", cycle,
                       used.teams - before.teams, accepted);
        if (mpit_expect == MPIT_EXPECT_MIXED)
            MPIT_CHECK(used.teams - before.teams <= accepted,
                       "cycle %d: %u teams alive for %u communicators", cycle,
                       used.teams - before.teams, accepted);
        if (mpit_expect == MPIT_EXPECT_FALLBACK)
            MPIT_CHECK(used.teams == before.teams,
                       "cycle %d: %u teams created beyond the budget", cycle,
                       used.teams - before.teams);
        for (int i = 0; i < NCOMMS; i++)
            MPI_Comm_free(&comms[i]);
        mpit_counters(&end);
        if (end.present)
            MPIT_CHECK(end.teams == start.teams,
                       "cycle %d: %u teams still alive after MPI_Comm_free",
                       cycle, end.teams - start.teams);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPIT_CHECK(leftover_segments() == 0,
               "segments of this job left in /dev/shm");
    free(buf);
    return mpit_finish();
}
