/*
 * The engine: per-communicator GPU state and the device-buffer collective
 * algorithms.  It knows nothing of Open MPI; the component hands it a
 * bootstrap ops table (an allgather over the communicator's own host
 * collectives) and asks it to run collectives on device pointers.
 *
 * Layers: component -> engine (plan, algorithm choice, scratch) ->
 * {transport (ipc/), kernels/} -> topo/.
 *
 * Setup happens once per communicator (lazily, at its first device-buffer
 * collective): local info is gathered, a scratch buffer with flags is
 * allocated and mapped by every peer.  The steady-state path allocates
 * nothing and opens nothing: it fills a launch descriptor, launches one
 * kernel on the engine's own stream and waits for it.
 */
#ifndef GPU_ENGINE_H
#define GPU_ENGINE_H

#include <stddef.h>

#include "kernels/gpu_kernels.h"
#include "kernels/gpu_types.h"
#include "util/gpu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    /* rbuf receives bytes from every rank in rank order; collective */
    gpu_status_t (*allgather)(void *ctx, const void *sbuf, void *rbuf, size_t bytes);
} gpu_boot_ops_t;

typedef struct {
    size_t oneshot_max_bytes;   /* largest message for the one-shot */
    size_t twoshot_scratch;     /* bytes of two-shot scratch per rank */
    int nblocks;                /* two-shot blocks (channels) */
    int nthreads;
    int oneshot_blocks;
    gpu_algo_t algo;            /* GPU_ALGO_AUTO or forced */
    double timeout_s;
} gpu_engine_params_t;

typedef struct gpu_engine_comm gpu_engine_comm_t;

/*
 * Collective over the communicator.  GPU_ERR_UNSUPPORTED (same answer on
 * every rank) means this layout cannot use the engine: the caller stages.
 */
gpu_status_t gpu_engine_comm_create(const gpu_boot_ops_t *ops, void *ctx, int rank, int nranks,
                                    const gpu_engine_params_t *params, gpu_engine_comm_t **comm);
void gpu_engine_comm_destroy(gpu_engine_comm_t *comm);

/* Device this communicator's state lives on. */
int gpu_engine_device(const gpu_engine_comm_t *comm);

/* Chosen algorithm for a message (exposed for tests and verbose output). */
gpu_algo_t gpu_engine_choose(const gpu_engine_comm_t *comm, size_t bytes);

gpu_status_t gpu_engine_allreduce(gpu_engine_comm_t *comm, const void *in, void *out, size_t count,
                                  gpu_op_t op, gpu_dtype_t dt);

#ifdef __cplusplus
}
#endif

#endif /* GPU_ENGINE_H */
