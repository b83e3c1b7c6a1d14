#include <stdlib.h>

#include "nct.h"

const char *nct_topo_dir(void)
{
    const char *d = getenv("NCT_TOPO_DIR");
    return d ? d : "tests/topo";
}
