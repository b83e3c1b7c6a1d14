/*
 * The copy layer (see copy.h). The vector loops store to aligned
 * destination addresses and load unaligned: on current x86 cores an
 * unaligned load costs the same as an aligned one unless it splits a cache
 * line, while a split store costs two, so aligning the stores is what makes
 * the speed independent of the source's offset. Head and tail are one
 * unaligned vector each, overlapping the body.
 */
#include <stdint.h>
#include <string.h>

#include "coll/copy.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define NC_HAVE_X86 1
#else
#define NC_HAVE_X86 0
#endif

/* Below this glibc's memcpy uses vector moves, never `rep movsb`, and its
 * small-size paths beat any loop. */
#define SMALL 1024

/* adapt times copies from 4 KiB (2^12) on; below, the timing would cost
 * more than the choice could save */
#define ADAPT_MIN_LOG 12

/* Whole calls (nc__copy_call_pick): per power-of-two size from
 * NC_COPY_CALL_MIN, the last class taking everything larger. */
#define CALL_BUCKETS 8

static int call_class(size_t nbytes)
{
    int b = 0;
    for (size_t m = nbytes / NC_COPY_CALL_MIN; m > 1 && b < CALL_BUCKETS - 1;
         m >>= 1)
        b++;
    return b;
}

const char *nc__copy_name(int kind)
{
    static const char *const names[NC_COPY_COUNT] = {
#define X(id, name) name,
        NC_COPY_LIST(X)
#undef X
    };
    return kind >= 0 && kind < NC_COPY_COUNT ? names[kind] : NULL;
}

int nc__copy_find(const char *name, size_t len)
{
    for (int k = 0; k < NC_COPY_COUNT; k++) {
        const char *s = nc__copy_name(k);
        if (strlen(s) == len && memcmp(s, name, len) == 0)
            return k;
    }
    return -1;
}

#if NC_HAVE_X86

/* 32-byte vectors; nt: streaming stores. */
__attribute__((target("avx2"))) static void copy_avx2(unsigned char *d,
                                                       const unsigned char *s,
                                                       size_t n, int nt)
{
    const __m256i head = _mm256_loadu_si256((const __m256i *)s);
    const __m256i tail = _mm256_loadu_si256((const __m256i *)(s + n - 32));
    unsigned char *const dend = d + n - 32;
    size_t skip = 32 - ((uintptr_t)d & 31);   /* 1..32: first aligned store */
    _mm256_storeu_si256((__m256i *)d, head);
    d += skip;
    s += skip;
    n -= skip;
    /* the branch on nt is taken the same way every time: predicted */
    for (; n >= 128; n -= 128, d += 128, s += 128) {
        __m256i a = _mm256_loadu_si256((const __m256i *)s);
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + 32));
        __m256i c = _mm256_loadu_si256((const __m256i *)(s + 64));
        __m256i e = _mm256_loadu_si256((const __m256i *)(s + 96));
        if (nt) {
            _mm256_stream_si256((__m256i *)d, a);
            _mm256_stream_si256((__m256i *)(d + 32), b);
            _mm256_stream_si256((__m256i *)(d + 64), c);
            _mm256_stream_si256((__m256i *)(d + 96), e);
        } else {
            _mm256_store_si256((__m256i *)d, a);
            _mm256_store_si256((__m256i *)(d + 32), b);
            _mm256_store_si256((__m256i *)(d + 64), c);
            _mm256_store_si256((__m256i *)(d + 96), e);
        }
    }
    for (; n > 32; n -= 32, d += 32, s += 32)
        _mm256_store_si256((__m256i *)d, _mm256_loadu_si256((const __m256i *)s));
    _mm256_storeu_si256((__m256i *)dend, tail);
    /* streaming stores are weakly ordered: they must be globally visible
     * before the release store that announces the data */
    if (nt)
        _mm_sfence();
}

