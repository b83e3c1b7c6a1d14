/*
 * The wait policy (numacoll_config_t's wait_policy, coll/wake.h): how a team
 * finds itself oversubscribed, what each rank then does, and sleeping waits
 * that stay correct (the seg suite: that they still see dead peers and
 * timeouts).
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "numacoll.h"
#include "tests/nct.h"

/* Run on CPU 0 alone: p ranks then share one CPU, on any machine. */
static int pin_one_cpu(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

static int mask_cpus(void)
{
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
}

typedef struct {
    int pin;        /* 1: every rank on CPU 0 */
    int ask[8];     /* each rank's wait_policy (-1 auto) */
    int want[8];    /* the policy each rank must get */
    int over;       /* the verdict every rank must get */
} policy_case_t;

static int policy_body(const numacoll_bootstrap_t *b, void *arg)
{
    const policy_case_t *c = arg;
    if (c->pin && pin_one_cpu() != 0)
        return 3;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    cfg.wait_policy = c->ask[b->rank];
    numacoll_team_t *t;
    if (numacoll_team_create(b, &cfg, &t) != NUMACOLL_OK)
        return 10;
    int over = -1, pol = numacoll_team_wait_policy(t, &over);
    int ok = pol == c->want[b->rank] && over == c->over;
    if (!ok)
        fprintf(stderr, "rank %d: policy %d (want %d), oversubscribed %d "
                "(want %d)\n", b->rank, pol, c->want[b->rank], over, c->over);
    /* a few calls in that mode, checked */
    long v = b->rank + 1, sum = 0;
    for (int i = 0; ok && i < 200; i++)
        ok = numacoll_allreduce(t, &v, &sum, 1, NUMACOLL_DTYPE_INT64,
                                NUMACOLL_OP_SUM) == NUMACOLL_OK &&
             sum == (long)b->size * (b->size + 1) / 2;
    numacoll_team_destroy(t);
    return ok ? 0 : 1;
}

static void test_auto_pinned(void)
{
    /* 3 ranks on one CPU: auto finds the team oversubscribed, sleeps */
    policy_case_t c = {.pin = 1, .ask = {-1, -1, -1},
                       .want = {2, 2, 2}, .over = 1};
    CU_ASSERT_EQUAL(nct_run(3, policy_body, &c), 0);
    /* forced policies win on their own rank; writers still wake */
    policy_case_t f = {.pin = 1, .ask = {0, 1, -1},
                       .want = {0, 1, 2}, .over = 1};
    CU_ASSERT_EQUAL(nct_run(3, policy_body, &f), 0);
}

static void test_auto_free(void)
{
    /* 2 ranks with the machine's CPUs: oversubscribed only on one CPU */
    int one = mask_cpus() < 2;
    policy_case_t c = {.ask = {-1, -1}, .want = {one ? 2 : 0, one ? 2 : 0},
                       .over = one};
    CU_ASSERT_EQUAL(nct_run(2, policy_body, &c), 0);
    /* one rank that asks to sleep makes the team oversubscribed: the
     * other's auto sleeps too, and both write with wakes */
    policy_case_t s = {.ask = {2, -1}, .want = {2, 2}, .over = 1};
    CU_ASSERT_EQUAL(nct_run(2, policy_body, &s), 0);
}

/* Every collective, blocking and not, on 8 ranks sharing one CPU with
 * sleeping waits, each result checked: a lost wake would cost a tick
 * (correct but slow); a wrong one a wrong result or a hang (watchdog). */
static int mix_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    if (pin_one_cpu() != 0)
        return 3;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    cfg.wait_policy = 2;
    cfg.timeout_ms = 20000;
    numacoll_team_t *t;
    if (numacoll_team_create(b, &cfg, &t) != NUMACOLL_OK)
        return 10;
    const int p = b->size, me = b->rank;
    const size_t big = 300000;
    unsigned char *buf = malloc(big);
    int32_t *sv = malloc(big), *rv = malloc(big);
    unsigned char *ga = malloc(64 * (size_t)p), *gb = malloc(64 * (size_t)p);
    int rc = buf && sv && rv && ga && gb ? 0 : 4;
    const size_t sizes[] = {8, 1000, 40000, big};
    for (int it = 0; rc == 0 && it < 3; it++)
        for (size_t si = 0; rc == 0 && si < 4; si++) {
            const size_t n = sizes[si];
            const int root = (int)(it + si) % p;
            for (size_t i = 0; i < n; i++)
                buf[i] = me == root ? (unsigned char)(i * 7 + it) : 0;
            int r = numacoll_bcast(t, buf, n, root);
            for (size_t i = 0; r == 0 && i < n; i++)
                if (buf[i] != (unsigned char)(i * 7 + it))
                    r = 6;
            const size_t cnt = n / 4 ? n / 4 : 1;
            for (size_t i = 0; r == 0 && i < cnt; i++)
                sv[i] = (int32_t)(i + (size_t)me);
            if (r == 0)
                r = numacoll_allreduce(t, sv, rv, cnt, NUMACOLL_DTYPE_INT32,
                                       NUMACOLL_OP_SUM);
            for (size_t i = 0; r == 0 && i < cnt; i++)
                if (rv[i] != (int32_t)(i * (size_t)p +
                                       (size_t)(p * (p - 1) / 2)))
                    r = 7;
            if (r == 0)
                r = numacoll_reduce(t, sv, rv, cnt, NUMACOLL_DTYPE_INT32,
                                    NUMACOLL_OP_SUM, root);
            for (size_t i = 0; r == 0 && me == root && i < cnt; i++)
                if (rv[i] != (int32_t)(i * (size_t)p +
                                       (size_t)(p * (p - 1) / 2)))
                    r = 8;
            if (r == 0)
                r = numacoll_barrier(t);
            memset(ga, me + 1, 64);
            if (r == 0)
                r = numacoll_allgather(t, ga, gb, 64);
            for (int q = 0; r == 0 && q < p; q++)
                if (gb[64 * q] != q + 1 || gb[64 * q + 63] != q + 1)
                    r = 9;
            for (int q = 0; q < p; q++)
                memset(ga + 64 * q, me * 16 + q, 64);
            if (r == 0)
                r = numacoll_alltoall(t, ga, gb, 64);
            for (int q = 0; r == 0 && q < p; q++)
                if (gb[64 * q + 5] != q * 16 + me)
                    r = 11;
            numacoll_request_t *req = NULL;
            memset(buf, me == root ? 0x5a : 0, n);
            if (r == 0)
                r = numacoll_ibcast(t, buf, n, root, &req);
            if (r == 0)
                r = numacoll_wait(&req);
            for (size_t i = 0; r == 0 && i < n; i++)
                if (buf[i] != 0x5a)
                    r = 12;
            if (r != 0)
                rc = r > 5 ? r : nct_say(t, me, "mixed calls", r);
        }
    numacoll_team_destroy(t);
    free(buf);
    free(sv);
    free(rv);
    free(ga);
    free(gb);
    return rc;
}

