/*
 * numacoll-bench options: --help, sizes and counts with messages that name
 * the option, configurations for --compare, and the rule between the two
 * builds (standalone options are refused under MPI, and --label the other
 * way). Every error returns 2 with one sentence in err.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench/bench.h"

/* ---- options -------------------------------------------------------------- */

void ncb_usage(FILE *to, ncb_mode_t mode)
{
    const char *me = mode == NCB_MPI ? "numacoll-bench-mpi" : "numacoll-bench";
    fprintf(to, "usage: %s [options]%s\n", me,
            mode == NCB_MPI ? "   (under mpirun -np P)" : "");
    fprintf(to,
        "Times collectives over message sizes; see docs/bench.md.\n"
        "  -o, --ops LIST       bcast,reduce,allreduce,barrier,allgather,gather,\n"
        "                       scatter,alltoall,allgatherv,alltoallv,gatherv,\n"
        "                       scatterv,reduce_scatter,scan,exscan or all\n"
        "                       (default, and all: the first four; the size of\n"
        "                       the gathers, alltoall(v) and reduce_scatter (its\n"
        "                       block form) is the bytes per block)\n"
        "  -s, --sizes LIST     sizes and ranges: 8,4k,1m or 1:16m (powers of two\n"
        "                       from 1 B to 16 MiB, the default); k/m/g suffixes\n");
    if (mode == NCB_STANDALONE)
        fprintf(to,
        "  -p, --procs N        ranks to fork (default: online CPUs, at least 2)\n"
        "  -a, --alg NAME       algorithm (--list-algs); default auto\n"
        "  -t, --tree NAME      flat, chain, kary, knomial, numa\n"
        "  -r, --radix K        radix of kary/knomial/numa trees\n"
        "  -f, --frag BYTES     fragment size f\n"
        "  -q, --queue N        queue depth s\n"
        "  -b, --banks N        banks q\n"
        "      --spin N         polls before a wait yields\n"
        "      --param NAME=V   any parameter of --list-params (repeatable;\n"
        "                       NAME=V,NAME=V sets several)\n"
        "  -c, --compare SPECS  configurations to interleave, separated by spaces\n"
        "                       or ';'; each is 'default', a tree or algorithm\n"
        "                       name, or key=value,... (alg tree radix frag queue\n"
        "                       banks spin, any --list-params name, copy=V:\n"
        "                       the built-in table with every rule's copy\n"
        "                       variant V, e.g. adapt, or table=FILE: a tuning\n"
        "                       file over the built-in table), e.g.\n"
        "                       'default chain tree=flat,frag=16k copy=ntall'\n"
        "      --trees LIST     shorthand for --compare over these trees\n"
        "      --baseline LABEL ratios in the comparison are to this one (default:\n"
        "                       the first)\n"
        "      --topology T     synthetic:<desc> or an hwloc XML file; rank r is\n"
        "                       placed on PU r\n"
        "      --bind, --no-bind  bind rank r to CPU r (default: when p <= CPUs)\n");
    else
        fprintf(to,
        "      --label NAME     name of this configuration in the output (default\n"
        "                       mpi); bench/compare-ompi.sh sets it per component\n");
    fprintf(to,
        "      --root-shift N   root of call c is (c*N) %% p (default 1; 0: root 0)\n"
        "      --cache cold|hot cold (default): every call uses fresh buffers from\n"
        "                       an arena of 2x the last-level cache; hot: one buffer\n"
        "      --align A        where the user buffers start: malloc (default: as\n"
        "                       applications, wherever malloc puts them; glibc: 16\n"
        "                       bytes past a page), OFF (0..4095 bytes past a page,\n"
        "                       every buffer of every rank), or sweep (offsets 0 8\n"
        "                       16 32 48 64 interleaved; best, worst and worst/best)\n");
    fprintf(to,
        "      --loop L         b2b: a barrier, then K calls back to back, root\n"
        "                       moving by --root-shift; app: per call a barrier,\n"
        "                       then the call alone timed, root 0 (as OSU, IMB);\n"
        "                       both (default %s)\n", mode == NCB_MPI ? "under MPI"
                                                   : "b2b standalone");
    fprintf(to,
        "      --dtype LIST     element types of the reductions: int32,double,\n"
        "                       long_double,double_int,... (the names of the\n"
        "                       error message for a bad one); SUM where the type\n"
        "                       has it, else MINLOC; elements = size / element\n"
        "                       size, rounded down (default uint32)\n"
        "      --no-check       do not verify received data\n"
        "      --reps N         samples per size and configuration (default 11)\n"
        "      --iters N        calls per sample (default: enough for --sample-us)\n"
        "      --sample-us T    target duration of one sample (default 1000)\n"
        "      --warmup N       untimed warm-up calls (default: by size)\n"
        "      --csv FILE       one row per operation, configuration and size\n"
        "      --json FILE      the same with the run's parameters\n"
        "      --plot FILE.png  time vs size, log-log, with the memcpy limit (gnuplot)\n"
        "      --quiet          no table on stdout\n"
        "      --merge FILE...  no run: read --csv files (several runs, labels\n"
        "                       repeated across rounds) and print one comparison\n"
        "      --list-algs      algorithms per operation\n"
        "      --transfers      time nothing: per configuration and size, count\n"
        "                       the cache lines one Bcast moves across each\n"
        "                       level's domains (from the team's tree and rule)\n"
        "      --overlap        the nonblocking forms, OSU's way: blocking call,\n"
        "                       start+wait, and start / compute / wait with the\n"
        "                       overlap %% (root 0, reused buffers; --csv only)\n"
        "      --list-params    every numacoll parameter with its default\n"
        "      --footprint      time nothing: /dev/shm per team as created and\n"
        "                       once grown, and creation time, for p = 2 to\n"
        "                       256 (-p N: that p alone; --param applies)\n"
        "  -h, --help\n"
        "Parameters left out come from the team's tuning table: the file named\n"
        "by $NUMACOLL_TUNING_FILE (numacoll-tune writes one), else the built-in\n"
        "table (docs/tuning.md).\n");
}

