/*
 * Notification trees: parent and children of a rank, for any root, as
 * integer functions of (rank, root, p, radix) — plus, for the numa shape,
 * the NUMA groups of nc__topo_numa_groups(). The Bcast/Barrier protocols
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
 *  numa     1 hop to each remote leader (ngroups-1 sends, the only
 *           cross-node traffic), then a knomial inside every node
 *
 * Memory: nothing for the first four (every root is a rotation of the
 * root-0 shape), five arrays of p ints for numa.
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

/* ---- numa shape ------------------------------------------------------- */

/* Group g's members as a knomial over positions rotated so that `base`
 * (the root's position in its own group, 0 = the leader elsewhere) is 0. */
static int numa_base(const nc__tree_t *t, int root, int g)
{
    return t->group_of[root] == g ? t->pos_in_group[root] : 0;
}

/* Head of group g: the root in its own group, the leader elsewhere. */
static int numa_head(const nc__tree_t *t, int root, int g)
{
    return g == t->group_of[root] ? root : t->members[t->group_start[g]];
}

static int numa_parent(const nc__tree_t *t, int root, int rank)
{
    int g = t->group_of[rank];
    if (g != t->group_of[root] && t->leader_of[rank] == rank) {
        if (t->leader_radix < 2)
            return root;
        /* hier: the heads form a knomial over groups rotated to the root's */
        int gr = t->group_of[root], ng = t->ngroups;
        int u = nc__knomial_parent(rel_of(g, gr, ng), t->leader_radix);
        return numa_head(t, root, abs_of(u, gr, ng));
    }
    int s = t->group_start[g], n = t->group_start[g + 1] - s;
    int base = numa_base(t, root, g);
    int u = nc__knomial_parent(rel_of(t->pos_in_group[rank], base, n),
                               t->radix);
    return u < 0 ? -1 : t->members[s + abs_of(u, base, n)];
}

static int numa_children(const nc__tree_t *t, int root, int rank, int *out)
{
    int n_out = 0;
    int g = t->group_of[rank];
    if (t->leader_radix >= 2) {
        /* hier: a head lists the heads of its knomial child groups first */
        if (rank == numa_head(t, root, g)) {
            int gr = t->group_of[root], ng = t->ngroups;
            n_out = nc__knomial_children(rel_of(g, gr, ng), t->leader_radix,
                                         ng, out);
            for (int i = 0; i < n_out; i++)
                out[i] = numa_head(t, root, abs_of(out[i], gr, ng));
        }
    } else if (rank == root)
        /* Remote leaders first: their subtrees are whole nodes and the
         * cross-node hop is the slowest one. */
        for (int h = 0; h < t->ngroups; h++)
            if (h != g)
                out[n_out++] = t->members[t->group_start[h]];
    int s = t->group_start[g], n = t->group_start[g + 1] - s;
    int base = numa_base(t, root, g);
    int *kids = out + n_out;
    int nk = nc__knomial_children(rel_of(t->pos_in_group[rank], base, n),
                                  t->radix, n, kids);
    for (int i = 0; i < nk; i++)
        kids[i] = t->members[s + abs_of(kids[i], base, n)];
    return n_out + nk;
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
    free(t->group_of);
    free(t->leader_of);
    free(t->members);
    free(t->group_start);
    free(t->pos_in_group);
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
    if (kind == NUMACOLL_TREE_NUMA && !loc)
        return NUMACOLL_ERR_ARG;
    t->kind = kind;
    t->p = p;
    t->radix = radix;
    if (kind != NUMACOLL_TREE_NUMA)
        return NUMACOLL_OK;

    size_t bytes = (size_t)p * sizeof(int);
    t->group_of = malloc(bytes);
    t->leader_of = malloc(bytes);
    t->members = malloc(bytes);
    t->group_start = malloc(bytes + sizeof(int)); /* ngroups+1 <= p+1 */
    t->pos_in_group = malloc(bytes);
    if (!t->group_of || !t->leader_of || !t->members || !t->group_start ||
        !t->pos_in_group) {
        nc__tree_fini(t); /* leaves *t zeroed, so a second fini is harmless */
        return NUMACOLL_ERR_NOMEM;
    }
    t->ngroups = nc__topo_numa_groups(loc, p, t->group_of, t->leader_of,
                                      t->members, t->group_start);
    for (int g = 0; g < t->ngroups; g++)
        for (int i = t->group_start[g]; i < t->group_start[g + 1]; i++)
            t->pos_in_group[t->members[i]] = i - t->group_start[g];
    return NUMACOLL_OK;
}

