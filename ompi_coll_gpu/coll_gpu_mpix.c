/*
 * The entry libgpucoll (mpix/, MPICH's MPIX_*_enqueue for Open MPI) calls
 * into: a collective on host buffers through the communicator's previous
 * coll module.  It runs on CUDA's host-function thread, where no CUDA call
 * is allowed, so it never looks at the buffers (the library staged them to
 * pinned host memory) and never takes the device paths.  The previous
 * module's nonblocking form is progressed here so that the wait is bounded
 * by coll_gpu_timeout: a peer that never enqueues its part fails the
 * collective with coll/gpu's error instead of holding the stream forever.
 * A stream communicator's allreduces and alltoalls run as kernels on the
 * stream instead (engine/gpu_engine_stream.c), set up when the
 * communicator is made.
 *
 * Version 5 lends that transport coll/gpu's UCX across nodes
 * (coll_gpu_mpix_net.c).
 * Version 4 serves the library's own host transport (mpix/gpucoll_mpix_shm.c),
 * which needs no thread level: the op and type are resolved here on the
 * application's thread, and the fold then runs this project's functors or
 * the application's own MPI_User_function on CUDA's thread, neither of
 * which is a call into Open MPI.
 */
#include "ompi_config.h"

#include "coll_gpu.h"

#include "opal/runtime/opal_progress.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"

#include "mpix/gpucoll_mpix_abi.h"
#include "util/gpu_clock.h"

static const char *const mca_coll_gpu_mpix_names[GPUCOLL_MPIX_NCOLLS] = {
    "MPIX_Allreduce_enqueue", "MPIX_Bcast_enqueue", "MPIX_Reduce_enqueue",
    "MPIX_Allgather_enqueue", "MPIX_Reduce_scatter_block_enqueue", "MPIX_Alltoall_enqueue"
};

/* the functions below coll/gpu on comm (all of comm's when coll/gpu does
 * not serve it: the buffers are host memory either way) */
static const mca_coll_base_comm_coll_t *mca_coll_gpu_mpix_below(ompi_communicator_t *comm)
{
    if (comm->c_coll->coll_allreduce == mca_coll_gpu_allreduce) {
        return &((mca_coll_gpu_module_t *) comm->c_coll->coll_allreduce_module)->prev;
    }
    return comm->c_coll;
}

static int mca_coll_gpu_mpix_start(const gpucoll_mpix_call_t *c, ompi_communicator_t *comm,
                                   ompi_request_t **req)
{
    const mca_coll_base_comm_coll_t *p = mca_coll_gpu_mpix_below(comm);

    switch (c->coll) {
    case GPUCOLL_MPIX_ALLREDUCE:
        return p->coll_iallreduce(c->sendbuf, c->recvbuf, c->scount, c->stype, c->op, comm, req,
                                  p->coll_iallreduce_module);
    case GPUCOLL_MPIX_BCAST:
        return p->coll_ibcast(c->recvbuf, c->scount, c->stype, c->root, comm, req,
                              p->coll_ibcast_module);
    case GPUCOLL_MPIX_REDUCE:
        return p->coll_ireduce(c->sendbuf, c->recvbuf, c->scount, c->stype, c->op, c->root, comm,
                               req, p->coll_ireduce_module);
    case GPUCOLL_MPIX_ALLGATHER:
        return p->coll_iallgather(c->sendbuf, c->scount, c->stype, c->recvbuf, c->rcount,
                                  c->rtype, comm, req, p->coll_iallgather_module);
    case GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK:
        return p->coll_ireduce_scatter_block(c->sendbuf, c->recvbuf, c->rcount, c->rtype, c->op,
                                             comm, req, p->coll_ireduce_scatter_block_module);
    case GPUCOLL_MPIX_ALLTOALL:
        return p->coll_ialltoall(c->sendbuf, c->scount, c->stype, c->recvbuf, c->rcount,
                                 c->rtype, comm, req, p->coll_ialltoall_module);
    default:
        return MPI_ERR_ARG;
    }
}

static int mca_coll_gpu_mpix_host(const gpucoll_mpix_call_t *c)
{
    ompi_communicator_t *comm = (ompi_communicator_t *) c->comm;
    const double limit = mca_coll_gpu_timeout_s();
    ompi_request_t *req = MPI_REQUEST_NULL;
    double start;
    int done = 0, ret;

    if ((unsigned) c->coll >= GPUCOLL_MPIX_NCOLLS) {
        return MPI_ERR_ARG;
    }
    mca_coll_gpu_in_cuda_callback = 1;
    ret = mca_coll_gpu_mpix_start(c, comm, &req);
    start = gpu_clock_now();
    while (MPI_SUCCESS == ret && !done) {
        ret = ompi_request_test(&req, &done, MPI_STATUS_IGNORE);
        if (MPI_SUCCESS != ret) {
            break;
        }
        if (!done && gpu_clock_now() - start > limit) {
            /* a collective request cannot be cancelled: it stays behind, and
             * the communicator with it; the error says which call and why */
            opal_output(0, "coll/gpu: %s on %s: no completion after %g s",
                        mca_coll_gpu_mpix_names[c->coll], comm->c_name, limit);
            ret = mca_coll_gpu_error(comm->c_name, mca_coll_gpu_mpix_names[c->coll],
                                     GPU_ERR_TIMEOUT, -1);
        }
    }
    mca_coll_gpu_in_cuda_callback = 0;
    return ret;
}

