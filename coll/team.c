/*
 * Team creation and destruction, and the public entry points that dispatch
 * to the algorithms. Creation is collective through the caller's bootstrap;
 * every exchange carries a status so that all ranks agree to fail together
 * instead of some waiting forever for a rank that gave up.
 */
#include <errno.h>
#include <pthread.h>
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
#include "coll/team.h"
#include "coll/wait.h"
#include "shm_seg/seg.h"
#include "topo/topo.h"

int nc__team_fail(numacoll_team_t *t, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->last_error, sizeof t->last_error, fmt, ap);
    va_end(ap);
    if (t->cfg.verbose >= 2)
        fprintf(stderr, "numacoll: rank %d: %s\n", t->rank, t->last_error);
    return status;
}

void nc__team_abort(numacoll_team_t *t, int status)
{
    int32_t none = 0;
    if (atomic_compare_exchange_strong_explicit(&t->hdr->abort_status, &none,
                                                status, memory_order_acq_rel,
                                                memory_order_acquire))
        atomic_store_explicit(&t->hdr->abort_rank, t->rank,
                              memory_order_release);
}

int nc__team_size_mismatch(numacoll_team_t *t, int root, size_t got,
                           size_t want)
{
    nc__team_abort(t, NUMACOLL_ERR_ARG);
    return nc__team_fail(t, NUMACOLL_ERR_ARG,
                         "rank %d expected %zu bytes but root %d announced "
                         "%zu: Bcast sizes differ between ranks", t->rank,
                         want, root, got);
}

int nc__team_check_abort(numacoll_team_t *t)
{
    int st = atomic_load_explicit(&t->hdr->abort_status, memory_order_acquire);
    if (st == 0)
        return NUMACOLL_OK;
    return nc__team_fail(t, NUMACOLL_ERR_ABORTED,
                         "team aborted earlier by rank %d (%s)",
                         atomic_load_explicit(&t->hdr->abort_rank,
                                              memory_order_acquire),
                         numacoll_strerror(st));
}

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

/* Every rank must take the same choices, or their calls would not match:
 * compare the hashes of the rules each resolved. */
static int agree_rules(const numacoll_bootstrap_t *b, uint64_t hash, int *who)
{
    uint64_t *all = calloc((size_t)b->size, sizeof *all);
    if (!all)
        return NUMACOLL_ERR_NOMEM;
    int rc = NUMACOLL_OK;
    if (b->allgather(&hash, all, sizeof hash, b->ctx) != 0) {
        rc = NUMACOLL_ERR_BOOTSTRAP;
        *who = b->rank;
    } else {
        for (int r = 1; r < b->size && rc == NUMACOLL_OK; r++)
            if (all[r] != all[0]) {
                rc = NUMACOLL_ERR_ARG;
                *who = r;
            }
    }
    free(all);
    return rc;
}

/* Where a rank's block goes and what move_pages says about it. */
static void place_block(numacoll_team_t *t, const nc__block_t *blk,
                        int verify)
{
    int degraded = 0;
    int intended = t->loc[blk->owner].numa;
    int node = nc__seg_effective_node(intended, &degraded);
    unsigned char *addr = t->base + blk->off;
    int brc = nc__seg_bind(addr, blk->len, node);
    if (brc != 0 && t->cfg.verbose >= 1)
        fprintf(stderr, "numacoll: rank %d: cannot bind %zu bytes to NUMA "
                "node %d (%s); relying on first touch\n", t->rank, blk->len,
                node, strerror(-brc));
    /* First touch by the owner, one write per page: a fresh tmpfs file reads
     * as zeros, so this places pages without changing what they hold. */
    size_t page = t->layout.prm.page;
    for (size_t off = 0; off < blk->len; off += page)
        addr[off] = 0;
    if (!verify)
        return;
    numacoll_placement_t *pl = &t->placement;
    pl->intended_node = intended;
    pl->bound_node = brc == 0 ? node : -1;
    pl->degraded = degraded;
    nc__seg_verify(addr, blk->len, node, &pl->pages, &pl->pages_on_node,
                   &pl->pages_unknown);
    if (degraded && t->cfg.verbose >= 1)
        fprintf(stderr, "numacoll: warning: rank %d: NUMA node %d does not "
                "exist on this machine; its queue is placed on node %d\n",
                t->rank, intended, node);
    if (t->cfg.verbose >= 2)
        fprintf(stderr, "numacoll: rank %d: block of %zu pages on node %d: "
                "%zu there, %zu unknown\n", t->rank, pl->pages, node,
                pl->pages_on_node, pl->pages_unknown);
}


