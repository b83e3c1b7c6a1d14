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
 * A communicator's team is made by its first blocking collective (a start
 * must not wait for the other ranks, who may start calls on other
 * communicators first); until then its nonblocking calls are MPICH's, as
 * are those of a program that asked for MPI_THREAD_MULTIPLE (a poll or a
 * blocking wait would move a team another thread may be using) and those
 * with a user op on a derived datatype (the op is called with the user's
 * handle, which the user may free once the call has started).
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
    numacoll_request_t *nreq;   /* the core's request; NULL once done      */
    nm_comm_t *rec;             /* held: the team outlives MPI_Comm_free   */
    numacoll_team_t *team;
    MPI_Request req;            /* the generalized request                 */
    nm_span_t span[2];          /* the buffers; drain[i]: unpack at the end */
    int nspan, drain[2];
    int dup[2];                 /* span[i].dt is our copy: free it         */
    nm_red_ctx_t ctx;           /* a user op's context                     */
    int err;                    /* the MPI result, for query               */
    int completed;              /* done: set under nm_live_lock            */
    int live;                   /* on the list                             */
} nm_nb_t;

static pthread_mutex_t nm_live_lock = PTHREAD_MUTEX_INITIALIZER;
static nm_nb_t *nm_live;

/* The nonblocking calls' communicator record, or NULL: the call goes to
 * MPICH (NUMACOLL_MPI_NB=0, MPI_THREAD_MULTIPLE, no team yet). */
static nm_comm_t *nm_nb_comm(MPI_Comm comm)
{
    static int off = -1;
    if (off < 0) {
        const char *v = getenv("NUMACOLL_MPI_NB");
        int level = MPI_THREAD_SINGLE;
        PMPI_Query_thread(&level);
        off = (v && strcmp(v, "0") == 0) || level == MPI_THREAD_MULTIPLE;
    }
    return off ? NULL : nm_comm_served(comm);
}

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

static void nm_nb_set_hook(void)
{
    numacoll_set_wait_hook(nm_nb_hook, NULL);
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
    s->live = 1;
    pthread_mutex_unlock(&nm_live_lock);
}

/* Under nm_live_lock. */
static void nm_live_remove(nm_nb_t *s)
{
    if (!s->live)
        return;
    if (s->prev)
        s->prev->next = s->next;
    else
        nm_live = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->prev = s->next = NULL;
    s->live = 0;
}

static int nm_nb_span(nm_nb_t *s, const void *user, int count,
                      MPI_Datatype dt, int fill, int drain)
{
    const int i = s->nspan++;
    /* MPI_COMM_SELF: the call's communicator may be freed before the
     * request completes; the packed form is the same (one node) */
    int rc = nm_span_begin(&s->span[i], user, count, dt, fill,
                           MPI_COMM_SELF);
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

/* Close the spans (drain: unpack the receive side); the first error. */
static int nm_nb_spans_end(nm_nb_t *s, int drain)
{
    int rc = MPI_SUCCESS;
    for (int i = 0; i < s->nspan; i++) {
        int r = nm_span_end(&s->span[i], drain && s->drain[i], MPI_COMM_SELF);
        if (s->dup[i])
            PMPI_Type_free(&s->span[i].dt);
        s->dup[i] = 0;
        if (rc == MPI_SUCCESS)
            rc = r;
    }
    s->nspan = 0;
    return rc;
}

/* Everything a state holds, and the state. */
static void nm_nb_drop(nm_nb_t *s)
{
    if (s->nreq)
        numacoll_request_free(&s->nreq); /* detached: the core ends it */
    (void)nm_nb_spans_end(s, 0);
    nm_comm_release(s->rec);
    free(s);
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
    /* MPI forbids freeing an active collective request; one freed anyway
     * leaves the list here, its core request detached */
    pthread_mutex_lock(&nm_live_lock);
    nm_live_remove(s);
    pthread_mutex_unlock(&nm_live_lock);
    nm_nb_drop(s);
    return MPI_SUCCESS;
}

static int nm_nb_cancel(void *state, int complete)
{
    (void)state, (void)complete;
    return MPI_SUCCESS; /* collectives cannot be cancelled */
}

/* Move every request in flight; complete this one if it is done. */
static int nm_nb_poll(void *state, MPI_Status *status)
{
    (void)status;
    nm_nb_t *s = state;
    pthread_mutex_lock(&nm_live_lock);
    if (s->completed) {
        pthread_mutex_unlock(&nm_live_lock);
        return MPI_SUCCESS;
    }
    for (nm_nb_t *o = nm_live; o; o = o->next)
        if (o != s && o->nreq)
            (void)numacoll_progress(o->team);
    int done = 1, st = NUMACOLL_OK;
    /* a request the core finished at its start has no nreq left */
    if (s->nreq)
        st = numacoll_test(&s->nreq, &done);
    if (done) {
        nm_live_remove(s);
        s->completed = 1;
    }
    pthread_mutex_unlock(&nm_live_lock);
    if (!done)
        return MPI_SUCCESS;
    int rc = nm_nb_spans_end(s, st == NUMACOLL_OK);
    /* the result goes out through query, to the handler of the call that
     * tests or waits (the communicator may be gone by now) */
    s->err = st != NUMACOLL_OK
                 ? nm_error(s->team, "a nonblocking collective", st)
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
        for (;;) {
            int rc = nm_nb_poll(s, status);
            if (rc != MPI_SUCCESS)
                return rc;
            pthread_mutex_lock(&nm_live_lock);
            const int done = s->completed;
            pthread_mutex_unlock(&nm_live_lock);
            if (done)
                break;
            sched_yield();
        }
    }
    return MPI_SUCCESS;
}

