/*
 * MPI_Reduce and MPI_Allreduce against a locally computed reference.
 *
 * Every predefined op on every predefined C datatype it applies to
 * (integers of every width and signedness, float, double, long double,
 * MPI_C_BOOL with the logical ops, the MINLOC/MAXLOC pairs) at counts 0, 1,
 * 7 and 5000: Allreduce, Allreduce with MPI_IN_PLACE, Reduce and Reduce
 * with MPI_IN_PLACE at the root (roots taken in turn); every root for a
 * few of them; 1<<20 doubles; a non-commutative user op (2x2 matrix product
 * modulo 2^32), which must give the rank-ordered product M_0 M_1 ... M_p-1.
 * Runs on MPI_COMM_WORLD and on a split of it in reversed rank order.
 * Each rank computes every rank's contribution itself (they depend on the
 * rank, a seed and the position only), so the reference is exact: values
 * are small integers, so float sums and products are exact in any order.
 *
 * Two cases must fall back (a user op on a non-contiguous vector type,
 * Reduce and Allreduce). With NUMACOLL_EXPECT=core numacoll's MPI_T
 * counters must show every other call in the core and exactly these in
 * the previous component.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <complex.h>

#include "mpit.h"
#include "red_ops.h"

/* ---- numacoll's Reduce counters -------------------------------------- */

enum { RC_REDUCE, RC_ALLREDUCE, RC_REDUCE_FB, RC_ALLREDUCE_FB, RC_N };
static const char *const rc_names[RC_N] = {
    "coll_numacoll_reduce_count", "coll_numacoll_allreduce_count",
    "coll_numacoll_reduce_fallback_count",
    "coll_numacoll_allreduce_fallback_count"};
static mpit_named_t rc;

static void rc_read(unsigned long long v[RC_N])
{
    mpit_named_read(&rc, v);
}

/* Calls made, by kind, on communicators numacoll accepts. */
static unsigned long long made[RC_N];

/* ---- datatypes ------------------------------------------------------- */

typedef enum { K_SINT, K_UINT, K_FLT, K_BOOL, K_PAIR } kind_t;

typedef struct { float v; int i; } p_float_int;
typedef struct { double v; int i; } p_double_int;
typedef struct { long v; int i; } p_long_int;
typedef struct { int v; int i; } p_2int;
typedef struct { short v; int i; } p_short_int;
typedef struct { long double v; int i; } p_long_double_int;

typedef struct {
    const char *name;
    MPI_Datatype dt;
    kind_t kind;
    size_t size;    /* extent: elements lie back to back */
    int sub;        /* K_FLT: 0 float 1 double 2 long double; K_PAIR: 0..5 */
} tdesc_t;

#define NTYPES 27
static tdesc_t types[NTYPES];

static void types_init(void)
{
    int n = 0;
#define T(nm, dt, k, sz, sb) types[n++] = (tdesc_t){nm, dt, k, sz, sb}
    T("int8", MPI_INT8_T, K_SINT, 1, 0);
    T("uint8", MPI_UINT8_T, K_UINT, 1, 0);
    T("int16", MPI_INT16_T, K_SINT, 2, 0);
    T("uint16", MPI_UINT16_T, K_UINT, 2, 0);
    T("int32", MPI_INT32_T, K_SINT, 4, 0);
    T("uint32", MPI_UINT32_T, K_UINT, 4, 0);
    T("int64", MPI_INT64_T, K_SINT, 8, 0);
    T("uint64", MPI_UINT64_T, K_UINT, 8, 0);
    T("signed char", MPI_SIGNED_CHAR, K_SINT, 1, 0);
    T("unsigned char", MPI_UNSIGNED_CHAR, K_UINT, 1, 0);
    T("byte", MPI_BYTE, K_UINT, 1, 0);
    T("short", MPI_SHORT, K_SINT, sizeof(short), 0);
    T("unsigned short", MPI_UNSIGNED_SHORT, K_UINT, sizeof(short), 0);
    T("int", MPI_INT, K_SINT, sizeof(int), 0);
    T("unsigned", MPI_UNSIGNED, K_UINT, sizeof(int), 0);
    T("long", MPI_LONG, K_SINT, sizeof(long), 0);
    T("unsigned long", MPI_UNSIGNED_LONG, K_UINT, sizeof(long), 0);
    T("long long", MPI_LONG_LONG, K_SINT, sizeof(long long), 0);
    T("unsigned long long", MPI_UNSIGNED_LONG_LONG, K_UINT,
      sizeof(long long), 0);
    T("float", MPI_FLOAT, K_FLT, sizeof(float), 0);
    T("double", MPI_DOUBLE, K_FLT, sizeof(double), 1);
    T("long double", MPI_LONG_DOUBLE, K_FLT, sizeof(long double), 2);
    T("C bool", MPI_C_BOOL, K_BOOL, sizeof(bool), 0);
    T("float_int", MPI_FLOAT_INT, K_PAIR, sizeof(p_float_int), 0);
    T("double_int", MPI_DOUBLE_INT, K_PAIR, sizeof(p_double_int), 1);
    T("long_int", MPI_LONG_INT, K_PAIR, sizeof(p_long_int), 2);
    T("2int", MPI_2INT, K_PAIR, sizeof(p_2int), 3);
    /* short_int and long_double_int: added below if room */
#undef T
}

