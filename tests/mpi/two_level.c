/*
 * Bcast, Reduce, Allreduce, Barrier, Reduce_scatter(_block), Scan and
 * Exscan on communicators that span (virtual) nodes: numacoll's two-level
 * mode (ompi/coll_numacoll_hier.c).
 * tests/mpi/run.sh runs it with coll_numacoll_virtual_nodes = 2, 3 or 4
 * and coll_numacoll_virtual_split = block or rr over --mca btl self,tcp,
 * so the leaders' level goes through TCP on the loopback. A plain MPI
 * program: it passes with or without the component.
 *
 * On MPI_COMM_WORLD, every root, sizes from 1 byte to above 1 MiB (several
 * segments of coll_numacoll_hier_segsize, so the pipelined schedules run):
 *   - Bcast of bytes, byte-exact against the root's pattern;
 *   - Reduce (also MPI_IN_PLACE at the root) and Allreduce (also in place)
 *     of uint32 sums, exact against a reference each rank computes;
 *   - a non-commutative user op (composition of affine maps modulo 2^32)
 *     that must give the rank-ordered composition;
 *   - Barrier: nobody leaves before a late rank came in (one clock: the
 *     ranks share the machine);
 *   - Reduce_scatter_block (also in place) and Reduce_scatter with uneven
 *     counts and zeros, of uint32 sums and of the non-commutative op;
 *     Scan and Exscan (also in place) of both, Exscan's rank 0 buffer
 *     untouched.
 * On MPI_COMM_WORLD in reversed rank order, a few of the same; first, a
 * dup whose first collective is MPI_Comm_split_type's own.
 *
 * NC_EXPECT_TWO_LEVEL=block|rr (set by run.sh where the component is
 * loaded with virtual nodes): numacoll's MPI_T counter two_level_count
 * must grow by exactly the calls made, the non-commutative ones and every
 * Scan and Exscan counted only with block (under rr nodes are not
 * contiguous in rank order and those calls go to the previous component,
 * whose Allreduce may call the communicator's Bcast: then up to all
 * calls). NC_EXPECT_LANES=1|0: Allreduces ran in lanes (every node has two
 * processes or more: two_level_lanes_count grew), or none did.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpit.h"

static const int sizes[] = {1, 8, 1000, 65536 + 13, 300 * 1024 + 4,
                            (3 << 19) + 20};
#define NSIZES ((int)(sizeof sizes / sizeof sizes[0]))

/* calls: all made; ordered_calls: those two levels take only when nodes
 * are contiguous in rank order (block split). */
static unsigned long long calls, ordered_calls;

/* ---- contributions ---------------------------------------------------- */

static uint32_t val(int rank, size_t i, unsigned seed)
{
    uint64_t x = (uint64_t)rank * 0x9E3779B97F4A7C15ull + i * 0xBF58476D1CE4E5B9ull + seed;
    x ^= x >> 29;
    x *= 0x94D049BB133111EBull;
    return (uint32_t)(x >> 32);
}

/* An affine map x -> a x + b modulo 2^32; composing is associative and
 * does not commute. */
typedef struct { uint32_t a, b; } affine_t;

static affine_t aff(int rank, size_t i, unsigned seed)
{
    affine_t f = {val(rank, i, seed) | 1u, val(rank, i, seed + 7)};
    return f;
}

/* in op inout, in from the lower ranks: first in, then inout. */
static affine_t compose(affine_t in, affine_t io)
{
    affine_t r = {io.a * in.a, io.a * in.b + io.b};
    return r;
}

static void compose_op(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    affine_t *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = compose(a[i], b[i]);
}

/* ---- the tests -------------------------------------------------------- */

static void t_bcast(MPI_Comm comm, const char *cname, int root, int n)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    unsigned char *buf = malloc((size_t)n), *want = malloc((size_t)n);
    unsigned seed = (unsigned)(root * 131 + n);
    mpit_fill(want, (size_t)n, seed);
    if (rank == root)
        memcpy(buf, want, (size_t)n);
    else
        memset(buf, 0xA5, (size_t)n);
    int rc = MPI_Bcast(buf, n, MPI_BYTE, root, comm);
    calls++;
    MPIT_CHECK(rc == MPI_SUCCESS && memcmp(buf, want, (size_t)n) == 0,
               "%s Bcast root %d, %d bytes: rc %d, data %s", cname, root, n,
               rc, memcmp(buf, want, (size_t)n) ? "differs" : "right");
    free(buf);
    free(want);
}

