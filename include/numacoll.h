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
 *  - The ABI: libnumacoll.so.0 exports the functions marked NUMACOLL_API
 *    below and nothing else. numacoll_config_t may gain fields at its end
 *    in later releases without breaking programs built against this
 *    header (see numacoll_config_init).
 */
#ifndef NUMACOLL_H
#define NUMACOLL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The release; the Makefile reads it from here (soname, numacoll.pc). */
#define NUMACOLL_VERSION_MAJOR 0
#define NUMACOLL_VERSION_MINOR 1
#define NUMACOLL_VERSION_PATCH 0

/* The library is built with -fvisibility=hidden: only what carries this
 * is part of libnumacoll.so's interface. */
#if defined(__GNUC__) && __GNUC__ >= 4
#define NUMACOLL_API __attribute__((visibility("default")))
#else
#define NUMACOLL_API
#endif

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
    X(ERR_UNSUPPORTED, -11, "operation not supported by this team")        \
    X(ERR_TRUNCATE, -12, "the root sent more bytes than this rank's buffer") \
    X(ERR_MISMATCH, -13, "the ranks called different collectives or sizes") \
    X(ERR_NOSPACE,  -14, "no room in /dev/shm to grow the team's staging; "  \
                         "the call was not run")

typedef enum {
#define NUMACOLL_X_ENUM(name, value, msg) NUMACOLL_##name = value,
    NUMACOLL_STATUS_LIST(NUMACOLL_X_ENUM)
#undef NUMACOLL_X_ENUM
} numacoll_status_t;

/* Short fixed text for a status code; never NULL. */
NUMACOLL_API const char *numacoll_strerror(int status);

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
NUMACOLL_API const char *numacoll_tree_name(numacoll_tree_kind_t kind);
/* Parse a tree kind name; returns the kind or -1. */
NUMACOLL_API int numacoll_tree_parse(const char *name);

/*
 * Levels of the machine a hierarchical tree (kind numa, the Barrier's and
 * the Reduce trees) is built from: one leader per domain of each level, a
 * tree inside each domain, the leaders meeting at the level above. A list
 * of up to NUMACOLL_LEVELS_MAX levels, innermost first, is packed into an
 * int (the parameter `levels`): level i's code in bits 3i .. 3i+2, 0 after
 * the last. "numa" (the default) is the NUMA tree of earlier releases.
 */
typedef enum {
    NUMACOLL_LEVEL_L1 = 1,    /* ranks sharing an L1 cache (SMT siblings)      */
    NUMACOLL_LEVEL_L2,        /* ranks sharing an L2 cache                     */
    NUMACOLL_LEVEL_L3,        /* ranks sharing an L3 cache (CCX, CCD)          */
    NUMACOLL_LEVEL_NUMA,      /* ranks of one NUMA node                        */
    NUMACOLL_LEVEL_PACKAGE,   /* ranks of one package (socket)                 */
    NUMACOLL_LEVEL_END        /* one past the last code                        */
} numacoll_level_t;
#define NUMACOLL_LEVELS_MAX 5
#define NUMACOLL_LEVEL_BITS 3

/* Parse "l3,numa,package" (names l1, l2, l3, numa, package or socket,
 * separated by ',', ':', '/' or '+', innermost first, none twice) into the
 * packed form; -1 if it is not such a list. */
NUMACOLL_API int numacoll_levels_parse(const char *text);
/* Write the packed list as "l3,numa,package" (nothing when buf is NULL);
 * 0, or -1 if levels is not a valid packed list (buf then holds ""). */
NUMACOLL_API int numacoll_levels_format(int levels, char *buf, size_t len);

/*
 * Team configuration. numacoll_config_init() fills the documented defaults;
 * every field is described once, in NUMACOLL_PARAM_LIST below, which the
 * benchmark (--list-params) and the Open MPI component read as well.
 *
 * The struct grows at its end in later releases; struct_size, which
 * numacoll_config_init() sets to the size the caller was compiled with,
 * tells the library how much of it the caller has: it reads only those
 * fields and takes the defaults for the rest, so a program built against
 * an older numacoll.h keeps working. Copy a config only with `=` from one
 * that numacoll_config_init() filled; a struct_size the library does not
 * know (never initialised, or from a numacoll.h newer than the library)
 * makes numacoll_config_check() and numacoll_team_create() fail with
 * NUMACOLL_ERR_ARG and a message saying so.
 */
typedef struct numacoll_config {
    size_t   struct_size;   /* sizeof the caller's numacoll_config_t; set by
                               numacoll_config_init(), never by hand        */
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
    unsigned barrier_radix; /* k of the Barrier's tree or dissemination       */
    unsigned reduce_radix;  /* k of the Reduce trees                          */
    size_t   reduce_frag_size; /* bytes per reduce staging slot              */
    unsigned reduce_depth;  /* reduce staging slots per rank                  */
    int      single_copy;   /* cma rules: 1 where permitted and fast, 2 where
                               permitted, 0 never                           */
    const char *topology;   /* NULL: this machine (or HWLOC_SYNTHETIC/_XMLFILE
                               from the environment); "synthetic:<desc>" or a
                               path to an hwloc XML file otherwise            */
    const char *tuning_file; /* tuning table (docs/tuning.md) replacing the
                               built-in one; NULL: $NUMACOLL_TUNING_FILE if
                               set, else the built-in table                   */
    const char *tuning_text; /* a tuning table given as text; wins over
                               tuning_file (the autotuner's candidates)       */
    int      levels;        /* packed numacoll_level_t list of the hierarchy
                               (numacoll_levels_parse); since 0.2             */
    int      relay;         /* Bcast leader relay: -1 as the table says, 0
                               off, 1 on (pipelined rules); since 0.2         */
    int      wait_policy;   /* -1 auto, 0 spin, 1 yield, 2 sleep (how a wait
                               gives up the CPU); since 0.3                   */
    size_t   node_budget;   /* bytes of /dev/shm the node's segments may use
                               in all, checked when a team is created and
                               when it grows; 0: half of /dev/shm; since 0.4 */
} numacoll_config_t;

/*
 * X(field, type, default, min, max, doc): every tunable, described once.
 * Types: 'z' size, 'u' unsigned, 'i' int, 't' tree kind, 'l' level list
 * (an int, numacoll_levels_parse).
 * A default outside [min, max] (0, or -1 for the tree) means "unset": the
 * team takes that value from its tuning table (docs/tuning.md), rule by
 * rule; a value set in range overrides the table in every rule of its
 * collective.
 */
