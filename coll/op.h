/*
 * A collective call as a machine of resumable steps (issue 13): what the
 * call is (its arguments, the tuning rule taken for it) and where it has
 * got to. Every algorithm is a step function over one of these:
 *
 *     rc = step(t, o);   NUMACOLL_OK: done; NC_AGAIN: waiting, call again;
 *                        anything else: failed (the team's last_error)
 *
 * A step never blocks: where the blocking code waited it polls once
 * (nc__poll) and returns NC_AGAIN, having noted in t->pend what it waits
 * for, and its position lives in the op, so the next call goes on from
 * there. Steps may redo what they did before their wait point (they only
 * ever redo reads and stores of the same values), never what follows.
 * Blocking calls are the same machines driven to the end (nc__drive:
 * between steps it waits on t->pend with coll/wait.c's policy), requests
 * (coll/request.c) drive them from numacoll_test() and friends.
 *
 * Only one op of a team runs at a time (the one at the head of its request
 * queue, or a blocking call after the queue has drained), so the team's
 * counters (bank uses, tickets, call numbers) advance in the same order on
 * every rank, as before.
 */
#ifndef NUMACOLL_OP_H
#define NUMACOLL_OP_H

#include <stddef.h>
#include <stdint.h>

#include "coll/algs.h"
#include "coll/reduce/ops.h"
#include "coll/team.h"

/* An op of a reduction: predefined kernels (impl) or a user callback. */
typedef struct nc__red_op {
    size_t elem;                  /* bytes per element                    */
    int dtype, opn;               /* predefined type and op, -1 for user  */
    const nc__op_impl_t *impl;    /* predefined, or NULL                  */
    numacoll_user_op_fn fn;       /* user op when impl is NULL            */
    void *ctx;
    int commutative;
} nc__red_op_t;

/* Where a step of an algorithm has got to. Each algorithm owns its
 * fields (set when its phase is 0) and nothing else reads them. */
typedef struct nc__bcast_pos {
    size_t sent;        /* pipelined, cma: bytes moved                     */
    unsigned idx;       /* pipelined: next buffer of the bank              */
    int in_bank;        /* pipelined: the bank of t->op is claimed / read  */
    unsigned k;         /* geometry: banks found drained; inline: chunk    */
    uint64_t base, call, seen;   /* cma: this call's offer and number;
                                  * pipelined root: the call's copy-in
                                  * variant + 1 under whole-call adapt (0:
                                  * none) and the clock at its start     */
    unsigned char *tmp; /* cma: packing buffer (freed when the op ends)    */
    int late;           /* inline reader: line 0 not there at first look   */
} nc__bcast_pos_t;

typedef struct nc__red_pos {
    uint64_t base;      /* first ticket (pipelined, rsag) / inline call    */
    size_t k;           /* fragment, round or line in hand                 */
    int part;           /* what of round k is done (per algorithm)         */
    int i;              /* peers / slices handled within the part          */
    int fold;           /* operands of the fold consumed (nc__fold_step)   */
    int late;           /* inline Scan: a writer's line was not there yet  */
    /* inline Allreduce: the line being folded (a private buffer: the
     * user op's inout must be no operand, recv may be this rank's input) */
    _Alignas(NC_CACHE_LINE) unsigned char acc[NC_INL_PAYLOAD];
    size_t unit, chunk, rounds;   /* rsag: the call's geometry             */
} nc__red_pos_t;

/* A packed gather's callbacks (numacoll_*v_packed): block is the peer
 * rank (numacoll.h); failed: one returned non-zero on this rank. */
typedef struct nc__ga_io {
    numacoll_block_pack_fn pack;
    numacoll_block_unpack_fn unpack;
    void *ctx;
    int failed;
} nc__ga_io_t;

/* The gathers (coll/gather/): the call's first entry number, round in
 * hand, rounds of the call, own entries staged ahead, and the peers (or
 * destinations) done in the round. */
