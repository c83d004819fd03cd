#include "topo/gpu_topo_choice.h"
#include "topo/gpu_topo_plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *gpu_coll_name(gpu_coll_t c)
{
    static const char *names[] = { "allreduce", "allgather", "reduce_scatter", "bcast" };
    return (unsigned) c < GPU_COLL_NCOLLS ? names[c] : "?";
}

double gpu_topo_hop_gbps(const gpu_topo_node_t *n, const gpu_topo_model_t *m, int a, int b)
{
    const int links = gpu_topo_links(n, a, b);
    gpu_path_t p;
    if (links > 0) {
        return links * m->nvlink_gbps;
    }
    p = gpu_topo_gpu_path(n, a, b);
    if (GPU_PATH_SYS == p && !n->p2p_across_packages) {
        return m->pcie_gbps[GPU_PATH_SYS] / 2;   /* through host memory: two PCIe crossings */
    }
    return m->pcie_gbps[p];
}

/* ring score: slowest hop first, then total, then fewest socket crossings */
typedef struct {
    double min_bw, sum_bw;
    int worst;
} gpu_ring_score_t;

static gpu_ring_score_t gpu_ring_score(const gpu_topo_node_t *n, const gpu_topo_model_t *m,
                                       const int *ring, int len)
{
    gpu_ring_score_t s = { 1e30, 0.0, GPU_PATH_NVLINK };
    for (int i = 0; i < len && len > 1; ++i) {
        const int a = ring[i], b = ring[(i + 1) % len];
        const double bw = gpu_topo_hop_gbps(n, m, a, b);
        const int p = (int) gpu_topo_gpu_path(n, a, b);
        s.min_bw = bw < s.min_bw ? bw : s.min_bw;
        s.sum_bw += bw;
        s.worst = p > s.worst ? p : s.worst;
    }
    if (len <= 1) {
        s.min_bw = 0.0;
    }
    return s;
}

static int gpu_ring_better(gpu_ring_score_t x, gpu_ring_score_t y)
{
    if (fabs(x.min_bw - y.min_bw) > 1e-9) {
        return x.min_bw > y.min_bw;
    }
    if (fabs(x.sum_bw - y.sum_bw) > 1e-9) {
        return x.sum_bw > y.sum_bw;
    }
    return x.worst < y.worst;
}

/* all orders with ring[0] fixed (rotations are the same ring) */
static void gpu_ring_search(const gpu_topo_node_t *n, const gpu_topo_model_t *m, int *cur, int k,
                            int len, int *best, gpu_ring_score_t *best_s, int *used)
{
    if (k == len) {
        gpu_ring_score_t s = gpu_ring_score(n, m, cur, len);
        if (gpu_ring_better(s, *best_s)) {
            *best_s = s;
            memcpy(best, cur, sizeof(int) * (size_t) len);
        }
        return;
    }
    for (int g = 1; g < len; ++g) {
        if (!used[g]) {
            used[g] = 1;
            cur[k] = g;
            gpu_ring_search(n, m, cur, k + 1, len, best, best_s, used);
            used[g] = 0;
        }
    }
}

/* larger nodes: greedy by best next hop, then 2-opt until nothing improves */
static void gpu_ring_greedy(const gpu_topo_node_t *n, const gpu_topo_model_t *m, int *ring,
                            int len)
{
    int used[GPU_TOPO_MAX_GPUS] = { 0 }, improved = 1;
    ring[0] = 0;
    used[0] = 1;
    for (int k = 1; k < len; ++k) {
        int best = -1;
        for (int g = 0; g < len; ++g) {
            if (!used[g] && (best < 0 || gpu_topo_hop_gbps(n, m, ring[k - 1], g) >
                                             gpu_topo_hop_gbps(n, m, ring[k - 1], best))) {
                best = g;
            }
        }
        ring[k] = best;
        used[best] = 1;
    }
    while (improved) {
        improved = 0;
        for (int i = 1; i < len - 1; ++i) {
            for (int j = i + 1; j < len; ++j) {
                int cand[GPU_TOPO_MAX_GPUS];
                memcpy(cand, ring, sizeof(int) * (size_t) len);
                for (int a = i, b = j; a < b; ++a, --b) {
                    int t = cand[a];
                    cand[a] = cand[b];
                    cand[b] = t;
                }
                if (gpu_ring_better(gpu_ring_score(n, m, cand, len),
                                    gpu_ring_score(n, m, ring, len))) {
                    memcpy(ring, cand, sizeof(int) * (size_t) len);
                    improved = 1;
                }
            }
        }
    }
}

