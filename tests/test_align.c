/*
 * Users' buffers at any alignment, suite "align": Bcast (contiguous and
 * packed), Reduce and Allreduce give byte-exact results whatever the
 * offset of the root's and the readers' buffers from a page boundary, in
 * {0, 1, 8, 16, 48, 64} (what malloc, a struct member or a sub-array hand
 * the library), at sizes around the built-in table's fragment and bank
 * boundaries (Bcast f = 8 KiB, bank = 32 fragments = 256 KiB; Reduce and
 * Allreduce 128 KiB slots, 4 of them) and its algorithm switches; nothing
 * before or after a receive buffer is written and send buffers stay as
 * they were. Then the same with a tuning table forcing each copy variant
 * (copy=auto|libc|vec|nt|ntall), and the tuning parser's handling of copy=.
 *
 * The matrix (see jobs_main), every root: at p = 2 every size at every
 * pair of root/reader offsets; at p = 3 (oversubscribed on a 2-core
 * machine, so slower per call) every pair at one size per boundary kind
 * and every size at a few pairs. All calls of one p run in one team (one
 * fork), so the suite costs a few team creations and its time goes to the
 * calls themselves. The forced copy variants run at p = 2 and 3 at the few
 * pairs.
 *
 * Offsets: the root (Reduce: the root; Allreduce: the rank in the root's
 * place of the loop) uses offset A for its buffers, the reader at distance
 * d from it uses offset B rotated by d - 1 positions, so at p = 3 the
 * second reader sees other pairs than the first while the first sees the
 * pair (A, B) itself. Reduce and Allreduce readers put their receive
 * buffer one offset further than their send buffer.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/copy.h"
#include "coll/team.h"
#include "nct.h"
#include "numacoll.h"
#include "tune/table.h"

#define MiB ((size_t)1 << 20)
#define PAGE ((size_t)4096)
#define GB 128           /* guard bytes checked on each side of a buffer */
#define GUARD_BYTE 0xA5
#define FILL_BYTE 0xEE   /* a receive buffer before the call */

static const size_t offs[] = {0, 1, 8, 16, 48, 64};
#define NOFF ((int)(sizeof offs / sizeof *offs))

/* The pairs (root offset, reader offset), as indexes into offs, of the
 * sizes not run at every pair: (0, 0) both aligned, (16, 16) malloc's
 * against malloc's, and the mismatched (16, 1), (1, 48), (64, 8). */
static const int few_pairs[][2] = {{0, 0}, {3, 3}, {3, 1}, {1, 4}, {5, 2}};
#define NFEW ((int)(sizeof few_pairs / sizeof *few_pairs))

typedef enum { OP_BCAST, OP_PACKED, OP_REDUCE, OP_ALLREDUCE } op_kind_t;
static const char *const op_names[] = {"bcast", "bcast_packed", "reduce",
                                       "allreduce"};

/* One size of a job: bytes (Bcast) or elements (Reduce, Allreduce); all:
 * 1 runs every offset pair, 0 the few. */
typedef struct sz {
    size_t n;
    int all;
} sz_t;

typedef struct job {
    op_kind_t op;
    numacoll_dtype_t dtype;     /* reductions: DOUBLE, INT32 or UINT8 */
    const sz_t *sizes;
    int nsizes;
} job_t;

typedef struct align_case {
    const char *label;
    const char *tuning_text;    /* NULL: the built-in table */
    int copy;                   /* the variant every rule must carry, -1 any */
    const job_t *jobs;
    int njobs;
    int all_pairs_p2;           /* 1: every size at every pair at p = 2 */
} align_case_t;

/* ---- data ---------------------------------------------------------------- */

/* Random bytes every rank generates alike: Bcast data are windows of it,
 * reduction inputs are words of it. */
#define TBL_WORDS ((size_t)1 << 20)
#define TBL_MASK (TBL_WORDS - 1)

typedef struct rank_state {
    uint32_t *tbl;              /* TBL_WORDS random words                 */
    unsigned char *a_send, *a_recv;   /* page-aligned arenas              */
    unsigned char *ref, *expect;      /* aligned scratch: own input, result */
    size_t arena_len;
    numacoll_team_t *team;
    const align_case_t *ac;
    int rank, p;
    uint64_t call;
    int errors;
} rank_state_t;

