/*
 * Notification trees: parent and children of a rank, for any root, as
 * integer functions of (rank, root, p, radix) — plus, for the numa shape,
 * the domains of each level of the hierarchy (nc__hier_t). The protocols
 * only ever ask "who notifies me" and "whom do I notify".
 *
 * Cost of one notification wave, as depth (hops from the root to the
 * deepest rank) and sends on the critical path (a rank notifies its
 * children one after the other):
 *  flat     depth 1;                     root sends p-1 times
 *  chain    depth p-1;                   1 send per hop
 *  kary     depth ~ log_k p;             up to k sends per hop
 *  knomial  depth <= ceil(log_k p);      (k-1)*ceil(log_k p) sends at most,
 *           largest subtree first so the far branches start early
 *  numa     per kept level L (outermost first) one hop from a head to
 *           the heads of its other sub-domains (D_L - 1 sends, flat; the
 *           only traffic that crosses a domain of level L, so D_L - 1 line
 *           transfers per notification), then a knomial inside every
 *           innermost domain: depth = levels + ceil(log_k ranks/domain)
 *  hier     the same with knomials of leader_radix between heads
 *  spec     the same with a shape per level (flat, chain, kary, knomial
 *           and a radix), as a tuning rule's l3tree= ... toptree= name
 *           them: the depth is the sum of the levels' depths
 *
 * Memory: nothing for the first four (every root is a rotation of the
 * root-0 shape), about 6 (levels + 1) p ints for numa.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll/tree.h"
#include "topo/topo.h"

/* ---- names ------------------------------------------------------------ */

/* Indexed by numacoll_tree_kind_t; the parser reads the same table. */
static const char *const tree_names[NUMACOLL_TREE_COUNT] = {
    [NUMACOLL_TREE_FLAT] = "flat",       [NUMACOLL_TREE_CHAIN] = "chain",
    [NUMACOLL_TREE_KARY] = "kary",       [NUMACOLL_TREE_KNOMIAL] = "knomial",
    [NUMACOLL_TREE_NUMA] = "numa",
};

const char *numacoll_tree_name(numacoll_tree_kind_t kind)
{
    int k = (int)kind;
    return k >= 0 && k < NUMACOLL_TREE_COUNT ? tree_names[k] : NULL;
}

int numacoll_tree_parse(const char *name)
{
    if (!name)
        return -1;
    for (int k = 0; k < NUMACOLL_TREE_COUNT; k++)
        if (strcmp(name, tree_names[k]) == 0)
            return k;
    return -1;
}

/* ---- integer shapes, relative to root 0 ------------------------------- */

int nc__knomial_parent(int v, int k)
{
    if (v <= 0 || k < 2)
        return -1;
    /* The parent clears v's lowest non-zero base-k digit. pw <= v holds on
     * every pass (the loop continues only when v/pw >= k), so pw*k cannot
     * overflow. */
    int pw = 1;
    while ((v / pw) % k == 0)
        pw *= k;
    return v - ((v / pw) % k) * pw;
}

int nc__knomial_children(int v, int k, int p, int *out)
{
    if (v < 0 || k < 2 || v >= p)
        return 0;
    /* Levels i with k^i below v's lowest non-zero digit (every level with
     * k^i < p for v = 0). long long: k^i may pass INT_MAX before the loop
     * sees it is past p. */
    long long lim = p;
    if (v > 0) {
        long long pw = 1;
        while ((v / pw) % k == 0)
            pw *= k;
        lim = pw;
    }
    long long top = 1;
    while (top * k < lim && top * k < p)
        top *= k;
    int n = 0;
    /* Highest level first: its subtrees are the largest (k^i ranks, fewer
     * only where p truncates), and within a level smaller j comes first
     * because p truncates the later ones. */
    for (long long pw = top; pw >= 1; pw /= k) {
        if (pw >= lim)
            continue;
        for (long long j = 1; j < k; j++) {
            long long c = v + j * pw;
            if (c >= p)
                break;
            out[n++] = (int)c;
        }
    }
    return n;
}

int nc__kary_parent(int v, int k)
{
    if (v <= 0 || k < 2)
        return -1;
    return (v - 1) / k;
}

int nc__kary_children(int v, int k, int p, int *out)
{
    if (v < 0 || k < 2 || v >= p)
        return 0;
    int n = 0;
    long long first = (long long)k * v + 1; /* k*v may exceed INT_MAX */
    for (long long c = first; c < first + k && c < p; c++)
        out[n++] = (int)c;
    return n;
}

