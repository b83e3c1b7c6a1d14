/*
 * The candidates numacoll-tune measures at one size point: pure functions
 * of the fitted model, the team's shape (p and where the ranks sit) and
 * the size, so every rank computes the same list.
 *
 *  Bcast      the pipelined queue around the model's optimum: for every
 *             tree (kary, knomial, chain, flat, numa; k = 2, 4), queue
 *             budgets b = 256K, 1M, 4M and banks q = 1, 2, 4, the optimum
 *             f of nc__model_opt_rounded, half and twice it, each predicted
 *             with nc__model_bcast_time; the best predicted are kept. Up to
 *             the inline cap (NC_BCAST_INLINE_CAP, 8 KiB) also inline with
 *             every tree.
 *  Reduce     f = 16K, 64K, 128K, 512K (up to the first that holds the
 *             whole message), s = 2, 4, 8 (up to the first that holds every
 *             fragment), k = 2, 4; ranked by a rough pipeline estimate
 *             (the model has no Reduce formula).
 *  Allreduce  inline up to 8 KiB (its cap); reduce_bcast with the Reduce's
 *             candidates and rsag with its f and s, ranked alike, the two
 *             kinds taken in turn.
 *  Barrier    k = 2, 3, 4, 8.
 *  The others (Allgather, Gather, Scatter, Alltoall, Reduce_scatter, Scan,
 *             Exscan; the v forms run their base's rules): generated from
 *             the algorithm table, every algorithm of the collective that
 *             carries the size with the keys it takes (f and s as the
 *             Reduce's, q = 1, 2, tree = kary, flat, k = 2, 4), each
 *             algorithm's variants ranked by a rough staging estimate and
 *             the algorithms taken in turn, the default's own last. An
 *             algorithm added to coll/algs.h is a candidate with no change
 *             here.
 * Before all these, up to half the candidates (extra()): the default with
 * the C library's copy and with streaming stores (the table-only
 * collectives from 64 KiB on), and for Bcast single copy (alg=cma).
 * Single copy (alg=cma) only where the team takes it (x->cma_ok: permitted
 * and, with single_copy 1, timed fast enough): elsewhere its rules run
 * copy-in/copy-out, which the other candidates measure already.
 * Trees that coincide at this p (at p = 2 every tree is one edge) are one
 * candidate: shapes are compared by their parent arrays, from coll/tree.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/tree.h"
#include "tools/tune/tuner.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
/* Algorithms of one collective the generic lists take (NC_ALG_LIST has
 * at most three per collective so far). */
#define ALGS_PER_COLL 6

int tn_coll_of(int op)
{
    switch (op) {
    /* the core's v forms run their base collective's rules */
    case NCB_OP_ALLGATHERV: return NC_COLL_ALLGATHER;
    case NCB_OP_ALLTOALLV: return NC_COLL_ALLTOALL;
    default: break;
    }
    /* the other operations carry their collective's name */
    for (int c = 0; c < NC_COLL_COUNT && op >= 0 && op < NCB_OP_COUNT; c++)
        if (strcmp(nc__coll_name((nc__coll_t)c), ncb_ops[op].name) == 0)
            return c;
    return -1;
}

int tn_op_generic(int op)
{
    return op >= 0 && op < NCB_OP_COUNT && (TN_OPS_ALL & 1u << op) &&
           !(NCB_OPS_CLASSIC & 1u << op);
}

int tn_op_cap(int op, int quick)
{
    if (tn_op_generic(op))
        return quick ? TN_CANDS_GENERIC_QUICK : TN_CANDS_GENERIC_FULL;
    return quick ? TN_CANDS_QUICK : TN_CANDS_FULL;
}

const char *tn_size_str(size_t v, char *buf, size_t len)
{
    if (v >= MIB && v % MIB == 0)
        snprintf(buf, len, "%zuM", v / MIB);
    else if (v >= KIB && v % KIB == 0)
        snprintf(buf, len, "%zuK", v / KIB);
    else
        snprintf(buf, len, "%zu", v);
    return buf;
}

/* Zero what the algorithm does not take (tree: -1), as the table does. */
static void norm(nc__choice_t *ch)
{
    int a = (int)ch->alg;
    if (!nc__alg_takes(a, "f")) ch->f = 0;
    if (!nc__alg_takes(a, "s")) ch->s = 0;
    if (!nc__alg_takes(a, "q")) ch->q = 0;
    if (!nc__alg_takes(a, "tree")) ch->tree = -1;
    if (!nc__alg_takes(a, "k")) ch->k = 0;
}

