/*
 * The performance model of the pipelined Bcast (DESIGN.md section 4): the
 * three formulas, the optimum (f*, s*) for a queue budget, and the fit of
 * the model's constants on this machine from short microbenchmarks.
 *
 * What the fit measures, and where:
 *  t_local, t_cross  rank 0 alone (the others wait in the bootstrap): the
 *                    slope of a line fitted to memcpy times of 64 KiB .. 4
 *                    MiB, the source on rank 0's node, then on another node
 *                    (libnuma) when the machine has two nodes with memory.
 *  t_hop             ranks 0 and 1: ping-pong on two cache lines of a POSIX
 *                    shm scratch segment, half the round trip.
 *  t_A, t_WO         ranks 0 and 1: rank 1 writes 32 lines and hands the
 *                    turn over; rank 0 walks them as a pointer chain with
 *                    fetch_sub (t_A) or acquire loads (t_WO): the cost per
 *                    line another rank last wrote.
 *  t_W[kind][k]      every rank: back-to-back 8-byte inline Bcasts with
 *                    rotating roots on a team with that tree, the slowest
 *                    rank's time per call, minus t_WO + t_A. A line
 *                    t_W = a + c * depth fitted through the measured trees
 *                    fills the (kind, radix) pairs quick mode skips.
 * Every wait spins, then yields, with a deadline, so oversubscribed runs
 * (more ranks than cores) finish: they then measure the scheduler, which is
 * what such a team will see. With p = 1 nobody can be notified: t_hop, t_A
 * and t_WO come from rank 0's own cache and t_W is 0.
 */
#include <fcntl.h>
#include <math.h>
#include <numa.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "coll/tree.h"
#include "coll/wait.h"
#include "tools/tune/model.h"

/* ---- formulas --------------------------------------------------------- */

static double ceil_div(size_t a, size_t b)
{
    return (double)(a / b + (a % b != 0));
}

double nc__model_bcast_time(double t, double t_W, double t_WO, double t_A,
                            size_t m, size_t f, unsigned s, unsigned q)
{
    if (f == 0 || s == 0)
        return INFINITY;   /* no such configuration: never the best */
    if (q == 0)
        q = 1;
    double nf = ceil_div(m, f), tc = (double)f * t, mt = (double)m * t;
    if (s == 1)
        return nf * (t_WO + t_A) + nf * t_W + 2.0 * mt;
    /* s*f may exceed SIZE_MAX only for absurd inputs; saturate */
    size_t b = f > SIZE_MAX / s ? SIZE_MAX : f * s;
    double nb = ceil_div(m, b);
    if (q == 1)
        return nb * (t_WO + tc + t_A) + nf * t_W + mt;
    return (double)q * nb * (t_WO + t_A) + tc + nf * t_W + mt;
}

void nc__model_opt(double t, double t_W, size_t m, size_t b, double *f_star,
                   double *s_star)
{
    if (m == 0)
        m = 1;
    if (b == 0)
        b = 1;
    /* the bytes one queue round carries, m / ceil(m/b) */
    double per_round = (double)m / ceil_div(m, b);
    double f = t > 0 ? sqrt(per_round * t_W / t) : 0.0;
    if (f_star)
        *f_star = f;
    if (s_star)
        *s_star = f > 0 ? (double)b / f : 0.0;
}

void nc__model_opt_rounded(double t, double t_W, size_t m, size_t b,
                           unsigned q, size_t fmax, unsigned smax,
                           size_t *f, unsigned *s)
{
    double fs;
    nc__model_opt(t, t_W, m, b, &fs, NULL);
    if (q == 0)
        q = 1;
    if (smax == 0)
        smax = 1;
    size_t hi = fmax / 64 * 64;
    if (hi < 64)
        hi = 64;
    /* nearest multiple of a cache line, so buffers stay line-aligned */
    double lines = floor(fs / 64.0 + 0.5);
    size_t fr = lines < 1.0 ? 64
              : lines > (double)(hi / 64) ? hi : (size_t)lines * 64;
    size_t want = b / fr + (b % fr != 0);
    unsigned sr = want < 1 ? 1 : want > smax ? smax : (unsigned)want;
    /* a multiple of q: every bank holds the same number of buffers */
    unsigned up = (sr + q - 1) / q * q;
    if (up > smax || up < sr)            /* over the cap, or wrapped */
        up = smax / q * q;
    if (up == 0)                         /* smax < q: q buffers at least */
        up = q;
    if (f)
        *f = fr;
    if (s)
        *s = up;
}

