/*
 * The team object and the shared structures every algorithm reads: the
 * internal counterpart of numacoll.h.
 *
 * How coll/ is layered, bottom up (a file uses only the layers below it;
 * tests/layers.sh checks the built objects for circles in `make check`):
 *  1. this header: the team, the segment's slots and their accessors;
 *     team_info.c: failure (last_error, the abort word), the trees and
 *     rules a made team offers; tree.c, copy.c, config.c, algs.c;
 *  2. wait.h / wait.c: the wait policy (spin, then yield), nc__poll for
 *     steps, nc__drive; dead peers and timeouts;
 *  3. op.h and the algorithms, each a step function over an nc__op_t:
 *     bcast/ (bcast.c dispatches by rule), barrier.c, reduce/, gather/;
 *  4. call.c: call numbers and signatures, mismatches, resynchronisation
 *     (it drains a Bcast and waits, so it sits above both);
 *  5. request.c: every public collective, blocking, nonblocking and
 *     persistent, and the team's request queue;
 *  6. team.c: making and freeing teams (it sets up the algorithms' state
 *     and finishes a team's requests before it goes).
 * Going up, one way only: a wait that finds its call mismatched, and an
 * algorithm that finds another call's word, reach call.c through the
 * team's nc__recovery_t table (below), which team.c fills.
 *
 * Memory-ordering rules, stated once:
 *  - a control slot's word is written with a release store after the data it
 *    announces (fragment in the root's buffer, or the inline payload) and
 *    polled with acquire loads, so the data is visible once the word is;
 *  - nreaders is decremented with release (the reader's copy-out is done)
 *    and the root polls it with acquire before overwriting the bank;
 *  - an inline Bcast line's word is stored with release after its payload,
 *    an inline ack with release after the copy-out it confirms, and the
 *    writer loads acks with acquire before it rewrites the slot;
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
#define NC_INL_PAYLOAD 56     /* payload bytes of an inline Bcast line */
/* (rule, root) pairs whose tree place a team keeps (nc__bcast_kin): a
 * fixed root, and the two of a p = 2 loop whose root alternates, hit */
#define NC_KIN_WAYS 4

/* Header block at offset 0; leaders[] follows at NC_HDR_FIXED. */
typedef struct nc__seg_hdr {
    uint64_t magic;
    uint32_t p, q, s;
    uint32_t pad0;
    uint64_t f;
    /* Ranks asleep in a wait or about to be (coll/wake.c): a writer of an
     * oversubscribed team looks here after its stores and wakes nobody
     * while it is 0. On the line that nothing else writes after creation,
     * so that look costs a load from the writer's own cache. */
    _Atomic uint32_t sleepers;
    /* First failure seen by any rank (a status code), so every waiter stops
     * instead of waiting for a rank that has given up. */
    _Alignas(NC_CACHE_LINE) _Atomic int32_t abort_status;
    _Atomic int32_t abort_rank;
    /* Mismatched calls (coll/call.c): how many times ranks found their
     * calls different, times 2, plus 1 while the last one is "soft" (read
     * at the start of every call: the line stays in every cache while
     * nothing goes wrong), the rank that found the last one, and the
     * arrivals at the resynchronisations that follow. */
    _Atomic uint64_t mm_epoch;
    _Atomic int32_t mm_rank;
    _Atomic uint64_t mm_arrive;
    _Atomic uint64_t mm_call;   /* the latest call failed for it */
    _Atomic uint64_t mm_first;  /* the call found bad, by mm_rank */
    /* The resync (its epoch) at which some rank turned out to have
     * finished a call that others failed: the first call after it fails on
     * every rank, so that rank hears of the mismatch too. */
    _Atomic uint64_t mm_told;
} nc__seg_hdr_t;
_Static_assert(sizeof(nc__seg_hdr_t) <= NC_HDR_FIXED, "header fits");

/* One bank: op and nreaders on separate lines (the root writes op once per
 * bank use, every reader decrements nreaders). */
typedef struct nc__bank {
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t op;
    /* The claiming root's call (relaxed, published by op's release): what
     * a reader whose own call differs drains (nc__bcast_mismatch), if that
     * call (coll) is a Bcast. */
    _Atomic uint64_t root, nbytes, sig32, coll, seq;
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t nreaders;
} nc__bank_t;
_Static_assert(sizeof(nc__bank_t) == 2 * NC_CACHE_LINE, "bank is two lines");