/* A state for a call served on rec; NULL without memory. */
static nm_nb_t *nm_nb_new(nm_comm_t *rec)
{
    nm_nb_t *s = calloc(1, sizeof *s);
    if (s) {
        nm_comm_hold(rec);
        s->rec = rec;
        s->team = nm_comm_team(rec);
    }
    return s;
}

/* A failure of this rank alone once the call is decided (no memory): the
 * other ranks are in the call already, so it is the call's error. */
static int nm_nb_fail(nm_nb_t *s, MPI_Comm comm, int rc)
{
    if (s)
        nm_nb_drop(s);
    return nm_local_fail(comm, rc);
}

/* After the core's start: MPI_SUCCESS with *req the generalized request;
 * -1 when the core handed the call back (the caller runs MPICH's); else
 * an error. */
static int nm_nb_started(nm_nb_t *s, MPI_Comm comm, numacoll_coll_t coll,
                         int st, MPI_Request *req)
{
    if (nm_hands_back(st)) {
        nm_nb_drop(s);
        return -1;
    }
    if (st != NUMACOLL_OK) {
        numacoll_team_t *t = s->team;
        int rc = nm_finish(comm, t, "a nonblocking collective", st);
        nm_nb_drop(s);
        return rc;
    }
    int rc = PMPIX_Grequest_start(nm_nb_query, nm_nb_free, nm_nb_cancel,
                                  nm_nb_poll, nm_nb_wait, s, req);
    if (rc != MPI_SUCCESS) {
        /* no request to hand out: finish the call here */
        (void)numacoll_wait(&s->nreq);
        return nm_nb_fail(s, comm, rc);
    }
    s->req = *req;
    nm_count(coll, 1);
    nm_live_add(s);
    if (!s->nreq) /* done at its start: complete it now */
        return nm_nb_poll(s, MPI_STATUS_IGNORE);
    return MPI_SUCCESS;
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
    nm_comm_t *rec = nm_nb_comm(comm);
    if (!rec || nm_declines(nm_comm_team(rec), NUMACOLL_COLL_BARRIER, 0))
        return NM_MPI(NUMACOLL_COLL_BARRIER, PMPI_Ibarrier(comm, req));
    nm_nb_t *s = nm_nb_new(rec);
    if (!s)
        return nm_nb_fail(s, comm, MPI_ERR_NO_MEM);
    int rc = nm_nb_started(s, comm, NUMACOLL_COLL_BARRIER,
                           numacoll_ibarrier(s->team, &s->nreq), req);
    return rc >= 0 ? rc : NM_MPI(NUMACOLL_COLL_BARRIER,
                                 PMPI_Ibarrier(comm, req));
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root,
               MPI_Comm comm, MPI_Request *req)
{
    nm_comm_t *rec = nm_nb_comm(comm);
    numacoll_team_t *t = rec ? nm_comm_team(rec) : NULL;
    size_t bytes = 0;
    if (!t || root < 0 || root >= numacoll_team_size(t) ||
        nm_bytes(count, dt, &bytes) != 0 || bytes > INT32_MAX ||
        nm_declines(t, NUMACOLL_COLL_BCAST, bytes))
        return NM_MPI(NUMACOLL_COLL_BCAST,
                      PMPI_Ibcast(buf, count, dt, root, comm, req));
    nm_nb_t *s = nm_nb_new(rec);
    if (!s)
        return nm_nb_fail(s, comm, MPI_ERR_NO_MEM);
    const int me = numacoll_team_rank(t);
    int rc = nm_nb_span(s, buf, count, dt, me == root, me != root);
    if (rc != MPI_SUCCESS)
        return nm_nb_fail(s, comm, rc);
    rc = nm_nb_started(s, comm, NUMACOLL_COLL_BCAST,
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
    nm_comm_t *rec = nm_nb_comm(comm);
    numacoll_team_t *t = rec ? nm_comm_team(rec) : NULL;
    nm_red_t r;
    nm_red_ctx_t ctx;
    const int serve =
        t && (all || root < numacoll_team_size(t)) &&
        nm_red_plan(count, dt, op, &r, &ctx) == 0 &&
        (!r.user || nm_type_named(dt)) &&
        !nm_declines(t, coll, (size_t)count * r.elem_size) &&
        (!r.user || numacoll_team_max_elem(t, all, (size_t)count *
                                           r.elem_size) >= r.elem_size);
    nm_nb_t *s = serve ? nm_nb_new(rec) : NULL;
    if (serve && !s)
        return nm_nb_fail(s, comm, MPI_ERR_NO_MEM);
    int rc = -1;
    if (s) {
        s->ctx = ctx;
        r.ctx = &s->ctx;
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
        rc = nm_nb_started(s, comm, coll, st, req);
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
    nm_comm_t *rec = nm_nb_comm(comm);
    numacoll_team_t *t = rec ? nm_comm_team(rec) : NULL;
    const int p = t ? numacoll_team_size(t) : 1;
    const int me = t ? numacoll_team_rank(t) : -1;
    const int rooted = k == NM_GA || k == NM_SC;
    /* the block as this rank knows it (MPI makes it equal everywhere):
     * the decision rests on it alone */
    size_t block = SIZE_MAX;
    const int by_send = (k == NM_GA && me != root) || (k == NM_SC && me == root);
    if (t && nm_bytes(by_send ? scount : rcount, by_send ? stype : rtype,
                      &block) != 0)
        block = SIZE_MAX;
    const int serve = t && block <= INT32_MAX / (size_t)p &&
                      (!rooted || (root >= 0 && root < p)) &&
                      !nm_declines(t, coll, block);
    nm_nb_t *s = serve ? nm_nb_new(rec) : NULL;
    if (serve && !s)
        return nm_nb_fail(s, comm, MPI_ERR_NO_MEM);
    const int in_place = k == NM_SC ? me == root && recvbuf == MPI_IN_PLACE
                         : k == NM_GA ? me == root && sendbuf == MPI_IN_PLACE
                                      : sendbuf == MPI_IN_PLACE;
    /* send side: Scatter's at the root, p blocks; Alltoall's p blocks;
     * the others' one block; none where in place (Scatter: the receive
     * side is the one in place). Receive side: Allgather's and
     * Alltoall's p blocks, Gather's at the root; Scatter's one block
     * unless in place. */
    const int has_s = k == NM_SC ? me == root : !in_place;
    const int s_blocks = k == NM_SC || k == NM_AA ? p : 1;
    const int has_r = k == NM_SC ? !in_place : k == NM_GA ? me == root : 1;
    const int r_blocks = k == NM_SC ? 1 : p;
    int rc = -1;
    if (s) {
        /* counts of p blocks fit an int: p x block bytes do */
        rc = MPI_SUCCESS;
        if (has_s)
            rc = nm_nb_span(s, sendbuf, block ? scount * s_blocks : 0, stype,
                            1, 0);
        const int ri = s->nspan;
        if (rc == MPI_SUCCESS && has_r)
            rc = nm_nb_span(s, recvbuf, block ? rcount * r_blocks : 0, rtype,
                            in_place && k != NM_SC, 1);
        if (rc == MPI_SUCCESS &&
            ((has_s && s->span[0].bytes != block * (size_t)s_blocks) ||
             (has_r && s->span[ri].bytes != block * (size_t)r_blocks)))
            rc = MPI_ERR_TRUNCATE;
        if (rc != MPI_SUCCESS)
            return nm_nb_fail(s, comm, rc);
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
        rc = nm_nb_started(s, comm, coll, st, req);
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
