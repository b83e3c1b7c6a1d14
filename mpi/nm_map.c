/*
 * MPI's predefined datatypes and ops as the core's element types and ops,
 * through MPI's public interface only (handles compared, sizes asked
 * by the caller's size function: PMPI_Type_size, or Open MPI's own inside
 * its component, which must not call the MPI interface), so one mapping
 * serves every MPI: libnumacoll-mpi under MPICH and Open MPI, and the Open
 * MPI component.
 *
 * By kind and size: C, Fortran and C++ integers by width and signedness,
 * reals and complex numbers by width (Fortran's REAL*16 and COMPLEX*32 as
 * binary128), logicals for the logical ops only (the core's logical ops on
 * an unsigned integer of the size take nonzero as true and give 0 or 1,
 * which is what MPI libraries give: .TRUE. is 1 in the Fortran compilers
 * they support), the MINLOC/MAXLOC pairs. A type the MPI does not define
 * in this build (no Fortran) has no size and maps to nothing.
 */
#include "mpi/nm_map.h"

#include <limits.h>
#include <stdint.h>

/* The core's integer type of a width and signedness; -1 if none. */
static int int_of(size_t size, int is_signed)
{
    switch (size) {
    case 1: return is_signed ? NUMACOLL_DTYPE_INT8 : NUMACOLL_DTYPE_UINT8;
    case 2: return is_signed ? NUMACOLL_DTYPE_INT16 : NUMACOLL_DTYPE_UINT16;
    case 4: return is_signed ? NUMACOLL_DTYPE_INT32 : NUMACOLL_DTYPE_UINT32;
    case 8: return is_signed ? NUMACOLL_DTYPE_INT64 : NUMACOLL_DTYPE_UINT64;
    }
    return -1;
}

/* Reals and complex numbers by the size of a real part: binary128 for 16
 * bytes (Fortran's REAL*16 on x86-64 and AArch64; C's long double has
 * handles of its own). */
static int fp_of(size_t part, int cplx)
{
    switch (part) {
    case sizeof(float):
        return cplx ? NUMACOLL_DTYPE_COMPLEX_FLOAT : NUMACOLL_DTYPE_FLOAT;
    case sizeof(double):
        return cplx ? NUMACOLL_DTYPE_COMPLEX_DOUBLE : NUMACOLL_DTYPE_DOUBLE;
    case 16:
        return cplx ? NUMACOLL_DTYPE_COMPLEX_FLOAT128 : NUMACOLL_DTYPE_FLOAT128;
    }
    return -1;
}

/* A pair type whose size must be the core's pair's (Fortran's pairs take
 * the build's INTEGER, REAL and DOUBLE PRECISION). */
static int pair_of(size_t size, int core, size_t core_size)
{
    return size == core_size ? core : -1;
}

int nm_map_op(MPI_Op op)
{
    if (op == MPI_SUM) return NUMACOLL_OP_SUM;
    if (op == MPI_PROD) return NUMACOLL_OP_PROD;
    if (op == MPI_MIN) return NUMACOLL_OP_MIN;
    if (op == MPI_MAX) return NUMACOLL_OP_MAX;
    if (op == MPI_LAND) return NUMACOLL_OP_LAND;
    if (op == MPI_LOR) return NUMACOLL_OP_LOR;
    if (op == MPI_LXOR) return NUMACOLL_OP_LXOR;
    if (op == MPI_BAND) return NUMACOLL_OP_BAND;
    if (op == MPI_BOR) return NUMACOLL_OP_BOR;
    if (op == MPI_BXOR) return NUMACOLL_OP_BXOR;
    if (op == MPI_MINLOC) return NUMACOLL_OP_MINLOC;
    if (op == MPI_MAXLOC) return NUMACOLL_OP_MAXLOC;
    return -1;
}

int nm_op_is_predefined(MPI_Op op)
{
    return nm_map_op(op) >= 0 || op == MPI_REPLACE || op == MPI_NO_OP ||
           op == MPI_OP_NULL;
}

