/*
 * Inline Bcast for small messages (up to the largest size an inline rule
 * names, at most NC_BCAST_INLINE_CAP) and every Bcast of 0 bytes, so that
 * a mismatch shows. No read-modify-write on any shared line: every line
 * has one writer.
 *
 * Every rank owns NC_INL_SLOTS slots of il cache lines (team.h,
 * shm_seg/layout.h); inline call n (counted alike on every rank) uses
 * slot n % NC_INL_SLOTS of every rank. A message of m bytes takes
 * L = max(1, ceil(m/56)) lines; each line is self-validating: 56 payload
 * bytes and a word sig32 << 32 | n (release, after the payload), so a
 * reader needs no separate flag and copies chunk by chunk (8 lines)
 * while later chunks are still being written.
 *  root:   if the slot's previous call (n - NC_INL_SLOTS) may still be
 *          read, check every other rank's ack of it (below); write the
 *          slot's record (the call, for a reader of another call), then
 *          the L lines into its own slot, in chunks of 8 lines, each chunk
 *          last line first (its first line's release publishes it).
 *  inner:  as the root's check and record; then per chunk: wait until
 *          the parent's first line of the chunk carries n (acquire; for
 *          line 0 check the signature), copy the chunk's lines into its
 *          own slot in the root's order (release), copy the payload out.
 *  leaf:   the same waits and checks, copy out.
 *  reader: first asks for its buffer's lines (prefetch for writing), so
 *          that a cold buffer's misses run during the wait: on 16 cores,
 *          cold buffers, 8 and 64 bytes took 0.71-1.00x the time.
 *  all:    store the call's word into its own ack line, word n % SLOTS
 *          (release: its copy-out is done).
 *  reader that found line 0 there at its first look in this call and
 *          the last, from the same root: asks for the parent's first
 *          lines of the next two calls (prefetch), so back to back from
 *          one root their transfer overlaps the caller's work between
 *          calls.
 * Acks: before rewriting slot j a writer needs every other rank's ack of
 * the call that last used j. It keeps inl_ok, the latest call all ranks
 * have acked, and reloads the p-1 ack lines only when inl_ok is too old;
 * one reload covers up to NC_INL_SLOTS calls, so back-to-back calls read
 * acks about once per NC_INL_SLOTS - 1 calls. An ack of that call with
 * another signature means that rank was in another call (two ranks that
 * each took themselves for the root, say): a mismatch, found late.
 * Cost, in cache-line transfers on the critical path: L per tree level,
 * pipelined by chunks of 8 lines whose misses overlap, so about
 * depth * ceil(L/8) + 1 line latencies plus the copies of L lines,
 * plus (p-1)/(NC_INL_SLOTS-1) ack lines per call amortised (the reader's
 * own ack is a store to its own line).
 * Shared lines: own slot, ack and records (write), parent's slot (read),
 * every rank's ack line (read, by writers only). Tree and radix come from
 * the team's tuning rule (ch); banks and control slots are untouched, so
 * inline and pipelined calls interleave freely.
 */

#include "coll/algs.h"
#include "coll/copy.h"
#include "coll/op.h"
#include "coll/wait.h"

/* Lines per chunk: one wait each (see the root's and the reader's loops). */
#define CHUNK 8

/* A reader whose root runs ahead asks for the first NC_INL_AHEAD_LINES
 * lines of the next NC_INL_AHEAD calls (the end of the step). */
#define NC_INL_AHEAD 2
#define NC_INL_AHEAD_LINES 4

/* Payload bytes of the line at message offset off (0 past the end). */
static inline size_t line_len(size_t nbytes, size_t off)
{
    return off >= nbytes ? 0
           : nbytes - off < NC_INL_PAYLOAD ? nbytes - off : NC_INL_PAYLOAD;
}

/* Every other rank has finished call n - NC_INL_SLOTS (slot n's previous
 * use), so this rank may rewrite its slot for call n. Rank r's ack word
 * j holds the last call r finished in slot j: that call (compared with
 * this rank's word of it), or a later one. */
