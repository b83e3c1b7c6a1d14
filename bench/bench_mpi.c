/*
 * MPI backend of numacoll-bench (numacoll-bench-mpi, built with mpicc): the
 * calls are MPI_Bcast, MPI_Reduce, MPI_Allreduce, MPI_Barrier,
 * MPI_Allgather, MPI_Gather, MPI_Scatter, MPI_Alltoall, MPI_Allgatherv and
 * MPI_Alltoallv (equal counts), MPI_Reduce_scatter_block, MPI_Scan and
 * MPI_Exscan on MPI_COMM_WORLD, so the numbers are those of whatever coll
 * component Open MPI selected (numacoll, tuned, sm, han, ...: chosen with
 * mpirun --mca, see bench/compare-ompi.sh). The timing loop is the
 * standalone one (bench_core.c). The reductions sum uint32 (MPI_UINT32_T,
 * MPI_SUM); the gathers and alltoall(v) move MPI_BYTE blocks of the size.
 *
 * The one-line round trip needs memory shared by ranks 0 and 1: rank 0
 * creates a POSIX shared-memory object, broadcasts its name, rank 1 maps
 * it, and rank 0 unlinks it once both have (nothing is left behind).
 */
#include <fcntl.h>
#include <limits.h>
#include <mpi.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"

typedef struct mctx {
    MPI_Comm comm;
    int *vcounts, *vdispls;   /* Allgatherv: p equal blocks */
    int last;                 /* last MPI error code */
    char msg[MPI_MAX_ERROR_STRING];
} mctx_t;

static int note(mctx_t *m, int rc)
{
    m->last = rc;
    if (rc != MPI_SUCCESS) {
        int len = 0;
        MPI_Error_string(rc, m->msg, &len);
    }
    return rc;
}

/* --dtype: the names of the standalone bench (the core's), with the MPI
 * type each stands for, and two Fortran handles usable from C, so that a
 * Fortran type's path can be timed against the C one. layout: the bench's
 * name of the same C layout; size: of one element in C. */
typedef struct mdt {
    const char *name, *layout;
    MPI_Datatype type;
    size_t size;
} mdt_t;

typedef struct { float v; int i; } fi_t;
typedef struct { double v; int i; } di_t;
typedef struct { long v; int i; } li_t;
typedef struct { int v; int i; } ii_t;
typedef struct { short v; int i; } si_t;
typedef struct { long double v; int i; } ldi_t;
typedef struct { float v; float i; } ff_t;
typedef struct { double v; double i; } dd_t;

static const mdt_t mdts[] = {
    {"int8", "int8", MPI_INT8_T, 1},
    {"uint8", "uint8", MPI_UINT8_T, 1},
    {"int16", "int16", MPI_INT16_T, 2},
    {"uint16", "uint16", MPI_UINT16_T, 2},
    {"int32", "int32", MPI_INT32_T, 4},
    {"uint32", "uint32", MPI_UINT32_T, 4},
    {"int64", "int64", MPI_INT64_T, 8},
    {"uint64", "uint64", MPI_UINT64_T, 8},
    {"float", "float", MPI_FLOAT, sizeof(float)},
    {"double", "double", MPI_DOUBLE, sizeof(double)},
    {"long_double", "long_double", MPI_LONG_DOUBLE, sizeof(long double)},
    {"complex_float", "complex_float", MPI_C_FLOAT_COMPLEX,
     sizeof(float _Complex)},
    {"complex_double", "complex_double", MPI_C_DOUBLE_COMPLEX,
     sizeof(double _Complex)},
    {"complex_long_double", "complex_long_double", MPI_C_LONG_DOUBLE_COMPLEX,
     sizeof(long double _Complex)},
    {"float_int", "float_int", MPI_FLOAT_INT, sizeof(fi_t)},
    {"double_int", "double_int", MPI_DOUBLE_INT, sizeof(di_t)},
    {"long_int", "long_int", MPI_LONG_INT, sizeof(li_t)},
    {"2int", "2int", MPI_2INT, sizeof(ii_t)},
    {"short_int", "short_int", MPI_SHORT_INT, sizeof(si_t)},
    {"long_double_int", "long_double_int", MPI_LONG_DOUBLE_INT, sizeof(ldi_t)},
#ifdef MPI_2REAL
    {"2float", "2float", MPI_2REAL, sizeof(ff_t)},
#endif
#ifdef MPI_2DOUBLE_PRECISION
    {"2double", "2double", MPI_2DOUBLE_PRECISION, sizeof(dd_t)},
#endif
    /* Fortran's, through their C handles (the default kinds of gfortran:
     * 4-byte INTEGER and REAL) */
    {"double_precision", "double", MPI_DOUBLE_PRECISION, sizeof(double)},
    {"double_complex", "complex_double", MPI_DOUBLE_COMPLEX,
     sizeof(double _Complex)},
    {"integer", "int32", MPI_INTEGER, 4},
    {"real", "float", MPI_REAL, 4},
    {"complex", "complex_float", MPI_COMPLEX, 2 * sizeof(float)},
#ifdef MPI_2INTEGER
    {"2integer", "2int", MPI_2INTEGER, sizeof(ii_t)},
#endif
};
#define NMDT (sizeof mdts / sizeof mdts[0])

