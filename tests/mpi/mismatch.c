/*
 * Erroneous programs get errors, never wrong data or a hang: ranks whose
 * calls differ on one communicator (MPI_ERRORS_RETURN), with numacoll
 * selected and coll_numacoll_timeout_ms left at 0.
 *  1. MPI_Bcast where the root sends 2000 bytes and the others expect
 *     1000: every reader gets MPI_ERR_TRUNCATE (the root has finished its
 *     part and succeeds, as after an eager send, and hears of it at its
 *     next call on the communicator, which fails on every rank);
 *  2. MPI_Allreduce of 2000 doubles on rank 0 and 1000 elsewhere: every
 *     rank gets MPI_ERR_ARG, nothing past any buffer is written;
 *  3. MPI_Bcast on rank 0 against MPI_Barrier on the others: the others
 *     get MPI_ERR_ARG instead of waiting forever, rank 0 at its next call,
 *     as in 1;
 *  4. MPI_Allgather whose send block (16 bytes) differs from its receive
 *     blocks (8) on every rank: each gets MPI_ERR_ARG at once, and its
 *     receive buffer is untouched;
 *  5. MPI_Bcast whose ranks name different roots (rank 0 root 0 and the
 *     others root 1; the last rank its own root; every rank its own), 16
 *     bytes to 4 MiB: every rank gets an error from the Bcast or from the
 *     MPI_Barrier after it (all of them from the Barrier unless all
 *     failed the Bcast), a reader that succeeded holds its named root's
 *     data, nobody hangs.
 * After each, the ranks meet on MPI_COMM_WORLD (as an application's own
 * synchronisation would), then correct Bcasts from every root and an
 * Allreduce on the same communicator must give the right results.
 *
 * Only meaningful with numacoll (NUMACOLL_EXPECT=core): other components
 * may hang or corrupt memory on such programs, so run.sh runs it with
 * numacoll only.
 */
#include <stdlib.h>
#include <string.h>

#include "mpit.h"

#define GUARD 64

static int error_class(int rc)
{
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    return cls;
}

/* Correct calls after a mismatch: a Bcast of 1000 and of 100000 bytes
 * from every root, an Allreduce of 300 doubles. */
/* The call after a mismatch that rank 0 finished without an error: it
 * fails on every rank (MPI_ERR_ARG), so rank 0 gets one too. */
static void told(MPI_Comm c, const char *after)
{
    int cls = error_class(MPI_Barrier(c));
    MPIT_CHECK(cls == MPI_ERR_ARG, "after %s: the next call gives rank %d "
               "class %d, want MPI_ERR_ARG", after, mpit_rank, cls);
}

static void correct_calls(MPI_Comm c, const char *after)
{
    static unsigned char buf[100000], want[100000];
    size_t sizes[] = {1000, 100000};
    for (int k = 0; k < 2; k++)
        for (int root = 0; root < mpit_size; root++) {
            int n = (int)sizes[k];
            mpit_fill(want, (size_t)n, (unsigned)(root * 7 + k));
            if (mpit_rank == root)
                memcpy(buf, want, (size_t)n);
            else
                memset(buf, 0, (size_t)n);
            int rc = MPI_Bcast(buf, n, MPI_BYTE, root, c);
            MPIT_CHECK(rc == MPI_SUCCESS && memcmp(buf, want, (size_t)n) == 0,
                       "after %s: Bcast of %d bytes from %d: rc %d, data %s",
                       after, n, root, rc,
                       memcmp(buf, want, (size_t)n) ? "wrong" : "right");
        }
    double in[300], out[300];
    for (int i = 0; i < 300; i++)
        in[i] = mpit_rank + i;
    int rc = MPI_Allreduce(in, out, 300, MPI_DOUBLE, MPI_SUM, c);
    int right = rc == MPI_SUCCESS;
    for (int i = 0; i < 300 && right; i++)
        right = out[i] == (double)mpit_size * (mpit_size - 1) / 2 +
                              (double)mpit_size * i;
    MPIT_CHECK(right, "after %s: Allreduce rc %d, %s", after, rc,
               right ? "right" : "wrong data");
}

