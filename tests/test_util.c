#include <stdlib.h>

#include "support/runner.h"
#include "nct.h"

const char *nct_topo_dir(void)
{
    const char *d = getenv("NCT_TOPO_DIR");
    return d ? d : "tests/topo";
}

int nct_run(int p, int (*fn)(const numacoll_bootstrap_t *, void *), void *arg)
{
    nc__run_opts_t o = {.p = p, .timeout_ms = 60000};
    return nc__run(&o, fn, arg, NULL, NULL);
}
