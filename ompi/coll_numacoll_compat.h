/*
 * The few things that differ between the Open MPI versions this component
 * builds against: 4.1 (coll interface 2.0.0, module 2.3.0) and 5.0 (coll
 * interface 2.4.0). Every version test of ompi/ lives here; the glue uses
 * the names below and is otherwise the same source for both.
 *
 *   NC_COLL_BASE_VERSION   the version block of the component. 5.0 accepts
 *                          only 2.4.0 and skips a component that says
 *                          otherwise without a word, so it must follow the
 *                          headers, never be written out.
 *   nc_coll_component_t    the component struct that block belongs to.
 *   nc_comm_cid(comm)      the communicator's local id, as Open MPI's own
 *                          coll_base_verbose lines print it: 4.1's context
 *                          id is a plain integer; 5.0's is an extended
 *                          (128-bit) id, whose local index is c_index.
 *   nc_comm_name(comm)     its name: 4.1 keeps an array in the
 *                          communicator, 5.0 a pointer, which may be NULL.
 *   nc_comm_info_is(comm, key, value)
 *                          whether the communicator's info holds key =
 *                          value: 4.1's opal_info_get copies into a buffer,
 *                          5.0's hands out a reference-counted string.
 *   nc_pid_publish()       puts this process's pid into the job's key-value
 *   nc_pid_of(proc)        store (PMIx, node-local scope) before the
 *                          modex, and reads a peer's back (0: unknown),
 *                          for the setup exchange's dead-peer check
 *                          (docs/ompi.md, Errors): 4.1 through its
 *                          opal_pmix module, 5.0 through PMIx itself.
 *
 * What needs no guard, because the source names fields instead of relying
 * on their order: 5.0's module struct lost ft_event and gained coll_agree,
 * coll_iagree and coll_revoke_local, which shifts coll_module_disable,
 * coll_reduce_local and base_data; this component sets its functions by
 * name and leaves the rest to the parent constructor. coll_module_disable
 * stays NULL on purpose: 5.0 calls it once for every function a module
 * installed (four times for this one) where 4.1 never calls it, so the
 * module releases what it holds in its destructor, which runs once on
 * both.
 */
#ifndef MCA_COLL_NUMACOLL_COMPAT_H
#define MCA_COLL_NUMACOLL_COMPAT_H

#include "ompi_config.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "opal/util/info.h"
#include "ompi/proc/proc.h"

/* The key of a process's pid: never read by anything but this component. */
#define NC_PID_KEY "coll_numacoll.pid"

#if OMPI_MAJOR_VERSION >= 6 || !defined(OMPI_MAJOR_VERSION)
/* main (6.0) moves to coll 3.0.0: modules install and restore their own
 * functions, and counts become size_t. */
#error "numacoll: needs Open MPI 4.1 or 5.0 (coll interface 2.0.0 or 2.4.0)"
#elif OMPI_MAJOR_VERSION == 5
#include "opal/mca/pmix/pmix-internal.h"

#define NC_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
typedef mca_coll_base_component_2_4_0_t nc_coll_component_t;

static inline unsigned nc_comm_cid(const ompi_communicator_t *comm)
{
    return (unsigned)ompi_comm_get_local_cid(comm);
}

static inline const char *nc_comm_name(const ompi_communicator_t *comm)
{
    return comm->c_name && comm->c_name[0] ? comm->c_name : "(unnamed)";
}

static inline bool nc_comm_info_is(ompi_communicator_t *comm, const char *key,
                                   const char *value)
{
    opal_cstring_t *v = NULL;
    int flag = 0;
    if (!comm->super.s_info ||
        opal_info_get(comm->super.s_info, key, &v, &flag) != OPAL_SUCCESS ||
        !flag || !v)
        return false;
    bool eq = strcmp(v->string, value) == 0;
    OBJ_RELEASE(v);
    return eq;
}

/* ompi_info opens the component without PMIx: nothing to publish then. */
static inline void nc_pid_publish(void)
{
    int32_t pid = (int32_t)getpid();
    int rc;
    if (PMIx_Initialized())
        OPAL_MODEX_SEND_VALUE(rc, PMIX_LOCAL, NC_PID_KEY, &pid, PMIX_INT32);
    (void)rc;
}

/* Optional: only what the local store holds, never a request to the
 * server (a peer of another job, or one that published nothing, is 0). */
static inline int32_t nc_pid_of(ompi_proc_t *proc)
{
    int32_t pid = 0, *ptr = &pid;
    int rc;
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, NC_PID_KEY, &proc->super.proc_name,
                                   &ptr, PMIX_INT32);
    return rc == PMIX_SUCCESS ? pid : 0;
}
#else
#include "opal/mca/pmix/pmix.h"

#define NC_COLL_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
typedef mca_coll_base_component_2_0_0_t nc_coll_component_t;

static inline unsigned nc_comm_cid(const ompi_communicator_t *comm)
{
    return (unsigned)comm->c_contextid;
}

static inline const char *nc_comm_name(const ompi_communicator_t *comm)
{
    return comm->c_name[0] ? comm->c_name : "(unnamed)";
}

static inline bool nc_comm_info_is(ompi_communicator_t *comm, const char *key,
                                   const char *value)
{
    char v[64];
    int flag = 0;
    if (!comm->super.s_info ||
        opal_info_get(comm->super.s_info, key, (int)sizeof v - 1, v, &flag) !=
            OPAL_SUCCESS)
        return false;
    return flag && strcmp(v, value) == 0;
}

/* As 5.0's (above); 4.1's module is all NULL until the runtime selects
 * one, and ompi_info opens the component without. */
static inline void nc_pid_publish(void)
{
    int32_t pid = (int32_t)getpid();
    int rc;
    if (opal_pmix.initialized && opal_pmix.initialized() && opal_pmix.put)
        OPAL_MODEX_SEND_VALUE(rc, OPAL_PMIX_LOCAL, NC_PID_KEY, &pid,
                              OPAL_INT32);
    (void)rc;
}

static inline int32_t nc_pid_of(ompi_proc_t *proc)
{
    int32_t pid = 0, *ptr = &pid;
    int rc;
    if (!opal_pmix.get)
        return 0;
    OPAL_MODEX_RECV_VALUE_OPTIONAL(rc, NC_PID_KEY, &proc->super.proc_name,
                                   &ptr, OPAL_INT32);
    return rc == OPAL_SUCCESS ? pid : 0;
}
#endif

#endif /* MCA_COLL_NUMACOLL_COMPAT_H */