/* Most children any rank has in a knomial tree of n ranks: the root's
 * count, since a rank with a lower digit gets a subset of the root's
 * levels and, per level, no more j's (v + j*k^i < n implies j*k^i < n). */
static int knomial_max(int n, int k)
{
    int m = 0;
    for (long long pw = 1; pw < n; pw *= k) {
        long long j = (n - 1) / pw;
        m += (int)(j < k - 1 ? j : k - 1);
    }
    return m;
}

/* The four integer shapes over n positions relative to the root at 0:
 * parent of v (-1 for none), children of v, most children of any v. The
 * rotations below and every level of the hierarchical shape use them. */
static int shape_parent(int kind, int k, int v)
{
    if (v <= 0)
        return -1;
    switch (kind) {
    case NUMACOLL_TREE_FLAT:  return 0;
    case NUMACOLL_TREE_CHAIN: return v - 1;
    case NUMACOLL_TREE_KARY:  return nc__kary_parent(v, k);
    default:                  return nc__knomial_parent(v, k);
    }
}

static int shape_children(int kind, int k, int v, int n, int *out)
{
    int c = 0;
    switch (kind) {
    case NUMACOLL_TREE_FLAT:
        for (int i = 1; v == 0 && i < n; i++)
            out[c++] = i;
        return c;
    case NUMACOLL_TREE_CHAIN:
        if (v >= 0 && v < n - 1)
            out[c++] = v + 1;
        return c;
    case NUMACOLL_TREE_KARY:
        return nc__kary_children(v, k, n, out);
    default:
        return nc__knomial_children(v, k, n, out);
    }
}

static int shape_max(int kind, int k, int n)
{
    switch (kind) {
    case NUMACOLL_TREE_FLAT:  return n - 1;
    case NUMACOLL_TREE_CHAIN: return n > 1;
    case NUMACOLL_TREE_KARY:  return k < 2 ? 0 : (n - 1 < k ? n - 1 : k);
    default:                  return k < 2 ? 0 : knomial_max(n, k);
    }
}

/* ---- rotations -------------------------------------------------------- */

/* Written so that no intermediate sum passes INT_MAX for any p. */
static int rel_of(int rank, int root, int n)
{
    return rank >= root ? rank - root : rank - root + n;
}

static int abs_of(int v, int root, int n)
{
    return v < n - root ? v + root : v - (n - root);
}

/* ---- hierarchical (numa) shape ---------------------------------------- */

/* At level j of the hierarchy (topo.h: nc__hier_t) the units of a domain
 * (ranks at level 0, level-(j-1) domains above) form a tree over their
 * positions, rotated so that the unit holding the root (the first unit in
 * a domain without it) is position 0; a unit is represented by its head:
 * the root in the unit that holds it, else the unit's lowest rank. Each
 * level has its own shape (lkind, lrad): by default a knomial of radix at
 * level 0, and above it flat (leader_radix < 2: the head of a domain
 * notifies the heads of its other units itself, the numa Bcast) or
 * knomials of leader_radix (hier); a tuning rule's level trees
 * (l3tree=kary:4, ..., nc__tree_init_spec) replace the default per named
 * level. */

static int *hat(const nc__tree_t *t, int *base, int j)
{
    return nc__hier_at(&t->h, base, j);
}

/* Unit of rank at level j. */
static int unit_of(const nc__tree_t *t, int j, int rank)
{
    return j == 0 ? rank : hat(t, t->h.up, j - 1)[rank];
}

static int unit_head(const nc__tree_t *t, int root, int j, int u)
{
    if (j == 0)
        return u;
    if (hat(t, t->h.up, j - 1)[root] == u)
        return root;
    return hat(t, t->h.low, j - 1)[u];
}


/* Where rank's unit sits in its level-j domain: first unit s in mem, m
 * units, base (the root's unit's position, or 0), v relative to base. */
typedef struct spot {
    int s, m, base, v;
} spot_t;

static spot_t spot_of(const nc__tree_t *t, int root, int j, int rank)
{
    const int *up = hat(t, t->h.up, j), *st = hat(t, t->h.start, j),
              *pos = hat(t, t->h.pos, j);
    int d = up[rank];
    spot_t sp = {.s = st[d], .m = st[d + 1] - st[d], .base = 0};
    if (up[root] == d)
        sp.base = pos[unit_of(t, j, root)];
    sp.v = rel_of(pos[unit_of(t, j, rank)], sp.base, sp.m);
    return sp;
}

