/*
 * Shared helpers of the CUnit suites. Each tests/test_<module>.c defines
 * one suite and registers it from nct_register_<module>(), listed in
 * run_tests.c.
 */
#ifndef NCT_H
#define NCT_H

#include <CUnit/CUnit.h>
#include <stddef.h>
#include <stdint.h>

/* Add a suite with the given tests; tests ends with {NULL, NULL}. */
typedef struct { const char *name; void (*fn)(void); } nct_test_t;
int nct_add_suite(const char *name, const nct_test_t *tests);

/* Folder of the topology fixtures: $NCT_TOPO_DIR, default "tests/topo"
 * (the suites run from the repository root). */
const char *nct_topo_dir(void);

/* Fork p ranks of fn with a 60 s watchdog (support/runner.h); 0 when every
 * rank exited 0. */
typedef struct numacoll_bootstrap numacoll_bootstrap_t;
int nct_run(int p, int (*fn)(const numacoll_bootstrap_t *, void *), void *arg);

/* nct_run for p = p0..p1 and each kind k < nkinds (fn's arg: &k), each
 * asserted to pass; a failure names what, p and k. */
void nct_run_kinds(int p0, int p1, int nkinds,
                   int (*fn)(const numacoll_bootstrap_t *, void *),
                   const char *what);

/* Helpers of the collective suites (gather, rscan). */
typedef struct numacoll_team numacoll_team_t;
/* A team of the default config but verbose 0, timeout_ms, and the
 * reduce_frag_size / reduce_depth overrides (0: the table's); NULL on
 * failure. */
numacoll_team_t *nct_team(const numacoll_bootstrap_t *b, size_t rf,
                          unsigned rs, int timeout_ms);
/* tuning_text of nct_team's teams (NULL, the default: the built-in table) */
extern const char *nct_team_rules;
/* A team of the default config but verbose 0, a 20 s timeout and the
 * given tuning table (tuning_text, tuning_file; NULL: none); the status. */
int nct_team_tuned(const numacoll_bootstrap_t *b, const char *text,
                   const char *file, numacoll_team_t **out);
/* build/numacoll-tune ARGS under a 120 s timeout, stdout and stderr into
 * out (NUL-terminated); its exit status, or -1. */
int nct_tuner(const char *args, char *out, size_t len);
/* A table as nc__tune_write writes it (header "test"), malloc'd and
 * NUL-terminated, its length in *len; NULL on failure. */
struct nc__tune_table;
char *nct_tune_text(const struct nc__tune_table *t, size_t *len);
/* single_copy of nct_team's teams: 2 (the default: wherever permitted,
 * untimed, so the cma tests run single copy on every machine that permits
 * it, fast or not), 1 (where permitted and timed fast) or 0 (off) */
extern int nct_team_single_copy;
/* Print rank, what, rc's name and the team's last error; returns 2. */
int nct_say(numacoll_team_t *t, int rank, const char *what, int rc);
/* A buffer of n bytes between NCT_GUARD guard bytes of NCT_GBYTE on each
 * side (base + NCT_GUARD is the user's), and whether they are intact. */
#define NCT_GUARD 64
#define NCT_GBYTE 0xA5
unsigned char *nct_gbuf(size_t n);
int nct_guards_ok(const unsigned char *b, size_t n);
/* Out of band: every rank's int (the bootstrap's allgather); 1 on
 * success. */
int nct_oob_all(const numacoll_bootstrap_t *b, int mine, int *all);

/* An Allreduce of int64 sums on t (on the slots the collective under test
 * uses too), checked: 0, or nct_say's 2, or 6 for a wrong sum. */
int nct_allreduce_probe(numacoll_team_t *t, int me, int p);

/* 2x2 matrices mod 2^32, [[a b] [c d]]: an associative, non-commutative
 * op for the user-op tests. */
typedef struct nct_mat { uint32_t a, b, c, d; } nct_mat_t;

static inline nct_mat_t nct_mat_mul(nct_mat_t x, nct_mat_t y)
{
    return (nct_mat_t){x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d,
                       x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
}

int nct_register_config(void);
int nct_register_tree(void);
int nct_register_topo(void);
int nct_register_layout(void);
int nct_register_runner(void);
int nct_register_bcast(void);
int nct_register_seg(void);
int nct_register_reduce(void);
int nct_register_bench(void);
int nct_register_mismatch_sweep(void);
int nct_register_tune(void);
int nct_register_tune_team(void);
int nct_register_model(void);
int nct_register_copy(void);
int nct_register_align(void);
int nct_register_mismatch(void);
int nct_register_tune_file(void);
int nct_register_tune_levels(void);
int nct_register_tune_tuner(void);
int nct_register_tune_decline(void);
int nct_register_topo_cache(void);
int nct_register_inline(void);
int nct_register_levels(void);
int nct_register_request(void);
int nct_register_wait(void);
int nct_register_gather(void);
int nct_register_packed(void);
int nct_register_rscan(void);
int nct_register_grow(void);

#endif
