/*
 * Staged path: a device buffer is copied to a host shadow, the previous
 * (host) module runs the collective, results are copied back.  Correct for
 * any datatype and op, including user ops and non-contiguous types, since
 * the shadow covers the whole byte range the datatype touches.  Staging is
 * a purely local decision, so ranks may mix host and device buffers here.
 * Predefined ops fold with this project's functors (coll_gpu_hostop.c).
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "coll_gpu.h"
#include "coll_gpu_staged.h"

#include "opal/util/output.h"
#include "opal/util/show_help.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "util/gpu_clock.h"


/* byte range [lo, hi) touched by count elements of dtype at byte offset disp */
static void gpu_stage_extend(gpu_stage_t *s, size_t count, struct ompi_datatype_t *dtype,
                             ptrdiff_t disp)
{
    ptrdiff_t true_lb, true_ext, lb, ext, lo, hi;
    if (0 == count) {
        return;
    }
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_ext);
    ompi_datatype_get_extent(dtype, &lb, &ext);
    lo = disp + true_lb;
    hi = lo + true_ext + (ptrdiff_t) (count - 1) * ext;
    if (s->hi <= s->lo) {
        s->lo = lo;
        s->hi = hi;
    } else {
        s->lo = lo < s->lo ? lo : s->lo;
        s->hi = hi > s->hi ? hi : s->hi;
    }
}

static void gpu_stage_init(gpu_stage_t *s, const void *buf)
{
    s->user = (void *) buf;
    s->shadow = NULL;
    s->lo = s->hi = 0;
}

/* Returns the pointer to hand to the host collective (the user's own if
 * it is host memory, MPI_IN_PLACE or empty). */
static int gpu_stage_in(gpu_stage_t *s, int copy_in, void **view)
{
    cudaError_t e;
    *view = s->user;
    if (s->hi <= s->lo || !mca_coll_gpu_is_device(s->user)) {
        return MPI_SUCCESS;
    }
    s->shadow = malloc((size_t) (s->hi - s->lo));
    if (NULL == s->shadow) {
        return MPI_ERR_NO_MEM;
    }
    if (copy_in) {
        e = cudaMemcpy(s->shadow, (char *) s->user + s->lo, (size_t) (s->hi - s->lo),
                       cudaMemcpyDefault);
        if (cudaSuccess != e) {
            mca_coll_gpu_show_help("staging-failed", s->hi - s->lo,
                           "device to host", cudaGetErrorString(e));
            free(s->shadow);
            s->shadow = NULL;
            return MPI_ERR_OTHER;
        }
    }
    *view = s->shadow - s->lo;
    return MPI_SUCCESS;
}

static int gpu_stage_out(gpu_stage_t *s, int copy_out)
{
    int ret = MPI_SUCCESS;
    if (NULL == s->shadow) {
        return MPI_SUCCESS;
    }
    if (copy_out) {
        cudaError_t e = cudaMemcpy((char *) s->user + s->lo, s->shadow, (size_t) (s->hi - s->lo),
                                   cudaMemcpyDefault);
        if (cudaSuccess != e) {
            mca_coll_gpu_show_help("staging-failed", s->hi - s->lo,
                           "host to device", cudaGetErrorString(e));
            ret = MPI_ERR_OTHER;
        }
    }
    free(s->shadow);
    s->shadow = NULL;
    return ret;
}

/* Stage two buffers around one host collective. */
static int gpu_stage_pair(gpu_stage_t *s, int s_in, gpu_stage_t *r, int r_in, void **sv, void **rv)
{
    int ret = gpu_stage_in(s, s_in, sv);
    if (MPI_SUCCESS == ret) {
        ret = gpu_stage_in(r, r_in, rv);
        if (MPI_SUCCESS != ret) {
            gpu_stage_out(s, 0);
        }
    }
    return ret;
}

int mca_coll_gpu_stage_done(gpu_stage_t *s, gpu_stage_t *r, int ret)
{
    int r2 = gpu_stage_out(r, MPI_SUCCESS == ret);
    gpu_stage_out(s, 0);
    return MPI_SUCCESS != ret ? ret : r2;
}

