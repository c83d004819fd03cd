/*
 * The few CUDA driver calls needed before we know the application uses
 * CUDA at all: libcuda is opened with dlopen so the component loads on
 * machines without a driver, and pointer queries never create a context
 * (a host-only MPI program must not grow a CUDA context because of us).
 */
#ifndef GPU_CUDA_DRV_H
#define GPU_CUDA_DRV_H

#include <stddef.h>

#include "util/gpu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    GPU_MEM_HOST = 0,    /* pageable, pinned or unknown to CUDA */
    GPU_MEM_DEVICE = 1,  /* cudaMalloc, cudaMallocAsync pools, cuMemCreate/VMM */
    GPU_MEM_MANAGED = 2, /* cudaMallocManaged */
    GPU_MEM_BROKEN = 3   /* the driver could not tell: the context has a sticky error */
} gpu_mem_kind_t;

/* Opens libcuda.so.1 and counts devices, once.  GPU_ERR_UNSUPPORTED with
 * *why set when there is no driver or no device. */
gpu_status_t gpu_drv_init(const char **why);

/* Kind of memory at ptr and, for device memory, its device ordinal and
 * whether its allocation is marked CU_POINTER_ATTRIBUTE_SYNC_MEMOPS (each
 * output may be NULL). */
gpu_mem_kind_t gpu_drv_mem_kind(const void *ptr, int *device, int *sync_memops);

/* First use of a device allocation by a collective: wait for the work the
 * application queued on the legacy default stream (a synchronous
 * cudaMemcpy or cudaMemset into it may still be in flight when it
 * returns), then mark the allocation SYNC_MEMOPS so later synchronous
 * memory operations on it are complete when they return, as Open MPI's
 * and UCX's CUDA support do.  1 when marked; 0 when the driver refuses
 * (managed memory, say): the caller then waits at every call. */
int gpu_drv_first_use(const void *ptr);

/* cuDeviceCanAccessPeer by PCI bus id: 1 yes, 0 no, -1 cannot tell
 * (no driver, unknown device).  Needs no context. */
int gpu_drv_can_access_peer(const char *busid_a, const char *busid_b);

/* The cudaMalloc allocation holding ptr, for a legacy IPC handle: its
 * start, size and buffer id (unique in the process, never reused).  0 for
 * memory that has no such handle (host, managed, pool, VMM). */
int gpu_drv_ipc_range(const void *ptr, void **base, size_t *size, unsigned long long *id);

/* Copy bytes between any two addresses (device, managed or host: unified
 * addressing), through the driver so that the copy needs no CUDA runtime
 * state of ours and runs in the caller's current context, the one its
 * buffers belong to.  Synchronous for the host as cudaMemcpy is.  0, or
 * the driver's error with *why its text. */
int gpu_drv_copy(void *dst, const void *src, size_t bytes, const char **why);

/* 1 when the calling thread has a current CUDA context. */
int gpu_drv_has_context(void);

#ifdef __cplusplus
}
#endif

#endif /* GPU_CUDA_DRV_H */
