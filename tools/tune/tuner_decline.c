/*
 * numacoll-tune --decline-from: decline=1 (docs/tuning.md) where the host
 * MPI's collective measured faster. The CSV is bench/compare-ompi.sh's
 * merged one (bench/bench_report.c writes its columns); for each (op, p,
 * size) the median of one configuration (numacoll by default) is compared
 * with the host's (tuned by default) in each loop the file has, and the
 * sizes that lose, from the midpoints between the measured sizes, get
 * decline=1 on the table's rules for that p: a rule that also covers
 * other ranks or sizes is split so that only the losing part declines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tune/tuner.h"

#define CSV_LINE_MAX 8192
#define CSV_MAX_FIELDS 32

/* One measured point: collective, p, rule size; per loop (0 app, 1 b2b)
 * the smallest median of each side (0 numacoll's, 1 the host's), < 0 where
 * none was read. */
typedef struct dpoint {
    int coll, p;
    size_t size;
    double med[2][2];
    int lose;
} dpoint_t;

typedef struct dset {
    dpoint_t *v;
    int n, cap;
    int skipped_rows;  /* rows of operations whose rule size the CSV
                        * cannot give (the v forms), or not ok */
} dset_t;

/* Split one CSV line into fields in place (RFC 4180 quotes); the count. */
static int csv_split(char *s, char **f, int max)
{
    int n = 0;
    while (n < max) {
        char *out = s;
        f[n++] = s;
        if (*s == '"') {
            s++;
            for (;;) {
                if (*s == '"' && s[1] == '"') {
                    *out++ = '"';
                    s += 2;
                } else if (*s == '"') {
                    s++;
                    break;
                } else if (*s == '\0') {
                    break;
                } else {
                    *out++ = *s++;
                }
            }
        } else {
            while (*s && *s != ',' && *s != '\n' && *s != '\r')
                *out++ = *s++;
        }
        char sep = *s;
        *out = '\0';
        if (sep != ',')
            break;
        s++;
    }
    return n;
}

/* The collective whose rule a benchmark operation runs, and its rule
 * size from the CSV's bytes (coll/request.c's key); -1 for the v forms,
 * whose rule size (SIZE_MAX, or the largest block shared with the plain
 * form) the CSV does not give. */
static int op_coll(const char *op, int p, size_t bytes, size_t *size)
{
    static const struct { const char *name; int coll; } ops[] = {
        {"bcast", NC_COLL_BCAST},         {"reduce", NC_COLL_REDUCE},
        {"allreduce", NC_COLL_ALLREDUCE}, {"barrier", NC_COLL_BARRIER},
        {"allgather", NC_COLL_ALLGATHER}, {"gather", NC_COLL_GATHER},
        {"scatter", NC_COLL_SCATTER},     {"alltoall", NC_COLL_ALLTOALL},
        {"reduce_scatter", NC_COLL_REDUCE_SCATTER},
        {"scan", NC_COLL_SCAN},           {"exscan", NC_COLL_EXSCAN},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(op, ops[i].name) == 0) {
            /* Barrier looks up 0; Reduce_scatter all p blocks */
            *size = ops[i].coll == NC_COLL_BARRIER ? 0
                    : ops[i].coll == NC_COLL_REDUCE_SCATTER
                        ? bytes * (size_t)p
                        : bytes;
            return ops[i].coll;
        }
    return -1;
}

static dpoint_t *dset_find(dset_t *d, int coll, int p, size_t size)
{
    for (int i = 0; i < d->n; i++)
        if (d->v[i].coll == coll && d->v[i].p == p && d->v[i].size == size)
            return &d->v[i];
    if (d->n == d->cap) {
        int cap = d->cap ? 2 * d->cap : 64;
        dpoint_t *nv = realloc(d->v, (size_t)cap * sizeof *nv);
        if (!nv)
            return NULL;
        d->v = nv;
        d->cap = cap;
    }
    dpoint_t *x = &d->v[d->n++];
    *x = (dpoint_t){.coll = coll, .p = p, .size = size,
                    .med = {{-1, -1}, {-1, -1}}};
    return x;
}

