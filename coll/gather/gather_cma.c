/*
 * Single-copy gathers with Linux cross-memory attach: Allgather, Gather,
 * Scatter, Alltoall and their v forms move every block once, with
 * process_vm_readv (or _writev) straight from the buffer it is in to the
 * buffer it goes to, instead of twice through the staging slots.
 *
 * Each rank has, in its own sync lines, the single-copy Bcast's fields
 * (coll/bcast/bcast_cma.c): avail, the offer counter, and fin, the calls it
 * has finished touching others' buffers in; calls and offers of both
 * algorithms are counted in the same running totals (t->cma_calls,
 * t->cma_bytes: a gather call adds 1 to the latter), so a call's base and
 * number are the same on every rank. A rank *offers* a buffer by writing
 * its view -- addr (base), nbytes (the uniform block), cnt and dsp (the
 * addresses of its v-counts and displacements in its own memory, 0 for the
 * uniform form), sig (the call's signature) -- and then avail = base + 1
 * (release). A peer waits for that (acquire), finds block k of the view at
 * addr + dsp[k], cnt[k] bytes (both read from the owner with one
 * process_vm_readv), or at addr + k nbytes, nbytes bytes, and moves it in
 * pieces of at most f bytes (the rule's f). A rank whose buffer others
 * touch returns only once every one of them has raised its fin to the
 * call's number; the view stays valid until then.
 *  Allgather: every rank offers its receive buffer (counts,
 *          displacements) and writes its own block (its send buffer, or
 *          its block of the receive buffer in place) into the p - 1
 *          others' with process_vm_writev, starting after itself so the
 *          writers spread. Writing data this rank has just produced (in
 *          its cache) took half the time of reading it from the other
 *          rank (1 MiB: 79 against 152 us on the development VM).
 *  Gather:   the root offers its receive buffer (counts, displacements),
 *          each other rank its send buffer; each other rank writes its
 *          block but the first x = 1/p of it (whole pages: root_share)
 *          into the root's buffer with process_vm_writev, all at once,
 *          while the root, otherwise idle, reads those first x bytes of
 *          each; the root waits for their fin, each rank whose x is not 0
 *          for the root's.
 *  Scatter:  the same with the root's send buffer and the ranks' receive
 *          buffers: each rank reads its block but the first x from the
 *          root's buffer, the root writes the first x of each into the
 *          rank's.
 *  Alltoall: every rank offers its receive buffer (rdispls, recvbytes)
 *          and writes its block for each other rank into that rank's. In
 *          place the blocks to send are in the receive buffer, which the
 *          others overwrite: it sends from a private copy instead.
 * Gatherv, Scatterv, Alltoallv: not every rank knows every block, so they
 * took the rule of the largest size (coll/request.c), this one. The root
 * (Alltoallv: every rank) also publishes in its view the largest block it
 * knows of; each rank waits for those offers (PICK) and takes the rule of
 * the largest: this one from its threshold on, else the staged rule of
 * that size, which then runs the call (the views stay valid: no rank
 * completes a staged call before every other has published its entries,
 * which it does after reading the offers). Small v calls pay one line
 * transfer for the choice, not the system calls.
 * A Gatherv (where the team has lines for its blocks, gv_max) first
 * sends every block of at most gv_max bytes through its writer's inline
 * lines, as a staged Gatherv does (gather_staged.c): every non-root
 * numbers the call in the lines and writes line 0 of its block (the
 * block, or NC_AG_UNFIT); one whose block is in the lines takes its
 * ticket, raises its fin (it touches no buffer) and returns, with
 * nothing offered. The root checks line 0 of the blocks it counts in
 * the lines and copies them out (LINES); where every block was there it
 * returns without an offer, else the choice above serves the other
 * ranks, a staged one skipping the blocks in the lines. The line 0 of a
 * block past them is checked where the choice serves it (moves(), the
 * staged step's round 0), before any wait for its rank: either way a
 * block that went the other way than the root counts is a mismatch. A
 * small Gatherv so costs one line transfer, not the choice's and then
 * the slot's. (request.c's begin() gives such a call the lines'
 * signature kind, so that a uniform Gather does not meet it as a
 * single-copy call.)
 * Own blocks are copied locally (nc__ga_begin), not at all in place. A
 * block's size as its owner (or the root) counts it is compared with the
 * reader's (or writer's) own count, and the view's sig with the call's: a
 * difference is a mismatch (the team resynchronises), not wrong data.
 * The call's signature (coll/request.c) tells a single-copy call from a
 * staged one, so ranks whose sizes pick different algorithms meet as a
 * mismatch instead of waiting for each other's slots and offers.
 *
 * Moves into or out of another rank's memory happen only while it is in
 * the call, on every path: a mover announces itself in the target's
 * `writing`, then checks that the target's `open` still names the call
 * (seq_cst both); a rank that leaves the call, done or failed (a mismatch
 * found before its peers were through), closes `open`, then waits until
 * `writing` is 0 (leave()), so no write lands in a buffer its owner may
 * have freed and no read takes one it may have reused.
 * Waits: offers are made before any wait, the fins after every move, so
 * no rank waits for one that waits for it. In nonblocking mode every wait
 * is one look (nc__poll): the step returns NC_AGAIN and resumes at the
 * peer it stood at.
 *
 * Cost, blocks of b bytes, pieces of f, t per byte copied by the kernel,
 * t_sys per system call (page pinning included), t_l a line transfer:
 *   Allgather, Alltoall: T ~ (p - 1) (ceil(b / f) t_sys + b t) + 2 t_l
 *   Gather, Scatter: non-root ~ ceil(b / f) t_sys + (1 - 1/p) b t + t_l
 *   (v: + t_sys for the count), root ~ (p - 1) (t_sys + b t / p), the
 *   two overlapping
 * against about 2 (p - 1) b t staged (copy-in and copy-out; on the
 * development VM t is 3 to 4 times memcpy's per byte and t_sys about
 * 1 us, so staged wins where cores share their caches and single copy
 * where they are far apart: docs/bench.md). Shared lines:
 * own avail line and fin written, the peers' read. process_vm_readv needs
 * the ptrace access mode "attach" to the peer (team creation probes it):
 * where it is not permitted (t->cma_ok 0, or single_copy = 0) the rules
 * run as staged with their s and f cut to the staging slots (coll/team.c,
 * cma_verdict: f here is one system call's bytes, no slot). Data that is
 * not contiguous is packed by the caller (the Open MPI component packs
 * into a temporary); the core's gathers take contiguous bytes only.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/cma.h"
#include "coll/gather/gather.h"
#include "coll/wait.h"

/* Phases of o: the offer, a Gatherv root's reading of the lines
 * (LINES), the choice of a v form (PICK), the peers' moves, then the
 * wait for those that touch this rank's buffer. */
