/*
 * Topology fixtures -> rings, channels, trees, rail maps, and the cost
 * model against the figures measured on the 2x H200 host.  No GPU needed:
 * every node comes from an hwloc XML file under test/topo/fixtures.
 *
 *   test_topo_plan FIXTURE_DIR RESULTS_DIR
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topo/gpu_topo_graph.h"
#include "topo/gpu_topo_plan.h"

#include "check.h"

static const char *fixdir, *resdir, *resdir4;
static gpu_topo_node_t node;
static gpu_topo_plan_t plan;
static const gpu_topo_model_t *M = &gpu_topo_model_h200;

static int load(const char *name)
{
    char path[1024], err[512];
    snprintf(path, sizeof(path), "%s/%s", fixdir, name);
    if (GPU_OK != gpu_topo_load_file(path, &node, err, sizeof(err))) {
        CHECK(0, "load %s: %s", name, err);
        return 0;
    }
    return 1;
}

/* both trees span the nodes: one root, parents consistent with children,
 * at most two children, no cycles; returns nodes interior in both */
static int check_trees(const gpu_topo_plan_t *p, const char *what)
{
    int both = 0;
    for (int t = 0; t < 2; ++t) {
        int roots = 0, ok = 1;
        for (int v = 0; v < p->nnodes; ++v) {
            int hops = 0, u = v;
            roots += p->tree_parent[t][v] < 0;
            while (u >= 0 && hops <= p->nnodes) {
                u = p->tree_parent[t][u];
                ++hops;
            }
            ok &= hops <= p->nnodes;   /* reaches the root */
            for (int c = 0; c < 2; ++c) {
                const int ch = p->tree_child[t][v][c];
                ok &= ch < 0 || p->tree_parent[t][ch] == v;
            }
        }
        CHECK(1 == roots && ok && p->tree_parent[t][p->tree_root[t]] < 0,
              "%s: tree %d is a binary tree over %d nodes", what, t, p->nnodes);
    }
    for (int v = 0; v < p->nnodes; ++v) {
        const int i0 = p->tree_child[0][v][0] >= 0 || p->tree_child[0][v][1] >= 0;
        const int i1 = p->tree_child[1][v][0] >= 0 || p->tree_child[1][v][1] >= 0;
        both += i0 && i1;
    }
    return both;
}

static void test_h200x2(void)
{
    if (!load("h200x2.xml")) {
        return;
    }
    CHECK(2 == node.ngpus, "2x H200: %d GPUs", node.ngpus);
    CHECK(18 == gpu_topo_links(&node, 0, 1), "2x H200: NV18 (%d links)", gpu_topo_links(&node, 0, 1));
    CHECK(GPU_OK == gpu_topo_plan_build(&node, 1, 2, M, &plan), "2x H200: plan");
    CHECK(plan.ring[0] == 0 && plan.ring[1] == 1 && GPU_PATH_NVLINK == plan.ring_worst,
          "2x H200: ring over NVLink");
    CHECK(18 == plan.nchannels, "2x H200: one channel per NVLink (%d)", plan.nchannels);
}

/* v more than 10% off both a and b, on the same side of both */
static int off_both(double v, double a, double b)
{
    const double x = (v - a) / a, y = (v - b) / b;
    return (x > 0.1 && y > 0.1) || (x < -0.1 && y < -0.1);
}

/* A single-run outlier: a size off both neighbours, or a pair of adjacent
 * sizes both off both sizes around the pair, the same way; the smallest
 * size, latency-bound like the next one, more than 10% off that one. */
static int is_spike(const double *t, int n, int i)
{
    if (0 == i) {
        return n > 1 && fabs(t[0] - t[1]) / t[1] > 0.1;
    }
    if (i + 1 < n && off_both(t[i], t[i - 1], t[i + 1])) {
        return 1;
    }
    for (int a = i - 1; a <= i; ++a) {   /* the pair (a, a + 1) holding i */
        if (a >= 1 && a + 2 < n && off_both(t[a], t[a - 1], t[a + 2]) &&
            off_both(t[a + 1], t[a - 1], t[a + 2]) && (t[a] - t[a - 1]) * (t[a + 1] - t[a - 1]) > 0) {
            return 1;
        }
    }
    return 0;
}