#define FAIL(...)                                                              \
    do {                                                                       \
        snprintf(err, errlen, __VA_ARGS__);                                    \
        goto out;                                                              \
    } while (0)

/* The points of the CSV at path; 0, or -1 with err. */
static int read_points(const tn_decline_opts_t *o, dset_t *d, char *err,
                       size_t errlen)
{
    int rc = -1, line = 0;
    char *buf = malloc(CSV_LINE_MAX);
    FILE *f = fopen(o->csv, "r");
    if (!buf)
        FAIL("out of memory");
    if (!f)
        FAIL("%s: %s", o->csv, strerror(errno));
    enum { C_OP, C_CONFIG, C_P, C_BYTES, C_MED, C_STATUS, C_LOOP, C_N };
    static const char *const want[C_N] = {"op", "config", "p", "bytes",
                                          "median_us", "status", "loop"};
    int col[C_N];
    char *fl[CSV_MAX_FIELDS];
    if (!fgets(buf, CSV_LINE_MAX, f))
        FAIL("%s: empty file", o->csv);
    line = 1;
    int nf = csv_split(buf, fl, CSV_MAX_FIELDS);
    for (int c = 0; c < C_N; c++) {
        col[c] = -1;
        for (int i = 0; i < nf; i++)
            if (strcmp(fl[i], want[c]) == 0)
                col[c] = i;
        /* files of version 0.2 have no loop column: b2b */
        if (col[c] < 0 && c != C_LOOP)
            FAIL("%s:1: no column '%s' (not a numacoll-bench CSV)", o->csv,
                 want[c]);
    }
    while (fgets(buf, CSV_LINE_MAX, f)) {
        line++;
        if (!strchr(buf, '\n') && !feof(f))
            FAIL("%s:%d: line longer than %d bytes", o->csv, line,
                 CSV_LINE_MAX - 1);
        nf = csv_split(buf, fl, CSV_MAX_FIELDS);
        if (nf == 1 && fl[0][0] == '\0')
            continue;
        for (int c = 0; c < C_N; c++)
            if (col[c] >= nf)
                FAIL("%s:%d: %d fields, the header has more", o->csv, line,
                     nf);
        const char *cfg = fl[col[C_CONFIG]];
        const int side = strcmp(cfg, o->config) == 0 ? 0
                         : strcmp(cfg, o->host) == 0 ? 1
                                                     : -1;
        if (side < 0)
            continue;
        char *end;
        errno = 0;
        long p = strtol(fl[col[C_P]], &end, 10);
        if (errno || *end || p < 1 || p > 1 << 20)
            FAIL("%s:%d: p '%s' is not a team size", o->csv, line,
                 fl[col[C_P]]);
        unsigned long long b = strtoull(fl[col[C_BYTES]], &end, 10);
        if (errno || *end || fl[col[C_BYTES]][0] == '-')
            FAIL("%s:%d: bytes '%s' is not a size", o->csv, line,
                 fl[col[C_BYTES]]);
        size_t size;
        int coll = op_coll(fl[col[C_OP]], (int)p, (size_t)b, &size);
        if (coll < 0 || strcmp(fl[col[C_STATUS]], "ok") != 0) {
            d->skipped_rows++;
            continue;
        }
        double med = strtod(fl[col[C_MED]], &end);
        if (end == fl[col[C_MED]] || *end || !(med >= 0))
            FAIL("%s:%d: median_us '%s' is not a time", o->csv, line,
                 fl[col[C_MED]]);
        const char *lp = col[C_LOOP] >= 0 ? fl[col[C_LOOP]] : "b2b";
        const int loop = strcmp(lp, "app") == 0 ? 0 : 1;
        dpoint_t *x = dset_find(d, coll, (int)p, size);
        if (!x)
            FAIL("out of memory");
        /* several rows (offsets, rounds): the best of each side */
        if (x->med[loop][side] < 0 || med < x->med[loop][side])
            x->med[loop][side] = med;
    }
    if (ferror(f))
        FAIL("%s: %s", o->csv, strerror(errno));
    rc = 0;
out:
    if (f)
        fclose(f);
    free(buf);
    return rc;
}