/*
 * Binary tree over positions 0..n-1 by their lowest set bit: odd positions
 * are leaves, p's parent clears its lowest bit and sets the next one (or
 * only clears it past the end), so position 0 is the root.  Tree 1 is the
 * same shape shifted by one position: its leaves are tree 0's interior
 * nodes, so for even n no node forwards in both trees.
 */
static void gpu_trees(gpu_topo_plan_t *p)
{
    const int n = p->nnodes;
    for (int t = 0; t < 2; ++t) {
        for (int v = 0; v < n; ++v) {
            p->tree_parent[t][v] = -1;
            p->tree_child[t][v][0] = p->tree_child[t][v][1] = -1;
        }
        for (int pos = 1; pos < n; ++pos) {
            const int bit = pos & -pos;
            int up = (pos ^ bit) | (bit << 1);
            up = up >= n ? pos ^ bit : up;
            const int node = (pos + t) % n, parent = (up + t) % n;
            p->tree_parent[t][node] = parent;
            p->tree_child[t][parent][p->tree_child[t][parent][0] < 0 ? 0 : 1] = node;
        }
        p->tree_root[t] = t % n;
    }
}

static void gpu_rails(const gpu_topo_node_t *n, gpu_topo_plan_t *p)
{
    int load[GPU_TOPO_MAX_NICS] = { 0 };
    for (int l = 0; l < p->nlocal; ++l) {
        const int g = l % (n->ngpus > 0 ? n->ngpus : 1);
        int best = -1;
        for (int k = 0; k < n->nnics && n->ngpus > 0; ++k) {
            if (best < 0 || gpu_topo_nic_path(n, g, k) < gpu_topo_nic_path(n, g, best) ||
                (gpu_topo_nic_path(n, g, k) == gpu_topo_nic_path(n, g, best) &&
                 load[k] < load[best])) {
                best = k;
            }
        }
        p->rail[l] = best;
        p->rail_path[l] = best >= 0 ? gpu_topo_nic_path(n, g, best) : GPU_PATH_SYS;
        if (best >= 0) {
            ++load[best];
        }
    }
}

gpu_status_t gpu_topo_plan_build(const gpu_topo_node_t *n, int nnodes, int nlocal,
                                 const gpu_topo_model_t *m, gpu_topo_plan_t *plan)
{
    gpu_topo_plan_t *p = plan;
    int len, used[GPU_TOPO_MAX_GPUS] = { 0 }, cur[GPU_TOPO_MAX_GPUS];
    gpu_ring_score_t best = { -1.0, -1.0, GPU_PATH_SYS };

    if (nnodes < 1 || nnodes > GPU_TOPO_MAX_NODES || nlocal < 1 || n->ngpus < 1) {
        return GPU_ERR_INVALID;
    }
    memset(p, 0, sizeof(*p));
    p->nnodes = nnodes;
    p->nlocal = nlocal;
    len = nlocal < n->ngpus ? nlocal : n->ngpus;
    if (len <= 9) {
        cur[0] = 0;
        p->ring[0] = 0;
        used[0] = 1;
        gpu_ring_search(n, m, cur, 1, len, p->ring, &best, used);
    } else {
        gpu_ring_greedy(n, m, p->ring, len);
    }
    best = gpu_ring_score(n, m, p->ring, len);
    p->ring_gbps = len > 1 ? best.min_bw : 0.0;
    p->ring_worst = (gpu_path_t) best.worst;
    p->nchannels = (int) (p->ring_gbps / m->chan_gbps + 0.5);
    p->nchannels = p->nchannels < 1 ? 1 : (p->nchannels > 32 ? 32 : p->nchannels);
    gpu_trees(p);
    gpu_rails(n, p);
    return GPU_OK;
}