/* a model against the sweep it was fitted to (same spike rule as
 * test/topo/calibrate.py): 2x H200, docs/results/h200x2_2026-11-22_resident_kernel;
 * 4x H100, docs/results/h100x4_2026-11-27_s14_sweep (calibrate_choice.py) */
static void test_model_vs_measured(const char *fixture, int ngpus, const gpu_topo_model_t *model,
                                   const char *dir, const char *suffix)
{
    static const struct { gpu_coll_t c; const char *file; } colls[] = {
        { GPU_COLL_ALLREDUCE, "allreduce" }, { GPU_COLL_ALLGATHER, "allgather" },
        { GPU_COLL_REDUCE_SCATTER, "reduce_scatter" }, { GPU_COLL_BCAST, "bcast" },
    };
    if (!load(fixture) || GPU_OK != gpu_topo_plan_build(&node, 1, ngpus, model, &plan)) {
        return;
    }
    CHECK(gpu_topo_model_for(&plan) == model, "%d GPUs: not the %s", ngpus, model->name);
    for (size_t k = 0; k < sizeof(colls) / sizeof(colls[0]); ++k) {
        char path[1024], line[512];
        double bytes[64], t[64], worst = 0, at = 0;
        int n = 0, spikes = 0;
        FILE *f;
        snprintf(path, sizeof(path), "%s/bench_%s_%s.csv", dir, colls[k].file, suffix);
        f = fopen(path, "r");
        CHECK(NULL != f, "open %s", path);
        if (NULL == f) {
            continue;
        }
        while (n < 64 && fgets(line, sizeof(line), f)) {
            char name[32];
            if (3 == sscanf(line, "%31[^,],%lf,%lf", name, &bytes[n], &t[n])) {
                ++n;
            }
        }
        fclose(f);
        for (int i = 0; i < n; ++i) {
            double pred, err;
            if (is_spike(t, n, i)) {
                ++spikes;
                continue;
            }
            pred = gpu_topo_predict(&node, &plan, model, colls[k].c, bytes[i], NULL, NULL);
            err = (pred - t[i]) / t[i];
            err = err < 0 ? -err : err;
            if (err > worst) {
                worst = err;
                at = bytes[i];
            }
        }
        printf("model vs measured, %d GPUs: %-15s %2d sizes, %d spikes left out, worst %.1f%% at "
               "%.0f B\n", ngpus, colls[k].file, n, spikes, 100 * worst, at);
        CHECK(n >= 20 && spikes <= 3 && worst <= 0.15,
              "%s: predictions within 15%% of the measured times", colls[k].file);
    }
}

