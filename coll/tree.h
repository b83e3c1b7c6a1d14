/*
 * Notification trees. Every shape is an integer-only function of
 * (rank, root, p, radix); the numa shape also reads the NUMA groups.
 * nc__tree_t precomputes what is needed for all p roots in O(p) memory:
 * rotations of the root-0 shape for flat/chain/kary/knomial, and the group
 * arrays for numa. Lookup of the parent is O(1), of the children
 * O(number of children).
 *
 * Shapes (v = (rank - root + p) % p is the rank relative to the root):
 *  flat     v=0 -> 1..p-1
 *  chain    v -> v+1
 *  kary     v -> k*v+1 .. k*v+k          (heap order)
 *  knomial  v -> v + j*k^i for every i with k^i below v's lowest non-zero
 *           base-k digit (all i when v = 0), j = 1..k-1; children listed
 *           highest level (largest k^i) first. Binomial p=7 root 0: 0->{4,2,1},
 *           4->{6,5}, 2->{3}.
 *  numa     root -> leaders of the other NUMA groups (flat), then inside
 *           each group a knomial tree rooted at the leader (at the root for
 *           the root's own group) over the group's members in rank order.
 *  hier     (nc__tree_init_hier, internal) the numa shape with the groups'
 *           heads (the root in its own group, the leader elsewhere) joined
 *           by a knomial tree of radix leader_radix over the groups in
 *           group order rotated to the root's group, instead of flat: in a
 *           fan-in, members meet their leader first and leaders meet the
 *           root in ceil(log_k groups) steps. Used by Barrier and Reduce.
 */
#ifndef NUMACOLL_TREE_H
#define NUMACOLL_TREE_H

#include "numacoll.h"

#define NC_TREE_MAX_CHILDREN_ALL (-1)

typedef struct nc__tree {
    int kind;           /* numacoll_tree_kind_t */
    int p;
    int radix;
    /* numa only (NULL otherwise): from nc__topo_numa_groups() */
    int ngroups;
    int *group_of;      /* [p] */
    int *leader_of;     /* [p] */
    int *members;       /* [p] */
    int *group_start;   /* [ngroups+1] */
    int *pos_in_group;  /* [p] index of the rank inside its group */
    int leader_radix;   /* numa only: 0 = root meets the leaders flat;
                           >= 2 = heads form a knomial of this radix */
} nc__tree_t;

/*
 * Build a tree. loc may be NULL unless kind is NUMACOLL_TREE_NUMA.
 * Returns NUMACOLL_ERR_ARG for p < 1, unknown kind, radix < 2 (kary,
 * knomial, numa); NUMACOLL_ERR_NOMEM if allocation fails.
 */
int nc__tree_init(nc__tree_t *t, int kind, int p, int radix,
                  const numacoll_locality_t *loc);
void nc__tree_fini(nc__tree_t *t);

/* The hier shape: kind NUMACOLL_TREE_NUMA with radix inside the groups and
 * leader_radix (>= 2) between the groups' heads. Same errors as above. */
int nc__tree_init_hier(nc__tree_t *t, int p, int radix, int leader_radix,
                       const numacoll_locality_t *loc);

/* Parent of rank in the tree rooted at root; -1 for the root itself. */
int nc__tree_parent(const nc__tree_t *t, int root, int rank);

/*
 * Children of rank in the tree rooted at root, written to out[0..n-1];
 * returns n. out must hold nc__tree_max_children(t) entries.
 */
int nc__tree_children(const nc__tree_t *t, int root, int rank, int *out);

/* Upper bound on the children of any rank for any root. */
int nc__tree_max_children(const nc__tree_t *t);

/*
 * Check the tree rooted at root: every rank reached exactly once from the
 * root through children, parent() consistent with children(), no cycle,
 * exactly p-1 edges. Returns 0 if sound, else -1 with a sentence in msg.
 */
int nc__tree_check(const nc__tree_t *t, int root, char *msg, size_t msglen);

/* Integer-only shapes relative to root 0 (v is the relative rank). */
int nc__knomial_parent(int v, int k);
int nc__knomial_children(int v, int k, int p, int *out);
int nc__kary_parent(int v, int k);
int nc__kary_children(int v, int k, int p, int *out);

#endif
