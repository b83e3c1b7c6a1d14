/*
 * The public entry points of the collectives, blocking and not, in one
 * place: argument checks, the op (coll/op.h) each call becomes, the step
 * that numbers a call and runs its algorithm's steps, and the team's queue
 * of requests.
 *
 * A blocking call is an op on the caller's stack driven to its end
 * (nc__drive). A nonblocking call is the same op in a request, appended to
 * the team's queue; only the head runs, so calls run one at a time and in
 * the order they were made, on every rank alike (the team's counters stay
 * in step, as the algorithms need), and a blocking call first runs the
 * queue to its end. numacoll_test() and numacoll_progress() step the head
 * until it waits, never longer; every 64 fruitless polls they look at what
 * would make its wait hopeless (nc__wait_watch: abort, mismatch, dead peer,
 * timeout), as a blocking wait does between its polls. numacoll_wait()
 * drives the queue with the blocking wait's policy (spin, then yield).
 *
 * Arguments a call refuses still number the call on this rank (the other
 * ranks learn of the refusal from its call line, coll/call.c): a refused
 * nonblocking call returns its error at once and leaves a detached request
 * that makes the refusal in its turn.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/gather/gather.h"
#include "coll/op.h"
#include "coll/reduce/reduce.h"
#include "coll/wait.h"

struct numacoll_request {
    /* the op as made (persistent: copied at every start), then running */
    nc__op_t op;
    numacoll_team_t *team;
    struct numacoll_request *next;   /* the team's queue */
    int persistent;
    int active;                      /* started, not yet completed */
    int detached;                    /* freed in flight: nobody waits */
    int status;                      /* of the last completion */
    nc__op_t made;                   /* persistent: the op of init */
};

/* ---- the op of each call ------------------------------------------------ */

/* The small layers of a blocking call (mode dispatch, op making, the
 * queue check) are inlined into each public function: every call pays
 * them, and a few calls cost ~10 ns against a 150 ns Bcast. */
#define NC_INLINE static inline __attribute__((always_inline))

/* The call's fields up to `begun` are what a persistent start copies. */
#define NC_OP_CALL_BYTES offsetof(nc__op_t, begun)

static void op_reset(nc__op_t *o)
{
    o->begun = 0;
    o->phase = 0;
    o->sub = 0;
    /* read by the staged Gatherv before anything sets it on that path
     * (a request's position is not cleared between calls) */
    o->g.lines_done = 0;
}

NC_INLINE void bcast_make(numacoll_team_t *t, nc__op_t *o, size_t nbytes,
                       int root, const nc__io_t *io, int bad)
{
    if (bad == NUMACOLL_OK && (root < 0 || root >= t->p))
        bad = nc__team_fail(t, NUMACOLL_ERR_ARG, "bcast root %d is outside "
                            "the team of %d", root, t->p);
    nc__bcast_op(t, o, nbytes, root, io);
    o->bad = bad;
}

static int bcast_bad(numacoll_team_t *t, void *buf, size_t nbytes)
{
    return !buf && nbytes > 0
               ? nc__team_fail(t, NUMACOLL_ERR_ARG, "bcast of %zu bytes from "
                               "a NULL buffer", nbytes)
               : NUMACOLL_OK;
}

static int packed_bad(numacoll_team_t *t, size_t nbytes, int root,
                      numacoll_pack_fn pack, numacoll_unpack_fn unpack)
{
    return nbytes > 0 && ((t->rank == root && !pack) ||
                          (t->rank != root && !unpack))
               ? nc__team_fail(t, NUMACOLL_ERR_ARG, "bcast_packed needs a "
                               "%s callback on rank %d",
                               t->rank == root ? "pack" : "unpack", t->rank)
               : NUMACOLL_OK;
}

NC_INLINE void barrier_make(const numacoll_team_t *t, nc__op_t *o)
{
    o->coll = NC_COLL_BARRIER;
    o->alg = t->barrier_alg;
    o->ch = NULL;   /* its algorithm and radix were taken at team creation */
    o->root = -1;
    o->bad = NUMACOLL_OK;
    op_reset(o);
}

/* Common checks; root < 0 means Allreduce. *own gets the contribution. */
static int check_args(numacoll_team_t *t, const char *what,
                      const void *sendbuf, void *recvbuf, size_t count,
                      const nc__red_op_t *op, int root, const void **own)
{
    if (root >= t->p)
        return nc__team_fail(t, NUMACOLL_ERR_ARG,
                             "reduce root %d is outside the team of %d", root,
                             t->p);
    if (count > SIZE_MAX / op->elem)
        return nc__team_fail(t, NUMACOLL_ERR_ARG,
                             "%s of %zu elements of %zu bytes overflows", what,
                             count, op->elem);

    int writes = root < 0 || t->rank == root;
    if (sendbuf == NUMACOLL_IN_PLACE && !writes)
        return nc__team_fail(t, NUMACOLL_ERR_ARG,
                             "NUMACOLL_IN_PLACE on rank %d, which is not the "
                             "reduce root %d", t->rank, root);
    int in_place = writes && (sendbuf == NUMACOLL_IN_PLACE ||
                              sendbuf == recvbuf);
    *own = in_place ? recvbuf : sendbuf;
    if (count > 0 && (!*own || (writes && !recvbuf)))
        return nc__team_fail(t, NUMACOLL_ERR_ARG,
                             "%s of %zu elements with a NULL %s buffer", what,
                             count, *own ? "receive" : "send");
    return nc__team_check_abort(t);
}

/* An element is never split across staging slots: it must fit the slot of
 * the call's rule (inline rules stage none). */
static int check_elem(numacoll_team_t *t, const nc__choice_t *ch,
                      const nc__red_op_t *op, size_t count, const char *what)
{
    if (!ch->f || op->elem <= ch->f)
        return NUMACOLL_OK;
    return nc__team_fail(t, NUMACOLL_ERR_ARG,
                         "%s element of %zu bytes exceeds the %zu-byte "
                         "staging slot of the tuning rule for %zu bytes "
                         "(reduce_frag_size)", what, op->elem, ch->f,
                         count * op->elem);
}

NC_INLINE void red_fill(nc__op_t *o, nc__coll_t coll, const nc__red_op_t *op,
                     const void *own, void *recv, size_t count, int root)
{
    o->coll = coll;
    o->rop = *op;
    o->own = own;
    o->recv = recv;
    o->count = count;
    o->rs_counts = NULL;
    o->rs_block = 0;
    o->root = root;
    o->ch = NULL;
    o->alg = -1;
    op_reset(o);
}

/* bad: the verdict on the op (nc__red_op_predef / _user) */
static void reduce_make(numacoll_team_t *t, nc__op_t *o, const void *sendbuf,
                        void *recvbuf, size_t count, const nc__red_op_t *op,
                        int root, int bad)
{
    const void *own = NULL;
    if (bad == NUMACOLL_OK && root < 0)
        bad = nc__team_fail(t, NUMACOLL_ERR_ARG, "reduce root %d is outside "
                            "the team of %d", root, t->p);
    if (bad == NUMACOLL_OK)
        bad = check_args(t, "reduce", sendbuf, recvbuf, count, op, root,
                         &own);
    red_fill(o, NC_COLL_REDUCE, op, own, recvbuf, count, root);
    if (bad == NUMACOLL_OK && count > 0 && t->p > 1) {
        o->ch = nc__team_choice(t, NC_COLL_REDUCE, count * op->elem);
        o->alg = (int)o->ch->alg;
        /* elements the lines cannot take: pipelined with the rule's f, s,
         * k (an inline rule carries them), on every rank alike */
        if (o->alg == NC_ALG_REDUCE_INLINE &&
            !nc__ar_inline_fits(t, count, op->elem))
            o->alg = NC_ALG_REDUCE_PIPELINED;
        bad = check_elem(t, o->ch, op, count, "reduce");
    }
    o->bad = bad;
}

/* alg < 0: the table's; bad as for reduce_make */
static void allreduce_make(numacoll_team_t *t, nc__op_t *o, int alg,
                           const void *sendbuf, void *recvbuf, size_t count,
                           const nc__red_op_t *op, int bad)
{
    const void *own = NULL;
    if (bad == NUMACOLL_OK)
        bad = check_args(t, "allreduce", sendbuf, recvbuf, count, op, -1,
                         &own);
    red_fill(o, NC_COLL_ALLREDUCE, op, own, recvbuf, count, -1);
    if ((o->bad = bad) != NUMACOLL_OK)
        return;
    size_t nbytes = count * op->elem;
    const nc__choice_t *ch = NULL;
    if (alg < 0) {
        ch = nc__team_choice(t, NC_COLL_ALLREDUCE, nbytes);
        alg = (int)ch->alg;
        /* elements too large for a line: as a forced reduce_bcast */
        if (alg == NC_ALG_ALLREDUCE_INLINE &&
            !nc__ar_inline_fits(t, count, op->elem))
            alg = NC_ALG_ALLREDUCE_REDUCE_BCAST;
    }
    if (!ch || alg != (int)ch->alg) {
        /* A forced algorithm takes the parameters of the size's rule, or of
         * the first rule naming it; where no rule names it, the Reduce
         * rule's f, s and k (every allreduce algorithm reads at most
         * those). */
        ch = nc__team_choice_alg(t, NC_COLL_ALLREDUCE, alg, nbytes);
        if (!ch)
            ch = nc__team_choice(t, NC_COLL_REDUCE, nbytes);
    }
    o->ch = ch;
    o->alg = alg;
    bad = check_elem(t, ch, op, count, "allreduce");
    if (bad == NUMACOLL_OK && alg == NC_ALG_ALLREDUCE_INLINE &&
        !nc__ar_inline_fits(t, count, op->elem))
        bad = nc__team_fail(t, NUMACOLL_ERR_ARG, "inline allreduce of %zu "
                            "elements of %zu bytes: the team's inline lines "
                            "take %u lines of whole elements of at most %d "
                            "bytes", count, op->elem, t->red->ar_al,
                            NC_RED_INLINE);
    o->bad = bad;
}

/* ---- Reduce_scatter(_block), Scan, Exscan -------------------------------- */

/* An inline Reduce_scatter, Scan or Exscan rule where the team's lines
 * do not take count elements (plus hdr lines) of this size: the staged
 * algorithm instead, on every rank alike (count and elem are equal). */
static void red_inline_fit(numacoll_team_t *t, nc__op_t *o, nc__coll_t coll,
                           nc__alg_t staged, size_t count, size_t hdr)
{
    if (o->alg == (int)staged)
        return;
    size_t epl = nc__ar_per_line(o->rop.elem);
    if (epl && hdr + nc__ar_lines(count, epl) <= t->red->ar_al)
        return;
    o->ch = nc__choice_or_reduce(t, coll, staged, count * o->rop.elem);
    o->alg = (int)staged;
}

/* Elements of Reduce_scatter block j. */
static size_t rs_count(const nc__op_t *o, int j)
{
    return o->rs_counts ? o->rs_counts[j] : o->rs_block;
}

/* Reduce_scatter: v, counts per rank; the block form: block elements
 * each. bad as for reduce_make. */
