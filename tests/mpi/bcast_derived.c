/*
 * MPI_Bcast of derived datatypes, where root and receivers may describe the
 * same type signature with different (count, datatype) pairs, as MPI
 * allows. Each rank picks its side of a pair from (its rank + root), so
 * every combination meets: contiguous root and strided readers, the
 * reverse, and both strided.
 *
 *   ints    N x MPI_INT            vs  1 x vector(blocks of 3, stride 5)
 *   struct  K x {char; double[3]; int[2]} (C layout, with gaps)
 *           vs  K x the same signature laid out backwards in memory;
 *           33-byte elements straddle every fragment boundary
 *   lb<0    1 x hindexed(M ints at displacement -4M)  vs  M x MPI_INT
 *           (contiguous, but the data starts before the buffer pointer)
 *   lb>0    1 x struct(M ints at displacement 16)     vs  M x MPI_INT
 *
 * Sizes run from inline (one line under 56 bytes) past one fragment and past the
 * whole queue (512 KiB at the defaults). The oracle is MPI_Pack/MPI_Unpack,
 * which are local: a canonical packed stream P is made from a seed; the root
 * unpacks P into its buffer; a receiver must afterwards pack to exactly P,
 * and its buffer must equal a sentinel-filled buffer with P unpacked into
 * it, so gaps and bytes beyond the data stay untouched.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpit.h"

#define GUARD 64
#define SENTINEL 0x5A

typedef struct side {
    MPI_Datatype type;
    int count;
} side_t;

typedef struct pair {
    const char *name;
    side_t a, b;
} pair_t;

static unsigned long long n_bcast;

/* Bytes [lo, hi) relative to the buffer pointer that `count` x type spans. */
static void span_of(const side_t *s, MPI_Aint *lo, MPI_Aint *hi)
{
    MPI_Aint lb, extent, tlb, textent;
    MPI_Type_get_extent(s->type, &lb, &extent);
    MPI_Type_get_true_extent(s->type, &tlb, &textent);
    *lo = tlb < 0 ? tlb : 0;
    *hi = tlb + textent + (MPI_Aint)(s->count - 1) * extent;
    if (*hi < 0)
        *hi = 0;
}

static void run(MPI_Comm comm, const char *cname, const pair_t *pr, int root,
                unsigned seed)
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    const side_t *me = ((rank + root) % 2 == 0) ? &pr->a : &pr->b;

    int tsize = 0, pos = 0;
    MPI_Type_size(me->type, &tsize);
    int psize = tsize * me->count;
    MPI_Aint lo, hi;
    span_of(me, &lo, &hi);
    size_t len = (size_t)(hi - lo) + GUARD;
    unsigned char *base = malloc(len), *want = malloc(len),
                  *stream = malloc((size_t)psize + 1),
                  *repack = malloc((size_t)psize + 1);
    if (!MPIT_CHECK(base && want && stream && repack, "out of memory"))
        goto out;
    unsigned char *buf = base - lo, *wbuf = want - lo;

    /* The size of a signature, so of P, is the same on every rank. */
    mpit_fill(stream, (size_t)psize, seed);
    memset(want, SENTINEL, len);
    MPI_Unpack(stream, psize, &pos, wbuf, me->count, me->type, comm);
    if (rank == root)
        memcpy(base, want, len);
    else
        memset(base, SENTINEL, len);

    int rc = MPI_Bcast(buf, me->count, me->type, root, comm);
    if (p >= 2 && psize > 0)
        n_bcast++;
    if (!MPIT_CHECK(rc == MPI_SUCCESS, "%s %s root %d: Bcast returned %d",
                    cname, pr->name, root, rc))
        goto out;
    pos = 0;
    MPI_Pack(buf, me->count, me->type, repack, psize, &pos, comm);
    MPIT_CHECK(memcmp(repack, stream, (size_t)psize) == 0,
               "%s %s (%d packed bytes) root %d: received data differ (as %s)",
               cname, pr->name, psize, root, me == &pr->a ? "a" : "b");
    MPIT_CHECK(memcmp(base, want, len) == 0,
               "%s %s root %d: bytes outside the data changed", cname,
               pr->name, root);
out:
    free(base);
    free(want);
    free(stream);
    free(repack);
}