/* ---- the tuning table ------------------------------------------------ */

/* The last tuning file read, kept per process so that the many teams of an
 * MPI job parse it once (and warn about a rejected one once); read again
 * when its size or modification time changes. */
static struct {
    pthread_mutex_t lock;
    char path[4096];
    off_t size;
    struct timespec mtime;
    nc__tune_table_t tab;
    int nerr;
    int warned;
    char errs[4096];
} file_cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The table named by cfg (tuning_text, tuning_file, $NUMACOLL_TUNING_FILE),
 * or the built-in one. *tmp receives a table parsed from tuning_text, which
 * the caller frees. A rejected table gives the built-in one, with a
 * warning naming every problem (rank 0, verbose >= 1). */
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
    struct stat st;
    int have = stat(path, &st) == 0;
    if (strcmp(file_cache.path, path) != 0 || !have ||
        st.st_size != file_cache.size ||
        st.st_mtim.tv_sec != file_cache.mtime.tv_sec ||
        st.st_mtim.tv_nsec != file_cache.mtime.tv_nsec) {
        nc__tune_free(&file_cache.tab);
        snprintf(file_cache.path, sizeof file_cache.path, "%s", path);
        file_cache.size = have ? st.st_size : -1;
        file_cache.mtime = have ? st.st_mtim : (struct timespec){0, 0};
        file_cache.nerr = nc__tune_load(path, &file_cache.tab, file_cache.errs,
                                        sizeof file_cache.errs);
        file_cache.warned = 0;
    }
    const nc__tune_table_t *tab = &file_cache.tab;
    if (file_cache.nerr != 0) {
        if (t->cfg.verbose >= 1 && t->rank == 0 && !file_cache.warned)
            fprintf(stderr, "numacoll: tuning file %s rejected (%d problem%s); "
                    "using the built-in table:\n%s\n", path, file_cache.nerr,
                    file_cache.nerr == 1 ? "" : "s", file_cache.errs);
        file_cache.warned = 1;
        snprintf(t->tune_source, sizeof t->tune_source,
                 "built-in (%.200s rejected)", path);
        tab = nc__tune_builtin();
    } else {
        snprintf(t->tune_source, sizeof t->tune_source, "%s", path);
    }
    pthread_mutex_unlock(&file_cache.lock);
    return tab;
}

/* Parameters set in the config replace the rule's: Bcast's from frag_size,
 * queue_depth, banks, tree, radix; Reduce's and Allreduce's from the
 * reduce_* ones; Barrier's from barrier_radix. Unset ones are 0 (tree -1). */
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
        break;
    case NC_COLL_REDUCE:
    case NC_COLL_ALLREDUCE:
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

/* Build tree (kind, k, hier) unless the team has it already. */
static int want_tree(numacoll_team_t *t, int kind, int k, int hier)
{
    if (nc__team_tree(t, kind, k, hier))
        return NUMACOLL_OK;
    nc__team_tree_t *n = realloc(t->trees, (size_t)(t->ntrees + 1) * sizeof *n);
    if (!n)
        return NUMACOLL_ERR_NOMEM;
    t->trees = n;
    nc__team_tree_t *e = &n[t->ntrees];
    *e = (nc__team_tree_t){.kind = kind, .k = k, .hier = hier};
    int rc = hier ? nc__tree_init_hier(&e->tree, t->p, k, k, t->loc)
                  : nc__tree_init(&e->tree, kind, t->p, k, t->loc);
    if (rc == NUMACOLL_OK)
        t->ntrees++;
    return rc;
}

