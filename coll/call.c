/*
 * Call signatures: how ranks that called different collectives, sizes,
 * roots, types or ops find out, instead of exchanging wrong data or
 * waiting forever.
 *
 * Every call gets a number (call_seq, equal on all ranks of a correct
 * program) and a signature, a hash of the number and the call's
 * description. Each rank writes them into its own call line at the start
 * of the call: four relaxed stores and a release store to a line that
 * nobody reads while calls match, so a correct program pays those stores
 * and nothing else. The high half of the signature (sig32) goes into every
 * data word a call publishes (fragment lengths, tickets), and readers wait
 * for the exact word they expect: another call's data is never taken.
 *
 * A reader that sees a word of another signature, or a wait that has spun
 * past its spin phase and finds the rank it waits for in a different call
 * of the same number, or already in a later call while the awaited word
 * never came, calls nc__mismatch(): it names both calls in last_error and
 * records the call number in the header, so every other rank still
 * waiting in that call stops too (nc__call_check). No timeout is needed.
 * A rank whose part needed nobody (a Bcast root, a Reduce leaf) returns
 * from the bad call before anyone compares; it hears of the mismatch at
 * its next call, which then fails on every rank (resync(), told()).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "coll/algs.h"
#include "coll/gather/gather.h"
#include "coll/op.h"
#include "coll/reduce/reduce.h"
#include "coll/team.h"
#include "coll/wait.h"

static nc__call_t unpack_desc(uint64_t d, uint64_t nbytes, uint64_t count)
{
    return (nc__call_t){.coll = (int)(d & 0xff),
                        .root = (int)((d >> 8) & 0xffffff) - 1,
                        .dtype = (int)((d >> 32) & 0xff) - 1,
                        .op = (int)((d >> 40) & 0xff) - 1,
                        .commutative = (int)((d >> 48) & 1),
                        .nbytes = (size_t)nbytes, .count = (size_t)count};
}

static int resync(numacoll_team_t *t);

/* Whether call seq goes on as if nothing had happened although the
 * mismatch count ep has moved: a soft count (fail_call()) spares the call
 * it was found in, which the ranks finish in step. */
static int spared(const numacoll_team_t *t, uint64_t ep, uint64_t seq)
{
    return (ep & 1) &&
           (int64_t)(seq - atomic_load_explicit(&t->hdr->mm_first,
                                                memory_order_relaxed)) <= 0;
}

/* The first call after a resync at which some rank turned out to have
 * finished a call that others failed (a Bcast root, a Reduce leaf, a
 * reader that got its data): it fails on every rank, so that rank gets an
 * error too, and all ranks agree on it without another meeting. */
static int told(numacoll_team_t *t)
{
    int finder = atomic_load_explicit(&t->hdr->mm_rank, memory_order_relaxed);
    if (t->told_last)
        return nc__team_fail(t, NUMACOLL_ERR_MISMATCH, "mismatched calls: "
                             "call %llu, which rank %d finished, failed on "
                             "other ranks (rank %d found the ranks' calls "
                             "different); call %llu fails on every rank to "
                             "tell it", (unsigned long long)t->told_last,
                             t->rank, finder,
                             (unsigned long long)t->call_seq);
    return nc__team_fail(t, NUMACOLL_ERR_MISMATCH, "mismatched calls: call "
                         "%llu fails on every rank, because some rank had "
                         "finished call %llu, which rank %d found mismatched, "
                         "and learns of it through this one",
                         (unsigned long long)t->call_seq,
                         (unsigned long long)(t->call_seq - 1), finder);
}

static int join_failed(numacoll_team_t *t);

/* Whether call `next` is one some rank has already failed (mm_call) or
 * started (its call line), so that the ranks ahead will not come back for
 * it: this rank fails it at once instead of resynchronising. */
static int behind(const numacoll_team_t *t, uint64_t next)
{
    if ((int64_t)(atomic_load_explicit(&t->hdr->mm_call,
                                       memory_order_relaxed) - next) >= 0)
        return 1;
    for (int r = 0; r < t->p; r++)
        if (r != t->rank &&
            (int64_t)(atomic_load_explicit(&nc__sync(t, r)->call_seq,
                                           memory_order_relaxed) -
                      next) >= 0)
            return 1;
    return 0;
}

static int root_call(numacoll_team_t *t, int root, size_t *nb, uint32_t *sig);
static int bcast_lost(numacoll_team_t *t, int peer, const char *what);

