/*
 * Segment lifecycle: the name is gone from /dev/shm once every rank has
 * mapped it, after destroy, and after a rank is killed mid-run; the
 * survivors detect the dead peer instead of hanging; a timeout names who
 * waited for whom.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coll/runner.h"
#include "nct.h"
#include "numacoll.h"

typedef struct shared_names {
    char name[8][128];
    int placement_ok[8];
} shared_names_t;

static int shm_exists(const char *name)
{
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "/dev/shm%s", name);
    return stat(path, &st) == 0;
}

static int lifecycle_body(const numacoll_bootstrap_t *b, void *arg)
{
    shared_names_t *sn = arg;
    numacoll_team_t *team;
    if (numacoll_team_create(b, NULL, &team) != NUMACOLL_OK)
        return 10;
    snprintf(sn->name[b->rank], sizeof sn->name[0], "%s",
             numacoll_team_segment_name(team));
    int errors = shm_exists(sn->name[b->rank]);   /* unlinked already */
    char buf[64] = "x";
    errors += numacoll_bcast(team, buf, sizeof buf, 0) != NUMACOLL_OK;
    numacoll_team_destroy(team);
    return errors ? 1 : 0;
}

static void test_destroy_leaves_nothing(void)
{
    shared_names_t *sn = nc__run_shared_alloc(sizeof *sn);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sn);
    CU_ASSERT_EQUAL(nct_run(4, lifecycle_body, sn), 0);
    CU_ASSERT_NSTRING_EQUAL(sn->name[0], "/numacoll-", 10);
    char uid[32];
    snprintf(uid, sizeof uid, "-%u-", (unsigned)getuid());
    CU_ASSERT_PTR_NOT_NULL(strstr(sn->name[0], uid));
    for (int r = 1; r < 4; r++)
        CU_ASSERT_STRING_EQUAL(sn->name[r], sn->name[0]);
    CU_ASSERT_FALSE(shm_exists(sn->name[0]));
    /* two teams in a row never share a name */
    char first[128];
    snprintf(first, sizeof first, "%s", sn->name[0]);
    CU_ASSERT_EQUAL(nct_run(4, lifecycle_body, sn), 0);
    CU_ASSERT_STRING_NOT_EQUAL(sn->name[0], first);
    nc__run_shared_free(sn, sizeof *sn);
}

/* Rank 2 is killed with SIGKILL in the middle of a stream of Bcasts. */
static int killed_body(const numacoll_bootstrap_t *b, void *arg)
{
    shared_names_t *sn = arg;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    numacoll_team_t *team;
    if (numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK)
        return 10;
    snprintf(sn->name[b->rank], sizeof sn->name[0], "%s",
             numacoll_team_segment_name(team));
    static char buf[200000];
    for (int i = 0;; i++) {
        if (b->rank == 2 && i == 40)
            raise(SIGKILL);
        int rc = numacoll_bcast(team, buf, i % 2 ? 40 : sizeof buf, i % 4);
        if (rc == NUMACOLL_ERR_PEER_DEAD || rc == NUMACOLL_ERR_ABORTED) {
            numacoll_team_destroy(team);
            return 20;   /* detected, as we should */
        }
        if (rc != NUMACOLL_OK || i > 1000000)
            return 1;
    }
}

static void test_sigkill_mid_run(void)
{
    shared_names_t *sn = nc__run_shared_alloc(sizeof *sn);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sn);
    int ws[4], to = 0;
    nc__run_opts_t o = {.p = 4, .timeout_ms = 30000, .grace_ms = 20000,
                        .quiet = 1};
    nc__run(&o, killed_body, sn, ws, &to);
    CU_ASSERT_EQUAL(to, 0);
    CU_ASSERT(WIFSIGNALED(ws[2]) && WTERMSIG(ws[2]) == SIGKILL);
    for (int r = 0; r < 4; r++)
        if (r != 2)
            CU_ASSERT(WIFEXITED(ws[r]) && WEXITSTATUS(ws[r]) == 20);
    CU_ASSERT(sn->name[0][0] == '/');
    CU_ASSERT_FALSE(shm_exists(sn->name[0]));
    nc__run_shared_free(sn, sizeof *sn);
}

/* Rank 1 is root but never calls: rank 0 gives up after timeout_ms and
 * says who it waited for and on what. */
static int timeout_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.timeout_ms = 200;
    cfg.verbose = 0;
    numacoll_team_t *team;
    if (numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK)
        return 10;
    int ok = 1;
    if (b->rank == 0) {
        char buf[4096];
        int rc = numacoll_bcast(team, buf, sizeof buf, 1);
        const char *e = numacoll_team_last_error(team);
        ok = rc == NUMACOLL_ERR_TIMEOUT &&
             strstr(e, "rank 0 waited for rank 1 on control slot") &&
             strstr(e, "200 ms");
        if (!ok)
            fprintf(stderr, "timeout message: %s\n", e);
    } else {
        usleep(1500 * 1000);
    }
    numacoll_team_destroy(team);
    return ok ? 0 : 1;
}

static void test_timeout_names_ranks(void)
{
    CU_ASSERT_EQUAL(nct_run(2, timeout_body, NULL), 0);
}

/* Unbound ranks are located where they run and reported unbound; bound
 * ranks report bound (when there is more than one CPU to bind to). */
static int bound_body(const numacoll_bootstrap_t *b, void *arg)
{
    int want = *(int *)arg;
    numacoll_team_t *team;
    if (numacoll_team_create(b, NULL, &team) != NUMACOLL_OK)
        return 10;
    numacoll_locality_t loc;
    numacoll_team_locality(team, b->rank, &loc);
    numacoll_placement_t pl;
    numacoll_team_placement(team, &pl);
    int ok = loc.bound == want && loc.pu >= 0 && loc.pid == getpid() &&
             pl.degraded == 0 && pl.pages > 0 &&
             (pl.pages_unknown > 0 || pl.pages_on_node == pl.pages);
    numacoll_team_destroy(team);
    return ok ? 0 : 1;
}

static void test_bound_and_placed(void)
{
    int unbound = 0, bound = sysconf(_SC_NPROCESSORS_ONLN) > 1;
    CU_ASSERT_EQUAL(nct_run(2, bound_body, &unbound), 0);
    nc__run_opts_t o = {.p = 2, .bind = 1, .timeout_ms = 60000};
    CU_ASSERT_EQUAL(nc__run(&o, bound_body, &bound, NULL, NULL), 0);
}

int nct_register_seg(void)
{
    static const nct_test_t tests[] = {
        {"nothing in /dev/shm after create and destroy", test_destroy_leaves_nothing},
        {"SIGKILL mid-run: detected, nothing left", test_sigkill_mid_run},
        {"timeout names the ranks and the flag", test_timeout_names_ranks},
        {"bound/unbound reported, pages verified", test_bound_and_placed},
        {NULL, NULL},
    };
    return nct_add_suite("seg", tests);
}
