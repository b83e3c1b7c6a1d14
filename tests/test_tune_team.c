/*
 * Suite "tune_team": teams taking every choice from a tuning table. Rules
 * with different geometry (f, s, q), trees and algorithms per size range,
 * called in a mixed order with rotating roots, must give the right bytes
 * (the bank drain between geometries); the table comes from tuning_text,
 * tuning_file or $NUMACOLL_TUNING_FILE; a rejected file leaves the built-in
 * table; ranks with different tables refuse to form a team; the table a
 * `numacoll-tune --quick` run wrote ($NCT_TUNED_TABLE, set by `make
 * check`) loads and carries a Bcast.
 */
#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/runner.h"
#include "coll/team.h"
#include "nct.h"
#include "numacoll.h"

/* Three Bcast geometries, three trees, inline below 57 bytes. */
static const char mixed_table[] =
    "# a table for the tests: every range another geometry and tree\n"
    "bcast p=1-* size=0-56 alg=inline tree=chain k=2\n"
    "bcast p=1-* size=57-999 alg=pipelined f=64 s=2 q=1 tree=chain k=2\n"
    "bcast p=1-* size=1000-9999 alg=pipelined f=1K s=8 q=4 tree=knomial k=3\n"
    "bcast p=1-* size=10000-* alg=pipelined f=16K s=4 q=2 tree=flat k=2\n"
    "reduce p=1-* size=0-1023 alg=pipelined f=256 s=2 k=3\n"
    "reduce p=1-* size=1K-* alg=pipelined f=4K s=8 k=2\n"
    "allreduce p=1-* size=0-56 alg=inline\n"
    "allreduce p=1-* size=57-2047 alg=reduce_bcast f=512 s=3 k=2\n"
    "allreduce p=1-* size=2K-* alg=rsag f=2K s=1\n"
    "barrier p=1-* alg=tree k=2\n";

typedef struct {
    const char *text;       /* tuning_text, or NULL */
    const char *file;       /* tuning_file, or NULL */
    const char *want_source;/* expected numacoll_team_tuning_source prefix */
    int rounds;
} mix_arg_t;

static unsigned char pattern(uint64_t call, size_t i)
{
    uint64_t x = (call + 1) * 0x9e3779b97f4a7c15ULL + i * 0xbf58476d1ce4e5b9ULL;
    return (unsigned char)(x >> 56);
}

/* Sizes that cross every rule's boundaries in a mixed order. */
static const size_t mix_sizes[] = {8, 200, 5000, 100000, 56, 57, 999, 1000,
                                   9999, 10000, 70000, 1, 3000, 64, 1 << 20};
#define NMIX (sizeof mix_sizes / sizeof mix_sizes[0])

