/*
 * Compatibility layer: the few places where the coll framework of Open MPI
 * 4.1 and 5.0 differ for an out-of-tree component.  Everything else in
 * coll/gpu is written once against the interface both series share
 * (mca_coll_base_comm_coll_t in comm->c_coll, the *_init persistent entry
 * points, opal_progress, show_help, mca_base_var).
 *
 *                       Open MPI 4.1            Open MPI 5.0
 *   component struct    2.0.0                   2.4.0
 *   module struct       2.3.0 (ft_event)        2.4.0 (agree, iagree,
 *                                               reduce_local)
 *   persistent calls    MPIX_*_init             MPI_*_init (MPI-4)
 *   CUDA in Open MPI    none in Debian's build  accelerator framework,
 *                                               coll/accelerator (when
 *                                               built with CUDA)
 *
 * configure (config/gpucoll_ompi.m4) refuses every other series.
 */
#ifndef MCA_COLL_GPU_COMPAT_H
#define MCA_COLL_GPU_COMPAT_H

#include "ompi_config.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#if OMPI_MAJOR_VERSION == 4 && OMPI_MINOR_VERSION >= 1
#define MCA_COLL_GPU_OMPI5 0
typedef mca_coll_base_component_2_0_0_t mca_coll_gpu_base_component_t;
#define MCA_COLL_GPU_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#define MCA_COLL_GPU_MUTEX_HEADER "opal/threads/mutex.h"
#elif OMPI_MAJOR_VERSION == 5 && OMPI_MINOR_VERSION == 0
#define MCA_COLL_GPU_OMPI5 1
typedef mca_coll_base_component_2_4_0_t mca_coll_gpu_base_component_t;
#define MCA_COLL_GPU_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#define MCA_COLL_GPU_MUTEX_HEADER "opal/mca/threads/mutex.h"
#else
#error "coll/gpu builds against Open MPI 4.1.x and 5.0.x only"
#endif

/* What Open MPI keeps in a collective request after ompi_request_t and the
 * completion callback (ompi_coll_base_nbc_request_t's data): MPI_I* and
 * the *_init calls retain a user op or derived datatypes there, and 5.0
 * also arrays to release.  coll/gpu's requests leave exactly this room
 * (coll_gpu.h); the header itself cannot be included (it needs Fortran
 * headers Open MPI does not install). */
#if MCA_COLL_GPU_OMPI5
#define MCA_COLL_GPU_NB_RELEASE_ARRAYS 7
typedef struct {
    union {
        void *pair[2];
        struct {
            void *stypes, *rtypes;
            int scount, rcount;
        } vecs;
    } refcounted;
    void *release_arrays[MCA_COLL_GPU_NB_RELEASE_ARRAYS];
} mca_coll_gpu_nbc_data_t;
#else
typedef union {
    void *pair[2];
} mca_coll_gpu_nbc_data_t;
#endif

/* 16 bits that are the same on every rank of a communicator (the UCX
 * transport's tag space): 4.1's context id is one global integer, 5.0's
 * extended id two 64-bit words (c_index is local there). */
static inline uint16_t mca_coll_gpu_comm_id(const struct ompi_communicator_t *comm)
{
#if MCA_COLL_GPU_OMPI5
    uint64_t v = comm->c_contextid.cid_base * 0x9e3779b97f4a7c15ull ^ comm->c_contextid.cid_sub.u64;
    return (uint16_t) (v ^ (v >> 16) ^ (v >> 32) ^ (v >> 48));
#else
    return (uint16_t) (comm->c_contextid & 0xffff);
#endif
}

/* 64 bits that name a communicator on every rank of it (the memory-kind
 * board's slot key) */
static inline uint64_t mca_coll_gpu_comm_key(const struct ompi_communicator_t *comm)
{
#if MCA_COLL_GPU_OMPI5
    return comm->c_contextid.cid_base * 0x9e3779b97f4a7c15ull ^ comm->c_contextid.cid_sub.u64;
#else
    return (uint64_t) comm->c_contextid;
#endif
}

/* the component symbol Open MPI looks up with dlsym (5.0 dropped
 * OMPI_MODULE_DECLSPEC) */
#define MCA_COLL_GPU_DECLSPEC __attribute__((visibility("default")))

#endif /* MCA_COLL_GPU_COMPAT_H */
