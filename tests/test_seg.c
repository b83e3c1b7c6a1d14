/*
 * Segment lifecycle: nothing of a team is ever in /dev/shm under a name,
 * not after destroy, not after a rank is killed mid-run or during
 * creation; the survivors detect the dead peer instead of hanging; a
 * timeout names who waited for whom; a full /dev/shm is an agreed
 * NUMACOLL_ERR_NOMEM with a message, never a SIGBUS; teams cost memory in
 * proportion to use; a freed team's segment serves the next team of the
 * same processes, reset.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/runner.h"
#include "nct.h"
#include "numacoll.h"
#include "shm_seg/seg.h"
#include "coll/team.h"

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

/* 1: the failure tests below run every rank on CPU 0 with sleeping waits
 * (wait_policy 2), where a wait sleeps in the kernel between its looks at
 * dead peers and its timeout; set before the ranks are forked. */
static int sleep_waits;

static void failure_config(numacoll_config_t *cfg)
{
    numacoll_config_init(cfg);
    cfg->verbose = 0;
    if (sleep_waits) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(0, &one);
        (void)sched_setaffinity(0, sizeof one, &one);
        cfg->wait_policy = 2;
    }
}

/* Rank 2 is killed with SIGKILL in the middle of a stream of Bcasts. */
static int killed_body(const numacoll_bootstrap_t *b, void *arg)
{
    shared_names_t *sn = arg;
    numacoll_config_t cfg;
    failure_config(&cfg);
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
    failure_config(&cfg);
    cfg.timeout_ms = 200;
    numacoll_team_t *team;
    if (numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK)
        return 10;
    /* grown, so that the wait is the algorithm's (the staging vote's
     * would time out alike: the grow suite) */
    if (nc__grow_now(team) != NUMACOLL_OK)
        return 11;
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

/* The same two failures while the waits sleep. */
static void test_failures_sleeping(void)
{
    sleep_waits = 1;
    test_sigkill_mid_run();
    test_timeout_names_ranks();
    sleep_waits = 0;
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

/* ---- a full /dev/shm ------------------------------------------------- */

/*
 * Run fn(arg) in a forked child whose /dev/shm is a private tmpfs of
 * `size` (a mount namespace of its own; a user namespace too where this
 * process may not make one), so the test owns every byte of it. Returns
 * the child's raw wait status; why gets the reason when the namespace
 * could not be made (then the status is exit 99).
 */
#define NO_NAMESPACE 99

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int rc = fputs(text, f) < 0;
    return fclose(f) != 0 || rc ? -1 : 0;
}

static int in_private_shm(const char *size, int (*fn)(void *), void *arg,
                          char *why, size_t whylen)
{
    char *w = nc__run_shared_alloc(whylen);
    if (!w) {
        snprintf(why, whylen, "no shared memory for the child's report");
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        uid_t uid = getuid();
        gid_t gid = getgid();
        if (unshare(CLONE_NEWNS) != 0) {
            int e1 = errno;
            char map[64];
            if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) {
                snprintf(w, whylen, "unshare(CLONE_NEWNS): %s; "
                         "unshare(CLONE_NEWUSER|CLONE_NEWNS): %s", strerror(e1),
                         strerror(errno));
                _exit(NO_NAMESPACE);
            }
            snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
            if (write_file("/proc/self/setgroups", "deny") != 0 ||
                write_file("/proc/self/uid_map", map) != 0 ||
                (snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid),
                 write_file("/proc/self/gid_map", map) != 0)) {
                snprintf(w, whylen, "cannot map uid %u in a new user "
                         "namespace: %s", (unsigned)uid, strerror(errno));
                _exit(NO_NAMESPACE);
            }
        }
        char opts[64];
        snprintf(opts, sizeof opts, "size=%s,mode=1777", size);
        /* our tmpfs must not propagate to the parent namespace: make the
         * mount it lands under private ("/" is no mount point in a plain
         * chroot: EINVAL; then the mount under /dev/shm is) */
        if ((mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 &&
             mount(NULL, "/dev/shm", NULL, MS_REC | MS_PRIVATE, NULL) != 0 &&
             mount(NULL, "/dev", NULL, MS_REC | MS_PRIVATE, NULL) != 0) ||
            mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
                  opts) != 0) {
            snprintf(w, whylen, "cannot mount a tmpfs of %s on /dev/shm in "
                     "a private mount namespace: %s", size, strerror(errno));
            _exit(NO_NAMESPACE);
        }
        _exit(fn(arg) & 0xff);
    }
    int ws = -1;
    if (pid < 0)
        snprintf(w, whylen, "fork: %s", strerror(errno));
    else
        waitpid(pid, &ws, 0);
    snprintf(why, whylen, "%s", w);
    nc__run_shared_free(w, whylen);
    return ws;
}

