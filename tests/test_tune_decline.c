/*
 * Suite "tune_decline": the rule attribute decline= and the rule key over=
 * (docs/tuning.md). They parse, print back and refuse bad values; rules
 * that differ only in disjoint over= ranges do not overlap; a team's shape
 * picks its rules by its oversubscription verdict; a team reports its
 * declining rules (numacoll_team_declines, numacoll_team_decline_mask) and
 * still runs them itself: standalone, decline changes nothing;
 * numacoll-tune --decline-from marks a table from a comparison CSV,
 * splitting rules by p and size at the midpoints (build/numacoll-tune).
 */
#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nct.h"
#include "numacoll.h"
#include "tune/table.h"

/* The problems of text, one per line ("" where it is accepted); the
 * table is freed. Returns the count of problems. */
static int problems(const char *text, char *errs, size_t len)
{
    nc__tune_table_t t;
    int n = nc__tune_parse(text, strlen(text), "d.txt", &t, errs, len);
    nc__tune_free(&t);
    return n;
}

#define ONE_PROBLEM(text, want)                                               \
    do {                                                                      \
        char e_[1024];                                                        \
        CU_ASSERT_EQUAL(problems(text, e_, sizeof e_), 1);                    \
        if (strcmp(e_, want) != 0)                                            \
            fprintf(stderr, "\n%s:%d: got %s", __FILE__, __LINE__, e_);       \
        CU_ASSERT_STRING_EQUAL(e_, want);                                     \
    } while (0)

static const char keys_text[] =
    "bcast p=1-* size=0-99 over=0 alg=inline tree=kary k=2 decline=1\n"
    "bcast p=1-* size=0-99 over=1 alg=inline tree=kary k=2\n"
    "bcast p=1-* size=100-* over=0-1 alg=pipelined f=8K s=8 q=2 tree=kary "
    "k=2 decline=0\n"
    "barrier p=1-* over=* alg=dissem k=2 decline=1\n"
    "allreduce p=2-* size=0-* alg=rsag f=4K s=2 decline=1 gain=0.5\n";

static void test_parse_print(void)
{
    nc__tune_table_t t;
    char errs[1024];
    CU_ASSERT_EQUAL_FATAL(nc__tune_parse(keys_text, sizeof keys_text - 1,
                                         "d.txt", &t, errs, sizeof errs), 0);
    CU_ASSERT_EQUAL_FATAL(t.n, 5);
    /* over: a bit per verdict, 0 where absent; decline 0 by default */
    static const unsigned over[] = {1, 2, 3, 3, 0};
    static const unsigned dec[] = {1, 0, 0, 1, 1};
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(t.rules[i].over, over[i]);
        CU_ASSERT_EQUAL(t.rules[i].ch.decline, dec[i]);
    }
    char line[512];
    nc__tune_format_rule(&t.rules[0], line, sizeof line);
    CU_ASSERT_STRING_EQUAL(line, "bcast      p=1-*  size=0-99     over=0 "
                                 "alg=inline tree=kary k=2 decline=1");
    nc__tune_format_rule(&t.rules[3], line, sizeof line);
    CU_ASSERT_STRING_EQUAL(line, "barrier    p=1-*  size=*        over=0-1 "
                                 "alg=dissem k=2 decline=1");
    nc__tune_format_rule(&t.rules[4], line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, " decline=1 gain=0.5"));
    CU_ASSERT_PTR_NULL(strstr(line, "over"));

    /* written and read again: the same rules */
    size_t len = 0;
    char *text = nct_tune_text(&t, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    nc__tune_table_t u;
    CU_ASSERT_EQUAL_FATAL(nc__tune_parse(text, len, "w", &u, errs,
                                         sizeof errs), 0);
    CU_ASSERT_EQUAL_FATAL(u.n, t.n);
    for (int i = 0; i < t.n; i++) {
        CU_ASSERT_EQUAL(u.rules[i].over, t.rules[i].over);
        CU_ASSERT_EQUAL(u.rules[i].ch.decline, t.rules[i].ch.decline);
        CU_ASSERT_EQUAL(u.rules[i].size_lo, t.rules[i].size_lo);
        CU_ASSERT_EQUAL(u.rules[i].ch.alg, t.rules[i].ch.alg);
    }
    nc__tune_free(&u);
    free(text);
    nc__tune_free(&t);
}

