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

#else /* not x86-64: the C library's copy is the portable fallback */

const char *nc__copy_isa(void) { return "memcpy"; }

static void copy_vec(void *dst, const void *src, size_t n, int nt)
{
    (void)nt;
    memcpy(dst, src, n);
}

#endif

int nc__copy_pick(int kind, size_t msg)
{
    if (kind == NC_COPY_AUTO || (kind == NC_COPY_NT && msg == 0))
        return NC_COPY_VEC;
    return kind == NC_COPY_NTALL ? NC_COPY_NT : kind;
}

void nc__copy(int kind, void *dst, const void *src, size_t n)
{
    if (n <= SMALL || kind == NC_COPY_LIBC) {
        memcpy(dst, src, n);
        return;
    }
    copy_vec(dst, src, n, kind == NC_COPY_NT);
}