const nc__tree_t *nc__team_tree(const numacoll_team_t *t, int kind, int k,
                                int hier)
{
    for (int i = 0; i < t->ntrees; i++)
        if (t->trees[i].kind == kind && t->trees[i].k == k &&
            t->trees[i].hier == hier)
            return &t->trees[i].tree;
    return NULL;
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
    return fb;
}

/* process_vm_readv works when this process may ptrace-attach the other:
 * same user, Yama's ptrace_scope, no seccomp filter, one pid namespace.
 * Each rank reads its right neighbour's probe word (its address exchanged,
 * ASLR puts it elsewhere in every process); all agree on the outcome. */
static const uint64_t cma_probe_word = 0x6e632d636d612d31ULL;

typedef struct cma_msg {
    uint64_t addr;
    int32_t err;        /* second round: errno of our read, -1 bad data */
    int32_t pad;
} cma_msg_t;

static int cma_probe(numacoll_team_t *t, const numacoll_bootstrap_t *b)
{
    const int p = t->p;
    t->cma_ok = 0;
    if (!t->cfg.single_copy) {
        snprintf(t->cma_why, sizeof t->cma_why,
                 "the parameter single_copy is 0");
        return NUMACOLL_OK;
    }
    if (p < 2) {
        snprintf(t->cma_why, sizeof t->cma_why, "a team of one rank");
        return NUMACOLL_OK;
    }
    cma_msg_t mine = {.addr = (uint64_t)(uintptr_t)&cma_probe_word};
    cma_msg_t *all = calloc((size_t)p, sizeof *all);
    if (!all)
        return NUMACOLL_ERR_NOMEM;
    if (b->allgather(&mine, all, sizeof mine, b->ctx) != 0) {
        free(all);
        return NUMACOLL_ERR_BOOTSTRAP;
    }
    const int peer = (t->rank + 1) % p;
    uint64_t got = 0;
    struct iovec l = {&got, sizeof got},
                 r = {(void *)(uintptr_t)all[peer].addr, sizeof got};
    ssize_t n = process_vm_readv(t->loc[peer].pid, &l, 1, &r, 1, 0);
    mine.err = n == (ssize_t)sizeof got ? (got == cma_probe_word ? 0 : -1)
                                        : (n < 0 ? errno : -1);
    if (b->allgather(&mine, all, sizeof mine, b->ctx) != 0) {
        free(all);
        return NUMACOLL_ERR_BOOTSTRAP;
    }
    t->cma_ok = 1;
    for (int i = 0; i < p && t->cma_ok; i++)
        if (all[i].err) {
            t->cma_ok = 0;
            snprintf(t->cma_why, sizeof t->cma_why,
                     "process_vm_readv from rank %d into rank %d (pid %d): %s",
                     (i + 1) % p, i, (int)t->loc[(i + 1) % p].pid,
                     all[i].err > 0 ? strerror(all[i].err)
                                    : "read other bytes than written");
        }
    free(all);
    if (!t->cma_ok && t->cfg.verbose >= 2 && t->rank == 0)
        fprintf(stderr, "numacoll: single copy unavailable (%s): cma rules "
                "run as pipelined copy-in/copy-out\n", t->cma_why);
    return NUMACOLL_OK;
}

/*
 * Resolve the team's table for its p and NUMA shape, apply the config's
 * overrides, check what they combine to, build every tree the rules name
 * and size the geometry for the largest rule: the Bcast buffers are laid
 * out as *s_out buffers of *f_out bytes. *hash identifies the result.
 * nodes, ppn: NUMA nodes the team spans, most ranks on one of them.
 */
