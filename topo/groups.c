/*
 * NUMA groups and leaders, level lists and hierarchies: pure functions of
 * the per-rank records, so the same code serves the real machine,
 * synthetic topologies and hand-written fixtures. O(p * groups) time per
 * level (no VLA: its stack use would grow with p); p is a few hundred at
 * most. NUMA groups use only the caller's arrays, a hierarchy one block.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "topo/topo.h"

/* Every unknown node (numa < 0) counts as the same node. */
static int node_of(const numacoll_locality_t *loc)
{
    return loc->numa < 0 ? -1 : loc->numa;
}

int nc__topo_numa_groups(const numacoll_locality_t *loc, int p, int *group_of,
                         int *leader_of, int *members, int *group_start)
{
    int ngroups = 0;
    /* Group g is identified by the rank that opened it (its leader), kept
     * in members[g] until the final pass. Ranks arrive in ascending order,
     * so the first rank of a node is its lowest, and groups come out
     * ordered by their lowest rank. */
    for (int r = 0; r < p; r++) {
        int node = node_of(&loc[r]);
        int g = 0;
        while (g < ngroups && node_of(&loc[members[g]]) != node)
            g++;
        if (g == ngroups)
            members[ngroups++] = r;
        group_of[r] = g;
    }
    for (int r = 0; r < p; r++)
        leader_of[r] = members[group_of[r]];

    /* Counting sort by group keeps ranks ascending inside each group.
     * group_start[g] first holds group g's start and serves as its fill
     * cursor; filled, it holds g's end (= start of g + 1), so the starts
     * are then shifted back up by one. */
    for (int g = 0; g <= ngroups; g++)
        group_start[g] = 0;
    for (int r = 0; r < p; r++)
        group_start[group_of[r] + 1]++;
    for (int g = 0; g < ngroups; g++)
        group_start[g + 1] += group_start[g];
    for (int r = 0; r < p; r++)
        members[group_start[group_of[r]]++] = r;
    for (int g = ngroups; g > 0; g--)
        group_start[g] = group_start[g - 1];
    group_start[0] = 0;
    return ngroups;
}

/* ---- level lists -------------------------------------------------------- */

/* Indexed by numacoll_level_t; "socket" is read as package too. */
static const char *const level_names[NUMACOLL_LEVEL_END] = {
    [NUMACOLL_LEVEL_L1] = "l1",     [NUMACOLL_LEVEL_L2] = "l2",
    [NUMACOLL_LEVEL_L3] = "l3",     [NUMACOLL_LEVEL_NUMA] = "numa",
    [NUMACOLL_LEVEL_PACKAGE] = "package",
};
static const char *const level_labels[NUMACOLL_LEVEL_END] = {
    [NUMACOLL_LEVEL_L1] = "L1",     [NUMACOLL_LEVEL_L2] = "L2",
    [NUMACOLL_LEVEL_L3] = "L3",     [NUMACOLL_LEVEL_NUMA] = "NUMA",
    [NUMACOLL_LEVEL_PACKAGE] = "packages",
};

const char *nc__level_label(int code)
{
    return code > 0 && code < NUMACOLL_LEVEL_END ? level_labels[code] : "?";
}

static int level_code(const char *s, size_t n)
{
    /* blanks around a name, as in "l3, numa" */
    while (n && isspace((unsigned char)*s)) {
        s++;
        n--;
    }
    while (n && isspace((unsigned char)s[n - 1]))
        n--;
    if (n == 6 && strncasecmp(s, "socket", 6) == 0)
        return NUMACOLL_LEVEL_PACKAGE;
    for (int c = 1; c < NUMACOLL_LEVEL_END; c++)
        if (strlen(level_names[c]) == n && strncasecmp(s, level_names[c], n) == 0)
            return c;
    return 0;
}

int numacoll_levels_parse(const char *text)
{
    if (!text)
        return -1;
    int packed = 0, n = 0;
    for (const char *s = text;; ) {
        size_t len = strcspn(s, ",:/+");
        int c = level_code(s, len);
        if (!c || n == NUMACOLL_LEVELS_MAX)
            return -1;
        packed |= c << (NUMACOLL_LEVEL_BITS * n++);
        if (!s[len])
            break;
        s += len + 1;
    }
    int codes[NUMACOLL_LEVELS_MAX];
    return nc__levels_unpack(packed, codes) < 0 ? -1 : packed; /* repeats */
}

