/*
 * numacoll-bench output: the terminal table (one line per size as it
 * completes, like the OSU benchmarks), CSV, JSON, the gnuplot PNG, and
 * --merge, which reads CSV files of several runs back into one report so
 * that bench/compare-ompi.sh prints its comparison with this same code.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench.h"

#define US(s) ((s) * 1e6)

/* ---- the report ---------------------------------------------------------------- */

void ncb_report_init(ncb_report_t *r, const ncb_opts_t *o, const char *mode,
                     int p)
{
    memset(r, 0, sizeof *r);
    r->mode = mode;
    r->p = p;
    r->ncfg = o->ncfg;
    for (int i = 0; i < o->ncfg; i++) {
        snprintf(r->label[i], sizeof r->label[i], "%s", o->cfg[i].label);
        r->barrier_s[i] = -1;
        if (o->baseline[0] && strcmp(o->baseline, o->cfg[i].label) == 0)
            r->baseline = i;
    }
    r->line_rtt = r->line_rtt_end = -1;
    r->hot = o->hot;
    r->check = o->check;
    r->root_shift = o->root_shift;
    r->reps = o->reps;
    r->iters = o->iters;
    r->sample_us = o->sample_us;
    r->align = o->align;
    r->loops = o->loops ? o->loops : NCB_LOOP_B2B;
    r->ndtype = o->ndtype;
    for (int i = 0; i < o->ndtype; i++)
    {
        snprintf(r->dtype[i], sizeof r->dtype[i], "%s", o->dtype[i].name);
        snprintf(r->dtype_op[i], sizeof r->dtype_op[i], "%s",
                 o->dtype[i].minloc ? "minloc" : "sum");
    }
}

/* The dtype of a section: --dtype's name for a reduction, else "". */
static const char *sec_dtype(const ncb_report_t *r, int sec)
{
    if (!(ncb_ops[NCB_SEC_OP(sec)].flags & NCB_SUM) || !r->ndtype)
        return "";
    return r->dtype[NCB_SEC_DT(sec)];
}

/* An op's description without its "uint32 sum " (said per dtype). */
static const char *what_of(const char *what)
{
    static const char def[] = "uint32 sum ";
    return strncmp(what, def, sizeof def - 1) == 0 ? what + sizeof def - 1
                                                   : what;
}

/* "allreduce", or with --dtype "allreduce double". */
static const char *sec_name(const ncb_report_t *r, int sec, char *buf,
                            size_t len)
{
    const char *dt = sec_dtype(r, sec);
    snprintf(buf, len, "%s%s%s", ncb_ops[NCB_SEC_OP(sec)].name, *dt ? " " : "",
             dt);
    return buf;
}

/* Sections a report can hold: every op once per dtype. */
static int nsections(const ncb_report_t *r)
{
    return NCB_OP_COUNT * (r->ndtype > 1 ? r->ndtype : 1);
}

ncb_row_t *ncb_report_add(ncb_report_t *r)
{
    if (r->nrows == r->cap) {
        int cap = r->cap ? 2 * r->cap : 64;
        ncb_row_t *rows = realloc(r->rows, (size_t)cap * sizeof *rows);
        if (!rows)
            return NULL;
        r->rows = rows;
        r->cap = cap;
    }
    ncb_row_t *row = &r->rows[r->nrows++];
    memset(row, 0, sizeof *row);
    row->memcpy_s = -1;
    return row;
}

void ncb_report_free(ncb_report_t *r)
{
    free(r->rows);
    r->rows = NULL;
    r->nrows = r->cap = 0;
}

/* ---- helpers ---------------------------------------------------------------- */

/* The loops in the order rows print them. */
static const int loop_order[2] = {NCB_LOOP_B2B, NCB_LOOP_APP};

static int row_loop(const ncb_row_t *row)
{
    return row->loop ? row->loop : NCB_LOOP_B2B;
}

/* The row of (op, cfg, bytes, loop) at offset align; align < 0: any. */
static const ncb_row_t *find_row(const ncb_report_t *r, int op, int cfg,
                                 size_t bytes, int loop, int align)
{
    for (int i = 0; i < r->nrows; i++)
        if (r->rows[i].op == op && r->rows[i].cfg == cfg &&
            r->rows[i].bytes == bytes && row_loop(&r->rows[i]) == loop &&
            (align < 0 || r->rows[i].align == align))
            return &r->rows[i];
    return NULL;
}

/* Both loops in this report: rows then carry a loop column. */
static int both_loops(const ncb_report_t *r)
{
    return (r->loops & NCB_LOOP_B2B) && (r->loops & NCB_LOOP_APP);
}

/* The distinct offsets of op's rows, ascending; returns how many (at most
 * max). */
static int offsets_of(const ncb_report_t *r, int op, int *offs, int max)
{
    int n = 0;
    for (int i = 0; i < r->nrows; i++) {
        if (r->rows[i].op != op)
            continue;
        int a = r->rows[i].align, seen = 0;
        for (int j = 0; j < n; j++)
            seen |= offs[j] == a;
        if (seen || n == max)
            continue;
        int j = n++;
        for (; j > 0 && offs[j - 1] > a; j--)
            offs[j] = offs[j - 1];
        offs[j] = a;
    }
    /* a run prints the heading before its first row */
    if (n == 0 && r->align == NCB_ALIGN_SWEEP)
        for (; n < NCB_SWEEP_N && n < max; n++)
            offs[n] = ncb_sweep_offsets[n];
    return n;
}

/* Best and worst offset of (op, cfg, bytes, loop) by median: 0, or -1
 * when no row there has a time. */
static int best_worst(const ncb_report_t *r, int op, int cfg, size_t bytes,
                      int loop, const ncb_row_t **best,
                      const ncb_row_t **worst)
{
    *best = *worst = NULL;
    for (int i = 0; i < r->nrows; i++) {
        const ncb_row_t *x = &r->rows[i];
        if (x->op != op || x->cfg != cfg || x->bytes != bytes ||
            row_loop(x) != loop || x->status == NCB_ROW_NA)
            continue;
        if (!*best || x->med < (*best)->med)
            *best = x;
        if (!*worst || x->med > (*worst)->med)
            *worst = x;
    }
    return *best ? 0 : -1;
}

/* One-way notification limit: half the measured round trip. */
static double line_oneway(const ncb_report_t *r)
{
    return r->line_rtt > 0 ? r->line_rtt / 2 : -1;
}

/* The lower bound a row is compared with: the larger of the single-copy
 * limit and one notification. */
static double limit_of(const ncb_report_t *r, const ncb_row_t *row)
{
    double l = line_oneway(r);
    return row->memcpy_s > l ? row->memcpy_s : l;
}

static const char *human(size_t v, char *buf, size_t len)
{
    if (v >= (1u << 20) && v % (1u << 20) == 0)
        snprintf(buf, len, "%zu MiB", v >> 20);
    else if (v >= 1024 && v % 1024 == 0)
        snprintf(buf, len, "%zu KiB", v >> 10);
    else
        snprintf(buf, len, "%zu B", v);
    return buf;
}

static int sized_ops_present(const ncb_report_t *r, int *ops)
{
    int n = 0;
    for (int op = 0; op < nsections(r); op++) {
        if (!(ncb_ops[NCB_SEC_OP(op)].flags & NCB_SIZED))
            continue;
        for (int i = 0; i < r->nrows; i++)
            if (r->rows[i].op == op && r->rows[i].status != NCB_ROW_NA) {
                ops[n++] = op;
                break;
            }
    }
    return n;
}

