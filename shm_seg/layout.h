/*
 * The shared segment, planned as a pure function of (p, page, s, q, f) so
 * it is tested without creating anything. One segment per team:
 *
 *   offset 0          +--------------------------------------------+
 *                     | header: nc__seg_hdr (magic, abort word),   |  node of
 *                     |         leaders[p] (int32)                  |  rank 0
 *   banks_off         +--------------------------------------------+
 *                     | q bank records: op | nreaders, each word on  |  node of
 *                     | its own cache line (bank_stride apart)      |  rank 0
 *   rank_off(0)       +--------------------------------------------+
 *                     | rank 0 controls: s slots (ctrl_stride apart)|  node of
 *                     |   + sync lines (barrier arrive / release,   |  rank 0
 *                     |     single-copy Bcast post / finish)        |
 *                     |   + 4*al inline Allreduce lines (slots)     |
 *                     |   + inline Bcast: 1 ack line, NC_INL_SLOTS  |
 *                     |     record lines, NC_INL_SLOTS slots of il  |
 *                     |     self-validating lines each              |
 *                     |   + rs reduce slot records of 3 lines each  |
 *                     |     (full+payload | done | rel)             |
 *                     | rank 0 buffers: s fragments of f bytes      |
 *                     | rank 0 reduce staging: rs slots of rf bytes |
 *                     |   (each rounded up to a cache line)         |
 *   rank_off(1)       +--------------------------------------------+
 *                     | rank 1 controls + buffers + staging         |  node of
 *                     ...                                              rank 1
 *   total             +--------------------------------------------+
 *
 * Every block starts and ends on a page boundary because NUMA binding and
 * move_pages() work per page. The initial state of a team is all zeros in
 * the header block and in every rank's controls (ctrl_len), and only there:
 * those are what a reused segment gets zeroed again (coll/team.c
 * init_shared), while buffers and staging slots keep the last team's bytes,
 * so no shared flag may live in them. Our layout packs control slots one cache line
 * each and fragment buffers back to back; the paper's layout (one page per
 * control slot, one page per bank, each buffer rounded up to pages, no sync
 * lines) is available as nc__layout_paper() for comparison:
 *   ours : S = H + ceil(q*128/w)*w
 *              + p*(ceil(64*(s + 5 + 4al + I + 3rs)/w)*w + ceil(s*f/w)*w
 *                   + ceil(rs*ceil64(rf)/w)*w)
 *          (H = ceil((128 + 4p)/w)*w; s+5+4al lines: s slots, 5 sync lines,
 *           4*al inline Allreduce lines (NC_AR_SLOTS); I = 1 + NC_INL_SLOTS*(1 + il)
 *           inline Bcast lines, 0 when il = 0; 3 lines per reduce slot)
 *   paper: S = ceil(4p/w)*w + q*w + p*s*(w + ceil(f/w)*w)
 */
#ifndef NUMACOLL_LAYOUT_H
#define NUMACOLL_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define NC_CACHE_LINE 64
#define NC_HDR_FIXED 128      /* bytes of nc__seg_hdr before leaders[] */
#define NC_SYNC_LINES 5       /* per rank: barrier arrive + release,
                               * single-copy Bcast post + finish, the
                               * call line (coll/call.c)                */
#define NC_AR_SLOTS 4         /* inline Allreduce line slots per rank:
                               * call n uses slot n % NC_AR_SLOTS, so a
                               * writer whom nobody reads back (a Reduce
                               * non-root, a Scan's rank 0) runs up to 3
                               * calls ahead of its readers and checks
                               * their acks once per few calls         */
#define NC_RED_SLOT_LINES 3   /* per reduce slot: full, done, rel       */
#define NC_INL_SLOTS 4        /* inline Bcast slots per rank: a writer
                               * checks its readers' acks once per
                               * NC_INL_SLOTS - 1 calls at best          */

typedef struct nc__layout_params {
    int      p;
    size_t   page;            /* w */
    unsigned s, q;
    size_t   f;
    size_t   ctrl_stride;     /* bytes per control slot                  */
    size_t   bank_stride;     /* bytes per bank record                   */
    int      sync_lines;      /* cache lines of barrier flags per rank   */
    int      page_per_buffer; /* 1: round each buffer up to pages        */
    int      ar_lines;        /* inline Allreduce lines per rank         */
    unsigned rs;              /* reduce staging slots per rank (0: none) */
    size_t   rf;              /* bytes per reduce staging slot           */
    unsigned il;              /* lines per inline Bcast slot (0: none)   */
} nc__layout_params_t;

typedef struct nc__layout {
    nc__layout_params_t prm;
    size_t hdr_len;           /* header + leaders, whole pages           */
    size_t banks_off, banks_len;
    size_t rank0_off;         /* first per-rank block                    */
    size_t ctrl_len;          /* controls + sync lines, whole pages      */
    size_t sync_off;          /* inside a rank block: first sync line    */
    size_t ar_off;            /* inside a rank block: inline Allreduce   */
    size_t inl_off;           /* inside a rank block: inline Bcast ack
                               * line, then slot records, then slots     */
    size_t red_ctrl_off;      /* inside a rank block: first reduce slot  */
    size_t buf_off;           /* inside a rank block: first buffer       */
    size_t buf_stride;        /* between consecutive buffers             */
    size_t buf_len;           /* all buffers of one rank, whole pages    */
    size_t red_buf_off;       /* inside a rank block: first staging slot */
    size_t red_buf_stride;    /* rf rounded up to a cache line           */
    size_t red_buf_len;       /* all staging slots of one rank, pages    */
    size_t rank_len;          /* ctrl_len + buf_len + red_buf_len        */
    size_t total;
} nc__layout_t;

/* Our layout for (p, page, s, q, f) plus rs reduce staging slots of rf
 * bytes (rs = 0: none). Returns 0, or -1 if a size overflows or an
 * argument is zero (rf may be 0 only with rs = 0). */
int nc__layout_plan(nc__layout_t *l, int p, size_t page, unsigned s,
                    unsigned q, size_t f, unsigned rs, size_t rf);
/* The same with inline Bcast slots of il lines (il = 0: none, as above)
 * and al inline Allreduce lines per call slot (at least 1). */
int nc__layout_plan_il(nc__layout_t *l, int p, size_t page, unsigned s,
                       unsigned q, size_t f, unsigned rs, size_t rf,
                       unsigned il, unsigned al);
/* The seed paper's layout, same Bcast parameters (no reduce area). */
int nc__layout_paper(nc__layout_t *l, int p, size_t page, unsigned s,
                     unsigned q, size_t f);
/* General planner behind both. */
int nc__layout_plan_params(nc__layout_t *l, const nc__layout_params_t *prm);

static inline size_t nc__layout_rank_off(const nc__layout_t *l, int rank)
{
    return l->rank0_off + (size_t)rank * l->rank_len;
}

/* Block i of the segment for placement: 0 header+banks (node of rank 0),
 * 1+r the block of rank r (node of rank r). */
typedef struct nc__block {
    size_t off, len;
    int    owner;             /* rank whose NUMA node the block goes to */
} nc__block_t;

int nc__layout_nblocks(const nc__layout_t *l);
nc__block_t nc__layout_block(const nc__layout_t *l, int i);

#endif