#define NUMACOLL_PARAM_LIST(X)                                                \
    X(frag_size,   'z', 0,     64, 1048576,                                   \
      "Bcast fragment size f in bytes, a multiple of 64: the unit of the "    \
      "pipeline. 0 takes f from the tuning table.")                            \
    X(queue_depth, 'u', 0,     1, 65536,                                      \
      "Bcast queue depth s: fragment buffers in each rank's NUMA-local "      \
      "queue; a multiple of banks. 0 takes s from the tuning table.")         \
    X(banks,       'u', 0,     1, 65536,                                      \
      "Bcast banks q: the queue is split into q banks that the root reuses "  \
      "in turn, so it refills one bank while readers drain another. 0 takes " \
      "q from the tuning table.")                                              \
    X(tree,        't', -1,    0, NUMACOLL_TREE_COUNT - 1,                    \
      "Bcast notification tree: flat, chain, kary, knomial or numa (root, "   \
      "then NUMA leaders, then node members). -1 takes it from the tuning "   \
      "table.")                                                                \
    X(radix,       'u', 0,     2, 64,                                         \
      "Bcast radix k of the kary, knomial and numa trees (2 gives binary/"    \
      "binomial). 0 takes k from the tuning table.")                          \
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
      "OS; needed under synthetic or XML topologies. -1 asks the OS.")        \
    X(barrier_radix, 'u', 0,   2, 64,                                         \
      "Radix k of the Barrier: of its own tree (alg=tree: ranks of a NUMA "   \
      "node meet their leader along a k-nomial tree, leaders meet rank 0 "    \
      "along another) or of its dissemination (alg=dissem: k - 1 partners "   \
      "a round). 0 takes k from the tuning table.")                            \
    X(reduce_radix, 'u', 0,    2, 64,                                         \
      "Radix k of the Reduce trees (NUMA-aware k-nomial for commutative "     \
      "ops, rank-ordered k-nomial for non-commutative ones), also in "        \
      "Allreduce's reduce_bcast. 0 takes k from the tuning table.")           \
    X(reduce_frag_size, 'z', 0, 64, 16777216,                                 \
      "Bytes per reduce staging slot: the Reduce fragment and the chunk one " \
      "reduce-scatter/allgather round of Allreduce splits among the ranks. "  \
      "0 takes it from the tuning table.")                                     \
    X(reduce_depth, 'u', 0,    1, 65536,                                      \
      "Reduce staging slots per rank, in its NUMA-local memory: how far a "   \
      "rank may run ahead of the ranks that read its partial results. 0 "    \
      "takes it from the tuning table.")                                     \
    X(single_copy, 'i', 1,     0, 2,                                          \
      "Rules with alg=cma (Bcast, the gathers, Alltoall) copy straight "      \
      "between the ranks' buffers with process_vm_readv/writev where every "  \
      "rank of the team can (probed at team creation). 1: where it is also "  \
      "fast enough: team creation times the kernel's copy against memcpy "    \
      "on every rank (128 KiB, hot) and takes single copy only where it "     \
      "costs at most 2 memcpys everywhere (copy-in/copy-out copies each "     \
      "byte twice); 2: untimed, wherever every rank can; 0: never. Where "    \
      "single copy is not taken those rules run copy-in/copy-out instead "    \
      "(Bcast pipelined, the others staged).")                               \
    X(levels,      'l', NUMACOLL_LEVEL_NUMA, 1,                               \
      (1 << (NUMACOLL_LEVELS_MAX * NUMACOLL_LEVEL_BITS)) - 1,                 \
      "Levels of the machine the hierarchical trees are built from, "         \
      "innermost first, e.g. l3,numa,package (names l1, l2, l3, numa, "       \
      "package or socket): one leader per domain of each level, a tree "      \
      "inside each domain, the leaders meeting at the level above. Used by "  \
      "the Bcast tree numa, the Barrier and the Reduce trees; a level that "  \
      "splits the ranks as the one above it does is dropped.")                \
    X(relay,       'i', -1,    0, 1,                                          \
      "Bcast leader relay with the tree numa: 1 makes the head of each "      \
      "innermost domain copy every fragment once into its own queue, which "  \
      "the other ranks of its domain read; 0 makes every rank read the "      \
      "root's queue. -1 takes it from the tuning table (relay=).")            \
    X(wait_policy, 'i', -1,    0, 2,                                          \
      "How a wait gives the CPU away. 0 spin: spin_count polls, then "        \
      "sched_yield() on every further poll; 1 yield: sched_yield() on every " \
      "poll; 2 sleep: yield for up to 200 us, then sleep in the kernel (a "  \
      "futex) until "                                                       \
      "the rank that writes the awaited word wakes it. -1 (auto): sleep "     \
      "where the team is oversubscribed (fewer CPUs in the union of its "     \
      "ranks' affinity masks than ranks, or some rank asked for sleep, as "   \
      "the Open MPI component does where Open MPI says the node is "          \
      "oversubscribed), spin elsewhere. Each rank may set its own.")          \
    X(node_budget, 'z', 0,     0, SIZE_MAX,                                   \
      "Bytes of /dev/shm (its used space, every process's) past which no "   \
      "team is created and no team grows its staging: a team starts with "   \
      "its control lines and takes its queues and staging slots at the "     \
      "first call that needs them (docs/usage.md, \"Memory\"); a call that " \
      "would pass the budget falls back (NUMACOLL_ERR_NOSPACE). 0: half of " \
      "/dev/shm's size. Each rank may set its own.")

/*
 * Fill *cfg with the defaults of NUMACOLL_PARAM_LIST and set its
 * struct_size. A macro, so that the size is the one the caller was compiled
 * with: the library writes no byte past it. Call it before setting any
 * field.
 */
#define numacoll_config_init(cfg) \
    numacoll_config_init_size((cfg), sizeof *(cfg))
NUMACOLL_API
void numacoll_config_init_size(numacoll_config_t *cfg, size_t size);

/*
 * Check every field. On error returns NUMACOLL_ERR_ARG and, if msg is not
 * NULL, writes a sentence naming the parameter and its valid range, or
 * saying that struct_size is unknown (cfg not filled by
 * numacoll_config_init(), or built against a newer numacoll.h).
 */
NUMACOLL_API
int numacoll_config_check(const numacoll_config_t *cfg, char *msg,
                          size_t msglen);

/*
 * 1 when each rank of a team may set parameter `name` (a field of
 * NUMACOLL_PARAM_LIST) for itself: spin_count, timeout_ms, mem_budget,
 * verbose, pu, wait_policy, node_budget. Every other one shapes the segment or the protocol, and
 * numacoll_team_create() fails with NUMACOLL_ERR_ARG on every rank when
 * the ranks set it differently. 0 for any other name.
 */
NUMACOLL_API
int numacoll_config_param_is_local(const char *name);

/*
 * Set parameter `name` (a field of NUMACOLL_PARAM_LIST) of *cfg from text,
 * as a user writes it in an environment variable or on a command line:
 * sizes ('z') as a decimal number with an optional k, m or g (powers of
 * 1024) and an optional b ("64k", "1m"); trees by name ("knomial") or
 * number; level lists by name ("l3,numa"); the others as decimal integers.
 * The value must lie in the parameter's range (or be its "unset" default);
 * cfg is untouched otherwise. NUMACOLL_ERR_ARG with a sentence in msg
 * (when not NULL) for an unknown name or a malformed or out-of-range
 * value. numacoll_config_check() still checks what depends on several
 * fields (queue_depth against banks). Since 0.5.
 */
NUMACOLL_API
int numacoll_config_set(numacoll_config_t *cfg, const char *name,
                        const char *value, char *msg, size_t msglen);

/* ---- bootstrap ------------------------------------------------------- */

/*
 * How a team's processes find each other. allgather() must gather nbytes
 * from every rank into recv (rank i's bytes at recv + i*nbytes) on all
 * ranks, and return 0 on success. It is called a few times during team
 * creation only: never inside a collective, never at destruction. numacoll
 * cannot watch its waits: one that may wait for a dead or silent process
 * gives up itself and returns non-zero, and creation fails on that rank
 * with NUMACOLL_ERR_BOOTSTRAP (docs/usage.md, "Waiting, timeouts and dead
 * peers").
 */
typedef struct numacoll_bootstrap {
    int rank;
    int size;
    int (*allgather)(const void *send, void *recv, size_t nbytes, void *ctx);
    void *ctx;
} numacoll_bootstrap_t;

/* ---- team ------------------------------------------------------------ */

typedef struct numacoll_team numacoll_team_t;

/*
 * Collective over the bootstrap's ranks. cfg may be NULL for defaults.
 * The ranks agree on every failure found after they first meet (a bad
 * configuration included): all return the same status. A /dev/shm too
 * full for the segment is NUMACOLL_ERR_NOMEM (the segment is reserved at
 * creation, so it never shows later as a SIGBUS). A segment that a freed team of the same
 * processes left in this process's pool is reused when every rank has it
 * (numacoll_team_destroy).
 */
NUMACOLL_API
int numacoll_team_create(const numacoll_bootstrap_t *boot,
                         const numacoll_config_t *cfg,
                         numacoll_team_t **team);

/* Why this thread's last numacoll_team_create() failed, on every rank of
 * it: the failing rank's message (e.g. how many bytes /dev/shm lacked), or
 * on the other ranks which rank failed when it could not be shared; "" if
 * that call succeeded. */
NUMACOLL_API const char *numacoll_team_create_error(void);

