// NVLink latency between GPUs 0 and 1 (not a test; prints microseconds): a flag ping-pong
// between one thread on each GPU, and dependent loads of local L2 and of peer memory.
// Build: nvcc -O2 -arch=sm_90 nvlink_probe.cu -o nvlink_probe
// Output on the 2x H200 host: docs/results/h200x2_2026-11-22_resident_kernel/probe_nvlink_h200x2.log
#include <cstdio>
#include <cuda_runtime.h>
#include <chrono>
__global__ void k_ping(volatile unsigned long long *mine, volatile unsigned long long *theirs, int n, int first) {
  for (int i = 1; i <= n; ++i) {
    if (first) { *theirs = i; while (*mine < (unsigned long long) i) {} }
    else { while (*mine < (unsigned long long) i) {} *theirs = i; }
  }
}
__global__ void k_read_lat(const unsigned long long *p, unsigned long long *out, int n) {
  unsigned long long s = 0; long long t0 = clock64();
  for (int i = 0; i < n; ++i) s = *(volatile const unsigned long long *)(p + (s & 1));
  out[0] = (clock64() - t0) / n; out[1] = s;
}
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
int main() {
  unsigned long long *f[2];
  for (int d = 0; d < 2; ++d) { cudaSetDevice(d); cudaDeviceEnablePeerAccess(1 - d, 0); cudaMalloc(&f[d], 64); cudaMemset(f[d], 0, 64); cudaDeviceSynchronize(); }
  const int N = 100000;
  cudaSetDevice(1); k_ping<<<1,1>>>(f[1], f[0], N, 0);
  cudaSetDevice(0); double t0 = now(); k_ping<<<1,1>>>(f[0], f[1], N, 1);
  cudaDeviceSynchronize(); cudaSetDevice(1); cudaDeviceSynchronize();
  printf("NVLink flag ping-pong: %.3f us round trip\n", (now() - t0) / N * 1e6);
  int clk; cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
  cudaSetDevice(0); unsigned long long *o; cudaMalloc(&o, 16); unsigned long long r[2];
  k_read_lat<<<1,1>>>(f[0], o, 10000); cudaMemcpy(r, o, 16, cudaMemcpyDeviceToHost);
  printf("local L2 dependent volatile load: %.3f us\n", r[0] / (clk * 1e-3));
  k_read_lat<<<1,1>>>(f[1], o, 10000); cudaMemcpy(r, o, 16, cudaMemcpyDeviceToHost);
  printf("peer (NVLink) dependent volatile load: %.3f us\n", r[0] / (clk * 1e-3));
  return 0;
}