static void fill_table(uint32_t *t)
{
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < TBL_WORDS; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        t[i] = (uint32_t)(x >> 16);
    }
}

/* Index into the table of rank r's word for element 0 of this call. */
static size_t word0(const rank_state_t *s, int r)
{
    return (size_t)(s->call * 7919u + (uint64_t)r * 40503u);
}

static size_t elem_size(numacoll_dtype_t d) { return numacoll_dtype_size(d); }

/* Rank r's n input elements, into out (64-byte aligned): doubles are
 * integers in [-1000, 1000] so every fold order sums them exactly; integer
 * types take all their bits (sums wrap). */
static void input(const rank_state_t *s, numacoll_dtype_t d, int r, size_t n,
                  void *out)
{
    const uint32_t *t = s->tbl;
    size_t w = word0(s, r);
    for (size_t i = 0; i < n; i++) {
        uint32_t x = t[(w + i) & TBL_MASK];
        if (d == NUMACOLL_DTYPE_DOUBLE)
            ((double *)out)[i] = (double)((int)(x % 2001) - 1000);
        else if (d == NUMACOLL_DTYPE_INT32)
            ((uint32_t *)out)[i] = x;
        else
            ((uint8_t *)out)[i] = (uint8_t)x;
    }
}

/* The SUM of every rank's inputs, computed exactly on the side: integer
 * arithmetic, wrapping like the element type. */
static void result(const rank_state_t *s, numacoll_dtype_t d, size_t n,
                   void *out)
{
    const uint32_t *t = s->tbl;
    size_t w[16];
    for (int r = 0; r < s->p; r++)
        w[r] = word0(s, r);
    for (size_t i = 0; i < n; i++) {
        long sum = 0;
        uint32_t usum = 0;
        for (int r = 0; r < s->p; r++) {
            uint32_t x = t[(w[r] + i) & TBL_MASK];
            sum += (int)(x % 2001) - 1000;
            usum += x;
        }
        if (d == NUMACOLL_DTYPE_DOUBLE)
            ((double *)out)[i] = (double)sum;
        else if (d == NUMACOLL_DTYPE_INT32)
            ((uint32_t *)out)[i] = usum;
        else
            ((uint8_t *)out)[i] = (uint8_t)usum;
    }
}

/* ---- buffers ------------------------------------------------------------- */

/* A buffer of n bytes at page offset off in arena a, with GB guard bytes
 * on each side and fill inside. */
static unsigned char *place(unsigned char *a, size_t off, size_t n, int fill)
{
    unsigned char *b = a + PAGE + off;
    memset(b - GB, GUARD_BYTE, GB);
    memset(b + n, GUARD_BYTE, GB);
    if (fill >= 0)
        memset(b, fill, n);
    return b;
}

static int guards_intact(const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < GB; i++)
        if (b[-1 - (long)i] != GUARD_BYTE || b[n + i] != GUARD_BYTE)
            return 0;
    return 1;
}

/* First differing byte of two n-byte ranges, or n. */
static size_t first_diff(const unsigned char *a, const unsigned char *b,
                         size_t n)
{
    if (memcmp(a, b, n) == 0)
        return n;
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return i;
    return n;
}

typedef struct where {
    op_kind_t op;
    numacoll_dtype_t dtype;
    size_t n, nbytes;
    int root;
    size_t root_off, my_off, my_recv_off;
} where_t;

static void report(rank_state_t *s, const where_t *w, const char *what,
                   size_t at)
{
    if (s->errors++ >= 10)
        return;
    /* one write per line: the ranks share stderr */
    char m[1024];
    int o = snprintf(m, sizeof m, "\nalign [%s] p %d rank %d: %s",
                     s->ac->label, s->p, s->rank, op_names[w->op]);
    if (w->op >= OP_REDUCE)
        o += snprintf(m + o, sizeof m - (size_t)o, " %s x %zu",
                      numacoll_dtype_name(w->dtype), w->n);
    o += snprintf(m + o, sizeof m - (size_t)o,
                  " (%zu bytes) root %d, root offset %zu, my offset %zu",
                  w->nbytes, w->root, w->root_off, w->my_off);
    if (w->op >= OP_REDUCE)
        o += snprintf(m + o, sizeof m - (size_t)o, " (recv %zu)",
                      w->my_recv_off);
    if (at != (size_t)-1)
        snprintf(m + o, sizeof m - (size_t)o, ": %s at byte %zu\n", what, at);
    else
        snprintf(m + o, sizeof m - (size_t)o, ": %s\n", what);
    fputs(m, stderr);
}

