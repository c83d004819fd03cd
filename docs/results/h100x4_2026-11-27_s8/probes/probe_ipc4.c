/* part 4: test_gpu_halo's allocation sequence at np 2, both directions:
 * a 256 B probe opened and closed, then per run 8 buffers + 2 small ones
 * allocated and freed, the two sent buffers exported and opened by the
 * peer; runs of 1 B, 1 B, 4096 B; the peer's old mappings stay open */
#include <mpi.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

typedef struct { cudaIpcMemHandle_t h; uint64_t base; } ex_t;
static unsigned hsum(const cudaIpcMemHandle_t *h)
{ unsigned s = 2166136261u; const unsigned char *c = (const void *) h;
  for (int i = 0; i < 64; ++i) s = (s ^ c[i]) * 16777619u; return s; }
static uint64_t start(void *p)
{ unsigned long long s = 0; cuPointerGetAttribute(&s, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, (CUdeviceptr) (uintptr_t) p); return s; }

int main(int argc, char **argv)
{
    int rank, peer; void *open_[16] = { 0 }; int nopen = 0;
    MPI_Init(&argc, &argv); MPI_Comm_rank(MPI_COMM_WORLD, &rank); peer = 1 - rank;
    cudaSetDevice(rank); cudaFree(0);
    {   /* the setup probe */
        void *pr, *m = NULL; ex_t mine, theirs;
        cudaMalloc(&pr, 256); mine.base = start(pr); cudaIpcGetMemHandle(&mine.h, pr);
        MPI_Sendrecv(&mine, sizeof(ex_t), MPI_BYTE, peer, 0, &theirs, sizeof(ex_t), MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        cudaError_t e = cudaIpcOpenMemHandle(&m, theirs.h, cudaIpcMemLazyEnablePeerAccess);
        cudaError_t c = e ? cudaSuccess : cudaIpcCloseMemHandle(m);
        MPI_Barrier(MPI_COMM_WORLD);
        cudaFree(pr);
        if (rank) printf("setup probe: open %s, close %s\n", cudaGetErrorString(e), cudaGetErrorString(c));
    }
    size_t sizes[4] = { 1, 1, 1, 4096 };
    for (int run = 0; run < 4; ++run) {
        size_t n = sizes[run]; void *snd[4], *rcv[4], *it, *bad; ex_t mine[2], theirs[2];
        for (int d = 0; d < 4; ++d) { cudaMalloc(&snd[d], n); cudaMalloc(&rcv[d], n); cudaMemset(snd[d], 0x10 * run + d, n); }
        cudaMalloc(&it, 4); cudaMalloc(&bad, 8);
        for (int d = 0; d < 2; ++d) { mine[d].base = start(snd[d]); cudaIpcGetMemHandle(&mine[d].h, snd[d]); }
        cudaDeviceSynchronize();
        MPI_Sendrecv(mine, sizeof(mine), MPI_BYTE, peer, 0, theirs, sizeof(theirs), MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int d = 0; d < 2; ++d) {
            void *m = NULL; unsigned char b = 0;
            cudaError_t e = cudaIpcOpenMemHandle(&m, theirs[d].h, cudaIpcMemLazyEnablePeerAccess);
            cudaGetLastError();
            cudaError_t c = e ? e : cudaMemcpy(&b, m, 1, cudaMemcpyDeviceToHost);
            cudaGetLastError();
            if (!e) open_[nopen++] = m;
            if (rank) printf("run %d (%zu B) dir %d: peer's base %llx handle %08x: open %s -> %p, read %s %s\n", run, n, d,
                             (unsigned long long) theirs[d].base, hsum(&theirs[d].h), cudaGetErrorString(e), m,
                             cudaGetErrorString(c), !c && b == 0x10 * run + d ? "right" : "WRONG");
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (run < 3) { for (int d = 0; d < 4; ++d) { cudaFree(snd[d]); cudaFree(rcv[d]); } cudaFree(it); cudaFree(bad); }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank) printf("%d mappings open at the end\n", nopen);
    MPI_Finalize();
    return 0;
}
