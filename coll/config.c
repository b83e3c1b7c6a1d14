/*
 * Configuration defaults and validation, both driven by NUMACOLL_PARAM_LIST
 * so that a parameter is described once for the core, the benchmark and the
 * Open MPI component.
 */
#include <stdio.h>
#include <stdint.h>

#include "numacoll.h"

void numacoll_config_init(numacoll_config_t *cfg)
{
#define X(field, type, def, min, max, doc) cfg->field = def;
    NUMACOLL_PARAM_LIST(X)
#undef X
    cfg->topology = NULL;
    cfg->tuning_file = NULL;
    cfg->tuning_text = NULL;
}

static int nc__param_unset(int type, long long v, long long def, long long min,
                    long long max)
{
    if (type == 'i' || type == 't')
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

int numacoll_config_check(const numacoll_config_t *cfg, char *msg, size_t msglen)
{
    char dummy[1];
    if (!msg) {
        msg = dummy;
        msglen = sizeof dummy;
    }
    if (!cfg) {
        snprintf(msg, msglen, "numacoll: no configuration given");
        return NUMACOLL_ERR_ARG;
    }
    /* Range checks first, in list order; 'i' and 't' parameters are signed.
     * A default outside the range is the "unset" value: take the table's. */
#define X(field, type, def, min, max, doc)                                      \
    if (!nc__param_unset(type, (long long)cfg->field, (long long)(def),          \
                         (long long)(min), (long long)(max)) &&                  \
        !((type == 'i' || type == 't')                                           \
              ? in_range_i((long long)cfg->field, (long long)(min),              \
                           (long long)(max))                                     \
              : in_range_u((unsigned long long)cfg->field,                       \
                           (unsigned long long)(min),                            \
                           (unsigned long long)(max)))) {                        \
        if (type == 'i' || type == 't')                                          \
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
