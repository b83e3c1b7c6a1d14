/*
 * Nonblocking collectives in libnumacoll-mpi, where the MPI lets a
 * generalized request poll: MPICH's MPIX_Grequest_start takes a poll
 * function that its MPI_Test, MPI_Wait and their any/some/all forms call
 * until the request completes. Served: MPI_Ibarrier, MPI_Ibcast,
 * MPI_Ireduce, MPI_Iallreduce, MPI_Iallgather, MPI_Igather, MPI_Iscatter
 * and MPI_Ialltoall. Under an MPI without such a hook (Open MPI) this file
 * defines nothing, and every nonblocking call is the MPI's own.
 *
 * Each call starts the core's request (numacoll_i*: the first step runs at
 * once, nothing blocks) and wraps it in a generalized request whose
 * state holds the core's request, the buffers (nm_span) and the result.
 * Polling one request moves every request of this process that is in
 * flight (numacoll_progress on their teams), so ranks that wait for their
 * requests in different orders still progress each other's; it completes
 * only its own (unpacking a temporary receive buffer first). The core's
 * blocking waits do the same through numacoll_set_wait_hook, so a rank in
 * a blocking collective on one communicator still feeds its nonblocking
 * one on another.
 *
 * Limit: MPICH calls the poll function only while a generalized request
 * is tested or waited for, not inside its own progress engine; a rank
 * blocked in a point-to-point wait does not move its numacoll requests.
 * A program that makes a peer's point-to-point completion depend on a
 * nonblocking collective's progress (legal MPI) would wait for ever: set
 * NUMACOLL_MPI_NB=0 to hand every nonblocking call to MPICH
 * (docs/mpich.md).
 */
#include "mpi/nm.h"

#ifdef MPICH_VERSION

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct nm_nb {
    struct nm_nb *prev, *next;  /* the requests in flight (nm_live)        */
    numacoll_request_t *nreq;   /* NULL once completed                     */
    numacoll_team_t *team;
    MPI_Request req;            /* the generalized request                 */
    MPI_Comm comm;
    nm_span_t span[2];          /* the buffers; drain[i]: unpack at the end */
    int nspan, drain[2];
    int dup[2];                 /* span[i].dt is our copy: free it         */
    nm_red_ctx_t ctx;           /* a user op's context                     */
    int err;                    /* the MPI result, for query               */
    int completed;              /* MPI_Grequest_complete called            */
} nm_nb_t;

static pthread_mutex_t nm_live_lock = PTHREAD_MUTEX_INITIALIZER;
static nm_nb_t *nm_live;
static int nm_nb_off = -1;

/* NUMACOLL_MPI_NB=0 hands every nonblocking call to the MPI. */
static int nm_nb_enabled(void)
{
    if (nm_nb_off < 0) {
        const char *v = getenv("NUMACOLL_MPI_NB");
        nm_nb_off = v && strcmp(v, "0") == 0;
    }
    return !nm_nb_off;
}

static void nm_nb_set_hook(void);

/* The core's blocking waits call this (numacoll_set_wait_hook): a rank
 * inside a blocking collective keeps its requests on other teams moving,
 * as the ranks waiting for them may need it before they reach the
 * blocking call; and it does not sleep while any is in flight. */
static int nm_nb_hook(void *ctx, const numacoll_team_t *waiting)
{
    (void)ctx;
    if (pthread_mutex_trylock(&nm_live_lock) != 0)
        return 1; /* another thread is at it: busy, so do not sleep */
    for (nm_nb_t *o = nm_live; o; o = o->next)
        if (o->nreq && o->team != waiting)
            (void)numacoll_progress(o->team);
    const int busy = nm_live != NULL;
    pthread_mutex_unlock(&nm_live_lock);
    return busy;
}

static void nm_live_add(nm_nb_t *s)
{
    static pthread_once_t hooked = PTHREAD_ONCE_INIT;
    pthread_once(&hooked, nm_nb_set_hook);
    pthread_mutex_lock(&nm_live_lock);
    s->next = nm_live;
    s->prev = NULL;
    if (nm_live)
        nm_live->prev = s;
    nm_live = s;
    pthread_mutex_unlock(&nm_live_lock);
}