static size_t gpu_v_extent(const int *counts, const int *displs, int n)
{
    size_t hi = 0;
    int i;
    for (i = 0; i < n; ++i) {
        if (counts[i] > 0 && (size_t) (displs[i] + counts[i]) > hi) {
            hi = (size_t) (displs[i] + counts[i]);
        }
    }
    return hi;
}

int mca_coll_gpu_allreduce_staged(const void *sbuf, void *rbuf, int count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                                  ompi_request_t **req)
{
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    if (MPI_IN_PLACE != sbuf) {
        gpu_stage_extend(&s, (size_t) count, dtype, 0);
    }
    gpu_stage_extend(&r, (size_t) count, dtype, 0);
    ret = gpu_stage_pair(&s, 1, &r, MPI_IN_PLACE == sbuf, &sv, &rv);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = (NULL != req ? m->prev.coll_iallreduce(sv, rv, count, dtype, mca_coll_gpu_host_op(op),
            comm, &inner, m->prev.coll_iallreduce_module)
                     : m->prev.coll_allreduce(sv, rv, count, dtype, mca_coll_gpu_host_op(op), comm,
                             m->prev.coll_allreduce_module));
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "allreduce", req);
}

int mca_coll_gpu_reduce_staged(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                      struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                      mca_coll_base_module_t *module, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const int is_root = ompi_comm_rank(comm) == root;
    if (!mca_coll_gpu_is_device(sbuf) && !(is_root && mca_coll_gpu_is_device(rbuf))) {
        return (NULL != req ? m->prev.coll_ireduce(sbuf, rbuf, count, dtype, op, root, comm, req,
                m->prev.coll_ireduce_module)
                     : m->prev.coll_reduce(sbuf, rbuf, count, dtype, op, root, comm,
                             m->prev.coll_reduce_module));
    }
    if (MPI_IN_PLACE != sbuf) {
        gpu_stage_extend(&s, (size_t) count, dtype, 0);
    }
    if (is_root) {
        gpu_stage_extend(&r, (size_t) count, dtype, 0);
    }
    ret = gpu_stage_pair(&s, 1, &r, MPI_IN_PLACE == sbuf, &sv, &rv);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = (NULL != req ? m->prev.coll_ireduce(sv, rv, count, dtype, mca_coll_gpu_host_op(op), root,
            comm, &inner, m->prev.coll_ireduce_module)
                     : m->prev.coll_reduce(sv, rv, count, dtype, mca_coll_gpu_host_op(op), root,
                             comm, m->prev.coll_reduce_module));
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "reduce", req);
}

static int gpu_scan_like(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module, int exclusive, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    mca_coll_base_module_scan_fn_t fn = exclusive ? m->prev.coll_exscan : m->prev.coll_scan;
    mca_coll_base_module_t *fm = exclusive ? m->prev.coll_exscan_module : m->prev.coll_scan_module;
    mca_coll_base_module_iscan_fn_t ifn = exclusive ? m->prev.coll_iexscan : m->prev.coll_iscan;
    mca_coll_base_module_t *ifm = exclusive ? m->prev.coll_iexscan_module
                                            : m->prev.coll_iscan_module;
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return NULL != req ? ifn(sbuf, rbuf, count, dtype, op, comm, req, ifm)
                           : fn(sbuf, rbuf, count, dtype, op, comm, fm);
    }
    if (MPI_IN_PLACE != sbuf) {
        gpu_stage_extend(&s, (size_t) count, dtype, 0);
    }
    gpu_stage_extend(&r, (size_t) count, dtype, 0);
    /* exscan leaves rank 0's rbuf undefined: copy it in so it round-trips */
    ret = gpu_stage_pair(&s, 1, &r, 1, &sv, &rv);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = NULL != req ? ifn(sv, rv, count, dtype, mca_coll_gpu_host_op(op), comm, &inner, ifm)
                      : fn(sv, rv, count, dtype, mca_coll_gpu_host_op(op), comm, fm);
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, exclusive ? "exscan" : "scan", req);
}

