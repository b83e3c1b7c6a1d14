/*
 * Segment creation, NUMA placement and its verification, and the pool of
 * segments of freed teams. The layout is planned in layout.h; this file
 * touches the operating system.
 *
 * Lifetime. A segment is a tmpfs file in /dev/shm that never has a name:
 * the creator opens it with O_TMPFILE, the other ranks open the creator's
 * descriptor through /proc/<pid>/fd/<n> while the creator holds it open, and
 * the file goes when the last process unmaps it. So a crash at any point
 * leaves nothing in /dev/shm. (Where /dev/shm takes no O_TMPFILE, the file
 * is created under a name and unlinked by the next system call.) The ranks
 * of a team must therefore share a pid namespace with /proc mounted, which
 * the waits' dead-peer check (kill(pid, 0)) needs anyway.
 *
 * Identity. A segment is identified by the (st_dev, st_ino) of its file:
 * two live mappings with equal identities are mappings of one file. For
 * messages it also has a name in the format /dev/shm names would have,
 * /numacoll-<uid>-<host>-<pid>-<counter>-<random hex>.
 *
 * Memory. The creator sizes the file; each rank then binds its own block
 * (mbind on the shared mapping sets the file's shared policy) and reserves
 * its control pages with fallocate, which allocates the tmpfs pages under
 * that policy; its staging stays a hole until the team grows
 * (nc__seg_populate, coll/grow.c). A full /dev/shm is thus a failure of
 * fallocate at creation or of the population at a growth, never a SIGBUS
 * at the first touch. Reserved pages count in /dev/shm (and the memory
 * cgroup) at once, but in a process's RSS only once it touches them.
 */
#ifndef NUMACOLL_SEG_H
#define NUMACOLL_SEG_H

#include <stddef.h>
#include <stdint.h>

#include "numacoll.h"

#define NC_SEG_NAME_MAX 96
#define NC_SEG_DIR "/dev/shm"

typedef struct nc__seg_id {
    uint64_t dev, ino;
} nc__seg_id_t;

/* Rank 0: create and map a fresh, unnamed segment of len bytes. name_out
 * gets its name (for messages), *fd the descriptor the others open through
 * /proc (keep it open until they have), *id its identity. Fails with
 * NUMACOLL_ERR_NOMEM when statvfs already shows less room than need (what
 * the ranks reserve at once; the rest is a hole until a team grows);
 * *avail then gets the free bytes. */
int nc__seg_create(size_t len, size_t need, char *name_out, int *fd,
                   nc__seg_id_t *id,
                   unsigned char **base, uint64_t *avail, char *msg,
                   size_t msglen);
/* Other ranks: open descriptor fd of process pid (rank 0's, from
 * nc__seg_create) through /proc, check that it is the file `id` of len
 * bytes, map it; *fd_out stays open for nc__seg_reserve. */
int nc__seg_attach(int pid, int fd, const nc__seg_id_t *id, size_t len,
                   int *fd_out, unsigned char **base, char *msg,
                   size_t msglen);
void nc__seg_unmap(unsigned char *base, size_t len);

/* Allocate the pages of [off, off+len) of the segment behind fd, under
 * the binding of that range (so bind first). 0, or -errno: -ENOSPC or
 * -ENOMEM when /dev/shm or the memory cgroup is full, -EOPNOTSUPP when the
 * file system cannot reserve (nothing reserved: the first touch may then
 * still fail). */
int nc__seg_reserve(int fd, size_t off, size_t len);

/* Free bytes of /dev/shm now (statvfs), 0 if unknown. */
uint64_t nc__seg_avail(void);
/* Bytes of /dev/shm in use now, by every process (statvfs), and its size;
 * 0 if unknown. */
uint64_t nc__seg_used(uint64_t *size);

/*
 * Staging grown after creation (coll/grow.c): the pages of [addr,
 * addr+len) of a shared mapping allocated now, under the range's binding,
 * by faulting them in for writing (MADV_POPULATE_WRITE), which reports a
 * full /dev/shm as an error instead of the SIGBUS a plain first touch
 * would raise, and needs no descriptor (teams keep none open); then the
 * mappings are dropped again (MADV_DONTNEED keeps a shared file's pages),
 * so that RSS counts what the process touches, as after fallocate. 0, or
 * -errno: -EFAULT or -ENOMEM when /dev/shm or the memory cgroup is full
 * (what was allocated before is given back), -EINVAL where the kernel
 * lacks it (before Linux 5.14: teams then reserve all at creation).
 */
