/*
 * Two levels on communicators whose processes span nodes: numacoll within
 * each node, and whatever component Open MPI selects without numacoll
 * (tuned, libnbc, basic, over the network BTLs) between one leader per
 * node. numacoll writes no network code: the leaders' level is Open MPI's.
 *
 * Sub-communicators. Created inside the first collective of this file on
 * the communicator, which every rank makes, as coll/han does:
 * creating them from comm_query or module_enable would run coll selection
 * inside selection. Two of them per process, and a third for lanes:
 *   - node-local: ompi_comm_split_type(MPI_COMM_TYPE_SHARED), split again
 *     by virtual node when coll_numacoll_virtual_nodes > 1 (for testing on
 *     one machine), rank order kept; it carries the info key
 *     ompi_comm_coll_numacoll_level=node, by which comm_query gives it an
 *     ordinary numacoll team instead of two levels again;
 *   - leaders: ompi_comm_split of the ranks with node-local rank 0, key =
 *     rank, so leader i is node i in rank order; its info key
 *     ompi_comm_coll_preference=^numacoll keeps numacoll off it (on one
 *     machine it would otherwise take it);
 *   - lanes, where every node holds two processes or more: lane i =
 *     node-local rank i of every node, key = node, for i < nlanes = the
 *     smallest node's size; ^numacoll as the leaders'. Lane 0 has the
 *     leaders' members; it comes from the same split as the other lanes
 *     all the same.
 * While they are created, the communicator's own blocking functions point
 * to the previous component: ompi_comm_split_type runs an Allreduce on it,
 * which would land back here. An allgather over the point-to-point layer
 * then tells every rank the node and node-local rank of every rank. A
 * communicator whose nodes all hold one process has nothing for numacoll
 * to do: it falls back to the previous component for good (every rank
 * sees the same table, so all decide alike).
 *
 * What each rank does (root r on node R; L(m): node-local cost, U(m): the
 * leaders' cost of m bytes):
 *   Bcast     node R: local Bcast from r, then R's leader joins the
 *             leaders' Bcast from R (when r leads R, both at once); other
 *             nodes: leaders' Bcast, then local Bcast from the leader.
 *             L + U, or U + L when r leads its node.
 *   Reduce    local Reduce to each leader; leaders' Reduce to R's leader;
 *             if r does not lead R, its leader sends it the result.
 *             L + U (+ one node-local transfer of m).
 *   Allreduce local Reduce to each leader, leaders' Allreduce in place,
 *             local Bcast from the leader. 2L + U. From
 *             coll_numacoll_hier_lanes_min bytes, in lanes: local
 *             Reduce_scatter of nlanes slices to the node's first nlanes
 *             ranks, each lane's Allreduce of its slice (all at once),
 *             local Allgatherv. L_rs(m) + U(m / nlanes) + L_ag(m).
 *   Barrier   local Barrier, leaders' Barrier, local one-byte Bcast from
 *             the leader (the release: the leader waits for nobody).
 *   Reduce_scatter(_block)  local Reduce of the whole vector (p m) to the
 *             leader; leaders' Reduce_scatter, each node's blocks one
 *             piece; local Scatterv. L(p m) + U + L(node's m).
 *   Scan, Exscan  (nodes in rank order) local Scan (Exscan); the node's
 *             total to its leader; leaders' Exscan of the totals; local
 *             Bcast of that prefix, put in front of each rank's result.
 *             2L + U + one node-local transfer.
 * Node-local calls are always numacoll's nonblocking ones, waited for in
 * Open MPI's wait (NC_LOW): numacoll's blocking calls spin without
 * opal_progress, and another component's request on the communicator
 * (libnbc serves its Ibcast) must move while its root sits here.
 * Above coll_numacoll_hier_segsize bytes, Bcast, Reduce and Allreduce cut
 * the buffer into S segments (of bytes for Bcast, see nc_hier_bcast; of
 * whole elements for the reductions). The node-local level runs
 * as numacoll's nonblocking calls; the leaders' level as the leaders'
 * component's nonblocking Ibcast and Ireduce (libnbc), and for Allreduce
 * as its blocking Allreduce (tuned's recursive doubling or ring: libnbc's
 * Iallreduce is a Reduce then a Bcast, twice the time between two
 * nodes), whose waits drive opal_progress and so numacoll's requests.
 * One segment's leaders' step overlaps the node-local steps of its
 * neighbours: about (S + 1) * max(L(m/S), U(m/S)) instead of L(m) + U(m)
 * (Allreduce: (S + 2) * max(...)). Each communicator sees its calls in
 * the same order on every rank, which the fixed schedules below keep.
 *
 * Non-commutative ops keep rank order only when each node's ranks are
 * contiguous and the nodes follow each other in rank order (local Reduce
 * in rank order, then the leaders' in node order); otherwise that call
 * goes to the previous component.
 */
#include "coll_numacoll.h"
#include "coll_numacoll_hier.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/group/group.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/base/coll_base_functions.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/request/request.h"
#include "opal/mca/base/mca_base_var.h"
#include "opal/util/info.h"
#include "opal/util/output.h"

#define NC_LEVEL_KEY "ompi_comm_coll_numacoll_level"
#define NC_PREF_KEY "ompi_comm_coll_preference"

typedef enum { NC_HIER_LAZY = 0, NC_HIER_READY, NC_HIER_OFF } nc_hier_state_t;

typedef struct nc_hier {
    nc_hier_state_t state;
    ompi_communicator_t *low;   /* this node's processes, in rank order    */
    ompi_communicator_t *up;    /* the leaders, node i = rank i; NULL on
                                   the others                               */
    int nnodes, my_node;
    int *node_of;               /* per rank of the communicator: its node   */
    int *local_of;              /* ... and its rank in that node            */
    bool ordered;               /* nodes contiguous and in rank order       */
    /* Lanes (Allreduce from coll_numacoll_hier_lanes_min bytes): lane i
     * holds node-local rank i of every node, i < nlanes = the smallest
     * node's size; 0 lanes where there are none. */
    int nlanes;
    size_t lanes_min;           /* coll_numacoll_hier_lanes_min, agreed     */
    ompi_communicator_t *lane;  /* this rank's lane; NULL on ranks >= nlanes */
    int *lane_cnt, *lane_dsp;   /* per node-local rank: its slice           */
} nc_hier_t;

static bool nc_split_rr;        /* coll_numacoll_virtual_split = rr */

/* ---- parameters -------------------------------------------------------- */

bool nc_hier_register(void)
{
    nc_component.virtual_split = "block";
    (void)mca_base_component_var_register(
        &nc_component.super.collm_version, "virtual_split",
        "For testing and experiments, with coll_numacoll_virtual_nodes: how "
        "the processes of a node are dealt to its virtual nodes, by their "
        "rank on the node: block (contiguous blocks, the first ones one "
        "process larger when the count does not divide) or rr (round-robin: "
        "rank i to virtual node i mod N, so nodes are not contiguous and "
        "non-commutative reductions take the previous component).",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_ALL_EQ, &nc_component.virtual_split);
    const char *v = nc_component.virtual_split ? nc_component.virtual_split
                                               : "";
    if (strcasecmp(v, "block") == 0 || strcasecmp(v, "rr") == 0) {
        nc_split_rr = strcasecmp(v, "rr") == 0;
        return true;
    }
    opal_output(0, "coll:numacoll: rejected: coll_numacoll_virtual_split = "
                "\"%.64s\" is not a split: valid values are block or rr; the "
                "numacoll component is disabled", v);
    return false;
}

/* ---- selection ------------------------------------------------------------ */