static tdesc_t extra_pairs[2];

/* ---- ops (red_ops.h) ------------------------------------------------ */


static bool applies(const tdesc_t *t, opk_t o)
{
    switch (t->kind) {
    case K_SINT:
    case K_UINT:
        if (t->dt == MPI_BYTE)
            return o == O_BAND || o == O_BOR || o == O_BXOR;
        return o <= O_BXOR;
    case K_FLT:
        return o <= O_MAX;
    case K_BOOL:
        return o == O_LAND || o == O_LOR || o == O_LXOR;
    case K_PAIR:
        return o == O_MINLOC || o == O_MAXLOC;
    }
    return false;
}

/* ---- values ---------------------------------------------------------- */

static uint64_t mix(uint64_t z)
{
    return mpit_mix(z + 0x9E3779B97F4A7C15ULL);
}

static uint64_t hv(int rank, unsigned seed, size_t j)
{
    return mix(((uint64_t)seed << 40) ^ ((uint64_t)rank << 32) ^ j);
}

/* Element j of rank's contribution. Small values wherever the result
 * must be exact or free of signed overflow; random bits for bitwise ops. */
static void gen(const tdesc_t *t, opk_t o, int rank, unsigned seed, size_t j,
                void *dst)
{
    uint64_t h = hv(rank, seed, j);
    long small = (long)(h % 7) - 3;          /* -3 .. 3 */
    if (o == O_LAND || o == O_LOR || o == O_LXOR)
        small = (h % 8 == 0) ? 0 : (long)(h >> 8) % 3 + 1;
    /* Open MPI 4.1.4's own ops, which run when numacoll is absent, add
     * unsigned 8- and 16-bit integers with saturation and compare
     * MPI_UNSIGNED_LONG in MIN/MAX as signed: keep unsigned sums clear of
     * wrapping and unsigned MIN/MAX operands below 2^63. */
    if ((o == O_SUM || o == O_MIN || o == O_MAX) && t->kind == K_UINT)
        small = (long)(h % 4);
    switch (t->kind) {
    case K_SINT:
    case K_UINT: {
        uint64_t u = (o >= O_BAND && o <= O_BXOR) ? h >> 3 : (uint64_t)small;
        memcpy(dst, &u, t->size);  /* little-endian: the low bytes */
        break;
    }
    case K_FLT:
        if (t->sub == 0) { float v = (float)small; memcpy(dst, &v, sizeof v); }
        else if (t->sub == 1) { double v = (double)small; memcpy(dst, &v, sizeof v); }
        else { long double v = (long double)small; memset(dst, 0, t->size); memcpy(dst, &v, sizeof v); }
        break;
    case K_BOOL: { bool b = small != 0; memcpy(dst, &b, 1); break; }
    case K_PAIR: {
        int idx = (int)((h >> 16) % 5);   /* ties on value and index occur */
        memset(dst, 0, t->size);
#define PAIR(T) { T e; memset(&e, 0, sizeof e); e.v = small; e.i = idx; memcpy(dst, &e, sizeof e); }
        switch (t->sub) {
        case 0: PAIR(p_float_int) break;
        case 1: PAIR(p_double_int) break;
        case 2: PAIR(p_long_int) break;
        case 3: PAIR(p_2int) break;
        case 4: PAIR(p_short_int) break;
        case 5: PAIR(p_long_double_int) break;
        }
#undef PAIR
        break;
    }
    }
}