/* coll/gpu's module on comm, or NULL where it does not serve comm */
static mca_coll_gpu_module_t *mca_coll_gpu_mpix_module(ompi_communicator_t *comm)
{
    if (comm->c_coll->coll_allreduce != mca_coll_gpu_allreduce) {
        return NULL;
    }
    return (mca_coll_gpu_module_t *) comm->c_coll->coll_allreduce_module;
}

static int mca_coll_gpu_mpix_prepare(MPI_Comm c)
{
    mca_coll_gpu_module_t *m = mca_coll_gpu_mpix_module((ompi_communicator_t *) c);

    if (NULL == m || 0 == mca_coll_gpu_component.enqueue_kernel_max ||
        MCA_COLL_GPU_BOOT_NONE != m->boot) {
        return MPI_SUCCESS;
    }
    m->stream_comm = 1;
    return mca_coll_gpu_bootstrap(m, "MPIX_Stream_comm_create", 1);
}

static int mca_coll_gpu_mpix_stream_allreduce(const void *sbuf, void *rbuf, MPI_Count count,
                                              MPI_Datatype type, MPI_Op op, MPI_Comm c,
                                              void *stream)
{
    ompi_communicator_t *comm = (ompi_communicator_t *) c;
    mca_coll_gpu_module_t *m = mca_coll_gpu_mpix_module(comm);
    gpu_dtype_t dt;
    gpu_op_t gop;
    gpu_status_t st;
    int peer = -1;

    /* all of these are the same on every rank of comm */
    if (NULL == m || !m->stream_comm || MCA_COLL_GPU_BOOT_READY != m->boot ||
        NULL == m->engine || count < 0 ||
        !(mca_coll_gpu_map(type, op, &dt, &gop) || mca_coll_gpu_map_wide(type, op, &dt, &gop))) {
        return GPUCOLL_MPIX_NOT_TAKEN;
    }
    st = gpu_engine_stream_allreduce(m->engine, MPI_IN_PLACE == sbuf ? rbuf : sbuf, rbuf,
                                     (size_t) count, gop, dt, stream, &peer);
    if (GPU_ERR_UNSUPPORTED == st) {
        return GPUCOLL_MPIX_NOT_TAKEN;
    }
    /* which path a call took (test/run_gpu_tests.sh looks for it) */
    GPU_LOG(20, "MPIX_Allreduce_enqueue on %s: %lld %s, %s: kernels on the stream",
            comm->c_name, (long long) count, gpu_dtype_name(dt), gpu_op_name(gop));
    if (GPU_OK != st) {
        return mca_coll_gpu_error(comm->c_name, "MPIX_Allreduce_enqueue", st, peer);
    }
    return MPI_SUCCESS;
}

static int mca_coll_gpu_mpix_stream_alltoall(const void *sbuf, MPI_Count scount, MPI_Datatype stype,
                                             void *rbuf, MPI_Count rcount, MPI_Datatype rtype,
                                             MPI_Comm c, void *stream)
{
    ompi_communicator_t *comm = (ompi_communicator_t *) c;
    mca_coll_gpu_module_t *m = mca_coll_gpu_mpix_module(comm);
    mca_coll_gpu_geom_t sg, rg;
    gpu_status_t st;
    int peer = -1;

    /* the same on every rank of comm (counts and type signatures match) */
    if (NULL == m || !m->stream_comm || MCA_COLL_GPU_BOOT_READY != m->boot ||
        NULL == m->engine || MPI_IN_PLACE == sbuf || scount < 0 ||
        !mca_coll_gpu_geom((struct ompi_datatype_t *) stype, &sg) ||
        !mca_coll_gpu_geom((struct ompi_datatype_t *) rtype, &rg) ||
        (size_t) scount * sg.size != (size_t) rcount * rg.size) {
        return GPUCOLL_MPIX_NOT_TAKEN;
    }
    st = gpu_engine_stream_alltoall(m->engine, (const char *) sbuf + sg.lb, (char *) rbuf + rg.lb,
                                    (size_t) scount * sg.size, stream, &peer);
    if (GPU_ERR_UNSUPPORTED == st) {
        return GPUCOLL_MPIX_NOT_TAKEN;
    }
    if (GPU_OK != st) {
        return mca_coll_gpu_error(comm->c_name, "MPIX_Alltoall_enqueue", st, peer);
    }
    return MPI_SUCCESS;
}

