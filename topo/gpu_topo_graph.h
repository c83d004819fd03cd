/*
 * The node graph: what one host offers to collectives, built from hwloc
 * (live, or an hwloc XML file) and, for GPU-to-GPU links, NVML.
 *
 * Design.  hwloc already knows PCI trees, NUMA nodes, packages and network
 * devices, and HPC sites trust its XML; it cannot see NVLink, so NVLink
 * counts travel as an info attribute on each GPU's PCI object
 * ("GPUCollNVLink" = "<peer busid>*<links>;..." or "nvswitch*<links>"),
 * which keeps the whole node in one hwloc XML file that lstopo still
 * reads.  From the graph, gpu_topo_plan.h builds rings, trees, rails and
 * the cost model; nothing here knows about MPI.
 *
 * Paths between two devices, best first (like nvidia-smi topo -m):
 * NVLINK, PIX (same PCIe switch), PHB (same host bridge), NODE (same
 * package, different host bridges), SYS (across packages).
 */
#ifndef GPU_TOPO_GRAPH_H
#define GPU_TOPO_GRAPH_H

#include <stddef.h>

#include "util/gpu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPU_TOPO_MAX_GPUS 16
#define GPU_TOPO_MAX_NICS 16
#define GPU_TOPO_NAME_LEN 32
#define GPU_TOPO_NVSWITCH (-2)   /* "peer" index of an NVSwitch fabric */

typedef enum {
    GPU_PATH_NVLINK = 0,
    GPU_PATH_PIX = 1,
    GPU_PATH_PHB = 2,
    GPU_PATH_NODE = 3,
    GPU_PATH_SYS = 4
} gpu_path_t;

typedef struct {
    char busid[GPU_TOPO_NAME_LEN];   /* 0000:19:00.0 */
    char name[GPU_TOPO_NAME_LEN];    /* GPU: "gpu<i>"; NIC: HCA name (mlx5_0) or netdev */
    int numa;                        /* NUMA node os_index, -1 unknown */
    int package;                     /* package (socket) os_index, -1 unknown */
    int hostbridge;                  /* id of its host bridge */
    int pciswitch;                   /* id of its nearest PCIe switch, -1 none */
    double gbps;                     /* NIC: link speed in GB/s, 0 unknown */
    char cpus[48];                   /* CPUs nearest to it, as a list ("0-31") */
} gpu_topo_dev_t;

typedef struct {
    char host[64];
    int ngpus;
    int nnics;
    gpu_topo_dev_t gpu[GPU_TOPO_MAX_GPUS];
    gpu_topo_dev_t nic[GPU_TOPO_MAX_NICS];
    int nvlinks[GPU_TOPO_MAX_GPUS][GPU_TOPO_MAX_GPUS]; /* links between two GPUs */
    int nvswitch_links[GPU_TOPO_MAX_GPUS];            /* links into an NVSwitch fabric */
    int p2p_across_packages;         /* PCIe peer access across sockets works */
    char hcas[96];                   /* RDMA devices rdma-core lists (the names UCX uses) */
    char unseen[160];                /* what discovery could not see, for the user */
} gpu_topo_node_t;

/* Path between two GPUs, and between a GPU and a NIC. */
gpu_path_t gpu_topo_gpu_path(const gpu_topo_node_t *n, int a, int b);
gpu_path_t gpu_topo_nic_path(const gpu_topo_node_t *n, int gpu, int nic);
const char *gpu_topo_path_name(gpu_path_t p);

/* NVLink count between two GPUs (direct or through an NVSwitch fabric). */
int gpu_topo_links(const gpu_topo_node_t *n, int a, int b);

/*
 * Load a node from an hwloc XML file.  Errors name the file and the
 * problem (missing, not hwloc XML, a malformed GPUCollNVLink attribute,
 * too many GPUs) in err; nothing is written to node on failure.
 */
gpu_status_t gpu_topo_load_file(const char *path, gpu_topo_node_t *node, char *err, size_t errlen);

/* This machine: hwloc with I/O discovery, NVML for NVLink (both optional
 * at run time; node->unseen says what was missing). */
gpu_status_t gpu_topo_detect(gpu_topo_node_t *node, char *err, size_t errlen);

/* Write this machine as hwloc XML with the GPUCollNVLink attributes. */
gpu_status_t gpu_topo_dump(const char *path, char *err, size_t errlen);

/* Text description, one device or link per line. */
void gpu_topo_print(const gpu_topo_node_t *n, void (*out)(void *ctx, const char *line), void *ctx);

#ifdef __cplusplus
}
#endif

#endif /* GPU_TOPO_GRAPH_H */