int nc__model_fit_line(const double *x, const double *y, int n, double *a,
                       double *b)
{
    if (!x || !y || n < 2)
        return -1;
    double mx = 0, my = 0;
    for (int i = 0; i < n; i++) {
        mx += x[i];
        my += y[i];
    }
    mx /= n;
    my /= n;
    /* centred sums: no cancellation when x is large and its spread small */
    double sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        sxx += (x[i] - mx) * (x[i] - mx);
        sxy += (x[i] - mx) * (y[i] - my);
    }
    if (!(sxx > 0))
        return -1;
    double slope = sxy / sxx;
    if (b)
        *b = slope;
    if (a)
        *a = my - slope * mx;
    return 0;
}

/* ---- tree depth ------------------------------------------------------- */

int nc__model_tree_depth(int kind, unsigned radix, int p,
                         const numacoll_locality_t *loc)
{
    if (p < 1 || radix > INT32_MAX)
        return -1;
    numacoll_locality_t *one = NULL;
    if (kind == NUMACOLL_TREE_NUMA && !loc) {
        /* no localities: every rank on one node */
        one = calloc((size_t)p, sizeof *one);
        if (!one)
            return -1;
        loc = one;
    }
    nc__tree_t tr;
    int rc = nc__tree_init(&tr, kind, p, (int)radix, loc);
    free(one);   /* the tree keeps its own group arrays */
    if (rc != NUMACOLL_OK)
        return -1;
    int depth = 0;
    for (int r = 0; r < p && depth >= 0; r++) {
        int d = 0;
        /* a sound tree reaches the root within p-1 hops; more is a cycle */
        for (int u = r; u != 0; d++) {
            u = nc__tree_parent(&tr, 0, u);
            if (u < 0 || d >= p) {
                depth = -1;
                break;
            }
        }
        if (depth >= 0 && d > depth)
            depth = d;
    }
    nc__tree_fini(&tr);
    return depth;
}

/* ---- fit: helpers ----------------------------------------------------- */

