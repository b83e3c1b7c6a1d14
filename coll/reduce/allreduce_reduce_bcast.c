/*
 * Allreduce as Reduce to rank 0 followed by Bcast from rank 0, for small
 * and medium messages (the built-in table: above the 56 inline bytes,
 * below 1 KiB): two waves along trees, each pipelined.
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
 * slots and rank 0's buffers. Tuned by the rule's f, s, k for the Reduce
 * and the Bcast's own rule for the size.
 */
#include "coll/reduce/reduce.h"

int nc__allreduce_reduce_bcast(numacoll_team_t *t, const nc__choice_t *ch,
                               const nc__red_op_t *op, const void *own,
                               void *recv, size_t count)
{
    int rc = nc__reduce_pipelined(t, ch, op, own, recv, count, 0);
    if (rc != NUMACOLL_OK)
        return rc;
    nc__io_t io = {.buf = recv};
    /* the Bcast rule for the size (team.c), without counting a Bcast */
    return nc__bcast_run(t, count * op->elem, 0, &io);
}
