/*
 * MPI_Allreduce entry point.
 */
#include "ompi_config.h"

#include "coll_gpu.h"

#include "opal/util/output.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"

int mca_coll_gpu_allreduce_any(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                               ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int in_place = (MPI_IN_PLACE == sbuf);
    const int rdev = mca_coll_gpu_is_device(rbuf);
    const int sdev = in_place ? rdev : mca_coll_gpu_is_device(sbuf);
    mca_coll_gpu_call_t call = { .what = "allreduce", .plan = NULL };
    int ret, ran = 0, go_dev;

    mca_coll_gpu_args_t a;   /* only where agree may keep it (coll_gpu.h) */
    const int need_args = NULL != req || rdev || sdev;
    if (need_args) {
        a = (mca_coll_gpu_args_t) { .kind = MCA_COLL_GPU_ARGS_ALLREDUCE, .sbuf = sbuf,
                                    .rbuf = rbuf, .rcount = count, .rdtype = dtype, .op = op };
    }
    ret = mca_coll_gpu_kind_agree(m, rdev && sdev, req, "allreduce", need_args ? &a : NULL,
                                  &go_dev);
    if (MPI_SUCCESS != ret || go_dev < 0) {
        return ret;   /* an error, or queued */
    }
    if (!rdev && !sdev) {
        mca_coll_gpu_host_note(m, sbuf, rbuf, req);
        return NULL != req ? m->prev.coll_iallreduce(sbuf, rbuf, count, dtype, op, comm, req,
                                                     m->prev.coll_iallreduce_module)
                           : m->prev.coll_allreduce(sbuf, rbuf, count, dtype, op, comm,
                                                    m->prev.coll_allreduce_module);
    }
    if (go_dev && MCA_COLL_GPU_ALGO_STAGED != mca_coll_gpu_component.allreduce_algorithm) {
        const mca_coll_gpu_hier_call_t hc = { .kind = MCA_COLL_GPU_HIER_ALLREDUCE, .sbuf = sbuf,
                                              .rbuf = rbuf, .count = count, .dtype = dtype,
                                              .op = op };
        ret = mca_coll_gpu_hier_run(m, &hc, req, &ran);
        if (ran) {
            return ret;
        }
    }
    if (MPI_SUCCESS == ret && go_dev &&
        MCA_COLL_GPU_ALGO_STAGED != mca_coll_gpu_component.allreduce_algorithm &&
        mca_coll_gpu_map(dtype, op, &call.dt, &call.op) &&
        mca_coll_gpu_native_ready(m, "allreduce", req, &ret)) {
        call.in = in_place ? rbuf : sbuf;
        call.out = rbuf;
        call.count = (size_t) count;
        call.args = &a;
        /* ranks time-slicing one GPU without MPS: a small allreduce stages
         * (fewer GPU operations, each waiting for a context switch), through
         * the nonblocking form so that the wait stays bounded (a peer whose
         * copy failed never joins the host algorithm) */
        if (NULL == req && MCA_COLL_GPU_ALGO_AUTO == mca_coll_gpu_component.allreduce_algorithm &&
            (size_t) count * gpu_dtype_size(call.dt) <= mca_coll_gpu_component.shared_staged_max &&
            gpu_engine_shared_nomps(m->engine) && !gpu_engine_direct(m->engine)) {
            ompi_request_t *inner = NULL;
            ret = mca_coll_gpu_kind_settle(m, "allreduce", &go_dev);
            if (MPI_SUCCESS != ret || !go_dev) {
                /* a host peer: the blocking host algorithm, as it runs */
                return MPI_SUCCESS != ret ? ret
                                          : mca_coll_gpu_allreduce_staged(sbuf, rbuf, count, dtype,
                                                                          op, comm, m, NULL);
            }
            ret = mca_coll_gpu_allreduce_staged(sbuf, rbuf, count, dtype, op, comm, m, &inner);
            return MPI_SUCCESS != ret ? ret
                                      : mca_coll_gpu_staged_wait(&inner, comm->c_name, "allreduce");
        }
        ret = mca_coll_gpu_native_run(m, &call, req, &ran);
        if (ran) {
            return ret;
        }
    }
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    return mca_coll_gpu_allreduce_staged(sbuf, rbuf, count, dtype, op, comm, m, req);
}

int mca_coll_gpu_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (mca_coll_gpu_host_again(m, sbuf, rbuf)) {
        return m->prev.coll_allreduce(sbuf, rbuf, count, dtype, op, comm,
                                      m->prev.coll_allreduce_module);
    }
    return mca_coll_gpu_allreduce_any(sbuf, rbuf, count, dtype, op, comm, module, NULL);
}
