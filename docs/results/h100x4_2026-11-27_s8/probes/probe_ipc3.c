/* part 3: does cudaIpcCloseMemHandle wait for the device's work (a stream
 * memory wait on a host flag not yet set)?  Does an open of another handle
 * of the same block meanwhile succeed? */
#include <mpi.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

static volatile unsigned *flag;
static void *setter(void *a) { (void) a; sleep(2); *flag = 1; __sync_synchronize(); return NULL; }
static struct { cudaIpcMemHandle_t h; } ex[3];
static void *opener(void *a) {
    void *p = NULL; cudaSetDevice(1); double t = MPI_Wtime();
    cudaError_t e = cudaIpcOpenMemHandle(&p, ex[2].h, cudaIpcMemLazyEnablePeerAccess);
    printf("  thread open buf 2 during the close: %s after %.3f s\n", cudaGetErrorString(e), MPI_Wtime() - t);
    return a;
}

int main(int argc, char **argv)
{
    int rank, prov; void *b[3];
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &prov); MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    cudaSetDevice(rank); cudaFree(0);
    if (0 == rank) {
        for (int i = 0; i < 3; ++i) { cudaMalloc(&b[i], 4096); cudaIpcGetMemHandle(&ex[i].h, b[i]); }
        MPI_Send(ex, sizeof(ex), MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (1 == rank) {
        void *p0 = NULL, *p1 = NULL; cudaStream_t s; CUdeviceptr dflag; pthread_t t, o; double t0;
        MPI_Recv(ex, sizeof(ex), MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        cudaIpcOpenMemHandle(&p0, ex[0].h, cudaIpcMemLazyEnablePeerAccess);
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        cudaHostAlloc((void **) &flag, 64, cudaHostAllocMapped); *flag = 0;
        cudaHostGetDevicePointer((void **) &dflag, (void *) flag, 0);
        CUresult r = cuStreamWaitValue32((CUstream) s, dflag, 1, CU_STREAM_WAIT_VALUE_GEQ);
        printf("stream waits for a host flag (set in 2 s): %d\n", (int) r);
        pthread_create(&t, NULL, setter, NULL);
        usleep(100000);
        t0 = MPI_Wtime();
        pthread_create(&o, NULL, opener, NULL);
        cudaError_t e = cudaIpcCloseMemHandle(p0);
        printf("close buf 0's mapping: %s after %.3f s (flag %u)\n", cudaGetErrorString(e), MPI_Wtime() - t0, *flag);
        pthread_join(o, NULL);
        t0 = MPI_Wtime();
        e = cudaIpcOpenMemHandle(&p1, ex[1].h, cudaIpcMemLazyEnablePeerAccess);
        printf("open buf 1: %s after %.3f s (flag %u)\n", cudaGetErrorString(e), MPI_Wtime() - t0, *flag);
        pthread_join(t, NULL);
        cudaStreamSynchronize(s);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
