/*
 * The gathers (coll/gather/), suite "gather": Allgather, Gather, Scatter
 * and their v forms, and Alltoall, checked byte for byte against what a
 * reference computes from the same pattern, with guard bytes around every
 * buffer (Alltoall: every size and in place in the sweeps, its own test
 * of requests, a size mismatch).
 *  exact      p = 1..8 (oversubscribed on two cores), every root, blocks
 *             of 0 B to 300 KB (inline lines, one and several staging
 *             fragments), and 4 MiB blocks at p = 2 and 3;
 *  geometry   1 KiB fragments in 2 slots (config override): many entries
 *             per call, every slot reused many times, scatter's skipped
 *             entries, mixed with Reduce and Allreduce on the same slots;
 *  v forms    counts with zeros, displacements in reverse order with gaps;
 *  in place   Allgather on every rank, Gather and Scatter at the root;
 *  requests   many nonblocking gathers in flight, interleaved with
 *             blocking ones, completed in mixed order; persistent ones
 *             started many times with new data each time;
 *  mismatch   different roots, block sizes or v-counts on different ranks
 *             give an error, not a hang (timeout_ms 0: the runner's
 *             watchdog fails a hang), and correct calls work afterwards;
 *  refused    bad arguments, with a sentence in last_error;
 *  cma        the single-copy rules (alg=cma) through all of the above
 *             with pieces of 4 KiB, then with single copy forced off (the
 *             staged fallback), and around a staged/cma threshold (the
 *             v forms' choice at the call, a mismatch across it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/reduce/reduce.h"
#include "coll/team.h"
#include "nct.h"
#include "numacoll.h"

#define GUARD NCT_GUARD
#define GBYTE NCT_GBYTE

static unsigned char pat(unsigned call, int src, size_t i)
{
    unsigned long long x = (call + 3) * 0x9e3779b97f4a7c15ULL +
                           (unsigned)src * 0xd6e8feb86659fd93ULL +
                           i * 0xbf58476d1ce4e5b9ULL;
    return (unsigned char)(x >> 56 ^ x >> 29 ^ i);
}

/* The blocks of one call: per-rank bytes and displacements, and the
 * receive (or send) buffer's extent. v: counts vary (some 0), displs in
 * reverse rank order with gaps; else every block `each` at j * each. */
typedef struct blocks {
    size_t cnt[8], dsp[8], extent;
} blocks_t;

/* v forms: rank p - 1's block has this many bytes where not 0 (a block
 * past the lines among blocks in them: test_v_lines) */
static size_t v_last;

static void blocks_of(blocks_t *k, int p, size_t each, int v, unsigned call)
{
    k->extent = 0;
    if (!v) {
        for (int j = 0; j < p; j++) {
            k->cnt[j] = each;
            k->dsp[j] = (size_t)j * each;
        }
        k->extent = (size_t)p * each;
        return;
    }
    size_t off = 0;
    for (int j = p - 1; j >= 0; j--) {
        /* every third block empty, the others around each */
        k->cnt[j] = (j + call) % 3 == 1 ? 0 : each + (size_t)j * 7 % 13;
        if (v_last && j == p - 1)
            k->cnt[j] = v_last;
        k->dsp[j] = off + 5;
        off = k->dsp[j] + k->cnt[j];
    }
    k->extent = off + 3;
}

/* Fill rank src's block j of call c into dst (the reference). */
static void fill(unsigned char *dst, unsigned call, int src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = pat(call, src, i);
}

static int same(const unsigned char *got, unsigned call, int src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (got[i] != pat(call, src, i))
            return 0;
    return 1;
}

enum { AG, GA, SC, AA };
static const char *const kind_name[] = {"allgather", "gather", "scatter",
                                        "alltoall"};

/*
 * One call of kind k (root for gather/scatter), v form or not, in place
 * or not, blocking; checks every byte this rank sees and the guards.
 * 0 or a failure code.
 */
static int one(numacoll_team_t *t, int rank, int p, int k, int root, int v,
               int in_place, size_t each, unsigned call)
{
    blocks_t B;
    blocks_of(&B, p, each, v, call);
    const int all = k == AG || rank == root;
    const size_t mine = B.cnt[rank];
    /* the buffer of every block, where this rank sees them all */
    unsigned char *big = nct_gbuf(all ? B.extent : 0);
    unsigned char *small = nct_gbuf(mine);
    unsigned char *ub = big + GUARD, *us = small + GUARD;
    int rc, bad = 0;
    if (k == SC) {
        if (rank == root)
            for (int j = 0; j < p; j++)
                fill(ub + B.dsp[j], call, j, B.cnt[j]);
    } else {
        fill(in_place ? ub + B.dsp[rank] : us, call, rank, mine);
    }
    const void *send = in_place ? NUMACOLL_IN_PLACE : us;
    switch (k) {
    case AG:
        rc = v ? numacoll_allgatherv(t, send, mine, ub, B.cnt, B.dsp)
               : numacoll_allgather(t, send, ub, each);
        break;
    case GA:
        rc = v ? numacoll_gatherv(t, send, mine, all ? ub : NULL, B.cnt,
                                  B.dsp, root)
               : numacoll_gather(t, send, all ? ub : NULL, each, root);
        break;
    default: {
        void *recv = in_place ? (void *)NUMACOLL_IN_PLACE : us;
        rc = v ? numacoll_scatterv(t, all ? ub : NULL, B.cnt, B.dsp, recv,
                                   mine, root)
               : numacoll_scatter(t, all ? ub : NULL, recv, each, root);
    }
    }
    if (rc != NUMACOLL_OK) {
        bad = nct_say(t, rank, kind_name[k], rc);
    } else if (k == SC) {
        bad = !same(in_place ? ub + B.dsp[rank] : us, call, rank, mine) ? 3
              : 0;
    } else if (all) {
        for (int j = 0; j < p && !bad; j++)
            bad = !same(ub + B.dsp[j], call, j, B.cnt[j]) ? 4 : 0;
    }
    if (!bad && (!nct_guards_ok(big, all ? B.extent : 0) ||
                 !nct_guards_ok(small, mine)))
        bad = 5;
    if (bad && rc == NUMACOLL_OK)
        fprintf(stderr, "rank %d: %s%s root %d p %d each %zu in_place %d "
                "call %u: wrong bytes (%d)\n", rank, kind_name[k],
                v ? "v" : "", root, p, each, in_place, call, bad);
    free(big);
    free(small);
    return bad;
}

/* Alltoall of `each` bytes per block, blocking, nonblocking (req not
 * NULL: started, the caller waits) or in place; block d of rank j is
 * pat(call, j * 64 + d). a2a_check: 0 when every received block and the
 * guards are right. */
typedef struct a2a {
    unsigned char *send, *recv;
    size_t each;
    int in_place;
    unsigned call;
} a2a_t;

static int a2a_start(numacoll_team_t *t, int me, int p, a2a_t *a,
                     size_t each, int in_place, unsigned call,
                     numacoll_request_t **req)
{
    a->each = each;
    a->in_place = in_place;
    a->call = call;
    a->send = nct_gbuf((size_t)p * each);
    a->recv = nct_gbuf((size_t)p * each);
    unsigned char *from = (in_place ? a->recv : a->send) + GUARD;
    for (int d = 0; d < p; d++)
        fill(from + (size_t)d * each, call, me * 64 + d, each);
    const void *send = in_place ? NUMACOLL_IN_PLACE : a->send + GUARD;
    return req ? numacoll_ialltoall(t, send, a->recv + GUARD, each, req)
               : numacoll_alltoall(t, send, a->recv + GUARD, each);
}

static int a2a_check(int me, int p, a2a_t *a)
{
    int bad = 0;
    for (int j = 0; j < p && !bad; j++)
        bad = !same(a->recv + GUARD + (size_t)j * a->each, a->call,
                    j * 64 + me, a->each);
    bad |= !nct_guards_ok(a->recv, (size_t)p * a->each) ||
           !nct_guards_ok(a->send, (size_t)p * a->each);
    if (bad)
        fprintf(stderr, "rank %d: alltoall of %zu bytes per block (in place "
                "%d, call %u) wrong\n", me, a->each, a->in_place, a->call);
    free(a->send);
    free(a->recv);
    return bad ? 14 : 0;
}

static int a2a_one(numacoll_team_t *t, int me, int p, size_t each,
                   int in_place, unsigned call)
{
    a2a_t a;
    int rc = a2a_start(t, me, p, &a, each, in_place, call, NULL);
    if (rc != NUMACOLL_OK) {
        free(a.send);
        free(a.recv);
        return nct_say(t, me, "alltoall", rc);
    }
    return a2a_check(me, p, &a);
}

/* Alltoallv: rank j sends rank d a2av_cnt(j, d) bytes (zeros among
 * them; in place symmetric, as the form needs), block d of rank j being
 * pat(call, j * 64 + d); the blocks in reverse order with gaps on both
 * sides. */
typedef struct a2av {
    unsigned char *send, *recv;
    size_t scnt[8], sdsp[8], rcnt[8], rdsp[8], sext, rext;
    int in_place;
    unsigned call;
} a2av_t;

static size_t a2av_cnt(int j, int d, size_t each, int sym, unsigned call)
{
    int a = sym && d < j ? d : j, b = sym && d < j ? j : d;
    if ((unsigned)(a * 3 + b + (int)call) % 4 == 1)
        return 0;
    return each + (size_t)(a * 5 + b * 3) % 11;
}

