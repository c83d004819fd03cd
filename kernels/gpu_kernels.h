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
 *   [two-shot] per block, in the large area (data_base: the process's
 *              pool, shared by its communicators; its flags stay here, in
 *              the communicator's own area): nranks "recv" shards and
 *              nranks "gath" shards.
 *              Per chunk: push shard p of the input to peer p (reduce-
 *              scatter), barrier, reduce own shard in rank order and push
 *              the result to every peer's gath, barrier, copy out.  The two
 *              barriers per chunk make a single buffer safe to reuse.
 *              With a root (MPI_Reduce), the result goes to the root's
 *              gath only and only the root copies out: its links take in
 *              2(n-1)/n of the message instead of n-1 whole buffers.
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
#define GPU_MAX_BLOCKS 128
#define GPU_FLAG_STAGES 3
#define GPU_FLAGS_BYTES ((size_t) GPU_MAX_BLOCKS * GPU_FLAG_STAGES * GPU_MAX_PEERS * 8)

enum {
    GPU_STAGE_ONESHOT = 0,
    GPU_STAGE_SCATTER = 1,
    GPU_STAGE_GATHER = 2,
    GPU_STAGE_XSEND = 3,   /* exchange: waiting for a receiver to free a slot */
    GPU_STAGE_XRECV = 4,   /* exchange: waiting for a sender's chunk */
    GPU_STAGE_LL = 5,      /* persistent: waiting for a writer's lines */
    GPU_STAGE_LLACK = 6,   /* persistent: waiting for a reader to free a slot */
    GPU_STAGE_PUT = 7      /* put kernel: waiting for a writer's blocks (gpu_put.h) */
};

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
    char *peer_base[GPU_MAX_PEERS]; /* scratch of each rank as mapped here: flags, one-shot */
    char *data_base[GPU_MAX_PEERS]; /* two-shot blocks of each rank (the pool, shared by
                                       communicators: data only, never flags) */
    size_t ll_off;                  /* one-shot region */
    size_t ll_slot_bytes;
    int ll_buf;
    size_t ts_off;                  /* two-shot region */
    size_t ts_block_bytes;
    size_t ts_shard_bytes;          /* this call's shard, <= block/(2 nranks) */
    int root;                       /* two-shot: -1 allreduce; else a reduce whose result
                                       only this rank receives (out is ignored elsewhere) */
    unsigned long long seq;         /* flag values are (seq << 24) + step */
    unsigned long long timeout_ns;
    gpu_kernel_error_t *err;
} gpu_allreduce_args_t;

/*
 * The exchange kernel: every collective other than allreduce is a set of
 * pairwise transfers "my bytes [src, len) to peer p" that land either in
 * place (COPY: bcast, gather, scatter, allgather, alltoall and their v
 * forms) or are folded in rank order with the local contribution
 * (REDUCE: reduce, reduce_scatter, scan, exscan).  Both ends of a pair
 * know its length (MPI requires matching signatures), so both cut it into
 * the same chunks: chunk i travels through the receiver's slot
 * (source, block i % nb, parity) and is handed over with two per-pair
 * counters, "ready" (written by the sender into the receiver's flags) and
 * "freed" (written back by the receiver).  Each block keeps its own
 * cumulative counts in device memory, so no host bookkeeping and no
 * global barrier is needed and pairs with nothing to say never talk.
 *
 * Scratch (per rank): flags region [ready | freed | sent | recvd], each
 * GPU_MAX_PEERS x GPU_MAX_BLOCKS uint64, in the communicator's own area
 * (peer_base + flags_off); slots [source][block][parity] of slot_bytes
 * each in the large area (data_base + slots_off: the pool, data only).
 */
#define GPU_XCHG_MIN_CHUNK ((size_t) 4096)
#define GPU_XCHG_FLAGS_BYTES ((size_t) 4 * GPU_MAX_PEERS * GPU_MAX_BLOCKS * 8)

typedef enum { GPU_XCHG_COPY = 0, GPU_XCHG_REDUCE = 1 } gpu_xchg_mode_t;