/* ---- one call of each kind ------------------------------------------------ */

static int call_failed(rank_state_t *s, const where_t *w, int rc)
{
    if (rc == NUMACOLL_OK)
        return 0;
    char msg[512];
    snprintf(msg, sizeof msg, "returned %s: %s", numacoll_strerror(rc),
             numacoll_team_last_error(s->team));
    report(s, w, msg, (size_t)-1);
    return 1;
}

/* Bcast data of this call: a window of the table that moves every call. */
static const unsigned char *bcast_data(const rank_state_t *s)
{
    return (const unsigned char *)s->tbl + (s->call * 977u) % 4096u;
}

static int do_bcast(rank_state_t *s, where_t *w)
{
    const unsigned char *data = bcast_data(s);
    int root = s->rank == w->root;
    unsigned char *b = place(s->a_send, w->my_off, w->n, root ? -1 : FILL_BYTE);
    if (root)
        memcpy(b, data, w->n);
    int rc = numacoll_bcast(s->team, b, w->n, w->root);
    if (call_failed(s, w, rc))
        return 1;
    size_t at = first_diff(b, data, w->n);
    if (at < w->n)
        report(s, w, root ? "root's buffer changed" : "wrong byte", at);
    if (!guards_intact(b, w->n))
        report(s, w, "guard bytes around the buffer written", (size_t)-1);
    return 0;
}

/* Packed: the callbacks copy between the user buffer and the staging the
 * library hands them, and check that the offsets cover [0, n) in order. */
typedef struct packed_ctx {
    unsigned char *buf;
    size_t n, next;
    int bad;
} packed_ctx_t;

static int pack_cb(void *ctx, size_t off, void *dst, size_t n)
{
    packed_ctx_t *c = ctx;
    if (off != c->next || n > c->n - off)
        c->bad = 1;
    else
        memcpy(dst, c->buf + off, n);
    c->next = off + n;
    return 0;
}

static int unpack_cb(void *ctx, size_t off, const void *src, size_t n)
{
    packed_ctx_t *c = ctx;
    if (off != c->next || n > c->n - off)
        c->bad = 1;
    else
        memcpy(c->buf + off, src, n);
    c->next = off + n;
    return 0;
}

static int do_packed(rank_state_t *s, where_t *w)
{
    const unsigned char *data = bcast_data(s);
    int root = s->rank == w->root;
    unsigned char *b = place(s->a_send, w->my_off, w->n, root ? -1 : FILL_BYTE);
    if (root)
        memcpy(b, data, w->n);
    packed_ctx_t c = {b, w->n, 0, 0};
    int rc = numacoll_bcast_packed(s->team, w->n, w->root, pack_cb, unpack_cb,
                                   &c);
    if (call_failed(s, w, rc))
        return 1;
    if (c.bad || c.next != w->n)
        report(s, w, "callback offsets not 0..n in order", c.next);
    size_t at = first_diff(b, data, w->n);
    if (at < w->n)
        report(s, w, root ? "root's buffer changed" : "wrong byte", at);
    if (!guards_intact(b, w->n))
        report(s, w, "guard bytes around the buffer written", (size_t)-1);
    return 0;
}

