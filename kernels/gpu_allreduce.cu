/*
 * One-shot and two-shot allreduce kernels (see gpu_kernels.h for the
 * scratch layout and the synchronisation protocol).
 */
#include <cuda_runtime.h>

#include "gpu_kernels.h"
#include "gpu_reduce_ops.h"
#include "gpu_device.cuh"

namespace {

using namespace gpu_dev;

__device__ __forceinline__ unsigned long long *flag_ptr(char *base, int block, int stage, int src)
{
    size_t idx = ((size_t) block * GPU_FLAG_STAGES + stage) * GPU_MAX_PEERS + src;
    return reinterpret_cast<unsigned long long *>(base) + idx;
}

/* This block meets the same block of every rank at stage (block_meet). */
__device__ bool block_barrier(const gpu_allreduce_args_t &a, int stage, unsigned long long v)
{
    auto to = [&](int p) { return flag_ptr(a.peer_base[p], blockIdx.x, stage, a.rank); };
    auto from = [&](int p) { return flag_ptr(a.peer_base[a.rank], blockIdx.x, stage, p); };
    return block_meet(a.nranks, to, from, v, a.timeout_ns, a.err, stage);
}

template <gpu_op_t OP, class T> __global__ void __launch_bounds__(1024) k_oneshot(gpu_allreduce_args_t a)
{
    typedef gpu_red<OP, T> R;
    const size_t bytes = a.count * sizeof(T);
    const size_t gran = (bytes + 15) / 16;
    const size_t per = (gran + gridDim.x - 1) / gridDim.x * 16;
    const size_t lo = clamp_len(bytes, 0, (size_t) blockIdx.x * per);
    const size_t len = clamp_len(bytes, lo, per);
    const size_t slot0 = a.ll_off + (size_t) a.ll_buf * a.nranks * a.ll_slot_bytes;
    const char *in = static_cast<const char *>(a.in) + lo;

    /* publish: my slice goes to slot[rank] of every rank, nearest first */
    for (int k = 0; k < a.nranks; ++k) {
        const int p = (a.rank + k) % a.nranks;
        block_copy(a.peer_base[p] + slot0 + (size_t) a.rank * a.ll_slot_bytes + lo, in, len);
    }
    /* every block takes part, even an empty one: the buffer-reuse argument
     * needs one barrier per block per call */
    if (!block_barrier(a, GPU_STAGE_ONESHOT, a.seq << 24)) {
        return;
    }
    char *mine = a.peer_base[a.rank] + slot0 + lo;
    auto src = [&](int r) -> const char * { return mine + (size_t) r * a.ll_slot_bytes; };
    auto none = [](int) -> char * { return nullptr; };
    block_reduce<R, T>(src, a.nranks, len, static_cast<char *>(a.out) + lo, none, 0);
}

template <gpu_op_t OP, class T> __global__ void __launch_bounds__(1024) k_twoshot(gpu_allreduce_args_t a)
{
    typedef gpu_red<OP, T> R;
    const size_t bytes = a.count * sizeof(T);
    const size_t S = a.ts_shard_bytes;
    const size_t chunk = S * a.nranks;
    const size_t nchunks = (bytes + chunk - 1) / chunk;
    const size_t cap = a.ts_block_bytes / (2 * (size_t) a.nranks);
    const size_t blk = a.ts_off + (size_t) blockIdx.x * a.ts_block_bytes;
    const char *in = static_cast<const char *>(a.in);
    char *out = static_cast<char *>(a.out);
    char *mine = a.data_base[a.rank] + blk;
    unsigned long long step = 1;

    for (size_t c = blockIdx.x; c < nchunks; c += gridDim.x, ++step) {
        const size_t cbase = c * chunk;
        const unsigned long long v = (a.seq << 24) + step;

        /* reduce-scatter: shard p of this chunk to peer p's recv[rank] */
        for (int k = 0; k < a.nranks; ++k) {
            const int p = (a.rank + k) % a.nranks;
            const size_t off = cbase + (size_t) p * S;
            block_copy(a.data_base[p] + blk + (size_t) a.rank * cap, in + off,
                       clamp_len(bytes, off, S));
        }
        if (!block_barrier(a, GPU_STAGE_SCATTER, v)) {
            return;
        }
        /* reduce my shard in rank order (the same fold with or without a
         * root: bit-identical results); result to out and to every peer */
        const size_t myoff = cbase + (size_t) a.rank * S;
        const size_t mylen = clamp_len(bytes, myoff, S);
        auto src = [&](int r) -> const char * { return mine + (size_t) r * cap; };
        auto dst = [&](int k) -> char * {
            const int p = (a.rank + 1 + k) % a.nranks;
            return a.data_base[p] + blk + (size_t) (a.nranks + a.rank) * cap;
        };
        if (a.root < 0) {
            block_reduce<R, T>(src, a.nranks, mylen, out + myoff, dst, a.nranks - 1);
        } else {
            /* a reduce: the root's shard to its out, the others' only to
             * the root's gath[rank] (out may be NULL there) */
            auto none = [](int) -> char * { return nullptr; };
            char *to = a.rank == a.root
                           ? out + myoff
                           : a.data_base[a.root] + blk + (size_t) (a.nranks + a.rank) * cap;
            block_reduce<R, T>(src, a.nranks, mylen, to, none, 0);
        }
        /* both barriers on every rank, root or not: the next chunk's
         * pushes into this block's slots wait for them */
        if (!block_barrier(a, GPU_STAGE_GATHER, v)) {
            return;
        }
        if (a.root >= 0 && a.rank != a.root) {
            continue;
        }
        /* all-gather: the other shards arrived in my gath[p] */
        for (int k = 1; k < a.nranks; ++k) {
            const int p = (a.rank + k) % a.nranks;
            const size_t off = cbase + (size_t) p * S;
            block_copy(out + off, mine + (size_t) (a.nranks + p) * cap, clamp_len(bytes, off, S));
        }
    }
}

struct launcher {
    gpu_algo_t algo;
    const gpu_allreduce_args_t *a;
    cudaStream_t stream;

