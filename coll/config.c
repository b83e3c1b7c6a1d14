/*
 * Configuration defaults and validation, both driven by NUMACOLL_PARAM_LIST
 * so that a parameter is described once for the core, the benchmark and the
 * Open MPI component; and the struct's size, which lets it grow without
 * breaking programs built against an older numacoll.h.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll/config.h"

/* Every size numacoll_config_t has had in a release, oldest first: a
 * caller built against any of them is served. A release that adds fields
 * (at the end) appends its sizeof here; the assertion below fails until it
 * does. Sizes in between are refused: they name no layout, so such a
 * struct was never filled by numacoll_config_init(). */
static const size_t known_sizes[] = {
    offsetof(numacoll_config_t, tuning_text) + sizeof(const char *), /* 0.1 */
    offsetof(numacoll_config_t, relay) + sizeof(int),                /* 0.2 */
    offsetof(numacoll_config_t, wait_policy) + sizeof(int),          /* 0.3 */
    sizeof(numacoll_config_t),                                       /* 0.4 */
};
/* The last field decides the size (with its padding): a field added after
 * node_budget must add a line above. */
_Static_assert(sizeof(numacoll_config_t) ==
                   (offsetof(numacoll_config_t, node_budget) + sizeof(size_t) +
                    _Alignof(numacoll_config_t) - 1) /
                       _Alignof(numacoll_config_t) *
                       _Alignof(numacoll_config_t),
               "numacoll_config_t grew: append its size to known_sizes");

static void fill_defaults(numacoll_config_t *cfg)
{
    cfg->struct_size = sizeof *cfg;
#define X(field, type, def, min, max, doc) cfg->field = def;
    NUMACOLL_PARAM_LIST(X)
#undef X
    cfg->topology = NULL;
    cfg->tuning_file = NULL;
    cfg->tuning_text = NULL;
}

void numacoll_config_init_size(numacoll_config_t *cfg, size_t size)
{
    if (!cfg || size < sizeof cfg->struct_size)
        return;
    numacoll_config_t d;
    fill_defaults(&d);
    d.struct_size = size;
    /* the caller's struct may be an older, smaller one: no byte past it */
    memcpy(cfg, &d, size < sizeof d ? size : sizeof d);
}

static int size_known(size_t size, char *msg, size_t msglen)
{
    for (size_t i = 0; i < sizeof known_sizes / sizeof known_sizes[0]; i++)
        if (size == known_sizes[i])
            return NUMACOLL_OK;
    if (size > sizeof(numacoll_config_t))
        snprintf(msg, msglen,
                 "numacoll: numacoll_config_t.struct_size = %zu is larger "
                 "than this library's (%zu bytes): the program was built "
                 "against a newer numacoll.h than the libnumacoll it runs "
                 "with", size, sizeof(numacoll_config_t));
    else
        snprintf(msg, msglen,
                 "numacoll: numacoll_config_t.struct_size = %zu is no size "
                 "of this struct (%zu bytes): the config was not filled by "
                 "numacoll_config_init()", size, sizeof(numacoll_config_t));
    return NUMACOLL_ERR_ARG;
}

int nc__config_import(numacoll_config_t *out, const numacoll_config_t *in,
                      char *msg, size_t msglen)
{
    fill_defaults(out);
    if (!in)
        return NUMACOLL_OK;
    int rc = size_known(in->struct_size, msg, msglen);
    if (rc != NUMACOLL_OK)
        return rc;
    memcpy(out, in, in->struct_size);
    out->struct_size = sizeof *out;
    return NUMACOLL_OK;
}

static int nc__param_unset(int type, long long v, long long def, long long min,
                    long long max)
{
    if (type == 'i' || type == 't' || type == 'l')
        return v == def && (def < min || def > max);
    return (unsigned long long)v == (unsigned long long)def &&
           ((unsigned long long)def < (unsigned long long)min ||
            (unsigned long long)def > (unsigned long long)max);
}

static int in_range_i(long long v, long long lo, long long hi)
{
    return v >= lo && v <= hi;
}

