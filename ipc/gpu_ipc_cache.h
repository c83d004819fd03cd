/*
 * User buffers shared between processes on one node, for the path where
 * one process runs a collective for every rank of a GPU they time-slice
 * (engine/gpu_engine_direct.c).  The exporting process names a buffer by
 * its allocation's legacy IPC handle, the buffer's offset in it and the
 * allocation's buffer id; the importing process maps each allocation once
 * and keeps the mapping.
 *
 * Why caches: cudaIpcGetMemHandle and above all cudaIpcOpenMemHandle cost
 * microseconds to milliseconds, and applications reuse their buffers call
 * after call.  Why buffer ids: an address can come back from cudaMalloc
 * after a cudaFree as another allocation; the driver's buffer id never
 * repeats in a process, so a cached mapping is only used for the
 * allocation it was made for.  A mapping keeps the exporter's freed memory
 * alive, so freed allocations are closed as soon as known: the exporter
 * checks two cached exports per call (is the allocation still there?) and
 * logs those gone, or replaced in its cache; each communicator passes the
 * log entries it has not passed yet (cursor) to the process that maps for
 * it, which closes them.  An importer also closes a mapping whose exporter
 * range overlaps a newer allocation of that process, and past
 * GPU_IPC_CACHE_MAPS mappings the least recently used one.  Both caches are process-wide (one allocation opened once,
 * whatever the communicator) and locked.
 */
#ifndef GPU_IPC_CACHE_H
#define GPU_IPC_CACHE_H

#include <stdint.h>

#include "ipc/gpu_ipc.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPU_IPC_CACHE_MAPS 256

typedef struct {
    gpu_ipc_handle_t handle;
    uint64_t base;      /* the allocation, in the exporter's address space */
    uint64_t size;
    uint64_t offset;    /* the buffer in it */
    uint64_t id;        /* the allocation's buffer id in the exporter */
    int32_t pid;        /* the exporter */
    int32_t pad;
} gpu_ipc_ref_t;

/* Exporter: describe the buffer at ptr.  GPU_ERR_UNSUPPORTED for memory
 * without a legacy IPC handle (host, managed, cudaMallocAsync pools, VMM). */
gpu_status_t gpu_ipc_ref_make(const void *ptr, gpu_ipc_ref_t *ref);

/* Importer: this process's address of the buffer ref names. */
gpu_status_t gpu_ipc_ref_open(const gpu_ipc_ref_t *ref, void **ptr);

/* Exporter: allocation ids logged gone since *cursor (at most max; the
 * cursor advances).  Checks a couple of cached exports first. */
int gpu_ipc_exports_gone(unsigned long long *cursor, uint64_t *ids, int max);

/* Importer: close the mappings of process pid's allocations ids. */
void gpu_ipc_forget(int32_t pid, const uint64_t *ids, int n);

/* Mappings held now (tests). */
int gpu_ipc_cache_maps(void);

#ifdef __cplusplus
}
#endif

#endif /* GPU_IPC_CACHE_H */
