/*
 * The CUDA runtime error check of every layer that calls the runtime:
 * logs the call and its error string where detected, sets the caller's
 * `st` and jumps to its cleanup label.
 */
#ifndef GPU_CUDA_CHECK_H
#define GPU_CUDA_CHECK_H

#include <cuda_runtime_api.h>

#include "util/gpu_status.h"

#define GPU_CUDA_CHECK(call, label)                                                    \
    do {                                                                               \
        cudaError_t e_ = (call);                                                       \
        if (cudaSuccess != e_) {                                                       \
            GPU_ERROR("%s: %s", #call, cudaGetErrorString(e_));                        \
            st = GPU_ERR_CUDA;                                                         \
            goto label;                                                                \
        }                                                                              \
    } while (0)

#endif /* GPU_CUDA_CHECK_H */