int nc__call_begin_slow(numacoll_team_t *t, const nc__call_t *c)
{
    int rc = nc__team_check_abort(t);
    if (rc != NUMACOLL_OK)
        return rc;
    /* After a mismatch (the epoch the fast path found moved), a rank
     * that starts a call some rank has already failed or
     * finished (its number is at most the header's mm_call or another
     * rank's call number: this rank came late) fails it too, without a
     * meeting: the ranks ahead will not come back for it, and may wait for
     * this one elsewhere. The first call nobody has reached
     * resynchronises, with every rank. */
    int late = 0;
    const uint64_t ep = atomic_load_explicit(&t->hdr->mm_epoch,
                                             memory_order_acquire);
    if (ep != t->mm_done && !spared(t, ep, t->call_seq + 1)) {
        late = behind(t, t->call_seq + 1);
        /* a rank may also start the call without a resync after this
         * look (it saw the count before it moved), and fail or finish it:
         * the first meeting lets this one leave then (NC_CALL_LATE) */
        if (!late && (rc = resync(t)) == NC_CALL_LATE)
            late = 1;
        else if (!late && rc != NUMACOLL_OK)
            return rc;
    }
    nc__call_publish(t, nc__call_desc(c), c->nbytes, c->count);
    /* decided on the epoch loaded above: a resync since may have spared
     * this call number, but the ranks ahead have already given it up */
    if (late)
        return join_failed(t);
    if ((int64_t)(t->resume_seq - t->call_seq) > 0 &&
        t->call_seq == t->told_seq)
        return told(t);
    if ((int64_t)(t->resume_seq - t->call_seq) > 0)
        return nc__team_fail(t, NUMACOLL_ERR_MISMATCH, "mismatched calls: "
                             "call %llu is lost, another rank had already "
                             "finished it (or failed it) while the ranks' "
                             "calls were mismatched; calls run again from "
                             "%llu on", (unsigned long long)t->call_seq,
                             (unsigned long long)t->resume_seq);
    return NUMACOLL_OK;
}

/* desc's coll of a call its rank refused (bad arguments) */
#define NC_CALL_REFUSED 0xfe

/* How fail_call() counts a mismatch (see there). */
enum { NC_FAIL_JOIN, NC_FAIL_FOUND, NC_FAIL_FOUND_SOFT };

static void fail_call(numacoll_team_t *t, int how);

/* The unpack callback of a drain: the data goes nowhere. */
static int discard(void *ctx, size_t off, const void *src, size_t n)
{
    (void)ctx, (void)off, (void)src, (void)n;
    return 0;
}

int nc__call_refuse(numacoll_team_t *t, int status, int unheard)
{
    nc__sync_t *me = nc__sync(t, t->rank);
    t->mm_failed = t->call_seq;  /* this rank knows its call failed */
    t->call_desc = (t->call_desc & ~(uint64_t)0xff) | NC_CALL_REFUSED;
    /* the history stays: the next call covers this call as published,
     * which the ranks that did not wait for this one have too where the
     * arguments they compare agreed */
    t->call_sig = nc__call_hash(t->call_seq, t->call_desc, t->call_nbytes,
                                t->call_count, t->call_hist);
    t->sig32 = (uint32_t)(t->call_sig >> 32) | 1u;
    atomic_store_explicit(&me->call_desc, t->call_desc, memory_order_relaxed);
    atomic_store_explicit(&me->refused, t->call_seq + 1,
                          memory_order_relaxed);
    atomic_store_explicit(&me->call_sig, t->call_sig, memory_order_release);
    /* Whoever waits for this rank finds the refusal in its call line. A
     * rank nobody waits for but whose part others fill (a Reduce root)
     * makes every rank resynchronise at its next call instead. */
    if (unheard && t->p > 1)
        fail_call(t, NC_FAIL_FOUND);
    return status;
}

int nc__bcast_refuse(numacoll_team_t *t, size_t nbytes, int root, int status)
{
    /* A reader nobody waits for: take the root's call to its end, passing
     * it on and throwing the data away, so the root's bank drains. */
    if (t->p > 1 && root >= 0 && root < t->p && root != t->rank) {
        char why[sizeof t->last_error];
        memcpy(why, t->last_error, sizeof why);
        nc__io_t io = {.unpack = discard};
        t->draining = 1;
        nc__bcast_run(t, nbytes, root, &io);
        t->draining = 0;
        memcpy(t->last_error, why, sizeof why);
    }
    return nc__call_refuse(t, status, 0);
}

typedef struct seen_call {
    uint64_t seq, desc, nbytes, count, sig, hist;
} seen_call_t;

/* Rank r's call line, read whole: the signature must be the hash of the
 * fields read with it, or the rank was rewriting the line; 0 if no
 * consistent read came in a few tries. */
static int read_call(const numacoll_team_t *t, int r, seen_call_t *out)
{
    nc__sync_t *s = nc__sync(t, r);
    for (int i = 0; i < 8; i++) {
        out->sig = atomic_load_explicit(&s->call_sig, memory_order_acquire);
        out->seq = atomic_load_explicit(&s->call_seq, memory_order_relaxed);
        out->desc = atomic_load_explicit(&s->call_desc, memory_order_relaxed);
        out->nbytes = atomic_load_explicit(&s->call_nbytes,
                                           memory_order_relaxed);
        out->count = atomic_load_explicit(&s->call_count, memory_order_relaxed);
        out->hist = atomic_load_explicit(&s->call_hist, memory_order_relaxed);
        if (out->seq == 0 || nc__call_hash(out->seq, out->desc, out->nbytes,
                                           out->count, out->hist) == out->sig)
            return 1;
    }
    return 0;
}

/* How a gather-family call runs, by its signature's kind (gather.h): a
 * call's sizes may agree where its kind does not. */
static const char *ga_how(size_t kind)
{
    return kind == NC_GA_SIG_PACKED   ? ", packed"
           : kind == NC_GA_SIG_VLINES ? ", v form through the inline lines"
           : kind == 1                ? ", single copy"
           : kind == 2                ? ", inline"
                                      : ", staged";
}

