/*
 * Standalone backend of numacoll-bench: forks p ranks with the core's
 * runner (support/runner.h), builds one numacoll team per configuration in
 * every rank, and hands the measurement loop an ncb_world_t made of the
 * runner's bootstrap allgather and one ncb_target_t per team.
 *
 * --alg: "auto" calls the public entry point (numacoll_bcast, whose
 * dispatch picks inline or pipelined by size); a named algorithm from the
 * core's table (coll/algs.h) calls that algorithm's function directly, so
 * the same sizes can be timed through each. The table has no function
 * pointer yet, hence the one switch below.
 *
 * numacoll-tune measures its candidates the same way: ncb_team_open makes
 * a target of any configuration and forced algorithm, ncb_team_world the
 * world over its own ranks.
 */
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "coll/algs.h"
#include "coll/reduce/reduce.h"
#include "coll/team.h"
#include "numacoll.h"
#include "support/runner.h"
#include "tune/table.h"

/* The collective of the core's table behind each operation; -1: none yet. */
static const int op_coll[NCB_OP_COUNT] = {
    [NCB_OP_BCAST] = NC_COLL_BCAST,
    [NCB_OP_REDUCE] = NC_COLL_REDUCE,
    [NCB_OP_ALLREDUCE] = NC_COLL_ALLREDUCE,
    [NCB_OP_BARRIER] = NC_COLL_BARRIER,
    [NCB_OP_ALLGATHER] = NC_COLL_ALLGATHER,
    [NCB_OP_GATHER] = NC_COLL_GATHER,
    [NCB_OP_SCATTER] = NC_COLL_SCATTER,
    [NCB_OP_ALLTOALL] = NC_COLL_ALLTOALL,
    /* the core's Allgatherv runs Allgather's algorithms and rules */
    [NCB_OP_ALLGATHERV] = NC_COLL_ALLGATHER,
    [NCB_OP_ALLTOALLV] = NC_COLL_ALLTOALL,
    [NCB_OP_GATHERV] = NC_COLL_GATHER,
    [NCB_OP_SCATTERV] = NC_COLL_SCATTER,
    [NCB_OP_REDUCE_SCATTER] = NC_COLL_REDUCE_SCATTER,
    [NCB_OP_SCAN] = NC_COLL_SCAN,
    [NCB_OP_EXSCAN] = NC_COLL_EXSCAN,
};

/* A configuration as the options give it. */
typedef struct tcfg {
    numacoll_config_t cfg;
    int alg[NCB_OP_COUNT];     /* -1: auto (public dispatch); else nc__alg_t */
    char *text;                /* copy=: cfg.tuning_text, ours to free */
} tcfg_t;

/* A configuration's team, as the calls below receive it. */
struct ncb_team {
    tcfg_t c;
    numacoll_team_t *team;
    nc__red_op_t sum;          /* uint32 sum, for a forced Allreduce */
    nc__red_op_t dt_op[NUMACOLL_DTYPE_COUNT];  /* --dtype's, when forced */
    unsigned char dt_have[NUMACOLL_DTYPE_COUNT];
    numacoll_request_t *req;   /* --overlap: the call in flight       */
    size_t *vcnt, *vdsp;       /* the v forms: every count the size  */
    size_t vbytes;             /* the size they hold                   */
};

typedef struct trun {
    const ncb_opts_t *o;
    tcfg_t cfg[NCB_MAX_CFGS];
    char desc[NCB_MAX_CFGS][200];
    /* shared page, mapped before the fork: the two ping-pong lines and
     * rank 0's exit status (the runner only says "some rank failed") */
    unsigned char *shared;
    int bind;
} trun_t;

#define SHARED_BYTES 4096
#define SHARED_STATUS(tr) ((_Atomic int *)((tr)->shared + 128))

/* ---- the calls ------------------------------------------------------------- */

/* The reductions' type and op: --dtype's, else uint32 SUM. */
static inline numacoll_dtype_t dt_of(const ncb_call_t *c)
{
    return c->dt ? (numacoll_dtype_t)c->dt->id : NUMACOLL_DTYPE_UINT32;
}

static inline numacoll_op_t op_of(const ncb_call_t *c)
{
    return c->dt && c->dt->minloc ? NUMACOLL_OP_MINLOC : NUMACOLL_OP_SUM;
}

static int run_bcast(void *ctx, const ncb_call_t *c)
{
    ncb_team_t *tc = ctx;
    const int alg = tc->c.alg[NCB_OP_BCAST];
    if (alg < 0)
        return numacoll_bcast(tc->team, c->buf, c->bytes, c->root);
    return nc__bcast_with(tc->team, alg, c->buf, c->bytes, c->root);
}

/* Reduce: the public call, so the table's algorithm (a forced one is
 * refused: resolve). */
static int run_reduce(void *ctx, const ncb_call_t *c)
{
    ncb_team_t *tc = ctx;
    return numacoll_reduce(tc->team, c->sbuf, c->rbuf, c->count,
                           dt_of(c), op_of(c), c->root);
}

