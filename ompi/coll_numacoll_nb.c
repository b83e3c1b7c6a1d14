/*
 * Nonblocking and persistent collectives of the component: MPI_Ibcast,
 * MPI_Ibarrier, MPI_Ireduce, MPI_Iallreduce, and the persistent Bcast,
 * Barrier, Reduce and Allreduce (Open MPI 4.1 names them MPIX_Bcast_init
 * etc., from its pcollreq extension in <mpi-ext.h>; 5.0 has MPI-4's
 * MPI_Bcast_init etc.), all started with MPI_Start / MPI_Startall.
 *
 * Each call the core takes becomes an Open MPI request (nc_req_t, a
 * subclass of ompi_request_t) that owns one core request
 * (numacoll_request_t) and everything the call needs until it completes:
 * the convertor of a non-contiguous Bcast, the context of a user op, and a
 * reference on the communicator, the datatype and the op (the user may free
 * them while the call runs). Whether the core takes a call is decided by
 * the same plans as the blocking calls (nc_bc_plan, nc_red_plan,
 * nc_red_takes in coll_numacoll_module.c), so every rank decides alike and
 * a declined call goes to the previous component's nonblocking or
 * persistent function, as a blocking one goes to its blocking one.
 *
 * Progress. The core moves a team's requests only when asked
 * (numacoll_progress, numacoll_test). Open MPI's MPI_Test and MPI_Wait
 * (and their any/all/some forms) call opal_progress(), so the component
 * registers one progress callback, the first time a request is started,
 * and keeps it until the component closes. With no request in flight the
 * callback is one relaxed load. Otherwise it walks the modules that have
 * requests in flight, progresses each team and completes, oldest first,
 * the requests the core finished (the core completes a team's requests in
 * the order they were started, so the first unfinished one ends the walk
 * for that team). A blocking collective made while any request is in
 * flight runs through a request too and waits in opal_progress (see
 * nc_nb_blocking): the core's own wait would spin on this team alone,
 * while another team's request, or Open MPI's point-to-point traffic, may
 * need this rank to move before the other ranks can reach the blocking
 * call.
 *
 * Threads. The callback may run in any thread that calls opal_progress,
 * while another thread starts a request. A module's queue, and every core
 * call on its team while the queue is not empty, is guarded by the
 * module's nb_lock; the list of modules with requests in flight by
 * nc_list_lock (taken after a module's lock, never before it: the
 * callback only tries the module locks). Requests are completed after
 * both locks are released, so a thread woken by the completion never
 * finds its team still in the callback's hands.
 *
 * MPI forbids MPI_Request_free on a nonblocking collective request and on
 * an active persistent one: req_free refuses (MPI_ERR_REQUEST) until the
 * request has completed. MPI_Cancel is refused likewise.
 */
#include "coll_numacoll.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/request/request.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"

typedef struct mca_coll_numacoll_request_t mca_coll_numacoll_request_t;
typedef mca_coll_numacoll_request_t nc_req_t;
/*
 * Open MPI's bindings of the nonblocking and persistent collectives take
 * every request a coll component returns for its own base class,
 * ompi_coll_base_nbc_request_t (coll_base_util.h), and store in the fields
 * after the ompi_request_t a callback, its data and references on derived
 * datatypes and user ops (ompi_coll_base_retain_datatypes, _retain_op).
 * That header cannot be included from outside Open MPI's tree (through
 * ompi/op/op.h it needs Fortran glue headers), so the request derives from
 * that class by name and reserves room for those fields;
 * nc_nb_request_fits() compares the room with the class size the library
 * itself reports, and the component installs no nonblocking function
 * where it would not fit.
 */
extern opal_class_t ompi_coll_base_nbc_request_t_class;
/* Pointers after the ompi_request_t: 4.1's class has 4, 5.0's 13 (it adds
 * release arrays); twice that leaves room for a later version. */
#define NC_NBC_ROOM 32

