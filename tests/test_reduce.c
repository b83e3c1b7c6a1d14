/*
 * Reductions and Barrier, three suites:
 *  ops     every predefined op on every type it applies to, kernel by
 *          kernel, against a sequential reference written independently
 *          (64-bit / long double arithmetic), at unaligned addresses and
 *          lengths around every vector width; names, sizes, validity.
 *  reduce  Reduce (every root) and Allreduce (every algorithm) through the
 *          forked runner at p in {1,2,3,4,7,8}: every op x type, sizes 0,
 *          1, 7, one fragment +- 1 and more fragments than the staging
 *          queue, in place or not, data that changes every call, results
 *          checked on the root (Reduce) or every rank (Allreduce), other
 *          ranks' receive buffers and every send buffer untouched; 8 MiB;
 *          determinism under random delays (double and complex double
 *          sums of random mantissas); a non-commutative user op
 *          (2x2 matrix product) in rank order; the fake 4-NUMA machine.
 *  barrier nobody leaves before the last enters (shared counter), 10 000
 *          back-to-back barriers at p = 8, the hier tree's shape.
 */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll/reduce/reduce.h"
#include "support/runner.h"
#include "coll/tree.h"
#include "nct.h"
#include "numacoll.h"

#define MiB ((size_t)1 << 20)
#define FAKE4 "synthetic:pack:2 numa:2 core:4 pu:1"

static const int team_sizes[] = {1, 2, 3, 4, 7, 8};
#define NSIZES ((int)(sizeof team_sizes / sizeof *team_sizes))

/* ---- values ------------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static uint64_t hval(uint64_t call, int rank, size_t i)
{
    return mix(mix(call * 1000003u + (uint64_t)rank) ^ (uint64_t)i);
}

static int is_int(numacoll_dtype_t d) { return d <= NUMACOLL_DTYPE_UINT64; }
static int is_flt(numacoll_dtype_t d)
{
    return (d >= NUMACOLL_DTYPE_FLOAT && d <= NUMACOLL_DTYPE_LONG_DOUBLE) ||
           d == NUMACOLL_DTYPE_FLOAT128;
}
static int is_cplx(numacoll_dtype_t d)
{
    return (d >= NUMACOLL_DTYPE_COMPLEX_FLOAT &&
            d <= NUMACOLL_DTYPE_COMPLEX_LONG_DOUBLE) ||
           d == NUMACOLL_DTYPE_COMPLEX_FLOAT128;
}
/* The real type of a complex one's parts. */
static numacoll_dtype_t part_of(numacoll_dtype_t d)
{
    switch (d) {
    case NUMACOLL_DTYPE_COMPLEX_FLOAT:  return NUMACOLL_DTYPE_FLOAT;
    case NUMACOLL_DTYPE_COMPLEX_DOUBLE: return NUMACOLL_DTYPE_DOUBLE;
    case NUMACOLL_DTYPE_COMPLEX_FLOAT128: return NUMACOLL_DTYPE_FLOAT128;
    default:                            return NUMACOLL_DTYPE_LONG_DOUBLE;
    }
}
/* binary128 where the core has its kernels (numacoll_op_valid); the
 * test's values are small integers and powers of two, exact both ways. */
#if defined(__SIZEOF_FLOAT128__) && !defined(__clang__)
typedef __float128 f128_t;
#else
typedef long double f128_t;
#endif

/* ---- the reference: element access through memcpy, 64-bit arithmetic ---- */

#define LD(T, p) ({ T v_; memcpy(&v_, p, sizeof v_); v_; })
#define ST(T, p, x) do { T v_ = (T)(x); memcpy(p, &v_, sizeof v_); } while (0)

/* An integer element as uint64_t, sign-extended for signed types. */
static uint64_t ld_int(numacoll_dtype_t d, const void *p)
{
    switch (d) {
    case NUMACOLL_DTYPE_INT8:   return (uint64_t)(int64_t)LD(int8_t, p);
    case NUMACOLL_DTYPE_UINT8:  return LD(uint8_t, p);
    case NUMACOLL_DTYPE_INT16:  return (uint64_t)(int64_t)LD(int16_t, p);
    case NUMACOLL_DTYPE_UINT16: return LD(uint16_t, p);
    case NUMACOLL_DTYPE_INT32:  return (uint64_t)(int64_t)LD(int32_t, p);
    case NUMACOLL_DTYPE_UINT32: return LD(uint32_t, p);
    case NUMACOLL_DTYPE_INT64:  return (uint64_t)LD(int64_t, p);
    default:                    return LD(uint64_t, p);
    }
}

/* Store the low bits (modulo 2^width, as GCC converts). */
static void st_int(numacoll_dtype_t d, void *p, uint64_t u)
{
    switch (d) {
    case NUMACOLL_DTYPE_INT8:   ST(int8_t, p, (int8_t)(uint8_t)u); break;
    case NUMACOLL_DTYPE_UINT8:  ST(uint8_t, p, u); break;
    case NUMACOLL_DTYPE_INT16:  ST(int16_t, p, (int16_t)(uint16_t)u); break;
    case NUMACOLL_DTYPE_UINT16: ST(uint16_t, p, u); break;
    case NUMACOLL_DTYPE_INT32:  ST(int32_t, p, (int32_t)(uint32_t)u); break;
    case NUMACOLL_DTYPE_UINT32: ST(uint32_t, p, u); break;
    case NUMACOLL_DTYPE_INT64:  ST(int64_t, p, (int64_t)u); break;
    default:                    ST(uint64_t, p, u); break;
    }
}

static int signed_int(numacoll_dtype_t d)
{
    return d == NUMACOLL_DTYPE_INT8 || d == NUMACOLL_DTYPE_INT16 ||
           d == NUMACOLL_DTYPE_INT32 || d == NUMACOLL_DTYPE_INT64;
}

static long double ld_flt(numacoll_dtype_t d, const void *p)
{
    switch (d) {
    case NUMACOLL_DTYPE_FLOAT:  return LD(float, p);
    case NUMACOLL_DTYPE_DOUBLE: return LD(double, p);
    case NUMACOLL_DTYPE_FLOAT128: return (long double)LD(f128_t, p);
    default:                    return LD(long double, p);
    }
}

static void st_flt(numacoll_dtype_t d, void *p, long double v)
{
    switch (d) {
    case NUMACOLL_DTYPE_FLOAT:  ST(float, p, v); break;
    case NUMACOLL_DTYPE_DOUBLE: ST(double, p, v); break;
    case NUMACOLL_DTYPE_FLOAT128: ST(f128_t, p, v); break;
    default:                    ST(long double, p, v); break;
    }
}

/* A pair element: value (exact in long double) and index (a small
 * integer, exact in the float index of 2float and 2double too). */
#define PAIR_CASE(D, S)                                                        \
    case NUMACOLL_DTYPE_##D: {                                                 \
        S s_;                                                                  \
        if (store) {                                                           \
            memset(&s_, 0, sizeof s_);                                         \
            s_.v = (__typeof__(s_.v))*v;                                       \
            s_.i = (__typeof__(s_.i))*i;                                       \
            memcpy(p, &s_, sizeof s_);                                         \
        } else {                                                               \
            memcpy(&s_, p, sizeof s_);                                         \
            *v = s_.v;                                                         \
            *i = (int)s_.i;                                                    \
        }                                                                      \
        break;                                                                 \
    }

static void pair_io(numacoll_dtype_t d, void *p, long double *v, int *i,
                    int store)
{
    switch (d) {
    PAIR_CASE(FLOAT_INT, numacoll_float_int_t)
    PAIR_CASE(DOUBLE_INT, numacoll_double_int_t)
    PAIR_CASE(LONG_INT, numacoll_long_int_t)
    PAIR_CASE(2INT, numacoll_2int_t)
    PAIR_CASE(SHORT_INT, numacoll_short_int_t)
    PAIR_CASE(LONG_DOUBLE_INT, numacoll_long_double_int_t)
    PAIR_CASE(2FLOAT, numacoll_2float_t)
    PAIR_CASE(2DOUBLE, numacoll_2double_t)
    default: break;
    }
}

/* acc = acc op x, one element, the slow obvious way. */
static void ref_apply(numacoll_dtype_t d, numacoll_op_t op, void *acc,
                      const void *x)
{
    if (is_int(d)) {
        uint64_t a = ld_int(d, acc), b = ld_int(d, x), r = 0;
        int lt = signed_int(d) ? (int64_t)a < (int64_t)b : a < b;
        switch (op) {
        case NUMACOLL_OP_SUM:  r = a + b; break;
        case NUMACOLL_OP_PROD: r = a * b; break;
        case NUMACOLL_OP_MIN:  r = lt ? a : b; break;
        case NUMACOLL_OP_MAX:  r = lt ? b : a; break;
        case NUMACOLL_OP_LAND: r = a && b; break;
        case NUMACOLL_OP_LOR:  r = a || b; break;
        case NUMACOLL_OP_LXOR: r = !a != !b; break;
        case NUMACOLL_OP_BAND: r = a & b; break;
        case NUMACOLL_OP_BOR:  r = a | b; break;
        case NUMACOLL_OP_BXOR: r = a ^ b; break;
        default: break;
        }
        st_int(d, acc, r);
    } else if (is_flt(d)) {
        long double a = ld_flt(d, acc), b = ld_flt(d, x), r = 0;
        switch (op) {
        case NUMACOLL_OP_SUM:  r = a + b; break;
        case NUMACOLL_OP_PROD: r = a * b; break;
        case NUMACOLL_OP_MIN:  r = a < b ? a : b; break;
        case NUMACOLL_OP_MAX:  r = a > b ? a : b; break;
        default: break;
        }
        st_flt(d, acc, r);
    } else if (is_cplx(d)) {
        /* (a + bi)(c + di) = (ac - bd) + (ad + bc)i, each part rounded
         * to the part type as C's operator rounds it (the test's values
         * keep every product exact, so the order of the terms is moot) */
        numacoll_dtype_t pt = part_of(d);
        size_t h = numacoll_dtype_size(pt);
        long double a = ld_flt(pt, acc), b = ld_flt(pt, (char *)acc + h),
                    c = ld_flt(pt, x), e = ld_flt(pt, (const char *)x + h);
        if (op == NUMACOLL_OP_SUM) {
            st_flt(pt, acc, a + c);
            st_flt(pt, (char *)acc + h, b + e);
        } else {
            st_flt(pt, acc, a * c - b * e);
            st_flt(pt, (char *)acc + h, a * e + b * c);
        }
    } else {
        long double a, b;
        int ia, ib;
        pair_io(d, acc, &a, &ia, 0);
        pair_io(d, (void *)x, &b, &ib, 0);
        int better = op == NUMACOLL_OP_MINLOC ? b < a : b > a;
        if (better || (a == b && ib < ia)) {
            a = b;
            ia = ib;
        }
        pair_io(d, acc, &a, &ia, 1);
    }
}

