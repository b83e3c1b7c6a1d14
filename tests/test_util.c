#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "numacoll.h"

#include "support/runner.h"
#include "nct.h"
#include "tune/table.h"

const char *nct_topo_dir(void)
{
    const char *d = getenv("NCT_TOPO_DIR");
    return d ? d : "tests/topo";
}

int nct_run(int p, int (*fn)(const numacoll_bootstrap_t *, void *), void *arg)
{
    nc__run_opts_t o = {.p = p, .timeout_ms = 60000};
    return nc__run(&o, fn, arg, NULL, NULL);
}

const char *nct_team_rules;
int nct_team_single_copy = 2;

numacoll_team_t *nct_team(const numacoll_bootstrap_t *b, size_t rf,
                          unsigned rs, int timeout_ms)
{
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.tuning_text = nct_team_rules;
    cfg.single_copy = nct_team_single_copy;
    cfg.verbose = 0;
    cfg.timeout_ms = timeout_ms;
    cfg.reduce_frag_size = rf;
    cfg.reduce_depth = rs;
    numacoll_team_t *t = NULL;
    return numacoll_team_create(b, &cfg, &t) == NUMACOLL_OK ? t : NULL;
}

int nct_team_tuned(const numacoll_bootstrap_t *b, const char *text,
                   const char *file, numacoll_team_t **out)
{
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    cfg.timeout_ms = 20000;
    cfg.tuning_text = text;
    cfg.tuning_file = file;
    cfg.single_copy = nct_team_single_copy;   /* cma rules run as written */
    *out = NULL;
    return numacoll_team_create(b, &cfg, out);
}

char *nct_tune_text(const struct nc__tune_table *t, size_t *len)
{
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f)
        return NULL;
    int bad = nc__tune_write(t, "test", f) != 0;
    if (fclose(f) != 0 || bad) {
        free(text);
        return NULL;
    }
    return text;
}

int nct_tuner(const char *args, char *out, size_t len)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "( timeout 120 build/numacoll-tune %s ) 2>&1",
             args);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    size_t n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    int st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int nct_say(numacoll_team_t *t, int rank, const char *what, int rc)
{
    fprintf(stderr, "rank %d: %s: %s (%s)\n", rank, what,
            numacoll_strerror(rc), t ? numacoll_team_last_error(t) : "");
    return 2;
}

unsigned char *nct_gbuf(size_t n)
{
    unsigned char *b = malloc(n + 2 * NCT_GUARD);
    if (b)
        memset(b, NCT_GBYTE, n + 2 * NCT_GUARD);
    return b;
}

int nct_guards_ok(const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < NCT_GUARD; i++)
        if (b[i] != NCT_GBYTE || b[NCT_GUARD + n + i] != NCT_GBYTE)
            return 0;
    return 1;
}

int nct_oob_all(const numacoll_bootstrap_t *b, int mine, int *all)
{
    return b->allgather(&mine, all, sizeof mine, b->ctx) == 0;
}

int nct_allreduce_probe(numacoll_team_t *t, int me, int p)
{
    int64_t in[200], out[200];
    for (int i = 0; i < 200; i++)
        in[i] = me + i;
    int rc = numacoll_allreduce(t, in, out, 200, NUMACOLL_DTYPE_INT64,
                                NUMACOLL_OP_SUM);
    if (rc != NUMACOLL_OK)
        return nct_say(t, me, "allreduce", rc);
    for (int i = 0; i < 200; i++)
        if (out[i] != (int64_t)p * (p - 1) / 2 + (int64_t)p * i)
            return 6;
    return 0;
}

void nct_run_kinds(int p0, int p1, int nkinds,
                   int (*fn)(const numacoll_bootstrap_t *, void *),
                   const char *what)
{
    for (int p = p0; p <= p1; p++)
        for (int k = 0; k < nkinds; k++) {
            int rc = nct_run(p, fn, &k);
            if (rc != 0)
                fprintf(stderr, "%s: p=%d kind=%d\n", what, p, k);
            CU_ASSERT_EQUAL(rc, 0);
        }
}