struct mca_coll_numacoll_request_t {
    struct {
        ompi_request_t req;
        void *reserved[NC_NBC_ROOM];    /* Open MPI's, see above */
    } super;
    nc_module_t *m;
    nc_kind_t kind;
    bool persistent;
    const char *name;           /* the MPI call, for messages             */
    numacoll_request_t *core;   /* NULL: nothing for the core (count 0),
                                   or a nonblocking one that completed    */
    int status;                 /* the core's outcome, when completed     */
    /* counts this call's successful completions (MPI_T); -1: none */
    int counter;
    /* the call's arguments, kept for restarts and log lines; comm, dtype
     * and op hold a reference until the request is freed */
    ompi_communicator_t *comm;
    ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    void *buf;
    int count, root;
    nc_bc_plan_t bc;            /* Bcast */
    nc_dt_ctx_t dt;             /* Bcast through the convertor            */
    bool dt_live;               /* dt is constructed                      */
    nc_red_plan_t red;          /* Reduce, Allreduce                      */
    /* a packed plan's (nc_red_stage): the temporary, the user's send
     * buffer packed into it at every start, the core's pointers */
    const void *sbuf;
    char *tmp;
    const void *tsend;
    void *trecv;
    nc_user_ctx_t user;         /* a user op's context                    */
    nc_ga_t *ga;                /* NC_GATHERS: the planned call, owned    */
    struct mca_coll_numacoll_request_t *next;   /* the module's queue     */
};

static OBJ_CLASS_INSTANCE(mca_coll_numacoll_request_t,
                          ompi_coll_base_nbc_request_t, NULL, NULL);

/* Whether Open MPI's request class fits in the room reserved for it. */
static bool nc_nb_request_fits(void)
{
    return ompi_coll_base_nbc_request_t_class.cls_sizeof <=
           offsetof(nc_req_t, m);
}

/* ---- locks and the list of busy modules -------------------------------- */

/* A test-and-set lock. Held only around core calls that never wait
 * (starts, numacoll_progress, numacoll_test) and list updates. acquire
 * pairs with release: the queue and the team's request state written under
 * the lock are seen by the next holder. */
static bool nc_trylock(_Atomic bool *l)
{
    return !atomic_exchange_explicit(l, true, memory_order_acquire);
}

static void nc_lock(_Atomic bool *l)
{
    while (!nc_trylock(l))
        while (atomic_load_explicit(l, memory_order_relaxed))
            ;
}

static void nc_unlock(_Atomic bool *l)
{
    atomic_store_explicit(l, false, memory_order_release);
}

static _Atomic bool nc_list_lock;
static nc_module_t *nc_list;                /* modules with requests queued */
/* How many modules nc_list holds. Read without the lock by the callback and
 * by blocking calls as a hint: a module is listed before its first request
 * is started, and unlisted only when the core has finished all of them. */
static _Atomic unsigned nc_nlisted;
static bool nc_registered;                  /* under nc_list_lock */

static int nc_progress(void);

bool nc_nb_inflight(void)
{
    return atomic_load_explicit(&nc_nlisted, memory_order_relaxed) != 0;
}

/* Append r to its module's queue; the module's lock is held. */
static void nc_enqueue(nc_req_t *r)
{
    nc_module_t *m = r->m;
    r->next = NULL;
    if (m->nb_tail)
        m->nb_tail->next = r;
    else
        m->nb_head = r;
    m->nb_tail = r;
    if (m->nb_listed)
        return;
    nc_lock(&nc_list_lock);
    if (!nc_registered &&
        opal_progress_register(nc_progress) == OPAL_SUCCESS)
        nc_registered = true;
    m->nb_next = nc_list;
    nc_list = m;
    m->nb_listed = true;
    atomic_fetch_add_explicit(&nc_nlisted, 1u, memory_order_relaxed);
    nc_unlock(&nc_list_lock);
}

void nc_nb_close(void)
{
    nc_lock(&nc_list_lock);
    if (nc_registered)
        (void)opal_progress_unregister(nc_progress);
    nc_registered = false;
    nc_unlock(&nc_list_lock);
}

/* ---- completion -------------------------------------------------------- */

/* Whether r's rank receives a reduction's result. */
static bool nc_req_receives(const nc_req_t *r)
{
    return r->kind == NC_ALLREDUCE || ompi_comm_rank(r->comm) == r->root;
}

/* The core finished r (status r->status): release what the call held,
 * say it, count it, and complete the MPI request. No lock is held. */
