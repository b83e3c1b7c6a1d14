/*
 * Reduce / Allreduce internals: the staging slots every reduce algorithm
 * shares, the op descriptor, the fold that fixes the combination order,
 * and the algorithm entry points.
 *
 * Staging slots. Each rank owns rs slots of rf bytes (the largest s and f
 * of the team's reduce rules) in its NUMA-local block, each with a record of
 * three cache lines (shm_seg/layout.h):
 *   full  written by the owner: word = ticket + 1 once the slot holds the
 *         data of that ticket (release, after the data); data[56] carries
 *         payloads of at most 56 bytes inline;
 *   done  written by the owner (reduce-scatter/allgather only): ticket + 1
 *         once its combined slice is in the slot (release, after it);
 *   both words carry the call's signature in their high half (nc__dword),
 *   so a reader in another call never takes the data;
 *   rel   a running count of reader releases: every reader adds 1
 *         (fetch_add, release) when it will read the slot no more.
 * A *ticket* numbers slot uses: a Reduce of n fragments or an Allreduce of
 * n rounds takes n consecutive tickets, on every rank alike (team-wide
 * counter), and ticket g lives in slot g % s of whichever ranks stage it,
 * s being the call's rule's (s <= rs; the reuse rule below holds whatever
 * slot a ticket lands in, so rules with different s may follow each other).
 * Reuse rule (the Bcast's nreaders, generalised so one slot may serve a
 * different algorithm, root or reader count on every use): the owner adds
 * the number of readers of each use it publishes to its private expect[x]
 * and rewrites slot x only once rel >= expect[x] (acquire); a reader
 * releases a use only after it has seen that use's full word, so releases
 * are never counted against an earlier use. Values are compared
 * rollover-safely; nothing is ever reset.
 */
#ifndef NUMACOLL_REDUCE_H
#define NUMACOLL_REDUCE_H

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "coll/algs.h"
#include "coll/op.h"
#include "coll/reduce/ops.h"
#include "coll/team.h"
#include "coll/wait.h"

#define NC_RED_INLINE 56   /* payload bytes in a full / inline line */
/* a fold's private line (nc__red_pos_t's acc, NC_INL_PAYLOAD bytes) holds
 * the elements of one inline line */
_Static_assert(NC_INL_PAYLOAD >= NC_RED_INLINE, "acc holds a line");

/* A line with its payload first, so the payload is 64-byte aligned. */
typedef struct nc__rline {
    _Alignas(NC_CACHE_LINE) unsigned char data[NC_RED_INLINE];
    _Atomic uint64_t word;
} nc__rline_t;
_Static_assert(sizeof(nc__rline_t) == NC_CACHE_LINE, "rline is one line");

typedef struct nc__rslot {
    nc__rline_t full;
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t done;
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t rel;
} nc__rslot_t;
_Static_assert(sizeof(nc__rslot_t) == NC_RED_SLOT_LINES * NC_CACHE_LINE,
               "slot record lines");

/* Private per-rank state (team->red). */
struct nc__red {
    int *kids;            /* scratch for any tree's children              */
    uint64_t ticket;      /* slot uses so far, equal on every rank        */
    uint64_t *expect;     /* [rs] releases owed before slot x is reused   */
    uint64_t ar_seq;      /* inline Allreduce calls so far                */
    unsigned ar_al;       /* inline Allreduce lines per line slot         */
    /* the blocking fast paths' sizes (request.c), 1 .. this many bytes:
     * Allreduce's, Reduce's, an Allgather's blocks, Scan's, Exscan's, a
     * Reduce_scatter_block's p blocks (team.c's fast_rules) */
    size_t ar_fast_max, rd_fast_max, ag_fast_max, sc_fast_max, ex_fast_max,
        rs_fast_max;
    /* inline Alltoallv (coll/gather/alltoall_inline.c): the largest block
     * it carries (0: none, not even empty ones), and whether the next
     * Alltoallv tries it: every rank's blocks of the last one fitted
     * (equal on every rank: each learns every rank's verdict) */
    size_t a2av_max;
    int a2av_try;
    /* a Gatherv's, a Scatterv's blocks through the inline lines up to
     * these (0: none; their staged steps, team.c's fast_rules); whether
     * the next Scatterv whose rule is single copy tries them first
     * (rooted_inline.c): the last one's blocks all fitted (equal on
     * every rank: each reads the root's verdict) */
    size_t gv_max, sv_max;
    int sv_try;
    /* inline line reuse (nc__ar_begin): [p] inline calls rank j is known
     * to have finished; per line slot, who reads this rank's lines of
     * its last write there (kind NC_AR_RD_*, rank of NC_AR_RD_ONE) and
     * the call that wrote them */
    uint64_t *ar_known;
    struct nc__ar_last { int kind, who; uint64_t seq; } ar_last[NC_AR_SLOTS];
    /* s + 1 after an inline call s in which this rank saw every rank's
     * lines (an Allreduce's): then every rank had finished call s - 1,
     * so calls s + 1 .. s + NC_AR_SLOTS - 1 may rewrite their lines
     * without looking (nc__ar_all, nc__ar_begin);
     * UINT64_MAX: none such */
    uint64_t ar_all;
    int *slice_rank;      /* [p] reduce-scatter: owner of slice j         */
    int my_slice;         /* the slice this rank owns                     */
};