int main(int argc, char **argv)
{
    mpit_init(&argc, &argv, "mismatch");
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    correct_calls(c, "nothing");

    /* 1. the root sends more than the readers expect */
    unsigned char *b = malloc(2000 + GUARD);
    memset(b, 0x5a, 2000 + GUARD);
    int n = mpit_rank == 0 ? 2000 : 1000;
    int cls = error_class(MPI_Bcast(b, n, MPI_BYTE, 0, c));
    MPIT_CHECK(mpit_rank == 0 ? cls == MPI_SUCCESS : cls == MPI_ERR_TRUNCATE,
               "Bcast of 2000 bytes into 1000: rank %d got class %d",
               mpit_rank, cls);
    int intact = 1;
    for (int i = n; i < 2000 + GUARD; i++)
        intact &= b[i] == 0x5a;
    MPIT_CHECK(intact || mpit_rank == 0, "Bcast wrote past %d bytes", n);
    free(b);
    MPI_Barrier(MPI_COMM_WORLD);
    told(c, "a truncated Bcast");
    correct_calls(c, "a truncated Bcast");

    /* 2. Allreduce counts differ */
    size_t cnt = mpit_rank == 0 ? 2000 : 1000;
    double *in = malloc((cnt + GUARD) * sizeof *in),
           *out = malloc((cnt + GUARD) * sizeof *out);
    for (size_t i = 0; i < cnt + GUARD; i++)
        in[i] = out[i] = -3.0;
    cls = error_class(MPI_Allreduce(in, out, (int)cnt, MPI_DOUBLE, MPI_SUM,
                                    c));
    MPIT_CHECK(cls == MPI_ERR_ARG, "Allreduce of %zu against 1000/2000: "
               "class %d", cnt, cls);
    intact = 1;
    for (size_t i = cnt; i < cnt + GUARD; i++)
        intact &= in[i] == -3.0 && out[i] == -3.0;
    MPIT_CHECK(intact, "Allreduce wrote past %zu elements", cnt);
    free(in);
    free(out);
    MPI_Barrier(MPI_COMM_WORLD);
    correct_calls(c, "an Allreduce with different counts");

    /* 3. Bcast against Barrier */
    double v = 1.0;
    cls = error_class(mpit_rank == 0 ? MPI_Bcast(&v, 1, MPI_DOUBLE, 0, c)
                                     : MPI_Barrier(c));
    MPIT_CHECK(mpit_rank == 0 ? cls == MPI_SUCCESS : cls == MPI_ERR_ARG,
               "Bcast against Barrier: rank %d got class %d", mpit_rank, cls);
    MPI_Barrier(MPI_COMM_WORLD);
    told(c, "a Bcast against a Barrier");
    correct_calls(c, "a Bcast against a Barrier");

    /* 4. send and receive blocks of different sizes on every rank */
    unsigned char snd[16] = {0}, rcv[8 * 64 + GUARD];
    memset(rcv, 0x5a, sizeof rcv);
    cls = mpit_size <= 64 ? error_class(MPI_Allgather(snd, 16, MPI_BYTE, rcv,
                                                      8, MPI_BYTE, c))
                          : MPI_ERR_ARG;
    MPIT_CHECK(cls == MPI_ERR_ARG, "Allgather of 16 bytes into blocks of 8: "
               "class %d", cls);
    intact = 1;
    for (size_t i = 0; i < sizeof rcv; i++)
        intact &= rcv[i] == 0x5a;
    MPIT_CHECK(intact, "Allgather with a size mismatch wrote to rbuf");
    MPI_Barrier(MPI_COMM_WORLD);
    correct_calls(c, "an Allgather whose send and receive blocks differ");

    /* 5. roots that differ, every path */
    static const int sizes[] = {16, 1000, 65536, 262144, 300000, 409600,
                                1 << 20, 4 << 20};
    unsigned char *rb = malloc(4 << 20), *wb = malloc(4 << 20);
    for (int kind = 0; kind < 3 && rb && wb; kind++)
        for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            const int last = mpit_rank == mpit_size - 1;
            int root = kind == 0 ? (mpit_rank == 0 ? 0 : 1)
                       : kind == 1 ? (last ? mpit_rank : 0)
                                   : mpit_rank;
            n = sizes[k];
            mpit_fill(wb, (size_t)n, (unsigned)(root * 5 + k));
            if (mpit_rank == root)
                memcpy(rb, wb, (size_t)n);
            else
                memset(rb, 0, (size_t)n);
            int st[3];
            st[0] = error_class(MPI_Bcast(rb, n, MPI_BYTE, root, c));
            st[2] = st[0] != MPI_SUCCESS || !memcmp(rb, wb, (size_t)n);
            st[1] = error_class(MPI_Barrier(c));
            int *all = malloc(3 * sizeof(int) * (size_t)mpit_size);
            MPI_Allgather(st, 3, MPI_INT, all, 3, MPI_INT, MPI_COMM_WORLD);
            int allfail = 1;
            for (int r = 0; r < mpit_size; r++)
                allfail &= all[3 * r] != MPI_SUCCESS;
            for (int r = 0; r < mpit_size; r++)
                MPIT_CHECK(all[3 * r + 2] &&
                               (allfail ? all[3 * r + 1] == MPI_SUCCESS
                                        : all[3 * r + 1] == MPI_ERR_ARG),
                           "roots kind %d, %d bytes: rank %d got Bcast "
                           "class %d, Barrier class %d, data %s", kind, n,
                           r, all[3 * r], all[3 * r + 1],
                           all[3 * r + 2] ? "its root's" : "wrong");
            free(all);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    free(rb);
    free(wb);
    correct_calls(c, "Bcasts whose ranks named different roots");

    MPI_Comm_free(&c);
    return mpit_finish();
}
