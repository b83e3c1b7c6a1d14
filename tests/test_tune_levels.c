/*
 * Suite "tune_levels": the tuning table's level keys (l1= l1ppd= l2= l2ppd=
 * l3= l3ppd= package= packageppd=), which narrow a rule by the team's
 * shape at a level other than NUMA. They parse, print back and are refused
 * with file, line, column and what was expected; rules that differ only in
 * them overlap exactly when their ranges meet; a rule no team can match is
 * refused; and resolution follows the shape that nc__topo_level_shape
 * measures on synthetic machines with injected PUs (the records
 * test_levels.c builds trees from). Also ku= (Reduce's radix between
 * heads), the table-wide "levels" line a team takes when its parameter is
 * at its default, and numacoll-tune --quick trying level lists.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coll/team.h"
#include "nct.h"
#include "numacoll.h"
#include "support/runner.h"
#include "topo/topo.h"
#include "tune/table.h"

#define U NC_TUNE_ANY_U

static int parse(const char *text, nc__tune_table_t *t, char *errs,
                 size_t len)
{
    return nc__tune_parse(text, strlen(text), "t.txt", t, errs, len);
}

/* text must be refused with exactly want. */
static void refused_at(const char *text, const char *want, int line)
{
    nc__tune_table_t t;
    char errs[4096];
    parse(text, &t, errs, sizeof errs);
    if (strcmp(errs, want) != 0)
        fprintf(stderr, "\ntest_tune_levels.c:%d:\n--- want\n%s--- got\n%s---\n",
                line, want, errs);
    CU_ASSERT_STRING_EQUAL(errs, want);
    CU_ASSERT_EQUAL(t.n, 0);
    nc__tune_free(&t);
}
#define REFUSED(text, want) refused_at(text, want, __LINE__)

static void test_parse_write(void)
{
    const char *text =
        "bcast p=2-* size=0-167 l3=2-* l3ppd=1-8 package=2 alg=inline "
        "tree=kary k=2\n"
        "bcast p=2-* size=0-167 l3=1 alg=inline tree=kary k=4\n"
        "barrier p=1-* l1ppd=2 l2=1-4 l2ppd=3-* packageppd=1-16 l1=1-* "
        "alg=tree k=2\n";
    nc__tune_table_t t;
    char errs[4096];
    CU_ASSERT_EQUAL_FATAL(parse(text, &t, errs, sizeof errs), 0);
    CU_ASSERT_EQUAL_FATAL(t.n, 3);
    const nc__tune_rule_t *r = &t.rules[0];
    CU_ASSERT_EQUAL(r->lv_lo[NUMACOLL_LEVEL_L3], 2);
    CU_ASSERT_EQUAL(r->lv_hi[NUMACOLL_LEVEL_L3], U);
    CU_ASSERT_EQUAL(r->rpd_lo[NUMACOLL_LEVEL_L3], 1);
    CU_ASSERT_EQUAL(r->rpd_hi[NUMACOLL_LEVEL_L3], 8);
    CU_ASSERT_EQUAL(r->lv_lo[NUMACOLL_LEVEL_PACKAGE], 2);
    CU_ASSERT_EQUAL(r->lv_hi[NUMACOLL_LEVEL_PACKAGE], 2);
    CU_ASSERT_EQUAL(r->lv_hi[NUMACOLL_LEVEL_L2], 0);   /* absent */
    CU_ASSERT_EQUAL(r->rpd_hi[NUMACOLL_LEVEL_PACKAGE], 0);

    /* canonical form: level keys after nodes/ppn, in key order */
    char line[512];
    nc__tune_format_rule(&t.rules[2], line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, " l1ppd=2 l2=1-4 l2ppd=3-* "
                                        "packageppd=1-16 alg=tree k=2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, " l1=1-* l1ppd=2"));
    nc__tune_format_rule(&t.rules[0], line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "l3=2-* l3ppd=1-8 package=2 alg="));

    /* written and read back: equal level ranges */
    char *buf = NULL;
    size_t blen = 0;
    FILE *f = open_memstream(&buf, &blen);
    CU_ASSERT_EQUAL_FATAL(nc__tune_write(&t, "levels", f), 0);
    fclose(f);
    nc__tune_table_t u;
    CU_ASSERT_EQUAL(parse(buf, &u, errs, sizeof errs), 0);
    CU_ASSERT_EQUAL_FATAL(u.n, t.n);
    for (int i = 0; i < t.n; i++) {
        CU_ASSERT(memcmp(t.rules[i].lv_lo, u.rules[i].lv_lo,
                         sizeof t.rules[i].lv_lo) == 0);
        CU_ASSERT(memcmp(t.rules[i].lv_hi, u.rules[i].lv_hi,
                         sizeof t.rules[i].lv_hi) == 0);
        CU_ASSERT(memcmp(t.rules[i].rpd_lo, u.rules[i].rpd_lo,
                         sizeof t.rules[i].rpd_lo) == 0);
        CU_ASSERT(memcmp(t.rules[i].rpd_hi, u.rules[i].rpd_hi,
                         sizeof t.rules[i].rpd_hi) == 0);
    }
    free(buf);
    nc__tune_free(&u);
    nc__tune_free(&t);
}

