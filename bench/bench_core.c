/*
 * numacoll-bench: the operation table, the data every call carries and the
 * one timing loop both modes share (standalone and MPI differ only in the
 * backend that supplies ncb_world_t and ncb_target_t).
 *
 * How a size is measured (docs/bench.md has the reasoning):
 *  1. warm-up: one untimed call, then W calls timed as a loop; the largest
 *     per-call time over ranks and configurations sets K, the calls per
 *     sample, so that a sample lasts about --sample-us (K shrinks as the
 *     size grows; --iters fixes it);
 *  2. references: rank 0 times memcpy of the same size with the same buffer
 *     policy while the others wait;
 *  3. samples, configurations interleaved (A B A B ...): barrier, then every
 *     rank times K back-to-back calls and divides by K. The barrier is
 *     outside the timed loop; its exit skew is spread over K calls. The
 *     root moves by --root-shift on every call, so with p = 2 a call cannot
 *     start before the previous one has arrived: the loop measures latency,
 *     not how far a root can run ahead. A sample's value is the largest
 *     per-call time over ranks; rows give min / median / max over samples.
 *     --loop app adds (or substitutes) the method of OSU and IMB, so that
 *     every figure can be checked by a loop we did not design: K times a
 *     barrier, then one call alone timed, root 0; the sample is the mean of
 *     those K times. Loops and --align sweep offsets interleave like
 *     configurations: every (configuration, loop, offset) is a "slot";
 *  4. one untimed call per slot with fully fresh data, checked byte for
 *     byte.
 * In the timed calls every call's data differs (stamps at both ends written
 * by the producer, checked by the consumer: a few stores and loads), and
 * under --cache cold (the default) every call uses another region of an
 * arena of twice the last-level cache, visited in a shuffled order, so no
 * call finds its buffers in a cache or on their way there.
 *
 * Where buffers start matters as much as whether they are cached: glibc's
 * memcpy (2.36) switches to `rep movsb` from a few KiB up on CPUs with
 * ERMS/FSRM, and that is several times slower when source and destination
 * are not equally far past a 64-byte boundary. Applications pass malloc's
 * buffers (large blocks 16 bytes past a page), so by default the arenas
 * come from malloc and every region keeps its offset; --align OFF puts every
 * region OFF bytes past a page, --align sweep measures several offsets.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"

const ncb_op_t ncb_ops[NCB_OP_COUNT] = {
#define X(id, name, flags, elem, what) {name, flags, elem, what},
    NCB_OP_LIST(X)
#undef X
};

/* The offsets of issue 10's table: co-aligned with a page or a cache line
 * (0, 64), the 16 of malloc, and the others rep movsb treats badly or well. */
const int ncb_sweep_offsets[NCB_SWEEP_N] = {0, 8, 16, 32, 48, 64};

const char *ncb_loop_name(int loop)
{
    return loop == NCB_LOOP_APP ? "app" : "b2b";
}

int ncb_op_find(const char *name)
{
    for (int i = 0; i < NCB_OP_COUNT; i++)
        if (strcmp(ncb_ops[i].name, name) == 0)
            return i;
    return -1;
}

double ncb_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

size_t ncb_llc_bytes(void)
{
    size_t best = 0;
    for (int i = 0; i < 8; i++) {
        char path[96], text[32];
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        FILE *f = fopen(path, "r");
        if (!f)
            break;
        if (fgets(text, sizeof text, f)) {
            char *end;
            unsigned long long v = strtoull(text, &end, 10);
            if (*end == 'K')
                v <<= 10;
            else if (*end == 'M')
                v <<= 20;
            if (v > best)
                best = (size_t)v;
        }
        fclose(f);
    }
    return best ? best : (size_t)32 << 20;
}

/* ---- data: what every call carries and how it is checked ------------------- */

/* Byte i of the full-check data of call c. */
static inline unsigned char fresh_byte(uint64_t c, size_t i)
{
    return (unsigned char)(ncb_mix(c, i / 8) >> (8 * (i % 8)));
}

static void fill_bytes(unsigned char *b, size_t m, uint64_t c, int invert)
{
    size_t words = m / 8;
    for (size_t j = 0; j < words; j++) {
        uint64_t v = ncb_mix(c, j);
        if (invert)
            v = ~v;
        memcpy(b + 8 * j, &v, 8);
    }
    for (size_t i = words * 8; i < m; i++)
        b[i] = (unsigned char)(invert ? ~fresh_byte(c, i) : fresh_byte(c, i));
}

static size_t first_bad_byte(const unsigned char *b, size_t m, uint64_t c)
{
    size_t words = m / 8;
    for (size_t j = 0; j < words; j++) {
        uint64_t v = ncb_mix(c, j), got;
        memcpy(&got, b + 8 * j, 8);
        if (got != v)
            for (size_t i = 8 * j;; i++)
                if (b[i] != fresh_byte(c, i))
                    return i;
    }
    for (size_t i = words * 8; i < m; i++)
        if (b[i] != fresh_byte(c, i))
            return i;
    return m;
}

/* Stamps: the producer writes 8 call-dependent bytes at each end, the
 * consumer compares them (written in the same order, so overlap in short
 * messages resolves the same way on both sides). */
static inline uint64_t stamp_head(uint64_t c) { return (c + 1) * 0x9e3779b97f4a7c15ULL; }
static inline uint64_t stamp_tail(uint64_t c) { return ~stamp_head(c) ^ (c << 17); }

static inline void stamp_bytes(unsigned char *b, size_t m, uint64_t c)
{
    uint64_t h = stamp_head(c), t = stamp_tail(c);
    if (m <= 8) {
        memcpy(b, &h, m);
        return;
    }
    memcpy(b, &h, 8);
    memcpy(b + m - 8, &t, 8);
}

static inline int stamp_bytes_ok(const unsigned char *b, size_t m, uint64_t c)
{
    uint64_t h = stamp_head(c), t = stamp_tail(c);
    if (m <= 8)
        return memcmp(b, &h, m) == 0;
    size_t hl = m - 8 < 8 ? m - 8 : 8;
    return memcmp(b, &h, hl) == 0 && memcmp(b + m - 8, &t, 8) == 0;
}

