/*
 * The packed v forms of the gathers and Alltoall (numacoll.h:
 * numacoll_allgatherv_packed and friends): the callbacks see every byte
 * of every block once, offsets growing within a block, blocks of 0 bytes
 * never; the bytes arrive byte-exact for p = 1..8, every root, counts
 * with zeros, across fragment boundaries (1 KiB fragments in 2 slots as
 * well as the table's), blocking, nonblocking and persistent; a failing
 * callback is that rank's NUMACOLL_ERR_CALLBACK only; missing callbacks
 * are refused; a packed call met by a contiguous one is a mismatch.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nct.h"
#include "numacoll.h"

#define PMAX 16   /* the most ranks a test runs */

enum { AG, GA, SC, AA };
static const char *const names[] = {"allgatherv", "gatherv", "scatterv",
                                    "alltoallv"};

/* Byte i of the block rank s sends rank d in call c (Allgatherv and
 * Gatherv send one block to all: d = -1). */
static unsigned char val(unsigned c, int s, int d, size_t i)
{
    unsigned long long x = (c + 5) * 0x9e3779b97f4a7c15ULL +
                           (unsigned)(s * 11 + d + 1) * 0xd6e8feb86659fd93ULL +
                           i * 0xbf58476d1ce4e5b9ULL;
    return (unsigned char)(x >> 56 ^ x >> 31 ^ i);
}

/* Bytes rank s sends rank d in call c with blocks around `each`: some
 * blocks empty. */
static size_t cnt_of(int kind, unsigned c, int s, int d, size_t each)
{
    int key = kind == AG || kind == GA ? s : kind == SC ? d : s * 3 + d * 5;
    return (size_t)(key + (int)c) % 4 == 1 ? 0 : each + (size_t)key * 7 % 13;
}

/* One rank's side of a packed call: what it sends and receives, the
 * blocks received (one allocation each), the offset each callback
 * expects next, and the faults seen. */
typedef struct pk {
    int kind, me, p, root;
    unsigned call;
    size_t scnt[PMAX], rcnt[PMAX];
    unsigned char *rbuf[PMAX];
    size_t snext[PMAX], rnext[PMAX];
    int faults;
    int fail_unpack;   /* the unpack callback fails (once it is called) */
} pk_t;

static int pk_pack(void *ctx, int block, size_t off, void *dst, size_t n)
{
    pk_t *k = ctx;
    /* Allgatherv and Gatherv: the rank's one block is numbered as itself */
    int d = k->kind == AG || k->kind == GA ? -1 : block;
    if (block < 0 || block >= k->p || n == 0 || off != k->snext[block] ||
        n > k->scnt[block] - off || ((k->kind == AG || k->kind == GA) &&
                                     block != k->me)) {
        k->faults++;
        return 0;
    }
    for (size_t i = 0; i < n; i++)
        ((unsigned char *)dst)[i] = val(k->call, k->me, d, off + i);
    k->snext[block] += n;
    return 0;
}

static int pk_unpack(void *ctx, int block, size_t off, const void *src,
                     size_t n)
{
    pk_t *k = ctx;
    if (k->fail_unpack)
        return 7;
    if (block < 0 || block >= k->p || n == 0 || off != k->rnext[block] ||
        n > k->rcnt[block] - off) {
        k->faults++;
        return 0;
    }
    memcpy(k->rbuf[block] + off, src, n);
    k->rnext[block] += n;
    return 0;
}

/* Set k up for call c of kind with blocks around each (root for the
 * rooted ones). */