/* Reduce (root >= 0) or Allreduce (root < 0) of n uint32 sums. */
static void t_sum(MPI_Comm comm, const char *cname, int root, int n,
                  bool in_place)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    unsigned seed = (unsigned)(n * 7 + root + 3 + in_place);
    uint32_t *s = malloc((size_t)n * 4), *r = malloc((size_t)n * 4);
    for (int i = 0; i < n; i++) {
        s[i] = val(rank, (size_t)i, seed);
        r[i] = 0xDEADBEEF;
    }
    bool receives = root < 0 || rank == root;
    if (in_place && receives)
        memcpy(r, s, (size_t)n * 4);
    const void *send = in_place && receives ? MPI_IN_PLACE : s;
    int rc = root >= 0
                 ? MPI_Reduce(send, r, n, MPI_UINT32_T, MPI_SUM, root, comm)
                 : MPI_Allreduce(send, r, n, MPI_UINT32_T, MPI_SUM, comm);
    calls++;
    int bad = -1;
    for (int i = 0; receives && i < n && bad < 0; i++) {
        uint32_t w = 0;
        for (int q = 0; q < size; q++)
            w += val(q, (size_t)i, seed);
        if (r[i] != w)
            bad = i;
    }
    MPIT_CHECK(rc == MPI_SUCCESS && bad < 0,
               "%s %s%s root %d, %d x uint32: rc %d, first wrong element %d",
               cname, root >= 0 ? "Reduce" : "Allreduce",
               in_place ? " in place" : "", root, n, rc, bad);
    free(s);
    free(r);
}

static void t_noncomm(MPI_Comm comm, const char *cname, int root, int n,
                      MPI_Datatype dt, MPI_Op op)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    unsigned seed = (unsigned)(n + root * 5 + 11);
    affine_t *s = malloc((size_t)n * sizeof *s), *r = malloc((size_t)n * sizeof *r);
    for (int i = 0; i < n; i++) {
        s[i] = aff(rank, (size_t)i, seed);
        r[i] = (affine_t){0, 0};
    }
    int rc = root >= 0 ? MPI_Reduce(s, r, n, dt, op, root, comm)
                       : MPI_Allreduce(s, r, n, dt, op, comm);
    calls++;
    ordered_calls++;
    int bad = -1;
    for (int i = 0; (root < 0 || rank == root) && i < n && bad < 0; i++) {
        affine_t w = aff(0, (size_t)i, seed);
        for (int q = 1; q < size; q++)
            w = compose(w, aff(q, (size_t)i, seed));
        if (r[i].a != w.a || r[i].b != w.b)
            bad = i;
    }
    MPIT_CHECK(rc == MPI_SUCCESS && bad < 0,
               "%s non-commutative %s root %d, %d maps: rc %d, first wrong "
               "element %d", cname, root >= 0 ? "Reduce" : "Allreduce", root,
               n, rc, bad);
    free(s);
    free(r);
}

/* Element i of the reduced vector from ranks lo..hi-1 (sums, or the
 * rank-ordered composition); the affine value in *w. */
static uint32_t sum_of(int lo, int hi, size_t i, unsigned seed)
{
    uint32_t w = 0;
    for (int q = lo; q < hi; q++)
        w += val(q, i, seed);
    return w;
}

static affine_t comp_of(int lo, int hi, size_t i, unsigned seed)
{
    affine_t w = aff(lo, i, seed);
    for (int q = lo + 1; q < hi; q++)
        w = compose(w, aff(q, i, seed));
    return w;
}

/* n contributions of rank (uint32 or affine maps) into s. */
static void contrib(unsigned char *s, size_t n, int rank, unsigned seed,
                    bool noncomm)
{
    for (size_t i = 0; i < n; i++) {
        if (noncomm) {
            affine_t f = aff(rank, i, seed);
            memcpy(s + i * sizeof f, &f, sizeof f);
        } else {
            uint32_t v = val(rank, i, seed);
            memcpy(s + i * sizeof v, &v, sizeof v);
        }
    }
}

/* Whether got is element g reduced over ranks lo..hi-1. */
static bool reduced(const unsigned char *got, int lo, int hi, size_t g,
                    unsigned seed, bool noncomm)
{
    if (noncomm) {
        affine_t w = comp_of(lo, hi, g, seed), v;
        memcpy(&v, got, sizeof v);
        return v.a == w.a && v.b == w.b;
    }
    uint32_t v;
    memcpy(&v, got, sizeof v);
    return v == sum_of(lo, hi, g, seed);
}

/* Reduce_scatter_block (uneven = false: n each) or Reduce_scatter (rank
 * r gets n + r elements, every third rank none), uint32 sums or (noncomm)
 * the affine maps, in place or not. */