bool nc_hier_wanted(ompi_communicator_t *comm)
{
    /* Our own node-local sub-communicators get a plain team. */
    if (nc_comm_info_is(comm, NC_LEVEL_KEY, "node"))
        return false;
    return nc_component.virtual_nodes > 1 ||
           ompi_group_have_remote_peers(comm->c_local_group);
}

static int nc_hier_bcast(void *buf, int count, ompi_datatype_t *dtype,
                         int root, ompi_communicator_t *comm,
                         mca_coll_base_module_t *module);
static int nc_hier_barrier(ompi_communicator_t *comm,
                           mca_coll_base_module_t *module);
static int nc_hier_reduce(const void *sbuf, void *rbuf, int count,
                          ompi_datatype_t *dtype, struct ompi_op_t *op,
                          int root, ompi_communicator_t *comm,
                          mca_coll_base_module_t *module);
static int nc_hier_allreduce(const void *sbuf, void *rbuf, int count,
                             ompi_datatype_t *dtype, struct ompi_op_t *op,
                             ompi_communicator_t *comm,
                             mca_coll_base_module_t *module);
static int nc_hier_reduce_scatter_block(const void *sbuf, void *rbuf,
                                        int rcount, ompi_datatype_t *dtype,
                                        struct ompi_op_t *op,
                                        ompi_communicator_t *comm,
                                        mca_coll_base_module_t *module);
static int nc_hier_reduce_scatter(const void *sbuf, void *rbuf,
                                  const int *rcounts, ompi_datatype_t *dtype,
                                  struct ompi_op_t *op,
                                  ompi_communicator_t *comm,
                                  mca_coll_base_module_t *module);
static int nc_hier_scan(const void *sbuf, void *rbuf, int count,
                        ompi_datatype_t *dtype, struct ompi_op_t *op,
                        ompi_communicator_t *comm,
                        mca_coll_base_module_t *module);
static int nc_hier_exscan(const void *sbuf, void *rbuf, int count,
                          ompi_datatype_t *dtype, struct ompi_op_t *op,
                          ompi_communicator_t *comm,
                          mca_coll_base_module_t *module);

/* Blocking forms only: the nonblocking and persistent forms, and every
 * collective not installed here, stay with the previous component on such
 * a communicator. */
nc_module_t *nc_hier_query(ompi_communicator_t *comm, int *priority)
{
    nc_module_t *m = OBJ_NEW(mca_coll_numacoll_module_t);
    if (!m)
        return NULL;
    m->hier = calloc(1, sizeof *m->hier);
    if (!m->hier) {
        OBJ_RELEASE(m);
        return NULL;
    }
    m->super.coll_bcast = nc_hier_bcast;
    m->super.coll_barrier = nc_hier_barrier;
    m->super.coll_reduce = nc_hier_reduce;
    m->super.coll_allreduce = nc_hier_allreduce;
    m->super.coll_reduce_scatter_block = nc_hier_reduce_scatter_block;
    m->super.coll_reduce_scatter = nc_hier_reduce_scatter;
    m->super.coll_scan = nc_hier_scan;
    m->super.coll_exscan = nc_hier_exscan;
    nc_hier_ga_install(m);
    *priority = nc_component.priority;
    opal_output_verbose(10, NC_OUT,
                        "coll:numacoll:comm_query: %s (cid %u, %d processes): "
                        "accepted for two levels, priority %d, because %s; "
                        "the sub-communicators are created on the first "
                        "collective", nc_comm_name(comm), nc_comm_cid(comm),
                        ompi_comm_size(comm), *priority,
                        ompi_group_have_remote_peers(comm->c_local_group)
                            ? "its processes span nodes"
                            : "coll_numacoll_virtual_nodes splits its node");
    return m;
}

/* Free the sub-communicators. ompi_comm_free leaves MPI_COMM_NULL behind,
 * which must not be freed again. */
static void nc_hier_drop(nc_hier_t *h)
{
    if (h->low && h->low != MPI_COMM_NULL)
        ompi_comm_free(&h->low);
    if (h->up && h->up != MPI_COMM_NULL)
        ompi_comm_free(&h->up);
    if (h->lane && h->lane != MPI_COMM_NULL)
        ompi_comm_free(&h->lane);
    h->low = h->up = h->lane = NULL;
    h->nlanes = 0;
}

void nc_hier_free(nc_module_t *m)
{
    nc_hier_t *h = m->hier;
    /* Local in Open MPI 4.1 and 5.0: nothing is exchanged, so freeing from
     * the communicator's destructor is safe, as coll/han does. */
    nc_hier_drop(h);
    free(h->node_of);
    free(h->local_of);
    free(h->lane_cnt);
    free(h->lane_dsp);
    free(h);
    m->hier = NULL;
}

/* ---- setup ------------------------------------------------------------------ */

/* The communicator's blocking functions, swapped for the previous
 * component's while the sub-communicators are created. */
typedef struct nc_parent_fns {
    mca_coll_base_module_bcast_fn_t bcast;
    mca_coll_base_module_t *bcast_module;
    mca_coll_base_module_barrier_fn_t barrier;
    mca_coll_base_module_t *barrier_module;
    mca_coll_base_module_reduce_fn_t reduce;
    mca_coll_base_module_t *reduce_module;
    mca_coll_base_module_allreduce_fn_t allreduce;
    mca_coll_base_module_t *allreduce_module;
    /* ompi_comm_split runs an Allgather on the communicator. */
    mca_coll_base_module_allgather_fn_t allgather;
    mca_coll_base_module_t *allgather_module;
} nc_parent_fns_t;

static void nc_parent_swap(mca_coll_base_comm_coll_t *c, nc_parent_fns_t *out,
                           const nc_parent_fns_t *in)
{
#define NC_SWAP(n)                                                            \
    out->n = c->coll_##n;                                                     \
    out->n##_module = c->coll_##n##_module;                                   \
    c->coll_##n = in->n;                                                      \
    c->coll_##n##_module = in->n##_module;
    NC_SWAP(bcast) NC_SWAP(barrier) NC_SWAP(reduce) NC_SWAP(allreduce)
    NC_SWAP(allgather)
#undef NC_SWAP
}

/* Node-local communicator: this machine's processes, then this virtual
 * node's when virtual nodes are asked for. */
static int nc_make_low(nc_module_t *m, opal_info_t *mine, opal_info_t *other)
{
    nc_hier_t *h = m->hier;
    int nv = nc_component.virtual_nodes;
    if (nv <= 1)
        return ompi_comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, 0, mine,
                                    &h->low);
    ompi_communicator_t *node = NULL;
    int rc = ompi_comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, 0, other,
                                  &node);
    if (rc != OMPI_SUCCESS)
        return rc;
    int r = ompi_comm_rank(node), n = ompi_comm_size(node);
    int k = nv < n ? nv : n;
    int color = nc_split_rr ? r % k : (int)((long long)r * k / n);
    rc = ompi_comm_split_with_info(node, color, r, mine, &h->low, false);
    ompi_comm_free(&node);
    return rc;
}

/* From every rank's leader (as a rank of the communicator, -1 where setup
 * failed): each rank's node and node-local rank. False when the table is
 * not a partition into nodes led by their lowest rank. */