#define IN " alg=inline tree=kary k=2"

static void test_errors(void)
{
    REFUSED("bcast p=1-* size=0 l3=x" IN,
            "t.txt:1:23: expected a range of L3 domains (n, lo-hi, lo-* or *), "
            "found 'x'\n");
    REFUSED("bcast p=1-* size=0 l2ppd=4-2" IN,
            "t.txt:1:26: expected a range lo-hi with lo <= hi, found '4-2'\n");
    REFUSED("bcast p=1-* size=0 packageppd=" IN,
            "t.txt:1:31: expected a range of ranks per package domain (n, "
            "lo-hi, lo-* or *), found ''\n");
    REFUSED("bcast p=1-* size=0 l1=0" IN,
            "t.txt:1:23: expected l1 of at least 1, found '0'\n");
    REFUSED("bcast p=1-* size=0 l3=2 l3=3" IN,
            "t.txt:1:25: expected each key once per rule, found 'l3'\n");
    REFUSED("bcast p=1-* size=0 l4=2" IN,
            "t.txt:1:20: expected a key (p, size, nodes, ppn, alg, f, s, q, "
            "tree, k, gain, copy, l1, l1ppd, l2, l2ppd, l3, l3ppd, package, "
            "packageppd, ku, l1tree, l2tree, l3tree, numatree, packagetree, toptree, relay, over or decline), found 'l4'\n");
}

static void test_overlap_unreachable(void)
{
    nc__tune_table_t t;
    char errs[4096];
    /* disjoint by L3 domains, or by ranks per L3 domain: no overlap */
    CU_ASSERT_EQUAL(parse("bcast p=1-* size=0-99 l3=1" IN "\n"
                          "bcast p=1-* size=0-99 l3=2-* l3ppd=1-4" IN "\n"
                          "bcast p=1-* size=0-99 l3=2-* l3ppd=5-*" IN "\n",
                          &t, errs, sizeof errs), 0);
    CU_ASSERT_STRING_EQUAL(errs, "");
    nc__tune_free(&t);
    /* an absent key is 1-*: it meets every range of that key */
    REFUSED("bcast p=1-* size=0-99 l3=2" IN "\n"
            "bcast p=1-* size=0-99" IN "\n",
            "t.txt:2: rule overlaps line 1 (bcast p=1-* size=0-99 l3=2)\n");
    REFUSED("bcast p=1-* size=0-99 l3=1-2 package=1" IN "\n"
            "bcast p=1-* size=0-99 l3=2-* packageppd=4" IN "\n",
            "t.txt:2: rule overlaps line 1 (bcast p=1-* size=0-99 l3=1-2 "
            "package=1)\n");
    /* different levels never make rules disjoint by themselves */
    REFUSED("bcast p=1-* size=0-99 l2=1" IN "\n"
            "bcast p=1-* size=0-99 l3=2" IN "\n",
            "t.txt:2: rule overlaps line 1 (bcast p=1-* size=0-99 l2=1)\n");
    /* no team of 2..4 ranks spans 5 L3 domains, or has 2 domains with 4
     * ranks in one, or at most 2 packages of 1 rank */
    REFUSED("bcast p=2-4 size=0 l3=5-*" IN,
            "t.txt:1: rule is unreachable: no team of p=2-4 spans l3=5-*\n");
    REFUSED("bcast p=2-4 size=0 l2=2 l2ppd=4-*" IN,
            "t.txt:1: rule is unreachable: no team of p=2-4 spans l2=2 with "
            "l2ppd=4-*\n");
    REFUSED("bcast p=4 size=0 package=1-2 packageppd=1" IN,
            "t.txt:1: rule is unreachable: no team of p=4 fits package=1-2 "
            "with packageppd=1\n");
    REFUSED("bcast p=2 size=0 l1ppd=3" IN,
            "t.txt:1: rule is unreachable: no team of p=2 has l1ppd=3\n");
}

