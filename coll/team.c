/*
 * Team creation and destruction, and the public entry points that dispatch
 * to the algorithms. Creation is collective through the caller's bootstrap;
 * every exchange carries a status so that all ranks agree to fail together
 * instead of some waiting forever for a rank that gave up.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "coll/algs.h"
#include "coll/cma.h"
#include "coll/config.h"
#include "coll/gather/gather.h"
#include "coll/op.h"
#include "coll/reduce/reduce.h"
#include "coll/team.h"
#include "coll/wait.h"
#include "shm_seg/seg.h"
#include "topo/topo.h"


/* Gather one status per rank; returns the first failure (lowest rank) or OK.
 * *who gets that rank. */
static int agree(const numacoll_bootstrap_t *b, int mine, int *who)
{
    int32_t send = mine, *all = calloc((size_t)b->size, sizeof *all);
    if (!all)
        return NUMACOLL_ERR_NOMEM;
    int rc = NUMACOLL_OK;
    if (b->allgather(&send, all, sizeof send, b->ctx) != 0) {
        rc = NUMACOLL_ERR_BOOTSTRAP;
        *who = b->rank;
    } else {
        for (int r = 0; r < b->size; r++)
            if (all[r] != NUMACOLL_OK) {
                rc = all[r];
                *who = r;
                break;
            }
    }
    free(all);
    return rc;
}

/* Why this thread's last team creation failed (numacoll_team_create_error). */
static _Thread_local char create_error[256];

/* Record why creation failed and say it (verbose >= 1) on the rank that
 * found it; msg "" where this rank only knows which rank failed. */
static void create_says(const numacoll_team_t *t, int status, int who,
                        const char *msg)
{
    if (msg[0])
        snprintf(create_error, sizeof create_error, "%s", msg);
    else
        snprintf(create_error, sizeof create_error, "numacoll: team creation "
                 "failed on rank %d: %s", who, numacoll_strerror(status));
    /* no room is said once per process: a program that makes hundreds
     * of communicators would otherwise say it for each */
    static atomic_int said_room;
    const int room = status == NUMACOLL_ERR_BUDGET ||
                     status == NUMACOLL_ERR_NOMEM;
    if (t->cfg.verbose >= 1 && who == t->rank && msg[0] &&
        (!room || atomic_exchange_explicit(&said_room, 1,
                                           memory_order_relaxed) == 0))
        fprintf(stderr, "%s%s\n", msg,
                room ? " (said once per process)" : "");
}

/* The one sentence for a /dev/shm too full for the segment, built from
 * exchanged numbers so that every rank reports the same. */
static void shm_full(char *msg, size_t len, size_t total, int who,
                     uint64_t need, uint64_t avail, int err)
{
    snprintf(msg, len, "numacoll: " NC_SEG_DIR " cannot hold the team's "
             "segment of %zu bytes: rank %d could not reserve %llu bytes of "
             "it (%s); %llu bytes free in " NC_SEG_DIR, total, who,
             (unsigned long long)need, strerror(err),
             (unsigned long long)avail);
}

/* Bind block blk to the node of its owner, then reserve the first resv
 * bytes of it, which tmpfs allocates under that binding (shm_seg/seg.h);
 * the rest comes when the team grows (coll/grow.c), under the same
 * binding. Own block: record the placement. Returns 0 or the
 * reservation's -errno. */
static int bind_and_reserve(numacoll_team_t *t, const nc__block_t *blk,
                            int fd, int own, size_t resv)
{
    int degraded = 0;
    int intended = t->loc[blk->owner].numa;
    int node = nc__seg_effective_node(intended, &degraded);
    int brc = nc__seg_bind(t->base + blk->off, blk->len, node);
    if (brc != 0 && t->cfg.verbose >= 1)
        fprintf(stderr, "numacoll: rank %d: cannot bind %zu bytes to NUMA "
                "node %d (%s); the kernel's default policy places them\n",
                t->rank, blk->len, node, strerror(-brc));
    if (own) {
        numacoll_placement_t *pl = &t->placement;
        pl->intended_node = intended;
        pl->bound_node = brc == 0 ? node : -1;
        pl->degraded = degraded;
        pl->block_pages = blk->len / t->layout.prm.page;
        if (degraded && t->cfg.verbose >= 1)
            fprintf(stderr, "numacoll: warning: rank %d: NUMA node %d does "
                    "not exist on this machine; its queue is placed on node "
                    "%d\n", t->rank, intended, node);
    }
    int rc = nc__seg_reserve(fd, blk->off, resv);
    if (rc == -EOPNOTSUPP) {
        /* nothing to hold the room: the statvfs check at creation is all */
        if (t->cfg.verbose >= 2)
            fprintf(stderr, "numacoll: rank %d: " NC_SEG_DIR " cannot reserve "
                    "memory (fallocate unsupported)\n", t->rank);
        rc = 0;
    }
    return rc;
}

/* This rank's share of the initial state, the same for a fresh segment and
 * a reused one: its control pages zeroed (on a fresh file, which reads as
 * zeros, that is their first touch) and, on rank 0, the header and banks;
 * then, on a fresh segment, the control pages verified with move_pages (a
 * reused one keeps the placement found then). Buffers and staging
 * slots hold no state and stay untouched until used. */
static void init_shared(numacoll_team_t *t, int verify)
{
    nc__block_t blk = nc__layout_block(&t->layout, 1 + t->rank);
    unsigned char *ctrl = t->base + blk.off;
    memset(ctrl, 0, t->layout.ctrl_len);
    numacoll_placement_t *pl = &t->placement;
    int degraded;
    int node = nc__seg_effective_node(pl->intended_node, &degraded);
    /* a reused segment's pages stay where they were verified (move_pages
     * is a system call over every page: a good part of a reuse's cost) */
    if (verify)
        nc__seg_verify(ctrl, t->layout.ctrl_len, node, &pl->pages,
                       &pl->pages_on_node, &pl->pages_unknown);
    if (verify && t->cfg.verbose >= 2)
        fprintf(stderr, "numacoll: rank %d: %zu control pages of a %zu-page "
                "block on node %d: %zu there, %zu unknown\n", t->rank,
                pl->pages, pl->block_pages, node, pl->pages_on_node,
                pl->pages_unknown);
    t->hdr = (nc__seg_hdr_t *)t->base;
    t->banks = (nc__bank_t *)(t->base + t->layout.banks_off);
    if (t->rank != 0)
        return;
    memset(t->base, 0, t->layout.rank0_off);
    t->hdr->p = (uint32_t)t->p;
    t->hdr->q = t->q_max;
    t->hdr->s = t->layout.prm.s;
    t->hdr->f = t->layout.prm.f;
    int32_t *leaders = (int32_t *)(t->base + NC_HDR_FIXED);
    for (int r = 0; r < t->p; r++)
        leaders[r] = t->leaders[r];
    for (unsigned k = 0; k < t->q_max; k++)
        atomic_store_explicit(&t->banks[k].op, NC_OP_NONE,
                              memory_order_relaxed);
    t->hdr->magic = NC_SEG_MAGIC;
}


/* ---- the tuning table ------------------------------------------------ */

/* The last tuning file read, kept per process so that the many teams of an
 * MPI job read and parse it once; read again when stat says it changed
 * (another file, size, modification time, or it appeared or went away).
 * The warning about a file that cannot be used (missing, not a regular
 * file, too large, with errors) is printed once per process for each path
 * and verdict, however many teams ask: remembered as a hash of both, the
 * last WARNED_MAX of them, so a file edited into new problems is reported
 * again. */
enum { WARNED_MAX = 64 };
static struct {
    pthread_mutex_t lock;
    char path[4096];
    int stat_err;               /* errno of stat(path), 0: it succeeded */
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    nc__tune_table_t tab;
    int nerr;
    char errs[4096];
    uint64_t warned[WARNED_MAX];
    unsigned nwarned;
} file_cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t fnv(uint64_t h, const void *p, size_t n);

/* Whether the cache holds path as stat (error serr) sees it now. */
static int file_cache_fresh(const char *path, int serr, const struct stat *st)
{
    if (strcmp(file_cache.path, path) != 0 || serr != file_cache.stat_err)
        return 0;
    return serr != 0 ||
           (st->st_dev == file_cache.dev && st->st_ino == file_cache.ino &&
            st->st_size == file_cache.size &&
            st->st_mtim.tv_sec == file_cache.mtime.tv_sec &&
            st->st_mtim.tv_nsec == file_cache.mtime.tv_nsec);
}