#define STOP UINT64_MAX          /* "no more rounds" in a probe line */
#define WAIT_LIMIT_S 5.0         /* a probe peer silent this long failed */
#define KiB ((size_t)1 << 10)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n-1] (reorders v); 0 for n = 0. */
static double median(double *v, int n)
{
    if (n <= 0)
        return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Every rank's status in, the first failure (or OK) out, on every rank, so
 * that all ranks leave a phase together. */
static int agree(const numacoll_bootstrap_t *b, int rc)
{
    int *all = calloc((size_t)b->size, sizeof *all);
    if (!all)
        return NUMACOLL_ERR_NOMEM;  /* cannot tell the others: no exchange */
    int out = rc;
    if (b->allgather(&rc, all, sizeof rc, b->ctx) != 0)
        out = NUMACOLL_ERR_BOOTSTRAP;
    for (int r = 0; r < b->size && out == NUMACOLL_OK; r++)
        out = all[r];
    free(all);
    return out;
}

/* Largest of every rank's x, on every rank; negative on failure. */
static double allmax(const numacoll_bootstrap_t *b, double x)
{
    double *all = calloc((size_t)b->size, sizeof *all);
    if (!all || b->allgather(&x, all, sizeof x, b->ctx) != 0) {
        free(all);
        return -1.0;
    }
    double m = all[0];
    for (int r = 1; r < b->size; r++)
        if (all[r] > m)
            m = all[r];
    free(all);
    return m;
}

/* Spin spin polls, then yield on every poll: the peer may share our core.
 * Returns the value seen once *w == want or STOP, or STOP after
 * WAIT_LIMIT_S (the caller's round counting then fails). */
static uint64_t wait_value(_Atomic uint64_t *w, uint64_t want, unsigned spin,
                           int *timed_out)
{
    double limit = 0.0;
    for (unsigned long i = 0;; i++) {
        uint64_t v = atomic_load_explicit(w, memory_order_acquire);
        if (v == want || v == STOP)
            return v;
        if (i < spin) {
            nc__cpu_relax();
            continue;
        }
        sched_yield();
        double t = now_s();
        if (limit == 0.0)
            limit = t + WAIT_LIMIT_S;
        else if (t > limit) {
            *timed_out = 1;
            return STOP;
        }
    }
}

/* ---- fit: copy cost --------------------------------------------------- */

static _Atomic unsigned char copy_sink;

/* Seconds per byte: slope of min-of-reps memcpy times over sizes from
 * 64 KiB to 4 MiB, copying from src (max bytes, touched) into dst. */
static double copy_slope(unsigned char *dst, const unsigned char *src,
                         int reps)
{
    static const size_t sizes[] = {64 * KiB, 128 * KiB, 256 * KiB, 512 * KiB,
                                   1024 * KiB, 2048 * KiB, 4096 * KiB};
    enum { NS = sizeof sizes / sizeof sizes[0] };
    double x[NS], y[NS], a, slope;
    for (int i = 0; i < NS; i++) {
        double best = INFINITY;
        memcpy(dst, src, sizes[i]);   /* warm: TLB and caches as in a run */
        for (int r = 0; r < reps; r++) {
            double t0 = now_s();
            memcpy(dst, src, sizes[i]);
            double dt = now_s() - t0;
            /* read the copy, so the compiler cannot drop it as dead */
            atomic_store_explicit(&copy_sink, dst[sizes[i] - 1],
                                  memory_order_relaxed);
            if (dt < best)
                best = dt;
        }
        x[i] = (double)sizes[i];
        y[i] = best;
    }
    if (nc__model_fit_line(x, y, NS, &a, &slope) != 0 || !(slope > 0))
        slope = y[NS - 1] / x[NS - 1];   /* noise flattened the line */
    return slope;
}

/* A node with memory other than `mine` that we may allocate on, or -1. */
static int other_node(int mine)
{
    if (numa_available() < 0 || numa_max_node() < 1)
        return -1;
    struct bitmask *allowed = numa_get_mems_allowed();
    int found = -1;
    for (int n = 0; n <= numa_max_node() && found < 0; n++) {
        long long free_b;
        if (n != mine && allowed && numa_bitmask_isbitset(allowed, (unsigned)n)
            && numa_node_size64(n, &free_b) > 0)
            found = n;
    }
    if (allowed)
        numa_bitmask_free(allowed);
    return found;
}

static int measure_copy(int quick, int verbose, double *t_local,
                        double *t_cross)
{
    const size_t max = 4096 * KiB;
    const int reps = quick ? 4 : 16;
    unsigned char *src = malloc(max), *dst = malloc(max);
    if (!src || !dst) {
        if (verbose >= 1)
            fprintf(stderr, "numacoll-model: cannot allocate 2 x %zu bytes "
                    "for the copy benchmark\n", max);
        free(src);
        free(dst);
        return NUMACOLL_ERR_NOMEM;
    }
    memset(src, 0x5a, max);
    memset(dst, 0, max);
    *t_local = copy_slope(dst, src, reps);
    *t_cross = *t_local;
    int cpu = sched_getcpu();
    int node = numa_available() < 0 || cpu < 0 ? -1 : numa_node_of_cpu(cpu);
    int far = other_node(node);
    if (far >= 0) {
        unsigned char *remote = numa_alloc_onnode(max, far);
        if (remote) {
            memset(remote, 0x5a, max);  /* first touch lands on node far */
            *t_cross = copy_slope(dst, remote, reps);
            numa_free(remote, max);
        } else if (verbose >= 1) {
            fprintf(stderr, "numacoll-model: cannot allocate %zu bytes on "
                    "node %d; t_cross = t_local\n", max, far);
        }
    }
    free(src);
    free(dst);
    return NUMACOLL_OK;
}

/* ---- fit: cache-line probes between ranks 0 and 1 --------------------- */

/* Lines 256 bytes apart: the adjacent-line prefetcher fetches pairs of
 * lines, which would hide the transfer we time. */
#define CHAIN 32                 /* lines rank 0 walks per timed round */

typedef struct line {
    _Alignas(256) _Atomic uint64_t v;
} line_t;

typedef struct probe {
    line_t ping;                 /* rank 0 -> 1 */
    line_t pong;                 /* rank 1 -> 0 */
    line_t turn;                 /* odd: rank 1's turn to write the chain */
    line_t chain[CHAIN];         /* (next index << 8) | 0x80, by rank 1 */
} probe_t;

typedef struct shm_msg {
    int status;
    char name[64];
} shm_msg_t;

static unsigned shm_seq;   /* names of successive fits of one process */

/* Collective: a probe_t every rank maps. Rank 0 creates it, the others
 * open it, rank 0 unlinks it once all have tried, so nothing is left in
 * /dev/shm even if a rank dies later. */
static int probe_map(const numacoll_bootstrap_t *b, probe_t **out)
{
    shm_msg_t mine = {.status = NUMACOLL_OK}, *all;
    const size_t len = sizeof(probe_t);
    void *addr = MAP_FAILED;
    *out = NULL;
    if (b->rank == 0) {
        snprintf(mine.name, sizeof mine.name, "/numacoll-model-%ld-%u",
                 (long)getpid(), shm_seq++);
        int fd = shm_open(mine.name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0 || ftruncate(fd, (off_t)len) != 0 ||
            (addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                         0)) == MAP_FAILED)
            mine.status = NUMACOLL_ERR_SYS;
        if (fd >= 0)
            close(fd);
        if (mine.status != NUMACOLL_OK && fd >= 0)
            shm_unlink(mine.name);
    }
    all = calloc((size_t)b->size, sizeof *all);
    if (!all || b->allgather(&mine, all, sizeof mine, b->ctx) != 0) {
        if (b->rank == 0 && mine.status == NUMACOLL_OK) {
            munmap(addr, len);
            shm_unlink(mine.name);
        }
        free(all);
        return all ? NUMACOLL_ERR_BOOTSTRAP : NUMACOLL_ERR_NOMEM;
    }
    int rc = all[0].status;
    if (rc == NUMACOLL_OK && b->rank != 0) {
        int fd = shm_open(all[0].name, O_RDWR, 0);
        if (fd < 0 || (addr = mmap(NULL, len, PROT_READ | PROT_WRITE,
                                   MAP_SHARED, fd, 0)) == MAP_FAILED)
            rc = NUMACOLL_ERR_SYS;
        if (fd >= 0)
            close(fd);
    }
    rc = agree(b, rc);
    if (b->rank == 0 && all[0].status == NUMACOLL_OK)
        shm_unlink(all[0].name);
    free(all);
    if (rc != NUMACOLL_OK) {
        if (addr != MAP_FAILED)
            munmap(addr, len);
        return rc;
    }
    *out = addr;
    return NUMACOLL_OK;
}

