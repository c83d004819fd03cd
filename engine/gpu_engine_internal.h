/*
 * Engine internals shared by its files (gpu_engine.c: setup, scratch and
 * allreduce; gpu_engine_xchg.c: the exchange collectives and requests).
 */
#ifndef GPU_ENGINE_INTERNAL_H
#define GPU_ENGINE_INTERNAL_H

#include <cuda_runtime_api.h>

#include "engine/gpu_engine.h"
#include "ipc/gpu_ipc.h"
#include "topo/gpu_topo.h"
#include "util/gpu_cuda_check.h"

#define GPU_ENGINE_EVENTS 64

struct gpu_engine_comm {
    int rank;
    int nranks;
    int device;
    int broken;
    gpu_engine_params_t p;
    gpu_topo_comm_t topo;
    const gpu_transport_ops_t *tr;
    char *scratch;
    char *peer_base[GPU_MAX_PEERS];
    size_t ll_off, ll_slot, ts_off, ts_block;
    cudaStream_t stream;
    gpu_kernel_error_t *err_host;
    gpu_kernel_error_t *err_dev;
    unsigned long long seq;
    unsigned long long oneshot_calls;
    size_t xg_flags_off, xg_slots_off, xg_slot;
    cudaEvent_t legacy_ev;                   /* orders us after the legacy stream */
    cudaEvent_t events[GPU_ENGINE_EVENTS];   /* free pool for requests */
    int nevents;
    double t_launch, t_submit;
    char busid[GPU_MAX_PEERS][GPU_TOPO_BUSID_LEN];   /* each rank's GPU */
};


/* Make the next launch wait for work the application queued on the legacy
 * default stream (the engine's stream does not block on it, so legacy work
 * queued later never waits for a collective that waits for a peer). */
gpu_status_t gpu_engine_order(gpu_engine_comm_t *c);
/* May this call run here: the communicator is healthy (else INVALID), the
 * caller's current device is ours and, when reducing, the kernels know
 * (op, dt) (else UNSUPPORTED: the caller stages). */
gpu_status_t gpu_engine_enter(gpu_engine_comm_t *c, int reduces, gpu_op_t op, gpu_dtype_t dt);
/* Wait for everything launched so far; what names the call in errors. */
gpu_status_t gpu_engine_wait(gpu_engine_comm_t *c, const char *what);
/* Blocking (req NULL): wait; otherwise record completion into req. */
gpu_status_t gpu_engine_finish(gpu_engine_comm_t *c, const char *what, gpu_engine_req_t *req);

#endif /* GPU_ENGINE_INTERNAL_H */