static int run_allreduce(void *ctx, const ncb_call_t *c)
{
    ncb_team_t *tc = ctx;
    const int alg = tc->c.alg[NCB_OP_ALLREDUCE];
    if (alg >= 0 && c->dt) {
        /* resolved once per type, as the uint32 sum at the team's open */
        const int d = c->dt->id;
        if (!tc->dt_have[d]) {
            int st = nc__red_op_predef(tc->team, &tc->dt_op[d], dt_of(c),
                                       op_of(c));
            if (st != NUMACOLL_OK)
                return st;
            tc->dt_have[d] = 1;
        }
        return nc__allreduce_with(tc->team, alg, c->sbuf, c->rbuf, c->count,
                                  &tc->dt_op[d]);
    }
    if (alg >= 0)
        return nc__allreduce_with(tc->team, alg, c->sbuf, c->rbuf, c->count,
                                  &tc->sum);
    return numacoll_allreduce(tc->team, c->sbuf, c->rbuf, c->count,
                              dt_of(c), op_of(c));
}

static int run_barrier(void *ctx, const ncb_call_t *c)
{
    (void)c;
    return numacoll_barrier(((ncb_team_t *)ctx)->team);
}

/* --overlap: the nonblocking forms, through the public API (the
 * library's choice of algorithm; --alg does not apply). */
static int istart_bcast(void *ctx, const ncb_call_t *c)
{
    ncb_team_t *tc = ctx;
    return numacoll_ibcast(tc->team, c->buf, c->bytes, c->root, &tc->req);
}

static int istart_reduce(void *ctx, const ncb_call_t *c)
{
    ncb_team_t *tc = ctx;
    return numacoll_ireduce(tc->team, c->sbuf, c->rbuf, c->count,
                            dt_of(c), op_of(c), c->root,
                            &tc->req);
}

static int istart_allreduce(void *ctx, const ncb_call_t *c)
{
    ncb_team_t *tc = ctx;
    return numacoll_iallreduce(tc->team, c->sbuf, c->rbuf, c->count,
                               dt_of(c), op_of(c),
                               &tc->req);
}

static int istart_barrier(void *ctx, const ncb_call_t *c)
{
    (void)c;
    ncb_team_t *tc = ctx;
    return numacoll_ibarrier(tc->team, &tc->req);
}

static int iwait(void *ctx)
{
    return numacoll_wait(&((ncb_team_t *)ctx)->req);
}

/* The gathers: the public calls, so the table's algorithms. */
static int run_allgather(void *ctx, const ncb_call_t *c)
{
    return numacoll_allgather(((ncb_team_t *)ctx)->team, c->sbuf, c->rbuf,
                              c->bytes);
}

static int run_gather(void *ctx, const ncb_call_t *c)
{
    return numacoll_gather(((ncb_team_t *)ctx)->team, c->sbuf, c->rbuf,
                           c->bytes, c->root);
}

static int run_scatter(void *ctx, const ncb_call_t *c)
{
    return numacoll_scatter(((ncb_team_t *)ctx)->team, c->sbuf, c->rbuf,
                            c->bytes, c->root);
}

static int run_alltoall(void *ctx, const ncb_call_t *c)
{
    return numacoll_alltoall(((ncb_team_t *)ctx)->team, c->sbuf, c->rbuf,
                             c->bytes);
}

/* The v forms' counts and displacements: p blocks of the size, in rank
 * order, filled once a size (the warm-up's). */
static void v_equal(ncb_team_t *tm, size_t bytes)
{
    const int p = numacoll_team_size(tm->team);
    if (tm->vbytes != bytes) {
        for (int j = 0; j < p; j++) {
            tm->vcnt[j] = bytes;
            tm->vdsp[j] = (size_t)j * bytes;
        }
        tm->vbytes = bytes;
    }
}

static int run_allgatherv(void *ctx, const ncb_call_t *c)
{
    ncb_team_t *tm = ctx;
    v_equal(tm, c->bytes);
    return numacoll_allgatherv(tm->team, c->sbuf, c->bytes, c->rbuf,
                               tm->vcnt, tm->vdsp);
}

static int run_gatherv(void *ctx, const ncb_call_t *c)
{
    ncb_team_t *tm = ctx;
    v_equal(tm, c->bytes);
    return numacoll_gatherv(tm->team, c->sbuf, c->bytes, c->rbuf, tm->vcnt,
                            tm->vdsp, c->root);
}

static int run_scatterv(void *ctx, const ncb_call_t *c)
{
    ncb_team_t *tm = ctx;
    v_equal(tm, c->bytes);
    return numacoll_scatterv(tm->team, c->sbuf, tm->vcnt, tm->vdsp, c->rbuf,
                             c->bytes, c->root);
}

static int run_alltoallv(void *ctx, const ncb_call_t *c)
{
    ncb_team_t *tm = ctx;
    v_equal(tm, c->bytes);
    return numacoll_alltoallv(tm->team, c->sbuf, tm->vcnt, tm->vdsp, c->rbuf,
                              tm->vcnt, tm->vdsp);
}

