/*
 * A reduction with at least one operand in device (or managed) memory:
 * on the GPU when this build's kernels run here and the type has GPU
 * arithmetic, else folded on the host by the function the slot held
 * before, on copies made with the driver's own copies (which work where
 * the CUDA runtime does not: a driver older than the runtime, the CI
 * driver stand-in).  op_gpu.h has the design; this file the mechanics.
 */
#include "ompi_config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "op_gpu.h"

#include "opal/util/output.h"
#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/errhandler/errhandler.h"

#include "kernels/gpu_kernels.h"
#include "util/gpu_cuda_drv.h"
#include "util/gpu_status.h"

/* driver ABI subset for the host fold (cuda.h values) */
typedef unsigned long long op_gpu_cu_ptr_t;
#define OP_GPU_CU_STREAM_LEGACY ((void *) 0x1)

static struct {
    pthread_once_t once;
    int kernels;            /* 1: the CUDA runtime runs this build's kernels here */
    unsigned long long loaded; /* devices (bit per ordinal) whose kernels are loaded */
    int pools;              /* 1: cudaMallocAsync works (stream-ordered, no device sync) */
    int (*cu_memcpy)(op_gpu_cu_ptr_t dst, op_gpu_cu_ptr_t src, size_t n);
    int (*cu_stream_sync)(void *stream);
    int (*cu_error_string)(int err, const char **str);
} op_gpu_rt = { PTHREAD_ONCE_INIT, 0, 0, 1, NULL, NULL, NULL };

static const char *op_gpu_cu_string(int err)
{
    const char *s = NULL;
    if (NULL == op_gpu_rt.cu_error_string || 0 != op_gpu_rt.cu_error_string(err, &s) ||
        NULL == s) {
        return "unknown CUDA driver error";
    }
    return s;
}

/* Once, at the first device reduction: the driver is loaded already
 * (init_query), so RTLD_NOLOAD finds it; the runtime is asked whether it
 * works at all, which makes no context. */
static void op_gpu_rt_probe(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    int ndev = 0;
    cudaError_t err;

    if (NULL != lib) {
        op_gpu_rt.cu_memcpy = (int (*)(op_gpu_cu_ptr_t, op_gpu_cu_ptr_t, size_t))
            dlsym(lib, "cuMemcpy");
        op_gpu_rt.cu_stream_sync = (int (*)(void *)) dlsym(lib, "cuStreamSynchronize");
        op_gpu_rt.cu_error_string = (int (*)(int, const char **)) dlsym(lib, "cuGetErrorString");
    }
    err = cudaGetDeviceCount(&ndev);
    if (cudaSuccess != err || ndev < 1) {
        (void) cudaGetLastError();
        GPU_LOG(1, "the CUDA runtime cannot run here (%s): device reductions fold on the host "
                "through the driver's copies", cudaSuccess != err ? cudaGetErrorString(err)
                : "no device");
        return;
    }
    op_gpu_rt.kernels = 1;
}

void mca_op_gpu_raise(const char *what)
{
#if OMPI_MAJOR_VERSION >= 5
    (void) OMPI_ERRHANDLER_NOHANDLE_INVOKE(MPI_ERR_OTHER, what);
#else
    /* what 4.1's MPI_Reduce_local itself reports its errors on */
    (void) OMPI_ERRHANDLER_INVOKE(&ompi_mpi_comm_world.comm, MPI_ERR_OTHER, what);
#endif
}

/* The kernels' element type for a slot of the op table, given the
 * element's extent (Fortran kinds differ between compilers), or
 * GPU_DT_COUNT where the GPU has no arithmetic for it. */
