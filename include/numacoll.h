/*
 * numacoll — collective operations for processes sharing one NUMA machine.
 *
 * Conventions, for the whole API:
 *  - Every function that can fail returns an int status: NUMACOLL_OK (0) on
 *    success, a negative NUMACOLL_ERR_* code otherwise; numacoll_strerror()
 *    names it. Where a team exists, numacoll_team_last_error() gives the
 *    detailed message of the last failure on this rank (which parameter,
 *    which rank waited for which rank on what).
 *  - A *team* is p processes on one machine that share one segment. Every
 *    collective is called by all p ranks of the team, in the same order,
 *    with the same size and root (as in MPI).
 *  - Sizes are in bytes. Ranks are 0 .. p-1.
 *  - No MPI type appears here: the caller bridges its runtime through
 *    numacoll_bootstrap_t and the pack/unpack callbacks.
 */
#ifndef NUMACOLL_H
#define NUMACOLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NUMACOLL_VERSION_MAJOR 0
#define NUMACOLL_VERSION_MINOR 1

/* ---- status codes ---------------------------------------------------- */

/* X(name, value, message): the one list of status codes. */
#define NUMACOLL_STATUS_LIST(X)                                               \
    X(OK,            0,  "success")                                          \
    X(ERR_ARG,      -1,  "invalid argument")                                 \
    X(ERR_NOMEM,    -2,  "out of memory")                                    \
    X(ERR_SYS,      -3,  "system call failed")                               \
    X(ERR_TOPO,     -4,  "topology discovery failed")                        \
    X(ERR_BOOTSTRAP,-5,  "bootstrap exchange failed")                        \
    X(ERR_TIMEOUT,  -6,  "wait timed out")                                   \
    X(ERR_PEER_DEAD,-7,  "a peer process died")                              \
    X(ERR_ABORTED,  -8,  "team aborted by another rank")                     \
    X(ERR_CALLBACK, -9,  "pack/unpack callback failed")                      \
    X(ERR_BUDGET,   -10, "segment would exceed the memory budget")           \
    X(ERR_UNSUPPORTED, -11, "operation not supported by this team")

typedef enum {
#define NUMACOLL_X_ENUM(name, value, msg) NUMACOLL_##name = value,
    NUMACOLL_STATUS_LIST(NUMACOLL_X_ENUM)
#undef NUMACOLL_X_ENUM
} numacoll_status_t;

/* Short fixed text for a status code; never NULL. */
const char *numacoll_strerror(int status);

/* ---- configuration --------------------------------------------------- */

typedef enum {
    NUMACOLL_TREE_FLAT = 0,   /* root notifies everyone                       */
    NUMACOLL_TREE_CHAIN,      /* r -> r+1 -> r+2 ...                          */
    NUMACOLL_TREE_KARY,       /* heap order, radix children per node          */
    NUMACOLL_TREE_KNOMIAL,    /* radix-nomial (binomial for radix 2)          */
    NUMACOLL_TREE_NUMA,       /* root -> NUMA leaders -> members (k-nomial)   */
    NUMACOLL_TREE_COUNT
} numacoll_tree_kind_t;

/* Name of a tree kind ("flat", "chain", "kary", "knomial", "numa"), or NULL. */
const char *numacoll_tree_name(numacoll_tree_kind_t kind);
/* Parse a tree kind name; returns the kind or -1. */
int numacoll_tree_parse(const char *name);

/*
 * Team configuration. numacoll_config_init() fills the documented defaults;
 * every field is described once, in NUMACOLL_PARAM_LIST below, which the
 * benchmark (--list-params) and the Open MPI component read as well.
 */
