/*
 * Datatypes and ops for libnumacoll-mpi.
 *
 * Data movement: the core moves bytes, so count x datatype becomes one run
 * of count * size bytes. Where the user's buffer already is that run (a
 * predefined type, or a dup / contiguous / resized type of one, elements
 * back to back) the core reads or writes it in place; any other layout is
 * packed into a temporary with PMPI_Pack (and unpacked with PMPI_Unpack).
 * A rank's layout never decides whether numacoll serves a call: the byte
 * count does, and MPI makes it equal on every rank, so a vector type on
 * the root and bytes elsewhere still meet in the core.
 *
 * Reductions: a predefined op on a predefined type goes to the core's
 * element type (mpi/nm_map.c); a user op created with MPI_Op_create in C
 * (the wrapper below remembers its function) on a type whose elements lie
 * back to back goes to the core's user entry; anything else goes to the
 * MPI. MPI requires the same datatype and op on every rank, so every rank
 * decides alike.
 */
#include "mpi/nm.h"
#include "mpi/nm_map.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int nm_type_named(MPI_Datatype dt)
{
    int ni, na, nd, comb;
    return PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) == MPI_SUCCESS &&
           comb == MPI_COMBINER_NAMED;
}

int nm_bytes(int count, MPI_Datatype dt, size_t *bytes)
{
    int size = 0;
    if (count < 0 || PMPI_Type_size(dt, &size) != MPI_SUCCESS || size < 0)
        return -1;
    *bytes = (size_t)count * (size_t)size;
    return 0;
}

/* 1 when one element of dt is its size bytes in one run in packing order
 * (no holes, blocks in order): a named type, or a dup, contiguous or
 * resized type of such a type whose elements lie back to back. Named types
 * are asked of nothing else; derived ones through their envelope. */
