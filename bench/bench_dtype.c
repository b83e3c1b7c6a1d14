/*
 * --dtype: the element types the reductions are timed with, as the bench
 * generates and checks them (docs/bench.md, "Element types").
 *
 * A backend names its types (standalone: the core's numacoll_dtype_name(),
 * MPI: its own table) and gives their size; the layout comes from the name
 * alone: a scalar (int8 ... uint64, float, double, long_double, float128),
 * complex_R (two R, R real), B_int or 2B (a MINLOC pair: value B, then the
 * index). A
 * new core type that follows these names is picked up without bench
 * changes; the size the backend reports must agree with the layout.
 *
 * Data: SUM on integers uses full-width values (sums wrap, exactly); on
 * reals small integers, so that every order of additions gives the same
 * bits; MINLOC pairs small values with frequent ties, so the index rule
 * (the lower index wins) is checked too.
 */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"

typedef struct scalar {
    const char *name;
    size_t size, align;
    int real;
} scalar_t;

static const scalar_t scalars[] = {
    {"int8", 1, 1, 0},      {"uint8", 1, 1, 0},
    {"int16", 2, 2, 0},     {"uint16", 2, 2, 0},
    {"int32", 4, 4, 0},     {"uint32", 4, 4, 0},
    {"int64", 8, 8, 0},     {"uint64", 8, 8, 0},
    {"short", sizeof(short), _Alignof(short), 0},
    {"int", sizeof(int), _Alignof(int), 0},
    {"long", sizeof(long), _Alignof(long), 0},
    {"float", sizeof(float), _Alignof(float), 1},
    {"double", sizeof(double), _Alignof(double), 1},
    {"long_double", sizeof(long double), _Alignof(long double), 1},
    /* binary128 (real 2: its own arithmetic, where the compiler has it) */
    {"float128", 16, 16, 2},
};

static const scalar_t *scalar(const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++)
        if (strlen(scalars[i].name) == len &&
            strncmp(scalars[i].name, name, len) == 0)
            return &scalars[i];
    return NULL;
}

/* Bytes of a value that carry it: x87's long double is 10 in 16, and
 * what a kernel leaves in the padding is not part of the result. */
static size_t significant(const scalar_t *s)
{
    if (s->real == 1 && s->size == sizeof(long double) && LDBL_MANT_DIG == 64)
        return 10;
    return s->size;
}

static void set_comp(ncb_dtype_t *d, int k, const scalar_t *s, size_t off)
{
    d->comp[k].off = off;
    d->comp[k].size = s->size;
    d->comp[k].sig = significant(s);
    d->comp[k].real = s->real;
}

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

int ncb_dtype_layout(const char *name, size_t size, ncb_dtype_t *d)
{
    memset(d, 0, sizeof *d);
    if (strlen(name) >= sizeof d->name)
        return -1;
    snprintf(d->name, sizeof d->name, "%s", name);
    const size_t n = strlen(name);
    const scalar_t *s = NULL, *v = NULL, *ix = NULL;
    if (strncmp(name, "complex_", 8) == 0) {
        s = scalar(name + 8, n - 8);
        if (!s || !s->real)
            return -1;
        d->ncomp = 2;
        set_comp(d, 0, s, 0);
        set_comp(d, 1, s, s->size);
        d->size = 2 * s->size;
        d->align = s->align;
    } else if (name[0] == '2') {
        v = ix = scalar(name + 1, n - 1);
    } else if (n > 4 && strcmp(name + n - 4, "_int") == 0) {
        v = scalar(name, n - 4);
        ix = scalar("int", 3);
    } else {
        s = scalar(name, n);
        if (!s)
            return -1;
        d->ncomp = 1;
        set_comp(d, 0, s, 0);
        d->size = s->size;
        d->align = s->align;
    }
    if (v || ix) {
        if (!v || !ix)
            return -1;
        /* as C lays out struct { V v; I i; } */
        size_t off = round_up(v->size, ix->align);
        d->align = v->align > ix->align ? v->align : ix->align;
        d->size = round_up(off + ix->size, d->align);
        d->ncomp = 2;
        d->minloc = 1;
        set_comp(d, 0, v, 0);
        set_comp(d, 1, ix, off);
    }
    return d->size == size ? 0 : -1;
}

/* ---- values ------------------------------------------------------------ */

#define RANK_STEP 0x9e3779b97f4a7c15ULL

/* The per-element seed of component k: mixed for the checked call, a
 * multiply-add for the stamps of timed calls (inside the timed loop). */
static inline uint64_t base_of(uint64_t seed, size_t e, int k, int stamp)
{
    uint64_t j = (uint64_t)e * 2 + (uint64_t)k;
    return stamp ? (seed + 1) * 0x9e3779b97f4a7c15ULL + j * 0xd1b54a32d192ed03ULL
                 : ncb_mix(seed, j);
}

/* A small integer in [-256, 255] from a seed: exact in every real type. */
static inline int64_t small_of(uint64_t b)
{
    return (int64_t)(b % 512) - 256;
}

static void put_int(unsigned char *p, size_t size, uint64_t v)
{
    memcpy(p, &v, size);   /* little endian: the low bytes (wraps) */
}

