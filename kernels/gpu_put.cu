/*
 * The put kernel (see gpu_put.h for why and for the completion protocol).
 *
 * Block b copies its share of the bytes of every segment, cut evenly over
 * the grid whatever each peer's share, so every link is busy from the
 * first block on.  Each segment starts 16-byte aligned in that sequence,
 * so a cut inside it is 16 bytes from the segment's start and the copies
 * keep the widest access the segment itself allows.
 */
#include <cuda_runtime.h>

#include "gpu_device.cuh"
#include "gpu_put.h"
#include "gpu_reduce_ops.h"

namespace {

using namespace gpu_dev;

__device__ __forceinline__ unsigned long long *put_flag(char *base, int src, int block)
{
    return reinterpret_cast<unsigned long long *>(base) + (size_t) src * GPU_MAX_BLOCKS + block;
}

__device__ __forceinline__ unsigned long long *put_landed(char *base, int src, int block)
{
    return put_flag(base + GPU_PUT_FLAG_SET, src, block);
}

__device__ __forceinline__ unsigned long long *put_ticket(char *base)
{
    return reinterpret_cast<unsigned long long *>(base + 2 * GPU_PUT_FLAG_SET);
}

__device__ __forceinline__ size_t up16(size_t x)
{
    return (x + 15) / 16 * 16;
}

/* Block b's share of len bytes: 16-byte aligned, a multiple of every
 * element the kernels take (16 bytes at most) */
__device__ __forceinline__ void block_share(size_t len, size_t *off, size_t *n)
{
    const size_t per = up16((len + gridDim.x - 1) / gridDim.x);
    *off = (size_t) blockIdx.x * per;
    *n = *off < len ? (len - *off < per ? len - *off : per) : 0;
}

/* Every block once its share is out: raise its flag in every peer; the
 * last block of this rank waits for every peer's every flag. */
__device__ void put_done(const gpu_put_args_t &a)
{
    __shared__ int last;
    __syncthreads();
    if (0 == threadIdx.x) {
        __threadfence_system();
        for (int k = 1; k < a.nranks; ++k) {
            const int q = (a.rank + k) % a.nranks;
            st_release_sys(put_flag(a.flags[q], a.rank, blockIdx.x), a.call);
        }
        /* cumulative over calls, each adding its own grid */
        const unsigned long long t = atomicAdd(put_ticket(a.flags[a.rank]), 1ull) + 1;
        last = t == a.tickets;
    }
    __syncthreads();
    if (!last) {
        return;
    }
    const int n = (a.nranks - 1) * (int) gridDim.x;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const int s = (a.rank + 1 + i / (int) gridDim.x) % a.nranks;
        const int b = i % (int) gridDim.x;
        if (!wait_geq(put_flag(a.flags[a.rank], s, b), a.call, a.timeout_ns, a.err, s,
                      GPU_STAGE_PUT)) {
            return;
        }
    }
}

__global__ void __launch_bounds__(1024) k_put(gpu_put_args_t a)
{
    size_t total = 0;
    for (int i = 0; i < a.nsegs; ++i) {
        total = up16(total) + a.seg[i].len;
    }
    const size_t per = up16((total + gridDim.x - 1) / gridDim.x);
    const size_t lo = (size_t) blockIdx.x * per, hi = lo + per;
    size_t at = 0;
    for (int i = 0; i < a.nsegs && at < hi; ++i) {
        at = up16(at);
        const size_t s0 = at > lo ? at : lo, end = at + a.seg[i].len;
        const size_t s1 = end < hi ? end : hi;
        if (s1 > s0) {
            block_copy(a.seg[i].dst + (s0 - at), a.seg[i].src + (s0 - at), s1 - s0);
        }
        at = end;
    }
    put_done(a);
}

/* Block b folds its share of the output. */
template <class R, class T> __global__ void __launch_bounds__(1024) k_put_fold(gpu_put_args_t a)
{
    size_t lo, len;
    block_share(a.len, &lo, &len);
    if (a.nsrc > 0 && len > 0) {
        auto src = [&](int k) -> const char * { return a.src[k] + lo; };
        fold<R, T>(src, a.nsrc, len, a.out + lo);
    }
    put_done(a);
}

/* Rank q's piece of a spread bcast */
__device__ __forceinline__ void spread_piece(const gpu_put_args_t &a, int q, size_t *off,
                                             size_t *len)
{
    const size_t per = up16((a.len + a.nranks - 2) / (a.nranks - 1));
    *off = (size_t) (q < a.root ? q : q - 1) * per;
    *len = *off < a.len ? (a.len - *off < per ? a.len - *off : per) : 0;
}

__global__ void __launch_bounds__(1024) k_put_spread(gpu_put_args_t a)
{
    __shared__ int ok;
    char *mine = const_cast<char *>(a.from[a.rank]);
    size_t off, len, o, n;
    if (a.rank != a.root) {
        spread_piece(a, a.rank, &off, &len);
        block_share(len, &o, &n);
        block_copy(mine + off + o, a.from[a.root] + off + o, n);
        __syncthreads();
        if (0 == threadIdx.x) {
            __threadfence_system();
            for (int q = 0; q < a.nranks; ++q) {
                if (q != a.rank && q != a.root) {
                    st_release_sys(put_landed(a.flags[q], a.rank, blockIdx.x), a.call);
                }
            }
        }
        for (int k = 1; k < a.nranks; ++k) {
            const int q = (a.rank + k) % a.nranks;
            if (q == a.root) {
                continue;
            }
            spread_piece(a, q, &off, &len);
            block_share(len, &o, &n);
            if (0 == n) {
                continue;
            }
            if (0 == threadIdx.x) {
                ok = wait_geq(put_landed(a.flags[a.rank], q, blockIdx.x), a.call, a.timeout_ns,
                              a.err, q, GPU_STAGE_PUT);
            }
            __syncthreads();
            if (!ok) {
                return;
            }
            block_copy(mine + off + o, a.from[q] + off + o, n);
            __syncthreads();
        }
    }
    put_done(a);
}

