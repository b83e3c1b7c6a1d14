/*
 * Scatter (and Scatterv) through the staging slots: the root writes every
 * other rank's block once, into its own NUMA-local slots, and each rank
 * copies out its own.
 * (Entry numbers here count from the call's first, gather.h.)
 *
 * Block j has n_j = ceil(b_j / f) fragments (one if empty). The root's
 * entries go round by round, destination by destination: fragment r of
 * the block of the d-th rank after the root (d = 0 .. p - 2) is entry
 * e = r (p - 1) + d, in the root's slot e % s, for one reader (gather.h).
 * Entries of blocks that have no fragment r are skipped, never published,
 * so a rank finds its entries from its own block size alone (scatterv
 * counts are known only at the root).
 *  root:     publishes the entries in order, each once its slot's
 *            previous reader has released it, then copies its own block
 *            (not in place) while the readers copy out their last
 *            fragments; it returns once every reader has released its
 *            last entries. (Own block first made every reader wait for
 *            that copy: on the VM, p = 2, vCPUs far apart, this order
 *            took 0.52-0.85x the time at 4 KiB-1 MiB.) (Returning at
 *            once, as a Bcast root does, would leave a root whose call
 *            nobody matched -- two ranks each calling itself root -- with
 *            slots that nobody ever releases and its next call waiting
 *            for them forever; waiting here, it finds the other ranks in
 *            another call and fails instead.)
 *  non-root: for r = 0 .. n - 1: waits for the root's entry r (p - 1) + d
 *            (acquire), copies it to its receive buffer at r f, releases
 *            the slot. Entry 0 carries the block's size as the root counted
 *            it: a difference makes a mismatch.
 * Blocks of 40 bytes or less ride in the slot's line: one line per rank.
 *
 * Scatterv through the lines (ga.lines, as gather_staged.c's Gatherv): the
 * root writes line 0 of every destination's share of its inline lines
 * (S = floor(al / (p - 1)) lines each), with the block where it has at
 * most sv_max bytes, else NC_AG_UNFIT, before any staged entry; the
 * others go through the slots as above. A destination reads line 0 of its
 * share (a mismatch where it says the other way), then its lines or its
 * entries. A root whose blocks all went through the lines writes and goes,
 * as the inline Scatter's root (no slot to wait for). Cost of a block in
 * the lines: the inline Scatter's.
 *
 * NUMA: each block crosses once, from the root's node to its reader.
 * Cost, blocks of b bytes, R = ceil(b / f) rounds, t per byte, t_l a line
 * transfer: root T ~ (p - 1) b t (its copy-ins) + R (p - 1) t_l / s
 * (waits for slots) + the last reader's copy-out of f t + 2 t_l; a reader
 * ~ t_l + b t behind the root's copy-in.
 * Shared slots: the root writes its own slots (data, full); every other
 * rank reads its entries and adds to their rel. Tuned by the rule's f and
 * s (reduce_frag_size and reduce_depth override them); s >= p - 1 lets the
 * root stage one fragment for everyone without waiting.
 */
#include "coll/gather/gather.h"