static int nm_plain(MPI_Datatype dt, int depth)
{
    int ni, na, nd, comb;
    if (depth > 8 ||
        PMPI_Type_get_envelope(dt, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return 0;
    if (comb == MPI_COMBINER_NAMED)
        return 1;
    if ((comb != MPI_COMBINER_DUP && comb != MPI_COMBINER_CONTIGUOUS &&
         comb != MPI_COMBINER_RESIZED) ||
        ni > 1 || na > 2 || nd != 1)
        return 0;
    int ints[1];
    MPI_Aint addrs[2];
    MPI_Datatype old;
    if (PMPI_Type_get_contents(dt, ni, na, nd, ints, addrs, &old) !=
        MPI_SUCCESS)
        return 0;
    int ok = nm_plain(old, depth + 1);
    if (ok && comb == MPI_COMBINER_CONTIGUOUS && ints[0] > 1) {
        int size = 0;
        MPI_Aint lb = 0, extent = 0;
        ok = PMPI_Type_size(old, &size) == MPI_SUCCESS &&
             PMPI_Type_get_extent(old, &lb, &extent) == MPI_SUCCESS &&
             extent == size;
    }
    int oc;
    if (PMPI_Type_get_envelope(old, &ni, &na, &nd, &oc) == MPI_SUCCESS &&
        oc != MPI_COMBINER_NAMED)
        PMPI_Type_free(&old);
    return ok;
}

/* Where count x dt lies as one run of bytes: *at = the true lower bound.
 * 0 when it does not. */
static int nm_one_run(int count, MPI_Datatype dt, MPI_Aint *at)
{
    int size = 0;
    MPI_Aint lb, extent, tlb, textent;
    if (PMPI_Type_size(dt, &size) != MPI_SUCCESS ||
        PMPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(dt, &tlb, &textent) != MPI_SUCCESS)
        return 0;
    *at = tlb;
    if (size == 0 || count == 0)
        return 1;
    return textent == size && (count == 1 || extent == size) &&
           nm_plain(dt, 0);
}

int nm_span_begin(nm_span_t *s, const void *user, int count, MPI_Datatype dt,
                  int fill, MPI_Comm comm)
{
    *s = (nm_span_t){.user = (void *)(uintptr_t)user, .count = count,
                     .dt = dt};
    if (nm_bytes(count, dt, &s->bytes) != 0)
        return MPI_ERR_COUNT;
    MPI_Aint at = 0;
    if (nm_one_run(count, dt, &at)) {
        s->run = (char *)s->user + at;
        return MPI_SUCCESS;
    }
    s->tmp = malloc(s->bytes ? s->bytes : 1);
    if (!s->tmp)
        return MPI_ERR_NO_MEM;
    s->run = s->tmp;
    int pos = 0;
    if (fill && s->bytes > INT32_MAX)
        return MPI_ERR_COUNT;
    if (fill && PMPI_Pack(user, count, dt, s->tmp, (int)s->bytes, &pos,
                          comm) != MPI_SUCCESS)
        return MPI_ERR_TYPE;
    return MPI_SUCCESS;
}

int nm_span_end(nm_span_t *s, int drain, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    if (s->tmp && drain) {
        int pos = 0;
        if (s->bytes > INT32_MAX ||
            PMPI_Unpack(s->tmp, (int)s->bytes, &pos, s->user, s->count, s->dt,
                        comm) != MPI_SUCCESS)
            rc = MPI_ERR_TYPE;
    }
    free(s->tmp);
    s->tmp = NULL;
    return rc;
}

static size_t nm_size_of(MPI_Datatype d)
{
    int s = 0;
    return PMPI_Type_size(d, &s) == MPI_SUCCESS && s > 0 ? (size_t)s : 0;
}

/* Pack (pack = 1) or unpack block j of *v between the user's buffer and
 * the temporary. */
static int nm_vblock(nm_vspan_t *v, int j, int pack, MPI_Comm comm)
{
    char *user = (char *)v->user + (MPI_Aint)v->displs[j] * v->extent;
    int pos = 0;
    if (v->len[j] > INT32_MAX)
        return MPI_ERR_COUNT;
    int rc = pack ? PMPI_Pack(user, v->counts[j], v->dt, v->run + v->off[j],
                              (int)v->len[j], &pos, comm)
                  : PMPI_Unpack(v->run + v->off[j], (int)v->len[j], &pos,
                                user, v->counts[j], v->dt, comm);
    return rc == MPI_SUCCESS ? MPI_SUCCESS : MPI_ERR_TYPE;
}

int nm_vspan_begin(nm_vspan_t *v, const void *user, const int *counts,
                   const int *displs, MPI_Datatype dt, int p, int fill,
                   MPI_Comm comm)
{
    *v = (nm_vspan_t){.user = (void *)(uintptr_t)user, .counts = counts,
                      .displs = displs, .dt = dt, .p = p};
    int size = 0;
    MPI_Aint lb = 0, at = 0;
    if (PMPI_Type_size(dt, &size) != MPI_SUCCESS || size < 0 ||
        PMPI_Type_get_extent(dt, &lb, &v->extent) != MPI_SUCCESS)
        return MPI_ERR_TYPE;
    v->off = malloc(2 * (size_t)p * sizeof *v->off);
    if (!v->off)
        return MPI_ERR_NO_MEM;
    v->len = v->off + p;
    /* in place where every element is its bytes back to back, so that
     * displacements in elements are displacements in bytes */
    int in_place = nm_one_run(2, dt, &at);
    for (int j = 0; j < p && in_place; j++)
        in_place = displs[j] >= 0; /* the core's offsets are unsigned */
    size_t total = 0;
    for (int j = 0; j < p; j++) {
        if (counts[j] < 0)
            return MPI_ERR_COUNT;
        v->len[j] = (size_t)counts[j] * (size_t)size;
        v->off[j] = in_place ? (size_t)((MPI_Aint)displs[j] * v->extent)
                             : total;
        total += v->len[j];
    }
    if (in_place) {
        v->run = (char *)v->user + at;
        return MPI_SUCCESS;
    }
    v->tmp = malloc(total ? total : 1);
    if (!v->tmp)
        return MPI_ERR_NO_MEM;
    v->run = v->tmp;
    for (int j = 0; j < p; j++)
        if (fill == NM_FILL_ALL || fill == j) {
            int rc = nm_vblock(v, j, 1, comm);
            if (rc != MPI_SUCCESS)
                return rc;
        }
    return MPI_SUCCESS;
}

int nm_vspan_end(nm_vspan_t *v, int drain, int skip, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    for (int j = 0; v->tmp && drain && j < v->p && rc == MPI_SUCCESS; j++)
        if (j != skip)
            rc = nm_vblock(v, j, 0, comm);
    free(v->tmp);
    free(v->off);
    v->tmp = NULL;
    v->off = NULL;
    return rc;
}

/* ---- user ops ------------------------------------------------------------- */

/* The functions of the ops made with MPI_Op_create in C: MPI cannot be
 * asked for an op's function, so the wrapper remembers it. Ops made in
 * Fortran (which MPICH creates without this entry point) are not here and
 * go to the MPI. */
typedef struct nm_uop {
    MPI_Op op;
    MPI_User_function *fn;
    int commute;
} nm_uop_t;

static pthread_mutex_t nm_uops_lock = PTHREAD_MUTEX_INITIALIZER;
static nm_uop_t *nm_uops;
static size_t nm_nuops, nm_cap_uops;

int MPI_Op_create(MPI_User_function *fn, int commute, MPI_Op *op)
{
    int rc = PMPI_Op_create(fn, commute, op);
    if (rc != MPI_SUCCESS)
        return rc;
    pthread_mutex_lock(&nm_uops_lock);
    if (nm_nuops == nm_cap_uops) {
        size_t cap = nm_cap_uops ? 2 * nm_cap_uops : 16;
        nm_uop_t *n = realloc(nm_uops, cap * sizeof *n);
        if (n) {
            nm_uops = n;
            nm_cap_uops = cap;
        }
    }
    /* no room: an op known on some ranks only would make them decide
     * differently, so the op is not made */
    const int room = nm_nuops < nm_cap_uops;
    if (room)
        nm_uops[nm_nuops++] = (nm_uop_t){*op, fn, commute};
    pthread_mutex_unlock(&nm_uops_lock);
    if (!room) {
        PMPI_Op_free(op);
        return MPI_ERR_NO_MEM;
    }
    return rc;
}

int MPI_Op_free(MPI_Op *op)
{
    MPI_Op was = op ? *op : MPI_OP_NULL;
    pthread_mutex_lock(&nm_uops_lock);
    for (size_t i = 0; i < nm_nuops; i++)
        if (nm_uops[i].op == was) {
            nm_uops[i] = nm_uops[--nm_nuops];
            break;
        }
    pthread_mutex_unlock(&nm_uops_lock);
    return PMPI_Op_free(op);
}

static int nm_uop_find(MPI_Op op, nm_uop_t *out)
{
    int found = 0;
    pthread_mutex_lock(&nm_uops_lock);
    for (size_t i = 0; i < nm_nuops && !found; i++)
        if (nm_uops[i].op == op) {
            *out = nm_uops[i];
            found = 1;
        }
    pthread_mutex_unlock(&nm_uops_lock);
    return found;
}

/* The core's user op calls MPI's: inout[i] = in[i] op inout[i]. */
static void nm_call_user(void *ctx, const void *in, void *inout, size_t count)
{
    nm_red_ctx_t *c = ctx;
    int n = (int)count;
    c->fn((void *)(uintptr_t)in, inout, &n, &c->dt);
}

int nm_red_plan(int count, MPI_Datatype dt, MPI_Op op, nm_red_t *r,
                nm_red_ctx_t *ctx_store)
{
    *r = (nm_red_t){0};
    if (count < 0)
        return -1;
    if (nm_op_is_predefined(op)) {
        /* a named type: count elements of its extent at the buffer (the
         * pairs' padding included, as the core's pairs have it) */
        int nop = nm_map_op(op);
        int ndt = nop < 0 ? -1 : nm_map_dtype(dt, op, nm_size_of);
        MPI_Aint lb = 0, extent = 0;
        if (ndt < 0 ||
            !numacoll_op_valid((numacoll_op_t)nop, (numacoll_dtype_t)ndt) ||
            PMPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS ||
            numacoll_dtype_size((numacoll_dtype_t)ndt) != (size_t)extent)
            return -1;
        r->dt = (numacoll_dtype_t)ndt;
        r->op = (numacoll_op_t)nop;
        r->elem_size = (size_t)extent;
        r->commutative = 1;
        return 0;
    }
    /* A user op sees elements where the core puts them, back to back: the
     * type must be its bytes in one run from offset 0, as the function
     * reads an element from the pointer it is given. */
    nm_uop_t u;
    int size = 0;
    MPI_Aint at = 0, lb = 0, extent = 0;
    if (!nm_uop_find(op, &u) || PMPI_Type_size(dt, &size) != MPI_SUCCESS ||
        size <= 0 || PMPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS ||
        lb != 0 || extent != size || !nm_one_run(count, dt, &at) || at != 0)
        return -1;
    *ctx_store = (nm_red_ctx_t){u.fn, dt};
    r->user = 1;
    r->fn = nm_call_user;
    r->ctx = ctx_store;
    r->elem_size = (size_t)size;
    r->commutative = u.commute;
    return 0;
}