/*
 * Local: each rank releases its own mapping and frees the team; no other
 * rank needs to take part (an Open MPI communicator being freed cannot run
 * collectives). The mapping goes into a small per-process pool (at most
 * $NUMACOLL_SEG_POOL entries, default 4, 0: none; 256 MiB of segments at
 * most), from which a later team of the same processes, rank order and
 * segment layout takes it instead of creating a segment; the oldest entry
 * beyond the limits is unmapped. The segment's memory goes when the last
 * process unmaps it (exit included).
 */
NUMACOLL_API int numacoll_team_destroy(numacoll_team_t *team);

NUMACOLL_API int numacoll_team_rank(const numacoll_team_t *team);
NUMACOLL_API int numacoll_team_size(const numacoll_team_t *team);
NUMACOLL_API
const numacoll_config_t *numacoll_team_config(const numacoll_team_t *team);

/* Detailed message of this rank's last failure, "" if none. */
NUMACOLL_API const char *numacoll_team_last_error(const numacoll_team_t *team);

/* The tuning table the team's choices come from: "built-in", the file's
 * path, "tuning_text", or "built-in (<file> rejected: <why>)". */
NUMACOLL_API
const char *numacoll_team_tuning_source(const numacoll_team_t *team);

/* 1 if the team's cma rules (Bcast, the gathers, Alltoall) may copy
 * straight between the ranks' buffers (Linux cross-memory attach,
 * process_vm_readv/writev, probed between every pair of
 * neighbouring ranks at team creation and agreed by all), else 0; *why (if
 * not NULL) then says why not: the parameter single_copy = 0, the
 * probe's error (ptrace policy, seccomp, another user, a container), or,
 * with single_copy = 1, that the kernel's copy took more than 2 memcpys
 * on some rank (timed at team creation; the figure is in *why). */
NUMACOLL_API
int numacoll_team_single_copy(const numacoll_team_t *team, const char **why);

/* This rank's shared memory in the team (docs/usage.md, "Memory"): *now,
 * unless NULL, the bytes of /dev/shm it holds now (its control pages, rank
 * 0 the header and banks too, and its staging once the team has grown);
 * *grown, unless NULL, what it holds once the team has grown. A team is
 * created with its control pages alone and grows its queues and staging
 * slots at the first call that needs them. Returns 1 once the team has
 * grown, 0 before, -1 for a NULL team. Since 0.4. */
NUMACOLL_API
int numacoll_team_footprint(const numacoll_team_t *team, size_t *now,
                            size_t *grown);

/* How this rank's waits give the CPU away on the team (numacoll_config_t's
 * wait_policy, auto resolved): 0 spin, 1 yield, 2 sleep; -1 for a NULL
 * team. *oversubscribed, unless NULL: 1 where the team counted fewer CPUs
 * in the union of its ranks' affinity masks than ranks, or some rank asked
 * for sleeping waits (then writers wake sleepers); the same on every rank.
 * Since 0.3. */
NUMACOLL_API
int numacoll_team_wait_policy(const numacoll_team_t *team,
                              int *oversubscribed);

/* Largest element (bytes) a user op may have in a Reduce (allreduce = 0)
 * or Allreduce (allreduce = 1) of nbytes on this team: the staging slot
 * of the team's rule for that size. numacoll_reduce_user and
 * numacoll_allreduce_user fail with NUMACOLL_ERR_ARG beyond it. */
NUMACOLL_API
size_t numacoll_team_max_elem(const numacoll_team_t *team, int allreduce,
                              size_t nbytes);

/* Name of the team's segment, for messages: the file in /dev/shm never has
 * a name (it is created unlinked, so a crash leaves nothing behind), but
 * gets one in the format /numacoll-<uid>-<host>-<pid>-<counter>-<hex> at
 * creation. A team that reuses a pooled segment has that segment's name. */
NUMACOLL_API
const char *numacoll_team_segment_name(const numacoll_team_t *team);

/* Where a rank runs, as topology discovery saw it. -1 where unknown. */
typedef struct numacoll_locality {
    int32_t pu, core, l3, numa, package; /* hwloc logical indexes; numa is the
                                            NUMA node's OS index             */
    int32_t bound;                       /* 1 if bound to a subset of PUs    */
    int32_t pid;
} numacoll_locality_t;

NUMACOLL_API
int numacoll_team_locality(const numacoll_team_t *team, int rank,
                           numacoll_locality_t *loc);

/*
 * Placement of this rank's block of the segment. The whole block is bound
 * to bound_node and its memory reserved in /dev/shm at creation, but only
 * its control pages (control slots, sync lines, reduce slot records) are
 * touched then, so only they are verified with move_pages; the buffers
 * come into the processes' memory (RSS) when first used, on the node the
 * binding chose when they were reserved.
 */
typedef struct numacoll_placement {
    int    intended_node;   /* NUMA node of this rank in the topology         */
    int    bound_node;      /* node the block was bound to (-1: not bound)    */
    int    degraded;        /* 1 if intended_node does not exist here          */
    size_t pages;           /* control pages verified                         */
    size_t pages_on_node;   /* of those, pages found on bound_node            */
    size_t pages_unknown;   /* of those, pages move_pages could not report    */
    size_t block_pages;     /* pages of the whole block, buffers included     */
} numacoll_placement_t;

NUMACOLL_API
int numacoll_team_placement(const numacoll_team_t *team,
                            numacoll_placement_t *pl);

/* ---- collectives ----------------------------------------------------- */

/* Broadcast nbytes of contiguous memory from root's buf to every rank's buf. */
NUMACOLL_API
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

NUMACOLL_API
int numacoll_bcast_packed(numacoll_team_t *team, size_t nbytes, int root,
                          numacoll_pack_fn pack, numacoll_unpack_fn unpack,
                          void *ctx);

/*
 * Barrier: no rank returns before every rank has entered. By default a
 * dissemination over per-rank flag lines (alg=dissem: every rank stores
 * its own line and reads the others', in ceil(log_k p) rounds, one round
 * with the built-in k = 64); a tuning table may choose fan-in then fan-out
 * along the Barrier's own tree instead (alg=tree: ranks of a NUMA node
 * meet their leader along a k-nomial tree, the leaders meet rank 0 along
 * another). k = barrier_radix where set.
 */
NUMACOLL_API int numacoll_barrier(numacoll_team_t *team);

/* ---- reductions ------------------------------------------------------ */

/* The value/index pairs of MINLOC and MAXLOC, laid out as C (and MPI's
 * MPI_FLOAT_INT ... MPI_LONG_DOUBLE_INT) lay them out: value, then int. */
typedef struct { float v;       int i; } numacoll_float_int_t;
typedef struct { double v;      int i; } numacoll_double_int_t;
typedef struct { long v;        int i; } numacoll_long_int_t;
typedef struct { int v;         int i; } numacoll_2int_t;
typedef struct { short v;       int i; } numacoll_short_int_t;
typedef struct { long double v; int i; } numacoll_long_double_int_t;
/* Fortran's pairs (MPI_2REAL, MPI_2DOUBLE_PRECISION): the index has the
 * value's type. */
typedef struct { float v;       float i; } numacoll_2float_t;
typedef struct { double v;      double i; } numacoll_2double_t;

/* Complex numbers as C's float/double/long double _Complex and Fortran's
 * COMPLEX lay them out: real part, then imaginary part. */
typedef struct { float re, im; }       numacoll_complex_float_t;
typedef struct { double re, im; }      numacoll_complex_double_t;
typedef struct { long double re, im; } numacoll_complex_long_double_t;
/* IEEE binary128 (Fortran's REAL(16) / REAL*16 on x86-64 and AArch64,
 * GCC's __float128 / _Float128), and its complex (COMPLEX*32): as bytes
 * here, so the header needs no compiler extension. */
typedef struct { _Alignas(16) unsigned char b[16]; } numacoll_float128_t;
typedef struct { numacoll_float128_t re, im; } numacoll_complex_float128_t;

