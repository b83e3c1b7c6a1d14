/* Slow path of nc__wait(): spin, then yield or sleep, watching for
 * failures. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <signal.h>
#include <time.h>

#include "coll/op.h"
#include "coll/wait.h"

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* kill(pid, 0) fails with ESRCH only when no such process exists; EPERM
 * means it lives under another user, which still counts as alive. */
static int pid_alive(int pid)
{
    return pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH;
}

int nc__any_dead(const numacoll_team_t *t)
{
    for (int r = 0; r < t->p; r++)
        if (r != t->rank && !pid_alive(t->loc[r].pid))
            return 1;
    return 0;
}

/* First dead rank among the ones this wait depends on, or -1. */
static int dead_peer(const numacoll_team_t *t, int peer)
{
    if (peer >= 0)
        return pid_alive(t->loc[peer].pid) ? -1 : peer;
    /* A rank that destroyed the team after taking part in this call (a
     * Reduce leaf returns early) has left, not died: the others may still
     * answer a wait on the whole team. Not while a mismatch is pending:
     * then it may have skipped what it owed, and only its exit tells. */
    const int calm = atomic_load_explicit(&t->hdr->mm_epoch,
                                          memory_order_acquire) == t->mm_done;
    for (int r = 0; r < t->p; r++) {
        if (r == t->rank || pid_alive(t->loc[r].pid))
            continue;
        const nc__sync_t *s = nc__sync(t, r);
        if (!calm || !atomic_load_explicit(&s->gone, memory_order_acquire) ||
            (int64_t)(atomic_load_explicit(&s->call_seq,
                                           memory_order_relaxed) -
                      t->call_seq) < 0)
            return r;
    }
    return -1;
}

static void describe(char *out, size_t len, const numacoll_team_t *t,
                     const nc__wait_why_t *why)
{
    if (why->peer >= 0)
        snprintf(out, len, "rank %d waited for rank %d on %s %ld (%ld)",
                 t->rank, why->peer, why->what, why->a, why->b);
    else
        snprintf(out, len, "rank %d waited for the team on %s %ld (%ld)",
                 t->rank, why->what, why->a, why->b);
}

uint64_t nc__now_ms(void)
{
    return now_ms();
}

/* The checks between polls: abort word and the calls of the awaited ranks
 * every time, dead peers and the timeout once per 10 ms (*last_check).
 * NC_AGAIN: keep waiting; OK: the word holds now (*seen); else failed. */
static int watch(numacoll_team_t *t, _Atomic uint64_t *w, nc__wait_cond_t c,
                 uint64_t arg, uint64_t *seen, const nc__wait_why_t *why,
                 uint64_t start, uint64_t *last_check)
{
    char what[160];
    /* the word first: a peer may have written it and left since the
     * caller's last poll (a step's caller may come back much later) */
    if (nc__ready(w, c, arg, seen))
        return NUMACOLL_OK;
    int st = atomic_load_explicit(&t->hdr->abort_status,
                                  memory_order_acquire);
    if (st != 0) {
        describe(what, sizeof what, t, why);
        return nc__team_fail(t, NUMACOLL_ERR_ABORTED,
                             "%s: rank %d aborted the team (%s)", what,
                             atomic_load_explicit(&t->hdr->abort_rank,
                                                  memory_order_acquire),
                             numacoll_strerror(st));
    }
    /* a mismatched call waits forever without a timeout: look at the
     * calls the awaited ranks are in */
    int cc = nc__call_check(t, why->peer);
    uint64_t v = atomic_load_explicit(w, memory_order_acquire);
    if (cc == NC_CALL_AHEAD || cc == NC_CALL_GONE) {
        /* what it wrote before it went on (or away) is visible now */
        if (nc__cond_holds(v, c, arg)) {
            *seen = v;
            return NUMACOLL_OK;
        }
        if (cc == NC_CALL_GONE) {
            describe(what, sizeof what, t, why);
            return nc__team_fail(t, NUMACOLL_ERR_ABORTED, "%s, but a "
                                 "rank it waits for has destroyed the "
                                 "team", what);
        }
        return nc__bcast_lost(t, why->peer, "it has gone on to a later "
                              "call while this rank waits for its data");
    }
    if (cc != NC_CALL_WAIT)
        return cc;
    uint64_t now = now_ms();
    if (now - *last_check < 10)
        return NC_AGAIN;
    *last_check = now;
    int dead = dead_peer(t, why->peer);
    /* It may have written the word and left since the look above (this
     * rank can be descheduled between the two): its stores are visible
     * once it has exited, so one more look decides. */
    if (dead >= 0 && nc__ready(w, c, arg, seen))
        return NUMACOLL_OK;
    if (dead >= 0) {
        nc__team_abort(t, NUMACOLL_ERR_PEER_DEAD);
        describe(what, sizeof what, t, why);
        return nc__team_fail(t, NUMACOLL_ERR_PEER_DEAD,
                             "%s, but rank %d (pid %d) has died", what,
                             dead, (int)t->loc[dead].pid);
    }
    if (t->cfg.timeout_ms && now - start >= t->cfg.timeout_ms) {
        nc__team_abort(t, NUMACOLL_ERR_TIMEOUT);
        describe(what, sizeof what, t, why);
        return nc__team_fail(t, NUMACOLL_ERR_TIMEOUT,
                             "%s for %u ms without an answer "
                             "(value %llu)", what, t->cfg.timeout_ms,
                             (unsigned long long)v);
    }
    return NC_AGAIN;
}