static int run_reduce_scatter(void *ctx, const ncb_call_t *c)
{
    return numacoll_reduce_scatter_block(((ncb_team_t *)ctx)->team, c->sbuf,
                                         c->rbuf, c->count,
                                         dt_of(c),
                                         op_of(c));
}

static int run_scan(void *ctx, const ncb_call_t *c)
{
    return numacoll_scan(((ncb_team_t *)ctx)->team, c->sbuf, c->rbuf,
                         c->count, dt_of(c), op_of(c));
}

static int run_exscan(void *ctx, const ncb_call_t *c)
{
    return numacoll_exscan(((ncb_team_t *)ctx)->team, c->sbuf, c->rbuf,
                           c->count, dt_of(c), op_of(c));
}

static int barrier(void *ctx)
{
    return numacoll_barrier(((ncb_team_t *)ctx)->team);
}

static int applies(void *ctx, int op, size_t bytes, char *why, size_t len)
{
    const ncb_team_t *tc = ctx;
    if (op == NCB_OP_BCAST && tc->c.alg[op] == NC_ALG_BCAST_INLINE &&
        tc->team && bytes > tc->team->inl_max) {
        snprintf(why, len, "inline carries at most %zu bytes (the team's "
                 "largest inline rule)", tc->team->inl_max);
        return 1;
    }
    if (op == NCB_OP_ALLREDUCE && tc->c.alg[op] == NC_ALG_ALLREDUCE_INLINE &&
        tc->team && !nc__ar_inline_fits(tc->team, bytes / 4, 4)) {
        snprintf(why, len, "inline carries at most %u lines of 56 bytes (the "
                 "team's largest inline rule)", tc->team->red->ar_al);
        return 1;
    }
    return 0;
}

static const char *last_error(void *ctx)
{
    return numacoll_team_last_error(((ncb_team_t *)ctx)->team);
}

/* Operations this build can run; the rest say why in resolve(). */
static unsigned available_ops(void)
{
    return (1u << NCB_OP_COUNT) - 1;
}

/* ---- the world: the runner's bootstrap --------------------------------------- */

/* The world's ctx is the bootstrap, which the helpers only read. */
static int w_sync(ncb_world_t *w)
{
    const numacoll_bootstrap_t *b = w->ctx;
    unsigned char x = 0, *all = malloc((size_t)b->size);
    int rc = all ? b->allgather(&x, all, 1, b->ctx) : -1;
    free(all);
    return rc;
}

static int w_gather(ncb_world_t *w, const double *mine, int n, double *all)
{
    const numacoll_bootstrap_t *b = w->ctx;
    return b->allgather(mine, all, (size_t)n * sizeof *mine, b->ctx);
}

static int w_allmax(ncb_world_t *w, double *v, int n)
{
    double *all = malloc((size_t)n * (size_t)w->p * sizeof *all);
    if (!all || w_gather(w, v, n, all) != 0) {
        free(all);
        return -1;
    }
    for (int i = 0; i < n; i++)
        for (int r = 0; r < w->p; r++)
            if (all[r * n + i] > v[i])
                v[i] = all[r * n + i];
    free(all);
    return 0;
}

/* "ranks on CPUs 0,1 (bound), NUMA nodes 0,0" from every rank's view. */
static void describe_where(ncb_world_t *w, numacoll_team_t *team, int bound,
                           char *out, size_t len)
{
    double mine[2] = {sched_getcpu(), -1};
    numacoll_locality_t loc;
    if (numacoll_team_locality(team, w->rank, &loc) == NUMACOLL_OK)
        mine[1] = loc.numa;
    double *all = malloc((size_t)w->p * 2 * sizeof *all);
    if (!all || w_gather(w, mine, 2, all) != 0) {
        free(all);
        return;
    }
    size_t o = (size_t)snprintf(out, len, "ranks on CPUs ");
    for (int r = 0; r < w->p && o < len; r++)
        o += (size_t)snprintf(out + o, len - o, "%s%d", r ? "," : "",
                              (int)all[2 * r]);
    if (o < len)
        o += (size_t)snprintf(out + o, len - o, " (%s), NUMA nodes ",
                              bound ? "bound" : "not bound");
    for (int r = 0; r < w->p && o < len; r++)
        o += (size_t)snprintf(out + o, len - o, "%s%d", r ? "," : "",
                              (int)all[2 * r + 1]);
    free(all);
}

void ncb_team_world(const numacoll_bootstrap_t *b, void *shared,
                    ncb_world_t *w)
{
    memset(w, 0, sizeof *w);
    w->rank = b->rank;
    w->p = b->size;
    w->sync = w_sync;
    w->allmax = w_allmax;
    w->gather = w_gather;
    w->ctx = (void *)b;
    if (shared && b->size >= 2) {
        w->ping = (_Atomic uint64_t *)shared;
        w->pong = (_Atomic uint64_t *)((unsigned char *)shared + 64);
        w->lines = 1;
    }
}

