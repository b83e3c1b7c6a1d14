/*
 * The tuning table (tune/table.h, docs/tuning.md): a parser that reports
 * every problem of a file with its line and column, a writer whose output
 * the parser reads back to equal rules, the compiled-in defaults, and the
 * per-team resolution into sorted size ranges that a collective searches
 * without allocating.
 *
 * Value ranges are those of the configuration parameters the keys stand
 * for (NUMACOLL_PARAM_LIST), so a rule can never ask for something
 * numacoll_config_check() would refuse.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "numacoll.h"
#include "tune/defaults.h"
#include "coll/copy.h"
#include "coll/tree.h"
#include "tune/table.h"

#define LINE_MAX_BYTES 1024
#define SHOW_MAX 32 /* bytes of an offending token quoted in a message */

/* ---- names and ranges -------------------------------------------------- */

static const char *const coll_names[NC_COLL_COUNT] = {
#define X(id, name) [NC_COLL_##id] = name,
    NC_COLL_LIST(X)
#undef X
};

/* The configuration parameters, indexed by name, for their ranges. */
enum {
#define X(field, type, def, min, max, doc) PRM_##field,
    NUMACOLL_PARAM_LIST(X)
#undef X
    PRM_COUNT
};

typedef struct { const char *name; unsigned long long min, max; } prm_t;

static const prm_t prms[PRM_COUNT] = {
#define X(field, type, def, min, max, doc)                                      \
    [PRM_##field] = {#field, (unsigned long long)(min),                         \
                     (unsigned long long)(max)},
    NUMACOLL_PARAM_LIST(X)
#undef X
};

typedef enum {
    K_P, K_SIZE, K_NODES, K_PPN, K_ALG, K_F, K_S, K_Q, K_TREE, K_K, K_GAIN,
    K_COPY,
    /* the level keys: domains, then ranks per domain, for each level
     * LEVEL_KEYS lists (NUMA has nodes and ppn) */
    K_L1, K_L1PPD, K_L2, K_L2PPD, K_L3, K_L3PPD, K_PKG, K_PKGPPD,
    K_KU,   /* optional radix between the heads of the levels (Reduce's) */
    /* optional tree inside the domains of a level (l1tree= .. packagetree=,
     * in level-code order) and between the outermost ones (toptree=) */
    K_L1T, K_L2T, K_L3T, K_NUMAT, K_PKGT, K_TOPT,
    K_RELAY, /* optional leader relay of the pipelined Bcast */
    K_OVER,    /* optional: the team's oversubscription verdict */
    K_DECLINE, /* optional: hand the call back to the host MPI */
    K_COUNT
} tkey_t;

static const char *const key_names[K_COUNT] = {
    "p", "size", "nodes", "ppn", "alg", "f", "s", "q", "tree", "k", "gain",
    "copy", "l1", "l1ppd", "l2", "l2ppd", "l3", "l3ppd", "package",
    "packageppd", "ku", "l1tree", "l2tree", "l3tree", "numatree",
    "packagetree", "toptree", "relay", "over", "decline",
};
/* `seen` in parse_rule has a bit per key */
_Static_assert(K_COUNT <= 32, "every key has a bit of an unsigned");

/* The slot of nc__choice_t.lt a level-tree key sets. */
static int key_lt_slot(int key)
{
    return key == K_TOPT ? NC_LT_TOP : NUMACOLL_LEVEL_L1 + (key - K_L1T);
}

/* The level of each pair of level keys, in key order. */
static const int level_keys[] = {
    NUMACOLL_LEVEL_L1, NUMACOLL_LEVEL_L2, NUMACOLL_LEVEL_L3,
    NUMACOLL_LEVEL_PACKAGE,
};
#define N_LEVEL_KEYS ((int)(sizeof level_keys / sizeof level_keys[0]))

/* Level code of a level key (K_L1 .. K_PKGPPD); *rpd: a ranks-per-domain
 * key. */
static int key_level(int key, int *rpd)
{
    *rpd = (key - K_L1) % 2;
    return level_keys[(key - K_L1) / 2];
}

/* Short names for messages ("L3 domains", "ranks per L3 domain"). */
static const char *const level_nouns[NUMACOLL_LEVEL_END] = {
    [NUMACOLL_LEVEL_L1] = "L1", [NUMACOLL_LEVEL_L2] = "L2",
    [NUMACOLL_LEVEL_L3] = "L3", [NUMACOLL_LEVEL_PACKAGE] = "package",
};

/* The parameter whose range a key shares, per collective; -1: none (the
 * collective has no algorithm taking that key). */
static int key_param(nc__coll_t coll, int key)
{
    switch (coll) {
    case NC_COLL_BCAST:
        return key == K_F   ? PRM_frag_size
             : key == K_S   ? PRM_queue_depth
             : key == K_Q   ? PRM_banks
             : key == K_K   ? PRM_radix
                            : -1;
    case NC_COLL_REDUCE:
    case NC_COLL_ALLREDUCE:
    case NC_COLL_ALLGATHER:   /* these stage in the Reduce's slots too */
    case NC_COLL_GATHER:
    case NC_COLL_SCATTER:
    case NC_COLL_ALLTOALL:
    case NC_COLL_REDUCE_SCATTER:
    case NC_COLL_SCAN:
    case NC_COLL_EXSCAN:
        return key == K_F   ? PRM_reduce_frag_size
             : key == K_S   ? PRM_reduce_depth
             : key == K_K   ? PRM_reduce_radix
                            : -1;
    case NC_COLL_BARRIER:
        return key == K_K ? PRM_barrier_radix : -1;
    default:
        return -1;
    }
}

/* Bounds of a parameter key. A table value is always a real setting, never
 * the configuration's "unset" 0: counts are at least 1, a radix at least 2
 * (a tree), a fragment at least one cache line. */
static void key_bounds(int prm, int key, unsigned long long *lo,
                       unsigned long long *hi)
{
    unsigned long long floor = key == K_K ? 2 : key == K_F ? 64 : 1;
    *lo = prms[prm].min > floor ? prms[prm].min : floor;
    *hi = prms[prm].max;
}

/* Bit (1 << key) for each key the algorithm's keys string names. */
static unsigned alg_key_mask(int alg)
{
    unsigned mask = 0;
    const char *s = nc__algs[alg].keys;
    while (*s) {
        while (*s == ' ')
            s++;
        size_t n = strcspn(s, " ");
        for (int k = K_F; k <= K_K && n; k++)
            if (strlen(key_names[k]) == n && memcmp(s, key_names[k], n) == 0)
                mask |= 1u << k;
        s += n;
    }
    return mask;
}

/* ---- messages ---------------------------------------------------------- */

typedef struct errsink {
    char *buf;
    size_t len, pos;
    size_t reserve;    /* room kept for the "N more problems" line       */
    const char *source;
    int count;         /* problems found                                 */
    int omitted;       /* of those, messages that did not fit            */
} errsink_t;

static void sink_add(errsink_t *es, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Whole messages only: a cut-off line would be misread, so a message that
 * does not fit is counted and summed up in one last line. */
static void sink_add(errsink_t *es, const char *fmt, ...)
{
    char msg[2048];
    es->count++;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof msg)
        n = (int)sizeof msg - 1;
    if (!es->buf || es->omitted ||
        es->pos + (size_t)n + 2 + es->reserve > es->len) {
        es->omitted++;
        return;
    }
    memcpy(es->buf + es->pos, msg, (size_t)n);
    es->pos += (size_t)n;
    es->buf[es->pos++] = '\n';
    es->buf[es->pos] = '\0';
}

static void sink_finish(errsink_t *es)
{
    if (!es->buf || es->len == 0)
        return;
    if (es->omitted && es->pos < es->len) {
        int n = snprintf(es->buf + es->pos, es->len - es->pos,
                         "%s: %d more problem%s not shown\n", es->source,
                         es->omitted, es->omitted == 1 ? "" : "s");
        if (n > 0)
            es->pos += (size_t)n < es->len - es->pos ? (size_t)n
                                                     : es->len - es->pos - 1;
    }
    es->buf[es->pos < es->len ? es->pos : es->len - 1] = '\0';
}

