/*
 * The component object Open MPI loads from mca_coll_numacoll.so: its
 * version block, its MCA parameters and its MPI_T performance variables.
 *
 * Parameters. Every field of NUMACOLL_PARAM_LIST becomes coll_numacoll_<field>
 * with the core's default and the core's sentence as its description, so the
 * list is written once, in include/numacoll.h. Values are checked right after
 * registration (ranges from the same list, then numacoll_config_check() for
 * the rules between fields); a rejected value is reported naming the
 * parameter and its valid range, shows in ompi_info, and makes the component
 * refuse to open, so no job runs with a configuration the core would refuse
 * on the first collective.
 */
#include "coll_numacoll.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ompi/mca/coll/base/base.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/util/output.h"

static int nc_register(void);
static int nc_open(void);

mca_coll_numacoll_component_t mca_coll_numacoll_component = {
    .super = {
        .collm_version = {
            MCA_COLL_BASE_VERSION_2_0_0,
            .mca_component_name = "numacoll",
            MCA_BASE_MAKE_VERSION(component, NUMACOLL_VERSION_MAJOR,
                                  NUMACOLL_VERSION_MINOR, 0),
            .mca_open_component = nc_open,
            .mca_register_component_params = nc_register,
        },
        .collm_data = {
            /* No checkpoint/restart support: the segment cannot be saved. */
            MCA_BASE_METADATA_PARAM_NONE
        },
        .collm_init_query = mca_coll_numacoll_init_query,
        .collm_comm_query = mca_coll_numacoll_comm_query,
    },
    /* Above tuned (30) and basic/libnbc (10) so that an installed component
     * takes node-local communicators; below self (75), which owns
     * MPI_COMM_SELF anyway. */
    .priority = 40,
};

/* ---- parameters from NUMACOLL_PARAM_LIST ------------------------------ */

/* The type letters of NUMACOLL_PARAM_LIST and the C and MCA types behind
 * them: 'z' size_t, 'u' unsigned, 'i' int, 't' int holding a tree kind. */
#define NC_C_SIZE(t) ((t) == 'z' ? sizeof(size_t) \
                      : (t) == 'u' ? sizeof(unsigned) : sizeof(int))

/* Registration writes through a pointer typed by the letter: a field whose
 * size disagrees with its letter would be overwritten partially or beyond,
 * so refuse to build instead. */
