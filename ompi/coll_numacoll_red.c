/*
 * Reductions' glue: which (datatype, op) pairs the core serves and how a
 * call's buffers reach it (the plan, shared by every reducing collective:
 * Reduce and Allreduce here, their nonblocking and persistent forms in
 * coll_numacoll_nb.c, Reduce_scatter(_block), Scan and Exscan in
 * coll_numacoll_gather.c), then blocking Reduce and Allreduce.
 *
 * docs/ompi.md ("Reductions") has the table of the types and ops served.
 */
#include "coll_numacoll.h"
#include "mpi/nm_map.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/base/coll_base_functions.h"
#include "opal/util/output.h"

/*
 * How a (datatype, op) pair reaches the core. MPI requires the same count,
 * datatype, op and root on every rank of a Reduce/Allreduce, so this
 * decision, taken locally, is the same everywhere and all ranks fall back
 * (or not) together, before any setup or shared memory is touched.
 *
 *  - a predefined op on a predefined datatype goes to the core's element
 *    type of its kind and size (nm_map_dtype, mpi/nm_map.c, shared with
 *    libnumacoll-mpi): C, Fortran and C++
 *    integers by width and signedness, reals and complex numbers by width
 *    (Fortran's REAL*16 and COMPLEX*32 as binary128), logicals for the
 *    logical ops, the MINLOC/MAXLOC pairs;
 *  - a predefined op on a derived datatype made of one predefined type
 *    (contiguous, vector, indexed, resized, a struct of one type) whose
 *    elements are the core's elements byte for byte: count x datatype is
 *    count * mult elements of that type, straight from the buffer where
 *    they lie in one run, else packed into a temporary through the
 *    convertor and the result unpacked (NC_RED_PREDEF with packed);
 *  - a user-defined op on a contiguous datatype whose size equals its
 *    extent (no holes, no gaps between elements) goes to the *_user entry
 *    with elem_size = extent, calling the op through ompi_op_reduce (C,
 *    Fortran and C++ ops alike);
 *  - everything else goes to the previous component: a pair (op, type)
 *    that is not MPI's (whose error Open MPI's argument check gives
 *    first), derived types of several predefined types or of a pair type
 *    with padding (MPI_DOUBLE_INT, whose packed form has no padding),
 *    non-contiguous types with a user op, MPI_REPLACE and MPI_NO_OP.
 */
static size_t nc_size_of(ompi_datatype_t *d)
{
    size_t s = 0;
    (void)ompi_datatype_type_size(d, &s);
    return s;
}

/*
 * ompi/op/op.h cannot be included from outside Open MPI's tree (it needs
 * Fortran glue headers that the development package does not ship), so ops
 * are handled through the public API and the coll base: predefined ops
 * are recognised by their handles, user ops run through
 * mca_coll_base_reduce_local (Open MPI's ompi_op_reduce, which calls C,
 * Fortran and C++ ops each their own way) and MPI_Op_commutative says
 * whether they commute. Not MPI_Reduce_local: Open MPI 5.0 runs it through
 * MPI_COMM_SELF's coll table, which a program that uses only MPI sessions
 * never gets (a NULL dereference there).
 */
/* The core's element type and op of a predefined op on a predefined
 * datatype d whose elements are the core's elements: the same bytes
 * (pairs and long double carry padding in both). */
static bool nc_red_predef(ompi_datatype_t *d, struct ompi_op_t *op,
                          nc_red_plan_t *p)
{
    int nop = nm_map_op(op);
    int ndt = nop < 0 ? -1 : nm_map_dtype(d, op, nc_size_of);
    ptrdiff_t lb = 0, extent = 0;
    if (ndt < 0 ||
        !numacoll_op_valid((numacoll_op_t)nop, (numacoll_dtype_t)ndt) ||
        ompi_datatype_get_extent(d, &lb, &extent) != OMPI_SUCCESS ||
        numacoll_dtype_size((numacoll_dtype_t)ndt) != (size_t)extent)
        return false;
    p->kind = NC_RED_PREDEF;
    p->dt = (numacoll_dtype_t)ndt;
    p->op = (numacoll_op_t)nop;
    p->mult = 1;
    return true;
}

/* The plan of a call, from its arguments alone, so it is known before any
 * setup (whether a user op's element fits the staging slot depends on the
 * team's tuning rule: nc_red_call asks once the team exists). */