static bool nc_hier_table(nc_hier_t *h, const int *lead, int size,
                          int *max_local, int *min_local)
{
    int *index = malloc((size_t)size * sizeof *index);
    int *count = calloc((size_t)size, sizeof *count);
    h->node_of = malloc((size_t)size * sizeof *h->node_of);
    h->local_of = malloc((size_t)size * sizeof *h->local_of);
    bool ok = index && count && h->node_of && h->local_of;
    h->nnodes = 0;
    h->ordered = true;
    *max_local = 0;
    for (int r = 0; ok && r < size; r++) {
        int l = lead[r];
        if (l < 0 || l > r || (l < r && lead[l] != l)) {
            ok = false;
            break;
        }
        if (l == r)
            index[r] = h->nnodes++;
        int node = index[l];
        /* Nodes are numbered by their lowest rank, so going back to a
         * lower number means a node's ranks are not contiguous. */
        if (r > 0 && node < h->node_of[r - 1])
            h->ordered = false;
        h->node_of[r] = node;
        h->local_of[r] = count[node]++;
        if (count[node] > *max_local)
            *max_local = count[node];
    }
    *min_local = size;
    for (int n = 0; ok && n < h->nnodes; n++)
        if (count[n] < *min_local)
            *min_local = count[n];
    free(index);
    free(count);
    return ok;
}

static void nc_hier_describe(nc_module_t *m)
{
    nc_hier_t *h = m->hier;
    /* Counting the nodes' sizes costs nodes x ranks: only when shown. */
    if (ompi_coll_base_framework.framework_verbose < 10)
        return;
    int size = ompi_comm_size(m->comm);
    char sizes[160];
    size_t at = 0;
    sizes[0] = '\0';
    for (int n = 0, r = 0; n < h->nnodes && at + 16 < sizeof sizes; n++) {
        int c = 0;
        for (r = 0; r < size; r++)
            c += h->node_of[r] == n;
        at += (size_t)snprintf(sizes + at, sizeof sizes - at, "%s%d",
                               n ? "," : "", c);
    }
    if (at + 16 >= sizeof sizes)
        snprintf(sizes + at, sizeof sizes - at, ",...");
    char lanes[80] = "no lanes";
    if (h->nlanes > 0)
        snprintf(lanes, sizeof lanes, "%d lanes (Allreduce from %zu bytes)",
                 h->nlanes, h->lanes_min);
    char virt[64] = "";
    if (nc_component.virtual_nodes > 1)
        snprintf(virt, sizeof virt, " (virtual: %d per node, %s)",
                 nc_component.virtual_nodes, nc_split_rr ? "rr" : "block");
    opal_output_verbose(10, NC_OUT,
                        "coll:numacoll:two-level: %s (cid %u, %d processes): "
                        "%d nodes%s of %s processes, %s; numacoll within "
                        "each node, the leaders' communicator (cid %u) by "
                        "the component Open MPI selects without numacoll; "
                        "segments of %zu bytes; %s",
                        nc_comm_name(m->comm), nc_comm_cid(m->comm), size,
                        h->nnodes, virt, sizes,
                        h->ordered ? "contiguous in rank order"
                                   : "not contiguous (non-commutative ops "
                                     "take the previous component)",
                        h->up ? nc_comm_cid(h->up) : 0u,
                        nc_component.hier_segsize, lanes);
}

/* Collective over the communicator, called while the previous component
 * serves it: lane i = node-local rank i of every node, in node order,
 * for i < nlanes. Kept only where every rank made its own. */
static void nc_hier_lanes(nc_module_t *m, int nlanes, opal_info_t *info)
{
    nc_hier_t *h = m->hier;
    ompi_communicator_t *comm = m->comm;
    const int rank = ompi_comm_rank(comm), li = h->local_of[rank];
    const size_t n = (size_t)ompi_comm_size(h->low);
    h->lane_cnt = malloc(n * sizeof *h->lane_cnt);
    h->lane_dsp = malloc(n * sizeof *h->lane_dsp);
    int rc = ompi_comm_split_with_info(comm, li < nlanes ? li : MPI_UNDEFINED,
                                       h->node_of[rank], info, &h->lane,
                                       false);
    if (h->lane == MPI_COMM_NULL)
        h->lane = NULL;
    int good = rc == OMPI_SUCCESS && h->lane_cnt && h->lane_dsp &&
               (h->lane != NULL) == (li < nlanes) &&
               (!h->lane || (ompi_comm_size(h->lane) == h->nnodes &&
                             ompi_comm_rank(h->lane) == h->node_of[rank]));
    rc = comm->c_coll->coll_allreduce(MPI_IN_PLACE, &good, 1, MPI_INT,
                                      MPI_MIN, comm,
                                      comm->c_coll->coll_allreduce_module);
    if (rc == OMPI_SUCCESS && good) {
        h->nlanes = nlanes;
        return;
    }
    if (h->lane)
        ompi_comm_free(&h->lane);
    h->lane = NULL;
    free(h->lane_cnt);
    free(h->lane_dsp);
    h->lane_cnt = h->lane_dsp = NULL;
}

/* Collective over the communicator: create the sub-communicators and the
 * table, or decide (everywhere alike) to fall back for good. */
static void nc_hier_setup(nc_module_t *m)
{
    nc_hier_t *h = m->hier;
    ompi_communicator_t *comm = m->comm;
    int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    nc_parent_fns_t prev = {
        m->prev_bcast, m->prev_bcast_module, m->prev_barrier,
        m->prev_barrier_module, m->prev_reduce, m->prev_reduce_module,
        m->prev_allreduce, m->prev_allreduce_module,
        /* ours only where a previous one was saved */
        m->prev_allgather ? m->prev_allgather : comm->c_coll->coll_allgather,
        m->prev_allgather ? m->prev_allgather_module
                          : comm->c_coll->coll_allgather_module};
    nc_parent_fns_t ours;
    nc_parent_swap(comm->c_coll, &ours, &prev);

    opal_info_t mine, other;
    OBJ_CONSTRUCT(&mine, opal_info_t);
    OBJ_CONSTRUCT(&other, opal_info_t);
    int rc = opal_info_set(&mine, NC_LEVEL_KEY, "node");
    if (rc == OPAL_SUCCESS)
        rc = opal_info_set(&other, NC_PREF_KEY, "^numacoll");
    if (rc == OPAL_SUCCESS)
        rc = nc_make_low(m, &mine, &other);
    if (rc == OMPI_SUCCESS) {
        bool leader = ompi_comm_rank(h->low) == 0;
        rc = ompi_comm_split_with_info(comm, leader ? 0 : MPI_UNDEFINED,
                                       rank, &other, &h->up, false);
        if (h->up == MPI_COMM_NULL)
            h->up = NULL;
    }
    OBJ_DESTRUCT(&mine);

    /* Every rank's leader, through the point-to-point layer (not our own
     * functions); -1 says that setup failed here. */
    int lead = -1, zero = 0;
    if (rc == OMPI_SUCCESS &&
        ompi_group_translate_ranks(h->low->c_local_group, 1, &zero,
                                   comm->c_local_group, &lead) != OMPI_SUCCESS)
        lead = -1;
    int *leads = malloc((size_t)size * sizeof *leads);
    int max_local = 0, min_local = 0;
    bool ok = leads &&
              ompi_coll_base_allgather_intra_ring(&lead, 1, MPI_INT, leads, 1,
                                                  MPI_INT, comm, &m->super) ==
                  OMPI_SUCCESS &&
              nc_hier_table(h, leads, size, &max_local, &min_local);
    free(leads);
    if (ok) {
        h->my_node = h->node_of[rank];
        /* Leader i must be node i: the split's key is the rank. */
        ok = (h->up != NULL) == (h->local_of[rank] == 0) &&
             (!h->up || ompi_comm_rank(h->up) == h->my_node);
    }
    /* Agreed by every rank, through the previous component: whether
     * setup worked everywhere (a rank short of memory for its table
     * would otherwise skip the lanes' split the others wait in), and one
     * lanes limit (each process reads its own parameters; where they
     * differ, lanes are off). MIN of ~x is ~MAX of x. */
    uint64_t agree[3] = {ok, nc_component.hier_lanes_min,
                         ~(uint64_t)nc_component.hier_lanes_min};
    if (comm->c_coll->coll_allreduce(MPI_IN_PLACE, agree, 3, MPI_UINT64_T,
                                     MPI_MIN, comm,
                                     comm->c_coll->coll_allreduce_module) !=
        OMPI_SUCCESS)
        agree[0] = 0;
    ok = agree[0] != 0;
    h->lanes_min = agree[1] == ~agree[2] ? (size_t)agree[1] : 0;
    if (ok && h->nnodes >= 2 && min_local >= 2 && h->lanes_min > 0)
        nc_hier_lanes(m, min_local, &other);
    OBJ_DESTRUCT(&other);
    nc_parent_swap(comm->c_coll, &prev, &ours);
    const char *why = !ok ? "the sub-communicators could not be created"
                    : h->nnodes < 2 ? "all its processes are on one node"
                    : max_local < 2 ? "every node holds one process"
                                    : NULL;
    if (why) {
        /* Where setup failed on some rank only, the others learnt it in
         * the agreement above and say so too. */
        h->state = NC_HIER_OFF;
        nc_hier_drop(h);
        if (rank == 0 || !ok)
            opal_output_verbose(10, NC_OUT,
                                "coll:numacoll:two-level: %s (cid %u, %d "
                                "processes): falling back to the previous "
                                "component for good: %s", nc_comm_name(comm),
                                nc_comm_cid(comm), size, why);
        return;
    }
    h->state = NC_HIER_READY;
    if (rank == 0)
        nc_hier_describe(m);
}

