/*
 * The module's MPI entry points: each packs its arguments into the call's
 * argument struct and routes it (coll_gpu_route.c).  Blocking calls on the
 * same host buffers as the module's last host-buffer call skip the route
 * (mca_coll_gpu_host_again): a host-buffer program's loop pays one
 * comparison.  The blocking neighborhood collectives are ours too, so a
 * device buffer never reaches a host algorithm; the blocking barrier is
 * ours only across nodes, where the hierarchy is up (gpu_barrier).
 */
#include "ompi_config.h"

#include "coll_gpu.h"
#include "coll_gpu_route.h"

#include "ompi/constants.h"

static int gpu_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (mca_coll_gpu_host_again(m, sbuf, rbuf)) {
        return m->prev.coll_allreduce(sbuf, rbuf, count, dtype, op, comm,
                                      m->prev.coll_allreduce_module);
    }
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLREDUCE, .sbuf = sbuf, .rbuf = rbuf,
                                    .rcount = count, .rdtype = dtype, .op = op };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, struct ompi_communicator_t *comm,
                          ompi_request_t **req, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLREDUCE, .sbuf = sbuf, .rbuf = rbuf,
                                    .rcount = count, .rdtype = dtype, .op = op };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                     struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (mca_coll_gpu_host_again(m, buf, buf)) {
        return m->prev.coll_bcast(buf, count, dtype, root, comm, m->prev.coll_bcast_module);
    }
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_BCAST, .rbuf = buf, .rcount = count,
                                    .rdtype = dtype, .root = root };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_ibcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                      struct ompi_communicator_t *comm, ompi_request_t **req,
                      mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_BCAST, .rbuf = buf, .rcount = count,
                                    .rdtype = dtype, .root = root };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                      struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                      mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_REDUCE, .sbuf = sbuf, .rbuf = rbuf,
                                    .rcount = count, .rdtype = dtype, .op = op, .root = root };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                       ompi_request_t **req, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_REDUCE, .sbuf = sbuf, .rbuf = rbuf,
                                    .rcount = count, .rdtype = dtype, .op = op, .root = root };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_scan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                    struct ompi_op_t *op, struct ompi_communicator_t *comm,
                    mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_SCAN, .sbuf = sbuf, .rbuf = rbuf,
                                    .rcount = count, .rdtype = dtype, .op = op };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_iscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                     struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **req,
                     mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_SCAN, .sbuf = sbuf, .rbuf = rbuf,
                                    .rcount = count, .rdtype = dtype, .op = op };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_exscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                      struct ompi_op_t *op, struct ompi_communicator_t *comm,
                      mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_EXSCAN, .sbuf = sbuf, .rbuf = rbuf,
                                    .rcount = count, .rdtype = dtype, .op = op };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_iexscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **req,
                       mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_EXSCAN, .sbuf = sbuf, .rbuf = rbuf,
                                    .rcount = count, .rdtype = dtype, .op = op };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_REDUCE_SCATTER_BLOCK, .sbuf = sbuf,
                                    .rbuf = rbuf, .rcount = rcount, .rdtype = dtype, .op = op };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                     struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                     struct ompi_communicator_t *comm, ompi_request_t **req,
                                     mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_REDUCE_SCATTER_BLOCK, .sbuf = sbuf,
                                    .rbuf = rbuf, .rcount = rcount, .rdtype = dtype, .op = op };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_REDUCE_SCATTER, .sbuf = sbuf,
                                    .rbuf = rbuf, .rcounts = rcounts, .rdtype = dtype, .op = op };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, ompi_request_t **req,
                               mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_REDUCE_SCATTER, .sbuf = sbuf,
                                    .rbuf = rbuf, .rcounts = rcounts, .rdtype = dtype, .op = op };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                         int rcount, struct ompi_datatype_t *rdtype,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (mca_coll_gpu_host_again(m, sbuf, rbuf)) {
        return m->prev.coll_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                      m->prev.coll_allgather_module);
    }
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLGATHER, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcount = rcount, .rdtype = rdtype };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                          int rcount, struct ompi_datatype_t *rdtype,
                          struct ompi_communicator_t *comm, ompi_request_t **req,
                          mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLGATHER, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcount = rcount, .rdtype = rdtype };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                          const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLGATHERV, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_iallgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                           const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                           struct ompi_communicator_t *comm, ompi_request_t **req,
                           mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLGATHERV, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                        int rcount, struct ompi_datatype_t *rdtype,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (mca_coll_gpu_host_again(m, sbuf, rbuf)) {
        return m->prev.coll_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                     m->prev.coll_alltoall_module);
    }
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLTOALL, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcount = rcount, .rdtype = rdtype };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                         int rcount, struct ompi_datatype_t *rdtype,
                         struct ompi_communicator_t *comm, ompi_request_t **req,
                         mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLTOALL, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcount = rcount, .rdtype = rdtype };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                         struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                         const int *rdispls, struct ompi_datatype_t *rdtype,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLTOALLV, .sbuf = sbuf,
                                    .scounts = scounts, .sdispls = sdispls, .sdtype = sdtype,
                                    .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls,
                                    .rdtype = rdtype };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_ialltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                          struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                          const int *rdispls, struct ompi_datatype_t *rdtype,
                          struct ompi_communicator_t *comm, ompi_request_t **req,
                          mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLTOALLV, .sbuf = sbuf,
                                    .scounts = scounts, .sdispls = sdispls, .sdtype = sdtype,
                                    .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls,
                                    .rdtype = rdtype };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_alltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                         struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                         const int *rdispls, struct ompi_datatype_t *const *rdtypes,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLTOALLW, .sbuf = sbuf,
                                    .scounts = scounts, .sdispls = sdispls, .sdtypes = sdtypes,
                                    .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls,
                                    .rdtypes = rdtypes };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_ialltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                          struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                          const int *rdispls, struct ompi_datatype_t *const *rdtypes,
                          struct ompi_communicator_t *comm, ompi_request_t **req,
                          mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLTOALLW, .sbuf = sbuf,
                                    .scounts = scounts, .sdispls = sdispls, .sdtypes = sdtypes,
                                    .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls,
                                    .rdtypes = rdtypes };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_gather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                      int rcount, struct ompi_datatype_t *rdtype, int root,
                      struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_GATHER, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcount = rcount, .rdtype = rdtype, .root = root };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_igather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       int rcount, struct ompi_datatype_t *rdtype, int root,
                       struct ompi_communicator_t *comm, ompi_request_t **req,
                       mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_GATHER, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcount = rcount, .rdtype = rdtype, .root = root };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_gatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                       int root, struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_GATHERV, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype,
                                    .root = root };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_igatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                        const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                        int root, struct ompi_communicator_t *comm, ompi_request_t **req,
                        mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_GATHERV, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype,
                                    .root = root };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_scatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       int rcount, struct ompi_datatype_t *rdtype, int root,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_SCATTER, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcount = rcount, .rdtype = rdtype, .root = root };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_iscatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                        int rcount, struct ompi_datatype_t *rdtype, int root,
                        struct ompi_communicator_t *comm, ompi_request_t **req,
                        mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_SCATTER, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcount = rcount, .rdtype = rdtype, .root = root };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_scatterv(const void *sbuf, const int *scounts, const int *displs,
                        struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                        struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                        mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_SCATTERV, .sbuf = sbuf,
                                    .scounts = scounts, .sdispls = displs, .sdtype = sdtype,
                                    .rbuf = rbuf, .rcount = rcount, .rdtype = rdtype,
                                    .root = root };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_iscatterv(const void *sbuf, const int *scounts, const int *displs,
                         struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                         struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
                         ompi_request_t **req, mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_SCATTERV, .sbuf = sbuf,
                                    .scounts = scounts, .sdispls = displs, .sdtype = sdtype,
                                    .rbuf = rbuf, .rcount = rcount, .rdtype = rdtype,
                                    .root = root };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_neighbor_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                  void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHER, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcount = rcount, .rdtype = rdtype };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_ineighbor_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                   void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                   struct ompi_communicator_t *comm, ompi_request_t **req,
                                   mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHER, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcount = rcount, .rdtype = rdtype };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_neighbor_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                   void *rbuf, const int *rcounts, const int *displs,
                                   struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                                   mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHERV, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_ineighbor_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                    void *rbuf, const int *rcounts, const int *displs,
                                    struct ompi_datatype_t *rdtype,
                                    struct ompi_communicator_t *comm, ompi_request_t **req,
                                    mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHERV, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_neighbor_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                 void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                 struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALL, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcount = rcount, .rdtype = rdtype };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_ineighbor_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                  void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm, ompi_request_t **req,
                                  mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALL, .sbuf = sbuf,
                                    .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                    .rcount = rcount, .rdtype = rdtype };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_neighbor_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                                  struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                  const int *rdispls, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLV, .sbuf = sbuf,
                                    .scounts = scounts, .sdispls = sdispls, .sdtype = sdtype,
                                    .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls,
                                    .rdtype = rdtype };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_ineighbor_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                                   struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                   const int *rdispls, struct ompi_datatype_t *rdtype,
                                   struct ompi_communicator_t *comm, ompi_request_t **req,
                                   mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLV, .sbuf = sbuf,
                                    .scounts = scounts, .sdispls = sdispls, .sdtype = sdtype,
                                    .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls,
                                    .rdtype = rdtype };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

