/*
 * The application side of test_gpu_halo: kernels that write a halo
 * exchange's send buffers and check its receive buffers on the stream,
 * between enqueued exchanges, with the iteration number read on the
 * device (a graph replays the same launches: the number advances there).
 * halo_byte is the host reference's formula too.
 */
#include <cuda_runtime.h>

#include <stddef.h>

#include "test/gpu/halo_kernels.h"

__host__ __device__ unsigned char halo_byte(int rank, int dir, size_t i, unsigned it)
{
    const unsigned x = (unsigned) i * 131u + (unsigned) rank * 17u + (unsigned) dir * 29u +
                       it * 7u;
    return (unsigned char) (x ^ (unsigned) (i >> 8) ^ (it >> 1));
}

extern "C" unsigned char halo_byte_host(int rank, int dir, size_t i, unsigned it)
{
    return halo_byte(rank, dir, i, it);
}

__global__ void halo_fill_kernel(unsigned char *buf, size_t n, int rank, int dir,
                                 const unsigned *it)
{
    const unsigned k = *it;
    for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t) gridDim.x * blockDim.x) {
        buf[i] = halo_byte(rank, dir, i, k);
    }
}

__global__ void halo_check_kernel(const unsigned char *buf, size_t n, int rank, int dir,
                                  const unsigned *it, unsigned long long *bad)
{
    const unsigned k = *it;
    unsigned long long mine = 0;
    for (size_t i = (size_t) blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t) gridDim.x * blockDim.x) {
        mine += buf[i] != halo_byte(rank, dir, i, k);
    }
    if (0 != mine) {
        atomicAdd(bad, mine);
    }
}

__global__ void halo_advance_kernel(unsigned *it)
{
    ++*it;
}

static int halo_blocks(size_t n)
{
    const size_t b = (n + 255) / 256;
    return b < 1 ? 1 : b > 1024 ? 1024 : (int) b;
}

extern "C" int halo_fill(unsigned char *buf, size_t n, int rank, int dir, const unsigned *it,
                         cudaStream_t st)
{
    if (0 == n) {
        return 0;
    }
    halo_fill_kernel<<<halo_blocks(n), 256, 0, st>>>(buf, n, rank, dir, it);
    return (int) cudaGetLastError();
}

extern "C" int halo_check(const unsigned char *buf, size_t n, int rank, int dir,
                          const unsigned *it, unsigned long long *bad, cudaStream_t st)
{
    if (0 == n) {
        return 0;
    }
    halo_check_kernel<<<halo_blocks(n), 256, 0, st>>>(buf, n, rank, dir, it, bad);
    return (int) cudaGetLastError();
}

extern "C" int halo_advance(unsigned *it, cudaStream_t st)
{
    halo_advance_kernel<<<1, 1, 0, st>>>(it);
    return (int) cudaGetLastError();
}
