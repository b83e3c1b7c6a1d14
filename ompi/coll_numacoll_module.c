/*
 * Per-communicator glue: selection, the lazy team, Bcast and Barrier
 * (Reduce and Allreduce: coll_numacoll_red.c).
 *
 * Selection (comm_query) accepts intra-communicators of two or more
 * processes that all share this node and declines everything else with a
 * one-line reason at coll_base_verbose 10. Enabling saves the functions we
 * replace; the team and its segment are created inside the first
 * collective the core takes on the communicator (every rank makes that
 * call, so the creation can be collective) and destroyed with the module when the communicator is
 * freed. If setup fails anywhere, every rank agrees to hand this
 * communicator's calls to the saved functions for good.
 *
 * Bcast moves bytes: a datatype whose `count` elements lie contiguously goes
 * straight from/to the user buffer, any other goes through Open MPI's
 * convertor in pack/unpack callbacks. Only the packed size must match
 * between ranks, so root and readers may use different (count, datatype)
 * pairs with the same signature, as MPI allows.
 */
#include "coll_numacoll.h"
#include "mpi/nm_map.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/mca/coll/base/coll_base_functions.h"
#include "ompi/mca/coll/base/coll_tags.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/proc/proc.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

static void nc_module_construct(nc_module_t *m);
static void nc_module_destruct(nc_module_t *m);
static int nc_mpi_error(numacoll_status_t st);

OBJ_CLASS_INSTANCE(mca_coll_numacoll_module_t, mca_coll_base_module_t,
                   nc_module_construct, nc_module_destruct);

static int nc_module_enable(mca_coll_base_module_t *module,
                            ompi_communicator_t *comm);
static int nc_bcast(void *buf, int count, ompi_datatype_t *dtype, int root,
                    ompi_communicator_t *comm, mca_coll_base_module_t *module);
static int nc_barrier(ompi_communicator_t *comm,
                      mca_coll_base_module_t *module);
/* A log line for every call is too much at level 10, where selection is
 * explained; it appears from NC_CALL_VERBOSITY on. */
bool nc_call_verbose(void)
{
    return ompi_coll_base_framework.framework_verbose >= NC_CALL_VERBOSITY;
}

/* ---- selection -------------------------------------------------------- */

int mca_coll_numacoll_init_query(bool enable_progress_threads,
                                 bool enable_mpi_threads)
{
    /* Blocking collectives on one communicator never run concurrently (MPI
     * forbids it), and per-communicator state is all we keep: any thread
     * level is fine. */
    (void)enable_progress_threads;
    (void)enable_mpi_threads;
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *
mca_coll_numacoll_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    const char *why = NULL;
    int size = ompi_comm_size(comm);

    if (OMPI_COMM_IS_INTER(comm))
        why = "intercommunicator";
    else if (size < 2)
        why = "only 1 process";
    else if (nc_component.priority < 0)
        why = "coll_numacoll_priority is negative";
    else if (nc_hier_wanted(comm)) {
        /* Two levels (coll_numacoll_hier.c); enabled as any module. */
        nc_module_t *h = nc_hier_query(comm, priority);
        if (h)
            h->super.coll_module_enable = nc_module_enable;
        return h ? &h->super : NULL;
    }
    else if (ompi_group_have_remote_peers(comm->c_local_group))
        why = "its processes are on more than one node";
    if (why) {
        opal_output_verbose(10, NC_OUT,
                            "coll:numacoll:comm_query: %s (cid %u, %d "
                            "processes): declined: %s", nc_comm_name(comm),
                            nc_comm_cid(comm), size, why);
        return NULL;
    }

    nc_module_t *m = OBJ_NEW(mca_coll_numacoll_module_t);
    if (!m)
        return NULL;
    m->super.coll_module_enable = nc_module_enable;
    m->super.coll_bcast = nc_bcast;
    m->super.coll_barrier = nc_barrier;
    m->super.coll_reduce = nc_reduce;
    m->super.coll_allreduce = nc_allreduce;
    nc_nb_install(m);
    nc_ga_install(m);
    *priority = nc_component.priority;
    opal_output_verbose(10, NC_OUT,
                        "coll:numacoll:comm_query: %s (cid %u, %d processes "
                        "on this node): accepted, priority %d; the segment "
                        "is created on the first collective numacoll runs",
                        nc_comm_name(comm), nc_comm_cid(comm), size,
                        *priority);
    return &m->super;
}

/*
 * Save the functions we replace. Modules are enabled in ascending priority,
 * so the communicator's table holds the next-best component's functions
 * now. It may hold none: when ompi_comm_coll_preference reorders components
 * (as HAN does for its sub-communicators) or a component of lower priority
 * than basic/libnbc is enabled first, the table can still be empty here
 * (open-mpi/ompi#9885). Calling a NULL fallback later would crash, so
 * decline instead: Open MPI then simply does not use this module.
 */