int nc__tree_init_hier(nc__tree_t *t, int p, int radix, int leader_radix,
                       const numacoll_locality_t *loc)
{
    if (leader_radix < 2) {
        if (t)
            memset(t, 0, sizeof *t);
        return NUMACOLL_ERR_ARG;
    }
    int rc = nc__tree_init(t, NUMACOLL_TREE_NUMA, p, radix, loc);
    if (rc == NUMACOLL_OK)
        t->leader_radix = leader_radix;
    return rc;
}

/* Out-of-range input gets "no parent" / "no children", never a crash:
 * nc__tree_check relies on it to report a broken tree. */
static int usable(const nc__tree_t *t, int root, int rank)
{
    return t && t->p >= 1 && valid_kind(t->kind) && root >= 0 &&
           root < t->p && rank >= 0 && rank < t->p &&
           (t->kind != NUMACOLL_TREE_NUMA ||
            (t->group_of && t->leader_of && t->members && t->group_start &&
             t->pos_in_group));
}

int nc__tree_parent(const nc__tree_t *t, int root, int rank)
{
    if (!usable(t, root, rank) || rank == root)
        return -1;
    int p = t->p, v = rel_of(rank, root, p), u;
    switch (t->kind) {
    case NUMACOLL_TREE_FLAT:    u = 0; break;
    case NUMACOLL_TREE_CHAIN:   u = v - 1; break;
    case NUMACOLL_TREE_KARY:    u = nc__kary_parent(v, t->radix); break;
    case NUMACOLL_TREE_KNOMIAL: u = nc__knomial_parent(v, t->radix); break;
    default:                    return numa_parent(t, root, rank);
    }
    return u < 0 ? -1 : abs_of(u, root, p);
}

int nc__tree_children(const nc__tree_t *t, int root, int rank, int *out)
{
    if (!usable(t, root, rank))
        return 0;
    int p = t->p, v = rel_of(rank, root, p), n = 0;
    switch (t->kind) {
    case NUMACOLL_TREE_FLAT:
        if (v == 0)
            for (int c = 1; c < p; c++)
                out[n++] = c;
        break;
    case NUMACOLL_TREE_CHAIN:
        if (v < p - 1)
            out[n++] = v + 1;
        break;
    case NUMACOLL_TREE_KARY:
        n = nc__kary_children(v, t->radix, p, out);
        break;
    case NUMACOLL_TREE_KNOMIAL:
        n = nc__knomial_children(v, t->radix, p, out);
        break;
    default:
        return numa_children(t, root, rank, out);
    }
    for (int i = 0; i < n; i++)
        out[i] = abs_of(out[i], root, p);
    return n;
}

int nc__tree_max_children(const nc__tree_t *t)
{
    if (!t || t->p < 1 || !valid_kind(t->kind))
        return 0;
    int p = t->p;
    switch (t->kind) {
    case NUMACOLL_TREE_FLAT:
        return p - 1;
    case NUMACOLL_TREE_CHAIN:
        return p > 1;
    case NUMACOLL_TREE_KARY:
        return t->radix < 2 ? 0 : (p - 1 < t->radix ? p - 1 : t->radix);
    case NUMACOLL_TREE_KNOMIAL:
        return t->radix < 2 ? 0 : knomial_max(p, t->radix);
    default: {
        if (t->radix < 2 || !t->group_start)
            return 0;
        /* The root has every remote leader plus its own group's knomial
         * children; a leader elsewhere has only the latter. hier: a head
         * has at most the knomial root's count of child groups. */
        int big = 0;
        for (int g = 0; g < t->ngroups; g++) {
            int n = t->group_start[g + 1] - t->group_start[g];
            if (n > big)
                big = n;
        }
        int heads = t->leader_radix >= 2
                        ? knomial_max(t->ngroups, t->leader_radix)
                        : t->ngroups - 1;
        return heads + knomial_max(big, t->radix);
    }
    }
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