void tn_choice_str(const nc__choice_t *ch, char *buf, size_t len)
{
    int a = (int)ch->alg;
    char z[24];
    int o = snprintf(buf, len, "alg=%s", nc__algs[a].name);
    if (nc__alg_takes(a, "f") && o >= 0 && (size_t)o < len)
        o += snprintf(buf + o, len - (size_t)o, " f=%s",
                      tn_size_str(ch->f, z, sizeof z));
    if (nc__alg_takes(a, "s") && o >= 0 && (size_t)o < len)
        o += snprintf(buf + o, len - (size_t)o, " s=%u", ch->s);
    if (nc__alg_takes(a, "q") && o >= 0 && (size_t)o < len)
        o += snprintf(buf + o, len - (size_t)o, " q=%u", ch->q);
    if (nc__alg_takes(a, "tree") && o >= 0 && (size_t)o < len) {
        const char *t = numacoll_tree_name((numacoll_tree_kind_t)ch->tree);
        o += snprintf(buf + o, len - (size_t)o, " tree=%s", t ? t : "?");
    }
    if (nc__alg_takes(a, "k") && o >= 0 && (size_t)o < len)
        o += snprintf(buf + o, len - (size_t)o, " k=%u", ch->k);
    if (ch->relay && o >= 0 && (size_t)o < len)
        o += snprintf(buf + o, len - (size_t)o, " relay=1");
    if (ch->copy != NC_COPY_AUTO && o >= 0 && (size_t)o < len)
        snprintf(buf + o, len - (size_t)o, " copy=%s", nc__copy_name(ch->copy));
}

void tn_cand_text(int coll, const nc__choice_t *ch, char *buf, size_t len)
{
    nc__tune_rule_t r = {
        .coll = (nc__coll_t)coll,
        .p_lo = 1, .p_hi = NC_TUNE_ANY_U,
        .size_lo = 0, .size_hi = nc__algs[ch->alg].max_bytes,
        .nodes_lo = 1, .nodes_hi = NC_TUNE_ANY_U,
        .ppn_lo = 1, .ppn_hi = NC_TUNE_ANY_U,
        .ch = *ch,
    };
    if (r.size_hi == SIZE_MAX)
        r.size_hi = NC_TUNE_ANY_Z;
    if (nc__tune_format_rule(&r, buf, len - 1) < 0 && len)
        buf[0] = '\0';
    size_t n = strlen(buf);
    if (n + 1 < len) {
        buf[n] = '\n';
        buf[n + 1] = '\0';
    }
}

void tn_model_assumed(nc__model_t *md)
{
    memset(md, 0, sizeof *md);
    md->t_local = md->t_cross = 0.2e-9;
    md->t_hop = 150e-9;
    md->t_WO = 50e-9;
    md->t_A = 30e-9;
}

/* ---- shapes ------------------------------------------------------------ */

int tn_ctx_init(tn_ctx_t *x, int p, unsigned nodes, unsigned ppn,
                const numacoll_locality_t *loc, const nc__model_t *model,
                int quick)
{
    memset(x, 0, sizeof *x);
    x->p = p;
    x->nodes = nodes;
    x->ppn = ppn;
    x->loc = loc;
    x->model = model;
    x->quick = quick;
    x->cma_ok = 1;   /* until the team says otherwise */
    /* the leaf copies from the root's node: across nodes when there are
     * several */
    x->t = nodes > 1 && model->t_cross > 0 ? model->t_cross : model->t_local;
    if (!(x->t > 0))
        x->t = 0.2e-9;
    /* every root when that is cheap; a spread of roots otherwise (the
     * shapes are rotations, the numa shape differs per root's node) */
    int want[] = {0, 1, 2, p / 4, p / 2, 3 * p / 4, p - 2, p - 1};
    x->roots = malloc((size_t)(p <= 64 ? p : 8) * sizeof *x->roots);
    if (!x->roots)
        return -1;
    if (p <= 64) {
        for (int r = 0; r < p; r++)
            x->roots[r] = r;
        x->nroots = p;
    } else {
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
            int dup = 0;
            for (int j = 0; j < x->nroots; j++)
                dup |= x->roots[j] == want[i];
            if (!dup)
                x->roots[x->nroots++] = want[i];
        }
    }
    return 0;
}

void tn_ctx_fini(tn_ctx_t *x)
{
    for (int i = 0; i < x->nshape; i++)
        free(x->shape[i].parent);
    free(x->roots);
    memset(x, 0, sizeof *x);
}

/* Index of the shape of (kind, k) (hier: the hier tree with k inside and
 * between nodes), added when new; -1 when the tree cannot be built. */
