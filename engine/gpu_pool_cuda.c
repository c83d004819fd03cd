/*
 * The pool's memory through the CUDA runtime and the CUDA IPC transport
 * (gpu_pool.h).  Its own file so that the pool's logic builds without
 * CUDA for its unit test.
 */
#include "engine/gpu_pool.h"

#include <cuda_runtime_api.h>

static gpu_status_t gpu_pool_cuda_alloc(size_t bytes, void **ptr)
{
    cudaError_t e = cudaMalloc(ptr, bytes);
    if (cudaErrorMemoryAllocation == e) {
        (void) cudaGetLastError();
        GPU_LOG(1, "no room for %zu bytes of large-message pool", bytes);
        *ptr = NULL;
        return GPU_ERR_NO_MEMORY;
    }
    if (cudaSuccess != e) {
        GPU_ERROR("cudaMalloc(%zu) for the large-message pool: %s", bytes, cudaGetErrorString(e));
        *ptr = NULL;
        return GPU_ERR_CUDA;
    }
    return GPU_OK;
}

static void gpu_pool_cuda_free(void *ptr)
{
    /* synchronous: the memory is the driver's again when this returns
     * (no importer holds it: they close before their last detach) */
    (void) cudaFree(ptr);
}

static gpu_status_t gpu_pool_cuda_export(void *ptr, gpu_ipc_handle_t *handle)
{
    return gpu_ipc_cuda_ops.export_mem(ptr, handle);
}

static gpu_status_t gpu_pool_cuda_import(const gpu_ipc_handle_t *handle, void **ptr)
{
    return gpu_ipc_cuda_ops.import_mem(handle, ptr);
}

static void gpu_pool_cuda_close(void *ptr)
{
    gpu_ipc_cuda_ops.release_mem(ptr);
}

const gpu_pool_mem_ops_t gpu_pool_cuda_mem_ops = {
    .alloc = gpu_pool_cuda_alloc,
    .free = gpu_pool_cuda_free,
    .export_mem = gpu_pool_cuda_export,
    .import_mem = gpu_pool_cuda_import,
    .close = gpu_pool_cuda_close,
};