int ncb_team_open(const numacoll_bootstrap_t *b, const numacoll_config_t *cfg,
                  const int alg[NCB_OP_COUNT], ncb_team_t **out,
                  ncb_target_t *t, char *err, size_t errlen)
{
    ncb_team_t *tm = calloc(1, sizeof *tm);
    if (!tm) {
        snprintf(err, errlen, "out of memory for a team (%zu bytes)",
                 sizeof *tm);
        return NUMACOLL_ERR_NOMEM;
    }
    tm->c.cfg = *cfg;
    memcpy(tm->c.alg, alg, sizeof tm->c.alg);
    /* under a fake topology hwloc cannot say where we run: rank r is
     * placed on PU r of the description */
    if (tm->c.cfg.topology)
        tm->c.cfg.pu = b->rank;
    int st = numacoll_team_create(b, &tm->c.cfg, &tm->team);
    if (st != NUMACOLL_OK) {
        snprintf(err, errlen, "team: %s", numacoll_strerror(st));
        free(tm);
        return st;
    }
    st = nc__red_op_predef(tm->team, &tm->sum, NUMACOLL_DTYPE_UINT32,
                           NUMACOLL_OP_SUM);
    if (st != NUMACOLL_OK) {
        snprintf(err, errlen, "uint32 sum: %s", numacoll_strerror(st));
        ncb_team_close(tm);
        return st;
    }
    const size_t p = (size_t)numacoll_team_size(tm->team);
    tm->vcnt = malloc(2 * p * sizeof *tm->vcnt);
    if (!tm->vcnt) {
        snprintf(err, errlen, "out of memory for the v forms' counts");
        ncb_team_close(tm);
        return NUMACOLL_ERR_NOMEM;
    }
    tm->vdsp = tm->vcnt + p;
    tm->vbytes = SIZE_MAX;   /* no size yet */
    memset(t, 0, sizeof *t);
    t->run[NCB_OP_BCAST] = run_bcast;
    t->run[NCB_OP_REDUCE] = run_reduce;
    t->run[NCB_OP_ALLREDUCE] = run_allreduce;
    t->run[NCB_OP_BARRIER] = run_barrier;
    t->istart[NCB_OP_BCAST] = istart_bcast;
    t->istart[NCB_OP_REDUCE] = istart_reduce;
    t->istart[NCB_OP_ALLREDUCE] = istart_allreduce;
    t->istart[NCB_OP_BARRIER] = istart_barrier;
    t->iwait = iwait;
    t->run[NCB_OP_ALLGATHER] = run_allgather;
    t->run[NCB_OP_GATHER] = run_gather;
    t->run[NCB_OP_SCATTER] = run_scatter;
    t->run[NCB_OP_ALLTOALL] = run_alltoall;
    t->run[NCB_OP_ALLGATHERV] = run_allgatherv;
    t->run[NCB_OP_ALLTOALLV] = run_alltoallv;
    t->run[NCB_OP_GATHERV] = run_gatherv;
    t->run[NCB_OP_SCATTERV] = run_scatterv;
    t->run[NCB_OP_REDUCE_SCATTER] = run_reduce_scatter;
    t->run[NCB_OP_SCAN] = run_scan;
    t->run[NCB_OP_EXSCAN] = run_exscan;
    t->barrier = barrier;
    t->applies = applies;
    t->last_error = last_error;
    t->ctx = tm;
    *out = tm;
    return 0;
}

void ncb_team_close(ncb_team_t *tm)
{
    if (!tm)
        return;
    numacoll_team_destroy(tm->team);
    free(tm->vcnt);
    free(tm);
}

numacoll_team_t *ncb_team_handle(ncb_team_t *tm)
{
    return tm->team;
}