static int64_t load_int(const tdesc_t *t, const void *src)
{
    uint64_t u = 0;
    memcpy(&u, src, t->size);
    if (t->kind == K_SINT && t->size < 8) {
        unsigned sh = 64 - 8 * (unsigned)t->size;
        return (int64_t)(u << sh) >> sh;
    }
    return (int64_t)u;
}

/* acc = acc op x (acc: lower ranks). */
static void combine(const tdesc_t *t, opk_t o, void *acc, const void *x)
{
    switch (t->kind) {
    case K_SINT:
    case K_UINT: {
        int64_t a = load_int(t, acc), b = load_int(t, x);
        uint64_t ua = (uint64_t)a, ub = (uint64_t)b, r = 0;
        bool lt = t->kind == K_SINT ? a < b : ua < ub;
        switch (o) {
        case O_SUM: r = ua + ub; break;
        case O_PROD: r = ua * ub; break;
        case O_MIN: r = lt ? ua : ub; break;
        case O_MAX: r = lt ? ub : ua; break;
        case O_LAND: r = a && b; break;
        case O_LOR: r = a || b; break;
        case O_LXOR: r = (a != 0) != (b != 0); break;
        case O_BAND: r = ua & ub; break;
        case O_BOR: r = ua | ub; break;
        case O_BXOR: r = ua ^ ub; break;
        default: break;
        }
        memcpy(acc, &r, t->size);
        break;
    }
    case K_FLT: {
#define FOP(T) { T a, b; memcpy(&a, acc, sizeof a); memcpy(&b, x, sizeof b); \
        T r = o == O_SUM ? a + b : o == O_PROD ? a * b : o == O_MIN ? (a < b ? a : b) : (a < b ? b : a); \
        memcpy(acc, &r, sizeof r); }
        if (t->sub == 0) FOP(float) else if (t->sub == 1) FOP(double) else FOP(long double)
#undef FOP
        break;
    }
    case K_BOOL: {
        bool a, b, r;
        memcpy(&a, acc, 1);
        memcpy(&b, x, 1);
        r = o == O_LAND ? (a && b) : o == O_LOR ? (a || b) : (a != b);
        memcpy(acc, &r, 1);
        break;
    }
    case K_PAIR: {
#define POP(T) { T a, b; memcpy(&a, acc, sizeof a); memcpy(&b, x, sizeof b); \
        bool take_b = o == O_MINLOC ? (b.v < a.v || (b.v == a.v && b.i < a.i)) \
                                    : (b.v > a.v || (b.v == a.v && b.i < a.i)); \
        if (take_b) memcpy(acc, &b, sizeof b); }
        switch (t->sub) {
        case 0: POP(p_float_int) break;
        case 1: POP(p_double_int) break;
        case 2: POP(p_long_int) break;
        case 3: POP(p_2int) break;
        case 4: POP(p_short_int) break;
        case 5: POP(p_long_double_int) break;
        }
#undef POP
        break;
    }
    }
}

/* Compare the meaningful bytes of element j (padding is unspecified). */
static bool same(const tdesc_t *t, const void *a, const void *b)
{
    switch (t->kind) {
    case K_SINT:
    case K_UINT:
    case K_BOOL:
        return memcmp(a, b, t->size) == 0;
    case K_FLT:
        if (t->sub == 2) {
            long double x, y;
            memcpy(&x, a, sizeof x);
            memcpy(&y, b, sizeof y);
            return x == y;
        }
        return memcmp(a, b, t->size) == 0;
    case K_PAIR:
#define PEQ(T) { T x, y; memcpy(&x, a, sizeof x); memcpy(&y, b, sizeof y); \
        return x.v == y.v && x.i == y.i; }
        switch (t->sub) {
        case 0: PEQ(p_float_int)
        case 1: PEQ(p_double_int)
        case 2: PEQ(p_long_int)
        case 3: PEQ(p_2int)
        case 4: PEQ(p_short_int)
        case 5: PEQ(p_long_double_int)
        }
#undef PEQ
    }
    return false;
}

/* ---- one case -------------------------------------------------------- */

static unsigned seed_ctr;

static void fill_mine(const tdesc_t *t, opk_t o, int rank, unsigned seed,
                      size_t count, char *buf)
{
    for (size_t j = 0; j < count; j++)
        gen(t, o, rank, seed, j, buf + j * t->size);
}

