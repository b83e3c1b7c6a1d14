/*
 * MPI_Bcast of every predefined datatype, sizes 0 .. 16 MiB, every root, on
 * MPI_COMM_WORLD, a dup, two halves and the world in reversed rank order.
 *
 * Sizes sit on the boundaries of the core's default shapes: 56 bytes (one
 * inline line), 4095 (the inline limit), f = 8192 (one fragment), s/q*f = 256 KiB (one bank) and
 * s*f = 512 KiB (the whole queue, after which banks are reused), each -1,
 * exact and +1, then 1 MiB, 4 MiB and 16 MiB. Small sizes run for every
 * type with the root rotating (so every root meets every size), and for all
 * roots with MPI_BYTE, MPI_INT and MPI_DOUBLE_INT; large sizes run for a few
 * contiguous and gapped types from the first and last root, and for every
 * root with MPI_BYTE up to 1 MiB.
 *
 * A receiver's buffer starts filled with a sentinel; after the call it must
 * equal that sentinel with the root's data unpacked into it (MPI_Pack and
 * MPI_Unpack are local), so gaps of types like MPI_DOUBLE_INT must stay
 * untouched and nothing past the last element may change. The root's
 * buffer must not change at all.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpit.h"

#define GUARD 64    /* bytes after the data that nobody may write */
#define SENTINEL 0xA5

typedef struct tdef {
    MPI_Datatype t;
    const char *name;
} tdef_t;

static size_t n_types;
static tdef_t types[64];

static void add_type(MPI_Datatype t, const char *name)
{
    int size = 0;
    /* Types this build of Open MPI lacks (e.g. some Fortran kinds) have no
     * size; skip them rather than fail. */
    if (t == MPI_DATATYPE_NULL || MPI_Type_size(t, &size) != MPI_SUCCESS ||
        size <= 0)
        return;
    types[n_types].t = t;
    types[n_types].name = name;
    n_types++;
}

#define T(x) add_type(x, #x)
static void list_types(void)
{
    T(MPI_CHAR); T(MPI_SHORT); T(MPI_INT); T(MPI_LONG); T(MPI_LONG_LONG_INT);
    T(MPI_LONG_LONG); T(MPI_SIGNED_CHAR); T(MPI_UNSIGNED_CHAR);
    T(MPI_UNSIGNED_SHORT); T(MPI_UNSIGNED); T(MPI_UNSIGNED_LONG);
    T(MPI_UNSIGNED_LONG_LONG); T(MPI_FLOAT); T(MPI_DOUBLE);
    T(MPI_LONG_DOUBLE); T(MPI_WCHAR); T(MPI_C_BOOL); T(MPI_INT8_T);
    T(MPI_INT16_T); T(MPI_INT32_T); T(MPI_INT64_T); T(MPI_UINT8_T);
    T(MPI_UINT16_T); T(MPI_UINT32_T); T(MPI_UINT64_T); T(MPI_AINT);
    T(MPI_COUNT); T(MPI_OFFSET); T(MPI_C_COMPLEX); T(MPI_C_FLOAT_COMPLEX);
    T(MPI_C_DOUBLE_COMPLEX); T(MPI_C_LONG_DOUBLE_COMPLEX); T(MPI_BYTE);
    T(MPI_PACKED); T(MPI_FLOAT_INT); T(MPI_DOUBLE_INT); T(MPI_LONG_INT);
    T(MPI_2INT); T(MPI_SHORT_INT); T(MPI_LONG_DOUBLE_INT);
    T(MPI_CXX_BOOL); T(MPI_CXX_FLOAT_COMPLEX); T(MPI_CXX_DOUBLE_COMPLEX);
    T(MPI_CXX_LONG_DOUBLE_COMPLEX);
    T(MPI_CHARACTER); T(MPI_LOGICAL); T(MPI_INTEGER); T(MPI_REAL);
    T(MPI_DOUBLE_PRECISION); T(MPI_COMPLEX); T(MPI_DOUBLE_COMPLEX);
    T(MPI_2INTEGER); T(MPI_2REAL); T(MPI_2DOUBLE_PRECISION);
}
#undef T

static const size_t small_sizes[] = {0, 1, 7, 56, 57, 64, 65, 4095, 4096,
                                     8191, 8192, 8193, 3 * 8192 + 5};
static const size_t big_sizes[] = {262143, 262144, 262145, 524287, 524288,
                                   524289, 1048576 + 17, 4194305, 16777216};
#define NSMALL (sizeof small_sizes / sizeof small_sizes[0])
#define NBIG (sizeof big_sizes / sizeof big_sizes[0])

static unsigned long long n_bcast;  /* calls that reach a coll component */

