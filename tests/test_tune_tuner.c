/*
 * Suite "tune_tuner": numacoll-tune's own pieces (tools/tune/) for the
 * collectives it tunes from the algorithm table alone (Allgather, Gather,
 * Scatter, Alltoall, Reduce_scatter, Scan, Exscan), and its output in use.
 *  candidates  every algorithm of every tuned collective is the built-in
 *              choice or a candidate at some size it carries (so an
 *              algorithm added to coll/algs.h is measured), and every
 *              candidate's one-rule table parses and resolves to it;
 *  table       measured points (winners, ties, an inline winner beside a
 *              staged one) to rules: written, parsed back to equal rules,
 *              every point's size resolves to its winner, the inline rule
 *              ends at the inline cap;
 *  team        a team built from that table chooses every rule's choice
 *              and runs every tuned collective byte for byte as a
 *              reference computes it;
 *  run         a short real run (numacoll-tune --quick --ops <the seven>
 *              -p 2, v-form names included): its table loads, has rules
 *              for each, and a team under it chooses them and computes
 *              exactly; --ops refuses what it cannot tune with the list.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/team.h"
#include "nct.h"
#include "numacoll.h"
#include "tools/tune/tuner.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define TUNER "build/numacoll-tune"

/* text parsed into *t; the problems printed with the text; their count. */
static int parse_said(const char *text, const char *name,
                      nc__tune_table_t *t)
{
    char errs[2048] = "";
    int ne = nc__tune_parse(text, strlen(text), name, t, errs, sizeof errs);
    if (ne)
        fprintf(stderr, "\n%s%s\n", text, errs);
    return ne;
}

/* ---- candidates ---------------------------------------------------------- */

static size_t round_to(size_t m, size_t elem)
{
    return elem > 1 ? (m + elem - 1) / elem * elem : m;
}

/* strict: every algorithm must be a candidate somewhere, not only the
 * default (teams whose trees all differ by radix). */