static void rs_make(numacoll_team_t *t, nc__op_t *o, const void *sendbuf,
                    void *recvbuf, int v, const size_t *counts, size_t block,
                    const nc__red_op_t *op, int bad)
{
    const char *what = v ? "reduce_scatter" : "reduce_scatter_block";
    const int me = t->rank;
    size_t total = 0;
    red_fill(o, NC_COLL_REDUCE_SCATTER, op, NULL, recvbuf, 0, -1);
    o->rs_counts = counts;
    o->rs_block = block;
    if (bad == NUMACOLL_OK && v && !counts)
        bad = nc__team_fail(t, NUMACOLL_ERR_ARG, "%s without its recvcounts "
                            "array", what);
    if (bad == NUMACOLL_OK && !v && block != 0 &&
        (size_t)t->p > SIZE_MAX / block)
        bad = nc__team_fail(t, NUMACOLL_ERR_ARG, "%s of %d blocks of %zu "
                            "elements overflows", what, t->p, block);
    for (int j = 0; j < t->p && bad == NUMACOLL_OK; j++) {
        size_t c = rs_count(o, j);
        if (c > SIZE_MAX - total)
            bad = nc__team_fail(t, NUMACOLL_ERR_ARG, "%s: the blocks' "
                                "elements add up past SIZE_MAX", what);
        total += c;
    }
    /* every rank contributes all blocks and receives its own (a rank
     * whose block is empty needs no receive buffer); in place the
     * contribution is in recvbuf and the result lands at its start */
    const int in_place = sendbuf == NUMACOLL_IN_PLACE || sendbuf == recvbuf;
    const void *own = in_place ? recvbuf : sendbuf;
    if (bad != NUMACOLL_OK)
        ;
    else if (total > SIZE_MAX / op->elem)
        bad = nc__team_fail(t, NUMACOLL_ERR_ARG, "%s of %zu elements of %zu "
                            "bytes overflows", what, total, op->elem);
    else if (total > 0 && !own)
        bad = nc__team_fail(t, NUMACOLL_ERR_ARG, "%s of %zu elements with a "
                            "NULL %s buffer", what, total,
                            in_place ? "receive" : "send");
    else if (rs_count(o, me) > 0 && !recvbuf)
        bad = nc__team_fail(t, NUMACOLL_ERR_ARG, "%s of %zu elements to "
                            "rank %d with a NULL receive buffer", what,
                            rs_count(o, me), me);
    else
        bad = nc__team_check_abort(t);
    o->own = own;
    o->count = total;
    if (bad == NUMACOLL_OK) {
        o->ch = nc__team_choice(t, NC_COLL_REDUCE_SCATTER, total * op->elem);
        o->alg = (int)o->ch->alg;
        red_inline_fit(t, o, NC_COLL_REDUCE_SCATTER,
                       NC_ALG_REDUCE_SCATTER_STAGED, total, 1);
        bad = check_elem(t, o->ch, op, total, what);
        /* a round holds a piece of every block: p elements at least */
        if (bad == NUMACOLL_OK && o->alg != NC_ALG_REDUCE_SCATTER_INLINE &&
            t->p > 1 && total > 0 &&
            o->ch->f / op->elem < (size_t)t->p)
            bad = nc__team_fail(t, NUMACOLL_ERR_ARG, "%s: the %zu-byte "
                                "staging slot (reduce_frag_size) holds fewer "
                                "than %d elements of %zu bytes, one per rank",
                                what, o->ch->f, t->p, op->elem);
    }
    o->bad = bad;
}

/* Scan (inclusive) and Exscan: every rank contributes count elements;
 * Exscan's rank 0 receives nothing (recvbuf may be NULL there). */
static void scan_make(numacoll_team_t *t, nc__op_t *o, nc__coll_t coll,
                      const void *sendbuf, void *recvbuf, size_t count,
                      const nc__red_op_t *op, int bad)
{
    const char *what = coll == NC_COLL_SCAN ? "scan" : "exscan";
    const void *own = NULL;
    if (bad != NUMACOLL_OK) {
    } else if (coll == NC_COLL_EXSCAN && t->rank == 0 &&
               sendbuf != NUMACOLL_IN_PLACE) {
        /* Exscan's rank 0 receives nothing: no receive buffer needed */
        own = sendbuf;
        if (count > SIZE_MAX / op->elem)
            bad = nc__team_fail(t, NUMACOLL_ERR_ARG, "exscan of %zu elements "
                                "of %zu bytes overflows", count, op->elem);
        else if (count > 0 && !own)
            bad = nc__team_fail(t, NUMACOLL_ERR_ARG, "exscan of %zu elements "
                                "with a NULL send buffer", count);
        else
            bad = nc__team_check_abort(t);
    } else {
        bad = check_args(t, what, sendbuf, recvbuf, count, op, -1, &own);
    }
    red_fill(o, coll, op, own, recvbuf, count, -1);
    if (bad == NUMACOLL_OK) {
        o->ch = nc__team_choice(t, coll, count * op->elem);
        o->alg = (int)o->ch->alg;
        red_inline_fit(t, o, coll,
                       coll == NC_COLL_SCAN ? NC_ALG_SCAN_STAGED
                                            : NC_ALG_EXSCAN_STAGED,
                       count, 0);
        bad = check_elem(t, o->ch, op, count, what);
    }
    o->bad = bad;
}

/* ---- the gathers: Allgather, Gather, Scatter and their v forms ---------- */

/* What a gather-family call gives: its collective, root (-1: none), this
 * rank's buffers and block, and the blocks at the ranks that see them all
 * (uniform: `each` bytes, block j at j * each; v: counts and displs). */
typedef struct ga_args {
    nc__coll_t coll;
    int root, v;
    const void *send;
    void *recv;
    size_t own, each;
    const size_t *counts, *displs;
    const size_t *scounts, *sdispls;   /* Alltoallv: the blocks sent */
    int in_place;
    int packed;                        /* io instead of send, recv, displs */
    nc__ga_io_t io;
} ga_args_t;

static const char *ga_name(const ga_args_t *a)
{
    static const char *const names[2][4] = {
        {"allgather", "gather", "scatter", "alltoall"},
        {"allgatherv", "gatherv", "scatterv", "alltoallv"}};
    return names[a->v][a->coll == NC_COLL_ALLGATHER ? 0
                       : a->coll == NC_COLL_GATHER  ? 1
                       : a->coll == NC_COLL_SCATTER ? 2 : 3];
}

/* Whether this rank sees every block (Allgather, Alltoall: all; else the
 * root). */
static int ga_sees_all(const numacoll_team_t *t, const ga_args_t *a)
{
    return a->root < 0 || t->rank == a->root;
}

/* Whether the call lacks what moves bytes of one side: the buffer buf,
 * or a packed call's pack (send side) or unpack callback. */
static int ga_lacks(const ga_args_t *a, const void *buf, int send_side)
{
    if (a->packed)
        return send_side ? a->io.pack == NULL : a->io.unpack == NULL;
    return buf == NULL;
}

/* The words of ga_check's messages for what ga_lacks found missing. */
static const char *ga_lack_name(const ga_args_t *a, int send_side)
{
    return a->packed ? (send_side ? "a pack callback" : "an unpack callback")
                     : (send_side ? "a send buffer" : "a receive buffer");
}

/* The checks of the blocks a rank that sees them all is given: arrays
 * present, no block past SIZE_MAX; *total and *largest of them. */
static int ga_check_blocks(numacoll_team_t *t, const ga_args_t *a,
                           size_t *total, size_t *largest)
{
    const char *what = ga_name(a);
    *total = *largest = 0;
    if (a->v && (!a->counts || (!a->displs && !a->packed)))
        return nc__team_fail(t, NUMACOLL_ERR_ARG, "%s on rank %d without "
                             "its %s array", what, t->rank,
                             a->counts ? "displacement" : "byte count");
    for (int j = 0; j < t->p; j++) {
        size_t c = a->v ? a->counts[j] : a->each;
        size_t d = a->packed ? 0
                   : a->v    ? a->displs[j]
                             : (size_t)j * a->each;
        if ((!a->v && j && d / (size_t)j != a->each) || c > SIZE_MAX - d)
            return nc__team_fail(t, NUMACOLL_ERR_ARG, "%s: block %d of %zu "
                                 "bytes ends past SIZE_MAX", what, j, c);
        if (c > SIZE_MAX - *total)
            return nc__team_fail(t, NUMACOLL_ERR_ARG, "%s: the blocks' "
                                 "bytes add up past SIZE_MAX", what);
        *total += c;
        if (c > *largest)
            *largest = c;
    }
    return NUMACOLL_OK;
}

/* Alltoallv's send side (a->own: sendbytes[me], checked against
 * recvbytes[me] by the caller) and its slot: p - 1 pieces of at least
 * the 8-byte header (coll/gather/alltoall_staged.c). In place: the send
 * side is the receive side. */
static int a2av_check(numacoll_team_t *t, ga_args_t *a)
{
    if (a->in_place) {
        a->scounts = a->counts;
        a->sdispls = a->displs;
    } else {
        ga_args_t snd = *a;
        snd.counts = a->scounts;
        snd.displs = a->sdispls;
        size_t total, largest;
        int rc = ga_check_blocks(t, &snd, &total, &largest);
        if (rc != NUMACOLL_OK)
            return rc;
        if (total > 0 && ga_lacks(a, a->send, 1))
            return nc__team_fail(t, NUMACOLL_ERR_ARG, "alltoallv of %zu "
                                 "bytes in all without %s on rank %d",
                                 total, ga_lack_name(a, 1), t->rank);
    }
    /* the rule the call runs (a packed call: the staged one, ga_make) */
    const nc__choice_t *ch =
        a->packed ? nc__choice_or_reduce(t, NC_COLL_ALLTOALL,
                                         NC_ALG_ALLTOALL_STAGED, SIZE_MAX)
                  : nc__team_choice(t, NC_COLL_ALLTOALL, SIZE_MAX);
    if (t->p > 1 && nc__alltoall_unit(ch->f, t->p) < 8)
        return nc__team_fail(t, NUMACOLL_ERR_ARG, "alltoallv: the %zu-byte "
                             "staging slot (reduce_frag_size) holds no "
                             "8-byte header for each of %d ranks", ch->f,
                             t->p - 1);
    return NUMACOLL_OK;
}

