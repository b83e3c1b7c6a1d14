/* Configuration defaults and validation: every bad value names its
 * parameter; the struct's size lets it grow without breaking callers. */
#include <stdio.h>
#include <string.h>

#include "coll/algs.h"
#include "coll/config.h"
#include "nct.h"
#include "numacoll.h"

static void test_defaults(void)
{
    numacoll_config_t c;
    numacoll_config_init(&c);
    /* the algorithm parameters are unset: the tuning table decides */
    CU_ASSERT_EQUAL(c.frag_size, 0);
    CU_ASSERT_EQUAL(c.queue_depth, 0);
    CU_ASSERT_EQUAL(c.banks, 0);
    CU_ASSERT_EQUAL(c.tree, -1);
    CU_ASSERT_EQUAL(c.radix, 0);
    CU_ASSERT_EQUAL(c.reduce_frag_size, 0);
    CU_ASSERT_EQUAL(c.reduce_depth, 0);
    CU_ASSERT_EQUAL(c.reduce_radix, 0);
    CU_ASSERT_EQUAL(c.barrier_radix, 0);
    CU_ASSERT_PTR_NULL(c.tuning_file);
    CU_ASSERT_PTR_NULL(c.tuning_text);
    CU_ASSERT_EQUAL(c.timeout_ms, 0);
    CU_ASSERT_EQUAL(c.pu, -1);
    CU_ASSERT_PTR_NULL(c.topology);
    char msg[256];
    CU_ASSERT_EQUAL(numacoll_config_check(&c, msg, sizeof msg), NUMACOLL_OK);
    CU_ASSERT_STRING_EQUAL(msg, "");
}

/* Apply one bad value; the message must name `name`. */
#define EXPECT_BAD(field, value, name)                                          \
    do {                                                                        \
        numacoll_config_t c;                                                    \
        numacoll_config_init(&c);                                               \
        c.field = value;                                                        \
        char msg[256] = "";                                                     \
        CU_ASSERT_EQUAL(numacoll_config_check(&c, msg, sizeof msg),             \
                        NUMACOLL_ERR_ARG);                                      \
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, name));                              \
    } while (0)

static void test_invalid(void)
{
    EXPECT_BAD(frag_size, 32, "frag_size");           /* 0 is "unset" */
    EXPECT_BAD(frag_size, 100, "frag_size");          /* not a multiple of 64 */
    EXPECT_BAD(frag_size, 2u << 20, "frag_size");     /* over 1 MiB */
    EXPECT_BAD(queue_depth, 65537, "queue_depth");
    EXPECT_BAD(banks, 65537, "banks");
    EXPECT_BAD(radix, 1, "radix");
    EXPECT_BAD(tree, 7, "tree");
    EXPECT_BAD(tree, -2, "tree");
    EXPECT_BAD(reduce_frag_size, 32, "reduce_frag_size");
    EXPECT_BAD(barrier_radix, 65, "barrier_radix");
    EXPECT_BAD(verbose, 9, "verbose");
    EXPECT_BAD(pu, -2, "pu");
    numacoll_config_t c;
    numacoll_config_init(&c);
    c.queue_depth = 6;
    c.banks = 4;
    char msg[256];
    CU_ASSERT_EQUAL(numacoll_config_check(&c, msg, sizeof msg), NUMACOLL_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "queue_depth = 6"));
    c.queue_depth = 4;
    c.banks = 8;                                      /* q > s */
    CU_ASSERT_EQUAL(numacoll_config_check(&c, msg, sizeof msg), NUMACOLL_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "queue_depth"));
    c.banks = 0;               /* s set alone: checked against each rule */
    CU_ASSERT_EQUAL(numacoll_config_check(&c, msg, sizeof msg), NUMACOLL_OK);
    CU_ASSERT_EQUAL(numacoll_config_check(NULL, NULL, 0), NUMACOLL_ERR_ARG);
}

static void test_strerror(void)
{
    CU_ASSERT_STRING_EQUAL(numacoll_strerror(NUMACOLL_OK), "success");
    CU_ASSERT_STRING_EQUAL(numacoll_strerror(NUMACOLL_ERR_TIMEOUT),
                           "wait timed out");
    CU_ASSERT_STRING_EQUAL(numacoll_strerror(12345), "unknown status");
    for (int s = 0; s >= NUMACOLL_ERR_UNSUPPORTED; s--)
        CU_ASSERT_STRING_NOT_EQUAL(numacoll_strerror(s), "unknown status");
}