int ncb_parse_size(const char *s, size_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    int shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end != '\0' || v > (ULLONG_MAX >> shift))
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return 2; } while (0)

static int parse_count(const char *opt, const char *s, long min, long max,
                       long *out, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min || v > max)
        FAIL("%s: '%s' is not a count from %ld to %ld", opt, s, min, max);
    *out = v;
    return 0;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

static int add_size(ncb_opts_t *o, size_t v, const char *tok, char *err,
                    size_t errlen)
{
    if (v == 0)
        FAIL("--sizes: '%s': sizes start at 1 byte (barrier takes none)", tok);
    if (v > NCB_MAX_BYTES)
        FAIL("--sizes: '%s' is larger than the limit of 1g", tok);
    for (int i = 0; i < o->nsizes; i++)
        if (o->sizes[i] == v)
            return 0;
    if (o->nsizes == NCB_MAX_SIZES)
        FAIL("--sizes: more than %d sizes", NCB_MAX_SIZES);
    o->sizes[o->nsizes++] = v;
    return 0;
}

static int parse_sizes(ncb_opts_t *o, const char *list, char *err,
                       size_t errlen)
{
    char buf[1024], *save = NULL;
    if (strlen(list) >= sizeof buf)
        FAIL("--sizes: the list is too long");
    snprintf(buf, sizeof buf, "%s", list);
    o->nsizes = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        size_t a, b;
        if (colon) {
            *colon = '\0';
            if (ncb_parse_size(tok, &a) || ncb_parse_size(colon + 1, &b)) {
                *colon = ':';
                FAIL("--sizes: '%s' is not a range (expected FROM:TO such as "
                     "1:16m, powers of two from FROM)", tok);
            }
            *colon = ':';
            if (a == 0 || b < a)
                FAIL("--sizes: range '%s' must go up from at least 1 byte", tok);
            for (size_t v = a; v <= b; v *= 2) {
                int rc = add_size(o, v, tok, err, errlen);
                if (rc)
                    return rc;
                if (v > NCB_MAX_BYTES)
                    break;
            }
        } else {
            if (ncb_parse_size(tok, &a))
                FAIL("--sizes: '%s' is not a size (expected a byte count like "
                     "4096, 64k or 16m, or a range like 1:16m)", tok);
            int rc = add_size(o, a, tok, err, errlen);
            if (rc)
                return rc;
        }
    }
    if (o->nsizes == 0)
        FAIL("--sizes: the list is empty");
    qsort(o->sizes, (size_t)o->nsizes, sizeof o->sizes[0], cmp_size);
    return 0;
}