static void reference(const tdesc_t *t, opk_t o, int p, unsigned seed,
                      size_t count, char *ref)
{
    char x[64];
    fill_mine(t, o, 0, seed, count, ref);
    for (int r = 1; r < p; r++)
        for (size_t j = 0; j < count; j++) {
            gen(t, o, r, seed, j, x);
            combine(t, o, ref + j * t->size, x);
        }
}

static void verify(const tdesc_t *t, opk_t o, const char *ref,
                   const char *got, size_t count, const char *what,
                   const char *cname, int root)
{
    size_t bad = count;
    for (size_t j = 0; j < count && bad == count; j++)
        if (!same(t, ref + j * t->size, got + j * t->size))
            bad = j;
    MPIT_CHECK(bad == count, "%s on %s: %s %s, count %zu, root %d: element "
               "%zu differs from the reference", what, cname, t->name,
               op_names[o], count, root, bad);
}

/* Allreduce, Allreduce in place, Reduce at root_a and Reduce in place at
 * root_b; roots < 0 skip that call. */
static void run_case(MPI_Comm comm, const char *cname, const tdesc_t *t,
                     opk_t o, size_t count, int root_a, int root_b,
                     bool allreduce)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    unsigned seed = ++seed_ctr;
    size_t n = count * t->size + 1;
    char *mine = malloc(n), *ref = malloc(n), *out = malloc(n);
    fill_mine(t, o, rank, seed, count, mine);
    reference(t, o, p, seed, count, ref);
    int c = (int)count;

    if (allreduce) {
        memset(out, 0x5a, n);
        MPI_Allreduce(mine, out, c, t->dt, ops[o], comm);
        verify(t, o, ref, out, count, "Allreduce", cname, -1);
        memcpy(out, mine, count * t->size);
        MPI_Allreduce(MPI_IN_PLACE, out, c, t->dt, ops[o], comm);
        verify(t, o, ref, out, count, "Allreduce in place", cname, -1);
        /* Calls with count 0 count nowhere: Open MPI's bindings skip the
         * component, or numacoll returns at once. */
        if (count > 0)
            made[RC_ALLREDUCE] += 2;
    }
    if (root_a >= 0) {
        memset(out, 0x5a, n);
        MPI_Reduce(mine, rank == root_a ? out : NULL, c, t->dt, ops[o],
                   root_a, comm);
        if (rank == root_a)
            verify(t, o, ref, out, count, "Reduce", cname, root_a);
        made[RC_REDUCE] += count > 0;
    }
    if (root_b >= 0) {
        memcpy(out, mine, count * t->size);
        if (rank == root_b)
            MPI_Reduce(RED_IN_PLACE(root_b, count * t->size, mine), out, c,
                       t->dt, ops[o], root_b, comm);
        else
            MPI_Reduce(mine, NULL, c, t->dt, ops[o], root_b, comm);
        if (rank == root_b)
            verify(t, o, ref, out, count, "Reduce in place", cname, root_b);
        made[RC_REDUCE] += count > 0;
    }
    free(mine);
    free(ref);
    free(out);
}

/* ---- user op: 2x2 matrix product modulo 2^32 ------------------------- */

typedef struct { uint32_t a, b, c, d; } mat_t;

static void matmul(const mat_t *x, const mat_t *y, mat_t *r)
{
    mat_t t = {x->a * y->a + x->b * y->c, x->a * y->b + x->b * y->d,
               x->c * y->a + x->d * y->c, x->c * y->b + x->d * y->d};
    *r = t;
}

static void mat_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    mat_t *x = in, *y = inout;
    for (int i = 0; i < *len; i++)
        matmul(&x[i], &y[i], &y[i]);  /* inout = in * inout */
}

static void mat_gen(int rank, unsigned seed, size_t j, mat_t *m)
{
    uint64_t h = hv(rank, seed, j), g = mix(h);
    *m = (mat_t){(uint32_t)h, (uint32_t)(h >> 32), (uint32_t)g,
                 (uint32_t)(g >> 32)};
}