/* Slot record x and staging buffer x of rank r; inline Allreduce line k of
 * rank r in line slot `slot` (nc__ar_slot of the call). */
static inline nc__rslot_t *nc__rslot(const numacoll_team_t *t, int r,
                                     unsigned x)
{
    return (nc__rslot_t *)(t->base + nc__layout_rank_off(&t->layout, r) +
                           t->layout.red_ctrl_off +
                           (size_t)x * sizeof(nc__rslot_t));
}

static inline unsigned char *nc__rbuf(const numacoll_team_t *t, int r,
                                      unsigned x)
{
    return t->base + nc__layout_rank_off(&t->layout, r) +
           t->layout.red_buf_off + (size_t)x * t->layout.red_buf_stride;
}

static inline nc__rline_t *nc__arline(const numacoll_team_t *t, int r,
                                      unsigned slot, size_t k)
{
    return (nc__rline_t *)(t->base + nc__layout_rank_off(&t->layout, r) +
                           t->layout.ar_off +
                           ((size_t)slot * t->red->ar_al + k) * NC_CACHE_LINE);
}

/* Lines of a slot that one of a writer's p - 1 peers gets where each
 * has a fixed share (the inline Alltoallv's blocks, a Scatterv root's
 * destinations): floor(ar_al / (p - 1)); 0 at p = 1. */
static inline size_t nc__ar_share(const numacoll_team_t *t)
{
    return t->p > 1 ? t->red->ar_al / (size_t)(t->p - 1) : 0;
}

/* The line slot of inline call seq: NC_AR_SLOTS of ar_al lines each per
 * rank, used in turn (shm_seg/layout.h). */
static inline unsigned nc__ar_slot(uint64_t seq)
{
    return (unsigned)(seq % NC_AR_SLOTS);
}

/* A rank's line after its NC_AR_SLOTS * ar_al inline lines: the number of
 * inline calls it has finished (plain release store at the end of each),
 * read by a writer that must know its readers are done (nc__ar_begin). */
static inline _Atomic uint64_t *nc__arack(const numacoll_team_t *t, int r)
{
    return &nc__arline(t, r, NC_AR_SLOTS, 0)->word;
}

/*
 * Inline line reuse, for every algorithm on these lines (allreduce,
 * allgather, gather, scatter, alltoall(v), reduce_scatter, scan inline,
 * and the staged Gatherv's and Scatterv's blocks in the lines).
 * Rank r's lines of slot x hold its last call in that slot (call n uses
 * slot n % NC_AR_SLOTS); before r writes them again at call n it must
 * know that every reader of that call (seq s) has finished it:
 * known[j] > s. known[j] grows for free
 * whenever r reads j's line of call m (j writes it only after finishing
 * call m - 1: known[j] >= m), so where every rank reads every other
 * (Allreduce, Allgather, Alltoall, Reduce_scatter) it is always
 * up to date and no shared line is read; elsewhere (a Gather's non-root
 * never reads the root) r polls j's ack line, a plain store j makes at
 * the end of every inline call (nc__ar_end). No read-modify-write.
 */