/* Write the chain as one cycle in shuffled order (Sattolo's shuffle, fixed
 * seed), so no stride prefetcher can guess the next line. */
static void chain_write(line_t *chain)
{
    unsigned perm[CHAIN];
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (unsigned i = 0; i < CHAIN; i++)
        perm[i] = i;
    for (unsigned i = CHAIN - 1; i > 0; i--) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned j = (unsigned)((x >> 33) % i);
        unsigned tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    for (unsigned i = 0; i < CHAIN; i++)
        atomic_store_explicit(&chain[perm[i]].v,
                              (uint64_t)perm[(i + 1) % CHAIN] << 8 | 0x80,
                              memory_order_relaxed);
}

/* Seconds per line of one walk of the chain: each step's address comes
 * from the previous step's value, so the misses cannot overlap, and the
 * clock (10 ns steps on some VMs) is read once per CHAIN operations. rmw:
 * fetch_sub (t_A), else acquire load (t_WO). */
static double chain_walk(line_t *chain, int rmw)
{
    unsigned idx = 0;
    double t0 = now_s();
    for (int j = 0; j < CHAIN; j++) {
        uint64_t v = rmw ? atomic_fetch_sub_explicit(&chain[idx].v, 1,
                                                     memory_order_acq_rel)
                         : atomic_load_explicit(&chain[idx].v,
                                                memory_order_acquire);
        idx = (unsigned)(v >> 8) % CHAIN;
    }
    return (now_s() - t0) / CHAIN;
}

/*
 * Ranks 0 and 1. Rank 0 drives rounds and ends them with STOP; rank 1
 * follows. Returns 0, or -1 when a wait timed out.
 *  hop: rank 0 writes ping = i, rank 1 answers pong = i: a round trip is
 *       two line transfers.
 *  A/WO: rank 0 sets turn = 2i+1; rank 1 writes the chain, then turn =
 *       2i+2 (release, after the chain's stores); rank 0 walks the chain
 *       with fetch_sub (even i) or acquire loads (odd i): every line was
 *       last written by rank 1, as nreaders is by the readers.
 */
