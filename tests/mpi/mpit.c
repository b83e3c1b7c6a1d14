/* Shared helpers of the MPI tests; see mpit.h. */
#include "mpit.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int mpit_rank, mpit_size;
mpit_expect_t mpit_expect;

static const char *test_name = "?";
static long checks, failures;
static int mpit_t_ok;
static MPI_T_pvar_session session;

enum { PV_BCAST, PV_BARRIER, PV_BCAST_FB, PV_BARRIER_FB, PV_TEAMS, PV_N };
static const struct {
    const char *name;
    int var_class;
} pv_def[PV_N] = {
    {"coll_numacoll_bcast_count", MPI_T_PVAR_CLASS_COUNTER},
    {"coll_numacoll_barrier_count", MPI_T_PVAR_CLASS_COUNTER},
    {"coll_numacoll_bcast_fallback_count", MPI_T_PVAR_CLASS_COUNTER},
    {"coll_numacoll_barrier_fallback_count", MPI_T_PVAR_CLASS_COUNTER},
    {"coll_numacoll_teams", MPI_T_PVAR_CLASS_LEVEL},
};
static MPI_T_pvar_handle pv_handle[PV_N];
static int pv_present;

const char *const mpit_comm_names[MPIT_NCOMMS] = {"world", "dup", "half",
                                                  "reversed"};