static void test_mix_sleeping(void)
{
    CU_ASSERT_EQUAL(nct_run(8, mix_body, NULL), 0);
}

/* The wait hook: a rank waiting for a late root calls it (with its own
 * team), a busy hook keeps a sleeping wait from sleeping (the call still
 * completes), and none is called once it is removed. */
static int hook_calls;
static const numacoll_team_t *hook_team;
static int count_hook(void *ctx, const numacoll_team_t *team)
{
    hook_calls++;
    hook_team = team;
    return *(int *)ctx;
}

static int hook_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    cfg.wait_policy = 2; /* sleep: the busy hook must keep it awake */
    numacoll_team_t *t;
    if (numacoll_team_create(b, &cfg, &t) != NUMACOLL_OK)
        return 10;
    int busy = 1, bad = 0;
    numacoll_set_wait_hook(count_hook, &busy);
    long v = 0;
    for (int round = 0; round < 2 && !bad; round++) {
        if (round == 1)
            numacoll_set_wait_hook(NULL, NULL);
        hook_calls = 0;
        hook_team = NULL;
        if (b->rank == 0) {
            usleep(50000); /* the root comes late: rank 1 waits */
            v = 42 + round;
        }
        if (numacoll_bcast(t, &v, sizeof v, 0) != NUMACOLL_OK ||
            v != 42 + round)
            bad = 2;
        else if (b->rank == 1 && round == 0 &&
                 (hook_calls == 0 || hook_team != t))
            bad = 3;
        else if (round == 1 && hook_calls != 0)
            bad = 4;
    }
    numacoll_team_destroy(t);
    return bad;
}

static void test_wait_hook(void)
{
    CU_ASSERT_EQUAL(nct_run(2, hook_body, NULL), 0);
}


int nct_register_wait(void)
{
    static const nct_test_t tests[] = {
        {"auto: 3 ranks on one CPU sleep; forced policies win on their rank", test_auto_pinned},
        {"auto: spin with a CPU per rank; one rank asking to sleep is heard", test_auto_free},
        {"sleeping waits, p = 8 on one CPU: every collective correct", test_mix_sleeping},
        {"the wait hook: called by a waiting rank, removed with NULL", test_wait_hook},
        {NULL, NULL},
    };
    return nct_add_suite("wait", tests);
}