static int shape_id(tn_ctx_t *x, int kind, int k, int hier)
{
    if (kind == NUMACOLL_TREE_FLAT || kind == NUMACOLL_TREE_CHAIN)
        k = 2;   /* radix plays no part */
    for (int i = 0; i < x->nshape; i++)
        if (x->shape[i].kind == kind && x->shape[i].k == k &&
            x->shape[i].hier == hier)
            return x->shape[i].canon;
    nc__tree_t t;
    int rc = hier ? nc__tree_init_hier(&t, x->p, k, k, x->loc)
                  : nc__tree_init(&t, kind, x->p, k, x->loc);
    if (rc != NUMACOLL_OK)
        return -1;
    size_t n = (size_t)x->nroots * (size_t)x->p;
    int *par = malloc(n * sizeof *par);
    int *kids = malloc((size_t)(nc__tree_max_children(&t) + 1) * sizeof *kids);
    if (!par || !kids) {
        free(par);
        free(kids);
        nc__tree_fini(&t);
        return -1;
    }
    for (int i = 0; i < x->nroots; i++)
        for (int r = 0; r < x->p; r++)
            par[(size_t)i * (size_t)x->p + (size_t)r] =
                nc__tree_parent(&t, x->roots[i], r);
    int depth = 0;
    for (int r = 0; r < x->p; r++) {
        int d = 0;
        for (int v = r; v != 0 && d <= x->p; v = par[v])
            d++;
        depth = d > depth ? d : depth;
    }
    int fanout = nc__tree_children(&t, 0, 0, kids);
    free(kids);
    nc__tree_fini(&t);
    /* the same parents as a known shape: that shape, remembered under
     * this (kind, k) too so the next lookup is a scan */
    int same = -1;
    for (int i = 0; i < x->nshape && same < 0; i++)
        if (x->shape[i].hier == hier &&
            memcmp(x->shape[i].parent, par, n * sizeof *par) == 0)
            same = i;
    if (x->nshape == TN_MAX_SHAPES) {
        free(par);
        return same;
    }
    tn_shape_t *s = &x->shape[x->nshape];
    s->kind = kind;
    s->k = k;
    s->hier = hier;
    s->depth = depth;
    s->fanout = fanout;
    s->parent = par;
    s->canon = same >= 0 ? same : x->nshape;
    x->nshape++;
    return s->canon;
}

/* The shape a choice's tree has: trees named by kind (tree=, Bcast's) by
 * kind and radix, the Reduce/Barrier hier tree by radix. -2 when the
 * choice has no tree. */
static int choice_shape(tn_ctx_t *x, const nc__choice_t *ch)
{
    int a = (int)ch->alg;
    if (!nc__alg_takes(a, "k"))
        return -2;
    if (nc__alg_takes(a, "tree"))
        return shape_id(x, ch->tree, (int)ch->k, 0);
    return shape_id(x, NUMACOLL_TREE_NUMA, (int)ch->k, 1);
}

int tn_choice_same(tn_ctx_t *x, const nc__choice_t *a, const nc__choice_t *b)
{
    if (a->alg != b->alg || a->copy != b->copy || a->relay != b->relay)
        return 0;
    int g = (int)a->alg;
    if ((nc__alg_takes(g, "f") && a->f != b->f) || (nc__alg_takes(g, "s") && a->s != b->s) ||
        (nc__alg_takes(g, "q") && a->q != b->q))
        return 0;
    if (!nc__alg_takes(g, "k") && !nc__alg_takes(g, "tree"))
        return 1;
    if (x) {
        int sa = choice_shape(x, a), sb = choice_shape(x, b);
        if (sa >= 0 && sb >= 0)
            return sa == sb;
    }
    return (!nc__alg_takes(g, "tree") || a->tree == b->tree) &&
           (!nc__alg_takes(g, "k") || a->k == b->k);
}

/* ---- the lists ---------------------------------------------------------- */

typedef struct clist {
    tn_cand_t c[256];
    int n;
} clist_t;

static void add(tn_ctx_t *x, clist_t *l, nc__choice_t ch, double pred)
{
    norm(&ch);
    for (int i = 0; i < l->n; i++)
        if (tn_choice_same(x, &l->c[i].ch, &ch)) {
            if (pred < l->c[i].pred)
                l->c[i].pred = pred;
            return;
        }
    if (l->n < (int)(sizeof l->c / sizeof l->c[0]))
        l->c[l->n++] = (tn_cand_t){ch, pred};
}

static int by_pred(const void *a, const void *b)
{
    double x = ((const tn_cand_t *)a)->pred, y = ((const tn_cand_t *)b)->pred;
    return (x > y) - (x < y);
}

