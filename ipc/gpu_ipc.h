/*
 * Intra-node transport: makes one rank's device allocation addressable by
 * its peers.  The engine sees only this ops table, so a host-staged
 * shared-memory transport for GPUs without peer access can slot in beside
 * CUDA IPC later.
 */
#ifndef GPU_IPC_H
#define GPU_IPC_H

#include <stddef.h>

#include "topo/gpu_topo.h"
#include "util/gpu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPU_IPC_HANDLE_BYTES 64

typedef struct {
    unsigned char bytes[GPU_IPC_HANDLE_BYTES];
} gpu_ipc_handle_t;

typedef struct gpu_transport_ops {
    const char *name;
    /* 1 when this transport can join every rank of the topology */
    int (*can_connect)(const gpu_topo_comm_t *topo);
    gpu_status_t (*export_mem)(void *ptr, gpu_ipc_handle_t *handle);
    gpu_status_t (*import_mem)(const gpu_ipc_handle_t *handle, void **ptr);
    void (*release_mem)(void *ptr);
} gpu_transport_ops_t;

extern const gpu_transport_ops_t gpu_ipc_cuda_ops;

#ifdef __cplusplus
}
#endif

#endif /* GPU_IPC_H */