int nc__seg_populate(void *addr, size_t len);
/* Give the pages of [addr, addr+len) back to /dev/shm (MADV_REMOVE): the
 * range reads as zeros again. 0 or -errno. */
int nc__seg_release(void *addr, size_t len);
/* Whether nc__seg_populate works here (asked once per process). */
int nc__seg_can_populate(void);

/*
 * The node memory of `node` may go to on this machine: the node itself if
 * it exists and is allowed, otherwise one that does (chosen as node modulo
 * the allowed count, so ranks of different missing nodes still spread), and
 * *degraded = 1. -1 if the kernel has no NUMA support.
 */
int nc__seg_effective_node(int node, int *degraded);

/*
 * Prefer `node` for [addr, addr+len) before anything is allocated there.
 * On a shared mapping this is the file's shared policy, which every later
 * allocation of those pages follows (fallocate, or a first touch by any
 * process). Preferred, not strict: a full node must not turn into a failed
 * reservation; nc__seg_verify() reports what really happened. Returns 0 or
 * -errno.
 */
int nc__seg_bind(void *addr, size_t len, int node);

/* Count the pages of [addr, addr+len) on `node` with move_pages(). Pages
 * this process has not mapped yet are `unknown`. */
int nc__seg_verify(void *addr, size_t len, int node, size_t *pages,
                   size_t *on_node, size_t *unknown);

/*
 * The pool (shm_seg/pool.c). A freed team's mapping may serve a later team
 * of the same processes: numacoll_team_destroy() puts it here under a key
 * (the processes in rank order, their NUMA nodes, the layout), and team
 * creation claims the entries of its key, offers their identities to the
 * other ranks, and reuses one that every rank offers: all of them have
 * freed that team, so nobody uses its memory any more. A claimed entry is
 * invisible to other creations until taken or released, so two teams
 * created at once by one process never get the same segment.
 *
 * At most NUMACOLL_SEG_POOL entries (default 4, at most NC_SEG_POOL_MAX,
 * 0 turns pooling off) per process, of NC_SEG_POOL_BYTES in all; putting
 * one more unmaps the oldest (a larger segment is not pooled: the tuner's
 * and the benchmark's teams of many layouts must not pile up in /dev/shm).
 * Pooled segments keep their /dev/shm memory; a team creation that finds
 * /dev/shm full drains the pools of its ranks and tries once more.
 */
#define NC_SEG_POOL_MAX 16
#define NC_SEG_POOL_BYTES ((size_t)256 << 20)
#define NC_SEG_POOL_OFFER 4   /* identities one rank offers per creation */

typedef struct nc__seg_pooled {
    nc__seg_id_t id;
    char name[NC_SEG_NAME_MAX];
    unsigned char *base;
    size_t len;
    numacoll_placement_t placement;   /* of the owner's block, as created */
    int staged;       /* the owner's staging has its pages (coll/grow.c) */
} nc__seg_pooled_t;

/* Claim up to max entries of key (newest first), writing their identities
 * to ids; returns how many. */
int nc__seg_pool_claim(const uint64_t *key, size_t nkey, nc__seg_id_t *ids,
                       int max);
/* Take claimed entry id out of the pool into *out: 0, or -1 if absent. */
int nc__seg_pool_take(const nc__seg_id_t *id, nc__seg_pooled_t *out);
/* Give back the claims on ids[0..n) that were not taken. */
void nc__seg_pool_release(const nc__seg_id_t *ids, int n);
/* Pool a freed team's mapping under key (or unmap it when pooling is off
 * or the key cannot be stored). */
void nc__seg_pool_put(const uint64_t *key, size_t nkey,
                      const nc__seg_pooled_t *seg);
/* Unmap every unclaimed entry; returns how many. */
int nc__seg_pool_drain(void);
/* Entries in the pool now (claimed or not). */
int nc__seg_pool_count(void);
/* The limit in force (NUMACOLL_SEG_POOL, read once); a test may set it
 * with nc__seg_pool_set_limit (-1: back to the environment's). */
int nc__seg_pool_limit(void);
void nc__seg_pool_set_limit(int n);

#endif