/* Element i of rank's contribution to call `call`: values for which every
 * fold order gives the same exact result (small integers for float sums,
 * powers of two for float products, few values for MINLOC ties), full-range
 * bits for integers (wrap-around included), 1/3 zeros for logical ops. */
static void gen(numacoll_dtype_t d, numacoll_op_t op, uint64_t call, int rank,
                size_t i, void *out)
{
    uint64_t h = hval(call, rank, i);
    if (is_int(d)) {
        uint64_t v = h;
        if (op == NUMACOLL_OP_LAND || op == NUMACOLL_OP_LOR ||
            op == NUMACOLL_OP_LXOR)
            v = h % 3 == 0 ? 0 : (h >> 7) | 1;
        st_int(d, out, v);
    } else if (is_flt(d)) {
        static const long double pw[] = {-2, -1, -0.5, 0.5, 1, 2};
        long double v;
        if (op == NUMACOLL_OP_SUM)
            v = (long double)((int64_t)(h % 2001) - 1000);
        else if (op == NUMACOLL_OP_PROD)
            v = pw[h % 6];
        else
            v = (long double)((int64_t)(h % 20001) - 10000) / 8;
        memset(out, 0, numacoll_dtype_size(d));
        st_flt(d, out, v);
    } else if (is_cplx(d)) {
        /* SUM: small integers in both parts; PROD: units and 1 + i, whose
         * products stay small Gaussian integers, exact in any order */
        static const int re[] = {1, 0, -1, 0, 1, 1}, im[] = {0, 1, 0, -1, 1, -1};
        numacoll_dtype_t pt = part_of(d);
        size_t hs = numacoll_dtype_size(pt);
        memset(out, 0, numacoll_dtype_size(d));
        if (op == NUMACOLL_OP_SUM) {
            st_flt(pt, out, (long double)((int64_t)(h % 2001) - 1000));
            st_flt(pt, (char *)out + hs,
                   (long double)((int64_t)((h >> 16) % 2001) - 1000));
        } else {
            st_flt(pt, out, re[h % 6]);
            st_flt(pt, (char *)out + hs, im[h % 6]);
        }
    } else {
        long double v = (long double)(h % 4);
        int idx = (int)((h >> 20) % 64) - 32;
        pair_io(d, out, &v, &idx, 1);
    }
}

static int eq_elem(numacoll_dtype_t d, const void *a, const void *b)
{
    if (is_int(d))
        return ld_int(d, a) == ld_int(d, b);
    if (is_flt(d))
        return ld_flt(d, a) == ld_flt(d, b);
    if (is_cplx(d)) {
        numacoll_dtype_t pt = part_of(d);
        size_t h = numacoll_dtype_size(pt);
        return eq_elem(pt, a, b) &&
               eq_elem(pt, (const char *)a + h, (const char *)b + h);
    }
    long double x, y;
    int i, j;
    pair_io(d, (void *)a, &x, &i, 0);
    pair_io(d, (void *)b, &y, &j, 0);
    return x == y && i == j;
}

static void describe(numacoll_dtype_t d, const void *a, char *buf, size_t len)
{
    if (is_int(d))
        snprintf(buf, len, "%llu", (unsigned long long)ld_int(d, a));
    else if (is_flt(d))
        snprintf(buf, len, "%Lg", ld_flt(d, a));
    else if (is_cplx(d)) {
        numacoll_dtype_t pt = part_of(d);
        snprintf(buf, len, "(%Lg, %Lg)", ld_flt(pt, a),
                 ld_flt(pt, (const char *)a + numacoll_dtype_size(pt)));
    } else {
        long double v;
        int i;
        pair_io(d, (void *)a, &v, &i, 0);
        snprintf(buf, len, "(%Lg, %d)", v, i);
    }
}

/* ---- suite ops: the kernels on their own ---------------------------------- */

static void test_validity(void)
{
    int n = 0;
    for (int o = 0; o < NUMACOLL_OP_COUNT; o++)
        for (int d = 0; d < NUMACOLL_DTYPE_COUNT; d++) {
            int want;
            if (is_int(d))
                want = o <= NUMACOLL_OP_BXOR;
            else if (is_flt(d))
                want = o <= NUMACOLL_OP_MAX;
            else if (is_cplx(d))
                want = o == NUMACOLL_OP_SUM || o == NUMACOLL_OP_PROD;
            else
                want = o == NUMACOLL_OP_MINLOC || o == NUMACOLL_OP_MAXLOC;
            CU_ASSERT_EQUAL(numacoll_op_valid(o, d), want);
            n += want;
        }
    const int f128 = numacoll_op_valid(NUMACOLL_OP_SUM,
                                       NUMACOLL_DTYPE_FLOAT128);
    CU_ASSERT_EQUAL(n, 8 * 10 + 3 * 4 + 3 * 2 + 8 * 2 + f128 * (4 + 2));
#if defined(__SIZEOF_FLOAT128__) && !defined(__clang__)
    CU_ASSERT_EQUAL(f128, 1);   /* GCC on x86-64 has binary128 */
#endif
    CU_ASSERT_EQUAL(numacoll_dtype_size(NUMACOLL_DTYPE_COMPLEX_DOUBLE), 16);
    CU_ASSERT_EQUAL(numacoll_dtype_size(NUMACOLL_DTYPE_2FLOAT), 8);
    CU_ASSERT_STRING_EQUAL(numacoll_dtype_name(NUMACOLL_DTYPE_COMPLEX_FLOAT),
                           "complex_float");
    CU_ASSERT_EQUAL(numacoll_op_valid(NUMACOLL_OP_COUNT, 0), 0);
    CU_ASSERT_EQUAL(numacoll_op_valid(0, NUMACOLL_DTYPE_COUNT), 0);
    CU_ASSERT_EQUAL(numacoll_op_valid(-1, 0), 0);
    CU_ASSERT_STRING_EQUAL(numacoll_op_name(NUMACOLL_OP_MAXLOC), "maxloc");
    CU_ASSERT_STRING_EQUAL(numacoll_dtype_name(NUMACOLL_DTYPE_2INT), "2int");
    CU_ASSERT_PTR_NULL(numacoll_dtype_name(NUMACOLL_DTYPE_COUNT));
    CU_ASSERT_EQUAL(numacoll_dtype_size(NUMACOLL_DTYPE_LONG_DOUBLE),
                    sizeof(long double));
    CU_ASSERT_EQUAL(numacoll_dtype_size(NUMACOLL_DTYPE_SHORT_INT), 8);
    CU_ASSERT_EQUAL(numacoll_dtype_size(NUMACOLL_DTYPE_DOUBLE_INT), 16);
    CU_ASSERT_EQUAL(numacoll_dtype_size(NUMACOLL_DTYPE_COUNT), 0);
}

/* k3 and k2 of every valid pair, lengths around vector widths, operands and
 * result at odd addresses, nothing written past the end. */
static void test_kernels(void)
{
    static const size_t lens[] = {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33,
                                  64, 100};
    enum { MAXN = 100, GUARD = 40 };
    unsigned char *mem = malloc(4 * (MAXN * 32 + GUARD + 32));
    CU_ASSERT_PTR_NOT_NULL_FATAL(mem);
    uint64_t call = 0;
    for (int o = 0; o < NUMACOLL_OP_COUNT; o++)
        for (int d = 0; d < NUMACOLL_DTYPE_COUNT; d++) {
            const nc__op_impl_t *k = nc__op_impl(o, d);
            if (!k)
                continue;
            size_t e = numacoll_dtype_size(d), stride = MAXN * 32 + GUARD + 32;
            for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
                size_t n = lens[li], shift = (li % 4) * 3 + 1; /* odd */
                unsigned char *l = mem + shift, *r = mem + stride + shift + 2,
                              *out = mem + 2 * stride + shift + 4,
                              *ref = mem + 3 * stride;
                call++;
                memset(out, 0xA5, n * e + GUARD);
                for (size_t i = 0; i < n; i++) {
                    gen(d, o, call, 0, i, l + i * e);
                    gen(d, o, call, 1, i, r + i * e);
                    memcpy(ref + i * e, l + i * e, e);
                    ref_apply(d, o, ref + i * e, r + i * e);
                }
                nc__op_apply(k, out, l, r, n);
                int bad = 0;
                for (size_t i = 0; i < n; i++)
                    bad += !eq_elem(d, out + i * e, ref + i * e);
                for (size_t i = n * e; i < n * e + GUARD; i++)
                    bad += out[i] != 0xA5;
                nc__op_apply(k, l, l, r, n);   /* k2: in place */
                for (size_t i = 0; i < n; i++)
                    bad += !eq_elem(d, l + i * e, ref + i * e);
                if (bad)
                    fprintf(stderr, "kernel %s on %s, %zu elements: %d wrong\n",
                            numacoll_op_name(o), numacoll_dtype_name(d), n, bad);
                CU_ASSERT_EQUAL(bad, 0);
            }
        }
    free(mem);
}

