/*
 * The gathers (Allgather, Gather, Scatter and their v forms): what their
 * algorithms share. They move blocks of bytes through the Reduce's staging
 * slots (coll/reduce/reduce.h), so they need no segment area of their own;
 * small blocks go inline instead, through the inline Allreduce's lines
 * (allgather_inline.c, rooted_inline.c, alltoall_inline.c; reduce.h's
 * nc__ag_put / nc__ag_get).
 *
 * Entries. The writer of a block (its owner; the root for Scatter) cuts it
 * into fragments of f bytes (the rule's f; a block of 0 bytes is one empty
 * fragment, so that every reader still meets its writer) and publishes
 * them as *entries* of its slots, numbered from the team's ticket at the
 * call's start (equal on every rank; each call takes one ticket, so back
 * to back calls start in different slots): entry e goes to the writer's
 * slot e % s (the rule's s) with the full word sig32 << 32 | (e + 1),
 * stored with release after the fragment. A reader
 * waits for that exact word (acquire), copies the fragment out and
 * releases the slot (rel += 1, release). The reuse rule is reduce.h's: the
 * writer adds the entry's readers to its expect[x] and rewrites slot x only
 * once rel has reached it (acquire), so the same slot may serve a Reduce
 * ticket before and an Allgather entry after. Entry numbers of successive
 * calls overlap (a call takes one ticket and may publish many entries);
 * the call's signature in the word's high half keeps a reader from taking
 * a previous call's entry of the same number.
 *
 * Small fragments (NC_GA_INLINE bytes or less) ride in the full line
 * itself, before the word: one line transfer, no staging buffer. The
 * first entry of every block also carries, in the same line, the block's
 * size and the writer's f: the reader compares them with its own idea of
 * the block (v-counts are known only at the root, or per rank) and fails
 * with NUMACOLL_ERR_MISMATCH, instead of reading a wrong number of
 * entries, when they differ.
 *
 * Packed calls (numacoll_*v_packed) run the staged algorithms with the
 * caller's callbacks in place of the copies into a slot and out of it
 * (nc__ga_pack, nc__ga_unpack: each fragment once, at its offset in its
 * block); the own block goes pack, then unpack, through the stack, or,
 * in an Allgather, out of the slot it has just been staged in.
 */
#ifndef NUMACOLL_GATHER_H
#define NUMACOLL_GATHER_H

#include <stddef.h>
#include <stdint.h>

#include "coll/op.h"
#include "coll/reduce/reduce.h"

/* Payload bytes of a fragment carried in the full line; the line's last
 * 16 data bytes hold the block size and f on a block's first entry. */
#define NC_GA_INLINE 40
_Static_assert(NC_GA_INLINE + 16 <= NC_RED_INLINE, "meta fits the line");

/* Whether alg is a gather's single-copy algorithm (gather_cma.c): every
 * single-copy algorithm but the Bcast's (coll/algs.h keeps the list). */
static inline int nc__ga_cma(int alg)
{
    return alg != NC_ALG_BCAST_CMA && nc__alg_single_copy(alg);
}

/* The staged algorithm of a gather-family collective. */
static inline nc__alg_t nc__ga_staged_alg(nc__coll_t coll)
{
    return coll == NC_COLL_ALLGATHER ? NC_ALG_ALLGATHER_STAGED
           : coll == NC_COLL_GATHER  ? NC_ALG_GATHER_STAGED
           : coll == NC_COLL_SCATTER ? NC_ALG_SCATTER_STAGED
                                     : NC_ALG_ALLTOALL_STAGED;
}

/* The team's rule of coll's algorithm alg for size key, or where no rule
 * names it there, the Reduce's (whose staging slots the staged
 * algorithms use): what a call that must run alg takes. */
static inline const nc__choice_t *
nc__choice_or_reduce(numacoll_team_t *t, nc__coll_t coll, nc__alg_t alg,
                     size_t key)
{
    const nc__choice_t *c = nc__team_choice_alg(t, coll, alg, key);
    return c ? c : nc__team_choice(t, NC_COLL_REDUCE, key);
}

/* Whether alg is one of the gathers' inline algorithms. */
static inline int nc__ga_inline(int alg)
{
    return alg == NC_ALG_ALLGATHER_INLINE || alg == NC_ALG_GATHER_INLINE ||
           alg == NC_ALG_SCATTER_INLINE || alg == NC_ALG_ALLTOALL_INLINE;
}