/* one intra-node algorithm class: lat + wire / bw + fill (1 - exp(-wire / w)) */
static double gpu_curve(double lat, double eff, double fill, double w, double wire, double gbps)
{
    return lat + wire / (gbps * eff * 1e3) + fill * (1.0 - exp(-wire / w));
}

static double gpu_term(const gpu_topo_model_t *m, int cls, double wire, double gbps)
{
    return gpu_curve(m->lat_us[cls], m->eff[cls], m->fill_us[cls], m->fill_bytes[cls], wire, gbps);
}

static gpu_choice_coll_t gpu_choice_of(gpu_coll_t coll)
{
    return coll == GPU_COLL_ALLREDUCE        ? GPU_CHOICE_ALLREDUCE
           : coll == GPU_COLL_BCAST          ? GPU_CHOICE_BCAST
           : coll == GPU_COLL_ALLGATHER      ? GPU_CHOICE_ALLGATHER
                                             : GPU_CHOICE_REDUCE_SCATTER;
}

/* One node: the kernel the engine takes for this size among l ranks
 * (gpu_topo_choose at the component's defaults), priced by its class; the
 * bytes on the busiest rank's links: allreduce resident and one-shot
 * every peer the whole buffer, two-shot 2(l-1)/l of it, a bcast the
 * buffer, exchanges (l-1)/l of the nccl-tests size. */
static double gpu_one_node(const gpu_topo_model_t *m, gpu_coll_t coll, double l, double bytes,
                           double bw, const char **name)
{
    gpu_topo_limits_t lim;
    gpu_topo_choice_t c;
    const double exch = (l - 1) / l * bytes;
    gpu_topo_limits_default((int) l, &lim);
    if (lim.persist_max > (size_t) m->persist_max) {
        lim.persist_max = (size_t) m->persist_max;   /* the calibration host's range */
    }
    if (lim.persist_reduce_max > (size_t) m->persist_reduce_max) {
        lim.persist_reduce_max = (size_t) m->persist_reduce_max;
    }
    gpu_topo_choose(&lim, (int) l, gpu_choice_of(coll), (size_t) bytes, &c);
    *name = c.label;
    if (0 == strcmp(c.label, "persistent")) {
        /* allreduce, bcast, copy exchanges, reducing exchanges */
        const int k = coll == GPU_COLL_ALLREDUCE ? 0 : coll == GPU_COLL_BCAST ? 1
                      : coll == GPU_COLL_ALLGATHER ? 2 : 3;
        const double wire = coll == GPU_COLL_ALLREDUCE ? (l - 1) * bytes
                            : coll == GPU_COLL_BCAST   ? bytes : exch;
        return gpu_curve(m->res_lat_us[k], m->res_eff[k], m->res_fill_us[k], m->res_fill_bytes[k],
                         wire, bw);
    }
    if (0 == strcmp(c.label, "one-shot")) {
        return gpu_term(m, GPU_TOPO_ONESHOT, (l - 1) * bytes, bw);
    }
    if (0 == strcmp(c.label, "two-shot")) {
        return gpu_term(m, GPU_TOPO_TWOSHOT, 2 * (l - 1) / l * bytes, bw);
    }
    if (0 == strcmp(c.label, "chain")) {
        return gpu_term(m, GPU_TOPO_CHAIN, bytes, bw);
    }
    if (0 == strcmp(c.label, "put")) {
        return coll == GPU_COLL_BCAST            ? gpu_term(m, GPU_TOPO_PUT_SPREAD, bytes, bw)
               : coll == GPU_COLL_REDUCE_SCATTER ? gpu_term(m, GPU_TOPO_PUT_FOLD, exch, bw)
                                                 : gpu_term(m, GPU_TOPO_PUT, exch, bw);
    }
    /* the exchange kernel; a bcast's root writing every peer is the chain's class */
    return coll == GPU_COLL_BCAST ? gpu_term(m, GPU_TOPO_CHAIN, bytes, bw)
                                  : gpu_term(m, GPU_TOPO_EXCHANGE, exch, bw);
}

