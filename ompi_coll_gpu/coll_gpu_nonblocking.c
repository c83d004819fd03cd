/*
 * Alltoallw, the one collective without a device-side algorithm (its
 * per-peer datatypes the exchange kernel does not describe): staged,
 * blocking or not.  Open MPI 4.1's libnbc would touch device memory from
 * the CPU, so a nonblocking device-buffer call runs libnbc's form on host
 * copies, and progress copies the results back (coll_gpu_staged.c).
 * Host-buffer calls go to the previous module untouched.
 * Ibarrier and the nonblocking neighborhood collectives pass through, in
 * call order behind calls queued for the peers' memory kinds.
 * The native nonblocking collectives live beside their blocking forms in
 * coll_gpu_native.c and coll_gpu_native_reduce.c.
 */
#include "ompi_config.h"

#include "coll_gpu.h"

#include "ompi/constants.h"
#include "ompi/request/request.h"

static int gpu_ialltoallw(const void *sbuf, const int *scounts, const int *sdispls,
                          struct ompi_datatype_t *const *sdtypes, void *rbuf,
                          const int *rcounts, const int *rdispls,
                          struct ompi_datatype_t *const *rdtypes,
                          struct ompi_communicator_t *comm, ompi_request_t **request,
                          mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_ALLTOALLW, .sbuf = sbuf,
                                     .scounts = scounts, .sdispls = sdispls, .sdtypes = sdtypes,
                                     .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls,
                                     .rdtypes = rdtypes };
    int go_dev, ret;
    /* every rank runs libnbc's form (on host copies where it has device
     * buffers): nothing to agree on, but the call is counted, and it
     * starts behind the calls queued before it */
    ret = mca_coll_gpu_kind_agree(m, 0, request, "ialltoallw", &a, &go_dev);
    if (MPI_SUCCESS != ret || go_dev < 0) {
        return ret;
    }
    if (!mca_coll_gpu_is_device(sbuf) && !mca_coll_gpu_is_device(rbuf)) {
        return m->prev.coll_ialltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls,
                                       rdtypes, comm, request, m->prev.coll_ialltoallw_module);
    }
    return mca_coll_gpu_alltoallw_staged(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls,
                                         rdtypes, comm, module, request);
}

static int gpu_alltoallw_blocking(const void *sbuf, const int *scounts, const int *sdispls,
                                  struct ompi_datatype_t *const *sdtypes, void *rbuf,
                                  const int *rcounts, const int *rdispls,
                                  struct ompi_datatype_t *const *rdtypes,
                                  struct ompi_communicator_t *comm,
                                  mca_coll_base_module_t *module)
{
    int go_dev;
    (void) mca_coll_gpu_kind_agree((mca_coll_gpu_module_t *) module, 0, NULL, "alltoallw",
                                   NULL, &go_dev);
    return mca_coll_gpu_alltoallw_staged(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts, rdispls,
                                         rdtypes, comm, module, NULL);
}

/* Ibarrier and the nonblocking neighborhood collectives (host buffers
 * only: no device-side algorithm, libnbc's form) post no kind: they only
 * keep their place behind the calls queued before them (Open MPI's
 * nonblocking collectives take their tags in the order each rank starts
 * them).  1 when the call was queued (or failed to): *ret is its answer. */
static int gpu_nb_behind_queue(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                               const char *what, ompi_request_t **request, int *ret)
{
    if (m->kskip) {
        m->kskip = 0;   /* its turn came */
        m->kforce = -1;
        return 0;
    }
    if (0 == m->kq) {
        return 0;
    }
    *ret = mca_coll_gpu_request_queue(m, request, a, what, 0, 0);
    return 1;
}

static int gpu_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_BARRIER };
    int ret;
    if (gpu_nb_behind_queue(m, &a, "ibarrier", request, &ret)) {
        return ret;
    }
    return m->prev.coll_ibarrier(comm, request, m->prev.coll_ibarrier_module);
}

static int gpu_ineighbor_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                   void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                   struct ompi_communicator_t *comm, ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_INEIGHBOR_ALLGATHER, .sbuf = sbuf,
                                     .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                     .rcount = rcount, .rdtype = rdtype };
    int ret;
    if (gpu_nb_behind_queue(m, &a, "ineighbor_allgather", request, &ret)) {
        return ret;
    }
    return m->prev.coll_ineighbor_allgather(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                            request, m->prev.coll_ineighbor_allgather_module);
}

static int gpu_ineighbor_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                    void *rbuf, const int *rcounts, const int *displs,
                                    struct ompi_datatype_t *rdtype,
                                    struct ompi_communicator_t *comm, ompi_request_t **request,
                                    mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_INEIGHBOR_ALLGATHERV, .sbuf = sbuf,
                                     .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                     .rcounts = rcounts, .rdispls = displs, .rdtype = rdtype };
    int ret;
    if (gpu_nb_behind_queue(m, &a, "ineighbor_allgatherv", request, &ret)) {
        return ret;
    }
    return m->prev.coll_ineighbor_allgatherv(sbuf, scount, sdtype, rbuf, rcounts, displs, rdtype,
                                             comm, request,
                                             m->prev.coll_ineighbor_allgatherv_module);
}