/* The verdict on a gather-family call's arguments (last_error worded). */
static int ga_check(numacoll_team_t *t, ga_args_t *a, size_t *total,
                    size_t *largest)
{
    const char *what = ga_name(a);
    const int me = t->rank, all = ga_sees_all(t, a);
    const int gather = a->coll != NC_COLL_SCATTER;
    *total = *largest = 0;
    const int rooted = a->coll == NC_COLL_GATHER ||
                       a->coll == NC_COLL_SCATTER;
    if (rooted && (a->root < 0 || a->root >= t->p))
        return nc__team_fail(t, NUMACOLL_ERR_ARG, "%s root %d is outside the "
                             "team of %d", what, a->root, t->p);
    /* in place: MPI's rules, the marker in the buffer the rank would
     * otherwise copy its own block from or to */
    const void *marker = gather ? a->send : a->recv;
    if (marker == NUMACOLL_IN_PLACE) {
        if (rooted && me != a->root)
            return nc__team_fail(t, NUMACOLL_ERR_ARG, "NUMACOLL_IN_PLACE on "
                                 "rank %d, which is not the %s root %d", me,
                                 what, a->root);
        a->in_place = 1;
    }
    if (all) {
        int rc = ga_check_blocks(t, a, total, largest);
        if (rc != NUMACOLL_OK)
            return rc;
        size_t mine = a->v ? a->counts[me] : a->each;
        if (!a->in_place && a->v && a->own != mine)
            return nc__team_fail(t, NUMACOLL_ERR_ARG, "%s: rank %d %s %zu "
                                 "bytes of its own, but its block in the "
                                 "%s %s has %zu", what, me,
                                 gather ? "sends" : "receives", a->own,
                                 gather ? "receive" : "send",
                                 a->packed ? "counts" : "buffer", mine);
        a->own = mine;
        /* the buffer holding every block */
        const void *every = gather ? a->recv : a->send;
        if (*total > 0 && ga_lacks(a, every, !gather))
            return nc__team_fail(t, NUMACOLL_ERR_ARG, "%s of %zu bytes in all "
                                 "without %s on rank %d", what, *total,
                                 ga_lack_name(a, !gather), me);
    }
    if (a->coll == NC_COLL_ALLTOALL && a->v) {
        int rc = a2av_check(t, a);
        if (rc != NUMACOLL_OK)
            return rc;
    }
    /* the buffer of this rank's own block */
    const void *one = gather ? a->send : a->recv;
    if (!a->in_place && a->own > 0 && ga_lacks(a, one, gather))
        return nc__team_fail(t, NUMACOLL_ERR_ARG, "%s: without %s for the "
                             "%zu bytes of rank %d", what,
                             ga_lack_name(a, gather), a->own, me);
    return nc__team_check_abort(t);
}

static void ga_make(numacoll_team_t *t, nc__op_t *o, ga_args_t *a)
{
    size_t total = 0, largest = 0;
    int bad = ga_check(t, a, &total, &largest);
    const int all = ga_sees_all(t, a);
    o->coll = a->coll;
    o->root = a->root;
    o->own = NULL;
    o->recv = NULL;
    o->count = 0;
    o->ga = (struct nc__ga_call){
        .send = a->in_place && a->root < 0 ? NULL : a->send,
        .recv = a->recv, .each = a->each, .own = a->own,
        .counts = a->v && all ? a->counts : NULL,
        .displs = a->v && all ? a->displs : NULL,
        .scounts = a->scounts, .sdispls = a->sdispls,
        .in_place = a->in_place, .v = a->v,
        .packed = a->packed, .io = a->io,
        /* all ranks know an Allgather's blocks; elsewhere only the root
         * does, and entry 0 of each block checks its size (gather.h) */
        .sig_bytes = a->coll == NC_COLL_ALLGATHER ? total
                     : a->coll == NC_COLL_ALLTOALL ? a->each : 0};
    /* Every rank must take the same rule (f and s place the entries):
     * by the largest block where all know it, the uniform block size,
     * else (gatherv, scatterv) the rule of the largest size. */
    size_t key = a->coll == NC_COLL_ALLGATHER ? largest
                 : a->v                       ? SIZE_MAX
                                              : a->each;
    o->ch = nc__team_choice(t, a->coll, key);
    o->alg = (int)o->ch->alg;
    /* a block past the team's inline lines (a table that names inline
     * beyond what sized them cannot, but a forced rule can): staged, on
     * every rank alike (all know the largest block) */
    if (o->alg == NC_ALG_ALLGATHER_INLINE &&
        nc__ag_inline_lines(largest) > t->red->ar_al) {
        o->ch = nc__choice_or_reduce(t, NC_COLL_ALLGATHER,
                                     NC_ALG_ALLGATHER_STAGED, key);
        o->alg = NC_ALG_ALLGATHER_STAGED;
    }
    /* the same for the other inline gathers (uniform forms only: in a v
     * form no rank but the root knows every block; Scatter's root and
     * Alltoall's ranks write p - 1 blocks) */
    const size_t blocks = a->coll == NC_COLL_GATHER ? 1
                          : t->p > 1 ? (size_t)(t->p - 1) : 1;
    if ((o->alg == NC_ALG_GATHER_INLINE || o->alg == NC_ALG_SCATTER_INLINE ||
         o->alg == NC_ALG_ALLTOALL_INLINE) &&
        (a->v || blocks * nc__ag_inline_lines(a->each) > t->red->ar_al)) {
        o->alg = nc__ga_staged_alg(a->coll);
        o->ch = nc__choice_or_reduce(t, a->coll, (nc__alg_t)o->alg, key);
    }
    /* a packed call: the staged algorithm whatever the rule (the slots'
     * copies are the only ones that take callbacks) */
    if (a->packed && o->alg != (int)nc__ga_staged_alg(a->coll)) {
        o->alg = nc__ga_staged_alg(a->coll);
        o->ch = nc__choice_or_reduce(t, a->coll, (nc__alg_t)o->alg, key);
    }
    /* a Gatherv's or Scatterv's small blocks through the lines (the
     * staged step's, by each block's size, which both its ends know) */
    o->ga.lines = a->v && !a->packed &&
                  ((o->alg == NC_ALG_GATHER_STAGED && t->red->gv_max) ||
                   (o->alg == NC_ALG_SCATTER_STAGED && t->red->sv_max));
    /* every rank knows a uniform block: its size in the signature, so
     * that ranks whose sizes differ fail instead of reading lines laid
     * out for another size */
    if (o->alg == NC_ALG_GATHER_INLINE || o->alg == NC_ALG_SCATTER_INLINE)
        o->ga.sig_bytes = a->each;
    op_reset(o);
    o->bad = bad;
}

/* ---- numbering, then the algorithm -------------------------------------- */

/* The gathers and Alltoall(v): blocks of bytes (nc__op_t's ga). */
static inline int is_ga(nc__coll_t c)
{
    return c == NC_COLL_ALLGATHER || c == NC_COLL_GATHER ||
           c == NC_COLL_SCATTER || c == NC_COLL_ALLTOALL;
}

/* Number the call and publish its signature (coll/call.c), refused or
 * not, so a call refused on one rank (o->bad) still counts there and the
 * others learn of it (nc__call_refuse). */
NC_INLINE int begin(numacoll_team_t *t, nc__op_t *o)
{
    nc__call_t c;
    if (o->coll == NC_COLL_BCAST)
        c = nc__call_of(o->coll, o->root, o->bc.nbytes, 0);
    else if (is_ga(o->coll)) {
        /* An Alltoallv is tried inline where the team's last one fitted
         * (alltoall_inline.c; a2av_try is the same on every rank), else
         * it runs its rule. Its own kind: its lines are laid out unlike
         * a uniform Alltoall's. */
        const int a2av = o->coll == NC_COLL_ALLTOALL && o->ga.scounts &&
                         !o->ga.packed && t->p > 1 && t->red->a2av_try &&
                         t->red->a2av_max;
        if (a2av)
            o->alg = NC_ALG_ALLTOALL_INLINE;
        /* A Scatterv whose rule is single copy tries the lines first
         * where the team's last one fitted them (rooted_inline.c; sv_try
         * is the same on every rank) */
        const int svtry = o->coll == NC_COLL_SCATTER && o->ga.v &&
                          !o->ga.packed && nc__ga_cma(o->alg) && t->p > 1 &&
                          t->red->sv_try && t->red->sv_max;
        if (svtry)
            o->alg = NC_ALG_SCATTER_INLINE;
        /* ranks whose sizes picked different kinds of algorithm (a
         * uniform Gather or Scatter whose block sizes differ, Allgatherv
         * counts that differ at an equal total) meet as a mismatch
         * instead of waiting for each other */
        const int vlines = a2av || svtry || o->ga.lines ||
                           nc__gv_lines_first(t, o);
        c = nc__call_of(o->coll, o->root, o->ga.sig_bytes,
                        o->ga.packed ? NC_GA_SIG_PACKED
                        : vlines     ? NC_GA_SIG_VLINES
                                     : nc__ga_sig_kind(o->alg));
    }
    else if (o->coll == NC_COLL_BARRIER)
        c = nc__call_of(o->coll, o->root, 0, 0);
    else
        c = nc__call_of_red(o->coll, o->root, o->count, o->rop.elem,
                            o->rop.dtype, o->rop.opn, o->rop.commutative);
    if (o->bad == NUMACOLL_OK)
        return nc__call_begin(t, &c);
    /* a refusal says more than a lost or aborted call: keep its sentence */
    char why[sizeof t->last_error];
    memcpy(why, t->last_error, sizeof why);
    int rc = nc__call_begin(t, &c);
    memcpy(t->last_error, why, sizeof why);
    if (o->coll == NC_COLL_BCAST)
        return rc != NUMACOLL_OK
                   ? nc__call_refuse(t, o->bad, 0)
                   : nc__bcast_refuse(t, o->bc.nbytes, o->root, o->bad);
    /* nobody waits for a Reduce or Gather root, nor for a Scatter
     * reader: they learn of the refusal at their next call */
    int unheard = o->coll == NC_COLL_SCATTER
                      ? t->rank != o->root
                      : o->root >= 0 && o->root == t->rank;
    return nc__call_refuse(t, o->bad, unheard);
}

/* The algorithm's step of a begun call; NUMACOLL_OK at once where this
 * rank has nothing to exchange. */
NC_INLINE int run(numacoll_team_t *t, nc__op_t *o)
{
    if (t->p == 1) {
        /* Reduce_scatter's one block is the whole vector; Exscan's
         * rank 0 receives nothing */
        if ((o->coll == NC_COLL_REDUCE || o->coll == NC_COLL_ALLREDUCE ||
             o->coll == NC_COLL_REDUCE_SCATTER || o->coll == NC_COLL_SCAN) &&
            o->count > 0 && o->own != o->recv)
            memcpy(o->recv, o->own, nc__res_bytes(&o->rop, o->count));
        if (o->alg == NC_ALG_ALLGATHER_INLINE)
            return nc__allgather_inline_step(t, o);   /* its own copy */
        if (o->alg == NC_ALG_GATHER_INLINE)   /* as do these (no f) */
            return nc__gather_inline_step(t, o);
        if (o->alg == NC_ALG_SCATTER_INLINE)
            return nc__scatter_inline_step(t, o);
        if (o->alg == NC_ALG_ALLTOALL_INLINE)
            return nc__alltoall_inline_step(t, o);
        if (is_ga(o->coll))
            nc__ga_begin(t, o);   /* the own block's copy */
        return NUMACOLL_OK;
    }
    switch (o->coll) {
    case NC_COLL_BCAST:
        return nc__bcast_step(t, o);
    case NC_COLL_BARRIER:
        return nc__barrier_step(t, o);
    case NC_COLL_ALLGATHER:
        return o->alg == NC_ALG_ALLGATHER_INLINE
                   ? nc__allgather_inline_step(t, o)
               : nc__ga_cma(o->alg) ? nc__ga_cma_step(t, o)
                                    : nc__allgather_staged_step(t, o);
    case NC_COLL_GATHER:
        return o->alg == NC_ALG_GATHER_INLINE ? nc__gather_inline_step(t, o)
               : nc__ga_cma(o->alg)             ? nc__ga_cma_step(t, o)
                                                : nc__gather_staged_step(t, o);
    case NC_COLL_SCATTER:
        if (o->alg == NC_ALG_SCATTER_INLINE)
            return o->ga.v ? nc__scatterv_try_step(t, o)
                           : nc__scatter_inline_step(t, o);
        return nc__ga_cma(o->alg) ? nc__ga_cma_step(t, o)
                                  : nc__scatter_staged_step(t, o);
    case NC_COLL_ALLTOALL:
        if (o->alg == NC_ALG_ALLTOALL_INLINE)
            return o->ga.scounts ? nc__alltoallv_inline_step(t, o)
                                 : nc__alltoall_inline_step(t, o);
        return nc__ga_cma(o->alg) ? nc__ga_cma_step(t, o)
                                    : nc__alltoall_staged_step(t, o);
    default:
        break;
    }
    /* a call of no elements still meets the others through the inline
     * lines, so that a rank whose call says otherwise finds out */
    if (o->count == 0)
        return nc__allreduce_inline_step(t, o);
    switch (o->alg) {
    case NC_ALG_REDUCE_PIPELINED:
        return nc__reduce_pipelined_step(t, o);
    case NC_ALG_REDUCE_INLINE:   /* the inline Allreduce's, read by the root */
    case NC_ALG_ALLREDUCE_INLINE:
        return nc__allreduce_inline_step(t, o);
    case NC_ALG_ALLREDUCE_REDUCE_BCAST:
        return nc__allreduce_reduce_bcast_step(t, o);
    case NC_ALG_ALLREDUCE_RSAG:
        return nc__allreduce_rsag_step(t, o);
    case NC_ALG_ALLREDUCE_ALLFOLD:
        return nc__allreduce_allfold_step(t, o);
    case NC_ALG_REDUCE_SCATTER_STAGED:
        return nc__reduce_scatter_staged_step(t, o);
    case NC_ALG_SCAN_STAGED:
    case NC_ALG_EXSCAN_STAGED:
        return nc__scan_staged_step(t, o);
    case NC_ALG_REDUCE_SCATTER_INLINE:
        return nc__reduce_scatter_inline_step(t, o);
    case NC_ALG_SCAN_INLINE:
    case NC_ALG_EXSCAN_INLINE:
        return nc__scan_inline_step(t, o);
    default:
        return nc__team_fail(t, NUMACOLL_ERR_ARG, "algorithm %d is not an "
                             "allreduce", o->alg);
    }
}