static int rank_main(const numacoll_bootstrap_t *b, void *arg)
{
    trun_t *tr = arg;
    const ncb_opts_t *o = tr->o;
    ncb_target_t t[NCB_MAX_CFGS];
    ncb_team_t *team[NCB_MAX_CFGS] = {0};
    int rc = 0;
    for (int c = 0; c < o->ncfg; c++) {
        char err[160];
        if (ncb_team_open(b, &tr->cfg[c].cfg, tr->cfg[c].alg, &team[c], &t[c],
                          err, sizeof err) != 0) {
            fprintf(stderr, "numacoll-bench: rank %d: %s: %s\n", b->rank,
                    o->cfg[c].label, err);
            rc = 4;
            break;
        }
    }
    if (rc == 0) {
        ncb_world_t w;
        ncb_team_world(b, tr->shared, &w);
        ncb_report_t rep;
        ncb_report_init(&rep, o, "standalone", b->size);
        for (int c = 0; c < o->ncfg; c++)
            snprintf(rep.desc[c], sizeof rep.desc[c], "%s", tr->desc[c]);
        for (int c = 0; c < o->ncfg; c++) {
            static const char *const pol[] = {"spin", "yield", "sleep"};
            char h[100], lv[40];
            int over, wp = numacoll_team_wait_policy(team[c]->team, &over);
            nc__team_hierarchy(team[c]->team, h, sizeof h);
            numacoll_levels_format(team[c]->team->cfg.levels, lv, sizeof lv);
            snprintf(rep.hier[c], sizeof rep.hier[c],
                     "%s (levels %s; waits %s%s)", h, lv,
                     wp >= 0 && wp <= 2 ? pol[wp] : "?",
                     over ? ", oversubscribed" : "");
        }
        describe_where(&w, team[0]->team, tr->bind, rep.where,
                       sizeof rep.where);
        /* rules with alg=cma run pipelined where single copy is refused */
        const char *why = "";
        if (numacoll_team_single_copy(team[0]->team, &why))
            snprintf(rep.extra, sizeof rep.extra, "single copy (alg=cma, "
                     "process_vm_readv): available");
        else
            snprintf(rep.extra, sizeof rep.extra, "single copy (alg=cma, "
                     "process_vm_readv): unavailable (%s); cma rules run "
                     "copy-in/copy-out (Bcast pipelined, the gathers staged)",
                     why);
        if (o->transfers) {
            /* counted from the teams' trees, nothing timed: rank 0 says */
            numacoll_team_t *teams[NCB_MAX_CFGS];
            for (int c = 0; c < o->ncfg; c++)
                teams[c] = team[c]->team;
            if (b->rank == 0) {
                for (int c = 0; c < o->ncfg; c++)
                    printf("# %s: %s\n", o->cfg[c].label, rep.hier[c]);
                ncb_print_transfers(o, teams, stdout);
            }
        } else if (o->overlap) {
            rc = ncb_measure_overlap(o, &w, t, o->ncfg, "standalone",
                                     rep.where);
        } else {
            rc = ncb_measure(o, &w, t, o->ncfg, &rep);
        }
        if (b->rank == 0 && !o->transfers && !o->overlap &&
            (rc == 0 || rc == 1) &&
            ncb_write_outputs(&rep, o))
            rc = rc ? rc : 5;
        ncb_report_free(&rep);
    }
    for (int c = 0; c < o->ncfg; c++)
        ncb_team_close(team[c]);
    /* relaxed: the parent reads it only after waitpid() has seen this
     * process exit, which orders everything the process did before */
    if (b->rank == 0)
        atomic_store_explicit(SHARED_STATUS(tr), rc, memory_order_relaxed);
    /* only rank 0 knows about failed checks; other failures are everyone's */
    return rc == 1 ? 0 : rc;
}

/* ---- options to configurations --------------------------------------------- */

/* copy=V: the built-in table with every rule that moves data copying
 * with V, as the configuration's tuning text (so that --compare can set
 * the copy variant side by side; a tuning table sets it rule by rule).
 * *owned takes the text (freed with the configurations). */
static int copy_table(numacoll_config_t *cfg, char **owned, const char *v,
                      char *err, size_t errlen)
{
    const int k = nc__copy_find(v, strlen(v));
    if (k < 0) {
        snprintf(err, errlen, "copy: '%s' is not a copy variant (auto, libc, "
                 "vec, nt, ntall, adapt, ntadapt)", v);
        return 2;
    }
    const nc__tune_table_t *b = nc__tune_builtin();
    size_t cap = (size_t)b->n * 256 + 1, used = 0;
    char *text = malloc(cap);
    if (!text) {
        snprintf(err, errlen, "copy: out of memory");
        return 2;
    }
    for (int i = 0; i < b->n; i++) {
        nc__tune_rule_t r = b->rules[i];
        if (r.coll != NC_COLL_BARRIER)
            r.ch.copy = k;
        int n = nc__tune_format_rule(&r, text + used, cap - used - 1);
        if (n < 0 || (size_t)n >= cap - used - 1) {
            free(text);
            snprintf(err, errlen, "copy: a rule did not fit");
            return 2;
        }
        used += (size_t)n;
        text[used++] = '\n';
        text[used] = '\0';
    }
    free(*owned);
    *owned = text;
    cfg->tuning_text = text;
    cfg->tuning_file = NULL;
    return 0;
}

/* table=FILE: that tuning file over the built-in table, as the
 * configuration's own (so that --compare can set two tables side by
 * side), read by the core as any tuning file. Checked here first: the
 * quiet ranks' core would fall back to the built-in table unsaid.
 * *owned takes the path. */
static int file_table(numacoll_config_t *cfg, char **owned, const char *v,
                      char *err, size_t errlen)
{
    nc__tune_table_t tab = {0};
    char errs[400];
    int n = nc__tune_load(v, &tab, errs, sizeof errs);
    nc__tune_free(&tab);
    char *path = n == 0 ? strdup(v) : NULL;
    if (!path) {
        snprintf(err, errlen, "table: %s", n ? errs : "out of memory");
        return 2;
    }
    free(*owned);
    *owned = path;
    cfg->tuning_text = NULL;
    cfg->tuning_file = path;
    return 0;
}