/* Stable: insertion sort keeps the generation order among equals, so the
 * list (and the run) is the same every time. */
static void sort_list(clist_t *l)
{
    for (int i = 1; i < l->n; i++)
        for (int j = i; j > 0 && by_pred(&l->c[j - 1], &l->c[j]) > 0; j--) {
            tn_cand_t t = l->c[j];
            l->c[j] = l->c[j - 1];
            l->c[j - 1] = t;
        }
}

static size_t ceil_div(size_t a, size_t b)
{
    return a / b + (a % b != 0);
}

static size_t round_up(size_t v, size_t to)
{
    return ceil_div(v, to) * to;
}

/* The values f and s take: powers of two and 1.5 times them (64, 128,
 * 192, 256, 384, ... for f, which must stay a multiple of 64). A coarse
 * grid keeps the candidates the same from run to run although the fitted
 * constants move a little, and the table readable. */
static size_t grid_next(size_t v, size_t unit)
{
    size_t p2 = 1;
    while (p2 * 2 <= v)
        p2 *= 2;
    /* v is in [p2, 2 p2): the grid points there are p2 and 1.5 p2 (when
     * that is a whole number of units) */
    size_t mid = p2 + p2 / 2;
    return v < mid && p2 >= 2 && mid % unit == 0 ? mid : 2 * p2;
}

/* The smallest grid value >= v, from lo (a grid value, a multiple of
 * unit). */
static size_t grid_ceil(size_t v, size_t lo, size_t unit)
{
    size_t g = lo;
    while (g < v)
        g = grid_next(g, unit);
    return g;
}

/* The grid value nearest v in ratio, from lo. */
static size_t grid_near(size_t v, size_t lo, size_t unit)
{
    size_t hi = grid_ceil(v, lo, unit), below = lo;
    for (size_t g = lo; g < hi; g = grid_next(g, unit))
        below = g;
    if (hi != lo && (double)v * (double)v < (double)below * (double)hi)
        return below;
    return hi;
}

/* t_W of a Bcast tree: the fitted value, else one hop per level. */
static double t_w(tn_ctx_t *x, int kind, int k)
{
    const nc__model_t *md = x->model;
    if (kind >= 0 && kind < NUMACOLL_TREE_COUNT && k >= 0 &&
        k <= NC_MODEL_MAX_RADIX && md->t_W[kind][k] > 0)
        return md->t_W[kind][k];
    int d = nc__model_tree_depth(kind, (unsigned)k, x->p, x->loc);
    double hop = md->t_hop > 0 ? md->t_hop : 100e-9;
    return (d > 0 ? d : 1) * hop;
}

static void bcast_list(tn_ctx_t *x, size_t m, clist_t *pipe, clist_t *inl)
{
    static const int kinds[] = {NUMACOLL_TREE_KARY, NUMACOLL_TREE_KNOMIAL,
                                NUMACOLL_TREE_CHAIN, NUMACOLL_TREE_FLAT,
                                NUMACOLL_TREE_NUMA};
    static const unsigned ks[] = {2, 4};
    static const size_t bs[] = {256 * KIB, MIB, 4 * MIB};
    static const unsigned qs[] = {1, 2, 4};
    const nc__model_t *md = x->model;
    const size_t fmax = MIB;
    const unsigned smax = 65536;
    int seen[TN_MAX_SHAPES + 1], nseen = 0;
    for (size_t ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++)
        for (size_t kk = 0; kk < sizeof ks / sizeof ks[0]; kk++) {
            int kind = kinds[ki], k = (int)ks[kk];
            if ((kind == NUMACOLL_TREE_FLAT || kind == NUMACOLL_TREE_CHAIN) &&
                kk > 0)
                continue;
            int sid = shape_id(x, kind, k, 0);
            int dup = 0;
            for (int i = 0; i < nseen; i++)
                dup |= seen[i] == sid;
            if (sid < 0 || dup)
                continue;
            seen[nseen++] = sid;
            if (inl && m <= nc__algs[NC_ALG_BCAST_INLINE].max_bytes)
                add(x, inl, (nc__choice_t){.alg = NC_ALG_BCAST_INLINE,
                                           .tree = kind, .k = (unsigned)k},
                    0);
            double tw = t_w(x, kind, k);
            for (size_t bi = 0; bi < sizeof bs / sizeof bs[0]; bi++) {
                /* a queue per rank: keep the team's segment reasonable */
                if ((double)bs[bi] * x->p > (double)((size_t)1 << 30))
                    continue;
                for (size_t qi = 0; qi < sizeof qs / sizeof qs[0]; qi++) {
                    size_t f;
                    unsigned s, q = qs[qi];
                    nc__model_opt_rounded(x->t, tw, m ? m : 1, bs[bi], q, fmax,
                                          smax, &f, &s);
                    const size_t fv[3] = {f / 2, f, 2 * f};
                    for (int v = 0; v < 3; v++) {
                        size_t fr = grid_near(fv[v], 64, 64);
                        /* no fragment beyond the message */
                        size_t mcap = grid_ceil(m ? m : 1, 64, 64);
                        fr = fr > mcap ? mcap : fr > fmax ? fmax : fr;
                        size_t sv = round_up(
                            grid_ceil(ceil_div(bs[bi], fr), 1, 1), q);
                        /* buffers beyond what the rule's sizes can fill
                         * (up to twice m) change nothing but memory */
                        size_t fill = round_up(
                            grid_ceil(ceil_div(2 * (m ? m : 1), fr), 1, 1), q);
                        sv = sv > fill ? fill : sv;
                        sv = sv < q ? q : sv > smax ? smax / q * q : sv;
                        double pr = nc__model_bcast_time(
                            x->t, tw, md->t_WO, md->t_A, m ? m : 1, fr,
                            (unsigned)sv, q);
                        add(x, pipe, (nc__choice_t){.alg =
                                                        NC_ALG_BCAST_PIPELINED,
                                                    .f = fr, .s = (unsigned)sv,
                                                    .q = q, .tree = kind,
                                                    .k = (unsigned)k},
                            pr);
                    }
                }
            }
        }
}