/*
 * X(name, c_type, text): element types of the predefined ops. An MPI
 * binding maps its types by kind and size: integers by width and
 * signedness (MPI_INT, MPI_INTEGER -> INT32, MPI_UNSIGNED_CHAR / MPI_BYTE
 * / MPI_C_BOOL -> UINT8, MPI_LOGICAL -> INT32 for the logical ops, ...),
 * reals and complex numbers by width (MPI_DOUBLE_PRECISION -> DOUBLE,
 * MPI_COMPLEX -> COMPLEX_FLOAT, ...). The types after LONG_DOUBLE_INT
 * came later: the values of the earlier ones never change.
 */
#define NUMACOLL_DTYPE_LIST(X)                                                \
    X(INT8,   int8_t,   "int8")                                               \
    X(UINT8,  uint8_t,  "uint8")                                              \
    X(INT16,  int16_t,  "int16")                                              \
    X(UINT16, uint16_t, "uint16")                                             \
    X(INT32,  int32_t,  "int32")                                              \
    X(UINT32, uint32_t, "uint32")                                             \
    X(INT64,  int64_t,  "int64")                                              \
    X(UINT64, uint64_t, "uint64")                                             \
    X(FLOAT,  float,    "float")                                              \
    X(DOUBLE, double,   "double")                                             \
    X(LONG_DOUBLE, long double, "long_double")                                \
    X(FLOAT_INT,   numacoll_float_int_t,       "float_int")                   \
    X(DOUBLE_INT,  numacoll_double_int_t,      "double_int")                  \
    X(LONG_INT,    numacoll_long_int_t,        "long_int")                    \
    X(2INT,        numacoll_2int_t,            "2int")                        \
    X(SHORT_INT,   numacoll_short_int_t,       "short_int")                   \
    X(LONG_DOUBLE_INT, numacoll_long_double_int_t, "long_double_int")     \
    X(COMPLEX_FLOAT,  numacoll_complex_float_t,  "complex_float")         \
    X(COMPLEX_DOUBLE, numacoll_complex_double_t, "complex_double")        \
    X(COMPLEX_LONG_DOUBLE, numacoll_complex_long_double_t,                \
      "complex_long_double")                                              \
    X(2FLOAT,  numacoll_2float_t,  "2float")                              \
    X(2DOUBLE, numacoll_2double_t, "2double")                             \
    X(FLOAT128, numacoll_float128_t, "float128")                          \
    X(COMPLEX_FLOAT128, numacoll_complex_float128_t, "complex_float128")

typedef enum {
#define NUMACOLL_X_ENUM(name, ctype, text) NUMACOLL_DTYPE_##name,
    NUMACOLL_DTYPE_LIST(NUMACOLL_X_ENUM)
#undef NUMACOLL_X_ENUM
    NUMACOLL_DTYPE_COUNT
} numacoll_dtype_t;

/*
 * X(name, text): the predefined ops, with MPI's meaning. Integers take
 * SUM PROD MIN MAX LAND LOR LXOR BAND BOR BXOR (SUM and PROD wrap modulo
 * 2^bits, logical ops yield 0 or 1, any nonzero operand being true, as a
 * Fortran LOGICAL's); float, double and long double take SUM PROD MIN
 * MAX, and so does float128 where the compiler has binary128 arithmetic
 * (numacoll_op_valid says; GCC on x86-64 and AArch64 has); the complex
 * types SUM and PROD (PROD as C's operator computes it,
 * Annex G's recovery of infinities included); the pair types take MINLOC
 * and MAXLOC (value, then the lower index on ties). numacoll_op_valid() says which pairs exist.
 */
#define NUMACOLL_OP_LIST(X)                                                   \
    X(SUM, "sum") X(PROD, "prod") X(MIN, "min") X(MAX, "max")                 \
    X(LAND, "land") X(LOR, "lor") X(LXOR, "lxor")                             \
    X(BAND, "band") X(BOR, "bor") X(BXOR, "bxor")                             \
    X(MINLOC, "minloc") X(MAXLOC, "maxloc")

typedef enum {
#define NUMACOLL_X_ENUM(name, text) NUMACOLL_OP_##name,
    NUMACOLL_OP_LIST(NUMACOLL_X_ENUM)
#undef NUMACOLL_X_ENUM
    NUMACOLL_OP_COUNT
} numacoll_op_t;

/* "int8" ... / "sum" ...; NULL when out of range. */
NUMACOLL_API const char *numacoll_dtype_name(numacoll_dtype_t dtype);
NUMACOLL_API const char *numacoll_op_name(numacoll_op_t op);
/* Bytes of one element (sizeof the C type, padding included); 0 if out of
 * range. Buffers hold count such elements back to back. */
NUMACOLL_API size_t numacoll_dtype_size(numacoll_dtype_t dtype);
/* 1 if MPI defines op on dtype (and numacoll implements it), else 0. */
NUMACOLL_API int numacoll_op_valid(numacoll_op_t op, numacoll_dtype_t dtype);

/*
 * In-place marker for sendbuf (MPI_IN_PLACE): the rank's contribution is
 * taken from recvbuf, which then receives the result. Reduce accepts it
 * (or sendbuf == recvbuf) at the root only; Allreduce on any rank. The
 * gathers take it as MPI does (below).
 */
#define NUMACOLL_IN_PLACE ((const void *)1)

/*
 * Reduce count elements of every rank's sendbuf with op into root's
 * recvbuf. recvbuf is not touched on other ranks (it may be NULL there).
 * Determinism: the combination order is fixed by the team and the root
 * (a NUMA-aware k-nomial tree, children folded in a fixed order), never
 * by arrival, so equal inputs give bitwise-equal results on every run.
 * Every rank must pass the same count, dtype, op and root; ranks that
 * disagree get NUMACOLL_ERR_MISMATCH (docs/usage.md), not wrong data. Padding bytes of long double and
 * pair elements in recvbuf are unspecified. Buffers need no alignment.
 */
NUMACOLL_API
int numacoll_reduce(numacoll_team_t *team, const void *sendbuf, void *recvbuf,
                    size_t count, numacoll_dtype_t dtype, numacoll_op_t op,
                    int root);

/*
 * Reduce, with the result in every rank's recvbuf, bitwise identical on
 * every rank. The algorithm depends on the team's tuning table and the
 * size only (built in: inline up to 191 bytes, at p <= 2 up to 255 and
 * then allfold up to 16 KiB, reduce-scatter/allgather from there on;
 * docs/tuning.md), so equal inputs give equal results on every run with
 * the same table.
 */
NUMACOLL_API
int numacoll_allreduce(numacoll_team_t *team, const void *sendbuf,
                       void *recvbuf, size_t count, numacoll_dtype_t dtype,
                       numacoll_op_t op);

/*
 * A user-defined op, as MPI_User_function: for i < count,
 *     inout[i] = in[i] op inout[i]
 * where `in` is the LEFT operand: it always holds the contribution (or the
 * combined contributions) of lower-ranked processes than `inout`, so a
 * non-commutative op yields x_0 op x_1 op ... op x_(p-1) (parenthesised
 * in some fixed way: the op must be associative). `in` may point into
 * shared memory owned by another rank: fn must not write it. Elements are
 * elem_size bytes, back to back. Pointers into numacoll's own memory are
 * aligned like some element of a 64-byte aligned array; the others point
 * into the caller's buffers. count is at most reduce_frag_size / elem_size
 * per call.
 */
typedef void (*numacoll_user_op_fn)(void *ctx, const void *in, void *inout,
                                    size_t count);

/*
 * Reduce / Allreduce with a user op. commutative = 0 combines in rank
 * order (a k-nomial tree over ranks rooted at rank 0, then one hop to the
 * root); 1 lets Reduce use the NUMA-aware tree. elem_size must be at most
 * reduce_frag_size (NUMACOLL_ERR_ARG otherwise).
 */
NUMACOLL_API
int numacoll_reduce_user(numacoll_team_t *team, const void *sendbuf,
                         void *recvbuf, size_t count, size_t elem_size,
                         numacoll_user_op_fn fn, void *ctx, int commutative,
                         int root);