#define FULL_JOBS 4
#define FULL_P 2
#define FULL_ITERS 40
#define FULL_LIVE 3

typedef struct full_rank {
    int ok, nomem, other;     /* creations by outcome */
    int nospace;              /* Bcasts that found no room to grow */
    int other_status;         /* the last outcome neither OK nor NOMEM */
    int bad_msg, bad_data;    /* NOMEM without the message; wrong Bcast */
    char msg[200];            /* a bad message */
} full_rank_t;

typedef struct full_shared {
    _Atomic int arrived;      /* start line of every job's ranks */
    int job_ws[FULL_JOBS + 1][FULL_P];
    full_rank_t rank[FULL_JOBS + 1][FULL_P];
    int nranks;               /* ranks that wait at the start line */
} full_shared_t;

typedef struct full_arg {     /* private to each job's process */
    full_shared_t *fs;
    int job;
} full_arg_t;

/* Every rank as root once: each must see the root's bytes, or, where
 * the team finds no room to grow its staging, NOSPACE (counted in
 * *nospace) with the buffer untouched. */
static int bcast_round_trip(numacoll_team_t *team, int p, int salt,
                            int *nospace)
{
    static unsigned char buf[65536 + 3];
    for (int root = 0; root < p; root++) {
        const int mine = numacoll_team_rank(team) == root;
        for (size_t i = 0; i < sizeof buf; i++)
            buf[i] = mine ? (unsigned char)(i * 7 + root + salt) : 0;
        int rc = numacoll_bcast(team, buf, sizeof buf, root);
        if (rc == NUMACOLL_ERR_NOSPACE) {
            ++*nospace;
            for (size_t i = 0; !mine && i < sizeof buf; i++)
                if (buf[i] != 0)
                    return 0;
            continue;
        }
        if (rc != NUMACOLL_OK)
            return 0;
        for (size_t i = 0; i < sizeof buf; i++)
            if (buf[i] != (unsigned char)(i * 7 + root + salt))
                return 0;
    }
    return 1;
}

static void full_create(const numacoll_bootstrap_t *b,
                        const numacoll_config_t *cfg, full_rank_t *me,
                        numacoll_team_t **team, int salt)
{
    int st = numacoll_team_create(b, cfg, team);
    if (st == NUMACOLL_OK) {
        me->ok++;
        me->bad_data += !bcast_round_trip(*team, b->size, salt,
                                          &me->nospace);
        return;
    }
    *team = NULL;
    if (st != NUMACOLL_ERR_NOMEM) {
        me->other++;
        me->other_status = st;
        return;
    }
    me->nomem++;
    const char *e = numacoll_team_create_error();
    if (!(strstr(e, "/dev/shm") && strstr(e, "free") &&
          (strstr(e, "could not reserve") || strstr(e, "needs")))) {
        me->bad_msg++;
        snprintf(me->msg, sizeof me->msg, "%s", e);
    }
}

/* Jobs at once: each rank keeps FULL_LIVE teams of 1.2 MB alive, replacing
 * the oldest FULL_ITERS times, so that /dev/shm stays full while creations
 * of different jobs overlap. Pooling off: every creation reserves. */
static int full_body(const numacoll_bootstrap_t *b, void *arg)
{
    full_arg_t *fa = arg;
    full_shared_t *fs = fa->fs;
    full_rank_t *me = &fs->rank[fa->job][b->rank];
    nc__seg_pool_set_limit(0);
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    cfg.frag_size = 4096;
    cfg.queue_depth = 16;
    cfg.node_budget = (size_t)1 << 40;   /* the room is what runs out */
    atomic_fetch_add_explicit(&fs->arrived, 1, memory_order_acq_rel);
    for (int i = 0; atomic_load_explicit(&fs->arrived, memory_order_acquire) <
                        fs->nranks && i < 10000000; i++)
        sched_yield();
    numacoll_team_t *live[FULL_LIVE] = {0};
    for (int i = 0; i < FULL_ITERS; i++) {
        numacoll_team_t **slot = &live[i % FULL_LIVE];
        if (*slot)
            numacoll_team_destroy(*slot);
        full_create(b, &cfg, me, slot, i);
    }
    for (int k = 0; k < FULL_LIVE; k++)
        if (live[k])
            numacoll_team_destroy(live[k]);
    return 0;
}

