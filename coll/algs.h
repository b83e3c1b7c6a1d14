/*
 * The algorithm table: one X-macro list of every algorithm of every
 * collective, {collective, id, name, table keys, largest size, description},
 * so that dispatch, the
 * benchmark (--alg), the tuning-file parser and the autotuner read the same
 * names. Adding an algorithm = one line here + its file + one case in the
 * collective's dispatch.
 */
#ifndef NUMACOLL_ALGS_H
#define NUMACOLL_ALGS_H

#include <stddef.h>
#include <stdint.h>

/* X(id, name): the collectives. */
#define NC_COLL_LIST(X)                                                        \
    X(BCAST, "bcast")                                                          \
    X(BARRIER, "barrier")                                                      \
    X(REDUCE, "reduce")                                                        \
    X(ALLREDUCE, "allreduce")                                                  \
    X(ALLGATHER, "allgather")                                                  \
    X(GATHER, "gather")                                                        \
    X(SCATTER, "scatter")                                                      \
    X(ALLTOALL, "alltoall")                                                    \
    X(REDUCE_SCATTER, "reduce_scatter")                                        \
    X(SCAN, "scan")                                                            \
    X(EXSCAN, "exscan")

typedef enum {
#define X(id, name) NC_COLL_##id,
    NC_COLL_LIST(X)
#undef X
    NC_COLL_COUNT
} nc__coll_t;

/* Largest inline Bcast a rule may name: every rank's inline slots are
 * sized for the largest inline rule of its team (shm_seg/layout.h). */
#define NC_BCAST_INLINE_CAP 8192
/* The same for inline Allreduce lines (coll/reduce/allreduce_inline.c). */
#define NC_AR_INLINE_CAP 8192
/* The same for an inline Allgather's block (coll/gather/allgather_inline.c),
 * which takes the Allreduce's lines. */
#define NC_AG_INLINE_CAP 2048
/* The same for the inline Gather, Scatter and Alltoall blocks (coll/gather/
 * rooted_inline.c, alltoall_inline.c): per rank's block. */
#define NC_GA_INLINE_CAP 2048

/* X(coll, id, name, keys, max_bytes, desc). keys: the parameters a tuning
 * rule must give for the algorithm (tune/table.h): f fragment bytes, s
 * buffers or staging slots, q banks, tree kind, k radix. */
