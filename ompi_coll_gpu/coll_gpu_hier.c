/*
 * Communicators that span nodes: find the nodes (hosts as Open MPI and the
 * host identity see them, each optionally split into coll_gpu_virtual_nodes),
 * build the node communicator with its engine and the UCX transport over
 * the whole communicator, and run the hierarchical collectives (hier/).
 */
#include "ompi_config.h"

#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll_gpu.h"

#include "opal/util/output.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/runtime/mpiruntime.h"

#include "util/gpu_clock.h"
#include "topo/gpu_topo.h"
#include "util/gpu_nodes.h"
#if GPUCOLL_HAVE_UCX
#include "hier/gpu_hier.h"
#include "ucx_transport/gpu_ucx.h"
#endif

/* node of every rank (util/gpu_nodes.h: hosts numbered by their first rank,
 * each split into coll_gpu_virtual_nodes groups); returns the node count or
 * -1.  *threads: some rank runs MPI_THREAD_MULTIPLE. */
static int mca_coll_gpu_nodes(mca_coll_gpu_module_t *m, int *node_of, uint64_t *host,
                              int *threads)
{
    const int n = ompi_comm_size(m->comm);
    const uint64_t me = gpu_topo_host_id(gpu_topo_host_hash(), mca_coll_gpu_node_key(m->comm));
    const uint64_t mine[2] = { me, ompi_mpi_thread_multiple ? 1 : 0 };
    uint64_t *both = malloc(2 * sizeof(uint64_t) * (size_t) n);   /* host, threads per rank */
    uint64_t *hosts = malloc(sizeof(uint64_t) * (size_t) n);
    int nn = -1;

    /* bounded by coll_gpu_timeout, like every setup exchange */
    if (NULL == both || NULL == hosts ||
        GPU_OK != mca_coll_gpu_boot_ops.allgather(m, mine, both, sizeof(mine))) {
        goto out;
    }
    *threads = 0;
    for (int r = 0; r < n; ++r) {
        hosts[r] = both[2 * r];
        *threads |= 0 != both[2 * r + 1];
    }
    nn = gpu_nodes_split(n, hosts, mca_coll_gpu_component.virtual_nodes, node_of);
    *host = me;
out:
    free(hosts);
    free(both);
    return nn;
}

void mca_coll_gpu_hier_free(mca_coll_gpu_module_t *m)
{
    mca_coll_gpu_hier_nb_free(m);
#if GPUCOLL_HAVE_UCX
    gpu_hier_destroy(m->hier);
    for (int i = 1; i < m->nnets; ++i) {
        gpu_ucx_destroy(m->nets[i]);
    }
    gpu_ucx_destroy(m->net);
#endif
    free(m->nets);
    m->nets = NULL;
    free(m->hier_v_layout);
    m->hier_v_layout = NULL;
    m->nnets = 0;
    m->hier = NULL;
    m->net = NULL;
    gpu_engine_comm_destroy(m->node_engine);
    m->node_engine = NULL;
    if (NULL != m->node_comm) {
        ompi_comm_free(&m->node_comm);
        m->node_comm = NULL;
    }
}

#if GPUCOLL_HAVE_UCX
/* A host collective of the setup, bounded: its nonblocking form under
 * coll_gpu_timeout.  A request cannot be cancelled, so one that times out
 * keeps its buffers (the caller's are never handed to it). */
static gpu_status_t mca_coll_gpu_setup_wait(ompi_request_t **req, ompi_communicator_t *comm,
                                            const char *what)
{
    const double deadline = gpu_clock_now() + mca_coll_gpu_timeout_s();
    int done = 0;
    for (unsigned spins = 0;; ++spins) {
        if (OMPI_SUCCESS != ompi_request_test(req, &done, MPI_STATUS_IGNORE)) {
            return GPU_ERR_BOOTSTRAP;
        }
        if (done) {
            return GPU_OK;
        }
        if (0 == (spins & 255) && gpu_clock_now() > deadline) {
            GPU_ERROR("%s: the hierarchy's setup %s waited %.0f s for a rank that never came",
                      comm->c_name, what, mca_coll_gpu_timeout_s());
            return GPU_ERR_TIMEOUT;
        }
    }
}