/* Alone in the emptied /dev/shm: a first team of 2 MB fits and grows; a
 * second one alongside is created (its control pages) but finds no room
 * to grow. */
static int full_alone_body(const numacoll_bootstrap_t *b, void *arg)
{
    full_arg_t *fa = arg;
    full_rank_t *me = &fa->fs->rank[fa->job][b->rank];
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    cfg.node_budget = (size_t)1 << 40;
    numacoll_team_t *t1, *t2;
    full_create(b, &cfg, me, &t1, 1);
    full_create(b, &cfg, me, &t2, 2);
    if (t1)
        numacoll_team_destroy(t1);
    if (t2)
        numacoll_team_destroy(t2);
    return 0;
}

static int full_all(void *arg)
{
    full_shared_t *fs = arg;
    nc__run_opts_t o = {.p = FULL_P, .timeout_ms = 60000, .quiet = 1};
    pid_t pids[FULL_JOBS];
    fs->nranks = FULL_JOBS * FULL_P;
    for (int j = 0; j < FULL_JOBS; j++) {
        pids[j] = fork();
        if (pids[j] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            full_arg_t fa = {fs, j};
            nc__run(&o, full_body, &fa, fs->job_ws[j], NULL);
            _exit(0);
        }
    }
    for (int j = 0; j < FULL_JOBS; j++)
        if (pids[j] > 0)
            waitpid(pids[j], NULL, 0);
    full_arg_t fa = {fs, FULL_JOBS};
    nc__run(&o, full_alone_body, &fa, fs->job_ws[FULL_JOBS], NULL);
    return 0;
}

static void test_full_shm(void)
{
    full_shared_t *fs = nc__run_shared_alloc(sizeof *fs);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fs);
    memset(fs, 0, sizeof *fs);
    char why[256];
    int ws = in_private_shm("3m", full_all, fs, why, sizeof why);
    if (!(WIFEXITED(ws) && WEXITSTATUS(ws) == 0)) {
        fprintf(stderr, "\nno private /dev/shm of 3 MiB: %s\n", why);
        CU_FAIL("cannot make a mount namespace with a 3 MiB /dev/shm "
                "(see stderr)");
        nc__run_shared_free(fs, sizeof *fs);
        return;
    }
    int nomem = 0, ok = 0, sig = 0, nospace = 0;
    for (int j = 0; j <= FULL_JOBS; j++)
        for (int r = 0; r < FULL_P; r++) {
            const full_rank_t *m = &fs->rank[j][r];
            char d[64];
            int s = fs->job_ws[j][r];
            if (!(WIFEXITED(s) && WEXITSTATUS(s) == 0))
                fprintf(stderr, "\njob %d rank %d: %s\n", j, r,
                        nc__run_describe(s, d, sizeof d));
            sig += WIFSIGNALED(s);
            CU_ASSERT(WIFEXITED(s) && WEXITSTATUS(s) == 0);
            if (m->other)
                fprintf(stderr, "\njob %d rank %d: %d creations failed, "
                        "the last with %s\n", j, r, m->other,
                        numacoll_strerror(m->other_status));
            if (m->bad_msg)
                fprintf(stderr, "\njob %d rank %d: NOMEM said \"%s\"\n", j,
                        r, m->msg);
            CU_ASSERT_EQUAL(m->other, 0);
            CU_ASSERT_EQUAL(m->bad_msg, 0);
            CU_ASSERT_EQUAL(m->bad_data, 0);
            if (j < FULL_JOBS) {
                ok += m->ok;
                nomem += m->nomem;
                nospace += m->nospace;
            }
        }
    if (sig)
        fprintf(stderr, "\n%d ranks died of a signal\n", sig);
    /* the jobs at once both succeeded and ran out of room (at a creation,
     * or at a growth) */
    CU_ASSERT(ok > 0 && nomem + nospace > 0);
    for (int r = 0; r < FULL_P; r++)
        CU_ASSERT(fs->rank[FULL_JOBS][r].ok == 2 &&
                  fs->rank[FULL_JOBS][r].nomem == 0 &&
                  fs->rank[FULL_JOBS][r].nospace == FULL_P);
    nc__run_shared_free(fs, sizeof *fs);
}

