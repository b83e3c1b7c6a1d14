/*
 * Reductions on the types beyond C's integers and reals, against a
 * locally computed reference, byte for byte:
 *  - complex: MPI_C_FLOAT_COMPLEX, MPI_C_COMPLEX, MPI_C_DOUBLE_COMPLEX,
 *    MPI_C_LONG_DOUBLE_COMPLEX and the MPI_CXX_*_COMPLEX, with SUM, PROD;
 *  - Fortran's types through their C handles (MPI_INTEGER, MPI_INTEGER1
 *    to 8, MPI_REAL, MPI_REAL4/8, MPI_DOUBLE_PRECISION, MPI_COMPLEX,
 *    MPI_DOUBLE_COMPLEX, MPI_COMPLEX8/16, MPI_LOGICAL, MPI_2REAL,
 *    MPI_2DOUBLE_PRECISION, MPI_2INTEGER), MPI_AINT, MPI_OFFSET,
 *    MPI_COUNT, MPI_CXX_BOOL; MPI_REAL16 and MPI_COMPLEX32 (binary128)
 *    with numacoll only: Open MPI 4.1's own kernels sum them wrongly;
 *  - derived datatypes of one predefined type with a predefined op: one
 *    run of elements (contiguous), and with holes (vector, resized,
 *    indexed, a struct of one type with a gap, a vector of MPI_2INT).
 * Every op MPI defines for the type, counts 1, 7, 300 and 9000 (past
 * the inline and first pipelined sizes): Allreduce (and in place), Reduce
 * (and in place at the root; roots in turn), Reduce_scatter_block (and
 * in place), Scan and Exscan; Iallreduce, Ireduce and a persistent
 * Allreduce started three times. Values are small integers (products of
 * units and 1 + i for complex PROD), so every combination order gives the
 * same bits. With NUMACOLL_EXPECT=core numacoll's MPI_T counters must
 * show every call in the core and none handed back.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpit.h"
#include "red_ops.h"
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

/* MPI-4's persistent Allreduce, or Open MPI 4.1's MPIX_ one (as in
 * nonblocking.c) */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define RT_ALLREDUCE_INIT MPI_Allreduce_init
#elif defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define RT_ALLREDUCE_INIT MPIX_Allreduce_init
#endif

/* ---- counters ------------------------------------------------------- */

enum { C_RED, C_ALL, C_RSB, C_SCAN, C_EXSCAN, C_IRED, C_IALL, C_N };
static const char *const cnt_names[2 * C_N] = {
    "coll_numacoll_reduce_count", "coll_numacoll_allreduce_count",
    "coll_numacoll_reduce_scatter_block_count", "coll_numacoll_scan_count",
    "coll_numacoll_exscan_count", "coll_numacoll_ireduce_count",
    "coll_numacoll_iallreduce_count",
    "coll_numacoll_reduce_fallback_count",
    "coll_numacoll_allreduce_fallback_count",
    "coll_numacoll_reduce_scatter_block_fallback_count",
    "coll_numacoll_scan_fallback_count", "coll_numacoll_exscan_fallback_count",
    "coll_numacoll_ireduce_fallback_count",
    "coll_numacoll_iallreduce_fallback_count"};
static mpit_named_t cnt;
static unsigned long long made[C_N];

/* ---- element types ---------------------------------------------------- */

/* How an element's bytes are read: parts of one scalar kind (1 for
 * integers and reals, 2 for complex and pairs: value then index). */
typedef enum { S_INT, S_UINT, S_F32, S_F64, S_LD, S_F128 } scalar_t;
typedef enum { K_NUM, K_CPLX, K_LOG, K_PAIR } kind_t;

typedef struct {
    const char *name;
    MPI_Datatype dt;
    kind_t kind;
    scalar_t sc;
    size_t part;        /* bytes of a part; a pair's index has the value's
                         * size except the C 2int-like (4) */
    size_t size;        /* extent of an element */
    bool core_only;     /* Open MPI alone gets it wrong */
} tdesc_t;

#if defined(__SIZEOF_FLOAT128__) && !defined(__clang__)
typedef __float128 f128_t;
#define HAVE_F128 1
#endif

