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

#include "opal/util/output.h"
#include "opal/util/show_help.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"

typedef struct {
    void *user;     /* the caller's buffer, as passed */
    char *shadow;   /* host copy of [lo, hi) of the user buffer */
    ptrdiff_t lo, hi;
} gpu_stage_t;

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

static int gpu_stage_done(gpu_stage_t *s, gpu_stage_t *r, int ret)
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
                                  struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m)
{
    gpu_stage_t s, r;
    void *sv, *rv;
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
    ret = m->prev.coll_allreduce(sv, rv, count, dtype, mca_coll_gpu_host_op(op), comm,
                                 m->prev.coll_allreduce_module);
    return gpu_stage_done(&s, &r, ret);
}

int mca_coll_gpu_reduce_staged(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                      struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                      mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const int is_root = ompi_comm_rank(comm) == root;
    if (!mca_coll_gpu_is_device(sbuf) && !(is_root && mca_coll_gpu_is_device(rbuf))) {
        return m->prev.coll_reduce(sbuf, rbuf, count, dtype, op, root, comm,
                                   m->prev.coll_reduce_module);
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
    ret = m->prev.coll_reduce(sv, rv, count, dtype, mca_coll_gpu_host_op(op), root, comm,
                              m->prev.coll_reduce_module);
    return gpu_stage_done(&s, &r, ret);
}

static int gpu_scan_like(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module, int exclusive)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    mca_coll_base_module_scan_fn_t fn = exclusive ? m->prev.coll_exscan : m->prev.coll_scan;
    mca_coll_base_module_t *fm = exclusive ? m->prev.coll_exscan_module : m->prev.coll_scan_module;
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return fn(sbuf, rbuf, count, dtype, op, comm, fm);
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
    ret = fn(sv, rv, count, dtype, mca_coll_gpu_host_op(op), comm, fm);
    return gpu_stage_done(&s, &r, ret);
}

int mca_coll_gpu_scan_staged(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                    struct ompi_op_t *op, struct ompi_communicator_t *comm,
                    mca_coll_base_module_t *module)
{
    return gpu_scan_like(sbuf, rbuf, count, dtype, op, comm, module, 0);
}

int mca_coll_gpu_exscan_staged(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                      struct ompi_op_t *op, struct ompi_communicator_t *comm,
                      mca_coll_base_module_t *module)
{
    return gpu_scan_like(sbuf, rbuf, count, dtype, op, comm, module, 1);
}

int mca_coll_gpu_bcast_staged(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                     struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    int ret;
    gpu_stage_init(&s, NULL);
    gpu_stage_init(&r, buf);
    (void) sv;
    if (!mca_coll_gpu_is_device(buf)) {
        return m->prev.coll_bcast(buf, count, dtype, root, comm, m->prev.coll_bcast_module);
    }
    gpu_stage_extend(&r, (size_t) count, dtype, 0);
    ret = gpu_stage_in(&r, ompi_comm_rank(comm) == root, &rv);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = m->prev.coll_bcast(rv, count, dtype, root, comm, m->prev.coll_bcast_module);
    return gpu_stage_done(&s, &r, ret);
}

int mca_coll_gpu_allgather_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                         int rcount, struct ompi_datatype_t *rdtype,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return m->prev.coll_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                      m->prev.coll_allgather_module);
    }
    if (MPI_IN_PLACE != sbuf) {
        gpu_stage_extend(&s, (size_t) scount, sdtype, 0);
    }
    gpu_stage_extend(&r, (size_t) rcount * (size_t) ompi_comm_size(comm), rdtype, 0);
    ret = gpu_stage_pair(&s, 1, &r, MPI_IN_PLACE == sbuf, &sv, &rv);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = m->prev.coll_allgather(sv, scount, sdtype, rv, rcount, rdtype, comm,
                                 m->prev.coll_allgather_module);
    return gpu_stage_done(&s, &r, ret);
}

