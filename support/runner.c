/*
 * Forked-process runner and its bootstrap. The allgather is two rounds of a
 * counting barrier around a copy through per-rank slots of a shared mapping:
 * write my slot, barrier, read all slots, barrier (so the slots can be
 * reused). Large gathers go in slot-sized chunks.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/runner.h"

#define SLOT_BYTES 512

typedef struct boot_shm {
    _Alignas(64) _Atomic unsigned arrived;
    _Alignas(64) _Atomic unsigned generation;
    _Alignas(64) _Atomic int failed;    /* set by the parent: a rank died */
    int p;
    _Alignas(64) unsigned char slots[]; /* p * SLOT_BYTES */
} boot_shm_t;

typedef struct boot_ctx {
    boot_shm_t *shm;
    int rank;
} boot_ctx_t;

void *nc__run_shared_alloc(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void nc__run_shared_free(void *p, size_t len)
{
    if (p)
        munmap(p, len);
}

/* Counting barrier; the last arrival opens the next generation. Spins
 * briefly, then yields: ranks may outnumber cores. */
static int boot_barrier(boot_shm_t *s)
{
    unsigned gen = atomic_load_explicit(&s->generation, memory_order_acquire);
    if (atomic_fetch_add_explicit(&s->arrived, 1, memory_order_acq_rel) ==
        (unsigned)s->p - 1) {
        atomic_store_explicit(&s->arrived, 0, memory_order_relaxed);
        atomic_store_explicit(&s->generation, gen + 1, memory_order_release);
        return 0;
    }
    for (unsigned long i = 0;; i++) {
        if (atomic_load_explicit(&s->generation, memory_order_acquire) != gen)
            return 0;
        if (atomic_load_explicit(&s->failed, memory_order_acquire))
            return -1;
        if (i > 100)
            sched_yield();
    }
}

static int boot_allgather(const void *send, void *recv, size_t nbytes,
                          void *vctx)
{
    boot_ctx_t *c = vctx;
    boot_shm_t *s = c->shm;
    for (size_t done = 0; done < nbytes || (done == 0 && nbytes == 0);) {
        size_t n = nbytes - done < SLOT_BYTES ? nbytes - done : SLOT_BYTES;
        memcpy(s->slots + (size_t)c->rank * SLOT_BYTES,
               (const unsigned char *)send + done, n);
        if (boot_barrier(s) != 0)
            return -1;
        for (int r = 0; r < s->p; r++)
            memcpy((unsigned char *)recv + (size_t)r * nbytes + done,
                   s->slots + (size_t)r * SLOT_BYTES, n);
        if (boot_barrier(s) != 0)
            return -1;
        if (nbytes == 0)
            break;
        done += n;
    }
    return 0;
}

static void bind_to_cpu(int rank)
{
    cpu_set_t allowed, one;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return;
    int count = CPU_COUNT(&allowed);
    if (count <= 0)
        return;
    int want = rank % count;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &allowed) || want-- != 0)
            continue;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        sched_setaffinity(0, sizeof one, &one);
        return;
    }
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

const char *nc__run_describe(int ws, char *buf, size_t len)
{
    if (WIFEXITED(ws))
        snprintf(buf, len, "exit %d", WEXITSTATUS(ws));
    else if (WIFSIGNALED(ws))
        snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(ws),
                 strsignal(WTERMSIG(ws)));
    else
        snprintf(buf, len, "status 0x%x", ws);
    return buf;
}

int nc__run(const nc__run_opts_t *o, nc__rank_fn fn, void *arg, int *wstatus,
            int *timed_out)
{
    int p = o->p;
    if (p < 1 || !fn)
        return -1;
    unsigned timeout = o->timeout_ms ? o->timeout_ms : 60000;
    unsigned grace = o->grace_ms ? o->grace_ms : 2000;
    size_t shm_len = sizeof(boot_shm_t) + (size_t)p * SLOT_BYTES;
    boot_shm_t *s = nc__run_shared_alloc(shm_len);
    pid_t *pids = calloc((size_t)p, sizeof *pids);
    int *st = calloc((size_t)p, sizeof *st);
    if (!s || !pids || !st) {
        nc__run_shared_free(s, shm_len);
        free(pids);
        free(st);
        return -1;
    }
    s->p = p;
    if (timed_out)
        *timed_out = 0;
    fflush(NULL);  /* or children flush the parent's buffered output too */
    int started = 0;
    for (int r = 0; r < p; r++) {
        pid_t pid = fork();
        if (pid == 0) {
            /* A child must not outlive a test process that was killed. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (o->bind)
                bind_to_cpu(r);
            boot_ctx_t ctx = {.shm = s, .rank = r};
            numacoll_bootstrap_t boot = {.rank = r, .size = p,
                                         .allgather = boot_allgather,
                                         .ctx = &ctx};
            int rc = fn(&boot, arg);
            fflush(NULL);
            _exit(rc & 0xff);
        }
        if (pid < 0) {
            perror("numacoll runner: fork");
            atomic_store_explicit(&s->failed, 1, memory_order_release);
            break;
        }
        pids[r] = pid;
        started++;
    }
    int alive = started, any_failed = started < p, killed = 0;
    uint64_t start = now_ms(), fail_time = 0;
    while (alive > 0) {
        int ws;
        pid_t pid = waitpid(-1, &ws, WNOHANG);
        if (pid > 0) {
            for (int r = 0; r < started; r++)
                if (pids[r] == pid) {
                    st[r] = ws;
                    pids[r] = 0;
                    alive--;
                    if (!(WIFEXITED(ws) && WEXITSTATUS(ws) == 0)) {
                        if (!any_failed)
                            fail_time = now_ms();
                        any_failed = 1;
                        atomic_store_explicit(&s->failed, 1,
                                              memory_order_release);
                    }
                }
            continue;
        }
        if (pid < 0 && errno != EINTR)
            break;
        uint64_t now = now_ms();
        int expire = now - start >= timeout;
        if (any_failed && fail_time && now - fail_time >= grace)
            expire = 1;
        if (expire && !killed) {
            for (int r = 0; r < started; r++)
                if (pids[r] > 0) {
                    if (!o->quiet)
                        fprintf(stderr,
                                "numacoll runner: watchdog kills rank %d "
                                "(pid %d) after %llu ms\n", r, (int)pids[r],
                                (unsigned long long)(now - start));
                    kill(pids[r], SIGKILL);
                }
            killed = 1;
            if (timed_out)
                *timed_out = 1;
        }
        struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
    if (!o->quiet)
        for (int r = 0; r < started; r++)
            if (!(WIFEXITED(st[r]) && WEXITSTATUS(st[r]) == 0)) {
                char d[64];
                fprintf(stderr, "numacoll runner: rank %d of %d: %s\n", r, p,
                        nc__run_describe(st[r], d, sizeof d));
            }
    if (wstatus)
        memcpy(wstatus, st, (size_t)p * sizeof *st);
    int result = 0;
    for (int r = 0; r < p; r++)
        if (r >= started || !(WIFEXITED(st[r]) && WEXITSTATUS(st[r]) == 0))
            result = 1;
    nc__run_shared_free(s, shm_len);
    free(pids);
    free(st);
    return result;
}
