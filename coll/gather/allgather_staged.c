/*
 * Allgather (and Allgatherv) through the staging slots: every rank writes
 * its own block once, into its own NUMA-local slots, and every other rank
 * copies it out from there. There is no root; every rank does the same.
 *
 * Block j has n_j = ceil(b_j / f) fragments (one if empty), the call
 * R = max_j n_j rounds (entry numbers here count from the call's first,
 * gather.h). In round r every rank
 *  stage: publishes fragment r of its block (if it has one) as its entry r,
 *         in its slot r % s, for p - 1 readers (gather.h), and then, as far
 *         as its slots are free without waiting, its later fragments
 *         (staging ahead fills the time the others take to read);
 *  read:  for every other rank j (starting after itself, so that the ranks
 *         do not all read one writer at once) that has a fragment r: waits
 *         for j's entry r (acquire), copies it into its receive buffer at
 *         displs[j] + r f, releases j's slot.
 * Its own block goes straight from the send buffer to the receive buffer
 * (not at all in place), each fragment right after it is staged: its
 * source is then still in cache, so a block larger than the cache is read
 * from memory once, not twice. A fragment of 40 bytes or less rides in the
 * slot's line, so an Allgather of small blocks costs one line transfer per
 * pair of ranks.
 *
 * Deadlock freedom: staging entry r waits only for the releases of entry
 * r - s, which every rank makes in round r - s, and reading round r waits
 * only for entries r, staged before any rank reads round r.
 *
 * NUMA: each block crosses to every other rank once, read from its owner's
 * node. Per rank: copy-in of its block, copy-out of the p - 1 others.
 * Cost, blocks of b bytes, R = ceil(b / f) rounds, t per byte, t_l a line
 * transfer:  T ~ R (t_l + (p - 1) t_l / overlap) + b t + (p - 1) b t,
 * the copy-outs dominating for large b (memory bandwidth of the reader).
 * Shared slots: writes its own slots (data, full) and everyone's rel;
 * reads everyone's full and data. Tuned by the rule's f and s
 * (reduce_frag_size and reduce_depth override them).
 */
#include "coll/gather/gather.h"

int nc__allgather_staged_step(numacoll_team_t *t, nc__op_t *o)
{
    const size_t f = o->ch->f;
    const unsigned s = o->ch->s;
    const int me = t->rank, p = t->p;
    nc__ga_pos_t *P = &o->g;
    const size_t mine = o->ga.own, n_me = nc__ga_frags(mine, f);
    /* in place, our block is already where the others' go */
    const unsigned char *src = o->ga.in_place
                                   ? nc__ga_at(o->ga.recv, nc__ga_displ(o, me))
                                   : o->ga.send;
    const int cin = nc__copy_pick_read(o->ch->copy);
    const int cout = nc__copy_pick(o->ch->copy, mine);
    nc__ga_io_t *io = nc__ga_io(o);
    int rc;
    if (o->phase == 0)
        nc__ga_begin(t, o);
    for (; P->r < P->rounds; P->r++, P->i = 1) {
        /* entry r must be out before we wait for the others' (they wait
         * for it); later ones only where a slot is free already */
        while (P->staged < n_me) {
            const int must = P->staged <= P->r;
            nc__ga_frag_t fr = {P->base + P->staged, P->staged,
                                nc__ga_frag_len(mine, f, P->staged), mine,
                                cin, io, me, P->own_later};
            rc = nc__ga_put(t, s, f, &fr, nc__ga_at(src, P->staged * f),
                            (unsigned)(p - 1), must);
            if (rc == NC_AGAIN && !must)
                break;
            if (rc != NUMACOLL_OK)
                return rc;
            if (P->own_later && !io)   /* packed: nc__ga_put did it */
                nc__ga_own(t, o, P->staged * f, fr.n);
            P->staged++;
        }
        for (; P->i < p; P->i++) {
            const int j = (me + P->i) % p;
            const size_t bj = nc__ga_count(o, j);
            if (P->r >= nc__ga_frags(bj, f))
                continue;
            nc__ga_frag_t fr = {P->base + P->r, P->r,
                                nc__ga_frag_len(bj, f, P->r), bj, cout, io,
                                j, 0};
            rc = nc__ga_take(t, j, s, f, &fr,
                             nc__ga_at(o->ga.recv,
                                       nc__ga_displ(o, j) + P->r * f),
                             "allgather");
            if (rc != NUMACOLL_OK)
                return rc;
        }
    }
    return NUMACOLL_OK;
}
