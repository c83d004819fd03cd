/*
 * The functions op/gpu puts into an MPI_Op's tables: one per table slot
 * (the slot is the element type: a function that knows its slot needs no
 * look-up from the datatype, and stays right for callers that index the
 * table themselves), 2- and 3-buffer.  Host buffers go straight to the
 * function the slot held before (op_gpu.h); anything else goes to
 * op_gpu_device.c.
 */
#include "ompi_config.h"

#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

#include "op_gpu.h"

#include "util/gpu_cuda_drv.h"
#include "util/gpu_host_ranges.h"

_Static_assert(OMPI_OP_BASE_TYPE_MAX <= MCA_OP_GPU_MAX_SLOTS,
               "op/gpu: more op table slots than trampolines");

/*
 * Host addresses seen before: a program reducing host buffers asks the
 * driver nothing after a buffer's first call (a pointer query costs about
 * as much as a short host reduction).  Only addresses that stay host
 * memory for the life of the process are kept (util/gpu_host_ranges.h): a
 * freed mmap'd host buffer's range may hold device memory next.  Racy
 * updates are harmless (one word each; a miss only asks the driver again).
 */
#define OP_GPU_HOST_SEEN 256
static uintptr_t op_gpu_host_seen[OP_GPU_HOST_SEEN];

/* every byte address counts: two small mallocs of one call often share a
 * cache line */
static inline size_t op_gpu_host_slot(uintptr_t a)
{
    return (size_t) (((uint64_t) a * 0x9e3779b97f4a7c15ull) >> 56) & (OP_GPU_HOST_SEEN - 1);
}

/* Without touching it: process_vm_readv on ourselves fails with EFAULT
 * where a load would fault. */
static int op_gpu_cpu_readable(const void *p)
{
    char byte;
    struct iovec local = { .iov_base = &byte, .iov_len = 1 };
    struct iovec remote = { .iov_base = (void *) p, .iov_len = 1 };
    return 1 == process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
}

static int op_gpu_ask_driver(const void *p, int *dev)
{
    const uintptr_t a = (uintptr_t) p;
    const size_t h = op_gpu_host_slot(a);
    const gpu_mem_kind_t kind = gpu_drv_mem_kind(p, dev, NULL);

    if (GPU_MEM_HOST == kind) {
        /* the free way, else the second: two buffers of one call both stay */
        if (gpu_host_ranges_permanent(a)) {
            op_gpu_host_seen[0 == op_gpu_host_seen[h] ? h : h ^ 1] = a;
        }
        return GPU_MEM_HOST;
    }
    if (GPU_MEM_BROKEN == kind) {
        /* the context has a sticky error and cannot say: memory the CPU
         * cannot read is device memory (the device path then reports the
         * CUDA error; the host function would fault) */
        return op_gpu_cpu_readable(p) ? GPU_MEM_HOST : GPU_MEM_DEVICE;
    }
    return kind;
}

int mca_op_gpu_kind(const void *p, int *dev)
{
    const uintptr_t a = (uintptr_t) p;
    const size_t h = op_gpu_host_slot(a);

    *dev = -1;
    if (NULL == p || ((op_gpu_host_seen[h] == a || op_gpu_host_seen[h ^ 1] == a) &&
                      gpu_host_ranges_permanent(a))) {
        return GPU_MEM_HOST;
    }
    return op_gpu_ask_driver(p, dev);
}

int mca_op_gpu_is_device(const void *p)
{
    int dev;
    return GPU_MEM_HOST != mca_op_gpu_kind(p, &dev);
}

static inline void op_gpu_2buff(int k, const void *in, void *inout, int *count,
                                struct ompi_datatype_t **dtype, ompi_op_base_module_t *module)
{
    mca_op_gpu_module_t *m = (mca_op_gpu_module_t *) module;

    if (*count > 0 && (mca_op_gpu_is_device(inout) || mca_op_gpu_is_device(in))) {
        const mca_op_gpu_call_t call = { .m = m, .slot = k, .three = 0, .a = inout, .b = in,
                                         .out = inout, .count = *count, .dtype = dtype };
        mca_op_gpu_device_reduce(&call);
        return;
    }
    m->prev_fns[k](in, inout, count, dtype, m->prev_modules[k]);
}

static inline void op_gpu_3buff(int k, const void *in1, const void *in2, void *out, int *count,
                                struct ompi_datatype_t **dtype, ompi_op_base_module_t *module)
{
    mca_op_gpu_module_t *m = (mca_op_gpu_module_t *) module;

    if (*count > 0 && (mca_op_gpu_is_device(out) || mca_op_gpu_is_device(in1) ||
                       mca_op_gpu_is_device(in2))) {
        const mca_op_gpu_call_t call = { .m = m, .slot = k, .three = 1, .a = in1, .b = in2,
                                         .out = out, .count = *count, .dtype = dtype };
        mca_op_gpu_device_reduce(&call);
        return;
    }
    m->prev_3buff_fns[k](in1, in2, out, count, dtype, m->prev_3buff_modules[k]);
}