typedef struct numacoll_config {
    size_t   frag_size;     /* f: bytes per fragment buffer                   */
    unsigned queue_depth;   /* s: fragment buffers per rank                   */
    unsigned banks;         /* q: banks the s buffers are split into          */
    int      tree;          /* numacoll_tree_kind_t of the notifications      */
    unsigned radix;         /* k for kary / knomial / numa trees              */
    unsigned spin_count;    /* polls before a wait starts to sched_yield()    */
    unsigned timeout_ms;    /* give up a wait after this long; 0 = never      */
    size_t   mem_budget;    /* max segment bytes for one team; 0 = unlimited  */
    int      verbose;       /* 0 silent, 1 warnings, 2 info, 3 debug          */
    int      pu;            /* inject this rank's PU (logical index); -1 auto */
    const char *topology;   /* NULL: this machine (or HWLOC_SYNTHETIC/_XMLFILE
                               from the environment); "synthetic:<desc>" or a
                               path to an hwloc XML file otherwise            */
} numacoll_config_t;

/*
 * X(field, type, default, min, max, doc): every tunable, described once.
 * Types: 'z' size, 'u' unsigned, 'i' int, 't' tree kind.
 */
#define NUMACOLL_PARAM_LIST(X)                                                \
    X(frag_size,   'z', 8192,  64, 1048576,                                   \
      "Fragment size f in bytes: the unit of the Bcast pipeline; a positive "  \
      "multiple of 64, at most 1 MiB.")                                        \
    X(queue_depth, 'u', 64,    1, 65536,                                      \
      "Queue depth s: fragment buffers in each rank's NUMA-local queue; "     \
      "must be a multiple of banks.")                                          \
    X(banks,       'u', 2,     1, 65536,                                      \
      "Banks q: the queue is split into q banks that the root reuses in "     \
      "turn, so it refills one bank while readers drain another.")            \
    X(tree,        't', NUMACOLL_TREE_KARY, 0, NUMACOLL_TREE_COUNT - 1,       \
      "Notification tree: flat, chain, kary, knomial or numa "                 \
      "(root, then NUMA leaders, then node members).")                         \
    X(radix,       'u', 2,     2, 64,                                         \
      "Radix k of the kary, knomial and numa trees (2 gives binary/binomial).")\
    X(spin_count,  'u', 1000,  0, 100000000,                                  \
      "Polls of a flag before each further poll yields the CPU with "         \
      "sched_yield(); keeps oversubscribed runs moving.")                      \
    X(timeout_ms,  'u', 0,     0, 86400000,                                   \
      "Give up a wait after this many milliseconds with an error naming the " \
      "ranks and the flag; 0 waits forever (dead peers are still detected).") \
    X(mem_budget,  'z', 0,     0, SIZE_MAX,                                   \
      "Largest segment in bytes one team may create; 0 means no limit. "      \
      "Team creation fails with NUMACOLL_ERR_BUDGET beyond it.")              \
    X(verbose,     'i', 1,     0, 3,                                          \
      "Diagnostics on stderr: 0 silent, 1 warnings, 2 info, 3 debug.")       \
    X(pu,          'i', -1,    -1, 1 << 20,                                   \
      "Inject this rank's PU (hwloc logical index) instead of asking the "    \
      "OS; needed under synthetic or XML topologies. -1 asks the OS.")

/* Fill *cfg with the defaults of NUMACOLL_PARAM_LIST. */
void numacoll_config_init(numacoll_config_t *cfg);

/*
 * Check every field. On error returns NUMACOLL_ERR_ARG and, if msg is not
 * NULL, writes a sentence naming the parameter and its valid range.
 */
int numacoll_config_check(const numacoll_config_t *cfg, char *msg, size_t msglen);

/* ---- bootstrap ------------------------------------------------------- */

/*
 * How a team's processes find each other. allgather() must gather nbytes
 * from every rank into recv (rank i's bytes at recv + i*nbytes) on all
 * ranks, and return 0 on success. It is called a few times during team
 * creation and destruction only, never inside a collective.
 */