int nc__levels_unpack(int levels, int codes[NUMACOLL_LEVELS_MAX])
{
    const int mask = (1 << NUMACOLL_LEVEL_BITS) - 1;
    if (levels <= 0 || levels >> (NUMACOLL_LEVELS_MAX * NUMACOLL_LEVEL_BITS))
        return -1;
    int n = 0;
    while (n < NUMACOLL_LEVELS_MAX &&
           ((levels >> (NUMACOLL_LEVEL_BITS * n)) & mask) != 0) {
        int c = (levels >> (NUMACOLL_LEVEL_BITS * n)) & mask;
        if (c >= NUMACOLL_LEVEL_END)
            return -1;
        for (int i = 0; i < n; i++)
            if (codes[i] == c)
                return -1;
        codes[n++] = c;
    }
    /* nothing after the first empty slot */
    if (levels >> (NUMACOLL_LEVEL_BITS * n))
        return -1;
    return n;
}

int numacoll_levels_format(int levels, char *buf, size_t len)
{
    int codes[NUMACOLL_LEVELS_MAX];
    int n = nc__levels_unpack(levels, codes);
    if (buf && len)
        buf[0] = '\0';
    if (n < 0)
        return -1;
    size_t o = 0;
    for (int i = 0; buf && i < n && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? "," : "",
                              level_names[codes[i]]);
    return 0;
}

void nc__topo_doms(const numacoll_locality_t *loc, const int32_t *caches,
                   nc__doms_t *d)
{
    d->id[0] = -1;
    d->id[NUMACOLL_LEVEL_L1] = caches ? caches[0] : -1;
    d->id[NUMACOLL_LEVEL_L2] = caches ? caches[1] : -1;
    d->id[NUMACOLL_LEVEL_L3] = loc->l3;
    d->id[NUMACOLL_LEVEL_NUMA] = loc->numa;
    d->id[NUMACOLL_LEVEL_PACKAGE] = loc->package;
}

/* O(p^2) without memory: it runs once per level at team creation, and a
 * node's team is at most a few hundred ranks. */
unsigned nc__topo_level_shape(const nc__doms_t *doms, int p, int code,
                              unsigned *most)
{
    unsigned nd = 0, top = 0;
    if (doms && p >= 1 && code >= NUMACOLL_LEVEL_L1 &&
        code < NUMACOLL_LEVEL_END)
        for (int r = 0; r < p; r++) {
            int first = 1;
            for (int e = 0; e < r && first; e++)
                first = doms[e].id[code] != doms[r].id[code];
            if (!first)
                continue;
            unsigned n = 0;   /* r is its domain's lowest rank: count it */
            for (int e = r; e < p; e++)
                n += doms[e].id[code] == doms[r].id[code];
            nd++;
            if (n > top)
                top = n;
        }
    if (most)
        *most = top;
    return nd;
}

/* ---- hierarchies -------------------------------------------------------- */

void nc__hier_fini(nc__hier_t *h)
{
    if (!h)
        return;
    free(h->up);
    memset(h, 0, sizeof *h);
}

/* part[r] := the domain of r keyed by (above[r], id of r at code), numbered
 * in order of lowest rank; returns the number of domains. rep holds each
 * domain's first rank (p entries). Unknown ids (-1) are one domain. */
static int split(const nc__doms_t *doms, int p, int code, const int *above,
                 int *part, int *rep)
{
    int nd = 0;
    for (int r = 0; r < p; r++) {
        int d = 0;
        while (d < nd && !(above[rep[d]] == above[r] &&
                           doms[rep[d]].id[code] == doms[r].id[code]))
            d++;
        if (d == nd)
            rep[nd++] = r;
        part[r] = d;
    }
    return nd;
}