static int alg_inline(int alg)
{
    switch (alg) {
    case NC_ALG_BCAST_INLINE:
    case NC_ALG_REDUCE_INLINE:
    case NC_ALG_ALLREDUCE_INLINE:
    case NC_ALG_ALLGATHER_INLINE:
    case NC_ALG_GATHER_INLINE:
    case NC_ALG_SCATTER_INLINE:
    case NC_ALG_ALLTOALL_INLINE:
    case NC_ALG_REDUCE_SCATTER_INLINE:
    case NC_ALG_SCAN_INLINE:
    case NC_ALG_EXSCAN_INLINE:
        return 1;
    default:
        return 0;
    }
}

/* Whether the made call o may touch the queues or staging slots (the team
 * grows them first, coll/grow.c): from its signature and the rules, so
 * alike on every rank. Only the inline algorithms keep to the control
 * lines, and only where their rule is inline too (a Scatterv or
 * Alltoallv tried inline falls back to its rule; single copy falls back
 * to the staged algorithms where it cannot run). */
static int needs_staging(const numacoll_team_t *t, const nc__op_t *o)
{
    if (t->p == 1 || o->coll == NC_COLL_BARRIER)
        return 0;
    if (o->coll == NC_COLL_BCAST)
        return o->bc.nbytes > 0 && !alg_inline(o->bc.alg);
    if (!is_ga(o->coll) && o->count == 0)
        return 0;   /* it meets the others in the inline lines */
    return !alg_inline(o->alg) || (o->ch && !alg_inline((int)o->ch->alg));
}

/* nc__op_step, here for the blocking calls to inline */
static inline int op_step(numacoll_team_t *t, nc__op_t *o)
{
    int rc;
    if (!o->begun) {
        if ((rc = begin(t, o)) != NUMACOLL_OK)
            return rc;
        o->begun = 1;
        o->grow = !t->staged && needs_staging(t, o);
    }
    if (o->grow && (rc = nc__grow_step(t, o)) != NUMACOLL_OK)
        return rc;
    if ((rc = run(t, o)) != NUMACOLL_OK)
        return rc;
    if (o->coll == NC_COLL_BCAST && o->bc.io.failed)
        return nc__team_fail(t, NUMACOLL_ERR_CALLBACK, "a %s callback "
                             "failed during bcast from root %d",
                             t->rank == o->root ? "pack" : "unpack", o->root);
    if (is_ga(o->coll) && o->ga.io.failed)
        return nc__team_fail(t, NUMACOLL_ERR_CALLBACK, "a callback failed "
                             "during a packed %sv on rank %d",
                             nc__coll_name(o->coll), t->rank);
    t->calls[o->coll]++;
    return NUMACOLL_OK;
}

int nc__op_step(numacoll_team_t *t, nc__op_t *o)
{
    return op_step(t, o);
}

/* The algorithm's step by o->alg, for a driver: a step that hands the
 * call to another algorithm (the inline Alltoallv's fallback) is
 * resumed in that one. */
static int run_step(numacoll_team_t *t, nc__op_t *o)
{
    return run(t, o);
}

/* ---- the queue ----------------------------------------------------------- */

/* Freed requests kept for the next ones, per thread (a request may outlive
 * its team, so no team keeps them): an allocation and a free cost about as
 * much as a small Bcast. Up to NC_RQ_CACHE per thread; the rest go back. */
#define NC_RQ_CACHE 8
static _Thread_local numacoll_request_t *rq_cache[NC_RQ_CACHE];
static _Thread_local int rq_cached;

static void request_release(numacoll_request_t *r)
{
    if (rq_cached < NC_RQ_CACHE)
        rq_cache[rq_cached++] = r;
    else
        free(r);
}


static void complete(numacoll_team_t *t, int rc)
{
    numacoll_request_t *r = t->rq_head;
    t->rq_head = r->next;
    if (!t->rq_head)
        t->rq_tail = NULL;
    r->next = NULL;
    r->active = 0;
    r->status = rc;
    t->rq_polls = 0;
    /* a failed wait may have left a root's bank claim pending */
    if (rc != NUMACOLL_OK)
        t->claiming = 0;
    if (r->detached)
        request_release(r);
}

/* Run the head to its end, waiting with the blocking policy. */
static void drive_head(numacoll_team_t *t)
{
    complete(t, nc__drive(t, nc__op_step, &t->rq_head->op));
}

void nc__rq_finish(numacoll_team_t *t)
{
    while (t->rq_head)
        drive_head(t);
}

/* Step the queue as far as it goes without waiting. */
static void progress_steps(numacoll_team_t *t)
{
    numacoll_request_t *r;
    while ((r = t->rq_head)) {
        int rc = nc__op_step(t, &r->op);
        if (rc != NC_AGAIN) {
            complete(t, rc);
            continue;
        }
        /* a new wait: its timeout counts from now */
        if (t->rq_polls == 0 || t->pend.w != t->rq_w ||
            t->pend.arg != t->rq_arg) {
            t->rq_w = t->pend.w;
            t->rq_arg = t->pend.arg;
            t->rq_since = t->rq_check = nc__now_ms();
            t->rq_polls = 0;
        }
        if (++t->rq_polls % 64 != 0)
            return;
        /* as a blocking wait looks between its polls */
        rc = nc__wait_watch(t, t->rq_since, &t->rq_check);
        if (rc == NC_AGAIN)
            return;
        if (rc != NUMACOLL_OK)
            complete(t, rc);
    }
}

/* ... then wake the ranks that may sleep until they see its stores. */
static void progress(numacoll_team_t *t)
{
    progress_steps(t);
    nc__wake(t);
}

static void enqueue(numacoll_team_t *t, numacoll_request_t *r)
{
    r->active = 1;
    r->status = NUMACOLL_OK;
    r->next = NULL;
    if (t->rq_tail)
        t->rq_tail->next = r;
    else
        t->rq_head = r;
    t->rq_tail = r;
    progress(t);
}

static numacoll_request_t *request_new(numacoll_team_t *t, int persistent)
{
    /* the op holds a cache-line aligned buffer */
    size_t sz = (sizeof(numacoll_request_t) + NC_CACHE_LINE - 1) /
                NC_CACHE_LINE * NC_CACHE_LINE;
    numacoll_request_t *r = rq_cached ? rq_cache[--rq_cached]
                                      : aligned_alloc(NC_CACHE_LINE, sz);
    if (!r) {
        nc__team_fail(t, NUMACOLL_ERR_NOMEM, "no memory for a request of "
                      "%zu bytes", sz);
        return NULL;
    }
    r->team = t;
    r->next = NULL;
    r->persistent = persistent;
    r->active = 0;
    r->detached = 0;
    r->status = NUMACOLL_OK;
    return r;
}

/* A blocking call: the queue first, then the op, driven as nc__drive
 * does (its steps wait in place, so one step is the whole call). */
NC_INLINE int blocking(numacoll_team_t *t, nc__op_t *o)
{
    if (t->rq_head)
        nc__rq_finish(t);
    t->blocking = 1;
    int rc = op_step(t, o);
    t->blocking = 0;
    if (rc == NC_AGAIN)
        return nc__drive(t, nc__op_step, o);
    nc__wake(t);   /* its readers may sleep until they see its stores */
    return rc;
}

/* A nonblocking call of the op o made on the stack: refused arguments
 * return at once, and a detached request makes the refusal in turn. */
static int start_nb(numacoll_team_t *t, const nc__op_t *o,
                    numacoll_request_t **req)
{
    if (!req)
        return nc__team_fail(t, NUMACOLL_ERR_ARG, "a nonblocking call "
                             "without a request pointer");
    *req = NULL;
    numacoll_request_t *r = request_new(t, 0);
    if (!r)
        return NUMACOLL_ERR_NOMEM;
    memcpy(&r->op, o, NC_OP_CALL_BYTES);
    op_reset(&r->op);
    if (o->bad != NUMACOLL_OK) {
        /* keep the refusal's sentence over what running it may write */
        char why[sizeof t->last_error];
        memcpy(why, t->last_error, sizeof why);
        r->detached = 1;
        enqueue(t, r);
        memcpy(t->last_error, why, sizeof why);
        return o->bad;
    }
    *req = r;
    enqueue(t, r);
    return NUMACOLL_OK;
}

/* A persistent request of the op o, inactive; refused arguments make none. */
static int make_persistent(numacoll_team_t *t, const nc__op_t *o,
                           numacoll_request_t **req)
{
    if (!req)
        return nc__team_fail(t, NUMACOLL_ERR_ARG, "a persistent request "
                             "without a request pointer");
    *req = NULL;
    if (o->bad != NUMACOLL_OK)
        return o->bad;
    numacoll_request_t *r = request_new(t, 1);
    if (!r)
        return NUMACOLL_ERR_NOMEM;
    memcpy(&r->made, o, NC_OP_CALL_BYTES);
    *req = r;
    return NUMACOLL_OK;
}

/* ---- public: requests ---------------------------------------------------- */

int numacoll_start(numacoll_request_t *r)
{
    if (!r || !r->persistent || r->active)
        return r ? nc__team_fail(r->team, NUMACOLL_ERR_ARG, "numacoll_start "
                                 "of a request that is %s",
                                 r->persistent ? "active" : "not persistent")
                 : NUMACOLL_ERR_ARG;
    memcpy(&r->op, &r->made, NC_OP_CALL_BYTES);
    op_reset(&r->op);
    enqueue(r->team, r);
    return NUMACOLL_OK;
}

