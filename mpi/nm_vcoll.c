/*
 * The v forms libnumacoll-mpi serves: MPI_Allgatherv, MPI_Gatherv,
 * MPI_Scatterv, MPI_Alltoallv and MPI_Reduce_scatter, blocking. As in
 * mpi/nm_coll.c: the communicator's team, the decline rule, the buffers as
 * bytes (nm_vspan: the user's own where elements lie back to back, else
 * the blocks packed one after the other in a temporary), the core's call,
 * the buffers back. Counts and displacements become bytes in one array
 * per call (2p size_t). What each rank does and costs is the core's
 * algorithm's (coll/gather/ and docs/tuning.md).
 */
#include "mpi/nm.h"

#include <stdint.h>
#include <stdlib.h>

int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                   void *recvbuf, const int recvcounts[], const int displs[],
                   MPI_Datatype recvtype, MPI_Comm comm)
{
    numacoll_team_t *t = nm_team(comm);
    const int p = t ? numacoll_team_size(t) : 0;
    int rsize = 0;
    size_t largest = 0;
    if (t && PMPI_Type_size(recvtype, &rsize) == MPI_SUCCESS)
        for (int j = 0; j < p; j++)
            if (recvcounts[j] > 0 &&
                (size_t)recvcounts[j] * (size_t)rsize > largest)
                largest = (size_t)recvcounts[j] * (size_t)rsize;
    /* a block packs with PMPI_Pack's int sizes; recvcounts are the same
     * on every rank, so is the answer */
    if (!t || largest > INT32_MAX ||
        nm_declines(t, NUMACOLL_COLL_ALLGATHER, largest))
        return NM_MPI(NUMACOLL_COLL_ALLGATHER,
                      PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf,
                                      recvcounts, displs, recvtype, comm));
    const int me = numacoll_team_rank(t);
    const int in_place = sendbuf == MPI_IN_PLACE;
    nm_vspan_t r;
    nm_span_t s = {0};
    int rc = nm_vspan_begin(&r, recvbuf, recvcounts, displs, recvtype, p,
                            in_place ? me : NM_FILL_NONE, comm);
    if (rc == MPI_SUCCESS && !in_place) {
        rc = nm_span_begin(&s, sendbuf, sendcount, sendtype, 1, comm);
        if (rc == MPI_SUCCESS && s.bytes != r.len[me])
            rc = MPI_ERR_TRUNCATE;
    }
    if (rc != MPI_SUCCESS) {
        nm_span_end(&s, 0, comm);
        nm_vspan_end(&r, 0, -1, comm);
        return nm_local_fail(comm, rc);
    }
    int st = numacoll_allgatherv(t, in_place ? NUMACOLL_IN_PLACE : s.run,
                                 r.len[me], r.run, r.len, r.off);
    nm_span_end(&s, 0, comm);
    if (nm_hands_back(st)) {
        nm_vspan_end(&r, 0, -1, comm);
        return NM_MPI(NUMACOLL_COLL_ALLGATHER,
                      PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf,
                                      recvcounts, displs, recvtype, comm));
    }
    rc = nm_vspan_end(&r, st == NUMACOLL_OK, in_place ? me : -1, comm);
    return nm_done(comm, t, NUMACOLL_COLL_ALLGATHER, "MPI_Allgatherv", st,
                    rc);
}

