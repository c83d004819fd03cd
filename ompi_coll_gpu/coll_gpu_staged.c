/*
 * Staged path: the blocks a collective touches in device memory are
 * copied to host shadows (coll_gpu_stage.c), the previous (host) module
 * runs the collective on them, results are copied back.  Correct for any
 * datatype and op, user ops and non-contiguous types included.  Which
 * blocks each argument has is MPI's definition of the call: an argument
 * significant only at the root has none elsewhere, a v/w layout one per
 * peer, MPI_IN_PLACE none on the send side and its block read on the
 * receive side.  Staging is a purely local decision, so ranks may mix
 * host and device buffers here.  Predefined ops fold with this project's
 * functors (coll_gpu_hostop.c).
 */
#include "ompi_config.h"

#include "coll_gpu.h"
#include "coll_gpu_staged.h"

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"

/* the n blocks of a v layout (NULL counts: n blocks of count, back to back) */
static int gpu_stage_v(gpu_stage_t *s, int n, const int *counts, const int *displs,
                       struct ompi_datatype_t *dt, int in, int in_only)
{
    int ret = MPI_SUCCESS;
    for (int i = 0; i < n && MPI_SUCCESS == ret; ++i) {
        ret = mca_coll_gpu_stage_vblock(s, counts[i], dt, displs[i], in || i == in_only);
    }
    return ret;
}

/* count elements of dt at the start of the buffer */
static int gpu_stage_all(gpu_stage_t *s, size_t count, struct ompi_datatype_t *dt, int in)
{
    return mca_coll_gpu_stage_block(s, count, dt, 0, in);
}

/* stage both sides (ret: what building the blocks returned) */
static int gpu_stage_begin(int ret, gpu_stage_t *s, gpu_stage_t *r, void **sv, void **rv)
{
    if (MPI_SUCCESS != ret) {
        (void) mca_coll_gpu_stage_done(s, r, ret);
        return ret;
    }
    return mca_coll_gpu_stage_pair(s, r, sv, rv);
}

int mca_coll_gpu_allreduce_staged(const void *sbuf, void *rbuf, int count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                                  ompi_request_t **req)
{
    const int in_place = MPI_IN_PLACE == sbuf;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    mca_coll_gpu_stage_init(&s, sbuf, 0);
    mca_coll_gpu_stage_init(&r, rbuf, 1);
    ret = in_place ? MPI_SUCCESS : gpu_stage_all(&s, (size_t) count, dtype, 1);
    ret = MPI_SUCCESS != ret ? ret : gpu_stage_all(&r, (size_t) count, dtype, in_place);
    if (MPI_SUCCESS != (ret = gpu_stage_begin(ret, &s, &r, &sv, &rv))) {
        return ret;
    }
    ret = NULL != req ? m->prev.coll_iallreduce(sv, rv, count, dtype, mca_coll_gpu_host_op(op),
                                                comm, &inner, m->prev.coll_iallreduce_module)
                      : m->prev.coll_allreduce(sv, rv, count, dtype, mca_coll_gpu_host_op(op),
                                               comm, m->prev.coll_allreduce_module);
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "allreduce", req);
}

int mca_coll_gpu_reduce_staged(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                               ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int is_root = ompi_comm_rank(comm) == root, in_place = MPI_IN_PLACE == sbuf;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    mca_coll_gpu_stage_init(&s, sbuf, 0);
    mca_coll_gpu_stage_init(&r, rbuf, 1);
    ret = in_place ? MPI_SUCCESS : gpu_stage_all(&s, (size_t) count, dtype, 1);
    if (MPI_SUCCESS == ret && is_root) {
        ret = gpu_stage_all(&r, (size_t) count, dtype, in_place);
    }
    if (MPI_SUCCESS != (ret = gpu_stage_begin(ret, &s, &r, &sv, &rv))) {
        return ret;
    }
    ret = NULL != req ? m->prev.coll_ireduce(sv, rv, count, dtype, mca_coll_gpu_host_op(op), root,
                                             comm, &inner, m->prev.coll_ireduce_module)
                      : m->prev.coll_reduce(sv, rv, count, dtype, mca_coll_gpu_host_op(op), root,
                                            comm, m->prev.coll_reduce_module);
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "reduce", req);
}

