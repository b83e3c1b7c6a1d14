/*
 * The entries every gather algorithm publishes and takes (gather.h): a
 * fragment into the writer's staging slot or its full line, and out again.
 */
#include <stdio.h>
#include <string.h>

#include "coll/gather/gather.h"

/* The block size and f travel in the last 16 data bytes of a block's first
 * entry's line (plain bytes, ordered by the word's release store). */
#define META_OFF NC_GA_INLINE

void nc__ga_own(numacoll_team_t *t, nc__op_t *o, size_t off, size_t n)
{
    const int me = t->rank;
    const size_t mine = nc__ga_count(o, me);
    if (o->ga.in_place || off >= mine)
        return;
    if (n > mine - off)
        n = mine - off;
    nc__ga_io_t *io = nc__ga_io(o);
    if (io) {
        /* each byte packed once and unpacked once, in order */
        unsigned char tmp[1024];
        for (size_t k = 0; k < n; k += sizeof tmp) {
            size_t m = n - k < sizeof tmp ? n - k : sizeof tmp;
            nc__ga_pack(io, me, off + k, tmp, m);
            nc__ga_unpack(io, me, off + k, tmp, m);
        }
        return;
    }
    /* Scatter: the root's block among the send blocks, to recv; Alltoall:
     * block me of send to block me of recv; Allgather, Gather: send to
     * this rank's place among the received blocks */
    const unsigned char *from =
        o->coll == NC_COLL_SCATTER    ? o->ga.send + nc__ga_displ(o, me)
        : o->coll == NC_COLL_ALLTOALL ? o->ga.send + nc__ga_sdispl(o, me)
                                      : o->ga.send;
    unsigned char *to = o->coll == NC_COLL_SCATTER
                            ? o->ga.recv
                            : o->ga.recv + nc__ga_displ(o, me);
    memcpy(to + off, from + off, n);
}

void nc__ga_prefetch_blocks(const numacoll_team_t *t, const nc__op_t *o,
                            size_t max)
{
    size_t ask = NC_PREFETCH_MAX;
    for (int j = 0; j < t->p && ask; j++) {
        const size_t n = nc__ga_count(o, j);
        if (j == t->rank || n > max)
            continue;
        nc__prefetch_w(nc__ga_at(o->ga.recv, nc__ga_displ(o, j)), n, ask);
        ask -= n < ask ? n : ask;
    }
}

void nc__ga_begin(numacoll_team_t *t, nc__op_t *o)
{
    const size_t f = o->ch->f;
    const int me = t->rank, all = o->coll == NC_COLL_ALLGATHER ||
                                  o->coll == NC_COLL_ALLTOALL ||
                                  me == o->root;
    nc__ga_pos_t *P = &o->g;
    P->rounds = nc__ga_frags(o->ga.own, f);
    P->own_later = 0;
    if (all) {
        for (int j = 0; j < t->p; j++) {
            size_t n = nc__ga_frags(nc__ga_count(o, j), f);
            if (j != o->root && n > P->rounds)
                P->rounds = n;
        }
        /* the staged Allgather, Alltoall and Scatter root copy their own
         * block after staging (see nc__ga_own): the others wait for what
         * is staged, not for this copy */
        P->own_later = t->p > 1 && (o->alg == NC_ALG_ALLGATHER_STAGED ||
                                    o->alg == NC_ALG_ALLTOALL_STAGED ||
                                    o->alg == NC_ALG_SCATTER_STAGED);
        if (!P->own_later)
            nc__ga_own(t, o, 0, SIZE_MAX);
    }
    /* The first 4 KiB of what this rank receives from others: their
     * misses overlap the waits, as the Bcast readers' (on the VM, p = 2,
     * cold buffers: Gather and Scatter 0.67-0.97x the time at 1-4 KiB,
     * Allgather and Alltoall 0.9-1.0x). Staged only: single copy writes
     * them from the other process. A Scatter reader receives its own
     * block (ga.own: a Scatterv reader knows no other count). */
    if (o->ga.packed)
        ;   /* no buffers: the callbacks' business */
    else if (o->coll == NC_COLL_SCATTER) {
        if (me != o->root && !nc__ga_cma(o->alg))
            nc__prefetch_w(o->ga.recv, o->ga.own, NC_PREFETCH_MAX);
    } else if (all && !nc__ga_cma(o->alg)) {
        nc__ga_prefetch_blocks(t, o, SIZE_MAX);
    }
    /* Entries number from the team's ticket (equal on every rank), one
     * ticket per call: back-to-back calls start in different slots, so a
     * small call does not wait for the readers of the one before. */
    P->base = t->red->ticket++;
    P->r = P->staged = 0;
    /* the peers of a round start after this rank (Scatter: destinations
     * counted from 0) */
    P->i = o->coll == NC_COLL_SCATTER ? 0 : 1;
    o->phase = 1;
}