static void test_errors(void)
{
    ONE_PROBLEM("barrier p=1-* alg=tree k=2 decline=2\n",
                "d.txt:1:36: expected decline 0 or 1, found '2'\n");
    ONE_PROBLEM("barrier p=1-* alg=tree k=2 decline=yes\n",
                "d.txt:1:36: expected decline 0 or 1, found 'yes'\n");
    ONE_PROBLEM("barrier p=1-* over=3 alg=tree k=2\n",
                "d.txt:1:20: expected over 0, 1 or 0-1 (the team's "
                "oversubscription verdict), found '3'\n");
    ONE_PROBLEM("barrier p=1-* over=1-0 alg=tree k=2\n",
                "d.txt:1:20: expected over 0, 1 or 0-1 (the team's "
                "oversubscription verdict), found '1-0'\n");
    ONE_PROBLEM("barrier p=1-* over=0-2 alg=tree k=2\n",
                "d.txt:1:20: expected over 0, 1 or 0-1 (the team's "
                "oversubscription verdict), found '0-2'\n");
    ONE_PROBLEM("barrier p=1-* over=0 over=1 alg=tree k=2\n",
                "d.txt:1:22: expected each key once per rule, found "
                "'over'\n");
}

static void test_overlap(void)
{
    char errs[1024];
    /* disjoint verdicts: no overlap */
    CU_ASSERT_EQUAL(problems("barrier p=1-* over=0 alg=tree k=2\n"
                             "barrier p=1-* over=1 alg=dissem k=2\n",
                             errs, sizeof errs), 0);
    /* absent and 0-1 take both verdicts */
    ONE_PROBLEM("barrier p=1-* over=0-1 alg=tree k=2\n"
                "barrier p=1-* over=1 alg=dissem k=2\n",
                "d.txt:2: rule overlaps line 1 (barrier p=1-* size=* "
                "over=0-1)\n");
    ONE_PROBLEM("bcast p=2-4 size=0-99 alg=inline tree=kary k=2\n"
                "bcast p=4 size=99 over=0 alg=inline tree=kary k=2\n",
                "d.txt:2: rule overlaps line 1 (bcast p=2-4 size=0-99)\n");
    ONE_PROBLEM("bcast p=4 size=99 over=1 alg=inline tree=kary k=2\n"
                "bcast p=2-4 size=0-99 alg=inline tree=kary k=2\n",
                "d.txt:2: rule overlaps line 1 (bcast p=4 size=99 "
                "over=1)\n");
    /* decline is no key of where a rule applies */
    ONE_PROBLEM("barrier p=1-* alg=tree k=2 decline=1\n"
                "barrier p=1-* alg=tree k=2\n",
                "d.txt:2: rule overlaps line 1 (barrier p=1-* size=*)\n");
}

/* A shape's verdict picks its rules; decline travels into the entry. */
static void test_resolve(void)
{
    nc__tune_table_t t;
    char errs[1024];
    CU_ASSERT_EQUAL_FATAL(nc__tune_parse(keys_text, sizeof keys_text - 1,
                                         "d.txt", &t, errs, sizeof errs), 0);
    for (unsigned over = 0; over <= 1; over++) {
        nc__tune_shape_t sh = {.p = 4, .nodes = 1, .ppn = 4, .over = over};
        nc__tune_team_t tt;
        CU_ASSERT_EQUAL_FATAL(nc__tune_resolve_shape(&t, &sh, &tt), 0);
        const nc__tune_entry_t *e = nc__tune_lookup(&tt, NC_COLL_BCAST, 50);
        CU_ASSERT_EQUAL(e->line, over ? 2 : 1);
        CU_ASSERT_EQUAL(e->ch.decline, over ? 0u : 1u);
        e = nc__tune_lookup(&tt, NC_COLL_BCAST, 100);
        CU_ASSERT_EQUAL(e->line, 3);
        CU_ASSERT_EQUAL(e->ch.decline, 0u);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BARRIER, 0)->ch.decline,
                        1u);
        nc__tune_team_free(&tt);
    }
    /* a rule with over= but a shape built without it: verdict 0 */
    nc__tune_team_t tt;
    CU_ASSERT_EQUAL_FATAL(nc__tune_resolve(&t, 4, 1, 4, &tt), 0);
    CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BCAST, 0)->line, 1);
    nc__tune_team_free(&tt);
    nc__tune_free(&t);
}