static int gpu_scan_like(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                         struct ompi_op_t *op, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module, int exclusive, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int in_place = MPI_IN_PLACE == sbuf;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    mca_coll_gpu_stage_init(&s, sbuf, 0);
    mca_coll_gpu_stage_init(&r, rbuf, 1);
    ret = in_place ? MPI_SUCCESS : gpu_stage_all(&s, (size_t) count, dtype, 1);
    /* exscan leaves rank 0's rbuf undefined: copied in, it round-trips */
    ret = MPI_SUCCESS != ret ? ret
                             : gpu_stage_all(&r, (size_t) count, dtype,
                                             in_place || (exclusive && 0 == ompi_comm_rank(comm)));
    if (MPI_SUCCESS != (ret = gpu_stage_begin(ret, &s, &r, &sv, &rv))) {
        return ret;
    }
    if (exclusive) {
        ret = NULL != req ? m->prev.coll_iexscan(sv, rv, count, dtype, mca_coll_gpu_host_op(op),
                                                 comm, &inner, m->prev.coll_iexscan_module)
                          : m->prev.coll_exscan(sv, rv, count, dtype, mca_coll_gpu_host_op(op),
                                                comm, m->prev.coll_exscan_module);
    } else {
        ret = NULL != req ? m->prev.coll_iscan(sv, rv, count, dtype, mca_coll_gpu_host_op(op),
                                               comm, &inner, m->prev.coll_iscan_module)
                          : m->prev.coll_scan(sv, rv, count, dtype, mca_coll_gpu_host_op(op),
                                              comm, m->prev.coll_scan_module);
    }
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, exclusive ? "exscan" : "scan", req);
}

int mca_coll_gpu_scan_staged(const void *sbuf, void *rbuf, int count,
                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                             ompi_request_t **req)
{
    return gpu_scan_like(sbuf, rbuf, count, dtype, op, comm, module, 0, req);
}

int mca_coll_gpu_exscan_staged(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                               ompi_request_t **req)
{
    return gpu_scan_like(sbuf, rbuf, count, dtype, op, comm, module, 1, req);
}

int mca_coll_gpu_bcast_staged(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                              ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int is_root = ompi_comm_rank(comm) == root;
    gpu_stage_t r;
    void *rv;
    ompi_request_t *inner = NULL;
    int ret;
    /* the root only sends: nothing of its buffer is written back */
    mca_coll_gpu_stage_init(&r, buf, !is_root);
    ret = gpu_stage_all(&r, (size_t) count, dtype, is_root);
    if (MPI_SUCCESS != (ret = gpu_stage_begin(ret, NULL, &r, NULL, &rv))) {
        return ret;
    }
    ret = NULL != req ? m->prev.coll_ibcast(rv, count, dtype, root, comm, &inner,
                                            m->prev.coll_ibcast_module)
                      : m->prev.coll_bcast(rv, count, dtype, root, comm,
                                           m->prev.coll_bcast_module);
    return mca_coll_gpu_stage_finish(NULL, &r, ret, inner, m, "bcast", req);
}

int mca_coll_gpu_allgather_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                  void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm,
                                  mca_coll_base_module_t *module, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int in_place = MPI_IN_PLACE == sbuf;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    mca_coll_gpu_stage_init(&s, sbuf, 0);
    mca_coll_gpu_stage_init(&r, rbuf, 1);
    ret = in_place ? MPI_SUCCESS : gpu_stage_all(&s, (size_t) scount, sdtype, 1);
    ret = MPI_SUCCESS != ret ? ret
                             : gpu_stage_all(&r, (size_t) rcount * (size_t) ompi_comm_size(comm),
                                             rdtype, in_place);
    if (MPI_SUCCESS != (ret = gpu_stage_begin(ret, &s, &r, &sv, &rv))) {
        return ret;
    }
    ret = NULL != req ? m->prev.coll_iallgather(sv, scount, sdtype, rv, rcount, rdtype, comm,
                                                &inner, m->prev.coll_iallgather_module)
                      : m->prev.coll_allgather(sv, scount, sdtype, rv, rcount, rdtype, comm,
                                               m->prev.coll_allgather_module);
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "allgather", req);
}