static int do_reduction(rank_state_t *s, where_t *w)
{
    const size_t nb = w->nbytes;
    input(s, w->dtype, s->rank, w->n, s->ref);
    unsigned char *send = place(s->a_send, w->my_off, nb, -1);
    unsigned char *recv = place(s->a_recv, w->my_recv_off, nb, FILL_BYTE);
    memcpy(send, s->ref, nb);
    int rc = w->op == OP_REDUCE
                 ? numacoll_reduce(s->team, send, recv, w->n, w->dtype,
                                   NUMACOLL_OP_SUM, w->root)
                 : numacoll_allreduce(s->team, send, recv, w->n, w->dtype,
                                      NUMACOLL_OP_SUM);
    if (call_failed(s, w, rc))
        return 1;
    size_t at = first_diff(send, s->ref, nb);
    if (at < nb)
        report(s, w, "send buffer changed", at);
    if (!guards_intact(send, nb))
        report(s, w, "guard bytes around the send buffer written", (size_t)-1);
    if (w->op == OP_ALLREDUCE || s->rank == w->root) {
        result(s, w->dtype, w->n, s->expect);
        at = first_diff(recv, s->expect, nb);
        if (at < nb)
            report(s, w, "wrong result", at);
    } else {
        /* all FILL_BYTE: the first is, and each equals the next */
        at = nb && recv[0] == FILL_BYTE && memcmp(recv, recv + 1, nb - 1) == 0
                 ? nb
                 : 0;
        while (at < nb && recv[at] == FILL_BYTE)
            at++;
        if (at < nb)
            report(s, w, "a non-root's receive buffer written", at);
    }
    if (!guards_intact(recv, nb))
        report(s, w, "guard bytes around the receive buffer written",
               (size_t)-1);
    return 0;
}

/* ---- the rank's loop -------------------------------------------------------- */

static size_t job_bytes(const job_t *j, size_t n)
{
    return j->op >= OP_REDUCE ? n * elem_size(j->dtype) : n;
}

/* The variant in force for nbytes of collective coll is the one the case
 * asks for: the tuning text did reach the team. */
static int copy_in_force(rank_state_t *s, nc__coll_t coll, size_t nbytes)
{
    if (s->ac->copy < 0)
        return 1;
    return nc__team_choice(s->team, coll, nbytes)->copy == s->ac->copy;
}

static int align_body(const numacoll_bootstrap_t *b, void *arg)
{
    const align_case_t *ac = arg;
    rank_state_t s = {.ac = ac, .rank = b->rank, .p = b->size};
    if (b->size > 16)   /* result() keeps one table position per rank */
        return 13;
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    cfg.timeout_ms = 20000;
    cfg.tuning_text = ac->tuning_text;
    int rc = numacoll_team_create(b, &cfg, &s.team);
    if (rc != NUMACOLL_OK) {
        fprintf(stderr, "align [%s] rank %d: team_create: %s\n", ac->label,
                b->rank, numacoll_strerror(rc));
        return 10;
    }
    if (ac->tuning_text &&
        strcmp(numacoll_team_tuning_source(s.team), "tuning_text") != 0) {
        fprintf(stderr, "align [%s]: tuning source is %s\n", ac->label,
                numacoll_team_tuning_source(s.team));
        return 12;
    }
    size_t max = 0;
    for (int j = 0; j < ac->njobs; j++)
        for (int k = 0; k < ac->jobs[j].nsizes; k++) {
            size_t nb = job_bytes(&ac->jobs[j], ac->jobs[j].sizes[k].n);
            max = nb > max ? nb : max;
        }
    /* a page in front for the guards before offset 0; the table is also
     * the Bcast data, read up to 4 KiB past a window start */
    s.arena_len = PAGE + (offs[NOFF - 1] + max + GB + PAGE - 1) / PAGE * PAGE;
    s.tbl = malloc(TBL_WORDS * sizeof *s.tbl > max + PAGE
                       ? TBL_WORDS * sizeof *s.tbl
                       : max + PAGE);
    s.a_send = aligned_alloc(PAGE, s.arena_len);
    s.a_recv = aligned_alloc(PAGE, s.arena_len);
    s.ref = aligned_alloc(64, (max + 63) / 64 * 64 + 64);
    s.expect = aligned_alloc(64, (max + 63) / 64 * 64 + 64);
    if (!s.tbl || !s.a_send || !s.a_recv || !s.ref || !s.expect)
        return 11;
    fill_table(s.tbl);
    if (max + PAGE > TBL_WORDS * sizeof *s.tbl)
        for (size_t i = TBL_WORDS * sizeof *s.tbl; i < max + PAGE; i++)
            ((unsigned char *)s.tbl)[i] = (unsigned char)(i * 131 + 7);

    int fatal = 0;
    for (int j = 0; j < ac->njobs && !fatal; j++) {
        const job_t *jb = &ac->jobs[j];
        for (int k = 0; k < jb->nsizes && !fatal; k++) {
            where_t w = {.op = jb->op, .dtype = jb->dtype,
                         .n = jb->sizes[k].n};
            w.nbytes = job_bytes(jb, w.n);
            static const nc__coll_t colls[] = {NC_COLL_BCAST, NC_COLL_BCAST,
                                               NC_COLL_REDUCE,
                                               NC_COLL_ALLREDUCE};
            if (!copy_in_force(&s, colls[jb->op], w.nbytes))
                report(&s, &w, "the tuning text's copy= is not in force",
                       (size_t)-1);
            int all = jb->sizes[k].all || (ac->all_pairs_p2 && s.p == 2);
            int npairs = all ? NOFF * NOFF : NFEW;
            for (int pi = 0; pi < npairs && !fatal; pi++) {
                int ia = all ? pi / NOFF : few_pairs[pi][0];
                int ib = all ? pi % NOFF : few_pairs[pi][1];
                for (int root = 0; root < s.p && !fatal; root++, s.call++) {
                    int d = (s.rank - root + s.p) % s.p;
                    int mine = d == 0 ? ia : (ib + d - 1) % NOFF;
                    w.root = root;
                    w.root_off = offs[ia];
                    w.my_off = offs[mine];
                    w.my_recv_off = d == 0 ? offs[ia] : offs[(mine + 1) % NOFF];
                    switch (jb->op) {
                    case OP_BCAST:
                        fatal = do_bcast(&s, &w);
                        break;
                    case OP_PACKED:
                        fatal = do_packed(&s, &w);
                        break;
                    default:
                        fatal = do_reduction(&s, &w);
                        break;
                    }
                }
            }
        }
    }
    free(s.tbl);
    free(s.a_send);
    free(s.a_recv);
    free(s.ref);
    free(s.expect);
    numacoll_team_destroy(s.team);
    return fatal || s.errors ? 1 : 0;
}

