/*
 * A container's /dev/shm: N communicators (default 300) alive at once, each
 * used by an 8-byte Bcast and Allreduce, then a 1 MiB Bcast and Allreduce,
 * every result checked. Teams start with their control pages and grow
 * their staging at the first 1 MiB call (docs/usage.md, "Memory"); where
 * /dev/shm (tests/mpi/run.sh mounts a 64 MiB one) or node_budget has no
 * room, that call goes to the previous component, counted in MPI_T
 * coll_numacoll_nospace_count, and said once per process.
 *
 * Rank 0 prints one line of figures: the teams alive, the 1 MiB calls
 * numacoll served and those handed back for room, and /dev/shm's use.
 * With NUMACOLL_EXPECT=core every communicator must have a team and every
 * small call must have run in the core.
 *
 *   mpirun -np 8 tests/mpi/build/shm_room [N]
 */
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "mpit.h"

#define BIG (1 << 20)

static unsigned long long shm_used(void)
{
    struct statvfs sv;
    if (statvfs("/dev/shm", &sv) != 0)
        return 0;
    return (unsigned long long)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
}

int main(int argc, char **argv)
{
    mpit_init(&argc, &argv, "shm_room");
    const int n = argc > 1 ? atoi(argv[1]) : 300;
    MPI_Comm *comms = calloc((size_t)(n > 0 ? n : 1), sizeof *comms);
    unsigned char *buf = malloc(BIG), *want = malloc(BIG);
    int32_t *iv = malloc(BIG), *ir = malloc(BIG);
    if (n < 1 || !comms || !buf || !want || !iv || !ir)
        MPI_Abort(MPI_COMM_WORLD, 2);
    static const char *const names[] = {"coll_numacoll_nospace_count",
                                        "coll_numacoll_bcast_count",
                                        "coll_numacoll_allreduce_count"};
    mpit_named_t s;
    mpit_named_open(&s, names, 3);
    unsigned long long v0[3] = {0}, v1[3] = {0};
    mpit_counters_t c0, c1;
    MPI_Barrier(MPI_COMM_WORLD);
    const unsigned long long shm0 = shm_used();
    mpit_named_read(&s, v0);
    mpit_counters(&c0);
    for (int i = 0; i < n; i++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]);
    const int p = mpit_size, me = mpit_rank;
    for (int i = 0; i < n; i++) {
        const int root = i % p;
        /* small: the control lines */
        long b8 = me == root ? 1000L + i : 0, a8 = me + 1L, s8 = 0;
        int rc = MPI_Bcast(&b8, 1, MPI_LONG, root, comms[i]);
        MPIT_CHECK(rc == MPI_SUCCESS && b8 == 1000L + i,
                   "comm %d: 8-byte Bcast rc %d value %ld", i, rc, b8);
        rc = MPI_Allreduce(&a8, &s8, 1, MPI_LONG, MPI_SUM, comms[i]);
        MPIT_CHECK(rc == MPI_SUCCESS && s8 == (long)p * (p + 1) / 2,
                   "comm %d: 8-byte Allreduce rc %d sum %ld", i, rc, s8);
        /* 1 MiB: the staging, grown here or handed back */
        mpit_fill(want, BIG, (unsigned)i);
        if (me == root)
            memcpy(buf, want, BIG);
        else
            memset(buf, 0, BIG);
        rc = MPI_Bcast(buf, BIG, MPI_BYTE, root, comms[i]);
        MPIT_CHECK(rc == MPI_SUCCESS && memcmp(buf, want, BIG) == 0,
                   "comm %d: 1 MiB Bcast rc %d or wrong data", i, rc);
        const int cnt = BIG / 4;
        for (int k = 0; k < cnt; k++)
            iv[k] = (int32_t)(k % 1000) * (me + 1) + i;
        rc = MPI_Allreduce(iv, ir, cnt, MPI_INT32_T, MPI_SUM, comms[i]);
        int ok = rc == MPI_SUCCESS;
        for (int k = 0; ok && k < cnt; k++)
            ok = ir[k] == (int32_t)(k % 1000) * (p * (p + 1) / 2) + p * i;
        MPIT_CHECK(ok, "comm %d: 1 MiB Allreduce rc %d or wrong sum", i, rc);
    }
    mpit_named_read(&s, v1);
    mpit_counters(&c1);
    const unsigned teams = c1.teams - c0.teams;
    MPI_Barrier(MPI_COMM_WORLD);
    const unsigned long long shm1 = shm_used();
    if (mpit_expect == MPIT_EXPECT_CORE) {
        MPIT_CHECK(s.present && c1.present, "numacoll's MPI_T counters");
        MPIT_CHECK(teams >= (unsigned)n, "%u teams for %d communicators",
                   teams, n);
        /* every small Bcast and Allreduce at least */
        MPIT_CHECK(v1[1] - v0[1] >= (unsigned long long)n &&
                       v1[2] - v0[2] >= (unsigned long long)n,
                   "%llu Bcasts, %llu Allreduces served for %d "
                   "communicators", v1[1] - v0[1], v1[2] - v0[2], n);
    }
    if (me == 0)
        printf("shm_room np=%d: %d communicators, %u teams; served %llu "
               "Bcasts, %llu Allreduces of %d each; handed back for room: "
               "%llu; /dev/shm %llu KiB before, %llu KiB with them alive\n",
               p, n, teams, v1[1] - v0[1], v1[2] - v0[2], 2 * n,
               v1[0] - v0[0], shm0 / 1024, shm1 / 1024);
    mpit_named_close(&s);
    for (int i = 0; i < n; i++)
        MPI_Comm_free(&comms[i]);
    free(comms);
    free(buf);
    free(want);
    free(iv);
    free(ir);
    return mpit_finish();
}