enum { START = 0, LINES, PICK, MOVE, FINS, DONE };

/* How the call runs (o->g.mode): single copy, not chosen yet, staged;
 * single copy, and this root has moved a share of some block. */
enum { CMA, UNDECIDED, STAGED, ROOT_MOVED };

/* A Gather's or Scatter's root moves the first bytes of each block itself
 * (whole pages, 1/p of the block), the rank the rest, at the same time:
 * the root is otherwise idle, and each of the two CPUs copies part. */
static size_t root_share(size_t b, int p)
{
    size_t x = b / (size_t)p;
    return x - x % 4096;
}

/* The largest block this rank knows of (the root's: all of them). */
static size_t largest(const numacoll_team_t *t, const nc__op_t *o)
{
    size_t big = 0;
    for (int j = 0; j < t->p; j++) {
        if (j == t->rank)
            continue;
        size_t a = nc__ga_count(o, j);
        size_t b = o->coll == NC_COLL_ALLTOALL ? nc__ga_scount(o, j) : 0;
        if (a > big)
            big = a;
        if (b > big)
            big = b;
    }
    return big;
}

/* Publish this rank's view (see the top) and offer it. */
static void offer(numacoll_team_t *t, const nc__op_t *o, const void *base,
                  size_t each, const size_t *cnt, const size_t *dsp)
{
    nc__sync_t *me = nc__sync(t, t->rank);
    atomic_store_explicit(&me->big, o->g.mode == UNDECIDED ? largest(t, o)
                                                           : 0,
                          memory_order_relaxed);
    atomic_store_explicit(&me->addr, (uint64_t)(uintptr_t)base,
                          memory_order_relaxed);
    atomic_store_explicit(&me->nbytes, each, memory_order_relaxed);
    atomic_store_explicit(&me->cnt, (uint64_t)(uintptr_t)cnt,
                          memory_order_relaxed);
    atomic_store_explicit(&me->dsp, (uint64_t)(uintptr_t)dsp,
                          memory_order_relaxed);
    atomic_store_explicit(&me->sig, t->sig32, memory_order_relaxed);
    atomic_store_explicit(&me->open, o->g.call, memory_order_seq_cst);
    /* the view must be visible before the offer */
    atomic_store_explicit(&me->avail, o->g.cbase + 1, memory_order_release);
}

