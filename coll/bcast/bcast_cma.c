/*
 * Single-copy Bcast with Linux cross-memory attach (process_vm_readv): every
 * byte is copied once, kernel to kernel, from a user buffer into a user
 * buffer, instead of twice through the segment.
 *
 * Each rank has, in its own sync lines, avail (bytes its buffer has offered
 * over every such call, monotonic), addr and nbytes (this call's buffer),
 * and fin (how many such calls it has finished reading). All ranks keep the
 * same running totals, calls and bytes, so a call's base is known to all.
 *  root:   write addr and nbytes, then avail = base + nbytes (release): its
 *          whole buffer is ready. Then wait until every tree child's fin
 *          counts this call: nobody reads its buffer after it returns.
 *  inner:  wait until its parent's avail passes base (acquire), read the
 *          parent's addr and nbytes (a different size is a mismatch: the
 *          team aborts), publish its own addr and nbytes; then per piece of
 *          f bytes wait for the parent's avail to cover it, read it with
 *          process_vm_readv from the parent's buffer into its own, and
 *          raise its own avail (release) so its children can read it. Then
 *          fin = calls (release), and wait for its children's fin as the
 *          root does.
 *  leaf:   as inner, with no children to wait for.
 * A rank reads its parent's finished copy, not the root's buffer, so no
 * buffer is read by more than k ranks at once (flat tree: all read the
 * root's). Packed data (callbacks) goes through a private buffer of nbytes
 * on that rank, so ranks with different datatypes still agree.
 *
 * Cost, m bytes, pieces of f, depth d of the tree, t per byte copied by the
 * kernel, t_sys per system call (page pinning included):
 *   T(m) = ceil(m/f)*t_sys + m*t + (d-1)*(f*t + t_sys) + d*t_line
 * against about 2*m*t for copy-in/copy-out: it pays for large m when t_sys
 * is amortised. Shared lines: own avail/addr/nbytes/fin written, parent's
 * avail/addr/nbytes and children's fin read. f, tree and radix come from
 * the team's rule (ch). process_vm_readv needs the ptrace access mode
 * "attach" to the parent's process (same user, Yama ptrace_scope, seccomp,
 * one pid namespace): team creation probes it and agrees; where it fails
 * the rule runs as pipelined (nc__bcast_run).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/cma.h"
#include "coll/op.h"
#include "coll/wait.h"

/* Wait until each tree child has counted this call in its fin (o->b.idx:
 * children seen so far). */
static int wait_children(numacoll_team_t *t, nc__op_t *o, int nchild,
                         const int *kids)
{
    for (; (int)o->b.idx < nchild; o->b.idx++) {
        uint64_t seen;
        const int c = kids[o->b.idx];
        nc__wait_why_t why = {c, "single-copy finish", 0, (long)o->b.call};
        int rc = nc__poll(t, &nc__sync(t, c)->fin, NC_WAIT_GE, o->b.call,
                          &seen, &why);
        if (rc != NUMACOLL_OK)
            return rc;
    }
    return NUMACOLL_OK;
}

/* Phases of o (a step returns NC_AGAIN inside one and resumes there). */
enum { START, OFFER, PIECES, CHILDREN };

