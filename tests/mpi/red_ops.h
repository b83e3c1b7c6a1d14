/*
 * MPI's predefined reduction ops in one order, with their names, for the
 * reduction tests (reduce_ops.c, reduce_types.c): ops[o] is the handle of
 * op o once red_ops_init() has run.
 */
#ifndef RED_OPS_H
#define RED_OPS_H

#include <mpi.h>

/* The send buffer of the root's in-place Reduce: MPI_IN_PLACE, except
 * under MPICH 4.0.2 (Debian), whose MPI_Reduce and MPI_Ireduce with
 * MPI_IN_PLACE at a root other than 0 crash above 2048 bytes (a read at
 * MPI_IN_PLACE's address; 512 ints pass, 513 crash): there the root hands
 * its data (the same bytes as in recvbuf) from its send buffer, so the
 * call is still made and checked. */
#ifdef MPICH_VERSION
#define RED_IN_PLACE(root, bytes, mine)                                       \
    ((root) != 0 && (bytes) > 2048 ? (const void *)(mine) : MPI_IN_PLACE)
#else
#define RED_IN_PLACE(root, bytes, mine)                                       \
    ((void)(root), (void)(bytes), (void)(mine), MPI_IN_PLACE)
#endif

typedef enum { O_SUM, O_PROD, O_MIN, O_MAX, O_LAND, O_LOR, O_LXOR, O_BAND,
               O_BOR, O_BXOR, O_MINLOC, O_MAXLOC, O_N } opk_t;
static MPI_Op ops[O_N];
static const char *const op_names[O_N] = {
    "sum", "prod", "min", "max", "land", "lor", "lxor", "band", "bor", "bxor",
    "minloc", "maxloc"};

static inline void red_ops_init(void)
{
    const MPI_Op o[O_N] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND,
                           MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR,
                           MPI_MINLOC, MPI_MAXLOC};
    for (int i = 0; i < O_N; i++)
        ops[i] = o[i];
}

#endif