/* ---- SIGKILL during creation ------------------------------------------ */

#define KILL_P 3
#define KILL_ROUNDS 80

typedef struct kill_shared {
    int pid[KILL_P];
    unsigned seed;
} kill_shared_t;

static void *killer(void *arg)
{
    unsigned us = *(unsigned *)arg;
    usleep(us);
    kill(getpid(), SIGKILL);
    return NULL;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Create and destroy teams until a thread of this rank kills it with
 * SIGKILL at a random moment of the loop. */
static int kill_body(const numacoll_bootstrap_t *b, void *arg)
{
    kill_shared_t *ks = arg;
    ks->pid[b->rank] = getpid();
    /* fresh segments every time: a pooled one would not exercise creation */
    nc__seg_pool_set_limit(0);
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    numacoll_team_t *team;
    /* two rounds first, the second to learn how long a round takes here
     * (the first loads the topology): the kills then land anywhere in the
     * next few rounds, not in the start-up */
    double t0 = 0;
    for (int i = 0; i < 2; i++) {
        t0 = now_us();
        if (numacoll_team_create(b, &cfg, &team) == NUMACOLL_OK)
            numacoll_team_destroy(team);
    }
    unsigned round_us = (unsigned)(now_us() - t0) + 1;
    /* rank 0, which creates the segments, dies first as a rule; the
     * others a little later, unless the watchdog kills them as soon as
     * one is dead */
    static unsigned us;
    unsigned s = (ks->seed * 2654435761u) ^ ((unsigned)b->rank * 40503u);
    us = b->rank == 0 ? (s >> 8) % (3 * round_us)
                      : 3 * round_us + (s >> 8) % (3 * round_us);
    pthread_t th;
    if (pthread_create(&th, NULL, killer, &us) != 0)
        return 3;
    for (;;)
        if (numacoll_team_create(b, &cfg, &team) == NUMACOLL_OK)
            numacoll_team_destroy(team);
}

/* Entries of /dev/shm named after one of pids (a segment's name carries
 * its creator's pid); unlinked once counted, so a failure does not leave
 * them for the next run. */
static int leftovers(const int *pids, int n)
{
    int found = 0;
    char uid[32];
    snprintf(uid, sizeof uid, "numacoll-%u-", (unsigned)getuid());
    DIR *d = opendir("/dev/shm");
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, uid, strlen(uid)) != 0)
            continue;
        for (int i = 0; i < n; i++) {
            char tag[32];
            snprintf(tag, sizeof tag, "-%d-", pids[i]);
            if (pids[i] > 0 && strstr(e->d_name + strlen(uid), tag)) {
                char name[300];
                snprintf(name, sizeof name, "/%s", e->d_name);
                shm_unlink(name);
                found++;
                break;
            }
        }
    }
    closedir(d);
    return found;
}

static void test_sigkill_in_creation(void)
{
    kill_shared_t *ks = nc__run_shared_alloc(sizeof *ks);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ks);
    int left = 0, rounds_left = 0;
    for (int round = 0; round < KILL_ROUNDS; round++) {
        memset(ks, 0, sizeof *ks);
        ks->seed = (unsigned)round + 1;
        int ws[KILL_P];
        nc__run_opts_t o = {.p = KILL_P, .timeout_ms = 20000, .grace_ms = 1,
                            .quiet = 1};
        nc__run(&o, kill_body, ks, ws, NULL);
        for (int r = 0; r < KILL_P; r++)
            CU_ASSERT(WIFSIGNALED(ws[r]) && WTERMSIG(ws[r]) == SIGKILL);
        int n = leftovers(ks->pid, KILL_P);
        left += n;
        rounds_left += n > 0;
    }
    if (left)
        fprintf(stderr, "\n%d segments left in /dev/shm by %d of %d rounds\n",
                left, rounds_left, KILL_ROUNDS);
    CU_ASSERT_EQUAL(left, 0);
    nc__run_shared_free(ks, sizeof *ks);
}

