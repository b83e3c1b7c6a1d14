/*
 * numacoll-bench: Bcast, Reduce, Allreduce and Barrier over message sizes,
 * next to the physical limits measured in the same run (memcpy of the same
 * size on one core; one cache line between two processes).
 *
 * Built twice from the same sources:
 *   numacoll-bench      forks its own ranks, times numacoll teams
 *                       (bench_team.c), no MPI needed;
 *   numacoll-bench-mpi  mpicc -DNCB_BUILD_MPI, run under mpirun, times MPI_Bcast
 *                       etc. through whichever coll component Open MPI
 *                       selected (bench_mpi.c); bench/compare-ompi.sh runs
 *                       it per component and merges the results.
 * Methodology and every option: docs/bench.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

#ifdef NCB_BUILD_MPI
#define MODE NCB_MPI
#define ME "numacoll-bench-mpi"
#else
#define MODE NCB_STANDALONE
#define ME "numacoll-bench"
#endif

/* Under mpirun every rank parses the same arguments: only the first
 * speaks, so an error reads once. */
static int speaks(void)
{
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    return !r || strcmp(r, "0") == 0;
}

int main(int argc, char **argv)
{
    ncb_opts_t o;
    char err[512];
    int rc = ncb_parse(argc, argv, MODE, &o, err, sizeof err);
    if (rc == 2) {
        if (speaks())
            fprintf(stderr, ME ": %s\n(" ME " --help lists the options)\n",
                    err);
        return 2;
    }
    if (rc == 1) {
        if (!speaks())
            return 0;
        if (o.help)
            ncb_usage(stdout, MODE);
        else if (o.list_algs)
            ncb_backend_list_algs(stdout);
        else
            ncb_backend_list_params(stdout);
        return 0;
    }
    if (o.merge)
        return ncb_merge(&o);
    return ncb_backend_main(&o, argc, argv);
}
