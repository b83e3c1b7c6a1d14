/*
 * The collectives libnumacoll-mpi serves: MPI_Barrier, MPI_Bcast,
 * MPI_Reduce, MPI_Allreduce, MPI_Allgather, MPI_Gather, MPI_Scatter,
 * MPI_Alltoall, MPI_Reduce_scatter_block, MPI_Scan and MPI_Exscan, blocking
 * (the v forms are in mpi/nm_vcoll.c, the nonblocking calls in
 * mpi/nm_nb.c). Every other MPI function is the MPI library's own
 * (docs/mpich.md says which and why).
 *
 * Each wrapper: the communicator's team (nm_team: none where numacoll does
 * not serve the communicator), the call's byte count, which MPI makes
 * equal on every rank, and the tuning table's decline rule; then the
 * user's buffers as runs of bytes (nm_span: in place where they are one,
 * packed otherwise), the core's call, and the buffers back. A call the
 * core hands back (no room to grow the team's staging) runs in the MPI on
 * every rank alike. What each rank does and what it costs is the core's
 * algorithm's (coll/ and docs/tuning.md); the wrapper adds an attribute
 * lookup and a few datatype queries, about 0.1 us, and a pack and an
 * unpack where a buffer is not one run.
 */
#include "mpi/nm.h"

#include <stdint.h>

int MPI_Barrier(MPI_Comm comm)
{
    numacoll_team_t *t = nm_team(comm);
    if (!t || nm_declines(t, NUMACOLL_COLL_BARRIER, 0))
        return NM_MPI(NUMACOLL_COLL_BARRIER, PMPI_Barrier(comm));
    int st = numacoll_barrier(t);
    if (nm_hands_back(st))
        return NM_MPI(NUMACOLL_COLL_BARRIER, PMPI_Barrier(comm));
    return nm_done(comm, t, NUMACOLL_COLL_BARRIER, "MPI_Barrier", st,
                   MPI_SUCCESS);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    numacoll_team_t *t = nm_team(comm);
    size_t bytes = 0;
    if (!t || root < 0 || root >= numacoll_team_size(t) ||
        nm_bytes(count, dt, &bytes) != 0 || bytes > INT32_MAX ||
        nm_declines(t, NUMACOLL_COLL_BCAST, bytes))
        return NM_MPI(NUMACOLL_COLL_BCAST,
                      PMPI_Bcast(buf, count, dt, root, comm));
    const int me = numacoll_team_rank(t);
    nm_span_t s;
    int rc = nm_span_begin(&s, buf, count, dt, me == root, comm);
    if (rc != MPI_SUCCESS) {
        nm_span_end(&s, 0, comm);
        return nm_local_fail(comm, rc);
    }
    int st = numacoll_bcast(t, s.run, bytes, root);
    if (nm_hands_back(st)) {
        nm_span_end(&s, 0, comm);
        return NM_MPI(NUMACOLL_COLL_BCAST,
                      PMPI_Bcast(buf, count, dt, root, comm));
    }
    rc = nm_span_end(&s, st == NUMACOLL_OK && me != root, comm);
    return nm_done(comm, t, NUMACOLL_COLL_BCAST, "MPI_Bcast", st, rc);
}

/* ---- reductions ------------------------------------------------------------ */

/* The plan of a reduction over total elements, or -1 where the call goes
 * to the MPI: not served, declined by the table, or a user op's element
 * larger than the team's staging takes. */
static int nm_red_serve(numacoll_team_t *t, numacoll_coll_t coll, int total,
                        MPI_Datatype dt, MPI_Op op, int allreduce,
                        nm_red_t *r, nm_red_ctx_t *ctx)
{
    if (!t || nm_red_plan(total, dt, op, r, ctx) != 0)
        return -1;
    const size_t nbytes = (size_t)total * r->elem_size;
    if (nm_declines(t, coll, nbytes))
        return -1;
    if (r->user && numacoll_team_max_elem(t, allreduce, nbytes) <
                       r->elem_size * (coll == NUMACOLL_COLL_REDUCE_SCATTER
                                           ? (size_t)numacoll_team_size(t)
                                           : 1))
        return -1;
    return 0;
}

