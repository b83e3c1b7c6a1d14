/*
 * Per-communicator glue: selection, the lazy team, Bcast and Barrier.
 *
 * Selection (comm_query) accepts intra-communicators of two or more
 * processes that all share this node and declines everything else with a
 * one-line reason at coll_base_verbose 10. Enabling saves the functions we
 * replace; the team and its segment are created inside the first Bcast or
 * Barrier on the communicator (every rank makes that call, so the creation
 * can be collective) and destroyed with the module when the communicator is
 * freed. If setup fails anywhere, every rank agrees to hand this
 * communicator's calls to the saved functions for good.
 *
 * Bcast moves bytes: a datatype whose `count` elements lie contiguously goes
 * straight from/to the user buffer, any other goes through Open MPI's
 * convertor in pack/unpack callbacks. Only the packed size must match
 * between ranks, so root and readers may use different (count, datatype)
 * pairs with the same signature, as MPI allows.
 */
#include "coll_numacoll.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/base/coll_base_functions.h"
#include "ompi/proc/proc.h"
#include "opal/datatype/opal_convertor.h"
#include "opal/util/output.h"

static void nc_module_construct(nc_module_t *m);
static void nc_module_destruct(nc_module_t *m);

OBJ_CLASS_INSTANCE(mca_coll_numacoll_module_t, mca_coll_base_module_t,
                   nc_module_construct, nc_module_destruct);

static int nc_module_enable(mca_coll_base_module_t *module,
                            ompi_communicator_t *comm);
static int nc_bcast(void *buf, int count, ompi_datatype_t *dtype, int root,
                    ompi_communicator_t *comm, mca_coll_base_module_t *module);
static int nc_barrier(ompi_communicator_t *comm,
                      mca_coll_base_module_t *module);

/* A log line for every call is too much at level 10, where selection is
 * explained; it appears from this level on. */
#define NC_CALL_VERBOSITY 20

static bool nc_call_verbose(void)
{
    return ompi_coll_base_framework.framework_verbose >= NC_CALL_VERBOSITY;
}

/* ---- selection -------------------------------------------------------- */

int mca_coll_numacoll_init_query(bool enable_progress_threads,
                                 bool enable_mpi_threads)
{
    /* Blocking collectives on one communicator never run concurrently (MPI
     * forbids it), and per-communicator state is all we keep: any thread
     * level is fine. */
    (void)enable_progress_threads;
    (void)enable_mpi_threads;
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *
mca_coll_numacoll_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    const char *why = NULL;
    int size = ompi_comm_size(comm);

    if (OMPI_COMM_IS_INTER(comm))
        why = "intercommunicator";
    else if (size < 2)
        why = "only 1 process";
    else if (ompi_group_have_remote_peers(comm->c_local_group))
        why = "its processes are on more than one node";
    else if (nc_component.priority < 0)
        why = "coll_numacoll_priority is negative";
    if (why) {
        opal_output_verbose(10, NC_OUT,
                            "coll:numacoll:comm_query: %s (cid %u, %d "
                            "processes): declined: %s", comm->c_name,
                            comm->c_contextid, size, why);
        return NULL;
    }

    nc_module_t *m = OBJ_NEW(mca_coll_numacoll_module_t);
    if (!m)
        return NULL;
    m->super.coll_module_enable = nc_module_enable;
    m->super.coll_bcast = nc_bcast;
    m->super.coll_barrier = nc_barrier;
    *priority = nc_component.priority;
    opal_output_verbose(10, NC_OUT,
                        "coll:numacoll:comm_query: %s (cid %u, %d processes "
                        "on this node): accepted, priority %d; the segment "
                        "is created on the first Bcast or Barrier",
                        comm->c_name, comm->c_contextid, size, *priority);
    return &m->super;
}

