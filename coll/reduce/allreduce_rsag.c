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
 * writer's cache, which pays where the cores are far apart. With
 * copy=adapt or ntadapt (not in place) combine folds into the receive
 * buffer too, and stage and combine copy into the slot with the stores
 * the copy layer times as cheaper (NC_COPY_ADAPT_READ, coll/copy.h), so
 * that no plain store lands on a line the others still hold when
 * streaming costs less.
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
#include <stdio.h>
#include <string.h>

#include "coll/reduce/reduce.h"

/* ---- rounds of slices (reduce.h), shared with Reduce_scatter and Scan -- */

/* Where the tag rides in the slot's line (its last 8 bytes). */
#define TAG_OFF (NC_RED_INLINE - 8)

unsigned char *nc__rs_slot(const nc__rs_t *s, int rank, unsigned x, size_t r)
{
    if (s->line_ok) {
        size_t end = 0;
        for (int j = 0; j < s->nslices; j++) {
            size_t vo, so, n;
            s->slice(s, r, j, &vo, &so, &n);
            if (n && (so + n) * s->elem > end)
                end = (so + n) * s->elem;
        }
        if (end <= NC_RS_INLINE)
            return nc__rslot(s->t, rank, x)->full.data;
    }
    return nc__rbuf(s->t, rank, x);
}

int nc__rs_stage(const nc__rs_t *s, size_t r)
{
    numacoll_team_t *t = s->t;
    uint64_t g;
    unsigned x;
    nc__rs_round(s, r, &g, &x);
    int rc = nc__rslot_claim(t, x);
    if (rc != NUMACOLL_OK)
        return rc;
    unsigned char *slot = nc__rs_slot(s, t->rank, x, r);
    /* the line takes plain stores (a streaming copy variant is not ordered
     * by the word's release) */
    const int cin = slot == nc__rslot(t, t->rank, x)->full.data ? NC_COPY_LIBC
                                                                : s->cin;
    /* a run of slices adjacent in the contribution and in the slot goes
     * in one copy */
    size_t rv = 0, rso = 0, rn = 0;
    for (int j = 0; j <= s->nslices; j++) {
        size_t vo = 0, so = 0, n = 0;
        if (j < s->nslices) {
            if (j == s->skip)
                continue;
            s->slice(s, r, j, &vo, &so, &n);
            if (!n)
                continue;
            if (rn && vo == rv + rn && so == rso + rn) {
                rn += n;
                continue;
            }
        }
        /* a run's last element without its padding: the run may end the
         * vector, and an MPI buffer may end before the padding */
        if (rn)
            nc__copy(cin, slot + rso * s->elem, s->own + rv * s->elem,
                     nc__res_bytes(s->op, rn));
        rv = vo, rso = so, rn = n;
    }
    if (s->tag && r == 0)
        memcpy(nc__rslot(t, t->rank, x)->full.data + TAG_OFF, &s->tag,
               sizeof s->tag);
    nc__rslot_publish(t, x, g, s->readers);
    return NUMACOLL_OK;
}

int nc__rs_wait(const nc__rs_t *s, size_t r, int *i)
{
    numacoll_team_t *t = s->t;
    uint64_t g;
    unsigned x;
    nc__rs_round(s, r, &g, &x);
    /* start after ourselves, so the ranks do not all poll one writer */
    for (; *i < t->p; (*i)++) {
        int peer = (t->rank + *i) % t->p;
        if (peer >= s->nfold)
            continue;
        int rc = nc__rslot_wait_full(t, peer, x, g);
        if (rc != NUMACOLL_OK)
            return rc;
        uint64_t tag;
        if (s->tag && r == 0 &&
            (memcpy(&tag, nc__rslot(t, peer, x)->full.data + TAG_OFF,
                    sizeof tag),
             tag != s->tag)) {
            char why[160];
            snprintf(why, sizeof why, "reduce_scatter: rank %d's "
                     "recvcounts differ from rank %d's (with the same "
                     "total)", peer, t->rank);
            return nc__mismatch(t, peer, why);
        }
    }
    return NUMACOLL_OK;
}

/* Operands of the fold: rank j's slice, ours from the contribution (or
 * our own slot, own_staged). */
typedef struct env {
    const nc__rs_t *s;
    size_t vo, so;
    unsigned x;
    int line;           /* the round rides in the slots' lines */
} env_t;

static int get_slice(void *vp, int j, const void **ptr)
{
    env_t *e = vp;
    const nc__rs_t *s = e->s;
    /* every full was awaited before the fold */
    *ptr = j == s->t->rank && !s->own_staged
               ? (const void *)(s->own + e->vo * s->elem)
               : (const void *)((e->line ? nc__rslot(s->t, j, e->x)->full.data
                                         : nc__rbuf(s->t, j, e->x)) +
                                e->so * s->elem);
    return NUMACOLL_OK;
}