static const void *nm_send(const void *sendbuf)
{
    return sendbuf == MPI_IN_PLACE ? NUMACOLL_IN_PLACE : sendbuf;
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt,
               MPI_Op op, int root, MPI_Comm comm)
{
    numacoll_team_t *t = nm_team(comm);
    nm_red_t r;
    nm_red_ctx_t ctx;
    if (!t || root < 0 || root >= numacoll_team_size(t) ||
        nm_red_serve(t, NUMACOLL_COLL_REDUCE, count, dt, op, 0, &r, &ctx))
        return NM_MPI(NUMACOLL_COLL_REDUCE, PMPI_Reduce(sendbuf, recvbuf,
                                                        count, dt, op, root,
                                                        comm));
    const int me = numacoll_team_rank(t);
    /* recvbuf means nothing off the root (it may be anything there) */
    void *rbuf = me == root ? recvbuf : NULL;
    const void *sbuf = me == root ? nm_send(sendbuf) : sendbuf;
    int st = r.user ? numacoll_reduce_user(t, sbuf, rbuf, (size_t)count,
                                           r.elem_size, r.fn, r.ctx,
                                           r.commutative, root)
                    : numacoll_reduce(t, sbuf, rbuf, (size_t)count, r.dt,
                                      r.op, root);
    if (nm_hands_back(st))
        return NM_MPI(NUMACOLL_COLL_REDUCE, PMPI_Reduce(sendbuf, recvbuf,
                                                        count, dt, op, root,
                                                        comm));
    return nm_done(comm, t, NUMACOLL_COLL_REDUCE, "MPI_Reduce", st,
                   MPI_SUCCESS);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count,
                  MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    numacoll_team_t *t = nm_team(comm);
    nm_red_t r;
    nm_red_ctx_t ctx;
    if (nm_red_serve(t, NUMACOLL_COLL_ALLREDUCE, count, dt, op, 1, &r, &ctx))
        return NM_MPI(NUMACOLL_COLL_ALLREDUCE,
                      PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm));
    const void *sbuf = nm_send(sendbuf);
    int st = r.user ? numacoll_allreduce_user(t, sbuf, recvbuf, (size_t)count,
                                              r.elem_size, r.fn, r.ctx,
                                              r.commutative)
                    : numacoll_allreduce(t, sbuf, recvbuf, (size_t)count,
                                         r.dt, r.op);
    if (nm_hands_back(st))
        return NM_MPI(NUMACOLL_COLL_ALLREDUCE,
                      PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm));
    return nm_done(comm, t, NUMACOLL_COLL_ALLREDUCE, "MPI_Allreduce", st,
                   MPI_SUCCESS);
}

int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf,
                             int recvcount, MPI_Datatype dt, MPI_Op op,
                             MPI_Comm comm)
{
    numacoll_team_t *t = nm_team(comm);
    nm_red_t r;
    nm_red_ctx_t ctx;
    const long long total =
        t ? (long long)recvcount * numacoll_team_size(t) : 0;
    if (!t || total > INT32_MAX ||
        nm_red_serve(t, NUMACOLL_COLL_REDUCE_SCATTER, (int)total, dt, op, 1,
                     &r, &ctx))
        return NM_MPI(NUMACOLL_COLL_REDUCE_SCATTER,
                      PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount,
                                                dt, op, comm));
    const void *sbuf = nm_send(sendbuf);
    int st = r.user ? numacoll_reduce_scatter_block_user(
                          t, sbuf, recvbuf, (size_t)recvcount, r.elem_size,
                          r.fn, r.ctx, r.commutative)
                    : numacoll_reduce_scatter_block(t, sbuf, recvbuf,
                                                    (size_t)recvcount, r.dt,
                                                    r.op);
    if (nm_hands_back(st))
        return NM_MPI(NUMACOLL_COLL_REDUCE_SCATTER,
                      PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount,
                                                dt, op, comm));
    return nm_done(comm, t, NUMACOLL_COLL_REDUCE_SCATTER,
                   "MPI_Reduce_scatter_block", st, MPI_SUCCESS);
}