#define M16 "synthetic:pack:2 numa:2 l3:2 core:2 pu:1" /* 16 PUs */

/* doms of p ranks on PUs 0..p-1 (or strided by 3) of topology. */
static int doms_of(const char *topology, int p, int stride, nc__doms_t *d)
{
    char msg[256];
    for (int r = 0; r < p; r++) {
        numacoll_locality_t loc;
        int32_t caches[2];
        if (nc__topo_discover_ex(topology, (r * stride) % 16, &loc, caches,
                                 msg, sizeof msg) != NUMACOLL_OK) {
            fprintf(stderr, "\n  %s: %s\n", topology, msg);
            return -1;
        }
        nc__topo_doms(&loc, caches, &d[r]);
    }
    return 0;
}

static void shape_of(const nc__doms_t *d, int p, nc__tune_shape_t *sh)
{
    memset(sh, 0, sizeof *sh);
    sh->p = (unsigned)p;
    sh->nodes = nc__topo_level_shape(d, p, NUMACOLL_LEVEL_NUMA, &sh->ppn);
    for (int l = NUMACOLL_LEVEL_L1; l < NUMACOLL_LEVEL_END; l++)
        sh->dom[l] = nc__topo_level_shape(d, p, l, &sh->rpd[l]);
}

static void test_shape(void)
{
    nc__doms_t d[16];
    nc__tune_shape_t sh;
    unsigned most;
    /* 16 ranks in order: 2 packages of 8, 4 NUMA of 4, 8 L3 of 2, 16
     * cores (L1, L2 of 1 rank each: every core has its own) */
    CU_ASSERT_EQUAL_FATAL(doms_of(M16, 16, 1, d), 0);
    shape_of(d, 16, &sh);
    CU_ASSERT_EQUAL(sh.dom[NUMACOLL_LEVEL_PACKAGE], 2);
    CU_ASSERT_EQUAL(sh.rpd[NUMACOLL_LEVEL_PACKAGE], 8);
    CU_ASSERT_EQUAL(sh.nodes, 4);
    CU_ASSERT_EQUAL(sh.ppn, 4);
    CU_ASSERT_EQUAL(sh.dom[NUMACOLL_LEVEL_L3], 8);
    CU_ASSERT_EQUAL(sh.rpd[NUMACOLL_LEVEL_L3], 2);
    /* 5 ranks on PUs 0 3 6 9 12: L3s {0}, {3}... PU 0,1 share one L3 */
    CU_ASSERT_EQUAL_FATAL(doms_of(M16, 5, 3, d), 0);
    shape_of(d, 5, &sh);
    CU_ASSERT_EQUAL(sh.dom[NUMACOLL_LEVEL_L3], 5);
    CU_ASSERT_EQUAL(sh.rpd[NUMACOLL_LEVEL_L3], 1);
    CU_ASSERT_EQUAL(sh.dom[NUMACOLL_LEVEL_PACKAGE], 2);
    CU_ASSERT_EQUAL(sh.rpd[NUMACOLL_LEVEL_PACKAGE], 3);
    /* unknown ids are one domain together; bad arguments give 0 */
    nc__doms_t u[3];
    for (int r = 0; r < 3; r++)
        for (int l = 0; l < NUMACOLL_LEVEL_END; l++)
            u[r].id[l] = r == 2 ? 7 : -1;
    CU_ASSERT_EQUAL(nc__topo_level_shape(u, 3, NUMACOLL_LEVEL_L3, &most), 2);
    CU_ASSERT_EQUAL(most, 2);
    CU_ASSERT_EQUAL(nc__topo_level_shape(u, 0, NUMACOLL_LEVEL_L3, &most), 0);
    CU_ASSERT_EQUAL(nc__topo_level_shape(u, 3, 0, &most), 0);
    CU_ASSERT_EQUAL(nc__topo_level_shape(NULL, 3, 1, &most), 0);
}

