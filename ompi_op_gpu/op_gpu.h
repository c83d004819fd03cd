/*
 * op/gpu: Open MPI's predefined reductions on CUDA device memory.
 *
 * Why an op component.  MPI_Reduce_local, and every reduction Open MPI's
 * own algorithms run on a process's buffers (coll/basic, tuned, libnbc,
 * the base reduce and allreduce, osc accumulate), end in ompi_op_reduce or
 * ompi_3buff_op_reduce, which call the predefined op's function for the
 * datatype from a table kept on the MPI_Op.  Those functions are host
 * loops: handed device memory they fault.  The op framework lets a
 * component replace table entries (op/avx does it for SIMD), in 4.1 and
 * 5.0 alike, so this is the one place that covers every such caller.
 *
 * Selection.  For each predefined op the framework asks every component's
 * op_query, then, lowest priority first, calls each module's enable and
 * copies its non-NULL entries over the table.  op_gpu_component.c returns
 * a module for the 12 reduction ops (not MPI_REPLACE, MPI_NO_OP) that
 * fills every entry the base table has, 2- and 3-buffer; its enable keeps
 * the entry it replaces (op/avx's, or the base function) with its module.
 * With the default priority (above op/avx's 50) that is the fastest host
 * function there is.
 *
 * A call (op_gpu_functions.c).  Host buffers: one memory-kind check per
 * buffer, answered from a small cache of host addresses after the first
 * time, then the previous function: host results and speed are Open
 * MPI's.  Device (or managed) memory on either side: a kernel of
 * kernels/gpu_local.cu on the legacy default stream, host operands first
 * copied to a temporary device buffer and a host result copied back, then
 * a wait for the kernel; the call returns with the result in place, as
 * the host function would.  Types without GPU arithmetic (long double's
 * SUM and PROD (its MIN, MAX and the long double int loc ops compare the
 * x87 bytes on the GPU), long double complex, the Fortran 2REAL pairs,
 * REAL*2 and REAL*16) and processes whose CUDA runtime cannot run
 * this build's kernels (a driver older than the runtime, no kernel image
 * for the device, the CI driver stand-in) fold on the host instead: the
 * device operands are copied out with the driver's copies, the previous
 * function runs on the copies, and the result is copied back.
 *
 * Waiting.  A CUDA synchronisation cannot be given a deadline portably
 * (cudaStreamSynchronize has none), so the wait polls an event recorded
 * after the kernel and gives up after op_gpu_timeout seconds: a kernel
 * queued behind application work that never finishes (a persistent
 * kernel on a blocking stream, waiting for this very MPI call) becomes an
 * error instead of a hang.  What remains unbounded: a pageable copy inside
 * the driver, which the driver itself orders behind earlier work, and the
 * loading of the kernels (CUDA's lazy loading may wait for the whole
 * device), done for all of them at a device's first reduction so that no
 * later first use of an (op, type) pair waits there.
 *
 * Errors.  Open MPI's op functions return nothing (ompi_op_reduce is
 * void in 4.1 and 5.0; MPI_Reduce_local returns whatever the coll
 * module's reduce_local returns, and the base one always succeeds).  A
 * failure (a CUDA error, the wait's deadline, no memory for the staging
 * copies) is therefore logged once where it is detected, with file:line
 * and the CUDA error string, and raised through MPI's error handler of a
 * call without communicator (MPI_COMM_WORLD's in 4.1, the default one in
 * 5.0): under MPI_ERRORS_ARE_FATAL, the default, the job stops with the
 * message; under MPI_ERRORS_RETURN the call returns with the output
 * untouched and the message printed.
 *
 * Machines without a driver or device (CI): the component opens (ompi_info
 * lists it) and its init_query declines, so no module is ever made.
 *
 * Lifetime.  Modules are never destroyed: Open MPI 4.1's op_select
 * releases the 2-buffer slot's module when it installs a 3-buffer
 * function (fixed in 5.0), which would destroy a module still in use, and
 * the predefined ops are torn down at finalize when this .so may already
 * be closed; one extra reference per 3-buffer entry, plus one, keeps the
 * count above zero in both series (op/avx over-retains the same way).
 */
#ifndef MCA_OP_GPU_H
#define MCA_OP_GPU_H

#include "ompi_config.h"

#include "ompi/mca/op/op.h"

#include "kernels/gpu_types.h"

#if !((OMPI_MAJOR_VERSION == 4 && OMPI_MINOR_VERSION >= 1) || \
      (OMPI_MAJOR_VERSION == 5 && OMPI_MINOR_VERSION == 0))
#error "op/gpu builds against Open MPI 4.1.x and 5.0.x only"
#endif

BEGIN_C_DECLS

/* the trampolines cover this many table slots (4.1 has 41, 5.0 43) */
#define MCA_OP_GPU_MAX_SLOTS 48

typedef struct {
    ompi_op_base_component_1_0_0_t super;
    int priority;
    int verbose;
    int output;
    double timeout;            /* seconds a device reduction may wait; <= 0: no limit */
    int available;             /* driver and device present (init_query) */
} mca_op_gpu_component_t;

typedef struct {
    ompi_op_base_module_1_0_0_t super;
    gpu_op_t gop;              /* this MPI_Op in the kernels' vocabulary */
    const char *name;          /* "MPI_SUM", for messages */
    /* what each covered slot held before this module (op/avx's, base);
     * sized for every trampoline, of which the table uses the first
     * OMPI_OP_BASE_TYPE_MAX */
    ompi_op_base_handler_fn_t prev_fns[MCA_OP_GPU_MAX_SLOTS];
    ompi_op_base_module_t *prev_modules[MCA_OP_GPU_MAX_SLOTS];
    ompi_op_base_3buff_handler_fn_t prev_3buff_fns[MCA_OP_GPU_MAX_SLOTS];
    ompi_op_base_module_t *prev_3buff_modules[MCA_OP_GPU_MAX_SLOTS];
} mca_op_gpu_module_t;

OBJ_CLASS_DECLARATION(mca_op_gpu_module_t);

/* the only symbol Open MPI looks up */
__attribute__((visibility("default"))) extern mca_op_gpu_component_t mca_op_gpu_component;

/* op_gpu_functions.c: the replacement functions of table slot k */
ompi_op_base_handler_fn_t mca_op_gpu_fn(int k);
ompi_op_base_3buff_handler_fn_t mca_op_gpu_3buff_fn(int k);

/* op_gpu_device.c: a reduction with at least one device operand.
 * out = f(a, b) for the slot's type; a 2-buffer call passes a == out.
 * Never fails silently: errors are logged and raised (see above). */
typedef struct {
    mca_op_gpu_module_t *m;
    int slot;
    int three;                 /* 3-buffer: previous function is prev_3buff_fns */
    const void *a, *b;
    void *out;
    int count;
    struct ompi_datatype_t **dtype;
} mca_op_gpu_call_t;
void mca_op_gpu_device_reduce(const mca_op_gpu_call_t *call);

/* 1 for device or managed memory (computed on the GPU); cached for host */
int mca_op_gpu_is_device(const void *p);
/* the same as a gpu_mem_kind_t (never BROKEN), with the device ordinal of
 * device memory in *dev (-1 otherwise) */
int mca_op_gpu_kind(const void *p, int *dev);

/* a failure no return code can carry: logged by the caller, raised here */
void mca_op_gpu_raise(const char *what);

END_C_DECLS

#endif /* MCA_OP_GPU_H */
