/*
 * Pipelined copy-in/copy-out Bcast (seed 002, section 4.2, with the
 * corrections of DESIGN.md section 3).
 *
 * The root's s fragment buffers (on the root's NUMA node) form q banks of
 * s/q buffers. Per bank use, numbered by `op` (the same on every rank):
 *  root:   wait until the bank's nreaders is 0 (every reader of its previous
 *          use is done), set nreaders = p-1, publish op, then for each
 *          buffer of the bank: copy in f bytes, set each tree child's
 *          control slot to the fragment length under the call's signature
 *          (nc__dword, release). It never waits at
 *          the end: it returns once the last fragment is in.
 *  inner:  for each buffer: wait for its own control slot (acquire), clear
 *          it, forward the length to its children first, then copy the
 *          fragment out of the ROOT's buffer; after the bank, decrement
 *          nreaders (release).
 *  leaf:   as inner, with no children.
 *  every non-root first asks for the first 4 KiB of its buffer (prefetch
 *          for writing): a cold buffer's misses and TLB miss then run
 *          during its first wait (on the VM, malloc'd cold buffers, 256 B
 *          to 8 KiB took 0.5-0.85x the time in the application's loop,
 *          0.7-0.95x back to back; reused buffers: no change).
 * The tree carries notifications only; every rank reads the root's queue,
 * unless the rule says relay=1 (tree=numa over at least one kept level):
 *  relay:  the head of an innermost domain without the root, after its
 *          control slot, copies the fragment from its tree parent's copy
 *          (the root's or another relay's queue, one level out) into the
 *          same buffer of its own queue, then forwards the length and
 *          copies out of its own buffer;
 *  member: reads its innermost domain's head's copy (the root's domain
 *          reads the root's), so only the heads' copies cross domains.
 * (nc__tree_relay_source says who reads whom.) The relays' buffers need no
 * bookkeeping of their own: a relay writes buffer idx of a bank only in a
 * use the root has claimed, and the root claims a use only when all p-1
 * readers of the previous one (the relay's members among them) are done.
 *
 * Cost (DESIGN.md section 4), m bytes, b = s*f, t per byte, t_W the depth of
 * the tree in notification hops, t_WO / t_A bank wait and atomic:
 *   T(m, s, q) = q*ceil(m/b)*(t_WO + t_A) + f*t + ceil(m/f)*t_W + m*t
 * and with relay, per kept level on the way, f*t more before a relay's
 * children hear of a fragment; in exchange a member's m*t reads lines of
 * its own domain.
 * Shared slots: reads root buffers (with relay: its source's) and own
 * control slots, writes children's control slots, bank op/nreaders (and
 * a relay its own buffers). f, s, q, tree, radix and relay come from the
 * team's tuning rule for the size (ch); the caller has made (f, s, q) the
 * geometry in force (nc__bcast_geometry).
 */
#include "coll/op.h"
#include "coll/wait.h"

/*
 * Root side of a bank use: wait until every reader of the bank's previous
 * use is done (nreaders == 0, acquire), then announce p-1 new readers and
 * publish the op number. Readers learn of the use only through release
 * stores the root issues after this, so relaxed is enough for nreaders.
 */
static int nc__bank_claim(numacoll_team_t *t, unsigned set)
{
    nc__bank_t *bank = &t->banks[set];
    nc__wait_why_t why = {-1, "drained bank", (long)set, (long)t->op};
    uint64_t seen;
    /* claiming stays set while the driver waits (NC_AGAIN): its checks
     * read it (nc__call_check); the driver clears it if the wait fails */
    t->claiming = 1;
    int rc = nc__poll(t, &bank->nreaders, NC_WAIT_EQ, 0, &seen, &why);
    if (rc == NC_AGAIN)
        return rc;
    t->claiming = 0;
    if (rc != NUMACOLL_OK)
        return rc;
    /* a compare-and-swap, not a store: two ranks that both think they are
     * the root (mismatched calls) must not both take the bank */
    uint64_t zero = 0;
    if (!atomic_compare_exchange_strong_explicit(
            &bank->nreaders, &zero, (uint64_t)(t->p - 1),
            memory_order_relaxed, memory_order_relaxed))
        return nc__mismatch(t, -1, "another rank took the bank as a root");
    atomic_store_explicit(&bank->root, (uint64_t)t->rank, memory_order_relaxed);
    atomic_store_explicit(&bank->coll, (uint64_t)(t->call_desc & 0xff),
                          memory_order_relaxed);
    atomic_store_explicit(&bank->seq, t->call_seq, memory_order_relaxed);
    atomic_store_explicit(&bank->nbytes, t->call_nbytes, memory_order_relaxed);
    atomic_store_explicit(&bank->sig32, t->sig32, memory_order_relaxed);
    atomic_store_explicit(&bank->op, t->op, memory_order_release);
    return NUMACOLL_OK;
}

