/* Segment layout planner: pure arithmetic, see layout.h for the picture. */
#include <limits.h>

#include "shm_seg/layout.h"

/* a + b and a * b with overflow reported as SIZE_MAX (never a valid size). */
static size_t add(size_t a, size_t b)
{
    return (a > SIZE_MAX - b) ? SIZE_MAX : a + b;
}

static size_t mul(size_t a, size_t b)
{
    return (b && a > SIZE_MAX / b) ? SIZE_MAX : a * b;
}

static size_t round_up(size_t x, size_t page)
{
    if (x == SIZE_MAX)
        return SIZE_MAX;
    return mul((x + page - 1) / page, page);
}

int nc__layout_plan_params(nc__layout_t *l, const nc__layout_params_t *prm)
{
    if (prm->p < 1 || !prm->page || !prm->s || !prm->q || !prm->f ||
        !prm->ctrl_stride || !prm->bank_stride || prm->sync_lines < 0 ||
        prm->ar_lines < 0 || (prm->rs && !prm->rf) ||
        (prm->page & (prm->page - 1)) != 0)
        return -1;
    *l = (nc__layout_t){.prm = *prm};
    size_t p = (size_t)prm->p;
    size_t hdr = prm->sync_lines ? NC_HDR_FIXED : 0;  /* paper: leaders only */
    l->hdr_len = round_up(add(hdr, mul(4, p)), prm->page);
    l->banks_off = l->hdr_len;
    l->banks_len = round_up(mul(prm->q, prm->bank_stride), prm->page);
    l->rank0_off = add(l->banks_off, l->banks_len);
    l->sync_off = mul(prm->s, prm->ctrl_stride);
    l->ar_off = add(l->sync_off, mul((size_t)prm->sync_lines, NC_CACHE_LINE));
    l->inl_off = add(l->ar_off, mul((size_t)prm->ar_lines, NC_CACHE_LINE));
    size_t inl_lines = prm->il ? add(1, mul(NC_INL_SLOTS, add(1, prm->il))) : 0;
    l->red_ctrl_off = add(l->inl_off, mul(inl_lines, NC_CACHE_LINE));
    l->ctrl_len = round_up(add(l->red_ctrl_off,
                               mul(prm->rs, NC_RED_SLOT_LINES * NC_CACHE_LINE)),
                           prm->page);
    l->buf_off = l->ctrl_len;
    l->buf_stride = prm->page_per_buffer ? round_up(prm->f, prm->page) : prm->f;
    l->buf_len = round_up(mul(prm->s, l->buf_stride), prm->page);
    /* Staging slots start on a page and are cache-line multiples apart, so
     * every slot is 64-byte aligned: any element type can live in it. */
    l->red_buf_off = add(l->buf_off, l->buf_len);
    l->red_buf_stride = round_up(prm->rf, NC_CACHE_LINE);
    l->red_buf_len = round_up(mul(prm->rs, l->red_buf_stride), prm->page);
    l->rank_len = add(add(l->ctrl_len, l->buf_len), l->red_buf_len);
    l->total = add(l->rank0_off, mul(p, l->rank_len));
    return l->total == SIZE_MAX ? -1 : 0;
}

int nc__layout_plan(nc__layout_t *l, int p, size_t page, unsigned s,
                    unsigned q, size_t f, unsigned rs, size_t rf)
{
    return nc__layout_plan_il(l, p, page, s, q, f, rs, rf, 0, 1);
}

int nc__layout_plan_il(nc__layout_t *l, int p, size_t page, unsigned s,
                       unsigned q, size_t f, unsigned rs, size_t rf,
                       unsigned il, unsigned al)
{
    if (!al || al > INT_MAX / NC_AR_SLOTS)
        return -1;
    nc__layout_params_t prm = {
        .p = p, .page = page, .s = s, .q = q, .f = f,
        .ctrl_stride = NC_CACHE_LINE,
        .bank_stride = 2 * NC_CACHE_LINE,  /* op and nreaders apart */
        .sync_lines = NC_SYNC_LINES,
        .page_per_buffer = 0,
        .ar_lines = NC_AR_SLOTS * (int)al,
        .rs = rs, .rf = rf, .il = il,
    };
    return nc__layout_plan_params(l, &prm);
}

int nc__layout_paper(nc__layout_t *l, int p, size_t page, unsigned s,
                     unsigned q, size_t f)
{
    nc__layout_params_t prm = {
        .p = p, .page = page, .s = s, .q = q, .f = f,
        .ctrl_stride = page, .bank_stride = page,
        .sync_lines = 0, .page_per_buffer = 1,
    };
    return nc__layout_plan_params(l, &prm);
}

int nc__layout_nblocks(const nc__layout_t *l)
{
    return 1 + l->prm.p;
}

nc__block_t nc__layout_block(const nc__layout_t *l, int i)
{
    if (i == 0)
        return (nc__block_t){.off = 0, .len = l->rank0_off, .owner = 0};
    return (nc__block_t){.off = nc__layout_rank_off(l, i - 1),
                         .len = l->rank_len, .owner = i - 1};
}