static gpu_dtype_t op_gpu_slot_type(int slot, size_t ext)
{
    static const gpu_dtype_t sints[9] = { GPU_DT_COUNT, GPU_DT_I8, GPU_DT_I16, GPU_DT_COUNT,
                                          GPU_DT_I32, GPU_DT_COUNT, GPU_DT_COUNT, GPU_DT_COUNT,
                                          GPU_DT_I64 };
    static const gpu_dtype_t uints[9] = { GPU_DT_COUNT, GPU_DT_U8, GPU_DT_U16, GPU_DT_COUNT,
                                          GPU_DT_U32, GPU_DT_COUNT, GPU_DT_COUNT, GPU_DT_COUNT,
                                          GPU_DT_U64 };
    gpu_dtype_t t = GPU_DT_COUNT;

    switch (slot) {
    case OMPI_OP_BASE_TYPE_INT8_T: case OMPI_OP_BASE_TYPE_INT16_T:
    case OMPI_OP_BASE_TYPE_INT32_T: case OMPI_OP_BASE_TYPE_INT64_T:
    case OMPI_OP_BASE_TYPE_LONG: case OMPI_OP_BASE_TYPE_INTEGER:
    case OMPI_OP_BASE_TYPE_INTEGER1: case OMPI_OP_BASE_TYPE_INTEGER2:
    case OMPI_OP_BASE_TYPE_INTEGER4: case OMPI_OP_BASE_TYPE_INTEGER8:
        return ext <= 8 ? sints[ext] : GPU_DT_COUNT;
    /* logical and bitwise results do not depend on signedness, and the
     * base functions' logical ops give 0 or 1 as the functors do */
    case OMPI_OP_BASE_TYPE_UINT8_T: case OMPI_OP_BASE_TYPE_UINT16_T:
    case OMPI_OP_BASE_TYPE_UINT32_T: case OMPI_OP_BASE_TYPE_UINT64_T:
    case OMPI_OP_BASE_TYPE_UNSIGNED_LONG: case OMPI_OP_BASE_TYPE_BYTE:
    case OMPI_OP_BASE_TYPE_LOGICAL:
        return ext <= 8 ? uints[ext] : GPU_DT_COUNT;
    case OMPI_OP_BASE_TYPE_FLOAT: case OMPI_OP_BASE_TYPE_DOUBLE:
    case OMPI_OP_BASE_TYPE_REAL: case OMPI_OP_BASE_TYPE_REAL4:
    case OMPI_OP_BASE_TYPE_REAL8: case OMPI_OP_BASE_TYPE_DOUBLE_PRECISION:
        return 4 == ext ? GPU_DT_F32 : (8 == ext ? GPU_DT_F64 : GPU_DT_COUNT);
    case OMPI_OP_BASE_TYPE_C_FLOAT_COMPLEX: case OMPI_OP_BASE_TYPE_C_DOUBLE_COMPLEX:
        return 8 == ext ? GPU_DT_C32 : (16 == ext ? GPU_DT_C64 : GPU_DT_COUNT);
    case OMPI_OP_BASE_TYPE_BOOL: t = GPU_DT_BOOL; break;
    case OMPI_OP_BASE_TYPE_FLOAT_INT: t = GPU_DT_FLOAT_INT; break;
    case OMPI_OP_BASE_TYPE_DOUBLE_INT: t = GPU_DT_DOUBLE_INT; break;
    case OMPI_OP_BASE_TYPE_LONG_INT: t = GPU_DT_LONG_INT; break;
    case OMPI_OP_BASE_TYPE_2INT: case OMPI_OP_BASE_TYPE_2INTEGER: t = GPU_DT_2INT; break;
    case OMPI_OP_BASE_TYPE_SHORT_INT: t = GPU_DT_SHORT_INT; break;
#if defined(__x86_64__)
    /* x87 extended bytes, compared as integers: MIN/MAX and the loc ops
     * only (gpu_op_dtype_valid refuses SUM/PROD, which stay on the host) */
    case OMPI_OP_BASE_TYPE_LONG_DOUBLE: t = GPU_DT_LDOUBLE; break;
    case OMPI_OP_BASE_TYPE_LONG_DOUBLE_INT: t = GPU_DT_LDOUBLE_INT; break;
#endif
#if OMPI_MAJOR_VERSION >= 5
    case OMPI_OP_BASE_TYPE_SHORT_FLOAT: t = GPU_DT_F16; break; /* binary16 where ext is 2 */
#endif
    default:
        /* long double complex, REAL*2, REAL*16, INTEGER*16, the 2REAL
         * pairs */
        return GPU_DT_COUNT;
    }
    return gpu_dtype_size(t) == ext ? t : GPU_DT_COUNT;
}

/* ---- the host fold: the previous function on host copies ------------- */

