/*
 * Suite "tune_file": what a tuning file may be. Only a regular file of at
 * most NC_TUNE_FILE_MAX bytes is read; a FIFO, a directory, a device or a
 * larger file gives the built-in table at once, and the team's
 * tuning_source says why. A file that cannot be used is warned about once
 * per process, however many teams ask. Every run forks its ranks under the
 * runner's watchdog: the FIFO case blocked forever in open() before, and
 * must fail rather than hang the suite.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support/runner.h"
#include "nct.h"
#include "numacoll.h"
#include "tune/table.h"

/* Fork p ranks under a watchdog short enough that a blocked open fails
 * the test in seconds; 0 when every rank exited 0 in time. */
static int run_guarded(int p, nc__rank_fn fn, void *arg)
{
    nc__run_opts_t o = {.p = p, .timeout_ms = 15000};
    int timed_out = 0;
    int rc = nc__run(&o, fn, arg, NULL, &timed_out);
    if (timed_out)
        fprintf(stderr, "tune_file: the ranks were killed by the watchdog "
                "(blocked reading the tuning file?)\n");
    return rc == 0 && !timed_out ? 0 : 1;
}

static void temp_path(char *buf, size_t len, const char *what)
{
    static int next;
    snprintf(buf, len, "/tmp/nct-tunefile-%d-%d-%s", (int)getpid(), next++,
             what);
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int bad = fputs(text, f) < 0;
    return fclose(f) != 0 || bad ? -1 : 0;
}

/* A valid one-rule table padded with comment lines to exactly `size`
 * bytes (size >= the rule's length + 2). */
static int write_padded(const char *path, size_t size)
{
    static const char rule[] = "barrier p=1-* alg=tree k=3\n";
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(rule, f);
    size_t left = size - (sizeof rule - 1);
    char line[101];
    while (left > 0) {
        size_t n = left < sizeof line ? left : sizeof line;
        memset(line, 'x', n);
        line[0] = '#';
        line[n - 1] = '\n';
        fwrite(line, 1, n, f);
        left -= n;
    }
    return fclose(f);
}

/* ---- the team's verdict ------------------------------------------------- */

typedef struct {
    const char *file;      /* cfg.tuning_file */
    const char *want;      /* tuning_source must start with this ... */
    const char *why;       /* ... and contain this (NULL: equal `want`) */
} source_arg_t;

/* Create a team with the file, check where its table came from, and that
 * a Bcast runs on it. */
static int source_body(const numacoll_bootstrap_t *b, void *arg)
{
    const source_arg_t *a = arg;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    cfg.timeout_ms = 10000;
    cfg.tuning_file = a->file;
    numacoll_team_t *team;
    if (numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK)
        return 10;
    const char *src = numacoll_team_tuning_source(team);
    int bad = a->why ? strncmp(src, a->want, strlen(a->want)) != 0 ||
                           !strstr(src, a->why)
                     : strcmp(src, a->want) != 0;
    if (bad)
        fprintf(stderr, "rank %d: tuning source \"%s\", expected \"%s...%s\"\n",
                b->rank, src, a->want, a->why ? a->why : "");
    char buf[4096];
    memset(buf, b->rank == 0 ? 0x3c : 0, sizeof buf);
    if (numacoll_bcast(team, buf, sizeof buf, 0) != NUMACOLL_OK ||
        buf[sizeof buf - 1] != 0x3c)
        bad = 1;
    numacoll_team_destroy(team);
    return bad;
}

/* The loader's own sentence for path (run in a forked rank: on a FIFO the
 * old loader blocked). */
typedef struct {
    const char *path;
    const char *want;      /* the whole error text */
} load_arg_t;

static int load_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)b;
    const load_arg_t *a = arg;
    nc__tune_table_t t;
    char errs[512] = "";
    int n = nc__tune_load(a->path, &t, errs, sizeof errs);
    nc__tune_free(&t);
    if (n != 1 || strcmp(errs, a->want) != 0) {
        fprintf(stderr, "nc__tune_load(%s): %d problems: \"%s\", expected "
                "\"%s\"\n", a->path, n, errs, a->want);
        return 1;
    }
    return 0;
}