/* A rough pipeline estimate for ranking Reduce-family candidates: nfrag +
 * depth - 1 stages, each a parent folding fanout fragments, a hop, and a
 * little slower with few slots. Only the order matters. */
static double reduce_pred(tn_ctx_t *x, size_t m, size_t f, unsigned s,
                          unsigned k)
{
    const nc__model_t *md = x->model;
    int sid = shape_id(x, NUMACOLL_TREE_NUMA, (int)k, 1);
    int depth = sid >= 0 ? x->shape[sid].depth : 1;
    int fan = sid >= 0 ? x->shape[sid].fanout : 1;
    size_t fe = f < m ? f : m;
    double nf = (double)ceil_div(m ? m : 1, f);
    double stage = fan * (double)fe * x->t + md->t_hop + md->t_A + md->t_WO;
    return (nf + depth - 1) * stage * (1 + 0.5 / s);
}

static double rsag_pred(tn_ctx_t *x, size_t m, size_t f, unsigned s)
{
    const nc__model_t *md = x->model;
    size_t fe = f < m ? f : m;
    double rounds = (double)ceil_div(m ? m : 1, f);
    double stage = 3 * (double)fe * x->t + 3 * (md->t_hop + md->t_A);
    return (rounds + 2) * stage * (1 + 0.5 / s);
}

/* The f and s of the Reduce family: each list up to its first value that
 * holds everything (more changes nothing but memory). */
static int f_list(size_t m, size_t *out)
{
    static const size_t fs[] = {16 * KIB, 64 * KIB, 128 * KIB, 512 * KIB};
    int n = 0;
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++) {
        out[n++] = fs[i];
        if (fs[i] >= m)
            break;
    }
    return n;
}

static int s_list(size_t nfrag, unsigned *out)
{
    static const unsigned ss[] = {2, 4, 8};
    int n = 0;
    for (size_t i = 0; i < sizeof ss / sizeof ss[0]; i++) {
        out[n++] = ss[i];
        if (ss[i] >= nfrag)
            break;
    }
    return n;
}

static void reduce_list(tn_ctx_t *x, int alg, size_t m, clist_t *l)
{
    static const unsigned ks[] = {2, 4};
    size_t fs[4];
    unsigned ss[3];
    int nf = f_list(m, fs);
    for (int i = 0; i < nf; i++) {
        int ns = s_list(ceil_div(m ? m : 1, fs[i]), ss);
        for (int j = 0; j < ns; j++) {
            if (alg == NC_ALG_ALLREDUCE_RSAG) {
                add(x, l, (nc__choice_t){.alg = NC_ALG_ALLREDUCE_RSAG,
                                         .f = fs[i], .s = ss[j], .tree = -1},
                    rsag_pred(x, m, fs[i], ss[j]));
                continue;
            }
            for (size_t kk = 0; kk < sizeof ks / sizeof ks[0]; kk++)
                add(x, l, (nc__choice_t){.alg = (nc__alg_t)alg, .f = fs[i],
                                         .s = ss[j], .tree = -1, .k = ks[kk]},
                    reduce_pred(x, m, fs[i], ss[j], ks[kk]));
        }
    }
}