static int room(numacoll_team_t *t, uint64_t n)
{
    const uint64_t need = n - NC_INL_SLOTS;
    if (n <= NC_INL_SLOTS || (int64_t)(t->inl_ok - need) >= 0)
        return NUMACOLL_OK;
    uint64_t ok = n - 1;
    for (int r = 0; r < t->p; r++) {
        if (r == t->rank)
            continue;
        nc__inl_ack_t *a = nc__inl_ack(t, r);
        uint64_t k = need;
        /* how far rank r has got among the calls this rank remembers */
        for (; k < n; k++) {
            const unsigned j = (unsigned)(k % NC_INL_SLOTS);
            uint64_t w = atomic_load_explicit(&a->word[j],
                                              memory_order_acquire);
            if (w == t->inl_word[j])
                continue;
            if ((uint32_t)w == (uint32_t)k)
                return nc__mismatch(t, r, "its inline bcast ack shows "
                                    "another call");
            /* a later call in the slot: r finished k before it */
            if ((int32_t)((uint32_t)w - (uint32_t)k) > 0)
                continue;
            break;
        }
        if (k == need) {
            const unsigned j = (unsigned)(need % NC_INL_SLOTS);
            nc__wait_why_t why = {r, "inline bcast ack", (long)j,
                                  (long)need};
            uint64_t w;
            int rc = nc__poll(t, &a->word[j], NC_WAIT_GE32, need, &w, &why);
            if (rc != NUMACOLL_OK)
                return rc;
            if ((uint32_t)w == (uint32_t)need && w != t->inl_word[j])
                return nc__mismatch(t, r, "its inline bcast ack shows "
                                    "another call");
            k = need + 1;
        }
        if (k - 1 < ok)
            ok = k - 1;
    }
    t->inl_ok = ok;
    return NUMACOLL_OK;
}

/* As steps: a writer's step returns NC_AGAIN in room() (it scans the acks
 * again when called back: nothing before is written), a reader's at the
 * first line of chunk o->b.k (the chunks before are forwarded and copied
 * out). */