/* bootstrap over a communicator's own (host-buffer) allgather, bounded */
gpu_status_t mca_coll_gpu_comm_allgather(void *ctx, const void *sbuf, void *rbuf, size_t bytes)
{
    ompi_communicator_t *comm = ctx;
    const size_t n = (size_t) ompi_comm_size(comm);
    char *tmp = malloc(bytes * (n + 1));
    ompi_request_t *req = MPI_REQUEST_NULL;
    gpu_status_t st;

    if (NULL == tmp) {
        return GPU_ERR_NO_MEMORY;
    }
    memcpy(tmp, sbuf, bytes);
    if (MPI_SUCCESS != comm->c_coll->coll_iallgather(tmp, (int) bytes, MPI_BYTE, tmp + bytes,
                                                     (int) bytes, MPI_BYTE, comm, &req,
                                                     comm->c_coll->coll_iallgather_module)) {
        free(tmp);
        return GPU_ERR_BOOTSTRAP;
    }
    st = mca_coll_gpu_setup_wait(&req, comm, "allgather");
    if (GPU_ERR_TIMEOUT == st) {
        return st;   /* tmp stays with the request */
    }
    if (GPU_OK == st) {
        memcpy(rbuf, tmp + bytes, bytes * n);
    }
    free(tmp);
    return st;
}

static const gpu_boot_ops_t mca_coll_gpu_comm_boot = { .allgather = mca_coll_gpu_comm_allgather };

/* the least of every rank's value, -1 where the exchange failed (bounded:
 * a rank that never comes counts as a failure) */
static int mca_coll_gpu_least(mca_coll_gpu_module_t *m, int mine)
{
    int *v = malloc(2 * sizeof(int)), least;
    ompi_request_t *req = MPI_REQUEST_NULL;
    gpu_status_t st;

    if (NULL == v) {
        return -1;
    }
    v[0] = mine;
    if (MPI_SUCCESS != m->prev.coll_iallreduce(v, v + 1, 1, MPI_INT, MPI_MIN, m->comm, &req,
                                               m->prev.coll_iallreduce_module)) {
        free(v);
        return 0;
    }
    st = mca_coll_gpu_setup_wait(&req, m->comm, "agreement");
    if (GPU_ERR_TIMEOUT == st) {
        return -1;   /* v stays with the request */
    }
    least = GPU_OK == st ? v[1] : -1;
    free(v);
    return least;
}

/* all ranks agree that every rank succeeded */
static int mca_coll_gpu_all_ok(mca_coll_gpu_module_t *m, int ok)
{
    return mca_coll_gpu_least(m, 0 != ok) > 0;
}

/* channel threads this rank can run: the parameter, capped by its CPUs */
static int mca_coll_gpu_channels_wanted(void)
{
    int want = mca_coll_gpu_component.net_channels;
    cpu_set_t set;
    want = want < 1 ? 1 : (want > GPU_UCX_MAX_CHANNELS ? GPU_UCX_MAX_CHANNELS : want);
    if (0 == sched_getaffinity(0, sizeof(set), &set) && CPU_COUNT(&set) < want) {
        want = CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
    }
    return want;
}

/* every rank alone on its node (node numbers are 0..nodes-1) */
static int mca_coll_gpu_one_per_node(const int *node_of, int n)
{
    int top = 0;
    for (int q = 0; q < n; ++q) {
        top = node_of[q] > top ? node_of[q] : top;
    }
    return top + 1 == n;
}

/* threads: a rank runs MPI_THREAD_MULTIPLE, so this communicator's
 * collectives may run while another's do on another thread: its UCX
 * endpoints get workers of their own (ucx_transport/gpu_ucx.h) */
