/*
 * gpucoll-topo on one node: the kernel each collective and size takes
 * (topo/gpu_topo_choice.h, the limits the component fills the engine
 * with), printed as size ranges so each crossover reads at a glance, with
 * the cost model's predicted time at both ends of a range.
 */
#include <stdio.h>
#include <string.h>

#include "tools/gpucoll_topo.h"
#include "topo/gpu_topo_choice.h"

/* the cost model's collective for a choice's, or -1 where it has none */
static int gpucoll_model_coll(gpu_choice_coll_t c)
{
    switch (c) {
    case GPU_CHOICE_ALLREDUCE: return GPU_COLL_ALLREDUCE;
    case GPU_CHOICE_BCAST: return GPU_COLL_BCAST;
    case GPU_CHOICE_ALLGATHER: return GPU_COLL_ALLGATHER;
    case GPU_CHOICE_REDUCE_SCATTER: return GPU_COLL_REDUCE_SCATTER;
    default: return -1;
    }
}

static void gpucoll_size(double b, char *s, size_t len)
{
    if (b >= 1 << 30) {
        snprintf(s, len, "%.0f GiB", b / (1 << 30));
    } else if (b >= 1 << 20) {
        snprintf(s, len, "%.0f MiB", b / (1 << 20));
    } else if (b >= 1 << 10) {
        snprintf(s, len, "%.0f KiB", b / (1 << 10));
    } else {
        snprintf(s, len, "%.0f B", b);
    }
}

static int gpucoll_same(const gpu_topo_choice_t *a, const gpu_topo_choice_t *b)
{
    return 0 == strcmp(a->label, b->label) && 0 == strcmp(a->proto, b->proto) &&
           a->nblocks == b->nblocks;
}

static void gpucoll_range(const gpu_topo_node_t *node, const gpu_topo_plan_t *plan, int mc,
                          double lo, double hi, const gpu_topo_choice_t *c)
{
    char a[32], b[32], t[64] = "";
    gpucoll_size(lo, a, sizeof(a));
    gpucoll_size(hi, b, sizeof(b));
    if (mc >= 0) {
        snprintf(t, sizeof(t), "  (model %.1f-%.1f us)",
                 gpu_topo_predict(node, plan, gpu_topo_model_for(plan), (gpu_coll_t) mc,
                                  lo, NULL, NULL),
                 gpu_topo_predict(node, plan, gpu_topo_model_for(plan), (gpu_coll_t) mc,
                                  hi, NULL, NULL));
    }
    printf("    %8s - %-8s %-17s %-6s %3d blocks%s\n", a, b, c->label, c->proto, c->nblocks, t);
}

void gpucoll_topo_choice_print(const gpu_topo_node_t *node, const gpu_topo_plan_t *plan,
                               int nranks, double minb, double maxb)
{
    gpu_topo_limits_t l;
    char rmax[32], rred[32], pmin[32];

    gpu_topo_limits_default(nranks, &l);
    gpucoll_size((double) l.persist_max, rmax, sizeof(rmax));
    gpucoll_size((double) l.persist_reduce_max, rred, sizeof(rred));
    gpucoll_size((double) l.put_min, pmin, sizeof(pmin));
    printf("choice per size, %d ranks one per GPU, blocking (the component's defaults for %d "
           "ranks: the resident kernel to %s a pair, reducing to %s; the put path from %s a "
           "pair, a reduction's fold in %d blocks):\n", nranks, nranks, rmax, rred, pmin,
           l.put_fold_nblocks);
    if (GPU_PATH_NVLINK != plan->ring_worst) {
        printf("  (limits and model measured on NVLink hosts; this node's slowest hop is %s: "
               "not measured here)\n", gpu_topo_path_name(plan->ring_worst));
    }
    for (int k = 0; k < GPU_CHOICE_NCOLLS; ++k) {
        gpu_topo_choice_t cur, c;
        double lo = minb, prev = minb;
        printf("  %s\n", gpu_topo_choice_coll_name((gpu_choice_coll_t) k));
        gpu_topo_choose(&l, nranks, (gpu_choice_coll_t) k, (size_t) minb, &cur);
        for (double b = minb * 2; b <= maxb; b *= 2) {
            gpu_topo_choose(&l, nranks, (gpu_choice_coll_t) k, (size_t) b, &c);
            if (!gpucoll_same(&c, &cur)) {
                gpucoll_range(node, plan, gpucoll_model_coll((gpu_choice_coll_t) k), lo, prev,
                              &cur);
                cur = c;
                lo = b;
            }
            prev = b;
        }
        gpucoll_range(node, plan, gpucoll_model_coll((gpu_choice_coll_t) k), lo, prev, &cur);
    }
}

int gpucoll_topo_choice_terms(int nranks, const char *coll, double minb, double maxb)
{
    gpu_topo_limits_t l;
    int k;

    for (k = 0; k < GPU_CHOICE_NCOLLS; ++k) {
        if (0 == strcmp(coll, gpu_topo_choice_coll_name((gpu_choice_coll_t) k))) {
            break;
        }
    }
    if (k == GPU_CHOICE_NCOLLS) {
        return -1;
    }
    gpu_topo_limits_default(nranks, &l);
    printf("# %s, %d ranks: size(B) pair(B) kernel protocol blocks\n", coll, nranks);
    for (double b = minb; b <= maxb; b *= 2) {
        gpu_topo_choice_t c;
        gpu_topo_choose(&l, nranks, (gpu_choice_coll_t) k, (size_t) b, &c);
        printf("%.0f %zu %s|%s|%d\n", b, c.pair, c.label, c.proto, c.nblocks);
    }
    return 0;
}