static int pk_setup(pk_t *k, int kind, int me, int p, int root, unsigned c,
                    size_t each)
{
    memset(k, 0, sizeof *k);
    k->kind = kind;
    k->me = me;
    k->p = p;
    k->root = root;
    k->call = c;
    for (int j = 0; j < p; j++) {
        switch (kind) {
        case AG:
            k->scnt[j] = j == me ? cnt_of(AG, c, me, -1, each) : 0;
            k->rcnt[j] = cnt_of(AG, c, j, -1, each);
            break;
        case GA:
            k->scnt[j] = j == me ? cnt_of(GA, c, me, -1, each) : 0;
            k->rcnt[j] = me == root ? cnt_of(GA, c, j, -1, each) : 0;
            break;
        case SC:
            k->scnt[j] = me == root ? cnt_of(SC, c, root, j, each) : 0;
            k->rcnt[j] = j == root ? cnt_of(SC, c, root, me, each) : 0;
            break;
        default:
            k->scnt[j] = cnt_of(AA, c, me, j, each);
            k->rcnt[j] = cnt_of(AA, c, j, me, each);
        }
        k->rbuf[j] = malloc(k->rcnt[j] ? k->rcnt[j] : 1);
        if (!k->rbuf[j])
            return -1;
        memset(k->rbuf[j], 0, k->rcnt[j]);
    }
    return 0;
}

static void pk_free(pk_t *k)
{
    for (int j = 0; j < k->p; j++)
        free(k->rbuf[j]);
}

/* Every byte sent and received, each once, in order; 0 or the count of
 * faults. */
static int pk_check(const pk_t *k)
{
    int bad = k->faults;
    for (int j = 0; j < k->p; j++) {
        bad += k->snext[j] != k->scnt[j];
        bad += k->rnext[j] != k->rcnt[j];
        int d = k->kind == AG || k->kind == GA ? -1 : k->me;
        for (size_t i = 0; i < k->rcnt[j]; i++)
            if (k->rbuf[j][i] != val(k->call, j, d, i)) {
                bad++;
                break;
            }
    }
    if (bad)
        fprintf(stderr, "rank %d: packed %s call %u root %d: %d faults\n",
                k->me, names[k->kind], k->call, k->root, bad);
    return bad;
}

/* Start (mode 0 blocking, 1 nonblocking, 2 persistent: made, not
 * started) k's call. */
static int pk_call(numacoll_team_t *t, pk_t *k, int mode,
                   numacoll_request_t **req)
{
    const int me = k->me;
    switch (k->kind * 3 + mode) {
    case AG * 3:
        return numacoll_allgatherv_packed(t, k->rcnt[me], k->rcnt, pk_pack,
                                          pk_unpack, k);
    case AG * 3 + 1:
        return numacoll_iallgatherv_packed(t, k->rcnt[me], k->rcnt, pk_pack,
                                           pk_unpack, k, req);
    case AG * 3 + 2:
        return numacoll_allgatherv_packed_init(t, k->rcnt[me], k->rcnt,
                                               pk_pack, pk_unpack, k, req);
    case GA * 3:
        return numacoll_gatherv_packed(t, k->scnt[me], k->rcnt, k->root,
                                       pk_pack, pk_unpack, k);
    case GA * 3 + 1:
        return numacoll_igatherv_packed(t, k->scnt[me], k->rcnt, k->root,
                                        pk_pack, pk_unpack, k, req);
    case GA * 3 + 2:
        return numacoll_gatherv_packed_init(t, k->scnt[me], k->rcnt,
                                            k->root, pk_pack, pk_unpack, k,
                                            req);
    case SC * 3:
        return numacoll_scatterv_packed(t, k->scnt, k->rcnt[k->root],
                                        k->root, pk_pack, pk_unpack, k);
    case SC * 3 + 1:
        return numacoll_iscatterv_packed(t, k->scnt, k->rcnt[k->root],
                                         k->root, pk_pack, pk_unpack, k, req);
    case SC * 3 + 2:
        return numacoll_scatterv_packed_init(t, k->scnt, k->rcnt[k->root],
                                             k->root, pk_pack, pk_unpack, k,
                                             req);
    case AA * 3:
        return numacoll_alltoallv_packed(t, k->scnt, k->rcnt, pk_pack,
                                         pk_unpack, k);
    case AA * 3 + 1:
        return numacoll_ialltoallv_packed(t, k->scnt, k->rcnt, pk_pack,
                                          pk_unpack, k, req);
    default:
        return numacoll_alltoallv_packed_init(t, k->scnt, k->rcnt, pk_pack,
                                              pk_unpack, k, req);
    }
}

