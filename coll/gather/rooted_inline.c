/*
 * Inline Gather and Scatter for small blocks (uniform forms: every rank
 * knows the block size, so every rank picks the same algorithm): the
 * blocks travel in the inline Allreduce's self-validating lines, in the
 * inline Allgather's block format (reduce.h: nc__ag_put / nc__ag_get,
 * line 0 carrying the block's size, so a rank whose idea of it differs
 * fails with NUMACOLL_ERR_MISMATCH instead of waiting), numbered by the
 * same call counter. One wave of line transfers, no staging slot, no
 * release.
 *
 * Gather, root r, blocks of n bytes, L = L(n) lines (allgather_inline.c):
 *  non-root: wait until the root is known to have finished the last call
 *          that read its lines of this slot (nc__ar_begin: free when a
 *          call since read one of the root's lines, else one look at the
 *          root's ack line), write its block in L lines, each word last
 *          (release), store its ack (end of the call);
 *  root:   its own block to its receive buffer (not in place); for every
 *          other rank j from r + 1 on: wait for the word of j's line 0
 *          (acquire; its size checked), then of its last line (acquire:
 *          j's release there orders the lines before it), copy the
 *          payloads to j * n; store its ack.
 * Cost: non-root t_l (its ack check, often none) + writes L lines;
 * root 2 t_l (t_l where L = 1) + (p - 1) L lines read, their misses
 * overlapping in the copy.
 *
 * Scatter, root r: the root writes rank d's block in lines
 * pos(d) L .. pos(d) L + L - 1, pos(d) = (d - r - 1) mod p (0 .. p - 2),
 * so (p - 1) L lines per line slot (nc__red_init sizes them for the table's
 * largest inline scatter rule); rank d reads its L lines and stores its
 * ack, which the root reads before it reuses that slot (unless a later
 * call in which it read d's lines told it already).
 * Cost: root (p - 1) L lines written (+ t_l for its readers' acks when no
 * call between told it); rank d 2 t_l (t_l where L = 1) + L lines read.
 *
 * Scatterv whose rule (that of the largest size: only the root knows
 * the blocks) is single copy: tried through the lines first where the team's
 * last such Scatterv fitted them (sv_try, equal on every rank). The root
 * writes every destination's block in its share of S lines
 * (nc__sv_share) where each of them has at most sv_max bytes (its own
 * does not travel), else only
 * line 0 of each share, NC_AG_UNFIT; a rank reads line 0 of its share
 * and then its block, or, told unfit, the call runs its rule's algorithm
 * (single copy, which chooses staged below its threshold) from its
 * start on every rank, and the next Scatterv goes there directly until
 * a single-copy choice (gather_cma.c's pick) sees the root's largest
 * block fit again. Without the try, a small Scatterv paid the choice's
 * line transfer and then the staged root's wait for its readers.
 * Cost: as the uniform Scatter where it fits (line 0 carries the size,
 * S lines a share); where it does not, t_l + the rule's algorithm.
 * As in every lines-only Scatter, a rank that takes itself for the root
 * while the others name another writes and returns unnoticed (the
 * single-copy choice found it: docs/usage.md).
 *
 * Reuse: reduce.h's nc__ar_begin; a Gather's non-root reads nothing of
 * the root, so it relies on the root's ack line (plain store), as a
 * Scatter's root on its readers'. Shared lines: a writer's own lines and
 * ack, read by its readers; the writer reads its readers' acks.
 */
#include <string.h>

#include "coll/gather/gather.h"

/* Rank d's first line in the root's lines of a scatter of L-line blocks */
static size_t scatter_line(const numacoll_team_t *t, int root, int d,
                           size_t lines)
{
    return (size_t)((d - root - 1 + t->p) % t->p) * lines;
}

/* As steps (o->g): base the call's number, i the ranks read so far (root:
 * from the next one on), r the line of that rank being read. */
int nc__gather_inline_step(numacoll_team_t *t, nc__op_t *o)
{
    nc__ga_pos_t *P = &o->g;
    const int me = t->rank, root = o->root;
    const size_t n = o->ga.each;
    if (o->phase == 0) {
        int rc = nc__ar_begin(t, me == root ? NC_AR_RD_NONE : NC_AR_RD_ONE,
                              root, &P->base);
        if (rc != NUMACOLL_OK)
            return rc;
        P->i = 0;
        P->r = 0;
        if (me != root)
            nc__ag_put(t, nc__ar_slot(P->base), 0, o->ga.send, n,
                       P->base);
        else if (!o->ga.in_place && n)
            memcpy(o->ga.recv + (size_t)me * n, o->ga.send, n);
        o->phase = 1;
    }
    if (me == root) {
        for (; P->i < t->p - 1; P->i++, P->r = 0) {
            const int j = (int)((me + 1 + P->i) % t->p);
            int rc = nc__ag_get(t, j, nc__ar_slot(P->base), 0,
                                nc__ga_at(o->ga.recv, (size_t)j * n), n,
                                P->base, &P->r, "inline gather line");
            if (rc != NUMACOLL_OK)
                return rc;
        }
    }
    nc__ar_end(t, P->base);
    return NUMACOLL_OK;
}