/* Apply "name=value,..." from --param or --compare to cfg (*owned: see
 * copy_table). */
static int apply_params(numacoll_config_t *cfg, char **owned,
                        const char *list, char *err, size_t errlen)
{
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", list);
    for (char *kv = strtok_r(buf, ",", &save); kv;
         kv = strtok_r(NULL, ",", &save)) {
        char *v = strchr(kv, '=');
        if (!v) {
            snprintf(err, errlen, "'%s' is not name=value (--list-params)",
                     kv);
            return 2;
        }
        *v++ = '\0';
        if (strcmp(kv, "copy") == 0 || strcmp(kv, "table") == 0) {
            /* each sets the whole table: the last one given wins */
            if ((kv[0] == 'c' ? copy_table : file_table)(cfg, owned, v, err,
                                                         errlen))
                return 2;
            continue;
        }
        char why[200];
        if (numacoll_config_set(cfg, kv, v, why, sizeof why) != NUMACOLL_OK) {
            if (strstr(why, "no parameter is named"))
                snprintf(err, errlen, "unknown key '%s' (alg, tree, radix, "
                         "frag, queue, banks, spin, copy, table, or a "
                         "parameter of --list-params)", kv);
            else
                snprintf(err, errlen, "%s: '%s' is out of range or malformed "
                         "(--list-params)", kv, v);
            return 2;
        }
    }
    return 0;
}

static void alg_names(char *out, size_t len)
{
    size_t o = 0;
    for (int op = 0; op < NCB_OP_COUNT; op++) {
        if (op_coll[op] < 0)
            continue;
        o += (size_t)snprintf(out + o, len - o, "%s%s: auto", o ? "; " : "",
                              ncb_ops[op].name);
        for (int i = 0; i < NC_ALG_COUNT && o < len; i++)
            if ((int)nc__algs[i].coll == op_coll[op])
                o += (size_t)snprintf(out + o, len - o, ", %s",
                                      nc__algs[i].name);
        if (o >= len)
            break;
    }
}

/* A tuning parameter for the description line: its value, or "table"
 * when 0 leaves it to the tuning table. */
static void desc_num(char *out, size_t len, unsigned long long v)
{
    if (v)
        snprintf(out, len, "%llu", v);
    else
        snprintf(out, len, "table");
}

static void trun_free(trun_t *tr)
{
    for (int c = 0; c < NCB_MAX_CFGS; c++)
        free(tr->cfg[c].text);
    free(tr);
}