/* A completed request's status, once; a nonblocking one is freed. */
static int reap(numacoll_request_t **req)
{
    numacoll_request_t *r = *req;
    int st = r->status;
    r->status = NUMACOLL_OK;
    if (!r->persistent) {
        request_release(r);
        *req = NULL;
    }
    return st;
}

int numacoll_test(numacoll_request_t **req, int *done)
{
    if (!req || !done)
        return NUMACOLL_ERR_ARG;
    *done = 1;
    if (!*req)
        return NUMACOLL_OK;
    if ((*req)->active)
        progress((*req)->team);
    if ((*req)->active) {
        *done = 0;
        return NUMACOLL_OK;
    }
    return reap(req);
}

int numacoll_wait(numacoll_request_t **req)
{
    if (!req)
        return NUMACOLL_ERR_ARG;
    if (!*req)
        return NUMACOLL_OK;
    numacoll_team_t *t = (*req)->team;
    while ((*req)->active)
        drive_head(t);
    return reap(req);
}

int numacoll_request_free(numacoll_request_t **req)
{
    if (!req)
        return NUMACOLL_ERR_ARG;
    numacoll_request_t *r = *req;
    if (!r)
        return NUMACOLL_OK;
    if (r->active) {
        if (r->persistent)
            return nc__team_fail(r->team, NUMACOLL_ERR_ARG, "freeing a "
                                 "persistent request that is active");
        r->detached = 1;   /* completes in turn, then frees itself */
    } else {
        request_release(r);
    }
    *req = NULL;
    return NUMACOLL_OK;
}

int numacoll_progress(numacoll_team_t *t)
{
    if (!t)
        return NUMACOLL_ERR_ARG;
    progress(t);
    int n = 0;
    for (numacoll_request_t *r = t->rq_head; r; r = r->next)
        n++;
    return n;
}

/* ---- the blocking fast paths -------------------------------------------- */

/* A blocking fast path: publish c, the call's signature as begin() makes
 * it, run the algorithm's step on o (the fields it reads set; phase set
 * here) waiting in place as blocking() does, count the call if it
 * succeeds; its status. The caller has checked what begin() and the
 * op's making would: the arguments, no request in flight (t->rq_head),
 * nc__call_quiet, a size of the team's fast sizes (team.c's fast_rules:
 * none at p = 1). */
static int fast_run(numacoll_team_t *t, const nc__call_t *c,
                    int (*step)(numacoll_team_t *, nc__op_t *), nc__op_t *o)
{
    nc__call_publish(t, nc__call_desc(c), c->nbytes, c->count);
    o->phase = 0;
    /* p > 1: the fast sizes are none at p = 1. Driven, as blocking()
     * does: a step may come back for a wait (a fallback's; the
     * Alltoallv's step is run_step, which resumes the algorithm it fell
     * back to) */
    int rc = nc__drive(t, step, o);
    if (rc == NUMACOLL_OK)
        t->calls[c->coll]++;
    return rc;
}

/*
 * The blocking Bcast of a contiguous buffer in one line, where the team
 * has nothing else in flight and its last calls went well: the inline
 * step (bcast_inline.c) on an op of the four fields it reads, after the
 * signature begin() would publish (ranks on either path meet), without
 * the op's making, the rule lookup, the copy layer's picks and the
 * generic driver: an 8-byte MPI_Bcast at p = 2 went from 632 to 518
 * instructions at the root and 570 to 459 at the reader (callgrind). The
 * size's rule was asked once, at team creation (team.c's fast_rules).
 */
static int bcast_fast(numacoll_team_t *t, void *buf, size_t nbytes, int root,
                      int *status)
{
    /* nbytes - 1 wraps for 0 bytes, which go the general way */
    if (nbytes - 1 >= t->bc_fast_max || !buf || t->rq_head ||
        (unsigned)root >= (unsigned)t->p || !nc__call_quiet(t))
        return 0;
    const nc__call_t c = nc__call_of(NC_COLL_BCAST, root, nbytes, 0);
    nc__op_t o;
    o.bc.ch = t->bc_fast_ch;
    o.bc.nbytes = nbytes;
    o.bc.root = root;
    o.bc.io = (nc__io_t){.buf = buf};
    *status = fast_run(t, &c, nc__bcast_inline_step, &o);
    return 1;
}

/*
 * The blocking Allgather of blocks of one line (1 to 48 bytes), or an
 * Allgatherv (counts, displs) whose largest block is one, not in place,
 * where the team has nothing else in flight and its last calls went well:
 * the inline step (allgather_inline.c) on an op of the fields it reads,
 * after the signature ga_make and begin() would publish (ranks on either
 * path meet), without checking the blocks' offsets (the v form: only that
 * they do not wrap), looking the rule up or making the general op: with the
 * component's direct path, an 8-byte MPI_Allgather at p = 2 went from
 * 1177 to 597 instructions (callgrind). The sizes were fixed at team
 * creation (team.c's fast_rules).
 */
static int allgather_fast(numacoll_team_t *t, const void *sendbuf,
                          void *recvbuf, size_t nbytes, const size_t *counts,
                          const size_t *displs, int *status)
{
    const size_t max = t->red->ag_fast_max;
    if (t->rq_head || !sendbuf || !recvbuf || !nc__call_quiet(t))
        return 0;
    const int in_place = sendbuf == NUMACOLL_IN_PLACE;
    size_t total = 0, largest = 0;
    if (!counts) {
        largest = nbytes;
        total = (size_t)t->p * nbytes;
    } else {
        if (in_place || !displs || nbytes != counts[t->rank])
            return 0;
        for (int j = 0; j < t->p; j++) {
            const size_t c = counts[j];
            if (c > max || displs[j] > SIZE_MAX - c)
                return 0;
            total += c;
            largest = c > largest ? c : largest;
        }
    }
    /* largest - 1 wraps for no bytes at all, which go the general way */
    if (largest - 1 >= max)
        return 0;
    /* ga_make's: the blocks' total, and the algorithm's kind */
    const nc__call_t c = nc__call_of(NC_COLL_ALLGATHER, -1, total,
                                     nc__ga_sig_kind(NC_ALG_ALLGATHER_INLINE));
    nc__op_t o;
    o.ga = (struct nc__ga_call){.send = in_place ? NULL : sendbuf,
                                .recv = recvbuf, .each = counts ? 0 : nbytes,
                                .own = nbytes, .counts = counts,
                                .displs = displs, .in_place = in_place,
                                .v = counts != NULL};
    *status = fast_run(t, &c, nc__allgather_inline_step, &o);
    return 1;
}

/*
 * The blocking Alltoallv whose blocks, sent and received, all fit the
 * inline lines, where the team's last one fitted (begin() would try it
 * inline), nothing else is in flight and the last calls went well, not in
 * place: the inline step (alltoall_inline.c) on an op of the fields it
 * and its fallback read (the rule of the largest size, t->a2av_ch), after
 * the signature begin() would publish, without checking the blocks or
 * looking the rule up.
 */
static int alltoallv_fast(numacoll_team_t *t, const void *sendbuf,
                          const size_t *sendbytes, const size_t *sdispls,
                          void *recvbuf, const size_t *recvbytes,
                          const size_t *rdispls, int *status)
{
    const size_t max = t->red->a2av_max;
    const int me = t->rank;
    /* (its rule's staging may be missing: the general path grows it) */
    if (!t->red->a2av_try || !max || t->p < 2 || t->rq_head || !sendbuf ||
        !t->staged ||
        sendbuf == NUMACOLL_IN_PLACE || !recvbuf || !sendbytes ||
        !sdispls || !recvbytes || !rdispls ||
        sendbytes[me] != recvbytes[me] ||
        nc__alltoall_unit(t->a2av_ch->f, t->p) < 8 || !nc__call_quiet(t))
        return 0;
    for (int j = 0; j < t->p; j++)
        if (sendbytes[j] > max || recvbytes[j] > max ||
            sdispls[j] > SIZE_MAX - sendbytes[j] ||
            rdispls[j] > SIZE_MAX - recvbytes[j])
            return 0;
    /* ga_make's and begin()'s: no block size, the inline v kind */
    const nc__call_t c = nc__call_of(NC_COLL_ALLTOALL, -1, 0,
                                     NC_GA_SIG_VLINES);
    nc__op_t o;
    o.coll = NC_COLL_ALLTOALL;
    o.root = -1;
    o.ch = t->a2av_ch;
    o.alg = NC_ALG_ALLTOALL_INLINE;
    o.ga = (struct nc__ga_call){.send = sendbuf, .recv = recvbuf,
                                .own = sendbytes[me], .counts = recvbytes,
                                .displs = rdispls, .scounts = sendbytes,
                                .sdispls = sdispls, .v = 1};
    *status = fast_run(t, &c, run_step, &o);   /* its fallback: run() */
    return 1;
}

/* A fast call of a predefined op whose size is 1 .. max bytes (count
 * first, so that count * elem cannot wrap; the lines take any elements up
 * to the largest inline rule, nc__red_init sizing them so, which max does
 * not pass, so no nc__ar_inline_fits here) on a team whose last calls went
 * well: its kernels, else NULL. */
static const nc__op_impl_t *red_fast_fits(numacoll_team_t *t,
                                          numacoll_dtype_t dtype,
                                          numacoll_op_t opn, size_t count,
                                          size_t max)
{
    const nc__op_impl_t *impl = nc__op_impl(opn, dtype);
    return impl && count && count <= max &&
                   count * numacoll_dtype_size(dtype) <= max &&
                   nc__call_quiet(t)
               ? impl : NULL;
}

/* Run a fast reduction-family call: the fields the inline steps read
 * (counts, block: a Reduce_scatter's or Reduce_scatter_block's, else
 * NULL, 0), the signature begin() would publish for them, the step; its
 * status. */
static int red_fast_run(numacoll_team_t *t, nc__coll_t coll, nc__alg_t alg,
                        int root, const nc__op_impl_t *impl,
                        numacoll_dtype_t dtype, numacoll_op_t opn,
                        const void *own, void *recv, size_t count,
                        const size_t *counts, size_t block,
                        int (*step)(numacoll_team_t *, nc__op_t *))
{
    nc__op_t o;
    o.rop = (nc__red_op_t){.elem = numacoll_dtype_size(dtype), .impl = impl,
                           .dtype = (int)dtype, .opn = (int)opn,
                           .commutative = 1};
    o.coll = coll;
    o.own = own;
    o.recv = recv;
    o.count = count;
    o.rs_counts = counts;
    o.rs_block = block;
    o.root = root;
    o.alg = (int)alg;
    const nc__call_t c = nc__call_of_red(coll, root, count, o.rop.elem,
                                         o.rop.dtype, o.rop.opn,
                                         o.rop.commutative);
    return fast_run(t, &c, step, &o);
}

