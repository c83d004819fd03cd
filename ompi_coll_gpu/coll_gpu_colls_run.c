/*
 * The two runs every collective has (coll_gpu_route.h): the previous
 * module's own call (host buffers, untouched) and the staged call (host
 * copies of the device blocks around the previous module), blocking or
 * nonblocking (req).  The neighborhood collectives' staged forms are here
 * too: their blocks follow the communicator's in and out degrees.
 */
#include "ompi_config.h"

#include "coll_gpu.h"
#include "coll_gpu_route.h"
#include "coll_gpu_staged.h"

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/topo/base/base.h"

int mca_coll_gpu_host_run(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                          ompi_request_t **req)
{
    const mca_coll_base_comm_coll_t *p = &m->prev;
    struct ompi_communicator_t *c = m->comm;
    const int nb = NULL != req;

    switch (a->kind) {
    case MCA_COLL_GPU_ARGS_ALLGATHER:
        return nb ? p->coll_iallgather(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                       a->rdtype, c, req, p->coll_iallgather_module)
                  : p->coll_allgather(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                      a->rdtype, c, p->coll_allgather_module);
    case MCA_COLL_GPU_ARGS_ALLGATHERV:
        return nb ? p->coll_iallgatherv(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcounts,
                                        a->rdispls, a->rdtype, c, req, p->coll_iallgatherv_module)
                  : p->coll_allgatherv(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcounts,
                                       a->rdispls, a->rdtype, c, p->coll_allgatherv_module);
    case MCA_COLL_GPU_ARGS_ALLREDUCE:
        return nb ? p->coll_iallreduce(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op, c, req,
                                       p->coll_iallreduce_module)
                  : p->coll_allreduce(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op, c,
                                      p->coll_allreduce_module);
    case MCA_COLL_GPU_ARGS_ALLTOALL:
        return nb ? p->coll_ialltoall(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                      a->rdtype, c, req, p->coll_ialltoall_module)
                  : p->coll_alltoall(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype,
                                     c, p->coll_alltoall_module);
    case MCA_COLL_GPU_ARGS_ALLTOALLV:
        return nb ? p->coll_ialltoallv(a->sbuf, a->scounts, a->sdispls, a->sdtype, a->rbuf,
                                       a->rcounts, a->rdispls, a->rdtype, c, req,
                                       p->coll_ialltoallv_module)
                  : p->coll_alltoallv(a->sbuf, a->scounts, a->sdispls, a->sdtype, a->rbuf,
                                      a->rcounts, a->rdispls, a->rdtype, c,
                                      p->coll_alltoallv_module);
    case MCA_COLL_GPU_ARGS_ALLTOALLW:
        if (1 == ompi_comm_size(c) && !OMPI_COMM_IS_INTER(c)) {
            return mca_coll_gpu_fallback_done(
                mca_coll_gpu_alltoallw_self(a->sbuf, a->scounts, a->sdispls, a->sdtypes, a->rbuf,
                                            a->rcounts, a->rdispls, a->rdtypes),
                req);
        }
        return nb ? p->coll_ialltoallw(a->sbuf, a->scounts, a->sdispls, a->sdtypes, a->rbuf,
                                       a->rcounts, a->rdispls, a->rdtypes, c, req,
                                       p->coll_ialltoallw_module)
                  : p->coll_alltoallw(a->sbuf, a->scounts, a->sdispls, a->sdtypes, a->rbuf,
                                      a->rcounts, a->rdispls, a->rdtypes, c,
                                      p->coll_alltoallw_module);
    case MCA_COLL_GPU_ARGS_BCAST:
        return nb ? p->coll_ibcast(a->rbuf, a->rcount, a->rdtype, a->root, c, req,
                                   p->coll_ibcast_module)
                  : p->coll_bcast(a->rbuf, a->rcount, a->rdtype, a->root, c, p->coll_bcast_module);
    case MCA_COLL_GPU_ARGS_EXSCAN:
        return nb ? p->coll_iexscan(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op, c, req,
                                    p->coll_iexscan_module)
                  : p->coll_exscan(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op, c,
                                   p->coll_exscan_module);
    case MCA_COLL_GPU_ARGS_SCAN:
        return nb ? p->coll_iscan(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op, c, req,
                                  p->coll_iscan_module)
                  : p->coll_scan(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op, c,
                                 p->coll_scan_module);
    case MCA_COLL_GPU_ARGS_GATHER:
        return nb ? p->coll_igather(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype,
                                    a->root, c, req, p->coll_igather_module)
                  : p->coll_gather(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype,
                                   a->root, c, p->coll_gather_module);
    case MCA_COLL_GPU_ARGS_GATHERV:
        return nb ? p->coll_igatherv(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcounts,
                                     a->rdispls, a->rdtype, a->root, c, req,
                                     p->coll_igatherv_module)
                  : p->coll_gatherv(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcounts,
                                    a->rdispls, a->rdtype, a->root, c, p->coll_gatherv_module);
    case MCA_COLL_GPU_ARGS_REDUCE:
        return nb ? p->coll_ireduce(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op, a->root, c,
                                    req, p->coll_ireduce_module)
                  : p->coll_reduce(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op, a->root, c,
                                   p->coll_reduce_module);
    case MCA_COLL_GPU_ARGS_REDUCE_SCATTER:
        return nb ? p->coll_ireduce_scatter(a->sbuf, a->rbuf, a->rcounts, a->rdtype, a->op, c,
                                            req, p->coll_ireduce_scatter_module)
                  : p->coll_reduce_scatter(a->sbuf, a->rbuf, a->rcounts, a->rdtype, a->op, c,
                                           p->coll_reduce_scatter_module);
    case MCA_COLL_GPU_ARGS_REDUCE_SCATTER_BLOCK:
        return nb ? p->coll_ireduce_scatter_block(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op,
                                                  c, req, p->coll_ireduce_scatter_block_module)
                  : p->coll_reduce_scatter_block(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op,
                                                 c, p->coll_reduce_scatter_block_module);
    case MCA_COLL_GPU_ARGS_SCATTER:
        return nb ? p->coll_iscatter(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                     a->rdtype, a->root, c, req, p->coll_iscatter_module)
                  : p->coll_scatter(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype,
                                    a->root, c, p->coll_scatter_module);
    case MCA_COLL_GPU_ARGS_SCATTERV:
        return nb ? p->coll_iscatterv(a->sbuf, a->scounts, a->sdispls, a->sdtype, a->rbuf,
                                      a->rcount, a->rdtype, a->root, c, req,
                                      p->coll_iscatterv_module)
                  : p->coll_scatterv(a->sbuf, a->scounts, a->sdispls, a->sdtype, a->rbuf,
                                     a->rcount, a->rdtype, a->root, c, p->coll_scatterv_module);
    case MCA_COLL_GPU_ARGS_BARRIER:
        return nb ? p->coll_ibarrier(c, req, p->coll_ibarrier_module)
                  : p->coll_barrier(c, p->coll_barrier_module);
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHER:
        return nb ? p->coll_ineighbor_allgather(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                                a->rdtype, c, req,
                                                p->coll_ineighbor_allgather_module)
                  : p->coll_neighbor_allgather(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                               a->rdtype, c, p->coll_neighbor_allgather_module);
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHERV:
        return nb ? p->coll_ineighbor_allgatherv(a->sbuf, a->scount, a->sdtype, a->rbuf,
                                                 a->rcounts, a->rdispls, a->rdtype, c, req,
                                                 p->coll_ineighbor_allgatherv_module)
                  : p->coll_neighbor_allgatherv(a->sbuf, a->scount, a->sdtype, a->rbuf,
                                                a->rcounts, a->rdispls, a->rdtype, c,
                                                p->coll_neighbor_allgatherv_module);
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALL:
        return nb ? p->coll_ineighbor_alltoall(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                               a->rdtype, c, req,
                                               p->coll_ineighbor_alltoall_module)
                  : p->coll_neighbor_alltoall(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                              a->rdtype, c, p->coll_neighbor_alltoall_module);
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLV:
        return nb ? p->coll_ineighbor_alltoallv(a->sbuf, a->scounts, a->sdispls, a->sdtype,
                                                a->rbuf, a->rcounts, a->rdispls, a->rdtype, c, req,
                                                p->coll_ineighbor_alltoallv_module)
                  : p->coll_neighbor_alltoallv(a->sbuf, a->scounts, a->sdispls, a->sdtype,
                                               a->rbuf, a->rcounts, a->rdispls, a->rdtype, c,
                                               p->coll_neighbor_alltoallv_module);
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLW:
        return nb ? p->coll_ineighbor_alltoallw(a->sbuf, a->scounts, a->sdispls_w, a->sdtypes,
                                                a->rbuf, a->rcounts, a->rdispls_w, a->rdtypes, c,
                                                req, p->coll_ineighbor_alltoallw_module)
                  : p->coll_neighbor_alltoallw(a->sbuf, a->scounts, a->sdispls_w, a->sdtypes,
                                               a->rbuf, a->rcounts, a->rdispls_w, a->rdtypes, c,
                                               p->coll_neighbor_alltoallw_module);
    }
    return MPI_ERR_INTERN;
}

