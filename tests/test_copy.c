/*
 * The copy layer (coll/copy.h), suite "copy": every variant copies byte for
 * byte and writes nothing outside the destination, at every source and
 * destination offset 0..63 from a 64-byte boundary (the ones an
 * application's heap buffer can have against 64-byte aligned staging), for
 * every length 0..300 and every length of a window above 1 KiB (where the
 * vector loops run today: their head, tail and 128-byte body meet at every
 * residue there), then for selected lengths up to 1 MiB and beyond at a
 * sparse set of offsets; names, lookup, the variant picked per message
 * size, and the instruction set reported.
 *
 * Checking: the destination arena is filled with bytes that have the high
 * bit set and the source with bytes that have it clear, so a byte the copy
 * missed can never look right; after each copy the whole arena is compared
 * with its expected image (guards before and after, the copied bytes in
 * between) and the copied range is then restored, so one arena serves
 * millions of copies at the cost of a few memcmp calls each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/copy.h"
#include "nct.h"

/* a large message: 4 MiB */
#define BIG ((size_t)4 << 20)
#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define GUARD 64   /* bytes checked on each side of the widest offset */
#define OFFS 64    /* offsets 0..63 */

/* The offsets every test uses at least: both ends of a 16/32/64-byte
 * vector, one byte past a boundary, word alignment. */
static const size_t sparse_offs[] = {0, 1, 8, 15, 16, 31, 32, 48, 63};
#define NSPARSE (sizeof sparse_offs / sizeof *sparse_offs)

static uint64_t rng_state = 0x243f6a8885a308d3ULL;

static unsigned char next_byte(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned char)(rng_state >> 32);
}

/* A source of len bytes (+ OFFS for the offsets) and a destination arena
 * with its expected image outside the copied range. */
typedef struct arena {
    unsigned char *src;      /* OFFS + len bytes, high bit clear          */
    unsigned char *dst;      /* GUARD + OFFS + len + GUARD bytes          */
    unsigned char *guard;    /* what dst holds outside a copy             */
    unsigned char *src_ref;  /* what src must still hold after copies     */
    size_t len, size;        /* longest copy; bytes of dst                */
} arena_t;

static int arena_init(arena_t *a, size_t len)
{
    a->len = len;
    a->size = GUARD + OFFS + len + GUARD;
    /* page-aligned: offset k is k bytes past a 64-byte (and page)
     * boundary, as the layer's alignment logic sees it */
    size_t srclen = (OFFS + len + 4095) / 4096 * 4096;
    size_t dstlen = (a->size + 4095) / 4096 * 4096;
    a->src = aligned_alloc(4096, srclen);
    a->src_ref = malloc(OFFS + len);
    a->dst = aligned_alloc(4096, dstlen);
    a->guard = malloc(a->size);
    if (!a->src || !a->src_ref || !a->dst || !a->guard)
        return -1;
    for (size_t i = 0; i < OFFS + len; i++)
        a->src[i] = next_byte() & 0x7f;
    memcpy(a->src_ref, a->src, OFFS + len);
    for (size_t i = 0; i < a->size; i++)
        a->guard[i] = next_byte() | 0x80;
    memcpy(a->dst, a->guard, a->size);
    return 0;
}

static void arena_free(arena_t *a)
{
    free(a->src);
    free(a->src_ref);
    free(a->dst);
    free(a->guard);
}

typedef struct stats {
    unsigned long copies, failures;
} stats_t;

/* Copy n bytes from src + soff to the arena's dst + GUARD + doff with
 * variant kind; check and restore. Returns 0 when exact. */