/* p as host memory: p itself, or a copy of its bytes (*own set) */
static int op_gpu_host_view(const void *p, size_t bytes, int copy_in, void **view, void **own)
{
    int err;
    *own = NULL;
    if (!mca_op_gpu_is_device(p)) {
        *view = (void *) p;
        return 0;
    }
    if (NULL == (*own = malloc(bytes))) {
        GPU_ERROR("no host memory for a %zu-byte staging copy of a device operand", bytes);
        return -1;
    }
    *view = *own;
    if (copy_in && 0 != (err = op_gpu_rt.cu_memcpy((uintptr_t) *own, (uintptr_t) p, bytes))) {
        GPU_ERROR("copying a %zu-byte device operand to host memory failed: %s", bytes,
                  op_gpu_cu_string(err));
        return -1;
    }
    return 0;
}

static int op_gpu_host_fold(const mca_op_gpu_call_t *c, size_t bytes)
{
    void *va = NULL, *vb = NULL, *vo = NULL, *oa = NULL, *ob = NULL, *oo = NULL;
    int rc = -1, err;

    if (NULL == op_gpu_rt.cu_memcpy || NULL == op_gpu_rt.cu_stream_sync) {
        GPU_ERROR("the CUDA driver lacks cuMemcpy or cuStreamSynchronize: cannot reach "
                  "device memory");
        return -1;
    }
    if (0 != op_gpu_host_view(c->a, bytes, 1, &va, &oa) ||
        (c->b == c->a ? (vb = va, 0) : op_gpu_host_view(c->b, bytes, 1, &vb, &ob)) ||
        (c->out == c->a ? (vo = va, 0) : op_gpu_host_view(c->out, bytes, 0, &vo, &oo))) {
        goto out_free;
    }
    if (c->three) {
        int count = c->count;
        c->m->prev_3buff_fns[c->slot](va, vb, vo, &count, c->dtype,
                                      c->m->prev_3buff_modules[c->slot]);
    } else {
        int count = c->count;
        /* 2-buffer: a is inout, b is in */
        c->m->prev_fns[c->slot](vb, va, &count, c->dtype, c->m->prev_modules[c->slot]);
    }
    if (vo != c->out) {
        /* a pageable upload may return before the data lands: wait for
         * the legacy stream it is ordered on */
        if (0 != (err = op_gpu_rt.cu_memcpy((uintptr_t) c->out, (uintptr_t) vo, bytes)) ||
            0 != (err = op_gpu_rt.cu_stream_sync(OP_GPU_CU_STREAM_LEGACY))) {
            GPU_ERROR("copying a %zu-byte result back to device memory failed: %s", bytes,
                      op_gpu_cu_string(err));
            goto out_free;
        }
    }
    rc = 0;
out_free:
    free(oo);
    free(ob);
    free(oa);
    return rc;
}

/* ---- the GPU fold ----------------------------------------------------- */

/* Waits for ev with op_gpu_timeout as the deadline: spin first (a small
 * kernel ends within microseconds), then sleep in short steps. */