/* ---- the collectives tuned from the algorithm table alone ---------------- */

/* Bytes one rank moves per block that a round's fragment of f bytes must
 * hold for the call to take one round: the block (the gathers), or
 * Alltoall's p - 1 outgoing blocks, which a round cuts f / (p - 1) bytes
 * of each; for Reduce_scatter, Scan and Exscan the size is the vector
 * (docs/tuning.md). */
static size_t round_bytes(const tn_ctx_t *x, int op, size_t m)
{
    size_t v = m ? m : 1;
    if (op == NCB_OP_ALLTOALL || op == NCB_OP_ALLTOALLV)
        v *= (size_t)(x->p > 1 ? x->p - 1 : 1);
    return v;
}

/* A rough estimate for ranking one algorithm's variants: rounds of f
 * bytes, each a copy in and out and a hand-over, a little slower with few
 * slots. Only the order within one algorithm matters. */
static double staged_pred(tn_ctx_t *x, size_t vol, size_t f, unsigned s)
{
    const nc__model_t *md = x->model;
    size_t fe = f && f < vol ? f : vol;
    double rounds = f ? (double)ceil_div(vol, f) : 1;
    double stage = 2 * (double)fe * x->t + md->t_hop + md->t_A + md->t_WO;
    return (rounds + 1) * stage * (1 + (s ? 0.5 / s : 0));
}

/* Every variant of algorithm a at this size, by the keys the algorithm
 * table says it takes (coll/algs.h): f and s as the Reduce's (each list up
 * to the first value that holds the whole round), q = 1, 2, tree = kary,
 * flat and k = 2, 4. An algorithm added to NC_ALG_LIST with these keys is
 * a candidate with no change here. */
static void table_list(tn_ctx_t *x, int a, size_t vol, clist_t *l)
{
    static const unsigned qs[] = {1, 2}, ks[] = {2, 4};
    static const int trees[] = {NUMACOLL_TREE_KARY, NUMACOLL_TREE_FLAT};
    size_t fs[4] = {0};
    unsigned ss[3] = {0};
    const int tf = nc__alg_takes(a, "f"), ts = nc__alg_takes(a, "s"),
              tq = nc__alg_takes(a, "q"), tt = nc__alg_takes(a, "tree"),
              tk = nc__alg_takes(a, "k");
    int nf = tf ? f_list(vol, fs) : 1;
    for (int i = 0; i < nf; i++) {
        int ns = ts ? s_list(tf ? ceil_div(vol, fs[i]) : 1, ss) : 1;
        for (int j = 0; j < ns; j++)
            for (int qi = 0; qi < (tq ? 2 : 1); qi++)
                for (int ti = 0; ti < (tt ? 2 : 1); ti++)
                    for (int ki = 0; ki < (tk ? 2 : 1); ki++)
                        add(x, l,
                            (nc__choice_t){.alg = (nc__alg_t)a, .f = fs[i],
                                           .s = ss[j], .q = qs[qi],
                                           .tree = trees[ti], .k = ks[ki]},
                            staged_pred(x, vol, fs[i], ss[j]));
    }
}

/* Append from l those not the default and not already in out. */
static int take(tn_ctx_t *x, const clist_t *l, int from, int upto,
                const nc__choice_t *def, tn_cand_t *out, int n, int cap,
                int *next)
{
    int i = from;
    for (; i < l->n && n < cap && n < upto; i++) {
        if (tn_choice_same(x, &l->c[i].ch, def))
            continue;
        int dup = 0;
        for (int j = 0; j < n && !dup; j++)
            dup = tn_choice_same(x, &out[j].ch, &l->c[i].ch);
        if (!dup)
            out[n++] = l->c[i];
    }
    if (next)
        *next = i;
    return n;
}

/* Candidates the model cannot rank, measured first at every size where
 * they can matter: the default's copy done by the C library (its speed
 * depends on the buffers' alignment, docs/bench.md), with the other kind of
 * stores into user buffers from 256 KiB on, with streaming stores into the
 * segment too (ntall) from 64 KiB on for Bcast and Allreduce; for Bcast
 * from 16 KiB on also single copy (alg=cma) with pieces of 64 KiB and
 * 256 KiB, flat and binary. */