/* ---- the terminal table ----------------------------------------------------- */

/* The buffers' alignment in words, for the header and the JSON file. */
static void align_words(const ncb_report_t *r, char *out, size_t len)
{
    if (r->align == NCB_ALIGN_MALLOC) {
        if (r->align_desc[0])
            snprintf(out, len, "malloc (as applications allocate; --align "
                     "OFF or sweep to choose): %s", r->align_desc);
        else
            snprintf(out, len, "malloc: page+%d (%d mod 64)", r->align_seen,
                     r->align_seen % 64);
    } else if (r->align == NCB_ALIGN_SWEEP) {
        snprintf(out, len, "sweep: every buffer of every rank at each offset "
                 "past a page in turn, offsets interleaved like "
                 "configurations; per size each offset's median, the best "
                 "and the worst");
    } else {
        snprintf(out, len, "--align %d: every buffer of every rank starts %d "
                 "bytes past a page (%d mod 64)", r->align, r->align,
                 r->align % 64);
    }
}

void ncb_print_header(const ncb_report_t *r, FILE *to)
{
    char a[32], b[32], al[400];
    fprintf(to, "# numacoll-bench %s: %s, p = %d%s%s\n", NCB_VERSION, r->mode,
            r->p, r->where[0] ? ", " : "", r->where);
    for (int c = 0; c < r->ncfg; c++)
        if (r->desc[c][0])
            fprintf(to, "# %-14s %s\n", c == 0 ? "configuration:" : "",
                    r->desc[c]);
    for (int c = 0; c < r->ncfg; c++)
        if (r->hier[c][0])
            fprintf(to, "# %-14s %s%s%s\n", c == 0 ? "hierarchy:" : "",
                    r->ncfg > 1 ? r->label[c] : "", r->ncfg > 1 ? ": " : "",
                    r->hier[c]);
    align_words(r, al, sizeof al);
    fprintf(to, "# alignment: %s\n", al);
    if (r->nmerged) {
        fprintf(to, "# merged: %d runs; per size and configuration the median "
                "of the runs' medians, min of mins, max of maxes\n",
                r->nmerged);
        if (both_loops(r))
            fprintf(to, "# loops: b2b = barrier, then K calls back to back; "
                    "app = barrier before every call, the call alone timed, "
                    "root 0 (OSU, IMB)\n");
        else
            fprintf(to, "# loop: %s\n", r->loops & NCB_LOOP_APP
                    ? "app = barrier before every call, the call alone "
                      "timed, root 0 (OSU, IMB)"
                    : "b2b = barrier, then K calls back to back");
    } else {
        char inter[96] = "";
        if (r->ncfg > 1 || both_loops(r) || r->align == NCB_ALIGN_SWEEP)
            snprintf(inter, sizeof inter, ", %s%s%s interleaved A B A B",
                     r->ncfg > 1 ? "configurations" : "",
                     r->ncfg > 1 && (both_loops(r) ||
                                     r->align == NCB_ALIGN_SWEEP) ? ", " : "",
                     both_loops(r) && r->align == NCB_ALIGN_SWEEP
                         ? "loops and offsets"
                     : both_loops(r) ? "loops"
                     : r->align == NCB_ALIGN_SWEEP ? "offsets" : "");
        if (r->loops & NCB_LOOP_B2B) {
            fprintf(to, "# timing%s: a sample = barrier, then every rank times "
                    "K back-to-back calls and divides by K;\n"
                    "#   its value is the max over ranks; rows: min / median "
                    "/ max over %d samples%s.\n", both_loops(r) ? " (b2b)" : "",
                    r->reps, inter);
            if (r->root_shift)
                fprintf(to, "#   the root moves by %d on every call, so a "
                        "call cannot overlap the one before it (latency, as "
                        "IMB -root_shift)\n", r->root_shift);
            else
                fprintf(to, "#   fixed root 0: back-to-back calls may overlap "
                        "(this measures throughput, not latency)\n");
        }
        if (r->loops & NCB_LOOP_APP)
            fprintf(to, "# timing%s: as OSU and IMB: K times a barrier (not "
                    "timed), then one call timed alone,\n"
                    "#   root 0; a sample = the mean of those K times, max "
                    "over ranks; rows: min / median / max over %d samples%s.\n",
                    both_loops(r) ? " (app)" : "", r->reps,
                    (r->loops & NCB_LOOP_B2B) ? "" : inter);
        fprintf(to, "#   K is %s.\n", r->iters ? "fixed by --iters"
                : "chosen per size from the warm-up so a sample lasts "
                  "about --sample-us");
        fprintf(to, "# barrier between samples (not timed; its exit skew is "
                "spread over K calls):");
        for (int c = 0; c < r->ncfg; c++)
            if (r->barrier_s[c] >= 0)
                fprintf(to, " %s%s%.2f us", r->ncfg > 1 ? r->label[c] : "",
                        r->ncfg > 1 ? " " : "", US(r->barrier_s[c]));
        fprintf(to, "\n");
        if (r->hot)
            fprintf(to, "# buffers: hot (--cache hot): every call reuses the "
                    "same buffers\n");
        else
            fprintf(to, "# buffers: cold: every call uses another region of "
                    "a %s arena per rank (2 x %s last-level cache),\n"
                    "#   visited in a shuffled order so that prefetchers "
                    "cannot run ahead\n",
                    human(r->arena, a, sizeof a), human(r->llc, b, sizeof b));
        fprintf(to, "# check: %s\n", r->check
                ? "every call's ends stamped and checked, and one call per "
                  "size checked byte for byte"
                : "off (--no-check)");
    }
    if (r->line_rtt > 0)
        fprintf(to, "# limits: memcpy of m bytes on one core, same buffers "
                "(single-copy limit); one cache line\n"
                "#   ranks 0 <-> 1: round trip %.3f us, one way %.3f us "
                "(notification limit)\n", US(r->line_rtt),
                US(line_oneway(r)));
    else
        fprintf(to, "# limits: memcpy of m bytes on one core (single-copy "
                "limit); no line round trip (p < 2)\n");
    if (r->extra[0])
        fprintf(to, "# %s\n", r->extra);
    if (r->busy[0])
        fprintf(to, "# %s\n", r->busy);
}

static int col_width(const char *label)
{
    int w = (int)strlen(label) + 1;
    return w < 10 ? 10 : w;
}

/* Width of the configuration column of the sweep table. */
static int label_width(const ncb_report_t *r)
{
    int w = 6;
    for (int c = 0; c < r->ncfg; c++)
        w = (int)strlen(r->label[c]) > w ? (int)strlen(r->label[c]) : w;
    return w;
}

#define MAX_OFFS 16

static void print_sweep_header(const ncb_report_t *r, int op, FILE *to)
{
    int offs[MAX_OFFS], n = offsets_of(r, op, offs, MAX_OFFS);
    fprintf(to, "# medians at each offset (@N: buffers N bytes past a page); "
            "best and worst offset; worst/best\n");
    fprintf(to, "# %9s%s %-*s", (ncb_ops[NCB_SEC_OP(op)].flags & NCB_SIZED) ? "bytes" : "",
            both_loops(r) ? " loop" : "", label_width(r), "config");
    for (int j = 0; j < n; j++) {
        char h[16];
        snprintf(h, sizeof h, "@%d", offs[j]);
        fprintf(to, " %9s", h);
    }
    fprintf(to, " %9s %4s %9s %4s %10s\n", "best", "@", "worst", "@",
            "worst/best");
}