/* Displacements in reverse order with gaps; the extent. */
static size_t a2av_layout(const size_t *cnt, size_t *dsp, int p)
{
    size_t off = 0;
    for (int j = p - 1; j >= 0; j--) {
        dsp[j] = off + 3 + (size_t)j;
        off = dsp[j] + cnt[j];
    }
    return off + 5;
}

/* Lay out, fill and post an Alltoallv of a's counts (scnt, rcnt set). */
static int a2av_post(numacoll_team_t *t, int me, int p, a2av_t *a,
                     int in_place, unsigned call, numacoll_request_t **req,
                     int persistent)
{
    a->in_place = in_place;
    a->call = call;
    a->sext = a2av_layout(a->scnt, a->sdsp, p);
    a->rext = a2av_layout(a->rcnt, a->rdsp, p);
    /* different gaps on the send side, so the two layouts differ */
    for (int j = 0; j < p && !in_place; j++)
        a->sdsp[j] += (size_t)j * 2;
    a->sext += (size_t)p * 2;
    a->send = nct_gbuf(a->sext);
    a->recv = nct_gbuf(a->rext);
    unsigned char *from = in_place ? a->recv + GUARD : a->send + GUARD;
    const size_t *fd = in_place ? a->rdsp : a->sdsp;
    for (int d = 0; d < p; d++)
        fill(from + fd[d], call, me * 64 + d, a->scnt[d]);
    const void *send = in_place ? NUMACOLL_IN_PLACE : a->send + GUARD;
    if (persistent)
        return numacoll_alltoallv_init(t, send, a->scnt, a->sdsp,
                                       a->recv + GUARD, a->rcnt, a->rdsp, req);
    return req ? numacoll_ialltoallv(t, send, a->scnt, a->sdsp,
                                     a->recv + GUARD, a->rcnt, a->rdsp, req)
               : numacoll_alltoallv(t, send, a->scnt, a->sdsp,
                                    a->recv + GUARD, a->rcnt, a->rdsp);
}

static int a2av_start(numacoll_team_t *t, int me, int p, a2av_t *a,
                      size_t each, int in_place, unsigned call,
                      numacoll_request_t **req, int persistent)
{
    for (int j = 0; j < p; j++) {
        a->scnt[j] = a2av_cnt(me, j, each, in_place, call);
        a->rcnt[j] = a2av_cnt(j, me, each, in_place, call);
    }
    return a2av_post(t, me, p, a, in_place, call, req, persistent);
}

/* 0 when every received block and the guards are right; frees unless
 * keep. */
static int a2av_check(int me, int p, a2av_t *a, int keep)
{
    int bad = 0;
    for (int j = 0; j < p && !bad; j++)
        bad = !same(a->recv + GUARD + a->rdsp[j], a->call, j * 64 + me,
                    a->rcnt[j]);
    bad |= !nct_guards_ok(a->recv, a->rext) || !nct_guards_ok(a->send, a->sext);
    if (bad)
        fprintf(stderr, "rank %d: alltoallv (in place %d, call %u) wrong\n",
                me, a->in_place, a->call);
    if (!keep) {
        free(a->send);
        free(a->recv);
    }
    return bad ? 16 : 0;
}

static int a2av_one(numacoll_team_t *t, int me, int p, size_t each,
                    int in_place, unsigned call)
{
    a2av_t a;
    int rc = a2av_start(t, me, p, &a, each, in_place, call, NULL, 0);
    if (rc != NUMACOLL_OK) {
        free(a.send);
        free(a.recv);
        return nct_say(t, me, "alltoallv", rc);
    }
    return a2av_check(me, p, &a, 0);
}

/* ---- exact --------------------------------------------------------------- */

typedef struct sweep {
    const size_t *sizes;
    int nsizes;
    size_t rf;         /* staging geometry override, 0: the table's */
    unsigned rs;
    int v, in_place, every_root;
} sweep_t;

static int sweep_body(const numacoll_bootstrap_t *b, void *arg)
{
    const sweep_t *S = arg;
    numacoll_team_t *t = nct_team(b, S->rf, S->rs, 50000);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    unsigned call = 0;
    int bad = 0;
    for (int z = 0; z < S->nsizes && !bad; z++) {
        const size_t each = S->sizes[z];
        bad = one(t, me, p, AG, -1, S->v, S->in_place, each, call++);
        if (!bad && !S->v)
            bad = a2a_one(t, me, p, each, S->in_place, call++);
        if (!bad)
            bad = a2av_one(t, me, p, each, S->in_place, call++);
        for (int root = 0; root < p && !bad; root++) {
            if (!S->every_root && root != (z % p))
                continue;
            bad = one(t, me, p, GA, root, S->v, S->in_place && me == root,
                      each, call++);
            if (!bad)
                bad = one(t, me, p, SC, root, S->v,
                          S->in_place && me == root, each, call++);
        }
    }
    numacoll_team_destroy(t);
    return bad;
}

static const size_t small_sizes[] = {0, 1, 8, 40, 41, 57, 1000, 4096,
                                     131072 + 5, 300000};

static void test_exact(void)
{
    sweep_t S = {small_sizes, 10, 0, 0, 0, 0, 1};
    for (int p = 1; p <= 8; p++) {
        int rc = nct_run(p, sweep_body, &S);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc)
            fprintf(stderr, "exact: p = %d failed\n", p);
    }
    static const size_t big[] = {4u << 20};
    sweep_t L = {big, 1, 0, 0, 0, 0, 1};
    for (int p = 2; p <= 3; p++)
        CU_ASSERT_EQUAL(nct_run(p, sweep_body, &L), 0);
}

/* ---- geometry: small fragments, few slots, reductions between ------- */

static int geometry_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 1024, 2, 50000);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    static const size_t sizes[] = {0, 39, 1024, 1025, 5000, 20000};
    int bad = 0;
    unsigned call = 100;
    for (int z = 0; z < 6 && !bad; z++)
        for (int v = 0; v < 2 && !bad; v++) {
            bad = one(t, me, p, AG, -1, v, 0, sizes[z], call++);
            int root = (z + v) % p;
            if (!bad)
                bad = one(t, me, p, GA, root, v, 0, sizes[z], call++);
            if (!bad)
                bad = one(t, me, p, SC, root, v, 0, sizes[z], call++);
            if (!bad)
                bad = a2a_one(t, me, p, sizes[z], v, call++);
            if (!bad)
                bad = a2av_one(t, me, p, sizes[z], v, call++);
            /* a reduction on the same slots between the gathers */
            if (!bad)
                bad = nct_allreduce_probe(t, me, p);
        }
    numacoll_team_destroy(t);
    return bad;
}

static void test_geometry(void)
{
    for (int p = 1; p <= 5; p++)
        CU_ASSERT_EQUAL(nct_run(p, geometry_body, NULL), 0);
}

/* ---- v forms and in place ------------------------------------------------ */

static const size_t v_sizes[] = {0, 8, 45, 3000, 140000};

static void test_v(void)
{
    sweep_t S = {v_sizes, 5, 0, 0, 1, 0, 1};
    for (int p = 1; p <= 8; p++)
        CU_ASSERT_EQUAL(nct_run(p, sweep_body, &S), 0);
    sweep_t G = {v_sizes, 5, 1024, 3, 1, 0, 0};
    for (int p = 2; p <= 6; p += 2)
        CU_ASSERT_EQUAL(nct_run(p, sweep_body, &G), 0);
}

static void test_in_place(void)
{
    sweep_t S = {v_sizes, 5, 0, 0, 0, 1, 1};
    for (int p = 1; p <= 5; p++)
        CU_ASSERT_EQUAL(nct_run(p, sweep_body, &S), 0);
    sweep_t V = {v_sizes, 5, 0, 0, 1, 1, 1};
    for (int p = 2; p <= 4; p++)
        CU_ASSERT_EQUAL(nct_run(p, sweep_body, &V), 0);
}

/* ---- nonblocking and persistent ------------------------------------------ */

#define NFLIGHT 18

typedef struct flight {
    int k, root, v;
    size_t each;
    unsigned call;
    blocks_t B;
    unsigned char *big, *small;
    numacoll_request_t *req;
} flight_t;

static int flight_start(numacoll_team_t *t, int me, int p, flight_t *f,
                        unsigned c)
{
    static const size_t sizes[] = {0, 8, 100, 5000, 70000, 200000};
    f->k = (int)(c % 3);
    f->root = f->k == AG ? -1 : (int)(c * 7 % (unsigned)p);
    f->v = (int)(c / 3 % 2);
    f->each = sizes[c % 6];
    f->call = c;
    blocks_of(&f->B, p, f->each, f->v, c);
    const int all = f->k == AG || me == f->root;
    const size_t mine = f->B.cnt[me];
    f->big = nct_gbuf(all ? f->B.extent : 0);
    f->small = nct_gbuf(mine);
    unsigned char *ub = f->big + GUARD, *us = f->small + GUARD;
    if (f->k == SC && all)
        for (int j = 0; j < p; j++)
            fill(ub + f->B.dsp[j], c, j, f->B.cnt[j]);
    if (f->k != SC)
        fill(us, c, me, mine);
    switch (f->k) {
    case AG:
        return f->v ? numacoll_iallgatherv(t, us, mine, ub, f->B.cnt,
                                           f->B.dsp, &f->req)
                    : numacoll_iallgather(t, us, ub, f->each, &f->req);
    case GA:
        return f->v ? numacoll_igatherv(t, us, mine, all ? ub : NULL,
                                        f->B.cnt, f->B.dsp, f->root, &f->req)
                    : numacoll_igather(t, us, all ? ub : NULL, f->each,
                                       f->root, &f->req);
    default:
        return f->v ? numacoll_iscatterv(t, all ? ub : NULL, f->B.cnt,
                                         f->B.dsp, us, mine, f->root, &f->req)
                    : numacoll_iscatter(t, all ? ub : NULL, us, f->each,
                                        f->root, &f->req);
    }
}