static void nm_nb_set_hook(void)
{
    numacoll_set_wait_hook(nm_nb_hook, NULL);
}

static void nm_live_remove(nm_nb_t *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else if (nm_live == s)
        nm_live = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

static int nm_nb_query(void *state, MPI_Status *status)
{
    nm_nb_t *s = state;
    PMPI_Status_set_elements(status, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return s->err;
}

static int nm_nb_free(void *state)
{
    nm_nb_t *s = state;
    /* MPI forbids freeing an active collective request; a core request
     * still here is detached (the core runs it to its end) */
    if (s->nreq)
        numacoll_request_free(&s->nreq);
    free(s);
    return MPI_SUCCESS;
}

static int nm_nb_cancel(void *state, int complete)
{
    (void)state, (void)complete;
    return MPI_SUCCESS; /* collectives cannot be cancelled */
}

static int nm_nb_span_end(nm_nb_t *s, int i, int drain);

/* Move every request in flight; complete this one if it is done. */
static int nm_nb_poll(void *state, MPI_Status *status)
{
    (void)status;
    nm_nb_t *s = state;
    pthread_mutex_lock(&nm_live_lock);
    for (nm_nb_t *o = nm_live; o; o = o->next)
        if (o != s && o->nreq)
            (void)numacoll_progress(o->team);
    int done = !s->completed, st = NUMACOLL_OK;
    /* a request the core finished at its start has no nreq left */
    if (s->nreq)
        st = numacoll_test(&s->nreq, &done);
    if (done)
        nm_live_remove(s);
    pthread_mutex_unlock(&nm_live_lock);
    if (!done)
        return MPI_SUCCESS;
    s->completed = 1;
    int rc = MPI_SUCCESS;
    for (int i = 0; i < s->nspan; i++) {
        int r = nm_nb_span_end(s, i, st == NUMACOLL_OK);
        if (rc == MPI_SUCCESS)
            rc = r;
    }
    s->nspan = 0;
    s->err = st != NUMACOLL_OK ? nm_finish(s->comm, s->team, "a nonblocking "
                                           "collective", st)
                               : rc;
    return PMPI_Grequest_complete(s->req);
}

/* MPICH's MPI_Waitall takes a request with a wait function out of its
 * progress loop and calls this: poll until done, giving the CPU away
 * between polls (a peer may be waiting for it). */
static int nm_nb_wait(int count, void **states, double timeout,
                      MPI_Status *status)
{
    (void)timeout;
    for (int i = 0; i < count; i++) {
        nm_nb_t *s = states[i];
        while (!s->completed) {
            int rc = nm_nb_poll(s, status);
            if (rc != MPI_SUCCESS)
                return rc;
            if (!s->completed)
                sched_yield();
        }
    }
    return MPI_SUCCESS;
}

/* The state of a call about to start; NULL without memory (the call then
 * goes to the MPI: the same on every rank only while memory lasts, as
 * for any temporary). */
static nm_nb_t *nm_nb_new(numacoll_team_t *t, MPI_Comm comm)
{
    nm_nb_t *s = calloc(1, sizeof *s);
    if (s) {
        s->team = t;
        s->comm = comm;
    }
    return s;
}

static int nm_nb_span(nm_nb_t *s, const void *user, int count,
                      MPI_Datatype dt, int fill, int drain)
{
    const int i = s->nspan++;
    int rc = nm_span_begin(&s->span[i], user, count, dt, fill, s->comm);
    s->drain[i] = drain;
    /* the user may free the datatype once the call has started (MPI keeps
     * it alive for the request): a temporary unpacked at the end needs a
     * copy of its own */
    if (rc == MPI_SUCCESS && drain && s->span[i].tmp) {
        rc = PMPI_Type_dup(dt, &s->span[i].dt);
        s->dup[i] = rc == MPI_SUCCESS;
    }
    return rc;
}

static int nm_nb_span_end(nm_nb_t *s, int i, int drain)
{
    int rc = nm_span_end(&s->span[i], drain && s->drain[i], s->comm);
    if (s->dup[i])
        PMPI_Type_free(&s->span[i].dt);
    s->dup[i] = 0;
    return rc;
}

static void nm_nb_drop(nm_nb_t *s)
{
    for (int i = 0; i < s->nspan; i++)
        (void)nm_nb_span_end(s, i, 0);
    free(s);
}

/* After the core's start: MPI_SUCCESS with *req the generalized request;
 * st handed back: -1 (the caller runs the MPI's call); else an error. */
static int nm_nb_started(nm_nb_t *s, numacoll_coll_t coll, int st,
                         MPI_Request *req)
{
    if (nm_hands_back(st)) {
        nm_nb_drop(s);
        return -1;
    }
    if (st != NUMACOLL_OK) {
        MPI_Comm comm = s->comm;
        numacoll_team_t *t = s->team;
        nm_nb_drop(s);
        return nm_finish(comm, t, "a nonblocking collective", st);
    }
    int rc = PMPIX_Grequest_start(nm_nb_query, nm_nb_free, nm_nb_cancel,
                                  nm_nb_poll, nm_nb_wait, s, req);
    if (rc != MPI_SUCCESS) {
        /* no request to hand out: finish the call here */
        MPI_Comm comm = s->comm;
        (void)numacoll_wait(&s->nreq);
        nm_nb_drop(s);
        PMPI_Comm_call_errhandler(comm, rc);
        return rc;
    }
    s->req = *req;
    nm_count(coll, 1);
    nm_live_add(s);
    if (!s->nreq) /* done at its start: complete it now */
        return nm_nb_poll(s, MPI_STATUS_IGNORE);
    return MPI_SUCCESS;
}

/* A team for a nonblocking call of coll, or NULL: the call goes to the
 * MPI. */
static numacoll_team_t *nm_nb_team(MPI_Comm comm)
{
    return nm_nb_enabled() ? nm_team(comm) : NULL;
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
    numacoll_team_t *t = nm_nb_team(comm);
    nm_nb_t *s = t && !nm_declines(t, NUMACOLL_COLL_BARRIER, 0)
                     ? nm_nb_new(t, comm) : NULL;
    if (!s)
        return NM_MPI(NUMACOLL_COLL_BARRIER, PMPI_Ibarrier(comm, req));
    int rc = nm_nb_started(s, NUMACOLL_COLL_BARRIER,
                           numacoll_ibarrier(t, &s->nreq), req);
    return rc >= 0 ? rc : NM_MPI(NUMACOLL_COLL_BARRIER,
                                 PMPI_Ibarrier(comm, req));
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root,
               MPI_Comm comm, MPI_Request *req)
{
    numacoll_team_t *t = nm_nb_team(comm);
    size_t bytes = 0;
    nm_nb_t *s = t && root >= 0 && root < numacoll_team_size(t) &&
                         nm_bytes(count, dt, &bytes) == 0 &&
                         !nm_declines(t, NUMACOLL_COLL_BCAST, bytes)
                     ? nm_nb_new(t, comm) : NULL;
    if (!s)
        return NM_MPI(NUMACOLL_COLL_BCAST,
                      PMPI_Ibcast(buf, count, dt, root, comm, req));
    const int me = numacoll_team_rank(t);
    int rc = nm_nb_span(s, buf, count, dt, me == root, me != root);
    if (rc != MPI_SUCCESS) {
        nm_nb_drop(s);
        PMPI_Comm_call_errhandler(comm, rc);
        return rc;
    }
    rc = nm_nb_started(s, NUMACOLL_COLL_BCAST,
                       numacoll_ibcast(t, s->span[0].run, bytes, root,
                                       &s->nreq), req);
    return rc >= 0 ? rc : NM_MPI(NUMACOLL_COLL_BCAST,
                                 PMPI_Ibcast(buf, count, dt, root, comm, req));
}

/* Ireduce (root >= 0) and Iallreduce (root < 0): one body. */
static int nm_ired(const void *sendbuf, void *recvbuf, int count,
                   MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                   MPI_Request *req)
{
    const int all = root < 0;
    const numacoll_coll_t coll =
        all ? NUMACOLL_COLL_ALLREDUCE : NUMACOLL_COLL_REDUCE;
    numacoll_team_t *t = nm_nb_team(comm);
    nm_nb_t *s = t && (all || root < numacoll_team_size(t))
                     ? nm_nb_new(t, comm) : NULL;
    nm_red_t r;
    if (s && (nm_red_plan(count, dt, op, &r, &s->ctx) != 0 ||
              nm_declines(t, coll, (size_t)count * r.elem_size) ||
              (r.user && numacoll_team_max_elem(t, all, (size_t)count *
                                                r.elem_size) < r.elem_size))) {
        free(s);
        s = NULL;
    }
    int rc = -1;
    if (s) {
        const int me = numacoll_team_rank(t);
        const void *sb = sendbuf == MPI_IN_PLACE && (all || me == root)
                             ? NUMACOLL_IN_PLACE : sendbuf;
        void *rb = all || me == root ? recvbuf : NULL;
        const size_t n = (size_t)count;
        int st;
        if (all)
            st = r.user ? numacoll_iallreduce_user(t, sb, rb, n, r.elem_size,
                                                   r.fn, r.ctx, r.commutative,
                                                   &s->nreq)
                        : numacoll_iallreduce(t, sb, rb, n, r.dt, r.op,
                                              &s->nreq);
        else
            st = r.user ? numacoll_ireduce_user(t, sb, rb, n, r.elem_size,
                                                r.fn, r.ctx, r.commutative,
                                                root, &s->nreq)
                        : numacoll_ireduce(t, sb, rb, n, r.dt, r.op, root,
                                           &s->nreq);
        rc = nm_nb_started(s, coll, st, req);
    }
    if (rc >= 0)
        return rc;
    return NM_MPI(coll, all ? PMPI_Iallreduce(sendbuf, recvbuf, count, dt,
                                              op, comm, req)
                            : PMPI_Ireduce(sendbuf, recvbuf, count, dt, op,
                                           root, comm, req));
}

int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count,
                MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                MPI_Request *req)
{
    if (root < 0) /* the MPI reports it */
        return NM_MPI(NUMACOLL_COLL_REDUCE, PMPI_Ireduce(sendbuf, recvbuf,
                                                         count, dt, op, root,
                                                         comm, req));
    return nm_ired(sendbuf, recvbuf, count, dt, op, root, comm, req);
}

int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count,
                   MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                   MPI_Request *req)
{
    return nm_ired(sendbuf, recvbuf, count, dt, op, -1, comm, req);
}