/* The algorithm and radix of a 0-byte Bcast for shape sh under tab. */
static const nc__tune_entry_t *bcast0(const nc__tune_table_t *tab,
                                      const nc__tune_shape_t *sh,
                                      nc__tune_team_t *tt)
{
    CU_ASSERT_EQUAL_FATAL(nc__tune_resolve_shape(tab, sh, tt), 0);
    return nc__tune_lookup(tt, NC_COLL_BCAST, 0);
}

static void test_resolve(void)
{
    const char *text =
        "bcast p=2-* size=0-99 l3=1 alg=inline tree=kary k=2\n"
        "bcast p=2-* size=0-99 l3=2-* l3ppd=1 alg=inline tree=kary k=3\n"
        "bcast p=2-* size=0-99 l3=2-* l3ppd=2-* package=1 alg=inline "
        "tree=kary k=4\n"
        "bcast p=2-* size=0-99 l3=2-* l3ppd=2-* package=2-* alg=inline "
        "tree=knomial k=5\n";
    nc__tune_table_t t;
    char errs[4096];
    CU_ASSERT_EQUAL_FATAL(parse(text, &t, errs, sizeof errs), 0);
    nc__doms_t d[16];
    nc__tune_shape_t sh;
    nc__tune_team_t tt;
    const nc__tune_entry_t *e;
    static const struct { int p, stride; unsigned k; int line; } cases[] = {
        {2, 1, 2, 1},    /* PUs 0 1: one L3                        */
        {2, 2, 3, 2},    /* PUs 0 2: two L3 of one rank            */
        {8, 1, 4, 3},    /* PUs 0-7: 4 L3 of 2, one package        */
        {16, 1, 5, 4},   /* all 16: 8 L3 of 2, two packages        */
        {5, 3, 3, 2},    /* PUs 0 3 6 9 12: 5 L3 of one rank       */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CU_ASSERT_EQUAL_FATAL(doms_of(M16, cases[i].p, cases[i].stride, d), 0);
        shape_of(d, cases[i].p, &sh);
        e = bcast0(&t, &sh, &tt);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        CU_ASSERT_EQUAL(e->ch.k, cases[i].k);
        CU_ASSERT_EQUAL(e->line, cases[i].line);
        CU_ASSERT_EQUAL(e->builtin, 0);
        nc__tune_team_free(&tt);
    }
    /* a team whose L3 shape is unknown matches no rule that names L3: the
     * built-in table serves it */
    memset(&sh, 0, sizeof sh);
    sh.p = 4;
    sh.nodes = 1;
    sh.ppn = 4;
    e = bcast0(&t, &sh, &tt);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_EQUAL(e->builtin, 1);
    nc__tune_team_free(&tt);
    CU_ASSERT_EQUAL_FATAL(nc__tune_resolve(&t, 4, 1, 4, &tt), 0);
    e = nc__tune_lookup(&tt, NC_COLL_BCAST, 0);
    CU_ASSERT_PTR_NOT_NULL(e);
    if (e)
        CU_ASSERT_EQUAL(e->builtin, 1);
    nc__tune_team_free(&tt);
    nc__tune_free(&t);
}

/* A team resolves by its own shape per level: 4 ranks on PUs 0-3 (2 L3
 * of 2) take line 2's radix 3, on PUs 0 2 4 6 (4 L3 of 1) line 1's radix
 * 4; a Bcast then runs on the chosen rule and delivers. */
static const char *const team_table =
    "bcast p=2-* size=0-99 l3=2-* l3ppd=1 alg=inline tree=kary k=4\n"
    "bcast p=2-* size=0-99 l3=1-* l3ppd=2-* alg=inline tree=kary k=3\n";

