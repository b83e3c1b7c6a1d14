/*
 * Reduce / Allreduce pieces every algorithm shares: the team's reduce
 * state, op descriptors, the slot claim and the fold. The entry points are
 * in coll/request.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/reduce/reduce.h"

/* ---- team state ------------------------------------------------------- */

unsigned nc__red_ar_lines(const numacoll_team_t *t)
{
    /* the layout plans NC_AR_SLOTS per unit: one more unit holds the
     * ack line */
    return t->red->ar_al + 1;
}

/* Lines per line slot the inline rule of (coll, alg) needs at most, its
 * largest size m (0: no such rule): per block for the gathers (times
 * `blocks` a rank writes), in whole elements of the worst size plus
 * `hdr` lines for the reductions. */
static size_t ga_lines(const numacoll_team_t *t, nc__coll_t c, nc__alg_t a,
                       size_t blocks)
{
    size_t m = nc__team_rule_max(t, c, a);
    return m ? blocks * nc__ag_inline_lines(m) : 0;
}

static size_t red_lines(const numacoll_team_t *t, nc__coll_t c, nc__alg_t a,
                        size_t hdr)
{
    size_t m = nc__team_rule_max(t, c, a), al = 0;
    for (size_t e = 1; m && e <= NC_RED_INLINE; e++) {
        size_t n = hdr + nc__ar_lines(m / e, nc__ar_per_line(e));
        if (n > al)
            al = n;
    }
    return al;
}

int nc__red_init(numacoll_team_t *t)
{
    struct nc__red *r = calloc(1, sizeof *r);
    if (!r)
        return NUMACOLL_ERR_NOMEM;
    t->red = r;
    int p = t->p;
    /* Inline Allreduce lines hold whole elements, so a line carries
     * between 29 (elements of 29 bytes) and 56 bytes: size them for the
     * worst element size up to the largest inline rule. */
    const size_t amax = nc__team_rule_max(t, NC_COLL_ALLREDUCE,
                                          NC_ALG_ALLREDUCE_INLINE),
                 rmax = nc__team_rule_max(t, NC_COLL_REDUCE,
                                          NC_ALG_REDUCE_INLINE);
    r->ar_al = 1;
    for (size_t e = 1; e <= NC_RED_INLINE; e++) {
        size_t al = nc__ar_lines((amax > rmax ? amax : rmax) / e,
                                 nc__ar_per_line(e));
        if (al > r->ar_al)
            r->ar_al = (unsigned)al;
    }
    /* the inline Allgather's blocks use the same lines */
    const size_t gmax = nc__team_rule_max(t, NC_COLL_ALLGATHER,
                                          NC_ALG_ALLGATHER_INLINE);
    if (nc__ag_inline_lines(gmax) > r->ar_al)
        r->ar_al = (unsigned)nc__ag_inline_lines(gmax);
    /* and the other inline gathers' and reductions': a Gather's writer one
     * block, a Scatter's root and every Alltoall rank p - 1; a
     * Reduce_scatter a header line more (nc__red_init's caps bound all) */
    const size_t pm = (size_t)(p > 1 ? p - 1 : 1);
    const size_t more[] = {
        ga_lines(t, NC_COLL_GATHER, NC_ALG_GATHER_INLINE, 1),
        ga_lines(t, NC_COLL_SCATTER, NC_ALG_SCATTER_INLINE, pm),
        ga_lines(t, NC_COLL_ALLTOALL, NC_ALG_ALLTOALL_INLINE, pm),
        red_lines(t, NC_COLL_REDUCE_SCATTER, NC_ALG_REDUCE_SCATTER_INLINE, 1),
        red_lines(t, NC_COLL_SCAN, NC_ALG_SCAN_INLINE, 0),
        red_lines(t, NC_COLL_EXSCAN, NC_ALG_EXSCAN_INLINE, 0)};
    for (size_t i = 0; i < sizeof more / sizeof *more; i++)
        if (more[i] > r->ar_al)
            r->ar_al = (unsigned)more[i];
    r->ar_all = UINT64_MAX;   /* as nc__red_reset */
    r->ar_known = calloc((size_t)p, sizeof *r->ar_known);
    /* the trees themselves are the team's (built for every k the rules
     * name); kids must hold the children of any of them */
    int mc = 0;
    for (int i = 0; i < t->ntrees; i++)
        if (nc__tree_max_children(&t->trees[i].tree) > mc)
            mc = nc__tree_max_children(&t->trees[i].tree);
    r->kids = malloc((size_t)(mc + 1) * sizeof *r->kids);
    r->expect = calloc(t->rs_max, sizeof *r->expect);
    r->slice_rank = malloc((size_t)p * sizeof *r->slice_rank);
    nc__tree_t groups;
    int rc = nc__tree_init(&groups, NUMACOLL_TREE_NUMA, p, 2, t->loc);
    if (rc == NUMACOLL_OK &&
        (!r->kids || !r->expect || !r->slice_rank || !r->ar_known))
        rc = NUMACOLL_ERR_NOMEM;
    /* Slices go to ranks group by group (the NUMA groups' members[]), so a
     * NUMA node's ranks own one contiguous part of every chunk. */
    for (int j = 0; rc == NUMACOLL_OK && j < p; j++) {
        r->slice_rank[j] = groups.members[j];
        if (r->slice_rank[j] == t->rank)
            r->my_slice = j;
    }
    nc__tree_fini(&groups);
    return rc;
}

