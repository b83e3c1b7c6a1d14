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
 * Its own block is copied from send to recv (not in place) once round 0
 * is staged: the others need not wait for that copy. In place
 * (NUMACOLL_IN_PLACE as sendbuf: the blocks to send are in recv) works as
 * is: stage(r) has copied piece r of every block into the slot before
 * read(r) overwrites that piece's range of recv.
 *
 * Alltoallv (sendbytes / sdispls, recvbytes / rdispls per rank): the same
 * rounds, every block led by an 8-byte header that holds its size, so a
 * block of m bytes is a stream of 8 + m bytes cut into pieces of u: round
 * r moves bytes [r u, (r + 1) u) of the stream (round 0: the header and
 * the first u - 8 bytes). Pieces sit at k u in the slot (never in the
 * line: a reader does not know the other blocks' sizes), and the
 * receiver compares the header with its recvbytes (a mismatch, not wrong
 * data). Blocks end in different rounds: rank me runs rounds until its
 * longest stream, in or out, has gone (every one runs round 0, which
 * every pair meets in); an entry r is published for the destinations
 * whose stream reaches round r, and read by exactly those. In place (as
 * MPI: the blocks to send are in recv, laid out as those received) works
 * as the uniform form does. The slot must hold p - 1 pieces of at least
 * 8 bytes (checked at the call).
 * Deadlock freedom: stage(r) waits only for every rank's read(r - s),
 * which waits only for the stage(r - s) of all.
 * NUMA: each block crosses once, from its sender's node to its receiver.
 * Cost, m bytes per block (v: the largest), R = ceil(m (p - 1) / f)
 * rounds, t per byte, t_l
 * a line transfer: T ~ R (t_l + (p - 1) t_l / overlap) + 2 (p - 1) m t
 * (copy-in of its p - 1 blocks, copy-out of p - 1 pieces).
 * Shared slots: writes its own slots (data, full) and everyone's rel;
 * reads everyone's full and data. Tuned by the rule's f and s
 * (reduce_frag_size and reduce_depth override them).
 */
#include <stdio.h>
#include <string.h>

#include "coll/gather/gather.h"

/* The v form's header of a block: its size (plain bytes, ordered by the
 * entry's release store). */
#define HDR 8

/* Round-0 line meta of the v form (the uniform form writes m there): a
 * uniform call and a v call meet as a mismatch. V_FIT where this rank's
 * blocks would fit the inline Alltoallv (alltoall_inline.c): every rank
 * reads every other's round 0, so all learn whether the next Alltoallv
 * tries inline again. */
#define V_MARK UINT64_MAX
#define V_FIT (UINT64_MAX - 1)

/* Bytes [lo, lo + *n) of a block of m (header h bytes before it) that
 * round r moves in pieces of u; *n may be 0. */
static size_t piece_of(size_t m, size_t h, size_t u, size_t r, size_t *n)
{
    size_t a = r * u, b = a + u;
    a = a > h ? a - h : 0;
    b = b > h ? b - h : 0;
    if (b > m)
        b = m;
    *n = b > a ? b - a : 0;
    return a;
}

/* Whether a stream of h + m bytes has a piece in round r (round 0: every
 * stream, even an empty one). */
static int in_round(size_t m, size_t h, size_t u, size_t r)
{
    return r == 0 || h + m > r * u;
}

/* Where round r's pieces go in the writer's slot x: its line when they
 * fit there together (uniform form only), else the staging buffer. */
static unsigned char *pieces_at(const numacoll_team_t *t, int writer,
                                unsigned x, size_t total)
{
    return total <= NC_GA_INLINE ? nc__rslot(t, writer, x)->full.data
                                 : nc__rbuf(t, writer, x);
}

size_t nc__alltoall_unit(size_t f, int p)
{
    size_t u = p > 1 ? f / (size_t)(p - 1) : f;
    if (u >= NC_CACHE_LINE)
        u -= u % NC_CACHE_LINE;
    return u ? u : 1;
}

/* Rounds of this rank: until its longest stream, in or out, has gone. */
static size_t rounds_of(const nc__op_t *o, int me, int p, size_t h, size_t u)
{
    size_t R = 1;
    for (int j = 0; j < p; j++) {
        if (j == me)
            continue;
        size_t a = nc__ga_frags(h + nc__ga_scount(o, j), u);
        size_t b = nc__ga_frags(h + nc__ga_count(o, j), u);
        if (a > R)
            R = a;
        if (b > R)
            R = b;
    }
    return R;
}

/* Round 0 of writer j disagrees with this rank's call: its meta (its
 * block size or V_MARK, its f), the v form's header (size). */
static int mismatch(numacoll_team_t *t, int j, const uint64_t meta[2],
                    uint64_t size, size_t m, size_t f, int v)
{
    char why[200];
    const int jv = meta[0] >= V_FIT;
    snprintf(why, sizeof why, "alltoall%s: rank %d sends %s of %llu bytes "
             "in rounds of %llu, rank %d expects %zu bytes in rounds of %zu",
             v ? "v" : "", j, jv ? "an alltoallv block" : "alltoall blocks",
             (unsigned long long)(jv ? size : meta[0]),
             (unsigned long long)meta[1], t->rank, m, f);
    return nc__mismatch(t, j, why);
}

int nc__alltoall_staged_step(numacoll_team_t *t, nc__op_t *o)
{
    const size_t f = o->ch->f;
    const unsigned s = o->ch->s;
    const int me = t->rank, p = t->p, v = o->ga.scounts != NULL;
    const size_t h = v ? HDR : 0, u = nc__alltoall_unit(f, p);
    nc__ga_pos_t *P = &o->g;
    /* in place, the blocks to send are in recv */
    const unsigned char *src = o->ga.in_place ? o->ga.recv : o->ga.send;
    nc__ga_io_t *io = nc__ga_io(o);
    int rc;
    if (o->phase == 0) {
        nc__ga_begin(t, o);   /* the own block; rounds in pieces of f */
        P->rounds = rounds_of(o, me, p, h, u);
        P->staged = 0;
        P->unfit = v && !nc__a2av_fits(t, o);
    }
    for (; P->r < P->rounds; P->r++, P->i = 1, P->staged = 0) {
        const size_t r = P->r;
        const uint64_t e = P->base + r;
        const unsigned x = (unsigned)(e % s);
        /* uniform: every piece of the round is n bytes, at stride n (in
         * the line where they fit); v: at stride u, in the buffer */
        size_t n, w;
        piece_of(o->ga.each, 0, u, r, &n);
        w = v ? u : n;
        const size_t total = v ? SIZE_MAX : n * (size_t)(p - 1);
        if (!P->staged) {
            unsigned readers = 0;
            for (int d = 1; d < p; d++)
                readers += (unsigned)in_round(nc__ga_scount(o, (me + d) % p),
                                              h, u, r);
            if (readers) {
                if ((rc = nc__rslot_claim(t, x)) != NUMACOLL_OK)
                    return rc;
                unsigned char *at = pieces_at(t, me, x, total);
                for (int d = 1; d < p; d++) {
                    const int to = (me + d) % p;
                    const size_t m = nc__ga_scount(o, to);
                    unsigned char *dst = at + (size_t)(d - 1) * w;
                    size_t k, lo = piece_of(m, h, u, r, &k);
                    if (v && r == 0) {
                        const uint64_t size = m;
                        memcpy(dst, &size, HDR);
                        dst += HDR;
                    }
                    if (io)
                        nc__ga_pack(io, to, lo, dst, k);
                    else if (k)
                        nc__copy(nc__copy_pick_read(o->ch->copy), dst,
                                 src + nc__ga_sdispl(o, to) + lo, k);
                }
                if (r == 0) {
                    uint64_t meta[2] = {!v        ? (uint64_t)o->ga.each
                                        : P->unfit ? V_MARK
                                                   : V_FIT,
                                        (uint64_t)f};
                    memcpy(nc__rslot(t, me, x)->full.data + NC_GA_INLINE,
                           meta, sizeof meta);
                }
                /* the pieces are written before the word (release) */
                nc__rslot_publish(t, x, e, readers);
            }
            if (P->own_later) {   /* round 0 is out: now the own block */
                nc__ga_own(t, o, 0, SIZE_MAX);
                P->own_later = 0;
            }
            P->staged = 1;
        }
        for (; P->i < p; P->i++) {
            const int j = (me + P->i) % p;
            const size_t m = nc__ga_count(o, j);
            if (!in_round(m, h, u, r))
                continue;
            if ((rc = nc__rslot_wait_full(t, j, x, e)) != NUMACOLL_OK)
                return rc;
            /* our piece is the ((me - j - 1) mod p)-th of j's round */
            const unsigned char *at =
                pieces_at(t, j, x, total) +
                (size_t)((me - j - 1 + p) % p) * w;
            if (r == 0) {
                uint64_t meta[2], size = m;
                memcpy(meta, nc__rslot(t, j, x)->full.data + NC_GA_INLINE,
                       sizeof meta);
                if (v)
                    memcpy(&size, at, HDR);
                if ((v ? meta[0] < V_FIT : meta[0] != m) || meta[1] != f ||
                    size != m)
                    return mismatch(t, j, meta, size, m, f, v);
                P->unfit |= meta[0] == V_MARK;
                at += h;
            }
            size_t k, lo = piece_of(m, h, u, r, &k);
            if (io)
                nc__ga_unpack(io, j, lo, at, k);
            else if (k)
                nc__copy(nc__copy_pick(o->ch->copy, m),
                         o->ga.recv + nc__ga_displ(o, j) + lo, at, k);
            nc__rslot_release(t, j, x);
        }
    }
    if (v)   /* every rank's verdict read in round 0 */
        t->red->a2av_try = !P->unfit;
    return NUMACOLL_OK;
}
