/*
 * numacoll-tune: the autotuner. On the machine at hand it measures, for
 * Bcast, Reduce, Allreduce and Barrier from 1 byte to 64 MiB, the
 * candidates the performance model suggests against the built-in choice
 * (for Allgather, Gather, Scatter, Alltoall, Reduce_scatter, Scan and
 * Exscan those the algorithm table gives, at a few sizes),
 * keeps the fastest per size range and writes a tuning table
 * (docs/tuning.md) that NUMACOLL_TUNING_FILE or Open MPI's
 * coll_numacoll_tuning_file then loads. How and why: docs/autotuner.md.
 *
 * This file: the options, one run of p ranks per tuned p through the
 * core's runner (tuner_run.c is what the ranks do; rank 0 reports through
 * shared memory), then the table: built from every run's points
 * (tuner_table.c), written next to its destination, parsed back with the
 * library's own parser and only then renamed into place, so a file that
 * exists is always one the library accepts.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/runner.h"
#include "tools/tune/tuner.h"

#define ME "numacoll-tune"
#define TN_OPS_NAMES                                                           \
    "bcast, reduce, allreduce, barrier, allgather, gather, scatter, "          \
    "alltoall, reduce_scatter, scan, exscan"
#define DEFAULT_OUT "numacoll-tuning.txt"
#define FULL_BUDGET_S 300.0
#define QUICK_BUDGET_S 50.0
/* A run needs its ranks started, the model fitted and a point or two. */
#define MIN_RUN_S 4.0
/* Kept back from the runs for building, writing and checking the file. */
#define FINISH_S 1.0

static void usage(FILE *to)
{
    fprintf(to,
        "Usage: " ME " [-o FILE] [-p N[,N...]] [--ops LIST] [--sizes LO-HI]\n"
        "                     [--budget 5m|90s|1h] [--quick] [--topology DESC]\n"
        "                     [-v] [-h]\n"
        "       " ME " --decline-from CSV [--table FILE] [-o FILE]\n"
        "                     [--decline-config NAME] [--decline-host NAME]\n"
        "                     [--decline-margin X] [--decline-loop RULE]\n"
        "Measures numacoll's collectives on this machine and writes a tuning\n"
        "table: for every operation and size range the fastest algorithm and\n"
        "parameters found, with the measured gain over the built-in choice.\n"
        "  -o, --output FILE   the table (default " DEFAULT_OUT ")\n"
        "  -p, --procs N,...   team sizes to tune (default: the number of cores)\n"
        "      --ops LIST      operations to tune, comma-separated: bcast, reduce,\n"
        "                      allreduce, barrier, allgather, gather, scatter,\n"
        "                      alltoall, reduce_scatter, scan, exscan, or all\n"
        "                      (default); the v forms (allgatherv, gatherv,\n"
        "                      scatterv, alltoallv, reduce_scatter_block) name\n"
        "                      their base collective, whose rules they run\n"
        "      --sizes LO-HI   message sizes to measure, e.g. 1K-4M (default\n"
        "                      1-64M; suffixes K, M, G)\n"
        "      --budget T      time for the whole run: 90s, 5m, 1h (default 5m,\n"
        "                      50s with --quick); never exceeded by intent\n"
        "      --quick         a few sizes and candidates: under a minute\n"
        "      --topology D    synthetic:<desc> or an hwloc XML file; rank r is\n"
        "                      placed on PU r\n"
        "  -v, --verbose       every point's result on stderr (-vv: the\n"
        "                      library's warnings too)\n"
        "  -h, --help\n"
        "  --decline-from CSV  measure nothing: read bench/compare-ompi.sh's\n"
        "                      merged CSV and write the table (--table FILE,\n"
        "                      default the built-in one) with decline=1 where\n"
        "                      the host MPI was faster, for that p and the\n"
        "                      sizes from the midpoints between measured ones\n"
        "                      (rules split where needed; the v forms are\n"
        "                      not read)\n"
        "      --table FILE    the table --decline-from marks\n"
        "      --decline-config NAME  numacoll's configuration in the CSV\n"
        "                      (default numacoll)\n"
        "      --decline-host NAME    the host's (default tuned)\n"
        "      --decline-margin X     a point declines where numacoll's median\n"
        "                      is above X times the host's (default 1.00)\n"
        "      --decline-loop RULE    both (default: slower in every loop the\n"
        "                      CSV has), either, app or b2b\n"
        "Use the table with NUMACOLL_TUNING_FILE=FILE, or under Open MPI with\n"
        "--mca coll_numacoll_tuning_file FILE. See docs/autotuner.md.\n");
}