/* True the first time this process sees this path with these errors. */
static int file_cache_first_warning(const char *path)
{
    uint64_t h = fnv(0xcbf29ce484222325ULL, path, strlen(path) + 1);
    h = fnv(h, file_cache.errs, strlen(file_cache.errs));
    unsigned n = file_cache.nwarned < WARNED_MAX ? file_cache.nwarned
                                                 : WARNED_MAX;
    for (unsigned i = 0; i < n; i++)
        if (file_cache.warned[i] == h)
            return 0;
    file_cache.warned[file_cache.nwarned++ % WARNED_MAX] = h;
    return 1;
}

/* A private copy of the cached table: another thread's team may reload the
 * cache while this one resolves it. 0, or -1 when out of memory. */
static int copy_table(const nc__tune_table_t *from, nc__tune_table_t *to)
{
    *to = (nc__tune_table_t){0};
    snprintf(to->source, sizeof to->source, "%s", from->source);
    to->levels = from->levels;
    to->levels_line = from->levels_line;
    if (from->n == 0)
        return 0;
    to->rules = malloc((size_t)from->n * sizeof *to->rules);
    if (!to->rules)
        return -1;
    memcpy(to->rules, from->rules, (size_t)from->n * sizeof *to->rules);
    to->n = to->cap = from->n;
    return 0;
}

/* The table named by cfg (tuning_text, tuning_file, $NUMACOLL_TUNING_FILE),
 * or the built-in one. *tmp receives a table parsed from tuning_text, or a
 * copy of the file's, which the caller frees. A rejected table gives the
 * built-in one, with a warning naming every problem (rank 0, verbose >= 1;
 * for a file, once per process) and the first one in the team's
 * tuning_source. */
static const nc__tune_table_t *pick_table(numacoll_team_t *t,
                                          nc__tune_table_t *tmp)
{
    const char *path = t->cfg.tuning_file;
    if (!path || !*path)
        path = getenv("NUMACOLL_TUNING_FILE");
    if (t->cfg.tuning_text) {
        char errs[4096];
        int n = nc__tune_parse(t->cfg.tuning_text, strlen(t->cfg.tuning_text),
                               "tuning_text", tmp, errs, sizeof errs);
        if (n == 0) {
            snprintf(t->tune_source, sizeof t->tune_source, "tuning_text");
            return tmp;
        }
        if (t->cfg.verbose >= 1 && t->rank == 0)
            fprintf(stderr, "numacoll: tuning_text rejected (%d problem%s); "
                    "using the built-in table:\n%s\n", n, n == 1 ? "" : "s",
                    errs);
        snprintf(t->tune_source, sizeof t->tune_source,
                 "built-in (tuning_text rejected)");
        return nc__tune_builtin();
    }
    if (!path || !*path) {
        snprintf(t->tune_source, sizeof t->tune_source, "built-in");
        return nc__tune_builtin();
    }
    pthread_mutex_lock(&file_cache.lock);
    /* stat never blocks, whatever the path names; nc__tune_load opens it
     * without blocking and refuses all but a bounded regular file. */
    struct stat st;
    int serr = stat(path, &st) == 0 ? 0 : (errno ? errno : EIO);
    if (!file_cache_fresh(path, serr, &st)) {
        nc__tune_free(&file_cache.tab);
        snprintf(file_cache.path, sizeof file_cache.path, "%s", path);
        file_cache.stat_err = serr;
        file_cache.dev = serr ? 0 : st.st_dev;
        file_cache.ino = serr ? 0 : st.st_ino;
        file_cache.size = serr ? -1 : st.st_size;
        file_cache.mtime = serr ? (struct timespec){0, 0} : st.st_mtim;
        file_cache.nerr = nc__tune_load(path, &file_cache.tab, file_cache.errs,
                                        sizeof file_cache.errs);
    }
    const nc__tune_table_t *tab = tmp;
    if (file_cache.nerr != 0) {
        if (t->cfg.verbose >= 1 && t->rank == 0 &&
            file_cache_first_warning(path))
            fprintf(stderr, "numacoll: tuning file %s rejected (%d problem%s); "
                    "using the built-in table:\n%s\n", path, file_cache.nerr,
                    file_cache.nerr == 1 ? "" : "s", file_cache.errs);
        /* the first problem says why, without repeating the path */
        const char *why = file_cache.errs;
        size_t plen = strlen(path);
        if (strncmp(why, path, plen) == 0 && why[plen] == ':' &&
            why[plen + 1] == ' ')
            why += plen + 2;
        int wlen = (int)strcspn(why, "\n");
        snprintf(t->tune_source, sizeof t->tune_source,
                 "built-in (%.120s rejected: %.*s%s)", path, wlen, why,
                 file_cache.nerr > 1 ? ", ..." : "");
        tab = nc__tune_builtin();
    } else if (copy_table(&file_cache.tab, tmp) != 0) {
        /* every rank compares its rules, so a rank that ran out of memory
         * here makes team creation fail instead of mixing tables */
        snprintf(t->tune_source, sizeof t->tune_source,
                 "built-in (no memory to copy %.200s)", path);
        tab = nc__tune_builtin();
    } else {
        snprintf(t->tune_source, sizeof t->tune_source, "%s", path);
    }
    pthread_mutex_unlock(&file_cache.lock);
    return tab;
}

/* Parameters set in the config replace the rule's: Bcast's from frag_size,
 * queue_depth, banks, tree, radix, relay (pipelined rules); Reduce's, Allreduce's and the
 * gathers' (they share the staging slots) from the reduce_* ones;
 * Barrier's from barrier_radix. Unset ones are 0 (tree -1). */
static void override(const numacoll_config_t *c, nc__coll_t coll,
                     nc__choice_t *ch)
{
    size_t f = 0;
    unsigned s = 0, q = 0, k = 0;
    int tree = -1;
    switch (coll) {
    case NC_COLL_BCAST:
        f = c->frag_size, s = c->queue_depth, q = c->banks, k = c->radix;
        tree = c->tree;
        if (c->relay >= 0 && ch->alg == NC_ALG_BCAST_PIPELINED)
            ch->relay = (unsigned)c->relay;
        break;
    case NC_COLL_REDUCE:
    case NC_COLL_ALLREDUCE:
    case NC_COLL_ALLGATHER:   /* the staging slots are the Reduce's */
    case NC_COLL_GATHER:
    case NC_COLL_SCATTER:
    case NC_COLL_ALLTOALL:
    case NC_COLL_REDUCE_SCATTER:
    case NC_COLL_SCAN:
    case NC_COLL_EXSCAN:
        f = c->reduce_frag_size, s = c->reduce_depth, k = c->reduce_radix;
        break;
    case NC_COLL_BARRIER:
        k = c->barrier_radix;
        break;
    default:
        break;
    }
    if (f && nc__alg_takes((int)ch->alg, "f"))
        ch->f = f;
    if (s && nc__alg_takes((int)ch->alg, "s"))
        ch->s = s;
    if (q && nc__alg_takes((int)ch->alg, "q"))
        ch->q = q;
    if (k && nc__alg_takes((int)ch->alg, "k"))
        ch->k = k;
    if (tree >= 0 && nc__alg_takes((int)ch->alg, "tree"))
        ch->tree = tree;
}

/* Build tree (kind, k, hier, lt) unless the team has it already; hier is
 * the radix between heads, 0 for none, lt the rule's level trees
 * (nc__team_tree_t). */
static int want_tree(numacoll_team_t *t, int kind, int k, int hier,
                     const uint16_t *lt)
{
    if (nc__team_tree(t, kind, k, hier, lt))
        return NUMACOLL_OK;
    nc__team_tree_t *n = realloc(t->trees, (size_t)(t->ntrees + 1) * sizeof *n);
    if (!n)
        return NUMACOLL_ERR_NOMEM;
    t->trees = n;
    nc__team_tree_t *e = &n[t->ntrees];
    *e = (nc__team_tree_t){.kind = kind, .k = k, .hier = hier};
    nc__team_tree_key(kind, hier, lt, e->lt);
    /* numa trees, and every hier one, follow the team's levels */
    int rc = hier || kind == NUMACOLL_TREE_NUMA
                 ? nc__tree_init_spec(&e->tree, t->p, k, hier, e->lt,
                                      t->cfg.levels, t->doms)
                 : nc__tree_init(&e->tree, kind, t->p, k, t->loc);
    if (rc == NUMACOLL_OK)
        t->ntrees++;
    return rc;
}



