/*
 * gpucoll-topo: what coll/gpu would do on a node or a cluster you may not
 * have.  Prints the node graph (this machine, or an hwloc XML file written
 * by --dump or by coll_gpu_topo_dump), the ring, channels, trees and rail
 * map for a job shape, and the cost model's predicted time and bus
 * bandwidth per collective and size; across nodes, the algorithm the
 * hierarchy would run per collective and size (gpucoll_topo_hier.c); on
 * one node, the kernel, protocol and block count each collective takes
 * per size (gpucoll_topo_choice.c).
 *
 *   gpucoll-topo [--file node.xml] [--nodes N] [--gpus-per-node G]
 *                [--last-node-gpus G] [--min BYTES] [--max BYTES] [--dump out.xml]
 *                [--alpha-us A] [--beta-gbs B|topo] [--calibration FILE]
 *                [--net-algorithm 0|1|2] [--slot-bytes B] [--channels C] [--direct]
 *                [--device-fold] [--terms COLL]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/gpucoll_topo.h"
#include "topo/gpu_topo_graph.h"
#include "topo/gpu_topo_plan.h"

static void print_line(void *ctx, const char *line)
{
    (void) ctx;
    printf("%s\n", line);
}

static int usage(const char *prog)
{
    fprintf(stderr, "usage: %s [--file node.xml] [--nodes N] [--gpus-per-node G] "
                    "[--last-node-gpus G] [--min BYTES] [--max BYTES] [--dump out.xml]\n"
                    "       [--alpha-us A] [--beta-gbs B|topo] [--calibration FILE] "
                    "[--net-algorithm 0|1|2]\n"
                    "       [--slot-bytes B] [--channels C] [--direct] [--device-fold] "
                    "[--terms COLL]\n", prog);
    return 2;
}

/* a calibration file: "alpha_us A" and "beta_gbs B" lines, '#' comments
 * (test/topo/calibrate_net.py writes one) */