static void t_rs(MPI_Comm comm, const char *cname, int n, bool uneven,
                 bool noncomm, bool in_place, MPI_Datatype aff_t, MPI_Op op)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int *cnt = malloc((size_t)size * sizeof *cnt);
    size_t total = 0, off = 0;
    for (int r = 0; r < size; r++) {
        cnt[r] = uneven ? (r % 3 == 1 ? 0 : n + r) : n;
        if (r == rank)
            off = total;
        total += (size_t)cnt[r];
    }
    unsigned seed = (unsigned)(n * 3 + uneven * 5 + noncomm * 7 + in_place);
    size_t esz = noncomm ? sizeof(affine_t) : 4;
    unsigned char *s = malloc(total * esz + 1);
    unsigned char *r = malloc((in_place ? total : (size_t)cnt[rank]) * esz + 1);
    contrib(s, total, rank, seed, noncomm);
    if (in_place)
        memcpy(r, s, total * esz);
    const void *send = in_place ? MPI_IN_PLACE : s;
    MPI_Datatype dt = noncomm ? aff_t : MPI_UINT32_T;
    MPI_Op o = noncomm ? op : MPI_SUM;
    int rc = uneven ? MPI_Reduce_scatter(send, r, cnt, dt, o, comm)
                    : MPI_Reduce_scatter_block(send, r, n, dt, o, comm);
    calls++;
    ordered_calls += noncomm;
    int bad = -1;
    for (int i = 0; i < cnt[rank] && bad < 0; i++)
        if (!reduced(r + (size_t)i * esz, 0, size, off + (size_t)i, seed,
                     noncomm))
            bad = i;
    MPIT_CHECK(rc == MPI_SUCCESS && bad < 0,
               "%s %s%s%s, %d elements: rc %d, first wrong element %d", cname,
               uneven ? "Reduce_scatter" : "Reduce_scatter_block",
               noncomm ? " non-commutative" : "", in_place ? " in place" : "",
               n, rc, bad);
    free(cnt);
    free(s);
    free(r);
}

/* Scan or Exscan of n elements, sums or affine maps, in place or not. */
static void t_scan(MPI_Comm comm, const char *cname, int n, bool ex,
                   bool noncomm, bool in_place, MPI_Datatype aff_t, MPI_Op op)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    unsigned seed = (unsigned)(n * 5 + ex * 3 + noncomm * 11 + in_place);
    size_t esz = noncomm ? sizeof(affine_t) : 4, bytes = (size_t)n * esz;
    unsigned char *s = malloc(bytes + 1), *r = malloc(bytes + 1);
    contrib(s, (size_t)n, rank, seed, noncomm);
    memset(r, 0x5A, bytes);
    if (in_place)
        memcpy(r, s, bytes);
    const void *send = in_place ? MPI_IN_PLACE : s;
    MPI_Datatype dt = noncomm ? aff_t : MPI_UINT32_T;
    MPI_Op o = noncomm ? op : MPI_SUM;
    int rc = ex ? MPI_Exscan(send, r, n, dt, o, comm)
                : MPI_Scan(send, r, n, dt, o, comm);
    calls++;
    ordered_calls++;
    int hi = ex ? rank : rank + 1, bad = -1;
    for (int i = 0; i < n && bad < 0; i++) {
        unsigned char *got = r + (size_t)i * esz;
        if (hi == 0) {      /* Exscan's rank 0: untouched */
            unsigned char keep[sizeof(affine_t)];
            memset(keep, 0x5A, esz);
            bad = memcmp(got, in_place ? s + (size_t)i * esz : keep, esz)
                      ? i : -1;
        } else if (!reduced(got, 0, hi, (size_t)i, seed, noncomm)) {
            bad = i;
        }
    }
    MPIT_CHECK(rc == MPI_SUCCESS && bad < 0,
               "%s %s%s%s, %d elements: rc %d, first wrong element %d", cname,
               ex ? "Exscan" : "Scan", noncomm ? " non-commutative" : "",
               in_place ? " in place" : "", n, rc, bad);
    free(s);
    free(r);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A late rank: nobody may leave the Barrier before it came in. The ranks
 * share one machine, so CLOCK_MONOTONIC is one clock for all of them. */
static void t_barrier(MPI_Comm comm, const char *cname, int late)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Barrier(comm);
    calls++;
    double t_in = 0;
    if (rank == late) {
        usleep(30000);
        t_in = now();
    }
    int rc = MPI_Barrier(comm);
    double t_out = now();
    calls++;
    MPI_Bcast(&t_in, 1, MPI_DOUBLE, late, comm);
    calls++;
    MPIT_CHECK(rc == MPI_SUCCESS && t_out >= t_in,
               "%s Barrier, rank %d late: rc %d, left %.3f ms before it came",
               cname, late, rc, (t_in - t_out) * 1e3);
}