static int flight_check(int me, int p, flight_t *f)
{
    const int all = f->k == AG || me == f->root;
    const size_t mine = f->B.cnt[me];
    unsigned char *ub = f->big + GUARD, *us = f->small + GUARD;
    int bad = 0;
    if (f->k == SC)
        bad = !same(us, f->call, me, mine);
    else if (all)
        for (int j = 0; j < p && !bad; j++)
            bad = !same(ub + f->B.dsp[j], f->call, j, f->B.cnt[j]);
    bad |= !nct_guards_ok(f->big, all ? f->B.extent : 0) ||
           !nct_guards_ok(f->small, mine);
    if (bad)
        fprintf(stderr, "rank %d: nonblocking %s%s call %u root %d wrong\n",
                me, kind_name[f->k], f->v ? "v" : "", f->call, f->root);
    free(f->big);
    free(f->small);
    return bad ? 7 : 0;
}

static int flight_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 50000);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    flight_t f[NFLIGHT];
    int bad = 0;
    for (unsigned round = 0; round < 3 && !bad; round++) {
        for (unsigned i = 0; i < NFLIGHT && !bad; i++) {
            int rc = flight_start(t, me, p, &f[i], round * 100 + i);
            if (rc != NUMACOLL_OK)
                bad = nct_say(t, me, "start", rc);
            /* a blocking gather between, which first completes them all */
            if (!bad && i % 7 == 6)
                bad = one(t, me, p, (int)(i % 3), (int)(i % (unsigned)p),
                          (int)(i & 1), 0, 333, 9000 + round * 100 + i);
        }
        /* complete them in an order of our own: tests, then waits from
         * the back (completion still happens in start order) */
        for (int i = 0; i < NFLIGHT && !bad; i += 3) {
            int done = 0;
            int rc = numacoll_test(&f[i].req, &done);
            if (rc != NUMACOLL_OK)
                bad = nct_say(t, me, "test", rc);
        }
        for (int i = NFLIGHT - 1; i >= 0 && !bad; i--) {
            int rc = numacoll_wait(&f[i].req);
            if (rc != NUMACOLL_OK)
                bad = nct_say(t, me, "wait", rc);
        }
        for (int i = 0; i < NFLIGHT && !bad; i++)
            bad = flight_check(me, p, &f[i]);
    }
    numacoll_team_destroy(t);
    return bad;
}

static void test_nonblocking(void)
{
    for (int p = 1; p <= 6; p++)
        CU_ASSERT_EQUAL(nct_run(p, flight_body, NULL), 0);
}

static int persistent_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 2048, 2, 50000);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank, root = p - 1;
    enum { EACH = 3000 };
    blocks_t B;
    blocks_of(&B, p, EACH, 1, 0);
    unsigned char *ag = malloc((size_t)p * EACH), *gv = malloc(B.extent);
    unsigned char *sc_send = malloc((size_t)p * EACH);
    unsigned char *own = malloc(EACH), *sv_own = malloc(EACH + 13);
    unsigned char *sc_recv = malloc(EACH);
    numacoll_request_t *r[3];
    int bad = 0;
    int rc = numacoll_allgather_init(t, own, ag, EACH, &r[0]);
    if (rc == NUMACOLL_OK)
        rc = numacoll_gatherv_init(t, sv_own, B.cnt[me], gv, B.cnt, B.dsp,
                                   root, &r[1]);
    if (rc == NUMACOLL_OK)
        rc = numacoll_scatter_init(t, sc_send, sc_recv, EACH, root, &r[2]);
    if (rc != NUMACOLL_OK)
        bad = nct_say(t, me, "init", rc);
    for (unsigned it = 0; it < 200 && !bad; it++) {
        fill(own, it, me, EACH);
        fill(sv_own, it + 1, me, B.cnt[me]);
        if (me == root)
            for (int j = 0; j < p; j++)
                fill(sc_send + (size_t)j * EACH, it + 2, j, EACH);
        for (int i = 0; i < 3 && !bad; i++)
            if ((rc = numacoll_start(r[i])) != NUMACOLL_OK)
                bad = nct_say(t, me, "start", rc);
        for (int i = 2; i >= 0 && !bad; i--)
            if ((rc = numacoll_wait(&r[i])) != NUMACOLL_OK)
                bad = nct_say(t, me, "wait", rc);
        for (int j = 0; j < p && !bad; j++) {
            bad = !same(ag + (size_t)j * EACH, it, j, EACH) ? 8 : 0;
            if (!bad && me == root)
                bad = !same(gv + B.dsp[j], it + 1, j, B.cnt[j]) ? 9 : 0;
        }
        if (!bad && !same(sc_recv, it + 2, me, EACH))
            bad = 10;
        if (bad > 2)
            fprintf(stderr, "rank %d: persistent start %u wrong (%d)\n", me,
                    it, bad);
    }
    for (int i = 0; i < 3 && rc == NUMACOLL_OK; i++)
        numacoll_request_free(&r[i]);
    free(ag), free(gv), free(sc_send), free(own), free(sv_own);
    free(sc_recv);
    numacoll_team_destroy(t);
    return bad;
}

static void test_persistent(void)
{
    for (int p = 1; p <= 5; p++)
        CU_ASSERT_EQUAL(nct_run(p, persistent_body, NULL), 0);
}

/* Alltoall: 12 in flight with blocking ones between, then a persistent
 * one started 100 times. */
static int a2a_requests_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 4096, 3, 50000);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    static const size_t sizes[] = {0, 8, 33, 1000, 9000, 70000};
    a2a_t a[12];
    numacoll_request_t *r[12];
    int bad = 0, rc = NUMACOLL_OK;
    for (int i = 0; i < 12 && !bad; i++) {
        rc = a2a_start(t, me, p, &a[i], sizes[i % 6], i % 5 == 4,
                       (unsigned)i, &r[i]);
        if (rc != NUMACOLL_OK)
            bad = nct_say(t, me, "ialltoall", rc);
        if (!bad && i % 4 == 3)
            bad = a2a_one(t, me, p, 500, 0, 1000u + (unsigned)i);
    }
    for (int i = 11; i >= 0 && !bad; i--)
        if ((rc = numacoll_wait(&r[i])) != NUMACOLL_OK)
            bad = nct_say(t, me, "wait", rc);
    for (int i = 0; i < 12 && !bad; i++)
        bad = a2a_check(me, p, &a[i]);
    enum { EACH = 2500 };
    unsigned char *send = malloc((size_t)p * EACH);
    unsigned char *recv = malloc((size_t)p * EACH);
    numacoll_request_t *pr = NULL;
    if (!bad && (rc = numacoll_alltoall_init(t, send, recv, EACH, &pr)))
        bad = nct_say(t, me, "alltoall_init", rc);
    for (unsigned it = 0; it < 100 && !bad; it++) {
        for (int d = 0; d < p; d++)
            fill(send + (size_t)d * EACH, it, me * 64 + d, EACH);
        if ((rc = numacoll_start(pr)) != NUMACOLL_OK ||
            (rc = numacoll_wait(&pr)) != NUMACOLL_OK)
            bad = nct_say(t, me, "persistent alltoall", rc);
        for (int j = 0; j < p && !bad; j++)
            bad = !same(recv + (size_t)j * EACH, it, j * 64 + me, EACH)
                      ? 15 : 0;
    }
    numacoll_request_free(&pr);
    free(send);
    free(recv);
    /* Alltoallv: 8 in flight, one blocking between; then a persistent
     * one started 50 times with new data */
    a2av_t v[8];
    numacoll_request_t *vr[8];
    static const size_t vs[] = {0, 8, 100, 70000};
    for (int i = 0; i < 8 && !bad; i++) {
        rc = a2av_start(t, me, p, &v[i], vs[i % 4], i % 3 == 2,
                        2000u + (unsigned)i, &vr[i], 0);
        if (rc != NUMACOLL_OK)
            bad = nct_say(t, me, "ialltoallv", rc);
        if (!bad && i == 4)
            bad = a2av_one(t, me, p, 300, 0, 3000u);
    }
    for (int i = 7; i >= 0 && !bad; i--)
        if ((rc = numacoll_wait(&vr[i])) != NUMACOLL_OK)
            bad = nct_say(t, me, "wait", rc);
    for (int i = 0; i < 8 && !bad; i++)
        bad = a2av_check(me, p, &v[i], 0);
    a2av_t pv;
    if (!bad && (rc = a2av_start(t, me, p, &pv, 1500, 0, 0, &pr, 1)))
        bad = nct_say(t, me, "alltoallv_init", rc);
    for (unsigned it = 0; it < 50 && !bad; it++) {
        pv.call = it;
        for (int d = 0; d < p; d++)
            fill(pv.send + GUARD + pv.sdsp[d], it, me * 64 + d, pv.scnt[d]);
        if ((rc = numacoll_start(pr)) != NUMACOLL_OK ||
            (rc = numacoll_wait(&pr)) != NUMACOLL_OK)
            bad = nct_say(t, me, "persistent alltoallv", rc);
        if (!bad)
            bad = a2av_check(me, p, &pv, 1);
    }
    if (pr) {
        numacoll_request_free(&pr);
        free(pv.send);
        free(pv.recv);
    }
    numacoll_team_destroy(t);
    return bad;
}