/* One control slot: a cache line. word = fragment bytes announced (0: empty);
 * the rest of the line is unused so that slots never share a line. */
typedef struct nc__ctrl {
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t word;
    unsigned char pad[NC_CACHE_LINE - 8];
} nc__ctrl_t;
_Static_assert(sizeof(nc__ctrl_t) == NC_CACHE_LINE, "slot is one line");

/* Inline Bcast (coll/bcast/bcast_inline.c), in each rank's control area:
 * an ack line written by the rank alone (word j: the word of the last call
 * it finished in slot j, release), one record line per slot (the call whose
 * data the slot holds, read only by a reader that finds another call's
 * word), and NC_INL_SLOTS slots of il lines. A line's word is
 * sig32 << 32 | the inline call number (low 32 bits): a reader waits for
 * its number, then the signature tells it whether the line is its call's. */
typedef struct nc__inl_line {
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t word;
    unsigned char data[NC_INL_PAYLOAD];
} nc__inl_line_t;
_Static_assert(sizeof(nc__inl_line_t) == NC_CACHE_LINE, "inline line");

typedef struct nc__inl_ack {
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t word[NC_INL_SLOTS];
} nc__inl_ack_t;
_Static_assert(sizeof(nc__inl_ack_t) == NC_CACHE_LINE, "ack is one line");

typedef struct nc__inl_rec {
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t root;
    _Atomic uint64_t nbytes, coll, seq, sig32;
} nc__inl_rec_t;
_Static_assert(sizeof(nc__inl_rec_t) == NC_CACHE_LINE, "record is one line");

/* Barrier flags of one rank: arrive is written by the rank itself and read
 * by its parent; release is written by the parent and polled by the rank. */
typedef struct nc__sync {
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t arrive;
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t release;
    /* Single-copy Bcast (coll/bcast/bcast_cma.c), written by the rank
     * itself: avail counts the bytes its buffer has offered over all such
     * calls (its children read up to it), addr/nbytes describe this call's
     * buffer; fin is the number of such calls it has finished reading.
     * The single-copy gathers (coll/gather/gather_cma.c) share them, and
     * publish in cnt and dsp the addresses of their v-counts and
     * displacements (0: blocks of nbytes at multiples of nbytes), in big
     * the largest block they know of (a v form's choice). */
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t avail;
    _Atomic uint64_t addr, nbytes, sig, cnt, dsp, big;
    /* its vote before `grow` (coll/grow.c: a slow reader of a vote finds
     * it here once the voter has voted again) */
    _Atomic uint64_t grow_prev;
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t fin;
    /* Single-copy gathers: the call whose buffer this rank has open to
     * the others (0: none), and the ranks inside a move into or out of it
     * now (gather_cma.c: a rank that leaves the call closes it, then
     * waits for them). */
    _Atomic uint64_t open, writing;
    /* the call number this rank enters with at a resynchronisation */
    _Atomic uint64_t resync_seq;
    /* 1 once the rank has destroyed the team: nobody waits for it then */
    _Atomic uint64_t gone;
    /* A sleeping wait of this rank (coll/wake.c): the awaited word's
     * offset in the segment times 8 plus its condition plus 1 (0: awake),
     * the condition's argument, and the futex word its wakers bump. */
    _Atomic uint64_t sleep_on, sleep_arg;
    _Atomic uint32_t bell;
    /* The call this rank is in (coll/call.c), written by the rank at the
     * start of every call: fields relaxed, then sig (release), a hash of
     * the fields, so a reader that recomputes it knows it read one call;
     * hist is the signature of the call before (0 after a resync), which
     * the hash covers too. */
    _Alignas(NC_CACHE_LINE) _Atomic uint64_t call_seq;
    _Atomic uint64_t call_desc, call_nbytes, call_count;
    _Atomic uint64_t call_sig, call_hist;
    /* the last call this rank refused, plus 1 (0: none), kept when its
     * call line has moved on to its next call (nc__call_refuse) */
    _Atomic uint64_t refused;
    /* This rank's vote in the team's growths (coll/grow.c): 4 times the
     * number of the call that grows, plus 1 if its staging is in place,
     * plus 2 if it found no room */
    _Atomic uint64_t grow;
} nc__sync_t;
_Static_assert(sizeof(nc__sync_t) == NC_SYNC_LINES * NC_CACHE_LINE,
               "sync lines");