static void cands_at(int p, unsigned nodes, int strict)
{
    numacoll_locality_t loc[8];
    memset(loc, 0, sizeof loc);
    for (int r = 0; r < p; r++) {
        loc[r].pu = loc[r].core = r;
        loc[r].numa = (int)((unsigned)r * nodes / (unsigned)p);
    }
    unsigned ppn = (unsigned)((p + (int)nodes - 1) / (int)nodes);
    nc__model_t md;
    tn_model_assumed(&md);
    tn_ctx_t x;
    CU_ASSERT_EQUAL_FATAL(tn_ctx_init(&x, p, nodes, ppn, loc, &md, 0), 0);
    nc__tune_team_t bt;
    CU_ASSERT_EQUAL_FATAL(nc__tune_resolve(nc__tune_builtin(), (unsigned)p,
                                           nodes, ppn, &bt), 0);
    static const size_t sizes[] = {8, 64, KIB, 4 * KIB, 64 * KIB, MIB,
                                   4 * MIB};
    for (int op = 0; op < NCB_OP_COUNT; op++) {
        if (!(TN_OPS_ALL & 1u << op))
            continue;
        const int coll = tn_coll_of(op);
        CU_ASSERT_FATAL(coll >= 0);
        CU_ASSERT_STRING_EQUAL(nc__coll_name((nc__coll_t)coll),
                               ncb_ops[op].name);
        /* seen: the default or a candidate; cand: a candidate (at p = 2
         * every tree is one edge, at p = 4 on two nodes every Barrier
         * radix gives one tree, so Barrier has none there) */
        int seen[NC_ALG_COUNT] = {0}, cand[NC_ALG_COUNT] = {0};
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            size_t m = (ncb_ops[op].flags & NCB_SIZED)
                           ? round_to(sizes[i], ncb_ops[op].elem) : 0;
            const nc__choice_t def = nc__tune_lookup(&bt, (nc__coll_t)coll,
                                                     m)->ch;
            seen[def.alg] = 1;
            tn_cand_t c[TN_MAX_CANDS];
            int n = tn_cands(&x, op, m, &def, TN_MAX_CANDS, c);
            CU_ASSERT(n >= 0 && n <= TN_MAX_CANDS);
            /* a run's cap: the table-tuned collectives measure every
             * other algorithm that carries m (up to two besides the copy
             * variants, which take at most half) */
            tn_cand_t c2[TN_MAX_CANDS];
            int n2 = tn_cands(&x, op, m, &def, tn_op_cap(op, 0), c2);
            CU_ASSERT(n2 <= tn_op_cap(op, 0));
            int others = 0;
            for (int a = 0; a < NC_ALG_COUNT; a++)
                others += (int)nc__algs[a].coll == coll && a != (int)def.alg &&
                          m <= nc__algs[a].max_bytes;
            for (int a = 0; a < NC_ALG_COUNT && tn_op_generic(op) &&
                            others <= tn_op_cap(op, 0) / 2; a++) {
                if ((int)nc__algs[a].coll != coll || a == (int)def.alg ||
                    m > nc__algs[a].max_bytes)
                    continue;
                int in = 0;
                for (int j = 0; j < n2; j++)
                    in |= (int)c2[j].ch.alg == a;
                if (!in)
                    fprintf(stderr, "\n  p=%d %s %zu: %s is not among a "
                            "run's candidates\n", p, ncb_ops[op].name, m,
                            nc__algs[a].name);
                CU_ASSERT(in);
            }
            /* a team without single copy: no cma candidate (it would
             * run as copy-in/copy-out, which others measure); its default
             * is no cma rule either (the tuner's nc__tune_no_cma) */
            if (!nc__alg_single_copy(def.alg)) {
                x.cma_ok = 0;
                tn_cand_t c3[TN_MAX_CANDS];
                int n3 = tn_cands(&x, op, m, &def, TN_MAX_CANDS, c3);
                for (int j = 0; j < n3; j++)
                    CU_ASSERT(!nc__alg_single_copy(c3[j].ch.alg));
                x.cma_ok = 1;
            }
            for (int j = 0; j < n; j++) {
                const nc__choice_t *ch = &c[j].ch;
                seen[ch->alg] = cand[ch->alg] = 1;
                CU_ASSERT_EQUAL(nc__algs[ch->alg].coll, (nc__coll_t)coll);
                CU_ASSERT(m <= nc__algs[ch->alg].max_bytes);
                CU_ASSERT(!tn_choice_same(&x, ch, &def));
                for (int k = 0; k < j; k++)
                    CU_ASSERT(!tn_choice_same(&x, ch, &c[k].ch));
                /* the candidate's rule parses and resolves to it */
                char text[256];
                tn_cand_text(coll, ch, text, sizeof text);
                nc__tune_table_t t;
                int ne = parse_said(text, "cand", &t);
                CU_ASSERT_EQUAL(ne, 0);
                nc__tune_team_t tt;
                if (ne == 0 && nc__tune_resolve(&t, (unsigned)p, nodes, ppn,
                                                &tt) == 0) {
                    CU_ASSERT(tn_choice_same(
                        &x, &nc__tune_lookup(&tt, (nc__coll_t)coll, m)->ch,
                        ch));
                    nc__tune_team_free(&tt);
                }
                nc__tune_free(&t);
            }
        }
        for (int a = 0; a < NC_ALG_COUNT; a++)
            if ((int)nc__algs[a].coll == coll &&
                (!seen[a] || (strict && !cand[a]))) {
                fprintf(stderr, "\n  p=%d %s: algorithm %s is never a "
                        "candidate\n", p, ncb_ops[op].name, nc__algs[a].name);
                CU_FAIL("an algorithm of a tuned collective is never "
                        "measured");
            }
    }
    /* the v forms tune through their base collective */
    CU_ASSERT_EQUAL(tn_coll_of(NCB_OP_ALLGATHERV), NC_COLL_ALLGATHER);
    CU_ASSERT_EQUAL(tn_coll_of(NCB_OP_ALLTOALLV), NC_COLL_ALLTOALL);
    CU_ASSERT(!(TN_OPS_ALL & 1u << NCB_OP_ALLGATHERV));
    nc__tune_team_free(&bt);
    tn_ctx_fini(&x);
}

