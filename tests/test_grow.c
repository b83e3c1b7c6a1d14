/*
 * Staging on demand (coll/grow.c): a team starts with its control pages,
 * grows its queues and staging slots at the first call that needs them,
 * by a vote of every rank; a vote that finds no room (node_budget) makes
 * every rank return NUMACOLL_ERR_NOSPACE without running the call, and
 * the team goes on serving calls that need no staging.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "numacoll.h"
#include "tests/nct.h"

enum { BIG = 1 << 20 };

static unsigned long long shm_used(void)
{
    struct statvfs sv;
    if (statvfs("/dev/shm", &sv) != 0)
        return 0;
    return (unsigned long long)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
}

static numacoll_team_t *make(const numacoll_bootstrap_t *b, size_t budget)
{
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    cfg.timeout_ms = 20000;
    cfg.node_budget = budget;
    numacoll_team_t *t = NULL;
    return numacoll_team_create(b, &cfg, &t) == NUMACOLL_OK ? t : NULL;
}

/* A Bcast of n bytes from root, checked: 0, 6 (wrong data) or the status */
static int bcast_checked(numacoll_team_t *t, unsigned char *buf, size_t n,
                         int root, int me, int nonblocking)
{
    for (size_t i = 0; i < n; i++)
        buf[i] = me == root ? (unsigned char)(i * 13 + 1) : 0;
    int rc;
    if (nonblocking) {
        numacoll_request_t *rq = NULL;
        rc = numacoll_ibcast(t, buf, n, root, &rq);
        if (rc == NUMACOLL_OK)
            rc = numacoll_wait(&rq);
    } else {
        rc = numacoll_bcast(t, buf, n, root);
    }
    for (size_t i = 0; rc == NUMACOLL_OK && i < n; i++)
        if (buf[i] != (unsigned char)(i * 13 + 1))
            return 6;
    return rc;
}

/* An 8-byte Allreduce, checked: 0, 7 or the status */
static int small_sum(numacoll_team_t *t, int me, int p)
{
    long v = me + 1, s = 0;
    int rc = numacoll_allreduce(t, &v, &s, 1, NUMACOLL_DTYPE_INT64,
                                NUMACOLL_OP_SUM);
    return rc != NUMACOLL_OK ? rc : s == (long)p * (p + 1) / 2 ? 0 : 7;
}

static int grow_body(const numacoll_bootstrap_t *b, void *arg)
{
    const int nonblocking = *(const int *)arg;
    const int me = b->rank, p = b->size;
    unsigned char *buf = malloc(BIG);
    numacoll_team_t *t = buf ? make(b, 0) : NULL;
    if (!t) {
        free(buf);
        return 10;
    }
    size_t now = 0, grown = 0;
    int bad = 0;
    /* created: control pages only, tens of KiB a rank (rank 0: the
     * header and banks too) */
    if (numacoll_team_footprint(t, &now, &grown) != 0 || now >= grown ||
        grown - now < 256 * 1024)
        bad = 20;
    /* small calls keep to the control lines */
    if (!bad && (bcast_checked(t, buf, 8, p - 1, me, 0) != 0 ||
                 small_sum(t, me, p) != 0))
        bad = 21;
    if (!bad && numacoll_team_footprint(t, NULL, NULL) != 0)
        bad = 22;
    /* the first large call grows the team, blocking or not */
    if (!bad) {
        int rc = bcast_checked(t, buf, BIG, 1 % p, me, nonblocking);
        if (rc != 0)
            bad = rc == 6 ? 6 : nct_say(t, me, "first large bcast", rc);
    }
    size_t now2 = 0, grown2 = 0;
    if (!bad && (numacoll_team_footprint(t, &now2, &grown2) != 1 ||
                 now2 != grown2 || grown2 != grown))
        bad = 23;
    /* and it stays grown: more calls of every size */
    for (int i = 0; !bad && i < 4; i++) {
        int rc = bcast_checked(t, buf, i % 2 ? 8 : BIG / 3, i % p, me, 0);
        if (rc == 0)
            rc = small_sum(t, me, p);
        if (rc != 0)
            bad = rc == 6 || rc == 7 ? rc : nct_say(t, me, "grown", rc);
    }
    if (bad)
        fprintf(stderr, "rank %d: %d (footprint %zu/%zu then %zu/%zu)\n", me,
                bad, now, grown, now2, grown2);
    numacoll_team_destroy(t);
    free(buf);
    return bad;
}

static void test_grow_first_call(void)
{
    int blocking = 0, nonblocking = 1;
    CU_ASSERT_EQUAL(nct_run(3, grow_body, &blocking), 0);
    CU_ASSERT_EQUAL(nct_run(2, grow_body, &nonblocking), 0);
}

/* A budget that holds the control pages and not the staging: the large
 * calls come back NOSPACE on every rank, not run; small ones go on. */