/* The spread by writes (gpu_put.h): the root's blocks start on different
 * pieces, so every owner's first shares land at once. */
__global__ void __launch_bounds__(1024) k_put_spread_push(gpu_put_args_t a)
{
    __shared__ int ok;
    const char *mine = a.from[a.rank];
    size_t off, len, o, n;
    if (a.rank == a.root) {
        for (int k = 0; k < a.nranks - 1; ++k) {
            const int i = (int) ((blockIdx.x + k) % (unsigned) (a.nranks - 1));
            const int q = i < a.root ? i : i + 1;
            spread_piece(a, q, &off, &len);
            block_share(len, &o, &n);
            block_copy(const_cast<char *>(a.from[q]) + off + o, mine + off + o, n);
            __syncthreads();
            if (0 == threadIdx.x) {
                __threadfence_system();
                st_release_sys(put_landed(a.flags[q], a.root, blockIdx.x), a.call);
            }
        }
    } else {
        spread_piece(a, a.rank, &off, &len);
        block_share(len, &o, &n);
        if (n > 0) {
            if (0 == threadIdx.x) {
                ok = wait_geq(put_landed(a.flags[a.rank], a.root, blockIdx.x), a.call,
                              a.timeout_ns, a.err, a.root, GPU_STAGE_PUT);
            }
            __syncthreads();
            if (!ok) {
                return;
            }
            for (int k = 1; k < a.nranks; ++k) {
                const int q = (a.rank + k) % a.nranks;
                if (q != a.root) {
                    block_copy(const_cast<char *>(a.from[q]) + off + o, mine + off + o, n);
                }
            }
        }
    }
    put_done(a);
}

struct fold_launcher {
    const gpu_put_args_t *a;
    int nblocks, nthreads;
    cudaStream_t stream;

    template <gpu_op_t OP, class T> bool run()
    {
        k_put_fold<gpu_red<OP, T>, T><<<nblocks, nthreads, 0, stream>>>(*a);
        return true;
    }
};

} // namespace

static bool put_args_ok(const gpu_put_args_t *args, int nblocks, int nthreads)
{
    if (args->nranks < 1 || args->nranks > GPU_MAX_PEERS || nblocks < 1 ||
        nblocks > GPU_MAX_BLOCKS || nthreads < 32 || nthreads > 1024 || args->nsegs < 0 ||
        args->nsegs > GPU_PUT_SEGS || args->nsrc < 0 || args->nsrc > GPU_MAX_PEERS) {
        GPU_ERROR("invalid put launch: %d ranks, %d segments, %d sources, %d blocks of %d "
                  "threads", args->nranks, args->nsegs, args->nsrc, nblocks, nthreads);
        return false;
    }
    return true;
}

static gpu_status_t put_launched(void)
{
    const cudaError_t err = cudaGetLastError();
    if (cudaSuccess != err) {
        GPU_ERROR("put kernel launch failed: %s", cudaGetErrorString(err));
        return GPU_ERR_CUDA;
    }
    return GPU_OK;
}

extern "C" gpu_status_t gpu_kernel_put(const gpu_put_args_t *args, int nblocks, int nthreads,
                                       void *stream)
{
    if (!put_args_ok(args, nblocks, nthreads)) {
        return GPU_ERR_INVALID;
    }
    k_put<<<nblocks, nthreads, 0, static_cast<cudaStream_t>(stream)>>>(*args);
    return put_launched();
}

extern "C" gpu_status_t gpu_kernel_put_spread(const gpu_put_args_t *args, int nblocks,
                                              int nthreads, void *stream)
{
    if (!put_args_ok(args, nblocks, nthreads) || args->nranks < 3 || args->root < 0 ||
        args->root >= args->nranks) {
        GPU_ERROR("invalid spread bcast: %d ranks, root %d", args->nranks, args->root);
        return GPU_ERR_INVALID;
    }
    if (args->push) {
        k_put_spread_push<<<nblocks, nthreads, 0, static_cast<cudaStream_t>(stream)>>>(*args);
    } else {
        k_put_spread<<<nblocks, nthreads, 0, static_cast<cudaStream_t>(stream)>>>(*args);
    }
    return put_launched();
}

extern "C" gpu_status_t gpu_kernel_put_fold(gpu_op_t op, gpu_dtype_t dt, const gpu_put_args_t *args,
                                            int nblocks, int nthreads, void *stream)
{
    fold_launcher l = {args, nblocks, nthreads, static_cast<cudaStream_t>(stream)};
    if (!put_args_ok(args, nblocks, nthreads)) {
        return GPU_ERR_INVALID;
    }
    if (!gpu_dispatch(op, dt, l)) {
        return GPU_ERR_UNSUPPORTED;
    }
    return put_launched();
}