/* FNV-1a, to check that every rank resolved the same rules. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* What a single-copy rule runs where single copy is not possible: the
 * pipelined geometry of the built-in table's small-message rule (8 KiB x 64
 * in 2 banks; docs/tuning.md says so) with the rule's tree and copy. It
 * replaces the rule before the segment is sized, so its buffers exist. */
static nc__choice_t cma_fallback(const nc__choice_t *ch)
{
    nc__choice_t fb = {.alg = NC_ALG_BCAST_PIPELINED, .f = 8192, .s = 64,
                       .q = 2, .tree = ch->tree, .k = ch->k, .copy = ch->copy};
    memcpy(fb.lt, ch->lt, sizeof fb.lt);
    return fb;
}

/* process_vm_readv works when this process may ptrace-attach the other:
 * same user, Yama's ptrace_scope, no seccomp filter, one pid namespace.
 * Each rank reads its right neighbour's probe word, whose address came
 * with the locality exchange (ASLR puts it elsewhere in every process);
 * the outcomes travel with the setup exchange, and all ranks take the same
 * verdict from them (cma_verdict). No exchange of its own. */
static const uint64_t cma_probe_word = 0x6e632d636d612d31ULL;

/* 0 when the read of the neighbour's word worked, its errno when it
 * failed, -1 when it read other bytes; 0 too when single copy is not
 * wanted (the verdict says why). */
static int32_t cma_read(const numacoll_team_t *t, uint64_t peer_addr)
{
    if (!t->cfg.single_copy || t->p < 2)
        return 0;
    const int peer = (t->rank + 1) % t->p;
    uint64_t got = 0;
    struct iovec l = {&got, sizeof got},
                 r = {(void *)(uintptr_t)peer_addr, sizeof got};
    ssize_t n = process_vm_readv(t->loc[peer].pid, &l, 1, &r, 1, 0);
    return n == (ssize_t)sizeof got ? (got == cma_probe_word ? 0 : -1)
                                    : (n < 0 ? errno : -1);
}

void nc__tune_no_cma(nc__tune_team_t *tt, size_t rf_max)
{
    for (int i = 0; i < tt->n[NC_COLL_BCAST]; i++) {
        nc__choice_t *ch = &tt->e[NC_COLL_BCAST][i].ch;
        if (ch->alg == NC_ALG_BCAST_CMA)
            *ch = cma_fallback(ch);
    }
    static const int ga[][3] = {   /* collective, cma, staged */
        {NC_COLL_ALLGATHER, NC_ALG_ALLGATHER_CMA, NC_ALG_ALLGATHER_STAGED},
        {NC_COLL_GATHER, NC_ALG_GATHER_CMA, NC_ALG_GATHER_STAGED},
        {NC_COLL_SCATTER, NC_ALG_SCATTER_CMA, NC_ALG_SCATTER_STAGED},
        {NC_COLL_ALLTOALL, NC_ALG_ALLTOALL_CMA, NC_ALG_ALLTOALL_STAGED}};
    for (size_t g = 0; g < sizeof ga / sizeof *ga; g++)
        for (int i = 0; i < tt->n[ga[g][0]]; i++) {
            nc__choice_t *ch = &tt->e[ga[g][0]][i].ch;
            if ((int)ch->alg == ga[g][1]) {
                ch->alg = (nc__alg_t)ga[g][2];
                if (ch->f > rf_max)
                    ch->f = rf_max;
            }
        }
}

/* Whether any of the team's rules names single copy. */
static int has_cma_rule(const numacoll_team_t *t)
{
    for (int c = 0; c < NC_COLL_COUNT; c++)
        for (int i = 0; i < t->tune.n[c]; i++) {
            if (nc__alg_single_copy((int)t->tune.e[c][i].ch.alg))
                return 1;
        }
    return 0;
}

/* This rank's speed probe for the verdict (nc__cma_cost), taken only where
 * it can matter: single_copy = 1, the permission probe passed here, and a
 * rule names cma (the rules are alike on every rank). 0: not taken. */
static uint32_t cma_speed(const numacoll_team_t *t, int32_t cma_err)
{
    if (t->cfg.single_copy != 1 || t->p < 2 || cma_err || !has_cma_rule(t))
        return 0;
    return nc__cma_cost();
}

/* err[r], cost[r] (stride bytes apart): rank r's cma_read and cma_speed.
 * Without single copy every Bcast rule that names it runs as pipelined
 * copy-in/copy-out (cma_fallback), whose geometry tune_setup has already
 * made room for, and every gather's as staged with its s and f, cut to
 * the staging slots (sized for the other rules: a single-copy f is no
 * slot). */
static void cma_verdict(numacoll_team_t *t, const int32_t *err,
                        const uint32_t *cost, size_t stride)
{
    const int p = t->p;
    t->cma_ok = 0;
    if (!t->cfg.single_copy)
        snprintf(t->cma_why, sizeof t->cma_why,
                 "the parameter single_copy is 0");
    else if (p < 2)
        snprintf(t->cma_why, sizeof t->cma_why, "a team of one rank");
    else
        t->cma_ok = 1;
    for (int i = 0; i < p && t->cma_ok; i++) {
        int32_t e = *(const int32_t *)((const char *)err + (size_t)i * stride);
        if (e) {
            t->cma_ok = 0;
            snprintf(t->cma_why, sizeof t->cma_why,
                     "process_vm_readv from rank %d into rank %d (pid %d): %s",
                     (i + 1) % p, i, (int)t->loc[(i + 1) % p].pid,
                     e > 0 ? strerror(e) : "read other bytes than written");
        }
    }
    const int slow = t->cma_ok ? nc__cma_too_slow(cost, stride, p) : -1;
    if (slow >= 0) {
        const uint32_t c = *(const uint32_t *)((const char *)cost +
                                                (size_t)slow * stride);
        t->cma_ok = 0;
        snprintf(t->cma_why, sizeof t->cma_why,
                 "too slow here: on rank %d the kernel's copy took %u.%02ux "
                 "a memcpy (probe of %zu KiB at team creation; single copy "
                 "pays up to %ux, copy-in/copy-out copying twice; "
                 "single_copy = 2 uses it anyway)", slow, c / 100, c % 100,
                 NC_CMA_PROBE_BYTES >> 10, NC_CMA_COST_MAX / 100);
    }
    if (t->cma_ok)
        return;
    nc__tune_no_cma(&t->tune, t->rf_max);
    if (t->cfg.single_copy && t->cfg.verbose >= 2 && t->rank == 0)
        fprintf(stderr, "numacoll: single copy unavailable (%s): cma rules "
                "run copy-in/copy-out (Bcast pipelined, the gathers "
                "staged)\n", t->cma_why);
}


/*
 * Resolve the team's table for its p and NUMA shape, apply the config's
 * overrides, check what they combine to, build every tree the rules name
 * and size the geometry for the largest rule: the Bcast buffers are laid
 * out as *s_out buffers of *f_out bytes. *hash identifies the result.
 * nodes, ppn: NUMA nodes the team spans, most ranks on one of them; the
 * other levels' shapes come from t->doms.
 */
