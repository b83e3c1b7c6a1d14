/*
 * Inline Allreduce for messages of at most 56 bytes: every rank publishes
 * its contribution in one cache line and every rank folds all p lines
 * itself, in rank order, so the result costs one cache-line transfer per
 * peer and no second (broadcast) wave. Every rank folds the same operands
 * in the same order with the same code, so the results are bitwise equal.
 *
 *  every rank: copy its contribution into its line of parity seq % 2,
 *          publish word = seq + 1 (release); wait for every other rank's
 *          line of that parity to read seq + 1 (acquire); fold
 *          x_0 op x_1 op ... op x_(p-1) into a private buffer; copy out.
 * There is no root, no inner rank and no leaf. Reduce and Allreduce of no
 * elements run it too, without the fold, so that a mismatch shows.
 *
 * Reuse without a release counter: rank r rewrites its parity-(seq % 2)
 * line at call seq + 2 only after its call seq + 1 saw every rank's
 * seq + 1 line; a rank publishes that line only after returning from
 * call seq, i.e. after its last read of r's seq line. Each rank's reads
 * therefore happen before r's next write (release/acquire through the
 * seq + 1 lines).
 *
 * Cost: t_l (the other lines arrive in parallel) + p * 56 bytes read +
 * (p-1) combines of at most 56 bytes. Shared slots: writes its own two
 * inline lines, reads every rank's. No parameter tunes it.
 */
#include <string.h>

#include "coll/reduce/reduce.h"

typedef struct env {
    numacoll_team_t *t;
    unsigned par;
    uint64_t seq;
} env_t;

static int get_line(void *vp, int j, const void **ptr)
{
    env_t *e = vp;
    nc__rline_t *l = nc__arline(e->t, j, e->par);
    *ptr = l->data;
    if (j == e->t->rank)
        return NUMACOLL_OK;
    uint64_t seen;
    nc__wait_why_t why = {j, "inline allreduce line", (long)e->par,
                          (long)e->seq};
    return nc__wait(e->t, &l->word, NC_WAIT_EQ, nc__dword(e->t, e->seq + 1),
                    &seen, &why);
}

static void put_line(void *vp, int j)
{
    (void)vp, (void)j;   /* reuse is ordered by the parity argument above */
}

int nc__allreduce_inline(numacoll_team_t *t, const nc__red_op_t *op,
                         const void *own, void *recv, size_t count)
{
    struct nc__red *R = t->red;
    const size_t nbytes = count * op->elem;
    env_t e = {t, (unsigned)(R->ar_seq & 1), R->ar_seq};
    R->ar_seq++;
    nc__rline_t *mine = nc__arline(t, t->rank, e.par);
    if (nbytes)
        memcpy(mine->data, own, nbytes);
    /* the payload must be visible before its sequence number */
    atomic_store_explicit(&mine->word, nc__dword(t, e.seq + 1),
                          memory_order_release);

    if (count == 0) {
        /* a call of no data: only the lines' signatures meet */
        const void *unused;
        for (int j = 0; j < t->p; j++) {
            int rc = get_line(&e, j, &unused);
            if (rc != NUMACOLL_OK)
                return rc;
        }
        return NUMACOLL_OK;
    }
    _Alignas(NC_CACHE_LINE) unsigned char acc[NC_RED_INLINE];
    nc__fold_t f = {t->p, get_line, put_line, &e, NC_COPY_VEC};
    int rc = nc__fold_run(op, &f, acc, count);
    if (rc == NUMACOLL_OK)
        memcpy(recv, acc, nbytes);
    return rc;
}
