// What moving 8 bytes between the GPU and the host costs right after the
// application's kernel, as a blocking MPI call meets it (not a test; prints
// microseconds): each round runs a whole-GPU triad of about 20 us, waits
// for it with cudaStreamSynchronize as the application does, then times one
// way of getting 8 bytes to the host and back:
//   pageable   cudaMemcpy D2H and H2D through malloc'd memory (the staged path)
//   pinned     cudaMemcpyAsync on a stream of ours to pinned memory, spin on
//              cudaStreamQuery, and back
//   kernel     one launch that reads the device word, stores it in mapped
//              host memory with a flag; the host spins on the flag; and one
//              launch that reads mapped host memory into the device word
//   launch     one empty launch whose flag the host spins on (a round trip)
// Build: nvcc -O2 -gencode arch=compute_90,code=sm_90 stage_probe.cu -o stage_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

static double now_us()
{
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

__global__ void k_triad(float *a, const float *b, const float *c, size_t n)
{
    for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t) gridDim.x * blockDim.x) {
        a[i] = b[i] + 0.5f * c[i];
    }
}

__global__ void k_to_host(const unsigned long long *d, volatile unsigned long long *h,
                          unsigned long long tag)
{
    h[0] = d[0];
    __threadfence_system();
    h[1] = tag;
}

__global__ void k_from_host(unsigned long long *d, const volatile unsigned long long *h,
                            volatile unsigned long long *flag, unsigned long long tag)
{
    d[0] = h[0];
    __threadfence_system();
    flag[0] = tag;
}

#define CK(x)                                                                       \
    do {                                                                            \
        cudaError_t e_ = (x);                                                       \
        if (cudaSuccess != e_) {                                                    \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

int main(int argc, char **argv)
{
    const int rounds = argc > 1 ? atoi(argv[1]) : 2000;
    int sms;
    cudaStream_t app, ours;
    float *a, *b, *c;
    unsigned long long *dword, *hmap, *hdev, *pinned;
    CK(cudaSetDevice(0));
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CK(cudaStreamCreateWithFlags(&app, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&ours, cudaStreamNonBlocking));
    const size_t n = (size_t) 8 << 20;   /* 3 x 32 MiB: about 20-30 us on H100/H200 */
    CK(cudaMalloc(&a, n * 4));
    CK(cudaMalloc(&b, n * 4));
    CK(cudaMalloc(&c, n * 4));
    CK(cudaMemset(b, 0, n * 4));
    CK(cudaMemset(c, 0, n * 4));
    CK(cudaMalloc(&dword, 64));
    CK(cudaHostAlloc((void **) &hmap, 4096, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **) &hdev, hmap, 0));
    CK(cudaHostAlloc((void **) &pinned, 64, cudaHostAllocDefault));
    unsigned long long *pageable = (unsigned long long *) malloc(64);
    const char *name[] = { "pageable cudaMemcpy D2H + H2D", "pinned cudaMemcpyAsync D2H + H2D, spin",
                           "kernel D2H + kernel H2D, spin on mapped flag",
                           "one empty launch, spin on mapped flag", "triad (host view, incl. sync)" };
    const int NW = 5;
    std::vector<double> t[NW];
    unsigned long long tag = 0;
    for (int r = 0; r < rounds; ++r) {
        for (int w = 0; w < NW - 1; ++w) {
            double t0 = now_us();
            k_triad<<<sms * 4, 512, 0, app>>>(a, b, c, n);
            CK(cudaStreamSynchronize(app));
            double t1 = now_us();
            if (0 == w) {
                CK(cudaMemcpy(pageable, dword, 8, cudaMemcpyDeviceToHost));
                pageable[0] += 1;
                CK(cudaMemcpy(dword, pageable, 8, cudaMemcpyHostToDevice));
            } else if (1 == w) {
                CK(cudaMemcpyAsync(pinned, dword, 8, cudaMemcpyDeviceToHost, ours));
                while (cudaErrorNotReady == cudaStreamQuery(ours)) {
                }
                pinned[0] += 1;
                CK(cudaMemcpyAsync(dword, pinned, 8, cudaMemcpyHostToDevice, ours));
                while (cudaErrorNotReady == cudaStreamQuery(ours)) {
                }
            } else if (2 == w) {
                ++tag;
                k_to_host<<<1, 32, 0, ours>>>(dword, hdev, tag);
                while (((volatile unsigned long long *) hmap)[1] != tag) {
                }
                hmap[2] = hmap[0] + 1;
                ++tag;
                k_from_host<<<1, 32, 0, ours>>>(dword, hdev + 2, hdev + 1, tag);
                while (((volatile unsigned long long *) hmap)[1] != tag) {
                }
            } else {
                ++tag;
                k_to_host<<<1, 32, 0, ours>>>(dword, hdev, tag);
                while (((volatile unsigned long long *) hmap)[1] != tag) {
                }
            }
            double t2 = now_us();
            if (r > 10) {
                t[w].push_back(t2 - t1);
                t[NW - 1].push_back(t1 - t0);
            }
        }
    }
    CK(cudaDeviceSynchronize());
    printf("# %d rounds after a triad of %zu floats on %d SMs; us: median p10 p90\n", rounds, n, sms);
    for (int w = 0; w < NW; ++w) {
        std::sort(t[w].begin(), t[w].end());
        const size_t m = t[w].size();
        printf("%-46s %7.2f %7.2f %7.2f\n", name[w], t[w][m / 2], t[w][m / 10], t[w][m * 9 / 10]);
    }
    return 0;
}