/* The sums' stamps: the first and last element of a contribution, and
 * of the result they add up to (summed over n ranks). */
static inline void stamp_elems(const ncb_dtype_t *d, unsigned char *v,
                               size_t n, uint64_t c, int rank)
{
    ncb_dt_put(d, v, c, 0, rank, 1);
    ncb_dt_put(d, v + (n - 1) * d->size, c, 1, rank, 1);
}

static inline int stamp_elems_ok(const ncb_dtype_t *d, const unsigned char *v,
                                 size_t n, uint64_t c, int nsum)
{
    unsigned char want[64];
    ncb_dt_expect(d, want, c, 1, nsum, 1);
    if (!ncb_dt_same(d, v + (n - 1) * d->size, want))
        return 0;
    if (n == 1)
        return 1;
    ncb_dt_expect(d, want, c, 0, nsum, 1);
    return ncb_dt_same(d, v, want);
}

/* ---- per-rank state of a run (a session) ----------------------------------- */

/* One (configuration, loop, offset) measured at the current size. */
typedef struct slot {
    int cfg, loop, off_idx;
    long errors;                     /* stamp mismatches this size */
    char first_error[160];
} slot_t;

typedef struct ncb_session {
    const ncb_opts_t *o;
    ncb_world_t *w;
    ncb_target_t *t;
    int ncfg;
    ncb_report_t *rep;
    unsigned char *sarena, *rarena;  /* contributions / roots' data; results */
    size_t span;                     /* bytes of one call's region: the
                                      * size, p sizes for the gathers    */
    size_t arena;                    /* bytes the regions span */
    size_t alloc;                    /* bytes allocated per arena */
    int malloced;                    /* arenas from malloc, not mmap */
    int align_seen;                  /* malloc: sarena's offset past a page */
    size_t offs[NCB_SWEEP_N];        /* offsets to measure, past sarena/rarena */
    int noffs;
    size_t cur_off;                  /* the offset being measured */
    const ncb_dtype_t *dt;           /* the reductions' type now          */
    const ncb_dtype_t *call_dt;      /* what calls carry: NULL = uint32   */
    const ncb_dtype_t *filled;       /* the type sarena was filled for    */
    int sec_dt;                      /* the rows' dtype index (NCB_SEC)   */
    uint32_t *order;                 /* cold: the regions' visiting order */
    size_t norder;                   /* regions of the current size */
    uint64_t call;                   /* calls so far: same on every rank */
    int fault;                       /* NCB_FAULT=corrupt: rank 1 spoils
                                        what it receives (tests the check) */
    slot_t *slot;                    /* this size's slots */
    int nslot, slot_cap;
} run_t;

static unsigned char *arena_map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void arena_free(const run_t *R, unsigned char *a)
{
    if (!a)
        return;
    if (R->malloced)
        free(a);
    else
        munmap(a, R->alloc);
}

/* Where call c's buffers sit for an m-byte message: cold, the next of the
 * arena's page-aligned regions in a shuffled order; hot, always the start.
 * Shuffled, because a constant stride between calls is what hardware
 * prefetchers learn: a small message would then find its line already on
 * its way and "cold" would depend on how the code under test happens to
 * issue its loads. */
typedef struct cursor {
    size_t stride, nregions, idx;
    int root, shift;
} cursor_t;

static size_t regions_of(const run_t *R, size_t m, size_t *stride)
{
    *stride = (m + 4095) & ~(size_t)4095;
    if (*stride == 0)
        *stride = 4096;
    size_t n = R->o->hot ? 1 : R->arena / *stride;
    return n ? n : 1;
}

/* The visiting order of the regions for size m: a Fisher-Yates shuffle
 * with a fixed seed, so every run visits them alike. */
static int set_order(run_t *R, size_t m)
{
    R->span = m;
    size_t stride, n = regions_of(R, m, &stride);
    if (n == R->norder)
        return 0;
    uint32_t *o = realloc(R->order, n * sizeof *o);
    if (!o)
        return -1;
    R->order = o;
    R->norder = n;
    uint64_t x = 0x2545f4914f6cdd1dULL ^ n;
    for (size_t i = 0; i < n; i++)
        o[i] = (uint32_t)i;
    for (size_t i = n - 1; i > 0; i--) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t j = (size_t)(x % (i + 1));
        uint32_t t = o[i];
        o[i] = o[j];
        o[j] = t;
    }
    return 0;
}

/* shift: how far the root moves per call (--root-shift; 0 for the app
 * loop, whose root stays 0 as in OSU and IMB). */
static void cursor_init(const run_t *R, cursor_t *k, int shift)
{
    /* the regions of the size set_order() last laid out */
    k->nregions = regions_of(R, R->span, &k->stride);
    k->idx = (size_t)(R->call % k->nregions);
    k->shift = shift % R->w->p;
    k->root = (int)((R->call * (uint64_t)shift) % (uint64_t)R->w->p);
}

static inline void cursor_next(const run_t *R, cursor_t *k)
{
    if (++k->idx == k->nregions)
        k->idx = 0;
    k->root += k->shift;
    if (k->root >= R->w->p)
        k->root -= R->w->p;
}

/* Bytes of one element: the reductions' type, else the table's (0: no
 * data). */
static inline size_t elem_of(const run_t *R, int op)
{
    if (ncb_ops[op].flags & NCB_SUM)
        return R->dt->size;
    return ncb_ops[op].elem ? ncb_ops[op].elem : (size_t)-1;
}

/* Regions are whole pages apart, so every buffer keeps the offset past a
 * page that its arena (malloc) or cur_off (--align) gives it. */
static inline void call_at(const run_t *R, const cursor_t *k, int op, size_t m,
                           ncb_call_t *c)
{
    size_t off = (size_t)R->order[k->idx] * k->stride + R->cur_off;
    c->sbuf = R->sarena + off;
    c->rbuf = R->rarena + off;
    c->bytes = m;
    c->count = m / elem_of(R, op);
    c->dt = (ncb_ops[op].flags & NCB_SUM) ? R->call_dt : NULL;
    c->root = (ncb_ops[op].flags & NCB_ROOTED) ? k->root : 0;
    c->buf = R->w->rank == c->root ? c->sbuf : c->rbuf;
}

