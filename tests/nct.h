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

int nct_register_config(void);
int nct_register_tree(void);
int nct_register_topo(void);
int nct_register_layout(void);
int nct_register_runner(void);
int nct_register_bcast(void);
int nct_register_seg(void);
int nct_register_reduce(void);
int nct_register_bench(void);
int nct_register_tune(void);
int nct_register_tune_team(void);
int nct_register_model(void);
int nct_register_copy(void);
int nct_register_align(void);
int nct_register_mismatch(void);
int nct_register_tune_file(void);
int nct_register_tune_levels(void);
int nct_register_topo_cache(void);
int nct_register_inline(void);
int nct_register_levels(void);
int nct_register_request(void);
int nct_register_gather(void);

#endif