void nc__red_fini(numacoll_team_t *t)
{
    struct nc__red *r = t->red;
    if (!r)
        return;
    free(r->kids);
    free(r->expect);
    free(r->slice_rank);
    free(r->ar_known);
    free(r);
    t->red = NULL;
}

void nc__red_reset(numacoll_team_t *t)
{
    struct nc__red *r = t->red;
    r->ticket = 0;
    r->ar_seq = 0;
    memset(r->expect, 0, t->rs_max * sizeof *r->expect);
    /* the ack lines were zeroed with the control lines */
    memset(r->ar_known, 0, (size_t)t->p * sizeof *r->ar_known);
    memset(r->ar_last, 0, sizeof r->ar_last);
    r->ar_all = UINT64_MAX;   /* none: no call n is that */
    r->a2av_try = 1;          /* as at creation (team.c's fast_rules) */
    r->sv_try = 1;
}

/* ---- inline line reuse (reduce.h) --------------------------------------- */

/* Whether rank j read this rank's lines written as `last`. */
static int reads(const numacoll_team_t *t, const struct nc__ar_last *last,
                 int j)
{
    switch (last->kind) {
    case NC_AR_RD_ALL:
        return j != t->rank;
    case NC_AR_RD_ONE:
        return j == last->who;
    case NC_AR_RD_ABOVE:
        return j > t->rank;
    default:
        return 0;
    }
}

int nc__ar_begin(numacoll_team_t *t, int kind, int who, uint64_t *base)
{
    struct nc__red *R = t->red;
    const uint64_t n = R->ar_seq;
    struct nc__ar_last *last = &R->ar_last[nc__ar_slot(n)];
    if (kind != NC_AR_RD_NONE) {
        /* after an inline call s that saw every rank's lines (ar_all =
         * s + 1), every rank had finished call s - 1 and all before it:
         * the last readers of this slot, written at n - NC_AR_SLOTS or
         * before, are done while n <= s - 1 + NC_AR_SLOTS, and the loop
         * below would find every known[j] past last->seq (about 80
         * instructions on an 8-byte call's path) */
        const int known = R->ar_all != UINT64_MAX &&
                          n - R->ar_all <= NC_AR_SLOTS - 2;
        for (int j = 0; !known && j < t->p; j++) {
            /* j must have finished call last->seq: known[j] > seq */
            if (!reads(t, last, j) ||
                (int64_t)(R->ar_known[j] - last->seq) > 0)
                continue;
            uint64_t seen;
            nc__wait_why_t why = {j, "inline line reuse ack",
                                  (long)nc__ar_slot(n),
                                  (long)last->seq};
            /* acquire: j's reads of our lines happen before our writes */
            int rc = nc__poll(t, nc__arack(t, j), NC_WAIT_GE, last->seq + 1,
                              &seen, &why);
            if (rc != NUMACOLL_OK)
                return rc;
            R->ar_known[j] = seen;
        }
        *last = (struct nc__ar_last){kind, who, n};
    }
    R->ar_seq = n + 1;
    *base = n;
    return NUMACOLL_OK;
}

/* ---- shared pieces ------------------------------------------------------ */