static int nc_module_enable(mca_coll_base_module_t *module,
                            ompi_communicator_t *comm)
{
    nc_module_t *m = (nc_module_t *)module;
    mca_coll_base_comm_coll_t *c = comm->c_coll;
    const char *missing = NULL;

    if (!c->coll_bcast || !c->coll_bcast_module ||
        c->coll_bcast_module == module)
        missing = "bcast";
    else if (!c->coll_barrier || !c->coll_barrier_module ||
             c->coll_barrier_module == module)
        missing = "barrier";
    else if (!c->coll_reduce || !c->coll_reduce_module ||
             c->coll_reduce_module == module)
        missing = "reduce";
    else if (!c->coll_allreduce || !c->coll_allreduce_module ||
             c->coll_allreduce_module == module)
        missing = "allreduce";
    if (missing) {
        opal_output_verbose(10, NC_OUT,
                            "coll:numacoll:enable: %s (cid %u): declined: no "
                            "previous %s to fall back on (numacoll was "
                            "enabled before the components below it: its "
                            "priority is lower than theirs, or "
                            "ompi_comm_coll_preference reordered them; see "
                            "open-mpi/ompi#9885)",
                            nc_comm_name(comm), nc_comm_cid(comm), missing);
        return OMPI_ERROR;
    }
    m->prev_bcast = c->coll_bcast;
    m->prev_bcast_module = c->coll_bcast_module;
    OBJ_RETAIN(m->prev_bcast_module);
    m->prev_barrier = c->coll_barrier;
    m->prev_barrier_module = c->coll_barrier_module;
    OBJ_RETAIN(m->prev_barrier_module);
    m->prev_reduce = c->coll_reduce;
    m->prev_reduce_module = c->coll_reduce_module;
    OBJ_RETAIN(m->prev_reduce_module);
    m->prev_allreduce = c->coll_allreduce;
    m->prev_allreduce_module = c->coll_allreduce_module;
    OBJ_RETAIN(m->prev_allreduce_module);
    nc_nb_enable(m, comm);
    nc_ga_enable(m, comm);
    m->comm = comm;
    return OMPI_SUCCESS;
}

/* ---- module life cycle ------------------------------------------------ */

static void nc_module_construct(nc_module_t *m)
{
    /* The parent constructor clears only its own part. */
    m->comm = NULL;
    m->state = MCA_COLL_NUMACOLL_LAZY;
    m->team = NULL;
    m->decline_mask = 0;
    memset(&m->boot, 0, sizeof m->boot);
    m->boot_pid = NULL;
    m->boot_status = NUMACOLL_OK;
    m->boot_why[0] = '\0';
    m->setup_err = MPI_SUCCESS;
    m->prev_bcast = NULL;
    m->prev_bcast_module = NULL;
    m->prev_barrier = NULL;
    m->prev_barrier_module = NULL;
    m->prev_reduce = NULL;
    m->prev_reduce_module = NULL;
    m->prev_allreduce = NULL;
    m->prev_allreduce_module = NULL;
    m->hier = NULL;
    /* no plan yet: no datatype handle is NULL */
    memset(m->red_kept, 0, sizeof m->red_kept);
    m->red_next = 0;
    nc_nb_construct(m);
    nc_ga_construct(m);
}

/* Runs while the communicator is destructed (MPI_Comm_free, MPI_Finalize).
 * numacoll_team_destroy() only unmaps (the segment's name was unlinked at
 * creation), so nothing here talks to other processes, whose frees may
 * come at any time. */
static void nc_module_destruct(nc_module_t *m)
{
    if (m->hier)
        nc_hier_free(m);
    if (m->team) {
        int st = numacoll_team_destroy(m->team);
        if (st != NUMACOLL_OK)
            opal_output_verbose(1, NC_OUT,
                                "coll:numacoll: destroying the team of cid "
                                "%u failed: %s",
                                m->comm ? nc_comm_cid(m->comm) : 0u,
                                numacoll_strerror(st));
        m->team = NULL;
        atomic_fetch_sub_explicit(&nc_component.n_teams, 1u, memory_order_relaxed);
    }
    if (m->prev_bcast_module)
        OBJ_RELEASE(m->prev_bcast_module);
    if (m->prev_barrier_module)
        OBJ_RELEASE(m->prev_barrier_module);
    if (m->prev_reduce_module)
        OBJ_RELEASE(m->prev_reduce_module);
    if (m->prev_allreduce_module)
        OBJ_RELEASE(m->prev_allreduce_module);
    nc_nb_destruct(m);
    nc_ga_destruct(m);
}

/* ---- lazy setup ------------------------------------------------------- */