static int in_range_u(unsigned long long v, unsigned long long lo,
                      unsigned long long hi)
{
    return v >= lo && v <= hi;
}

int numacoll_config_check(const numacoll_config_t *user, char *msg,
                          size_t msglen)
{
    char dummy[1];
    if (!msg) {
        msg = dummy;
        msglen = sizeof dummy;
    }
    if (!user) {
        snprintf(msg, msglen, "numacoll: no configuration given");
        return NUMACOLL_ERR_ARG;
    }
    /* the fields the caller has, the defaults for the others */
    numacoll_config_t full;
    int rc = nc__config_import(&full, user, msg, msglen);
    if (rc != NUMACOLL_OK)
        return rc;
    const numacoll_config_t *cfg = &full;
    /* Range checks first, in list order; 'i', 't' and 'l' are signed.
     * A default outside the range is the "unset" value: take the table's. */
#define X(field, type, def, min, max, doc)                                      \
    if (!nc__param_unset(type, (long long)cfg->field, (long long)(def),          \
                         (long long)(min), (long long)(max)) &&                  \
        !((type == 'i' || type == 't' || type == 'l')                            \
              ? in_range_i((long long)cfg->field, (long long)(min),              \
                           (long long)(max))                                     \
              : in_range_u((unsigned long long)cfg->field,                       \
                           (unsigned long long)(min),                            \
                           (unsigned long long)(max)))) {                        \
        if (type == 'i' || type == 't' || type == 'l')                           \
            snprintf(msg, msglen,                                                \
                     "numacoll: parameter %s = %lld is out of range "            \
                     "[%lld, %lld]", #field, (long long)cfg->field,              \
                     (long long)(min), (long long)(max));                        \
        else                                                                     \
            snprintf(msg, msglen,                                                \
                     "numacoll: parameter %s = %llu is out of range "            \
                     "[%llu, %llu]", #field,                                     \
                     (unsigned long long)cfg->field,                             \
                     (unsigned long long)(min), (unsigned long long)(max));      \
        return NUMACOLL_ERR_ARG;                                                 \
    }
    NUMACOLL_PARAM_LIST(X)
#undef X
    if (numacoll_levels_format(cfg->levels, NULL, 0) != 0) {
        snprintf(msg, msglen,
                 "numacoll: parameter levels = %d is no list of levels (l1, "
                 "l2, l3, numa, package; innermost first, none twice)",
                 cfg->levels);
        return NUMACOLL_ERR_ARG;
    }
    if (cfg->frag_size % 64 != 0) {
        snprintf(msg, msglen,
                 "numacoll: parameter frag_size = %zu must be a multiple of 64 "
                 "(one cache line)", cfg->frag_size);
        return NUMACOLL_ERR_ARG;
    }
    /* s and q are checked together once both are known: here when both are
     * set, otherwise against the table's rules at team creation. */
    if (cfg->banks && cfg->queue_depth &&
        (cfg->banks > cfg->queue_depth || cfg->queue_depth % cfg->banks != 0)) {
        snprintf(msg, msglen,
                 "numacoll: parameter queue_depth = %u must be a multiple of "
                 "banks = %u (and at least banks)", cfg->queue_depth, cfg->banks);
        return NUMACOLL_ERR_ARG;
    }
    if (msglen)
        msg[0] = '\0';
    return NUMACOLL_OK;
}

int numacoll_config_param_is_local(const char *name)
{
    static const char *const local[] = {"spin_count", "timeout_ms",
                                        "mem_budget", "verbose", "pu",
                                        "wait_policy", "node_budget"};
    for (size_t i = 0; name && i < sizeof local / sizeof local[0]; i++)
        if (strcmp(name, local[i]) == 0)
            return 1;
    return 0;
}