/* A token as quoted in a message: printable ASCII as is, other bytes as
 * \xNN, at most SHOW_MAX bytes then "...". out holds 4 * SHOW_MAX + 4. */
static const char *show(const char *s, size_t n, char *out)
{
    char *o = out;
    for (size_t i = 0; i < n && i < SHOW_MAX; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f)
            *o++ = (char)c;
        else
            o += sprintf(o, "\\x%02x", c);
    }
    if (n > SHOW_MAX)
        o += sprintf(o, "...");
    *o = '\0';
    return out;
}
#define SHOW_BUF (4 * SHOW_MAX + 4)

/* "<source>:<line>:<col>: expected <what>, found '<token>'" */
static void expect(errsink_t *es, int line, int col, const char *what,
                   const char *tok, size_t n)
{
    char sh[SHOW_BUF];
    sink_add(es, "%s:%d:%d: expected %s, found '%s'", es->source, line, col,
             what, show(tok, n, sh));
}

/* ---- numbers and ranges ------------------------------------------------ */

enum { NUM_OK, NUM_SYNTAX, NUM_OVERFLOW, NUM_ORDER };

/* Decimal digits, then (sizes only) one of K M G (either case), up to max. */
static int parse_num(const char *s, size_t n, int suffix,
                     unsigned long long max, unsigned long long *out)
{
    size_t i = 0;
    unsigned long long v = 0;
    int over = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (max - d) / 10)
            over = 1;
        else
            v = v * 10 + d;
    }
    if (i == 0)
        return NUM_SYNTAX;
    if (i < n) {
        int shift = 0;
        if (suffix && i + 1 == n) {
            switch (s[i]) {
            case 'K': case 'k': shift = 10; break;
            case 'M': case 'm': shift = 20; break;
            case 'G': case 'g': shift = 30; break;
            default: break;
            }
        }
        if (!shift)
            return NUM_SYNTAX;
        if (v > (max >> shift))
            over = 1;
        else
            v <<= shift;
    }
    if (over)
        return NUM_OVERFLOW;
    *out = v;
    return NUM_OK;
}

/* "n", "lo-hi", "lo-*" or "*"; "*" alone is any_lo-max. */
static int parse_range(const char *s, size_t n, int suffix,
                       unsigned long long any_lo, unsigned long long max,
                       unsigned long long *lo, unsigned long long *hi)
{
    if (n == 1 && s[0] == '*') {
        *lo = any_lo;
        *hi = max;
        return NUM_OK;
    }
    const char *dash = memchr(s, '-', n);
    size_t ln = dash ? (size_t)(dash - s) : n;
    int st = parse_num(s, ln, suffix, max, lo);
    if (st == NUM_SYNTAX)
        return st;
    int st2 = NUM_OK;
    if (!dash)
        *hi = *lo;
    else if (n - ln - 1 == 1 && dash[1] == '*')
        *hi = max;
    else
        st2 = parse_num(dash + 1, n - ln - 1, suffix, max, hi);
    if (st2 != NUM_OK)
        return st2;
    if (st != NUM_OK)
        return st;
    return *lo > *hi ? NUM_ORDER : NUM_OK;
}

/* Powers of ten that a double holds exactly. */
static const double pow10_exact[] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

#define GAIN_MAX 1e6
#define GAIN_MIN 1e-6 /* smaller gains are 0 */

/*
 * A gain: digits [. digits] [e [+-] digits], rounded to 3 significant
 * digits (half up), the precision the writer prints with %.3g: so a parsed
 * table written and read again gives the same doubles. Locale-free, unlike
 * strtod. The value is m * 10^e with m < 1000, and both are exact doubles,
 * so one division or multiplication rounds it correctly, as strtod would.
 */
static int parse_gain(const char *s, size_t n, double *out)
{
    size_t i = 0;
    int digits = 0, point = -1;
    int sig[4] = {0, 0, 0, 0}, nsig = 0;
    long x = 0; /* the value is 0.d1d2d3... * 10^x */
    for (; i < n; i++) {
        if (s[i] == '.' && point < 0) {
            point = 1;
            continue;
        }
        if (s[i] < '0' || s[i] > '9')
            break;
        digits++;
        int d = s[i] - '0';
        if (nsig == 0 && d == 0) {
            if (point > 0)
                x--;  /* 0.0d = 0.d * 10^-1 */
            continue;
        }
        if (nsig < 4)
            sig[nsig] = d;
        nsig++;
        if (point < 0 && x < 100000)
            x++;
    }
    if (digits == 0)
        return NUM_SYNTAX;
    if (i < n) {
        if (s[i] != 'e' && s[i] != 'E')
            return NUM_SYNTAX;
        i++;
        int neg = 0;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            neg = s[i++] == '-';
        size_t e0 = i;
        long e = 0;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            if (e < 100000)
                e = e * 10 + (s[i] - '0');
        if (i == e0 || i < n)
            return NUM_SYNTAX;
        x += neg ? -e : e;
    }
    if (nsig == 0) {
        *out = 0.0;
        return NUM_OK;
    }
    long m = sig[0] * 100 + sig[1] * 10 + sig[2];
    if (sig[3] >= 5)
        m++;
    long e = x - 3;
    if (m == 1000) {
        m = 100;
        e++;
    }
    if (e > 10)
        return NUM_OVERFLOW;
    if (e < -20) {
        *out = 0.0;
        return NUM_OK;
    }
    double v = e >= 0 ? (double)m * pow10_exact[e] : (double)m / pow10_exact[-e];
    if (v > GAIN_MAX)
        return NUM_OVERFLOW;
    *out = v < GAIN_MIN ? 0.0 : v;
    return NUM_OK;
}

/* ---- formatting -------------------------------------------------------- */

/* Bytes with K/M/G where exact. */
static void fmt_size(char *b, size_t len, size_t v)
{
    static const char suf[] = "GMK";
    for (int i = 0; i < 3; i++) {
        unsigned shift = 30u - 10u * (unsigned)i;
        size_t unit = (size_t)1 << shift;
        if (v != 0 && v % unit == 0) {
            snprintf(b, len, "%zu%c", v >> shift, suf[i]);
            return;
        }
    }
    snprintf(b, len, "%zu", v);
}

static void fmt_urange(char *b, size_t len, unsigned lo, unsigned hi)
{
    if (lo == hi)
        snprintf(b, len, "%u", lo);
    else if (hi == NC_TUNE_ANY_U)
        snprintf(b, len, "%u-*", lo);
    else
        snprintf(b, len, "%u-%u", lo, hi);
}

static void fmt_zrange(char *b, size_t len, size_t lo, size_t hi)
{
    char l[32], h[32];
    fmt_size(l, sizeof l, lo);
    fmt_size(h, sizeof h, hi);
    if (lo == hi)
        snprintf(b, len, "%s", l);
    else if (hi == NC_TUNE_ANY_Z)
        snprintf(b, len, lo == 0 ? "*" : "%s-*", l);
    else
        snprintf(b, len, "%s-%s", l, h);
}

/* %.3g with a '.' whatever the locale says, so the parser reads it back. */
static void fmt_gain(char *b, size_t len, double g)
{
    char t[64], *o = b;
    snprintf(t, sizeof t, "%.3g", g);
    int in_point = 0;
    for (const char *c = t; *c && (size_t)(o - b) + 1 < len; c++) {
        int plain = (*c >= '0' && *c <= '9') || *c == 'e' || *c == '+' ||
                    *c == '-' || *c == 'n' || *c == 'a' || *c == 'i' ||
                    *c == 'f';
        if (plain) {
            *o++ = *c;
            in_point = 0;
        } else if (!in_point) {
            *o++ = '.';
            in_point = 1;
        }
    }
    *o = '\0';
}

/* " l3=2-* l3ppd=1-8 ..." for the level keys a rule has, in key order;
 * returns the bytes written (b always terminated). */
