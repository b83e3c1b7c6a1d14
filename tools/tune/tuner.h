/*
 * numacoll-tune internals, shared by its files:
 *
 *   numacoll-tune.c    options, one run of p ranks per tuned p (the core's
 *                      runner), then the table: write, parse back, summary;
 *   tuner_run.c        inside the ranks: fit the model, then for every
 *                      operation and size point measure the candidates with
 *                      numacoll-bench's loop and keep the fastest, within
 *                      the time budget; rank 0 reports through shared memory;
 *   tuner_cands.c      the candidates of one point (pure functions of the
 *                      fitted model, the team's shape and the size);
 *   tuner_table.c      measured points to rules (ranges, ties, merging) and
 *                      the file's header;
 *   tuner_machine.c    what the header says about the machine (hwloc).
 *
 * Operations are numbered as numacoll-bench numbers them (NCB_OP_*), the
 * table's collectives as coll/algs.h does (NC_COLL_*); tn_coll_of maps.
 */
#ifndef NUMACOLL_TUNER_H
#define NUMACOLL_TUNER_H

#include <stddef.h>

#include "bench/bench.h"
#include "coll/algs.h"
#include "numacoll.h"
#include "tools/tune/model.h"
#include "tune/table.h"

#define TN_VERSION      "0.1"
#define TN_MAX_P        16      /* -p values                              */
#define TN_MAX_SIZES    40      /* size points of one operation           */
#define TN_MAX_POINTS   (NCB_OP_COUNT * TN_MAX_SIZES)
/* Targets of one measurement: the default first and last, so at most
 * NCB_MAX_CFGS - 2 candidates. */
#define TN_MAX_CANDS    (NCB_MAX_CFGS - 2)
#define TN_MAX_SHAPES   32
/* A choice must beat the default by more than the measured noise, and by
 * at least this much: two medians of one configuration agree closely by
 * chance now and then, and a table should not change on that. */
#define TN_NOISE_FLOOR  0.02
/* Samples per candidate and their length (numacoll-bench's --reps and
 * --sample-us), and candidates per point besides the default. Samples
 * long and many enough that another program's time slice (a few ms)
 * spoils a minority of them: the median then ignores it. */
#define TN_REPS_QUICK    11
#define TN_REPS_FULL     15
#define TN_SAMPLE_QUICK  1000.0
#define TN_SAMPLE_FULL   2000.0
#define TN_CANDS_QUICK   3
#define TN_CANDS_FULL    8
/* The same for the collectives whose rules are the table's alone
 * (Allgather, Gather, Scatter, Alltoall, Reduce_scatter, Scan, Exscan):
 * few algorithms and few parameters each, so fewer candidates keep the
 * default run within its budget (tuner_cands.c, table_list). */
#define TN_CANDS_GENERIC_QUICK 2
#define TN_CANDS_GENERIC_FULL  4
/* What --ops all (and no --ops) tunes: every operation of numacoll-bench
 * whose collective has rules of its own in the table. The v forms
 * (Allgatherv, Alltoallv) run their base collective's rules and are
 * tuned through it. */
#define TN_OPS_ALL                                                            \
    (NCB_OPS_CLASSIC | 1u << NCB_OP_ALLGATHER | 1u << NCB_OP_GATHER |        \
     1u << NCB_OP_SCATTER | 1u << NCB_OP_ALLTOALL |                           \
     1u << NCB_OP_REDUCE_SCATTER | 1u << NCB_OP_SCAN | 1u << NCB_OP_EXSCAN)
/* A level list replaces numa only when its calls took less time
 * (geometric mean over the points) by this much, or by more than two numa
 * teams differed, whichever is larger (tuner_run.c, measure_levels). */
#define TN_LEVELS_MARGIN 0.05

/* ---- options ------------------------------------------------------------ */

/* --decline-from (tools/tune/tuner_decline.c, docs/tuning.md): which
 * loops' medians decide that the host wins a point. */
typedef enum {
    TN_LOOP_BOTH = 0,   /* every loop the CSV has for the point (default) */
    TN_LOOP_EITHER,     /* any one of them                                */
    TN_LOOP_APP,        /* the application loop only                      */
    TN_LOOP_B2B         /* the back-to-back loop only                     */
} tn_loop_rule_t;

typedef struct tn_decline_opts {
    const char *csv;        /* --decline-from: compare-ompi.sh's merged CSV */
    const char *table;      /* --table: the table to mark; NULL: built-in   */
    const char *config;     /* --decline-config (numacoll)                 */
    const char *host;       /* --decline-host (tuned)                      */
    double margin;          /* --decline-margin: lose when config's median
                             * > margin x host's (1.00)                    */
    tn_loop_rule_t loop;    /* --decline-loop                              */
} tn_decline_opts_t;

