/*
 * MPI's predefined datatypes and ops as the core's (mpi/nm_map.c), through
 * MPI's public handles only, and core statuses as MPI error classes: shared
 * by libnumacoll-mpi and the Open MPI component.
 */
#ifndef NM_MAP_H
#define NM_MAP_H

#include <mpi.h>

#include "numacoll.h"

/* The core's op of a predefined MPI op; -1 if none (MPI_REPLACE,
 * MPI_NO_OP, a user op). */
int nm_map_op(MPI_Op op);

/* 1 for MPI's own ops (those nm_map_op maps, MPI_REPLACE, MPI_NO_OP and
 * MPI_OP_NULL), 0 for a user op. */
int nm_op_is_predefined(MPI_Op op);

/* The core's element type of a predefined MPI datatype for op; -1 if none
 * (derived types, logicals with an arithmetic op, types this MPI build does
 * not define: size 0). size_of(d) gives a type's size in bytes (0 where
 * unknown); it is asked only about d, for the types whose size is the
 * build's (Fortran's, MPI_AINT, ...). */
int nm_map_dtype(MPI_Datatype d, MPI_Op op, size_t (*size_of)(MPI_Datatype));

/* The MPI error class of a core status (MPI_SUCCESS for NUMACOLL_OK). A
 * switch over the enum without default, so that -Wswitch flags a status
 * added to the core and not mapped here. */
int nm_error_class(int st);

#endif
