/*
 * coll/gpu: MPI collectives on CUDA device buffers inside stock Open MPI 4.1.
 *
 * The component is a thin layer: it registers MCA parameters, decides per
 * communicator whether to run (CUDA driver and a device present,
 * intra-communicator), keeps the previous module's function for every
 * collective, and routes each call:
 *
 *   host buffers                     -> previous module, untouched
 *   device buffers, predefined op
 *     and type, one node, P2P        -> engine/ (GPU kernels over CUDA IPC)
 *   any other device-buffer call     -> staged: device -> host, previous
 *                                       module, host -> device
 *
 * Per-communicator GPU state is created at the first device-buffer
 * collective, through the communicator's own host allgather.
 *
 * When the user restricts the coll framework to this component alone
 * ("--mca coll gpu"), Open MPI 4.1 would fail MPI_Init because every
 * collective needs some provider; the component then opens the fallback
 * components named in coll_gpu_fallback itself (see coll_gpu_adopt.c).
 */
#ifndef MCA_COLL_GPU_H
#define MCA_COLL_GPU_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"

#include "engine/gpu_engine.h"

BEGIN_C_DECLS

typedef enum {
    MCA_COLL_GPU_ALGO_AUTO = 0,
    MCA_COLL_GPU_ALGO_ONESHOT = 1,
    MCA_COLL_GPU_ALGO_TWOSHOT = 2,
    MCA_COLL_GPU_ALGO_STAGED = 3
} mca_coll_gpu_algo_t;

typedef struct mca_coll_gpu_component_t {
    mca_coll_base_component_2_0_0_t super;

    int priority;
    int verbose;
    int output;
    int allreduce_algorithm;
    unsigned long oneshot_max;
    unsigned long scratch_bytes;
    int nblocks;
    int nthreads;
    int oneshot_blocks;
    double timeout;
    char *fallback;

    int gpu_available;   /* -1 unknown, 0 no, 1 yes */
    const char *no_gpu_reason;
} mca_coll_gpu_component_t;

OMPI_MODULE_DECLSPEC extern mca_coll_gpu_component_t mca_coll_gpu_component;

typedef enum {
    MCA_COLL_GPU_BOOT_NONE = 0,
    MCA_COLL_GPU_BOOT_READY = 1,
    MCA_COLL_GPU_BOOT_STAGED = 2   /* layout the engine cannot serve */
} mca_coll_gpu_boot_t;

typedef struct mca_coll_gpu_module_t {
    mca_coll_base_module_t super;
    mca_coll_base_comm_coll_t prev;   /* previous functions and modules */
    ompi_communicator_t *comm;
    mca_coll_gpu_boot_t boot;
    gpu_engine_comm_t *engine;
} mca_coll_gpu_module_t;

OBJ_CLASS_DECLARATION(mca_coll_gpu_module_t);

/* component */
int mca_coll_gpu_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_gpu_comm_query(struct ompi_communicator_t *comm, int *priority);
int mca_coll_gpu_adopt_fallbacks(const char *names);

/* routing helpers */
int mca_coll_gpu_is_device(const void *buf);
int mca_coll_gpu_map(struct ompi_datatype_t *dtype, struct ompi_op_t *op, gpu_dtype_t *dt,
                     gpu_op_t *gop);
int mca_coll_gpu_bootstrap(mca_coll_gpu_module_t *m);
int mca_coll_gpu_status_to_mpi(gpu_status_t st);

/* collectives (blocking) */
int mca_coll_gpu_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module);
int mca_coll_gpu_allreduce_staged(const void *sbuf, void *rbuf, int count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m);
void mca_coll_gpu_install_staged(mca_coll_gpu_module_t *m);
void mca_coll_gpu_install_nonblocking(mca_coll_gpu_module_t *m);

END_C_DECLS

#endif /* MCA_COLL_GPU_H */
