/*
 * Persistent collectives (MPIX_*_init, Open MPI 4.1's pcollreq extension).
 *
 * Open MPI builds them in libnbc, whose schedules reduce and copy with the
 * CPU: on device buffers that is the crash of open-mpi/ompi#9845 again, at
 * MPI_Start.  Here an *_init call with a device buffer returns a persistent
 * request that keeps the call's arguments; each MPI_Start runs the call
 * through this module's own nonblocking entry point (the engine, or the
 * staged path for user ops and derived types), and progress completes the
 * persistent request when that round's request completes.  Calls on host
 * buffers only get the previous module's persistent request, untouched,
 * unless the communicator's ranks may mix memory kinds (one node): there
 * every rank's rounds are ours, counted and agreed like nonblocking calls.
 *
 * The plan is rebuilt at every start (a few hundred nanoseconds against a
 * collective's microseconds); what persists is the argument list, which
 * MPI says the application must leave alone while the request lives.
 */
#include "ompi_config.h"

#include "coll_gpu.h"
#include "coll_gpu_route.h"

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/topo/base/base.h"
#include "ompi/request/request.h"

typedef struct mca_coll_gpu_preq_t {
    mca_coll_gpu_nbc_request_t super;   /* first: Open MPI casts to it */
    mca_coll_gpu_module_t *module;
    mca_coll_gpu_args_t args;
    ompi_request_t *round;           /* this start's nonblocking request */
    struct ompi_datatype_t **wtypes; /* alltoallw forms: the per-peer types, retained */
    int nwtypes;
    int user_freed;                  /* MPI_Request_free while active */
    struct mca_coll_gpu_preq_t *next;
} mca_coll_gpu_preq_t;

OBJ_CLASS_INSTANCE(mca_coll_gpu_preq_t, ompi_request_t, NULL, NULL);

static mca_coll_gpu_preq_t *gpu_preq_active;

static mca_coll_gpu_preq_t *gpu_preq_zombie;

static void gpu_preq_release(mca_coll_gpu_preq_t *r)
{
    for (int i = 0; i < r->nwtypes; ++i) {
        OBJ_RELEASE(r->wtypes[i]);
    }
    free(r->wtypes);
    if (NULL != r->args.sdtype) {
        OBJ_RELEASE(r->args.sdtype);
    }
    if (NULL != r->args.rdtype) {
        OBJ_RELEASE(r->args.rdtype);
    }
    if (NULL != r->args.op) {
        OBJ_RELEASE(r->args.op);
    }
    OBJ_RELEASE(r->module);
    OMPI_REQUEST_FINI(&r->super.super);
    /* Open MPI's wrapper of req_free (a persistent request that retained
     * a user op or derived type) reads the request after our free returns:
     * the memory goes back one free later, or at component close */
    OPAL_THREAD_LOCK(&mca_coll_gpu_component.lock);
    mca_coll_gpu_preq_t *prev = gpu_preq_zombie;
    gpu_preq_zombie = r;
    OPAL_THREAD_UNLOCK(&mca_coll_gpu_component.lock);
    if (NULL != prev) {
        OBJ_RELEASE(prev);
    }
}

void mca_coll_gpu_persistent_fini(void)
{
    if (NULL != gpu_preq_zombie) {
        OBJ_RELEASE(gpu_preq_zombie);
        gpu_preq_zombie = NULL;
    }
}

/* This round's request done: the persistent one completes (inactive again
 * once MPI_Wait/Test has seen it). */
static void gpu_preq_finish(mca_coll_gpu_preq_t *r)
{
    r->super.super.req_status.MPI_ERROR = r->round->req_status.MPI_ERROR;
    (void) ompi_request_free(&r->round);
    r->round = NULL;
    if (r->user_freed) {
        gpu_preq_release(r);
    } else {
        ompi_request_complete(&r->super.super, true);
    }
}

int mca_coll_gpu_persistent_progress(void)
{
    mca_coll_gpu_preq_t **link = &gpu_preq_active;
    int done = 0;

    while (NULL != *link) {
        mca_coll_gpu_preq_t *r = *link;
        if (!REQUEST_COMPLETE(r->round)) {
            link = &r->next;
            continue;
        }
        *link = r->next;
        gpu_preq_finish(r);
        ++done;
    }
    return done;
}

