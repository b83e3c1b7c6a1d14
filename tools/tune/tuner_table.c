/*
 * From measured points to the rules numacoll-tune writes, and the file's
 * header.
 *
 * Rules of one run (one tuned p), per operation, points sorted by size:
 *  - each point covers the sizes from the geometric midpoint with its lower
 *    neighbour to the one with its upper neighbour (the first from 0, the
 *    last to *); where the points straddle the inline limit (the largest
 *    size the collective's inline algorithm carries, coll/algs.h: 8 KiB
 *    for Bcast and Allreduce, 2 KiB for Allgather) the border is the
 *    limit itself, so inline rules stay within it (an inline rule's size
 *    sizes the team's inline slots);
 *  - a point whose winner is the built-in choice (it won, or the best other
 *    was within the noise) takes the built-in rules over its range, split
 *    where they split: a tie reproduces the built-in behaviour exactly;
 *  - a winner that carries less than its range (inline) covers what it
 *    can, the built-in rules the rest;
 *  - neighbouring pieces with the same choice merge, gain the geometric
 *    mean of theirs.
 * p ranges: each tuned p from itself to just below the next tuned p, the
 * smallest from 1, the largest to *.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/tune/tuner.h"

typedef struct piece {
    size_t lo, hi;
    nc__choice_t ch;
    double lg;        /* sum of log(gain) over the points it holds */
    int n;
} piece_t;

typedef struct pvec {
    piece_t *v;
    int n, cap;
} pvec_t;

