/*
 * The team object and the shared structures every algorithm reads: the
 * internal counterpart of numacoll.h. Memory-ordering rules, stated once:
 *  - a control slot's word is written with a release store after the data it
 *    announces (fragment in the root's buffer, or the inline payload) and
 *    polled with acquire loads, so the data is visible once the word is;
 *  - nreaders is decremented with release (the reader's copy-out is done)
 *    and the root polls it with acquire before overwriting the bank;
 *  - sync lines carry sequence numbers compared rollover-safely.
 */
#ifndef NUMACOLL_TEAM_H
#define NUMACOLL_TEAM_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "numacoll.h"
#include "coll/copy.h"
#include "coll/tree.h"
#include "shm_seg/layout.h"
#include "tune/table.h"

#define NC_SEG_MAGIC 0x6e756d61636f6c6cULL /* "numacoll" */
/* shm_op[] starts here: no op number can take it (ops count from 0 and
 * would need 2^64 calls to wrap), fixing the paper's start at 1. */
#define NC_OP_NONE UINT64_MAX
#define NC_INLINE_MAX 56      /* payload bytes carried in a control line */

/* Header block at offset 0; leaders[] follows at NC_HDR_FIXED. */
typedef struct nc__seg_hdr {
    uint64_t magic;
    uint32_t p, q, s;
    uint32_t pad0;
    uint64_t f;
    /* First failure seen by any rank (a status code), so every waiter stops
     * instead of waiting for a rank that has given up. */
    _Alignas(NC_CACHE_LINE) _Atomic int32_t abort_status;
    _Atomic int32_t abort_rank;
} nc__seg_hdr_t;
_Static_assert(sizeof(nc__seg_hdr_t) <= NC_HDR_FIXED, "header fits");

/* One bank: op and nreaders on separate lines (the root writes op once per
 * bank use, every reader decrements nreaders). */
typedef struct nc__bank {
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t op;
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t nreaders;
} nc__bank_t;
_Static_assert(sizeof(nc__bank_t) == 2 * NC_CACHE_LINE, "bank is two lines");

/* One control slot: a cache line. word = fragment bytes announced (0: empty);
 * inline messages carry their payload in data[]. */
typedef struct nc__ctrl {
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t word;
    unsigned char data[NC_INLINE_MAX];
} nc__ctrl_t;
_Static_assert(sizeof(nc__ctrl_t) == NC_CACHE_LINE, "slot is one line");

/* Barrier flags of one rank: arrive is written by the rank itself and read
 * by its parent; release is written by the parent and polled by the rank. */
typedef struct nc__sync {
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t arrive;
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t release;
    /* Single-copy Bcast (coll/bcast/bcast_cma.c), written by the rank
     * itself: avail counts the bytes its buffer has offered over all such
     * calls (its children read up to it), addr/nbytes describe this call's
     * buffer; fin is the number of such calls it has finished reading. */
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t avail;
    uint64_t addr, nbytes;
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t fin;
} nc__sync_t;
_Static_assert(sizeof(nc__sync_t) == NC_SYNC_LINES * NC_CACHE_LINE,
               "sync lines");

/* A tree of the team, built at creation for every (kind, radix) its
 * tuning rules name. hier: the numa shape with radix k between the
 * leaders too (nc__tree_init_hier), as Reduce and Barrier use it. */
typedef struct nc__team_tree {
    int kind, k, hier;
    nc__tree_t tree;
} nc__team_tree_t;

struct numacoll_team {
    int rank, p;
    numacoll_config_t cfg;
    char topology[512];         /* cfg.topology points here when given */
    numacoll_locality_t *loc;   /* [p] */
    int *leaders;               /* [p] leader rank of each rank's node */
    /* Every choice comes from here (tune/table.h): the team's tuning rules,
     * resolved once for its p and NUMA shape, config overrides applied. */
    nc__tune_team_t tune;
    char tune_source[256];      /* the table they came from */
    nc__team_tree_t *trees;     /* [ntrees] */
    int ntrees;
    int *children;              /* scratch, children of any tree above */
    /* Bcast bank geometry in force: f, s, q of the last pipelined Bcast.
     * Changing it drains every bank first (nc__bcast_geometry). */
    size_t geo_f;
    unsigned geo_s, geo_q, q_max;
    /* Reduce staging geometry: the largest s and f of any reduce rule */
    unsigned rs_max;
    size_t rf_max;
    nc__layout_t layout;
    unsigned char *base;        /* mapped segment */
    nc__seg_hdr_t *hdr;
    nc__bank_t *banks;          /* [q] */
    uint64_t op;                /* bank uses so far; same on every rank */
    uint64_t barrier_seq;
    numacoll_counters_t counters;
    numacoll_placement_t placement;
    char seg_name[96];
    char last_error[256];
    /* Barrier (coll/barrier.c): its own hier tree rooted at rank 0 with
     * k = barrier_radix; parent and children computed once. */
    nc__tree_t barrier_tree;
    int barrier_parent, barrier_nchild;
    int *barrier_children;
    /* Reduce / Allreduce state (coll/reduce/reduce.h). */
    struct nc__red *red;
    /* Single-copy Bcast: usable (probed and agreed at creation), why not,
     * and the running totals every rank keeps alike: calls and bytes. */
    int cma_ok;
    char cma_why[160];
    uint64_t cma_calls, cma_bytes;
};

/* Control slot idx of rank r. */
static inline nc__ctrl_t *nc__ctrl(const numacoll_team_t *t, int r, unsigned idx)
{
    return (nc__ctrl_t *)(t->base + nc__layout_rank_off(&t->layout, r) +
                          (size_t)idx * t->layout.prm.ctrl_stride);
}

