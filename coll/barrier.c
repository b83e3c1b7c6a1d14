/*
 * Barrier: fan-in then fan-out along the Barrier's own tree, rooted at rank
 * 0 and independent of the Bcast's `tree`: the hier shape of coll/tree.h
 * with k = barrier_radix both inside NUMA nodes and between them, so the
 * ranks of a node meet their leader first (k-nomial) and the leaders meet
 * rank 0 along a k-nomial tree over the nodes (over the domains of every
 * level of `levels`; the Barrier rule's l3tree= ... toptree= give a level
 * another shape). Parent and children are computed once, at team
 * creation.
 *
 *  leaf:   store arrive = seq (release), wait for release >= seq (acquire).
 *  inner:  wait for each child's arrive >= seq, then as a leaf, then store
 *          release = seq in each child's line.
 *  root:   wait for its children's arrive, then release them.
 * Each rank owns two sync lines: `arrive`, written by the rank when its
 * subtree has arrived and read by its parent, and `release`, written by
 * the parent and polled by the rank. Values are the call's number seq
 * (coll/call.c: they grow, with gaps), awaited rollover-safely (GE) and
 * then required equal: a child cannot arrive at a later barrier before
 * its parent has released it from this one, nor a parent release a later
 * one before the child arrives, so a larger value is a mismatched call.
 * The release/acquire pairs make everything a rank wrote before entering
 * visible to every rank after it leaves.
 *
 * Cost: 2 * depth * t_l + (k-1) polls per level, depth = ceil(log_k n)
 * inside a node plus ceil(log_k nodes) between leaders. Shared slots: own
 * and children's sync lines. Tuned by barrier_radix.
 */
#include <stdlib.h>

#include "coll/op.h"
#include "coll/wait.h"

int nc__barrier_init(numacoll_team_t *t)
{
    /* Barrier has no size: its rule is the one for 0 bytes */
    const nc__choice_t *ch = nc__team_choice(t, NC_COLL_BARRIER, 0);
    int k = (int)ch->k;
    int rc = nc__tree_init_spec(&t->barrier_tree, t->p, k, k, ch->lt,
                                t->cfg.levels, t->doms);
    if (rc != NUMACOLL_OK)
        return rc;
    t->barrier_children = malloc(
        (size_t)(nc__tree_max_children(&t->barrier_tree) + 1) *
        sizeof *t->barrier_children);
    if (!t->barrier_children)
        return NUMACOLL_ERR_NOMEM;
    t->barrier_parent = nc__tree_parent(&t->barrier_tree, 0, t->rank);
    t->barrier_nchild = nc__tree_children(&t->barrier_tree, 0, t->rank,
                                          t->barrier_children);
    return NUMACOLL_OK;
}

void nc__barrier_fini(numacoll_team_t *t)
{
    nc__tree_fini(&t->barrier_tree);
    free(t->barrier_children);
    t->barrier_children = NULL;
}

/* As steps: o->b.idx counts the children that have arrived (phase 1),
 * o->phase is 2 once this rank has arrived at its parent (it then waits
 * for release). */
int nc__barrier_step(numacoll_team_t *t, nc__op_t *o)
{
    /* The call's number, not a count of barriers, and compared for
     * equality: a child's arrive cannot pass seq before we release it, nor
     * a parent's release before we arrive, so another value is another
     * call's Barrier (mismatched calls). A resync zeroes the lines while
     * the numbers go on growing. */
    const uint64_t seq = t->barrier_seq = t->call_seq;
    const int nchild = t->barrier_nchild, parent = t->barrier_parent;
    const int *kids = t->barrier_children;
    nc__sync_t *me = nc__sync(t, t->rank);
    uint64_t seen;
    int rc;

    if (o->phase == 0) {
        o->b.idx = 0;
        o->phase = 1;
    }
    if (o->phase == 1) {
        for (; (int)o->b.idx < nchild; o->b.idx++) {
            const int c = kids[o->b.idx];
            nc__wait_why_t why = {c, "barrier arrive", (long)seq, 0};
            rc = nc__poll(t, &nc__sync(t, c)->arrive, NC_WAIT_GE, seq, &seen,
                          &why);
            if (rc == NUMACOLL_OK && seen != seq)
                rc = nc__mismatch(t, c, "it arrived at a later barrier");
            if (rc != NUMACOLL_OK)
                return rc;
        }
        /* our subtree's arrival (and everything before it) before arrive */
        if (parent >= 0)
            atomic_store_explicit(&me->arrive, seq, memory_order_release);
        o->phase = 2;
    }
    if (parent >= 0) {
        nc__wait_why_t why = {parent, "barrier release", (long)seq, 0};
        rc = nc__poll(t, &me->release, NC_WAIT_GE, seq, &seen, &why);
        if (rc == NUMACOLL_OK && seen != seq)
            rc = nc__mismatch(t, parent, "it released a later barrier");
        if (rc != NUMACOLL_OK)
            return rc;
    }
    for (int c = 0; c < nchild; c++)
        atomic_store_explicit(&nc__sync(t, kids[c])->release, seq,
                              memory_order_release);
    return NUMACOLL_OK;
}