/* Waits (coll/wait.h): what a wait is for, and a step's pending wait. */
typedef enum {
    NC_WAIT_NONZERO,   /* *w != 0                                   */
    NC_WAIT_EQ,        /* *w == arg                                 */
    NC_WAIT_GE,        /* (int64_t)(*w - arg) >= 0: rollover-safe   */
    NC_WAIT_GE32,      /* low 32 bits of *w at or past those of arg,
                        * rollover-safe, and *w not 0 (words that carry
                        * a signature in their high half, the inline
                        * Bcast's: a zeroed line is empty at any number) */
} nc__wait_cond_t;

/* How a wait gives the CPU away (numacoll_config_t's wait_policy). */
enum { NC_WAIT_SPIN, NC_WAIT_YIELD, NC_WAIT_SLEEP };

/* What a wait is for, used only to word an error. */
typedef struct nc__wait_why {
    int peer;          /* rank waited for; -1: any rank of the team */
    const char *what;  /* e.g. "control slot"                       */
    long a, b;         /* slot index, bank, op ... as the text says */
} nc__wait_why_t;

/* What a step waits for when it returns NC_AGAIN (team->pend). */
typedef struct nc__pend {
    _Atomic uint64_t *w;
    nc__wait_cond_t c;
    uint64_t arg;
    nc__wait_why_t why;
} nc__pend_t;

/* A tree of the team, built at creation for every (kind, radix) its
 * tuning rules name. hier: 0, or the numa shape with a knomial of radix
 * hier between the heads of the levels (nc__tree_init_levels'
 * leader_radix), as Reduce uses it: k unless a rule gives ku=. */
typedef struct nc__team_tree {
    int kind, k, hier;
    uint16_t lt[NUMACOLL_LEVEL_END]; /* the rule's level trees (nc__team_tree_key) */
    nc__tree_t tree;
} nc__team_tree_t;