static int extra(tn_ctx_t *x, int op, size_t m, const nc__choice_t *def,
                 tn_cand_t *out, int n, int cap)
{
    static clist_t c;
    c.n = 0;
    if ((op != NCB_OP_BCAST && op != NCB_OP_REDUCE &&
         op != NCB_OP_ALLREDUCE && !tn_op_generic(op)) ||
        m <= 56)    /* one line's payload: too short for a copy kind to tell */
        return n;
    if (tn_op_generic(op) && (m < 64 * KIB || !nc__alg_takes(def->alg, "f")))
        return n;   /* few candidates: the copy kinds only where they tell */
    nc__choice_t v = *def;
    if (op == NCB_OP_BCAST && m >= 16 * KIB && x && x->relay_ok &&
        def->alg == NC_ALG_BCAST_PIPELINED) {
        /* the default's geometry on the hierarchy with the leader relay
         * (first: --quick takes only the first extras): it pays where a
         * domain's ranks would otherwise all pull the root's lines across
         * its boundary. The hierarchy without it is in bcast_list. */
        v.tree = NUMACOLL_TREE_NUMA;
        v.relay = 1;
        add(x, &c, v, 0);
        v = *def;
    }
    v.copy = NC_COPY_LIBC;
    add(x, &c, v, 0);
    if (m >= 256 * KIB) {
        v.copy = def->copy == NC_COPY_NT ? NC_COPY_VEC : NC_COPY_NT;
        add(x, &c, v, 0);
    }
    if (m >= 64 * KIB && (op == NCB_OP_BCAST || op == NCB_OP_ALLREDUCE)) {
        v.copy = NC_COPY_NTALL;   /* pays where the cores are far apart */
        add(x, &c, v, 0);
    }
    if ((op == NCB_OP_BCAST && m >= 8 * KIB) ||
        (op == NCB_OP_ALLREDUCE && m >= 4 * KIB)) {
        /* the writers choosing their stores by timing them (copy.h), or
         * plain stores where the default is that */
        const int ad = op == NCB_OP_BCAST && m >= 4 * MIB ? NC_COPY_NTADAPT
                                                          : NC_COPY_ADAPT;
        v.copy = def->copy == ad ? NC_COPY_AUTO : ad;
        add(x, &c, v, 0);
    }
    if (op == NCB_OP_BCAST && m >= 16 * KIB && x && x->cma_ok) {
        static const size_t fs[] = {64 * KIB, 256 * KIB};
        static const int kinds[] = {NUMACOLL_TREE_FLAT, NUMACOLL_TREE_KARY};
        for (size_t i = 0; i < 2; i++)
            for (size_t j = 0; j < 2; j++) {
                size_t f = fs[i] < m ? fs[i] : grid_ceil(m, 64, 64);
                add(x, &c, (nc__choice_t){.alg = NC_ALG_BCAST_CMA, .f = f,
                                          .tree = kinds[j], .k = 2}, 0);
            }
    }
    return take(x, &c, 0, cap, def, out, n, cap, NULL);
}