/* ---- memory in proportion to use ------------------------------------ */

#define RSS_TEAMS 300

static long vm_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0)
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb;
}

/* A library's communicator: created, one Bcast and one Allreduce, kept. */
static int rss_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    static numacoll_team_t *teams[RSS_TEAMS];
    long before = vm_rss_kb();
    int bad = 0;
    for (int i = 0; i < RSS_TEAMS && !bad; i++) {
        if (numacoll_team_create(b, NULL, &teams[i]) != NUMACOLL_OK) {
            fprintf(stderr, "rank %d: team %d: %s\n", b->rank, i,
                    numacoll_team_create_error());
            bad = 1;
            break;
        }
        char buf[4096];
        memset(buf, b->rank == 0 ? 5 : 0, sizeof buf);
        int64_t x = b->rank + 1, sum = 0;
        bad = numacoll_bcast(teams[i], buf, sizeof buf, 0) != NUMACOLL_OK ||
              buf[4095] != 5 ||
              numacoll_allreduce(teams[i], &x, &sum, 1, NUMACOLL_DTYPE_INT64,
                                 NUMACOLL_OP_SUM) != NUMACOLL_OK ||
              sum != (int64_t)b->size * (b->size + 1) / 2;
    }
    long grown = vm_rss_kb() - before;
    if (grown >= 64 * 1024)
        fprintf(stderr, "rank %d: VmRSS grew by %ld kB with %d teams\n",
                b->rank, grown, RSS_TEAMS);
    for (int i = 0; i < RSS_TEAMS; i++)
        if (teams[i])
            numacoll_team_destroy(teams[i]);
    return bad ? 2 : grown >= 64 * 1024;
}

static void test_rss_300_teams(void)
{
    CU_ASSERT_EQUAL(nct_run(2, rss_body, NULL), 0);
}

/* ---- the pool of freed segments ------------------------------------- */

typedef struct reuse_shared {
    char first[4][NC_SEG_NAME_MAX];
    int failed_at[4];
} reuse_shared_t;

/* Every collective, checked, at sizes that take every algorithm of the
 * built-in table; salt makes each round's data its own. */
static int workload(numacoll_team_t *t, int salt)
{
    const int me = numacoll_team_rank(t), p = numacoll_team_size(t);
    static unsigned char buf[300000];
    static const size_t sizes[] = {1, 56, 57, 8192, 100000, sizeof buf};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        int root = (int)(k + (size_t)salt) % p;
        for (size_t i = 0; i < sizes[k]; i++)
            buf[i] = me == root ? (unsigned char)(i + k + (size_t)salt) : 0;
        if (numacoll_bcast(t, buf, sizes[k], root) != NUMACOLL_OK)
            return 1;
        for (size_t i = 0; i < sizes[k]; i++)
            if (buf[i] != (unsigned char)(i + k + (size_t)salt))
                return 2;
    }
    static const size_t counts[] = {1, 7, 100, 5000};
    static int64_t in[5000], out[5000];
    for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
        for (size_t i = 0; i < counts[k]; i++)
            in[i] = (int64_t)(i * 3 + (size_t)me + (size_t)salt);
        if (numacoll_allreduce(t, in, out, counts[k], NUMACOLL_DTYPE_INT64,
                               NUMACOLL_OP_SUM) != NUMACOLL_OK)
            return 3;
        for (size_t i = 0; i < counts[k]; i++)
            if (out[i] != (int64_t)((i * 3 + (size_t)salt) * (size_t)p) +
                              (int64_t)p * (p - 1) / 2)
                return 4;
        int root = (int)(k + (size_t)salt + 1) % p;
        memset(out, 0, sizeof out);
        if (numacoll_reduce(t, in, out, counts[k], NUMACOLL_DTYPE_INT64,
                            NUMACOLL_OP_MAX, root) != NUMACOLL_OK)
            return 5;
        for (size_t i = 0; i < counts[k] && me == root; i++)
            if (out[i] != (int64_t)(i * 3 + (size_t)(p - 1) + (size_t)salt))
                return 6;
        if (numacoll_barrier(t) != NUMACOLL_OK)
            return 7;
    }
    return 0;
}