int mca_coll_gpu_allgatherv_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                   void *rbuf, const int *rcounts, const int *displs,
                                   struct ompi_datatype_t *rdtype,
                                   struct ompi_communicator_t *comm,
                                   mca_coll_base_module_t *module, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int in_place = MPI_IN_PLACE == sbuf;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    mca_coll_gpu_stage_init(&s, sbuf, 0);
    mca_coll_gpu_stage_init(&r, rbuf, 1);
    ret = in_place ? MPI_SUCCESS : gpu_stage_all(&s, (size_t) scount, sdtype, 1);
    ret = MPI_SUCCESS != ret ? ret
                             : gpu_stage_v(&r, ompi_comm_size(comm), rcounts, displs, rdtype, 0,
                                           in_place ? ompi_comm_rank(comm) : -1);
    if (MPI_SUCCESS != (ret = gpu_stage_begin(ret, &s, &r, &sv, &rv))) {
        return ret;
    }
    ret = NULL != req ? m->prev.coll_iallgatherv(sv, scount, sdtype, rv, rcounts, displs, rdtype,
                                                 comm, &inner, m->prev.coll_iallgatherv_module)
                      : m->prev.coll_allgatherv(sv, scount, sdtype, rv, rcounts, displs, rdtype,
                                                comm, m->prev.coll_allgatherv_module);
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "allgatherv", req);
}

int mca_coll_gpu_alltoall_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                 void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                 struct ompi_communicator_t *comm,
                                 mca_coll_base_module_t *module, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int in_place = MPI_IN_PLACE == sbuf;
    const size_t n = (size_t) ompi_comm_size(comm);
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    mca_coll_gpu_stage_init(&s, sbuf, 0);
    mca_coll_gpu_stage_init(&r, rbuf, 1);
    ret = in_place ? MPI_SUCCESS : gpu_stage_all(&s, (size_t) scount * n, sdtype, 1);
    ret = MPI_SUCCESS != ret ? ret : gpu_stage_all(&r, (size_t) rcount * n, rdtype, in_place);
    if (MPI_SUCCESS != (ret = gpu_stage_begin(ret, &s, &r, &sv, &rv))) {
        return ret;
    }
    ret = NULL != req ? m->prev.coll_ialltoall(sv, scount, sdtype, rv, rcount, rdtype, comm,
                                               &inner, m->prev.coll_ialltoall_module)
                      : m->prev.coll_alltoall(sv, scount, sdtype, rv, rcount, rdtype, comm,
                                              m->prev.coll_alltoall_module);
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "alltoall", req);
}

int mca_coll_gpu_alltoallv_staged(const void *sbuf, const int *scounts, const int *sdispls,
                                  struct ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                                  const int *rdispls, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm,
                                  mca_coll_base_module_t *module, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int in_place = MPI_IN_PLACE == sbuf, n = ompi_comm_size(comm);
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    mca_coll_gpu_stage_init(&s, sbuf, 0);
    mca_coll_gpu_stage_init(&r, rbuf, 1);
    ret = in_place ? MPI_SUCCESS : gpu_stage_v(&s, n, scounts, sdispls, sdtype, 1, -1);
    ret = MPI_SUCCESS != ret ? ret : gpu_stage_v(&r, n, rcounts, rdispls, rdtype, in_place, -1);
    if (MPI_SUCCESS != (ret = gpu_stage_begin(ret, &s, &r, &sv, &rv))) {
        return ret;
    }
    ret = NULL != req ? m->prev.coll_ialltoallv(sv, scounts, sdispls, sdtype, rv, rcounts,
                                                rdispls, rdtype, comm, &inner,
                                                m->prev.coll_ialltoallv_module)
                      : m->prev.coll_alltoallv(sv, scounts, sdispls, sdtype, rv, rcounts, rdispls,
                                               rdtype, comm, m->prev.coll_alltoallv_module);
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "alltoallv", req);
}