static void nc_complete(nc_req_t *r)
{
    int st = r->status;
    if (r->dt_live) {
        nc_dt_end(&r->dt);
        r->dt_live = false;
    }
    if (st == NUMACOLL_OK && r->tmp && nc_req_receives(r))
        st = nc_red_unstage(r->count, r->dtype, r->buf, r->tmp);
    if (r->ga) {  /* unpacks, and says what it did */
        char what[40];
        snprintf(what, sizeof what, "%s%s", r->persistent ? "start of " : "",
                 r->name);
        st = nc_ga_done(r->ga, st, what);
    } else if (nc_call_verbose()) {  /* formatting costs as much as a small call */
        char what[32];
        snprintf(what, sizeof what, "%s%s", r->persistent ? "start of " : "",
                 r->name);
        if (r->kind == NC_BCAST)
            nc_bc_log(r->m, what, r->root, &r->bc, st);
        else if (r->kind == NC_BARRIER)
            opal_output_verbose(NC_CALL_VERBOSITY, NC_OUT,
                                "coll:numacoll:%s: %s (cid %u): %s", what,
                                nc_comm_name(r->comm), nc_comm_cid(r->comm),
                                numacoll_strerror(st));
        else
            nc_red_log(r->comm, what, r->kind == NC_REDUCE ? r->root : -1,
                       r->count, r->dtype, &r->red, st);
    }
    if (st == NUMACOLL_OK && r->counter >= 0)
        nc_count(r->counter);
    r->super.req.req_status.MPI_ERROR = nc_finish(r->m, r->name, st);
    ompi_request_complete(&r->super.req, true);
}

/* Done without the core: a Reduce of no elements. */
static void nc_complete_now(nc_req_t *r)
{
    r->status = NUMACOLL_OK;
    nc_complete(r);
}

static int nc_progress(void)
{
    if (atomic_load_explicit(&nc_nlisted, memory_order_relaxed) == 0 ||
        !nc_trylock(&nc_list_lock))
        return 0;
    nc_req_t *done = NULL, **done_tail = &done;
    for (nc_module_t **pm = &nc_list; *pm;) {
        nc_module_t *m = *pm;
        if (!nc_trylock(&m->nb_lock)) {   /* a start in another thread */
            pm = &m->nb_next;
            continue;
        }
        (void)numacoll_progress(m->team);
        nc_req_t *r;
        while ((r = m->nb_head)) {
            int fin = 0;
            r->status = numacoll_test(&r->core, &fin);
            if (!fin)
                break;
            m->nb_head = r->next;
            r->next = NULL;
            *done_tail = r;
            done_tail = &r->next;
        }
        if (m->nb_head) {
            pm = &m->nb_next;
        } else {
            m->nb_tail = NULL;
            *pm = m->nb_next;
            m->nb_next = NULL;
            m->nb_listed = false;
            atomic_fetch_sub_explicit(&nc_nlisted, 1u, memory_order_relaxed);
        }
        nc_unlock(&m->nb_lock);
    }
    nc_unlock(&nc_list_lock);
    int events = 0;
    while (done) {
        nc_req_t *r = done;
        done = r->next;
        nc_complete(r);
        events++;
    }
    return events;
}

/* ---- the request object ------------------------------------------------ */

static int nc_req_free(ompi_request_t **rp)
{
    nc_req_t *r = (nc_req_t *)*rp;
    /* In flight: MPI forbids freeing it, and the core still writes to it. */
    if (!REQUEST_COMPLETE(&r->super.req))
        return MPI_ERR_REQUEST;
    if (r->core) {  /* an inactive persistent request */
        nc_lock(&r->m->nb_lock);
        (void)numacoll_request_free(&r->core);
        nc_unlock(&r->m->nb_lock);
    }
    if (r->dt_live)
        nc_dt_end(&r->dt);
    if (r->ga)
        nc_ga_free(r->ga);
    free(r->tmp);
    if (r->dtype)
        OBJ_RELEASE(r->dtype);
    if (r->op)
        OBJ_RELEASE(r->op);
    ompi_communicator_t *comm = r->comm;
    OMPI_REQUEST_FINI(&r->super.req);
    OBJ_RELEASE(r);
    *rp = MPI_REQUEST_NULL;
    /* Last: the communicator may go now, and the module and team with it. */
    OBJ_RELEASE(comm);
    return MPI_SUCCESS;
}

