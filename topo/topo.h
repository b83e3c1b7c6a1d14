/*
 * Topology: hwloc discovery turns "where does this process run" into a plain
 * record; everything downstream (NUMA groups, leaders, the numa tree,
 * segment placement) is a pure function of the array of records, so it is
 * tested with hand-written arrays and hwloc XML fixtures.
 */
#ifndef NUMACOLL_TOPO_H
#define NUMACOLL_TOPO_H

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
