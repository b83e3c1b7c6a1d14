/*
 * Inside the ranks of one numacoll-tune run (p ranks forked by the core's
 * runner): probe the team's shape, fit the model, then measure size point
 * after size point within the run's deadline. Rank 0 decides, tells the
 * others, draws the progress bar and writes the results into the shared
 * tn_report_t the parent reads after the ranks exit.
 *
 * One point (an operation at one size):
 *  1. the candidates (tuner_cands.c), the same list on every rank;
 *  2. one team per candidate, made from its single-rule table given as
 *     cfg.tuning_text, so the team runs exactly what that rule would make
 *     any team run; the team's resolved choice is checked against the rule
 *     (a rule the core rejected would silently measure the built-in);
 *  3. numacoll-bench's loop over the targets default, c1 .. cn, default'
 *     (interleaved in every round: A B C ... A'), the two defaults being
 *     two teams of the same rule: their medians, taken at both ends of
 *     every round, differ by the noise (drift over a round, and what
 *     differs between two teams of one configuration);
 *  4. the fastest candidate wins when it beats the default by more than
 *     the noise (and at least TN_NOISE_FLOOR); otherwise the default stays
 *     and the point is a tie.
 * The order of the points is coarse to fine over all operations (every
 * eighth size of each first, then the fourth, ...), so a budget that runs
 * out leaves a coarser table, never a missing operation. Before each
 * point rank 0 estimates its cost (corrected by how long the points so far
 * took against their estimates) and shrinks the candidates and samples or
 * leaves the point out rather than overrun the deadline.
 */
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/team.h"
#include "tools/tune/tuner.h"
#include "tune/defaults.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define RESERVE_S 0.5   /* left for closing the session and the parent   */

typedef struct unit {
    int op;
    size_t m;
    int level;
    double est;          /* first estimate, the progress bar's weight     */
} unit_t;

typedef struct rstate {
    const tn_job_t *job;
    const tn_opts_t *o;
    const numacoll_bootstrap_t *b;
    ncb_world_t w;
    numacoll_config_t base;
    tn_ctx_t x;
    nc__tune_team_t deftab;   /* the built-in rules resolved for this team */
    ncb_session_t *sess;
    ncb_opts_t mo;            /* the measurement's options                 */
    ncb_report_t rows;
    double t_team;            /* seconds to create and destroy a team      */
    int cma_ok;               /* its single copy (numacoll_team_single_copy) */
    size_t rf_max;            /* its staging slots' bytes                  */
    double corr;              /* actual / estimated, so far                */
    double act_sum, est_sum;
    int reps, ncand;
    double sample_us;
    unit_t u[TN_MAX_POINTS];
    int nu;
    double work_total, work_done;
    int bar_drawn;
} rstate_t;

/* ---- helpers ------------------------------------------------------------- */

/* Rank 0's values to everyone (values >= 0: the others contribute 0). */
static int from_rank0(rstate_t *S, double *v, int n)
{
    if (S->w.rank != 0)
        for (int i = 0; i < n; i++)
            v[i] = 0;
    return S->w.allmax(&S->w, v, n);
}

static const char *mmss(double s, char *buf, size_t len)
{
    long t = s < 0 ? 0 : (long)(s + 0.5);
    snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
    return buf;
}

/* The bar on a terminal: work done, the point now, time used of the
 * budget. Redrawn in place; the parent ends the line. */