static void test_tree_names(void)
{
    for (int k = 0; k < NUMACOLL_TREE_COUNT; k++) {
        const char *n = numacoll_tree_name((numacoll_tree_kind_t)k);
        CU_ASSERT_PTR_NOT_NULL_FATAL(n);
        CU_ASSERT_EQUAL(numacoll_tree_parse(n), k);
    }
    CU_ASSERT_EQUAL(numacoll_tree_parse("banyan"), -1);
}

/* A default outside [min, max] is the "from the table" value. */
static int unset_default(long long def, long long min, unsigned long long max)
{
    return def < min || (def >= 0 && (unsigned long long)def > max);
}

/* docs/parameters.md has a row `| `name` | default |` for every parameter
 * of NUMACOLL_PARAM_LIST, so the page cannot drift from the header. A
 * default outside the range is "unset: from the tuning table", written
 * `table`; a level list is written by its names. */
static void test_docs_table(void)
{
    FILE *f = fopen("docs/parameters.md", "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    char row[128], lv[64];
#define X(field, type, def, min, max, doc)                                      \
    if (strcmp(#field, "wait_policy") == 0) /* unset is auto, no table's */    \
        snprintf(row, sizeof row, "| `%s` | auto |", #field);                   \
    else if (unset_default((long long)(def), (long long)(min),                  \
                           (unsigned long long)(max)))                          \
        snprintf(row, sizeof row, "| `%s` | table |", #field);                  \
    else if (type == 'l' && numacoll_levels_format((int)(def), lv,             \
                                                   sizeof lv) == 0)             \
        snprintf(row, sizeof row, "| `%s` | `%s` |", #field, lv);               \
    else                                                                        \
        snprintf(row, sizeof row, "| `%s` | %lld |", #field, (long long)(def)); \
    CU_ASSERT_PTR_NOT_NULL(strstr(text, row));                                  \
    if (!strstr(text, row))                                                     \
        fprintf(stderr, "docs/parameters.md lacks the row '%s'\n", row);
    NUMACOLL_PARAM_LIST(X)
#undef X
}

/* numacoll_config_set: each type's syntax, ranges, the unset default, and
 * nothing written on a refusal */
static void test_config_set(void)
{
    numacoll_config_t c;
    numacoll_config_init(&c);
    char msg[256];
    CU_ASSERT_EQUAL(numacoll_config_set(&c, "frag_size", "64k", msg,
                                        sizeof msg), NUMACOLL_OK);
    CU_ASSERT_EQUAL(c.frag_size, 65536);
    CU_ASSERT_EQUAL(numacoll_config_set(&c, "node_budget", "1mb", NULL, 0),
                    NUMACOLL_OK);
    CU_ASSERT_EQUAL(c.node_budget, 1u << 20);
    CU_ASSERT_EQUAL(numacoll_config_set(&c, "tree", "knomial", NULL, 0),
                    NUMACOLL_OK);
    CU_ASSERT_EQUAL(c.tree, NUMACOLL_TREE_KNOMIAL);
    CU_ASSERT_EQUAL(numacoll_config_set(&c, "tree", "1", NULL, 0),
                    NUMACOLL_OK);
    CU_ASSERT_EQUAL(c.tree, NUMACOLL_TREE_CHAIN);
    CU_ASSERT_EQUAL(numacoll_config_set(&c, "tree", "-1", NULL, 0),
                    NUMACOLL_OK); /* the table's */
    CU_ASSERT_EQUAL(c.tree, -1);
    CU_ASSERT_EQUAL(numacoll_config_set(&c, "levels", "l3,numa", NULL, 0),
                    NUMACOLL_OK);
    CU_ASSERT_EQUAL(c.levels, numacoll_levels_parse("l3,numa"));
    CU_ASSERT_EQUAL(numacoll_config_set(&c, "queue_depth", "0", NULL, 0),
                    NUMACOLL_OK); /* unset: the table's */
    CU_ASSERT_EQUAL(numacoll_config_set(&c, "wait_policy", "2", NULL, 0),
                    NUMACOLL_OK);
    CU_ASSERT_EQUAL(c.wait_policy, 2);
    const numacoll_config_t before = c;
    static const char *const bad[][2] = {
        {"frag_size", "63"},     {"frag_size", "1g"},  {"frag_size", "64q"},
        {"radix", "1"},          {"radix", "-3"},      {"tree", "bogus"},
        {"levels", "l3,l3"},     {"verbose", "abc"},   {"verbose", ""},
        {"spin_count", "99999999999999999999"},        {"bogus", "1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        msg[0] = '\0';
        CU_ASSERT_EQUAL(numacoll_config_set(&c, bad[i][0], bad[i][1], msg,
                                            sizeof msg), NUMACOLL_ERR_ARG);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, bad[i][0]));
    }
    CU_ASSERT_EQUAL(memcmp(&c, &before, sizeof c), 0);
    CU_ASSERT_EQUAL(numacoll_config_check(&c, msg, sizeof msg), NUMACOLL_OK);
    CU_ASSERT_EQUAL(numacoll_config_set(NULL, "tree", "1", NULL, 0),
                    NUMACOLL_ERR_ARG);
}

static void test_alg_table(void)
{
    for (int i = 0; i < NC_ALG_COUNT; i++) {
        CU_ASSERT_EQUAL(nc__algs[i].id, i);
        CU_ASSERT_EQUAL(nc__alg_find(nc__algs[i].coll, nc__algs[i].name), i);
        CU_ASSERT(strlen(nc__algs[i].desc) > 10);
    }
    CU_ASSERT_EQUAL(nc__alg_find(NC_COLL_BCAST, "pipelined"),
                    NC_ALG_BCAST_PIPELINED);
    CU_ASSERT_EQUAL(nc__alg_find(NC_COLL_BCAST, "tree"), -1);
    CU_ASSERT_STRING_EQUAL(nc__coll_name(NC_COLL_BARRIER), "barrier");
}

/* ---- struct_size: a config that can grow ------------------------------ */

static void test_size_set(void)
{
    numacoll_config_t c;
    memset(&c, 0xa5, sizeof c);
    numacoll_config_init(&c);
    CU_ASSERT_EQUAL(c.struct_size, sizeof c);
    CU_ASSERT_EQUAL(numacoll_config_check(&c, NULL, 0), NUMACOLL_OK);
    numacoll_config_t copy = c;         /* `=` keeps it valid */
    CU_ASSERT_EQUAL(numacoll_config_check(&copy, NULL, 0), NUMACOLL_OK);
}

/* A caller built against an older, smaller struct passes its own sizeof:
 * the library must write nothing past it. */
static void test_init_stays_inside(void)
{
    unsigned char buf[sizeof(numacoll_config_t) + 64];
    for (size_t size = 0; size <= sizeof(numacoll_config_t); size += 8) {
        memset(buf, 0xa5, sizeof buf);
        numacoll_config_init_size((numacoll_config_t *)(void *)buf, size);
        size_t touched = 0;
        for (size_t i = 0; i < sizeof buf; i++)
            if (buf[i] != 0xa5)
                touched = i + 1;
        CU_ASSERT(touched <= size);
        if (touched > size)
            fprintf(stderr, "init with size %zu wrote byte %zu\n", size,
                    touched - 1);
    }
    numacoll_config_init_size(NULL, sizeof(numacoll_config_t)); /* no crash */
}

/* Uninitialised, zeroed, or from a newer header: refused, and said why. */
static void test_size_refused(void)
{
    char msg[256];
    numacoll_config_t c;
    memset(&c, 0, sizeof c);
    CU_ASSERT_EQUAL(numacoll_config_check(&c, msg, sizeof msg),
                    NUMACOLL_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "not filled by numacoll_config_init"));

    numacoll_config_init(&c);
    c.struct_size = sizeof c - 4;       /* no layout the struct has had */
    CU_ASSERT_EQUAL(numacoll_config_check(&c, msg, sizeof msg),
                    NUMACOLL_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "struct_size"));

    /* a caller with a larger struct, from a later numacoll.h */
    unsigned char big[sizeof(numacoll_config_t) + 16];
    numacoll_config_init_size((numacoll_config_t *)(void *)big, sizeof big);
    CU_ASSERT_EQUAL(((numacoll_config_t *)(void *)big)->struct_size,
                    sizeof big);
    CU_ASSERT_EQUAL(numacoll_config_check((numacoll_config_t *)(void *)big,
                                          msg, sizeof msg),
                    NUMACOLL_ERR_ARG);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "newer numacoll.h"));
}

/* The library's copy: defaults first, then the caller's fields. */
static void test_import(void)
{
    char msg[256] = "";
    numacoll_config_t in, out;
    numacoll_config_init(&in);
    in.radix = 4;
    in.tuning_text = "bcast p=1 size=0 alg=inline tree=kary k=2\n";
    CU_ASSERT_EQUAL(nc__config_import(&out, &in, msg, sizeof msg),
                    NUMACOLL_OK);
    CU_ASSERT_EQUAL(out.radix, 4);
    CU_ASSERT_PTR_EQUAL(out.tuning_text, in.tuning_text);
    CU_ASSERT_EQUAL(out.struct_size, sizeof out);

    CU_ASSERT_EQUAL(nc__config_import(&out, NULL, msg, sizeof msg),
                    NUMACOLL_OK);
    CU_ASSERT_EQUAL(out.spin_count, 1000);      /* the defaults */

    in.struct_size = 3;
    CU_ASSERT_EQUAL(nc__config_import(&out, &in, msg, sizeof msg),
                    NUMACOLL_ERR_ARG);
    CU_ASSERT_EQUAL(out.radix, 0);              /* defaults, not half-read */
}

static int self_gather(const void *send, void *recv, size_t n, void *ctx)
{
    (void)ctx;
    memcpy(recv, send, n);
    return 0;
}

/* Team creation checks the size too, and says why on every rank. */
static void test_team_refuses_size(void)
{
    numacoll_bootstrap_t b = {0, 1, self_gather, NULL};
    numacoll_config_t c;
    memset(&c, 0, sizeof c);
    numacoll_team_t *t = NULL;
    CU_ASSERT_EQUAL(numacoll_team_create(&b, &c, &t), NUMACOLL_ERR_ARG);
    CU_ASSERT_PTR_NULL(t);
    CU_ASSERT_PTR_NOT_NULL(strstr(numacoll_team_create_error(),
                                  "struct_size"));
}

/* Ranks whose shape parameters differ (rank 1's single_copy, frag_size
 * or barrier_radix) get NUMACOLL_ERR_ARG on every rank, saying which rank;
 * a local one (spin_count, verbose) may differ. */
static int shape_body(const numacoll_bootstrap_t *b, void *arg)
{
    const int which = *(const int *)arg;
    numacoll_config_t c;
    numacoll_config_init(&c);
    c.verbose = 0;
    if (b->rank == 1) {
        if (which == 0)
            c.single_copy = 0;
        else if (which == 1)
            c.frag_size = 4096;
        else if (which == 2)
            c.barrier_radix = 3;
        else
            c.spin_count = 7, c.verbose = 0;
    }
    numacoll_team_t *t = NULL;
    int rc = numacoll_team_create(b, &c, &t);
    if (which == 3) {
        numacoll_team_destroy(t);
        return rc == NUMACOLL_OK ? 0 : 1;
    }
    if (rc != NUMACOLL_ERR_ARG || t)
        return 2;
    return strstr(numacoll_team_create_error(),
                  "rank 1 has other shape parameters") ? 0 : 3;
}

static void test_shape_agreed(void)
{
    for (int which = 0; which < 4; which++)
        CU_ASSERT_EQUAL(nct_run(3, shape_body, &which), 0);
    CU_ASSERT(numacoll_config_param_is_local("spin_count"));
    CU_ASSERT(numacoll_config_param_is_local("pu"));
    CU_ASSERT(!numacoll_config_param_is_local("frag_size"));
    CU_ASSERT(!numacoll_config_param_is_local("single_copy"));
    CU_ASSERT(!numacoll_config_param_is_local("no_such"));
    CU_ASSERT(!numacoll_config_param_is_local(NULL));
}

int nct_register_config(void)
{
    static const nct_test_t tests[] = {
        {"defaults are documented and valid", test_defaults},
        {"invalid values name their parameter", test_invalid},
        {"status texts", test_strerror},
        {"tree names round trip", test_tree_names},
        {"parameters.md lists every parameter", test_docs_table},
        {"algorithm table is consistent", test_alg_table},
        {"config_set parses, checks, refuses", test_config_set},
        {"init sets struct_size", test_size_set},
        {"init writes nothing past the caller's size", test_init_stays_inside},
        {"unknown struct_size refused with a reason", test_size_refused},
        {"import: defaults, then the caller's fields", test_import},
        {"team creation refuses an unknown struct_size",
         test_team_refuses_size},
        {"shape parameters must be equal on every rank", test_shape_agreed},
        {NULL, NULL},
    };
    return nct_add_suite("config", tests);
}