static int tune_setup(numacoll_team_t *t, unsigned nodes, unsigned ppn,
                      uint64_t *hash, unsigned *s_out, size_t *f_out,
                      char *msg, size_t msglen)
{
    nc__tune_table_t tmp = {0};
    const nc__tune_table_t *tab = pick_table(t, &tmp);
    /* The table's level list (numacoll-tune measured it) replaces the
     * parameter's default only: a team asked for other levels keeps
     * them. Before any tree is built, Barrier's included. */
    if (tab->levels && t->cfg.levels == NUMACOLL_LEVEL_NUMA)
        t->cfg.levels = tab->levels;
    /* The shape at every level the machine reports, whatever `levels`
     * names: a rule may key on the L3 shape of a team whose trees follow
     * NUMA only. The doms came with the locality exchange, so every rank
     * sees the same shape. */
    nc__tune_shape_t sh = {.p = (unsigned)t->p, .nodes = nodes, .ppn = ppn,
                           .over = (unsigned)t->oversub};
    for (int l = NUMACOLL_LEVEL_L1; l < NUMACOLL_LEVEL_END; l++)
        if (l != NUMACOLL_LEVEL_NUMA)
            sh.dom[l] = nc__topo_level_shape(t->doms, t->p, l, &sh.rpd[l]);
    int rc = nc__tune_resolve_shape(tab, &sh, &t->tune)
                 ? NUMACOLL_ERR_NOMEM : NUMACOLL_OK;
    nc__tune_free(&tmp);
    if (rc != NUMACOLL_OK)
        return rc;

    size_t buf_max = 64;
    unsigned s_max = 1;
    t->q_max = 1;
    t->rs_max = 1;
    t->rf_max = 64;
    t->geo_f = 0;
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv(h, &t->cfg.levels, sizeof t->cfg.levels);
    for (int c = 0; c < NC_COLL_COUNT && rc == NUMACOLL_OK; c++) {
        for (int i = 0; i < t->tune.n[c] && rc == NUMACOLL_OK; i++) {
            nc__tune_entry_t *e = &t->tune.e[c][i];
            nc__choice_t *ch = &e->ch;
            override(&t->cfg, (nc__coll_t)c, ch);
            h = fnv(h, &e->lo, sizeof e->lo);
            h = fnv(h, &e->hi, sizeof e->hi);
            /* field by field: the struct's padding is not the same bytes
             * on every rank */
            int alg = (int)ch->alg;
            h = fnv(h, &alg, sizeof alg);
            h = fnv(h, &ch->f, sizeof ch->f);
            h = fnv(h, &ch->s, sizeof ch->s);
            h = fnv(h, &ch->q, sizeof ch->q);
            h = fnv(h, &ch->tree, sizeof ch->tree);
            h = fnv(h, &ch->k, sizeof ch->k);
            h = fnv(h, &ch->ku, sizeof ch->ku);
            h = fnv(h, ch->lt, sizeof ch->lt);
            h = fnv(h, &ch->relay, sizeof ch->relay);
            h = fnv(h, &ch->copy, sizeof ch->copy);
            /* ranks that differ here would split between numacoll and the
             * host's component */
            h = fnv(h, &ch->decline, sizeof ch->decline);
            if (ch->decline)
                t->decline_mask |= 1u << c;
            if (nc__alg_takes((int)ch->alg, "q") &&
                (ch->q > ch->s || ch->s % ch->q != 0)) {
                snprintf(msg, msglen, "numacoll: %s rule for %zu..%zu bytes "
                         "(%.100s line %d), with the parameters set: s = %u "
                         "buffers is not a multiple of q = %u banks",
                         nc__coll_name((nc__coll_t)c), e->lo, e->hi,
                         e->builtin ? "built-in" : t->tune_source, e->line,
                         ch->s, ch->q);
                rc = NUMACOLL_ERR_ARG;
                break;
            }
            /* A single-copy rule is sized and given its tree as the
             * pipelined rule it becomes where single copy fails: the
             * verdict comes after the layout is agreed (cma_verdict). */
            nc__choice_t fb;
            if (c == NC_COLL_BCAST && ch->alg == NC_ALG_BCAST_CMA) {
                fb = cma_fallback(ch);
                ch = &fb;
            }
            if (c == NC_COLL_BCAST) {
                if (nc__alg_takes((int)ch->alg, "tree"))
                    rc = want_tree(t, ch->tree, (int)ch->k, 0, ch->lt);
                if (nc__alg_takes((int)ch->alg, "q")) {
                    if (ch->s > s_max)
                        s_max = ch->s;
                    if (ch->q > t->q_max)
                        t->q_max = ch->q;
                    if (ch->s * ch->f > buf_max)
                        buf_max = ch->s * ch->f;
                    if (!t->geo_f) {
                        t->geo_f = ch->f;
                        t->geo_s = ch->s;
                        t->geo_q = ch->q;
                    }
                }
            } else if (c != NC_COLL_BARRIER) {
                /* Reduce, Allreduce and the gathers stage in one set of
                 * slots (coll/reduce/reduce.h): sized for all of them */
                if (nc__alg_takes((int)ch->alg, "k")) {
                    rc = want_tree(t, NUMACOLL_TREE_NUMA, (int)ch->k,
                                   (int)(ch->ku ? ch->ku : ch->k), ch->lt);
                    if (rc == NUMACOLL_OK)
                        rc = want_tree(t, NUMACOLL_TREE_KNOMIAL, (int)ch->k, 0,
                                       NULL);
                }
                if (nc__alg_takes((int)ch->alg, "s") && ch->s > t->rs_max)
                    t->rs_max = ch->s;
                /* a single-copy gather's f is the bytes of one system
                 * call, no slot (its staged fallback is cut to the slots:
                 * cma_verdict) */
                if (nc__alg_takes((int)ch->alg, "f") && ch->f > t->rf_max &&
                    !nc__ga_cma((int)ch->alg))
                    t->rf_max = ch->f;
            }
        }
    }
    if (rc != NUMACOLL_OK)
        return rc;
    if (!t->geo_f) {            /* no pipelined rule: keep one bank */
        t->geo_f = 64;
        t->geo_s = t->geo_q = 1;
    }
    /* Inline slots hold the largest inline rule's size (a 0-byte Bcast
     * still needs one line): the rule's size range is the limit. */
    size_t inl = nc__team_rule_max(t, NC_COLL_BCAST, NC_ALG_BCAST_INLINE);
    t->inl_max = inl;
    t->inl_lines = inl ? (unsigned)((inl + NC_INL_PAYLOAD - 1) /
                                    NC_INL_PAYLOAD) : 1;
    /* The buffer area holds the largest s*f; the layout plans it as s_max
     * buffers of f_eff bytes, the calls cut it up as their rule says. */
    size_t f_eff = (buf_max + s_max - 1) / s_max;
    f_eff = (f_eff + NC_CACHE_LINE - 1) / NC_CACHE_LINE * NC_CACHE_LINE;
    *s_out = s_max;
    *f_out = f_eff;
    int mc = 0;
    for (int i = 0; i < t->ntrees; i++) {
        int n = nc__tree_max_children(&t->trees[i].tree);
        if (n > mc)
            mc = n;
    }
    t->kin_stride = mc + 1;
    t->children = malloc((size_t)NC_KIN_WAYS * (size_t)t->kin_stride *
                         sizeof *t->children);
    if (!t->children)
        return NUMACOLL_ERR_NOMEM;
    if (t->cfg.verbose >= 2 && t->rank == 0) {
        char lv[64], hs[160];
        numacoll_levels_format(t->cfg.levels, lv, sizeof lv);
        nc__team_hierarchy(t, hs, sizeof hs);
        fprintf(stderr, "numacoll: levels %s: %s\n", lv, hs);
    }
    if (t->cfg.verbose >= 3 && t->rank == 0)
        for (int c = 0; c < NC_COLL_COUNT; c++)
            for (int i = 0; i < t->tune.n[c]; i++) {
                const nc__tune_entry_t *e = &t->tune.e[c][i];
                fprintf(stderr, "numacoll: %s %zu..%zu bytes: %s f=%zu s=%u "
                        "q=%u tree=%d k=%u ku=%u relay=%u decline=%u (%s line "
                        "%d)\n",
                        nc__coll_name((nc__coll_t)c), e->lo, e->hi,
                        nc__algs[e->ch.alg].name, e->ch.f, e->ch.s, e->ch.q,
                        e->ch.tree, e->ch.k, e->ch.ku, e->ch.relay,
                        e->ch.decline,
                        e->builtin ? "built-in" : t->tune_source, e->line);
            }
    *hash = h;
    return NUMACOLL_OK;
}