NUMACOLL_API
int numacoll_allreduce_user(numacoll_team_t *team, const void *sendbuf,
                            void *recvbuf, size_t count, size_t elem_size,
                            numacoll_user_op_fn fn, void *ctx,
                            int commutative);

/* ---- nonblocking and persistent collectives --------------------------- */

/*
 * A request is one collective in flight. numacoll_i<op>() starts the
 * collective and returns at once; numacoll_<op>_init() makes a persistent
 * request that numacoll_start() runs again and again, with every choice
 * (algorithm, tuning rule, geometry, tree) taken once at init. Arguments
 * mean what they mean for the blocking call of the same name, and the
 * buffers belong to the call until it completes.
 *
 * Order: like MPI's collectives on one communicator, every rank must start
 * the collectives of a team (blocking, nonblocking or persistent starts) in
 * the same order. Requests of one team complete in the order they were
 * started; a blocking call first completes every request started before it.
 * Progress: a request moves when this rank calls numacoll_test(),
 * numacoll_wait(), numacoll_progress() or any collective on its team; the
 * other ranks' calls never wait for this one to call in, but they cannot
 * finish a collective before this rank has done its part. Only the
 * team's own requests move in those calls: a program (or an MPI library)
 * that has requests on several teams and waits on one of them must keep
 * the others moving too (numacoll_progress() on each), or ranks that
 * started them in different orders wait for each other forever.
 *
 * Statuses: the start functions return an error (and make no request)
 * when the arguments are refused; the collective's own outcome comes from
 * numacoll_test() / numacoll_wait(), with numacoll_team_last_error() for
 * the detail. A team must have no outstanding request when destroyed
 * (numacoll_team_destroy() completes them first).
 */
typedef struct numacoll_request numacoll_request_t;

NUMACOLL_API
int numacoll_ibcast(numacoll_team_t *team, void *buf, size_t nbytes, int root,
                    numacoll_request_t **req);
NUMACOLL_API
int numacoll_ibcast_packed(numacoll_team_t *team, size_t nbytes, int root,
                           numacoll_pack_fn pack, numacoll_unpack_fn unpack,
                           void *ctx, numacoll_request_t **req);
NUMACOLL_API int numacoll_ibarrier(numacoll_team_t *team,
                                   numacoll_request_t **req);
NUMACOLL_API
int numacoll_ireduce(numacoll_team_t *team, const void *sendbuf,
                     void *recvbuf, size_t count, numacoll_dtype_t dtype,
                     numacoll_op_t op, int root, numacoll_request_t **req);
NUMACOLL_API
int numacoll_iallreduce(numacoll_team_t *team, const void *sendbuf,
                        void *recvbuf, size_t count, numacoll_dtype_t dtype,
                        numacoll_op_t op, numacoll_request_t **req);
NUMACOLL_API
int numacoll_ireduce_user(numacoll_team_t *team, const void *sendbuf,
                          void *recvbuf, size_t count, size_t elem_size,
                          numacoll_user_op_fn fn, void *ctx, int commutative,
                          int root, numacoll_request_t **req);
NUMACOLL_API
int numacoll_iallreduce_user(numacoll_team_t *team, const void *sendbuf,
                             void *recvbuf, size_t count, size_t elem_size,
                             numacoll_user_op_fn fn, void *ctx,
                             int commutative, numacoll_request_t **req);

/* Persistent requests: inactive until numacoll_start(). */
NUMACOLL_API
int numacoll_bcast_init(numacoll_team_t *team, void *buf, size_t nbytes,
                        int root, numacoll_request_t **req);
NUMACOLL_API
int numacoll_bcast_packed_init(numacoll_team_t *team, size_t nbytes, int root,
                               numacoll_pack_fn pack,
                               numacoll_unpack_fn unpack, void *ctx,
                               numacoll_request_t **req);
NUMACOLL_API int numacoll_barrier_init(numacoll_team_t *team,
                                       numacoll_request_t **req);
NUMACOLL_API
int numacoll_reduce_init(numacoll_team_t *team, const void *sendbuf,
                         void *recvbuf, size_t count, numacoll_dtype_t dtype,
                         numacoll_op_t op, int root, numacoll_request_t **req);
NUMACOLL_API
int numacoll_allreduce_init(numacoll_team_t *team, const void *sendbuf,
                            void *recvbuf, size_t count,
                            numacoll_dtype_t dtype, numacoll_op_t op,
                            numacoll_request_t **req);
NUMACOLL_API
int numacoll_reduce_user_init(numacoll_team_t *team, const void *sendbuf,
                              void *recvbuf, size_t count, size_t elem_size,
                              numacoll_user_op_fn fn, void *ctx,
                              int commutative, int root,
                              numacoll_request_t **req);
NUMACOLL_API
int numacoll_allreduce_user_init(numacoll_team_t *team, const void *sendbuf,
                                 void *recvbuf, size_t count,
                                 size_t elem_size, numacoll_user_op_fn fn,
                                 void *ctx, int commutative,
                                 numacoll_request_t **req);

/* Start an inactive persistent request (NUMACOLL_ERR_ARG if it is a
 * nonblocking one or already active). */
NUMACOLL_API int numacoll_start(numacoll_request_t *req);

/*
 * *done = 1 once the request has completed, and then returns the
 * collective's status; a nonblocking request is freed and *req set to
 * NULL, a persistent one turns inactive. *done = 0 (returns NUMACOLL_OK)
 * while it is in flight. A NULL *req or an inactive persistent request
 * counts as completed with NUMACOLL_OK.
 */
NUMACOLL_API int numacoll_test(numacoll_request_t **req, int *done);
/* numacoll_test() until done, spinning briefly and then yielding. */
NUMACOLL_API int numacoll_wait(numacoll_request_t **req);

/*
 * Free a request and set *req to NULL. A persistent request must be
 * inactive (NUMACOLL_ERR_ARG otherwise). A nonblocking one in flight is
 * detached: it still runs to completion as the team progresses, and its
 * status is lost. (MPI forbids freeing a request of a nonblocking
 * collective; an MPI binding keeps to that.)
 */
NUMACOLL_API int numacoll_request_free(numacoll_request_t **req);

/* Move the team's requests as far as they go without waiting; returns how
 * many are still in flight (0: none), for an MPI library's progress
 * loop. */
NUMACOLL_API int numacoll_progress(numacoll_team_t *team);

/*
 * A function every blocking wait of this process calls while it waits
 * (after its spins, before each yield or sleep), for an MPI binding whose
 * requests on other teams must keep moving while a blocking collective
 * waits (an MPI without a progress engine to hook into). hook(ctx, team)
 * gets the waiting team, must not wait itself, may call numacoll_progress()
 * and numacoll_test() on other teams, and returns nonzero while it has
 * requests in flight, which keeps the wait from sleeping (it yields
 * instead: a sleeping rank would move nothing). Process-wide; NULL removes
 * it. A wait inside the hook's own calls does not call it again. Set it
 * while no wait runs in another thread (a wait may pair a hook with the
 * context set just before or after it), and keep what ctx points to alive:
 * a wait that began before a change may still call the old hook. Since
 * 0.5.
 */
typedef int (*numacoll_wait_hook_fn)(void *ctx, const numacoll_team_t *team);
NUMACOLL_API void numacoll_set_wait_hook(numacoll_wait_hook_fn hook,
                                         void *ctx);