/* A system call failed: the team cannot go on. */
static int cma_failed(numacoll_team_t *t, int j, const char *what, size_t n,
                      int err)
{
    int rc = nc__team_fail(t, NUMACOLL_ERR_SYS, "single-copy %s: %s of %zu "
                           "bytes with rank %d (pid %d) failed: %s", what,
                           n == SIZE_MAX ? "reading the block's count"
                                         : "cross-memory attach",
                           n == SIZE_MAX ? sizeof(size_t) : n, j,
                           (int)t->loc[j].pid, strerror(err));
    nc__team_abort(t, rc);
    return rc;
}

/* Move bytes [lo, hi) (hi past the end: to it) of block k of rank j's
 * view (which the caller has waited for), of `want` bytes by this rank's
 * count, from / to local (the block's start), in pieces of f. */
static int move(numacoll_team_t *t, const nc__op_t *o, int j, size_t k,
                size_t want, unsigned char *local, int write, size_t lo,
                size_t hi, const char *what)
{
    nc__sync_t *s = nc__sync(t, j);
    const int pid = t->loc[j].pid;
    uint64_t at = atomic_load_explicit(&s->addr, memory_order_relaxed);
    const uint64_t each = atomic_load_explicit(&s->nbytes,
                                               memory_order_relaxed);
    const uint64_t cnt = atomic_load_explicit(&s->cnt, memory_order_relaxed);
    const uint64_t dsp = atomic_load_explicit(&s->dsp, memory_order_relaxed);
    size_t n = (size_t)each;
    if (atomic_load_explicit(&s->sig, memory_order_relaxed) != t->sig32)
        return nc__mismatch(t, j, "its single-copy call differs");
    /* In j's memory only while j is in the call -- its count arrays too:
     * announced in its `writing` first, then its buffer still open (both
     * seq_cst, against j's close-then-look in leave()), so j never
     * returns -- on an error either -- while we write into what it may
     * free, or read what it may reuse. */
    atomic_fetch_add_explicit(&s->writing, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&s->open, memory_order_seq_cst) != o->g.call) {
        atomic_fetch_sub_explicit(&s->writing, 1, memory_order_release);
        return nc__mismatch(t, j, "it left the single-copy call");
    }
    int err = 0;
    if (cnt) {
        size_t d = 0;
        err = nc__cma_pair(pid, cnt + k * sizeof(size_t),
                           dsp + k * sizeof(size_t), &n, &d);
        at += d;
    } else {
        at += k * each;
    }
    if (!err && n != want) {
        atomic_fetch_sub_explicit(&s->writing, 1, memory_order_release);
        char why[160];
        snprintf(why, sizeof why, "single-copy %s: rank %d has %zu bytes "
                 "for block %zu, rank %d %zu", what, j, n, k, t->rank, want);
        return nc__mismatch(t, j, why);
    }
    const size_t f = o->ch->f;
    if (hi > n)
        hi = n;
    size_t off = lo, piece = err ? SIZE_MAX : 0;
    for (; !err && off < hi; off += piece) {
        piece = hi - off < f ? hi - off : f;
        err = nc__cma_move(pid, local + off, at + off, piece, write);
    }
    /* our moves are done before j may go */
    atomic_fetch_sub_explicit(&s->writing, 1, memory_order_release);
    return err ? cma_failed(t, j, what, piece, err) : NUMACOLL_OK;
}