static int fmt_levels(char *b, size_t len, const nc__tune_rule_t *r)
{
    int o = 0;
    b[0] = '\0';
    for (int k = K_L1; k <= K_PKGPPD && (size_t)o < len; k++) {
        int rpd, l = key_level(k, &rpd);
        unsigned lo = rpd ? r->rpd_lo[l] : r->lv_lo[l];
        unsigned hi = rpd ? r->rpd_hi[l] : r->lv_hi[l];
        if (hi == 0)
            continue;
        char v[32];
        fmt_urange(v, sizeof v, lo, hi);
        o += snprintf(b + o, len - (size_t)o, " %s=%s", key_names[k], v);
    }
    return (size_t)o < len ? o : (int)len - 1;
}

/* " over=0", " over=1", " over=0-1" for a rule with the key; "" without. */
static const char *fmt_over(unsigned over)
{
    return over == 1 ? " over=0" : over == 2 ? " over=1"
           : over == 3 ? " over=0-1" : "";
}

/* "p=.. size=..", then nodes/ppn, the level keys and over when they narrow
 * the rule: the part of a rule that says where it applies. */
static void fmt_where(char *b, size_t len, const nc__tune_rule_t *r)
{
    char p[32], z[64], nd[32], pp[32];
    fmt_urange(p, sizeof p, r->p_lo, r->p_hi);
    fmt_zrange(z, sizeof z, r->size_lo, r->size_hi);
    int o = snprintf(b, len, "p=%s size=%s", p, z);
    if (r->nodes_lo != 1 || r->nodes_hi != NC_TUNE_ANY_U) {
        fmt_urange(nd, sizeof nd, r->nodes_lo, r->nodes_hi);
        o += snprintf(b + o, len - (size_t)o, " nodes=%s", nd);
    }
    if (r->ppn_lo != 1 || r->ppn_hi != NC_TUNE_ANY_U) {
        fmt_urange(pp, sizeof pp, r->ppn_lo, r->ppn_hi);
        o += snprintf(b + o, len - (size_t)o, " ppn=%s", pp);
    }
    if ((size_t)o < len)
        o += fmt_levels(b + o, len - (size_t)o, r);
    if ((size_t)o < len)
        snprintf(b + o, len - (size_t)o, "%s", fmt_over(r->over));
}

int nc__tune_format_rule(const nc__tune_rule_t *r, char *buf, size_t len)
{
    if (!r || (unsigned)r->coll >= NC_COLL_COUNT ||
        (unsigned)r->ch.alg >= NC_ALG_COUNT || nc__algs[r->ch.alg].coll != r->coll)
        return -1;
    char p[96], z[96], nd[40], pp[40], v[80];
    /* columns padded as in tune/defaults.txt, so written tables line up */
    fmt_urange(v, sizeof v, r->p_lo, r->p_hi);
    snprintf(p, sizeof p, "p=%s", v);
    fmt_zrange(v, sizeof v, r->size_lo, r->size_hi);
    snprintf(z, sizeof z, "size=%s", v);
    char line[512];
    int o = snprintf(line, sizeof line, "%-10s %-6s %-13s", coll_names[r->coll],
                     p, z);
    if (r->nodes_lo != 1 || r->nodes_hi != NC_TUNE_ANY_U) {
        fmt_urange(nd, sizeof nd, r->nodes_lo, r->nodes_hi);
        o += snprintf(line + o, sizeof line - (size_t)o, " nodes=%s", nd);
    }
    if (r->ppn_lo != 1 || r->ppn_hi != NC_TUNE_ANY_U) {
        fmt_urange(pp, sizeof pp, r->ppn_lo, r->ppn_hi);
        o += snprintf(line + o, sizeof line - (size_t)o, " ppn=%s", pp);
    }
    o += fmt_levels(line + o, sizeof line - (size_t)o, r);
    o += snprintf(line + o, sizeof line - (size_t)o, "%s", fmt_over(r->over));
    o += snprintf(line + o, sizeof line - (size_t)o, " alg=%s",
                  nc__algs[r->ch.alg].name);
    unsigned mask = alg_key_mask(r->ch.alg);
    if (mask & (1u << K_F)) {
        fmt_size(v, sizeof v, r->ch.f);
        o += snprintf(line + o, sizeof line - (size_t)o, " f=%s", v);
    }
    if (mask & (1u << K_S))
        o += snprintf(line + o, sizeof line - (size_t)o, " s=%u", r->ch.s);
    if (mask & (1u << K_Q))
        o += snprintf(line + o, sizeof line - (size_t)o, " q=%u", r->ch.q);
    if (mask & (1u << K_TREE)) {
        const char *t = numacoll_tree_name((numacoll_tree_kind_t)r->ch.tree);
        o += snprintf(line + o, sizeof line - (size_t)o, " tree=%s",
                      t ? t : "?");
    }
    if (mask & (1u << K_K))
        o += snprintf(line + o, sizeof line - (size_t)o, " k=%u", r->ch.k);
    if (r->ch.ku)
        o += snprintf(line + o, sizeof line - (size_t)o, " ku=%u", r->ch.ku);
    for (int k = K_L1T; k <= K_TOPT; k++) {
        uint16_t lt = r->ch.lt[key_lt_slot(k)];
        const char *t = numacoll_tree_name((numacoll_tree_kind_t)nc__lt_kind(lt));
        if (!lt || !t)
            continue;
        o += snprintf(line + o, sizeof line - (size_t)o, " %s=%s",
                      key_names[k], t);
        if (nc__lt_kind(lt) >= NUMACOLL_TREE_KARY)
            o += snprintf(line + o, sizeof line - (size_t)o, ":%d",
                          nc__lt_radix(lt));
    }
    if (r->ch.relay)
        o += snprintf(line + o, sizeof line - (size_t)o, " relay=1");
    if (r->ch.copy != NC_COPY_AUTO && nc__copy_name(r->ch.copy))
        o += snprintf(line + o, sizeof line - (size_t)o, " copy=%s",
                      nc__copy_name(r->ch.copy));
    if (r->ch.decline)
        o += snprintf(line + o, sizeof line - (size_t)o, " decline=1");
    if (r->gain != 0.0) {
        fmt_gain(v, sizeof v, r->gain);
        o += snprintf(line + o, sizeof line - (size_t)o, " gain=%s", v);
    }
    if (buf && len)
        snprintf(buf, len, "%s", line);
    return o;
}

int nc__tune_write(const nc__tune_table_t *tab, const char *header, FILE *to)
{
    if (!to)
        return -1;
    if (header) {
        const char *h = header;
        while (*h) {
            size_t n = strcspn(h, "\n");
            if (n)
                fprintf(to, "# %.*s\n", (int)n, h);
            else
                fputs("#\n", to);
            h += n;
            if (*h == '\n')
                h++;
        }
    }
    if (tab && tab->levels) {
        char lv[64];
        if (numacoll_levels_format(tab->levels, lv, sizeof lv) != 0)
            return -1;
        fprintf(to, "levels     %s\n", lv);
    }
    for (int i = 0; tab && i < tab->n; i++) {
        char line[512];
        if (nc__tune_format_rule(&tab->rules[i], line, sizeof line) < 0)
            return -1;
        fprintf(to, "%s\n", line);
    }
    return ferror(to) || fflush(to) != 0 ? -1 : 0;
}

/* ---- tables ------------------------------------------------------------ */

void nc__tune_free(nc__tune_table_t *tab)
{
    if (!tab)
        return;
    free(tab->rules);
    tab->rules = NULL;
    tab->n = tab->cap = 0;
    tab->levels = tab->levels_line = 0;
}

int nc__tune_add(nc__tune_table_t *tab, const nc__tune_rule_t *r)
{
    if (!tab || !r || tab->n >= NC_TUNE_MAX_RULES)
        return -1;
    if (tab->n == tab->cap) {
        int cap = tab->cap ? tab->cap * 2 : 16;
        if (cap > NC_TUNE_MAX_RULES)
            cap = NC_TUNE_MAX_RULES;
        nc__tune_rule_t *nr = realloc(tab->rules, (size_t)cap * sizeof *nr);
        if (!nr)
            return -1;
        tab->rules = nr;
        tab->cap = cap;
    }
    tab->rules[tab->n++] = *r;
    return 0;
}