static int mix_body(const numacoll_bootstrap_t *b, void *arg)
{
    const mix_arg_t *a = arg;
    numacoll_team_t *team;
    if (nct_team_tuned(b, a->text, a->file, &team) != NUMACOLL_OK)
        return 10;
    int bad = 0;
    if (a->want_source &&
        strncmp(numacoll_team_tuning_source(team), a->want_source,
                strlen(a->want_source)) != 0) {
        fprintf(stderr, "tuning source '%s', expected '%s'\n",
                numacoll_team_tuning_source(team), a->want_source);
        bad = 1;
    }
    unsigned char *buf = malloc(1 << 20);
    int64_t *in = malloc(sizeof(int64_t) * 8192), *out = malloc(sizeof(int64_t) * 8192);
    if (!buf || !in || !out)
        return 11;
    uint64_t call = 0;
    for (int r = 0; r < a->rounds && !bad; r++) {
        for (size_t k = 0; k < NMIX && !bad; k++, call++) {
            size_t m = mix_sizes[k];
            int root = (int)(call % (uint64_t)b->size);
            for (size_t i = 0; i < m; i++)
                buf[i] = b->rank == root ? pattern(call, i) : 0xee;
            int rc = numacoll_bcast(team, buf, m, root);
            if (rc != NUMACOLL_OK) {
                fprintf(stderr, "bcast %zu from %d: %s\n", m, root,
                        numacoll_team_last_error(team));
                bad = 1;
                break;
            }
            for (size_t i = 0; i < m; i++)
                if (buf[i] != pattern(call, i)) {
                    fprintf(stderr, "rank %d: bcast %zu from %d: byte %zu "
                            "wrong\n", b->rank, m, root, i);
                    bad = 1;
                    break;
                }
            /* a Reduce and an Allreduce of a size from the same list, so
             * staging geometries change between calls too */
            size_t n = m / 8 > 8192 ? 8192 : (m / 8 ? m / 8 : 1);
            for (size_t i = 0; i < n; i++)
                in[i] = (int64_t)(call * 7 + i) + b->rank;
            int64_t want_i;
            rc = numacoll_allreduce(team, in, out, n, NUMACOLL_DTYPE_INT64,
                                    NUMACOLL_OP_SUM);
            for (size_t i = 0; rc == NUMACOLL_OK && i < n; i++) {
                want_i = (int64_t)(call * 7 + i) * b->size +
                         (int64_t)b->size * (b->size - 1) / 2;
                if (out[i] != want_i) {
                    fprintf(stderr, "allreduce of %zu: element %zu wrong\n", n,
                            i);
                    bad = 1;
                    break;
                }
            }
            if (rc == NUMACOLL_OK)
                rc = numacoll_reduce(team, in, out, n, NUMACOLL_DTYPE_INT64,
                                     NUMACOLL_OP_SUM, root);
            for (size_t i = 0; rc == NUMACOLL_OK && b->rank == root && i < n;
                 i++) {
                want_i = (int64_t)(call * 7 + i) * b->size +
                         (int64_t)b->size * (b->size - 1) / 2;
                if (out[i] != want_i) {
                    fprintf(stderr, "reduce of %zu: element %zu wrong\n", n, i);
                    bad = 1;
                    break;
                }
            }
            if (rc == NUMACOLL_OK)
                rc = numacoll_barrier(team);
            if (rc != NUMACOLL_OK) {
                fprintf(stderr, "reduce/allreduce/barrier: %s\n",
                        numacoll_team_last_error(team));
                bad = 1;
            }
        }
    }
    free(buf);
    free(in);
    free(out);
    numacoll_team_destroy(team);
    return bad;
}

/* Mixed sizes through rules of different geometry, every p. */
static void test_mixed_geometry(void)
{
    const int ps[] = {2, 3, 4, 8};
    for (int i = 0; i < 4; i++) {
        mix_arg_t a = {.text = mixed_table, .want_source = "tuning_text",
                       .rounds = ps[i] <= 4 ? 3 : 1};
        CU_ASSERT_EQUAL(nct_run(ps[i], mix_body, &a), 0);
    }
}

static char *write_temp(const char *text)
{
    static char path[3][64];
    static int next;
    char *p = path[next++ % 3];
    snprintf(p, 64, "/tmp/nct-tune-%d-%d.txt", (int)getpid(), next);
    FILE *f = fopen(p, "w");
    if (!f)
        return NULL;
    fputs(text, f);
    fclose(f);
    return p;
}

/* tuning_file and $NUMACOLL_TUNING_FILE load a file; a file with an error
 * leaves the built-in table in force, and says so in the source. */
static void test_file_and_env(void)
{
    char *good = write_temp(mixed_table);
    CU_ASSERT_PTR_NOT_NULL_FATAL(good);
    mix_arg_t a = {.file = good, .want_source = good, .rounds = 1};
    CU_ASSERT_EQUAL(nct_run(3, mix_body, &a), 0);

    setenv("NUMACOLL_TUNING_FILE", good, 1);
    mix_arg_t e = {.want_source = good, .rounds = 1};
    CU_ASSERT_EQUAL(nct_run(2, mix_body, &e), 0);

    char *broken = write_temp("bcast p=1-* size=0-* alg=pipelined f=100 s=2 "
                              "q=1 tree=kary k=2\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(broken);
    setenv("NUMACOLL_TUNING_FILE", broken, 1);
    mix_arg_t r = {.want_source = "built-in (", .rounds = 1};
    CU_ASSERT_EQUAL(nct_run(2, mix_body, &r), 0);
    unsetenv("NUMACOLL_TUNING_FILE");

    mix_arg_t d = {.want_source = "built-in", .rounds = 1};
    CU_ASSERT_EQUAL(nct_run(2, mix_body, &d), 0);
    unlink(good);
    unlink(broken);
}

/* Ranks that resolved different rules must not form a team. */
static int differ_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    if (b->rank == 1)
        cfg.tuning_text = "barrier p=1-* alg=tree k=3\n";
    numacoll_team_t *team;
    int rc = numacoll_team_create(b, &cfg, &team);
    if (rc == NUMACOLL_OK) {
        numacoll_team_destroy(team);
        return 1;
    }
    return rc == NUMACOLL_ERR_ARG ? 0 : 2;
}