static void user_case(MPI_Comm comm, const char *cname, MPI_Datatype mat_dt,
                      MPI_Op op, size_t count, int root)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    unsigned seed = ++seed_ctr;
    mat_t *mine = malloc((count + 1) * sizeof *mine),
          *ref = malloc((count + 1) * sizeof *ref),
          *out = malloc((count + 1) * sizeof *out);
    for (size_t j = 0; j < count; j++) {
        mat_gen(rank, seed, j, &mine[j]);
        mat_gen(0, seed, j, &ref[j]);
        for (int r = 1; r < p; r++) {
            mat_t x;
            mat_gen(r, seed, j, &x);
            matmul(&ref[j], &x, &ref[j]);  /* M_0 M_1 ... in rank order */
        }
    }
    int c = (int)count;
    size_t nb = count * sizeof *out;
    if (root < 0) {
        MPI_Allreduce(mine, out, c, mat_dt, op, comm);
        MPIT_CHECK(memcmp(out, ref, nb) == 0, "user op Allreduce on %s, count "
                   "%zu: not the rank-ordered product", cname, count);
        memcpy(out, mine, nb);
        MPI_Allreduce(MPI_IN_PLACE, out, c, mat_dt, op, comm);
        MPIT_CHECK(memcmp(out, ref, nb) == 0, "user op Allreduce in place on "
                   "%s, count %zu: not the rank-ordered product", cname,
                   count);
        made[RC_ALLREDUCE] += 2;
    } else {
        MPI_Reduce(mine, out, c, mat_dt, op, root, comm);
        if (rank == root)
            MPIT_CHECK(memcmp(out, ref, nb) == 0, "user op Reduce on %s, "
                       "count %zu, root %d: not the rank-ordered product",
                       cname, count, root);
        memcpy(out, mine, nb);
        MPI_Reduce(rank == root ? RED_IN_PLACE(root, nb, mine) : (void *)mine, out, c,
                   mat_dt, op, root, comm);
        if (rank == root)
            MPIT_CHECK(memcmp(out, ref, nb) == 0, "user op Reduce in place "
                       "on %s, count %zu, root %d: not the rank-ordered "
                       "product", cname, count, root);
        made[RC_REDUCE] += 2;
    }
    free(mine);
    free(ref);
    free(out);
}

/* ---- cases numacoll must hand to the previous component --------------- */

static void int_sum_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    /* Called by the fallback on the vector type's elements: *dt is the
     * vector, one element is 2 ints 2 apart. */
    (void)dt;
    int *x = in, *y = inout;
    for (int i = 0; i < *len; i++) {
        y[4 * i] += x[4 * i];
        y[4 * i + 2] += x[4 * i + 2];
    }
}

static unsigned long long fb_made[RC_N];

/* The vector user op's result: the even ints summed over the ranks, the
 * odd ones (holes) this rank's own. */
static void vec_check(const int *r, int rank, int p, const char *what,
                      const char *cname)
{
    for (int j = 0; j < 8; j++) {
        int want = (j % 2 == 0) ? 10 * p * (p - 1) / 2 + j * p
                                : rank * 10 + j;
        MPIT_CHECK(r[j] == want, "vector user op %s on %s: element %d is %d, "
                   "want %d", what, cname, j, r[j], want);
    }
}

static void fallback_cases(MPI_Comm comm, const char *cname)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);

    /* Complex: served by the core since it has complex types (the
     * complex types' own test is reduce_types). */
    double complex z[3], zr[3];
    for (int j = 0; j < 3; j++)
        z[j] = (rank + 1) + j * I;
    MPI_Allreduce(z, zr, 3, MPI_C_DOUBLE_COMPLEX, MPI_SUM, comm);
    bool ok = true;
    for (int j = 0; j < 3; j++)
        ok &= creal(zr[j]) == p * (p + 1) / 2.0 && cimag(zr[j]) == (double)j * p;
    MPIT_CHECK(ok, "complex Allreduce on %s: wrong sum", cname);
    made[RC_ALLREDUCE]++;

    /* A user op on a vector with holes (2 ints, stride 2, extent 4 ints). */
    MPI_Datatype vec, vr;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 4 * (MPI_Aint)sizeof(int), &vr);
    MPI_Type_commit(&vr);
    MPI_Op op;
    MPI_Op_create(int_sum_op, 1, &op);
    int v[8], r[8];
    for (int j = 0; j < 8; j++)
        v[j] = r[j] = rank * 10 + j;
    MPI_Reduce(v, r, 2, vr, op, p - 1, comm);
    if (rank == p - 1)
        vec_check(r, rank, p, "Reduce", cname);
    fb_made[RC_REDUCE_FB]++;
    for (int j = 0; j < 8; j++)
        v[j] = r[j] = rank * 10 + j;
    MPI_Allreduce(v, r, 2, vr, op, comm);
    vec_check(r, rank, p, "Allreduce", cname);
    fb_made[RC_ALLREDUCE_FB]++;
    MPI_Op_free(&op);
    MPI_Type_free(&vr);
    MPI_Type_free(&vec);
}

