/*
 * numacoll-bench: Bcast latency over message sizes with the forked runner
 * (no MPI needed), side by side for several notification trees, next to
 * the memcpy of the same size on one core (the single-copy limit).
 *
 * Per size and tree: warm-up, then `iters` calls (scaled down with size),
 * each preceded by a barrier; every rank times its own calls and the row
 * shows the maximum over ranks of the median call time. Roots rotate when
 * --root-shift is given. Received data is checked on every call.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll/runner.h"
#include "numacoll.h"

#define MAX_TREES NUMACOLL_TREE_COUNT
#define MAX_SIZES 64

typedef struct bench {
    numacoll_config_t cfg;
    int p, ntrees, trees[MAX_TREES], nsizes, root_shift, bind;
    size_t sizes[MAX_SIZES];
    double *result;           /* shared: [tree][size] seconds, from rank 0 */
} bench_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int iters_for(size_t n)
{
    if (n <= 65536)
        return 200;
    if (n <= (1u << 20))
        return 40;
    return 10;
}

static int bench_rank(const numacoll_bootstrap_t *b, void *arg)
{
    bench_t *bn = arg;
    size_t max = 0;
    for (int k = 0; k < bn->nsizes; k++)
        max = bn->sizes[k] > max ? bn->sizes[k] : max;
    unsigned char *buf = malloc(max ? max : 1);
    double *times = malloc(256 * sizeof *times), *all = malloc((size_t)b->size * sizeof *all);
    if (!buf || !times || !all)
        return 11;
    for (int ti = 0; ti < bn->ntrees; ti++) {
        numacoll_config_t cfg = bn->cfg;
        cfg.tree = bn->trees[ti];
        /* under a fake topology hwloc cannot say where we run: rank r is
         * placed on PU r (modulo the PUs of the description) */
        if (cfg.topology)
            cfg.pu = b->rank;
        numacoll_team_t *team;
        int rc = numacoll_team_create(b, &cfg, &team);
        if (rc != NUMACOLL_OK) {
            fprintf(stderr, "numacoll-bench: team: %s\n", numacoll_strerror(rc));
            return 10;
        }
        for (int k = 0; k < bn->nsizes; k++) {
            size_t n = bn->sizes[k];
            int iters = iters_for(n), root = 0;
            for (int it = -2; it < iters; it++) {
                unsigned char v = (unsigned char)(it * 7 + k);
                if (b->rank == root)
                    memset(buf, v, n);
                numacoll_barrier(team);
                double t0 = now();
                rc = numacoll_bcast(team, buf, n, root);
                double dt = now() - t0;
                if (rc != NUMACOLL_OK || (n && (buf[0] != v || buf[n - 1] != v))) {
                    fprintf(stderr, "numacoll-bench: rank %d: bcast %zu failed: "
                            "%s\n", b->rank, n, numacoll_team_last_error(team));
                    return 12;
                }
                if (it >= 0)
                    times[it] = dt;
                if (bn->root_shift)
                    root = (root + 1) % b->size;
            }
            qsort(times, (size_t)iters, sizeof *times, cmp_double);
            double med = times[iters / 2];
            if (b->allgather(&med, all, sizeof med, b->ctx) != 0)
                return 13;
            double worst = 0;
            for (int r = 0; r < b->size; r++)
                worst = all[r] > worst ? all[r] : worst;
            if (b->rank == 0)
                bn->result[ti * MAX_SIZES + k] = worst;
        }
        numacoll_team_destroy(team);
    }
    free(buf);
    free(times);
    free(all);
    return 0;
}

static double memcpy_time(size_t n)
{
    if (n == 0)
        return 0;
    unsigned char *a = malloc(n), *c = malloc(n);
    memset(a, 1, n);
    memset(c, 2, n);
    int iters = iters_for(n);
    double best = 1e9;
    for (int i = 0; i < iters; i++) {
        a[i % n] = (unsigned char)i;
        double t0 = now();
        memcpy(c, a, n);
        double dt = now() - t0;
        best = dt < best ? dt : best;
    }
    volatile unsigned char sink = c[n / 2];  /* keep the copy */
    (void)sink;
    free(a);
    free(c);
    return best;
}

static void usage(FILE *to)
{
    fprintf(to,
            "usage: numacoll-bench [options]\n"
            "  -p, --procs N        ranks to fork (default: online CPUs, at least 2)\n"
            "  -s, --sizes LIST     comma-separated byte counts (k, m suffixes);\n"
            "                       default 1,8,64,512,4k,64k,1m,16m\n"
            "  -t, --trees LIST     trees to compare: flat,chain,kary,knomial,numa\n"
            "                       (default kary,knomial,flat,chain)\n"
            "  -f, --frag BYTES     fragment size (default 8k)\n"
            "  -q, --queue N        queue depth s (default 64)\n"
            "  -b, --banks N        banks q (default 2)\n"
            "  -r, --radix K        radix of kary/knomial/numa trees (default 2)\n"
            "      --topology T     synthetic:<desc> or an hwloc XML file; rank r\n"
            "                       is placed on its PU r\n"
            "      --root-shift     rotate the root every call\n"
            "      --bind           bind rank r to CPU r (mod CPUs)\n"
            "      --list-params    print every tunable with its default\n");
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    if (*s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s)
        return -1;
    if (*end == 'k' || *end == 'K')
        v <<= 10, end++;
    else if (*end == 'm' || *end == 'M')
        v <<= 20, end++;
    if (*end != '\0')
        return -1;
    *out = (size_t)v;
    return 0;
}

