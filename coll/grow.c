/*
 * Staging on demand: a team is created with its control lines only (the
 * inline Bcast and Allreduce lines, sync and control slots: what small
 * calls use), and each rank's queue and reduce staging slots get their
 * /dev/shm pages at the first call that needs them (docs/usage.md,
 * "Memory"). Until then the segment's file has holes there: its size
 * costs nothing, and a process touches none of it.
 *
 * What each rank does at a growth, which is part of that first call:
 *   1. gives its own staging pages (nc__grow_own), if the node's use of
 *      /dev/shm stays within node_budget: MADV_POPULATE_WRITE, which
 *      reports a full /dev/shm instead of raising SIGBUS at a first touch;
 *   2. publishes its vote, 4 c + 1 (pages in place) or 4 c + 2 (no room)
 *      for the call numbered c (coll/call.c: the same on every rank, also
 *      after a mismatch's recovery), in its own sync line, its vote
 *      before moved to grow_prev;
 *   3. reads every rank's vote c (from grow_prev where that rank has
 *      voted again since: it went on after reading this rank's vote, and
 *      cannot vote a third time before this rank has voted again). A rank
 *      in another call instead (mismatched calls) is found by the wait,
 *      as any wait finds it, or here, where its votes are of other calls.
 *      A rank that has seen all yes once writes NC_GROW_STAGED over its
 *      vote and never votes again; it counts as a yes: every rank's pages
 *      were in place then, and nobody gives pages back after a vote of all
 *      yes (only after a no). So a rank whose vote ended in a mismatch
 *      while the others saw all yes finds them staged at its next vote
 *      instead of waiting for votes that never come. All yes: the team is
 *      staged for good and the call runs. Any no: every rank gives its pages back and returns
 *      NUMACOLL_ERR_NOSPACE, the call not run (the Open MPI component runs
 *      it with the previous component), and drains its pool of freed
 *      teams' segments (shm_seg/seg.h), whose pages go once no rank maps
 *      them; the team keeps serving the calls that need no staging, and
 *      the next call that needs it votes again.
 * Every rank knows whether a call needs staging from the call's signature
 * and the rules (request.c's needs_staging) and `staged`, which changes
 * only here, so every rank votes at the same call.
 * Cost: once per team, the population of s f + rs rf bytes (its page
 * faults and zeroing, which creation no longer pays) and p loads per
 * rank: a fresh team's first 1 MiB Bcast took 2.0-2.2 ms at np 2 against
 * 1.5-1.7 ms before (docs/bench.md, "Footprint").
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "coll/op.h"
#include "coll/wait.h"
#include "coll/wake.h"
#include "shm_seg/seg.h"

uint64_t nc__node_budget(const numacoll_team_t *t, uint64_t size)
{
    return t->cfg.node_budget ? t->cfg.node_budget : size / 2;
}

int nc__grow_own(numacoll_team_t *t, int *err)
{
    *err = 0;
    if (t->own_staged)
        return NUMACOLL_OK;
    size_t len;
    unsigned char *at = nc__own_staging(t, &len);
    uint64_t size = 0;
    const uint64_t used = nc__seg_used(&size);
    const uint64_t budget = nc__node_budget(t, size);
    if (budget && used + len > budget) {
        *err = ENOSPC;
        return NUMACOLL_ERR_NOSPACE;
    }
    const int rc = nc__seg_populate(at, len);
    if (rc != 0) {
        *err = -rc;
        return NUMACOLL_ERR_NOSPACE;
    }
    t->own_staged = 1;
    return NUMACOLL_OK;
}

/* Grown for good: the others' votes read this rank's mark as a yes. */
static void mark_staged(numacoll_team_t *t)
{
    t->staged = 1;
    atomic_store_explicit(&nc__sync(t, t->rank)->grow, NC_GROW_STAGED,
                          memory_order_release);
    nc__wake(t);
}

int nc__grow_now(numacoll_team_t *t)
{
    int err;
    const int rc = nc__grow_own(t, &err);
    if (rc == NUMACOLL_OK)
        mark_staged(t);
    return rc;
}

int nc__grow_step(numacoll_team_t *t, nc__op_t *o)
{
    const uint64_t c = t->call_seq;
    if (o->grow == 1) {
        int err = 0;
        const int rc = nc__grow_own(t, &err);
        if (rc != NUMACOLL_OK)
            t->grow_err = err;
        nc__sync_t *me = nc__sync(t, t->rank);
        atomic_store_explicit(
            &me->grow_prev,
            atomic_load_explicit(&me->grow, memory_order_relaxed),
            memory_order_relaxed);
        atomic_store_explicit(&me->grow, 4 * c + (rc == NUMACOLL_OK ? 1 : 2),
                              memory_order_release);
        nc__wake(t);
        o->grow = 2;
        o->grow_r = 0;
        o->grow_no = -1;
    }
    for (; o->grow_r < t->p; o->grow_r++) {
        const int r = o->grow_r;
        const nc__wait_why_t why = {.peer = r, .what = "staging vote",
                                    .a = (long)c};
        nc__sync_t *s = nc__sync(t, r);
        uint64_t seen;
        const int rc = nc__poll(t, &s->grow, NC_WAIT_GE, 4 * c, &seen, &why);
        if (rc != NUMACOLL_OK)
            return rc;
        if (seen != NC_GROW_STAGED && seen >> 2 != c) {
            /* voted again since: this call's vote went to grow_prev */
            seen = atomic_load_explicit(&s->grow_prev, memory_order_acquire);
            if (seen >> 2 != c) {   /* never voted in this call */
                o->grow = 0;
                return nc__mismatch(t, r, "a staging vote of another call");
            }
        }
        if (!(seen & 1) && o->grow_no < 0)
            o->grow_no = r;
    }
    o->grow = 0;
    if (o->grow_no < 0) {
        mark_staged(t);
        return NUMACOLL_OK;
    }
    /* nobody has read or written the staging of a team never staged */
    size_t len = 0;
    unsigned char *own = nc__own_staging(t, &len);
    if (t->own_staged) {
        nc__seg_release(own, len);
        t->own_staged = 0;
    }
    /* segments of freed teams kept for reuse hold their pages: every rank
     * gives its pool's back (a segment's pages go with its last mapping),
     * so that the next vote finds their room */
    nc__seg_pool_drain();
    uint64_t size = 0;
    const uint64_t used = nc__seg_used(&size);
    snprintf(t->last_error, sizeof t->last_error, "numacoll: rank %d found "
             "no room for its %zu bytes of staging (" NC_SEG_DIR ": %llu of "
             "%llu bytes used, node_budget %llu%s); the call was not run, "
             "and the team still serves calls that need no staging",
             o->grow_no, len, (unsigned long long)used,
             (unsigned long long)size,
             (unsigned long long)nc__node_budget(t, size),
             o->grow_no == t->rank && t->grow_err != ENOSPC
                 ? ", or the memory cgroup is full" : "");
    return NUMACOLL_ERR_NOSPACE;
}
