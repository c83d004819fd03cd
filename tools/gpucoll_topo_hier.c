/*
 * gpucoll-topo across nodes: for each collective and size, what the
 * hierarchy would run (gpu_hier_choose, as the component asks it at every
 * call, and its trace label) and the model's predicted time
 * (gpu_hier_price).  Sizes follow nccl-tests and gpucoll_bench: the largest
 * buffer of a rank (allgather: the output, reduce_scatter: the input),
 * floats for the reductions.
 */
#include "tools/gpucoll_topo.h"

#include <stdio.h>
#include <string.h>

#include "hier/gpu_hier_price.h"

/* every collective the component takes (ompi_coll_gpu/coll_gpu_colls.c);
 * the ones the hierarchy does not run cross nodes staged */
static const char *const gpu_all_colls[] = {
    "allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "alltoallw", "barrier",
    "bcast", "exscan", "gather", "gatherv", "neighbor_allgather", "neighbor_allgatherv",
    "neighbor_alltoall", "neighbor_alltoallv", "neighbor_alltoallw", "reduce", "reduce_scatter",
    "reduce_scatter_block", "scan", "scatter", "scatterv"
};

double gpucoll_topo_rail_gbps(const gpu_topo_node_t *n, const gpu_topo_plan_t *p)
{
    double least = 0.0;
    for (int l = 0; l < p->nlocal; ++l) {
        int sharing = 0;
        double share;
        if (p->rail[l] < 0 || n->nic[p->rail[l]].gbps <= 0) {
            return 0.0;
        }
        for (int q = 0; q < p->nlocal; ++q) {
            sharing += p->rail[q] == p->rail[l];
        }
        share = n->nic[p->rail[l]].gbps / sharing;
        least = 0 == l || share < least ? share : least;
    }
    return least;
}

/* the hierarchy's bytes for an nccl-tests size; 0: less than a float per rank */
static size_t gpu_unit_bytes(gpu_hier_coll_t c, double size, int nranks)
{
    const size_t b = (size_t) size;
    if (c >= GPU_HIER_ALLGATHER && GPU_HIER_SCAN != c && GPU_HIER_EXSCAN != c) {
        /* the hierarchy takes one rank's block */
        return b / (size_t) nranks / 4 * 4;
    }
    return b / 4 * 4;
}

static double gpu_bus_factor(gpu_hier_coll_t c, double n)
{
    switch (c) {
    case GPU_HIER_ALLREDUCE:
        return 2 * (n - 1) / n;
    case GPU_HIER_ALLGATHER:
    case GPU_HIER_REDUCE_SCATTER_BLOCK:
    case GPU_HIER_GATHER:
    case GPU_HIER_GATHERV:
    case GPU_HIER_SCATTER:
    case GPU_HIER_SCATTERV:
    case GPU_HIER_ALLGATHERV:
    case GPU_HIER_ALLTOALL:
    case GPU_HIER_ALLTOALLV:
    case GPU_HIER_ALLTOALLW:
    case GPU_HIER_REDUCE_SCATTER:
        return (n - 1) / n;
    default:
        return 1.0;
    }
}

static void gpu_size_name(double b, char *buf, size_t len)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        ++u;
    }
    snprintf(buf, len, "%.0f %s", b, units[u]);
}

/* the choice and price of one row; 0 when the size has no row */
static int gpu_row(const gpu_topo_plan_t *plan, const gpucoll_topo_opts_t *o, gpu_hier_coll_t c,
                   double size, gpu_hier_choice_t *ch, gpu_hier_price_t *pr, char *label,
                   size_t len)
{
    const size_t bytes = gpu_unit_bytes(c, size, o->hm.nranks);
    gpu_status_t st;
    if (0 == bytes) {
        return 0;
    }
    st = gpu_hier_choose(&o->hm, c, bytes, 4, ch);
    if (GPU_ERR_UNSUPPORTED == st) {
        snprintf(label, len, "staged (%d ranks: a slot holds no byte of each)", o->hm.nranks);
        memset(pr, 0, sizeof(*pr));
        return 1;
    }
    if (GPU_OK != st) {
        return 0;
    }
    gpu_hier_label(ch, label, len);
    gpu_hier_price(&o->hm, o->direct, plan, &gpu_topo_model_h200, ch, pr);
    return 1;
}

static const char *gpu_size_rule(gpu_hier_coll_t c)
{
    switch (c) {
    case GPU_HIER_ALLGATHER:
    case GPU_HIER_GATHER:
    case GPU_HIER_ALLGATHERV:
        return "size: the output, nranks blocks";
    case GPU_HIER_GATHERV:
        return "size: the output, nranks blocks (here every block alike)";
    case GPU_HIER_SCATTER:
        return "size: the root's input, nranks blocks";
    case GPU_HIER_SCATTERV:
        return "size: the root's input, nranks blocks (here every block alike)";
    case GPU_HIER_ALLTOALL:
        return "size: a rank's input, nranks blocks";
    case GPU_HIER_ALLTOALLV:
    case GPU_HIER_ALLTOALLW:
        return "size: a rank's input, nranks blocks (here every block alike)";
    case GPU_HIER_NEIGHBOR_ALLGATHER:
    case GPU_HIER_NEIGHBOR_ALLGATHERV:
    case GPU_HIER_NEIGHBOR_ALLTOALL:
    case GPU_HIER_NEIGHBOR_ALLTOALLV:
    case GPU_HIER_NEIGHBOR_ALLTOALLW:
        return "size: nranks blocks, every rank a neighbour (an upper bound)";
    case GPU_HIER_REDUCE_SCATTER:
        return "size: the input, nranks blocks (here every block alike)";
    case GPU_HIER_SCAN:
    case GPU_HIER_EXSCAN:
        return "size: the buffer; nodes of consecutive ranks only";
    case GPU_HIER_REDUCE_SCATTER_BLOCK:
        return "size: the input, nranks blocks; gpucoll_bench -c reduce_scatter";
    default:
        return "size: the buffer";
    }
}

