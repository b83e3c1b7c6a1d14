/*
 * Communicators: a team per communicator, created lazily at its first
 * collective call and cached as an attribute whose delete callback frees
 * it (MPI_Comm_free, MPI_Finalize); the parameters from the environment;
 * the counters NUMACOLL_COUNTERS=1 prints at MPI_Finalize.
 *
 * Every decision here is the same on every rank of a communicator: all
 * ranks make the same first call, the node test is a collective answer
 * (every rank on one node or not), and team creation agrees on its
 * failures, so every rank declines or serves together.
 */
#include "mpi/nm.h"
#include "mpi/nm_map.h"

#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- parameters ----------------------------------------------------------- */

static numacoll_config_t nm_cfg;
static int nm_enabled = 1;
static int nm_print_counters;
static pthread_once_t nm_once = PTHREAD_ONCE_INIT;
static int nm_keyval = MPI_KEYVAL_INVALID;

/* Each parameter of NUMACOLL_PARAM_LIST from NUMACOLL_<NAME> (frag_size:
 * NUMACOLL_FRAG_SIZE); a value the core rejects is said and left at its
 * default, and the job runs. */
static void nm_read_env(void)
{
    numacoll_config_init(&nm_cfg);
    static const char *const names[] = {
#define X(field, type, def, min, max, doc) #field,
        NUMACOLL_PARAM_LIST(X)
#undef X
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char var[64] = "NUMACOLL_";
        size_t o = strlen(var);
        for (const char *c = names[i]; *c && o + 1 < sizeof var; c++)
            var[o++] = (char)toupper((unsigned char)*c);
        var[o] = '\0';
        const char *v = getenv(var);
        char why[256];
        if (v && numacoll_config_set(&nm_cfg, names[i], v, why, sizeof why) !=
                     NUMACOLL_OK)
            fprintf(stderr, "%s (from %s); the default stays\n", why, var);
    }
    char why[256];
    if (numacoll_config_check(&nm_cfg, why, sizeof why) != NUMACOLL_OK) {
        fprintf(stderr, "%s; numacoll serves no call of this process\n", why);
        nm_enabled = 0;
    }
    const char *on = getenv("NUMACOLL_MPI");
    if (on && strcmp(on, "0") == 0)
        nm_enabled = 0;
    const char *cnt = getenv("NUMACOLL_COUNTERS");
    nm_print_counters = cnt && strcmp(cnt, "0") != 0 && *cnt;
}

/* ---- counters ------------------------------------------------------------- */

static _Atomic uint64_t nm_ran[NUMACOLL_COLL_COUNT];
static _Atomic uint64_t nm_declined[NUMACOLL_COLL_COUNT];

void nm_count(numacoll_coll_t coll, int ran)
{
    atomic_fetch_add_explicit(ran ? &nm_ran[coll] : &nm_declined[coll], 1,
                              memory_order_relaxed);
}

static const char *const nm_coll_names[NUMACOLL_COLL_COUNT] = {
    [NUMACOLL_COLL_BCAST] = "bcast",
    [NUMACOLL_COLL_BARRIER] = "barrier",
    [NUMACOLL_COLL_REDUCE] = "reduce",
    [NUMACOLL_COLL_ALLREDUCE] = "allreduce",
    [NUMACOLL_COLL_ALLGATHER] = "allgather",
    [NUMACOLL_COLL_GATHER] = "gather",
    [NUMACOLL_COLL_SCATTER] = "scatter",
    [NUMACOLL_COLL_ALLTOALL] = "alltoall",
    [NUMACOLL_COLL_REDUCE_SCATTER] = "reduce_scatter",
    [NUMACOLL_COLL_SCAN] = "scan",
    [NUMACOLL_COLL_EXSCAN] = "exscan",
};