int mca_coll_gpu_scan_staged(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                    struct ompi_op_t *op, struct ompi_communicator_t *comm,
                    mca_coll_base_module_t *module, ompi_request_t **req)
{
    return gpu_scan_like(sbuf, rbuf, count, dtype, op, comm, module, 0, req);
}

int mca_coll_gpu_exscan_staged(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                      struct ompi_op_t *op, struct ompi_communicator_t *comm,
                      mca_coll_base_module_t *module, ompi_request_t **req)
{
    return gpu_scan_like(sbuf, rbuf, count, dtype, op, comm, module, 1, req);
}

int mca_coll_gpu_bcast_staged(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                     struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                     ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    gpu_stage_init(&s, NULL);
    gpu_stage_init(&r, buf);
    (void) sv;
    if (!mca_coll_gpu_is_device(buf)) {
        return (NULL != req ? m->prev.coll_ibcast(buf, count, dtype, root, comm, req,
                m->prev.coll_ibcast_module)
                     : m->prev.coll_bcast(buf, count, dtype, root, comm,
                             m->prev.coll_bcast_module));
    }
    gpu_stage_extend(&r, (size_t) count, dtype, 0);
    /* every rank copies in: the copy back covers the gaps of a
     * non-contiguous type, which must keep their bytes */
    ret = gpu_stage_in(&r, 1, &rv);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = (NULL != req ? m->prev.coll_ibcast(rv, count, dtype, root, comm, &inner,
            m->prev.coll_ibcast_module)
                     : m->prev.coll_bcast(rv, count, dtype, root, comm, m->prev.coll_bcast_module));
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "bcast", req);
}

int mca_coll_gpu_allgather_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                         int rcount, struct ompi_datatype_t *rdtype,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                         ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return (NULL != req ? m->prev.coll_iallgather(sbuf, scount, sdtype, rbuf, rcount, rdtype,
                comm, req, m->prev.coll_iallgather_module)
                     : m->prev.coll_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                             m->prev.coll_allgather_module));
    }
    if (MPI_IN_PLACE != sbuf) {
        gpu_stage_extend(&s, (size_t) scount, sdtype, 0);
    }
    gpu_stage_extend(&r, (size_t) rcount * (size_t) ompi_comm_size(comm), rdtype, 0);
    ret = gpu_stage_pair(&s, 1, &r, MPI_IN_PLACE == sbuf, &sv, &rv);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = (NULL != req ? m->prev.coll_iallgather(sv, scount, sdtype, rv, rcount, rdtype, comm,
            &inner, m->prev.coll_iallgather_module)
                     : m->prev.coll_allgather(sv, scount, sdtype, rv, rcount, rdtype, comm,
                             m->prev.coll_allgather_module));
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "allgather", req);
}

int mca_coll_gpu_allgatherv_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                          void *rbuf, const int *rcounts, const int *displs,
                          struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return (NULL != req ? m->prev.coll_iallgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs,
                rdtype, comm, req, m->prev.coll_iallgatherv_module)
                     : m->prev.coll_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
                             comm, m->prev.coll_allgatherv_module));
    }
    if (MPI_IN_PLACE != sbuf) {
        gpu_stage_extend(&s, (size_t) scount, sdtype, 0);
    }
    gpu_stage_extend(&r, gpu_v_extent(rcounts, displs, ompi_comm_size(comm)), rdtype, 0);
    ret = gpu_stage_pair(&s, 1, &r, 1, &sv, &rv); /* bytes between blocks stay */
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = (NULL != req ? m->prev.coll_iallgatherv(sv, scount, sdtype, rv, rcounts, displs, rdtype,
            comm, &inner, m->prev.coll_iallgatherv_module)
                     : m->prev.coll_allgatherv(sv, scount, sdtype, rv, rcounts, displs, rdtype,
                             comm, m->prev.coll_allgatherv_module));
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "allgatherv", req);
}