/* Integer wrap-around and the MINLOC/MAXLOC tie rule, spelled out. */
static void test_kernel_edges(void)
{
    int8_t a8[2] = {127, -128}, b8[2] = {1, -1}, o8[2];
    nc__op_apply(nc__op_impl(NUMACOLL_OP_SUM, NUMACOLL_DTYPE_INT8), o8, a8, b8,
                 2);
    CU_ASSERT(o8[0] == -128 && o8[1] == 127);
    uint16_t a16 = 65535, b16 = 65535, o16;
    nc__op_apply(nc__op_impl(NUMACOLL_OP_PROD, NUMACOLL_DTYPE_UINT16), &o16,
                 &a16, &b16, 1);
    CU_ASSERT_EQUAL(o16, 1);
    int64_t a64 = INT64_MAX, b64 = 2, o64;
    nc__op_apply(nc__op_impl(NUMACOLL_OP_PROD, NUMACOLL_DTYPE_INT64), &o64,
                 &a64, &b64, 1);
    CU_ASSERT_EQUAL(o64, -2);
    numacoll_double_int_t x[3] = {{1.0, 5}, {2.0, 1}, {3.0, 9}},
                          y[3] = {{1.0, 3}, {1.0, 7}, {3.0, 9}}, z[3];
    nc__op_apply(nc__op_impl(NUMACOLL_OP_MINLOC, NUMACOLL_DTYPE_DOUBLE_INT), z,
                 x, y, 3);
    CU_ASSERT(z[0].v == 1.0 && z[0].i == 3);   /* tie: lower index */
    CU_ASSERT(z[1].v == 1.0 && z[1].i == 7);
    CU_ASSERT(z[2].v == 3.0 && z[2].i == 9);
    nc__op_apply(nc__op_impl(NUMACOLL_OP_MAXLOC, NUMACOLL_DTYPE_DOUBLE_INT), z,
                 x, y, 3);
    CU_ASSERT(z[0].v == 1.0 && z[0].i == 3);
    CU_ASSERT(z[1].v == 2.0 && z[1].i == 1);
    int32_t l[3] = {0, 5, 0}, r[3] = {7, 0, 0}, o[3];
    nc__op_apply(nc__op_impl(NUMACOLL_OP_LXOR, NUMACOLL_DTYPE_INT32), o, l, r,
                 3);
    CU_ASSERT(o[0] == 1 && o[1] == 1 && o[2] == 0);
}

/* ---- multi-process cases ------------------------------------------------------ */

typedef struct rcase {
    numacoll_config_t cfg;
    int spread_pus;       /* inject PU (r % 4) * 4 + r / 4: 4 fake nodes */
    int few_ops;          /* 1: a short list of (op, type) instead of all */
} rcase_t;

static int create_team(const numacoll_bootstrap_t *b, const rcase_t *rc,
                       numacoll_team_t **team)
{
    numacoll_config_t cfg = rc->cfg;
    if (rc->spread_pus)
        cfg.pu = (b->rank % 4) * 4 + b->rank / 4;
    int st = numacoll_team_create(b, &cfg, team);
    if (st != NUMACOLL_OK)
        fprintf(stderr, "rank %d: team_create: %s\n", b->rank,
                numacoll_strerror(st));
    return st;
}

static int in_short_list(int o, int d)
{
    static const int pairs[][2] = {
        {NUMACOLL_OP_SUM, NUMACOLL_DTYPE_DOUBLE},
        {NUMACOLL_OP_SUM, NUMACOLL_DTYPE_INT32},
        {NUMACOLL_OP_PROD, NUMACOLL_DTYPE_FLOAT},
        {NUMACOLL_OP_MIN, NUMACOLL_DTYPE_INT16},
        {NUMACOLL_OP_LXOR, NUMACOLL_DTYPE_UINT8},
        {NUMACOLL_OP_BXOR, NUMACOLL_DTYPE_UINT64},
        {NUMACOLL_OP_MAX, NUMACOLL_DTYPE_LONG_DOUBLE},
        {NUMACOLL_OP_MAXLOC, NUMACOLL_DTYPE_DOUBLE_INT},
        {NUMACOLL_OP_MINLOC, NUMACOLL_DTYPE_LONG_DOUBLE_INT},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++)
        if (pairs[i][0] == o && pairs[i][1] == d)
            return 1;
    return 0;
}

/* What one call is: Reduce to root (alg < 0), or Allreduce with alg. */
typedef struct spec {
    int root;
    int alg;
} spec_t;

typedef struct bufs {
    unsigned char *send, *recv, *ref, *tmp;
} bufs_t;

enum { GUARD = 64 };

/* One Reduce or Allreduce of count elements of (d, o); every buffer rule
 * checked. Returns the number of problems. */
static int one_call(numacoll_team_t *team, const numacoll_bootstrap_t *b,
                    numacoll_dtype_t d, numacoll_op_t o, size_t count,
                    spec_t sp, uint64_t call, bufs_t *bf)
{
    const size_t e = numacoll_dtype_size(d), nb = count * e;
    const int p = b->size, me = b->rank, reduce = sp.alg < 0;
    const int writes = !reduce || me == sp.root;
    const int mode = (int)(call % 3);   /* 0 separate, 1 send == recv, 2 IN_PLACE */
    const int in_place = writes && mode != 0;
    for (size_t i = 0; i < count; i++)
        gen(d, o, call, me, i, bf->send + i * e);
    memset(bf->recv, 0xEE, nb + GUARD);
    if (in_place)
        memcpy(bf->recv, bf->send, nb);
    const void *sb = in_place ? (mode == 1 ? bf->recv : NUMACOLL_IN_PLACE)
                              : bf->send;
    void *rb = !writes && mode == 1 ? NULL : bf->recv;
    int rc;
    if (reduce) {
        rc = numacoll_reduce(team, sb, rb, count, d, o, sp.root);
    } else {
        nc__red_op_t op;
        rc = nc__red_op_predef(team, &op, d, o);
        if (rc == NUMACOLL_OK)
            rc = nc__allreduce_with(team, sp.alg, sb, rb, count, &op);
    }
    const char *what = reduce ? "reduce" : nc__algs[sp.alg].name;
    if (rc != NUMACOLL_OK) {
        fprintf(stderr, "rank %d: %s %s/%s count %zu root %d: %s: %s\n", me,
                what, numacoll_op_name(o), numacoll_dtype_name(d), count,
                sp.root, numacoll_strerror(rc), numacoll_team_last_error(team));
        return 1;
    }
    int bad = 0;
    if (writes) {
        for (size_t i = 0; i < count && bad < 3; i++) {
            unsigned char *ref = bf->ref + i * e;
            gen(d, o, call, 0, i, ref);
            for (int r = 1; r < p; r++) {
                gen(d, o, call, r, i, bf->tmp);
                ref_apply(d, o, ref, bf->tmp);
            }
            if (!eq_elem(d, bf->recv + i * e, ref)) {
                char got[64], want[64];
                describe(d, bf->recv + i * e, got, sizeof got);
                describe(d, ref, want, sizeof want);
                fprintf(stderr, "rank %d: %s %s/%s p %d count %zu root %d "
                        "mode %d: element %zu is %s, want %s\n", me, what,
                        numacoll_op_name(o), numacoll_dtype_name(d), p, count,
                        sp.root, mode, i, got, want);
                bad++;
            }
        }
        for (size_t i = nb; i < nb + GUARD; i++)
            if (bf->recv[i] != 0xEE) {
                fprintf(stderr, "rank %d: %s wrote past the end\n", me, what);
                bad++;
                break;
            }
    } else {
        for (size_t i = 0; i < nb + GUARD; i++)
            if (bf->recv[i] != 0xEE) {
                fprintf(stderr, "rank %d: reduce to root %d wrote non-root's "
                        "receive buffer at byte %zu\n", me, sp.root, i);
                bad++;
                break;
            }
    }
    if (!in_place)
        for (size_t i = 0; i < count; i++) {
            gen(d, o, call, me, i, bf->tmp);
            if (!eq_elem(d, bf->send + i * e, bf->tmp)) {
                fprintf(stderr, "rank %d: %s changed the send buffer\n", me,
                        what);
                bad++;
                break;
            }
        }
    return bad;
}

static int alloc_bufs(bufs_t *bf, size_t bytes)
{
    bf->send = malloc(bytes + GUARD);
    bf->recv = malloc(bytes + GUARD);
    bf->ref = malloc(bytes + GUARD);
    bf->tmp = malloc(64);
    return bf->send && bf->recv && bf->ref && bf->tmp ? 0 : -1;
}

static void free_bufs(bufs_t *bf)
{
    free(bf->send);
    free(bf->recv);
    free(bf->ref);
    free(bf->tmp);
}

/* The matrix: every (op, type), sizes around the fragment and the queue,
 * every root, every Allreduce algorithm that applies. */