static int receives(const run_t *R, int op, int root)
{
    if (op == NCB_OP_EXSCAN)
        return R->w->rank > 0;
    if (ncb_ops[op].flags & NCB_BLOCKS)   /* gather: the root; others: all */
        return (ncb_ops[op].flags & NCB_ALL) || R->w->rank == root;
    return (ncb_ops[op].flags & NCB_ALL) ? R->w->rank != root ||
                                           (ncb_ops[op].flags & NCB_SUM)
                                         : R->w->rank == root;
}

static void note_error(slot_t *s, int rank, const char *fmt, size_t a,
                       int root)
{
    if (s->errors++ == 0)
        snprintf(s->first_error, sizeof s->first_error, fmt, a, rank, root);
}

static int call_failed(run_t *R, int cfg, int op, const ncb_call_t *c, int rc)
{
    const char *why = R->t[cfg].last_error ? R->t[cfg].last_error(R->t[cfg].ctx)
                                           : "";
    fprintf(stderr, "numacoll-bench: rank %d: %s of %zu bytes (root %d, "
            "configuration %s) failed with status %d%s%s\n", R->w->rank,
            ncb_ops[op].name, c->bytes, c->root, R->o->cfg[cfg].label, rc,
            why && *why ? ": " : "", why ? why : "");
    return 3;
}

static int barrier_failed(run_t *R, int cfg)
{
    const char *why = R->t[cfg].last_error ? R->t[cfg].last_error(R->t[cfg].ctx)
                                           : "";
    fprintf(stderr, "numacoll-bench: rank %d: barrier failed (configuration "
            "%s)%s%s\n", R->w->rank, R->o->cfg[cfg].label,
            why && *why ? ": " : "", why ? why : "");
    return 3;
}

/* Flip the last received byte (NCB_FAULT=corrupt), so that the tests can
 * see the check fail. */
static void spoil(const ncb_call_t *c, int op)
{
    unsigned char *b = (ncb_ops[op].flags & (NCB_SUM | NCB_BLOCKS))
                           ? c->rbuf : c->buf;
    if (c->bytes)
        b[c->bytes - 1] ^= 0x40;
}

/* The gathers: block j of call c carries its own stamp or fill, so a
 * block that lands at another rank's place shows; Alltoall's block of
 * each (sender, receiver) pair its own. */
static inline uint64_t block_id(const run_t *R, int op, uint64_t c,
                                int writes, int j)
{
    if (op != NCB_OP_ALLTOALL && op != NCB_OP_ALLTOALLV)
        return c << 10 ^ (uint64_t)j;
    const int me = R->w->rank, src = writes ? me : j, dst = writes ? j : me;
    return c << 20 ^ (uint64_t)src << 10 ^ (uint64_t)dst;
}

/* Which blocks this rank writes (scatter root: all) or reads (allgather,
 * gather root: all; scatter: its own) in a gather call: [*lo, *hi), and
 * the buffer holding block j. */
static void block_range(const run_t *R, int op, const ncb_call_t *c,
                        int writes, int *lo, int *hi, unsigned char **base,
                        size_t *stride)
{
    const int me = R->w->rank, p = R->w->p,
              scatter = op == NCB_OP_SCATTER || op == NCB_OP_SCATTERV;
    /* the side of the p blocks: scatter's send, the others' receive,
     * both for alltoall */
    const int many = op == NCB_OP_ALLTOALL || op == NCB_OP_ALLTOALLV ||
                     (writes ? scatter && me == c->root : !scatter);
    *lo = many ? 0 : me;
    *hi = many ? p : me + 1;
    *base = writes ? c->sbuf : c->rbuf;
    *stride = many ? c->bytes : 0;   /* one block: at the buffer's start */
}

static void stamp_blocks(const run_t *R, int op, const ncb_call_t *c)
{
    int lo, hi;
    unsigned char *b;
    size_t st;
    if ((op == NCB_OP_SCATTER || op == NCB_OP_SCATTERV) &&
        R->w->rank != c->root)
        return;
    block_range(R, op, c, 1, &lo, &hi, &b, &st);
    for (int j = lo; j < hi; j++)
        stamp_bytes(b + (size_t)(j - lo) * st, c->bytes,
                    block_id(R, op, R->call, 1, j));
}

static int blocks_ok(const run_t *R, int op, const ncb_call_t *c)
{
    int lo, hi;
    unsigned char *b;
    size_t st;
    block_range(R, op, c, 0, &lo, &hi, &b, &st);
    for (int j = lo; j < hi; j++)
        if (!stamp_bytes_ok(b + (size_t)(j - lo) * st, c->bytes,
                            block_id(R, op, R->call, 0, j)))
            return 0;
    return 1;
}

/* The sums: how many ranks' contributions this rank's result adds up
 * (Scan: 0..me, Exscan: 0..me-1), and the element of the contributions
 * its result starts at (Reduce_scatter: its block's). */
static inline int summed(const run_t *R, int op)
{
    return op == NCB_OP_SCAN     ? R->w->rank + 1
           : op == NCB_OP_EXSCAN ? R->w->rank
                                 : R->w->p;
}

static inline size_t sum_first(const run_t *R, int op, size_t count)
{
    return op == NCB_OP_REDUCE_SCATTER ? (size_t)R->w->rank * count : 0;
}

/* Before a timed call: the producer stamps both ends of its buffer
 * (each of its p blocks: reduce_scatter). */
static inline void stamp_call(const run_t *R, int op, int sum,
                              const ncb_call_t *c)
{
    if (ncb_ops[op].flags & NCB_BLOCKS)
        stamp_blocks(R, op, c);
    else if (sum && (ncb_ops[op].flags & NCB_PBLOCKS))
        for (int j = 0; j < R->w->p; j++)
            stamp_elems(R->dt, (unsigned char *)c->sbuf +
                                   (size_t)j * c->count * R->dt->size,
                        c->count, R->call, R->w->rank);
    else if (sum)
        stamp_elems(R->dt, c->sbuf, c->count, R->call, R->w->rank);
    else if (R->w->rank == c->root)
        stamp_bytes(c->buf, c->bytes, R->call);
}