static int nc_req_cancel(ompi_request_t *req, int complete)
{
    (void)req;
    (void)complete;
    return MPI_ERR_REQUEST;  /* a collective cannot be cancelled */
}

/* Ask the core for r's request: nonblocking, start it; persistent, make
 * it (inactive). sbuf: Reduce/Allreduce's send buffer. */
static int nc_req_pack(nc_req_t *r);

static int nc_core_begin(nc_req_t *r, const void *sbuf)
{
    numacoll_team_t *t = r->m->team;
    const bool pers = r->persistent;
    const int root = r->root;
    numacoll_request_t **q = &r->core;
    switch (r->kind) {
    case NC_BCAST:
        if (r->bc.nbytes == 0 || r->bc.contig)
            return pers ? numacoll_bcast_init(t, r->bc.ptr, r->bc.nbytes,
                                              root, q)
                        : numacoll_ibcast(t, r->bc.ptr, r->bc.nbytes, root, q);
        return pers ? numacoll_bcast_packed_init(t, r->bc.nbytes, root,
                                                 nc_pack, nc_unpack, &r->dt,
                                                 q)
                    : numacoll_ibcast_packed(t, r->bc.nbytes, root, nc_pack,
                                             nc_unpack, &r->dt, q);
    case NC_BARRIER:
        return pers ? numacoll_barrier_init(t, q) : numacoll_ibarrier(t, q);
    case NC_GATHERS:
        return nc_ga_core(r->ga, t, pers, q);
    case NC_REDUCE:
    case NC_ALLREDUCE:
        break;
    }
    const void *send;
    void *recv;
    const bool all = r->kind == NC_ALLREDUCE;
    const size_t n = (size_t)r->count * (r->red.kind == NC_RED_PREDEF
                                             ? r->red.mult : 1);
    if (r->red.kind == NC_RED_PREDEF && r->red.packed) {
        int st = r->tmp ? NUMACOLL_OK : nc_req_pack(r);  /* persistent */
        if (st != NUMACOLL_OK)
            return st;
        send = r->tsend;
        recv = r->trecv;
    } else {
        nc_red_bufs(r->m, &r->red, sbuf, r->buf, all ? -1 : root, &send,
                    &recv);
    }
    if (r->red.kind == NC_RED_PREDEF) {
        const numacoll_dtype_t dt = r->red.dt;
        const numacoll_op_t op = r->red.op;
        if (all)
            return pers ? numacoll_allreduce_init(t, send, recv, n, dt, op, q)
                        : numacoll_iallreduce(t, send, recv, n, dt, op, q);
        return pers ? numacoll_reduce_init(t, send, recv, n, dt, op, root, q)
                    : numacoll_ireduce(t, send, recv, n, dt, op, root, q);
    }
    const size_t es = r->red.elem_size;
    const int commute = nc_op_commutes(r->op);
    if (all)
        return pers ? numacoll_allreduce_user_init(t, send, recv, n, es,
                                                   nc_user_op, &r->user,
                                                   commute, q)
                    : numacoll_iallreduce_user(t, send, recv, n, es,
                                               nc_user_op, &r->user, commute,
                                               q);
    return pers ? numacoll_reduce_user_init(t, send, recv, n, es, nc_user_op,
                                            &r->user, commute, root, q)
                : numacoll_ireduce_user(t, send, recv, n, es, nc_user_op,
                                        &r->user, commute, root, q);
}

/* A packed plan's contribution into the temporary (made on first use). */
static int nc_req_pack(nc_req_t *r)
{
    if (!r->tmp) {
        r->tmp = nc_red_stage(r->count, r->dtype, r->sbuf, r->buf,
                              nc_req_receives(r), &r->tsend, &r->trecv);
        return r->tmp ? NUMACOLL_OK : NUMACOLL_ERR_NOMEM;
    }
    return nc_red_pack(r->count, r->dtype, r->sbuf, r->buf, r->tmp);
}

/* A non-contiguous Bcast's convertor, fresh for every run of the call;
 * a gather's derived send types packed; a packed reduction's
 * contribution. */