static void put_slice(void *vp, int j)
{
    (void)vp, (void)j;   /* released by the caller, once per slot */
}

int nc__rs_fold(const nc__rs_t *s, size_t r, void *dest)
{
    uint64_t g;
    unsigned x;
    size_t vo, so, n;
    nc__rs_round(s, r, &g, &x);
    s->slice(s, r, s->mine, &vo, &so, &n);
    if (!n || !s->nfold)
        return NUMACOLL_OK;
    /* where the round sits, decided once (nc__rs_slot reads every slice) */
    const int line = nc__rs_slot(s, s->t->rank, x, r) ==
                     nc__rslot(s->t, s->t->rank, x)->full.data;
    env_t e = {s, vo, so, x, line};
    /* adapt's record is of stores into the segment; the fold may write a
     * receive buffer (rsag's via_memory) */
    nc__fold_t f = {s->nfold, get_slice, put_slice, &e,
                    s->cin == NC_COPY_ADAPT || s->cin == NC_COPY_ADAPT_READ
                        ? NC_COPY_VEC
                        : s->cin};
    int done = 0;
    return nc__fold_step(s->op, &f, dest, n, &done);
}

void nc__rs_release(const nc__rs_t *s, size_t r)
{
    uint64_t g;
    unsigned x;
    nc__rs_round(s, r, &g, &x);
    for (int i = 1; i < s->t->p; i++) {
        int peer = (s->t->rank + i) % s->t->p;
        if (peer < s->nfold)
            nc__rslot_release(s->t, peer, x);
    }
}

enum { RS_STAGE, RS_WAIT, RS_FOLD, RS_RELEASE };

int nc__rs_rounds(const nc__rs_t *s, nc__red_pos_t *P, size_t rounds,
                  int stages, int (*fold)(const nc__rs_t *s, size_t r))
{
    int rc;
    for (; P->k < rounds; P->k++, P->part = RS_STAGE) {
        const size_t r = P->k;
        switch (P->part) {
        case RS_STAGE:
            if (stages && (rc = nc__rs_stage(s, r)) != NUMACOLL_OK)
                return rc;
            P->part = RS_WAIT;
            P->i = 1;
            /* fall through */
        case RS_WAIT:
            if ((rc = nc__rs_wait(s, r, &P->i)) != NUMACOLL_OK)
                return rc;
            P->part = RS_FOLD;
            /* fall through */
        case RS_FOLD:
            if ((rc = fold(s, r)) != NUMACOLL_OK)
                return rc;
            P->part = RS_RELEASE;
            /* fall through */
        default:
            nc__rs_release(s, r);
        }
    }
    return NUMACOLL_OK;
}

/* ---- the Allreduce ------------------------------------------------------ */

typedef struct rsag {
    nc__rs_t rs;        /* first: the slice function casts back */
    unsigned char *recv;
    size_t count, unit, chunk;
    int cout;           /* copy-layer variant into recv              */
    int via_memory;     /* copy=ntall, adapt, ntadapt: the fold goes to
                         * recv, the slot gets a copy (see combine)      */
} rsag_t;

/* Elements [*lo, *hi) of slice j in a round of ne elements. */
static void slice_of(const rsag_t *s, size_t ne, int j, size_t *lo,
                     size_t *hi)
{
    size_t p = (size_t)s->rs.t->p, units = (ne + s->unit - 1) / s->unit;
    size_t a = units * (size_t)j / p * s->unit;
    size_t b = units * (size_t)(j + 1) / p * s->unit;
    *lo = a < ne ? a : ne;
    *hi = b < ne ? b : ne;
}

/* First element and elements of round r. */
static void round_of(const rsag_t *s, size_t r, size_t *e0, size_t *ne)
{
    *e0 = r * s->chunk;
    *ne = s->count - *e0 < s->chunk ? s->count - *e0 : s->chunk;
}

/* nc__rs_t's slice: the chunk sits at offset 0 of the slot. */
static void slice_rsag(const nc__rs_t *rs, size_t r, int j, size_t *vo,
                       size_t *so, size_t *n)
{
    const rsag_t *s = (const rsag_t *)rs;
    size_t e0, ne, lo, hi;
    round_of(s, r, &e0, &ne);
    slice_of(s, ne, j, &lo, &hi);
    *vo = e0 + lo;
    *so = lo;
    *n = hi - lo;
}