/* ---- the parser -------------------------------------------------------- */

typedef struct tok {
    const char *s;
    size_t n;
    int col;
} tok_t;

typedef struct parser {
    errsink_t *es;
    nc__tune_table_t *out;
    int line;
    int full_reported;  /* "at most NC_TUNE_MAX_RULES rules" said once */
    int oom;
} parser_t;

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* Why no team of p = plo..phi ranks spans dlo..dhi domains of one level
 * with at most rlo..rhi ranks in one (keys dk, rk), or NULL. Such a team
 * has domains <= p, most <= p, domains - 1 + most <= p (the fullest domain
 * and one rank in each other) and p <= domains * most. */
static const char *shape_unreachable(const char *p, unsigned plo,
                                     unsigned phi, const char *dk,
                                     unsigned dlo, unsigned dhi,
                                     const char *rk, unsigned rlo,
                                     unsigned rhi, char *why, size_t len)
{
    char d[32], m[32];
    fmt_urange(d, sizeof d, dlo, dhi);
    fmt_urange(m, sizeof m, rlo, rhi);
    if (dlo > phi)
        snprintf(why, len, "no team of p=%s spans %s=%s", p, dk, d);
    else if (rlo > phi)
        snprintf(why, len, "no team of p=%s has %s=%s", p, rk, m);
    else if ((unsigned long long)dlo + rlo - 1 > phi)
        snprintf(why, len, "no team of p=%s spans %s=%s with %s=%s", p, dk, d,
                 rk, m);
    else if ((unsigned long long)dhi * rhi < plo)
        snprintf(why, len, "no team of p=%s fits %s=%s with %s=%s", p, dk, d,
                 rk, m);
    else
        return NULL;
    return why;
}

/* The "why" of an unreachable rule, or NULL: by size for Barrier, then by
 * the team's shape at NUMA (nodes, ppn) and at each level it names (an
 * absent key of a pair is 1-*). */
static const char *unreachable(const nc__tune_rule_t *r, char *why, size_t len)
{
    char p[32], z[64];
    fmt_urange(p, sizeof p, r->p_lo, r->p_hi);
    if (r->coll == NC_COLL_BARRIER && r->size_lo > 0) {
        fmt_zrange(z, sizeof z, r->size_lo, r->size_hi);
        snprintf(why, len, "barrier looks up size 0 only, not size=%s", z);
        return why;
    }
    if (shape_unreachable(p, r->p_lo, r->p_hi, "nodes", r->nodes_lo,
                          r->nodes_hi, "ppn", r->ppn_lo, r->ppn_hi, why, len))
        return why;
    for (int i = 0; i < N_LEVEL_KEYS; i++) {
        int l = level_keys[i];
        if (!r->lv_hi[l] && !r->rpd_hi[l])
            continue;
        unsigned dlo = r->lv_hi[l] ? r->lv_lo[l] : 1,
                 dhi = r->lv_hi[l] ? r->lv_hi[l] : NC_TUNE_ANY_U,
                 rlo = r->rpd_hi[l] ? r->rpd_lo[l] : 1,
                 rhi = r->rpd_hi[l] ? r->rpd_hi[l] : NC_TUNE_ANY_U;
        if (shape_unreachable(p, r->p_lo, r->p_hi, key_names[K_L1 + 2 * i],
                              dlo, dhi, key_names[K_L1 + 2 * i + 1], rlo, rhi,
                              why, len))
            return why;
    }
    return NULL;
}

/* "a, b or c" from a list of names. */
static void name_list(char *b, size_t len, const char *const *names, int n)
{
    size_t o = 0;
    b[0] = '\0';
    for (int i = 0; i < n && o < len; i++)
        o += (size_t)snprintf(b + o, len - o, "%s%s",
                              i == 0 ? "" : i == n - 1 ? " or " : ", ",
                              names[i]);
}

static const char *tree_name(int kind)
{
    return numacoll_tree_name((numacoll_tree_kind_t)kind);
}

/* "expected <noun> (a, b or c), found '<tok>'" for a value naming none of
 * the n things name(0..n-1) calls. */
static void expect_one_of(errsink_t *es, int line, int col, const char *noun,
                          const char *(*name)(int), int n, const char *tok,
                          size_t len)
{
    const char *names[16];
    char list[160], what[200];
    if (n > 16)
        n = 16;
    for (int k = 0; k < n; k++)
        names[k] = name(k);
    name_list(list, sizeof list, names, n);
    snprintf(what, sizeof what, "%s (%s)", noun, list);
    expect(es, line, col, what, tok, len);
}

/* "flat", "chain", "kary:K" or "knomial:K" (K in lo..hi) as an NC_LT
 * value; 0 when v is none of them. */
static uint16_t parse_level_tree(const char *v, size_t vn,
                                 unsigned long long lo, unsigned long long hi)
{
    const char *colon = memchr(v, ':', vn);
    size_t nn = colon ? (size_t)(colon - v) : vn;
    char name[16];
    if (nn >= sizeof name)
        return 0;
    memcpy(name, v, nn);
    name[nn] = '\0';
    int kind = numacoll_tree_parse(name);
    if (kind == NUMACOLL_TREE_FLAT || kind == NUMACOLL_TREE_CHAIN)
        return colon ? 0 : NC_LT(kind, 0);
    if ((kind != NUMACOLL_TREE_KARY && kind != NUMACOLL_TREE_KNOMIAL) ||
        !colon)
        return 0;
    unsigned long long k;
    if (parse_num(colon + 1, vn - nn - 1, 0, UINT_MAX, &k) != NUM_OK ||
        k < lo || k > hi)
        return 0;
    return NC_LT(kind, k);
}