static int matrix_body(const numacoll_bootstrap_t *b, void *arg)
{
    const rcase_t *rcs = arg;
    numacoll_team_t *team;
    if (create_team(b, rcs, &team) != NUMACOLL_OK)
        return 10;
    const size_t rf = rcs->cfg.reduce_frag_size, rs = rcs->cfg.reduce_depth;
    bufs_t bf;
    if (alloc_bufs(&bf, (2 * rs * rf + 3 * 32 + 7 * 32)) != 0)
        return 11;
    int bad = 0, nspec = 0;
    spec_t specs[16];
    for (int r = 0; r < b->size; r++)
        specs[nspec++] = (spec_t){r, -1};
    specs[nspec++] = (spec_t){-1, NC_ALG_ALLREDUCE_INLINE};
    specs[nspec++] = (spec_t){-1, NC_ALG_ALLREDUCE_REDUCE_BCAST};
    specs[nspec++] = (spec_t){-1, NC_ALG_ALLREDUCE_RSAG};
    specs[nspec++] = (spec_t){-1, NC_ALG_ALLREDUCE_ALLFOLD};
    uint64_t call = 0, calls[2] = {0, 0};
    for (int o = 0; o < NUMACOLL_OP_COUNT && !bad; o++)
        for (int d = 0; d < NUMACOLL_DTYPE_COUNT && !bad; d++) {
            if (!numacoll_op_valid(o, d) || (rcs->few_ops && !in_short_list(o, d)))
                continue;
            size_t e = numacoll_dtype_size(d), fe = rf / e;
            size_t counts[] = {0, 1, 7, fe - 1, fe, fe + 1, 2 * rs * fe + 3};
            for (size_t c = 0; c < sizeof counts / sizeof *counts && !bad; c++)
                for (int s = 0; s < nspec && !bad; s++) {
                    if (specs[s].alg == NC_ALG_ALLREDUCE_INLINE &&
                        !nc__ar_inline_fits(team, counts[c], e))
                        continue;
                    bad += one_call(team, b, d, o, counts[c], specs[s], call++,
                                    &bf);
                    calls[specs[s].alg >= 0]++;
                }
        }
    numacoll_counters_t ct;
    numacoll_team_counters(team, &ct);
    if (!bad && (ct.reduce != calls[0] || ct.allreduce != calls[1])) {
        fprintf(stderr, "rank %d: counters %llu/%llu, want %llu/%llu\n",
                b->rank, (unsigned long long)ct.reduce,
                (unsigned long long)ct.allreduce,
                (unsigned long long)calls[0], (unsigned long long)calls[1]);
        bad++;
    }
    free_bufs(&bf);
    numacoll_team_destroy(team);
    return bad ? 1 : 0;
}

/* Small staging queue so every boundary is crossed often. */
static void small_cfg(numacoll_config_t *c)
{
    numacoll_config_init(c);
    c->frag_size = 1024;
    c->queue_depth = 8;
    c->reduce_frag_size = 256;
    c->reduce_depth = 4;
}

static void test_matrix(void)
{
    for (int i = 0; i < NSIZES; i++) {
        rcase_t rc = {0};
        small_cfg(&rc.cfg);
        rc.cfg.reduce_radix = team_sizes[i] == 7 ? 3 : 2;
        int st = nct_run(team_sizes[i], matrix_body, &rc);
        if (st)
            fprintf(stderr, "reduce matrix failed at p = %d\n", team_sizes[i]);
        CU_ASSERT_EQUAL(st, 0);
    }
}

/* The same for a short list of pairs with one slot (no pipelining depth)
 * and with slots of odd sizes. */
static void test_queue_shapes(void)
{
    static const struct { size_t rf; unsigned rs; } shapes[] = {
        {64, 1}, {200, 2}, {4160, 3}};
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++)
        for (int p = 3; p <= 8; p += 5) {
            rcase_t rc = {.few_ops = 1};
            small_cfg(&rc.cfg);
            rc.cfg.reduce_frag_size = shapes[k].rf;
            rc.cfg.reduce_depth = shapes[k].rs;
            CU_ASSERT_EQUAL(nct_run(p, matrix_body, &rc), 0);
        }
}

static void test_fake_4numa(void)
{
    for (int p = 7; p <= 8; p++)
        for (int radix = 2; radix <= 3; radix++) {
            rcase_t rc = {.spread_pus = 1, .few_ops = 1};
            small_cfg(&rc.cfg);
            rc.cfg.topology = FAKE4;
            rc.cfg.verbose = 0;
            rc.cfg.reduce_radix = (unsigned)radix;
            CU_ASSERT_EQUAL(nct_run(p, matrix_body, &rc), 0);
        }
}

/* ---- 8 MiB with the defaults ---------------------------------------------- */

static int big_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *team;
    if (numacoll_team_create(b, NULL, &team) != NUMACOLL_OK)
        return 10;
    size_t n = 8 * MiB / sizeof(double);
    double *s = malloc(n * sizeof *s), *r = malloc(n * sizeof *r);
    if (!s || !r)
        return 11;
    int bad = 0;
    for (int k = 0; k < 4 && !bad; k++) {
        for (size_t i = 0; i < n; i++)
            s[i] = (double)((hval((uint64_t)k, b->rank, i) % 2001)) - 1000;
        memset(r, 0, n * sizeof *r);
        int rc, root = k == 3 ? b->size - 1 : -1;
        if (k == 3) {
            rc = numacoll_reduce(team, s, r, n, NUMACOLL_DTYPE_DOUBLE,
                                 NUMACOLL_OP_SUM, root);
        } else {
            nc__red_op_t op;
            nc__red_op_predef(team, &op, NUMACOLL_DTYPE_DOUBLE, NUMACOLL_OP_SUM);
            int alg = k == 0 ? NC_ALG_ALLREDUCE_REDUCE_BCAST
                    : k == 1 ? NC_ALG_ALLREDUCE_RSAG : -1;
            rc = nc__allreduce_with(team, alg, s, r, n, &op);
        }
        bad += rc != NUMACOLL_OK;
        if (root >= 0 && b->rank != root)
            continue;
        for (size_t i = 0; i < n && !bad; i++) {
            double want = 0;
            for (int q = 0; q < b->size; q++)
                want += (double)((hval((uint64_t)k, q, i) % 2001)) - 1000;
            if (r[i] != want) {
                fprintf(stderr, "rank %d: 8 MiB case %d: element %zu is %g, "
                        "want %g\n", b->rank, k, i, r[i], want);
                bad++;
            }
        }
    }
    free(s);
    free(r);
    numacoll_team_destroy(team);
    return bad ? 1 : 0;
}

static void test_8m(void)
{
    CU_ASSERT_EQUAL(nct_run(2, big_body, NULL), 0);
    CU_ASSERT_EQUAL(nct_run(3, big_body, NULL), 0);
}

/* ---- user ops --------------------------------------------------------------- */

typedef nct_mat_t mat_t;   /* [[a b] [c d]] */
#define mat_mul nct_mat_mul

static const int mat_magic = 0x4d4d;

/* inout = in * inout, in the left operand: exactly MPI's rule. */
static void mat_fn(void *ctx, const void *in, void *inout, size_t n)
{
    if (ctx != &mat_magic)
        abort();
    const mat_t *x = in;
    mat_t *y = inout;
    for (size_t i = 0; i < n; i++)
        y[i] = mat_mul(x[i], y[i]);
}

typedef struct vec3 { double x, y, z; } vec3_t;

static void vec3_fn(void *ctx, const void *in, void *inout, size_t n)
{
    (void)ctx;
    const vec3_t *a = in;
    vec3_t *b = inout;
    for (size_t i = 0; i < n; i++) {
        b[i].x += a[i].x;
        b[i].y += a[i].y;
        b[i].z += a[i].z;
    }
}

static mat_t mat_gen(uint64_t call, int rank, size_t i)
{
    uint64_t h = hval(call, rank, i), g = mix(h);
    return (mat_t){(uint32_t)h, (uint32_t)(h >> 32), (uint32_t)g,
                   (uint32_t)(g >> 32)};
}

static vec3_t vec3_gen(uint64_t call, int rank, size_t i)
{
    uint64_t h = hval(call, rank, i);
    return (vec3_t){(double)(h % 100), (double)((h >> 8) % 100),
                    (double)((h >> 16) % 100)};
}