static int team_body(const numacoll_bootstrap_t *b, void *arg)
{
    const int stride = *(const int *)arg;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.topology = M16;
    cfg.pu = b->rank * stride;
    cfg.verbose = 0;
    cfg.tuning_text = team_table;
    numacoll_team_t *team;
    if (numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK)
        return 10;
    const nc__tune_entry_t *e = nc__tune_lookup(&team->tune, NC_COLL_BCAST, 8);
    unsigned want = stride == 1 ? 3 : 4;
    int bad = !e || e->builtin || e->ch.k != want;
    if (bad)
        fprintf(stderr, "stride %d: bcast rule k=%u, expected k=%u\n", stride,
                e ? e->ch.k : 0, want);
    char buf[8] = {0};
    if (b->rank == 1)
        memcpy(buf, "levels", 7);
    if (numacoll_bcast(team, buf, sizeof buf, 1) != NUMACOLL_OK ||
        strcmp(buf, "levels") != 0)
        bad = 1;
    numacoll_team_destroy(team);
    return bad;
}

/* ku=: the radix between heads of Reduce's tree, apart from k. */
static void test_ku(void)
{
    nc__tune_table_t t;
    char errs[4096];
    CU_ASSERT_EQUAL_FATAL(parse("reduce p=1-* size=* alg=pipelined f=1K s=2 "
                                "k=2 ku=4\n"
                                "allreduce p=1-* size=* alg=reduce_bcast f=1K "
                                "s=2 ku=3 k=4\n",
                                &t, errs, sizeof errs), 0);
    CU_ASSERT_EQUAL(t.rules[0].ch.k, 2);
    CU_ASSERT_EQUAL(t.rules[0].ch.ku, 4);
    CU_ASSERT_EQUAL(t.rules[1].ch.ku, 3);
    char line[512];
    nc__tune_format_rule(&t.rules[1], line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, " k=4 ku=3"));
    nc__tune_free(&t);
    REFUSED("bcast p=1-* size=0 ku=2" IN,
            "t.txt:1:20: expected ku= only with k= of reduce or allreduce (the "
            "radix between the heads of the levels), found 'ku'\n");
    REFUSED("allreduce p=1-* size=* alg=rsag f=1K s=2 ku=2\n",
            "t.txt:1:42: expected ku= only with k= of reduce or allreduce (the "
            "radix between the heads of the levels), found 'ku'\n");
    REFUSED("reduce p=1-* size=* alg=pipelined f=1K s=2 k=2 ku=1\n",
            "t.txt:1:51: expected ku from 2 to 64 (reduce_radix), found '1'\n");
}

/* Level trees (l3tree= ... toptree=) and relay=: parse into NC_LT values,
 * print back in canonical order, and are refused where they mean nothing. */
static void test_level_trees(void)
{
    nc__tune_table_t t;
    char errs[4096];
#define LT_RULES                                                              \
    "bcast p=1-* size=* alg=pipelined f=8K s=4 q=2 tree=numa k=2 "            \
    "toptree=flat relay=1 l3tree=kary:4 numatree=chain\n"                     \
    "barrier p=1-* alg=tree k=3 packagetree=knomial:5 l1tree=flat\n"          \
    "reduce p=1-* size=* alg=pipelined f=1K s=2 k=2 ku=3 l2tree=chain\n"      \
    "allreduce p=1-* size=* alg=reduce_bcast f=1K s=2 k=2 toptree=kary:64"
    CU_ASSERT_EQUAL_FATAL(parse(LT_RULES " relay=0\n", &t, errs, sizeof errs),
                          1);
    /* relay= belongs to Bcast's pipelined rules only: the last line */
    CU_ASSERT_PTR_NOT_NULL(strstr(errs, "t.txt:4:"));
    nc__tune_free(&t);
    CU_ASSERT_EQUAL_FATAL(parse(LT_RULES "\n", &t, errs, sizeof errs), 0);
#undef LT_RULES
    const nc__choice_t *b = &t.rules[0].ch;
    CU_ASSERT_EQUAL(b->relay, 1);
    CU_ASSERT_EQUAL(b->lt[NC_LT_TOP], NC_LT(NUMACOLL_TREE_FLAT, 0));
    CU_ASSERT_EQUAL(b->lt[NUMACOLL_LEVEL_L3], NC_LT(NUMACOLL_TREE_KARY, 4));
    CU_ASSERT_EQUAL(b->lt[NUMACOLL_LEVEL_NUMA], NC_LT(NUMACOLL_TREE_CHAIN, 0));
    CU_ASSERT_EQUAL(b->lt[NUMACOLL_LEVEL_L1], 0);
    CU_ASSERT_EQUAL(t.rules[1].ch.lt[NUMACOLL_LEVEL_PACKAGE],
                    NC_LT(NUMACOLL_TREE_KNOMIAL, 5));
    CU_ASSERT_EQUAL(t.rules[3].ch.lt[NC_LT_TOP], NC_LT(NUMACOLL_TREE_KARY, 64));
    char line[512];
    nc__tune_format_rule(&t.rules[0], line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, " tree=numa k=2 l3tree=kary:4 "
                                        "numatree=chain toptree=flat relay=1"));
    nc__tune_format_rule(&t.rules[2], line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, " k=2 ku=3 l2tree=chain"));
    /* what is written reads back to equal rules */
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    CU_ASSERT_EQUAL(nc__tune_write(&t, NULL, m), 0);
    fclose(m);
    nc__tune_table_t u;
    CU_ASSERT_EQUAL(nc__tune_parse(text, len, "w.txt", &u, errs, sizeof errs),
                    0);
    CU_ASSERT_EQUAL(u.n, t.n);
    for (int i = 0; i < t.n && i < u.n; i++)
        CU_ASSERT(memcmp(&u.rules[i].ch.lt, &t.rules[i].ch.lt,
                         sizeof t.rules[i].ch.lt) == 0 &&
                  u.rules[i].ch.relay == t.rules[i].ch.relay);
    free(text);
    nc__tune_free(&u);
    nc__tune_free(&t);

