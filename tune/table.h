/*
 * The tuning table: which algorithm, with which fragment size, queue depth,
 * banks, tree and radix, each collective uses for a given team and message
 * size. Data, not code (DESIGN.md section 6): a text file, documented in
 * docs/tuning.md, one rule per line:
 *
 *   # comment
 *   levels    l3,numa            # at most one: the level list (optional)
 *   bcast     p=2-*  size=57-*   alg=pipelined f=8K s=64 q=2 tree=kary k=2
 *   allreduce p=1-*  size=0-56   nodes=1-2 ppn=1-*  alg=inline  # comment
 *
 * Rules of one collective must not overlap (every key range intersecting is
 * an error), so the order of lines never matters. The built-in defaults
 * (tune/defaults.txt) are such a table, compiled in and parsed by the same
 * code. A team resolves the table once, at creation, for its own p and its
 * shape at every level (NUMA nodes, L3 domains, ... and the most ranks in
 * one) into sorted size ranges per collective (nc__tune_team_t); a call
 * then finds its choice by binary search and never touches text.
 */
#ifndef NUMACOLL_TUNE_TABLE_H
#define NUMACOLL_TUNE_TABLE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "coll/algs.h"
#include "coll/copy.h"
#include "numacoll.h"

#define NC_TUNE_ANY_U UINT_MAX   /* "*" as the upper end of p/nodes/ppn */
#define NC_TUNE_ANY_Z SIZE_MAX   /* "*" as the upper end of size        */
#define NC_TUNE_MAX_RULES 4096   /* more lines of rules are refused     */
/* A tuning file larger than this is refused unread: real tables are a few
 * KiB, and a bound keeps a log, a core file or a device from being read
 * into every process (docs/tuning.md). */
#define NC_TUNE_FILE_MAX (1u << 20)

/* What one call runs: an algorithm and the parameters it reads. Parameters
 * an algorithm does not take are 0 (tree: -1). */
typedef struct nc__choice {
    nc__alg_t alg;
    size_t f;          /* fragment / staging slot bytes                   */
    unsigned s;        /* buffers (Bcast) or staging slots (Reduce)       */
    unsigned q;        /* banks (Bcast)                                    */
    int tree;          /* numacoll_tree_kind_t (Bcast), -1 otherwise      */
    unsigned k;        /* radix                                            */
    int copy;          /* copy-layer variant, nc__copy_kind_t (copy=; 0 is
                        * auto, the default of every rule)                */
    unsigned ku;       /* Reduce, Allreduce (reduce_bcast): radix between
                        * the heads of the levels (ku=); 0: k, the default */
    /* The tree inside each domain of a level (l3tree=kary:4 ...), by
     * numacoll_level_t, slot 0 the tree between the outermost domains
     * (toptree=): NC_LT values of coll/tree.h, 0 where the rule names
     * none. Rules whose algorithm takes k; Bcast's with tree=numa. */
    uint16_t lt[NUMACOLL_LEVEL_END];
    unsigned relay;    /* Bcast pipelined, tree=numa (relay=1): the head of
                        * each innermost domain copies every fragment once
                        * into its own queue and its members read that */
    unsigned decline;  /* decline=1: under a host MPI the call goes to the
                        * host's own component (docs/tuning.md); the core
                        * itself runs alg as usual */
} nc__choice_t;

/* One line of a table. Ranges are inclusive; an absent nodes/ppn key is
 * 1-*. The level keys (l1= l1ppd= l2= l2ppd= l3= l3ppd= package=
 * packageppd=) narrow the rule by the team's shape at another level:
 * lv_* the domains it spans there, rpd_* the most ranks in one of them,
 * indexed by numacoll_level_t. hi == 0 means the key is absent (any), so a
 * rule built with its other fields set and these zeroed applies to every
 * shape; NUMA's slots are unused (nodes/ppn say it). */
typedef struct nc__tune_rule {
    nc__coll_t coll;
    unsigned p_lo, p_hi;
    size_t size_lo, size_hi;
    unsigned nodes_lo, nodes_hi;
    unsigned ppn_lo, ppn_hi;
    unsigned lv_lo[NUMACOLL_LEVEL_END], lv_hi[NUMACOLL_LEVEL_END];
    unsigned rpd_lo[NUMACOLL_LEVEL_END], rpd_hi[NUMACOLL_LEVEL_END];
    /* over=: bit v set where the rule matches a team whose
     * oversubscription verdict (nc__tune_shape_t.over) is v; 0: the key is
     * absent, any verdict (so a rule built with this zeroed matches all) */
    unsigned over;
    nc__choice_t ch;
    double gain;       /* the tuner's measured gain (gain=1.23), 0 if none */
    int line;          /* line in the source, for messages; 0 if built    */
} nc__tune_rule_t;