/* After it: the consumer compares the stamps. */
static inline void check_call(run_t *R, slot_t *s, int op, int check,
                              int sum, const ncb_call_t *c)
{
    if (R->fault && R->w->rank == 1 && receives(R, op, c->root))
        spoil(c, op);
    if (!check || !receives(R, op, c->root))
        return;
    int ok = (ncb_ops[op].flags & NCB_BLOCKS) ? blocks_ok(R, op, c)
             : sum ? stamp_elems_ok(R->dt, c->rbuf, c->count, R->call,
                                    summed(R, op))
                   : stamp_bytes_ok(c->buf, c->bytes, R->call);
    if (!ok)
        note_error(s, R->w->rank, "timed call of %zu bytes: rank %d received "
                   "stale or wrong end bytes from root %d", c->bytes, c->root);
}

/* K calls on every rank, *per_call the time of one. b2b (app = 0): back to
 * back, the root moving by --root-shift, the loop timed as a whole. app:
 * the application's loop, as OSU and IMB time it: before every call an
 * untimed barrier, then the call timed alone with root 0; *per_call = the
 * calls' mean. Either way stamps are written and compared outside what is
 * timed of a call. */
static int timed_loop(run_t *R, slot_t *s, int op, size_t m, int k, int app,
                      double *per_call)
{
    ncb_target_t *t = &R->t[s->cfg];
    int (*fn)(void *, const ncb_call_t *) = t->run[op];
    const int check = R->o->check && (ncb_ops[op].flags & NCB_SIZED);
    const int sum = (ncb_ops[op].flags & NCB_SUM) != 0;
    cursor_t cur;
    cursor_init(R, &cur, app ? 0 : R->o->root_shift);
    ncb_call_t c;
    double total = 0, t0 = ncb_now();
    for (int i = 0; i < k; i++) {
        call_at(R, &cur, op, m, &c);
        if (check)
            stamp_call(R, op, sum, &c);
        if (app) {
            if (t->barrier(t->ctx))
                return barrier_failed(R, s->cfg);
            t0 = ncb_now();
        }
        int rc = fn(t->ctx, &c);
        if (app)
            total += ncb_now() - t0;
        if (rc != 0)
            return call_failed(R, s->cfg, op, &c, rc);
        check_call(R, s, op, check, sum, &c);
        R->call++;
        cursor_next(R, &cur);
    }
    *per_call = (app ? total : ncb_now() - t0) / k;
    return 0;
}

/* full_check of a gather call c: every block its own fresh bytes, the
 * receiving side filled with their complement first. */
static int full_check_blocks(run_t *R, slot_t *sl, int op, ncb_call_t *c,
                             int recv)
{
    const uint64_t id = R->call;
    const size_t m = c->bytes;
    int lo, hi;
    unsigned char *b;
    size_t st;
    block_range(R, op, c, 0, &lo, &hi, &b, &st);
    for (int j = lo; j < hi; j++)
        fill_bytes(b + (size_t)(j - lo) * st, m, block_id(R, op, id, 0, j),
                   1);
    if ((op != NCB_OP_SCATTER && op != NCB_OP_SCATTERV) ||
        R->w->rank == c->root) {
        block_range(R, op, c, 1, &lo, &hi, &b, &st);
        for (int j = lo; j < hi; j++)
            fill_bytes(b + (size_t)(j - lo) * st, m,
                       block_id(R, op, id, 1, j), 0);
    }
    int rc = R->t[sl->cfg].run[op](R->t[sl->cfg].ctx, c);
    R->call++;
    if (rc != 0)
        return call_failed(R, sl->cfg, op, c, rc);
    if (!recv)
        return 0;
    if (R->fault && R->w->rank == 1)
        spoil(c, op);
    block_range(R, op, c, 0, &lo, &hi, &b, &st);
    for (int j = lo; j < hi; j++) {
        size_t bad = first_bad_byte(b + (size_t)(j - lo) * st, m,
                                    block_id(R, op, id, 0, j));
        if (bad < m) {
            note_error(sl, R->w->rank, "checked call: byte %zu of a block "
                       "wrong on rank %d (root %d)", bad, c->root);
            break;
        }
    }
    return 0;
}

/* One untimed call with fully fresh data, checked byte for byte. */
static int full_check(run_t *R, slot_t *sl, int op, size_t m)
{
    const int cfg = sl->cfg;
    cursor_t cur;
    cursor_init(R, &cur, sl->loop == NCB_LOOP_APP ? 0 : R->o->root_shift);
    ncb_call_t c;
    call_at(R, &cur, op, m, &c);
    const int rank = R->w->rank, p = R->w->p;
    const uint64_t id = R->call;
    const int sum = (ncb_ops[op].flags & NCB_SUM) != 0;
    int recv = receives(R, op, c.root);
    if (ncb_ops[op].flags & NCB_BLOCKS)
        return full_check_blocks(R, sl, op, &c, recv);
    const size_t first = sum_first(R, op, c.count);
    const int nsum = summed(R, op);
    const ncb_dtype_t *dt = R->dt;
    if (sum) {
        unsigned char *s = c.sbuf, *d = c.rbuf;
        const size_t n = (ncb_ops[op].flags & NCB_PBLOCKS)
                             ? c.count * (size_t)p : c.count;
        for (size_t e = 0; e < n; e++)
            ncb_dt_put(dt, s + e * dt->size, id, e, rank, 0);
        for (size_t e = 0; e < c.count; e++) {   /* differs from the answer */
            ncb_dt_expect(dt, d + e * dt->size, id, first + e, nsum, 0);
            ncb_dt_complement(dt, d + e * dt->size);
        }
    } else if (rank == c.root) {
        fill_bytes(c.buf, m, id, 0);
    } else {
        fill_bytes(c.buf, m, id, 1);
    }
    int rc = R->t[cfg].run[op](R->t[cfg].ctx, &c);
    R->call++;
    if (rc != 0)
        return call_failed(R, cfg, op, &c, rc);
    if (!recv)
        return 0;
    if (R->fault && rank == 1)
        spoil(&c, op);
    if (sum) {
        const unsigned char *d = c.rbuf;
        unsigned char want[64];
        for (size_t e = 0; e < c.count; e++) {
            ncb_dt_expect(dt, want, id, first + e, nsum, 0);
            if (!ncb_dt_same(dt, d + e * dt->size, want)) {
                note_error(sl, rank, "checked call: element %zu wrong on rank "
                           "%d (root %d)", e, c.root);
                break;
            }
        }
    } else {
        size_t bad = first_bad_byte(c.buf, m, id);
        if (bad < m)
            note_error(sl, rank, "checked call: byte %zu wrong on rank %d "
                       "(root %d)", bad, c.root);
    }
    return 0;
}