static int tune_setup(numacoll_team_t *t, unsigned nodes, unsigned ppn,
                      uint64_t *hash, unsigned *s_out, size_t *f_out,
                      char *msg, size_t msglen)
{
    nc__tune_table_t tmp = {0};
    const nc__tune_table_t *tab = pick_table(t, &tmp);
    int rc = nc__tune_resolve(tab, (unsigned)t->p, nodes, ppn, &t->tune)
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
    for (int c = 0; c < NC_COLL_COUNT && rc == NUMACOLL_OK; c++) {
        for (int i = 0; i < t->tune.n[c] && rc == NUMACOLL_OK; i++) {
            nc__tune_entry_t *e = &t->tune.e[c][i];
            nc__choice_t *ch = &e->ch;
            override(&t->cfg, (nc__coll_t)c, ch);
            if (ch->alg == NC_ALG_BCAST_CMA && !t->cma_ok)
                *ch = cma_fallback(ch);
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
            h = fnv(h, &ch->copy, sizeof ch->copy);
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
            if (c == NC_COLL_BCAST) {
                if (nc__alg_takes((int)ch->alg, "tree"))
                    rc = want_tree(t, ch->tree, (int)ch->k, 0);
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
            } else if (c == NC_COLL_REDUCE || c == NC_COLL_ALLREDUCE) {
                if (nc__alg_takes((int)ch->alg, "k")) {
                    rc = want_tree(t, NUMACOLL_TREE_NUMA, (int)ch->k, 1);
                    if (rc == NUMACOLL_OK)
                        rc = want_tree(t, NUMACOLL_TREE_KNOMIAL, (int)ch->k, 0);
                }
                if (nc__alg_takes((int)ch->alg, "s") && ch->s > t->rs_max)
                    t->rs_max = ch->s;
                if (nc__alg_takes((int)ch->alg, "f") && ch->f > t->rf_max)
                    t->rf_max = ch->f;
            }
        }
    }
    if (rc != NUMACOLL_OK)
        return rc;
    if (!t->geo_f) {            /* no pipelined rule: inline needs one bank */
        t->geo_f = 64;
        t->geo_s = t->geo_q = 1;
    }
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
    t->children = malloc((size_t)(mc + 1) * sizeof *t->children);
    if (!t->children)
        return NUMACOLL_ERR_NOMEM;
    if (t->cfg.verbose >= 3 && t->rank == 0)
        for (int c = 0; c < NC_COLL_COUNT; c++)
            for (int i = 0; i < t->tune.n[c]; i++) {
                const nc__tune_entry_t *e = &t->tune.e[c][i];
                fprintf(stderr, "numacoll: %s %zu..%zu bytes: %s f=%zu s=%u "
                        "q=%u tree=%d k=%u (%s line %d)\n",
                        nc__coll_name((nc__coll_t)c), e->lo, e->hi,
                        nc__algs[e->ch.alg].name, e->ch.f, e->ch.s, e->ch.q,
                        e->ch.tree, e->ch.k,
                        e->builtin ? "built-in" : t->tune_source, e->line);
            }
    *hash = h;
    return NUMACOLL_OK;
}

static void team_free(numacoll_team_t *t)
{
    if (!t)
        return;
    nc__seg_unmap(t->base, t->layout.total);
    nc__red_fini(t);
    nc__barrier_fini(t);
    for (int i = 0; i < t->ntrees; i++)
        nc__tree_fini(&t->trees[i].tree);
    free(t->trees);
    nc__tune_team_free(&t->tune);
    free(t->children);
    free(t->leaders);
    free(t->loc);
    free(t);
}

typedef struct loc_msg {
    numacoll_locality_t loc;
    int32_t status;
} loc_msg_t;

typedef struct name_msg {
    char name[NC_SEG_NAME_MAX];
    int32_t status;
} name_msg_t;

