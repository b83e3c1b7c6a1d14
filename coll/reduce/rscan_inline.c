/*
 * Inline Reduce_scatter(_block), Scan and Exscan for small vectors: the
 * contributions travel in the inline Allreduce's self-validating lines
 * (whole elements, floor(56/e) per line, each line's word
 * nc__dword(seq + 1) stored after its payload, release), numbered by the
 * same call counter, and every rank folds what it needs itself with
 * reduce.h's fold, in rank order: bitwise the rank-order result, strictly
 * x_0 op x_1 op ... for a non-commutative user op. One wave of line
 * transfers, no staging slot, no release, no read-modify-write.
 *
 * Reduce_scatter, N elements in all, rank i's block b_i at o_i:
 *  every rank: write its contribution in L = ceil(N / epl) lines, then a
 *          header line (the recvcounts' hash, 0 for the block form: ranks
 *          whose counts differ with the same total find a mismatch
 *          there), its word last (release: it orders the L lines before
 *          it); wait for every other rank's header (acquire: every rank
 *          reads every other, so nc__ar_begin's reuse check never reads
 *          a shared line, as the Allgather's); then for each line k
 *          holding part of its block, fold that part of all p
 *          contributions into a private buffer and copy it out.
 *  Cost: t_l (the headers, overlapping) + p ceil(b_i / epl) lines read,
 *          their misses overlapping in the fold; 1 + L written.
 * Scan (Exscan), count elements, L = ceil(count / epl):
 *  rank i < p - 1: write its contribution in L lines, each word after
 *          its payload (release; read by the ranks above it:
 *          nc__ar_begin's reuse check reads their ack lines unless a
 *          call since read their lines);
 *  rank i: wait for the last line of every rank below it (acquire: its
 *          release orders the lines before it), then line by line fold
 *          ranks 0 .. i (Exscan: 0 .. i - 1; its own operand from its
 *          send buffer) into a private buffer and copy it out; Exscan's
 *          rank 0 receives nothing.
 *  Cost, rank i: t_l + i L lines read (overlapping), L written.
 *  rank i > 0 that found every line it waited for already there: asks
 *          for the next call's lines of the ranks below (prefetch, at
 *          most NC_SCAN_AHEAD), so back to back their transfer overlaps
 *          the caller's work between calls.
 * In place: every line is written (or the own operand read) before the
 * receive buffer's bytes of that line are overwritten.
 */
#include <string.h>

#include "coll/reduce/reduce.h"

/* Lines of the next call a Scan reader asks for ahead (see below). */
#define NC_SCAN_AHEAD 16

typedef struct env {
    numacoll_team_t *t;
    uint64_t seq;
    size_t line;          /* line of the contributions being folded */
    size_t at;            /* its first element folded                */
    size_t elem;
    const unsigned char *own;   /* non-NULL: this rank's operand here */
} env_t;

/* Operand j's part of the line: seen before the fold (the waits of the
 * steps below), so never a wait here. */
static int get_line(void *vp, int j, const void **ptr)
{
    env_t *e = vp;
    if (j == e->t->rank && e->own)
        *ptr = e->own;
    else
        *ptr = nc__arline(e->t, j, nc__ar_slot(e->seq), e->line)->data +
               e->at * e->elem;
    return NUMACOLL_OK;
}

static void put_line(void *vp, int j)
{
    (void)vp, (void)j;   /* reuse: nc__ar_begin */
}

/* Write count elements of own in lines first .. of this rank's slot: up
 * to the last element's last field (an MPI buffer may end there, before
 * the type's padding). */
static void put_vec(numacoll_team_t *t, const nc__op_t *o, unsigned slot,
                    size_t first, uint64_t seq)
{
    const size_t epl = nc__ar_per_line(o->rop.elem),
                 lb = epl * o->rop.elem,
                 nbytes = o->count ? nc__res_bytes(&o->rop, o->count) : 0;
    const uint64_t word = nc__dword(t, seq + 1);
    for (size_t k = 0; k < nc__ar_lines(o->count, epl); k++) {
        nc__rline_t *l = nc__arline(t, t->rank, slot, first + k);
        const size_t off = k * lb;
        nc__copy_line_in(l->data, (const unsigned char *)o->own + off,
                         nbytes - off < lb ? nbytes - off : lb);
        /* the payload must be visible before its sequence number */
        atomic_store_explicit(&l->word, word, memory_order_release);
    }
}

/* Fold elements [lo, hi) of the vector (within one line each step) of
 * operands 0 .. nfold - 1 into recv + (lo - base) elements, lines from
 * first on; resumable at P->k (element reached), P->fold. */
static int fold_range(numacoll_team_t *t, nc__op_t *o, size_t first,
                      size_t lo, size_t hi, int nfold, int own_from_send)
{
    nc__red_pos_t *P = &o->r;
    const nc__red_op_t *op = &o->rop;
    if (op->impl) {   /* every operand is there already */
        nc__fold_lines(t, op, nc__ar_slot(P->base), first, lo, hi, nfold,
                       own_from_send ? o->own : NULL, P->acc, o->recv);
        return NUMACOLL_OK;
    }
    const size_t epl = nc__ar_per_line(op->elem);
    env_t e = {t, P->base, 0, 0, op->elem, NULL};
    nc__fold_t f = {nfold, get_line, put_line, &e, NC_COPY_VEC};
    if (P->k < lo)
        P->k = lo;
    while (P->k < hi) {
        const size_t k = P->k / epl, at = P->k - k * epl,
                     end = (k + 1) * epl < hi ? (k + 1) * epl : hi,
                     n = end - P->k;
        e.line = first + k;
        e.at = at;
        if (own_from_send)
            e.own = (const unsigned char *)o->own + P->k * op->elem;
        int rc = nc__fold_step(op, &f, P->acc, n, &P->fold);
        if (rc != NUMACOLL_OK)
            return rc;
        memcpy((unsigned char *)o->recv + (P->k - lo) * op->elem, P->acc,
               nc__res_bytes(op, n));
        P->k = end;
        P->fold = 0;
    }
    return NUMACOLL_OK;
}