static void test_ranks_disagree(void)
{
    CU_ASSERT_EQUAL(nct_run(3, differ_body, NULL), 0);
}

/* Parameters set in the config override the table's; a combination that
 * breaks a rule (s not a multiple of q) fails team creation. */
static int override_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    cfg.tuning_text = mixed_table;
    cfg.queue_depth = 6;   /* fine with q = 1 and 2, not with q = 4 */
    numacoll_team_t *team;
    int rc = numacoll_team_create(b, &cfg, &team);
    if (rc == NUMACOLL_OK) {
        numacoll_team_destroy(team);
        return 1;
    }
    if (rc != NUMACOLL_ERR_ARG)
        return 2;
    cfg.banks = 2;         /* now every rule has s = 6, q = 2 */
    if (numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK)
        return 3;
    unsigned char buf[5000];
    memset(buf, b->rank == 0 ? 0x5a : 0, sizeof buf);
    rc = numacoll_bcast(team, buf, sizeof buf, 0);
    int bad = rc != NUMACOLL_OK;
    for (size_t i = 0; i < sizeof buf && !bad; i++)
        bad = buf[i] != 0x5a;
    numacoll_team_destroy(team);
    return bad ? 4 : 0;
}

static void test_overrides(void)
{
    CU_ASSERT_EQUAL(nct_run(2, override_body, NULL), 0);
}

/* A team with the built-in table plans the segment docs/parameters.md
 * gives on 4 KiB pages: p * 1032 KiB + 8 KiB, and p * 1036 KiB + 8 KiB
 * where its 4 inline line slots take a third control page: at p <= 2 for
 * the inline Reduce of up to 255 bytes (8 lines at 29-byte elements), at
 * p = 3 and 5 .. 8 for the inline Scatter and Alltoall, whose rank writes
 * p - 1 blocks of 104 or 256 bytes. */
static int size_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    numacoll_team_t *team;
    unsetenv("NUMACOLL_TUNING_FILE");
    if (numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK)
        return 10;
    const int third = b->size <= 3 || (b->size >= 5 && b->size <= 8);
    size_t want = (size_t)b->size * (third ? 1036 : 1032) * 1024 + 8 * 1024;
    int bad = sysconf(_SC_PAGESIZE) == 4096 && team->layout.total != want;
    if (bad)
        fprintf(stderr, "default segment %zu bytes, expected %zu\n",
                team->layout.total, want);
    bad |= strcmp(numacoll_team_tuning_source(team), "built-in") != 0;
    numacoll_team_destroy(team);
    return bad;
}

static void test_default_segment(void)
{
    CU_ASSERT_EQUAL(nct_run(2, size_body, NULL), 0);
    CU_ASSERT_EQUAL(nct_run(3, size_body, NULL), 0);
    CU_ASSERT_EQUAL(nct_run(4, size_body, NULL), 0);
    /* the largest team the inline Scatter and Alltoall rules take, and
     * the smallest past them */
    CU_ASSERT_EQUAL(nct_run(8, size_body, NULL), 0);
    CU_ASSERT_EQUAL(nct_run(9, size_body, NULL), 0);
}

/* The table `numacoll-tune --quick` wrote in this `make check` run. */
static void test_tuned_table(void)
{
    const char *path = getenv("NCT_TUNED_TABLE");
    if (!path) {
        CU_FAIL("NCT_TUNED_TABLE is not set: run the suites through `make "
                "check`, which writes it with numacoll-tune --quick");
        return;
    }
    nc__tune_table_t tab = {0};
    char errs[2048];
    int n = nc__tune_load(path, &tab, errs, sizeof errs);
    if (n)
        fprintf(stderr, "%s\n", errs);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT(tab.n > 0);
    nc__tune_free(&tab);
    mix_arg_t a = {.file = path, .want_source = path, .rounds = 1};
    CU_ASSERT_EQUAL(nct_run(2, mix_body, &a), 0);
}

int nct_register_tune_team(void)
{
    static const nct_test_t tests[] = {
        {"mixed geometries, trees and algorithms per size", test_mixed_geometry},
        {"tuning_file, NUMACOLL_TUNING_FILE, rejected file", test_file_and_env},
        {"ranks with different rules refuse the team", test_ranks_disagree},
        {"config parameters override the rules", test_overrides},
        {"built-in table: the documented segment size", test_default_segment},
        {"the numacoll-tune --quick table carries a Bcast", test_tuned_table},
        {NULL, NULL},
    };
    return nct_add_suite("tune_team", tests);
}
