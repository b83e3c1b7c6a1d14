/*
 * numacoll-bench --footprint: what a team costs in /dev/shm and in time to
 * create, for p = 2 to 256 (or -p N alone), under the built-in table (or
 * $NUMACOLL_TUNING_FILE) and any --param: per rank and per team, as
 * created (control pages) and once grown by a 1 MiB Bcast (queues and
 * staging slots; docs/usage.md, "Memory"), with /dev/shm's own count of
 * each. Each p is a fresh set of forked ranks, unbound; creation time is
 * the slowest rank's, after a bootstrap exchange that lines them up.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "bench/bench.h"
#include "support/runner.h"

enum { FP_BIG = 1 << 20 };

typedef struct fp_row {
    int ok, grown;
    uint64_t ctrl, head, staging, team0, team1, shm0, shm1, shm2;
    double create_ms;
    char why[160];
} fp_row_t;

typedef struct fp_arg {
    const numacoll_config_t *cfg;
    fp_row_t *row;
} fp_arg_t;

static uint64_t shm_used(void)
{
    struct statvfs sv;
    if (statvfs("/dev/shm", &sv) != 0)
        return 0;
    return (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
}

static int fp_body(const numacoll_bootstrap_t *b, void *varg)
{
    fp_arg_t *a = varg;
    fp_row_t *row = a->row;
    numacoll_config_t cfg = *a->cfg;
    cfg.verbose = 0;
    /* line the ranks up, and read /dev/shm before any of them maps */
    int32_t one = 1, *all = malloc((size_t)b->size * sizeof *all);
    if (!all || b->allgather(&one, all, sizeof one, b->ctx) != 0)
        return 3;
    const uint64_t shm0 = shm_used();
    const double t0 = ncb_now();
    numacoll_team_t *t = NULL;
    int rc = numacoll_team_create(b, &cfg, &t);
    double ms = (ncb_now() - t0) * 1e3;
    if (rc != NUMACOLL_OK) {
        if (b->rank == 0)
            snprintf(row->why, sizeof row->why, "%s",
                     numacoll_team_create_error());
        free(all);
        return 4;
    }
    size_t now = 0, grown = 0;
    (void)numacoll_team_footprint(t, &now, &grown);
    double slowest = 0;
    uint64_t sum0 = 0, sum1 = 0, tmp;
    rc = numacoll_allreduce(t, &ms, &slowest, 1, NUMACOLL_DTYPE_DOUBLE,
                            NUMACOLL_OP_MAX);
    tmp = now;
    if (rc == NUMACOLL_OK)
        rc = numacoll_allreduce(t, &tmp, &sum0, 1, NUMACOLL_DTYPE_UINT64,
                                NUMACOLL_OP_SUM);
    const uint64_t shm1 = shm_used();
    /* small calls keep to the control pages; the 1 MiB Bcast grows */
    char *buf = calloc(1, FP_BIG);
    if (rc == NUMACOLL_OK && !buf)
        rc = NUMACOLL_ERR_NOMEM;
    if (rc == NUMACOLL_OK)
        rc = numacoll_bcast(t, buf, 8, 0);
    int grew = 0;
    if (rc == NUMACOLL_OK) {
        rc = numacoll_bcast(t, buf, FP_BIG, 0);
        grew = rc == NUMACOLL_OK;
        if (rc == NUMACOLL_ERR_NOSPACE) {
            if (b->rank == 0)
                snprintf(row->why, sizeof row->why, "%.150s",
                         numacoll_team_last_error(t));
            rc = NUMACOLL_OK;
        }
    }
    size_t now2 = 0;
    (void)numacoll_team_footprint(t, &now2, NULL);
    tmp = now2;
    if (rc == NUMACOLL_OK)
        rc = numacoll_allreduce(t, &tmp, &sum1, 1, NUMACOLL_DTYPE_UINT64,
                                NUMACOLL_OP_SUM);
    const uint64_t shm2 = shm_used();
    if (b->rank == 1 % b->size) {
        /* a rank other than 0 shows a plain block (0 adds the header) */
        row->ctrl = now;
        row->staging = grown - now;
    }
    if (rc == NUMACOLL_OK)   /* rank 0 reads the row after rank 1 wrote */
        rc = numacoll_barrier(t);
    if (b->rank == 0) {
        row->head = now - (b->size > 1 ? row->ctrl : now);
        row->team0 = sum0;
        row->team1 = sum1;
        row->shm0 = shm1 > shm0 ? shm1 - shm0 : 0;
        row->shm1 = shm2 > shm0 ? shm2 - shm0 : 0;
        row->create_ms = slowest;
        row->grown = grew;
        row->ok = rc == NUMACOLL_OK;
        if (rc != NUMACOLL_OK)
            snprintf(row->why, sizeof row->why, "%s",
                     numacoll_team_last_error(t));
    }
    numacoll_team_destroy(t);
    free(buf);
    free(all);
    return rc == NUMACOLL_OK ? 0 : 5;
}

static void kib(char *out, size_t len, uint64_t v)
{
    snprintf(out, len, "%.1f", v / 1024.0);
}

int ncb_footprint(const ncb_opts_t *o, const numacoll_config_t *cfg)
{
    static const int ps[] = {2, 4, 8, 16, 32, 64, 128, 256};
    const int one = o->p > 0;
    const int n = one ? 1 : (int)(sizeof ps / sizeof ps[0]);
    fp_row_t *row = nc__run_shared_alloc(sizeof *row);
    if (!row)
        return 4;
    printf("# numacoll footprint: /dev/shm per team, as created and once "
           "grown by a 1 MiB Bcast\n# (docs/usage.md, \"Memory\"); KiB; "
           "\"shm\" columns: /dev/shm's own count of the growth\n");
    printf("%5s %10s %9s %12s %12s %12s %12s %12s %10s\n", "p", "ctrl/rank",
           "header", "team", "shm", "staging/rk", "team grown", "shm grown",
           "create ms");
    int bad = 0;
    for (int i = 0; i < n; i++) {
        const int p = one ? o->p : ps[i];
        memset(row, 0, sizeof *row);
        fp_arg_t a = {.cfg = cfg, .row = row};
        nc__run_opts_t ro = {.p = p, .bind = 0, .timeout_ms = 300000,
                             .quiet = 0};
        int timed_out = 0;
        fflush(stdout);
        int rc = nc__run(&ro, fp_body, &a, NULL, &timed_out);
        if (rc != 0 || !row->ok) {
            printf("%5d  failed%s: %s\n", p, timed_out ? " (timed out)" : "",
                   row->why[0] ? row->why : "see above");
            bad = 1;
            continue;
        }
        char c[32], h[32], t0[32], s0[32], st[32], t1[32], s1[32];
        kib(c, sizeof c, row->ctrl);
        kib(h, sizeof h, row->head);
        kib(t0, sizeof t0, row->team0);
        kib(s0, sizeof s0, row->shm0);
        kib(st, sizeof st, row->staging);
        kib(t1, sizeof t1, row->team1);
        kib(s1, sizeof s1, row->shm1);
        printf("%5d %10s %9s %12s %12s %12s %12s %12s %10.2f%s\n", p, c, h,
               t0, s0, st, row->grown ? t1 : "no room",
               row->grown ? s1 : "-", row->create_ms,
               row->grown ? "" : "  (node_budget)");
        if (!row->grown && row->why[0])
            printf("#   %s\n", row->why);
        fflush(stdout);
    }
    nc__run_shared_free(row, sizeof *row);
    return bad;
}