static bool nc_hier_ready(nc_module_t *m)
{
    if (m->hier->state == NC_HIER_LAZY)
        nc_hier_setup(m);
    return m->hier->state == NC_HIER_READY;
}

/* Segments of whole elements of about coll_numacoll_hier_segsize bytes. */
typedef struct nc_segs {
    int n;              /* how many                        */
    int per;            /* elements in each but the last   */
    size_t count;
    ptrdiff_t extent;
} nc_segs_t;

/* count elements of tsize bytes, extent apart. */
static nc_segs_t nc_segs_of(size_t count, size_t tsize, ptrdiff_t extent)
{
    nc_segs_t g = {.n = 1, .per = (int)(count < INT_MAX ? count : INT_MAX),
                   .count = count, .extent = extent};
    if (tsize == 0 || count == 0)
        return g;
    size_t per = nc_component.hier_segsize / tsize;
    if (per == 0)
        per = 1;
    if (per >= count)
        return g;
    g.per = (int)(per < INT_MAX ? per : INT_MAX);
    g.n = (int)((count + (size_t)g.per - 1) / (size_t)g.per);
    return g;
}

static nc_segs_t nc_segs(int count, ompi_datatype_t *dtype)
{
    size_t tsize = 0;
    ptrdiff_t lb = 0, extent = 0;
    (void)ompi_datatype_type_size(dtype, &tsize);
    (void)ompi_datatype_get_extent(dtype, &lb, &extent);
    return nc_segs_of(count > 0 ? (size_t)count : 0, tsize, extent);
}

static int nc_seg_len(const nc_segs_t *g, int s)
{
    return s == g->n - 1 ? (int)(g->count - (size_t)s * (size_t)g->per)
                         : g->per;
}

/* Segment s of buf; MPI_IN_PLACE and NULL stay what they are. */
static void *nc_seg_at(const nc_segs_t *g, const void *buf, int s)
{
    if (buf == MPI_IN_PLACE || buf == NULL)
        return (void *)(uintptr_t)buf;
    return (char *)(uintptr_t)buf + (ptrdiff_t)s * g->per * g->extent;
}

static void nc_hier_log(nc_module_t *m, const char *what, int root, int count,
                        ompi_datatype_t *dtype, const nc_segs_t *g, int rc)
{
    if (!nc_call_verbose())
        return;
    opal_output_verbose(NC_CALL_VERBOSITY, NC_OUT,
                        "coll:numacoll:two-level %s: %s (cid %u) root %d, %d "
                        "x %s, %d segment%s: %s", what, nc_comm_name(m->comm),
                        nc_comm_cid(m->comm), root, count,
                        dtype && dtype->name[0] ? dtype->name : "-",
                        g ? g->n : 1, g && g->n > 1 ? "s" : "",
                        rc == OMPI_SUCCESS ? "done" : "failed");
}

int nc_hier_done(nc_module_t *m, const char *what, int root, int count,
                 ompi_datatype_t *dtype, const nc_segs_t *g, int rc)
{
    nc_hier_log(m, what, root, count, dtype, g, rc);
    if (rc == OMPI_SUCCESS)
        nc_count(NC_CNT_TWO_LEVEL);
    return rc;
}

/* ---- Bcast -------------------------------------------------------------------- */

/* The two levels of a Bcast of g's segments of (buf, dtype). */
static int nc_hier_bcast_run(nc_hier_t *h, void *buf, int count,
                             ompi_datatype_t *dtype, int root,
                             const nc_segs_t *gp)
{
    ompi_communicator_t *lo = h->low, *up = h->up;
    int rn = h->node_of[root], rl = h->local_of[root];
    bool home = h->my_node == rn;
    nc_segs_t g = *gp;
    int rc = OMPI_SUCCESS;

    if (g.n == 1) {
        if (home && up && rl == 0) {
            /* The root leads: its node's Bcast starts first (it costs the
             * root a few stores), then the leaders' one, during whose
             * waits the node's moves on. */
            nc_rq_t q = {.n = 0};
            NC_ICALL(&q, lo, ibcast, buf, count, dtype, 0);
            rc = NC_CALL(up, bcast, buf, count, dtype, rn);
            rc = nc_first(rc, nc_rq_wait(&q));
        } else if (home) {
            if (up && rl == 0)
                rc = NC_CALL(up, bcast, buf, count, dtype, rn);
            NC_LOW(rc, lo, ibcast, buf, count, dtype, rl);
            if (up && rl != 0)
                rc = nc_first(rc, NC_CALL(up, bcast, buf, count, dtype, rn));
        } else {
            if (up)
                rc = NC_CALL(up, bcast, buf, count, dtype, rn);
            NC_LOW(rc, lo, ibcast, buf, count, dtype, 0);
        }
        return rc;
    }

    /* Step s waits for step s - 1's requests at its end, so the leaders'
     * transfer of one segment overlaps the node-local one of the next
     * (root's node) or of the previous (other nodes, whose leaders fetch
     * one segment ahead). */
    nc_rq_t prev = {.n = 0}, cur = {.n = 0}, ahead[2] = {{.n = 0}, {.n = 0}};
    for (int s = 0; s < g.n; s++) {
        void *p = nc_seg_at(&g, buf, s);
        int n = nc_seg_len(&g, s);
        if (home && rl == 0) {
            if (up)
                NC_ICALL(&cur, up, ibcast, p, n, dtype, rn);
            NC_ICALL(&cur, lo, ibcast, p, n, dtype, 0);
        } else if (home && up) {
            /* The root is elsewhere on this node: it reaches the leader
             * first, in the node-local Bcast of this segment. */
            nc_rq_t one = {.n = 0};
            NC_ICALL(&one, lo, ibcast, p, n, dtype, rl);
            nc_rq_note(&cur, nc_rq_wait(&one));
            NC_ICALL(&cur, up, ibcast, p, n, dtype, rn);
        } else if (home) {
            NC_ICALL(&cur, lo, ibcast, p, n, dtype, rl);
        } else if (up) {
            if (s == 0)
                NC_ICALL(&ahead[0], up, ibcast, p, n, dtype, rn);
            if (s + 1 < g.n)
                NC_ICALL(&ahead[(s + 1) % 2], up, ibcast,
                         nc_seg_at(&g, buf, s + 1), nc_seg_len(&g, s + 1),
                         dtype, rn);
            nc_rq_note(&cur, nc_rq_wait(&ahead[s % 2]));
            NC_ICALL(&cur, lo, ibcast, p, n, dtype, 0);
        } else {
            NC_ICALL(&cur, lo, ibcast, p, n, dtype, 0);
        }
        rc = nc_first(rc, nc_rq_wait(&prev));
        prev = cur;
        cur = (nc_rq_t){.n = 0};
    }
    return nc_first(rc, nc_rq_wait(&prev));
}

