/*
 * Nonblocking collectives on device buffers.  Open MPI 4.1's libnbc
 * reduces on the CPU through the buffer pointer, which crashes on device
 * memory, so a device-buffer call here completes at initiation through
 * the blocking path (engine or staged) and returns a completed request;
 * MPI allows a nonblocking collective to complete early.  Host-buffer
 * calls go to the previous module untouched.
 */
#include "ompi_config.h"

#include "coll_gpu.h"

#include "ompi/constants.h"
#include "ompi/request/request.h"


static int gpu_any_device(const void *a, const void *b)
{
    return mca_coll_gpu_is_device(a) || mca_coll_gpu_is_device(b);
}

static int gpu_done(int ret, ompi_request_t **request)
{
    if (MPI_SUCCESS == ret) {
        *request = &ompi_request_empty;
    }
    return ret;
}

static int gpu_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, struct ompi_communicator_t *comm,
                          ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (!gpu_any_device(sbuf, rbuf)) {
        return m->prev.coll_iallreduce(sbuf, rbuf, count, dtype, op, comm, request,
                                       m->prev.coll_iallreduce_module);
    }
    return gpu_done(m->super.coll_allreduce(sbuf, rbuf, count, dtype, op, comm, module), request);
}

static int gpu_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                       ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (!gpu_any_device(sbuf, rbuf)) {
        return m->prev.coll_ireduce(sbuf, rbuf, count, dtype, op, root, comm, request,
                                    m->prev.coll_ireduce_module);
    }
    return gpu_done(m->super.coll_reduce(sbuf, rbuf, count, dtype, op, root, comm, module),
                    request);
}

static int gpu_iscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                     struct ompi_op_t *op, struct ompi_communicator_t *comm,
                     ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (!gpu_any_device(sbuf, rbuf)) {
        return m->prev.coll_iscan(sbuf, rbuf, count, dtype, op, comm, request,
                                  m->prev.coll_iscan_module);
    }
    return gpu_done(m->super.coll_scan(sbuf, rbuf, count, dtype, op, comm, module), request);
}

static int gpu_iexscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, struct ompi_communicator_t *comm,
                       ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (!gpu_any_device(sbuf, rbuf)) {
        return m->prev.coll_iexscan(sbuf, rbuf, count, dtype, op, comm, request,
                                    m->prev.coll_iexscan_module);
    }
    return gpu_done(m->super.coll_exscan(sbuf, rbuf, count, dtype, op, comm, module), request);
}

static int gpu_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                      struct ompi_communicator_t *comm, ompi_request_t **request,
                      mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (!mca_coll_gpu_is_device(buf)) {
        return m->prev.coll_ibcast(buf, count, dtype, root, comm, request,
                                   m->prev.coll_ibcast_module);
    }
    return gpu_done(m->super.coll_bcast(buf, count, dtype, root, comm, module), request);
}

static int gpu_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                          void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                          struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (!gpu_any_device(sbuf, rbuf)) {
        return m->prev.coll_iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                       m->prev.coll_iallgather_module);
    }
    return gpu_done(m->super.coll_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                            module), request);
}

static int gpu_iallgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                           void *rbuf, const int *rcounts, const int *displs,
                           struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                           ompi_request_t **request, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (!gpu_any_device(sbuf, rbuf)) {
        return m->prev.coll_iallgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                                        request, m->prev.coll_iallgatherv_module);
    }
    return gpu_done(m->super.coll_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
                                             comm, module), request);
}

static int gpu_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                         int rcount, struct ompi_datatype_t *rdtype,
                         struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (!gpu_any_device(sbuf, rbuf)) {
        return m->prev.coll_ialltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm, request,
                                      m->prev.coll_ialltoall_module);
    }
    return gpu_done(m->super.coll_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                           module), request);
}

static int gpu_ialltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                          struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                          const int *rdispls, struct ompi_datatype_t *rdtype,
                          struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (!gpu_any_device(sbuf, rbuf)) {
        return m->prev.coll_ialltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                                       rdtype, comm, request, m->prev.coll_ialltoallv_module);
    }
    return gpu_done(m->super.coll_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts,
                                            rdispls, rdtype, comm, module), request);
}