static int parse_ops(ncb_opts_t *o, const char *list, char *err, size_t errlen)
{
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", list);
    o->ops = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "all") == 0) {
            o->ops = 0;
            return 0;
        }
        int k = ncb_op_find(tok);
        if (k < 0)
            FAIL("--ops: unknown operation '%s' (bcast, reduce, allreduce, "
                 "barrier, allgather, gather, scatter, alltoall, allgatherv, "
                 "alltoallv, gatherv, scatterv, reduce_scatter, scan, exscan "
                 "or all)", tok);
        o->ops |= 1u << k;
    }
    if (!o->ops)
        FAIL("--ops: the list is empty");
    return 0;
}

static void spec_init(ncb_spec_t *s)
{
    memset(s, 0, sizeof *s);
    s->frag = -1;
    s->queue = s->banks = s->radix = s->spin = -1;
}

/* Apply "key=value" or a bare word to spec s. */
static int spec_item(ncb_spec_t *s, const char *item, const char *opt,
                     char *err, size_t errlen)
{
    const char *eq = strchr(item, '=');
    if (!eq) {
        if (strcmp(item, "default") == 0 || strcmp(item, "auto") == 0)
            return 0;
        /* a tree or an algorithm name: the standalone backend knows which */
        if (s->word[0])
            FAIL("%s: '%s': one bare name per configuration (use key=value "
                 "for more)", opt, item);
        if (strlen(item) >= sizeof s->word)
            FAIL("%s: unknown name '%s'", opt, item);
        snprintf(s->word, sizeof s->word, "%s", item);
        return 0;
    }
    char key[32];
    size_t kl = (size_t)(eq - item);
    if (kl == 0 || kl >= sizeof key)
        FAIL("%s: '%s' is not key=value", opt, item);
    memcpy(key, item, kl);
    key[kl] = '\0';
    const char *v = eq + 1;
    long n;
    size_t z;
    if (strcmp(key, "alg") == 0) {
        if (!*v || strlen(v) >= sizeof s->alg)
            FAIL("%s: bad algorithm name '%s'", opt, v);
        snprintf(s->alg, sizeof s->alg, "%s", v);
    } else if (strcmp(key, "tree") == 0) {
        if (!*v || strlen(v) >= sizeof s->tree)
            FAIL("%s: unknown tree '%s' (flat, chain, kary, knomial, numa)",
                 opt, v);
        snprintf(s->tree, sizeof s->tree, "%s", v);
    } else if (strcmp(key, "frag") == 0) {
        if (ncb_parse_size(v, &z))
            FAIL("%s: frag: '%s' is not a size", opt, v);
        s->frag = (long long)z;
    } else if (strcmp(key, "queue") == 0 || strcmp(key, "banks") == 0 ||
               strcmp(key, "radix") == 0 || strcmp(key, "spin") == 0) {
        int rc = parse_count(key, v, key[0] == 's' ? 0 : 1, 100000000, &n,
                             err, errlen);
        if (rc)
            return rc;
        *(key[0] == 'q' ? &s->queue : key[0] == 'b' ? &s->banks
          : key[0] == 'r' ? &s->radix : &s->spin) = n;
    } else {
        /* any other numacoll parameter (--list-params): the standalone
         * backend checks name and value against the library's table */
        size_t used = strlen(s->params);
        if (used + strlen(item) + 2 > sizeof s->params)
            FAIL("%s: too many parameters", opt);
        snprintf(s->params + used, sizeof s->params - used, "%s%s",
                 used ? "," : "", item);
    }
    return 0;
}