static int step(numacoll_team_t *t, nc__op_t *o)
{
    const nc__choice_t *ch = o->bc.ch;
    const size_t nbytes = o->bc.nbytes;
    const int root = o->bc.root;
    int parent;
    const int *kids;
    const int nchild = nc__bcast_kin(t, ch, root, NULL, &parent, &kids);
    const size_t f = ch->f;
    nc__bcast_pos_t *b = &o->b;
    nc__io_t *io = &o->bc.io;
    nc__sync_t *me = nc__sync(t, t->rank);
    unsigned char *buf = io->buf ? io->buf : b->tmp;
    int rc;

    switch (o->phase) {
    case START:
        b->base = t->cma_bytes;
        b->call = t->cma_calls + 1;
        b->tmp = NULL;
        b->idx = 0;
        /* both totals move now, whatever happens: an error aborts the team */
        t->cma_bytes += nbytes;
        t->cma_calls = b->call;
        if (!io->buf) {
            buf = b->tmp = malloc(nbytes);
            if (!buf)
                return nc__team_fail(t, NUMACOLL_ERR_NOMEM, "single-copy "
                                     "bcast: no memory for a %zu-byte "
                                     "packing buffer", nbytes);
        }
        if (t->rank == root) {
            if (b->tmp && io->pack(io->ctx, 0, b->tmp, nbytes) != 0)
                io->failed = 1;   /* still serve the call: the others wait */
            atomic_store_explicit(&me->addr, (uint64_t)(uintptr_t)buf,
                                  memory_order_relaxed);
            atomic_store_explicit(&me->nbytes, nbytes, memory_order_relaxed);
            atomic_store_explicit(&me->sig, t->sig32, memory_order_relaxed);
            /* addr and nbytes must be visible before the bytes are offered */
            atomic_store_explicit(&me->avail, b->base + nbytes,
                                  memory_order_release);
            o->phase = CHILDREN;
            return wait_children(t, o, nchild, kids);
        }
        o->phase = OFFER;
        /* fall through */
    case OFFER: {
        nc__wait_why_t why = {parent, "single-copy offer", 0, (long)b->call};
        nc__sync_t *up = nc__sync(t, parent);
        rc = nc__poll(t, &up->avail, NC_WAIT_GE, b->base + 1, &b->seen,
                      &why);
        if (rc != NUMACOLL_OK)
            return rc;
        /* acquire on avail made the parent's addr and nbytes of this call
         * visible; they stay until we raise fin */
        if (atomic_load_explicit(&up->nbytes, memory_order_relaxed) !=
                nbytes ||
            atomic_load_explicit(&up->sig, memory_order_relaxed) != t->sig32)
            return nc__mismatch(t, parent, "its single-copy bcast differs");
        atomic_store_explicit(&me->addr, (uint64_t)(uintptr_t)buf,
                              memory_order_relaxed);
        atomic_store_explicit(&me->nbytes, nbytes, memory_order_relaxed);
        atomic_store_explicit(&me->sig, t->sig32, memory_order_relaxed);
        b->sent = 0;
        o->phase = PIECES;
    }
        /* fall through */
    case PIECES: {
        nc__wait_why_t why = {parent, "single-copy offer", 0, (long)b->call};
        nc__sync_t *up = nc__sync(t, parent);
        const int pid = t->loc[parent].pid;
        const uint64_t raddr = atomic_load_explicit(&up->addr,
                                                    memory_order_relaxed);
        while (b->sent < nbytes) {
            const size_t off = b->sent;
            size_t n = nbytes - off < f ? nbytes - off : f;
            /* the parent may have offered more than asked: read all it
             * has, in pieces of at most f so our children can start */
            if ((int64_t)(b->seen - (b->base + off + n)) < 0) {
                rc = nc__poll(t, &up->avail, NC_WAIT_GE, b->base + off + n,
                              &b->seen, &why);
                if (rc != NUMACOLL_OK)
                    return rc;
            }
            int err = nc__cma_move(pid, buf + off, raddr + off, n, 0);
            if (err) {
                rc = nc__team_fail(t, NUMACOLL_ERR_SYS, "single-copy bcast: "
                                   "process_vm_readv of %zu bytes from rank "
                                   "%d (pid %d) failed: %s", n, parent, pid,
                                   strerror(err));
                nc__team_abort(t, rc);
                return rc;
            }
            b->sent = off + n;
            /* our copy must be visible before our children may read it */
            atomic_store_explicit(&me->avail, b->base + b->sent,
                                  memory_order_release);
        }
        /* we no longer read the parent's buffer */
        atomic_store_explicit(&me->fin, b->call, memory_order_release);
        if (b->tmp && io->unpack(io->ctx, 0, b->tmp, nbytes) != 0)
            io->failed = 1;
        o->phase = CHILDREN;
    }
        /* fall through */
    default:
        return wait_children(t, o, nchild, kids);
    }
}

int nc__bcast_cma_step(numacoll_team_t *t, nc__op_t *o)
{
    int rc = step(t, o);
    /* the packing buffer lives until the op ends, whichever way */
    if (rc != NC_AGAIN && o->phase != START) {
        free(o->b.tmp);
        o->b.tmp = NULL;
    }
    return rc;
}