/*
 * The blocking inline Allreduce (root -1) or Reduce of a predefined op,
 * where the team has nothing else in flight and its last calls went well:
 * the inline step (allreduce_inline.c) on an op of the fields it reads,
 * after the signature begin() would publish (ranks on either path meet),
 * without the op's
 * verdict, the argument checks, the rule lookup and the generic driver.
 * With the component's plan cache and the step's kernel fold of one line
 * (no callbacks), an 8-byte MPI_Allreduce at p = 2 went from 1176 to 839
 * instructions, an MPI_Reduce from 1193 to 865 at the root and 998 to
 * 781 elsewhere (callgrind). Which sizes take it was asked once, at team
 * creation (team.c's fast_rules).
 */
static int red_fast(numacoll_team_t *t, int root, numacoll_dtype_t dtype,
                    numacoll_op_t opn, const void *own, void *recv,
                    size_t count, size_t max, int *status)
{
    const nc__op_impl_t *impl = red_fast_fits(t, dtype, opn, count, max);
    if (!impl)
        return 0;
    *status = red_fast_run(
        t, root < 0 ? NC_COLL_ALLREDUCE : NC_COLL_REDUCE,
        root < 0 ? NC_ALG_ALLREDUCE_INLINE : NC_ALG_REDUCE_INLINE, root,
        impl, dtype, opn, own, recv, count, NULL, 0,
        nc__allreduce_inline_step);
    return 1;
}

static int allreduce_fast(numacoll_team_t *t, const void *sendbuf,
                          void *recvbuf, size_t count, numacoll_dtype_t dtype,
                          numacoll_op_t opn, int *status)
{
    return !t->rq_head && sendbuf && recvbuf &&
           red_fast(t, -1, dtype, opn,
                    sendbuf == NUMACOLL_IN_PLACE ? recvbuf : sendbuf, recvbuf,
                    count, t->red->ar_fast_max, status);
}

static int reduce_fast(numacoll_team_t *t, const void *sendbuf, void *recvbuf,
                       size_t count, numacoll_dtype_t dtype, numacoll_op_t opn,
                       int root, int *status)
{
    const int mine = t->rank == root;
    /* what check_args refuses goes the general way, to be refused there */
    if (t->rq_head || (unsigned)root >= (unsigned)t->p || !sendbuf ||
        (mine ? !recvbuf : sendbuf == NUMACOLL_IN_PLACE))
        return 0;
    return red_fast(t, root, dtype, opn,
                    mine && sendbuf == NUMACOLL_IN_PLACE ? recvbuf : sendbuf,
                    recvbuf, count, t->red->rd_fast_max, status);
}

/*
 * The blocking inline Scan or Exscan of a predefined op, where the team
 * has nothing else in flight and its last calls went well: the inline
 * step (rscan_inline.c, whose fold of a predefined op runs the kernels
 * alone) on an op of the fields it reads, after the signature begin()
 * would publish, without scan_make's checks and rule lookup and the
 * generic driver. What scan_make refuses goes the general way, to be
 * refused there. Which sizes take it was asked at team creation.
 */
static int scan_fast(numacoll_team_t *t, nc__coll_t coll, const void *sendbuf,
                     void *recvbuf, size_t count, numacoll_dtype_t dtype,
                     numacoll_op_t opn, int *status)
{
    const void *own;
    if (t->rq_head || !sendbuf)
        return 0;
    if (coll == NC_COLL_EXSCAN && t->rank == 0 &&
        sendbuf != NUMACOLL_IN_PLACE)
        own = sendbuf;      /* receives nothing: recvbuf may be NULL */
    else if (!recvbuf)
        return 0;
    else
        own = sendbuf == NUMACOLL_IN_PLACE ? recvbuf : sendbuf;
    const nc__op_impl_t *impl = red_fast_fits(
        t, dtype, opn, count,
        coll == NC_COLL_SCAN ? t->red->sc_fast_max : t->red->ex_fast_max);
    if (!impl)
        return 0;
    *status = red_fast_run(t, coll,
                           coll == NC_COLL_SCAN ? NC_ALG_SCAN_INLINE
                                                : NC_ALG_EXSCAN_INLINE,
                           -1, impl, dtype, opn, own, recvbuf, count, NULL,
                           0, nc__scan_inline_step);
    return 1;
}

/* The same for the inline Reduce_scatter_block: p blocks of `block`
 * elements, or a Reduce_scatter's p blocks of counts[j] (the rule's size
 * is all p of them), in place where sendbuf is NUMACOLL_IN_PLACE or
 * recvbuf (rs_make's rules). */
static int rsb_fast(numacoll_team_t *t, const void *sendbuf, void *recvbuf,
                    const size_t *counts, size_t block,
                    numacoll_dtype_t dtype, numacoll_op_t opn, int *status)
{
    const size_t max = t->red->rs_fast_max;
    if (t->rq_head || !sendbuf || !recvbuf)
        return 0;
    size_t total = 0;
    if (!counts) {
        /* block first, so that p * block cannot wrap */
        if (block > max / (size_t)t->p)
            return 0;
        total = block * (size_t)t->p;
    } else {
        for (int j = 0; j < t->p; j++) {
            if (counts[j] > max)   /* then p of them cannot wrap */
                return 0;
            total += counts[j];
        }
    }
    const nc__op_impl_t *impl = red_fast_fits(t, dtype, opn, total, max);
    if (!impl)
        return 0;
    *status = red_fast_run(t, NC_COLL_REDUCE_SCATTER,
                           NC_ALG_REDUCE_SCATTER_INLINE, -1, impl, dtype, opn,
                           sendbuf == NUMACOLL_IN_PLACE ? recvbuf : sendbuf,
                           recvbuf, total, counts, block,
                           nc__reduce_scatter_inline_step);
    return 1;
}

/* ---- public: Bcast and Barrier ------------------------------------------- */

/* Every public collective is made as an op, then run one of three ways. */
enum { BLOCKING, NONBLOCKING, PERSISTENT };

NC_INLINE int launch(numacoll_team_t *t, nc__op_t *o, int mode,
                  numacoll_request_t **req)
{
    switch (mode) {
    case BLOCKING:    return blocking(t, o);
    case NONBLOCKING: return start_nb(t, o, req);
    default:          return make_persistent(t, o, req);
    }
}

NC_INLINE int bcast_any(numacoll_team_t *t, void *buf, size_t nbytes, int root,
                     int mode, numacoll_request_t **req)
{
    if (!t)
        return NUMACOLL_ERR_ARG;
    nc__op_t o;
    nc__io_t io = {.buf = buf};
    bcast_make(t, &o, nbytes, root, &io, bcast_bad(t, buf, nbytes));
    return launch(t, &o, mode, req);
}

NC_INLINE int packed_any(numacoll_team_t *t, size_t nbytes, int root,
                      numacoll_pack_fn pack, numacoll_unpack_fn unpack,
                      void *ctx, int mode, numacoll_request_t **req)
{
    if (!t)
        return NUMACOLL_ERR_ARG;
    nc__op_t o;
    nc__io_t io = {.pack = pack, .unpack = unpack, .ctx = ctx};
    bcast_make(t, &o, nbytes, root, &io,
               packed_bad(t, nbytes, root, pack, unpack));
    return launch(t, &o, mode, req);
}

NC_INLINE int barrier_any(numacoll_team_t *t, int mode, numacoll_request_t **req)
{
    if (!t)
        return NUMACOLL_ERR_ARG;
    nc__op_t o;
    barrier_make(t, &o);
    return launch(t, &o, mode, req);
}

int numacoll_bcast(numacoll_team_t *t, void *buf, size_t nbytes, int root)
{
    int fast;
    if (t && bcast_fast(t, buf, nbytes, root, &fast))
        return fast;
    return bcast_any(t, buf, nbytes, root, BLOCKING, NULL);
}

int numacoll_ibcast(numacoll_team_t *t, void *buf, size_t nbytes, int root,
                    numacoll_request_t **req)
{
    return bcast_any(t, buf, nbytes, root, NONBLOCKING, req);
}

int numacoll_bcast_init(numacoll_team_t *t, void *buf, size_t nbytes,
                        int root, numacoll_request_t **req)
{
    return bcast_any(t, buf, nbytes, root, PERSISTENT, req);
}

int numacoll_bcast_packed(numacoll_team_t *t, size_t nbytes, int root,
                          numacoll_pack_fn pack, numacoll_unpack_fn unpack,
                          void *ctx)
{
    return packed_any(t, nbytes, root, pack, unpack, ctx, BLOCKING, NULL);
}

int numacoll_ibcast_packed(numacoll_team_t *t, size_t nbytes, int root,
                           numacoll_pack_fn pack, numacoll_unpack_fn unpack,
                           void *ctx, numacoll_request_t **req)
{
    return packed_any(t, nbytes, root, pack, unpack, ctx, NONBLOCKING, req);
}

int numacoll_bcast_packed_init(numacoll_team_t *t, size_t nbytes, int root,
                               numacoll_pack_fn pack,
                               numacoll_unpack_fn unpack, void *ctx,
                               numacoll_request_t **req)
{
    return packed_any(t, nbytes, root, pack, unpack, ctx, PERSISTENT, req);
}

int numacoll_barrier(numacoll_team_t *t)
{
    return barrier_any(t, BLOCKING, NULL);
}

int numacoll_ibarrier(numacoll_team_t *t, numacoll_request_t **req)
{
    return barrier_any(t, NONBLOCKING, req);
}

int numacoll_barrier_init(numacoll_team_t *t, numacoll_request_t **req)
{
    return barrier_any(t, PERSISTENT, req);
}

/* ---- public: Reduce and Allreduce ---------------------------------------- */

/* The op of a predefined (dtype, op), or of a user op; the verdict on it.
 * Numbered even when refused: the op's fields as the caller gave them. */
static int predef(numacoll_team_t *t, nc__red_op_t *o, numacoll_dtype_t dtype,
                  numacoll_op_t op)
{
    *o = (nc__red_op_t){.dtype = (int)dtype, .opn = (int)op,
                        .commutative = 1};
    return nc__red_op_predef(t, o, dtype, op);
}

static int user(numacoll_team_t *t, nc__red_op_t *o, size_t elem_size,
                numacoll_user_op_fn fn, void *ctx, int commutative)
{
    *o = (nc__red_op_t){.elem = elem_size, .dtype = -1, .opn = -1,
                        .commutative = commutative != 0};
    return nc__red_op_user(t, o, elem_size, fn, ctx, commutative);
}

NC_INLINE int reduce_any(numacoll_team_t *t, const void *sendbuf, void *recvbuf,
                      size_t count, const nc__red_op_t *op, int bad, int root,
                      int mode, numacoll_request_t **req)
{
    /* the op lives in the nc__op_t: reduce_make copies it */
    nc__op_t o;
    reduce_make(t, &o, sendbuf, recvbuf, count, op, root, bad);
    return launch(t, &o, mode, req);
}

NC_INLINE int allreduce_any(numacoll_team_t *t, const void *sendbuf,
                         void *recvbuf, size_t count, const nc__red_op_t *op,
                         int bad, int mode, numacoll_request_t **req)
{
    nc__op_t o;
    allreduce_make(t, &o, -1, sendbuf, recvbuf, count, op, bad);
    return launch(t, &o, mode, req);
}