int nc__ga_put(numacoll_team_t *t, unsigned s, size_t f,
               const nc__ga_frag_t *fr, const void *src, unsigned readers,
               int must)
{
    const unsigned x = (unsigned)(fr->e % s);
    nc__rslot_t *slot = nc__rslot(t, t->rank, x);
    int rc;
    if (must) {
        if ((rc = nc__rslot_claim(t, x)) != NUMACOLL_OK)
            return rc;
    } else {
        uint64_t seen;
        /* acquire, as the claim: the readers of the slot's previous use
         * are done with it before we write */
        if (!nc__ready(&slot->rel, NC_WAIT_GE, t->red->expect[x], &seen))
            return NC_AGAIN;
    }
    unsigned char *at = fr->n > NC_GA_INLINE ? nc__rbuf(t, t->rank, x)
                                              : slot->full.data;
    if (fr->io)
        nc__ga_pack(fr->io, fr->peer, fr->r * f, at, fr->n);
    else if (fr->n > NC_GA_INLINE)
        nc__copy(fr->cin, at, src, fr->n);
    else if (fr->n)
        memcpy(at, src, fr->n);
    if (fr->r == 0) {
        uint64_t meta[2] = {(uint64_t)fr->block, (uint64_t)f};
        memcpy(slot->full.data + META_OFF, meta, sizeof meta);
    }
    /* the fragment and meta are written before the word (release) */
    nc__rslot_publish(t, x, fr->e, readers);
    /* after the readers may go: the slot stays as written until we claim
     * it again (they only read it) */
    if (fr->io && fr->own)
        nc__ga_unpack(fr->io, t->rank, fr->r * f, at, fr->n);
    return NUMACOLL_OK;
}

int nc__ga_take(numacoll_team_t *t, int writer, unsigned s, size_t f,
                const nc__ga_frag_t *fr, void *dst, const char *what)
{
    const unsigned x = (unsigned)(fr->e % s);
    int rc = nc__rslot_wait_full(t, writer, x, fr->e);
    if (rc != NUMACOLL_OK)
        return rc;
    nc__rslot_t *slot = nc__rslot(t, writer, x);
    if (fr->r == 0) {
        uint64_t meta[2];
        memcpy(meta, slot->full.data + META_OFF, sizeof meta);
        if (meta[0] != (uint64_t)fr->block || meta[1] != (uint64_t)f) {
            /* Blocks of different sizes: the ranks would count different
             * entries. Fail instead (the slot is not released: the
             * resynchronisation that follows resets every slot). */
            char why[200];
            snprintf(why, sizeof why, "%s: rank %d wrote a block of %llu "
                     "bytes in fragments of %llu, rank %d expected %zu bytes "
                     "in fragments of %zu", what, writer,
                     (unsigned long long)meta[0], (unsigned long long)meta[1],
                     t->rank, fr->block, f);
            return nc__mismatch(t, writer, why);
        }
    }
    const unsigned char *at = fr->n > NC_GA_INLINE ? nc__rbuf(t, writer, x)
                                                    : slot->full.data;
    if (fr->io)
        nc__ga_unpack(fr->io, fr->peer, fr->r * f, at, fr->n);
    else if (fr->n > NC_GA_INLINE)
        nc__copy(fr->cin, dst, at, fr->n);
    else if (fr->n)
        memcpy(dst, at, fr->n);
    /* our copy-out is done before the writer may reuse the slot */
    nc__rslot_release(t, writer, x);
    return NUMACOLL_OK;
}

int nc__ga_line_check(numacoll_team_t *t, int j, uint64_t lbase,
                      size_t first, int fit, size_t n, const char *what)
{
    uint64_t size;
    int rc = nc__ag_size(t, j, nc__ar_slot(lbase), first, lbase, &size,
                         what);
    if (rc != NUMACOLL_OK || (size != NC_AG_UNFIT) == fit)
        return rc;
    char why[200];
    if (fit)
        snprintf(why, sizeof why, "%s: rank %d sends its block past the "
                 "inline lines, this rank expects %zu bytes there", what, j,
                 n);
    else
        snprintf(why, sizeof why, "%s: rank %d sends %llu bytes in the "
                 "inline lines, this rank expects %zu bytes past them",
                 what, j, (unsigned long long)size, n);
    return nc__mismatch(t, j, why);
}