static int probe_lines(probe_t *pr, int rank, int quick, unsigned spin,
                       double *t_hop, double *t_A, double *t_WO)
{
    enum { BLOCK = 64, MAXBLOCKS = 256, MAXROUNDS = 4096 };
    const double budget = quick ? 0.1 : 0.3;   /* seconds per probe */
    int to = 0;

    if (rank == 1) {
        for (uint64_t i = 1;; i++) {
            if (wait_value(&pr->ping.v, i, spin, &to) == STOP)
                break;
            atomic_store_explicit(&pr->pong.v, i, memory_order_release);
        }
        for (uint64_t i = 0; !to; i++) {
            if (wait_value(&pr->turn.v, 2 * i + 1, spin, &to) == STOP)
                break;
            chain_write(pr->chain);
            atomic_store_explicit(&pr->turn.v, 2 * i + 2,
                                  memory_order_release);
        }
        return to ? -1 : 0;
    }

    /* rank 0 */
    double blocks[MAXBLOCKS];
    int nb = 0;
    uint64_t i = 1;
    double end = now_s() + budget;
    while (nb < MAXBLOCKS && !to && (nb < 3 || now_s() < end)) {
        double t0 = now_s();
        for (int j = 0; j < BLOCK && !to; j++, i++) {
            atomic_store_explicit(&pr->ping.v, i, memory_order_release);
            wait_value(&pr->pong.v, i, spin, &to);
        }
        /* the first block warms the lines and the code: not kept */
        if (i > BLOCK + 1)
            blocks[nb++] = (now_s() - t0) / BLOCK / 2.0;
        else
            end = now_s() + budget;
    }
    atomic_store_explicit(&pr->ping.v, STOP, memory_order_release);
    if (to)
        return -1;
    *t_hop = median(blocks, nb);

    double sa[MAXROUNDS / 2], sw[MAXROUNDS / 2];
    int na = 0, nw = 0;
    end = now_s() + budget;
    for (uint64_t k = 0; k < MAXROUNDS && !to && (k < 64 || now_s() < end);
         k++) {
        atomic_store_explicit(&pr->turn.v, 2 * k + 1, memory_order_release);
        if (wait_value(&pr->turn.v, 2 * k + 2, spin, &to) == STOP)
            break;
        double dt = chain_walk(pr->chain, k % 2 == 0);
        if (k >= 8) {              /* first rounds: warm-up */
            if (k % 2 == 0)
                sa[na++] = dt;
            else
                sw[nw++] = dt;
        }
    }
    atomic_store_explicit(&pr->turn.v, STOP, memory_order_release);
    if (to)
        return -1;
    *t_A = median(sa, na);
    *t_WO = median(sw, nw);
    return 0;
}

/* p = 1: no peer. The same walks over lines of our own cache: lower
 * bounds (t_W is 0 anyway, nobody is notified). */
static int probe_alone(double *t_hop, double *t_A, double *t_WO)
{
    enum { N = 64 };
    line_t *chain = aligned_alloc(256, sizeof(line_t) * CHAIN);
    if (!chain)
        return NUMACOLL_ERR_NOMEM;
    double sa[N], sw[N];
    chain_write(chain);
    for (int k = 0; k < N; k++) {
        chain_write(chain);   /* fetch_sub consumed the 0x80 margin */
        sa[k] = chain_walk(chain, 1);
        sw[k] = chain_walk(chain, 0);
    }
    free(chain);
    *t_A = median(sa, N);
    *t_WO = median(sw, N);
    *t_hop = *t_A;
    return NUMACOLL_OK;
}

/* ---- fit: tree latency ------------------------------------------------ */

/* n back-to-back 8-byte Bcasts, the root moving on by one each call. */
static int run_calls(numacoll_team_t *team, unsigned long n,
                     unsigned long *call)
{
    const int p = numacoll_team_size(team);
    uint64_t word = *call;
    int rc = NUMACOLL_OK;
    for (unsigned long c = 0; c < n && rc == NUMACOLL_OK; c++, (*call)++)
        rc = numacoll_bcast(team, &word, sizeof word,
                            (int)(*call % (unsigned long)p));
    return rc;
}

