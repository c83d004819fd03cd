/* part 2: small allocations freed and replaced by larger ones at
 * overlapping addresses while the receiver still maps the old ones */
#include <mpi.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

#define NO 8
#define NN 4
typedef struct { cudaIpcMemHandle_t h; uint64_t base, id, size; } ex_t;

static void attrs(void *p, uint64_t *base, uint64_t *id, uint64_t *size)
{
    CUpointer_attribute a[3] = { CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE };
    unsigned long long s = 0, b = 0; size_t z = 0; void *v[3] = { &s, &b, &z };
    CUresult r = cuPointerGetAttributes(3, a, v, (CUdeviceptr) (uintptr_t) p);
    if (r) printf("attrs %p: error %d\n", p, (int) r);
    *base = s; *id = b; *size = z;
}
static unsigned hsum(const cudaIpcMemHandle_t *h)
{ unsigned s = 2166136261u; const unsigned char *c = (const void *) h;
  for (int i = 0; i < 64; ++i) s = (s ^ c[i]) * 16777619u; return s; }

int main(int argc, char **argv)
{
    int rank; ex_t o[NO], n[NN]; void *b[NO];
    MPI_Init(&argc, &argv); MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    cudaSetDevice(rank); cudaFree(0);
    if (0 == rank) {
        for (int i = 0; i < NO; ++i) {
            cudaMalloc(&b[i], 1); cudaMemset(b[i], i + 1, 1);
            attrs(b[i], &o[i].base, &o[i].id, &o[i].size);
            cudaIpcGetMemHandle(&o[i].h, (void *) (uintptr_t) o[i].base);
            printf("old %d: %+lld size %llu handle %08x\n", i, (long long) (o[i].base - o[0].base),
                   (unsigned long long) o[i].size, hsum(&o[i].h));
        }
        cudaDeviceSynchronize();
        MPI_Send(o, sizeof(o), MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < NO; ++i) cudaFree(b[i]);
        for (int i = 0; i < NN; ++i) {
            cudaMalloc(&b[i], 4096); cudaMemset(b[i], 0x40 + i, 4096);
            attrs(b[i], &n[i].base, &n[i].id, &n[i].size);
            cudaIpcGetMemHandle(&n[i].h, (void *) (uintptr_t) n[i].base);
            printf("new %d: %+lld size %llu handle %08x\n", i, (long long) (n[i].base - o[0].base),
                   (unsigned long long) n[i].size, hsum(&n[i].h));
        }
        cudaDeviceSynchronize();
        MPI_Send(n, sizeof(n), MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (1 == rank) {
        void *m[NO] = { 0 }, *q[NN] = { 0 }; unsigned char host[4096];
        MPI_Recv(o, sizeof(o), MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < NO; ++i) {
            cudaError_t e = cudaIpcOpenMemHandle(&m[i], o[i].h, cudaIpcMemLazyEnablePeerAccess);
            cudaGetLastError();
            uint64_t rb = 0, rid = 0, rs = 0;
            if (!e) attrs(m[i], &rb, &rid, &rs);
            printf("recv open old %d: %s at %+lld; mapping range %+lld size %llu\n", i, cudaGetErrorString(e),
                   (long long) ((char *) m[i] - (char *) m[0]), (long long) (rb - (uint64_t) (uintptr_t) m[0]),
                   (unsigned long long) rs);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Recv(n, sizeof(n), MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < NN; ++i) {
            cudaError_t e = cudaIpcOpenMemHandle(&q[i], n[i].h, cudaIpcMemLazyEnablePeerAccess);
            cudaGetLastError();
            printf("recv open new %d (old open): %s\n", i, cudaGetErrorString(e));
            if (e && m[0]) {
                char *r = (char *) m[0] + (n[i].base - o[0].base);
                cudaError_t c = cudaMemcpy(host, r, 4096, cudaMemcpyDeviceToHost);
                cudaGetLastError();
                printf("  via old 0's mapping %+lld: %s, content %s\n", (long long) (n[i].base - o[0].base),
                       cudaGetErrorString(c), !c && host[0] == 0x40 + i && host[4095] == 0x40 + i ? "right" : "WRONG");
            }
        }
        for (int i = 0; i < NO; ++i) if (m[i]) cudaIpcCloseMemHandle(m[i]);
        for (int i = 0; i < NN; ++i) {
            if (q[i]) continue;
            cudaError_t e = cudaIpcOpenMemHandle(&q[i], n[i].h, cudaIpcMemLazyEnablePeerAccess);
            cudaGetLastError();
            int ok = 0;
            if (!e) { ok = !cudaMemcpy(host, q[i], 4096, cudaMemcpyDeviceToHost) && host[0] == 0x40 + i; cudaGetLastError(); }
            printf("recv open new %d after closing the old: %s, content %s\n", i, cudaGetErrorString(e), ok ? "right" : "-");
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
