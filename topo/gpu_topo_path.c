/* Paths between devices of a node graph (no discovery here). */
#include "topo/gpu_topo_graph.h"

#include <stdio.h>

int gpu_topo_links(const gpu_topo_node_t *n, int a, int b)
{
    int direct = n->nvlinks[a][b] > n->nvlinks[b][a] ? n->nvlinks[a][b] : n->nvlinks[b][a];
    int sw = n->nvswitch_links[a] < n->nvswitch_links[b] ? n->nvswitch_links[a]
                                                         : n->nvswitch_links[b];
    return a == b ? 0 : (direct > sw ? direct : sw);
}

static gpu_path_t gpu_topo_pci_path(const gpu_topo_dev_t *x, const gpu_topo_dev_t *y)
{
    if (x->pciswitch >= 0 && x->pciswitch == y->pciswitch) {
        return GPU_PATH_PIX;
    }
    if (x->hostbridge >= 0 && x->hostbridge == y->hostbridge) {
        return GPU_PATH_PHB;
    }
    if (x->package >= 0 && x->package == y->package) {
        return GPU_PATH_NODE;
    }
    return GPU_PATH_SYS;
}

gpu_path_t gpu_topo_gpu_path(const gpu_topo_node_t *n, int a, int b)
{
    return gpu_topo_links(n, a, b) > 0 ? GPU_PATH_NVLINK : gpu_topo_pci_path(&n->gpu[a], &n->gpu[b]);
}

gpu_path_t gpu_topo_nic_path(const gpu_topo_node_t *n, int gpu, int nic)
{
    return gpu_topo_pci_path(&n->gpu[gpu], &n->nic[nic]);
}

const char *gpu_topo_path_name(gpu_path_t p)
{
    static const char *names[] = { "NVLINK", "PIX", "PHB", "NODE", "SYS" };
    return (unsigned) p < 5 ? names[p] : "?";
}

void gpu_topo_print(const gpu_topo_node_t *n, void (*out)(void *ctx, const char *line), void *ctx)
{
    char line[256];
    int a, b;
    snprintf(line, sizeof(line), "node %s: %d GPUs, %d NICs%s%s", n->host, n->ngpus, n->nnics,
             n->unseen[0] ? "; not seen: " : "", n->unseen);
    out(ctx, line);
    if (n->hcas[0]) {
        snprintf(line, sizeof(line), "  RDMA devices (rdma-core): %s", n->hcas);
        out(ctx, line);
    }
    for (a = 0; a < n->ngpus; ++a) {
        snprintf(line, sizeof(line), "  %-6s %s  numa %d  package %d  cpus %s%s", n->gpu[a].name,
                 n->gpu[a].busid, n->gpu[a].numa, n->gpu[a].package,
                 n->gpu[a].cpus[0] ? n->gpu[a].cpus : "?",
                 n->nvswitch_links[a] ? "  (NVSwitch fabric)" : "");
        out(ctx, line);
    }
    for (a = 0; a < n->nnics; ++a) {
        snprintf(line, sizeof(line), "  %-6s %s  numa %d  package %d  %.0f GB/s", n->nic[a].name,
                 n->nic[a].busid, n->nic[a].numa, n->nic[a].package, n->nic[a].gbps);
        out(ctx, line);
    }
    for (a = 0; a < n->ngpus; ++a) {
        int len = snprintf(line, sizeof(line), "  %-6s", n->gpu[a].name);
        for (b = 0; b < n->ngpus && len < (int) sizeof(line) - 12; ++b) {
            if (a == b) {
                len += snprintf(line + len, sizeof(line) - (size_t) len, "  %6s", "X");
            } else if (gpu_topo_links(n, a, b) > 0) {
                len += snprintf(line + len, sizeof(line) - (size_t) len, "  NV%-4d",
                                gpu_topo_links(n, a, b));
            } else {
                len += snprintf(line + len, sizeof(line) - (size_t) len, "  %6s",
                                gpu_topo_path_name(gpu_topo_gpu_path(n, a, b)));
            }
        }
        out(ctx, line);
    }
}