/* ---- the matrix ------------------------------------------------------------- */

#define N(a) ((int)(sizeof(a) / sizeof *(a)))

/* Bcast bytes: the inline limit, f - 1 .. f + 1, bank - 1 .. bank + 1
 * (the root reuses bank 0 after the second), and past two banks at an odd
 * size. Every pair at one size of each kind. */
static const sz_t bcast_sizes[] = {
    {56, 0},     {57, 1},     {8191, 0},   {8192, 0},   {8193, 1},
    {262143, 0}, {262144, 0}, {262145, 1}, {600001, 1},
};
/* Packed: the callbacks, not the layer, touch the user buffer; the
 * staging they see changes with the fragment, so the boundaries. */
static const sz_t packed_sizes[] = {
    {57, 0}, {8191, 0}, {8193, 1}, {262145, 0}, {600001, 0},
};
/* Doubles: inline (7 = 56 bytes: one line) up to 191 bytes (at p = 2 up
 * to 255), then at p = 2 allfold up to 16 KiB (2047; adapt's stores from
 * 512), rsag from there (at p = 3 from 24); one
 * 128 KiB slot = 16384; the 4 slots = 65536; past them. */
static const sz_t double_sizes[] = {
    {7, 1},     {8, 0},     {127, 1},   {128, 0},   {1025, 1},
    {16383, 0}, {16384, 0}, {16385, 1}, {65537, 0}, {75001, 0},
};
/* Bytes as elements: every offset is an element boundary. */
static const sz_t uint8_sizes[] = {
    {56, 1},       {57, 0},       {1023, 1},     {1024, 0},
    {8193, 1},     {131071, 0},   {131072, 0},   {131073, 1},
    {524289, 0},   {600001, 0},
};

static const job_t jobs_main[] = {
    {OP_BCAST, 0, bcast_sizes, N(bcast_sizes)},
    {OP_PACKED, 0, packed_sizes, N(packed_sizes)},
    {OP_REDUCE, NUMACOLL_DTYPE_DOUBLE, double_sizes, N(double_sizes)},
    {OP_REDUCE, NUMACOLL_DTYPE_UINT8, uint8_sizes, N(uint8_sizes)},
    {OP_ALLREDUCE, NUMACOLL_DTYPE_DOUBLE, double_sizes, N(double_sizes)},
    {OP_ALLREDUCE, NUMACOLL_DTYPE_UINT8, uint8_sizes, N(uint8_sizes)},
};