/* Rank 0 times memcpy over the same regions at the same offset (source
 * and destination co-aligned, as in the collective's buffers); the others
 * wait. */
static double memcpy_ref(run_t *R, size_t m, int k, int reps)
{
    double *s = malloc((size_t)reps * sizeof *s), med = -1;
    if (!s)
        return -1;
    cursor_t cur;
    cursor_init(R, &cur, 0);
    for (int rep = 0; rep < reps; rep++) {
        double t0 = ncb_now();
        for (int i = 0; i < k; i++) {
            size_t off = (size_t)R->order[cur.idx] * cur.stride + R->cur_off;
            memcpy(R->rarena + off, R->sarena + off, m);
            /* keep the copy: the compiler may not drop or merge it */
            __asm__ __volatile__("" : : "r"(R->rarena + off) : "memory");
            cursor_next(R, &cur);
        }
        s[rep] = (ncb_now() - t0) / k;
    }
    for (int i = 1; i < reps; i++)
        for (int j = i; j > 0 && s[j - 1] > s[j]; j--) {
            double x = s[j];
            s[j] = s[j - 1];
            s[j - 1] = x;
        }
    med = reps % 2 ? s[reps / 2] : (s[reps / 2 - 1] + s[reps / 2]) / 2;
    free(s);
    return med;
}

/* Ranks 0 and 1 bounce one cache line each way; the median over 5 runs of
 * 2000 round trips. Spinning yields after a while so that oversubscribed
 * runs still finish. */
static double line_rtt(run_t *R)
{
    ncb_world_t *w = R->w;
    /* Ranks beyond 1 have no lines but take part in the syncs and the
     * allmax: skipping them would pair their next collective with ranks 0
     * and 1's sync (a hang under tuned from np 4 on). */
    if (w->p < 2 || !w->lines)
        return -1;
    enum { N = 2000, RUNS = 5 };
    double s[RUNS];
    uint64_t base = 0;
    for (int run = 0; run < RUNS; run++) {
        if (w->sync(w))
            return -1;
        double t0 = ncb_now();
        for (uint64_t i = base + 1; i <= base + N; i++) {
            unsigned spins = 0;
            if (w->rank == 0) {
                atomic_store_explicit(w->ping, i, memory_order_release);
                while (atomic_load_explicit(w->pong, memory_order_acquire) != i)
                    if (++spins > 100000)
                        sched_yield();
            } else if (w->rank == 1) {
                while (atomic_load_explicit(w->ping, memory_order_acquire) != i)
                    if (++spins > 100000)
                        sched_yield();
                atomic_store_explicit(w->pong, i, memory_order_release);
            }
        }
        s[run] = (ncb_now() - t0) / N;
        base += N;
    }
    for (int i = 1; i < RUNS; i++)
        for (int j = i; j > 0 && s[j - 1] > s[j]; j--) {
            double x = s[j];
            s[j] = s[j - 1];
            s[j - 1] = x;
        }
    double v = s[RUNS / 2];
    /* rank 0's measurement is the one reported */
    if (w->allmax(w, &v, 1))
        return -1;
    return v;
}

/* Other programs running now make every number here suspect: say so.
 * /proc/loadavg's fourth field counts runnable tasks, our p ranks (busy in
 * the barrier) among them. */
static void busy_note(ncb_report_t *rep, int p)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double l1;
    int running, total;
    if (!f)
        return;
    if (fscanf(f, "%lf %*f %*f %d/%d", &l1, &running, &total) == 3 &&
        running > p + 1)
        snprintf(rep->busy, sizeof rep->busy, "WARNING: %d other runnable "
                 "tasks at the start (load %.2f): timings are unreliable",
                 running - p, l1);
    fclose(f);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Warm-up loop length: about 1 MiB of data, 2 to 100 calls. */
static int warmup_calls(const ncb_opts_t *o, size_t m)
{
    if (o->warmup >= 0)
        return o->warmup;
    size_t w = ((size_t)1 << 20) / (m ? m : 1);
    return w < 2 ? 2 : w > 100 ? 100 : (int)w;
}

static unsigned loops_of(const ncb_opts_t *o)
{
    return o->loops ? o->loops : NCB_LOOP_B2B;
}

/* The slots of this size: per configuration, per loop, per offset (the
 * order the samples visit them in). 0 or -1 without memory. */
static int make_slots(run_t *R)
{
    const unsigned loops = loops_of(R->o);
    int n = 0;
    for (int l = NCB_LOOP_B2B; l <= NCB_LOOP_APP; l <<= 1)
        n += (loops & (unsigned)l) != 0;
    n *= R->ncfg * R->noffs;
    if (n > R->slot_cap) {
        slot_t *s = realloc(R->slot, (size_t)n * sizeof *s);
        if (!s)
            return -1;
        R->slot = s;
        R->slot_cap = n;
    }
    R->nslot = 0;
    for (int c = 0; c < R->ncfg; c++)
        for (int l = NCB_LOOP_B2B; l <= NCB_LOOP_APP; l <<= 1)
            for (int j = 0; j < R->noffs && (loops & (unsigned)l); j++) {
                slot_t *s = &R->slot[R->nslot++];
                memset(s, 0, sizeof *s);
                s->cfg = c;
                s->loop = l;
                s->off_idx = j;
            }
    return 0;
}

/* The offset a row reports: the one set, or under malloc the one seen. */
static int row_align(const run_t *R, int off_idx)
{
    return R->o->align == NCB_ALIGN_MALLOC ? R->align_seen
                                           : (int)R->offs[off_idx];
}

/* Whether the buffers at offset j suit op's elements: C and MPI ask a
 * buffer of long doubles to be 16-aligned (--align sweep's 8 is not). */
static int aligned_for(const run_t *R, int op, int j)
{
    return !(ncb_ops[op].flags & NCB_SUM) || R->offs[j] % R->dt->align == 0;
}