struct numacoll_team {
    int rank, p;
    /* 1: more ranks than CPUs, or some rank asked to sleep (coll/team.c):
     * some rank may sleep, so writers wake sleepers (the same on every
     * rank) */
    int oversub;
    /* The wait policy in force on this rank (numacoll_config_t's
     * wait_policy, auto resolved: NC_WAIT_SPIN, _YIELD or _SLEEP) */
    int wait_pol;
    numacoll_config_t cfg;
    char topology[512];         /* cfg.topology points here when given */
    numacoll_locality_t *loc;   /* [p] */
    nc__doms_t *doms;           /* [p] domains of each rank at every level */
    int *leaders;               /* [p] leader rank of each rank's node */
    /* Every choice comes from here (tune/table.h): the team's tuning rules,
     * resolved once for its p and NUMA shape, config overrides applied. */
    nc__tune_team_t tune;
    char tune_source[256];      /* the table they came from */
    /* Bit c: some rule of collective c the team resolved says decline=1
     * (numacoll_team_declines() looks no further where it is clear). */
    unsigned decline_mask;
    nc__team_tree_t *trees;     /* [ntrees] */
    int ntrees;
    /* nc__bcast_kin's answers: for NC_KIN_WAYS (rule, root) pairs (ch
     * NULL: none yet), the tree, this rank's parent, its child count and
     * children (children + way * kin_stride); kin_next: the way the next
     * new pair replaces */
    struct nc__kin {
        const nc__choice_t *ch;
        const nc__tree_t *tree;
        int root, parent, nchild;
    } kin[NC_KIN_WAYS];
    int *children;
    int kin_stride, kin_next;
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
    uint64_t calls[NC_COLL_COUNT];  /* numacoll_team_calls, by collective */
    numacoll_placement_t placement;
    /* Staging grown on demand (coll/grow.c): staged, the same on every
     * rank, once every rank's queues and slots have pages (set at the
     * first call that needs them, by a vote); own_staged: this rank's
     * own have. */
    int staged, own_staged;
    int grow_err;               /* errno of this rank's last failed one */
    char seg_name[96];
    /* The segment's identity (shm_seg/seg.h) and the key a pooled segment
     * must match to serve this team: kept so that team_free can pool the
     * mapping; pool_ok once creation has succeeded. */
    uint64_t seg_dev, seg_ino;
    uint64_t *pool_key;
    size_t pool_nkey;
    int pool_ok;
    char last_error[256];
    /* Barrier (coll/barrier.c): its algorithm (nc__alg_t) and radix,
     * taken once from its rule. tree: its own hier tree rooted at rank 0;
     * parent and children computed once. dissem: its rounds, and the
     * Barriers this team has run since creation or the last resync (the
     * parity of that count picks the sync line). */
    int barrier_alg;
    unsigned barrier_k, barrier_rounds;
    uint64_t barrier_n;
    nc__tree_t barrier_tree;
    int barrier_parent, barrier_nchild;
    int *barrier_children;
    /* Reduce / Allreduce state (coll/reduce/reduce.h). */
    struct nc__red *red;
    /* Single-copy Bcast: usable (probed and agreed at creation), why not,
     * and the running totals every rank keeps alike: calls and bytes. */
    int cma_ok;
    char cma_why[256];
    uint64_t cma_calls, cma_bytes;
    /* The call in progress (coll/call.c): its number (the same on every
     * rank of a correct program), description, and signature; sig32 is the
     * high half of every data word the call publishes. */
    uint64_t call_seq, call_desc, call_nbytes, call_count, call_sig;
    uint32_t sig32;
    /* The signature of the call before this one (the history the current
     * signature covers), and the one the next call covers: this call's
     * signature as published, whatever a refusal makes of it. Both 0 at
     * creation and after a resync. */
    uint64_t call_hist, call_next_hist;
    /* Mismatches this rank has resynchronised after (hdr->mm_epoch), the
     * first call number that runs again after the last one, and whether
     * this rank is resynchronising now (its waits then look at nothing
     * but dead peers). */
    uint64_t mm_done, resume_seq, resyncs;
    /* 2 in a resync's first meeting (which a rank found behind leaves),
     * 1 in the others; resync_next: the call it resynchronises for */
    int in_resync;
    uint64_t resync_next;
    /* The last call this rank failed for a mismatch (found it, gave it up,
     * or refused it); after a resync, the call that fails on every rank to
     * tell a rank that had finished a failed call (0: none), and that
     * rank's finished call (0: this rank was not the one told). */
    uint64_t mm_failed, told_seq, told_last;
    /* The Bcast geometry in force at creation, restored by a resync. */
    size_t geo0_f;
    unsigned geo0_s, geo0_q;
    int draining;               /* nc__bcast_mismatch is draining a call */
    const struct nc__recovery *recovery;   /* coll/call.c's table */
    int claiming;               /* nc__bank_claim waits for its bank */
    /* Inline Bcast: calls so far (the same on every rank; call n uses slot
     * n % NC_INL_SLOTS), the latest call every other rank is known to have
     * acked, the word of the call each slot last held, and the slots'
     * size: il lines, inl_max payload bytes. */
    uint64_t inl_seq, inl_ok;
    uint64_t inl_word[NC_INL_SLOTS];
    int inl_root;               /* root of this rank's last inline Bcast */
    unsigned inl_ahead;         /* calls in a row that found it ahead    */
    unsigned inl_lines;
    size_t inl_max;
    /* the blocking fast Bcast's sizes (request.c), 1 .. bc_fast_max
     * (0: none), whose rule is bc_fast_ch, inline */
    size_t bc_fast_max;
    const struct nc__choice *bc_fast_ch;
    /* an Alltoallv's rule (that of the largest size), which the blocking
     * fast Alltoallv falls back to (coll/gather/alltoall_inline.c) */
    const struct nc__choice *a2av_ch;
    /* What the running step waits for (coll/wait.h nc__poll), and the
     * team's requests in the order they were started (coll/request.c):
     * only the head runs. */
    nc__pend_t pend;
    int blocking;               /* a blocking driver runs the steps      */
    struct numacoll_request *rq_head, *rq_tail;
    unsigned rq_polls;          /* fruitless polls of the head's wait    */
    _Atomic uint64_t *rq_w;     /* that wait (its word and value)        */
    uint64_t rq_arg;
    uint64_t rq_since, rq_check; /* when the head's wait began, when dead
                                  * peers were last looked for            */
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

/* Rank r's inline ack line, slot j's record, line k of slot j. */
static inline nc__inl_ack_t *nc__inl_ack(const numacoll_team_t *t, int r)
{
    return (nc__inl_ack_t *)(t->base + nc__layout_rank_off(&t->layout, r) +
                             t->layout.inl_off);
}

static inline nc__inl_rec_t *nc__inl_rec(const numacoll_team_t *t, int r,
                                         unsigned j)
{
    return (nc__inl_rec_t *)nc__inl_ack(t, r) + 1 + j;
}

static inline nc__inl_line_t *nc__inl_line(const numacoll_team_t *t, int r,
                                           unsigned j, unsigned k)
{
    return (nc__inl_line_t *)nc__inl_ack(t, r) + 1 + NC_INL_SLOTS +
           (size_t)j * t->inl_lines + k;
}

static inline nc__sync_t *nc__sync(const numacoll_team_t *t, int r)
{
    return (nc__sync_t *)(t->base + nc__layout_rank_off(&t->layout, r) +
                          t->layout.sync_off);
}

/* Staging on demand (coll/grow.c). The bytes of this rank's block past
 * its control pages: its queue and its reduce staging slots. */
static inline unsigned char *nc__own_staging(const numacoll_team_t *t,
                                             size_t *len)
{
    *len = t->layout.rank_len - t->layout.ctrl_len;
    return t->base + nc__layout_rank_off(&t->layout, t->rank) +
           t->layout.ctrl_len;
}
/* The vote of a rank staged for good (coll/grow.c): past any 4 c + 1 in
 * the rollover-safe comparison of NC_WAIT_GE, and odd, a yes. A
 * resynchronisation, which clears the control lines, writes it again. */
#define NC_GROW_STAGED ((UINT64_C(1) << 62) | 1)

/* The bytes /dev/shm may hold after a creation or growth: node_budget, or
 * half of /dev/shm's size (`size`, from nc__seg_used; 0 when unknown: no
 * limit). */
uint64_t nc__node_budget(const numacoll_team_t *t, uint64_t size);

/* Give this rank's staging pages to /dev/shm now (no vote: the caller
 * knows that nobody reads them any more, or will before a vote). */
int nc__grow_own(numacoll_team_t *t, int *err);
/* For tests of what runs on a grown team: grow this rank's staging and
 * mark the team grown, without a vote. Every rank must call it right
 * after creation, before its first call. */
int nc__grow_now(numacoll_team_t *t);

/* Record a detailed error for numacoll_team_last_error(); returns status. */
int nc__team_fail(numacoll_team_t *t, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Mark the team aborted with status (the first failure wins) so that every
 * waiter stops instead of waiting for a rank that has given up. */
void nc__team_abort(numacoll_team_t *t, int status);

/* Status of an aborted team, or NUMACOLL_OK. */
int nc__team_check_abort(numacoll_team_t *t);

/* ---- call signatures (coll/call.c) ---------------------------------- */

/* What a call is, for its signature: the collective (nc__coll_t), root
 * (-1: none), bytes, elements, and for reductions the type and op
 * (-1: a user op, described by its element size and commutativity). */
typedef struct nc__call {
    int coll, root;
    size_t nbytes, count;
    int dtype, op, commutative;
} nc__call_t;

/* A 64-bit mix of the call's fields, cheap because every call pays it:
 * each field times its own odd constant (a bijection, so a field that
 * differs alone always changes the sum), rotated apart and folded so the
 * high half (sig32) depends on every bit. Equal fields give equal
 * signatures on every rank; calls that differ in several fields collide
 * with probability about 2^-32. hist, the previous call's signature,
 * chains them: two ranks whose earlier calls differed where nobody could
 * compare them (two ranks that each named themselves the root of a Bcast
 * that needs nothing from anyone) have different signatures for every
 * call after it, so their next call that compares finds it. */
static inline uint64_t nc__call_hash(uint64_t seq, uint64_t desc,
                                     uint64_t nbytes, uint64_t count,
                                     uint64_t hist)
{
    uint64_t h = seq * 0x9e3779b97f4a7c15ULL + desc * 0xbf58476d1ce4e5b9ULL +
                 nbytes * 0x94d049bb133111ebULL + count * 0xd6e8feb86659fd93ULL +
                 hist * 0xa0761d6478bd642fULL;
    return h ^ (h << 32 | h >> 32);
}

/* A call's signature, as begin() (coll/request.c) and the blocking fast
 * paths make it, so that ranks on either path meet: of bytes (Bcast,
 * Barrier; the gathers, count then saying the kind of algorithm), ... */
static inline nc__call_t nc__call_of(int coll, int root, size_t nbytes,
                                     size_t count)
{
    return (nc__call_t){.coll = coll, .root = root, .nbytes = nbytes,
                        .count = count, .dtype = -1, .op = -1};
}

/* ... and of a reduction: count elements of elem bytes, its type and op
 * (-1: a user op) and whether the op commutes. */
static inline nc__call_t nc__call_of_red(int coll, int root, size_t count,
                                         size_t elem, int dtype, int op,
                                         int commutative)
{
    return (nc__call_t){.coll = coll, .root = root, .nbytes = count * elem,
                        .count = count, .dtype = dtype, .op = op,
                        .commutative = commutative};
}

/* desc: coll (8 bits) | root + 1 (24) | dtype + 1 (8) | op + 1 (8) |
 * commutative (1), so that -1 ("none", "user") packs as 0. */
static inline uint64_t nc__call_desc(const nc__call_t *c)
{
    return (uint64_t)(c->coll & 0xff) |
           (uint64_t)((unsigned)(c->root + 1) & 0xffffff) << 8 |
           (uint64_t)((unsigned)(c->dtype + 1) & 0xff) << 32 |
           (uint64_t)((unsigned)(c->op + 1) & 0xff) << 40 |
           (uint64_t)(c->commutative != 0) << 48;
}

/* Number the next call and publish its signature in this rank's call line
 * (a few stores to a line nobody reads in a correct program); sig32 for
 * the data words. */
static inline void nc__call_publish(numacoll_team_t *t, uint64_t desc,
                                    size_t nbytes, size_t count)
{
    nc__sync_t *me = nc__sync(t, t->rank);
    t->call_seq++;
    t->call_desc = desc;
    t->call_nbytes = nbytes;
    t->call_count = count;
    t->call_hist = t->call_next_hist;
    t->call_sig = nc__call_hash(t->call_seq, desc, nbytes, count,
                                t->call_hist);
    t->call_next_hist = t->call_sig;
    /* never 0: a zero word means "empty" to every reader */
    t->sig32 = (uint32_t)(t->call_sig >> 32) | 1u;
    atomic_store_explicit(&me->call_seq, t->call_seq, memory_order_relaxed);
    atomic_store_explicit(&me->call_desc, desc, memory_order_relaxed);
    atomic_store_explicit(&me->call_nbytes, nbytes, memory_order_relaxed);
    atomic_store_explicit(&me->call_count, count, memory_order_relaxed);
    atomic_store_explicit(&me->call_hist, t->call_hist, memory_order_relaxed);
    atomic_store_explicit(&me->call_sig, t->call_sig, memory_order_release);
}

/* nc__call_begin where something is amiss: an abort, a mismatch since the
 * last resynchronisation, a call number another rank gave up. */
int nc__call_begin_slow(numacoll_team_t *t, const nc__call_t *c);

/* Whether the next call may begin without nc__call_begin_slow: no abort,
 * no mismatch since the last resynchronisation, no lost call number. */
static inline int nc__call_quiet(const numacoll_team_t *t)
{
    return atomic_load_explicit(&t->hdr->abort_status,
                                memory_order_acquire) == 0 &&
           atomic_load_explicit(&t->hdr->mm_epoch, memory_order_acquire) ==
               t->mm_done &&
           (int64_t)(t->resume_seq - (t->call_seq + 1)) <= 0;
}

/* Start a call: number it, publish its signature (nc__call_publish).
 * Returns OK or the team's abort status, or fails a call lost to a
 * mismatch. Inline, because every call pays it on its way in, the small
 * ones on their critical path: the common case is two loads of a line
 * nobody writes while all goes well, a compare, and the stores. */
static inline int nc__call_begin(numacoll_team_t *t, const nc__call_t *c)
{
    if (nc__call_quiet(t)) {
        nc__call_publish(t, nc__call_desc(c), c->nbytes, c->count);
        return NUMACOLL_OK;
    }
    return nc__call_begin_slow(t, c);
}

/* The call begun was refused on this rank (bad arguments): say so in its
 * call line, so the ranks that wait for it stop with MISMATCH instead of
 * waiting, and the call numbers stay in step; unheard: nobody waits for
 * this rank's part (a Reduce root), so all resynchronise at their next
 * call. Returns status. */
int nc__call_refuse(numacoll_team_t *t, int status, int unheard);

/* nc__call_refuse for a Bcast: a reader first reads the root's call to its
 * end, discarding the data (nobody waits for a reader to notice it). */
int nc__bcast_refuse(numacoll_team_t *t, size_t nbytes, int root, int status);

/* A data word of the call: its signature over the low 32 bits `low`
 * (a fragment length, a ticket). A reader that waits for the word it
 * expects never accepts another call's data. */
static inline uint64_t nc__dword(const numacoll_team_t *t, uint64_t low)
{
    return (uint64_t)t->sig32 << 32 | (low & 0xffffffffu);
}

/*
 * Mismatch recovery (coll/call.c). It runs the algorithms (a Bcast reader
 * out of step drains the root's call as a Bcast) and waits, so it sits
 * above both; the waits and the algorithms below reach it through the
 * team's table (t->recovery, set by team.c), which keeps the files of
 * coll/ free of circles while a wait may still start a recovery.
 */
typedef struct nc__recovery {
    /* This rank found its call and peer's different (peer's data word
     * carried another signature, or peer's call line says so): record it,
     * word last_error naming both sides, and return NUMACOLL_ERR_TRUNCATE
     * (a Bcast root sent more than this rank's buffer) or
     * NUMACOLL_ERR_MISMATCH. */
    int (*mismatch)(numacoll_team_t *t, int peer, const char *what);
    /* A Bcast reader found a word of another signature (seen) from
     * parent: if it is the Bcast a root claimed this bank use for, take
     * that call as a reader, discarding its data, so the team stays in
     * step, and return TRUNCATE or MISMATCH naming both calls; otherwise
     * mismatch(). */
    int (*bcast_mismatch)(numacoll_team_t *t, int parent, uint64_t seen,
                          const char *what);
    /* bcast_mismatch for an inline Bcast reader that found a word of
     * another signature (seen) in parent's slot j: the slot's record
     * says which call wrote it. */
    int (*bcast_mismatch_inline)(numacoll_team_t *t, int parent, unsigned j,
                                 uint64_t seen, const char *what);
    /* Slow path of every wait (coll/wait.c): NC_CALL_WAIT to keep
     * waiting, NC_CALL_AHEAD when peer (>= 0) has gone on to a later call
     * (the waiter rechecks its condition once, then calls bcast_lost), or
     * a status when another rank found this call mismatched or a rank
     * this wait depends on (peer, or any with -1) is in a different call
     * of the same number. */
    int (*call_check)(numacoll_team_t *t, int peer);
    /* A wait of this rank found the awaited peer gone on to a later call
     * without the word it waits for. If this is a Bcast reader and the
     * root of its call number made a Bcast of another kind (a pipelined
     * one while this rank reads inline, or the reverse: its words went to
     * slots this rank does not read), drain that call as bcast_mismatch
     * does, found from the root's bank claim or inline slot record;
     * otherwise mismatch(). */
    int (*bcast_lost)(numacoll_team_t *t, int peer, const char *what);
} nc__recovery_t;

#define NC_CALL_WAIT 1
#define NC_CALL_AHEAD 2
#define NC_CALL_GONE 3      /* as AHEAD, but peer has destroyed the team */
#define NC_CALL_LATE 4      /* a resync's first meeting: this rank is
                             * behind, it leaves (coll/call.c) */

/* coll/call.c's table; only team.c names it */
extern const nc__recovery_t nc__call_recovery;

static inline int nc__mismatch(numacoll_team_t *t, int peer, const char *what)
{
    return t->recovery->mismatch(t, peer, what);
}

static inline int nc__bcast_mismatch(numacoll_team_t *t, int parent,
                                     uint64_t seen, const char *what)
{
    return t->recovery->bcast_mismatch(t, parent, seen, what);
}

static inline int nc__bcast_mismatch_inline(numacoll_team_t *t, int parent,
                                            unsigned j, uint64_t seen,
                                            const char *what)
{
    return t->recovery->bcast_mismatch_inline(t, parent, j, seen, what);
}

static inline int nc__call_check(numacoll_team_t *t, int peer)
{
    return t->recovery->call_check(t, peer);
}

static inline int nc__bcast_lost(numacoll_team_t *t, int peer,
                                 const char *what)
{
    return t->recovery->bcast_lost(t, peer, what);
}

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


/* Reader side: this rank's copies out of the bank are done (release). */
static inline void nc__bank_release(numacoll_team_t *t, unsigned set)
{
    atomic_fetch_sub_explicit(&t->banks[set].nreaders, 1, memory_order_release);
}

/* "2 packages > 4 NUMA > 16 L3 > 64 ranks": the hierarchy the team's
 * levels build (outermost first); returns snprintf's count. */
int nc__team_hierarchy(const numacoll_team_t *t, char *buf, size_t len);

/* The tree (kind, k, hier, level trees lt: a rule's ch.lt or NULL) built
 * at team creation; NULL if the team's rules name no such tree. A linear
 * scan of a handful of entries. */
const nc__tree_t *nc__team_tree(const numacoll_team_t *t, int kind, int k,
                                int hier, const uint16_t *lt);
/* The level trees a tree of (kind, hier) is keyed by: lt, or zeros where
 * the tree has no levels (lt NULL, or a flat, chain, kary, knomial one). */
void nc__team_tree_key(int kind, int hier, const uint16_t *lt,
                       uint16_t key[NUMACOLL_LEVEL_END]);

/* The choice of the team's tuning rules for coll at nbytes (binary search
 * over the team's resolved size ranges; never NULL). */
static inline const nc__choice_t *nc__team_choice(const numacoll_team_t *t,
                                                  nc__coll_t coll,
                                                  size_t nbytes)
{
    return &nc__tune_lookup(&t->tune, coll, nbytes)->ch;
}

/* nc__bcast_kin for a pair it does not keep: finds the place and keeps
 * it in way kin_next (round robin); the way's index. */
int nc__bcast_kin_find(numacoll_team_t *t, const nc__choice_t *ch, int root);

/* This rank's place in the tree of Bcast rule ch (a rule of t's table)
 * for root: the tree (*tree, if tree), its parent there (*parent; -1 at
 * the root) and its children (*kids, if kids; their count returned).
 * Every Bcast asks at its start, a small one on its critical path, so
 * the answers for a few pairs are kept: a team's rules do not change once
 * it is made. (Computing a tree's children and parent costs 100-150
 * instructions, as much as the rest of an inline Bcast's step.) */
static inline int nc__bcast_kin(numacoll_team_t *t, const nc__choice_t *ch,
                                int root, const nc__tree_t **tree,
                                int *parent, const int **kids)
{
    int w = 0;
    while (w < NC_KIN_WAYS && (t->kin[w].ch != ch || t->kin[w].root != root))
        w++;
    if (w == NC_KIN_WAYS)
        w = nc__bcast_kin_find(t, ch, root);
    if (tree)
        *tree = t->kin[w].tree;
    *parent = t->kin[w].parent;
    if (kids)
        *kids = t->children + (size_t)w * (size_t)t->kin_stride;
    return t->kin[w].nchild;
}

/* Turn tt's single-copy rules into what a team without single copy runs:
 * a Bcast's cma into pipelined (f = 8 KiB, s = 64, q = 2, its tree, radix
 * and copy), a gather's into staged with its s and copy, f cut to rf_max
 * (the team's staging slots). */
void nc__tune_no_cma(nc__tune_team_t *tt, size_t rf_max);

/* The choice for a forced algorithm alg of coll at nbytes: the size's rule
 * if it names alg, else the first of the team's rules of coll that does;
 * NULL when none does. For tests and the benchmark. */
const nc__choice_t *nc__team_choice_alg(const numacoll_team_t *t,
                                        nc__coll_t coll, int alg,
                                        size_t nbytes);

/* Per-team state of Barrier and Reduce/Allreduce, made at team creation
 * (after the localities are known) and freed with the team; fini must
 * accept what a failed init left. */
int nc__barrier_init(numacoll_team_t *t);
void nc__barrier_fini(numacoll_team_t *t);
int nc__red_init(numacoll_team_t *t);
void nc__red_fini(numacoll_team_t *t);
/* Inline Allreduce lines per line slot that the team's rules need, plus
 * one (after nc__red_init): shm_seg/layout.h's al. */
unsigned nc__red_ar_lines(const numacoll_team_t *t);
/* The largest size a rule of collective coll gives algorithm alg, at most
 * what alg carries (0: no such rule): what inline slots are sized for. */
size_t nc__team_rule_max(const numacoll_team_t *t, int coll, int alg);
/* Reduce counters back to their state at creation (coll/call.c resync). */
void nc__red_reset(numacoll_team_t *t);

/* This rank's control lines zeroed (rank 0: the banks too) and its
 * counters as at creation; the caller makes sure no rank reads them
 * meanwhile (coll/call.c). */
void nc__team_reset_state(numacoll_team_t *t);

#endif