/* A persistent request's round: a call like any other, routed (counted,
 * its kind agreed) as its nonblocking form. */
static int gpu_args_issue(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                          ompi_request_t **q)
{
    return mca_coll_gpu_route(m, a, q, NULL);
}

static int gpu_preq_start(size_t count, ompi_request_t **requests)
{
    for (size_t i = 0; i < count; ++i) {
        mca_coll_gpu_preq_t *r = (mca_coll_gpu_preq_t *) requests[i];
        int ret;

        r->super.super.req_state = OMPI_REQUEST_ACTIVE;
        r->super.super.req_complete = REQUEST_PENDING;
        r->super.super.req_status.MPI_ERROR = MPI_SUCCESS;
        r->round = NULL;
        /* a round is a call like any other: counted, its kind agreed (it
         * may wait in the queue for the peers' kinds) */
        ret = gpu_args_issue(r->module, &r->args, &r->round);
        if (MPI_SUCCESS != ret || NULL == r->round) {
            r->super.super.req_state = OMPI_REQUEST_INACTIVE;
            r->super.super.req_complete = REQUEST_COMPLETED;
            return MPI_SUCCESS != ret ? ret : MPI_ERR_INTERN;
        }
        if (REQUEST_COMPLETE(r->round)) {
            gpu_preq_finish(r);       /* staged rounds complete at initiation */
            continue;
        }
        mca_coll_gpu_progress_needed();
        OPAL_THREAD_LOCK(&mca_coll_gpu_component.lock);
        r->next = gpu_preq_active;
        gpu_preq_active = r;
        OPAL_THREAD_UNLOCK(&mca_coll_gpu_component.lock);
    }
    return MPI_SUCCESS;
}

static int gpu_preq_free(ompi_request_t **request)
{
    mca_coll_gpu_preq_t *r = (mca_coll_gpu_preq_t *) *request;
    if (NULL == r->round) {
        gpu_preq_release(r);
    } else {
        r->user_freed = 1;            /* progress releases it after the round */
    }
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

/* Alltoallw forms: MPI lets the application free the per-peer datatypes
 * after *_init, so the request holds its own references (counts and
 * displacements must stay as they are, like the buffers).  Sends go to the
 * out-neighbors, receives come from the in-neighbors. */
static int gpu_preq_own_types(mca_coll_gpu_preq_t *r, ompi_communicator_t *comm)
{
    mca_coll_gpu_args_t *a = &r->args;
    /* an intercommunicator's blocks are the remote group's */
    int ns = OMPI_COMM_IS_INTER(comm) ? ompi_comm_remote_size(comm) : ompi_comm_size(comm);
    int nr = ns;
    struct ompi_datatype_t **t;

    if (MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLW == a->kind &&
        OMPI_SUCCESS != mca_topo_base_neighbor_count(comm, &nr, &ns)) {
        return MPI_ERR_TOPOLOGY;
    }
    if (MPI_IN_PLACE == a->sbuf) {
        ns = 0;   /* the send types are ignored */
    }
    t = malloc(sizeof(*t) * (size_t) (ns + nr > 0 ? ns + nr : 1));
    if (NULL == t) {
        return MPI_ERR_NO_MEM;
    }
    for (int i = 0; i < ns; ++i) {
        t[i] = a->sdtypes[i];
        OBJ_RETAIN(t[i]);
    }
    for (int i = 0; i < nr; ++i) {
        t[ns + i] = a->rdtypes[i];
        OBJ_RETAIN(t[ns + i]);
    }
    if (ns > 0) {
        a->sdtypes = t;
    }
    a->rdtypes = t + ns;
    r->wtypes = t;
    r->nwtypes = ns + nr;
    return MPI_SUCCESS;
}

/* A persistent request over this module for the call in a. */
static int gpu_preq_new(mca_coll_base_module_t *module, const mca_coll_gpu_args_t *a,
                        ompi_request_t **request)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    mca_coll_gpu_preq_t *r = OBJ_NEW(mca_coll_gpu_preq_t);

    if (NULL == r) {
        return MPI_ERR_NO_MEM;
    }
    r->args = *a;
    r->wtypes = NULL;
    r->nwtypes = 0;
    if (NULL != a->rdtypes) {
        const int ret = gpu_preq_own_types(r, m->comm);
        if (MPI_SUCCESS != ret) {
            OBJ_RELEASE(r);
            return ret;
        }
    }
    mca_coll_gpu_request_prepare(&r->super, m->comm, true);
    r->super.super.req_start = gpu_preq_start;
    r->super.super.req_free = gpu_preq_free;
    /* MPI lets the application free the datatypes and op after *_init */
    if (NULL != a->sdtype) {
        OBJ_RETAIN(a->sdtype);
    }
    if (NULL != a->rdtype) {
        OBJ_RETAIN(a->rdtype);
    }
    if (NULL != a->op) {
        OBJ_RETAIN(a->op);
    }
    OBJ_RETAIN(m);
    r->module = m;
    r->round = NULL;
    r->user_freed = 0;
    r->next = NULL;
    *request = &r->super.super;
    return MPI_SUCCESS;
}