static void test_cands(void)
{
    cands_at(2, 1, 0);
    cands_at(4, 2, 0);
    cands_at(7, 1, 1);
}

/* ---- points to rules ------------------------------------------------------ */

typedef struct spec {
    int op;
    size_t m;
    nc__choice_t win;   /* alg < 0 as NC_ALG_COUNT: the default stays */
} spec_t;

#define KEEP {.alg = NC_ALG_COUNT}
#define STAGED(coll, F, S, C)                                                 \
    {.alg = NC_ALG_##coll##_STAGED, .f = (F), .s = (S), .tree = -1,          \
     .copy = (C)}

/* Winners and ties as a run could measure them at p = 2. */
static const spec_t specs[] = {
    {NCB_OP_ALLGATHER, 8, KEEP},
    {NCB_OP_ALLGATHER, KIB, {.alg = NC_ALG_ALLGATHER_INLINE, .tree = -1}},
    {NCB_OP_ALLGATHER, 16 * KIB, STAGED(ALLGATHER, 16 * KIB, 2, NC_COPY_LIBC)},
    {NCB_OP_GATHER, 64, KEEP},
    {NCB_OP_GATHER, 256 * KIB, STAGED(GATHER, 512 * KIB, 8, NC_COPY_AUTO)},
    {NCB_OP_SCATTER, 4 * KIB, STAGED(SCATTER, 64 * KIB, 2, NC_COPY_AUTO)},
    {NCB_OP_ALLTOALL, 64, STAGED(ALLTOALL, 16 * KIB, 2, NC_COPY_AUTO)},
    {NCB_OP_ALLTOALL, 256 * KIB, KEEP},
    {NCB_OP_REDUCE_SCATTER, 4 * KIB,
     STAGED(REDUCE_SCATTER, 16 * KIB, 8, NC_COPY_LIBC)},
    {NCB_OP_SCAN, 64 * KIB, STAGED(SCAN, 64 * KIB, 2, NC_COPY_AUTO)},
    {NCB_OP_EXSCAN, 4 * KIB, STAGED(EXSCAN, 16 * KIB, 4, NC_COPY_AUTO)},
};
#define NSPECS ((int)(sizeof specs / sizeof specs[0]))

/* The table tn_build_table makes of specs at p = 2, written as the tuner
 * writes it (malloc'd text), and the decided report (*rep, malloc'd). */
