/*
 * The tuning table (tune/table.c): parse, write and parse again; every kind
 * of malformed input with its exact message; overlaps and unreachable rules;
 * the built-in table; resolution for a team and lookup at every boundary.
 * Fixtures: the .txt files of tests/tune/ (the suites run from the repository root).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nct.h"
#include "numacoll.h"
#include "tune/table.h"

#define Z NC_TUNE_ANY_Z
#define U NC_TUNE_ANY_U

/* Parse text that must be refused with exactly `want` (one message per
 * line, each ending in '\n'); the table is left empty. */
static void expect_errs_at(const char *text, size_t len, const char *want,
                           int line)
{
    nc__tune_table_t t;
    char errs[8192];
    int n = nc__tune_parse(text, len, "t.txt", &t, errs, sizeof errs);
    int lines = 0;
    for (const char *c = want; *c; c++)
        lines += *c == '\n';
    if (strcmp(errs, want) != 0)
        fprintf(stderr, "\ntest_tune.c:%d: messages differ\n--- want\n%s"
                        "--- got\n%s---\n", line, want, errs);
    CU_ASSERT_STRING_EQUAL(errs, want);
    CU_ASSERT_EQUAL(n, lines);
    CU_ASSERT_EQUAL(t.n, 0);
    CU_ASSERT_PTR_NULL(t.rules);
    nc__tune_free(&t);
}
#define EXPECT_ERRS(text, want) expect_errs_at(text, strlen(text), want, __LINE__)

/* Parse text that must be accepted; returns the table. */
static nc__tune_table_t parse_ok_at(const char *text, int line)
{
    nc__tune_table_t t;
    char errs[4096];
    int n = nc__tune_parse(text, strlen(text), "t.txt", &t, errs, sizeof errs);
    if (n)
        fprintf(stderr, "\ntest_tune.c:%d: refused:\n%s", line, errs);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_STRING_EQUAL(errs, "");
    return t;
}
#define PARSE_OK(text) parse_ok_at(text, __LINE__)

static int same_choice(const nc__choice_t *a, const nc__choice_t *b)
{
    return a->alg == b->alg && a->f == b->f && a->s == b->s && a->q == b->q &&
           a->tree == b->tree && a->k == b->k && a->copy == b->copy &&
           a->ku == b->ku && a->relay == b->relay &&
           a->decline == b->decline &&
           memcmp(a->lt, b->lt, sizeof a->lt) == 0;
}

static int same_rule(const nc__tune_rule_t *a, const nc__tune_rule_t *b)
{
    return a->coll == b->coll && a->p_lo == b->p_lo && a->p_hi == b->p_hi &&
           a->size_lo == b->size_lo && a->size_hi == b->size_hi &&
           a->nodes_lo == b->nodes_lo && a->nodes_hi == b->nodes_hi &&
           a->ppn_lo == b->ppn_lo && a->ppn_hi == b->ppn_hi &&
           memcmp(a->lv_lo, b->lv_lo, sizeof a->lv_lo) == 0 &&
           memcmp(a->lv_hi, b->lv_hi, sizeof a->lv_hi) == 0 &&
           memcmp(a->rpd_lo, b->rpd_lo, sizeof a->rpd_lo) == 0 &&
           memcmp(a->rpd_hi, b->rpd_hi, sizeof a->rpd_hi) == 0 &&
           a->over == b->over && same_choice(&a->ch, &b->ch) &&
           a->gain == b->gain;
}

static nc__tune_rule_t rule(nc__coll_t coll, unsigned plo, unsigned phi,
                            size_t zlo, size_t zhi, nc__alg_t alg)
{
    nc__tune_rule_t r;
    memset(&r, 0, sizeof r);
    r.coll = coll;
    r.p_lo = plo;
    r.p_hi = phi;
    r.size_lo = zlo;
    r.size_hi = zhi;
    r.nodes_lo = r.ppn_lo = 1;
    r.nodes_hi = r.ppn_hi = U;
    r.ch.alg = alg;
    r.ch.tree = -1;
    return r;
}

/* A rule's over= as the parser stores it: a bit per verdict it matches,
 * none where the key is absent (it then matches both; docs/tuning.md). */
enum { OV_ANY = 0, OV_0 = 1, OV_1 = 2 };

/* Resolve tab for p ranks on `nodes` NUMA nodes, at most ppn on one, with
 * the oversubscription verdict over (0 or 1). Verdict 0 goes through
 * nc__tune_resolve, which knows no verdict, so that both entry points stay
 * covered. */
static int resolve_over(const nc__tune_table_t *tab, unsigned p,
                        unsigned nodes, unsigned ppn, unsigned over,
                        nc__tune_team_t *tt)
{
    if (!over)
        return nc__tune_resolve(tab, p, nodes, ppn, tt);
    nc__tune_shape_t sh = {.p = p, .nodes = nodes, .ppn = ppn, .over = 1};
    return nc__tune_resolve_shape(tab, &sh, tt);
}

/* ---- the built-in table ------------------------------------------------ */

/* The built-in rule of coll whose p range starts at plo and size range at
 * zlo, with over (OV_*): found by its keys, not its place, so that
 * reordering or splitting other rules of the table leaves the tests
 * alone. Exactly one must exist. */
static const nc__tune_rule_t *builtin_rule(nc__coll_t coll, unsigned plo,
                                           size_t zlo, unsigned over)
{
    const nc__tune_table_t *b = nc__tune_builtin();
    const nc__tune_rule_t *found = NULL;
    int n = 0;
    for (int i = 0; i < b->n; i++) {
        const nc__tune_rule_t *r = &b->rules[i];
        if (r->coll == coll && r->p_lo == plo && r->size_lo == zlo &&
            r->over == over) {
            found = r;
            n++;
        }
    }
    if (n != 1)
        fprintf(stderr, "\ntest_tune.c: %d built-in rules of coll %d at p=%u "
                        "size=%zu over bits %u\n", n, (int)coll, plo, zlo, over);
    CU_ASSERT_EQUAL_FATAL(n, 1);
    return found;
}

/* Every rule of the built-in table (docs/tuning.md), in no particular
 * order: each must match exactly one rule of the table and each rule of the
 * table exactly one of these, so a reordered file needs no change here and
 * a changed, added or dropped rule fails. */
