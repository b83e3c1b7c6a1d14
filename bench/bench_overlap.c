/*
 * numacoll-bench --overlap: how much of a nonblocking collective an
 * application can hide behind its own computation, measured the way OSU's
 * osu_ibcast, osu_iallreduce, osu_ireduce and osu_ibarrier measure it by
 * default, for both builds (numacoll teams standalone, MPI_I* under MPI).
 *
 * Per operation, size and configuration (configurations interleaved, A B A
 * B, as the main loop does), every sample is K calls, each after an
 * untimed barrier, with root 0:
 *
 *   blocking    the blocking call alone;
 *   start+wait  start the nonblocking call, wait for it at once: t_pure,
 *               what the nonblocking form costs where nothing overlaps;
 *   total       start, compute for about t_pure, wait: t_total, from the
 *               start to the end of the wait; the computation is timed
 *               alone too (t_compute).
 *
 * overlap = max(0, 100 (1 - (t_total - t_compute) / t_pure)): 100 % when
 * the wait returns at once after the computation (the collective moved
 * entirely behind it), 0 % when the collective only moved inside the wait.
 * The computation is a dummy loop calibrated once per rank (iterations per
 * second of a multiply-add chain the compiler cannot drop), set to last
 * the largest t_pure over ranks of the sample before; it makes no progress
 * call (OSU's default), so what overlaps is what the library does without
 * being called: in the start call, or in other processes.
 *
 * A sample's times are the mean over its K calls on each rank, then the
 * maximum over ranks; its overlap is the least over ranks (the rank that
 * hid the least bounds what an application gains). Rows give medians over
 * --reps samples. Buffers are one malloc'ed pair per rank, reused (hot, as
 * OSU's); one call per (operation, size, configuration) is checked in
 * full before timing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

/* What a row carries: medians of the samples, in seconds; ov in %. */
typedef struct ovl_row {
    int op, cfg;
    size_t bytes;
    int calls, samples;
    double blocking, pure, compute, total, ov;
    int status;                 /* NCB_ROW_OK, _NA, _BAD */
    char note[64];
} ovl_row_t;

/* The dummy computation: a chain of multiply-adds the compiler must keep
 * (the asm makes x opaque), n steps. */
static uint64_t busy(uint64_t n)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (uint64_t i = 0; i < n; i++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        __asm__ __volatile__("" : "+r"(x));
    }
    return x;
}

/* Steps of busy() per second on this rank: the fastest of five timings
 * of a few milliseconds (a preemption only makes one slower). */