#define PIPE "bcast p=1-* size=* alg=pipelined f=8K s=4 q=2 k=2 "
    REFUSED(PIPE "tree=numa l3tree=ring\n",
            "t.txt:1:68: expected a level tree (flat, chain, kary:K or "
            "knomial:K, K from 2 to 64), found 'ring'\n");
    REFUSED(PIPE "tree=numa l3tree=kary\n",
            "t.txt:1:68: expected a level tree (flat, chain, kary:K or "
            "knomial:K, K from 2 to 64), found 'kary'\n");
    REFUSED(PIPE "tree=numa l3tree=knomial:1\n",
            "t.txt:1:68: expected a level tree (flat, chain, kary:K or "
            "knomial:K, K from 2 to 64), found 'knomial:1'\n");
    REFUSED(PIPE "tree=numa toptree=kary:65\n",
            "t.txt:1:69: expected a level tree (flat, chain, kary:K or "
            "knomial:K, K from 2 to 64), found 'kary:65'\n");
    REFUSED(PIPE "tree=numa numatree=flat:2\n",
            "t.txt:1:70: expected a level tree (flat, chain, kary:K or "
            "knomial:K, K from 2 to 64), found 'flat:2'\n");
    REFUSED(PIPE "tree=numa numatree=numa\n",
            "t.txt:1:70: expected a level tree (flat, chain, kary:K or "
            "knomial:K, K from 2 to 64), found 'numa'\n");
    REFUSED(PIPE "tree=numa relay=2\n",
            "t.txt:1:67: expected relay 0 or 1, found '2'\n");
    REFUSED(PIPE "tree=kary l3tree=kary:2\n",
            "t.txt:1:61: expected l3tree= only with tree=numa (it shapes the "
            "hierarchical tree), found 'l3tree'\n");
    REFUSED(PIPE "relay=1 tree=knomial\n",
            "t.txt:1:51: expected relay= only with tree=numa (it shapes the "
            "hierarchical tree), found 'relay'\n");
    REFUSED("bcast p=1-* size=0-64 alg=inline tree=numa k=2 relay=1\n",
            "t.txt:1:48: expected relay= only in a bcast rule of "
            "alg=pipelined, found 'relay'\n");
    REFUSED("allreduce p=1-* size=* alg=rsag f=1K s=2 l3tree=chain\n",
            "t.txt:1:42: expected l3tree= only with k= (a rule whose trees "
            "follow the levels), found 'l3tree'\n");
    REFUSED("gather p=1-* size=* alg=staged f=1K s=2 toptree=flat\n",
            "t.txt:1:41: expected toptree= only with k= (a rule whose trees "
            "follow the levels), found 'toptree'\n");
    REFUSED(PIPE "tree=numa l3tree=chain l3tree=flat\n",
            "t.txt:1:74: expected each key once per rule, found 'l3tree'\n");