static void test_builtin_rules(void)
{
    const nc__tune_table_t *b = nc__tune_builtin();
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_PTR_EQUAL(nc__tune_builtin(), b);  /* parsed once */
    CU_ASSERT_STRING_EQUAL(b->source, "built-in");
    enum { NRULES = 63 };
    CU_ASSERT_EQUAL_FATAL(b->n, NRULES);
    nc__tune_rule_t want[NRULES];
    int nw = 0;
    /* Bcast, Barrier, Reduce, Allreduce: at p >= 3 an oversubscribed team
     * (over=1) notifies along the flat tree up to 16 KiB, reduces along
     * k = 8 from 113 bytes to 64 KiB and runs allfold from 192 bytes to
     * 4 KiB; at p <= 2 the verdict changes nothing.
     * {coll, p_lo, p_hi, size_lo, size_hi, over, choice} */
#define CH(alg, f, s, q, tree, k, copy) {alg, f, s, q, tree, k, copy, 0, {0}, 0, 0}
    enum { KARY = NUMACOLL_TREE_KARY, FLAT = NUMACOLL_TREE_FLAT };
    enum { KI = 1024, MI = 1024 * 1024 };
    static const struct {
        int coll;
        unsigned plo, phi;
        size_t lo, hi;
        unsigned over;
        nc__choice_t ch;
    } br[] = {
        {NC_COLL_BCAST, 1, 2, 0, 167, OV_ANY,
         CH(NC_ALG_BCAST_INLINE, 0, 0, 0, KARY, 2, NC_COPY_AUTO)},
        {NC_COLL_BCAST, 3, U, 0, 167, OV_0,
         CH(NC_ALG_BCAST_INLINE, 0, 0, 0, KARY, 2, NC_COPY_AUTO)},
        {NC_COLL_BCAST, 3, U, 0, 167, OV_1,
         CH(NC_ALG_BCAST_INLINE, 0, 0, 0, FLAT, 2, NC_COPY_AUTO)},
        /* p <= 2: 2 KiB fragments from 2 KiB, 16 KiB ones from 16 KiB */
        {NC_COLL_BCAST, 1, 2, 168, 2047, OV_ANY,
         CH(NC_ALG_BCAST_PIPELINED, 8 * KI, 64, 2, KARY, 2, NC_COPY_ADAPT)},
        {NC_COLL_BCAST, 1, 2, 2 * KI, 16 * KI - 1, OV_ANY,
         CH(NC_ALG_BCAST_PIPELINED, 2 * KI, 64, 2, KARY, 2, NC_COPY_ADAPT)},
        {NC_COLL_BCAST, 1, 2, 16 * KI, 128 * KI - 1, OV_ANY,
         CH(NC_ALG_BCAST_PIPELINED, 16 * KI, 32, 2, KARY, 2, NC_COPY_ADAPT)},
        {NC_COLL_BCAST, 3, U, 168, 16 * KI - 1, OV_0,
         CH(NC_ALG_BCAST_PIPELINED, 8 * KI, 64, 2, KARY, 2, NC_COPY_ADAPT)},
        {NC_COLL_BCAST, 3, U, 168, 16 * KI - 1, OV_1,
         CH(NC_ALG_BCAST_PIPELINED, 8 * KI, 64, 2, FLAT, 2, NC_COPY_ADAPT)},
        {NC_COLL_BCAST, 3, U, 16 * KI, 128 * KI - 1, OV_ANY,
         CH(NC_ALG_BCAST_PIPELINED, 8 * KI, 64, 2, KARY, 2, NC_COPY_ADAPT)},
        {NC_COLL_BCAST, 1, U, 128 * KI, 4 * MI - 1, OV_ANY,
         CH(NC_ALG_BCAST_PIPELINED, 32 * KI, 16, 2, KARY, 2, NC_COPY_ADAPT)},
        {NC_COLL_BCAST, 1, U, 4 * MI, Z, OV_ANY,
         CH(NC_ALG_BCAST_PIPELINED, 32 * KI, 16, 2, KARY, 2, NC_COPY_NTADAPT)},
        {NC_COLL_BARRIER, 1, U, 0, Z, OV_ANY,
         CH(NC_ALG_BARRIER_DISSEM, 0, 0, 0, -1, 64, NC_COPY_AUTO)},
        /* p <= 2: inline up to 511 bytes */
        {NC_COLL_REDUCE, 1, 2, 0, 511, OV_ANY,
         CH(NC_ALG_REDUCE_INLINE, 128 * KI, 4, 0, -1, 2, NC_COPY_AUTO)},
        {NC_COLL_REDUCE, 1, 2, 512, Z, OV_ANY,
         CH(NC_ALG_REDUCE_PIPELINED, 128 * KI, 4, 0, -1, 2, NC_COPY_ADAPT)},
        {NC_COLL_REDUCE, 3, U, 0, 112, OV_ANY,
         CH(NC_ALG_REDUCE_INLINE, 128 * KI, 4, 0, -1, 2, NC_COPY_AUTO)},
        {NC_COLL_REDUCE, 3, U, 113, 64 * KI - 1, OV_0,
         CH(NC_ALG_REDUCE_PIPELINED, 128 * KI, 4, 0, -1, 2, NC_COPY_ADAPT)},
        {NC_COLL_REDUCE, 3, U, 113, 64 * KI - 1, OV_1,
         CH(NC_ALG_REDUCE_PIPELINED, 128 * KI, 4, 0, -1, 8, NC_COPY_ADAPT)},
        {NC_COLL_REDUCE, 3, U, 64 * KI, Z, OV_ANY,
         CH(NC_ALG_REDUCE_PIPELINED, 128 * KI, 4, 0, -1, 2, NC_COPY_ADAPT)},
        /* p <= 2: inline up to 255 bytes, allfold up to 16 KiB (adapt from
         * 4 KiB), then rsag */
        {NC_COLL_ALLREDUCE, 1, 2, 0, 255, OV_ANY,
         CH(NC_ALG_ALLREDUCE_INLINE, 0, 0, 0, -1, 0, NC_COPY_AUTO)},
        {NC_COLL_ALLREDUCE, 1, 2, 256, 4 * KI - 1, OV_ANY,
         CH(NC_ALG_ALLREDUCE_ALLFOLD, 16 * KI, 4, 0, -1, 0, NC_COPY_AUTO)},
        {NC_COLL_ALLREDUCE, 1, 2, 4 * KI, 16 * KI - 1, OV_ANY,
         CH(NC_ALG_ALLREDUCE_ALLFOLD, 16 * KI, 4, 0, -1, 0, NC_COPY_ADAPT)},
        {NC_COLL_ALLREDUCE, 1, 2, 16 * KI, 512 * KI - 1, OV_ANY,
         CH(NC_ALG_ALLREDUCE_RSAG, 128 * KI, 4, 0, -1, 0, NC_COPY_ADAPT)},
        {NC_COLL_ALLREDUCE, 3, U, 0, 191, OV_ANY,
         CH(NC_ALG_ALLREDUCE_INLINE, 0, 0, 0, -1, 0, NC_COPY_AUTO)},
        {NC_COLL_ALLREDUCE, 3, U, 192, 4 * KI - 1, OV_0,
         CH(NC_ALG_ALLREDUCE_RSAG, 128 * KI, 4, 0, -1, 0, NC_COPY_ADAPT)},
        {NC_COLL_ALLREDUCE, 3, U, 192, 4 * KI - 1, OV_1,
         CH(NC_ALG_ALLREDUCE_ALLFOLD, 16 * KI, 4, 0, -1, 0, NC_COPY_AUTO)},
        {NC_COLL_ALLREDUCE, 3, U, 4 * KI, 512 * KI - 1, OV_ANY,
         CH(NC_ALG_ALLREDUCE_RSAG, 128 * KI, 4, 0, -1, 0, NC_COPY_ADAPT)},
        {NC_COLL_ALLREDUCE, 1, U, 512 * KI, Z, OV_ANY,
         CH(NC_ALG_ALLREDUCE_RSAG, 128 * KI, 4, 0, -1, 0, NC_COPY_ADAPT)}};
#undef CH
    for (size_t i = 0; i < sizeof br / sizeof br[0]; i++) {
        want[nw] = rule((nc__coll_t)br[i].coll, br[i].plo, br[i].phi,
                        br[i].lo, br[i].hi, br[i].ch.alg);
        want[nw].over = br[i].over;
        want[nw++].ch = br[i].ch;
    }
    /* The gathers, Reduce_scatter, Scan and Exscan: inline for small
     * blocks (by p), staged in the Reduce's slots (its f and s), single
     * copy for large blocks of the gathers (f: one system call's bytes).
     * {coll, p_lo, p_hi, size_lo, size_hi, alg, f} */
    enum { M = 1048576, S = 131072 };
    static const struct {
        int coll;
        unsigned plo, phi;
        size_t lo, hi;
        int alg;
        size_t f;
    } ga[] = {
        {NC_COLL_ALLGATHER, 1, 2, 0, 256, NC_ALG_ALLGATHER_INLINE, 0},
        {NC_COLL_ALLGATHER, 3, U, 0, 64, NC_ALG_ALLGATHER_INLINE, 0},
        {NC_COLL_GATHER, 1, 2, 0, 256, NC_ALG_GATHER_INLINE, 0},
        {NC_COLL_GATHER, 3, 8, 0, 64, NC_ALG_GATHER_INLINE, 0},
        {NC_COLL_SCATTER, 1, 3, 0, 256, NC_ALG_SCATTER_INLINE, 0},
        {NC_COLL_ALLTOALL, 1, 3, 0, 256, NC_ALG_ALLTOALL_INLINE, 0},
        {NC_COLL_REDUCE_SCATTER, 1, 2, 0, 256, NC_ALG_REDUCE_SCATTER_INLINE, 0},
        {NC_COLL_REDUCE_SCATTER, 3, 8, 0, 64, NC_ALG_REDUCE_SCATTER_INLINE, 0},
        {NC_COLL_SCAN, 1, 2, 0, 255, NC_ALG_SCAN_INLINE, 0},
        {NC_COLL_SCAN, 3, U, 0, 64, NC_ALG_SCAN_INLINE, 0},
        {NC_COLL_EXSCAN, 1, 2, 0, 255, NC_ALG_EXSCAN_INLINE, 0},
        {NC_COLL_EXSCAN, 3, U, 0, 64, NC_ALG_EXSCAN_INLINE, 0},
        {NC_COLL_ALLGATHER, 1, 2, 257, 65535, NC_ALG_ALLGATHER_STAGED, S},
        {NC_COLL_ALLGATHER, 3, U, 65, 65535, NC_ALG_ALLGATHER_STAGED, S},
        {NC_COLL_ALLGATHER, 1, U, 65536, Z, NC_ALG_ALLGATHER_CMA, M},
        {NC_COLL_GATHER, 1, 2, 257, 32767, NC_ALG_GATHER_STAGED, S},
        {NC_COLL_GATHER, 3, 8, 65, 32767, NC_ALG_GATHER_STAGED, S},
        {NC_COLL_GATHER, 9, U, 0, 32767, NC_ALG_GATHER_STAGED, S},
        {NC_COLL_GATHER, 1, U, 32768, Z, NC_ALG_GATHER_CMA, M},
        {NC_COLL_SCATTER, 4, 8, 0, 104, NC_ALG_SCATTER_INLINE, 0},
        {NC_COLL_SCATTER, 1, 3, 257, 32767, NC_ALG_SCATTER_STAGED, S},
        {NC_COLL_SCATTER, 4, 8, 105, 32767, NC_ALG_SCATTER_STAGED, S},
        {NC_COLL_SCATTER, 9, U, 0, 32767, NC_ALG_SCATTER_STAGED, S},
        {NC_COLL_SCATTER, 1, U, 32768, Z, NC_ALG_SCATTER_CMA, M},
        {NC_COLL_ALLTOALL, 4, 8, 0, 104, NC_ALG_ALLTOALL_INLINE, 0},
        {NC_COLL_ALLTOALL, 1, 3, 257, 32767, NC_ALG_ALLTOALL_STAGED, S},
        {NC_COLL_ALLTOALL, 4, 8, 105, 32767, NC_ALG_ALLTOALL_STAGED, S},
        {NC_COLL_ALLTOALL, 9, U, 0, 32767, NC_ALG_ALLTOALL_STAGED, S},
        {NC_COLL_ALLTOALL, 1, U, 32768, Z, NC_ALG_ALLTOALL_CMA, M},
        {NC_COLL_REDUCE_SCATTER, 1, 2, 257, Z, NC_ALG_REDUCE_SCATTER_STAGED, S},
        {NC_COLL_REDUCE_SCATTER, 3, 8, 65, Z, NC_ALG_REDUCE_SCATTER_STAGED, S},
        {NC_COLL_REDUCE_SCATTER, 9, U, 0, Z, NC_ALG_REDUCE_SCATTER_STAGED, S},
        {NC_COLL_SCAN, 1, 2, 256, Z, NC_ALG_SCAN_STAGED, S},
        {NC_COLL_SCAN, 3, U, 65, Z, NC_ALG_SCAN_STAGED, S},
        {NC_COLL_EXSCAN, 1, 2, 256, Z, NC_ALG_EXSCAN_STAGED, S},
        {NC_COLL_EXSCAN, 3, U, 65, Z, NC_ALG_EXSCAN_STAGED, S}};
    for (size_t g = 0; g < sizeof ga / sizeof ga[0]; g++) {
        want[nw] = rule((nc__coll_t)ga[g].coll, ga[g].plo, ga[g].phi,
                        ga[g].lo, ga[g].hi, (nc__alg_t)ga[g].alg);
        /* adapt's stores, staged in the slots and where single copy
         * falls back to staged */
        if (ga[g].f)
            want[nw].ch = (nc__choice_t){(nc__alg_t)ga[g].alg, ga[g].f, 4,
                                         0, -1, 0, NC_COPY_ADAPT, 0, {0},
                                         0, 0};
        nw++;
    }
    CU_ASSERT_EQUAL_FATAL(nw, NRULES);

    int hits[NRULES] = {0};
    char text[256];
    for (int w = 0; w < nw; w++) {
        int found = 0;
        for (int i = 0; i < b->n; i++)
            if (same_rule(&b->rules[i], &want[w])) {
                found++;
                hits[i]++;
            }
        if (found != 1) {
            nc__tune_format_rule(&want[w], text, sizeof text);
            fprintf(stderr, "\ntest_tune.c: %d built-in rules are '%s'\n",
                    found, text);
        }
        CU_ASSERT_EQUAL(found, 1);
    }
    for (int i = 0; i < b->n; i++) {
        if (hits[i] != 1) {
            nc__tune_format_rule(&b->rules[i], text, sizeof text);
            fprintf(stderr, "\ntest_tune.c: built-in line %d '%s' is expected "
                            "%d times\n", b->rules[i].line, text, hits[i]);
        }
        CU_ASSERT_EQUAL(hits[i], 1);
        CU_ASSERT(b->rules[i].line > 0);
    }
}

/* Entries of every collective sorted, contiguous, from 0 to SIZE_MAX. */
static void check_covers(const nc__tune_team_t *tt)
{
    for (int c = 0; c < NC_COLL_COUNT; c++) {
        CU_ASSERT_FATAL(tt->n[c] >= 1);
        CU_ASSERT_EQUAL(tt->e[c][0].lo, 0);
        CU_ASSERT_EQUAL(tt->e[c][tt->n[c] - 1].hi, SIZE_MAX);
        for (int i = 0; i < tt->n[c]; i++) {
            CU_ASSERT(tt->e[c][i].lo <= tt->e[c][i].hi);
            CU_ASSERT_EQUAL(nc__algs[tt->e[c][i].ch.alg].coll, (nc__coll_t)c);
            if (i)
                CU_ASSERT_EQUAL(tt->e[c][i].lo, tt->e[c][i - 1].hi + 1);
        }
    }
}