int mpit_check(int ok, const char *file, int line, const char *fmt, ...)
{
    checks++;
    if (ok)
        return 1;
    failures++;
    if (failures <= 20) {  /* the first ones tell the story */
        va_list ap;
        fprintf(stderr, "[rank %d] %s:%d: ", mpit_rank, file, line);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
    return 0;
}

static void pvars_open(void)
{
    int provided, count;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return;
    mpit_t_ok = 1;
    if (MPI_T_pvar_session_create(&session) != MPI_SUCCESS)
        return;
    for (int i = 0; i < PV_N; i++) {
        int idx;
        if (MPI_T_pvar_get_index(pv_def[i].name, pv_def[i].var_class, &idx) !=
                MPI_SUCCESS ||
            MPI_T_pvar_handle_alloc(session, idx, NULL, &pv_handle[i],
                                    &count) != MPI_SUCCESS)
            return;
        /* Continuous variables refuse start (MPI_T_ERR_PVAR_NO_STARTSTOP)
         * and run anyway. */
        (void)MPI_T_pvar_start(session, pv_handle[i]);
    }
    pv_present = 1;
}

void mpit_counters(mpit_counters_t *c)
{
    memset(c, 0, sizeof *c);
    if (!pv_present)
        return;
    c->present = 1;
    unsigned long long *u[] = {&c->bcast, &c->barrier, &c->bcast_fallback,
                               &c->barrier_fallback};
    for (int i = 0; i < PV_TEAMS; i++)
        if (MPI_T_pvar_read(session, pv_handle[i], u[i]) != MPI_SUCCESS)
            c->present = 0;
    if (MPI_T_pvar_read(session, pv_handle[PV_TEAMS], &c->teams) !=
        MPI_SUCCESS)
        c->present = 0;
}

void mpit_named_open(mpit_named_t *s, const char *const *names, int n)
{
    int provided, count;
    memset(s, 0, sizeof *s);
    if (n > MPIT_NAMED_MAX ||
        MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return;
    s->t_ok = 1;
    if (MPI_T_pvar_session_create(&s->session) != MPI_SUCCESS)
        return;
    for (; s->n < n; s->n++) {
        int idx;
        if (MPI_T_pvar_get_index(names[s->n], MPI_T_PVAR_CLASS_COUNTER,
                                 &idx) != MPI_SUCCESS ||
            MPI_T_pvar_handle_alloc(s->session, idx, NULL,
                                    &s->handle[s->n], &count) != MPI_SUCCESS)
            return;
        (void)MPI_T_pvar_start(s->session, s->handle[s->n]);
    }
    s->present = 1;
}

void mpit_named_read(mpit_named_t *s, unsigned long long *v)
{
    for (int i = 0; i < s->n; i++) {
        v[i] = 0;
        if (s->present)
            MPI_T_pvar_read(s->session, s->handle[i], &v[i]);
    }
}

void mpit_named_close(mpit_named_t *s)
{
    for (int i = 0; i < s->n; i++)
        MPI_T_pvar_handle_free(s->session, &s->handle[i]);
    if (s->t_ok) {
        MPI_T_pvar_session_free(&s->session);
        MPI_T_finalize();
    }
    s->n = 0;
    s->present = s->t_ok = 0;
}

void mpit_check_ran(const mpit_counters_t *b, const mpit_counters_t *a,
                    unsigned long long bcasts, unsigned long long barriers,
                    const char *what)
{
    if (mpit_expect == MPIT_EXPECT_NONE)
        return;
    if (mpit_expect == MPIT_EXPECT_ABSENT) {
        MPIT_CHECK(!a->present && !b->present, "%s: numacoll's MPI_T "
                   "counters exist: the component opened", what);
        return;
    }
    if (!MPIT_CHECK(a->present && b->present,
                    "%s: numacoll's MPI_T counters are missing (component "
                    "not loaded?)", what))
        return;
    unsigned long long core_b = a->bcast - b->bcast,
                       core_y = a->barrier - b->barrier,
                       fb_b = a->bcast_fallback - b->bcast_fallback,
                       fb_y = a->barrier_fallback - b->barrier_fallback;
    unsigned long long want_core_b = 0, want_core_y = 0, want_fb_b = 0,
                       want_fb_y = 0;
    if (mpit_expect == MPIT_EXPECT_MIXED) {
        MPIT_CHECK(core_b + fb_b == bcasts && core_y + fb_y == barriers,
                   "%s: %llu Bcast and %llu Barrier calls, but numacoll ran "
                   "%llu + %llu and fell back on %llu + %llu", what, bcasts,
                   barriers, core_b, core_y, fb_b, fb_y);
        return;
    }
    if (mpit_expect == MPIT_EXPECT_CORE) {
        want_core_b = bcasts;
        want_core_y = barriers;
    } else {
        want_fb_b = bcasts;
        want_fb_y = barriers;
    }
    MPIT_CHECK(core_b == want_core_b && fb_b == want_fb_b,
               "%s: %llu Bcast calls: numacoll ran %llu and fell back on %llu; "
               "expected %llu and %llu", what, bcasts, core_b, fb_b,
               want_core_b, want_fb_b);
    MPIT_CHECK(core_y == want_core_y && fb_y == want_fb_y,
               "%s: %llu Barrier calls: numacoll ran %llu and fell back on "
               "%llu; expected %llu and %llu", what, barriers, core_y, fb_y,
               want_core_y, want_fb_y);
}

void mpit_init(int *argc, char ***argv, const char *name)
{
    int provided;
    mpit_init_thread(argc, argv, name, MPI_THREAD_SINGLE, &provided);
}

void mpit_init_thread(int *argc, char ***argv, const char *name,
                      int required, int *provided)
{
    test_name = name;
    if (required == MPI_THREAD_SINGLE) {
        MPI_Init(argc, argv);
        *provided = MPI_THREAD_SINGLE;
    } else {
        MPI_Init_thread(argc, argv, required, provided);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &mpit_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpit_size);
    const char *e = getenv("NUMACOLL_EXPECT");
    mpit_expect = !e ? MPIT_EXPECT_NONE
                : strcmp(e, "core") == 0 ? MPIT_EXPECT_CORE
                : strcmp(e, "fallback") == 0 ? MPIT_EXPECT_FALLBACK
                : strcmp(e, "mixed") == 0 ? MPIT_EXPECT_MIXED
                : strcmp(e, "absent") == 0 ? MPIT_EXPECT_ABSENT
                                           : MPIT_EXPECT_NONE;
    pvars_open();
}

int mpit_finish(void)
{
    /* Every program, whether or not it reads the counters. */
    if (mpit_expect == MPIT_EXPECT_ABSENT)
        MPIT_CHECK(!pv_present, "numacoll's MPI_T variables exist: the "
                   "component opened although a parameter was rejected");
    long mine[2] = {checks, failures}, all[2];
    if (pv_present) {
        for (int i = 0; i < PV_N; i++)
            MPI_T_pvar_handle_free(session, &pv_handle[i]);
    }
    if (mpit_t_ok) {
        MPI_T_pvar_session_free(&session);
        MPI_T_finalize();
    }
    MPI_Reduce(mine, all, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (mpit_rank == 0) {
        if (all[1] == 0)
            printf("%s np=%d: PASS (%ld checks)\n", test_name, mpit_size,
                   all[0]);
        else
            printf("%s np=%d: FAIL (%ld of %ld checks failed)\n", test_name,
                   mpit_size, all[1], all[0]);
        fflush(stdout);
    }
    int fail = mpit_rank == 0 ? all[1] != 0 : 0;
    MPI_Finalize();
    return fail;
}

uint64_t mpit_mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void mpit_fill(void *buf, size_t n, unsigned seed)
{
    unsigned char *b = buf;
    uint64_t x = 0x9E3779B97F4A7C15ULL * (seed + 1ULL);
    for (size_t i = 0; i < n; i += 8) {
        uint64_t z = mpit_mix(x += 0x9E3779B97F4A7C15ULL);
        memcpy(b + i, &z, n - i < 8 ? n - i : 8);
    }
}

void mpit_make_comms(MPI_Comm c[MPIT_NCOMMS])
{
    c[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &c[1]);
    MPI_Comm_split(MPI_COMM_WORLD, mpit_rank < mpit_size / 2, mpit_rank, &c[2]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, mpit_size - 1 - mpit_rank, &c[3]);
}

void mpit_free_comms(MPI_Comm c[MPIT_NCOMMS])
{
    for (int i = 1; i < MPIT_NCOMMS; i++)
        MPI_Comm_free(&c[i]);
}