/* Scan and Exscan: one body, the core's entry and the MPI's by `ex`. */
static int nm_scan(int ex, const void *sendbuf, void *recvbuf, int count,
                   MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    const numacoll_coll_t coll =
        ex ? NUMACOLL_COLL_EXSCAN : NUMACOLL_COLL_SCAN;
    numacoll_team_t *t = nm_team(comm);
    nm_red_t r;
    nm_red_ctx_t ctx;
    int st = NUMACOLL_ERR_UNSUPPORTED;
    if (!nm_red_serve(t, coll, count, dt, op, 1, &r, &ctx)) {
        const void *sbuf = nm_send(sendbuf);
        const size_t n = (size_t)count;
        if (r.user)
            st = (ex ? numacoll_exscan_user : numacoll_scan_user)(
                t, sbuf, recvbuf, n, r.elem_size, r.fn, r.ctx,
                r.commutative);
        else
            st = (ex ? numacoll_exscan : numacoll_scan)(t, sbuf, recvbuf, n,
                                                        r.dt, r.op);
    }
    if (nm_hands_back(st))
        return NM_MPI(coll, ex ? PMPI_Exscan(sendbuf, recvbuf, count, dt, op,
                                             comm)
                               : PMPI_Scan(sendbuf, recvbuf, count, dt, op,
                                           comm));
    return nm_done(comm, t, coll, ex ? "MPI_Exscan" : "MPI_Scan", st,
                   MPI_SUCCESS);
}

int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt,
             MPI_Op op, MPI_Comm comm)
{
    return nm_scan(0, sendbuf, recvbuf, count, dt, op, comm);
}

int MPI_Exscan(const void *sendbuf, void *recvbuf, int count,
               MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    return nm_scan(1, sendbuf, recvbuf, count, dt, op, comm);
}

/* ---- the gathers ------------------------------------------------------------ */

/* The two sides of a gather-like call as runs of bytes: the send side
 * (count x type, packed where needed; none where in place) and the
 * receive side (filled first when it holds the in-place data; drained
 * after). */
typedef struct nm_sides {
    nm_span_t s, r;
    int has_s, has_r;
} nm_sides_t;

static int nm_sides_begin(nm_sides_t *x, const void *sbuf, int scount,
                          MPI_Datatype stype, void *rbuf, int rcount,
                          MPI_Datatype rtype, int fill_r, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    if (x->has_s)
        rc = nm_span_begin(&x->s, sbuf, scount, stype, 1, comm);
    if (rc == MPI_SUCCESS && x->has_r)
        rc = nm_span_begin(&x->r, rbuf, rcount, rtype, fill_r, comm);
    else
        x->has_r = 0;
    return rc;
}

static int nm_sides_end(nm_sides_t *x, int drain, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    if (x->has_s)
        (void)nm_span_end(&x->s, 0, comm);
    if (x->has_r)
        rc = nm_span_end(&x->r, drain, comm);
    return rc;
}

/* block bytes of a rank's count x type, or SIZE_MAX for a bad count or
 * type (which the MPI then reports) */
static size_t nm_block(int count, MPI_Datatype dt)
{
    size_t b;
    return nm_bytes(count, dt, &b) == 0 ? b : SIZE_MAX;
}

/* p blocks of count x type as one count, where p blocks of `block` bytes
 * fit an int (a temporary is packed with PMPI_Pack's int sizes): the
 * test rests on the block, equal on every rank, so all ranks decide alike;
 * -1 beyond (the call goes to the MPI everywhere). A count of p blocks of
 * count elements of at least one byte fits then too. */