/* Both verdicts: the over=0 and over=1 rules must each cover what the
 * rules they split did. */
static void test_builtin_covers(void)
{
    static const unsigned ps[] = {1, 2, 3, 64};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        unsigned p = ps[i];
        /* one node, and (p > 1) two nodes sharing the ranks */
        for (unsigned nodes = 1; nodes <= (p > 1 ? 2u : 1u); nodes++)
            for (unsigned over = 0; over <= 1; over++) {
                nc__tune_team_t tt;
                CU_ASSERT_EQUAL_FATAL(
                    resolve_over(NULL, p, nodes, (p + nodes - 1) / nodes,
                                 over, &tt), 0);
                check_covers(&tt);
                for (int c = 0; c < NC_COLL_COUNT; c++)
                    for (int j = 0; j < tt.n[c]; j++)
                        CU_ASSERT_EQUAL(tt.e[c][j].builtin, 1);
                nc__tune_team_free(&tt);
            }
    }
}

/* lookup(coll, n) runs alg, from a built-in rule or not. */
static void expect_at(const nc__tune_team_t *tt, nc__coll_t coll, size_t n,
                      nc__alg_t alg, int builtin, int line)
{
    const nc__tune_entry_t *e = nc__tune_lookup(tt, coll, n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    if (e->ch.alg != alg || e->builtin != builtin)
        fprintf(stderr, "\ntest_tune.c:%d: size %zu: alg %d builtin %d\n",
                line, n, (int)e->ch.alg, e->builtin);
    CU_ASSERT_EQUAL(e->ch.alg, alg);
    CU_ASSERT_EQUAL(e->builtin, builtin);
    CU_ASSERT(e->lo <= n && n <= e->hi);
}
#define AT(tt, coll, n, alg, b) expect_at(tt, NC_COLL_##coll, n, alg, b, __LINE__)

/* One entry a team resolves to: sizes lo..hi, either from line tline of
 * the team's own table, or (tline 0) from the built-in rule that
 * builtin_rule(coll, plo, zlo, over) finds. */
typedef struct {
    size_t lo, hi;
    unsigned plo;
    size_t zlo;
    unsigned over;
    int tline;
} span_t;

/* The entries of coll are exactly sp[0..n), each with its origin, line
 * and (built-in) its rule's whole choice; a lookup at either end of each
 * finds it, one size beyond finds its neighbour. */
static void expect_spans_at(const nc__tune_team_t *tt, nc__coll_t coll,
                            const span_t *sp, int n, int line)
{
    if (tt->n[coll] != n)
        fprintf(stderr, "\ntest_tune.c:%d: coll %d: %d entries\n", line,
                (int)coll, tt->n[coll]);
    CU_ASSERT_EQUAL_FATAL(tt->n[coll], n);
    for (int i = 0; i < n; i++) {
        const nc__tune_entry_t *e = &tt->e[coll][i];
        int ok = e->lo == sp[i].lo && e->hi == sp[i].hi;
        if (sp[i].tline) {
            ok = ok && !e->builtin && e->line == sp[i].tline;
        } else {
            const nc__tune_rule_t *r =
                builtin_rule(coll, sp[i].plo, sp[i].zlo, sp[i].over);
            ok = ok && e->builtin && e->line == r->line &&
                 same_choice(&e->ch, &r->ch);
        }
        if (!ok)
            fprintf(stderr, "\ntest_tune.c:%d: coll %d entry %d: %zu-%zu "
                            "builtin %d line %d\n", line, (int)coll, i, e->lo,
                    e->hi, e->builtin, e->line);
        CU_ASSERT(ok);
        CU_ASSERT_PTR_EQUAL(nc__tune_lookup(tt, coll, e->lo), e);
        CU_ASSERT_PTR_EQUAL(nc__tune_lookup(tt, coll, e->hi), e);
        if (e->lo > 0)
            CU_ASSERT_PTR_EQUAL(nc__tune_lookup(tt, coll, e->lo - 1), e - 1);
        if (e->hi < SIZE_MAX)
            CU_ASSERT_PTR_EQUAL(nc__tune_lookup(tt, coll, e->hi + 1), e + 1);
    }
}
#define SPANS(tt, coll, sp)                                                    \
    expect_spans_at(tt, NC_COLL_##coll, sp, (int)(sizeof sp / sizeof sp[0]),  \
                    __LINE__)

static void test_builtin_lookup(void)
{
    enum { KI = 1024, MI = 1024 * 1024 };
    for (unsigned over = 0; over <= 1; over++) {
        /* the rules p >= 3 splits by the verdict */
        unsigned ov = over ? OV_1 : OV_0;
        const span_t bcast3[] = {
            {0, 167, 3, 0, ov, 0},
            {168, 16 * KI - 1, 3, 168, ov, 0},
            {16 * KI, 128 * KI - 1, 3, 16 * KI, OV_ANY, 0},
            {128 * KI, 4 * MI - 1, 1, 128 * KI, OV_ANY, 0},
            {4 * MI, Z, 1, 4 * MI, OV_ANY, 0}};
        const span_t reduce3[] = {
            {0, 112, 3, 0, OV_ANY, 0},
            {113, 64 * KI - 1, 3, 113, ov, 0},
            {64 * KI, Z, 3, 64 * KI, OV_ANY, 0}};
        const span_t allreduce3[] = {
            {0, 191, 3, 0, OV_ANY, 0},
            {192, 4 * KI - 1, 3, 192, ov, 0},
            {4 * KI, 512 * KI - 1, 3, 4 * KI, OV_ANY, 0},
            {512 * KI, Z, 1, 512 * KI, OV_ANY, 0}};
        /* p <= 2: the same rules under either verdict */
        static const span_t bcast2[] = {
            {0, 167, 1, 0, OV_ANY, 0},
            {168, 2 * KI - 1, 1, 168, OV_ANY, 0},
            {2 * KI, 16 * KI - 1, 1, 2 * KI, OV_ANY, 0},
            {16 * KI, 128 * KI - 1, 1, 16 * KI, OV_ANY, 0},
            {128 * KI, 4 * MI - 1, 1, 128 * KI, OV_ANY, 0},
            {4 * MI, Z, 1, 4 * MI, OV_ANY, 0}};
        static const span_t reduce2[] = {{0, 511, 1, 0, OV_ANY, 0},
                                         {512, Z, 1, 512, OV_ANY, 0}};
        static const span_t allreduce2[] = {
            {0, 255, 1, 0, OV_ANY, 0},
            {256, 4 * KI - 1, 1, 256, OV_ANY, 0},
            {4 * KI, 16 * KI - 1, 1, 4 * KI, OV_ANY, 0},
            {16 * KI, 512 * KI - 1, 1, 16 * KI, OV_ANY, 0},
            {512 * KI, Z, 1, 512 * KI, OV_ANY, 0}};
        static const span_t barrier[] = {{0, Z, 1, 0, OV_ANY, 0}};
        static const unsigned ps[] = {1, 2, 3, 4, 64};
        for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
            nc__tune_team_t tt;
            CU_ASSERT_EQUAL_FATAL(resolve_over(nc__tune_builtin(), ps[i], 1,
                                               ps[i], over, &tt), 0);
            if (ps[i] >= 3) {
                SPANS(&tt, BCAST, bcast3);
                SPANS(&tt, REDUCE, reduce3);
                SPANS(&tt, ALLREDUCE, allreduce3);
            } else {
                SPANS(&tt, BCAST, bcast2);
                SPANS(&tt, REDUCE, reduce2);
                SPANS(&tt, ALLREDUCE, allreduce2);
            }
            SPANS(&tt, BARRIER, barrier);
            nc__tune_team_free(&tt);
        }

        /* what the verdict changes at p = 4, spelled out */
        nc__tune_team_t tt;
        CU_ASSERT_EQUAL_FATAL(
            resolve_over(nc__tune_builtin(), 4, 1, 4, over, &tt), 0);
        int tree = over ? NUMACOLL_TREE_FLAT : NUMACOLL_TREE_KARY;
        AT(&tt, BCAST, 167, NC_ALG_BCAST_INLINE, 1);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BCAST, 167)->ch.tree, tree);
        AT(&tt, BCAST, 168, NC_ALG_BCAST_PIPELINED, 1);
        const nc__tune_entry_t *e = nc__tune_lookup(&tt, NC_COLL_BCAST, 5000);
        CU_ASSERT_EQUAL(e->ch.f, 8192);
        CU_ASSERT_EQUAL(e->ch.s, 64);
        CU_ASSERT_EQUAL(e->ch.q, 2);
        CU_ASSERT_EQUAL(e->ch.tree, tree);
        CU_ASSERT_EQUAL(e->ch.k, 2);
        CU_ASSERT_EQUAL(e->line, builtin_rule(NC_COLL_BCAST, 3, 168, ov)->line);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BCAST, 16 * KI)->ch.tree,
                        NUMACOLL_TREE_KARY);
        AT(&tt, REDUCE, 112, NC_ALG_REDUCE_INLINE, 1);
        AT(&tt, REDUCE, 113, NC_ALG_REDUCE_PIPELINED, 1);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_REDUCE, 64 * KI - 1)->ch.k,
                        over ? 8u : 2u);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_REDUCE, 64 * KI)->ch.k, 2);
        AT(&tt, ALLREDUCE, 191, NC_ALG_ALLREDUCE_INLINE, 1);
        AT(&tt, ALLREDUCE, 192, over ? NC_ALG_ALLREDUCE_ALLFOLD
                                     : NC_ALG_ALLREDUCE_RSAG, 1);
        AT(&tt, ALLREDUCE, 4095, over ? NC_ALG_ALLREDUCE_ALLFOLD
                                      : NC_ALG_ALLREDUCE_RSAG, 1);
        AT(&tt, ALLREDUCE, 4096, NC_ALG_ALLREDUCE_RSAG, 1);
        AT(&tt, ALLREDUCE, SIZE_MAX, NC_ALG_ALLREDUCE_RSAG, 1);
        nc__tune_team_free(&tt);
    }

    /* p <= 2: Bcast's 16 KiB fragments from 16 KiB to 128 KiB */
    nc__tune_team_t tt;
    CU_ASSERT_EQUAL_FATAL(nc__tune_resolve(nc__tune_builtin(), 2, 1, 2, &tt), 0);
    CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BCAST, 16384)->ch.f, 16384);
    CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BCAST, 16384)->ch.s, 32);
    CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BCAST, 16383)->ch.f, 2048);
    CU_ASSERT_PTR_NULL(nc__tune_lookup(&tt, NC_COLL_COUNT, 0));
    CU_ASSERT_PTR_NULL(nc__tune_lookup(NULL, NC_COLL_BCAST, 0));
    nc__tune_team_free(&tt);
    CU_ASSERT_EQUAL(tt.n[NC_COLL_BCAST], 0);
    nc__tune_team_free(&tt);  /* twice is harmless */
}

/* ---- writing and reading back ------------------------------------------ */