void gpucoll_topo_hier_print(const gpu_topo_node_t *node, const gpu_topo_plan_t *plan,
                             const gpucoll_topo_opts_t *o)
{
    const gpu_hier_model_t *hm = &o->hm;
    const double rail = gpucoll_topo_rail_gbps(node, plan);
    char label[160], sz[32];

    printf("\nnetwork model: alpha %.2f us per message, beta %.2f GB/s per rank (%s)\n",
           hm->alpha_s * 1e6, hm->beta_Bps / 1e9, o->source);
    printf("  the runtime chooses by them with: --mca coll_gpu_net_latency_us %g "
           "--mca coll_gpu_net_bandwidth %g\n", hm->alpha_s * 1e6, hm->beta_Bps / 1e9);
    if (rail > 0) {
        printf("  topology: each rail gives a rank %.1f GB/s of NIC (--beta-gbs topo prices it)\n",
               rail);
    } else {
        printf("  topology: no NIC rate known for every rail\n");
    }
    printf("pipeline: %zu KiB slots, %d channel%s, %s\n", hm->slot_bytes >> 10, hm->nchan,
           1 == hm->nchan ? "" : "s",
           o->direct ? "device memory straight to UCX (coll_gpu_net_direct)"
                     : "staged through pinned host memory");
    printf("layout: %d nodes, %d ranks, %s\n", hm->nnodes, hm->nranks,
           hm->even ? "every node alike: allreduce on rails (a group per local rank)"
                    : "uneven nodes: every collective through node leaders");
    printf("blocking calls; nonblocking and persistent calls across nodes are staged\n");
    for (int c = 0; c < GPU_HIER_NCOLLS; ++c) {
        printf("\n%s (hierarchical; %s)\n", gpu_hier_coll_name((gpu_hier_coll_t) c),
               gpu_size_rule((gpu_hier_coll_t) c));
        printf("%10s  %-62s %6s %13s %11s\n", "size", "algorithm (trace label)", "slices",
               "predicted(us)", "busbw(GB/s)");
        for (double b = o->minb; b <= o->maxb; b *= 4) {
            gpu_hier_choice_t ch;
            gpu_hier_price_t pr;
            if (!gpu_row(plan, o, (gpu_hier_coll_t) c, b, &ch, &pr, label, sizeof(label))) {
                continue;
            }
            gpu_size_name(b, sz, sizeof(sz));
            if (pr.us > 0) {
                printf("%10s  %-62s %6zu %13.1f %11.2f\n", sz, label, ch.nslices, pr.us,
                       b / (pr.us * 1e3) * gpu_bus_factor((gpu_hier_coll_t) c, hm->nranks));
            } else {
                printf("%10s  %-62s %6s %13s %11s\n", sz, label, "-", "-", "-");
            }
        }
    }
    printf("\nstaged across nodes (device -> host, the previous module's own algorithm, "
           "host -> device; not priced):\n ");
    for (size_t i = 0; i < sizeof(gpu_all_colls) / sizeof(gpu_all_colls[0]); ++i) {
        int hier = 0;
        for (int c = 0; c < GPU_HIER_NCOLLS; ++c) {
            hier |= 0 == strcmp(gpu_all_colls[i], gpu_hier_coll_name((gpu_hier_coll_t) c));
        }
        if (!hier) {
            printf(" %s", gpu_all_colls[i]);
        }
    }
    printf("\n");
}

int gpucoll_topo_terms(const gpu_topo_node_t *node, const gpu_topo_plan_t *plan,
                       const gpucoll_topo_opts_t *o, const char *coll)
{
    int c = -1;
    char label[160];

    (void) node;
    for (int i = 0; i < GPU_HIER_NCOLLS; ++i) {
        if (0 == strcmp(coll, gpu_hier_coll_name((gpu_hier_coll_t) i))) {
            c = i;
        }
    }
    c = 0 == strcmp(coll, "reduce_scatter") ? GPU_HIER_REDUCE_SCATTER_BLOCK : c;
    if (c < 0) {
        return -1;
    }
    printf("# %s, %d nodes, %d ranks: time_us = fixed_us + msgs * alpha_us + "
           "net_bytes / (beta_gbs * 1e3)\n", coll, o->hm.nnodes, o->hm.nranks);
    printf("# bytes predicted_us fixed_us msgs net_bytes algorithm\n");
    for (double b = o->minb; b <= o->maxb; b *= 2) {
        gpu_hier_choice_t ch;
        gpu_hier_price_t pr;
        if (gpu_row(plan, o, (gpu_hier_coll_t) c, b, &ch, &pr, label, sizeof(label)) &&
            pr.us > 0) {
            printf("%.0f %.4f %.4f %.4f %.0f %s\n", b, pr.us, pr.fixed_us, pr.msgs, pr.bytes,
                   label);
        }
    }
    return 0;
}