static const size_t sizes[] = {0, 1, 40, 41, 1000, 5000, 70000};

/* Every kind, every root, every size, blocking; then pairs of every kind
 * in flight together, nonblocking; then persistent requests started
 * three times with new data. arg: the team's fragment size (0: the
 * table's). */
static int sweep_body(const numacoll_bootstrap_t *b, void *arg)
{
    const size_t rf = *(const size_t *)arg;
    const int me = b->rank, p = b->size;
    numacoll_team_t *t = nct_team(b, rf, rf ? 2 : 0, 20000);
    if (!t)
        return 10;
    int bad = 0, rc;
    unsigned c = 0;
    const int nsizes = p > 4 ? 5 : (int)(sizeof sizes / sizeof sizes[0]);
    for (int kind = AG; kind <= AA && !bad; kind++)
        for (int root = 0; root < (kind == GA || kind == SC ? p : 1); root++)
            for (int s = 0; s < nsizes && !bad; s++) {
                pk_t k;
                if (pk_setup(&k, kind, me, p, root, c++, sizes[s]) != 0)
                    return 11;
                if ((rc = pk_call(t, &k, 0, NULL)) != NUMACOLL_OK)
                    bad += nct_say(t, me, names[kind], rc);
                bad += pk_check(&k);
                pk_free(&k);
            }
    /* nonblocking: two calls of each kind in flight, then waited for */
    for (int kind = AG; kind <= AA && !bad; kind++) {
        pk_t k[2];
        numacoll_request_t *req[2] = {NULL, NULL};
        for (int i = 0; i < 2; i++) {
            if (pk_setup(&k[i], kind, me, p, (i + 1) % p, c++,
                         sizes[3 + i]) != 0)
                return 11;
            if ((rc = pk_call(t, &k[i], 1, &req[i])) != NUMACOLL_OK)
                bad += nct_say(t, me, names[kind], rc);
        }
        for (int i = 0; i < 2; i++) {
            if (req[i] && (rc = numacoll_wait(&req[i])) != NUMACOLL_OK)
                bad += nct_say(t, me, names[kind], rc);
            bad += pk_check(&k[i]);
            pk_free(&k[i]);
        }
    }
    /* persistent: one request per kind, started three times, the data
     * (the callbacks' context) new at every start */
    for (int kind = AG; kind <= AA && !bad; kind++) {
        pk_t k;
        numacoll_request_t *req = NULL;
        if (pk_setup(&k, kind, me, p, p - 1, c, sizes[4]) != 0)
            return 11;
        if ((rc = pk_call(t, &k, 2, &req)) != NUMACOLL_OK)
            bad += nct_say(t, me, names[kind], rc);
        int starts = 0;
        for (int start = 0; start < 3 && req && !bad; start++, starts++) {
            pk_free(&k);
            /* same counts (the request's arrays are k's), new data */
            unsigned call = c + (unsigned)start * 4;
            if (pk_setup(&k, kind, me, p, p - 1, call, sizes[4]) != 0)
                return 11;
            if ((rc = numacoll_start(req)) != NUMACOLL_OK ||
                (rc = numacoll_wait(&req)) != NUMACOLL_OK)
                bad += nct_say(t, me, names[kind], rc);
            bad += pk_check(&k);
        }
        bad += !bad && starts != 3;
        c += 12;
        if (req)
            numacoll_request_free(&req);
        pk_free(&k);
    }
    /* the contiguous forms still work on the team between packed ones */
    bad += nct_allreduce_probe(t, me, p) != 0;
    numacoll_team_destroy(t);
    return bad ? 1 : 0;
}