static int push(pvec_t *pv, size_t lo, size_t hi, const nc__choice_t *ch,
                double gain)
{
    if (lo > hi)
        return 0;
    if (pv->n == pv->cap) {
        int cap = pv->cap ? 2 * pv->cap : 32;
        piece_t *v = realloc(pv->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        pv->v = v;
        pv->cap = cap;
    }
    pv->v[pv->n++] = (piece_t){lo, hi, *ch, log(gain > 0 ? gain : 1), 1};
    return 0;
}

/* The built-in rules of coll over [lo, hi], as pieces of gain 1. */
static int push_builtin(pvec_t *pv, const nc__tune_team_t *bt, int coll,
                        size_t lo, size_t hi)
{
    for (int i = 0; i < bt->n[coll]; i++) {
        const nc__tune_entry_t *e = &bt->e[coll][i];
        size_t a = e->lo > lo ? e->lo : lo, b = e->hi < hi ? e->hi : hi;
        if (a <= b && push(pv, a, b, &e->ch, 1) != 0)
            return -1;
    }
    return 0;
}

static int by_m(const void *a, const void *b)
{
    const tn_point_t *x = *(const tn_point_t *const *)a;
    const tn_point_t *y = *(const tn_point_t *const *)b;
    return (x->m > y->m) - (x->m < y->m);
}

/* The largest size inline carries for op (the smallest bound among its
 * collective's algorithms, from the algorithm table), 0 when every
 * algorithm carries any size. */
static size_t inline_limit(int op)
{
    const int coll = tn_coll_of(op);
    size_t lim = 0;
    for (int a = 0; a < NC_ALG_COUNT; a++)
        if ((int)nc__algs[a].coll == coll && nc__algs[a].max_bytes != SIZE_MAX &&
            (!lim || nc__algs[a].max_bytes < lim))
            lim = nc__algs[a].max_bytes;
    return lim;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void tn_decide(tn_report_t *r)
{
    /* one point's noise is one draw (two medians); the operation's median
     * over its points keeps a draw that came out small by chance from
     * letting a fluke through */
    for (int op = 0; op < NCB_OP_COUNT; op++) {
        double v[TN_MAX_POINTS];
        int n = 0;
        for (int j = 0; j < r->npoints; j++)
            if (r->pt[j].op == op && r->pt[j].status == TN_PT_MEASURED)
                v[n++] = r->pt[j].noise;
        qsort(v, (size_t)n, sizeof v[0], cmp_d);
        r->op_noise[op] = n ? v[n / 2] : 0;
    }
    for (int j = 0; j < r->npoints; j++) {
        tn_point_t *pt = &r->pt[j];
        double td = (pt->t_def[0] + pt->t_def[1]) / 2;
        pt->thr = fmax(fmax(pt->noise, r->op_noise[pt->op]), TN_NOISE_FLOOR);
        pt->win = pt->def;
        pt->t_win = td;
        pt->gain = 1;
        pt->kept_default = 1;
        pt->tie_default = pt->tie_second = 0;
        if (pt->status != TN_PT_MEASURED || pt->nalt == 0)
            continue;
        if (pt->t_alt[0] * (1 + pt->thr) < td) {
            pt->win = pt->alt[0];
            pt->t_win = pt->t_alt[0];
            pt->gain = td / pt->t_alt[0];
            pt->kept_default = 0;
            /* the runner-up: the next other, or the default */
            int other = pt->nalt > 1 && pt->t_alt[1] < td;
            pt->second = other ? pt->alt[1] : pt->def;
            pt->t_second = other ? pt->t_alt[1] : td;
            pt->tie_second = other && pt->t_second <= pt->t_win * (1 + pt->thr);
        } else {
            pt->second = pt->alt[0];
            pt->t_second = pt->t_alt[0];
            /* faster, but not by more than the margin */
            pt->tie_default = pt->t_alt[0] < td;
        }
    }
}

/* Pieces of one operation of one run, merged. */
static int op_pieces(const tn_report_t *r, int op, const nc__tune_team_t *bt,
                     pvec_t *pv)
{
    const tn_point_t *pts[TN_MAX_POINTS];
    int n = 0;
    for (int i = 0; i < r->npoints; i++)
        if (r->pt[i].op == op)
            pts[n++] = &r->pt[i];
    if (n == 0)
        return 0;
    qsort(pts, (size_t)n, sizeof pts[0], by_m);
    const int coll = tn_coll_of(op);
    const size_t lim = inline_limit(op);
    /* a --sizes range bounds the rules: beyond it the built-in ones stay */
    const int bounded = r->rule_bounded && (ncb_ops[op].flags & NCB_SIZED);
    size_t lo = bounded ? r->rule_lo : 0;
    for (int i = 0; i < n; i++) {
        const tn_point_t *pt = pts[i];
        size_t hi = bounded ? r->rule_hi : NC_TUNE_ANY_Z;
        if (i + 1 < n) {
            size_t a = pt->m, b = pts[i + 1]->m;
            if (lim && a <= lim && b > lim) {
                hi = lim;
            } else {
                hi = (size_t)floor(sqrt((double)a * (double)b));
                hi = hi < a ? a : hi >= b ? b - 1 : hi;
            }
        }
        if (!(ncb_ops[op].flags & NCB_SIZED))
            hi = NC_TUNE_ANY_Z;
        if (pt->kept_default) {
            if (push_builtin(pv, bt, coll, lo, hi) != 0)
                return -1;
        } else {
            size_t cap = nc__algs[pt->win.alg].max_bytes;
            size_t top = hi < cap ? hi : cap;
            if (push(pv, lo, top, &pt->win, pt->gain) != 0 ||
                (top < hi && push_builtin(pv, bt, coll, top + 1, hi) != 0))
                return -1;
        }
        lo = hi + 1;
        if (hi == NC_TUNE_ANY_Z)
            break;
    }
    /* merge neighbours with one choice */
    int w = 0;
    for (int i = 0; i < pv->n; i++) {
        if (w > 0 && pv->v[w - 1].hi + 1 == pv->v[i].lo &&
            tn_choice_same(NULL, &pv->v[w - 1].ch, &pv->v[i].ch)) {
            pv->v[w - 1].hi = pv->v[i].hi;
            pv->v[w - 1].lg += pv->v[i].lg;
            pv->v[w - 1].n += pv->v[i].n;
        } else {
            pv->v[w++] = pv->v[i];
        }
    }
    pv->n = w;
    return 0;
}

int tn_build_table(const tn_report_t *const *runs, int nruns,
                   nc__tune_table_t *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->source, sizeof out->source, "numacoll-tune");
    for (int i = 0; i < nruns; i++) {
        const tn_report_t *r = runs[i];
        if (r->npoints == 0)
            continue;
        nc__tune_team_t bt;
        if (nc__tune_resolve(nc__tune_builtin(), (unsigned)r->p, r->nodes,
                             r->ppn, &bt) != 0)
            return -1;
        /* the next run that measured something bounds this one's p */
        unsigned p_hi = NC_TUNE_ANY_U;
        for (int j = i + 1; j < nruns; j++)
            if (runs[j]->npoints) {
                p_hi = (unsigned)runs[j]->p - 1;
                break;
            }
        int first = 1;
        for (int j = 0; j < i; j++)
            first &= runs[j]->npoints == 0;
        for (int op = 0; op < NCB_OP_COUNT; op++) {
            pvec_t pv = {0};
            if (op_pieces(r, op, &bt, &pv) != 0) {
                free(pv.v);
                nc__tune_team_free(&bt);
                return -1;
            }
            for (int k = 0; k < pv.n; k++) {
                nc__tune_rule_t rule = {
                    .coll = (nc__coll_t)tn_coll_of(op),
                    .p_lo = first ? 1 : (unsigned)r->p, .p_hi = p_hi,
                    .size_lo = pv.v[k].lo, .size_hi = pv.v[k].hi,
                    .nodes_lo = 1, .nodes_hi = NC_TUNE_ANY_U,
                    .ppn_lo = 1, .ppn_hi = NC_TUNE_ANY_U,
                    .ch = pv.v[k].ch,
                    .gain = exp(pv.v[k].lg / pv.v[k].n),
                };
                if (!(ncb_ops[op].flags & NCB_SIZED))
                    rule.size_lo = 0, rule.size_hi = NC_TUNE_ANY_Z;
                if (nc__tune_add(out, &rule) != 0) {
                    free(pv.v);
                    nc__tune_team_free(&bt);
                    return -1;
                }
            }
            free(pv.v);
        }
        nc__tune_team_free(&bt);
    }
    return 0;
}

/* ---- the header ---------------------------------------------------------- */

typedef struct sbuf {
    char *s;
    size_t n, cap;
    int oom;
} sbuf_t;

static void put(sbuf_t *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(sbuf_t *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)k < b->cap - b->n) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = (b->cap + (size_t)k) * 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->oom = 1;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
}