/* "levels=l3,numa,package" inside a comma-separated list: the bare level
 * names after levels= belong to it, so their commas become '+' (which the
 * library's level parser reads as ','). Only level names are joined: a
 * bare tree or algorithm name after them stays a name of its own. The
 * names are listed here because the MPI twin does not link the library. */
static int is_level_name(const char *s, size_t n)
{
    static const char *const names[] = {"l1", "l2", "l3", "numa", "package",
                                        "socket"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == n && strncasecmp(s, names[i], n) == 0)
            return 1;
    return 0;
}

static void join_levels(char *buf)
{
    int in_levels = 0;
    for (char *part = buf; part; ) {
        char *comma = strchr(part, ',');
        size_t n = comma ? (size_t)(comma - part) : strlen(part);
        const char *eq = memchr(part, '=', n);
        if (eq)
            in_levels = eq - part == 6 && strncmp(part, "levels", 6) == 0;
        else if (in_levels && is_level_name(part, n))
            part[-1] = '+';
        else
            in_levels = 0;
        part = comma ? comma + 1 : NULL;
    }
}

/* Configurations from a --compare list: items separated by spaces or ';',
 * parts of an item by ','. Each starts from the base options. */
static int parse_compare(ncb_opts_t *o, const char *list, const char *opt,
                         char *err, size_t errlen)
{
    char buf[1024], *save = NULL;
    if (strlen(list) >= sizeof buf)
        FAIL("%s: the list is too long", opt);
    snprintf(buf, sizeof buf, "%s", list);
    for (char *item = strtok_r(buf, " ;\t", &save); item;
         item = strtok_r(NULL, " ;\t", &save)) {
        if (o->ncfg == NCB_MAX_CFGS)
            FAIL("%s: more than %d configurations", opt, NCB_MAX_CFGS);
        ncb_spec_t *s = &o->cfg[o->ncfg];
        spec_init(s);
        if (strlen(item) >= sizeof s->label)
            FAIL("%s: '%s' is too long", opt, item);
        snprintf(s->label, sizeof s->label, "%s", item);
        char part[128], *save2 = NULL;
        snprintf(part, sizeof part, "%s", item);
        join_levels(part);
        for (char *kv = strtok_r(part, ",", &save2); kv;
             kv = strtok_r(NULL, ",", &save2)) {
            int rc = spec_item(s, kv, opt, err, errlen);
            if (rc)
                return rc;
        }
        for (int i = 0; i < o->ncfg; i++)
            if (strcmp(o->cfg[i].label, s->label) == 0)
                FAIL("%s: '%s' is given twice", opt, s->label);
        o->ncfg++;
    }
    return 0;
}

/* Fields of the base spec fill what a compared configuration leaves open;
 * -1 when the parameter lists do not fit together. */
static int spec_inherit(ncb_spec_t *s, const ncb_spec_t *b)
{
    if (!s->alg[0])
        snprintf(s->alg, sizeof s->alg, "%s", b->alg);
    if (!s->tree[0])
        snprintf(s->tree, sizeof s->tree, "%s", b->tree);
    if (s->frag < 0) s->frag = b->frag;
    if (s->queue < 0) s->queue = b->queue;
    if (s->banks < 0) s->banks = b->banks;
    if (s->radix < 0) s->radix = b->radix;
    if (s->spin < 0) s->spin = b->spin;
    if (b->params[0]) {
        /* the configuration's own values come last, so they win */
        size_t lb = strlen(b->params), lm = strlen(s->params);
        if (lb + 1 + lm + 1 > sizeof s->params)
            return -1;
        memmove(s->params + lb + (lm ? 1 : 0), s->params, lm + 1);
        memcpy(s->params, b->params, lb);
        if (lm)
            s->params[lb] = ',';
    }
    return 0;
}

