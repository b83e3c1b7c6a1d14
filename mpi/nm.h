/*
 * libnumacoll-mpi: numacoll under any MPI through the profiling interface
 * (docs/mpich.md). The library defines MPI_Bcast, MPI_Allreduce, ... and
 * calls PMPI_* wherever it does not serve a call itself, so it works
 * preloaded (LD_PRELOAD) or linked before the MPI library, with no rebuild
 * of the application or of the MPI.
 *
 * Files: nm_comm.c (parameters from the environment, the team cached on
 * each communicator, counters, MPI_Finalize), nm_types.c (which datatypes
 * and ops the core serves, and buffers that are not one run of bytes),
 * nm_coll.c (the blocking collectives), nm_vcoll.c (their v forms),
 * nm_nb.c (the nonblocking ones, where the MPI lets a generalized request
 * poll), nm_map.c (MPI's predefined types and ops as the core's).
 */
#ifndef NM_H
#define NM_H

#include <mpi.h>
#include <stddef.h>

#include "numacoll.h"

/* ---- communicators (nm_comm.c) ------------------------------------------ */

/* The team of comm, created at the first collective call on it (which
 * every rank makes, so the creation is collective too); NULL where
 * numacoll does not serve comm (an intercommunicator, one process, ranks
 * on several nodes, a failed creation, NUMACOLL_MPI=0), the same on every
 * rank. */
numacoll_team_t *nm_team(MPI_Comm comm);

/* A communicator's record, for a nonblocking call: the communicator's
 * team where it has one already, created by an earlier blocking call
 * (never here: a nonblocking start must not wait for the other ranks, and
 * MPI lets them start nonblocking calls on different communicators in
 * different orders); NULL otherwise, the same on every rank, since every
 * rank has made the same calls on comm before. A request holds its
 * record (nm_comm_hold) until it completes (nm_comm_release), so the team
 * outlives an MPI_Comm_free with the request pending. */
typedef struct nm_comm nm_comm_t;
nm_comm_t *nm_comm_served(MPI_Comm comm);
numacoll_team_t *nm_comm_team(const nm_comm_t *c);
void nm_comm_hold(nm_comm_t *c);
void nm_comm_release(nm_comm_t *c);

/* Count a call of coll that the core ran (ran = 1) or that went to the MPI
 * library's own collective (0). */
void nm_count(numacoll_coll_t coll, int ran);

/* A call that goes to the MPI: counted, then run. */
#define NM_MPI(coll, call) (nm_count((coll), 0), (call))

/* What a served call returns once the core is done (st) and its buffers
 * are back (rc): counted when it ran; a failure goes to comm's error
 * handler (nm_finish), as does a failure of the buffers' unpacking. */
int nm_done(MPI_Comm comm, numacoll_team_t *t, numacoll_coll_t coll,
            const char *what, int st, int rc);

/* A failure of this rank alone before the core was called (no memory for
 * a temporary): the other ranks are in the call already, so it is an
 * error of the call, reported as MPI reports any. */
int nm_local_fail(MPI_Comm comm, int rc);

/* 1 when the team's tuning table says decline=1 for this call. */
int nm_declines(numacoll_team_t *t, numacoll_coll_t coll, size_t nbytes);

/* 1 when a core status means "run the call with the MPI's own collective
 * instead" (the same status on every rank: no room to grow the team's
 * staging, an operation the team does not support). */
int nm_hands_back(int st);

/* The MPI error class of a core status, its sentence said on stderr (at
 * verbose >= 1); no handler called (a nonblocking call's result goes out
 * through its request). */
int nm_error(numacoll_team_t *t, const char *what, int st);

/* The MPI result of a core status: MPI_SUCCESS, or an error class passed
 * to comm's error handler first (with the core's sentence on stderr). */
int nm_finish(MPI_Comm comm, numacoll_team_t *t, const char *what, int st);

/* ---- datatypes and ops (nm_types.c) -------------------------------------- */

/* count x dt as one run of bytes: where the user's data lies in one run in
 * MPI's packing order, `run` points into the user's buffer (at its true
 * lower bound); otherwise at a temporary. */
