/*
 * The seed paper's performance model of the pipelined Bcast (DESIGN.md
 * section 4) as code, for the autotuner: it fits the model's constants from
 * short microbenchmarks, then uses the formulas to narrow the candidates it
 * measures. The model guides; the measurement decides.
 *
 * Notation: m message bytes, f fragment bytes, s buffers per queue, q banks,
 * b = s*f the queue, t seconds per byte copied, t_c = f*t, t_W the time a
 * notification takes to reach the deepest leaf (tree kind, radix and p),
 * t_WO the wait for a bank, t_A the atomic decrement. All times in seconds.
 */
#ifndef NUMACOLL_TUNE_MODEL_H
#define NUMACOLL_TUNE_MODEL_H

#include <stddef.h>

#include "numacoll.h"

#define NC_MODEL_MAX_RADIX 8   /* t_W is fitted for radix 2 .. this */

typedef struct nc__model {
    double t_local;   /* per byte, source buffer on the reader's node      */
    double t_cross;   /* per byte, source on another node (= t_local when
                         the machine has one node)                         */
    double t_WO;      /* bank wait when the bank is already free           */
    double t_A;       /* one atomic decrement on a shared line             */
    double t_hop;     /* one notification hop (a cache-line transfer)      */
    /* t_W[kind][radix] for the team being tuned; 0 where not fitted */
    double t_W[NUMACOLL_TREE_COUNT][NC_MODEL_MAX_RADIX + 1];
} nc__model_t;

/*
 * Predicted time of one Bcast of m bytes (the slowest leaf):
 *   s = 1:       ceil(m/f)(t_WO + t_A) + ceil(m/f) t_W + 2 m t
 *   q = 1:       ceil(m/b)(t_WO + t_c + t_A) + ceil(m/f) t_W + m t
 *   q banks:     q ceil(m/b)(t_WO + t_A) + t_c + ceil(m/f) t_W + m t
 * with b = s f and t_c = f t.
 */
double nc__model_bcast_time(double t, double t_W, double t_WO, double t_A,
                            size_t m, size_t f, unsigned s, unsigned q);

/*
 * Optimum for a queue of b bytes (the ceiling on m/f dropped):
 *   f* = sqrt((m / ceil(m/b)) * t_W / t),  s* = b / f*
 * Raw values, before any rounding. m >= 1, b >= 1, t > 0.
 */
void nc__model_opt(double t, double t_W, size_t m, size_t b, double *f_star,
                   double *s_star);

/*
 * The same, as values the table can hold: f rounded to a multiple of 64
 * (a cache line) within [64, fmax], s = ceil(b / f) clamped to [1, smax]
 * and rounded up to a multiple of q.
 */
void nc__model_opt_rounded(double t, double t_W, size_t m, size_t b,
                           unsigned q, size_t fmax, unsigned smax,
                           size_t *f, unsigned *s);

/* Least squares y = a + b x over n points (n >= 2); 0, or -1 when x is
 * constant. */
int nc__model_fit_line(const double *x, const double *y, int n, double *a,
                       double *b);

/*
 * Fit the constants on this machine for a team of b->size ranks: collective
 * over the bootstrap (every rank calls it; every rank gets the same *out).
 * base gives topology, pu and verbose (its tuning fields are ignored).
 * quick = 1 keeps it to about a second. Returns NUMACOLL_OK or an error
 * status.
 */
int nc__model_fit(const numacoll_bootstrap_t *b, const numacoll_config_t *base,
                  int quick, nc__model_t *out);

/* Depth (notification hops from root to the deepest leaf) of a tree of
 * this kind and radix over p ranks rooted at 0, from the tree code. */
int nc__model_tree_depth(int kind, unsigned radix, int p,
                         const numacoll_locality_t *loc);

#endif