/*
 * Save the functions we replace. Modules are enabled in ascending priority,
 * so the communicator's table holds the next-best component's functions
 * now. It may hold none: when ompi_comm_coll_preference reorders components
 * (as HAN does for its sub-communicators) or a component of lower priority
 * than basic/libnbc is enabled first, the table can still be empty here
 * (open-mpi/ompi#9885). Calling a NULL fallback later would crash, so
 * decline instead: Open MPI then simply does not use this module.
 */
static int nc_module_enable(mca_coll_base_module_t *module,
                            ompi_communicator_t *comm)
{
    nc_module_t *m = (nc_module_t *)module;
    mca_coll_base_comm_coll_t *c = comm->c_coll;
    const char *missing = NULL;

    if (!c->coll_bcast || !c->coll_bcast_module ||
        c->coll_bcast_module == module)
        missing = "bcast";
    else if (!c->coll_barrier || !c->coll_barrier_module ||
             c->coll_barrier_module == module)
        missing = "barrier";
    if (missing) {
        opal_output_verbose(10, NC_OUT,
                            "coll:numacoll:enable: %s (cid %u): declined: no "
                            "previous %s to fall back on (numacoll was "
                            "enabled before the components below it: its "
                            "priority is lower than theirs, or "
                            "ompi_comm_coll_preference reordered them; see "
                            "open-mpi/ompi#9885)",
                            comm->c_name, comm->c_contextid, missing);
        return OMPI_ERROR;
    }
    m->prev_bcast = c->coll_bcast;
    m->prev_bcast_module = c->coll_bcast_module;
    OBJ_RETAIN(m->prev_bcast_module);
    m->prev_barrier = c->coll_barrier;
    m->prev_barrier_module = c->coll_barrier_module;
    OBJ_RETAIN(m->prev_barrier_module);
    m->comm = comm;
    return OMPI_SUCCESS;
}

/* ---- module life cycle ------------------------------------------------ */

static void nc_module_construct(nc_module_t *m)
{
    /* The parent constructor clears only its own part. */
    m->comm = NULL;
    m->state = MCA_COLL_NUMACOLL_LAZY;
    m->team = NULL;
    memset(&m->boot, 0, sizeof m->boot);
    m->prev_bcast = NULL;
    m->prev_bcast_module = NULL;
    m->prev_barrier = NULL;
    m->prev_barrier_module = NULL;
}

/* Runs while the communicator is destructed (MPI_Comm_free, MPI_Finalize).
 * numacoll_team_destroy() only unmaps (the segment's name was unlinked at
 * creation), so nothing here talks to other processes, whose frees may
 * come at any time. */
static void nc_module_destruct(nc_module_t *m)
{
    if (m->team) {
        int st = numacoll_team_destroy(m->team);
        if (st != NUMACOLL_OK)
            opal_output_verbose(1, NC_OUT,
                                "coll:numacoll: destroying the team of cid "
                                "%u failed: %s", m->comm ? m->comm->c_contextid
                                                         : 0u,
                                numacoll_strerror(st));
        m->team = NULL;
        atomic_fetch_sub(&nc_component.n_teams, 1u);
    }
    if (m->prev_bcast_module)
        OBJ_RELEASE(m->prev_bcast_module);
    if (m->prev_barrier_module)
        OBJ_RELEASE(m->prev_barrier_module);
}

/* ---- lazy setup ------------------------------------------------------- */

/*
 * The bootstrap exchange. Open MPI's ring allgather talks point-to-point on
 * the communicator with the reserved collective tag, without going through
 * the communicator's function table: it cannot land back in our own
 * Bcast/Barrier (basic's allgather is gather + bcast, which would), does not
 * depend on which components were selected, and is legal inside the first
 * collective call, which every rank of the communicator is making.
 */
static int nc_boot_allgather(const void *send, void *recv, size_t nbytes,
                             void *ctx)
{
    nc_module_t *m = ctx;
    if (nbytes > (size_t)INT_MAX)
        return -1;
    int rc = ompi_coll_base_allgather_intra_ring(send, (int)nbytes, MPI_BYTE,
                                                 recv, (int)nbytes, MPI_BYTE,
                                                 m->comm, &m->super);
    return rc == OMPI_SUCCESS ? 0 : -1;
}