/* This rank leaves the call (done, or failed): no peer may start a move
 * into or out of its buffer any more, and those inside one finish first.
 * A peer that has died inside one would hold it forever: stop at a dead
 * peer. */
static void leave(numacoll_team_t *t, const nc__op_t *o)
{
    nc__sync_t *me = nc__sync(t, t->rank);
    if (atomic_load_explicit(&me->open, memory_order_relaxed) != o->g.call)
        return;   /* nothing offered in this call */
    atomic_store_explicit(&me->open, 0, memory_order_seq_cst);
    for (unsigned n = 1;
         atomic_load_explicit(&me->writing, memory_order_seq_cst) != 0; n++) {
        if (n % 4096)
            nc__cpu_relax();
        else if (nc__any_dead(t))
            return;
        else
            sched_yield();
    }
}

/* Wait for rank j's offer of this call. */
static int wait_offer(numacoll_team_t *t, const nc__op_t *o, int j)
{
    uint64_t seen;
    nc__wait_why_t why = {j, "single-copy offer", 0, (long)o->g.call};
    return nc__poll(t, &nc__sync(t, j)->avail, NC_WAIT_GE, o->g.cbase + 1,
                    &seen, &why);
}

/* In-place Alltoall: the blocks to send, out of the receive buffer the
 * peers' blocks land in, at their own displacements (private copy). */
static int private_copy(numacoll_team_t *t, nc__op_t *o)
{
    size_t extent = 0;
    for (int k = 0; k < t->p; k++) {
        size_t end = nc__ga_sdispl(o, k) + nc__ga_scount(o, k);
        if (k != t->rank && nc__ga_scount(o, k) && end > extent)
            extent = end;
    }
    if (!extent)
        return NUMACOLL_OK;
    if (!(o->g.tmp = malloc(extent))) {
        /* the others would wait for our offer: stop them */
        int rc = nc__team_fail(t, NUMACOLL_ERR_NOMEM, "single-copy "
                               "alltoall: no memory for a %zu-byte copy of "
                               "the blocks to send in place", extent);
        nc__team_abort(t, rc);
        return rc;
    }
    for (int k = 0; k < t->p; k++)
        if (k != t->rank && nc__ga_scount(o, k))
            memcpy(o->g.tmp + nc__ga_sdispl(o, k),
                   o->ga.recv + nc__ga_sdispl(o, k), nc__ga_scount(o, k));
    return NUMACOLL_OK;
}

/* A Gatherv non-root's block in the lines: line 0 written (the block,
 * or NC_AG_UNFIT), and where it fits, this rank's whole call: its
 * ticket taken, nothing offered, nobody's buffer touched (its fin says
 * so to a root that waits for every rank's). 1 where the call is done. */