int nc__scatter_inline_step(numacoll_team_t *t, nc__op_t *o)
{
    nc__ga_pos_t *P = &o->g;
    const int me = t->rank, root = o->root;
    const size_t n = o->ga.each, lines = nc__ag_inline_lines(n);
    if (o->phase == 0) {
        int rc = nc__ar_begin(t, me == root ? NC_AR_RD_ALL : NC_AR_RD_NONE,
                              -1, &P->base);
        if (rc != NUMACOLL_OK)
            return rc;
        P->r = 0;
        if (me == root) {
            const unsigned slot = nc__ar_slot(P->base);
            for (int k = 1; k < t->p; k++) {
                const int d = (root + k) % t->p;
                nc__ag_put(t, slot, scatter_line(t, root, d, lines),
                           nc__ga_at(o->ga.send, (size_t)d * n), n, P->base);
            }
            if (!o->ga.in_place && n)
                memcpy(o->ga.recv, o->ga.send + (size_t)me * n, n);
        } else {
            nc__prefetch_w(o->ga.recv, n, NC_PREFETCH_MAX);   /* a reader */
        }
        o->phase = 1;
    }
    if (me != root) {
        int rc = nc__ag_get(t, root, nc__ar_slot(P->base),
                            scatter_line(t, root, me, lines), o->ga.recv, n,
                            P->base, &P->r, "inline scatter line");
        if (rc != NUMACOLL_OK)
            return rc;
    }
    nc__ar_end(t, P->base);
    return NUMACOLL_OK;
}

/* As steps (o->g): base the call's number, unfit the root's verdict (a
 * reader: once read), r the line of this rank's block being read. */
int nc__scatterv_try_step(numacoll_team_t *t, nc__op_t *o)
{
    nc__ga_pos_t *P = &o->g;
    const int me = t->rank, p = t->p, root = o->root;
    const size_t max = t->red->sv_max;
    int rc;
    if (o->phase == 0) {
        if ((rc = nc__ar_begin(t, me == root ? NC_AR_RD_ALL : NC_AR_RD_NONE,
                               -1, &P->base)) != NUMACOLL_OK)
            return rc;
        P->r = 0;
        P->unfit = 0;
        if (me == root) {
            const unsigned slot = nc__ar_slot(P->base);
            P->unfit = nc__ga_past(t, o, max);
            for (int k = 1; k < p; k++) {
                const int d = (root + k) % p;
                if (P->unfit)
                    nc__ag_put_unfit(t, slot, nc__sv_share(t, root, d),
                                     P->base);
                else
                    nc__ag_put(t, slot, nc__sv_share(t, root, d),
                               nc__ga_at(o->ga.send, nc__ga_displ(o, d)),
                               nc__ga_count(o, d), P->base);
            }
            if (!P->unfit)
                nc__ga_own(t, o, 0, SIZE_MAX);
        } else {
            nc__prefetch_w(o->ga.recv, o->ga.own, NC_PREFETCH_MAX);
        }
        o->phase = 1;
    }
    const unsigned slot = nc__ar_slot(P->base);
    const size_t first = nc__sv_share(t, root, me);
    if (me != root && P->r == 0) {
        /* line 0: the root's verdict, or the block's size (again on a
         * resumed read: the line stays until this rank's ack) */
        uint64_t size;
        if ((rc = nc__ag_size(t, root, slot, first, P->base, &size,
                              "inline scatterv line")) != NUMACOLL_OK)
            return rc;
        P->unfit = size == NC_AG_UNFIT;
    }
    if (me != root && !P->unfit &&
        (rc = nc__ag_get(t, root, slot, first, o->ga.recv, o->ga.own,
                         P->base, &P->r, "inline scatterv line")) !=
            NUMACOLL_OK)
        return rc;
    nc__ar_end(t, P->base);
    /* every rank has the root's verdict */
    t->red->sv_try = !P->unfit;
    if (!P->unfit)
        return NUMACOLL_OK;
    /* the rule's algorithm from its start (nothing of it is done yet) */
    o->alg = (int)o->ch->alg;
    memset(P, 0, sizeof *P);
    o->phase = 0;
    return nc__ga_cma(o->alg) ? nc__ga_cma_step(t, o)
                              : nc__scatter_staged_step(t, o);
}