int nc__rslot_claim(numacoll_team_t *t, unsigned x)
{
    uint64_t seen;
    nc__wait_why_t why = {-1, "reduce slot release", (long)x,
                          (long)t->red->expect[x]};
    /* acquire: the readers' loads of the old contents happen before our
     * stores of the new ones */
    return nc__poll(t, &nc__rslot(t, t->rank, x)->rel, NC_WAIT_GE,
                    t->red->expect[x], &seen, &why);
}

int nc__fold_step(const nc__red_op_t *op, const nc__fold_t *f, void *dest,
                  size_t nelem, int *done)
{
    const void *a, *b;
    int rc;
    if (f->n == 1) {
        if ((rc = f->get(f->env, 0, &a)) != NUMACOLL_OK)
            return rc;
        /* a leaf staging its own input: the usual copy-in */
        if (dest != a)
            nc__copy(f->copy, dest, a, nc__res_bytes(op, nelem));
        f->put(f->env, 0);
        *done = 1;
        return NUMACOLL_OK;
    }
    if (op->impl) {
        /* the first two together (dest may be operand 0 itself) */
        if (*done == 0) {
            if ((rc = f->get(f->env, 0, &a)) != NUMACOLL_OK ||
                (rc = f->get(f->env, 1, &b)) != NUMACOLL_OK)
                return rc;
            nc__op_apply(op->impl, dest, a, b, nelem);
            f->put(f->env, 0);
            f->put(f->env, 1);
            *done = 2;
        }
        for (; *done < f->n; (*done)++) {
            if ((rc = f->get(f->env, *done, &b)) != NUMACOLL_OK)
                return rc;
            op->impl->k2(dest, b, nelem);
            f->put(f->env, *done);
        }
        return NUMACOLL_OK;
    }
    /* right to left: operand n - 1 - done next */
    if (*done == 0) {
        if ((rc = f->get(f->env, f->n - 1, &b)) != NUMACOLL_OK)
            return rc;
        nc__copy(f->copy, dest, b, nelem * op->elem);
        f->put(f->env, f->n - 1);
        *done = 1;
    }
    for (; *done < f->n; (*done)++) {
        const int j = f->n - 1 - *done;
        if ((rc = f->get(f->env, j, &a)) != NUMACOLL_OK)
            return rc;
        op->fn(op->ctx, a, dest, nelem);
        f->put(f->env, j);
    }
    return NUMACOLL_OK;
}

/* ---- op descriptors ------------------------------------------------------ */

int nc__red_op_predef(numacoll_team_t *t, nc__red_op_t *op,
                      numacoll_dtype_t dtype, numacoll_op_t o)
{
    const nc__op_impl_t *impl = nc__op_impl(o, dtype);
    if (!impl) {
        const char *on = numacoll_op_name(o), *dn = numacoll_dtype_name(dtype);
        if (!on || !dn)
            return nc__team_fail(t, NUMACOLL_ERR_ARG,
                                 "unknown %s %d", on ? "dtype" : "op",
                                 on ? (int)dtype : (int)o);
        return nc__team_fail(t, NUMACOLL_ERR_ARG,
                             "op %s is not defined on type %s", on, dn);
    }
    *op = (nc__red_op_t){.elem = numacoll_dtype_size(dtype), .impl = impl,
                         .dtype = (int)dtype, .opn = (int)o,
                         .commutative = 1};
    return NUMACOLL_OK;
}

int nc__red_op_user(numacoll_team_t *t, nc__red_op_t *op, size_t elem_size,
                    numacoll_user_op_fn fn, void *ctx, int commutative)
{
    if (!fn)
        return nc__team_fail(t, NUMACOLL_ERR_ARG, "user op without function");
    if (elem_size == 0)
        return nc__team_fail(t, NUMACOLL_ERR_ARG,
                             "user op element of 0 bytes");
    *op = (nc__red_op_t){.elem = elem_size, .fn = fn, .ctx = ctx,
                         .dtype = -1, .opn = -1,
                         .commutative = commutative != 0};
    return NUMACOLL_OK;
}

/* ---- Allreduce ------------------------------------------------------------ */

nc__alg_t nc__allreduce_choose(const numacoll_team_t *t, size_t nbytes)
{
    return nc__team_choice(t, NC_COLL_ALLREDUCE, nbytes)->alg;
}