static void parse_rule(parser_t *ps, const tok_t *tk, int nt)
{
    errsink_t *es = ps->es;
    const int L = ps->line;
    const int before = es->count;
    char what[512];

    int coll = -1;
    for (int c = 0; c < NC_COLL_COUNT; c++)
        if (strlen(coll_names[c]) == tk[0].n &&
            memcmp(coll_names[c], tk[0].s, tk[0].n) == 0)
            coll = c;
    if (coll < 0) {
        /* the keys and algorithms that follow depend on it: stop here */
        char names[128];
        name_list(names, sizeof names, coll_names, NC_COLL_COUNT);
        snprintf(what, sizeof what, "a collective (%s)", names);
        expect(es, L, tk[0].col, what, tk[0].s, tk[0].n);
        return;
    }

    /* First the algorithm and q: what other keys mean depends on them. The
     * first alg= and q= decide; a second one is reported as a duplicate. */
    int alg = -1, alg_seen = 0, q_seen = 0, q_ok = 0;
    unsigned long long qv = 0;
    for (int i = 1; i < nt; i++) {
        const char *eq = memchr(tk[i].s, '=', tk[i].n);
        if (!eq)
            continue;
        size_t kn = (size_t)(eq - tk[i].s), vn = tk[i].n - kn - 1;
        if (kn == 3 && memcmp(tk[i].s, "alg", 3) == 0 && !alg_seen) {
            alg_seen = 1;
            char name[64];
            if (vn < sizeof name) {
                memcpy(name, eq + 1, vn);
                name[vn] = '\0';
                alg = nc__alg_find((nc__coll_t)coll, name);
            }
        }
        if (kn == 1 && tk[i].s[0] == 'q' && !q_seen) {
            q_seen = 1;
            int prm = key_param((nc__coll_t)coll, K_Q);
            unsigned long long lo, hi;
            if (prm >= 0) {
                key_bounds(prm, K_Q, &lo, &hi);
                q_ok = parse_num(eq + 1, vn, 0, UINT_MAX, &qv) == NUM_OK &&
                       qv >= lo && qv <= hi;
            }
        }
    }
    unsigned alg_mask = alg >= 0 ? alg_key_mask(alg) : 0;
    char alg_keys[64] = "";
    if (alg >= 0) {
        const char *kn[K_COUNT];
        int nk = 0;
        for (int k = K_F; k <= K_K; k++)
            if (alg_mask & (1u << k))
                kn[nk++] = key_names[k];
        size_t o = 0;
        for (int i = 0; i < nk; i++)
            o += (size_t)snprintf(alg_keys + o, sizeof alg_keys - o, "%s%s",
                                  i ? ", " : "", kn[i]);
        if (!nk)
            snprintf(alg_keys, sizeof alg_keys, "no parameters");
    }

    nc__tune_rule_t r;
    memset(&r, 0, sizeof r);
    r.coll = (nc__coll_t)coll;
    r.nodes_lo = r.ppn_lo = 1;
    r.nodes_hi = r.ppn_hi = NC_TUNE_ANY_U;
    r.ch.tree = -1;
    r.line = L;
    if (coll == NC_COLL_BARRIER) {
        r.size_lo = 0;
        r.size_hi = NC_TUNE_ANY_Z;
    }
    unsigned seen = 0;
    int numa_col = 0;  /* a key that needs tree=numa in a Bcast rule */
    const tok_t *numa_tok = NULL;

    for (int i = 1; i < nt; i++) {
        const tok_t *t = &tk[i];
        const char *eq = memchr(t->s, '=', t->n);
        if (!eq || eq == t->s) {
            expect(es, L, t->col, "key=value", t->s, t->n);
            continue;
        }
        size_t kn = (size_t)(eq - t->s);
        const char *v = eq + 1;
        size_t vn = t->n - kn - 1;
        int vcol = t->col + (int)kn + 1;
        int key = -1;
        for (int k = 0; k < K_COUNT; k++)
            if (strlen(key_names[k]) == kn && memcmp(key_names[k], t->s, kn) == 0)
                key = k;
        if (key < 0) {
            char names[256];
            name_list(names, sizeof names, key_names, K_COUNT);
            snprintf(what, sizeof what, "a key (%s)", names);
            expect(es, L, t->col, what, t->s, kn);
            continue;
        }
        if (seen & (1u << key)) {
            expect(es, L, t->col, "each key once per rule", t->s, kn);
            continue;
        }
        seen |= 1u << key;
        if (key >= K_F && key <= K_K && alg >= 0 && !(alg_mask & (1u << key))) {
            snprintf(what, sizeof what, "a key of alg=%s (%s)",
                     nc__algs[alg].name, alg_keys);
            expect(es, L, t->col, what, t->s, kn);
            continue;
        }

        unsigned long long lo, hi, x;
        int st;
        switch (key) {
        case K_P:
        case K_NODES:
        case K_PPN:
        case K_L1: case K_L1PPD: case K_L2: case K_L2PPD:
        case K_L3: case K_L3PPD: case K_PKG: case K_PKGPPD: {
            static const char *const noun[] = {
                [K_P] = "ranks", [K_NODES] = "NUMA nodes",
                [K_PPN] = "ranks per NUMA node"};
            char lnoun[64];
            int rpd = 0, lev = key >= K_L1 ? key_level(key, &rpd) : 0;
            if (key >= K_L1)
                snprintf(lnoun, sizeof lnoun, rpd ? "ranks per %s domain"
                                                  : "%s domains",
                         level_nouns[lev]);
            st = parse_range(v, vn, 0, 1, UINT_MAX, &lo, &hi);
            if (st == NUM_SYNTAX) {
                snprintf(what, sizeof what,
                         "a range of %s (n, lo-hi, lo-* or *)",
                         key >= K_L1 ? lnoun : noun[key]);
                expect(es, L, vcol, what, v, vn);
            } else if (st == NUM_OVERFLOW) {
                snprintf(what, sizeof what, "numbers at most %u", UINT_MAX);
                expect(es, L, vcol, what, v, vn);
            } else if (st == NUM_ORDER)
                expect(es, L, vcol, "a range lo-hi with lo <= hi", v, vn);
            else if (lo < 1) {
                snprintf(what, sizeof what, "%s of at least 1", key_names[key]);
                expect(es, L, vcol, what, v, vn);
            } else if (key == K_P) {
                r.p_lo = (unsigned)lo;
                r.p_hi = (unsigned)hi;
            } else if (key == K_NODES) {
                r.nodes_lo = (unsigned)lo;
                r.nodes_hi = (unsigned)hi;
            } else if (key == K_PPN) {
                r.ppn_lo = (unsigned)lo;
                r.ppn_hi = (unsigned)hi;
            } else if (rpd) {
                r.rpd_lo[lev] = (unsigned)lo;
                r.rpd_hi[lev] = (unsigned)hi;
            } else {
                r.lv_lo[lev] = (unsigned)lo;
                r.lv_hi[lev] = (unsigned)hi;
            }
            break;
        }
        case K_SIZE:
            st = parse_range(v, vn, 1, 0, SIZE_MAX, &lo, &hi);
            if (st == NUM_SYNTAX)
                expect(es, L, vcol,
                       "a range of bytes (n, lo-hi, lo-* or *; K, M, G "
                       "suffixes)", v, vn);
            else if (st == NUM_OVERFLOW) {
                snprintf(what, sizeof what, "sizes at most %zu", (size_t)SIZE_MAX);
                expect(es, L, vcol, what, v, vn);
            } else if (st == NUM_ORDER)
                expect(es, L, vcol, "a range lo-hi with lo <= hi", v, vn);
            else if (alg >= 0 && hi > nc__algs[alg].max_bytes) {
                snprintf(what, sizeof what,
                         "size at most %zu (%s carries at most %zu bytes)",
                         nc__algs[alg].max_bytes, nc__algs[alg].name,
                         nc__algs[alg].max_bytes);
                expect(es, L, vcol, what, v, vn);
            } else {
                r.size_lo = (size_t)lo;
                r.size_hi = (size_t)hi;
            }
            break;
        case K_ALG:
            if (alg < 0) {
                const char *names[NC_ALG_COUNT];
                int n = 0;
                for (int a = 0; a < NC_ALG_COUNT; a++)
                    if ((int)nc__algs[a].coll == coll)
                        names[n++] = nc__algs[a].name;
                char list[256];
                name_list(list, sizeof list, names, n);
                snprintf(what, sizeof what, "an algorithm of %s (%s)",
                         coll_names[coll], list);
                expect(es, L, vcol, what, v, vn);
            } else
                r.ch.alg = (nc__alg_t)alg;
            break;
        case K_TREE: {
            char name[16];
            int kind = -1;
            if (vn < sizeof name) {
                memcpy(name, v, vn);
                name[vn] = '\0';
                kind = numacoll_tree_parse(name);
            }
            if (kind < 0)
                expect_one_of(es, L, vcol, "a tree", tree_name,
                              NUMACOLL_TREE_COUNT, v, vn);
            else
                r.ch.tree = kind;
            break;
        }
        case K_COPY: {
            /* optional for every collective that moves data; auto if absent */
            int kind = nc__copy_find(v, vn);
            if (coll == NC_COLL_BARRIER)
                expect(es, L, t->col,
                       "a key of barrier (copy= is for collectives that move "
                       "data)", t->s, kn);
            else if (kind < 0)
                expect_one_of(es, L, vcol, "a copy variant", nc__copy_name,
                              NC_COPY_COUNT, v, vn);
            else
                r.ch.copy = kind;
            break;
        }
        case K_KU: {
            /* optional; only where a Reduce tree has heads to join */
            int red = coll == NC_COLL_REDUCE || coll == NC_COLL_ALLREDUCE;
            if (!red || (alg >= 0 && !(alg_mask & (1u << K_K)))) {
                expect(es, L, t->col,
                       "ku= only with k= of reduce or allreduce (the radix "
                       "between the heads of the levels)", t->s, kn);
                break;
            }
            key_bounds(PRM_reduce_radix, K_K, &lo, &hi);
            st = parse_num(v, vn, 0, UINT_MAX, &x);
            if (st != NUM_OK || x < lo || x > hi) {
                snprintf(what, sizeof what, "ku from %llu to %llu "
                         "(reduce_radix)", lo, hi);
                expect(es, L, vcol, what, v, vn);
            } else
                r.ch.ku = (unsigned)x;
            break;
        }
        case K_L1T: case K_L2T: case K_L3T: case K_NUMAT: case K_PKGT:
        case K_TOPT: {
            /* optional; wherever the rule's trees have a radix */
            int prm = key_param((nc__coll_t)coll, K_K);
            if (prm < 0 || (alg >= 0 && !(alg_mask & (1u << K_K)))) {
                snprintf(what, sizeof what, "%.*s= only with k= (a rule "
                         "whose trees follow the levels)", (int)kn, t->s);
                expect(es, L, t->col, what, t->s, kn);
                break;
            }
            key_bounds(prm, K_K, &lo, &hi);
            uint16_t lt = parse_level_tree(v, vn, lo, hi);
            if (!lt) {
                snprintf(what, sizeof what, "a level tree (flat, chain, "
                         "kary:K or knomial:K, K from %llu to %llu)", lo, hi);
                expect(es, L, vcol, what, v, vn);
                break;
            }
            r.ch.lt[key_lt_slot(key)] = lt;
            if (coll == NC_COLL_BCAST && !numa_tok) {
                numa_tok = t;
                numa_col = t->col;
            }
            break;
        }
        case K_RELAY:
            if (coll != NC_COLL_BCAST ||
                (alg >= 0 && alg != NC_ALG_BCAST_PIPELINED)) {
                expect(es, L, t->col, "relay= only in a bcast rule of "
                       "alg=pipelined", t->s, kn);
                break;
            }
            if (vn != 1 || (v[0] != '0' && v[0] != '1')) {
                expect(es, L, vcol, "relay 0 or 1", v, vn);
                break;
            }
            r.ch.relay = (unsigned)(v[0] - '0');
            if (r.ch.relay && !numa_tok) {
                numa_tok = t;
                numa_col = t->col;
            }
            break;
        case K_OVER:
            /* a bit per verdict: 0-1 (or *) both, the same as no key but
             * written back as given */
            st = parse_range(v, vn, 0, 0, UINT_MAX, &lo, &hi);
            if (st == NUM_OK && v[0] == '*')
                hi = 1;
            if (st != NUM_OK || hi > 1)
                expect(es, L, vcol, "over 0, 1 or 0-1 (the team's "
                       "oversubscription verdict)", v, vn);
            else
                r.over = (hi == 1 ? 2u : 0u) | (lo == 0 ? 1u : 0u);
            break;
        case K_DECLINE:
            if (vn != 1 || (v[0] != '0' && v[0] != '1')) {
                expect(es, L, vcol, "decline 0 or 1", v, vn);
                break;
            }
            r.ch.decline = (unsigned)(v[0] - '0');
            break;
        case K_GAIN: {
            double g = 0;
            st = parse_gain(v, vn, &g);
            if (st != NUM_OK)
                expect(es, L, vcol, "a gain from 0 to 1000000", v, vn);
            else
                r.gain = g;
            break;
        }
        default: { /* f s q k: numbers in the range of their parameter */
            int prm = key_param((nc__coll_t)coll, key);
            int is_f = key == K_F;
            st = parse_num(v, vn, is_f, is_f ? SIZE_MAX : UINT_MAX, &x);
            if (st == NUM_SYNTAX) {
                expect(es, L, vcol,
                       is_f ? "a number of bytes (K, M, G suffixes)"
                            : "a number", v, vn);
                break;
            }
            if (st == NUM_OVERFLOW) {
                snprintf(what, sizeof what, "a number at most %llu",
                         is_f ? (unsigned long long)SIZE_MAX
                              : (unsigned long long)UINT_MAX);
                expect(es, L, vcol, what, v, vn);
                break;
            }
            if (prm < 0)  /* no algorithm of coll takes it: alg said so */
                break;
            key_bounds(prm, key, &lo, &hi);
            int mult64 = is_f && coll == NC_COLL_BCAST;
            if (x < lo || x > hi || (mult64 && x % 64 != 0)) {
                snprintf(what, sizeof what, "%s%s from %llu to %llu (%s)",
                         key_names[key], mult64 ? " a multiple of 64" : "", lo,
                         hi, prms[prm].name);
                expect(es, L, vcol, what, v, vn);
                break;
            }
            if (key == K_S && q_ok && x % qv != 0) {
                snprintf(what, sizeof what, "s a multiple of q=%llu", qv);
                expect(es, L, vcol, what, v, vn);
                break;
            }
            if (key == K_F)
                r.ch.f = (size_t)x;
            else if (key == K_S)
                r.ch.s = (unsigned)x;
            else if (key == K_Q)
                r.ch.q = (unsigned)x;
            else
                r.ch.k = (unsigned)x;
            break;
        }
        }
    }

    /* Missing keys, all reported just past the rule's last token. */
    int endcol = tk[nt - 1].col + (int)tk[nt - 1].n;
    unsigned need = (1u << K_P) | (1u << K_ALG) |
                    (coll == NC_COLL_BARRIER ? 0 : 1u << K_SIZE) | alg_mask;
    for (int k = 0; k < K_COUNT; k++)
        if ((need & (1u << k)) && !(seen & (1u << k))) {
            snprintf(what, sizeof what, "%s=...", key_names[k]);
            expect(es, L, endcol, what, "end of line", 11);
        }

    /* Level trees and the relay shape the numa tree only: in a Bcast rule
     * with another tree they would be silently void. */
    if (numa_tok && es->count == before && r.ch.tree != NUMACOLL_TREE_NUMA) {
        size_t kn = (size_t)((const char *)memchr(numa_tok->s, '=',
                                                  numa_tok->n) - numa_tok->s);
        snprintf(what, sizeof what, "%.*s= only with tree=numa (it shapes "
                 "the hierarchical tree)", (int)kn, numa_tok->s);
        expect(es, L, numa_col, what, numa_tok->s, kn);
    }
    if (es->count != before)
        return;
    char why[256];
    if (unreachable(&r, why, sizeof why)) {
        sink_add(es, "%s:%d: rule is unreachable: %s", es->source, L, why);
        return;
    }
    if (ps->out->n >= NC_TUNE_MAX_RULES) {
        if (!ps->full_reported) {
            snprintf(what, sizeof what, "at most %d rules", NC_TUNE_MAX_RULES);
            expect(es, L, tk[0].col, what, tk[0].s, tk[0].n);
        }
        ps->full_reported = 1;
        return;
    }
    if (nc__tune_add(ps->out, &r) != 0)
        ps->oom = 1;
}