uint64_t nc__config_shape_hash(const numacoll_config_t *c)
{
    /* FNV-1a over the fields ranks must agree on, from the X-macro, so a
     * field added to the list is covered without a change here */
    uint64_t h = 1469598103934665603ULL;
#define X(field, type, def, min, max, doc)                                    \
    if (!numacoll_config_param_is_local(#field)) {                            \
        uint64_t v = (uint64_t)c->field;                                      \
        const unsigned char *b = (const unsigned char *)&v;                   \
        for (size_t i = 0; i < sizeof v; i++)                                 \
            h = (h ^ b[i]) * 1099511628211ULL;                                \
    }
    NUMACOLL_PARAM_LIST(X)
#undef X
    return h;
}

/* "64k", "1m", "2g", "4096", "64kb": a size in bytes (k, m, g are powers
 * of 1024); -1 if malformed or beyond SIZE_MAX. */
static int parse_size(const char *s, size_t *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
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
    if (*end != '\0' || v > (ULLONG_MAX >> shift) ||
        (v << shift) > (unsigned long long)SIZE_MAX)
        return -1;
    *out = (size_t)(v << shift);
    return 0;
}

/* A tree by name or by its number. */
static long long parse_tree(const char *v)
{
    int t = numacoll_tree_parse(v);
    if (t >= 0)
        return t;
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    return (*v && !*end && !errno) ? x : LLONG_MIN;
}

int numacoll_config_set(numacoll_config_t *cfg, const char *name,
                        const char *value, char *msg, size_t msglen)
{
    char dummy[1];
    if (!msg) {
        msg = dummy;
        msglen = sizeof dummy;
    }
    if (!cfg || !name || !value ||
        size_known(cfg->struct_size, msg, msglen) != NUMACOLL_OK) {
        if (cfg && name && value)
            return NUMACOLL_ERR_ARG;
        snprintf(msg, msglen, "numacoll: numacoll_config_set: NULL argument");
        return NUMACOLL_ERR_ARG;
    }
    /* Parse into 64 bits first, check the range, then store at the field's
     * own width; a field the caller's (older) struct lacks is unknown. */
#define X(field, type, def, min, max, doc)                                     \
    if (strcmp(name, #field) == 0 &&                                           \
        offsetof(numacoll_config_t, field) + sizeof cfg->field <=              \
            cfg->struct_size) {                                                \
        unsigned long long u = 0;                                              \
        long long i = 0;                                                       \
        int ok;                                                                \
        if (type == 'z') {                                                     \
            size_t z = 0;                                                      \
            ok = parse_size(value, &z) == 0;                                   \
            u = z;                                                             \
            ok = ok && (nc__param_unset(type, (long long)u, (long long)(def),  \
                                        (long long)(min), (long long)(max)) || \
                        in_range_u(u, (unsigned long long)(min),               \
                                   (unsigned long long)(max)));                \
        } else {                                                               \
            char *end = NULL;                                                  \
            errno = 0;                                                         \
            i = type == 't' ? parse_tree(value)                                \
                : type == 'l' ? numacoll_levels_parse(value)                   \
                              : strtoll(value, &end, 10);                      \
            ok = type == 't' ? i != LLONG_MIN                                  \
                 : type == 'l' ? i >= 0                                        \
                               : (*value && !*end && !errno);                  \
            ok = ok && (nc__param_unset(type, i, (long long)(def),             \
                                        (long long)(min), (long long)(max)) || \
                        (type == 'u' ? i >= 0 && in_range_u(                   \
                                           (unsigned long long)i,              \
                                           (unsigned long long)(min),          \
                                           (unsigned long long)(max))          \
                                     : in_range_i(i, (long long)(min),         \
                                                  (long long)(max))));         \
            u = (unsigned long long)i;                                         \
        }                                                                      \
        if (!ok) {                                                             \
            snprintf(msg, msglen,                                              \
                     "numacoll: parameter %s = '%s' is malformed or out of "   \
                     "range", #field, value);                                  \
            return NUMACOLL_ERR_ARG;                                           \
        }                                                                      \
        cfg->field = (__typeof__(cfg->field))u;                                \
        if (msglen)                                                            \
            msg[0] = '\0';                                                     \
        return NUMACOLL_OK;                                                    \
    }
    NUMACOLL_PARAM_LIST(X)
#undef X
    snprintf(msg, msglen, "numacoll: no parameter is named '%s'", name);
    return NUMACOLL_ERR_ARG;
}