static void test_alltoall_requests(void)
{
    for (int p = 1; p <= 5; p++)
        CU_ASSERT_EQUAL(nct_run(p, a2a_requests_body, NULL), 0);
}

/* ---- mismatch ----------------------------------------------------------- */

typedef struct bad_case {
    int k;        /* AG, GA, SC, AA */
    int how;      /* 0 roots differ, 1 sizes differ, 2 a v-count differs
                     (halved at rank 0), 3 (AG) two v-counts differ, the
                     total alike, 4 (GA, SC) a v-count doubled at rank 0 */
    size_t n;     /* the block (0: 3000 bytes) */
    int lines;    /* GA, SC: n from the team's limit of blocks in the
                     lines, so that one side's block goes through them
                     and the other's does not (2: n = 2 max, 4: max) */
} bad_case_t;

static int mismatch_body(const numacoll_bootstrap_t *b, void *arg)
{
    const bad_case_t *C = arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 0);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    const size_t max = C->k == GA ? t->red->gv_max : t->red->sv_max;
    const size_t N = C->lines ? (C->how == 2 ? 2 * max : max)
                     : C->n   ? C->n
                              : 3000;
    const int v = C->how == 2 || C->how == 4;
    size_t cnt[16], dsp[16];
    for (int j = 0; j < p; j++) {
        cnt[j] = me != 0 || j != p - 1 ? N : C->how == 2 ? N / 2
                                         : C->how == 4 ? 2 * N
                                                       : N;
        dsp[j] = (size_t)j * (N + 8);
    }
    if (C->how == 3 && me == 0)
        cnt[0] = N - 8, cnt[p - 1] = N + 8;
    size_t each = C->how == 1 && me == p - 1 ? N + 64 : N;
    int root = C->how == 0 ? me : 0;
    /* (how 4: the root's block for rank p - 1 is 2 N) */
    unsigned char *big = calloc((size_t)p + 1, N + 64),
                  *small = calloc(1, N + 64);
    int rc;
    switch (C->k) {
    case AG:
        rc = C->how >= 2 ? numacoll_allgatherv(t, small, cnt[me], big, cnt,
                                               dsp)
                         : numacoll_allgather(t, small, big, each);
        break;
    case GA:
        rc = v ? numacoll_gatherv(t, small, N, big, cnt, dsp, root)
               : numacoll_gather(t, small, big, each, root);
        break;
    case AA: {
        unsigned char *out = calloc((size_t)p, N + 64);
        /* v: rank 0 sends rank p - 1 half of what it expects (cnt is
         * what rank 0 sends; the others send and receive N) */
        size_t rc_[8];
        for (int j = 0; j < p; j++)
            rc_[j] = N;
        rc = C->how == 2 ? numacoll_alltoallv(t, big, cnt, dsp, out, rc_, dsp)
                         : numacoll_alltoall(t, big, out, each);
        free(out);
        break;
    }
    default:
        rc = v ? numacoll_scatterv(t, big, cnt, dsp, small, N, root)
               : numacoll_scatter(t, big, small, each, root);
    }
    int all[64], bad = 0;
    if (!nct_oob_all(b, rc, all))
        bad = 11;
    int failed = 0;
    for (int j = 0; j < p; j++)
        failed += all[j] != NUMACOLL_OK;
    if (!bad && !failed) {
        fprintf(stderr, "rank %d: mismatched %s (case %d) passed on every "
                "rank\n", me, kind_name[C->k], C->how);
        bad = 12;
    }
    if (!bad && rc != NUMACOLL_OK && rc != NUMACOLL_ERR_MISMATCH &&
        rc != NUMACOLL_ERR_ARG)
        bad = nct_say(t, me, "mismatched call", rc);
    /* the call after may fail everywhere (to tell a rank that finished
     * the bad one); the ones after that are correct again */
    (void)numacoll_barrier(t);
    if (!bad && !nct_oob_all(b, 0, all))
        bad = 13;
    for (int i = 0; i < 2 && !bad; i++) {
        bad = one(t, me, p, i ? GA : AG, p - 1, 1, 0, 777, 500 + (unsigned)i);
        if (bad)
            fprintf(stderr, "rank %d: a correct call after the mismatch "
                    "failed\n", me);
    }
    free(big);
    free(small);
    numacoll_team_destroy(t);
    return bad;
}

/* mismatch_body's case C at p = 2 .. pmax, each run asserted (what:
 * the test's words in a failure's line). */
static void bad_runs(bad_case_t C, int pmax, const char *what)
{
    for (int p = 2; p <= pmax; p++) {
        int rc = nct_run(p, mismatch_body, &C);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc)
            fprintf(stderr, "%s mismatch: %s case %d, %zu bytes%s, p %d "
                    "failed\n", what, kind_name[C.k], C.how, C.n,
                    C.lines ? " (the lines' limit)" : "", p);
    }
}

static void test_mismatch(void)
{
    for (int k = AG; k <= AA; k++)
        for (int how = 0; how < 3; how++) {
            if ((k == AG || k == AA) && how == 0)
                continue;   /* no root */
            bad_runs((bad_case_t){k, how, 0, 0}, 4, "staged");
        }
}


/* ---- inline Allgather ---------------------------------------------------- */

#define AG_INLINE "allgather p=1-* size=0-2048 alg=inline\n"

/* Blocks around the lines' edges (48 bytes in line 0, 56 after) up to
 * the rule's 2048 and one past it (staged), uniform and v, in place, with
 * an inline Allreduce on the same lines between them. */
static int ag_inline_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 50000);
    if (!t)
        return 1;
    static const size_t sizes[] = {0, 1, 8, 47, 48, 49, 104, 105, 500,
                                   2047, 2048, 2049};
    const int p = b->size, me = b->rank;
    int bad = 0;
    unsigned call = 900;
    for (size_t z = 0; z < sizeof sizes / sizeof *sizes && !bad; z++)
        for (int v = 0; v < 2 && !bad; v++)
            for (int ip = 0; ip < 2 && !bad; ip++) {
                bad = one(t, me, p, AG, -1, v, ip, sizes[z], call++);
                int32_t in[3] = {me, 2 * me, (int32_t)z}, out[3];
                int rc = numacoll_allreduce(t, in, out, 3,
                                            NUMACOLL_DTYPE_INT32,
                                            NUMACOLL_OP_SUM);
                if (!bad && rc != NUMACOLL_OK)
                    bad = nct_say(t, me, "allreduce", rc);
                if (!bad && (out[0] != p * (p - 1) / 2 ||
                             out[1] != p * (p - 1) ||
                             out[2] != p * (int32_t)z))
                    bad = 7;
            }
    /* three in flight at once, completed in reverse order */
    uint64_t mine[3], all[3][8];
    numacoll_request_t *rq[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3 && !bad; i++) {
        mine[i] = (uint64_t)me * 1000 + (uint64_t)i;
        int rc = numacoll_iallgather(t, &mine[i], all[i], sizeof mine[i],
                                     &rq[i]);
        if (rc != NUMACOLL_OK)
            bad = nct_say(t, me, "iallgather", rc);
    }
    for (int i = 2; i >= 0 && !bad; i--) {
        int rc = numacoll_wait(&rq[i]);
        if (rc != NUMACOLL_OK)
            bad = nct_say(t, me, "wait", rc);
        for (int j = 0; j < p && !bad; j++)
            if (all[i][j] != (uint64_t)j * 1000 + (uint64_t)i)
                bad = 8;
    }
    numacoll_team_destroy(t);
    return bad;
}

static void test_ag_inline(void)
{
    nct_team_rules = AG_INLINE;
    for (int p = 1; p <= 8; p++) {
        int rc = nct_run(p, ag_inline_body, NULL);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc)
            fprintf(stderr, "inline allgather: p = %d failed\n", p);
    }
    /* mismatches through the inline lines: sizes, a v-count, and two
     * v-counts of the same total (only line 0's size tells) */
    for (int how = 1; how <= 3; how++) {
        bad_case_t C = {AG, how, 40, 0};
        for (int p = 2; p <= 4; p++)
            CU_ASSERT_EQUAL(nct_run(p, mismatch_body, &C), 0);
    }
    nct_team_rules = NULL;
    /* two v-counts of the same total on either side of the built-in
     * inline limit (64): rank 0 stages (68), the others go inline */
    bad_case_t X = {AG, 3, 60, 0};
    for (int p = 2; p <= 3; p++)
        CU_ASSERT_EQUAL(nct_run(p, mismatch_body, &X), 0);
}

/* ---- inline Gather, Scatter, Alltoall ---------------------------------- */

#define GA_INLINE                                                             \
    "allgather p=1-* size=0-2048 alg=inline\n"                                \
    "gather p=1-* size=0-2048 alg=inline\n"                                   \
    "scatter p=1-* size=0-2048 alg=inline\n"                                  \
    "alltoall p=1-* size=0-2048 alg=inline\n"                                 \
    "scan p=1-* size=0-8192 alg=inline\n"

/* Around the lines' edges up to the rules' 2048 and one past (staged) */
static const size_t inl_sizes[] = {0, 1, 8, 47, 48, 49, 104, 105, 500,
                                   2048, 2049};

