/*
 * Open MPI glue of numacoll: a `coll` component (Open MPI 4.1: coll 2.0.0,
 * module 2.3.0; Open MPI 5.0: coll 2.4.0; coll_numacoll_compat.h holds
 * what differs) that hands MPI_Bcast, MPI_Barrier, MPI_Reduce,
 * MPI_Allreduce, the gathers (Allgather(v), Gather(v)), Scatter(v),
 * Alltoall(v), Reduce_scatter(_block), Scan and Exscan on node-local
 * intra-communicators to the core library
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
#include "ompi/datatype/ompi_datatype.h"
#include "opal/datatype/opal_convertor.h"

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
    /* Two levels on communicators that span nodes (coll_numacoll_hier.c). */
    int virtual_nodes;          /* coll_numacoll_virtual_nodes; 0, 1: off    */
    char *virtual_split;        /* coll_numacoll_virtual_split: block, rr    */
    size_t hier_segsize;        /* coll_numacoll_hier_segsize                */
    size_t hier_alltoall_max;   /* coll_numacoll_hier_alltoall_max; 0: none */
    size_t hier_lanes_min;      /* coll_numacoll_hier_lanes_min; 0: never   */
    bool config_ok;             /* false: a parameter was rejected; the
                                   component then declines to open           */

    /* Teams alive now (an MPI_T level); the counters are below (nc_count). */
    _Atomic unsigned n_teams;
} mca_coll_numacoll_component_t;

OMPI_DECLSPEC extern mca_coll_numacoll_component_t
    mca_coll_numacoll_component;

/* Where a communicator's module stands. Setup is lazy: nothing is mapped
 * until the first collective numacoll takes, which every rank makes
 * together. */
typedef enum {
    MCA_COLL_NUMACOLL_LAZY = 0, /* no team yet; the next call creates it      */
    MCA_COLL_NUMACOLL_READY,    /* team alive; calls go to the core           */
    MCA_COLL_NUMACOLL_FALLBACK, /* setup failed on some rank: every call goes
                                   to the previous component, for good       */
    MCA_COLL_NUMACOLL_FAILED    /* this rank's setup exchange failed (a dead
                                   peer, coll_numacoll_timeout_ms): no
                                   verdict could be shared, so every call
                                   returns setup_err, for good              */
} mca_coll_numacoll_state_t;

/* The nonblocking and persistent functions the component installs, by
 * their names in Open MPI's module struct (coll_numacoll_nb.c). */
#define NC_NB_LIST(X)                                                         \
    X(ibcast) X(ibarrier) X(ireduce) X(iallreduce)                            \
    X(bcast_init) X(barrier_init) X(reduce_init) X(allreduce_init)

/* The gathers, Scatter(v), Alltoall(v), Reduce_scatter(_block), Scan and
 * Exscan (coll_numacoll_gather.c): the blocking forms, then the
 * nonblocking and persistent ones. */
#define NC_GA_BLOCKING_LIST(X)                                                \
    X(allgather) X(allgatherv) X(gather) X(gatherv) X(scatter) X(scatterv)    \
    X(alltoall) X(alltoallv) X(reduce_scatter_block) X(reduce_scatter)        \
    X(scan) X(exscan)
#define NC_GA_NB_LIST(X)                                                      \
    X(iallgather) X(iallgatherv) X(igather) X(igatherv) X(iscatter)           \
    X(iscatterv) X(ialltoall) X(ialltoallv) X(ireduce_scatter_block)          \
    X(ireduce_scatter) X(iscan) X(iexscan)                                    \
    X(allgather_init) X(allgatherv_init) X(gather_init) X(gatherv_init)       \
    X(scatter_init) X(scatterv_init) X(alltoall_init) X(alltoallv_init)       \
    X(reduce_scatter_block_init) X(reduce_scatter_init) X(scan_init)          \
    X(exscan_init)
#define NC_GA_LIST(X) NC_GA_BLOCKING_LIST(X) NC_GA_NB_LIST(X)