static void run_main(int p)
{
    align_case_t ac = {"built-in table", NULL, -1, jobs_main, N(jobs_main),
                       1};
    int rc = nct_run(p, align_body, &ac);
    if (rc)
        fprintf(stderr, "align: built-in table at p = %d failed\n", p);
    CU_ASSERT_EQUAL(rc, 0);
}

static void test_p2(void) { run_main(2); }
static void test_p3(void) { run_main(3); }

/* ---- each copy variant forced -------------------------------------------------- */

/* Every rule of the built-in table, with copy= appended: every data
 * movement of every algorithm takes the variant. */
#define FORCE(v)                                                               \
    "bcast p=1-* size=0-56 alg=inline tree=kary k=2 copy=" v "\n"              \
    "bcast p=1-* size=57-* alg=pipelined f=8K s=64 q=2 tree=kary k=2 copy=" v  \
    "\n"                                                                       \
    "reduce p=1-* size=* alg=pipelined f=128K s=4 k=2 copy=" v "\n"            \
    "allreduce p=1-* size=0-56 alg=inline copy=" v "\n"                        \
    "allreduce p=1-* size=57-1023 alg=reduce_bcast f=128K s=4 k=2 copy=" v     \
    "\n"                                                                       \
    "allreduce p=1-* size=1K-16383 alg=allfold f=4K s=2 copy=" v "\n"      \
    "allreduce p=1-* size=16K-* alg=rsag f=128K s=4 copy=" v "\n"

/* A few pairs per size; 4 MiB + 3 is where auto streams the copy-out. */
static const sz_t v_bcast[] = {{56, 0}, {8193, 0}, {262145, 0},
                               {4 * MiB + 3, 0}};
static const sz_t v_int32[] = {{14, 0},    {15, 0},    {1025, 0},
                               {4097, 0},  {32769, 0}, {150001, 0}};

static const job_t jobs_variant[] = {
    {OP_BCAST, 0, v_bcast, N(v_bcast)},
    {OP_REDUCE, NUMACOLL_DTYPE_INT32, v_int32, N(v_int32)},
    {OP_ALLREDUCE, NUMACOLL_DTYPE_INT32, v_int32, N(v_int32)},
};

static void test_variants(void)
{
    static const struct {
        const char *label, *text;
        int copy;
    } v[] = {
        {"copy=auto", FORCE("auto"), NC_COPY_AUTO},
        {"copy=libc", FORCE("libc"), NC_COPY_LIBC},
        {"copy=vec", FORCE("vec"), NC_COPY_VEC},
        {"copy=nt", FORCE("nt"), NC_COPY_NT},
        {"copy=ntall", FORCE("ntall"), NC_COPY_NTALL},
    };
    for (int i = 0; i < N(v); i++)
        for (int p = 2; p <= 3; p++) {
            align_case_t ac = {v[i].label, v[i].text, v[i].copy,
                               jobs_variant, N(jobs_variant), 0};
            int rc = nct_run(p, align_body, &ac);
            if (rc)
                fprintf(stderr, "align: %s at p = %d failed\n", v[i].label,
                        p);
            CU_ASSERT_EQUAL(rc, 0);
        }
}

/* ---- copy= in the tuning table ---------------------------------------------------- */