static double busy_rate(void)
{
    const uint64_t n = 2000000;
    double best = 1e9;
    for (int i = 0; i < 5; i++) {
        double t0 = ncb_now();
        (void)busy(n);
        double t = ncb_now() - t0;
        best = t < best ? t : best;
    }
    return (double)n / (best > 1e-9 ? best : 1e-9);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The call at size m: root 0, sums of uint32. */
static void call_of(int op, size_t m, int rank, unsigned char *s,
                    unsigned char *r, ncb_call_t *c)
{
    c->sbuf = s;
    c->rbuf = r;
    c->bytes = m;
    c->count = ncb_ops[op].elem ? m / ncb_ops[op].elem : 0;
    c->root = 0;
    c->buf = rank == 0 ? s : r;
    c->dt = NULL;   /* uint32 SUM: --overlap takes no --dtype */
}

/* One call through start and wait with fresh data, checked: 0, or 1 with
 * a sentence in why. */
static int check_once(ncb_target_t *t, int op, size_t m, int rank, int p,
                      unsigned char *s, unsigned char *r, char *why,
                      size_t len)
{
    ncb_call_t c;
    call_of(op, m, rank, s, r, &c);
    const int sum = (ncb_ops[op].flags & NCB_SUM) != 0;
    if (sum) {
        uint32_t *v = (uint32_t *)s, *d = (uint32_t *)r;
        for (size_t i = 0; i < c.count; i++) {
            v[i] = (uint32_t)(i * 2654435761u) + (uint32_t)rank;
            d[i] = 0xdeadbeefu;
        }
    } else if (op == NCB_OP_BCAST) {
        unsigned char *b = c.buf;
        for (size_t i = 0; i < m; i++)
            b[i] = rank == 0 ? (unsigned char)(i * 131u + 7u) : 0;
    }
    if (t->istart[op](t->ctx, &c) || t->iwait(t->ctx)) {
        snprintf(why, len, "call failed%s%s", t->last_error ? ": " : "",
                 t->last_error ? t->last_error(t->ctx) : "");
        return 1;
    }
    if (sum && (op == NCB_OP_ALLREDUCE || rank == 0)) {
        const uint32_t *d = (const uint32_t *)r;
        for (size_t i = 0; i < c.count; i++)
            if (d[i] != (uint32_t)(i * 2654435761u) * (uint32_t)p +
                            (uint32_t)(p * (p - 1) / 2)) {
                snprintf(why, len, "CHECK FAILED: element %zu on rank %d", i,
                         rank);
                return 1;
            }
    } else if (op == NCB_OP_BCAST && rank != 0) {
        const unsigned char *b = c.buf;
        for (size_t i = 0; i < m; i++)
            if (b[i] != (unsigned char)(i * 131u + 7u)) {
                snprintf(why, len, "CHECK FAILED: byte %zu on rank %d", i,
                         rank);
                return 1;
            }
    }
    return 0;
}

/* One sample of one configuration: the means over k calls of the four
 * times on this rank (blocking, start+wait, compute, total). */
static int sample(ncb_target_t *t, int op, size_t m, int rank,
                  unsigned char *s, unsigned char *r, int k, uint64_t steps,
                  double out[4])
{
    ncb_call_t c;
    call_of(op, m, rank, s, r, &c);
    double acc[4] = {0, 0, 0, 0};
    for (int i = 0; i < k; i++) {
        if (t->barrier(t->ctx))
            return 3;
        double t0 = ncb_now();
        if (t->run[op](t->ctx, &c))
            return 3;
        acc[0] += ncb_now() - t0;

        if (t->barrier(t->ctx))
            return 3;
        t0 = ncb_now();
        if (t->istart[op](t->ctx, &c) || t->iwait(t->ctx))
            return 3;
        acc[1] += ncb_now() - t0;

        if (t->barrier(t->ctx))
            return 3;
        t0 = ncb_now();
        if (t->istart[op](t->ctx, &c))
            return 3;
        double c0 = ncb_now();
        (void)busy(steps);
        double c1 = ncb_now();
        if (t->iwait(t->ctx))
            return 3;
        acc[3] += ncb_now() - t0;
        acc[2] += c1 - c0;
    }
    for (int j = 0; j < 4; j++)
        out[j] = acc[j] / k;
    return 0;
}

static void print_head(int op, int p, int reps, double rate, FILE *to)
{
    fprintf(to, "#\n# i%s, p = %d: microseconds, medians of %d samples; "
            "root 0; compute = a dummy loop of about start+wait, no progress "
            "calls (%.0f M steps/s)\n# overlap %% = max(0, 100 (1 - (total - "
            "compute) / start+wait)), the least over ranks\n",
            ncb_ops[op].name, p, reps, rate * 1e-6);
    fprintf(to, "#%9s %-14s %6s %10s %10s %10s %10s %8s\n", "bytes", "config",
            "K", "blocking", "start+wait", "compute", "total", "overlap%");
}

static void print_row(const ncb_opts_t *o, const ovl_row_t *w, FILE *to)
{
    if (w->status != NCB_ROW_OK) {
        fprintf(to, "%10zu %-14s %s\n", w->bytes, o->cfg[w->cfg].label,
                w->note);
        return;
    }
    fprintf(to, "%10zu %-14s %6d %10.3f %10.3f %10.3f %10.3f %8.1f\n",
            w->bytes, o->cfg[w->cfg].label, w->calls, w->blocking * 1e6,
            w->pure * 1e6, w->compute * 1e6, w->total * 1e6, w->ov);
}

static int write_csv(const ncb_opts_t *o, const char *mode, int p,
                     const ovl_row_t *rows, int n)
{
    FILE *f = fopen(o->csv, "w");
    if (!f) {
        fprintf(stderr, "numacoll-bench: cannot write %s\n", o->csv);
        return 5;
    }
    fprintf(f, "mode,op,config,p,bytes,calls,samples,blocking_us,"
            "startwait_us,compute_us,total_us,overlap_pct,status,note\n");
    for (int i = 0; i < n; i++) {
        const ovl_row_t *w = &rows[i];
        fprintf(f, "%s,i%s,%s,%d,%zu,%d,%d,%.4f,%.4f,%.4f,%.4f,%.2f,%s,\"%s\"\n",
                mode, ncb_ops[w->op].name, o->cfg[w->cfg].label, p, w->bytes,
                w->calls, w->samples, w->blocking * 1e6, w->pure * 1e6,
                w->compute * 1e6, w->total * 1e6, w->ov,
                w->status == NCB_ROW_OK ? "ok" : w->status == NCB_ROW_NA
                                                     ? "na" : "bad",
                w->note);
    }
    return fclose(f) == 0 ? 0 : 5;
}

/* Measure op at size m over the configurations; rank 0 appends rows. */
static int measure(const ncb_opts_t *o, ncb_world_t *w, ncb_target_t *t,
                   int ncfg, int op, size_t m, unsigned char *s,
                   unsigned char *r, double rate, ovl_row_t *rows, int *nrows)
{
    const int reps = o->reps;
    int ok[NCB_MAX_CFGS];
    char why[NCB_MAX_CFGS][64];
    double est[NCB_MAX_CFGS];
    for (int c = 0; c < ncfg; c++) {
        why[c][0] = '\0';
        ok[c] = t[c].run[op] && t[c].istart[op] && t[c].iwait;
        if (!ok[c])
            snprintf(why[c], sizeof why[c], "n/a: no nonblocking %s here",
                     ncb_ops[op].name);
        else if (ncb_ops[op].elem > 1 && m % ncb_ops[op].elem)
            ok[c] = 0, snprintf(why[c], sizeof why[c], "n/a: not a multiple "
                                "of %zu bytes", ncb_ops[op].elem);
        est[c] = 0;
        if (!ok[c])
            continue;
        /* 1. one checked call, then the estimate that sets K and the
         * first computation: the slowest rank's start+wait */
        double bad = check_once(&t[c], op, m, w->rank, w->p, s, r, why[c],
                                sizeof why[c]);
        if (w->allmax(w, &bad, 1))
            return 4;
        if (bad) {
            if (!why[c][0])
                snprintf(why[c], sizeof why[c], "CHECK FAILED on another "
                         "rank");
            ok[c] = -1;
            continue;
        }
        /* warm-up (about 1 MiB of data, 2 to 100 calls of each kind),
         * then the faster of two short samples: first calls pay for
         * connections and setup, a preemption must not shrink K */
        size_t wn = o->warmup >= 0 ? (size_t)o->warmup
                                   : ((size_t)1 << 20) / (m ? m : 1);
        wn = wn < 2 ? 2 : wn > 100 ? 100 : wn;
        double v[4], y[4];
        if (sample(&t[c], op, m, w->rank, s, r, (int)wn, 0, v) ||
            sample(&t[c], op, m, w->rank, s, r, 3, 0, v) ||
            sample(&t[c], op, m, w->rank, s, r, 3, 0, y))
            return 3;
        est[c] = v[1] < y[1] ? v[1] : y[1];
    }
    if (w->allmax(w, est, ncfg))
        return 4;
    double worst = 0;
    for (int c = 0; c < ncfg; c++)
        worst = est[c] > worst ? est[c] : worst;
    int k = o->iters;
    if (!k) {
        /* a call costs about 3 x start+wait with its computation */
        double want = o->sample_us * 1e-6 / (3 * (worst > 1e-9 ? worst : 1e-9));
        k = want < 1 ? 1 : want > 10000 ? 10000 : (int)(want + 0.5);
    }
    /* 2. samples, configurations interleaved; per rank the four means
     * and the overlap, gathered once at the end */
    const int per = 5;
    double *mine = calloc((size_t)reps * (size_t)ncfg * per, sizeof *mine);
    double *all = calloc((size_t)reps * (size_t)ncfg * per * (size_t)w->p,
                         sizeof *all);
    if (!mine || !all) {
        free(mine);
        free(all);
        return 4;
    }
    double pure[NCB_MAX_CFGS];
    memcpy(pure, est, sizeof pure);
    int rc = 0;
    for (int rep = 0; rep < reps && !rc; rep++)
        for (int c = 0; c < ncfg && !rc; c++) {
            if (ok[c] != 1)
                continue;
            double v[4], *x = &mine[((size_t)rep * ncfg + c) * per];
            rc = sample(&t[c], op, m, w->rank, s, r, k,
                        (uint64_t)(pure[c] * rate), v);
            if (rc)
                break;
            memcpy(x, v, sizeof v);
            double ov = 100.0 * (1.0 - (v[3] - v[2]) / (v[1] > 0 ? v[1] : 1));
            x[4] = ov < 0 ? 0 : ov > 100 ? 100 : ov;
            /* the next computation lasts this sample's start+wait, the
             * slowest rank's (every rank computes alike) */
            double next = v[1];
            if (w->allmax(w, &next, 1)) {
                rc = 4;
                break;
            }
            pure[c] = next;
        }
    if (!rc && w->gather(w, mine, reps * ncfg * per, all))
        rc = 4;
    if (!rc && w->rank == 0) {
        double *col[5];
        for (int j = 0; j < per; j++)
            col[j] = malloc((size_t)reps * sizeof **col);
        for (int c = 0; c < ncfg; c++) {
            ovl_row_t *row = &rows[(*nrows)++];
            memset(row, 0, sizeof *row);
            row->op = op;
            row->cfg = c;
            row->bytes = m;
            if (ok[c] != 1) {
                row->status = ok[c] < 0 ? NCB_ROW_BAD : NCB_ROW_NA;
                snprintf(row->note, sizeof row->note, "%s", why[c]);
                continue;
            }
            row->calls = k;
            row->samples = reps;
            for (int rep = 0; rep < reps; rep++)
                for (int j = 0; j < per; j++) {
                    double v = j == 4 ? 100 : 0;
                    for (int q = 0; q < w->p; q++) {
                        double x = all[(size_t)q * reps * ncfg * per +
                                       ((size_t)rep * ncfg + c) * per + j];
                        v = j == 4 ? (x < v ? x : v) : (x > v ? x : v);
                    }
                    col[j][rep] = v;
                }
            row->blocking = median(col[0], reps);
            row->pure = median(col[1], reps);
            row->compute = median(col[2], reps);
            row->total = median(col[3], reps);
            row->ov = median(col[4], reps);
        }
        for (int j = 0; j < per; j++)
            free(col[j]);
    }
    free(mine);
    free(all);
    return rc;
}

int ncb_measure_overlap(const ncb_opts_t *o, ncb_world_t *w, ncb_target_t *t,
                        int ncfg, const char *mode, const char *where)
{
    size_t maxm = 4;
    for (int i = 0; i < o->nsizes; i++)
        maxm = o->sizes[i] > maxm ? o->sizes[i] : maxm;
    unsigned char *s = malloc(maxm), *r = malloc(maxm);
    ovl_row_t *rows = calloc((size_t)NCB_OP_COUNT * (size_t)(o->nsizes + 1) *
                             (size_t)ncfg, sizeof *rows);
    if (!s || !r || !rows) {
        fprintf(stderr, "numacoll-bench: rank %d: out of memory for the "
                "overlap buffers (2 x %zu bytes)\n", w->rank, maxm);
        free(s);
        free(r);
        free(rows);
        return 4;
    }
    /* every page touched before anything is timed */
    memset(s, 1, maxm);
    memset(r, 2, maxm);
    double rate = busy_rate();
    int nrows = 0, rc = 0, failed = 0;
    if (w->rank == 0 && !o->quiet) {
        printf("# numacoll-bench %s --overlap (%s): %d ranks, %s\n",
               NCB_VERSION, mode, w->p, where);
        for (int c = 0; c < ncfg; c++)
            printf("#   %s\n", o->cfg[c].label);
    }
    for (int op = 0; op < NCB_OP_COUNT && !rc; op++) {
        if (!(o->ops & (1u << op)))
            continue;
        if (w->rank == 0 && !o->quiet)
            print_head(op, w->p, o->reps, rate, stdout);
        int n = (ncb_ops[op].flags & NCB_SIZED) ? o->nsizes : 1;
        for (int i = 0; i < n && !rc; i++) {
            size_t m = (ncb_ops[op].flags & NCB_SIZED) ? o->sizes[i] : 0;
            int first = nrows;
            rc = measure(o, w, t, ncfg, op, m, s, r, rate, rows, &nrows);
            for (int j = first; j < nrows && w->rank == 0; j++) {
                failed |= rows[j].status == NCB_ROW_BAD;
                if (!o->quiet)
                    print_row(o, &rows[j], stdout);
            }
            if (w->rank == 0 && !o->quiet)
                fflush(stdout);
        }
    }
    if (!rc && w->rank == 0 && o->csv)
        rc = write_csv(o, mode, w->p, rows, nrows);
    if (!rc && w->sync(w))
        rc = 4;
    free(s);
    free(r);
    free(rows);
    return rc ? rc : failed;
}