int ncb_backend_dtype(const char *name, ncb_dtype_t *out)
{
    for (size_t i = 0; i < NMDT; i++) {
        if (strcmp(mdts[i].name, name) != 0)
            continue;
        if (ncb_dtype_layout(mdts[i].layout, mdts[i].size, out) != 0)
            return -1;
        snprintf(out->name, sizeof out->name, "%s", name);
        out->id = (int)i;
        return 0;
    }
    return -1;
}

void ncb_backend_dtype_names(char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NMDT && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
                              mdts[i].name);
}

/* The reductions' type and op: --dtype's, else uint32 SUM. */
static inline MPI_Datatype dt_of(const ncb_call_t *c)
{
    return c->dt ? mdts[c->dt->id].type : MPI_UINT32_T;
}

static inline MPI_Op op_of(const ncb_call_t *c)
{
    return c->dt && c->dt->minloc ? MPI_MINLOC : MPI_SUM;
}

static int run_bcast(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    return note(m, MPI_Bcast(c->buf, (int)c->bytes, MPI_BYTE, c->root,
                             m->comm));
}

static int run_reduce(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    return note(m, MPI_Reduce(c->sbuf, c->rbuf, (int)c->count, dt_of(c),
                              op_of(c), c->root, m->comm));
}

static int run_allreduce(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    return note(m, MPI_Allreduce(c->sbuf, c->rbuf, (int)c->count,
                                 dt_of(c), op_of(c), m->comm));
}

static int run_barrier(void *ctx, const ncb_call_t *c)
{
    (void)c;
    mctx_t *m = ctx;
    return note(m, MPI_Barrier(m->comm));
}

/* The gathers and the other collectives of issue 14: blocks of bytes
 * (applies() keeps the p blocks within an int's reach); sums of uint32. */
static int run_allgather(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    return note(m, MPI_Allgather(c->sbuf, (int)c->bytes, MPI_BYTE, c->rbuf,
                                 (int)c->bytes, MPI_BYTE, m->comm));
}

static int run_gather(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    return note(m, MPI_Gather(c->sbuf, (int)c->bytes, MPI_BYTE, c->rbuf,
                              (int)c->bytes, MPI_BYTE, c->root, m->comm));
}

static int run_scatter(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    return note(m, MPI_Scatter(c->sbuf, (int)c->bytes, MPI_BYTE, c->rbuf,
                               (int)c->bytes, MPI_BYTE, c->root, m->comm));
}

static int run_alltoall(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    return note(m, MPI_Alltoall(c->sbuf, (int)c->bytes, MPI_BYTE, c->rbuf,
                                (int)c->bytes, MPI_BYTE, m->comm));
}

