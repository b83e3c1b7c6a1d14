/*
 * The two-level files' calls on the sub-communicators (coll_numacoll_hier.c,
 * coll_numacoll_hier_gather.c): blocking on the leaders', nonblocking and
 * waited for on the node-local one, the first error kept.
 */
#ifndef MCA_COLL_NUMACOLL_HIER_H
#define MCA_COLL_NUMACOLL_HIER_H

#include "ompi/constants.h"
#include "ompi/request/request.h"

/* A blocking call on a sub-communicator, through its own function table
 * (the leaders' only: see NC_LOW). */
#define NC_CALL(c, fn, ...)                                                   \
    ((c)->c_coll->coll_##fn(__VA_ARGS__, (c), (c)->c_coll->coll_##fn##_module))
/* A nonblocking one, its request added to q. */
#define NC_ICALL(q, c, fn, ...)                                               \
    nc_rq_note((q), (c)->c_coll->coll_##fn(__VA_ARGS__, (c), nc_rq_slot(q),   \
                                           (c)->c_coll->coll_##fn##_module))

/* Requests in flight of one step. */
typedef struct nc_rq {
    ompi_request_t *r[3];
    int n;
    int rc;             /* the first error of a start or a wait */
} nc_rq_t;

static inline ompi_request_t **nc_rq_slot(nc_rq_t *q)
{
    q->r[q->n] = MPI_REQUEST_NULL;  /* stays so if the start fails */
    return &q->r[q->n++];
}

static inline void nc_rq_note(nc_rq_t *q, int rc)
{
    if (rc != OMPI_SUCCESS && q->rc == OMPI_SUCCESS)
        q->rc = rc;
}

/* Wait for q's requests; returns (and clears) q's first error. */
static inline int nc_rq_wait(nc_rq_t *q)
{
    if (q->n > 0)
        nc_rq_note(q, ompi_request_wait_all((size_t)q->n, q->r,
                                            MPI_STATUSES_IGNORE));
    int rc = q->rc;
    q->n = 0;
    q->rc = OMPI_SUCCESS;
    return rc;
}

static inline int nc_first(int a, int b)
{
    return a != OMPI_SUCCESS ? a : b;
}

/* A node-local call, made as numacoll's nonblocking one and waited for
 * in Open MPI's wait: numacoll's blocking calls spin on shared memory
 * without opal_progress, and a nonblocking call of another component on
 * the parent communicator (libnbc's Ibcast, whose root may be waiting
 * here) must keep moving meanwhile. Adds the first error to rc. */
#define NC_LOW(rc, lo, fn, ...)                                               \
    do {                                                                      \
        nc_rq_t q_ = {.n = 0};                                                \
        NC_ICALL(&q_, lo, fn, __VA_ARGS__);                                   \
        (rc) = nc_first((rc), nc_rq_wait(&q_));                               \
    } while (0)
/* A leaders' call: the leaders' component's blocking one; adds the first
 * error to rc. */
#define NC_UP(rc, up, fn, ...)                                                \
    ((rc) = nc_first((rc), NC_CALL(up, fn, __VA_ARGS__)))

#endif /* MCA_COLL_NUMACOLL_HIER_H */
