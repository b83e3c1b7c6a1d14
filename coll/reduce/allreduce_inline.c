/*
 * Inline Allreduce for small messages: every rank publishes its
 * contribution in L self-validating cache lines and every rank folds all
 * p contributions itself, in rank order, so the result costs the line
 * transfers of one wave and no second (broadcast) one. Every rank folds
 * the same operands in the same order with the same code, so the results
 * are bitwise equal.
 *
 * A line carries whole elements, floor(56/e) of e bytes (so each line
 * folds on its own), and a word sig32 << 32 | (seq + 1) stored after its
 * payload (release): a reader needs no other flag, and no line is written
 * by two ranks (no read-modify-write anywhere). L = ceil(count /
 * floor(56/e)); every rank's lines are sized for the largest inline rule
 * at the worst element size (nc__red_init).
 *
 *  every rank: copy its contribution into its L lines of slot seq % 4,
 *          each line's word last (release); then wait for every other
 *          rank's lines of that slot to read seq + 1 (acquire; its last
 *          line first where L > 1, see Reading below); line by line, fold
 *          x_0 op x_1 op ... op x_(p-1) of the line's elements into a
 *          private buffer and copy it out (nc__res_bytes: no padding
 *          after the last element).
 * There is no root, no inner rank and no leaf. Reduce and Allreduce of no
 * elements run it too (one line, no fold), so that a mismatch shows.
 *
 * Inline Reduce (alg=inline of reduce), root r: the same lines, read by
 * the root alone (the inline Gather's pattern).
 *  non-root: wait until r is known to have finished the last call that
 *          read its lines of this slot (nc__ar_begin: free when a call
 *          since read one of r's lines, else one look at r's ack line);
 *          write its L lines as above, store its ack, return.
 *  root:   write its own lines too (one operand source for all p);
 *          wait for every other rank's lines as every rank does above,
 *          fold x_0 op ... op x_(p-1) in rank order line by line, copy
 *          out; store its ack.
 * Cost: non-root L line writes (+ t_l when its ack check must look);
 * root as an Allreduce rank below: one wave of line transfers towards
 * the root, none back.
 *
 * Reuse without a release counter (reduce.h's nc__ar_begin): rank r
 * rewrites its lines of slot seq % 4 (NC_AR_SLOTS, used in turn) at
 * call seq + 4 only once it knows every reader finished call seq. After
 * an Allreduce at seq + 1 (or seq + 2, seq + 3) it knows without
 * looking: that call saw every rank's seq + 1 lines, which
 * a rank publishes only after returning from call seq, i.e. after its
 * last read of r's seq lines (release/acquire through the seq + 1
 * lines). After an inline call that read no one (a Gather's non-root) it
 * reads the readers' ack lines.
 *
 * Reading: with L > 1 every other rank's last line is awaited first. Its
 * word is stored (release) after all that rank's earlier lines, so when
 * it reads seq + 1 they are all written: they are then fetched at once
 * (their transfers overlap) and, for a predefined op, folded line by line
 * with the kernels alone, in the same order and calls as nc__fold_step.
 * (Prefetching every line before that wait was slower: readers pulled
 * lines the writers had not written yet.) User ops fold through
 * nc__fold_step's callbacks, line by line.
 *
 * Cost: t_l + t_o + p * L * 64 bytes read + (p - 1) folds of L lines,
 * t_l one line transfer (the last line's), t_o what the others' overlapped
 * transfers add after it (up to t_l). Waiting line by line cost
 * t_l + (L - 1) t_x with t_x about 0.4 t_l (the 2-vCPU VM, vCPUs far
 * apart), so the transfers alone gain only from L = 4 on; at L = 2 the
 * measured gain (64 B: 1.05 -> 0.78 us there) is the folding's, which no
 * longer spends about 200 instructions a line at p = 2 in callbacks.
 * Shared lines: writes its own L of one slot, reads every rank's. The
 * largest inline rule of the tuning table sets how far it is used.
 */
#include <string.h>

#include "coll/copy.h"
#include "coll/reduce/reduce.h"

typedef struct env {
    numacoll_team_t *t;
    uint64_t seq;
    size_t line;          /* the line being folded */
} env_t;

int nc__ar_wait_line(numacoll_team_t *t, int j, uint64_t seq, size_t k,
                     unsigned char **data)
{
    nc__rline_t *l = nc__arline(t, j, nc__ar_slot(seq), k);
    *data = l->data;
    if (j == t->rank)
        return NUMACOLL_OK;
    uint64_t seen;
    nc__wait_why_t why = {j, "inline reduction line", (long)k, (long)seq};
    int rc = nc__poll(t, &l->word, NC_WAIT_EQ, nc__dword(t, seq + 1), &seen,
                      &why);
    if (rc == NUMACOLL_OK)
        nc__ar_saw(t, j, seq);
    return rc;
}

static int get_line(void *vp, int j, const void **ptr)
{
    env_t *e = vp;
    unsigned char *d;
    int rc = nc__ar_wait_line(e->t, j, e->seq, e->line, &d);
    *ptr = d;
    return rc;
}

