/*
 * The network transport interface the inter-node algorithms (inter/) are
 * written against: tagged point-to-point between ranks of a communicator,
 * nonblocking, completed by a bounded wait.  One implementation today,
 * UCX (gpu_ucx.c); the table keeps the algorithms free of UCX types so
 * they are tested the same way whatever carries the bytes.
 *
 * Tags: the transport folds the communicator id and the sender's rank
 * into the wire tag, so a tag here only has to be unique within one
 * collective call on one communicator (the algorithms use call sequence
 * and step).  Messages between a pair are matched exactly; the received
 * length must equal the posted length (anything else is an error).
 */
#ifndef GPU_NET_H
#define GPU_NET_H

#include <stddef.h>
#include <stdint.h>

#include "util/gpu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { GPU_NET_MEM_HOST = 0, GPU_NET_MEM_CUDA = 1 } gpu_net_mem_t;

typedef struct gpu_net gpu_net_t;

/* caller-owned; filled by isend/irecv, consumed by waitall */
typedef struct {
    void *handle;   /* transport request, NULL once complete */
    int peer;
    int recv;
    size_t len;
} gpu_net_req_t;

typedef struct {
    const char *name;
    gpu_status_t (*isend)(gpu_net_t *n, int peer, const void *buf, size_t len, uint32_t tag,
                          gpu_net_mem_t mem, gpu_net_req_t *req);
    gpu_status_t (*irecv)(gpu_net_t *n, int peer, void *buf, size_t len, uint32_t tag,
                          gpu_net_mem_t mem, gpu_net_req_t *req);
    /* Bounded by the transport's timeout; on failure or expiry every
     * request is cancelled and released, the peers concerned are named in
     * the log, and the status says which (GPU_ERR_NETWORK / _TIMEOUT). */
    gpu_status_t (*waitall)(gpu_net_t *n, gpu_net_req_t *reqs, int nreqs, const char *what);
    /* Never waits: one pass of the transport's progress (progress 1), then
     * req's state: GPU_INPROGRESS, or GPU_OK / an error (logged, naming
     * the peer), req released.  For callers that may not wait (libgpucoll's
     * progress thread steps many calls at once); they bound their waits. */
    gpu_status_t (*test)(gpu_net_t *n, gpu_net_req_t *req, int progress, const char *what);
    /* abandon posted requests (after a failed post) */
    void (*cancel)(gpu_net_t *n, gpu_net_req_t *reqs, int nreqs);
    int (*rank)(const gpu_net_t *n);
    int (*size)(const gpu_net_t *n);
} gpu_net_ops_t;

#ifdef __cplusplus
}
#endif

#endif /* GPU_NET_H */