#define FAIL(...)                                                              \
    do {                                                                       \
        snprintf(err, errlen, __VA_ARGS__);                                    \
        return 2;                                                              \
    } while (0)

/* "90s", "5m", "1h", "1.5m", "90" (seconds). */
static int parse_duration(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !(v > 0) || !isfinite(v))
        return -1;
    if (*end == 's')
        end++;
    else if (*end == 'm')
        v *= 60, end++;
    else if (*end == 'h')
        v *= 3600, end++;
    if (*end != '\0' || v > 7 * 24 * 3600.0)
        return -1;
    *out = v;
    return 0;
}

static int parse_procs(tn_opts_t *o, const char *list, char *err,
                       size_t errlen)
{
    char buf[256], *save = NULL;
    if (strlen(list) >= sizeof buf)
        FAIL("-p: the list is too long");
    snprintf(buf, sizeof buf, "%s", list);
    o->np = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *end;
        errno = 0;
        long v = strtol(tok, &end, 10);
        if (errno || end == tok || *end || v < 2 || v > 4096)
            FAIL("-p: '%s' is not a team size from 2 to 4096", tok);
        int dup = 0;
        for (int i = 0; i < o->np; i++)
            dup |= o->p[i] == (int)v;
        if (dup)
            continue;
        if (o->np == TN_MAX_P)
            FAIL("-p: more than %d team sizes", TN_MAX_P);
        /* ascending: each run's rules reach up to the next p */
        int i = o->np++;
        while (i > 0 && o->p[i - 1] > (int)v) {
            o->p[i] = o->p[i - 1];
            i--;
        }
        o->p[i] = (int)v;
    }
    if (!o->np)
        FAIL("-p: the list is empty");
    return 0;
}

/* The names of the MPI forms whose rules are their base collective's
 * (docs/tuning.md): tuning the base tunes them. */
static const struct { const char *name; int op; } op_alias[] = {
    {"allgatherv", NCB_OP_ALLGATHER},   {"gatherv", NCB_OP_GATHER},
    {"scatterv", NCB_OP_SCATTER},       {"alltoallv", NCB_OP_ALLTOALL},
    {"reduce_scatter_block", NCB_OP_REDUCE_SCATTER},
};

static int parse_ops(tn_opts_t *o, const char *list, char *err, size_t errlen)
{
    char buf[256], *save = NULL;
    if (strlen(list) >= sizeof buf)
        FAIL("--ops: the list is too long");
    snprintf(buf, sizeof buf, "%s", list);
    o->ops = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "all") == 0) {
            o->ops = TN_OPS_ALL;
            continue;
        }
        int k = -1;
        for (size_t i = 0; i < sizeof op_alias / sizeof op_alias[0]; i++)
            if (strcmp(tok, op_alias[i].name) == 0)
                k = op_alias[i].op;
        if (k < 0)
            k = ncb_op_find(tok);
        if (k < 0 || !(TN_OPS_ALL & 1u << k))
            FAIL("--ops: unknown operation '%s' (" TN_OPS_NAMES " or all)",
                 tok);
        o->ops |= 1u << k;
    }
    if (!o->ops)
        FAIL("--ops: the list is empty");
    return 0;
}