enum { NC_AR_RD_NONE, NC_AR_RD_ALL, NC_AR_RD_ONE, NC_AR_RD_ABOVE };

/* Number an inline call (its base, *base; equal on every rank). A rank
 * that writes lines in it (kind: who will read them, NC_AR_RD_NONE:
 * writes nothing) first waits, lazily, for the readers of its previous
 * write of that line slot (a step's poll: NC_AGAIN with nothing done). */
int nc__ar_begin(numacoll_team_t *t, int kind, int who, uint64_t *base);

/* Reader: rank j's line of call seq was there, so j finished every call
 * before it. */
static inline void nc__ar_saw(numacoll_team_t *t, int j, uint64_t seq)
{
    uint64_t *k = &t->red->ar_known[j];
    if ((int64_t)(seq - *k) > 0)
        *k = seq;
}

/* Reader: every rank's lines of inline call seq were there. */
static inline void nc__ar_all(numacoll_team_t *t, uint64_t seq)
{
    t->red->ar_all = seq + 1;
}

/* End of an inline call: this rank reads no more of call base's lines. */
static inline void nc__ar_end(numacoll_team_t *t, uint64_t base)
{
    atomic_store_explicit(nc__arack(t, t->rank), base + 1,
                          memory_order_release);
}

/* Reader: rank j's line k of call seq (its line slot): wait for its word
 * (acquire; a step's poll), note j's progress (nc__ar_saw); *data: its
 * payload. This rank's own line: no wait. */
int nc__ar_wait_line(numacoll_team_t *t, int j, uint64_t seq, size_t k,
                     unsigned char **data);

/* A block of n bytes in lines first .. first + L(n) - 1 of a rank's
 * line slot `slot` (the inline Allgather's format, nc__ag_inline_lines): line
 * 0 carries 48 bytes and n, the others 56, each line's word
 * nc__dword(seq + 1) stored after its payload (release). */
void nc__ag_put(numacoll_team_t *t, unsigned slot, size_t first,
                const unsigned char *src, size_t n, uint64_t seq);
/* Reader: rank j's block of n bytes there to dst, from line *r on (0 at
 * first; a step's poll: NC_AGAIN at a line not written yet); a block
 * whose line 0 says another size is a mismatch (what: the collective). */
int nc__ag_get(numacoll_team_t *t, int j, unsigned slot, size_t first,
               unsigned char *dst, size_t n, uint64_t seq, size_t *r,
               const char *what);
/* An inline Alltoallv sender whose blocks do not all fit writes only
 * line 0 of each, with this as its size (nc__ag_put_unfit), as a staged
 * Gatherv's or Scatterv's writer for a block that goes through the
 * slots; a reader learns it with nc__ag_size (wait for line 0, note j's
 * progress, its size word). */
#define NC_AG_UNFIT UINT64_MAX
void nc__ag_put_unfit(numacoll_team_t *t, unsigned slot, size_t first,
                      uint64_t seq);
int nc__ag_size(numacoll_team_t *t, int j, unsigned slot, size_t first,
                uint64_t seq, uint64_t *size, const char *what);

/* Inline Allreduce: elements of elem bytes per line (whole elements only,
 * so every line folds on its own; 0: one does not fit), and the lines a
 * call of count elements takes (a call of none still meets in one). */
static inline size_t nc__ar_per_line(size_t elem)
{
    return elem && elem <= NC_RED_INLINE ? NC_RED_INLINE / elem : 0;
}

static inline size_t nc__ar_lines(size_t count, size_t per_line)
{
    return count ? (count + per_line - 1) / per_line : 1;
}

/* Inline Allgather (coll/gather/allgather_inline.c): the lines a block of
 * n bytes takes in the same lines, line 0 holding 48 bytes and the block's
 * size, the others 56. */
#define NC_AG_FIRST (NC_RED_INLINE - 8)
static inline size_t nc__ag_inline_lines(size_t n)
{
    return n <= NC_AG_FIRST
               ? 1 : 1 + (n - NC_AG_FIRST + NC_RED_INLINE - 1) / NC_RED_INLINE;
}

/* Whether this team's inline Allreduce lines take count elements of elem
 * bytes (every rank answers alike). */