static long double ld_part(scalar_t sc, size_t part, const void *p)
{
    switch (sc) {
    case S_INT: {
        int64_t v = 0;
        if (part == 1) { int8_t x; memcpy(&x, p, 1); v = x; }
        else if (part == 2) { int16_t x; memcpy(&x, p, 2); v = x; }
        else if (part == 4) { int32_t x; memcpy(&x, p, 4); v = x; }
        else memcpy(&v, p, 8);
        return (long double)v;
    }
    case S_UINT: { uint64_t v = 0; memcpy(&v, p, part); return (long double)v; }
    case S_F32: { float x; memcpy(&x, p, 4); return x; }
    case S_F64: { double x; memcpy(&x, p, 8); return x; }
    case S_LD: { long double x; memcpy(&x, p, sizeof x); return x; }
    case S_F128:
#ifdef HAVE_F128
        { f128_t x; memcpy(&x, p, 16); return (long double)x; }
#else
        return 0;
#endif
    }
    return 0;
}

static void st_part(scalar_t sc, size_t part, void *p, long double v)
{
    switch (sc) {
    case S_INT:
    case S_UINT: { int64_t x = (int64_t)v; memcpy(p, &x, part); break; }
    case S_F32: { float x = (float)v; memcpy(p, &x, 4); break; }
    case S_F64: { double x = (double)v; memcpy(p, &x, 8); break; }
    case S_LD: { long double x = v; memset(p, 0, part); memcpy(p, &x, sizeof x); break; }
    case S_F128:
#ifdef HAVE_F128
        { f128_t x = v; memcpy(p, &x, 16); }
#endif
        break;
    }
}

static bool applies(const tdesc_t *t, opk_t o)
{
    switch (t->kind) {
    case K_NUM:
        return t->sc <= S_UINT ? o <= O_MAX || (o >= O_BAND && o <= O_BXOR)
                               : o <= O_MAX;
    case K_CPLX: return o == O_SUM || o == O_PROD;
    case K_LOG: return o >= O_LAND && o <= O_LXOR;
    case K_PAIR: return o == O_MINLOC || o == O_MAXLOC;
    }
    return false;
}

static uint64_t mix(uint64_t z)
{
    return mpit_mix(z + 0x9E3779B97F4A7C15ULL);
}

/* Element j of rank's contribution to case `seed`. */
static void gen(const tdesc_t *t, opk_t o, int rank, unsigned seed, size_t j,
                char *e)
{
    uint64_t h = mix(((uint64_t)seed << 40) ^ ((uint64_t)rank << 32) ^ j);
    long v = (long)(h % 7) - 3;
    memset(e, 0, t->size);
    switch (t->kind) {
    case K_NUM:
        if (o >= O_BAND && o <= O_BXOR)
            v = (long)(h >> 20) & 0x7f;
        else if (o == O_PROD)
            v = (long)(h % 3) - 1 ? (long)(h % 3) - 1 : 2;  /* -1, 1, 2 */
        if (t->sc == S_UINT && v < 0)
            v = -v;
        st_part(t->sc, t->part, e, v);
        break;
    case K_CPLX: {
        static const int re[] = {1, 0, -1, 0, 1, 1}, im[] = {0, 1, 0, -1, 1, -1};
        long a = o == O_SUM ? v : re[h % 6], b = o == O_SUM ? (long)((h >> 8) % 7) - 3
                                                          : im[h % 6];
        st_part(t->sc, t->part, e, a);
        st_part(t->sc, t->part, e + t->part, b);
        break;
    }
    case K_LOG:   /* a C++ bool holds 0 or 1, a Fortran LOGICAL any value */
        st_part(S_UINT, t->size, e,
                h % 3 == 0 ? 0 : t->size == 1 ? 1 : (h >> 9) % 5 + 1);
        break;
    case K_PAIR:
        st_part(t->sc, t->part, e, (long)(h % 4));
        st_part(t->sc, t->part, e + t->part, (long)((h >> 16) % 5));
        break;
    }
}

