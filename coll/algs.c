/* The algorithm table, expanded from NC_ALG_LIST. */
#include <string.h>

#include "coll/algs.h"

const nc__alg_info_t nc__algs[NC_ALG_COUNT] = {
#define X(coll, id, name, keys, max, desc)                                      \
    {NC_COLL_##coll, NC_ALG_##coll##_##id, name, keys, max, desc},
    NC_ALG_LIST(X)
#undef X
};

const char *nc__coll_name(nc__coll_t coll)
{
    static const char *const names[NC_COLL_COUNT] = {
#define X(id, name) name,
        NC_COLL_LIST(X)
#undef X
    };
    return (unsigned)coll < NC_COLL_COUNT ? names[coll] : "?";
}

int nc__alg_find(nc__coll_t coll, const char *name)
{
    for (int i = 0; i < NC_ALG_COUNT; i++)
        if (nc__algs[i].coll == coll && strcmp(nc__algs[i].name, name) == 0)
            return i;
    return -1;
}

int nc__alg_takes(int alg, const char *key)
{
    if (alg < 0 || alg >= NC_ALG_COUNT)
        return 0;
    size_t n = strlen(key);
    for (const char *k = nc__algs[alg].keys; *k;) {
        while (*k == ' ')
            k++;
        size_t m = strcspn(k, " ");
        if (m == n && strncmp(k, key, n) == 0)
            return 1;
        k += m;
    }
    return 0;
}