/* 16-byte vectors, SSE2 (every x86-64 CPU). */
static void copy_sse2(unsigned char *d, const unsigned char *s, size_t n,
                      int nt)
{
    const __m128i head = _mm_loadu_si128((const __m128i *)s);
    const __m128i tail = _mm_loadu_si128((const __m128i *)(s + n - 16));
    unsigned char *const dend = d + n - 16;
    size_t skip = 16 - ((uintptr_t)d & 15);
    _mm_storeu_si128((__m128i *)d, head);
    d += skip;
    s += skip;
    n -= skip;
    for (; n >= 64; n -= 64, d += 64, s += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)s);
        __m128i b = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + 48));
        if (nt) {
            _mm_stream_si128((__m128i *)d, a);
            _mm_stream_si128((__m128i *)(d + 16), b);
            _mm_stream_si128((__m128i *)(d + 32), c);
            _mm_stream_si128((__m128i *)(d + 48), e);
        } else {
            _mm_store_si128((__m128i *)d, a);
            _mm_store_si128((__m128i *)(d + 16), b);
            _mm_store_si128((__m128i *)(d + 32), c);
            _mm_store_si128((__m128i *)(d + 48), e);
        }
    }
    for (; n > 16; n -= 16, d += 16, s += 16)
        _mm_store_si128((__m128i *)d, _mm_loadu_si128((const __m128i *)s));
    _mm_storeu_si128((__m128i *)dend, tail);
    if (nt)
        _mm_sfence();
}

/* A load and a bit test of the table libgcc fills in a constructor, so
 * nothing to cache (and no unsynchronised cache for threads to race on). */
static int have_avx2(void)
{
    return __builtin_cpu_supports("avx2") != 0;
}

const char *nc__copy_isa(void) { return have_avx2() ? "avx2" : "sse2"; }

static void copy_vec(void *dst, const void *src, size_t n, int nt)
{
    if (have_avx2())
        copy_avx2(dst, src, n, nt);
    else
        copy_sse2(dst, src, n, nt);
}

/*
 * adapt (copy.h). Per thread, so no shared state and no atomics; per
 * power-of-two size from 4 KiB, since whether readers still hold the lines
 * depends on how much a call writes. Costs are cycles per KiB, a running
 * average (weight 1/4) for the choice in use; a retry of the other choice
 * replaces its estimate (the old one is stale by then) and takes over when
 * it is at least 1/8 cheaper, the margin keeping one noisy sample from
 * flipping the choice back and forth.
 */
#define ADAPT_BUCKETS 12          /* 4 KiB .. 8 MiB and larger */
#define ADAPT_RETRY_MIN 8
#define ADAPT_RETRY_MAX 512

typedef struct {
    uint64_t cost[2];             /* [0] vec, [1] streaming; 0: unknown */
    unsigned long used[2];        /* copies made with each */
    unsigned since, every;
    int cur;
} adapt_t;

/* [0] adapt, [1] NC_COPY_ADAPT_READ */
static _Thread_local adapt_t adapt_state[2][ADAPT_BUCKETS];

static adapt_t *adapt_of(int kind, size_t n)
{
    int b = 0;
    for (size_t m = n >> (ADAPT_MIN_LOG + 1); m && b < ADAPT_BUCKETS - 1;
         m >>= 1)
        b++;
    return &adapt_state[kind == NC_COPY_ADAPT_READ][b];
}

void nc__copy_adapt_count(int kind, size_t n, unsigned long used[2])
{
    const adapt_t *a = adapt_of(kind, n);
    used[0] = a->used[0];
    used[1] = a->used[1];
}

/* The choice for a's next sample: its current one, or now and then (or
 * while it has none) the other. */
static int adapt_arm(adapt_t *a)
{
    if (!a->every)
        a->every = ADAPT_RETRY_MIN;
    int arm = a->cur;
    if (!a->cost[arm ^ 1] || ++a->since >= a->every) {
        arm ^= 1;
        a->since = 0;
    }
    a->used[arm]++;
    return arm;
}

/* A sample of arm: dt cycles for n bytes, times weight. */
static void adapt_note(adapt_t *a, int arm, uint64_t dt, size_t n,
                       unsigned weight)
{
    /* a counter that went backwards (another CPU's, unsynchronised) or a
     * copy stalled for long: no sample */
    if (dt >> 40)
        return;
    uint64_t x = dt * 1024 / n * weight;
    if (x == 0)
        x = 1;
    if (arm == a->cur) {
        /* a preempted copy counts as 4x the average at most */
        uint64_t c = a->cost[arm];
        if (c && x > 4 * c)
            x = 4 * c;
        a->cost[arm] = c ? c - c / 4 + x / 4 : x;
        return;
    }
    a->cost[arm] = x;
    if (a->cost[a->cur] && x < a->cost[a->cur] - a->cost[a->cur] / 8) {
        a->cur = arm;
        a->every = ADAPT_RETRY_MIN;
    } else if (a->cost[a->cur] && a->every < ADAPT_RETRY_MAX) {
        a->every *= 2;
    }
}