/*
 * Seconds per back-to-back 8-byte inline Bcast with rotating roots on a
 * team with this tree, the slowest rank's (every rank gets the value);
 * 0 when the team cannot be made with this tree (skipped), negative on a
 * failure that ends the fit. *loc_out (p entries), if not NULL, receives
 * the team's localities.
 */
static double time_inline(const numacoll_bootstrap_t *b,
                          const numacoll_config_t *base, int kind,
                          unsigned radix, int quick,
                          numacoll_locality_t *loc_out)
{
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.topology = base->topology;
    cfg.pu = base->pu;
    /* warnings only: the teams' info lines would bury the model's */
    cfg.verbose = base->verbose < 1 ? base->verbose : 1;
    cfg.spin_count = base->spin_count;
    cfg.timeout_ms = base->timeout_ms;
    cfg.mem_budget = base->mem_budget;
    /* The rule is what the tuned team will read; tree/radix say the same
     * explicitly, for a core that ignores tuning_text. The string must
     * outlive the team. */
    char rule[128];
    snprintf(rule, sizeof rule,
             "bcast p=1-* size=0-56 alg=inline tree=%s k=%u\n",
             numacoll_tree_name((numacoll_tree_kind_t)kind), radix);
    cfg.tuning_text = rule;
    cfg.tuning_file = NULL;
    cfg.tree = kind;
    cfg.radix = radix;

    numacoll_team_t *team;
    int rc = numacoll_team_create(b, &cfg, &team);
    if (rc == NUMACOLL_ERR_BOOTSTRAP)
        return -1.0;
    if (rc != NUMACOLL_OK) {
        if (base->verbose >= 1 && b->rank == 0)
            fprintf(stderr, "numacoll-model: no team with tree %s k=%u (%s); "
                    "its t_W comes from the fitted line\n",
                    numacoll_tree_name((numacoll_tree_kind_t)kind), radix,
                    numacoll_strerror(rc));
        return 0.0;
    }
    for (int r = 0; loc_out && r < b->size; r++)
        numacoll_team_locality(team, r, &loc_out[r]);

    /* Every step ends in an exchange, so a rank that failed is not left
     * waiting alone in the next Bcast. */
    unsigned long call = 0;
    double result = -1.0, t0, cal, best = INFINITY;
    rc = run_calls(team, 16, &call);                 /* warm-up */
    if (rc == NUMACOLL_OK)
        rc = numacoll_barrier(team);
    if ((rc = agree(b, rc)) != NUMACOLL_OK)
        goto out;
    /* calibrate: how many calls fill a block on the slowest rank */
    t0 = now_s();
    rc = run_calls(team, 32, &call);
    cal = (now_s() - t0) / 32;
    if ((rc = agree(b, rc)) != NUMACOLL_OK || (cal = allmax(b, cal)) <= 0)
        goto out;
    const double want = (quick ? 0.015 : 0.03) / cal;
    const unsigned long n = want < 32 ? 32 : want > 20000 ? 20000
                                                          : (unsigned long)want;
    for (int blk = 0; blk < (quick ? 4 : 5); blk++) {
        if ((rc = agree(b, numacoll_barrier(team))) != NUMACOLL_OK)
            goto out;
        t0 = now_s();
        rc = run_calls(team, n, &call);
        double per = (now_s() - t0) / (double)n;
        if ((rc = agree(b, rc)) != NUMACOLL_OK || (per = allmax(b, per)) <= 0)
            goto out;
        if (per < best)   /* the least disturbed block */
            best = per;
    }
    result = best;
out:
    if (result < 0 && base->verbose >= 1)
        fprintf(stderr, "numacoll-model: rank %d: inline Bcast on tree %s "
                "k=%u failed: %s\n", b->rank,
                numacoll_tree_name((numacoll_tree_kind_t)kind), radix,
                rc != NUMACOLL_OK ? numacoll_team_last_error(team)
                                  : "bootstrap exchange failed");
    numacoll_team_destroy(team);
    return result;
}

/* Radixes that give different trees: flat and chain ignore it. */
static unsigned max_radix_of(int kind)
{
    return kind == NUMACOLL_TREE_FLAT || kind == NUMACOLL_TREE_CHAIN
               ? 2 : NC_MODEL_MAX_RADIX;
}

