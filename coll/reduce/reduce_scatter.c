/*
 * Reduce_scatter (and Reduce_scatter_block) through the staging slots:
 * the reduce-scatter half of the rsag Allreduce (allreduce_rsag.c, whose
 * rounds of slices it runs: reduce.h's nc__rs_*), with the slices cut
 * per block instead of per chunk. There is no root; every rank does the
 * same.
 *
 * Block j (recvcounts[j] elements, after those of blocks 0..j-1) goes to
 * rank j. A round moves one piece of u elements of every block, u =
 * f / (elem p) (whole units of cache lines where that is at least one;
 * at most the largest block), so one slot of f bytes holds the p pieces
 * of a round, piece j at j u (in the slot's line where the p pieces end
 * within 48 bytes: one line transfer per pair of ranks);
 * a call has R = max_j ceil(recvcounts[j] / u) rounds. Round r takes
 * ticket base + r, slot (base + r) % s. Per round every rank
 *  stage:  claims its slot (the readers of its use s rounds ago have
 *          released it), copies piece r of every block but its own into
 *          it, publishes the entry for p - 1 readers (release);
 *  wait:   for every other rank's entry (acquire; even where its own
 *          piece is empty: a release must follow the sight of its use);
 *  fold:   piece r of its own block of all p contributions, in rank order
 *          (reduce.h's fold: bitwise the rank-order result on every run,
 *          and x_0 op ... op x_(p-1) for a non-commutative op), its own
 *          straight from its send buffer, into its receive buffer at r u;
 *  release every other rank's slot.
 * In place (the contribution in recvbuf, the result at its start): the
 * fold goes into the slot's own piece (nobody reads it) and is copied
 * out. That overwrites recvbuf[r u, r u + n), whose input (in blocks
 * starting at or before it) has been staged or folded in rounds up to r.
 * Round 0 carries a hash of the recvcounts in the slot's line: ranks
 * whose counts differ with the same total find a mismatch.
 *
 * Deadlock freedom: stage(r) waits only for every rank's release(r - s),
 * which follows its wait(r - s) for the stage(r - s) of all.
 * NUMA: every piece is read once, by its block's owner, from the node of
 * its contributor. Cost, N elements of e bytes in all, b of them in this
 * rank's block, t per byte, t_l a line transfer:
 *   T ~ R (t_l + (p - 1) t_l / overlap) + (N - b) e t + p b e t
 * (copy-in of the others' blocks, a fold reading p pieces of its own),
 * i.e. about (1 + 1 / p) N e t for even blocks, against the 2 N e t of
 * an Allreduce. Shared slots: writes its own slots (data, full) and
 * everyone's rel; reads everyone's full and data. Tuned by the rule's f
 * and s (reduce_frag_size and reduce_depth override them).
 */
#include <string.h>

#include "coll/reduce/reduce.h"

typedef struct rsc {
    nc__rs_t rs;        /* first: the slice function casts back */
    const nc__op_t *o;
    size_t u;
    int cout;           /* copy-layer variant into recv (in place) */
} rsc_t;

static size_t count_of(const nc__op_t *o, int j)
{
    return o->rs_counts ? o->rs_counts[j] : o->rs_block;
}

/* First element of block j (the v form sums the counts before it: p
 * additions per slice, nothing next to the copies). */
static size_t displ_of(const nc__op_t *o, int j)
{
    if (!o->rs_counts)
        return (size_t)j * o->rs_block;
    size_t d = 0;
    for (int i = 0; i < j; i++)
        d += o->rs_counts[i];
    return d;
}

/* Piece r of block j: at displ_j + r u of a contribution, j u of a slot. */
static void slice_rs(const nc__rs_t *rs, size_t r, int j, size_t *vo,
                     size_t *so, size_t *n)
{
    const rsc_t *s = (const rsc_t *)rs;
    const size_t c = count_of(s->o, j), lo = r * s->u;
    *n = c > lo ? (c - lo < s->u ? c - lo : s->u) : 0;
    *vo = *n ? displ_of(s->o, j) + lo : 0;
    *so = (size_t)j * s->u;
}

uint64_t nc__rs_counts_tag(const nc__op_t *o, int p)
{
    /* a word at a time (each call of an inline Reduce_scatter pays it):
     * multiply and fold, the count's position in the multiplier chain */
    uint64_t h = 0xcbf29ce484222325ULL;
    for (int j = 0; j < p; j++) {
        h = (h ^ count_of(o, j)) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
    }
    return h | 1;
}

/* The round's fold: our piece of all p, into recv at r u (in place
 * through our own piece of the slot, which nobody reads). */
static int fold_rs(const nc__rs_t *rs, size_t r)
{
    const rsc_t *s = (const rsc_t *)rs;
    numacoll_team_t *t = rs->t;
    const nc__op_t *o = s->o;
    size_t vo, so, n;
    slice_rs(rs, r, t->rank, &vo, &so, &n);
    if (!n)
        return NUMACOLL_OK;
    unsigned char *out = o->recv + r * s->u * rs->elem, *slot = NULL;
    if ((const unsigned char *)o->own == o->recv) {
        uint64_t g;
        unsigned x;
        nc__rs_round(rs, r, &g, &x);
        slot = nc__rs_slot(rs, t->rank, x, r) + so * rs->elem;
    }
    int rc = nc__rs_fold(rs, r, slot ? slot : out);
    /* not the last element's padding: it may lie past the block's end */
    if (rc == NUMACOLL_OK && slot)
        nc__copy(s->cout, out, slot, nc__res_bytes(&o->rop, n));
    return rc;
}

int nc__reduce_scatter_staged_step(numacoll_team_t *t, nc__op_t *o)
{
    const nc__choice_t *ch = o->ch;
    const size_t elem = o->rop.elem;
    const int me = t->rank, p = t->p;
    nc__red_pos_t *P = &o->r;
    if (o->phase == 0) {
        /* u: the slot holds p pieces (rs_make made sure of one element
         * each); whole cache-line units where one fits */
        const size_t unit = nc__red_unit(elem);
        size_t u = ch->f / elem / (size_t)p;
        if (u >= unit)
            u -= u % unit;
        /* no wider than the largest block: small calls stay compact (in
         * the slot's line where they fit) */
        size_t most = 1;
        for (int j = 0; j < p; j++)
            if (count_of(o, j) > most)
                most = count_of(o, j);
        P->unit = u = u < most ? u : most;
        P->rounds = (most + u - 1) / u;
        P->base = t->red->ticket;
        t->red->ticket += P->rounds;
        P->k = 0;
        P->part = 0;
        o->phase = 1;
    }
    rsc_t s = {.rs = {.t = t, .op = &o->rop, .own = o->own, .elem = elem,
                      .base = P->base, .slots = ch->s,
                      .cin = nc__copy_pick_read(ch->copy),
                      .nslices = p,
                      .skip = me, .mine = me, .nfold = p,
                      .readers = (unsigned)(p - 1),
                      .tag = o->rs_counts ? nc__rs_counts_tag(o, p) : 0,
                      .line_ok = 1,
                      .slice = slice_rs},
               .o = o, .u = P->unit,
               .cout = nc__copy_pick(ch->copy, count_of(o, me) * elem)};
    return nc__rs_rounds(&s.rs, P, P->rounds, 1, fold_rs);
}