/* The kind of algorithm a gather's call signature carries (its count):
 * single copy 1, inline 2, staged 0 (request.c's begin()); an Alltoallv
 * tried inline, a Gatherv or Scatterv with blocks through the lines
 * NC_GA_SIG_VLINES (their lines are laid out unlike a uniform form's). */
#define NC_GA_SIG_VLINES 3
/* A packed call (staged, its own kind: a packed and a contiguous call
 * meet as a mismatch whatever their rules). */
#define NC_GA_SIG_PACKED 4
static inline size_t nc__ga_sig_kind(int alg)
{
    return nc__ga_cma(alg) ? 1 : nc__ga_inline(alg) ? 2 : 0;
}

/* Block j's bytes and offset in the call (uniform or v form). */
static inline size_t nc__ga_count(const nc__op_t *o, int j)
{
    return o->ga.counts ? o->ga.counts[j] : o->ga.each;
}

static inline size_t nc__ga_displ(const nc__op_t *o, int j)
{
    return o->ga.displs ? o->ga.displs[j] : (size_t)j * o->ga.each;
}

/* Alltoall(v): block j's bytes to send and their offset in sendbuf. */
static inline size_t nc__ga_scount(const nc__op_t *o, int j)
{
    return o->ga.scounts ? o->ga.scounts[j] : o->ga.each;
}

static inline size_t nc__ga_sdispl(const nc__op_t *o, int j)
{
    return o->ga.sdispls ? o->ga.sdispls[j] : (size_t)j * o->ga.each;
}

/* Fragments of a block of `bytes` (at least one: see above). */
static inline size_t nc__ga_frags(size_t bytes, size_t f)
{
    return bytes ? (bytes + f - 1) / f : 1;
}

/* Bytes of fragment r of a block of `bytes`. */
static inline size_t nc__ga_frag_len(size_t bytes, size_t f, size_t r)
{
    size_t off = r * f;
    return bytes > off ? (bytes - off < f ? bytes - off : f) : 0;
}

/* base + off, or NULL for a NULL base (a block of no bytes may come
 * with no buffer; arithmetic on NULL is undefined). */
static inline unsigned char *nc__ga_at(const void *base, size_t off)
{
    return base ? (unsigned char *)base + off : NULL;
}

/* A packed call's callbacks (op.h), or NULL where it has buffers. */
static inline nc__ga_io_t *nc__ga_io(nc__op_t *o)
{
    return o->ga.packed ? &o->ga.io : NULL;
}

/* Bytes [off, off + n) of send block `block` to dst, or of the block
 * received from rank `block` from src, through a packed call's callbacks
 * (a failure is noted and the call goes on: the others wait for it). */
static inline void nc__ga_pack(nc__ga_io_t *io, int block, size_t off,
                               void *dst, size_t n)
{
    /* no callback: a persistent request's counts grew since its _init */
    if (n && (!io->pack || io->pack(io->ctx, block, off, dst, n) != 0))
        io->failed = 1;
}

static inline void nc__ga_unpack(nc__ga_io_t *io, int block, size_t off,
                                 const void *src, size_t n)
{
    if (n && (!io->unpack || io->unpack(io->ctx, block, off, src, n) != 0))
        io->failed = 1;
}

/* What a fragment is: entry number, where its bytes are, how many, and,
 * for the first fragment of a block (r == 0), the block's size. A packed
 * call's fragment (io set) is bytes [r f, r f + n) of block `peer` (its
 * send block for nc__ga_put, the one from rank peer for nc__ga_take), and
 * own asks nc__ga_put to unpack it as this rank's own block too, from
 * the slot it has just written (a packed Allgather: each byte packed
 * once). */
typedef struct nc__ga_frag {
    uint64_t e;
    size_t r, n, block;
    int cin;         /* copy-layer variant into the slot / out of it */
    nc__ga_io_t *io;
    int peer, own;
} nc__ga_frag_t;

/* Alltoall(v): bytes of a block that one round moves (whole cache lines
 * where that is at least one), so a slot of f holds p - 1 of them. */
size_t nc__alltoall_unit(size_t f, int p);

/* Alltoallv: whether this rank's blocks, sent and received, all fit the
 * inline Alltoallv (every one at most the team's a2av_max). Here, not in
 * alltoall_inline.c: the staged step asks too, and the inline one calls
 * the staged one (tests/layers.sh: no circles). */
