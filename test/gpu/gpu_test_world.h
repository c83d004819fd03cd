/*
 * What the scenario tests (test_gpu_reliability, test_gpu_mixed) share:
 * the world rank and size, the pass/fail counts, a CUDA check that aborts
 * the job, a verdict agreed by every rank, and the input generator.
 */
#ifndef GPUCOLL_GPU_TEST_WORLD_H
#define GPUCOLL_GPU_TEST_WORLD_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

static int wrank, wsize, npass, nfail;

#define CK(call) do { cudaError_t e_ = (call); if (cudaSuccess != e_) { \
    fprintf(stderr, "rank %d: %s:%d %s: %s\n", wrank, __FILE__, __LINE__, #call, \
            cudaGetErrorString(e_)); MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

/* every rank's verdict, agreed over the host world communicator */
static inline void record(int ok, const char *what)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (all) {
        ++npass;
    } else {
        ++nfail;
    }
    if (0 == wrank) {
        printf("%s %s\n", all ? "PASS" : "FAIL", what);
        fflush(stdout);
    }
}

/* element i of rank r's input for tag t: integers 1..97 as floats (sums
 * of a few stay exact) */
static inline float val(int r, size_t i, int t)
{
    return (float) ((((uint64_t) r + 1) * 2654435761u + i * 40503u + (uint64_t) t * 977u) % 97 + 1);
}

/* free GPU memory once every rank's work is done (the smallest over the
 * ranks: those on one GPU share what cudaMemGetInfo sees) */
static inline size_t world_free_gpu(void)
{
    size_t f = 0, t = 0;
    unsigned long long mine, least = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    CK(cudaDeviceSynchronize());
    MPI_Barrier(MPI_COMM_WORLD);
    CK(cudaMemGetInfo(&f, &t));
    mine = (unsigned long long) f;
    MPI_Allreduce(&mine, &least, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    return (size_t) least;
}

#endif /* GPUCOLL_GPU_TEST_WORLD_H */