static void team_free(numacoll_team_t *t)
{
    if (!t)
        return;
    /* A created team's mapping may serve a later team of the same
     * processes; not an aborted one's (a rank of it is gone or gave up, so
     * its key will hardly come again), nor a half-created one's. */
    if (t->base && t->pool_ok &&
        atomic_load_explicit(&t->hdr->abort_status, memory_order_acquire) ==
            0) {
        nc__seg_pooled_t seg = {.id = {t->seg_dev, t->seg_ino},
                                .base = t->base, .len = t->layout.total,
                                .placement = t->placement,
                                .staged = t->own_staged};
        snprintf(seg.name, sizeof seg.name, "%s", t->seg_name);
        nc__seg_pool_put(t->pool_key, t->pool_nkey, &seg);
    } else {
        nc__seg_unmap(t->base, t->layout.total);
    }
    free(t->pool_key);
    nc__red_fini(t);
    nc__barrier_fini(t);
    for (int i = 0; i < t->ntrees; i++)
        nc__tree_fini(&t->trees[i].tree);
    free(t->trees);
    nc__tune_team_free(&t->tune);
    free(t->children);
    free(t->leaders);
    free(t->loc);
    free(t->doms);
    free(t);
}

/* CPUs of an affinity mask the locality exchange carries: a team whose
 * ranks may run on CPUs past 1023 is taken as not oversubscribed there. */
#define NC_CPU_WORDS 16

typedef struct loc_msg {
    numacoll_locality_t loc;
    int32_t status;
    int32_t caches[2];          /* L1, L2 (nc__topo_discover_ex) */
    uint64_t cma_addr;          /* where its cma_probe_word is */
    uint64_t shape;             /* nc__config_shape_hash of its config */
    int32_t policy;             /* its wait_policy as set (-1: auto) */
    int32_t pad;
    uint64_t cpus[NC_CPU_WORDS]; /* its affinity mask, CPUs 0 .. 1023 */
} loc_msg_t;