static int user_body(const numacoll_bootstrap_t *b, void *arg)
{
    const rcase_t *rcs = arg;
    numacoll_team_t *team;
    if (create_team(b, rcs, &team) != NUMACOLL_OK)
        return 10;
    const int p = b->size, me = b->rank;
    const size_t rf = rcs->cfg.reduce_frag_size, rs = rcs->cfg.reduce_depth;
    size_t maxn = 2 * rs * (rf / sizeof(mat_t)) + 3;
    mat_t *ms = malloc(maxn * sizeof *ms), *mr = malloc(maxn * sizeof *mr);
    vec3_t *vs = malloc(maxn * sizeof *vs), *vr = malloc(maxn * sizeof *vr);
    if (!ms || !mr || !vs || !vr)
        return 11;
    int bad = 0;
    uint64_t call = 0;
    for (int commutative = 0; commutative <= 1; commutative++) {
        size_t e = commutative ? sizeof(vec3_t) : sizeof(mat_t), fe = rf / e;
        size_t counts[] = {0, 1, 3, fe - 1, fe, fe + 1, 2 * rs * fe + 3};
        for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
            for (int s = -4; s < p && !bad; s++, call++) {
                size_t n = counts[c];
                if (n > maxn)
                    continue;
                int alg = s == -4 ? NC_ALG_ALLREDUCE_ALLFOLD
                        : s == -3 ? NC_ALG_ALLREDUCE_INLINE
                        : s == -2 ? NC_ALG_ALLREDUCE_REDUCE_BCAST
                        : s == -1 ? NC_ALG_ALLREDUCE_RSAG : -1;
                if (alg == NC_ALG_ALLREDUCE_INLINE &&
                    !nc__ar_inline_fits(team, n, e))
                    continue;
                int root = s >= 0 ? s : -1;
                void *sb = commutative ? (void *)vs : (void *)ms;
                void *rb = commutative ? (void *)vr : (void *)mr;
                for (size_t i = 0; i < n; i++) {
                    if (commutative)
                        vs[i] = vec3_gen(call, me, i);
                    else
                        ms[i] = mat_gen(call, me, i);
                }
                memset(rb, 0, n * e);
                int in_place = (root < 0 || root == me) && call % 2;
                if (in_place)
                    memcpy(rb, sb, n * e);
                const void *src = in_place ? NUMACOLL_IN_PLACE : sb;
                numacoll_user_op_fn fn = commutative ? vec3_fn : mat_fn;
                void *ctx = commutative ? NULL : (void *)&mat_magic;
                int rc;
                if (root >= 0) {
                    rc = numacoll_reduce_user(team, src, rb, n, e, fn, ctx,
                                              commutative, root);
                } else {
                    nc__red_op_t op;
                    rc = nc__red_op_user(team, &op, e, fn, ctx, commutative);
                    if (rc == NUMACOLL_OK)
                        rc = nc__allreduce_with(team, alg, src, rb, n, &op);
                }
                if (rc != NUMACOLL_OK) {
                    fprintf(stderr, "rank %d: user op: %s\n", me,
                            numacoll_team_last_error(team));
                    bad++;
                    break;
                }
                if (root >= 0 && root != me)
                    continue;
                for (size_t i = 0; i < n && !bad; i++) {
                    if (commutative) {
                        vec3_t w = {0, 0, 0};
                        for (int r = 0; r < p; r++) {
                            vec3_t x = vec3_gen(call, r, i);
                            w.x += x.x, w.y += x.y, w.z += x.z;
                        }
                        bad += memcmp(&w, &vr[i], sizeof w) != 0;
                    } else {
                        mat_t w = mat_gen(call, 0, i);
                        for (int r = 1; r < p; r++)
                            w = mat_mul(w, mat_gen(call, r, i));
                        bad += memcmp(&w, &mr[i], sizeof w) != 0;
                    }
                    if (bad)
                        fprintf(stderr, "rank %d: user op (%s) p %d n %zu "
                                "root %d alg %d: element %zu not in rank "
                                "order\n", me, commutative ? "commutative"
                                                           : "matrix",
                                p, n, root, alg, i);
                }
            }
    }
    free(ms);
    free(mr);
    free(vs);
    free(vr);
    numacoll_team_destroy(team);
    return bad ? 1 : 0;
}

static void test_user_ops(void)
{
    for (int i = 0; i < NSIZES; i++) {
        rcase_t rc = {0};
        small_cfg(&rc.cfg);
        CU_ASSERT_EQUAL(nct_run(team_sizes[i], user_body, &rc), 0);
    }
    for (int p = 7; p <= 8; p++) {
        rcase_t rc = {.spread_pus = 1};
        small_cfg(&rc.cfg);
        rc.cfg.topology = FAKE4;
        rc.cfg.verbose = 0;
        CU_ASSERT_EQUAL(nct_run(p, user_body, &rc), 0);
    }
}

/* ---- inline Allreduce lines ------------------------------------------------- */

/* Elements of any size through a non-commutative byte op: inout[b] =
 * in[b] * 3 + inout[b] (mod 256), so the result shows the rank order. */
static void bytes_fn(void *ctx, const void *in, void *inout, size_t n)
{
    const size_t e = *(const size_t *)ctx;
    const unsigned char *a = in;
    unsigned char *b = inout;
    for (size_t i = 0; i < n * e; i++)
        b[i] = (unsigned char)(a[i] * 3u + b[i]);
}

static unsigned char byte_gen(size_t e, int rank, size_t i)
{
    return (unsigned char)mix(e * 1000003u + (uint64_t)rank * 7919u + i);
}

/* Every count of every element size up to one past what the team's
 * inline lines take: forced inline gives the rank-ordered result where
 * it fits and NUMACOLL_ERR_ARG past it (nothing written); the table's
 * choice (inline for small sizes) falls back to another algorithm past
 * it, with the same result. Elements of 57 and 64 bytes never fit a
 * line. The same counts through Reduce from a root moving with n (the
 * built-in table's inline Reduce up to 112 bytes, pipelined with its f,
 * s, k past the lines), checked at the root. */
static int ar_lines_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *team;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    if (numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK)
        return 10;
    static const size_t esz[] = {1, 3, 7, 8, 12, 16, 24, 29, 32, 40, 56, 57, 64};
    const size_t maxb = 64 * 64;
    unsigned char *sb = malloc(maxb), *rb = malloc(maxb + 1);
    int bad = 0;
    if (team->red->ar_al < 2)
        bad = 11;   /* the built-in table's inline rule spans lines */
    if (nc__team_choice(team, NC_COLL_REDUCE, 8)->alg != NC_ALG_REDUCE_INLINE)
        bad = 18;   /* nor is the small Reduce inline */
    for (size_t x = 0; x < sizeof esz / sizeof *esz && !bad; x++) {
        size_t e = esz[x];
        size_t fit = 0;
        while (nc__ar_inline_fits(team, fit + 1, e))
            fit++;
        if (!nc__ar_inline_fits(team, 0, e))
            bad = 17;   /* a call of no elements always meets inline */
        if ((e > NC_RED_INLINE) != (fit == 0))
            bad = 12;
        for (size_t n = 0; n <= fit + 1 && !bad; n++) {
            for (size_t i = 0; i < n * e; i++)
                sb[i] = byte_gen(e, b->rank, i);
            for (int forced = 0; forced <= 1 && !bad; forced++) {
                memset(rb, 0xee, n * e + 1);
                nc__red_op_t op;
                int rc = nc__red_op_user(team, &op, e, bytes_fn, &e, 0);
                if (rc == NUMACOLL_OK)
                    rc = nc__allreduce_with(team,
                                            forced ? NC_ALG_ALLREDUCE_INLINE
                                                   : -1,
                                            sb, rb, n, &op);
                if (forced && n > fit && n > 0) {
                    /* refused on every rank, nothing written */
                    if (rc != NUMACOLL_ERR_ARG || rb[0] != 0xee)
                        bad = 13;
                    continue;
                }
                if (rc != NUMACOLL_OK) {
                    fprintf(stderr, "rank %d: e %zu n %zu forced %d: %s\n",
                            b->rank, e, n, forced,
                            numacoll_team_last_error(team));
                    bad = 14;
                    break;
                }
                for (size_t i = 0; i < n * e && !bad; i++) {
                    unsigned char w = byte_gen(e, b->size - 1, i);
                    for (int r = b->size - 2; r >= 0; r--)
                        w = (unsigned char)(byte_gen(e, r, i) * 3u + w);
                    if (rb[i] != w) {
                        fprintf(stderr, "rank %d: e %zu n %zu forced %d: "
                                "byte %zu is %u, not %u\n", b->rank, e, n,
                                forced, i, rb[i], w);
                        bad = 15;
                    }
                }
                if (!bad && rb[n * e] != 0xee)
                    bad = 16;   /* written past the result */
            }
            /* Reduce: the root folds in rank order, inline or not */
            const int root = (int)(n % (size_t)b->size);
            memset(rb, 0xee, n * e + 1);
            int rc = numacoll_reduce_user(team, sb, rb, n, e, bytes_fn, &e, 0,
                                          root);
            if (rc != NUMACOLL_OK) {
                fprintf(stderr, "rank %d: reduce e %zu n %zu: %s\n", b->rank,
                        e, n, numacoll_team_last_error(team));
                bad = 19;
            }
            for (size_t i = 0; i < n * e && !bad && b->rank == root; i++) {
                unsigned char w = byte_gen(e, b->size - 1, i);
                for (int r = b->size - 2; r >= 0; r--)
                    w = (unsigned char)(byte_gen(e, r, i) * 3u + w);
                if (rb[i] != w) {
                    fprintf(stderr, "rank %d: reduce e %zu n %zu: byte %zu "
                            "is %u, not %u\n", b->rank, e, n, i, rb[i], w);
                    bad = 20;
                }
            }
            if (!bad && b->rank == root && rb[n * e] != 0xee)
                bad = 21;
        }
    }
    free(sb);
    free(rb);
    numacoll_team_destroy(team);
    return bad;
}

static void test_ar_lines(void)
{
    for (int p = 2; p <= 4; p++) {
        int st = nct_run(p, ar_lines_body, NULL);
        if (st)
            fprintf(stderr, "inline allreduce lines failed at p = %d\n", p);
        CU_ASSERT_EQUAL(st, 0);
    }
}

/* ---- determinism -------------------------------------------------------------- */

enum { DET_REPS = 100 };

typedef struct det_arg {
    rcase_t rc;
    size_t count;
    int alg;                 /* -1: numacoll_allreduce's choice */
    int order;               /* 1: the result must be x_0 + x_1 + ... +
                                x_(p-1) in rank order, bit for bit */
    int cplx;                /* complex doubles: count elements of two
                                doubles each, summed part by part */
    uint64_t *hashes;        /* [DET_REPS][p], shared */
} det_arg_t;

static uint64_t fnv(const void *p, size_t n)
{
    const unsigned char *c = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ULL;
    return h;
}

/* Doubles with random mantissas over 40 binades: sums round differently
 * in every order, so only a fixed order gives equal bits. */
static double det_value(int rank, size_t i)
{
    uint64_t h = hval(777, rank, i);
    double m = (double)(h >> 11) / 9007199254740992.0 - 0.5;
    int ex = (int)(mix(h) % 40) - 20;
    double v = m;
    for (; ex > 0; ex--)
        v *= 2;
    for (; ex < 0; ex++)
        v /= 2;
    return v;
}

