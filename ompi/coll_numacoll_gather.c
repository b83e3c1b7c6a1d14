/*
 * The gathers of the component: MPI_Allgather, MPI_Allgatherv, MPI_Gather,
 * MPI_Gatherv, MPI_Scatter, MPI_Scatterv, MPI_Alltoall and MPI_Alltoallv,
 * blocking, nonblocking (MPI_Iallgather, ...) and persistent
 * (MPIX_Allgather_init on Open MPI 4.1, MPI_Allgather_init on 5.0), on the
 * core's byte-block calls (numacoll_allgather etc., include/numacoll.h);
 * and, through the same requests and counters, the reductions that scatter
 * or scan: MPI_Reduce_scatter_block, MPI_Reduce_scatter, MPI_Scan and
 * MPI_Exscan with their nonblocking and persistent forms.
 *
 * Planning (nc_ga_plan) turns a call's (buffer, count(s), datatype) sides
 * into the core's pointers and byte counts, once per call (per init for a
 * persistent one):
 *  - a side whose blocks lie contiguously (the datatype's elements back to
 *    back, blocks where count * extent puts them) goes straight to the
 *    core: its first byte is the buffer plus the type's true lower bound,
 *    v blocks get byte displacements from the lowest one;
 *  - any other side goes through a temporary buffer, the p blocks packed
 *    back to back: sends are packed by Open MPI's convertor before each run
 *    (nc_ga_prepare), receives unpacked after it (nc_ga_done). A derived
 *    type on one side only costs that side's copy;
 *  - only the bytes must match: send and receive signatures may differ;
 *  - MPI_IN_PLACE where MPI allows it: the core's NUMACOLL_IN_PLACE when
 *    the receive side goes straight to the core, else the rank's own block
 *    (Alltoall(v): all its blocks) packed into the temporary first.
 * The reductions plan as MPI_Reduce/MPI_Allreduce do (nc_red_plan in
 * coll_numacoll_module.c): a predefined op on a type the core maps goes to
 * numacoll_scan etc., a user op on contiguous elements to the _user form
 * (its commutativity passed on: the core folds in rank order anyway), and
 * any other pair to the previous component, per call; MPI_IN_PLACE is the
 * core's.
 * Arguments MPI calls insignificant (a non-root's receive side of Gather,
 * the send side of an in-place call) are never read.
 *
 * Every rank takes the same way for a call: the core serves it unless the
 * team could not be set up (then every rank falls back, for good), a
 * reduction's (datatype, op) has no mapping, or a configured
 * reduce_frag_size is too small for the call (nc_ga_declines: Alltoallv's
 * 8-byte header per peer, Reduce_scatter's element per rank, a user op's
 * element; all from arguments MPI requires alike on every rank), and the
 * core itself declines nothing here (NUMACOLL_ERR_UNSUPPORTED would still
 * go to the previous component, decided alike on every rank). A call with
 * no bytes on this rank (count 0; an Allgatherv of nothing at all) does
 * nothing collective, as Open MPI's bindings let some ranks' count-0 calls
 * return before they reach a component; the v forms of Gather and Scatter,
 * whose counts only the root knows, and Alltoallv, always run; a
 * reduction of no elements at all does nothing on every rank. A rank whose own send and
 * receive sizes differ gets MPI_ERR_ARG without the collective (erroneous:
 * the others may wait for it until coll_numacoll_timeout_ms).
 *
 * Requests (nonblocking, persistent, and blocking calls made while others
 * are in flight) are coll_numacoll_nb.c's, with this file's nc_ga_t
 * attached: it calls nc_ga_prepare before each start, nc_ga_core to start
 * or init, nc_ga_done at each completion and nc_ga_free at the end.
 *
 * Cost on top of the core's call: contiguous sides, the plan alone (O(1);
 * the v forms O(p) for the byte counts and displacements, in a malloc'd
 * array, Alltoallv two of them, Reduce_scatter one of its counts); a
 * derived side, a temporary of its packed bytes B and one convertor pass
 * over them per run (T ~ B t_pack, before the core's call on the send
 * side, after it on the receive side); a user op, one call of it per
 * piece the core combines (Open MPI's ompi_op_reduce).
 */
#include "coll_numacoll.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/base.h"
#include "opal/mca/base/mca_base_pvar.h"
#include "opal/util/output.h"

/* X(ID, name, Name): the collectives of this file. */
#define NC_GA_KINDS(X)                                                        \
    X(ALLGATHER, allgather, Allgather)                                        \
    X(ALLGATHERV, allgatherv, Allgatherv)                                     \
    X(GATHER, gather, Gather)                                                 \
    X(GATHERV, gatherv, Gatherv)                                              \
    X(SCATTER, scatter, Scatter)                                              \
    X(SCATTERV, scatterv, Scatterv)                                           \
    X(ALLTOALL, alltoall, Alltoall)                                           \
    X(ALLTOALLV, alltoallv, Alltoallv)                                        \
    X(REDUCE_SCATTER_BLOCK, reduce_scatter_block, Reduce_scatter_block)       \
    X(REDUCE_SCATTER, reduce_scatter, Reduce_scatter)                         \
    X(SCAN, scan, Scan)                                                       \
    X(EXSCAN, exscan, Exscan)

typedef enum {
#define NC_GA_ID(ID, name, Name) NC_GA_##ID,
    NC_GA_KINDS(NC_GA_ID)
#undef NC_GA_ID
    NC_GA_N
} nc_ga_kind_t;

/* The reductions: Reduce_scatter(_block), Scan, Exscan. */
static bool nc_ga_is_red(nc_ga_kind_t k)
{
    return k >= NC_GA_REDUCE_SCATTER_BLOCK;
}

typedef enum { NC_FORM_BLOCKING, NC_FORM_NB, NC_FORM_PERSISTENT } nc_form_t;

/* The MPI calls' names, by kind and form, for messages; the blocking
 * calls' log lines name them in lower case, as the other blocking calls. */
