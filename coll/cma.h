/*
 * Linux cross-memory attach (process_vm_readv / process_vm_writev): the
 * one kernel copy between two ranks' user buffers that the single-copy
 * algorithms (coll/bcast/bcast_cma.c, coll/gather/gather_cma.c) are built
 * on. Team creation probes whether it is permitted (t->cma_ok).
 */
#ifndef NUMACOLL_CMA_H
#define NUMACOLL_CMA_H

#include <stddef.h>
#include <stdint.h>

/* Move n bytes between local and raddr in process pid: from pid into
 * local (write 0), or from local into pid (write 1), however many system
 * calls that takes. 0, or an errno value (EFAULT where the kernel moved
 * nothing). */
int nc__cma_move(int pid, void *local, uint64_t raddr, size_t n, int write);

/* Read the two size_t at ra and rb in pid into *a and *b with one system
 * call (a v-form's count and displacement of one block); 0 or an errno
 * value. */
int nc__cma_pair(int pid, uint64_t ra, uint64_t rb, size_t *a, size_t *b);

/* Bytes the speed probe copies each way (nc__cma_cost). */
#define NC_CMA_PROBE_BYTES ((size_t)128 << 10)

/* The kernel's copy may cost at most this many percent of a user copy for
 * single copy to pay: copy-in/copy-out copies each byte twice. */
#define NC_CMA_COST_MAX 200u

/* What the kernel's copy costs on this rank against a user copy, in
 * percent: process_vm_readv of NC_CMA_PROBE_BYTES from this process into
 * itself (the same page pinning and kernel copy as from a peer) against
 * memcpy of the same bytes, both hot, the best of a few rounds each;
 * measured once per process. 0 where it cannot tell (no memory, the call
 * failed; tried again next time). */
uint32_t nc__cma_cost(void);

/* The rank whose cost (cost[r * stride] bytes apart) is the highest above
 * NC_CMA_COST_MAX, or -1 when no rank's is; a cost of 0 (not measured)
 * never counts. */
int nc__cma_too_slow(const uint32_t *cost, size_t stride, int p);

#endif