/* the predefined type whose elements make up type, and how many of them
 * one element of type holds (itself and 1 for a predefined type) */
static int mca_coll_gpu_mpix_base(struct ompi_datatype_t *type, struct ompi_datatype_t **base,
                                  size_t *per)
{
    size_t size = 0, bsize = 0;
    if (ompi_datatype_is_predefined(type)) {
        *base = type;
        *per = 1;
        return 1;
    }
    *base = ompi_datatype_get_single_predefined_type_from_args(type);
    if (NULL == *base) {
        return 0;
    }
    ompi_datatype_type_size(type, &size);
    ompi_datatype_type_size(*base, &bsize);
    if (0 == bsize || 0 != size % bsize) {
        return 0;
    }
    *per = size / bsize;
    return 1;
}

static int mca_coll_gpu_mpix_host_fold(MPI_Datatype type, MPI_Op op, gpucoll_mpix_fold_t *f)
{
    struct ompi_op_t *o = (struct ompi_op_t *) op;
    struct ompi_datatype_t *base;
    gpu_dtype_t dt;
    gpu_op_t gop;

    memset(f, 0, sizeof(*f));
    if (!ompi_op_is_intrinsic(o)) {
        /* the application's C function; Fortran and C++ ops take other
         * arguments (and Java's a VM) */
        if (0 != (o->o_flags & (OMPI_OP_FLAGS_FORTRAN_FUNC | OMPI_OP_FLAGS_JAVA_FUNC)) ||
            NULL == o->o_func.c_fn) {
            return MPI_ERR_OP;
        }
        f->user = 1;
        f->fn = (void (*)(void *, void *, int *, MPI_Datatype *)) o->o_func.c_fn;
        f->type = type;
        return MPI_SUCCESS;
    }
    /* a derived type of one predefined type folds as that type's elements;
     * its layout is the library's business (it passes dense data only) */
    if (!mca_coll_gpu_mpix_base((struct ompi_datatype_t *) type, &base, &f->per) ||
        !(mca_coll_gpu_map(base, o, &dt, &gop) || mca_coll_gpu_map_wide(base, o, &dt, &gop))) {
        return MPI_ERR_OP;
    }
    f->gop = (int) gop;
    f->gdt = (int) dt;
    return MPI_SUCCESS;
}

static void mca_coll_gpu_mpix_fold_apply(const gpucoll_mpix_fold_t *f, const void *in,
                                         void *inout, size_t count)
{
    if (!f->user) {
        (void) gpu_reduce_host(inout, in, count * f->per, (gpu_op_t) f->gop,
                               (gpu_dtype_t) f->gdt);
        return;
    }
    /* MPI's function counts in int: pieces of INT_MAX elements */
    ptrdiff_t lb = 0, ext = 0;
    ompi_datatype_get_extent((struct ompi_datatype_t *) f->type, &lb, &ext);
    for (size_t done = 0; done < count;) {
        MPI_Datatype t = f->type;
        int len = count - done > INT_MAX ? INT_MAX : (int) (count - done);
        f->fn((char *) in + done * ext, (char *) inout + done * ext, &len, &t);
        done += (size_t) len;
    }
}

static double mca_coll_gpu_mpix_timeout(void)
{
    return mca_coll_gpu_timeout_s();
}

__thread int mca_coll_gpu_in_cuda_callback;

MCA_COLL_GPU_DECLSPEC const gpucoll_mpix_abi_t mca_coll_gpu_mpix_v1 = {
    .version = GPUCOLL_MPIX_ABI_VERSION,
    .host_collective = mca_coll_gpu_mpix_host,
    .stream_comm_prepare = mca_coll_gpu_mpix_prepare,
    .stream_allreduce = mca_coll_gpu_mpix_stream_allreduce,
    .stream_alltoall = mca_coll_gpu_mpix_stream_alltoall,
    .host_fold = mca_coll_gpu_mpix_host_fold,
    .fold_apply = mca_coll_gpu_mpix_fold_apply,
    .timeout_s = mca_coll_gpu_mpix_timeout,
    .net_open = mca_coll_gpu_mpix_net_open,
    .net_close = mca_coll_gpu_mpix_net_close,
    .net_isend = mca_coll_gpu_mpix_net_isend,
    .net_irecv = mca_coll_gpu_mpix_net_irecv,
    .net_test = mca_coll_gpu_mpix_net_test,
    .net_cancel = mca_coll_gpu_mpix_net_cancel,
};
