/*
 * Allreduce as Reduce to rank 0 followed by Bcast from rank 0 (the
 * built-in table does not take it; a tuning table may, and elements over
 * an inline line's 56 bytes come here from the inline rules): two waves
 * along trees, each pipelined. The Bcast carries the result up to its
 * last element's last field (nc__res_bytes).
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

/* As steps: o->sub 0 runs the Reduce (to root 0), then o->bc becomes the
 * Bcast of the result and sub 1 runs it; each resumes where it waited. */
int nc__allreduce_reduce_bcast_step(numacoll_team_t *t, nc__op_t *o)
{
    if (o->sub == 0) {
        o->root = 0;
        int rc = nc__reduce_pipelined_step(t, o);
        if (rc != NUMACOLL_OK)
            return rc;
        /* the Bcast rule for the size (coll/bcast/bcast.c), uncounted;
         * not the last element's padding, which may lie past the
         * receive buffer's end (nc__res_bytes) */
        nc__io_t io = {.buf = o->recv};
        nc__op_t b;
        nc__bcast_op(t, &b, o->count ? nc__res_bytes(&o->rop, o->count) : 0,
                     0, &io);
        o->bc = b.bc;
        o->sub = 1;
        o->phase = 0;
    }
    return nc__bcast_step(t, o);
}
