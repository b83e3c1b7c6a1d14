/*
 * Barrier: two algorithms, one per team (its rule, looked up at size 0,
 * is taken at team creation).
 *
 * tree: fan-in then fan-out along the Barrier's own tree, rooted at rank
 * 0 and independent of the Bcast's `tree`: the hier shape of coll/tree.h
 * with k = barrier_radix both inside NUMA nodes and between them, so the
 * ranks of a node meet their leader first (k-nomial) and the leaders meet
 * rank 0 along a k-nomial tree over the nodes (over the domains of every
 * level of `levels`; the Barrier rule's l3tree= ... toptree= give a level
 * another shape). Parent and children are computed once, at team
 * creation.
 *
 *  leaf:   store arrive = w (release), wait for release >= w (acquire);
 *          w = seq << 24 | 24 bits of the call's signature (barrier_word).
 *  inner:  wait for each child's arrive >= w, then as a leaf, then store
 *          release = w in each child's line.
 *  root:   wait for its children's arrive, then release them.
 * Each rank owns two sync lines: `arrive`, written by the rank when its
 * subtree has arrived and read by its parent, and `release`, written by
 * the parent and polled by the rank. Values are the call's number seq
 * (coll/call.c: they grow, with gaps) over bits of its signature,
 * awaited rollover-safely (GE) and then required equal: a child cannot
 * arrive at a later barrier before its parent has released it from this
 * one, nor a parent release a later one before the child arrives, so a
 * larger number is a mismatched call, and so is another signature (ranks
 * whose calls before differed unseen: the signature below the number
 * keeps GE's order, whereas over it, with a GE on the low half, small
 * Barriers and Bcasts back to back took 15% longer on the VM).
 * The release/acquire pairs make everything a rank wrote before entering
 * visible to every rank after it leaves.
 * Cost: 2 * depth * t_l + (k-1) polls per level, depth = ceil(log_k n)
 * inside a node plus ceil(log_k nodes) between leaders.
 *
 * dissem: k-way dissemination (Hensgen, Finkel and Manber's, with k - 1
 * partners a round), on lines that only their owner writes.
 *  every rank, round i = 0 .. R-1 (R = ceil(log_k p), d = k^i): store
 *          (seq, signature, i) in its own line (release), then wait for
 *          the lines of ranks r - j*d mod p, j = 1 .. k-1 with j*d < p, to
 *          show (seq, signature, i) or a later round of the same call
 *          (acquire).
 * After round i a rank has heard, directly or through its partners'
 * earlier rounds, from the k^(i+1) ranks below it, so after R rounds from
 * all; the release/acquire chain carries every rank's writes to every
 * rank. The line is the rank's `arrive` for even Barriers and `release`
 * for odd ones (the team's count of Barriers, reset by a resync): a rank
 * rewrites a line only at the Barrier after next, which it cannot enter
 * before every rank has left this one, so no reader misses a value. A
 * line showing another call's number is a mismatch. With k >= p it is one
 * round: every rank stores its line and reads everyone's.
 * Cost: R * t_l + (k-1) polls per round, no read-modify-write; at p = 2
 * one line transfer, the tree's two.
 *
 * Shared slots: own and children's (tree) or partners' (dissem) sync
 * lines. Tuned by the rule's alg and k (barrier_radix overrides k).
 */
#include <stdlib.h>

#include "coll/op.h"
#include "coll/wait.h"

/* bits of the call's signature under its number: GE orders by the
 * number, equality compares both. The word stays below 2^63 (a zeroed
 * line below it for GE) for 2^(63 - bits) calls on a team: the tree's
 * 24 bits 2^39, dissem's 16 (and 6 of round) 2^41. */
static inline uint64_t barrier_word(const numacoll_team_t *t, unsigned bits)
{
    return t->call_seq << bits | (t->sig32 >> (32 - bits));
}

int nc__barrier_init(numacoll_team_t *t)
{
    /* Barrier has no size: its rule is the one for 0 bytes */
    const nc__choice_t *ch = nc__team_choice(t, NC_COLL_BARRIER, 0);
    int k = (int)ch->k;
    t->barrier_alg = (int)ch->alg;
    t->barrier_k = (unsigned)(k < t->p ? k : t->p > 1 ? t->p : 2);
    t->barrier_rounds = 0;
    for (long long reach = 1; reach < t->p; reach *= t->barrier_k)
        t->barrier_rounds++;
    t->barrier_n = 0;
    int rc = nc__tree_init_spec(&t->barrier_tree, t->p, k, k, ch->lt,
                                t->cfg.levels, t->doms);
    if (rc != NUMACOLL_OK)
        return rc;
    t->barrier_children = malloc(
        (size_t)(nc__tree_max_children(&t->barrier_tree) + 1) *
        sizeof *t->barrier_children);
    if (!t->barrier_children)
        return NUMACOLL_ERR_NOMEM;
    t->barrier_parent = nc__tree_parent(&t->barrier_tree, 0, t->rank);
    t->barrier_nchild = nc__tree_children(&t->barrier_tree, 0, t->rank,
                                          t->barrier_children);
    return NUMACOLL_OK;
}

void nc__barrier_fini(numacoll_team_t *t)
{
    nc__tree_fini(&t->barrier_tree);
    free(t->barrier_children);
    t->barrier_children = NULL;
}

