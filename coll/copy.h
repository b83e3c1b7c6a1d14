/*
 * The copy layer: every byte the core moves between a user buffer and the
 * shared segment goes through nc__copy, whose speed must not depend on the
 * user buffer's alignment (DESIGN.md section 11: glibc 2.36's memcpy uses
 * `rep movsb` from 4 KiB up on CPUs with ERMS/FSRM, and on some of them that
 * is several times slower when source and destination are not co-aligned,
 * which is the common case between a malloc'd buffer and 64-byte aligned
 * staging).
 *
 * Variants (a tuning-table choice per size, key copy=):
 *   auto  the default: vec (streaming stores win for some collectives
 *         and lose for others, so the table asks for nt where measured)
 *   libc  the C library's memcpy, as it is
 *   vec   vector loop: unaligned loads, stores aligned on the destination
 *         (AVX2 when the CPU has it, else SSE2; memcpy off x86-64)
 *   nt    as vec with non-temporal stores into user buffers (large copies
 *         the cache cannot hold: no read-for-ownership of the
 *         destination), fenced at the end so a following release store
 *         publishes the data; copies into the segment stay vec
 *   ntall nt for copies into the segment too: readers then load the data
 *         from memory, not from the writer's cache, which pays where the
 *         cores are far apart (another chiplet or socket)
 *   adapt copies into the segment choose between vec and streaming stores
 *         copy by copy, from what each cost this thread lately (below);
 *         copies into user buffers are vec
 *   ntadapt  as adapt, with copies into user buffers nt
 *
 * Why adapt: where readers still hold a staging line from its last use, a
 * plain store to it waits for their copies to be invalidated. On the
 * 2-vCPU VM that made a 64 KiB copy-in 4-8x slower than a streaming one at
 * times and not at others (the host moves the vCPUs), while streaming
 * costs the readers a trip to memory; which one wins changes while a job
 * runs, so the writer measures instead of a table guessing.
 */
#ifndef NUMACOLL_COPY_H
#define NUMACOLL_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* X(id, name) */
#define NC_COPY_LIST(X)                                                        \
    X(AUTO, "auto")                                                            \
    X(LIBC, "libc")                                                            \
    X(VEC, "vec")                                                              \
    X(NT, "nt")                                                                \
    X(NTALL, "ntall")                                                          \
    X(ADAPT, "adapt")                                                          \
    X(NTADAPT, "ntadapt")

typedef enum {
#define X(id, name) NC_COPY_##id,
    NC_COPY_LIST(X)
#undef X
    NC_COPY_COUNT,
    /* internal, never in a table: adapt for a collective whose every rank
     * reads what the others wrote in the same step (Allreduce's rsag),
     * where the readers' trip to memory after a streaming store is on
     * the critical path: streaming must cost the writer less than half
     * of plain stores to be chosen; a record of its own */
    NC_COPY_ADAPT_READ = NC_COPY_COUNT
} nc__copy_kind_t;

/* The variant a call of msg bytes runs for copies into a user buffer
 * (auto and adapt become vec, ntall and ntadapt nt). Copies into the
 * segment use nc__copy_pick(kind, 0): they stream for ntall, and choose
 * copy by copy for adapt and ntadapt (both give adapt). */
int nc__copy_pick(int kind, size_t msg);

/* The variant for copies into the segment that other ranks read in the
 * same step (a reduction's slots, a gather's fragments): as
 * nc__copy_pick(kind, 0), but adapt weighs the readers' trip to memory
 * after streaming stores (NC_COPY_ADAPT_READ). */
static inline int nc__copy_pick_read(int kind)
{
    const int seg = nc__copy_pick(kind, 0);
    return seg == NC_COPY_ADAPT ? NC_COPY_ADAPT_READ : seg;
}

/* Copies n bytes (regions must not overlap) with a variant nc__copy_pick
 * returned (auto is taken as vec). adapt: from 4 KiB, the copy is timed
 * (the CPU's cycle counter) and the thread's running cost per byte of
 * each choice, kept per power-of-two size, picks vec or streaming stores;
 * the other choice is retried now and then (after 8 copies, doubling up
 * to 512 while it keeps losing), so a change of the machine's state is
 * followed within a few hundred copies. Streaming copies are fenced, as
 * nt's: a following release store publishes them. */