int mca_coll_gpu_alltoall_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                        int rcount, struct ompi_datatype_t *rdtype,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                        ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const size_t n = (size_t) ompi_comm_size(comm);
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return (NULL != req ? m->prev.coll_ialltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype,
                comm, req, m->prev.coll_ialltoall_module)
                     : m->prev.coll_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                             m->prev.coll_alltoall_module));
    }
    if (MPI_IN_PLACE != sbuf) {
        gpu_stage_extend(&s, (size_t) scount * n, sdtype, 0);
    }
    gpu_stage_extend(&r, (size_t) rcount * n, rdtype, 0);
    ret = gpu_stage_pair(&s, 1, &r, MPI_IN_PLACE == sbuf, &sv, &rv);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = (NULL != req ? m->prev.coll_ialltoall(sv, scount, sdtype, rv, rcount, rdtype, comm,
            &inner, m->prev.coll_ialltoall_module)
                     : m->prev.coll_alltoall(sv, scount, sdtype, rv, rcount, rdtype, comm,
                             m->prev.coll_alltoall_module));
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "alltoall", req);
}

int mca_coll_gpu_alltoallv_staged(const void *sbuf, const int *scounts, const int *sdispls,
                         struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                         const int *rdispls, struct ompi_datatype_t *rdtype,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                         ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const int n = ompi_comm_size(comm);
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return (NULL != req ? m->prev.coll_ialltoallv(sbuf, scounts, sdispls, sdtype, rbuf,
                rcounts, rdispls,
                                      rdtype, comm, req, m->prev.coll_ialltoallv_module)
                     : m->prev.coll_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts,
                             rdispls,
                                      rdtype, comm, m->prev.coll_alltoallv_module));
    }
    if (MPI_IN_PLACE != sbuf) {
        gpu_stage_extend(&s, gpu_v_extent(scounts, sdispls, n), sdtype, 0);
    }
    gpu_stage_extend(&r, gpu_v_extent(rcounts, rdispls, n), rdtype, 0);
    ret = gpu_stage_pair(&s, 1, &r, 1, &sv, &rv); /* bytes between blocks stay */
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = (NULL != req ? m->prev.coll_ialltoallv(sv, scounts, sdispls, sdtype, rv, rcounts,
            rdispls, rdtype, comm, &inner, m->prev.coll_ialltoallv_module)
                     : m->prev.coll_alltoallv(sv, scounts, sdispls, sdtype, rv, rcounts, rdispls,
                             rdtype, comm, m->prev.coll_alltoallv_module));
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "alltoallv", req);
}

int mca_coll_gpu_alltoallw_staged(const void *sbuf, const int *scounts, const int *sdispls,
                         struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                         const int *rdispls, struct ompi_datatype_t *const *rdtypes,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                         ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const int n = ompi_comm_size(comm);
    int i;
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return (NULL != req ? m->prev.coll_ialltoallw(sbuf, scounts, sdispls, sdtypes, rbuf,
                rcounts, rdispls,
                                      rdtypes, comm, req, m->prev.coll_ialltoallw_module)
                     : m->prev.coll_alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts,
                             rdispls,
                                      rdtypes, comm, m->prev.coll_alltoallw_module));
    }
    for (i = 0; i < n; ++i) {
        if (MPI_IN_PLACE != sbuf) {
            gpu_stage_extend(&s, (size_t) scounts[i], sdtypes[i], sdispls[i]);
        }
        gpu_stage_extend(&r, (size_t) rcounts[i], rdtypes[i], rdispls[i]);
    }
    ret = gpu_stage_pair(&s, 1, &r, 1, &sv, &rv); /* bytes between blocks stay */
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = (NULL != req ? m->prev.coll_ialltoallw(sv, scounts, sdispls, sdtypes, rv, rcounts,
            rdispls, rdtypes,
                                 comm, &inner, m->prev.coll_ialltoallw_module)
                     : m->prev.coll_alltoallw(sv, scounts, sdispls, sdtypes, rv, rcounts, rdispls,
                             rdtypes,
                                 comm, m->prev.coll_alltoallw_module));
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "alltoallw", req);
}

