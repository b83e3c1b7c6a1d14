/*
 * Two levels for the gathers on communicators that span (virtual) nodes:
 * MPI_Allgather(v), MPI_Gather(v), MPI_Scatter(v), MPI_Alltoall(v),
 * blocking. The node-local level is numacoll's nonblocking calls on the
 * node-local communicator (waited for in Open MPI's wait, as NC_LOW in
 * coll_numacoll_hier.c says why), the leaders' level the blocking calls
 * of the component Open MPI selects on the leaders' communicator
 * (coll_numacoll_hier.c creates both).
 *
 * Everything moves as bytes (MPI_BYTE), so the nodes must share one data
 * representation, as the two-level Bcast assumes. A rank gives its own
 * data to the node-local call in its own (count, datatype): numacoll packs
 * a derived type itself. Where a buffer holds blocks of several ranks, the
 * blocks are copied between it and a packed bundle, with memcpy where a
 * block is contiguous and Open MPI's convertor (nc_hier_convert) where it
 * is not; a buffer whose blocks already lie back to back in the bundle's
 * order (nodes contiguous in rank order, a contiguous datatype whose
 * extent is its size, displacements in rank order with no gaps) is used
 * in place, without the copy.
 *
 * A bundle is a node's blocks in node-local (= rank) order; bundles follow
 * each other in node order ("node-major"). Under the rr split nodes are
 * not contiguous in rank order: the copies into and out of bundles go
 * through the node-major index (nc_map_t), so every split is served.
 *
 * What each rank does (p ranks, N nodes, k ranks on a node; b: one
 * block's bytes; L(x): a node-local call moving x bytes through the
 * leader, U(x): the leaders' call moving x bytes per leader; C(x): a copy
 * of x bytes):
 *   Allgather(v)  node-local Gatherv of the node's blocks to its leader,
 *                 straight into the node's place in the result; leaders'
 *                 Allgatherv of the bundles in place; node-local Bcast of
 *                 the p blocks; each rank copies them into rank order
 *                 (nothing to copy in place, see above).
 *                 L(kb) + U(pb) + L(pb) [+ C(pb)].
 *   Gather(v)     node-local Gatherv to the leader; leaders' Gatherv of the
 *                 bundles to the root node's leader; if the root does not
 *                 lead its node, that leader sends it the p blocks (point
 *                 to point on the node-local communicator); the root
 *                 copies them into rank order. L(kb) + U(pb) [+ pb within
 *                 the node] [+ C(pb)].
 *   Scatter(v)    the inverse: the root packs the p blocks node-major
 *                 [C(pb)] and sends them to its leader if it does not lead
 *                 its node; leaders' Scatterv of the bundles; node-local
 *                 Scatterv from each leader.
 *   Alltoall(v)   node-local Gatherv of every rank's p send blocks to the
 *                 leader (L(kpb)); the leader sorts them into one bundle
 *                 per destination node (C(kpb)); leaders' Alltoallv of the
 *                 bundles (U(kpb): k^2 b to each other node); the leader
 *                 sorts what it got into one bundle per member (C(kpb));
 *                 node-local Scatterv (L(kpb)). The leader carries its
 *                 whole node's traffic, k times a rank's, twice copied: it
 *                 pays where the leaders' level is latency-bound (N - 1
 *                 network messages per leader instead of p - 1 per rank)
 *                 and loses once the leader's bandwidth is the limit:
 *                 blocks above coll_numacoll_hier_alltoall_max (4 KiB;
 *                 Alltoallv: some node's average block, by the leaders'
 *                 verdict below) go to the previous component, per call
 *                 (docs/ompi.md gives the measured range).
 * The v forms of Gather, Scatter and Alltoall first tell the leaders the
 * byte counts that only the root (or each rank) knows: a node-local
 * Gather of each rank's count(s) (8 B; Alltoallv 16p B), the leaders'
 * Allgather of the nodes' totals (Gatherv, Scatterv) or Allreduce of
 * whether their counts fit in an int (Alltoallv), a node-local Bcast of
 * that verdict (1 B): three small steps of latency.
 *
 * What falls back to the previous component (counted in
 * <name>_fallback_count, and said at coll_base_verbose 20): every call
 * while the two levels are off for the communicator (setup failed, every
 * node holds one process); a call where a bundle or the leaders' total
 * would exceed INT_MAX bytes (counts and displacements are ints), or an
 * Alltoall(v) above coll_numacoll_hier_alltoall_max (see above): decided
 * from the arguments on every rank alike, or, in the v forms whose counts
 * not every rank knows, by the leaders' verdict above. Calls that move no
 * byte at all (count 0 in the forms where every rank knows every count)
 * return at once, collective nowhere, as the one-level component does,
 * and are not counted.
 */
#include "coll_numacoll.h"
#include "coll_numacoll_hier.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/request/request.h"
#include "opal/util/output.h"

/* ---- blocks of a user buffer -------------------------------------------- */

/* One side of a call: block j is counts[j] (or count) elements of dt at
 * buf + displs[j] (or j * count) extents. */
typedef struct nc_side {
    char *buf;
    int count;
    const int *counts, *displs;     /* NULL in the forms of one count */
    ompi_datatype_t *dt;
    size_t size;
    ptrdiff_t extent;
} nc_side_t;

static nc_side_t nc_side(const void *buf, int count, const int *counts,
                         const int *displs, ompi_datatype_t *dt)
{
    nc_side_t s = {.buf = (char *)(uintptr_t)buf, .count = count,
                   .counts = counts, .displs = displs, .dt = dt};
    ptrdiff_t lb = 0;
    (void)ompi_datatype_type_size(dt, &s.size);
    (void)ompi_datatype_get_extent(dt, &lb, &s.extent);
    return s;
}

static int nc_side_count(const nc_side_t *s, int j)
{
    return s->counts ? s->counts[j] : s->count;
}

static size_t nc_side_bytes(const nc_side_t *s, int j)
{
    int c = nc_side_count(s, j);
    return c > 0 ? (size_t)c * s->size : 0;
}