int nm_map_dtype(MPI_Datatype d, MPI_Op op, size_t (*size_of)(MPI_Datatype))
{
    /* the most common first */
    if (d == MPI_DOUBLE) return NUMACOLL_DTYPE_DOUBLE;
    if (d == MPI_INT) return int_of(sizeof(int), 1);
    if (d == MPI_FLOAT) return NUMACOLL_DTYPE_FLOAT;
    if (d == MPI_DOUBLE_PRECISION || d == MPI_REAL || d == MPI_REAL4 ||
        d == MPI_REAL8 || d == MPI_REAL16)
        return fp_of(size_of(d), 0);
    /* C's integers by their C size (MPI_LONG is 8 bytes on LP64), char by
     * the platform's signedness */
    /* a table on the stack: handles are not constant expressions in
     * every MPI */
    const struct { MPI_Datatype d; size_t size; int sgn; } cints[] = {
        {MPI_LONG, sizeof(long), 1},
        {MPI_UNSIGNED_LONG, sizeof(unsigned long), 0},
        {MPI_UNSIGNED, sizeof(unsigned), 0},
        {MPI_LONG_LONG_INT, sizeof(long long), 1},
        {MPI_UNSIGNED_LONG_LONG, sizeof(unsigned long long), 0},
        {MPI_SHORT, sizeof(short), 1},
        {MPI_UNSIGNED_SHORT, sizeof(unsigned short), 0},
        {MPI_CHAR, 1, CHAR_MIN < 0},
        {MPI_SIGNED_CHAR, 1, 1},
        {MPI_UNSIGNED_CHAR, 1, 0},
        {MPI_BYTE, 1, 0},
        {MPI_INT8_T, 1, 1},
        {MPI_UINT8_T, 1, 0},
        {MPI_INT16_T, 2, 1},
        {MPI_UINT16_T, 2, 0},
        {MPI_INT32_T, 4, 1},
        {MPI_UINT32_T, 4, 0},
        {MPI_INT64_T, 8, 1},
        {MPI_UINT64_T, 8, 0},
    };
    for (size_t i = 0; i < sizeof cints / sizeof cints[0]; i++)
        if (d == cints[i].d)
            return int_of(cints[i].size, cints[i].sgn);
    /* Fortran's integers, MPI's address-sized ones and wchar_t: signed, of
     * the handle's size */
    if (d == MPI_INTEGER || d == MPI_INTEGER1 || d == MPI_INTEGER2 ||
        d == MPI_INTEGER4 || d == MPI_INTEGER8 || d == MPI_AINT ||
        d == MPI_OFFSET || d == MPI_COUNT || d == MPI_WCHAR)
        return int_of(size_of(d), 1);
    if (d == MPI_LONG_DOUBLE) return NUMACOLL_DTYPE_LONG_DOUBLE;
    if (d == MPI_DOUBLE_COMPLEX || d == MPI_COMPLEX || d == MPI_COMPLEX8 ||
        d == MPI_COMPLEX16 || d == MPI_COMPLEX32)
        return fp_of(size_of(d) / 2, 1);
    if (d == MPI_C_DOUBLE_COMPLEX || d == MPI_CXX_DOUBLE_COMPLEX)
        return NUMACOLL_DTYPE_COMPLEX_DOUBLE;
    if (d == MPI_C_FLOAT_COMPLEX || d == MPI_C_COMPLEX ||
        d == MPI_CXX_FLOAT_COMPLEX)
        return NUMACOLL_DTYPE_COMPLEX_FLOAT;
    if (d == MPI_C_LONG_DOUBLE_COMPLEX || d == MPI_CXX_LONG_DOUBLE_COMPLEX)
        return NUMACOLL_DTYPE_COMPLEX_LONG_DOUBLE;
    if ((d == MPI_LOGICAL || d == MPI_C_BOOL || d == MPI_CXX_BOOL) &&
        (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR))
        return int_of(size_of(d), 0);
    if (d == MPI_FLOAT_INT) return NUMACOLL_DTYPE_FLOAT_INT;
    if (d == MPI_DOUBLE_INT) return NUMACOLL_DTYPE_DOUBLE_INT;
    if (d == MPI_LONG_INT) return NUMACOLL_DTYPE_LONG_INT;
    if (d == MPI_2INT) return NUMACOLL_DTYPE_2INT;
    if (d == MPI_SHORT_INT) return NUMACOLL_DTYPE_SHORT_INT;
    if (d == MPI_LONG_DOUBLE_INT) return NUMACOLL_DTYPE_LONG_DOUBLE_INT;
    if (d == MPI_2INTEGER)
        return pair_of(size_of(d), NUMACOLL_DTYPE_2INT, sizeof(numacoll_2int_t));
    if (d == MPI_2REAL)
        return pair_of(size_of(d), NUMACOLL_DTYPE_2FLOAT, sizeof(numacoll_2float_t));
    if (d == MPI_2DOUBLE_PRECISION)
        return pair_of(size_of(d), NUMACOLL_DTYPE_2DOUBLE, sizeof(numacoll_2double_t));
    return -1;
}

int nm_error_class(int st)
{
    switch ((numacoll_status_t)st) {
    case NUMACOLL_OK:              return MPI_SUCCESS;
    case NUMACOLL_ERR_ARG:         return MPI_ERR_ARG;
    case NUMACOLL_ERR_NOMEM:       return MPI_ERR_NO_MEM;
    case NUMACOLL_ERR_SYS:         return MPI_ERR_INTERN;
    case NUMACOLL_ERR_TOPO:        return MPI_ERR_INTERN;
    case NUMACOLL_ERR_BOOTSTRAP:   return MPI_ERR_INTERN;
    case NUMACOLL_ERR_TIMEOUT:     return MPI_ERR_OTHER;
#ifdef MPI_ERR_PROC_FAILED
    case NUMACOLL_ERR_PEER_DEAD:   return MPI_ERR_PROC_FAILED;
#elif defined(MPI_ERR_PROC_ABORTED)
    case NUMACOLL_ERR_PEER_DEAD:   return MPI_ERR_PROC_ABORTED;
#else
    case NUMACOLL_ERR_PEER_DEAD:   return MPI_ERR_OTHER;
#endif
    case NUMACOLL_ERR_ABORTED:     return MPI_ERR_OTHER;
    case NUMACOLL_ERR_CALLBACK:    return MPI_ERR_INTERN;
    case NUMACOLL_ERR_BUDGET:      return MPI_ERR_NO_MEM;
    case NUMACOLL_ERR_UNSUPPORTED: return MPI_ERR_UNSUPPORTED_OPERATION;
    case NUMACOLL_ERR_TRUNCATE:    return MPI_ERR_TRUNCATE;
    case NUMACOLL_ERR_MISMATCH:    return MPI_ERR_ARG;
    case NUMACOLL_ERR_NOSPACE:     return MPI_ERR_NO_MEM;
    }
    return MPI_ERR_UNKNOWN;
}
