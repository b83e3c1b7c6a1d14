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
 *     per-call time over ranks; rows give min / median / max over samples;
 *  4. one untimed call with fully fresh data, checked byte for byte.
 * In the timed calls every call's data differs (stamps at both ends written
 * by the producer, checked by the consumer: a few stores and loads), and
 * under --cache cold (the default) every call uses another region of an
 * arena of twice the last-level cache, visited in a shuffled order, so no
 * call finds its buffers in a cache or on their way there.
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

/* A 64-bit value per (call, word): splitmix64, cheap and well spread. */
static inline uint64_t mixw(uint64_t call, uint64_t j)
{
    uint64_t x = call * 0x9e3779b97f4a7c15ULL + j * 0xd1b54a32d192ed03ULL +
                 0x632be59bd9b4e019ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Every rank's share of a Reduce differs by this per rank. */
#define RANK_STEP 0x9e3779b1u

/* Sum over ranks 0..p-1 of (v + r*RANK_STEP), mod 2^32. */
static inline uint32_t sum_of(uint32_t v, int p)
{
    uint64_t tri = (uint64_t)p * (uint64_t)(p - 1) / 2;
    return (uint32_t)((uint64_t)v * (uint64_t)p + tri * RANK_STEP);
}

/* Byte i of the full-check data of call c. */
static inline unsigned char fresh_byte(uint64_t c, size_t i)
{
    return (unsigned char)(mixw(c, i / 8) >> (8 * (i % 8)));
}

/* Element e of the full-check data of call c (uint32 operations). */
static inline uint32_t fresh_u32(uint64_t c, size_t e)
{
    return (uint32_t)(mixw(c, e / 2) >> (32 * (e % 2)));
}

static void fill_bytes(unsigned char *b, size_t m, uint64_t c, int invert)
{
    size_t words = m / 8;
    for (size_t j = 0; j < words; j++) {
        uint64_t v = mixw(c, j);
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
        uint64_t v = mixw(c, j), got;
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

/* uint32 stamps for the sums: first and last element. */
static inline void stamp_u32(uint32_t *v, size_t n, uint64_t c, int rank)
{
    uint32_t add = (uint32_t)rank * RANK_STEP;
    v[0] = (uint32_t)stamp_head(c) + add;
    v[n - 1] = (uint32_t)stamp_tail(c) + add;
}

static inline int stamp_u32_ok(const uint32_t *v, size_t n, uint64_t c, int p)
{
    return v[n - 1] == sum_of((uint32_t)stamp_tail(c), p) &&
           (n == 1 || v[0] == sum_of((uint32_t)stamp_head(c), p));
}

/* ---- per-rank state of a run (a session) ----------------------------------- */

typedef struct ncb_session {
    const ncb_opts_t *o;
    ncb_world_t *w;
    ncb_target_t *t;
    int ncfg;
    ncb_report_t *rep;
    unsigned char *sarena, *rarena;  /* contributions / roots' data; results */
    size_t arena;
    uint32_t *order;                 /* cold: the regions' visiting order */
    size_t norder;                   /* regions of the current size */
    uint64_t call;                   /* calls so far: same on every rank */
    int fault;                       /* NCB_FAULT=corrupt: rank 1 spoils
                                        what it receives (tests the check) */
    long errors[NCB_MAX_CFGS];       /* stamp mismatches this size */
    char first_error[NCB_MAX_CFGS][160];
} run_t;

static unsigned char *arena_map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* Where call c's buffers sit for an m-byte message: cold, the next of the
 * arena's page-aligned regions in a shuffled order; hot, always the start.
 * Shuffled, because a constant stride between calls is what hardware
 * prefetchers learn: a small message would then find its line already on
 * its way and "cold" would depend on how the code under test happens to
 * issue its loads. */
typedef struct cursor {
    size_t stride, nregions, idx;
    int root;
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

static void cursor_init(const run_t *R, cursor_t *k, size_t m)
{
    k->nregions = regions_of(R, m, &k->stride);
    k->idx = (size_t)(R->call % k->nregions);
    k->root = (int)((R->call * (uint64_t)R->o->root_shift) % (uint64_t)R->w->p);
}

static inline void cursor_next(const run_t *R, cursor_t *k)
{
    if (++k->idx == k->nregions)
        k->idx = 0;
    k->root += R->o->root_shift % R->w->p;
    if (k->root >= R->w->p)
        k->root -= R->w->p;
}

static inline void call_at(const run_t *R, const cursor_t *k, int op, size_t m,
                           ncb_call_t *c)
{
    size_t off = (size_t)R->order[k->idx] * k->stride;
    c->sbuf = R->sarena + off;
    c->rbuf = R->rarena + off;
    c->bytes = m;
    c->count = ncb_ops[op].elem ? m / ncb_ops[op].elem : 0;
    c->root = (ncb_ops[op].flags & NCB_ROOTED) ? k->root : 0;
    c->buf = R->w->rank == c->root ? c->sbuf : c->rbuf;
}

static int receives(const run_t *R, int op, int root)
{
    return (ncb_ops[op].flags & NCB_ALL) ? R->w->rank != root ||
                                           (ncb_ops[op].flags & NCB_SUM)
                                         : R->w->rank == root;
}

static void note_error(run_t *R, int cfg, const char *fmt, size_t a, int root)
{
    if (R->errors[cfg]++ == 0)
        snprintf(R->first_error[cfg], sizeof R->first_error[cfg], fmt, a,
                 R->w->rank, root);
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

/* Flip the last received byte (NCB_FAULT=corrupt), so that the tests can
 * see the check fail. */
static void spoil(const ncb_call_t *c, int op)
{
    unsigned char *b = (ncb_ops[op].flags & NCB_SUM) ? c->rbuf : c->buf;
    if (c->bytes)
        b[c->bytes - 1] ^= 0x40;
}

/* K timed calls back to back on every rank; *per_call = elapsed / K. */
static int timed_loop(run_t *R, int cfg, int op, size_t m, int k,
                      double *per_call)
{
    ncb_target_t *t = &R->t[cfg];
    int (*fn)(void *, const ncb_call_t *) = t->run[op];
    const int check = R->o->check && (ncb_ops[op].flags & NCB_SIZED);
    const int sum = (ncb_ops[op].flags & NCB_SUM) != 0, rank = R->w->rank;
    cursor_t cur;
    cursor_init(R, &cur, m);
    ncb_call_t c;
    double t0 = ncb_now();
    for (int i = 0; i < k; i++) {
        call_at(R, &cur, op, m, &c);
        if (check) {
            /* fresh data: the producer stamps both ends of its buffer */
            if (sum)
                stamp_u32(c.sbuf, c.count, R->call, rank);
            else if (rank == c.root)
                stamp_bytes(c.buf, m, R->call);
        }
        int rc = fn(t->ctx, &c);
        if (rc != 0)
            return call_failed(R, cfg, op, &c, rc);
        if (R->fault && rank == 1 && receives(R, op, c.root))
            spoil(&c, op);
        if (check && receives(R, op, c.root)) {
            int ok = sum ? stamp_u32_ok(c.rbuf, c.count, R->call, R->w->p)
                         : stamp_bytes_ok(c.buf, m, R->call);
            if (!ok)
                note_error(R, cfg, "timed call of %zu bytes: rank %d received "
                           "stale or wrong end bytes from root %d", m, c.root);
        }
        R->call++;
        cursor_next(R, &cur);
    }
    *per_call = (ncb_now() - t0) / k;
    return 0;
}

/* One untimed call with fully fresh data, checked byte for byte. */
static int full_check(run_t *R, int cfg, int op, size_t m)
{
    cursor_t cur;
    cursor_init(R, &cur, m);
    ncb_call_t c;
    call_at(R, &cur, op, m, &c);
    const int rank = R->w->rank, p = R->w->p;
    const uint64_t id = R->call;
    const int sum = (ncb_ops[op].flags & NCB_SUM) != 0;
    int recv = receives(R, op, c.root);
    if (sum) {
        uint32_t *s = c.sbuf, *d = c.rbuf;
        for (size_t e = 0; e < c.count; e++) {
            s[e] = fresh_u32(id, e) + (uint32_t)rank * RANK_STEP;
            d[e] = ~sum_of(fresh_u32(id, e), p);  /* differs from the answer */
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
        const uint32_t *d = c.rbuf;
        for (size_t e = 0; e < c.count; e++)
            if (d[e] != sum_of(fresh_u32(id, e), p)) {
                note_error(R, cfg, "checked call: element %zu wrong on rank "
                           "%d (root %d)", e, c.root);
                break;
            }
    } else {
        size_t bad = first_bad_byte(c.buf, m, id);
        if (bad < m)
            note_error(R, cfg, "checked call: byte %zu wrong on rank %d "
                       "(root %d)", bad, c.root);
    }
    return 0;
}

/* Rank 0 times memcpy over the same regions; the others wait. */
static double memcpy_ref(run_t *R, size_t m, int k, int reps)
{
    double *s = malloc((size_t)reps * sizeof *s), med = -1;
    if (!s)
        return -1;
    cursor_t cur;
    cursor_init(R, &cur, m);
    for (int rep = 0; rep < reps; rep++) {
        double t0 = ncb_now();
        for (int i = 0; i < k; i++) {
            size_t off = (size_t)R->order[cur.idx] * cur.stride;
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
    if (w->p < 2 || !w->ping)
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

/* Measure op at size m (0 for sizeless) over every configuration; rank 0
 * appends the rows and prints them. */
static int measure_size(run_t *R, int op, size_t m)
{
    const ncb_opts_t *o = R->o;
    ncb_world_t *w = R->w;
    const int ncfg = R->ncfg, reps = o->reps;
    int ok[NCB_MAX_CFGS];
    char why[NCB_MAX_CFGS][64];
    double est[NCB_MAX_CFGS];
    int any = 0;

    if (set_order(R, m) != 0) {
        fprintf(stderr, "numacoll-bench: out of memory for the region order\n");
        return 4;
    }

    for (int c = 0; c < ncfg; c++) {
        why[c][0] = '\0';
        ok[c] = R->t[c].run[op] != NULL;
        if (!ok[c])
            snprintf(why[c], sizeof why[c], "not in this mode");
        else if (ncb_ops[op].elem > 1 && m % ncb_ops[op].elem)
            ok[c] = 0, snprintf(why[c], sizeof why[c], "not a multiple of %zu "
                                "bytes", ncb_ops[op].elem);
        else if (R->t[c].applies &&
                 R->t[c].applies(R->t[c].ctx, op, m, why[c], sizeof why[c]))
            ok[c] = 0;
        any |= ok[c];
        R->errors[c] = 0;
        R->first_error[c][0] = '\0';
        est[c] = 0;
    }
    /* 1. warm-up and the estimate that sets K: the faster of two loops on
     * each rank (one preemption must not shrink K), the slowest rank */
    for (int c = 0; c < ncfg; c++) {
        if (!ok[c])
            continue;
        double x, y;
        int rc = timed_loop(R, c, op, m, 1, &x);
        int wn = warmup_calls(o, m);
        if (!rc && wn > 0)
            rc = timed_loop(R, c, op, m, wn, &x);
        if (!rc && wn > 0)
            rc = timed_loop(R, c, op, m, wn, &y);
        else
            y = x;
        if (rc)
            return rc;
        est[c] = x < y ? x : y;
    }
    if (w->allmax(w, est, ncfg))
        return 4;
    double worst = 0;
    for (int c = 0; c < ncfg; c++)
        worst = est[c] > worst ? est[c] : worst;
    int k = o->iters;
    if (!k) {
        double want = o->sample_us * 1e-6 / (worst > 1e-9 ? worst : 1e-9);
        k = want < 1 ? 1 : want > 100000 ? 100000 : (int)(want + 0.5);
    }
    /* 2. the single-copy limit, by rank 0 alone */
    double mc = -1;
    if ((ncb_ops[op].flags & NCB_SIZED) && any && !o->no_memcpy) {
        if (w->sync(w))
            return 4;
        if (w->rank == 0) {
            double one = memcpy_ref(R, m, 1, 3);
            double want = o->sample_us * 1e-6 / (one > 1e-9 ? one : 1e-9);
            int km = want < 1 ? 1 : want > 100000 ? 100000 : (int)(want + 0.5);
            mc = memcpy_ref(R, m, km, reps);
        }
        if (w->sync(w))
            return 4;
    }
    /* 3. samples, configurations interleaved */
    double *mine = calloc((size_t)(reps + 1) * (size_t)ncfg, sizeof *mine);
    double *all = calloc((size_t)(reps + 1) * (size_t)ncfg * (size_t)w->p,
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
        for (int c = 0; c < ncfg && !rc; c++) {
            if (!ok[c])
                continue;
            if (R->t[c].barrier(R->t[c].ctx)) {
                fprintf(stderr, "numacoll-bench: rank %d: barrier failed: %s\n",
                        w->rank, R->t[c].last_error(R->t[c].ctx));
                rc = 3;
                break;
            }
            rc = timed_loop(R, c, op, m, k, &mine[rep * ncfg + c]);
        }
    /* 4. one fully checked call */
    for (int c = 0; c < ncfg && !rc; c++)
        if (ok[c] && o->check && (ncb_ops[op].flags & NCB_SIZED))
            rc = full_check(R, c, op, m);
    if (rc) {
        free(mine);
        free(all);
        free(col);
        return rc;
    }
    for (int c = 0; c < ncfg; c++) {
        mine[reps * ncfg + c] = (double)R->errors[c];
        if (R->errors[c])
            fprintf(stderr, "numacoll-bench: %s %s: %s (%ld bad calls on "
                    "this rank)\n", ncb_ops[op].name, o->cfg[c].label,
                    R->first_error[c], R->errors[c]);
    }
    if (w->gather(w, mine, (reps + 1) * ncfg, all)) {
        free(mine);
        free(all);
        free(col);
        return 4;
    }
    if (w->rank == 0) {
        int stride = (reps + 1) * ncfg;
        for (int c = 0; c < ncfg; c++) {
            ncb_row_t *row = ncb_report_add(R->rep);
            if (!row)
                break;
            row->op = op;
            row->cfg = c;
            row->bytes = m;
            row->memcpy_s = mc;
            if (!ok[c]) {
                row->status = NCB_ROW_NA;
                snprintf(row->note, sizeof row->note, "%s", why[c]);
                continue;
            }
            row->calls = k;
            row->samples = reps;
            long bad = 0;
            for (int rep = 0; rep < reps; rep++) {
                double v = 0;
                for (int r = 0; r < w->p; r++) {
                    double x = all[r * stride + rep * ncfg + c];
                    v = x > v ? x : v;
                }
                col[rep] = v;
            }
            for (int r = 0; r < w->p; r++)
                bad += (long)all[r * stride + reps * ncfg + c];
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
            ncb_print_rows(R->rep, op, m, stdout);
            fflush(stdout);
        }
    }
    free(mine);
    free(all);
    free(col);
    return 0;
}

/* Map and touch the arenas for messages up to maxm; 0 or 4. */
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
    R->sarena = arena_map(R->arena);
    R->rarena = arena_map(R->arena);
    if (!R->sarena || !R->rarena) {
        fprintf(stderr, "numacoll-bench: rank %d: cannot map 2 x %zu bytes of "
                "buffers\n", w->rank, R->arena);
        if (R->sarena)
            munmap(R->sarena, R->arena);
        if (R->rarena)
            munmap(R->rarena, R->arena);
        return 4;
    }
    /* Touch every page now: page faults must not land in a timed loop. */
    fill_bytes(R->sarena, R->arena, 0x51, 0);
    memset(R->rarena, 0xA5, R->arena);
    return 0;
}

static void session_fini(run_t *R)
{
    munmap(R->sarena, R->arena);
    munmap(R->rarena, R->arena);
    free(R->order);
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
    if (session_init(&R, o, w, maxm))
        return 4;
    R.t = t;
    R.ncfg = ncfg;
    R.rep = rep;
    if (w->rank == 0) {
        rep->arena = R.arena;
        rep->llc = ncb_llc_bytes();
    }
    int rc = 0;
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
        if (w->rank == 0 && !o->quiet)
            ncb_print_op_header(rep, op, stdout);
        if (ncb_ops[op].flags & NCB_SIZED) {
            for (int i = 0; i < o->nsizes && !rc; i++)
                rc = measure_size(&R, op, o->sizes[i]);
        } else {
            rc = measure_size(&R, op, 0);
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