/* Fragment buffer idx of rank r for fragments of f bytes: the buffer area
 * holds the largest s*f of the team's rules, cut up per call. */
static inline unsigned char *nc__buf(const numacoll_team_t *t, int r,
                                     unsigned idx, size_t f)
{
    return t->base + nc__layout_rank_off(&t->layout, r) + t->layout.buf_off +
           (size_t)idx * f;
}

static inline nc__sync_t *nc__sync(const numacoll_team_t *t, int r)
{
    return (nc__sync_t *)(t->base + nc__layout_rank_off(&t->layout, r) +
                          t->layout.sync_off);
}

/* Record a detailed error for numacoll_team_last_error(); returns status. */
int nc__team_fail(numacoll_team_t *t, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Mark the team aborted with status (the first failure wins) so that every
 * waiter stops instead of waiting for a rank that has given up. */
void nc__team_abort(numacoll_team_t *t, int status);

/* A rank was announced `got` bytes where its own call expects `want`: the
 * ranks called Bcast with different sizes. Aborts the team. */
int nc__team_size_mismatch(numacoll_team_t *t, int root, size_t got,
                           size_t want);

/* Status of an aborted team, or NUMACOLL_OK. */
int nc__team_check_abort(numacoll_team_t *t);

/* Data movement for Bcast: contiguous memory or the caller's callbacks. */
typedef struct nc__io {
    unsigned char *buf;         /* contiguous when not NULL */
    numacoll_pack_fn pack;
    numacoll_unpack_fn unpack;
    void *ctx;
    int failed;                 /* a callback returned non-zero */
    /* copy-layer variants (coll/copy.h) for copies into the segment and
     * out of it, picked per call from the rule's copy= by nc__bcast_run */
    int cin, cout;
} nc__io_t;

static inline void nc__io_pack(nc__io_t *io, size_t off, void *dst, size_t n)
{
    if (io->buf)
        nc__copy(io->cin, dst, io->buf + off, n);
    else if (io->pack(io->ctx, off, dst, n) != 0)
        io->failed = 1;
}

static inline void nc__io_unpack(nc__io_t *io, size_t off, const void *src,
                                 size_t n)
{
    if (io->buf)
        nc__copy(io->cout, io->buf + off, src, n);
    else if (io->unpack(io->ctx, off, src, n) != 0)
        io->failed = 1;
}

/*
 * Root side of a bank use: wait until every reader of the bank's previous
 * use is done (nreaders == 0, acquire), then announce p-1 new readers and
 * publish the op number. Readers learn of the use only through release
 * stores the root issues after this, so relaxed is enough for nreaders.
 */
int nc__bank_claim(numacoll_team_t *t, unsigned set);

/* Reader side: this rank's copies out of the bank are done (release). */
static inline void nc__bank_release(numacoll_team_t *t, unsigned set)
{
    atomic_fetch_sub_explicit(&t->banks[set].nreaders, 1, memory_order_release);
}

/* The tree (kind, k, hier) built at team creation; NULL if the team's rules
 * name no such tree. A linear scan of a handful of entries. */
const nc__tree_t *nc__team_tree(const numacoll_team_t *t, int kind, int k,
                                int hier);

/* The choice of the team's tuning rules for coll at nbytes (binary search
 * over the team's resolved size ranges; never NULL). */
static inline const nc__choice_t *nc__team_choice(const numacoll_team_t *t,
                                                  nc__coll_t coll,
                                                  size_t nbytes)
{
    return &nc__tune_lookup(&t->tune, coll, nbytes)->ch;
}

/* The choice for a forced algorithm alg of coll at nbytes: the size's rule
 * if it names alg, else the first of the team's rules of coll that does;
 * NULL when none does. For tests and the benchmark. */
const nc__choice_t *nc__team_choice_alg(const numacoll_team_t *t,
                                        nc__coll_t coll, int alg,
                                        size_t nbytes);

/* Bcast of nbytes as the team's rules say (no counter): for numacoll_bcast
 * and for algorithms built on a Bcast. */
int nc__bcast_run(numacoll_team_t *t, size_t nbytes, int root, nc__io_t *io);

/* Before a pipelined Bcast with bank geometry (f, s, q) of ch: if it
 * differs from the one in force, the root waits until every bank is
 * drained (a reader of the old geometry may still be copying out of
 * buffers the new one places elsewhere); then it is the one in force.
 * Every rank calls it, so all agree on the geometry. */
int nc__bcast_geometry(numacoll_team_t *t, const nc__choice_t *ch, int root);

/* Algorithms (coll/bcast/, coll/barrier.c). */
int nc__bcast_pipelined(numacoll_team_t *t, const nc__choice_t *ch,
                        size_t nbytes, int root, nc__io_t *io);
int nc__bcast_inline(numacoll_team_t *t, const nc__choice_t *ch,
                     size_t nbytes, int root, nc__io_t *io);
int nc__bcast_cma(numacoll_team_t *t, const nc__choice_t *ch, size_t nbytes,
                  int root, nc__io_t *io);
int nc__barrier_tree(numacoll_team_t *t);

/* Per-team state of Barrier and Reduce/Allreduce, made at team creation
 * (after the localities are known) and freed with the team; fini must
 * accept what a failed init left. */
int nc__barrier_init(numacoll_team_t *t);
void nc__barrier_fini(numacoll_team_t *t);
int nc__red_init(numacoll_team_t *t);
void nc__red_fini(numacoll_team_t *t);

#endif