enum {
    OPT_SPIN = 256, OPT_TREES, OPT_BASELINE, OPT_TOPOLOGY, OPT_BIND,
    OPT_NOBIND, OPT_LABEL, OPT_ROOTSHIFT, OPT_CACHE, OPT_NOCHECK, OPT_REPS,
    OPT_ITERS, OPT_SAMPLE, OPT_WARMUP, OPT_CSV, OPT_JSON, OPT_PLOT, OPT_QUIET,
    OPT_MERGE, OPT_LISTALGS, OPT_LISTPARAMS, OPT_PARAM, OPT_ALIGN, OPT_LOOP,
    OPT_TRANSFERS, OPT_OVERLAP, OPT_DTYPE, OPT_FOOTPRINT
};

/* --dtype LIST: every name this build's backend knows (standalone: the
 * core's own), each once; a name it does not know lists those it does. */
static int parse_dtypes(ncb_opts_t *o, const char *list, char *err,
                        size_t errlen)
{
    char buf[512], *save = NULL;
    if (strlen(list) >= sizeof buf)
        FAIL("--dtype: the list is too long");
    snprintf(buf, sizeof buf, "%s", list);
    o->ndtype = 0;
    for (char *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        ncb_dtype_t d;
        if (ncb_backend_dtype(tok, &d) != 0) {
            char names[400];
            ncb_backend_dtype_names(names, sizeof names);
            FAIL("--dtype: unknown type '%s' (or one with neither sum nor "
                 "minloc); valid: %s", tok, names);
        }
        for (int i = 0; i < o->ndtype; i++)
            if (strcmp(o->dtype[i].name, d.name) == 0)
                FAIL("--dtype: '%s' is given twice", tok);
        if (o->ndtype == NCB_MAX_DTYPES)
            FAIL("--dtype: more than %d types", NCB_MAX_DTYPES);
        o->dtype[o->ndtype++] = d;
    }
    if (!o->ndtype)
        FAIL("--dtype: the list is empty");
    return 0;
}

/* --align malloc|sweep|OFF */
static int parse_align(ncb_opts_t *o, const char *v, char *err, size_t errlen)
{
    long n;
    if (strcmp(v, "malloc") == 0)
        o->align = NCB_ALIGN_MALLOC;
    else if (strcmp(v, "sweep") == 0)
        o->align = NCB_ALIGN_SWEEP;
    else if (parse_count("--align", v, 0, NCB_ALIGN_MAX, &n, err, errlen) == 0)
        o->align = (int)n;
    else
        FAIL("--align: '%s' is neither malloc, sweep nor an offset from 0 to "
             "%d bytes past a page", v, NCB_ALIGN_MAX);
    return 0;
}