/* acc = acc op x, in long double (exact for the values above). */
static void combine(const tdesc_t *t, opk_t o, char *acc, const char *x)
{
    const size_t q = t->part;
    long double a = ld_part(t->sc, q, acc), b = ld_part(t->sc, q, x);
    switch (t->kind) {
    case K_NUM:
        if (o >= O_BAND) {
            uint64_t ua = 0, ub = 0;
            memcpy(&ua, acc, q);
            memcpy(&ub, x, q);
            uint64_t r = o == O_BAND ? (ua & ub) : o == O_BOR ? (ua | ub) : (ua ^ ub);
            memcpy(acc, &r, q);
            return;
        }
        st_part(t->sc, q, acc, o == O_SUM ? a + b : o == O_PROD ? a * b
                               : o == O_MIN ? (a < b ? a : b) : (a < b ? b : a));
        return;
    case K_CPLX: {
        long double c = ld_part(t->sc, q, acc + q), d = ld_part(t->sc, q, x + q);
        st_part(t->sc, q, acc, o == O_SUM ? a + b : a * b - c * d);
        st_part(t->sc, q, acc + q, o == O_SUM ? c + d : a * d + c * b);
        return;
    }
    case K_LOG: {
        uint64_t ua = 0, ub = 0;
        memcpy(&ua, acc, t->size);
        memcpy(&ub, x, t->size);
        uint64_t r = o == O_LAND ? (ua && ub) : o == O_LOR ? (ua || ub)
                                                           : (!ua != !ub);
        memcpy(acc, &r, t->size);
        return;
    }
    case K_PAIR: {
        long double ia = ld_part(t->sc, q, acc + q), ib = ld_part(t->sc, q, x + q);
        bool take = o == O_MINLOC ? (b < a || (b == a && ib < ia))
                                  : (b > a || (b == a && ib < ia));
        if (take)
            memcpy(acc, x, t->size);
        return;
    }
    }
}

/* Integers byte for byte; floating parts by value: long double's 6
 * padding bytes are no part of it, and a zero part of a complex product
 * may be -0 in one combination order and +0 in another ((-2 + 0i)^2
 * has the imaginary part -0 + -0), the only difference exact values
 * leave. */
static bool same(const tdesc_t *t, const char *a, const char *b)
{
    if (t->sc <= S_UINT)
        return memcmp(a, b, t->size) == 0;
    for (size_t k = 0; k < t->size; k += t->part)
        if (ld_part(t->sc, t->part, a + k) != ld_part(t->sc, t->part, b + k))
            return false;
    return true;
}

/* ---- one type, one op, one count -------------------------------------- */

static unsigned seed_ctr;

/* count elements of t at buf through dt (a derived type of t: count_dt
 * of its elements hold count of t's), element j at off[j] */
typedef struct {
    const char *name;
    MPI_Datatype dt;
    int per;            /* t's elements per element of dt */
    size_t extent;      /* bytes of one element of dt */
    size_t off[4];      /* where its t elements lie, in bytes */
} view_t;

static char *at(const view_t *v, const tdesc_t *t, char *buf, size_t j)
{
    if (!v)
        return buf + j * t->size;
    return buf + (j / (size_t)v->per) * v->extent + v->off[j % (size_t)v->per];
}

static void check_elems(const tdesc_t *t, const view_t *v, opk_t o,
                        const char *ref, char *got, size_t n,
                        const char *what, int root)
{
    size_t bad = n;
    for (size_t j = 0; j < n && bad == n; j++)
        if (!same(t, ref + j * t->size, at(v, t, got, j)))
            bad = j;
    MPIT_CHECK(bad == n, "%s of %s%s%s %s, %zu elements, root %d: element "
               "%zu differs from the reference", what, t->name,
               v ? " in " : "", v ? v->name : "", op_names[o], n, root, bad);
}

