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
 *
 * Alltoallv: a rank knows only its own blocks (those it sends and those
 * it receives), so no rank can tell alone whether the call fits the
 * lines. Each block gets a fixed share of S = floor(ar_al / (p - 1))
 * lines (block for d at pos_s(d) S), and the call is tried inline where
 * the team's last Alltoallv fitted (a2av_try, the same on every rank):
 *  every rank: if each of its blocks, out and in, has at most a2av_max
 *          bytes (L <= S, and the alltoall rules inline up to there), it
 *          writes its blocks as above; else only line 0 of each, its size
 *          NC_AG_UNFIT. Then it reads line 0 of every other rank's block
 *          for it (which every rank writes either way); if no rank said
 *          unfit, copies the blocks out as above, else the call runs the
 *          rule's algorithm (o->ch: staged or single copy) from its
 *          start, and the next Alltoallv is not tried inline.
 * Every rank has seen every verdict, so a2av_try stays equal; the staged
 * and single-copy Alltoallv publish each rank's verdict too (in round
 * 0's meta, in the offer's largest block), so after a call of large
 * blocks the next small one goes inline again. Line reuse as above: every
 * rank reads line 0 of every other rank's blocks in both outcomes.
 * Cost: as the uniform form where it fits; where it does not, t_l + the
 * rule's algorithm (a call of large blocks after one of small blocks:
 * the next ones run the rule's algorithm alone).
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

/* As steps (o->g): base the call's number, unfit the verdicts read so
 * far, i the other ranks read so far (phase 1: their verdicts, 2: their
 * blocks), r the line of that rank's block being read. */
int nc__alltoallv_inline_step(numacoll_team_t *t, nc__op_t *o)
{
    nc__ga_pos_t *P = &o->g;
    const int me = t->rank, p = t->p;
    const size_t S = nc__ar_share(t);
    const unsigned char *src = o->ga.in_place ? o->ga.recv : o->ga.send;
    int rc;
    if (o->phase == 0) {
        if ((rc = nc__ar_begin(t, NC_AR_RD_ALL, -1, &P->base)) !=
            NUMACOLL_OK)
            return rc;
        const unsigned slot = nc__ar_slot(P->base);
        P->unfit = !nc__a2av_fits(t, o);
        for (int k = 1; k < p; k++) {
            const int d = (me + k) % p;
            const size_t first = a2a_line(p, me, d, S);
            if (P->unfit)
                nc__ag_put_unfit(t, slot, first, P->base);
            else
                nc__ag_put(t, slot, first,
                           nc__ga_at(src, nc__ga_sdispl(o, d)),
                           nc__ga_scount(o, d), P->base);
        }
        /* the own block now, while the others' lines travel (a fallback
         * copies it again: the same bytes) */
        const size_t own = nc__ga_count(o, me);
        if (!o->ga.in_place && own)
            memcpy(o->ga.recv + nc__ga_displ(o, me),
                   src + nc__ga_sdispl(o, me), own);
        P->i = 0;
        o->phase = 1;
    }
    const unsigned slot = nc__ar_slot(P->base);
    if (o->phase == 1) {
        for (; P->i < p - 1; P->i++) {
            const int j = (me + 1 + P->i) % p;
            uint64_t size;
            if ((rc = nc__ag_size(t, j, slot, a2a_line(p, j, me, S), P->base,
                                  &size, "inline alltoallv line")) !=
                NUMACOLL_OK)
                return rc;
            P->unfit |= size == NC_AG_UNFIT;
        }
        nc__ar_all(t, P->base);   /* it read line 0 of every rank */
        t->red->a2av_try = !P->unfit;
        if (P->unfit) {
            /* the rule's algorithm from its start; of this call only the
             * own block is in recv (in place: the blocks to send are
             * intact) */
            nc__ar_end(t, P->base);
            o->alg = (int)o->ch->alg;
            memset(P, 0, sizeof *P);
            o->phase = 0;
            return nc__ga_cma(o->alg) ? nc__ga_cma_step(t, o)
                                      : nc__alltoall_staged_step(t, o);
        }
        P->i = 0;
        P->r = 0;
        o->phase = 2;
    }
    for (; P->i < p - 1; P->i++, P->r = 0) {
        const int j = (me + 1 + P->i) % p;
        if ((rc = nc__ag_get(t, j, slot, a2a_line(p, j, me, S),
                             nc__ga_at(o->ga.recv, nc__ga_displ(o, j)),
                             nc__ga_count(o, j), P->base, &P->r,
                             "inline alltoallv line")) != NUMACOLL_OK)
            return rc;
    }
    nc__ar_end(t, P->base);
    return NUMACOLL_OK;
}