static int nc_req_dt_begin(nc_req_t *r)
{
    if (r->ga)
        return nc_ga_prepare(r->ga);
    if ((r->kind == NC_REDUCE || r->kind == NC_ALLREDUCE) &&
        r->red.kind == NC_RED_PREDEF && r->red.packed)
        return nc_req_pack(r);
    if (r->kind != NC_BCAST || r->bc.nbytes == 0 || r->bc.contig)
        return NUMACOLL_OK;
    r->dt_live = true;
    return nc_dt_begin(&r->dt, ompi_comm_rank(r->comm) == r->root, r->buf,
                       r->count, r->dtype);
}

static int nc_req_start(size_t n, ompi_request_t **reqs)
{
    for (size_t i = 0; i < n; i++) {
        nc_req_t *r = (nc_req_t *)reqs[i];
        if (r->super.req.req_state == OMPI_REQUEST_ACTIVE)
            return MPI_ERR_REQUEST;
        r->super.req.req_state = OMPI_REQUEST_ACTIVE;
        r->super.req.req_complete = REQUEST_PENDING;
        r->super.req.req_status.MPI_ERROR = MPI_SUCCESS;
        if (!r->core) {
            nc_complete_now(r);
            continue;
        }
        int st = nc_req_dt_begin(r);
        if (st == NUMACOLL_OK) {
            nc_lock(&r->m->nb_lock);
            st = numacoll_start(r->core);
            if (st == NUMACOLL_OK)
                nc_enqueue(r);
            nc_unlock(&r->m->nb_lock);
        }
        if (st != NUMACOLL_OK) {
            r->status = st;
            nc_complete(r);
        }
    }
    return OMPI_SUCCESS;
}

static nc_req_t *nc_req_new(nc_module_t *m, nc_kind_t kind, bool persistent,
                            const char *name,
                            int counter, void *buf,
                            int count, ompi_datatype_t *dtype,
                            struct ompi_op_t *op, int root);
static int nc_req_launch(nc_req_t *r, bool nothing, const void *sbuf,
                         ompi_request_t **out);

/*
 * A request for a call, or NC_DECLINED when the core does not take it
 * (the caller hands it to the previous component), NC_RULE_DECLINED when
 * a tuning rule declines it (the same, counted apart), or an MPI error class
 * when the core refused its arguments (no request then). Nonblocking: the
 * call is started; persistent: made inactive, for MPI_Start.
 */
static int nc_req_make(nc_module_t *m, nc_kind_t kind, bool persistent,
                       const char *name, int counter,
                       const void *sbuf, void *buf, int count,
                       ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                       ompi_request_t **out)
{
    nc_bc_plan_t bc = {0};
    nc_red_plan_t red = {0};
    bool nothing = false;
    if (kind == NC_BCAST || kind == NC_BARRIER) {
        if (!nc_ready(m))
            return NC_DECLINED;
        if (m->decline_mask) {
            size_t ts = 0;
            if (kind == NC_BCAST)
                ompi_datatype_type_size(dtype, &ts);
            if (nc_rule_declines(m, kind == NC_BCAST ? NUMACOLL_COLL_BCAST
                                                     : NUMACOLL_COLL_BARRIER,
                                 (size_t)count * ts))
                return NC_RULE_DECLINED;
        }
        if (kind == NC_BCAST)
            bc = nc_bc_plan(buf, count, dtype);
        if (bc.declines)
            return NC_DECLINED;
    } else if (count == 0) {
        /* Nothing to combine, and, as for the blocking calls, nothing
         * collective: some ranks' count-0 calls may never come here. */
        nothing = true;
    } else {
        red = nc_red_plan(count, dtype, op);
        if (!nc_red_takes(m, &red, count, kind == NC_REDUCE ? root : -1))
            return NC_DECLINED;
        if (nc_red_rule_declines(m, &red, (size_t)count, dtype,
                                 kind == NC_REDUCE ? root : -1))
            return NC_RULE_DECLINED;
    }

    nc_req_t *r = nc_req_new(m, kind, persistent, name,
                             nothing ? -1 : counter, /* as the blocking calls */
                             buf, count, dtype, op, root);
    if (!r)
        return MPI_ERR_NO_MEM;
    r->bc = bc;
    r->red = red;
    r->sbuf = sbuf;
    return nc_req_launch(r, nothing, sbuf, out);
}