static int copy_check(arena_t *a, int kind, size_t soff, size_t doff,
                      size_t n, stats_t *st)
{
    unsigned char *d = a->dst + GUARD + doff;
    const unsigned char *s = a->src + soff;
    nc__copy(kind, d, s, n);
    st->copies++;
    /* everything before the copy, 2 * GUARD bytes after it: a long arena
     * also serves short copies, and comparing all of its tail each time
     * would cost far more than the copy */
    size_t before = GUARD + doff, after = before + n;
    size_t tail = a->size - after < 2 * GUARD ? a->size - after : 2 * GUARD;
    if (memcmp(a->dst, a->guard, before) == 0 && memcmp(d, s, n) == 0 &&
        memcmp(a->dst + after, a->guard + after, tail) == 0) {
        memcpy(d, a->guard + before, n);
        return 0;
    }
    if (st->failures++ < 8) {
        /* the first wrong byte, relative to the destination */
        long at = 0;
        unsigned got = 0, want = 0;
        for (size_t i = 0; i < a->size; i++) {
            unsigned char w = i >= before && i < after ? s[i - before]
                                                       : a->guard[i];
            if (a->dst[i] != w) {
                at = (long)i - (long)before;
                got = a->dst[i];
                want = w;
                break;
            }
        }
        fprintf(stderr, "\ncopy %s (%s): %zu bytes, src offset %zu, dst "
                "offset %zu: byte %ld (%s) is 0x%02x, want 0x%02x\n",
                nc__copy_name(kind), nc__copy_isa(), n, soff, doff, at,
                at < 0 ? "before dst" : (size_t)at >= n ? "after dst"
                                                        : "inside",
                got, want);
    }
    memcpy(a->dst, a->guard, a->size);
    return 1;
}

/* Every length in [lo, hi] at every offset pair of offs x offs. */
static void sweep(arena_t *a, int kind, size_t lo, size_t hi,
                  const size_t *offs, size_t noffs, stats_t *st)
{
    for (size_t n = lo; n <= hi; n++)
        for (size_t i = 0; i < noffs; i++)
            for (size_t j = 0; j < noffs; j++)
                copy_check(a, kind, offs[i], offs[j], n, st);
}

static size_t all_offs[OFFS];

static void init_all_offs(void)
{
    for (size_t i = 0; i < OFFS; i++)
        all_offs[i] = i;
}

/* The lengths just above 1 KiB: today's switch from memcpy to the vector
 * loops (copy.c) sits at 1 KiB; the window starts below it so that a move
 * of the switch still leaves both sides tested, and is 128 + 2 * 32 + more
 * bytes wide so that every residue of the unrolled body and every head
 * skip occurs. */
#define WIN_LO ((size_t)1000)
#define WIN_HI ((size_t)1320)

static const int kinds[] = {NC_COPY_AUTO, NC_COPY_LIBC, NC_COPY_VEC,
                            NC_COPY_NT, NC_COPY_ADAPT};
#define NKINDS (sizeof kinds / sizeof *kinds)

/* Lengths 0..300, every offset pair 0..63, every variant. */
static void test_short_all_offsets(void)
{
    init_all_offs();
    arena_t a;
    CU_ASSERT_EQUAL_FATAL(arena_init(&a, 300), 0);
    stats_t st = {0, 0};
    for (size_t k = 0; k < NKINDS; k++)
        sweep(&a, kinds[k], 0, 300, all_offs, OFFS, &st);
    CU_ASSERT_EQUAL(st.failures, 0);
    CU_ASSERT_EQUAL(st.copies, NKINDS * 301 * OFFS * OFFS);
    CU_ASSERT_EQUAL(memcmp(a.src, a.src_ref, OFFS + a.len), 0);
    arena_free(&a);
}

/* Lengths WIN_LO..WIN_HI: every offset pair for the vector variants (the
 * code whose stores depend on the destination's alignment), the sparse
 * pairs for libc and auto (which run the same code as memcpy and vec). */
static void test_window_all_offsets(void)
{
    init_all_offs();
    arena_t a;
    CU_ASSERT_EQUAL_FATAL(arena_init(&a, WIN_HI), 0);
    stats_t st = {0, 0};
    sweep(&a, NC_COPY_VEC, WIN_LO, WIN_HI, all_offs, OFFS, &st);
    sweep(&a, NC_COPY_NT, WIN_LO, WIN_HI, all_offs, OFFS, &st);
    sweep(&a, NC_COPY_AUTO, WIN_LO, WIN_HI, sparse_offs, NSPARSE, &st);
    sweep(&a, NC_COPY_LIBC, WIN_LO, WIN_HI, sparse_offs, NSPARSE, &st);
    CU_ASSERT_EQUAL(st.failures, 0);
    CU_ASSERT_EQUAL(memcmp(a.src, a.src_ref, OFFS + a.len), 0);
    arena_free(&a);
}

/* Lengths around every power of two from 1 KiB to 1 MiB (-1, 0, +1 and
 * odd ones past the vector widths), then 1 MiB + odd and 4 MiB + odd (what
 * auto streams), at the sparse offsets, every variant. */