static char *spec_table(tn_report_t **rep)
{
    tn_report_t *r = calloc(1, sizeof *r);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    r->p = 2;
    r->nodes = 1;
    r->ppn = 2;
    nc__tune_team_t bt;
    CU_ASSERT_EQUAL_FATAL(nc__tune_resolve(nc__tune_builtin(), 2, 1, 2, &bt),
                          0);
    for (int i = 0; i < NSPECS; i++) {
        tn_point_t *pt = &r->pt[r->npoints++];
        pt->op = specs[i].op;
        pt->m = specs[i].m;
        pt->status = TN_PT_MEASURED;
        pt->ncand = 1;
        pt->def = nc__tune_lookup(&bt, (nc__coll_t)tn_coll_of(pt->op),
                                  pt->m)->ch;
        pt->t_def[0] = pt->t_def[1] = 1e-6;
        pt->nalt = 1;
        if (specs[i].win.alg == NC_ALG_COUNT) {
            /* a tie: faster by less than the floor */
            pt->alt[0] = pt->def;
            pt->alt[0].copy = NC_COPY_LIBC;
            pt->t_alt[0] = 0.99e-6;
        } else {
            pt->alt[0] = specs[i].win;
            pt->t_alt[0] = 0.5e-6;
        }
    }
    nc__tune_team_free(&bt);
    tn_decide(r);
    nc__tune_table_t tab;
    CU_ASSERT_EQUAL_FATAL(tn_build_table((const tn_report_t *const *)&r, 1,
                                         &tab), 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(nc__tune_write(&tab, "made by test_tune_tuner.c", f), 0);
    fclose(f);
    nc__tune_free(&tab);
    *rep = r;
    return text;
}

static int same_choice(const nc__choice_t *a, const nc__choice_t *b)
{
    return tn_choice_same(NULL, a, b);
}

static void test_table(void)
{
    tn_report_t *r;
    char *text = spec_table(&r);
    nc__tune_table_t t;
    CU_ASSERT_EQUAL_FATAL(parse_said(text, "written", &t), 0);
    /* the tuner's own table again, from the report: equal rules */
    nc__tune_table_t direct;
    CU_ASSERT_EQUAL_FATAL(tn_build_table((const tn_report_t *const *)&r, 1,
                                         &direct), 0);
    CU_ASSERT_EQUAL(t.n, direct.n);
    for (int i = 0; i < t.n && i < direct.n; i++) {
        CU_ASSERT_EQUAL(t.rules[i].coll, direct.rules[i].coll);
        CU_ASSERT_EQUAL(t.rules[i].size_lo, direct.rules[i].size_lo);
        CU_ASSERT_EQUAL(t.rules[i].size_hi, direct.rules[i].size_hi);
        CU_ASSERT(same_choice(&t.rules[i].ch, &direct.rules[i].ch));
        CU_ASSERT(fabs(t.rules[i].gain - direct.rules[i].gain) <
                  0.01 * direct.rules[i].gain);
    }
    /* every tuned collective has rules, and every point's size resolves
     * to its winner (the built-in choice where it stayed) */
    int per[NC_COLL_COUNT] = {0};
    for (int i = 0; i < t.n; i++)
        per[t.rules[i].coll]++;
    nc__tune_team_t tt;
    CU_ASSERT_EQUAL_FATAL(nc__tune_resolve(&t, 2, 1, 2, &tt), 0);
    for (int i = 0; i < NSPECS; i++) {
        const int coll = tn_coll_of(specs[i].op);
        CU_ASSERT(per[coll] > 0);
        const tn_point_t *pt = &r->pt[i];
        CU_ASSERT_EQUAL(pt->kept_default, specs[i].win.alg == NC_ALG_COUNT);
        CU_ASSERT(same_choice(&pt->win, specs[i].win.alg == NC_ALG_COUNT
                                            ? &pt->def : &specs[i].win));
        const nc__tune_entry_t *e =
            nc__tune_lookup(&tt, (nc__coll_t)coll, specs[i].m);
        CU_ASSERT(same_choice(&e->ch, &pt->win));
        CU_ASSERT_EQUAL(e->builtin, 0);
    }
    /* the inline Allgather at 1 KiB reaches the inline cap, no further */
    const size_t cap = nc__algs[NC_ALG_ALLGATHER_INLINE].max_bytes;
    CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_ALLGATHER, cap)->ch.alg,
                    NC_ALG_ALLGATHER_INLINE);
    CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_ALLGATHER, cap + 1)->ch.alg,
                    NC_ALG_ALLGATHER_STAGED);
    CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_ALLGATHER, cap + 1)->ch.copy,
                    NC_COPY_LIBC);
    /* a tie keeps the built-in rules, split as they split: Allgather's
     * inline then staged at 8 bytes' neighbours */
    CU_ASSERT_EQUAL(nc__tune_lookup(&tt, NC_COLL_ALLGATHER, 8)->ch.alg,
                    NC_ALG_ALLGATHER_INLINE);
    nc__tune_team_free(&tt);
    /* unbounded, the smallest point's choice reaches down to 0 and the
     * largest's up to every size; a --sizes range keeps every rule inside
     * it (the built-in rules beyond) */
    int below = 0, above = 0;
    for (int i = 0; i < direct.n; i++) {
        below += direct.rules[i].size_lo == 0;
        above += direct.rules[i].size_hi == NC_TUNE_ANY_Z;
    }
    CU_ASSERT(below > 0 && above > 0);
    nc__tune_free(&direct);
    r->rule_bounded = 1, r->rule_lo = 8, r->rule_hi = 256 * KIB;   /* specs */
    CU_ASSERT_EQUAL_FATAL(tn_build_table((const tn_report_t *const *)&r, 1,
                                         &direct), 0);
    CU_ASSERT(direct.n > 0);
    for (int i = 0; i < direct.n; i++) {
        CU_ASSERT(direct.rules[i].size_lo >= 8);
        CU_ASSERT(direct.rules[i].size_hi <= 256 * KIB);
    }
    CU_ASSERT_EQUAL_FATAL(nc__tune_resolve(&direct, 2, 1, 2, &tt), 0);
    for (int i = 0; i < NSPECS; i++) {
        const int coll = tn_coll_of(specs[i].op);
        const nc__tune_entry_t *e =
            nc__tune_lookup(&tt, (nc__coll_t)coll, specs[i].m);
        CU_ASSERT(same_choice(&e->ch, &r->pt[i].win));
        CU_ASSERT_EQUAL(e->builtin, 0);
        /* beyond the range: built-in */
        CU_ASSERT_EQUAL(nc__tune_lookup(&tt, (nc__coll_t)coll, 7)->builtin, 1);
        CU_ASSERT_EQUAL(
            nc__tune_lookup(&tt, (nc__coll_t)coll, 256 * KIB + 1)->builtin, 1);
    }
    nc__tune_team_free(&tt);
    nc__tune_free(&direct);
    nc__tune_free(&t);
    free(text);
    free(r);
    /* the fuzz seed of a real run's rules (tests/tune/) loads */
    char errs[1024] = "";
    int ne = nc__tune_load("tests/tune/tuned-gathers.txt", &t, errs,
                           sizeof errs);
    if (ne)
        fprintf(stderr, "\n%s\n", errs);
    CU_ASSERT_EQUAL(ne, 0);
    CU_ASSERT(t.n >= 7);
    nc__tune_free(&t);
}