static int gpu_ineighbor_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                                  void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                                  struct ompi_communicator_t *comm, ompi_request_t **request,
                                  mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_INEIGHBOR_ALLTOALL, .sbuf = sbuf,
                                     .scount = scount, .sdtype = sdtype, .rbuf = rbuf,
                                     .rcount = rcount, .rdtype = rdtype };
    int ret;
    if (gpu_nb_behind_queue(m, &a, "ineighbor_alltoall", request, &ret)) {
        return ret;
    }
    return m->prev.coll_ineighbor_alltoall(sbuf, scount, sdtype, rbuf, rcount, rdtype, comm,
                                           request, m->prev.coll_ineighbor_alltoall_module);
}

static int gpu_ineighbor_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                                   struct ompi_datatype_t *sdtype, void *rbuf,
                                   const int *rcounts, const int *rdispls,
                                   struct ompi_datatype_t *rdtype,
                                   struct ompi_communicator_t *comm, ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_INEIGHBOR_ALLTOALLV, .sbuf = sbuf,
                                     .scounts = scounts, .sdispls = sdispls, .sdtype = sdtype,
                                     .rbuf = rbuf, .rcounts = rcounts, .rdispls = rdispls,
                                     .rdtype = rdtype };
    int ret;
    if (gpu_nb_behind_queue(m, &a, "ineighbor_alltoallv", request, &ret)) {
        return ret;
    }
    return m->prev.coll_ineighbor_alltoallv(sbuf, scounts, sdispls, sdtype, rbuf, rcounts,
                                            rdispls, rdtype, comm, request,
                                            m->prev.coll_ineighbor_alltoallv_module);
}

static int gpu_ineighbor_alltoallw(const void *sbuf, const int *scounts, const MPI_Aint *sdispls,
                                   struct ompi_datatype_t *const *sdtypes, void *rbuf,
                                   const int *rcounts, const MPI_Aint *rdispls,
                                   struct ompi_datatype_t *const *rdtypes,
                                   struct ompi_communicator_t *comm, ompi_request_t **request,
                                   mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_INEIGHBOR_ALLTOALLW, .sbuf = sbuf,
                                     .scounts = scounts, .sdispls_w = sdispls,
                                     .sdtypes = sdtypes, .rbuf = rbuf, .rcounts = rcounts,
                                     .rdispls_w = rdispls, .rdtypes = rdtypes };
    int ret;
    if (gpu_nb_behind_queue(m, &a, "ineighbor_alltoallw", request, &ret)) {
        return ret;
    }
    return m->prev.coll_ineighbor_alltoallw(sbuf, scounts, sdispls, sdtypes, rbuf, rcounts,
                                            rdispls, rdtypes, comm, request,
                                            m->prev.coll_ineighbor_alltoallw_module);
}

/* Every other collective has an entry point of its own (native, allreduce)
 * that stages what the GPU path does not take. */
void mca_coll_gpu_install_staged(mca_coll_gpu_module_t *m)
{
    m->super.coll_alltoallw = gpu_alltoallw_blocking;
}

void mca_coll_gpu_install_nonblocking(mca_coll_gpu_module_t *m)
{
    m->super.coll_ialltoallw = gpu_ialltoallw;
    m->super.coll_ibarrier = gpu_ibarrier;   /* enable drops those without one below */
    m->super.coll_ineighbor_allgather = gpu_ineighbor_allgather;
    m->super.coll_ineighbor_allgatherv = gpu_ineighbor_allgatherv;
    m->super.coll_ineighbor_alltoall = gpu_ineighbor_alltoall;
    m->super.coll_ineighbor_alltoallv = gpu_ineighbor_alltoallv;
    m->super.coll_ineighbor_alltoallw = gpu_ineighbor_alltoallw;
}

/* Enable: what has nothing below it to keep in order is not ours either. */
void mca_coll_gpu_nonblocking_enable(mca_coll_gpu_module_t *m)
{
    if (NULL == m->prev.coll_ibarrier) {
        m->super.coll_ibarrier = NULL;
    }
    if (NULL == m->prev.coll_ineighbor_allgather) {
        m->super.coll_ineighbor_allgather = NULL;
    }
    if (NULL == m->prev.coll_ineighbor_allgatherv) {
        m->super.coll_ineighbor_allgatherv = NULL;
    }
    if (NULL == m->prev.coll_ineighbor_alltoall) {
        m->super.coll_ineighbor_alltoall = NULL;
    }
    if (NULL == m->prev.coll_ineighbor_alltoallv) {
        m->super.coll_ineighbor_alltoallv = NULL;
    }
    if (NULL == m->prev.coll_ineighbor_alltoallw) {
        m->super.coll_ineighbor_alltoallw = NULL;
    }
}