static int hier_parent(const nc__tree_t *t, int root, int rank)
{
    for (int j = 0; j <= t->h.nlev; j++) {
        spot_t sp = spot_of(t, root, j, rank);
        if (sp.v == 0)
            continue;  /* rank heads its level-j domain: look one up */
        int u = shape_parent(t->lkind[j], t->lrad[j], sp.v);
        if (u < 0)
            return -1;
        int unit = hat(t, t->h.mem, j)[sp.s + abs_of(u, sp.base, sp.m)];
        return unit_head(t, root, j, unit);
    }
    return -1;
}

static int hier_children(const nc__tree_t *t, int root, int rank, int *out)
{
    spot_t sp[NUMACOLL_LEVELS_MAX + 1];
    int top = 0;
    /* rank heads its unit at levels 0 .. top: it has children there */
    for (int j = 0; j <= t->h.nlev; j++) {
        sp[j] = spot_of(t, root, j, rank);
        top = j;
        if (sp[j].v != 0)
            break;
    }
    int n = 0;
    /* Outermost first: those subtrees are the largest and their hops the
     * slowest, so they start earliest. */
    for (int j = top; j >= 0; j--) {
        const int *mem = hat(t, t->h.mem, j);
        int *kids = out + n, nk = 0;
        if (t->lkind[j] == NUMACOLL_TREE_FLAT) {
            /* the head lists the others in unit order */
            for (int i = 0; sp[j].v == 0 && i < sp[j].m; i++)
                if (i != sp[j].base)
                    kids[nk++] = i;
        } else {
            nk = shape_children(t->lkind[j], t->lrad[j], sp[j].v, sp[j].m,
                                kids);
            for (int i = 0; i < nk; i++)
                kids[i] = abs_of(kids[i], sp[j].base, sp[j].m);
        }
        for (int i = 0; i < nk; i++)
            kids[i] = unit_head(t, root, j, mem[sp[j].s + kids[i]]);
        n += nk;
    }
    return n;
}

/* ---- tree object ------------------------------------------------------ */

static int valid_kind(int kind)
{
    return kind >= 0 && kind < NUMACOLL_TREE_COUNT;
}

void nc__tree_fini(nc__tree_t *t)
{
    if (!t)
        return;
    nc__hier_fini(&t->h);
    free(t->leader_of);
    memset(t, 0, sizeof *t);
}

int nc__tree_init(nc__tree_t *t, int kind, int p, int radix,
                  const numacoll_locality_t *loc)
{
    if (!t)
        return NUMACOLL_ERR_ARG;
    memset(t, 0, sizeof *t);
    if (p < 1 || !valid_kind(kind))
        return NUMACOLL_ERR_ARG;
    if ((kind == NUMACOLL_TREE_KARY || kind == NUMACOLL_TREE_KNOMIAL ||
         kind == NUMACOLL_TREE_NUMA) && radix < 2)
        return NUMACOLL_ERR_ARG;
    if (kind == NUMACOLL_TREE_NUMA)
        return nc__tree_init_loc(t, p, radix, 0, NUMACOLL_LEVEL_NUMA, loc);
    t->kind = kind;
    t->p = p;
    t->radix = radix;
    return NUMACOLL_OK;
}

/* Level j's shape from the rule's level trees lt (NULL: none): the kept
 * level's own entry, the team's (NC_LT_TOP) at j = nlev; -1 if lt holds
 * an invalid shape. */
static int level_shape(nc__tree_t *t, int j, const uint16_t *lt)
{
    int kind = j == 0 ? NUMACOLL_TREE_KNOMIAL
                      : t->leader_radix < 2 ? NUMACOLL_TREE_FLAT
                                            : NUMACOLL_TREE_KNOMIAL;
    int k = j == 0 ? t->radix : t->leader_radix;
    uint16_t v = 0;
    if (lt)
        v = lt[j == t->h.nlev ? NC_LT_TOP : t->h.code[j]];
    if (v) {
        kind = nc__lt_kind(v);
        k = nc__lt_radix(v);
        if (kind < NUMACOLL_TREE_FLAT || kind > NUMACOLL_TREE_KNOMIAL ||
            ((kind == NUMACOLL_TREE_KARY || kind == NUMACOLL_TREE_KNOMIAL) &&
             k < 2))
            return -1;
    }
    t->lkind[j] = kind;
    t->lrad[j] = k;
    return 0;
}