/*
 * The bootstrap exchange: a ring allgather, point-to-point on the
 * communicator with the reserved collective tag, without going through the
 * communicator's function table: it cannot land back in our own
 * Bcast/Barrier (basic's allgather is gather + bcast, which would), does
 * not depend on which components were selected, and is legal inside the
 * first collective call, which every rank of the communicator is making.
 *
 * Its waits turn opal_progress themselves instead of ompi_request_wait:
 * under MPI_THREAD_MULTIPLE, Open MPI 4.1 agrees on a new communicator's
 * id with an MPI_Iallreduce on the parent started from inside
 * opal_progress, and a request wait nested there sleeps on a condition
 * that only the outer progress loop, the one it is nested in, would signal
 * (the first MPI_Comm_dup of such a program hung).
 *
 * They watch as the core's waits do (docs/ompi.md, Errors), every 10 ms:
 * whether a process of the communicator has ended, and whether
 * coll_numacoll_timeout_ms has passed. By the clock, not after a number
 * of polls: opal_progress yields the CPU on an oversubscribed node
 * (mpi_yield_when_idle), and a thousand yields took seconds on a loaded
 * one. Open MPI itself completes nothing when a peer dies unless the job
 * ends (mpirun --enable-recovery keeps it going). Any rank's death counts,
 * not only the awaited one's: the ring forwards every block, so a rank
 * stalls behind a dead rank anywhere upstream; and no process leaves a
 * setup it belongs to by exiting (MPI_Finalize is collective). The pids
 * come from PMIx, where each process put its own before MPI_Init's modex
 * (nc_pid_publish), so a peer that died before its first message is seen
 * too.
 *
 * Every block travels behind a header with a status. A rank that leaves
 * the exchange (a dead peer, its timeout, a PML error) sends its
 * successor, in place of the next block it owes it, a header alone with
 * its reason; the successor leaves too and passes it on. So a timeout or
 * an error on one rank ends the exchange on all that still wait, as the
 * core's abort word does for a team, instead of each waiting for its own
 * timeout, or for ever where it has none.
 */
enum {
    NC_BOOT_CHECK_MS = 10,  /* between looks                                */
    NC_BOOT_DEEP = 5        /* every 5th look also finds zombies (50 ms)    */
};

static uint64_t nc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Whether process pid has ended. kill(pid, 0) fails with ESRCH only once
 * the process is reaped (EPERM: another user's, alive); until then it is
 * a zombie, which its parent (Open MPI's daemon) may reap late on a
 * loaded node, so deep looks read its state in /proc as well (some 15 us
 * a process, hence not at every look). */
static bool nc_pid_ended(int32_t pid, bool deep)
{
    if (kill(pid, 0) != 0)
        return errno == ESRCH;
    if (!deep)
        return false;
    char path[32], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = '\0';
    /* "pid (command) state ...": the command may hold ')' itself */
    const char *c = strrchr(buf, ')');
    return c && c[1] == ' ' && (c[2] == 'Z' || c[2] == 'X');
}

/* A rank of the communicator whose process has ended, or -1. The pids
 * are looked up once per setup, on the first look; 0 (unknown: a peer of
 * another job, say) is never found dead. */
static int nc_boot_dead(nc_module_t *m, bool deep)
{
    const int p = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm);
    if (!m->boot_pid) {
        m->boot_pid = calloc((size_t)p, sizeof *m->boot_pid);
        if (!m->boot_pid)
            return -1;      /* the timeout alone watches, as without pids */
        for (int r = 0; r < p; r++)
            if (r != me)
                m->boot_pid[r] = nc_pid_of(ompi_comm_peer_lookup(m->comm, r));
    }
    for (int r = 0; r < p; r++)
        if (m->boot_pid[r] > 0 && nc_pid_ended(m->boot_pid[r], deep))
            return r;
    return -1;
}

/* Give the requests up: a receive still posted is cancelled (ob1 takes
 * an unmatched one off its queue at once), so nothing lands in a buffer
 * once the exchange has failed. The few bytes of a send go eagerly; one
 * the PML still holds after 100 ms it releases itself once done, the
 * request being freed. */
static void nc_boot_drop(ompi_request_t **req, int n)
{
    for (int i = 0; i < n; i++)
        if (!REQUEST_COMPLETE(req[i]))
            (void)ompi_request_cancel(req[i]);
    const uint64_t until = nc_now_ms() + 100;
    for (int i = 0; i < n; i++)
        while (!REQUEST_COMPLETE(req[i]) && nc_now_ms() < until)
            opal_progress();
    for (int i = 0; i < n; i++)
        ompi_request_free(&req[i]);
}

/* Why this rank leaves the exchange: its status, the sentence printf
 * makes, the rank found dead (or -1), kept for nc_setup and for the
 * header nc_boot_tell sends. */
static void nc_boot_say(nc_module_t *m, int status, int culprit,
                        const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void nc_boot_say(nc_module_t *m, int status, int culprit,
                        const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->boot_why, sizeof m->boot_why, fmt, ap);
    va_end(ap);
    m->boot_status = status;
    m->boot_left = (nc_boot_hdr_t){.status = status,
                                   .origin = ompi_comm_rank(m->comm),
                                   .culprit = culprit};
}

/* ... and leaves: the successor gets the header that says so in place of
 * the next block this rank owes it (sent from the module, which outlives
 * the send). */
static void nc_boot_tell(nc_module_t *m)
{
    const int p = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm);
    ompi_request_t *req;
    if (MCA_PML_CALL(isend(&m->boot_left, (int)sizeof m->boot_left, MPI_BYTE,
                           (me + 1) % p, MCA_COLL_BASE_TAG_ALLGATHER,
                           MCA_PML_BASE_SEND_STANDARD, m->comm, &req)) ==
        OMPI_SUCCESS)
        nc_boot_drop(&req, 1);
}