static char *write_table(const nc__tune_table_t *t, const char *header)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(nc__tune_write(t, header, f), 0);
    fclose(f);
    return text;
}

static void test_round_trip(void)
{
    nc__tune_table_t t = {0};
    nc__tune_rule_t r = rule(NC_COLL_BCAST, 2, 2, 0, 56, NC_ALG_BCAST_INLINE);
    r.ch.tree = NUMACOLL_TREE_NUMA;
    r.ch.k = 64;
    r.nodes_lo = 2;
    r.nodes_hi = 2;
    r.gain = 1.25;
    CU_ASSERT_EQUAL(nc__tune_add(&t, &r), 0);
    r = rule(NC_COLL_BCAST, 3, U, 1000, (size_t)3 << 30, NC_ALG_BCAST_PIPELINED);
    r.ch = (nc__choice_t){NC_ALG_BCAST_PIPELINED, 1 << 20, 65536, 65536,
                          NUMACOLL_TREE_CHAIN, 2, NC_COPY_AUTO, 0, {0}, 0, 0};
    r.ppn_lo = 2;
    r.ppn_hi = 7;
    CU_ASSERT_EQUAL(nc__tune_add(&t, &r), 0);
    r = rule(NC_COLL_BCAST, 3, U, ((size_t)3 << 30) + 1, Z,
             NC_ALG_BCAST_PIPELINED);
    r.ch = (nc__choice_t){NC_ALG_BCAST_PIPELINED, 192, 3, 3,
                          NUMACOLL_TREE_FLAT, 5, NC_COPY_AUTO, 0, {0}, 0, 0};
    r.gain = 0.00123;
    CU_ASSERT_EQUAL(nc__tune_add(&t, &r), 0);
    r = rule(NC_COLL_BARRIER, U, U, 0, 0, NC_ALG_BARRIER_TREE);
    r.ch.k = 2;
    r.gain = 12300;
    CU_ASSERT_EQUAL(nc__tune_add(&t, &r), 0);
    r = rule(NC_COLL_REDUCE, 1, 1, SIZE_MAX, SIZE_MAX, NC_ALG_REDUCE_PIPELINED);
    r.ch = (nc__choice_t){NC_ALG_REDUCE_PIPELINED, 16 << 20, 1, 0, -1, 3, NC_COPY_AUTO, 0, {0}, 0, 0};
    CU_ASSERT_EQUAL(nc__tune_add(&t, &r), 0);
    r = rule(NC_COLL_ALLREDUCE, 5, 9, 0, 56, NC_ALG_ALLREDUCE_INLINE);
    r.nodes_lo = 1;
    r.nodes_hi = 3;
    r.ppn_lo = 3;
    r.ppn_hi = U;
    CU_ASSERT_EQUAL(nc__tune_add(&t, &r), 0);
    r = rule(NC_COLL_ALLREDUCE, 5, 9, 57, 1 << 20, NC_ALG_ALLREDUCE_REDUCE_BCAST);
    r.ch = (nc__choice_t){NC_ALG_ALLREDUCE_REDUCE_BCAST, 64, 65536, 0, -1, 64, NC_COPY_AUTO, 0, {0}, 0, 0};
    CU_ASSERT_EQUAL(nc__tune_add(&t, &r), 0);
    r = rule(NC_COLL_ALLREDUCE, 5, 9, (1 << 20) + 1, Z, NC_ALG_ALLREDUCE_RSAG);
    r.ch = (nc__choice_t){NC_ALG_ALLREDUCE_RSAG, 1 << 10, 7, 0, -1, 0, NC_COPY_AUTO, 0, {0}, 0, 0};
    CU_ASSERT_EQUAL(nc__tune_add(&t, &r), 0);
    /* the collectives numacoll-tune tunes from the algorithm table, as it
     * writes them: inline, staged with f, s, a copy variant and a gain */
    r = rule(NC_COLL_ALLGATHER, 2, 3, 0, 2048, NC_ALG_ALLGATHER_INLINE);
    r.gain = 1.5;
    CU_ASSERT_EQUAL(nc__tune_add(&t, &r), 0);
    static const nc__alg_t staged[] = {
        NC_ALG_ALLGATHER_STAGED, NC_ALG_GATHER_STAGED, NC_ALG_SCATTER_STAGED,
        NC_ALG_ALLTOALL_STAGED, NC_ALG_REDUCE_SCATTER_STAGED,
        NC_ALG_SCAN_STAGED, NC_ALG_EXSCAN_STAGED};
    for (size_t i = 0; i < sizeof staged / sizeof staged[0]; i++) {
        r = rule(nc__algs[staged[i]].coll, 2, 3, 2049, Z, staged[i]);
        r.ch.f = (size_t)16 << (10 + i % 3);
        r.ch.s = 2u << (i % 3);
        r.ch.copy = i % 2 ? NC_COPY_LIBC : NC_COPY_AUTO;
        r.gain = 1 + 0.25 * (double)i;
        CU_ASSERT_EQUAL(nc__tune_add(&t, &r), 0);
    }

    char *text = write_table(&t, "made by test_tune.c\n\nsecond paragraph");
    nc__tune_table_t u;
    char errs[4096];
    int n = nc__tune_parse(text, strlen(text), "written", &u, errs, sizeof errs);
    if (n)
        fprintf(stderr, "\n%s%s", text, errs);
    CU_ASSERT_EQUAL_FATAL(n, 0);
    CU_ASSERT_EQUAL_FATAL(u.n, t.n);
    for (int i = 0; i < t.n; i++) {
        CU_ASSERT(same_rule(&t.rules[i], &u.rules[i]));
        CU_ASSERT_EQUAL(u.rules[i].line, i + 4);  /* after 3 header lines */
    }
    CU_ASSERT_EQUAL(strncmp(text, "# made by test_tune.c\n#\n# second paragraph\n",
                            43), 0);
    /* written again: the same text */
    char *again = write_table(&u, "made by test_tune.c\n\nsecond paragraph");
    CU_ASSERT_STRING_EQUAL(again, text);
    free(again);
    free(text);
    nc__tune_free(&u);
    nc__tune_free(&t);

    /* the built-in table round-trips too */
    text = write_table(nc__tune_builtin(), NULL);
    n = nc__tune_parse(text, strlen(text), "written", &u, errs, sizeof errs);
    CU_ASSERT_EQUAL_FATAL(n, 0);
    CU_ASSERT_EQUAL_FATAL(u.n, nc__tune_builtin()->n);
    for (int i = 0; i < u.n; i++)
        CU_ASSERT(same_rule(&u.rules[i], &nc__tune_builtin()->rules[i]));
    free(text);
    nc__tune_free(&u);
}

static void test_format(void)
{
    char buf[256];
    int n = nc__tune_format_rule(builtin_rule(NC_COLL_BCAST, 3, 168, OV_0),
                                 buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "bcast      p=3-*  size=168-16383 over=0 "
                                "alg=pipelined f=8K s=64 q=2 tree=kary k=2 "
                                "copy=adapt");
    CU_ASSERT_EQUAL(n, (int)strlen(buf));
    nc__tune_format_rule(builtin_rule(NC_COLL_BCAST, 3, 0, OV_1), buf,
                         sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "bcast      p=3-*  size=0-167    over=1 "
                                "alg=inline tree=flat k=2");
    nc__tune_format_rule(builtin_rule(NC_COLL_REDUCE, 3, 113, OV_1), buf,
                         sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "reduce     p=3-*  size=113-65535 over=1 "
                                "alg=pipelined f=128K s=4 k=8 copy=adapt");
    CU_ASSERT_EQUAL(nc__tune_format_rule(builtin_rule(NC_COLL_ALLREDUCE, 3, 0,
                                                      OV_ANY), buf, sizeof buf),
                    (int)strlen("allreduce  p=3-*  size=0-191    alg=inline"));
    CU_ASSERT_STRING_EQUAL(buf, "allreduce  p=3-*  size=0-191    alg=inline");
    nc__tune_format_rule(builtin_rule(NC_COLL_BARRIER, 1, 0, OV_ANY), buf,
                         sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "barrier    p=1-*  size=*        alg=dissem k=64");
    nc__tune_format_rule(builtin_rule(NC_COLL_BCAST, 1, 128 * 1024, OV_ANY),
                         buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "bcast      p=1-*  size=128K-4194303 alg=pipelined "
                                "f=32K s=16 q=2 tree=kary k=2 copy=adapt");
    nc__tune_format_rule(builtin_rule(NC_COLL_BCAST, 1, 16 * 1024, OV_ANY),
                         buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "bcast      p=1-2  size=16K-131071 alg=pipelined "
                                "f=16K s=32 q=2 tree=kary k=2 copy=adapt");
    nc__tune_format_rule(builtin_rule(NC_COLL_BCAST, 3, 16 * 1024, OV_ANY),
                         buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "bcast      p=3-*  size=16K-131071 alg=pipelined "
                                "f=8K s=64 q=2 tree=kary k=2 copy=adapt");

    nc__tune_rule_t r = rule(NC_COLL_REDUCE, 4, 4, 1536, (size_t)5 << 30,
                             NC_ALG_REDUCE_PIPELINED);
    r.ch = (nc__choice_t){NC_ALG_REDUCE_PIPELINED, 3 << 20, 6, 0, -1, 3, NC_COPY_AUTO, 0, {0}, 0, 0};
    r.nodes_hi = 2;
    r.ppn_lo = 2;
    r.gain = 1.23456;  /* written with 3 significant digits */
    nc__tune_format_rule(&r, buf, sizeof buf);
    CU_ASSERT_STRING_EQUAL(buf, "reduce     p=4    size=1536-5G  nodes=1-2 "
                                "ppn=2-* alg=pipelined f=3M s=6 k=3 gain=1.23");
    /* a short buffer is cut and terminated; the length it needed returned */
    char small[8];
    CU_ASSERT_EQUAL(nc__tune_format_rule(&r, small, sizeof small),
                    (int)strlen(buf));
    CU_ASSERT_STRING_EQUAL(small, "reduce ");
    /* an algorithm of another collective is no rule */
    r.ch.alg = NC_ALG_BCAST_INLINE;
    CU_ASSERT_EQUAL(nc__tune_format_rule(&r, buf, sizeof buf), -1);
}

