/*
 * The one place that owns the wait policy (t->wait_pol): spin polls
 * spin_count times (with a CPU pause), then yields the CPU on every poll,
 * because more ranks than cores is normal and pure spinning starves the
 * rank being waited on; yield yields from the first poll; sleep yields
 * for a while, then sleeps in the kernel until the writer wakes it
 * (coll/wake.h): the policy of oversubscribed teams, whose long waits
 * then leave the CPU to whoever needs it. In the slow path it also watches the
 * team's abort word, the optional timeout and whether the awaited process
 * still lives, and names who waited for whom on what when it gives up.
 */
#ifndef NUMACOLL_WAIT_H
#define NUMACOLL_WAIT_H

#include <stdatomic.h>
#include <stdint.h>

#include "coll/team.h"
#include "coll/wake.h"


/* One acquire load of *w into *seen: whether the condition holds. */
static inline int nc__ready(_Atomic uint64_t *w, nc__wait_cond_t c,
                            uint64_t arg, uint64_t *seen)
{
    *seen = atomic_load_explicit(w, memory_order_acquire);
    return nc__cond_holds(*seen, c, arg);
}

/* A step's answer while what it needs has not come: call it again later
 * (positive, so never confused with a status). */
#define NC_AGAIN 1


int nc__wait_slow(numacoll_team_t *t, _Atomic uint64_t *w, nc__wait_cond_t c,
                  uint64_t arg, uint64_t *seen, const nc__wait_why_t *why);

/*
 * Wait until the condition holds on *w (acquire), store the value seen in
 * *seen. Returns NUMACOLL_OK, or TIMEOUT / PEER_DEAD / ABORTED with the
 * team's last_error set. The first poll is inline: the common case costs
 * one load.
 */
static inline int nc__wait(numacoll_team_t *t, _Atomic uint64_t *w,
                           nc__wait_cond_t c, uint64_t arg, uint64_t *seen,
                           const nc__wait_why_t *why)
{
    if (nc__ready(w, c, arg, seen))
        return NUMACOLL_OK;
    return nc__wait_slow(t, w, c, arg, seen, why);
}

/*
 * The wait of a step: one acquire load. If the condition holds, *seen
 * gets the value and NUMACOLL_OK returns; if not, t->pend notes the wait
 * and NC_AGAIN returns, for the caller of the step (coll/request.c) to
 * come back later. Under a blocking driver (t->blocking, nc__drive) it
 * waits in place instead, as nc__wait: the step would return only for the
 * driver to wait for this very word and call it again, which costs the
 * small calls tens of nanoseconds.
 */
static inline int nc__poll(numacoll_team_t *t, _Atomic uint64_t *w,
                           nc__wait_cond_t c, uint64_t arg, uint64_t *seen,
                           const nc__wait_why_t *why)
{
    if (nc__ready(w, c, arg, seen))
        return NUMACOLL_OK;
    /* a blocking driver would only wait for this word next: wait here */
    if (t->blocking)
        return nc__wait_slow(t, w, c, arg, seen, why);
    t->pend = (nc__pend_t){w, c, arg, *why};
    return NC_AGAIN;
}

/* One look, without waiting, at what makes the pending wait t->pend hopeless
 * (the checks nc__wait_slow makes between polls); since_ms: when the wait
 * began (nc__now_ms), for the timeout; *last_check: when dead peers were
 * last looked for (once per 10 ms). NC_AGAIN: go on waiting; NUMACOLL_OK:
 * the condition holds now; else the failure (last_error set). */
int nc__wait_watch(numacoll_team_t *t, uint64_t since_ms,
                   uint64_t *last_check);

uint64_t nc__now_ms(void);

/* 1 if some other rank of the team has died (its pid is gone). */
int nc__any_dead(const numacoll_team_t *t);

static inline void nc__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
