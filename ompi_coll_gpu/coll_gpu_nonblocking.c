/*
 * Alltoallw, the one collective without a device-side algorithm (its
 * per-peer datatypes the exchange kernel does not describe): staged,
 * blocking or not.  Open MPI 4.1's libnbc would touch device memory from
 * the CPU, so a nonblocking device-buffer call runs libnbc's form on host
 * copies, and progress copies the results back (coll_gpu_staged.c).
 * Host-buffer calls go to the previous module untouched.
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

/* Ibarrier has no buffers, so no kind: it only keeps its place behind
 * the calls queued before it (Open MPI's nonblocking collectives match in
 * the order each rank starts them). */
static int gpu_ibarrier(struct ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (m->kskip) {
        m->kskip = 0;   /* its turn came */
        m->kforce = -1;
    } else if (0 != m->kq) {
        const mca_coll_gpu_args_t a = { .kind = MCA_COLL_GPU_ARGS_BARRIER };
        return mca_coll_gpu_request_queue(m, request, &a, "ibarrier", 0, 0);
    }
    return m->prev.coll_ibarrier(comm, request, m->prev.coll_ibarrier_module);
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
    m->super.coll_ibarrier = gpu_ibarrier;   /* enable drops it without one below */
}
