/*
 * Plans and prices.  From a node graph (gpu_topo_graph.h) and a job shape
 * (nodes x GPUs per node), build once per communicator:
 *
 *   - the intra-node ring: the GPU order whose slowest hop is fastest
 *     (NVLink first; among PCIe orders, fewest hops that leave a switch,
 *     then a socket), found exhaustively up to 9 GPUs, by greedy + 2-opt
 *     above;
 *   - the channel count the ring's slowest hop can feed;
 *   - a double binary tree over the nodes (for an even node count each
 *     node is interior in at most one of the two trees, so both halves of
 *     the traffic find an idle link), for latency-bound inter-node steps;
 *   - the rail map: each local GPU's nearest NIC (PIX, PHB, NODE, SYS),
 *     spreading GPUs over NICs of equal distance.
 *
 * The cost model prices a collective on a plan: the kernel the engine
 * takes for its size (topo/gpu_topo_choice.h), each with a latency and a
 * bandwidth term whose constants were fitted to a measured sweep
 * (gpu_topo_model_h200 on 2x H200, gpu_topo_model_h100x4 on 4x H100).  Inter-node
 * constants are NIC line rates and textbook latencies, not measured here.
 */
#ifndef GPU_TOPO_PLAN_H
#define GPU_TOPO_PLAN_H

#include <stddef.h>

#include "topo/gpu_topo_graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPU_TOPO_MAX_NODES 1024

typedef struct {
    int nnodes;
    int nlocal;                           /* GPUs per node in the job */
    int ring[GPU_TOPO_MAX_GPUS];          /* GPU indices in ring order */
    double ring_gbps;                     /* slowest hop of the ring, GB/s */
    gpu_path_t ring_worst;
    int nchannels;
    int tree_parent[2][GPU_TOPO_MAX_NODES];       /* -1: root */
    int tree_child[2][GPU_TOPO_MAX_NODES][2];     /* -1: none */
    int tree_root[2];
    int rail[GPU_TOPO_MAX_GPUS];          /* NIC index per local GPU, -1 none */
    gpu_path_t rail_path[GPU_TOPO_MAX_GPUS];
} gpu_topo_plan_t;

/* The launched kernels' classes: one-shot allreduce, two-shot allreduce,
 * a bcast's chain (or the root writing every peer), the exchange kernel,
 * the put path's copies (allgather, alltoall), its fold (reduce_scatter)
 * and its spread bcast. */
enum {
    GPU_TOPO_ONESHOT = 0,
    GPU_TOPO_TWOSHOT,
    GPU_TOPO_CHAIN,
    GPU_TOPO_EXCHANGE,
    GPU_TOPO_PUT,
    GPU_TOPO_PUT_FOLD,
    GPU_TOPO_PUT_SPREAD,
    GPU_TOPO_NCLASSES
};

typedef struct {
    const char *name;
    double nvlink_gbps;      /* effective per link and direction */
    double pcie_gbps[5];     /* by path: -, PIX, PHB, NODE, SYS (SYS without P2P: host bounce) */
    double chan_gbps;        /* what one channel moves */
    /* intra-node kernels (the choice's, topo/gpu_topo_choice.h):
     * t = lat + bytes_on_wire / (bw * eff) + fill * (1 - exp(-b/w)) */
    double lat_us[GPU_TOPO_NCLASSES];
    double eff[GPU_TOPO_NCLASSES];
    double fill_us[GPU_TOPO_NCLASSES];
    double fill_bytes[GPU_TOPO_NCLASSES];
    double oneshot_max;      /* allreduce switches algorithm here */
    /* the resident kernel (single node, a message per peer up to
     * persist_max, up to persist_reduce_max when it reduces; 0: none),
     * same form, for allreduce, bcast/reduce, copy exchanges (allgather,
     * alltoall) and reducing ones (reduce_scatter) */
    double res_lat_us[4];
    double res_eff[4];
    double res_fill_us[4];
    double res_fill_bytes[4];
    double persist_max;
    double persist_reduce_max;
    double net_lat_us;       /* inter-node message */
    double nic_gbps;         /* NIC rate when the graph has none */
} gpu_topo_model_t;

extern const gpu_topo_model_t gpu_topo_model_h200;
extern const gpu_topo_model_t gpu_topo_model_h100x4;
/* The calibration closest to a plan's node: 4x H100 from 4 GPUs joined by
 * NVLink (the 4-GPU crossovers and put path), 2x H200 otherwise.  Both are
 * NVLink hosts: on PCIe the times scale with the plan's slowest hop, with
 * constants never measured there (gpucoll-topo says so). */
const gpu_topo_model_t *gpu_topo_model_for(const gpu_topo_plan_t *plan);

typedef enum {
    GPU_COLL_ALLREDUCE = 0,
    GPU_COLL_ALLGATHER = 1,
    GPU_COLL_REDUCE_SCATTER = 2,
    GPU_COLL_BCAST = 3,
    GPU_COLL_NCOLLS = 4
} gpu_coll_t;

const char *gpu_coll_name(gpu_coll_t c);

gpu_status_t gpu_topo_plan_build(const gpu_topo_node_t *node, int nnodes, int nlocal,
                                 const gpu_topo_model_t *model, gpu_topo_plan_t *plan);

/* Bandwidth of the path between two GPUs of the node under the model. */
double gpu_topo_hop_gbps(const gpu_topo_node_t *node, const gpu_topo_model_t *model, int a,
                         int b);

/* Predicted time (us) and nccl-tests bus bandwidth (GB/s) of a collective
 * of the given nccl-tests size; *algo names the algorithm priced. */
double gpu_topo_predict(const gpu_topo_node_t *node, const gpu_topo_plan_t *plan,
                        const gpu_topo_model_t *model, gpu_coll_t coll, double bytes,
                        double *busbw, const char **algo);

/* A node step of a collective across nodes (hier/): the launched kernels on
 * the plan's nlocal GPUs (no resident kernel, no one-shot there), priced by
 * their algorithm class; bytes is the step's nccl-tests size. */
typedef enum {
    GPU_TOPO_STEP_REDUCE_SCATTER = 0,
    GPU_TOPO_STEP_ALLGATHER = 1,
    GPU_TOPO_STEP_REDUCE = 2,
    GPU_TOPO_STEP_BCAST = 3
} gpu_topo_step_t;

double gpu_topo_step_us(const gpu_topo_plan_t *plan, const gpu_topo_model_t *model,
                        gpu_topo_step_t step, double bytes);
/* A copy between a GPU and pinned host memory (the staged network slots). */
double gpu_topo_host_copy_us(const gpu_topo_model_t *model, double bytes);

/* The rail of the GPU with this PCI bus id as UCX names the device (a
 * verbs port "mlx5_0:1", or a network interface "eth0"); "" when the node
 * has no NIC or no such GPU.  Pure function of the node graph. */
void gpu_topo_rail_name(const gpu_topo_node_t *node, const char *busid, char *name, size_t len);

/* The plan as text, one line per ring, channel set, tree and rail. */
void gpu_topo_plan_print(const gpu_topo_node_t *node, const gpu_topo_plan_t *plan,
                         void (*out)(void *ctx, const char *line), void *ctx);

#ifdef __cplusplus
}
#endif

#endif /* GPU_TOPO_PLAN_H */