static inline int nc__ar_inline_fits(const numacoll_team_t *t, size_t count,
                                     size_t elem)
{
    size_t epl = nc__ar_per_line(elem);
    return !count || (epl && nc__ar_lines(count, epl) <= t->red->ar_al);
}

/* Owner: slot x is free once every reader of its previous uses released
 * it (a step's poll: NC_AGAIN until then). */
int nc__rslot_claim(numacoll_team_t *t, unsigned x);

/* Owner: the slot holds ticket g now; `readers` ranks will release it.
 * The data must be written before (the release store orders it). */
static inline void nc__rslot_publish(numacoll_team_t *t, unsigned x,
                                     uint64_t g, unsigned readers)
{
    t->red->expect[x] += readers;
    atomic_store_explicit(&nc__rslot(t, t->rank, x)->full.word,
                          nc__dword(t, g + 1), memory_order_release);
    nc__wake(t);   /* its readers may sleep: a pipeline */
}

/* Reader: rank r's slot x holds ticket g (acquire; a step's poll). */
static inline int nc__rslot_wait_full(numacoll_team_t *t, int r, unsigned x,
                                      uint64_t g)
{
    uint64_t seen;
    nc__wait_why_t why = {r, "reduce slot", (long)x, (long)g};
    return nc__poll(t, &nc__rslot(t, r, x)->full.word, NC_WAIT_EQ,
                    nc__dword(t, g + 1), &seen, &why);
}

/* Reader: done reading rank r's slot x (its reads happen before). */
static inline void nc__rslot_release(numacoll_team_t *t, int r, unsigned x)
{
    atomic_fetch_add_explicit(&nc__rslot(t, r, x)->rel, 1,
                              memory_order_release);
    nc__wake(t);
}

/*
 * The fold: dest = o_0 op o_1 op ... op o_(n-1), the only place that
 * decides the combination order. get(env, j, &ptr) polls for operand j
 * and gives its address (NC_AGAIN while it has not come); put(env, j)
 * says operand j is no longer read.
 * Predefined ops fold left to right, ((o_0 op o_1) op o_2) ..., in dest;
 * dest may be o_0 itself (in place), no other operand. User ops fold
 * right to left, o_0 op (o_1 op (... op o_(n-1))), through
 * fn(in = o_j, inout = dest): dest must not be any operand. Both give
 * the rank-ordered result for an associative op; for floating point both
 * are fixed orders, so equal inputs give equal bits.
 */
typedef struct nc__fold {
    int n;
    int (*get)(void *env, int j, const void **ptr);
    void (*put)(void *env, int j);
    void *env;
    int copy;   /* copy-layer variant (nc__copy_pick) for the operand that
                 * is copied, not combined, into dest */
} nc__fold_t;

/* Bytes of n results to copy: whole elements but the padding after the
 * last one (nc__dtype_tail), so that a copy into a receive buffer never
 * writes past MPI's span of it; the padding holds nothing. */
static inline size_t nc__res_bytes(const nc__red_op_t *op, size_t n)
{
    return n * op->elem - nc__dtype_tail(op->dtype);
}

/* The inline algorithms' fold of a predefined op, every operand's lines
 * there: elements [lo, hi) of operands 0 .. nfold - 1, in lines first ..
 * of their line slot (own non-NULL: this rank's operand from there
 * instead, element-indexed), line by line x_0 op x_1 op ... with the
 * kernels alone, in nc__fold_step's order but without its
 * callbacks per line and operand (about 200 instructions a
 * line at p = 2), into recv + (at - lo) elements. One operand is copied,
 * unless it is its result already (a Scan's rank 0 in place).
 * The last op of a line writes recv itself (k3), the others acc (one
 * line): copying acc out instead made loads of bytes that the kernel had
 * just stored with other widths (a scalar tail's 4-byte stores under
 * memcpy's 8- or 16-byte loads). x86 cannot forward such a load from its
 * store buffer, so it waits until every older store is in the cache,
 * the previous line's stores into recv with their misses among them:
 * the inline Allreduce of uint32 took 0.15-0.2 us more at 68, 76 and
 * 80-112 bytes than at 64 and 72 (p = 2, cold buffers). The kernels
 * write an element's fields only, never a pair type's padding, so recv
 * is not written past its MPI span. Where this rank's operand lies in
 * recv (in place: k3's restrict) the last op writes a scratch line that
 * is copied out; the kernels called are the same (k3, k2 ..., k3), so NaN
 * payloads, which k2 and k3 may keep differently, do not depend on
 * whether a rank called in place. */
