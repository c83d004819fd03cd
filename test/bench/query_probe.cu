// Cost of the calls a small collective might make per call (not a test; prints microseconds):
// stream/event queries, cuCtxGetCurrent and pointer attribute queries, idle and while a
// kernel stays resident on another stream (as the persistent engine's does).
// Build: nvcc -O2 -arch=sm_90 query_probe.cu -o query_probe -lcuda
// Output on the 2x H200 host: docs/results/h200x2_2026-11-22_resident_kernel/probe_queries_h200x2.log
// cost of the legacy-stream ordering checks, with and without a kernel resident on another stream
#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>
#include <chrono>
__global__ void k_spin(volatile int *stop) { while (!*stop) {} }
__global__ void k_empty() {}
static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static CUdeviceptr p; static cudaStream_t s; static cudaEvent_t ev;
static void run(const char *tag) {
  const int N = 20000; double t0;
  t0 = now(); for (int i = 0; i < N; ++i) (void) cudaStreamQuery(cudaStreamLegacy);
  printf("%s cudaStreamQuery(legacy): %.3f us\n", tag, (now() - t0) / N * 1e6);
  t0 = now(); for (int i = 0; i < N; ++i) (void) cuStreamQuery(CU_STREAM_LEGACY);
  printf("%s cuStreamQuery(legacy): %.3f us\n", tag, (now() - t0) / N * 1e6);
  t0 = now(); for (int i = 0; i < N; ++i) (void) cudaStreamQuery(s);
  printf("%s cudaStreamQuery(idle nonblocking): %.3f us\n", tag, (now() - t0) / N * 1e6);
  t0 = now(); for (int i = 0; i < N; ++i) (void) cudaEventQuery(ev);
  printf("%s cudaEventQuery(done event): %.3f us\n", tag, (now() - t0) / N * 1e6);
  CUcontext ctx; t0 = now(); for (int i = 0; i < N; ++i) cuCtxGetCurrent(&ctx);
  printf("%s cuCtxGetCurrent: %.3f us\n", tag, (now() - t0) / N * 1e6);
  unsigned mt;
  t0 = now(); for (int i = 0; i < N; ++i) cuPointerGetAttribute(&mt, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
  printf("%s cuPointerGetAttribute(memtype): %.3f us\n", tag, (now() - t0) / N * 1e6);
  cudaPointerAttributes at;
  t0 = now(); for (int i = 0; i < N; ++i) cudaPointerGetAttributes(&at, (void*)p);
  printf("%s cudaPointerGetAttributes: %.3f us\n", tag, (now() - t0) / N * 1e6);
}
int main() {
  cudaSetDevice(0); cuInit(0); cudaFree(0);
  cudaMalloc((void**)&p, 64); cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaEventCreateWithFlags(&ev, cudaEventDisableTiming); cudaEventRecord(ev, cudaStreamLegacy); cudaDeviceSynchronize();
  run("idle:");
  int *stop; cudaHostAlloc((void**)&stop, 64, cudaHostAllocMapped); *stop = 0; int *dstop; cudaHostGetDevicePointer((void**)&dstop, stop, 0);
  cudaStream_t s2; cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
  k_spin<<<32, 512, 0, s2>>>(dstop);
  run("resident:");
  // after an unsynchronised legacy kernel
  k_empty<<<1,1>>>(); double t0 = now(); (void) cudaStreamQuery(cudaStreamLegacy); printf("query right after a legacy launch: %.3f us\n", (now()-t0)*1e6);
  *stop = 1; cudaDeviceSynchronize();
  return 0;
}
