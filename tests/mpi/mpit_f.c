/*
 * The helpers of mpit.h for the Fortran test (tests/mpi/fortran_reduce.f90):
 * MPI_T has no Fortran binding, and mpit_init's argc/argv and the varargs
 * of mpit_check do not cross bind(C), so these wrap them.
 *
 * The reductions' counters: mpitf_counters_begin reads numacoll's
 * coll_numacoll_<collective>_count and _fallback_count for the six
 * collectives of colls[] (the Fortran program's K_ numbers follow that
 * order), mpitf_counters_end reads them again and, as tests/mpi/rscan.c
 * does, checks them against the calls the program made on this rank.
 */
#include <stdlib.h>
#include <string.h>

#include "mpit.h"

#define NC_F_N 6
static const char *const colls[NC_F_N] = {
    "allreduce", "reduce", "reduce_scatter_block", "reduce_scatter", "scan",
    "exscan"};
static mpit_named_t ctr, fb;
static unsigned long long ctr0[NC_F_N], fb0[NC_F_N];

void mpitf_init(const char *name)
{
    /* mpit keeps the pointer: a copy outlives the Fortran temporary */
    mpit_init(NULL, NULL, strdup(name));
}

void mpitf_check(int ok, const char *msg)
{
    MPIT_CHECK(ok, "%s", msg);
}

int mpitf_finish(void)
{
    return mpit_finish();
}

/* 1 under MPICH: the Fortran source has no preprocessor to ask
 * MPICH_VERSION (this file is built with the same MPI's mpicc). */
int mpitf_mpich(void)
{
#ifdef MPICH_VERSION
    return 1;
#else
    return 0;
#endif
}

void mpitf_counters_begin(void)
{
    char names[2][NC_F_N][64];
    const char *n[2][NC_F_N];
    for (int i = 0; i < NC_F_N; i++) {
        snprintf(names[0][i], 64, "coll_numacoll_%s_count", colls[i]);
        snprintf(names[1][i], 64, "coll_numacoll_%s_fallback_count", colls[i]);
        n[0][i] = names[0][i];
        n[1][i] = names[1][i];
    }
    mpit_named_open(&ctr, n[0], NC_F_N);
    mpit_named_open(&fb, n[1], NC_F_N);
    mpit_named_read(&ctr, ctr0);
    mpit_named_read(&fb, fb0);
}

/* made[i]: calls of colls[i] this rank made since mpitf_counters_begin
 * (each moved data). With NUMACOLL_EXPECT=core numacoll must have run all
 * of them and handed none back; rank 0 says what the counters show. */
void mpitf_counters_end(const long long made[NC_F_N])
{
    unsigned long long c1[NC_F_N], f1[NC_F_N];
    mpit_named_read(&ctr, c1);
    mpit_named_read(&fb, f1);
    if (mpit_expect == MPIT_EXPECT_CORE &&
        MPIT_CHECK(ctr.present && fb.present, "numacoll's MPI_T counters of "
                   "the reductions are missing (component not loaded?)")) {
        for (int i = 0; i < NC_F_N; i++) {
            unsigned long long ran = c1[i] - ctr0[i], back = f1[i] - fb0[i];
            if (mpit_rank == 0)
                printf("rank 0 %s: %lld calls, numacoll ran %llu, handed "
                       "back %llu\n", colls[i], made[i], ran, back);
            MPIT_CHECK(ran == (unsigned long long)made[i] && back == 0,
                       "%s: %lld calls, numacoll ran %llu and handed back "
                       "%llu; expected all run, none handed back", colls[i],
                       made[i], ran, back);
        }
        fflush(stdout);
    }
    mpit_named_close(&fb);
    mpit_named_close(&ctr);
}