static void nm_say_counters(void)
{
    int rank = -1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char line[1024];
    size_t o = (size_t)snprintf(line, sizeof line,
                                "numacoll counters rank %d:", rank);
    for (int c = 0; c < NUMACOLL_COLL_COUNT && o < sizeof line; c++)
        o += (size_t)snprintf(
            line + o, sizeof line - o, " %s=%llu %s_declined=%llu",
            nm_coll_names[c],
            (unsigned long long)atomic_load_explicit(&nm_ran[c],
                                                     memory_order_relaxed),
            nm_coll_names[c],
            (unsigned long long)atomic_load_explicit(&nm_declined[c],
                                                     memory_order_relaxed));
    fprintf(stderr, "%s\n", line);
}

/* ---- the team of a communicator -------------------------------------------- */

/* The attribute's value: the team, or none (declined for good), and its
 * references: the communicator's own, and one per nonblocking request in
 * flight, since MPI lets a communicator be freed with requests pending.
 * The last one out destroys the team. */
struct nm_comm {
    numacoll_team_t *team;
    atomic_int refs;
};

void nm_comm_hold(nm_comm_t *c)
{
    atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
}

void nm_comm_release(nm_comm_t *c)
{
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (c->team)
        (void)numacoll_team_destroy(c->team);
    free(c);
}

static int nm_comm_delete(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    if (val)
        nm_comm_release(val);
    return MPI_SUCCESS;
}

static void nm_init_once(void)
{
    nm_read_env();
    /* A duplicate gets no copy: its first call makes its own team (the
     * team's synchronisation words are per communicator). */
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, nm_comm_delete,
                                &nm_keyval, NULL) != MPI_SUCCESS)
        nm_enabled = 0;
}

/* The bootstrap's allgather, over the communicator being served. */
static int nm_boot_allgather(const void *send, void *recv, size_t nbytes,
                             void *ctx)
{
    if (nbytes > INT32_MAX)
        return -1;
    return PMPI_Allgather(send, (int)nbytes, MPI_BYTE, recv, (int)nbytes,
                          MPI_BYTE, *(MPI_Comm *)ctx) == MPI_SUCCESS ? 0 : -1;
}

/* 1 when every rank of comm shares this node's memory (one answer on every
 * rank: the size of each rank's node group equals comm's only when all of
 * them are on one node). */
static int nm_one_node(MPI_Comm comm, int size)
{
    MPI_Comm node;
    int n = 0;
    if (PMPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                             &node) != MPI_SUCCESS)
        return 0;
    PMPI_Comm_size(node, &n);
    PMPI_Comm_free(&node);
    return n == size;
}

static nm_comm_t *nm_setup(MPI_Comm comm)
{
    nm_comm_t *c = calloc(1, sizeof *c);
    if (c)
        atomic_init(&c->refs, 1);
    int inter = 0, size = 0, rank = 0;
    PMPI_Comm_test_inter(comm, &inter);
    PMPI_Comm_size(comm, &size);
    PMPI_Comm_rank(comm, &rank);
    if (!inter && size >= 2 && nm_one_node(comm, size)) {
        numacoll_bootstrap_t boot = {.rank = rank, .size = size,
                                     .allgather = nm_boot_allgather,
                                     .ctx = &comm};
        numacoll_team_t *t = NULL;
        int st = numacoll_team_create(&boot, &nm_cfg, &t);
        if (st == NUMACOLL_OK && c) {
            c->team = t;
        } else {
            if (st == NUMACOLL_OK)
                numacoll_team_destroy(t);
            static atomic_int said;
            if (nm_cfg.verbose >= 1 &&
                atomic_exchange_explicit(&said, 1, memory_order_relaxed) == 0)
                fprintf(stderr, "numacoll: a communicator's team could not "
                        "be created (%s: %s); its collectives go to the MPI "
                        "library's own (said once per process)\n",
                        numacoll_strerror(st), numacoll_team_create_error());
        }
    }
    /* Without its record this rank would decide again at the next call
     * while the others keep their answer: no way on but out. */
    if (!c || PMPI_Comm_set_attr(comm, nm_keyval, c) != MPI_SUCCESS) {
        fprintf(stderr, "numacoll: out of memory for a communicator's record "
                "on rank %d\n", rank);
        if (c && c->team)
            numacoll_team_destroy(c->team);
        free(c);
        PMPI_Abort(comm, MPI_ERR_NO_MEM);
        return NULL;
    }
    return c;
}