typedef struct {
    int mode;                         /* gpu_xchg_mode_t */
    int relay;                        /* receive a chunk before sending it on (chains) */
    int in_place;                     /* output overwrites input still to be sent: the
                                         same block must send a chunk before it lands */
    const char *send_src[GPU_MAX_PEERS];
    size_t send_len[GPU_MAX_PEERS];   /* bytes to peer p (0: nothing) */
    char *recv_dst[GPU_MAX_PEERS];    /* COPY: where source s's bytes land */
    size_t recv_len[GPU_MAX_PEERS];   /* bytes from source s */
    const char *red_self;             /* REDUCE: my contribution, if in range */
    char *red_out;
    size_t red_len;                   /* bytes from every source in range */
    int red_lo, red_hi;               /* sources folded in rank order */
    const char *self_src;             /* local copy done by the same launch */
    char *self_dst;
    size_t self_len;
    size_t ll_bytes;                  /* the largest pair of the whole collective when
                                         every rank knows it (0: unknown, as in
                                         alltoallv): picks the persistent engine */
    /* A pair may carry a second piece behind its first: a neighbourhood
     * whose neighbour is one rank in both directions of a dimension moves
     * both blocks in one call instead of a call each (see gpu_xchg_two).
     * *_first is the first piece's bytes, 0 for a pair of one piece. */
    size_t send_first[GPU_MAX_PEERS];
    const char *send_src2[GPU_MAX_PEERS];
    size_t recv_first[GPU_MAX_PEERS];
    char *recv_dst2[GPU_MAX_PEERS];
    /* One rank's bytes go to every other (bcast): the put path
     * (engine/gpu_engine_put.c) reads them from the root rather than the
     * root writing them (2x H100, 256 MiB-1 GiB: 1.01-1.03x NCCL read,
     * 0.99-1.00x written); the same on every rank. */
    int one_way;
} gpu_xchg_plan_t;

typedef struct {
    gpu_xchg_plan_t plan;
    int nranks;
    int rank;
    int nblocks;                      /* this launch's grid */
    int nthreads;
    int nb_max;                       /* block count every rank uses to cut pairs */
    int split;                        /* grid = senders + receivers (non-relay plans) */
    char *peer_base[GPU_MAX_PEERS];   /* flags: the communicator's own small area */
    char *data_base[GPU_MAX_PEERS];   /* slots: each rank's large area (the pool) */
    size_t flags_off;
    size_t slots_off;
    size_t slot_bytes;
    unsigned long long timeout_ns;
    gpu_kernel_error_t *err;
} gpu_xchg_args_t;

/*
 * Chunking of one pair, identical at both ends and in the unit tests.  A
 * direct pair takes one chunk per block where the slots allow; a chain
 * (relay: every rank of it is) at least GPU_XCHG_RELAY_ROUNDS per block, so
 * that a hop forwards chunk k while the next one arrives: with one chunk
 * per block each hop waited for the whole of the previous one (4x H100:
 * a 32 MiB reduce along 4 ranks took 340 us, 98 GB/s).
 */
#define GPU_XCHG_RELAY_ROUNDS 8
#ifdef __CUDACC__
#define GPU_XCHG_HD __host__ __device__ __forceinline__
#else
#define GPU_XCHG_HD static inline
#endif
GPU_XCHG_HD size_t gpu_xchg_chunk(size_t len, size_t slot_bytes, int nb_max, int relay)
{
    const size_t per = (size_t) nb_max * (relay ? GPU_XCHG_RELAY_ROUNDS : 1);
    size_t c = (len + per - 1) / per;
    c = (c + 15) / 16 * 16;
    c = c < GPU_XCHG_MIN_CHUNK ? GPU_XCHG_MIN_CHUNK : c;
    return c > slot_bytes ? slot_bytes : c;
}
GPU_XCHG_HD int gpu_xchg_pair_blocks(size_t len, size_t chunk, int nb_max)
{
    size_t n = (len + chunk - 1) / chunk;
    return n < (size_t) nb_max ? (int) n : nb_max;
}

/*
 * A pair of two pieces is, to both ends' chunking, one run of bytes: the
 * first piece, padding up to gpu_xchg_cut(first), the second piece (its
 * send_len / recv_len count all three).  The padding keeps every chunk and
 * LL line inside one piece and the second piece 16-byte aligned in a slot;
 * it is never read nor written.  Both ends know both lengths (matching
 * signatures), so they cut alike.
 */