/* Back to back: 200 Gathers with rotating roots, then 200 Scatters, then
 * 200 rounds of Gather, Scatter, Alltoall, an inline Allreduce and an
 * inline Scan on the same lines; every rank's lines are reused every
 * other call, by readers of every kind (the reuse rule's test). */
static int inl_mixed_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 50000);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    int bad = 0;
    unsigned call = 2000;
    for (int i = 0; i < 200 && !bad; i++)
        bad = one(t, me, p, GA, i % p, 0, 0, 8 + (size_t)(i % 3) * 50,
                  call++);
    for (int i = 0; i < 200 && !bad; i++)
        bad = one(t, me, p, SC, (i * 3) % p, 0, 0, 8 + (size_t)(i % 3) * 50,
                  call++);
    for (int i = 0; i < 200 && !bad; i++) {
        const int root = (i + 1) % p;
        bad = one(t, me, p, GA, root, 0, i % 5 == 0 && me == root, 64, call++);
        if (!bad)
            bad = one(t, me, p, SC, (root + 1) % p, 0, 0, 40, call++);
        if (!bad)
            bad = a2a_one(t, me, p, i % 2 ? 8 : 120, i % 3 == 0, call++);
        if (!bad)
            bad = nct_allreduce_probe(t, me, p);
        int32_t in[2] = {me + i, 1}, out[2] = {0, 0};
        int rc = bad ? NUMACOLL_OK
                     : numacoll_scan(t, in, out, 2, NUMACOLL_DTYPE_INT32,
                                     NUMACOLL_OP_SUM);
        if (!bad && rc != NUMACOLL_OK)
            bad = nct_say(t, me, "scan", rc);
        if (!bad && (out[0] != me * (me + 1) / 2 + (me + 1) * i ||
                     out[1] != me + 1))
            bad = 21;
    }
    numacoll_team_destroy(t);
    return bad;
}

/* Persistent inline Gather, Scatter and Alltoall, started 200 times. */
static int inl_persistent_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 50000);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank, root = p / 2;
    enum { EACH = 100 };
    unsigned char *gv = malloc((size_t)p * EACH), *own = malloc(EACH);
    unsigned char *sc_send = malloc((size_t)p * EACH), *sc = malloc(EACH);
    unsigned char *as = malloc((size_t)p * EACH), *ar = malloc((size_t)p * EACH);
    numacoll_request_t *r[3];
    int bad = 0;
    int rc = numacoll_gather_init(t, own, gv, EACH, root, &r[0]);
    if (rc == NUMACOLL_OK)
        rc = numacoll_scatter_init(t, sc_send, sc, EACH, root, &r[1]);
    if (rc == NUMACOLL_OK)
        rc = numacoll_alltoall_init(t, as, ar, EACH, &r[2]);
    if (rc != NUMACOLL_OK)
        bad = nct_say(t, me, "init", rc);
    for (unsigned it = 0; it < 200 && !bad; it++) {
        fill(own, it, me, EACH);
        for (int j = 0; j < p; j++) {
            fill(sc_send + (size_t)j * EACH, it + 1, j, EACH);
            fill(as + (size_t)j * EACH, it + 2, me * 64 + j, EACH);
        }
        for (int i = 0; i < 3 && !bad; i++)
            if ((rc = numacoll_start(r[i])) != NUMACOLL_OK)
                bad = nct_say(t, me, "start", rc);
        for (int i = 2; i >= 0 && !bad; i--)
            if ((rc = numacoll_wait(&r[i])) != NUMACOLL_OK)
                bad = nct_say(t, me, "wait", rc);
        for (int j = 0; j < p && !bad; j++) {
            if (me == root && !same(gv + (size_t)j * EACH, it, j, EACH))
                bad = 22;
            if (!same(ar + (size_t)j * EACH, it + 2, j * 64 + me, EACH))
                bad = 23;
        }
        if (!bad && !same(sc, it + 1, me, EACH))
            bad = 24;
        if (bad > 2)
            fprintf(stderr, "rank %d: persistent inline start %u wrong "
                    "(%d)\n", me, it, bad);
    }
    for (int i = 0; i < 3 && rc == NUMACOLL_OK; i++)
        numacoll_request_free(&r[i]);
    free(gv), free(own), free(sc_send), free(sc), free(as), free(ar);
    numacoll_team_destroy(t);
    return bad;
}

static void test_small_inline(void)
{
    nct_team_rules = GA_INLINE;
    /* every root, uniform (inline) and v (staged between), in place */
    for (int v = 0; v < 2; v++)
        for (int ip = 0; ip < 2; ip++) {
            sweep_t S = {inl_sizes, 11, 0, 0, v, ip, 1};
            for (int p = 1; p <= 8; p++) {
                int rc = nct_run(p, sweep_body, &S);
                CU_ASSERT_EQUAL(rc, 0);
                if (rc)
                    fprintf(stderr, "small inline: v %d in place %d p = %d "
                            "failed\n", v, ip, p);
            }
        }
    for (int p = 1; p <= 8; p++) {
        int rc = nct_run(p, inl_mixed_body, NULL);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc)
            fprintf(stderr, "small inline mixed: p = %d failed\n", p);
    }
    for (int p = 1; p <= 6; p++) {
        CU_ASSERT_EQUAL(nct_run(p, flight_body, NULL), 0);
        CU_ASSERT_EQUAL(nct_run(p, inl_persistent_body, NULL), 0);
        CU_ASSERT_EQUAL(nct_run(p, a2a_requests_body, NULL), 0);
    }
    /* different roots and sizes through the lines */
    for (int k = GA; k <= AA; k++)
        for (int how = 0; how < 2; how++) {
            /* two ranks each Scatter's root: no rank waits (a root
             * writes and goes, as the inline Bcast's), so none fails */
            if ((k == AA || k == SC) && how == 0)
                continue;
            bad_runs((bad_case_t){k, how, 40, 0}, 4, "inline");
        }
    nct_team_rules = NULL;
}

/* ---- single copy (alg=cma) ---------------------------------------------- */

/* Every gather single-copy in pieces of 4 KiB at every size (nct_team's
 * rf overrides f where a body gives one: smaller pieces still). */
#define CMA_RULES                                                             \
    "allgather p=1-* size=* alg=cma f=4K s=4\n"                               \
    "gather p=1-* size=* alg=cma f=4K s=4\n"                                  \
    "scatter p=1-* size=* alg=cma f=4K s=4\n"                                 \
    "alltoall p=1-* size=* alg=cma f=4K s=4\n"

/* A team of nct_team's config has single copy as wanted (on: the rules
 * really run as cma here, not on the fallback; this machine permits it). */
static int cma_state_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 50000);
    if (!t)
        return 1;
    int ok = numacoll_team_single_copy(t, NULL) == (nct_team_single_copy != 0);
    if (!ok)
        fprintf(stderr, "rank %d: single copy %d, want %d\n", b->rank,
                numacoll_team_single_copy(t, NULL), nct_team_single_copy);
    numacoll_team_destroy(t);
    return ok ? 0 : 1;
}

/* Sizes around the 4 KiB pieces, 0 B blocks, v counts with zeros and
 * displacements out of order, in place, every root, p = 1..8; requests
 * and persistent ones (1 and 2 KiB pieces there); mismatches. */
static void cma_all(int single_copy)
{
    static const size_t sizes[] = {0, 1, 40, 4095, 4096, 4097,
                                   3 * 4096 + 17, 131072 + 5};
    nct_team_rules = CMA_RULES;
    nct_team_single_copy = single_copy;
    CU_ASSERT_EQUAL(nct_run(2, cma_state_body, NULL), 0);
    for (int p = 1; p <= 8; p++) {
        sweep_t S = {sizes, 8, 0, 0, 0, 0, 1};
        int rc = nct_run(p, sweep_body, &S);
        sweep_t V = {sizes, 8, 0, 0, 1, 0, 1};
        rc |= nct_run(p, sweep_body, &V);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc)
            fprintf(stderr, "cma (single copy %d): p = %d failed\n",
                    single_copy, p);
    }
    for (int p = 2; p <= 5; p++) {
        sweep_t I = {sizes, 8, 0, 0, 0, 1, 1};
        CU_ASSERT_EQUAL(nct_run(p, sweep_body, &I), 0);
        sweep_t IV = {sizes, 8, 0, 0, 1, 1, 1};
        CU_ASSERT_EQUAL(nct_run(p, sweep_body, &IV), 0);
        CU_ASSERT_EQUAL(nct_run(p, flight_body, NULL), 0);
        CU_ASSERT_EQUAL(nct_run(p, persistent_body, NULL), 0);
        CU_ASSERT_EQUAL(nct_run(p, a2a_requests_body, NULL), 0);
    }
    static const size_t big[] = {4u << 20};
    sweep_t L = {big, 1, 0, 0, 0, 0, 0};
    CU_ASSERT_EQUAL(nct_run(2, sweep_body, &L), 0);
    for (int k = AG; k <= AA; k++)
        for (int how = (k == AG || k == AA); how <= 2; how++) {
            bad_runs((bad_case_t){k, how, 70000, 0}, 3, "cma");
        }
    nct_team_rules = NULL;
    nct_team_single_copy = 2;
}