    template <gpu_op_t OP, class T> bool run()
    {
        /* the slices and shards are 16-byte multiples: a wider element
         * (long double int) is never sent here (gpu_kernel_supported) */
        if constexpr (16 % sizeof(T) != 0) {
            return false;
        } else {
            if (GPU_ALGO_ONESHOT == algo) {
                k_oneshot<OP, T><<<a->nblocks, a->nthreads, 0, stream>>>(*a);
            } else {
                k_twoshot<OP, T><<<a->nblocks, a->nthreads, 0, stream>>>(*a);
            }
            return true;
        }
    }
};

/* what the collective kernels take: elements that divide the 16-byte
 * pieces every kernel cuts a message into */
struct probe {
    template <gpu_op_t OP, class T> bool run() { return 16 % sizeof(T) == 0; }
};

} // namespace

extern "C" gpu_status_t gpu_kernel_allreduce(gpu_algo_t algo, gpu_op_t op, gpu_dtype_t dt,
                                             const gpu_allreduce_args_t *args, void *stream)
{
    launcher l = {algo, args, static_cast<cudaStream_t>(stream)};
    cudaError_t err;

    if (args->nranks < 1 || args->nranks > GPU_MAX_PEERS || args->nblocks < 1 ||
        args->nblocks > GPU_MAX_BLOCKS || args->nthreads < GPU_MAX_PEERS) {
        GPU_ERROR("invalid launch: %d ranks, %d blocks, %d threads", args->nranks,
                  args->nblocks, args->nthreads);
        return GPU_ERR_INVALID;
    }
    /* a root only in the two-shot (the one-shot writes every rank's out) */
    if (args->root >= args->nranks || (args->root >= 0 && GPU_ALGO_TWOSHOT != algo)) {
        GPU_ERROR("invalid launch: root %d of %d ranks, algo %d", args->root, args->nranks,
                  (int) algo);
        return GPU_ERR_INVALID;
    }
    if (!gpu_dispatch(op, dt, l)) {
        return GPU_ERR_UNSUPPORTED;
    }
    err = cudaGetLastError();
    if (cudaSuccess != err) {
        GPU_ERROR("allreduce kernel launch (%s, %s, count %zu, algo %d) failed: %s",
                  gpu_op_name(op), gpu_dtype_name(dt), args->count, (int) algo,
                  cudaGetErrorString(err));
        return GPU_ERR_CUDA;
    }
    return GPU_OK;
}

/* blocks of 256 threads for a grid-stride loop over n elements, at most cap */
static unsigned elementwise_grid(size_t n, unsigned cap)
{
    const size_t want = (n + 255) / 256;
    return (unsigned) (want < cap ? (want > 0 ? want : 1) : cap);
}

template <gpu_op_t OP, class T>
__global__ void gpu_fold_kernel(T *acc, const T *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
         i += (size_t) gridDim.x * blockDim.x) {
        acc[i] = gpu_red<OP, T>::apply(acc[i], x[i]);
    }
}