int mca_coll_gpu_allgatherv_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                          void *rbuf, const int *rcounts, const int *displs,
                          struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return m->prev.coll_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, comm,
                                       m->prev.coll_allgatherv_module);
    }
    if (MPI_IN_PLACE != sbuf) {
        gpu_stage_extend(&s, (size_t) scount, sdtype, 0);
    }
    gpu_stage_extend(&r, gpu_v_extent(rcounts, displs, ompi_comm_size(comm)), rdtype, 0);
    ret = gpu_stage_pair(&s, 1, &r, 1, &sv, &rv); /* bytes between blocks stay */
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = m->prev.coll_allgatherv(sv, scount, sdtype, rv, rcounts, displs, rdtype, comm,
                                  m->prev.coll_allgatherv_module);
    return gpu_stage_done(&s, &r, ret);
}

int mca_coll_gpu_alltoall_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                        int rcount, struct ompi_datatype_t *rdtype,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const size_t n = (size_t) ompi_comm_size(comm);
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return m->prev.coll_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                     m->prev.coll_alltoall_module);
    }
    if (MPI_IN_PLACE != sbuf) {
        gpu_stage_extend(&s, (size_t) scount * n, sdtype, 0);
    }
    gpu_stage_extend(&r, (size_t) rcount * n, rdtype, 0);
    ret = gpu_stage_pair(&s, 1, &r, MPI_IN_PLACE == sbuf, &sv, &rv);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = m->prev.coll_alltoall(sv, scount, sdtype, rv, rcount, rdtype, comm,
                                m->prev.coll_alltoall_module);
    return gpu_stage_done(&s, &r, ret);
}

int mca_coll_gpu_alltoallv_staged(const void *sbuf, const int *scounts, const int *sdispls,
                         struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                         const int *rdispls, struct ompi_datatype_t *rdtype,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const int n = ompi_comm_size(comm);
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return m->prev.coll_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts, rdispls,
                                      rdtype, comm, m->prev.coll_alltoallv_module);
    }
    if (MPI_IN_PLACE != sbuf) {
        gpu_stage_extend(&s, gpu_v_extent(scounts, sdispls, n), sdtype, 0);
    }
    gpu_stage_extend(&r, gpu_v_extent(rcounts, rdispls, n), rdtype, 0);
    ret = gpu_stage_pair(&s, 1, &r, 1, &sv, &rv); /* bytes between blocks stay */
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = m->prev.coll_alltoallv(sv, scounts, sdispls, sdtype, rv, rcounts, rdispls, rdtype, comm,
                                 m->prev.coll_alltoallv_module);
    return gpu_stage_done(&s, &r, ret);
}

int mca_coll_gpu_alltoallw_staged(const void *sbuf, const int *scounts, const int *sdispls,
                         struct ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts,
                         const int *rdispls, struct ompi_datatype_t *const *rdtypes,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const int n = ompi_comm_size(comm);
    int i;
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return m->prev.coll_alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls,
                                      rdtypes, comm, m->prev.coll_alltoallw_module);
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
    ret = m->prev.coll_alltoallw(sv, scounts, sdispls, sdtypes, rv, rcounts, rdispls, rdtypes,
                                 comm, m->prev.coll_alltoallw_module);
    return gpu_stage_done(&s, &r, ret);
}

int mca_coll_gpu_gather_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                      int rcount, struct ompi_datatype_t *rdtype, int root,
                      struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const int is_root = ompi_comm_rank(comm) == root;
    if (!mca_coll_gpu_is_device(sbuf) && !(is_root && mca_coll_gpu_is_device(rbuf))) {
        return m->prev.coll_gather(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                   m->prev.coll_gather_module);
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
    ret = m->prev.coll_gather(sv, scount, sdtype, rv, rcount, rdtype, root, comm,
                              m->prev.coll_gather_module);
    return gpu_stage_done(&s, &r, ret);
}

int mca_coll_gpu_gatherv_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype,
                       int root, struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const int is_root = ompi_comm_rank(comm) == root;
    if (!mca_coll_gpu_is_device(sbuf) && !(is_root && mca_coll_gpu_is_device(rbuf))) {
        return m->prev.coll_gatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype, root,
                                    comm, m->prev.coll_gatherv_module);
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
    ret = m->prev.coll_gatherv(sv, scount, sdtype, rv, rcounts, displs, rdtype, root, comm,
                               m->prev.coll_gatherv_module);
    return gpu_stage_done(&s, &r, ret);
}