static void run(const tdesc_t *t, const view_t *v, opk_t o, size_t n,
                unsigned turn)
{
    int me = mpit_rank, p = mpit_size;
    MPI_Comm comm = MPI_COMM_WORLD;
    unsigned seed = ++seed_ctr;
    const size_t per = v ? (size_t)v->per : 1;
    const int c = (int)(n / per);           /* elements of the datatype */
    n = (size_t)c * per;
    if (c == 0)     /* a count-0 call counts nowhere */
        return;
    MPI_Datatype dt = v ? v->dt : t->dt;
    const size_t room = v ? (size_t)c * v->extent + 64 : n * t->size + 64;
    /* every rank's contribution, the reference, and the prefixes */
    char *all = malloc((size_t)p * n * t->size + 1);
    char *ref = malloc(n * t->size + 1), *pre = malloc(n * t->size + 1);
    char *mine = calloc(1, room), *out = calloc(1, room);
    char *big = calloc((size_t)p, room), *bigout = calloc((size_t)p, room);
    for (int r = 0; r < p; r++)
        for (size_t j = 0; j < n; j++)
            gen(t, o, r, seed, j, all + ((size_t)r * n + j) * t->size);
    for (size_t j = 0; j < n; j++)
        memcpy(at(v, t, mine, j), all + ((size_t)me * n + j) * t->size,
               t->size);
    memcpy(ref, all, n * t->size);
    for (int r = 1; r < p; r++)
        for (size_t j = 0; j < n; j++)
            combine(t, o, ref + j * t->size, all + ((size_t)r * n + j) * t->size);

    MPI_Allreduce(mine, out, c, dt, ops[o], comm);
    check_elems(t, v, o, ref, out, n, "Allreduce", -1);
    memcpy(out, mine, room);
    MPI_Allreduce(MPI_IN_PLACE, out, c, dt, ops[o], comm);
    check_elems(t, v, o, ref, out, n, "Allreduce in place", -1);
    made[C_ALL] += 2;

    int root = (int)(turn % (unsigned)p);
    memset(out, 0, room);
    MPI_Reduce(mine, me == root ? out : NULL, c, dt, ops[o], root, comm);
    if (me == root)
        check_elems(t, v, o, ref, out, n, "Reduce", root);
    memcpy(out, mine, room);
    MPI_Reduce(me == root ? RED_IN_PLACE(root, room, mine) : mine, out, c, dt,
               ops[o], root,
               comm);
    if (me == root)
        check_elems(t, v, o, ref, out, n, "Reduce in place", root);
    made[C_RED] += 2;

    /* Reduce_scatter_block: block j of the p-block contribution is the
     * contribution above, shifted by j ranks (so blocks differ) */
    for (int b = 0; b < p; b++)
        for (size_t j = 0; j < n; j++)
            memcpy(at(v, t, big + (size_t)b * (v ? (size_t)c * v->extent
                                                  : n * t->size), j),
                   all + ((size_t)((me + b) % p) * n + j) * t->size, t->size);
    MPI_Reduce_scatter_block(big, out, c, dt, ops[o], comm);
    /* my block: rank r contributed all[(r + me) % p], so the reference is
     * the fold of every rank's contribution, as above, in another order
     * of the same values: exact either way */
    check_elems(t, v, o, ref, out, n, "Reduce_scatter_block", -1);
    memcpy(bigout, big, (size_t)p * room);
    MPI_Reduce_scatter_block(MPI_IN_PLACE, bigout, c, dt, ops[o], comm);
    check_elems(t, v, o, ref, bigout, n, "Reduce_scatter_block in place", -1);
    made[C_RSB] += 2;

    /* Scan and Exscan: prefixes of ranks 0..me and 0..me-1 */
    memcpy(pre, all, n * t->size);
    for (int r = 1; r <= me; r++)
        for (size_t j = 0; j < n; j++)
            combine(t, o, pre + j * t->size, all + ((size_t)r * n + j) * t->size);
    MPI_Scan(mine, out, c, dt, ops[o], comm);
    check_elems(t, v, o, pre, out, n, "Scan", -1);
    made[C_SCAN]++;
    if (me > 0) {
        memcpy(pre, all, n * t->size);
        for (int r = 1; r < me; r++)
            for (size_t j = 0; j < n; j++)
                combine(t, o, pre + j * t->size,
                        all + ((size_t)r * n + j) * t->size);
    }
    MPI_Exscan(mine, out, c, dt, ops[o], comm);
    if (me > 0)
        check_elems(t, v, o, pre, out, n, "Exscan", -1);
    made[C_EXSCAN]++;

    free(all); free(ref); free(pre); free(mine); free(out); free(big);
    free(bigout);
}

/* The nonblocking and persistent forms: Iallreduce (and in place),
 * Ireduce (and in place at the root), and a persistent Allreduce started
 * three times over new data (a packed type is packed at every start). */