/* The v forms' counts and displacements: p equal blocks of the size. */
static void equal_blocks(mctx_t *m, size_t bytes)
{
    int p;
    MPI_Comm_size(m->comm, &p);
    for (int j = 0; j < p; j++) {
        m->vcounts[j] = (int)bytes;
        m->vdispls[j] = j * (int)bytes;
    }
}

static int run_allgatherv(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    equal_blocks(m, c->bytes);
    return note(m, MPI_Allgatherv(c->sbuf, (int)c->bytes, MPI_BYTE, c->rbuf,
                                  m->vcounts, m->vdispls, MPI_BYTE,
                                  m->comm));
}

static int run_gatherv(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    equal_blocks(m, c->bytes);
    return note(m, MPI_Gatherv(c->sbuf, (int)c->bytes, MPI_BYTE, c->rbuf,
                               m->vcounts, m->vdispls, MPI_BYTE, c->root,
                               m->comm));
}

static int run_scatterv(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    equal_blocks(m, c->bytes);
    return note(m, MPI_Scatterv(c->sbuf, m->vcounts, m->vdispls, MPI_BYTE,
                                c->rbuf, (int)c->bytes, MPI_BYTE, c->root,
                                m->comm));
}

static int run_alltoallv(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    equal_blocks(m, c->bytes);
    return note(m, MPI_Alltoallv(c->sbuf, m->vcounts, m->vdispls, MPI_BYTE,
                                 c->rbuf, m->vcounts, m->vdispls, MPI_BYTE,
                                 m->comm));
}

static int run_reduce_scatter(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    return note(m, MPI_Reduce_scatter_block(c->sbuf, c->rbuf, (int)c->count,
                                            dt_of(c), op_of(c), m->comm));
}

static int run_scan(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    return note(m, MPI_Scan(c->sbuf, c->rbuf, (int)c->count, dt_of(c),
                            op_of(c), m->comm));
}

static int run_exscan(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    return note(m, MPI_Exscan(c->sbuf, c->rbuf, (int)c->count, dt_of(c),
                              op_of(c), m->comm));
}

/* --overlap: the nonblocking forms, one in flight at a time. */
static MPI_Request ireq = MPI_REQUEST_NULL;

static int istart_bcast(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    return note(m, MPI_Ibcast(c->buf, (int)c->bytes, MPI_BYTE, c->root,
                              m->comm, &ireq));
}

static int istart_reduce(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    return note(m, MPI_Ireduce(c->sbuf, c->rbuf, (int)c->count, dt_of(c),
                               op_of(c), c->root, m->comm, &ireq));
}

static int istart_allreduce(void *ctx, const ncb_call_t *c)
{
    mctx_t *m = ctx;
    return note(m, MPI_Iallreduce(c->sbuf, c->rbuf, (int)c->count,
                                  dt_of(c), op_of(c), m->comm, &ireq));
}

static int istart_barrier(void *ctx, const ncb_call_t *c)
{
    (void)c;
    mctx_t *m = ctx;
    return note(m, MPI_Ibarrier(m->comm, &ireq));
}

static int iwait(void *ctx)
{
    return note(ctx, MPI_Wait(&ireq, MPI_STATUS_IGNORE));
}

static int barrier(void *ctx)
{
    mctx_t *m = ctx;
    return note(m, MPI_Barrier(m->comm));
}

static int applies(void *ctx, int op, size_t bytes, char *why, size_t len)
{
    mctx_t *m = ctx;
    int p;
    MPI_Comm_size(m->comm, &p);
    if ((ncb_ops[op].flags & NCB_BLOCKS) &&
        bytes > (size_t)INT_MAX / (size_t)p) {
        snprintf(why, len, "%d blocks of %zu bytes are more than an MPI count "
                 "(int) reaches", p, bytes);
        return 1;
    }
    return 0;
}