static int reuse_body(const numacoll_bootstrap_t *b, void *arg)
{
    reuse_shared_t *rs = arg;
    const int me = b->rank;
    nc__seg_pool_set_limit(4);
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    numacoll_team_t *t, *u;
    char first[NC_SEG_NAME_MAX], second[NC_SEG_NAME_MAX];
#define STEP(n, cond)                                                         \
    do {                                                                      \
        if (!(cond)) {                                                        \
            rs->failed_at[me] = n;                                            \
            return n;                                                         \
        }                                                                     \
    } while (0)
    STEP(10, numacoll_team_create(b, &cfg, &t) == NUMACOLL_OK);
    snprintf(first, sizeof first, "%s", numacoll_team_segment_name(t));
    snprintf(rs->first[me], sizeof rs->first[me], "%s", first);
    STEP(11, workload(t, 0) == 0);
    /* leave state behind: the root's Bcast is announced but never read,
     * so control words and a bank hold a call the next team must not see */
    static unsigned char junk[100000];
    memset(junk, 0xee, sizeof junk);
    if (me == 0)
        STEP(12, numacoll_bcast(t, junk, sizeof junk, 0) == NUMACOLL_OK);
    numacoll_team_destroy(t);
    /* the same processes again: the same segment, reset, correct */
    for (int round = 1; round <= 4; round++) {
        STEP(20 + round, numacoll_team_create(b, &cfg, &t) == NUMACOLL_OK);
        STEP(30 + round, strcmp(numacoll_team_segment_name(t), first) == 0);
        numacoll_placement_t pl;
        numacoll_team_placement(t, &pl);
        STEP(40 + round, pl.pages > 0 && pl.block_pages > pl.pages &&
                             (pl.pages_unknown > 0 ||
                              pl.pages_on_node == pl.pages));
        STEP(50 + round, workload(t, round) == 0);
        numacoll_team_destroy(t);
    }
    /* two alive at once: one takes the pooled segment, the other a fresh
     * one, and both work side by side */
    STEP(60, numacoll_team_create(b, &cfg, &t) == NUMACOLL_OK);
    STEP(61, numacoll_team_create(b, &cfg, &u) == NUMACOLL_OK);
    snprintf(second, sizeof second, "%s", numacoll_team_segment_name(u));
    STEP(62, strcmp(numacoll_team_segment_name(t), first) == 0 &&
                 strcmp(second, first) != 0);
    STEP(63, workload(t, 7) == 0 && workload(u, 8) == 0 &&
                 workload(t, 9) == 0);
    numacoll_team_destroy(t);
    numacoll_team_destroy(u);
    STEP(64, nc__seg_pool_count() == 2);
    /* another layout never takes them */
    numacoll_config_t small = cfg;
    small.frag_size = 4096;
    STEP(70, numacoll_team_create(b, &small, &t) == NUMACOLL_OK);
    STEP(71, strcmp(numacoll_team_segment_name(t), first) != 0 &&
                 strcmp(numacoll_team_segment_name(t), second) != 0);
    STEP(72, workload(t, 10) == 0);
    numacoll_team_destroy(t);
    /* bounded: six freed at once leave four */
    numacoll_team_t *six[6];
    for (int i = 0; i < 6; i++)
        STEP(80, numacoll_team_create(b, &cfg, &six[i]) == NUMACOLL_OK);
    for (int i = 0; i < 6; i++)
        numacoll_team_destroy(six[i]);
    STEP(81, nc__seg_pool_count() == 4);
    STEP(82, nc__seg_pool_drain() == 4 && nc__seg_pool_count() == 0);
    /* pooling off: nothing kept, every team fresh */
    nc__seg_pool_set_limit(0);
    STEP(90, numacoll_team_create(b, &cfg, &t) == NUMACOLL_OK);
    snprintf(first, sizeof first, "%s", numacoll_team_segment_name(t));
    numacoll_team_destroy(t);
    STEP(91, nc__seg_pool_count() == 0);
    STEP(92, numacoll_team_create(b, &cfg, &t) == NUMACOLL_OK);
    STEP(93, strcmp(numacoll_team_segment_name(t), first) != 0);
    numacoll_team_destroy(t);
#undef STEP
    return 0;
}