static int op_gpu_wait(cudaEvent_t ev, const mca_op_gpu_call_t *c)
{
    const double limit = mca_op_gpu_component.timeout;
    struct timespec t0, now;
    cudaError_t err;
    double waited;

    if (limit <= 0) {
        err = cudaEventSynchronize(ev);
        goto done;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        err = cudaEventQuery(ev);
        if (cudaErrorNotReady != err) {
            goto done;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        waited = (double) (now.tv_sec - t0.tv_sec) + 1e-9 * (double) (now.tv_nsec - t0.tv_nsec);
        if (waited > limit) {
            GPU_ERROR("%s on device memory: the kernel did not finish within op_gpu_timeout "
                      "(%.1f s); it is queued on the legacy default stream behind the "
                      "application's work, which has not finished", c->m->name, limit);
            return -1;
        }
        if (waited > 1e-4) {
            const struct timespec step = { 0, waited > 1e-2 ? 200000 : 10000 };
            nanosleep(&step, NULL);
        }
    }
done:
    if (cudaSuccess != err) {
        GPU_ERROR("%s on device memory failed: %s", c->m->name, cudaGetErrorString(err));
        return -1;
    }
    return 0;
}

typedef struct {
    const void *p;
    int kind;               /* gpu_mem_kind_t */
    int dev;
    int direct;             /* the kernel reads or writes it in place */
    void *d;                /* what the kernel uses */
} op_gpu_operand_t;

static void op_gpu_operand(op_gpu_operand_t *o, const void *p)
{
    o->p = p;
    o->dev = -1;
    o->kind = mca_op_gpu_kind(p, &o->dev);
    o->direct = 0;
    o->d = NULL;
}

/* the earlier operand with the same address (one staging copy serves
 * both), or -1 */
static int op_gpu_shares(const op_gpu_operand_t *ops, int i)
{
    for (int j = 0; j < i; ++j) {
        if (ops[j].p == ops[i].p) {
            return j;
        }
    }
    return -1;
}

/* 0 done, 1 the runtime cannot run the kernels here (the caller folds on
 * the host; nothing written), -1 an error (logged) */
static int op_gpu_gpu_fold(const mca_op_gpu_call_t *c, gpu_dtype_t gdt, size_t bytes)
{
    static const int where[3] = { 2, 0, 1 };   /* the result's device first */
    const size_t pad = (bytes + 255) & ~(size_t) 255;
    op_gpu_operand_t ops[3];                   /* a, b, out */
    int target = -1, cur = -1, rc = -1, ntmp = 0, async = 0;
    char *tmp = NULL;
    cudaEvent_t ev = NULL;
    cudaError_t err = cudaSuccess;
    gpu_status_t st;

    op_gpu_operand(&ops[0], c->a);
    op_gpu_operand(&ops[1], c->b);
    op_gpu_operand(&ops[2], c->out);
    /* the kernel runs where the result lives, else where an input does;
     * managed memory alone runs on the current device */
    for (int j = 0; j < 3 && target < 0; ++j) {
        if (GPU_MEM_DEVICE == ops[where[j]].kind && ops[where[j]].dev >= 0) {
            target = ops[where[j]].dev;
        }
    }
    if (cudaSuccess != (err = cudaGetDevice(&cur))) {
        goto out_cuda;
    }
    if (target < 0) {
        target = cur;
    } else if (target != cur && cudaSuccess != (err = cudaSetDevice(target))) {
        goto out_cuda;
    }
    /* all kernels at a device's first reduction, not each (op, type) at
     * its first: a lazy load may wait for the whole device, unbounded */
    if (target < 64 && 0 == (__atomic_load_n(&op_gpu_rt.loaded, __ATOMIC_RELAXED) &
                             (1ull << target))) {
        st = gpu_local_preload();
        if (GPU_OK != st) {
            rc = GPU_ERR_UNSUPPORTED == st ? 1 : -1;
            goto out_free;
        }
        __atomic_fetch_or(&op_gpu_rt.loaded, 1ull << target, __ATOMIC_RELAXED);
    }
    for (int i = 0; i < 3; ++i) {
        ops[i].direct = GPU_MEM_MANAGED == ops[i].kind ||
                        (GPU_MEM_DEVICE == ops[i].kind && ops[i].dev == target);
        ntmp += !ops[i].direct && op_gpu_shares(ops, i) < 0;
    }
    if (ntmp > 0) {
        /* stream-ordered: neither the allocation nor the free waits for
         * the device */
        if (op_gpu_rt.pools) {
            err = cudaMallocAsync((void **) &tmp, pad * ntmp, cudaStreamLegacy);
            async = cudaSuccess == err;
            if (cudaErrorNotSupported == err) {
                (void) cudaGetLastError();
                op_gpu_rt.pools = 0;
            }
        }
        if (!async && !op_gpu_rt.pools) {
            err = cudaMalloc((void **) &tmp, pad * ntmp);
        }
        if (cudaSuccess != err) {
            tmp = NULL;
            goto out_cuda;
        }
    }
    for (int i = 0, t = 0; i < 3; ++i) {
        const int j = op_gpu_shares(ops, i);
        if (ops[i].direct) {
            ops[i].d = (void *) ops[i].p;
        } else if (j >= 0) {
            ops[i].d = ops[j].d;
        } else {
            ops[i].d = tmp + pad * t++;
            /* inputs go up first; a 3-buffer result needs no upload.
             * Pageable uploads are staged at once, without waiting for the
             * stream (CUDA's API synchronisation rules) */
            if (i < 2 && cudaSuccess != (err = cudaMemcpyAsync(ops[i].d, ops[i].p, bytes,
                                                               cudaMemcpyDefault,
                                                               cudaStreamLegacy))) {
                goto out_cuda;
            }
        }
    }
    st = gpu_local_reduce3(c->m->gop, gdt, ops[0].d, ops[1].d, ops[2].d, (size_t) c->count,
                           cudaStreamLegacy);
    if (GPU_ERR_UNSUPPORTED == st) {
        rc = 1;
        goto out_free;
    }
    if (GPU_OK != st) {
        goto out_free;                       /* logged by the launcher */
    }
    if (cudaSuccess != (err = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming)) ||
        cudaSuccess != (err = cudaEventRecord(ev, cudaStreamLegacy))) {
        goto out_cuda;
    }
    if (0 != op_gpu_wait(ev, c)) {
        goto out_free;
    }
    if (!ops[2].direct &&
        cudaSuccess != (err = cudaMemcpy((void *) ops[2].p, ops[2].d, bytes, cudaMemcpyDefault))) {
        goto out_cuda;
    }
    rc = 0;
    goto out_free;
out_cuda:
    if (gpu_local_cannot_run((int) err)) {
        GPU_LOG(1, "%s on device memory: the CUDA runtime cannot run here (%s): folding on the "
                "host", c->m->name, cudaGetErrorString(err));
        (void) cudaGetLastError();
        rc = 1;
    } else {
        GPU_ERROR("%s on device memory (%d elements, %s): %s", c->m->name, c->count,
                  gpu_dtype_name(gdt), cudaGetErrorString(err));
    }
out_free:
    if (NULL != ev) {
        (void) cudaEventDestroy(ev);
    }
    if (NULL != tmp) {
        /* stream-ordered: also right after a timeout, when the kernel
         * may still read it */
        (void) (async ? cudaFreeAsync(tmp, cudaStreamLegacy) : cudaFree(tmp));
    }
    if (cur >= 0 && target != cur) {
        (void) cudaSetDevice(cur);
    }
    return rc;
}