static void test_cma(void) { cma_all(2); }
static void test_cma_fallback(void)
{
    cma_all(0);
    /* the built-in table's cma rules (f = 1 MiB, no staging slot) staged
     * with f cut to the slots */
    static const size_t big[] = {40000, 70000, (1u << 20) + 7};
    nct_team_single_copy = 0;
    for (int p = 2; p <= 3; p++)
        for (int v = 0; v < 2; v++) {
            sweep_t S = {big, 3, 0, 0, v, 0, 1};
            CU_ASSERT_EQUAL(nct_run(p, sweep_body, &S), 0);
        }
    nct_team_single_copy = 2;
}

/* Staged below 4 KiB, single copy from there. The v forms whose blocks
 * not every rank knows (gatherv, scatterv, alltoallv) choose at the call
 * from the largest block (gather_cma.c, PICK): both sides of it, with
 * requests and persistent ones. A uniform Gather or Scatter whose block
 * sizes straddle the threshold runs different algorithms on different
 * ranks, which must meet as a mismatch, not a hang. */
#define THRESH_RULE(c)                                                        \
    c " p=1-* size=0-4095 alg=staged f=4K s=4\n" c                            \
      " p=1-* size=4K-* alg=cma f=4K s=4\n"

static void test_cma_threshold(void)
{
    static const size_t sizes[] = {0, 40, 3000, 4090, 5000, 131072 + 5};
    nct_team_rules = THRESH_RULE("allgather") THRESH_RULE("gather")
        THRESH_RULE("scatter") THRESH_RULE("alltoall");
    for (int p = 2; p <= 5; p++) {
        for (int v = 0; v < 2; v++)
            for (int ip = 0; ip < 2; ip++) {
                sweep_t S = {sizes, 6, 0, 0, v, ip, 1};
                CU_ASSERT_EQUAL(nct_run(p, sweep_body, &S), 0);
            }
        CU_ASSERT_EQUAL(nct_run(p, flight_body, NULL), 0);
        CU_ASSERT_EQUAL(nct_run(p, persistent_body, NULL), 0);
        CU_ASSERT_EQUAL(nct_run(p, a2a_requests_body, NULL), 0);
    }
    for (int k = GA; k <= SC; k++) {
        bad_case_t C = {k, 1, 4096 - 32, 0};
        for (int p = 2; p <= 3; p++)
            CU_ASSERT_EQUAL(nct_run(p, mismatch_body, &C), 0);
    }
    nct_team_rules = NULL;
}

/* Alltoallv under a single-copy rule whose staged rule below it has a
 * slot too small for an 8-byte header per peer: the call's arguments are
 * checked against the single-copy rule, but small blocks run the staged
 * one, so the choice at the call must refuse it (every rank alike), not
 * write headers past the slot; a later call that stays single copy works. */
static int a2av_small_slot_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 50000);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    enum { BIG = 8192 };
    size_t cnt[16], dsp[16];
    unsigned char *in = malloc((size_t)p * BIG), *out = malloc((size_t)p * BIG);
    for (int j = 0; j < p; j++) {
        cnt[j] = 16;
        dsp[j] = (size_t)j * BIG;
    }
    memset(in, me, (size_t)p * BIG);
    int bad = 0;
    int rc = numacoll_alltoallv(t, in, cnt, dsp, out, cnt, dsp);
    if (rc != NUMACOLL_ERR_ARG ||
        !strstr(numacoll_team_last_error(t), "8-byte header"))
        bad = nct_say(t, me, "alltoallv on a too small staged slot", rc);
    for (int j = 0; j < p; j++)
        cnt[j] = BIG;
    (void)numacoll_barrier(t);
    rc = bad ? NUMACOLL_OK : numacoll_alltoallv(t, in, cnt, dsp, out, cnt, dsp);
    if (!bad && rc != NUMACOLL_OK)
        bad = nct_say(t, me, "alltoallv single copy after the refusal", rc);
    for (int j = 0; j < p && !bad; j++)
        if (out[(size_t)j * BIG] != (unsigned char)j ||
            out[(size_t)j * BIG + BIG - 1] != (unsigned char)j)
            bad = 25;
    free(in);
    free(out);
    numacoll_team_destroy(t);
    return bad;
}

static void test_a2av_small_slot(void)
{
    /* f = 64 (a multiple of the line): 64 / 9 < 8 bytes a peer at p = 10 */
    nct_team_rules = "alltoall p=1-* size=0-4095 alg=staged f=64 s=4\n"
                     "alltoall p=1-* size=4096-* alg=cma f=4K s=4\n";
    for (int p = 10; p <= 10; p++)
        CU_ASSERT_EQUAL(nct_run(p, a2av_small_slot_body, NULL), 0);
    nct_team_rules = NULL;
}

/* ---- refused arguments ------------------------------------------------ */

static int refused_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 0);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    unsigned char buf[64 * 8], one_b[64];
    size_t cnt[16], dsp[16];
    for (int j = 0; j < p; j++)
        cnt[j] = 64, dsp[j] = (size_t)j * 64;
    int bad = 0, rc;
    /* every rank refuses alike: nobody waits, and the next call works */
    rc = numacoll_gather(t, one_b, buf, 64, p);
    if (rc != NUMACOLL_ERR_ARG || !strstr(numacoll_team_last_error(t), "root"))
        bad = nct_say(t, me, "root out of range accepted", rc);
    rc = numacoll_allgatherv(t, one_b, 64, buf, NULL, dsp);
    if (!bad && (rc != NUMACOLL_ERR_ARG ||
                 !strstr(numacoll_team_last_error(t), "byte count")))
        bad = nct_say(t, me, "allgatherv without counts accepted", rc);
    rc = numacoll_allgatherv(t, one_b, 63, buf, cnt, dsp);
    if (!bad && rc != NUMACOLL_ERR_ARG)
        bad = nct_say(t, me, "allgatherv sendbytes != recvbytes[me] accepted",
                      rc);
    /* Alltoallv: a rank's block to itself sent and received at other
     * sizes, a missing send array */
    size_t scnt[8];
    for (int j = 0; j < p; j++)
        scnt[j] = j == me ? 63 : 64;
    unsigned char out[64 * 8];
    rc = numacoll_alltoallv(t, buf, scnt, dsp, out, cnt, dsp);
    if (!bad && rc != NUMACOLL_ERR_ARG)
        bad = nct_say(t, me, "alltoallv sendbytes[me] != recvbytes[me] "
                      "accepted", rc);
    rc = numacoll_alltoallv(t, buf, cnt, NULL, out, cnt, dsp);
    if (!bad && (rc != NUMACOLL_ERR_ARG ||
                 !strstr(numacoll_team_last_error(t), "displacement")))
        bad = nct_say(t, me, "alltoallv without sdispls accepted", rc);
    rc = numacoll_scatter(t, NULL, one_b, 64, 0);
    if (!bad && me == 0 && rc != NUMACOLL_ERR_ARG)
        bad = nct_say(t, me, "scatter from a NULL buffer accepted", rc);
    numacoll_request_t *r = NULL;
    rc = numacoll_igather(t, NUMACOLL_IN_PLACE, buf, 64, 0, &r);
    if (!bad && me != 0 && (rc != NUMACOLL_ERR_ARG || r))
        bad = nct_say(t, me, "in place on a non-root accepted", rc);
    if (!bad && me == 0 && rc == NUMACOLL_OK)
        numacoll_wait(&r);
    /* after the refusals (and the resynchronisation they may need),
     * correct calls work */
    (void)numacoll_barrier(t);
    int all[64];
    nct_oob_all(b, 0, all);
    (void)numacoll_barrier(t);
    if (!bad)
        bad = one(t, me, p, SC, 0, 0, 0, 64, 1);
    numacoll_team_destroy(t);
    return bad;
}

static void test_refused(void)
{
    for (int p = 2; p <= 3; p++)
        CU_ASSERT_EQUAL(nct_run(p, refused_body, NULL), 0);
}

/* numacoll_team_calls: every collective counted once per completed call,
 * whatever its form (v, _block, nonblocking, persistent start); a failed
 * call not; unknown collectives refused. */