static char *nc_side_at(const nc_side_t *s, int j)
{
    ptrdiff_t d = s->counts ? s->displs[j] : (ptrdiff_t)j * s->count;
    return s->buf + d * s->extent;
}

/* The first byte of the side's data (its datatype's true lower bound). */
static char *nc_side_first(const nc_side_t *s)
{
    return s->buf + s->dt->super.true_lb;
}

/* Block j between the user's buffer and its packed bytes. */
static int nc_side_io(bool pack, const nc_side_t *s, int j, void *bytes)
{
    int c = nc_side_count(s, j);
    size_t n = nc_side_bytes(s, j);
    if (n == 0)
        return OMPI_SUCCESS;
    char *at = nc_side_at(s, j);
    if (ompi_datatype_is_contiguous_memory_layout(s->dt, c)) {
        if (pack)
            memcpy(bytes, at + s->dt->super.true_lb, n);
        else
            memcpy(at + s->dt->super.true_lb, bytes, n);
        return OMPI_SUCCESS;
    }
    return nc_hier_convert(pack, at, c, s->dt, bytes, n);
}

/* Whether the p blocks lie back to back in rank order from the first
 * byte, with no holes: then, nodes being contiguous in rank order, the
 * buffer is the node-major bundle itself. */
static bool nc_side_dense(const nc_side_t *s, int p)
{
    if (s->extent != (ptrdiff_t)s->size ||
        !ompi_datatype_is_contiguous_memory_layout(s->dt, 1))
        return false;
    ptrdiff_t e = 0;
    for (int j = 0; j < p; j++) {
        ptrdiff_t d = s->counts ? s->displs[j] : (ptrdiff_t)j * s->count;
        if (d != e)
            return false;
        e += nc_side_count(s, j) > 0 ? nc_side_count(s, j) : 0;
    }
    return true;
}

/* ---- the nodes, in node-major order ------------------------------------- */

typedef struct nc_map {
    nc_levels_t v;
    int p, me;
    int *ord;       /* node-major: node 0's ranks, node 1's, ...           */
    int *start;     /* node n's first position in ord; start[N] = p        */
    int *pos;       /* rank r's position in ord                            */
    size_t *at;     /* byte offsets by position (nc_map_bytes); at[p]: all */
} nc_map_t;

static void nc_map_free(nc_map_t *mp)
{
    free(mp->ord);
    free(mp->start);
    free(mp->pos);
    free(mp->at);
    mp->ord = mp->start = mp->pos = NULL;
    mp->at = NULL;
}

/* false: out of memory (mp freed). */
static bool nc_map(nc_map_t *mp, const nc_levels_t *v, ompi_communicator_t *c)
{
    int p = ompi_comm_size(c), N = v->nnodes;
    *mp = (nc_map_t){.v = *v, .p = p, .me = ompi_comm_rank(c)};
    mp->ord = malloc((size_t)p * sizeof *mp->ord);
    mp->pos = malloc((size_t)p * sizeof *mp->pos);
    mp->start = calloc((size_t)N + 1, sizeof *mp->start);
    mp->at = malloc(((size_t)p + 1) * sizeof *mp->at);
    if (!mp->ord || !mp->pos || !mp->start || !mp->at) {
        nc_map_free(mp);
        return false;
    }
    for (int r = 0; r < p; r++)
        mp->start[v->node_of[r] + 1]++;
    for (int n = 0; n < N; n++)
        mp->start[n + 1] += mp->start[n];
    for (int r = 0; r < p; r++) {
        int i = mp->start[v->node_of[r]] + v->local_of[r];
        mp->ord[i] = r;
        mp->pos[r] = i;
    }
    return true;
}

static int nc_map_size(const nc_map_t *mp, int n)
{
    return mp->start[n + 1] - mp->start[n];
}

/* The byte offsets of node-major blocks of s's sizes. */
static void nc_map_bytes(nc_map_t *mp, const nc_side_t *s)
{
    mp->at[0] = 0;
    for (int i = 0; i < mp->p; i++)
        mp->at[i + 1] = mp->at[i] + nc_side_bytes(s, mp->ord[i]);
}

/* Counts and displacements of int, for node n's blocks (local order, from
 * n's first byte) or (n < 0) every node's bundle (node order). */
static int *nc_map_ints(const nc_map_t *mp, int n, int **displs)
{
    int k = n >= 0 ? nc_map_size(mp, n) : mp->v.nnodes;
    int *c = malloc(2 * (size_t)k * sizeof *c + 1);
    if (!c)
        return NULL;
    *displs = c + k;
    size_t base = n >= 0 ? mp->at[mp->start[n]] : 0;
    for (int i = 0; i < k; i++) {
        size_t a = n >= 0 ? mp->at[mp->start[n] + i] : mp->at[mp->start[i]];
        size_t b = n >= 0 ? mp->at[mp->start[n] + i + 1]
                          : mp->at[mp->start[i + 1]];
        c[i] = (int)(b - a);
        (*displs)[i] = (int)(a - base);
    }
    return c;
}

/* Every block between a node-major bundle and the side's buffer, but
 * rank skip's (-1: none). */
static int nc_map_io(bool pack, const nc_map_t *mp, const nc_side_t *s,
                     char *bundle, int skip)
{
    int rc = OMPI_SUCCESS;
    for (int r = 0; r < mp->p; r++)
        if (r != skip)
            rc = nc_first(rc, nc_side_io(pack, s, r,
                                        bundle + mp->at[mp->pos[r]]));
    return rc;
}

/* ---- entry and exit ----------------------------------------------------- */

