/*
 * Op kernels: out = left op right, elementwise, for every predefined op on
 * every type MPI defines it for (the table is in ops.c). Kernels read and
 * write through alignment-1 types, so any buffer alignment is fine (user
 * buffers, 8-byte aligned inline payloads); the common ones (SUM, MIN, MAX
 * on integers, float and double, ...) compile to SIMD loops (ops.c is built
 * with -O3: see the Makefile).
 */
#ifndef NUMACOLL_OPS_H
#define NUMACOLL_OPS_H

#include <stddef.h>

#include "numacoll.h"

/* k3: out = l op r, no overlap between any two; k2: lr = lr op r. */
typedef void (*nc__k3_fn)(void *restrict out, const void *restrict l,
                          const void *restrict r, size_t n);
typedef void (*nc__k2_fn)(void *restrict lr, const void *restrict r, size_t n);

typedef struct nc__op_impl {
    nc__k3_fn k3;
    nc__k2_fn k2;
} nc__op_impl_t;

/* Kernels of op on dtype, or NULL where MPI does not define the pair. */
const nc__op_impl_t *nc__op_impl(numacoll_op_t op, numacoll_dtype_t dtype);

/* Bytes of padding after the last field of an element of dtype (the
 * value/index pairs: MPI_LONG_INT's 4 in 16), 0 for the others and for
 * user ops (dtype < 0). A copy of n results takes n * elem minus these,
 * so it never writes past MPI's span of the buffer (kernels write the
 * fields alone). */
size_t nc__dtype_tail(int dtype);

/* out = l op r for n elements; out may be l itself (accumulate), must not
 * overlap r, and must not partly overlap l. */
static inline void nc__op_apply(const nc__op_impl_t *k, void *out,
                                const void *l, const void *r, size_t n)
{
    if (out == l)
        k->k2(out, r, n);
    else
        k->k3(out, l, r, n);
}

#endif
