/*
 * The component object Open MPI loads from mca_coll_numacoll.so: its
 * version block, its MCA parameters and its MPI_T performance variables.
 *
 * Parameters. Every field of NUMACOLL_PARAM_LIST becomes coll_numacoll_<field>
 * with the core's default and the core's sentence as its description, so the
 * list is written once, in include/numacoll.h. Numbers are registered as
 * strings and read here right after registration (Open MPI's own reading
 * takes "abc" as 0), checked against the ranges of the same list, then by
 * numacoll_config_check() for the rules between fields; a rejected value is
 * reported naming the parameter and its valid values, shows in ompi_info,
 * and makes the component refuse to open, so no job runs with a
 * configuration the user did not ask for.
 */
#include "coll_numacoll.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ompi/mca/coll/base/base.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/output.h"

static int nc_register(void);
static int nc_open(void);
static int nc_close(void);

mca_coll_numacoll_component_t mca_coll_numacoll_component = {
    .super = {
        .collm_version = {
            NC_COLL_BASE_VERSION,
            .mca_component_name = "numacoll",
            MCA_BASE_MAKE_VERSION(component, NUMACOLL_VERSION_MAJOR,
                                  NUMACOLL_VERSION_MINOR, 0),
            .mca_open_component = nc_open,
            .mca_close_component = nc_close,
            .mca_register_component_params = nc_register,
        },
        .collm_data = {
            /* No checkpoint/restart support: the segment cannot be saved. */
            MCA_BASE_METADATA_PARAM_NONE
        },
        .collm_init_query = mca_coll_numacoll_init_query,
        .collm_comm_query = mca_coll_numacoll_comm_query,
    },
    /* priority and config are set from the parameters
     * (nc_params below). */
};

/* ---- numeric parameters ------------------------------------------------ */

/*
 * Every numeric parameter is registered as a string and read here. Open MPI
 * 4.1 reads an integer variable with strtoull(text, &end, 0) and keeps
 * whatever prefix parsed (int_from_string() in opal/mca/base/mca_base_var.c):
 * "abc" becomes 0, "12abc" 12, "1e3" 1, "-1" SIZE_MAX in a size_t, a number
 * beyond 64 bits ULLONG_MAX (-1 in an int), all without a word; only an int
 * or unsigned too small for the value, or a name its enumerator does not
 * know, is refused, with a help message, and the default stays. Reading the
 * text ourselves makes each of those a sentence naming the parameter and its
 * valid values, after which the component refuses to open.
 *
 * Type letters as in NUMACOLL_PARAM_LIST: 'z' size_t (a byte count), 'u'
 * unsigned, 'i' int, 't' int holding a tree kind, 'l' int holding a packed
 * level list (read from its names: "l3,numa,package").
 */
#define NC_C_SIZE(t) ((t) == 'z' ? sizeof(size_t) \
                      : (t) == 'u' ? sizeof(unsigned) : sizeof(int))

/* Values are stored through a pointer typed by the letter: a field whose
 * size disagrees with its letter would be written partially or beyond, so
 * refuse to build instead. */