/* The launched kernels' node step of a job across nodes. */
static double gpu_launched(const gpu_topo_model_t *m, gpu_coll_t coll, double l, double bytes,
                           double bw, const char **name)
{
    switch (coll) {
    case GPU_COLL_ALLREDUCE:
        *name = "two-shot";
        return gpu_term(m, GPU_TOPO_TWOSHOT, 2 * (l - 1) / l * bytes, bw);
    case GPU_COLL_BCAST:
        *name = l > 2 ? "chain" : "direct";
        return gpu_term(m, GPU_TOPO_CHAIN, bytes, bw);
    default:
        *name = "exchange";
        return gpu_term(m, GPU_TOPO_EXCHANGE, (l - 1) / l * bytes, bw);
    }
}

double gpu_topo_step_us(const gpu_topo_plan_t *p, const gpu_topo_model_t *m, gpu_topo_step_t step,
                        double bytes)
{
    const double l = p->nlocal, bw = p->ring_gbps > 0 ? p->ring_gbps : m->nvlink_gbps;
    if (p->nlocal < 2 || bytes <= 0) {
        return 0.0;
    }
    switch (step) {
    case GPU_TOPO_STEP_REDUCE_SCATTER:
    case GPU_TOPO_STEP_ALLGATHER:
        return gpu_term(m, GPU_TOPO_EXCHANGE, (l - 1) / l * bytes, bw);
    default:
        return gpu_term(m, GPU_TOPO_CHAIN, bytes, bw);
    }
}

double gpu_topo_host_copy_us(const gpu_topo_model_t *m, double bytes)
{
    /* the GPU's own PCIe link to the host bridge */
    return bytes / (m->pcie_gbps[GPU_PATH_PIX] * 1e3);
}

double gpu_topo_predict(const gpu_topo_node_t *node, const gpu_topo_plan_t *p,
                        const gpu_topo_model_t *m, gpu_coll_t coll, double bytes, double *busbw,
                        const char **algo)
{
    const double l = p->nlocal, big_n = p->nnodes, r = l * big_n;
    const double bw = p->ring_gbps > 0 ? p->ring_gbps : m->nvlink_gbps;
    double t = 0.0, nic = m->nic_gbps, factor;
    const char *name = "";

    if (p->rail[0] >= 0 && node->nic[p->rail[0]].gbps > 0) {
        nic = node->nic[p->rail[0]].gbps;
    }
    t = 1 == p->nnodes ? gpu_one_node(m, coll, l, bytes, bw, &name)
                       : gpu_launched(m, coll, l, bytes, bw, &name);
    if (p->nnodes > 1) {
        /* per rail: each GPU's shard crosses the network; ring for
         * bandwidth, the double tree for latency, whichever is faster */
        const double shard = bytes / l, steps = coll == GPU_COLL_ALLREDUCE ? 2.0 : 1.0;
        const double ring = steps * (big_n - 1) * m->net_lat_us +
                            steps * (big_n - 1) / big_n * shard / (nic * 1e3);
        const double tree = steps * 2.0 * ceil(log2(big_n)) * m->net_lat_us +
                            steps * shard / (nic * 1e3);
        t += ring < tree ? ring : tree;
        name = ring < tree ? "hierarchical ring" : "hierarchical tree";
    }
    factor = coll == GPU_COLL_ALLREDUCE ? 2 * (r - 1) / r
             : coll == GPU_COLL_BCAST   ? 1.0
                                        : (r - 1) / r;
    if (NULL != busbw) {
        *busbw = t > 0 ? bytes / (t * 1e3) * factor : 0.0;
    }
    if (NULL != algo) {
        *algo = name;
    }
    return t;
}