typedef struct nc__ga_pos {
    uint64_t base;
    size_t r, rounds, staged;
    int i;
    int own_later;    /* the own block is copied by the staged step */
    /* cma: in-place Alltoall's copy (freed at end), the call's offer base
     * and number, and how it runs (coll/gather/gather_cma.c: PICK) */
    unsigned char *tmp;
    uint64_t cbase, call;
    int mode;
    /* Alltoallv: some rank's blocks do not fit the inline lines (this
     * one's, or one whose verdict it has read: a2av_try of the next) */
    int unfit;
    /* Gatherv, Scatterv through the lines (ga.lines): the lines' call
     * number, and the line of the block being read (nc__ag_get's r) */
    uint64_t lbase;
    size_t lr;
    /* Gatherv under a single-copy rule: the lines were numbered, line 0
     * of every block written and the blocks in the lines read by the
     * root before the choice (gather_cma.c); the staged step only checks
     * the line 0 of the blocks past them */
    int lines_done;
} nc__ga_pos_t;

typedef struct nc__op {
    /* the call */
    nc__coll_t coll;
    int alg;                      /* nc__alg_t that runs it               */
    const nc__choice_t *ch;       /* its tuning rule                      */
    int root;                     /* -1: none                             */
    /* a Bcast: the call's, or the second half of reduce_bcast */
    struct nc__bcast_call {
        const nc__choice_t *ch;
        int alg, root;
        size_t nbytes;
        nc__io_t io;              /* where the bytes come and go          */
        int geo;                  /* the bank geometry is in force        */
    } bc;
    nc__red_op_t rop;             /* reductions: op, contribution, result */
    const void *own;
    void *recv;
    size_t count;
    /* Reduce_scatter: block j's elements, at the sum of those before it
     * (rs_counts NULL: every block rs_block elements; the caller's
     * array, read at every start of a persistent request) */
    const size_t *rs_counts;
    size_t rs_block;
    /* Allgather, Gather, Scatter and their v forms: blocks of bytes.
     * counts / displs NULL: every block is `each` bytes, block j at
     * j * each (the arrays are the caller's: a persistent request reads
     * them at every start, as MPI's do). own: this rank's block. */
    struct nc__ga_call {
        const unsigned char *send;
        unsigned char *recv;
        size_t each, own, sig_bytes;
        const size_t *counts, *displs;
        /* Alltoallv: the blocks to send (counts, displs: those received;
         * in place: the same arrays) */
        const size_t *scounts, *sdispls;
        int in_place;
        int v;                    /* a v form (counts per block)          */
        /* Gatherv, Scatterv: blocks up to the team's gv_max / sv_max go
         * through the inline lines, the others through the staged
         * rule's slots (gather_staged.c, scatter_staged.c) */
        int lines;
        /* packed (the staged algorithms only): the bytes come from and
         * go to io's callbacks; send and recv are NULL */
        int packed;
        nc__ga_io_t io;
    } ga;
    int bad;                      /* the verdict on the arguments         */
    /* where it is */
    int begun;                    /* numbered (nc__call_begin)            */
    int phase;                    /* the algorithm's: 0 = not started     */
    int sub;                      /* a composite's part (reduce_bcast)    */
    /* The vote that gives the team its staging first (coll/grow.c): 1
     * while due; the next rank whose vote it reads; a no seen so far */
    int grow;
    int grow_r, grow_no;
    nc__bcast_pos_t b;
    nc__red_pos_t r;
    nc__ga_pos_t g;
} nc__op_t;

/* The vote of a call that needs the team's staging before the team has
 * it (coll/grow.c), as a step: NUMACOLL_OK once every rank's staging has
 * pages, NC_AGAIN, NUMACOLL_ERR_NOSPACE when some rank found no room
 * (every rank returns it: the call is not run), or a wait's failure. */
int nc__grow_step(numacoll_team_t *t, nc__op_t *o);

/* Step of a whole call: numbers it first (refusing it there when bad),
 * then runs the algorithm's steps; on completion counts it. */
int nc__op_step(numacoll_team_t *t, nc__op_t *o);

/* Drive a step function to its end, waiting with coll/wait.c's policy
 * between steps: what every blocking path runs. */