static void test_sweep(void)
{
    static const int ps[] = {1, 2, 3, 5, 8};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        const int p = ps[i];
        for (int f = 0; f < 2; f++) {
            size_t rf = f ? 1024 : 0;
            int rc = nct_run(p, sweep_body, &rf);
            CU_ASSERT_EQUAL(rc, 0);
            if (rc)
                fprintf(stderr, "packed sweep p = %d, fragments %zu: %d\n",
                        p, rf, rc);
        }
    }
}

/* 4 MiB blocks at p = 2: each kind once. */
static int large_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *t = nct_team(b, 0, 0, 30000);
    if (!t)
        return 10;
    int bad = 0, rc;
    for (int kind = AG; kind <= AA && !bad; kind++) {
        pk_t k;
        if (pk_setup(&k, kind, b->rank, b->size, 1, 2, (size_t)4 << 20) != 0)
            return 11;
        if ((rc = pk_call(t, &k, 0, NULL)) != NUMACOLL_OK)
            bad += nct_say(t, b->rank, names[kind], rc);
        bad += pk_check(&k);
        pk_free(&k);
    }
    numacoll_team_destroy(t);
    return bad ? 1 : 0;
}

static void test_large(void)
{
    CU_ASSERT_EQUAL(nct_run(2, large_body, NULL), 0);
}

/* A rank whose unpack fails gets NUMACOLL_ERR_CALLBACK, the others
 * complete with their data, and the team goes on; missing callbacks are
 * refused on every rank; a packed call met by a contiguous one is a
 * mismatch on both. */
static int errors_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    const int me = b->rank, p = b->size;
    numacoll_team_t *t = nct_team(b, 0, 0, 20000);
    if (!t)
        return 10;
    int bad = 0, rc;
    for (int kind = AG; kind <= AA; kind++) {
        /* rank p - 1 fails (a Gatherv's receiver is its root) */
        pk_t k;
        if (pk_setup(&k, kind, me, p, p - 1, 40, 3000) != 0)
            return 11;
        int fails = 0;   /* where unpack is called at all */
        for (int j = 0; j < p; j++)
            fails |= me == p - 1 && k.rcnt[j] > 0;
        k.fail_unpack = fails;
        rc = pk_call(t, &k, 0, NULL);
        if (rc != (fails ? NUMACOLL_ERR_CALLBACK : NUMACOLL_OK)) {
            bad++;
            nct_say(t, me, "failing unpack", rc);
        }
        if (!fails)
            bad += pk_check(&k);
        pk_free(&k);
        /* the next call runs as ever */
        if (pk_setup(&k, kind, me, p, 0, 41, 3000) != 0)
            return 11;
        if ((rc = pk_call(t, &k, 0, NULL)) != NUMACOLL_OK)
            bad += nct_say(t, me, "after a failing unpack", rc);
        bad += pk_check(&k);
        pk_free(&k);
    }
    /* no unpack callback where bytes arrive: refused on every rank */
    size_t cnt[PMAX];
    for (int j = 0; j < p; j++)
        cnt[j] = 100;
    rc = numacoll_allgatherv_packed(t, 100, cnt, pk_pack, NULL, NULL);
    if (rc != NUMACOLL_ERR_ARG) {
        bad++;
        nct_say(t, me, "allgatherv without unpack", rc);
    }
    /* and a pack callback is needed where bytes leave */
    rc = numacoll_alltoallv_packed(t, cnt, cnt, NULL, pk_unpack, NULL);
    if (rc != NUMACOLL_ERR_ARG) {
        bad++;
        nct_say(t, me, "alltoallv without pack", rc);
    }
    if (p == 2) {
        /* rank 0 packed, rank 1 contiguous: a mismatch on both */
        pk_t k;
        if (pk_setup(&k, AG, me, p, 0, 42, 8) != 0)
            return 11;
        unsigned char mine[64] = {0}, all[128];
        size_t dsp[2] = {0, k.rcnt[0]};
        rc = me == 0 ? pk_call(t, &k, 0, NULL)
                     : numacoll_allgatherv(t, mine, k.rcnt[1], all, k.rcnt,
                                           dsp);
        if (rc != NUMACOLL_ERR_MISMATCH) {
            bad++;
            nct_say(t, me, "packed against contiguous", rc);
        }
        pk_free(&k);
    }
    bad += nct_allreduce_probe(t, me, p) != 0;
    numacoll_team_destroy(t);
    return bad ? 1 : 0;
}

