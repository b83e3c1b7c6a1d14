/* Cross-memory attach transfers (cma.h). */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "coll/cma.h"

int nc__cma_move(int pid, void *local, uint64_t raddr, size_t n, int write)
{
    unsigned char *at = local;
    while (n > 0) {
        struct iovec l = {at, n}, r = {(void *)(uintptr_t)raddr, n};
        ssize_t got = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                            : process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (got == 0)
            return EFAULT;
        /* a partial transfer (a page boundary the kernel stopped at):
         * go on from there */
        at += got;
        raddr += (uint64_t)got;
        n -= (size_t)got;
    }
    return 0;
}

int nc__cma_pair(int pid, uint64_t ra, uint64_t rb, size_t *a, size_t *b)
{
    size_t two[2];
    struct iovec l = {two, sizeof two};
    struct iovec r[2] = {{(void *)(uintptr_t)ra, sizeof *a},
                         {(void *)(uintptr_t)rb, sizeof *b}};
    for (;;) {
        ssize_t got = process_vm_readv(pid, &l, 1, r, 2, 0);
        if (got == (ssize_t)sizeof two) {
            *a = two[0];
            *b = two[1];
            return 0;
        }
        if (got < 0 && errno == EINTR)
            continue;
        return got < 0 ? errno : EFAULT;
    }
}

static uint64_t probe_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The probe's figure, once per process: it is the machine's and the
 * kernel's, and a program may create teams by the hundred (whose buffers
 * a sanitizer's quarantine would keep). 0: not measured yet. */
static _Atomic uint32_t cma_cost_cached;

static uint32_t cma_cost_measure(void);

uint32_t nc__cma_cost(void)
{
    uint32_t c = atomic_load_explicit(&cma_cost_cached, memory_order_relaxed);
    if (c == 0) {
        /* two threads racing both measure; either figure will do */
        c = cma_cost_measure();
        atomic_store_explicit(&cma_cost_cached, c, memory_order_relaxed);
    }
    return c;
}

static uint32_t cma_cost_measure(void)
{
    const size_t n = NC_CMA_PROBE_BYTES;
    unsigned char *a = malloc(2 * n);
    if (!a)
        return 0;
    unsigned char *b = a + n;
    memset(a, 1, 2 * n);   /* every page present: no fault is timed */
    uint64_t user = UINT64_MAX, kernel = UINT64_MAX;
    /* the first round warms both paths; the best of the rest stands for
     * each, as a hot copy is what the two differ in: the kernel's pinning
     * of pages and its system call */
    for (int round = 0; round < 4; round++) {
        uint64_t t0 = probe_ns();
        memcpy(b, a, n);
        /* the copy must happen: b is read below only by the kernel */
        __asm__ __volatile__("" : : "r"(b) : "memory");
        uint64_t t1 = probe_ns();
        int err = nc__cma_move((int)getpid(), b, (uint64_t)(uintptr_t)a, n, 0);
        uint64_t t2 = probe_ns();
        if (err) {
            free(a);
            return 0;
        }
        if (round > 0 && t1 - t0 < user)
            user = t1 - t0;
        if (round > 0 && t2 - t1 < kernel)
            kernel = t2 - t1;
    }
    free(a);
    if (user == 0)
        user = 1;
    const uint64_t pct = kernel * 100 / user;
    return pct == 0 ? 1 : pct > UINT32_MAX ? UINT32_MAX : (uint32_t)pct;
}

int nc__cma_too_slow(const uint32_t *cost, size_t stride, int p)
{
    int worst = -1;
    uint32_t most = NC_CMA_COST_MAX;
    for (int r = 0; r < p; r++) {
        uint32_t c = *(const uint32_t *)((const char *)cost +
                                         (size_t)r * stride);
        if (c > most) {
            most = c;
            worst = r;
        }
    }
    return worst;
}