#define NC_ALG_LIST(X)                                                         \
    X(BCAST, INLINE, "inline", "tree k", NC_BCAST_INLINE_CAP,                  \
      "payload travels in sequence-numbered cache lines of 56 bytes, each "    \
      "carrying its own signature word; readers ack with plain stores; at "    \
      "most 8192 bytes (the rules' largest inline size sizes the slots)")      \
    X(BCAST, PIPELINED, "pipelined", "f s q tree k", SIZE_MAX,                 \
      "copy-in/copy-out through the root's NUMA-local queue of s fragments "   \
      "in q banks, notifications down the tree")                               \
    X(BCAST, CMA, "cma", "f tree k", SIZE_MAX,                                 \
      "single copy: each rank reads f-byte pieces straight from its tree "    \
      "parent's buffer with process_vm_readv (Linux CMA); pipelined "         \
      "copy-in/copy-out where CMA is not permitted")                          \
    X(BARRIER, TREE, "tree", "k", SIZE_MAX,                                    \
      "fan-in then fan-out on per-rank sync lines along the barrier's own "    \
      "NUMA-aware k-nomial tree (barrier_radix)")                              \
    X(BARRIER, DISSEM, "dissem", "k", SIZE_MAX,                                \
      "k-way dissemination: in each of ceil(log_k p) rounds every rank "      \
      "stores one line of its own and reads k - 1 others' (no tree, no "      \
      "release wave); at p <= k one round: every rank reads every line")      \
    X(REDUCE, INLINE, "inline", "f s k", NC_AR_INLINE_CAP,                     \
      "every non-root rank publishes its contribution in the inline "         \
      "Allreduce's self-validating lines and returns; the root folds all p "  \
      "in rank order; elements a line cannot take run pipelined with the "    \
      "rule's f, s, k")                                                       \
    X(REDUCE, PIPELINED, "pipelined", "f s k", SIZE_MAX,                       \
      "fragments staged in each rank's NUMA-local slots, folded by parents "   \
      "along a NUMA-aware k-nomial tree (rank-ordered for non-commutative "    \
      "ops), pipelined")                                                       \
    X(ALLREDUCE, INLINE, "inline", "", NC_AR_INLINE_CAP,                       \
      "every rank publishes its contribution in self-validating cache lines "  \
      "of whole elements and folds all p contributions in rank order; at "     \
      "most 8192 bytes (the rules' largest inline size sizes the lines)")      \
    X(ALLREDUCE, REDUCE_BCAST, "reduce_bcast", "f s k", SIZE_MAX,              \
      "pipelined Reduce to rank 0 (f, s, k as the Reduce's), then the Bcast "  \
      "the table gives for the size, from rank 0")                             \
    X(ALLREDUCE, RSAG, "rsag", "f s", SIZE_MAX,                                \
      "reduce-scatter in shared memory (each rank folds one cache-line "       \
      "aligned slice of every contribution) then allgather of the slices")    \
    X(ALLREDUCE, ALLFOLD, "allfold", "f s", SIZE_MAX,                          \
      "every rank stages its whole contribution in its NUMA-local slots "      \
      "(f bytes, s deep) and folds all p contributions in rank order "        \
      "straight into its receive buffer: one wave, (p - 1) m read per rank")  \
    X(ALLGATHER, INLINE, "inline", "", NC_AG_INLINE_CAP,                      \
      "every rank publishes its block in self-validating cache lines (the "   \
      "inline Allreduce's) and copies every other rank's out: one wave of "   \
      "line transfers, no slot to release; blocks of at most 2048 bytes "     \
      "(the rules' largest inline block sizes the lines)")                    \
    X(ALLGATHER, STAGED, "staged", "f s", SIZE_MAX,                           \
      "every rank stages its block once, in fragments of f bytes, in its "    \
      "NUMA-local staging slots (s deep; 40 bytes or less ride in the "       \
      "slot's line); every other rank copies it out")                         \
    X(ALLGATHER, CMA, "cma", "f s", SIZE_MAX,                                 \
      "single copy: every rank writes its block straight into every other "    \
      "rank's receive buffer with process_vm_writev (Linux CMA), in pieces "   \
      "of f bytes; staged (f, s) where CMA is not permitted")                  \
    X(GATHER, INLINE, "inline", "", NC_GA_INLINE_CAP,                         \
      "every non-root rank writes its block in self-validating cache lines "  \
      "(the inline Allreduce's); the root reads them all; one wave of line "  \
      "transfers; blocks of at most 2048 bytes")                              \
    X(GATHER, STAGED, "staged", "f s", SIZE_MAX,                              \
      "every non-root rank stages its block in fragments of f bytes in its "  \
      "NUMA-local staging slots (s deep); the root copies them out")          \
    X(GATHER, CMA, "cma", "f s", SIZE_MAX,                                    \
      "single copy: every non-root rank writes its block straight into the "   \
      "root's receive buffer with process_vm_writev (Linux CMA), in pieces "   \
      "of f bytes, the root reading the first 1/p of each meanwhile; staged "  \
      "(f, s) where CMA is not permitted")                                     \
    X(SCATTER, INLINE, "inline", "", NC_GA_INLINE_CAP,                        \
      "the root writes every other rank's block in its self-validating "      \
      "cache lines (the inline Allreduce's); each rank reads its own; "       \
      "blocks of at most 2048 bytes")                                         \
    X(SCATTER, STAGED, "staged", "f s", SIZE_MAX,                             \
      "the root stages every rank's block in fragments of f bytes in its "    \
      "NUMA-local staging slots (s deep), round by round; each rank copies "  \
      "out its own")                                                          \
    X(SCATTER, CMA, "cma", "f s", SIZE_MAX,                                   \
      "single copy: every non-root rank reads its block straight from the "    \
      "root's send buffer with process_vm_readv (Linux CMA), in pieces of f "  \
      "bytes, the root writing the first 1/p of each meanwhile; staged (f, "   \
      "s) where CMA is not permitted")                                         \
    X(ALLTOALL, INLINE, "inline", "", NC_GA_INLINE_CAP,                       \
      "every rank writes its p - 1 outgoing blocks in its self-validating "   \
      "cache lines (the inline Allreduce's) and reads its block from every "  \
      "other rank's; blocks of at most 2048 bytes")                           \
    X(ALLTOALL, STAGED, "staged", "f s", SIZE_MAX,                            \
      "round by round, every rank stages one piece of each of its p - 1 "     \
      "outgoing blocks in one NUMA-local staging slot of f bytes (s deep); "  \
      "every other rank copies out its piece")                                 \
    X(ALLTOALL, CMA, "cma", "f s", SIZE_MAX,                                  \
      "single copy: every rank writes its block for each other rank "          \
      "straight into that rank's receive buffer with process_vm_writev "      \
      "(Linux CMA), in pieces of f bytes (in place: from a private copy); "    \
      "staged (f, s) where CMA is not permitted")                              \
    X(REDUCE_SCATTER, INLINE, "inline", "", NC_AR_INLINE_CAP,                 \
      "every rank publishes its contribution in self-validating cache lines " \
      "(the inline Allreduce's) and folds its own block of all p in rank "    \
      "order; at most 8192 bytes in all")                                     \
    X(REDUCE_SCATTER, STAGED, "staged", "f s", SIZE_MAX,                      \
      "round by round, every rank stages one piece of every other rank's "    \
      "block of its contribution in one NUMA-local staging slot of f bytes "  \
      "(s deep); each rank folds its own block's pieces of all p in rank "    \
      "order")                                                                 \
    X(SCAN, INLINE, "inline", "", NC_AR_INLINE_CAP,                           \
      "every rank but the last publishes its contribution in "                \
      "self-validating cache lines (the inline Allreduce's); rank i folds "   \
      "those of ranks 0..i in rank order; at most 8192 bytes")                \
    X(SCAN, STAGED, "staged", "f s", SIZE_MAX,                                \
      "every rank but the last stages its contribution in chunks of f bytes " \
      "in its NUMA-local staging slots (s deep); rank i folds those of "      \
      "ranks 0..i in rank order")                                              \
    X(EXSCAN, INLINE, "inline", "", NC_AR_INLINE_CAP,                         \
      "as scan's inline, rank i folding ranks 0..i-1 (the last publishes "    \
      "nothing)")                                                             \
    X(EXSCAN, STAGED, "staged", "f s", SIZE_MAX,                              \
      "as scan's, rank i folding those of ranks 0..i-1 (rank 0 receives "     \
      "nothing)")