/* A vector of n ints, 3 per block with stride 5, as one element. */
static MPI_Datatype int_vector(int n)
{
    MPI_Datatype t;
    MPI_Type_vector(n / 3, 3, 5, MPI_INT, &t);
    MPI_Type_commit(&t);
    return t;
}

typedef struct s1 {
    char c;
    double d[3];
    int i[2];
} s1_t;

static MPI_Datatype struct_c_layout(void)
{
    int bl[3] = {1, 3, 2};
    MPI_Aint disp[3] = {offsetof(s1_t, c), offsetof(s1_t, d), offsetof(s1_t, i)};
    MPI_Datatype tt[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, t, r;
    MPI_Type_create_struct(3, bl, disp, tt, &t);
    MPI_Type_create_resized(t, 0, sizeof(s1_t), &r);
    MPI_Type_free(&t);
    MPI_Type_commit(&r);
    return r;
}

/* Same signature (char, 3 double, 2 int), memory order reversed. */
static MPI_Datatype struct_backwards(void)
{
    int bl[3] = {1, 3, 2};
    MPI_Aint disp[3] = {40, 0, 24};
    MPI_Datatype tt[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, t, r;
    MPI_Type_create_struct(3, bl, disp, tt, &t);
    MPI_Type_create_resized(t, 0, 48, &r);
    MPI_Type_free(&t);
    MPI_Type_commit(&r);
    return r;
}

static MPI_Datatype ints_before(int m)
{
    MPI_Datatype t;
    int bl = m;
    MPI_Aint d = -(MPI_Aint)m * (MPI_Aint)sizeof(int);
    MPI_Type_create_hindexed(1, &bl, &d, MPI_INT, &t);
    MPI_Type_commit(&t);
    return t;
}

static MPI_Datatype ints_after(int m)
{
    MPI_Datatype t, tt = MPI_INT;
    int bl = m;
    MPI_Aint d = 16;
    MPI_Type_create_struct(1, &bl, &d, &tt, &t);
    MPI_Type_commit(&t);
    return t;
}

int main(int argc, char **argv)
{
    mpit_init(&argc, &argv, "bcast_derived");
    MPI_Comm comms[MPIT_NCOMMS];
    mpit_make_comms(comms);

    static const int ints_n[] = {3, 15, 2049 * 3, 3 * 65536 + 3};
    static const int struct_k[] = {1, 2, 300, 20000};
    static const int lb_m[] = {5, 2048, 2049, 200000};
    MPI_Datatype s_c = struct_c_layout(), s_b = struct_backwards();
    pair_t pairs[64];
    MPI_Datatype to_free[32];
    int npairs = 0, nfree = 0;
    for (int i = 0; i < 4; i++) {
        MPI_Datatype v = int_vector(ints_n[i]);
        to_free[nfree++] = v;
        pairs[npairs++] = (pair_t){"ints/vector", {MPI_INT, ints_n[i]}, {v, 1}};
        pairs[npairs++] = (pair_t){"vector/vector", {v, 1}, {v, 1}};
        pairs[npairs++] = (pair_t){"struct", {s_c, struct_k[i]},
                                   {s_b, struct_k[i]}};
        MPI_Datatype neg = ints_before(lb_m[i]), posd = ints_after(lb_m[i]);
        to_free[nfree++] = neg;
        to_free[nfree++] = posd;
        pairs[npairs++] = (pair_t){"lb<0", {neg, 1}, {MPI_INT, lb_m[i]}};
        pairs[npairs++] = (pair_t){"lb>0", {posd, 1}, {MPI_INT, lb_m[i]}};
    }

    mpit_counters_t before, after;
    mpit_counters(&before);
    for (int c = 0; c < MPIT_NCOMMS; c++) {
        int p;
        MPI_Comm_size(comms[c], &p);
        for (int i = 0; i < npairs; i++)
            for (int root = 0; root < p; root++)
                run(comms[c], mpit_comm_names[c], &pairs[i], root,
                    (unsigned)((c * 64 + i) * 64 + root));
    }
    mpit_counters(&after);
    mpit_check_ran(&before, &after, n_bcast, 0, "bcast_derived");

    for (int i = 0; i < nfree; i++)
        MPI_Type_free(&to_free[i]);
    MPI_Type_free(&s_c);
    MPI_Type_free(&s_b);
    mpit_free_comms(comms);
    return mpit_finish();
}