typedef struct numacoll_bootstrap {
    int rank;
    int size;
    int (*allgather)(const void *send, void *recv, size_t nbytes, void *ctx);
    void *ctx;
} numacoll_bootstrap_t;

/* ---- team ------------------------------------------------------------ */

typedef struct numacoll_team numacoll_team_t;

/* Collective over the bootstrap's ranks. cfg may be NULL for defaults. */
int numacoll_team_create(const numacoll_bootstrap_t *boot,
                         const numacoll_config_t *cfg,
                         numacoll_team_t **team);

/*
 * Local: each rank releases its own mapping and frees the team; no other
 * rank needs to take part (an Open MPI communicator being freed cannot run
 * collectives). The segment's memory goes when the last rank unmaps it.
 */
int numacoll_team_destroy(numacoll_team_t *team);

int numacoll_team_rank(const numacoll_team_t *team);
int numacoll_team_size(const numacoll_team_t *team);
const numacoll_config_t *numacoll_team_config(const numacoll_team_t *team);

/* Detailed message of this rank's last failure, "" if none. */
const char *numacoll_team_last_error(const numacoll_team_t *team);

/* Name the segment had in /dev/shm (already unlinked once created). */
const char *numacoll_team_segment_name(const numacoll_team_t *team);

/* Where a rank runs, as topology discovery saw it. -1 where unknown. */
typedef struct numacoll_locality {
    int32_t pu, core, l3, numa, package; /* hwloc logical indexes; numa is the
                                            NUMA node's OS index             */
    int32_t bound;                       /* 1 if bound to a subset of PUs    */
    int32_t pid;
} numacoll_locality_t;

int numacoll_team_locality(const numacoll_team_t *team, int rank,
                           numacoll_locality_t *loc);

/* Placement of this rank's block of the segment, verified with move_pages. */
typedef struct numacoll_placement {
    int    intended_node;   /* NUMA node of this rank in the topology         */
    int    bound_node;      /* node the block was bound to (-1: not bound)    */
    int    degraded;        /* 1 if intended_node does not exist here          */
    size_t pages;           /* pages in this rank's block                     */
    size_t pages_on_node;   /* of those, pages found on bound_node            */
    size_t pages_unknown;   /* pages move_pages could not report              */
} numacoll_placement_t;

int numacoll_team_placement(const numacoll_team_t *team,
                            numacoll_placement_t *pl);

/* ---- collectives ----------------------------------------------------- */

/* Broadcast nbytes of contiguous memory from root's buf to every rank's buf. */
int numacoll_bcast(numacoll_team_t *team, void *buf, size_t nbytes, int root);

/*
 * Non-contiguous data. The root's pack(ctx, offset, dst, n) must write the
 * packed bytes [offset, offset+n) to dst; every other rank's
 * unpack(ctx, offset, src, n) receives them. Offsets grow monotonically from
 * 0 to nbytes. A non-zero return aborts the call with NUMACOLL_ERR_CALLBACK
 * on that rank (other ranks still complete or time out).
 */
typedef int (*numacoll_pack_fn)(void *ctx, size_t offset, void *dst, size_t n);
typedef int (*numacoll_unpack_fn)(void *ctx, size_t offset, const void *src,
                                  size_t n);

int numacoll_bcast_packed(numacoll_team_t *team, size_t nbytes, int root,
                          numacoll_pack_fn pack, numacoll_unpack_fn unpack,
                          void *ctx);

/*
 * Barrier: no rank returns before every rank has entered. Fan-in then
 * fan-out along the team's notification tree over per-rank flags.
 */
int numacoll_barrier(numacoll_team_t *team);

/* Calls of each operation completed by this rank's team (observability). */
typedef struct numacoll_counters {
    uint64_t bcast;
    uint64_t barrier;
} numacoll_counters_t;

int numacoll_team_counters(const numacoll_team_t *team, numacoll_counters_t *c);

#ifdef __cplusplus
}
#endif
#endif /* NUMACOLL_H */
