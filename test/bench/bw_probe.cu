// One-way NVLink bandwidth from GPU 0 to GPU 1 (not a test; prints GB/s): what a
// one-link collective (bcast, reduce on 2 GPUs) can reach by SM stores into the
// peer, SM loads from the peer, and the copy engines (cudaMemcpyPeerAsync), at
// several grid sizes.  Build: nvcc -O3 -arch=sm_90 bw_probe.cu -o bw_probe
#include <cstdio>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
    printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); return 1; } } while (0)
__global__ void k_copy(uint4 *dst, const uint4 *src, size_t n) {
  const size_t stride = (size_t) gridDim.x * blockDim.x;
  size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a; dst[i + stride] = b; dst[i + 2 * stride] = c; dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}
int main() {
  const size_t maxb = (size_t) 1 << 30;
  char *b0, *b1;
  CK(cudaSetDevice(1)); CK(cudaDeviceEnablePeerAccess(0, 0)); CK(cudaMalloc(&b1, maxb));
  CK(cudaSetDevice(0)); CK(cudaDeviceEnablePeerAccess(1, 0)); CK(cudaMalloc(&b0, maxb));
  CK(cudaMemset(b0, 1, maxb));
  cudaEvent_t ev[2][2];
  for (int d = 0; d < 2; ++d) {
    CK(cudaSetDevice(d)); CK(cudaEventCreate(&ev[d][0])); CK(cudaEventCreate(&ev[d][1]));
  }
  printf("%-28s %10s %10s %10s %10s\n", "way (grid x 512 threads)", "64 MiB", "256 MiB", "1 GiB", "GB/s");
  for (int way = 0; way < 3; ++way) {
    const int grids[] = {32, 64, 128, 132, 264};
    for (int gi = 0; gi < (way == 2 ? 1 : 5); ++gi) {
      const int g = grids[gi];
      char name[64];
      snprintf(name, sizeof(name), "%s %d", way == 0 ? "SM store, GPU 0 runs" :
               way == 1 ? "SM load, GPU 1 runs" : "copy engine", way == 2 ? 0 : g);
      printf("%-28s", name);
      for (size_t bytes = (size_t) 64 << 20; bytes <= maxb; bytes *= 4) {
        const int dev = way == 1 ? 1 : 0;
        cudaEvent_t e0 = ev[dev][0], e1 = ev[dev][1];
        CK(cudaSetDevice(dev));
        float best = 1e30f;
        for (int rep = 0; rep < 6; ++rep) {
          cudaEventRecord(e0);
          if (way == 2) cudaMemcpyPeerAsync(b1, 1, b0, 0, bytes);
          else k_copy<<<g, 512>>>((uint4 *) b1, (const uint4 *) b0, bytes / 16);
          cudaEventRecord(e1);
          CK(cudaEventSynchronize(e1));
          float ms; cudaEventElapsedTime(&ms, e0, e1);
          if (rep > 0 && ms < best) best = ms;
        }
        printf(" %10.1f", bytes / (best * 1e-3) / 1e9);
      }
      printf("\n");
    }
  }
  return 0;
}
