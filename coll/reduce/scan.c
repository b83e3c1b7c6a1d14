/*
 * Scan (inclusive prefix) and Exscan (exclusive) through the staging
 * slots, with reduce.h's rounds of slices (one slice: the whole chunk).
 * Rank i's result is x_0 op ... op x_i (Scan) or x_0 op ... op x_(i-1)
 * (Exscan; rank 0 receives nothing and its recvbuf is not touched).
 *
 * The count elements go in rounds of one chunk: the most elements that
 * fit in a staging slot (the rule's f bytes) in whole cache-line units.
 * Round r takes ticket base + r, slot (base + r) % s. Per round
 *  stage:  every rank read by a higher one (all but the last) claims its
 *          slot, copies chunk r of its contribution into it (into the
 *          slot's line where it is 48 bytes or less) and publishes it for
 *          the p - 1 - i ranks above it (release);
 *  wait:   rank i waits for the entries of ranks 0 .. i-1 (acquire);
 *  fold:   folds chunk r of ranks 0 .. i (Exscan: 0 .. i-1) in rank order
 *          (reduce.h's fold: the others' from their slots, its own from
 *          its send buffer) into its receive buffer: bitwise the
 *          rank-order result, x_0 op (x_1 op ...) for a user op, so a
 *          non-commutative op is folded strictly in rank order;
 *  release the slots of ranks 0 .. i-1.
 * In place: Scan stages its own chunk on every rank (the last too, for
 * no reader) and takes its own operand from its slot, since the fold
 * writes where the contribution is; Exscan needs nothing: its own
 * contribution is no operand and is staged before the fold overwrites
 * it.
 *
 * Deadlock freedom: stage(r) at rank j waits only for the release(r - s)
 * of the ranks above j, which follows their wait(r - s) for the stage(r -
 * s) of the ranks below them.
 * NUMA: rank i reads i contributions, each from its owner's node. This
 * direct fold beats a chain (rank i waiting for rank i - 1's prefix)
 * where latency counts: one step instead of p - 1; the chain reads less
 * at large sizes and is not built yet.
 * Cost, m bytes per rank, R = ceil(m / f) rounds, t per byte, t_l a line
 * transfer, for the last rank (the slowest):
 *   T ~ R (t_l + (p - 1) t_l / overlap) + m t + (p - 1) m t
 * (copy-in of its chunk, a fold reading p contributions). Shared slots:
 * writes its own slots (data, full) and everyone's rel; reads the full
 * and data of the ranks below. Tuned by the rule's f and s
 * (reduce_frag_size and reduce_depth override them).
 */
#include "coll/copy.h"
#include "coll/reduce/reduce.h"

typedef struct scan {
    nc__rs_t rs;        /* first: the slice function casts back */
    unsigned char *recv;
    size_t count, chunk;
} scan_t;

/* The round's one slice: chunk r, at offset 0 of the slot. */
static void slice_scan(const nc__rs_t *rs, size_t r, int j, size_t *vo,
                       size_t *so, size_t *n)
{
    const scan_t *s = (const scan_t *)rs;
    (void)j;
    *vo = r * s->chunk;
    *so = 0;
    *n = s->count - *vo < s->chunk ? s->count - *vo : s->chunk;
}

/* The round's fold, into recv at chunk r (Exscan's rank 0: nothing). */
static int fold_scan(const nc__rs_t *rs, size_t r)
{
    const scan_t *s = (const scan_t *)rs;
    return rs->nfold ? nc__rs_fold(rs, r, s->recv + r * s->chunk * rs->elem)
                     : NUMACOLL_OK;
}

/* reduce.h: the staged Scan's rounds, which the allfold Allreduce runs
 * with every rank folding all p */
int nc__chunk_rounds(numacoll_team_t *t, nc__op_t *o, int nfold,
                     unsigned readers, int own_staged, int cin)
{
    const nc__choice_t *ch = o->ch;
    const size_t elem = o->rop.elem;
    nc__red_pos_t *P = &o->r;
    if (o->phase == 0) {
        const size_t unit = nc__red_unit(elem);
        size_t c = ch->f / elem;
        if (c >= unit)
            c -= c % unit;
        P->chunk = c;
        P->rounds = (o->count + c - 1) / c;
        P->base = t->red->ticket;
        t->red->ticket += P->rounds;
        P->k = 0;
        P->part = 0;
        o->phase = 1;
        /* a folding rank's first result lines: their misses overlap the
         * wait for the others (on the VM, cold, application's loop:
         * allfold 0.65-0.9x the time at 128-512 bytes, Exscan 0.55-0.78x
         * at 128 B-2 KiB, Scan 0.8x at 128 B but 1.08-1.15x at 2 KiB;
         * asking for more than 1 KiB competed with the copy-in's reads of
         * the send buffer) */
        if (nfold > 0)
            nc__prefetch_w(o->recv, o->count * elem, NC_PREFETCH_SMALL);
    }
    scan_t s = {.rs = {.t = t, .op = &o->rop, .own = o->own, .elem = elem,
                       .base = P->base, .slots = ch->s, .cin = cin,
                       .nslices = 1, .skip = -1, .mine = 0, .nfold = nfold,
                       .own_staged = own_staged, .readers = readers,
                       .line_ok = 1,
                       .slice = slice_scan},
                .recv = o->recv, .count = o->count, .chunk = P->chunk};
    return nc__rs_rounds(&s.rs, P, P->rounds, readers > 0 || own_staged,
                         fold_scan);
}

int nc__scan_staged_step(numacoll_team_t *t, nc__op_t *o)
{
    const int me = t->rank, ex = o->coll == NC_COLL_EXSCAN;
    const int in_place = (const unsigned char *)o->own == o->recv;
    return nc__chunk_rounds(t, o, ex ? me : me + 1, (unsigned)(t->p - 1 - me),
                            in_place && !ex, nc__copy_pick_read(o->ch->copy));
}
