/*
 * What every layer above uses of a team, and nothing of its making: the
 * failure record (last_error, the team's abort word), the trees and rules
 * resolved at creation, and the hierarchy's description. team.c makes and
 * frees teams and is the only file above the collectives that calls into
 * them; these pieces sit at the bottom (coll/team.h says the layering).
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "coll/algs.h"
#include "coll/team.h"
#include "coll/wake.h"
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
    /* sleepers look at the abort word when they wake */
    if (t->oversub)
        nc__wake_slow(t, 1);
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

int nc__team_hierarchy(const numacoll_team_t *t, char *buf, size_t len)
{
    nc__hier_t h;
    int n = 0;
    if (nc__hier_init(&h, t->p, t->cfg.levels, t->doms) == NUMACOLL_OK)
        n = nc__hier_describe(&h, buf, len);
    else if (buf && len)
        n = snprintf(buf, len, "%d ranks", t->p);
    nc__hier_fini(&h);
    return n;
}

const nc__tree_t *nc__team_tree(const numacoll_team_t *t, int kind, int k,
                                int hier, const uint16_t *lt)
{
    uint16_t key[NUMACOLL_LEVEL_END];
    nc__team_tree_key(kind, hier, lt, key);
    for (int i = 0; i < t->ntrees; i++)
        if (t->trees[i].kind == kind && t->trees[i].k == k &&
            t->trees[i].hier == hier &&
            memcmp(t->trees[i].lt, key, sizeof key) == 0)
            return &t->trees[i].tree;
    return NULL;
}

int nc__bcast_kin_find(numacoll_team_t *t, const nc__choice_t *ch, int root)
{
    const int w = t->kin_next;
    struct nc__kin *k = &t->kin[w];
    int *kids = t->children + (size_t)w * (size_t)t->kin_stride;
    t->kin_next = (w + 1) % NC_KIN_WAYS;
    k->tree = nc__team_tree(t, ch->tree, (int)ch->k, 0, ch->lt);
    k->nchild = nc__tree_children(k->tree, root, t->rank, kids);
    k->parent = nc__tree_parent(k->tree, root, t->rank);
    k->root = root;
    k->ch = ch;
    return w;
}

void nc__team_tree_key(int kind, int hier, const uint16_t *lt,
                       uint16_t key[NUMACOLL_LEVEL_END])
{
    /* only hierarchical trees have levels to shape */
    if (lt && (hier || kind == NUMACOLL_TREE_NUMA))
        memcpy(key, lt, NUMACOLL_LEVEL_END * sizeof *key);
    else
        memset(key, 0, NUMACOLL_LEVEL_END * sizeof *key);
}

size_t nc__team_rule_max(const numacoll_team_t *t, int coll, int alg)
{
    size_t m = 0;
    for (int i = 0; i < t->tune.n[coll]; i++)
        if ((int)t->tune.e[coll][i].ch.alg == alg && t->tune.e[coll][i].hi > m)
            m = t->tune.e[coll][i].hi;
    return m < nc__algs[alg].max_bytes ? m : nc__algs[alg].max_bytes;
}

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