static void check_refused(const char *path, const char *why)
{
    char want[512];
    snprintf(want, sizeof want, "%s: cannot read: it is %s; a tuning file "
             "must be a regular file\n", path, why);
    load_arg_t l = {path, want};
    CU_ASSERT_EQUAL(run_guarded(1, load_body, &l), 0);
    source_arg_t s = {path, "built-in (", why};
    CU_ASSERT_EQUAL(run_guarded(2, source_body, &s), 0);
    CU_ASSERT_EQUAL(run_guarded(3, source_body, &s), 0);
}

static void test_fifo(void)
{
    char path[128];
    temp_path(path, sizeof path, "fifo");
    CU_ASSERT_EQUAL_FATAL(mkfifo(path, 0600), 0);
    check_refused(path, "a FIFO (named pipe)");
    unlink(path);
}

static void test_directory(void)
{
    char path[128];
    temp_path(path, sizeof path, "dir");
    CU_ASSERT_EQUAL_FATAL(mkdir(path, 0700), 0);
    check_refused(path, "a directory");
    rmdir(path);
}

/* Endless: the old loader read 16 MiB of zeros before giving up. */
static void test_char_device(void)
{
    check_refused("/dev/zero", "a character device");
}

/* NC_TUNE_FILE_MAX bytes are read; one more is refused unread. */
static void test_size_bound(void)
{
    char at[128], over[128], want[512];
    temp_path(at, sizeof at, "at-limit.txt");
    temp_path(over, sizeof over, "over-limit.txt");
    CU_ASSERT_EQUAL_FATAL(write_padded(at, NC_TUNE_FILE_MAX), 0);
    CU_ASSERT_EQUAL_FATAL(write_padded(over, NC_TUNE_FILE_MAX + 1), 0);

    source_arg_t ok = {at, at, NULL};
    CU_ASSERT_EQUAL(run_guarded(2, source_body, &ok), 0);

    snprintf(want, sizeof want, "%s: cannot read: it holds %u bytes, more "
             "than the %u (1 MiB) a tuning file may hold\n", over,
             NC_TUNE_FILE_MAX + 1, NC_TUNE_FILE_MAX);
    load_arg_t l = {over, want};
    CU_ASSERT_EQUAL(run_guarded(1, load_body, &l), 0);
    source_arg_t s = {over, "built-in (", "more than the 1048576 (1 MiB)"};
    CU_ASSERT_EQUAL(run_guarded(2, source_body, &s), 0);
    unlink(at);
    unlink(over);
}

/* A path through a FIFO in a symlink is refused as the FIFO it names. */
static void test_symlink_to_fifo(void)
{
    char fifo[128], link[128];
    temp_path(fifo, sizeof fifo, "fifo");
    temp_path(link, sizeof link, "link");
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    CU_ASSERT_EQUAL_FATAL(symlink(fifo, link), 0);
    source_arg_t s = {link, "built-in (", "a FIFO (named pipe)"};
    CU_ASSERT_EQUAL(run_guarded(2, source_body, &s), 0);
    unlink(link);
    unlink(fifo);
}

/* ---- warnings once per process ------------------------------------------ */

typedef struct {
    const char *paths[2];  /* teams alternate between these (NULL: one) */
    int teams;             /* teams per path */
    const char *rewrite;   /* if set: after the first half, this text
                            * replaces paths[0] (a new problem); p = 1 */
    int want[2];           /* warnings rank 0 must print per path */
    const char *log;       /* rank r's stderr goes to <log>.<r> */
} warn_arg_t;

/* Lines that start a warning about path in the text of file log. */
static int count_warnings(const char *log, const char *path)
{
    FILE *f = fopen(log, "r");
    if (!f)
        return -1;
    char head[4200], line[8192];
    snprintf(head, sizeof head, "numacoll: tuning file %s rejected", path);
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strncmp(line, head, strlen(head)) == 0;
    fclose(f);
    return n;
}

