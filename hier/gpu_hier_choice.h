/*
 * What the hierarchy does with one call, as a pure function of the job's
 * shape, the parameters and the size: which members form the inter-node
 * groups (rails or node leaders), the intra-node steps around the network
 * stage, the inter-node algorithm (inter/'s model picks the allreduce) and
 * the pipeline slices.  gpu_hier_colls.c cuts its slices and labels its
 * traces with these functions, and gpucoll-topo prints its plan with them,
 * so the plan read before a run is what the run does.  No CUDA, no
 * transport.
 */
#ifndef GPU_HIER_CHOICE_H
#define GPU_HIER_CHOICE_H

#include <stddef.h>

#include "inter/gpu_inter.h"

#ifdef __cplusplus
extern "C" {
#endif

/* coll_gpu_net_slot_bytes' and coll_gpu_net_channels' defaults (16
 * channels: a 64 MiB allreduce over UCX shared memory between 2 virtual
 * nodes on 4x H100 moved 19.6-22.7 GB/s, 8 channels 15.0-17.5: with 8 the
 * network steps of a channel's slices, not the copies, held the call) */
#define GPU_HIER_SLOT_BYTES_DEFAULT (4ul * 1024 * 1024)
#define GPU_HIER_CHANNELS_DEFAULT 16

/* the collectives the hierarchy runs, in MCA_COLL_GPU_HIER_* order; the
 * others cross nodes staged through the previous module */
typedef enum {
    GPU_HIER_ALLREDUCE = 0,
    GPU_HIER_BCAST,
    GPU_HIER_REDUCE,
    GPU_HIER_ALLGATHER,
    GPU_HIER_REDUCE_SCATTER_BLOCK,
    GPU_HIER_GATHER,      /* the blocks of every rank differ in size from here on */
    GPU_HIER_GATHERV,
    GPU_HIER_SCATTER,
    GPU_HIER_SCATTERV,
    GPU_HIER_ALLGATHERV,
    GPU_HIER_ALLTOALL,
    GPU_HIER_ALLTOALLV,
    GPU_HIER_REDUCE_SCATTER,
    GPU_HIER_SCAN,
    GPU_HIER_EXSCAN,
    /* alltoallv's pairs from here on: alltoallw (bytes per pair) and the
     * neighbourhoods (the other pairs empty; priced as if every rank were
     * a neighbour, an upper bound) */
    GPU_HIER_ALLTOALLW,
    GPU_HIER_NEIGHBOR_ALLGATHER,
    GPU_HIER_NEIGHBOR_ALLGATHERV,
    GPU_HIER_NEIGHBOR_ALLTOALL,
    GPU_HIER_NEIGHBOR_ALLTOALLV,
    GPU_HIER_NEIGHBOR_ALLTOALLW,
    GPU_HIER_NCOLLS
} gpu_hier_coll_t;

/* the job and the parameters as the hierarchy runs them */
typedef struct {
    int nnodes;
    int nranks;
    int lsize;            /* ranks on the node (the largest node's, for a plan) */
    int min_lsize;        /* the smallest node's ranks (0: lsize) */
    int even;             /* every node has lsize ranks: rails */
    size_t slot_bytes;    /* a pipeline slot, as gpu_hier_slot_bytes keeps it */
    int nchan;            /* pipeline channels (1: the calling thread alone) */
    double alpha_s;       /* the inter-node model (coll_gpu_net_latency_us, _bandwidth) */
    double beta_Bps;
    gpu_inter_algo_t algo;   /* coll_gpu_net_algorithm */
    int device_fold;      /* staged, coll_gpu_net_device_fold: 2 nodes' allreduce folds on the GPU */
} gpu_hier_model_t;

/* an intra-node step, run by the node's engine */
typedef enum {
    GPU_HIER_STEP_NONE = 0,
    GPU_HIER_STEP_COPY,   /* a device copy of the rank's own data */
    GPU_HIER_STEP_REDUCE_SCATTER,
    GPU_HIER_STEP_ALLGATHER,
    GPU_HIER_STEP_REDUCE,
    GPU_HIER_STEP_BCAST,
    GPU_HIER_STEP_GATHER,
    GPU_HIER_STEP_SCATTER,
    GPU_HIER_STEP_ALLTOALL,
    GPU_HIER_STEP_SCAN
} gpu_hier_step_t;

typedef struct {
    int rails;                     /* 1: a group per local rank; 0: node leaders */
    int pairs;                     /* alltoall: every rank with every remote rank */
    gpu_hier_step_t before, after; /* intra-node steps around the network stage */
    size_t before_bytes;           /* their nccl-tests sizes on the node */
    size_t after_bytes;
    gpu_inter_op_t net;            /* the inter-node algorithm per slice */
    size_t net_bytes;              /* through the network stage, per member */
    size_t slice;                  /* pipeline slice: net_bytes in nslices, the last one short */
    size_t nslices;
    size_t last;
    size_t net_slice;              /* a slice's bytes to the algorithm (allgather: a node block) */
    size_t net_last;
    gpu_inter_algo_t algo;         /* allreduce: the full slices' choice and the last one's */
    gpu_inter_algo_t algo_last;
    int fold_after;                /* scan, exscan: the carry folded into every result */
    int copy_after;                /* reduce_scatter_block: the caller's block copied out;
                                      allgatherv: every block out of the node regions */
    int device_fold;               /* allreduce of 2 nodes: slices swapped, folded by a kernel */
} gpu_hier_choice_t;

/* the slot gpu_hier_create makes of coll_gpu_net_slot_bytes: at least 64 KiB,
 * a multiple of 64 (whole elements of every type) */
size_t gpu_hier_slot_bytes(size_t want);
/* the pipeline slice of a range of bytes in esz-byte elements: a slot, or
 * with several channels four slices per channel, none below 256 KiB */
size_t gpu_hier_slice_len(const gpu_hier_model_t *m, size_t bytes, size_t esz);
/* gatherv, scatterv, allgatherv (gpu_hier_v.c): the piece of every node's
 * region (its ranks' blocks back to back) that one slice moves.  A gatherv's
 * or scatterv's depends on the layout and the slot alone, since a leader
 * knows no other node's region; an allgatherv's on the largest region
 * (region_bytes), which every rank knows.  Alltoall(v) (gpu_hier_a2a.c):
 * a pair's block's piece, the slot holding one to and one from every
 * remote rank of the rank with the most.  0: the slot holds no byte of
 * every region (the call stages). */
size_t gpu_hier_node_slice(const gpu_hier_model_t *m, gpu_hier_coll_t coll, size_t region_bytes);
/* an inter-node group's model fields (n, alpha, beta, algo, bcast piece,
 * fold space) as gpu_hier_group sets them */
void gpu_hier_group_model(const gpu_hier_model_t *m, gpu_inter_group_t *g);

/* bytes as the hierarchy's call takes them: allreduce, reduce, bcast the
 * buffer; allgather, reduce_scatter_block, gather(v), scatter(v) and
 * allgatherv one rank's block (the v forms' plans take every block alike).
 * GPU_ERR_UNSUPPORTED: the call stages. */
gpu_status_t gpu_hier_choose(const gpu_hier_model_t *m, gpu_hier_coll_t coll, size_t bytes,
                             size_t esz, gpu_hier_choice_t *c);
/* "hier rails: reduce-scatter/ring/allgather" and the like */
void gpu_hier_label(const gpu_hier_choice_t *c, char *buf, size_t len);
const char *gpu_hier_coll_name(gpu_hier_coll_t coll);
const char *gpu_hier_step_name(gpu_hier_step_t step);
const char *gpu_hier_net_name(gpu_inter_op_t op, gpu_inter_algo_t algo);

#ifdef __cplusplus
}
#endif

#endif /* GPU_HIER_CHOICE_H */
