/*
 * The Bcast's dispatch: the team's rule for the size names the algorithm
 * (inline, pipelined or single-copy, coll/bcast/bcast_*.c) and its
 * parameters; a pipelined Bcast whose bank geometry (f, s, q) differs from
 * the one in force first waits, at the root, until every bank is drained
 * (a reader of the old geometry may still be copying out of buffers the new
 * one places elsewhere). Every rank takes the same rule, so all agree on
 * the geometry. Cost: the algorithm's, plus one wait per bank when the
 * geometry changes.
 */
#include "coll/op.h"
#include "coll/wait.h"

void nc__bcast_op(numacoll_team_t *t, nc__op_t *o, size_t nbytes, int root,
                  const nc__io_t *io)
{
    const nc__choice_t *ch = nc__team_choice(t, NC_COLL_BCAST, nbytes);
    o->coll = NC_COLL_BCAST;
    o->bc.ch = o->ch = ch;
    /* 0 bytes still travel as an inline line, whatever the rule, so that a
     * rank whose call says otherwise finds out (coll/call.c) */
    o->bc.alg = o->alg = nbytes == 0 ? NC_ALG_BCAST_INLINE : (int)ch->alg;
    o->bc.root = o->root = root;
    o->bc.nbytes = nbytes;
    o->bc.io = *io;
    o->bc.io.cin = nc__copy_pick_read(ch->copy);
    o->bc.io.cout = nc__copy_pick(ch->copy, nbytes);
    o->bc.geo = 0;
    o->bad = NUMACOLL_OK;
    o->begun = 0;
    o->phase = 0;
    o->sub = 0;
}

/* The geometry change before a pipelined Bcast: the root waits for every
 * bank (o->b.k: banks found drained so far). */
static int geometry_step(numacoll_team_t *t, nc__op_t *o)
{
    const nc__choice_t *ch = o->bc.ch;
    if (ch->f == t->geo_f && ch->s == t->geo_s && ch->q == t->geo_q)
        return NUMACOLL_OK;
    if (t->rank == o->bc.root)
        for (; o->b.k < t->q_max; o->b.k++) {
            uint64_t seen;
            nc__wait_why_t why = {-1, "drained bank (new geometry)",
                                  (long)o->b.k, (long)t->op};
            /* as a bank claim (nc__bank_claim): every other rank reads
             * this call, so one past it made another call (it took itself
             * for the root too, say), and nc__call_check says so; set
             * while the driver waits, cleared by it if the wait fails */
            t->claiming = 1;
            int rc = nc__poll(t, &t->banks[o->b.k].nreaders, NC_WAIT_EQ, 0,
                              &seen, &why);
            if (rc == NC_AGAIN)
                return rc;
            t->claiming = 0;
            if (rc != NUMACOLL_OK)
                return rc;
        }
    t->geo_f = ch->f;
    t->geo_s = ch->s;
    t->geo_q = ch->q;
    return NUMACOLL_OK;
}

int nc__bcast_step(numacoll_team_t *t, nc__op_t *o)
{
    int rc;
    switch (o->bc.alg) {
    case NC_ALG_BCAST_INLINE:   /* the slots hold the largest inline rule */
        return nc__bcast_inline_step(t, o);
    case NC_ALG_BCAST_PIPELINED:
        if (!o->bc.geo) {
            if (o->phase == 0) {
                o->b.k = 0;
                o->phase = 1;
            }
            if ((rc = geometry_step(t, o)) != NUMACOLL_OK)
                return rc;
            o->bc.geo = 1;
            o->phase = 0;
        }
        return nc__bcast_pipelined_step(t, o);
    case NC_ALG_BCAST_CMA:   /* only when cma_ok: cma_verdict replaced it */
        return nc__bcast_cma_step(t, o);
    default:
        return nc__team_fail(t, NUMACOLL_ERR_ARG, "algorithm %s is not a "
                             "bcast", nc__algs[o->bc.alg].name);
    }
}

int nc__bcast_run(numacoll_team_t *t, size_t nbytes, int root, nc__io_t *io)
{
    nc__op_t o;
    nc__bcast_op(t, &o, nbytes, root, io);
    int rc = nc__drive(t, nc__bcast_step, &o);
    io->failed |= o.bc.io.failed;
    return rc;
}
