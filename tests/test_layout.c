/* Segment layout planner: pure arithmetic against hand-computed sizes. */
#include "nct.h"
#include "numacoll.h"
#include "shm_seg/layout.h"

#define KiB ((size_t)1024)

/* Every block page-aligned, back to back, covering exactly [0, total). */
static void check_blocks(const nc__layout_t *l)
{
    size_t next = 0;
    for (int i = 0; i < nc__layout_nblocks(l); i++) {
        nc__block_t b = nc__layout_block(l, i);
        CU_ASSERT_EQUAL(b.off, next);
        CU_ASSERT_EQUAL(b.off % l->prm.page, 0);
        CU_ASSERT_EQUAL(b.len % l->prm.page, 0);
        CU_ASSERT_EQUAL(b.owner, i == 0 ? 0 : i - 1);
        next = b.off + b.len;
    }
    CU_ASSERT_EQUAL(next, l->total);
}

static void test_paper_example(void)
{
    /* p = 8 on 2 NUMA nodes, w = 4 KiB, s = 8, f = 8 KiB, q = 2:
     * S = w + q*w + p*s*(w + f) = 4 + 8 + 8*(32 + 64) = 780 KiB. */
    nc__layout_t l;
    CU_ASSERT_EQUAL_FATAL(nc__layout_paper(&l, 8, 4 * KiB, 8, 2, 8 * KiB), 0);
    CU_ASSERT_EQUAL(l.total, 780 * KiB);
    CU_ASSERT_EQUAL(l.hdr_len, 4 * KiB);
    CU_ASSERT_EQUAL(l.banks_len, 8 * KiB);
    CU_ASSERT_EQUAL(l.ctrl_len, 32 * KiB);
    CU_ASSERT_EQUAL(l.buf_len, 64 * KiB);
    check_blocks(&l);
    /* ours packs each control slot in a cache line: 4 + 4 + 8*(4 + 64)
     * (8 slots + 5 sync + 2 inline Allreduce lines fit one page) */
    CU_ASSERT_EQUAL_FATAL(nc__layout_plan(&l, 8, 4 * KiB, 8, 2, 8 * KiB, 0, 0),
                          0);
    CU_ASSERT_EQUAL(l.total, 552 * KiB);
    CU_ASSERT_EQUAL(l.ctrl_len, 4 * KiB);
    CU_ASSERT_EQUAL(l.sync_off, 8 * 64);
    check_blocks(&l);
}

static size_t rup(size_t x, size_t w) { return (x + w - 1) / w * w; }

/* Inside a rank block: Bcast slots, sync lines, inline Allreduce lines and
 * reduce slot records in the control pages, then the Bcast buffers, then
 * the reduce staging slots, each slot cache-line aligned. */
static void check_rank_block(const nc__layout_t *l)
{
    const nc__layout_params_t *m = &l->prm;
    CU_ASSERT_EQUAL(l->sync_off, m->s * 64);
    CU_ASSERT_EQUAL(l->ar_off, l->sync_off + 64 * (size_t)m->sync_lines);
    CU_ASSERT_EQUAL(l->red_ctrl_off, l->ar_off + 64 * (size_t)m->ar_lines);
    CU_ASSERT(l->red_ctrl_off + (size_t)m->rs * 3 * 64 <= l->ctrl_len);
    CU_ASSERT_EQUAL(l->red_buf_off, l->ctrl_len + l->buf_len);
    CU_ASSERT_EQUAL(l->red_buf_off % m->page, 0);
    CU_ASSERT_EQUAL(l->red_buf_stride % 64, 0);
    CU_ASSERT(l->red_buf_stride >= m->rf);
    CU_ASSERT(l->red_buf_stride < m->rf + 64);
    CU_ASSERT(m->rs * l->red_buf_stride <= l->red_buf_len);
    CU_ASSERT_EQUAL(l->red_buf_off + l->red_buf_len, l->rank_len);
}

static void test_general_formula(void)
{
    const size_t pages[] = {4 * KiB, 64 * KiB};
    const int ps[] = {1, 2, 3, 8, 17, 64};
    const unsigned ss[] = {1, 8, 64, 96};
    const size_t fs[] = {64, 1000 / 64 * 64, 8 * KiB, 12 * KiB, 1024 * KiB};
    const unsigned rss[] = {0, 1, 8, 21};
    const size_t rfs[] = {64, 1000, 32 * KiB};
    for (size_t a = 0; a < 2; a++)
        for (size_t b = 0; b < 6; b++)
            for (size_t c = 0; c < 4; c++)
                for (size_t d = 0; d < 5; d++)
                for (size_t e = 0; e < 12; e++) {
                    size_t w = pages[a], f = fs[d], rf = rfs[e % 3];
                    int p = ps[b];
                    unsigned s = ss[c], q = s % 2 ? 1 : 2, rs = rss[e / 3];
                    nc__layout_t l, pl;
                    CU_ASSERT_EQUAL_FATAL(nc__layout_plan(&l, p, w, s, q, f, rs,
                                                          rf), 0);
                    size_t want = rup(128 + 4 * (size_t)p, w) + rup(q * 128, w) +
                                  (size_t)p * (rup(64 * (s + 5 + NC_AR_SLOTS + 3 * rs), w) +
                                               rup(s * f, w) +
                                               rup(rs * rup(rf, 64), w));
                    CU_ASSERT_EQUAL(l.total, want);
                    check_blocks(&l);
                    check_rank_block(&l);
                    CU_ASSERT_EQUAL_FATAL(nc__layout_paper(&pl, p, w, s, q, f), 0);
                    size_t paper = rup(4 * (size_t)p, w) + q * w +
                                   (size_t)p * s * (w + rup(f, w));
                    CU_ASSERT_EQUAL(pl.total, paper);
                    /* the paper has no reduce area: compare Bcast parts */
                    if (rs == 0)
                        CU_ASSERT(l.total <= pl.total);
                }
}

