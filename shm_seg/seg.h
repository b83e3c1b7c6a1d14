/*
 * Segment creation, NUMA placement and its verification. The layout is
 * planned in layout.h; this file touches the operating system.
 *
 * Segment name format: /numacoll-<uid>-<host>-<pid>-<counter>-<random hex>,
 * so concurrent jobs, users and teams on one machine never collide. The name
 * is unlinked as soon as every rank has mapped it, so a crash leaves nothing
 * in /dev/shm.
 */
#ifndef NUMACOLL_SEG_H
#define NUMACOLL_SEG_H

#include <stddef.h>

#include "numacoll.h"

#define NC_SEG_NAME_MAX 96

/* Rank 0: create and map a fresh segment of len bytes; name_out gets its
 * name. Fails cleanly (no SIGBUS later) if /dev/shm has less room. */
int nc__seg_create(size_t len, char *name_out, unsigned char **base,
                   char *msg, size_t msglen);
/* Other ranks: map the segment rank 0 created. */
int nc__seg_attach(const char *name, size_t len, unsigned char **base,
                   char *msg, size_t msglen);
void nc__seg_unlink(const char *name);
void nc__seg_unmap(unsigned char *base, size_t len);

/*
 * The node memory of `node` may go to on this machine: the node itself if
 * it exists and is allowed, otherwise one that does (chosen as node modulo
 * the allowed count, so ranks of different missing nodes still spread), and
 * *degraded = 1. -1 if the kernel has no NUMA support.
 */
int nc__seg_effective_node(int node, int *degraded);

/*
 * Prefer `node` for [addr, addr+len) before anything touches it. Preferred,
 * not strict: a full node must not turn into SIGBUS on first touch;
 * nc__seg_verify() reports what really happened. Returns 0 or -errno.
 */
int nc__seg_bind(void *addr, size_t len, int node);

/* Count the pages of [addr, addr+len) on `node` with move_pages(). */
int nc__seg_verify(void *addr, size_t len, int node, size_t *pages,
                   size_t *on_node, size_t *unknown);

#endif
