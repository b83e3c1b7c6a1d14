/* Cross-memory attach transfers (cma.h). */
#include <errno.h>
#include <sys/uio.h>

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
