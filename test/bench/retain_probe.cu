// What the CUDA driver keeps after what a communicator creates is destroyed
// (issue 22: ~0.6 MiB per communicator and rank did not come back after
// freeing 100-1000 live communicators, while dup/free cycles stayed flat).
// Creates N of each resource at once, destroys them, prints free memory.
//   retain_probe [N]
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime_api.h>

static double free_mib()
{
    size_t f = 0, t = 0;
    cudaDeviceSynchronize();
    cudaMemGetInfo(&f, &t);
    return f / 1048576.0;
}

int main(int argc, char **argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : 1000;
    cudaFree(0);
    double f0 = free_mib();
    {
        std::vector<cudaStream_t> s(n);
        for (auto &x : s) cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking);
        double f1 = free_mib();
        for (auto &x : s) cudaStreamDestroy(x);
        printf("%d streams: %.1f MiB while live, %.1f MiB kept after destroy\n", n, f0 - f1, f0 - free_mib());
    }
    f0 = free_mib();
    {
        std::vector<cudaStream_t> s(n);
        for (auto &x : s) { cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking); cudaMemsetAsync(nullptr, 0, 0, x); }
        std::vector<void *> p(n);
        for (int i = 0; i < n; ++i) { cudaMalloc(&p[i], 1 << 20); cudaMemsetAsync(p[i], 0, 1 << 20, s[i]); }
        double f1 = free_mib();
        for (int i = 0; i < n; ++i) { cudaFree(p[i]); cudaStreamDestroy(s[i]); }
        printf("%d streams with work + 1 MiB each: %.1f MiB while live, %.1f MiB kept\n", n, f0 - f1, f0 - free_mib());
    }
    f0 = free_mib();
    {
        std::vector<cudaEvent_t> e(n);
        for (auto &x : e) cudaEventCreateWithFlags(&x, cudaEventDisableTiming);
        double f1 = free_mib();
        for (auto &x : e) cudaEventDestroy(x);
        printf("%d events: %.1f MiB while live, %.1f MiB kept\n", n, f0 - f1, f0 - free_mib());
    }
    f0 = free_mib();
    {
        std::vector<void *> p(n);
        for (auto &x : p) cudaHostAlloc(&x, 4096, cudaHostAllocMapped);
        double f1 = free_mib();
        for (auto &x : p) cudaFreeHost(x);
        printf("%d mapped host pages: %.1f MiB while live, %.1f MiB kept\n", n, f0 - f1, f0 - free_mib());
    }
    f0 = free_mib();
    {
        std::vector<void *> p(n);
        for (auto &x : p) cudaMalloc(&x, 17 << 20);
        double f1 = free_mib();
        for (auto &x : p) cudaFree(x);
        printf("%d x 17 MiB: %.1f MiB while live, %.1f MiB kept\n", n, f0 - f1, f0 - free_mib());
    }
    return 0;
}