/* How a Reduce/Allreduce's (datatype, op) reaches the core. */
typedef enum { NC_RED_FALLBACK = 0, NC_RED_PREDEF, NC_RED_USER } nc_red_kind_t;
typedef struct nc_red_plan {
    nc_red_kind_t kind;
    numacoll_dtype_t dt;        /* NC_RED_PREDEF */
    numacoll_op_t op;           /* NC_RED_PREDEF */
    size_t elem_size;           /* NC_RED_USER: the datatype's extent        */
    ptrdiff_t true_lb;          /* where the first byte lies in the buffer   */
    /* NC_RED_PREDEF: elements of dt in one element of the datatype (1 for
     * a predefined one), and whether count of them lie apart (a derived
     * datatype with holes: packed into a temporary, NC_RED_PACKED) */
    size_t mult;
    bool packed;
} nc_red_plan_t;
#define NC_RED_KEPT 4

/* What precedes every block of the setup exchange: NUMACOLL_OK, or, alone,
 * that the rank origin left it with this status (culprit: the rank found
 * dead, or -1). */
typedef struct nc_boot_hdr {
    int32_t status, origin, culprit, pad;
} nc_boot_hdr_t;

/* One module per communicator that selected us. */
typedef struct mca_coll_numacoll_module_t {
    mca_coll_base_module_t super;

    /* Not retained: the communicator owns this module, and the module dies
     * while the communicator is being destructed. */
    ompi_communicator_t *comm;
    mca_coll_numacoll_state_t state;
    numacoll_team_t *team;
    /* numacoll_team_decline_mask of the team once READY, else 0: bit c,
     * some tuning rule of collective c declines (nc_rule_declines). */
    unsigned decline_mask;
    /* Lives as long as the team: the core may keep the pointer. */
    numacoll_bootstrap_t boot;
    /* The setup exchange's watch (coll_numacoll_module.c): the peers' pids
     * once a wait has needed them (NULL before and after setup), why this
     * rank left the exchange, the header it sent its successor then, and
     * the MPI class every call returns after (MCA_COLL_NUMACOLL_FAILED). */
    int32_t *boot_pid;
    int boot_status;
    char boot_why[200];
    nc_boot_hdr_t boot_left;
    int setup_err;

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

    /* The same for the nonblocking and persistent forms; NULL where the
     * communicator had none, and then ours are not installed either. */
#define NC_PREV_FIELDS(name)                                                  \
    mca_coll_base_module_##name##_fn_t prev_##name;                           \
    mca_coll_base_module_t *prev_##name##_module;
    NC_NB_LIST(NC_PREV_FIELDS)
    NC_GA_LIST(NC_PREV_FIELDS)
#undef NC_PREV_FIELDS

    /* Requests the core runs for this communicator, oldest first (the
     * core completes them in that order). The progress callback may run in
     * any thread, so the queue and every core call while it is not empty
     * are guarded by nb_lock; nb_next links the component's list of
     * modules with requests in flight (coll_numacoll_nb.c). */
    struct mca_coll_numacoll_request_t *nb_head, *nb_tail;
    struct mca_coll_numacoll_module_t *nb_next;
    bool nb_listed;
    _Atomic bool nb_lock;

    /* The plans of the last NC_RED_KEPT reductions (Reduce, Allreduce,
     * and the blocking Reduce_scatter(_block), Scan, Exscan) whose
     * predefined (datatype, op) the core takes: both handles are Open
     * MPI's own, never freed, so the pair names the plan for good
     * (nc_red_plan_kept). An application that alternates a few types
     * (DOUBLE_PRECISION, INTEGER, LOGICAL) finds each here. */
    struct nc_red_kept {
        ompi_datatype_t *dt;
        struct ompi_op_t *op;
        nc_red_plan_t plan;
    } red_kept[NC_RED_KEPT];
    unsigned red_next;          /* the entry replaced next */

    /* Non-NULL on a communicator that spans nodes (or virtual nodes):
     * its node-local and leaders' sub-communicators, created on the first
     * call (coll_numacoll_hier.c). Such a module has no team of its own. */
    struct nc_hier *hier;
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

/* ---- shared by coll_numacoll_module.c and coll_numacoll_nb.c ----------
 * Internal, but not static: the full names are the symbols, the short
 * ones below what the sources write. The version script keeps them all
 * local to the .so. */

/* ---- MPI_T counters ----------------------------------------------------
 * Every counter is an index into per-thread shards: a thread adds to its
 * own shard with a relaxed load and store, and a read sums the shards
 * (coll_numacoll_component.c). A locked add (the process-wide atomic this
 * replaced) waits for the call's stores to drain, the misses on a cold
 * receive buffer included: on the 2-vCPU VM a locked add after the core's
 * 8-byte Allreduce, in the application loop (a barrier, then one call,
 * cold buffers), took the call from 0.20-0.34 to 0.35-0.48 us. */
#define NC_CNT_LIST(X)                                                        \
    X(BCAST) X(BARRIER) X(REDUCE) X(ALLREDUCE)                                \
    X(BCAST_FALLBACK) X(BARRIER_FALLBACK) X(REDUCE_FALLBACK)                  \
    X(ALLREDUCE_FALLBACK)                                                     \
    X(TWO_LEVEL) X(TWO_LEVEL_LANES)                                           \
    X(IBCAST) X(IBARRIER) X(IREDUCE) X(IALLREDUCE)                            \
    X(IBCAST_FALLBACK) X(IBARRIER_FALLBACK) X(IREDUCE_FALLBACK)               \
    X(IALLREDUCE_FALLBACK)                                                    \
    X(BCAST_DECLINED) X(BARRIER_DECLINED) X(REDUCE_DECLINED)                  \
    X(ALLREDUCE_DECLINED)                                                     \
    X(IBCAST_DECLINED) X(IBARRIER_DECLINED) X(IREDUCE_DECLINED)               \
    X(IALLREDUCE_DECLINED) X(NOSPACE)

/* The gathers' counters (coll_numacoll_gather.c): per kind of call, the
 * calls the core completed and those handed to the previous component,
 * blocking, then nonblocking with persistent starts (inits for the
 * fallbacks); then those a tuning rule declined (decline=1), blocking and
 * nonblocking with persistent inits. */
#define NC_GA_KINDS_N 12
enum {
    NC_N_DONE, NC_N_FALLBACK, NC_N_IDONE, NC_N_IFALLBACK, NC_N_DECLINED,
    NC_N_IDECLINED, NC_N_COUNTERS
};

enum {
#define NC_CNT_ID(ID) NC_CNT_##ID,
    NC_CNT_LIST(NC_CNT_ID)
#undef NC_CNT_ID
    NC_CNT_GA,   /* kind k's counter c: NC_CNT_GA + k * NC_N_COUNTERS + c */
    NC_CNT_N = NC_CNT_GA + NC_GA_KINDS_N * NC_N_COUNTERS
};

/* A thread's counts; written by that thread alone, read by anyone. */
typedef struct nc_shard {
    _Atomic unsigned long long v[NC_CNT_N];
    struct nc_shard *next;
} nc_shard_t;

#define nc_shard_mine mca_coll_numacoll_shard_mine
#define nc_shard_join mca_coll_numacoll_shard_join
extern _Thread_local nc_shard_t *nc_shard_mine;
/* This thread's shard, made on its first count; NULL where none can be
 * made (the count is then added to a shared total with an atomic add). */
nc_shard_t *nc_shard_join(int id);

static inline void nc_count(int id)
{
    nc_shard_t *s = nc_shard_mine;
    if (!s && !(s = nc_shard_join(id)))
        return;
    /* one writer: a relaxed load and store (plain moves), no lock */
    atomic_store_explicit(
        &s->v[id], atomic_load_explicit(&s->v[id], memory_order_relaxed) + 1,
        memory_order_relaxed);
}

/* Per-call log lines appear from this coll_base_verbose level on. */
#define NC_CALL_VERBOSITY 20
#define nc_call_verbose mca_coll_numacoll_call_verbose
bool nc_call_verbose(void);

/* True when the core takes this communicator's calls; creates the team on
 * the first call (collective: every rank makes that call). */
#define nc_ready mca_coll_numacoll_ready
bool nc_ready(nc_module_t *m);

/* The MPI error class of a core status, after printing the core's
 * sentence; op names the MPI call. */
#define nc_finish mca_coll_numacoll_finish
int nc_finish(nc_module_t *m, const char *op, int st);

/* A coll function's answer meaning "not the core's: call the previous
 * component" (no MPI error class is negative). */
#define NC_DECLINED (-1000)

/* A coll function's answer meaning "a tuning rule declines this call
 * (decline=1, docs/tuning.md): call the previous component", counted in
 * the *_declined counters, apart from NC_DECLINED's fallbacks. */
#define NC_RULE_DECLINED (-1001)

/* Whether a READY module's tuning rule for (coll, rule size nbytes, as
 * the core looks it up) declines the call. Where no rule of coll
 * declines, a load and a test: an 8-byte Bcast costs about 0.4 us. */
static inline bool nc_rule_declines(const nc_module_t *m,
                                    numacoll_coll_t coll, size_t nbytes)
{
    return (m->decline_mask >> (unsigned)coll & 1u) &&
           numacoll_team_declines(m->team, coll, nbytes) == 1;
}

/* Whether a core status hands the call to the previous component, alike
 * on every rank: UNSUPPORTED (decided from the arguments and the rules
 * before any shared memory), or NOSPACE (the team's vote for its staging
 * found no room: every rank returns it, the call not run; counted in
 * nospace_count, and said once per process). */
#define nc_hands_back mca_coll_numacoll_hands_back
bool nc_hands_back(int st);

/* What a declined call does: NC_DECLINED (go to the previous component),
 * or, once this rank's setup exchange has failed, that failure's MPI
 * class: the previous component would wait for the same dead or silent
 * peer (docs/ompi.md, Errors). */
static inline int nc_declined(const nc_module_t *m)
{
    return m->state == MCA_COLL_NUMACOLL_FAILED ? m->setup_err : NC_DECLINED;
}

/* How a Bcast's (buf, count, datatype) reaches the core: contiguous data
 * straight from ptr, anything else through the convertor. */
typedef struct nc_bc_plan {
    size_t nbytes;      /* packed size: what must match between ranks     */
    bool contig;
    bool declines;      /* a signature whose elements the readers cannot
                         * be handed whole (coll_numacoll_module.c's
                         * nc_dt_whole): the previous component's          */
    void *ptr;          /* contig: the first byte (buf + true lower bound) */
} nc_bc_plan_t;
#define nc_bc_plan mca_coll_numacoll_bc_plan
nc_bc_plan_t nc_bc_plan(void *buf, int count, ompi_datatype_t *dtype);
#define nc_bc_log mca_coll_numacoll_bc_log
void nc_bc_log(nc_module_t *m, const char *what, int root,
               const nc_bc_plan_t *p, int st);

/* Convertor state of a non-contiguous Bcast, handed to the core's pack
 * and unpack callbacks (coll_numacoll_module.c says how elements that
 * straddle a fragment boundary are carried). It must live until the
 * call completes. */
#define NC_CARRY 256    /* holds whole elements: the largest basic one is 32 */
_Static_assert(NC_CARRY >= sizeof(long double _Complex),
               "the carry holds the largest basic element");
/* The largest basic element Open MPI's unpack takes split between two
 * pieces of the stream: it completes a split element in 16-byte arrays of
 * its own (opal_unpack_partial_datatype in 4.1,
 * opal_unpack_partial_predefined in 5.0), a size no header names; a
 * larger one overflows them. */
#define NC_CONV_PARTIAL 16
typedef struct nc_dt_ctx {
    opal_convertor_t conv;
    size_t pos;                     /* stream bytes passed to/from the core */
    size_t total;                   /* the whole stream's bytes             */
    size_t whole;                   /* readers: nc_dt_whole of the type     */
    unsigned char carry[NC_CARRY];  /* root: packed, not yet passed on;
                                     * a reader (whole): the start of an
                                     * element, not yet unpacked            */
    size_t carry_off, carry_len;
} nc_dt_ctx_t;
#define nc_dt_begin mca_coll_numacoll_dt_begin
#define nc_dt_end mca_coll_numacoll_dt_end
#define nc_pack mca_coll_numacoll_pack
#define nc_unpack mca_coll_numacoll_unpack
/* Construct c for the root (packing) or a reader (unpacking); a core
 * status. nc_dt_end destructs it, whatever nc_dt_begin returned. */
int nc_dt_begin(nc_dt_ctx_t *c, bool root, void *buf, int count,
                ompi_datatype_t *dtype);
void nc_dt_end(nc_dt_ctx_t *c);
int nc_pack(void *ctx, size_t offset, void *dst, size_t n);
int nc_unpack(void *ctx, size_t offset, const void *src, size_t n);

/* A user op's context for nc_user_op; must live until the call completes. */
typedef struct nc_user_ctx {
    struct ompi_op_t *op;
    ompi_datatype_t *dtype;
    mca_coll_base_module_t *module;
} nc_user_ctx_t;
#define nc_red_plan mca_coll_numacoll_red_plan
#define nc_red_takes mca_coll_numacoll_red_takes
#define nc_red_plan_kept mca_coll_numacoll_red_plan_kept
#define nc_red_bufs mca_coll_numacoll_red_bufs
#define nc_op_commutes mca_coll_numacoll_op_commutes
#define nc_user_op mca_coll_numacoll_user_op
#define nc_red_log mca_coll_numacoll_red_log
nc_red_plan_t nc_red_plan(int count, ompi_datatype_t *dtype,
                          struct ompi_op_t *op);
/* True when the core takes the planned call: sets the team up on first
 * use; every rank decides alike. */
bool nc_red_takes(nc_module_t *m, const nc_red_plan_t *p, int count,
                  int root);
/* Whether a tuning rule declines a Reduce (root >= 0) or Allreduce of
 * count elements planned as *p (the core's rule size: count times the
 * type's size, a user op's extent); the module READY. */
#define nc_red_rule_declines mca_coll_numacoll_red_rule_declines
bool nc_red_rule_declines(const nc_module_t *m, const nc_red_plan_t *p,
                          size_t count, ompi_datatype_t *dtype, int root);
/* nc_red_plan, through the module's plans of its last predefined pairs. */
nc_red_plan_t nc_red_plan_kept(nc_module_t *m, int count,
                               ompi_datatype_t *dtype, struct ompi_op_t *op);
/* A packed plan's temporary (NULL on failure): room for count elements'
 * contribution, and their result where recv. The contribution (sbuf, or
 * rbuf in place) packed into it (nc_red_pack, again at every start of a
 * persistent request); *send, *recv: the core's pointers. */
#define nc_red_stage mca_coll_numacoll_red_stage
#define nc_red_pack mca_coll_numacoll_red_pack
#define nc_red_unstage mca_coll_numacoll_red_unstage
char *nc_red_stage(int count, ompi_datatype_t *dt, const void *sbuf,
                   void *rbuf, bool recv, const void **send, void **recv_out);
int nc_red_pack(int count, ompi_datatype_t *dt, const void *sbuf,
                void *rbuf, char *tmp);
/* Unpack the result (the temporary's second half) into rbuf; a core
 * status. */
int nc_red_unstage(int count, ompi_datatype_t *dt, void *rbuf,
                   const char *tmp);
/* One convertor copy of count x dt between user and a packed run of
 * bytes at tmp; a core status. */
#define nc_dt_copy mca_coll_numacoll_dt_copy
int nc_dt_copy(bool pack, void *user, int count, ompi_datatype_t *dt,
               void *tmp, size_t bytes);
#define nc_reduce mca_coll_numacoll_reduce
#define nc_allreduce mca_coll_numacoll_allreduce
int nc_reduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
              struct ompi_op_t *op, int root, ompi_communicator_t *comm,
              mca_coll_base_module_t *module);