/* The checks between polls: NUMACOLL_OK to go on waiting, or the
 * failure, said (nc_boot_say). */
static int nc_boot_watch(nc_module_t *m, uint64_t start, uint64_t now,
                         unsigned looks, int from, int step)
{
    const int me = ompi_comm_rank(m->comm), p = ompi_comm_size(m->comm);
    const unsigned timeout = nc_component.config.timeout_ms;
    int dead = nc_boot_dead(m, looks % NC_BOOT_DEEP == 0);
    if (dead >= 0) {
        nc_boot_say(m, NUMACOLL_ERR_PEER_DEAD, dead, "rank %d waited for "
                    "rank %d in step %d of %d of the setup exchange, but "
                    "rank %d (pid %d) has died", me, from, step + 1, p - 1,
                    dead, (int)m->boot_pid[dead]);
        return NUMACOLL_ERR_PEER_DEAD;
    }
    if (timeout && now - start >= timeout) {
        nc_boot_say(m, NUMACOLL_ERR_TIMEOUT, -1, "rank %d waited for rank "
                    "%d in step %d of %d of the setup exchange for %u ms "
                    "without an answer (coll_numacoll_timeout_ms)", me, from,
                    step + 1, p - 1, timeout);
        return NUMACOLL_ERR_TIMEOUT;
    }
    return NUMACOLL_OK;
}

/* Wait for one ring step's requests (req[0] the receive from `from`) and
 * free them. 0, or -1 once this rank has left (said and told). */
static int nc_boot_wait(nc_module_t *m, ompi_request_t **req, int from,
                        int step)
{
    const uint64_t start = nc_now_ms();
    uint64_t last = start;
    unsigned looks = 0;
    for (int i = 0; i < 2; i++)
        while (!REQUEST_COMPLETE(req[i])) {
            opal_progress();
            const uint64_t now = nc_now_ms();
            if (now - last < NC_BOOT_CHECK_MS)
                continue;
            last = now;
            if (nc_boot_watch(m, start, now, ++looks, from, step) ==
                NUMACOLL_OK)
                continue;
            /* what a peer sent before it died counts: one more look */
            opal_progress();
            if (REQUEST_COMPLETE(req[0]) && REQUEST_COMPLETE(req[1])) {
                m->boot_status = NUMACOLL_OK;
                continue;
            }
            nc_boot_tell(m);
            nc_boot_drop(req, 2);
            return -1;
        }
    /* another thread's progress may have completed them: their data and
     * status after the flag (as ompi_request_wait_completion orders) */
    opal_atomic_rmb();
    const int err = req[0]->req_status.MPI_ERROR != MPI_SUCCESS
                        ? req[0]->req_status.MPI_ERROR
                        : req[1]->req_status.MPI_ERROR;
    ompi_request_free(&req[0]);
    ompi_request_free(&req[1]);
    if (err == MPI_SUCCESS)
        return 0;
#ifdef MPI_ERR_PROC_FAILED
    /* Open MPI 5.0 with ULFM fails a request to a dead peer */
    const int st = err == MPI_ERR_PROC_FAILED ? NUMACOLL_ERR_PEER_DEAD
                                              : NUMACOLL_ERR_BOOTSTRAP;
#else
    const int st = NUMACOLL_ERR_BOOTSTRAP;
#endif
    nc_boot_say(m, st, -1, "rank %d's step %d of the setup exchange (from "
                "rank %d) failed with MPI error class %d",
                ompi_comm_rank(m->comm), step + 1, from, err);
    nc_boot_tell(m);
    return -1;
}

