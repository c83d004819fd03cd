/*
 * gpucoll-topo: what coll/gpu would do on a node or a cluster you may not
 * have.  Prints the node graph (this machine, or an hwloc XML file written
 * by --dump or by coll_gpu_topo_dump), the ring, channels, trees and rail
 * map for a job shape, and the cost model's predicted time and bus
 * bandwidth per collective and size.
 *
 *   gpucoll-topo [--file node.xml] [--nodes N] [--gpus-per-node G]
 *                [--min BYTES] [--max BYTES] [--dump out.xml]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/gpu_topo_graph.h"
#include "topo/gpu_topo_plan.h"

static void print_line(void *ctx, const char *line)
{
    (void) ctx;
    printf("%s\n", line);
}

static int usage(const char *prog)
{
    fprintf(stderr, "usage: %s [--file node.xml] [--nodes N] [--gpus-per-node G] [--min BYTES] "
                    "[--max BYTES] [--dump out.xml]\n", prog);
    return 2;
}

int main(int argc, char **argv)
{
    const char *file = NULL, *dump = NULL;
    int nnodes = 1, nlocal = 0;
    double minb = 8, maxb = 2147483648.0;
    static gpu_topo_node_t node;
    static gpu_topo_plan_t plan;
    char err[512];
    gpu_status_t st;

    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "--file") && i + 1 < argc) file = argv[++i];
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump = argv[++i];
        else if (!strcmp(argv[i], "--nodes") && i + 1 < argc) nnodes = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--gpus-per-node") && i + 1 < argc) nlocal = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--min") && i + 1 < argc) minb = atof(argv[++i]);
        else if (!strcmp(argv[i], "--max") && i + 1 < argc) maxb = atof(argv[++i]);
        else return usage(argv[0]);
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
    gpu_topo_print(&node, print_line, NULL);
    if (0 == node.ngpus) {
        printf("no GPU: nothing to plan\n");
        return 0;
    }
    nlocal = nlocal > 0 ? nlocal : node.ngpus;
    if (GPU_OK != gpu_topo_plan_build(&node, nnodes, nlocal, &gpu_topo_model_h200, &plan)) {
        fprintf(stderr, "gpucoll-topo: cannot plan %d nodes x %d GPUs\n", nnodes, nlocal);
        return 1;
    }
    printf("plan: %d node(s) x %d GPU(s), model %s\n", nnodes, nlocal, gpu_topo_model_h200.name);
    gpu_topo_plan_print(&node, &plan, print_line, NULL);
    printf("%14s", "size(B)");
    for (int c = 0; c < GPU_COLL_NCOLLS; ++c) {
        printf("  %14s us  GB/s", gpu_coll_name((gpu_coll_t) c));
    }
    printf("\n");
    for (double b = minb; b <= maxb; b *= 4) {
        printf("%14.0f", b);
        for (int c = 0; c < GPU_COLL_NCOLLS; ++c) {
            double bus;
            double t = gpu_topo_predict(&node, &plan, &gpu_topo_model_h200, (gpu_coll_t) c, b, &bus,
                                        NULL);
            printf("  %17.1f %5.0f", t, bus);
        }
        printf("\n");
    }
    return 0;
}
