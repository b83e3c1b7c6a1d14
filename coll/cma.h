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

#endif
