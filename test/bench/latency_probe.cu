// Where small-message latency goes on a GPU host (not a test; prints microseconds):
// GPU read of mapped host memory, host<->GPU ping-pong through mapped memory (with the
// fence before or after the GPU store), cudaStreamQuery / cuStreamQuery / event query on the
// legacy stream, ping through cuStreamWriteValue64, and an empty launch + cudaStreamQuery.
// Build: nvcc -O2 -gencode arch=compute_90,code=sm_90 latency_probe.cu -lcuda
#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
__global__ void k_read(volatile unsigned long long *h, unsigned long long *out, int n) {
  unsigned long long s = 0; long long t0 = clock64();
  for (int i = 0; i < n; ++i) s += h[i & 7];
  long long t1 = clock64(); out[0] = (t1 - t0) / n; out[1] = s;
}
__global__ void k_pong_nofence(volatile unsigned long long *ping, volatile unsigned long long *pong, int n) {
  for (int i = 1; i <= n; ++i) { while (*ping < (unsigned long long)i) {} __threadfence_system(); *pong = i; }
}
// ping-pong: host writes ping (host mem or device mem), GPU echoes into host pong
__global__ void k_pong(volatile unsigned long long *ping, volatile unsigned long long *pong, int n) {
  for (int i = 1; i <= n; ++i) { while (*ping < (unsigned long long)i) {} *pong = i; __threadfence_system(); }
}
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main() {
  cudaSetDevice(0); cuInit(0);
  volatile unsigned long long *h, *hd; unsigned long long *out, *dping;
  cudaHostAlloc((void**)&h, 4096, cudaHostAllocMapped); cudaHostGetDevicePointer((void**)&hd, (void*)h, 0);
  cudaMalloc(&out, 64); cudaMalloc(&dping, 64);
  int clk; cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
  k_read<<<1,1>>>(hd, out, 1000); unsigned long long r[2]; cudaMemcpy(r, out, 16, cudaMemcpyDeviceToHost);
  printf("GPU read of host memory: %.2f us per dependent load\n", r[0] / (clk * 1e-3));
  const int N = 20000;
  // host-memory ping
  h[0] = 0; h[8] = 0; cudaStream_t s, s2; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
  k_pong<<<1,1,0,s>>>(hd, hd + 8, N);
  double t0 = now();
  for (int i = 1; i <= N; ++i) { h[0] = i; while (h[8] < (unsigned long long)i) {} }
  printf("ping-pong through host memory: %.2f us round trip\n", (now() - t0) / N * 1e6);
  cudaStreamSynchronize(s);
  h[0] = 0; h[8] = 0; cudaDeviceSynchronize();
  k_pong_nofence<<<1,1,0,s>>>(hd, hd + 8, N);
  t0 = now();
  for (int i = 1; i <= N; ++i) { h[0] = i; while (h[8] < (unsigned long long)i) {} }
  printf("ping-pong, fence before the pong store only: %.2f us round trip\n", (now() - t0) / N * 1e6);
  cudaStreamSynchronize(s);
  t0 = now();
  for (int i = 0; i < N; ++i) (void) cudaStreamQuery(cudaStreamLegacy);
  printf("cudaStreamQuery(legacy): %.2f us\n", (now() - t0) / N * 1e6);
  t0 = now();
  for (int i = 0; i < N; ++i) (void) cuStreamQuery(CU_STREAM_LEGACY);
  printf("cuStreamQuery(legacy): %.2f us\n", (now() - t0) / N * 1e6);
  cudaEvent_t ev; cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  t0 = now();
  for (int i = 0; i < N; ++i) { cudaEventRecord(ev, cudaStreamLegacy); (void) cudaEventQuery(ev); }
  printf("event record+query legacy: %.2f us\n", (now() - t0) / N * 1e6);
  // device-memory ping written by cuStreamWriteValue64
  cudaMemset(dping, 0, 64); h[8] = 0; cudaDeviceSynchronize();
  k_pong<<<1,1,0,s>>>(dping, hd + 8, N);
  t0 = now();
  for (int i = 1; i <= N; ++i) { cuStreamWriteValue64(s2, (CUdeviceptr) dping, i, 0); while (h[8] < (unsigned long long)i) {} }
  printf("ping via cuStreamWriteValue64, pong host memory: %.2f us round trip\n", (now() - t0) / N * 1e6);
  cudaStreamSynchronize(s);
  // empty kernel launch + query
  t0 = now();
  for (int i = 0; i < N; ++i) { k_read<<<1,1,0,s>>>(hd, out, 0); while (cudaStreamQuery(s) == cudaErrorNotReady) {} }
  printf("launch + cudaStreamQuery loop: %.2f us\n", (now() - t0) / N * 1e6);
  return 0;
}