static const char *last_error(void *ctx)
{
    mctx_t *m = ctx;
    return m->last == MPI_SUCCESS ? "" : m->msg;
}

static int w_sync(ncb_world_t *w)
{
    return MPI_Barrier(((mctx_t *)w->ctx)->comm) != MPI_SUCCESS;
}

static int w_allmax(ncb_world_t *w, double *v, int n)
{
    return MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX,
                         ((mctx_t *)w->ctx)->comm) != MPI_SUCCESS;
}

static int w_gather(ncb_world_t *w, const double *mine, int n, double *all)
{
    return MPI_Gather(mine, n, MPI_DOUBLE, all, n, MPI_DOUBLE, 0,
                      ((mctx_t *)w->ctx)->comm) != MPI_SUCCESS;
}

/* Map one page shared by ranks 0 and 1; NULL (no line reference) when
 * they cannot share memory, e.g. on different hosts. */
static unsigned char *share_lines(int rank, MPI_Comm comm, int *lines)
{
    char name[64] = "";
    unsigned char *page = NULL;
    int ok = 1;
    if (rank == 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(name, sizeof name, "/numacoll-bench-%d-%ld", (int)getpid(),
                 (long)ts.tv_nsec);
        int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 || ftruncate(fd, 4096) != 0)
            ok = 0;
        if (ok) {
            void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                           0);
            ok = p != MAP_FAILED;
            page = ok ? p : NULL;
        }
        if (fd >= 0)
            close(fd);
        if (!ok) {
            shm_unlink(name);
            name[0] = '\0';
        }
    }
    MPI_Bcast(name, sizeof name, MPI_CHAR, 0, comm);
    if (rank == 1 && name[0]) {
        int fd = shm_open(name, O_RDWR, 0600);
        if (fd >= 0) {
            void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                           0);
            page = p == MAP_FAILED ? NULL : p;
            close(fd);
        }
    }
    int mine = (rank > 1) || page != NULL, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
    if (rank == 0 && name[0])
        shm_unlink(name);
    if (!all && page) {
        munmap(page, 4096);
        page = NULL;
    }
    *lines = all;   /* the same on every rank */
    return all ? page : NULL;
}

static void describe_where(int rank, int p, MPI_Comm comm, char *out,
                           size_t len)
{
    cpu_set_t set;
    int bound = sched_getaffinity(0, sizeof set, &set) == 0 &&
                CPU_COUNT(&set) == 1;
    int mine[2] = {sched_getcpu(), bound}, *all = NULL;
    if (rank == 0)
        all = malloc((size_t)p * 2 * sizeof *all);
    MPI_Gather(mine, 2, MPI_INT, all, 2, MPI_INT, 0, comm);
    if (rank != 0 || !all)
        return;
    int nbound = 0;
    size_t o = (size_t)snprintf(out, len, "ranks on CPUs ");
    for (int r = 0; r < p && o < len; r++) {
        o += (size_t)snprintf(out + o, len - o, "%s%d", r ? "," : "",
                              all[2 * r]);
        nbound += all[2 * r + 1];
    }
    if (o < len)
        snprintf(out + o, len - o, " (%s)", nbound == p ? "each bound to one"
                 : nbound ? "some bound" : "not bound");
    free(all);
}

/* Counters of the numacoll component through MPI_T, so the output shows
 * whether numacoll actually ran the calls. Open MPI reports a counter
 * relative to when its handle was allocated, so the handles are made
 * before the run and read after it: the counts are this run's. */
/* per collective: the calls numacoll ran, those it handed back (its
 * fallbacks) and those a tuning rule declined to the host (decline=1);
 * two_level: calls on communicators that span (virtual) nodes, whose
 * node-local parts count as the core's nonblocking calls too (it has no
 * fallback or decline counter) */
#define NCOLLS 19
#define NPVARS (3 * NCOLLS)
static const char *const coll_names[NCOLLS] = {
    "bcast", "barrier", "reduce", "allreduce", "ibcast", "ireduce",
    "iallreduce", "ibarrier", "allgather", "gather", "scatter", "alltoall",
    "allgatherv", "gatherv", "alltoallv", "reduce_scatter_block", "scan",
    "exscan", "two_level"};