int mca_coll_gpu_stage_w(gpu_stage_t *s, int n, const int *counts, const MPI_Aint *adispls,
                         const int *idispls, struct ompi_datatype_t *const *types, int in)
{
    int ret = MPI_SUCCESS;
    for (int i = 0; i < n && MPI_SUCCESS == ret; ++i) {
        const ptrdiff_t d = NULL != adispls ? (ptrdiff_t) adispls[i] : (ptrdiff_t) idispls[i];
        ret = counts[i] > 0 ? mca_coll_gpu_stage_block(s, (size_t) counts[i], types[i], d, in)
                            : MPI_SUCCESS;
    }
    return ret;
}

/* A communicator of one rank: the one block is a local copy.  Open MPI's
 * coll/self scales alltoallw's byte displacements by the datatype's extent
 * (4.1 and 5.0), so it is not handed the call. */
int mca_coll_gpu_alltoallw_self(const void *sbuf, const int *scounts, const int *sdispls,
                                struct ompi_datatype_t *const *sdtypes, void *rbuf,
                                const int *rcounts, const int *rdispls,
                                struct ompi_datatype_t *const *rdtypes)
{
    if (MPI_IN_PLACE == sbuf) {
        return MPI_SUCCESS;
    }
    return ompi_datatype_sndrcv((const char *) sbuf + sdispls[0], scounts[0], sdtypes[0],
                                (char *) rbuf + rdispls[0], rcounts[0], rdtypes[0]);
}

int mca_coll_gpu_alltoallw_staged(const void *sbuf, const int *scounts, const int *sdispls,
                                  struct ompi_datatype_t *const *sdtypes, void *rbuf,
                                  const int *rcounts, const int *rdispls,
                                  struct ompi_datatype_t *const *rdtypes,
                                  struct ompi_communicator_t *comm,
                                  mca_coll_base_module_t *module, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int in_place = MPI_IN_PLACE == sbuf, n = ompi_comm_size(comm);
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    mca_coll_gpu_stage_init(&s, sbuf, 0);
    mca_coll_gpu_stage_init(&r, rbuf, 1);
    ret = in_place ? MPI_SUCCESS : mca_coll_gpu_stage_w(&s, n, scounts, NULL, sdispls, sdtypes, 1);
    ret = MPI_SUCCESS != ret ? ret
                             : mca_coll_gpu_stage_w(&r, n, rcounts, NULL, rdispls, rdtypes,
                                                    in_place);
    if (MPI_SUCCESS != (ret = gpu_stage_begin(ret, &s, &r, &sv, &rv))) {
        return ret;
    }
    if (1 == n) {
        ret = mca_coll_gpu_alltoallw_self(sv, scounts, sdispls, sdtypes, rv, rcounts, rdispls,
                                          rdtypes);
        return mca_coll_gpu_fallback_done(mca_coll_gpu_stage_done(&s, &r, ret), req);
    }
    ret = NULL != req ? m->prev.coll_ialltoallw(sv, scounts, sdispls, sdtypes, rv, rcounts,
                                                rdispls, rdtypes, comm, &inner,
                                                m->prev.coll_ialltoallw_module)
                      : m->prev.coll_alltoallw(sv, scounts, sdispls, sdtypes, rv, rcounts,
                                               rdispls, rdtypes, comm,
                                               m->prev.coll_alltoallw_module);
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "alltoallw", req);
}