typedef struct tn_decline_sum {
    int points;             /* (op, p, size) measured on both sides        */
    int losing;             /* of those, where the host won               */
    int marked;             /* rules (pieces) given decline=1              */
    int uncovered;          /* losing points no rule of the table covers   */
    int skipped_rows;       /* rows of v forms, or not ok                  */
} tn_decline_sum_t;

/* Read o->csv and put decline=1 on tab's rules where o's configuration
 * lost (splitting rules by p and size); 0, or -1 with a sentence in err. */
int tn_decline_apply(const tn_decline_opts_t *o, nc__tune_table_t *tab,
                     tn_decline_sum_t *sum, char *err, size_t errlen);

typedef struct tn_opts {
    const char *out;                /* -o                                  */
    int p[TN_MAX_P], np;            /* -p, ascending; np = 0: cores         */
    unsigned ops;                   /* bit per NCB_OP_*                    */
    size_t size_lo, size_hi;        /* --sizes                             */
    int sizes_given;                /* --sizes named: rules stay inside    */
    double budget_s;                /* --budget                            */
    int budget_given;
    int quick;
    const char *topology;
    int verbose;
    tn_decline_opts_t decline;      /* csv set: mark a table, measure nothing */
} tn_opts_t;

/* ---- the model's view of a team, and the candidates --------------------- */

/* A tree shape with what the ranking needs: depth and the root's children
 * (root 0). Kinds whose trees coincide at this p share one shape. */
typedef struct tn_shape {
    int kind, k;        /* the first (kind, k) that gave it                 */
    int hier;           /* 1: the hier tree of Reduce and Barrier           */
    int depth, fanout;
    int canon;          /* index of the first shape with these parents     */
    int *parent;        /* [nroots * p], parent of each rank per root      */
} tn_shape_t;

typedef struct tn_ctx {
    int p;
    unsigned nodes, ppn;
    int quick;
    const numacoll_locality_t *loc;       /* [p]                            */
    const nc__model_t *model;
    double t;                              /* seconds per byte for the leaf */
    tn_shape_t shape[TN_MAX_SHAPES];
    int nshape;
    int nroots;                            /* roots compared per shape      */
    int *roots;                            /* [nroots]                       */
    int relay_ok;                          /* the levels measured under keep
                                              a level: relay=1 is tried     */
    int cma_ok;                            /* the team takes single copy
                                              (permitted and fast enough):
                                              alg=cma is tried              */
} tn_ctx_t;

typedef struct tn_cand {
    nc__choice_t ch;
    double pred;        /* the model's or the ranking's seconds; 0: none   */
} tn_cand_t;

/* Constants for when the fit fails: a plausible machine, so the candidate
 * lists stay sensible (the header says the fit failed). */
void tn_model_assumed(nc__model_t *md);

/* Set up x for a team of p ranks at loc (copied pointer) with the fitted
 * model; 0, or -1 when out of memory. */
int tn_ctx_init(tn_ctx_t *x, int p, unsigned nodes, unsigned ppn,
                const numacoll_locality_t *loc, const nc__model_t *model,
                int quick);
void tn_ctx_fini(tn_ctx_t *x);

/* The candidates of op at m besides the default def, best predicted first,
 * at most cap (<= TN_MAX_CANDS), none doing what def does; returns how
 * many. */
int tn_cands(tn_ctx_t *x, int op, size_t m, const nc__choice_t *def,
             int cap, tn_cand_t *out);

/* 1 when a and b run the same algorithm with the same parameters (trees
 * compared by shape at x's p; x may be NULL to compare kind and radix). */
int tn_choice_same(tn_ctx_t *x, const nc__choice_t *a, const nc__choice_t *b);

/* "alg=pipelined f=16K s=64 q=2 tree=kary k=2": the keys the algorithm
 * takes, as the table writes them. */
void tn_choice_str(const nc__choice_t *ch, char *buf, size_t len);

/* A single-rule table for a candidate: coll at every p and size (inline
 * algorithms: sizes 0 .. their largest). */
void tn_cand_text(int coll, const nc__choice_t *ch, char *buf, size_t len);

/* "8", "56", "4K", "16M". */
const char *tn_size_str(size_t v, char *buf, size_t len);

/* NC_COLL_* of an NCB_OP_* (the v forms: their base collective's), or
 * -1 when the operation has no rules. */
int tn_coll_of(int op);