/* Measure op at size m (0 for sizeless) over every slot; rank 0 appends
 * the rows and prints them. */
static int measure_size(run_t *R, int op, size_t m)
{
    const ncb_opts_t *o = R->o;
    ncb_world_t *w = R->w;
    const int ncfg = R->ncfg, reps = o->reps, noffs = R->noffs;
    int ok[NCB_MAX_CFGS];
    char why[NCB_MAX_CFGS][64];
    double est[NCB_MAX_CFGS * NCB_SWEEP_N];
    double mc[NCB_SWEEP_N];
    int any = 0;

    const size_t span = (ncb_ops[op].flags & (NCB_BLOCKS | NCB_PBLOCKS))
                            ? m * (size_t)w->p : m;
    if (set_order(R, span) != 0 || make_slots(R) != 0) {
        fprintf(stderr, "numacoll-bench: out of memory for the region order "
                "and the slots\n");
        return 4;
    }
    const int ns = R->nslot;

    for (int c = 0; c < ncfg; c++) {
        why[c][0] = '\0';
        ok[c] = R->t[c].run[op] != NULL;
        if (!ok[c])
            snprintf(why[c], sizeof why[c], "not in this mode");
        else if ((ncb_ops[op].flags & NCB_SIZED) && m < elem_of(R, op))
            ok[c] = 0, snprintf(why[c], sizeof why[c], "less than one %zu-byte "
                                "element", elem_of(R, op));
        else if (R->t[c].applies &&
                 R->t[c].applies(R->t[c].ctx, op, m, why[c], sizeof why[c]))
            ok[c] = 0;
        any |= ok[c];
    }
    /* 1. warm-up and the estimate that sets K: per configuration and
     * offset (a copy may take another path at another offset), the faster
     * of two back-to-back loops on each rank (one preemption must not
     * shrink K), the slowest rank. The app loop shares K: its calls are
     * the same, only a barrier comes between them. */
    for (int c = 0; c < ncfg; c++)
        for (int j = 0; j < noffs; j++) {
            est[c * noffs + j] = 0;
            if (!ok[c] || !aligned_for(R, op, j))
                continue;
            slot_t warm = {.cfg = c, .loop = NCB_LOOP_B2B, .off_idx = j};
            double x, y;
            R->cur_off = R->offs[j];
            int rc = timed_loop(R, &warm, op, m, 1, 0, &x);
            int wn = warmup_calls(o, m);
            if (!rc && wn > 0)
                rc = timed_loop(R, &warm, op, m, wn, 0, &x);
            if (!rc && wn > 0)
                rc = timed_loop(R, &warm, op, m, wn, 0, &y);
            else
                y = x;
            if (rc)
                return rc;
            est[c * noffs + j] = x < y ? x : y;
        }
    if (w->allmax(w, est, ncfg * noffs))
        return 4;
    double worst = 0;
    for (int i = 0; i < ncfg * noffs; i++)
        worst = est[i] > worst ? est[i] : worst;
    int k = o->iters;
    if (!k) {
        double want = o->sample_us * 1e-6 / (worst > 1e-9 ? worst : 1e-9);
        k = want < 1 ? 1 : want > 100000 ? 100000 : (int)(want + 0.5);
    }
    /* 2. the single-copy limit at every offset, by rank 0 alone */
    for (int j = 0; j < noffs; j++)
        mc[j] = -1;
    if ((ncb_ops[op].flags & NCB_SIZED) && any && !o->no_memcpy) {
        if (w->sync(w))
            return 4;
        if (w->rank == 0)
            for (int j = 0; j < noffs; j++) {
                R->cur_off = R->offs[j];
                double one = memcpy_ref(R, m, 1, 3);
                double want = o->sample_us * 1e-6 / (one > 1e-9 ? one : 1e-9);
                int km = want < 1 ? 1 : want > 100000 ? 100000
                                                      : (int)(want + 0.5);
                mc[j] = memcpy_ref(R, m, km, reps);
            }
        if (w->sync(w))
            return 4;
    }
    /* 3. samples, slots interleaved */
    double *mine = calloc((size_t)(reps + 1) * (size_t)ns, sizeof *mine);
    double *all = calloc((size_t)(reps + 1) * (size_t)ns * (size_t)w->p,
                         sizeof *all);
    double *col = calloc((size_t)reps, sizeof *col);
    if (!mine || !all || !col) {
        free(mine);
        free(all);
        free(col);
        fprintf(stderr, "numacoll-bench: out of memory for %d samples\n", reps);
        return 4;
    }
    int rc = 0;
    for (int rep = 0; rep < reps && !rc; rep++)
        for (int i = 0; i < ns && !rc; i++) {
            slot_t *sl = &R->slot[i];
            if (!ok[sl->cfg] || !aligned_for(R, op, sl->off_idx))
                continue;
            if (R->t[sl->cfg].barrier(R->t[sl->cfg].ctx)) {
                rc = barrier_failed(R, sl->cfg);
                break;
            }
            R->cur_off = R->offs[sl->off_idx];
            rc = timed_loop(R, sl, op, m, k, sl->loop == NCB_LOOP_APP,
                            &mine[rep * ns + i]);
        }
    /* 4. one fully checked call per slot */
    for (int i = 0; i < ns && !rc; i++)
        if (ok[R->slot[i].cfg] && aligned_for(R, op, R->slot[i].off_idx) &&
            o->check && (ncb_ops[op].flags & NCB_SIZED)) {
            R->cur_off = R->offs[R->slot[i].off_idx];
            rc = full_check(R, &R->slot[i], op, m);
        }
    if (rc) {
        free(mine);
        free(all);
        free(col);
        return rc;
    }
    for (int i = 0; i < ns; i++) {
        const slot_t *sl = &R->slot[i];
        mine[reps * ns + i] = (double)sl->errors;
        if (sl->errors)
            fprintf(stderr, "numacoll-bench: %s %s (%s loop, offset %d): %s "
                    "(%ld bad calls on this rank)\n", ncb_ops[op].name,
                    o->cfg[sl->cfg].label, ncb_loop_name(sl->loop),
                    row_align(R, sl->off_idx), sl->first_error, sl->errors);
    }
    if (w->gather(w, mine, (reps + 1) * ns, all)) {
        free(mine);
        free(all);
        free(col);
        return 4;
    }
    if (w->rank == 0) {
        int stride = (reps + 1) * ns;
        for (int i = 0; i < ns; i++) {
            const slot_t *sl = &R->slot[i];
            const int c = sl->cfg;
            ncb_row_t *row = ncb_report_add(R->rep);
            if (!row)
                break;
            row->op = NCB_SEC(op, R->sec_dt);
            row->cfg = c;
            row->bytes = m;
            row->loop = sl->loop;
            row->align = row_align(R, sl->off_idx);
            row->memcpy_s = mc[sl->off_idx];
            if (!ok[c]) {
                row->status = NCB_ROW_NA;
                snprintf(row->note, sizeof row->note, "%s", why[c]);
                continue;
            }
            if (!aligned_for(R, op, sl->off_idx)) {
                row->status = NCB_ROW_NA;
                snprintf(row->note, sizeof row->note, "%.23s needs %d-byte "
                         "alignment", R->dt->name, (int)(R->dt->align & 63));
                continue;
            }
            row->calls = k;
            row->samples = reps;
            long bad = 0;
            for (int rep = 0; rep < reps; rep++) {
                double v = 0;
                for (int r = 0; r < w->p; r++) {
                    double x = all[r * stride + rep * ns + i];
                    v = x > v ? x : v;
                }
                col[rep] = v;
            }
            for (int r = 0; r < w->p; r++)
                bad += (long)all[r * stride + reps * ns + i];
            qsort(col, (size_t)reps, sizeof *col, cmp_double);
            row->min = col[0];
            row->max = col[reps - 1];
            row->med = reps % 2 ? col[reps / 2]
                                : (col[reps / 2 - 1] + col[reps / 2]) / 2;
            if (bad) {
                row->status = NCB_ROW_BAD;
                snprintf(row->note, sizeof row->note, "CHECK FAILED (%ld calls)",
                         bad);
                R->rep->failures++;
            }
        }
        if (!o->quiet) {
            ncb_print_rows(R->rep, NCB_SEC(op, R->sec_dt), m, stdout);
            fflush(stdout);
        }
    }
    free(mine);
    free(all);
    free(col);
    return 0;
}