/* "levels <list>": the table's level list, once per table. */
static void parse_levels(parser_t *ps, const tok_t *tk, int nt)
{
    errsink_t *es = ps->es;
    const int L = ps->line;
    if (nt < 2) {
        expect(es, L, tk[0].col + 6, "a level list after levels (e.g. "
               "l3,numa)", "end of line", 11);
        return;
    }
    char list[64];
    int lv = -1;
    if (tk[1].n < sizeof list) {
        memcpy(list, tk[1].s, tk[1].n);
        list[tk[1].n] = '\0';
        lv = numacoll_levels_parse(list);
    }
    if (lv <= 0)
        expect(es, L, tk[1].col, "a level list (l1, l2, l3, numa, package, "
               "comma-separated, innermost first)", tk[1].s, tk[1].n);
    else if (nt > 2)
        expect(es, L, tk[2].col, "end of line after the level list",
               tk[2].s, tk[2].n);
    else if (ps->out->levels_line) {
        char what[64];
        snprintf(what, sizeof what, "one levels line (line %d has one)",
                 ps->out->levels_line);
        expect(es, L, tk[0].col, what, tk[0].s, tk[0].n);
    } else {
        ps->out->levels = lv;
        ps->out->levels_line = L;
    }
}

static void parse_line(parser_t *ps, const char *s, size_t n)
{
    errsink_t *es = ps->es;
    const char *nul = memchr(s, '\0', n);
    if (nul) {
        expect(es, ps->line, (int)(nul - s) + 1, "text without NUL bytes", nul,
               1);
        return;
    }
    if (n > LINE_MAX_BYTES) {
        char what[64];
        snprintf(what, sizeof what, "at most %d bytes on a line",
                 LINE_MAX_BYTES);
        expect(es, ps->line, LINE_MAX_BYTES + 1, what, s + LINE_MAX_BYTES,
               n - LINE_MAX_BYTES);
        return;
    }
    const char *hash = memchr(s, '#', n);
    if (hash)
        n = (size_t)(hash - s);
    tok_t tk[LINE_MAX_BYTES / 2 + 1];
    int nt = 0;
    for (size_t i = 0; i < n;) {
        if (is_blank(s[i])) {
            i++;
            continue;
        }
        size_t j = i;
        while (j < n && !is_blank(s[j]))
            j++;
        tk[nt].s = s + i;
        tk[nt].n = j - i;
        tk[nt].col = (int)i + 1;
        nt++;
        i = j;
    }
    if (nt && tk[0].n == 6 && memcmp(tk[0].s, "levels", 6) == 0)
        parse_levels(ps, tk, nt);
    else if (nt)
        parse_rule(ps, tk, nt);
}