static int gv_put(numacoll_team_t *t, nc__op_t *o)
{
    const unsigned slot = nc__ar_slot(o->g.lbase);
    if (o->ga.own > t->red->gv_max) {
        nc__ag_put_unfit(t, slot, 0, o->g.lbase);
        return 0;
    }
    nc__ag_put(t, slot, 0, o->ga.send, o->ga.own, o->g.lbase);
    nc__ga_begin(t, o);
    atomic_store_explicit(&nc__sync(t, t->rank)->fin, o->g.call,
                          memory_order_release);
    return 1;
}

/* A Gatherv root: the blocks it counts in the lines, line 0 checked (a
 * mismatch where the rank sent it the other way) and copied out; o->g.i
 * the rank reached, lr its line. The other blocks' line 0 is checked
 * where the choice serves them (moves(), gather_staged.c), so that it
 * overlaps their waits instead of preceding them. */
static int gv_read(numacoll_team_t *t, nc__op_t *o)
{
    const int me = t->rank, p = t->p;
    const unsigned slot = nc__ar_slot(o->g.lbase);
    int rc;
    for (; o->g.i < p; o->g.i++, o->g.lr = 0) {
        const int j = (me + o->g.i) % p;
        const size_t bj = nc__ga_count(o, j);
        if (bj > t->red->gv_max)
            continue;
        /* (again on a resumed read: the line stays until our ack) */
        if (o->g.lr == 0 &&
            (rc = nc__ga_line_check(t, j, o->g.lbase, 0, 1, bj,
                                    "gatherv")) != NUMACOLL_OK)
            return rc;
        if ((rc = nc__ag_get(t, j, slot, 0,
                             nc__ga_at(o->ga.recv, nc__ga_displ(o, j)), bj,
                             o->g.lbase, &o->g.lr, "inline gatherv line")) !=
                NUMACOLL_OK)
            return rc;
    }
    o->g.i = 1;
    return NUMACOLL_OK;
}

/* The call's start: its number and base, the own block, the offer. */
static int start(numacoll_team_t *t, nc__op_t *o)
{
    const int me = t->rank;
    /* a Gatherv is numbered in the lines first: where that waits (a
     * non-root for the root's ack of the slot's last use), nothing of
     * the call is done yet */
    o->g.lines_done = nc__gv_lines_first(t, o);
    if (o->g.lines_done) {
        int rc = nc__ar_begin(t, me == o->root ? NC_AR_RD_NONE
                                               : NC_AR_RD_ONE,
                              o->root, &o->g.lbase);
        if (rc != NUMACOLL_OK)
            return rc;
        o->g.lr = 0;
        o->ga.lines = 1;   /* a staged choice skips the blocks in them */
    }
    o->g.cbase = t->cma_bytes;
    o->g.call = t->cma_calls + 1;
    o->g.tmp = NULL;
    /* A v form whose block sizes not every rank knows took the rule of
     * the largest size (coll/request.c): which of single copy and staged
     * it runs is chosen below (PICK), from the largest block in it */
    o->g.mode = o->ga.v && o->coll != NC_COLL_ALLGATHER ? UNDECIDED : CMA;
    /* both totals move now, whatever happens: an error aborts the team */
    t->cma_bytes += 1;
    t->cma_calls = o->g.call;
    if (o->g.mode == CMA)
        nc__ga_begin(t, o);   /* the own block (takes a ticket it leaves) */
    o->g.i = 1;
    if (o->g.lines_done && me != o->root && gv_put(t, o)) {
        o->phase = DONE;   /* through the lines: the whole call */
        return NUMACOLL_OK;
    }
    if (o->g.lines_done && me == o->root) {
        /* the blocks it copies out of the lines */
        nc__ga_prefetch_blocks(t, o, t->red->gv_max);
        if (!nc__ga_past(t, o, t->red->gv_max)) {
            o->phase = LINES;   /* every block in the lines: no offer */
            return NUMACOLL_OK;
        }
    }
    switch (o->coll) {
    case NC_COLL_ALLGATHER:   /* where the others' blocks go */
        offer(t, o, o->ga.recv, o->ga.each, o->ga.counts, o->ga.displs);
        break;
    case NC_COLL_GATHER:   /* the others: their block, the root's share */
        if (me == o->root)
            offer(t, o, o->ga.recv, o->ga.each, o->ga.counts, o->ga.displs);
        else
            offer(t, o, o->ga.send, o->ga.own, NULL, NULL);
        break;
    case NC_COLL_SCATTER:
        if (me == o->root)
            offer(t, o, o->ga.send, o->ga.each, o->ga.counts, o->ga.displs);
        else
            offer(t, o, o->ga.recv, o->ga.own, NULL, NULL);
        break;
    default: {   /* Alltoall */
        int rc = o->ga.in_place ? private_copy(t, o) : NUMACOLL_OK;
        if (rc != NUMACOLL_OK)
            return rc;
        /* where the others' blocks go (in place: the blocks to send are
         * in the private copy by now, which the others do not touch) */
        offer(t, o, o->ga.recv, o->ga.each, o->ga.counts, o->ga.displs);
    }
    }
    o->phase = o->g.mode != UNDECIDED ? MOVE
               : o->g.lines_done && me == o->root ? LINES
                                                  : PICK;
    return NUMACOLL_OK;
}