int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, const int recvcounts[], const int displs[],
                MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    numacoll_team_t *t = nm_team(comm);
    const int p = t ? numacoll_team_size(t) : 0;
    if (!t || root < 0 || root >= p ||
        nm_declines(t, NUMACOLL_COLL_GATHER, SIZE_MAX))
        return NM_MPI(NUMACOLL_COLL_GATHER,
                      PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf,
                                   recvcounts, displs, recvtype, root, comm));
    const int me = numacoll_team_rank(t);
    const int in_place = me == root && sendbuf == MPI_IN_PLACE;
    nm_vspan_t r = {0};
    nm_span_t s = {0};
    int rc = MPI_SUCCESS;
    if (me == root)
        rc = nm_vspan_begin(&r, recvbuf, recvcounts, displs, recvtype, p,
                            in_place ? me : NM_FILL_NONE, comm);
    if (rc == MPI_SUCCESS && !in_place)
        rc = nm_span_begin(&s, sendbuf, sendcount, sendtype, 1, comm);
    if (rc == MPI_SUCCESS && me == root && !in_place && s.bytes != r.len[me])
        rc = MPI_ERR_TRUNCATE;
    if (rc != MPI_SUCCESS) {
        nm_span_end(&s, 0, comm);
        nm_vspan_end(&r, 0, -1, comm);
        return nm_local_fail(comm, rc);
    }
    int st = numacoll_gatherv(t, in_place ? NUMACOLL_IN_PLACE : s.run,
                              in_place ? r.len[me] : s.bytes,
                              me == root ? r.run : NULL, r.len, r.off, root);
    nm_span_end(&s, 0, comm);
    if (nm_hands_back(st)) {
        nm_vspan_end(&r, 0, -1, comm);
        return NM_MPI(NUMACOLL_COLL_GATHER,
                      PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf,
                                   recvcounts, displs, recvtype, root, comm));
    }
    rc = nm_vspan_end(&r, st == NUMACOLL_OK, in_place ? me : -1, comm);
    return nm_done(comm, t, NUMACOLL_COLL_GATHER, "MPI_Gatherv", st, rc);
}

int MPI_Scatterv(const void *sendbuf, const int sendcounts[],
                 const int displs[], MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    numacoll_team_t *t = nm_team(comm);
    const int p = t ? numacoll_team_size(t) : 0;
    if (!t || root < 0 || root >= p ||
        nm_declines(t, NUMACOLL_COLL_SCATTER, SIZE_MAX))
        return NM_MPI(NUMACOLL_COLL_SCATTER,
                      PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype,
                                    recvbuf, recvcount, recvtype, root, comm));
    const int me = numacoll_team_rank(t);
    const int in_place = me == root && recvbuf == MPI_IN_PLACE;
    nm_vspan_t s = {0};
    nm_span_t r = {0};
    int rc = MPI_SUCCESS;
    if (me == root)
        rc = nm_vspan_begin(&s, sendbuf, sendcounts, displs, sendtype, p,
                            NM_FILL_ALL, comm);
    if (rc == MPI_SUCCESS && !in_place)
        rc = nm_span_begin(&r, recvbuf, recvcount, recvtype, 0, comm);
    if (rc == MPI_SUCCESS && me == root && !in_place && r.bytes != s.len[me])
        rc = MPI_ERR_TRUNCATE;
    if (rc != MPI_SUCCESS) {
        nm_span_end(&r, 0, comm);
        nm_vspan_end(&s, 0, -1, comm);
        return nm_local_fail(comm, rc);
    }
    int st = numacoll_scatterv(
        t, me == root ? s.run : NULL, s.len, s.off,
        in_place ? (void *)(uintptr_t)NUMACOLL_IN_PLACE : r.run,
        in_place ? s.len[me] : r.bytes, root);
    nm_vspan_end(&s, 0, -1, comm);
    if (nm_hands_back(st)) {
        nm_span_end(&r, 0, comm);
        return NM_MPI(NUMACOLL_COLL_SCATTER,
                      PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype,
                                    recvbuf, recvcount, recvtype, root, comm));
    }
    rc = nm_span_end(&r, st == NUMACOLL_OK, comm);
    return nm_done(comm, t, NUMACOLL_COLL_SCATTER, "MPI_Scatterv", st, rc);
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[],
                  const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                  const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm)
{
    numacoll_team_t *t = nm_team(comm);
    const int p = t ? numacoll_team_size(t) : 0;
    if (!t || nm_declines(t, NUMACOLL_COLL_ALLTOALL, SIZE_MAX))
        return NM_MPI(NUMACOLL_COLL_ALLTOALL,
                      PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype,
                                     recvbuf, recvcounts, rdispls, recvtype,
                                     comm));
    const int in_place = sendbuf == MPI_IN_PLACE;
    nm_vspan_t s = {0}, r;
    int rc = nm_vspan_begin(&r, recvbuf, recvcounts, rdispls, recvtype, p,
                            in_place ? NM_FILL_ALL : NM_FILL_NONE, comm);
    if (rc == MPI_SUCCESS && !in_place)
        rc = nm_vspan_begin(&s, sendbuf, sendcounts, sdispls, sendtype, p,
                            NM_FILL_ALL, comm);
    if (rc != MPI_SUCCESS) {
        nm_vspan_end(&s, 0, -1, comm);
        nm_vspan_end(&r, 0, -1, comm);
        return nm_local_fail(comm, rc);
    }
    int st = numacoll_alltoallv(t, in_place ? NUMACOLL_IN_PLACE : s.run,
                                in_place ? NULL : s.len,
                                in_place ? NULL : s.off, r.run, r.len, r.off);
    nm_vspan_end(&s, 0, -1, comm);
    if (nm_hands_back(st)) {
        nm_vspan_end(&r, 0, -1, comm);
        return NM_MPI(NUMACOLL_COLL_ALLTOALL,
                      PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype,
                                     recvbuf, recvcounts, rdispls, recvtype,
                                     comm));
    }
    rc = nm_vspan_end(&r, st == NUMACOLL_OK, -1, comm);
    return nm_done(comm, t, NUMACOLL_COLL_ALLTOALL, "MPI_Alltoallv", st, rc);
}