static int nm_times(int count, int p, size_t block)
{
    if (block == SIZE_MAX || block > INT32_MAX / (size_t)p)
        return -1;
    return block ? count * p : 0;
}

/* The same test alone, where this rank's count means nothing (off the
 * root): 0 when p blocks fit, -1 otherwise. */
static int nm_fits(int p, size_t block)
{
    return nm_times(0, p, block) < 0 ? -1 : 0;
}

int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  MPI_Comm comm)
{
    numacoll_team_t *t = nm_team(comm);
    const size_t block = nm_block(recvcount, recvtype);
    const int all =
        t ? nm_times(recvcount, numacoll_team_size(t), block) : -1;
    if (!t || block == SIZE_MAX || all < 0 ||
        nm_declines(t, NUMACOLL_COLL_ALLGATHER, block))
        return NM_MPI(NUMACOLL_COLL_ALLGATHER,
                      PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf,
                                     recvcount, recvtype, comm));
    const int in_place = sendbuf == MPI_IN_PLACE;
    nm_sides_t x = {.has_s = !in_place, .has_r = 1};
    int rc = nm_sides_begin(&x, sendbuf, sendcount, sendtype, recvbuf, all,
                            recvtype, in_place, comm);
    if (rc == MPI_SUCCESS && x.has_s && x.s.bytes != block)
        rc = MPI_ERR_TRUNCATE;
    if (rc != MPI_SUCCESS) {
        nm_sides_end(&x, 0, comm);
        return nm_local_fail(comm, rc);
    }
    int st = numacoll_allgather(t, in_place ? NUMACOLL_IN_PLACE : x.s.run,
                                x.r.run, block);
    if (nm_hands_back(st)) {
        nm_sides_end(&x, 0, comm);
        return NM_MPI(NUMACOLL_COLL_ALLGATHER,
                      PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf,
                                     recvcount, recvtype, comm));
    }
    rc = nm_sides_end(&x, st == NUMACOLL_OK, comm);
    return nm_done(comm, t, NUMACOLL_COLL_ALLGATHER, "MPI_Allgather", st, rc);
}

int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
               void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
               MPI_Comm comm)
{
    numacoll_team_t *t = nm_team(comm);
    const int me = t ? numacoll_team_rank(t) : -1;
    const int p = t ? numacoll_team_size(t) : 0;
    const int in_place = me == root && sendbuf == MPI_IN_PLACE;
    /* the block as each rank knows it: the root's receive side, the
     * others' send side (MPI makes them equal) */
    const size_t block = me == root ? nm_block(recvcount, recvtype)
                                    : nm_block(sendcount, sendtype);
    const int all = !t ? -1 : me == root ? nm_times(recvcount, p, block)
                                         : nm_fits(p, block);
    if (!t || root < 0 || root >= p || all < 0 ||
        nm_declines(t, NUMACOLL_COLL_GATHER, block))
        return NM_MPI(NUMACOLL_COLL_GATHER,
                      PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf,
                                  recvcount, recvtype, root, comm));
    nm_sides_t x = {.has_s = !in_place, .has_r = me == root};
    int rc = nm_sides_begin(&x, sendbuf, sendcount, sendtype, recvbuf, all,
                            recvtype, in_place, comm);
    if (rc == MPI_SUCCESS && x.has_s && x.s.bytes != block)
        rc = MPI_ERR_TRUNCATE;
    if (rc != MPI_SUCCESS) {
        nm_sides_end(&x, 0, comm);
        return nm_local_fail(comm, rc);
    }
    int st = numacoll_gather(t, in_place ? NUMACOLL_IN_PLACE : x.s.run,
                             x.has_r ? x.r.run : NULL, block, root);
    if (nm_hands_back(st)) {
        nm_sides_end(&x, 0, comm);
        return NM_MPI(NUMACOLL_COLL_GATHER,
                      PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf,
                                  recvcount, recvtype, root, comm));
    }
    rc = nm_sides_end(&x, st == NUMACOLL_OK, comm);
    return nm_done(comm, t, NUMACOLL_COLL_GATHER, "MPI_Gather", st, rc);
}