typedef enum {
#define X(coll, id, name, keys, max, desc) NC_ALG_##coll##_##id,
    NC_ALG_LIST(X)
#undef X
    NC_ALG_COUNT
} nc__alg_t;

typedef struct nc__alg_info {
    nc__coll_t coll;
    nc__alg_t id;
    const char *name;
    const char *keys;      /* tuning-table keys it takes, space-separated */
    size_t max_bytes;      /* largest message it can carry               */
    const char *desc;
} nc__alg_info_t;

extern const nc__alg_info_t nc__algs[NC_ALG_COUNT];

/* Name of a collective ("bcast", "barrier", ...). */
const char *nc__coll_name(nc__coll_t coll);
/* 1 if algorithm alg's tuning rules carry key ("f", "s", "q", "tree",
 * "k"), i.e. the key is a word of nc__algs[alg].keys; else 0. */
int nc__alg_takes(int alg, const char *key);

/* Whether alg copies straight between the ranks' buffers (alg=cma of
 * Bcast, the gathers and Alltoall): a team without single copy runs such
 * rules copy-in/copy-out (nc__tune_no_cma). */
static inline int nc__alg_single_copy(int alg)
{
    return alg == NC_ALG_BCAST_CMA || alg == NC_ALG_ALLGATHER_CMA ||
           alg == NC_ALG_GATHER_CMA || alg == NC_ALG_SCATTER_CMA ||
           alg == NC_ALG_ALLTOALL_CMA;
}

/* Algorithm of `coll` called `name`, or -1. */
int nc__alg_find(nc__coll_t coll, const char *name);

#endif