/* The levels, or false (counted, logged): the caller falls back. */
static bool nc_take(nc_module_t *m, const char *what, nc_levels_t *v,
                    const char *why)
{
    if (!why && !nc_hier_levels(m, v))
        why = "the two levels are off for this communicator";
    if (!why)
        return true;
    nc_ga_count_fallback(what);
    if (nc_call_verbose())
        opal_output_verbose(NC_CALL_VERBOSITY, NC_OUT,
                            "coll:numacoll:two-level %s: %s (cid %u): handed "
                            "to the previous component: %s", what,
                            nc_comm_name(m->comm), nc_comm_cid(m->comm), why);
    return false;
}

#define NC_TOO_BIG "a bundle would exceed INT_MAX bytes"
#define NC_A2A_BIG "blocks above coll_numacoll_hier_alltoall_max"

/* Gatherv and Scatterv: only the root knows every count. Each rank's bytes
 * (mine) reach its leader (member[], local order); the leaders swap their
 * nodes' totals (bundle[], node order) and each decides from the same
 * numbers whether the ints fit; the verdict reaches every rank (*fits). */
static int nc_sizes(const nc_map_t *mp, int64_t mine, int64_t *member,
                    int64_t *bundle, bool *fits)
{
    ompi_communicator_t *lo = mp->v.low, *up = mp->v.up;
    int rc = OMPI_SUCCESS;
    NC_LOW(rc, lo, igather, &mine, 1, MPI_INT64_T, member, 1, MPI_INT64_T, 0);
    unsigned char ok = 0;
    if (up) {
        int64_t s = 0, tot = 0;
        for (int i = 0; i < nc_map_size(mp, mp->v.my_node); i++)
            s += member[i];
        NC_UP(rc, up, allgather, &s, 1, MPI_INT64_T, bundle, 1, MPI_INT64_T);
        for (int n = 0; n < mp->v.nnodes; n++)
            tot += bundle[n];
        /* From the leaders' common numbers only: a verdict that also
         * weighed this leader's own rc could differ between nodes, and
         * the nodes that fell back would leave the others waiting. */
        ok = tot <= INT_MAX;
    }
    NC_LOW(rc, lo, ibcast, &ok, 1, MPI_BYTE, 0);
    *fits = ok;
    return rc;
}

/* ---- Allgather, Allgatherv ---------------------------------------------- */

/*
 * Every rank: its block to the node-local Gatherv (in its own count and
 * type; in place: its block of rbuf). Leader: receives its node's blocks
 * into the node's place of the node-major result T, joins the leaders'
 * Allgatherv in place. Every rank: node-local Bcast of T, then T into
 * rank order (T is rbuf itself when dense, see the top).
 * Cost: L(kb) + U(pb) + L(pb), plus C(pb) per rank unless dense.
 */
static int nc_hier_allgather_run(nc_module_t *m, const char *what,
                                 const void *sbuf, int scount,
                                 ompi_datatype_t *sdt, void *rbuf,
                                 int rcount, const int *rcounts,
                                 const int *displs, ompi_datatype_t *rdt,
                                 ompi_communicator_t *comm)
{
    nc_side_t R = nc_side(rbuf, rcount, rcounts, displs, rdt);
    int p = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    size_t tot = 0;
    for (int r = 0; r < p; r++)
        tot += nc_side_bytes(&R, r);
    if (tot == 0)
        return MPI_SUCCESS;
    nc_levels_t v;
    nc_map_t mp;
    if (!nc_take(m, what, &v, tot > INT_MAX ? NC_TOO_BIG : NULL))
        return NC_DECLINED;
    if (!nc_map(&mp, &v, comm))
        return OMPI_ERR_OUT_OF_RESOURCE;
    nc_map_bytes(&mp, &R);
    bool in_place = sbuf == MPI_IN_PLACE;
    bool dense = v.ordered && nc_side_dense(&R, p);
    char *T = dense ? nc_side_first(&R) : malloc(tot);
    int *cnt = NULL, *dsp = NULL, *ucnt = NULL, *udsp = NULL;
    if (v.up) {
        cnt = nc_map_ints(&mp, v.my_node, &dsp);
        ucnt = nc_map_ints(&mp, -1, &udsp);
    }
    int rc = OMPI_SUCCESS;
    if (!T || (v.up && (!cnt || !ucnt))) {
        rc = OMPI_ERR_OUT_OF_RESOURCE;
        goto out;
    }
    /* In place, a leader's own block already lies where it goes only in
     * a dense rbuf; elsewhere it is sent from rbuf like anyone's. */
    const void *give = in_place ? nc_side_at(&R, me) : sbuf;
    int gcount = in_place ? nc_side_count(&R, me) : scount;
    ompi_datatype_t *gdt = in_place ? rdt : sdt;
    if (v.up && in_place && dense)
        give = MPI_IN_PLACE;
    NC_LOW(rc, v.low, igatherv, give, gcount, gdt,
          T + mp.at[mp.start[v.my_node]], cnt, dsp, MPI_BYTE, 0);
    if (v.up)
        NC_UP(rc, v.up, allgatherv, MPI_IN_PLACE, 0, MPI_BYTE, T, ucnt, udsp,
              MPI_BYTE);
    NC_LOW(rc, v.low, ibcast, T, (int)tot, MPI_BYTE, 0);
    if (!dense && rc == OMPI_SUCCESS)
        rc = nc_map_io(false, &mp, &R, T, in_place ? me : -1);
out:
    if (!dense)
        free(T);
    free(cnt);
    free(ucnt);
    nc_map_free(&mp);
    return nc_hier_done(m, what, -1, rcounts ? rcounts[me] : rcount, rdt,
                        NULL, rc);
}

static int nc_hier_allgather(const void *sbuf, int scount,
                             ompi_datatype_t *sdt, void *rbuf, int rcount,
                             ompi_datatype_t *rdt, ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    int rc = nc_hier_allgather_run(m, "allgather", sbuf, scount, sdt, rbuf,
                                   rcount, NULL, NULL, rdt, comm);
    return rc != NC_DECLINED
               ? rc
               : m->prev_allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm,
                                   m->prev_allgather_module);
}

