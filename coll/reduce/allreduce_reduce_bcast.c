/*
 * Allreduce as Reduce to rank 0 followed by Bcast from rank 0, for small
 * and medium messages (above the 56 inline bytes, below
 * allreduce_threshold): two waves along trees, each pipelined.
 *
 *  root (rank 0): the Reduce root (folds its children's partial results
 *          into its receive buffer), then the Bcast root.
 *  inner / leaf: as in coll/reduce/reduce_pipelined.c, then as in the
 *          Bcast (coll/bcast/): receive the result into recvbuf.
 * In place needs nothing extra: a rank's contribution has been staged or
 * folded before the Bcast overwrites its receive buffer.
 *
 * Cost: T_reduce(m) + T_bcast(m), both in their files; roughly
 *   2*d*t_l + 2*m*t for m below one fragment (d the tree depths).
 * Shared slots: the Reduce's staging slots, then the Bcast's bank, control
 * slots and rank 0's buffers. Tuned by the parameters of both, and
 * allreduce_threshold (where the reduce-scatter/allgather takes over).
 */
#include "coll/reduce/reduce.h"

int nc__allreduce_reduce_bcast(numacoll_team_t *t, const nc__red_op_t *op,
                               const void *own, void *recv, size_t count)
{
    int rc = nc__reduce_pipelined(t, op, own, recv, count, 0);
    if (rc != NUMACOLL_OK)
        return rc;
    size_t nbytes = count * op->elem;
    nc__io_t io = {.buf = recv};
    /* the Bcast dispatch's own rule (team.c), without counting a Bcast */
    rc = nbytes <= NC_INLINE_MAX ? nc__bcast_inline(t, nbytes, 0, &io)
                                 : nc__bcast_pipelined(t, nbytes, 0, &io);
    return rc;
}