static int parse_sizes(tn_opts_t *o, const char *s, char *err, size_t errlen)
{
    char buf[64];
    if (strlen(s) >= sizeof buf)
        FAIL("--sizes: '%s' is too long", s);
    snprintf(buf, sizeof buf, "%s", s);
    char *dash = strchr(buf, '-');
    size_t lo, hi;
    if (!dash)
        FAIL("--sizes: '%s' is not a range LO-HI such as 1K-4M", s);
    *dash = '\0';
    if (ncb_parse_size(buf, &lo) != 0 || ncb_parse_size(dash + 1, &hi) != 0)
        FAIL("--sizes: '%s' is not a range LO-HI such as 1K-4M", s);
    if (lo > hi)
        FAIL("--sizes: '%s' goes down (LO must not exceed HI)", s);
    if (hi > NCB_MAX_BYTES)
        FAIL("--sizes: '%s' goes beyond the limit of 1G", s);
    o->size_lo = lo;
    o->size_hi = hi;
    o->sizes_given = 1;
    return 0;
}

enum {
    OPT_OPS = 256, OPT_SIZES, OPT_BUDGET, OPT_QUICK, OPT_TOPOLOGY,
    OPT_DECLINE_FROM, OPT_TABLE, OPT_DECLINE_CONFIG, OPT_DECLINE_HOST,
    OPT_DECLINE_MARGIN, OPT_DECLINE_LOOP
};

