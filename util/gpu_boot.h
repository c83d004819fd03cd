/*
 * Bootstrap through MPI: every layer that must exchange setup data (IPC
 * handles, UCX worker addresses) is handed this table by the component,
 * which implements it with the communicator's own point-to-point messages
 * or host collectives.  No sockets, no uniqueId.
 *
 * Only allgather is required.  The nonblocking pair lets the engine run
 * its setup and its host-paced rounds from a progress callback, so that a
 * nonblocking collective never blocks inside its start (a blocking host
 * exchange on communicator A while the peer blocks on B deadlocks two legal
 * programs).  progress lets a layer that waits for its device keep the
 * rest of the MPI library moving (other communicators' requests).
 */
#ifndef GPU_BOOT_H
#define GPU_BOOT_H

#include <stddef.h>

#include "util/gpu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    /* rbuf receives bytes from every rank in rank order; collective and
     * bounded (GPU_ERR_TIMEOUT when a peer does not come) */
    gpu_status_t (*allgather)(void *ctx, const void *sbuf, void *rbuf, size_t bytes);
    /* the same without waiting: sbuf is copied, rbuf must live until test
     * returns something other than GPU_INPROGRESS; *handle set on GPU_OK */
    gpu_status_t (*iallgather)(void *ctx, const void *sbuf, void *rbuf, size_t bytes,
                               void **handle);
    /* GPU_INPROGRESS, or done (GPU_OK or an error; the handle is gone) */
    gpu_status_t (*test)(void *ctx, void *handle);
    /* one pass of the MPI library's progress (may be NULL) */
    void (*progress)(void *ctx);
} gpu_boot_ops_t;

#ifdef __cplusplus
}
#endif

#endif /* GPU_BOOT_H */