static int nc_hier_allgatherv(const void *sbuf, int scount,
                              ompi_datatype_t *sdt, void *rbuf,
                              const int *rcounts, const int *displs,
                              ompi_datatype_t *rdt, ompi_communicator_t *comm,
                              mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    int rc = nc_hier_allgather_run(m, "allgatherv", sbuf, scount, sdt, rbuf,
                                   0, rcounts, displs, rdt, comm);
    return rc != NC_DECLINED
               ? rc
               : m->prev_allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs,
                                    rdt, comm, m->prev_allgatherv_module);
}

/* ---- Gather, Gatherv, Scatter, Scatterv --------------------------------- */

/* What a rooted call's leaders need: the node-local counts of the leader's
 * node (cnt, dsp), every node's bundle (ucnt, udsp: on the leaders), the
 * total, where the root's node starts in it (off). b >= 0: every block is
 * b bytes; else the v forms' exchange (nc_sizes) with mine. */
typedef struct nc_rooted {
    int *cnt, *dsp, *ucnt, *udsp;
    size_t tot, off;
    bool fits;
} nc_rooted_t;

static int nc_rooted(const nc_map_t *mp, int rn, int64_t b, int64_t mine,
                     nc_rooted_t *q)
{
    const nc_levels_t *v = &mp->v;
    int N = v->nnodes, k = nc_map_size(mp, v->my_node);
    *q = (nc_rooted_t){.fits = true};
    int64_t *member = malloc(((size_t)k + (size_t)N) * sizeof *member);
    q->cnt = malloc(2 * ((size_t)k + (size_t)N) * sizeof *q->cnt);
    if (!member || !q->cnt) {
        free(member);
        free(q->cnt);
        q->cnt = NULL;
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    q->dsp = q->cnt + k;
    q->ucnt = q->dsp + k;
    q->udsp = q->ucnt + N;
    int64_t *bundle = member + k;
    int rc = OMPI_SUCCESS;
    if (b < 0) {
        rc = nc_sizes(mp, mine, member, bundle, &q->fits);
    } else {
        for (int i = 0; i < k; i++)
            member[i] = b;
        for (int n = 0; n < N; n++)
            bundle[n] = b * nc_map_size(mp, n);
    }
    if (v->up && q->fits) {
        int64_t a = 0;
        for (int i = 0; i < k; i++) {
            q->cnt[i] = (int)member[i];
            q->dsp[i] = (int)a;
            a += member[i];
        }
        a = 0;
        for (int n = 0; n < N; n++) {
            if (n == rn)
                q->off = (size_t)a;
            q->ucnt[n] = (int)bundle[n];
            q->udsp[n] = (int)a;
            a += bundle[n];
        }
        q->tot = (size_t)a;
    }
    free(member);
    return rc;
}

/* A rooted call under way: U is the root's side of p blocks (Gather's
 * receive side, Scatter's send side). */
typedef struct nc_rcall {
    nc_levels_t v;
    nc_map_t mp;
    nc_rooted_t q;
    int rn, rl;                 /* the root's node and node-local rank     */
    bool home, lead_root, is_root, dense;
    size_t tot;
    char *T;                    /* root, root node's leader: all p blocks,
                                   node-major (U's own bytes when dense)    */
    char *B;                    /* other leaders: their node's bundle       */
} nc_rcall_t;

#define NC_NOTHING 1            /* a call that moves no byte: return */

/* Sizes, the decision to fall back (NC_DECLINED, counted), buffers. mine:
 * this rank's own bytes; vform: the counts are not known everywhere. */
static int nc_rcall_open(nc_rcall_t *c, nc_module_t *m, const char *what,
                         bool vform, int64_t mine, int root,
                         const nc_side_t *U, ompi_communicator_t *comm)
{
    int p = ompi_comm_size(comm);
    int64_t b = vform ? -1 : mine;  /* every block alike: known everywhere */
    if (b == 0)
        return NC_NOTHING;
    *c = (nc_rcall_t){.is_root = ompi_comm_rank(comm) == root};
    if (!nc_take(m, what, &c->v,
                 b >= 0 && (uint64_t)b * (uint64_t)p > INT_MAX ? NC_TOO_BIG
                                                               : NULL))
        return NC_DECLINED;
    if (!nc_map(&c->mp, &c->v, comm))
        return OMPI_ERR_OUT_OF_RESOURCE;
    const nc_levels_t *v = &c->v;
    c->rn = v->node_of[root];
    c->rl = v->local_of[root];
    c->home = v->my_node == c->rn;
    c->lead_root = c->home && v->up && c->rl == 0;
    int rc = nc_rooted(&c->mp, c->rn, b, mine, &c->q);
    if (rc == OMPI_SUCCESS && !c->q.fits) {
        free(c->q.cnt);
        nc_map_free(&c->mp);
        nc_take(m, what, &c->v, NC_TOO_BIG);
        return NC_DECLINED;
    }
    if (c->is_root)
        nc_map_bytes(&c->mp, U);
    c->dense = c->is_root && v->ordered && nc_side_dense(U, p);
    c->tot = c->is_root ? c->mp.at[p] : c->q.tot;
    bool wants_T = c->is_root || (c->home && v->up);
    if (c->dense)
        c->T = nc_side_first(U);
    else if (wants_T)
        c->T = malloc(c->tot + 1);
    if (v->up && !c->home && rc == OMPI_SUCCESS)
        c->B = malloc((size_t)c->q.ucnt[v->my_node] + 1);
    if (rc == OMPI_SUCCESS &&
        ((wants_T && !c->T) || (v->up && !c->home && !c->B)))
        rc = OMPI_ERR_OUT_OF_RESOURCE;
    return rc;
}

static void nc_rcall_close(nc_rcall_t *c)
{
    if (!c->dense)
        free(c->T);
    free(c->B);
    free(c->q.cnt);
    nc_map_free(&c->mp);
}

/*
 * Every rank: its block to the node-local Gatherv (in its own count and
 * type; an in-place root: its block of rbuf). Leaders: the node's blocks
 * into a bundle, then the leaders' Gatherv to the root node's leader, who
 * gathers into the node-major T (its own bundle in place). If the root
 * does not lead its node, that leader sends it T. The root copies T into
 * rank order (T is rbuf itself when dense).
 * Cost: L(kb) + U(pb) [+ pb point to point in the root's node] [+ C(pb)
 * at the root]; Gatherv adds nc_sizes' three small steps.
 */
static int nc_hier_gather_run(nc_module_t *m, const char *what,
                              bool vform, const void *sbuf, int scount,
                              ompi_datatype_t *sdt, void *rbuf, int rcount,
                              const int *rcounts, const int *displs,
                              ompi_datatype_t *rdt, int root,
                              ompi_communicator_t *comm)
{
    bool is_root = ompi_comm_rank(comm) == root;
    bool in_place = is_root && sbuf == MPI_IN_PLACE;
    /* Only the sides MPI calls significant are looked at. */
    nc_side_t R = {0}, S = {0};
    if (is_root)
        R = nc_side(rbuf, rcount, rcounts, displs, rdt);
    if (!in_place)
        S = nc_side(sbuf, scount, NULL, NULL, sdt);
    nc_rcall_t c;
    int rc = nc_rcall_open(&c, m, what, vform,
                           (int64_t)(in_place ? nc_side_bytes(&R, root)
                                              : nc_side_bytes(&S, 0)),
                           root, &R, comm);
    if (rc == NC_NOTHING)
        return MPI_SUCCESS;
    if (rc == NC_DECLINED)
        return rc;
    const nc_levels_t *v = &c.v;
    if (rc != OMPI_SUCCESS)
        goto out;
    const void *give = in_place ? nc_side_at(&R, root) : sbuf;
    int gcount = in_place ? nc_side_count(&R, root) : scount;
    ompi_datatype_t *gdt = in_place ? rdt : sdt;
    if (c.lead_root && in_place && c.dense)
        give = MPI_IN_PLACE;
    char *mine_at = c.home ? c.T + c.q.off : c.B;
    NC_LOW(rc, v->low, igatherv, give, gcount, gdt, v->up ? mine_at : NULL,
          c.q.cnt, c.q.dsp, MPI_BYTE, 0);
    if (v->up && c.home)
        NC_UP(rc, v->up, gatherv, MPI_IN_PLACE, 0, MPI_BYTE, c.T, c.q.ucnt,
              c.q.udsp, MPI_BYTE, c.rn);
    else if (v->up)
        NC_UP(rc, v->up, gatherv, c.B, c.q.ucnt[v->my_node], MPI_BYTE, NULL,
              NULL, NULL, MPI_BYTE, c.rn);
    if (c.home && c.rl != 0 && v->up)
        rc = nc_first(rc, MCA_PML_CALL(send(c.T, c.tot, MPI_BYTE, c.rl,
                                           MCA_COLL_BASE_TAG_GATHER,
                                           MCA_PML_BASE_SEND_STANDARD,
                                           v->low)));
    else if (c.is_root && !v->up)
        rc = nc_first(rc, MCA_PML_CALL(recv(c.T, c.tot, MPI_BYTE, 0,
                                           MCA_COLL_BASE_TAG_GATHER, v->low,
                                           MPI_STATUS_IGNORE)));
    if (c.is_root && !c.dense && rc == OMPI_SUCCESS)
        rc = nc_map_io(false, &c.mp, &R, c.T, in_place ? root : -1);
out:
    nc_rcall_close(&c);
    return nc_hier_done(m, what, root, scount, sdt, NULL, rc);
}

static int nc_hier_gather(const void *sbuf, int scount, ompi_datatype_t *sdt,
                          void *rbuf, int rcount, ompi_datatype_t *rdt,
                          int root, ompi_communicator_t *comm,
                          mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    int rc = nc_hier_gather_run(m, "gather", false, sbuf, scount,
                                sdt, rbuf, rcount, NULL, NULL, rdt, root,
                                comm);
    return rc != NC_DECLINED
               ? rc
               : m->prev_gather(sbuf, scount, sdt, rbuf, rcount, rdt, root,
                                comm, m->prev_gather_module);
}

static int nc_hier_gatherv(const void *sbuf, int scount, ompi_datatype_t *sdt,
                           void *rbuf, const int *rcounts, const int *displs,
                           ompi_datatype_t *rdt, int root,
                           ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    /* Only the root's counts are significant: the others pass a side of
     * one block (their own), which nc_hier_gather_run never indexes. */
    bool is_root = ompi_comm_rank(comm) == root;
    int rc = nc_hier_gather_run(m, "gatherv", true, sbuf,
                                scount, sdt, rbuf, 0, is_root ? rcounts : NULL,
                                displs, rdt, root, comm);
    return rc != NC_DECLINED
               ? rc
               : m->prev_gatherv(sbuf, scount, sdt, rbuf, rcounts, displs,
                                 rdt, root, comm, m->prev_gatherv_module);
}

/*
 * The inverse of Gather: the root packs its p blocks node-major into T
 * (T is sbuf itself when dense) and, if it does not lead its node, sends
 * T to its leader; leaders' Scatterv of the bundles from the root node's
 * leader (its own bundle stays in T); node-local Scatterv from each
 * leader into every rank's own (count, type) (an in-place root that does
 * not lead its node takes its block into scratch and drops it).
 * Cost: [C(pb) at the root] [+ pb point to point] + U(pb) + L(kb);
 * Scatterv adds nc_sizes' three small steps.
 */
static int nc_hier_scatter_run(nc_module_t *m, const char *what, bool vform,
                               const void *sbuf, int scount,
                               const int *scounts, const int *displs,
                               ompi_datatype_t *sdt, void *rbuf, int rcount,
                               ompi_datatype_t *rdt, int root,
                               ompi_communicator_t *comm)
{
    bool is_root = ompi_comm_rank(comm) == root;
    bool in_place = is_root && rbuf == MPI_IN_PLACE;
    /* Only the sides MPI calls significant are looked at. */
    nc_side_t S = {0}, R = {0};
    if (is_root)
        S = nc_side(sbuf, scount, scounts, displs, sdt);
    if (!in_place)
        R = nc_side(rbuf, rcount, NULL, NULL, rdt);
    int64_t mine = (int64_t)(in_place ? nc_side_bytes(&S, root)
                                      : nc_side_bytes(&R, 0));
    nc_rcall_t c;
    int rc = nc_rcall_open(&c, m, what, vform, mine, root, &S, comm);
    if (rc == NC_NOTHING)
        return MPI_SUCCESS;
    if (rc == NC_DECLINED)
        return rc;
    const nc_levels_t *v = &c.v;
    char *drop = in_place && !v->up ? malloc((size_t)mine + 1) : NULL;
    if (rc == OMPI_SUCCESS && in_place && !v->up && !drop)
        rc = OMPI_ERR_OUT_OF_RESOURCE;
    if (rc != OMPI_SUCCESS)
        goto out;
    if (c.is_root && !c.dense)
        rc = nc_map_io(true, &c.mp, &S, c.T, -1);
    if (c.is_root && !v->up)
        rc = nc_first(rc, MCA_PML_CALL(send(c.T, c.tot, MPI_BYTE, 0,
                                           MCA_COLL_BASE_TAG_SCATTER,
                                           MCA_PML_BASE_SEND_STANDARD,
                                           v->low)));
    else if (c.home && v->up && c.rl != 0)
        rc = nc_first(rc, MCA_PML_CALL(recv(c.T, c.tot, MPI_BYTE, c.rl,
                                           MCA_COLL_BASE_TAG_SCATTER, v->low,
                                           MPI_STATUS_IGNORE)));
    if (v->up && c.home)
        NC_UP(rc, v->up, scatterv, c.T, c.q.ucnt, c.q.udsp, MPI_BYTE,
              MPI_IN_PLACE, 0, MPI_BYTE, c.rn);
    else if (v->up)
        NC_UP(rc, v->up, scatterv, NULL, NULL, NULL, MPI_BYTE, c.B,
              c.q.ucnt[v->my_node], MPI_BYTE, c.rn);
    char *mine_at = c.home ? c.T + c.q.off : c.B;
    if (c.lead_root && in_place)
        NC_LOW(rc, v->low, iscatterv, mine_at, c.q.cnt, c.q.dsp, MPI_BYTE,
              MPI_IN_PLACE, 0, MPI_BYTE, 0);
    else if (in_place)
        NC_LOW(rc, v->low, iscatterv, NULL, NULL, NULL, MPI_BYTE, drop,
              (int)mine, MPI_BYTE, 0);
    else
        NC_LOW(rc, v->low, iscatterv, v->up ? mine_at : NULL, c.q.cnt,
              c.q.dsp, MPI_BYTE, rbuf, rcount, rdt, 0);
out:
    free(drop);
    nc_rcall_close(&c);
    return nc_hier_done(m, what, root, rcount, rdt, NULL, rc);
}

static int nc_hier_scatter(const void *sbuf, int scount, ompi_datatype_t *sdt,
                           void *rbuf, int rcount, ompi_datatype_t *rdt,
                           int root, ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    int rc = nc_hier_scatter_run(m, "scatter", false,
                                 sbuf, scount, NULL, NULL, sdt, rbuf, rcount,
                                 rdt, root, comm);
    return rc != NC_DECLINED
               ? rc
               : m->prev_scatter(sbuf, scount, sdt, rbuf, rcount, rdt, root,
                                 comm, m->prev_scatter_module);
}

static int nc_hier_scatterv(const void *sbuf, const int *scounts,
                            const int *displs, ompi_datatype_t *sdt,
                            void *rbuf, int rcount, ompi_datatype_t *rdt,
                            int root, ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    bool is_root = ompi_comm_rank(comm) == root;
    int rc = nc_hier_scatter_run(m, "scatterv", true,
                                 sbuf, 0, is_root ? scounts : NULL, displs,
                                 sdt, rbuf, rcount, rdt, root, comm);
    return rc != NC_DECLINED
               ? rc
               : m->prev_scatterv(sbuf, scounts, displs, sdt, rbuf, rcount,
                                  rdt, root, comm, m->prev_scatterv_module);
}

/* ---- Alltoall, Alltoallv ------------------------------------------------ */

/* A leader's view of its node's traffic: mat[i * 2p + d] the bytes member
 * i (local order) sends to rank d, mat[i * 2p + p + s] those it receives
 * from rank s. */
typedef struct nc_a2a {
    int p, k;
    int64_t *mat;
    size_t *spre;   /* per member, by rank: where its block to d starts in
                       its packed send blocks (k x (p + 1))               */
    int *gc, *gd;   /* node-local Gatherv: members' send totals           */
    int *sc, *sd;   /* node-local Scatterv: members' receive totals       */
    int *oc, *od;   /* leaders' Alltoallv: bytes to each node ...         */
    int *ic, *id;   /* ... and from each                                  */
} nc_a2a_t;

static void nc_a2a_free(nc_a2a_t *a)
{
    free(a->mat);
    free(a->spre);
    free(a->gc);
}

/* The leader's counts from mat; false when an int would overflow. */
static bool nc_a2a_plan(nc_a2a_t *a, const nc_map_t *mp)
{
    int p = a->p, k = a->k, N = mp->v.nnodes;
    a->spre = malloc((size_t)k * ((size_t)p + 1) * sizeof *a->spre);
    a->gc = calloc(4 * (size_t)k + 4 * (size_t)N, sizeof *a->gc);
    if (!a->spre || !a->gc)
        return false;
    a->gd = a->gc + k;
    a->sc = a->gd + k;
    a->sd = a->sc + k;
    a->oc = a->sd + k;
    a->od = a->oc + N;
    a->ic = a->od + N;
    a->id = a->ic + N;
    int64_t *out = calloc(2 * (size_t)N, sizeof *out), *in = out + N;
    if (!out)
        return false;
    int64_t gs = 0, rs = 0;
    for (int i = 0; i < k; i++) {
        const int64_t *row = a->mat + (size_t)i * 2 * (size_t)p;
        size_t *pre = a->spre + (size_t)i * ((size_t)p + 1);
        int64_t st = 0, rt = 0;
        for (int d = 0; d < p; d++) {
            pre[d] = (size_t)st;
            st += row[d];
            rt += row[p + d];
            out[mp->v.node_of[d]] += row[d];
            in[mp->v.node_of[d]] += row[p + d];
        }
        pre[p] = (size_t)st;
        if (gs + st > INT_MAX || rs + rt > INT_MAX) {
            free(out);
            return false;
        }
        a->gc[i] = (int)st;
        a->gd[i] = (int)gs;
        a->sc[i] = (int)rt;
        a->sd[i] = (int)rs;
        gs += st;
        rs += rt;
    }
    for (int n = 0, o = 0, q = 0; n < N; n++) {
        a->oc[n] = (int)out[n];
        a->od[n] = o;
        a->ic[n] = (int)in[n];
        a->id[n] = q;
        o += a->oc[n];
        q += a->ic[n];
    }
    free(out);
    return true;
}

/* Leader: the members' packed send blocks G (member-major, rank order)
 * into one bundle per destination node OB (its members' blocks in local
 * order, each member's for that node's ranks in local order). */
static void nc_a2a_out(const nc_a2a_t *a, const nc_map_t *mp, const char *G,
                       char *OB)
{
    int p = a->p;
    for (int n = 0; n < mp->v.nnodes; n++)
        for (int i = 0; i < a->k; i++) {
            const size_t *pre = a->spre + (size_t)i * ((size_t)p + 1);
            const char *from = G + a->gd[i];
            for (int j = mp->start[n]; j < mp->start[n + 1]; j++) {
                int d = mp->ord[j];
                size_t len = pre[d + 1] - pre[d];
                memcpy(OB, from + pre[d], len);
                OB += len;
            }
        }
}

/* Leader: what came from each node IB (its senders in local order, each
 * one's blocks for this node's members in local order) into one run per
 * member RB (its blocks from every rank, node-major). */
static void nc_a2a_in(nc_a2a_t *a, const nc_map_t *mp, const char *IB,
                      char *RB)
{
    int p = a->p;
    for (int j = 0; j < p; j++) {
        int s = mp->ord[j];
        for (int i = 0; i < a->k; i++) {
            size_t len = (size_t)a->mat[(size_t)i * 2 * (size_t)p + p + s];
            /* sd[i] walks member i's run, node-major, as sources come */
            memcpy(RB + a->sd[i], IB, len);
            a->sd[i] += (int)len;
            IB += len;
        }
    }
    for (int i = 0; i < a->k; i++)
        a->sd[i] -= a->sc[i];
}

/*
 * Every rank: its p send blocks, packed in rank order (sbuf itself when
 * its blocks lie back to back), to the node-local Gatherv. Leader: sorts
 * them into a bundle per destination node, joins the leaders' Alltoallv,
 * sorts what came into a run per member (node-major sources), node-local
 * Scatterv. Every rank: its run into rank order (straight into rbuf when
 * nodes are contiguous and its blocks lie back to back). The v form first
 * gathers each member's 2p byte counts to its leader, and the leaders
 * agree (Allreduce) whether every int fits and the blocks are small
 * enough (coll_numacoll_hier_alltoall_max); a node-local Bcast tells the
 * node. Cost: L(kpb) + 2 C(kpb) + U(kpb) + L(kpb) at the leader [+ C(pb)
 * per rank to pack or unpack]; the v form adds L(16p) + U(4) + L(1).
 */
static int nc_hier_alltoall_run(nc_module_t *m, const char *what, bool vform,
                                const void *sbuf, int scount,
                                const int *scounts, const int *sdispls,
                                ompi_datatype_t *sdt, void *rbuf, int rcount,
                                const int *rcounts, const int *rdispls,
                                ompi_datatype_t *rdt,
                                ompi_communicator_t *comm)
{
    int p = ompi_comm_size(comm);
    bool in_place = sbuf == MPI_IN_PLACE;
    nc_side_t R = nc_side(rbuf, rcount, rcounts, rdispls, rdt);
    nc_side_t S = in_place ? R : nc_side(sbuf, scount, scounts, sdispls, sdt);
    size_t b = nc_side_bytes(&R, 0);
    if (!vform && b == 0)
        return MPI_SUCCESS;
    nc_levels_t v;
    nc_map_t mp;
    if (!nc_take(m, what, &v, NULL))
        return NC_DECLINED;
    if (!nc_map(&mp, &v, comm))
        return OMPI_ERR_OUT_OF_RESOURCE;
    int k = nc_map_size(&mp, v.my_node), kmax = 0;
    for (int n = 0; n < v.nnodes; n++)
        kmax = nc_map_size(&mp, n) > kmax ? nc_map_size(&mp, n) : kmax;
    size_t most = nc_component.hier_alltoall_max;
    if (!vform && ((uint64_t)kmax * (uint64_t)p * b > INT_MAX ||
                   (most && b > most))) {
        nc_map_free(&mp);
        nc_take(m, what, &v, most && b > most ? NC_A2A_BIG : NC_TOO_BIG);
        return NC_DECLINED;
    }
    nc_a2a_t a = {.p = p, .k = k};
    int64_t *mine = malloc(2 * (size_t)p * sizeof *mine);
    if (v.up)
        a.mat = malloc((size_t)k * 2 * (size_t)p * sizeof *a.mat);
    int rc = mine && (!v.up || a.mat) ? OMPI_SUCCESS
                                      : OMPI_ERR_OUT_OF_RESOURCE;
    for (int d = 0; mine && d < p; d++) {
        mine[d] = (int64_t)nc_side_bytes(&S, d);
        mine[p + d] = (int64_t)nc_side_bytes(&R, d);
    }
    unsigned char ok = 0;
    if (vform) {
        NC_LOW(rc, v.low, igather, mine, 2 * p, MPI_INT64_T, a.mat, 2 * p,
              MPI_INT64_T, 0);
    } else if (a.mat) {
        for (size_t i = 0; i < (size_t)k * 2 * (size_t)p; i++)
            a.mat[i] = (int64_t)b;
    }
    if (v.up) {
        int fits = rc == OMPI_SUCCESS && nc_a2a_plan(&a, &mp);
        /* The v form's per-call limit: this node's average block. */
        if (fits && vform && most)
            fits = (size_t)a.gd[k - 1] + (size_t)a.gc[k - 1] <=
                   most * (size_t)k * (size_t)p;
        if (vform)
            NC_UP(rc, v.up, allreduce, MPI_IN_PLACE, &fits, 1, MPI_INT,
                  MPI_MIN);
        ok = (unsigned char)fits;
    }
    if (vform)
        NC_LOW(rc, v.low, ibcast, &ok, 1, MPI_BYTE, 0);
    else if (v.up && !ok)
        rc = OMPI_ERR_OUT_OF_RESOURCE;  /* the sizes fit: checked above */
    else
        ok = 1;
    if (!ok && vform) {
        free(mine);
        nc_a2a_free(&a);
        nc_map_free(&mp);
        nc_take(m, what, &v,
                "the leaders' verdict: " NC_TOO_BIG ", or some node's blocks "
                "average above coll_numacoll_hier_alltoall_max");
        return NC_DECLINED;
    }
    /* This rank's packed send blocks and where its receive run lands. */
    nc_map_bytes(&mp, &R);
    size_t st = 0;
    for (int d = 0; d < p; d++)
        st += (size_t)mine[d];
    bool sdense = nc_side_dense(&S, p);
    bool rdense = v.ordered && nc_side_dense(&R, p);
    char *SB = sdense ? nc_side_first(&S) : malloc(st + 1);
    char *RR = rdense ? nc_side_first(&R) : malloc(mp.at[p] + 1);
    char *G = NULL, *OB = NULL, *IB = NULL, *RB = NULL;
    if (v.up) {
        size_t gt = (size_t)a.gd[k - 1] + (size_t)a.gc[k - 1];
        size_t rt = (size_t)a.sd[k - 1] + (size_t)a.sc[k - 1];
        G = malloc(gt + 1);
        OB = malloc(gt + 1);
        IB = malloc(rt + 1);
        RB = malloc(rt + 1);
    }
    if (rc == OMPI_SUCCESS &&
        (!SB || !RR || (v.up && (!G || !OB || !IB || !RB))))
        rc = OMPI_ERR_OUT_OF_RESOURCE;
    if (rc != OMPI_SUCCESS)
        goto out;
    if (!sdense) {
        for (int d = 0, off = 0; d < p; off += (int)mine[d], d++)
            rc = nc_first(rc, nc_side_io(true, &S, d, SB + off));
    }
    NC_LOW(rc, v.low, igatherv, SB, (int)st, MPI_BYTE, G, a.gc, a.gd, MPI_BYTE,
          0);
    if (v.up) {
        nc_a2a_out(&a, &mp, G, OB);
        NC_UP(rc, v.up, alltoallv, OB, a.oc, a.od, MPI_BYTE, IB, a.ic, a.id,
              MPI_BYTE);
        nc_a2a_in(&a, &mp, IB, RB);
    }
    NC_LOW(rc, v.low, iscatterv, RB, a.sc, a.sd, MPI_BYTE, RR, (int)mp.at[p],
          MPI_BYTE, 0);
    if (!rdense && rc == OMPI_SUCCESS)
        rc = nc_map_io(false, &mp, &R, RR, -1);
out:
    if (!sdense)
        free(SB);
    if (!rdense)
        free(RR);
    free(G);
    free(OB);
    free(IB);
    free(RB);
    free(mine);
    nc_a2a_free(&a);
    nc_map_free(&mp);
    return nc_hier_done(m, what, -1, rcounts ? 0 : rcount, rdt, NULL, rc);
}

static int nc_hier_alltoall(const void *sbuf, int scount, ompi_datatype_t *sdt,
                            void *rbuf, int rcount, ompi_datatype_t *rdt,
                            ompi_communicator_t *comm,
                            mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    int rc = nc_hier_alltoall_run(m, "alltoall", false,
                                  sbuf, scount, NULL, NULL, sdt, rbuf, rcount,
                                  NULL, NULL, rdt, comm);
    return rc != NC_DECLINED
               ? rc
               : m->prev_alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm,
                                  m->prev_alltoall_module);
}

