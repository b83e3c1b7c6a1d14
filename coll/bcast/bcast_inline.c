/*
 * Inline Bcast for messages of at most NC_INLINE_MAX (56) bytes (and every
 * Bcast of 0 bytes, so that a mismatch shows): the data travels inside the
 * control cache line with its length and the call's signature
 * (coll/call.c), so each tree edge costs one cache-line transfer and
 * nobody touches a fragment buffer.
 *
 *  root:   wait for the bank to drain (as the pipelined Bcast: the slots
 *          belong to the bank), set nreaders = p-1, then write payload and
 *          length into each child's first slot of the bank (release).
 *  inner:  wait for its slot (acquire), copy payload and length on to its
 *          children, copy the payload out, clear the slot, decrement
 *          nreaders (release).
 *  leaf:   as inner, with no children.
 * Cost: depth(tree) * t_line + t_WO + t_A, independent of p for the payload.
 * Shared slots: own and children's first control slot of bank op % q; bank
 * op/nreaders. Tree and radix come from the team's tuning rule (ch); the
 * banks are those of the geometry in force, so an inline call never has to
 * drain them.
 */
#include "coll/team.h"
#include "coll/wait.h"

static void send_line(numacoll_team_t *t, int nchild, unsigned idx,
                      const unsigned char *payload, size_t n)
{
    for (int c = 0; c < nchild; c++) {
        nc__ctrl_t *dst = nc__ctrl(t, t->children[c], idx);
        if (n)
            memcpy(dst->data, payload, n);
        /* the payload must be visible before its length and signature */
        atomic_store_explicit(&dst->word, nc__dword(t, n),
                              memory_order_release);
    }
}

int nc__bcast_inline(numacoll_team_t *t, const nc__choice_t *ch,
                     size_t nbytes, int root, nc__io_t *io)
{
    const unsigned q = t->geo_q, set = (unsigned)(t->op % q);
    const unsigned idx = set * (t->geo_s / q);
    const nc__tree_t *tree = nc__team_tree(t, ch->tree, (int)ch->k, 0);
    const int nchild = nc__tree_children(tree, root, t->rank, t->children);
    uint64_t seen;
    int rc;

    if (t->rank == root) {
        unsigned char payload[NC_INLINE_MAX];
        rc = nc__bank_claim(t, set);
        if (rc != NUMACOLL_OK)
            return rc;
        if (nbytes)
            nc__io_pack(io, 0, payload, nbytes);
        send_line(t, nchild, idx, payload, nbytes);
    } else {
        nc__ctrl_t *mine = nc__ctrl(t, t->rank, idx);
        nc__wait_why_t why = {nc__tree_parent(tree, root, t->rank),
                              "inline control slot", (long)idx, (long)t->op};
        rc = nc__wait(t, &mine->word, NC_WAIT_NONZERO, 0, &seen, &why);
        if (rc != NUMACOLL_OK)
            return rc;
        if (seen != nc__dword(t, nbytes))
            return nc__bcast_mismatch(t, why.peer, seen,
                                      "its inline bcast differs");
        send_line(t, nchild, idx, mine->data, nbytes);
        if (nbytes)
            nc__io_unpack(io, 0, mine->data, nbytes);
        atomic_store_explicit(&mine->word, 0, memory_order_relaxed);
        nc__bank_release(t, set);
    }
    t->op++;
    return NUMACOLL_OK;
}
