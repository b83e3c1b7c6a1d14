/*
 * Inline Alltoall for small blocks (the uniform form): every rank writes
 * its p - 1 outgoing blocks in the inline Allreduce's self-validating
 * lines, in the inline Allgather's block format (reduce.h: nc__ag_put /
 * nc__ag_get, line 0 carrying the block's size), and reads its block out
 * of every other rank's lines. One wave of line transfers, no staging slot, no
 * release, no read-modify-write.
 *
 * Blocks of n bytes, L = L(n) lines (allgather_inline.c). Rank s puts
 * its block for rank d in lines pos_s(d) L .. pos_s(d) L + L - 1,
 * pos_s(d) = (d - s - 1) mod p (0 .. p - 2): (p - 1) L lines per slot
 * (nc__red_init sizes them for the table's largest inline rule).
 *  every rank: write its p - 1 outgoing blocks, each line's word last
 *          (release); its own block send -> recv (in place: it stays);
 *          then for every other rank j, from the next one on: wait for
 *          the word of line 0 of its block for this rank (acquire; the
 *          size checked), then of the block's last line (acquire), copy
 *          the payloads to recv + j * n.
 * In place: the blocks are all written to the lines before any is read
 * into the buffer they came from.
 *
 * Reuse: as the inline Allgather's. Every rank reads at least line 0 of
 * every other rank's blocks in every call, so by the time a rank writes
 * a line slot again (call seq + 4) its call seq + 1 has seen every rank's
 * seq + 1 lines, which each wrote after its last read of call seq:
 * nc__ar_begin finds every reader done without reading a shared line.
 *
 * Cost: 2 t_l (t_l where L = 1) + (p - 1) L lines written and (p - 1) L
 * read, the reads of a block overlapping in its copy.
 * Shared lines: writes its own (p - 1) L, reads L of every other rank's.
 */
#include <string.h>

#include "coll/gather/gather.h"

/* First line of s's block for d. */
static size_t a2a_line(int p, int s, int d, size_t lines)
{
    return (size_t)((d - s - 1 + p) % p) * lines;
}

/* As steps (o->g): base the call's number, i the other ranks read so far
 * (from the next one on), r the line of that rank's block being read. */
int nc__alltoall_inline_step(numacoll_team_t *t, nc__op_t *o)
{
    nc__ga_pos_t *P = &o->g;
    const int me = t->rank, p = t->p;
    const size_t n = o->ga.each, lines = nc__ag_inline_lines(n);
    if (o->phase == 0) {
        int rc = nc__ar_begin(t, NC_AR_RD_ALL, -1, &P->base);
        if (rc != NUMACOLL_OK)
            return rc;
        const unsigned char *src = o->ga.in_place ? o->ga.recv : o->ga.send;
        const unsigned slot = nc__ar_slot(P->base);
        for (int k = 1; k < p; k++) {
            const int d = (me + k) % p;
            nc__ag_put(t, slot, a2a_line(p, me, d, lines),
                       nc__ga_at(src, (size_t)d * n), n, P->base);
        }
        if (!o->ga.in_place && n)
            memcpy(o->ga.recv + (size_t)me * n, src + (size_t)me * n, n);
        P->i = 0;
        P->r = 0;
        o->phase = 1;
    }
    for (; P->i < p - 1; P->i++, P->r = 0) {
        const int j = (me + 1 + P->i) % p;
        int rc = nc__ag_get(t, j, nc__ar_slot(P->base),
                            a2a_line(p, j, me, lines),
                            nc__ga_at(o->ga.recv, (size_t)j * n), n, P->base,
                            &P->r, "inline alltoall line");
        if (rc != NUMACOLL_OK)
            return rc;
    }
    nc__ar_end(t, P->base);
    return NUMACOLL_OK;
}
