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
 *                     |   + sync lines (barrier arrive / release)   |  rank 0
 *                     | rank 0 buffers: s fragments of f bytes      |
 *   rank_off(1)       +--------------------------------------------+
 *                     | rank 1 controls + buffers                   |  node of
 *                     ...                                              rank 1
 *   total             +--------------------------------------------+
 *
 * Every block starts and ends on a page boundary because NUMA binding and
 * move_pages() work per page. Our layout packs control slots one cache line
 * each and fragment buffers back to back; the paper's layout (one page per
 * control slot, one page per bank, each buffer rounded up to pages, no sync
 * lines) is available as nc__layout_paper() for comparison:
 *   ours : S = H + ceil(q*128/w)*w + p*(ceil((64s+128)/w)*w + ceil(s*f/w)*w)
 *   paper: S = ceil(4p/w)*w + q*w + p*s*(w + ceil(f/w)*w)
 */
#ifndef NUMACOLL_LAYOUT_H
#define NUMACOLL_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define NC_CACHE_LINE 64
#define NC_HDR_FIXED 128      /* bytes of nc__seg_hdr before leaders[] */
#define NC_SYNC_LINES 2       /* barrier arrive + release, per rank     */

typedef struct nc__layout_params {
    int      p;
    size_t   page;            /* w */
    unsigned s, q;
    size_t   f;
    size_t   ctrl_stride;     /* bytes per control slot                  */
    size_t   bank_stride;     /* bytes per bank record                   */
    int      sync_lines;      /* cache lines of barrier flags per rank   */
    int      page_per_buffer; /* 1: round each buffer up to pages        */
} nc__layout_params_t;

typedef struct nc__layout {
    nc__layout_params_t prm;
    size_t hdr_len;           /* header + leaders, whole pages           */
    size_t banks_off, banks_len;
    size_t rank0_off;         /* first per-rank block                    */
    size_t ctrl_len;          /* controls + sync lines, whole pages      */
    size_t sync_off;          /* inside a rank block: first sync line    */
    size_t buf_off;           /* inside a rank block: first buffer       */
    size_t buf_stride;        /* between consecutive buffers             */
    size_t buf_len;           /* all buffers of one rank, whole pages    */
    size_t rank_len;          /* ctrl_len + buf_len                      */
    size_t total;
} nc__layout_t;

/* Our layout for (p, page, s, q, f). Returns 0, or -1 if a size overflows
 * or an argument is zero. */
int nc__layout_plan(nc__layout_t *l, int p, size_t page, unsigned s,
                    unsigned q, size_t f);
/* The seed paper's layout, same parameters. */
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
