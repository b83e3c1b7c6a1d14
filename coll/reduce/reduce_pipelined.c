/*
 * Pipelined Reduce, any root, fragment by fragment through the staging
 * slots of coll/reduce/reduce.h.
 *
 * The message of m bytes is cut into fragments of the elements that fit in
 * rf = the rule's f bytes; fragment k takes ticket g = base + k and
 * slot x = g % rs on every rank. Messages of at most 56 bytes travel as one
 * fragment in the slot's full line itself (one cache-line transfer per
 * tree edge, no staging buffer touched).
 *  leaf:   claim its slot x (every reader of its previous use is done),
 *          copy its fragment in, publish full = g + 1 (release). It runs
 *          up to rs fragments ahead of its parent.
 *  inner:  claim its slot x, then fold its own fragment with its
 *          children's (waiting for each child's full, acquire; releasing
 *          each child's slot as soon as it has been read) into the slot,
 *          and publish. While it combines fragment k its children stage
 *          k+1, ..., so copies and combines overlap along the tree.
 *  root:   as inner, but folds straight into its receive buffer (in place
 *          when sendbuf is recvbuf); a user op folds in its slot first and
 *          copies out, since the fold's destination must not be an operand.
 *          It first asks for its result's first 4 KiB (prefetch for
 *          writing), so that a cold buffer's misses run during its waits
 *          (on the VM 0.7-0.95x the time at 128 B-16 KiB, cold).
 * Trees: commutative ops (all predefined ones) use the hier tree rooted at
 * the root (members meet their NUMA leader along a k-nomial tree, leaders
 * meet the root along another, k = reduce_radix, or the rule's ku= between
 * the leaders where it gives one, over the domains of every level of
 * `levels`, any level shaped as the rule's l3tree= ... toptree= say); a
 * node folds its own
 * fragment first, then its children smallest subtree first, remote leaders
 * last. Non-commutative user ops use a k-nomial tree over ranks rooted at
 * rank 0, whose subtrees are runs of consecutive ranks: folding own, then
 * children in ascending rank order yields x_0 op ... op x_(p-1); rank 0
 * then stages the result and the root (if not 0) copies it out. The order
 * is fixed by (team, root), never by arrival.
 *
 * Cost, m bytes, t per byte, t_l one cache-line transfer, d tree depth,
 * c children per node, n = ceil(m/rf) fragments:
 *   T ~ (n + d - 1) * max(rf*t*(c+1), c*t_l)      (pipeline of depth d)
 *   small m (<= 56 B): d * (t_l + c*t_l)
 * Shared slots: writes its own slots (data, full) and its children's rel;
 * reads its children's full and data; the root with a rank-ordered tree
 * reads rank 0's. Tuned by the rule's f, s and k (reduce_frag_size, reduce_depth,
 * reduce_radix override them).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/reduce/reduce.h"

typedef struct env {
    numacoll_team_t *t;
    const int *kids;
    const unsigned char *own;
    unsigned x;
    uint64_t g;
    int inl;
} env_t;

static const void *slot_data(numacoll_team_t *t, int r, unsigned x, int inl)
{
    return inl ? (const void *)nc__rslot(t, r, x)->full.data
               : (const void *)nc__rbuf(t, r, x);
}

/* Operand 0 is this rank's fragment, operand j > 0 child j - 1's slot. */
static int get_operand(void *vp, int j, const void **ptr)
{
    env_t *e = vp;
    if (j == 0) {
        *ptr = e->own;
        return NUMACOLL_OK;
    }
    int rc = nc__rslot_wait_full(e->t, e->kids[j - 1], e->x, e->g);
    *ptr = slot_data(e->t, e->kids[j - 1], e->x, e->inl);
    return rc;
}

