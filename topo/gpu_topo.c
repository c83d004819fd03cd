#include "topo/gpu_topo.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

/* FNV-1a: stable across processes and builds. */
static uint64_t gpu_topo_fnv(uint64_t h, const char *s)
{
    for (; '\0' != *s; ++s) {
        h ^= (unsigned char) *s;
        h *= 1099511628211ull;
    }
    return h;
}

uint64_t gpu_topo_host_hash(void)
{
    char host[256] = "", boot[64] = "";
    FILE *f;
    uint64_t h = 1469598103934665603ull;

    gethostname(host, sizeof(host) - 1);
    /* containers can share a hostname; the boot id tells kernels apart */
    f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (NULL != f) {
        if (NULL == fgets(boot, sizeof(boot), f)) {
            boot[0] = '\0';
        }
        fclose(f);
    }
    return gpu_topo_fnv(gpu_topo_fnv(h, host), boot);
}

uint64_t gpu_topo_host_id(uint64_t host_hash, unsigned long long node_key)
{
    return host_hash ^ (node_key + 1) * 0x9e3779b97f4a7c15ull;
}

gpu_status_t gpu_topo_local_info(int device, gpu_topo_rank_info_t *info)
{
    gpu_topo_rank_info_t tmp;
    cudaError_t err;

    memset(&tmp, 0, sizeof(tmp));
    tmp.host_hash = gpu_topo_host_hash();
    tmp.device = device;
    if (cudaSuccess != cudaDeviceGetAttribute(&tmp.sms, cudaDevAttrMultiProcessorCount, device)) {
        tmp.sms = 0;
    }
    err = cudaDeviceGetPCIBusId(tmp.busid, GPU_TOPO_BUSID_LEN, device);
    if (cudaSuccess != err) {
        GPU_ERROR("cudaDeviceGetPCIBusId(%d): %s", device, cudaGetErrorString(err));
        return GPU_ERR_CUDA;
    }
    *info = tmp;
    return GPU_OK;
}

int gpu_topo_cuda_can_access(const char *busid_a, const char *busid_b)
{
    int a, b, ok = 0;
    if (cudaSuccess != cudaDeviceGetByPCIBusId(&a, busid_a) ||
        cudaSuccess != cudaDeviceGetByPCIBusId(&b, busid_b)) {
        return 0;
    }
    if (a == b) {
        return 1;
    }
    return cudaSuccess == cudaDeviceCanAccessPeer(&ok, a, b) && ok;
}

gpu_status_t gpu_topo_build(const gpu_topo_rank_info_t *all, int nranks, int rank,
                            gpu_topo_can_access_fn_t can_access, gpu_topo_comm_t *topo)
{
    gpu_topo_comm_t t;
    int i, j;

    if (NULL == all || nranks < 1 || rank < 0 || rank >= nranks) {
        return GPU_ERR_INVALID;
    }
    memset(&t, 0, sizeof(t));
    t.nranks = nranks;
    t.rank = rank;
    t.all_on_one_host = 1;
    t.p2p_all = 1;
    for (i = 0; i < nranks; ++i) {
        int first_use = 1;
        if (all[i].host_hash != all[rank].host_hash) {
            t.all_on_one_host = 0;
            continue;
        }
        if (i < rank) {
            t.local_rank++;
        }
        t.local_size++;
        for (j = 0; j < i; ++j) {
            if (all[j].host_hash != all[i].host_hash) {
                continue;
            }
            if (0 == strncmp(all[j].busid, all[i].busid, GPU_TOPO_BUSID_LEN)) {
                first_use = 0;
            } else if (NULL != can_access &&
                       (!can_access(all[i].busid, all[j].busid) ||
                        !can_access(all[j].busid, all[i].busid))) {
                t.p2p_all = 0;
            }
        }
        t.ndevices += first_use;
    }
    /* node order: hosts in the order of their lowest rank */
    for (i = 0; i < nranks; ++i) {
        int first = 1;
        for (j = 0; j < i && first; ++j) {
            first = all[j].host_hash != all[i].host_hash;
        }
        if (first) {
            if (all[i].host_hash == all[rank].host_hash) {
                t.node_index = t.nnodes;
            }
            t.nnodes++;
        }
    }
    *topo = t;
    return GPU_OK;
}
