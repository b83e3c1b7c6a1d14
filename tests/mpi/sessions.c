/*
 * MPI sessions (MPI 4.0; Open MPI 5.0): communicators made without
 * MPI_Init and without MPI_COMM_WORLD, in a process that opens and closes
 * sessions more than once.
 *
 * Round 1 opens one session, makes a communicator from its "mpi://WORLD"
 * process set (MPI_Comm_create_from_group) and runs Bcast, Reduce,
 * Allreduce (a predefined and a user op) and Barrier on it, checking the
 * data; then frees everything and finalizes the session, after which Open
 * MPI closes its frameworks and components. Round 2 opens two sessions at
 * once (Open MPI opens the components a second time: coll/xhc crashed
 * there, open-mpi/ompi#13013), a communicator from each, the same calls on
 * both, and closes both.
 *
 * With NUMACOLL_EXPECT=core every call must have run in numacoll, read
 * through its MPI_T counters (numacoll's variables exist only while a
 * session has the component open, so they are looked up again in every
 * round), and its team count must be back to the value before once the
 * communicators are freed. Prints
 * "sessions np=<p>: PASS (<n> checks)" on rank 0, as tests/mpi do.
 */
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096          /* doubles: above the inline sizes, several slots */

/* This rank's checks since the last verdict exchange; the job's totals. */
static long checks, failures, job_checks, job_failures;
static int world_rank = -1, world_size;