static void describe(char *buf, size_t len, uint64_t seq, uint64_t desc,
                     uint64_t nbytes, uint64_t count)
{
    if (seq == 0) {
        snprintf(buf, len, "no call yet");
        return;
    }
    nc__call_t c = unpack_desc(desc, nbytes, count);
    const char *name = c.coll >= 0 && c.coll < NC_COLL_COUNT
                           ? nc__coll_name((nc__coll_t)c.coll) : "?";
    if (c.coll == NC_CALL_REFUSED)
        snprintf(buf, len, "call %llu, which it refused (bad arguments)",
                 (unsigned long long)seq);
    else if (c.coll == NC_COLL_BARRIER)
        snprintf(buf, len, "call %llu, barrier", (unsigned long long)seq);
    else if (c.coll == NC_COLL_BCAST)
        snprintf(buf, len, "call %llu, bcast of %zu bytes from root %d",
                 (unsigned long long)seq, c.nbytes, c.root);
    else if (c.coll == NC_COLL_ALLGATHER)
        snprintf(buf, len, "call %llu, allgather of %zu bytes in all%s",
                 (unsigned long long)seq, c.nbytes, ga_how(c.count));
    else if (c.coll == NC_COLL_ALLTOALL)
        snprintf(buf, len, "call %llu, alltoall of %zu bytes per block%s",
                 (unsigned long long)seq, c.nbytes, ga_how(c.count));
    else if (c.coll == NC_COLL_GATHER || c.coll == NC_COLL_SCATTER)
        snprintf(buf, len, "call %llu, %s %s root %d%s",
                 (unsigned long long)seq, name,
                 c.coll == NC_COLL_GATHER ? "to" : "from", c.root,
                 ga_how(c.count));
    else {
        const char *dn = c.dtype >= 0 ? numacoll_dtype_name(
                                            (numacoll_dtype_t)c.dtype) : NULL;
        const char *on = c.op >= 0 ? numacoll_op_name((numacoll_op_t)c.op)
                                   : NULL;
        char root[32] = "";
        if (c.root >= 0)
            snprintf(root, sizeof root, " to root %d", c.root);
        snprintf(buf, len, "call %llu, %s of %zu elements (%zu bytes) of %s "
                 "with %s%s", (unsigned long long)seq, name, c.count,
                 c.nbytes, dn ? dn : "a user type",
                 on ? on : (c.commutative ? "a commutative user op"
                                          : "a user op"), root);
    }
}

/* "rank 0 is in call 7, bcast of 2000 bytes from root 0; rank 1 is in
 * ..." into t->last_error; the status is TRUNCATE when both are Bcasts
 * from one root and the peer's is the larger, this rank a reader. */
static int mismatch_text(numacoll_team_t *t, int peer, const seen_call_t *pc,
                         const char *what)
{
    char mine[160], theirs[160] = "a call this rank could not read";
    describe(mine, sizeof mine, t->call_seq, t->call_desc, t->call_nbytes,
             t->call_count);
    if (pc)
        describe(theirs, sizeof theirs, pc->seq, pc->desc, pc->nbytes,
                 pc->count);
    nc__call_t me = unpack_desc(t->call_desc, t->call_nbytes, t->call_count);
    nc__call_t them = pc ? unpack_desc(pc->desc, pc->nbytes, pc->count)
                         : (nc__call_t){.coll = -1};
    int st = pc && me.coll == NC_COLL_BCAST && them.coll == NC_COLL_BCAST &&
                     me.root == them.root && me.root != t->rank &&
                     them.nbytes > me.nbytes
                 ? NUMACOLL_ERR_TRUNCATE : NUMACOLL_ERR_MISMATCH;
    /* the same call on both ranks, but not the same calls before it */
    const int before = pc && pc->seq == t->call_seq &&
                       pc->desc == t->call_desc &&
                       pc->nbytes == t->call_nbytes &&
                       pc->count == t->call_count && pc->sig != t->call_sig;
    return nc__team_fail(t, st, "mismatched calls%s: rank %d is in %s; "
                         "rank %d is in %s (%s)",
                         before ? " before this one (an earlier call differed "
                                  "where no rank compared it)" : "",
                         t->rank, mine, peer, theirs, what);
}

/* This rank fails its call for a mismatch: raise the header's mm_call to
 * its number (the latest call any rank has failed, which late ranks fail
 * too); a finder (NC_FAIL_FOUND) then counts the mismatch once (the first
 * finder's CAS; later ones find it counted), so that every rank
 * resynchronises at its next call, and every rank still waiting in a call
 * gives it up (nc__call_check). A soft count (NC_FAIL_FOUND_SOFT: a Bcast
 * reader that drained the root's call, whose words keep the ranks in step)
 * leaves the ranks still in this call alone, so they finish it; a hard one
 * overrides it. */
