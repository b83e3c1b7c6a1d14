/*
 * Reduce / Allreduce entry points: argument checks, op descriptors, the
 * choice of algorithm by size, the team's reduce state, and the two pieces
 * every algorithm shares (slot claim and the fold).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/reduce/reduce.h"

/* ---- team state ------------------------------------------------------- */

unsigned nc__red_ar_lines(const numacoll_team_t *t)
{
    return t->red->ar_al;
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
                                          NC_ALG_ALLREDUCE_INLINE);
    r->ar_al = 1;
    for (size_t e = 1; e <= NC_RED_INLINE; e++) {
        size_t al = nc__ar_lines(amax / e, nc__ar_per_line(e));
        if (al > r->ar_al)
            r->ar_al = (unsigned)al;
    }
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
    if (rc == NUMACOLL_OK && (!r->kids || !r->expect || !r->slice_rank))
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
    free(r);
    t->red = NULL;
}

void nc__red_reset(numacoll_team_t *t)
{
    struct nc__red *r = t->red;
    r->ticket = 0;
    r->ar_seq = 0;
    memset(r->expect, 0, t->rs_max * sizeof *r->expect);
}

/* ---- shared pieces ------------------------------------------------------ */

int nc__rslot_claim(numacoll_team_t *t, unsigned x)
{
    uint64_t seen;
    nc__wait_why_t why = {-1, "reduce slot release", (long)x,
                          (long)t->red->expect[x]};
    /* acquire: the readers' loads of the old contents happen before our
     * stores of the new ones */
    return nc__wait(t, &nc__rslot(t, t->rank, x)->rel, NC_WAIT_GE,
                    t->red->expect[x], &seen, &why);
}