/* 0 to run, 1 to exit 0 (help), 2 on a usage error (sentence in err). */
static int parse(int argc, char **argv, tn_opts_t *o, char *err,
                 size_t errlen)
{
    static const struct option lo[] = {
        {"output", 1, 0, 'o'},        {"procs", 1, 0, 'p'},
        {"ops", 1, 0, OPT_OPS},       {"sizes", 1, 0, OPT_SIZES},
        {"budget", 1, 0, OPT_BUDGET}, {"quick", 0, 0, OPT_QUICK},
        {"topology", 1, 0, OPT_TOPOLOGY}, {"verbose", 0, 0, 'v'},
        {"help", 0, 0, 'h'},
        {"decline-from", 1, 0, OPT_DECLINE_FROM},
        {"table", 1, 0, OPT_TABLE},
        {"decline-config", 1, 0, OPT_DECLINE_CONFIG},
        {"decline-host", 1, 0, OPT_DECLINE_HOST},
        {"decline-margin", 1, 0, OPT_DECLINE_MARGIN},
        {"decline-loop", 1, 0, OPT_DECLINE_LOOP},
        {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->out = DEFAULT_OUT;
    o->ops = TN_OPS_ALL;
    o->size_lo = 1;
    o->size_hi = (size_t)64 << 20;
    o->decline.config = "numacoll";
    o->decline.host = "tuned";
    o->decline.margin = 1.0;
    optind = 1;
    int decline_only = 0;   /* an option of --decline-from's seen */
    opterr = 0;
    int c, rc;
    while ((c = getopt_long(argc, argv, ":o:p:vh", lo, NULL)) != -1) {
        switch (c) {
        case 'o':
            if (!*optarg)
                FAIL("-o: the file name is empty");
            o->out = optarg;
            break;
        case 'p':
            if ((rc = parse_procs(o, optarg, err, errlen)) != 0)
                return rc;
            break;
        case OPT_OPS:
            if ((rc = parse_ops(o, optarg, err, errlen)) != 0)
                return rc;
            break;
        case OPT_SIZES:
            if ((rc = parse_sizes(o, optarg, err, errlen)) != 0)
                return rc;
            break;
        case OPT_BUDGET:
            if (parse_duration(optarg, &o->budget_s) != 0)
                FAIL("--budget: '%s' is not a duration such as 90s, 5m or 1h",
                     optarg);
            o->budget_given = 1;
            break;
        case OPT_QUICK:
            o->quick = 1;
            break;
        case OPT_TOPOLOGY:
            o->topology = optarg;
            break;
        case 'v':
            o->verbose++;
            break;
        case OPT_DECLINE_FROM:
            o->decline.csv = optarg;
            break;
        case OPT_TABLE:
            o->decline.table = optarg;
            decline_only = 1;
            break;
        case OPT_DECLINE_CONFIG:
            o->decline.config = optarg;
            decline_only = 1;
            break;
        case OPT_DECLINE_HOST:
            o->decline.host = optarg;
            decline_only = 1;
            break;
        case OPT_DECLINE_MARGIN: {
            char *end;
            errno = 0;
            o->decline.margin = strtod(optarg, &end);
            if (errno || end == optarg || *end ||
                !(o->decline.margin > 0 && o->decline.margin < 1000))
                FAIL("--decline-margin: '%s' is not a factor such as 1.05",
                     optarg);
            decline_only = 1;
            break;
        }
        case OPT_DECLINE_LOOP: {
            static const char *const rules[] = {"both", "either", "app",
                                                "b2b"};
            int k = -1;
            for (int i = 0; i < 4; i++)
                if (strcmp(optarg, rules[i]) == 0)
                    k = i;
            if (k < 0)
                FAIL("--decline-loop: '%s' is not both, either, app or b2b",
                     optarg);
            o->decline.loop = (tn_loop_rule_t)k;
            decline_only = 1;
            break;
        }
        case 'h':
            return 1;
        case ':':
            FAIL("%s needs a value", argv[optind - 1]);
        default:
            FAIL("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        FAIL("unexpected argument '%s' (options only)", argv[optind]);
    if (decline_only && !o->decline.csv)
        FAIL("--table and the --decline-* options go with --decline-from");
    if (!o->budget_given)
        o->budget_s = o->quick ? QUICK_BUDGET_S : FULL_BUDGET_S;
    return 0;
}

/* One run of p ranks; the report lands in *out (heap). Returns the
 * runner's verdict: 0, or non-zero when a rank failed. */
static int one_run(const tn_opts_t *o, int p, int idx, int nruns,
                   double t_start, double deadline, int tty,
                   tn_report_t **out)
{
    *out = NULL;
    unsigned char *lines = nc__run_shared_alloc(4096);
    tn_report_t *rep = nc__run_shared_alloc(sizeof *rep);
    if (!lines || !rep) {
        if (lines)
            nc__run_shared_free(lines, 4096);
        fprintf(stderr, ME ": cannot map %zu bytes of shared memory\n",
                sizeof *rep);
        return -1;
    }
    memset(rep, 0, sizeof *rep);
    rep->p = p;
    rep->status = -1;
    tn_job_t job = {.o = o, .p = p, .t_start = t_start, .deadline = deadline,
                    .run_idx = idx, .nruns = nruns, .tty = tty,
                    .lines = lines, .rep = rep};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    /* the watchdog: the budget and a generous margin for a slow start */
    double limit = deadline - ncb_now() + 120;
    nc__run_opts_t ro = {.p = p, .bind = p <= cpus,
                         .timeout_ms = (unsigned)(limit * 1000)};
    int timed_out = 0;
    int rr = nc__run(&ro, tn_rank_main, &job, NULL, &timed_out);
    /* every rank has exited (waitpid), so rank 0's writes are visible */
    tn_report_t *copy = malloc(sizeof *copy);
    if (copy)
        memcpy(copy, rep, sizeof *copy);
    nc__run_shared_free(rep, sizeof *rep);
    nc__run_shared_free(lines, 4096);
    *out = copy;
    if (tty)
        fputs("\r\033[K", stderr);
    if (rr != 0)
        fprintf(stderr, ME ": p=%d: %s%s (last: %s)\n", p,
                rr < 0 ? "cannot start the ranks" : "a rank failed",
                timed_out ? " (watchdog timeout)" : "",
                copy && copy->where[0] ? copy->where : "starting");
    return rr != 0 || !copy ? -1 : 0;
}

static int count_coll(const nc__tune_table_t *t, int coll)
{
    int n = 0;
    for (int i = 0; i < t->n; i++)
        n += (int)t->rules[i].coll == coll;
    return n;
}

/* Write tab to out: beside it first, parsed back with the library's
 * parser, then renamed into place, so a file that exists is always one
 * the library accepts. 0, or the exit status. */
static int write_checked(const nc__tune_table_t *tab, const char *header,
                         const char *out)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp%ld", out, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, ME ": cannot write %s: %s\n", tmp, strerror(errno));
        return 5;
    }
    int wr = nc__tune_write(tab, header, f);
    if (fclose(f) != 0 || wr != 0) {
        fprintf(stderr, ME ": cannot write %s: %s\n", tmp, strerror(errno));
        remove(tmp);
        return 5;
    }
    nc__tune_table_t back;
    static char errs[16384];
    int nerr = nc__tune_load(tmp, &back, errs, sizeof errs);
    nc__tune_free(&back);
    if (nerr) {
        fprintf(stderr, ME ": the table written to %s does not parse back "
                "(%d problem%s; left there for a bug report):\n%s\n", tmp,
                nerr, nerr == 1 ? "" : "s", errs);
        return 6;
    }
    if (rename(tmp, out) != 0) {
        fprintf(stderr, ME ": cannot rename %s to %s: %s\n", tmp, out,
                strerror(errno));
        remove(tmp);
        return 5;
    }
    return 0;
}

/* --decline-from: the table (--table, or the built-in one) with decline=1
 * where the CSV says the host wins, written to -o. The exit status. */
static int decline_main(const tn_opts_t *o)
{
    const tn_decline_opts_t *d = &o->decline;
    nc__tune_table_t tab = {0};
    static char errs[16384];
    if (d->table) {
        if (nc__tune_load(d->table, &tab, errs, sizeof errs) != 0) {
            fprintf(stderr, ME ": --table %s is refused:\n%s", d->table,
                    errs);
            return 2;
        }
    } else {
        const nc__tune_table_t *b = nc__tune_builtin();
        for (int i = 0; i < b->n; i++)
            if (nc__tune_add(&tab, &b->rules[i]) != 0) {
                fprintf(stderr, ME ": out of memory copying the table\n");
                return 4;
            }
        tab.levels = b->levels;
    }
    tn_decline_sum_t sum;
    char err[512];
    if (tn_decline_apply(d, &tab, &sum, err, sizeof err) != 0) {
        fprintf(stderr, ME ": --decline-from: %s\n", err);
        nc__tune_free(&tab);
        return 2;
    }
    static const char *const loops[] = {"both", "either", "app", "b2b"};
    char header[1024];
    snprintf(header, sizeof header,
             "numacoll-tune --decline-from %s: the rules of %s, with\n"
             "decline=1 where %s's median was above %.2f x %s's (loops: %s)\n"
             "%d points compared, %d declined",
             d->csv, d->table ? d->table : "the built-in table", d->config,
             d->margin, d->host, loops[d->loop], sum.points, sum.losing);
    int rc = write_checked(&tab, header, o->out);
    if (rc == 0)
        fprintf(stderr, ME ": wrote %s: %d rules, %d given decline=1 for "
                "%d of %d points where %s was faster\n", o->out, tab.n,
                sum.marked, sum.losing, sum.points, d->host);
    if (rc == 0 && sum.skipped_rows)
        fprintf(stderr, ME ": %d rows not read (v forms, or not ok)\n",
                sum.skipped_rows);
    nc__tune_free(&tab);
    return rc;
}

int main(int argc, char **argv)
{
    tn_opts_t o;
    char err[512];
    int rc = parse(argc, argv, &o, err, sizeof err);
    if (rc == 1) {
        usage(stdout);
        return 0;
    }
    if (rc == 2) {
        fprintf(stderr, ME ": %s\n(" ME " --help lists the options)\n", err);
        return 2;
    }
    if (o.decline.csv)
        return decline_main(&o);
    const double t_start = ncb_now();
    const int tty = isatty(2);
    tn_machine_t mc;
    tn_machine_probe(o.topology, &mc);
    if (o.topology && !mc.topo_cores) {
        fprintf(stderr, ME ": --topology: hwloc cannot read '%s'\n",
                o.topology);
        return 2;
    }
    if (!o.np) {
        int cores = o.topology ? mc.topo_cores : mc.cores;
        o.p[0] = cores < 2 ? 2 : cores;
        o.np = 1;
    }

    tn_report_t *runs[TN_MAX_P] = {0};
    int nruns = 0, failed = 0;
    char not_run[256] = "";
    for (int i = 0; i < o.np; i++) {
        double now = ncb_now();
        double left = o.budget_s - (now - t_start) - FINISH_S;
        if (left < MIN_RUN_S) {
            size_t l = strlen(not_run);
            snprintf(not_run + l, sizeof not_run - l, "%sp=%d", l ? ", " : "",
                     o.p[i]);
            continue;
        }
        /* the time left, shared equally among the runs still to come;
         * what a run leaves unused goes to the next */
        double deadline = now + left / (o.np - i);
        tn_report_t *r = NULL;
        if (one_run(&o, o.p[i], i, o.np, t_start, deadline, tty, &r) != 0)
            failed = 1;
        if (r)
            runs[nruns++] = r;
    }
    if (not_run[0]) {
        size_t l = strlen(not_run);
        snprintf(not_run + l, sizeof not_run - l, " (no budget left)");
        fprintf(stderr, ME ": not run: %s\n", not_run);
    }

    nc__tune_table_t tab;
    const tn_report_t *cruns[TN_MAX_P];
    for (int i = 0; i < nruns; i++) {
        tn_decide(runs[i]);
        cruns[i] = runs[i];
    }
    double used = ncb_now() - t_start;
    char *header = tn_header(&o, &mc, cruns, nruns, used, not_run);
    if (!header || tn_build_table(cruns, nruns, &tab) != 0) {
        fprintf(stderr, ME ": out of memory building the table\n");
        return 4;
    }
    /* One level list per table (docs/autotuner.md says why): the largest
     * p's, whose team spans the most of the machine. */
    for (int i = nruns - 1; i >= 0; i--)
        if (runs[i]->levels_note[0]) {
            tab.levels = runs[i]->levels_win;
            break;
        }
    for (int i = 0; i < nruns; i++)
        if (runs[i]->levels_note[0])
            fprintf(stderr, ME ": p=%d: %s\n", runs[i]->p,
                    runs[i]->levels_note);

    if ((rc = write_checked(&tab, header, o.out)) != 0)
        return rc;

    int ties = 0, points = 0, skipped = 0, bad = 0;
    char ps[128] = "";
    for (int i = 0; i < nruns; i++) {
        points += runs[i]->npoints;
        skipped += runs[i]->skipped;
        for (int j = 0; j < runs[i]->npoints; j++) {
            ties += runs[i]->pt[j].tie_default + runs[i]->pt[j].tie_second;
            bad += runs[i]->pt[j].bad;
        }
        size_t l = strlen(ps);
        if (runs[i]->npoints)
            snprintf(ps + l, sizeof ps - l, "%s%d", l ? "," : "", runs[i]->p);
    }
    /* the rules per collective, those with any */
    char per[512] = "";
    for (int c = 0; c < NC_COLL_COUNT; c++) {
        int k = count_coll(&tab, c);
        size_t l = strlen(per);
        if (k && l < sizeof per)
            snprintf(per + l, sizeof per - l, "%s%s %d", l ? ", " : "",
                     nc__coll_name((nc__coll_t)c), k);
    }
    char a[32], b[32];
    long ts = (long)(used + 0.5), tb = (long)(o.budget_s + 0.5);
    snprintf(a, sizeof a, "%ld:%02ld", ts / 60, ts % 60);
    snprintf(b, sizeof b, "%ld:%02ld", tb / 60, tb % 60);
    fprintf(stderr, ME ": wrote %s: %d rules (%s) from %d points at p=%s, "
            "%d tie%s, %d left out; %s of %s\n", o.out, tab.n,
            per[0] ? per : "none", points, ps[0] ? ps : "none", ties,
            ties == 1 ? "" : "s", skipped, a, b);
    if (bad)
        fprintf(stderr, ME ": %d configuration%s delivered wrong data (named "
                "above) and %s left out: a bug in numacoll, please report it\n",
                bad, bad == 1 ? "" : "s", bad == 1 ? "was" : "were");
    nc__tune_free(&tab);
    free(header);
    for (int i = 0; i < nruns; i++)
        free(runs[i]);
    return failed ? 3 : bad ? 1 : 0;
}