int nc__scatter_staged_step(numacoll_team_t *t, nc__op_t *o)
{
    const size_t f = o->ch->f;
    const unsigned s = o->ch->s;
    const int me = t->rank, p = t->p, root = o->root;
    const size_t lmax = t->red->sv_max;
    nc__ga_pos_t *P = &o->g;
    nc__ga_io_t *io = nc__ga_io(o);
    int rc;
    if (o->phase == 0) {
        /* through the lines: numbered there too (every rank, every call) */
        if (o->ga.lines &&
            (rc = nc__ar_begin(t, me == root ? NC_AR_RD_ALL : NC_AR_RD_NONE,
                               -1, &P->lbase)) != NUMACOLL_OK)
            return rc;
        nc__ga_begin(t, o);
        P->lr = 0;
        /* the root: every destination's line 0, with its block where it
         * fits, before any staged entry (a reader learns there which) */
        for (int k = 1; o->ga.lines && me == root && k < p; k++) {
            const int d = (root + k) % p;
            const size_t bd = nc__ga_count(o, d);
            const unsigned slot = nc__ar_slot(P->lbase);
            if (nc__ga_in_lines(o, bd, lmax))
                nc__ag_put(t, slot, nc__sv_share(t, root, d),
                           nc__ga_at(o->ga.send, nc__ga_displ(o, d)), bd,
                           P->lbase);
            else
                nc__ag_put_unfit(t, slot, nc__sv_share(t, root, d), P->lbase);
        }
    }
    if (me != root) {
        const size_t mine = o->ga.own;
        const int fit = nc__ga_in_lines(o, mine, lmax);
        if (o->ga.lines) {
            if (P->lr == 0 &&
                (rc = nc__ga_line_check(t, root, P->lbase,
                                        nc__sv_share(t, root, me), fit, mine,
                                        "scatterv")) != NUMACOLL_OK)
                return rc;
            if (fit) {
                if ((rc = nc__ag_get(t, root, nc__ar_slot(P->lbase),
                                     nc__sv_share(t, root, me), o->ga.recv, mine,
                                     P->lbase, &P->lr,
                                     "inline scatterv line")) != NUMACOLL_OK)
                    return rc;
                nc__ar_end(t, P->lbase);
                return NUMACOLL_OK;
            }
            P->lr = 1;   /* checked: staged from here */
        }
        const size_t n_me = nc__ga_frags(mine, f);
        const int d = (me - root - 1 + p) % p;
        const int cout = nc__copy_pick(o->ch->copy, mine);
        for (; P->r < n_me; P->r++) {
            nc__ga_frag_t fr = {P->base + P->r * (uint64_t)(p - 1) +
                                    (uint64_t)d,
                                P->r,
                                nc__ga_frag_len(mine, f, P->r), mine, cout,
                                io, root, 0};
            rc = nc__ga_take(t, root, s, f, &fr,
                             nc__ga_at(o->ga.recv, P->r * f), "scatter");
            if (rc != NUMACOLL_OK)
                return rc;
        }
        if (o->ga.lines)
            nc__ar_end(t, P->lbase);
        return NUMACOLL_OK;
    }
    const int cin = nc__copy_pick_read(o->ch->copy);
    int staged = !o->ga.lines;   /* some block goes through the slots */
    for (; P->r < P->rounds; P->r++, P->i = 0)
        for (; P->i < p - 1; P->i++) {
            const int j = (root + 1 + P->i) % p;
            const size_t bj = nc__ga_count(o, j);
            if (nc__ga_in_lines(o, bj, lmax) || P->r >= nc__ga_frags(bj, f))
                continue;
            nc__ga_frag_t fr = {P->base + P->r * (uint64_t)(p - 1) +
                                    (uint64_t)P->i,
                                P->r, nc__ga_frag_len(bj, f, P->r), bj, cin,
                                io, j, 0};
            rc = nc__ga_put(t, s, f, &fr,
                            nc__ga_at(o->ga.send,
                                      nc__ga_displ(o, j) + P->r * f),
                            1, 1);
            if (rc != NUMACOLL_OK)
                return rc;
        }
    /* The root's own block while the readers copy out the last
     * fragments */
    if (P->own_later) {
        nc__ga_own(t, o, 0, SIZE_MAX);
        P->own_later = 0;
    }
    /* Every slot read out before the root returns (see the top); slots
     * this call did not use pass at once. (Only lines: the root writes
     * and goes, as the inline Scatter's.) */
    for (int k = 1; !staged && k < p; k++)
        staged = !nc__ga_in_lines(o, nc__ga_count(o, (root + k) % p), lmax);
    for (; staged && P->staged < s; P->staged++)
        if ((rc = nc__rslot_claim(t, (unsigned)P->staged)) != NUMACOLL_OK)
            return rc;
    if (o->ga.lines)
        nc__ar_end(t, P->lbase);
    return NUMACOLL_OK;
}