static int det_body(const numacoll_bootstrap_t *b, void *arg)
{
    det_arg_t *da = arg;
    numacoll_team_t *team;
    if (create_team(b, &da->rc, &team) != NUMACOLL_OK)
        return 10;
    const size_t nd = da->count * (da->cplx ? 2 : 1);   /* doubles */
    double *s = malloc(nd * sizeof *s), *r = malloc(nd * sizeof *r);
    if (!s || !r)
        return 11;
    for (size_t i = 0; i < nd; i++)
        s[i] = det_value(b->rank, i);
    nc__red_op_t op;
    nc__red_op_predef(team, &op,
                      da->cplx ? NUMACOLL_DTYPE_COMPLEX_DOUBLE
                               : NUMACOLL_DTYPE_DOUBLE,
                      NUMACOLL_OP_SUM);
    int bad = 0;
    for (int rep = 0; rep < DET_REPS && !bad; rep++) {
        uint64_t h = mix((uint64_t)rep * 31 + (uint64_t)b->rank);
        if (h % 3 == 0) {   /* a random third of the ranks come late */
            struct timespec ts = {0, (long)(mix(h) % 300) * 1000};
            nanosleep(&ts, NULL);
        }
        memset(r, 0, nd * sizeof *r);
        int rc = nc__allreduce_with(team, da->alg, s, r, da->count, &op);
        bad += rc != NUMACOLL_OK;
        da->hashes[rep * b->size + b->rank] = fnv(r, nd * sizeof *r);
    }
    /* and the value is right, within rounding (a complex sum is the sums
     * of its parts) */
    for (size_t i = 0; i < nd && !bad; i++) {
        long double want = 0, mag = 0;
        for (int q = 0; q < b->size; q++) {
            want += det_value(q, i);
            mag += det_value(q, i) < 0 ? -det_value(q, i) : det_value(q, i);
        }
        long double err = r[i] - want;
        if (err < 0)
            err = -err;
        if (err > mag * 1e-14L) {
            fprintf(stderr, "rank %d: sum %zu off by %Lg\n", b->rank, i, err);
            bad++;
        }
        double ordered = det_value(0, i);
        for (int q = 1; q < b->size; q++)
            ordered += det_value(q, i);
        if (da->order && memcmp(&ordered, &r[i], sizeof ordered) != 0) {
            fprintf(stderr, "rank %d: sum %zu is not the rank-order fold\n",
                    b->rank, i);
            bad++;
        }
    }
    free(s);
    free(r);
    numacoll_team_destroy(team);
    return bad ? 1 : 0;
}

static void test_determinism(void)
{
    static const struct { size_t count; int alg, order; } cases[] = {
        {5, -1, 1},                               /* inline, one line  */
        {20, -1, 1},                              /* inline, 3 lines   */
        {300, -1, 0},                             /* reduce then bcast */
        {5000, -1, 0},                            /* rsag              */
        {5000, NC_ALG_ALLREDUCE_REDUCE_BCAST, 0},
        {301, NC_ALG_ALLREDUCE_RSAG, 0},
        {301, NC_ALG_ALLREDUCE_ALLFOLD, 1},
        {5000, NC_ALG_ALLREDUCE_ALLFOLD, 1},
    };
    const int ps[] = {2, 3, 8};
    for (int cplx = 0; cplx < 2; cplx++)
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
        for (int pi = 0; pi < 3; pi++) {
            int p = ps[pi];
            size_t len = DET_REPS * (size_t)p * sizeof(uint64_t);
            /* complex: half the elements, the same bytes */
            det_arg_t da = {.count = cases[k].count / (cplx ? 2 : 1),
                            .alg = cases[k].alg, .order = cases[k].order,
                            .cplx = cplx};
            small_cfg(&da.rc.cfg);
            da.rc.cfg.reduce_frag_size = 1024;
            /* inline to 256 bytes, reduce_bcast below 4 KiB, rsag from
             * there on */
            da.rc.cfg.tuning_text =
                "allreduce p=1-* size=0-256 alg=inline\n"
                "allreduce p=1-* size=257-4095 alg=reduce_bcast f=1K s=4 k=2\n"
                "allreduce p=1-* size=4K-* alg=rsag f=1K s=4\n";
            da.hashes = nc__run_shared_alloc(len);
            CU_ASSERT_PTR_NOT_NULL_FATAL(da.hashes);
            CU_ASSERT_EQUAL(nct_run(p, det_body, &da), 0);
            int diff = 0;
            for (int i = 0; i < DET_REPS * p; i++)
                diff += da.hashes[i] != da.hashes[0];
            if (diff)
                fprintf(stderr, "determinism: %d of %d results differ (count "
                        "%zu%s, alg %d, p %d)\n", diff, DET_REPS * p,
                        da.count, cplx ? " complex" : "", cases[k].alg, p);
            CU_ASSERT_EQUAL(diff, 0);
            nc__run_shared_free(da.hashes, len);
        }
}

/* ---- bad arguments ------------------------------------------------------------- */

static int bad_args_body(const numacoll_bootstrap_t *b, void *arg)
{
    (void)arg;
    numacoll_team_t *team;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.verbose = 0;
    if (numacoll_team_create(b, &cfg, &team) != NUMACOLL_OK)
        return 10;
    double s[4] = {1, 2, 3, 4}, r[4];
    int e = 0;
    const int ARG = NUMACOLL_ERR_ARG;
    e += numacoll_reduce(team, s, r, 4, NUMACOLL_DTYPE_DOUBLE, NUMACOLL_OP_BAND,
                         0) != ARG;
    e += strstr(numacoll_team_last_error(team), "band") == NULL;
    e += numacoll_allreduce(team, s, r, 4, NUMACOLL_DTYPE_INT32,
                            NUMACOLL_OP_MINLOC) != ARG;
    e += numacoll_allreduce(team, s, r, 4, NUMACOLL_DTYPE_COUNT,
                            NUMACOLL_OP_SUM) != ARG;
    e += numacoll_allreduce(team, s, r, 4, NUMACOLL_DTYPE_DOUBLE,
                            (numacoll_op_t)99) != ARG;
    e += numacoll_reduce(team, s, r, 4, NUMACOLL_DTYPE_DOUBLE, NUMACOLL_OP_SUM,
                         b->size) != ARG;
    e += numacoll_reduce(team, s, r, 4, NUMACOLL_DTYPE_DOUBLE, NUMACOLL_OP_SUM,
                         -1) != ARG;
    e += numacoll_allreduce(team, NULL, r, 4, NUMACOLL_DTYPE_DOUBLE,
                            NUMACOLL_OP_SUM) != ARG;
    e += numacoll_allreduce(team, s, NULL, 4, NUMACOLL_DTYPE_DOUBLE,
                            NUMACOLL_OP_SUM) != ARG;
    e += numacoll_allreduce(team, s, r, SIZE_MAX / 4, NUMACOLL_DTYPE_DOUBLE,
                            NUMACOLL_OP_SUM) != ARG;
    e += numacoll_allreduce_user(team, s, r, 4, 8, NULL, NULL, 1) != ARG;
    e += numacoll_allreduce_user(team, s, r, 4, 0, vec3_fn, NULL, 1) != ARG;
    /* larger than the staging slot of the built-in rule (f = 128K) */
    e += numacoll_reduce_user(team, s, r, 1, 131072 + 1, vec3_fn, NULL, 1,
                              0) != ARG;
    e += numacoll_allreduce(NULL, s, r, 4, NUMACOLL_DTYPE_DOUBLE,
                            NUMACOLL_OP_SUM) != ARG;
    /* Count 0 needs no buffers; the team is still in step afterwards. A
     * root's refusal above (nobody waits for a root) makes every rank
     * resynchronise, and a rank that waits in this exchange meanwhile may
     * lose it once (docs/usage.md). */
    int rc = numacoll_allreduce(team, NULL, NULL, 0, NUMACOLL_DTYPE_DOUBLE,
                                NUMACOLL_OP_SUM);
    e += rc != NUMACOLL_OK && rc != NUMACOLL_ERR_MISMATCH;
    /* In place is for the root only: the others refuse at once, the root,
     * which waits for them, learns it (coll/call.c). The others may go on
     * into the next call before it does, and then fail it once (it is
     * lost, docs/usage.md); the calls after it work. */
    e += numacoll_reduce(team, NUMACOLL_IN_PLACE, r, 4, NUMACOLL_DTYPE_DOUBLE,
                         NUMACOLL_OP_SUM, 0) !=
         (b->rank != 0 ? ARG : NUMACOLL_ERR_MISMATCH);
    rc = numacoll_allreduce(team, NULL, NULL, 0, NUMACOLL_DTYPE_DOUBLE,
                            NUMACOLL_OP_SUM);
    e += rc != NUMACOLL_OK && rc != NUMACOLL_ERR_MISMATCH;
    e += numacoll_reduce(team, NULL, NULL, 0, NUMACOLL_DTYPE_DOUBLE,
                         NUMACOLL_OP_SUM, 0) != NUMACOLL_OK;
    e += numacoll_allreduce(team, s, r, 4, NUMACOLL_DTYPE_DOUBLE,
                            NUMACOLL_OP_SUM) != NUMACOLL_OK;
    e += r[3] != 4.0 * b->size;
    numacoll_team_destroy(team);
    if (e)
        fprintf(stderr, "rank %d: %d bad-argument checks failed\n", b->rank, e);
    return e ? 1 : 0;
}

