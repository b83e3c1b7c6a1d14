/*
 * libFuzzer target for the tuning table (`make fuzz`, tune/tune.mk): any
 * bytes go through the parser, and the properties the rest of numacoll
 * relies on are checked, aborting (a libFuzzer crash) when one fails:
 *  - a rejected input leaves the table empty and says why, one message per
 *    line; an accepted one says nothing; a short message buffer changes the
 *    count of problems, never the outcome, and stays NUL-terminated;
 *  - an accepted table, written and parsed again, gives equal rules;
 *  - its resolution for a few team shapes (over= verdicts 0 and 1)
 *    covers every size exactly once, and a lookup at each boundary finds
 *    the entry it should (a rule matching the shape, decline= included).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune/table.h"

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_table: %s:%d: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                           \
        }                                                                      \
    } while (0)

static int same_choice(const nc__choice_t *a, const nc__choice_t *b)
{
    return a->alg == b->alg && a->f == b->f && a->s == b->s && a->q == b->q &&
           a->tree == b->tree && a->k == b->k && a->copy == b->copy &&
           a->ku == b->ku && a->relay == b->relay &&
           a->decline == b->decline && memcmp(a->lt, b->lt, sizeof a->lt) == 0;
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
           a->over == b->over && same_choice(&a->ch, &b->ch) && a->gain == b->gain;
}

static void check_round_trip(const nc__tune_table_t *t)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CHECK(f);
    CHECK(nc__tune_write(t, "fuzz\n\nround trip", f) == 0);
    CHECK(fclose(f) == 0);
    nc__tune_table_t u;
    static char errs[4096];
    int n = nc__tune_parse(text, len, "written", &u, errs, sizeof errs);
    if (n != 0)
        fprintf(stderr, "fuzz_table: written table refused:\n%s%s", text, errs);
    CHECK(n == 0);
    CHECK(u.n == t->n);
    for (int i = 0; i < t->n; i++)
        CHECK(same_rule(&t->rules[i], &u.rules[i]));
    nc__tune_free(&u);
    free(text);

    /* a short buffer still gets a NUL and the length it needed */
    for (int i = 0; i < t->n && i < 8; i++) {
        char big[512], small[7];
        int need = nc__tune_format_rule(&t->rules[i], big, sizeof big);
        CHECK(need > 0 && (size_t)need == strlen(big));
        CHECK(nc__tune_format_rule(&t->rules[i], small, sizeof small) == need);
        CHECK(strlen(small) == sizeof small - 1 &&
              memcmp(small, big, sizeof small - 1) == 0);
    }
}

static void check_resolution(const nc__tune_table_t *t, unsigned p,
                             unsigned nodes, unsigned ppn, unsigned over)
{
    nc__tune_team_t tt;
    nc__tune_shape_t sh = {.p = p, .nodes = nodes, .ppn = ppn, .over = over};
    CHECK(nc__tune_resolve_shape(t, &sh, &tt) == 0);
    for (int c = 0; c < NC_COLL_COUNT; c++) {
        const nc__tune_entry_t *e = tt.e[c];
        /* p >= 1: the built-in table covers everything, so every team
         * does, the table's rules first */
        CHECK(tt.n[c] >= 1);
        CHECK(e[0].lo == 0 && e[tt.n[c] - 1].hi == SIZE_MAX);
        for (int i = 0; i < tt.n[c]; i++) {
            CHECK(e[i].lo <= e[i].hi);
            if (i)
                CHECK(e[i].lo == e[i - 1].hi + 1);
            CHECK(nc__algs[e[i].ch.alg].coll == (nc__coll_t)c);
            CHECK(e[i].hi <= nc__algs[e[i].ch.alg].max_bytes);
            CHECK(nc__tune_lookup(&tt, (nc__coll_t)c, e[i].lo) == &e[i]);
            CHECK(nc__tune_lookup(&tt, (nc__coll_t)c, e[i].hi) == &e[i]);
            if (!e[i].builtin) {
                /* the rule of that line matches the team and holds the
                 * range */
                const nc__tune_rule_t *r = NULL;
                for (int j = 0; j < t->n; j++)
                    if (t->rules[j].line == e[i].line)
                        r = &t->rules[j];
                CHECK(r && (int)r->coll == c && r->size_lo <= e[i].lo &&
                      e[i].hi <= r->size_hi && p >= r->p_lo && p <= r->p_hi &&
                      nodes >= r->nodes_lo && nodes <= r->nodes_hi &&
                      ppn >= r->ppn_lo && ppn <= r->ppn_hi &&
                      (r->over == 0 || (r->over >> over & 1u)) &&
                      same_choice(&r->ch, &e[i].ch));
            }
        }
    }
    CHECK(nc__tune_lookup(&tt, NC_COLL_COUNT, 0) == NULL);
    nc__tune_team_free(&tt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char errs[1 << 16];
    nc__tune_table_t t;
    int n = nc__tune_parse((const char *)data, size, "fuzz", &t, errs,
                           sizeof errs);
    CHECK(n >= 0);
    CHECK(memchr(errs, '\0', sizeof errs) != NULL);
    if (n) {
        CHECK(t.n == 0 && t.rules == NULL);
        CHECK(errs[0] != '\0' && errs[strlen(errs) - 1] == '\n');
        CHECK(strncmp(errs, "fuzz:", 5) == 0);
    } else
        CHECK(errs[0] == '\0');

    /* the buffer's size changes the text, never the verdict */
    char tiny[48];
    nc__tune_table_t t2;
    CHECK(nc__tune_parse((const char *)data, size, "fuzz", &t2, tiny,
                         sizeof tiny) == n);
    CHECK(memchr(tiny, '\0', sizeof tiny) != NULL);
    CHECK(t2.n == t.n);
    nc__tune_free(&t2);
    CHECK(nc__tune_parse((const char *)data, size, "fuzz", &t2, NULL, 0) == n);
    nc__tune_free(&t2);

    if (n == 0) {
        check_round_trip(&t);
        /* team shapes from the input's first bytes, and the usual ones */
        unsigned p = 1, nodes = 1, ppn = 1;
        if (size >= 3) {
            p = 1u + data[0] % 64u;
            nodes = 1u + data[1] % p;
            ppn = (p + nodes - 1) / nodes + data[2] % 4u;
            if (ppn > p - nodes + 1)
                ppn = p - nodes + 1;
        }
        /* and both oversubscription verdicts (over=) */
        check_resolution(&t, p, nodes, ppn, size >= 4 ? data[3] & 1u : 0);
        check_resolution(&t, 1, 1, 1, 0);
        check_resolution(&t, 64, 2, 32, 1);
        check_resolution(&t, UINT_MAX, 1, UINT_MAX, 0);
    }
    nc__tune_free(&t);
    return 0;
}