/* Whether a point loses under the loop rule; -1: not measured on both
 * sides in the loops the rule reads. */
static int verdict(const tn_decline_opts_t *o, const dpoint_t *x)
{
    int seen = 0, lost = 0;
    for (int l = 0; l < 2; l++) {
        if ((o->loop == TN_LOOP_APP && l != 0) ||
            (o->loop == TN_LOOP_B2B && l != 1))
            continue;
        if (x->med[l][0] < 0 || x->med[l][1] < 0)
            continue;
        seen++;
        lost += x->med[l][0] > o->margin * x->med[l][1];
    }
    if (!seen)
        return -1;
    return o->loop == TN_LOOP_EITHER ? lost > 0 : lost == seen;
}

static int by_point(const void *a, const void *b)
{
    const dpoint_t *x = a, *y = b;
    if (x->coll != y->coll)
        return x->coll - y->coll;
    if (x->p != y->p)
        return x->p - y->p;
    return x->size < y->size ? -1 : x->size > y->size;
}

static int by_rule(const void *a, const void *b)
{
    const nc__tune_rule_t *x = a, *y = b;
    if (x->coll != y->coll)
        return (int)x->coll - (int)y->coll;
    if (x->p_lo != y->p_lo)
        return x->p_lo < y->p_lo ? -1 : 1;
    if (x->size_lo != y->size_lo)
        return x->size_lo < y->size_lo ? -1 : 1;
    return x->line - y->line;
}

/* A piece of a split rule that no team can use is left out: the parser
 * refuses it (nodes and ppn beyond the piece's p, say). */
static int piece_ok(const nc__tune_rule_t *r)
{
    char line[1024];
    if (nc__tune_format_rule(r, line, sizeof line) < 0)
        return 0;
    nc__tune_table_t t;
    int bad = nc__tune_parse(line, strlen(line), "piece", &t, NULL, 0);
    nc__tune_free(&t);
    return bad == 0;
}

static int add_piece(nc__tune_table_t *tab, nc__tune_rule_t r)
{
    r.line = 0;
    return piece_ok(&r) ? nc__tune_add(tab, &r) : 0;
}

/* decline=1 on the rules of coll covering p and sizes [a, b], split so
 * that the rest keeps its rule; 0, or -1 out of memory. */
static int mark(nc__tune_table_t *tab, int coll, unsigned p, size_t a,
                size_t b, int *marked)
{
    const int n = tab->n;   /* the pieces added below are never marked */
    for (int i = 0; i < n; i++) {
        nc__tune_rule_t r = tab->rules[i];
        if ((int)r.coll != coll || r.ch.decline || p < r.p_lo ||
            p > r.p_hi || r.size_hi < a || r.size_lo > b)
            continue;
        nc__tune_rule_t rest = r;
        if (r.p_lo < p) {
            rest.p_hi = p - 1;
            if (add_piece(tab, rest) != 0)
                return -1;
            rest.p_hi = r.p_hi;
        }
        if (r.p_hi > p) {
            rest.p_lo = p + 1;
            if (add_piece(tab, rest) != 0)
                return -1;
        }
        rest = r;
        rest.p_lo = rest.p_hi = p;
        if (r.size_lo < a) {
            rest.size_hi = a - 1;
            if (add_piece(tab, rest) != 0)
                return -1;
        }
        if (r.size_hi > b) {
            rest.size_lo = b + 1;
            rest.size_hi = r.size_hi;
            if (add_piece(tab, rest) != 0)
                return -1;
        }
        nc__tune_rule_t *m = &tab->rules[i];
        m->p_lo = m->p_hi = p;
        m->size_lo = r.size_lo < a ? a : r.size_lo;
        m->size_hi = r.size_hi > b ? b : r.size_hi;
        m->ch.decline = 1;
        (*marked)++;
    }
    return 0;
}