/*
 * The gathers: blocks of contiguous bytes, block j of rank j.
 *
 * Allgather: every rank's nbytes from sendbuf land at recvbuf + j * nbytes
 * on every rank. Allgatherv: rank j's sendbytes (== recvbytes[j]) land at
 * recvbuf + displs[j] on every rank; recvbytes and displs are given
 * alike on every rank. sendbuf NUMACOLL_IN_PLACE: the rank's own block is
 * already in place in recvbuf.
 * Gather: every rank's nbytes from sendbuf land at root's recvbuf +
 * j * nbytes (recvbuf is not touched elsewhere; it may be NULL there).
 * Gatherv: rank j's sendbytes land at root's recvbuf + displs[j];
 * recvbytes (with recvbytes[j] == rank j's sendbytes) and displs are read
 * at the root only. sendbuf NUMACOLL_IN_PLACE at the root only: its own
 * block is already in place.
 * Scatter: block j, nbytes at root's sendbuf + j * nbytes, lands in rank
 * j's recvbuf. Scatterv: block j is sendbytes[j] at sendbuf + displs[j]
 * (both read at the root only) and rank j receives recvbytes ==
 * sendbytes[j]. recvbuf (void *)NUMACOLL_IN_PLACE at the root only: its
 * own block stays where it is.
 * Displacements may come in any order; blocks must not overlap. A v form
 * must be matched by the same v form on every rank, Gatherv and Scatterv
 * calls of different blocks on the root and a rank, or any other
 * disagreement, give NUMACOLL_ERR_MISMATCH (docs/usage.md), not wrong
 * data. Persistent v forms read the arrays at every start: they must stay
 * valid while the request lives (as MPI's).
 */
NUMACOLL_API
int numacoll_allgather(numacoll_team_t *team, const void *sendbuf,
                       void *recvbuf, size_t nbytes);
NUMACOLL_API
int numacoll_allgatherv(numacoll_team_t *team, const void *sendbuf,
                        size_t sendbytes, void *recvbuf,
                        const size_t *recvbytes, const size_t *displs);
NUMACOLL_API
int numacoll_gather(numacoll_team_t *team, const void *sendbuf,
                    void *recvbuf, size_t nbytes, int root);
NUMACOLL_API
int numacoll_gatherv(numacoll_team_t *team, const void *sendbuf,
                     size_t sendbytes, void *recvbuf, const size_t *recvbytes,
                     const size_t *displs, int root);
NUMACOLL_API
int numacoll_scatter(numacoll_team_t *team, const void *sendbuf,
                     void *recvbuf, size_t nbytes, int root);
NUMACOLL_API
int numacoll_scatterv(numacoll_team_t *team, const void *sendbuf,
                      const size_t *sendbytes, const size_t *displs,
                      void *recvbuf, size_t recvbytes, int root);

/*
 * Alltoall: block d of rank j's sendbuf (nbytes at sendbuf + d * nbytes)
 * lands at recvbuf + j * nbytes on rank d. sendbuf NUMACOLL_IN_PLACE: the
 * blocks to send are in recvbuf, and are replaced by those received.
 */
NUMACOLL_API
int numacoll_alltoall(numacoll_team_t *team, const void *sendbuf,
                      void *recvbuf, size_t nbytes);

/* The gathers and Alltoall, nonblocking (as numacoll_ibcast) and
 * persistent (as numacoll_bcast_init). */
NUMACOLL_API
int numacoll_iallgather(numacoll_team_t *team, const void *sendbuf,
                        void *recvbuf, size_t nbytes,
                        numacoll_request_t **req);
NUMACOLL_API
int numacoll_iallgatherv(numacoll_team_t *team, const void *sendbuf,
                         size_t sendbytes, void *recvbuf,
                         const size_t *recvbytes, const size_t *displs,
                         numacoll_request_t **req);
NUMACOLL_API
int numacoll_igather(numacoll_team_t *team, const void *sendbuf,
                     void *recvbuf, size_t nbytes, int root,
                     numacoll_request_t **req);
NUMACOLL_API
int numacoll_igatherv(numacoll_team_t *team, const void *sendbuf,
                      size_t sendbytes, void *recvbuf,
                      const size_t *recvbytes, const size_t *displs, int root,
                      numacoll_request_t **req);
NUMACOLL_API
int numacoll_iscatter(numacoll_team_t *team, const void *sendbuf,
                      void *recvbuf, size_t nbytes, int root,
                      numacoll_request_t **req);
NUMACOLL_API
int numacoll_iscatterv(numacoll_team_t *team, const void *sendbuf,
                       const size_t *sendbytes, const size_t *displs,
                       void *recvbuf, size_t recvbytes, int root,
                       numacoll_request_t **req);
NUMACOLL_API
int numacoll_ialltoall(numacoll_team_t *team, const void *sendbuf,
                       void *recvbuf, size_t nbytes, numacoll_request_t **req);
NUMACOLL_API
int numacoll_allgather_init(numacoll_team_t *team, const void *sendbuf,
                            void *recvbuf, size_t nbytes,
                            numacoll_request_t **req);
NUMACOLL_API
int numacoll_allgatherv_init(numacoll_team_t *team, const void *sendbuf,
                             size_t sendbytes, void *recvbuf,
                             const size_t *recvbytes, const size_t *displs,
                             numacoll_request_t **req);
NUMACOLL_API
int numacoll_gather_init(numacoll_team_t *team, const void *sendbuf,
                         void *recvbuf, size_t nbytes, int root,
                         numacoll_request_t **req);
NUMACOLL_API
int numacoll_gatherv_init(numacoll_team_t *team, const void *sendbuf,
                          size_t sendbytes, void *recvbuf,
                          const size_t *recvbytes, const size_t *displs,
                          int root, numacoll_request_t **req);
NUMACOLL_API
int numacoll_scatter_init(numacoll_team_t *team, const void *sendbuf,
                          void *recvbuf, size_t nbytes, int root,
                          numacoll_request_t **req);
NUMACOLL_API
int numacoll_scatterv_init(numacoll_team_t *team, const void *sendbuf,
                           const size_t *sendbytes, const size_t *displs,
                           void *recvbuf, size_t recvbytes, int root,
                           numacoll_request_t **req);
NUMACOLL_API
int numacoll_alltoall_init(numacoll_team_t *team, const void *sendbuf,
                           void *recvbuf, size_t nbytes,
                           numacoll_request_t **req);

/*
 * Alltoallv: block d of rank j's sendbuf (sendbytes[d] at sendbuf +
 * sdispls[d]) lands at recvbuf + rdispls[j] on rank d, which must give
 * recvbytes[j] == rank j's sendbytes[d] (NUMACOLL_ERR_MISMATCH otherwise,
 * not wrong data). Counts may be 0, displacements in any order; blocks
 * must not overlap. sendbuf NUMACOLL_IN_PLACE (as MPI_IN_PLACE):
 * sendbytes and sdispls are ignored, the blocks to send are in recvbuf as
 * laid out by recvbytes and rdispls (so a rank sends rank d as many bytes
 * as it receives from it), and are replaced by those received. The slot
 * of the rule for alltoall must hold an 8-byte header per peer
 * (reduce_frag_size >= 8 (p - 1); NUMACOLL_ERR_ARG otherwise). The arrays
 * of a persistent request are read at every start.
 */
NUMACOLL_API
int numacoll_alltoallv(numacoll_team_t *team, const void *sendbuf,
                       const size_t *sendbytes, const size_t *sdispls,
                       void *recvbuf, const size_t *recvbytes,
                       const size_t *rdispls);
NUMACOLL_API
int numacoll_ialltoallv(numacoll_team_t *team, const void *sendbuf,
                        const size_t *sendbytes, const size_t *sdispls,
                        void *recvbuf, const size_t *recvbytes,
                        const size_t *rdispls, numacoll_request_t **req);
NUMACOLL_API
int numacoll_alltoallv_init(numacoll_team_t *team, const void *sendbuf,
                            const size_t *sendbytes, const size_t *sdispls,
                            void *recvbuf, const size_t *recvbytes,
                            const size_t *rdispls, numacoll_request_t **req);