static int ranges_meet(unsigned long long alo, unsigned long long ahi,
                       unsigned long long blo, unsigned long long bhi)
{
    return alo <= bhi && blo <= ahi;
}

/* A level key's range, 1-* where absent (hi == 0). */
static int opt_meet(unsigned alo, unsigned ahi, unsigned blo, unsigned bhi)
{
    return ranges_meet(ahi ? alo : 1, ahi ? ahi : NC_TUNE_ANY_U, bhi ? blo : 1,
                       bhi ? bhi : NC_TUNE_ANY_U);
}

/* The verdicts a rule's over= takes: both where the key is absent. */
static unsigned over_bits(unsigned over)
{
    return over ? over : 3u;
}

static int rules_meet(const nc__tune_rule_t *a, const nc__tune_rule_t *b)
{
    if (!(a->coll == b->coll &&
          ranges_meet(a->p_lo, a->p_hi, b->p_lo, b->p_hi) &&
          ranges_meet(a->size_lo, a->size_hi, b->size_lo, b->size_hi) &&
          ranges_meet(a->nodes_lo, a->nodes_hi, b->nodes_lo, b->nodes_hi) &&
          ranges_meet(a->ppn_lo, a->ppn_hi, b->ppn_lo, b->ppn_hi) &&
          (over_bits(a->over) & over_bits(b->over))))
        return 0;
    for (int i = 0; i < N_LEVEL_KEYS; i++) {
        int l = level_keys[i];
        if (!opt_meet(a->lv_lo[l], a->lv_hi[l], b->lv_lo[l], b->lv_hi[l]) ||
            !opt_meet(a->rpd_lo[l], a->rpd_hi[l], b->rpd_lo[l], b->rpd_hi[l]))
            return 0;
    }
    return 1;
}

int nc__tune_parse(const char *text, size_t len, const char *source,
                   nc__tune_table_t *out, char *errs, size_t errlen)
{
    if (!source)
        source = "(text)";
    errsink_t es = {.buf = errs, .len = errlen, .source = source};
    es.reserve = strlen(source) + 40;
    if (errs && errlen)
        errs[0] = '\0';
    if (!out) {
        sink_add(&es, "%s: no table to parse into", source);
        sink_finish(&es);
        return es.count;
    }
    memset(out, 0, sizeof *out);
    snprintf(out->source, sizeof out->source, "%s", source);
    if (!text)
        len = 0;

    parser_t ps = {.es = &es, .out = out};
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        ps.line++;
        parse_line(&ps, text + i, n);
        i += n + 1;
    }

    /* Overlaps, reported once per rule against the first line it meets;
     * the order of lines never matters, so each pair is looked at once. */
    for (int j = 1; j < out->n; j++)
        for (int i = 0; i < j; i++)
            if (rules_meet(&out->rules[i], &out->rules[j])) {
                char where[320];
                fmt_where(where, sizeof where, &out->rules[i]);
                sink_add(&es, "%s:%d: rule overlaps line %d (%s %s)", source,
                         out->rules[j].line, out->rules[i].line,
                         coll_names[out->rules[i].coll], where);
                break;
            }
    if (ps.oom)
        sink_add(&es, "%s: out of memory for %d rules", source, out->n + 1);

    sink_finish(&es);
    if (es.count)
        nc__tune_free(out);
    return es.count;
}

/* What a file that is not a regular one is, for the error sentence. */
static const char *file_kind(mode_t mode)
{
    return S_ISDIR(mode)    ? "a directory"
           : S_ISFIFO(mode) ? "a FIFO (named pipe)"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a regular file";
}

/* Read the whole of a regular file of at most NC_TUNE_FILE_MAX bytes into
 * *text (NUL not added). Returns 0, or -1 with the reason in why. */
static int read_tuning_file(const char *path, char **text, size_t *len,
                            char *why, size_t whylen)
{
    *text = NULL;
    *len = 0;
    struct stat st;
    char eb[128];
    /* Not even opened unless it is a regular file: opening some devices
     * acts on them (a tape rewinds when closed). */
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "it is %s; a tuning file must be a regular file",
                 file_kind(st.st_mode));
        return -1;
    }
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
     * writer, forever, inside the first collective call; it has no effect
     * on the regular file we accept. The type and size are checked again
     * on the open descriptor, so no rename between the check above and the
     * open can slip another file in. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0 || fstat(fd, &st) != 0) {
        int err = errno;
        snprintf(why, whylen, "%s", strerror_r(err, eb, sizeof eb));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, whylen, "it is %s; a tuning file must be a regular file",
                 file_kind(st.st_mode));
        close(fd);
        return -1;
    }
    if (st.st_size > (off_t)NC_TUNE_FILE_MAX) {
        snprintf(why, whylen, "it holds %jd bytes, more than the %u (1 MiB) a "
                 "tuning file may hold", (intmax_t)st.st_size,
                 NC_TUNE_FILE_MAX);
        close(fd);
        return -1;
    }
    /* One byte more than the limit: a file that grew since fstat is seen
     * growing past it instead of being cut silently. */
    size_t cap = NC_TUNE_FILE_MAX + 1, n = 0;
    char *buf = malloc((size_t)st.st_size + 1);
    size_t have = (size_t)st.st_size + 1;
    int err = buf ? 0 : ENOMEM;
    while (!err && n < cap) {
        if (n == have) {
            size_t more = have * 2 < cap ? have * 2 : cap;
            char *nb = realloc(buf, more);
            if (!nb) {
                err = ENOMEM;
                break;
            }
            buf = nb;
            have = more;
        }
        ssize_t got = read(fd, buf + n, have - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            err = errno;
        else if (got == 0)
            break;
        else
            n += (size_t)got;
    }
    close(fd);
    if (err) {
        snprintf(why, whylen, "%s", strerror_r(err, eb, sizeof eb));
        free(buf);
        return -1;
    }
    if (n > NC_TUNE_FILE_MAX) {
        snprintf(why, whylen, "it grew past the %u bytes (1 MiB) a tuning "
                 "file may hold while being read", NC_TUNE_FILE_MAX);
        free(buf);
        return -1;
    }
    *text = buf;
    *len = n;
    return 0;
}

int nc__tune_load(const char *path, nc__tune_table_t *out, char *errs,
                  size_t errlen)
{
    if (out) {
        memset(out, 0, sizeof *out);
        snprintf(out->source, sizeof out->source, "%s", path ? path : "(null)");
    }
    char *text = NULL, why[256];
    size_t len = 0;
    int rc = -1;
    if (!path)
        snprintf(why, sizeof why, "no path given");
    else
        rc = read_tuning_file(path, &text, &len, why, sizeof why);
    if (rc != 0) {
        if (errs && errlen)
            snprintf(errs, errlen, "%s: cannot read: %s\n",
                     path ? path : "(null)", why);
        return 1;
    }
    int n = nc__tune_parse(text, len, path, out, errs, errlen);
    free(text);
    return n;
}