/* The gathers and Alltoall: which one, and its arguments. */
typedef enum { NM_AG, NM_GA, NM_SC, NM_AA } nm_gk_t;

static int nm_igather(nm_gk_t k, const void *sendbuf, int scount,
                      MPI_Datatype stype, void *recvbuf, int rcount,
                      MPI_Datatype rtype, int root, MPI_Comm comm,
                      MPI_Request *req)
{
    static const numacoll_coll_t colls[] = {
        NUMACOLL_COLL_ALLGATHER, NUMACOLL_COLL_GATHER, NUMACOLL_COLL_SCATTER,
        NUMACOLL_COLL_ALLTOALL};
    const numacoll_coll_t coll = colls[k];
    numacoll_team_t *t = nm_nb_team(comm);
    const int p = t ? numacoll_team_size(t) : 0;
    const int me = t ? numacoll_team_rank(t) : -1;
    const int rooted = k == NM_GA || k == NM_SC;
    /* the block as this rank knows it (MPI makes it equal everywhere) */
    size_t block = SIZE_MAX;
    const int by_send = (k == NM_GA && me != root) || (k == NM_SC && me == root);
    if (t && nm_bytes(by_send ? scount : rcount, by_send ? stype : rtype,
                      &block) != 0)
        block = SIZE_MAX;
    const long long ps = (long long)scount * p, pr = (long long)rcount * p;
    nm_nb_t *s = t && block != SIZE_MAX && ps <= INT32_MAX &&
                         pr <= INT32_MAX &&
                         (!rooted || (root >= 0 && root < p)) &&
                         !nm_declines(t, coll, block)
                     ? nm_nb_new(t, comm) : NULL;
    int rc = s ? MPI_SUCCESS : -1;
    const int in_place = k == NM_SC ? me == root && recvbuf == MPI_IN_PLACE
                         : k == NM_GA ? me == root && sendbuf == MPI_IN_PLACE
                                      : sendbuf == MPI_IN_PLACE;
    /* send side: Scatter's at the root, p blocks; Alltoall's p blocks;
     * the others' one block; none where in place (Scatter: the receive
     * side is the one in place) */
    const int has_s = k == NM_SC ? me == root : !in_place;
    const int s_count = k == NM_SC || k == NM_AA ? (int)ps : scount;
    /* receive side: Allgather's and Alltoall's p blocks, Gather's at the
     * root; Scatter's one block unless in place */
    const int has_r = k == NM_SC ? !in_place : k == NM_GA ? me == root : 1;
    const int r_count = k == NM_SC ? rcount : (int)pr;
    const int r_fill = in_place && k != NM_SC;
    if (s && has_s)
        rc = nm_nb_span(s, sendbuf, s_count, stype, 1, 0);
    const int ri = s ? s->nspan : 0;
    if (s && rc == MPI_SUCCESS && has_r)
        rc = nm_nb_span(s, recvbuf, r_count, rtype, r_fill, 1);
    if (s && rc != MPI_SUCCESS) {
        nm_nb_drop(s);
        PMPI_Comm_call_errhandler(comm, rc);
        return rc;
    }
    if (s) {
        const void *sb = in_place && k != NM_SC ? NUMACOLL_IN_PLACE
                         : has_s ? s->span[0].run : NULL;
        void *rb = k == NM_SC && in_place
                       ? (void *)(uintptr_t)NUMACOLL_IN_PLACE
                   : has_r ? s->span[ri].run : NULL;
        int st = k == NM_AG ? numacoll_iallgather(t, sb, rb, block, &s->nreq)
                 : k == NM_GA ? numacoll_igather(t, sb, rb, block, root,
                                                 &s->nreq)
                 : k == NM_SC ? numacoll_iscatter(t, sb, rb, block, root,
                                                  &s->nreq)
                              : numacoll_ialltoall(t, sb, rb, block,
                                                   &s->nreq);
        rc = nm_nb_started(s, coll, st, req);
    }
    if (rc >= 0)
        return rc;
    nm_count(coll, 0);
    switch (k) {
    case NM_AG:
        return PMPI_Iallgather(sendbuf, scount, stype, recvbuf, rcount, rtype,
                               comm, req);
    case NM_GA:
        return PMPI_Igather(sendbuf, scount, stype, recvbuf, rcount, rtype,
                            root, comm, req);
    case NM_SC:
        return PMPI_Iscatter(sendbuf, scount, stype, recvbuf, rcount, rtype,
                             root, comm, req);
    case NM_AA:
        break;
    }
    return PMPI_Ialltoall(sendbuf, scount, stype, recvbuf, rcount, rtype,
                          comm, req);
}

int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                   void *recvbuf, int recvcount, MPI_Datatype recvtype,
                   MPI_Comm comm, MPI_Request *req)
{
    return nm_igather(NM_AG, sendbuf, sendcount, sendtype, recvbuf,
                      recvcount, recvtype, 0, comm, req);
}

int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                void *recvbuf, int recvcount, MPI_Datatype recvtype,
                int root, MPI_Comm comm, MPI_Request *req)
{
    return nm_igather(NM_GA, sendbuf, sendcount, sendtype, recvbuf,
                      recvcount, recvtype, root, comm, req);
}

int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm, MPI_Request *req)
{
    return nm_igather(NM_SC, sendbuf, sendcount, sendtype, recvbuf,
                      recvcount, recvtype, root, comm, req);
}

int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  MPI_Comm comm, MPI_Request *req)
{
    return nm_igather(NM_AA, sendbuf, sendcount, sendtype, recvbuf,
                      recvcount, recvtype, 0, comm, req);
}

#endif /* MPICH_VERSION */