/* A v form's choice: the rule of the largest block of the call (the
 * root's view tells it; Alltoallv: the largest of every rank's), the same
 * on every rank. Its own rule's single copy goes on (MOVE); below that
 * threshold the call runs staged, with the staged rule for that size. */
static int pick(numacoll_team_t *t, nc__op_t *o)
{
    const int rooted = o->coll != NC_COLL_ALLTOALL;
    uint64_t big = rooted && t->rank == o->root ? largest(t, o) : 0;
    int rc;
    if (!rooted)
        big = largest(t, o);
    for (; o->g.i < t->p; o->g.i++) {
        const int j = rooted ? o->root : (t->rank + o->g.i) % t->p;
        if (j == t->rank)
            break;
        if ((rc = wait_offer(t, o, j)) != NUMACOLL_OK)
            return rc;
        const nc__sync_t *s = nc__sync(t, j);
        if (atomic_load_explicit(&s->sig, memory_order_relaxed) != t->sig32)
            return nc__mismatch(t, j, "its single-copy call differs");
        uint64_t b = atomic_load_explicit(&s->big, memory_order_relaxed);
        if (b > big)
            big = b;
        if (rooted)
            break;
    }
    /* every rank's largest block read: whether the next Alltoallv tries
     * inline (coll/gather/alltoall_inline.c), the same on every rank */
    if (!rooted)
        t->red->a2av_try = t->red->a2av_max && big <= t->red->a2av_max;
    /* the root's largest block: whether the next Scatterv tries the
     * lines (coll/gather/rooted_inline.c), the same on every rank */
    if (o->coll == NC_COLL_SCATTER)
        t->red->sv_try = t->red->sv_max && big <= t->red->sv_max;
    const nc__choice_t *ch = nc__team_choice(t, o->coll, (size_t)big);
    if (nc__ga_cma((int)ch->alg)) {
        o->ch = ch;
        o->g.mode = CMA;
        nc__ga_begin(t, o);
        o->g.i = 1;
        o->phase = MOVE;
        return NUMACOLL_OK;
    }
    /* staged, as its rule for that size (any other algorithm there --
     * there is none for these sizes yet -- the first staged rule) */
    o->ch = nc__choice_or_reduce(t, o->coll, nc__ga_staged_alg(o->coll),
                                 (size_t)big);
    /* Alltoallv's staged pieces carry an 8-byte header each: a rule whose
     * slot cannot hold one per peer is refused here, where this rule is
     * known (alike on every rank: big is), not only for the cma one that
     * the call's arguments were checked against. */
    if (o->coll == NC_COLL_ALLTOALL && o->ga.scounts && t->p > 1 &&
        nc__alltoall_unit(o->ch->f, t->p) < 8)
        return nc__team_fail(t, NUMACOLL_ERR_ARG, "alltoallv: the %zu-byte "
                             "staging slot of the rule for %llu-byte blocks "
                             "holds no 8-byte header for each of %d ranks",
                             o->ch->f, (unsigned long long)big, t->p - 1);
    o->g.mode = STAGED;
    o->phase = 0;
    return NUMACOLL_OK;
}