/* Wait for every other rank's full (P->i: the peers seen), then fold our
 * slice; the fold itself never waits. */
static int combine(rsag_t *s, size_t r, nc__red_pos_t *P)
{
    numacoll_team_t *t = s->rs.t;
    uint64_t g;
    unsigned x;
    size_t vo, so, ne;
    nc__rs_round(&s->rs, r, &g, &x);
    s->rs.slice(&s->rs, r, s->rs.mine, &vo, &so, &ne);
    /* Every full, even with an empty slice of ours: a release may only
     * follow the sight of the use it releases (reduce.h). */
    int rc = nc__rs_wait(&s->rs, r, &P->i);
    if (rc != NUMACOLL_OK)
        return rc;
    if (ne) {
        const size_t elem = s->rs.elem, n = nc__res_bytes(s->rs.op, ne);
        unsigned char *slot = nc__rbuf(t, t->rank, x) + so * elem;
        unsigned char *out = s->recv + vo * elem;
        /* Through memory: fold straight into our receive buffer, then
         * copy the slice into the slot as stage does (ntall: streaming,
         * so the others read it from memory rather than from our cache,
         * which pays where cores are far apart; adapt: whichever stores
         * cost less). Else fold into the slot, copy it out. */
        if ((rc = nc__rs_fold(&s->rs, r, s->via_memory ? out : slot)) !=
            NUMACOLL_OK)
            return rc;
        if (s->via_memory)
            nc__copy(s->rs.cin, slot, out, n);
        else
            nc__copy(s->cout, out, slot, n);
    }
    /* our slice must be visible before done */
    atomic_store_explicit(&nc__rslot(t, t->rank, x)->done, nc__dword(t, g + 1),
                          memory_order_release);
    nc__wake(t);   /* the others may sleep until our slice is done */
    return NUMACOLL_OK;
}

/* Copy every other slice once its owner has published it (P->i: slices
 * handled), then release every other rank's slot. */
static int gather(rsag_t *s, size_t r, nc__red_pos_t *P)
{
    numacoll_team_t *t = s->rs.t;
    struct nc__red *R = t->red;
    uint64_t g, seen;
    unsigned x;
    size_t e0, ne, lo, hi;
    const size_t elem = s->rs.elem;
    nc__rs_round(&s->rs, r, &g, &x);
    round_of(s, r, &e0, &ne);
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
        nc__copy(s->cout, s->recv + (e0 + lo) * elem,
                 nc__rbuf(t, owner, x) + lo * elem,
                 nc__res_bytes(s->rs.op, hi - lo));
    }
    nc__rs_release(&s->rs, r);
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
        /* whole cache lines per unit where a slot holds one, else elements */
        const size_t unit = nc__red_unit(elem);
        P->unit = unit * elem <= rf ? unit : 1;
        P->chunk = rf / elem / P->unit * P->unit;
        P->rounds = (o->count + P->chunk - 1) / P->chunk;
        P->base = t->red->ticket;
        t->red->ticket += P->rounds;
        P->k = 0;
        P->part = STAGE0;
        o->phase = 1;
    }
    /* into the slots: adapt weighs the readers' trip to memory here */
    const int cin = nc__copy_pick_read(ch->copy);
    rsag_t s = {.rs = {.t = t, .op = &o->rop, .own = o->own, .elem = elem,
                       .base = P->base, .slots = ch->s, .cin = cin,
                       .nslices = t->p,
                       .skip = t->red->my_slice, .mine = t->red->my_slice,
                       .nfold = t->p, .readers = (unsigned)(t->p - 1),
                       .slice = slice_rsag},
                .recv = o->recv, .count = o->count, .unit = P->unit,
                .chunk = P->chunk,
                .cout = nc__copy_pick(ch->copy, o->count * elem),
                /* stores into the slots other than plain ones (ntall,
                 * adapt); the fold may not write where it reads (in
                 * place) */
                .via_memory = (cin == NC_COPY_NT ||
                               cin == NC_COPY_ADAPT_READ) &&
                              (const unsigned char *)o->own != o->recv};
    const int ahead = ch->s >= 2;
    int rc;
    for (;;) {
        const size_t r = P->k;
        const int more = r + 1 < P->rounds;
        switch (P->part) {
        case STAGE0:
            if ((rc = nc__rs_stage(&s.rs, 0)) != NUMACOLL_OK)
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
            if (ahead && more &&
                (rc = nc__rs_stage(&s.rs, r + 1)) != NUMACOLL_OK)
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
            if (!ahead && more &&
                (rc = nc__rs_stage(&s.rs, r + 1)) != NUMACOLL_OK)
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