void mca_op_gpu_device_reduce(const mca_op_gpu_call_t *c)
{
    struct ompi_datatype_t *dt = *c->dtype;
    ptrdiff_t ext = 0;
    gpu_dtype_t gdt;
    size_t bytes;
    int rc = 1;

    pthread_once(&op_gpu_rt.once, op_gpu_rt_probe);
    /* the element is the predefined type: for a derived datatype made of
     * one, ompi_op_reduce picks the slot from it, and the host functions
     * step through *count elements of it whatever the datatype; so does
     * this */
    if (!ompi_datatype_is_predefined(dt)) {
        dt = ompi_datatype_get_single_predefined_type_from_args(dt);
    }
    if (NULL == dt || OMPI_SUCCESS != ompi_datatype_type_extent(dt, &ext) || ext <= 0) {
        GPU_ERROR("%s on device memory: no element type for the datatype", c->m->name);
        mca_op_gpu_raise("op/gpu: reduction on device memory failed (see the message above)");
        return;
    }
    bytes = (size_t) c->count * (size_t) ext;
    gdt = op_gpu_slot_type(c->slot, (size_t) ext);
    /* Open MPI reduces MPI_OFFSET (a signed type) in its unsigned slot;
     * the GPU computes what the standard defines */
    if ((struct ompi_datatype_t *) MPI_OFFSET == dt && (GPU_DT_U64 == gdt || GPU_DT_U32 == gdt)) {
        gdt = GPU_DT_U64 == gdt ? GPU_DT_I64 : GPU_DT_I32;
    }
    if (op_gpu_rt.kernels && GPU_DT_COUNT != gdt && gpu_op_dtype_valid(c->m->gop, gdt)) {
        rc = op_gpu_gpu_fold(c, gdt, bytes);
        if (1 == rc) {
            op_gpu_rt.kernels = 0;   /* says why once, at verbose 1 (above) */
        }
    }
    if (1 == rc) {
        GPU_LOG(20, "%s, %d x %s (%td bytes each) folded on the host", c->m->name, c->count,
                GPU_DT_COUNT != gdt ? gpu_dtype_name(gdt) : "a type without GPU arithmetic", ext);
        rc = op_gpu_host_fold(c, bytes);
    } else if (0 == rc) {
        GPU_LOG(20, "%s, %d x %s on the GPU", c->m->name, c->count, gpu_dtype_name(gdt));
    }
    if (0 != rc) {
        mca_op_gpu_raise("op/gpu: reduction on device memory failed (see the message above)");
    }
}
