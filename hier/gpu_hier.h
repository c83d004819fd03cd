/*
 * Hierarchical collectives on device buffers for communicators that span
 * nodes (real hosts, or virtual nodes carved out of one host for tests).
 *
 *   intra-node stage   the engine (engine/) on the node's ranks: exchange
 *                      kernels over CUDA IPC / NVLink
 *   inter-node stage   inter/ algorithms among one rank per node, over the
 *                      network transport (ucx_transport/)
 *
 * Allreduce, when every node has the same number of ranks L: intra-node
 * reduce-scatter into L shards, an inter-node allreduce of each shard among
 * the ranks holding it (one per node: a rail, so L NICs work at once),
 * intra-node allgather.  With uneven nodes: intra-node reduce to a leader,
 * leaders' allreduce, intra-node bcast.  Bcast and Reduce go through node
 * leaders (the root leads its node); Allgather gathers within nodes,
 * exchanges node blocks between leaders and broadcasts within nodes;
 * Reduce_scatter_block is the allreduce followed by a local copy.  Gatherv,
 * scatterv and allgatherv move node regions between leaders (gpu_hier_v.c);
 * alltoallv pairs every rank with every remote rank (gpu_hier_a2a.c); scan
 * and exscan carry node totals between nodes (gpu_hier_scan.c).
 * Which of these a call takes, its slices and its inter-node algorithm are a pure
 * function of the layout, the parameters and the size (gpu_hier_choice.h):
 * the label of every call's trace, and gpucoll-topo's plan before a run.
 *
 * Staging: when the transport cannot take device memory, the inter-node
 * stage runs on pinned host bounce slots.  The data is cut into slices of
 * at most one slot; device->host copies of the next slices are queued
 * while the network works on the current ones, and host->device copies of
 * finished slices drain behind them (a producer/consumer ring of slots, one
 * CUDA stream keeping a slot's copy-out ahead of its reuse).  Slices go
 * round-robin to channel threads, each with its own transport endpoints and
 * fold space, so the network steps and host folds of several slices run
 * at once (gpu_hier_chan.c).  With a transport that takes device memory the
 * slots are device memory and the folds run as kernels on the calling
 * thread, one slice at a time.
 *
 * Every call is blocking and must be made by every rank of the
 * communicator in the same order (the call sequence numbers its messages).
 */
#ifndef GPU_HIER_H
#define GPU_HIER_H

#include <stddef.h>

#include "engine/gpu_engine.h"
#include "hier/gpu_hier_choice.h"
#include "inter/gpu_inter.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int nranks;
    int rank;
    const int *node_of;   /* node of each rank: 0..nnodes-1 by first rank */
} gpu_hier_layout_t;

typedef struct {
    size_t slot_bytes;    /* one pipeline slice */
    int nslots;           /* slices in flight */
    double timeout_s;
    double alpha_s;       /* network model for the inter-node algorithm choice */
    double beta_Bps;
    gpu_inter_algo_t algo;
    int order_legacy;     /* wait for the application's legacy-stream work */
    int channels;         /* staged: slices moved and folded by this many threads at once */
    int device_fold;      /* staged allreduce between 2 nodes: the channels only swap the
                             slices; a kernel folds the peer's from pinned host memory */
} gpu_hier_params_t;

typedef struct gpu_hier gpu_hier_t;

/* intra: the engine over this node's ranks (in communicator rank order;
 * NULL where every node has one rank); nets: p->channels endpoint sets of
 * the transport over the whole communicator, one per channel, each used by
 * one thread.  Not collective. */
gpu_status_t gpu_hier_create(gpu_engine_comm_t *intra, const gpu_net_ops_t *net_ops,
                             gpu_net_t *const *nets, int direct,
                             const gpu_hier_layout_t *layout, const gpu_hier_params_t *p,
                             gpu_hier_t **out);
void gpu_hier_destroy(gpu_hier_t *h);

/* in == out: in place */
gpu_status_t gpu_hier_allreduce(gpu_hier_t *h, const void *in, void *out, size_t count,
                                gpu_op_t op, gpu_dtype_t dt);