/* Does the call touch device memory (then it is ours)?  The route's own
 * answer: the bytes MPI says the call touches, MPI_BOTTOM and v/w layouts
 * included. */
static int gpu_pdev(mca_coll_base_module_t *module, const mca_coll_gpu_args_t *a)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    /* an intercommunicator's rounds stage where their blocks are device
     * memory (coll_gpu_inter.c decides by MPI_ROOT and the remote group) */
    return OMPI_COMM_IS_INTER(m->comm) || 0 != mca_coll_gpu_coll_ops(a->kind)->mem(m, a);
}

/* Is the call the previous module's: host buffers only, on a communicator
 * whose ranks cannot mix memory kinds under us?  Where they can (a kind
 * board: one node), host calls get our request too, so that every rank's
 * rounds pass through the kind agreement (a host rank's previous-module
 * request would take a libnbc tag at init that device ranks never take,
 * and its rounds would never meet theirs). */
static int gpu_prev_takes(mca_coll_base_module_t *module, const mca_coll_gpu_args_t *a)
{
    return NULL == ((mca_coll_gpu_module_t *) module)->kpost.slot && !gpu_pdev(module, a);
}

#define GPU_M(module) ((mca_coll_gpu_module_t *) (module))

static int gpu_allgather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                              void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, struct ompi_info_t *info,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLGATHER, .sbuf = sbuf, .rbuf = rbuf,
                                 .scount = scount, .sdtype = sdtype, .rcount = rcount,
                                 .rdtype = rdtype };
    if (gpu_prev_takes(module, &a)) {
        return GPU_M(module)->prev.coll_allgather_init(
            sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info, request,
            GPU_M(module)->prev.coll_allgather_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_allgatherv_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                               void *rbuf, const int *rcounts, const int *displs,
                               struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                               struct ompi_info_t *info, ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLGATHERV, .sbuf = sbuf, .rbuf = rbuf,
                                 .scount = scount, .sdtype = sdtype, .rcounts = rcounts,
                                 .rdispls = displs, .rdtype = rdtype };
    if (gpu_prev_takes(module, &a)) {
        return GPU_M(module)->prev.coll_allgatherv_init(
            sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, info, request,
            GPU_M(module)->prev.coll_allgatherv_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_allreduce_init(const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, struct ompi_info_t *info,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLREDUCE, .sbuf = sbuf, .rbuf = rbuf,
                                 .rcount = count, .rdtype = dtype, .op = op };
    if (gpu_prev_takes(module, &a)) {
        return GPU_M(module)->prev.coll_allreduce_init(
            sbuf, rbuf, count, dtype, op, comm, info, request,
            GPU_M(module)->prev.coll_allreduce_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_alltoall_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                             struct ompi_communicator_t *comm, struct ompi_info_t *info,
                             ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLTOALL, .sbuf = sbuf, .rbuf = rbuf,
                                 .scount = scount, .sdtype = sdtype, .rcount = rcount,
                                 .rdtype = rdtype };
    if (gpu_prev_takes(module, &a)) {
        return GPU_M(module)->prev.coll_alltoall_init(
            sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info, request,
            GPU_M(module)->prev.coll_alltoall_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_alltoallv_init(const void *sbuf, const int *scounts, const int *sdispls,
                              struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                              const int *rdispls, struct ompi_datatype_t *rdtype,
                              struct ompi_communicator_t *comm, struct ompi_info_t *info,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLTOALLV, .sbuf = sbuf, .rbuf = rbuf,
                                 .scounts = scounts, .sdispls = sdispls, .sdtype = sdtype,
                                 .rcounts = rcounts, .rdispls = rdispls, .rdtype = rdtype };
    if (gpu_prev_takes(module, &a)) {
        return GPU_M(module)->prev.coll_alltoallv_init(
            sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm, info, request,
            GPU_M(module)->prev.coll_alltoallv_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_bcast_init(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                          struct ompi_communicator_t *comm, struct ompi_info_t *info,
                          ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_BCAST, .rbuf = buf, .rcount = count,
                                 .rdtype = dtype, .root = root };
    if (gpu_prev_takes(module, &a)) {
        return GPU_M(module)->prev.coll_bcast_init(buf, count, dtype, root, comm, info, request,
                                                   GPU_M(module)->prev.coll_bcast_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

/* scan and exscan share a signature */
static int gpu_scan_like_init(mca_coll_gpu_args_kind_t kind, const void *sbuf, void *rbuf, int count,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, struct ompi_info_t *info,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = GPU_M(module);
    const mca_coll_gpu_args_t a = { .kind = kind, .sbuf = sbuf, .rbuf = rbuf, .rcount = count,
                                 .rdtype = dtype, .op = op };
    if (gpu_prev_takes(module, &a)) {
        return MCA_COLL_GPU_ARGS_SCAN == kind
                   ? m->prev.coll_scan_init(sbuf, rbuf, count, dtype, op, comm, info, request,
                                            m->prev.coll_scan_init_module)
                   : m->prev.coll_exscan_init(sbuf, rbuf, count, dtype, op, comm, info, request,
                                              m->prev.coll_exscan_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_scan_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm,
                         struct ompi_info_t *info, ompi_request_t **request,
                         mca_coll_base_module_t *module)
{
    return gpu_scan_like_init(MCA_COLL_GPU_ARGS_SCAN, sbuf, rbuf, count, dtype, op, comm, info, request,
                              module);
}

static int gpu_exscan_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, struct ompi_communicator_t *comm,
                           struct ompi_info_t *info, ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    return gpu_scan_like_init(MCA_COLL_GPU_ARGS_EXSCAN, sbuf, rbuf, count, dtype, op, comm, info, request,
                              module);
}

static int gpu_gather_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                           void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                           struct ompi_communicator_t *comm, struct ompi_info_t *info,
                           ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_GATHER, .sbuf = sbuf, .rbuf = rbuf,
                                 .scount = scount, .sdtype = sdtype, .rcount = rcount,
                                 .rdtype = rdtype, .root = root };
    if (gpu_prev_takes(module, &a)) {
        return GPU_M(module)->prev.coll_gather_init(sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                                    root, comm, info, request,
                                                    GPU_M(module)->prev.coll_gather_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_gatherv_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, const int *rcounts, const int *displs,
                            struct ompi_datatype_t *rdtype, int root,
                            struct ompi_communicator_t *comm, struct ompi_info_t *info,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_GATHERV, .sbuf = sbuf, .rbuf = rbuf,
                                 .scount = scount, .sdtype = sdtype, .rcounts = rcounts,
                                 .rdispls = displs, .rdtype = rdtype, .root = root };
    if (gpu_prev_takes(module, &a)) {
        return GPU_M(module)->prev.coll_gatherv_init(
            sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root, comm, info, request,
            GPU_M(module)->prev.coll_gatherv_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_reduce_init(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                           struct ompi_info_t *info, ompi_request_t **request,
                           mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_REDUCE, .sbuf = sbuf, .rbuf = rbuf,
                                 .rcount = count, .rdtype = dtype, .op = op, .root = root };
    if (gpu_prev_takes(module, &a)) {
        return GPU_M(module)->prev.coll_reduce_init(sbuf, rbuf, count, dtype, op, root, comm,
                                                    info, request,
                                                    GPU_M(module)->prev.coll_reduce_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_reduce_scatter_init(const void *sbuf, void *rbuf, const int *rcounts,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                   ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_REDUCE_SCATTER, .sbuf = sbuf, .rbuf = rbuf,
                                 .rcounts = rcounts, .rdtype = dtype, .op = op };
    if (gpu_prev_takes(module, &a)) {
        return GPU_M(module)->prev.coll_reduce_scatter_init(
            sbuf, rbuf, rcounts, dtype, op, comm, info, request,
            GPU_M(module)->prev.coll_reduce_scatter_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_reduce_scatter_block_init(const void *sbuf, void *rbuf, int rcount,
                                         struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                         struct ompi_communicator_t *comm,
                                         struct ompi_info_t *info, ompi_request_t **request,
                                         mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_REDUCE_SCATTER_BLOCK, .sbuf = sbuf, .rbuf = rbuf,
                                 .rcount = rcount, .rdtype = dtype, .op = op };
    if (gpu_prev_takes(module, &a)) {
        return GPU_M(module)->prev.coll_reduce_scatter_block_init(
            sbuf, rbuf, rcount, dtype, op, comm, info, request,
            GPU_M(module)->prev.coll_reduce_scatter_block_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_scatter_init(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                            struct ompi_communicator_t *comm, struct ompi_info_t *info,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_SCATTER, .sbuf = sbuf, .rbuf = rbuf,
                                 .scount = scount, .sdtype = sdtype, .rcount = rcount,
                                 .rdtype = rdtype, .root = root };
    if (gpu_prev_takes(module, &a)) {
        return GPU_M(module)->prev.coll_scatter_init(sbuf, scount, sdtype, rbuf, rcount, rdtype,
                                                     root, comm, info, request,
                                                     GPU_M(module)->prev.coll_scatter_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_scatterv_init(const void *sbuf, const int *scounts, const int *displs,
                             struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                             struct ompi_datatype_t *rdtype, int root,
                             struct ompi_communicator_t *comm, struct ompi_info_t *info,
                             ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_SCATTERV, .sbuf = sbuf, .rbuf = rbuf,
                                 .scounts = scounts, .sdispls = displs, .sdtype = sdtype,
                                 .rcount = rcount, .rdtype = rdtype, .root = root };
    if (gpu_prev_takes(module, &a)) {
        return GPU_M(module)->prev.coll_scatterv_init(
            sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root, comm, info, request,
            GPU_M(module)->prev.coll_scatterv_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

/*
 * Alltoallw_init: ours wherever ranks may mix memory kinds or a buffer is
 * device memory (each round runs our nonblocking form: libnbc on host
 * copies for device buffers, counted and in call order for host ones);
 * elsewhere the previous module's.  The request keeps the per-peer types.
 */
static int gpu_alltoallw_init(const void *sbuf, const int *scounts, const int *sdispls,
                              struct ompi_datatype_t *const *sdtypes, void *rbuf,
                              const int *rcounts, const int *rdispls,
                              struct ompi_datatype_t *const *rdtypes,
                              struct ompi_communicator_t *comm, struct ompi_info_t *info,
                              ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLTOALLW, .sbuf = sbuf,
                                    .scounts = scounts, .sdispls = sdispls, .sdtypes = sdtypes,
                                    .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls,
                                    .rdtypes = rdtypes };
    if (gpu_prev_takes(module, &a)) {
        return GPU_M(module)->prev.coll_alltoallw_init(
            sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm, info,
            request, GPU_M(module)->prev.coll_alltoallw_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

/*
 * Persistent barrier and neighborhood collectives (host buffers: no device
 * algorithm).  Where ranks may mix memory kinds, Open MPI's requests would
 * take their libnbc tag at init, possibly while a call of this
 * communicator waits in the queue for its peers' kinds; ours start each
 * round through the nonblocking entry, in call order behind such a call.
 * Device buffers are ours everywhere (each round stages); host buffers
 * elsewhere are the previous module's.
 */
static int gpu_ours_in_order(mca_coll_base_module_t *module, int has_nb)
{
    return has_nb && NULL != GPU_M(module)->kpost.slot;
}

static int gpu_barrier_init(struct ompi_communicator_t *comm, struct ompi_info_t *info,
                            ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_BARRIER };
    if (!gpu_ours_in_order(module, NULL != GPU_M(module)->super.coll_ibarrier)) {
        return GPU_M(module)->prev.coll_barrier_init(comm, info, request,
                                                     GPU_M(module)->prev.coll_barrier_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_neighbor_allgather_init(const void *sbuf, int scount,
                                       struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                       struct ompi_datatype_t *rdtype,
                                       struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                       ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHER, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcount = rcount, .rdtype = rdtype };
    if (!gpu_pdev(module, &a) &&
        !gpu_ours_in_order(module, NULL != GPU_M(module)->super.coll_ineighbor_allgather)) {
        return GPU_M(module)->prev.coll_neighbor_allgather_init(
            sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info, request,
            GPU_M(module)->prev.coll_neighbor_allgather_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_neighbor_allgatherv_init(const void *sbuf, int scount,
                                        struct ompi_datatype_t *sdtype, void *rbuf,
                                        const int *rcounts, const int *displs,
                                        struct ompi_datatype_t *rdtype,
                                        struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                        ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHERV, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype };
    if (!gpu_pdev(module, &a) &&
        !gpu_ours_in_order(module, NULL != GPU_M(module)->super.coll_ineighbor_allgatherv)) {
        return GPU_M(module)->prev.coll_neighbor_allgatherv_init(
            sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm, info, request,
            GPU_M(module)->prev.coll_neighbor_allgatherv_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_neighbor_alltoall_init(const void *sbuf, int scount,
                                      struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                      struct ompi_datatype_t *rdtype,
                                      struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                      ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALL, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcount = rcount, .rdtype = rdtype };
    if (!gpu_pdev(module, &a) &&
        !gpu_ours_in_order(module, NULL != GPU_M(module)->super.coll_ineighbor_alltoall)) {
        return GPU_M(module)->prev.coll_neighbor_alltoall_init(
            sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, info, request,
            GPU_M(module)->prev.coll_neighbor_alltoall_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_neighbor_alltoallv_init(const void *sbuf, const int *scounts, const int *sdispls,
                                       struct ompi_datatype_t *sdtype, void *rbuf,
                                       const int *rcounts, const int *rdispls,
                                       struct ompi_datatype_t *rdtype,
                                       struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                       ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLV, .sbuf = sbuf,
                                    .scounts = scounts, .sdispls = sdispls, .sdtype = sdtype,
                                    .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls,
                                    .rdtype = rdtype };
    if (!gpu_pdev(module, &a) &&
        !gpu_ours_in_order(module, NULL != GPU_M(module)->super.coll_ineighbor_alltoallv)) {
        return GPU_M(module)->prev.coll_neighbor_alltoallv_init(
            sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls, rdtype, comm, info, request,
            GPU_M(module)->prev.coll_neighbor_alltoallv_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

static int gpu_neighbor_alltoallw_init(const void *sbuf, const int *scounts,
                                       const MPI_Aint *sdispls,
                                       struct ompi_datatype_t *const *sdtypes, void *rbuf,
                                       const int *rcounts, const MPI_Aint *rdispls,
                                       struct ompi_datatype_t *const *rdtypes,
                                       struct ompi_communicator_t *comm, struct ompi_info_t *info,
                                       ompi_request_t **request, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLW, .sbuf = sbuf,
                                    .scounts = scounts, .sdispls_w = sdispls, .sdtypes = sdtypes,
                                    .rbuf = rbuf, .rcounts = rcounts, .rdispls_w = rdispls,
                                    .rdtypes = rdtypes };
    if (!gpu_pdev(module, &a) &&
        !gpu_ours_in_order(module, NULL != GPU_M(module)->super.coll_ineighbor_alltoallw)) {
        return GPU_M(module)->prev.coll_neighbor_alltoallw_init(
            sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls, rdtypes, comm, info, request,
            GPU_M(module)->prev.coll_neighbor_alltoallw_init_module);
    }
    return gpu_preq_new(module, &a, request);
}

/* Device calls run through our nonblocking entry points; host calls need
 * the module below us: where none provides one, leave the call to it */
void mca_coll_gpu_persistent_enable(mca_coll_gpu_module_t *m)
{
    mca_coll_base_module_t *s = &m->super;
    const mca_coll_base_comm_coll_t *p = &m->prev;
    if (NULL == p->coll_allgather_init) s->coll_allgather_init = NULL;
    if (NULL == p->coll_allgatherv_init) s->coll_allgatherv_init = NULL;
    if (NULL == p->coll_allreduce_init) s->coll_allreduce_init = NULL;
    if (NULL == p->coll_alltoall_init) s->coll_alltoall_init = NULL;
    if (NULL == p->coll_alltoallv_init) s->coll_alltoallv_init = NULL;
    if (NULL == p->coll_alltoallw_init) s->coll_alltoallw_init = NULL;
    if (NULL == p->coll_bcast_init) s->coll_bcast_init = NULL;
    if (NULL == p->coll_exscan_init) s->coll_exscan_init = NULL;
    if (NULL == p->coll_gather_init) s->coll_gather_init = NULL;
    if (NULL == p->coll_gatherv_init) s->coll_gatherv_init = NULL;
    if (NULL == p->coll_reduce_init) s->coll_reduce_init = NULL;
    if (NULL == p->coll_reduce_scatter_init) s->coll_reduce_scatter_init = NULL;
    if (NULL == p->coll_reduce_scatter_block_init) s->coll_reduce_scatter_block_init = NULL;
    if (NULL == p->coll_scan_init) s->coll_scan_init = NULL;
    if (NULL == p->coll_scatter_init) s->coll_scatter_init = NULL;
    if (NULL == p->coll_scatterv_init) s->coll_scatterv_init = NULL;
    if (NULL == p->coll_barrier_init) s->coll_barrier_init = NULL;
    if (NULL == p->coll_neighbor_allgather_init) s->coll_neighbor_allgather_init = NULL;
    if (NULL == p->coll_neighbor_allgatherv_init) s->coll_neighbor_allgatherv_init = NULL;
    if (NULL == p->coll_neighbor_alltoall_init) s->coll_neighbor_alltoall_init = NULL;
    if (NULL == p->coll_neighbor_alltoallv_init) s->coll_neighbor_alltoallv_init = NULL;
    if (NULL == p->coll_neighbor_alltoallw_init) s->coll_neighbor_alltoallw_init = NULL;
}

void mca_coll_gpu_install_persistent(mca_coll_gpu_module_t *m)
{
    m->super.coll_allgather_init = gpu_allgather_init;
    m->super.coll_allgatherv_init = gpu_allgatherv_init;
    m->super.coll_allreduce_init = gpu_allreduce_init;
    m->super.coll_alltoall_init = gpu_alltoall_init;
    m->super.coll_alltoallv_init = gpu_alltoallv_init;
    m->super.coll_alltoallw_init = gpu_alltoallw_init;
    m->super.coll_bcast_init = gpu_bcast_init;
    m->super.coll_exscan_init = gpu_exscan_init;
    m->super.coll_gather_init = gpu_gather_init;
    m->super.coll_gatherv_init = gpu_gatherv_init;
    m->super.coll_reduce_init = gpu_reduce_init;
    m->super.coll_reduce_scatter_init = gpu_reduce_scatter_init;
    m->super.coll_reduce_scatter_block_init = gpu_reduce_scatter_block_init;
    m->super.coll_scan_init = gpu_scan_init;
    m->super.coll_scatter_init = gpu_scatter_init;
    m->super.coll_scatterv_init = gpu_scatterv_init;
    m->super.coll_barrier_init = gpu_barrier_init;
    m->super.coll_neighbor_allgather_init = gpu_neighbor_allgather_init;
    m->super.coll_neighbor_allgatherv_init = gpu_neighbor_allgatherv_init;
    m->super.coll_neighbor_alltoall_init = gpu_neighbor_alltoall_init;
    m->super.coll_neighbor_alltoallv_init = gpu_neighbor_alltoallv_init;
    m->super.coll_neighbor_alltoallw_init = gpu_neighbor_alltoallw_init;
}