static int read_calibration(const char *path, double *alpha_us, double *beta_gbs)
{
    char line[256], key[64];
    double v;
    int got = 0;
    FILE *f = fopen(path, "r");
    if (NULL == f) {
        perror(path);
        return -1;
    }
    while (NULL != fgets(line, sizeof(line), f)) {
        if ('#' == line[0] || 2 != sscanf(line, "%63s %lf", key, &v)) {
            continue;
        }
        if (0 == strcmp(key, "alpha_us") && v >= 0) {
            *alpha_us = v;
            got |= 1;
        } else if (0 == strcmp(key, "beta_gbs") && v > 0) {
            *beta_gbs = v;
            got |= 2;
        }
    }
    fclose(f);
    if (3 != got) {
        fprintf(stderr, "gpucoll-topo: %s: wants alpha_us and beta_gbs lines\n", path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *file = NULL, *dump = NULL, *calib = NULL, *terms = NULL, *beta_arg = NULL;
    int nnodes = 1, nlocal = 0, last = 0, algo = 0, alpha_given = 0;
    int chans = GPU_HIER_CHANNELS_DEFAULT;
    double alpha_us = GPU_INTER_ALPHA_US_DEFAULT, beta_gbs = GPU_INTER_BETA_GBS_DEFAULT;
    double slot = GPU_HIER_SLOT_BYTES_DEFAULT;
    static gpu_topo_node_t node;
    static gpu_topo_plan_t plan;
    gpucoll_topo_opts_t o;
    char err[512], source[320];
    gpu_status_t st;

    memset(&o, 0, sizeof(o));
    o.minb = 8;
    o.maxb = 2147483648.0;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--direct")) {
            o.direct = 1;
            continue;
        }
        if (!strcmp(a, "--device-fold")) {   /* coll_gpu_net_device_fold 1 */
            o.hm.device_fold = 1;
            continue;
        }
        if (NULL == v) {
            return usage(argv[0]);
        }
        ++i;
        if (!strcmp(a, "--file")) file = v;
        else if (!strcmp(a, "--dump")) dump = v;
        else if (!strcmp(a, "--nodes")) nnodes = atoi(v);
        else if (!strcmp(a, "--gpus-per-node")) nlocal = atoi(v);
        else if (!strcmp(a, "--last-node-gpus")) last = atoi(v);
        else if (!strcmp(a, "--min")) o.minb = atof(v);
        else if (!strcmp(a, "--max")) o.maxb = atof(v);
        else if (!strcmp(a, "--alpha-us")) { alpha_us = atof(v); alpha_given = 1; }
        else if (!strcmp(a, "--beta-gbs")) beta_arg = v;
        else if (!strcmp(a, "--calibration")) calib = v;
        else if (!strcmp(a, "--net-algorithm")) algo = atoi(v);
        else if (!strcmp(a, "--slot-bytes")) slot = atof(v);
        else if (!strcmp(a, "--channels")) chans = atoi(v);
        else if (!strcmp(a, "--terms")) terms = v;
        else return usage(argv[0]);
    }
    if (o.minb < 1 || o.maxb < o.minb || algo < 0 || algo > 2 || chans < 1 || slot < 1 ||
        alpha_us < 0) {
        return usage(argv[0]);
    }
    if (NULL != calib) {
        const double a = alpha_us;
        if (0 != read_calibration(calib, &alpha_us, &beta_gbs)) {
            return 1;
        }
        alpha_us = alpha_given ? a : alpha_us;   /* the command line wins */
    }
    snprintf(source, sizeof(source), "%s%s%s", NULL != calib ? "calibration " : "the defaults",
             NULL != calib ? calib : "", alpha_given ? "; alpha from the command line" : "");
    if (NULL != beta_arg && !strcmp(beta_arg, "topo")) {
        o.beta_topo = 1;
    } else if (NULL != beta_arg) {
        beta_gbs = atof(beta_arg);
    }
    if (beta_gbs <= 0) {
        return usage(argv[0]);
    }
    if (NULL != dump) {
        st = gpu_topo_dump(dump, err, sizeof(err));
        if (GPU_OK != st) {
            fprintf(stderr, "gpucoll-topo: %s\n", err);
            return 1;
        }
        printf("wrote %s\n", dump);
    }
    st = NULL != file ? gpu_topo_load_file(file, &node, err, sizeof(err))
                      : gpu_topo_detect(&node, err, sizeof(err));
    if (GPU_OK != st) {
        fprintf(stderr, "gpucoll-topo: %s\n", err);
        return 1;
    }
    if (NULL == terms) {
        gpu_topo_print(&node, print_line, NULL);
    }
    if (0 == node.ngpus) {
        printf("no GPU: nothing to plan\n");
        return 0;
    }
    nlocal = nlocal > 0 ? nlocal : node.ngpus;
    last = last > 0 ? last : nlocal;
    if (last > nlocal || GPU_OK != gpu_topo_plan_build(&node, nnodes, nlocal, &gpu_topo_model_h200,
                                                       &plan)) {
        fprintf(stderr, "gpucoll-topo: cannot plan %d nodes x %d GPUs (last node %d)\n", nnodes,
                nlocal, last);
        return 1;
    }
    o.hm.nnodes = nnodes;
    o.hm.nranks = (nnodes - 1) * nlocal + last;
    o.hm.lsize = nlocal;
    o.hm.min_lsize = last < nlocal ? last : nlocal;
    o.hm.even = last == nlocal;
    o.hm.slot_bytes = gpu_hier_slot_bytes((size_t) slot);
    /* a transport that takes device memory folds on the calling thread: one channel */
    o.hm.nchan = o.direct ? 1 : chans;
    o.hm.algo = 1 == algo ? GPU_INTER_RING : 2 == algo ? GPU_INTER_RD : GPU_INTER_AUTO;
    o.hm.device_fold = o.hm.device_fold && !o.direct;   /* staged only */
    if (o.beta_topo) {
        beta_gbs = gpucoll_topo_rail_gbps(&node, &plan);
        if (beta_gbs <= 0) {
            fprintf(stderr, "gpucoll-topo: --beta-gbs topo: the node has no NIC rate per rail\n");
            return 1;
        }
        snprintf(source + strlen(source), sizeof(source) - strlen(source),
                 "; beta: the topology's NIC share per rail");
    } else if (NULL != beta_arg) {
        snprintf(source + strlen(source), sizeof(source) - strlen(source),
                 "; beta from the command line");
    }
    o.hm.alpha_s = alpha_us * 1e-6;
    o.hm.beta_Bps = beta_gbs * 1e9;
    o.source = source;
    if (NULL != terms && 1 == nnodes) {
        if (nlocal < 2 || 0 != gpucoll_topo_choice_terms(nlocal, terms, o.minb, o.maxb)) {
            fprintf(stderr, "gpucoll-topo: --terms %s: not a collective of %d ranks on one "
                            "node\n", terms, nlocal);
            return 1;
        }
        return 0;
    }
    if (NULL != terms) {
        if (nnodes < 2 || 0 != gpucoll_topo_terms(&node, &plan, &o, terms)) {
            fprintf(stderr, "gpucoll-topo: --terms %s: not a collective the hierarchy runs "
                            "across %d node(s)\n", terms, nnodes);
            return 1;
        }
        return 0;
    }
    /* one node: the calibration nearest its GPU count; across nodes the
     * node steps keep the 2x H200 fit the hierarchy's prices were checked with */
    const gpu_topo_model_t *model = 1 == nnodes ? gpu_topo_model_for(&plan) : &gpu_topo_model_h200;
    printf("plan: %d node(s) x %d GPU(s)%s, model %s\n", nnodes, nlocal,
           o.hm.even ? "" : " (the last node fewer)", model->name);
    gpu_topo_plan_print(&node, &plan, print_line, NULL);
    if (nnodes > 1) {
        gpucoll_topo_hier_print(&node, &plan, &o);
        return 0;
    }
    printf("%14s", "size(B)");
    for (int c = 0; c < GPU_COLL_NCOLLS; ++c) {
        printf("  %14s us  GB/s", gpu_coll_name((gpu_coll_t) c));
    }
    printf("\n");
    for (double b = o.minb; b <= o.maxb; b *= 4) {
        printf("%14.0f", b);
        for (int c = 0; c < GPU_COLL_NCOLLS; ++c) {
            double bus;
            double t = gpu_topo_predict(&node, &plan, model, (gpu_coll_t) c, b, &bus, NULL);
            printf("  %17.1f %5.0f", t, bus);
        }
        printf("\n");
    }
    if (nlocal >= 2) {
        gpucoll_topo_choice_print(&node, &plan, nlocal, o.minb, o.maxb);
    }
    return 0;
}