/*
 * The v forms on non-contiguous data, through the caller's callbacks
 * instead of buffers (as numacoll_bcast_packed; a uniform call is a v
 * call whose counts are all equal). The counts are those of the
 * contiguous forms: recvbytes of Allgatherv on every rank, of Gatherv at
 * the root only; sendbytes of Scatterv at the root only; both arrays of
 * Alltoallv on every rank. There are no displacements: the callbacks
 * place the bytes.
 *
 * pack(ctx, block, offset, dst, n) writes bytes [offset, offset + n) of
 * the send block `block` to dst: block is the rank it goes to (Scatterv's
 * root, Alltoallv), or the caller's own rank (Allgatherv, Gatherv: one
 * block). unpack(ctx, block, offset, src, n) takes bytes [offset,
 * offset + n) of the block received from rank `block`; the caller's own
 * block is received too (packed, then unpacked; nothing is in place).
 * Within a block the offsets grow from 0 to its size and each byte comes
 * once; calls for different blocks interleave. pack is needed on a rank
 * that sends bytes, unpack on one that receives bytes (its own block
 * included); NUMACOLL_ERR_ARG otherwise.
 *
 * A non-zero return from a callback makes the call return
 * NUMACOLL_ERR_CALLBACK on that rank; the call still runs to its end
 * there, so the others complete (with whatever bytes it wrote).
 *
 * They always run the staged algorithm (every block through its sender's
 * slots; no single copy, no inline lines), so every rank of a call must
 * use the packed form: a packed and a contiguous call meet as
 * NUMACOLL_ERR_MISMATCH, as do calls whose counts disagree.
 */
typedef int (*numacoll_block_pack_fn)(void *ctx, int block, size_t offset,
                                      void *dst, size_t n);
typedef int (*numacoll_block_unpack_fn)(void *ctx, int block, size_t offset,
                                        const void *src, size_t n);

NUMACOLL_API
int numacoll_allgatherv_packed(numacoll_team_t *team, size_t sendbytes,
                               const size_t *recvbytes,
                               numacoll_block_pack_fn pack,
                               numacoll_block_unpack_fn unpack, void *ctx);
NUMACOLL_API
int numacoll_gatherv_packed(numacoll_team_t *team, size_t sendbytes,
                            const size_t *recvbytes, int root,
                            numacoll_block_pack_fn pack,
                            numacoll_block_unpack_fn unpack, void *ctx);
NUMACOLL_API
int numacoll_scatterv_packed(numacoll_team_t *team, const size_t *sendbytes,
                             size_t recvbytes, int root,
                             numacoll_block_pack_fn pack,
                             numacoll_block_unpack_fn unpack, void *ctx);
NUMACOLL_API
int numacoll_alltoallv_packed(numacoll_team_t *team, const size_t *sendbytes,
                              const size_t *recvbytes,
                              numacoll_block_pack_fn pack,
                              numacoll_block_unpack_fn unpack, void *ctx);
/* Nonblocking (as numacoll_ibcast_packed) and persistent (as
 * numacoll_bcast_packed_init): ctx and the arrays belong to the call
 * until it completes; a persistent request reads the arrays at every
 * start. */
NUMACOLL_API
int numacoll_iallgatherv_packed(numacoll_team_t *team, size_t sendbytes,
                                const size_t *recvbytes,
                                numacoll_block_pack_fn pack,
                                numacoll_block_unpack_fn unpack, void *ctx,
                                numacoll_request_t **req);
NUMACOLL_API
int numacoll_igatherv_packed(numacoll_team_t *team, size_t sendbytes,
                             const size_t *recvbytes, int root,
                             numacoll_block_pack_fn pack,
                             numacoll_block_unpack_fn unpack, void *ctx,
                             numacoll_request_t **req);
NUMACOLL_API
int numacoll_iscatterv_packed(numacoll_team_t *team, const size_t *sendbytes,
                              size_t recvbytes, int root,
                              numacoll_block_pack_fn pack,
                              numacoll_block_unpack_fn unpack, void *ctx,
                              numacoll_request_t **req);
NUMACOLL_API
int numacoll_ialltoallv_packed(numacoll_team_t *team,
                               const size_t *sendbytes,
                               const size_t *recvbytes,
                               numacoll_block_pack_fn pack,
                               numacoll_block_unpack_fn unpack, void *ctx,
                               numacoll_request_t **req);
NUMACOLL_API
int numacoll_allgatherv_packed_init(numacoll_team_t *team, size_t sendbytes,
                                    const size_t *recvbytes,
                                    numacoll_block_pack_fn pack,
                                    numacoll_block_unpack_fn unpack,
                                    void *ctx, numacoll_request_t **req);
NUMACOLL_API
int numacoll_gatherv_packed_init(numacoll_team_t *team, size_t sendbytes,
                                 const size_t *recvbytes, int root,
                                 numacoll_block_pack_fn pack,
                                 numacoll_block_unpack_fn unpack, void *ctx,
                                 numacoll_request_t **req);
NUMACOLL_API
int numacoll_scatterv_packed_init(numacoll_team_t *team,
                                  const size_t *sendbytes, size_t recvbytes,
                                  int root, numacoll_block_pack_fn pack,
                                  numacoll_block_unpack_fn unpack, void *ctx,
                                  numacoll_request_t **req);
NUMACOLL_API
int numacoll_alltoallv_packed_init(numacoll_team_t *team,
                                   const size_t *sendbytes,
                                   const size_t *recvbytes,
                                   numacoll_block_pack_fn pack,
                                   numacoll_block_unpack_fn unpack,
                                   void *ctx, numacoll_request_t **req);

/*
 * Reduce_scatter_block: every rank contributes p * recvcount elements
 * (sendbuf); rank j receives, in recvbuf, elements [j recvcount, (j + 1)
 * recvcount) of x_0 op x_1 op ... op x_(p-1), folded in rank order
 * (bitwise equal to a rank-order fold, a non-commutative user op in that
 * order). Reduce_scatter: block j has recvcounts[j] elements (after
 * those of blocks 0..j-1), the array given alike on every rank (ranks
 * whose counts differ with the same total get NUMACOLL_ERR_MISMATCH).
 * sendbuf NUMACOLL_IN_PLACE (or recvbuf): the contribution is in recvbuf
 * (all blocks), and the rank's block of the result lands at its start.
 * p elements must fit the rule's staging slot (reduce_frag_size).
 * Elements and ops as numacoll_allreduce() / numacoll_allreduce_user().
 */
NUMACOLL_API
int numacoll_reduce_scatter_block(numacoll_team_t *team, const void *sendbuf,
                                  void *recvbuf, size_t recvcount,
                                  numacoll_dtype_t dtype, numacoll_op_t op);
NUMACOLL_API
int numacoll_reduce_scatter(numacoll_team_t *team, const void *sendbuf,
                            void *recvbuf, const size_t *recvcounts,
                            numacoll_dtype_t dtype, numacoll_op_t op);
NUMACOLL_API
int numacoll_reduce_scatter_block_user(numacoll_team_t *team,
                                       const void *sendbuf, void *recvbuf,
                                       size_t recvcount, size_t elem_size,
                                       numacoll_user_op_fn fn, void *ctx,
                                       int commutative);
NUMACOLL_API
int numacoll_reduce_scatter_user(numacoll_team_t *team, const void *sendbuf,
                                 void *recvbuf, const size_t *recvcounts,
                                 size_t elem_size, numacoll_user_op_fn fn,
                                 void *ctx, int commutative);

/*
 * Scan: rank i receives x_0 op x_1 op ... op x_i (count elements);
 * Exscan: x_0 op ... op x_(i-1), and rank 0's recvbuf is not touched (it
 * may be NULL there). Folded strictly in rank order (a non-commutative
 * user op included), bitwise equal to a rank-order fold. sendbuf
 * NUMACOLL_IN_PLACE (or recvbuf): the contribution is in recvbuf and is
 * replaced by the result (Exscan's rank 0: left as it is).
 */
NUMACOLL_API
int numacoll_scan(numacoll_team_t *team, const void *sendbuf, void *recvbuf,
                  size_t count, numacoll_dtype_t dtype, numacoll_op_t op);
NUMACOLL_API
int numacoll_exscan(numacoll_team_t *team, const void *sendbuf, void *recvbuf,
                    size_t count, numacoll_dtype_t dtype, numacoll_op_t op);
NUMACOLL_API
int numacoll_scan_user(numacoll_team_t *team, const void *sendbuf,
                       void *recvbuf, size_t count, size_t elem_size,
                       numacoll_user_op_fn fn, void *ctx, int commutative);