static int warn_body(const numacoll_bootstrap_t *b, void *arg)
{
    const warn_arg_t *a = arg;
    char log[256];
    snprintf(log, sizeof log, "%s.%d", a->log, b->rank);
    /* this rank's stderr into its own file, to count what it printed */
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int saved = dup(2);
    if (fd < 0 || saved < 0 || dup2(fd, 2) < 0)
        return 20;
    close(fd);
    int npaths = a->paths[1] ? 2 : 1, bad = 0;
    for (int i = 0; i < a->teams && !bad; i++) {
        if (a->rewrite && i == a->teams / 2 &&
            write_file(a->paths[0], a->rewrite) != 0)
            bad = 21;
        for (int k = 0; k < npaths && !bad; k++) {
            numacoll_config_t cfg;
            numacoll_config_init(&cfg);
            cfg.verbose = 1;
            cfg.tuning_file = a->paths[k];
            numacoll_team_t *team;
            if (numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK)
                bad = 22;
            else
                numacoll_team_destroy(team);
        }
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    for (int k = 0; k < npaths && !bad; k++) {
        int n = count_warnings(log, a->paths[k]);
        int want = b->rank == 0 ? a->want[k] : 0;
        if (n != want) {
            fprintf(stderr, "rank %d printed %d warnings about %s in %d "
                    "teams, expected %d\n", b->rank, n, a->paths[k],
                    a->teams, want);
            bad = 23;
        }
    }
    unlink(log);
    return bad;
}

static void test_warn_missing(void)
{
    char log[128], a[128], b[128];
    temp_path(log, sizeof log, "log");
    temp_path(a, sizeof a, "missing-a.txt");
    temp_path(b, sizeof b, "missing-b.txt");
    warn_arg_t one = {{a, NULL}, 8, NULL, {1, 0}, log};
    CU_ASSERT_EQUAL(run_guarded(2, warn_body, &one), 0);
    /* two paths in turn: each cache miss must not bring a warning back */
    warn_arg_t two = {{a, b}, 6, NULL, {1, 1}, log};
    CU_ASSERT_EQUAL(run_guarded(3, warn_body, &two), 0);
}

static void test_warn_fifo_and_rejected(void)
{
    char log[128], fifo[128], broken[128];
    temp_path(log, sizeof log, "log");
    temp_path(fifo, sizeof fifo, "fifo");
    temp_path(broken, sizeof broken, "broken.txt");
    CU_ASSERT_EQUAL_FATAL(write_file(broken, "bcast p=1-* alg=bogus\n"), 0);
    warn_arg_t r = {{broken, NULL}, 8, NULL, {1, 0}, log};
    CU_ASSERT_EQUAL(run_guarded(2, warn_body, &r), 0);

    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    warn_arg_t f = {{fifo, broken}, 5, NULL, {1, 1}, log};
    CU_ASSERT_EQUAL(run_guarded(2, warn_body, &f), 0);
    unlink(fifo);
    unlink(broken);
}

/* A file edited into another problem is news: warned again, once. */
static void test_warn_new_problem(void)
{
    char log[128], broken[128];
    temp_path(log, sizeof log, "log");
    temp_path(broken, sizeof broken, "broken.txt");
    CU_ASSERT_EQUAL_FATAL(write_file(broken, "bcast p=1-* alg=bogus\n"), 0);
    warn_arg_t r = {{broken, NULL}, 6,
                    "barrier p=1-* alg=tree k=3 size=oops-and-longer\n",
                    {2, 0}, log};
    CU_ASSERT_EQUAL(run_guarded(1, warn_body, &r), 0);
    unlink(broken);
}

int nct_register_tune_file(void)
{
    static const nct_test_t tests[] = {
        {"a FIFO is refused at once, built-in table", test_fifo},
        {"a directory is refused, built-in table", test_directory},
        {"/dev/zero is refused unread, built-in table", test_char_device},
        {"1 MiB is read, one byte more is refused", test_size_bound},
        {"a symlink to a FIFO is refused", test_symlink_to_fifo},
        {"a missing file: one warning per process", test_warn_missing},
        {"a FIFO, a rejected file: one warning per process",
         test_warn_fifo_and_rejected},
        {"a file edited into a new problem: warned again",
         test_warn_new_problem},
        {NULL, NULL},
    };
    return nct_add_suite("tune_file", tests);
}