typedef struct nc__tune_table {
    nc__tune_rule_t *rules;
    int n, cap;
    /* The table-wide line "levels l3,numa" (numacoll-tune writes the level
     * list it measured fastest): packed list, 0 if the table has none. A
     * team whose levels parameter is at its default (numa) builds its
     * trees by it; see docs/tuning.md. */
    int levels, levels_line;
    char source[256];  /* "built-in" or the file's path                   */
} nc__tune_table_t;

/*
 * Parse text[0..len) (no terminating NUL needed) named `source` in messages.
 * Every problem is one line of errs (NUL-terminated, truncated to errlen):
 *   "<source>:<line>:<col>: expected <what>, found '<token>'"
 * and for whole-rule problems
 *   "<source>:<line>: rule overlaps line <n> (bcast p=2-4 size=0-56)"
 *   "<source>:<line>: rule is unreachable: <why>"
 * Returns the number of problems; 0 means *out holds the table. On any
 * problem *out is left empty (never half a table). nc__tune_free(out)
 * either way.
 */
int nc__tune_parse(const char *text, size_t len, const char *source,
                   nc__tune_table_t *out, char *errs, size_t errlen);

/* nc__tune_parse of a file's contents. The file must be a regular file of
 * at most NC_TUNE_FILE_MAX bytes; one that is not, or cannot be read, is
 * one problem, "<path>: cannot read: <why>" (why: the strerror text, "it is
 * a FIFO (named pipe); a tuning file must be a regular file", "it holds N
 * bytes, more than ..."). Never blocks: a FIFO is refused, not opened for
 * a writer to come. */
int nc__tune_load(const char *path, nc__tune_table_t *out, char *errs,
                  size_t errlen);

void nc__tune_free(nc__tune_table_t *tab);

/* Append a rule (copied); 0, or -1 when out of memory or full. */
int nc__tune_add(nc__tune_table_t *tab, const nc__tune_rule_t *r);

/* Write one rule in the canonical form the parser reads (no newline). */
int nc__tune_format_rule(const nc__tune_rule_t *r, char *buf, size_t len);

/* Write every rule, one per line, after an optional header (each line of
 * `header` is written as a comment). Parsing the output gives back equal
 * rules. Returns 0, or -1 on a write error. */
int nc__tune_write(const nc__tune_table_t *tab, const char *header, FILE *to);

/* The compiled-in defaults (tune/defaults.txt), parsed once per process;
 * never NULL (a broken defaults file fails `make check`, and aborts). */
const nc__tune_table_t *nc__tune_builtin(void);

/* ---- resolution for one team -------------------------------------------- */

/* Size range [lo, hi] of one collective, with its choice and origin. */
typedef struct nc__tune_entry {
    size_t lo, hi;
    nc__choice_t ch;
    int line;          /* rule's line in its table                        */
    int builtin;       /* 1: filled in from the built-in table            */
} nc__tune_entry_t;

typedef struct nc__tune_team {
    nc__tune_entry_t *e[NC_COLL_COUNT];   /* sorted by lo, disjoint,     */
    int n[NC_COLL_COUNT];                 /* covering 0 .. SIZE_MAX      */
} nc__tune_team_t;

/* A team's shape as the rules see it: p ranks spanning `nodes` NUMA nodes
 * with at most `ppn` on one, oversubscribed or not (over), and at every
 * other level (numacoll_level_t)
 * dom[l] domains with at most rpd[l] ranks in one (nc__topo_level_shape).
 * dom[l] == 0: unknown; a rule that narrows level l then never matches. */
typedef struct nc__tune_shape {
    unsigned p, nodes, ppn;
    unsigned over;     /* 1: the team has fewer CPUs than ranks (a wait may
                        * find its peer descheduled), else 0 */
    unsigned dom[NUMACOLL_LEVEL_END], rpd[NUMACOLL_LEVEL_END];
} nc__tune_shape_t;

/*
 * The rules of tab matching a team of shape *sh, as sorted size ranges per
 * collective. Sizes tab does not cover take the built-in table's rules
 * (entry.builtin = 1). Returns 0, or -1 when out of memory.
 */
int nc__tune_resolve_shape(const nc__tune_table_t *tab,
                           const nc__tune_shape_t *sh, nc__tune_team_t *out);

/* The same for a team known only by p, nodes and ppn (its other levels
 * unknown: rules with level keys do not match). */
int nc__tune_resolve(const nc__tune_table_t *tab, unsigned p, unsigned nodes,
                     unsigned ppn, nc__tune_team_t *out);
void nc__tune_team_free(nc__tune_team_t *tt);

/* The entry of coll covering nbytes: binary search, O(log entries). */
const nc__tune_entry_t *nc__tune_lookup(const nc__tune_team_t *tt,
                                        nc__coll_t coll, size_t nbytes);

/* The keys each algorithm takes and the largest size it carries are in
 * the algorithm table (coll/algs.h: nc__algs[alg].keys, .max_bytes). */

#endif