static void test_syntax(void)
{
    /* comments, blank lines, tabs, '\r', any key order, suffixes, ranges */
    nc__tune_table_t t = PARSE_OK(
        "# header\n"
        "\n"
        "   \t \r\n"
        "\tbcast k=3 tree=knomial q=1 s=1 f=1M alg=pipelined size=1k-2m p=5 # x\r\n"
        "barrier p=* alg=tree k=64#no space before the comment\n"
        "allreduce size=* p=2-3 nodes=2 ppn=1-2 alg=rsag s=65536 f=16M "
        "gain=0.5\n"
        "reduce p=1-* size=0-4G alg=pipelined f=64 s=1 k=2 gain=0");
    CU_ASSERT_EQUAL_FATAL(t.n, 4);
    nc__tune_rule_t w = rule(NC_COLL_BCAST, 5, 5, 1024, 2 << 20,
                             NC_ALG_BCAST_PIPELINED);
    w.ch = (nc__choice_t){NC_ALG_BCAST_PIPELINED, 1 << 20, 1, 1,
                          NUMACOLL_TREE_KNOMIAL, 3, NC_COPY_AUTO, 0, {0}, 0, 0};
    CU_ASSERT(same_rule(&t.rules[0], &w));
    CU_ASSERT_EQUAL(t.rules[0].line, 4);
    w = rule(NC_COLL_BARRIER, 1, U, 0, Z, NC_ALG_BARRIER_TREE);
    w.ch.k = 64;
    CU_ASSERT(same_rule(&t.rules[1], &w));
    w = rule(NC_COLL_ALLREDUCE, 2, 3, 0, Z, NC_ALG_ALLREDUCE_RSAG);
    w.nodes_lo = w.nodes_hi = 2;
    w.ppn_hi = 2;
    w.ch = (nc__choice_t){NC_ALG_ALLREDUCE_RSAG, 16 << 20, 65536, 0, -1, 0, NC_COPY_AUTO, 0, {0}, 0, 0};
    w.gain = 0.5;
    CU_ASSERT(same_rule(&t.rules[2], &w));
    w = rule(NC_COLL_REDUCE, 1, U, 0, (size_t)4 << 30, NC_ALG_REDUCE_PIPELINED);
    w.ch = (nc__choice_t){NC_ALG_REDUCE_PIPELINED, 64, 1, 0, -1, 2, NC_COPY_AUTO, 0, {0}, 0, 0};
    CU_ASSERT(same_rule(&t.rules[3], &w));
    CU_ASSERT_STRING_EQUAL(t.source, "t.txt");
    nc__tune_free(&t);

    /* gains keep 3 significant digits, as the writer prints them */
    t = PARSE_OK("barrier p=1 alg=tree k=2 gain=1.23456\n"
                 "barrier p=2 alg=tree k=2 gain=0.0009996e3\n"
                 "barrier p=3 alg=tree k=2 gain=1e-9\n"
                 "barrier p=4 alg=tree k=2 gain=1e6\n"
                 "barrier p=5 alg=tree k=2 gain=.5\n");
    CU_ASSERT_EQUAL_FATAL(t.n, 5);
    CU_ASSERT_EQUAL(t.rules[0].gain, 1.23);
    CU_ASSERT_EQUAL(t.rules[1].gain, 1.0);
    CU_ASSERT_EQUAL(t.rules[2].gain, 0.0);
    CU_ASSERT_EQUAL(t.rules[3].gain, 1e6);
    CU_ASSERT_EQUAL(t.rules[4].gain, 0.5);
    nc__tune_free(&t);

    /* an empty table, and one of comments only, are fine */
    t = PARSE_OK("");
    CU_ASSERT_EQUAL(t.n, 0);
    nc__tune_free(&t);
    t = PARSE_OK("# nothing\n\n");
    CU_ASSERT_EQUAL(t.n, 0);
    nc__tune_free(&t);
}

/* ---- malformed input --------------------------------------------------- */

#define IN " alg=inline tree=kary k=2" /* the rest of a good bcast inline rule */

static void test_errors_tokens(void)
{
    EXPECT_ERRS("bcst p=1 size=0" IN "\n",
                "t.txt:1:1: expected a collective (bcast, barrier, reduce, "
                "allreduce, allgather, gather, scatter, alltoall, reduce_scatter, "
                "scan or exscan), found 'bcst'\n");
    EXPECT_ERRS("p=1 size=0\n",
                "t.txt:1:1: expected a collective (bcast, barrier, reduce, "
                "allreduce, allgather, gather, scatter, alltoall, reduce_scatter, "
                "scan or exscan), found 'p=1'\n");
    EXPECT_ERRS("bcast p=1 size=0 inline" IN,
                "t.txt:1:18: expected key=value, found 'inline'\n");
    EXPECT_ERRS("bcast p=1 =3 size=0" IN,
                "t.txt:1:11: expected key=value, found '=3'\n");
    EXPECT_ERRS("bcast p=1 size=0 radix=2" IN,
                "t.txt:1:18: expected a key (p, size, nodes, ppn, alg, f, s, "
                "q, tree, k, gain, copy, l1, l1ppd, l2, l2ppd, l3, l3ppd, package, "
                "packageppd, ku, l1tree, l2tree, l3tree, numatree, packagetree, toptree, relay, over or decline), found 'radix'\n");
    EXPECT_ERRS("bcast p=1 size=0 P=1" IN,
                "t.txt:1:18: expected a key (p, size, nodes, ppn, alg, f, s, "
                "q, tree, k, gain, copy, l1, l1ppd, l2, l2ppd, l3, l3ppd, package, "
                "packageppd, ku, l1tree, l2tree, l3tree, numatree, packagetree, toptree, relay, over or decline), found 'P'\n");
    EXPECT_ERRS("bcast p=1 size=0 p=2" IN,
                "t.txt:1:18: expected each key once per rule, found 'p'\n");
    EXPECT_ERRS("bcast p=1 size=0" IN " k=2",
                "t.txt:1:43: expected each key once per rule, found 'k'\n");
    /* a key the algorithm does not take, before or after alg= */
    EXPECT_ERRS("bcast p=1 size=0 f=8K" IN,
                "t.txt:1:18: expected a key of alg=inline (tree, k), found "
                "'f'\n");
    EXPECT_ERRS("allreduce p=1 size=0 alg=inline k=2",
                "t.txt:1:33: expected a key of alg=inline (no parameters), "
                "found 'k'\n");
    EXPECT_ERRS("reduce p=1 size=* alg=pipelined f=8K s=4 k=2 tree=kary",
                "t.txt:1:46: expected a key of alg=pipelined (f, s, k), found "
                "'tree'\n");
    EXPECT_ERRS("allreduce p=1 size=2K alg=rsag f=8K s=4 k=2",
                "t.txt:1:41: expected a key of alg=rsag (f, s), found 'k'\n");
    EXPECT_ERRS("barrier p=1 alg=tree k=2 q=2",
                "t.txt:1:26: expected a key of alg=tree (k), found 'q'\n");
    /* an unknown algorithm, or one of another collective */
    EXPECT_ERRS("bcast p=1 size=0 alg=ring",
                "t.txt:1:22: expected an algorithm of bcast (inline, "
                "pipelined or cma), found 'ring'\n");
    EXPECT_ERRS("allreduce p=1 size=0 alg=tree k=2",
                "t.txt:1:26: expected an algorithm of allreduce (inline, "
                "reduce_bcast, rsag or allfold), found 'tree'\n");
    EXPECT_ERRS("bcast p=1 size=0 alg=",
                "t.txt:1:22: expected an algorithm of bcast (inline, "
                "pipelined or cma), found ''\n");
    EXPECT_ERRS("bcast p=1 size=0" IN " tree=ring",
                "t.txt:1:43: expected each key once per rule, found 'tree'\n");
    EXPECT_ERRS("bcast p=1 size=0 alg=inline tree=ring k=2",
                "t.txt:1:34: expected a tree (flat, chain, kary, knomial or "
                "numa), found 'ring'\n");
    EXPECT_ERRS("bcast p=1 size=0 alg=inline tree=KARY k=2",
                "t.txt:1:34: expected a tree (flat, chain, kary, knomial or "
                "numa), found 'KARY'\n");
}

static void test_errors_missing(void)
{
    /* missing keys: reported just past the last token, comment or not */
    EXPECT_ERRS("bcast size=0" IN,
                "t.txt:1:38: expected p=..., found 'end of line'\n");
    EXPECT_ERRS("bcast p=1" IN "   # no size\n",
                "t.txt:1:35: expected size=..., found 'end of line'\n");
    EXPECT_ERRS("bcast p=1 size=0 tree=kary k=2",
                "t.txt:1:31: expected alg=..., found 'end of line'\n");
    EXPECT_ERRS("bcast p=1 size=0 alg=inline tree=kary",
                "t.txt:1:38: expected k=..., found 'end of line'\n");
    EXPECT_ERRS("bcast p=1 size=57-* alg=pipelined k=2\t\r\n",
                "t.txt:1:38: expected f=..., found 'end of line'\n"
                "t.txt:1:38: expected s=..., found 'end of line'\n"
                "t.txt:1:38: expected q=..., found 'end of line'\n"
                "t.txt:1:38: expected tree=..., found 'end of line'\n");
    EXPECT_ERRS("bcast",
                "t.txt:1:6: expected p=..., found 'end of line'\n"
                "t.txt:1:6: expected size=..., found 'end of line'\n"
                "t.txt:1:6: expected alg=..., found 'end of line'\n");
    EXPECT_ERRS("barrier p=1 alg=tree",
                "t.txt:1:21: expected k=..., found 'end of line'\n");
    /* a key given with a bad value is not missing as well */
    EXPECT_ERRS("bcast p=x size=0" IN,
                "t.txt:1:9: expected a range of ranks (n, lo-hi, lo-* or *), "
                "found 'x'\n");
}

