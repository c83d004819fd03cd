/* test_gpu_halo's kernels (halo_kernels.cu): 0 or a cudaError_t */
#ifndef GPUCOLL_TEST_HALO_KERNELS_H
#define GPUCOLL_TEST_HALO_KERNELS_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* the byte rank sends in direction dir at index i in iteration it */
unsigned char halo_byte_host(int rank, int dir, size_t i, unsigned it);
/* buf[i] = halo_byte(rank, dir, i, *it) */
int halo_fill(unsigned char *buf, size_t n, int rank, int dir, const unsigned *it,
              cudaStream_t st);
/* *bad += the bytes of buf that differ from halo_byte(rank, dir, i, *it) */
int halo_check(const unsigned char *buf, size_t n, int rank, int dir, const unsigned *it,
               unsigned long long *bad, cudaStream_t st);
/* ++*it */
int halo_advance(unsigned *it, cudaStream_t st);

#ifdef __cplusplus
}
#endif

#endif /* GPUCOLL_TEST_HALO_KERNELS_H */