static void run_nb(const tdesc_t *t, const view_t *v, opk_t o, size_t n,
                   unsigned turn)
{
    const int me = mpit_rank, p = mpit_size;
    const size_t per = v ? (size_t)v->per : 1;
    const int c = (int)(n / per);
    n = (size_t)c * per;
    if (c == 0)
        return;
    MPI_Datatype dt = v ? v->dt : t->dt;
    const size_t room = v ? (size_t)c * v->extent + 64 : n * t->size + 64;
    char *ref = malloc(n * t->size + 1), *x = malloc(t->size + 1);
    char *mine = calloc(1, room), *out = calloc(1, room);
    const int root = (int)(turn % (unsigned)p);
    for (int round = 0; round < 3; round++) {
        unsigned seed = ++seed_ctr;
        for (size_t j = 0; j < n; j++) {
            gen(t, o, me, seed, j, at(v, t, mine, j));
            gen(t, o, 0, seed, j, ref + j * t->size);
            for (int r = 1; r < p; r++) {
                gen(t, o, r, seed, j, x);
                combine(t, o, ref + j * t->size, x);
            }
        }
        MPI_Request q;
        if (round == 0) {
            MPI_Iallreduce(mine, out, c, dt, ops[o], MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            check_elems(t, v, o, ref, out, n, "Iallreduce", -1);
            memcpy(out, mine, room);
            MPI_Iallreduce(MPI_IN_PLACE, out, c, dt, ops[o], MPI_COMM_WORLD,
                           &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            check_elems(t, v, o, ref, out, n, "Iallreduce in place", -1);
            memcpy(out, mine, room);
            MPI_Ireduce(me == root ? RED_IN_PLACE(root, room, mine) : mine, out, c,
                        dt, ops[o],
                        root, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            if (me == root)
                check_elems(t, v, o, ref, out, n, "Ireduce in place", root);
            made[C_IALL] += 2;
            made[C_IRED]++;
        }
#ifdef RT_ALLREDUCE_INIT
        static MPI_Request pq = MPI_REQUEST_NULL;
        if (round == 0)
            RT_ALLREDUCE_INIT(mine, out, c, dt, ops[o], MPI_COMM_WORLD,
                              MPI_INFO_NULL, &pq);
        memset(out, 0, room);
        MPI_Start(&pq);
        MPI_Wait(&pq, MPI_STATUS_IGNORE);
        check_elems(t, v, o, ref, out, n, "persistent Allreduce", -1);
        made[C_IALL]++;
        if (round == 2)
            MPI_Request_free(&pq);
#endif
    }
    free(ref); free(x); free(mine); free(out);
}

/* ---- the types -------------------------------------------------------- */

static int ntypes;
static tdesc_t types[40];

static void add(const char *name, MPI_Datatype dt, kind_t k, scalar_t sc,
                size_t part, bool core_only)
{
    int size = 0;
    if (dt == MPI_DATATYPE_NULL || MPI_Type_size(dt, &size) != MPI_SUCCESS ||
        size == 0)
        return;   /* not in this build (no Fortran) */
    if (k == K_NUM && sc <= S_UINT)
        part = (size_t)size;
    if (k == K_LOG)
        part = (size_t)size;
    types[ntypes++] = (tdesc_t){name, dt, k, sc, part,
                                k == K_NUM || k == K_LOG ? part : 2 * part,
                                core_only};
}

static void types_init(void)
{
    add("C float complex", MPI_C_FLOAT_COMPLEX, K_CPLX, S_F32, 4, false);
    add("C complex", MPI_C_COMPLEX, K_CPLX, S_F32, 4, false);
    add("C double complex", MPI_C_DOUBLE_COMPLEX, K_CPLX, S_F64, 8, false);
    add("C long double complex", MPI_C_LONG_DOUBLE_COMPLEX, K_CPLX, S_LD,
        sizeof(long double), false);
    add("C++ float complex", MPI_CXX_FLOAT_COMPLEX, K_CPLX, S_F32, 4, false);
    add("C++ double complex", MPI_CXX_DOUBLE_COMPLEX, K_CPLX, S_F64, 8, false);
    add("C++ long double complex", MPI_CXX_LONG_DOUBLE_COMPLEX, K_CPLX, S_LD,
        sizeof(long double), false);
    add("C++ bool", MPI_CXX_BOOL, K_LOG, S_UINT, 1, false);
    /* signed, but Open MPI 4.1's own MIN/MAX on MPI_OFFSET compares as
     * unsigned: non-negative values (the reference reads them unsigned) */
    add("aint", MPI_AINT, K_NUM, S_UINT, 0, false);
    add("offset", MPI_OFFSET, K_NUM, S_UINT, 0, false);
    add("count", MPI_COUNT, K_NUM, S_UINT, 0, false);
    add("INTEGER", MPI_INTEGER, K_NUM, S_INT, 0, false);
    add("INTEGER1", MPI_INTEGER1, K_NUM, S_INT, 0, false);
    add("INTEGER2", MPI_INTEGER2, K_NUM, S_INT, 0, false);
    add("INTEGER4", MPI_INTEGER4, K_NUM, S_INT, 0, false);
    add("INTEGER8", MPI_INTEGER8, K_NUM, S_INT, 0, false);
    add("REAL", MPI_REAL, K_NUM, S_F32, 4, false);
    add("REAL4", MPI_REAL4, K_NUM, S_F32, 4, false);
    add("REAL8", MPI_REAL8, K_NUM, S_F64, 8, false);
    add("DOUBLE PRECISION", MPI_DOUBLE_PRECISION, K_NUM, S_F64, 8, false);
    add("COMPLEX", MPI_COMPLEX, K_CPLX, S_F32, 4, false);
    add("DOUBLE COMPLEX", MPI_DOUBLE_COMPLEX, K_CPLX, S_F64, 8, false);
    add("COMPLEX8", MPI_COMPLEX8, K_CPLX, S_F32, 4, false);
    add("COMPLEX16", MPI_COMPLEX16, K_CPLX, S_F64, 8, false);
    add("LOGICAL", MPI_LOGICAL, K_LOG, S_UINT, 4, false);
    add("2REAL", MPI_2REAL, K_PAIR, S_F32, 4, false);
    add("2DOUBLE PRECISION", MPI_2DOUBLE_PRECISION, K_PAIR, S_F64, 8, false);
    add("2INTEGER", MPI_2INTEGER, K_PAIR, S_INT, 4, false);
#ifdef HAVE_F128
    /* Open MPI 4.1's kernels add REAL*16 as if it were a long double */
    add("REAL16", MPI_REAL16, K_NUM, S_F128, 16, true);
    add("COMPLEX32", MPI_COMPLEX32, K_CPLX, S_F128, 16, true);
#endif
}

/* ---- derived datatypes ------------------------------------------------ */

#define NVIEWS 6
static view_t views[NVIEWS];
static const tdesc_t *view_type[NVIEWS];
static opk_t view_op[NVIEWS];

static void views_init(void)
{
    static tdesc_t dbl = {"double", MPI_DOUBLE, K_NUM, S_F64, 8, 8, false};
    static tdesc_t i32 = {"int", MPI_INT, K_NUM, S_INT, 4, 4, false};
    static tdesc_t zd = {"double complex", MPI_C_DOUBLE_COMPLEX, K_CPLX,
                         S_F64, 8, 16, false};
    static tdesc_t i2 = {"2int", MPI_2INT, K_PAIR, S_INT, 4, 8, false};
    MPI_Datatype tmp;
    int k = 0;
    /* one run: 3 doubles */
    MPI_Type_contiguous(3, MPI_DOUBLE, &views[k].dt);
    views[k] = (view_t){"contiguous(3)", views[k].dt, 3, 24, {0, 8, 16}};
    view_type[k] = &dbl; view_op[k++] = O_SUM;
    /* two complex doubles in one run */
    MPI_Type_contiguous(2, MPI_C_DOUBLE_COMPLEX, &views[k].dt);
    views[k] = (view_t){"contiguous(2)", views[k].dt, 2, 32, {0, 16}};
    view_type[k] = &zd; view_op[k++] = O_PROD;
    /* vector: 2 blocks of 1 int, stride 3 ints: extent 4 ints resized */
    MPI_Type_vector(2, 1, 3, MPI_INT, &tmp);
    MPI_Type_create_resized(tmp, 0, 20, &views[k].dt);
    MPI_Type_free(&tmp);
    views[k] = (view_t){"vector(2,1,3) resized 20", views[k].dt, 2, 20, {0, 12}};
    view_type[k] = &i32; view_op[k++] = O_MAX;
    /* a double with 8 bytes of gap after it */
    MPI_Type_create_resized(MPI_DOUBLE, 0, 16, &views[k].dt);
    views[k] = (view_t){"resized 16", views[k].dt, 1, 16, {0}};
    view_type[k] = &dbl; view_op[k++] = O_MIN;
    /* a struct of two doubles at 0 and 16, extent 24 */
    {
        int bl[2] = {1, 1};
        MPI_Aint dp[2] = {0, 16};
        MPI_Datatype ty[2] = {MPI_DOUBLE, MPI_DOUBLE};
        MPI_Type_create_struct(2, bl, dp, ty, &tmp);
        MPI_Type_create_resized(tmp, 0, 24, &views[k].dt);
        MPI_Type_free(&tmp);
        views[k] = (view_t){"struct{d,_,d}", views[k].dt, 2, 24, {0, 16}};
        view_type[k] = &dbl; view_op[k++] = O_SUM;
    }
    /* indexed pairs of 2int: element 0 and 2 of 3 */
    {
        int bl[2] = {1, 1}, dp[2] = {0, 2};
        MPI_Type_indexed(2, bl, dp, MPI_2INT, &tmp);
        MPI_Type_create_resized(tmp, 0, 24, &views[k].dt);
        MPI_Type_free(&tmp);
        views[k] = (view_t){"indexed 2int", views[k].dt, 2, 24, {0, 16}};
        view_type[k] = &i2; view_op[k++] = O_MINLOC;
    }
    for (int i = 0; i < k; i++)
        MPI_Type_commit(&views[i].dt);
}

int main(int argc, char **argv)
{
    mpit_init(&argc, &argv, "reduce_types");
    mpit_named_open(&cnt, cnt_names, 2 * C_N);
    red_ops_init();
    types_init();
    views_init();
    const bool core = mpit_expect == MPIT_EXPECT_CORE;
    unsigned long long before[2 * C_N], after[2 * C_N];
    mpit_named_read(&cnt, before);

    static const size_t counts[] = {1, 7, 300, 9000};
    unsigned turn = 0;
    for (int i = 0; i < ntypes; i++) {
        if (types[i].core_only && !core)
            continue;
        for (int op = 0; op < O_N; op++)
            if (applies(&types[i], (opk_t)op))
                for (size_t k = 0; k < 4; k++) {
                    run(&types[i], NULL, (opk_t)op, counts[k], turn++);
                    if (k == 1 || k == 3)
                        run_nb(&types[i], NULL, (opk_t)op, counts[k], turn++);
                }
    }
    /* Open MPI 4.1's argument check refuses a predefined op on some
     * derived types (MPI_ERR_OP before any component sees the call), alike
     * on every rank: those are left out, and said */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int i = 0; i < NVIEWS; i++) {
        char in[64] = {0}, res[64];
        if (MPI_Allreduce(in, res, 1, views[i].dt, ops[view_op[i]],
                          MPI_COMM_WORLD) != MPI_SUCCESS) {
            if (mpit_rank == 0)
                printf("reduce_types: %s %s on %s refused by this MPI's "
                       "argument check: not run\n", view_type[i]->name,
                       op_names[view_op[i]], views[i].name);
            continue;
        }
        made[C_ALL]++;
        for (size_t k = 0; k < 4; k++) {
            run(view_type[i], &views[i], view_op[i], counts[k], turn++);
            run_nb(view_type[i], &views[i], view_op[i], counts[k], turn++);
        }
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    mpit_named_read(&cnt, after);
    if (core) {
        MPIT_CHECK(cnt.present, "numacoll's counters are missing");
        for (int i = 0; i < C_N && cnt.present; i++) {
            MPIT_CHECK(after[i] - before[i] == made[i], "%s: numacoll ran "
                       "%llu calls, expected %llu", cnt_names[i],
                       after[i] - before[i], made[i]);
            MPIT_CHECK(after[C_N + i] == before[C_N + i], "%s: %llu calls "
                       "handed back", cnt_names[C_N + i],
                       after[C_N + i] - before[C_N + i]);
        }
    }
    for (int i = 0; i < NVIEWS; i++)
        MPI_Type_free(&views[i].dt);
    mpit_named_close(&cnt);
    return mpit_finish();
}
