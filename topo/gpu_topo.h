/*
 * Topology, minimal form: who shares a host with whom, which GPU (by PCI
 * bus id, the only name that means the same in every process) each rank
 * drives, and whether every pair of GPUs can reach each other by CUDA
 * peer access.  Gathered through the communicator, never by probing the
 * network.
 */
#ifndef GPU_TOPO_H
#define GPU_TOPO_H

#include <stdint.h>

#include "util/gpu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPU_TOPO_BUSID_LEN 32

/* What each rank contributes; plain bytes, exchanged with allgather. */
typedef struct {
    uint64_t host_hash;  /* hostname + boot id */
    int32_t device;      /* ordinal in the contributing process */
    int32_t sms;         /* its multiprocessors (0: unknown) */
    char busid[GPU_TOPO_BUSID_LEN];
} gpu_topo_rank_info_t;

typedef struct {
    int nranks;
    int rank;
    int all_on_one_host;
    int local_rank;      /* order among ranks of my host */
    int local_size;
    int ndevices;        /* distinct GPUs used on my host */
    int p2p_all;         /* every pair of local GPUs has peer access */
    int nnodes;          /* distinct hosts in the communicator */
    int node_index;      /* my host's place in node order (first rank on it) */
} gpu_topo_comm_t;

uint64_t gpu_topo_host_hash(void);
/* A host is what both the MPI library (node_key: same on ranks it calls
 * node-local) and the host hash agree on. */
uint64_t gpu_topo_host_id(uint64_t host_hash, unsigned long long node_key);

gpu_status_t gpu_topo_local_info(int device, gpu_topo_rank_info_t *info);

/* Pure function of the gathered table plus peer-access queries; with
 * can_access NULL, peer access is assumed (used by unit tests). */
typedef int (*gpu_topo_can_access_fn_t)(const char *busid_a, const char *busid_b);
gpu_status_t gpu_topo_build(const gpu_topo_rank_info_t *all, int nranks, int rank,
                            gpu_topo_can_access_fn_t can_access, gpu_topo_comm_t *topo);

/* peer-access query through the CUDA runtime */
int gpu_topo_cuda_can_access(const char *busid_a, const char *busid_b);

#ifdef __cplusplus
}
#endif

#endif /* GPU_TOPO_H */
