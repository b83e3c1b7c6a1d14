/*
 * .ci/deb-test.d/libtest.c -- built inside the chroot with
 *   cc libtest.c $(pkg-config --cflags --libs numacoll)
 * against the installed libnumacoll-dev, and run there: two processes
 * (fork) form a team whose bootstrap allgather goes through two pipes, then
 * Bcast 1 MiB, Allreduce 1000 doubles and Barrier, checking the results.
 * Prints "libtest: PASS" and exits 0 when every check holds.
 */
#include <numacoll.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct { int rank, wr, rd; } pipes_t;

static int full_io(int fd, void *buf, size_t n, int writing)
{
    char *p = buf;
    while (n > 0) {
        ssize_t k = writing ? write(fd, p, n) : read(fd, p, n);
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Two ranks: send mine to the peer, read the peer's. */
static int allgather(const void *send, void *recv, size_t nbytes, void *ctx)
{
    pipes_t *pp = ctx;
    char *r = recv;
    memcpy(r + (size_t)pp->rank * nbytes, send, nbytes);
    if (full_io(pp->wr, (void *)send, nbytes, 1)) return -1;
    return full_io(pp->rd, r + (size_t)(1 - pp->rank) * nbytes, nbytes, 0);
}

static int run(int rank, pipes_t *pp)
{
    numacoll_bootstrap_t boot = {rank, 2, allgather, pp};
    numacoll_config_t cfg;
    numacoll_team_t *team;
    int bad = 0;

    numacoll_config_init(&cfg);
    int rc = numacoll_team_create(&boot, &cfg, &team);
    if (rc != NUMACOLL_OK) {
        fprintf(stderr, "rank %d: team_create: %s (%s)\n", rank,
                numacoll_strerror(rc), numacoll_team_create_error());
        return 1;
    }
    size_t n = 1 << 20;
    unsigned char *buf = malloc(n);
    for (size_t i = 0; i < n; i++) buf[i] = rank == 0 ? (unsigned char)(i * 7 + 3) : 0;
    rc = numacoll_bcast(team, buf, n, 0);
    if (rc != NUMACOLL_OK) { fprintf(stderr, "rank %d: bcast: %s\n", rank, numacoll_strerror(rc)); bad++; }
    for (size_t i = 0; i < n && !bad; i++)
        if (buf[i] != (unsigned char)(i * 7 + 3)) { fprintf(stderr, "rank %d: bcast byte %zu wrong\n", rank, i); bad++; }

    double s[1000], r[1000];
    for (int i = 0; i < 1000; i++) s[i] = i + rank * 0.5;
    rc = numacoll_allreduce(team, s, r, 1000, NUMACOLL_DTYPE_DOUBLE, NUMACOLL_OP_SUM);
    if (rc != NUMACOLL_OK) { fprintf(stderr, "rank %d: allreduce: %s\n", rank, numacoll_strerror(rc)); bad++; }
    for (int i = 0; i < 1000 && !bad; i++)
        if (r[i] != 2.0 * i + 0.5) { fprintf(stderr, "rank %d: allreduce[%d] = %g\n", rank, i, r[i]); bad++; }

    rc = numacoll_barrier(team);
    if (rc != NUMACOLL_OK) { fprintf(stderr, "rank %d: barrier: %s\n", rank, numacoll_strerror(rc)); bad++; }
    numacoll_team_destroy(team);
    free(buf);
    return bad != 0;
}

int main(void)
{
    int a[2], b[2];   /* a: 0 -> 1, b: 1 -> 0 */
    if (pipe(a) || pipe(b)) { perror("pipe"); return 1; }
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 1; }
    if (pid == 0) {
        pipes_t p1 = {1, b[1], a[0]};
        _exit(run(1, &p1));
    }
    pipes_t p0 = {0, a[1], b[0]};
    int bad = run(0, &p0);
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) bad = 1;
    printf("libtest: %s (2 processes: bcast 1 MiB, allreduce 1000 doubles, barrier)\n",
           bad ? "FAIL" : "PASS");
    return bad;
}