#define OP_GPU_SLOT(k)                                                                        \
    static void op_gpu_fn_##k(const void *in, void *inout, int *count,                        \
                              struct ompi_datatype_t **dtype, ompi_op_base_module_t *module)  \
    {                                                                                         \
        op_gpu_2buff(k, in, inout, count, dtype, module);                                     \
    }                                                                                         \
    static void op_gpu_3buff_fn_##k(const void *in1, const void *in2, void *out, int *count, \
                                    struct ompi_datatype_t **dtype,                           \
                                    ompi_op_base_module_t *module)                            \
    {                                                                                         \
        op_gpu_3buff(k, in1, in2, out, count, dtype, module);                                 \
    }
#define OP_GPU_SLOTS8(b)                                                                      \
    OP_GPU_SLOT(b##0) OP_GPU_SLOT(b##1) OP_GPU_SLOT(b##2) OP_GPU_SLOT(b##3)                   \
    OP_GPU_SLOT(b##4) OP_GPU_SLOT(b##5) OP_GPU_SLOT(b##6) OP_GPU_SLOT(b##7)
OP_GPU_SLOT(0) OP_GPU_SLOT(1) OP_GPU_SLOT(2) OP_GPU_SLOT(3)
OP_GPU_SLOT(4) OP_GPU_SLOT(5) OP_GPU_SLOT(6) OP_GPU_SLOT(7)
OP_GPU_SLOT(8) OP_GPU_SLOT(9)
OP_GPU_SLOTS8(1) OP_GPU_SLOT(18) OP_GPU_SLOT(19)
OP_GPU_SLOTS8(2) OP_GPU_SLOT(28) OP_GPU_SLOT(29)
OP_GPU_SLOTS8(3) OP_GPU_SLOT(38) OP_GPU_SLOT(39)
OP_GPU_SLOTS8(4)

#define OP_GPU_FN(k) op_gpu_fn_##k
#define OP_GPU_FNS10(b)                                                                       \
    OP_GPU_FN(b##0), OP_GPU_FN(b##1), OP_GPU_FN(b##2), OP_GPU_FN(b##3), OP_GPU_FN(b##4),      \
    OP_GPU_FN(b##5), OP_GPU_FN(b##6), OP_GPU_FN(b##7), OP_GPU_FN(b##8), OP_GPU_FN(b##9)
#define OP_GPU_3FN(k) op_gpu_3buff_fn_##k
#define OP_GPU_3FNS10(b)                                                                      \
    OP_GPU_3FN(b##0), OP_GPU_3FN(b##1), OP_GPU_3FN(b##2), OP_GPU_3FN(b##3), OP_GPU_3FN(b##4), \
    OP_GPU_3FN(b##5), OP_GPU_3FN(b##6), OP_GPU_3FN(b##7), OP_GPU_3FN(b##8), OP_GPU_3FN(b##9)

static const ompi_op_base_handler_fn_t op_gpu_fns[MCA_OP_GPU_MAX_SLOTS] = {
    OP_GPU_FN(0), OP_GPU_FN(1), OP_GPU_FN(2), OP_GPU_FN(3), OP_GPU_FN(4),
    OP_GPU_FN(5), OP_GPU_FN(6), OP_GPU_FN(7), OP_GPU_FN(8), OP_GPU_FN(9),
    OP_GPU_FNS10(1), OP_GPU_FNS10(2), OP_GPU_FNS10(3),
    OP_GPU_FN(40), OP_GPU_FN(41), OP_GPU_FN(42), OP_GPU_FN(43),
    OP_GPU_FN(44), OP_GPU_FN(45), OP_GPU_FN(46), OP_GPU_FN(47),
};
static const ompi_op_base_3buff_handler_fn_t op_gpu_3buff_fns[MCA_OP_GPU_MAX_SLOTS] = {
    OP_GPU_3FN(0), OP_GPU_3FN(1), OP_GPU_3FN(2), OP_GPU_3FN(3), OP_GPU_3FN(4),
    OP_GPU_3FN(5), OP_GPU_3FN(6), OP_GPU_3FN(7), OP_GPU_3FN(8), OP_GPU_3FN(9),
    OP_GPU_3FNS10(1), OP_GPU_3FNS10(2), OP_GPU_3FNS10(3),
    OP_GPU_3FN(40), OP_GPU_3FN(41), OP_GPU_3FN(42), OP_GPU_3FN(43),
    OP_GPU_3FN(44), OP_GPU_3FN(45), OP_GPU_3FN(46), OP_GPU_3FN(47),
};

ompi_op_base_handler_fn_t mca_op_gpu_fn(int k)
{
    return (k >= 0 && k < MCA_OP_GPU_MAX_SLOTS) ? op_gpu_fns[k] : NULL;
}

ompi_op_base_3buff_handler_fn_t mca_op_gpu_3buff_fn(int k)
{
    return (k >= 0 && k < MCA_OP_GPU_MAX_SLOTS) ? op_gpu_3buff_fns[k] : NULL;
}