int ncb_parse(int argc, char **argv, ncb_mode_t mode, ncb_opts_t *o,
              char *err, size_t errlen)
{
    static const struct option lo[] = {
        {"procs", 1, 0, 'p'},      {"ops", 1, 0, 'o'},
        {"sizes", 1, 0, 's'},      {"alg", 1, 0, 'a'},
        {"tree", 1, 0, 't'},       {"radix", 1, 0, 'r'},
        {"frag", 1, 0, 'f'},       {"queue", 1, 0, 'q'},
        {"banks", 1, 0, 'b'},      {"spin", 1, 0, OPT_SPIN},
        {"compare", 1, 0, 'c'},    {"trees", 1, 0, OPT_TREES},
        {"baseline", 1, 0, OPT_BASELINE}, {"topology", 1, 0, OPT_TOPOLOGY},
        {"bind", 0, 0, OPT_BIND},  {"no-bind", 0, 0, OPT_NOBIND},
        {"label", 1, 0, OPT_LABEL}, {"root-shift", 1, 0, OPT_ROOTSHIFT},
        {"cache", 1, 0, OPT_CACHE}, {"no-check", 0, 0, OPT_NOCHECK},
        {"reps", 1, 0, OPT_REPS},  {"iters", 1, 0, OPT_ITERS},
        {"sample-us", 1, 0, OPT_SAMPLE}, {"warmup", 1, 0, OPT_WARMUP},
        {"csv", 1, 0, OPT_CSV},    {"json", 1, 0, OPT_JSON},
        {"plot", 1, 0, OPT_PLOT},  {"quiet", 0, 0, OPT_QUIET},
        {"merge", 0, 0, OPT_MERGE}, {"list-algs", 0, 0, OPT_LISTALGS},
        {"list-params", 0, 0, OPT_LISTPARAMS}, {"param", 1, 0, OPT_PARAM},
        {"footprint", 0, 0, OPT_FOOTPRINT},
        {"align", 1, 0, OPT_ALIGN}, {"loop", 1, 0, OPT_LOOP},
        {"transfers", 0, 0, OPT_TRANSFERS}, {"overlap", 0, 0, OPT_OVERLAP},
        {"dtype", 1, 0, OPT_DTYPE}, {"help", 0, 0, 'h'},
        {0, 0, 0, 0}};
    memset(o, 0, sizeof *o);
    o->mode = mode;
    spec_init(&o->base);
    o->root_shift = 1;
    o->check = 1;
    o->reps = 11;
    o->warmup = -1;
    o->sample_us = 1000;
    o->bind = -1;
    o->align = NCB_ALIGN_MALLOC;
    /* under MPI both loops by default: every figure next to the method of
     * OSU and IMB; standalone the app loop is there to ask for */
    o->loops = mode == NCB_MPI ? NCB_LOOP_B2B | NCB_LOOP_APP : NCB_LOOP_B2B;
    int rc = parse_sizes(o, "1:16m", err, errlen);
    if (rc)
        return rc;
    const char *compare[NCB_MAX_CFGS];
    int ncompare = 0, compare_is_trees[NCB_MAX_CFGS];
    long n;
    size_t z;
    char optname[32];
    optind = 1;
    opterr = 0;
    int c, li = -1;
    while ((c = getopt_long(argc, argv, ":p:o:s:a:t:r:f:q:b:c:h", lo,
                            &li)) != -1) {
        /* the option as the user knows it, for messages */
        if (li >= 0)
            snprintf(optname, sizeof optname, "--%s", lo[li].name);
        else if (c == '?' && optopt > 0 && optopt < 256)
            snprintf(optname, sizeof optname, "-%c", optopt);
        else if (c == '?' || c == ':')  /* as typed: the last word read */
            snprintf(optname, sizeof optname, "%s",
                     optind > 0 && optind <= argc ? argv[optind - 1] : "?");
        else
            snprintf(optname, sizeof optname, "-%c", c);
        char *eqp = strchr(optname, '=');
        if (eqp)
            *eqp = '\0';
        li = -1;
        switch (c) {
        case 'p': case 'a': case 't': case 'r': case 'f': case 'q': case 'b':
        case 'c': case OPT_SPIN: case OPT_TREES: case OPT_TOPOLOGY:
        case OPT_PARAM: case OPT_TRANSFERS:
        case OPT_BIND: case OPT_NOBIND: case OPT_BASELINE:
            if (mode == NCB_MPI)
                FAIL("%s is a standalone option: under MPI the process count "
                     "comes from mpirun -np and the component from mpirun "
                     "--mca (see bench/compare-ompi.sh)", optname);
            break;
        case OPT_LABEL:
            if (mode == NCB_STANDALONE)
                FAIL("--label is an MPI option (standalone labels come from "
                     "--compare)");
            break;
        default:
            break;
        }
        switch (c) {
        case 'p':
            rc = parse_count("--procs", optarg, 1, 4096, &n, err, errlen);
            if (rc)
                return rc;
            o->p = (int)n;
            break;
        case 'o':
            if ((rc = parse_ops(o, optarg, err, errlen)))
                return rc;
            break;
        case 's':
            if ((rc = parse_sizes(o, optarg, err, errlen)))
                return rc;
            break;
        case 'a':
            if (!*optarg || strlen(optarg) >= sizeof o->base.alg)
                FAIL("--alg: unknown algorithm '%s'", optarg);
            snprintf(o->base.alg, sizeof o->base.alg, "%s", optarg);
            break;
        case 't':
            if (!*optarg || strlen(optarg) >= sizeof o->base.tree)
                FAIL("--tree: unknown tree '%s' (flat, chain, kary, knomial, "
                     "numa)", optarg);
            snprintf(o->base.tree, sizeof o->base.tree, "%s", optarg);
            break;
        case 'f':
            if (ncb_parse_size(optarg, &z))
                FAIL("--frag: '%s' is not a size (e.g. 8192 or 8k)", optarg);
            o->base.frag = (long long)z;
            break;
        case 'r': case 'q': case 'b': case OPT_SPIN:
            rc = parse_count(c == 'r' ? "--radix" : c == 'q' ? "--queue"
                             : c == 'b' ? "--banks" : "--spin", optarg,
                             c == OPT_SPIN ? 0 : 1, 100000000, &n, err, errlen);
            if (rc)
                return rc;
            *(c == 'r' ? &o->base.radix : c == 'q' ? &o->base.queue
              : c == 'b' ? &o->base.banks : &o->base.spin) = n;
            break;
        case 'c': case OPT_TREES:
            if (ncompare == NCB_MAX_CFGS)
                FAIL("%s: given too often", optname);
            compare_is_trees[ncompare] = c == OPT_TREES;
            compare[ncompare++] = optarg;
            break;
        case OPT_PARAM: {
            /* NAME=V, or several joined by ',' as in a --compare item;
             * every part must be one (the backend reads them as pairs) */
            char buf[256], *save = NULL;
            if (strlen(optarg) >= sizeof buf)
                FAIL("--param: '%s' is too long", optarg);
            snprintf(buf, sizeof buf, "%s", optarg);
            join_levels(buf);
            char *part = strtok_r(buf, ",", &save);
            if (!part)
                FAIL("--param: '%s' is not name=value", optarg);
            for (; part; part = strtok_r(NULL, ",", &save)) {
                if (!strchr(part, '='))
                    FAIL("--param: '%s' is not name=value", part);
                if ((rc = spec_item(&o->base, part, "--param", err, errlen)))
                    return rc;
            }
            break;
        }
        case OPT_BASELINE:
            snprintf(o->baseline, sizeof o->baseline, "%s", optarg);
            break;
        case OPT_TOPOLOGY: o->topology = optarg; break;
        case OPT_BIND: o->bind = 1; break;
        case OPT_TRANSFERS: o->transfers = 1; break;
        case OPT_OVERLAP: o->overlap = 1; break;
        case OPT_NOBIND: o->bind = 0; break;
        case OPT_LABEL:
            if (!*optarg || strlen(optarg) >= NCB_LABEL_MAX ||
                strpbrk(optarg, ",\"\n"))
                FAIL("--label: '%s' must be 1 to %d characters without "
                     "commas or quotes", optarg, NCB_LABEL_MAX - 1);
            o->label = optarg;
            break;
        case OPT_ROOTSHIFT:
            rc = parse_count("--root-shift", optarg, 0, 1 << 20, &n, err,
                             errlen);
            if (rc)
                return rc;
            o->root_shift = (int)n;
            break;
        case OPT_CACHE:
            if (strcmp(optarg, "hot") == 0)
                o->hot = 1;
            else if (strcmp(optarg, "cold") == 0)
                o->hot = 0;
            else
                FAIL("--cache: '%s' is neither cold nor hot", optarg);
            break;
        case OPT_ALIGN:
            if ((rc = parse_align(o, optarg, err, errlen)))
                return rc;
            break;
        case OPT_LOOP:
            if (strcmp(optarg, "b2b") == 0)
                o->loops = NCB_LOOP_B2B;
            else if (strcmp(optarg, "app") == 0)
                o->loops = NCB_LOOP_APP;
            else if (strcmp(optarg, "both") == 0)
                o->loops = NCB_LOOP_B2B | NCB_LOOP_APP;
            else
                FAIL("--loop: '%s' is neither app, b2b nor both", optarg);
            break;
        case OPT_DTYPE:
            if ((rc = parse_dtypes(o, optarg, err, errlen)))
                return rc;
            break;
        case OPT_NOCHECK: o->check = 0; break;
        case OPT_REPS:
            if ((rc = parse_count("--reps", optarg, 1, 100000, &n, err, errlen)))
                return rc;
            o->reps = (int)n;
            break;
        case OPT_ITERS:
            if ((rc = parse_count("--iters", optarg, 1, 10000000, &n, err,
                                  errlen)))
                return rc;
            o->iters = (int)n;
            break;
        case OPT_WARMUP:
            if ((rc = parse_count("--warmup", optarg, 0, 10000000, &n, err,
                                  errlen)))
                return rc;
            o->warmup = (int)n;
            break;
        case OPT_SAMPLE:
            if ((rc = parse_count("--sample-us", optarg, 1, 10000000, &n, err,
                                  errlen)))
                return rc;
            o->sample_us = (double)n;
            break;
        case OPT_CSV: o->csv = optarg; break;
        case OPT_JSON: o->json = optarg; break;
        case OPT_PLOT: o->plot = optarg; break;
        case OPT_QUIET: o->quiet = 1; break;
        case OPT_MERGE: o->merge = 1; break;
        case OPT_FOOTPRINT:
            if (mode != NCB_STANDALONE)
                FAIL("--footprint is numacoll-bench's (standalone)");
            o->footprint = 1;
            break;
        case OPT_LISTALGS: o->list_algs = 1; return 1;
        case OPT_LISTPARAMS: o->list_params = 1; return 1;
        case 'h': o->help = 1; return 1;
        case ':':
            FAIL("%s needs a value", optname);
        default:
            FAIL("unknown option '%s'", optname);
        }
    }
    if (o->merge) {
        o->files = argv + optind;
        o->nfiles = argc - optind;
        if (o->nfiles == 0)
            FAIL("--merge needs CSV files written by --csv");
        return 0;
    }
    if (optind < argc)
        FAIL("unexpected argument '%s'", argv[optind]);
    if (o->overlap && (o->json || o->plot || o->transfers))
        FAIL("--overlap prints its own table and writes --csv only (not "
             "--json, --plot or --transfers)");
    if (o->overlap && o->ndtype)
        FAIL("--overlap times uint32 sums only (not --dtype)");
    for (int i = 0; i < o->ndtype; i++)
        if (o->align >= 0 && o->align % (int)o->dtype[i].align)
            FAIL("--align %d: %s needs %zu-byte alignment (as C and MPI "
                 "require)", o->align, o->dtype[i].name, o->dtype[i].align);
    for (int i = 0; i < ncompare; i++) {
        if (compare_is_trees[i]) {
            char list[1024];
            snprintf(list, sizeof list, "%s", compare[i]);
            for (char *p = list; *p; p++)
                if (*p == ',')
                    *p = ' ';
            rc = parse_compare(o, list, "--trees", err, errlen);
        } else {
            rc = parse_compare(o, compare[i], "--compare", err, errlen);
        }
        if (rc)
            return rc;
    }
    if (o->ncfg == 0) {
        spec_init(&o->cfg[0]);  /* filled from the base just below */
        const char *l = mode == NCB_MPI ? (o->label ? o->label : "mpi")
                                        : "default";
        snprintf(o->cfg[0].label, sizeof o->cfg[0].label, "%s", l);
        o->ncfg = 1;
    }
    for (int i = 0; i < o->ncfg; i++)
        if (spec_inherit(&o->cfg[i], &o->base) != 0)
            FAIL("--param: too many parameters for '%s'", o->cfg[i].label);
    if (o->baseline[0]) {
        int found = 0;
        for (int i = 0; i < o->ncfg; i++)
            found |= strcmp(o->cfg[i].label, o->baseline) == 0;
        if (!found)
            FAIL("--baseline: '%s' is none of the compared configurations",
                 o->baseline);
    }
    return 0;
}