static int gpu_neighbor_alltoallw(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                  struct ompi_datatype_t *const *sdtypes, void *rbuf,
                                  const int *rcounts, const MPI_Aint *rdispls,
                                  struct ompi_datatype_t *const *rdtypes,
                                  struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLW, .sbuf = sbuf,
                                    .scounts = scounts, .sdispls_w = sdispls, .sdtypes = sdtypes,
                                    .rbuf = rbuf, .rcounts = rcounts, .rdispls_w = rdispls,
                                    .rdtypes = rdtypes };
    return mca_coll_gpu_route(m, &a, NULL, NULL);
}

static int gpu_ineighbor_alltoallw(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                   struct ompi_datatype_t *const *sdtypes, void *rbuf,
                                   const int *rcounts, const MPI_Aint *rdispls,
                                   struct ompi_datatype_t *const *rdtypes,
                                   struct ompi_communicator_t *comm, ompi_request_t **req,
                                   mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLW, .sbuf = sbuf,
                                    .scounts = scounts, .sdispls_w = sdispls, .sdtypes = sdtypes,
                                    .rbuf = rbuf, .rcounts = rcounts, .rdispls_w = rdispls,
                                    .rdtypes = rdtypes };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

/* Across nodes a blocking barrier is the hierarchy's once a device call
 * has set it up there (mca_coll_gpu_hier_barrier: every rank answers
 * alike); elsewhere the previous module's, with no route: it moves no
 * memory, so there is no kind to agree. */