static int nc_boot_allgather(const void *send, void *recv, size_t nbytes,
                             void *ctx)
{
    nc_module_t *m = ctx;
    const int p = ompi_comm_size(m->comm), r = ompi_comm_rank(m->comm);
    const int to = (r + 1) % p, from = (r + p - 1) % p;
    const size_t len = sizeof(nc_boot_hdr_t) + nbytes;
    /* [0] the block this rank passes on, [1] the one it takes */
    char *buf = len <= (size_t)INT_MAX ? malloc(2 * len) : NULL;
    if (!buf) {
        nc_boot_say(m, NUMACOLL_ERR_NOMEM, -1, "rank %d has no room for the "
                    "setup exchange's %zu bytes", r, 2 * len);
        nc_boot_tell(m);
        return -1;
    }
    char *out = recv;
    memcpy(out + (size_t)r * nbytes, send, nbytes);
    const nc_boot_hdr_t ok = {.status = NUMACOLL_OK, .origin = r,
                              .culprit = -1};
    memcpy(buf, &ok, sizeof ok);
    int rc = 0;
    /* step i: pass on the block of rank r - i, take that of r - i - 1 */
    for (int i = 0; i + 1 < p && rc == 0; i++) {
        const int sb = (r - i + p) % p, rb = (r - i - 1 + p) % p;
        memcpy(buf + sizeof ok, out + (size_t)sb * nbytes, nbytes);
        ompi_request_t *req[2] = {NULL, NULL};
        int prc = MCA_PML_CALL(irecv(buf + len, (int)len, MPI_BYTE, from,
                                     MCA_COLL_BASE_TAG_ALLGATHER, m->comm,
                                     &req[0]));
        if (prc == OMPI_SUCCESS)
            prc = MCA_PML_CALL(isend(buf, (int)len, MPI_BYTE, to,
                                     MCA_COLL_BASE_TAG_ALLGATHER,
                                     MCA_PML_BASE_SEND_STANDARD, m->comm,
                                     &req[1]));
        if (prc != OMPI_SUCCESS) {
            if (req[0])
                nc_boot_drop(req, 1);
            nc_boot_say(m, NUMACOLL_ERR_BOOTSTRAP, -1, "rank %d could not "
                        "start step %d of the setup exchange (Open MPI error "
                        "%d)", r, i + 1, prc);
            nc_boot_tell(m);
            rc = -1;
        } else if (nc_boot_wait(m, req, from, i) != 0) {
            rc = -1;
        } else {
            nc_boot_hdr_t h;
            memcpy(&h, buf + len, sizeof h);
            if (h.status != NUMACOLL_OK) {
                /* a rank upstream left: so does this one, and says so */
                char why[64] = "";
                if (h.culprit >= 0)
                    snprintf(why, sizeof why, ": rank %d died", h.culprit);
                nc_boot_say(m, h.status, h.culprit, "rank %d waited for rank "
                            "%d in step %d of %d of the setup exchange, "
                            "which rank %d had left (%s%s)", r, from, i + 1,
                            p - 1, h.origin, numacoll_strerror(h.status),
                            why);
                nc_boot_tell(m);
                rc = -1;
            } else {
                memcpy(out + (size_t)rb * nbytes, buf + len + sizeof h,
                       nbytes);
            }
        }
    }
    free(buf);
    return rc;
}

/* Fall back for good, said once per communicator (by rank 0 when the
 * verdict is shared, by the rank that failed otherwise). */
static void nc_fall_back(nc_module_t *m, bool say, const char *why)
{
    m->state = MCA_COLL_NUMACOLL_FALLBACK;
    if (say)
        opal_output_verbose(10, NC_OUT,
                            "coll:numacoll: %s (cid %u, %d processes): "
                            "falling back to the previous component for good: "
                            "%s", nc_comm_name(m->comm), nc_comm_cid(m->comm),
                            ompi_comm_size(m->comm), why);
}

/*
 * Create the team. Called inside the first Bcast/Barrier on the
 * communicator, on every rank. Every step that can fail differently on
 * different ranks ends in an exchange, so all ranks reach the same verdict
 * and none waits for a rank that gave up.
 */
static void nc_setup(nc_module_t *m)
{
    ompi_communicator_t *comm = m->comm;
    int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    numacoll_config_t cfg = nc_component.config;
    char why[256];
    /* "" (the MCA default) leaves the choice to $NUMACOLL_TUNING_FILE */
    cfg.tuning_file = nc_component.tuning_file && nc_component.tuning_file[0]
                          ? nc_component.tuning_file : NULL;
    /* Open MPI yields when idle where it found the node oversubscribed
     * (more processes than slots), which no affinity mask of this
     * communicator's ranks may show (a split of a larger job): auto then
     * asks for sleeping waits (docs/usage.md, "Waiting") */
    if (cfg.wait_policy < 0 && opal_progress_yield_when_idle)
        cfg.wait_policy = 2;

    m->boot.rank = rank;
    m->boot.size = size;
    m->boot.allgather = nc_boot_allgather;
    m->boot.ctx = m;
    m->boot_status = NUMACOLL_OK;
    m->boot_why[0] = '\0';

    /* The team: collective, with agreement inside the core, which checks
     * the budgets (mem_budget, node_budget) and that every rank's shape
     * parameters are equal, in its own exchanges. */
    int st = numacoll_team_create(&m->boot, &cfg, &m->team);
    free(m->boot_pid);
    m->boot_pid = NULL;
    if (st != NUMACOLL_OK && m->boot_status != NUMACOLL_OK) {
        /* This rank left the exchange: the others learn of it only by
         * their own watch (or, where the core's last agreement completed
         * on them, in their team's first wait), so no verdict is shared
         * and the previous component would wait for the same peers. */
        m->team = NULL;
        m->state = MCA_COLL_NUMACOLL_FAILED;
        m->setup_err = nc_mpi_error((numacoll_status_t)m->boot_status);
        if (nc_component.config.verbose >= 1)
            opal_output(0, "coll:numacoll: setting up %s (cid %u) failed on "
                        "rank %d: %s: %s; numacoll's calls on it return "
                        "errors from now on", nc_comm_name(comm),
                        nc_comm_cid(comm), rank,
                        numacoll_strerror(m->boot_status), m->boot_why);
        return;
    }
    if (st == NUMACOLL_ERR_BUDGET) {
        const char *detail = numacoll_team_create_error();
        snprintf(why, sizeof why, "%.250s", detail[0] ? detail :
                 "its segment would exceed coll_numacoll_mem_budget or "
                 "coll_numacoll_node_budget");
        nc_fall_back(m, rank == 0, why);
        return;
    }
    if (st != NUMACOLL_OK) {
        m->team = NULL;
        /* the core's sentence says why (e.g. how full /dev/shm is) */
        const char *detail = numacoll_team_create_error();
        snprintf(why, sizeof why, "team creation failed: %s%s%.180s",
                 numacoll_strerror(st), detail[0] ? ": " : "", detail);
        nc_fall_back(m, true, why);
        return;
    }
    atomic_fetch_add_explicit(&nc_component.n_teams, 1u, memory_order_relaxed);
    m->decline_mask = numacoll_team_decline_mask(m->team);
    m->state = MCA_COLL_NUMACOLL_READY;
    if (rank == 0) {
        const char *why = "";
        int single = numacoll_team_single_copy(m->team, &why);
        opal_output_verbose(10, NC_OUT,
                            "coll:numacoll: %s (cid %u): team of %d processes "
                            "ready, segment %s, tuning table %s, single copy "
                            "%s%s%s",
                            nc_comm_name(comm), nc_comm_cid(comm), size,
                            numacoll_team_segment_name(m->team),
                            numacoll_team_tuning_source(m->team),
                            single ? "available" : "unavailable (",
                            single ? "" : why, single ? "" : ")");
    }
}