/* A request of m's communicator for a call, not yet started. */
static nc_req_t *nc_req_new(nc_module_t *m, nc_kind_t kind, bool persistent,
                            const char *name,
                            int counter, void *buf,
                            int count, ompi_datatype_t *dtype,
                            struct ompi_op_t *op, int root)
{
    nc_req_t *r = OBJ_NEW(mca_coll_numacoll_request_t);
    if (!r)
        return NULL;
    OMPI_REQUEST_INIT(&r->super.req, persistent);
    r->super.req.req_type = OMPI_REQUEST_COLL;
    r->super.req.req_state = persistent ? OMPI_REQUEST_INACTIVE
                                    : OMPI_REQUEST_ACTIVE;
    r->super.req.req_status.MPI_ERROR = MPI_SUCCESS;
    r->super.req.req_status._cancelled = 0;
    r->super.req.req_status._ucount = 0;
    r->super.req.req_mpi_object.comm = m->comm;
    r->super.req.req_free = nc_req_free;
    r->super.req.req_cancel = nc_req_cancel;
    r->super.req.req_start = persistent ? nc_req_start : NULL;
    r->m = m;
    r->kind = kind;
    r->persistent = persistent;
    r->name = name;
    r->core = NULL;
    r->counter = counter;
    r->comm = m->comm;
    OBJ_RETAIN(r->comm);
    r->dtype = dtype;
    if (dtype)
        OBJ_RETAIN(dtype);
    r->op = op;
    if (op)
        OBJ_RETAIN(op);
    r->buf = buf;
    r->count = count;
    r->root = root;
    r->bc = (nc_bc_plan_t){0};
    r->dt_live = false;
    r->red = (nc_red_plan_t){0};
    r->sbuf = NULL;
    r->tmp = NULL;
    r->user = (nc_user_ctx_t){op, dtype, &m->super};
    r->ga = NULL;
    r->next = NULL;
    return r;
}

/* Hand r to the core: nonblocking, started; persistent, made inactive.
 * nothing: no core request (r completes at once, or at each start). On
 * failure r is freed and *out is MPI_REQUEST_NULL. */
static int nc_req_launch(nc_req_t *r, bool nothing, const void *sbuf,
                         ompi_request_t **out)
{
    nc_module_t *m = r->m;
    const bool persistent = r->persistent;
    *out = &r->super.req;
    if (nothing) {
        if (!persistent)
            nc_complete_now(r);
        return MPI_SUCCESS;
    }

    int st = persistent ? NUMACOLL_OK : nc_req_dt_begin(r);
    if (st == NUMACOLL_OK) {
        nc_lock(&m->nb_lock);
        st = nc_core_begin(r, sbuf);
        if (st == NUMACOLL_OK && !persistent)
            nc_enqueue(r);
        nc_unlock(&m->nb_lock);
    }
    if (st == NUMACOLL_OK)
        return MPI_SUCCESS;
    /* UNSUPPORTED is decided from the arguments and the team's rules
     * before any shared memory, alike on every rank. */
    int rc = nc_hands_back(st) ? NC_DECLINED
                                            : nc_finish(m, r->name, st);
    r->super.req.req_complete = REQUEST_COMPLETED;
    (void)nc_req_free(out);
    *out = MPI_REQUEST_NULL;
    return rc;
}

/* A blocking call's request: wait in opal_progress, free, its status. */
static int nc_req_wait_free(ompi_request_t *req)
{
    ompi_request_wait_completion(req);
    int rc = req->req_status.MPI_ERROR;
    (void)nc_req_free(&req);
    return rc;
}

int nc_nb_blocking(nc_module_t *m, nc_kind_t kind, const void *sbuf, void *buf,
                   int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                   int root)
{
    static const char *const names[] = {
        [NC_BCAST] = "MPI_Bcast", [NC_BARRIER] = "MPI_Barrier",
        [NC_REDUCE] = "MPI_Reduce", [NC_ALLREDUCE] = "MPI_Allreduce"};
    const int counters[] = {
        [NC_BCAST] = NC_CNT_BCAST,
        [NC_BARRIER] = NC_CNT_BARRIER,
        [NC_REDUCE] = NC_CNT_REDUCE,
        [NC_ALLREDUCE] = NC_CNT_ALLREDUCE};
    ompi_request_t *req = MPI_REQUEST_NULL;
    int rc = nc_req_make(m, kind, false, names[kind], counters[kind], sbuf,
                         buf, count, dtype, op, root, &req);
    return rc == MPI_SUCCESS ? nc_req_wait_free(req) : rc;
}