/* Bytes a new segment may take under coll_numacoll_node_budget, measured on
 * /dev/shm (where the core's segments live, and where tmpfs counts them
 * until the last process unmaps them, names unlinked or not). UINT64_MAX
 * when no budget is set: the core itself refuses a segment larger than the
 * free space. */
static uint64_t nc_node_room(void)
{
    uint64_t budget = nc_component.node_budget;
    struct statvfs sv;
    if (budget == 0)
        return UINT64_MAX;
    if (statvfs("/dev/shm", &sv) != 0)
        return budget;  /* cannot measure: hold the budget alone */
    uint64_t used = ((uint64_t)sv.f_blocks - (uint64_t)sv.f_bfree) *
                    (uint64_t)sv.f_frsize;
    return used >= budget ? 0 : budget - used;
}

/* FNV-1a over the shape parameters, taken from the X-macro so that a field
 * added to the core is covered without a change here; ranks that disagree
 * on them would read each other's memory wrongly. */
static uint64_t nc_config_hash(const numacoll_config_t *c)
{
    uint64_t h = 1469598103934665603ULL;
#define X(field, type, def, min, max, doc)                                    \
    if (!mca_coll_numacoll_param_is_local(#field)) {                          \
        uint64_t v = (uint64_t)c->field;                                      \
        const unsigned char *b = (const unsigned char *)&v;                   \
        for (size_t i = 0; i < sizeof v; i++)                                 \
            h = (h ^ b[i]) * 1099511628211ULL;                                \
    }
    NUMACOLL_PARAM_LIST(X)
#undef X
    return h;
}

typedef struct nc_setup_msg {
    uint64_t room;      /* nc_node_room() on this rank                      */
    uint64_t cfg_hash;  /* nc_config_hash() of this rank's parameters        */
} nc_setup_msg_t;

/* Fall back for good, said once per communicator (by rank 0 when the
 * verdict is shared, by the rank that failed otherwise). */
static void nc_fall_back(nc_module_t *m, bool say, const char *why)
{
    m->state = MCA_COLL_NUMACOLL_FALLBACK;
    if (say)
        opal_output_verbose(10, NC_OUT,
                            "coll:numacoll: %s (cid %u, %d processes): "
                            "falling back to the previous component for good: "
                            "%s", m->comm->c_name, m->comm->c_contextid,
                            ompi_comm_size(m->comm), why);
}

/*
 * Create the team. Called inside the first Bcast/Barrier on the
 * communicator, on every rank. Every step that can fail differently on
 * different ranks ends in an exchange, so all ranks reach the same verdict
 * and none waits for a rank that gave up.
 */
static void nc_setup(nc_module_t *m)
{
    ompi_communicator_t *comm = m->comm;
    int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    numacoll_config_t cfg = nc_component.config;
    char why[256];

    m->boot.rank = rank;
    m->boot.size = size;
    m->boot.allgather = nc_boot_allgather;
    m->boot.ctx = m;

    /* 1. Room under the node budget and identical parameters, agreed. */
    nc_setup_msg_t mine = {nc_node_room(), nc_config_hash(&cfg)};
    nc_setup_msg_t *all = calloc((size_t)size, sizeof *all);
    if (!all) {
        /* The others will wait in the exchange below for this rank; there
         * is no way to tell them, so say it loudly. */
        opal_output(0, "coll:numacoll: rank %d cannot allocate %zu bytes for "
                    "the setup of %s (cid %u)", rank,
                    (size_t)size * sizeof *all, comm->c_name,
                    comm->c_contextid);
        nc_fall_back(m, true, "out of memory for the setup exchange");
        return;
    }
    if (nc_boot_allgather(&mine, all, sizeof mine, m) != 0) {
        free(all);
        nc_fall_back(m, true, "the bootstrap allgather failed");
        return;
    }
    uint64_t room = UINT64_MAX;
    int differs = -1;
    for (int r = 0; r < size; r++) {
        if (all[r].room < room)
            room = all[r].room;
        if (all[r].cfg_hash != all[0].cfg_hash && differs < 0)
            differs = r;
    }
    free(all);
    if (differs >= 0) {
        snprintf(why, sizeof why, "rank %d has other coll_numacoll_* "
                 "shape parameters (all but spin_count, timeout_ms, "
                 "mem_budget, verbose, pu) than rank 0", differs);
        nc_fall_back(m, rank == 0, why);
        return;
    }
    if (room == 0) {
        snprintf(why, sizeof why, "coll_numacoll_node_budget (%zu bytes) is "
                 "used up on this node", nc_component.node_budget);
        nc_fall_back(m, rank == 0, why);
        return;
    }
    /* The segment must fit both budgets; the core checks its size. */
    if (room != UINT64_MAX && (cfg.mem_budget == 0 || room < cfg.mem_budget))
        cfg.mem_budget = (size_t)room;

    /* 2. The team: collective, with agreement inside the core. */
    int st = numacoll_team_create(&m->boot, &cfg, &m->team);
    if (st == NUMACOLL_ERR_BUDGET) {
        snprintf(why, sizeof why, "its segment would exceed the memory "
                 "budget of %zu bytes (coll_numacoll_mem_budget / "
                 "coll_numacoll_node_budget)", cfg.mem_budget);
        nc_fall_back(m, rank == 0, why);
        return;
    }
    if (st != NUMACOLL_OK) {
        m->team = NULL;
        snprintf(why, sizeof why, "team creation failed: %s",
                 numacoll_strerror(st));
        nc_fall_back(m, true, why);
        return;
    }
    atomic_fetch_add(&nc_component.n_teams, 1u);
    m->state = MCA_COLL_NUMACOLL_READY;
    if (rank == 0)
        opal_output_verbose(10, NC_OUT,
                            "coll:numacoll: %s (cid %u): team of %d processes "
                            "ready, segment %s (f=%zu, s=%u, q=%u, tree %s, "
                            "radix %u)", comm->c_name, comm->c_contextid,
                            size, numacoll_team_segment_name(m->team),
                            cfg.frag_size, cfg.queue_depth, cfg.banks,
                            numacoll_tree_name((numacoll_tree_kind_t)cfg.tree),
                            cfg.radix);
}

/* True when the core takes this call; creates the team on first use. */
static bool nc_ready(nc_module_t *m)
{
    if (m->state == MCA_COLL_NUMACOLL_LAZY)
        nc_setup(m);
    return m->state == MCA_COLL_NUMACOLL_READY;
}

/* ---- errors ----------------------------------------------------------- */

/* Core status to MPI error class. A switch over the enum, without default,
 * so that -Wswitch flags a status added to the core and not mapped here. */
static int nc_mpi_error(numacoll_status_t st)
{
    switch (st) {
    case NUMACOLL_OK:              return MPI_SUCCESS;
    case NUMACOLL_ERR_ARG:         return MPI_ERR_ARG;
    case NUMACOLL_ERR_NOMEM:       return MPI_ERR_NO_MEM;
    case NUMACOLL_ERR_SYS:         return MPI_ERR_INTERN;
    case NUMACOLL_ERR_TOPO:        return MPI_ERR_INTERN;
    case NUMACOLL_ERR_BOOTSTRAP:   return MPI_ERR_INTERN;
    case NUMACOLL_ERR_TIMEOUT:     return MPI_ERR_OTHER;
#ifdef MPI_ERR_PROC_FAILED
    case NUMACOLL_ERR_PEER_DEAD:   return MPI_ERR_PROC_FAILED;
#else
    case NUMACOLL_ERR_PEER_DEAD:   return MPI_ERR_OTHER;
#endif
    case NUMACOLL_ERR_ABORTED:     return MPI_ERR_OTHER;
    case NUMACOLL_ERR_CALLBACK:    return MPI_ERR_INTERN;
    case NUMACOLL_ERR_BUDGET:      return MPI_ERR_NO_MEM;
    case NUMACOLL_ERR_UNSUPPORTED: return MPI_ERR_UNSUPPORTED_OPERATION;
    }
    return MPI_ERR_UNKNOWN;
}

/*
 * The MPI error class for a core status. The MPI binding (MPI_Bcast,
 * MPI_Barrier) passes what a coll function returns to the communicator's
 * error handler (OMPI_ERRHANDLER_RETURN), so returning the class is what
 * routes it there; invoking the handler here as well would call it twice.
 * The handler only sees the class, so the core's detailed sentence (which
 * rank waited for which on what) is printed first, unless coll_numacoll_
 * verbose is 0.
 */
static int nc_finish(nc_module_t *m, const char *op, int st)
{
    if (st == NUMACOLL_OK)
        return MPI_SUCCESS;
    if (nc_component.config.verbose >= 1)
        opal_output(0, "coll:numacoll: %s on %s (cid %u) failed on rank %d: "
                    "%s: %s", op, m->comm->c_name, m->comm->c_contextid,
                    ompi_comm_rank(m->comm), numacoll_strerror(st),
                    numacoll_team_last_error(m->team));
    return nc_mpi_error((numacoll_status_t)st);
}

/* ---- Bcast ------------------------------------------------------------ */

/*
 * Convertor state of a non-contiguous Bcast. The core asks for the packed
 * stream in order, fragment by fragment, so the convertor just continues
 * where it stopped. A fragment boundary may fall inside an element (6-byte
 * MPI_SHORT_INT elements and 8 KiB fragments): Open MPI's pack stops before
 * an element that does not fit, so the root packs that element aside and
 * hands its bytes over across the boundary. Unpacking accepts a partial
 * element and completes it with the next fragment.
 */
#define NC_CARRY 256    /* holds whole elements: the largest basic one is 32 */
typedef struct nc_dt_ctx {
    opal_convertor_t conv;
    size_t pos;                     /* stream bytes passed to/from the core */
    unsigned char carry[NC_CARRY];  /* root: packed, not yet passed on      */
    size_t carry_off, carry_len;
} nc_dt_ctx_t;

static int nc_pack(void *ctx, size_t offset, void *dst, size_t n)
{
    nc_dt_ctx_t *c = ctx;
    unsigned char *d = dst;
    if (offset != c->pos)
        return -1;  /* the core promises an in-order stream */
    c->pos += n;
    while (n > 0) {
        if (c->carry_len == 0) {
            struct iovec iov = {.iov_base = d, .iov_len = n};
            uint32_t iov_count = 1;
            size_t done = n;
            if (opal_convertor_pack(&c->conv, &iov, &iov_count, &done) < 0)
                return -1;
            d += done;
            n -= done;
            if (n == 0)
                break;
            /* The next element straddles the boundary. */
            iov.iov_base = c->carry;
            iov.iov_len = sizeof c->carry;
            iov_count = 1;
            done = sizeof c->carry;
            if (opal_convertor_pack(&c->conv, &iov, &iov_count, &done) < 0 ||
                done == 0)
                return -1;
            c->carry_off = 0;
            c->carry_len = done;
        }
        size_t k = n < c->carry_len ? n : c->carry_len;
        memcpy(d, c->carry + c->carry_off, k);
        c->carry_off += k;
        c->carry_len -= k;
        d += k;
        n -= k;
    }
    return 0;
}

static int nc_unpack(void *ctx, size_t offset, const void *src, size_t n)
{
    nc_dt_ctx_t *c = ctx;
    /* The convertor only reads through iov_base when unpacking. */
    struct iovec iov = {.iov_base = (void *)(uintptr_t)src, .iov_len = n};
    uint32_t iov_count = 1;
    size_t done = n;
    if (offset != c->pos ||
        opal_convertor_unpack(&c->conv, &iov, &iov_count, &done) < 0 ||
        done != n)
        return -1;
    c->pos += n;
    return 0;
}

static int nc_bcast_convertor(nc_module_t *m, void *buf, int count,
                              ompi_datatype_t *dtype, int root, size_t nbytes)
{
    nc_dt_ctx_t c;
    int rc;
    OBJ_CONSTRUCT(&c.conv, opal_convertor_t);
    c.pos = 0;
    c.carry_off = c.carry_len = 0;
    /* All ranks share one node, so the local architecture's convertor is
     * the right template for both directions. */
    if (ompi_comm_rank(m->comm) == root)
        rc = opal_convertor_copy_and_prepare_for_send(
            ompi_mpi_local_convertor, &dtype->super, (size_t)count, buf, 0,
            &c.conv);
    else
        rc = opal_convertor_copy_and_prepare_for_recv(
            ompi_mpi_local_convertor, &dtype->super, (size_t)count, buf, 0,
            &c.conv);
    int st = rc == OPAL_SUCCESS
                 ? numacoll_bcast_packed(m->team, nbytes, root, nc_pack,
                                         nc_unpack, &c)
                 : NUMACOLL_ERR_CALLBACK;
    OBJ_DESTRUCT(&c.conv);
    return st;
}

static int nc_bcast(void *buf, int count, ompi_datatype_t *dtype, int root,
                    ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    if (!nc_ready(m)) {
        atomic_fetch_add(&nc_component.n_bcast_fallback, 1ull);
        return m->prev_bcast(buf, count, dtype, root, comm,
                             m->prev_bcast_module);
    }

    size_t tsize = 0;
    ompi_datatype_type_size(dtype, &tsize);
    size_t nbytes = tsize * (size_t)count;
    bool contig = ompi_datatype_is_contiguous_memory_layout(dtype, count);
    int st;
    if (nbytes == 0) {
        /* Every rank has the same packed size, so all skip together. */
        st = NUMACOLL_OK;
    } else if (contig) {
        /* The first byte of contiguous data sits at the true lower bound. */
        st = numacoll_bcast(m->team, (char *)buf + dtype->super.true_lb,
                            nbytes, root);
    } else {
        st = nc_bcast_convertor(m, buf, count, dtype, root, nbytes);
    }
    if (st == NUMACOLL_ERR_UNSUPPORTED) {
        /* The core decides this from (size, root, config) before touching
         * shared memory, identically on every rank, so all ranks take the
         * previous component together. */
        atomic_fetch_add(&nc_component.n_bcast_fallback, 1ull);
        return m->prev_bcast(buf, count, dtype, root, comm,
                             m->prev_bcast_module);
    }
    if (nc_call_verbose())
        opal_output_verbose(NC_CALL_VERBOSITY, NC_OUT,
                            "coll:numacoll:bcast: %s (cid %u) root %d, %zu "
                            "bytes, %s: %s", comm->c_name, comm->c_contextid,
                            root, nbytes, contig ? "contiguous" : "convertor",
                            numacoll_strerror(st));
    if (st == NUMACOLL_OK)
        atomic_fetch_add(&nc_component.n_bcast, 1ull);
    return nc_finish(m, "MPI_Bcast", st);
}

/* ---- Barrier ---------------------------------------------------------- */

static int nc_barrier(ompi_communicator_t *comm,
                      mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    if (!nc_ready(m)) {
        atomic_fetch_add(&nc_component.n_barrier_fallback, 1ull);
        return m->prev_barrier(comm, m->prev_barrier_module);
    }
    int st = numacoll_barrier(m->team);
    if (nc_call_verbose())
        opal_output_verbose(NC_CALL_VERBOSITY, NC_OUT,
                            "coll:numacoll:barrier: %s (cid %u): %s",
                            comm->c_name, comm->c_contextid,
                            numacoll_strerror(st));
    if (st == NUMACOLL_OK)
        atomic_fetch_add(&nc_component.n_barrier, 1ull);
    return nc_finish(m, "MPI_Barrier", st);
}
