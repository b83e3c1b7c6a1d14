/*
 * Sleeping waits, for teams with more ranks than CPUs (docs/usage.md,
 * Waiting): a waiter whose peer may not be running gives its CPU away until
 * the peer has written, instead of polling or yielding in a loop that the
 * scheduler may answer by running the poller again.
 *
 * A sleeper announces itself in its sync line (the awaited word's offset in
 * the segment, the condition and its argument), counts itself in the
 * header's sleepers word, looks at the word once more, and sleeps on its own
 * futex word, bell, for at most a tick. A writer of a team whose wake flag
 * is set calls nc__wake() after its stores: one fence and one load while
 * nobody sleeps; else it looks at each sleeper's condition and bumps and
 * wakes the bells of those whose condition now holds. The fence and the
 * sleeper's seq_cst count make the two sides see each other (one of the
 * writer's store or the sleeper's count is seen by the other), so no wake
 * is lost; the tick bounds the cost of a store no writer follows with
 * nc__wake, and lets the wait look for dead peers and its timeout.
 * Layer 1 (coll/team.h): the abort word's writer wakes everyone with it.
 */
#ifndef NUMACOLL_WAKE_H
#define NUMACOLL_WAKE_H

#include <stdatomic.h>
#include <stdint.h>

#include "coll/team.h"

static inline int nc__cond_holds(uint64_t v, nc__wait_cond_t c, uint64_t arg)
{
    switch (c) {
    case NC_WAIT_NONZERO: return v != 0;
    case NC_WAIT_EQ:      return v == arg;
    case NC_WAIT_GE:      return (int64_t)(v - arg) >= 0;
    case NC_WAIT_GE32:    return v != 0 &&
                                 (int32_t)((uint32_t)v - (uint32_t)arg) >= 0;
    }
    return 0;
}

/* Wake the sleepers of t whose condition holds now; all: every sleeper
 * (an abort, which no condition describes). */
void nc__wake_slow(numacoll_team_t *t, int all);

/* After stores another rank may wait for: free unless some rank of the
 * team may sleep (t->oversub, agreed at creation). */
static inline void nc__wake(numacoll_team_t *t)
{
    if (t->oversub)
        nc__wake_slow(t, 0);
}

/* Sleep until a writer wakes this rank or tick_us passes, unless *w's
 * condition holds at the look after announcing: then 1 and *seen. 0 after
 * a sleep (the caller looks again), -1 where w is not in the team's
 * segment (nobody could find the sleeper: the caller yields instead). */
int nc__sleep(numacoll_team_t *t, _Atomic uint64_t *w, nc__wait_cond_t c,
              uint64_t arg, uint64_t *seen, unsigned tick_us);

#endif