static void test_long_lengths(void)
{
    size_t lens[64];
    size_t nl = 0;
    for (size_t p = KiB; p <= MiB; p *= 4) {
        lens[nl++] = p - 1;
        lens[nl++] = p;
        lens[nl++] = p + 1;
        lens[nl++] = p + 33;
        lens[nl++] = p + 127;
    }
    lens[nl++] = 12345;
    lens[nl++] = 300001;
    lens[nl++] = MiB + 63;
    lens[nl++] = 4 * MiB + 5;
    arena_t a;
    CU_ASSERT_EQUAL_FATAL(arena_init(&a, 4 * MiB + 5), 0);
    stats_t st = {0, 0};
    for (size_t k = 0; k < NKINDS; k++)
        for (size_t l = 0; l < nl; l++) {
            /* the largest lengths at fewer offsets: they test the loops'
             * steady state, which the smaller ones reach as well */
            size_t no = lens[l] > MiB ? 4 : NSPARSE;
            sweep(&a, kinds[k], lens[l], lens[l], sparse_offs, no, &st);
        }
    CU_ASSERT_EQUAL(st.failures, 0);
    CU_ASSERT_EQUAL(memcmp(a.src, a.src_ref, OFFS + a.len), 0);
    arena_free(&a);
}

/* The variants nc__copy_pick hands the core, for messages small and
 * large, copy exactly too (the core never calls nc__copy with a kind it
 * did not get from nc__copy_pick). */
static void test_picked_variants(void)
{
    const size_t msgs[] = {0, 1, 8 * KiB, BIG - 1, BIG,
                           SIZE_MAX};
    arena_t a;
    CU_ASSERT_EQUAL_FATAL(arena_init(&a, 64 * KiB + 3), 0);
    stats_t st = {0, 0};
    for (size_t k = 0; k < NKINDS; k++)
        for (size_t m = 0; m < sizeof msgs / sizeof *msgs; m++) {
            int kind = nc__copy_pick(kinds[k], msgs[m]);
            CU_ASSERT_PTR_NOT_NULL(nc__copy_name(kind));
            sweep(&a, kind, 0, 40, sparse_offs, NSPARSE, &st);
            sweep(&a, kind, 1020, 1100, sparse_offs, 4, &st);
            sweep(&a, kind, 64 * KiB + 3, 64 * KiB + 3, sparse_offs, NSPARSE,
                  &st);
        }
    CU_ASSERT_EQUAL(st.failures, 0);
    arena_free(&a);
}

/* auto is vec at every size (the table asks for nt where it wins); nt for
 * a message of 0 bytes (copies into the segment) is vec; libc and vec stay
 * themselves. */
static void test_pick(void)
{
    CU_ASSERT_EQUAL(nc__copy_pick(NC_COPY_AUTO, 0), NC_COPY_VEC);
    CU_ASSERT_EQUAL(nc__copy_pick(NC_COPY_AUTO, 1), NC_COPY_VEC);
    CU_ASSERT_EQUAL(nc__copy_pick(NC_COPY_AUTO, BIG - 1),
                    NC_COPY_VEC);
    CU_ASSERT_EQUAL(nc__copy_pick(NC_COPY_AUTO, BIG), NC_COPY_VEC);
    CU_ASSERT_EQUAL(nc__copy_pick(NC_COPY_AUTO, SIZE_MAX), NC_COPY_VEC);
    CU_ASSERT_EQUAL(nc__copy_pick(NC_COPY_NT, 0), NC_COPY_VEC);
    CU_ASSERT_EQUAL(nc__copy_pick(NC_COPY_NT, 1), NC_COPY_NT);
    CU_ASSERT_EQUAL(nc__copy_pick(NC_COPY_NT, SIZE_MAX), NC_COPY_NT);
    /* ntall streams into the segment too */
    CU_ASSERT_EQUAL(nc__copy_pick(NC_COPY_NTALL, 0), NC_COPY_NT);
    CU_ASSERT_EQUAL(nc__copy_pick(NC_COPY_NTALL, 1), NC_COPY_NT);
    /* adapt and ntadapt choose into the segment; user buffers: vec, nt */
    CU_ASSERT_EQUAL(nc__copy_pick(NC_COPY_ADAPT, 0), NC_COPY_ADAPT);
    CU_ASSERT_EQUAL(nc__copy_pick(NC_COPY_ADAPT, BIG), NC_COPY_VEC);
    CU_ASSERT_EQUAL(nc__copy_pick(NC_COPY_NTADAPT, 0), NC_COPY_ADAPT);
    CU_ASSERT_EQUAL(nc__copy_pick(NC_COPY_NTADAPT, 1), NC_COPY_NT);
    const size_t msgs[] = {0, 1, BIG, SIZE_MAX};
    for (size_t m = 0; m < sizeof msgs / sizeof *msgs; m++) {
        CU_ASSERT_EQUAL(nc__copy_pick(NC_COPY_LIBC, msgs[m]), NC_COPY_LIBC);
        CU_ASSERT_EQUAL(nc__copy_pick(NC_COPY_VEC, msgs[m]), NC_COPY_VEC);
        /* never auto: nc__copy takes a variant pick returned */
        for (int k = 0; k < NC_COPY_COUNT; k++)
            CU_ASSERT_NOT_EQUAL(nc__copy_pick(k, msgs[m]), NC_COPY_AUTO);
    }
}