#define X(field, type, def, min, max, doc)                                    \
    _Static_assert(sizeof(((numacoll_config_t *)0)->field) == NC_C_SIZE(type), \
                   "numacoll_config_t." #field " does not match its type letter");
NUMACOLL_PARAM_LIST(X)
#undef X
_Static_assert(sizeof(((mca_coll_numacoll_component_t *)0)->priority) ==
                   NC_C_SIZE('i'), "priority is read as an int");
_Static_assert(sizeof(((mca_coll_numacoll_component_t *)0)->virtual_nodes) ==
                   NC_C_SIZE('i'), "virtual_nodes is read as an int");
_Static_assert(sizeof(((mca_coll_numacoll_component_t *)0)->hier_segsize) ==
                   NC_C_SIZE('z'), "hier_segsize is read as a size_t");
_Static_assert(sizeof(((mca_coll_numacoll_component_t *)0)->hier_alltoall_max)
                   == NC_C_SIZE('z'), "hier_alltoall_max is read as a size_t");
_Static_assert(sizeof(((mca_coll_numacoll_component_t *)0)->hier_lanes_min)
                   == NC_C_SIZE('z'), "hier_lanes_min is read as a size_t");

typedef struct nc_param {
    const char *name;
    char type;
    long long def;              /* outside [min, max]: "from the table"      */
    long long min;              /* negative only for 'i' and 't'             */
    unsigned long long max;
    const char *doc;
    size_t offset;              /* of the value in nc_component              */
} nc_param_t;

#define NC_CONFIG_AT(field) \
    (offsetof(mca_coll_numacoll_component_t, config) + \
     offsetof(numacoll_config_t, field))

static const nc_param_t nc_params[] = {
    /* 40: above tuned (30) and basic/libnbc (10), so that an installed
     * component takes node-local communicators; below self (75), which owns
     * MPI_COMM_SELF anyway. */
    {"priority", 'i', 40, INT_MIN, INT_MAX,
     "Priority of the numacoll coll component: the highest priority among "
     "the components that accept a communicator wins each operation it "
     "provides; 40 wins over tuned (30) on node-local communicators, and a "
     "negative value disables numacoll.",
     offsetof(mca_coll_numacoll_component_t, priority)},
#define X(field, type, def, min, max, doc)                                    \
    {#field, type, (long long)(def), (long long)(min),                        \
     (unsigned long long)(max), doc, NC_CONFIG_AT(field)},
    NUMACOLL_PARAM_LIST(X)
#undef X
    /* Two levels (coll_numacoll_hier.c). */
    {"virtual_nodes", 'i', 0, 0, 1024,
     "For testing and experiments: split the processes of each node into "
     "this many virtual nodes (by coll_numacoll_virtual_split), so that "
     "communicators on one machine run numacoll's two-level collectives: "
     "numacoll within each virtual node, and the component Open MPI selects "
     "without numacoll (tuned, over the BTLs given, e.g. --mca btl "
     "self,tcp) between one leader per virtual node. 0 or 1: off, only "
     "communicators that span real nodes run in two levels.",
     offsetof(mca_coll_numacoll_component_t, virtual_nodes)},
    {"hier_segsize", 'z', 262144, 1024, 1073741824,
     "Segment size of the two-level collectives on communicators that span "
     "nodes: a Bcast, Reduce or Allreduce of more bytes is cut into "
     "segments of about this many bytes (whole elements for Reduce and "
     "Allreduce), so that the "
     "node-local level of one segment overlaps the leaders' level of the "
     "next.",
     offsetof(mca_coll_numacoll_component_t, hier_segsize)},
    /* 4096: where the two-level Alltoall stopped paying on the machine of
     * docs/ompi.md's measurement. */
    {"hier_alltoall_max", 'z', 4096, 0, SIZE_MAX,
     "Two-level Alltoall and Alltoallv on communicators that span nodes: "
     "calls whose blocks exceed this many bytes (Alltoallv: on average over "
     "some node's blocks) go to the previous component, since the leader "
     "carries its whole node's traffic; 0: no limit.",
     offsetof(mca_coll_numacoll_component_t, hier_alltoall_max)},
    /* 64 KiB: see docs/ompi.md, "Two levels", for the measurement. */
    {"hier_lanes_min", 'z', 65536, 0, SIZE_MAX,
     "Two-level Allreduce on communicators that span nodes: from this many "
     "bytes on, every node splits the vector into L slices (L: the process "
     "count of the smallest node), node-local Reduce_scatter to its first L "
     "processes, the L lanes (the processes of one node-local rank, one per "
     "node) reduce their slice between the nodes at once, node-local "
     "Allgatherv; below it, one leader per node carries the whole vector. "
     "0: never.",
     offsetof(mca_coll_numacoll_component_t, hier_lanes_min)},
};
#define NC_NPARAMS (sizeof nc_params / sizeof nc_params[0])

/* The variable system's storage of each parameter: our default text when
 * registered, then the user's text if set (Open MPI copies both, and keeps
 * an empty value as NULL). Read once, right after registration. */
static char *nc_text[NC_NPARAMS];
static char nc_default_text[NC_NPARAMS][24];

/* 1 when a default lies outside the range: it means "unset, take the
 * tuning table's value" (include/numacoll.h). */
static bool nc_param_has_unset(const nc_param_t *p)
{
    return p->def < p->min ||
           (p->def >= 0 && (unsigned long long)p->def > p->max);
}

static void nc_range_text(const nc_param_t *p, char *out, size_t len)
{
    if (p->type == 'l') {
        snprintf(out, len, "a list of l1, l2, l3, numa, package (or "
                 "socket), innermost first, separated by commas, none twice");
        return;
    }
    if (p->type == 't') {
        size_t n = (size_t)snprintf(out, len, "table (-1, the tuning "
                                    "table's), ");
        for (int k = 0; k < NUMACOLL_TREE_COUNT && n < len; k++)
            n += (size_t)snprintf(out + n, len - n, "%s%s (%d)",
                                  k == 0 ? "" : k + 1 == NUMACOLL_TREE_COUNT
                                                    ? " or " : ", ",
                                  numacoll_tree_name((numacoll_tree_kind_t)k),
                                  k);
        return;
    }
    char unset[48] = "";
    if (nc_param_has_unset(p))
        snprintf(unset, sizeof unset, "%lld (from the tuning table) or ",
                 p->def);
    /* Byte counts take Open MPI's size suffixes, which users already write
     * for its own size variables. */
    snprintf(out, len, "%s%lld to %llu%s", unset, p->min, p->max,
             p->type == 'z' ? " (bytes; a suffix k, m or g multiplies by "
                              "1024, 1024^2 or 1024^3)" : "");
}

typedef enum { NC_TEXT_OK, NC_TEXT_NOT_INTEGER, NC_TEXT_TOO_LARGE } nc_text_t;

/* Reads [blanks][-|+]digits[k|m|g, byte counts only][blanks] into a sign and
 * a magnitude. Decimal only: base 0, which Open MPI uses, reads "010" as 8. */
static nc_text_t nc_read_integer(const char *s, bool bytes, bool *neg,
                                 unsigned long long *mag)
{
    while (isspace((unsigned char)*s))
        s++;
    *neg = *s == '-';
    if (*s == '-' || *s == '+')
        s++;
    /* strtoull would skip more blanks and take a second sign. */
    if (!isdigit((unsigned char)*s))
        return NC_TEXT_NOT_INTEGER;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    bool too_large = errno == ERANGE;
    if (bytes && *end != '\0' && strchr("kKmMgG", *end)) {
        int c = tolower((unsigned char)*end);
        unsigned shift = c == 'k' ? 10 : c == 'm' ? 20 : 30;
        if (v > ULLONG_MAX >> shift)
            too_large = true;
        else
            v <<= shift;
        end++;
    }
    while (isspace((unsigned char)*end))
        end++;
    if (*end != '\0')
        return NC_TEXT_NOT_INTEGER;
    *mag = v;
    return too_large ? NC_TEXT_TOO_LARGE : NC_TEXT_OK;
}

/* "table" or a tree's name, in any case, as Open MPI's enumerator took them
 * before; -1 for table, else the kind. */
static bool nc_read_tree_name(const char *s, size_t n, bool *neg,
                              unsigned long long *mag)
{
    if (n == 5 && strncasecmp(s, "table", 5) == 0) {
        *neg = true;
        *mag = 1;
        return true;
    }
    for (int k = 0; k < NUMACOLL_TREE_COUNT; k++) {
        const char *name = numacoll_tree_name((numacoll_tree_kind_t)k);
        if (strlen(name) == n && strncasecmp(s, name, n) == 0) {
            *neg = false;
            *mag = (unsigned long long)k;
            return true;
        }
    }
    return false;
}

/* Whether -mag (neg) or mag lies in [lo, hi], hi >= 0. */
static bool nc_between(bool neg, unsigned long long mag, long long lo,
                       unsigned long long hi)
{
    if (neg && mag != 0)
        /* -mag >= lo, with -(lo + 1) + 1 so that lo = LLONG_MIN cannot
         * overflow. */
        return lo < 0 && mag <= (unsigned long long)(-(lo + 1)) + 1;
    return (lo <= 0 || mag >= (unsigned long long)lo) && mag <= hi;
}

static bool nc_equals(bool neg, unsigned long long mag, long long v)
{
    if (v < 0)
        return neg && mag == (unsigned long long)(-(v + 1)) + 1;
    return (!neg || mag == 0) && mag == (unsigned long long)v;
}

/* Reads p's text into its field of nc_component; false, with a sentence
 * naming the parameter and its valid values in msg, if it is not one. */
static bool nc_param_read(const nc_param_t *p, const char *text, char *msg,
                          size_t len)
{
    char range[200];
    nc_range_text(p, range, sizeof range);
    if (!text) {
        snprintf(msg, len, "coll_numacoll_%s is empty: valid values are %s",
                 p->name, range);
        return false;
    }
    /* The value as the user wrote it, blanks aside, for the message. */
    const char *shown = text;
    while (isspace((unsigned char)*shown))
        shown++;
    int shown_len = (int)strnlen(shown, 64);
    while (shown_len > 0 && isspace((unsigned char)shown[shown_len - 1]))
        shown_len--;

    if (p->type == 'l') {
        int lv = numacoll_levels_parse(text);
        if (lv < 0) {
            snprintf(msg, len, "coll_numacoll_%s = \"%.*s\" is not a level "
                     "list: valid values are %s", p->name, shown_len, shown,
                     range);
            return false;
        }
        *(int *)((char *)&nc_component + p->offset) = lv;
        return true;
    }
    bool neg = false;
    unsigned long long mag = 0;
    nc_text_t st = NC_TEXT_OK;
    if (!(p->type == 't' &&
          nc_read_tree_name(shown, (size_t)shown_len, &neg, &mag)))
        st = nc_read_integer(text, p->type == 'z', &neg, &mag);
    if (st == NC_TEXT_NOT_INTEGER) {
        snprintf(msg, len, "coll_numacoll_%s = \"%.*s\" is not %s: valid "
                 "values are %s", p->name, shown_len, shown,
                 p->type == 't' ? "a tree name or an integer" : "an integer",
                 range);
        return false;
    }
    if (st == NC_TEXT_TOO_LARGE ||
        !(nc_between(neg, mag, p->min, p->max) ||
          (nc_param_has_unset(p) && nc_equals(neg, mag, p->def)))) {
        snprintf(msg, len, "coll_numacoll_%s = %.*s is out of range: valid "
                 "values are %s", p->name, shown_len, shown, range);
        return false;
    }
    /* In range, so the value fits the field's type. */
    void *at = (char *)&nc_component + p->offset;
    if (p->type == 'z')
        *(size_t *)at = (size_t)mag;
    else if (p->type == 'u')
        *(unsigned *)at = (unsigned)mag;
    else
        *(int *)at = neg ? (int)-(long long)mag : (int)mag;
    return true;
}

/* pu names one processing unit for every process of the job; it exists for
 * tests under synthetic topologies, and virtual_nodes for tests of the
 * two-level mode on one machine, so they sit at the developer level.
 * priority is the one a user changes to pick components. */
static mca_base_var_info_lvl_t nc_param_level(const nc_param_t *p)
{
    return strcmp(p->name, "pu") == 0 ||
           strcmp(p->name, "virtual_nodes") == 0 ? OPAL_INFO_LVL_9
         : strcmp(p->name, "priority") == 0   ? OPAL_INFO_LVL_6
                                              : OPAL_INFO_LVL_5;
}

/* Informational for MPI_T; the module checks equality when it creates a
 * team. */
static mca_base_var_scope_t nc_param_scope(const nc_param_t *p)
{
    return numacoll_config_param_is_local(p->name)
               ? MCA_BASE_VAR_SCOPE_LOCAL : MCA_BASE_VAR_SCOPE_ALL_EQ;
}

static void nc_register_params(void)
{
    for (size_t i = 0; i < NC_NPARAMS; i++) {
        const nc_param_t *p = &nc_params[i];
        char desc[768], range[200];
        nc_range_text(p, range, sizeof range);
        snprintf(desc, sizeof desc, "%s Valid values: %s.", p->doc, range);
        if (p->type == 't')
            snprintf(nc_default_text[i], sizeof nc_default_text[i], "table");
        else if (p->type == 'l')
            numacoll_levels_format((int)p->def, nc_default_text[i],
                                   sizeof nc_default_text[i]);
        else
            snprintf(nc_default_text[i], sizeof nc_default_text[i], "%lld",
                     p->def);
        nc_text[i] = nc_default_text[i];
        (void)mca_base_component_var_register(
            &nc_component.super.collm_version, p->name, desc,
            MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, nc_param_level(p),
            nc_param_scope(p), &nc_text[i]);
    }
}

/* ---- MPI_T performance variables -------------------------------------- */

/* The shards of the living threads that have counted, and the counts of
 * those that exited (or found no memory for a shard); the list, and its
 * folding into done, under the lock. A thread's shard leaves only at its
 * exit, by the key's destructor, so a thread's pointer to its own shard
 * is never stale. The key is never deleted and the .so is linked
 * -z nodelete (ompi/ompi.mk): a thread may exit while, or after, Open MPI
 * closes and unloads the component, and its destructor must still be
 * there to run. */
static pthread_mutex_t nc_shard_lock = PTHREAD_MUTEX_INITIALIZER;
static nc_shard_t *nc_shards;
static _Atomic unsigned long long nc_shard_done[NC_CNT_N];
static pthread_once_t nc_shard_once = PTHREAD_ONCE_INIT;
static pthread_key_t nc_shard_key;
static bool nc_shard_keyed;   /* written once, under nc_shard_once */
_Thread_local nc_shard_t *nc_shard_mine;
int nc_cnt_ids[NC_CNT_N];   /* i at i: the counters' MPI_T contexts */

static void nc_shard_exit(void *v)
{
    nc_shard_t *s = v;
    pthread_mutex_lock(&nc_shard_lock);
    for (int i = 0; i < NC_CNT_N; i++)
        atomic_fetch_add_explicit(
            &nc_shard_done[i],
            atomic_load_explicit(&s->v[i], memory_order_relaxed),
            memory_order_relaxed);
    nc_shard_t **pp = &nc_shards;
    while (*pp != s)
        pp = &(*pp)->next;
    *pp = s->next;
    pthread_mutex_unlock(&nc_shard_lock);
    nc_shard_mine = NULL;
    free(s);
}

static void nc_shard_make_key(void)
{
    nc_shard_keyed = pthread_key_create(&nc_shard_key, nc_shard_exit) == 0;
}

nc_shard_t *nc_shard_join(int id)
{
    /* pthread_once orders the key's creation before its use here */
    pthread_once(&nc_shard_once, nc_shard_make_key);
    nc_shard_t *s = NULL;
    if (nc_shard_keyed &&
        posix_memalign((void **)&s, 64, sizeof *s) == 0) {
        /* a line of its own: other threads' counts do not share it */
        for (int i = 0; i < NC_CNT_N; i++)
            atomic_init(&s->v[i], 0);
        if (pthread_setspecific(nc_shard_key, s) != 0) {
            free(s);
            s = NULL;
        }
    }
    if (!s) {   /* no shard: this count, and the next ones, the slow way */
        atomic_fetch_add_explicit(&nc_shard_done[id], 1ull,
                                  memory_order_relaxed);
        return NULL;
    }
    pthread_mutex_lock(&nc_shard_lock);
    s->next = nc_shards;
    nc_shards = s;
    pthread_mutex_unlock(&nc_shard_lock);
    nc_shard_mine = s;
    return s;
}

int nc_pvar_read(const struct mca_base_pvar_t *pvar, void *value, void *obj)
{
    (void)obj;  /* not bound to an object: process-wide totals */
    if (pvar->type == MCA_BASE_VAR_TYPE_UNSIGNED_INT) {
        *(unsigned *)value = atomic_load_explicit((_Atomic unsigned *)pvar->ctx,
                                                 memory_order_relaxed);
        return OPAL_SUCCESS;
    }
    const int id = *(const int *)pvar->ctx;
    pthread_mutex_lock(&nc_shard_lock);
    unsigned long long n =
        atomic_load_explicit(&nc_shard_done[id], memory_order_relaxed);
    for (const nc_shard_t *s = nc_shards; s; s = s->next)
        n += atomic_load_explicit(&s->v[id], memory_order_relaxed);
    pthread_mutex_unlock(&nc_shard_lock);
    *(unsigned long long *)value = n;
    return OPAL_SUCCESS;
}

static void nc_register_pvars(void)
{
    static const struct {
        const char *name;
        const char *doc;
        int var_class;
        void *ctx;
    } pv[] = {
        {"bcast_count", "Number of MPI_Bcast calls this process completed "
         "through numacoll's shared-memory broadcast, over all communicators.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_BCAST]},
        {"barrier_count", "Number of MPI_Barrier calls this process completed "
         "through numacoll's shared-memory barrier, over all communicators.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_BARRIER]},
        {"bcast_fallback_count", "Number of MPI_Bcast calls on communicators "
         "that selected numacoll which it handed to the previous component "
         "(setup failed, memory budget reached, or an unsupported case).",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_BCAST_FALLBACK]},
        {"barrier_fallback_count", "Number of MPI_Barrier calls on "
         "communicators that selected numacoll which it handed to the "
         "previous component.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_BARRIER_FALLBACK]},
        {"reduce_count", "Number of MPI_Reduce calls this process completed "
         "through numacoll's shared-memory reduction, over all communicators.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_REDUCE]},
        {"allreduce_count", "Number of MPI_Allreduce calls this process "
         "completed through numacoll's shared-memory reduction, over all "
         "communicators.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_ALLREDUCE]},
        {"reduce_fallback_count", "Number of MPI_Reduce calls on "
         "communicators that selected numacoll which it handed to the "
         "previous component (a datatype or op numacoll does not map, setup "
         "failed, or an unsupported case).",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_REDUCE_FALLBACK]},
        {"allreduce_fallback_count", "Number of MPI_Allreduce calls on "
         "communicators that selected numacoll which it handed to the "
         "previous component.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_ALLREDUCE_FALLBACK]},
        {"ibcast_count", "Number of MPI_Ibcast calls and starts of "
         "persistent Bcasts this process completed through numacoll, over "
         "all communicators.", MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_IBCAST]},
        {"ibarrier_count", "Number of MPI_Ibarrier calls and starts of "
         "persistent Barriers this process completed through numacoll.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_IBARRIER]},
        {"ireduce_count", "Number of MPI_Ireduce calls and starts of "
         "persistent Reduces this process completed through numacoll "
         "(count > 0).", MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_IREDUCE]},
        {"iallreduce_count", "Number of MPI_Iallreduce calls and starts of "
         "persistent Allreduces this process completed through numacoll "
         "(count > 0).", MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_IALLREDUCE]},
        {"ibcast_fallback_count", "Number of MPI_Ibcast calls and "
         "persistent Bcast inits on communicators that selected numacoll "
         "which it handed to the previous component.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_IBCAST_FALLBACK]},
        {"ibarrier_fallback_count", "The same for MPI_Ibarrier and "
         "persistent Barrier inits.", MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_IBARRIER_FALLBACK]},
        {"ireduce_fallback_count", "The same for MPI_Ireduce and "
         "persistent Reduce inits.", MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_IREDUCE_FALLBACK]},
        {"iallreduce_fallback_count", "The same for MPI_Iallreduce and "
         "persistent Allreduce inits.", MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_IALLREDUCE_FALLBACK]},
        {"bcast_declined_count", "Number of MPI_Bcast calls on "
         "communicators that selected numacoll which a tuning rule "
         "(decline=1: the host's collective is faster) handed to the "
         "previous component; not in bcast_fallback_count.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_BCAST_DECLINED]},
        {"barrier_declined_count", "The same for MPI_Barrier.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_BARRIER_DECLINED]},
        {"reduce_declined_count", "The same for MPI_Reduce.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_REDUCE_DECLINED]},
        {"allreduce_declined_count", "The same for MPI_Allreduce.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_ALLREDUCE_DECLINED]},
        {"ibcast_declined_count", "The same for MPI_Ibcast and persistent "
         "Bcast inits.", MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_IBCAST_DECLINED]},
        {"ibarrier_declined_count", "The same for MPI_Ibarrier and "
         "persistent Barrier inits.", MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_IBARRIER_DECLINED]},
        {"ireduce_declined_count", "The same for MPI_Ireduce and persistent "
         "Reduce inits.", MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_IREDUCE_DECLINED]},
        {"iallreduce_declined_count", "The same for MPI_Iallreduce and "
         "persistent Allreduce inits.", MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_IALLREDUCE_DECLINED]},
        {"nospace_count", "Number of collective calls (of any kind) on "
         "communicators that selected numacoll which it handed to the "
         "previous component because their team found no room in /dev/shm "
         "for its staging (coll_numacoll_node_budget, or /dev/shm full); "
         "also in the kind's fallback counter.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_NOSPACE]},
        {"two_level_count", "Number of MPI_Bcast, MPI_Reduce, MPI_Allreduce, "
         "MPI_Barrier, MPI_Allgather(v), MPI_Gather(v), MPI_Scatter(v), "
         "MPI_Alltoall(v), MPI_Reduce_scatter(_block), MPI_Scan and "
         "MPI_Exscan calls this process ran in two levels (numacoll "
         "within the node, another component between the nodes' leaders) on "
         "communicators that span nodes or virtual nodes.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_TWO_LEVEL]},
        {"two_level_lanes_count", "Of two_level_count: the MPI_Allreduce "
         "calls that ran in lanes (coll_numacoll_hier_lanes_min): every "
         "node's first L processes each reduce one slice between the nodes.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         (void *)&nc_cnt_ids[NC_CNT_TWO_LEVEL_LANES]},
        {"teams", "Number of numacoll teams (shared-memory segments) this "
         "process has mapped right now; returns to 0 once their "
         "communicators are freed.",
         MCA_BASE_PVAR_CLASS_LEVEL,
         (void *)&nc_component.n_teams},
    };
    for (int i = 0; i < NC_CNT_N; i++)
        nc_cnt_ids[i] = i;
    for (size_t i = 0; i < sizeof pv / sizeof pv[0]; i++) {
        bool level = pv[i].var_class == MCA_BASE_PVAR_CLASS_LEVEL;
        (void)mca_base_component_pvar_register(
            &nc_component.super.collm_version, pv[i].name, pv[i].doc,
            OPAL_INFO_LVL_4, pv[i].var_class,
            level ? MCA_BASE_VAR_TYPE_UNSIGNED_INT
                  : MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG,
            NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
            nc_pvar_read, NULL, NULL, pv[i].ctx);
    }
}

/* ---- component life cycle --------------------------------------------- */

/* The core's sentence names its field ("numacoll: parameter frag_size =
 * 100 must be ..."); the user set coll_numacoll_frag_size, so say that. */
static void nc_name_mca_param(const char *core, char *out, size_t len)
{
    static const char prefix[] = "numacoll: ", word[] = "parameter ";
    if (strncmp(core, prefix, sizeof prefix - 1) == 0)
        core += sizeof prefix - 1;
    const char *at = strstr(core, word);
    if (at)
        snprintf(out, len, "%.*scoll_numacoll_%s", (int)(at - core +
                 (int)sizeof word - 1), core, at + sizeof word - 1);
    else
        snprintf(out, len, "%s (MCA parameters coll_numacoll_<name>)", core);
}

static int nc_register(void)
{
    /* Defaults come from the core; the parameters' texts replace them. */
    numacoll_config_init(&nc_component.config);
    nc_register_params();

    nc_component.tuning_file = "";
    (void)mca_base_component_var_register(
        &nc_component.super.collm_version, "tuning_file",
        "Tuning table (docs/tuning.md; numacoll-tune writes one) that "
        "replaces the built-in table for every communicator: per collective, "
        "process count and message size, the algorithm and its fragment "
        "size, queue depth, banks, tree and radix. Empty: the file named by "
        "the environment variable NUMACOLL_TUNING_FILE if set, else the "
        "built-in table. A file with any error is rejected as a whole: the "
        "built-in table applies and every error is printed once.",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_4,
        MCA_BASE_VAR_SCOPE_ALL_EQ, &nc_component.tuning_file);

    nc_register_pvars();
    nc_ga_register_pvars();

    /* Read and check now, so that ompi_info and every process report a bad
     * value at once rather than on some communicator's first collective.
     * Registration happens once per process, so each sentence is printed
     * once per process, at any verbosity: a value the user set and we
     * ignore must never go unsaid. Every bad value is named, then the
     * rules between fields, which need all values read. */
    char msg[512];
    nc_component.config_ok = true;
    for (size_t i = 0; i < NC_NPARAMS; i++) {
        if (nc_param_read(&nc_params[i], nc_text[i], msg, sizeof msg))
            continue;
        nc_component.config_ok = false;
        opal_output(0, "coll:numacoll: rejected: %s; the numacoll "
                    "component is disabled", msg);
    }
    if (!nc_hier_register())
        nc_component.config_ok = false;
    char core[256];
    if (nc_component.config_ok &&
        numacoll_config_check(&nc_component.config, core, sizeof core) !=
            NUMACOLL_OK) {
        nc_name_mca_param(core, msg, sizeof msg);
        nc_component.config_ok = false;
        opal_output(0, "coll:numacoll: rejected: %s; the numacoll "
                    "component is disabled", msg);
    }
    return OMPI_SUCCESS;
}

static int nc_open(void)
{
    /* Registration already printed why. */
    if (!nc_component.config_ok)
        return OMPI_ERR_BAD_PARAM;
    /* Opened before MPI_Init's modex (4.1 and 5.0 alike), so every peer
     * can read this pid before any exchange with this process: the setup
     * exchange's dead-peer check needs it (coll_numacoll_module.c). */
    nc_pid_publish();
    return OMPI_SUCCESS;
}

/* The progress callback lives in this .so, which Open MPI unloads after
 * closing the component. */
static int nc_close(void)
{
    nc_nb_close();
    return OMPI_SUCCESS;
}