static void test_64k_pages(void)
{
    nc__layout_t l;
    CU_ASSERT_EQUAL_FATAL(nc__layout_plan(&l, 4, 64 * KiB, 64, 2, 8 * KiB, 0,
                                          0), 0);
    CU_ASSERT_EQUAL(l.hdr_len, 64 * KiB);
    CU_ASSERT_EQUAL(l.banks_len, 64 * KiB);
    CU_ASSERT_EQUAL(l.ctrl_len, 64 * KiB);     /* 64 lines + 5 sync + 2 ar */
    CU_ASSERT_EQUAL(l.buf_len, 512 * KiB);
    CU_ASSERT_EQUAL(l.red_buf_len, 0);
    CU_ASSERT_EQUAL(l.total, 128 * KiB + 4 * 576 * KiB);
    check_blocks(&l);
    for (int r = 0; r < 4; r++)
        CU_ASSERT_EQUAL(nc__layout_rank_off(&l, r) % (64 * KiB), 0);
    /* 8 staging slots of 32 KiB: 256 KiB more per rank, same control page */
    CU_ASSERT_EQUAL_FATAL(nc__layout_plan(&l, 4, 64 * KiB, 64, 2, 8 * KiB, 8,
                                          32 * KiB), 0);
    CU_ASSERT_EQUAL(l.ctrl_len, 64 * KiB);
    CU_ASSERT_EQUAL(l.red_buf_len, 256 * KiB);
    CU_ASSERT_EQUAL(l.total, 128 * KiB + 4 * 832 * KiB);
    check_blocks(&l);
    check_rank_block(&l);
}

/* docs/parameters.md: with the built-in table's queue and staging (s = 64,
 * q = 2, f = 8 KiB; reduce s = 4, f = 128 KiB) and one inline line a slot,
 * p * 1032 KiB + 8 KiB on 4 KiB pages; the tune_team suite checks what a
 * default team plans (a third control page at p = 3 and 5-8). */
static void test_defaults_size(void)
{
    nc__layout_t l;
    for (int p = 1; p <= 64; p *= 2) {
        CU_ASSERT_EQUAL_FATAL(nc__layout_plan(&l, p, 4 * KiB, 64, 2, 8192, 4,
                                              128 * KiB), 0);
        CU_ASSERT_EQUAL(l.total, (size_t)p * 1032 * KiB + 8 * KiB);
    }
}

static void test_rejects(void)
{
    nc__layout_t l;
    CU_ASSERT_EQUAL(nc__layout_plan(&l, 0, 4096, 8, 2, 8192, 0, 0), -1);
    CU_ASSERT_EQUAL(nc__layout_plan(&l, 2, 4096, 0, 1, 8192, 0, 0), -1);
    CU_ASSERT_EQUAL(nc__layout_plan(&l, 2, 3000, 8, 2, 8192, 0, 0), -1);
    CU_ASSERT_EQUAL(nc__layout_plan(&l, 2, 4096, 8, 2, 0, 0, 0), -1);
    CU_ASSERT_EQUAL(nc__layout_plan(&l, 2, 4096, 8, 2, 8192, 4, 0), -1);
    /* sizes that overflow size_t are refused, not wrapped */
    CU_ASSERT_EQUAL(nc__layout_plan(&l, 1 << 30, 4096, 65536, 2,
                                    (size_t)1 << 40, 0, 0), -1);
    CU_ASSERT_EQUAL(nc__layout_plan(&l, 1 << 20, 4096, 8, 2, 8192, 65536,
                                    (size_t)1 << 40), -1);
}

int nct_register_layout(void)
{
    static const nct_test_t tests[] = {
        {"paper example is 780 KiB, ours 552 KiB", test_paper_example},
        {"general formula, both layouts", test_general_formula},
        {"64 KiB pages", test_64k_pages},
        {"default size as documented", test_defaults_size},
        {"bad arguments and overflow", test_rejects},
        {NULL, NULL},
    };
    return nct_add_suite("layout", tests);
}