static inline void nc__fold_lines(const numacoll_team_t *t,
                                  const nc__red_op_t *op, unsigned slot,
                                  size_t first, size_t lo, size_t hi,
                                  int nfold, const unsigned char *own,
                                  unsigned char *acc, void *recv)
{
    const size_t e = op->elem, epl = nc__ar_per_line(e);
    const unsigned char *r0 = recv;
    const int direct =
        !own || own + hi * e <= r0 || r0 + (hi - lo) * e <= own + lo * e;
    /* zeroed: a pair type's padding, which the kernels leave, is copied */
    _Alignas(NC_CACHE_LINE) unsigned char last[NC_CACHE_LINE] = {0};
    for (size_t at = lo; at < hi;) {
        const size_t k = at / epl, in = at - k * epl,
                     end = (k + 1) * epl < hi ? (k + 1) * epl : hi,
                     n = end - at;
#define NC_OPND(j)                                                            \
    ((j) == t->rank && own ? own + at * e                                     \
                           : nc__arline(t, (j), slot, first + k)->data + in * e)
        unsigned char *out = (unsigned char *)recv + (at - lo) * e;
        if (nfold == 1) {
            if (out != NC_OPND(0))
                memcpy(out, NC_OPND(0), nc__res_bytes(op, n));
        } else {
            const unsigned char *left = NC_OPND(0);
            if (nfold > 2) {
                op->impl->k3(acc, left, NC_OPND(1), n);
                for (int j = 2; j < nfold - 1; j++)
                    op->impl->k2(acc, NC_OPND(j), n);
                left = acc;
            }
            op->impl->k3(direct ? out : last, left, NC_OPND(nfold - 1), n);
            if (!direct)
                memcpy(out, last, nc__res_bytes(op, n));
        }
#undef NC_OPND
        at = end;
    }
}

/* A step of the fold: *done counts the operands consumed (0 at first);
 * NC_AGAIN when get() had to wait (call again with the same *done and
 * dest), NUMACOLL_OK once all are in dest. */
int nc__fold_step(const nc__red_op_t *op, const nc__fold_t *f, void *dest,
                  size_t nelem, int *done);

/*
 * Rounds of slices through the staging slots: the reduce-scatter half of
 * the rsag Allreduce (coll/reduce/allreduce_rsag.c), shared with
 * Reduce_scatter and Scan/Exscan. Round r takes ticket base + r and slot
 * (base + r) % slots on every rank. A round has nslices slices; slice j
 * lies at element vo of a contribution and at element so of a slot, n
 * elements long (the slice function, which may cast s to a struct that
 * starts with it). Per round a rank
 *  stages (nc__rs_stage): claims its slot, copies every slice but `skip`
 *          from its contribution into it (adjacent slices in one copy),
 *          publishes full for `readers` readers (release);
 *  waits   (nc__rs_wait) for the full of every rank below nfold but
 *          itself (acquire);
 *  folds   (nc__rs_fold) slice `mine` of the contributions of ranks
 *          0 .. nfold-1, in rank order (reduce.h's fold), into dest: the
 *          others' from their slots, its own from its contribution, or
 *          from its own slot where own_staged (dest is the contribution).
 * Releasing the slots read is the caller's (after its last read).
 */
typedef struct nc__rs {
    numacoll_team_t *t;
    const nc__red_op_t *op;
    const unsigned char *own;   /* this rank's contribution             */
    size_t elem;
    uint64_t base;
    unsigned slots;
    int cin;                    /* copy-layer variant into the slot     */
    int nslices, skip, mine, nfold, own_staged;
    /* a round whose slices end within NC_RS_INLINE bytes of the slot
     * rides in the slot's line (one line transfer, no staging buffer) */
    int line_ok;
    unsigned readers;
    /* non-zero: round 0 carries it in the slot's line, and every reader
     * compares it with its own (what the call's signature does not
     * cover, e.g. Reduce_scatter's recvcounts); a difference is a
     * mismatch */
    uint64_t tag;
    void (*slice)(const struct nc__rs *s, size_t r, int j, size_t *vo,
                  size_t *so, size_t *n);
} nc__rs_t;