int mca_coll_gpu_gather_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                               void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                               ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int is_root = ompi_comm_rank(comm) == root;
    const int in_place = is_root && MPI_IN_PLACE == sbuf;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    mca_coll_gpu_stage_init(&s, sbuf, 0);
    mca_coll_gpu_stage_init(&r, rbuf, 1);
    ret = in_place ? MPI_SUCCESS : gpu_stage_all(&s, (size_t) scount, sdtype, 1);
    if (MPI_SUCCESS == ret && is_root) {
        ret = gpu_stage_all(&r, (size_t) rcount * (size_t) ompi_comm_size(comm), rdtype,
                            in_place);
    }
    if (MPI_SUCCESS != (ret = gpu_stage_begin(ret, &s, &r, &sv, &rv))) {
        return ret;
    }
    ret = NULL != req ? m->prev.coll_igather(sv, scount, sdtype, rv, rcount, rdtype, root, comm,
                                             &inner, m->prev.coll_igather_module)
                      : m->prev.coll_gather(sv, scount, sdtype, rv, rcount, rdtype, root, comm,
                                            m->prev.coll_gather_module);
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "gather", req);
}

int mca_coll_gpu_gatherv_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                void *rbuf, const int *rcounts, const int *displs,
                                struct ompi_datatype_t *rdtype, int root,
                                struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                                ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int is_root = ompi_comm_rank(comm) == root;
    const int in_place = is_root && MPI_IN_PLACE == sbuf;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    mca_coll_gpu_stage_init(&s, sbuf, 0);
    mca_coll_gpu_stage_init(&r, rbuf, 1);
    ret = in_place ? MPI_SUCCESS : gpu_stage_all(&s, (size_t) scount, sdtype, 1);
    if (MPI_SUCCESS == ret && is_root) {
        ret = gpu_stage_v(&r, ompi_comm_size(comm), rcounts, displs, rdtype, 0,
                          in_place ? root : -1);
    }
    if (MPI_SUCCESS != (ret = gpu_stage_begin(ret, &s, &r, &sv, &rv))) {
        return ret;
    }
    ret = NULL != req ? m->prev.coll_igatherv(sv, scount, sdtype, rv, rcounts, displs, rdtype,
                                              root, comm, &inner, m->prev.coll_igatherv_module)
                      : m->prev.coll_gatherv(sv, scount, sdtype, rv, rcounts, displs, rdtype,
                                             root, comm, m->prev.coll_gatherv_module);
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "gatherv", req);
}

int mca_coll_gpu_scatter_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                                struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                                ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int is_root = ompi_comm_rank(comm) == root;
    const int in_place = is_root && MPI_IN_PLACE == rbuf;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret = MPI_SUCCESS;
    mca_coll_gpu_stage_init(&s, sbuf, 0);
    mca_coll_gpu_stage_init(&r, rbuf, 1);
    if (is_root) {
        ret = gpu_stage_all(&s, (size_t) scount * (size_t) ompi_comm_size(comm), sdtype, 1);
    }
    if (MPI_SUCCESS == ret && !in_place) {
        ret = gpu_stage_all(&r, (size_t) rcount, rdtype, 0);
    }
    if (MPI_SUCCESS != (ret = gpu_stage_begin(ret, &s, &r, &sv, &rv))) {
        return ret;
    }
    ret = NULL != req ? m->prev.coll_iscatter(sv, scount, sdtype, rv, rcount, rdtype, root, comm,
                                              &inner, m->prev.coll_iscatter_module)
                      : m->prev.coll_scatter(sv, scount, sdtype, rv, rcount, rdtype, root, comm,
                                             m->prev.coll_scatter_module);
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "scatter", req);
}