static void copy_adapt(int kind, void *dst, const void *src, size_t n)
{
    adapt_t *a = adapt_of(kind, n);
    const int arm = adapt_arm(a);
    const uint64_t t0 = __rdtsc();
    copy_vec(dst, src, n, arm);
    adapt_note(a, arm, __rdtsc() - t0, n,
               arm && kind == NC_COPY_ADAPT_READ ? 2 : 1);
}

static _Thread_local adapt_t call_state[CALL_BUCKETS];

static adapt_t *call_of(size_t nbytes)
{
    return &call_state[call_class(nbytes)];
}

int nc__copy_call_pick(size_t nbytes)
{
    return adapt_arm(call_of(nbytes)) ? NC_COPY_NT : NC_COPY_VEC;
}

uint64_t nc__copy_clock(void) { return __rdtsc(); }

void nc__copy_call_note(size_t nbytes, int kind, uint64_t cycles)
{
    adapt_note(call_of(nbytes), kind == NC_COPY_NT, cycles, nbytes, 1);
}

void nc__copy_call_count(size_t nbytes, unsigned long used[2])
{
    const adapt_t *a = call_of(nbytes);
    used[0] = a->used[0];
    used[1] = a->used[1];
}

#else /* not x86-64: the C library's copy is the portable fallback */

const char *nc__copy_isa(void) { return "memcpy"; }

static void copy_vec(void *dst, const void *src, size_t n, int nt)
{
    (void)nt;
    memcpy(dst, src, n);
}

/* no streaming stores to choose */
static _Thread_local unsigned long adapt_used[2];

void nc__copy_adapt_count(int kind, size_t n, unsigned long used[2])
{
    (void)n;
    used[0] = adapt_used[kind == NC_COPY_ADAPT_READ];
    used[1] = 0;
}

static void copy_adapt(int kind, void *dst, const void *src, size_t n)
{
    adapt_used[kind == NC_COPY_ADAPT_READ]++;
    memcpy(dst, src, n);
}

static _Thread_local unsigned long call_used[CALL_BUCKETS];

int nc__copy_call_pick(size_t nbytes)
{
    call_used[call_class(nbytes)]++;
    return NC_COPY_VEC;
}

uint64_t nc__copy_clock(void) { return 0; }

void nc__copy_call_note(size_t nbytes, int kind, uint64_t cycles)
{
    (void)nbytes, (void)kind, (void)cycles;
}

void nc__copy_call_count(size_t nbytes, unsigned long used[2])
{
    used[0] = call_used[call_class(nbytes)];
    used[1] = 0;
}

#endif

int nc__copy_pick(int kind, size_t msg)
{
    switch (kind) {
    case NC_COPY_AUTO:
        return NC_COPY_VEC;
    case NC_COPY_NT:
        return msg == 0 ? NC_COPY_VEC : NC_COPY_NT;
    case NC_COPY_NTALL:
        return NC_COPY_NT;
    case NC_COPY_ADAPT:
        return msg == 0 ? NC_COPY_ADAPT : NC_COPY_VEC;
    case NC_COPY_NTADAPT:
        return msg == 0 ? NC_COPY_ADAPT : NC_COPY_NT;
    default:
        return kind;
    }
}

void nc__copy(int kind, void *dst, const void *src, size_t n)
{
    if (n <= SMALL || kind == NC_COPY_LIBC) {
        memcpy(dst, src, n);
        return;
    }
    if ((kind == NC_COPY_ADAPT || kind == NC_COPY_ADAPT_READ) &&
        n >= (size_t)1 << ADAPT_MIN_LOG) {
        copy_adapt(kind, dst, src, n);
        return;
    }
    copy_vec(dst, src, n, kind == NC_COPY_NT);
}
