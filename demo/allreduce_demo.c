/*
 * The main job: every rank fills a device buffer with (rank + 1) and the
 * allreduce must give n (n + 1) / 2 everywhere.  Says clearly when no GPU
 * is present (the component then stays out of the way).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

int main(int argc, char **argv)
{
    const int count = 1 << 20;
    int rank, size, ndev = 0, lrank, i, bad = 0, allbad = 0;
    float *d, *h;
    MPI_Comm local;
    double t0, t1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || 0 == ndev) {
        if (0 == rank) {
            printf("allreduce_demo: no GPU present (%s); nothing to run on device buffers.\n",
                   cudaGetErrorString(cudaGetDeviceCount(&ndev)));
        }
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    cudaSetDevice(lrank % ndev);
    h = malloc(sizeof(float) * count);
    for (i = 0; i < count; ++i) h[i] = (float) (rank + 1);
    cudaMalloc((void **) &d, sizeof(float) * count);
    cudaMemcpy(d, h, sizeof(float) * count, cudaMemcpyHostToDevice);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, d, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    t1 = MPI_Wtime();
    cudaMemcpy(h, d, sizeof(float) * count, cudaMemcpyDeviceToHost);
    for (i = 0; i < count; ++i) bad += h[i] != (float) (size * (size + 1) / 2);
    MPI_Reduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("allreduce_demo: %d ranks on %d GPU(s), %d floats on device, first call %.1f us: %s\n",
               size, ndev, count, (t1 - t0) * 1e6, allbad ? "WRONG" : "correct");
    }
    cudaFree(d);
    free(h);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return allbad ? 1 : 0;
}
