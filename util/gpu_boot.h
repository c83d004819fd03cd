/*
 * Bootstrap through MPI: every layer that must exchange setup data (IPC
 * handles, UCX worker addresses) is handed this table by the component,
 * which implements it with the communicator's own host collectives.  No
 * sockets, no uniqueId.
 */
#ifndef GPU_BOOT_H
#define GPU_BOOT_H

#include <stddef.h>

#include "util/gpu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    /* rbuf receives bytes from every rank in rank order; collective */
    gpu_status_t (*allgather)(void *ctx, const void *sbuf, void *rbuf, size_t bytes);
} gpu_boot_ops_t;

#ifdef __cplusplus
}
#endif

#endif /* GPU_BOOT_H */
