/*
 * Allreduce as a reduce-scatter in shared memory followed by an allgather,
 * for large messages (the built-in table: from 1 KiB on).
 *
 * The message goes in rounds of one chunk: the most elements that fit in a
 * staging slot (rf = the rule's f bytes) in whole units, a unit being
 * the fewest elements whose size is a multiple of the 64-byte cache line.
 * Round r takes ticket g = base + r and slot x = g % s on every rank (s
 * the rule's slot count). A
 * chunk is split into p slices of whole units (so slices never share a
 * cache line), slice j owned by the j-th rank in NUMA-group order: the
 * ranks of a node own one contiguous part of each chunk. There is no root:
 * every rank does the same three steps per round.
 *  stage:   claim its slot x, copy its chunk into it except its own slice
 *           (nobody else reads that), publish full = g + 1 (release).
 *  combine: wait for every other rank's full (acquire), fold slice j of
 *           all p contributions in rank order -- its own straight from its
 *           send buffer -- into its own slot's slice j, copy that to its
 *           receive buffer, publish done = g + 1 (release).
 *  gather:  for every other slice, wait for its owner's done, copy the
 *           slice from the owner's slot to its receive buffer; then
 *           release every other rank's slot x (it read one slice of each
 *           in combine and one in gather).
 * With copy=ntall (not in place) combine folds straight into the receive
 * buffer and streams the slice into the slot, and stage streams too: all
 * that crosses between ranks then goes through memory, not through the
 * writer's cache, which pays where the cores are far apart.
 * Each rank runs combine(r), stage(r+1), gather(r): the staging of the
 * next round fills the time the slowest owner needs to finish combining
 * this one. (With s = 1 stage(r+1) would wait for releases that follow
 * gather(r) on the other ranks, which wait for ours: it then comes after
 * gather(r).) The fold order is rank order for every slice, whatever the
 * arrival order, so the result is bitwise equal on every rank and run, and
 * a non-commutative op gets x_0 op ... op x_(p-1).
 *
 * NUMA: each owner reads slice j from all p queues, the remote ones once
 * per remote rank; the allgather reads each slice once from its owner.
 * Per rank and round: copy-in (p-1)/p of a chunk, combine 1/p (reading p
 * slices), copy-out 1 chunk.
 *
 * Cost, m bytes, n = ceil(m/rf) rounds, t per byte, t_l a line transfer:
 *   T ~ n * (2*t_l + rf*t*(1 + 2/p) + (p-1) * t_l / overlap) + m*t
 * i.e. about 2 m t for large m, independent of p except through memory
 * bandwidth. Shared slots: writes its own slots (data, full, done) and
 * everyone's rel; reads everyone's full, done and data. Tuned by the
 * rule's f and s (reduce_frag_size and reduce_depth override them).
 */
#include <string.h>

#include "coll/reduce/reduce.h"

typedef struct rsag {
    numacoll_team_t *t;
    const nc__red_op_t *op;
    const unsigned char *own;
    unsigned char *recv;
    size_t count, elem, unit, chunk;
    uint64_t base;
    unsigned slots;     /* s of the rule: ticket g uses slot g % slots */
    int cin, cout;      /* copy-layer variants into slots, into recv     */
    int via_memory;     /* copy=ntall: results reach the others through
                         * memory (see combine)                          */
} rsag_t;

/* Operands of the fold: rank j's slice, ours from the send buffer. */
typedef struct env {
    numacoll_team_t *t;
    const unsigned char *own;
    size_t off;
    unsigned x;
} env_t;

static int get_slice(void *vp, int j, const void **ptr)
{
    env_t *e = vp;
    /* every full was awaited before the fold */
    *ptr = j == e->t->rank ? (const void *)e->own
                           : (const void *)(nc__rbuf(e->t, j, e->x) + e->off);
    return NUMACOLL_OK;
}

static void put_slice(void *vp, int j)
{
    (void)vp, (void)j;   /* released after gather, once per slot */
}

