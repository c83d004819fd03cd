/*
 * The allreduce that one process runs for every rank of a time-sliced GPU
 * (engine/gpu_engine_direct.c, ipc/gpu_ipc_cache.h), GPU host.  Runs on
 * any layout (elsewhere the calls take the other paths and must be just
 * as right); the cases aim at what that path adds:
 *
 *   - buffers freed and allocated again, often at the same addresses, so a
 *     stale cached mapping would read the old allocation: each round
 *     allocates fresh buffers of a new size, runs and checks, frees them;
 *     more rounds than the cache has mappings (its eviction runs);
 *   - in place, out of place, several types and ops, counts 1 to 4 Mi,
 *     every fourth call nonblocking;
 *   - memory with no IPC handle (managed, cudaMallocAsync pools) on one
 *     rank only: every rank must still agree and be right (staged);
 *   - GPU memory flat over the rounds (mappings of freed buffers closed).
 *
 * Random non-zero inputs, poisoned outputs, host reference; "N passed, N
 * failed" on rank 0; SKIP without a GPU.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "gpu_test_world.h"

enum { MEM_DEVICE, MEM_MANAGED, MEM_POOL };

static void *alloc(int kind, size_t bytes)
{
    void *p = NULL;
    if (MEM_MANAGED == kind) {
        CK(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
    } else if (MEM_POOL == kind) {
        CK(cudaMallocAsync(&p, bytes, 0));
        CK(cudaStreamSynchronize(0));
    } else {
        CK(cudaMalloc(&p, bytes));
    }
    return p;
}

static void release(int kind, void *p)
{
    if (MEM_POOL == kind) {
        CK(cudaFreeAsync(p, 0));
        CK(cudaStreamSynchronize(0));
    } else {
        CK(cudaFree(p));
    }
}

/* signed inputs for max: a third negative */
static int ival(int r, size_t i, int t)
{
    return (int) val(r, i, t) * ((i + (size_t) r) % 3 == 0 ? -1 : 1);
}

/* one allreduce of n elements (float sum, int max or double sum), fresh
 * buffers of kind; 0 when right */
static int one(size_t n, int which, int in_place, int kind, int t)
{
    const MPI_Datatype dt = 0 == which ? MPI_FLOAT : 1 == which ? MPI_INT : MPI_DOUBLE;
    const MPI_Op op = 1 == which ? MPI_MAX : MPI_SUM;
    const size_t es = 2 == which ? 8 : 4, bytes = n * es;
    char *h = malloc(bytes), *ref = malloc(bytes);
    void *in = alloc(kind, bytes), *out = in_place ? in : alloc(kind, bytes);
    int bad = 0;

    for (size_t i = 0; i < n; ++i) {
        for (int r = 0; r < wsize; ++r) {
            const float v = val(r, i, t);
            if (0 == which) {
                ((float *) ref)[i] = (0 == r ? 0.0f : ((float *) ref)[i]) + v;
            } else if (1 == which) {
                const int iv = ival(r, i, t);
                ((int *) ref)[i] = 0 == r || iv > ((int *) ref)[i] ? iv : ((int *) ref)[i];
            } else {
                ((double *) ref)[i] = (0 == r ? 0.0 : ((double *) ref)[i]) + v;
            }
        }
        if (0 == which) {
            ((float *) h)[i] = val(wrank, i, t);
        } else if (1 == which) {
            ((int *) h)[i] = ival(wrank, i, t);
        } else {
            ((double *) h)[i] = val(wrank, i, t);
        }
    }
    CK(cudaMemcpy(in, h, bytes, cudaMemcpyHostToDevice));
    if (!in_place) {
        CK(cudaMemset(out, 0xff, bytes));
    }
    if (t % 4 == 3) {
        /* every fourth call nonblocking (its own steps from progress) */
        MPI_Request q;
        if (MPI_SUCCESS != MPI_Iallreduce(in_place ? MPI_IN_PLACE : in, out, (int) n, dt, op,
                                          MPI_COMM_WORLD, &q) ||
            MPI_SUCCESS != MPI_Wait(&q, MPI_STATUS_IGNORE)) {
            bad = 1;
        }
    } else if (MPI_SUCCESS != MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, (int) n, dt, op,
                                            MPI_COMM_WORLD)) {
        bad = 1;
    }
    memset(h, 0, bytes);
    CK(cudaMemcpy(h, out, bytes, cudaMemcpyDeviceToHost));
    bad |= 0 != memcmp(h, ref, bytes);
    if (!in_place) {
        release(kind, out);
    }
    release(kind, in);
    free(h);
    free(ref);
    return bad;
}

int main(int argc, char **argv)
{
    const int rounds = argc > 1 && '-' != argv[1][0] ? atoi(argv[1]) : 400;
    static const size_t counts[] = { 1, 2, 7, 64, 1000, 4096, 65536, 262144, 1 << 20, 4 << 20 };
    const int ncounts = (int) (sizeof(counts) / sizeof(counts[0]));
    int ndev = 0, bad = 0;
    size_t f0, f1;
    char what[160];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || ndev < 1) {
        if (0 == wrank) {
            printf("SKIP test_gpu_direct: no CUDA device visible\n");
        }
        MPI_Finalize();
        return 0;
    }
    CK(cudaSetDevice(wrank % ndev));
    /* setup, and the large areas where a path grows them (under MPS the
     * two-shot), before the first reading: they belong to the communicator */
    bad += one(8, 0, 0, MEM_DEVICE, 0);
    bad += one((4 << 20) + 1000, 2, 0, MEM_DEVICE, 0);
    f0 = world_free_gpu();
    for (int k = 0; k < rounds; ++k) {
        bad += one(counts[k % ncounts] + (size_t) (k / ncounts), k % 3, (k / 2) % 2, MEM_DEVICE,
                   k + 1);
    }
    snprintf(what, sizeof(what), "%d rounds of fresh buffers (float/int/double, sum/max, in "
             "place and not, 1 to 4 Mi elements, a quarter nonblocking): results right", rounds);
    record(0 == bad, what);
    f1 = world_free_gpu();
    if (0 == wrank) {
        printf("free GPU memory: %.1f MiB before the rounds, %.1f after\n", f0 / 1048576.0,
               f1 / 1048576.0);
    }
    record(f1 + ((size_t) 64 << 20) >= f0, "GPU memory flat over the rounds (within 64 MiB)");
    for (int kind = MEM_MANAGED; kind <= MEM_POOL; ++kind) {
        bad = 0;
        for (int k = 0; k < 6; ++k) {
            /* only the last rank's buffers lack an IPC handle */
            bad += one(counts[k % ncounts] * 3 + 1, k % 3, k % 2,
                       wrank == wsize - 1 ? kind : MEM_DEVICE, 5000 + k);
        }
        snprintf(what, sizeof(what), "%s buffers on the last rank only, device elsewhere: "
                 "results right", MEM_MANAGED == kind ? "managed" : "cudaMallocAsync pool");
        record(0 == bad, what);
    }
    if (0 == wrank) {
        printf("test_gpu_direct (%d ranks): %d passed, %d failed\n", wsize, npass, nfail);
    }
    MPI_Finalize();
    return nfail > 0;
}