/* Pairs with padding after their fields (long, int: 12 bytes in 16):
 * Reduce, Allreduce, Scan, Exscan, Reduce_scatter_block and
 * Reduce_scatter, inline and staged, write the fields of the last element
 * only, so a buffer of MPI's span (the last element's padding cut off, as
 * Open MPI's scratch) is not overrun; nor do they read past such a send
 * buffer (each call's is allocated to that span: the sanitizer run sees
 * a read past it). */
enum { PAD_REDUCE, PAD_ALLREDUCE, PAD_SCAN, PAD_RSB, PAD_EXSCAN, PAD_RS,
       PAD_KINDS };

/* MPI's span of one pair: up to the end of its last field */
#define PAD_END (offsetof(numacoll_long_int_t, i) + sizeof(int))

static long pad_val(int r, size_t i)
{
    return (long)((size_t)r * 7 + i) % 5;
}

/* One call of kind on long_int pairs, MINLOC; Reduce_scatter's counts
 * per rank; in place where send == recv. */
static int pad_call(numacoll_team_t *team, int kind, const void *send,
                    void *recv, size_t n, const size_t *counts, int root)
{
    const numacoll_dtype_t dt = NUMACOLL_DTYPE_LONG_INT;
    const numacoll_op_t op = NUMACOLL_OP_MINLOC;
    return kind == PAD_REDUCE ? numacoll_reduce(team, send, recv, n, dt, op,
                                                root)
           : kind == PAD_ALLREDUCE
               ? numacoll_allreduce(team, send, recv, n, dt, op)
           : kind == PAD_SCAN   ? numacoll_scan(team, send, recv, n, dt, op)
           : kind == PAD_EXSCAN ? numacoll_exscan(team, send, recv, n, dt, op)
           : kind == PAD_RS
               ? numacoll_reduce_scatter(team, send, recv, counts, dt, op)
               : numacoll_reduce_scatter_block(team, send, recv, n, dt, op);
}

static int pad_out_of_place(numacoll_team_t *team, int p, int me)
{
    const size_t S = sizeof(numacoll_long_int_t), end = PAD_END;
    int bad = 0;
    /* inline sizes, then the staged and reduce-scatter ones (Reduce from
     * 113 bytes, Allreduce's allfold at p = 2 from 256 and rsag at p > 2
     * from 192, Scan staged at p > 2) */
    static const size_t counts[] = {1, 2, 3, 4, 13, 20, 300};
    numacoll_long_int_t *in = malloc(300 * 8 * S), *out = malloc(300 * S);
    if (!in || !out)
        bad = 14;
    for (int kind = 0; kind < PAD_KINDS && !bad; kind++)
        for (size_t c = 0; c < sizeof counts / sizeof *counts && !bad; c++) {
            const size_t n = counts[c];
            if (p > 8)
                break;
            memset(in, 0xcd, 300 * 8 * S);
            /* this rank's own filler: a padding byte copied from another
             * rank's result shows too */
            memset(out, 0xe0 + me, 300 * S);
            /* Reduce_scatter(_block): n elements per rank, p blocks */
            const int rs = kind == PAD_RSB || kind == PAD_RS;
            const size_t nin = rs ? n * (size_t)p : n;
            size_t counts[8];
            for (int j = 0; j < p; j++)
                counts[j] = n;
            for (size_t i = 0; i < nin; i++) {
                in[i].v = pad_val(me, i);
                in[i].i = me;
            }
            const int root = (int)(n % (size_t)p);
            /* the contribution in a buffer of its span exactly */
            const size_t span = (nin - 1) * S + end;
            void *x = malloc(span);
            if (!x) {
                bad = 14;
                break;
            }
            memcpy(x, in, span);
            int rc = pad_call(team, kind, x, out, n, counts, root);
            free(x);
            if (rc != NUMACOLL_OK)
                bad = 11;
            /* Exscan's rank 0 receives nothing: all its filler stays */
            if (kind == PAD_EXSCAN && me == 0)
                for (size_t i = 0; i < 300 * S && !bad; i++)
                    if (((const unsigned char *)out)[i] != 0xe0 + me)
                        bad = 15;
            if (bad || (kind == PAD_REDUCE && me != root) ||
                (kind == PAD_EXSCAN && me == 0))
                continue;
            const int upto = kind == PAD_SCAN ? me + 1
                             : kind == PAD_EXSCAN ? me : p;
            const size_t off = rs ? (size_t)me * n : 0;
            for (size_t i = 0; i < n && !bad; i++) {
                long best = 5;
                int at = 0;
                for (int r = 0; r < upto; r++)
                    if (pad_val(r, off + i) < best)
                        best = pad_val(r, off + i), at = r;
                if (out[i].v != best || out[i].i != at)
                    bad = 12;
            }
            for (size_t g = (n - 1) * S + end; g < n * S && !bad; g++)
                if (((const unsigned char *)out)[g] != 0xe0 + me)
                    bad = 13;   /* the last element's padding written */
            if (bad)
                fprintf(stderr, "rank %d: kind %d, %zu long_int pairs: %d\n",
                        me, kind, n, bad);
        }
    free(in);
    free(out);
    return bad;
}

static int pad_in_place(numacoll_team_t *team, int p, int me);

/* arg non-NULL: the in-place calls */
static int padding_body(const numacoll_bootstrap_t *b, void *arg)
{
    numacoll_team_t *team = nct_team(b, 0, 0, 20000);
    if (!team)
        return 10;
    int bad = arg ? pad_in_place(team, b->size, b->rank)
                  : pad_out_of_place(team, b->size, b->rank);
    numacoll_team_destroy(team);
    return bad;
}

static void test_padding(void)
{
    for (int p = 1; p <= 4; p++)   /* p = 1: the copy without the team */
        CU_ASSERT_EQUAL(nct_run(p, padding_body, NULL), 0);
    /* Allreduce's algorithms the built-in table does not take at these
     * sizes, at every size (reduce_bcast's Bcast carried the padding) */
    static const char *const other[] = {
        "allreduce p=1-* size=* alg=reduce_bcast f=1K s=4 k=2\n",
        "allreduce p=1-* size=* alg=allfold f=1K s=4\n",
        "allreduce p=1-* size=* alg=rsag f=1K s=4\n"};
    for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
        nct_team_rules = other[i];
        for (int p = 2; p <= 3; p++)
            CU_ASSERT_EQUAL(nct_run(p, padding_body, NULL), 0);
    }
    nct_team_rules = NULL;
}

/* The same in place, in a buffer of the contribution's span and 16 guard
 * bytes: the result's fields equal those of the same call not in place,
 * the bytes past the span stay (a staged Reduce_scatter whose block was
 * the whole vector wrote its last element's padding there); Exscan's rank
 * 0 keeps its contribution. Reduce_scatter gives the last rank every
 * element; Reduce is in place at its root, rank 0. */
static int pad_in_place(numacoll_team_t *team, int p, int me)
{
    const size_t S = sizeof(numacoll_long_int_t), end = PAD_END;
    static const size_t ns[] = {1, 3, 13, 20, 300};
    int bad = 0;
    for (int kind = 0; kind < PAD_KINDS && !bad; kind++)
        for (size_t c = 0; c < sizeof ns / sizeof *ns && !bad; c++) {
            const size_t n = ns[c];
            const int rs = kind == PAD_RSB || kind == PAD_RS;
            const size_t nin = rs ? n * (size_t)p : n,
                         span = (nin - 1) * S + end;
            size_t counts[8];
            for (int j = 0; j < p && j < 8; j++)
                counts[j] = j == p - 1 ? nin : 0;
            /* Reduce: in place at its root (0) only */
            const int inpl = kind != PAD_REDUCE || me == 0;
            const size_t nout = kind == PAD_RS                ? counts[me]
                                : kind == PAD_REDUCE && me != 0 ? 0
                                                                : n;
            numacoll_long_int_t *in = malloc(nin * S), *ref = malloc(nin * S);
            unsigned char *x = malloc(span + 16);
            if (!in || !ref || !x || p > 8) {
                bad = 14;
            } else {
                for (size_t i = 0; i < nin; i++) {
                    in[i].v = pad_val(me, i);
                    in[i].i = me;
                }
                /* guards that differ per rank: a copy of another rank's
                 * bytes past its span shows too */
                const unsigned char guard = (unsigned char)(0xa0 + me);
                memset(ref, 0xe0, nin * S);
                memcpy(x, in, span);
                memset(x + span, guard, 16);
                if (pad_call(team, kind, in, ref, n, counts, 0) !=
                        NUMACOLL_OK ||
                    pad_call(team, kind, x, inpl ? (void *)x : (void *)ref, n, counts, 0) !=
                        NUMACOLL_OK)
                    bad = 11;
                const numacoll_long_int_t *want =
                    kind == PAD_EXSCAN && me == 0 ? in : ref;
                for (size_t i = 0; i < nout && !bad; i++) {
                    numacoll_long_int_t got;
                    memcpy(&got.v, x + i * S + offsetof(numacoll_long_int_t, v),
                           sizeof got.v);
                    memcpy(&got.i, x + i * S + offsetof(numacoll_long_int_t, i),
                           sizeof got.i);
                    if (got.v != want[i].v || got.i != want[i].i)
                        bad = 12;
                }
                for (size_t g = 0; g < 16 && !bad; g++)
                    if (x[span + g] != guard)
                        bad = 13;   /* written past the span */
                if (bad)
                    fprintf(stderr, "rank %d: kind %d in place, %zu long_int "
                            "pairs: %d\n", me, kind, n, bad);
            }
            free(in);
            free(ref);
            free(x);
        }
    return bad;
}

static void test_padding_in_place(void)
{
    for (int p = 1; p <= 4; p++)
        CU_ASSERT_EQUAL(nct_run(p, padding_body, "in place"), 0);
}

