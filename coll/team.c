/*
 * Team creation and destruction, and the public entry points that dispatch
 * to the algorithms. Creation is collective through the caller's bootstrap;
 * every exchange carries a status so that all ranks agree to fail together
 * instead of some waiting forever for a rank that gave up.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

static void team_free(numacoll_team_t *t)
{
    if (!t)
        return;
    nc__seg_unmap(t->base, t->layout.total);
    nc__red_fini(t);
    nc__barrier_fini(t);
    nc__tree_fini(&t->tree);
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

    /* 2. Shapes: leaders, tree, layout (pure, identical on every rank). */
    {
        int *g = malloc((size_t)p * sizeof *g), *m = malloc((size_t)p * sizeof *m),
            *gs = malloc((size_t)(p + 1) * sizeof *gs);
        if (g && m && gs)
            nc__topo_numa_groups(t->loc, p, g, t->leaders, m, gs);
        free(g);
        free(m);
        free(gs);
        if (!(g && m && gs)) {
            team_free(t);
            return NUMACOLL_ERR_NOMEM;
        }
    }
    rc = nc__tree_init(&t->tree, t->cfg.tree, p, (int)t->cfg.radix, t->loc);
    if (rc == NUMACOLL_OK) {
        t->children = malloc((size_t)(nc__tree_max_children(&t->tree) + 1) *
                             sizeof *t->children);
        if (!t->children)
            rc = NUMACOLL_ERR_NOMEM;
    }
    if (rc == NUMACOLL_OK)
        rc = nc__barrier_init(t);
    if (rc == NUMACOLL_OK)
        rc = nc__red_init(t);
    if (rc == NUMACOLL_OK &&
        nc__layout_plan(&t->layout, p, (size_t)sysconf(_SC_PAGESIZE),
                        t->cfg.queue_depth, t->cfg.banks,
                        t->cfg.frag_size, t->cfg.reduce_depth,
                        t->cfg.reduce_frag_size) != 0)
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
    rc = agree(b, rc, &who);
    if (rc != NUMACOLL_OK) {
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
        t->hdr->q = t->cfg.banks;
        t->hdr->s = t->cfg.queue_depth;
        t->hdr->f = t->cfg.frag_size;
        int32_t *leaders = (int32_t *)(t->base + NC_HDR_FIXED);
        for (int r = 0; r < p; r++)
            leaders[r] = t->leaders[r];
        for (unsigned k = 0; k < t->cfg.banks; k++) {
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

/* The algorithm for a Bcast of nbytes: a pure function of the size (and,
 * once tuning tables exist, of the team), identical on every rank. */
static nc__alg_t bcast_choose(const numacoll_team_t *t, size_t nbytes)
{
    (void)t;
    return nbytes <= NC_INLINE_MAX ? NC_ALG_BCAST_INLINE
                                   : NC_ALG_BCAST_PIPELINED;
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
        switch (bcast_choose(t, nbytes)) {
        case NC_ALG_BCAST_INLINE:
            rc = nc__bcast_inline(t, nbytes, root, io);
            break;
        default:
            rc = nc__bcast_pipelined(t, nbytes, root, io);
            break;
        }
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