/* The record of comm; created (collectively) where it has none and
 * `create` says so. */
static nm_comm_t *nm_record(MPI_Comm comm, int create)
{
    pthread_once(&nm_once, nm_init_once);
    if (!nm_enabled || comm == MPI_COMM_NULL)
        return NULL;
    void *val = NULL;
    int flag = 0;
    if (PMPI_Comm_get_attr(comm, nm_keyval, &val, &flag) != MPI_SUCCESS)
        return NULL;
    return flag ? val : create ? nm_setup(comm) : NULL;
}

numacoll_team_t *nm_team(MPI_Comm comm)
{
    nm_comm_t *c = nm_record(comm, 1);
    return c ? c->team : NULL;
}

nm_comm_t *nm_comm_served(MPI_Comm comm)
{
    nm_comm_t *c = nm_record(comm, 0);
    return c && c->team ? c : NULL;
}

numacoll_team_t *nm_comm_team(const nm_comm_t *c)
{
    return c->team;
}

int nm_declines(numacoll_team_t *t, numacoll_coll_t coll, size_t nbytes)
{
    return (numacoll_team_decline_mask(t) >> coll & 1u) &&
           numacoll_team_declines(t, coll, nbytes);
}

int nm_hands_back(int st)
{
    if (st == NUMACOLL_ERR_UNSUPPORTED)
        return 1;
    if (st != NUMACOLL_ERR_NOSPACE)
        return 0;
    static atomic_int said;
    if (nm_cfg.verbose >= 1 &&
        atomic_exchange_explicit(&said, 1, memory_order_relaxed) == 0)
        fprintf(stderr, "numacoll: a collective needed its team's staging "
                "and /dev/shm had no room for it under node_budget: such "
                "calls go to the MPI library's own collectives (said once "
                "per process)\n");
    return 1;
}

int nm_error(numacoll_team_t *t, const char *what, int st)
{
    if (st != NUMACOLL_OK && nm_cfg.verbose >= 1)
        fprintf(stderr, "numacoll: %s failed on rank %d: %s: %s\n", what,
                numacoll_team_rank(t), numacoll_strerror(st),
                t ? numacoll_team_last_error(t) : "");
    return nm_error_class(st);
}

int nm_finish(MPI_Comm comm, numacoll_team_t *t, const char *what, int st)
{
    if (st == NUMACOLL_OK)
        return MPI_SUCCESS;
    int err = nm_error(t, what, st);
    /* the wrapper is MPI's entry point: the communicator's handler is ours
     * to call (MPI_ERRORS_ARE_FATAL aborts here) */
    PMPI_Comm_call_errhandler(comm, err);
    return err;
}

int nm_done(MPI_Comm comm, numacoll_team_t *t, numacoll_coll_t coll,
            const char *what, int st, int rc)
{
    if (st != NUMACOLL_OK)
        return nm_finish(comm, t, what, st);
    nm_count(coll, 1);
    if (rc != MPI_SUCCESS)
        PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

int nm_local_fail(MPI_Comm comm, int rc)
{
    PMPI_Comm_call_errhandler(comm, rc);
    return rc;
}

/* ---- MPI_Finalize ------------------------------------------------------- */

int MPI_Finalize(void)
{
    pthread_once(&nm_once, nm_init_once);
    if (nm_print_counters)
        nm_say_counters();
    if (nm_keyval != MPI_KEYVAL_INVALID) {
        /* MPI deletes MPI_COMM_SELF's attributes at finalize, not
         * MPI_COMM_WORLD's: free the world's team here (a local call) */
        (void)PMPI_Comm_delete_attr(MPI_COMM_WORLD, nm_keyval);
    }
    return PMPI_Finalize();
}