int nc_allreduce(const void *sbuf, void *rbuf, int count,
                 ompi_datatype_t *dtype, struct ompi_op_t *op,
                 ompi_communicator_t *comm, mca_coll_base_module_t *module);
/* The core's send and receive pointers of a Reduce (root >= 0) or
 * Allreduce (root < 0). */
void nc_red_bufs(nc_module_t *m, const nc_red_plan_t *p, const void *sbuf,
                 void *rbuf, int root, const void **send, void **recv);
int nc_op_commutes(struct ompi_op_t *op);
void nc_user_op(void *ctx, const void *in, void *inout, size_t count);
void nc_red_log(ompi_communicator_t *comm, const char *what, int root,
                int count, ompi_datatype_t *dtype, const nc_red_plan_t *p,
                int st);

/* Save the communicator's function `name` (its table c) as the one to
 * fall back on, or, where it has none (or only ours), withdraw ours before
 * Open MPI copies the module's functions into the communicator: a call
 * numacoll declines must never find a NULL fallback. */
#define NC_PREV_SAVE(m, c, comm, name)                                        \
    if ((c)->coll_##name && (c)->coll_##name##_module &&                      \
        (c)->coll_##name##_module != &(m)->super) {                           \
        (m)->prev_##name = (c)->coll_##name;                                  \
        (m)->prev_##name##_module = (c)->coll_##name##_module;                \
        OBJ_RETAIN((m)->prev_##name##_module);                                \
    } else {                                                                  \
        (m)->super.coll_##name = NULL;                                        \
        opal_output_verbose(10, NC_OUT, "coll:numacoll:enable: %s (cid %u): " \
                            "no previous " #name " to fall back on: "         \
                            "numacoll leaves it alone",                       \
                            nc_comm_name(comm), nc_comm_cid(comm));           \
    }
#define NC_PREV_CLEAR(m, name)                                                \
    (m)->prev_##name = NULL;                                                  \
    (m)->prev_##name##_module = NULL;
#define NC_PREV_RELEASE(m, name)                                              \
    if ((m)->prev_##name##_module)                                            \
        OBJ_RELEASE((m)->prev_##name##_module);

/* Reads an MPI_T performance variable: a counter (its ctx points to its
 * index, nc_cnt_ids) or the teams level (ctx &nc_component.n_teams). */
#define nc_pvar_read mca_coll_numacoll_pvar_read
#define nc_cnt_ids mca_coll_numacoll_cnt_ids
struct mca_base_pvar_t;
int nc_pvar_read(const struct mca_base_pvar_t *pvar, void *value, void *obj);
extern int nc_cnt_ids[NC_CNT_N];

/* ---- coll_numacoll_nb.c: requests --------------------------------------
 * comm_query installs our functions, enable saves the previous ones (and
 * withdraws ours where there are none), construct and destruct handle the
 * module's part. */
#define nc_nb_install mca_coll_numacoll_nb_install
#define nc_nb_enable mca_coll_numacoll_nb_enable
#define nc_nb_construct mca_coll_numacoll_nb_construct
#define nc_nb_destruct mca_coll_numacoll_nb_destruct
#define nc_nb_inflight mca_coll_numacoll_nb_inflight
#define nc_nb_blocking mca_coll_numacoll_nb_blocking
#define nc_nb_close mca_coll_numacoll_nb_close
void nc_nb_install(nc_module_t *m);
void nc_nb_enable(nc_module_t *m, ompi_communicator_t *comm);
void nc_nb_construct(nc_module_t *m);
void nc_nb_destruct(nc_module_t *m);
/* True while the core has requests of this process in flight. */
bool nc_nb_inflight(void);
/* The collectives, as a request records which it runs; NC_GATHERS: one
 * of coll_numacoll_gather.c's, described by the request's nc_ga_t. */
typedef enum {
    NC_BCAST, NC_BARRIER, NC_REDUCE, NC_ALLREDUCE, NC_GATHERS
} nc_kind_t;
/* A blocking call made while requests are in flight: run through a
 * request and wait on it, so that opal_progress keeps the others moving
 * (the core's own wait would not). buf: Bcast's buffer, Reduce's and
 * Allreduce's receive buffer. Returns the MPI status or NC_DECLINED. */
int nc_nb_blocking(nc_module_t *m, nc_kind_t kind, const void *sbuf, void *buf,
                   int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                   int root);
/* Component close: unregister the progress callback. */
void nc_nb_close(void);

/* ---- coll_numacoll_gather.c: the gathers, Scatter(v), Alltoall(v), -----
 * Reduce_scatter(_block), Scan, Exscan.
 * A planned call (nc_ga_t, opaque here) runs through a request like the
 * other collectives: nc_nb_ga makes it (persistent: inactive; otherwise
 * started; out NULL: a blocking call, waited for here) and owns g from
 * then on, whatever it returns (MPI status, or NC_DECLINED). nothing: no
 * bytes move on this rank, so the core is not asked (the request
 * completes at once). The request calls back: */
typedef struct nc_ga nc_ga_t;
#define nc_nb_ga mca_coll_numacoll_nb_ga
int nc_nb_ga(nc_module_t *m, bool persistent, bool nothing, const char *name,
             int counter, nc_ga_t *g,
             ompi_request_t **out);
#define nc_ga_prepare mca_coll_numacoll_ga_prepare
#define nc_ga_core mca_coll_numacoll_ga_core
#define nc_ga_done mca_coll_numacoll_ga_done
#define nc_ga_free mca_coll_numacoll_ga_free
/* Before each run: pack what the derived send types hold; a core status. */
int nc_ga_prepare(nc_ga_t *g);
/* The core's nonblocking call, or its persistent init. */
int nc_ga_core(nc_ga_t *g, numacoll_team_t *t, bool persistent,
               numacoll_request_t **req);
/* After each run with core status st: unpack into derived receive types,
 * log (what: the MPI call's name as logged); returns the final status. */
int nc_ga_done(nc_ga_t *g, int st, const char *what);
void nc_ga_free(nc_ga_t *g);
/* The module's part, as nc_nb_*: install after nc_nb_install (the
 * nonblocking forms only where it installed its own), enable, construct,
 * destruct; and the component's MPI_T variables. */
#define nc_ga_install mca_coll_numacoll_ga_install
#define nc_ga_enable mca_coll_numacoll_ga_enable
#define nc_ga_construct mca_coll_numacoll_ga_construct
#define nc_ga_destruct mca_coll_numacoll_ga_destruct
#define nc_ga_register_pvars mca_coll_numacoll_ga_register_pvars
#define nc_ga_count_fallback mca_coll_numacoll_ga_count_fallback
void nc_ga_install(nc_module_t *m);
void nc_ga_enable(nc_module_t *m, ompi_communicator_t *comm);
void nc_ga_construct(nc_module_t *m);
void nc_ga_destruct(nc_module_t *m);
void nc_ga_register_pvars(void);
/* Count one blocking call of the kind `name` (as in NC_GA_BLOCKING_LIST)
 * handed to the previous component (two levels decline some). */
void nc_ga_count_fallback(const char *name);

/* ---- coll_numacoll_hier.c: two levels ----------------------------------
 * nc_hier_wanted: whether comm_query should give comm a two-level module
 * (its processes span nodes, or coll_numacoll_virtual_nodes splits this
 * one, and it is not one of the node-local sub-communicators the two-level
 * mode creates itself). nc_hier_query: that module, less its enable
 * function (comm_query's). nc_hier_free: the
 * module's two-level state, from its destructor. nc_hier_register: the
 * parameter that is not a number; false when its value is rejected. */
#define nc_hier_wanted mca_coll_numacoll_hier_wanted
#define nc_hier_query mca_coll_numacoll_hier_query
#define nc_hier_free mca_coll_numacoll_hier_free
#define nc_hier_register mca_coll_numacoll_hier_register
bool nc_hier_wanted(ompi_communicator_t *comm);
nc_module_t *nc_hier_query(ompi_communicator_t *comm, int *priority);
void nc_hier_free(nc_module_t *m);
bool nc_hier_register(void);
/* For the two-level functions of other files: the sub-communicators and
 * table of a module (set up on first use, collectively: every rank makes
 * the call); false where the communicator's calls go to the previous
 * component. */
typedef struct nc_levels {
    ompi_communicator_t *low;   /* this node's processes, in rank order    */
    ompi_communicator_t *up;    /* the leaders (node i = rank i); NULL on
                                   the others                               */
    int nnodes, my_node;
    const int *node_of;         /* per rank: its node                       */
    const int *local_of;        /* ... and its rank in that node            */
    bool ordered;               /* nodes contiguous and in rank order       */
} nc_levels_t;
#define nc_hier_levels mca_coll_numacoll_hier_levels
bool nc_hier_levels(nc_module_t *m, nc_levels_t *out);
/* Pack (pack true) or unpack count elements of dtype at buf to or from
 * nbytes contiguous bytes at tmp; an OMPI status. */
#define nc_hier_convert mca_coll_numacoll_hier_convert
int nc_hier_convert(bool pack, void *buf, int count, ompi_datatype_t *dtype,
                    void *tmp, size_t nbytes);
/* Log a two-level call (coll_base_verbose 20) and count it in
 * two_level_count when rc is success; returns rc. g: its segments, NULL
 * for one. */
struct nc_segs;
#define nc_hier_done mca_coll_numacoll_hier_done
int nc_hier_done(nc_module_t *m, const char *what, int root, int count,
                 ompi_datatype_t *dtype, const struct nc_segs *g, int rc);

/* ---- coll_numacoll_hier_gather.c: two-level Allgather(v), Gather(v),
 * Scatter(v), Alltoall(v) ----------------------------------------------
 * nc_hier_ga_install: put them into a two-level module (nc_hier_query). */
#define nc_hier_ga_install mca_coll_numacoll_hier_ga_install
void nc_hier_ga_install(nc_module_t *m);

END_C_DECLS

#endif /* MCA_COLL_NUMACOLL_H */