/* This thread's affinity mask as bits in words (all zero if unknown). */
static void cpu_mask(uint64_t out[NC_CPU_WORDS])
{
    cpu_set_t set;
    memset(out, 0, NC_CPU_WORDS * sizeof *out);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return;
    for (int c = 0; c < NC_CPU_WORDS * 64 && c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            out[c / 64] |= 1ull << (c % 64);
}

/* The wait policy (coll/wait.h), the same verdict on every rank: the team
 * is oversubscribed where the union of its ranks' masks has fewer CPUs
 * than it has ranks, or where some rank asked for sleeping waits (the
 * Open MPI component asks where Open MPI finds the node oversubscribed).
 * Writers then wake sleepers; each rank waits as it asked, else sleeps
 * on an oversubscribed team and spins on another. */
static void wait_policy(numacoll_team_t *t, const loc_msg_t *all)
{
    uint64_t uni[NC_CPU_WORDS] = {0};
    int asked = 0, cpus = 0;
    for (int r = 0; r < t->p; r++) {
        for (int i = 0; i < NC_CPU_WORDS; i++)
            uni[i] |= all[r].cpus[i];
        asked |= all[r].policy == NC_WAIT_SLEEP;
    }
    for (int i = 0; i < NC_CPU_WORDS; i++)
        cpus += __builtin_popcountll(uni[i]);
    t->oversub = (cpus > 0 && cpus < t->p) || asked;
    t->wait_pol = t->cfg.wait_policy >= 0
                      ? t->cfg.wait_policy
                      : t->oversub ? NC_WAIT_SLEEP : NC_WAIT_SPIN;
}

/* After the rules: the verdict so far, the hash of the rules, and the
 * identities of the pooled segments this rank could reuse. */
typedef struct setup_msg {
    int32_t status;
    int32_t noffer;
    int32_t pooled;     /* entries in its pool: draining may make room */
    int32_t cma_err;    /* its cma_read of its right neighbour */
    uint32_t cma_cost;  /* its cma_speed */
    uint64_t hash;
    nc__seg_id_t offer[NC_SEG_POOL_OFFER];
} setup_msg_t;

/* Rank 0's fresh segment: where the others open it, what it is, and if
 * creating it failed for want of room, the free bytes. */
typedef struct name_msg {
    char name[NC_SEG_NAME_MAX];
    int32_t status;
    int32_t pid, fd;
    int32_t err;
    nc__seg_id_t id;
    uint64_t avail;
} name_msg_t;

/* The bytes of its block a rank reserves at creation: its control pages,
 * or the whole block where staging cannot grow later (coll/grow.c). */
static size_t block_first(const numacoll_team_t *t)
{
    return nc__seg_can_populate() ? t->layout.ctrl_len : t->layout.rank_len;
}

/* What this rank reserves at creation (block_first; rank 0 the header
 * too) must fit under node_budget (0: half of /dev/shm) with what
 * /dev/shm holds. */
static int node_budget_check(numacoll_team_t *t, char *msg, size_t msglen)
{
    size_t need = block_first(t);
    if (t->rank == 0)
        need += t->layout.rank0_off;
    uint64_t size = 0;
    const uint64_t used = nc__seg_used(&size);
    const uint64_t budget = nc__node_budget(t, size);
    if (!budget || used + need <= budget)
        return NUMACOLL_OK;
    snprintf(msg, msglen, "numacoll: rank %d: " NC_SEG_DIR " holds %llu "
             "bytes, and the team's %zu more would pass node_budget (%llu "
             "bytes%s)", t->rank, (unsigned long long)used, need,
             (unsigned long long)budget,
             t->cfg.node_budget ? "" : ", half of " NC_SEG_DIR);
    return NUMACOLL_ERR_BUDGET;
}

/* Each rank's attach, binding and reservation. */
typedef struct resv_msg {
    int32_t status;
    int32_t err;        /* errno of the reservation */
    uint64_t need, avail;
} resv_msg_t;

/* What a pooled segment must match to serve this team: every layout
 * parameter, and the processes in rank order with the node each block was
 * bound for. Field by field, so no padding bytes take part. */
static int make_pool_key(numacoll_team_t *t)
{
    const nc__layout_params_t *l = &t->layout.prm;
    const uint64_t head[] = {
        (uint64_t)l->p, l->page, l->s, l->q, l->f, l->ctrl_stride,
        l->bank_stride, (uint64_t)l->sync_lines, (uint64_t)l->page_per_buffer,
        (uint64_t)l->ar_lines, l->rs, l->rf, l->il, t->layout.total};
    const size_t nh = sizeof head / sizeof *head;
    t->pool_nkey = nh + 2 * (size_t)t->p;
    t->pool_key = malloc(t->pool_nkey * sizeof *t->pool_key);
    if (!t->pool_key)
        return NUMACOLL_ERR_NOMEM;
    memcpy(t->pool_key, head, sizeof head);
    for (int r = 0; r < t->p; r++) {
        t->pool_key[nh + 2 * (size_t)r] = (uint32_t)t->loc[r].pid;
        t->pool_key[nh + 2 * (size_t)r + 1] = (uint32_t)t->loc[r].numa;
    }
    return NUMACOLL_OK;
}

/* The first segment rank 0 offers that every rank offers too, or NULL. */
static const nc__seg_id_t *common_offer(const setup_msg_t *all, int p)
{
    for (int i = 0; i < all[0].noffer; i++) {
        const nc__seg_id_t *id = &all[0].offer[i];
        int everywhere = 1;
        for (int r = 1; r < p && everywhere; r++) {
            int has = 0;
            for (int j = 0; j < all[r].noffer && !has; j++)
                has = all[r].offer[j].dev == id->dev &&
                      all[r].offer[j].ino == id->ino;
            everywhere = has;
        }
        if (everywhere)
            return id;
    }
    return NULL;
}

/*
 * A fresh segment: rank 0 creates it unnamed and keeps its descriptor open
 * while the others open it through /proc (shm_seg/seg.h), then every rank
 * binds and reserves its own block and all agree on the outcome before
 * anyone touches the memory.
 */
static int seg_fresh(numacoll_team_t *t, const numacoll_bootstrap_t *b,
                     char *msg, size_t msglen, int *who)
{
    const int p = t->p;
    const size_t total = t->layout.total;
    int fd = -1, rc;
    name_msg_t nm = {.status = NUMACOLL_OK, .pid = (int32_t)getpid()};
    if (t->rank == 0) {
        /* what the ranks reserve now (grow.c: the rest comes later) */
        const size_t first = t->layout.rank0_off + (size_t)p * block_first(t);
        nm.status = nc__seg_create(total, first, nm.name, &fd, &nm.id, &t->base,
                                   &nm.avail, msg, msglen);
        nm.fd = fd;
        nm.err = nm.status == NUMACOLL_ERR_NOMEM ? ENOSPC : 0;
    }
    name_msg_t *names = calloc((size_t)p, sizeof *names);
    resv_msg_t *rs = calloc((size_t)p, sizeof *rs);
    if (!names || !rs || b->allgather(&nm, names, sizeof nm, b->ctx) != 0) {
        rc = names && rs ? NUMACOLL_ERR_BOOTSTRAP : NUMACOLL_ERR_NOMEM;
        *who = t->rank;
        goto out;
    }
    snprintf(t->seg_name, sizeof t->seg_name, "%s", names[0].name);
    t->seg_dev = names[0].id.dev;
    t->seg_ino = names[0].id.ino;
    rc = names[0].status;
    if (rc != NUMACOLL_OK) {
        *who = 0;
        if (rc == NUMACOLL_ERR_NOMEM)
            shm_full(msg, msglen, total, 0, total, names[0].avail, ENOSPC);
        else if (t->rank != 0)
            msg[0] = '\0';
        goto out;
    }

    resv_msg_t mine = {.status = NUMACOLL_OK};
    if (t->rank != 0)
        mine.status = nc__seg_attach(names[0].pid, names[0].fd, &names[0].id,
                                     total, &fd, &t->base, msg, msglen);
    if (mine.status == NUMACOLL_OK) {
        /* where the reservation is unsupported, pages come with the first
         * touch: no huge page or readahead may allocate a neighbour's */
        madvise(t->base, total, MADV_RANDOM);
#ifdef MADV_NOHUGEPAGE
        madvise(t->base, total, MADV_NOHUGEPAGE);
#endif
        nc__block_t own = nc__layout_block(&t->layout, 1 + t->rank);
        int err = 0;
        if (t->rank == 0) {
            nc__block_t hb = nc__layout_block(&t->layout, 0);
            err = bind_and_reserve(t, &hb, fd, 0, hb.len);
            mine.need = hb.len;
        }
        /* the control pages now, the staging at the first call that needs
         * it; all of it where the kernel cannot grow it safely later */
        t->own_staged = !nc__seg_can_populate();
        if (err == 0) {
            mine.need = block_first(t);
            err = bind_and_reserve(t, &own, fd, 1, mine.need);
        }
        if (err != 0) {
            mine.err = -err;
            mine.avail = nc__seg_avail();
            mine.status = err == -ENOSPC || err == -ENOMEM
                              ? NUMACOLL_ERR_NOMEM : NUMACOLL_ERR_SYS;
            snprintf(msg, msglen, "numacoll: rank %d: cannot reserve %llu "
                     "bytes of the segment %s: %s", t->rank,
                     (unsigned long long)mine.need, t->seg_name,
                     strerror(-err));
        }
    }
    /* Every rank has opened rank 0's descriptor (or failed) once this
     * returns, so rank 0 may close it: only the mappings hold the file. */
    if (b->allgather(&mine, rs, sizeof mine, b->ctx) != 0) {
        rc = NUMACOLL_ERR_BOOTSTRAP;
        *who = t->rank;
        goto out;
    }
    for (int r = 0; r < p; r++) {
        if (rc == NUMACOLL_OK && rs[r].status != NUMACOLL_OK) {
            rc = rs[r].status;
            *who = r;
        }
    }
    if (rc == NUMACOLL_ERR_NOMEM && rs[*who].err) {
        shm_full(msg, msglen, total, *who, rs[*who].need, rs[*who].avail,
                 rs[*who].err);
    } else if (rc != NUMACOLL_OK && *who != t->rank) {
        msg[0] = '\0';
    }
out:
    if (fd >= 0)
        close(fd);
    if (rc != NUMACOLL_OK) {
        nc__seg_unmap(t->base, total);
        t->base = NULL;
    }
    free(names);
    free(rs);
    return rc;
}

/* A blocking fast path's sizes: from 1 byte on, up to cap, while the
 * size's rule is coll's alg, the 1-byte rule itself where the rule's
 * other keys matter (same: a Bcast's tree), and, where elements count
 * (elems: the reductions, as check_elem asks), with no staging slot an
 * element of a line could exceed. */
static size_t fast_max(const numacoll_team_t *t, nc__coll_t coll,
                       nc__alg_t alg, size_t cap, int same, int elems)
{
    const nc__choice_t *one = nc__team_choice(t, coll, 1);
    size_t n = 0;
    while (t->p > 1 && n < cap) {
        const nc__choice_t *ch = nc__team_choice(t, coll, n + 1);
        if (ch->alg != alg || (same && ch != one) ||
            (elems && ch->f && ch->f < NC_RED_INLINE))
            break;
        n++;
    }
    return n;
}

/* A reduction's fast sizes: as far as its inline rules go (whose largest
 * size nc__red_init sized the lines for, at any element size). */
static size_t red_fast_max(const numacoll_team_t *t, nc__coll_t coll,
                           nc__alg_t alg)
{
    return fast_max(t, coll, alg, nc__team_rule_max(t, coll, alg), 0, 1);
}

/* The sizes the blocking fast paths (request.c) take, from the team's
 * final rules (after cma_verdict): a Bcast's within one line; an
 * Allgather's blocks of one line (one line always fits the lines); an
 * Allreduce's, a Reduce's, a Scan's, an Exscan's and a
 * Reduce_scatter_block's as red_fast_max says. */
static void fast_rules(numacoll_team_t *t)
{
    t->bc_fast_ch = nc__team_choice(t, NC_COLL_BCAST, 1);
    t->bc_fast_max = fast_max(t, NC_COLL_BCAST, NC_ALG_BCAST_INLINE,
                              t->inl_max < NC_INL_PAYLOAD ? t->inl_max
                                                          : NC_INL_PAYLOAD,
                              1, 0);
    t->red->ag_fast_max = fast_max(t, NC_COLL_ALLGATHER,
                                   NC_ALG_ALLGATHER_INLINE, NC_AG_FIRST, 0,
                                   0);
    t->red->ar_fast_max = red_fast_max(t, NC_COLL_ALLREDUCE,
                                       NC_ALG_ALLREDUCE_INLINE);
    t->red->rd_fast_max = red_fast_max(t, NC_COLL_REDUCE,
                                       NC_ALG_REDUCE_INLINE);
    t->red->sc_fast_max = red_fast_max(t, NC_COLL_SCAN, NC_ALG_SCAN_INLINE);
    t->red->ex_fast_max = red_fast_max(t, NC_COLL_EXSCAN,
                                       NC_ALG_EXSCAN_INLINE);
    t->red->rs_fast_max = red_fast_max(t, NC_COLL_REDUCE_SCATTER,
                                       NC_ALG_REDUCE_SCATTER_INLINE);
    /* an inline Alltoallv block: up to a destination's share of the
     * lines (S of them, nc__ag_inline_lines), while the alltoall rules
     * say inline from 1 byte on */
    const size_t S = nc__ar_share(t);
    t->red->a2av_max =
        S ? fast_max(t, NC_COLL_ALLTOALL, NC_ALG_ALLTOALL_INLINE,
                     NC_AG_FIRST + (S - 1) * NC_RED_INLINE, 0, 0)
          : 0;
    t->red->a2av_try = 1;
    t->a2av_ch = nc__team_choice(t, NC_COLL_ALLTOALL, SIZE_MAX);
    /* A Gatherv's and a Scatterv's small blocks through the lines where
     * the rule of their largest size (which they take) is staged, and
     * before its choice where it is single copy (a Gatherv's sent first,
     * gather_cma.c; a Scatterv's tried first, sv_try): a
     * non-root's block in its own lines, a destination's in its share
     * (S) of the root's, while the uniform form's rules say inline */
    const size_t al = t->red->ar_al;
    t->red->gv_max =
        t->p > 1 && al
            ? fast_max(t, NC_COLL_GATHER, NC_ALG_GATHER_INLINE,
                       NC_AG_FIRST + (al - 1) * NC_RED_INLINE, 0, 0)
            : 0;
    t->red->sv_max =
        S ? fast_max(t, NC_COLL_SCATTER, NC_ALG_SCATTER_INLINE,
                     NC_AG_FIRST + (S - 1) * NC_RED_INLINE, 0, 0)
          : 0;
    t->red->sv_try = 1;
}

static int team_create(const numacoll_bootstrap_t *b,
                       const numacoll_config_t *cfg, numacoll_team_t **out)
{
    char msg[256] = "";
    if (!out)
        return NUMACOLL_ERR_ARG;
    *out = NULL;
    if (!b || !b->allgather || b->size < 1 || b->rank < 0 ||
        b->rank >= b->size)
        return NUMACOLL_ERR_ARG;
    numacoll_team_t *t = calloc(1, sizeof *t);
    if (!t)
        return NUMACOLL_ERR_NOMEM;
    t->rank = b->rank;
    t->p = b->size;
    t->recovery = &nc__call_recovery;
    /* only the fields the caller's struct has (one from an older
     * numacoll.h is smaller); an unknown struct_size fails below, on
     * every rank */
    int cfg_rc = nc__config_import(&t->cfg, cfg, msg, sizeof msg);
    if (t->cfg.topology) {
        snprintf(t->topology, sizeof t->topology, "%s", t->cfg.topology);
        t->cfg.topology = t->topology;
    }
    int p = t->p, rc, who = 0;

    /* 1. Config and locality, exchanged with a status. */
    loc_msg_t mine = {.status = cfg_rc != NUMACOLL_OK
                                    ? cfg_rc
                                    : numacoll_config_check(&t->cfg, msg,
                                                            sizeof msg),
                      .cma_addr = (uint64_t)(uintptr_t)&cma_probe_word};
    mine.shape = nc__config_shape_hash(&t->cfg);
    mine.policy = t->cfg.wait_policy;
    cpu_mask(mine.cpus);
    if (mine.status == NUMACOLL_OK)
        mine.status = nc__topo_discover_ex(t->cfg.topology, t->cfg.pu,
                                           &mine.loc, mine.caches, msg,
                                           sizeof msg);
    loc_msg_t *all = calloc((size_t)p, sizeof *all);
    t->loc = calloc((size_t)p, sizeof *t->loc);
    t->leaders = calloc((size_t)p, sizeof *t->leaders);
    t->doms = calloc((size_t)p, sizeof *t->doms);
    if (!all || !t->loc || !t->leaders || !t->doms) {
        free(all);
        team_free(t);
        return NUMACOLL_ERR_NOMEM;  /* cannot tell the others: no exchange */
    }
    if (b->allgather(&mine, all, sizeof mine, b->ctx) != 0) {
        free(all);
        team_free(t);
        return NUMACOLL_ERR_BOOTSTRAP;
    }
    rc = NUMACOLL_OK;
    for (int r = 0; r < p; r++) {
        t->loc[r] = all[r].loc;
        nc__topo_doms(&all[r].loc, all[r].caches, &t->doms[r]);
        if (rc == NUMACOLL_OK && all[r].status != NUMACOLL_OK) {
            rc = all[r].status;
            who = r;
        }
    }
    /* Parameters that shape the segment or the protocol, alike on every
     * rank, or they would read each other's memory wrongly: every rank
     * knows, rank 0 says it. */
    int shape_differs = 0;
    for (int r = 1; r < p && rc == NUMACOLL_OK; r++)
        if (all[r].shape != all[0].shape) {
            rc = NUMACOLL_ERR_ARG;
            who = 0;
            shape_differs = 1;
            snprintf(msg, sizeof msg, "numacoll: rank %d has other shape "
                     "parameters (all but spin_count, timeout_ms, "
                     "mem_budget, verbose, pu, wait_policy, node_budget) "
                     "than rank 0",
                     r);
        }
    if (rc == NUMACOLL_OK)
        wait_policy(t, all);
    const int32_t cma_err = rc == NUMACOLL_OK
                                ? cma_read(t, all[(t->rank + 1) % p].cma_addr)
                                : 0;
    free(all);
    if (rc != NUMACOLL_OK) {
        create_says(t, rc, who,
                    shape_differs || who == t->rank ? msg : "");
        team_free(t);
        return rc;
    }

    /* 2. Shapes: leaders, NUMA shape, rules, trees, layout (pure, identical
     * on every rank). */
    unsigned nodes = 0, ppn = 0;
    {
        int *g = malloc((size_t)p * sizeof *g), *m = malloc((size_t)p * sizeof *m),
            *gs = malloc((size_t)(p + 1) * sizeof *gs);
        if (g && m && gs) {
            nodes = (unsigned)nc__topo_numa_groups(t->loc, p, g, t->leaders, m,
                                                   gs);
            for (unsigned k = 0; k < nodes; k++)
                if ((unsigned)(gs[k + 1] - gs[k]) > ppn)
                    ppn = (unsigned)(gs[k + 1] - gs[k]);
        }
        free(g);
        free(m);
        free(gs);
        if (!(g && m && gs)) {
            team_free(t);
            return NUMACOLL_ERR_NOMEM;
        }
    }
    uint64_t hash = 0;
    unsigned buf_s = 0;
    size_t buf_f = 0;
    rc = tune_setup(t, nodes, ppn, &hash, &buf_s, &buf_f, msg, sizeof msg);
    t->geo0_f = t->geo_f;
    t->geo0_s = t->geo_s;
    t->geo0_q = t->geo_q;
    if (rc == NUMACOLL_OK)
        rc = nc__barrier_init(t);
    if (rc == NUMACOLL_OK)
        rc = nc__red_init(t);
    if (rc == NUMACOLL_OK &&
        nc__layout_plan_il(&t->layout, p, (size_t)sysconf(_SC_PAGESIZE),
                           buf_s, t->q_max, buf_f, t->rs_max, t->rf_max,
                           t->inl_lines, nc__red_ar_lines(t)) != 0)
        rc = NUMACOLL_ERR_ARG;
    if (rc == NUMACOLL_OK && t->cfg.mem_budget &&
        t->layout.total > t->cfg.mem_budget) {
        rc = NUMACOLL_ERR_BUDGET;
        if (t->cfg.verbose >= 2 && t->rank == 0)
            fprintf(stderr, "numacoll: segment of %zu bytes exceeds "
                    "mem_budget %zu\n", t->layout.total, t->cfg.mem_budget);
    }
    if (rc == NUMACOLL_OK)
        rc = node_budget_check(t, msg, sizeof msg);
    /* Same inputs on every rank, so the same verdict: no exchange needed,
     * but agree anyway so that a rank's allocation failure is shared. The
     * same exchange compares the rules every rank resolved (their calls
     * would not match otherwise), offers the pooled segments each rank
     * could reuse for this team, and brings the single-copy probes. */
    setup_msg_t sm = {.status = rc, .hash = hash, .cma_err = cma_err,
                      .cma_cost = rc == NUMACOLL_OK ? cma_speed(t, cma_err)
                                                    : 0};
    if (rc == NUMACOLL_OK)
        sm.status = make_pool_key(t);
    if (sm.status == NUMACOLL_OK)
        sm.noffer = nc__seg_pool_claim(t->pool_key, t->pool_nkey, sm.offer,
                                       NC_SEG_POOL_OFFER);
    sm.pooled = nc__seg_pool_count();
    int mine_rc = sm.status;
    setup_msg_t *sall = calloc((size_t)p, sizeof *sall);
    rc = sall ? NUMACOLL_OK : NUMACOLL_ERR_NOMEM;
    if (sall && b->allgather(&sm, sall, sizeof sm, b->ctx) != 0) {
        rc = NUMACOLL_ERR_BOOTSTRAP;
        who = t->rank;
    }
    for (int r = 0; r < p && rc == NUMACOLL_OK; r++)
        if (sall[r].status != NUMACOLL_OK) {
            rc = sall[r].status;
            who = r;
        }
    int shared_msg = 0;
    for (int r = 1; r < p && rc == NUMACOLL_OK; r++)
        if (sall[r].hash != sall[0].hash) {
            rc = NUMACOLL_ERR_ARG;
            who = 0;        /* every rank knows it; rank 0 says it */
            shared_msg = 1;
            snprintf(msg, sizeof msg, "numacoll: rank %d resolved other "
                     "tuning rules than rank 0 (different tuning files or "
                     "parameters?)", r);
        }
    if (rc == NUMACOLL_OK)
        cma_verdict(t, &sall[0].cma_err, &sall[0].cma_cost, sizeof *sall);
    nc__seg_pooled_t reuse = {0};
    int pooled = 0;
    for (int r = 0; r < p && rc == NUMACOLL_OK; r++)
        pooled += sall[r].pooled > 0;
    if (rc == NUMACOLL_OK) {
        const nc__seg_id_t *id = common_offer(sall, p);
        /* every rank offers only what it has claimed, so this finds it */
        if (id && nc__seg_pool_take(id, &reuse) != 0)
            rc = NUMACOLL_ERR_SYS;
    }
    nc__seg_pool_release(sm.offer, sm.noffer);
    free(sall);
    if (rc != NUMACOLL_OK) {
        create_says(t, rc, who,
                    shared_msg || (who == t->rank && mine_rc != NUMACOLL_OK)
                        ? msg : "");
        team_free(t);
        return rc;
    }

    /* 3. The segment: a pooled one every rank has, which all of them have
     * stopped using, or a fresh one, reserved and bound block by block. */
    if (reuse.base) {
        /* its staging keeps its pages: the team still votes at its first
         * large call (another rank's may not have them), but populates
         * nothing where this rank's have */
        t->own_staged = reuse.staged || !nc__seg_can_populate();
        t->base = reuse.base;
        t->seg_dev = reuse.id.dev;
        t->seg_ino = reuse.id.ino;
        snprintf(t->seg_name, sizeof t->seg_name, "%s", reuse.name);
        t->placement = reuse.placement;
    } else {
        rc = seg_fresh(t, b, msg, sizeof msg, &who);
        if (rc == NUMACOLL_ERR_NOMEM && pooled) {
            /* /dev/shm is full and some rank's pool holds segments no team
             * is using; every rank saw the same verdict, so all drain their
             * pools and try once more, after all have (the room comes back
             * with the last unmapping) */
            nc__seg_pool_drain();
            rc = agree(b, NUMACOLL_OK, &who);
            if (rc == NUMACOLL_OK)
                rc = seg_fresh(t, b, msg, sizeof msg, &who);
        }
        if (rc != NUMACOLL_OK) {
            create_says(t, rc, who, msg);
            team_free(t);
            return rc;
        }
    }

    /* 4. Initial state: every rank its control pages, rank 0 the header;
     * the bootstrap exchange orders all of it before any use, and the
     * fences make that explicit whatever the bootstrap is built on. */
    init_shared(t, !reuse.base);
    atomic_thread_fence(memory_order_seq_cst);
    rc = agree(b, NUMACOLL_OK, &who);
    atomic_thread_fence(memory_order_seq_cst);
    if (rc == NUMACOLL_OK && t->hdr->magic != NC_SEG_MAGIC)
        rc = NUMACOLL_ERR_SYS;
    if (rc != NUMACOLL_OK) {
        /* Ranks whose exchange completed (a bootstrap that failed here
         * only: a peer died during it) hold the team and may wait for
         * this one in their first call: as a destroyed team's rank, it
         * says it is gone, in its own control block, which it has just
         * initialised and nobody else writes. */
        atomic_store_explicit(&nc__sync(t, t->rank)->gone, 1,
                              memory_order_release);
        create_says(t, rc, who, "");
        team_free(t);
        return rc;
    }
    fast_rules(t);
    t->pool_ok = 1;
    *out = t;
    return NUMACOLL_OK;
}

int numacoll_team_create(const numacoll_bootstrap_t *b,
                         const numacoll_config_t *cfg, numacoll_team_t **out)
{
    create_error[0] = '\0';
    int rc = team_create(b, cfg, out);
    if (rc != NUMACOLL_OK && !create_error[0])
        snprintf(create_error, sizeof create_error, "numacoll: team creation "
                 "failed: %s", numacoll_strerror(rc));
    return rc;
}

const char *numacoll_team_create_error(void)
{
    return create_error;
}

int numacoll_team_destroy(numacoll_team_t *t)
{
    if (!t)
        return NUMACOLL_ERR_ARG;
    /* A rank still waiting for this one (after mismatched calls, or at a
     * resynchronisation this rank will never come to) stops instead. */
    /* requests still in flight run to their end first */
    nc__rq_finish(t);
    if (t->hdr)
        atomic_store_explicit(&nc__sync(t, t->rank)->gone, 1,
                              memory_order_release);
    team_free(t);
    return NUMACOLL_OK;
}

int numacoll_team_rank(const numacoll_team_t *t) { return t ? t->rank : -1; }
int numacoll_team_size(const numacoll_team_t *t) { return t ? t->p : -1; }

const numacoll_config_t *numacoll_team_config(const numacoll_team_t *t)
{
    return t ? &t->cfg : NULL;
}

const char *numacoll_team_last_error(const numacoll_team_t *t)
{
    return t ? t->last_error : "no team";
}

const char *numacoll_team_tuning_source(const numacoll_team_t *t)
{
    return t ? t->tune_source : "";
}

int numacoll_team_single_copy(const numacoll_team_t *t, const char **why)
{
    if (why)
        *why = t ? t->cma_why : "no team";
    return t ? t->cma_ok : 0;
}

int numacoll_team_footprint(const numacoll_team_t *t, size_t *now,
                            size_t *grown)
{
    if (!t)
        return -1;
    const size_t head = t->rank == 0 ? t->layout.rank0_off : 0;
    if (now)
        *now = head + (t->own_staged ? t->layout.rank_len
                                     : t->layout.ctrl_len);
    if (grown)
        *grown = head + t->layout.rank_len;
    return t->staged;
}

int numacoll_team_wait_policy(const numacoll_team_t *t, int *oversubscribed)
{
    if (oversubscribed)
        *oversubscribed = t ? t->oversub : 0;
    return t ? t->wait_pol : -1;
}

size_t numacoll_team_max_elem(const numacoll_team_t *t, int allreduce,
                              size_t nbytes)
{
    if (!t)
        return 0;
    const nc__choice_t *ch = nc__team_choice(
        t, allreduce ? NC_COLL_ALLREDUCE : NC_COLL_REDUCE, nbytes);
    /* inline rules stage nothing: their element limit is the size itself */
    return ch->f ? ch->f : nbytes;
}

const char *numacoll_team_segment_name(const numacoll_team_t *t)
{
    return t ? t->seg_name : "";
}

int numacoll_team_locality(const numacoll_team_t *t, int rank,
                           numacoll_locality_t *loc)
{
    if (!t || !loc || rank < 0 || rank >= t->p)
        return NUMACOLL_ERR_ARG;
    *loc = t->loc[rank];
    return NUMACOLL_OK;
}

int numacoll_team_placement(const numacoll_team_t *t, numacoll_placement_t *pl)
{
    if (!t || !pl)
        return NUMACOLL_ERR_ARG;
    *pl = t->placement;
    return NUMACOLL_OK;
}

/* The public numbering is the internal one (coll/algs.h). */
#define X(id, name)                                                            \
    _Static_assert((int)NUMACOLL_COLL_##id == (int)NC_COLL_##id,               \
                   "numacoll_coll_t follows nc__coll_t");
NC_COLL_LIST(X)
#undef X
_Static_assert((int)NUMACOLL_COLL_COUNT == (int)NC_COLL_COUNT,
               "every collective has a public name");

int numacoll_team_counters(const numacoll_team_t *t, numacoll_counters_t *c)
{
    if (!t || !c)
        return NUMACOLL_ERR_ARG;
    *c = (numacoll_counters_t){t->calls[NC_COLL_BCAST],
                               t->calls[NC_COLL_BARRIER],
                               t->calls[NC_COLL_REDUCE],
                               t->calls[NC_COLL_ALLREDUCE]};
    return NUMACOLL_OK;
}

int numacoll_team_calls(const numacoll_team_t *t, numacoll_coll_t coll,
                        uint64_t *calls)
{
    if (!t || !calls || (int)coll < 0 || (int)coll >= NC_COLL_COUNT)
        return NUMACOLL_ERR_ARG;
    *calls = t->calls[coll];
    return NUMACOLL_OK;
}

int numacoll_team_declines(const numacoll_team_t *t, numacoll_coll_t coll,
                           size_t nbytes)
{
    if (!t || (unsigned)coll >= (unsigned)NC_COLL_COUNT ||
        !(t->decline_mask >> (unsigned)coll & 1u))
        return 0;
    const nc__tune_entry_t *e =
        nc__tune_lookup(&t->tune, (nc__coll_t)coll, nbytes);
    return e && e->ch.decline ? 1 : 0;
}

unsigned numacoll_team_decline_mask(const numacoll_team_t *t)
{
    return t ? t->decline_mask : 0;
}