static int check(int ok, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int check(int ok, int line, const char *fmt, ...)
{
    checks++;
    if (ok)
        return 1;
    if (failures++ < 20) {
        va_list ap;
        fprintf(stderr, "[rank %d] sessions.c:%d: ", world_rank, line);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
    return 0;
}
#define CHECK(c, ...) check(!!(c), __LINE__, __VA_ARGS__)

/* numacoll's counters: calls run in the core, and live teams. */
enum { PV_BCAST, PV_BARRIER, PV_REDUCE, PV_ALLREDUCE, PV_TEAMS, PV_N };
static const char *const pv_name[PV_N] = {
    "coll_numacoll_bcast_count", "coll_numacoll_barrier_count",
    "coll_numacoll_reduce_count", "coll_numacoll_allreduce_count",
    "coll_numacoll_teams"};

typedef struct pvars {
    int present;
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h[PV_N];
} pvars_t;

static void pvars_open(pvars_t *p)
{
    memset(p, 0, sizeof *p);
    if (MPI_T_pvar_session_create(&p->s) != MPI_SUCCESS)
        return;
    for (int i = 0; i < PV_N; i++) {
        int idx, count;
        int cls = i == PV_TEAMS ? MPI_T_PVAR_CLASS_LEVEL
                                : MPI_T_PVAR_CLASS_COUNTER;
        if (MPI_T_pvar_get_index(pv_name[i], cls, &idx) != MPI_SUCCESS ||
            MPI_T_pvar_handle_alloc(p->s, idx, NULL, &p->h[i], &count) !=
                MPI_SUCCESS)
            return;
        /* continuous variables refuse start and run anyway */
        (void)MPI_T_pvar_start(p->s, p->h[i]);
    }
    p->present = 1;
}

static void pvars_read(pvars_t *p, unsigned long long v[PV_N])
{
    memset(v, 0, PV_N * sizeof v[0]);
    for (int i = 0; p->present && i < PV_N; i++) {
        if (i == PV_TEAMS) {
            unsigned t = 0;
            if (MPI_T_pvar_read(p->s, p->h[i], &t) == MPI_SUCCESS)
                v[i] = t;
        } else {
            (void)MPI_T_pvar_read(p->s, p->h[i], &v[i]);
        }
    }
}

static void pvars_close(pvars_t *p)
{
    for (int i = 0; p->present && i < PV_N; i++)
        MPI_T_pvar_handle_free(p->s, &p->h[i]);
    MPI_T_pvar_session_free(&p->s);
}

/* A user op: the element-wise maximum of absolute values, which no
 * predefined op computes. */
static void absmax(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const double *a = in;
    double *b = inout;
    for (int i = 0; i < *len; i++) {
        double x = a[i] < 0 ? -a[i] : a[i], y = b[i] < 0 ? -b[i] : b[i];
        b[i] = x > y ? x : y;
    }
}

/* Bcast, Reduce, Allreduce (SUM and the user op) and Barrier on comm,
 * checked; returns the number of calls numacoll should have counted:
 * [bcast, barrier, reduce, allreduce]. */
static void run_calls(MPI_Comm comm, const char *what, MPI_Op user,
                      unsigned long long calls[4])
{
    int rank, p;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &p);
    double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    if (!a || !b) {
        CHECK(0, "%s: out of memory", what);
        free(a);
        free(b);
        return;
    }
    int root = p - 1;

    for (int i = 0; i < N; i++)
        a[i] = rank == root ? i * 0.5 : -1.0;
    MPI_Bcast(a, N, MPI_DOUBLE, root, comm);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += a[i] != i * 0.5;
    CHECK(bad == 0, "%s: Bcast: %d of %d wrong", what, bad, N);

    for (int i = 0; i < N; i++)
        a[i] = rank + i;
    MPI_Reduce(a, b, N, MPI_DOUBLE, MPI_SUM, 0, comm);
    if (rank == 0) {
        bad = 0;
        for (int i = 0; i < N; i++)
            bad += b[i] != (double)p * (p - 1) / 2 + (double)p * i;
        CHECK(bad == 0, "%s: Reduce SUM: %d of %d wrong", what, bad, N);
    }

    MPI_Allreduce(a, b, N, MPI_DOUBLE, MPI_SUM, comm);
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += b[i] != (double)p * (p - 1) / 2 + (double)p * i;
    CHECK(bad == 0, "%s: Allreduce SUM: %d of %d wrong", what, bad, N);

    /* rank r holds -(r + 1) * (i % 7): the largest magnitude is p's */
    for (int i = 0; i < N; i++)
        a[i] = -(double)(rank + 1) * (i % 7);
    MPI_Allreduce(a, b, N, MPI_DOUBLE, user, comm);
    bad = 0;
    for (int i = 0; i < N; i++)
        bad += b[i] != (double)p * (i % 7);
    CHECK(bad == 0, "%s: Allreduce user op: %d of %d wrong", what, bad, N);

    MPI_Barrier(comm);
    free(a);
    free(b);
    calls[0] += 1;
    calls[1] += 1;
    calls[2] += 1;
    calls[3] += 2;
}

/* One round with `nsess` sessions open at once. */
static void round_of(int nsess, int expect_core)
{
    MPI_Session s[2];
    MPI_Comm c[2];
    MPI_Op user[2];
    char what[64];
    for (int k = 0; k < nsess; k++) {
        int rc = MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s[k]);
        if (!CHECK(rc == MPI_SUCCESS, "MPI_Session_init %d of %d: error %d",
                   k + 1, nsess, rc))
            exit(1);
        MPI_Group g;
        MPI_Group_from_session_pset(s[k], "mpi://WORLD", &g);
        snprintf(what, sizeof what, "numacoll.sessions.%d.%d", nsess, k);
        rc = MPI_Comm_create_from_group(g, what, MPI_INFO_NULL,
                                        MPI_ERRORS_RETURN, &c[k]);
        MPI_Group_free(&g);
        if (!CHECK(rc == MPI_SUCCESS, "MPI_Comm_create_from_group: error %d",
                   rc))
            exit(1);
        MPI_Op_create(absmax, 1, &user[k]);
        if (world_rank < 0) {
            MPI_Comm_rank(c[k], &world_rank);
            MPI_Comm_size(c[k], &world_size);
        }
    }

    /* MPI_T is opened inside the round and closed before its sessions:
     * in Open MPI 5.0.7, MPI_T held open across the finalize of the last
     * session makes the next MPI_Session_init fail ("BTLs attempted:
     * (null)"), with or without numacoll. */
    int provided;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    pvars_t pv;
    unsigned long long before[PV_N], after[PV_N], calls[4] = {0};
    pvars_open(&pv);
    pvars_read(&pv, before);
    for (int k = 0; k < nsess; k++) {
        snprintf(what, sizeof what, "%d session(s), communicator %d", nsess,
                 k);
        run_calls(c[k], what, user[k], calls);
    }
    pvars_read(&pv, after);
    if (expect_core &&
        CHECK(pv.present, "%d session(s): numacoll's MPI_T counters are "
              "missing (component not loaded?)", nsess)) {
        static const char *const name[4] = {"Bcast", "Barrier", "Reduce",
                                            "Allreduce"};
        for (int i = 0; i < 4; i++)
            CHECK(after[i] - before[i] == calls[i], "%d session(s): %llu %s "
                  "calls, numacoll ran %llu", nsess, calls[i], name[i],
                  after[i] - before[i]);
        CHECK(after[PV_TEAMS] >= before[PV_TEAMS] + (unsigned)nsess,
              "%d session(s): %llu teams alive, expected at least %llu",
              nsess, after[PV_TEAMS], before[PV_TEAMS] + (unsigned)nsess);
    }

    /* The verdict of this round travels over the last communicator; the
     * counters were read before, so this call is not counted. */
    long mine[2] = {checks, failures}, all[2] = {0, 0};
    MPI_Allreduce(mine, all, 2, MPI_LONG, MPI_SUM, c[nsess - 1]);
    job_checks += all[0];
    job_failures += all[1];
    checks = failures = 0;
    for (int k = 0; k < nsess; k++) {
        MPI_Op_free(&user[k]);
        MPI_Comm_free(&c[k]);
    }
    unsigned long long freed[PV_N];
    pvars_read(&pv, freed);
    if (expect_core && pv.present)
        CHECK(freed[PV_TEAMS] == before[PV_TEAMS], "%d session(s): %llu "
              "teams alive after the communicators were freed, %llu before",
              nsess, freed[PV_TEAMS], before[PV_TEAMS]);
    pvars_close(&pv);
    MPI_T_finalize();
    for (int k = 0; k < nsess; k++) {
        int rc = MPI_Session_finalize(&s[k]);
        CHECK(rc == MPI_SUCCESS, "MPI_Session_finalize: error %d", rc);
    }
}

int main(void)
{
    const char *e = getenv("NUMACOLL_EXPECT");
    int expect_core = e && strcmp(e, "core") == 0;

    round_of(1, expect_core);
    round_of(2, expect_core);

    /* Checks after the last exchange (teardown) are this rank's own: it
     * reports them itself, and its exit status fails the job. */
    long nfail = job_failures + failures, nchecks = job_checks + checks;
    if (world_rank == 0 || failures) {
        if (nfail == 0)
            printf("sessions np=%d: PASS (%ld checks)\n", world_size, nchecks);
        else
            printf("sessions np=%d: FAIL (%ld of %ld checks failed)\n",
                   world_size, nfail, nchecks);
        fflush(stdout);
    }
    return nfail != 0;
}
