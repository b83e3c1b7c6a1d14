/*
 * Shared helpers of the MPI tests in tests/mpi/. The tests are plain MPI
 * programs: they check MPI semantics and pass with or without numacoll.
 * What they expect from numacoll comes from the environment, which
 * tests/mpi/run.sh sets with mpirun -x:
 *
 *   NUMACOLL_EXPECT=core      the component is loaded and its MPI_T counters
 *                             must show that it ran the calls itself
 *   NUMACOLL_EXPECT=fallback  loaded, but every call must have gone to the
 *                             previous component (e.g. a tiny node budget)
 *   NUMACOLL_EXPECT=mixed     loaded; each call either ran in the core or
 *                             fell back (a budget that fits only some teams)
 *   NUMACOLL_EXPECT=absent    on the component path but refused to open (a
 *                             rejected parameter): its MPI_T variables must
 *                             not exist, so it ran nothing
 *   unset or "none"           no expectation (component absent or disabled)
 *
 * Every test ends with mpit_finish(), which prints one line on rank 0:
 * "<test> np=<p>: PASS (<n> checks)" or "... FAIL (<k> of <n> checks failed)".
 */
#ifndef MPIT_H
#define MPIT_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    MPIT_EXPECT_NONE,
    MPIT_EXPECT_CORE,
    MPIT_EXPECT_FALLBACK,
    MPIT_EXPECT_MIXED,
    MPIT_EXPECT_ABSENT
} mpit_expect_t;

extern int mpit_rank, mpit_size;
extern mpit_expect_t mpit_expect;

/* MPI_Init, MPI_T and the counters; name is printed in the result line. */
void mpit_init(int *argc, char ***argv, const char *name);
/* The same with MPI_Init_thread (MPI_THREAD_SINGLE: MPI_Init). */
void mpit_init_thread(int *argc, char ***argv, const char *name,
                      int required, int *provided);

/* Reduce the failures over MPI_COMM_WORLD, print the result line, finalize.
 * Returns the process exit status (0 when every rank passed). */
int mpit_finish(void);

/* Record one check; on failure print where and why, prefixed by the rank. */
int mpit_check(int ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define MPIT_CHECK(cond, ...) mpit_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

/* numacoll's MPI_T performance variables, process-wide. present is 0 when
 * the component is not loaded (its variables do not exist). */
typedef struct mpit_counters {
    int present;
    unsigned long long bcast, barrier, bcast_fallback, barrier_fallback;
    unsigned teams;
} mpit_counters_t;

void mpit_counters(mpit_counters_t *c);

/*
 * Check what numacoll did between two readings, given how many Bcast and
 * Barrier calls this rank made in between on communicators of two or more
 * processes (those numacoll accepts). With NUMACOLL_EXPECT=core they must
 * all have run in the core, with =fallback all in the previous component,
 * with =mixed each in one of the two; with =absent the counters must not
 * exist.
 */
void mpit_check_ran(const mpit_counters_t *before, const mpit_counters_t *after,
                    unsigned long long bcasts, unsigned long long barriers,
                    const char *what);

/* Any of numacoll's MPI_T counters, by name, in a session of their own
 * (MPI_T may be initialised more than once). present is 0 when a name is
 * missing (component not loaded); reads then give 0. */
#define MPIT_NAMED_MAX 16
typedef struct mpit_named {
    int present, t_ok, n;
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle[MPIT_NAMED_MAX];
} mpit_named_t;

void mpit_named_open(mpit_named_t *s, const char *const *names, int n);
void mpit_named_read(mpit_named_t *s, unsigned long long *v);
void mpit_named_close(mpit_named_t *s);

/* Fill n bytes with a pattern that depends on seed and on the position
 * (8 bytes of a splitmix64 stream at a time): two different seeds, or a
 * shifted copy, never compare equal by accident. */
void mpit_fill(void *buf, size_t n, unsigned seed);
/* splitmix64's finaliser: a well-mixed 64-bit value of z (the values of
 * the reduction tests, by rank, call and position). */
uint64_t mpit_mix(uint64_t z);

/* Communicators every Bcast test runs on: the world, a dup, two halves
 * (split by rank < p/2) and the world in reversed rank order. */
#define MPIT_NCOMMS 4
extern const char *const mpit_comm_names[MPIT_NCOMMS];
void mpit_make_comms(MPI_Comm comms[MPIT_NCOMMS]);
void mpit_free_comms(MPI_Comm comms[MPIT_NCOMMS]);

#endif
