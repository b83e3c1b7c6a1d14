/*
 * Allreduce in one wave through the staging slots, for messages between
 * the inline lines' reach and rsag's: every rank stages its whole
 * contribution once and every rank folds all p contributions itself, in
 * rank order, straight into its receive buffer. It is the inline
 * Allreduce (allreduce_inline.c) with contiguous slots instead of
 * self-validating lines: one flag per slot instead of one word per 56
 * bytes, and one fold over the whole chunk instead of one per line, so a
 * few KiB cost a few line waits, not one per line; and rsag
 * (allreduce_rsag.c) without its second wave: no slice is published back
 * (no done, no gather), at the price of every rank reading every
 * contribution whole.
 *
 * The message goes in rounds of one chunk, the most elements of whole
 * cache-line units a slot of the rule's f bytes holds. Round r takes
 * ticket g = base + r and slot x = g % s on every rank (s the rule's
 * slots): the staged Scan's rounds (scan.c, nc__chunk_rounds: one slice
 * per round, the whole chunk), with every rank folding all p and read
 * by all p - 1 others. Per round every rank
 *  stage:   claims its slot x (every reader of its use s rounds ago
 *           released it), copies its chunk into it (a round of at most
 *           48 bytes rides in the slot's line), publishes full = g + 1 for
 *           p - 1 readers (release);
 *  wait:    for every other rank's full (acquire);
 *  fold:    x_0 op x_1 op ... op x_(p-1) of the chunk, its own operand
 *           from its send buffer (from its slot in place, where the
 *           result overwrites it), the others' from their slots, into
 *           its receive buffer (reduce.h's fold: the same code and order
 *           on every rank, so the results are bitwise equal);
 *  release: every other rank's slot x.
 * Deadlock freedom: stage(r) waits only for every rank's release(r - s),
 * which follows its wait(r - s) for the stage(r - s) of all.
 *
 * Cost, m bytes, n = ceil(m / f) rounds, t per byte, t_l a line transfer:
 *   T ~ n t_l + m t + (p - 1) m t_r + p m t_f
 * (copy-in, reading the p - 1 others' contributions, t_r per byte read
 * from another core, and the fold), against rsag's 2 n t_l and about
 * 2 m t: one wave instead of two, (p - 1) m read instead of 2 (p - 1) m /
 * p. It pays where the wave's latency outweighs the extra reads: small m,
 * small p (the built-in table: p <= 2, 113 B to 16 KiB). NUMA: every
 * contribution is read once by every other rank, from its owner's node.
 * Shared slots: writes its own (data, full) and everyone's rel; reads
 * everyone's full and data. Tuned by the rule's f and s
 * (reduce_frag_size and reduce_depth override them).
 */
#include "coll/copy.h"
#include "coll/reduce/reduce.h"

int nc__allreduce_allfold_step(numacoll_team_t *t, nc__op_t *o)
{
    /* in place the fold overwrites the operand: it comes from the slot */
    return nc__chunk_rounds(t, o, t->p, (unsigned)(t->p - 1),
                            (const unsigned char *)o->own == o->recv,
                            nc__copy_pick_read(o->ch->copy));
}