/* A neighborhood collective on host copies: the send side's blocks (one
 * block to every out-neighbour for allgather, one each otherwise), the
 * receive side's one per in-neighbour.  Receive blocks are copied in too:
 * a Cartesian neighbour that is MPI_PROC_NULL leaves its block untouched,
 * and the copy back must give it back its own bytes. */
static int gpu_staged_neighbor(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                               ompi_request_t **req)
{
    mca_coll_gpu_args_t h = *a;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int nin = 0, nout = 0, ret;

    if (OMPI_SUCCESS != mca_topo_base_neighbor_count(m->comm, &nin, &nout)) {
        return MPI_ERR_TOPOLOGY;
    }
    mca_coll_gpu_stage_init(&s, a->sbuf, 0);
    mca_coll_gpu_stage_init(&r, a->rbuf, 1);
    switch (a->kind) {
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHER:
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHERV:
        ret = mca_coll_gpu_stage_block(&s, (size_t) a->scount, a->sdtype, 0, 1);
        break;
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLW:
        ret = mca_coll_gpu_stage_w(&s, nout, a->scounts, a->sdispls_w, NULL, a->sdtypes, 1);
        break;
    default:
        ret = MPI_SUCCESS;
        for (int i = 0; i < nout && MPI_SUCCESS == ret; ++i) {
            ret = NULL != a->scounts
                      ? mca_coll_gpu_stage_vblock(&s, a->scounts[i], a->sdtype, a->sdispls[i], 1)
                      : mca_coll_gpu_stage_vblock(&s, a->scount, a->sdtype, i * a->scount, 1);
        }
    }
    if (MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLW == a->kind) {
        ret = MPI_SUCCESS != ret ? ret
                                 : mca_coll_gpu_stage_w(&r, nin, a->rcounts, a->rdispls_w, NULL,
                                                        a->rdtypes, 1);
    } else {
        for (int i = 0; i < nin && MPI_SUCCESS == ret; ++i) {
            ret = NULL != a->rcounts
                      ? mca_coll_gpu_stage_vblock(&r, a->rcounts[i], a->rdtype, a->rdispls[i], 1)
                      : mca_coll_gpu_stage_vblock(&r, a->rcount, a->rdtype, i * a->rcount, 1);
        }
    }
    if (MPI_SUCCESS == ret) {
        ret = mca_coll_gpu_stage_pair(&s, &r, &sv, &rv);
    } else {
        (void) mca_coll_gpu_stage_done(&s, &r, ret);
    }
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    h.sbuf = sv;
    h.rbuf = rv;
    ret = mca_coll_gpu_host_run(m, &h, NULL != req ? &inner : NULL);
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m,
                                      mca_coll_gpu_coll_ops(a->kind)->name, req);
}