nc_red_plan_t nc_red_plan(int count, ompi_datatype_t *dtype,
                                 struct ompi_op_t *op)
{
    nc_red_plan_t p = {.kind = NC_RED_FALLBACK};
    ptrdiff_t lb = 0, extent = 0;
    size_t size = 0;
    if (count < 0 ||
        ompi_datatype_get_extent(dtype, &lb, &extent) != OMPI_SUCCESS ||
        ompi_datatype_type_size(dtype, &size) != OMPI_SUCCESS || extent <= 0)
        return p;
    p.true_lb = dtype->super.true_lb;
    if (nm_op_is_predefined(op)) {
        if (ompi_datatype_is_predefined(dtype)) {
            (void)nc_red_predef(dtype, op, &p);
            return p;
        }
        /* A derived datatype of one predefined type: its elements, packed,
         * are that type's back to back, which must be the core's (no pair
         * type with padding). */
        ompi_datatype_t *base =
            ompi_datatype_get_single_predefined_type_from_args(dtype);
        nc_red_plan_t b = p;
        const size_t bs = base ? nc_size_of(base) : 0;
        if (!base || !ompi_datatype_is_predefined(base) || bs == 0 ||
            size % bs != 0 || !nc_red_predef(base, op, &b) ||
            numacoll_dtype_size(b.dt) != bs)
            return p;
        b.mult = size / bs;
        /* one run of count * size bytes from the true lower bound, or
         * packed (Open MPI's answer tells one element from several) */
        b.packed = size != (size_t)extent ||
                   !ompi_datatype_is_contiguous_memory_layout(
                       dtype, count > 1 ? 2 : 1);
        return b;
    }
    /* User op: elements back to back with no holes, so that count
     * elements are count * extent bytes the op can be handed in pieces. */
    if (size != (size_t)extent ||
        !ompi_datatype_is_contiguous_memory_layout(dtype,
                                                   count > 1 ? count : 1))
        return p;
    p.kind = NC_RED_USER;
    p.elem_size = (size_t)extent;
    return p;
}

nc_red_plan_t nc_red_plan_kept(nc_module_t *m, int count,
                               ompi_datatype_t *dtype, struct ompi_op_t *op)
{
    /* the chain of handle compares is about 100 instructions: once per
     * pair while an application's few pairs stay here */
    for (int i = 0; i < NC_RED_KEPT; i++)
        if (dtype == m->red_kept[i].dt && op == m->red_kept[i].op &&
            count >= 0)
            return m->red_kept[i].plan;
    nc_red_plan_t p = nc_red_plan(count, dtype, op);
    if (p.kind == NC_RED_PREDEF && ompi_datatype_is_predefined(dtype)) {
        struct nc_red_kept *k = &m->red_kept[m->red_next++ % NC_RED_KEPT];
        *k = (struct nc_red_kept){dtype, op, p};
    }
    return p;
}

int nc_dt_copy(bool pack, void *user, int count, ompi_datatype_t *dt,
               void *tmp, size_t bytes)
{
    nc_dt_ctx_t c;
    int st = nc_dt_begin(&c, pack, user, count, dt);
    if (st == NUMACOLL_OK && (pack ? nc_pack(&c, 0, tmp, bytes)
                                   : nc_unpack(&c, 0, tmp, bytes)) != 0)
        st = NUMACOLL_ERR_CALLBACK;
    nc_dt_end(&c);
    return st;
}

int nc_red_pack(int count, ompi_datatype_t *dt, const void *sbuf,
                void *rbuf, char *tmp)
{
    const void *from = sbuf == MPI_IN_PLACE ? rbuf : sbuf;
    return nc_dt_copy(true, (void *)(uintptr_t)from, count, dt, tmp,
                      (size_t)count * nc_size_of(dt));
}

char *nc_red_stage(int count, ompi_datatype_t *dt, const void *sbuf,
                   void *rbuf, bool recv, const void **send, void **recv_out)
{
    const size_t bytes = (size_t)count * nc_size_of(dt);
    char *tmp = malloc(bytes * (recv ? 2 : 1) + 1);
    if (!tmp || nc_red_pack(count, dt, sbuf, rbuf, tmp) != NUMACOLL_OK) {
        free(tmp);
        return NULL;
    }
    *send = tmp;
    *recv_out = recv ? tmp + bytes : NULL;
    return tmp;
}

