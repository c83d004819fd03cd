/*
 * The hierarchy's price: what a call chosen by gpu_hier_choose costs under
 * the topology's cost model (topo/gpu_topo_plan.h prices the node steps)
 * and inter/'s alpha-beta model (the network stage, slice by slice).  For
 * gpucoll-topo and its tests; the component chooses, it does not price.
 *
 * Staged slices (pinned host slots) overlap their copies with the network:
 * the stage costs the first slice's copy down, then per slice the longer of
 * its network step and its copies, then the last slice's copy up.  Channels
 * overlap the slices' message latencies; their bytes share one link.  The
 * host folds of the staged reductions are not priced apart: a beta fitted
 * to a measured sweep (test/topo/calibrate_net.py) carries them.
 */
#ifndef GPU_HIER_PRICE_H
#define GPU_HIER_PRICE_H

#include "hier/gpu_hier_choice.h"
#include "topo/gpu_topo_plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* us = fixed_us + msgs * alpha + bytes / beta, exactly, at the model's alpha
 * and beta (each slice's longer branch taken there): what a fit of alpha
 * and beta linearizes */
typedef struct {
    double us;
    double fixed_us;      /* node steps and the copies alpha and beta do not scale */
    double msgs;          /* network messages on the critical path */
    double bytes;         /* network bytes on the critical path */
} gpu_hier_price_t;

/* direct: the transport takes device memory (no copies) */
void gpu_hier_price(const gpu_hier_model_t *hm, int direct, const gpu_topo_plan_t *plan,
                    const gpu_topo_model_t *tm, const gpu_hier_choice_t *c,
                    gpu_hier_price_t *out);

#ifdef __cplusplus
}
#endif

#endif /* GPU_HIER_PRICE_H */