static int room_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    const int me = b->rank, p = b->size;
    unsigned char *buf = malloc(BIG);
    /* every rank's own budget (a rank-local parameter): what /dev/shm
     * holds now plus room for the control pages of all */
    numacoll_team_t *t = buf ? make(b, shm_used() + 512 * 1024) : NULL;
    if (!t) {
        free(buf);
        return 10;
    }
    int bad = 0, rc;
    if ((rc = bcast_checked(t, buf, BIG, 0, me, 0)) != NUMACOLL_ERR_NOSPACE)
        bad = 30;
    else if (!strstr(numacoll_team_last_error(t), "no room"))
        bad = 31;
    if (!bad && (bcast_checked(t, buf, 8, 0, me, 0) != 0 ||
                 small_sum(t, me, p) != 0))
        bad = 32;
    int32_t *v = malloc(BIG);
    if (!bad && (!v || numacoll_allreduce(t, v, v + BIG / 8, BIG / 8,
                                          NUMACOLL_DTYPE_INT32,
                                          NUMACOLL_OP_SUM) !=
                           NUMACOLL_ERR_NOSPACE))
        bad = 33;
    /* nonblocking: the request completes with the vote's verdict */
    if (!bad && bcast_checked(t, buf, BIG, 1, me, 1) != NUMACOLL_ERR_NOSPACE)
        bad = 34;
    size_t now = 0, grown = 0;
    if (!bad && (numacoll_team_footprint(t, &now, &grown) != 0 ||
                 now >= grown))
        bad = 35;
    if (!bad && (bcast_checked(t, buf, 8, 1, me, 0) != 0 ||
                 small_sum(t, me, p) != 0))
        bad = 36;
    if (bad)
        fprintf(stderr, "rank %d: %d (rc %d: %s)\n", me, bad, rc,
                numacoll_team_last_error(t));
    numacoll_team_destroy(t);
    free(v);
    free(buf);
    return bad;
}

static void test_no_room(void)
{
    CU_ASSERT_EQUAL(nct_run(2, room_body, NULL), 0);
    CU_ASSERT_EQUAL(nct_run(3, room_body, NULL), 0);
}

/* A team on a pooled segment starts ungrown again, and grows. */
static int pool_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    const int me = b->rank;
    unsigned char *buf = malloc(BIG);
    int bad = 0;
    for (int round = 0; !bad && round < 3; round++) {
        numacoll_team_t *t = buf ? make(b, 0) : NULL;
        if (!t) {
            bad = 10;
            break;
        }
        if (numacoll_team_footprint(t, NULL, NULL) != 0)
            bad = 40;
        int rc = bad ? 0 : bcast_checked(t, buf, BIG, round % b->size, me, 0);
        if (rc != 0)
            bad = rc == 6 ? 6 : nct_say(t, me, "pooled", rc);
        if (!bad && numacoll_team_footprint(t, NULL, NULL) != 1)
            bad = 41;
        numacoll_team_destroy(t);
    }
    free(buf);
    return bad;
}

static void test_pooled(void)
{
    CU_ASSERT_EQUAL(nct_run(2, pool_body, NULL), 0);
}

/* The first large call in mismatched calls: the root of a 300000-byte
 * Bcast votes for staging, readers of 20 bytes do not (they read the inline
 * lines). Nobody hangs or gets data, every rank gets an error or its part
 * done, and correct calls of every size go on afterwards. */
static int vote_mismatch_body(const numacoll_bootstrap_t *b, void *arg)
{
    const int root = *(const int *)arg % b->size, me = b->rank;
    unsigned char *buf = malloc(BIG);
    numacoll_team_t *t = buf ? make(b, 0) : NULL;
    if (!t) {
        free(buf);
        return 10;
    }
    memset(buf, 0, BIG);
    int rc = numacoll_bcast(t, buf, me == root ? 300000 : 20, root);
    int bad = 0;
    if (rc != NUMACOLL_OK && rc != NUMACOLL_ERR_MISMATCH &&
        rc != NUMACOLL_ERR_TRUNCATE)
        bad = nct_say(t, me, "mismatched first large call", rc) + 50;
    for (size_t i = 0; !bad && me != root && i < 20; i++)
        if (buf[i] != 0)
            bad = 51;   /* no data of the other call */
    int r2 = numacoll_barrier(t);   /* told, where not yet */
    if (!bad && r2 != NUMACOLL_OK && r2 != NUMACOLL_ERR_MISMATCH)
        bad = nct_say(t, me, "barrier after", r2) + 52;
    int z = 0, zs[8];
    if (!bad && (b->size > 8 || b->allgather(&z, zs, sizeof z, b->ctx) != 0))
        bad = 53;
    for (int i = 0; !bad && i < 3; i++) {
        rc = bcast_checked(t, buf, i == 1 ? 8 : BIG / 2, (root + i) % b->size,
                           me, 0);
        if (rc == 0)
            rc = small_sum(t, me, b->size);
        if (rc != 0)
            bad = rc == 6 || rc == 7 ? rc : nct_say(t, me, "after", rc) + 54;
    }
    numacoll_team_destroy(t);
    free(buf);
    return bad;
}

static void test_vote_mismatch(void)
{
    for (int p = 2; p <= 4; p++)
        for (int root = 0; root < 2; root++)
            CU_ASSERT_EQUAL(nct_run(p, vote_mismatch_body, &root), 0);
}

/* A node budget that cannot hold even the control pages: no team. */
static int tiny_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    cfg.node_budget = 1;
    numacoll_team_t *t = NULL;
    int rc = numacoll_team_create(b, &cfg, &t);
    if (rc == NUMACOLL_OK)
        numacoll_team_destroy(t);
    /* every rank fails; the first that did says why */
    return rc == NUMACOLL_ERR_BUDGET &&
                   (b->rank != 0 ||
                    strstr(numacoll_team_create_error(), "node_budget"))
               ? 0 : 1;
}

static void test_tiny_budget(void)
{
    CU_ASSERT_EQUAL(nct_run(2, tiny_body, NULL), 0);
}

int nct_register_grow(void)
{
    static const nct_test_t tests[] = {
        {"a team starts with control pages, grows at its first large call (blocking, nonblocking)", test_grow_first_call},
        {"no room under node_budget: NOSPACE on every rank, small calls go on", test_no_room},
        {"a team on a pooled segment grows again", test_pooled},
        {"the first large call in mismatched calls: errors, no hang; calls go on", test_vote_mismatch},
        {"node_budget below the control pages: no team (ERR_BUDGET)", test_tiny_budget},
        {NULL, NULL},
    };
    return nct_add_suite("grow", tests);
}