void ncb_print_op_header(const ncb_report_t *r, int op, FILE *to)
{
    char name[64];
    const char *dt = sec_dtype(r, op);
    if (*dt)
        fprintf(to, "#\n# %s: %s %s %s; microseconds per call\n",
                sec_name(r, op, name, sizeof name), dt,
                r->dtype_op[NCB_SEC_DT(op)][0] ? r->dtype_op[NCB_SEC_DT(op)]
                                               : "reduction",
                what_of(ncb_ops[NCB_SEC_OP(op)].what));
    else
        fprintf(to, "#\n# %s: %s; microseconds per call\n",
                ncb_ops[NCB_SEC_OP(op)].name, ncb_ops[NCB_SEC_OP(op)].what);
    if (r->align == NCB_ALIGN_SWEEP) {
        print_sweep_header(r, op, to);
        return;
    }
    const char *base = r->label[r->baseline];
    const char *lc = both_loops(r) ? " loop" : "";
    if (r->ncfg == 1) {
        if (ncb_ops[NCB_SEC_OP(op)].flags & NCB_SIZED)
            fprintf(to, "# %9s%s %7s %10s %10s %10s %10s %8s %7s\n", "bytes",
                    lc, "K", "min", "median", "max", "memcpy", "x memcpy",
                    "x line");
        else
            fprintf(to, "# %9s%s %7s %10s %10s %10s %10s %8s %7s\n", "", lc,
                    "K", "min", "median", "max", "", "", "x line");
        return;
    }
    fprintf(to, "# medians; x %s = ratio to %s%s; x lim = ratio to max(memcpy, "
            "one-way line)\n", base, base, *lc ? " in the same loop" : "");
    fprintf(to, "# %9s%s %10s", (ncb_ops[NCB_SEC_OP(op)].flags & NCB_SIZED) ? "bytes" : "",
            lc, "memcpy");
    for (int c = 0; c < r->ncfg; c++) {
        fprintf(to, " %*s", col_width(r->label[c]), r->label[c]);
        if (c != r->baseline) {
            char h[NCB_LABEL_MAX + 4];
            snprintf(h, sizeof h, "x %s", base);
            fprintf(to, " %*s", (int)strlen(h) < 7 ? 7 : (int)strlen(h), h);
        }
        if (c == r->baseline || c == 0)
            fprintf(to, " %7s", "x lim");
    }
    fprintf(to, "\n");
}

/* Microseconds with three decimals below 10 us (nanoseconds show), two
 * below 10 ms, one above. */
static void put_us(FILE *to, int width, double seconds)
{
    double us = US(seconds);
    fprintf(to, " %*.*f", width, us < 10 ? 3 : us < 10000 ? 2 : 1, us);
}

static void print_ratio(FILE *to, int width, double num, double den)
{
    if (num > 0 && den > 0)
        fprintf(to, " %*.2f", width, num / den);
    else
        fprintf(to, " %*s", width, "-");
}

/* The start of a line: the size, and the loop when the report has both. */
static void line_start(const ncb_report_t *r, int op, size_t bytes, int loop,
                       FILE *to)
{
    if (ncb_ops[NCB_SEC_OP(op)].flags & NCB_SIZED)
        fprintf(to, "%11zu", bytes);
    else
        fprintf(to, "%11s", "");
    if (both_loops(r))
        fprintf(to, " %4s", ncb_loop_name(loop));
}

/* --align sweep: per configuration one line, each offset's median, then
 * the best and the worst offset and their ratio. */
static void print_sweep_rows(const ncb_report_t *r, int op, size_t bytes,
                             int loop, FILE *to)
{
    int offs[MAX_OFFS], n = offsets_of(r, op, offs, MAX_OFFS);
    for (int c = 0; c < r->ncfg; c++) {
        char notes[256] = "";
        line_start(r, op, bytes, loop, to);
        fprintf(to, " %-*s", label_width(r), r->label[c]);
        for (int j = 0; j < n; j++) {
            const ncb_row_t *row = find_row(r, op, c, bytes, loop, offs[j]);
            if (row && row->status != NCB_ROW_NA)
                put_us(to, 9, row->med);
            else
                fprintf(to, " %9s", row ? "n/a" : "-");
            if (row && row->note[0] &&
                strlen(notes) + strlen(row->note) + 16 < sizeof notes) {
                char one[96];
                snprintf(one, sizeof one, "  @%d: %s", offs[j], row->note);
                strcat(notes, one);
            }
        }
        const ncb_row_t *best, *worst;
        if (best_worst(r, op, c, bytes, loop, &best, &worst) == 0) {
            put_us(to, 9, best->med);
            fprintf(to, " %4d", best->align);
            put_us(to, 9, worst->med);
            fprintf(to, " %4d", worst->align);
            print_ratio(to, 10, worst->med, best->med);
        } else {
            fprintf(to, " %9s %4s %9s %4s %10s", "-", "", "-", "", "-");
        }
        fprintf(to, "%s\n", notes);
    }
}

static void print_loop_rows(const ncb_report_t *r, int op, size_t bytes,
                            int loop, FILE *to)
{
    const int sized = (ncb_ops[NCB_SEC_OP(op)].flags & NCB_SIZED) != 0;
    if (r->ncfg == 1) {
        const ncb_row_t *row = find_row(r, op, 0, bytes, loop, -1);
        if (!row)
            return;
        line_start(r, op, bytes, loop, to);
        if (row->status == NCB_ROW_NA) {
            fprintf(to, "   n/a: %s\n", row->note);
            return;
        }
        fprintf(to, " %7d", row->calls);
        put_us(to, 10, row->min);
        put_us(to, 10, row->med);
        put_us(to, 10, row->max);
        if (sized && row->memcpy_s > 0)
            put_us(to, 10, row->memcpy_s);
        else
            fprintf(to, " %10s", sized ? "-" : "");
        if (sized)
            print_ratio(to, 8, row->med, row->memcpy_s);
        else
            fprintf(to, " %8s", "");
        print_ratio(to, 7, row->med, line_oneway(r));
        fprintf(to, "%s%s\n", row->note[0] ? "  " : "", row->note);
        return;
    }
    const ncb_row_t *base = find_row(r, op, r->baseline, bytes, loop, -1);
    double mc = -1;
    int any = 0;
    for (int c = 0; c < r->ncfg; c++) {
        const ncb_row_t *row = find_row(r, op, c, bytes, loop, -1);
        any |= row != NULL;
        if (row && row->memcpy_s > 0)
            mc = row->memcpy_s;
    }
    if (!any)
        return;
    line_start(r, op, bytes, loop, to);
    if (mc > 0)
        put_us(to, 10, mc);
    else
        fprintf(to, " %10s", "-");
    char notes[256] = "";
    /* one note when every configuration says the same */
    const ncb_row_t *first = find_row(r, op, 0, bytes, loop, -1);
    int same = first && first->note[0];
    for (int c = 1; c < r->ncfg && same; c++) {
        const ncb_row_t *row = find_row(r, op, c, bytes, loop, -1);
        same = row && strcmp(row->note, first->note) == 0;
    }
    if (same)
        snprintf(notes, sizeof notes, "  %s", first->note);
    for (int c = 0; c < r->ncfg; c++) {
        const ncb_row_t *row = find_row(r, op, c, bytes, loop, -1);
        int ok = row && row->status != NCB_ROW_NA;
        if (ok)
            put_us(to, col_width(r->label[c]), row->med);
        else
            fprintf(to, " %*s", col_width(r->label[c]), "n/a");
        if (c != r->baseline) {
            int w = (int)strlen(r->label[r->baseline]) + 2;
            if (w < 7)
                w = 7;
            print_ratio(to, w, ok ? row->med : -1,
                        base && base->status != NCB_ROW_NA ? base->med : -1);
        }
        if (c == r->baseline || c == 0)
            print_ratio(to, 7, ok ? row->med : -1, ok ? limit_of(r, row) : -1);
        if (!same && row && row->note[0] &&
            strlen(notes) + strlen(row->note) + 40 < sizeof notes) {
            strcat(notes, "  ");
            strcat(notes, r->label[c]);
            strcat(notes, ": ");
            strcat(notes, row->note);
        }
    }
    fprintf(to, "%s\n", notes);
}