int numacoll_team_create(const numacoll_bootstrap_t *b,
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
    if (cfg)
        t->cfg = *cfg;
    else
        numacoll_config_init(&t->cfg);
    if (t->cfg.topology) {
        snprintf(t->topology, sizeof t->topology, "%s", t->cfg.topology);
        t->cfg.topology = t->topology;
    }
    int p = t->p, rc, who = 0;

    /* 1. Config and locality, exchanged with a status. */
    loc_msg_t mine = {.status = numacoll_config_check(&t->cfg, msg, sizeof msg)};
    if (mine.status == NUMACOLL_OK)
        mine.status = nc__topo_discover(t->cfg.topology, t->cfg.pu, &mine.loc,
                                        msg, sizeof msg);
    loc_msg_t *all = calloc((size_t)p, sizeof *all);
    t->loc = calloc((size_t)p, sizeof *t->loc);
    t->leaders = calloc((size_t)p, sizeof *t->leaders);
    if (!all || !t->loc || !t->leaders) {
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
        if (rc == NUMACOLL_OK && all[r].status != NUMACOLL_OK) {
            rc = all[r].status;
            who = r;
        }
    }
    free(all);
    if (rc != NUMACOLL_OK) {
        if (t->cfg.verbose >= 1 && who == t->rank)
            fprintf(stderr, "%s\n", msg);
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
    rc = cma_probe(t, b);
    if (rc != NUMACOLL_OK) {
        team_free(t);
        return rc;
    }
    uint64_t hash = 0;
    unsigned buf_s = 0;
    size_t buf_f = 0;
    rc = tune_setup(t, nodes, ppn, &hash, &buf_s, &buf_f, msg, sizeof msg);
    if (rc == NUMACOLL_OK)
        rc = nc__barrier_init(t);
    if (rc == NUMACOLL_OK)
        rc = nc__red_init(t);
    if (rc == NUMACOLL_OK &&
        nc__layout_plan(&t->layout, p, (size_t)sysconf(_SC_PAGESIZE),
                        buf_s, t->q_max, buf_f, t->rs_max, t->rf_max) != 0)
        rc = NUMACOLL_ERR_ARG;
    if (rc == NUMACOLL_OK && t->cfg.mem_budget &&
        t->layout.total > t->cfg.mem_budget) {
        rc = NUMACOLL_ERR_BUDGET;
        if (t->cfg.verbose >= 2 && t->rank == 0)
            fprintf(stderr, "numacoll: segment of %zu bytes exceeds "
                    "mem_budget %zu\n", t->layout.total, t->cfg.mem_budget);
    }
    /* Same inputs on every rank, so the same verdict: no exchange needed,
     * but agree anyway so that a rank's allocation failure is shared. */
    int mine_rc = rc;
    rc = agree(b, rc, &who);
    if (rc == NUMACOLL_OK)
        rc = agree_rules(b, hash, &who);
    if (rc != NUMACOLL_OK) {
        if (t->cfg.verbose >= 1 && who == t->rank && mine_rc != NUMACOLL_OK &&
            msg[0])
            fprintf(stderr, "%s\n", msg);
        else if (t->cfg.verbose >= 1 && t->rank == 0 && mine_rc == NUMACOLL_OK &&
                 rc == NUMACOLL_ERR_ARG)
            fprintf(stderr, "numacoll: rank %d resolved other tuning rules "
                    "than rank 0 (different tuning files or parameters?)\n",
                    who);
        team_free(t);
        return rc;
    }

    /* 3. Rank 0 creates the segment, everyone maps it, rank 0 unlinks it as
     * soon as all have mapped (or failed), so no crash can leave it behind. */
    name_msg_t nm = {.status = NUMACOLL_OK}, *names;
    if (t->rank == 0)
        nm.status = nc__seg_create(t->layout.total, nm.name, &t->base, msg,
                                   sizeof msg);
    names = calloc((size_t)p, sizeof *names);
    if (!names || b->allgather(&nm, names, sizeof nm, b->ctx) != 0) {
        if (t->rank == 0 && nm.status == NUMACOLL_OK)
            nc__seg_unlink(nm.name);
        free(names);
        team_free(t);
        return names ? NUMACOLL_ERR_BOOTSTRAP : NUMACOLL_ERR_NOMEM;
    }
    snprintf(t->seg_name, sizeof t->seg_name, "%s", names[0].name);
    rc = names[0].status;
    free(names);
    if (rc == NUMACOLL_OK && t->rank != 0)
        rc = nc__seg_attach(t->seg_name, t->layout.total, &t->base, msg,
                            sizeof msg);
    int all_mapped = agree(b, rc, &who);
    if (t->rank == 0 && t->seg_name[0])
        nc__seg_unlink(t->seg_name);
    if (all_mapped != NUMACOLL_OK) {
        if (t->cfg.verbose >= 1 && who == t->rank)
            fprintf(stderr, "%s\n", msg);
        team_free(t);
        return all_mapped;
    }

    /* 4. Placement: no readahead or huge page may place a neighbour's pages
     * for us; bind, first touch and verify our own block(s). */
    madvise(t->base, t->layout.total, MADV_RANDOM);
#ifdef MADV_NOHUGEPAGE
    madvise(t->base, t->layout.total, MADV_NOHUGEPAGE);
#endif
    nc__block_t mine_blk = nc__layout_block(&t->layout, 1 + t->rank);
    if (t->rank == 0) {
        nc__block_t hb = nc__layout_block(&t->layout, 0);
        place_block(t, &hb, 0);
    }
    place_block(t, &mine_blk, 1);
    t->hdr = (nc__seg_hdr_t *)t->base;
    t->banks = (nc__bank_t *)(t->base + t->layout.banks_off);
    if (t->rank == 0) {
        t->hdr->p = (uint32_t)p;
        t->hdr->q = t->q_max;
        t->hdr->s = t->layout.prm.s;
        t->hdr->f = t->layout.prm.f;
        int32_t *leaders = (int32_t *)(t->base + NC_HDR_FIXED);
        for (int r = 0; r < p; r++)
            leaders[r] = t->leaders[r];
        for (unsigned k = 0; k < t->q_max; k++) {
            atomic_store_explicit(&t->banks[k].op, NC_OP_NONE,
                                  memory_order_relaxed);
            atomic_store_explicit(&t->banks[k].nreaders, 0,
                                  memory_order_relaxed);
        }
        atomic_store_explicit(&t->hdr->abort_status, 0, memory_order_relaxed);
        t->hdr->magic = NC_SEG_MAGIC;
    }
    /* The bootstrap exchange orders rank 0's initialisation before any use;
     * the fences make that explicit whatever the bootstrap is built on. */
    atomic_thread_fence(memory_order_seq_cst);
    rc = agree(b, NUMACOLL_OK, &who);
    atomic_thread_fence(memory_order_seq_cst);
    if (rc == NUMACOLL_OK && t->hdr->magic != NC_SEG_MAGIC)
        rc = NUMACOLL_ERR_SYS;
    if (rc != NUMACOLL_OK) {
        team_free(t);
        return rc;
    }
    *out = t;
    return NUMACOLL_OK;
}

int numacoll_team_destroy(numacoll_team_t *t)
{
    if (!t)
        return NUMACOLL_ERR_ARG;
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

int numacoll_team_counters(const numacoll_team_t *t, numacoll_counters_t *c)
{
    if (!t || !c)
        return NUMACOLL_ERR_ARG;
    *c = t->counters;
    return NUMACOLL_OK;
}

int nc__bank_claim(numacoll_team_t *t, unsigned set)
{
    nc__bank_t *bank = &t->banks[set];
    nc__wait_why_t why = {-1, "drained bank", (long)set, (long)t->op};
    uint64_t seen;
    int rc = nc__wait(t, &bank->nreaders, NC_WAIT_EQ, 0, &seen, &why);
    if (rc != NUMACOLL_OK)
        return rc;
    atomic_store_explicit(&bank->nreaders, (uint64_t)(t->p - 1),
                          memory_order_relaxed);
    atomic_store_explicit(&bank->op, t->op, memory_order_release);
    return NUMACOLL_OK;
}

/* ---- dispatch -------------------------------------------------------- */

const nc__choice_t *nc__team_choice_alg(const numacoll_team_t *t,
                                        nc__coll_t coll, int alg,
                                        size_t nbytes)
{
    const nc__choice_t *ch = nc__team_choice(t, coll, nbytes);
    if ((int)ch->alg == alg)
        return ch;
    for (int i = 0; i < t->tune.n[coll]; i++)
        if ((int)t->tune.e[coll][i].ch.alg == alg)
            return &t->tune.e[coll][i].ch;
    return NULL;
}

int nc__bcast_geometry(numacoll_team_t *t, const nc__choice_t *ch, int root)
{
    if (ch->f == t->geo_f && ch->s == t->geo_s && ch->q == t->geo_q)
        return NUMACOLL_OK;
    if (t->rank == root)
        for (unsigned k = 0; k < t->q_max; k++) {
            uint64_t seen;
            nc__wait_why_t why = {-1, "drained bank (new geometry)", (long)k,
                                  (long)t->op};
            int rc = nc__wait(t, &t->banks[k].nreaders, NC_WAIT_EQ, 0, &seen,
                              &why);
            if (rc != NUMACOLL_OK)
                return rc;
        }
    t->geo_f = ch->f;
    t->geo_s = ch->s;
    t->geo_q = ch->q;
    return NUMACOLL_OK;
}

int nc__bcast_run(numacoll_team_t *t, size_t nbytes, int root, nc__io_t *io)
{
    const nc__choice_t *ch = nc__team_choice(t, NC_COLL_BCAST, nbytes);
    io->cin = nc__copy_pick(ch->copy, 0);
    io->cout = nc__copy_pick(ch->copy, nbytes);
    switch (ch->alg) {
    case NC_ALG_BCAST_INLINE:
        return nc__bcast_inline(t, ch, nbytes, root, io);
    case NC_ALG_BCAST_PIPELINED: {
        int rc = nc__bcast_geometry(t, ch, root);
        return rc != NUMACOLL_OK ? rc
                                 : nc__bcast_pipelined(t, ch, nbytes, root, io);
    }
    case NC_ALG_BCAST_CMA:   /* only when cma_ok: tune_setup replaced it */
        return nc__bcast_cma(t, ch, nbytes, root, io);
    default:
        return nc__team_fail(t, NUMACOLL_ERR_ARG, "algorithm %s is not a "
                             "bcast", nc__algs[ch->alg].name);
    }
}

static int bcast_io(numacoll_team_t *t, size_t nbytes, int root, nc__io_t *io)
{
    if (root < 0 || root >= t->p)
        return nc__team_fail(t, NUMACOLL_ERR_ARG,
                             "bcast root %d is outside the team of %d", root,
                             t->p);
    int rc = nc__team_check_abort(t);
    if (rc != NUMACOLL_OK)
        return rc;
    if (t->p > 1 && nbytes > 0) {
        rc = nc__bcast_run(t, nbytes, root, io);
        if (rc != NUMACOLL_OK)
            return rc;
    }
    t->counters.bcast++;
    if (io->failed)
        return nc__team_fail(t, NUMACOLL_ERR_CALLBACK,
                             "a %s callback failed during bcast from root %d",
                             t->rank == root ? "pack" : "unpack", root);
    return NUMACOLL_OK;
}

int numacoll_bcast(numacoll_team_t *t, void *buf, size_t nbytes, int root)
{
    if (!t)
        return NUMACOLL_ERR_ARG;
    if (!buf && nbytes > 0)
        return nc__team_fail(t, NUMACOLL_ERR_ARG,
                             "bcast of %zu bytes from a NULL buffer", nbytes);
    nc__io_t io = {.buf = buf};
    return bcast_io(t, nbytes, root, &io);
}

int numacoll_bcast_packed(numacoll_team_t *t, size_t nbytes, int root,
                          numacoll_pack_fn pack, numacoll_unpack_fn unpack,
                          void *ctx)
{
    if (!t)
        return NUMACOLL_ERR_ARG;
    if (nbytes > 0 && ((t->rank == root && !pack) ||
                       (t->rank != root && !unpack)))
        return nc__team_fail(t, NUMACOLL_ERR_ARG,
                             "bcast_packed needs a %s callback on rank %d",
                             t->rank == root ? "pack" : "unpack", t->rank);
    nc__io_t io = {.pack = pack, .unpack = unpack, .ctx = ctx};
    return bcast_io(t, nbytes, root, &io);
}

int numacoll_barrier(numacoll_team_t *t)
{
    if (!t)
        return NUMACOLL_ERR_ARG;
    int rc = nc__team_check_abort(t);
    if (rc == NUMACOLL_OK && t->p > 1)
        rc = nc__barrier_tree(t);
    if (rc == NUMACOLL_OK)
        t->counters.barrier++;
    return rc;
}