static int mca_coll_gpu_hier_build(mca_coll_gpu_module_t *m, const int *node_of, uint64_t host,
                                   int threads)
{
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    const int rank = ompi_comm_rank(m->comm);
    gpu_engine_params_t ep;
    gpu_ucx_params_t up;
    gpu_hier_params_t hp;
    gpu_hier_layout_t layout = { .nranks = ompi_comm_size(m->comm), .rank = rank,
                                 .node_of = node_of };
    char rail[128];
    gpu_status_t st_engine, st_net;
    int nchan;

    /* Open MPI's split has no timeout: it starts only once a bounded
     * agreement has shown every rank here (one that timed out in the
     * exchange of nodes never comes, and the others stage instead of
     * waiting in the split for it) */
    if (!mca_coll_gpu_all_ok(m, 1)) {
        m->node_comm = NULL;
        return 0;
    }
    if (OMPI_SUCCESS != ompi_comm_split(m->comm, node_of[rank], rank, &m->node_comm, false)) {
        m->node_comm = NULL;
        return 0;
    }
    /* the node's engine, collective over the node communicator */
    mca_coll_gpu_engine_params(&ep, m->node_comm);
    /* host-paced rounds are validated on single-node communicators only: the
     * node steps of the hierarchy keep the launched kernels */
    ep.paced = 0;
    /* a node step that staged after a failed growth would leave the other
     * nodes waiting in the network stage: the node engine's areas exist
     * from setup, where a failure stages the whole hierarchy alike */
    ep.scratch_eager = 1;
    /* ...and its own: a pool's lease is agreed per call on the node and may
     * be refused, which, as a nonblocking node step that cannot lease, would
     * stage one node alone */
    ep.pool = 0;
    /* every node of one rank: the hierarchy runs no node step (gpu_hier.h),
     * so no node engine (nor its device areas) */
    st_engine = mca_coll_gpu_one_per_node(node_of, layout.nranks)
                    ? GPU_OK
                    : gpu_engine_comm_create(&mca_coll_gpu_hier_nb_boot, m->node_comm,
                                             ompi_comm_rank(m->node_comm),
                                             ompi_comm_size(m->node_comm), &ep, &m->node_engine);
    /* the transport, collective over the whole communicator */
    mca_coll_gpu_topo_rail(rail, sizeof(rail));
    memset(&up, 0, sizeof(up));
    up.net_devices = rail;
    up.timeout_s = mca_coll_gpu_timeout_s();
    up.direct = c->net_direct;
    up.comm_id = mca_coll_gpu_comm_id(m->comm);
    up.host_id = host;
    up.rndv_thresh = c->net_rndv_thresh;
    /* and where nonblocking calls run on the communicator's thread */
    up.own_worker = threads || c->hier_nonblocking;
    up.channel = 0;
    st_net = gpu_ucx_create(&mca_coll_gpu_comm_boot, m->comm, rank, layout.nranks, &up, &m->net);
    if (GPU_OK != st_net) {
        m->net = NULL;
    }
    /* the other channels' endpoints, as many as every rank can drive */
    nchan = mca_coll_gpu_least(m, GPU_OK == st_net ? mca_coll_gpu_channels_wanted() : 0);
    m->nets = calloc((size_t) (nchan > 1 ? nchan : 1), sizeof(*m->nets));
    if (nchan < 1 || NULL == m->nets) {
        st_net = GPU_ERR_NO_MEMORY;
    } else {
        m->nets[0] = m->net;
        m->nnets = 1;
    }
    for (int i = 1; GPU_OK == st_net && i < nchan; ++i) {
        up.channel = i;
        st_net = gpu_ucx_create(&mca_coll_gpu_comm_boot, m->comm, rank, layout.nranks, &up,
                                &m->nets[i]);
        m->nnets += GPU_OK == st_net;
    }
    if (GPU_OK != st_engine) {
        m->node_engine = NULL;
    }
    if (!mca_coll_gpu_all_ok(m, GPU_OK == st_engine && GPU_OK == st_net)) {
        opal_output_verbose(1, c->output, "coll/gpu: %s: node engine %s, UCX %s on this rank",
                            m->comm->c_name, gpu_status_string(st_engine),
                            gpu_status_string(st_net));
        return 0;
    }
    memset(&hp, 0, sizeof(hp));
    hp.slot_bytes = c->net_slot_bytes;
    hp.nslots = c->net_slots;
    hp.timeout_s = up.timeout_s;
    hp.alpha_s = c->net_latency_us * 1e-6;
    hp.beta_Bps = c->net_bandwidth * 1e9;
    hp.algo = 1 == c->net_algorithm ? GPU_INTER_RING
              : 2 == c->net_algorithm ? GPU_INTER_RD : GPU_INTER_AUTO;
    hp.order_legacy = MCA_COLL_GPU_ORDER_EVERY_CALL == c->stream_order;
    hp.channels = m->nnets;
    hp.device_fold = c->net_device_fold > 0;
    if (!mca_coll_gpu_all_ok(m, GPU_OK == gpu_hier_create(m->node_engine, &gpu_ucx_net_ops,
                                                          m->nets, gpu_ucx_direct(m->net),
                                                          &layout, &hp, &m->hier))) {
        return 0;
    }
    if (0 == rank) {
        opal_output_verbose(1, c->output, "coll/gpu: %s: %s; %s", m->comm->c_name,
                            gpu_hier_describe(m->hier), gpu_ucx_describe(m->net));
    }
    opal_output_verbose(1, c->output, "coll/gpu: %s: rank %d on node %d, rail %s", m->comm->c_name,
                        rank, node_of[rank], '\0' != rail[0] ? rail : "(UCX default)");
    return 1;
}
#endif