static void test_errors_numbers(void)
{
    EXPECT_ERRS("bcast p=1.5 size=0" IN,
                "t.txt:1:9: expected a range of ranks (n, lo-hi, lo-* or *), "
                "found '1.5'\n");
    EXPECT_ERRS("bcast p=-4 size=0" IN,
                "t.txt:1:9: expected a range of ranks (n, lo-hi, lo-* or *), "
                "found '-4'\n");
    EXPECT_ERRS("bcast p=2- size=0" IN,
                "t.txt:1:9: expected a range of ranks (n, lo-hi, lo-* or *), "
                "found '2-'\n");
    EXPECT_ERRS("bcast p=*-4 size=0" IN,
                "t.txt:1:9: expected a range of ranks (n, lo-hi, lo-* or *), "
                "found '*-4'\n");
    EXPECT_ERRS("bcast p=1-2-3 size=0" IN,
                "t.txt:1:9: expected a range of ranks (n, lo-hi, lo-* or *), "
                "found '1-2-3'\n");
    EXPECT_ERRS("bcast p=2K size=0" IN,
                "t.txt:1:9: expected a range of ranks (n, lo-hi, lo-* or *), "
                "found '2K'\n");
    EXPECT_ERRS("bcast p=1 nodes=a size=0" IN,
                "t.txt:1:17: expected a range of NUMA nodes (n, lo-hi, lo-* "
                "or *), found 'a'\n");
    EXPECT_ERRS("bcast p=1 ppn=1-a size=0" IN,
                "t.txt:1:15: expected a range of ranks per NUMA node (n, "
                "lo-hi, lo-* or *), found '1-a'\n");
    EXPECT_ERRS("bcast p=1 size=8X" IN,
                "t.txt:1:16: expected a range of bytes (n, lo-hi, lo-* or *; "
                "K, M, G suffixes), found '8X'\n");
    EXPECT_ERRS("bcast p=1 size=8KK" IN,
                "t.txt:1:16: expected a range of bytes (n, lo-hi, lo-* or *; "
                "K, M, G suffixes), found '8KK'\n");
    EXPECT_ERRS("bcast p=1 size=0 alg=pipelined f=8.5K s=2 q=2 tree=kary k=2",
                "t.txt:1:34: expected a number of bytes (K, M, G suffixes), "
                "found '8.5K'\n");
    EXPECT_ERRS("bcast p=1 size=0 alg=pipelined f=8K s=2k q=2 tree=kary k=2",
                "t.txt:1:39: expected a number, found '2k'\n");
    EXPECT_ERRS("bcast p=1 size=0 alg=pipelined f=8K s=+2 q=2 tree=kary k=2",
                "t.txt:1:39: expected a number, found '+2'\n");
    /* overflow */
    EXPECT_ERRS("bcast p=4294967296 size=0" IN,
                "t.txt:1:9: expected numbers at most 4294967295, found "
                "'4294967296'\n");
    EXPECT_ERRS("bcast p=1-99999999999999999999999 size=0" IN,
                "t.txt:1:9: expected numbers at most 4294967295, found "
                "'1-99999999999999999999999'\n");
    EXPECT_ERRS("bcast p=1 size=0-18446744073709551616 alg=pipelined f=8K "
                "s=2 q=2 tree=kary k=2",
                "t.txt:1:16: expected sizes at most 18446744073709551615, "
                "found '0-18446744073709551616'\n");
    EXPECT_ERRS("bcast p=1 size=17179869184G alg=pipelined f=8K s=2 q=2 "
                "tree=kary k=2",
                "t.txt:1:16: expected sizes at most 18446744073709551615, "
                "found '17179869184G'\n");
    EXPECT_ERRS("bcast p=1 size=0 alg=pipelined f=8K s=4294967296 q=2 "
                "tree=kary k=2",
                "t.txt:1:39: expected a number at most 4294967295, found "
                "'4294967296'\n");
    /* the largest values are fine */
    nc__tune_table_t t = PARSE_OK("reduce p=4294967295 size=18446744073709551615"
                                  " alg=pipelined f=16M s=65536 k=64\n");
    CU_ASSERT_EQUAL(t.rules[0].p_lo, U);
    CU_ASSERT_EQUAL(t.rules[0].size_lo, SIZE_MAX);
    nc__tune_free(&t);
    /* lo > hi, and lower bounds of 1 */
    EXPECT_ERRS("bcast p=8-4 size=0" IN,
                "t.txt:1:9: expected a range lo-hi with lo <= hi, found "
                "'8-4'\n");
    EXPECT_ERRS("bcast p=1 size=2K-1K alg=pipelined f=8K s=2 q=2 tree=kary k=2",
                "t.txt:1:16: expected a range lo-hi with lo <= hi, found "
                "'2K-1K'\n");
    EXPECT_ERRS("bcast p=0-4 size=0" IN,
                "t.txt:1:9: expected p of at least 1, found '0-4'\n");
    EXPECT_ERRS("bcast p=1 nodes=0 size=0" IN,
                "t.txt:1:17: expected nodes of at least 1, found '0'\n");
    EXPECT_ERRS("bcast p=1 ppn=0-* size=0" IN,
                "t.txt:1:15: expected ppn of at least 1, found '0-*'\n");
    /* the gain */
    EXPECT_ERRS("barrier p=1 alg=tree k=2 gain=-1",
                "t.txt:1:31: expected a gain from 0 to 1000000, found '-1'\n");
    EXPECT_ERRS("barrier p=1 alg=tree k=2 gain=2e6",
                "t.txt:1:31: expected a gain from 0 to 1000000, found '2e6'\n");
    EXPECT_ERRS("barrier p=1 alg=tree k=2 gain=nan",
                "t.txt:1:31: expected a gain from 0 to 1000000, found 'nan'\n");
    EXPECT_ERRS("barrier p=1 alg=tree k=2 gain=1,5",
                "t.txt:1:31: expected a gain from 0 to 1000000, found '1,5'\n");
    EXPECT_ERRS("barrier p=1 alg=tree k=2 gain=1e",
                "t.txt:1:31: expected a gain from 0 to 1000000, found '1e'\n");
}

static void test_errors_ranges(void)
{
    /* each parameter key takes the range of its configuration parameter */
#define BC "bcast p=1 size=57-* alg=pipelined "
    EXPECT_ERRS(BC "f=100 s=2 q=2 tree=kary k=2",
                "t.txt:1:37: expected f a multiple of 64 from 64 to 1048576 "
                "(frag_size), found '100'\n");
    EXPECT_ERRS(BC "f=0 s=2 q=2 tree=kary k=2",
                "t.txt:1:37: expected f a multiple of 64 from 64 to 1048576 "
                "(frag_size), found '0'\n");
    EXPECT_ERRS(BC "f=2M s=2 q=2 tree=kary k=2",
                "t.txt:1:37: expected f a multiple of 64 from 64 to 1048576 "
                "(frag_size), found '2M'\n");
    EXPECT_ERRS(BC "f=8K s=0 q=1 tree=kary k=2",
                "t.txt:1:42: expected s from 1 to 65536 (queue_depth), found "
                "'0'\n");
    EXPECT_ERRS(BC "f=8K s=65537 q=1 tree=kary k=2",
                "t.txt:1:42: expected s from 1 to 65536 (queue_depth), found "
                "'65537'\n");
    EXPECT_ERRS(BC "f=8K s=4 q=0 tree=kary k=2",
                "t.txt:1:46: expected q from 1 to 65536 (banks), found '0'\n");
    EXPECT_ERRS(BC "f=8K s=6 q=4 tree=kary k=2",
                "t.txt:1:42: expected s a multiple of q=4, found '6'\n");
    EXPECT_ERRS(BC "f=8K s=1 q=2 tree=kary k=2",  /* q > s */
                "t.txt:1:42: expected s a multiple of q=2, found '1'\n");
    EXPECT_ERRS(BC "q=4 f=8K s=6 tree=kary k=2",  /* q before s */
                "t.txt:1:46: expected s a multiple of q=4, found '6'\n");
    EXPECT_ERRS(BC "f=8K s=4 q=2 tree=kary k=1",
                "t.txt:1:60: expected k from 2 to 64 (radix), found '1'\n");
    EXPECT_ERRS(BC "f=8K s=4 q=2 tree=kary k=65",
                "t.txt:1:60: expected k from 2 to 64 (radix), found '65'\n");
#undef BC
    EXPECT_ERRS("reduce p=1 size=* alg=pipelined f=32 s=4 k=2",
                "t.txt:1:35: expected f from 64 to 16777216 (reduce_frag_size), "
                "found '32'\n");
    EXPECT_ERRS("reduce p=1 size=* alg=pipelined f=32M s=4 k=2",
                "t.txt:1:35: expected f from 64 to 16777216 (reduce_frag_size), "
                "found '32M'\n");
    EXPECT_ERRS("reduce p=1 size=* alg=pipelined f=128K s=65537 k=2",
                "t.txt:1:42: expected s from 1 to 65536 (reduce_depth), found "
                "'65537'\n");
    EXPECT_ERRS("allreduce p=1 size=57-1023 alg=reduce_bcast f=128K s=4 k=1",
                "t.txt:1:58: expected k from 2 to 64 (reduce_radix), found "
                "'1'\n");
    EXPECT_ERRS("barrier p=1 alg=tree k=65",
                "t.txt:1:24: expected k from 2 to 64 (barrier_radix), found "
                "'65'\n");
    /* the largest size an algorithm carries */
    EXPECT_ERRS("bcast p=1 size=0-8193" IN,
                "t.txt:1:16: expected size at most 8192 (inline carries at "
                "most 8192 bytes), found '0-8193'\n");
    EXPECT_ERRS("allreduce p=1 size=* alg=inline",
                "t.txt:1:20: expected size at most 8192 (inline carries at "
                "most 8192 bytes), found '*'\n");
}

static void test_errors_lines(void)
{
    /* several problems on one line, in column order, and on several lines */
    EXPECT_ERRS("# two bad lines and a good one\n"
                "bcast p=0 size=x alg=pipelined f=8K s=3 q=2 tree=oak k=2 z=1\n"
                "bcast p=1 size=0" IN "\n"
                "barrier p=1 alg=tree k=1\n",
                "t.txt:2:9: expected p of at least 1, found '0'\n"
                "t.txt:2:16: expected a range of bytes (n, lo-hi, lo-* or *; "
                "K, M, G suffixes), found 'x'\n"
                "t.txt:2:39: expected s a multiple of q=2, found '3'\n"
                "t.txt:2:50: expected a tree (flat, chain, kary, knomial or "
                "numa), found 'oak'\n"
                "t.txt:2:58: expected a key (p, size, nodes, ppn, alg, f, s, "
                "q, tree, k, gain, copy, l1, l1ppd, l2, l2ppd, l3, l3ppd, package, "
                "packageppd, ku, l1tree, l2tree, l3tree, numatree, packagetree, toptree, relay, over or decline), found 'z'\n"
                "t.txt:4:24: expected k from 2 to 64 (barrier_radix), found "
                "'1'\n");

    /* a line longer than 1024 bytes */
    char line[1200];
    memset(line, ' ', sizeof line);
    memcpy(line, "barrier p=1 alg=tree k=2", 24);
    memcpy(line + 1024, "# comment, but too late", 23);
    line[sizeof line - 1] = '\0';
    EXPECT_ERRS(line, "t.txt:1:1025: expected at most 1024 bytes on a line, "
                      "found '# comment, but too late         ...'\n");
    line[1024] = '\0';  /* exactly 1024 bytes is fine */
    nc__tune_table_t t = PARSE_OK(line);
    CU_ASSERT_EQUAL(t.n, 1);
    nc__tune_free(&t);

    /* a NUL byte, and other bytes quoted as \xNN */
    static const char nul[] = "barrier p=1 alg=tree k=2\nbarrier p=2 alg=t\0ree k=2\n";
    expect_errs_at(nul, sizeof nul - 1,
                   "t.txt:2:18: expected text without NUL bytes, found "
                   "'\\x00'\n", __LINE__);
    EXPECT_ERRS("barrier p=1 alg=tr\xc3\xa9\x01 k=2",
                "t.txt:1:17: expected an algorithm of barrier (tree or dissem), "
                "found "
                "'tr\\xc3\\xa9\\x01'\n");
    EXPECT_ERRS("bcast\vp=1",  /* only space, tab and '\r' separate */
                "t.txt:1:1: expected a collective (bcast, barrier, reduce, "
                "allreduce, allgather, gather, scatter, alltoall, reduce_scatter, "
                "scan or exscan), found 'bcast\\x0bp=1'\n");

    /* more than NC_TUNE_MAX_RULES rules: said once, at the first one over */
    size_t cap = (NC_TUNE_MAX_RULES + 2) * 40;
    char *big = malloc(cap), *o = big;
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    for (int i = 1; i <= NC_TUNE_MAX_RULES + 2; i++)
        o += sprintf(o, "barrier p=%d alg=tree k=2\n", i);
    char want[128];
    snprintf(want, sizeof want,
             "t.txt:%d:1: expected at most %d rules, found 'barrier'\n",
             NC_TUNE_MAX_RULES + 1, NC_TUNE_MAX_RULES);
    EXPECT_ERRS(big, want);
    /* exactly NC_TUNE_MAX_RULES is fine */
    big[strlen(big) - 2 * strlen("barrier p=4097 alg=tree k=2\n")] = '\0';
    t = PARSE_OK(big);
    CU_ASSERT_EQUAL(t.n, NC_TUNE_MAX_RULES);
    nc__tune_free(&t);
    free(big);
}

