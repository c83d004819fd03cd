/*
 * Intercommunicators: every collective stages.  Open MPI's inter modules
 * (coll/inter, basic, libnbc) run host loops over the user's buffers, so a
 * device buffer must never reach them; the engine has no path between
 * two groups.  Staging is a local decision, so no agreement is needed:
 * each rank copies the blocks MPI says its call touches (the root
 * arguments MPI_ROOT and MPI_PROC_NULL included) and hands the previous
 * module host copies.  Counts on the receive side follow the remote
 * group, reductions' send vectors the local one (MPI 4.1 section 6.9).
 */
#include "ompi_config.h"

#include "coll_gpu.h"
#include "coll_gpu_route.h"
#include "coll_gpu_staged.h"

#include "ompi/constants.h"

/* the blocks of a v layout over n peers */
static int gpu_inter_v(gpu_stage_t *s, int n, const int *counts, const int *displs,
                       struct ompi_datatype_t *dt, int in)
{
    int ret = MPI_SUCCESS;
    for (int i = 0; i < n && MPI_SUCCESS == ret; ++i) {
        ret = mca_coll_gpu_stage_vblock(s, counts[i], dt, displs[i], in);
    }
    return ret;
}

/* Both sides' blocks for the call in a, as MPI defines them on an
 * intercommunicator; root: MPI_ROOT, MPI_PROC_NULL or a remote rank. */