static void test_errors(void)
{
    for (int p = 2; p <= 4; p++)
        CU_ASSERT_EQUAL(nct_run(p, errors_body, NULL), 0);
}

/* A persistent packed Alltoallv made with counts of 0 and no callbacks,
 * started after its counts have grown: NUMACOLL_ERR_CALLBACK on every
 * rank, no crash, and the team goes on. */
static int grown_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    const int me = b->rank, p = b->size;
    numacoll_team_t *t = nct_team(b, 0, 0, 20000);
    if (!t)
        return 10;
    size_t cnt[PMAX] = {0};
    numacoll_request_t *req = NULL;
    int bad = 0;
    int rc = numacoll_alltoallv_packed_init(t, cnt, cnt, NULL, NULL, NULL,
                                            &req);
    if (rc != NUMACOLL_OK)
        return nct_say(t, me, "persistent alltoallv of nothing", rc);
    for (int j = 0; j < p; j++)
        cnt[j] = 100;
    if ((rc = numacoll_start(req)) != NUMACOLL_OK ||
        (rc = numacoll_wait(&req)) != NUMACOLL_ERR_CALLBACK) {
        bad++;
        nct_say(t, me, "grown counts without callbacks", rc);
    }
    if (req)
        numacoll_request_free(&req);
    bad += nct_allreduce_probe(t, me, p) != 0;
    numacoll_team_destroy(t);
    return bad ? 1 : 0;
}

/* The staged rule a packed Alltoallv runs (the rule of its largest size
 * names single copy here) holds no 8-byte header per peer at p = 10:
 * refused on every rank, as the contiguous form is where it would run
 * that rule. */
static int small_slot_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    const int me = b->rank, p = b->size;
    numacoll_team_t *t = nct_team(b, 0, 0, 50000);
    if (!t)
        return 10;
    pk_t k;
    if (pk_setup(&k, AA, me, p, 0, 50, 16) != 0)
        return 11;
    int bad = 0, rc = pk_call(t, &k, 0, NULL);
    if (rc != NUMACOLL_ERR_ARG ||
        !strstr(numacoll_team_last_error(t), "8-byte header"))
        bad = nct_say(t, me, "packed alltoallv on a too small slot", rc);
    pk_free(&k);
    if ((rc = numacoll_barrier(t)) != NUMACOLL_OK)
        bad = nct_say(t, me, "barrier after the refusal", rc);
    numacoll_team_destroy(t);
    return bad;
}

static void test_refused_later(void)
{
    CU_ASSERT_EQUAL(nct_run(3, grown_body, NULL), 0);
    nct_team_rules = "alltoall p=1-* size=0-4095 alg=staged f=64 s=4\n"
                     "alltoall p=1-* size=4096-* alg=cma f=4K s=4\n";
    CU_ASSERT_EQUAL(nct_run(10, small_slot_body, NULL), 0);
    nct_team_rules = NULL;
}

int nct_register_packed(void)
{
    static const nct_test_t tests[] = {
        {"packed v forms: every byte once in order, byte-exact, p = 1, 2, 3, 5, 8, "
         "every root, 0 B to 70 KB blocks with zeros, 1 KiB fragments and "
         "the table's, blocking, in flight, persistent", test_sweep},
        {"packed v forms: 4 MiB blocks", test_large},
        {"packed v forms: a failing unpack, missing callbacks, a packed "
         "call against a contiguous one", test_errors},
        {"packed v forms: a persistent call's counts grown past missing "
         "callbacks; Alltoallv's staged slot too small for its headers",
         test_refused_later},
        {NULL, NULL}};
    return nct_add_suite("packed", tests);
}