static const char *const kinds[3] = {"", "_fallback", "_declined"};

typedef struct pvars {
    int on;
    MPI_T_pvar_session sess;
    MPI_T_pvar_handle h[NPVARS];
    int have[NPVARS];
} pvars_t;

static void pvars_begin(pvars_t *pv)
{
    int provided, num = 0;
    memset(pv, 0, sizeof *pv);
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return;
    if (MPI_T_pvar_get_num(&num) != MPI_SUCCESS ||
        MPI_T_pvar_session_create(&pv->sess) != MPI_SUCCESS) {
        MPI_T_finalize();
        return;
    }
    pv->on = 1;
    for (int i = 0; i < num; i++) {
        char name[256], desc[8];
        int nl = sizeof name, dl = sizeof desc, verb, cls, bind, ro, cont, at;
        MPI_Datatype dt;
        MPI_T_enum en;
        if (MPI_T_pvar_get_info(i, name, &nl, &verb, &cls, &dt, &en, desc, &dl,
                                &bind, &ro, &cont, &at) != MPI_SUCCESS)
            continue;
        for (int k = 0; k < NPVARS; k++) {
            int count;
            char full[96];
            snprintf(full, sizeof full, "coll_numacoll_%s%s_count",
                     coll_names[k / 3], kinds[k % 3]);
            if (strcmp(name, full) != 0 ||
                dt != MPI_UNSIGNED_LONG_LONG ||
                MPI_T_pvar_handle_alloc(pv->sess, i, NULL, &pv->h[k],
                                        &count) != MPI_SUCCESS)
                continue;
            if (count == 1)
                pv->have[k] = 1;
            else
                MPI_T_pvar_handle_free(pv->sess, &pv->h[k]);
        }
    }
}

static void pvars_end(pvars_t *pv, char *out, size_t len)
{
    if (!pv->on)
        return;
    unsigned long long val[NPVARS] = {0};
    int any = 0;
    for (int k = 0; k < NPVARS; k++) {
        if (!pv->have[k])
            continue;
        if (MPI_T_pvar_read(pv->sess, pv->h[k], &val[k]) == MPI_SUCCESS)
            any = 1;
        MPI_T_pvar_handle_free(pv->sess, &pv->h[k]);
    }
    MPI_T_pvar_session_free(&pv->sess);
    MPI_T_finalize();
    if (!any || !out)
        return;
    /* the totals, then each collective that had calls: ran/handed
     * back/declined */
    unsigned long long ran = 0, back = 0, decl = 0;
    for (int k = 0; k < NPVARS; k += 3) {
        ran += val[k];
        back += val[k + 1];
        decl += val[k + 2];
    }
    size_t o = (size_t)snprintf(out, len, "numacoll component (MPI_T, rank "
                                "0, this run): %llu calls through numacoll, "
                                "%llu handed back, %llu declined by a rule "
                                "(ran/handed back/declined:", ran, back,
                                decl);
    for (int k = 0; k < NPVARS && o < len; k += 3)
        if (val[k] || val[k + 1] || val[k + 2])
            o += (size_t)snprintf(out + o, len - o, " %s %llu/%llu/%llu",
                                  coll_names[k / 3], val[k], val[k + 1],
                                  val[k + 2]);
    if (o < len)
        snprintf(out + o, len - o, ")");
}

void ncb_backend_list_algs(FILE *to)
{
    fprintf(to, "Under MPI the coll component Open MPI selected picks the "
            "algorithm; choose\nthe component with mpirun --mca coll ... "
            "(bench/compare-ompi.sh).\n");
}

void ncb_backend_list_params(FILE *to)
{
    fprintf(to, "Under MPI numacoll's parameters are MCA parameters:\n"
            "  ompi_info --param coll numacoll --level 9\n");
}