/* Ticket and slot of round r. */
static inline void nc__rs_round(const nc__rs_t *s, size_t r, uint64_t *g,
                                unsigned *x)
{
    *g = s->base + r;
    *x = (unsigned)(*g % s->slots);
}

/* Bytes of the line a round may use: its data but the tag's 8. */
#define NC_RS_INLINE (NC_RED_INLINE - 8)

/* Where round r's slices sit in rank's slot x: its line (line_ok and the
 * round's slices end within NC_RS_INLINE bytes), else its staging
 * buffer. Equal on every rank (the slice geometry is). */
unsigned char *nc__rs_slot(const nc__rs_t *s, int rank, unsigned x, size_t r);

/* Claim (a step's poll: nothing written before it succeeds), stage,
 * publish round r. */
int nc__rs_stage(const nc__rs_t *s, size_t r);
/* Wait for the fulls of round r; *i counts the peers seen (1 at first). */
int nc__rs_wait(const nc__rs_t *s, size_t r, int *i);
/* Fold slice mine of round r into dest (never waits: after nc__rs_wait). */
int nc__rs_fold(const nc__rs_t *s, size_t r, void *dest);
/* Release round r's slot of every rank below nfold but this one. */
void nc__rs_release(const nc__rs_t *s, size_t r);

/* Rounds P->k .. rounds - 1, each: stage (where `stages`), wait, fold
 * (fold(s, r): nc__rs_fold into the caller's destination and whatever
 * follows; it must not wait), release; resumable at any wait (P->part,
 * P->i). P->k = 0 and P->part = 0 before the first. */
int nc__rs_rounds(const nc__rs_t *s, nc__red_pos_t *P, size_t rounds,
                  int stages, int (*fold)(const nc__rs_t *s, size_t r));

/* Rounds of one slice, the whole chunk of f bytes (coll/reduce/scan.c):
 * every rank stages its chunk (where readers > 0 or own_staged) and folds
 * ranks 0 .. nfold - 1 into recv; the staged Scan and Exscan, and the
 * allfold Allreduce (nfold = p). cin: the copy into the slots. */
int nc__chunk_rounds(numacoll_team_t *t, nc__op_t *o, int nfold,
                     unsigned readers, int own_staged, int cin);

/* Reduce_scatter: a hash of the recvcounts (never 0), which ranks whose
 * counts differ with the same total compare to find a mismatch. */
uint64_t nc__rs_counts_tag(const nc__op_t *o, int p);

/* Elements of a unit: the fewest whose bytes are a whole number of cache
 * lines, so that slices of whole units never share a line. */
static inline size_t nc__red_unit(size_t elem)
{
    size_t a = elem, b = NC_CACHE_LINE;
    while (b) {
        size_t r = a % b;
        a = b;
        b = r;
    }
    return NC_CACHE_LINE / a;   /* lcm(elem, line) / elem */
}

/* Allreduce with a chosen algorithm (NC_ALG_ALLREDUCE_*), or -1 to let the
 * size decide as numacoll_allreduce() does; for tests and the benchmark.
 * sendbuf may be NUMACOLL_IN_PLACE. */
int nc__allreduce_with(numacoll_team_t *t, int alg, const void *sendbuf,
                       void *recvbuf, size_t count, const nc__red_op_t *op);
/* The algorithm numacoll_allreduce() picks for nbytes. */
nc__alg_t nc__allreduce_choose(const numacoll_team_t *t, size_t nbytes);

/* Fill an op descriptor; NUMACOLL_ERR_ARG (with last_error) if invalid. */
int nc__red_op_predef(numacoll_team_t *t, nc__red_op_t *op,
                      numacoll_dtype_t dtype, numacoll_op_t o);
int nc__red_op_user(numacoll_team_t *t, nc__red_op_t *op, size_t elem_size,
                    numacoll_user_op_fn fn, void *ctx, int commutative);

#endif