int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf,
                       const int recvcounts[], MPI_Datatype dt, MPI_Op op,
                       MPI_Comm comm)
{
    numacoll_team_t *t = nm_team(comm);
    const int p = t ? numacoll_team_size(t) : 0;
    long long total = 0;
    for (int j = 0; t && j < p; j++)
        total += recvcounts[j] < 0 ? (long long)INT32_MAX + 1 : recvcounts[j];
    nm_red_t r;
    nm_red_ctx_t ctx;
    if (!t || total > INT32_MAX ||
        nm_red_plan((int)total, dt, op, &r, &ctx) != 0 ||
        nm_declines(t, NUMACOLL_COLL_REDUCE_SCATTER,
                    (size_t)total * r.elem_size) ||
        (r.user && numacoll_team_max_elem(t, 1, (size_t)total * r.elem_size) <
                       r.elem_size * (size_t)p))
        return NM_MPI(NUMACOLL_COLL_REDUCE_SCATTER,
                      PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, dt,
                                          op, comm));
    size_t *counts = malloc((size_t)p * sizeof *counts);
    if (!counts)
        return nm_local_fail(comm, MPI_ERR_NO_MEM);
    for (int j = 0; j < p; j++)
        counts[j] = (size_t)recvcounts[j];
    const void *sbuf = sendbuf == MPI_IN_PLACE ? NUMACOLL_IN_PLACE : sendbuf;
    int st = r.user ? numacoll_reduce_scatter_user(t, sbuf, recvbuf, counts,
                                                   r.elem_size, r.fn, r.ctx,
                                                   r.commutative)
                    : numacoll_reduce_scatter(t, sbuf, recvbuf, counts, r.dt,
                                              r.op);
    free(counts);
    if (nm_hands_back(st))
        return NM_MPI(NUMACOLL_COLL_REDUCE_SCATTER,
                      PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, dt,
                                          op, comm));
    return nm_done(comm, t, NUMACOLL_COLL_REDUCE_SCATTER,
                    "MPI_Reduce_scatter", st, MPI_SUCCESS);
}