#undef PIPE
}

/* A Reduce whose rule gives ku=3 runs on the tree with radix 2 inside the
 * L3 domains and 3 between heads, and sums right, at p = 8 under levels
 * l3,numa,package (p = 8 on PUs 0-7: 4 L3 in 2 NUMA in 1 package). */
static int ku_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.topology = M16;
    cfg.pu = b->rank;
    cfg.verbose = 0;
    cfg.levels = numacoll_levels_parse("l3,numa,package");
    cfg.tuning_text =
        "reduce p=1-* size=* alg=pipelined f=1K s=2 k=2 ku=3\n";
    numacoll_team_t *team;
    if (numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK)
        return 10;
    int bad = !nc__team_tree(team, NUMACOLL_TREE_NUMA, 2, 3, NULL);
    int64_t in[300], out[300];
    for (int root = 0; root < b->size && !bad; root += 3) {
        for (int i = 0; i < 300; i++)
            in[i] = i * 5 + b->rank;
        if (numacoll_reduce(team, in, out, 300, NUMACOLL_DTYPE_INT64,
                            NUMACOLL_OP_SUM, root) != NUMACOLL_OK)
            bad = 2;
        for (int i = 0; !bad && b->rank == root && i < 300; i++)
            if (out[i] != (int64_t)i * 5 * b->size +
                              (int64_t)b->size * (b->size - 1) / 2)
                bad = 3;
    }
    numacoll_team_destroy(team);
    return bad;
}

static void test_ku_team(void)
{
    CU_ASSERT_EQUAL(nct_run(8, ku_body, NULL), 0);
}

/* The table-wide "levels" line: parsed once, written first, errors. */
static void test_levels_line(void)
{
    nc__tune_table_t t;
    char errs[4096];
    CU_ASSERT_EQUAL_FATAL(parse("# tuned\nlevels l3,numa   # measured\n"
                                "barrier p=1-* alg=tree k=2\n",
                                &t, errs, sizeof errs), 0);
    CU_ASSERT_EQUAL(t.levels, numacoll_levels_parse("l3,numa"));
    CU_ASSERT_EQUAL(t.levels_line, 2);
    char *buf = NULL;
    size_t blen = 0;
    FILE *f = open_memstream(&buf, &blen);
    CU_ASSERT_EQUAL_FATAL(nc__tune_write(&t, NULL, f), 0);
    fclose(f);
    CU_ASSERT_EQUAL(strncmp(buf, "levels     l3,numa\nbarrier", 26), 0);
    nc__tune_table_t u;
    CU_ASSERT_EQUAL(parse(buf, &u, errs, sizeof errs), 0);
    CU_ASSERT_EQUAL(u.levels, t.levels);
    free(buf);
    nc__tune_free(&u);
    nc__tune_free(&t);
    CU_ASSERT_EQUAL(t.levels, 0);
    REFUSED("levels\n", "t.txt:1:7: expected a level list after levels (e.g. "
                        "l3,numa), found 'end of line'\n");
    REFUSED("levels l4,numa\n",
            "t.txt:1:8: expected a level list (l1, l2, l3, numa, package, "
            "comma-separated, innermost first), found 'l4,numa'\n");
    REFUSED("levels numa p=1\n",
            "t.txt:1:13: expected end of line after the level list, found "
            "'p=1'\n");
    REFUSED("levels numa\n\nlevels l3,numa\n",
            "t.txt:3:1: expected one levels line (line 1 has one), found "
            "'levels'\n");
}

/* A team takes the table's level list unless its levels parameter says
 * otherwise. */
static int levels_body(const numacoll_bootstrap_t *b, void *arg)
{
    const char *param = arg;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.topology = M16;
    cfg.pu = b->rank;
    cfg.verbose = 0;
    if (param)
        cfg.levels = numacoll_levels_parse(param);
    cfg.tuning_text = "levels l3,numa,package\n";
    numacoll_team_t *team;
    if (numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK)
        return 10;
    int want = numacoll_levels_parse(param ? param : "l3,numa,package");
    int bad = team->cfg.levels != want;
    char buf[8] = {0};
    if (b->rank == 0)
        memcpy(buf, "table", 6);
    if (numacoll_bcast(team, buf, sizeof buf, 0) != NUMACOLL_OK ||
        strcmp(buf, "table") != 0 || numacoll_barrier(team) != NUMACOLL_OK)
        bad = 1;
    numacoll_team_destroy(team);
    return bad;
}