/* NUMA nodes among the localities (those of unknown node as one). */
static int count_nodes(const numacoll_locality_t *loc, int p)
{
    int n = 0;
    for (int r = 0; r < p; r++) {
        int seen = 0;
        for (int j = 0; j < r && !seen; j++)
            seen = loc[j].numa == loc[r].numa;
        n += !seen;
    }
    return n;
}

/* Fill t_W for every kind and radix 2..max: measured entries minus the
 * notification-independent t_WO + t_A, the rest from a line through the
 * measured ones against depth. */
static int fit_tree_latency(const numacoll_bootstrap_t *b,
                            const numacoll_config_t *base, int quick,
                            nc__model_t *m)
{
    const int p = b->size;
    if (p == 1) {
        memset(m->t_W, 0, sizeof m->t_W);   /* nobody to notify */
        return NUMACOLL_OK;
    }
    double lat[NUMACOLL_TREE_COUNT][NC_MODEL_MAX_RADIX + 1] = {{0}};
    int depth[NUMACOLL_TREE_COUNT][NC_MODEL_MAX_RADIX + 1];
    numacoll_locality_t *loc = calloc((size_t)p, sizeof *loc);
    if (!loc)
        return agree(b, NUMACOLL_ERR_NOMEM);
    int have_loc = 0, rc = agree(b, NUMACOLL_OK);

    for (int kind = 0; kind < NUMACOLL_TREE_COUNT && rc == NUMACOLL_OK;
         kind++)
        for (unsigned k = 2; k <= max_radix_of(kind) && rc == NUMACOLL_OK;
             k++) {
            /* quick: one radix per kind, and numa only when the team spans
             * nodes (on one node it is the knomial tree) */
            if (quick && (k > 2 || (kind == NUMACOLL_TREE_NUMA &&
                                    count_nodes(loc, p) < 2)))
                break;
            double v = time_inline(b, base, kind, k, quick,
                                   have_loc ? NULL : loc);
            if (v < 0)
                rc = NUMACOLL_ERR_BOOTSTRAP;
            if (v > 0)
                have_loc = 1;
            lat[kind][k] = v;
        }
    if (rc != NUMACOLL_OK) {
        free(loc);
        return rc;
    }

    /* measured t_W, and the points of the line */
    double x[NUMACOLL_TREE_COUNT * NC_MODEL_MAX_RADIX];
    double y[NUMACOLL_TREE_COUNT * NC_MODEL_MAX_RADIX];
    int n = 0;
    const double floor_hop = 0.5 * m->t_hop;
    for (int kind = 0; kind < NUMACOLL_TREE_COUNT; kind++)
        for (unsigned k = 2; k <= NC_MODEL_MAX_RADIX; k++) {
            depth[kind][k] = nc__model_tree_depth(kind, k, p,
                                                  have_loc ? loc : NULL);
            if (lat[kind][k] > 0 && depth[kind][k] >= 0) {
                /* a depth-d wave crosses d lines: at least half a hop each
                 * even when the clock's noise says less */
                double w = lat[kind][k] - (m->t_WO + m->t_A);
                double lo = floor_hop * (depth[kind][k] ? depth[kind][k] : 1);
                lat[kind][k] = w > lo ? w : lo;
                x[n] = depth[kind][k];
                y[n++] = lat[kind][k];
            }
        }
    free(loc);
    if (n == 0 && base->verbose >= 1 && b->rank == 0)
        fprintf(stderr, "numacoll-model: no tree could be measured; t_W is "
                "t_hop per level\n");
    double a = 0, c = m->t_hop;
    if (n == 0 || nc__model_fit_line(x, y, n, &a, &c) != 0 || !(c > 0)) {
        /* one depth only (every tree alike at small p), or a line falling
         * with depth: keep the slope t_hop, fit the offset */
        c = m->t_hop;
        a = 0;
        for (int i = 0; i < n; i++)
            a += (y[i] - c * x[i]) / n;
    }

    for (int kind = 0; kind < NUMACOLL_TREE_COUNT; kind++)
        for (unsigned k = 2; k <= NC_MODEL_MAX_RADIX; k++) {
            int d = depth[kind][k];
            double fitted = d <= 0 ? 0.0 : fmax(a + c * d, floor_hop * d);
            double measured = max_radix_of(kind) == 2 ? lat[kind][2]
                                                          : lat[kind][k];
            m->t_W[kind][k] = measured > 0 ? measured : fitted;
            /* flat and chain: one line, the radix changes nothing */
            if (base->verbose >= 2 && b->rank == 0 &&
                (k == 2 || max_radix_of(kind) > 2)) {
                char mtxt[32] = "not measured";
                if (measured > 0)
                    snprintf(mtxt, sizeof mtxt, "measured %.1f ns",
                             measured * 1e9);
                fprintf(stderr, "numacoll-model: t_W %-7s k=%u depth %d: %s, "
                        "fitted %.1f ns\n",
                        numacoll_tree_name((numacoll_tree_kind_t)kind), k, d,
                        mtxt, fitted * 1e9);
            }
        }
    if (base->verbose >= 2 && b->rank == 0)
        fprintf(stderr, "numacoll-model: t_W = %.1f ns + %.1f ns * depth "
                "(%d measured trees)\n", a * 1e9, c * 1e9, n);
    return NUMACOLL_OK;
}