static void put_operand(void *vp, int j)
{
    env_t *e = vp;
    if (j > 0)
        nc__rslot_release(e->t, e->kids[j - 1], e->x);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* As steps (o->r): k the fragment in hand, part what of it is done
 * (0: nothing, 1: own slot claimed, 2: folded and published), fold the
 * operands folded so far. A step returns NC_AGAIN at a slot claim, a
 * child's full word or (collect) the top's. */
int nc__reduce_pipelined_step(numacoll_team_t *t, nc__op_t *o)
{
    struct nc__red *R = t->red;
    const nc__choice_t *ch = o->ch;
    const nc__red_op_t *op = &o->rop;
    const int me = t->rank, root = o->root;
    const size_t count = o->count;
    nc__red_pos_t *P = &o->r;
    const nc__tree_t *tree =
        op->commutative
            ? nc__team_tree(t, NUMACOLL_TREE_NUMA, (int)ch->k,
                            (int)(ch->ku ? ch->ku : ch->k), ch->lt)
            : nc__team_tree(t, NUMACOLL_TREE_KNOMIAL, (int)ch->k, 0, NULL);
    const int top = op->commutative ? root : 0;
    const unsigned rs = ch->s;
    const size_t elem = op->elem;
    const int inl = count * elem <= NC_RED_INLINE;
    const size_t fe = inl ? count : ch->f / elem;
    const size_t nfrags = (count + fe - 1) / fe;
    /* Only the root's own result goes to recv; the top of a rank-ordered
     * tree that is not the root stages it for the root instead. */
    const int to_recv = me == top && me == root;
    const int collect = me == root && me != top;

    int nk = nc__tree_children(tree, top, me, R->kids);
    if (op->commutative) {
        /* smallest subtrees first, the remote leaders' last: any fixed
         * order will do, this one waits least */
        for (int i = 0, j = nk - 1; i < j; i++, j--) {
            int s = R->kids[i];
            R->kids[i] = R->kids[j];
            R->kids[j] = s;
        }
    } else {
        qsort(R->kids, (size_t)nk, sizeof *R->kids, cmp_int);
    }
    if (o->phase == 0) {
        P->base = R->ticket;
        R->ticket += nfrags;
        P->k = 0;
        P->part = 0;
        P->fold = 0;
        o->phase = 1;
        /* the root's result lines (top of the file) */
        if (me == root && o->recv)
            nc__prefetch_w(o->recv, count * elem, NC_PREFETCH_MAX);
    }
    const int cin = nc__copy_pick_read(ch->copy),
              cout = nc__copy_pick(ch->copy, count * elem);

    for (; P->k < nfrags; P->k++, P->part = 0, P->fold = 0) {
        const size_t k = P->k;
        const uint64_t g = P->base + k;
        const unsigned x = (unsigned)(g % rs);
        const size_t e0 = k * fe, ne = count - e0 < fe ? count - e0 : fe;
        unsigned char *out = to_recv ? (unsigned char *)o->recv + e0 * elem
                                     : NULL;
        env_t e = {t, R->kids, (const unsigned char *)o->own + e0 * elem, x,
                   g, inl};
        nc__fold_t f = {nk + 1, get_operand, put_operand, &e, cin};
        int rc;
        if (to_recv && op->impl) {
            if (P->part == 0) {
                rc = nc__fold_step(op, &f, out, ne, &P->fold);
                if (rc != NUMACOLL_OK)
                    return rc;
                P->part = 2;
            }
        } else {
            /* our slot: the one the parent reads, or the user op's scratch */
            if (P->part == 0) {
                if ((rc = nc__rslot_claim(t, x)) != NUMACOLL_OK)
                    return rc;
                P->part = 1;
            }
            if (P->part == 1) {
                unsigned char *dest = inl ? nc__rslot(t, me, x)->full.data
                                          : nc__rbuf(t, me, x);
                rc = nc__fold_step(op, &f, dest, ne, &P->fold);
                if (rc != NUMACOLL_OK)
                    return rc;
                if (to_recv)
                    nc__copy(cout, out, dest, ne * elem);
                else /* one reader: the parent, or the root for the top */
                    nc__rslot_publish(t, x, g, 1);
                P->part = 2;
            }
        }
        if (collect) {
            rc = nc__rslot_wait_full(t, top, x, g);
            if (rc != NUMACOLL_OK)
                return rc;
            nc__copy(cout, (unsigned char *)o->recv + e0 * elem,
                     slot_data(t, top, x, inl), ne * elem);
            nc__rslot_release(t, top, x);
        }
    }
    return NUMACOLL_OK;
}