typedef struct nm_span {
    void *run;          /* the bytes                                        */
    void *tmp;          /* the temporary, or NULL                           */
    void *user;         /* the user's buffer                                */
    int count;
    MPI_Datatype dt;
    size_t bytes;       /* count x the type's size                          */
} nm_span_t;

/* 1 for a predefined (named) datatype, which the user cannot free. */
int nm_type_named(MPI_Datatype dt);

/* Bytes of count x dt into *bytes; 0 on success, -1 for a negative count
 * or a size that overflows. */
int nm_bytes(int count, MPI_Datatype dt, size_t *bytes);

/* Make *s for count x dt at user. fill = 1: the run must hold the user's
 * data (a send buffer, an in-place receive buffer), packed into the
 * temporary where needed. MPI_SUCCESS or MPI_ERR_NO_MEM. */
int nm_span_begin(nm_span_t *s, const void *user, int count, MPI_Datatype dt,
                  int fill, MPI_Comm comm);
/* Done with *s: drain = 1 unpacks the temporary into the user's buffer (a
 * receive buffer). Frees the temporary. MPI_SUCCESS or an MPI error. */
int nm_span_end(nm_span_t *s, int drain, MPI_Comm comm);

/* p blocks of counts[j] x dt at user + displs[j] x extent (a v form's
 * buffer) as bytes: off[j] and len[j] locate block j in `run`, which is
 * the user's buffer (from its true lower bound) where dt's elements are
 * their bytes back to back, else a temporary holding the blocks packed one
 * after the other. */
typedef struct nm_vspan {
    char *run;
    void *tmp;
    void *user;
    const int *counts, *displs;
    MPI_Datatype dt;
    MPI_Aint extent;
    int p;
    size_t *off, *len;  /* p each, one allocation                        */
} nm_vspan_t;

/* Which blocks nm_vspan_begin packs into a temporary: all (a send side),
 * none (a receive side), or block `one` alone (an in-place receive side,
 * whose own block holds the data). */
enum { NM_FILL_NONE = -1, NM_FILL_ALL = -2 };

/* Make *v; fill: NM_FILL_ALL, NM_FILL_NONE or a block's index.
 * MPI_SUCCESS, MPI_ERR_NO_MEM or MPI_ERR_COUNT / MPI_ERR_TYPE. */
int nm_vspan_begin(nm_vspan_t *v, const void *user, const int *counts,
                   const int *displs, MPI_Datatype dt, int p, int fill,
                   MPI_Comm comm);
/* Done with *v: drain = 1 unpacks a temporary's blocks (all but block
 * `skip`, which is -1 for none) into the user's buffer. Frees what
 * nm_vspan_begin took. */
int nm_vspan_end(nm_vspan_t *v, int drain, int skip, MPI_Comm comm);

/* How a reduction reaches the core. */
typedef struct nm_red {
    int user;                   /* 1: a user op (fn, elem_size)             */
    numacoll_dtype_t dt;        /* predefined: the core's element type      */
    numacoll_op_t op;           /*             and op                       */
    size_t elem_size;           /* bytes of one element                     */
    numacoll_user_op_fn fn;     /* user: the caller of the MPI function     */
    void *ctx;                  /*       its context (nm_red_ctx)           */
    int commutative;
} nm_red_t;

/* The plan for count x dt with op; 0 when the core serves it, -1 when the
 * call goes to the MPI (derived types with a predefined op, a user op on
 * a type with holes, MPI_REPLACE, ops not created through MPI_Op_create
 * in C). Taken from the arguments alone, which MPI requires to be the same
 * on every rank, so every rank decides alike. The context of a user op
 * lives in *ctx_store. */
typedef struct nm_red_ctx {
    MPI_User_function *fn;
    MPI_Datatype dt;
} nm_red_ctx_t;
int nm_red_plan(int count, MPI_Datatype dt, MPI_Op op, nm_red_t *r,
                nm_red_ctx_t *ctx_store);

#endif