/* Pack (root) or unpack (the others) count elements of dtype at buf
 * to or from the contiguous bytes at tmp. */
int nc_hier_convert(bool pack, void *buf, int count,
                    ompi_datatype_t *dtype, void *tmp, size_t nbytes)
{
    opal_convertor_t conv;
    OBJ_CONSTRUCT(&conv, opal_convertor_t);
    int rc = pack ? opal_convertor_copy_and_prepare_for_send(
                        ompi_mpi_local_convertor, &dtype->super,
                        (size_t)count, buf, 0, &conv)
                  : opal_convertor_copy_and_prepare_for_recv(
                        ompi_mpi_local_convertor, &dtype->super,
                        (size_t)count, buf, 0, &conv);
    struct iovec iov = {.iov_base = tmp, .iov_len = nbytes};
    uint32_t n = 1;
    size_t done = nbytes;
    if (rc == OPAL_SUCCESS)
        rc = pack ? opal_convertor_pack(&conv, &iov, &n, &done)
                  : opal_convertor_unpack(&conv, &iov, &n, &done);
    OBJ_DESTRUCT(&conv);
    return rc >= 0 && done == nbytes ? OMPI_SUCCESS : OMPI_ERROR;
}

/*
 * MPI lets the root and the others pass different (count, datatype) pairs
 * of one type signature, so a Bcast is cut into segments of bytes, which
 * every rank counts alike: straight from the buffer where this rank's data
 * lie contiguously, else through a packed copy (the root packs before, the
 * others unpack after). Segments travel as MPI_BYTE, which assumes the
 * nodes share one data representation (Open MPI's default build).
 */
static int nc_hier_bcast(void *buf, int count, ompi_datatype_t *dtype,
                         int root, ompi_communicator_t *comm,
                         mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    if (!nc_hier_ready(m)) {
        nc_count(NC_CNT_BCAST_FALLBACK);
        return m->prev_bcast(buf, count, dtype, root, comm,
                             m->prev_bcast_module);
    }
    size_t tsize = 0;
    (void)ompi_datatype_type_size(dtype, &tsize);
    size_t nbytes = tsize * (size_t)(count > 0 ? count : 0);
    nc_segs_t g = nc_segs_of(nbytes, 1, 1);
    int rc;
    if (g.n == 1) {
        rc = nc_hier_bcast_run(m->hier, buf, count, dtype, root, &g);
    } else if (ompi_datatype_is_contiguous_memory_layout(dtype, count)) {
        rc = nc_hier_bcast_run(m->hier, (char *)buf + dtype->super.true_lb,
                               (int)(nbytes < INT_MAX ? nbytes : INT_MAX),
                               MPI_BYTE, root, &g);
    } else {
        bool me = ompi_comm_rank(comm) == root;
        void *tmp = malloc(nbytes);
        rc = tmp ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
        if (tmp && me)
            rc = nc_hier_convert(true, buf, count, dtype, tmp, nbytes);
        /* Every rank runs the Bcast, even one that failed: the others
         * wait for it. */
        if (tmp)
            rc = nc_first(rc, nc_hier_bcast_run(
                                  m->hier, tmp,
                                  (int)(nbytes < INT_MAX ? nbytes : INT_MAX),
                                  MPI_BYTE, root, &g));
        if (tmp && !me && rc == OMPI_SUCCESS)
            rc = nc_hier_convert(false, buf, count, dtype, tmp, nbytes);
        free(tmp);
    }
    return nc_hier_done(m, "bcast", root, count, dtype, &g, rc);
}

/* ---- Barrier ------------------------------------------------------------------ */

static int nc_hier_barrier(ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    if (!nc_hier_ready(m)) {
        nc_count(NC_CNT_BARRIER_FALLBACK);
        return m->prev_barrier(comm, m->prev_barrier_module);
    }
    nc_hier_t *h = m->hier;
    ompi_communicator_t *lo = h->low, *up = h->up;
    /* Everyone on the node has arrived; then every node; then the leader
     * releases its node with a one-byte Bcast: one line it writes and
     * does not wait on, where a second Barrier would make it wait for
     * every rank of its node to arrive again (a rank descheduled then
     * stalls the leader, and with it the next call's leaders' level).
     * The node-local ones nonblocking, as NC_LOW says why. */
    nc_rq_t q = {.n = 0};
    nc_rq_note(&q, lo->c_coll->coll_ibarrier(lo, nc_rq_slot(&q),
                                             lo->c_coll->coll_ibarrier_module));
    int rc = nc_rq_wait(&q);
    if (up)
        rc = nc_first(rc, up->c_coll->coll_barrier(
                              up, up->c_coll->coll_barrier_module));
    char go = 1;
    NC_LOW(rc, lo, ibcast, &go, 1, MPI_BYTE, 0);
    return nc_hier_done(m, "barrier", -1, 0, NULL, NULL, rc);
}

/* ---- Reduce and Allreduce ------------------------------------------------------ */

/* Whether the two levels keep the op's meaning: a non-commutative op
 * needs ranks in node order (see the top of this file). Same answer on
 * every rank. */
static bool nc_hier_takes_op(nc_module_t *m, struct ompi_op_t *op)
{
    return nc_hier_ready(m) && (m->hier->ordered || nc_op_commutes(op));
}

/* Scratch for count elements of dtype: the returned pointer is where
 * element 0 goes (the span's gap taken off); *raw is what to free. */
static void *nc_scratch(int count, ompi_datatype_t *dtype, void **raw)
{
    ptrdiff_t gap = 0;
    ptrdiff_t span = opal_datatype_span(&dtype->super, (size_t)count, &gap);
    *raw = malloc(span > 0 ? (size_t)span : 1);
    return *raw ? (char *)*raw - gap : NULL;
}