GPU_XCHG_HD size_t gpu_xchg_cut(size_t first)
{
    return (first + 15) / 16 * 16;
}
/* Bytes [off, off + len) of a pair: *n1 of them are the first piece's at
 * offset off, *n2 the second piece's at offset *o2, which come *at2 bytes
 * into the range.  first 0: all of it is the first piece. */
GPU_XCHG_HD void gpu_xchg_two(size_t first, size_t off, size_t len, size_t *n1, size_t *at2,
                              size_t *o2, size_t *n2)
{
    const size_t end = off + len, cut = gpu_xchg_cut(first);
    const size_t lo2 = off > cut ? off : cut;
    if (0 == first) {
        *n1 = len;
        *at2 = len;
        *o2 = 0;
        *n2 = 0;
        return;
    }
    *n1 = off < first ? (end < first ? end : first) - off : 0;
    *at2 = lo2 - off;
    *o2 = lo2 - cut;
    *n2 = end > lo2 ? end - lo2 : 0;
}

gpu_status_t gpu_kernel_xchg(gpu_op_t op, gpu_dtype_t dt, const gpu_xchg_args_t *args,
                             void *stream);

/* Launch one allreduce on stream (a cudaStream_t). */
gpu_status_t gpu_kernel_allreduce(gpu_algo_t algo, gpu_op_t op, gpu_dtype_t dt,
                                  const gpu_allreduce_args_t *args, void *stream);

/* 1 when the kernels were built for (op, dt). */
int gpu_kernel_supported(gpu_op_t op, gpu_dtype_t dt);

/* acc[i] = acc[i] op x[i] on the GPU (queued on stream), and on the CPU
 * with the same functors (returns 0 for pairs MPI does not define): the
 * inter-node stage folds received data with these. */
gpu_status_t gpu_kernel_reduce_local(void *acc, const void *x, size_t count, gpu_op_t op,
                                     gpu_dtype_t dt, void *stream);
int gpu_reduce_host(void *acc, const void *x, size_t count, gpu_op_t op, gpu_dtype_t dt);
/* every fold kernel of gpu_kernel_reduce_local loaded now (CUDA's lazy
 * loading may make a first launch wait for the whole device, which a call
 * of the hierarchy's thread must never do: coll_gpu_hier_nb.c) */
gpu_status_t gpu_kernel_fold_preload(void);

/* One process's own buffers, for the op component (kernels/gpu_local.cu),
 * queued on stream, operands in the order of Open MPI's host functions:
 * out[i] = in1[i] op in2[i], out may be in1 or in2 (MPI_Reduce_local:
 * in1 = out = inout).  GPU_ERR_UNSUPPORTED: the pair is not
 * defined, or this process cannot run the kernels at all (no image for the
 * device, a driver older than the runtime): compute on the host. */
gpu_status_t gpu_local_reduce3(gpu_op_t op, gpu_dtype_t dt, const void *in1, const void *in2,
                               void *out, size_t count, void *stream);
/* 1 when a cudaError_t says the same for any CUDA runtime call */
int gpu_local_cannot_run(int cuda_error);
/* Loads every local reduction kernel into the current device's context
 * (a first launch under lazy loading may wait for the whole device). */
gpu_status_t gpu_local_preload(void);

/* Every rank's allreduce at once, by one process that maps every rank's
 * buffers (ranks time-slicing one GPU, engine/gpu_engine_direct.c):
 * out[r][i] = in[0][i] op ... op in[n-1][i], folded in rank order, for every
 * r.  Each element's inputs are all read before its outputs are written,
 * so in[r] == out[r] (in place) is fine.  Queued on stream. */
typedef struct {
    const void *in[GPU_MAX_PEERS];
    void *out[GPU_MAX_PEERS];
    int nranks;
} gpu_direct_args_t;
gpu_status_t gpu_kernel_allreduce_direct(const gpu_direct_args_t *args, size_t count,
                                         gpu_op_t op, gpu_dtype_t dt, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GPU_KERNELS_H */