#define X(field, type, def, min, max, doc)                                    \
    _Static_assert(sizeof(((numacoll_config_t *)0)->field) == NC_C_SIZE(type), \
                   "numacoll_config_t." #field " does not match its type letter");
NUMACOLL_PARAM_LIST(X)
#undef X

typedef struct nc_param {
    const char *name;
    char type;
    long long def;              /* outside [min, max]: "from the table"      */
    long long min;              /* only 'i' is ever negative (pu: -1)        */
    unsigned long long max;
    const char *doc;
    size_t offset;              /* of the field in numacoll_config_t         */
} nc_param_t;

static const nc_param_t nc_params[] = {
#define X(field, type, def, min, max, doc)                                    \
    {#field, type, (long long)(def), (long long)(min),                        \
     (unsigned long long)(max), doc,                                          \
     offsetof(numacoll_config_t, field)},
    NUMACOLL_PARAM_LIST(X)
#undef X
};
#define NC_NPARAMS (sizeof nc_params / sizeof nc_params[0])

/* 1 when a default lies outside the range: it means "unset, take the
 * tuning table's value" (include/numacoll.h). */
static bool nc_param_has_unset(const nc_param_t *p)
{
    return p->def < p->min ||
           (p->def >= 0 && (unsigned long long)p->def > p->max);
}

/* The tree enumerator: lets users write "knomial" as well as 3, and
 * "table" (-1, the default) for the tuning table's tree. Filled from
 * numacoll_tree_name() so that the names stay the core's. */
static mca_base_var_enum_value_t nc_tree_values[NUMACOLL_TREE_COUNT + 2];

static mca_base_var_enum_t *nc_tree_enum(void)
{
    mca_base_var_enum_t *e = NULL;
    nc_tree_values[0].value = -1;
    nc_tree_values[0].string = "table";
    for (int k = 0; k < NUMACOLL_TREE_COUNT; k++) {
        nc_tree_values[k + 1].value = k;
        nc_tree_values[k + 1].string =
            numacoll_tree_name((numacoll_tree_kind_t)k);
    }
    nc_tree_values[NUMACOLL_TREE_COUNT + 1].value = 0;
    nc_tree_values[NUMACOLL_TREE_COUNT + 1].string = NULL;
    if (mca_base_var_enum_create("coll_numacoll_tree", nc_tree_values, &e) !=
        OPAL_SUCCESS)
        return NULL;
    return e;
}

static void *nc_param_storage(const nc_param_t *p)
{
    return (char *)&nc_component.config + p->offset;
}

/* The maximum a C type can hold, to print "N or more" instead of 2^64-1. */
static unsigned long long nc_type_max(char type)
{
    return type == 'z' ? (unsigned long long)SIZE_MAX
         : type == 'u' ? (unsigned long long)UINT_MAX
                       : (unsigned long long)INT_MAX;
}

static void nc_range_text(const nc_param_t *p, char *out, size_t len)
{
    if (nc_param_has_unset(p) && p->type != 't') {
        /* "0 (from the tuning table) or 64 to 1048576" */
        int n = snprintf(out, len, "%lld (from the tuning table) or ", p->def);
        if (n < 0 || (size_t)n >= len)
            return;
        out += n;
        len -= (size_t)n;
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
    } else if (p->max >= nc_type_max(p->type)) {
        snprintf(out, len, "%lld or more", p->min);
    } else {
        snprintf(out, len, "%lld to %llu", p->min, p->max);
    }
}

/* Out-of-range check of one parameter; on failure a sentence naming it. */
static bool nc_param_in_range(const nc_param_t *p, char *msg, size_t len)
{
    const void *s = nc_param_storage(p);
    char range[160];
    nc_range_text(p, range, sizeof range);
    if (p->type == 'z' || p->type == 'u') {
        unsigned long long v = p->type == 'z' ? *(const size_t *)s
                                              : *(const unsigned *)s;
        if ((v >= (unsigned long long)p->min && v <= p->max) ||
            (nc_param_has_unset(p) && v == (unsigned long long)p->def))
            return true;
        snprintf(msg, len, "coll_numacoll_%s = %llu is out of range: valid "
                 "values are %s", p->name, v, range);
    } else {
        long long v = *(const int *)s;
        if ((v >= p->min && (v < 0 || (unsigned long long)v <= p->max)) ||
            (nc_param_has_unset(p) && v == p->def))
            return true;
        snprintf(msg, len, "coll_numacoll_%s = %lld is out of range: valid "
                 "values are %s", p->name, v, range);
    }
    return false;
}

/* pu names one processing unit for every process of the job; it exists for
 * tests under synthetic topologies, so it sits at the developer level. */
static mca_base_var_info_lvl_t nc_param_level(const nc_param_t *p)
{
    return strcmp(p->name, "pu") == 0 ? OPAL_INFO_LVL_9 : OPAL_INFO_LVL_5;
}

/* Parameters each process may set for itself: how long and how eagerly it
 * waits, what it prints, where it runs, and the per-team budget (which the
 * core agrees on anyway). Every other field of NUMACOLL_PARAM_LIST shapes
 * the segment or the protocol and must be equal on all ranks of a team. */
bool mca_coll_numacoll_param_is_local(const char *name)
{
    static const char *const local[] = {"spin_count", "timeout_ms",
                                        "mem_budget", "verbose", "pu"};
    for (size_t i = 0; i < sizeof local / sizeof local[0]; i++)
        if (strcmp(name, local[i]) == 0)
            return true;
    return false;
}

/* Informational for MPI_T; the module checks equality when it creates a
 * team. */
static mca_base_var_scope_t nc_param_scope(const nc_param_t *p)
{
    return mca_coll_numacoll_param_is_local(p->name)
               ? MCA_BASE_VAR_SCOPE_LOCAL : MCA_BASE_VAR_SCOPE_ALL_EQ;
}

static void nc_register_core_params(void)
{
    mca_base_var_enum_t *tree_enum = nc_tree_enum();
    for (size_t i = 0; i < NC_NPARAMS; i++) {
        const nc_param_t *p = &nc_params[i];
        char desc[768], range[160];
        nc_range_text(p, range, sizeof range);
        snprintf(desc, sizeof desc, "%s Valid values: %s.", p->doc, range);
        mca_base_var_type_t type =
            p->type == 'z' ? MCA_BASE_VAR_TYPE_SIZE_T
          : p->type == 'u' ? MCA_BASE_VAR_TYPE_UNSIGNED_INT
                           : MCA_BASE_VAR_TYPE_INT;
        (void)mca_base_component_var_register(
            &nc_component.super.collm_version, p->name, desc, type,
            p->type == 't' ? tree_enum : NULL, 0, 0, nc_param_level(p),
            nc_param_scope(p), nc_param_storage(p));
    }
    /* The variable system holds its own reference. */
    if (tree_enum)
        OBJ_RELEASE(tree_enum);
}

/* ---- MPI_T performance variables -------------------------------------- */

static int nc_pvar_read(const struct mca_base_pvar_t *pvar, void *value,
                        void *obj)
{
    (void)obj;  /* not bound to an object: process-wide totals */
    if (pvar->type == MCA_BASE_VAR_TYPE_UNSIGNED_INT)
        *(unsigned *)value = atomic_load_explicit((_Atomic unsigned *)pvar->ctx,
                                                 memory_order_relaxed);
    else
        *(unsigned long long *)value =
            atomic_load_explicit((_Atomic unsigned long long *)pvar->ctx,
                                 memory_order_relaxed);
    return OPAL_SUCCESS;
}

static void nc_register_pvars(void)
{
    static const struct {
        const char *name;
        const char *doc;
        int var_class;
        size_t offset;
    } pv[] = {
        {"bcast_count", "Number of MPI_Bcast calls this process completed "
         "through numacoll's shared-memory broadcast, over all communicators.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         offsetof(mca_coll_numacoll_component_t, n_bcast)},
        {"barrier_count", "Number of MPI_Barrier calls this process completed "
         "through numacoll's shared-memory barrier, over all communicators.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         offsetof(mca_coll_numacoll_component_t, n_barrier)},
        {"bcast_fallback_count", "Number of MPI_Bcast calls on communicators "
         "that selected numacoll which it handed to the previous component "
         "(setup failed, memory budget reached, or an unsupported case).",
         MCA_BASE_PVAR_CLASS_COUNTER,
         offsetof(mca_coll_numacoll_component_t, n_bcast_fallback)},
        {"barrier_fallback_count", "Number of MPI_Barrier calls on "
         "communicators that selected numacoll which it handed to the "
         "previous component.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         offsetof(mca_coll_numacoll_component_t, n_barrier_fallback)},
        {"reduce_count", "Number of MPI_Reduce calls this process completed "
         "through numacoll's shared-memory reduction, over all communicators.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         offsetof(mca_coll_numacoll_component_t, n_reduce)},
        {"allreduce_count", "Number of MPI_Allreduce calls this process "
         "completed through numacoll's shared-memory reduction, over all "
         "communicators.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         offsetof(mca_coll_numacoll_component_t, n_allreduce)},
        {"reduce_fallback_count", "Number of MPI_Reduce calls on "
         "communicators that selected numacoll which it handed to the "
         "previous component (a datatype or op numacoll does not map, setup "
         "failed, or an unsupported case).",
         MCA_BASE_PVAR_CLASS_COUNTER,
         offsetof(mca_coll_numacoll_component_t, n_reduce_fallback)},
        {"allreduce_fallback_count", "Number of MPI_Allreduce calls on "
         "communicators that selected numacoll which it handed to the "
         "previous component.",
         MCA_BASE_PVAR_CLASS_COUNTER,
         offsetof(mca_coll_numacoll_component_t, n_allreduce_fallback)},
        {"teams", "Number of numacoll teams (shared-memory segments) this "
         "process has mapped right now; returns to 0 once their "
         "communicators are freed.",
         MCA_BASE_PVAR_CLASS_LEVEL,
         offsetof(mca_coll_numacoll_component_t, n_teams)},
    };
    for (size_t i = 0; i < sizeof pv / sizeof pv[0]; i++) {
        bool level = pv[i].var_class == MCA_BASE_PVAR_CLASS_LEVEL;
        (void)mca_base_component_pvar_register(
            &nc_component.super.collm_version, pv[i].name, pv[i].doc,
            OPAL_INFO_LVL_4, pv[i].var_class,
            level ? MCA_BASE_VAR_TYPE_UNSIGNED_INT
                  : MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG,
            NULL, MCA_BASE_VAR_BIND_NO_OBJECT,
            MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
            nc_pvar_read, NULL, NULL, (char *)&nc_component + pv[i].offset);
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
    /* Defaults come from the core, so ompi_info shows the core's values. */
    numacoll_config_init(&nc_component.config);
    nc_component.node_budget = 0;

    (void)mca_base_component_var_register(
        &nc_component.super.collm_version, "priority",
        "Priority of the numacoll coll component: the highest priority among "
        "the components that accept a communicator wins each operation it "
        "provides; 40 wins over tuned (30) on node-local communicators, and a "
        "negative value disables numacoll.",
        MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, OPAL_INFO_LVL_6,
        MCA_BASE_VAR_SCOPE_ALL_EQ, &nc_component.priority);

    nc_register_core_params();

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

    (void)mca_base_component_var_register(
        &nc_component.super.collm_version, "node_budget",
        "Largest number of bytes that /dev/shm may hold on this node after a "
        "numacoll segment is created; when a communicator's first collective "
        "finds less room (everything in /dev/shm counts, numacoll segments "
        "included), that communicator uses the previous component instead. 0 "
        "means no limit beyond the free space of /dev/shm. Valid values: 0 or "
        "more.",
        MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, OPAL_INFO_LVL_5,
        MCA_BASE_VAR_SCOPE_ALL_EQ, &nc_component.node_budget);

    nc_register_pvars();

    /* Check now, so that ompi_info and every process report a bad value at
     * once rather than on some communicator's first collective. */
    char msg[512];
    nc_component.config_ok = true;
    for (size_t i = 0; i < NC_NPARAMS && nc_component.config_ok; i++)
        if (!nc_param_in_range(&nc_params[i], msg, sizeof msg))
            nc_component.config_ok = false;
    char core[256];
    if (nc_component.config_ok &&
        numacoll_config_check(&nc_component.config, core, sizeof core) !=
            NUMACOLL_OK) {
        nc_name_mca_param(core, msg, sizeof msg);
        nc_component.config_ok = false;
    }
    if (!nc_component.config_ok)
        opal_output(0, "coll:numacoll: rejected: %s; the numacoll "
                    "component is disabled", msg);
    return OMPI_SUCCESS;
}

static int nc_open(void)
{
    /* Registration already printed why. */
    return nc_component.config_ok ? OMPI_SUCCESS : OMPI_ERR_BAD_PARAM;
}
