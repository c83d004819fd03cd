/*
 * A bounded wait for a CUDA stream.  cudaStreamSynchronize has no limit:
 * a kernel that never gets scheduled (a peer gone, a context switch that
 * never comes) would hold the caller forever.  Every wait of ours ends
 * after limit_s and says what it waited for.
 */
#ifndef GPU_CUDA_WAIT_H
#define GPU_CUDA_WAIT_H

#include <cuda_runtime_api.h>

#include "util/gpu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GPU_OK when the stream's work is done; GPU_ERR_TIMEOUT after limit_s
 * (logged once: "rank, what, still running"), GPU_ERR_CUDA with the
 * runtime's error string logged. */
gpu_status_t gpu_cuda_stream_wait(cudaStream_t s, double limit_s, int rank, const char *what);

#ifdef __cplusplus
}
#endif

#endif /* GPU_CUDA_WAIT_H */
