/*
 * The one place that owns the wait policy: poll spin_count times (with a
 * CPU pause), then yield the CPU on every poll, because more ranks than
 * cores is normal and pure spinning starves the rank being waited on. In the
 * slow path it also watches the team's abort word, the optional timeout and
 * whether the awaited process still lives, and names who waited for whom on
 * what when it gives up.
 */
#ifndef NUMACOLL_WAIT_H
#define NUMACOLL_WAIT_H

#include <stdatomic.h>
#include <stdint.h>

#include "coll/team.h"

typedef enum {
    NC_WAIT_NONZERO,   /* *w != 0                                   */
    NC_WAIT_EQ,        /* *w == arg                                 */
    NC_WAIT_GE,        /* (int64_t)(*w - arg) >= 0: rollover-safe   */
    NC_WAIT_GE32,      /* low 32 bits of *w at or past those of arg,
                        * rollover-safe (inline Bcast call numbers) */
} nc__wait_cond_t;

/* What a wait is for, used only to word an error. */
typedef struct nc__wait_why {
    int peer;          /* rank waited for; -1: any rank of the team */
    const char *what;  /* e.g. "control slot"                       */
    long a, b;         /* slot index, bank, op ... as the text says */
} nc__wait_why_t;

static inline int nc__cond_holds(uint64_t v, nc__wait_cond_t c, uint64_t arg)
{
    switch (c) {
    case NC_WAIT_NONZERO: return v != 0;
    case NC_WAIT_EQ:      return v == arg;
    case NC_WAIT_GE:      return (int64_t)(v - arg) >= 0;
    case NC_WAIT_GE32:    return (int32_t)((uint32_t)v - (uint32_t)arg) >= 0;
    }
    return 0;
}

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
    uint64_t v = atomic_load_explicit(w, memory_order_acquire);
    if (nc__cond_holds(v, c, arg)) {
        *seen = v;
        return NUMACOLL_OK;
    }
    return nc__wait_slow(t, w, c, arg, seen, why);
}

static inline void nc__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