void gpu_topo_plan_print(const gpu_topo_node_t *n, const gpu_topo_plan_t *p,
                         void (*out)(void *ctx, const char *line), void *ctx)
{
    char line[512];
    int len = 0, ring_len = p->nlocal < n->ngpus ? p->nlocal : n->ngpus;

    len = snprintf(line, sizeof(line), "ring:");
    for (int i = 0; i < ring_len; ++i) {
        len += snprintf(line + len, sizeof(line) - (size_t) len, " %s ->", n->gpu[p->ring[i]].name);
    }
    snprintf(line + len, sizeof(line) - (size_t) len, " %s  (slowest hop %.0f GB/s, %s)",
             n->gpu[p->ring[0]].name, p->ring_gbps, gpu_topo_path_name(p->ring_worst));
    out(ctx, line);
    for (int c = 0; c < p->nchannels; ++c) {
        snprintf(line, sizeof(line), "channel %02d: ring order above, %.0f GB/s", c,
                 p->ring_gbps / p->nchannels);
        out(ctx, line);
    }
    for (int t = 0; t < 2 && p->nnodes > 1; ++t) {
        len = snprintf(line, sizeof(line), "tree %d (root node %d):", t, p->tree_root[t]);
        for (int v = 0; v < p->nnodes && len < (int) sizeof(line) - 24; ++v) {
            len += snprintf(line + len, sizeof(line) - (size_t) len, " %d<-%d", v,
                            p->tree_parent[t][v]);
        }
        out(ctx, line);
    }
    for (int l = 0; l < p->nlocal; ++l) {
        const int g = l % n->ngpus;
        if (p->rail[l] >= 0) {
            snprintf(line, sizeof(line), "rail: local %d (%s) -> %s (%s)", l, n->gpu[g].name,
                     n->nic[p->rail[l]].name, gpu_topo_path_name(p->rail_path[l]));
        } else {
            snprintf(line, sizeof(line), "rail: local %d (%s) -> no NIC", l, n->gpu[g].name);
        }
        out(ctx, line);
    }
}

/*
 * Calibrated on the 2x H200 (NV18) host against docs/results/bench_*_h200x2.csv
 * with test/topo/calibrate.py (worst error over the measured sizes, single-run
 * spikes left out, twelfth session: two-shot 0.7%, bcast 0.6%, exchange 9.2%; resident
 * allreduce 7.5%, bcast 4.5%, copy exchange 3.6%, reduce exchange 6.6%).
 * PCIe rates are Gen5 x16 effective figures and the network ones NDR 400 Gb/s
 * line rate and a typical RDMA latency: not measured here.
 */
/* Fitted by test/topo/calibrate.py to docs/results/bench_*_h200x2.csv
 * (twelfth session, each size the median of 3 timed loops: resident kernel up to 2 MiB
 * per peer, 1 MiB reducing, 64 blocks).
 * Class 0, the launched one-shot, is no longer run at the defaults there: its constants are the fit of
 * the run before (coll_gpu_persist 0 behaves so).  The run predates the put path: the 2-GPU calls
 * the choice now sends there took the exchange kernel then (copies and folds: class 3's constants)
 * and the root writing its peer (a bcast: class 2's). */
const gpu_topo_model_t gpu_topo_model_h200 = {
    .name = "2x H200 NV18 calibration",
    .nvlink_gbps = 20.6,
    .pcie_gbps = { 0.0, 50.0, 45.0, 40.0, 25.0 },
    .chan_gbps = 20.6,
    .lat_us = { 17.08, 19.77, 14.07, 7.67, 7.67, 7.67, 14.07 },
    .eff = { 0.5285, 0.9776, 0.9972, 0.8875, 0.8875, 0.8875, 0.9972 },
    .fill_us = { 6.75, 17.96, 2.77, 18.44, 18.44, 18.44, 2.77 },
    .fill_bytes = { 4988717.0, 49677574.0, 3386514.0, 2200748.0, 2200748.0, 2200748.0,
                    3386514.0 },
    .oneshot_max = 262144.0,
    .res_lat_us = { 6.81, 6.04, 6.49, 6.80 },
    .res_eff = { 0.5034, 0.5947, 0.4358, 0.4452 },
    .res_fill_us = { 2.38, 2.62, 1.28, 1.84 },
    .res_fill_bytes = { 9117.0, 530311.0, 10010.0, 7927.0 },
    .persist_max = 2097152.0,
    .persist_reduce_max = 1048576.0,
    .net_lat_us = 5.0,
    .nic_gbps = 50.0,
};

