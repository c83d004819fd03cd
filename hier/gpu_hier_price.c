#include "hier/gpu_hier_price.h"

#include <string.h>

static double gpu_step_us(const gpu_topo_plan_t *plan, const gpu_topo_model_t *tm,
                          gpu_hier_step_t step, size_t bytes)
{
    switch (step) {
    case GPU_HIER_STEP_REDUCE_SCATTER:
        return gpu_topo_step_us(plan, tm, GPU_TOPO_STEP_REDUCE_SCATTER, (double) bytes);
    case GPU_HIER_STEP_ALLGATHER:
    case GPU_HIER_STEP_GATHER:
    case GPU_HIER_STEP_SCATTER:
    case GPU_HIER_STEP_ALLTOALL:
        /* a gather's leader (an alltoall's rank) takes in what an
         * allgather's ranks each do */
        return gpu_topo_step_us(plan, tm, GPU_TOPO_STEP_ALLGATHER, (double) bytes);
    case GPU_HIER_STEP_REDUCE:
    case GPU_HIER_STEP_SCAN:
        /* a scan folds as much as a reduce moves into its root */
        return gpu_topo_step_us(plan, tm, GPU_TOPO_STEP_REDUCE, (double) bytes);
    case GPU_HIER_STEP_BCAST:
        return gpu_topo_step_us(plan, tm, GPU_TOPO_STEP_BCAST, (double) bytes);
    default:
        return 0.0;   /* none, or a copy within the GPU: small beside the rest */
    }
}

/* bytes a slice of len puts through the copy stream of the busiest rank;
 * *down and *up: what of it goes down before the network and up after */
static double gpu_copy_bytes(const gpu_hier_model_t *hm, const gpu_hier_choice_t *c, double len,
                             double *down, double *up)
{
    *down = len;
    switch (c->net) {
    case GPU_INTER_OP_BCAST:
        *up = len;     /* the root copies down, the other leaders up */
        return len;
    case GPU_INTER_OP_GATHER:
        /* a leader copies its piece down, the root every other node's up */
        *up = len * (hm->nnodes - 1);
        return *up;
    case GPU_INTER_OP_SCATTER:
        *down = len * (hm->nnodes - 1);
        *up = len;
        return *down;
    case GPU_INTER_OP_ALLTOALL:
        /* a rank's pieces to every other node down, theirs up */
        *down = *up = len * (hm->nnodes - 1);
        return 2 * *down;
    case GPU_INTER_OP_ALLGATHER:
        if (c->fold_after) {
            *up = len;   /* scan: the node's total down, the carry up */
            return 2 * len;
        }
        /* a leader: its node's blocks down, every other node's up */
        *up = len / hm->lsize * (hm->nranks - hm->lsize);
        return *down + *up;
    default:
        *up = len;     /* allreduce on every member, reduce on the root */
        return 2 * len;
    }
}

void gpu_hier_price(const gpu_hier_model_t *hm, int direct, const gpu_topo_plan_t *plan,
                    const gpu_topo_model_t *tm, const gpu_hier_choice_t *c,
                    gpu_hier_price_t *out)
{
    gpu_inter_group_t g;
    const double nchan = hm->nchan < 1 ? 1.0 : (double) hm->nchan;
    const double overlap = (double) c->nslices < nchan ? (double) c->nslices : nchan;
    double net_us = 0.0;

    memset(out, 0, sizeof(*out));
    memset(&g, 0, sizeof(g));
    gpu_hier_group_model(hm, &g);
    out->fixed_us = gpu_step_us(plan, tm, c->before, c->before_bytes) +
                    gpu_step_us(plan, tm, c->after, c->after_bytes);
    for (size_t k = 0; k < c->nslices; ++k) {
        const int last = k + 1 == c->nslices;
        const size_t len = last ? c->net_last : c->net_slice;
        const gpu_inter_terms_t t = gpu_inter_terms(&g, c->net, len);
        const double msgs = t.msgs / overlap;
        const double net = (msgs * g.alpha_s + t.bytes / (g.beta_Bps > 0 ? g.beta_Bps : 1e10)) *
                           1e6;
        double down = 0.0, up = 0.0, copy = 0.0;
        if (!direct) {
            copy = gpu_topo_host_copy_us(tm, gpu_copy_bytes(hm, c, (double) len, &down, &up));
            out->fixed_us += (0 == k ? gpu_topo_host_copy_us(tm, down) : 0.0) +
                             (last ? gpu_topo_host_copy_us(tm, up) : 0.0);
        }
        if (net >= copy) {
            out->msgs += msgs;
            out->bytes += t.bytes;
            net_us += net;
        } else {
            out->fixed_us += copy;
        }
    }
    out->us = out->fixed_us + net_us;
}