int nc_red_unstage(int count, ompi_datatype_t *dt, void *rbuf,
                   const char *tmp)
{
    const size_t bytes = (size_t)count * nc_size_of(dt);
    return nc_dt_copy(false, rbuf, count, dt, (char *)(uintptr_t)tmp + bytes,
                      bytes);
}

/* numacoll_user_op_fn over an MPI op: inout = in op inout, with `in` the
 * lower-ranked operand, exactly MPI_User_function(invec, inoutvec), which
 * is what MPI_Reduce_local(inbuf, inoutbuf) computes. The core never
 * passes more than one staging slot (at most 16 MiB) of elements, so the
 * count fits an int. */
void nc_user_op(void *ctx, const void *in, void *inout, size_t count)
{
    nc_user_ctx_t *c = ctx;
    (void)mca_coll_base_reduce_local(in, inout, (int)count, c->dtype, c->op,
                                     c->module);
}

void nc_red_bufs(nc_module_t *m, const nc_red_plan_t *p, const void *sbuf,
                 void *rbuf, int root, const void **send, void **recv)
{
    if (sbuf == MPI_IN_PLACE)
        *send = NUMACOLL_IN_PLACE;
    else
        *send = (const char *)sbuf + p->true_lb;
    if ((root >= 0 && ompi_comm_rank(m->comm) != root) || !rbuf)
        *recv = NULL;  /* not touched there; may be NULL in MPI as well
                        * (as where a Reduce_scatter block or Exscan's
                        * rank 0 receives nothing) */
    else
        *recv = (char *)rbuf + p->true_lb;
}

int nc_op_commutes(struct ompi_op_t *op)
{
    int commute = 0;
    if (MPI_Op_commutative(op, &commute) != MPI_SUCCESS)
        commute = 0;  /* rank order is right for every op */
    return commute;
}

/* Run a planned Reduce (root >= 0) or Allreduce (root < 0) in the core. */
static int nc_red_run(nc_module_t *m, const nc_red_plan_t *p, const void *sbuf,
                      void *rbuf, int count, ompi_datatype_t *dtype,
                      struct ompi_op_t *op, int root)
{
    const void *send;
    void *recv;
    if (p->kind == NC_RED_PREDEF && p->packed) {
        /* every rank takes the same path, whatever its buffers: only the
         * contribution's and the result's bytes differ */
        const bool here = root < 0 || ompi_comm_rank(m->comm) == root;
        char *tmp = nc_red_stage(count, dtype, sbuf, rbuf, here, &send,
                                 &recv);
        const size_t n = (size_t)count * p->mult;
        int st = !tmp       ? NUMACOLL_ERR_NOMEM
                 : root >= 0 ? numacoll_reduce(m->team, send, recv, n, p->dt,
                                               p->op, root)
                             : numacoll_allreduce(m->team, send, recv, n,
                                                  p->dt, p->op);
        if (st == NUMACOLL_OK && here)
            st = nc_red_unstage(count, dtype, rbuf, tmp);
        free(tmp);
        return st;
    }
    nc_red_bufs(m, p, sbuf, rbuf, root, &send, &recv);
    if (p->kind == NC_RED_PREDEF)
        return root >= 0
                   ? numacoll_reduce(m->team, send, recv,
                                     (size_t)count * p->mult, p->dt, p->op,
                                     root)
                   : numacoll_allreduce(m->team, send, recv,
                                        (size_t)count * p->mult, p->dt,
                                        p->op);
    nc_user_ctx_t c = {op, dtype, &m->super};
    int commute = nc_op_commutes(op);
    return root >= 0
               ? numacoll_reduce_user(m->team, send, recv, (size_t)count,
                                      p->elem_size, nc_user_op, &c, commute,
                                      root)
               : numacoll_allreduce_user(m->team, send, recv, (size_t)count,
                                         p->elem_size, nc_user_op, &c,
                                         commute);
}

void nc_red_log(ompi_communicator_t *comm, const char *what, int root,
                       int count, ompi_datatype_t *dtype,
                       const nc_red_plan_t *p, int st)
{
    if (!nc_call_verbose())
        return;
    opal_output_verbose(NC_CALL_VERBOSITY, NC_OUT,
                        "coll:numacoll:%s: %s (cid %u) root %d, %d x %s, "
                        "%s%s%s: %s", what, nc_comm_name(comm), nc_comm_cid(comm),
                        root, count,
                        dtype->name[0] ? dtype->name : "(unnamed datatype)",
                        p->kind == NC_RED_PREDEF ? numacoll_op_name(p->op)
                                                 : "user op",
                        p->kind == NC_RED_PREDEF ? " on " : "",
                        p->kind == NC_RED_PREDEF ? numacoll_dtype_name(p->dt)
                                                 : "",
                        numacoll_strerror(st));
}