static void test_pool_reuse(void)
{
    reuse_shared_t *rs = nc__run_shared_alloc(sizeof *rs);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rs);
    for (int p = 1; p <= 3; p += 2) {
        memset(rs, 0, sizeof *rs);
        CU_ASSERT_EQUAL(nct_run(p, reuse_body, rs), 0);
        for (int r = 0; r < p; r++)
            if (rs->failed_at[r])
                fprintf(stderr, "\np %d rank %d: failed at step %d\n", p, r,
                        rs->failed_at[r]);
    }
    nc__run_shared_free(rs, sizeof *rs);
}

/* A rank whose pool lacks the segment (freed later, or evicted) makes the
 * others create a fresh one instead of pairing different segments. */
static int partial_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    nc__seg_pool_set_limit(4);
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    numacoll_team_t *t;
    if (numacoll_team_create(b, &cfg, &t) != NUMACOLL_OK)
        return 10;
    char first[NC_SEG_NAME_MAX];
    snprintf(first, sizeof first, "%s", numacoll_team_segment_name(t));
    numacoll_team_destroy(t);
    if (b->rank == 1)
        nc__seg_pool_drain();
    if (numacoll_team_create(b, &cfg, &t) != NUMACOLL_OK)
        return 11;
    int ok = strcmp(numacoll_team_segment_name(t), first) != 0 &&
             workload(t, 3) == 0;
    numacoll_team_destroy(t);
    return ok ? 0 : 12;
}

static void test_pool_partial(void)
{
    CU_ASSERT_EQUAL(nct_run(3, partial_body, NULL), 0);
}

/* With /dev/shm nearly full, a pooled segment that no team wants is
 * drained to make room: a team with another layout still gets its
 * staging, at its second large call at worst. */
static int drain_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    nc__seg_pool_set_limit(4);
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    cfg.node_budget = (size_t)1 << 40;   /* the room is what runs out */
    numacoll_team_t *t;
    if (numacoll_team_create(b, &cfg, &t) != NUMACOLL_OK)
        return 10;
    static unsigned char big[65536];
    if (numacoll_bcast(t, big, sizeof big, 0) != NUMACOLL_OK)
        return 13;              /* grown: ~2 of the 3 MiB */
    numacoll_team_destroy(t);   /* pooled: they stay taken */
    cfg.frag_size = 4096;       /* another layout (1.5 of the 3 MiB), */
                                /* larger than the room left          */
    int rc = numacoll_team_create(b, &cfg, &t);
    if (rc != NUMACOLL_OK) {
        fprintf(stderr, "rank %d: %s\n", b->rank,
                numacoll_team_create_error());
        return 11;
    }
    /* its first large call finds no room and drains the pools (it is
     * not run: NOSPACE on every rank), the next ones grow */
    rc = numacoll_bcast(t, big, sizeof big, 0);
    int ok = (rc == NUMACOLL_OK || rc == NUMACOLL_ERR_NOSPACE) &&
             workload(t, 5) == 0;
    numacoll_team_destroy(t);
    return ok ? 0 : 12;
}

static int drain_all(void *arg)
{
    (void)arg;
    return nct_run(2, drain_body, NULL);
}

static void test_pool_drain_when_full(void)
{
    char why[256];
    int ws = in_private_shm("3m", drain_all, NULL, why, sizeof why);
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == NO_NAMESPACE)
        fprintf(stderr, "\nno private /dev/shm of 3 MiB: %s\n", why);
    CU_ASSERT(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

int nct_register_seg(void)
{
    static const nct_test_t tests[] = {
        {"nothing in /dev/shm after create and destroy", test_destroy_leaves_nothing},
        {"SIGKILL mid-run: detected, nothing left", test_sigkill_mid_run},
        {"timeout names the ranks and the flag", test_timeout_names_ranks},
        {"SIGKILL and timeout seen by sleeping waits (one CPU)", test_failures_sleeping},
        {"bound/unbound reported, pages verified", test_bound_and_placed},
        {"full /dev/shm: NOMEM with a message, never a signal", test_full_shm},
        {"SIGKILL during create/destroy leaves nothing", test_sigkill_in_creation},
        {"300 teams at p=2 grow VmRSS by less than 64 MB", test_rss_300_teams},
        {"a freed team's segment is reused, reset, correct", test_pool_reuse},
        {"a rank without the pooled segment: a fresh one", test_pool_partial},
        {"full /dev/shm: the pool is drained for a new layout", test_pool_drain_when_full},
        {NULL, NULL},
    };
    return nct_add_suite("seg", tests);
}