static void test_overlap_unreachable(void)
{
    EXPECT_ERRS("bcast p=2-4  size=0-56 alg=inline tree=kary k=2\n"
                "bcast p=4-8  size=32   alg=inline tree=flat k=2\n"
                "bcast p=5-8  size=56   alg=inline tree=flat k=2 # apart: size\n"
                "bcast p=9-*  size=0-56 nodes=2-3 alg=inline tree=flat k=2\n"
                "bcast p=9-*  size=0-56 nodes=3-4 ppn=2-3 alg=inline tree=flat k=2\n"
                "bcast p=9-*  size=0-56 nodes=1 alg=inline tree=flat k=2\n"
                "barrier p=1-* alg=tree k=2\n"
                "reduce p=1-* size=* alg=pipelined f=64 s=1 k=2\n",
                "t.txt:2: rule overlaps line 1 (bcast p=2-4 size=0-56)\n"
                "t.txt:5: rule overlaps line 4 (bcast p=9-* size=0-56 "
                "nodes=2-3)\n");
    /* touching ranges do not overlap */
    nc__tune_table_t t = PARSE_OK(
        "bcast p=1-4 size=0-56 alg=inline tree=kary k=2\n"
        "bcast p=5-* size=0-56 alg=inline tree=kary k=2\n"
        "bcast p=1-* size=57-1K alg=pipelined f=1K s=1 q=1 tree=kary k=2\n"
        "bcast p=1-* size=1025-* nodes=1 alg=pipelined f=1K s=1 q=1 tree=kary k=2\n"
        "bcast p=1-* size=1025-* nodes=2-* ppn=1-4 alg=pipelined f=1K s=1 q=1 "
        "tree=kary k=2\n"
        "bcast p=1-* size=1025-* nodes=2-* ppn=5-* alg=pipelined f=1K s=1 q=1 "
        "tree=kary k=2\n");
    CU_ASSERT_EQUAL(t.n, 6);
    nc__tune_free(&t);

    EXPECT_ERRS("barrier p=1-* size=1-* alg=tree k=2\n"
                "barrier p=1-* size=0-8 alg=tree k=2\n"
                "reduce p=1-2 nodes=3-* size=* alg=pipelined f=64 s=1 k=2\n"
                "reduce p=1-2 ppn=3 size=* alg=pipelined f=64 s=1 k=2\n"
                "reduce p=3-4 nodes=3 ppn=3 size=* alg=pipelined f=64 s=1 k=2\n"
                "reduce p=8-* nodes=1-2 ppn=1-3 size=* alg=pipelined f=64 s=1 "
                "k=2\n"
                "reduce p=6 nodes=2 ppn=3 size=* alg=pipelined f=64 s=1 k=2\n",
                "t.txt:1: rule is unreachable: barrier looks up size 0 only, "
                "not size=1-*\n"
                "t.txt:3: rule is unreachable: no team of p=1-2 spans "
                "nodes=3-*\n"
                "t.txt:4: rule is unreachable: no team of p=1-2 has ppn=3\n"
                "t.txt:5: rule is unreachable: no team of p=3-4 spans nodes=3 "
                "with ppn=3\n"
                "t.txt:6: rule is unreachable: no team of p=8-* fits "
                "nodes=1-2 with ppn=1-3\n");
}

static void test_rejected_empty(void)
{
    /* good rules before and after a bad one: all dropped */
    const char *text = "barrier p=1 alg=tree k=2\n"
                       "barrier p=2 alg=tree k=1\n"
                       "barrier p=3 alg=tree k=2\n";
    nc__tune_table_t t;
    char errs[256];
    CU_ASSERT_EQUAL(nc__tune_parse(text, strlen(text), "t.txt", &t, errs,
                                   sizeof errs), 1);
    CU_ASSERT_EQUAL(t.n, 0);
    CU_ASSERT_PTR_NULL(t.rules);
    nc__tune_team_t tt;  /* resolving it gives the built-in choices */
    CU_ASSERT_EQUAL_FATAL(nc__tune_resolve(&t, 2, 1, 2, &tt), 0);
    AT(&tt, BARRIER, 0, NC_ALG_BARRIER_DISSEM, 1);
    CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BARRIER, 0)->ch.k, 64);
    nc__tune_team_free(&tt);
    nc__tune_free(&t);

    /* the message buffer is capped: whole lines, then a count */
    char many[64 * 40] = "", *o = many;
    for (int i = 1; i <= 40; i++)
        o += sprintf(o, "barrier p=%d alg=tree k=1\n", i);
    char small[200];
    CU_ASSERT_EQUAL(nc__tune_parse(many, strlen(many), "t.txt", &t, small,
                                   sizeof small), 40);
    CU_ASSERT_STRING_EQUAL(small,
                           "t.txt:1:24: expected k from 2 to 64 (barrier_radix),"
                           " found '1'\n"
                           "t.txt:2:24: expected k from 2 to 64 (barrier_radix),"
                           " found '1'\n"
                           "t.txt: 38 more problems not shown\n");
    CU_ASSERT_EQUAL(t.n, 0);
    char tiny[10];
    CU_ASSERT_EQUAL(nc__tune_parse(many, strlen(many), "t.txt", &t, tiny,
                                   sizeof tiny), 40);
    CU_ASSERT_STRING_EQUAL(tiny, "t.txt: 40");
    CU_ASSERT_EQUAL(nc__tune_parse(many, strlen(many), "t.txt", &t, NULL, 0),
                    40);
    nc__tune_free(&t);
}

/* ---- files ------------------------------------------------------------- */

static void test_load(void)
{
    nc__tune_table_t t;
    char errs[512];
    CU_ASSERT_EQUAL(nc__tune_load("tests/tune/no-such-file.txt", &t, errs,
                                  sizeof errs), 1);
    CU_ASSERT_STRING_EQUAL(errs, "tests/tune/no-such-file.txt: cannot read: "
                                 "No such file or directory\n");
    CU_ASSERT_EQUAL(t.n, 0);
    nc__tune_free(&t);
    CU_ASSERT_EQUAL(nc__tune_load("tests/tune", &t, errs, sizeof errs), 1);
    CU_ASSERT_STRING_EQUAL(errs, "tests/tune: cannot read: it is a "
                                 "directory; a tuning file must be a regular "
                                 "file\n");
    nc__tune_free(&t);

    CU_ASSERT_EQUAL(nc__tune_load("tests/tune/custom.txt", &t, errs,
                                  sizeof errs), 0);
    CU_ASSERT_STRING_EQUAL(errs, "");
    CU_ASSERT_STRING_EQUAL(t.source, "tests/tune/custom.txt");
    CU_ASSERT_EQUAL_FATAL(t.n, 7);
    CU_ASSERT_EQUAL(t.rules[1].gain, 1.25);
    CU_ASSERT_EQUAL(t.rules[1].ch.tree, NUMACOLL_TREE_NUMA);
    CU_ASSERT_EQUAL(t.rules[3].coll, NC_COLL_BARRIER);
    CU_ASSERT_EQUAL(t.rules[3].size_hi, SIZE_MAX);
    CU_ASSERT_EQUAL(t.rules[6].gain, 0.035);
    nc__tune_free(&t);

    CU_ASSERT_EQUAL(nc__tune_load("tests/tune/crlf.txt", &t, errs, sizeof errs),
                    0);
    CU_ASSERT_EQUAL(t.n, 2);
    nc__tune_free(&t);

    CU_ASSERT_EQUAL(nc__tune_load("tests/tune/overlap.txt", &t, errs,
                                  sizeof errs), 3);
    CU_ASSERT_STRING_EQUAL(errs,
                           "tests/tune/overlap.txt:3: rule overlaps line 2 "
                           "(bcast p=2-8 size=0-56)\n"
                           "tests/tune/overlap.txt:4: rule overlaps line 3 "
                           "(bcast p=8-16 size=32-40)\n"
                           "tests/tune/overlap.txt:5: rule overlaps line 3 "
                           "(bcast p=8-16 size=32-40)\n");
    nc__tune_free(&t);

    /* every line of bad-syntax.txt is one problem */
    CU_ASSERT_EQUAL(nc__tune_load("tests/tune/bad-syntax.txt", &t, errs,
                                  sizeof errs), 15);
    CU_ASSERT_EQUAL(t.n, 0);
    nc__tune_free(&t);
}

/* ---- resolution -------------------------------------------------------- */

