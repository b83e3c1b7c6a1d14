/*
 * numacoll-bench internals, shared by the two builds of the same program:
 *
 *   numacoll-bench       standalone: forks p ranks with the core's runner and
 *                        times numacoll teams (bench_team.c);
 *   numacoll-bench-mpi   the same sources built with mpicc -DNCB_BUILD_MPI: runs
 *                        under mpirun and times MPI_Bcast etc., i.e. whatever
 *                        coll component Open MPI selected (bench_mpi.c).
 *
 * bench_opts.c parses the options; bench_core.c owns the operation table
 * and the one timing loop; bench_report.c the table, CSV, JSON, plot and
 * --merge. A backend
 * supplies an ncb_world_t (rank, p, untimed helpers) and one ncb_target_t
 * per configuration (the calls being measured). Nothing here includes MPI
 * or numacoll.h, so the MPI build needs neither the library nor hwloc.
 */
#ifndef NCB_BENCH_H
#define NCB_BENCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define NCB_VERSION      "0.4"
#define NCB_MAX_SIZES    64
#define NCB_MAX_CFGS     16
#define NCB_LABEL_MAX    80
#define NCB_MAX_BYTES    ((size_t)1 << 30)
#define NCB_MAX_DTYPES   16

/* A 64-bit value per (seed, word): splitmix64, cheap and well spread. */
static inline uint64_t ncb_mix(uint64_t seed, uint64_t j)
{
    uint64_t x = seed * 0x9e3779b97f4a7c15ULL + j * 0xd1b54a32d192ed03ULL +
                 0x632be59bd9b4e019ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* ---- element types of the reductions (--dtype, bench_dtype.c) ----------
 * The layout comes from the name: a scalar, complex_R (two reals) or a
 * MINLOC pair B_int / 2B (value, then index). Reductions SUM where the
 * type has it, else MINLOC. */
struct ncb_comp {
    size_t off, size;
    size_t sig;          /* bytes that carry the value (long double: 10) */
    int real;
};

typedef struct ncb_dtype {
    char name[24];
    size_t size, align;  /* of one element, as C lays it out           */
    int minloc;          /* 0: SUM, 1: MINLOC                           */
    int ncomp;           /* 1, or 2: complex parts, or value and index  */
    struct ncb_comp comp[2];
    int id;              /* the backend's handle of the type            */
} ncb_dtype_t;

/* The layout of name, whose elements the backend says are size bytes;
 * 0, or -1 when the bench cannot lay it out (or the size disagrees). */
int ncb_dtype_layout(const char *name, size_t size, ncb_dtype_t *d);
/* Rank r's element e of the data of seed; stamp: the cheap form of the
 * timed calls' stamps. */
void ncb_dt_put(const ncb_dtype_t *d, unsigned char *el, uint64_t seed,
                size_t e, int r, int stamp);
/* The exact result of element e over ranks 0..n-1. */
void ncb_dt_expect(const ncb_dtype_t *d, unsigned char *el, uint64_t seed,
                   size_t e, int n, int stamp);
/* 1 when a and b agree bitwise in every significant byte. */
int ncb_dt_same(const ncb_dtype_t *d, const unsigned char *a,
                const unsigned char *b);
/* Flip every significant byte (poison: differs from the answer). */
void ncb_dt_complement(const ncb_dtype_t *d, unsigned char *el);
int ncb_dt_has_real(const ncb_dtype_t *d);
/* Fill a send arena so that every aligned element holds valid numbers. */
void ncb_dt_fill(const ncb_dtype_t *d, unsigned char *a, size_t len, int rank);

/* ---- the operations ----------------------------------------------------
 * X(id, name, flags, elem, what): one entry per operation. elem is the
 * element size in bytes (sizes must be multiples of it). Reduce and
 * Allreduce sum uint32 elements, so results are exact and checkable. */
enum {
    NCB_SIZED = 1,     /* takes a message size                          */
    NCB_ROOTED = 2,    /* has a root, rotated by --root-shift            */
    NCB_SUM = 4,       /* every rank contributes, uint32 sum             */
    NCB_ALL = 8,       /* every rank receives the result                 */
    NCB_BLOCKS = 16,   /* the size is each rank's block; one side holds
                        * the p blocks (the gathers)                     */
    NCB_PBLOCKS = 32,  /* NCB_SUM whose contribution is p blocks of the
                        * size, block j's sum going to rank j            */
};

#define NCB_OP_LIST(X)                                                        \
    X(BCAST, "bcast", NCB_SIZED | NCB_ROOTED | NCB_ALL, 1,                    \
      "the root's bytes to every rank")                                       \
    X(REDUCE, "reduce", NCB_SIZED | NCB_ROOTED | NCB_SUM, 4,                  \
      "uint32 sum of every rank's vector at the root")                        \
    X(ALLREDUCE, "allreduce", NCB_SIZED | NCB_SUM | NCB_ALL, 4,               \
      "uint32 sum of every rank's vector at every rank")                      \
    X(BARRIER, "barrier", 0, 0, "no data")                                    \
    X(ALLGATHER, "allgather", NCB_SIZED | NCB_BLOCKS | NCB_ALL, 1,            \
      "every rank's block of the size to every rank")                         \
    X(GATHER, "gather", NCB_SIZED | NCB_ROOTED | NCB_BLOCKS, 1,               \
      "every rank's block of the size to the root")                           \
    X(SCATTER, "scatter", NCB_SIZED | NCB_ROOTED | NCB_BLOCKS | NCB_ALL, 1,   \
      "a block of the size from the root to every rank")                      \
    X(ALLTOALL, "alltoall", NCB_SIZED | NCB_BLOCKS | NCB_ALL, 1,              \
      "a block of the size from every rank to every rank")                    \
    X(ALLGATHERV, "allgatherv", NCB_SIZED | NCB_BLOCKS | NCB_ALL, 1,          \
      "allgather as an Allgatherv of equal counts")                            \
    X(ALLTOALLV, "alltoallv", NCB_SIZED | NCB_BLOCKS | NCB_ALL, 1,            \
      "alltoall through the v form (every count the size)")                   \
    X(GATHERV, "gatherv", NCB_SIZED | NCB_ROOTED | NCB_BLOCKS, 1,             \
      "gather as a Gatherv of equal counts")                                  \
    X(SCATTERV, "scatterv", NCB_SIZED | NCB_ROOTED | NCB_BLOCKS | NCB_ALL, 1, \
      "scatter as a Scatterv of equal counts")                                \
    X(REDUCE_SCATTER, "reduce_scatter",                                       \
      NCB_SIZED | NCB_SUM | NCB_ALL | NCB_PBLOCKS, 4,                         \
      "uint32 sum of every rank's p blocks of the size, block j at rank j "   \
      "(reduce_scatter_block)")                                               \
    X(SCAN, "scan", NCB_SIZED | NCB_SUM | NCB_ALL, 4,                         \
      "uint32 sum over ranks 0..i of their vectors at rank i")                \
    X(EXSCAN, "exscan", NCB_SIZED | NCB_SUM | NCB_ALL, 4,                     \
      "uint32 sum over ranks 0..i-1 at rank i (rank 0 receives nothing)")

typedef enum {
#define X(id, name, flags, elem, what) NCB_OP_##id,
    NCB_OP_LIST(X)
#undef X
    NCB_OP_COUNT
} ncb_op_id_t;

typedef struct ncb_op {
    const char *name;
    unsigned flags;
    size_t elem;
    const char *what;
} ncb_op_t;

extern const ncb_op_t ncb_ops[NCB_OP_COUNT];

/* The operations a run measures when --ops names none (and what
 * numacoll-tune tunes): the gathers only when asked for. */
#define NCB_OPS_CLASSIC                                                       \
    (1u << NCB_OP_BCAST | 1u << NCB_OP_REDUCE | 1u << NCB_OP_ALLREDUCE |      \
     1u << NCB_OP_BARRIER)

/* Index of the operation called name, or -1. */
int ncb_op_find(const char *name);

/* ---- one call, as a backend receives it ------------------------------- */
typedef struct ncb_call {
    void *buf;          /* bcast: root ? sbuf : rbuf (in place)          */
    void *sbuf;         /* reduce/allreduce: this rank's contribution;
                         * gathers: the send side (p blocks: scatter,
                         * alltoall)                                     */
    void *rbuf;         /* reduce/allreduce: the result; gathers: the
                         * receive side (p blocks: allgather, gather,
                         * alltoall)                                     */
    size_t bytes;
    size_t count;       /* bytes / elem                                  */
    int root;
    const ncb_dtype_t *dt;  /* the reductions' type; NULL: uint32 SUM    */
} ncb_call_t;

/* One configuration as a backend runs it. */
typedef struct ncb_target {
    /* NULL where this mode lacks the operation. Returns 0 or a non-zero
     * status; last_error() words it. */
    int (*run[NCB_OP_COUNT])(void *ctx, const ncb_call_t *c);
    /* The barrier between samples (not timed). */
    int (*barrier)(void *ctx);
    /* 0 if op can run at this size; otherwise writes why into why[len]. */
    int (*applies)(void *ctx, int op, size_t bytes, char *why, size_t len);
    const char *(*last_error)(void *ctx);
    /* --overlap: start op's nonblocking form, then wait for it; one call
     * in flight per target. NULL where the mode has no such form. */
    int (*istart[NCB_OP_COUNT])(void *ctx, const ncb_call_t *c);
    int (*iwait)(void *ctx);
    void *ctx;
} ncb_target_t;

/* One rank's view of the run; every helper is collective and untimed. */
typedef struct ncb_world {
    int rank, p;
    int (*sync)(struct ncb_world *w);
    /* element-wise max over ranks of v[0..n), result on every rank */
    int (*allmax)(struct ncb_world *w, double *v, int n);
    /* all[r*n + i] = rank r's mine[i], at least on rank 0 */
    int (*gather)(struct ncb_world *w, const double *mine, int n, double *all);
    /* Two cache lines shared by ranks 0 and 1 (NULL when p < 2): the
     * one-line round trip is measured on them. ping is written by rank 0,
     * pong by rank 1. */
    _Atomic uint64_t *ping, *pong;
    /* Nonzero on every rank when ranks 0 and 1 have the lines: measuring
     * the round trip is collective (a sync per run and an allmax), so the
     * ranks beyond 1, which have no lines, must know it too. */
    int lines;
    void *ctx;
} ncb_world_t;

/* ---- options ----------------------------------------------------------- */

/* A numacoll configuration as given on the command line. Numbers are -1
 * (strings "") where not given: the library's default applies. The
 * standalone backend validates them with the library. */
typedef struct ncb_spec {
    char label[NCB_LABEL_MAX];
    char word[32];          /* a bare name: a tree or an algorithm        */
    char alg[32];
    char tree[16];
    long long frag;
    long queue, banks, radix, spin;
    char params[256];       /* other library parameters: "name=value,..." */
} ncb_spec_t;

typedef enum { NCB_STANDALONE, NCB_MPI } ncb_mode_t;

/* Where the user buffers start (--align). An offset >= 0 is bytes past a
 * page boundary, the same on every rank and for every buffer taken from
 * the arenas; 0 is the page-aligned arena of earlier versions (and what a
 * zeroed ncb_opts_t gives numacoll-tune). */
#define NCB_ALIGN_MALLOC  (-1)   /* plain malloc, as applications (default) */
#define NCB_ALIGN_SWEEP   (-2)   /* every offset of ncb_sweep_offsets        */
#define NCB_ALIGN_MAX     4095
#define NCB_SWEEP_N       6
extern const int ncb_sweep_offsets[NCB_SWEEP_N];   /* 0 8 16 32 48 64 */

/* Timing loops (--loop), a bit each; 0 counts as NCB_LOOP_B2B. */
enum {
    NCB_LOOP_B2B = 1,   /* barrier, then K calls back to back, root rotates */
    NCB_LOOP_APP = 2,   /* per call: barrier, then the call alone timed,
                           root 0 (as OSU and IMB time)                     */
};
/* "b2b" or "app" for one loop bit. */
const char *ncb_loop_name(int loop);

typedef struct ncb_opts {
    ncb_mode_t mode;
    int p;                       /* standalone ranks; 0 = CPUs (>= 2)     */
    unsigned ops;                /* bit per ncb_op_id_t; 0 = all in mode  */
    size_t sizes[NCB_MAX_SIZES];
    int nsizes;
    ncb_spec_t base;             /* --alg/--tree/... outside --compare    */
    ncb_spec_t cfg[NCB_MAX_CFGS];
    int ncfg;                    /* >= 1 after ncb_parse                  */
    char baseline[NCB_LABEL_MAX];
    int root_shift;              /* root of call c = (c * shift) % p      */
    int hot;                     /* --cache hot: one region, reused       */
    int check;                   /* verify received data                  */
    int reps;                    /* samples per size and configuration    */
    int iters;                   /* calls per sample; 0 = adaptive        */
    int warmup;                  /* untimed calls; -1 = by size           */
    double sample_us;            /* adaptive target duration of a sample  */
    int bind;                    /* -1: when p <= CPUs                    */
    const char *topology;
    const char *label;           /* MPI: name of this configuration       */
    const char *csv, *json, *plot;
    int quiet;
    int merge;                   /* remaining arguments are CSV files     */
    char **files;
    int nfiles;
    int list_params, list_algs, help;
    int footprint;               /* --footprint: /dev/shm per team, by p  */
    int no_memcpy;               /* skip the memcpy reference (the tuner)  */
    int align;                   /* >= 0 or NCB_ALIGN_MALLOC/_SWEEP       */
    unsigned loops;              /* NCB_LOOP_* bits; 0 = b2b              */
    int transfers;               /* --transfers: count, do not time       */
    int overlap;                 /* --overlap: the nonblocking forms      */
    ncb_dtype_t dtype[NCB_MAX_DTYPES];  /* --dtype; none: uint32 SUM      */
    int ndtype;
} ncb_opts_t;

/* Parse argv into *o. Returns 0 to run, 1 when the program should exit 0
 * (help, lists), 2 on a usage error with a sentence in err. */
int ncb_parse(int argc, char **argv, ncb_mode_t mode, ncb_opts_t *o,
              char *err, size_t errlen);
void ncb_usage(FILE *to, ncb_mode_t mode);

/* Parse one size ("4096", "64k", "16m", "1g"); 0 on success. */
int ncb_parse_size(const char *s, size_t *out);

/* ---- results ----------------------------------------------------------- */
enum { NCB_ROW_OK, NCB_ROW_NA, NCB_ROW_BAD };

typedef struct ncb_row {
    int op, cfg;
    size_t bytes;
    int calls, samples;           /* calls per sample, samples            */
    double min, med, max;         /* seconds per call (max over ranks)    */
    double memcpy_s;              /* same size on one core; < 0: n/a      */
    int status;
    char note[64];                /* why NA / what failed                 */
    int loop;                     /* NCB_LOOP_B2B or NCB_LOOP_APP          */
    int align;                    /* the buffers' offset past a page      */
} ncb_row_t;

/* A row's op is a section of the report: the operation and, for the
 * reductions, the index of its dtype in the report's list (0 for the
 * others and for a run without --dtype, so a section is then the op). */
#define NCB_SEC(op, dt)  ((op) + NCB_OP_COUNT * (dt))
#define NCB_SEC_OP(s)    ((s) % NCB_OP_COUNT)
#define NCB_SEC_DT(s)    ((s) / NCB_OP_COUNT)

typedef struct ncb_report {
    const char *mode;             /* "standalone", "mpi", "merged"        */
    int p;
    char where[160];              /* e.g. "ranks on CPUs 0,1"              */
    int ncfg, baseline;
    char label[NCB_MAX_CFGS][NCB_LABEL_MAX];
    char desc[NCB_MAX_CFGS][200];
    /* the hierarchy each configuration's team built from its levels, e.g.
     * "2 packages > 4 NUMA > 16 L3 > 64 ranks (levels l3,numa,package)";
     * "" where the backend cannot tell (MPI) */
    char hier[NCB_MAX_CFGS][224];
    double barrier_s[NCB_MAX_CFGS];  /* < 0: unknown                      */
    double line_rtt;              /* seconds; < 0: unknown                */
    double line_rtt_end;          /* the same at the end of the run       */
    size_t arena, llc;
    int hot, check, root_shift, reps, iters, nmerged;
    double sample_us;
    char extra[512];              /* a backend's note (MPI_T counters)     */
    char busy[128];               /* other programs were running          */
    int align;                    /* as ncb_opts_t.align                  */
    int align_seen;               /* malloc: rank 0's send buffer offset  */
    char align_desc[200];         /* malloc: the offsets every rank saw   */
    unsigned loops;               /* NCB_LOOP_* bits present              */
    char dtype[NCB_MAX_DTYPES][24];  /* --dtype names; "" without it      */
    char dtype_op[NCB_MAX_DTYPES][8];  /* "sum", "minloc"; "" when unknown */
    int ndtype;
    ncb_row_t *rows;
    int nrows, cap;
    int failures;
} ncb_report_t;

/* Set up an empty report for these options. */
void ncb_report_init(ncb_report_t *r, const ncb_opts_t *o, const char *mode,
                     int p);
ncb_row_t *ncb_report_add(ncb_report_t *r);
void ncb_report_free(ncb_report_t *r);

/* The terminal table: header, then per operation a heading and one line
 * per size (printed as each size completes). */
void ncb_print_header(const ncb_report_t *r, FILE *to);
void ncb_print_op_header(const ncb_report_t *r, int op, FILE *to);
void ncb_print_rows(const ncb_report_t *r, int op, size_t bytes, FILE *to);
/* Everything at once (used by --merge). */
void ncb_print_all(const ncb_report_t *r, FILE *to);

int ncb_write_csv(const ncb_report_t *r, const char *path);
int ncb_write_json(const ncb_report_t *r, const char *path);
/* gnuplot, log-log time vs size per configuration plus the memcpy limit.
 * Returns 0, or 1 after a one-line note when gnuplot is missing/fails. */
int ncb_write_plot(const ncb_report_t *r, const char *png);
/* --csv/--json/--plot of o, in that order; returns non-zero on a failure
 * to write a file. */
int ncb_write_outputs(const ncb_report_t *r, const ncb_opts_t *o);

/* --merge: read CSV files written by --csv, one configuration per label;
 * repeated labels (interleaved rounds) give medians of the per-run
 * medians. Prints the comparison and writes o's outputs. */
int ncb_merge(const ncb_opts_t *o);

/* ---- the measurement ---------------------------------------------------- */

/* Run on every rank: references, then every operation and size over the
 * configurations t[0..ncfg), each timed with every loop of o->loops and
 * at every offset of o->align (one row per configuration, loop and offset,
 * all interleaved). Rank 0 fills *rep and prints as it goes.
 * Returns 0, 1 if a check failed, or another non-zero status on error. */
int ncb_measure(const ncb_opts_t *o, ncb_world_t *w, ncb_target_t *t,
                int ncfg, ncb_report_t *rep);

/*
 * The same loop one size at a time, for numacoll-tune. A session owns the
 * buffers (arenas sized for messages up to max_bytes, touched once) and is
 * opened and closed by every rank (collective). ncb_measure_size measures
 * op at m over t[0..ncfg) exactly as ncb_measure measures one size, reading
 * reps, iters, sample_us, warmup, hot, check, root_shift, no_memcpy and the
 * labels o->cfg[c].label from the session's options, and align and loops
 * too; rank 0 appends one row per target, loop and offset to *rep
 * (ncb_report_add: one per target with a zeroed ncb_opts_t). Returns 0 or a non-zero status as
 * ncb_measure; a failed check is a row with status NCB_ROW_BAD, not an
 * error.
 */
typedef struct ncb_session ncb_session_t;
int ncb_session_open(const ncb_opts_t *o, ncb_world_t *w, size_t max_bytes,
                     ncb_session_t **out);
int ncb_measure_size(ncb_session_t *s, ncb_target_t *t, int ncfg, int op,
                     size_t m, ncb_report_t *rep);
void ncb_session_close(ncb_session_t *s);

/*
 * --overlap (bench/bench_overlap.c): per operation, size and configuration
 * the blocking call, start+wait of the nonblocking one, and start, a dummy
 * computation of about that long, wait; overlap % as OSU computes it.
 * Prints its own table on rank 0 (mode and where go into its header) and
 * writes --csv in its own columns. Returns 0, 1 when a check failed, or
 * another non-zero status on error.
 */
int ncb_measure_overlap(const ncb_opts_t *o, ncb_world_t *w, ncb_target_t *t,
                        int ncfg, const char *mode, const char *where);

/* ---- what each build provides (bench_team.c or bench_mpi.c) ----------- */

/* Run the benchmark with parsed options; returns the exit status. */
int ncb_backend_main(ncb_opts_t *o, int argc, char **argv);

/*
 * Standalone build only (bench_team.c), for numacoll-tune: one numacoll
 * team as a target, and the world over the runner's bootstrap. Declared
 * with the library's struct tags so this header still needs no numacoll.h.
 *
 * ncb_team_open is collective over b: a team of *cfg (copied; pu set to the
 * rank under a fake topology) with alg[op] forcing the algorithm of each
 * operation (an nc__alg_t of coll/algs.h, -1: the library's choice, as
 * --alg auto), ready to measure through *t. Returns 0, or a numacoll
 * status with a sentence in err.
 */
struct numacoll_bootstrap;
struct numacoll_config;
typedef struct ncb_team ncb_team_t;
int ncb_team_open(const struct numacoll_bootstrap *b,
                  const struct numacoll_config *cfg,
                  const int alg[NCB_OP_COUNT], ncb_team_t **out,
                  ncb_target_t *t, char *err, size_t errlen);
/* Local, like numacoll_team_destroy. NULL is fine. */
void ncb_team_close(ncb_team_t *tm);
/* The library's team behind tm (to ask it what its table resolved to). */
struct numacoll_team *ncb_team_handle(ncb_team_t *tm);
/* The world's helpers over b (which must outlive *w); shared, when not
 * NULL, is two cache lines every rank mapped before the fork, for the
 * one-line round trip. */
void ncb_team_world(const struct numacoll_bootstrap *b, void *shared,
                    ncb_world_t *w);
/* --list-algs and --list-params for this build. */
void ncb_backend_list_algs(FILE *to);
void ncb_backend_list_params(FILE *to);
/* --footprint (standalone, bench_footprint.c): the table of /dev/shm per
 * team for p = 2 to 256 (or o->p), teams of cfg; 0 if every p ran. */
struct numacoll_config;
int ncb_footprint(const ncb_opts_t *o, const struct numacoll_config *cfg);
/* --dtype NAME: this build's type of that name, laid out (0), or -1; and
 * every name it knows, comma-separated, for the error message. */
int ncb_backend_dtype(const char *name, ncb_dtype_t *out);
void ncb_backend_dtype_names(char *buf, size_t len);

/* --transfers (bench/bench_transfers.c): for each configuration's team and
 * each size, the cache lines one Bcast moves across a domain boundary of
 * each level, counted from the tree and the rule the team would run.
 * Called by rank 0 with the teams open; writes the table to `to`. */
struct numacoll_team;
void ncb_print_transfers(const ncb_opts_t *o, struct numacoll_team *const *teams,
                         FILE *to);

/* Largest CPU cache in bytes (sysfs), 32 MiB if unknown. */
size_t ncb_llc_bytes(void);

/* Monotonic seconds. */
double ncb_now(void);

#endif
