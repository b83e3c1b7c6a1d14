/*
 * A program as a user of the installed library writes it: <numacoll.h>
 * and `pkg-config --cflags --libs numacoll`, nothing of the source tree.
 * `make check-install` builds it against an install and runs it; it fails
 * if the header, the pkg-config file, the soname or the exported symbols
 * are wrong. One rank, so no runner: the bootstrap gathers from itself.
 */
#include <numacoll.h>
#include <stdio.h>
#include <string.h>

static int self_gather(const void *send, void *recv, size_t n, void *ctx)
{
    (void)ctx;
    memcpy(recv, send, n);
    return 0;
}

#define CHECK(call)                                                          \
    do {                                                                     \
        int rc_ = (call);                                                    \
        if (rc_ != NUMACOLL_OK) {                                            \
            fprintf(stderr, "use_installed: %s: %s\n", #call,                \
                    numacoll_strerror(rc_));                                 \
            return 1;                                                        \
        }                                                                    \
    } while (0)

int main(void)
{
    numacoll_bootstrap_t boot = {0, 1, self_gather, NULL};
    numacoll_config_t cfg;
    numacoll_config_init(&cfg);
    char msg[256];
    CHECK(numacoll_config_check(&cfg, msg, sizeof msg));
    numacoll_team_t *team = NULL;
    int rc = numacoll_team_create(&boot, &cfg, &team);
    if (rc != NUMACOLL_OK) {
        fprintf(stderr, "use_installed: team: %s: %s\n", numacoll_strerror(rc),
                numacoll_team_create_error());
        return 1;
    }
    char buf[64] = "installed";
    CHECK(numacoll_bcast(team, buf, sizeof buf, 0));
    double in = 2.5, out = 0;
    CHECK(numacoll_allreduce(team, &in, &out, 1, NUMACOLL_DTYPE_DOUBLE,
                             NUMACOLL_OP_SUM));
    CHECK(numacoll_barrier(team));
    CHECK(numacoll_team_destroy(team));
    if (out != 2.5 || strcmp(buf, "installed") != 0) {
        fprintf(stderr, "use_installed: wrong results\n");
        return 1;
    }
    printf("use_installed: numacoll %d.%d works from its install\n",
           NUMACOLL_VERSION_MAJOR, NUMACOLL_VERSION_MINOR);
    return 0;
}
