#include "util/gpu_cuda_wait.h"

#include <sched.h>

#include "util/gpu_clock.h"

gpu_status_t gpu_cuda_stream_wait(cudaStream_t s, double limit_s, int rank, const char *what)
{
    const double deadline = gpu_clock_now() + limit_s;
    cudaError_t e;
    unsigned spins = 0;

    while (cudaErrorNotReady == (e = cudaStreamQuery(s))) {
        if (0 != (++spins & 255)) {
            continue;
        }
        if (gpu_clock_now() > deadline) {
            GPU_ERROR("rank %d: %s: the GPU work it waits for still runs after %.0f s; giving up",
                      rank, what, limit_s);
            return GPU_ERR_TIMEOUT;
        }
        sched_yield();
    }
    if (cudaSuccess != e) {
        GPU_ERROR("rank %d: %s: %s", rank, what, cudaGetErrorString(e));
        return GPU_ERR_CUDA;
    }
    return GPU_OK;
}
