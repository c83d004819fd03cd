#include "ipc/gpu_ipc.h"

#include <string.h>

#include <cuda_runtime_api.h>

_Static_assert(sizeof(cudaIpcMemHandle_t) == GPU_IPC_HANDLE_BYTES, "IPC handle size");

static int gpu_ipc_cuda_can_connect(const gpu_topo_comm_t *topo)
{
    return topo->all_on_one_host && topo->p2p_all;
}

static gpu_status_t gpu_ipc_cuda_export(void *ptr, gpu_ipc_handle_t *handle)
{
    cudaIpcMemHandle_t h;
    cudaError_t err = cudaIpcGetMemHandle(&h, ptr);
    if (cudaSuccess != err) {
        GPU_ERROR("cudaIpcGetMemHandle(%p): %s", ptr, cudaGetErrorString(err));
        return GPU_ERR_CUDA;
    }
    memcpy(handle->bytes, &h, sizeof(h));
    return GPU_OK;
}

static gpu_status_t gpu_ipc_cuda_import(const gpu_ipc_handle_t *handle, void **ptr)
{
    cudaIpcMemHandle_t h;
    void *p = NULL;
    cudaError_t err;

    memcpy(&h, handle->bytes, sizeof(h));
    /* lazy peer access: the driver enables it for this mapping only, so we
     * never change the application's peer-access state */
    err = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
    if (cudaSuccess != err) {
        GPU_ERROR("cudaIpcOpenMemHandle: %s", cudaGetErrorString(err));
        return GPU_ERR_CUDA;
    }
    *ptr = p;
    return GPU_OK;
}

static void gpu_ipc_cuda_release(void *ptr)
{
    /* may run after the application tore CUDA down: nothing to report */
    (void) cudaIpcCloseMemHandle(ptr);
}

const gpu_transport_ops_t gpu_ipc_cuda_ops = {
    .name = "cuda_ipc",
    .can_connect = gpu_ipc_cuda_can_connect,
    .export_mem = gpu_ipc_cuda_export,
    .import_mem = gpu_ipc_cuda_import,
    .release_mem = gpu_ipc_cuda_release,
};