static void draw_bar(rstate_t *S, const char *what)
{
    const tn_job_t *j = S->job;
    if (!j->tty || S->w.rank != 0)
        return;
    double frac = S->work_total > 0 ? S->work_done / S->work_total : 1;
    frac = frac > 1 ? 1 : frac;
    char bar[31], a[32], b[32], runs[48] = "";
    int fill = (int)(frac * 30 + 0.5);
    for (int i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[30] = '\0';
    if (j->nruns > 1)
        snprintf(runs, sizeof runs, " (run %d of %d)", j->run_idx + 1,
                 j->nruns);
    fprintf(stderr, "\r\033[Knumacoll-tune [%s] %3.0f%%  p=%d%s  %-16s %s / %s",
            bar, frac * 100, j->p, runs, what,
            mmss(ncb_now() - j->t_start, a, sizeof a),
            mmss(j->o->budget_s, b, sizeof b));
    fflush(stderr);
    S->bar_drawn = 1;
}

/* A line of -v output without breaking the bar. */
static void say(rstate_t *S, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(rstate_t *S, const char *fmt, ...)
{
    if (S->w.rank != 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    if (S->bar_drawn)
        fputs("\r\033[K", stderr);
    fputs("numacoll-tune: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    S->bar_drawn = 0;
}

static const char *op_name(int op)
{
    return ncb_ops[op].name;
}

/* No operation forced to an algorithm: every call goes through the
 * public dispatch, so the team's rules choose (ncb_team_open). */
static void auto_algs(int alg[NCB_OP_COUNT])
{
    for (int op = 0; op < NCB_OP_COUNT; op++)
        alg[op] = -1;
}

/* ---- the plan ------------------------------------------------------------ */

static void add_unit(rstate_t *S, int op, size_t m, int level)
{
    if (S->nu == TN_MAX_POINTS)
        return;
    for (int i = 0; i < S->nu; i++)
        if (S->u[i].op == op && S->u[i].m == m)
            return;
    S->u[S->nu++] = (unit_t){op, m, level, 0};
}

/* The size points of op, each with its level (0 first). */
static void plan_op(rstate_t *S, int op)
{
    const tn_opts_t *o = S->o;
    if (!(ncb_ops[op].flags & NCB_SIZED)) {
        add_unit(S, op, 0, 0);
        return;
    }
    /* sizes are the table's: Reduce_scatter's is the whole vector, p
     * blocks of whole elements (bench_m) */
    size_t elem = ncb_ops[op].elem;
    if (ncb_ops[op].flags & NCB_PBLOCKS)
        elem *= (size_t)S->w.p;
    size_t sz[TN_MAX_SIZES];
    int lv[TN_MAX_SIZES], n = 0;
    if (tn_op_generic(op)) {
        /* few points: a block in one line, on both sides of the inline
         * Allgather's largest block, the staging slot and beyond; the
         * largest, the costliest, last */
        static const struct { size_t m; int level; } full[] = {
            {8, 0}, {64, 1}, {KIB, 1}, {16 * KIB, 0}, {256 * KIB, 1},
            {4 * MIB, 2}};
        static const struct { size_t m; int level; } quick[] = {
            {64, 0}, {4 * KIB, 0}, {256 * KIB, 1}};
        size_t nq = o->quick ? sizeof quick / sizeof quick[0]
                             : sizeof full / sizeof full[0];
        for (size_t i = 0; i < nq; i++) {
            sz[n] = o->quick ? quick[i].m : full[i].m;
            lv[n++] = o->quick ? quick[i].level : full[i].level;
        }
    } else if (o->quick) {
        /* the sizes that tell most, most telling first; 16M last (the
         * costliest) */
        static const struct { size_t m; int level; } q[] = {
            {4 * KIB, 0}, {64 * KIB, 0}, {56, 0}, {MIB, 1}, {8, 1},
            {16 * MIB, 2}};
        for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
            sz[n] = q[i].m;
            lv[n++] = q[i].level;
        }
    } else {
        /* powers of two, and both sides of the inline limit */
        int k = 0;
        for (size_t m = 1; m <= 64 * MIB; m *= 2, k++) {
            sz[n] = m;
            lv[n++] = k % 8 == 0 ? 0 : k % 4 == 0 ? 1 : k % 2 == 0 ? 2 : 3;
        }
        sz[n] = 56;
        lv[n++] = 1;
        sz[n] = 57;
        lv[n++] = 1;
        /* the largest is the costliest: with the finest */
        lv[k - 1] = 2;
    }
    int any = 0;
    for (int i = 0; i < n; i++) {
        size_t m = sz[i];
        if (elem > 1)
            m = (m + elem - 1) / elem * elem;   /* 57 -> 60 for uint32 */
        if (m < o->size_lo || m > o->size_hi)
            continue;
        add_unit(S, op, m, lv[i]);
        any = 1;
    }
    if (!any) {
        /* a --sizes range between the points: its ends */
        size_t lo = o->size_lo ? o->size_lo : 1, hi = o->size_hi;
        if (elem > 1) {
            lo = (lo + elem - 1) / elem * elem;
            hi = hi / elem * elem;
        }
        if (lo <= hi) {
            add_unit(S, op, lo, 0);
            add_unit(S, op, hi, 0);
        }
    }
}

static int by_level(const void *a, const void *b)
{
    const unit_t *x = a, *y = b;
    if (x->level != y->level)
        return x->level - y->level;
    if (x->op != y->op)
        return x->op - y->op;
    return (x->m > y->m) - (x->m < y->m);
}

/* numacoll-bench's size of a point of the table's size m: the same, but
 * for Reduce_scatter, whose table size is the whole vector and whose
 * bench size one rank's block of it (docs/tuning.md, bench/bench.h). */
static size_t bench_m(const rstate_t *S, int op, size_t m)
{
    return (ncb_ops[op].flags & NCB_PBLOCKS) ? m / (size_t)S->w.p : m;
}

/* Seconds one call of op at m takes, roughly: for the cost estimates. */
static double call_est(const rstate_t *S, int op, size_t m)
{
    double t = S->x.t, hop = S->x.model->t_hop > 0 ? S->x.model->t_hop : 1e-7;
    double lg = log2((double)S->w.p) + 1;
    switch (op) {
    case NCB_OP_BCAST: return 2 * (double)m * t + 4 * lg * hop;
    case NCB_OP_REDUCE: return 3 * (double)m * t + 6 * lg * hop;
    case NCB_OP_ALLREDUCE: return 5 * (double)m * t + 10 * lg * hop;
    case NCB_OP_REDUCE_SCATTER:
    case NCB_OP_SCAN:
    case NCB_OP_EXSCAN: return 3 * (double)m * t + (S->w.p + 2) * hop;
    case NCB_OP_BARRIER: return 2 * lg * hop;
    /* the gathers: p blocks through one rank, or each rank's p - 1 */
    default: return 2 * (double)m * S->w.p * t + (S->w.p + 2) * hop;
    }
}

/* Seconds a point with ntarget targets and reps samples takes: team
 * creation, the warm-up (about 1 MiB, 2 to 100 calls, twice), the
 * samples (K calls of sample_us each, at least one call), the checked
 * call with its fill and compare. */
static double unit_est(const rstate_t *S, int op, size_t m, int ntarget,
                       int reps)
{
    double c = call_est(S, op, m);
    double wn = m ? (double)MIB / (double)m : 100;
    wn = wn < 2 ? 2 : wn > 100 ? 100 : wn;
    double warm = (1 + 2 * wn) * c;
    double sample = S->sample_us * 1e-6 > c ? S->sample_us * 1e-6 : c;
    double check = c + (double)m * 2e-9;
    return ntarget * (S->t_team + warm + reps * (sample + 20e-6) + check) +
           2e-3;
}

/* ---- one point ----------------------------------------------------------- */

/* A team for ch (coll's single rule); 0 on every rank, or -1 on every
 * rank when any rank could not make it or the team resolved to something
 * else than ch. */
static int open_cand(rstate_t *S, int coll, size_t m, const nc__choice_t *ch,
                     ncb_team_t **tm, ncb_target_t *t)
{
    char text[256], err[200] = "";
    tn_cand_text(coll, ch, text, sizeof text);
    numacoll_config_t cfg = S->base;
    cfg.tuning_text = text;
    int auto_alg[NCB_OP_COUNT];
    auto_algs(auto_alg);
    double bad = 0;
    *tm = NULL;
    if (ncb_team_open(S->b, &cfg, auto_alg, tm, t, err, sizeof err) != 0) {
        bad = 1;
    } else {
        const nc__choice_t *got =
            nc__team_choice(ncb_team_handle(*tm), (nc__coll_t)coll, m);
        if (!tn_choice_same(&S->x, got, ch)) {
            char a[128];
            tn_choice_str(got, a, sizeof a);
            snprintf(err, sizeof err, "the team runs %s instead", a);
            bad = 2;
        }
    }
    double any = bad;
    if (S->w.allmax(&S->w, &any, 1) != 0)
        any = 1;
    if (any == 0)
        return 0;
    if (bad)
        fprintf(stderr, "%snumacoll-tune: rank %d: candidate '%.*s' left "
                "out: %s\n", S->bar_drawn ? "\r\033[K" : "", S->w.rank,
                (int)strcspn(text, "\n"), text, err);
    ncb_team_close(*tm);
    *tm = NULL;
    return -1;
}

/* What rank 0 measured at a point: the default's two medians and the two
 * fastest others (tn_decide, in the parent, makes the choice). */
static void record(rstate_t *S, tn_point_t *pt, int op, size_t m,
                   const nc__choice_t *def, const tn_cand_t *c, int n,
                   const ncb_row_t *rows, int nrows)
{
    memset(pt, 0, sizeof *pt);
    pt->op = op;
    pt->m = m;
    pt->def = *def;
    pt->ncand = n;
    pt->reps = S->mo.reps;
    const ncb_row_t *r0 = NULL, *r1 = NULL;
    for (int i = 0; i < nrows; i++) {
        const ncb_row_t *r = &rows[i];
        if (r->cfg == 0) {
            r0 = r;
        } else if (r->cfg == n + 1) {
            r1 = r;
        } else if (r->cfg >= 1 && r->cfg <= n && r->status == NCB_ROW_OK) {
            /* keep the two fastest */
            int at = pt->nalt;
            while (at > 0 && r->med < pt->t_alt[at - 1])
                at--;
            if (at < 2) {
                if (at == 0) {
                    pt->alt[1] = pt->alt[0];
                    pt->t_alt[1] = pt->t_alt[0];
                }
                pt->alt[at] = c[r->cfg - 1].ch;
                pt->t_alt[at] = r->med;
                pt->nalt += pt->nalt < 2;
            }
        } else if (r->cfg >= 1 && r->cfg <= n && r->status == NCB_ROW_BAD) {
            char s[128];
            tn_choice_str(&c[r->cfg - 1].ch, s, sizeof s);
            say(S, "%s %zu bytes: %s: received data was wrong; left out",
                op_name(op), m, s);
            pt->bad++;
        }
    }
    if (!r0 || !r1 || r0->status != NCB_ROW_OK || r1->status != NCB_ROW_OK) {
        /* the default itself failed: nothing to compare with */
        say(S, "%s %zu bytes: the built-in choice failed its check",
            op_name(op), m);
        pt->status = TN_PT_ONE_SHAPE;
        pt->nalt = 0;
        pt->bad++;
        return;
    }
    pt->t_def[0] = r0->med;
    pt->t_def[1] = r1->med;
    double lo = fmin(r0->med, r1->med);
    pt->noise = lo > 0 ? fabs(r0->med - r1->med) / lo : 0;
}

/* Rank 0: the confirmation round (default, winner, default, each a fresh
 * team) replaces the first round's times of the default and the winner.
 * The runner-up keeps its first-round time, scaled by how the default
 * moved between the rounds, and never counts as faster than the winner. */
static void confirm(tn_point_t *pt, const ncb_row_t *rows, int nrows)
{
    const ncb_row_t *r[3] = {NULL, NULL, NULL};
    for (int i = 0; i < nrows; i++)
        if (rows[i].cfg >= 0 && rows[i].cfg < 3)
            r[rows[i].cfg] = &rows[i];
    if (!r[0] || !r[1] || !r[2] || r[0]->status != NCB_ROW_OK ||
        r[1]->status != NCB_ROW_OK || r[2]->status != NCB_ROW_OK) {
        pt->nalt = 0;   /* not confirmed: the built-in choice stays */
        return;
    }
    double old_def = (pt->t_def[0] + pt->t_def[1]) / 2;
    pt->t_def[0] = r[0]->med;
    pt->t_def[1] = r[2]->med;
    double new_def = (r[0]->med + r[2]->med) / 2;
    double lo = fmin(r[0]->med, r[2]->med);
    double noise = lo > 0 ? fabs(r[0]->med - r[2]->med) / lo : 0;
    pt->noise = fmax(pt->noise, noise);
    pt->t_alt[0] = r[1]->med;
    if (pt->nalt > 1) {
        pt->t_alt[1] *= old_def > 0 ? new_def / old_def : 1;
        if (pt->t_alt[1] < pt->t_alt[0])
            pt->t_alt[1] = pt->t_alt[0];
    }
}

static int measure_point(rstate_t *S, unit_t *u, tn_point_t *pt)
{
    const int op = u->op, coll = tn_coll_of(op);
    const size_t m = u->m;
    char zs[24], what[48];
    if (ncb_ops[op].flags & NCB_SIZED)
        snprintf(what, sizeof what, "%s %s", op_name(op),
                 tn_size_str(m, zs, sizeof zs));
    else
        snprintf(what, sizeof what, "%s", op_name(op));
    const nc__choice_t def = nc__tune_lookup(&S->deftab, (nc__coll_t)coll,
                                             m)->ch;
    tn_cand_t c[TN_MAX_CANDS];
    int n = tn_cands(&S->x, op, m, &def, tn_op_cap(op, S->o->quick), c);

    /* rank 0 decides how much of it fits the time left */
    double d[3] = {0, 0, 0};
    if (S->w.rank == 0) {
        double left = S->job->deadline - ncb_now() - RESERVE_S;
        int nc = n, reps = S->reps;
        /* nc candidates and the default twice, then the confirmation
         * round of three */
        double e = unit_est(S, op, m, nc + 5, reps) * S->corr;
        while (e > left && (nc > 1 || reps > 3)) {
            if (nc > 1)
                nc = (nc + 1) / 2;   /* the best predicted stay */
            else
                reps--;
            e = unit_est(S, op, m, nc + 5, reps) * S->corr;
        }
        d[0] = n == 0 || e <= left;
        d[1] = nc;
        d[2] = reps;
        snprintf(S->job->rep->where, sizeof S->job->rep->where,
                 "measuring %s", what);
        draw_bar(S, what);
    }
    if (from_rank0(S, d, 3) != 0)
        return 4;
    if (d[0] == 0)
        return 1;   /* left out */
    n = (int)d[1] < n ? (int)d[1] : n;
    S->mo.reps = (int)d[2];

    if (n == 0) {
        /* every variant does what the default does at this p */
        if (S->o->verbose)
            say(S, "p=%d %s: every candidate does what the built-in choice "
                "does at this p; not measured", S->w.p, what);
        memset(pt, 0, sizeof *pt);
        pt->op = op;
        pt->m = m;
        pt->status = TN_PT_ONE_SHAPE;
        pt->def = def;
        return 0;
    }
    double t0 = ncb_now();
    ncb_team_t *tm[TN_MAX_CANDS + 2] = {0}, *def2 = NULL;
    ncb_target_t t[TN_MAX_CANDS + 2], t2;
    tn_cand_t kept[TN_MAX_CANDS];
    int nk = 0, rc = 0;
    /* the default twice, as two teams: besides the drift over a round,
     * the noise then holds what differs between two teams of one
     * configuration (where their segments landed), which every
     * candidate's own team has too */
    if (open_cand(S, coll, m, &def, &tm[0], &t[0]) != 0 ||
        open_cand(S, coll, m, &def, &def2, &t2) != 0) {
        ncb_team_close(tm[0]);
        say(S, "%s: the default's rule makes no team; point left out", what);
        return 1;
    }
    for (int i = 0; i < n; i++)
        if (open_cand(S, coll, m, &c[i].ch, &tm[nk + 1], &t[nk + 1]) == 0)
            kept[nk++] = c[i];
    t[nk + 1] = t2;
    tm[nk + 1] = def2;
    S->mo.ncfg = nk + 2;
    for (int i = 0; i < nk + 2; i++) {
        if (i == 0 || i == nk + 1)
            snprintf(S->mo.cfg[i].label, sizeof S->mo.cfg[i].label,
                     "default");
        else
            tn_choice_str(&kept[i - 1].ch, S->mo.cfg[i].label,
                          sizeof S->mo.cfg[i].label);
    }
    S->rows.nrows = 0;
    rc = ncb_measure_size(S->sess, t, nk + 2, op, bench_m(S, op, m),
                          &S->rows);
    for (int i = 0; i <= nk + 1; i++)
        ncb_team_close(tm[i]);
    if (rc)
        return 4;   /* a call failed: ncb_measure_size said which */
    if (S->w.rank == 0)
        record(S, pt, op, m, &def, kept, nk, S->rows.rows, S->rows.nrows);

    /* Confirmation: the fastest other against the default again, each in
     * a fresh team (default, winner, default). Two teams of one
     * configuration can differ by more than the candidates do (where
     * their segments landed), and the machine can change state within a
     * round; a winner that owed its place to either does not survive. */
    double wi[1] = {0};
    if (S->w.rank == 0 && pt->nalt > 0)
        for (int i = 0; i < nk; i++)
            if (tn_choice_same(&S->x, &kept[i].ch, &pt->alt[0])) {
                wi[0] = i + 1;
                break;
            }
    if (from_rank0(S, wi, 1) != 0)
        return 4;
    if (wi[0] > 0) {
        ncb_team_t *ct[3] = {NULL, NULL, NULL};
        ncb_target_t ctg[3];
        const nc__choice_t *chs[3] = {&def, &kept[(int)wi[0] - 1].ch, &def};
        int ok = 1;
        for (int i = 0; i < 3 && ok; i++)
            ok = open_cand(S, coll, m, chs[i], &ct[i], &ctg[i]) == 0;
        if (ok) {
            S->mo.ncfg = 3;
            for (int i = 0; i < 3; i++)
                tn_choice_str(chs[i], S->mo.cfg[i].label,
                              sizeof S->mo.cfg[i].label);
            S->rows.nrows = 0;
            rc = ncb_measure_size(S->sess, ctg, 3, op, bench_m(S, op, m),
                                  &S->rows);
        }
        for (int i = 0; i < 3; i++)
            ncb_team_close(ct[i]);
        if (rc)
            return 4;
        if (S->w.rank == 0) {
            if (ok)
                confirm(pt, S->rows.rows, S->rows.nrows);
            else
                pt->nalt = 0;
        }
    }
    if (S->w.rank == 0) {
        double act = ncb_now() - t0;
        S->act_sum += act;
        S->est_sum += unit_est(S, op, m, nk + 2, S->mo.reps);
        S->corr = S->act_sum / S->est_sum;
        S->corr = S->corr < 0.3 ? 0.3 : S->corr > 5 ? 5 : S->corr;
        if (S->o->verbose) {
            char a[128], b[128] = "none";
            double td = (pt->t_def[0] + pt->t_def[1]) / 2;
            tn_choice_str(&pt->def, a, sizeof a);
            if (pt->nalt)
                tn_choice_str(&pt->alt[0], b, sizeof b);
            say(S, "p=%d %s: built-in %s %.2f us (noise %.1f%%); fastest "
                "other %s %.2f us (x%.2f); %d candidates, %.1f s", S->w.p,
                what, a, td * 1e6, pt->noise * 100, b,
                pt->nalt ? pt->t_alt[0] * 1e6 : 0,
                pt->nalt ? td / pt->t_alt[0] : 0, nk, act);
        }
    }
    return 0;
}

/* ---- level lists ---------------------------------------------------------- */

/* The lists tried, numa (the parameter's default) first. Lists the
 * machine does not tell apart give the same hierarchy and are measured
 * once. */
static const char *const level_lists[] = {
    "numa", "l3,numa", "numa,package", "l3,numa,package",
    "l2,l3,numa,package",
};
#define N_LEVEL_LISTS ((int)(sizeof level_lists / sizeof level_lists[0]))

/*
 * Bcast, Reduce, Allreduce (8 B and 64 KiB, as far as --sizes and the
 * session allow) and Barrier under one team per distinct level list, the
 * built-in rules in each; the list whose calls took least time (geometric
 * mean of the ratios to numa) wins when by more than TN_LEVELS_MARGIN, and
 * the points are then measured under it (S->base.levels). Rank 0 writes
 * what it saw to rep->levels_note. 0, or 4 when a team or a call failed.
 */
/* Whether the team's hierarchy keeps a level: then a Bcast relay has
 * domains to serve, and the relay is worth a candidate (tuner_cands.c). */
static int keeps_level(ncb_team_t *tm)
{
    const numacoll_team_t *t = ncb_team_handle(tm);
    nc__hier_t h;
    int keep = nc__hier_init(&h, t->p, t->cfg.levels, t->doms) ==
                   NUMACOLL_OK && h.nlev > 0;
    nc__hier_fini(&h);
    return keep;
}

static int measure_levels(rstate_t *S, size_t maxm)
{
    const tn_opts_t *o = S->o;
    tn_report_t *rep = S->job->rep;
    int auto_alg[NCB_OP_COUNT];
    auto_algs(auto_alg);
    /* one more: numa a second time, as its own team, for the noise */
    ncb_team_t *tm[N_LEVEL_LISTS + 1] = {0};
    ncb_target_t tg[N_LEVEL_LISTS + 1];
    char hier[N_LEVEL_LISTS][160];
    int idx[N_LEVEL_LISTS], n = 0, rc = 0, kept[N_LEVEL_LISTS] = {0};
    for (int i = 0; i < N_LEVEL_LISTS && !rc; i++) {
        numacoll_config_t cfg = S->base;
        cfg.levels = numacoll_levels_parse(level_lists[i]);
        /* the built-in rules, whatever $NUMACOLL_TUNING_FILE says */
        cfg.tuning_text = nc__tune_defaults_txt;
        char err[200] = "";
        if (ncb_team_open(S->b, &cfg, auto_alg, &tm[n], &tg[n], err,
                          sizeof err) != 0) {
            fprintf(stderr, "numacoll-tune: rank %d: levels %s: %s\n",
                    S->w.rank, level_lists[i], err);
            rc = 4;
            break;
        }
        /* the same on every rank: the domains came with the exchange */
        nc__team_hierarchy(ncb_team_handle(tm[n]), hier[n], sizeof hier[n]);
        kept[i] = keeps_level(tm[n]);
        int dup = 0;
        for (int j = 0; j < n && !dup; j++)
            dup = strcmp(hier[j], hier[n]) == 0;
        if (dup) {
            ncb_team_close(tm[n]);
            tm[n] = NULL;
        } else
            idx[n++] = i;
    }
    if (!rc && n >= 2) {
        numacoll_config_t cfg = S->base;
        cfg.tuning_text = nc__tune_defaults_txt;
        char err[200] = "";
        if (ncb_team_open(S->b, &cfg, auto_alg, &tm[n], &tg[n], err,
                          sizeof err) != 0) {
            fprintf(stderr, "numacoll-tune: rank %d: levels numa: %s\n",
                    S->w.rank, err);
            rc = 4;
        }
    }
    /* level_lists[0] (numa) unless another list wins below */
    S->x.relay_ok = kept[0];
    if (rc || n < 2) {
        if (!rc && S->w.rank == 0)
            snprintf(rep->levels_note, sizeof rep->levels_note,
                     "every level list gives one hierarchy here (%s): "
                     "levels not tuned", hier[0]);
        for (int i = 0; i < n; i++)
            ncb_team_close(tm[i]);
        if (!rc && o->verbose)
            say(S, "p=%d: %s", S->w.p, rep->levels_note);
        return rc;
    }
    static const struct { int op; size_t m; } pts[] = {
        {NCB_OP_BCAST, 8},      {NCB_OP_BCAST, 64 * KIB},
        {NCB_OP_REDUCE, 8},     {NCB_OP_REDUCE, 64 * KIB},
        {NCB_OP_ALLREDUCE, 8},  {NCB_OP_ALLREDUCE, 64 * KIB},
        {NCB_OP_BARRIER, 0},
    };
    double logsum[N_LEVEL_LISTS] = {0}, noise = 0;
    int npts = 0;
    S->mo.ncfg = n + 1;
    S->mo.reps = S->reps;
    for (int i = 0; i <= n; i++)
        snprintf(S->mo.cfg[i].label, sizeof S->mo.cfg[i].label, "levels %s",
                 level_lists[i < n ? idx[i] : 0]);
    for (size_t k = 0; k < sizeof pts / sizeof pts[0] && !rc; k++) {
        size_t m = pts[k].m;
        if (!(o->ops & (1u << pts[k].op)) || m > maxm ||
            (m && (m < o->size_lo || m > o->size_hi)))
            continue;
        S->rows.nrows = 0;
        rc = ncb_measure_size(S->sess, tg, n + 1, pts[k].op, m, &S->rows);
        if (rc || S->w.rank != 0)
            continue;
        double t[N_LEVEL_LISTS + 1];
        int ok = 0;
        for (int r = 0; r < S->rows.nrows; r++) {
            const ncb_row_t *row = &S->rows.rows[r];
            if (row->cfg >= 0 && row->cfg <= n && row->status == NCB_ROW_OK &&
                row->med > 0) {
                t[row->cfg] = row->med;
                ok++;
            }
        }
        if (ok != n + 1)
            continue;   /* a list that failed its check counts nowhere */
        for (int i = 0; i < n; i++)
            logsum[i] += log(t[i] / t[0]);
        noise += fabs(log(t[n] / t[0]));
        npts++;
    }
    for (int i = 0; i <= n; i++)
        ncb_team_close(tm[i]);
    if (rc)
        return 4;
    double win[1] = {0};
    if (S->w.rank == 0) {
        int best = 0;
        for (int i = 1; i < n; i++)
            if (logsum[i] < logsum[best])
                best = i;
        double ratio = npts ? exp(logsum[best] / npts) : 1;
        /* the margin: TN_LEVELS_MARGIN, or what two numa teams differed
         * by (geometric mean), whichever is larger */
        double nz = npts ? exp(noise / npts) - 1 : 0;
        double margin = nz > TN_LEVELS_MARGIN ? nz : TN_LEVELS_MARGIN;
        if (best && ratio < 1 - margin)
            win[0] = idx[best];
        size_t l = (size_t)snprintf(rep->levels_note, sizeof rep->levels_note,
                                    "levels, time against numa over %d "
                                    "point%s:", npts, npts == 1 ? "" : "s");
        for (int i = 0; i < n && l < sizeof rep->levels_note; i++)
            l += (size_t)snprintf(rep->levels_note + l,
                                  sizeof rep->levels_note - l,
                                  "%s %s x%.2f (%s)", i ? ";" : "",
                                  level_lists[idx[i]],
                                  npts ? exp(logsum[i] / npts) : 1.0, hier[i]);
        if (l < sizeof rep->levels_note)
            snprintf(rep->levels_note + l, sizeof rep->levels_note - l,
                     "; two numa teams differed by %.1f%%; %s", nz * 100,
                     win[0] ? "the fastest is written"
                            : "numa kept (none faster by more than that, "
                              "or 5%)");
        if (o->verbose)
            say(S, "p=%d: %s", S->w.p, rep->levels_note);
    }
    if (from_rank0(S, win, 1) != 0)
        return 4;
    if (win[0] > 0) {
        S->base.levels = numacoll_levels_parse(level_lists[(int)win[0]]);
        S->x.relay_ok = kept[(int)win[0]];
        if (S->w.rank == 0)
            rep->levels_win = S->base.levels;
    }
    return 0;
}

/* ---- the run ------------------------------------------------------------- */

/* Where the ranks sit: localities of all, NUMA nodes spanned, most ranks
 * on one node; and what creating a team costs. */
static int probe(rstate_t *S, numacoll_locality_t *loc, unsigned *nodes,
                 unsigned *ppn)
{
    int p = S->w.p;
    double t0 = ncb_now();
    numacoll_team_t *team = NULL;
    int st = numacoll_team_create(S->b, &S->base, &team);
    if (st != NUMACOLL_OK) {
        fprintf(stderr, "numacoll-tune: rank %d: cannot create a team: %s\n",
                S->w.rank, numacoll_strerror(st));
        return 4;
    }
    for (int r = 0; r < p; r++)
        if (numacoll_team_locality(team, r, &loc[r]) != NUMACOLL_OK)
            loc[r].numa = -1;
    S->cma_ok = numacoll_team_single_copy(team, NULL);   /* alike everywhere */
    S->rf_max = team->rf_max;
    numacoll_team_destroy(team);
    double tt = ncb_now() - t0;
    if (S->w.allmax(&S->w, &tt, 1) != 0)
        return 4;
    S->t_team = tt;
    unsigned nn = 0, most = 0;
    for (int r = 0; r < p; r++) {
        int first = 1;
        unsigned here = 0;
        for (int q = 0; q < p; q++) {
            if (loc[q].numa == loc[r].numa) {
                here++;
                if (q < r)
                    first = 0;
            }
        }
        nn += first;
        most = here > most ? here : most;
    }
    *nodes = nn ? nn : 1;
    *ppn = most ? most : (unsigned)p;
    return 0;
}

static int run(rstate_t *S)
{
    const tn_opts_t *o = S->o;
    tn_report_t *rep = S->job->rep;
    const int p = S->w.p, me = S->w.rank;
    numacoll_locality_t *loc = calloc((size_t)p, sizeof *loc);
    if (!loc)
        return 4;
    unsigned nodes = 1, ppn = 1;
    int rc = probe(S, loc, &nodes, &ppn);
    if (rc) {
        free(loc);
        return rc;
    }

    /* the model: fitted on this team's ranks */
    nc__model_t md;
    double t0 = ncb_now();
    int st = nc__model_fit(S->b, &S->base, o->quick, &md);
    double fail = st != NUMACOLL_OK;
    if (S->w.allmax(&S->w, &fail, 1) != 0) {
        free(loc);
        return 4;
    }
    if (fail)
        tn_model_assumed(&md);
    if (me == 0) {
        rep->p = p;
        rep->nodes = nodes;
        rep->ppn = ppn;
        if (o->sizes_given)
            rep->rule_bounded = 1, rep->rule_lo = o->size_lo,
            rep->rule_hi = o->size_hi;
        rep->model = md;
        rep->model_ok = !fail;
        if (fail)
            snprintf(rep->model_note, sizeof rep->model_note,
                     "the fit failed (%s); candidates from assumed constants",
                     st != NUMACOLL_OK ? numacoll_strerror(st)
                                       : "on another rank");
        rep->fit_s = ncb_now() - t0;
    }

    if (tn_ctx_init(&S->x, p, nodes, ppn, loc, &md, o->quick) != 0 ||
        nc__tune_resolve(nc__tune_builtin(), (unsigned)p, nodes, ppn,
                         &S->deftab) != 0) {
        fprintf(stderr, "numacoll-tune: rank %d: out of memory\n", me);
        tn_ctx_fini(&S->x);
        free(loc);
        return 4;
    }
    S->x.cma_ok = S->cma_ok;
    /* the default is what a team runs: without single copy its cma rules
     * run copy-in/copy-out */
    if (!S->cma_ok)
        nc__tune_no_cma(&S->deftab, S->rf_max);

    /* the plan, coarse to fine */
    for (int op = 0; op < NCB_OP_COUNT; op++)
        if (o->ops & (1u << op))
            plan_op(S, op);
    qsort(S->u, (size_t)S->nu, sizeof S->u[0], by_level);
    size_t maxm = 0;
    for (int i = 0; i < S->nu; i++) {
        /* a gather's region holds p blocks (numacoll-bench's span; a
         * Reduce_scatter's table size is its span already) */
        size_t span = S->u[i].m;
        if (ncb_ops[S->u[i].op].flags & NCB_BLOCKS)
            span *= (size_t)p;
        maxm = span > maxm ? span : maxm;
        S->u[i].est = unit_est(S, S->u[i].op, S->u[i].m,
                               tn_op_cap(S->u[i].op, o->quick) + 2, S->reps);
        S->work_total += S->u[i].est;
    }

    /* a full run with time to spare takes more samples (up to twice as
     * many): the medians steady, fewer ties and fewer flukes. --quick
     * stays short, as CI runs it. */
    double left = S->job->deadline - ncb_now();
    if (!o->quick && S->work_total > 0 && me == 0) {
        double room = 0.5 * left / S->work_total;
        int reps = (int)(S->reps * (room < 1 ? 1 : room > 2 ? 2 : room));
        double w0 = S->work_total;
        S->work_total = 0;
        for (int i = 0; i < S->nu; i++) {
            S->u[i].est = unit_est(S, S->u[i].op, S->u[i].m,
                                   tn_op_cap(S->u[i].op, o->quick) + 2, reps);
            S->work_total += S->u[i].est;
        }
        S->reps = reps;
        if (o->verbose)
            say(S, "p=%d: %d points, about %.0f s at %d samples (%.0f s at "
                "the base %d); %.0f s left", p, S->nu, S->work_total, reps, w0,
                o->quick ? TN_REPS_QUICK : TN_REPS_FULL, left);
    }
    double dr = S->reps;
    if (from_rank0(S, &dr, 1) != 0) {
        tn_ctx_fini(&S->x);
        nc__tune_team_free(&S->deftab);
        free(loc);
        return 4;
    }
    S->reps = (int)dr;
    if (me == 0) {
        rep->reps = S->reps;
        rep->ncand = S->ncand;
        rep->sample_us = S->sample_us;
    }

    /* the measurement's options: numacoll-bench's defaults but quiet, no
     * memcpy reference, our sample length and count */
    memset(&S->mo, 0, sizeof S->mo);
    S->mo.mode = NCB_STANDALONE;
    S->mo.p = p;
    S->mo.root_shift = 1;
    S->mo.check = 1;
    S->mo.reps = S->reps;
    S->mo.warmup = -1;
    S->mo.sample_us = S->sample_us;
    S->mo.quiet = 1;
    S->mo.no_memcpy = 1;
    /* as applications allocate: the copy variants differ only on buffers
     * that are not co-aligned with the segment (docs/bench.md) */
    S->mo.align = NCB_ALIGN_MALLOC;
    S->mo.ncfg = 1;
    ncb_report_init(&S->rows, &S->mo, "tune", p);
    rc = ncb_session_open(&S->mo, &S->w, maxm, &S->sess);
    if (!rc)
        rc = measure_levels(S, maxm);

    for (int i = 0; i < S->nu && !rc; i++) {
        tn_point_t pt;
        int r = measure_point(S, &S->u[i], &pt);
        if (r == 0 && me == 0 && rep->npoints < TN_MAX_POINTS) {
            rep->pt[rep->npoints] = pt;
            /* the parent may read a failed run's points: count after */
            rep->npoints++;
        } else if (r == 1 && me == 0) {
            char zs[24];
            size_t l = strlen(rep->skipped_list);
            /* room for one more and a closing ", ..." */
            if (l + 40 < sizeof rep->skipped_list)
                snprintf(rep->skipped_list + l, sizeof rep->skipped_list - l,
                         "%s%s%s%s", l ? ", " : "", op_name(S->u[i].op),
                         S->u[i].m ? " " : "",
                         S->u[i].m ? tn_size_str(S->u[i].m, zs, sizeof zs)
                                   : "");
            else if (!strstr(rep->skipped_list, ", ..."))
                snprintf(rep->skipped_list + l, sizeof rep->skipped_list - l,
                         ", ...");
            rep->skipped++;
        } else if (r > 1) {
            rc = r;
        }
        S->work_done += S->u[i].est;
    }
    if (me == 0) {
        draw_bar(S, "done");
        rep->elapsed_s = ncb_now() - S->job->t_start;
    }
    ncb_session_close(S->sess);
    ncb_report_free(&S->rows);
    nc__tune_team_free(&S->deftab);
    tn_ctx_fini(&S->x);
    free(loc);
    return rc;
}

int tn_rank_main(const numacoll_bootstrap_t *b, void *arg)
{
    tn_job_t *job = arg;
    const tn_opts_t *o = job->o;
    rstate_t *S = calloc(1, sizeof *S);
    if (!S)
        return 4;
    S->job = job;
    S->o = o;
    S->b = b;
    ncb_team_world(b, job->lines, &S->w);
    numacoll_config_init(&S->base);
    S->base.verbose = o->verbose >= 2 ? 1 : 0;
    /* a wait that hangs becomes an error naming who waited for whom */
    S->base.timeout_ms = 30000;
    S->base.topology = o->topology;
    if (o->topology)
        S->base.pu = b->rank;
    S->corr = 1;
    S->reps = o->quick ? TN_REPS_QUICK : TN_REPS_FULL;
    S->ncand = o->quick ? TN_CANDS_QUICK : TN_CANDS_FULL;
    S->sample_us = o->quick ? TN_SAMPLE_QUICK : TN_SAMPLE_FULL;
    int rc = run(S);
    if (b->rank == 0)
        job->rep->status = rc;
    free(S);
    return rc;
}