static int calls_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 0);
    if (!t)
        return 1;
    const int p = b->size;
    int64_t in[16], out[16];
    unsigned char blk[8 * 16], all[8 * 16];
    size_t cnt[8], dsp[8], rc8[8];
    for (int j = 0; j < p; j++)
        cnt[j] = 8, dsp[j] = (size_t)j * 8, rc8[j] = 1;
    for (int i = 0; i < 16; i++)
        in[i] = i + b->rank;
    memset(blk, b->rank, sizeof blk);
    const numacoll_dtype_t I = NUMACOLL_DTYPE_INT64;
    const numacoll_op_t S = NUMACOLL_OP_SUM;
    int bad = 0;
    bad += numacoll_bcast(t, blk, 8, 0) != NUMACOLL_OK;
    bad += numacoll_barrier(t) != NUMACOLL_OK;
    bad += numacoll_reduce(t, in, out, 2, I, S, p - 1) != NUMACOLL_OK;
    bad += numacoll_allreduce(t, in, out, 2, I, S) != NUMACOLL_OK;
    bad += numacoll_allgather(t, blk, all, 8) != NUMACOLL_OK;
    bad += numacoll_allgatherv(t, blk, 8, all, cnt, dsp) != NUMACOLL_OK;
    bad += numacoll_gather(t, blk, all, 8, 0) != NUMACOLL_OK;
    bad += numacoll_gatherv(t, blk, 8, all, cnt, dsp, 0) != NUMACOLL_OK;
    bad += numacoll_scatter(t, all, blk, 8, 0) != NUMACOLL_OK;
    bad += numacoll_scatterv(t, all, cnt, dsp, blk, 8, 0) != NUMACOLL_OK;
    bad += numacoll_alltoall(t, all, blk, 8) != NUMACOLL_OK;
    bad += numacoll_alltoallv(t, all, cnt, dsp, blk, cnt, dsp) != NUMACOLL_OK;
    bad += numacoll_reduce_scatter_block(t, in, out, 1, I, S) != NUMACOLL_OK;
    bad += numacoll_reduce_scatter(t, in, out, rc8, I, S) != NUMACOLL_OK;
    bad += numacoll_scan(t, in, out, 2, I, S) != NUMACOLL_OK;
    bad += numacoll_exscan(t, in, out, 2, I, S) != NUMACOLL_OK;
    /* a nonblocking Allgather and a persistent Scan started twice */
    numacoll_request_t *r = NULL;
    bad += numacoll_iallgather(t, blk, all, 8, &r) != NUMACOLL_OK ||
           numacoll_wait(&r) != NUMACOLL_OK;
    bad += numacoll_scan_init(t, in, out, 2, I, S, &r) != NUMACOLL_OK;
    for (int k = 0; k < 2 && r; k++)
        bad += numacoll_start(r) != NUMACOLL_OK ||
               numacoll_wait(&r) != NUMACOLL_OK;
    bad += numacoll_request_free(&r) != NUMACOLL_OK;
    /* refused here, on every rank alike: no call, no count */
    bad += numacoll_bcast(t, blk, 8, p + 5) != NUMACOLL_ERR_ARG;
    static const uint64_t want[NUMACOLL_COLL_COUNT] = {
        [NUMACOLL_COLL_BCAST] = 1,     [NUMACOLL_COLL_BARRIER] = 1,
        [NUMACOLL_COLL_REDUCE] = 1,    [NUMACOLL_COLL_ALLREDUCE] = 1,
        [NUMACOLL_COLL_ALLGATHER] = 3, [NUMACOLL_COLL_GATHER] = 2,
        [NUMACOLL_COLL_SCATTER] = 2,   [NUMACOLL_COLL_ALLTOALL] = 2,
        [NUMACOLL_COLL_REDUCE_SCATTER] = 2, [NUMACOLL_COLL_SCAN] = 3,
        [NUMACOLL_COLL_EXSCAN] = 1};
    for (int c = 0; c < NUMACOLL_COLL_COUNT; c++) {
        uint64_t n = 99;
        if (numacoll_team_calls(t, (numacoll_coll_t)c, &n) != NUMACOLL_OK ||
            n != want[c]) {
            fprintf(stderr, "rank %d: collective %d: %llu calls, want %llu\n",
                    b->rank, c, (unsigned long long)n,
                    (unsigned long long)want[c]);
            bad++;
        }
    }
    numacoll_counters_t ct;
    bad += numacoll_team_counters(t, &ct) != NUMACOLL_OK || ct.bcast != 1 ||
           ct.barrier != 1 || ct.reduce != 1 || ct.allreduce != 1;
    uint64_t n;
    bad += numacoll_team_calls(t, NUMACOLL_COLL_COUNT, &n) != NUMACOLL_ERR_ARG;
    bad += numacoll_team_calls(t, (numacoll_coll_t)-1, &n) != NUMACOLL_ERR_ARG;
    bad += numacoll_team_calls(t, NUMACOLL_COLL_SCAN, NULL) != NUMACOLL_ERR_ARG;
    bad += numacoll_team_calls(NULL, NUMACOLL_COLL_SCAN, &n) !=
           NUMACOLL_ERR_ARG;
    numacoll_team_destroy(t);
    return bad;
}

/* ---- inline Alltoallv ---------------------------------------------------- */

/* mismatch_body's v-count case (rank 0's count for rank p - 1 halved) of
 * kind k at p = 2..4, for each of the n sizes ns. */
static void v_mismatches(int k, const size_t *ns, int n)
{
    for (int i = 0; i < n; i++)
        bad_runs((bad_case_t){k, 2, ns[i], 0}, 4, "v");
}

/* Rank j's block for rank d: 8 to 12 bytes (0 where (3 a + b) % 4 == 1,
 * a <= b the pair), and `big` between ranks 0 and p - 1 (from 0 to p - 1
 * only, unless sym: in place needs the counts symmetric). */
static size_t mixed_cnt(int j, int d, int p, size_t big, int sym)
{
    if (big && ((j == 0 && d == p - 1) || (sym && j == p - 1 && d == 0)))
        return big;
    int a = j < d ? j : d, b = j < d ? d : j;
    return (3 * a + b) % 4 == 1 ? 0 : 8 + (size_t)(a + b) % 5;
}

/* Alltoallv calls that fit the inline lines and calls where one pair's
 * block does not (at a2av_max and one past it, far past it, twice in a
 * row), blocking, in place and in flight: every result exact, and every
 * rank's a2av_try after each call says whether that call fitted (the
 * next is tried inline only then; equal on every rank). */
static int a2av_inline_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 50000);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    const size_t max = t->red->a2av_max;
    int bad = p > 1 && max == 0;   /* the built-in table: inline to p = 8 */
    if (bad)
        fprintf(stderr, "rank %d: no inline Alltoallv at p = %d\n", me, p);
    const size_t big[] = {0, max, max + 1, 0, 0, 5000, max + 1, 0, 1u << 20,
                          0};
    const int n = (int)(sizeof big / sizeof big[0]);
    unsigned call = 900;
    for (int ip = 0; ip < 2 && !bad; ip++)
        for (int k = 0; k < n && !bad; k++) {
            a2av_t a;
            for (int j = 0; j < p; j++) {
                a.scnt[j] = mixed_cnt(me, j, p, big[k], ip);
                a.rcnt[j] = mixed_cnt(j, me, p, big[k], ip);
            }
            int rc = a2av_post(t, me, p, &a, ip, call++, NULL, 0);
            if (rc != NUMACOLL_OK) {
                free(a.send);
                free(a.recv);
                bad = nct_say(t, me, "alltoallv", rc);
                break;
            }
            bad = a2av_check(me, p, &a, 0);
            /* (p = 1: no inline Alltoallv, its flag unread) */
            if (!bad && p > 1 && t->red->a2av_try != (big[k] <= max)) {
                fprintf(stderr, "rank %d: after an alltoallv with a %zu-byte "
                        "block (inline up to %zu), a2av_try %d\n", me,
                        big[k], max, t->red->a2av_try);
                bad = 20;
            }
        }
    /* in flight: small, large, small, small, completed in order */
    a2av_t q[4];
    numacoll_request_t *req[4] = {NULL};
    int posted = 0;
    for (int k = 0; k < 4 && !bad; k++, posted++) {
        for (int j = 0; j < p; j++) {
            q[k].scnt[j] = mixed_cnt(me, j, p, k == 1 ? 3000 : 0, 0);
            q[k].rcnt[j] = mixed_cnt(j, me, p, k == 1 ? 3000 : 0, 0);
        }
        int rc = a2av_post(t, me, p, &q[k], 0, call++, &req[k], 0);
        if (rc != NUMACOLL_OK)
            bad = nct_say(t, me, "ialltoallv", rc);
    }
    for (int k = 0; k < posted; k++) {
        int rc = req[k] ? numacoll_wait(&req[k]) : NUMACOLL_OK;
        if (!bad && rc != NUMACOLL_OK)
            bad = nct_say(t, me, "ialltoallv wait", rc);
        int wrong = a2av_check(me, p, &q[k], 0);
        bad = bad ? bad : wrong;
    }
    if (!bad && p > 1 && !t->red->a2av_try) {
        fprintf(stderr, "rank %d: a2av_try %d after small ialltoallv\n", me,
                t->red->a2av_try);
        bad = 21;
    }
    numacoll_team_destroy(t);
    return bad;
}

static void test_a2av_inline(void)
{
    for (int p = 1; p <= 8; p++) {
        int rc = nct_run(p, a2av_inline_body, NULL);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc)
            fprintf(stderr, "inline alltoallv: p = %d failed\n", p);
    }
    /* the same where large blocks go single copy (PICK: the blocks from
     * 4 KiB on; 257 B - 4 KiB staged) */
    nct_team_rules = "alltoall p=1-* size=0-256 alg=inline\n"
                     "alltoall p=1-* size=257-4095 alg=staged f=4K s=4\n"
                     "alltoall p=1-* size=4K-* alg=cma f=4K s=4\n";
    for (int p = 2; p <= 4; p++) {
        int rc = nct_run(p, a2av_inline_body, NULL);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc)
            fprintf(stderr, "inline alltoallv, single copy: p = %d failed\n",
                    p);
    }
    nct_team_rules = NULL;
    /* v-counts that differ: both sides inline (20 and 40 bytes), both
     * past it, and one side inline while the other is not (p = 2, 3:
     * 150 and 300 bytes; inline to 256 there) */
    static const size_t ns[] = {40, 300, 3000};
    v_mismatches(AA, ns, 3);
}

/* ---- Gatherv, Scatterv through the lines --------------------------------- */

/* Every root, blocks of 0 to 52 bytes (in the lines) with rank p - 1's at
 * the lines' limit, one past it and far past it (through the slots in
 * the same call), in place at the root (then the v sweeps, requests in
 * flight and persistent ones the same way); the built-in table sends the
 * small v blocks through the lines from p = 2 to 8 where the rule of
 * their largest size is staged (single copy off: the tests' teams
 * otherwise take it wherever the machine permits). */