/* Declining rules for some sizes of Bcast and Allreduce, and Barrier. */
static const char team_text[] =
    "bcast p=1-* size=0-100 alg=inline tree=kary k=2 decline=1\n"
    "bcast p=1-* size=101-* alg=pipelined f=8K s=8 q=2 tree=kary k=2\n"
    "allreduce p=1-* size=0-56 alg=inline\n"
    "allreduce p=1-* size=57-* alg=rsag f=4K s=2 decline=1\n"
    "barrier p=1-* alg=dissem k=2 decline=1\n";

static int team_body(const numacoll_bootstrap_t *b, void *arg)
{
    const char *text = arg;
    numacoll_team_t *t;
    if (nct_team_tuned(b, text, NULL, &t) != NUMACOLL_OK)
        return 10;
    int bad = 0;
#define WANT(c) do { if (!(c)) { fprintf(stderr, "rank %d: %s fails\n", \
                                         b->rank, #c); bad = 1; } } while (0)
    if (text) {
        WANT(numacoll_team_decline_mask(t) ==
             (1u << NUMACOLL_COLL_BCAST | 1u << NUMACOLL_COLL_BARRIER |
              1u << NUMACOLL_COLL_ALLREDUCE));
        WANT(numacoll_team_declines(t, NUMACOLL_COLL_BCAST, 0) == 1);
        WANT(numacoll_team_declines(t, NUMACOLL_COLL_BCAST, 100) == 1);
        WANT(numacoll_team_declines(t, NUMACOLL_COLL_BCAST, 101) == 0);
        WANT(numacoll_team_declines(t, NUMACOLL_COLL_ALLREDUCE, 56) == 0);
        WANT(numacoll_team_declines(t, NUMACOLL_COLL_ALLREDUCE, 57) == 1);
        WANT(numacoll_team_declines(t, NUMACOLL_COLL_ALLREDUCE, SIZE_MAX) ==
             1);
        WANT(numacoll_team_declines(t, NUMACOLL_COLL_BARRIER, 0) == 1);
    } else {
        WANT(numacoll_team_decline_mask(t) == 0);
        WANT(numacoll_team_declines(t, NUMACOLL_COLL_BCAST, 8) == 0);
    }
    WANT(numacoll_team_declines(t, NUMACOLL_COLL_REDUCE, 8) == 0);
    WANT(numacoll_team_declines(t, NUMACOLL_COLL_COUNT, 8) == 0);
    WANT(numacoll_team_declines(NULL, NUMACOLL_COLL_BCAST, 8) == 0);
    /* standalone the declining rules run: the results are right */
    unsigned char buf[4096];
    static const size_t sizes[] = {8, 100, 101, 4096};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && !bad; i++) {
        size_t m = sizes[i];
        for (size_t j = 0; j < m; j++)
            buf[j] = b->rank == 1 ? (unsigned char)(j * 7 + m) : 0;
        int rc = numacoll_bcast(t, buf, m, 1);
        WANT(rc == NUMACOLL_OK);
        for (size_t j = 0; j < m && rc == NUMACOLL_OK; j++)
            if (buf[j] != (unsigned char)(j * 7 + m)) {
                fprintf(stderr, "rank %d: bcast %zu: byte %zu\n", b->rank, m,
                        j);
                bad = 1;
                break;
            }
        int64_t in[64], out[64];
        size_t n = m / 64 ? m / 64 : 1;
        for (size_t j = 0; j < n; j++)
            in[j] = (int64_t)j + b->rank;
        rc = numacoll_allreduce(t, in, out, n, NUMACOLL_DTYPE_INT64,
                                NUMACOLL_OP_SUM);
        WANT(rc == NUMACOLL_OK);
        for (size_t j = 0; j < n && rc == NUMACOLL_OK; j++)
            WANT(out[j] == (int64_t)j * b->size +
                               (int64_t)b->size * (b->size - 1) / 2);
        WANT(numacoll_barrier(t) == NUMACOLL_OK);
    }
#undef WANT
    numacoll_team_destroy(t);
    return bad;
}

static void test_team(void)
{
    CU_ASSERT_EQUAL(nct_run(3, team_body, (void *)team_text), 0);
    CU_ASSERT_EQUAL(nct_run(2, team_body, NULL), 0);
}

/* numacoll-tune --decline-from: a compare-ompi.sh CSV at p=4 over a
 * small table. Bcast: 8 bytes slower in both loops, 100 faster in the
 * application loop only, 4096 slower (application loop only measured);
 * Barrier faster; rows of another configuration, of a v form and not ok
 * are not read. */
