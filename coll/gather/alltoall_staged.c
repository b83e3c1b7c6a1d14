/*
 * Alltoall through the staging slots: every rank writes each of its p - 1
 * outgoing blocks once, into its own NUMA-local slots, and each
 * destination copies out its own. There is no root; every rank does the
 * same, round by round, like the reduce-scatter/allgather Allreduce
 * (coll/reduce/allreduce_rsag.c).
 *
 * A round moves one piece of u bytes of every block: u = f / (p - 1)
 * (whole cache lines where that is at least one), so one slot of f bytes
 * holds the round's p - 1 pieces; a call of m bytes per block has
 * R = ceil(m / u) rounds (one if m = 0). Round r is the call's entry r
 * (numbered from the team's ticket, gather.h), in slot r % s. Destination
 * d's piece sits at ((d - me - 1) mod p) u in the slot. Per round every
 * rank
 *  stage: claims its slot (the readers of its use s rounds ago have
 *         released it), copies piece r of every outgoing block into it,
 *         publishes the entry for p - 1 readers (release). Pieces of a
 *         round that together fit in 40 bytes ride in the slot's line.
 *  read:  for every other rank j (starting after itself): waits for j's
 *         entry (acquire), copies its piece to recv + j m + r u, releases
 *         j's slot. Entry 0 carries m and f: a rank whose block size
 *         differs makes a mismatch.
 * Its own block is copied from send to recv (not in place). In place
 * (NUMACOLL_IN_PLACE as sendbuf: the blocks to send are in recv) works as
 * is: stage(r) has copied piece r of every block into the slot before
 * read(r) overwrites that piece's range of recv.
 *
 * Deadlock freedom: stage(r) waits only for every rank's read(r - s),
 * which waits only for the stage(r - s) of all.
 * NUMA: each block crosses once, from its sender's node to its receiver.
 * Cost, m bytes per block, R = ceil(m (p - 1) / f) rounds, t per byte, t_l
 * a line transfer: T ~ R (t_l + (p - 1) t_l / overlap) + 2 (p - 1) m t
 * (copy-in of its p - 1 blocks, copy-out of p - 1 pieces).
 * Shared slots: writes its own slots (data, full) and everyone's rel;
 * reads everyone's full and data. Tuned by the rule's f and s
 * (reduce_frag_size and reduce_depth override them).
 */
#include <stdio.h>
#include <string.h>

#include "coll/gather/gather.h"

/* Bytes of piece r of a block of m, pieces of u. */
static size_t piece_len(size_t m, size_t u, size_t r)
{
    return nc__ga_frag_len(m, u, r);
}

/* Where round r's pieces go in the writer's slot x: its line when they
 * fit there together, else the staging buffer. */
static unsigned char *pieces_at(const numacoll_team_t *t, int writer,
                                unsigned x, size_t total)
{
    return total <= NC_GA_INLINE ? nc__rslot(t, writer, x)->full.data
                                 : nc__rbuf(t, writer, x);
}

int nc__alltoall_staged_step(numacoll_team_t *t, nc__op_t *o)
{
    const size_t f = o->ch->f, m = o->ga.each;
    const unsigned s = o->ch->s;
    const int me = t->rank, p = t->p;
    nc__ga_pos_t *P = &o->g;
    /* in place, the blocks to send are in recv */
    const unsigned char *src = o->ga.in_place ? o->ga.recv : o->ga.send;
    size_t u = f / (size_t)(p - 1);
    if (u >= NC_CACHE_LINE)
        u -= u % NC_CACHE_LINE;
    if (u == 0)
        u = 1;
    int rc;
    if (o->phase == 0) {
        nc__ga_begin(t, o);   /* the own block; rounds in pieces of f */
        P->rounds = nc__ga_frags(m, u);
        P->staged = 0;
    }
    for (; P->r < P->rounds; P->r++, P->i = 1, P->staged = 0) {
        const uint64_t e = P->base + P->r;
        const unsigned x = (unsigned)(e % s);
        const size_t n = piece_len(m, u, P->r);
        if (!P->staged) {
            if ((rc = nc__rslot_claim(t, x)) != NUMACOLL_OK)
                return rc;
            unsigned char *at = pieces_at(t, me, x, n * (size_t)(p - 1));
            for (int d = 1; d < p && n; d++)
                nc__copy(nc__copy_pick(o->ch->copy, 0),
                         at + (size_t)(d - 1) * n,
                         src + (size_t)((me + d) % p) * m + P->r * u, n);
            if (P->r == 0) {
                uint64_t meta[2] = {(uint64_t)m, (uint64_t)f};
                memcpy(nc__rslot(t, me, x)->full.data + NC_GA_INLINE, meta,
                       sizeof meta);
            }
            /* the pieces are written before the word (release) */
            nc__rslot_publish(t, x, e, (unsigned)(p - 1));
            P->staged = 1;
        }
        for (; P->i < p; P->i++) {
            const int j = (me + P->i) % p;
            if ((rc = nc__rslot_wait_full(t, j, x, e)) != NUMACOLL_OK)
                return rc;
            if (P->r == 0) {
                uint64_t meta[2];
                memcpy(meta, nc__rslot(t, j, x)->full.data + NC_GA_INLINE,
                       sizeof meta);
                if (meta[0] != m || meta[1] != f) {
                    char why[160];
                    snprintf(why, sizeof why, "alltoall: rank %d sends "
                             "blocks of %llu bytes in rounds of %llu, rank "
                             "%d expects %zu in rounds of %zu", j,
                             (unsigned long long)meta[0],
                             (unsigned long long)meta[1], me, m, f);
                    return nc__mismatch(t, j, why);
                }
            }
            /* our piece is the ((me - j - 1) mod p)-th of j's round */
            const size_t k = (size_t)((me - j - 1 + p) % p);
            if (n)
                nc__copy(nc__copy_pick(o->ch->copy, m),
                         o->ga.recv + (size_t)j * m + P->r * u,
                         pieces_at(t, j, x, n * (size_t)(p - 1)) + k * n, n);
            nc__rslot_release(t, j, x);
        }
    }
    return NUMACOLL_OK;
}