static void run_all(MPI_Comm comm, const char *cname, bool full,
                    MPI_Datatype aff_t, MPI_Op op)
{
    int size;
    MPI_Comm_size(comm, &size);
    for (int k = 0; k < NSIZES; k++) {
        int n = sizes[k];
        /* Every root on the world; the first and last elsewhere. */
        for (int root = 0; root < size; root++) {
            if (!full && root != 0 && root != size - 1)
                continue;
            t_bcast(comm, cname, root, n);
            int elems = (n + 3) / 4;
            t_sum(comm, cname, root, elems, false);
            /* In place and non-commutative: at two roots per size. */
            if (root == 0 || root == size - 1) {
                t_sum(comm, cname, root, elems, true);
                t_noncomm(comm, cname, root, (n + 7) / 8, aff_t, op);
            }
        }
        t_sum(comm, cname, -1, (n + 3) / 4, false);
        t_sum(comm, cname, -1, (n + 3) / 4, true);
        t_noncomm(comm, cname, -1, (n + 7) / 8, aff_t, op);
    }
    /* The reductions to every rank's piece, and the prefixes, at a few
     * sizes: small, and past a segment. */
    static const int rsizes[] = {1, 300, 70000};
    for (int k = 0; k < 3; k++) {
        int n = rsizes[k];
        for (int v = 0; v < 4; v++) {
            bool noncomm = v & 1, in_place = v & 2;
            t_rs(comm, cname, n, false, noncomm, in_place, aff_t, op);
            t_rs(comm, cname, n, true, noncomm, in_place, aff_t, op);
            t_scan(comm, cname, n, false, noncomm, in_place, aff_t, op);
            t_scan(comm, cname, n, true, noncomm, in_place, aff_t, op);
        }
    }
    t_barrier(comm, cname, size - 1);
    t_barrier(comm, cname, size / 2);
}

int main(int argc, char **argv)
{
    mpit_init(&argc, &argv, "two_level");
    static const char *const names[] = {"coll_numacoll_two_level_count",
                                        "coll_numacoll_two_level_lanes_count"};
    mpit_named_t pv;
    mpit_named_open(&pv, names, 2);
    unsigned long long before[2] = {0, 0}, after[2] = {0, 0};

    /* A communicator whose first collective comes from inside
     * MPI_Comm_split_type (which runs an Allreduce on it): the two-level
     * setup then creates its sub-communicators inside that call. Before
     * the counter's first reading, as MPI's own calls are not counted. */
    MPI_Comm d, sh;
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_split_type(d, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &sh);
    t_sum(d, "dup split first", -1, 70000, false);
    t_bcast(sh, "its shared split", mpit_size - 1, 300000);
    MPI_Comm_free(&sh);
    MPI_Comm_free(&d);
    calls = 0;
    mpit_named_read(&pv, before);

    MPI_Datatype aff_t;
    MPI_Type_contiguous(2, MPI_UINT32_T, &aff_t);
    MPI_Type_commit(&aff_t);
    MPI_Op op;
    MPI_Op_create(compose_op, 0, &op);

    run_all(MPI_COMM_WORLD, "world", true, aff_t, op);
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, mpit_size - 1 - mpit_rank, &rev);
    calls++;    /* its Allgather of (color, key) runs in two levels */
    run_all(rev, "reversed", false, aff_t, op);

    mpit_named_read(&pv, after);
    const char *want = getenv("NC_EXPECT_TWO_LEVEL");
    if (want && *want) {
        bool ordered = strcmp(want, "block") == 0;
        unsigned long long expect = calls - (ordered ? 0 : ordered_calls);
        /* Under rr, the previous component's Allreduce of a non-commutative
         * op may run its own Bcast on the communicator, which is ours. */
        unsigned long long most = ordered ? expect : calls;
        MPIT_CHECK(pv.present && after[0] - before[0] >= expect &&
                       after[0] - before[0] <= most,
                   "two_level_count grew by %llu, expected %llu (%llu calls, "
                   "%llu needing rank order, split %s)", after[0] - before[0],
                   expect, calls, ordered_calls, want);
    }
    /* NC_EXPECT_LANES=1: every node has two processes or more, so the
     * Allreduces from coll_numacoll_hier_lanes_min bytes on ran in lanes;
     * 0: none could. */
    const char *lanes = getenv("NC_EXPECT_LANES");
    if (lanes && *lanes) {
        unsigned long long got = after[1] - before[1];
        bool some = strcmp(lanes, "1") == 0;
        MPIT_CHECK(pv.present && (some ? got > 0 : got == 0),
                   "two_level_lanes_count grew by %llu, expected %s", got,
                   some ? "some" : "none");
    }
    mpit_named_close(&pv);
    MPI_Comm_free(&rev);
    MPI_Op_free(&op);
    MPI_Type_free(&aff_t);
    return mpit_finish();
}