static int nc_hier_alltoallv(const void *sbuf, const int *scounts,
                             const int *sdispls, ompi_datatype_t *sdt,
                             void *rbuf, const int *rcounts,
                             const int *rdispls, ompi_datatype_t *rdt,
                             ompi_communicator_t *comm,
                             mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    int rc = nc_hier_alltoall_run(m, "alltoallv", true,
                                  sbuf, 0, scounts, sdispls, sdt, rbuf, 0,
                                  rcounts, rdispls, rdt, comm);
    return rc != NC_DECLINED
               ? rc
               : m->prev_alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts,
                                   rdispls, rdt, comm,
                                   m->prev_alltoallv_module);
}

/* ---- module part -------------------------------------------------------- */

void nc_hier_ga_install(nc_module_t *m)
{
    m->super.coll_allgather = nc_hier_allgather;
    m->super.coll_allgatherv = nc_hier_allgatherv;
    m->super.coll_gather = nc_hier_gather;
    m->super.coll_gatherv = nc_hier_gatherv;
    m->super.coll_scatter = nc_hier_scatter;
    m->super.coll_scatterv = nc_hier_scatterv;
    m->super.coll_alltoall = nc_hier_alltoall;
    m->super.coll_alltoallv = nc_hier_alltoallv;
}