int nc__bcast_with(numacoll_team_t *t, int alg, void *buf, size_t nbytes,
                   int root)
{
    /* the size's rule, or the first rule naming the forced algorithm */
    const nc__choice_t *ch = nc__team_choice_alg(t, NC_COLL_BCAST, alg,
                                                 nbytes);
    if (!ch)
        return nc__team_fail(t, NUMACOLL_ERR_ARG, "no rule of the team's "
                             "tuning table names bcast algorithm %s",
                             alg >= 0 && alg < NC_ALG_COUNT
                                 ? nc__algs[alg].name : "?");
    nc__op_t o;
    nc__io_t io = {.buf = buf};
    bcast_make(t, &o, nbytes, root, &io, bcast_bad(t, buf, nbytes));
    o.bc.ch = o.ch = ch;
    if (nbytes > 0)
        o.bc.alg = o.alg = alg;
    o.bc.io.cin = nc__copy_pick_read(ch->copy);   /* as nc__bcast_op */
    o.bc.io.cout = nc__copy_pick(ch->copy, nbytes);
    return blocking(t, &o);
}

int nc__allreduce_with(numacoll_team_t *t, int alg, const void *sendbuf,
                       void *recvbuf, size_t count, const nc__red_op_t *op)
{
    nc__op_t o;
    allreduce_make(t, &o, alg, sendbuf, recvbuf, count, op, NUMACOLL_OK);
    return blocking(t, &o);
}

/* The four reductions of one mode (blocking, nonblocking, persistent):
 * their names, and how the request pointer comes and goes. The op's
 * verdict (predef / user) is an argument, so it is made before the call
 * reads the op. */
#define NC_RED_FORMS(red, allred, red_user, allred_user, mode, reqarg,        \
                     reqparam)                                                \
    int red(numacoll_team_t *t, const void *sendbuf, void *recvbuf,           \
            size_t count, numacoll_dtype_t dtype, numacoll_op_t op,           \
            int root reqparam)                                                \
    {                                                                         \
        nc__red_op_t o;                                                       \
        int fast;                                                             \
        if (mode == BLOCKING && t &&                                          \
            reduce_fast(t, sendbuf, recvbuf, count, dtype, op, root,         \
                        &fast))                                           \
            return fast;                                                      \
        return t ? reduce_any(t, sendbuf, recvbuf, count, &o,                 \
                              predef(t, &o, dtype, op), root, mode, reqarg)   \
                 : NUMACOLL_ERR_ARG;                                          \
    }                                                                         \
    int allred(numacoll_team_t *t, const void *sendbuf, void *recvbuf,        \
               size_t count, numacoll_dtype_t dtype,                          \
               numacoll_op_t op reqparam)                                     \
    {                                                                         \
        nc__red_op_t o;                                                       \
        int fast;                                                             \
        if (mode == BLOCKING && t &&                                          \
            allreduce_fast(t, sendbuf, recvbuf, count, dtype, op, &fast))     \
            return fast;                                                      \
        return t ? allreduce_any(t, sendbuf, recvbuf, count, &o,              \
                                 predef(t, &o, dtype, op), mode, reqarg)      \
                 : NUMACOLL_ERR_ARG;                                          \
    }                                                                         \
    int red_user(numacoll_team_t *t, const void *sendbuf, void *recvbuf,      \
                 size_t count, size_t elem_size, numacoll_user_op_fn fn,      \
                 void *ctx, int commutative, int root reqparam)               \
    {                                                                         \
        nc__red_op_t o;                                                       \
        return t ? reduce_any(t, sendbuf, recvbuf, count, &o,                 \
                              user(t, &o, elem_size, fn, ctx, commutative),   \
                              root, mode, reqarg)                             \
                 : NUMACOLL_ERR_ARG;                                          \
    }                                                                         \
    int allred_user(numacoll_team_t *t, const void *sendbuf, void *recvbuf,   \
                    size_t count, size_t elem_size, numacoll_user_op_fn fn,   \
                    void *ctx, int commutative reqparam)                      \
    {                                                                         \
        nc__red_op_t o;                                                       \
        return t ? allreduce_any(t, sendbuf, recvbuf, count, &o,              \
                                 user(t, &o, elem_size, fn, ctx, commutative),\
                                 mode, reqarg)                                \
                 : NUMACOLL_ERR_ARG;                                          \
    }

#define NC_REQ_PARAM , numacoll_request_t **req
NC_RED_FORMS(numacoll_reduce, numacoll_allreduce, numacoll_reduce_user,
             numacoll_allreduce_user, BLOCKING, NULL, )
NC_RED_FORMS(numacoll_ireduce, numacoll_iallreduce, numacoll_ireduce_user,
             numacoll_iallreduce_user, NONBLOCKING, req, NC_REQ_PARAM)
NC_RED_FORMS(numacoll_reduce_init, numacoll_allreduce_init,
             numacoll_reduce_user_init, numacoll_allreduce_user_init,
             PERSISTENT, req, NC_REQ_PARAM)
#undef NC_REQ_PARAM
#undef NC_RED_FORMS

/* ---- public: the gathers ------------------------------------------------- */

NC_INLINE int ga_any(numacoll_team_t *t, ga_args_t *a, int mode,
                     numacoll_request_t **req)
{
    if (!t)
        return NUMACOLL_ERR_ARG;
    nc__op_t o;
    ga_make(t, &o, a);
    return launch(t, &o, mode, req);
}

/* The eight gathers of one mode (blocking, nonblocking, persistent). */
#define NC_GA_FORMS(ag, agv, ga, gav, sc, scv, a2a, a2av, mode, reqarg,       \
                    reqparam)                                                 \
    int ag(numacoll_team_t *t, const void *sendbuf, void *recvbuf,            \
           size_t nbytes reqparam)                                            \
    {                                                                         \
        int fast;                                                             \
        if (mode == BLOCKING && t &&                                          \
            allgather_fast(t, sendbuf, recvbuf, nbytes, NULL, NULL, &fast))   \
            return fast;                                                      \
        ga_args_t a = {.coll = NC_COLL_ALLGATHER, .root = -1,                 \
                       .send = sendbuf, .recv = recvbuf, .own = nbytes,       \
                       .each = nbytes};                                       \
        return ga_any(t, &a, mode, reqarg);                                   \
    }                                                                         \
    int agv(numacoll_team_t *t, const void *sendbuf, size_t sendbytes,        \
            void *recvbuf, const size_t *recvbytes,                           \
            const size_t *displs reqparam)                                    \
    {                                                                         \
        int fast;                                                             \
        if (mode == BLOCKING && t &&                                          \
            allgather_fast(t, sendbuf, recvbuf, sendbytes, recvbytes, displs, \
                           &fast))                                            \
            return fast;                                                      \
        ga_args_t a = {.coll = NC_COLL_ALLGATHER, .root = -1, .v = 1,         \
                       .send = sendbuf, .recv = recvbuf, .own = sendbytes,    \
                       .counts = recvbytes, .displs = displs};                \
        return ga_any(t, &a, mode, reqarg);                                   \
    }                                                                         \
    int ga(numacoll_team_t *t, const void *sendbuf, void *recvbuf,            \
           size_t nbytes, int root reqparam)                                  \
    {                                                                         \
        ga_args_t a = {.coll = NC_COLL_GATHER, .root = root,                  \
                       .send = sendbuf, .recv = recvbuf, .own = nbytes,       \
                       .each = nbytes};                                       \
        return ga_any(t, &a, mode, reqarg);                                   \
    }                                                                         \
    int gav(numacoll_team_t *t, const void *sendbuf, size_t sendbytes,        \
            void *recvbuf, const size_t *recvbytes, const size_t *displs,     \
            int root reqparam)                                                \
    {                                                                         \
        ga_args_t a = {.coll = NC_COLL_GATHER, .root = root, .v = 1,          \
                       .send = sendbuf, .recv = recvbuf, .own = sendbytes,    \
                       .counts = recvbytes, .displs = displs};                \
        return ga_any(t, &a, mode, reqarg);                                   \
    }                                                                         \
    int sc(numacoll_team_t *t, const void *sendbuf, void *recvbuf,            \
           size_t nbytes, int root reqparam)                                  \
    {                                                                         \
        ga_args_t a = {.coll = NC_COLL_SCATTER, .root = root,                 \
                       .send = sendbuf, .recv = recvbuf, .own = nbytes,       \
                       .each = nbytes};                                       \
        return ga_any(t, &a, mode, reqarg);                                   \
    }                                                                         \
    int scv(numacoll_team_t *t, const void *sendbuf, const size_t *sendbytes, \
            const size_t *displs, void *recvbuf, size_t recvbytes,            \
            int root reqparam)                                                \
    {                                                                         \
        ga_args_t a = {.coll = NC_COLL_SCATTER, .root = root, .v = 1,         \
                       .send = sendbuf, .recv = recvbuf, .own = recvbytes,    \
                       .counts = sendbytes, .displs = displs};                \
        return ga_any(t, &a, mode, reqarg);                                   \
    }                                                                         \
    int a2a(numacoll_team_t *t, const void *sendbuf, void *recvbuf,           \
            size_t nbytes reqparam)                                           \
    {                                                                         \
        ga_args_t a = {.coll = NC_COLL_ALLTOALL, .root = -1,                  \
                       .send = sendbuf, .recv = recvbuf, .own = nbytes,       \
                       .each = nbytes};                                       \
        return ga_any(t, &a, mode, reqarg);                                   \
    }                                                                         \
    int a2av(numacoll_team_t *t, const void *sendbuf,                         \
             const size_t *sendbytes, const size_t *sdispls, void *recvbuf,   \
             const size_t *recvbytes, const size_t *rdispls reqparam)         \
    {                                                                         \
        int fast;                                                             \
        if (mode == BLOCKING && t &&                                          \
            alltoallv_fast(t, sendbuf, sendbytes, sdispls, recvbuf,           \
                           recvbytes, rdispls, &fast))                        \
            return fast;                                                      \
        ga_args_t a = {.coll = NC_COLL_ALLTOALL, .root = -1, .v = 1,          \
                       .send = sendbuf, .recv = recvbuf,                      \
                       .counts = recvbytes, .displs = rdispls,                \
                       .scounts = sendbytes, .sdispls = sdispls};             \
        /* this rank's own block, as sent (checked against recvbytes) */     \
        if (t && sendbuf != NUMACOLL_IN_PLACE && sendbytes)                   \
            a.own = sendbytes[t->rank];                                       \
        else if (t && recvbytes)                                              \
            a.own = recvbytes[t->rank];                                       \
        return ga_any(t, &a, mode, reqarg);                                   \
    }

#define NC_REQ_PARAM , numacoll_request_t **req
NC_GA_FORMS(numacoll_allgather, numacoll_allgatherv, numacoll_gather,
            numacoll_gatherv, numacoll_scatter, numacoll_scatterv,
            numacoll_alltoall, numacoll_alltoallv, BLOCKING, NULL, )
NC_GA_FORMS(numacoll_iallgather, numacoll_iallgatherv, numacoll_igather,
            numacoll_igatherv, numacoll_iscatter, numacoll_iscatterv,
            numacoll_ialltoall, numacoll_ialltoallv, NONBLOCKING, req,
            NC_REQ_PARAM)
NC_GA_FORMS(numacoll_allgather_init, numacoll_allgatherv_init,
            numacoll_gather_init, numacoll_gatherv_init, numacoll_scatter_init,
            numacoll_scatterv_init, numacoll_alltoall_init,
            numacoll_alltoallv_init, PERSISTENT, req, NC_REQ_PARAM)
#undef NC_GA_FORMS