/* Fitted by test/topo/calibrate_choice.py to docs/results/h100x4_2026-11-27_s14_sweep
 * (4 ranks, each size the median of 3 timed loops, every point priced as the kernel
 * gpucoll-topo's choice names for it; worst error over the measured sizes: two-shot
 * 1.9%, chain 0.8%, put copies 1.4%, put fold 2.5%, put spread 3.9%; resident allreduce
 * 9.1%, bcast 5.3%, copy exchange 9.8%, reduce exchange 10.2%).  The chain's constants
 * come from 64 MiB-1 GiB alone.  The one-shot and the exchange kernel take no size at
 * the 4-rank defaults: their constants are the 2x H200 fit's.  Same link rates as it. */
const gpu_topo_model_t gpu_topo_model_h100x4 = {
    .name = "4x H100 NV18 calibration",
    .nvlink_gbps = 20.6,
    .pcie_gbps = { 0.0, 50.0, 45.0, 40.0, 25.0 },
    .chan_gbps = 20.6,
    .lat_us = { 17.08, 25.54, 83.44, 7.67, 23.60, 30.06, 38.19 },
    .eff = { 0.5285, 0.9869, 1.0635, 0.8875, 0.8138, 0.8760, 0.7545 },
    .fill_us = { 6.75, 155.68, 311.33, 18.44, 4.99, 3.53, 2.15 },
    .fill_bytes = { 4988717.0, 377014270.0, 411227118.0, 2200748.0, 607048.0, 1383616.0,
                    28564.0 },
    .oneshot_max = 262144.0,
    .res_lat_us = { 8.72, 8.68, 8.21, 8.64 },
    .res_eff = { 0.4298, 0.1667, 0.4261, 0.3897 },
    .res_fill_us = { 4.88, 0.72, 2.78, 4.22 },
    .res_fill_bytes = { 21864.0, 4196.0, 9767.0, 12897.0 },
    .persist_max = 2097152.0,
    .persist_reduce_max = 1048576.0,
    .net_lat_us = 5.0,
    .nic_gbps = 50.0,
};

const gpu_topo_model_t *gpu_topo_model_for(const gpu_topo_plan_t *p)
{
    return p->nlocal >= 4 && GPU_PATH_NVLINK == p->ring_worst ? &gpu_topo_model_h100x4
                                                               : &gpu_topo_model_h200;
}

void gpu_topo_rail_name(const gpu_topo_node_t *n, const char *busid, char *name, size_t len)
{
    gpu_topo_plan_t *plan = malloc(sizeof(*plan));

    name[0] = '\0';
    if (NULL == plan || 0 == n->nnics ||
        GPU_OK != gpu_topo_plan_build(n, 1, n->ngpus, &gpu_topo_model_h200, plan)) {
        free(plan);
        return;
    }
    for (int g = 0; g < n->ngpus; ++g) {
        if (0 == strcasecmp(n->gpu[g].busid, busid) && plan->rail[g] >= 0) {
            const char *nic = n->nic[plan->rail[g]].name;
            /* HCA names carry an underscore (mlx5_0, bnxt_re0 has none but is
             * reached through its netdev); UCX wants the port for verbs */
            snprintf(name, len, "%s%s", nic, NULL != strchr(nic, '_') ? ":1" : "");
        }
    }
    free(plan);
}
