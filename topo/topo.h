/*
 * Topology: hwloc discovery turns "where does this process run" into a plain
 * record; everything downstream (NUMA groups, leaders, the numa tree,
 * segment placement) is a pure function of the array of records, so it is
 * tested with hand-written arrays and hwloc XML fixtures.
 */
#ifndef NUMACOLL_TOPO_H
#define NUMACOLL_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include "numacoll.h"

/*
 * Discover the calling thread's locality (the thread that creates a team
 * makes its calls).
 *  topology: NULL for this machine (hwloc honours HWLOC_SYNTHETIC /
 *            HWLOC_XMLFILE from the environment), "synthetic:<description>"
 *            or the path of an hwloc XML file.
 *  pu:       >= 0 injects the PU (hwloc logical index, taken modulo the PU
 *            count): under a fake topology hwloc cannot tell where we run.
 *            -1 asks the OS where the thread runs.
 * Fills every field of *loc (pid too); loc->bound says whether the thread
 * is bound to fewer PUs than the machine has (always 1 when injected).
 * On failure returns NUMACOLL_ERR_TOPO and writes a sentence to msg.
 * Thread-safe. Cached per process: the topology is loaded once per source
 * (an XML file again when it changes), and the record is reused while the
 * source, pu and the thread's binding stay the same, so an unbound thread
 * keeps the PU of its first discovery (topo/topo.c says why).
 */
int nc__topo_discover(const char *topology, int pu, numacoll_locality_t *loc,
                      char *msg, size_t msglen);

/* The same, with the logical indexes of the L1 and L2 caches above the PU
 * in caches[0] and caches[1] (-1 where the topology has none): the public
 * record has no room for them, teams exchange them beside it. */
int nc__topo_discover_ex(const char *topology, int pu, numacoll_locality_t *loc,
                         int32_t caches[2], char *msg, size_t msglen);

/* ---- levels and hierarchies (topo/groups.c, pure) ------------------------ */

/* A rank's domain at every level, indexed by numacoll_level_t (id[0]
 * unused); -1 where unknown. */
typedef struct nc__doms {
    int32_t id[NUMACOLL_LEVEL_END];
} nc__doms_t;

/* d from a record and, if not NULL, the caches of nc__topo_discover_ex. */
void nc__topo_doms(const numacoll_locality_t *loc, const int32_t *caches,
                   nc__doms_t *d);

/* The codes of a packed level list, innermost first; returns how many, or
 * -1 if levels is no valid list (a code out of range, a gap, a repeat). */
int nc__levels_unpack(int levels, int codes[NUMACOLL_LEVELS_MAX]);

/* The team's shape at one level (code), for the tuning table's level
 * keys: returns the number of domains the p ranks span at that level
 * (hwloc's domains, not nested; ranks whose id is unknown, -1, count as
 * one domain together, as unknown NUMA nodes do) and puts the most ranks
 * in one of them in *most. 0 for p < 1, an invalid code or no doms. */
unsigned nc__topo_level_shape(const nc__doms_t *doms, int p, int code,
                              unsigned *most);

/* Short plural name of a level for "2 packages > 4 NUMA > 64 ranks". */
const char *nc__level_label(int code);

/*
 * A hierarchy of p ranks: kept levels 0 .. nlev-1 (innermost first) and the
 * team as level nlev. Level j's domains are numbered in order of their
 * lowest rank; their units are the level-(j-1) domains they hold (ranks
 * for j = 0), also in order of lowest rank, so a domain's first unit holds
 * its lowest rank. A level-j domain is keyed by its id at that level and
 * its domain at level j+1, so domains nest even where hwloc's levels do not
 * (an L3 spanning two NUMA nodes is split). A level that splits the ranks
 * exactly as the kept level above it does is dropped.
 * Arrays are (nlev+1) blocks; block j (stride p, or p+1 for start):
 *   up[j][r]     rank r's level-j domain
 *   low[j][d]    lowest rank of level-j domain d
 *   mem[j][..]   level-j units grouped by their level-j domain
 *   start[j][d]  domain d's units are mem[j][start[j][d] .. start[j][d+1])
 *   pos[j][u]    position of unit u in its level-j domain
 */
typedef struct nc__hier {
    int p, nlev;
    int code[NUMACOLL_LEVELS_MAX];     /* kept levels' codes               */
    int ndom[NUMACOLL_LEVELS_MAX + 1]; /* domains per level; ndom[nlev] = 1 */
    int *up, *low, *mem, *start, *pos; /* one allocation, at up            */
} nc__hier_t;

/* Build h for levels (packed) over doms[p]. NUMACOLL_ERR_ARG for p < 1 or
 * an invalid list, NUMACOLL_ERR_NOMEM. nc__hier_fini either way. */
int nc__hier_init(nc__hier_t *h, int p, int levels, const nc__doms_t *doms);
void nc__hier_fini(nc__hier_t *h);

static inline int *nc__hier_at(const nc__hier_t *h, int *base, int j)
{
    return base + (size_t)j * (size_t)(base == h->start ? h->p + 1 : h->p);
}

/* "2 packages > 4 NUMA > 16 L3 > 64 ranks" (outermost first; levels that
 * were dropped are not named). Returns snprintf's count. */
int nc__hier_describe(const nc__hier_t *h, char *buf, size_t len);

/*
 * NUMA groups, pure function of the records of p ranks.
 * Ranks with the same loc[i].numa form one group; groups are numbered in
 * order of their lowest rank; a group's leader is its lowest rank.
 * Outputs (arrays sized by the caller):
 *   group_of[p]   group index of each rank
 *   leader_of[p]  leader rank of each rank's group
 *   members[p]    ranks listed group by group, ascending within a group
 *   group_start[ngroups+1]  members[group_start[g] .. group_start[g+1]-1]
 *                 are group g's ranks (caller sizes it p+1)
 * Returns the number of groups (>= 1 for p >= 1). Records with numa < 0 are
 * treated as one extra node of their own kind (all together).
 */
int nc__topo_numa_groups(const numacoll_locality_t *loc, int p, int *group_of,
                         int *leader_of, int *members, int *group_start);

#endif