int mca_coll_gpu_staged_run(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                            ompi_request_t **req)
{
    mca_coll_base_module_t *mod = &m->super;
    struct ompi_communicator_t *c = m->comm;

    switch (a->kind) {
    case MCA_COLL_GPU_ARGS_ALLGATHER:
        return mca_coll_gpu_allgather_staged(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                             a->rdtype, c, mod, req);
    case MCA_COLL_GPU_ARGS_ALLGATHERV:
        return mca_coll_gpu_allgatherv_staged(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcounts,
                                              a->rdispls, a->rdtype, c, mod, req);
    case MCA_COLL_GPU_ARGS_ALLREDUCE:
        return mca_coll_gpu_allreduce_staged(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op, c, m,
                                             req);
    case MCA_COLL_GPU_ARGS_ALLTOALL:
        return mca_coll_gpu_alltoall_staged(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                            a->rdtype, c, mod, req);
    case MCA_COLL_GPU_ARGS_ALLTOALLV:
        return mca_coll_gpu_alltoallv_staged(a->sbuf, a->scounts, a->sdispls, a->sdtype, a->rbuf,
                                             a->rcounts, a->rdispls, a->rdtype, c, mod, req);
    case MCA_COLL_GPU_ARGS_ALLTOALLW:
        return mca_coll_gpu_alltoallw_staged(a->sbuf, a->scounts, a->sdispls, a->sdtypes, a->rbuf,
                                             a->rcounts, a->rdispls, a->rdtypes, c, mod, req);
    case MCA_COLL_GPU_ARGS_BCAST:
        return mca_coll_gpu_bcast_staged(a->rbuf, a->rcount, a->rdtype, a->root, c, mod, req);
    case MCA_COLL_GPU_ARGS_EXSCAN:
        return mca_coll_gpu_exscan_staged(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op, c, mod,
                                          req);
    case MCA_COLL_GPU_ARGS_SCAN:
        return mca_coll_gpu_scan_staged(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op, c, mod,
                                        req);
    case MCA_COLL_GPU_ARGS_GATHER:
        return mca_coll_gpu_gather_staged(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                          a->rdtype, a->root, c, mod, req);
    case MCA_COLL_GPU_ARGS_GATHERV:
        return mca_coll_gpu_gatherv_staged(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcounts,
                                           a->rdispls, a->rdtype, a->root, c, mod, req);
    case MCA_COLL_GPU_ARGS_REDUCE:
        return mca_coll_gpu_reduce_staged(a->sbuf, a->rbuf, a->rcount, a->rdtype, a->op, a->root,
                                          c, mod, req);
    case MCA_COLL_GPU_ARGS_REDUCE_SCATTER:
        return mca_coll_gpu_reduce_scatter_staged(a->sbuf, a->rbuf, a->rcounts, a->rdtype, a->op,
                                                  c, mod, req);
    case MCA_COLL_GPU_ARGS_REDUCE_SCATTER_BLOCK:
        return mca_coll_gpu_reduce_scatter_block_staged(a->sbuf, a->rbuf, a->rcount, a->rdtype,
                                                        a->op, c, mod, req);
    case MCA_COLL_GPU_ARGS_SCATTER:
        return mca_coll_gpu_scatter_staged(a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount,
                                           a->rdtype, a->root, c, mod, req);
    case MCA_COLL_GPU_ARGS_SCATTERV:
        return mca_coll_gpu_scatterv_staged(a->sbuf, a->scounts, a->sdispls, a->sdtype, a->rbuf,
                                            a->rcount, a->rdtype, a->root, c, mod, req);
    case MCA_COLL_GPU_ARGS_BARRIER:
        return mca_coll_gpu_host_run(m, a, req);
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHER:
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHERV:
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALL:
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLV:
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLW:
        return gpu_staged_neighbor(m, a, req);
    }
    return MPI_ERR_INTERN;
}