static void test_dgx(void)
{
    int both;
    if (!load("dgx_h100.xml")) {
        return;
    }
    CHECK(8 == node.ngpus && 8 == node.nnics, "DGX: 8 GPUs, 8 NICs (%d, %d)", node.ngpus, node.nnics);
    CHECK(GPU_OK == gpu_topo_plan_build(&node, 1, 8, M, &plan), "DGX: plan");
    CHECK(GPU_PATH_NVLINK == plan.ring_worst && 18 == plan.nchannels,
          "DGX: NVSwitch ring, 18 channels (%d)", plan.nchannels);
    for (int l = 0; l < 8; ++l) {
        CHECK(l == plan.rail[l] && GPU_PATH_PIX == plan.rail_path[l],
              "DGX: GPU %d uses the NIC on its switch (got %d, %s)", l, plan.rail[l],
              gpu_topo_path_name(plan.rail_path[l]));
    }
    /* the rail each GPU's process hands UCX as NET_DEVICES */
    for (int l = 0; l < 8; ++l) {
        char rail[64], want[64];
        gpu_topo_rail_name(&node, node.gpu[l].busid, rail, sizeof(rail));
        snprintf(want, sizeof(want), "%s:1", node.nic[l].name);
        CHECK(0 == strcmp(rail, want), "DGX: GPU %d's UCX device is %s (got \"%s\")", l, want, rail);
    }
    {
        char rail[64];
        gpu_topo_rail_name(&node, "0000:ff:1f.7", rail, sizeof(rail));
        CHECK('\0' == rail[0], "no rail for a GPU the node does not have (got \"%s\")", rail);
    }
    for (int nodes = 2; nodes <= 16; nodes *= 8) {
        CHECK(GPU_OK == gpu_topo_plan_build(&node, nodes, 8, M, &plan), "DGX x%d: plan", nodes);
        both = check_trees(&plan, nodes == 2 ? "2 nodes" : "16 nodes");
        CHECK(0 == both, "%d nodes: no node is interior in both trees (%d are)", nodes, both);
        CHECK(plan.tree_root[0] != plan.tree_root[1], "%d nodes: the two trees have different roots",
              nodes);
        double bus_small, bus_big;
        const char *algo;
        gpu_topo_predict(&node, &plan, M, GPU_COLL_ALLREDUCE, 8, &bus_small, &algo);
        gpu_topo_predict(&node, &plan, M, GPU_COLL_ALLREDUCE, 1 << 30, &bus_big, NULL);
        CHECK(bus_big > bus_small && bus_big < 8 * 50.0 * 2, "%d nodes: busbw grows with size and "
              "stays under the NICs' limit (%.0f GB/s)", nodes, bus_big);
    }
}

/* The model prices the kernel the engine runs: its resident range is the
 * component's automatic one for the shape (gpu_topo_choice.h), so on 4
 * GPUs a 2 MiB reduce_scatter (512 KiB a peer) is resident, 4 MiB the put fold,
 * and a 1 MiB allreduce is not. */
static void test_model_follows_limits(void)
{
    const char *algo = "";
    if (!load("dgx_h100.xml") || GPU_OK != gpu_topo_plan_build(&node, 1, 4, M, &plan)) {
        return;
    }
    (void) gpu_topo_predict(&node, &plan, M, GPU_COLL_REDUCE_SCATTER, 2.0 * 1048576, NULL, &algo);
    CHECK(0 == strcmp(algo, "persistent"), "4 GPUs, reduce_scatter 2 MiB priced as %s", algo);
    (void) gpu_topo_predict(&node, &plan, M, GPU_COLL_REDUCE_SCATTER, 4.0 * 1048576, NULL, &algo);
    CHECK(0 == strcmp(algo, "put"), "4 GPUs, reduce_scatter 4 MiB priced as %s", algo);
    (void) gpu_topo_predict(&node, &plan, M, GPU_COLL_ALLREDUCE, 1048576, NULL, &algo);
    CHECK(0 == strcmp(algo, "two-shot"), "4 GPUs, allreduce 1 MiB priced as %s", algo);
    (void) gpu_topo_predict(&node, &plan, M, GPU_COLL_ALLREDUCE, 524288, NULL, &algo);
    CHECK(0 == strcmp(algo, "persistent"), "4 GPUs, allreduce 512 KiB priced as %s", algo);
}

static void test_pcie_two_sockets(void)
{
    int crossings = 0;
    if (!load("pcie4_2s.xml")) {
        return;
    }
    CHECK(4 == node.ngpus && !node.p2p_across_packages, "PCIe 4 GPUs, no P2P across sockets");
    CHECK(GPU_PATH_PIX == gpu_topo_gpu_path(&node, 0, 1) && GPU_PATH_SYS == gpu_topo_gpu_path(&node, 1, 2),
          "PCIe: same switch is PIX, other socket SYS");
    CHECK(GPU_OK == gpu_topo_plan_build(&node, 1, 4, M, &plan), "PCIe: plan");
    for (int i = 0; i < 4; ++i) {
        crossings += node.gpu[plan.ring[i]].package != node.gpu[plan.ring[(i + 1) % 4]].package;
    }
    CHECK(2 == crossings, "PCIe: the ring leaves each socket once (%d crossings)", crossings);
    CHECK(GPU_PATH_SYS == plan.ring_worst && plan.ring_gbps < M->pcie_gbps[GPU_PATH_SYS],
          "PCIe: without P2P the slowest hop bounces through host memory (%.1f GB/s)", plan.ring_gbps);
    CHECK(1 == plan.nchannels, "PCIe: one channel (%d)", plan.nchannels);
    /* 4 GPUs but no NVLink: not the 4x H100 NVLink calibration */
    CHECK(gpu_topo_model_for(&plan) == &gpu_topo_model_h200, "PCIe: the model %s",
          gpu_topo_model_for(&plan)->name);
}