void ncb_print_rows(const ncb_report_t *r, int op, size_t bytes, FILE *to)
{
    for (int i = 0; i < 2; i++) {
        if (!(r->loops & (unsigned)loop_order[i]))
            continue;
        if (r->align == NCB_ALIGN_SWEEP)
            print_sweep_rows(r, op, bytes, loop_order[i], to);
        else
            print_loop_rows(r, op, bytes, loop_order[i], to);
    }
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

void ncb_print_all(const ncb_report_t *r, FILE *to)
{
    ncb_print_header(r, to);
    size_t *sizes = malloc((size_t)(r->nrows + 1) * sizeof *sizes);
    if (!sizes)
        return;
    for (int op = 0; op < nsections(r); op++) {
        int n = 0;
        for (int i = 0; i < r->nrows; i++) {
            if (r->rows[i].op != op)
                continue;
            int seen = 0;
            for (int j = 0; j < n; j++)
                seen |= sizes[j] == r->rows[i].bytes;
            if (!seen)
                sizes[n++] = r->rows[i].bytes;
        }
        if (n == 0)
            continue;
        qsort(sizes, (size_t)n, sizeof *sizes, cmp_size);
        ncb_print_op_header(r, op, to);
        for (int j = 0; j < n; j++)
            ncb_print_rows(r, op, sizes[j], to);
    }
    free(sizes);
}

/* ---- CSV --------------------------------------------------------------------- */

/* align: the buffers' offset past a page, "malloc:N" when malloc chose N;
 * loop: b2b or app. --merge also reads files of version 0.2, which lack
 * the last two columns (page-aligned buffers, b2b). */
static const char *const CSV_HEADER =
    "mode,op,config,p,bytes,calls,samples,min_us,median_us,max_us,memcpy_us,"
    "line_rtt_us,barrier_us,cache,root_shift,status,note,align,loop,dtype";
#define CSV_FIELDS 20
#define CSV_FIELDS_V03 19
#define CSV_FIELDS_V02 17

/* Quote a field when it holds a comma, a quote or a newline (RFC 4180). */
static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_num(FILE *f, double us_or_neg)
{
    fputc(',', f);
    if (us_or_neg >= 0)
        fprintf(f, "%.4f", us_or_neg);
}

int ncb_write_csv(const ncb_report_t *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "numacoll-bench: cannot write %s: %s\n", path,
                strerror(errno));
        return 1;
    }
    fprintf(f, "%s\n", CSV_HEADER);
    static const char *const st[] = {"ok", "na", "bad"};
    for (int i = 0; i < r->nrows; i++) {
        const ncb_row_t *row = &r->rows[i];
        int na = row->status == NCB_ROW_NA;
        csv_field(f, r->mode);
        fprintf(f, ",%s,", ncb_ops[NCB_SEC_OP(row->op)].name);
        csv_field(f, r->label[row->cfg]);
        fprintf(f, ",%d,%zu,", r->p, row->bytes);
        if (!na)
            fprintf(f, "%d,%d", row->calls, row->samples);
        else
            fputc(',', f);
        csv_num(f, na ? -1 : US(row->min));
        csv_num(f, na ? -1 : US(row->med));
        csv_num(f, na ? -1 : US(row->max));
        csv_num(f, row->memcpy_s > 0 ? US(row->memcpy_s) : -1);
        csv_num(f, r->line_rtt > 0 ? US(r->line_rtt) : -1);
        csv_num(f, r->barrier_s[row->cfg] >= 0 ? US(r->barrier_s[row->cfg]) : -1);
        fprintf(f, ",%s,%d,%s,", r->hot ? "hot" : "cold", r->root_shift,
                st[row->status]);
        csv_field(f, row->note);
        fprintf(f, ",%s%d,%s,%s\n", r->align == NCB_ALIGN_MALLOC ? "malloc:"
                : "", row->align, ncb_loop_name(row_loop(row)),
                sec_dtype(r, row->op));
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "numacoll-bench: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

/* ---- JSON -------------------------------------------------------------------- */

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

/* A number, or null where unknown (JSON has no NaN). */
static void json_num(FILE *f, double v, int known)
{
    if (known && isfinite(v))
        fprintf(f, "%.4f", v);
    else
        fputs("null", f);
}

int ncb_write_json(const ncb_report_t *r, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "numacoll-bench: cannot write %s: %s\n", path,
                strerror(errno));
        return 1;
    }
    fprintf(f, "{\n  \"tool\": \"numacoll-bench\",\n  \"version\": ");
    json_str(f, NCB_VERSION);
    fprintf(f, ",\n  \"mode\": ");
    json_str(f, r->mode);
    fprintf(f, ",\n  \"p\": %d,\n  \"where\": ", r->p);
    json_str(f, r->where);
    fprintf(f, ",\n  \"timing\": ");
    json_str(f, "per sample: barrier, then each rank times K back-to-back "
                "calls and divides by K; sample = max over ranks; min, "
                "median, max over samples");
    fprintf(f, ",\n  \"timing_app\": ");
    json_str(f, "per sample: K times a barrier, then one call timed alone, "
                "root 0 (as OSU and IMB); sample = the mean of the K times, "
                "max over ranks; min, median, max over samples");
    fprintf(f, ",\n  \"loops\": [%s%s%s]", (r->loops & NCB_LOOP_B2B)
            ? "\"b2b\"" : "", both_loops(r) ? ", " : "",
            (r->loops & NCB_LOOP_APP) ? "\"app\"" : "");
    char al[400];
    align_words(r, al, sizeof al);
    fprintf(f, ",\n  \"align\": ");
    if (r->align == NCB_ALIGN_MALLOC)
        json_str(f, "malloc");
    else if (r->align == NCB_ALIGN_SWEEP)
        json_str(f, "sweep");
    else
        fprintf(f, "%d", r->align);
    fprintf(f, ",\n  \"alignment\": ");
    json_str(f, al);
    fprintf(f, ",\n  \"samples\": %d,\n  \"merged_runs\": %d,\n  \"cache\": ",
            r->reps, r->nmerged);
    json_str(f, r->hot ? "hot" : "cold");
    fprintf(f, ",\n  \"arena_bytes\": %zu,\n  \"llc_bytes\": %zu,\n"
            "  \"root_shift\": %d,\n  \"check\": %s,\n  \"line_rtt_us\": ",
            r->arena, r->llc, r->root_shift, r->check ? "true" : "false");
    json_num(f, US(r->line_rtt), r->line_rtt > 0);
    fprintf(f, ",\n  \"line_rtt_end_us\": ");
    json_num(f, US(r->line_rtt_end), r->line_rtt_end > 0);
    fprintf(f, ",\n  \"note\": ");
    json_str(f, r->extra);
    fprintf(f, ",\n  \"busy\": ");
    json_str(f, r->busy);
    fprintf(f, ",\n  \"configs\": [");
    for (int c = 0; c < r->ncfg; c++) {
        fprintf(f, "%s\n    {\"label\": ", c ? "," : "");
        json_str(f, r->label[c]);
        fprintf(f, ", \"description\": ");
        json_str(f, r->desc[c]);
        fprintf(f, ", \"barrier_us\": ");
        json_num(f, US(r->barrier_s[c]), r->barrier_s[c] >= 0);
        fprintf(f, ", \"baseline\": %s}", c == r->baseline ? "true" : "false");
    }
    fprintf(f, "\n  ],\n  \"results\": [");
    static const char *const st[] = {"ok", "na", "bad"};
    for (int i = 0; i < r->nrows; i++) {
        const ncb_row_t *row = &r->rows[i];
        int ok = row->status != NCB_ROW_NA;
        fprintf(f, "%s\n    {\"op\": ", i ? "," : "");
        json_str(f, ncb_ops[NCB_SEC_OP(row->op)].name);
        fprintf(f, ", \"config\": ");
        json_str(f, r->label[row->cfg]);
        fprintf(f, ", \"bytes\": %zu, \"calls\": %d, \"samples\": %d, "
                "\"min_us\": ", row->bytes, ok ? row->calls : 0,
                ok ? row->samples : 0);
        json_num(f, US(row->min), ok);
        fprintf(f, ", \"median_us\": ");
        json_num(f, US(row->med), ok);
        fprintf(f, ", \"max_us\": ");
        json_num(f, US(row->max), ok);
        fprintf(f, ", \"memcpy_us\": ");
        json_num(f, US(row->memcpy_s), row->memcpy_s > 0);
        fprintf(f, ", \"x_memcpy\": ");
        json_num(f, row->med / row->memcpy_s, ok && row->memcpy_s > 0);
        fprintf(f, ", \"x_line\": ");
        json_num(f, row->med / line_oneway(r), ok && r->line_rtt > 0);
        fprintf(f, ", \"status\": ");
        json_str(f, st[row->status]);
        fprintf(f, ", \"note\": ");
        json_str(f, row->note);
        fprintf(f, ", \"loop\": \"%s\", \"align\": %d, \"dtype\": ",
                ncb_loop_name(row_loop(row)), row->align);
        json_str(f, sec_dtype(r, row->op));
        fputc('}', f);
    }
    fprintf(f, "\n  ]\n}\n");
    if (fclose(f) != 0) {
        fprintf(stderr, "numacoll-bench: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

/* ---- plot -------------------------------------------------------------------- */

static int have_program(const char *name)
{
    const char *path = getenv("PATH");
    if (!path)
        return 0;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    char *save = NULL;
    for (char *dir = strtok_r(buf, ":", &save); dir;
         dir = strtok_r(NULL, ":", &save)) {
        char full[4200];
        snprintf(full, sizeof full, "%s/%s", *dir ? dir : ".", name);
        if (access(full, X_OK) == 0)
            return 1;
    }
    return 0;
}

static int run_gnuplot(const char *script)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execlp("gnuplot", "gnuplot", script, (char *)NULL);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* One line of the plot: a configuration in one loop; under --align sweep
 * its best and its worst offset are two lines. */
enum { SER_ONE, SER_BEST, SER_WORST };
typedef struct series {
    int cfg, loop, which;
} series_t;

#define MAX_SERIES (NCB_MAX_CFGS * 4)

static int series_of(const ncb_report_t *r, series_t *s)
{
    int n = 0;
    for (int c = 0; c < r->ncfg; c++)
        for (int i = 0; i < 2; i++) {
            if (!(r->loops & (unsigned)loop_order[i]))
                continue;
            if (r->align == NCB_ALIGN_SWEEP) {
                s[n++] = (series_t){c, loop_order[i], SER_BEST};
                s[n++] = (series_t){c, loop_order[i], SER_WORST};
            } else {
                s[n++] = (series_t){c, loop_order[i], SER_ONE};
            }
        }
    return n;
}

static void series_title(const ncb_report_t *r, const series_t *s, char *out,
                         size_t len)
{
    snprintf(out, len, "%s%s%s%s", r->label[s->cfg],
             both_loops(r) ? " " : "", both_loops(r) ? ncb_loop_name(s->loop)
                                                     : "",
             s->which == SER_BEST ? " (best offset)"
             : s->which == SER_WORST ? " (worst offset)" : "");
}

/* The row a series shows at this size, or NULL. */
static const ncb_row_t *series_row(const ncb_report_t *r, const series_t *s,
                                   int op, size_t bytes)
{
    if (s->which == SER_ONE) {
        const ncb_row_t *row = find_row(r, op, s->cfg, bytes, s->loop, -1);
        return row && row->status != NCB_ROW_NA ? row : NULL;
    }
    const ncb_row_t *best, *worst;
    if (best_worst(r, op, s->cfg, bytes, s->loop, &best, &worst))
        return NULL;
    return s->which == SER_BEST ? best : worst;
}

/* gnuplot reads file names inside single quotes: refuse the one character
 * that would end them rather than escape it. */
static int plot_script(const ncb_report_t *r, const char *png, const char *dat,
                       const char *gp, const char *terminal, const int *ops,
                       int nops)
{
    FILE *f = fopen(gp, "w");
    if (!f)
        return -1;
    fprintf(f, "# written by numacoll-bench; re-run with: gnuplot %s\n", gp);
    fprintf(f, "set terminal %s size %d,650 noenhanced font ',10'\n", terminal,
            nops > 1 ? 650 * nops : 900);
    fprintf(f, "set output '%s'\n", png);
    fprintf(f, "set logscale xy\nset grid\nset key top left\n"
            "set xlabel 'message size (bytes)'\n"
            "set ylabel 'time per call (us), median over samples'\n"
            "set format x '%%.0s%%cB'\n");
    if (nops > 1)
        fprintf(f, "set multiplot layout 1,%d\n", nops);
    int block = 0;
    series_t ser[MAX_SERIES];
    int nser = series_of(r, ser);
    char al[32];
    if (r->align == NCB_ALIGN_MALLOC)
        snprintf(al, sizeof al, "malloc, page+%d", r->align_seen);
    else if (r->align == NCB_ALIGN_SWEEP)
        snprintf(al, sizeof al, "offsets swept");
    else
        snprintf(al, sizeof al, "page+%d", r->align);
    for (int k = 0; k < nops; k++) {
        char name[64];
        fprintf(f, "set title '%s, p = %d, %s (%s, %s); bars: min..max'\n",
                sec_name(r, ops[k], name, sizeof name), r->p, r->mode, r->hot ? "hot cache"
                : "cold cache", al);
        fprintf(f, "plot ");
        for (int i = 0; i < nser; i++) {
            char t[NCB_LABEL_MAX + 32];
            series_title(r, &ser[i], t, sizeof t);
            fprintf(f, "'%s' index %d using 1:2:3:4 with yerrorlines lw 2 "
                    "title '%s', \\\n     ", dat, block++, t);
        }
        fprintf(f, "'%s' index %d using 1:2 with lines dt 2 lw 2 lc rgb "
                "'black' title 'memcpy (single-copy limit)'", dat, block++);
        if (r->line_rtt > 0)
            fprintf(f, ", \\\n     %g with lines dt 3 lc rgb 'gray40' "
                    "title 'one cache line, one way'", US(line_oneway(r)));
        fprintf(f, "\n");
    }
    if (nops > 1)
        fprintf(f, "unset multiplot\n");
    return fclose(f) == 0 ? 0 : -1;
}

int ncb_write_plot(const ncb_report_t *r, const char *png)
{
    if (strchr(png, '\'')) {
        fprintf(stderr, "numacoll-bench: --plot: a file name with a quote "
                "cannot be passed to gnuplot\n");
        return 1;
    }
    int ops[NCB_OP_COUNT * NCB_MAX_DTYPES];
    int nops = sized_ops_present(r, ops);
    if (nops == 0) {
        fprintf(stderr, "numacoll-bench: --plot: no sized operation to plot\n");
        return 1;
    }
    size_t len = strlen(png);
    char stem[4096], dat[4200], gp[4200];
    snprintf(stem, sizeof stem, "%.*s", (int)(len > 4 &&
             strcmp(png + len - 4, ".png") == 0 ? len - 4 : len), png);
    snprintf(dat, sizeof dat, "%s.dat", stem);
    snprintf(gp, sizeof gp, "%s.gp", stem);
    FILE *f = fopen(dat, "w");
    if (!f) {
        fprintf(stderr, "numacoll-bench: cannot write %s: %s\n", dat,
                strerror(errno));
        return 1;
    }
    /* blocks (separated by two blank lines) in the order plot_script
     * indexes them: per op, every series, then memcpy */
    series_t ser[MAX_SERIES];
    int nser = series_of(r, ser);
    size_t *sizes = malloc((size_t)(r->nrows + 1) * sizeof *sizes);
    if (!sizes) {
        fclose(f);
        return 1;
    }
    for (int k = 0; k < nops; k++) {
        /* ascending sizes: merged reports hold a configuration's sizes
         * after another's */
        int ns = 0;
        for (int i = 0; i < r->nrows; i++) {
            int seen = r->rows[i].op != ops[k];
            for (int j = 0; j < ns && !seen; j++)
                seen = sizes[j] == r->rows[i].bytes;
            if (!seen)
                sizes[ns++] = r->rows[i].bytes;
        }
        qsort(sizes, (size_t)ns, sizeof *sizes, cmp_size);
        for (int c = 0; c < nser; c++) {
            char t[NCB_LABEL_MAX + 32];
            series_title(r, &ser[c], t, sizeof t);
            char name[64];
            fprintf(f, "# %s %s: bytes median_us min_us max_us\n",
                    sec_name(r, ops[k], name, sizeof name), t);
            int n = 0;
            for (int j = 0; j < ns; j++) {
                const ncb_row_t *row = series_row(r, &ser[c], ops[k], sizes[j]);
                if (row) {
                    fprintf(f, "%zu %.6g %.6g %.6g\n", row->bytes, US(row->med),
                            US(row->min), US(row->max));
                    n++;
                }
            }
            if (n == 0)  /* keep the block so indexes stay aligned */
                fprintf(f, "1 NaN NaN NaN\n");
            fprintf(f, "\n\n");
        }
        /* one point per size: the fastest memcpy of the size (offsets
         * swept give one per offset) */
        fprintf(f, "# memcpy: bytes us\n");
        int n = 0;
        for (int j = 0; j < ns; j++) {
            double mc = -1;
            for (int i = 0; i < r->nrows; i++) {
                const ncb_row_t *row = &r->rows[i];
                if (row->op == ops[k] && row->bytes == sizes[j] &&
                    row->memcpy_s > 0 && (mc < 0 || row->memcpy_s < mc))
                    mc = row->memcpy_s;
            }
            if (mc > 0) {
                fprintf(f, "%zu %.6g\n", sizes[j], US(mc));
                n++;
            }
        }
        if (n == 0)
            fprintf(f, "1 NaN\n");
        fprintf(f, "\n\n");
    }
    free(sizes);
    if (fclose(f) != 0)
        return 1;
    if (!have_program("gnuplot")) {
        fprintf(stderr, "numacoll-bench: gnuplot not found, no plot (data in "
                "%s; Debian: apt-get install gnuplot-nox)\n", dat);
        return 1;
    }
    /* pngcairo draws better; plain png (libgd) is the fallback. */
    static const char *const terms[] = {"pngcairo", "png"};
    for (int i = 0; i < 2; i++) {
        if (plot_script(r, png, dat, gp, terms[i], ops, nops) != 0) {
            fprintf(stderr, "numacoll-bench: cannot write %s\n", gp);
            return 1;
        }
        if (run_gnuplot(gp) == 0)
            return 0;
    }
    fprintf(stderr, "numacoll-bench: gnuplot failed on %s\n", gp);
    return 1;
}

int ncb_write_outputs(const ncb_report_t *r, const ncb_opts_t *o)
{
    int rc = 0;
    if (o->csv)
        rc |= ncb_write_csv(r, o->csv);
    if (o->json)
        rc |= ncb_write_json(r, o->json);
    /* a missing gnuplot is a note, not a failure */
    if (o->plot && ncb_write_plot(r, o->plot) == 0 && !o->quiet)
        printf("# plot: %s\n", o->plot);
    return rc;
}

/* ---- --merge ------------------------------------------------------------------ */

/*
 * Runs are read whole first, then reports are built from subsets of them.
 * On a machine whose two CPUs sometimes sit close together and sometimes
 * far apart (a virtual machine whose host moves its virtual CPUs between
 * runs), every run's numbers follow its one-line round trip, which each
 * run records: the medians over all runs are then a coin toss between two
 * machines. So when the round trips fall into groups, the comparison is
 * printed again per group, each configuration against the same machine.
 */

#define MAX_FIELDS 24

/* Split one CSV line in place; returns the field count or -1. */
static int csv_split(char *line, char **fields)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == MAX_FIELDS)
            return -1;
        if (*p == '"') {
            char *out = ++p;
            fields[n++] = out;
            for (;;) {
                if (*p == '\0')
                    return -1;
                if (*p == '"' && p[1] == '"') {
                    *out++ = '"';
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else {
                    *out++ = *p++;
                }
            }
            *out = '\0';
            if (*p == ',') {
                p++;
                continue;
            }
            return *p == '\0' ? n : -1;
        }
        fields[n++] = p;
        char *comma = strchr(p, ',');
        if (!comma)
            return n;
        *comma = '\0';
        p = comma + 1;
    }
}