static int gpu_inter_blocks(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                            gpu_stage_t *s, gpu_stage_t *r)
{
    const int rsize = ompi_comm_remote_size(m->comm), lsize = ompi_comm_size(m->comm);
    const int is_root = MPI_ROOT == a->root, idle = MPI_PROC_NULL == a->root;
    int ret = MPI_SUCCESS;
    size_t total = 0;

    switch (a->kind) {
    case MCA_COLL_GPU_ARGS_ALLGATHER:
        ret = mca_coll_gpu_stage_block(s, (size_t) a->scount, a->sdtype, 0, 1);
        return MPI_SUCCESS != ret ? ret
                                  : mca_coll_gpu_stage_block(r, (size_t) a->rcount * rsize,
                                                             a->rdtype, 0, 0);
    case MCA_COLL_GPU_ARGS_ALLGATHERV:
        ret = mca_coll_gpu_stage_block(s, (size_t) a->scount, a->sdtype, 0, 1);
        return MPI_SUCCESS != ret ? ret
                                  : gpu_inter_v(r, rsize, a->rcounts, a->rdispls, a->rdtype, 0);
    case MCA_COLL_GPU_ARGS_ALLREDUCE:
        ret = mca_coll_gpu_stage_block(s, (size_t) a->rcount, a->rdtype, 0, 1);
        return MPI_SUCCESS != ret ? ret
                                  : mca_coll_gpu_stage_block(r, (size_t) a->rcount, a->rdtype, 0,
                                                             0);
    case MCA_COLL_GPU_ARGS_ALLTOALL:
        ret = mca_coll_gpu_stage_block(s, (size_t) a->scount * rsize, a->sdtype, 0, 1);
        return MPI_SUCCESS != ret ? ret
                                  : mca_coll_gpu_stage_block(r, (size_t) a->rcount * rsize,
                                                             a->rdtype, 0, 0);
    case MCA_COLL_GPU_ARGS_ALLTOALLV:
        ret = gpu_inter_v(s, rsize, a->scounts, a->sdispls, a->sdtype, 1);
        return MPI_SUCCESS != ret ? ret
                                  : gpu_inter_v(r, rsize, a->rcounts, a->rdispls, a->rdtype, 0);
    case MCA_COLL_GPU_ARGS_ALLTOALLW:
        ret = mca_coll_gpu_stage_w(s, rsize, a->scounts, NULL, a->sdispls, a->sdtypes, 1);
        return MPI_SUCCESS != ret ? ret
                                  : mca_coll_gpu_stage_w(r, rsize, a->rcounts, NULL, a->rdispls,
                                                         a->rdtypes, 0);
    case MCA_COLL_GPU_ARGS_BCAST:
        /* the root's buffer is only read; the other group's is written */
        r->out = !is_root;
        return idle ? MPI_SUCCESS
                    : mca_coll_gpu_stage_block(r, (size_t) a->rcount, a->rdtype, 0, is_root);
    case MCA_COLL_GPU_ARGS_GATHER:
        if (is_root) {
            return mca_coll_gpu_stage_block(r, (size_t) a->rcount * rsize, a->rdtype, 0, 0);
        }
        return idle ? MPI_SUCCESS
                    : mca_coll_gpu_stage_block(s, (size_t) a->scount, a->sdtype, 0, 1);
    case MCA_COLL_GPU_ARGS_GATHERV:
        if (is_root) {
            return gpu_inter_v(r, rsize, a->rcounts, a->rdispls, a->rdtype, 0);
        }
        return idle ? MPI_SUCCESS
                    : mca_coll_gpu_stage_block(s, (size_t) a->scount, a->sdtype, 0, 1);
    case MCA_COLL_GPU_ARGS_SCATTER:
        if (is_root) {
            return mca_coll_gpu_stage_block(s, (size_t) a->scount * rsize, a->sdtype, 0, 1);
        }
        return idle ? MPI_SUCCESS
                    : mca_coll_gpu_stage_block(r, (size_t) a->rcount, a->rdtype, 0, 0);
    case MCA_COLL_GPU_ARGS_SCATTERV:
        if (is_root) {
            return gpu_inter_v(s, rsize, a->scounts, a->sdispls, a->sdtype, 1);
        }
        return idle ? MPI_SUCCESS
                    : mca_coll_gpu_stage_block(r, (size_t) a->rcount, a->rdtype, 0, 0);
    case MCA_COLL_GPU_ARGS_REDUCE:
        if (is_root) {
            return mca_coll_gpu_stage_block(r, (size_t) a->rcount, a->rdtype, 0, 0);
        }
        return idle ? MPI_SUCCESS
                    : mca_coll_gpu_stage_block(s, (size_t) a->rcount, a->rdtype, 0, 1);
    case MCA_COLL_GPU_ARGS_REDUCE_SCATTER_BLOCK:
        ret = mca_coll_gpu_stage_block(s, (size_t) a->rcount * lsize, a->rdtype, 0, 1);
        return MPI_SUCCESS != ret ? ret
                                  : mca_coll_gpu_stage_block(r, (size_t) a->rcount, a->rdtype, 0,
                                                             0);
    case MCA_COLL_GPU_ARGS_REDUCE_SCATTER:
        for (int i = 0; i < lsize; ++i) {
            total += a->rcounts[i] > 0 ? (size_t) a->rcounts[i] : 0;
        }
        ret = mca_coll_gpu_stage_block(s, total, a->rdtype, 0, 1);
        return MPI_SUCCESS != ret ? ret
                                  : mca_coll_gpu_stage_block(r,
                                                             (size_t) a->rcounts[ompi_comm_rank(
                                                                 m->comm)],
                                                             a->rdtype, 0, 0);
    case MCA_COLL_GPU_ARGS_BARRIER:
        return MPI_SUCCESS;
    default:
        return MPI_ERR_COMM;   /* not a collective of intercommunicators */
    }
}

int mca_coll_gpu_inter_run(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                           ompi_request_t **req)
{
    mca_coll_gpu_args_t h = *a;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;

    mca_coll_gpu_stage_init(&s, a->sbuf, 0);
    mca_coll_gpu_stage_init(&r, a->rbuf, 1);
    ret = gpu_inter_blocks(m, a, &s, &r);
    if (MPI_SUCCESS != ret) {
        (void) mca_coll_gpu_stage_done(&s, &r, ret);
        return ret;
    }
    ret = mca_coll_gpu_stage_pair(&s, &r, &sv, &rv);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    h.sbuf = sv;
    h.rbuf = rv;
    ret = mca_coll_gpu_host_run(m, &h, NULL != req ? &inner : NULL);
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, mca_coll_gpu_coll_ops(a->kind)->name,
                                      req);
}