static void test_levels_team(void)
{
    CU_ASSERT_EQUAL(nct_run(8, levels_body, NULL), 0);
    CU_ASSERT_EQUAL(nct_run(8, levels_body, (void *)"l3"), 0);
}

static void test_team(void)
{
    int stride = 1;
    CU_ASSERT_EQUAL(nct_run(4, team_body, &stride), 0);
    stride = 2;
    CU_ASSERT_EQUAL(nct_run(4, team_body, &stride), 0);
}

/* numacoll-tune --quick, Barrier only (a few seconds), on a synthetic
 * machine: output (stdout and stderr) into out; the exit status, or -1. */
#define TUNER "build/numacoll-tune"
static int tuner(const char *args, const char *table, char *out, size_t len)
{
    char a[1024];
    snprintf(a, sizeof a, "--quick --ops barrier %s -o %s", args, table);
    return nct_tuner(a, out, len);
}

/* On a machine whose level lists differ the tuner measures them and the
 * table it writes says what it found (and parses, levels line or not);
 * where they coincide it says so and skips. The winner itself is left to
 * the machine: no timing is asserted. */
static void test_tuner_levels(void)
{
    if (access(TUNER, X_OK) != 0) {
        CU_FAIL("build/numacoll-tune is not built: run make first");
        return;
    }
    char table[64] = "/tmp/nct-tune-levels-XXXXXX", out[8192];
    int fd = mkstemp(table);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    int rc = tuner("--budget 20s -p 4 --topology '" M16 "'", table, out,
                   sizeof out);
    CU_ASSERT_EQUAL(rc, 0);
    const char *want = "p=4: levels, time against numa over 1 point: numa "
                       "x1.00 (4 ranks); l3,numa x";
    if (!strstr(out, want))
        fprintf(stderr, "\n  tuner output lacks '%s':\n%s\n", want, out);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "(2 L3 > 4 ranks)"));
    nc__tune_table_t t;
    char errs[2048];
    CU_ASSERT_EQUAL(nc__tune_load(table, &t, errs, sizeof errs), 0);
    CU_ASSERT(t.levels == 0 || t.levels == numacoll_levels_parse("l3,numa"));
    nc__tune_free(&t);
    FILE *f = fopen(table, "r");
    char head[8192] = "";
    if (f) {
        head[fread(head, 1, sizeof head - 1, f)] = '\0';
        fclose(f);
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(head, "# levels p=4: levels, time against "
                                        "numa"));

    rc = tuner("--budget 10s -p 2 --topology 'synthetic:numa:1 core:2 pu:1'",
               table, out, sizeof out);
    CU_ASSERT_EQUAL(rc, 0);
    want = "p=2: every level list gives one hierarchy here (2 ranks): levels "
           "not tuned";
    if (!strstr(out, want))
        fprintf(stderr, "\n  tuner output lacks '%s':\n%s\n", want, out);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
    CU_ASSERT_EQUAL(nc__tune_load(table, &t, errs, sizeof errs), 0);
    CU_ASSERT_EQUAL(t.levels, 0);
    nc__tune_free(&t);
    remove(table);
}

int nct_register_tune_levels(void)
{
    static const nct_test_t tests[] = {
        {"level keys parse and print back", test_parse_write},
        {"level keys: errors name line, column, expected", test_errors},
        {"level keys: overlapping and unreachable rules",
         test_overlap_unreachable},
        {"team shape per level on a synthetic machine", test_shape},
        {"rules resolve by the shape per level", test_resolve},
        {"a team takes the rule of its shape per level", test_team},
        {"ku=: parse, print back, errors", test_ku},
        {"level trees and relay=: parse, print back, errors",
         test_level_trees},
        {"the levels line: parse, print back, errors", test_levels_line},
        {"a team takes the table's levels unless set", test_levels_team},
        {"numacoll-tune --quick measures level lists, or says they coincide",
         test_tuner_levels},
        {"ku=: a Reduce on radix 2 inside, 3 between heads", test_ku_team},
        {NULL, NULL},
    };
    return nct_add_suite("tune_levels", tests);
}
