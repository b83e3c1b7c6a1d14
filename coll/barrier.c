/*
 * Barrier: fan-in then fan-out along the team's notification tree rooted at
 * rank 0 (with the numa tree, members meet their leader first and leaders
 * meet the root). Each rank owns two sync lines: `arrive`, written by the
 * rank when its subtree has arrived and read by its parent, and `release`,
 * written by the parent and polled by the rank. Values are the barrier's
 * sequence number, compared rollover-safely, so nothing is ever reset.
 * Cost: 2 * depth(tree) cache-line transfers (plus radix polls per level).
 */
#include "coll/team.h"
#include "coll/wait.h"

int nc__barrier_tree(numacoll_team_t *t)
{
    const uint64_t seq = ++t->barrier_seq;
    const int nchild = nc__tree_children(&t->tree, 0, t->rank, t->children);
    const int parent = nc__tree_parent(&t->tree, 0, t->rank);
    uint64_t seen;
    int rc;

    for (int c = 0; c < nchild; c++) {
        nc__wait_why_t why = {t->children[c], "barrier arrive", (long)seq, 0};
        rc = nc__wait(t, &nc__sync(t, t->children[c])->arrive, NC_WAIT_GE, seq,
                      &seen, &why);
        if (rc != NUMACOLL_OK)
            return rc;
    }
    if (parent >= 0) {
        nc__sync_t *me = nc__sync(t, t->rank);
        atomic_store_explicit(&me->arrive, seq, memory_order_release);
        nc__wait_why_t why = {parent, "barrier release", (long)seq, 0};
        rc = nc__wait(t, &me->release, NC_WAIT_GE, seq, &seen, &why);
        if (rc != NUMACOLL_OK)
            return rc;
    }
    for (int c = 0; c < nchild; c++)
        atomic_store_explicit(&nc__sync(t, t->children[c])->release, seq,
                              memory_order_release);
    return NUMACOLL_OK;
}