static size_t rs_count(const nc__op_t *o, int j)
{
    return o->rs_counts ? o->rs_counts[j] : o->rs_block;
}

/* As steps (o->r): base the call's number, i the headers (Scan: last
 * lines) seen (part 0), k the element reached and fold the operands
 * folded (part 1). */
int nc__reduce_scatter_inline_step(numacoll_team_t *t, nc__op_t *o)
{
    nc__red_pos_t *P = &o->r;
    const int me = t->rank;
    const uint64_t tag = o->rs_counts ? nc__rs_counts_tag(o, t->p) : 0;
    if (o->phase == 0) {
        int rc = nc__ar_begin(t, NC_AR_RD_ALL, -1, &P->base);
        if (rc != NUMACOLL_OK)
            return rc;
        const unsigned slot = nc__ar_slot(P->base);
        nc__rline_t *h = nc__arline(t, me, slot, 0);
        memcpy(h->data, &tag, sizeof tag);
        put_vec(t, o, slot, 1, P->base);
        atomic_store_explicit(&h->word, nc__dword(t, P->base + 1),
                              memory_order_release);
        P->part = 0;
        P->i = 1;
        P->k = 0;
        P->fold = 0;
        o->phase = 1;
    }
    const unsigned slot = nc__ar_slot(P->base);
    for (; P->part == 0 && P->i < t->p; P->i++) {
        const int j = (me + P->i) % t->p;
        nc__rline_t *h = nc__arline(t, j, slot, 0);
        uint64_t seen, theirs;
        nc__wait_why_t why = {j, "inline reduce_scatter header", 0,
                              (long)P->base};
        int rc = nc__poll(t, &h->word, NC_WAIT_EQ,
                          nc__dword(t, P->base + 1), &seen, &why);
        if (rc != NUMACOLL_OK)
            return rc;
        nc__ar_saw(t, j, P->base);
        memcpy(&theirs, h->data, sizeof theirs);
        if (theirs != tag)
            return nc__mismatch(t, j, "its reduce_scatter recvcounts differ "
                                "(the same total)");
    }
    P->part = 1;
    size_t lo = 0;
    for (int j = 0; j < me; j++)
        lo += rs_count(o, j);
    int rc = fold_range(t, o, 1, lo, lo + rs_count(o, me), t->p, 0);
    if (rc != NUMACOLL_OK)
        return rc;
    nc__ar_end(t, P->base);
    return NUMACOLL_OK;
}

int nc__scan_inline_step(numacoll_team_t *t, nc__op_t *o)
{
    nc__red_pos_t *P = &o->r;
    const int me = t->rank, top = me == t->p - 1;
    if (o->phase == 0) {
        int rc = nc__ar_begin(t, top ? NC_AR_RD_NONE : NC_AR_RD_ABOVE, -1,
                              &P->base);
        if (rc != NUMACOLL_OK)
            return rc;
        if (!top)
            put_vec(t, o, nc__ar_slot(P->base), 0, P->base);
        P->k = 0;
        P->i = 0;
        P->part = 0;
        P->fold = 0;
        P->late = 0;
        o->phase = 1;
    }
    const int nfold = o->coll == NC_COLL_SCAN ? me + 1 : me;
    /* the last line of every rank below (acquire: the writer's release
     * there orders its lines before it), then the fold reads them all */
    const size_t last = nc__ar_lines(o->count, nc__ar_per_line(o->rop.elem))
                        - 1;
    const unsigned slot = nc__ar_slot(P->base);
    for (; P->part == 0 && P->i < me; P->i++) {
        unsigned char *d;
        if (!nc__cond_holds(
                atomic_load_explicit(&nc__arline(t, P->i, slot, last)->word,
                                     memory_order_relaxed),
                NC_WAIT_EQ, nc__dword(t, P->base + 1)))
            P->late = 1;
        int rc = nc__ar_wait_line(t, P->i, P->base, last, &d);
        if (rc != NUMACOLL_OK)
            return rc;
    }
    P->part = 1;
    if (nfold > 0) {
        int rc = fold_range(t, o, 0, 0, o->count, nfold, 1);
        if (rc != NUMACOLL_OK)
            return rc;
    }
    nc__ar_end(t, P->base);
    /* Every line below was there at the first look: the writers run
     * ahead (calls back to back), so ask for their lines of the next call
     * now and let the transfer overlap whatever the caller does between
     * calls, as the hardware prefetcher does for tuned's eager FIFO (on
     * the VM, p = 2, cold buffers, Scan and Exscan of 8-64 bytes back to
     * back: 0.70-0.95x the time in four A/B runs, 1.0-1.1x in two with
     * the vCPUs close; the application's loop, where the lines come after
     * a barrier, 0.86-1.08x). At most NC_SCAN_AHEAD lines. */
    if (!P->late && me > 0) {
        const unsigned next = nc__ar_slot(P->base + 1);
        size_t n = 0;
        for (int j = me - 1; j >= 0 && n < NC_SCAN_AHEAD; j--)
            for (size_t k = 0; k <= last && n < NC_SCAN_AHEAD; k++, n++)
                __builtin_prefetch(nc__arline(t, j, next, k), 0, 3);
    }
    return NUMACOLL_OK;
}