/* Names and lookup are each other's inverse; lookup takes a length (the
 * tuning parser hands it a token inside a line), so prefixes, extensions
 * and other cases are not names. */
static void test_names(void)
{
    static const char *const want[NC_COPY_COUNT] = {
        [NC_COPY_AUTO] = "auto", [NC_COPY_LIBC] = "libc",
        [NC_COPY_VEC] = "vec", [NC_COPY_NT] = "nt", [NC_COPY_NTALL] = "ntall",
        [NC_COPY_ADAPT] = "adapt", [NC_COPY_NTADAPT] = "ntadapt"};
    for (int k = 0; k < NC_COPY_COUNT; k++) {
        const char *s = nc__copy_name(k);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        CU_ASSERT_STRING_EQUAL(s, want[k]);
        CU_ASSERT_EQUAL(nc__copy_find(s, strlen(s)), k);
        CU_ASSERT_EQUAL(nc__copy_find(s, strlen(s) - 1), -1);
        char longer[16];
        snprintf(longer, sizeof longer, "%sx", s);
        CU_ASSERT_EQUAL(nc__copy_find(longer, strlen(longer)), -1);
        /* a token cut out of a line: the length, not the NUL, ends it */
        snprintf(longer, sizeof longer, "%s k=2", s);
        CU_ASSERT_EQUAL(nc__copy_find(longer, strlen(s)), k);
    }
    CU_ASSERT_PTR_NULL(nc__copy_name(-1));
    CU_ASSERT_PTR_NULL(nc__copy_name(NC_COPY_COUNT));
    CU_ASSERT_EQUAL(nc__copy_find("", 0), -1);
    CU_ASSERT_EQUAL(nc__copy_find("VEC", 3), -1);
    CU_ASSERT_EQUAL(nc__copy_find("bogus", 5), -1);
    CU_ASSERT_EQUAL(NC_COPY_AUTO, 0);   /* a zeroed rule means auto */
}

/* adapt and its Allreduce twin: every copy exact, whichever store it
 * chose; in a run of copies of one size class each tries both (off
 * x86-64 there is one), and keeps coming back to the one it left
 * (retries at most 512 copies apart); the two keep records of their own. */
static void test_adapt(void)
{
    arena_t a;
    CU_ASSERT_EQUAL_FATAL(arena_init(&a, 64 * KiB + 3), 0);
    stats_t st = {0, 0};
    static const int ks[] = {NC_COPY_ADAPT, NC_COPY_ADAPT_READ};
    for (int k = 0; k < 2; k++) {
        unsigned long before[2], after[2], other0[2], other1[2];
        nc__copy_adapt_count(ks[k], 8 * KiB, before);
        nc__copy_adapt_count(ks[!k], 8 * KiB, other0);
        for (int i = 0; i < 1200; i++) {
            size_t len = 8 * KiB + (size_t)(i % 7) * 131;   /* one class */
            sweep(&a, ks[k], len, len, sparse_offs, 1, &st);
        }
        nc__copy_adapt_count(ks[k], 8 * KiB, after);
        nc__copy_adapt_count(ks[!k], 8 * KiB, other1);
        CU_ASSERT_EQUAL(st.failures, 0);
        CU_ASSERT_EQUAL(after[0] + after[1] - before[0] - before[1], 1200);
        CU_ASSERT_EQUAL(other1[0] + other1[1], other0[0] + other0[1]);
        if (strcmp(nc__copy_isa(), "memcpy") != 0) {
            CU_ASSERT(after[0] - before[0] >= 2);
            CU_ASSERT(after[1] - before[1] >= 2);
        }
        /* below 4 KiB nothing is timed or counted */
        nc__copy_adapt_count(ks[k], 2 * KiB, before);
        sweep(&a, ks[k], 2 * KiB, 4 * KiB - 1, sparse_offs, 2, &st);
        nc__copy_adapt_count(ks[k], 2 * KiB, after);
        CU_ASSERT_EQUAL(after[0] + after[1], before[0] + before[1]);
        CU_ASSERT_EQUAL(st.failures, 0);
    }
    arena_free(&a);
}