/* ---- a team under a tuned table -------------------------------------------- */

static uint32_t val(int r, size_t i, unsigned call)
{
    return (uint32_t)r * 2654435761u + (uint32_t)i * 40503u + call * 7u + 1;
}

static unsigned char byte(int src, int dst, size_t i, unsigned call)
{
    return (unsigned char)(val(src * 64 + dst, i, call) >> 13);
}

/* One call of op at m bytes (the table's size: a block for the gathers,
 * the vector for the reductions) on t, checked against its reference;
 * 0 or a failure code. */
static int run_one(numacoll_team_t *t, int me, int p, int op, size_t m,
                   unsigned call)
{
    const int root = (int)(call % (unsigned)p);
    size_t nb = (size_t)p * m, cnt = m / 4;
    unsigned char *s = malloc(nb + 16), *rv = malloc(nb + 16);
    uint32_t *sv = (uint32_t *)(void *)s, *rr = (uint32_t *)(void *)rv;
    if (!s || !rv) {
        free(s);
        free(rv);
        return 9;
    }
    memset(rv, 0xEE, nb + 16);
    int rc = NUMACOLL_OK, bad = 0;
    switch (op) {
    case NCB_OP_ALLGATHER:
    case NCB_OP_GATHER:
        for (size_t i = 0; i < m; i++)
            s[i] = byte(me, 0, i, call);
        rc = op == NCB_OP_GATHER ? numacoll_gather(t, s, rv, m, root)
                                 : numacoll_allgather(t, s, rv, m);
        if (op == NCB_OP_ALLGATHER || me == root)
            for (int j = 0; j < p && !bad; j++)
                for (size_t i = 0; i < m && !bad; i++)
                    bad = rv[(size_t)j * m + i] != byte(j, 0, i, call);
        break;
    case NCB_OP_SCATTER:
        for (int j = 0; j < p; j++)
            for (size_t i = 0; i < m; i++)
                s[(size_t)j * m + i] = byte(me, j, i, call);
        rc = numacoll_scatter(t, s, rv, m, root);
        for (size_t i = 0; i < m && !bad; i++)
            bad = rv[i] != byte(root, me, i, call);
        break;
    case NCB_OP_ALLTOALL:
        for (int j = 0; j < p; j++)
            for (size_t i = 0; i < m; i++)
                s[(size_t)j * m + i] = byte(me, j, i, call);
        rc = numacoll_alltoall(t, s, rv, m);
        for (int j = 0; j < p && !bad; j++)
            for (size_t i = 0; i < m && !bad; i++)
                bad = rv[(size_t)j * m + i] != byte(j, me, i, call);
        break;
    case NCB_OP_REDUCE_SCATTER: {
        const size_t rc_n = cnt / (size_t)p;   /* elements per block */
        for (size_t i = 0; i < rc_n * (size_t)p; i++)
            sv[i] = val(me, i, call);
        rc = numacoll_reduce_scatter_block(t, s, rv, rc_n,
                                           NUMACOLL_DTYPE_UINT32,
                                           NUMACOLL_OP_SUM);
        for (size_t i = 0; i < rc_n && !bad; i++) {
            uint32_t want = 0;
            for (int j = 0; j < p; j++)
                want += val(j, (size_t)me * rc_n + i, call);
            bad = rr[i] != want;
        }
        break;
    }
    default: {   /* Scan, Exscan */
        const int ex = op == NCB_OP_EXSCAN;
        for (size_t i = 0; i < cnt; i++)
            sv[i] = val(me, i, call);
        rc = ex ? numacoll_exscan(t, s, rv, cnt, NUMACOLL_DTYPE_UINT32,
                                  NUMACOLL_OP_SUM)
                : numacoll_scan(t, s, rv, cnt, NUMACOLL_DTYPE_UINT32,
                                NUMACOLL_OP_SUM);
        for (size_t i = 0; i < cnt && !bad && (!ex || me > 0); i++) {
            uint32_t want = 0;
            for (int j = 0; j < (ex ? me : me + 1); j++)
                want += val(j, i, call);
            bad = rr[i] != want;
        }
    }
    }
    free(s);
    free(rv);
    if (rc != NUMACOLL_OK)
        return nct_say(t, me, ncb_ops[op].name, rc);
    if (bad)
        fprintf(stderr, "rank %d: %s of %zu bytes under a tuned table: wrong "
                "result\n", me, ncb_ops[op].name, m);
    return bad ? 3 : 0;
}