static void test_bad_args(void)
{
    CU_ASSERT_EQUAL(nct_run(3, bad_args_body, NULL), 0);
}

/* ---- suite barrier ---------------------------------------------------------- */

typedef struct barrier_arg {
    rcase_t rc;
    _Atomic unsigned *counter;
    int iters;
    int alg;             /* the algorithm the team must run (0: any) */
} barrier_arg_t;

static int barrier_body(const numacoll_bootstrap_t *b, void *arg)
{
    barrier_arg_t *ba = arg;
    numacoll_team_t *team;
    if (create_team(b, &ba->rc, &team) != NUMACOLL_OK)
        return 10;
    int errors = 0;
    if (ba->alg && team->barrier_alg != ba->alg) {
        fprintf(stderr, "rank %d: barrier runs %s\n", b->rank,
                nc__algs[team->barrier_alg].name);
        errors++;
    }
    for (int i = 1; i <= ba->iters && !errors; i++) {
        atomic_fetch_add_explicit(ba->counter, 1, memory_order_seq_cst);
        if (numacoll_barrier(team) != NUMACOLL_OK)
            errors++;
        unsigned seen = atomic_load_explicit(ba->counter, memory_order_seq_cst);
        /* everyone entered barrier i; nobody can have entered i + 2 */
        if (seen < (unsigned)(i * b->size) ||
            seen > (unsigned)((i + 1) * b->size)) {
            fprintf(stderr, "rank %d: barrier %d saw counter %u\n", b->rank, i,
                    seen);
            errors++;
        }
    }
    numacoll_counters_t c;
    numacoll_team_counters(team, &c);
    errors += c.barrier != (uint64_t)ba->iters;
    numacoll_team_destroy(team);
    return errors ? 1 : 0;
}

static void run_barrier(int p, barrier_arg_t *ba)
{
    atomic_store_explicit(ba->counter, 0, memory_order_seq_cst);
    CU_ASSERT_EQUAL(nct_run(p, barrier_body, ba), 0);
    CU_ASSERT_EQUAL(atomic_load_explicit(ba->counter, memory_order_seq_cst),
                    (unsigned)p * (unsigned)ba->iters);
}

/* 10 000 back to back at p = 8 on however few cores, the built-in rule. */
static void test_barrier_10k(void)
{
    barrier_arg_t ba = {.iters = 10000};
    numacoll_config_init(&ba.rc.cfg);
    ba.counter = nc__run_shared_alloc(sizeof *ba.counter);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ba.counter);
    run_barrier(8, &ba);
    nc__run_shared_free(ba.counter, sizeof *ba.counter);
}

/* The tree (a table's choice; the built-in one disseminates), every p
 * and radix, and NUMA-aware on a fake 4-node machine. */
static void test_barrier_radices(void)
{
    static const char tree[] = "barrier p=1-* alg=tree k=4\n";
    barrier_arg_t ba = {.iters = 500, .alg = NC_ALG_BARRIER_TREE};
    ba.counter = nc__run_shared_alloc(sizeof *ba.counter);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ba.counter);
    for (int i = 0; i < NSIZES; i++)
        for (unsigned k = 2; k <= 8; k += 3) {
            numacoll_config_init(&ba.rc.cfg);
            ba.rc.cfg.tuning_text = tree;
            ba.rc.cfg.barrier_radix = k;
            run_barrier(team_sizes[i], &ba);
        }
    for (unsigned k = 2; k <= 3; k++) {
        ba.rc = (rcase_t){.spread_pus = 1};
        numacoll_config_init(&ba.rc.cfg);
        ba.rc.cfg.topology = FAKE4;
        ba.rc.cfg.verbose = 0;
        ba.rc.cfg.tuning_text = tree;
        ba.rc.cfg.barrier_radix = k;
        ba.iters = 2000;
        run_barrier(8, &ba);
    }
    nc__run_shared_free(ba.counter, sizeof *ba.counter);
}

/* Dissemination: every p, radices of 2 to beyond p (one round), back to
 * back, then Ibarriers as steps (the counter checks that nobody leaves
 * early nor runs two ahead). */
static void test_barrier_dissem(void)
{
    barrier_arg_t ba = {.iters = 500, .alg = NC_ALG_BARRIER_DISSEM};
    ba.counter = nc__run_shared_alloc(sizeof *ba.counter);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ba.counter);
    static const char *const rules[] = {
        "barrier p=1-* alg=dissem k=2\n", "barrier p=1-* alg=dissem k=3\n",
        "barrier p=1-* alg=dissem k=4\n", "barrier p=1-* alg=dissem k=64\n"};
    for (int i = 0; i < NSIZES; i++)
        for (size_t r = 0; r < sizeof rules / sizeof *rules; r++) {
            numacoll_config_init(&ba.rc.cfg);
            ba.rc.cfg.verbose = 0;
            ba.rc.cfg.tuning_text = rules[r];
            ba.iters = team_sizes[i] == 8 && r == 0 ? 5000 : 500;
            run_barrier(team_sizes[i], &ba);
        }
    /* barrier_radix overrides the rule's k */
    numacoll_config_init(&ba.rc.cfg);
    ba.rc.cfg.verbose = 0;
    ba.rc.cfg.tuning_text = rules[3];
    ba.rc.cfg.barrier_radix = 3;
    ba.iters = 500;
    run_barrier(9, &ba);
    nc__run_shared_free(ba.counter, sizeof *ba.counter);
}

/* The hier tree: sound for every root, and NUMA-aware: the only edges that
 * cross nodes join the heads (root / leaders), ngroups - 1 of them, and a
 * member's path to its head stays inside its node. */
static void test_hier_shape(void)
{
    enum { P = 40 };
    numacoll_locality_t loc[P];
    char msg[200];
    int kids[P];
    for (int pattern = 0; pattern < 4; pattern++)
        for (int p = 1; p <= P; p += (p < 12 ? 1 : 7))
            for (int k = 2; k <= 4; k++) {
                for (int r = 0; r < p; r++) {
                    int node = pattern == 0 ? r % 4          /* interleaved */
                             : pattern == 1 ? r * 3 / p      /* blocks      */
                             : pattern == 2 ? (r < 2 ? 0 : 1 + r % 5)
                                            : 0;             /* one node    */
                    loc[r] = (numacoll_locality_t){.pu = r, .core = r,
                                                   .numa = node, .pid = 1};
                }
                nc__tree_t t;
                CU_ASSERT_EQUAL_FATAL(nc__tree_init_hier(&t, p, k, k, loc),
                                      NUMACOLL_OK);
                for (int root = 0; root < p; root++) {
                    int ok = nc__tree_check(&t, root, msg, sizeof msg) == 0;
                    if (!ok)
                        fprintf(stderr, "hier p %d k %d root %d: %s\n", p, k,
                                root, msg);
                    CU_ASSERT(ok);
                    int cross = 0, bad = 0;
                    for (int r = 0; r < p; r++) {
                        int par = nc__tree_parent(&t, root, r);
                        if (par < 0 || loc[par].numa == loc[r].numa)
                            continue;
                        cross++;
                        /* only heads cross, and they cross to heads */
                        bad += t.leader_of[r] != r;
                        bad += par != root && t.leader_of[par] != par;
                    }
                    CU_ASSERT_EQUAL(cross, t.ngroups - 1);
                    CU_ASSERT_EQUAL(bad, 0);
                    /* the root meets the other heads along a knomial
                     * over the groups, not flat (5 groups, k = 2: 3 child
                     * heads, not 4) */
                    int n = nc__tree_children(&t, root, root, kids), heads = 0;
                    for (int i = 0; i < n; i++)
                        heads += loc[kids[i]].numa != loc[root].numa;
                    CU_ASSERT_EQUAL(heads, nc__knomial_children(0, k, t.ngroups,
                                                                kids));
                }
                nc__tree_fini(&t);
            }
    nc__tree_t t;
    CU_ASSERT_EQUAL(nc__tree_init_hier(&t, 4, 2, 1, loc), NUMACOLL_ERR_ARG);
}

int nct_register_reduce(void)
{
    static const nct_test_t ops[] = {
        {"op x type validity, names, sizes", test_validity},
        {"every kernel against the reference, unaligned", test_kernels},
        {"wrap-around, MINLOC/MAXLOC ties, logical ops", test_kernel_edges},
        {NULL, NULL},
    };
    static const nct_test_t reduce[] = {
        {"every op, type, p, root, algorithm and boundary size", test_matrix},
        {"staging queues of 1..3 slots and odd slot sizes", test_queue_shapes},
        {"fake 4-NUMA topology", test_fake_4numa},
        {"8 MiB with the defaults", test_8m},
        {"user ops: matrix product in rank order, commutative", test_user_ops},
        {"inline allreduce: elements of 1..64 bytes across its lines",
         test_ar_lines},
        {"determinism under random delays", test_determinism},
        {"pairs' padding after the last element left alone", test_padding},
        {"pairs in place: the bytes past their span left alone",
         test_padding_in_place},
        {"bad arguments", test_bad_args},
        {NULL, NULL},
    };
    static const nct_test_t barrier[] = {
        {"10 000 barriers at p = 8, counter checked", test_barrier_10k},
        {"tree: every p and radix, fake 4-NUMA", test_barrier_radices},
        {"dissemination: every p and radix, counter checked",
         test_barrier_dissem},
        {"hier tree: sound, crosses nodes only between heads", test_hier_shape},
        {NULL, NULL},
    };
    int rc = nct_add_suite("ops", ops);
    if (rc == 0)
        rc = nct_add_suite("reduce", reduce);
    if (rc == 0)
        rc = nct_add_suite("barrier", barrier);
    return rc;
}