namespace {
struct fold_launcher {
    void *acc;
    const void *x;
    size_t n;
    cudaStream_t stream;
    template <gpu_op_t OP, class T> bool run()
    {
        const unsigned grid = elementwise_grid(n, 1024);
        gpu_fold_kernel<OP, T><<<grid, 256, 0, stream>>>(static_cast<T *>(acc),
                                                        static_cast<const T *>(x), n);
        return true;
    }
};
} // namespace

namespace {
/* loads a fold kernel into the current context, as its first launch would */
struct fold_loader {
    template <gpu_op_t OP, class T> bool run()
    {
        cudaFuncAttributes a;
        return cudaSuccess == cudaFuncGetAttributes(&a, gpu_fold_kernel<OP, T>);
    }
};
} // namespace

/* once per device: a hierarchy is made per communicator */
extern "C" gpu_status_t gpu_kernel_fold_preload(void)
{
    static int loaded[64];
    fold_loader l;
    gpu_op_t op;
    gpu_dtype_t dt;
    int dev = 0;
    if (cudaSuccess == cudaGetDevice(&dev) && dev >= 0 && dev < 64 && loaded[dev]) {
        return GPU_OK;
    }
    if (!gpu_dispatch_every(l, &op, &dt)) {
        GPU_ERROR("loading the fold kernel (%s, %s) failed: %s", gpu_op_name(op),
                  gpu_dtype_name(dt), cudaGetErrorString(cudaGetLastError()));
        return GPU_ERR_CUDA;
    }
    if (dev >= 0 && dev < 64) {
        loaded[dev] = 1;
    }
    return GPU_OK;
}

extern "C" gpu_status_t gpu_kernel_reduce_local(void *acc, const void *x, size_t count,
                                                gpu_op_t op, gpu_dtype_t dt, void *stream)
{
    fold_launcher l = {acc, x, count, static_cast<cudaStream_t>(stream)};
    cudaError_t err;
    if (0 == count) {
        return GPU_OK;
    }
    if (!gpu_dispatch(op, dt, l)) {
        return GPU_ERR_UNSUPPORTED;
    }
    err = cudaGetLastError();
    if (cudaSuccess != err) {
        GPU_ERROR("local fold (%s, %s, count %zu) failed: %s", gpu_op_name(op),
                  gpu_dtype_name(dt), count, cudaGetErrorString(err));
        return GPU_ERR_CUDA;
    }
    return GPU_OK;
}

template <gpu_op_t OP, class T>
__global__ void gpu_direct_kernel(gpu_direct_args_t a, size_t n)
{
    for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
         i += (size_t) gridDim.x * blockDim.x) {
        typedef gpu_fold<gpu_red<OP, T>> F;
        typename F::acc_t acc = F::load(static_cast<const T *>(a.in[0])[i]);
        for (int r = 1; r < a.nranks; ++r) {
            acc = F::apply(acc, F::load(static_cast<const T *>(a.in[r])[i]));
        }
        const T res = F::store(acc);
        for (int r = 0; r < a.nranks; ++r) {
            static_cast<T *>(a.out[r])[i] = res;
        }
    }
}

namespace {
struct direct_launcher {
    const gpu_direct_args_t *a;
    size_t n;
    cudaStream_t stream;
    template <gpu_op_t OP, class T> bool run()
    {
        const unsigned grid = elementwise_grid(n, 2048);
        gpu_direct_kernel<OP, T><<<grid, 256, 0, stream>>>(*a, n);
        return true;
    }
};
} // namespace

extern "C" gpu_status_t gpu_kernel_allreduce_direct(const gpu_direct_args_t *args, size_t count,
                                                    gpu_op_t op, gpu_dtype_t dt, void *stream)
{
    direct_launcher l = {args, count, static_cast<cudaStream_t>(stream)};
    cudaError_t err;
    if (0 == count) {
        return GPU_OK;
    }
    if (args->nranks < 1 || args->nranks > GPU_MAX_PEERS) {
        GPU_ERROR("invalid direct allreduce: %d ranks", args->nranks);
        return GPU_ERR_INVALID;
    }
    if (!gpu_dispatch(op, dt, l)) {
        return GPU_ERR_UNSUPPORTED;
    }
    err = cudaGetLastError();
    if (cudaSuccess != err) {
        GPU_ERROR("direct allreduce (%s, %s, count %zu, %d ranks) failed: %s", gpu_op_name(op),
                  gpu_dtype_name(dt), count, args->nranks, cudaGetErrorString(err));
        return GPU_ERR_CUDA;
    }
    return GPU_OK;
}

extern "C" int gpu_kernel_supported(gpu_op_t op, gpu_dtype_t dt)
{
    probe p;
    return gpu_dispatch(op, dt, p) ? 1 : 0;
}