static int staged(numacoll_team_t *t, nc__op_t *o)
{
    switch (o->coll) {
    case NC_COLL_GATHER:
        return nc__gather_staged_step(t, o);
    case NC_COLL_SCATTER:
        return nc__scatter_staged_step(t, o);
    default:
        return nc__alltoall_staged_step(t, o);
    }
}

/* This rank's moves, peer by peer (o->g.i: the next, counted from
 * itself; from the root for a non-root of Gather and Scatter). */
static int moves(numacoll_team_t *t, nc__op_t *o)
{
    const int me = t->rank, p = t->p, root = o->root;
    int rc;
    switch (o->coll) {
    case NC_COLL_ALLGATHER: {
        /* our block, into every other rank's receive buffer */
        unsigned char *mine = o->ga.in_place
                                  ? nc__ga_at(o->ga.recv, nc__ga_displ(o, me))
                                  : (unsigned char *)o->ga.send;
        for (; o->g.i < p; o->g.i++) {
            const int j = (me + o->g.i) % p;
            if ((rc = wait_offer(t, o, j)) != NUMACOLL_OK ||
                (rc = move(t, o, j, (size_t)me, o->ga.own, mine, 1, 0,
                           SIZE_MAX, "allgather")) != NUMACOLL_OK)
                return rc;
        }
        return NUMACOLL_OK;
    }
    case NC_COLL_GATHER:
    case NC_COLL_SCATTER: {
        const int gather = o->coll == NC_COLL_GATHER;
        const char *what = gather ? "gather" : "scatter";
        if (me != root) {
            if ((rc = wait_offer(t, o, root)) != NUMACOLL_OK)
                return rc;
            /* its block but the root's share: Gather writes it from the
             * send buffer, Scatter reads it into recv */
            return move(t, o, root, (size_t)me, o->ga.own,
                        gather ? (unsigned char *)o->ga.send : o->ga.recv,
                        gather, root_share(o->ga.own, p), SIZE_MAX, what);
        }
        /* the root's share of every block: Gather reads it from the
         * rank's send buffer, Scatter writes it into its recv */
        for (; o->g.i < p; o->g.i++) {
            const int j = (root + o->g.i) % p;
            const size_t b = nc__ga_count(o, j);
            const size_t x = root_share(b, p);
            /* a Gatherv block past the lines: its line 0 says so before
             * anything of it is waited for (a rank that sent it through
             * the lines has left: a mismatch, not a wait) */
            if (gather && o->g.lines_done && b > t->red->gv_max &&
                (rc = nc__ga_line_check(t, j, o->g.lbase, 0, 0, b,
                                        "gatherv")) != NUMACOLL_OK)
                return rc;
            unsigned char *at = nc__ga_at(gather ? o->ga.recv
                                                 : (unsigned char *)o->ga.send,
                                          nc__ga_displ(o, j));
            if (!x)
                continue;
            if ((rc = wait_offer(t, o, j)) != NUMACOLL_OK ||
                (rc = move(t, o, j, 0, b, at, !gather, 0, x, what)) !=
                    NUMACOLL_OK)
                return rc;
            o->g.mode = ROOT_MOVED;
        }
        return NUMACOLL_OK;
    }
    default: {   /* Alltoall: our block for j, into j's receive buffer */
        unsigned char *from = o->ga.in_place ? o->g.tmp
                                             : (unsigned char *)o->ga.send;
        for (; o->g.i < p; o->g.i++) {
            const int j = (me + o->g.i) % p;
            if ((rc = wait_offer(t, o, j)) != NUMACOLL_OK ||
                (rc = move(t, o, j, (size_t)me, nc__ga_scount(o, j),
                           nc__ga_at(from, nc__ga_sdispl(o, j)), 1, 0,
                           SIZE_MAX,
                           o->ga.scounts ? "alltoallv" : "alltoall")) !=
                    NUMACOLL_OK)
                return rc;
        }
        return NUMACOLL_OK;
    }
    }
}