static inline int nc__a2av_fits(const numacoll_team_t *t, const nc__op_t *o)
{
    const size_t max = t->red->a2av_max;
    if (!max)
        return 0;
    for (int j = 0; j < t->p; j++)
        if (j != t->rank &&
            (nc__ga_scount(o, j) > max || nc__ga_count(o, j) > max))
            return 0;
    return 1;
}

/* A Gatherv's or Scatterv's block of n bytes (the size both its ends
 * know) in the lines, where the call uses them (ga.lines): max is the
 * team's gv_max or sv_max. */
static inline int nc__ga_in_lines(const nc__op_t *o, size_t n, size_t max)
{
    return o->ga.lines && n <= max;
}

/* A Scatterv root's first line of destination d's block (S lines a
 * destination, nc__ar_share: the lines' part of a Scatterv, sv_max). */
static inline size_t nc__sv_share(const numacoll_team_t *t, int root, int d)
{
    return (size_t)((d - root - 1 + t->p) % t->p) * nc__ar_share(t);
}

/* A Gatherv whose rule is single copy: its blocks of at most gv_max
 * bytes go through the lines before the choice (gather_cma.c). */
static inline int nc__gv_lines_first(const numacoll_team_t *t,
                                     const nc__op_t *o)
{
    return o->coll == NC_COLL_GATHER && o->ga.v && !o->ga.packed &&
           nc__ga_cma(o->alg) && t->p > 1 && t->red->gv_max;
}

/* Line 0 of writer j's block for this rank (first: its line) in a call
 * through the lines: wait for it, and fail as a mismatch where j put the
 * block in the lines and this rank expects it staged or the other way
 * round (fit: this rank's view, n its size); a step's poll. */
int nc__ga_line_check(numacoll_team_t *t, int j, uint64_t lbase,
                      size_t first, int fit, size_t n, const char *what);

/* A call's first step (o->phase 0): this rank's own block copied between
 * its buffers where it sees every block (not in place), the rounds (the
 * most fragments of any block but the root's, whose block does not
 * travel; a non-root: its own block's), the first entry number (the
 * team's ticket, which it advances by one), the position at round 0.
 * Never waits; with p = 1 it is the whole call. */
void nc__ga_begin(numacoll_team_t *t, nc__op_t *o);

/* The first NC_PREFETCH_MAX bytes of the blocks this rank receives from
 * the others (those of at most max bytes) asked for, so that their
 * misses overlap the waits. */
void nc__ga_prefetch_blocks(const numacoll_team_t *t, const nc__op_t *o,
                            size_t max);

/* Whether a block of another rank than this one (all of them: a root's
 * view) has more than max bytes. */
static inline int nc__ga_past(const numacoll_team_t *t, const nc__op_t *o,
                              size_t max)
{
    for (int j = 0; j < t->p; j++)
        if (j != t->rank && nc__ga_count(o, j) > max)
            return 1;
    return 0;
}

/* Bytes [off, off + n) of this rank's own block (cut to it) copied from
 * the send side to the receive side (packed: packed, then unpacked,
 * through a buffer on the stack): into its place among the received
 * blocks (Allgather, a Gather root), block me to itself (Alltoall), its
 * block out of the send buffer (a Scatter root); nothing in place.
 * nc__ga_begin copies the whole block, except where it sets
 * o->g.own_later (the staged Allgather, Alltoall and Scatter root at
 * p > 1): their steps copy it after staging (fragment by fragment, after
 * round 0, after the last round), so the others do not wait for it. */
void nc__ga_own(numacoll_team_t *t, nc__op_t *o, size_t off, size_t n);

/* Writer: publish fragment fr (n bytes at src; packed: from fr's io) as
 * its entry, in the slot of s that it names, for `readers` readers. must: poll for the slot
 * (NC_AGAIN under a nonblocking driver while it is taken); otherwise one
 * look, NC_AGAIN without noting a wait when it is taken (staging ahead).
 * f: the call's fragment size, sent with the block's first entry. */
int nc__ga_put(numacoll_team_t *t, unsigned s, size_t f,
               const nc__ga_frag_t *fr, const void *src, unsigned readers,
               int must);

/* Reader: wait for writer's entry fr in its slot of s, check a first
 * entry's block size and f against ours, copy its n bytes to dst (packed:
 * unpack them) and release the slot. what names the collective in a mismatch message. */
int nc__ga_take(numacoll_team_t *t, int writer, unsigned s, size_t f,
                const nc__ga_frag_t *fr, void *dst, const char *what);

#endif
