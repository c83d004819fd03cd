/*
 * What the MPI test programs share: an assertion that holds only when it
 * holds on every rank of MPI_COMM_WORLD (failures printed once, by rank 0,
 * which also prints the "N passed, N failed" line from npass and nfail),
 * and the random-looking non-zero inputs the host references recompute.
 * The including file defines rank before use (MPI_Comm_rank on the world).
 */
#ifndef GPUCOLL_TEST_WORLD_CHECK_H
#define GPUCOLL_TEST_WORLD_CHECK_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

static int npass, nfail, rank, size;

static void check(int ok, const char *what)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (all) {
        npass++;
    } else {
        nfail++;
        if (0 == rank) {
            printf("FAIL: %s\n", what);
        }
    }
}

/* value of rank r at index i, 1..1000; salt tells the programs' inputs apart */
static inline int world_val(int r, int i, uint32_t salt)
{
    uint32_t x = (uint32_t) r * 7919u + (uint32_t) i * 104729u + salt;   /* wraps, never overflows */
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return (int) (x % 1000) + 1;
}

#endif /* GPUCOLL_TEST_WORLD_CHECK_H */