bool nc_ready(nc_module_t *m)
{
    if (m->state == MCA_COLL_NUMACOLL_LAZY)
        nc_setup(m);
    return m->state == MCA_COLL_NUMACOLL_READY;
}

/* ---- errors ----------------------------------------------------------- */

/* Core status to MPI error class (mpi/nm_map.c, shared with
 * libnumacoll-mpi). */
static int nc_mpi_error(numacoll_status_t st)
{
    return nm_error_class(st);
}

bool nc_hands_back(int st)
{
    static atomic_int said;
    if (st == NUMACOLL_ERR_UNSUPPORTED)
        return true;
    if (st != NUMACOLL_ERR_NOSPACE)
        return false;
    nc_count(NC_CNT_NOSPACE);
    if (nc_component.config.verbose >= 1 &&
        atomic_exchange_explicit(&said, 1, memory_order_relaxed) == 0)
        opal_output(0, "coll:numacoll: a communicator's collective needed "
                    "its shared staging, and /dev/shm had no room for it "
                    "under coll_numacoll_node_budget: such calls go to the "
                    "previous component (MPI_T coll_numacoll_nospace_count "
                    "counts them; said once per process)");
    return true;
}

/*
 * The MPI error class for a core status. The MPI binding (MPI_Bcast,
 * MPI_Barrier) passes what a coll function returns to the communicator's
 * error handler (OMPI_ERRHANDLER_RETURN), so returning the class is what
 * routes it there; invoking the handler here as well would call it twice.
 * The handler only sees the class, so the core's detailed sentence (which
 * rank waited for which on what) is printed first, unless coll_numacoll_
 * verbose is 0.
 */
int nc_finish(nc_module_t *m, const char *op, int st)
{
    if (st == NUMACOLL_OK)
        return MPI_SUCCESS;
    if (nc_component.config.verbose >= 1)
        opal_output(0, "coll:numacoll: %s on %s (cid %u) failed on rank %d: "
                    "%s: %s", op, nc_comm_name(m->comm), nc_comm_cid(m->comm),
                    ompi_comm_rank(m->comm), numacoll_strerror(st),
                    numacoll_team_last_error(m->team));
    return nc_mpi_error((numacoll_status_t)st);
}

/* ---- Bcast ------------------------------------------------------------ */

/*
 * Convertor state of a non-contiguous Bcast. The core asks for the packed
 * stream in order, fragment by fragment, so the convertor just continues
 * where it stopped. A fragment boundary may fall inside an element (6-byte
 * MPI_SHORT_INT elements and 8 KiB fragments, 32-byte
 * MPI_C_LONG_DOUBLE_COMPLEX ones and 56-byte inline lines): Open MPI's
 * pack stops before an element that does not fit, so the root packs that
 * element aside and hands its bytes over across the boundary (a type
 * Open MPI packs as contiguous blocks fills the fragment instead, element
 * or not). Open MPI's unpack accepts a partial element and completes it
 * with the next fragment, but only one of up to NC_CONV_PARTIAL bytes: a
 * reader of a larger element keeps a fragment's partial tail in carry
 * and unpacks it once the next fragment completes it (nc_dt_whole).
 */
int nc_pack(void *ctx, size_t offset, void *dst, size_t n)
{
    nc_dt_ctx_t *c = ctx;
    unsigned char *d = dst;
    if (offset != c->pos)
        return -1;  /* the core promises an in-order stream */
    c->pos += n;
    while (n > 0) {
        if (c->carry_len == 0) {
            struct iovec iov = {.iov_base = d, .iov_len = n};
            uint32_t iov_count = 1;
            size_t done = n;
            if (opal_convertor_pack(&c->conv, &iov, &iov_count, &done) < 0)
                return -1;
            d += done;
            n -= done;
            if (n == 0)
                break;
            /* The next element straddles the boundary. */
            iov.iov_base = c->carry;
            iov.iov_len = sizeof c->carry;
            iov_count = 1;
            done = sizeof c->carry;
            if (opal_convertor_pack(&c->conv, &iov, &iov_count, &done) < 0 ||
                done == 0)
                return -1;
            c->carry_off = 0;
            c->carry_len = done;
        }
        size_t k = n < c->carry_len ? n : c->carry_len;
        memcpy(d, c->carry + c->carry_off, k);
        c->carry_off += k;
        c->carry_len -= k;
        d += k;
        n -= k;
    }
    return 0;
}