int nc__wait_watch(numacoll_team_t *t, uint64_t since_ms,
                   uint64_t *last_check)
{
    /* a copy: the checks may run a drain, whose steps note their own waits */
    const nc__pend_t pw = t->pend;
    uint64_t seen;
    return watch(t, pw.w, pw.c, pw.arg, &seen, &pw.why, since_ms, last_check);
}

/* A sleeping wait yields the CPU for up to NC_SLEEP_YIELD_US before it
 * sleeps: on an oversubscribed team the rank it waits for is often queued
 * on its own CPU, and a yield runs it at once, where a futex wake must
 * reach another CPU (np 4 on the 2-vCPU development VM: an 8-byte
 * Allreduce took 10.8 us so, 49 us sleeping at once, 27.6 us spinning
 * first); a longer wait (a rank that computes) sleeps, so its CPU serves
 * the program's other threads and processes. tick: the longest sleep,
 * after which the wait looks at what would make it hopeless (and catches a
 * store no writer woke it for). */
enum { NC_SLEEP_YIELD_US = 200, NC_SLEEP_TICK_US = 1000 };

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The binding's hook (numacoll_set_wait_hook), its context, and this
 * thread's "inside the hook" mark (no wait in it calls it again). */
static _Atomic(numacoll_wait_hook_fn) wait_hook;
static void *_Atomic wait_hook_ctx;
static _Thread_local int in_hook;

void numacoll_set_wait_hook(numacoll_wait_hook_fn hook, void *ctx)
{
    atomic_store_explicit(&wait_hook_ctx, ctx, memory_order_relaxed);
    atomic_store_explicit(&wait_hook, hook, memory_order_release);
}

/* 1 when the hook has work in flight (the wait must not sleep). */
static int call_hook(const numacoll_team_t *t)
{
    numacoll_wait_hook_fn h =
        atomic_load_explicit(&wait_hook, memory_order_acquire);
    if (!h || in_hook)
        return 0;
    in_hook = 1;
    int busy = h(atomic_load_explicit(&wait_hook_ctx, memory_order_relaxed),
                 t);
    in_hook = 0;
    return busy != 0;
}

int nc__wait_slow(numacoll_team_t *t, _Atomic uint64_t *w, nc__wait_cond_t c,
                  uint64_t arg, uint64_t *seen, const nc__wait_why_t *why)
{
    /* this rank's stores of the call so far first: the rank it waits for
     * may sleep until it sees them */
    nc__wake(t);
    const int pol = t->wait_pol;
    const unsigned spins = pol == NC_WAIT_SPIN ? t->cfg.spin_count : 0;
    for (unsigned i = 0; i < spins; i++) {
        uint64_t v = atomic_load_explicit(w, memory_order_acquire);
        if (nc__cond_holds(v, c, arg)) {
            *seen = v;
            return NUMACOLL_OK;
        }
        nc__cpu_relax();
    }
    uint64_t start = now_ms(), last_check = start;
    /* sleeping: from when on (0: not yet, looked at every 16 yields) */
    uint64_t sleep_from = 0;
    int sleeping = 0;
    for (unsigned long n = 0;; n++) {
        uint64_t v = atomic_load_explicit(w, memory_order_acquire);
        if (nc__cond_holds(v, c, arg)) {
            *seen = v;
            return NUMACOLL_OK;
        }
        if (pol == NC_WAIT_SLEEP && !sleeping && n % 16 == 0) {
            uint64_t us = now_us();
            if (!sleep_from)
                sleep_from = us + NC_SLEEP_YIELD_US;
            sleeping = us >= sleep_from;
        }
        const int busy = call_hook(t);
        int slept = sleeping && !busy
                        ? nc__sleep(t, w, c, arg, seen, NC_SLEEP_TICK_US)
                        : -1;
        if (slept == 1)
            return NUMACOLL_OK;
        if (slept < 0)
            sched_yield();
        /* a sleep is long: look after each one */
        if (slept < 0 && n % 64 != 63)
            continue;
        int rc = watch(t, w, c, arg, seen, why, start, &last_check);
        if (rc != NC_AGAIN)
            return rc;
    }
}

int nc__drive(numacoll_team_t *t, int (*step)(numacoll_team_t *, nc__op_t *),
              nc__op_t *o)
{
    const int was = t->blocking;
    t->blocking = 1;
    for (;;) {
        int rc = step(t, o);
        if (rc != NC_AGAIN) {
            t->blocking = was;
            /* the call's last stores: their readers may sleep */
            nc__wake(t);
            return rc;
        }
        /* a copy: what the wait's checks run (a drain) notes its own */
        const nc__pend_t pw = t->pend;
        uint64_t seen;
        rc = nc__wait(t, pw.w, pw.c, pw.arg, &seen, &pw.why);
        if (rc != NUMACOLL_OK) {
            t->claiming = 0;   /* a root's bank claim failed in its wait */
            t->blocking = was;
            return rc;
        }
    }
}
