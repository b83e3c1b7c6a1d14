/* Sleeping waits and their wakers: futexes on per-rank words of the
 * segment (coll/wake.h). */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "coll/wake.h"

/* Not FUTEX_PRIVATE_FLAG: the word is in a segment every rank maps. */
static void futex_wait(_Atomic uint32_t *f, uint32_t seen, unsigned tick_us)
{
    struct timespec ts = {.tv_sec = tick_us / 1000000u,
                          .tv_nsec = (long)(tick_us % 1000000u) * 1000L};
    /* EAGAIN (the bell moved), EINTR and ETIMEDOUT all mean: look again */
    (void)syscall(SYS_futex, (uint32_t *)f, FUTEX_WAIT, seen, &ts, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *f)
{
    (void)syscall(SYS_futex, (uint32_t *)f, FUTEX_WAKE, 1, NULL, NULL, 0);
}

void nc__wake_slow(numacoll_team_t *t, int all)
{
    /* the stores before this call, then the count: a sleeper that counted
     * itself after they were visible sees them at its own look */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&t->hdr->sleepers, memory_order_acquire) == 0)
        return;
    for (int r = 0; r < t->p; r++) {
        if (r == t->rank)
            continue;
        nc__sync_t *s = nc__sync(t, r);
        uint64_t on = atomic_load_explicit(&s->sleep_on, memory_order_acquire);
        if (on == 0)
            continue;
        uint64_t off = (on - 1) / 8;
        if (!all && off + sizeof(uint64_t) <= t->layout.total) {
            uint64_t arg = atomic_load_explicit(&s->sleep_arg,
                                                memory_order_relaxed);
            _Atomic uint64_t *w = (_Atomic uint64_t *)(t->base + off);
            /* a torn (on, arg) pair of a sleeper that moved on meanwhile
             * at worst wakes it for nothing: its next sleep looks itself */
            if (!nc__cond_holds(atomic_load_explicit(w, memory_order_acquire),
                                (nc__wait_cond_t)((on - 1) % 8), arg))
                continue;
        }
        atomic_fetch_add_explicit(&s->bell, 1, memory_order_release);
        futex_wake(&s->bell);
    }
}

int nc__sleep(numacoll_team_t *t, _Atomic uint64_t *w, nc__wait_cond_t c,
              uint64_t arg, uint64_t *seen, unsigned tick_us)
{
    /* as integers: a word outside the segment is no object of it */
    const uintptr_t base = (uintptr_t)t->base, at = (uintptr_t)w;
    if (at < base || at - base + sizeof *w > t->layout.total)
        return -1;
    nc__sync_t *me = nc__sync(t, t->rank);
    const uint32_t bell = atomic_load_explicit(&me->bell,
                                               memory_order_acquire);
    atomic_store_explicit(&me->sleep_arg, arg, memory_order_relaxed);
    atomic_store_explicit(&me->sleep_on,
                          (uint64_t)(at - base) * 8 + (uint64_t)c + 1,
                          memory_order_release);
    atomic_fetch_add_explicit(&t->hdr->sleepers, 1, memory_order_seq_cst);
    const uint64_t v = atomic_load_explicit(w, memory_order_seq_cst);
    const int holds = nc__cond_holds(v, c, arg);
    if (!holds)
        futex_wait(&me->bell, bell, tick_us);
    atomic_store_explicit(&me->sleep_on, 0, memory_order_relaxed);
    atomic_fetch_sub_explicit(&t->hdr->sleepers, 1, memory_order_release);
    if (holds)
        *seen = v;
    return holds;
}