static const char dec_csv[] =
    "mode,op,config,p,bytes,calls,samples,min_us,median_us,max_us,"
    "memcpy_us,line_rtt_us,barrier_us,cache,root_shift,status,note,align,"
    "loop,dtype\n"
    "mpi,bcast,numacoll,4,8,9,9,1,0.50,1,,,,cold,0,ok,,0,app,byte\n"
    "mpi,bcast,tuned,4,8,9,9,1,0.40,1,,,,cold,0,ok,,0,app,byte\n"
    "mpi,bcast,numacoll,4,8,9,9,1,0.30,1,,,,cold,0,ok,\"a, b\",0,b2b,byte\n"
    "mpi,bcast,tuned,4,8,9,9,1,0.20,1,,,,cold,0,ok,,0,b2b,byte\n"
    "mpi,bcast,numacoll,4,100,9,9,1,1.0,1,,,,cold,0,ok,,0,app,byte\n"
    "mpi,bcast,tuned,4,100,9,9,1,2.0,1,,,,cold,0,ok,,0,app,byte\n"
    "mpi,bcast,numacoll,4,100,9,9,1,3.0,1,,,,cold,0,ok,,0,b2b,byte\n"
    "mpi,bcast,tuned,4,100,9,9,1,2.0,1,,,,cold,0,ok,,0,b2b,byte\n"
    "mpi,bcast,numacoll,4,4096,9,9,1,30,1,,,,cold,0,ok,,0,app,byte\n"
    "mpi,bcast,tuned,4,4096,9,9,1,20,1,,,,cold,0,ok,,0,app,byte\n"
    "mpi,bcast,sm,4,100,9,9,1,0.01,1,,,,cold,0,ok,,0,app,byte\n"
    "mpi,barrier,numacoll,4,0,9,9,1,1,1,,,,cold,0,ok,,0,app,\n"
    "mpi,barrier,tuned,4,0,9,9,1,2,1,,,,cold,0,ok,,0,app,\n"
    "mpi,allgatherv,numacoll,4,64,9,9,1,3,1,,,,cold,0,ok,,0,app,byte\n"
    "mpi,allgatherv,tuned,4,64,9,9,1,2,1,,,,cold,0,ok,,0,app,byte\n"
    "mpi,allreduce,numacoll,4,64,,,,,,,,,cold,0,na,,0,app,uint32\n";
static const char dec_table[] =
    "bcast   p=2-8 size=0-1023 alg=inline tree=kary k=2\n"
    "bcast   p=2-8 size=1K-*   alg=pipelined f=8K s=8 q=2 tree=kary k=2\n"
    "barrier p=1-* alg=dissem k=2\n";

/* Run the tuner on the CSV and table with extra options; the table it
 * wrote, resolved for p (nodes 1); its exit status. */
static int decline_run(const char *extra, unsigned p, nc__tune_team_t *tt,
                       char *out, size_t len)
{
    char dir[] = "/tmp/nct-decline.XXXXXX";
    if (!mkdtemp(dir))
        return -1;
    char csv[64], tab[64], res[64], args[512];
    snprintf(csv, sizeof csv, "%s/m.csv", dir);
    snprintf(tab, sizeof tab, "%s/t.txt", dir);
    snprintf(res, sizeof res, "%s/out.txt", dir);
    FILE *f = fopen(csv, "w"), *g = fopen(tab, "w");
    if (f)
        fputs(dec_csv, f);
    if (g)
        fputs(dec_table, g);
    if (f)
        fclose(f);
    if (g)
        fclose(g);
    snprintf(args, sizeof args, "--decline-from %s --table %s -o %s %s", csv,
             tab, res, extra);
    int rc = nct_tuner(args, out, len);
    nc__tune_table_t t;
    char errs[1024];
    memset(tt, 0, sizeof *tt);
    if (rc == 0 && nc__tune_load(res, &t, errs, sizeof errs) == 0) {
        if (nc__tune_resolve(&t, p, 1, p, tt) != 0)
            rc = -1;
        nc__tune_free(&t);
    } else if (rc == 0) {
        rc = -1;
    }
    remove(csv);
    remove(tab);
    remove(res);
    rmdir(dir);
    return rc;
}

static unsigned dec_at(const nc__tune_team_t *tt, nc__coll_t c, size_t s)
{
    return nc__tune_lookup(tt, c, s)->ch.decline;
}