static void test_tune_copy_key(void)
{
    nc__tune_table_t t;
    char errs[2048];
    /* an unknown variant: refused, naming every variant */
    const char *bad = "bcast p=1-* size=57-* alg=pipelined f=8K s=64 q=2 "
                      "tree=kary k=2 copy=bogus\n";
    int n = nc__tune_parse(bad, strlen(bad), "t.txt", &t, errs, sizeof errs);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(t.n, 0);
    CU_ASSERT_STRING_EQUAL(errs, "t.txt:1:70: expected a copy variant (auto, "
                                 "libc, vec, nt, ntall, adapt or ntadapt), "
                                 "found 'bogus'\n");
    for (int k = 0; k < NC_COPY_COUNT; k++)
        CU_ASSERT_PTR_NOT_NULL(strstr(errs, nc__copy_name(k)));
    nc__tune_free(&t);
    /* barrier moves no data: no copy= */
    const char *bar = "barrier p=1-* alg=tree k=4 copy=vec\n";
    n = nc__tune_parse(bar, strlen(bar), "t.txt", &t, errs, sizeof errs);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_EQUAL(t.n, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(errs, "copy"));
    nc__tune_free(&t);
    /* each variant on every collective that moves data: parsed, written
     * back in canonical form (auto, the default, not written), parsed to
     * the same choice */
    for (int k = 0; k < NC_COPY_COUNT; k++) {
        char text[2048];
        snprintf(text, sizeof text, "%s",
                 k == NC_COPY_AUTO ? FORCE("auto")
                 : k == NC_COPY_LIBC ? FORCE("libc")
                 : k == NC_COPY_VEC ? FORCE("vec")
                 : k == NC_COPY_NT  ? FORCE("nt")
                 : k == NC_COPY_NTALL ? FORCE("ntall")
                 : k == NC_COPY_ADAPT ? FORCE("adapt")
                                    : FORCE("ntadapt"));
        n = nc__tune_parse(text, strlen(text), "t.txt", &t, errs, sizeof errs);
        if (n)
            fprintf(stderr, "\n%s", errs);
        CU_ASSERT_EQUAL_FATAL(n, 0);
        CU_ASSERT_EQUAL(t.n, 7);
        for (int i = 0; i < t.n; i++) {
            CU_ASSERT_EQUAL(t.rules[i].ch.copy, k);
            char line[256];
            CU_ASSERT(nc__tune_format_rule(&t.rules[i], line, sizeof line) > 0);
            char want[32];
            snprintf(want, sizeof want, " copy=%s", nc__copy_name(k));
            if (k == NC_COPY_AUTO) {
                CU_ASSERT_PTR_NULL(strstr(line, "copy="));
            } else {
                CU_ASSERT_PTR_NOT_NULL(strstr(line, want));
            }
            nc__tune_table_t u;
            int m = nc__tune_parse(line, strlen(line), "again", &u, errs,
                                   sizeof errs);
            CU_ASSERT_EQUAL(m, 0);
            if (m == 0 && u.n == 1) {
                CU_ASSERT_EQUAL(u.rules[0].ch.copy, k);
                CU_ASSERT_EQUAL(u.rules[0].ch.alg, t.rules[i].ch.alg);
                CU_ASSERT_EQUAL(u.rules[0].ch.f, t.rules[i].ch.f);
            }
            nc__tune_free(&u);
        }
        nc__tune_free(&t);
    }
    /* the exact canonical line of copy=nt */
    const char *nt = "bcast p=1-* size=57-* alg=pipelined f=8K s=64 q=2 "
                     "tree=kary k=2 copy=nt";
    n = nc__tune_parse(nt, strlen(nt), "t.txt", &t, errs, sizeof errs);
    CU_ASSERT_EQUAL_FATAL(n, 0);
    CU_ASSERT_EQUAL_FATAL(t.n, 1);
    char line[256];
    nc__tune_format_rule(&t.rules[0], line, sizeof line);
    CU_ASSERT_STRING_EQUAL(line, "bcast      p=1-*  size=57-*     "
                                 "alg=pipelined f=8K s=64 q=2 tree=kary k=2 "
                                 "copy=nt");
    nc__tune_free(&t);
    /* given twice: once per rule, like every key */
    const char *twice = "reduce p=1-* size=* alg=pipelined f=128K s=4 k=2 "
                        "copy=nt copy=vec\n";
    n = nc__tune_parse(twice, strlen(twice), "t.txt", &t, errs, sizeof errs);
    CU_ASSERT_EQUAL(n, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(errs, "once"));
    nc__tune_free(&t);
}

int nct_register_align(void)
{
    static const nct_test_t tests[] = {
        {"tuning table: copy= parsed, refused, written back",
         test_tune_copy_key},
        {"every offset pair, p = 2: bcast, packed, reduce, allreduce",
         test_p2},
        {"every offset pair, p = 3: bcast, packed, reduce, allreduce",
         test_p3},
        {"each copy variant forced by the tuning table", test_variants},
        {NULL, NULL},
    };
    return nct_add_suite("align", tests);
}