static size_t gcd(size_t a, size_t b)
{
    while (b) {
        size_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* Elements [*lo, *hi) of slice j in a round of ne elements. */
static void slice_of(const rsag_t *s, size_t ne, int j, size_t *lo,
                     size_t *hi)
{
    size_t p = (size_t)s->t->p, units = (ne + s->unit - 1) / s->unit;
    size_t a = units * (size_t)j / p * s->unit;
    size_t b = units * (size_t)(j + 1) / p * s->unit;
    *lo = a < ne ? a : ne;
    *hi = b < ne ? b : ne;
}

static void round_of(const rsag_t *s, size_t r, uint64_t *g, unsigned *x,
                     size_t *e0, size_t *ne)
{
    *g = s->base + r;
    *x = (unsigned)(*g % s->slots);
    *e0 = r * s->chunk;
    *ne = s->count - *e0 < s->chunk ? s->count - *e0 : s->chunk;
}

/* Claim slot x of round r and stage our chunk in it (the step resumes at
 * the claim: nothing is written before it succeeds). */
static int stage(rsag_t *s, size_t r)
{
    numacoll_team_t *t = s->t;
    uint64_t g;
    unsigned x;
    size_t e0, ne, lo, hi;
    round_of(s, r, &g, &x, &e0, &ne);
    slice_of(s, ne, t->red->my_slice, &lo, &hi);
    int rc = nc__rslot_claim(t, x);
    if (rc != NUMACOLL_OK)
        return rc;
    unsigned char *slot = nc__rbuf(t, t->rank, x);
    const unsigned char *src = s->own + e0 * s->elem;
    nc__copy(s->cin, slot, src, lo * s->elem);
    nc__copy(s->cin, slot + hi * s->elem, src + hi * s->elem,
             (ne - hi) * s->elem);
    nc__rslot_publish(t, x, g, (unsigned)(t->p - 1));
    return NUMACOLL_OK;
}

/* Wait for every other rank's full (P->i: the peers seen), then fold our
 * slice; the fold itself never waits. */
static int combine(rsag_t *s, size_t r, nc__red_pos_t *P)
{
    numacoll_team_t *t = s->t;
    uint64_t g;
    unsigned x;
    size_t e0, ne, lo, hi;
    round_of(s, r, &g, &x, &e0, &ne);
    slice_of(s, ne, t->red->my_slice, &lo, &hi);
    /* Every full, even with an empty slice of ours: a release may only
     * follow the sight of the use it releases (reduce.h). */
    for (; P->i < t->p; P->i++) {
        int peer = (t->rank + P->i) % t->p;
        int rc = nc__rslot_wait_full(t, peer, x, g);
        if (rc != NUMACOLL_OK)
            return rc;
    }
    if (hi > lo) {
        size_t off = lo * s->elem, n = (hi - lo) * s->elem;
        unsigned char *slot = nc__rbuf(t, t->rank, x) + off;
        unsigned char *out = s->recv + e0 * s->elem + off;
        env_t e = {t, s->own + e0 * s->elem + off, off, x};
        nc__fold_t f = {t->p, get_slice, put_slice, &e, s->cin};
        int done = 0;
        /* Through memory: fold straight into our receive buffer, then
         * stream the slice into the slot, so the others read it from
         * memory rather than from our cache (where cores are far apart
         * that is the slow path). Else fold into the slot, copy it out. */
        int rc = nc__fold_step(s->op, &f, s->via_memory ? out : slot, hi - lo,
                               &done);
        if (rc != NUMACOLL_OK)
            return rc;
        if (s->via_memory)
            nc__copy(NC_COPY_NT, slot, out, n);
        else
            nc__copy(s->cout, out, slot, n);
    }
    /* our slice must be visible before done */
    atomic_store_explicit(&nc__rslot(t, t->rank, x)->done, nc__dword(t, g + 1),
                          memory_order_release);
    return NUMACOLL_OK;
}

/* Copy every other slice once its owner has published it (P->i: slices
 * handled), then release every other rank's slot. */
static int gather(rsag_t *s, size_t r, nc__red_pos_t *P)
{
    numacoll_team_t *t = s->t;
    struct nc__red *R = t->red;
    uint64_t g, seen;
    unsigned x;
    size_t e0, ne, lo, hi;
    round_of(s, r, &g, &x, &e0, &ne);
    /* start after our own slice so owners are not all read in one order */
    for (; P->i < t->p; P->i++) {
        int j = (R->my_slice + P->i) % t->p, owner = R->slice_rank[j];
        slice_of(s, ne, j, &lo, &hi);
        if (hi == lo)
            continue;
        nc__wait_why_t why = {owner, "reduce slice done", (long)x, (long)g};
        int rc = nc__poll(t, &nc__rslot(t, owner, x)->done, NC_WAIT_EQ,
                          nc__dword(t, g + 1), &seen, &why);
        if (rc != NUMACOLL_OK)
            return rc;
        nc__copy(s->cout, s->recv + (e0 + lo) * s->elem,
                 nc__rbuf(t, owner, x) + lo * s->elem, (hi - lo) * s->elem);
    }
    for (int i = 1; i < t->p; i++)
        nc__rslot_release(t, (t->rank + i) % t->p, x);
    return NUMACOLL_OK;
}

/* The parts of round k (o->r.part), in the order a rank runs them:
 * combine(k), stage(k+1) while the slowest owner combines, gather(k); with
 * one slot stage(k+1) after gather(k) (see the top of the file). */
enum { STAGE0, COMBINE, STAGE_AHEAD, GATHER, STAGE_AFTER, NEXT };

int nc__allreduce_rsag_step(numacoll_team_t *t, nc__op_t *o)
{
    const nc__choice_t *ch = o->ch;
    const size_t rf = ch->f, elem = o->rop.elem;
    nc__red_pos_t *P = &o->r;
    if (o->phase == 0) {
        const size_t line_multiple =
            elem / gcd(elem, NC_CACHE_LINE) * NC_CACHE_LINE;
        /* whole cache lines per unit where a slot holds one, else elements */
        P->unit = line_multiple <= rf ? line_multiple / elem : 1;
        P->chunk = rf / elem / P->unit * P->unit;
        P->rounds = (o->count + P->chunk - 1) / P->chunk;
        P->base = t->red->ticket;
        t->red->ticket += P->rounds;
        P->k = 0;
        P->part = STAGE0;
        o->phase = 1;
    }
    rsag_t s = {.t = t, .op = &o->rop, .own = o->own, .recv = o->recv,
                .count = o->count, .elem = elem, .unit = P->unit,
                .chunk = P->chunk, .base = P->base, .slots = ch->s,
                .cin = nc__copy_pick(ch->copy, 0),
                .cout = nc__copy_pick(ch->copy, o->count * elem),
                /* the fold may not write where it reads (in place) */
                .via_memory = ch->copy == NC_COPY_NTALL &&
                              (const unsigned char *)o->own != o->recv};
    const int ahead = ch->s >= 2;
    int rc;
    for (;;) {
        const size_t r = P->k;
        const int more = r + 1 < P->rounds;
        switch (P->part) {
        case STAGE0:
            if ((rc = stage(&s, 0)) != NUMACOLL_OK)
                return rc;
            P->part = COMBINE;
            P->i = 1;
            /* fall through */
        case COMBINE:
            if ((rc = combine(&s, r, P)) != NUMACOLL_OK)
                return rc;
            P->part = STAGE_AHEAD;
            /* fall through */
        case STAGE_AHEAD:
            if (ahead && more && (rc = stage(&s, r + 1)) != NUMACOLL_OK)
                return rc;
            P->part = GATHER;
            P->i = 1;
            /* fall through */
        case GATHER:
            if ((rc = gather(&s, r, P)) != NUMACOLL_OK)
                return rc;
            P->part = STAGE_AFTER;
            /* fall through */
        case STAGE_AFTER:
            if (!ahead && more && (rc = stage(&s, r + 1)) != NUMACOLL_OK)
                return rc;
            /* fall through */
        default:
            if (!more)
                return NUMACOLL_OK;
            P->k = r + 1;
            P->part = COMBINE;
            P->i = 1;
        }
    }
}