static int nc_hier_reduce(const void *sbuf, void *rbuf, int count,
                          ompi_datatype_t *dtype, struct ompi_op_t *op,
                          int root, ompi_communicator_t *comm,
                          mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    if (count == 0)     /* as the one-level Reduce: nothing collective */
        return MPI_SUCCESS;
    if (!nc_hier_takes_op(m, op)) {
        nc_count(NC_CNT_REDUCE_FALLBACK);
        return m->prev_reduce(sbuf, rbuf, count, dtype, op, root, comm,
                              m->prev_reduce_module);
    }
    nc_hier_t *h = m->hier;
    ompi_communicator_t *lo = h->low, *up = h->up;
    int rn = h->node_of[root], rl = h->local_of[root];
    bool home = h->my_node == rn, me = ompi_comm_rank(comm) == root;
    const int tag = MCA_COLL_BASE_TAG_REDUCE;
    int rc = OMPI_SUCCESS;

    /* What this rank gives to the node-local Reduce, and where a leader
     * keeps its node's partial result (the root's rbuf if it leads). */
    const void *give = sbuf;
    void *part = NULL, *raw = NULL;
    if (up) {
        part = me ? rbuf : nc_scratch(count, dtype, &raw);
        if (!part)
            rc = OMPI_ERR_OUT_OF_RESOURCE;
    } else if (sbuf == MPI_IN_PLACE) {
        give = rbuf;    /* only the root may pass MPI_IN_PLACE */
    }
    /* The leaders' Reduce: R's leader keeps its contribution in place. */
    const void *up_give = home ? MPI_IN_PLACE : part;
    void *up_recv = home ? part : NULL;
    nc_segs_t g = nc_segs(count, dtype);

    if (g.n == 1) {
        NC_LOW(rc, lo, ireduce, give, up ? part : NULL, count, dtype, op, 0);
        if (up)
            rc = nc_first(rc, NC_CALL(up, reduce, up_give, up_recv, count,
                                      dtype, op, rn));
        if (home && rl != 0 && up)
            rc = nc_first(rc, MCA_PML_CALL(send(part, count, dtype, rl, tag,
                                                MCA_PML_BASE_SEND_STANDARD,
                                                lo)));
        else if (me && !up)
            rc = nc_first(rc, MCA_PML_CALL(recv(rbuf, count, dtype, 0, tag, lo,
                                                MPI_STATUS_IGNORE)));
        free(raw);
        return nc_hier_done(m, "reduce", root, count, dtype, &g, rc);
    }

    /* Pipelined: a leader's node-local Reduce of segment s + 1 runs while
     * the leaders' Reduce of segment s is in flight; R's leader forwards
     * segment s to a root it does not lead once that one is done. */
    bool forward = home && up && rl != 0;
    nc_rq_t prev = {.n = 0}, cur = {.n = 0}, upq[2] = {{.n = 0}, {.n = 0}};
    for (int s = 0; s < g.n; s++) {
        int n = nc_seg_len(&g, s);
        void *ps = nc_seg_at(&g, part, s);
        if (up) {
            nc_rq_t one = {.n = 0};
            NC_ICALL(&one, lo, ireduce, nc_seg_at(&g, give, s), ps, n, dtype,
                     op, 0);
            nc_rq_note(&cur, nc_rq_wait(&one));
            nc_rq_t *q = forward ? &upq[s % 2] : &cur;
            NC_ICALL(q, up, ireduce, home ? MPI_IN_PLACE : ps,
                     home ? ps : NULL, n, dtype, op, rn);
            if (forward && s > 0) {
                nc_rq_note(&cur, nc_rq_wait(&upq[(s - 1) % 2]));
                nc_rq_note(&cur, MCA_PML_CALL(isend(
                                     nc_seg_at(&g, part, s - 1),
                                     nc_seg_len(&g, s - 1), dtype, rl, tag,
                                     MCA_PML_BASE_SEND_STANDARD, lo,
                                     nc_rq_slot(&cur))));
            }
        } else if (me) {
            nc_rq_t one = {.n = 0};
            NC_ICALL(&one, lo, ireduce, nc_seg_at(&g, give, s), NULL, n,
                     dtype, op, 0);
            nc_rq_note(&cur, nc_rq_wait(&one));
            /* Posted after this rank's part of segment s is given, so an
             * in-place contribution is read before it is overwritten. */
            nc_rq_note(&cur, MCA_PML_CALL(irecv(nc_seg_at(&g, rbuf, s), n,
                                                dtype, 0, tag, lo,
                                                nc_rq_slot(&cur))));
        } else {
            NC_ICALL(&cur, lo, ireduce, nc_seg_at(&g, give, s), NULL, n,
                     dtype, op, 0);
        }
        rc = nc_first(rc, nc_rq_wait(&prev));
        prev = cur;
        cur = (nc_rq_t){.n = 0};
    }
    if (forward) {
        int s = g.n - 1;
        nc_rq_note(&cur, nc_rq_wait(&upq[s % 2]));
        nc_rq_note(&cur, MCA_PML_CALL(isend(nc_seg_at(&g, part, s),
                                            nc_seg_len(&g, s), dtype, rl, tag,
                                            MCA_PML_BASE_SEND_STANDARD, lo,
                                            nc_rq_slot(&cur))));
    }
    rc = nc_first(rc, nc_rq_wait(&prev));
    rc = nc_first(rc, nc_rq_wait(&cur));
    free(raw);
    return nc_hier_done(m, "reduce", root, count, dtype, &g, rc);
}

/* Allreduce in lanes: node-local Reduce_scatter of the vector into nlanes
 * slices, slice i to node-local rank i; slice i's Allreduce between the
 * nodes on lane i, all lanes at once; node-local Allgatherv. Each lane
 * carries m / nlanes between the nodes where a lone leader carries m:
 * L_rs(m) + U(m / nlanes) + L_ag(m). Not pipelined: by segments (as the
 * leaders' Allreduce below) it measured 1.2 times slower at 1 and 4 MiB
 * on 16 cores, np 4 on 2 virtual nodes (docs/ompi.md), since every lane
 * rank sits in its blocking Allreduce while its node-local steps wait for
 * progress. Rank order is kept where nodes are contiguous (the
 * Reduce_scatter folds in node-local order, a lane in node order). */
static int nc_hier_allreduce_lanes(nc_module_t *m, const void *sbuf,
                                   void *rbuf, int count,
                                   ompi_datatype_t *dtype,
                                   struct ompi_op_t *op)
{
    nc_hier_t *h = m->hier;
    ompi_communicator_t *lo = h->low;
    const int n = ompi_comm_size(lo), me = ompi_comm_rank(lo), nl = h->nlanes;
    for (int i = 0; i < n; i++) {
        const int j = i < nl ? i : nl;
        const long long a = (long long)count * j / nl;
        const long long b = i < nl ? (long long)count * (j + 1) / nl : a;
        h->lane_dsp[i] = (int)a;
        h->lane_cnt[i] = (int)(b - a);
    }
    ptrdiff_t lb, ext;
    (void)ompi_datatype_get_extent(dtype, &lb, &ext);
    char *home = (char *)rbuf + (ptrdiff_t)h->lane_dsp[me] * ext;
    const int cnt = h->lane_cnt[me];
    const void *give = sbuf;
    void *got = home, *raw = NULL;
    int rc = OMPI_SUCCESS;
    if (sbuf == MPI_IN_PLACE) {
        /* The input is rbuf itself, which the slice must not overwrite
         * while it is read: the slice lands in scratch, then at home.
         * Without scratch the calls still run in place (nobody waits
         * forever); the result is undefined and the error returned. */
        give = rbuf;
        void *tmp = cnt > 0 ? nc_scratch(cnt, dtype, &raw) : NULL;
        if (tmp)
            got = tmp;
        else if (cnt > 0) {
            rc = OMPI_ERR_OUT_OF_RESOURCE;
            give = MPI_IN_PLACE;
            got = rbuf;
        }
    }
    NC_LOW(rc, lo, ireduce_scatter, give, got, h->lane_cnt, dtype, op);
    if (got != home && got != rbuf && rc == OMPI_SUCCESS)
        rc = ompi_datatype_copy_content_same_ddt(dtype, (size_t)cnt, home,
                                                 got);
    free(raw);
    if (h->lane && cnt > 0)
        NC_UP(rc, h->lane, allreduce, MPI_IN_PLACE, home, cnt, dtype, op);
    NC_LOW(rc, lo, iallgatherv, MPI_IN_PLACE, 0, dtype, rbuf, h->lane_cnt,
           h->lane_dsp, dtype);
    if (rc == OMPI_SUCCESS)
        nc_count(NC_CNT_TWO_LEVEL_LANES);
    return nc_hier_done(m, "allreduce in lanes", -1, count, dtype, NULL, rc);
}