int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                MPI_Comm comm)
{
    numacoll_team_t *t = nm_team(comm);
    const int me = t ? numacoll_team_rank(t) : -1;
    const int p = t ? numacoll_team_size(t) : 0;
    const int in_place = me == root && recvbuf == MPI_IN_PLACE;
    const size_t block = me == root ? nm_block(sendcount, sendtype)
                                    : nm_block(recvcount, recvtype);
    const int all = !t ? -1 : me == root ? nm_times(sendcount, p, block)
                                         : nm_fits(p, block);
    if (!t || root < 0 || root >= p || all < 0 ||
        nm_declines(t, NUMACOLL_COLL_SCATTER, block))
        return NM_MPI(NUMACOLL_COLL_SCATTER,
                      PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf,
                                   recvcount, recvtype, root, comm));
    nm_sides_t x = {.has_s = me == root, .has_r = !in_place};
    int rc = nm_sides_begin(&x, sendbuf, all, sendtype, recvbuf, recvcount,
                            recvtype, 0, comm);
    if (rc == MPI_SUCCESS && x.has_r && x.r.bytes != block)
        rc = MPI_ERR_TRUNCATE;
    if (rc != MPI_SUCCESS) {
        nm_sides_end(&x, 0, comm);
        return nm_local_fail(comm, rc);
    }
    int st = numacoll_scatter(t, x.has_s ? x.s.run : NULL,
                              in_place ? (void *)(uintptr_t)NUMACOLL_IN_PLACE
                                       : x.r.run,
                              block, root);
    if (nm_hands_back(st)) {
        nm_sides_end(&x, 0, comm);
        return NM_MPI(NUMACOLL_COLL_SCATTER,
                      PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf,
                                   recvcount, recvtype, root, comm));
    }
    rc = nm_sides_end(&x, st == NUMACOLL_OK, comm);
    return nm_done(comm, t, NUMACOLL_COLL_SCATTER, "MPI_Scatter", st, rc);
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 MPI_Comm comm)
{
    numacoll_team_t *t = nm_team(comm);
    const int p = t ? numacoll_team_size(t) : 0;
    const size_t block = nm_block(recvcount, recvtype);
    const int all_r = t ? nm_times(recvcount, p, block) : -1;
    const int in_place = sendbuf == MPI_IN_PLACE;
    const int all_s = in_place || !t ? 0 : nm_times(sendcount, p, block);
    if (!t || all_r < 0 || all_s < 0 ||
        nm_declines(t, NUMACOLL_COLL_ALLTOALL, block))
        return NM_MPI(NUMACOLL_COLL_ALLTOALL,
                      PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf,
                                    recvcount, recvtype, comm));
    nm_sides_t x = {.has_s = !in_place, .has_r = 1};
    int rc = nm_sides_begin(&x, sendbuf, all_s, sendtype, recvbuf, all_r,
                            recvtype, in_place, comm);
    if (rc == MPI_SUCCESS && x.has_s && x.s.bytes != x.r.bytes)
        rc = MPI_ERR_TRUNCATE;
    if (rc != MPI_SUCCESS) {
        nm_sides_end(&x, 0, comm);
        return nm_local_fail(comm, rc);
    }
    int st = numacoll_alltoall(t, in_place ? NUMACOLL_IN_PLACE : x.s.run,
                               x.r.run, block);
    if (nm_hands_back(st)) {
        nm_sides_end(&x, 0, comm);
        return NM_MPI(NUMACOLL_COLL_ALLTOALL,
                      PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf,
                                    recvcount, recvtype, comm));
    }
    rc = nm_sides_end(&x, st == NUMACOLL_OK, comm);
    return nm_done(comm, t, NUMACOLL_COLL_ALLTOALL, "MPI_Alltoall", st, rc);
}