/* 1 for the operations tuned from the algorithm table alone (no model
 * formula, few parameters): those of TN_OPS_ALL beyond the classic four. */
int tn_op_generic(int op);

/* Candidates per point for op (TN_CANDS_* by quick and kind). */
int tn_op_cap(int op, int quick);

/* ---- one run: what rank 0 reports back --------------------------------- */

enum { TN_PT_MEASURED, TN_PT_ONE_SHAPE };

/* One point: what rank 0 measured (raw), then what tn_decide made of it. */
typedef struct tn_point {
    int op;                     /* NCB_OP_*                                 */
    size_t m;                   /* bytes (0: barrier)                       */
    int status;                 /* TN_PT_*                                  */
    int ncand, reps;            /* measured candidates (default excluded)  */
    int bad;                    /* candidates whose data check failed       */
    /* measured */
    nc__choice_t def;
    double t_def[2];            /* the default's two medians (two teams)    */
    double noise;               /* |t_def[0] - t_def[1]| / min             */
    int nalt;                   /* 0, 1 or 2 of the fastest others          */
    nc__choice_t alt[2];
    double t_alt[2];
    /* decided (tn_decide) */
    double thr;                 /* the margin a choice had to beat          */
    nc__choice_t win, second;
    double t_win, t_second;
    double gain;                /* t_def / t_win; 1 when the default stays  */
    int kept_default;
    int tie_default;            /* the best other was faster within thr    */
    int tie_second;             /* the runner-up was within thr of winner  */
} tn_point_t;

typedef struct tn_report {
    int p;
    unsigned nodes, ppn;
    nc__model_t model;
    int model_ok;
    char model_note[160];
    double fit_s, elapsed_s;
    int reps, ncand;            /* samples and candidates per point planned */
    double sample_us;
    double op_noise[NCB_OP_COUNT]; /* median over the points (tn_decide)   */
    int npoints, skipped;       /* skipped: points left out for the budget */
    /* rule_bounded: a --sizes range given, rule_lo .. rule_hi, which the
     * sized rules stay inside; else the first point's choice from 0 and
     * the last one's to every size */
    int rule_bounded;
    size_t rule_lo, rule_hi;
    char skipped_list[256];
    tn_point_t pt[TN_MAX_POINTS];
    /* level lists (tuner_run.c, measure_levels): the one the points were
     * measured under and the table names (0: numa, nothing written), and
     * what was measured, for the header and the summary */
    int levels_win;
    char levels_note[640];
    int status;                 /* rank 0's exit status                     */
    char where[160];            /* what rank 0 was doing last              */
} tn_report_t;

/* What every rank of one run receives. */
typedef struct tn_job {
    const tn_opts_t *o;
    int p;
    double t_start;             /* ncb_now() at the program's start         */
    double deadline;            /* ncb_now() value to finish this run by    */
    int run_idx, nruns;         /* for the progress bar                     */
    int tty;                    /* stderr is a terminal                     */
    unsigned char *lines;       /* two shared cache lines (ping-pong)       */
    tn_report_t *rep;           /* shared, written by rank 0                */
} tn_job_t;

/* The ranks' body (support/runner.h's nc__rank_fn). */
int tn_rank_main(const numacoll_bootstrap_t *b, void *arg);

/* ---- the table ---------------------------------------------------------- */

/* Decide every point of r: the fastest other replaces the default when
 * faster by more than thr = max(the point's noise, the median noise of its
 * operation in this run, TN_NOISE_FLOOR). Also fills r's per-operation
 * noise medians. */
void tn_decide(tn_report_t *r);

/* The rules of every run's points: ranges between measured sizes, ties and
 * untested sizes as the built-in table has them, neighbours with one
 * choice merged, p ranges from each tuned p to the next. 0, or -1 when
 * out of memory. */
int tn_build_table(const tn_report_t *const *runs, int nruns,
                   nc__tune_table_t *out);

typedef struct tn_machine {
    char cpu[128];
    int cores, pus, numa;
    char hwloc[32];
    char topo_note[200];        /* the --topology's counts, or ""          */
    int topo_cores;             /* cores of the --topology (0: none)       */
} tn_machine_t;

/* This machine (and, when topology is not NULL, the described one). */
void tn_machine_probe(const char *topology, tn_machine_t *mc);

/* The header (lines, no '#'): program, date, machine, what was measured,
 * the model, the noise and the ties. Returns a malloc'd string. */
char *tn_header(const tn_opts_t *o, const tn_machine_t *mc,
                const tn_report_t *const *runs, int nruns, double used_s,
                const char *not_run);

#endif