int nc__fold_run(const nc__red_op_t *op, const nc__fold_t *f, void *dest,
                 size_t nelem)
{
    const void *a, *b;
    int rc;
    if (f->n == 1) {
        if ((rc = f->get(f->env, 0, &a)) != NUMACOLL_OK)
            return rc;
        if (dest != a)   /* a leaf staging its own input: the usual copy-in */
            nc__copy(f->copy, dest, a, nelem * op->elem);
        f->put(f->env, 0);
        return NUMACOLL_OK;
    }
    if (op->impl) {
        if ((rc = f->get(f->env, 0, &a)) != NUMACOLL_OK ||
            (rc = f->get(f->env, 1, &b)) != NUMACOLL_OK)
            return rc;
        nc__op_apply(op->impl, dest, a, b, nelem);
        f->put(f->env, 0);
        f->put(f->env, 1);
        for (int j = 2; j < f->n; j++) {
            if ((rc = f->get(f->env, j, &b)) != NUMACOLL_OK)
                return rc;
            op->impl->k2(dest, b, nelem);
            f->put(f->env, j);
        }
        return NUMACOLL_OK;
    }
    if ((rc = f->get(f->env, f->n - 1, &b)) != NUMACOLL_OK)
        return rc;
    nc__copy(f->copy, dest, b, nelem * op->elem);
    f->put(f->env, f->n - 1);
    for (int j = f->n - 2; j >= 0; j--) {
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

/* ---- argument checks ------------------------------------------------------ */

/* Common checks; root < 0 means Allreduce. *own gets the contribution. */
static int check_args(numacoll_team_t *t, const void *sendbuf, void *recvbuf,
                      size_t count, const nc__red_op_t *op, int root,
                      const void **own)
{
    const char *what = root < 0 ? "allreduce" : "reduce";
    if (root >= t->p)
        return nc__team_fail(t, NUMACOLL_ERR_ARG,
                             "reduce root %d is outside the team of %d", root,
                             t->p);
    if (count > SIZE_MAX / op->elem)
        return nc__team_fail(t, NUMACOLL_ERR_ARG,
                             "%s of %zu elements of %zu bytes overflows", what,
                             count, op->elem);

    int writes = root < 0 || t->rank == root;
    if (sendbuf == NUMACOLL_IN_PLACE && !writes)
        return nc__team_fail(t, NUMACOLL_ERR_ARG,
                             "NUMACOLL_IN_PLACE on rank %d, which is not the "
                             "reduce root %d", t->rank, root);
    int in_place = writes && (sendbuf == NUMACOLL_IN_PLACE ||
                              sendbuf == recvbuf);
    *own = in_place ? recvbuf : sendbuf;
    if (count > 0 && (!*own || (writes && !recvbuf)))
        return nc__team_fail(t, NUMACOLL_ERR_ARG,
                             "%s of %zu elements with a NULL %s buffer", what,
                             count, *own ? "receive" : "send");
    return nc__team_check_abort(t);
}

/* An element is never split across staging slots: it must fit the slot of
 * the call's rule (inline rules stage none). */
static int check_elem(numacoll_team_t *t, const nc__choice_t *ch,
                      const nc__red_op_t *op, size_t count, const char *what)
{
    if (!ch->f || op->elem <= ch->f)
        return NUMACOLL_OK;
    return nc__team_fail(t, NUMACOLL_ERR_ARG,
                         "%s element of %zu bytes exceeds the %zu-byte "
                         "staging slot of the tuning rule for %zu bytes "
                         "(reduce_frag_size)", what, op->elem, ch->f,
                         count * op->elem);
}

/* Number the call and publish its signature (coll/call.c), refused or
 * not, so a call refused on one rank (bad = the verdict on its arguments)
 * still counts there and the others learn of it (nc__call_refuse). */
static int red_begin(numacoll_team_t *t, nc__coll_t coll, int root,
                     size_t count, const nc__red_op_t *op, int bad)
{
    nc__call_t c = {.coll = coll, .root = root, .nbytes = count * op->elem,
                    .count = count, .dtype = op->dtype, .op = op->opn,
                    .commutative = op->commutative};
    if (bad == NUMACOLL_OK)
        return nc__call_begin(t, &c);
    /* a refusal says more than a lost or aborted call: keep its sentence */
    char why[sizeof t->last_error];
    memcpy(why, t->last_error, sizeof why);
    nc__call_begin(t, &c);
    memcpy(t->last_error, why, sizeof why);
    return nc__call_refuse(t, bad, root >= 0 && root == t->rank);
}

/* After the checks: a call of no elements still meets the others through
 * the inline lines, so that a rank whose call says otherwise finds out. */
static int red_zero(numacoll_team_t *t, size_t count, const nc__red_op_t *op)
{
    return count == 0 && t->p > 1 ? nc__allreduce_inline(t, op, NULL, NULL, 0)
                                  : NUMACOLL_OK;
}

/* ---- Reduce --------------------------------------------------------------- */

/* bad: the verdict on the op (nc__red_op_predef / _user) */
static int reduce_run(numacoll_team_t *t, const void *sendbuf, void *recvbuf,
                      size_t count, const nc__red_op_t *op, int root, int bad)
{
    const void *own = NULL;
    const nc__choice_t *ch = NULL;
    if (bad == NUMACOLL_OK && root < 0)
        bad = nc__team_fail(t, NUMACOLL_ERR_ARG, "reduce root %d is outside "
                            "the team of %d", root, t->p);
    if (bad == NUMACOLL_OK)
        bad = check_args(t, sendbuf, recvbuf, count, op, root, &own);
    if (bad == NUMACOLL_OK && count > 0 && t->p > 1) {
        ch = nc__team_choice(t, NC_COLL_REDUCE, count * op->elem);
        bad = check_elem(t, ch, op, count, "reduce");
    }
    int rc = red_begin(t, NC_COLL_REDUCE, root, count, op, bad);
    if (rc != NUMACOLL_OK)
        return rc;
    if ((rc = red_zero(t, count, op)) != NUMACOLL_OK)
        return rc;
    if (count > 0) {
        if (t->p == 1) {
            if (own != recvbuf)
                memcpy(recvbuf, own, count * op->elem);
        } else {
            rc = nc__reduce_pipelined(t, ch, op, own, recvbuf, count, root);
            if (rc != NUMACOLL_OK)
                return rc;
        }
    }
    t->counters.reduce++;
    return NUMACOLL_OK;
}

int numacoll_reduce(numacoll_team_t *t, const void *sendbuf, void *recvbuf,
                    size_t count, numacoll_dtype_t dtype, numacoll_op_t op,
                    int root)
{
    if (!t)
        return NUMACOLL_ERR_ARG;
    /* numbered even when refused: the op's fields as the caller gave them */
    nc__red_op_t o = {.dtype = (int)dtype, .opn = (int)op, .commutative = 1};
    int rc = nc__red_op_predef(t, &o, dtype, op);
    return reduce_run(t, sendbuf, recvbuf, count, &o, root, rc);
}

int numacoll_reduce_user(numacoll_team_t *t, const void *sendbuf,
                         void *recvbuf, size_t count, size_t elem_size,
                         numacoll_user_op_fn fn, void *ctx, int commutative,
                         int root)
{
    if (!t)
        return NUMACOLL_ERR_ARG;
    nc__red_op_t o = {.elem = elem_size, .dtype = -1, .opn = -1,
                      .commutative = commutative != 0};
    int rc = nc__red_op_user(t, &o, elem_size, fn, ctx, commutative);
    return reduce_run(t, sendbuf, recvbuf, count, &o, root, rc);
}

/* ---- Allreduce ------------------------------------------------------------ */

nc__alg_t nc__allreduce_choose(const numacoll_team_t *t, size_t nbytes)
{
    return nc__team_choice(t, NC_COLL_ALLREDUCE, nbytes)->alg;
}

/* bad: the verdict on the op, as for reduce_run */
static int allreduce_run(numacoll_team_t *t, int alg, const void *sendbuf,
                         void *recvbuf, size_t count, const nc__red_op_t *op,
                         int bad)
{
    const void *own = NULL;
    if (bad == NUMACOLL_OK)
        bad = check_args(t, sendbuf, recvbuf, count, op, -1, &own);
    if (bad != NUMACOLL_OK)
        return red_begin(t, NC_COLL_ALLREDUCE, -1, count, op, bad);
    size_t nbytes = count * op->elem;
    const nc__choice_t *ch = NULL;
    if (alg < 0) {
        ch = nc__team_choice(t, NC_COLL_ALLREDUCE, nbytes);
        alg = (int)ch->alg;
        /* elements too large for a line: as a forced reduce_bcast */
        if (alg == NC_ALG_ALLREDUCE_INLINE &&
            !nc__ar_inline_fits(t, count, op->elem))
            alg = NC_ALG_ALLREDUCE_REDUCE_BCAST;
    }
    if (!ch || alg != (int)ch->alg) {
        /* A forced algorithm takes the parameters of the size's rule, or of
         * the first rule naming it; where no rule names it, the Reduce
         * rule's f, s and k (every allreduce algorithm reads at most
         * those). */
        ch = nc__team_choice_alg(t, NC_COLL_ALLREDUCE, alg, nbytes);
        if (!ch)
            ch = nc__team_choice(t, NC_COLL_REDUCE, nbytes);
    }
    bad = check_elem(t, ch, op, count, "allreduce");
    if (bad == NUMACOLL_OK && alg == NC_ALG_ALLREDUCE_INLINE &&
        !nc__ar_inline_fits(t, count, op->elem))
        bad = nc__team_fail(t, NUMACOLL_ERR_ARG, "inline allreduce of %zu "
                            "elements of %zu bytes: the team's inline lines "
                            "take %u lines of whole elements of at most %d "
                            "bytes", count, op->elem, t->red->ar_al,
                            NC_RED_INLINE);
    int rc = red_begin(t, NC_COLL_ALLREDUCE, -1, count, op, bad);
    if (rc != NUMACOLL_OK)
        return rc;
    if ((rc = red_zero(t, count, op)) != NUMACOLL_OK)
        return rc;
    if (count > 0) {
        if (t->p == 1) {
            if (own != recvbuf)
                memcpy(recvbuf, own, nbytes);
        } else {
            switch (alg) {
            case NC_ALG_ALLREDUCE_INLINE:
                rc = nc__allreduce_inline(t, op, own, recvbuf, count);
                break;
            case NC_ALG_ALLREDUCE_REDUCE_BCAST:
                rc = nc__allreduce_reduce_bcast(t, ch, op, own, recvbuf,
                                                count);
                break;
            case NC_ALG_ALLREDUCE_RSAG:
                rc = nc__allreduce_rsag(t, ch, op, own, recvbuf, count);
                break;
            default:
                return nc__team_fail(t, NUMACOLL_ERR_ARG,
                                     "algorithm %d is not an allreduce", alg);
            }
            if (rc != NUMACOLL_OK)
                return rc;
        }
    }
    t->counters.allreduce++;
    return NUMACOLL_OK;
}

int nc__allreduce_with(numacoll_team_t *t, int alg, const void *sendbuf,
                       void *recvbuf, size_t count, const nc__red_op_t *op)
{
    return allreduce_run(t, alg, sendbuf, recvbuf, count, op, NUMACOLL_OK);
}

int numacoll_allreduce(numacoll_team_t *t, const void *sendbuf, void *recvbuf,
                       size_t count, numacoll_dtype_t dtype, numacoll_op_t op)
{
    if (!t)
        return NUMACOLL_ERR_ARG;
    /* numbered even when refused: the op's fields as the caller gave them */
    nc__red_op_t o = {.dtype = (int)dtype, .opn = (int)op, .commutative = 1};
    int rc = nc__red_op_predef(t, &o, dtype, op);
    return allreduce_run(t, -1, sendbuf, recvbuf, count, &o, rc);
}

int numacoll_allreduce_user(numacoll_team_t *t, const void *sendbuf,
                            void *recvbuf, size_t count, size_t elem_size,
                            numacoll_user_op_fn fn, void *ctx, int commutative)
{
    if (!t)
        return NUMACOLL_ERR_ARG;
    nc__red_op_t o = {.elem = elem_size, .dtype = -1, .opn = -1,
                      .commutative = commutative != 0};
    int rc = nc__red_op_user(t, &o, elem_size, fn, ctx, commutative);
    return allreduce_run(t, -1, sendbuf, recvbuf, count, &o, rc);
}