int nc_nb_ga(nc_module_t *m, bool persistent, bool nothing, const char *name,
             int counter, nc_ga_t *g,
             ompi_request_t **out)
{
    nc_req_t *r = nc_req_new(m, NC_GATHERS, persistent, name,
                             nothing ? -1 : counter, NULL, 0, NULL, NULL,
                             -1);
    if (!r) {
        nc_ga_free(g);
        return MPI_ERR_NO_MEM;
    }
    r->ga = g;
    ompi_request_t *req = MPI_REQUEST_NULL;
    int rc = nc_req_launch(r, nothing, NULL, out ? out : &req);
    return rc == MPI_SUCCESS && !out ? nc_req_wait_free(req) : rc;
}

/* ---- the coll entry points --------------------------------------------- */

/* Our request, or the previous component's function for the call. */
#define NC_OR_PREV(name, counter, call_prev)                                  \
    do {                                                                      \
        if (rc == NC_RULE_DECLINED) {                                         \
            nc_count(NC_CNT_##counter##_DECLINED);                            \
            return m->prev_##name call_prev;                                  \
        }                                                                     \
        if (rc == NC_DECLINED)                                                \
            rc = nc_declined(m);                                              \
        if (rc != NC_DECLINED)                                                \
            return rc;                                                        \
        nc_count(NC_CNT_##counter##_FALLBACK);                                \
        return m->prev_##name call_prev;                                      \
    } while (0)

static int nc_ibcast(void *buf, int count, ompi_datatype_t *dtype, int root,
                     ompi_communicator_t *comm, ompi_request_t **req,
                     mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    int rc = nc_req_make(m, NC_BCAST, false, "MPI_Ibcast",
                         NC_CNT_IBCAST, NULL, buf, count, dtype,
                         NULL, root, req);
    NC_OR_PREV(ibcast, IBCAST, (buf, count, dtype, root, comm, req,
                                  m->prev_ibcast_module));
}

static int nc_ibarrier(ompi_communicator_t *comm, ompi_request_t **req,
                       mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    int rc = nc_req_make(m, NC_BARRIER, false, "MPI_Ibarrier",
                         NC_CNT_IBARRIER, NULL, NULL, 0, NULL, NULL,
                         -1, req);
    NC_OR_PREV(ibarrier, IBARRIER, (comm, req, m->prev_ibarrier_module));
}

static int nc_ireduce(const void *sbuf, void *rbuf, int count,
                      ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                      ompi_communicator_t *comm, ompi_request_t **req,
                      mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    int rc = nc_req_make(m, NC_REDUCE, false, "MPI_Ireduce",
                         NC_CNT_IREDUCE, sbuf, rbuf, count, dtype,
                         op, root, req);
    NC_OR_PREV(ireduce, IREDUCE, (sbuf, rbuf, count, dtype, op, root, comm,
                                    req, m->prev_ireduce_module));
}

static int nc_iallreduce(const void *sbuf, void *rbuf, int count,
                         ompi_datatype_t *dtype, struct ompi_op_t *op,
                         ompi_communicator_t *comm, ompi_request_t **req,
                         mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    int rc = nc_req_make(m, NC_ALLREDUCE, false, "MPI_Iallreduce",
                         NC_CNT_IALLREDUCE, sbuf, rbuf, count, dtype,
                         op, -1, req);
    NC_OR_PREV(iallreduce, IALLREDUCE, (sbuf, rbuf, count, dtype, op, comm,
                                          req, m->prev_iallreduce_module));
}

/* Persistent: the info argument carries no hint numacoll reads. A start
 * counts with the nonblocking calls of the same collective. */
static int nc_bcast_init(void *buf, int count, ompi_datatype_t *dtype,
                         int root, ompi_communicator_t *comm,
                         struct ompi_info_t *info, ompi_request_t **req,
                         mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    int rc = nc_req_make(m, NC_BCAST, true, "MPI_Bcast_init",
                         NC_CNT_IBCAST, NULL, buf, count, dtype,
                         NULL, root, req);
    NC_OR_PREV(bcast_init, IBCAST, (buf, count, dtype, root, comm, info,
                                      req, m->prev_bcast_init_module));
}

static int nc_barrier_init(ompi_communicator_t *comm, struct ompi_info_t *info,
                           ompi_request_t **req,
                           mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    int rc = nc_req_make(m, NC_BARRIER, true, "MPI_Barrier_init",
                         NC_CNT_IBARRIER, NULL, NULL, 0, NULL, NULL,
                         -1, req);
    NC_OR_PREV(barrier_init, IBARRIER, (comm, info, req,
                                          m->prev_barrier_init_module));
}

static int nc_reduce_init(const void *sbuf, void *rbuf, int count,
                          ompi_datatype_t *dtype, struct ompi_op_t *op,
                          int root, ompi_communicator_t *comm,
                          struct ompi_info_t *info, ompi_request_t **req,
                          mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    int rc = nc_req_make(m, NC_REDUCE, true, "MPI_Reduce_init",
                         NC_CNT_IREDUCE, sbuf, rbuf, count, dtype,
                         op, root, req);
    NC_OR_PREV(reduce_init, IREDUCE, (sbuf, rbuf, count, dtype, op, root,
                                        comm, info, req,
                                        m->prev_reduce_init_module));
}

static int nc_allreduce_init(const void *sbuf, void *rbuf, int count,
                             ompi_datatype_t *dtype, struct ompi_op_t *op,
                             ompi_communicator_t *comm,
                             struct ompi_info_t *info, ompi_request_t **req,
                             mca_coll_base_module_t *module)
{
    nc_module_t *m = (nc_module_t *)module;
    int rc = nc_req_make(m, NC_ALLREDUCE, true, "MPI_Allreduce_init",
                         NC_CNT_IALLREDUCE, sbuf, rbuf, count, dtype,
                         op, -1, req);
    NC_OR_PREV(allreduce_init, IALLREDUCE,
               (sbuf, rbuf, count, dtype, op, comm, info, req,
                m->prev_allreduce_init_module));
}

/* ---- module part ------------------------------------------------------- */

void nc_nb_install(nc_module_t *m)
{
    if (!nc_nb_request_fits()) {
        opal_output_verbose(10, NC_OUT, "coll:numacoll: Open MPI's "
                            "nonblocking request (%zu bytes) is larger than "
                            "numacoll reserves (%zu): nonblocking and "
                            "persistent collectives stay with the other "
                            "components",
                            ompi_coll_base_nbc_request_t_class.cls_sizeof,
                            offsetof(nc_req_t, m));
        return;
    }
#define NC_INSTALL(name) m->super.coll_##name = nc_##name;
    NC_NB_LIST(NC_INSTALL)
#undef NC_INSTALL
}

/*
 * Save the previous component's functions. Where the communicator has
 * none (a job that excluded libnbc, or the ordering trap described at
 * nc_module_enable), ours are withdrawn before Open MPI copies the
 * module's functions into the communicator, so that a call the core
 * declines never finds a NULL fallback; that collective then stays with
 * whatever the communicator has.
 */
void nc_nb_enable(nc_module_t *m, ompi_communicator_t *comm)
{
    mca_coll_base_comm_coll_t *c = comm->c_coll;
#define NC_SAVE(name) NC_PREV_SAVE(m, c, comm, name)
    NC_NB_LIST(NC_SAVE)
#undef NC_SAVE
}

void nc_nb_construct(nc_module_t *m)
{
#define NC_CLEAR(name) NC_PREV_CLEAR(m, name)
    NC_NB_LIST(NC_CLEAR)
#undef NC_CLEAR
    m->nb_head = m->nb_tail = NULL;
    m->nb_next = NULL;
    m->nb_listed = false;
    atomic_init(&m->nb_lock, false);
}

void nc_nb_destruct(nc_module_t *m)
{
#define NC_RELEASE(name) NC_PREV_RELEASE(m, name)
    NC_NB_LIST(NC_RELEASE)
#undef NC_RELEASE
}