static void put_line(void *vp, int j)
{
    (void)vp, (void)j;   /* reuse: reduce.h's nc__ar_begin (above) */
}

/* This rank's lines of call base (its slot's): each line's payload,
 * then its word (release: the payload is visible before the number).
 * nbytes stops at the last element's last field (nc__res_bytes): an MPI
 * buffer may end there, before the type's padding. */
static void put_lines(numacoll_team_t *t, uint64_t base, const void *own,
                      size_t nbytes, size_t lb, size_t lines)
{
    const unsigned slot = nc__ar_slot(base);
    const uint64_t word = nc__dword(t, base + 1);
    for (size_t k = 0; k < lines; k++) {
        nc__rline_t *mine = nc__arline(t, t->rank, slot, k);
        const size_t off = k * lb;
        if (off < nbytes)
            nc__copy_line_in(mine->data, (const unsigned char *)own + off,
                             nbytes - off < lb ? nbytes - off : lb);
        atomic_store_explicit(&mine->word, word, memory_order_release);
    }
}

/* The end of inline call base, where this rank saw every rank's lines. */
static int end_all(numacoll_team_t *t, uint64_t base)
{
    nc__ar_all(t, base);
    nc__ar_end(t, base);
    return NUMACOLL_OK;
}

/* As steps (o->r): base the call's number, k the line being folded (i
 * the rank awaited in a call of no data), fold the operands of line k
 * folded into acc so far. A step returns NC_AGAIN at another rank's line
 * and resumes there; the lines are written once, in the first step. */
int nc__allreduce_inline_step(numacoll_team_t *t, nc__op_t *o)
{
    const nc__red_op_t *op = &o->rop;
    const size_t count = o->count;
    nc__red_pos_t *P = &o->r;
    const size_t epl = nc__ar_per_line(op->elem),
                 lb = epl * op->elem,
                 nbytes = count * op->elem,
                 lines = nc__ar_lines(count, epl);
    /* a Reduce's lines are read by its root alone (its own too) */
    const int root = o->alg == NC_ALG_REDUCE_INLINE ? o->root : -1;
    if (o->phase == 0) {
        /* a Reduce root's result lines: their misses overlap the waits
         * below (measured on 16 cores; an Allreduce's 8 bytes came out
         * 2-22% slower with it, so not there) */
        if (t->rank == root)
            nc__prefetch_w(o->recv, nbytes, NC_PREFETCH_SMALL);
        int rc = nc__ar_begin(t, root < 0 ? NC_AR_RD_ALL : NC_AR_RD_ONE, root,
                              &P->base);
        if (rc != NUMACOLL_OK)
            return rc;
        P->k = 0;
        P->i = 0;
        P->fold = 0;
        put_lines(t, P->base, o->own, count ? nc__res_bytes(op, count) : 0,
                  lb, lines);
        o->phase = 1;
        if (root >= 0 && t->rank != root) {
            nc__ar_end(t, P->base);
            return NUMACOLL_OK;
        }
    }
    env_t e = {t, P->base, 0};

    if (count == 0) {
        /* a call of no data: only the lines' signatures meet */
        const void *unused;
        for (; P->i < t->p; P->i++) {
            int rc = get_line(&e, P->i, &unused);
            if (rc != NUMACOLL_OK)
                return rc;
        }
        return end_all(t, P->base);
    }
    const unsigned slot = nc__ar_slot(P->base);
    if (op->impl || (lines > 1 && P->k == 0 && P->fold == 0)) {
        /* Every rank's last line first: its word is stored (release)
         * after all the rank's earlier lines, so once it reads seq + 1
         * they are all there, and fetching them at once overlaps their
         * transfers, where waiting line by line pays one transfer after
         * another. (Fetching before they were written was slower: it
         * pulled lines the writer then had to take back.) A step that
         * returns NC_AGAIN here redoes this on resuming, at no cost for
         * the ranks already seen. */
        for (int j = 0; j < t->p; j++) {
            if (j == t->rank)
                continue;
            unsigned char *unused;
            int rc = nc__ar_wait_line(t, j, P->base, lines - 1, &unused);
            if (rc != NUMACOLL_OK)
                return rc;
            for (size_t k = 0; k + 1 < lines; k++)
                __builtin_prefetch(nc__arline(t, j, slot, k), 0, 3);
        }
        if (op->impl) {
            /* every line is there: fold them with the kernels alone */
            nc__fold_lines(t, op, slot, 0, 0, count, t->p, NULL, P->acc,
                           o->recv);
            return end_all(t, P->base);
        }
    }
    nc__fold_t f = {t->p, get_line, put_line, &e, NC_COPY_VEC};
    for (; P->k < lines; P->k++, P->fold = 0) {
        const size_t k = P->k;
        const size_t n = count - k * epl < epl ? count - k * epl : epl;
        e.line = k;
        int rc = nc__fold_step(op, &f, P->acc, n, &P->fold);
        if (rc != NUMACOLL_OK)
            return rc;
        memcpy((unsigned char *)o->recv + k * lb, P->acc,
               nc__res_bytes(op, n));
    }
    return end_all(t, P->base);
}