static const char *const nc_ga_names[NC_GA_N][4] = {
#define NC_GA_NAME(ID, name, Name)                                            \
    [NC_GA_##ID] = {"MPI_" #Name, "MPI_I" #name, "MPI_" #Name "_init",       \
                    #name},
    NC_GA_KINDS(NC_GA_NAME)
#undef NC_GA_NAME
};

/* Kind k's MPI_T counter c (coll_numacoll.h's NC_N_*). */
_Static_assert(NC_GA_N == NC_GA_KINDS_N, "coll_numacoll.h counts the kinds");
static inline int nc_ga_cnt(nc_ga_kind_t k, int c)
{
    return NC_CNT_GA + (int)k * NC_N_COUNTERS + c;
}

/* A call's arguments as MPI gave them; the v arrays NULL in the other
 * forms. The reductions: rcount their count (Reduce_scatter_block's
 * block), rcounts Reduce_scatter's, rdt their datatype, op their op. */
typedef struct nc_ga_args {
    nc_ga_kind_t kind;
    const void *sbuf;
    int scount;
    const int *scounts, *sdispls;
    ompi_datatype_t *sdt;
    void *rbuf;
    int rcount;
    const int *rcounts, *rdispls;
    ompi_datatype_t *rdt;
    int root;
    struct ompi_op_t *op;
} nc_ga_args_t;

/* One block copied through the convertor: count x dt at user, packed at
 * tmp (bytes of it). */
typedef struct nc_ga_seg {
    char *user;
    int count;
    ompi_datatype_t *dt;
    char *tmp;
    size_t bytes;
    bool pack;          /* into tmp before the run, else out after it */
} nc_ga_seg_t;

/* A v side as the core reads it: bytes and byte displacements per rank
 * (one allocation, displs = bytes + p). */
typedef struct nc_ga_v {
    size_t *bytes, *displs;
} nc_ga_v_t;

struct nc_ga {
    nc_module_t *m;
    nc_ga_kind_t kind;
    int root;
    const void *send;       /* the core's arguments */
    void *recv;
    size_t nbytes;          /* Allgather, Gather, Scatter, Alltoall: a
                               block; Allgatherv, Gatherv: this rank's
                               send; Scatterv: this rank's receive;
                               Alltoallv: all it receives (logged) */
    nc_ga_v_t v;            /* v forms: the receive side (Scatterv: the
                               send side), where the core reads it */
    nc_ga_v_t sv;           /* Alltoallv's send side; NULL in place */
    char *stmp, *rtmp;      /* temporaries of derived-type sides */
    nc_ga_seg_t *seg;
    int nseg, capseg;
    ompi_datatype_t *held[2];   /* retained for the segments */
    bool heap;              /* g itself was allocated (a request's) */
    /* the reductions (the op and datatype held while g lives) */
    nc_red_plan_t red;
    nc_user_ctx_t user;
    int commute;
    size_t count;           /* Reduce_scatter_block's block, Scan's count */
    size_t *counts;         /* Reduce_scatter's, as the core reads them */
    int logged;             /* the elements a log line names */
};

/* ---- planning ----------------------------------------------------------- */

static void nc_ga_init(nc_ga_t *g, nc_module_t *m, nc_ga_kind_t kind,
                       int root)
{
    memset(g, 0, sizeof *g);
    g->m = m;
    g->kind = kind;
    g->root = root;
}

void nc_ga_free(nc_ga_t *g)
{
    for (int i = 0; i < 2; i++)
        if (g->held[i])
            OBJ_RELEASE(g->held[i]);
    if (g->user.op)
        OBJ_RELEASE(g->user.op);
    free(g->v.bytes);
    free(g->sv.bytes);
    free(g->counts);
    free(g->stmp);
    free(g->rtmp);
    free(g->seg);
    if (g->heap)
        free(g);
}

/* Keep dt alive while g lives (at most two types: a call's sides). */
static void nc_ga_hold(nc_ga_t *g, ompi_datatype_t *dt)
{
    if (dt != g->held[0] && dt != g->held[1]) {
        g->held[g->held[0] ? 1 : 0] = dt;
        OBJ_RETAIN(dt);
    }
}

/* Add a convertor copy of count x dt between user and tmp. */
static int nc_ga_add(nc_ga_t *g, bool pack, char *user, int count,
                     ompi_datatype_t *dt, char *tmp, size_t bytes)
{
    if (g->nseg == g->capseg) {
        int cap = g->capseg ? 2 * g->capseg
                            : 2 * ompi_comm_size(g->m->comm) + 2;
        nc_ga_seg_t *s = realloc(g->seg, (size_t)cap * sizeof *s);
        if (!s)
            return NUMACOLL_ERR_NOMEM;
        g->seg = s;
        g->capseg = cap;
    }
    nc_ga_hold(g, dt);
    g->seg[g->nseg++] = (nc_ga_seg_t){user, count, dt, tmp, bytes, pack};
    return NUMACOLL_OK;
}

static size_t nc_dt_size(ompi_datatype_t *dt)
{
    size_t s = 0;
    (void)ompi_datatype_type_size(dt, &s);
    return s;
}

static ptrdiff_t nc_dt_extent(ompi_datatype_t *dt)
{
    ptrdiff_t lb = 0, ext = 0;
    (void)ompi_datatype_get_extent(dt, &lb, &ext);
    return ext;
}

/* Whether n elements of dt are one run of bytes from the true lower bound
 * on: Open MPI's answer only distinguishes one element from several. */
static bool nc_dense(ompi_datatype_t *dt, size_t n)
{
    return ompi_datatype_is_contiguous_memory_layout(dt, n > 1 ? 2 : 1);
}

/*
 * A side of n equal blocks of count x dt at buf, nb bytes each (n = 1: a
 * single block). Straight: *core is the first byte. Otherwise a temporary
 * of n * nb bytes (*tmp, *core) with one convertor copy per block.
 */
static int nc_ga_blocks(nc_ga_t *g, bool pack, const void *buf, int count,
                        ompi_datatype_t *dt, size_t nb, int n, char **tmp,
                        void **core)
{
    char *b = (char *)(uintptr_t)buf;
    if (nb == 0) {      /* nothing is read or written there */
        *core = b;
        return NUMACOLL_OK;
    }
    if (nc_dense(dt, (size_t)count * (size_t)n)) {
        *core = b + dt->super.true_lb;
        return NUMACOLL_OK;
    }
    const ptrdiff_t stride = (ptrdiff_t)count * nc_dt_extent(dt);
    *tmp = malloc((size_t)n * nb);
    if (!*tmp)
        return NUMACOLL_ERR_NOMEM;
    *core = *tmp;
    for (int j = 0; j < n; j++) {
        int st = nc_ga_add(g, pack, b + j * stride, count, dt,
                           *tmp + (size_t)j * nb, nb);
        if (st != NUMACOLL_OK)
            return st;
    }
    return NUMACOLL_OK;
}

/*
 * A side of p v blocks (counts, displs in elements of dt) at buf: the
 * core's byte counts and displacements in *v. Straight when
 * every block is contiguous: displacements from the lowest block, which
 * *core points to. Otherwise packed back to back in rank order in a
 * temporary (*tmp, *core).
 */
/*
 * The byte counts of p v blocks (counts, displs in elements of dt) into
 * bytes, their sum *total, and whether every block is dense (straight);
 * then also their displacements from the lowest block into dsp, and that
 * block's offset from the buffer, *base.
 */
static bool nc_ga_vstraight(int p, const int *counts, const int *displs,
                            ompi_datatype_t *dt, size_t *bytes, size_t *dsp,
                            ptrdiff_t *base, size_t *total)
{
    const size_t size = nc_dt_size(dt);
    const ptrdiff_t ext = nc_dt_extent(dt), lb = dt->super.true_lb;
    bool straight = true, any = false;
    *base = 0;
    *total = 0;
    for (int j = 0; j < p; j++) {
        bytes[j] = (size_t)counts[j] * size;
        *total += bytes[j];
        if (counts[j] == 0)
            continue;
        straight = straight && nc_dense(dt, (size_t)counts[j]);
        ptrdiff_t off = (ptrdiff_t)displs[j] * ext + lb;
        *base = any && *base < off ? *base : off;
        any = true;
    }
    for (int j = 0; straight && j < p; j++)
        dsp[j] = counts[j] == 0
                     ? 0
                     : (size_t)((ptrdiff_t)displs[j] * ext + lb - *base);
    return straight;
}

static int nc_ga_vblocks(nc_ga_t *g, bool pack, const void *buf,
                         const int *counts, const int *displs,
                         ompi_datatype_t *dt, nc_ga_v_t *v, char **tmp,
                         void **core)
{
    const int p = ompi_comm_size(g->m->comm);
    const ptrdiff_t ext = nc_dt_extent(dt);
    char *b = (char *)(uintptr_t)buf;
    v->bytes = malloc(2 * (size_t)p * sizeof *v->bytes);
    if (!v->bytes)
        return NUMACOLL_ERR_NOMEM;
    v->displs = v->bytes + p;
    ptrdiff_t base;
    size_t total;
    if (nc_ga_vstraight(p, counts, displs, dt, v->bytes, v->displs, &base,
                        &total)) {
        *core = b + base;
        return NUMACOLL_OK;
    }
    *tmp = malloc(total ? total : 1);
    if (!*tmp)
        return NUMACOLL_ERR_NOMEM;
    *core = *tmp;
    size_t at = 0;
    for (int j = 0; j < p; j++) {
        v->displs[j] = at;
        if (counts[j] > 0) {
            int st = nc_ga_add(g, pack, b + (ptrdiff_t)displs[j] * ext,
                               counts[j], dt, *tmp + at, v->bytes[j]);
            if (st != NUMACOLL_OK)
                return st;
        }
        at += v->bytes[j];
    }
    return NUMACOLL_OK;
}

/* The bytes this rank moves in a non-v call (0: nothing to do), from the
 * arguments MPI makes significant on it. */
static size_t nc_ga_block_bytes(const nc_ga_args_t *a, int rank)
{
    switch (a->kind) {
    case NC_GA_GATHER:
        return rank == a->root ? (size_t)a->rcount * nc_dt_size(a->rdt)
                               : (size_t)a->scount * nc_dt_size(a->sdt);
    case NC_GA_SCATTER:
        return rank == a->root ? (size_t)a->scount * nc_dt_size(a->sdt)
                               : (size_t)a->rcount * nc_dt_size(a->rdt);
    case NC_GA_ALLGATHER:
    case NC_GA_ALLTOALL:
        return (size_t)a->rcount * nc_dt_size(a->rdt);
    default:
        return 0;
    }
}

/* True when the call moves no bytes on this rank and must not touch the
 * core (see the top of the file). */
static bool nc_ga_nothing(const nc_ga_args_t *a, int rank, int p)
{
    switch (a->kind) {
    case NC_GA_GATHERV:
    case NC_GA_SCATTERV:
    case NC_GA_ALLTOALLV:
        return false;
    case NC_GA_ALLGATHERV:
        for (int j = 0; j < p; j++)
            if ((size_t)a->rcounts[j] * nc_dt_size(a->rdt) > 0)
                return false;
        return true;
    /* the reductions: no elements at all (the counts are alike on every
     * rank, so every rank says so) */
    case NC_GA_REDUCE_SCATTER:
        for (int j = 0; j < p; j++)
            if (a->rcounts[j] > 0)
                return false;
        return true;
    case NC_GA_REDUCE_SCATTER_BLOCK:
    case NC_GA_SCAN:
    case NC_GA_EXSCAN:
        return a->rcount == 0;
    default:
        return nc_ga_block_bytes(a, rank) == 0;
    }
}

/* The rank's own send bytes must equal its own receive block. */
static int nc_ga_same(size_t send, size_t recv)
{
    return send == recv ? NUMACOLL_OK : NUMACOLL_ERR_MISMATCH;
}

/* Elements of a reduction's contribution: p blocks for Reduce_scatter(_block).
 * At most p * INT_MAX, which a size_t holds. */
static size_t nc_ga_red_total(const nc_ga_args_t *a, int p)
{
    size_t total = 0;
    switch (a->kind) {
    case NC_GA_REDUCE_SCATTER:
        for (int j = 0; j < p; j++)
            total += (size_t)a->rcounts[j];
        return total;
    case NC_GA_REDUCE_SCATTER_BLOCK:
        return (size_t)p * (size_t)a->rcount;
    default:
        return (size_t)a->rcount;
    }
}

/* A reduction the core takes (g->red planned by nc_ga_declines): the
 * core's buffers, counts and user op, the op and datatype held. */
static int nc_ga_red_plan(nc_ga_t *g, const nc_ga_args_t *a)
{
    const int p = ompi_comm_size(g->m->comm);
    const size_t total = nc_ga_red_total(a, p);
    /* the core's elements: mult per element of a derived datatype */
    const size_t mult = g->red.kind == NC_RED_PREDEF ? g->red.mult : 1;
    g->count = (size_t)a->rcount * mult;
    g->logged = total > INT_MAX ? INT_MAX : (int)total;
    if (a->kind == NC_GA_REDUCE_SCATTER) {
        g->counts = malloc((size_t)p * sizeof *g->counts);
        if (!g->counts)
            return NUMACOLL_ERR_NOMEM;
        for (int j = 0; j < p; j++)
            g->counts[j] = (size_t)a->rcounts[j] * mult;
    }
    nc_ga_hold(g, a->rdt);
    OBJ_RETAIN(a->op);
    g->user = (nc_user_ctx_t){a->op, a->rdt, &g->m->super};
    g->commute = nc_op_commutes(a->op);
    if (g->red.kind != NC_RED_PREDEF || !g->red.packed) {
        nc_red_bufs(g->m, &g->red, a->sbuf, a->rbuf, -1, &g->send, &g->recv);
        return NUMACOLL_OK;
    }
    /* A derived datatype with holes: the contribution (in place: the
     * receive buffer's) packed into one temporary, the result unpacked
     * from another; the core's call is then never in place. Exscan's rank
     * 0 receives nothing (its buffer is left alone). */
    const int me = ompi_comm_rank(g->m->comm);
    const size_t es = nc_dt_size(a->rdt);
    const int own = a->kind == NC_GA_REDUCE_SCATTER ? a->rcounts[me]
                    : a->kind == NC_GA_EXSCAN && me == 0 ? 0
                                                         : a->rcount;
    int st = nc_ga_blocks(g, true, a->sbuf == MPI_IN_PLACE ? a->rbuf : a->sbuf,
                          (int)total, a->rdt, total * es, 1, &g->stmp,
                          (void **)&g->send);
    if (st == NUMACOLL_OK)
        st = nc_ga_blocks(g, false, a->rbuf, own, a->rdt, (size_t)own * es,
                          1, &g->rtmp, &g->recv);
    return st;
}

/* Plan a call that moves bytes (g initialised); a core status. */
static int nc_ga_plan(nc_ga_t *g, const nc_ga_args_t *a)
{
    const int me = ompi_comm_rank(g->m->comm);
    const int p = ompi_comm_size(g->m->comm);
    const bool root = me == a->root;
    /* MPI_IN_PLACE in an argument insignificant on this rank (a
     * non-root's receive buffer of Gather, send buffer of Scatter) is
     * no in-place call: never read */
    const bool gathers = a->kind == NC_GA_GATHER || a->kind == NC_GA_GATHERV,
               scatters = a->kind == NC_GA_SCATTER ||
                          a->kind == NC_GA_SCATTERV;
    const bool in_place =
        (a->sbuf == MPI_IN_PLACE && (root || !scatters)) ||
        (a->rbuf == MPI_IN_PLACE && (root || !gathers));
    int st = NUMACOLL_OK;
    char *own = NULL;       /* in place: where the own block goes in rtmp */
    const char *from = NULL;    /* ... and where it is in rbuf */
    int own_count = 0;

    switch (a->kind) {
    case NC_GA_ALLGATHER:
    case NC_GA_GATHER:
    case NC_GA_ALLTOALL: {
        const size_t nb = nc_ga_block_bytes(a, me);
        const bool recv = a->kind != NC_GA_GATHER || root;
        g->nbytes = nb;
        if (!in_place)
            st = nc_ga_same((size_t)a->scount * nc_dt_size(a->sdt),
                            nb);
        if (st == NUMACOLL_OK && recv)
            st = nc_ga_blocks(g, false, a->rbuf, a->rcount, a->rdt, nb, p,
                              &g->rtmp, &g->recv);
        if (st != NUMACOLL_OK)
            break;
        if (!in_place) {
            int n = a->kind == NC_GA_ALLTOALL ? p : 1;
            st = nc_ga_blocks(g, true, a->sbuf, a->scount, a->sdt, nb, n,
                              &g->stmp, (void **)&g->send);
            break;
        }
        g->send = NUMACOLL_IN_PLACE;
        if (!g->rtmp)
            break;
        /* The receive side is a temporary: what stands in rbuf goes into
         * it first, all blocks for Alltoall, the own one otherwise. */
        if (a->kind == NC_GA_ALLTOALL) {
            const ptrdiff_t stride =
                (ptrdiff_t)a->rcount * nc_dt_extent(a->rdt);
            for (int j = 0; j < p && st == NUMACOLL_OK; j++)
                st = nc_ga_add(g, true, (char *)a->rbuf + j * stride,
                               a->rcount, a->rdt, g->rtmp + (size_t)j * nb,
                               nb);
            break;
        }
        own = g->rtmp + (size_t)me * nb;
        from = (char *)a->rbuf +
               (ptrdiff_t)me * a->rcount * nc_dt_extent(a->rdt);
        own_count = a->rcount;
        break;
    }
    case NC_GA_ALLGATHERV:
    case NC_GA_GATHERV: {
        const bool recv = a->kind == NC_GA_ALLGATHERV || root;
        if (recv)
            st = nc_ga_vblocks(g, false, a->rbuf, a->rcounts, a->rdispls,
                               a->rdt, &g->v, &g->rtmp, &g->recv);
        if (st != NUMACOLL_OK)
            break;
        if (!in_place) {
            g->nbytes = (size_t)a->scount * nc_dt_size(a->sdt);
            if (recv)
                st = nc_ga_same(g->nbytes, g->v.bytes[me]);
            if (st == NUMACOLL_OK)
                st = nc_ga_blocks(g, true, a->sbuf, a->scount, a->sdt,
                                  g->nbytes, 1, &g->stmp, (void **)&g->send);
            break;
        }
        g->nbytes = g->v.bytes[me];
        g->send = NUMACOLL_IN_PLACE;
        if (g->rtmp && a->rcounts[me] > 0) {
            own = g->rtmp + g->v.displs[me];
            from = (char *)a->rbuf +
                   (ptrdiff_t)a->rdispls[me] * nc_dt_extent(a->rdt);
            own_count = a->rcounts[me];
        }
        break;
    }
    case NC_GA_SCATTER:
    case NC_GA_SCATTERV: {
        const bool v = a->kind == NC_GA_SCATTERV;
        size_t mine = 0;    /* the root's own block */
        if (root && v) {
            st = nc_ga_vblocks(g, true, a->sbuf, a->scounts, a->sdispls,
                               a->sdt, &g->v, &g->stmp, (void **)&g->send);
            mine = st == NUMACOLL_OK ? g->v.bytes[me] : 0;
        } else if (root) {
            mine = nc_ga_block_bytes(a, me);
            st = nc_ga_blocks(g, true, a->sbuf, a->scount, a->sdt, mine, p,
                              &g->stmp, (void **)&g->send);
        }
        if (st != NUMACOLL_OK)
            break;
        if (in_place) {     /* the root's own block stays in sbuf */
            g->nbytes = mine;
            g->recv = (void *)(uintptr_t)NUMACOLL_IN_PLACE;
            break;
        }
        g->nbytes = (size_t)a->rcount * nc_dt_size(a->rdt);
        if (root)
            st = nc_ga_same(mine, g->nbytes);
        if (st == NUMACOLL_OK)
            st = nc_ga_blocks(g, false, a->rbuf, a->rcount, a->rdt,
                              g->nbytes, 1, &g->rtmp, &g->recv);
        break;
    }
    case NC_GA_ALLTOALLV:
        st = nc_ga_vblocks(g, false, a->rbuf, a->rcounts, a->rdispls, a->rdt,
                           &g->v, &g->rtmp, &g->recv);
        for (int j = 0; st == NUMACOLL_OK && j < p; j++)
            g->nbytes += g->v.bytes[j];     /* for the log: received */
        if (st == NUMACOLL_OK && !in_place)
            st = nc_ga_vblocks(g, true, a->sbuf, a->scounts, a->sdispls,
                               a->sdt, &g->sv, &g->stmp, (void **)&g->send);
        if (st != NUMACOLL_OK || !in_place)
            break;
        g->send = NUMACOLL_IN_PLACE;
        /* The receive side is a temporary: the blocks to send, in rbuf,
         * go into it first. */
        for (int j = 0; g->rtmp && j < p && st == NUMACOLL_OK; j++)
            if (a->rcounts[j] > 0)
                st = nc_ga_add(g, true,
                               (char *)a->rbuf + (ptrdiff_t)a->rdispls[j] *
                                                     nc_dt_extent(a->rdt),
                               a->rcounts[j], a->rdt,
                               g->rtmp + g->v.displs[j], g->v.bytes[j]);
        break;
    case NC_GA_REDUCE_SCATTER_BLOCK:
    case NC_GA_REDUCE_SCATTER:
    case NC_GA_SCAN:
    case NC_GA_EXSCAN:
        st = nc_ga_red_plan(g, a);
        break;
    case NC_GA_N:
        st = NUMACOLL_ERR_ARG;
        break;
    }
    if (st == NUMACOLL_OK && own)
        st = nc_ga_add(g, true, (char *)(uintptr_t)from, own_count, a->rdt,
                       own, (size_t)own_count * nc_dt_size(a->rdt));
    return st;
}

/* ---- running ------------------------------------------------------------ */

/* One convertor copy; a core status. */
static int nc_ga_copy(const nc_ga_seg_t *s)
{
    return nc_dt_copy(s->pack, s->user, s->count, s->dt, s->tmp, s->bytes);
}

int nc_ga_prepare(nc_ga_t *g)
{
    for (int i = 0; i < g->nseg; i++)
        if (g->seg[i].pack) {
            int st = nc_ga_copy(&g->seg[i]);
            if (st != NUMACOLL_OK)
                return st;
        }
    return NUMACOLL_OK;
}

/* The core's call of g in the given form. */
static int nc_ga_run(nc_ga_t *g, numacoll_team_t *t, nc_form_t form,
                     numacoll_request_t **q)
{
#define NC_GA_CALL(fn, ...)                                                   \
    (form == NC_FORM_BLOCKING ? numacoll_##fn(t, __VA_ARGS__)                 \
     : form == NC_FORM_NB     ? numacoll_i##fn(t, __VA_ARGS__, q)             \
                              : numacoll_##fn##_init(t, __VA_ARGS__, q))
    switch (g->kind) {
    case NC_GA_ALLGATHER:
        return NC_GA_CALL(allgather, g->send, g->recv, g->nbytes);
    case NC_GA_ALLGATHERV:
        return NC_GA_CALL(allgatherv, g->send, g->nbytes, g->recv, g->v.bytes,
                          g->v.displs);
    case NC_GA_GATHER:
        return NC_GA_CALL(gather, g->send, g->recv, g->nbytes, g->root);
    case NC_GA_GATHERV:
        return NC_GA_CALL(gatherv, g->send, g->nbytes, g->recv, g->v.bytes,
                          g->v.displs, g->root);
    case NC_GA_SCATTER:
        return NC_GA_CALL(scatter, g->send, g->recv, g->nbytes, g->root);
    case NC_GA_SCATTERV:
        return NC_GA_CALL(scatterv, g->send, g->v.bytes, g->v.displs, g->recv,
                          g->nbytes, g->root);
    case NC_GA_ALLTOALL:
        return NC_GA_CALL(alltoall, g->send, g->recv, g->nbytes);
    case NC_GA_ALLTOALLV: {
        /* in place the core ignores the send side */
        const nc_ga_v_t *sv = g->sv.bytes ? &g->sv : &g->v;
        return NC_GA_CALL(alltoallv, g->send, sv->bytes, sv->displs, g->recv,
                          g->v.bytes, g->v.displs);
    }
    default:
        break;
    }
    /* The reductions: a predefined op through the core's element types,
     * a user op through nc_user_op. */
    const bool pre = g->red.kind == NC_RED_PREDEF;
    const numacoll_dtype_t dt = g->red.dt;
    const numacoll_op_t op = g->red.op;
    const size_t es = g->red.elem_size;
    nc_user_ctx_t *u = &g->user;
    switch (g->kind) {
    case NC_GA_REDUCE_SCATTER_BLOCK:
        return pre ? NC_GA_CALL(reduce_scatter_block, g->send, g->recv,
                                g->count, dt, op)
                   : NC_GA_CALL(reduce_scatter_block_user, g->send, g->recv,
                                g->count, es, nc_user_op, u, g->commute);
    case NC_GA_REDUCE_SCATTER:
        return pre ? NC_GA_CALL(reduce_scatter, g->send, g->recv, g->counts,
                                dt, op)
                   : NC_GA_CALL(reduce_scatter_user, g->send, g->recv,
                                g->counts, es, nc_user_op, u, g->commute);
    case NC_GA_SCAN:
        return pre ? NC_GA_CALL(scan, g->send, g->recv, g->count, dt, op)
                   : NC_GA_CALL(scan_user, g->send, g->recv, g->count, es,
                                nc_user_op, u, g->commute);
    case NC_GA_EXSCAN:
        return pre ? NC_GA_CALL(exscan, g->send, g->recv, g->count, dt, op)
                   : NC_GA_CALL(exscan_user, g->send, g->recv, g->count, es,
                                nc_user_op, u, g->commute);
    default:
        break;
    }
#undef NC_GA_CALL
    return NUMACOLL_ERR_ARG;
}

int nc_ga_core(nc_ga_t *g, numacoll_team_t *t, bool persistent,
               numacoll_request_t **req)
{
    return nc_ga_run(g, t, persistent ? NC_FORM_PERSISTENT : NC_FORM_NB,
                     req);
}

/* The log line of a call that moves bytes (coll_base_verbose from
 * NC_CALL_VERBOSITY on). */
static void nc_ga_log(nc_module_t *m, nc_ga_kind_t k, const char *what,
                      int root, size_t nbytes, bool convertor, int st)
{
    if (!nc_call_verbose())
        return;
    const bool v = k == NC_GA_ALLGATHERV || k == NC_GA_GATHERV ||
                   k == NC_GA_SCATTERV || k == NC_GA_ALLTOALLV;
    opal_output_verbose(NC_CALL_VERBOSITY, NC_OUT,
                        "coll:numacoll:%s: %s (cid %u) root %d, %zu bytes "
                        "%s, %s: %s", what, nc_comm_name(m->comm),
                        nc_comm_cid(m->comm), root, nbytes,
                        v ? "of this rank" : "per block",
                        convertor ? "through the convertor" : "contiguous",
                        numacoll_strerror(st));
}

int nc_ga_done(nc_ga_t *g, int st, const char *what)
{
    for (int i = 0; i < g->nseg && st == NUMACOLL_OK; i++)
        if (!g->seg[i].pack)
            st = nc_ga_copy(&g->seg[i]);
    if (nc_ga_is_red(g->kind)) {
        if (g->user.dtype)  /* planned: not a call of no elements */
            nc_red_log(g->m->comm, what, -1, g->logged, g->user.dtype, &g->red,
                   st);
    } else {
        nc_ga_log(g->m, g->kind, what, g->root, g->nbytes, g->nseg > 0, st);
    }
    return st;
}

/* ---- the entry points --------------------------------------------------- */

/* A call refused before any collective step: this rank's own sizes
 * differ (MISMATCH) or no memory for a temporary. Said in our words (the
 * team's last error belongs to another call); its MPI error class. */
static int nc_ga_refuse(nc_module_t *m, const char *name, int st)
{
    const bool sizes = st == NUMACOLL_ERR_MISMATCH;
    if (nc_component.config.verbose >= 1)
        opal_output(0, "coll:numacoll: %s on %s (cid %u) refused on rank %d: "
                    "%s", name, nc_comm_name(m->comm), nc_comm_cid(m->comm),
                    ompi_comm_rank(m->comm),
                    sizes ? "its send and receive blocks differ in bytes "
                            "(an erroneous call; the other ranks may wait "
                            "for this one)"
                          : "no memory for the packed copy of a derived "
                            "datatype");
    return sizes ? MPI_ERR_ARG : MPI_ERR_NO_MEM;
}

/*
 * Why the core cannot take a call that moves bytes (NULL: it takes it),
 * the same answer on every rank: from arguments MPI requires alike
 * everywhere and the team's configuration. A reduction's (datatype, op)
 * is planned first (*red), so that one the core cannot map creates no
 * team. The staging slot checked is a configured reduce_frag_size (0,
 * the default, leaves it to the tuning rules, whose built-in slots are
 * 128 KiB); the core checks its tuning rule's (a rule with a smaller slot
 * than that makes such a call fail with MPI_ERR_ARG, see docs/ompi.md).
 */
static const char *nc_ga_declines(nc_module_t *m, const nc_ga_args_t *a,
                                  nc_red_plan_t *red)
{
    const size_t p = (size_t)ompi_comm_size(m->comm);
    size_t elem = 0;
    if (nc_ga_is_red(a->kind)) {
        const size_t total = nc_ga_red_total(a, (int)p);
        *red = nc_red_plan(total > INT_MAX ? INT_MAX : (int)total, a->rdt,
                           a->op);
        if (red->kind == NC_RED_FALLBACK)
            return "the core has no element type for this datatype and op "
                   "(nor a user op on contiguous elements)";
        if (red->kind == NC_RED_PREDEF && red->packed && total > INT_MAX)
            return "a derived datatype with holes of more than INT_MAX "
                   "elements in all (the convertor's count is an int)";
        elem = red->kind == NC_RED_PREDEF ? numacoll_dtype_size(red->dt)
                                          : red->elem_size;
    }
    if (!nc_ready(m))
        return "numacoll has no team on this communicator (its setup "
               "failed or did not fit the memory budget)";
    const size_t f = numacoll_team_config(m->team)->reduce_frag_size;
    if (f == 0)
        return NULL;
    switch (a->kind) {
    case NC_GA_ALLTOALLV:
        return 8 * (p - 1) > f ? "the staging slot (reduce_frag_size) "
                                 "cannot hold an 8-byte header per peer"
                               : NULL;
    case NC_GA_REDUCE_SCATTER_BLOCK:
    case NC_GA_REDUCE_SCATTER:
        return p * elem > f ? "the staging slot (reduce_frag_size) cannot "
                              "hold one element per rank"
                            : NULL;
    case NC_GA_SCAN:
    case NC_GA_EXSCAN:
        return elem > f ? "an element is larger than the staging slot "
                          "(reduce_frag_size)"
                        : NULL;
    default:
        return NULL;
    }
}

/* The direct way's v forms (below) on up to this many ranks: their byte
 * counts and displacements on the stack. */
#define NC_GA_DIRECT_P 64

/* One side of a direct call, count x dt at buf: its bytes, and where the
 * core finds them (*core; from the true lower bound), false where they
 * are not one run (the general way packs them). */
static bool nc_ga_one_side(const void *buf, int count, ompi_datatype_t *dt,
                           size_t *nb, void **core)
{
    char *b = (char *)(uintptr_t)buf;
    *nb = (size_t)count * nc_dt_size(dt);
    *core = *nb ? b + dt->super.true_lb : b;
    return *nb == 0 || nc_dense(dt, (size_t)count);
}

/* The v forms with every block dense, not in place, p <= NC_GA_DIRECT_P
 * (Gatherv, Scatterv: the root's blocks; a rank's own side as one run):
 * the core's status and *logged, the bytes a log line names (as
 * nc_ga_plan's nbytes); NC_DECLINED where the general way must look (it
 * also says why a call is wrong). */
static int nc_ga_direct_v(nc_module_t *m, const nc_ga_args_t *a,
                          size_t *logged)
{
    const int p = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm);
    const nc_ga_kind_t k = a->kind;
    const bool root = me == a->root;
    /* the side of every block: receive (Allgatherv, Alltoallv, a Gatherv
     * root), send (a Scatterv root) */
    const bool rv = k == NC_GA_ALLGATHERV || k == NC_GA_ALLTOALLV ||
                    (k == NC_GA_GATHERV && root),
               sv = k == NC_GA_ALLTOALLV || (k == NC_GA_SCATTERV && root);
    size_t vb[NC_GA_DIRECT_P], vd[NC_GA_DIRECT_P], total = 0, nb = 0;
    ptrdiff_t base = 0;
    void *one = NULL;   /* this rank's own side */
    /* a configured staging slot too small for Alltoallv's headers: the
     * general way hands the call on (alike on every rank) */
    nc_red_plan_t none;
    if (p > NC_GA_DIRECT_P || a->sbuf == MPI_IN_PLACE ||
        a->rbuf == MPI_IN_PLACE || nc_ga_declines(m, a, &none))
        return NC_DECLINED;
    if (rv && !nc_ga_vstraight(p, a->rcounts, a->rdispls, a->rdt, vb, vd,
                               &base, &total))
        return NC_DECLINED;
    char *recv = rv ? (char *)a->rbuf + base : NULL;
    switch (k) {
    case NC_GA_ALLGATHERV:
    case NC_GA_GATHERV:
        /* Allgatherv: nothing at all, the general way returns at once */
        if (!nc_ga_one_side(a->sbuf, a->scount, a->sdt, &nb, &one) ||
            (rv && nb != vb[me]) || (k == NC_GA_ALLGATHERV && total == 0))
            return NC_DECLINED;
        *logged = nb;
        return k == NC_GA_GATHERV
                   ? numacoll_gatherv(m->team, one, nb, recv,
                                      rv ? vb : NULL, rv ? vd : NULL,
                                      a->root)
                   : numacoll_allgatherv(m->team, one, nb, recv, vb, vd);
    case NC_GA_SCATTERV:
        if (!nc_ga_one_side(a->rbuf, a->rcount, a->rdt, &nb, &one) ||
            (sv && (!nc_ga_vstraight(p, a->scounts, a->sdispls, a->sdt, vb,
                                     vd, &base, &total) ||
                    nb != vb[me])))
            return NC_DECLINED;
        *logged = nb;
        return numacoll_scatterv(m->team,
                                 sv ? (const char *)a->sbuf + base : NULL,
                                 sv ? vb : NULL, sv ? vd : NULL, one, nb,
                                 a->root);
    default: {   /* Alltoallv */
        size_t sb[NC_GA_DIRECT_P], sd[NC_GA_DIRECT_P], stotal;
        ptrdiff_t sbase;
        if (!nc_ga_vstraight(p, a->scounts, a->sdispls, a->sdt, sb, sd,
                             &sbase, &stotal))
            return NC_DECLINED;
        *logged = total;
        return numacoll_alltoallv(m->team, (const char *)a->sbuf + sbase, sb,
                                  sd, recv, vb, vd);
    }
    }
}

/*
 * The blocking calls whose arguments go to the core as they are, while no
 * request is in flight: straight there, without nc_ga_t's plan and its
 * release (about 300 instructions of an 8-byte Allgather, measured: 460
 * there, 170 here):
 *  - Allgather, Alltoall: one datatype and count on both sides,
 *    contiguous, not in place;
 *  - Allgatherv, Alltoallv, Gatherv, Scatterv: every block dense, not in
 *    place, on up to NC_GA_DIRECT_P ranks (the byte counts on the stack);
 *  - Gather (Scatter): a non-root's send (receive) side contiguous; the
 *    root's as Allgather's;
 *  - Reduce_scatter_block, Scan, Exscan, and Reduce_scatter on up to
 *    NC_GA_DIRECT_P ranks: a predefined op on a predefined datatype, no
 *    configured staging slot (nc_ga_declines' checks).
 * It reads only what MPI makes significant on the rank, and takes the
 * core call the general way would make with the same arguments, so a
 * rank may go either way. NC_DECLINED where it does not apply:
 * nc_ga_entry's general way then.
 */
static int nc_ga_direct(nc_module_t *m, const nc_ga_args_t *a)
{
    const nc_ga_kind_t k = a->kind;
    if (m->state != MCA_COLL_NUMACOLL_READY || nc_nb_inflight())
        return NC_DECLINED;
    const size_t p = (size_t)ompi_comm_size(m->comm);
    const bool root = ompi_comm_rank(m->comm) == a->root;
    int st;
    if (nc_ga_is_red(k)) {
        /* Reduce_scatter: its counts as the core reads them */
        size_t cnt[NC_GA_DIRECT_P], all = 0;
        const bool v = k == NC_GA_REDUCE_SCATTER;
        for (size_t j = 0; v && j < p && p <= NC_GA_DIRECT_P; j++) {
            if (a->rcounts[j] < 0)
                return NC_DECLINED;
            cnt[j] = (size_t)a->rcounts[j];
            all += cnt[j];
        }
        /* none at all: the general way returns at once */
        if ((v ? p > NC_GA_DIRECT_P || all == 0 || all > INT_MAX
               : a->rcount <= 0) ||
            numacoll_team_config(m->team)->reduce_frag_size != 0)
            return NC_DECLINED;
        const nc_red_plan_t red = nc_red_plan_kept(
            m, v ? (int)all : a->rcount, a->rdt, a->op);
        if (red.kind != NC_RED_PREDEF || red.packed)
            return NC_DECLINED;
        const void *send;
        void *recv;
        nc_red_bufs(m, &red, a->sbuf, a->rbuf, -1, &send, &recv);
        const size_t n = (size_t)a->rcount * red.mult;
        for (size_t j = 0; v && j < p; j++)
            cnt[j] *= red.mult;
        st = k == NC_GA_SCAN
                 ? numacoll_scan(m->team, send, recv, n, red.dt, red.op)
             : k == NC_GA_EXSCAN
                 ? numacoll_exscan(m->team, send, recv, n, red.dt, red.op)
             : v ? numacoll_reduce_scatter(m->team, send, recv, cnt, red.dt,
                                           red.op)
                 : numacoll_reduce_scatter_block(m->team, send, recv, n,
                                                 red.dt, red.op);
        if (nc_hands_back(st))   /* alike on every rank */
            return NC_DECLINED;
        const size_t total = v                                  ? all
                             : k == NC_GA_REDUCE_SCATTER_BLOCK ? p * n
                                                                : n;
        nc_red_log(m->comm, nc_ga_names[k][3], -1,
                   total > INT_MAX ? INT_MAX : (int)total, a->rdt, &red, st);
    } else if (k == NC_GA_ALLGATHERV || k == NC_GA_ALLTOALLV ||
               k == NC_GA_GATHERV || k == NC_GA_SCATTERV) {
        size_t logged = 0;
        st = nc_ga_direct_v(m, a, &logged);
        if (st == NC_DECLINED || nc_hands_back(st))
            return NC_DECLINED;
        nc_ga_log(m, k, nc_ga_names[k][3], a->root, logged, false, st);
    } else {
        /* the side(s) this rank reads and writes: one block of the
         * other side's type, or p of one type on both */
        const bool all = k == NC_GA_ALLGATHER || k == NC_GA_ALLTOALL ||
                         ((k == NC_GA_GATHER || k == NC_GA_SCATTER) && root);
        const bool has_send = k != NC_GA_SCATTER || root,
                   has_recv = k != NC_GA_GATHER || root;
        ompi_datatype_t *dt = has_send ? a->sdt : a->rdt;
        const int count = has_send ? a->scount : a->rcount;
        /* in place, and MPI_IN_PLACE where MPI forbids it, the general way */
        if ((k != NC_GA_ALLGATHER && k != NC_GA_ALLTOALL &&
             k != NC_GA_GATHER && k != NC_GA_SCATTER) ||
            count <= 0 || (has_send && a->sbuf == MPI_IN_PLACE) ||
            (has_recv && a->rbuf == MPI_IN_PLACE) ||
            (all && (a->sdt != a->rdt || a->scount != a->rcount)))
            return NC_DECLINED;
        const size_t nb = (size_t)count * nc_dt_size(dt);
        if (nb == 0 || !nc_dense(dt, (size_t)count * (all ? p : 1)))
            return NC_DECLINED;
        const ptrdiff_t lb = dt->super.true_lb;
        const char *send = has_send ? (const char *)a->sbuf + lb : NULL;
        char *recv = has_recv ? (char *)a->rbuf + lb : NULL;
        switch (k) {
        case NC_GA_ALLGATHER:
            st = numacoll_allgather(m->team, send, recv, nb);
            break;
        case NC_GA_ALLTOALL:
            st = numacoll_alltoall(m->team, send, recv, nb);
            break;
        case NC_GA_GATHER:
            st = numacoll_gather(m->team, send, recv, nb, a->root);
            break;
        default:
            st = numacoll_scatter(m->team, send, recv, nb, a->root);
            break;
        }
        if (nc_hands_back(st))   /* alike on every rank */
            return NC_DECLINED;
        nc_ga_log(m, k, nc_ga_names[k][3], a->root, nb, false, st);
    }
    if (st == NUMACOLL_OK)
        nc_count(nc_ga_cnt(k, NC_N_DONE));
    return nc_finish(m, nc_ga_names[k][NC_FORM_BLOCKING], st);
}

/* The core's collective of each kind. */
static const numacoll_coll_t nc_ga_colls[NC_GA_N] = {
    [NC_GA_ALLGATHER] = NUMACOLL_COLL_ALLGATHER,
    [NC_GA_ALLGATHERV] = NUMACOLL_COLL_ALLGATHER,
    [NC_GA_GATHER] = NUMACOLL_COLL_GATHER,
    [NC_GA_GATHERV] = NUMACOLL_COLL_GATHER,
    [NC_GA_SCATTER] = NUMACOLL_COLL_SCATTER,
    [NC_GA_SCATTERV] = NUMACOLL_COLL_SCATTER,
    [NC_GA_ALLTOALL] = NUMACOLL_COLL_ALLTOALL,
    [NC_GA_ALLTOALLV] = NUMACOLL_COLL_ALLTOALL,
    [NC_GA_REDUCE_SCATTER_BLOCK] = NUMACOLL_COLL_REDUCE_SCATTER,
    [NC_GA_REDUCE_SCATTER] = NUMACOLL_COLL_REDUCE_SCATTER,
    [NC_GA_SCAN] = NUMACOLL_COLL_SCAN,
    [NC_GA_EXSCAN] = NUMACOLL_COLL_EXSCAN,
};

/*
 * Whether a tuning rule declines the call (decline=1, docs/tuning.md), on
 * a READY module: the size is the one the core looks the rule up by, alike
 * on every rank (the core's request.c): a block's bytes for Allgather,
 * Gather, Scatter, Alltoall, Allgatherv's largest block, SIZE_MAX for the
 * other v forms, a reduction's elements (Reduce_scatter's: all blocks)
 * times the type's size or a user op's extent. A reduction the core
 * cannot map is no rule's: its fallback counts as one.
 */
static bool nc_ga_rule_declines(nc_module_t *m, const nc_ga_args_t *a)
{
    const numacoll_coll_t coll = nc_ga_colls[a->kind];
    if (!(m->decline_mask >> (unsigned)coll & 1u))
        return false;
    const int p = ompi_comm_size(m->comm);
    size_t key = SIZE_MAX;
    switch (a->kind) {
    case NC_GA_ALLGATHER:
    case NC_GA_ALLTOALL:
        key = (size_t)a->rcount * nc_dt_size(a->rdt);
        break;
    case NC_GA_GATHER:
    case NC_GA_SCATTER:
        key = nc_ga_block_bytes(a, ompi_comm_rank(m->comm));
        break;
    case NC_GA_ALLGATHERV:
        key = 0;
        for (int j = 0; j < p; j++)
            if ((size_t)a->rcounts[j] * nc_dt_size(a->rdt) > key)
                key = (size_t)a->rcounts[j] * nc_dt_size(a->rdt);
        break;
    case NC_GA_REDUCE_SCATTER_BLOCK:
    case NC_GA_REDUCE_SCATTER:
    case NC_GA_SCAN:
    case NC_GA_EXSCAN: {
        const size_t total = nc_ga_red_total(a, p);
        const nc_red_plan_t red = nc_red_plan_kept(
            m, total > INT_MAX ? INT_MAX : (int)total, a->rdt, a->op);
        if (red.kind == NC_RED_FALLBACK)
            return false;
        key = total * (red.kind == NC_RED_USER ? red.elem_size
                                               : nc_dt_size(a->rdt));
        break;
    }
    default:
        break;
    }
    return numacoll_team_declines(m->team, coll, key) == 1;
}

/*
 * A call of any form: the MPI status, NC_DECLINED for the previous
 * component, or NC_RULE_DECLINED for it where a tuning rule declines the
 * call. Blocking calls run in the core right here unless requests
 * are in flight (then through one, as coll_numacoll_nb.c explains).
 */
static int nc_ga_entry(nc_module_t *m, nc_form_t form, const nc_ga_args_t *a,
                       ompi_request_t **req)
{
    const nc_ga_kind_t k = a->kind;
    /* a team made by this call (the first) is asked below */
    const bool lazy = m->state == MCA_COLL_NUMACOLL_LAZY;
    if (m->decline_mask && nc_ga_rule_declines(m, a))
        return NC_RULE_DECLINED;
    if (form == NC_FORM_BLOCKING) {
        const int st = nc_ga_direct(m, a);
        if (st != NC_DECLINED)
            return st;
    }
    const char *name = nc_ga_names[k][form];
    const int rank = ompi_comm_rank(m->comm), p = ompi_comm_size(m->comm);
    const bool nothing = nc_ga_nothing(a, rank, p);
    const int counter =
        nc_ga_cnt(k, form == NC_FORM_BLOCKING ? NC_N_DONE : NC_N_IDONE);
    if (nothing && form == NC_FORM_BLOCKING)
        return MPI_SUCCESS;
    nc_red_plan_t red = {.kind = NC_RED_FALLBACK};
    const char *why = nothing ? NULL : nc_ga_declines(m, a, &red);
    if (why) {
        const int failed = nc_declined(m);
        if (failed != NC_DECLINED)
            return failed;
        if (nc_call_verbose())
            opal_output_verbose(NC_CALL_VERBOSITY, NC_OUT,
                                "coll:numacoll:%s: %s (cid %u): handed to the "
                                "previous component: %s", name,
                                nc_comm_name(m->comm), nc_comm_cid(m->comm),
                                why);
        return NC_DECLINED;
    }
    if (lazy && !nothing && m->decline_mask && nc_ga_rule_declines(m, a))
        return NC_RULE_DECLINED;
    nc_ga_t local, *g = &local;
    nc_ga_init(g, m, k, a->root);
    g->red = red;
    int st = nothing ? NUMACOLL_OK : nc_ga_plan(g, a);
    if (st != NUMACOLL_OK) {
        nc_ga_free(g);
        return nc_ga_refuse(m, name, st);
    }
    if (form == NC_FORM_BLOCKING && !nc_nb_inflight()) {
        st = nc_ga_prepare(g);
        if (st == NUMACOLL_OK)
            st = nc_ga_run(g, m->team, NC_FORM_BLOCKING, NULL);
        if (nc_hands_back(st)) {   /* alike on every rank */
            nc_ga_free(g);
            return NC_DECLINED;
        }
        st = nc_ga_done(g, st, nc_ga_names[k][3]);
        nc_ga_free(g);
        if (st == NUMACOLL_OK)
            nc_count(counter);
        return nc_finish(m, name, st);
    }
    g = malloc(sizeof *g);
    if (!g) {
        nc_ga_free(&local);
        return nc_ga_refuse(m, name, NUMACOLL_ERR_NOMEM);
    }
    *g = local;
    g->heap = true;
    return nc_nb_ga(m, form == NC_FORM_PERSISTENT, nothing, name, counter, g,
                    form == NC_FORM_BLOCKING ? NULL : req);
}

/*
 * The 36 coll functions, three per collective (blocking, nonblocking,
 * persistent init), generated from the shape of their parameters: ONE
 * (a count and type per side), RV (receive counts and displacements), SV
 * (send counts and displacements), VV (both), RED (a reduction's count),
 * REDV (a reduction's receive counts), rooted (Y) or not (N). Each builds the
 * call's nc_ga_args_t, runs nc_ga_entry and, when that declines, calls
 * the previous component's function of the same name.
 */
#define NC_P_ONE                                                              \
    const void *sbuf, int scount, ompi_datatype_t *sdt, void *rbuf,           \
        int rcount, ompi_datatype_t *rdt,
#define NC_P_RV                                                               \
    const void *sbuf, int scount, ompi_datatype_t *sdt, void *rbuf,           \
        const int *rcounts, const int *displs, ompi_datatype_t *rdt,
#define NC_P_SV                                                               \
    const void *sbuf, const int *scounts, const int *displs,                  \
        ompi_datatype_t *sdt, void *rbuf, int rcount, ompi_datatype_t *rdt,
#define NC_P_VV                                                               \
    const void *sbuf, const int *scounts, const int *sdispls,                 \
        ompi_datatype_t *sdt, void *rbuf, const int *rcounts,                 \
        const int *rdispls, ompi_datatype_t *rdt,
#define NC_P_RED                                                              \
    const void *sbuf, void *rbuf, int count, ompi_datatype_t *dt,             \
        struct ompi_op_t *op,
#define NC_P_REDV                                                             \
    const void *sbuf, void *rbuf, const int *rcounts, ompi_datatype_t *dt,    \
        struct ompi_op_t *op,
#define NC_A_ONE sbuf, scount, sdt, rbuf, rcount, rdt,
#define NC_A_RV sbuf, scount, sdt, rbuf, rcounts, displs, rdt,
#define NC_A_SV sbuf, scounts, displs, sdt, rbuf, rcount, rdt,
#define NC_A_VV sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls, rdt,
#define NC_A_RED sbuf, rbuf, count, dt, op,
#define NC_A_REDV sbuf, rbuf, rcounts, dt, op,
#define NC_ARGS_ONE(ID, root)                                                 \
    {NC_GA_##ID, sbuf, scount, NULL, NULL, sdt, rbuf, rcount, NULL, NULL,     \
     rdt, root, NULL}
#define NC_ARGS_RV(ID, root)                                                  \
    {NC_GA_##ID, sbuf, scount, NULL, NULL, sdt, rbuf, 0, rcounts, displs,     \
     rdt, root, NULL}
#define NC_ARGS_SV(ID, root)                                                  \
    {NC_GA_##ID, sbuf, 0, scounts, displs, sdt, rbuf, rcount, NULL, NULL,     \
     rdt, root, NULL}
#define NC_ARGS_VV(ID, root)                                                  \
    {NC_GA_##ID, sbuf, 0, scounts, sdispls, sdt, rbuf, 0, rcounts, rdispls,   \
     rdt, root, NULL}
#define NC_ARGS_RED(ID, root)                                                 \
    {NC_GA_##ID, sbuf, 0, NULL, NULL, NULL, rbuf, count, NULL, NULL, dt,      \
     root, op}
#define NC_ARGS_REDV(ID, root)                                                \
    {NC_GA_##ID, sbuf, 0, NULL, NULL, NULL, rbuf, 0, rcounts, NULL, dt, root, \
     op}
/* rooted: the parameter, the argument, the value in nc_ga_args_t */
#define NC_RP_Y int root,
#define NC_RP_N
#define NC_RA_Y root,
#define NC_RA_N
#define NC_RV_Y root
#define NC_RV_N -1

/* Our status, or the previous component's function for the call, counted
 * in fb (a fallback) or dc (a tuning rule declined it). */
#define NC_GA_OR_PREV(name, ID, fb, dc, call_prev)                            \
    do {                                                                      \
        if (rc != NC_DECLINED && rc != NC_RULE_DECLINED)                      \
            return rc;                                                        \
        nc_count(nc_ga_cnt(NC_GA_##ID, rc == NC_RULE_DECLINED ? dc : fb));    \
        return m->prev_##name call_prev;                                      \
    } while (0)

#define NC_GA_DEFINE(name, ID, shape, r)                                      \
    static int nc_##name(NC_P_##shape NC_RP_##r ompi_communicator_t *comm,    \
                         mca_coll_base_module_t *module)                      \
    {                                                                         \
        nc_module_t *m = (nc_module_t *)module;                               \
        const nc_ga_args_t a = NC_ARGS_##shape(ID, NC_RV_##r);                \
        int rc = nc_ga_entry(m, NC_FORM_BLOCKING, &a, NULL);                  \
        NC_GA_OR_PREV(name, ID, NC_N_FALLBACK, NC_N_DECLINED,                 \
                      (NC_A_##shape NC_RA_##r comm,                           \
                       m->prev_##name##_module));                             \
    }                                                                         \
    static int nc_i##name(NC_P_##shape NC_RP_##r ompi_communicator_t *comm,   \
                          ompi_request_t **req,                               \
                          mca_coll_base_module_t *module)                     \
    {                                                                         \
        nc_module_t *m = (nc_module_t *)module;                               \
        const nc_ga_args_t a = NC_ARGS_##shape(ID, NC_RV_##r);                \
        int rc = nc_ga_entry(m, NC_FORM_NB, &a, req);                         \
        NC_GA_OR_PREV(i##name, ID, NC_N_IFALLBACK, NC_N_IDECLINED,            \
                      (NC_A_##shape NC_RA_##r comm, req,                      \
                       m->prev_i##name##_module));                            \
    }                                                                         \
    /* the info argument carries no hint numacoll reads */                    \
    static int nc_##name##_init(NC_P_##shape NC_RP_##r                        \
                                ompi_communicator_t *comm,                    \
                                struct ompi_info_t *info,                     \
                                ompi_request_t **req,                         \
                                mca_coll_base_module_t *module)               \
    {                                                                         \
        nc_module_t *m = (nc_module_t *)module;                               \
        const nc_ga_args_t a = NC_ARGS_##shape(ID, NC_RV_##r);                \
        int rc = nc_ga_entry(m, NC_FORM_PERSISTENT, &a, req);                 \
        NC_GA_OR_PREV(name##_init, ID, NC_N_IFALLBACK, NC_N_IDECLINED,        \
                      (NC_A_##shape NC_RA_##r comm, info, req,                \
                       m->prev_##name##_init_module));                        \
    }

NC_GA_DEFINE(allgather, ALLGATHER, ONE, N)
NC_GA_DEFINE(allgatherv, ALLGATHERV, RV, N)
NC_GA_DEFINE(gather, GATHER, ONE, Y)
NC_GA_DEFINE(gatherv, GATHERV, RV, Y)
NC_GA_DEFINE(scatter, SCATTER, ONE, Y)
NC_GA_DEFINE(scatterv, SCATTERV, SV, Y)
NC_GA_DEFINE(alltoall, ALLTOALL, ONE, N)
NC_GA_DEFINE(alltoallv, ALLTOALLV, VV, N)
NC_GA_DEFINE(reduce_scatter_block, REDUCE_SCATTER_BLOCK, RED, N)
NC_GA_DEFINE(reduce_scatter, REDUCE_SCATTER, REDV, N)
NC_GA_DEFINE(scan, SCAN, RED, N)
NC_GA_DEFINE(exscan, EXSCAN, RED, N)

/* ---- module part -------------------------------------------------------- */

void nc_ga_install(nc_module_t *m)
{
#define NC_INSTALL(name) m->super.coll_##name = nc_##name;
    NC_GA_BLOCKING_LIST(NC_INSTALL)
    /* The nonblocking forms need coll_numacoll_nb.c's requests, which it
     * installs its own functions only where they fit. */
    if (m->super.coll_ibcast) {
        NC_GA_NB_LIST(NC_INSTALL)
    }
#undef NC_INSTALL
}

void nc_ga_enable(nc_module_t *m, ompi_communicator_t *comm)
{
    mca_coll_base_comm_coll_t *c = comm->c_coll;
#define NC_SAVE(name)                                                         \
    if (m->super.coll_##name) {                                               \
        NC_PREV_SAVE(m, c, comm, name)                                        \
    }
    NC_GA_LIST(NC_SAVE)
#undef NC_SAVE
}

void nc_ga_construct(nc_module_t *m)
{
#define NC_CLEAR(name) NC_PREV_CLEAR(m, name)
    NC_GA_LIST(NC_CLEAR)
#undef NC_CLEAR
}

void nc_ga_destruct(nc_module_t *m)
{
#define NC_RELEASE(name) NC_PREV_RELEASE(m, name)
    NC_GA_LIST(NC_RELEASE)
#undef NC_RELEASE
}

void nc_ga_count_fallback(const char *name)
{
    for (int k = 0; k < NC_GA_N; k++)
        if (strcmp(nc_ga_names[k][3], name) == 0)
            nc_count(nc_ga_cnt(k, NC_N_FALLBACK));
}

/* <name>_count, <name>_fallback_count, i<name>_count,
 * i<name>_fallback_count, <name>_declined_count and i<name>_declined_count
 * for each kind. */
void nc_ga_register_pvars(void)
{
    static const char *const names[NC_GA_N][2] = {
#define NC_GA_PV(ID, name, Name) [NC_GA_##ID] = {#name, "MPI_" #Name},
        NC_GA_KINDS(NC_GA_PV)
#undef NC_GA_PV
    };
    for (int k = 0; k < NC_GA_N; k++)
        for (int c = 0; c < NC_N_COUNTERS; c++) {
            const bool nb = c == NC_N_IDONE || c == NC_N_IFALLBACK ||
                            c == NC_N_IDECLINED;
            const bool fb = c == NC_N_FALLBACK || c == NC_N_IFALLBACK;
            const bool dc = c == NC_N_DECLINED || c == NC_N_IDECLINED;
            char name[64], doc[320];
            snprintf(name, sizeof name, "%s%s%s_count", nb ? "i" : "",
                     names[k][0], fb ? "_fallback" : dc ? "_declined" : "");
            if (dc)
                snprintf(doc, sizeof doc, "Number of %s%s calls on "
                         "communicators that selected numacoll which a "
                         "tuning rule (decline=1) handed to the previous "
                         "component.", names[k][1],
                         nb ? " nonblocking and persistent-init" : "");
            else if (fb)
                snprintf(doc, sizeof doc, "Number of %s%s calls on "
                         "communicators that selected numacoll which it "
                         "handed to the previous component (no team: setup "
                         "failed or the memory budget was reached).",
                         names[k][1], nb ? " nonblocking and persistent-init"
                                         : "");
            else
                snprintf(doc, sizeof doc, "Number of %s%s this process "
                         "completed through numacoll's shared segment, over "
                         "all communicators.", names[k][1],
                         nb ? " nonblocking calls and persistent starts"
                            : " calls");
            (void)mca_base_component_pvar_register(
                &nc_component.super.collm_version, name, doc,
                OPAL_INFO_LVL_4, MCA_BASE_PVAR_CLASS_COUNTER,
                MCA_BASE_VAR_TYPE_UNSIGNED_LONG_LONG, NULL,
                MCA_BASE_VAR_BIND_NO_OBJECT,
                MCA_BASE_PVAR_FLAG_READONLY | MCA_BASE_PVAR_FLAG_CONTINUOUS,
                nc_pvar_read, NULL, NULL, &nc_cnt_ids[nc_ga_cnt(k, c)]);
        }
}