/* Whether a rule of coll for p declines size s. */
static int declines(const nc__tune_table_t *tab, int coll, unsigned p,
                    size_t s)
{
    for (int i = 0; i < tab->n; i++) {
        const nc__tune_rule_t *r = &tab->rules[i];
        if ((int)r->coll == coll && r->ch.decline && p >= r->p_lo &&
            p <= r->p_hi && s >= r->size_lo && s <= r->size_hi)
            return 1;
    }
    return 0;
}

int tn_decline_apply(const tn_decline_opts_t *o, nc__tune_table_t *tab,
                     tn_decline_sum_t *sum, char *err, size_t errlen)
{
    dset_t d = {0};
    memset(sum, 0, sizeof *sum);
    int rc = read_points(o, &d, err, errlen);
    if (rc != 0) {
        free(d.v);
        return rc;
    }
    sum->skipped_rows = d.skipped_rows;
    qsort(d.v, (size_t)d.n, sizeof *d.v, by_point);
    for (int i = 0; i < d.n; i++) {
        d.v[i].lose = verdict(o, &d.v[i]);
        sum->points += d.v[i].lose >= 0;
        sum->losing += d.v[i].lose > 0;
    }
    /* Per (coll, p): a point stands for the sizes from the midpoint with
     * the measured size below to the one above (0 and SIZE_MAX at the
     * ends); runs of losing points decline together. */
    for (int i = 0; i < d.n && rc == 0; i++) {
        if (d.v[i].lose <= 0)
            continue;
        int j = i - 1;          /* the measured neighbour below */
        while (j >= 0 && d.v[j].lose < 0)
            j--;
        const int same_lo = j >= 0 && d.v[j].coll == d.v[i].coll &&
                            d.v[j].p == d.v[i].p;
        size_t a = same_lo ? d.v[j].size + (d.v[i].size - d.v[j].size) / 2 + 1
                           : 0;
        int k = i;              /* the last losing point of the run */
        size_t b = SIZE_MAX;
        for (int m = i + 1; m < d.n; m++) {
            if (d.v[m].coll != d.v[i].coll || d.v[m].p != d.v[i].p)
                break;
            if (d.v[m].lose < 0)
                continue;
            if (d.v[m].lose == 0) {
                b = d.v[k].size + (d.v[m].size - d.v[k].size) / 2;
                break;
            }
            k = m;
        }
        rc = mark(tab, d.v[i].coll, (unsigned)d.v[i].p, a, b, &sum->marked);
        if (rc != 0)
            snprintf(err, errlen, "out of memory for the table's rules");
        i = k;
    }
    /* the pieces beside their rule: by collective, p, size (the order
     * of rules never matters to the parser, only to the reader) */
    if (rc == 0 && tab->n > 1)
        qsort(tab->rules, (size_t)tab->n, sizeof *tab->rules, by_rule);
    /* a losing size no rule of the table covers: said, not invented */
    for (int i = 0; i < d.n && rc == 0; i++)
        if (d.v[i].lose > 0 &&
            !declines(tab, d.v[i].coll, (unsigned)d.v[i].p, d.v[i].size)) {
            sum->uncovered++;
            fprintf(stderr, "numacoll-tune: --decline-from: no rule of the "
                    "table covers %s p=%d size=%zu: left as it is\n",
                    nc__coll_name((nc__coll_t)d.v[i].coll), d.v[i].p,
                    d.v[i].size);
        }
    free(d.v);
    return rc;
}