static int v_lines_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 50000);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    int bad = p > 1 && (!t->red->gv_max || !t->red->sv_max);
    if (bad)
        fprintf(stderr, "rank %d: no Gatherv or Scatterv lines at p = %d\n",
                me, p);
    unsigned call = 1500;
    for (int k = GA; k <= SC && !bad; k++) {
        const size_t max = k == GA ? t->red->gv_max : t->red->sv_max;
        const size_t last[] = {0, max, max + 1, 5000};
        for (int l = 0; l < 4 && !bad; l++)
            for (int root = 0; root < p && !bad; root++)
                for (int ip = 0; ip < 2 && !bad; ip++) {
                    v_last = last[l];
                    bad = one(t, me, p, k, root, 1, ip && me == root,
                              l ? 8 : 40, call++);
                }
    }
    v_last = 0;
    numacoll_team_destroy(t);
    return bad;
}

static void test_v_lines(void)
{
    nct_team_single_copy = 0;
    for (int p = 1; p <= 8; p++) {
        int rc = nct_run(p, v_lines_body, NULL);
        /* the v sweeps, every root, out of place and in place */
        sweep_t S = {v_sizes, 5, 0, 0, 1, 0, 1};
        rc |= nct_run(p, sweep_body, &S);
        sweep_t I = {v_sizes, 5, 0, 0, 1, 1, 1};
        rc |= nct_run(p, sweep_body, &I);
        /* nonblocking in flight, persistent */
        if (p <= 6)
            rc |= nct_run(p, flight_body, NULL) |
                  nct_run(p, persistent_body, NULL);
        CU_ASSERT_EQUAL(rc, 0);
        if (rc)
            fprintf(stderr, "gatherv, scatterv lines: p = %d failed\n", p);
    }
    /* both in the lines (20 against 40 bytes), and a block one side puts
     * in the lines and the other expects past them, either way round
     * (the root's count at the limit, the writer's or reader's twice
     * that; the root's twice it, the other's at it) */
    static const size_t ns[] = {40};
    for (int k = GA; k <= SC; k += SC - GA) {
        v_mismatches(k, ns, 1);
        for (int how = 2; how <= 4; how += 2)
            bad_runs((bad_case_t){k, how, 0, 1}, 4, "v lines");
    }
    nct_team_single_copy = 2;
}

/* Gatherv and Scatterv whose rule is single copy (the built-in table's,
 * single copy taken wherever permitted; arg: GA or SC). A Scatterv tries
 * the lines first where the team's last one fitted them; a Gatherv sends
 * the blocks that fit through them, before the single-copy choice, which
 * serves the others. Every root, rank p - 1's block at the limit, one
 * past it and far past it (single copy, or staged below its threshold,
 * the others still in the lines for a Gatherv), in place at the root;
 * the result exact and, for a Scatterv, sv_try on every rank saying
 * whether the call fitted. */
static int sv_try_body(const numacoll_bootstrap_t *b, void *arg)
{
    const int k = *(const int *)arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 50000);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    const size_t max = k == SC ? t->red->sv_max : t->red->gv_max;
    int bad = p > 1 && (!max || !numacoll_team_single_copy(t, NULL));
    if (bad)
        fprintf(stderr, "rank %d: Scatterv lines %zu, single copy %d at "
                "p = %d\n", me, max, numacoll_team_single_copy(t, NULL), p);
    const size_t last[] = {0, max, max + 1, 0, 5000, 0, (size_t)1 << 20,
                           max, 0};
    unsigned call = 1700;
    for (int root = 0; root < p && !bad; root++)
        for (int l = 0; l < (int)(sizeof last / sizeof last[0]) && !bad;
             l++) {
            v_last = last[l];
            bad = one(t, me, p, k, root, 1, (l & 1) && me == root, 8,
                      call++);
            const int fits = root == p - 1 || last[l] <= max;
            if (!bad && k == SC && p > 1 && t->red->sv_try != fits) {
                fprintf(stderr, "rank %d: after a scatterv from %d with a "
                        "%zu-byte block (lines up to %zu), sv_try %d\n", me,
                        root, last[l], max, t->red->sv_try);
                bad = 20;
            }
        }
    v_last = 0;
    numacoll_team_destroy(t);
    return bad;
}

/* A Gatherv whose other blocks go through the lines (single copy its
 * rule) against, on rank p - 1, a uniform Gather of a block past the
 * lines (arg 0: the root would read lines that rank never writes), or a
 * Gatherv of 40 bytes where the root counts 100000 (arg 1: that rank
 * sends through the lines and leaves while the root would move its
 * block by single copy; arg 2: the other way round): an error on some
 * rank, not a hang or a silent success, and the team goes on. */
static int gv_uniform_body(const numacoll_bootstrap_t *b, void *arg)
{
    const int how = *(const int *)arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 0);
    if (!t)
        return 1;
    const int p = b->size, me = b->rank;
    enum { BIG = 100000 };
    size_t cnt[8], dsp[8], off = 0;
    for (int j = 0; j < p; j++) {
        cnt[j] = j == p - 1 ? BIG : 40;
        dsp[j] = off;
        off += cnt[j];
    }
    unsigned char *in = calloc(BIG, 1), *out = calloc(off, 1);
    if (how == 2)
        cnt[p - 1] = 40;   /* the root's count; the rank sends BIG */
    int rc = me == p - 1 && how == 0
                 ? numacoll_gather(t, in, out, BIG, 0)
                 : numacoll_gatherv(t, in,
                                    me != p - 1 ? cnt[me] : how == 1 ? 40 : BIG,
                                    out, cnt, dsp, 0);
    int all[64], bad = 0, failed = 0;
    if (!nct_oob_all(b, rc, all))
        bad = 11;
    for (int j = 0; j < p; j++)
        failed += all[j] != NUMACOLL_OK;
    if (!bad && !failed)
        bad = nct_say(t, me, "uniform gather against gatherv passed", rc);
    (void)numacoll_barrier(t);
    if (!bad && !nct_oob_all(b, 0, all))
        bad = 13;
    if (!bad)
        bad = nct_allreduce_probe(t, me, p);
    free(in);
    free(out);
    numacoll_team_destroy(t);
    return bad;
}

static void test_sv_try(void)
{
    for (int how = 0; how < 3; how++)
        for (int p = 2; p <= 4; p++)
            CU_ASSERT_EQUAL(nct_run(p, gv_uniform_body, &how), 0);
    for (int k = GA; k <= SC; k += SC - GA)
        for (int p = 1; p <= 8; p++) {
            int rc = nct_run(p, sv_try_body, &k);
            CU_ASSERT_EQUAL(rc, 0);
            if (rc)
                fprintf(stderr, "%s with single copy: p = %d failed\n",
                        kind_name[k], p);
        }
    /* a block one side puts in the lines and the other expects past
     * them, either way round (line 0, or the single copy's sizes, find
     * it) */
    static const size_t ns[] = {40, 300};
    for (int k = GA; k <= SC; k += SC - GA) {
        for (int how = 2; how <= 4; how += 2)
            bad_runs((bad_case_t){k, how, 0, 1}, 4, "v lines, single copy");
        v_mismatches(k, ns, 2);
    }
}

static void test_calls(void)
{
    for (int p = 1; p <= 3; p++)
        CU_ASSERT_EQUAL(nct_run(p, calls_body, NULL), 0);
}

int nct_register_gather(void)
{
    static const nct_test_t tests[] = {
        {"allgather, gather, scatter byte-exact, p = 1..8, every root, "
         "0 B to 4 MiB", test_exact},
        {"1 KiB fragments in 2 slots, mixed with Allreduce", test_geometry},
        {"v forms: zero counts, displacements out of order", test_v},
        {"in place", test_in_place},
        {"nonblocking, many in flight, interleaved with blocking",
         test_nonblocking},
        {"persistent, started 200 times", test_persistent},
        {"alltoall(v): nonblocking in flight, persistent started 100 (50) "
         "times",
         test_alltoall_requests},
        {"mismatched roots, sizes and v-counts: an error, not a hang",
         test_mismatch},
        {"refused arguments", test_refused},
        {"inline allgather: blocks of 0..2049 bytes, v, in place, between "
         "inline allreduces, in flight; mismatches", test_ag_inline},
        {"inline gather, scatter, alltoall: 0..2049 bytes, every root, in "
         "place, 600 back to back mixed with allreduce and scan, in flight, "
         "persistent; mismatches", test_small_inline},
        {"single copy: sizes around 4 KiB pieces, v, in place, p = 1..8, "
         "every root, requests, persistent, mismatches", test_cma},
        {"single copy forced off: the same on the staged fallback",
         test_cma_fallback},
        {"single copy from 4 KiB, staged below: v forms choose at the call, "
         "a Gather or Scatter straddling it is a mismatch",
         test_cma_threshold},
        {"single copy above a staged rule too small for Alltoallv's "
         "headers: refused at the call on every rank", test_a2av_small_slot},
        {"inline alltoallv: blocks at the lines' limit and past it on one "
         "pair, in place, in flight, the next call's choice; mismatches",
         test_a2av_inline},
        {"gatherv, scatterv: small blocks through the lines, one past them "
         "in the same call, every root, in place; mismatches",
         test_v_lines},
        {"gatherv, scatterv with single copy: small blocks through the "
         "lines first, every root, blocks at the limit and past it, in "
         "place; mismatches", test_sv_try},
        {"numacoll_team_calls: every collective, every form, once per call",
         test_calls},
        {NULL, NULL}};
    return nct_add_suite("gather", tests);
}