int mca_coll_gpu_scatterv_staged(const void *sbuf, const int *scounts, const int *displs,
                                 struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                 struct ompi_datatype_t *rdtype, int root,
                                 struct ompi_communicator_t *comm,
                                 mca_coll_base_module_t *module, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int is_root = ompi_comm_rank(comm) == root;
    const int in_place = is_root && MPI_IN_PLACE == rbuf;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret = MPI_SUCCESS;
    mca_coll_gpu_stage_init(&s, sbuf, 0);
    mca_coll_gpu_stage_init(&r, rbuf, 1);
    if (is_root) {
        ret = gpu_stage_v(&s, ompi_comm_size(comm), scounts, displs, sdtype, 1, -1);
    }
    if (MPI_SUCCESS == ret && !in_place) {
        ret = gpu_stage_all(&r, (size_t) rcount, rdtype, 0);
    }
    if (MPI_SUCCESS != (ret = gpu_stage_begin(ret, &s, &r, &sv, &rv))) {
        return ret;
    }
    ret = NULL != req ? m->prev.coll_iscatterv(sv, scounts, displs, sdtype, rv, rcount, rdtype,
                                               root, comm, &inner, m->prev.coll_iscatterv_module)
                      : m->prev.coll_scatterv(sv, scounts, displs, sdtype, rv, rcount, rdtype,
                                              root, comm, m->prev.coll_scatterv_module);
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "scatterv", req);
}

int mca_coll_gpu_reduce_scatter_block_staged(const void *sbuf, void *rbuf, int rcount,
                                             struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                             struct ompi_communicator_t *comm,
                                             mca_coll_base_module_t *module,
                                             ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const size_t n = (size_t) ompi_comm_size(comm);
    const int in_place = MPI_IN_PLACE == sbuf;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    int ret;
    mca_coll_gpu_stage_init(&s, sbuf, 0);
    mca_coll_gpu_stage_init(&r, rbuf, 1);
    ret = in_place ? MPI_SUCCESS : gpu_stage_all(&s, (size_t) rcount * n, dtype, 1);
    ret = MPI_SUCCESS != ret ? ret
                             : gpu_stage_all(&r, (size_t) rcount * (in_place ? n : 1), dtype,
                                             in_place);
    if (MPI_SUCCESS != (ret = gpu_stage_begin(ret, &s, &r, &sv, &rv))) {
        return ret;
    }
    ret = NULL != req ? m->prev.coll_ireduce_scatter_block(sv, rv, rcount, dtype,
                                                           mca_coll_gpu_host_op(op), comm, &inner,
                                                           m->prev.coll_ireduce_scatter_block_module)
                      : m->prev.coll_reduce_scatter_block(sv, rv, rcount, dtype,
                                                          mca_coll_gpu_host_op(op), comm,
                                                          m->prev.coll_reduce_scatter_block_module);
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "reduce_scatter_block", req);
}

int mca_coll_gpu_reduce_scatter_staged(const void *sbuf, void *rbuf, const int *rcounts,
                                       struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                       struct ompi_communicator_t *comm,
                                       mca_coll_base_module_t *module, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int n = ompi_comm_size(comm), in_place = MPI_IN_PLACE == sbuf;
    gpu_stage_t s, r;
    void *sv, *rv;
    ompi_request_t *inner = NULL;
    size_t total = 0;
    int ret;
    for (int i = 0; i < n; ++i) {
        total += rcounts[i] > 0 ? (size_t) rcounts[i] : 0;
    }
    mca_coll_gpu_stage_init(&s, sbuf, 0);
    mca_coll_gpu_stage_init(&r, rbuf, 1);
    ret = in_place ? MPI_SUCCESS : gpu_stage_all(&s, total, dtype, 1);
    ret = MPI_SUCCESS != ret ? ret
                             : gpu_stage_all(&r, in_place ? total
                                                          : (size_t) rcounts[ompi_comm_rank(comm)],
                                             dtype, in_place);
    if (MPI_SUCCESS != (ret = gpu_stage_begin(ret, &s, &r, &sv, &rv))) {
        return ret;
    }
    ret = NULL != req ? m->prev.coll_ireduce_scatter(sv, rv, rcounts, dtype,
                                                     mca_coll_gpu_host_op(op), comm, &inner,
                                                     m->prev.coll_ireduce_scatter_module)
                      : m->prev.coll_reduce_scatter(sv, rv, rcounts, dtype,
                                                    mca_coll_gpu_host_op(op), comm,
                                                    m->prev.coll_reduce_scatter_module);
    return mca_coll_gpu_stage_finish(&s, &r, ret, inner, m, "reduce_scatter", req);
}