static int gpu_ialltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                          struct ompi_datatype_t *const *sdtypes, void *rbuf,
                          const int *rcounts, const int *rdispls,
                          struct ompi_datatype_t *const *rdtypes,
                          struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (!gpu_any_device(sbuf, rbuf)) {
        return m->prev.coll_ialltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls,
                                       rdtypes, comm, request, m->prev.coll_ialltoallw_module);
    }
    return gpu_done(m->super.coll_alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts,
                                            rdispls, rdtypes, comm, module), request);
}

static int gpu_igather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       int rcount, struct ompi_datatype_t *rdtype, int root,
                       struct ompi_communicator_t *comm, ompi_request_t **request,
                       mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (!gpu_any_device(sbuf, rbuf)) {
        return m->prev.coll_igather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                    request, m->prev.coll_igather_module);
    }
    return gpu_done(m->super.coll_gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                         module), request);
}

static int gpu_igatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                        const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                        int root, struct ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (!gpu_any_device(sbuf, rbuf)) {
        return m->prev.coll_igatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root,
                                     comm, request, m->prev.coll_igatherv_module);
    }
    return gpu_done(m->super.coll_gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
                                          root, comm, module), request);
}

static int gpu_iscatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                        int rcount, struct ompi_datatype_t *rdtype, int root,
                        struct ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (!gpu_any_device(sbuf, rbuf)) {
        return m->prev.coll_iscatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                     request, m->prev.coll_iscatter_module);
    }
    return gpu_done(m->super.coll_scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                          module), request);
}

static int gpu_iscatterv(const void *sbuf, const int *scounts, const int *displs,
                         struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                         struct ompi_datatype_t *rdtype, int root,
                         struct ompi_communicator_t *comm, ompi_request_t **request,
                         mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (!gpu_any_device(sbuf, rbuf)) {
        return m->prev.coll_iscatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root,
                                      comm, request, m->prev.coll_iscatterv_module);
    }
    return gpu_done(m->super.coll_scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype,
                                           root, comm, module), request);
}

static int gpu_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                     struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                     struct ompi_communicator_t *comm, ompi_request_t **request,
                                     mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (!gpu_any_device(sbuf, rbuf)) {
        return m->prev.coll_ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm, request,
                                                  m->prev.coll_ireduce_scatter_block_module);
    }
    return gpu_done(m->super.coll_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                                       module), request);
}

static int gpu_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, ompi_request_t **request,
                               mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (!gpu_any_device(sbuf, rbuf)) {
        return m->prev.coll_ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, request,
                                            m->prev.coll_ireduce_scatter_module);
    }
    return gpu_done(m->super.coll_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, module),
                    request);
}

void mca_coll_gpu_install_nonblocking(mca_coll_gpu_module_t *m)
{
    m->super.coll_iallgather = gpu_iallgather;
    m->super.coll_iallgatherv = gpu_iallgatherv;
    m->super.coll_iallreduce = gpu_iallreduce;
    m->super.coll_ialltoall = gpu_ialltoall;
    m->super.coll_ialltoallv = gpu_ialltoallv;
    m->super.coll_ialltoallw = gpu_ialltoallw;
    m->super.coll_ibcast = gpu_ibcast;
    m->super.coll_iexscan = gpu_iexscan;
    m->super.coll_igather = gpu_igather;
    m->super.coll_igatherv = gpu_igatherv;
    m->super.coll_ireduce = gpu_ireduce;
    m->super.coll_ireduce_scatter = gpu_ireduce_scatter;
    m->super.coll_ireduce_scatter_block = gpu_ireduce_scatter_block;
    m->super.coll_iscan = gpu_iscan;
    m->super.coll_iscatter = gpu_iscatter;
    m->super.coll_iscatterv = gpu_iscatterv;
}
