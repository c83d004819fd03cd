/* what CUDA IPC does with small cudaMalloc allocations: do several share a
 * handle, what does a second open say, and is the first mapping the whole
 * block (so another buffer of it is reachable at the same distance)? */
#include <mpi.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

#define NB 5
typedef struct { cudaIpcMemHandle_t h; uint64_t base, id, size; } ex_t;

static void attrs(void *p, uint64_t *base, uint64_t *id)
{
    CUpointer_attribute a[2] = { CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_BUFFER_ID };
    unsigned long long s = 0, b = 0; void *v[2] = { &s, &b };
    cuPointerGetAttributes(2, a, v, (CUdeviceptr) (uintptr_t) p);
    *base = s; *id = b;
}
static unsigned hsum(const cudaIpcMemHandle_t *h)
{ unsigned s = 2166136261u; const unsigned char *c = (const void *) h;
  for (int i = 0; i < 64; ++i) s = (s ^ c[i]) * 16777619u; return s; }

int main(int argc, char **argv)
{
    int rank; size_t sz[NB] = { 4096, 4096, 4096, 4096, 8 << 20 };
    void *b[NB]; ex_t ex[NB + 2];
    MPI_Init(&argc, &argv); MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    cudaSetDevice(rank); cudaFree(0);
    if (0 == rank) {
        for (int i = 0; i < NB; ++i) {
            cudaMalloc(&b[i], sz[i]); cudaMemset(b[i], i + 1, sz[i]);
            attrs(b[i], &ex[i].base, &ex[i].id); ex[i].size = sz[i];
            cudaError_t e = cudaIpcGetMemHandle(&ex[i].h, (void *) (uintptr_t) ex[i].base);
            printf("sender buf %d %zu B at %p: range start %+lld from buf 0, id %llu, handle %08x (%s)\n",
                   i, sz[i], b[i], (long long) (ex[i].base - ex[0].base), (unsigned long long) ex[i].id,
                   hsum(&ex[i].h), cudaGetErrorString(e));
        }
        cudaDeviceSynchronize();
        MPI_Send(ex, sizeof(ex_t) * NB, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);   /* receiver mapped */
        cudaFree(b[1]); void *n; cudaMalloc(&n, 4096); cudaMemset(n, 9, 4096);
        attrs(n, &ex[NB].base, &ex[NB].id); ex[NB].size = 4096;
        cudaIpcGetMemHandle(&ex[NB].h, (void *) (uintptr_t) ex[NB].base);
        printf("sender freed buf 1, new 4096 B at %p: range start %+lld, id %llu, handle %08x (buf1 had %08x)\n",
               n, (long long) (ex[NB].base - ex[0].base), (unsigned long long) ex[NB].id, hsum(&ex[NB].h), hsum(&ex[1].h));
        cudaDeviceSynchronize();
        MPI_Send(&ex[NB], sizeof(ex_t), MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (1 == rank) {
        void *m[NB + 1] = { 0 }; unsigned char *host = malloc(8 << 20);
        MPI_Recv(ex, sizeof(ex_t) * NB, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < NB; ++i) {
            cudaError_t e = cudaIpcOpenMemHandle(&m[i], ex[i].h, cudaIpcMemLazyEnablePeerAccess);
            cudaGetLastError();
            int ok = -1;
            if (cudaSuccess == e) {
                cudaError_t c = cudaMemcpy(host, m[i], ex[i].size, cudaMemcpyDeviceToHost);
                ok = cudaSuccess == c && host[0] == i + 1 && host[ex[i].size - 1] == i + 1;
                cudaGetLastError();
            }
            printf("receiver open buf %d: %s -> %p, content %s\n", i, cudaGetErrorString(e), m[i],
                   ok < 0 ? "-" : ok ? "right" : "WRONG");
            if (cudaSuccess != e && NULL != m[0]) {
                char *q = (char *) m[0] + (ex[i].base - ex[0].base);
                cudaError_t c = cudaMemcpy(host, q, ex[i].size, cudaMemcpyDeviceToHost);
                cudaGetLastError();
                printf("  via buf 0's mapping %+lld: %s, content %s\n", (long long) (ex[i].base - ex[0].base),
                       cudaGetErrorString(c), cudaSuccess == c && host[0] == i + 1 ? "right" : "WRONG");
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Recv(&ex[NB], sizeof(ex_t), MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        {
            cudaError_t e = cudaIpcOpenMemHandle(&m[NB], ex[NB].h, cudaIpcMemLazyEnablePeerAccess);
            cudaGetLastError();
            printf("receiver open the new buffer (old buf 1 mapping %s): %s\n", m[1] ? "open" : "none", cudaGetErrorString(e));
            for (int k = 0; k < 2; ++k) {
                void *q = k ? m[0] : m[1];
                if (NULL == q) continue;
                char *r = (char *) q + (k ? (ex[NB].base - ex[0].base) : 0);
                cudaError_t c = cudaMemcpy(host, r, 4096, cudaMemcpyDeviceToHost);
                cudaGetLastError();
                printf("  new buffer via %s: %s, content %s\n", k ? "buf 0's mapping" : "old buf 1 mapping",
                       cudaGetErrorString(c), cudaSuccess == c && host[0] == 9 ? "right" : "WRONG");
            }
            if (NULL != m[1]) {
                cudaError_t c = cudaIpcCloseMemHandle(m[1]);
                e = cudaIpcOpenMemHandle(&m[NB], ex[NB].h, cudaIpcMemLazyEnablePeerAccess);
                cudaGetLastError();
                printf("receiver closed old buf 1 mapping (%s), open new: %s\n", cudaGetErrorString(c), cudaGetErrorString(e));
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
