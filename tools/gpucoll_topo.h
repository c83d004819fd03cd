/*
 * gpucoll-topo's parts: the options (gpucoll_topo.c) and the plan of a job
 * across nodes (gpucoll_topo_hier.c), which asks hier/gpu_hier_choice.h
 * what the hierarchy would run, the same functions the component calls,
 * and prices it with hier/gpu_hier_price.h.
 */
#ifndef GPUCOLL_TOPO_H
#define GPUCOLL_TOPO_H

#include "hier/gpu_hier_choice.h"
#include "topo/gpu_topo_plan.h"

typedef struct {
    gpu_hier_model_t hm;      /* the job and the runtime's parameters */
    int direct;               /* UCX takes device memory: no staging copies */
    int beta_topo;            /* beta is the topology's NIC share per rail */
    const char *source;       /* where alpha and beta came from, for the header */
    double minb, maxb;        /* sizes (nccl-tests convention) */
} gpucoll_topo_opts_t;

/* the NIC bandwidth (GB/s) each rank of a rail gets on this node, 0 unknown */
double gpucoll_topo_rail_gbps(const gpu_topo_node_t *node, const gpu_topo_plan_t *plan);

/* per collective and size: the algorithm, slices, predicted time, busbw */
void gpucoll_topo_hier_print(const gpu_topo_node_t *node, const gpu_topo_plan_t *plan,
                             const gpucoll_topo_opts_t *o);

/* one collective by name, a line per size (x2 steps): bytes, predicted,
 * fixed, msgs, network bytes, algorithm; for test/topo/calibrate_net.py.
 * Returns 0, or -1 for a collective the hierarchy does not run. */
int gpucoll_topo_terms(const gpu_topo_node_t *node, const gpu_topo_plan_t *plan,
                       const gpucoll_topo_opts_t *o, const char *coll);

/* One node (gpucoll_topo_choice.c): the kernel, protocol and blocks each
 * collective takes per size among nranks ranks, as size ranges with the
 * model's times; --terms: a line per size (x2 steps) "bytes pair
 * kernel|protocol|blocks" for test/topo/check_choice.py, -1 for a name
 * that is not a collective. */
void gpucoll_topo_choice_print(const gpu_topo_node_t *node, const gpu_topo_plan_t *plan,
                               int nranks, double minb, double maxb);
int gpucoll_topo_choice_terms(int nranks, const char *coll, double minb, double maxb);

#endif /* GPUCOLL_TOPO_H */