int nc__drive(numacoll_team_t *t, int (*step)(numacoll_team_t *, nc__op_t *),
              nc__op_t *o);

/* Algorithm steps (coll/bcast/, coll/barrier.c, coll/reduce/). The Bcast
 * ones read o->bc; the reduce ones ch, rop, own, recv, count, root. */
int nc__bcast_step(numacoll_team_t *t, nc__op_t *o);     /* by o->alg */
int nc__bcast_pipelined_step(numacoll_team_t *t, nc__op_t *o);
int nc__bcast_inline_step(numacoll_team_t *t, nc__op_t *o);
int nc__bcast_cma_step(numacoll_team_t *t, nc__op_t *o);
int nc__barrier_step(numacoll_team_t *t, nc__op_t *o);
int nc__reduce_pipelined_step(numacoll_team_t *t, nc__op_t *o);
int nc__allreduce_inline_step(numacoll_team_t *t, nc__op_t *o);
int nc__allreduce_reduce_bcast_step(numacoll_team_t *t, nc__op_t *o);
int nc__allreduce_rsag_step(numacoll_team_t *t, nc__op_t *o);
int nc__allreduce_allfold_step(numacoll_team_t *t, nc__op_t *o);
/* The gathers' (coll/gather/) read ch and ga. */
int nc__allgather_staged_step(numacoll_team_t *t, nc__op_t *o);
int nc__allgather_inline_step(numacoll_team_t *t, nc__op_t *o);
int nc__gather_staged_step(numacoll_team_t *t, nc__op_t *o);
int nc__scatter_staged_step(numacoll_team_t *t, nc__op_t *o);
int nc__alltoall_staged_step(numacoll_team_t *t, nc__op_t *o);
int nc__gather_inline_step(numacoll_team_t *t, nc__op_t *o);
int nc__scatter_inline_step(numacoll_team_t *t, nc__op_t *o);
int nc__alltoall_inline_step(numacoll_team_t *t, nc__op_t *o);
/* Alltoallv tried inline (begin(), where the last one fitted): falls
 * back to the rule's algorithm (o->ch) where some rank's blocks do not
 * fit. */
int nc__alltoallv_inline_step(numacoll_team_t *t, nc__op_t *o);
/* Scatterv tried through the lines (begin(), where its rule is single
 * copy and the team's last such one fitted): falls back to the rule's
 * algorithm where the root's blocks do not all fit. */
int nc__scatterv_try_step(numacoll_team_t *t, nc__op_t *o);
/* Single copy (coll/gather/gather_cma.c): any of the four, by o->coll. */
int nc__ga_cma_step(numacoll_team_t *t, nc__op_t *o);
/* Reduce_scatter (coll/reduce/reduce_scatter.c), Scan and Exscan
 * (coll/reduce/scan.c): read ch, rop, own, recv, count (rs_counts,
 * rs_block). */
int nc__reduce_scatter_staged_step(numacoll_team_t *t, nc__op_t *o);
int nc__scan_staged_step(numacoll_team_t *t, nc__op_t *o);
int nc__reduce_scatter_inline_step(numacoll_team_t *t, nc__op_t *o);
int nc__scan_inline_step(numacoll_team_t *t, nc__op_t *o);

/* A Bcast op of the team's rule for nbytes (0 bytes: inline, so that a
 * mismatch shows), its copy variants picked, not begun: for algorithms
 * built on a Bcast, for drains and for numacoll_bcast(). */
void nc__bcast_op(numacoll_team_t *t, nc__op_t *o, size_t nbytes, int root,
                  const nc__io_t *io);

/* numacoll_bcast() with a forced algorithm (a rule naming it gives the
 * parameters); for tests and the benchmark. */
int nc__bcast_with(numacoll_team_t *t, int alg, void *buf, size_t nbytes,
                   int root);

/* Run every request of the team to its end (coll/request.c): before the
 * team goes. */
void nc__rq_finish(numacoll_team_t *t);

/* nc__bcast_op driven to its end (no call numbered, nothing counted). */
int nc__bcast_run(numacoll_team_t *t, size_t nbytes, int root, nc__io_t *io);

#endif