bool nc_red_rule_declines(const nc_module_t *m, const nc_red_plan_t *p,
                          size_t count, ompi_datatype_t *dtype, int root)
{
    if (!m->decline_mask)
        return false;
    size_t es = p->elem_size;
    if (p->kind != NC_RED_USER)
        ompi_datatype_type_size(dtype, &es);
    return nc_rule_declines(m, root >= 0 ? NUMACOLL_COLL_REDUCE
                                         : NUMACOLL_COLL_ALLREDUCE,
                            count * es);
}

bool nc_red_takes(nc_module_t *m, const nc_red_plan_t *p, int count,
                  int root)
{
    /* Only calls the core would take create the team. */
    if (p->kind == NC_RED_FALLBACK || !nc_ready(m))
        return false;
    /* Same arguments and (checked at setup) same rules on every rank, so
     * every rank declines alike. */
    return p->kind != NC_RED_USER ||
           p->elem_size <= numacoll_team_max_elem(m->team, root < 0,
                                                  (size_t)count *
                                                      p->elem_size);
}

/* Reduce (root >= 0) or Allreduce (root -1) in the core. Returns the MPI
 * status, or NC_DECLINED when the call must go to the fallback. */
static int nc_red_call(nc_module_t *m, ompi_communicator_t *comm,
                       const void *sbuf, void *rbuf, int count,
                       ompi_datatype_t *dtype, struct ompi_op_t *op, int root)
{
    nc_red_plan_t p = nc_red_plan_kept(m, count, dtype, op);
    if (!nc_red_takes(m, &p, count, root))
        return nc_declined(m);
    if (nc_red_rule_declines(m, &p, count, dtype, root))
        return NC_RULE_DECLINED;
    if (nc_nb_inflight())
        return nc_nb_blocking(m, root >= 0 ? NC_REDUCE : NC_ALLREDUCE, sbuf,
                              rbuf, count, dtype, op, root);
    int st = nc_red_run(m, &p, sbuf, rbuf, count, dtype, op, root);
    if (nc_hands_back(st))
        return NC_DECLINED;  /* alike on every rank */
    nc_red_log(comm, root >= 0 ? "reduce" : "allreduce", root, count, dtype,
               &p, st);
    if (st == NUMACOLL_OK)
        nc_count(root >= 0 ? NC_CNT_REDUCE : NC_CNT_ALLREDUCE);
    return nc_finish(m, root >= 0 ? "MPI_Reduce" : "MPI_Allreduce", st);
}

int nc_reduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype,
              struct ompi_op_t *op, int root, ompi_communicator_t *comm,
              mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    /* Nothing to combine. Open MPI's binding lets a count-0 call through
     * on some ranks only (MPI_Reduce: where sendbuf is MPI_IN_PLACE), so
     * nothing collective may happen here: no setup, no fallback. */
    if (count == 0)
        return MPI_SUCCESS;
    int rc = nc_red_call(m, comm, sbuf, rbuf, count, dtype, op, root);
    if (rc == NC_RULE_DECLINED)
        nc_count(NC_CNT_REDUCE_DECLINED);
    else if (rc != NC_DECLINED)
        return rc;
    else
        nc_count(NC_CNT_REDUCE_FALLBACK);
    return m->prev_reduce(sbuf, rbuf, count, dtype, op, root, comm,
                          m->prev_reduce_module);
}

int nc_allreduce(const void *sbuf, void *rbuf, int count,
                 ompi_datatype_t *dtype, struct ompi_op_t *op,
                 ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    if (count == 0)     /* as in nc_reduce */
        return MPI_SUCCESS;
    int rc = nc_red_call(m, comm, sbuf, rbuf, count, dtype, op, -1);
    if (rc == NC_RULE_DECLINED)
        nc_count(NC_CNT_ALLREDUCE_DECLINED);
    else if (rc != NC_DECLINED)
        return rc;
    else
        nc_count(NC_CNT_ALLREDUCE_FALLBACK);
    return m->prev_allreduce(sbuf, rbuf, count, dtype, op, comm,
                             m->prev_allreduce_module);
}