static int nc_hier_allreduce(const void *sbuf, void *rbuf, int count,
                             ompi_datatype_t *dtype, struct ompi_op_t *op,
                             ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    if (count == 0)
        return MPI_SUCCESS;
    if (!nc_hier_takes_op(m, op)) {
        nc_count(NC_CNT_ALLREDUCE_FALLBACK);
        return m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm,
                                 m->prev_allreduce_module);
    }
    nc_hier_t *h = m->hier;
    if (h->nlanes > 1) {
        size_t tsize = 0;
        (void)ompi_datatype_type_size(dtype, &tsize);
        if ((size_t)count * tsize >= h->lanes_min)
            return nc_hier_allreduce_lanes(m, sbuf, rbuf, count, dtype, op);
    }
    ompi_communicator_t *lo = h->low, *up = h->up;
    /* The leader reduces its node into its own rbuf; the others give
     * sbuf (rbuf when in place) and receive the result in the Bcast. */
    const void *give = sbuf == MPI_IN_PLACE && !up ? rbuf : sbuf;
    nc_segs_t g = nc_segs(count, dtype);
    int rc = OMPI_SUCCESS;

    if (g.n == 1) {
        NC_LOW(rc, lo, ireduce, give, up ? rbuf : NULL, count, dtype, op, 0);
        if (up)
            rc = nc_first(rc, NC_CALL(up, allreduce, MPI_IN_PLACE, rbuf,
                                      count, dtype, op));
        NC_LOW(rc, lo, ibcast, rbuf, count, dtype, 0);
        return nc_hier_done(m, "allreduce", -1, count, dtype, &g, rc);
    }

    /* Pipelined. On the node-local communicator every rank starts, in
     * this order, Reduce(0), then in step s Reduce(s + 1) and Bcast(s - 1),
     * then Bcast(S - 1): the same order everywhere. In step s a leader,
     * once Reduce(s) is done, runs the leaders' Allreduce of s as a
     * blocking call: the leaders' component's own (tuned: recursive
     * doubling or a ring; libnbc's nonblocking one is a Reduce then a
     * Bcast, twice the time between two nodes). Its waits drive
     * opal_progress, which moves numacoll's requests, so Reduce(s + 1) and
     * Bcast(s - 1) run on the node meanwhile. */
    nc_rq_t prev = {.n = 0}, cur = {.n = 0}, red[2] = {{.n = 0}, {.n = 0}};
    for (int s = -1; s < g.n; s++) {
        nc_rq_t *rq = up ? &red[(s + 1) % 2] : &cur;
        if (s + 1 < g.n)
            NC_ICALL(rq, lo, ireduce, nc_seg_at(&g, give, s + 1),
                     up ? nc_seg_at(&g, rbuf, s + 1) : NULL,
                     nc_seg_len(&g, s + 1), dtype, op, 0);
        if (s > 0)
            NC_ICALL(&cur, lo, ibcast, nc_seg_at(&g, rbuf, s - 1),
                     nc_seg_len(&g, s - 1), dtype, 0);
        if (up && s >= 0) {
            nc_rq_note(&cur, nc_rq_wait(&red[s % 2]));
            nc_rq_note(&cur, NC_CALL(up, allreduce, MPI_IN_PLACE,
                                     nc_seg_at(&g, rbuf, s),
                                     nc_seg_len(&g, s), dtype, op));
        }
        rc = nc_first(rc, nc_rq_wait(&prev));
        prev = cur;
        cur = (nc_rq_t){.n = 0};
    }
    NC_ICALL(&cur, lo, ibcast, nc_seg_at(&g, rbuf, g.n - 1),
             nc_seg_len(&g, g.n - 1), dtype, 0);
    rc = nc_first(rc, nc_rq_wait(&prev));
    rc = nc_first(rc, nc_rq_wait(&cur));
    return nc_hier_done(m, "allreduce", -1, count, dtype, &g, rc);
}

/* ---- Reduce_scatter(_block), Scan and Exscan ------------------------------- */

/* Reduce_scatter with per-rank counts (Reduce_scatter_block: counts NULL,
 * each rcount). Node-local Reduce of the whole vector to the leader;
 * leaders' Reduce_scatter in place with each node's blocks as one piece
 * (nodes not contiguous in rank order: the leader first moves the blocks
 * into node order, which needs a commutative op); node-local Scatterv from
 * the leader. L(p m) + U + L(node's m). Declines (*declined, before any
 * communication, alike on every rank) where two levels cannot serve. */
static int nc_hier_rs(nc_module_t *m, const void *sbuf, void *rbuf,
                      const int *counts, int rcount, ompi_datatype_t *dtype,
                      struct ompi_op_t *op, bool *declined, bool *empty)
{
    nc_hier_t *h = m->hier;
    int size = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm);
    *declined = false;
    size_t total = 0;
    for (int r = 0; r < size; r++)
        total += (size_t)(counts ? counts[r] : rcount);
    *empty = total == 0;
    if (*empty)         /* as the one-level calls: nothing collective */
        return OMPI_SUCCESS;
    if (!nc_hier_takes_op(m, op) || total > INT_MAX) {
        *declined = true;
        return OMPI_SUCCESS;
    }
    ompi_communicator_t *lo = h->low, *up = h->up;
    int nl = ompi_comm_size(lo);
    /* Per rank its count and the start of its block in node order; per
     * node its elements; per local rank its count and start in the
     * leader's piece. */
    int *cnt = malloc((size_t)size * sizeof *cnt);
    int *ncnt = calloc((size_t)h->nnodes, sizeof *ncnt);
    int *lcnt = malloc((size_t)nl * sizeof *lcnt);
    int *ldsp = malloc((size_t)nl * sizeof *ldsp);
    size_t *nat = calloc((size_t)h->nnodes + 1, sizeof *nat);
    size_t *pos = malloc((size_t)size * sizeof *pos);
    int rc = cnt && ncnt && lcnt && ldsp && nat && pos
                 ? OMPI_SUCCESS : OMPI_ERR_OUT_OF_RESOURCE;
    for (int r = 0; rc == OMPI_SUCCESS && r < size; r++) {
        cnt[r] = counts ? counts[r] : rcount;
        ncnt[h->node_of[r]] += cnt[r];
        if (h->node_of[r] == h->my_node)
            lcnt[h->local_of[r]] = cnt[r];
    }
    for (int k = 0; rc == OMPI_SUCCESS && k < h->nnodes; k++)
        nat[k + 1] = nat[k] + (size_t)ncnt[k];
    for (int r = 0; rc == OMPI_SUCCESS && r < size; r++) {
        pos[r] = nat[h->node_of[r]];
        nat[h->node_of[r]] += (size_t)cnt[r];
    }
    for (int j = 0, at = 0; rc == OMPI_SUCCESS && j < nl; j++) {
        ldsp[j] = at;
        at += lcnt[j];
    }
    const void *give = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    void *raw = NULL, *raw2 = NULL, *sum = NULL, *piece = NULL;
    if (up && rc == OMPI_SUCCESS) {
        sum = nc_scratch((int)total, dtype, &raw);
        piece = h->ordered || !sum ? sum
                                   : nc_scratch((int)total, dtype, &raw2);
        if (!piece)
            rc = OMPI_ERR_OUT_OF_RESOURCE;
    }
    NC_LOW(rc, lo, ireduce, give, sum, (int)total, dtype, op, 0);
    if (up && rc == OMPI_SUCCESS) {
        ptrdiff_t ext = 0, lb = 0;
        (void)ompi_datatype_get_extent(dtype, &lb, &ext);
        size_t at = 0;
        for (int r = 0; piece != sum && r < size; r++) {
            (void)ompi_datatype_copy_content_same_ddt(
                dtype, (size_t)cnt[r], (char *)piece + (ptrdiff_t)pos[r] * ext,
                (char *)sum + (ptrdiff_t)at * ext);
            at += (size_t)cnt[r];
        }
        rc = NC_CALL(up, reduce_scatter, MPI_IN_PLACE, piece, ncnt, dtype,
                     op);
    }
    NC_LOW(rc, lo, iscatterv, piece, lcnt, ldsp, dtype, rbuf,
           cnt ? cnt[me] : 0, dtype, 0);
    free(raw);
    free(raw2);
    free(cnt);
    free(ncnt);
    free(lcnt);
    free(ldsp);
    free(nat);
    free(pos);
    return rc;
}