int mca_coll_gpu_gather_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                      int rcount, struct ompi_datatype_t *rdtype, int root,
                      struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                      ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const int is_root = ompi_comm_rank(comm) == root;
    if (!mca_coll_gpu_is_device(sbuf) && !(is_root && mca_coll_gpu_is_device(rbuf))) {
        return (NULL != req ? m->prev.coll_igather(sbuf, scount, sdtype, rbuf, rcount, rdtype,
                root, comm, req, m->prev.coll_igather_module)
                     : m->prev.coll_gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                             m->prev.coll_gather_module));
    }
    if (MPI_IN_PLACE != sbuf) {
        gpu_stage_extend(&s, (size_t) scount, sdtype, 0);
    }
    if (is_root) {
        gpu_stage_extend(&r, (size_t) rcount * (size_t) ompi_comm_size(comm), rdtype, 0);
    }
    ret = gpu_stage_pair(&s, 1, &r, MPI_IN_PLACE == sbuf, &sv, &rv);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = (NULL != req ? m->prev.coll_igather(sv, scount, sdtype, rv, rcount, rdtype, root, comm,
            &inner, m->prev.coll_igather_module)
                     : m->prev.coll_gather(sv, scount, sdtype, rv, rcount, rdtype, root, comm,
                             m->prev.coll_gather_module));
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "gather", req);
}

int mca_coll_gpu_gatherv_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                       int root, struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                       ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const int is_root = ompi_comm_rank(comm) == root;
    if (!mca_coll_gpu_is_device(sbuf) && !(is_root && mca_coll_gpu_is_device(rbuf))) {
        return (NULL != req ? m->prev.coll_igatherv(sbuf, scount, sdtype, rbuf, rcounts, displs,
                rdtype, root,
                                    comm, req, m->prev.coll_igatherv_module)
                     : m->prev.coll_gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
                             root,
                                    comm, m->prev.coll_gatherv_module));
    }
    if (MPI_IN_PLACE != sbuf) {
        gpu_stage_extend(&s, (size_t) scount, sdtype, 0);
    }
    if (is_root) {
        gpu_stage_extend(&r, gpu_v_extent(rcounts, displs, ompi_comm_size(comm)), rdtype, 0);
    }
    ret = gpu_stage_pair(&s, 1, &r, 1, &sv, &rv); /* bytes between blocks stay */
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = (NULL != req ? m->prev.coll_igatherv(sv, scount, sdtype, rv, rcounts, displs, rdtype,
            root, comm, &inner, m->prev.coll_igatherv_module)
                     : m->prev.coll_gatherv(sv, scount, sdtype, rv, rcounts, displs, rdtype, root,
                             comm, m->prev.coll_gatherv_module));
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "gatherv", req);
}

int mca_coll_gpu_scatter_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       int rcount, struct ompi_datatype_t *rdtype, int root,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                       ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const int is_root = ompi_comm_rank(comm) == root;
    if (!(is_root && mca_coll_gpu_is_device(sbuf)) && !mca_coll_gpu_is_device(rbuf)) {
        return (NULL != req ? m->prev.coll_iscatter(sbuf, scount, sdtype, rbuf, rcount, rdtype,
                root, comm, req, m->prev.coll_iscatter_module)
                     : m->prev.coll_scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                             m->prev.coll_scatter_module));
    }
    if (is_root) {
        gpu_stage_extend(&s, (size_t) scount * (size_t) ompi_comm_size(comm), sdtype, 0);
    }
    if (MPI_IN_PLACE != rbuf) {
        gpu_stage_extend(&r, (size_t) rcount, rdtype, 0);
    }
    ret = gpu_stage_pair(&s, 1, &r, 0, &sv, &rv);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = (NULL != req ? m->prev.coll_iscatter(sv, scount, sdtype, rv, rcount, rdtype, root, comm,
            &inner, m->prev.coll_iscatter_module)
                     : m->prev.coll_scatter(sv, scount, sdtype, rv, rcount, rdtype, root, comm,
                             m->prev.coll_scatter_module));
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "scatter", req);
}