static int resolve(trun_t *tr, int c, unsigned ops, char *err, size_t errlen)
{
    const ncb_spec_t *s = &tr->o->cfg[c];
    tcfg_t *tc = &tr->cfg[c];
    numacoll_config_init(&tc->cfg);
    tc->cfg.verbose = 0;
    /* a wait that hangs becomes an error naming who waited for whom, not
     * a benchmark that never ends (--param timeout_ms=0 to wait forever) */
    tc->cfg.timeout_ms = 30000;
    tc->cfg.topology = tr->o->topology;
    char names[256];
    alg_names(names, sizeof names);
    const char *tree = s->tree, *alg = s->alg;
    if (s->word[0]) {
        int is_alg = 0;
        for (int op = 0; op < NCB_OP_COUNT; op++)
            if (op_coll[op] >= 0 && nc__alg_find(op_coll[op], s->word) >= 0)
                is_alg = 1;
        if (numacoll_tree_parse(s->word) >= 0)
            tree = s->word;
        else if (is_alg)
            alg = s->word;
        else {
            snprintf(err, errlen, "--compare: '%s' is neither a tree (flat, "
                     "chain, kary, knomial, numa) nor an algorithm (%s)",
                     s->word, names);
            return 2;
        }
    }
    if (tree[0]) {
        int k = numacoll_tree_parse(tree);
        if (k < 0) {
            snprintf(err, errlen, "unknown tree '%s' (flat, chain, kary, "
                     "knomial, numa)", tree);
            return 2;
        }
        tc->cfg.tree = k;
    }
    const int is_auto = !alg[0] || strcmp(alg, "auto") == 0;
    int found = is_auto;
    for (int op = 0; op < NCB_OP_COUNT; op++) {
        tc->alg[op] = -1;
        if (!is_auto && op_coll[op] >= 0 && (ops & (1u << op))) {
            int a = nc__alg_find(op_coll[op], alg);
            if (a >= 0) {
                tc->alg[op] = a;
                found = 1;
            }
        }
    }
    if (!found) {
        snprintf(err, errlen, "unknown algorithm '%s' for the operations "
                 "measured (%s)", alg, names);
        return 2;
    }
    /* A forced Bcast algorithm needs its function in run_bcast; Allreduce
     * takes any of its own through nc__allreduce_with; the others run
     * through their public calls, which take the table's algorithm: a
     * name that only they know would be timed as something else. */
    for (int op = 0; op < NCB_OP_COUNT; op++)
        if (tc->alg[op] >= 0 && op != NCB_OP_BCAST && op != NCB_OP_ALLREDUCE) {
            snprintf(err, errlen, "algorithm '%s' of %s: numacoll-bench "
                     "reaches %s through its public call, which takes the "
                     "tuning table's algorithm; time it with a table that "
                     "names it (--compare 'table=FILE')", alg,
                     ncb_ops[op].name, ncb_ops[op].name);
            return 2;
        }
    int a = tc->alg[NCB_OP_BCAST];
    if (a >= 0 && a != NC_ALG_BCAST_INLINE && a != NC_ALG_BCAST_PIPELINED) {
        snprintf(err, errlen, "algorithm '%s' has no entry in numacoll-bench "
                 "yet", alg);
        return 2;
    }
    if (s->frag >= 0) tc->cfg.frag_size = (size_t)s->frag;
    if (s->queue >= 0) tc->cfg.queue_depth = (unsigned)s->queue;
    if (s->banks >= 0) tc->cfg.banks = (unsigned)s->banks;
    if (s->radix >= 0) tc->cfg.radix = (unsigned)s->radix;
    if (s->spin >= 0) tc->cfg.spin_count = (unsigned)s->spin;
    if (s->params[0] &&
        apply_params(&tc->cfg, &tc->text, s->params, err, errlen))
        return 2;
    char msg[256];
    if (numacoll_config_check(&tc->cfg, msg, sizeof msg) != NUMACOLL_OK) {
        snprintf(err, errlen, "%s%s%s", tr->o->ncfg > 1 ? s->label : "",
                 tr->o->ncfg > 1 ? ": " : "", msg);
        return 2;
    }
    const char *an = "auto", *ran = "auto";
    if (tc->alg[NCB_OP_BCAST] >= 0)
        an = nc__algs[tc->alg[NCB_OP_BCAST]].name;
    if (tc->alg[NCB_OP_ALLREDUCE] >= 0)
        ran = nc__algs[tc->alg[NCB_OP_ALLREDUCE]].name;
    /* 0 (tree -1) leaves a parameter to the tuning table: say "table" */
    char radix[16], frag[24], queue[16], banks[16];
    const char *tname = numacoll_tree_name(tc->cfg.tree);
    desc_num(radix, sizeof radix, tc->cfg.radix);
    desc_num(frag, sizeof frag, tc->cfg.frag_size);
    desc_num(queue, sizeof queue, tc->cfg.queue_depth);
    desc_num(banks, sizeof banks, tc->cfg.banks);
    snprintf(tr->desc[c], sizeof tr->desc[c],
             "%s = bcast %s, allreduce %s, tree %s, radix %s, frag %s, "
             "queue %s, banks %s, spin %u%s%s", s->label, an, ran,
             tname ? tname : "table", radix, frag, queue, banks,
             tc->cfg.spin_count, s->params[0] ? ", " : "", s->params);
    return 0;
}

/* --dtype: the core's names, so its new types need no bench change. */
int ncb_backend_dtype(const char *name, ncb_dtype_t *out)
{
    for (int d = 0; d < NUMACOLL_DTYPE_COUNT; d++) {
        const char *n = numacoll_dtype_name((numacoll_dtype_t)d);
        if (!n || strcmp(n, name) != 0)
            continue;
        int sum = numacoll_op_valid(NUMACOLL_OP_SUM, (numacoll_dtype_t)d);
        if (!sum && !numacoll_op_valid(NUMACOLL_OP_MINLOC, (numacoll_dtype_t)d))
            return -1;
        if (ncb_dtype_layout(n, numacoll_dtype_size((numacoll_dtype_t)d),
                             out) != 0 || out->minloc == sum)
            return -1;
        out->id = d;
        return 0;
    }
    return -1;
}

void ncb_backend_dtype_names(char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int d = 0; d < NUMACOLL_DTYPE_COUNT && n < len; d++) {
        ncb_dtype_t x;
        const char *name = numacoll_dtype_name((numacoll_dtype_t)d);
        if (name && ncb_backend_dtype(name, &x) == 0)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
                                  name);
    }
}

void ncb_backend_list_algs(FILE *to)
{
    fprintf(to, "%-10s %-10s %s\n", "operation", "algorithm", "description");
    for (int op = 0; op < NCB_OP_COUNT; op++) {
        if (op_coll[op] < 0) {
            fprintf(to, "%-10s %-10s %s\n", ncb_ops[op].name, "-",
                    "not in numacoll yet (numacoll-bench-mpi measures it "
                    "under Open MPI)");
            continue;
        }
        fprintf(to, "%-10s %-10s %s\n", ncb_ops[op].name, "auto",
                "the library's own choice for each size (default)");
        for (int i = 0; i < NC_ALG_COUNT; i++)
            if ((int)nc__algs[i].coll == op_coll[op])
                fprintf(to, "%-10s %-10s %s\n", "", nc__algs[i].name,
                        nc__algs[i].desc);
    }
}