/* One Bcast of about `bytes` bytes of type t from root, checked. */
static void one(MPI_Comm comm, const char *cname, const tdef_t *td,
                size_t bytes, int root)
{
    /* Every rank derives the root's data from the call alone (the number of
     * calls differs between ranks when the halves differ in size). */
    unsigned seed = (unsigned)(((size_t)(cname[0] * 131 + (int)(td - types)) *
                                 1000003u + bytes) * 131u + (size_t)root);
    int rank, p, tsize;
    MPI_Aint lb, extent;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    MPI_Type_size(td->t, &tsize);
    MPI_Type_get_extent(td->t, &lb, &extent);
    int count = (int)(bytes / (size_t)tsize);
    if (bytes > 0 && count == 0)
        count = 1;
    size_t span = (size_t)count * (size_t)extent;

    unsigned char *buf = malloc(span + GUARD);
    unsigned char *src = malloc(span + GUARD);   /* the root's data */
    if (!MPIT_CHECK(buf && src, "out of memory for %zu bytes", span))
        goto out;
    mpit_fill(src, span + GUARD, seed);
    if (rank == root)
        memcpy(buf, src, span + GUARD);
    else
        memset(buf, SENTINEL, span + GUARD);

    int rc = MPI_Bcast(buf, count, td->t, root, comm);
    /* MPI_Bcast itself returns early for count 0 or one process: such calls
     * never reach a coll component. */
    if (p >= 2 && count > 0)
        n_bcast++;
    if (!MPIT_CHECK(rc == MPI_SUCCESS, "%s: Bcast %s x %d root %d returned %d",
                    cname, td->name, count, root, rc))
        goto out;

    if (rank == root) {
        MPIT_CHECK(memcmp(buf, src, span + GUARD) == 0,
                   "%s: root %d's buffer changed (%s x %d)", cname, root,
                   td->name, count);
        goto out;
    }
    /* Expected: the sentinel with the root's elements unpacked into it. */
    int psize = 0, pos = 0;
    MPI_Pack_size(count, td->t, comm, &psize);
    unsigned char *packed = malloc((size_t)psize + 1);
    unsigned char *want = malloc(span + GUARD);
    if (MPIT_CHECK(packed && want, "out of memory")) {
        MPI_Pack(src, count, td->t, packed, psize, &pos, comm);
        memset(want, SENTINEL, span + GUARD);
        pos = 0;
        MPI_Unpack(packed, psize, &pos, want, count, td->t, comm);
        if (memcmp(buf, want, span + GUARD) != 0) {
            size_t i = 0;
            while (buf[i] == want[i])
                i++;
            MPIT_CHECK(0, "%s: %s x %d (%zu bytes) from root %d: first "
                       "difference at byte %zu of %zu (got 0x%02x, want "
                       "0x%02x)", cname, td->name, count, span, root, i,
                       span + GUARD, buf[i], want[i]);
        } else {
            MPIT_CHECK(1, "ok");
        }
    }
    free(packed);
    free(want);
out:
    free(buf);
    free(src);
}

static int is_named(const tdef_t *td, const char *const *names)
{
    for (; *names; names++)
        if (strcmp(td->name, *names) == 0)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    mpit_init(&argc, &argv, "bcast_types");
    list_types();
    static const char *const all_roots[] = {"MPI_BYTE", "MPI_INT",
                                            "MPI_DOUBLE_INT", NULL};
    static const char *const big_types[] = {"MPI_BYTE", "MPI_INT",
                                            "MPI_DOUBLE_INT", "MPI_SHORT_INT",
                                            "MPI_C_DOUBLE_COMPLEX", NULL};
    MPI_Comm comms[MPIT_NCOMMS];
    mpit_make_comms(comms);

    mpit_counters_t before, after;
    mpit_counters(&before);
    for (int c = 0; c < MPIT_NCOMMS; c++) {
        int p;
        MPI_Comm_size(comms[c], &p);
        int turn = 0;
        for (size_t t = 0; t < n_types; t++) {
            for (size_t s = 0; s < NSMALL; s++) {
                if (is_named(&types[t], all_roots)) {
                    for (int root = 0; root < p; root++)
                        one(comms[c], mpit_comm_names[c], &types[t],
                            small_sizes[s], root);
                } else {
                    one(comms[c], mpit_comm_names[c], &types[t],
                        small_sizes[s], turn++ % p);
                }
            }
        }
        for (size_t t = 0; t < n_types; t++) {
            if (!is_named(&types[t], big_types))
                continue;
            for (size_t s = 0; s < NBIG; s++) {
                /* Every root for MPI_BYTE up to 1 MiB; otherwise the first
                 * and the last, which keeps np=8 oversubscribed runs well
                 * inside the watchdog. */
                if (strcmp(types[t].name, "MPI_BYTE") == 0 &&
                    big_sizes[s] <= 1048576 + 17) {
                    for (int root = 0; root < p; root++)
                        one(comms[c], mpit_comm_names[c], &types[t],
                            big_sizes[s], root);
                } else {
                    one(comms[c], mpit_comm_names[c], &types[t],
                        big_sizes[s], 0);
                    if (p > 1)
                        one(comms[c], mpit_comm_names[c], &types[t],
                            big_sizes[s], p - 1);
                }
            }
        }
    }
    mpit_counters(&after);
    mpit_check_ran(&before, &after, n_bcast, 0, "bcast_types");
    if (mpit_rank == 0)
        printf("bcast_types: %zu datatypes, %llu Bcast calls per rank\n",
               n_types, n_bcast);

    mpit_free_comms(comms);
    return mpit_finish();
}
