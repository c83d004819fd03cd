/*
 * Element-wise reductions of one process's own buffers, for the op/gpu
 * component (ompi_op_gpu/): MPI_Reduce_local, and every reduction Open
 * MPI's own algorithms run through ompi_op_reduce, on device memory.
 *
 * The functors are the collectives' (gpu_reduce_ops.h), so a device
 * Reduce_local gives the bits a device allreduce gives.  Operands come in
 * the order of Open MPI's host functions (ompi/mca/op/base): those compute
 * "inout = f(inout, in)" and "out = f(in1, in2)", and MIN, MAX, MINLOC and
 * MAXLOC differ in which operand wins only for NaN, so keeping the order
 * keeps even those results identical to the host's.
 *
 * This file holds only its own kernel (the allreduce's fold kernel lives
 * in gpu_allreduce.cu with the whole allreduce): mca_op_gpu.so links this
 * object alone and stays small.
 */
#include <cuda_runtime.h>

#include "gpu_kernels.h"
#include "gpu_reduce_ops.h"

/* the launchers serve the .so they are linked into: only the component
 * itself is exported from it */
#define GPU_LOCAL_HIDDEN __attribute__((visibility("hidden")))

namespace {

/* grid-stride loop: every element once, any count (size_t indices) */
template <gpu_op_t OP, class T>
__global__ void local_fold_kernel(const T *a, const T *b, T *out, size_t n)
{
    const size_t stride = (size_t) gridDim.x * blockDim.x;
    for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n; i += stride) {
        /* both loads before the store: out may be a or b */
        const T x = a[i];
        const T y = b[i];
        out[i] = gpu_red<OP, T>::apply(x, y);
    }
}

struct local_launcher {
    const void *a;
    const void *b;
    void *out;
    size_t n;
    cudaStream_t stream;
    template <gpu_op_t OP, class T> bool run()
    {
        /* 256 threads a block; 4096 blocks keep every SM of a Hopper busy
         * with several blocks and leave the rest to the stride loop */
        const size_t want = (n + 255) / 256;
        const unsigned grid = (unsigned) (want < 4096 ? want : 4096);
        local_fold_kernel<OP, T><<<grid, 256, 0, stream>>>(static_cast<const T *>(a),
                                                         static_cast<const T *>(b),
                                                         static_cast<T *>(out), n);
        return true;
    }
};

/* Loads a kernel into the current context (cudaFuncGetAttributes does,
 * under CUDA's lazy loading) */
struct local_loader {
    template <gpu_op_t OP, class T> bool run()
    {
        cudaFuncAttributes a;
        return cudaSuccess == cudaFuncGetAttributes(&a, local_fold_kernel<OP, T>);
    }
};

/* Errors that say "this process cannot run this build's kernels at all"
 * (no kernel image for the device, a driver older than the runtime, no
 * usable device): the caller computes on the host instead. */
bool cannot_run_here(cudaError_t err)
{
    switch (err) {
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidDeviceFunction:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorInvalidPtx:
    case cudaErrorJitCompilerNotFound:
    case cudaErrorInsufficientDriver:
    case cudaErrorCallRequiresNewerDriver:
    case cudaErrorStubLibrary:
    case cudaErrorNoDevice:
    case cudaErrorInitializationError:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorDevicesUnavailable:
        return true;
    default:
        return false;
    }
}

} // namespace

extern "C" GPU_LOCAL_HIDDEN gpu_status_t gpu_local_reduce3(gpu_op_t op, gpu_dtype_t dt,
                                                           const void *in1, const void *in2,
                                                           void *out, size_t count, void *stream)
{
    local_launcher l = {in1, in2, out, count, static_cast<cudaStream_t>(stream)};
    cudaError_t err;

    if (0 == count) {
        return GPU_OK;
    }
    if (!gpu_dispatch(op, dt, l)) {
        return GPU_ERR_UNSUPPORTED;
    }
    err = cudaGetLastError();
    if (cudaSuccess == err) {
        return GPU_OK;
    }
    if (cannot_run_here(err)) {
        GPU_LOG(1, "local reduction (%s, %s) cannot run on this device: %s", gpu_op_name(op),
                gpu_dtype_name(dt), cudaGetErrorString(err));
        return GPU_ERR_UNSUPPORTED;
    }
    GPU_ERROR("local reduction (%s, %s, count %zu) failed to launch: %s", gpu_op_name(op),
              gpu_dtype_name(dt), count, cudaGetErrorString(err));
    return GPU_ERR_CUDA;
}

/* Every kernel of this file, loaded now: with lazy loading (CUDA's
 * default) a kernel's first launch loads it, and loading may wait for the
 * whole device, behind the application's work; done once per device,
 * later first launches of other (op, type) pairs cannot block there. */
extern "C" GPU_LOCAL_HIDDEN gpu_status_t gpu_local_preload(void)
{
    local_loader l;
    gpu_op_t op;
    gpu_dtype_t dt;
    if (!gpu_dispatch_every(l, &op, &dt)) {
        const cudaError_t err = cudaGetLastError();
        if (cannot_run_here(err)) {
            GPU_LOG(1, "the local reduction kernels cannot run on this device: %s",
                    cudaGetErrorString(err));
            return GPU_ERR_UNSUPPORTED;
        }
        GPU_ERROR("loading the local reduction kernel (%s, %s) failed: %s", gpu_op_name(op),
                  gpu_dtype_name(dt), cudaGetErrorString(err));
        return GPU_ERR_CUDA;
    }
    return GPU_OK;
}

extern "C" GPU_LOCAL_HIDDEN int gpu_local_cannot_run(int cuda_error)
{
    return cannot_run_here(static_cast<cudaError_t>(cuda_error)) ? 1 : 0;
}