/* Wait until every rank that touches this rank's buffer has counted the
 * call in its fin (everyone for Allgather and Alltoall, the others for a
 * Gather or Scatter root, the root for the others where it moves a share
 * of their block). */
static int fins(numacoll_team_t *t, nc__op_t *o)
{
    const int me = t->rank, p = t->p;
    const int rooted = o->coll == NC_COLL_GATHER ||
                       o->coll == NC_COLL_SCATTER;
    if (rooted && me != o->root && !root_share(o->ga.own, p))
        return NUMACOLL_OK;
    for (; o->g.i < p; o->g.i++) {
        uint64_t seen;
        const int j = rooted && me != o->root ? o->root : (me + o->g.i) % p;
        nc__wait_why_t why = {j, "single-copy finish", 0, (long)o->g.call};
        int rc = nc__poll(t, &nc__sync(t, j)->fin, NC_WAIT_GE, o->g.call, &seen,
                          &why);
        if (rc != NUMACOLL_OK)
            return rc;
        if (j == o->root)   /* a non-root waits for the root alone */
            break;
    }
    return NUMACOLL_OK;
}

static int step(numacoll_team_t *t, nc__op_t *o)
{
    int rc;
    if (o->g.mode == STAGED && o->phase != START)
        return staged(t, o);
    if (o->phase == START && (rc = start(t, o)) != NUMACOLL_OK)
        return rc;
    if (o->phase == DONE)
        return NUMACOLL_OK;
    if (o->phase == LINES) {
        if ((rc = gv_read(t, o)) != NUMACOLL_OK)
            return rc;
        if (!nc__ga_past(t, o, t->red->gv_max)) {
            /* every block was in the lines: the own block, the ticket */
            nc__ga_begin(t, o);
            return NUMACOLL_OK;
        }
        o->phase = PICK;
    }
    if (o->phase == PICK) {
        if ((rc = pick(t, o)) != NUMACOLL_OK)
            return rc;
        if (o->g.mode == STAGED)
            return staged(t, o);
    }
    if (o->phase == MOVE) {
        if ((rc = moves(t, o)) != NUMACOLL_OK)
            return rc;
        /* we no longer touch anyone's buffer. A root only if it has
         * touched some: a rank that calls itself root where another rank
         * is root must not let that one's wait pass (it finds the two
         * calls differ instead; where it reads, their views differ) */
        if (o->root != t->rank || o->g.mode == ROOT_MOVED)
            atomic_store_explicit(&nc__sync(t, t->rank)->fin, o->g.call,
                                  memory_order_release);
        o->g.i = 1;
        o->phase = FINS;
    }
    return fins(t, o);
}

int nc__ga_cma_step(numacoll_team_t *t, nc__op_t *o)
{
    int rc = step(t, o);
    /* a Gatherv numbered in the lines: this rank reads no more of them
     * (on every path; the staged step has stored the same already) */
    if (rc == NUMACOLL_OK && o->g.lines_done)
        nc__ar_end(t, o->g.lbase);
    if (rc != NC_AGAIN)   /* start() has numbered the call by now */
        leave(t, o);
    /* the private copy lives until the op ends, whichever way */
    if (rc != NC_AGAIN && o->phase != START) {
        free(o->g.tmp);
        o->g.tmp = NULL;
    }
    return rc;
}