/* The reductions' type without --dtype: uint32 SUM, as before it. */
static const ncb_dtype_t *default_dtype(void)
{
    static ncb_dtype_t d;
    if (!d.size)
        ncb_dtype_layout("uint32", 4, &d);
    return &d;
}

/* Measure the reductions with --dtype's type i (the default without it);
 * sec: whether rows carry i (the reductions) or 0 (the others). */
static void use_dtype(run_t *R, int i, int sec)
{
    const ncb_opts_t *o = R->o;
    R->dt = o->ndtype ? &o->dtype[i] : default_dtype();
    R->call_dt = o->ndtype ? &o->dtype[i] : NULL;
    R->sec_dt = sec ? i : 0;
    /* real parts must hold numbers: random bytes would give NaNs and
     * subnormals, which some kernels take far longer over */
    if (ncb_dt_has_real(R->dt) && R->filled != R->dt) {
        ncb_dt_fill(R->dt, R->sarena, R->alloc, R->w->rank);
        R->filled = R->dt;
    }
}

/* Allocate and touch the arenas for messages up to maxm; 0 or 4. */
static int session_init(run_t *R, const ncb_opts_t *o, ncb_world_t *w,
                        size_t maxm)
{
    memset(R, 0, sizeof *R);
    R->o = o;
    R->w = w;
    const char *fault = getenv("NCB_FAULT");
    R->fault = fault && strcmp(fault, "corrupt") == 0;
    size_t need = (maxm + 4095) & ~(size_t)4095;
    size_t llc = ncb_llc_bytes();
    /* Cold: twice the last-level cache per arena, so a region has left
     * every cache before its turn comes again; at least two regions. */
    R->arena = o->hot ? need : (2 * llc > 2 * need ? 2 * llc : 2 * need);
    if (R->arena < 4096)
        R->arena = 4096;
    if (o->align == NCB_ALIGN_MALLOC) {
        /* as an application allocates: wherever malloc puts it (glibc:
         * 16 bytes past a page for blocks it maps, anywhere 16-aligned
         * for small ones); the regions inherit that offset */
        R->malloced = 1;
        R->alloc = R->arena;
        R->sarena = malloc(R->alloc);
        R->rarena = malloc(R->alloc);
        R->offs[0] = 0;
        R->noffs = 1;
        R->align_seen = R->sarena ? (int)((uintptr_t)R->sarena % 4096) : 0;
    } else {
        /* page-aligned, one page more, so that a region OFF bytes past its
         * page still ends inside */
        R->alloc = R->arena + 4096;
        R->sarena = arena_map(R->alloc);
        R->rarena = arena_map(R->alloc);
        if (o->align == NCB_ALIGN_SWEEP) {
            for (int j = 0; j < NCB_SWEEP_N; j++)
                R->offs[j] = (size_t)ncb_sweep_offsets[j];
            R->noffs = NCB_SWEEP_N;
        } else {
            R->offs[0] = o->align > 0 ? (size_t)o->align : 0;
            R->noffs = 1;
        }
    }
    if (!R->sarena || !R->rarena) {
        fprintf(stderr, "numacoll-bench: rank %d: cannot allocate 2 x %zu "
                "bytes of buffers\n", w->rank, R->alloc);
        arena_free(R, R->sarena);
        arena_free(R, R->rarena);
        return 4;
    }
    /* Touch every page now: page faults must not land in a timed loop. */
    fill_bytes(R->sarena, R->alloc, 0x51, 0);
    memset(R->rarena, 0xA5, R->alloc);
    use_dtype(R, 0, 0);
    return 0;
}

static void session_fini(run_t *R)
{
    arena_free(R, R->sarena);
    arena_free(R, R->rarena);
    free(R->order);
    free(R->slot);
}

/* Under malloc, what every rank's arenas got: "page+16 (16 mod 64) on
 * every rank", or each rank's pair when they differ. Collective. */
