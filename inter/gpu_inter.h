/*
 * Inter-node algorithms: collectives among one member per node (a rail:
 * the ranks with the same local index on every node, or the node
 * leaders), written against the network ops table (ucx_transport/
 * gpu_net.h) and run on whatever memory the transport accepts: pinned
 * host bounce buffers (staged) or device memory (UCX with CUDA support).
 *
 *   allreduce       ring reduce-scatter + ring allgather for bandwidth,
 *                   recursive doubling (folding the members beyond a
 *                   power of two) for latency; the alpha-beta model of
 *                   the group picks the cheaper for the message
 *   reduce_scatter  ring, member i ends with segment i
 *   allgatherv      ring, blocks of any length
 *   bcast           binomial tree, pipelined in pieces
 *   reduce          binomial tree
 *
 * Everything is in place on one buffer.  Received data that must be
 * folded lands in the group's tmp space first (same memory type), in
 * pieces of at most tmp_bytes, so tmp bounds the memory whatever the
 * message.  Folding goes through the caller's reduce hook: CPU functors
 * for host memory, a kernel for device memory.
 */
#ifndef GPU_INTER_H
#define GPU_INTER_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/gpu_types.h"
#include "ucx_transport/gpu_net.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    /* acc = acc op x; done (visible to the next send) on return */
    gpu_status_t (*reduce)(void *ctx, void *acc, const void *x, size_t count, gpu_op_t op,
                           gpu_dtype_t dt);
} gpu_inter_reduce_ops_t;

#define GPU_INTER_MAX_MEMBERS 1024

typedef enum { GPU_INTER_AUTO = 0, GPU_INTER_RING = 1, GPU_INTER_RD = 2 } gpu_inter_algo_t;

typedef struct {
    const gpu_net_ops_t *net;
    gpu_net_t *conn;
    int n;                       /* members */
    int me;                      /* my member index */
    const int *ranks;            /* member -> transport rank */
    gpu_net_mem_t mem;
    const gpu_inter_reduce_ops_t *red;
    void *red_ctx;
    char *tmp;                   /* receive space for folds */
    size_t tmp_bytes;
    size_t piece;                /* bcast pipeline piece (0: whole) */
    uint32_t tag;                /* high 16 bits: call; the algorithms count steps below */
    double alpha_s;              /* per-message latency */
    double beta_Bps;             /* per-link bandwidth */
    gpu_inter_algo_t algo;       /* allreduce: forced or AUTO */
} gpu_inter_group_t;

gpu_status_t gpu_inter_allreduce(gpu_inter_group_t *g, void *buf, size_t count, gpu_op_t op,
                                 gpu_dtype_t dt);
/* two members: each sends sbuf and receives the other's bytes into rbuf
 * (an allreduce whose fold the caller does elsewhere: on the GPU) */
gpu_status_t gpu_inter_swap(gpu_inter_group_t *g, const void *sbuf, void *rbuf, size_t bytes);
/* seg_off/seg_count in elements, one per member */
gpu_status_t gpu_inter_reduce_scatter(gpu_inter_group_t *g, void *buf, const size_t *seg_off,
                                      const size_t *seg_count, gpu_op_t op, gpu_dtype_t dt);
/* off/len in bytes, one block per member; my block is in place */
gpu_status_t gpu_inter_allgatherv(gpu_inter_group_t *g, void *buf, const size_t *off,
                                  const size_t *len);
gpu_status_t gpu_inter_bcast(gpu_inter_group_t *g, void *buf, size_t bytes, int root);
/* the result lands in root's buf; other members' buf is clobbered */
gpu_status_t gpu_inter_reduce(gpu_inter_group_t *g, void *buf, size_t count, gpu_op_t op,
                              gpu_dtype_t dt, int root);

/*
 * The alpha-beta model of the algorithms above (gpu_inter_cost.c, pure: no
 * transport).  A call costs msgs * alpha + bytes / beta along its critical
 * path: one member's messages in order, a step's send and receive
 * overlapping.  AUTO picks the allreduce by it; gpucoll-topo prices its plans
 * by it, and test/topo/calibrate_net.py fits alpha and beta to a sweep.
 * The defaults are coll_gpu_net_latency_us and coll_gpu_net_bandwidth's.
 */
#define GPU_INTER_ALPHA_US_DEFAULT 10.0
#define GPU_INTER_BETA_GBS_DEFAULT 12.5

typedef enum {
    GPU_INTER_OP_ALLREDUCE,   /* bytes: the buffer */
    GPU_INTER_OP_ALLGATHER,   /* bytes: the largest member's block */
    GPU_INTER_OP_BCAST,       /* bytes: the buffer, in pieces of g->piece */
    GPU_INTER_OP_REDUCE,      /* bytes: the buffer, folded in pieces of g->tmp_bytes */
    GPU_INTER_OP_GATHER,      /* bytes: every member's piece, straight to the root */
    GPU_INTER_OP_SCATTER,     /* bytes: every member's piece, straight from the root */
    GPU_INTER_OP_ALLTOALL     /* bytes: what a rank swaps with each other node, in pairs */
} gpu_inter_op_t;

typedef struct {
    double msgs;              /* messages on the critical path */
    double bytes;             /* bytes on the critical path */
} gpu_inter_terms_t;

/* what AUTO picks for a message of this size (the model above; g's n,
 * alpha_s, beta_Bps and algo are read) */
gpu_inter_algo_t gpu_inter_allreduce_choice(const gpu_inter_group_t *g, size_t bytes);
/* the critical path of one call on g (allreduce: of the algorithm g takes) */
gpu_inter_terms_t gpu_inter_terms(const gpu_inter_group_t *g, gpu_inter_op_t op, size_t bytes);
double gpu_inter_time_s(const gpu_inter_group_t *g, gpu_inter_terms_t t);

#ifdef __cplusplus
}
#endif

#endif /* GPU_INTER_H */