static int gpu_barrier(struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    int ran = 0, ret;
    if (!m->one_node && !OMPI_COMM_IS_INTER(comm)) {
        ret = mca_coll_gpu_hier_barrier(m, &ran);
        if (ran) {
            return ret;
        }
    }
    return m->prev.coll_barrier(comm, m->prev.coll_barrier_module);
}

static int gpu_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **req,
                        mca_coll_base_module_t *module)
{
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_BARRIER };
    return mca_coll_gpu_route((mca_coll_gpu_module_t *) module, &a, req, NULL);
}

int mca_coll_gpu_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    return gpu_allreduce(sbuf, rbuf, count, dtype, op, comm, module);
}

void mca_coll_gpu_install_entries(mca_coll_gpu_module_t *m)
{
    m->super.coll_allreduce = mca_coll_gpu_allreduce;
    m->super.coll_iallreduce = gpu_iallreduce;
    m->super.coll_bcast = gpu_bcast;
    m->super.coll_ibcast = gpu_ibcast;
    m->super.coll_reduce = gpu_reduce;
    m->super.coll_ireduce = gpu_ireduce;
    m->super.coll_scan = gpu_scan;
    m->super.coll_iscan = gpu_iscan;
    m->super.coll_exscan = gpu_exscan;
    m->super.coll_iexscan = gpu_iexscan;
    m->super.coll_reduce_scatter_block = gpu_reduce_scatter_block;
    m->super.coll_ireduce_scatter_block = gpu_ireduce_scatter_block;
    m->super.coll_reduce_scatter = gpu_reduce_scatter;
    m->super.coll_ireduce_scatter = gpu_ireduce_scatter;
    m->super.coll_allgather = gpu_allgather;
    m->super.coll_iallgather = gpu_iallgather;
    m->super.coll_allgatherv = gpu_allgatherv;
    m->super.coll_iallgatherv = gpu_iallgatherv;
    m->super.coll_alltoall = gpu_alltoall;
    m->super.coll_ialltoall = gpu_ialltoall;
    m->super.coll_alltoallv = gpu_alltoallv;
    m->super.coll_ialltoallv = gpu_ialltoallv;
    m->super.coll_alltoallw = gpu_alltoallw;
    m->super.coll_ialltoallw = gpu_ialltoallw;
    m->super.coll_gather = gpu_gather;
    m->super.coll_igather = gpu_igather;
    m->super.coll_gatherv = gpu_gatherv;
    m->super.coll_igatherv = gpu_igatherv;
    m->super.coll_scatter = gpu_scatter;
    m->super.coll_iscatter = gpu_iscatter;
    m->super.coll_scatterv = gpu_scatterv;
    m->super.coll_iscatterv = gpu_iscatterv;
    m->super.coll_neighbor_allgather = gpu_neighbor_allgather;
    m->super.coll_ineighbor_allgather = gpu_ineighbor_allgather;
    m->super.coll_neighbor_allgatherv = gpu_neighbor_allgatherv;
    m->super.coll_ineighbor_allgatherv = gpu_ineighbor_allgatherv;
    m->super.coll_neighbor_alltoall = gpu_neighbor_alltoall;
    m->super.coll_ineighbor_alltoall = gpu_ineighbor_alltoall;
    m->super.coll_neighbor_alltoallv = gpu_neighbor_alltoallv;
    m->super.coll_ineighbor_alltoallv = gpu_ineighbor_alltoallv;
    m->super.coll_neighbor_alltoallw = gpu_neighbor_alltoallw;
    m->super.coll_ineighbor_alltoallw = gpu_ineighbor_alltoallw;
    m->super.coll_barrier = gpu_barrier;
    m->super.coll_ibarrier = gpu_ibarrier;
}

