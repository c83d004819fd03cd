/*
 * The application side of gpucoll_appbench: a bandwidth-bound STREAM triad
 * over the whole GPU (a = b + s * c, grid-stride), standing for the solver
 * kernel between two collectives.  Its length is chosen at run time from
 * the measured bandwidth so that one launch takes the asked time.
 */
#include <cuda_runtime.h>

#include <stddef.h>

__global__ void gpucoll_app_triad_kernel(float *__restrict__ a, const float *__restrict__ b,
                                         const float *__restrict__ c, float s, size_t n)
{
    size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x;
    const size_t stride = (size_t) gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        a[i] = b[i] + s * c[i];
    }
}

extern "C" int gpucoll_app_triad(float *a, const float *b, const float *c, float s, size_t n,
                                 int blocks, cudaStream_t st)
{
    gpucoll_app_triad_kernel<<<blocks, 512, 0, st>>>(a, b, c, s, n);
    return (int) cudaGetLastError();
}