static void list_params(void)
{
    printf("%-12s %-10s %s\n", "parameter", "default", "description");
#define X(field, type, def, min, max, doc)                                   \
    printf("%-12s %-10lld %s\n", #field, (long long)(def), doc);
    NUMACOLL_PARAM_LIST(X)
#undef X
}

int main(int argc, char **argv)
{
    bench_t bn = {.p = (int)sysconf(_SC_NPROCESSORS_ONLN)};
    if (bn.p < 2)
        bn.p = 2;
    numacoll_config_init(&bn.cfg);
    bn.cfg.verbose = 0;
    const char *sizes = "1,8,64,512,4k,64k,1m,16m";
    const char *trees = "kary,knomial,flat,chain";
    static const struct option opts[] = {
        {"procs", 1, 0, 'p'}, {"sizes", 1, 0, 's'}, {"trees", 1, 0, 't'},
        {"frag", 1, 0, 'f'},  {"queue", 1, 0, 'q'}, {"banks", 1, 0, 'b'},
        {"radix", 1, 0, 'r'}, {"topology", 1, 0, 'T'},
        {"root-shift", 0, 0, 'R'}, {"bind", 0, 0, 'B'},
        {"list-params", 0, 0, 'L'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int c;
    size_t v;
    while ((c = getopt_long(argc, argv, "p:s:t:f:q:b:r:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': bn.p = atoi(optarg); break;
        case 's': sizes = optarg; break;
        case 't': trees = optarg; break;
        case 'f':
            if (parse_size(optarg, &v)) goto bad;
            bn.cfg.frag_size = v;
            break;
        case 'q': bn.cfg.queue_depth = (unsigned)atoi(optarg); break;
        case 'b': bn.cfg.banks = (unsigned)atoi(optarg); break;
        case 'r': bn.cfg.radix = (unsigned)atoi(optarg); break;
        case 'T': bn.cfg.topology = optarg; break;
        case 'R': bn.root_shift = 1; break;
        case 'B': bn.bind = 1; break;
        case 'L': list_params(); return 0;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (bn.p < 1 || bn.p > 4096) {
        fprintf(stderr, "numacoll-bench: --procs must be 1..4096\n");
        return 2;
    }
    char list[512], *save, *tok;
    snprintf(list, sizeof list, "%s", sizes);
    for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (bn.nsizes == MAX_SIZES || parse_size(tok, &bn.sizes[bn.nsizes])) {
            fprintf(stderr, "numacoll-bench: bad size '%s' in --sizes\n", tok);
            return 2;
        }
        bn.nsizes++;
    }
    snprintf(list, sizeof list, "%s", trees);
    for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int k = numacoll_tree_parse(tok);
        if (k < 0 || bn.ntrees == MAX_TREES) {
            fprintf(stderr, "numacoll-bench: unknown tree '%s' (flat, chain, "
                    "kary, knomial, numa)\n", tok);
            return 2;
        }
        bn.trees[bn.ntrees++] = k;
    }
    char msg[256];
    if (numacoll_config_check(&bn.cfg, msg, sizeof msg) != NUMACOLL_OK) {
        fprintf(stderr, "%s\n", msg);
        return 2;
    }
    size_t rlen = sizeof(double) * MAX_TREES * MAX_SIZES;
    bn.result = nc__run_shared_alloc(rlen);
    if (!bn.result)
        return 1;
    printf("# numacoll-bench: Bcast, p = %d, f = %zu, s = %u, q = %u, radix %u%s\n",
           bn.p, bn.cfg.frag_size, bn.cfg.queue_depth, bn.cfg.banks,
           bn.cfg.radix, bn.root_shift ? ", rotating root" : ", root 0");
    printf("# time: max over ranks of the median call, microseconds; "
           "x = ratio to memcpy of the same size\n");
    nc__run_opts_t ro = {.p = bn.p, .bind = bn.bind, .timeout_ms = 600000};
    if (nc__run(&ro, bench_rank, &bn, NULL, NULL) != 0) {
        fprintf(stderr, "numacoll-bench: a rank failed\n");
        return 1;
    }
    printf("%10s %10s", "bytes", "memcpy");
    for (int t = 0; t < bn.ntrees; t++)
        printf(" %12s %6s", numacoll_tree_name(bn.trees[t]), "x");
    printf("\n");
    for (int k = 0; k < bn.nsizes; k++) {
        double mc = memcpy_time(bn.sizes[k]) * 1e6;
        printf("%10zu %10.2f", bn.sizes[k], mc);
        for (int t = 0; t < bn.ntrees; t++) {
            double us = bn.result[t * MAX_SIZES + k] * 1e6;
            printf(" %12.2f %6.2f", us, mc > 0 ? us / mc : 0.0);
        }
        printf("\n");
    }
    nc__run_shared_free(bn.result, rlen);
    return 0;
bad:
    fprintf(stderr, "numacoll-bench: bad size '%s'\n", optarg);
    return 2;
}