/* ---- the built-in table ------------------------------------------------ */

static nc__tune_table_t builtin_tab;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static void builtin_init(void)
{
    static char errs[8192];
    if (nc__tune_parse(nc__tune_defaults_txt, nc__tune_defaults_len,
                       "built-in", &builtin_tab, errs, sizeof errs) != 0) {
        /* a library without defaults cannot choose anything */
        fprintf(stderr, "numacoll: the built-in tuning table "
                        "(tune/defaults.txt) is broken:\n%s", errs);
        abort();
    }
}

const nc__tune_table_t *nc__tune_builtin(void)
{
    pthread_once(&builtin_once, builtin_init);
    return &builtin_tab;
}

/* ---- resolution -------------------------------------------------------- */

/* v in a level key's range; an absent key (hi == 0) takes anything, an
 * unknown shape (v == 0) only that. */
static int opt_in(unsigned v, unsigned lo, unsigned hi)
{
    return hi == 0 || (v >= lo && v <= hi);
}

static int rule_matches(const nc__tune_rule_t *r, const nc__tune_shape_t *sh)
{
    if (!(sh->p >= r->p_lo && sh->p <= r->p_hi && sh->nodes >= r->nodes_lo &&
          sh->nodes <= r->nodes_hi && sh->ppn >= r->ppn_lo &&
          sh->ppn <= r->ppn_hi &&
          (r->over == 0 || (r->over >> (sh->over ? 1 : 0) & 1u))))
        return 0;
    for (int i = 0; i < N_LEVEL_KEYS; i++) {
        int l = level_keys[i];
        if (!opt_in(sh->dom[l], r->lv_lo[l], r->lv_hi[l]) ||
            !opt_in(sh->rpd[l], r->rpd_lo[l], r->rpd_hi[l]))
            return 0;
    }
    return 1;
}

static int by_size_lo(const void *a, const void *b)
{
    const nc__tune_rule_t *x = *(const nc__tune_rule_t *const *)a;
    const nc__tune_rule_t *y = *(const nc__tune_rule_t *const *)b;
    if (x->size_lo != y->size_lo)
        return x->size_lo < y->size_lo ? -1 : 1;
    return x < y ? -1 : x > y;  /* earlier rule first: stable */
}

typedef struct {
    nc__tune_entry_t *e;
    int n, cap;
} evec_t;

static int evec_push(evec_t *v, size_t lo, size_t hi, const nc__choice_t *ch,
                     int line, int builtin)
{
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 8;
        nc__tune_entry_t *ne = realloc(v->e, (size_t)cap * sizeof *ne);
        if (!ne)
            return -1;
        v->e = ne;
        v->cap = cap;
    }
    v->e[v->n++] = (nc__tune_entry_t){lo, hi, *ch, line, builtin};
    return 0;
}

/* [lo, hi] from the fill entries (sorted, disjoint), clipped. */
static int evec_fill(evec_t *v, size_t lo, size_t hi,
                     const nc__tune_entry_t *fill, int nfill)
{
    for (int i = 0; i < nfill; i++) {
        if (fill[i].hi < lo || fill[i].lo > hi)
            continue;
        size_t a = fill[i].lo > lo ? fill[i].lo : lo;
        size_t b = fill[i].hi < hi ? fill[i].hi : hi;
        if (evec_push(v, a, b, &fill[i].ch, fill[i].line, 1) != 0)
            return -1;
    }
    return 0;
}

/*
 * The matching rules of coll sorted by size; gaps are taken from fill
 * (NULL: left uncovered). A table made by nc__tune_add() is not checked
 * for overlaps, so a later range starts where the previous one ended.
 */
static int resolve_coll(const nc__tune_table_t *tab, nc__coll_t coll,
                        const nc__tune_shape_t *sh, int builtin,
                        const nc__tune_entry_t *fill, int nfill, evec_t *v)
{
    int m = 0;
    for (int i = 0; i < tab->n; i++)
        if (tab->rules[i].coll == coll &&
            rule_matches(&tab->rules[i], sh))
            m++;
    const nc__tune_rule_t **sel = NULL;
    if (m) {
        sel = malloc((size_t)m * sizeof *sel);
        if (!sel)
            return -1;
        m = 0;
        for (int i = 0; i < tab->n; i++)
            if (tab->rules[i].coll == coll &&
                rule_matches(&tab->rules[i], sh))
                sel[m++] = &tab->rules[i];
        qsort(sel, (size_t)m, sizeof *sel, by_size_lo);
    }
    size_t next = 0;   /* first size not yet covered */
    int done = 0;      /* covered up to SIZE_MAX */
    int rc = 0;
    for (int i = 0; i < m && !done && rc == 0; i++) {
        const nc__tune_rule_t *r = sel[i];
        if (r->size_hi < next || r->size_lo > r->size_hi)
            continue;
        size_t lo = r->size_lo > next ? r->size_lo : next;
        if (lo > next && fill)
            rc = evec_fill(v, next, lo - 1, fill, nfill);
        if (rc == 0)
            rc = evec_push(v, lo, r->size_hi, &r->ch, r->line, builtin);
        if (r->size_hi == SIZE_MAX)
            done = 1;
        else
            next = r->size_hi + 1;
    }
    if (rc == 0 && !done && fill)
        rc = evec_fill(v, next, SIZE_MAX, fill, nfill);
    free(sel);
    return rc;
}

void nc__tune_team_free(nc__tune_team_t *tt)
{
    if (!tt)
        return;
    for (int c = 0; c < NC_COLL_COUNT; c++) {
        free(tt->e[c]);
        tt->e[c] = NULL;
        tt->n[c] = 0;
    }
}

int nc__tune_resolve(const nc__tune_table_t *tab, unsigned p, unsigned nodes,
                     unsigned ppn, nc__tune_team_t *out)
{
    nc__tune_shape_t sh = {.p = p, .nodes = nodes, .ppn = ppn};
    return nc__tune_resolve_shape(tab, &sh, out);
}

int nc__tune_resolve_shape(const nc__tune_table_t *tab,
                           const nc__tune_shape_t *sh, nc__tune_team_t *out)
{
    if (!out || !sh)
        return -1;
    memset(out, 0, sizeof *out);
    const nc__tune_table_t *bt = nc__tune_builtin();
    if (!tab)
        tab = bt;
    int from_builtin = tab == bt;
    for (int c = 0; c < NC_COLL_COUNT; c++) {
        evec_t b = {0}, v = {0};
        int rc = 0;
        if (!from_builtin)
            rc = resolve_coll(bt, (nc__coll_t)c, sh, 1, NULL, 0, &b);
        if (rc == 0)
            rc = resolve_coll(tab, (nc__coll_t)c, sh, from_builtin,
                              from_builtin ? NULL : b.e, b.n, &v);
        free(b.e);
        if (rc != 0) {
            free(v.e);
            nc__tune_team_free(out);
            return -1;
        }
        out->e[c] = v.e;
        out->n[c] = v.n;
    }
    return 0;
}

const nc__tune_entry_t *nc__tune_lookup(const nc__tune_team_t *tt,
                                        nc__coll_t coll, size_t nbytes)
{
    if (!tt || (unsigned)coll >= NC_COLL_COUNT)
        return NULL;
    const nc__tune_entry_t *e = tt->e[coll];
    int lo = 0, hi = tt->n[coll] - 1, found = -1;
    /* the last entry starting at or below nbytes */
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2;
        if (e[mid].lo <= nbytes) {
            found = mid;
            lo = mid + 1;
        } else
            hi = mid - 1;
    }
    return found >= 0 && nbytes <= e[found].hi ? &e[found] : NULL;
}