int mca_coll_gpu_scatterv_staged(const void *sbuf, const int *scounts, const int *displs,
                        struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                        struct ompi_datatype_t *rdtype, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                        ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const int is_root = ompi_comm_rank(comm) == root;
    if (!(is_root && mca_coll_gpu_is_device(sbuf)) && !mca_coll_gpu_is_device(rbuf)) {
        return (NULL != req ? m->prev.coll_iscatterv(sbuf, scounts, displs, sdtype, rbuf, rcount,
                rdtype, root,
                                     comm, req, m->prev.coll_iscatterv_module)
                     : m->prev.coll_scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype,
                             root,
                                     comm, m->prev.coll_scatterv_module));
    }
    if (is_root) {
        gpu_stage_extend(&s, gpu_v_extent(scounts, displs, ompi_comm_size(comm)), sdtype, 0);
    }
    if (MPI_IN_PLACE != rbuf) {
        gpu_stage_extend(&r, (size_t) rcount, rdtype, 0);
    }
    ret = gpu_stage_pair(&s, 1, &r, 0, &sv, &rv);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = (NULL != req ? m->prev.coll_iscatterv(sv, scounts, displs, sdtype, rv, rcount, rdtype,
            root, comm, &inner, m->prev.coll_iscatterv_module)
                     : m->prev.coll_scatterv(sv, scounts, displs, sdtype, rv, rcount, rdtype, root,
                             comm, m->prev.coll_scatterv_module));
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "scatterv", req);
}

int mca_coll_gpu_reduce_scatter_block_staged(const void *sbuf, void *rbuf, int rcount,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const size_t n = (size_t) ompi_comm_size(comm);
    const int in_place = MPI_IN_PLACE == sbuf;
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return (NULL != req ? m->prev.coll_ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op,
                comm, req, m->prev.coll_ireduce_scatter_block_module)
                     : m->prev.coll_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                             m->prev.coll_reduce_scatter_block_module));
    }
    if (!in_place) {
        gpu_stage_extend(&s, (size_t) rcount * n, dtype, 0);
    }
    gpu_stage_extend(&r, (size_t) rcount * (in_place ? n : 1), dtype, 0);
    ret = gpu_stage_pair(&s, 1, &r, in_place, &sv, &rv);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = (NULL != req ? m->prev.coll_ireduce_scatter_block(sv, rv, rcount, dtype,
            mca_coll_gpu_host_op(op), comm, &inner, m->prev.coll_ireduce_scatter_block_module)
                     : m->prev.coll_reduce_scatter_block(sv, rv, rcount, dtype,
                             mca_coll_gpu_host_op(op), comm,
                             m->prev.coll_reduce_scatter_block_module));
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "reduce_scatter_block", req);
}

int mca_coll_gpu_reduce_scatter_staged(const void *sbuf, void *rbuf, const int *rcounts,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                              ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const int n = ompi_comm_size(comm), in_place = MPI_IN_PLACE == sbuf;
    size_t total = 0;
    int i;
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return (NULL != req ? m->prev.coll_ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm,
                req, m->prev.coll_ireduce_scatter_module)
                     : m->prev.coll_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm,
                             m->prev.coll_reduce_scatter_module));
    }
    for (i = 0; i < n; ++i) {
        total += (size_t) rcounts[i];
    }
    if (!in_place) {
        gpu_stage_extend(&s, total, dtype, 0);
    }
    gpu_stage_extend(&r, in_place ? total : (size_t) rcounts[ompi_comm_rank(comm)], dtype, 0);
    ret = gpu_stage_pair(&s, 1, &r, in_place, &sv, &rv);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = (NULL != req ? m->prev.coll_ireduce_scatter(sv, rv, rcounts, dtype,
            mca_coll_gpu_host_op(op), comm, &inner, m->prev.coll_ireduce_scatter_module)
                     : m->prev.coll_reduce_scatter(sv, rv, rcounts, dtype,
                             mca_coll_gpu_host_op(op), comm, m->prev.coll_reduce_scatter_module));
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "reduce_scatter", req);
}
