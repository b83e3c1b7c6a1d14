/*
 * Inline Allgather for small blocks: every rank publishes its block in
 * self-validating cache lines, the inline Allreduce's (coll/reduce/
 * allreduce_inline.c, same lines, same call counter, same reuse rule),
 * and every rank copies every other rank's lines out. No staging slot, no
 * release: one wave of line transfers.
 *
 * A block of n bytes takes L(n) = 1 + ceil((n - 48) / 56) lines (one if
 * n <= 48): line 0 carries 48 bytes and, in its last 8 data bytes, n
 * itself, so that a reader whose idea of the block differs (Allgatherv
 * counts that disagree) finds out at line 0 instead of waiting for lines
 * that never come; each later line carries 56. Each line's word
 * sig32 << 32 | (seq + 1) is stored after its payload (release).
 *
 *  every rank: copy its block into its L lines of slot seq % 4, each
 *          line's word last; its own block straight to its receive
 *          buffer (not at all in place); then for every other rank j,
 *          from the next one on (so the ranks do not all read one writer
 *          first): wait for line 0's word (acquire; its size checked),
 *          then for the last line's (acquire: the writer's release there
 *          orders every line before it), copy the payloads to displs[j].
 * Reuse: reduce.h's nc__ar_begin. Each call reads at least line 0 of
 * every other rank (an empty block still publishes it), so what a rank
 * knows of the others' progress is always enough and its check reads no
 * shared line: its lines of slot seq % 4 (NC_AR_SLOTS) are rewritten at
 * call seq + 4, after its call seq + 1 saw every rank's lines of seq + 1,
 * which each published after its last read of call seq.
 *
 * Cost: 2 t_l (line 0, then the last, L > 1) + (p - 1) L lines read,
 * their misses overlapping in the copy. Shared
 * lines: writes its own, reads everyone's. The table's largest inline
 * allgather rule (per rank's block) sizes the lines with the Allreduce's.
 */
#include <stdio.h>
#include <string.h>

#include "coll/gather/gather.h"

#define FIRST NC_AG_FIRST   /* block bytes in line 0 */

/* Line k of a block of n bytes: offset and length of its payload. */
static size_t piece(size_t n, size_t k, size_t *off)
{
    *off = k ? FIRST + (k - 1) * NC_RED_INLINE : 0;
    const size_t cap = k ? NC_RED_INLINE : FIRST;
    return n > *off ? (n - *off < cap ? n - *off : cap) : 0;
}

void nc__ag_put(numacoll_team_t *t, unsigned slot, size_t first,
                const unsigned char *src, size_t n, uint64_t seq)
{
    const uint64_t word = nc__dword(t, seq + 1);
    const size_t lines = nc__ag_inline_lines(n);
    for (size_t k = 0; k < lines; k++) {
        nc__rline_t *l = nc__arline(t, t->rank, slot, first + k);
        size_t off, len = piece(n, k, &off);
        if (len)
            nc__copy_line_in(l->data, src + off, len);
        if (k == 0) {
            uint64_t size = n;
            memcpy(l->data + FIRST, &size, sizeof size);
        }
        /* the payload must be visible before its sequence number */
        atomic_store_explicit(&l->word, word, memory_order_release);
    }
}

void nc__ag_put_unfit(numacoll_team_t *t, unsigned slot, size_t first,
                      uint64_t seq)
{
    nc__rline_t *l = nc__arline(t, t->rank, slot, first);
    const uint64_t size = NC_AG_UNFIT;
    memcpy(l->data + FIRST, &size, sizeof size);
    atomic_store_explicit(&l->word, nc__dword(t, seq + 1),
                          memory_order_release);
}

int nc__ag_size(numacoll_team_t *t, int j, unsigned slot, size_t first,
                uint64_t seq, uint64_t *size, const char *what)
{
    nc__rline_t *l = nc__arline(t, j, slot, first);
    nc__wait_why_t why = {j, what, 0, (long)seq};
    uint64_t seen;
    int rc = nc__poll(t, &l->word, NC_WAIT_EQ, nc__dword(t, seq + 1), &seen,
                      &why);
    if (rc != NUMACOLL_OK)
        return rc;
    nc__ar_saw(t, j, seq);
    memcpy(size, l->data + FIRST, sizeof *size);
    return NUMACOLL_OK;
}

