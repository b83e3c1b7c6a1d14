/*
 * comm-cost: what a new communicator costs under whichever coll component
 * Open MPI selected (a benchmark, not a test; docs/bench.md, "Communicator
 * cost").
 *
 *   mpirun -np 2 build/comm-cost [--iters N] [--live N] [--warmup N]
 *
 * 1. Time per communicator, mean over N iterations (default 200) after a
 *    warm-up, slowest rank:
 *      dup_free              MPI_Comm_dup + MPI_Comm_free (no collective:
 *                            a lazy component creates nothing)
 *      dup_bcast8_free       ... + one 8-byte MPI_Bcast in between
 *      dup_bcast64k_free     ... + one 64 KiB MPI_Bcast
 *      dup_bcast8_allreduce8_free  ... + 8-byte Bcast + 8-byte Allreduce
 *    The first collective on a communicator is where a component such as
 *    numacoll builds its team, so these times hold that cost.
 * 2. Memory while L communicators (default 300) are alive at once, each
 *    used by one 8-byte Bcast: growth of VmRSS and RssShmem
 *    (/proc/self/status) per rank, the largest and the sum over ranks, and
 *    the growth of /dev/shm's used space (the node's shared segments, which
 *    tmpfs counts until the last process unmaps them).
 *
 * Rank 0 prints one "name value unit" line per figure (bench/comm-cost.sh
 * reads them), then the numacoll component's team count through MPI_T when
 * the component is loaded.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

enum { BIG = 64 * 1024 };

typedef struct opts {
    int iters, live, warmup;
} opts_t;

static int parse_count(const char *s, int lo, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < lo || v > 1000000)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_opts(int argc, char **argv, opts_t *o)
{
    *o = (opts_t){.iters = 200, .live = 300, .warmup = 10};
    for (int i = 1; i < argc; i++) {
        int *dst = !strcmp(argv[i], "--iters")  ? &o->iters
                 : !strcmp(argv[i], "--live")   ? &o->live
                 : !strcmp(argv[i], "--warmup") ? &o->warmup : NULL;
        int lo = dst == &o->warmup ? 0 : 1;
        if (!dst || i + 1 >= argc || parse_count(argv[i + 1], lo, dst) != 0) {
            fprintf(stderr, "comm-cost: bad option '%s'; usage: comm-cost "
                    "[--iters N>=1] [--live N>=1] [--warmup N>=0]\n", argv[i]);
            return -1;
        }
        i++;
    }
    return 0;
}

typedef enum { K_DUP, K_BCAST8, K_BCAST64K, K_BCAST_ALLREDUCE, K_COUNT } kind_t;
static const char *const kind_name[K_COUNT] = {
    "dup_free", "dup_bcast8_free", "dup_bcast64k_free",
    "dup_bcast8_allreduce8_free"};

/* One communicator's life as `kind` says. */
static void one_comm(kind_t kind, unsigned char *buf)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    if (kind == K_BCAST8 || kind == K_BCAST_ALLREDUCE)
        MPI_Bcast(buf, 8, MPI_BYTE, 0, c);
    if (kind == K_BCAST64K)
        MPI_Bcast(buf, BIG, MPI_BYTE, 0, c);
    if (kind == K_BCAST_ALLREDUCE) {
        long in = 1, out = 0;
        MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, c);
    }
    MPI_Comm_free(&c);
}

/* Mean seconds per communicator on the slowest rank. */
static double time_kind(kind_t kind, const opts_t *o, unsigned char *buf)
{
    for (int i = 0; i < o->warmup; i++)
        one_comm(kind, buf);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < o->iters; i++)
        one_comm(kind, buf);
    double mine = (MPI_Wtime() - t0) / o->iters, worst = 0;
    MPI_Allreduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

/* A field of /proc/self/status in KiB, -1 if absent. */
static long status_kib(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t n = strlen(field);
    long v = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':') {
            v = strtol(line + n + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static long shm_used_kib(void)
{
    struct statvfs sv;
    if (statvfs("/dev/shm", &sv) != 0)
        return -1;
    return (long)(((unsigned long long)sv.f_blocks - sv.f_bfree) *
                  sv.f_frsize / 1024);
}

/* numacoll's teams mapped by this process (MPI_T pvar coll_numacoll_teams),
 * -1 when the component is not loaded. */
static long numacoll_teams(void)
{
    int provided, idx, count;
    long v = -1;
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return -1;
    if (MPI_T_pvar_get_index("coll_numacoll_teams", MPI_T_PVAR_CLASS_LEVEL,
                             &idx) == MPI_SUCCESS &&
        MPI_T_pvar_session_create(&s) == MPI_SUCCESS) {
        unsigned u = 0;
        if (MPI_T_pvar_handle_alloc(s, idx, NULL, &h, &count) == MPI_SUCCESS) {
            if (count == 1 && MPI_T_pvar_read(s, h, &u) == MPI_SUCCESS)
                v = (long)u;
            MPI_T_pvar_handle_free(s, &h);
        }
        MPI_T_pvar_session_free(&s);
    }
    MPI_T_finalize();
    return v;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    opts_t o;
    if (parse_opts(argc, argv, &o) != 0)
        MPI_Abort(MPI_COMM_WORLD, 2);
    unsigned char *buf = calloc(BIG, 1);
    MPI_Comm *live = calloc((size_t)o.live, sizeof *live);
    if (!buf || !live) {
        fprintf(stderr, "comm-cost: rank %d: no memory for %d communicator "
                "handles\n", rank, o.live);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0)
        printf("# comm-cost: np %d, %d iterations after %d warm-up, %d live "
               "communicators\n", size, o.iters, o.warmup, o.live);

    for (int k = 0; k < K_COUNT; k++) {
        double t = time_kind((kind_t)k, &o, buf);
        if (rank == 0)
            printf("%s %.2f us\n", kind_name[k], t * 1e6);
    }

    /* Memory: the set is built between two barriers, so every rank's
     * figures cover the same communicators. */
    MPI_Barrier(MPI_COMM_WORLD);
    long rss0 = status_kib("VmRSS"), shm0 = status_kib("RssShmem");
    long dev0 = rank == 0 ? shm_used_kib() : 0;
    for (int i = 0; i < o.live; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &live[i]);
        MPI_Bcast(buf, 8, MPI_BYTE, 0, live[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    long d[2] = {status_kib("VmRSS") - rss0, status_kib("RssShmem") - shm0};
    long dev = rank == 0 ? shm_used_kib() - dev0 : 0;
    long teams = numacoll_teams();
    long dmax[2], dsum[2];
    MPI_Reduce(d, dmax, 2, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(d, dsum, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    for (int i = 0; i < o.live; i++)
        MPI_Comm_free(&live[i]);
    if (rank == 0) {
        printf("live_rss_max_rank %ld KiB\n", dmax[0]);
        printf("live_rss_sum %ld KiB\n", dsum[0]);
        printf("live_rssshmem_sum %ld KiB\n", dsum[1]);
        printf("live_devshm %ld KiB\n", dev);
        if (teams >= 0)
            printf("# numacoll teams mapped by rank 0 with the live set: "
                   "%ld\n", teams);
        else
            printf("# numacoll component not loaded\n");
    }
    free(live);
    free(buf);
    MPI_Finalize();
    return 0;
}
