/*
 * A program written for MPICH's stream extension, unchanged: it includes
 * only <mpi.h> and the CUDA runtime, as an MPICH user writes it.  Built
 * against Open MPI with coll/gpu through pkg-config, whose flags include
 * mpix_gpu.h and link libgpucoll:
 *
 *   mpicc mpix_enqueue_demo.c $(pkg-config --cflags --libs gpucoll) -lcudart -o demo
 *   mpirun -np 2 ./demo
 *
 * It enqueues an allreduce on a CUDA stream between a copy in and a copy
 * out, then captures an allreduce into a CUDA graph and replays it 1000
 * times with no MPI call in between, checking every result.  It launches
 * no kernel of its own, so make check runs it on the CUDA stand-ins.
 */
#include <mpi.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1024
#define REPLAYS 1000

int main(int argc, char **argv)
{
    int rank, size, ndev = 0, errs = 0, all_errs = 0;
    cudaStream_t stream;
    MPI_Info info;
    MPIX_Stream mpi_stream;
    MPI_Comm stream_comm;
    float *d_in, *d_out, *h, *results;
    cudaGraph_t graph;
    cudaGraphExec_t exec;

    MPI_Init(&argc, &argv);   /* any thread level: MPICH's programs ask for none */
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || 0 == ndev) {
        if (0 == rank) {
            printf("no GPU present: the MPIX stream demo needs a CUDA device per rank\n");
        }
        MPI_Finalize();
        return 0;
    }
    cudaSetDevice(rank % ndev);
    cudaStreamCreate(&stream);

    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cudaStream_t");
    MPIX_Info_set_hex(info, "value", &stream, sizeof(stream));
    MPIX_Stream_create(info, &mpi_stream);
    MPI_Info_free(&info);
    MPIX_Stream_comm_create(MPI_COMM_WORLD, mpi_stream, &stream_comm);

    cudaMalloc((void **) &d_in, N * sizeof(float));
    cudaMalloc((void **) &d_out, N * sizeof(float));
    cudaMallocHost((void **) &h, N * sizeof(float));
    cudaMallocHost((void **) &results, REPLAYS * sizeof(float));

    /* eager: copy in, allreduce, copy out, all in the stream's order */
    for (int i = 0; i < N; ++i) {
        h[i] = (float) (rank + i);
    }
    cudaMemcpyAsync(d_in, h, N * sizeof(float), cudaMemcpyHostToDevice, stream);
    MPIX_Allreduce_enqueue(d_in, d_out, N, MPI_FLOAT, MPI_SUM, stream_comm);
    cudaMemcpyAsync(h, d_out, N * sizeof(float), cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    for (int i = 0; i < N; ++i) {
        errs += h[i] != (float) (size * i + size * (size - 1) / 2);
    }

    /* captured: the graph holds the allreduce; each replay gets a new input */
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
    MPIX_Allreduce_enqueue(d_in, d_out, 1, MPI_FLOAT, MPI_SUM, stream_comm);
    cudaStreamEndCapture(stream, &graph);
    cudaGraphInstantiate(&exec, graph, 0);
    for (int k = 0; k < REPLAYS; ++k) {
        h[k % N] = (float) (k + rank);
        cudaMemcpyAsync(d_in, &h[k % N], sizeof(float), cudaMemcpyHostToDevice, stream);
        cudaGraphLaunch(exec, stream);
        cudaMemcpyAsync(&results[k], d_out, sizeof(float), cudaMemcpyDeviceToHost, stream);
        if (k % N == N - 1) {
            cudaStreamSynchronize(stream);   /* h's slots are reused */
        }
    }
    cudaStreamSynchronize(stream);
    for (int k = 0; k < REPLAYS; ++k) {
        errs += results[k] != (float) (size * k + size * (size - 1) / 2);
    }
    MPI_Allreduce(&errs, &all_errs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("MPIX stream demo, %d ranks: eager allreduce of %d floats and %d graph replays: %s "
               "(%d wrong values)\n", size, N, REPLAYS, all_errs ? "FAILED" : "correct", all_errs);
    }

    /* time per step: an 8-byte allreduce captured once, replayed back to
     * back (the slowest rank's mean over the replays) */
    {
        cudaGraph_t g8;
        cudaGraphExec_t e8;
        double t0, t, tmax;
        cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal);
        MPIX_Allreduce_enqueue(d_in, d_out, 2, MPI_FLOAT, MPI_SUM, stream_comm);
        cudaStreamEndCapture(stream, &g8);
        cudaGraphInstantiate(&e8, g8, 0);
        for (int k = 0; k < 100; ++k) {
            cudaGraphLaunch(e8, stream);   /* warm-up */
        }
        cudaStreamSynchronize(stream);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int k = 0; k < REPLAYS; ++k) {
            cudaGraphLaunch(e8, stream);
        }
        cudaStreamSynchronize(stream);
        t = (MPI_Wtime() - t0) / REPLAYS;
        MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (0 == rank) {
            printf("graph replay of an 8-byte allreduce: %.2f us per step (%d replays)\n",
                   tmax * 1e6, REPLAYS);
        }
        cudaGraphExecDestroy(e8);
        cudaGraphDestroy(g8);
    }
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    MPI_Comm_free(&stream_comm);
    MPIX_Stream_free(&mpi_stream);
    cudaFree(d_in);
    cudaFree(d_out);
    cudaFreeHost(h);
    cudaFreeHost(results);
    cudaStreamDestroy(stream);
    MPI_Finalize();
    return all_errs ? 1 : 0;
}