int nc__tree_init_spec(nc__tree_t *t, int p, int radix, int leader_radix,
                       const uint16_t *lt, int levels, const nc__doms_t *doms)
{
    if (!t)
        return NUMACOLL_ERR_ARG;
    memset(t, 0, sizeof *t);
    if (p < 1 || radix < 2 || leader_radix == 1 || leader_radix < 0 || !doms)
        return NUMACOLL_ERR_ARG;
    int rc = nc__hier_init(&t->h, p, levels, doms);
    if (rc != NUMACOLL_OK)
        return rc;
    t->radix = radix;
    t->leader_radix = leader_radix;
    for (int j = 0; j <= t->h.nlev; j++)
        if (level_shape(t, j, lt) != 0) {
            nc__tree_fini(t);
            return NUMACOLL_ERR_ARG;
        }
    t->leader_of = malloc((size_t)p * sizeof *t->leader_of);
    if (!t->leader_of) {
        nc__tree_fini(t); /* leaves *t zeroed, so a second fini is harmless */
        return NUMACOLL_ERR_NOMEM;
    }
    t->kind = NUMACOLL_TREE_NUMA;
    t->p = p;
    /* block 0 is the innermost kept level, or the team when none is kept */
    t->ngroups = t->h.ndom[0];
    t->members = t->h.mem;
    for (int r = 0; r < p; r++)
        t->leader_of[r] = t->h.low[t->h.up[r]];
    return NUMACOLL_OK;
}

int nc__tree_init_levels(nc__tree_t *t, int p, int radix, int leader_radix,
                         int levels, const nc__doms_t *doms)
{
    return nc__tree_init_spec(t, p, radix, leader_radix, NULL, levels, doms);
}

int nc__tree_init_loc(nc__tree_t *t, int p, int radix, int leader_radix,
                      int levels, const numacoll_locality_t *loc)
{
    if (t)
        memset(t, 0, sizeof *t);
    if (!t || p < 1 || !loc)
        return NUMACOLL_ERR_ARG;
    nc__doms_t *d = malloc((size_t)p * sizeof *d);
    if (!d)
        return NUMACOLL_ERR_NOMEM;
    for (int r = 0; r < p; r++)
        nc__topo_doms(&loc[r], NULL, &d[r]);
    int rc = nc__tree_init_levels(t, p, radix, leader_radix, levels, d);
    free(d);
    return rc;
}

int nc__tree_init_hier(nc__tree_t *t, int p, int radix, int leader_radix,
                       const numacoll_locality_t *loc)
{
    if (leader_radix < 2) {
        if (t)
            memset(t, 0, sizeof *t);
        return NUMACOLL_ERR_ARG;
    }
    return nc__tree_init_loc(t, p, radix, leader_radix, NUMACOLL_LEVEL_NUMA,
                             loc);
}

/* Out-of-range input gets "no parent" / "no children", never a crash:
 * nc__tree_check relies on it to report a broken tree. */
static int usable(const nc__tree_t *t, int root, int rank)
{
    return t && t->p >= 1 && valid_kind(t->kind) && root >= 0 &&
           root < t->p && rank >= 0 && rank < t->p &&
           (t->kind != NUMACOLL_TREE_NUMA || (t->h.up && t->h.p == t->p));
}

int nc__tree_parent(const nc__tree_t *t, int root, int rank)
{
    if (!usable(t, root, rank) || rank == root)
        return -1;
    if (t->kind == NUMACOLL_TREE_NUMA)
        return hier_parent(t, root, rank);
    int p = t->p, u = shape_parent(t->kind, t->radix, rel_of(rank, root, p));
    return u < 0 ? -1 : abs_of(u, root, p);
}

int nc__tree_children(const nc__tree_t *t, int root, int rank, int *out)
{
    if (!usable(t, root, rank))
        return 0;
    if (t->kind == NUMACOLL_TREE_NUMA)
        return hier_children(t, root, rank, out);
    int p = t->p,
        n = shape_children(t->kind, t->radix, rel_of(rank, root, p), p, out);
    for (int i = 0; i < n; i++)
        out[i] = abs_of(out[i], root, p);
    return n;
}

int nc__tree_max_children(const nc__tree_t *t)
{
    if (!t || t->p < 1 || !valid_kind(t->kind))
        return 0;
    if (t->kind != NUMACOLL_TREE_NUMA)
        return shape_max(t->kind, t->radix, t->p);
    if (t->radix < 2 || !t->h.up)
        return 0;
    /* Per level, what the head of the biggest domain has there; a sum over
     * levels of (units - 1) of one domain each stays <= p - 1. */
    int m = 0;
    for (int j = 0; j <= t->h.nlev; j++) {
        const int *st = hat(t, t->h.start, j);
        int big = 0;
        for (int d = 0; d < t->h.ndom[j]; d++)
            if (st[d + 1] - st[d] > big)
                big = st[d + 1] - st[d];
        m += shape_max(t->lkind[j], t->lrad[j], big);
    }
    return m;
}