int nc__bcast_inline_step(numacoll_team_t *t, nc__op_t *o)
{
    const nc__choice_t *ch = o->bc.ch;
    const size_t nbytes = o->bc.nbytes;
    const int root = o->bc.root;
    nc__io_t *io = &o->bc.io;
    if (nbytes > t->inl_max)
        return nc__team_fail(t, NUMACOLL_ERR_ARG, "inline bcast of %zu "
                             "bytes: the team's inline slots hold %zu",
                             nbytes, t->inl_max);
    const uint64_t n = t->inl_seq + 1;
    const unsigned j = (unsigned)(n % NC_INL_SLOTS);
    const unsigned lines = nbytes ? (unsigned)((nbytes + NC_INL_PAYLOAD - 1) /
                                               NC_INL_PAYLOAD) : 1;
    const uint64_t want = (uint64_t)t->sig32 << 32 | (uint32_t)n;
    int parent;
    const int nchild = nc__bcast_kin(t, ch, root, NULL, &parent, NULL);
    int rc;

    if (o->phase == 0 && io->buf && t->rank != root)
        nc__prefetch_w(io->buf, nbytes, NC_PREFETCH_SMALL);   /* the wait */
    if (o->phase == 0 && (nchild > 0 || t->rank == root)) {
        if ((rc = room(t, n)) != NUMACOLL_OK)
            return rc;
        /* what a reader of another call drains (nc__bcast_mismatch_inline);
         * published by the first line's release store */
        nc__inl_rec_t *rec = nc__inl_rec(t, t->rank, j);
        atomic_store_explicit(&rec->root, (uint64_t)root, memory_order_relaxed);
        atomic_store_explicit(&rec->nbytes, nbytes, memory_order_relaxed);
        atomic_store_explicit(&rec->coll,
                              t->draining ? (uint64_t)NC_COLL_BCAST
                                          : t->call_desc & 0xff,
                              memory_order_relaxed);
        atomic_store_explicit(&rec->seq, t->call_seq, memory_order_relaxed);
        atomic_store_explicit(&rec->sig32, t->sig32, memory_order_relaxed);
    }
    if (o->phase == 0) {
        o->b.k = 0;
        o->b.late = 0;
        o->phase = 1;
    }
    if (t->rank == root) {
        unsigned char tmp[CHUNK * NC_INL_PAYLOAD];
        for (unsigned c0 = 0; c0 < lines; c0 += CHUNK) {
            const unsigned c1 = c0 + CHUNK < lines ? c0 + CHUNK : lines;
            const size_t coff = (size_t)c0 * NC_INL_PAYLOAD;
            const size_t cend = (size_t)c1 * NC_INL_PAYLOAD < nbytes
                                    ? (size_t)c1 * NC_INL_PAYLOAD : nbytes;
            /* pack callbacks see their offsets in order: stage the chunk */
            if (!io->buf && cend > coff)
                nc__io_pack(io, coff, tmp, cend - coff);
            /* a chunk's lines last to first: the release store of its
             * first line's word then publishes the whole chunk */
            for (unsigned k = c1; k-- > c0;) {
                nc__inl_line_t *l = nc__inl_line(t, t->rank, j, k);
                size_t off = (size_t)k * NC_INL_PAYLOAD;
                size_t len = line_len(nbytes, off);
                /* a whole line of a contiguous buffer: a fixed-size copy
                 * the compiler inlines; a part of one: memcpy (the copy
                 * layer's variants differ only far above a line) */
                if (len == NC_INL_PAYLOAD && io->buf)
                    memcpy(l->data, io->buf + off, NC_INL_PAYLOAD);
                else if (len && io->buf)
                    nc__copy_line_in(l->data, io->buf + off, len);
                else if (len)
                    memcpy(l->data, tmp + (off - coff), len);
                atomic_store_explicit(&l->word, want, memory_order_release);
            }
        }
    } else {
        for (; o->b.k < lines; o->b.k += CHUNK) {
            const unsigned c0 = o->b.k;
            const unsigned c1 = c0 + CHUNK < lines ? c0 + CHUNK : lines;
            /* One wait per chunk, on its first line (written last): the
             * chunk's misses then overlap. Line 0's signature says whether
             * this is our call at all. */
            nc__inl_line_t *src = nc__inl_line(t, parent, j, c0);
            nc__wait_why_t why = {parent, "inline bcast line", (long)c0,
                                  (long)n};
            uint64_t seen;
            if (c0 == 0 &&
                !nc__cond_holds(atomic_load_explicit(&src->word,
                                                     memory_order_relaxed),
                                NC_WAIT_GE32, n))
                o->b.late = 1;
            rc = nc__poll(t, &src->word, NC_WAIT_GE32, n, &seen, &why);
            if (rc != NUMACOLL_OK)
                return rc;
            if (seen != want)
                return c0 == 0 ? nc__bcast_mismatch_inline(
                                     t, parent, j, seen,
                                     "its inline bcast differs")
                               : nc__mismatch(t, parent, "its inline bcast "
                                              "changed signature mid-call");
            /* forward first, in the parent's order: children start while
             * we copy out */
            for (unsigned k = c1; nchild > 0 && k-- > c0;) {
                nc__inl_line_t *dst = nc__inl_line(t, t->rank, j, k);
                memcpy(dst->data, nc__inl_line(t, parent, j, k)->data,
                       NC_INL_PAYLOAD);
                atomic_store_explicit(&dst->word, want, memory_order_release);
            }
            for (unsigned k = c0; k < c1; k++) {
                const nc__inl_line_t *l = nc__inl_line(t, parent, j, k);
                size_t off = (size_t)k * NC_INL_PAYLOAD;
                size_t len = line_len(nbytes, off);
                if (len == NC_INL_PAYLOAD && io->buf)
                    memcpy(io->buf + off, l->data, NC_INL_PAYLOAD);
                else if (len && io->buf)
                    memcpy(io->buf + off, l->data, len);
                else if (len)
                    nc__io_unpack(io, off, l->data, len);
            }
        }
    }
    /* our copies out of the parent's slot are done before it may reuse it */
    atomic_store_explicit(&nc__inl_ack(t, t->rank)->word[j], want,
                          memory_order_release);
    t->inl_word[j] = want;
    t->inl_seq = n;
    /* A reader that found the call's first line there at its first look,
     * twice in a row from the same root: that root runs ahead (calls back
     * to back from one root), so ask for its parent's first lines of the
     * next NC_INL_AHEAD calls now, and their transfer overlaps what the
     * caller does between calls, as the hardware prefetcher does for
     * tuned's eager FIFO (OSU-style loop on the VM, p = 2, reused
     * buffers, back to back: 8 B 0.13-0.18 us a call against 0.16-0.25
     * without, 64 B 0.15-0.20 against 0.19-0.24, tuned 0.10-0.16 and
     * 0.18-0.30; with a barrier before each call 0.94-0.96x, cold buffers
     * back to back from root 0 1.02-1.05x). Not where the root changes
     * from call to call: the lines asked for would then be ones their
     * writer is about to rewrite, and its stores would first have to take
     * them back. */
    t->inl_ahead = t->rank != root && !o->b.late && root == t->inl_root
                       ? t->inl_ahead + 1
                       : 0;
    if (t->inl_ahead >= 2)
        for (unsigned a = 1; a <= NC_INL_AHEAD; a++)
            for (unsigned k = 0; k < lines && k < NC_INL_AHEAD_LINES; k++)
                __builtin_prefetch(
                    nc__inl_line(t, parent,
                                 (unsigned)((n + a) % NC_INL_SLOTS), k),
                    0, 3);
    t->inl_root = root;
    return NUMACOLL_OK;
}
