/*
 * The stream-ordered small allreduce kernel (design in gpu_stream.h).
 */
#include <cuda_runtime.h>

#include "gpu_stream.h"
#include "gpu_reduce_ops.h"
#include "gpu_device.cuh"

namespace {

using namespace gpu_dev;

template <class T> union payload {
    unsigned long long u;
    T e[GPU_STREAM_PAYLOAD / sizeof(T)];
};

template <gpu_op_t OP, class T>
__device__ __forceinline__ unsigned long long fold(unsigned long long acc, unsigned long long x)
{
    payload<T> a, b;
    a.u = acc;
    b.u = x;
#pragma unroll
    for (int k = 0; k < (int) (GPU_STREAM_PAYLOAD / sizeof(T)); ++k) {
        a.e[k] = gpu_red<OP, T>::apply(a.e[k], b.e[k]);
    }
    return a.u;
}

template <gpu_op_t OP, class T>
__global__ void __launch_bounds__(GPU_STREAM_THREADS) k_stream_allreduce(gpu_stream_args_t a)
{
    __shared__ unsigned long long s_seq;
    char *mine = a.peer_base[a.rank] + a.region_off;
    unsigned long long *counter = reinterpret_cast<unsigned long long *>(mine);
    unsigned *arrived = reinterpret_cast<unsigned *>(mine + 64);
    const size_t bytes = a.count * sizeof(T);
    const size_t lines = (bytes + GPU_STREAM_PAYLOAD - 1) / GPU_STREAM_PAYLOAD;
    const size_t stride = (size_t) gridDim.x * blockDim.x;
    const size_t first = (size_t) blockIdx.x * blockDim.x + threadIdx.x;
    const char *in = static_cast<const char *>(a.in);
    char *out = static_cast<char *>(a.out);

    if (0 == threadIdx.x) {
        /* no block writes the counter before every block has read it */
        s_seq = *(volatile unsigned long long *) counter + 1;
    }
    __syncthreads();
    const unsigned long long seq = s_seq;
    const uint32_t flag = 0x80000000u | (uint32_t) (seq & 0x7fffffffu);
    const int parity = (int) (seq & 1);

    /* send: my lines into my slot of every peer's region */
    for (size_t i = first; i < lines; i += stride) {
        const size_t off = i * GPU_STREAM_PAYLOAD;
        const unsigned long long v = load8(in + off, bytes - off);
        for (int k = 1; k < a.nranks; ++k) {
            const int q = (a.rank + k) % a.nranks;
            ll_put(a.peer_base[q] + a.region_off +
                         gpu_stream_line_off(parity, a.rank, a.nranks, a.slot_lines, i),
                     v, flag);
        }
    }
    /* receive and fold in rank order (in place is safe: line i is read and
     * written by this thread only, its input read before its output) */
    bool ok = true;
    for (size_t i = first; i < lines && ok; i += stride) {
        const size_t off = i * GPU_STREAM_PAYLOAD;
        const size_t valid = bytes - off;
        unsigned long long acc = 0, x;
        for (int r = 0; r < a.nranks; ++r) {
            if (r == a.rank) {
                x = load8(in + off, valid);
            } else if (!ll_wait(mine + gpu_stream_line_off(parity, r, a.nranks, a.slot_lines, i),
                                flag, &x, a, r, seq)) {
                ok = false;
                break;
            }
            acc = 0 == r ? x : fold<OP, T>(acc, x);
        }
        if (ok) {
            store8(out + off, acc, valid);
        }
    }
    /* the last block to finish advances the call counter for the next
     * launch (a graph replay too) */
    __syncthreads();
    if (0 == threadIdx.x) {
        __threadfence();
        if (atomicAdd(arrived, 1u) == gridDim.x - 1) {
            *arrived = 0;
            *(volatile unsigned long long *) counter = seq;
            __threadfence();
        }
    }
}

struct stream_launcher {
    const gpu_stream_args_t *a;
    cudaStream_t stream;
    template <gpu_op_t OP, class T> bool run()
    {
        if constexpr (sizeof(T) > GPU_STREAM_PAYLOAD || 0 != GPU_STREAM_PAYLOAD % sizeof(T)) {
            return false;
        } else {
            const size_t lines = (a->count * sizeof(T) + GPU_STREAM_PAYLOAD - 1) /
                                 GPU_STREAM_PAYLOAD;
            size_t grid = (lines + GPU_STREAM_THREADS - 1) / GPU_STREAM_THREADS;
            grid = grid < 1 ? 1 : (grid > GPU_STREAM_MAX_BLOCKS ? GPU_STREAM_MAX_BLOCKS : grid);
            k_stream_allreduce<OP, T><<<(unsigned) grid, GPU_STREAM_THREADS, 0, stream>>>(*a);
            return true;
        }
    }
};

} // namespace

extern "C" gpu_status_t gpu_kernel_stream_allreduce(gpu_op_t op, gpu_dtype_t dt,
                                                    const gpu_stream_args_t *a, void *stream)
{
    stream_launcher l = {a, static_cast<cudaStream_t>(stream)};
    cudaError_t err;

    if (a->nranks < 2 || a->nranks > GPU_MAX_PEERS || a->rank < 0 || a->rank >= a->nranks) {
        GPU_ERROR("invalid stream allreduce: rank %d of %d", a->rank, a->nranks);
        return GPU_ERR_INVALID;
    }
    if (!gpu_dispatch(op, dt, l)) {
        return GPU_ERR_UNSUPPORTED;
    }
    err = cudaGetLastError();
    if (cudaSuccess != err) {
        GPU_ERROR("stream allreduce launch (%s, %s, count %zu) failed: %s", gpu_op_name(op),
                  gpu_dtype_name(dt), a->count, cudaGetErrorString(err));
        return GPU_ERR_CUDA;
    }
    return GPU_OK;
}