/* Whole-call adapt (nc__copy_call_pick) on synthetic call times: the
 * variant whose calls cost less takes over and the other is still
 * retried now and then; each power-of-two class keeps its own record;
 * below NC_COPY_CALL_MIN the first class. */
static void calls(size_t nbytes, int n, uint64_t vec_cycles,
                  uint64_t nt_cycles, unsigned long used[2])
{
    unsigned long before[2];
    nc__copy_call_count(nbytes, before);
    for (int i = 0; i < n; i++) {
        int k = nc__copy_call_pick(nbytes);
        CU_ASSERT(k == NC_COPY_VEC || k == NC_COPY_NT);
        nc__copy_call_note(nbytes, k, k == NC_COPY_NT ? nt_cycles : vec_cycles);
    }
    nc__copy_call_count(nbytes, used);
    used[0] -= before[0];
    used[1] -= before[1];
}

static void test_call_adapt(void)
{
    unsigned long a[2], b[2], c[2], d[2];
    calls(16 * MiB, 400, 3000000, 1000000, a);   /* streaming wins */
    CU_ASSERT_EQUAL(a[0] + a[1], 400);
    nc__copy_call_count(16 * MiB, c);
    calls(64 * MiB, 400, 1000000, 3000000, b);   /* plain wins */
    CU_ASSERT_EQUAL(b[0] + b[1], 400);
    nc__copy_call_count(16 * MiB, d);   /* untouched by the other class */
    CU_ASSERT(c[0] == d[0] && c[1] == d[1]);
    if (strcmp(nc__copy_isa(), "memcpy") != 0) {
        CU_ASSERT(a[1] > 4 * a[0]);
        CU_ASSERT(a[0] >= 2);   /* retried */
        CU_ASSERT(b[0] > 4 * b[1]);
        CU_ASSERT(b[1] >= 2);
        /* the winner changes: the 16 MiB class turns to plain at its
         * next retry, at most 512 calls on */
        calls(16 * MiB, 1200, 1000000, 3000000, a);
        CU_ASSERT(a[0] > a[1]);
    } else {
        CU_ASSERT_EQUAL(a[1] + b[1], 0);
    }
    /* 1 MiB (below the minimum) and 2 MiB share the first class */
    nc__copy_call_count(MiB, c);
    nc__copy_call_count(2 * MiB, d);
    CU_ASSERT(c[0] == d[0] && c[1] == d[1]);
}

static void test_isa(void)
{
    const char *isa = nc__copy_isa();
    CU_ASSERT_PTR_NOT_NULL_FATAL(isa);
    CU_ASSERT(isa[0] != '\0');
    CU_ASSERT(strcmp(isa, "avx2") == 0 || strcmp(isa, "sse2") == 0 ||
              strcmp(isa, "memcpy") == 0);
    CU_ASSERT_STRING_EQUAL(nc__copy_isa(), isa);   /* stable */
}

int nct_register_copy(void)
{
    static const nct_test_t tests[] = {
        {"lengths 0..300, every offset pair, every variant",
         test_short_all_offsets},
        {"lengths 1000..1320, every offset pair (vec, nt)",
         test_window_all_offsets},
        {"lengths up to 4 MiB + odd, sparse offsets", test_long_lengths},
        {"variants nc__copy_pick returns copy exactly", test_picked_variants},
        {"nc__copy_pick: auto by size, nt of 0 bytes", test_pick},
        {"names and lookup round trip", test_names},
        {"adapt and its Allreduce twin: exact, both stores, own records",
         test_adapt},
        {"whole-call adapt: the cheaper calls' variant, per class",
         test_call_adapt},
        {"instruction set reported", test_isa},
        {NULL, NULL},
    };
    return nct_add_suite("copy", tests);
}