/* The packed v forms of one mode (numacoll.h): no displacements, the
 * callbacks in io. */
#define NC_GA_PACKED_FORMS(agv, gav, scv, a2av, mode, reqarg, reqparam)       \
    int agv(numacoll_team_t *t, size_t sendbytes, const size_t *recvbytes,    \
            numacoll_block_pack_fn pack, numacoll_block_unpack_fn unpack,     \
            void *ctx reqparam)                                               \
    {                                                                         \
        ga_args_t a = {.coll = NC_COLL_ALLGATHER, .root = -1, .v = 1,         \
                       .own = sendbytes, .counts = recvbytes, .packed = 1,    \
                       .io = {pack, unpack, ctx, 0}};                         \
        return ga_any(t, &a, mode, reqarg);                                   \
    }                                                                         \
    int gav(numacoll_team_t *t, size_t sendbytes, const size_t *recvbytes,    \
            int root, numacoll_block_pack_fn pack,                            \
            numacoll_block_unpack_fn unpack, void *ctx reqparam)              \
    {                                                                         \
        ga_args_t a = {.coll = NC_COLL_GATHER, .root = root, .v = 1,          \
                       .own = sendbytes, .counts = recvbytes, .packed = 1,    \
                       .io = {pack, unpack, ctx, 0}};                         \
        return ga_any(t, &a, mode, reqarg);                                   \
    }                                                                         \
    int scv(numacoll_team_t *t, const size_t *sendbytes, size_t recvbytes,    \
            int root, numacoll_block_pack_fn pack,                            \
            numacoll_block_unpack_fn unpack, void *ctx reqparam)              \
    {                                                                         \
        ga_args_t a = {.coll = NC_COLL_SCATTER, .root = root, .v = 1,         \
                       .own = recvbytes, .counts = sendbytes, .packed = 1,    \
                       .io = {pack, unpack, ctx, 0}};                         \
        return ga_any(t, &a, mode, reqarg);                                   \
    }                                                                         \
    int a2av(numacoll_team_t *t, const size_t *sendbytes,                     \
             const size_t *recvbytes, numacoll_block_pack_fn pack,            \
             numacoll_block_unpack_fn unpack, void *ctx reqparam)             \
    {                                                                         \
        ga_args_t a = {.coll = NC_COLL_ALLTOALL, .root = -1, .v = 1,          \
                       .counts = recvbytes, .scounts = sendbytes,             \
                       .packed = 1, .io = {pack, unpack, ctx, 0}};            \
        if (t && sendbytes)   /* checked against recvbytes[me] */             \
            a.own = sendbytes[t->rank];                                       \
        else if (t && recvbytes)                                              \
            a.own = recvbytes[t->rank];                                       \
        return ga_any(t, &a, mode, reqarg);                                   \
    }

NC_GA_PACKED_FORMS(numacoll_allgatherv_packed, numacoll_gatherv_packed,
                   numacoll_scatterv_packed, numacoll_alltoallv_packed,
                   BLOCKING, NULL, )
NC_GA_PACKED_FORMS(numacoll_iallgatherv_packed, numacoll_igatherv_packed,
                   numacoll_iscatterv_packed, numacoll_ialltoallv_packed,
                   NONBLOCKING, req, NC_REQ_PARAM)
NC_GA_PACKED_FORMS(numacoll_allgatherv_packed_init,
                   numacoll_gatherv_packed_init,
                   numacoll_scatterv_packed_init,
                   numacoll_alltoallv_packed_init, PERSISTENT, req,
                   NC_REQ_PARAM)
#undef NC_REQ_PARAM
#undef NC_GA_PACKED_FORMS

/* ---- public: Reduce_scatter(_block), Scan, Exscan ------------------------ */

NC_INLINE int rs_any(numacoll_team_t *t, const void *sendbuf, void *recvbuf,
                     int v, const size_t *counts, size_t block,
                     const nc__red_op_t *op, int bad, int mode,
                     numacoll_request_t **req)
{
    nc__op_t o;
    rs_make(t, &o, sendbuf, recvbuf, v, counts, block, op, bad);
    return launch(t, &o, mode, req);
}

NC_INLINE int scan_any(numacoll_team_t *t, nc__coll_t coll,
                       const void *sendbuf, void *recvbuf, size_t count,
                       const nc__red_op_t *op, int bad, int mode,
                       numacoll_request_t **req)
{
    nc__op_t o;
    scan_make(t, &o, coll, sendbuf, recvbuf, count, op, bad);
    return launch(t, &o, mode, req);
}

/* The eight of one mode: Reduce_scatter_block, Reduce_scatter, Scan and
 * Exscan, each with a predefined and a user op. */
#define NC_RS_FORMS(rsb, rsv, scan, exscan, rsb_u, rsv_u, scan_u, exscan_u,   \
                    mode, reqarg, reqparam)                                   \
    int rsb(numacoll_team_t *t, const void *sendbuf, void *recvbuf,           \
            size_t recvcount, numacoll_dtype_t dtype,                         \
            numacoll_op_t op reqparam)                                        \
    {                                                                         \
        nc__red_op_t o;                                                       \
        int fast;                                                             \
        if (mode == BLOCKING && t &&                                          \
            rsb_fast(t, sendbuf, recvbuf, NULL, recvcount, dtype, op,        \
                     &fast))                                                  \
            return fast;                                                      \
        return t ? rs_any(t, sendbuf, recvbuf, 0, NULL, recvcount, &o,       \
                          predef(t, &o, dtype, op), mode, reqarg)             \
                 : NUMACOLL_ERR_ARG;                                          \
    }                                                                         \
    int rsv(numacoll_team_t *t, const void *sendbuf, void *recvbuf,           \
            const size_t *recvcounts, numacoll_dtype_t dtype,                 \
            numacoll_op_t op reqparam)                                        \
    {                                                                         \
        nc__red_op_t o;                                                       \
        int fast;                                                             \
        if (mode == BLOCKING && t && recvcounts &&                            \
            rsb_fast(t, sendbuf, recvbuf, recvcounts, 0, dtype, op, &fast))   \
            return fast;                                                      \
        return t ? rs_any(t, sendbuf, recvbuf, 1, recvcounts, 0, &o,         \
                          predef(t, &o, dtype, op), mode, reqarg)             \
                 : NUMACOLL_ERR_ARG;                                          \
    }                                                                         \
    int scan(numacoll_team_t *t, const void *sendbuf, void *recvbuf,          \
             size_t count, numacoll_dtype_t dtype, numacoll_op_t op reqparam) \
    {                                                                         \
        nc__red_op_t o;                                                       \
        int fast;                                                             \
        if (mode == BLOCKING && t &&                                          \
            scan_fast(t, NC_COLL_SCAN, sendbuf, recvbuf, count, dtype, op,    \
                      &fast))                                                 \
            return fast;                                                      \
        return t ? scan_any(t, NC_COLL_SCAN, sendbuf, recvbuf, count, &o,     \
                            predef(t, &o, dtype, op), mode, reqarg)           \
                 : NUMACOLL_ERR_ARG;                                          \
    }                                                                         \
    int exscan(numacoll_team_t *t, const void *sendbuf, void *recvbuf,        \
               size_t count, numacoll_dtype_t dtype,                          \
               numacoll_op_t op reqparam)                                     \
    {                                                                         \
        nc__red_op_t o;                                                       \
        int fast;                                                             \
        if (mode == BLOCKING && t &&                                          \
            scan_fast(t, NC_COLL_EXSCAN, sendbuf, recvbuf, count, dtype, op,  \
                      &fast))                                                 \
            return fast;                                                      \
        return t ? scan_any(t, NC_COLL_EXSCAN, sendbuf, recvbuf, count, &o,   \
                            predef(t, &o, dtype, op), mode, reqarg)           \
                 : NUMACOLL_ERR_ARG;                                          \
    }                                                                         \
    int rsb_u(numacoll_team_t *t, const void *sendbuf, void *recvbuf,         \
              size_t recvcount, size_t elem_size, numacoll_user_op_fn fn,     \
              void *ctx, int commutative reqparam)                            \
    {                                                                         \
        nc__red_op_t o;                                                       \
        return t ? rs_any(t, sendbuf, recvbuf, 0, NULL, recvcount, &o,       \
                          user(t, &o, elem_size, fn, ctx, commutative), mode, \
                          reqarg)                                             \
                 : NUMACOLL_ERR_ARG;                                          \
    }                                                                         \
    int rsv_u(numacoll_team_t *t, const void *sendbuf, void *recvbuf,         \
              const size_t *recvcounts, size_t elem_size,                     \
              numacoll_user_op_fn fn, void *ctx, int commutative reqparam)    \
    {                                                                         \
        nc__red_op_t o;                                                       \
        return t ? rs_any(t, sendbuf, recvbuf, 1, recvcounts, 0, &o,         \
                          user(t, &o, elem_size, fn, ctx, commutative), mode, \
                          reqarg)                                             \
                 : NUMACOLL_ERR_ARG;                                          \
    }                                                                         \
    int scan_u(numacoll_team_t *t, const void *sendbuf, void *recvbuf,        \
               size_t count, size_t elem_size, numacoll_user_op_fn fn,        \
               void *ctx, int commutative reqparam)                           \
    {                                                                         \
        nc__red_op_t o;                                                       \
        return t ? scan_any(t, NC_COLL_SCAN, sendbuf, recvbuf, count, &o,     \
                            user(t, &o, elem_size, fn, ctx, commutative),     \
                            mode, reqarg)                                     \
                 : NUMACOLL_ERR_ARG;                                          \
    }                                                                         \
    int exscan_u(numacoll_team_t *t, const void *sendbuf, void *recvbuf,      \
                 size_t count, size_t elem_size, numacoll_user_op_fn fn,      \
                 void *ctx, int commutative reqparam)                         \
    {                                                                         \
        nc__red_op_t o;                                                       \
        return t ? scan_any(t, NC_COLL_EXSCAN, sendbuf, recvbuf, count, &o,   \
                            user(t, &o, elem_size, fn, ctx, commutative),     \
                            mode, reqarg)                                     \
                 : NUMACOLL_ERR_ARG;                                          \
    }

#define NC_REQ_PARAM , numacoll_request_t **req
NC_RS_FORMS(numacoll_reduce_scatter_block, numacoll_reduce_scatter,
            numacoll_scan, numacoll_exscan,
            numacoll_reduce_scatter_block_user, numacoll_reduce_scatter_user,
            numacoll_scan_user, numacoll_exscan_user, BLOCKING, NULL, )
NC_RS_FORMS(numacoll_ireduce_scatter_block, numacoll_ireduce_scatter,
            numacoll_iscan, numacoll_iexscan,
            numacoll_ireduce_scatter_block_user,
            numacoll_ireduce_scatter_user, numacoll_iscan_user,
            numacoll_iexscan_user, NONBLOCKING, req, NC_REQ_PARAM)
NC_RS_FORMS(numacoll_reduce_scatter_block_init, numacoll_reduce_scatter_init,
            numacoll_scan_init, numacoll_exscan_init,
            numacoll_reduce_scatter_block_user_init,
            numacoll_reduce_scatter_user_init, numacoll_scan_user_init,
            numacoll_exscan_user_init, PERSISTENT, req, NC_REQ_PARAM)
#undef NC_REQ_PARAM
#undef NC_RS_FORMS