int ncb_backend_main(ncb_opts_t *o, int argc, char **argv)
{
    if (o->ops == 0)
        o->ops = NCB_OPS_CLASSIC;
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    /* errors come back as codes, so a failure names the call */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    mctx_t m = {.comm = MPI_COMM_WORLD, .last = MPI_SUCCESS};
    int *v = malloc(2 * (size_t)p * sizeof *v);
    if (!v) {
        fprintf(stderr, "numacoll-bench-mpi: out of memory for the v forms' "
                "counts\n");
        MPI_Abort(MPI_COMM_WORLD, 4);
    }
    m.vcounts = v;
    m.vdispls = v + p;
    ncb_target_t t = {.run = {[NCB_OP_BCAST] = run_bcast,
                              [NCB_OP_REDUCE] = run_reduce,
                              [NCB_OP_ALLREDUCE] = run_allreduce,
                              [NCB_OP_BARRIER] = run_barrier,
                              [NCB_OP_ALLGATHER] = run_allgather,
                              [NCB_OP_GATHER] = run_gather,
                              [NCB_OP_SCATTER] = run_scatter,
                              [NCB_OP_ALLTOALL] = run_alltoall,
                              [NCB_OP_ALLGATHERV] = run_allgatherv,
                              [NCB_OP_ALLTOALLV] = run_alltoallv,
                              [NCB_OP_GATHERV] = run_gatherv,
                              [NCB_OP_SCATTERV] = run_scatterv,
                              [NCB_OP_REDUCE_SCATTER] = run_reduce_scatter,
                              [NCB_OP_SCAN] = run_scan,
                              [NCB_OP_EXSCAN] = run_exscan},
                      .istart = {[NCB_OP_BCAST] = istart_bcast,
                                 [NCB_OP_REDUCE] = istart_reduce,
                                 [NCB_OP_ALLREDUCE] = istart_allreduce,
                                 [NCB_OP_BARRIER] = istart_barrier},
                      .iwait = iwait, .applies = applies,
                      .barrier = barrier, .last_error = last_error, .ctx = &m};
    int lines = 0;
    unsigned char *page = p >= 2 ? share_lines(rank, MPI_COMM_WORLD, &lines)
                                 : NULL;
    ncb_world_t w = {.rank = rank, .p = p, .sync = w_sync, .allmax = w_allmax,
                     .gather = w_gather, .lines = lines, .ctx = &m};
    if (page) {
        w.ping = (_Atomic uint64_t *)page;
        w.pong = (_Atomic uint64_t *)(page + 64);
    }
    pvars_t pv;
    pvars_begin(&pv);
    ncb_report_t rep;
    ncb_report_init(&rep, o, "mpi", p);
    snprintf(rep.desc[0], sizeof rep.desc[0], "%s = MPI_COMM_WORLD, the coll "
             "component(s) Open MPI selected", o->cfg[0].label);
    describe_where(rank, p, MPI_COMM_WORLD, rep.where, sizeof rep.where);
    int rc = o->overlap ? ncb_measure_overlap(o, &w, &t, 1, "mpi", rep.where)
                        : ncb_measure(o, &w, &t, 1, &rep);
    pvars_end(&pv, rank == 0 ? rep.extra : NULL, sizeof rep.extra);
    if (rank == 0) {
        if (rep.extra[0] && !o->quiet)
            printf("# %s\n", rep.extra);
        if ((rc == 0 || rc == 1) && !o->overlap && ncb_write_outputs(&rep, o))
            rc = rc ? rc : 5;
    }
    ncb_report_free(&rep);
    free(v);
    if (page)
        munmap(page, 4096);
    if (rc > 1) {
        fprintf(stderr, "numacoll-bench-mpi: rank %d stops the job (status "
                "%d)\n", rank, rc);
        MPI_Abort(MPI_COMM_WORLD, rc);
    }
    /* only rank 0 knows about failed checks: tell everyone */
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
}