/* One CSV row of one run. Times in microseconds, < 0 where empty. */
typedef struct mrec {
    int file, op, cfg, status, calls, samples, hot, root_shift;
    int loop, align, malloced;    /* align: offset past a page */
    size_t bytes;
    double min, med, max, memcpy_us, barrier_us;
    char note[64];
} mrec_t;

typedef struct mset {
    char mode[32];
    int p, nfiles, ncfg;
    char label[NCB_MAX_CFGS][NCB_LABEL_MAX];
    char dtype[NCB_MAX_DTYPES][24];   /* the files' dtype column          */
    int ndtype;
    double *file_line;            /* [nfiles] round trip of each run, us */
    mrec_t *rec;
    int nrec, cap;
} mset_t;

static double field_us(const char *s)
{
    return *s ? atof(s) : -1;
}

static int load_file(mset_t *m, const char *path, int fi)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "numacoll-bench: --merge: cannot read %s: %s\n", path,
                strerror(errno));
        return 2;
    }
    char line[2048];
    int lineno = 0, rc = 0, nfields = CSV_FIELDS;
    m->file_line[fi] = -1;
    while (!rc && fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (lineno == 1) {
            /* version 0.2's header is ours less ",align,loop,dtype",
             * 0.3's less ",dtype" */
            size_t v02 = strlen(CSV_HEADER) - strlen(",align,loop,dtype");
            size_t v03 = strlen(CSV_HEADER) - strlen(",dtype");
            if (strlen(line) == v02 && strncmp(line, CSV_HEADER, v02) == 0)
                nfields = CSV_FIELDS_V02;
            else if (strlen(line) == v03 &&
                     strncmp(line, CSV_HEADER, v03) == 0)
                nfields = CSV_FIELDS_V03;
            else if (strcmp(line, CSV_HEADER) != 0) {
                fprintf(stderr, "numacoll-bench: --merge: %s:1: not a "
                        "numacoll-bench CSV file (header differs)\n", path);
                rc = 2;
            }
            continue;
        }
        char *fl[MAX_FIELDS];
        int nf = csv_split(line, fl);
        int op = nf == nfields ? ncb_op_find(fl[1]) : -1;
        if (nf != nfields) {
            fprintf(stderr, "numacoll-bench: --merge: %s:%d: expected %d "
                    "fields, found %d\n", path, lineno, nfields, nf);
            rc = 2;
        } else if (op < 0) {
            fprintf(stderr, "numacoll-bench: --merge: %s:%d: unknown "
                    "operation '%s'\n", path, lineno, fl[1]);
            rc = 2;
        } else if (m->p && atoi(fl[3]) != m->p) {
            fprintf(stderr, "numacoll-bench: --merge: %s:%d: p = %d, but "
                    "earlier rows had p = %d\n", path, lineno, atoi(fl[3]),
                    m->p);
            rc = 2;
        }
        if (rc)
            break;
        m->p = atoi(fl[3]);
        snprintf(m->mode, sizeof m->mode, "%s", fl[0]);
        int cfg = -1;
        for (int c = 0; c < m->ncfg; c++)
            if (strcmp(m->label[c], fl[2]) == 0)
                cfg = c;
        if (cfg < 0) {
            if (m->ncfg == NCB_MAX_CFGS) {
                fprintf(stderr, "numacoll-bench: --merge: more than %d "
                        "configurations\n", NCB_MAX_CFGS);
                rc = 2;
                break;
            }
            cfg = m->ncfg++;
            snprintf(m->label[cfg], sizeof m->label[cfg], "%s", fl[2]);
        }
        if (m->nrec == m->cap) {
            int cap = m->cap ? 2 * m->cap : 256;
            mrec_t *n = realloc(m->rec, (size_t)cap * sizeof *n);
            if (!n) {
                rc = 2;
                break;
            }
            m->rec = n;
            m->cap = cap;
        }
        int dt = 0;
        if (nfields == CSV_FIELDS && *fl[19]) {
            for (dt = 0; dt < m->ndtype; dt++)
                if (strcmp(m->dtype[dt], fl[19]) == 0)
                    break;
            if (dt == NCB_MAX_DTYPES || strlen(fl[19]) >= sizeof m->dtype[0]) {
                fprintf(stderr, "numacoll-bench: --merge: %s:%d: more than "
                        "%d dtypes, or '%s' too long\n", path, lineno,
                        NCB_MAX_DTYPES, fl[19]);
                rc = 2;
                break;
            }
            if (dt == m->ndtype)
                snprintf(m->dtype[m->ndtype++], sizeof m->dtype[0], "%s",
                         fl[19]);
        }
        mrec_t *x = &m->rec[m->nrec++];
        memset(x, 0, sizeof *x);
        x->file = fi;
        x->op = NCB_SEC(op, dt);
        x->cfg = cfg;
        x->bytes = (size_t)strtoull(fl[4], NULL, 10);
        x->calls = atoi(fl[5]);
        x->samples = atoi(fl[6]);
        x->min = field_us(fl[7]);
        x->med = field_us(fl[8]);
        x->max = field_us(fl[9]);
        x->memcpy_us = field_us(fl[10]);
        x->barrier_us = field_us(fl[12]);
        x->hot = strcmp(fl[13], "hot") == 0;
        x->root_shift = atoi(fl[14]);
        x->status = strcmp(fl[15], "na") == 0    ? NCB_ROW_NA
                    : strcmp(fl[15], "bad") == 0 ? NCB_ROW_BAD
                                                 : NCB_ROW_OK;
        snprintf(x->note, sizeof x->note, "%s", fl[16]);
        x->loop = NCB_LOOP_B2B;
        if (nfields >= CSV_FIELDS_V03) {
            const char *a = fl[17];
            x->malloced = strncmp(a, "malloc:", 7) == 0;
            x->align = atoi(x->malloced ? a + 7 : a);
            if (strcmp(fl[18], "app") == 0)
                x->loop = NCB_LOOP_APP;
            else if (strcmp(fl[18], "b2b") != 0) {
                fprintf(stderr, "numacoll-bench: --merge: %s:%d: unknown "
                        "loop '%s'\n", path, lineno, fl[18]);
                rc = 2;
            }
        }
        if (*fl[11])
            m->file_line[fi] = atof(fl[11]);
    }
    if (!rc && ferror(f))
        rc = 2;
    fclose(f);
    return rc;
}