static int describe_align(run_t *R, ncb_report_t *rep)
{
    ncb_world_t *w = R->w;
    double mine[2] = {(double)((uintptr_t)R->sarena % 4096),
                      (double)((uintptr_t)R->rarena % 4096)};
    double *all = malloc((size_t)w->p * 2 * sizeof *all);
    if (!all || w->gather(w, mine, 2, all)) {
        free(all);
        return 4;
    }
    if (w->rank == 0) {
        int same = 1;
        for (int r = 0; r < 2 * w->p; r++)
            same &= all[r] == all[0];
        rep->align_seen = R->align_seen;
        if (same) {
            snprintf(rep->align_desc, sizeof rep->align_desc, "page+%d (%d mod "
                     "64) for every rank's send and receive buffers",
                     (int)all[0], (int)all[0] % 64);
        } else {
            size_t n = (size_t)snprintf(rep->align_desc,
                                        sizeof rep->align_desc,
                                        "offsets past a page differ (send/"
                                        "receive, rank 0 first):");
            for (int r = 0; r < w->p && n < sizeof rep->align_desc; r++)
                n += (size_t)snprintf(rep->align_desc + n,
                                      sizeof rep->align_desc - n, " %d/%d",
                                      (int)all[2 * r], (int)all[2 * r + 1]);
            if (n < sizeof rep->align_desc)
                snprintf(rep->align_desc + n, sizeof rep->align_desc - n,
                         "; rows give rank 0's send offset");
        }
    }
    free(all);
    return 0;
}

int ncb_session_open(const ncb_opts_t *o, ncb_world_t *w, size_t max_bytes,
                     ncb_session_t **out)
{
    run_t *R = malloc(sizeof *R);
    if (!R) {
        fprintf(stderr, "numacoll-bench: rank %d: out of memory for a "
                "session (%zu bytes)\n", w->rank, sizeof *R);
        return 4;
    }
    int rc = session_init(R, o, w, max_bytes);
    if (rc) {
        free(R);
        return rc;
    }
    *out = R;
    return 0;
}

int ncb_measure_size(ncb_session_t *s, ncb_target_t *t, int ncfg, int op,
                     size_t m, ncb_report_t *rep)
{
    if (ncfg < 1 || ncfg > NCB_MAX_CFGS)
        return 2;
    s->t = t;
    s->ncfg = ncfg;
    s->rep = rep;
    return measure_size(s, op, (ncb_ops[op].flags & NCB_SIZED) ? m : 0);
}

void ncb_session_close(ncb_session_t *s)
{
    if (!s)
        return;
    session_fini(s);
    free(s);
}

int ncb_measure(const ncb_opts_t *o, ncb_world_t *w, ncb_target_t *t, int ncfg,
                ncb_report_t *rep)
{
    run_t R;
    size_t maxm = 0;
    for (int i = 0; i < o->nsizes; i++)
        maxm = o->sizes[i] > maxm ? o->sizes[i] : maxm;
    /* a gather's region holds p blocks */
    for (int op = 0; op < NCB_OP_COUNT; op++)
        if ((o->ops & (1u << op)) &&
            (ncb_ops[op].flags & (NCB_BLOCKS | NCB_PBLOCKS))) {
            maxm *= (size_t)w->p;
            break;
        }
    if (session_init(&R, o, w, maxm))
        return 4;
    R.t = t;
    R.ncfg = ncfg;
    R.rep = rep;
    if (w->rank == 0) {
        rep->arena = R.arena;
        rep->llc = ncb_llc_bytes();
    }
    int rc = o->align == NCB_ALIGN_MALLOC ? describe_align(&R, rep) : 0;
    if (rc)
        goto out;
    double rtt = line_rtt(&R);
    /* The barrier's own cost, measured as the samples use it. */
    double bar[NCB_MAX_CFGS];
    for (int c = 0; c < ncfg && !rc; c++) {
        double s[5];
        for (int i = 0; i < 5 && !rc; i++) {
            if (t[c].barrier(t[c].ctx))
                rc = 3;
            double t0 = ncb_now();
            for (int j = 0; j < 200 && !rc; j++)
                rc = t[c].barrier(t[c].ctx) ? 3 : 0;
            s[i] = (ncb_now() - t0) / 200;
        }
        qsort(s, 5, sizeof s[0], cmp_double);
        bar[c] = s[2];
    }
    if (rc) {
        fprintf(stderr, "numacoll-bench: rank %d: barrier failed\n", w->rank);
        goto out;
    }
    if (w->allmax(w, bar, ncfg)) {
        rc = 4;
        goto out;
    }
    if (w->rank == 0) {
        busy_note(rep, w->p);
        rep->line_rtt = rtt;
        for (int c = 0; c < ncfg; c++)
            rep->barrier_s[c] = bar[c];
        if (!o->quiet) {
            ncb_print_header(rep, stdout);
            fflush(stdout);
        }
    }
    for (int op = 0; op < NCB_OP_COUNT && !rc; op++) {
        if (!(o->ops & (1u << op)))
            continue;
        /* the reductions once per type, the others once */
        const int sum = (ncb_ops[op].flags & NCB_SUM) != 0;
        const int ndt = sum && o->ndtype ? o->ndtype : 1;
        for (int d = 0; d < ndt && !rc; d++) {
            use_dtype(&R, d, sum);
            if (w->rank == 0 && !o->quiet)
                ncb_print_op_header(rep, NCB_SEC(op, R.sec_dt), stdout);
            if (ncb_ops[op].flags & NCB_SIZED) {
                for (int i = 0; i < o->nsizes && !rc; i++)
                    rc = measure_size(&R, op, o->sizes[i]);
            } else {
                rc = measure_size(&R, op, 0);
            }
        }
    }
    /* the same reference again: a machine that drifted shows here */
    if (!rc) {
        double end = line_rtt(&R);
        if (w->rank == 0) {
            rep->line_rtt_end = end;
            if (!o->quiet && end > 0)
                printf("#\n# one cache line round trip at the end of the run: "
                       "%.3f us (start %.3f us)\n", end * 1e6,
                       rep->line_rtt * 1e6);
        }
    }
    if (!rc && w->sync(w))
        rc = 4;
out:
    session_fini(&R);
    if (!rc && w->rank == 0 && rep->failures)
        rc = 1;
    return rc;
}