/* As steps: o->b.idx counts the children that have arrived (phase 1),
 * o->phase is 2 once this rank has arrived at its parent (it then waits
 * for release). */
static int tree_step(numacoll_team_t *t, nc__op_t *o)
{
    /* The call's data word (its number, not a count of barriers, under
     * its signature), compared for equality: a child's arrive cannot pass
     * it before we release it, nor a parent's release before we arrive,
     * so another value is another call's Barrier (mismatched calls). A
     * resync zeroes the lines while the numbers go on growing. */
    const uint64_t w = barrier_word(t, 24), seq = t->call_seq;
    const int nchild = t->barrier_nchild, parent = t->barrier_parent;
    const int *kids = t->barrier_children;
    nc__sync_t *me = nc__sync(t, t->rank);
    uint64_t seen;
    int rc;

    if (o->phase == 0) {
        o->b.idx = 0;
        o->phase = 1;
    }
    if (o->phase == 1) {
        for (; (int)o->b.idx < nchild; o->b.idx++) {
            const int c = kids[o->b.idx];
            nc__wait_why_t why = {c, "barrier arrive", (long)seq, 0};
            rc = nc__poll(t, &nc__sync(t, c)->arrive, NC_WAIT_GE, w, &seen,
                          &why);
            if (rc == NUMACOLL_OK && seen != w)
                rc = nc__mismatch(t, c, "it arrived at another barrier");
            if (rc != NUMACOLL_OK)
                return rc;
        }
        /* our subtree's arrival (and everything before it) before arrive */
        if (parent >= 0)
            atomic_store_explicit(&me->arrive, w, memory_order_release);
        o->phase = 2;
    }
    if (parent >= 0) {
        nc__wait_why_t why = {parent, "barrier release", (long)seq, 0};
        rc = nc__poll(t, &me->release, NC_WAIT_GE, w, &seen, &why);
        if (rc == NUMACOLL_OK && seen != w)
            rc = nc__mismatch(t, parent, "it released another barrier");
        if (rc != NUMACOLL_OK)
            return rc;
    }
    for (int c = 0; c < nchild; c++)
        atomic_store_explicit(&nc__sync(t, kids[c])->release, w,
                              memory_order_release);
    return NUMACOLL_OK;
}

/* A dissem line's value: barrier_word and the round (+ 1, so that a
 * zeroed line is below every round of every call). */
static inline uint64_t dissem_word(const numacoll_team_t *t, unsigned round)
{
    return barrier_word(t, 16) << 6 | (round + 1);
}

/* Rank r's dissem line for Barriers of this parity. */
static inline _Atomic uint64_t *dissem_line(const numacoll_team_t *t, int r,
                                            uint64_t parity)
{
    nc__sync_t *s = nc__sync(t, r);
    return parity ? &s->release : &s->arrive;
}

/* As steps: o->b.k is the round in hand, o->b.idx the partners of that
 * round already seen, o->b.base the parity of this Barrier (phase 1: the
 * round's line is stored). */
static int dissem_step(numacoll_team_t *t, nc__op_t *o)
{
    const uint64_t seq = t->call_seq;
    const int p = t->p;
    const unsigned k = t->barrier_k;
    if (o->phase == 0) {
        o->b.k = 0;
        o->b.idx = 0;
        o->b.base = t->barrier_n++ & 1;   /* which line this call writes */
        o->phase = 1;
        if (t->barrier_rounds > 0)
            /* everything before it, and every round heard so far */
            atomic_store_explicit(dissem_line(t, t->rank, o->b.base),
                                  dissem_word(t, 0), memory_order_release);
    }
    long long d = 1;
    for (unsigned i = 0; i < o->b.k; i++)
        d *= k;
    while (o->b.k < t->barrier_rounds) {
        for (; o->b.idx + 1 < k && (long long)(o->b.idx + 1) * d < p;
             o->b.idx++) {
            /* rank - (idx+1)*d mod p, the offset below p (the loop's
             * test): no division, which costs tens of cycles on the way
             * from one Barrier to the next */
            int j = t->rank - (int)((long long)(o->b.idx + 1) * d);
            if (j < 0)
                j += p;
            nc__wait_why_t why = {j, "barrier round", (long)seq,
                                  (long)o->b.k};
            uint64_t seen;
            const uint64_t want = dissem_word(t, o->b.k);
            int rc = nc__poll(t, dissem_line(t, j, o->b.base), NC_WAIT_GE,
                              want, &seen, &why);
            /* this call's round or a later one of it, nothing else */
            if (rc == NUMACOLL_OK && seen >> 6 != want >> 6)
                rc = nc__mismatch(t, j, "it is in another barrier");
            if (rc != NUMACOLL_OK)
                return rc;
        }
        o->b.k++;
        o->b.idx = 0;
        d *= k;
        if (o->b.k < t->barrier_rounds)
            atomic_store_explicit(dissem_line(t, t->rank, o->b.base),
                                  dissem_word(t, o->b.k),
                                  memory_order_release);
    }
    return NUMACOLL_OK;
}

int nc__barrier_step(numacoll_team_t *t, nc__op_t *o)
{
    return t->barrier_alg == NC_ALG_BARRIER_DISSEM ? dissem_step(t, o)
                                                   : tree_step(t, o);
}