static double median_of(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Build a report from the runs with use[file] set. */
static int build(const mset_t *m, const int *use, int baseline, ncb_report_t *r)
{
    static char modebuf[64];
    snprintf(modebuf, sizeof modebuf, "%s, merged", m->mode);
    ncb_opts_t none;
    memset(&none, 0, sizeof none);
    ncb_report_init(r, &none, modebuf, m->p);
    r->ndtype = m->ndtype;
    for (int d = 0; d < m->ndtype; d++)
        snprintf(r->dtype[d], sizeof r->dtype[d], "%s", m->dtype[d]);
    r->ncfg = m->ncfg;
    r->baseline = baseline;
    r->check = 1;
    for (int c = 0; c < m->ncfg; c++) {
        snprintf(r->label[c], sizeof r->label[c], "%s", m->label[c]);
        r->barrier_s[c] = -1;
    }
    double *v = malloc((size_t)(m->nrec + m->nfiles + 1) * sizeof *v);
    if (!v)
        return 2;
    int n = 0;
    for (int f = 0; f < m->nfiles; f++)
        if (use[f]) {
            r->nmerged++;
            if (m->file_line[f] > 0)
                v[n++] = m->file_line[f];
        }
    r->line_rtt = n ? median_of(v, n) * 1e-6 : -1;
    for (int c = 0; c < m->ncfg; c++) {
        n = 0;
        for (int i = 0; i < m->nrec; i++)
            if (use[m->rec[i].file] && m->rec[i].cfg == c &&
                m->rec[i].barrier_us >= 0)
                v[n++] = m->rec[i].barrier_us;
        r->barrier_s[c] = n ? median_of(v, n) * 1e-6 : -1;
    }
    /* Offsets: runs that all let malloc choose are one offset, whatever
     * each run was given (numacoll's and tuned's runs may differ by a few
     * bytes); otherwise each offset is its own row, and several of them
     * make the table of --align sweep. */
    int all_malloc = 1, lo = -1, hi = -1, several = 0, first_align = -1;
    r->loops = 0;
    for (int i = 0; i < m->nrec; i++) {
        const mrec_t *x = &m->rec[i];
        if (!use[x->file])
            continue;
        all_malloc &= x->malloced;
        r->loops |= (unsigned)x->loop;
        lo = lo < 0 || x->align < lo ? x->align : lo;
        hi = x->align > hi ? x->align : hi;
        if (first_align < 0)
            first_align = x->align;
        several |= x->align != first_align;
    }
    if (!r->loops)
        r->loops = NCB_LOOP_B2B;
    if (all_malloc && lo >= 0) {
        r->align = NCB_ALIGN_MALLOC;
        r->align_seen = first_align;
        if (lo == hi)
            snprintf(r->align_desc, sizeof r->align_desc, "page+%d (%d mod "
                     "64) in every run", lo, lo % 64);
        else
            snprintf(r->align_desc, sizeof r->align_desc, "page+%d to page+%d "
                     "(the runs differ; rows merged regardless)", lo, hi);
    } else {
        r->align = several ? NCB_ALIGN_SWEEP : first_align < 0 ? 0
                                                              : first_align;
    }
    /* one row per (op, configuration, size, loop, offset), in first-seen
     * order */
    for (int i = 0; i < m->nrec; i++) {
        const mrec_t *x = &m->rec[i];
        if (!use[x->file])
            continue;
        r->hot = x->hot;
        r->root_shift = x->root_shift;
        const int key = all_malloc ? -1 : x->align;
        if (find_row(r, x->op, x->cfg, x->bytes, x->loop, key))
            continue;
        ncb_row_t *row = ncb_report_add(r);
        if (!row) {
            free(v);
            return 2;
        }
        row->op = x->op;
        row->cfg = x->cfg;
        row->bytes = x->bytes;
        row->loop = x->loop;
        row->align = x->align;
        row->status = NCB_ROW_NA;
        snprintf(row->note, sizeof row->note, "%s", x->note);
        double mn = INFINITY, mx = 0;
        n = 0;
        for (int j = i; j < m->nrec; j++) {
            const mrec_t *y = &m->rec[j];
            if (!use[y->file] || y->op != x->op || y->cfg != x->cfg ||
                y->bytes != x->bytes || y->loop != x->loop ||
                (key >= 0 && y->align != key) || y->status == NCB_ROW_NA)
                continue;
            v[n++] = y->med;
            mn = y->min < mn ? y->min : mn;
            mx = y->max > mx ? y->max : mx;
            if (!row->calls)
                row->calls = y->calls;
            row->samples += y->samples;
            if (y->status == NCB_ROW_BAD) {
                row->status = NCB_ROW_BAD;
                snprintf(row->note, sizeof row->note, "%s", y->note);
            }
        }
        if (n) {
            if (row->status != NCB_ROW_BAD) {
                row->status = NCB_ROW_OK;
                row->note[0] = '\0';
            } else {
                r->failures++;
            }
            row->med = median_of(v, n) * 1e-6;
            row->min = mn * 1e-6;
            row->max = mx * 1e-6;
        }
        /* memcpy: every run's value at this size and offset, any
         * configuration or loop */
        n = 0;
        for (int j = 0; j < m->nrec; j++)
            if (use[m->rec[j].file] && m->rec[j].op == x->op &&
                m->rec[j].bytes == x->bytes && m->rec[j].memcpy_us > 0 &&
                (key < 0 || m->rec[j].align == key))
                v[n++] = m->rec[j].memcpy_us;
        row->memcpy_s = n ? median_of(v, n) * 1e-6 : -1;
    }
    free(v);
    return 0;
}

int ncb_merge(const ncb_opts_t *o)
{
    mset_t m;
    memset(&m, 0, sizeof m);
    m.nfiles = o->nfiles;
    m.file_line = calloc((size_t)o->nfiles, sizeof *m.file_line);
    int *use = calloc((size_t)o->nfiles, sizeof *use);
    int rc = m.file_line && use ? 0 : 2;
    for (int fi = 0; fi < o->nfiles && !rc; fi++)
        rc = load_file(&m, o->files[fi], fi);
    if (!rc && m.nrec == 0) {
        fprintf(stderr, "numacoll-bench: --merge: no results in the files\n");
        rc = 2;
    }
    int baseline = 0;
    if (!rc && o->baseline[0]) {
        baseline = -1;
        for (int c = 0; c < m.ncfg; c++)
            if (strcmp(m.label[c], o->baseline) == 0)
                baseline = c;
        if (baseline < 0) {
            fprintf(stderr, "numacoll-bench: --baseline: '%s' is not a label "
                    "in the files\n", o->baseline);
            rc = 2;
        }
    }
    ncb_report_t r;
    memset(&r, 0, sizeof r);
    if (!rc) {
        for (int f = 0; f < m.nfiles; f++)
            use[f] = 1;
        rc = build(&m, use, baseline, &r);
    }
    /* several machines in one: compare each configuration against runs
     * of the same machine state. States are clusters of the runs' round
     * trips: sorted, a new cluster starts where a value exceeds the one
     * before it by more than 1.6 x. */
    double *rtt = malloc((size_t)m.nfiles * sizeof *rtt);
    int nr = 0;
    for (int f = 0; rtt && f < m.nfiles; f++)
        if (m.file_line[f] > 0)
            rtt[nr++] = m.file_line[f];
    if (rtt && nr > 1)
        median_of(rtt, nr);  /* sorts */
    int nclusters = nr > 0;
    for (int i = 1; i < nr; i++)
        nclusters += rtt[i] > 1.6 * rtt[i - 1];
    if (!rc) {
        if (!o->quiet && nclusters > 1)
            printf("# WARNING: these runs saw %d machine states (line round "
                   "trips, below): this\n# table mixes them; read the "
                   "per-state tables at the end instead.\n", nclusters);
        if (!o->quiet)
            ncb_print_all(&r, stdout);
        rc = ncb_write_outputs(&r, o) ? 1 : 0;
        if (!rc && r.failures)
            rc = 1;
    }
    if ((rc == 0 || rc == 1) && nclusters > 1 && !o->quiet) {
        printf("#\n# The runs' line round trips fall into %d groups: the "
               "machine changed between runs\n# (e.g. the host moved the "
               "virtual CPUs). Each group compared on its own:\n", nclusters);
        for (int i = 0; i < nr;) {
            int j = i + 1;
            while (j < nr && rtt[j] <= 1.6 * rtt[j - 1])
                j++;
            double lo = rtt[i], hi = rtt[j - 1];
            int n = 0;
            for (int f = 0; f < m.nfiles; f++) {
                use[f] = m.file_line[f] >= lo && m.file_line[f] <= hi;
                n += use[f];
            }
            ncb_report_t s;
            memset(&s, 0, sizeof s);
            if (build(&m, use, baseline, &s) == 0) {
                printf("#\n# ---- %d of %d runs with a line round trip of "
                       "%.3f to %.3f us ----\n", n, m.nfiles, lo, hi);
                ncb_print_all(&s, stdout);
            }
            ncb_report_free(&s);
            i = j;
        }
    }
    free(rtt);
    ncb_report_free(&r);
    free(m.rec);
    free(m.file_line);
    free(use);
    return rc;
}