static const char *mmss(double s, char *buf, size_t len)
{
    long t = s < 0 ? 0 : (long)(s + 0.5);
    snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
    return buf;
}

static void point_name(const tn_report_t *r, const tn_point_t *pt, char *buf,
                       size_t len)
{
    char z[24];
    if (ncb_ops[pt->op].flags & NCB_SIZED)
        snprintf(buf, len, "p=%d %s %s", r->p, ncb_ops[pt->op].name,
                 tn_size_str(pt->m, z, sizeof z));
    else
        snprintf(buf, len, "p=%d %s", r->p, ncb_ops[pt->op].name);
}

char *tn_header(const tn_opts_t *o, const tn_machine_t *mc,
                const tn_report_t *const *runs, int nruns, double used_s,
                const char *not_run)
{
    sbuf_t b = {0};
    char t1[32], t2[32];
    time_t now = time(NULL);
    struct tm tmv;
    char date[40] = "unknown";
    if (gmtime_r(&now, &tmv))
        strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tmv);
    put(&b, "numacoll tuning table, written by numacoll-tune %s (numacoll "
        "%d.%d)\n", TN_VERSION, NUMACOLL_VERSION_MAJOR,
        NUMACOLL_VERSION_MINOR);
    put(&b, "date: %s\n", date);
    put(&b, "machine: %s, %d cores, %d PUs, %d NUMA node%s (hwloc %s)\n",
        mc->cpu, mc->cores, mc->pus, mc->numa, mc->numa == 1 ? "" : "s",
        mc->hwloc);
    if (mc->topo_note[0])
        put(&b, "topology: %s\n", mc->topo_note);

    put(&b, "measured: p =");
    int nmeas = 0;
    for (int i = 0; i < nruns; i++)
        if (runs[i]->npoints) {
            put(&b, "%s %d (%u NUMA node%s, at most %u ranks on one)",
                nmeas ? "," : "", runs[i]->p, runs[i]->nodes,
                runs[i]->nodes == 1 ? "" : "s", runs[i]->ppn);
            nmeas++;
        }
    if (!nmeas)
        put(&b, " none");
    put(&b, "\n  only these p were measured: each rule's p range runs from "
        "its tuned p to the next one's, the smallest from 1, the largest "
        "to *\n");
    if (not_run && *not_run)
        put(&b, "  not run: %s\n", not_run);
    int lv_at = -1;   /* the run whose level list the table names */
    for (int i = 0; i < nruns; i++)
        if (runs[i]->levels_note[0])
            lv_at = i;
    for (int i = 0; i < nruns; i++)
        if (runs[i]->levels_note[0]) {
            char lv[64] = "numa";
            if (runs[i]->levels_win)
                numacoll_levels_format(runs[i]->levels_win, lv, sizeof lv);
            put(&b, "levels p=%d: %s\n  its points were measured under "
                "levels %s%s\n", runs[i]->p, runs[i]->levels_note, lv,
                i == lv_at ? "; the table's levels line is this run's"
                : runs[i]->levels_win != runs[lv_at]->levels_win
                    ? ", not the list this table names: its rules may "
                      "serve the table's list less well"
                    : "");
        }
    put(&b, "run: %s, budget %s, used %s\n", o->quick ? "--quick" : "full",
        mmss(o->budget_s, t1, sizeof t1), mmss(used_s, t2, sizeof t2));
    for (int i = 0; i < nruns; i++)
        if (runs[i]->skipped)
            put(&b, "  p=%d: %d point%s left out for the budget (%s); the "
                "measured neighbours cover them\n", runs[i]->p,
                runs[i]->skipped, runs[i]->skipped == 1 ? "" : "s",
                runs[i]->skipped_list);
    put(&b, "method: numacoll-bench's loop per point (cold malloc'd "
        "buffers, root moving every call, the slowest rank's time per call, data "
        "checked); every round runs the built-in choice first and last, as "
        "two teams, their two medians give the noise; the fastest other "
        "is confirmed against the default in fresh teams\n");
    for (int i = 0; i < nruns; i++)
        if (runs[i]->reps)
            put(&b, "  p=%d: up to %d candidates per point, median over %d "
                "samples of %.0f us each (fewer where the budget ran "
                "short)\n", runs[i]->p, runs[i]->ncand, runs[i]->reps,
                runs[i]->sample_us);
    for (int i = 0; i < nruns; i++) {
        const tn_report_t *r = runs[i];
        if (!r->npoints && !r->model_ok)
            continue;
        const nc__model_t *md = &r->model;
        put(&b, "model p=%d%s: t_local %.4f ns/B, t_cross %.4f ns/B, t_hop "
            "%.0f ns, t_WO %.0f ns, t_A %.0f ns (fit %.1f s)\n", r->p,
            r->model_ok ? "" : " (assumed)", md->t_local * 1e9,
            md->t_cross * 1e9, md->t_hop * 1e9, md->t_WO * 1e9,
            md->t_A * 1e9, r->fit_s);
        if (r->model_note[0])
            put(&b, "  %s\n", r->model_note);
        put(&b, "  t_W p=%d, ns:", r->p);
        for (int kind = 0; kind < NUMACOLL_TREE_COUNT; kind++) {
            const char *name =
                numacoll_tree_name((numacoll_tree_kind_t)kind);
            if (kind == NUMACOLL_TREE_FLAT || kind == NUMACOLL_TREE_CHAIN) {
                put(&b, " %s %.0f", name, md->t_W[kind][2] * 1e9);
                continue;
            }
            put(&b, " %s", name);
            for (int k = 2; k <= NC_MODEL_MAX_RADIX; k *= 2)
                put(&b, " k=%d %.0f", k, md->t_W[kind][k] * 1e9);
        }
        put(&b, "\n");
    }

    for (int i = 0; i < nruns; i++) {
        const tn_report_t *r = runs[i];
        if (!r->npoints)
            continue;
        put(&b, "noise p=%d:", r->p);
        int any = 0;
        for (int op = 0; op < NCB_OP_COUNT; op++) {
            double v[TN_MAX_POINTS];
            int n = 0;
            for (int j = 0; j < r->npoints; j++)
                if (r->pt[j].op == op && r->pt[j].status == TN_PT_MEASURED)
                    v[n++] = r->pt[j].noise;
            if (!n)
                continue;
            qsort(v, (size_t)n, sizeof v[0], cmp_d);
            put(&b, "%s %s %.1f%% median, %.1f%% max (%d point%s)",
                any ? ";" : "", ncb_ops[op].name, v[n / 2] * 100,
                v[n - 1] * 100, n, n == 1 ? "" : "s");
            any = 1;
        }
        put(&b, "%s\n", any ? "" : " nothing measured");
    }
    put(&b, "  a choice replaces the built-in one only when faster by more "
        "than the margin: the point's noise, its operation's median noise, "
        "or %.0f%%, whichever is largest\n", TN_NOISE_FLOOR * 100);
    put(&b, "gain=G on a rule: the built-in choice's time over the rule's "
        "at the measured sizes it covers (geometric mean); 1 where the "
        "built-in choice stays\n");

    char name[64], a[128], c[128];
    int nt = 0;
    put(&b, "ties, the built-in choice kept (the best other was faster by "
        "less than the margin):\n");
    for (int i = 0; i < nruns; i++)
        for (int j = 0; j < runs[i]->npoints; j++) {
            const tn_point_t *pt = &runs[i]->pt[j];
            if (!pt->tie_default)
                continue;
            point_name(runs[i], pt, name, sizeof name);
            tn_choice_str(&pt->second, a, sizeof a);
            put(&b, "  %s: %s, %.1f%% faster, margin %.1f%%\n", name, a,
                (((pt->t_def[0] + pt->t_def[1]) / 2) / pt->t_second - 1) *
                    100,
                pt->thr * 100);
            nt++;
        }
    if (!nt)
        put(&b, "  none\n");
    nt = 0;
    put(&b, "ties between the two fastest (the first is in the table):\n");
    for (int i = 0; i < nruns; i++)
        for (int j = 0; j < runs[i]->npoints; j++) {
            const tn_point_t *pt = &runs[i]->pt[j];
            if (!pt->tie_second)
                continue;
            point_name(runs[i], pt, name, sizeof name);
            tn_choice_str(&pt->win, a, sizeof a);
            tn_choice_str(&pt->second, c, sizeof c);
            put(&b, "  %s: %s and %s, %.1f%% apart, margin %.1f%%\n", name,
                a, c, (pt->t_second / pt->t_win - 1) * 100, pt->thr * 100);
            nt++;
        }
    if (!nt)
        put(&b, "  none\n");
    put(&b, "use: NUMACOLL_TUNING_FILE=<this file>, or Open MPI's "
        "--mca coll_numacoll_tuning_file <this file> (docs/autotuner.md)");
    if (b.oom) {
        free(b.s);
        return NULL;
    }
    return b.s;
}
