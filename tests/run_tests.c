/* One CUnit binary for every suite; an argument runs only suites whose name
 * contains it (e.g. `run_tests bcast`). Exit status is non-zero on failure. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "nct.h"

static const char *filter;

int nct_add_suite(const char *name, const nct_test_t *tests)
{
    if (filter && !strstr(name, filter))
        return 0;
    CU_pSuite s = CU_add_suite(name, NULL, NULL);
    if (!s)
        return -1;
    for (const nct_test_t *t = tests; t->name; t++)
        if (!CU_add_test(s, t->name, t->fn))
            return -1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        filter = argv[1];
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    int (*regs[])(void) = {
        nct_register_config, nct_register_tree,   nct_register_topo,
        nct_register_layout, nct_register_runner, nct_register_bcast,
        nct_register_seg,    nct_register_reduce, nct_register_bench,
        nct_register_tune,   nct_register_tune_team, nct_register_model,
        nct_register_copy,   nct_register_align, nct_register_mismatch,
        nct_register_mismatch_sweep,
        nct_register_tune_file, nct_register_topo_cache, nct_register_inline,
        nct_register_levels, nct_register_request, nct_register_tune_levels,
        nct_register_tune_tuner, nct_register_tune_decline,
        nct_register_gather, nct_register_packed, nct_register_rscan,
        nct_register_wait, nct_register_grow,
    };
    for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++)
        if (regs[i]() != 0) {
            fprintf(stderr, "run_tests: cannot register suite %zu: %s\n", i,
                    CU_get_error_msg());
            CU_cleanup_registry();
            return 2;
        }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() +
                      CU_get_number_of_tests_failed();
    unsigned run = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    if (run == 0) {
        fprintf(stderr, "run_tests: no test ran\n");
        return 1;
    }
    return failed ? 1 : 0;
}