static void test_tuner(void)
{
    char out[4096];
    nc__tune_team_t tt;
    /* both loops: 8 declines up to the midpoint with 100 (54), 4096 from
     * the one between 100 and 4096 (2099) on; the rules keep their
     * algorithms */
    CU_ASSERT_EQUAL_FATAL(decline_run("", 4, &tt, out, sizeof out), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "2 given decline=1 for 2 of 4 points"));
    CU_ASSERT_EQUAL(dec_at(&tt, NC_COLL_BCAST, 0), 1u);
    CU_ASSERT_EQUAL(dec_at(&tt, NC_COLL_BCAST, 54), 1u);
    CU_ASSERT_EQUAL(dec_at(&tt, NC_COLL_BCAST, 55), 0u);
    CU_ASSERT_EQUAL(dec_at(&tt, NC_COLL_BCAST, 1023), 0u);
    CU_ASSERT_EQUAL(dec_at(&tt, NC_COLL_BCAST, 2098), 0u);
    CU_ASSERT_EQUAL(dec_at(&tt, NC_COLL_BCAST, 2099), 1u);
    CU_ASSERT_EQUAL(dec_at(&tt, NC_COLL_BCAST, SIZE_MAX), 1u);
    CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BCAST, 54)->ch.alg,
                    NC_ALG_BCAST_INLINE);
    CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BCAST, 2099)->ch.alg,
                    NC_ALG_BCAST_PIPELINED);
    CU_ASSERT_EQUAL(dec_at(&tt, NC_COLL_BARRIER, 0), 0u);
    nc__tune_team_free(&tt);
    /* per run: options, p, a size, whether it declines there */
    static const struct {
        const char *extra;
        unsigned p;
        size_t size;
        unsigned want;
    } runs[] = {
        /* the other team sizes keep their rules */
        {"", 2, 0, 0}, {"", 3, 5000, 0}, {"", 5, 0, 0}, {"", 8, 5000, 0},
        /* either loop: 100 declines too, so every size */
        {"--decline-loop either", 4, 55, 1},
        {"--decline-loop either", 4, 1024, 1},
        /* the b2b loop alone: 8 and 100; 4096 has no b2b row, so 100's
         * range runs on */
        {"--decline-loop b2b", 4, 100, 1}, {"--decline-loop b2b", 4, 5000, 1},
        /* slower by more than 1.6x only: nowhere */
        {"--decline-margin 1.6", 4, 0, 0}, {"--decline-margin 1.6", 4, 5000, 0},
        /* another host, measured at 100 bytes only: every size */
        {"--decline-host sm --decline-loop app", 4, 0, 1},
        {"--decline-host sm --decline-loop app", 4, 5000, 1},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        CU_ASSERT_EQUAL_FATAL(decline_run(runs[i].extra, runs[i].p, &tt, out,
                                          sizeof out), 0);
        if (dec_at(&tt, NC_COLL_BCAST, runs[i].size) != runs[i].want)
            fprintf(stderr, "\n'%s' p=%u size %zu: decline is not %u\n",
                    runs[i].extra, runs[i].p, runs[i].size, runs[i].want);
        CU_ASSERT_EQUAL(dec_at(&tt, NC_COLL_BCAST, runs[i].size),
                        runs[i].want);
        nc__tune_team_free(&tt);
    }
    /* usage errors */
    CU_ASSERT_EQUAL(nct_tuner("--table x.txt", out, sizeof out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "go with --decline-from"));
    CU_ASSERT_EQUAL(nct_tuner("--decline-from x.csv --decline-loop all", out,
                              sizeof out), 2);
    CU_ASSERT_EQUAL(nct_tuner("--decline-from /nonexistent.csv -o /dev/null",
                              out, sizeof out), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "/nonexistent.csv: No such file"));
}

int nct_register_tune_decline(void)
{
    static const nct_test_t tests[] = {
        {"decline= and over=: parse, print, round trip", test_parse_print},
        {"decline= and over=: bad values", test_errors},
        {"over= ranges in the overlap check", test_overlap},
        {"a shape's verdict picks its rules", test_resolve},
        {"numacoll_team_declines; standalone the rules still run",
         test_team},
        {"numacoll-tune --decline-from", test_tuner},
        {NULL, NULL},
    };
    return nct_add_suite("tune_decline", tests);
}