/* Two levels where they serve (counted), else *declined and counted as
 * the fallback of `name`: the caller hands the call over. */
static int nc_hier_rs_call(nc_module_t *m, const char *name, const void *sbuf,
                           void *rbuf, const int *counts, int rcount,
                           ompi_datatype_t *dtype, struct ompi_op_t *op,
                           bool *declined)
{
    int me = ompi_comm_rank(m->comm);
    bool empty = false;     /* a call of no elements at all is no call */
    *declined = !nc_hier_ready(m);
    int rc = *declined ? OMPI_SUCCESS
                       : nc_hier_rs(m, sbuf, rbuf, counts, rcount, dtype, op,
                                    declined, &empty);
    if (*declined) {
        nc_ga_count_fallback(name);
        return rc;
    }
    return empty ? rc
                 : nc_hier_done(m, name, -1, counts ? counts[me] : rcount,
                                dtype, NULL, rc);
}

static int nc_hier_reduce_scatter_block(const void *sbuf, void *rbuf,
                                        int rcount, ompi_datatype_t *dtype,
                                        struct ompi_op_t *op,
                                        ompi_communicator_t *comm,
                                        mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    bool declined;
    int rc = nc_hier_rs_call(m, "reduce_scatter_block", sbuf, rbuf, NULL,
                             rcount, dtype, op, &declined);
    return !declined ? rc
                     : m->prev_reduce_scatter_block(
                           sbuf, rbuf, rcount, dtype, op, comm,
                           m->prev_reduce_scatter_block_module);
}

static int nc_hier_reduce_scatter(const void *sbuf, void *rbuf,
                                  const int *rcounts, ompi_datatype_t *dtype,
                                  struct ompi_op_t *op,
                                  ompi_communicator_t *comm,
                                  mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    bool declined;
    int rc = nc_hier_rs_call(m, "reduce_scatter", sbuf, rbuf, rcounts, 0,
                             dtype, op, &declined);
    return !declined ? rc
                     : m->prev_reduce_scatter(sbuf, rbuf, rcounts, dtype, op,
                                              comm,
                                              m->prev_reduce_scatter_module);
}

/* Scan (ex = false) and Exscan, with nodes contiguous in rank order (else
 * the prefix of a rank is no union of whole nodes: declined). Node-local
 * Scan (Exscan); the node's last rank hands its node's total to the
 * leader; leaders' Exscan of the totals; node-local Bcast of that prefix
 * P from the leader (not on the first node), which every rank puts in
 * front of its own result: P op s (Exscan's local rank 0: P itself).
 * L + one node-local transfer + U + L, and one op. */
static int nc_hier_scan_run(nc_module_t *m, const void *sbuf, void *rbuf,
                            int count, ompi_datatype_t *dtype,
                            struct ompi_op_t *op, bool ex)
{
    nc_hier_t *h = m->hier;
    ompi_communicator_t *lo = h->low, *up = h->up;
    int nl = ompi_comm_size(lo), lr = ompi_comm_rank(lo);
    const int tag = ex ? MCA_COLL_BASE_TAG_EXSCAN : MCA_COLL_BASE_TAG_SCAN;
    bool last = lr == nl - 1;
    const void *x = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    void *rawt = NULL, *rawp = NULL, *tot = NULL, *pre = NULL;
    int rc = OMPI_SUCCESS;
    if (last || up)
        tot = nc_scratch(count, dtype, &rawt);
    if (h->my_node > 0 || up)
        pre = nc_scratch(count, dtype, &rawp);
    if (((last || up) && !tot) || ((h->my_node > 0 || up) && !pre))
        rc = OMPI_ERR_OUT_OF_RESOURCE;
    /* Exscan: the last rank's own contribution, before an in-place local
     * Exscan overwrites it. */
    if (ex && last && tot)
        (void)ompi_datatype_copy_content_same_ddt(dtype, (size_t)count, tot,
                                                  (void *)(uintptr_t)x);
    if (ex)
        NC_LOW(rc, lo, iexscan, sbuf, rbuf, count, dtype, op);
    else
        NC_LOW(rc, lo, iscan, sbuf, rbuf, count, dtype, op);
    if (last && tot && rc == OMPI_SUCCESS) {
        if (!ex)
            (void)ompi_datatype_copy_content_same_ddt(dtype, (size_t)count,
                                                      tot, rbuf);
        else if (lr > 0)    /* tot = (ranks before it) op (its own) */
            (void)mca_coll_base_reduce_local(rbuf, tot, count, dtype, op,
                                             &m->super);
    }
    if (nl > 1 && last)
        rc = nc_first(rc, MCA_PML_CALL(send(tot, count, dtype, 0, tag,
                                            MCA_PML_BASE_SEND_STANDARD, lo)));
    else if (nl > 1 && up)
        rc = nc_first(rc, MCA_PML_CALL(recv(tot, count, dtype, nl - 1, tag,
                                            lo, MPI_STATUS_IGNORE)));
    if (up)
        rc = nc_first(rc, NC_CALL(up, exscan, tot, pre, count, dtype, op));
    if (h->my_node > 0) {
        NC_LOW(rc, lo, ibcast, pre, count, dtype, 0);
        if (rc == OMPI_SUCCESS && ex && lr == 0)
            (void)ompi_datatype_copy_content_same_ddt(dtype, (size_t)count,
                                                      rbuf, pre);
        else if (rc == OMPI_SUCCESS)
            (void)mca_coll_base_reduce_local(pre, rbuf, count, dtype, op,
                                             &m->super);
    }
    free(rawt);
    free(rawp);
    return rc;
}

#define NC_HIER_SCAN(name, ex)                                                \
    static int nc_hier_##name(const void *sbuf, void *rbuf, int count,        \
                              ompi_datatype_t *dtype, struct ompi_op_t *op,   \
                              ompi_communicator_t *comm,                      \
                              mca_coll_base_module_t *module)                 \
    {                                                                         \
        nc_module_t *m = (nc_module_t *)module;                               \
        if (count == 0)                                                       \
            return MPI_SUCCESS;                                               \
        if (!nc_hier_ready(m) || !m->hier->ordered) {                         \
            nc_ga_count_fallback(#name);                                      \
            return m->prev_##name(sbuf, rbuf, count, dtype, op, comm,         \
                                  m->prev_##name##_module);                   \
        }                                                                     \
        int rc = nc_hier_scan_run(m, sbuf, rbuf, count, dtype, op, ex);       \
        return nc_hier_done(m, #name, -1, count, dtype, NULL, rc);            \
    }
NC_HIER_SCAN(scan, false)
NC_HIER_SCAN(exscan, true)
#undef NC_HIER_SCAN

/* ---- for the other two-level files ------------------------------------------ */

bool nc_hier_levels(nc_module_t *m, nc_levels_t *out)
{
    if (!nc_hier_ready(m))
        return false;
    nc_hier_t *h = m->hier;
    *out = (nc_levels_t){h->low, h->up, h->nnodes, h->my_node, h->node_of,
                         h->local_of, h->ordered};
    return true;
}