NUMACOLL_API
int numacoll_exscan_user(numacoll_team_t *team, const void *sendbuf,
                         void *recvbuf, size_t count, size_t elem_size,
                         numacoll_user_op_fn fn, void *ctx, int commutative);

/* Reduce_scatter(_block), Scan and Exscan, nonblocking (as
 * numacoll_iallreduce) and persistent (as numacoll_allreduce_init). */
NUMACOLL_API
int numacoll_ireduce_scatter_block(numacoll_team_t *team, const void *sendbuf,
                                   void *recvbuf, size_t recvcount,
                                   numacoll_dtype_t dtype, numacoll_op_t op,
                                   numacoll_request_t **req);
NUMACOLL_API
int numacoll_ireduce_scatter(numacoll_team_t *team, const void *sendbuf,
                             void *recvbuf, const size_t *recvcounts,
                             numacoll_dtype_t dtype, numacoll_op_t op,
                             numacoll_request_t **req);
NUMACOLL_API
int numacoll_ireduce_scatter_block_user(numacoll_team_t *team,
                                        const void *sendbuf, void *recvbuf,
                                        size_t recvcount, size_t elem_size,
                                        numacoll_user_op_fn fn, void *ctx,
                                        int commutative,
                                        numacoll_request_t **req);
NUMACOLL_API
int numacoll_ireduce_scatter_user(numacoll_team_t *team, const void *sendbuf,
                                  void *recvbuf, const size_t *recvcounts,
                                  size_t elem_size, numacoll_user_op_fn fn,
                                  void *ctx, int commutative,
                                  numacoll_request_t **req);
NUMACOLL_API
int numacoll_iscan(numacoll_team_t *team, const void *sendbuf, void *recvbuf,
                   size_t count, numacoll_dtype_t dtype, numacoll_op_t op,
                   numacoll_request_t **req);
NUMACOLL_API
int numacoll_iexscan(numacoll_team_t *team, const void *sendbuf,
                     void *recvbuf, size_t count, numacoll_dtype_t dtype,
                     numacoll_op_t op, numacoll_request_t **req);
NUMACOLL_API
int numacoll_iscan_user(numacoll_team_t *team, const void *sendbuf,
                        void *recvbuf, size_t count, size_t elem_size,
                        numacoll_user_op_fn fn, void *ctx, int commutative,
                        numacoll_request_t **req);
NUMACOLL_API
int numacoll_iexscan_user(numacoll_team_t *team, const void *sendbuf,
                          void *recvbuf, size_t count, size_t elem_size,
                          numacoll_user_op_fn fn, void *ctx, int commutative,
                          numacoll_request_t **req);
NUMACOLL_API
int numacoll_reduce_scatter_block_init(numacoll_team_t *team,
                                       const void *sendbuf, void *recvbuf,
                                       size_t recvcount,
                                       numacoll_dtype_t dtype,
                                       numacoll_op_t op,
                                       numacoll_request_t **req);
NUMACOLL_API
int numacoll_reduce_scatter_init(numacoll_team_t *team, const void *sendbuf,
                                 void *recvbuf, const size_t *recvcounts,
                                 numacoll_dtype_t dtype, numacoll_op_t op,
                                 numacoll_request_t **req);
NUMACOLL_API
int numacoll_reduce_scatter_block_user_init(numacoll_team_t *team,
                                            const void *sendbuf,
                                            void *recvbuf, size_t recvcount,
                                            size_t elem_size,
                                            numacoll_user_op_fn fn, void *ctx,
                                            int commutative,
                                            numacoll_request_t **req);
NUMACOLL_API
int numacoll_reduce_scatter_user_init(numacoll_team_t *team,
                                      const void *sendbuf, void *recvbuf,
                                      const size_t *recvcounts,
                                      size_t elem_size,
                                      numacoll_user_op_fn fn, void *ctx,
                                      int commutative,
                                      numacoll_request_t **req);
NUMACOLL_API
int numacoll_scan_init(numacoll_team_t *team, const void *sendbuf,
                       void *recvbuf, size_t count, numacoll_dtype_t dtype,
                       numacoll_op_t op, numacoll_request_t **req);
NUMACOLL_API
int numacoll_exscan_init(numacoll_team_t *team, const void *sendbuf,
                         void *recvbuf, size_t count, numacoll_dtype_t dtype,
                         numacoll_op_t op, numacoll_request_t **req);
NUMACOLL_API
int numacoll_scan_user_init(numacoll_team_t *team, const void *sendbuf,
                            void *recvbuf, size_t count, size_t elem_size,
                            numacoll_user_op_fn fn, void *ctx,
                            int commutative, numacoll_request_t **req);
NUMACOLL_API
int numacoll_exscan_user_init(numacoll_team_t *team, const void *sendbuf,
                              void *recvbuf, size_t count, size_t elem_size,
                              numacoll_user_op_fn fn, void *ctx,
                              int commutative, numacoll_request_t **req);

/* Calls of each operation completed by this rank's team (observability):
 * the first four collectives only, as in 0.1 (a struct of fixed size);
 * numacoll_team_calls() counts every collective. */
typedef struct numacoll_counters {
    uint64_t bcast;
    uint64_t barrier;
    uint64_t reduce;
    uint64_t allreduce;
} numacoll_counters_t;

NUMACOLL_API
int numacoll_team_counters(const numacoll_team_t *team, numacoll_counters_t *c);

/* The collectives, as numacoll_team_calls() names them. A later release
 * appends, never renumbers. */
typedef enum {
    NUMACOLL_COLL_BCAST = 0,      /* numacoll_bcast, _bcast_packed          */
    NUMACOLL_COLL_BARRIER,
    NUMACOLL_COLL_REDUCE,
    NUMACOLL_COLL_ALLREDUCE,
    NUMACOLL_COLL_ALLGATHER,      /* and Allgatherv                         */
    NUMACOLL_COLL_GATHER,         /* and Gatherv                            */
    NUMACOLL_COLL_SCATTER,        /* and Scatterv                           */
    NUMACOLL_COLL_ALLTOALL,       /* and Alltoallv                          */
    NUMACOLL_COLL_REDUCE_SCATTER, /* and Reduce_scatter_block               */
    NUMACOLL_COLL_SCAN,
    NUMACOLL_COLL_EXSCAN,
    NUMACOLL_COLL_COUNT
} numacoll_coll_t;

/* Calls of collective coll (the _user forms and every v form included)
 * that this rank's team completed successfully, blocking, nonblocking and
 * persistent starts alike, into *calls. NUMACOLL_ERR_ARG for a NULL
 * argument or a coll outside 0 .. NUMACOLL_COLL_COUNT - 1 (one this
 * release does not know). */
NUMACOLL_API
int numacoll_team_calls(const numacoll_team_t *team, numacoll_coll_t coll,
                        uint64_t *calls);

/* For a host MPI's glue (the Open MPI component, docs/ompi.md): 1 when
 * the team's tuning rule for a call of coll whose rule size is nbytes
 * says decline=1 (docs/tuning.md): the host should run the call with its
 * own collective, where numacoll measured slower. 0 otherwise, and for a
 * NULL team or a coll this release does not know. The size is the one the
 * core looks the rule up by: Bcast's bytes, Barrier's 0, a reduction's
 * elements times their size (Reduce_scatter's: every block's), a
 * gather's block (Allgatherv's largest), SIZE_MAX for Gatherv, Scatterv
 * and Alltoallv. Every rank of a team has the same rules, so the same
 * call gets the same answer everywhere. The core never declines: called
 * directly, numacoll runs such a rule's algorithm. Costs a load and a
 * test where no rule of coll declines, else a binary search. */
NUMACOLL_API
int numacoll_team_declines(const numacoll_team_t *team, numacoll_coll_t coll,
                           size_t nbytes);
/* Bit c set: some size of collective c declines on this team
 * (numacoll_team_declines); 0 where none does, so a glue can keep this
 * and skip the per-call question altogether. 0 for a NULL team. */
NUMACOLL_API
unsigned numacoll_team_decline_mask(const numacoll_team_t *team);

#ifdef __cplusplus
}
#endif
#endif /* NUMACOLL_H */
