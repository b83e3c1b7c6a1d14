/* The forked runner: its allgather, exit statuses and watchdog. */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/runner.h"
#include "nct.h"

/* Each rank sends n bytes derived from its rank; all must see all. */
static int gather_body(const numacoll_bootstrap_t *b, void *arg)
{
    size_t n = *(size_t *)arg;
    unsigned char send[2000], recv[16 * 2000];
    for (int round = 0; round < 20; round++) {
        for (size_t i = 0; i < n; i++)
            send[i] = (unsigned char)(b->rank * 31 + i * 7 + round);
        if (b->allgather(send, recv, n, b->ctx) != 0)
            return 2;
        for (int r = 0; r < b->size; r++)
            for (size_t i = 0; i < n; i++)
                if (recv[(size_t)r * n + i] !=
                    (unsigned char)(r * 31 + i * 7 + round))
                    return 3;
    }
    return 0;
}

static void test_allgather(void)
{
    size_t sizes[] = {0, 4, 100, 512, 1200, 2000};
    for (int p = 1; p <= 9; p += 4)
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            CU_ASSERT_EQUAL(nct_run(p, gather_body, &sizes[k]), 0);
        }
}

static int exit_rank(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    return b->rank == 2 ? 3 : 0;
}

static void test_exit_status(void)
{
    int ws[4], to = -1;
    nc__run_opts_t o = {.p = 4, .quiet = 1};
    CU_ASSERT_EQUAL(nc__run(&o, exit_rank, NULL, ws, &to), 1);
    CU_ASSERT_EQUAL(to, 0);
    for (int r = 0; r < 4; r++) {
        CU_ASSERT(WIFEXITED(ws[r]));
        CU_ASSERT_EQUAL(WEXITSTATUS(ws[r]), r == 2 ? 3 : 0);
    }
    char d[64];
    CU_ASSERT_STRING_EQUAL(nc__run_describe(ws[2], d, sizeof d), "exit 3");
}

static int hang(const numacoll_bootstrap_t *b, void *arg)
{
    (void)b;
    (void)arg;
    for (;;)
        pause();
    return 0;  /* not reached: the watchdog kills us */
}

static uint64_t ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void test_watchdog(void)
{
    int ws[3], to = 0;
    nc__run_opts_t o = {.p = 3, .timeout_ms = 300, .quiet = 1};
    uint64_t t0 = ms();
    CU_ASSERT_EQUAL(nc__run(&o, hang, NULL, ws, &to), 1);
    CU_ASSERT_EQUAL(to, 1);
    CU_ASSERT(ms() - t0 < 5000);
    for (int r = 0; r < 3; r++)
        CU_ASSERT(WIFSIGNALED(ws[r]) && WTERMSIG(ws[r]) == SIGKILL);
}

/* Rank 0 dies before the exchange; the others must not wait forever. */
static int die_then_gather(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    if (b->rank == 0)
        raise(SIGKILL);
    int x = b->rank, all[4];
    return b->allgather(&x, all, sizeof x, b->ctx) == 0 ? 0 : 7;
}

static void test_failed_rank_releases_others(void)
{
    int ws[4], to = 0;
    nc__run_opts_t o = {.p = 4, .timeout_ms = 20000, .grace_ms = 5000,
                        .quiet = 1};
    CU_ASSERT_EQUAL(nc__run(&o, die_then_gather, NULL, ws, &to), 1);
    CU_ASSERT_EQUAL(to, 0);
    CU_ASSERT(WIFSIGNALED(ws[0]));
    for (int r = 1; r < 4; r++)
        CU_ASSERT(WIFEXITED(ws[r]) && WEXITSTATUS(ws[r]) == 7);
}

int nct_register_runner(void)
{
    static const nct_test_t tests[] = {
        {"allgather of 0..2000 bytes, p = 1, 5, 9", test_allgather},
        {"exit statuses reported per rank", test_exit_status},
        {"watchdog kills a hung run", test_watchdog},
        {"a dead rank releases the others", test_failed_rank_releases_others},
        {NULL, NULL},
    };
    return nct_add_suite("runner", tests);
}
