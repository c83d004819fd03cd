/*
 * The topology plan of a communicator, computed once when its GPU state is
 * created: the node graph (from coll_gpu_topo_file, or probed once per
 * process with hwloc and NVML), the ring/channel/rail plan for the ranks
 * of this node, printed at verbose 1 like NCCL_DEBUG=INFO, and used for the
 * order of the pipelined bcast chain (ranks follow their GPUs' ring).
 * Without hwloc at build time the plan is rank order and nothing prints.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "coll_gpu.h"

#include "opal/util/output.h"
#include "opal/util/show_help.h"

#if GPUCOLL_HAVE_HWLOC
#include "topo/gpu_topo_graph.h"
#include "topo/gpu_topo_plan.h"
#include "topo/gpu_topo.h"

#include <stdio.h>

#include <cuda_runtime_api.h>

static gpu_topo_node_t mca_coll_gpu_node;
static int mca_coll_gpu_node_state;   /* 0 not tried, 1 ready, -1 unavailable */

static void mca_coll_gpu_topo_line(void *ctx, const char *line)
{
    mca_coll_gpu_module_t *m = ctx;
    opal_output_verbose(1, mca_coll_gpu_component.output, "coll/gpu: %s rank %d: %s",
                        m->comm->c_name, ompi_comm_rank(m->comm), line);
}

static int mca_coll_gpu_topo_node(void)
{
    const char *file = mca_coll_gpu_component.topo_file;
    const char *dump = mca_coll_gpu_component.topo_dump;
    char err[512];
    gpu_status_t st;

    if (0 != mca_coll_gpu_node_state) {
        return mca_coll_gpu_node_state > 0;
    }
    if (NULL != dump && '\0' != dump[0] && 0 == ompi_comm_rank(&ompi_mpi_comm_world.comm) &&
        GPU_OK != gpu_topo_dump(dump, err, sizeof(err))) {
        mca_coll_gpu_show_help("topology-file", err);
    }
    if (NULL != file && '\0' != file[0]) {
        st = gpu_topo_load_file(file, &mca_coll_gpu_node, err, sizeof(err));
    } else {
        st = gpu_topo_detect(&mca_coll_gpu_node, err, sizeof(err));
    }
    if (GPU_OK != st) {
        if (NULL != file && '\0' != file[0]) {
            mca_coll_gpu_show_help("topology-file", err);
        } else {
            opal_output_verbose(1, mca_coll_gpu_component.output,
                                "coll/gpu: no topology plan: %s", err);
        }
    }
    mca_coll_gpu_node_state = GPU_OK == st && mca_coll_gpu_node.ngpus > 0 ? 1 : -1;
    return mca_coll_gpu_node_state > 0;
}

/* The node restricted to the GPUs this communicator's ranks drive. */
static int mca_coll_gpu_topo_subset(mca_coll_gpu_module_t *m, int size, gpu_topo_node_t *sub)
{
    const gpu_topo_node_t *n = &mca_coll_gpu_node;
    int keep[GPU_TOPO_MAX_GPUS], nk = 0;

    for (int g = 0; g < n->ngpus; ++g) {
        for (int r = 0; r < size; ++r) {
            if (0 == strcasecmp(n->gpu[g].busid, gpu_engine_rank_busid(m->engine, r))) {
                keep[nk++] = g;
                break;
            }
        }
    }
    *sub = *n;
    sub->ngpus = nk;
    for (int a = 0; a < nk; ++a) {
        sub->gpu[a] = n->gpu[keep[a]];
        sub->nvswitch_links[a] = n->nvswitch_links[keep[a]];
        for (int b = 0; b < nk; ++b) {
            sub->nvlinks[a][b] = n->nvlinks[keep[a]][keep[b]];
        }
    }
    return nk;
}

void mca_coll_gpu_topo_setup(mca_coll_gpu_module_t *m)
{
    const int size = ompi_comm_size(m->comm);
    gpu_topo_node_t *n;
    gpu_topo_plan_t *plan;
    int pos[GPU_MAX_PEERS], k = 0;

    m->has_order = 0;
    if (size > GPU_MAX_PEERS || !mca_coll_gpu_topo_node()) {
        return;
    }
    plan = malloc(sizeof(*plan));
    n = malloc(sizeof(*n));
    if (NULL == plan || NULL == n || 0 == mca_coll_gpu_topo_subset(m, size, n)) {
        free(plan);
        free(n);
        return;
    }
    if (GPU_OK != gpu_topo_plan_build(n, 1, size, &gpu_topo_model_h200, plan)) {
        free(plan);
        free(n);
        return;
    }
    if (0 == ompi_comm_rank(m->comm)) {
        gpu_topo_print(n, mca_coll_gpu_topo_line, m);
        gpu_topo_plan_print(n, plan, mca_coll_gpu_topo_line, m);
    }
    /* ring position of each rank's GPU; a GPU the graph lacks: no order */
    for (int r = 0; r < size; ++r) {
        const char *busid = gpu_engine_rank_busid(m->engine, r);
        pos[r] = -1;
        for (int i = 0; i < n->ngpus && i < GPU_TOPO_MAX_GPUS; ++i) {
            const int g = plan->ring[i];
            if (i < (size < n->ngpus ? size : n->ngpus) && 0 == strcasecmp(n->gpu[g].busid, busid)) {
                pos[r] = i;
            }
        }
        if (pos[r] < 0) {
            free(plan);
            free(n);
            return;
        }
    }
    /* ranks by (ring position, rank): ranks sharing a GPU stay adjacent */
    for (int i = 0; i < GPU_TOPO_MAX_GPUS; ++i) {
        for (int r = 0; r < size; ++r) {
            if (pos[r] == i) {
                m->chain_order[k++] = r;
            }
        }
    }
    m->has_order = k == size;
    free(plan);
    free(n);
}

/* The rail: the NIC the plan gives this process's GPU. */
void mca_coll_gpu_topo_rail(char *nic, size_t len)
{
    gpu_topo_rank_info_t me;
    int dev;

    nic[0] = '\0';
    if (cudaSuccess == cudaGetDevice(&dev) && GPU_OK == gpu_topo_local_info(dev, &me) &&
        mca_coll_gpu_topo_node()) {
        gpu_topo_rail_name(&mca_coll_gpu_node, me.busid, nic, len);
    }
}

#else

void mca_coll_gpu_topo_setup(mca_coll_gpu_module_t *m)
{
    m->has_order = 0;
}

void mca_coll_gpu_topo_rail(char *nic, size_t len)
{
    (void) len;
    nic[0] = '\0';
}

#endif