/* ---- all cases on one communicator ----------------------------------- */

static void on_comm(MPI_Comm comm, const char *cname, MPI_Datatype mat_dt,
                    MPI_Op mat_op_h)
{
    int p;
    MPI_Comm_size(comm, &p);
    static const size_t counts[] = {0, 1, 7, 5000};
    unsigned turn = 0;

    for (int ti = 0; ti < NTYPES + 2; ti++) {
        const tdesc_t *t = ti < NTYPES ? &types[ti] : &extra_pairs[ti - NTYPES];
        for (int o = 0; o < O_N; o++) {
            if (!applies(t, (opk_t)o))
                continue;
            for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
                turn++;
                run_case(comm, cname, t, (opk_t)o, counts[k],
                         (int)(turn % (unsigned)p),
                         (int)((turn + 1) % (unsigned)p), true);
            }
        }
    }

    /* Every root, for one type of each family. */
    const tdesc_t *every[] = {&types[13] /* int */, &types[20] /* double */,
                              &types[24] /* double_int */};
    const opk_t every_op[] = {O_SUM, O_MAX, O_MINLOC};
    static const size_t every_counts[] = {1, 7, 5000};
    for (int e = 0; e < 3; e++)
        for (size_t k = 0; k < 3; k++)
            for (int root = 0; root < p; root++)
                run_case(comm, cname, every[e], every_op[e], every_counts[k],
                         root, root, false);

    /* 1<<20 doubles (8 MiB): several reduce-scatter/allgather rounds. */
    run_case(comm, cname, &types[20], O_SUM, (size_t)1 << 20, p - 1, 0, true);
    run_case(comm, cname, &types[20], O_MAX, (size_t)1 << 20, -1, -1, true);

    /* The non-commutative user op, every root. */
    static const size_t ucounts[] = {1, 7, 5000};
    for (size_t k = 0; k < 3; k++) {
        user_case(comm, cname, mat_dt, mat_op_h, ucounts[k], -1);
        for (int root = 0; root < p; root++)
            user_case(comm, cname, mat_dt, mat_op_h, ucounts[k], root);
    }

    fallback_cases(comm, cname);
}

int main(int argc, char **argv)
{
    mpit_init(&argc, &argv, "reduce_ops");
    mpit_named_open(&rc, rc_names, RC_N);
    types_init();
    extra_pairs[0] = (tdesc_t){"short_int", MPI_SHORT_INT, K_PAIR,
                               sizeof(p_short_int), 4};
    extra_pairs[1] = (tdesc_t){"long_double_int", MPI_LONG_DOUBLE_INT,
                               K_PAIR, sizeof(p_long_double_int), 5};
    red_ops_init();

    MPI_Datatype mat_dt;
    MPI_Type_contiguous(4, MPI_UINT32_T, &mat_dt);
    MPI_Type_commit(&mat_dt);
    MPI_Op mat_op_h;
    MPI_Op_create(mat_op, 0, &mat_op_h);

    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, mpit_size - 1 - mpit_rank, &rev);

    unsigned long long before[RC_N], after[RC_N];
    rc_read(before);
    on_comm(MPI_COMM_WORLD, "world", mat_dt, mat_op_h);
    on_comm(rev, "reversed split", mat_dt, mat_op_h);
    rc_read(after);

    if (mpit_expect == MPIT_EXPECT_CORE) {
        MPIT_CHECK(rc.present, "numacoll's Reduce counters are missing "
                   "(component not loaded?)");
        const char *what[RC_N] = {"Reduce", "Allreduce", "Reduce fallback",
                                  "Allreduce fallback"};
        for (int i = 0; i < RC_N && rc.present; i++) {
            unsigned long long want = made[i] + fb_made[i];
            MPIT_CHECK(after[i] - before[i] == want, "%s: numacoll counted "
                       "%llu calls, expected %llu", what[i],
                       after[i] - before[i], want);
        }
    }

    MPI_Comm_free(&rev);
    MPI_Op_free(&mat_op_h);
    MPI_Type_free(&mat_dt);
    mpit_named_close(&rc);
    return mpit_finish();
}