typedef struct team_arg {
    const char *text, *file;
} team_arg_t;

/* The sizes to run op at under entry e: its ends, within 1 MiB, whole
 * elements (p of them for Reduce_scatter). */
static int entry_sizes(const nc__tune_entry_t *e, int op, int p, size_t *out)
{
    const size_t unit = op == NCB_OP_REDUCE_SCATTER ? 4 * (size_t)p
                        : ncb_ops[op].elem;
    size_t v[2] = {e->lo, e->hi}, n = 0;
    for (int i = 0; i < 2; i++) {
        size_t m = v[i] > MIB ? MIB : v[i];
        m = m / unit * unit;
        if (m < e->lo)
            m += unit;   /* the smallest whole size inside */
        if (m <= e->hi && m <= MIB && m > 0 && (n == 0 || out[0] != m))
            out[n++] = m;
    }
    return (int)n;
}

static int team_body(const numacoll_bootstrap_t *b, void *arg)
{
    const team_arg_t *a = arg;
    numacoll_team_t *t;
    int rc = nct_team_tuned(b, a->text, a->file, &t);
    if (rc != NUMACOLL_OK)
        return nct_say(NULL, b->rank, "team", rc);
    const int me = b->rank, p = b->size;
    /* the table the team was given, as the team's rules */
    nc__tune_table_t tab;
    char errs[1024];
    int ne = a->file ? nc__tune_load(a->file, &tab, errs, sizeof errs)
                     : nc__tune_parse(a->text, strlen(a->text), "text", &tab,
                                      errs, sizeof errs);
    int bad = ne ? 7 : 0;
    for (int i = 0; i < tab.n && !bad; i++) {
        const nc__tune_rule_t *ru = &tab.rules[i];
        if ((unsigned)p < ru->p_lo || (unsigned)p > ru->p_hi)
            continue;
        const size_t at[2] = {ru->size_lo, ru->size_hi};
        for (int k = 0; k < 2 && !bad; k++)
            if (!same_choice(nc__team_choice(t, ru->coll, at[k]), &ru->ch)) {
                char want[128], got[128];
                tn_choice_str(&ru->ch, want, sizeof want);
                tn_choice_str(nc__team_choice(t, ru->coll, at[k]), got,
                              sizeof got);
                fprintf(stderr, "rank %d: %s at %zu: the team does not run "
                        "the table's line %d (%s) but %s\n", me,
                        nc__coll_name(ru->coll), at[k], ru->line, want, got);
                bad = 8;
            }
    }
    nc__tune_free(&tab);
    unsigned call = 0;
    for (int op = 0; op < NCB_OP_COUNT && !bad; op++) {
        if (!tn_op_generic(op))
            continue;
        const int coll = tn_coll_of(op);
        for (int i = 0; i < t->tune.n[coll] && !bad; i++) {
            size_t m[2];
            int n = entry_sizes(&t->tune.e[coll][i], op, p, m);
            for (int j = 0; j < n && !bad; j++)
                bad = run_one(t, me, p, op, m[j], call++);
        }
    }
    numacoll_team_destroy(t);
    return bad;
}