int mca_coll_gpu_scatter_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void *rbuf,
                       int rcount, struct ompi_datatype_t *rdtype, int root,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const int is_root = ompi_comm_rank(comm) == root;
    if (!(is_root && mca_coll_gpu_is_device(sbuf)) && !mca_coll_gpu_is_device(rbuf)) {
        return m->prev.coll_scatter(sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm,
                                    m->prev.coll_scatter_module);
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
    ret = m->prev.coll_scatter(sv, scount, sdtype, rv, rcount, rdtype, root, comm,
                               m->prev.coll_scatter_module);
    return gpu_stage_done(&s, &r, ret);
}

int mca_coll_gpu_scatterv_staged(const void *sbuf, const int *scounts, const int *displs,
                        struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                        struct ompi_datatype_t *rdtype, int root,
                        struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const int is_root = ompi_comm_rank(comm) == root;
    if (!(is_root && mca_coll_gpu_is_device(sbuf)) && !mca_coll_gpu_is_device(rbuf)) {
        return m->prev.coll_scatterv(sbuf, scounts, displs, sdtype, rbuf, rcount, rdtype, root,
                                     comm, m->prev.coll_scatterv_module);
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
    ret = m->prev.coll_scatterv(sv, scounts, displs, sdtype, rv, rcount, rdtype, root, comm,
                                m->prev.coll_scatterv_module);
    return gpu_stage_done(&s, &r, ret);
}

int mca_coll_gpu_reduce_scatter_block_staged(const void *sbuf, void *rbuf, int rcount,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const size_t n = (size_t) ompi_comm_size(comm);
    const int in_place = MPI_IN_PLACE == sbuf;
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return m->prev.coll_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                                 m->prev.coll_reduce_scatter_block_module);
    }
    if (!in_place) {
        gpu_stage_extend(&s, (size_t) rcount * n, dtype, 0);
    }
    gpu_stage_extend(&r, (size_t) rcount * (in_place ? n : 1), dtype, 0);
    ret = gpu_stage_pair(&s, 1, &r, in_place, &sv, &rv);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    ret = m->prev.coll_reduce_scatter_block(sv, rv, rcount, dtype, mca_coll_gpu_host_op(op), comm,
                                            m->prev.coll_reduce_scatter_block_module);
    return gpu_stage_done(&s, &r, ret);
}

int mca_coll_gpu_reduce_scatter_staged(const void *sbuf, void *rbuf, const int *rcounts,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    gpu_stage_t s, r;
    void *sv, *rv;
    int ret;
    gpu_stage_init(&s, sbuf);
    gpu_stage_init(&r, rbuf);
    const int n = ompi_comm_size(comm), in_place = MPI_IN_PLACE == sbuf;
    size_t total = 0;
    int i;
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return m->prev.coll_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm,
                                           m->prev.coll_reduce_scatter_module);
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
    ret = m->prev.coll_reduce_scatter(sv, rv, rcounts, dtype, mca_coll_gpu_host_op(op), comm,
                                      m->prev.coll_reduce_scatter_module);
    return gpu_stage_done(&s, &r, ret);
}

void mca_coll_gpu_install_staged(mca_coll_gpu_module_t *m)
{
    m->super.coll_allgather = mca_coll_gpu_allgather_staged;
    m->super.coll_allgatherv = mca_coll_gpu_allgatherv_staged;
    m->super.coll_alltoall = mca_coll_gpu_alltoall_staged;
    m->super.coll_alltoallv = mca_coll_gpu_alltoallv_staged;
    m->super.coll_alltoallw = mca_coll_gpu_alltoallw_staged;
    m->super.coll_bcast = mca_coll_gpu_bcast_staged;
    m->super.coll_exscan = mca_coll_gpu_exscan_staged;
    m->super.coll_gather = mca_coll_gpu_gather_staged;
    m->super.coll_gatherv = mca_coll_gpu_gatherv_staged;
    m->super.coll_reduce = mca_coll_gpu_reduce_staged;
    m->super.coll_reduce_scatter = mca_coll_gpu_reduce_scatter_staged;
    m->super.coll_reduce_scatter_block = mca_coll_gpu_reduce_scatter_block_staged;
    m->super.coll_scan = mca_coll_gpu_scan_staged;
    m->super.coll_scatter = mca_coll_gpu_scatter_staged;
    m->super.coll_scatterv = mca_coll_gpu_scatterv_staged;
}