static void put_real(unsigned char *p, int kind, size_t size, size_t sig,
                     int64_t v)
{
    if (kind == 2) {
#if defined(__SIZEOF_FLOAT128__) && !defined(__clang__)
        __float128 x = (__float128)v;
#else
        long double x = (long double)v;   /* binary128 itself there */
#endif
        memcpy(p, &x, 16);
    } else if (size == sizeof(float)) {
        float x = (float)v;
        memcpy(p, &x, sizeof x);
    } else if (size == sizeof(double)) {
        double x = (double)v;
        memcpy(p, &x, sizeof x);
    } else {
        long double x = (long double)v;
        memcpy(p, &x, sig);
    }
}

/* Component c of an element: real (the small integer rv) or integer
 * (the bits iv, wrapping to its width). */
static void put_comp(unsigned char *el, const struct ncb_comp *c, int64_t rv,
                     uint64_t iv)
{
    if (c->real)
        put_real(el + c->off, c->real, c->size, c->sig, rv);
    else
        put_int(el + c->off, c->size, iv);
}

static void put_num(unsigned char *p, const struct ncb_comp *c, int64_t v)
{
    put_comp(p, c, v, (uint64_t)v);
}

/* MINLOC, the checked call: rank r's value (ties between ranks are
 * frequent) and index (one per rank, not in rank order). */
static inline int64_t loc_value(uint64_t b, int r)
{
    uint64_t h = (b >> 16) + (uint64_t)r * RANK_STEP;
    return small_of(b) + (int64_t)((h >> 62) % 3);
}

static inline int64_t loc_index(uint64_t b, int r)
{
    return (int64_t)((b >> 40) & 0xff) + (int64_t)(((unsigned)r * 37u) % 101u);
}

/* Σ_{r<n} (r & 255): the rank part of the real sums. */
static int64_t rank_part(int n)
{
    int64_t full = n / 256, rest = n % 256;
    return full * (255 * 256 / 2) + rest * (rest - 1) / 2;
}

void ncb_dt_put(const ncb_dtype_t *d, unsigned char *el, uint64_t seed,
                size_t e, int r, int stamp)
{
    if (d->minloc) {
        uint64_t b = base_of(seed, e, 0, stamp);
        if (stamp) {
            /* every rank the same value: the last rank's index wins */
            put_num(el, &d->comp[0], small_of(b));
            put_num(el, &d->comp[1], (int64_t)(b >> 48) + 4096 - r);
        } else {
            put_num(el, &d->comp[0], loc_value(b, r));
            put_num(el, &d->comp[1], loc_index(b, r));
        }
        return;
    }
    for (int k = 0; k < d->ncomp; k++) {
        uint64_t b = base_of(seed, e, k, stamp);
        put_comp(el, &d->comp[k], small_of(b) + (r & 255),
                 b + (uint64_t)r * RANK_STEP);
    }
}

void ncb_dt_expect(const ncb_dtype_t *d, unsigned char *el, uint64_t seed,
                   size_t e, int n, int stamp)
{
    if (d->minloc) {
        uint64_t b = base_of(seed, e, 0, stamp);
        int64_t v, ix;
        if (stamp) {
            v = small_of(b);
            ix = (int64_t)(b >> 48) + 4096 - (n - 1);
        } else {
            v = loc_value(b, 0);
            ix = loc_index(b, 0);
            for (int r = 1; r < n; r++) {
                int64_t x = loc_value(b, r), i = loc_index(b, r);
                if (x < v || (x == v && i < ix)) {
                    v = x;
                    ix = i;
                }
            }
        }
        put_num(el, &d->comp[0], v);
        put_num(el, &d->comp[1], ix);
        return;
    }
    for (int k = 0; k < d->ncomp; k++) {
        uint64_t b = base_of(seed, e, k, stamp);
        put_comp(el, &d->comp[k], small_of(b) * n + rank_part(n),
                 b * (uint64_t)n +
                     (uint64_t)n * (uint64_t)(n - 1) / 2 * RANK_STEP);
    }
}

int ncb_dt_same(const ncb_dtype_t *d, const unsigned char *a,
                const unsigned char *b)
{
    for (int k = 0; k < d->ncomp; k++)
        if (memcmp(a + d->comp[k].off, b + d->comp[k].off, d->comp[k].sig))
            return 0;
    return 1;
}

void ncb_dt_complement(const ncb_dtype_t *d, unsigned char *el)
{
    for (int k = 0; k < d->ncomp; k++)
        for (size_t i = 0; i < d->comp[k].sig; i++)
            el[d->comp[k].off + i] ^= 0xff;
}

int ncb_dt_has_real(const ncb_dtype_t *d)
{
    for (int k = 0; k < d->ncomp; k++)
        if (d->comp[k].real)
            return 1;
    return 0;
}

void ncb_dt_fill(const ncb_dtype_t *d, unsigned char *a, size_t len, int rank)
{
    /* the widest real of the type, back to back: any buffer aligned for
     * the type then reads valid numbers in its real parts (no NaN or
     * subnormal to slow a kernel down) and some bits in its integers */
    const struct ncb_comp *w = NULL;
    for (int k = 0; k < d->ncomp; k++)
        if (d->comp[k].real && (!w || d->comp[k].size > w->size))
            w = &d->comp[k];
    if (!w)
        return;
    for (size_t i = 0; i + w->size <= len; i += w->size)
        put_real(a + i, w->real, w->size, w->sig,
                 small_of(ncb_mix(0x51, i / w->size)) + (rank & 255));
}