static void test_resolve_custom(void)
{
    nc__tune_table_t t;
    char errs[512];
    CU_ASSERT_EQUAL_FATAL(nc__tune_load("tests/tune/custom.txt", &t, errs,
                                        sizeof errs), 0);
    enum { KI = 1024, MI = 1024 * 1024 };
    /* The table's rules name no verdict: they apply to both, and only the
     * built-in rules around them follow it. */
    for (unsigned over = 0; over <= 1; over++) {
        unsigned ov = over ? OV_1 : OV_0;
        nc__tune_team_t tt;

        /* p=4 on 2 nodes: the numa Bcast rule for 64 .. 64K, built-in
         * around, the inline rule cut at the table's rule */
        CU_ASSERT_EQUAL_FATAL(resolve_over(&t, 4, 2, 2, over, &tt), 0);
        check_covers(&tt);
        const span_t bcast[] = {
            {0, 63, 3, 0, ov, 0},
            {64, 64 * KI, .tline = 5},
            {64 * KI + 1, 128 * KI - 1, 3, 16 * KI, OV_ANY, 0},
            {128 * KI, 4 * MI - 1, 1, 128 * KI, OV_ANY, 0},
            {4 * MI, Z, 1, 4 * MI, OV_ANY, 0}};
        SPANS(&tt, BCAST, bcast);
        AT(&tt, BCAST, 56, NC_ALG_BCAST_INLINE, 1);
        AT(&tt, BCAST, 63, NC_ALG_BCAST_INLINE, 1);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BCAST, 63)->ch.tree,
                        over ? NUMACOLL_TREE_FLAT : NUMACOLL_TREE_KARY);
        AT(&tt, BCAST, 64, NC_ALG_BCAST_PIPELINED, 0);
        AT(&tt, BCAST, 65536, NC_ALG_BCAST_PIPELINED, 0);
        AT(&tt, BCAST, 65537, NC_ALG_BCAST_PIPELINED, 1);
        AT(&tt, BCAST, SIZE_MAX, NC_ALG_BCAST_PIPELINED, 1);
        const nc__tune_entry_t *e = nc__tune_lookup(&tt, NC_COLL_BCAST, 64);
        CU_ASSERT_EQUAL(e->ch.tree, NUMACOLL_TREE_NUMA);
        CU_ASSERT_EQUAL(e->ch.k, 4);
        /* barrier p=8-* does not apply at p=4: the built-in dissemination */
        AT(&tt, BARRIER, 0, NC_ALG_BARRIER_DISSEM, 1);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BARRIER, 0)->ch.k, 64);
        /* reduce 4K .. 1M (ppn 2 is within 1-8): it hides the built-in
         * split at 64K */
        const span_t reduce[] = {
            {0, 112, 3, 0, OV_ANY, 0},
            {113, 4 * KI - 1, 3, 113, ov, 0},
            {4 * KI, MI, .tline = 8},
            {MI + 1, Z, 3, 64 * KI, OV_ANY, 0}};
        SPANS(&tt, REDUCE, reduce);
        AT(&tt, REDUCE, 4095, NC_ALG_REDUCE_PIPELINED, 1);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_REDUCE, 4095)->ch.k,
                        over ? 8u : 2u);
        AT(&tt, REDUCE, 4096, NC_ALG_REDUCE_PIPELINED, 0);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_REDUCE, 4096)->ch.f, 262144);
        AT(&tt, REDUCE, (1 << 20) + 1, NC_ALG_REDUCE_PIPELINED, 1);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_REDUCE, (1 << 20) + 1)->ch.f,
                        131072);
        /* allreduce: the gaps around 2K .. 16K are the built-in rules, cut;
         * above 16K the built-in rsag rules, split at 512K */
        const span_t allreduce[] = {
            {0, 191, 3, 0, OV_ANY, 0},
            {192, 2 * KI - 1, 3, 192, ov, 0},
            {2 * KI, 16 * KI, .tline = 10},
            {16 * KI + 1, 512 * KI - 1, 3, 4 * KI, OV_ANY, 0},
            {512 * KI, Z, 1, 512 * KI, OV_ANY, 0}};
        SPANS(&tt, ALLREDUCE, allreduce);
        AT(&tt, ALLREDUCE, 192, over ? NC_ALG_ALLREDUCE_ALLFOLD
                                     : NC_ALG_ALLREDUCE_RSAG, 1);
        AT(&tt, ALLREDUCE, 2047, over ? NC_ALG_ALLREDUCE_ALLFOLD
                                      : NC_ALG_ALLREDUCE_RSAG, 1);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_ALLREDUCE, 2047)->ch.f,
                        over ? 16384u : 131072u);
        AT(&tt, ALLREDUCE, 2048, NC_ALG_ALLREDUCE_RSAG, 0);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_ALLREDUCE, 2048)->ch.s, 2);
        AT(&tt, ALLREDUCE, 16385, NC_ALG_ALLREDUCE_RSAG, 1);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_ALLREDUCE, 524287)->ch.copy,
                        NC_COPY_ADAPT);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_ALLREDUCE, 524288)->ch.copy,
                        NC_COPY_ADAPT);
        nc__tune_team_free(&tt);

        /* p=20, one node: the large-message Bcast rule from 1M, barrier
         * k=8, reduce rule gone (ppn 20 > 8): the built-in ones */
        CU_ASSERT_EQUAL_FATAL(resolve_over(&t, 20, 1, 20, over, &tt), 0);
        check_covers(&tt);
        const span_t bcast20[] = {
            {0, 167, 3, 0, ov, 0},
            {168, 16 * KI - 1, 3, 168, ov, 0},
            {16 * KI, 128 * KI - 1, 3, 16 * KI, OV_ANY, 0},
            {128 * KI, MI - 1, 1, 128 * KI, OV_ANY, 0},
            {MI, Z, .tline = 6}};
        SPANS(&tt, BCAST, bcast20);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BCAST, SIZE_MAX)->ch.tree,
                        NUMACOLL_TREE_KNOMIAL);
        static const span_t barrier20[] = {{0, Z, .tline = 7}};
        SPANS(&tt, BARRIER, barrier20);
        AT(&tt, BARRIER, 0, NC_ALG_BARRIER_TREE, 0);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BARRIER, 0)->ch.k, 8);
        /* inline, then pipelined, split at 64K */
        const span_t reduce20[] = {
            {0, 112, 3, 0, OV_ANY, 0},
            {113, 64 * KI - 1, 3, 113, ov, 0},
            {64 * KI, Z, 3, 64 * KI, OV_ANY, 0}};
        SPANS(&tt, REDUCE, reduce20);
        AT(&tt, REDUCE, 4096, NC_ALG_REDUCE_PIPELINED, 1);
        nc__tune_team_free(&tt);

        /* p=1: only the allreduce inline rule (0-56) of the table applies;
         * p <= 2 built-in rules take no verdict */
        CU_ASSERT_EQUAL_FATAL(resolve_over(&t, 1, 1, 1, over, &tt), 0);
        check_covers(&tt);
        static const span_t allreduce1[] = {
            {0, 56, .tline = 9},
            {57, 255, 1, 0, OV_ANY, 0},
            {256, 4 * KI - 1, 1, 256, OV_ANY, 0},
            {4 * KI, 16 * KI - 1, 1, 4 * KI, OV_ANY, 0},
            {16 * KI, 512 * KI - 1, 1, 16 * KI, OV_ANY, 0},
            {512 * KI, Z, 1, 512 * KI, OV_ANY, 0}};
        SPANS(&tt, ALLREDUCE, allreduce1);
        AT(&tt, ALLREDUCE, 56, NC_ALG_ALLREDUCE_INLINE, 0);
        AT(&tt, ALLREDUCE, 255, NC_ALG_ALLREDUCE_INLINE, 1);
        AT(&tt, ALLREDUCE, 256, NC_ALG_ALLREDUCE_ALLFOLD, 1);
        AT(&tt, ALLREDUCE, 16383, NC_ALG_ALLREDUCE_ALLFOLD, 1);
        AT(&tt, ALLREDUCE, 16384, NC_ALG_ALLREDUCE_RSAG, 1);
        nc__tune_team_free(&tt);
    }
    nc__tune_free(&t);
}

static void test_resolve_gaps(void)
{
    /* one rule in the middle of the built-in pipelined range, one at the
     * top: the rest is built-in, cut at the rule's edges */
    nc__tune_table_t t = PARSE_OK(
        "bcast p=1-* size=100-199 alg=pipelined f=64 s=1 q=1 tree=flat k=2\n"
        "bcast p=1-* size=1G-* alg=pipelined f=1M s=2 q=1 tree=chain k=2\n"
        "barrier p=3 alg=tree k=3\n");
    nc__tune_team_t tt;
    for (unsigned over = 0; over <= 1; over++) {
        unsigned ov = over ? OV_1 : OV_0;
        CU_ASSERT_EQUAL_FATAL(resolve_over(&t, 3, 1, 3, over, &tt), 0);
        check_covers(&tt);
        /* tline: the table's line; 0: the built-in rule of those keys */
        const span_t want[] = {
            {0, 99, 3, 0, ov, 0},
            {100, 199, .tline = 1},
            {200, 16383, 3, 168, ov, 0},
            {16384, 131071, 3, 16384, OV_ANY, 0},
            {131072, (4u << 20) - 1, 1, 131072, OV_ANY, 0},
            {4u << 20, (1u << 30) - 1, 1, 4u << 20, OV_ANY, 0},
            {1u << 30, SIZE_MAX, .tline = 2}};
        SPANS(&tt, BCAST, want);
        int tree = over ? NUMACOLL_TREE_FLAT : NUMACOLL_TREE_KARY;
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BCAST, 99)->ch.tree, tree);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BCAST, 150)->ch.tree,
                        NUMACOLL_TREE_FLAT);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BCAST, 200)->ch.tree, tree);
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_BCAST, 16384)->ch.tree,
                        NUMACOLL_TREE_KARY);
        AT(&tt, BARRIER, 0, NC_ALG_BARRIER_TREE, 0);
        AT(&tt, BARRIER, SIZE_MAX, NC_ALG_BARRIER_TREE, 0);
        nc__tune_team_free(&tt);
    }

    /* a rule table built by hand may overlap: the earlier range wins */
    nc__tune_table_t h = {0};
    nc__tune_rule_t r = rule(NC_COLL_REDUCE, 1, U, 10, 100,
                             NC_ALG_REDUCE_PIPELINED);
    r.ch = (nc__choice_t){NC_ALG_REDUCE_PIPELINED, 64, 1, 0, -1, 2, NC_COPY_AUTO, 0, {0}, 0, 0};
    r.line = 1;
    CU_ASSERT_EQUAL(nc__tune_add(&h, &r), 0);
    r.size_lo = 50;
    r.size_hi = 200;
    r.line = 2;
    CU_ASSERT_EQUAL(nc__tune_add(&h, &r), 0);
    CU_ASSERT_EQUAL_FATAL(nc__tune_resolve(&h, 2, 1, 2, &tt), 0);
    check_covers(&tt);
    CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_REDUCE, 100)->line, 1);
    CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_REDUCE, 101)->line, 2);
    CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_REDUCE, 101)->lo, 101);
    nc__tune_team_free(&tt);
    nc__tune_free(&h);
    nc__tune_free(&t);
}

static void test_add_full(void)
{
    nc__tune_table_t t = {0};
    nc__tune_rule_t r = rule(NC_COLL_BARRIER, 1, U, 0, Z, NC_ALG_BARRIER_TREE);
    r.ch.k = 2;
    int ok = 0;
    for (int i = 0; i < NC_TUNE_MAX_RULES; i++)
        ok += nc__tune_add(&t, &r) == 0;
    CU_ASSERT_EQUAL(ok, NC_TUNE_MAX_RULES);
    CU_ASSERT_EQUAL(nc__tune_add(&t, &r), -1);
    CU_ASSERT_EQUAL(t.n, NC_TUNE_MAX_RULES);
    nc__tune_free(&t);
    CU_ASSERT_EQUAL(t.n, 0);
    CU_ASSERT_PTR_NULL(t.rules);
}

int nct_register_tune(void)
{
    static const nct_test_t tests[] = {
        {"built-in table parses to its rules", test_builtin_rules},
        {"built-in table covers every size at p = 1, 2, 3, 64",
         test_builtin_covers},
        {"built-in lookup at every boundary", test_builtin_lookup},
        {"write then parse gives equal rules", test_round_trip},
        {"canonical rule format", test_format},
        {"syntax: comments, whitespace, suffixes, gains", test_syntax},
        {"errors: collectives, keys, algorithms", test_errors_tokens},
        {"errors: missing keys", test_errors_missing},
        {"errors: numbers and ranges", test_errors_numbers},
        {"errors: parameter ranges", test_errors_ranges},
        {"errors: lines, bytes, rule count", test_errors_lines},
        {"overlapping and unreachable rules", test_overlap_unreachable},
        {"a rejected table is empty", test_rejected_empty},
        {"load files, missing file", test_load},
        {"resolve a custom table", test_resolve_custom},
        {"resolve fills gaps from the built-in table", test_resolve_gaps},
        {"at most NC_TUNE_MAX_RULES rules", test_add_full},
        {NULL, NULL},
    };
    return nct_add_suite("tune", tests);
}
