// What the resident kernel's building blocks cost on one SM (not a test; prints
// nanoseconds): the SM clock actually running (clock64 against %globaltimer over
// 2 ms), %globaltimer's step and read cost, a 512-thread block barrier, fences
// after a store (acq_rel and sc at GPU scope, sc at system scope), a dependent
// load hitting L2, and a 64-bit and a 32-bit division by a runtime value.
// Build: nvcc -O2 -gencode arch=compute_90,code=sm_90 sm_probe.cu
#include <cstdio>
#include <cuda_runtime.h>

__device__ __forceinline__ unsigned long long gt()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

enum { R_MHZ, R_GT_STEP, R_GT_READ, R_BAR, R_FENCE_AR, R_FENCE_SC, R_FENCE_SYS, R_L2, R_DIV64,
       R_DIV32, R_N };

__global__ void k_probe(unsigned long long *buf, double *r, unsigned long long d64, unsigned d32)
{
    const int n = 1000;
    if (0 == threadIdx.x) {
        // SM clock: cycles per globaltimer nanosecond over about 2 ms
        unsigned long long g0 = gt(), c0 = clock64(), g1;
        while ((g1 = gt()) - g0 < 2000000) {
        }
        r[R_MHZ] = (double) (clock64() - c0) / (double) (g1 - g0) * 1e3;
        // smallest non-zero step of %globaltimer
        unsigned long long prev = gt(), step = ~0ull;
        for (int i = 0; i < 20000; ++i) {
            const unsigned long long t = gt();
            if (t != prev && t - prev < step) {
                step = t - prev;
            }
            prev = t;
        }
        r[R_GT_STEP] = (double) step;
        unsigned long long s = 0, c = clock64();
        for (int i = 0; i < n; ++i) {
            s += gt();
        }
        r[R_GT_READ] = (double) (clock64() - c) / n;
        buf[100] = s;
    }
    __syncthreads();
    unsigned long long c = clock64();
    for (int i = 0; i < n; ++i) {
        asm volatile("barrier.sync 0;" ::: "memory");
    }
    if (0 == threadIdx.x) {
        r[R_BAR] = (double) (clock64() - c) / n;
        volatile unsigned long long *v = buf;
        c = clock64();
        for (int i = 0; i < n; ++i) {
            v[i & 15] = i;
            asm volatile("fence.acq_rel.gpu;" ::: "memory");
        }
        r[R_FENCE_AR] = (double) (clock64() - c) / n;
        c = clock64();
        for (int i = 0; i < n; ++i) {
            v[i & 15] = i;
            asm volatile("fence.sc.gpu;" ::: "memory");
        }
        r[R_FENCE_SC] = (double) (clock64() - c) / n;
        c = clock64();
        for (int i = 0; i < n; ++i) {
            v[i & 15] = i;
            asm volatile("fence.sc.sys;" ::: "memory");
        }
        r[R_FENCE_SYS] = (double) (clock64() - c) / n;
        // dependent chain through 64 words that stay in L2 (volatile: no L1)
        for (int i = 0; i < 64; ++i) {
            v[i] = (i + 1) & 63;
        }
        unsigned long long idx = 0;
        c = clock64();
        for (int i = 0; i < n; ++i) {
            idx = v[idx];
        }
        r[R_L2] = (double) (clock64() - c) / n;
        buf[101] = idx;
        unsigned long long x = ~0ull, acc = 0;
        c = clock64();
        for (int i = 0; i < n; ++i) {
            acc += (x - i - acc) / d64;
        }
        r[R_DIV64] = (double) (clock64() - c) / n;
        unsigned y = ~0u, acc32 = 0;
        c = clock64();
        for (int i = 0; i < n; ++i) {
            acc32 += (y - i - acc32) / d32;
        }
        r[R_DIV32] = (double) (clock64() - c) / n;
        buf[102] = acc + acc32;
    }
}

int main()
{
    unsigned long long *buf;
    double *r, h[R_N];
    cudaMalloc(&buf, 4096);
    cudaMalloc(&r, sizeof(h));
    for (int rep = 0; rep < 2; ++rep) {
        k_probe<<<1, 512>>>(buf, r, 33, 33);
        if (cudaSuccess != cudaMemcpy(h, r, sizeof(h), cudaMemcpyDeviceToHost)) {
            printf("probe failed\n");
            return 1;
        }
    }
    const double ghz = h[R_MHZ] * 1e-3;
    printf("SM clock while polling: %.0f MHz\n", h[R_MHZ]);
    printf("%%globaltimer step %.0f ns, read %.1f ns\n", h[R_GT_STEP], h[R_GT_READ] / ghz);
    const char *name[] = { "", "", "", "barrier.sync, 512 threads", "store + fence.acq_rel.gpu",
                           "store + fence.sc.gpu", "store + fence.sc.sys",
                           "dependent load, L2 hit", "64-bit division", "32-bit division" };
    for (int i = R_BAR; i < R_N; ++i) {
        printf("%-28s %7.1f ns\n", name[i], h[i] / ghz);
    }
    return 0;
}