int tn_cands(tn_ctx_t *x, int op, size_t m, const nc__choice_t *def, int cap,
             tn_cand_t *out)
{
    static clist_t a, b;   /* large: not on the stack; one rank, one thread */
    a.n = b.n = 0;
    cap = cap > TN_MAX_CANDS ? TN_MAX_CANDS : cap;
    int n = extra(x, op, m, def, out, 0, (cap + 1) / 2);
    switch (op) {
    case NCB_OP_BCAST: {
        bcast_list(x, m, &a, &b);
        sort_list(&a);
        if (b.n) {
            /* up to 56 bytes inline is the contender; two pipelined
             * configurations check that */
            n = take(x, &b, 0, cap, def, out, n, cap, NULL);
            n = take(x, &a, 0, n + 2, def, out, n, cap, NULL);
            break;
        }
        /* half by prediction; then the best of every tree the list lacks
         * so far, so that an error in one tree's fitted t_W cannot hide
         * the others; then by prediction again */
        n = take(x, &a, 0, n + (cap - n + 1) / 2, def, out, n, cap, NULL);
        for (int i = 0; i < a.n && n < cap; i++) {
            int sh = choice_shape(x, &a.c[i].ch), have = 0;
            for (int j = 0; j < n && !have; j++)
                have = choice_shape(x, &out[j].ch) == sh;
            if (!have)
                n = take(x, &a, i, n + 1, def, out, n, cap, NULL);
        }
        n = take(x, &a, 0, cap, def, out, n, cap, NULL);
        break;
    }
    case NCB_OP_REDUCE:
        /* inline first where it may carry m: its f, s, k (the fallback
         * for elements a line cannot take) the default's */
        if (m <= nc__algs[NC_ALG_REDUCE_INLINE].max_bytes &&
            def->alg != NC_ALG_REDUCE_INLINE) {
            nc__choice_t in = *def;
            in.alg = NC_ALG_REDUCE_INLINE;
            b.n = 0;
            add(x, &b, in, 0);
            n = take(x, &b, 0, cap, def, out, n, cap, NULL);
        }
        reduce_list(x, NC_ALG_REDUCE_PIPELINED, m, &a);
        sort_list(&a);
        n = take(x, &a, 0, cap, def, out, n, cap, NULL);
        break;
    case NCB_OP_ALLREDUCE: {
        if (m <= nc__algs[NC_ALG_ALLREDUCE_INLINE].max_bytes) {
            clist_t *in = &b;
            in->n = 0;
            add(x, in, (nc__choice_t){.alg = NC_ALG_ALLREDUCE_INLINE,
                                      .tree = -1}, 0);
            n = take(x, in, 0, cap, def, out, n, cap, NULL);
        }
        /* one wave through the slots where every rank reading all p
         * contributions is still little: one slot holding the whole
         * message, with the stores the default's copy picks */
        if (m > 0 && m * (size_t)(x->p - 1) <= 64 * KIB) {
            b.n = 0;
            add(x, &b, (nc__choice_t){.alg = NC_ALG_ALLREDUCE_ALLFOLD,
                                      .f = m <= 16 * KIB ? 16 * KIB : 64 * KIB,
                                      .s = 4, .tree = -1, .copy = def->copy},
                0);
            n = take(x, &b, 0, cap, def, out, n, cap, NULL);
        }
        reduce_list(x, NC_ALG_ALLREDUCE_REDUCE_BCAST, m, &a);
        sort_list(&a);
        b.n = 0;
        reduce_list(x, NC_ALG_ALLREDUCE_RSAG, m, &b);
        sort_list(&b);
        /* the rough estimates of two algorithms do not compare: take
         * their best in turn (one each up to one line, where inline is
         * the contender) */
        int ia = 0, ib = 0, small = m <= 56;
        int lim = small ? n + 2 : cap;
        while (n < cap && n < lim && (ia < a.n || ib < b.n)) {
            int before = n;
            n = take(x, &a, ia, n + 1, def, out, n, cap, &ia);
            n = take(x, &b, ib, n + 1, def, out, n, lim, &ib);
            if (n == before && ia >= a.n && ib >= b.n)
                break;
        }
        break;
    }
    case NCB_OP_BARRIER: {
        /* dissemination first: at small p its one round beats the
         * tree's two waves (k = 64: one round at any p up to 64) */
        static const unsigned ks[] = {2, 3, 4, 8}, kd[] = {64, 2, 4, 8};
        for (size_t i = 0; i < sizeof kd / sizeof kd[0]; i++)
            if (i == 0 || kd[i] < (unsigned)x->p)   /* else one round too */
                add(x, &a, (nc__choice_t){.alg = NC_ALG_BARRIER_DISSEM,
                                          .tree = -1, .k = kd[i]}, 0);
        for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++)
            add(x, &a, (nc__choice_t){.alg = NC_ALG_BARRIER_TREE, .tree = -1,
                                      .k = ks[i]}, 0);
        n = take(x, &a, 0, cap, def, out, n, cap, NULL);
        break;
    }
    default: {
        /* every algorithm of the collective that carries m, one list
         * each, the best of each taken in turn (their rough estimates do
         * not compare): the default's own algorithm last, since another
         * algorithm is where a few candidates find most; the others in
         * table order (inline ones come first there) */
        static clist_t per[ALGS_PER_COLL];
        int coll = tn_coll_of(op), na = 0;
        if (coll < 0)
            break;
        const size_t vol = round_bytes(x, op, m);
        for (int pass = 0; pass < 2; pass++)
            for (int al = 0; al < NC_ALG_COUNT && na < ALGS_PER_COLL; al++) {
                if ((int)nc__algs[al].coll != coll ||
                    m > nc__algs[al].max_bytes ||
                    (al == (int)def->alg) != (pass == 1) ||
                    (!x->cma_ok && nc__alg_single_copy(al)))
                    continue;   /* single copy would run as staged here */
                per[na].n = 0;
                table_list(x, al, vol, &per[na]);
                sort_list(&per[na]);
                na++;
            }
        int at[ALGS_PER_COLL] = {0};
        for (int more = 1; more && n < cap;) {
            more = 0;
            for (int i = 0; i < na && n < cap; i++)
                if (at[i] < per[i].n) {
                    n = take(x, &per[i], at[i], n + 1, def, out, n, cap,
                             &at[i]);
                    more = 1;
                }
        }
        break;
    }
    }
    return n;
}