static void test_two_gpus_one_nic_per_socket(void)
{
    if (!load("gpu2nic1_2s.xml")) {
        return;
    }
    CHECK(4 == node.ngpus && 2 == node.nnics, "2 GPUs + 1 NIC per socket");
    CHECK(GPU_OK == gpu_topo_plan_build(&node, 2, 4, M, &plan), "plan");
    CHECK(0 == plan.rail[0] && 0 == plan.rail[1] && 1 == plan.rail[2] && 1 == plan.rail[3],
          "each GPU uses the NIC of its socket (%d %d %d %d)", plan.rail[0], plan.rail[1],
          plan.rail[2], plan.rail[3]);
    CHECK(GPU_PATH_PHB == plan.rail_path[0], "GPU and NIC share a host bridge");
    CHECK(node.gpu[plan.ring[1]].package == node.gpu[plan.ring[0]].package,
          "ring keeps the socket's GPUs together");
}

static void test_bad_files(void)
{
    char err[512], path[256];
    FILE *f;
    CHECK(GPU_OK != gpu_topo_load_file("/nonexistent/topo.xml", &node, err, sizeof(err)) &&
          strstr(err, "/nonexistent/topo.xml") && strstr(err, "No such file"),
          "missing file named with its error: %s", err);
    snprintf(path, sizeof(path), "/tmp/gpucoll_bad_%d.xml", (int) getpid());
    f = fopen(path, "w");
    fputs("<topology version=\"2.0\"><object type=\"Machine\"", f);
    fclose(f);
    CHECK(GPU_OK != gpu_topo_load_file(path, &node, err, sizeof(err)) && strstr(err, path) &&
          strstr(err, "not a valid hwloc XML"), "truncated XML: %s", err);
    {   /* a valid file whose NVLink attribute names an unknown GPU */
        char src[1024], line[1024];
        FILE *in;
        snprintf(src, sizeof(src), "%s/pcie4_2s.xml", fixdir);
        in = fopen(src, "r");
        f = fopen(path, "w");
        while (NULL != in && fgets(line, sizeof(line), in)) {
            fputs(line, f);
            if (strstr(line, "0000:03:00.0") && strstr(line, "PCIDev")) {
                fputs("<info name=\"GPUCollNVLink\" value=\"0000:99:00.0*4\"/>\n", f);
            }
        }
        if (NULL != in) {
            fclose(in);
        }
        fclose(f);
    }
    CHECK(GPU_OK != gpu_topo_load_file(path, &node, err, sizeof(err)) && strstr(err, path) &&
          strstr(err, "GPUCollNVLink"), "bad NVLink attribute named: %s", err);
    remove(path);
}

int main(int argc, char **argv)
{
    fixdir = argc > 1 ? argv[1] : "test/topo/fixtures";
    resdir = argc > 2 ? argv[2] : "docs/results/h200x2_2026-11-22_resident_kernel";
    resdir4 = argc > 3 ? argv[3] : "docs/results/h100x4_2026-11-27_s14_sweep";
    test_h200x2();
    test_model_vs_measured("h200x2.xml", 2, &gpu_topo_model_h200, resdir, "h200x2");
    test_model_vs_measured("dgx_h100.xml", 4, &gpu_topo_model_h100x4, resdir4, "4gpu");
    test_dgx();
    test_model_follows_limits();
    test_pcie_two_sockets();
    test_two_gpus_one_nic_per_socket();
    test_bad_files();
    printf("test_topo_plan: %d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