int nc__hier_init(nc__hier_t *h, int p, int levels, const nc__doms_t *doms)
{
    int codes[NUMACOLL_LEVELS_MAX];
    memset(h, 0, sizeof *h);
    int n = nc__levels_unpack(levels, codes);
    if (p < 1 || n < 0 || !doms)
        return NUMACOLL_ERR_ARG;
    /* up, low, mem, pos: (n+1) blocks of p; start: (n+1) blocks of p+1;
     * then scratch: rep[p] */
    size_t nb = (size_t)n + 1, P = (size_t)p;
    int *all = calloc(nb * (4 * P + P + 1) + P, sizeof *all);
    if (!all)
        return NUMACOLL_ERR_NOMEM;
    h->p = p;
    h->up = all;
    h->low = h->up + nb * P;
    h->mem = h->low + nb * P;
    h->pos = h->mem + nb * P;
    h->start = h->pos + nb * P;
    int *rep = h->start + nb * (P + 1);

    /* Top down, so that each level is split inside the kept one above;
     * kept levels land in up[] from block n-1 downwards (moved below). */
    int kept = 0, nabove = 1;
    int *above = nc__hier_at(h, h->up, n); /* the team: all zero */
    int tmp_code[NUMACOLL_LEVELS_MAX];
    for (int i = n - 1; i >= 0; i--) {
        int *part = nc__hier_at(h, h->up, n - 1 - kept);
        int nd = split(doms, p, codes[i], above, part, rep);
        if (nd == nabove)
            continue;         /* same partition as the level above */
        tmp_code[kept++] = codes[i];
        above = part;
        nabove = nd;
    }
    /* Blocks n-kept .. n-1 hold the kept levels innermost last: move them
     * to 0 .. kept-1, innermost first, and the team to block kept. */
    h->nlev = kept;
    for (int j = 0; j < kept; j++) {
        memmove(nc__hier_at(h, h->up, j),
                nc__hier_at(h, h->up, n - kept + j), P * sizeof(int));
        h->code[j] = tmp_code[kept - 1 - j];
    }
    memset(nc__hier_at(h, h->up, kept), 0, P * sizeof(int));

    for (int j = 0; j <= kept; j++) {
        int *up = nc__hier_at(h, h->up, j), *low = nc__hier_at(h, h->low, j);
        int *mem = nc__hier_at(h, h->mem, j), *pos = nc__hier_at(h, h->pos, j);
        int *st = nc__hier_at(h, h->start, j);
        int nd = 0;
        for (int r = 0; r < p; r++)
            if (up[r] == nd)  /* numbered by first appearance */
                low[nd++] = r;
        h->ndom[j] = nd;
        /* units: ranks at level 0, level-(j-1) domains above */
        int nu = j == 0 ? p : h->ndom[j - 1];
        const int *ulow = j == 0 ? NULL : nc__hier_at(h, h->low, j - 1);
        for (int d = 0; d <= nd; d++)
            st[d] = 0;
        for (int u = 0; u < nu; u++)
            st[up[ulow ? ulow[u] : u] + 1]++;
        for (int d = 0; d < nd; d++)
            st[d + 1] += st[d];
        for (int u = 0; u < nu; u++) {
            int d = up[ulow ? ulow[u] : u];
            /* units ascend, so the fill order keeps them ascending */
            int at = st[d]++;
            mem[at] = u;
        }
        for (int d = nd; d > 0; d--)
            st[d] = st[d - 1];
        st[0] = 0;
        for (int d = 0; d < nd; d++)
            for (int i = st[d]; i < st[d + 1]; i++)
                pos[mem[i]] = i - st[d];
    }
    return NUMACOLL_OK;
}

int nc__hier_describe(const nc__hier_t *h, char *buf, size_t len)
{
    size_t o = 0;
    if (!buf || !len)
        return 0;
    buf[0] = '\0';
    for (int j = h->nlev - 1; j >= 0 && o < len; j--)
        o += (size_t)snprintf(buf + o, len - o, "%d %s > ", h->ndom[j],
                              nc__level_label(h->code[j]));
    if (o < len)
        o += (size_t)snprintf(buf + o, len - o, "%d rank%s", h->p,
                              h->p == 1 ? "" : "s");
    return (int)o;
}