/* n packed bytes into the convertor, all of them taken; 0 or -1. */
static int nc_unpack_run(nc_dt_ctx_t *c, const void *src, size_t n)
{
    /* The convertor only reads through iov_base when unpacking. */
    struct iovec iov = {.iov_base = (void *)(uintptr_t)src, .iov_len = n};
    uint32_t iov_count = 1;
    size_t done = n;
    return opal_convertor_unpack(&c->conv, &iov, &iov_count, &done) < 0 ||
                   done != n
               ? -1
               : 0;
}

int nc_unpack(void *ctx, size_t offset, const void *src, size_t n)
{
    nc_dt_ctx_t *c = ctx;
    const unsigned char *s = src;
    if (offset != c->pos)
        return -1;
    c->pos += n;
    if (c->whole == 0)
        return nc_unpack_run(c, s, n);
    /* Element boundaries unknown: the stream in one piece only (the
     * gathers' blocks; a Bcast declines such a type). */
    if (c->whole == SIZE_MAX)
        return offset == 0 && n == c->total ? nc_unpack_run(c, s, n) : -1;
    /* Elements begin at multiples of c->whole: complete the one the last
     * piece began, unpack the whole ones, keep the start of the next. */
    if (c->carry_len > 0) {
        size_t k = c->whole - c->carry_len < n ? c->whole - c->carry_len : n;
        memcpy(c->carry + c->carry_len, s, k);
        c->carry_len += k;
        s += k;
        n -= k;
        if (c->carry_len < c->whole)
            return 0;
        c->carry_len = 0;
        if (nc_unpack_run(c, c->carry, c->whole) != 0)
            return -1;
    }
    size_t tail = n % c->whole;
    if (n > tail && nc_unpack_run(c, s, n - tail) != 0)
        return -1;
    memcpy(c->carry, s + (n - tail), tail);
    c->carry_len = tail;
    return 0;
}

/*
 * What dtype's signature asks of a reader's stream in pieces: 0, nothing
 * (no basic type over NC_CONV_PARTIAL bytes); the size of its only basic
 * type where that is larger, as elements then begin at its multiples;
 * SIZE_MAX where such a type shares the signature with others (the
 * offsets of its elements follow the type map) or one exceeds NC_CARRY.
 * bdt_used holds the basic types of the type map (Open MPI adds none for
 * a block of count 0), so the answer follows the signature, the same on
 * every rank whatever its layout; types of no bytes (loop and bound
 * markers) are skipped.
 */
static size_t nc_dt_whole(const ompi_datatype_t *dtype)
{
    uint64_t used = dtype->super.bdt_used;
    size_t big = 0;
    int kinds = 0;
    for (; used != 0; used &= used - 1) {
        int i = __builtin_ctzll(used);
        if (i >= OPAL_DATATYPE_MAX_PREDEFINED ||
            !opal_datatype_basicDatatypes[i])
            continue;
        size_t size = opal_datatype_basicDatatypes[i]->size;
        kinds += size > 0;
        if (size > NC_CONV_PARTIAL)
            big = size;
        if (size > NC_CARRY)
            return SIZE_MAX;
    }
    return big == 0 ? 0 : kinds == 1 ? big : SIZE_MAX;
}

int nc_dt_begin(nc_dt_ctx_t *c, bool root, void *buf, int count,
                ompi_datatype_t *dtype)
{
    int rc;
    OBJ_CONSTRUCT(&c->conv, opal_convertor_t);
    c->pos = 0;
    c->carry_off = c->carry_len = 0;
    size_t tsize = 0;
    ompi_datatype_type_size(dtype, &tsize);
    c->total = tsize * (size_t)count;
    c->whole = root ? 0 : nc_dt_whole(dtype);
    /* All ranks share one node, so the local architecture's convertor is
     * the right template for both directions. */
    if (root)
        rc = opal_convertor_copy_and_prepare_for_send(
            ompi_mpi_local_convertor, &dtype->super, (size_t)count, buf, 0,
            &c->conv);
    else
        rc = opal_convertor_copy_and_prepare_for_recv(
            ompi_mpi_local_convertor, &dtype->super, (size_t)count, buf, 0,
            &c->conv);
    return rc == OPAL_SUCCESS ? NUMACOLL_OK : NUMACOLL_ERR_CALLBACK;
}

void nc_dt_end(nc_dt_ctx_t *c)
{
    OBJ_DESTRUCT(&c->conv);
}