/* Enable: what has nothing below it is not ours either (the previous
 * module's form is what the route would call). */
void mca_coll_gpu_entries_enable(mca_coll_gpu_module_t *m)
{
    if (NULL == m->prev.coll_iallreduce) {
        m->super.coll_iallreduce = NULL;
    }
    if (NULL == m->prev.coll_ibcast) {
        m->super.coll_ibcast = NULL;
    }
    if (NULL == m->prev.coll_ireduce) {
        m->super.coll_ireduce = NULL;
    }
    if (NULL == m->prev.coll_iscan) {
        m->super.coll_iscan = NULL;
    }
    if (NULL == m->prev.coll_iexscan) {
        m->super.coll_iexscan = NULL;
    }
    if (NULL == m->prev.coll_ireduce_scatter_block) {
        m->super.coll_ireduce_scatter_block = NULL;
    }
    if (NULL == m->prev.coll_ireduce_scatter) {
        m->super.coll_ireduce_scatter = NULL;
    }
    if (NULL == m->prev.coll_iallgather) {
        m->super.coll_iallgather = NULL;
    }
    if (NULL == m->prev.coll_iallgatherv) {
        m->super.coll_iallgatherv = NULL;
    }
    if (NULL == m->prev.coll_ialltoall) {
        m->super.coll_ialltoall = NULL;
    }
    if (NULL == m->prev.coll_ialltoallv) {
        m->super.coll_ialltoallv = NULL;
    }
    if (NULL == m->prev.coll_ialltoallw) {
        m->super.coll_ialltoallw = NULL;
    }
    if (NULL == m->prev.coll_igather) {
        m->super.coll_igather = NULL;
    }
    if (NULL == m->prev.coll_igatherv) {
        m->super.coll_igatherv = NULL;
    }
    if (NULL == m->prev.coll_iscatter) {
        m->super.coll_iscatter = NULL;
    }
    if (NULL == m->prev.coll_iscatterv) {
        m->super.coll_iscatterv = NULL;
    }
    if (NULL == m->prev.coll_neighbor_allgather) {
        m->super.coll_neighbor_allgather = NULL;
    }
    if (NULL == m->prev.coll_ineighbor_allgather) {
        m->super.coll_ineighbor_allgather = NULL;
    }
    if (NULL == m->prev.coll_neighbor_allgatherv) {
        m->super.coll_neighbor_allgatherv = NULL;
    }
    if (NULL == m->prev.coll_ineighbor_allgatherv) {
        m->super.coll_ineighbor_allgatherv = NULL;
    }
    if (NULL == m->prev.coll_neighbor_alltoall) {
        m->super.coll_neighbor_alltoall = NULL;
    }
    if (NULL == m->prev.coll_ineighbor_alltoall) {
        m->super.coll_ineighbor_alltoall = NULL;
    }
    if (NULL == m->prev.coll_neighbor_alltoallv) {
        m->super.coll_neighbor_alltoallv = NULL;
    }
    if (NULL == m->prev.coll_ineighbor_alltoallv) {
        m->super.coll_ineighbor_alltoallv = NULL;
    }
    if (NULL == m->prev.coll_neighbor_alltoallw) {
        m->super.coll_neighbor_alltoallw = NULL;
    }
    if (NULL == m->prev.coll_ineighbor_alltoallw) {
        m->super.coll_ineighbor_alltoallw = NULL;
    }
    if (NULL == m->prev.coll_barrier) {
        m->super.coll_barrier = NULL;
    }
    if (NULL == m->prev.coll_ibarrier) {
        m->super.coll_ibarrier = NULL;
    }
}