/* Position (o->b): sent bytes, the bank of t->op entered (in_bank) and
 * its next buffer (idx). A step returns NC_AGAIN at a bank claim (root)
 * or a control slot (reader) and resumes there. */
int nc__bcast_pipelined_step(numacoll_team_t *t, nc__op_t *o)
{
    const nc__choice_t *ch = o->bc.ch;
    const unsigned q = ch->q, per_bank = ch->s / q;
    const size_t f = ch->f, nbytes = o->bc.nbytes;
    const int root = o->bc.root;
    const nc__tree_t *tree;
    int parent;
    const int *kids;
    const int nchild = nc__bcast_kin(t, ch, root, &tree, &parent, &kids);
    /* whose queue this rank reads; a relay (src = parent) copies into its
     * own first */
    const int src = ch->relay ? nc__tree_relay_source(tree, root, t->rank)
                              : root;
    const int relay = ch->relay && nc__tree_relays(tree, root, t->rank);
    nc__bcast_pos_t *b = &o->b;
    nc__io_t *io = &o->bc.io;
    uint64_t seen;
    int rc;

    if (o->phase == 0) {
        b->sent = 0;
        b->in_bank = 0;
        o->phase = 1;
        /* as the inline readers: a cold buffer's first lines miss while
         * this rank waits for the first fragment */
        if (io->buf && t->rank != root)
            nc__prefetch_w(io->buf, nbytes, NC_PREFETCH_MAX);
        /* a root whose call is many times its queue long chooses its
         * copy-in by whole calls (coll/copy.h), readers' time included;
         * blocking calls only: a nonblocking one's time holds whatever
         * the application did between its progress calls; and not for
         * pack callbacks, whose copies are theirs and whose time would
         * steer the contiguous calls' choice */
        b->call = 0;
        if (t->rank == root && t->blocking && io->buf &&
            io->cin == NC_COPY_ADAPT_READ &&
            nbytes >= NC_COPY_CALL_MIN && nbytes >= 4 * (size_t)ch->s * f) {
            io->cin = nc__copy_call_pick(nbytes);
            b->call = (uint64_t)io->cin + 1;
            b->seen = nc__copy_clock();
        }
    }
    while (b->sent < nbytes) {
        const unsigned set = (unsigned)(t->op % q), first = set * per_bank;
        if (!b->in_bank) {
            if (t->rank == root &&
                (rc = nc__bank_claim(t, set)) != NUMACOLL_OK)
                return rc;
            b->in_bank = 1;
            b->idx = first;
        }
        if (t->rank == root) {
            for (; b->idx < first + per_bank && b->sent < nbytes; b->idx++) {
                const unsigned idx = b->idx;
                size_t n = nbytes - b->sent < f ? nbytes - b->sent : f;
                nc__io_pack(io, b->sent, nc__buf(t, root, idx, f), n);
                /* the fragment must be visible before its length */
                for (int c = 0; c < nchild; c++)
                    atomic_store_explicit(&nc__ctrl(t, kids[c], idx)->word,
                                          nc__dword(t, n), memory_order_release);
                nc__wake(t);   /* children may sleep: a pipeline */
                b->sent += n;
            }
        } else {
            for (; b->idx < first + per_bank && b->sent < nbytes; b->idx++) {
                const unsigned idx = b->idx;
                nc__ctrl_t *mine = nc__ctrl(t, t->rank, idx);
                nc__wait_why_t why = {parent, "control slot", (long)idx,
                                      (long)t->op};
                rc = nc__poll(t, &mine->word, NC_WAIT_NONZERO, 0, &seen, &why);
                if (rc != NUMACOLL_OK)
                    return rc;
                size_t want = nbytes - b->sent < f ? nbytes - b->sent : f;
                if (seen != nc__dword(t, want))
                    return nc__bcast_mismatch(t, parent, seen,
                                              "its bcast fragment differs");
                /* Cleared before our decrement below, and nobody writes the
                 * slot again before the root has seen that decrement. */
                atomic_store_explicit(&mine->word, 0, memory_order_relaxed);
                const unsigned char *from = nc__buf(t, src, idx, f);
                if (relay) {
                    /* our members read this copy: in the queue before
                     * they hear of the fragment (the release below) */
                    unsigned char *own = nc__buf(t, t->rank, idx, f);
                    nc__copy(io->cin, own, from, want);
                    from = own;
                }
                /* forward first: children start while we copy */
                for (int c = 0; c < nchild; c++)
                    atomic_store_explicit(&nc__ctrl(t, kids[c], idx)->word,
                                          seen, memory_order_release);
                nc__wake(t);
                nc__io_unpack(io, b->sent, from, want);
                b->sent += want;
            }
            /* our copies out of the bank are done before the root may reuse it */
            nc__bank_release(t, set);
        }
        b->in_bank = 0;
        t->op++;
    }
    if (b->call)
        nc__copy_call_note(nbytes, (int)b->call - 1,
                           nc__copy_clock() - b->seen);
    return NUMACOLL_OK;
}
