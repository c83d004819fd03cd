/*
 * Device-side collective algorithms, behind extern "C" launchers.
 *
 * Every rank of a node owns one scratch allocation that all its peers have
 * mapped (CUDA IPC).  Its layout, identical on every rank, is
 *
 *   [flags]    uint64 per (block, stage, source rank): peers store a
 *              monotonically increasing value with st.release.sys and the
 *              owner polls it with ld.acquire.sys, so flags never need
 *              resetting;
 *   [one-shot] 2 buffers x nranks slots: each rank pushes its whole input
 *              into slot[rank] of every peer, then reduces its own slots;
 *              the buffer alternates per call so a slow reader of call k-1
 *              is never overwritten (one barrier per call);
 *   [two-shot] per block: nranks "recv" shards and nranks "gath" shards.
 *              Per chunk: push shard p of the input to peer p (reduce-
 *              scatter), barrier, reduce own shard in rank order and push
 *              the result to every peer's gath, barrier, copy out.  The two
 *              barriers per chunk make a single buffer safe to reuse.
 *
 * Each block synchronises only with the same block on the other ranks, so
 * blocks pipeline independently.  Every wait is bounded by timeout_ns
 * (%globaltimer); on expiry the block records who it waited for in
 * host-mapped memory and exits, and the host reports it.
 */
#ifndef GPU_KERNELS_H
#define GPU_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_types.h"
#include "util/gpu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPU_MAX_PEERS 32
#define GPU_MAX_BLOCKS 64
#define GPU_FLAG_STAGES 3
#define GPU_FLAGS_BYTES ((size_t) GPU_MAX_BLOCKS * GPU_FLAG_STAGES * GPU_MAX_PEERS * 8)

enum { GPU_STAGE_ONESHOT = 0, GPU_STAGE_SCATTER = 1, GPU_STAGE_GATHER = 2 };

typedef enum {
    GPU_ALGO_AUTO = 0,
    GPU_ALGO_ONESHOT = 1,
    GPU_ALGO_TWOSHOT = 2
} gpu_algo_t;

/* Written by a timed-out block into host-mapped memory. */
typedef struct {
    int raised;
    int peer;
    int block;
    int stage;
    unsigned long long expected;
    unsigned long long seen;
} gpu_kernel_error_t;

typedef struct {
    const void *in;
    void *out;
    size_t count;
    int nranks;
    int rank;
    int nblocks;
    int nthreads;
    char *peer_base[GPU_MAX_PEERS]; /* scratch of each rank as mapped here */
    size_t ll_off;                  /* one-shot region */
    size_t ll_slot_bytes;
    int ll_buf;
    size_t ts_off;                  /* two-shot region */
    size_t ts_block_bytes;
    size_t ts_shard_bytes;          /* this call's shard, <= block/(2 nranks) */
    unsigned long long seq;         /* flag values are (seq << 24) + step */
    unsigned long long timeout_ns;
    gpu_kernel_error_t *err;
} gpu_allreduce_args_t;

/* Launch one allreduce on stream (a cudaStream_t). */
gpu_status_t gpu_kernel_allreduce(gpu_algo_t algo, gpu_op_t op, gpu_dtype_t dt,
                                  const gpu_allreduce_args_t *args, void *stream);

/* 1 when the kernels were built for (op, dt). */
int gpu_kernel_supported(gpu_op_t op, gpu_dtype_t dt);

#ifdef __cplusplus
}
#endif

#endif /* GPU_KERNELS_H */