static void test_team(void)
{
    tn_report_t *r;
    char *text = spec_table(&r);
    team_arg_t a = {.text = text};
    CU_ASSERT_EQUAL(nct_run(2, team_body, &a), 0);
    /* its rules are for p = 1-*: a team of 3 takes them too */
    CU_ASSERT_EQUAL(nct_run(3, team_body, &a), 0);
    free(text);
    free(r);
}

/* ---- a real run ------------------------------------------------------------- */

static void test_run(void)
{
    if (access(TUNER, X_OK) != 0) {
        CU_FAIL("build/numacoll-tune is not built: run make first");
        return;
    }
    char out[8192], args[512];
    /* an operation it does not know: refused, with the list */
    CU_ASSERT_EQUAL(nct_tuner("--ops gather,bogus -o /dev/null", out, sizeof out),
                    2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "unknown operation 'bogus'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "reduce_scatter, scan, exscan"));

    char table[64] = "/tmp/nct-tune-tuner-XXXXXX";
    int fd = mkstemp(table);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    snprintf(args, sizeof args, "--quick --budget 40s -p 2 --ops allgatherv,"
             "gather,scatterv,alltoall,reduce_scatter_block,scan,exscan -o %s",
             table);
    int rc = nct_tuner(args, out, sizeof out);
    if (rc != 0)
        fprintf(stderr, "\n%s\n", out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    nc__tune_table_t t;
    char errs[2048];
    int ne = nc__tune_load(table, &t, errs, sizeof errs);
    if (ne)
        fprintf(stderr, "\n%s\n", errs);
    CU_ASSERT_EQUAL_FATAL(ne, 0);
    int per[NC_COLL_COUNT] = {0};
    for (int i = 0; i < t.n; i++)
        per[t.rules[i].coll]++;
    for (int op = 0; op < NCB_OP_COUNT; op++)
        if (tn_op_generic(op)) {
            if (!per[tn_coll_of(op)])
                fprintf(stderr, "\n  no %s rule in:\n%s\n", ncb_ops[op].name,
                        out);
            CU_ASSERT(per[tn_coll_of(op)] > 0);
        }
    /* only what was asked for */
    CU_ASSERT_EQUAL(per[NC_COLL_BCAST] + per[NC_COLL_REDUCE] +
                        per[NC_COLL_ALLREDUCE] + per[NC_COLL_BARRIER], 0);
    nc__tune_free(&t);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "gather "));
    team_arg_t a = {.file = table};
    CU_ASSERT_EQUAL(nct_run(2, team_body, &a), 0);
    unlink(table);
}

int nct_register_tune_tuner(void)
{
    static const nct_test_t tests[] = {
        {"every algorithm of every tuned collective is a candidate",
         test_cands},
        {"points to rules: written, parsed back, resolved", test_table},
        {"a team under a tuned table chooses its rules, computes exactly",
         test_team},
        {"a real --quick run on the gathers at p = 2", test_run},
        {NULL, NULL},
    };
    return nct_add_suite("tune_tuner", tests);
}