static void fail_call(numacoll_team_t *t, int how)
{
    t->mm_failed = t->call_seq;
    uint64_t c = atomic_load_explicit(&t->hdr->mm_call, memory_order_relaxed);
    while ((int64_t)(t->call_seq - c) > 0 &&
           !atomic_compare_exchange_weak_explicit(&t->hdr->mm_call, &c,
                                                  t->call_seq,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
    if (how == NC_FAIL_JOIN)
        return;
    uint64_t e = t->mm_done,
             want = ((e >> 1) + 1) << 1 | (how == NC_FAIL_FOUND_SOFT);
    atomic_store_explicit(&t->hdr->mm_rank, t->rank, memory_order_relaxed);
    atomic_store_explicit(&t->hdr->mm_first, t->call_seq, memory_order_relaxed);
    /* release: whoever sees the count sees mm_call, mm_first and mm_rank */
    if (!atomic_compare_exchange_strong_explicit(&t->hdr->mm_epoch, &e, want,
                                                 memory_order_acq_rel,
                                                 memory_order_acquire) &&
        how == NC_FAIL_FOUND && e == (want | 1))
        atomic_compare_exchange_strong_explicit(&t->hdr->mm_epoch, &e, want,
                                                memory_order_acq_rel,
                                                memory_order_acquire);
}

static int mismatch(numacoll_team_t *t, int peer, const char *what)
{
    seen_call_t pc;
    int have = peer >= 0 && read_call(t, peer, &pc);
    int st = mismatch_text(t, peer, have ? &pc : NULL, what);
    fail_call(t, NC_FAIL_FOUND);
    return st;
}

/* The control slot a Bcast of nb bytes announces its first fragment in,
 * at the bank use this rank is at; LONG_MAX for inline (its own slots);
 * -1 for single copy, which has none. */
static long first_slot(const numacoll_team_t *t, size_t nb)
{
    const nc__choice_t *ch = nc__team_choice(t, NC_COLL_BCAST, nb);
    unsigned s, q;
    /* inline calls have their own slots, the same for any two of them */
    if (nb == 0 || ch->alg == NC_ALG_BCAST_INLINE)
        return LONG_MAX;
    if (ch->alg == NC_ALG_BCAST_PIPELINED)
        s = ch->s, q = ch->q;
    else
        return -1;
    return (long)((t->op % q) * (s / q));
}

/* Bcasts of a and b bytes from one root: one inline, the other pipelined */
static int other_kind(const numacoll_team_t *t, size_t a, size_t b)
{
    long sa = first_slot(t, a), sb = first_slot(t, b);
    return sa >= 0 && sb >= 0 && (sa == LONG_MAX) != (sb == LONG_MAX);
}

/* Two Bcasts from one root (not this rank), this rank's and c: SAME_SLOT
 * when the root's first word goes to the slot this reader waits on (the
 * word will come, and the reader drains the root's call then,
 * nc__bcast_mismatch, which keeps the team in step; telling the mismatch
 * from the call lines first would not); OTHER_KIND when one is inline and
 * the other pipelined (the root's words go where this reader does not
 * wait, but root_call() finds them once the root has announced its call);
 * else NEITHER. */
enum { NEITHER, SAME_SLOT, OTHER_KIND };

static int bcast_pair(const numacoll_team_t *t, const seen_call_t *c)
{
    nc__call_t me = unpack_desc(t->call_desc, t->call_nbytes, t->call_count),
               them = unpack_desc(c->desc, c->nbytes, c->count);
    if (me.coll != NC_COLL_BCAST || them.coll != NC_COLL_BCAST ||
        me.root != them.root || me.root == t->rank)
        return NEITHER;
    long mine = first_slot(t, me.nbytes), theirs = first_slot(t, them.nbytes);
    if (mine < 0 || theirs < 0)
        return NEITHER;
    return mine == theirs ? SAME_SLOT
           : other_kind(t, me.nbytes, them.nbytes) ? OTHER_KIND : NEITHER;
}


static int root_call(numacoll_team_t *t, int root, size_t *nb, uint32_t *sig);

/* This rank's call is one that another rank found mismatched (or one
 * past it that the ranks ahead will not come back for): give it up. */
static int join_failed(numacoll_team_t *t)
{
    char mine[160];
    describe(mine, sizeof mine, t->call_seq, t->call_desc, t->call_nbytes,
             t->call_count);
    /* the call found bad, which this rank may have finished (a Bcast root
     * that ran ahead) */
    uint64_t bad = atomic_load_explicit(&t->hdr->mm_first,
                                        memory_order_relaxed);
    fail_call(t, NC_FAIL_JOIN);
    return nc__team_fail(t, NUMACOLL_ERR_MISMATCH, "mismatched calls: rank "
                         "%d found the ranks' calls different in call %llu, "
                         "so rank %d gives up %s",
                         atomic_load_explicit(&t->hdr->mm_rank,
                                              memory_order_relaxed),
                         (unsigned long long)bad, t->rank, mine);
}

static int call_check(numacoll_team_t *t, int peer)
{
    /* A rank that has destroyed the team will never answer: at a
     * resynchronisation (everyone must come) whoever it is, otherwise the
     * one awaited; a wait on the whole team (peer -1, say for releases)
     * may still be answered by the others, so it goes on. */
    for (int r = 0; r < t->p; r++)
        if (r != t->rank && (t->in_resync || r == peer) &&
            atomic_load_explicit(&nc__sync(t, r)->gone, memory_order_acquire))
            return t->in_resync
                       ? nc__team_fail(t, NUMACOLL_ERR_ABORTED, "rank %d "
                                       "destroyed the team while the others "
                                       "resynchronised after mismatched "
                                       "calls", r)
                       : NC_CALL_GONE;
    if (t->in_resync == 2 && behind(t, t->resync_next)) {
        /* Behind after all: take back this rank's arrival, unless the
         * meeting is complete (then everyone is here and goes on). */
        const uint64_t target = (3 * (t->resyncs + 1) - 2) * (uint64_t)t->p;
        uint64_t v = atomic_load_explicit(&t->hdr->mm_arrive,
                                          memory_order_acquire);
        if ((int64_t)(v - target) < 0 &&
            atomic_compare_exchange_strong_explicit(
                &t->hdr->mm_arrive, &v, v - 1, memory_order_acq_rel,
                memory_order_acquire))
            return NC_CALL_LATE;
    }
    if (t->in_resync)
        return NC_CALL_WAIT;
    const uint64_t ep = atomic_load_explicit(&t->hdr->mm_epoch,
                                             memory_order_acquire);
    if (ep != t->mm_done && !spared(t, ep, t->call_seq))
        return join_failed(t);
    /* A drain follows another rank's call on purpose (nc__bcast_mismatch,
     * nc__bcast_refuse): its words come, so it compares nothing, unless
     * the rank it waits for refused this very call: then nothing comes,
     * nothing was sent, and the drain just ends. Its call line may have
     * moved on to its next call already (a root refused, then went on):
     * `refused` keeps the call (release-ordered before that line). */
    if (t->draining) {
        seen_call_t c;
        if (peer >= 0 && read_call(t, peer, &c) &&
            ((c.seq == t->call_seq && (c.desc & 0xff) == NC_CALL_REFUSED) ||
             atomic_load_explicit(&nc__sync(t, peer)->refused,
                                  memory_order_acquire) == t->call_seq + 1))
            return nc__team_fail(t, NUMACOLL_ERR_ARG, "rank %d refused call "
                                 "%llu", peer,
                                 (unsigned long long)t->call_seq);
        /* A parent past the call has written every word it forwards (it
         * cannot finish before): if ours is not there, it was in another
         * call and never forwards the root's (nc__wait_slow then fails) */
        if (peer >= 0 && read_call(t, peer, &c) &&
            (int64_t)(c.seq - t->call_seq) > 0)
            return NC_CALL_AHEAD;
        return NC_CALL_WAIT;
    }
    /* A Bcast reader's parent may have drained the root's call of the
     * other kind (inline against pipelined) and forwarded it where this
     * rank does not wait, then stopped in a later call's resync: its call
     * line still matches ours, so only the root's announcement tells. */
    const nc__call_t me = unpack_desc(t->call_desc, t->call_nbytes,
                                      t->call_count);
    size_t rnb;
    uint32_t rsig;
    seen_call_t pc;
    /* only while the parent shows this very call: a parent in another
     * call never forwards the root's, and the loop below reports that */
    if (peer >= 0 && me.coll == NC_COLL_BCAST && me.root != peer &&
        me.root != t->rank && me.root >= 0 && me.root < t->p &&
        read_call(t, peer, &pc) && pc.seq == t->call_seq &&
        pc.sig == t->call_sig && root_call(t, me.root, &rnb, &rsig) &&
        other_kind(t, me.nbytes, rnb))
        return bcast_lost(t, peer, "its root's bcast is of another kind");
    for (int r = peer >= 0 ? peer : 0; r < (peer >= 0 ? peer + 1 : t->p); r++) {
        seen_call_t c;
        if (r == t->rank || !read_call(t, r, &c))
            continue;
        const int pair = c.seq == t->call_seq && c.sig != t->call_sig
                             ? bcast_pair(t, &c) : SAME_SLOT;
        if (pair != SAME_SLOT) {
            /* The same root's Bcast of the other kind (inline against
             * pipelined): drain it once the root has announced it, so that
             * the ranks stay in step as when the word comes. */
            size_t nb;
            uint32_t sig;
            if (pair != OTHER_KIND)
                return mismatch(t, r, "its call differs");
            if (root_call(t, unpack_desc(c.desc, c.nbytes, c.count).root,
                          &nb, &sig))
                return bcast_lost(t, r, "its bcast is of another kind");
        }
        /* On a wait for the team, a rank one call ahead names the call
         * it made before (its history): another than this rank's (as
         * published) means it made another call of this number and will
         * not come back for it. (A wait for one rank that has gone ahead
         * goes the NC_CALL_AHEAD way below: a Bcast reader drains.) */
        if (peer < 0 && c.seq == t->call_seq + 1 &&
            c.hist != t->call_next_hist)
            return mismatch(t, r, "the call it made before differs from "
                                  "this one");
        /* A root waiting for its bank: every other rank reads this very
         * call, so none can be past it unless it made another call (it
         * took itself for the root too, say). */
        if (t->claiming && (int64_t)(c.seq - t->call_seq) > 0)
            return mismatch(t, r, "it has gone on to a later call while "
                                "this rank, a root, waits to send");
        /* only the awaited rank's progress proves anything: others may be
         * ahead legitimately (a Reduce leaf returns before its root) */
        if (peer >= 0 && (int64_t)(c.seq - t->call_seq) > 0)
            return NC_CALL_AHEAD;
    }
    /* A wait on the team (a root's slots read out, say) that every other
     * rank has left for a later call: whatever they owed this call is
     * written and visible now (their call lines are read with acquire),
     * so the caller's one more look decides, and nobody else will write
     * it. */
    int ahead = peer < 0 && t->p > 1;
    for (int r = 0; r < t->p && ahead; r++) {
        seen_call_t c;
        ahead = r == t->rank || (read_call(t, r, &c) &&
                                 (int64_t)(c.seq - t->call_seq) > 0);
    }
    return ahead ? NC_CALL_AHEAD : NC_CALL_WAIT;
}

/* ---- a Bcast reader in step with a root of another call ---------------- */

/* This Bcast reader found a word of the call (root, nb, signature
 * theirs) of the same number: read that call as its readers do, throwing
 * the data away and forwarding its words to this rank's children in the
 * root's tree, so that the root's slots drain and every rank stays at the
 * same bank use and inline call. TRUNCATE or MISMATCH naming both calls,
 * or OK when the drain failed (the caller reports the mismatch then). */
static int drain(numacoll_team_t *t, int root, size_t nb, uint32_t theirs,
                 const char *what)
{
    nc__call_t rc_call = {.coll = NC_COLL_BCAST, .root = root,
                          .nbytes = nb, .dtype = -1, .op = -1};
    seen_call_t pc = {.seq = t->call_seq, .desc = nc__call_desc(&rc_call),
                      .nbytes = nb};
    int st = mismatch_text(t, root, &pc, what);
    char msg[sizeof t->last_error];
    memcpy(msg, t->last_error, sizeof msg);
    nc__io_t io = {.unpack = discard};
    nc__op_t o;
    nc__bcast_op(t, &o, nb, root, &io);
    const uint32_t mine = t->sig32;
    int rc = NUMACOLL_ERR_MISMATCH;
    t->sig32 = theirs;
    t->draining = 1;
    /* the single-copy kind leaves nothing in this rank's way to drain */
    if (o.bc.alg != NC_ALG_BCAST_CMA)
        rc = nc__drive(t, nc__bcast_step, &o);
    t->draining = 0;
    t->sig32 = mine;
    if (rc != NUMACOLL_OK)
        return NUMACOLL_OK;
    memcpy(t->last_error, msg, sizeof msg);
    /* in step, but the root (and readers that got their data) finished
     * the call: the resync this starts tells them (told()); the ranks
     * still reading this call finish it first */
    fail_call(t, NC_FAIL_FOUND_SOFT);
    return st;
}

static int bcast_mismatch_inline(numacoll_team_t *t, int parent, unsigned j,
                                 uint64_t seen, const char *what)
{
    const uint32_t theirs = (uint32_t)(seen >> 32);
    nc__inl_rec_t *rec = nc__inl_rec(t, parent, j);
    /* acquire on the word (nc__wait) made the record stored before it
     * visible, and the writer keeps it until this rank acks */
    const uint64_t seq = atomic_load_explicit(&rec->seq, memory_order_relaxed);
    const int ours = atomic_load_explicit(&rec->sig32, memory_order_relaxed) ==
                     theirs;
    /* Draining a call whose root sent nothing (it refused the call), the
     * root's next call may come first: it is not ours to take (the next
     * call reads it), and nothing is out of step. */
    if (t->draining && ours && (int64_t)(seq - t->call_seq) > 0)
        return nc__team_fail(t, NUMACOLL_ERR_ARG, "the root of call %llu "
                             "sent nothing", (unsigned long long)t->call_seq);
    /* only a Bcast call reads a Bcast call to its end (see below) */
    if (ours && !t->draining && (t->call_desc & 0xff) == NC_COLL_BCAST &&
        seq == t->call_seq &&
        atomic_load_explicit(&rec->coll, memory_order_relaxed) ==
            NC_COLL_BCAST) {
        int root = (int)atomic_load_explicit(&rec->root, memory_order_relaxed);
        size_t nb = (size_t)atomic_load_explicit(&rec->nbytes,
                                                 memory_order_relaxed);
        if (root != t->rank && root < t->p && nb <= t->inl_max) {
            int st = drain(t, root, nb, theirs, what);
            if (st != NUMACOLL_OK)
                return st;
        }
    }
    return mismatch(t, parent, what);
}

/* The Bcast of this call number that this reader's root made, when it is
 * of another signature and was announced where this rank does not wait: a
 * pipelined claim of the bank use this rank is at, or the inline record
 * of this rank's next inline call in the root's slot (the root keeps both
 * until this rank has read them). 1 and its size and signature, or 0. */
static int root_call(numacoll_team_t *t, int root, size_t *nb, uint32_t *sig)
{
    for (unsigned k = 0; k < t->q_max; k++) {
        nc__bank_t *b = &t->banks[k];
        /* acquire: the claim's fields were stored before its op */
        if (atomic_load_explicit(&b->op, memory_order_acquire) != t->op ||
            atomic_load_explicit(&b->coll, memory_order_relaxed) !=
                NC_COLL_BCAST ||
            atomic_load_explicit(&b->seq, memory_order_relaxed) !=
                t->call_seq ||
            atomic_load_explicit(&b->root, memory_order_relaxed) !=
                (uint64_t)root)
            continue;
        *sig = (uint32_t)atomic_load_explicit(&b->sig32, memory_order_relaxed);
        *nb = (size_t)atomic_load_explicit(&b->nbytes, memory_order_relaxed);
        return *sig != t->sig32;
    }
    /* acquire on the first line's word, stored after the record */
    const uint64_t n = t->inl_seq + 1;
    const unsigned j = (unsigned)(n % NC_INL_SLOTS);
    nc__inl_rec_t *rec = nc__inl_rec(t, root, j);
    uint64_t w = atomic_load_explicit(&nc__inl_line(t, root, j, 0)->word,
                                      memory_order_acquire);
    *sig = (uint32_t)atomic_load_explicit(&rec->sig32, memory_order_relaxed);
    *nb = (size_t)atomic_load_explicit(&rec->nbytes, memory_order_relaxed);
    return (uint32_t)w == (uint32_t)n && (uint32_t)(w >> 32) == *sig &&
           *sig != t->sig32 && *nb <= t->inl_max &&
           atomic_load_explicit(&rec->seq, memory_order_relaxed) ==
               t->call_seq &&
           atomic_load_explicit(&rec->coll, memory_order_relaxed) ==
               NC_COLL_BCAST &&
           atomic_load_explicit(&rec->root, memory_order_relaxed) ==
               (uint64_t)root;
}

static int bcast_lost(numacoll_team_t *t, int peer, const char *what)
{
    const nc__call_t me = unpack_desc(t->call_desc, t->call_nbytes,
                                      t->call_count);
    size_t nb;
    uint32_t sig;
    if (!t->draining && me.coll == NC_COLL_BCAST && me.root != t->rank &&
        me.root >= 0 && me.root < t->p && root_call(t, me.root, &nb, &sig)) {
        int st = drain(t, me.root, nb, sig, what);
        if (st != NUMACOLL_OK)
            return st;
    }
    return mismatch(t, peer, what);
}

static int bcast_mismatch(numacoll_team_t *t, int parent, uint64_t seen,
                          const char *what)
{
    const uint32_t theirs = (uint32_t)(seen >> 32);
    /* Draining a call whose root sent nothing (it refused the call), a
     * word of the root's next call may come first: it is not ours to take
     * (the next call reads it), and nothing is out of step. */
    for (unsigned k = 0; t->draining && k < t->q_max; k++) {
        nc__bank_t *b = &t->banks[k];
        if (atomic_load_explicit(&b->op, memory_order_acquire) == t->op &&
            atomic_load_explicit(&b->sig32, memory_order_relaxed) == theirs &&
            (int64_t)(atomic_load_explicit(&b->seq, memory_order_relaxed) -
                      t->call_seq) > 0)
            return nc__team_fail(t, NUMACOLL_ERR_ARG, "the root of call %llu "
                                 "sent nothing", (unsigned long long)t->call_seq);
    }
    /* Only a Bcast call reads a Bcast call to its end: inside another
     * call (the Bcast half of an Allreduce) this rank's other counters
     * have moved already, and only a resync puts them back in step. */
    const int plain = (t->call_desc & 0xff) == NC_COLL_BCAST;
    for (unsigned k = 0; plain && !t->draining && k < t->q_max; k++) {
        nc__bank_t *b = &t->banks[k];
        /* acquire: the claim's root and size were stored before its op */
        if (atomic_load_explicit(&b->op, memory_order_acquire) != t->op ||
            atomic_load_explicit(&b->sig32, memory_order_relaxed) != theirs ||
            atomic_load_explicit(&b->coll, memory_order_relaxed) !=
                NC_COLL_BCAST ||
            atomic_load_explicit(&b->seq, memory_order_relaxed) != t->call_seq)
            continue;
        int root = (int)atomic_load_explicit(&b->root, memory_order_relaxed);
        size_t nb = (size_t)atomic_load_explicit(&b->nbytes,
                                                 memory_order_relaxed);
        if (root == t->rank || root >= t->p)
            break;
        int st = drain(t, root, nb, theirs, what);
        if (st != NUMACOLL_OK)
            return st;
        break;
    }
    return mismatch(t, parent, what);
}

/* ---- resynchronisation ------------------------------------------------ */

/* One of the three meeting points of a resync: count this rank in and wait
 * until `target` arrivals (over all resyncs so far) are in. */
static int arrive(numacoll_team_t *t, uint64_t target)
{
    uint64_t seen;
    nc__wait_why_t why = {-1, "resynchronisation after mismatched calls",
                          (long)(t->resyncs + 1), 0};
    atomic_fetch_add_explicit(&t->hdr->mm_arrive, 1, memory_order_acq_rel);
    return nc__wait(t, &t->hdr->mm_arrive, NC_WAIT_GE, target, &seen, &why);
}

void nc__team_reset_state(numacoll_team_t *t)
{
    /* this rank's control lines: slots, sync and call lines, inline
     * Allreduce lines, inline Bcast acks, records and slots, reduce slot
     * records; never the data buffers */
    memset(t->base + nc__layout_rank_off(&t->layout, t->rank), 0,
           t->layout.red_ctrl_off +
               (size_t)t->layout.prm.rs * NC_RED_SLOT_LINES * NC_CACHE_LINE);
    /* ... but a team staged for good stays so: a rank that left its last
     * vote in the mismatch votes again, and counts this rank's mark */
    if (t->staged)
        atomic_store_explicit(&nc__sync(t, t->rank)->grow, NC_GROW_STAGED,
                              memory_order_relaxed);
    if (t->rank == 0)
        for (unsigned k = 0; k < t->q_max; k++) {
            nc__bank_t *b = &t->banks[k];
            atomic_store_explicit(&b->op, NC_OP_NONE, memory_order_relaxed);
            atomic_store_explicit(&b->root, 0, memory_order_relaxed);
            atomic_store_explicit(&b->nbytes, 0, memory_order_relaxed);
            atomic_store_explicit(&b->sig32, 0, memory_order_relaxed);
            atomic_store_explicit(&b->coll, 0, memory_order_relaxed);
            atomic_store_explicit(&b->seq, 0, memory_order_relaxed);
            atomic_store_explicit(&b->nreaders, 0, memory_order_relaxed);
        }
    t->op = 0;
    t->barrier_n = 0;   /* the sync lines were zeroed with the others */
    t->cma_calls = t->cma_bytes = 0;
    t->geo_f = t->geo0_f;
    t->geo_s = t->geo0_s;
    t->geo_q = t->geo0_q;
    /* the inline slots were zeroed with the control lines above */
    t->inl_seq = t->inl_ok = 0;
    memset(t->inl_word, 0, sizeof t->inl_word);
    /* the calls before differed: the next one covers no history */
    t->call_next_hist = 0;
    nc__red_reset(t);
}

/*
 * After a mismatch every rank comes here at the start of its next call
 * (those that gave up on the call, and those that had finished their part
 * without noticing, like a Bcast root). Three meetings over the header's
 * arrival counter:
 *  1. each rank has posted the number of the call it starts now;
 *  2. each has read the others' (the largest, M, is where calls resume:
 *     a rank that ran ahead finished calls the others never matched, and
 *     those calls fail on the ranks still behind it), and a rank that
 *     finished the last failed call has said so: then call M fails on
 *     every rank to tell it (told()), and calls resume at M + 1;
 *  3. each has cleared its own control lines (rank 0 the banks) and its
 *     counters, as at creation; nobody reads shared lines in between.
 * Only then does anyone publish a new call.
 */
static int resync(numacoll_team_t *t)
{
    const uint64_t p = (uint64_t)t->p, e = t->resyncs + 1;
    uint64_t next = t->call_seq + 1, m = next;
    t->in_resync = 2;
    t->resync_next = next;
    atomic_store_explicit(&nc__sync(t, t->rank)->resync_seq, next,
                          memory_order_relaxed);
    int rc = arrive(t, (3 * e - 2) * p);
    if (rc == NC_CALL_LATE) {
        t->in_resync = 0;
        return rc;
    }
    t->in_resync = 1;
    /* Everyone is here, so nobody fails calls any more: mm_call is the
     * last failed call. A rank that finished it without failing it (its
     * part needed nobody) says so for all to see after meeting 2. */
    const uint64_t bad = atomic_load_explicit(&t->hdr->mm_call,
                                              memory_order_relaxed),
                   epoch = atomic_load_explicit(&t->hdr->mm_epoch,
                                                memory_order_relaxed);
    const int unaware = rc == NUMACOLL_OK && t->call_seq != 0 &&
                        (int64_t)(bad - t->call_seq) >= 0 &&
                        t->mm_failed != t->call_seq;
    if (unaware)
        atomic_store_explicit(&t->hdr->mm_told, e, memory_order_relaxed);
    for (int r = 0; rc == NUMACOLL_OK && r < t->p; r++) {
        uint64_t v = atomic_load_explicit(&nc__sync(t, r)->resync_seq,
                                          memory_order_relaxed);
        if ((int64_t)(v - m) > 0)
            m = v;
    }
    if (rc == NUMACOLL_OK)
        rc = arrive(t, (3 * e - 1) * p);
    const int tell = rc == NUMACOLL_OK &&
                     atomic_load_explicit(&t->hdr->mm_told,
                                          memory_order_relaxed) == e;
    if (rc == NUMACOLL_OK) {
        nc__team_reset_state(t);
        rc = arrive(t, 3 * e * p);
    }
    t->in_resync = 0;
    if (rc != NUMACOLL_OK)
        return rc;
    t->resyncs = e;
    t->mm_done = epoch;
    t->resume_seq = tell ? m + 1 : m;
    t->told_seq = tell ? m : 0;
    t->told_last = unaware ? t->call_seq : 0;
    return NUMACOLL_OK;
}

const nc__recovery_t nc__call_recovery = {
    .mismatch = mismatch,
    .bcast_mismatch = bcast_mismatch,
    .bcast_mismatch_inline = bcast_mismatch_inline,
    .call_check = call_check,
    .bcast_lost = bcast_lost,
};