/* ---- fit -------------------------------------------------------------- */

int nc__model_fit(const numacoll_bootstrap_t *b, const numacoll_config_t *base,
                  int quick, nc__model_t *out)
{
    if (!b || !b->allgather || b->size < 1 || b->rank < 0 ||
        b->rank >= b->size || !out)
        return NUMACOLL_ERR_ARG;
    numacoll_config_t defaults;
    if (!base) {
        numacoll_config_init(&defaults);
        base = &defaults;
    }
    const double start = now_s();
    nc__model_t m;
    memset(&m, 0, sizeof m);
    int rc = NUMACOLL_OK;

    /* 1. copy cost, rank 0 alone so nobody competes for its bandwidth */
    if (b->rank == 0)
        rc = measure_copy(quick, base->verbose, &m.t_local, &m.t_cross);
    rc = agree(b, rc);
    if (rc != NUMACOLL_OK)
        return rc;

    /* 2. line latencies between ranks 0 and 1 */
    if (b->size == 1) {
        rc = probe_alone(&m.t_hop, &m.t_A, &m.t_WO);
        if (rc != NUMACOLL_OK)
            return rc;
    } else {
        probe_t *pr;
        rc = probe_map(b, &pr);
        if (rc != NUMACOLL_OK)
            return rc;
        if (b->rank <= 1 &&
            probe_lines(pr, b->rank, quick, base->spin_count, &m.t_hop,
                        &m.t_A, &m.t_WO) != 0) {
            if (base->verbose >= 1)
                fprintf(stderr, "numacoll-model: rank %d: cache-line probe "
                        "peer silent for %.0f s\n", b->rank, WAIT_LIMIT_S);
            rc = NUMACOLL_ERR_TIMEOUT;
        }
        munmap(pr, sizeof *pr);
        rc = agree(b, rc);
        if (rc != NUMACOLL_OK)
            return rc;
    }

    /* 3. rank 0's constants to every rank: the tree fit subtracts them */
    nc__model_t *all = calloc((size_t)b->size, sizeof *all);
    if (!all)
        return agree(b, NUMACOLL_ERR_NOMEM);
    rc = agree(b, NUMACOLL_OK);
    if (rc == NUMACOLL_OK && b->allgather(&m, all, sizeof m, b->ctx) != 0)
        rc = NUMACOLL_ERR_BOOTSTRAP;
    if (rc == NUMACOLL_OK)
        m = all[0];
    free(all);
    if (rc != NUMACOLL_OK)
        return rc;

    /* 4. tree latencies: every rank takes part, every rank gets the same
     * values (maxima over the ranks, derived from rank 0's constants) */
    rc = fit_tree_latency(b, base, quick, &m);
    if (rc != NUMACOLL_OK)
        return rc;

    if (base->verbose >= 2 && b->rank == 0)
        fprintf(stderr, "numacoll-model: p=%d%s: t_local %.4g ns/B, t_cross "
                "%.4g ns/B, t_hop %.1f ns, t_A %.1f ns, t_WO %.1f ns "
                "(%.2f s)\n", b->size, quick ? " quick" : "", m.t_local * 1e9,
                m.t_cross * 1e9, m.t_hop * 1e9, m.t_A * 1e9, m.t_WO * 1e9,
                now_s() - start);
    *out = m;
    return NUMACOLL_OK;
}