/* The parameters whose unset value (0, tree -1) means "the tuning table's
 * value" (docs/tuning.md); elsewhere 0 and -1 mean what their doc says. */
static int from_table(const char *name, long long def)
{
    static const char *const keys[] = {
        "frag_size", "queue_depth", "banks", "tree", "radix",
        "reduce_frag_size", "reduce_depth", "reduce_radix", "barrier_radix",
        "relay"};
    if (def != 0 && def != -1)
        return 0;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if (strcmp(keys[i], name) == 0)
            return 1;
    return 0;
}

void ncb_backend_list_params(FILE *to)
{
    fprintf(to, "%-17s %-8s %s\n", "parameter", "default", "description");
#define X(field, type, def, min, max, doc)                                   \
    if (from_table(#field, (long long)(def)))                                \
        fprintf(to, "%-17s %-8s %s\n", #field, "table", doc);                \
    else                                                                     \
        fprintf(to, "%-17s %-8lld %s\n", #field, (long long)(def), doc);
    NUMACOLL_PARAM_LIST(X)
#undef X
}

/* The ranks' teams are quiet (verbose 0), so a $NUMACOLL_TUNING_FILE
 * that the core rejects would give way to the built-in table unsaid: say
 * so once, before the runs, in the words the core uses at verbose >= 1
 * (and so the Open MPI component): every problem as file:line:col. With
 * --param verbose=1 or more the ranks' core says it itself. */
static void warn_rejected_tuning_file(const trun_t *tr)
{
    for (int c = 0; c < tr->o->ncfg; c++)
        if (tr->cfg[c].cfg.verbose >= 1)
            return;
    const char *path = getenv("NUMACOLL_TUNING_FILE");
    if (!path || !*path)
        return;
    nc__tune_table_t tab = {0};
    char errs[4096];
    int n = nc__tune_load(path, &tab, errs, sizeof errs);
    nc__tune_free(&tab);
    if (n > 0)
        fprintf(stderr, "numacoll: tuning file %s rejected (%d problem%s); "
                "using the built-in table:\n%s\n", path, n, n == 1 ? "" : "s",
                errs);
}

int ncb_backend_main(ncb_opts_t *o, int argc, char **argv)
{
    (void)argc;
    (void)argv;
    char err[512];
    unsigned avail = available_ops();
    if (o->ops == 0)
        o->ops = avail & NCB_OPS_CLASSIC;
    for (int op = 0; op < NCB_OP_COUNT; op++)
        if ((o->ops & (1u << op)) && !(avail & (1u << op))) {
            fprintf(stderr, "numacoll-bench: --ops: %s is not in numacoll "
                    "yet, so the standalone mode cannot run it (under Open "
                    "MPI, numacoll-bench-mpi measures it)\n", ncb_ops[op].name);
            return 2;
        }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const int p_given = o->p;   /* --footprint: every p unless -p */
    if (o->p == 0)
        o->p = cpus < 2 ? 2 : (int)cpus;
    trun_t *tr = calloc(1, sizeof *tr);
    if (!tr)
        return 4;
    tr->o = o;
    tr->bind = o->bind >= 0 ? o->bind : o->p <= cpus;
    for (int c = 0; c < o->ncfg; c++)
        if (resolve(tr, c, o->ops, err, sizeof err) != 0) {
            fprintf(stderr, "numacoll-bench: %s\n", err);
            trun_free(tr);
            return 2;
        }
    if (o->footprint) {
        ncb_opts_t f = *o;
        f.p = p_given;
        int bad = ncb_footprint(&f, &tr->cfg[0].cfg);
        trun_free(tr);
        return bad ? 1 : 0;
    }
    warn_rejected_tuning_file(tr);
    tr->shared = nc__run_shared_alloc(SHARED_BYTES);
    if (!tr->shared) {
        trun_free(tr);
        return 4;
    }
    atomic_store_explicit(SHARED_STATUS(tr), -1, memory_order_relaxed);
    nc__run_opts_t ro = {.p = o->p, .bind = tr->bind, .timeout_ms = 1800000};
    int timed_out = 0;
    int rr = nc__run(&ro, rank_main, tr, NULL, &timed_out);
    int st = atomic_load_explicit(SHARED_STATUS(tr), memory_order_relaxed);
    nc__run_shared_free(tr->shared, SHARED_BYTES);
    trun_free(tr);
    if (rr < 0) {
        fprintf(stderr, "numacoll-bench: cannot start %d ranks\n", o->p);
        return 4;
    }
    if (st == 1) {
        fprintf(stderr, "numacoll-bench: received data was wrong (rows marked "
                "CHECK FAILED)\n");
        return 1;
    }
    if (rr != 0 || st != 0) {
        fprintf(stderr, "numacoll-bench: a rank failed%s\n",
                timed_out ? " (watchdog timeout)" : "");
        return st > 1 ? st : 3;
    }
    return 0;
}
