/*
 * NUMA groups and leaders: a pure function of the per-rank records, so the
 * same code serves the real machine, synthetic topologies and hand-written
 * fixtures. O(p * groups) time, no memory beyond the caller's arrays (no
 * VLA: its stack use would grow with p); p is a few hundred at most.
 */
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
