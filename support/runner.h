/*
 * The standalone runner: forks p ranks of one function on this machine and
 * gives them a bootstrap (allgather through a shared mapping created before
 * the fork), so the tests and numacoll-bench need no MPI. The parent is the
 * watchdog: it reaps children as they exit, and once one fails (signal or
 * non-zero exit) it tells the others through the mapping and kills whoever is
 * left after a grace period; past the overall timeout it kills everyone.
 */
#ifndef NUMACOLL_RUNNER_H
#define NUMACOLL_RUNNER_H

#include "numacoll.h"

typedef struct nc__run_opts {
    int p;                 /* ranks to fork                                  */
    int bind;              /* 1: bind rank r to the r-th allowed CPU (mod)   */
    unsigned timeout_ms;   /* kill every child after this; 0 = 60 s           */
    unsigned grace_ms;     /* after a child failed; 0 = 2 s                   */
    int quiet;             /* 1: do not print why children failed            */
} nc__run_opts_t;

/* The child's body; its return value (0..255) becomes its exit status. */
typedef int (*nc__rank_fn)(const numacoll_bootstrap_t *boot, void *arg);

/*
 * Run fn in p forked ranks. wstatus (may be NULL) receives each child's raw
 * waitpid status. Returns 0 if every child exited with status 0, 1 if any
 * failed, -1 if the runner itself could not start; *timed_out (may be NULL)
 * is set when the watchdog had to kill.
 */
int nc__run(const nc__run_opts_t *opts, nc__rank_fn fn, void *arg,
            int *wstatus, int *timed_out);

/* "exit 0", "exit 3", "killed by signal 9 (Killed)" for a raw status. */
const char *nc__run_describe(int wstatus, char *buf, size_t len);

/* Shared scratch memory the caller can read after nc__run (MAP_SHARED,
 * created before the fork). Freed with nc__run_shared_free. */
void *nc__run_shared_alloc(size_t len);
void nc__run_shared_free(void *p, size_t len);

#endif