int mca_coll_gpu_hier_setup(mca_coll_gpu_module_t *m, const char *what, int *ret)
{
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    const int n = ompi_comm_size(m->comm);
    int *node_of, nnodes, threads = 0;
    uint64_t host = 0;

    *ret = MPI_SUCCESS;
    if (n < 2) {
        return 0;
    }
    node_of = malloc(sizeof(int) * (size_t) n);
    nnodes = NULL != node_of ? mca_coll_gpu_nodes(m, node_of, &host, &threads) : -1;
    if (1 == nnodes) {
        free(node_of);
        return 0;
    }
    m->boot = MCA_COLL_GPU_BOOT_STAGED;
    if (nnodes < 0 && m->fail_timeout) {
        *ret = mca_coll_gpu_error(m->comm->c_name, what, GPU_ERR_TIMEOUT, m->fail_peer);
    } else if (nnodes < 0) {
        *ret = MPI_ERR_INTERN;
    } else if (!c->hier) {
        opal_output_verbose(1, c->output, "coll/gpu: %s spans %d nodes, coll_gpu_hier is 0: "
                            "device collectives staged", m->comm->c_name, nnodes);
    } else {
#if GPUCOLL_HAVE_UCX
        if (mca_coll_gpu_hier_build(m, node_of, host, threads)) {
            m->boot = MCA_COLL_GPU_BOOT_HIER;
        } else {
            mca_coll_gpu_hier_free(m);
            opal_output_verbose(1, c->output, "coll/gpu: %s spans %d nodes; the hierarchy could "
                                "not be set up: device collectives staged", m->comm->c_name,
                                nnodes);
        }
#else
        opal_output_verbose(1, c->output, "coll/gpu: %s spans %d nodes and this build has no "
                            "UCX: device collectives staged", m->comm->c_name, nnodes);
#endif
    }
    free(node_of);
    return 1;
}