gpu_status_t gpu_hier_bcast(gpu_hier_t *h, void *buf, size_t bytes, int root);
/* in NULL: MPI_IN_PLACE at the root */
gpu_status_t gpu_hier_reduce(gpu_hier_t *h, const void *in, void *out, size_t count, gpu_op_t op,
                             gpu_dtype_t dt, int root);
/* in NULL: in place (my block already at out + rank * bytes) */
gpu_status_t gpu_hier_allgather(gpu_hier_t *h, const void *in, void *out, size_t bytes);
/* in NULL: in place (the input is in out) */
gpu_status_t gpu_hier_reduce_scatter_block(gpu_hier_t *h, const void *in, void *out,
                                           size_t count, gpu_op_t op, gpu_dtype_t dt);

/* Blocks that differ in size (gpu_hier_v.c); lengths and displacements
 * in bytes, one per rank, read where MPI says they count: a gatherv's rlen
 * and rdispl and a scatterv's slen and sdispl at the root only.  uniform:
 * every block has the same length (gather, scatter), so no rank waits for
 * the root's counts.  gatherv: sbuf NULL is in place at the root;
 * scatterv: rbuf NULL is; allgatherv: sbuf NULL is in place (my block at
 * rbuf + rdispl[rank]).  Bytes outside the blocks are never written. */
gpu_status_t gpu_hier_gatherv(gpu_hier_t *h, const void *sbuf, size_t slen, void *rbuf,
                              const size_t *rlen, const size_t *rdispl, int root, int uniform);
gpu_status_t gpu_hier_scatterv(gpu_hier_t *h, const void *sbuf, const size_t *slen,
                               const size_t *sdispl, void *rbuf, size_t rlen, int root,
                               int uniform);
gpu_status_t gpu_hier_allgatherv(gpu_hier_t *h, const void *sbuf, void *rbuf, const size_t *rlen,
                                 const size_t *rdispl);
/* counts[rank] elements each (gpu_hier_v.c: the allreduce of every block,
 * then a copy of mine); in NULL: in place (the input is in out) */
gpu_status_t gpu_hier_reduce_scatterv(gpu_hier_t *h, const void *in, void *out,
                                      const size_t *counts, gpu_op_t op, gpu_dtype_t dt);
/* scan and exscan (gpu_hier_scan.c); in NULL: in place.  Nodes of
 * consecutive ranks only: GPU_ERR_UNSUPPORTED otherwise (every rank alike) */
gpu_status_t gpu_hier_scan(gpu_hier_t *h, const void *in, void *out, size_t count, gpu_op_t op,
                           gpu_dtype_t dt, int exclusive);
/* whether this layout takes scan and exscan (the same answer on every
 * rank): a caller that cannot stage after the run declines first */
int gpu_hier_scan_takes(const gpu_hier_t *h);
/* every pair its own block (gpu_hier_a2a.c); sbuf NULL: in place (the
 * blocks to send are rlen/rdispl's in rbuf).  Pairs of length 0 exchange
 * nothing, so a neighbourhood is this call with its neighbours' lengths
 * (coll_gpu_nbr.c), alltoallw with byte displacements its own */
gpu_status_t gpu_hier_alltoallv(gpu_hier_t *h, const void *sbuf, const size_t *slen,
                                const size_t *sdispl, void *rbuf, const size_t *rlen,
                                const size_t *rdispl);

/* No rank returns before every rank has called: a one-byte allreduce (node
 * engine step, node leaders or rails over the transport), whose result on
 * every rank depends on every rank's input (gpu_hier_colls.c) */
gpu_status_t gpu_hier_barrier(gpu_hier_t *h);

/* "even layout, L ranks per node" or "uneven" plus the transport, for logs */
const char *gpu_hier_describe(const gpu_hier_t *h);
/* what a call of this collective and size runs (gpu_hier_choose's label,
 * as gpucoll-topo prints it), for its trace; valid until the next call */
const char *gpu_hier_algo(gpu_hier_t *h, gpu_hier_coll_t coll, size_t bytes, size_t esz);

#ifdef __cplusplus
}
#endif

#endif /* GPU_HIER_H */
