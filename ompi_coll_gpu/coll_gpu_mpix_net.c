/*
 * libgpucoll's way across nodes (gpucoll_mpix_abi.h, version 5): its host
 * transport (mpix/gpucoll_mpix_net.c) moves a stream communicator's rounds
 * and messages over coll/gpu's UCX transport (ucx_transport/) where the
 * ranks do not share one node.
 *
 * Why here: the library runs on CUDA's host-function thread and its own
 * progress thread, where Open MPI may not be called below
 * MPI_THREAD_MULTIPLE.  UCX may: the endpoints get a worker of their own,
 * which only the library's progress thread drives, so neither Open MPI's
 * thread level nor the hierarchy's workers (driven by the application's
 * thread or the hierarchy's) are concerned.  Setup is the one collective
 * step and runs on the application's thread at MPIX_Stream_comm_create,
 * with the addresses exchanged over the communicator's own host allgather.
 * A request is the network table's own, allocated per message: the host
 * transport is the path for what no kernel takes, not the fast path.
 */
#include "ompi_config.h"

#include "coll_gpu.h"

#include "mpix/gpucoll_mpix_abi.h"
#include "topo/gpu_topo.h"
#include "ucx_transport/gpu_ucx.h"

static const gpu_boot_ops_t mca_coll_gpu_mpix_net_boot = {
    .allgather = mca_coll_gpu_comm_allgather
};

int mca_coll_gpu_mpix_net_open(MPI_Comm c, void **out)
{
    ompi_communicator_t *comm = (ompi_communicator_t *) c;
    gpu_ucx_params_t up;
    gpu_net_t *net = NULL;
    gpu_status_t st;
    char rail[128];

    *out = NULL;
    mca_coll_gpu_topo_rail(rail, sizeof(rail));
    memset(&up, 0, sizeof(up));
    up.net_devices = rail;
    up.timeout_s = mca_coll_gpu_timeout_s();
    up.direct = 0;   /* the library hands it pinned host copies */
    up.comm_id = mca_coll_gpu_comm_id(comm);
    up.host_id = gpu_topo_host_id(gpu_topo_host_hash(), mca_coll_gpu_node_key(comm));
    up.rndv_thresh = mca_coll_gpu_component.net_rndv_thresh;
    up.own_worker = 1;
    up.channel = 0;
    /* collective; its answer is the same on every rank */
    st = gpu_ucx_create(&mca_coll_gpu_mpix_net_boot, comm, ompi_comm_rank(comm),
                        ompi_comm_size(comm), &up, &net);
    if (GPU_OK != st) {
        opal_output_verbose(1, mca_coll_gpu_component.output,
                            "coll/gpu: %s: no network transport for enqueued calls across "
                            "nodes: %s", comm->c_name, gpu_status_string(st));
        return GPU_ERR_BOOTSTRAP == st || GPU_ERR_TIMEOUT == st ? MPI_ERR_OTHER : MPI_SUCCESS;
    }
    opal_output_verbose(1, mca_coll_gpu_component.output,
                        "coll/gpu: %s: enqueued calls across nodes over %s", comm->c_name,
                        gpu_ucx_describe(net));
    *out = net;
    return MPI_SUCCESS;
}

void mca_coll_gpu_mpix_net_close(void *net)
{
    gpu_ucx_destroy(net);
}

static int mca_coll_gpu_mpix_net_post(void *net, int peer, void *buf, size_t len, unsigned tag,
                                      int recv, void **req)
{
    gpu_net_req_t *r = calloc(1, sizeof(*r));
    gpu_status_t st;

    *req = NULL;
    if (NULL == r) {
        return MPI_ERR_NO_MEM;
    }
    st = recv ? gpu_ucx_net_ops.irecv(net, peer, buf, len, tag, GPU_NET_MEM_HOST, r)
              : gpu_ucx_net_ops.isend(net, peer, buf, len, tag, GPU_NET_MEM_HOST, r);
    if (GPU_OK != st) {
        free(r);
        return MPI_ERR_OTHER;   /* logged where it failed */
    }
    *req = r;
    return MPI_SUCCESS;
}

int mca_coll_gpu_mpix_net_isend(void *net, int peer, const void *buf, size_t len, unsigned tag,
                                void **req)
{
    return mca_coll_gpu_mpix_net_post(net, peer, (void *) buf, len, tag, 0, req);
}

int mca_coll_gpu_mpix_net_irecv(void *net, int peer, void *buf, size_t len, unsigned tag,
                                void **req)
{
    return mca_coll_gpu_mpix_net_post(net, peer, buf, len, tag, 1, req);
}

int mca_coll_gpu_mpix_net_test(void *net, void **req, int progress)
{
    gpu_net_req_t *r = *req;
    gpu_status_t st;

    if (NULL == r) {
        if (progress) {
            (void) gpu_ucx_net_ops.test(net, &(gpu_net_req_t) { 0 }, 1, "progress");
        }
        return MPI_SUCCESS;
    }
    st = gpu_ucx_net_ops.test(net, r, progress, "an enqueued call's message");
    if (GPU_INPROGRESS == st) {
        return GPUCOLL_MPIX_NET_PENDING;
    }
    free(r);
    *req = NULL;
    return GPU_OK == st ? MPI_SUCCESS : MPI_ERR_OTHER;
}

void mca_coll_gpu_mpix_net_cancel(void *net, void **req)
{
    if (NULL != *req) {
        gpu_ucx_net_ops.cancel(net, *req, 1);
        free(*req);
        *req = NULL;
    }
}
