/*
 * UCX transport for the inter-node stage.
 *
 * Design:
 * - One UCP context per process and one worker per channel, shared by
 *   every communicator (reference counted).  A communicator owns only an
 *   endpoint table per channel, created lazily from the worker addresses
 *   its ranks exchanged over the communicator's own host allgather
 *   (util/gpu_boot.h).  Channels exist so that several threads can move
 *   and fold slices of one collective at once (hier/gpu_hier_chan.c): over
 *   shared memory or TCP each transfer is a copy by one core, so one worker
 *   caps a collective at one core's copy rate.  Under MPI_THREAD_MULTIPLE
 *   the communicators of a process may run collectives on several threads
 *   at once, so there each communicator's channels get workers of their own
 *   (own_worker) instead of the process's.
 * - Tagged messaging (ucp_tag_send_nbx/recv_nbx): the collectives are
 *   sequences of matched pairwise transfers of known length, which is what
 *   tag matching expresses; UCX picks eager or rendezvous (zero-copy get)
 *   by size, so we need no memory registration or rkey exchange of our
 *   own, which RMA would require for every user buffer.
 * - Memory: ucp_context_query reports the memory types UCX handles.  Only
 *   when CUDA is among them on every rank do the algorithms pass device
 *   buffers straight to UCX (GPUDirect RDMA); otherwise the caller stages
 *   through pinned host bounce buffers (see hier/).
 * - Rails: the caller names the NIC nearest this process's GPU (from the
 *   topology plan); it becomes UCX's NET_DEVICES unless the user set
 *   UCX_NET_DEVICES, so each local GPU drives its own NIC.
 * - Progress: only while a collective waits.  The wait spins (2 ms), then
 *   backs off with sleeps, so an idle or long wait does not burn a core.
 *   Endpoints between hosts use peer error handling: a failed peer
 *   completes its requests with an error, reported with the peer's rank.
 *   Every wait is bounded by the timeout and names the peers it still
 *   waited for.
 */
#ifndef GPU_UCX_H
#define GPU_UCX_H

#include "ucx_transport/gpu_net.h"
#include "util/gpu_boot.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const char *net_devices;   /* UCX NET_DEVICES for this process (rail); NULL: UCX decides */
    double timeout_s;          /* bound of every wait */
    int direct;                /* device memory to UCX: -1 when supported, 0 never, 1 required */
    uint16_t comm_id;          /* same on every rank; distinct per live communicator */
    uint64_t host_id;          /* equal on ranks of one host (peer failure detection
                                  is asked for between hosts only) */
    int channel;               /* worker: 0..GPU_UCX_MAX_CHANNELS-1, same on every rank */
    size_t rndv_thresh;        /* UCX RNDV_THRESH unless UCX_RNDV_THRESH is set; 0: UCX's */
    int own_worker;            /* a worker of this endpoint set's own (MPI_THREAD_MULTIPLE) */
} gpu_ucx_params_t;

#define GPU_UCX_MAX_CHANNELS 16

extern const gpu_net_ops_t gpu_ucx_net_ops;

/* Collective over the bootstrap's ranks.  The returned endpoints are
 * driven by one thread at a time. */
gpu_status_t gpu_ucx_create(const gpu_boot_ops_t *ops, void *ctx, int rank, int nranks,
                            const gpu_ucx_params_t *p, gpu_net_t **out);
void gpu_ucx_destroy(gpu_net_t *n);
/* 1 when every rank's UCX takes CUDA memory (and direct use is allowed) */
int gpu_ucx_direct(const gpu_net_t *n);
/* what UCX reported at setup, for verbose output */
const char *gpu_ucx_describe(const gpu_net_t *n);

#ifdef __cplusplus
}
#endif

#endif /* GPU_UCX_H */