int mca_coll_gpu_hier_run(mca_coll_gpu_module_t *m, const mca_coll_gpu_hier_call_t *call,
                          ompi_request_t **req, int *ran)
{
    static const char *const names[] = { "allreduce", "bcast", "reduce", "allgather",
                                         "reduce_scatter_block", "gather", "gatherv", "scatter",
                                         "scatterv", "allgatherv", "alltoall", "alltoallv",
                                         "reduce_scatter", "scan", "exscan", "alltoallw",
                                         "neighborhood" };
    int ret;

    /* the hierarchy's steps block: a nonblocking call runs them on the
     * communicator's thread (coll_gpu_hier_nb.c) where a blocking call has
     * set the hierarchy up, and stages otherwise; it begins no setup */
    *ran = 0;
    if (NULL != req) {
        return mca_coll_gpu_hier_nb_start(m, call, req, ran);
    }
    ret = mca_coll_gpu_bootstrap(m, names[call->kind], 1);
    *ran = MPI_SUCCESS != ret;
    if (MPI_SUCCESS != ret || MCA_COLL_GPU_BOOT_HIER != m->boot) {
        return ret;
    }
    if (MCA_COLL_GPU_HIER_NEIGHBOR == call->kind) {
        return mca_coll_gpu_hier_run_nbr(m, call->args, ran);
    }
    if (call->kind >= MCA_COLL_GPU_HIER_GATHER) {
        return mca_coll_gpu_hier_run_v(m, call, ran);
    }
#if GPUCOLL_HAVE_UCX
    const int in_place = MPI_IN_PLACE == call->sbuf;
    const char *sbuf = in_place ? NULL : call->sbuf;
    char *rbuf = call->rbuf;
    mca_coll_gpu_trace_t trace;
    mca_coll_gpu_geom_t g;
    gpu_dtype_t dt = GPU_DT_U8;
    gpu_op_t op = GPU_OP_SUM;
    gpu_status_t st;
    size_t bytes;

    if (MCA_COLL_GPU_HIER_BCAST == call->kind || MCA_COLL_GPU_HIER_ALLGATHER == call->kind) {
        if (!mca_coll_gpu_geom(call->dtype, &g) ||
            (MCA_COLL_GPU_HIER_ALLGATHER == call->kind && !in_place &&
             (call->sdtype != call->dtype || call->scount != call->count))) {
            return MPI_SUCCESS;
        }
        bytes = (size_t) call->count * g.size;
    } else {
        if (!mca_coll_gpu_map(call->dtype, call->op, &dt, &op)) {
            return MPI_SUCCESS;
        }
        g.lb = 0;
        bytes = (size_t) call->count * gpu_dtype_size(dt);
    }
    switch (call->kind) {
    case MCA_COLL_GPU_HIER_ALLREDUCE:
        mca_coll_gpu_trace_begin(&trace, "allreduce", bytes,
                                 gpu_hier_algo(m->hier, GPU_HIER_ALLREDUCE, bytes,
                                               gpu_dtype_size(dt)));
        st = gpu_hier_allreduce(m->hier, in_place ? rbuf : sbuf, rbuf, (size_t) call->count, op,
                                dt);
        break;
    case MCA_COLL_GPU_HIER_REDUCE_SCATTER_BLOCK:
        mca_coll_gpu_trace_begin(&trace, "reduce_scatter_block", bytes,
                                 gpu_hier_algo(m->hier, GPU_HIER_REDUCE_SCATTER_BLOCK, bytes,
                                               gpu_dtype_size(dt)));
        st = gpu_hier_reduce_scatter_block(m->hier, sbuf, rbuf, (size_t) call->count, op, dt);
        break;
    case MCA_COLL_GPU_HIER_REDUCE:
        mca_coll_gpu_trace_begin(&trace, "reduce", bytes,
                                 gpu_hier_algo(m->hier, GPU_HIER_REDUCE, bytes,
                                               gpu_dtype_size(dt)));
        st = gpu_hier_reduce(m->hier, sbuf, rbuf, (size_t) call->count, op, dt, call->root);
        break;
    case MCA_COLL_GPU_HIER_BCAST:
        mca_coll_gpu_trace_begin(&trace, "bcast", bytes,
                                 gpu_hier_algo(m->hier, GPU_HIER_BCAST, bytes, 1));
        st = gpu_hier_bcast(m->hier, rbuf + g.lb, bytes, call->root);
        break;
    default:
        mca_coll_gpu_trace_begin(&trace, "allgather", bytes,
                                 gpu_hier_algo(m->hier, GPU_HIER_ALLGATHER, bytes, 1));
        st = gpu_hier_allgather(m->hier, NULL == sbuf ? NULL : sbuf + g.lb, rbuf + g.lb, bytes);
        break;
    }
    mca_coll_gpu_trace_end(&trace, m->comm->c_name, 1, trace.t0, trace.t0, (int) st);
    if (GPU_ERR_UNSUPPORTED == st) {
        return MPI_SUCCESS;   /* not served: the caller stages */
    }
    *ran = 1;
    return mca_coll_gpu_fallback_done(mca_coll_gpu_status_to_mpi(st), req);
#else
    (void) call;
    (void) req;
    return MPI_SUCCESS;
#endif
}

/* Only where the hierarchy is up: a device call has set it up on every rank
 * alike (its setup ends in an agreement), so every rank answers the same
 * without asking; a barrier has no buffers to ask about. */
int mca_coll_gpu_hier_barrier(mca_coll_gpu_module_t *m, int *ran)
{
    *ran = 0;
#if GPUCOLL_HAVE_UCX
    mca_coll_gpu_trace_t trace;
    gpu_status_t st;

    int ret;

    if (MCA_COLL_GPU_BOOT_HIER != m->boot || NULL == m->hier) {
        return MPI_SUCCESS;
    }
    /* the nonblocking calls queued before it run on the hierarchy's thread
     * (coll_gpu_hier_nb.c): it is the hierarchy's again once they are done */
    ret = mca_coll_gpu_drain(m);
    if (MPI_SUCCESS != ret) {
        *ran = 1;
        return ret;
    }
    mca_coll_gpu_trace_begin(&trace, "barrier", 0,
                             gpu_hier_algo(m->hier, GPU_HIER_ALLREDUCE, 1, 1));
    st = gpu_hier_barrier(m->hier);
    mca_coll_gpu_trace_end(&trace, m->comm->c_name, 1, trace.t0, trace.t0, (int) st);
    *ran = 1;
    return mca_coll_gpu_fallback_done(mca_coll_gpu_status_to_mpi(st), NULL);
#else
    (void) m;
    return MPI_SUCCESS;
#endif
}
