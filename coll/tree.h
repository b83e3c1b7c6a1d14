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
 *  numa     hierarchical, over the levels of the parameter `levels`
 *           (topo.h: nc__hier_t; "numa" alone by default): inside each
 *           innermost domain a knomial tree of radix rooted at its head (the
 *           root in its own domain, the lowest rank elsewhere) over its
 *           members in rank order; at each level above, the head of a domain
 *           notifies the heads of its other sub-domains (flat). With levels
 *           = numa: root -> leaders of the other NUMA groups, then a knomial
 *           inside each node.
 *  hier     (nc__tree_init_hier / leader_radix >= 2, internal) the same
 *           with the heads of each level joined by a knomial of radix
 *           leader_radix over the sub-domains in order rotated to the
 *           root's, instead of flat: in a fan-in, members meet their leader
 *           first and leaders meet the root in ceil(log_k domains) steps per
 *           level. Used by Barrier and Reduce.
 *  spec     (nc__tree_init_spec) either of the two with the tree of any
 *           level replaced by one of the four integer shapes and its radix,
 *           as a tuning rule's l3tree=chain ... toptree=kary:4 name them.
 * Every edge of a hierarchical tree stays inside one domain of some level,
 * and an edge that leaves an innermost domain joins two heads.
 */
#ifndef NUMACOLL_TREE_H
#define NUMACOLL_TREE_H

#include "numacoll.h"
#include "topo/topo.h"

#define NC_TREE_MAX_CHILDREN_ALL (-1)

/* One level's tree as a tuning rule names it (l3tree=kary:4, toptree=flat:
 * docs/tuning.md): 0 for the default, else NC_LT(kind, radix) with kind
 * flat, chain, kary or knomial (radix 0 for flat and chain). Rules hold an
 * array indexed by numacoll_level_t whose slot NC_LT_TOP (0, no level has
 * that code) is the tree between the outermost kept domains. */
#define NC_LT_TOP 0
#define NC_LT(kind, k) ((uint16_t)((((unsigned)(kind) + 1u) << 8) | \
                                   ((unsigned)(k) & 0xffu)))
static inline int nc__lt_kind(uint16_t v) { return (int)(v >> 8) - 1; }
static inline int nc__lt_radix(uint16_t v) { return (int)(v & 0xffu); }

typedef struct nc__tree {
    int kind;           /* numacoll_tree_kind_t */
    int p;
    int radix;
    /* numa only (zero otherwise) */
    nc__hier_t h;       /* the domains of every kept level */
    int leader_radix;   /* 0 = heads meet the heads below them flat;
                           >= 2 = heads form knomials of this radix */
    int ngroups;        /* innermost domains (1 when no level is kept)    */
    int *members;       /* [p] ranks by innermost domain (h.mem block 0)  */
    int *leader_of;     /* [p] lowest rank of each rank's innermost domain */
    /* the shape of each level j = 0 .. h.nlev (numacoll_tree_kind_t, one
     * of the four integer shapes, and its radix) */
    int lkind[NUMACOLL_LEVELS_MAX + 1], lrad[NUMACOLL_LEVELS_MAX + 1];
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

/* Kind NUMACOLL_TREE_NUMA over the packed level list `levels` of doms[p]
 * (leader_radix 0: flat between heads, the Bcast's; >= 2: hier).
 * NUMACOLL_ERR_ARG for p < 1, radix < 2, leader_radix 1 or negative, an
 * invalid list or no doms; NUMACOLL_ERR_NOMEM. */
int nc__tree_init_levels(nc__tree_t *t, int p, int radix, int leader_radix,
                         int levels, const nc__doms_t *doms);
/* The same with the shape of each level from lt (NULL: the defaults
 * above), indexed as NC_LT says; an entry for a level the hierarchy does
 * not keep is ignored. NUMACOLL_ERR_ARG as above, or for an invalid
 * entry (another kind, kary or knomial with a radix below 2). */
int nc__tree_init_spec(nc__tree_t *t, int p, int radix, int leader_radix,
                       const uint16_t *lt, int levels, const nc__doms_t *doms);
/* The same from locality records (no L1/L2 known). */
int nc__tree_init_loc(nc__tree_t *t, int p, int radix, int leader_radix,
                      int levels, const numacoll_locality_t *loc);

/* Parent of rank in the tree rooted at root; -1 for the root itself. */
int nc__tree_parent(const nc__tree_t *t, int root, int rank);

/*
 * Children of rank in the tree rooted at root, written to out[0..n-1];
 * returns n. out must hold nc__tree_max_children(t) entries.
 */
int nc__tree_children(const nc__tree_t *t, int root, int rank, int *out);

/* Where rank reads a Bcast's data from when the leaders relay it: in a
 * numa tree that keeps a level, the head of each innermost domain without
 * the root copies each fragment from its tree parent's copy into its own
 * queue (so this returns its parent), and the other ranks of that domain
 * read the head's copy (this returns the head); the root's domain reads
 * the root. Any other tree: root. */
int nc__tree_relay_source(const nc__tree_t *t, int root, int rank);
/* 1 if rank is such a relay (then its source is its parent), else 0. */
int nc__tree_relays(const nc__tree_t *t, int root, int rank);

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
