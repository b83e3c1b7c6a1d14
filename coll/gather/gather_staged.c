/*
 * Gather (and Gatherv) through the staging slots: every non-root rank
 * writes its block once, into its own NUMA-local slots, and the root
 * copies every block out from there.
 * (Entry numbers here count from the call's first, gather.h.)
 *
 *  non-root: publishes its block's n = ceil(b / f) fragments (one if
 *            empty) as its entries 0 .. n - 1, entry e in its slot e % s,
 *            each for one reader (gather.h); it waits only where all s
 *            slots still hold entries the root has not read, and returns
 *            once its last entry is out (the root need not have read it:
 *            the slot's reuse rule protects it).
 *  root:     copies its own block (not in place), then round by round, for
 *            every other rank j with a fragment r: waits for j's entry r
 *            (acquire), copies it to displs[j] + r f, releases j's slot.
 *            Entry 0 of each block carries its size: a rank whose block
 *            the root counted otherwise (gatherv) makes a mismatch, not
 *            a wrong number of entries.
 * Blocks of 40 bytes or less ride in the slot's line: the root reads p - 1
 * lines, one per rank.
 *
 * Gatherv through the lines (ga.lines: the rule of its largest size is
 * this one, or single copy's choice picked it after the lines were
 * numbered and read (P->lines_done, gather_cma.c), and the gather rules
 * say inline up to gv_max): a block of at
 * most gv_max bytes goes in its writer's inline lines instead, as the
 * inline Gather's (rooted_inline.c), and only the larger ones through the
 * slots, in the same call. The block's size decides, which the writer
 * and the root both know; every non-root writes line 0 either way (the
 * block, or NC_AG_UNFIT), so a root whose count says otherwise finds a
 * mismatch there instead of waiting for entries that never come. Every
 * rank numbers the call in the lines and takes its ticket, so both
 * numberings stay equal on all ranks whatever went which way. Cost of a
 * block in the lines: the inline Gather's (no release, the root's ack
 * line instead, read by a writer once per NC_AR_SLOTS calls at most).
 *
 * NUMA: each block crosses once, read by the root from its owner's node;
 * a remote owner's copy-in stays local.
 * Cost, blocks of b bytes, R = ceil(b / f) rounds, t per byte, t_l a line
 * transfer: root T ~ R (p - 1) t_l / overlap + (p - 1) b t (its copy-outs,
 * against the others' copy-ins of b t each, which overlap them once s >= 2).
 * Shared slots: a non-root writes its own slots (data, full); the root
 * reads them and writes their rel. Tuned by the rule's f and s
 * (reduce_frag_size and reduce_depth override them).
 */
#include "coll/gather/gather.h"

int nc__gather_staged_step(numacoll_team_t *t, nc__op_t *o)
{
    const size_t f = o->ch->f;
    const unsigned s = o->ch->s;
    const int me = t->rank, p = t->p, root = o->root;
    const size_t lmax = t->red->gv_max;
    nc__ga_pos_t *P = &o->g;
    nc__ga_io_t *io = nc__ga_io(o);
    int rc;
    if (o->phase == 0) {
        /* through the lines: numbered there too (every rank, every call) */
        if (o->ga.lines && !P->lines_done &&
            (rc = nc__ar_begin(t, me == root ? NC_AR_RD_NONE : NC_AR_RD_ONE,
                               root, &P->lbase)) != NUMACOLL_OK)
            return rc;
        nc__ga_begin(t, o);
        P->lr = 0;
        if (o->ga.lines && !P->lines_done && me != root) {
            const unsigned slot = nc__ar_slot(P->lbase);
            if (nc__ga_in_lines(o, o->ga.own, lmax))
                nc__ag_put(t, slot, 0, o->ga.send, o->ga.own, P->lbase);
            else
                nc__ag_put_unfit(t, slot, 0, P->lbase);
        }
    }
    if (me != root) {
        const size_t mine = o->ga.own,
                     n_me = nc__ga_in_lines(o, mine, lmax)
                                ? 0 : nc__ga_frags(mine, f);
        const int cin = nc__copy_pick_read(o->ch->copy);
        for (; P->staged < n_me; P->staged++) {
            nc__ga_frag_t fr = {P->base + P->staged, P->staged,
                                nc__ga_frag_len(mine, f, P->staged), mine,
                                cin, io, me, 0};
            rc = nc__ga_put(t, s, f, &fr,
                            nc__ga_at(o->ga.send, P->staged * f), 1, 1);
            if (rc != NUMACOLL_OK)
                return rc;
        }
        if (o->ga.lines)
            nc__ar_end(t, P->lbase);
        return NUMACOLL_OK;
    }
    for (; P->r < P->rounds; P->r++, P->i = 1)
        for (; P->i < p; P->i++, P->lr = 0) {
            const int j = (root + P->i) % p;
            const size_t bj = nc__ga_count(o, j);
            const int fit = nc__ga_in_lines(o, bj, lmax);
            /* (a single-copy call that chose staged read the blocks in
             * the lines already, not their line 0 past them) */
            if (o->ga.lines && P->r == 0 && (!P->lines_done || !fit)) {
                /* line 0 says where j put its block (again on a resumed
                 * staged take: the line stays until this root's ack) */
                if (P->lr == 0 &&
                    (rc = nc__ga_line_check(t, j, P->lbase, 0, fit, bj,
                                            "gatherv")) != NUMACOLL_OK)
                    return rc;
                if (fit &&
                    (rc = nc__ag_get(t, j, nc__ar_slot(P->lbase), 0,
                                     nc__ga_at(o->ga.recv,
                                               nc__ga_displ(o, j)),
                                     bj, P->lbase, &P->lr,
                                     "inline gatherv line")) != NUMACOLL_OK)
                    return rc;
            }
            if (fit || P->r >= nc__ga_frags(bj, f))
                continue;
            nc__ga_frag_t fr = {P->base + P->r, P->r,
                                nc__ga_frag_len(bj, f, P->r), bj,
                                nc__copy_pick(o->ch->copy, bj), io, j, 0};
            rc = nc__ga_take(t, j, s, f, &fr,
                             nc__ga_at(o->ga.recv,
                                       nc__ga_displ(o, j) + P->r * f),
                             "gather");
            if (rc != NUMACOLL_OK)
                return rc;
        }
    if (o->ga.lines)
        nc__ar_end(t, P->lbase);
    return NUMACOLL_OK;
}