int nc__tree_relays(const nc__tree_t *t, int root, int rank)
{
    return usable(t, root, rank) && t->kind == NUMACOLL_TREE_NUMA &&
           t->h.nlev > 0 && t->h.up[rank] != t->h.up[root] &&
           t->h.low[t->h.up[rank]] == rank;
}

int nc__tree_relay_source(const nc__tree_t *t, int root, int rank)
{
    if (!usable(t, root, rank) || t->kind != NUMACOLL_TREE_NUMA ||
        t->h.nlev == 0 || t->h.up[rank] == t->h.up[root])
        return root;
    /* A relay's parent heads a domain of its own (every unit above level 0
     * is represented by its head), so it holds a copy: the root's or its
     * relay's. */
    if (nc__tree_relays(t, root, rank))
        return nc__tree_parent(t, root, rank);
    return t->h.low[t->h.up[rank]];
}

/* ---- checker ---------------------------------------------------------- */

int nc__tree_check(const nc__tree_t *t, int root, char *msg, size_t msglen)
{
    char dummy[1];
    if (!msg || msglen == 0) { /* callers that only want the verdict */
        msg = dummy;
        msglen = sizeof dummy;
    }
    msg[0] = '\0';
    if (!t || t->p < 1 || !valid_kind(t->kind)) {
        snprintf(msg, msglen, "tree is not initialised (p or kind invalid).");
        return -1;
    }
    int p = t->p;
    if (root < 0 || root >= p) {
        snprintf(msg, msglen, "root %d is outside 0..%d.", root, p - 1);
        return -1;
    }
    int mc = nc__tree_max_children(t);
    if (mc < 0 || mc > p - 1) {
        snprintf(msg, msglen, "max_children %d is outside 0..%d.", mc, p - 1);
        return -1;
    }
    int rc = -1;
    /* One block: queue[p], kids[p], seen[p]. kids holds p entries, not mc,
     * so a children() that exceeds its own bound by a little is reported
     * instead of overrunning. */
    size_t bytes = (size_t)p * (2 * sizeof(int) + 1);
    int *queue = malloc(bytes);
    if (!queue) {
        snprintf(msg, msglen, "cannot allocate %zu bytes to check a tree of "
                 "%d ranks.", bytes, p);
        return -1;
    }
    int *kids = queue + p;
    unsigned char *seen = (unsigned char *)(kids + p);
    memset(seen, 0, (size_t)p);
    int par = nc__tree_parent(t, root, root);
    if (par != -1) {
        snprintf(msg, msglen, "root %d has parent %d instead of -1.", root,
                 par);
        goto out;
    }
    long long edges = 0;
    int head = 0, tail = 0;
    queue[tail++] = root;
    seen[root] = 1;
    /* Breadth-first from the root: each rank must be met exactly once, so
     * a cycle or a shared child shows up as a second visit. */
    while (head < tail) {
        int node = queue[head++];
        int n = nc__tree_children(t, root, node, kids);
        if (n < 0 || n > mc) {
            snprintf(msg, msglen, "rank %d (root %d) has %d children, above "
                     "max_children %d.", node, root, n, mc);
            goto out;
        }
        edges += n;
        for (int i = 0; i < n; i++) {
            int c = kids[i];
            if (c < 0 || c >= p) {
                snprintf(msg, msglen, "rank %d (root %d) lists child %d "
                         "outside 0..%d.", node, root, c, p - 1);
                goto out;
            }
            if (seen[c]) {
                snprintf(msg, msglen, "rank %d is reached twice (again as "
                         "child of %d, root %d).", c, node, root);
                goto out;
            }
            par = nc__tree_parent(t, root, c);
            if (par != node) {
                snprintf(msg, msglen, "rank %d is a child of %d but its "
                         "parent is %d (root %d).", c, node, par, root);
                goto out;
            }
            seen[c] = 1;
            queue[tail++] = c;
        }
    }
    if (tail != p) {
        int miss = 0;
        while (seen[miss])
            miss++;
        snprintf(msg, msglen, "only %d of %d ranks are reached from root %d; "
                 "rank %d is not.", tail, p, root, miss);
        goto out;
    }
    /* Implied by "each rank exactly once" (every listed child is a new
     * rank), but it is the invariant callers rely on, so it is stated. */
    if (edges != p - 1) {
        snprintf(msg, msglen, "tree rooted at %d has %lld edges instead of "
                 "%d.", root, edges, p - 1);
        goto out;
    }
    rc = 0;
out:
    free(queue);
    return rc;
}
