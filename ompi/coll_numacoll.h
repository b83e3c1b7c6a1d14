/*
 * Open MPI glue of numacoll: a `coll` component (Open MPI 4.1: coll 2.0.0,
 * module 2.3.0; Open MPI 5.0: coll 2.4.0; coll_numacoll_compat.h holds
 * what differs) that hands MPI_Bcast, MPI_Barrier, MPI_Reduce and
 * MPI_Allreduce on node-local intra-communicators to the core library
 * (include/numacoll.h). No
 * algorithm lives here: this folder maps communicators to teams, datatypes
 * to bytes, pack/unpack callbacks or numacoll element types, MPI ops to
 * numacoll ops or user-op callbacks, MCA parameters to numacoll_config_t
 * and core status codes to MPI error classes.
 *
 * Exported names carry the full mca_coll_numacoll_ prefix that Open MPI's
 * component loader looks for; the sources use the short aliases below.
 */
#ifndef MCA_COLL_NUMACOLL_H
#define MCA_COLL_NUMACOLL_H

#include "ompi_config.h"
#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "coll_numacoll_compat.h"

#include <stdatomic.h>
#include <stdbool.h>

#include "numacoll.h"

BEGIN_C_DECLS

/* Component: the parameter values and the process-wide MPI_T counters. */
typedef struct mca_coll_numacoll_component_t {
    nc_coll_component_t super;

    int priority;               /* coll_numacoll_priority                    */
    numacoll_config_t config;   /* coll_numacoll_<field> of NUMACOLL_PARAM_LIST */
    char *tuning_file;          /* coll_numacoll_tuning_file                  */
    size_t node_budget;         /* coll_numacoll_node_budget; 0 = no limit   */
    bool config_ok;             /* false: a parameter was rejected; the
                                   component then declines to open           */

    /* MPI_T performance variables. Atomic because MPI_THREAD_MULTIPLE
     * programs may run collectives on different communicators at once. */
    _Atomic unsigned long long n_bcast;           /* Bcasts done by the core */
    _Atomic unsigned long long n_barrier;         /* Barriers done by the core */
    _Atomic unsigned long long n_bcast_fallback;  /* handed to the previous  */
    _Atomic unsigned long long n_barrier_fallback;/* component instead       */
    _Atomic unsigned long long n_reduce;          /* Reduces done by the core */
    _Atomic unsigned long long n_allreduce;       /* Allreduces, by the core */
    _Atomic unsigned long long n_reduce_fallback; /* handed to the previous  */
    _Atomic unsigned long long n_allreduce_fallback; /* component instead    */
    _Atomic unsigned n_teams;                     /* teams alive now         */
} mca_coll_numacoll_component_t;

OMPI_DECLSPEC extern mca_coll_numacoll_component_t
    mca_coll_numacoll_component;

/* Where a communicator's module stands. Setup is lazy: nothing is mapped
 * until the first collective numacoll takes, which every rank makes
 * together. */
typedef enum {
    MCA_COLL_NUMACOLL_LAZY = 0, /* no team yet; the next call creates it      */
    MCA_COLL_NUMACOLL_READY,    /* team alive; calls go to the core           */
    MCA_COLL_NUMACOLL_FALLBACK  /* setup failed on some rank: every call goes
                                   to the previous component, for good       */
} mca_coll_numacoll_state_t;

/* One module per communicator that selected us. */
typedef struct mca_coll_numacoll_module_t {
    mca_coll_base_module_t super;

    /* Not retained: the communicator owns this module, and the module dies
     * while the communicator is being destructed. */
    ompi_communicator_t *comm;
    mca_coll_numacoll_state_t state;
    numacoll_team_t *team;
    /* Lives as long as the team: the core may keep the pointer. */
    numacoll_bootstrap_t boot;

    /* The functions we replace, saved (and retained) when enabled, called
     * for whatever the core does not take. */
    mca_coll_base_module_bcast_fn_t prev_bcast;
    mca_coll_base_module_t *prev_bcast_module;
    mca_coll_base_module_barrier_fn_t prev_barrier;
    mca_coll_base_module_t *prev_barrier_module;
    mca_coll_base_module_reduce_fn_t prev_reduce;
    mca_coll_base_module_t *prev_reduce_module;
    mca_coll_base_module_allreduce_fn_t prev_allreduce;
    mca_coll_base_module_t *prev_allreduce_module;
} mca_coll_numacoll_module_t;

OBJ_CLASS_DECLARATION(mca_coll_numacoll_module_t);

/* Component entry points (coll_numacoll_module.c). */
int mca_coll_numacoll_init_query(bool enable_progress_threads,
                                 bool enable_mpi_threads);
mca_coll_base_module_t *
mca_coll_numacoll_comm_query(struct ompi_communicator_t *comm, int *priority);

/* Short aliases for the sources of this folder. */
typedef mca_coll_numacoll_module_t nc_module_t;
#define nc_component mca_coll_numacoll_component
/* Output stream of the coll framework: --mca coll_base_verbose N. */
#define NC_OUT (ompi_coll_base_framework.framework_output)

END_C_DECLS

#endif /* MCA_COLL_NUMACOLL_H */