void nc__copy(int kind, void *dst, const void *src, size_t n);

/* The record in this thread of adapt (kind NC_COPY_ADAPT) or of
 * NC_COPY_ADAPT_READ: the copies made with vec (used[0]) and with
 * streaming stores (used[1]) among those of n's power-of-two size class
 * (from 4 KiB; off x86-64 every such copy counts as vec). */
void nc__copy_adapt_count(int kind, size_t n, unsigned long used[2]);

/*
 * Whole-call adapt, for a pipeline that writes the segment with adapt and
 * moves many times its queue: there the writer's time for the call
 * includes its readers' (it waits for them to free the queue), so it
 * weighs what a copy's own time cannot: on the 2-vCPU VM, close together,
 * streaming every copy made a 16 MiB Bcast 0.62-1.15x the time of
 * copy-by-copy adapt (readers then load from memory, not from the
 * writer's cache), while on a 16-core Intel machine streaming into the
 * segment lost 1.2x. nc__copy_call_pick gives the variant of a
 * call of nbytes (vec or nt, both into the segment: copy-in only), the
 * other one now and then as adapt does; nc__copy_call_note takes the
 * call's cycles (nc__copy_clock at its start and end). Per thread and per
 * power-of-two size from NC_COPY_CALL_MIN; off x86-64 always vec.
 */
#define NC_COPY_CALL_MIN ((size_t)2 << 20)
int nc__copy_call_pick(size_t nbytes);
uint64_t nc__copy_clock(void);
void nc__copy_call_note(size_t nbytes, int kind, uint64_t cycles);
/* The calls of nbytes' class this thread made with vec (used[0]) and nt
 * (used[1]). */
void nc__copy_call_count(size_t nbytes, unsigned long used[2]);

/* Ask for the cache lines of a user buffer that a call will write, its
 * first max bytes at most, at the call's start: with a buffer not in
 * cache (an application's loop between calls) its misses, its TLB miss
 * too, then run while the rank waits for the others, not after its wait.
 * A no-op on lines already in cache. NC_PREFETCH_MAX where the rank only
 * waits before it writes (a reader); NC_PREFETCH_SMALL where its own
 * copy-in runs meanwhile (more only competed with its reads) or where
 * only that much was measured. Built for baseline x86-64 (no -mprfchw),
 * GCC emits the write hint as PREFETCHT0, a read prefetch: a private
 * line not in any cache then comes exclusive all the same, so the store
 * after it needs no further request; only a line another core holds
 * comes shared. */
#define NC_PREFETCH_MAX 4096
#define NC_PREFETCH_SMALL 1024
static inline void nc__prefetch_w(void *p, size_t n, size_t max)
{
    if (n > max)
        n = max;
    const uintptr_t a = (uintptr_t)p, end = a + n;
    for (uintptr_t l = a & ~(uintptr_t)63; l < end; l += 64)
        __builtin_prefetch((const void *)l, 1, 3);
}

/* Copy n <= 64 bytes of a user buffer into a line with general-register
 * moves: 8 bytes at a time, the last move overlapping (n < 8: two
 * 4-byte moves, or bytes). Not memcpy, whose 16-byte vector loads from
 * 16 bytes up were the slow part of a small reduction with the send
 * buffer just written by 4-byte stores to a line not in cache (the
 * bench's cold loop; a float or int vector an application has just
 * computed): on the VM's Xeon Reduce and Allreduce of 16-48 bytes took
 * 0.1-0.25 us more than of 12, and 0.66-0.88x that time with these moves;
 * with hot buffers these moves are no slower. */
static inline void nc__copy_line_in(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;
    if (n >= 8) {
        uint64_t w;
        for (size_t i = 0; i + 8 < n; i += 8) {
            memcpy(&w, s + i, 8);
            memcpy(d + i, &w, 8);
        }
        memcpy(&w, s + n - 8, 8);
        memcpy(d + n - 8, &w, 8);
    } else if (n >= 4) {
        uint32_t a, b;
        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &b, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    }
}

/* Name of a variant, or NULL; variant called name, or -1. */
const char *nc__copy_name(int kind);
int nc__copy_find(const char *name, size_t len);

/* The instruction set the vec and nt variants use on this CPU ("avx2",
 * "sse2" or "memcpy"). */
const char *nc__copy_isa(void);

#endif