int nc__ag_get(numacoll_team_t *t, int j, unsigned slot, size_t first,
               unsigned char *dst, size_t n, uint64_t seq, size_t *r,
               const char *what)
{
    const uint64_t want = nc__dword(t, seq + 1);
    const size_t lines = nc__ag_inline_lines(n);
    uint64_t seen;
    int rc;
    if (*r == 0) {
        /* line 0 first: its size tells a reader whose idea of the block
         * differs before it waits for a line that may never come */
        uint64_t size;
        if ((rc = nc__ag_size(t, j, slot, first, seq, &size, what)) !=
            NUMACOLL_OK)
            return rc;
        const nc__rline_t *l = nc__arline(t, j, slot, first);
        if (size != n) {
            char why_s[160];
            snprintf(why_s, sizeof why_s, "%s: its block has %llu bytes, "
                     "this rank expected %zu", what,
                     (unsigned long long)size, n);
            return nc__mismatch(t, j, why_s);
        }
        size_t off, len = piece(n, 0, &off);
        if (len)
            memcpy(dst, l->data, len);
        *r = 1;
    }
    if (lines > 1) {
        /* Then only the last line's word: the writer stored every line
         * before it (its release orders them), so the others are there
         * once it is seen (acquire) and their misses overlap in one copy
         * instead of queueing behind one wait each. */
        nc__rline_t *l = nc__arline(t, j, slot, first + lines - 1);
        nc__wait_why_t why = {j, what, (long)lines - 1, (long)seq};
        if ((rc = nc__poll(t, &l->word, NC_WAIT_EQ, want, &seen, &why)) !=
            NUMACOLL_OK)
            return rc;
        for (size_t k = 1; k < lines; k++) {
            size_t off, len = piece(n, k, &off);
            memcpy(dst + off, nc__arline(t, j, slot, first + k)->data, len);
        }
    }
    return NUMACOLL_OK;
}

/* As steps (o->g): base the call's number, i the other ranks read so far
 * (from the next one on), r the line of that rank being read. */
int nc__allgather_inline_step(numacoll_team_t *t, nc__op_t *o)
{
    nc__ga_pos_t *P = &o->g;
    const int me = t->rank;
    if (o->phase == 0) {
        const size_t mine = nc__ga_count(o, me);
        const unsigned char *src = o->ga.in_place
                                       ? nc__ga_at(o->ga.recv,
                                                   nc__ga_displ(o, me))
                                       : o->ga.send;
        int rc = nc__ar_begin(t, NC_AR_RD_ALL, -1, &P->base);
        if (rc != NUMACOLL_OK)
            return rc;
        P->i = 0;
        P->r = 0;
        nc__ag_put(t, nc__ar_slot(P->base), 0, src, mine, P->base);
        /* the own block after the lines: stores to a receive buffer not
         * in cache, ahead of the lines' release, would hold back their
         * publication until its misses are served (x86 stores become
         * visible in order) */
        if (!o->ga.in_place && mine)
            memcpy(o->ga.recv + nc__ga_displ(o, me), src, mine);
        o->phase = 1;
    }
    const unsigned slot = nc__ar_slot(P->base);
    for (; P->i < t->p - 1; P->i++, P->r = 0) {
        const int j = (int)((me + 1 + P->i) % t->p);
        int rc = nc__ag_get(t, j, slot, 0,
                            nc__ga_at(o->ga.recv, nc__ga_displ(o, j)),
                            nc__ga_count(o, j), P->base, &P->r,
                            "inline allgather line");
        if (rc != NUMACOLL_OK)
            return rc;
    }
    nc__ar_all(t, P->base);   /* it read line 0 of every rank */
    nc__ar_end(t, P->base);
    return NUMACOLL_OK;
}