nc_bc_plan_t nc_bc_plan(void *buf, int count, ompi_datatype_t *dtype)
{
    size_t tsize = 0;
    ompi_datatype_type_size(dtype, &tsize);
    nc_bc_plan_t p = {.nbytes = tsize * (size_t)count, .ptr = NULL};
    p.contig = ompi_datatype_is_contiguous_memory_layout(dtype, count);
    /* From the signature, contiguous or not: alike on every rank. */
    p.declines = p.nbytes > 0 && nc_dt_whole(dtype) == SIZE_MAX;
    /* Open MPI's binding returns before us on a count of 0; a type of no
     * bytes still reaches the core, whose 0-byte Bcast compares the ranks'
     * calls (a rank whose call says otherwise finds out). The first byte
     * of contiguous data sits at the true lower bound. */
    if (p.nbytes > 0 && p.contig)
        p.ptr = (char *)buf + dtype->super.true_lb;
    return p;
}

void nc_bc_log(nc_module_t *m, const char *what, int root,
               const nc_bc_plan_t *p, int st)
{
    if (!nc_call_verbose())
        return;
    opal_output_verbose(NC_CALL_VERBOSITY, NC_OUT,
                        "coll:numacoll:%s: %s (cid %u) root %d, %zu bytes, "
                        "%s: %s", what, nc_comm_name(m->comm),
                        nc_comm_cid(m->comm), root, p->nbytes,
                        p->contig ? "contiguous" : "convertor",
                        numacoll_strerror(st));
}

static int nc_bcast_convertor(nc_module_t *m, void *buf, int count,
                              ompi_datatype_t *dtype, int root, size_t nbytes)
{
    nc_dt_ctx_t c;
    int st = nc_dt_begin(&c, ompi_comm_rank(m->comm) == root, buf, count,
                         dtype);
    if (st == NUMACOLL_OK)
        st = numacoll_bcast_packed(m->team, nbytes, root, nc_pack, nc_unpack,
                                   &c);
    nc_dt_end(&c);
    return st;
}

static int nc_bcast(void *buf, int count, ompi_datatype_t *dtype, int root,
                    ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    int st = NC_DECLINED;
    const bool ready = nc_ready(m);
    if (ready && m->decline_mask) {
        size_t ts = 0;
        ompi_datatype_type_size(dtype, &ts);
        if (nc_rule_declines(m, NUMACOLL_COLL_BCAST, (size_t)count * ts)) {
            nc_count(NC_CNT_BCAST_DECLINED);
            return m->prev_bcast(buf, count, dtype, root, comm,
                                 m->prev_bcast_module);
        }
    }
    if (ready && nc_nb_inflight()) {
        st = nc_nb_blocking(m, NC_BCAST, NULL, buf, count, dtype, NULL, root);
        if (st != NC_DECLINED)
            return st;
    } else if (ready) {
        nc_bc_plan_t p = nc_bc_plan(buf, count, dtype);
        if (p.declines)
            st = NUMACOLL_ERR_UNSUPPORTED;
        else if (p.nbytes == 0 || p.contig)
            st = numacoll_bcast(m->team, p.ptr, p.nbytes, root);
        else
            st = nc_bcast_convertor(m, buf, count, dtype, root, p.nbytes);
        /* UNSUPPORTED: the core decides it from (size, root, config)
         * before touching shared memory, the plan from the signature,
         * identically on every rank, so all ranks take the previous
         * component together. */
        if (!nc_hands_back(st)) {
            nc_bc_log(m, "bcast", root, &p, st);
            if (st == NUMACOLL_OK)
                nc_count(NC_CNT_BCAST);
            return nc_finish(m, "MPI_Bcast", st);
        }
    }
    if ((st = nc_declined(m)) != NC_DECLINED)
        return st;
    nc_count(NC_CNT_BCAST_FALLBACK);
    return m->prev_bcast(buf, count, dtype, root, comm, m->prev_bcast_module);
}

/* ---- Barrier ---------------------------------------------------------- */

static int nc_barrier(ompi_communicator_t *comm,
                      mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    if (!nc_ready(m)) {
        int rc = nc_declined(m);
        if (rc != NC_DECLINED)
            return rc;
        nc_count(NC_CNT_BARRIER_FALLBACK);
        return m->prev_barrier(comm, m->prev_barrier_module);
    }
    if (nc_rule_declines(m, NUMACOLL_COLL_BARRIER, 0)) {
        nc_count(NC_CNT_BARRIER_DECLINED);
        return m->prev_barrier(comm, m->prev_barrier_module);
    }
    if (nc_nb_inflight()) {
        int rc = nc_nb_blocking(m, NC_BARRIER, NULL, NULL, 0, NULL, NULL, -1);
        if (rc != NC_DECLINED)
            return rc;
        nc_count(NC_CNT_BARRIER_FALLBACK);
        return m->prev_barrier(comm, m->prev_barrier_module);
    }
    int st = numacoll_barrier(m->team);
    if (nc_call_verbose())
        opal_output_verbose(NC_CALL_VERBOSITY, NC_OUT,
                            "coll:numacoll:barrier: %s (cid %u): %s",
                            nc_comm_name(comm), nc_comm_cid(comm),
                            numacoll_strerror(st));
    if (st == NUMACOLL_OK)
        nc_count(NC_CNT_BARRIER);
    return nc_finish(m, "MPI_Barrier", st);
}
