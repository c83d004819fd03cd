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

/* A stream region starts with the call counter, then the blocks' arrival
 * count at byte 64.  The call number of this launch is the counter + 1:
 * every block reads it before the last block to finish advances it (a
 * timed-out launch too, so the numbers stay in step with the peers'
 * launches), which is what a replayed graph counts its calls with. */
__device__ unsigned long long call_begin(const char *region)
{
    __shared__ unsigned long long s_seq;
    if (0 == threadIdx.x) {
        s_seq = *(const volatile unsigned long long *) region + 1;
    }
    __syncthreads();
    return s_seq;
}

__device__ void call_end(char *region, unsigned long long seq)
{
    unsigned *arrived = reinterpret_cast<unsigned *>(region + 64);
    __syncthreads();
    if (1 == gridDim.x) {
        /* no other block to count: the next launch on the stream starts
         * after this one has ended, so it sees the store without a fence */
        if (0 == threadIdx.x) {
            *(volatile unsigned long long *) region = seq;
        }
        return;
    }
    if (0 == threadIdx.x) {
        __threadfence();
        if (atomicAdd(arrived, 1u) == gridDim.x - 1) {
            *arrived = 0;
            *(volatile unsigned long long *) region = seq;
            __threadfence();
        }
    }
}

template <gpu_op_t OP, class T>
__global__ void __launch_bounds__(GPU_STREAM_THREADS) k_stream_allreduce(gpu_stream_args_t a)
{
    char *mine = a.peer_base[a.rank] + a.region_off;
    const size_t bytes = a.count * sizeof(T);
    const size_t lines = (bytes + GPU_STREAM_PAYLOAD - 1) / GPU_STREAM_PAYLOAD;
    const size_t stride = (size_t) gridDim.x * blockDim.x;
    const size_t first = (size_t) blockIdx.x * blockDim.x + threadIdx.x;
    const char *in = static_cast<const char *>(a.in);
    char *out = static_cast<char *>(a.out);

    const unsigned long long seq = call_begin(mine);
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
    call_end(mine, seq);
}

/* ---- the bulk form (gpu_stream.h) ---- */

__device__ __forceinline__ unsigned long long *bulk_flag(char *region, int parity, int src,
                                                         int block)
{
    return reinterpret_cast<unsigned long long *>(region + GPU_STREAM_BULK_FLAGS_OFF) +
           ((size_t) parity * GPU_MAX_PEERS + src) * GPU_STREAM_BULK_MAX_BLOCKS + block;
}

__device__ __forceinline__ char *bulk_slot(const gpu_stream_bulk_args_t &a, char *region,
                                           int parity, int src)
{
    return region + GPU_STREAM_BULK_CTL_BYTES + ((size_t) parity * a.nranks + src) * a.slot_bytes;
}

/* The call number of this launch (call_begin) and this block's range of
 * a.bytes, cut at multiples of 32 bytes: the widest element (long double
 * int) stays in one block, which folds it whole; every other element
 * size divides 32 too. */
__device__ unsigned long long bulk_begin(const gpu_stream_bulk_args_t &a, size_t *lo, size_t *len)
{
    const size_t per = ((a.bytes + 31) / 32 + gridDim.x - 1) / gridDim.x * 32;
    *lo = clamp_len(a.bytes, 0, (size_t) blockIdx.x * per);
    *len = clamp_len(a.bytes, *lo, per);
    return call_begin(a.peer_base[a.rank] + a.region_off);
}

/* This block's pushes are out: meet the same block of every rank. */
__device__ bool bulk_meet(const gpu_stream_bulk_args_t &a, int parity, unsigned long long seq)
{
    auto to = [&](int p) {
        return bulk_flag(a.peer_base[p] + a.region_off, parity, a.rank, blockIdx.x);
    };
    auto from = [&](int p) {
        return bulk_flag(a.peer_base[a.rank] + a.region_off, parity, p, blockIdx.x);
    };
    return block_meet(a.nranks, to, from, seq, a.timeout_ns, a.err, GPU_STAGE_XRECV);
}

template <gpu_op_t OP, class T>
__global__ void __launch_bounds__(GPU_STREAM_BULK_THREADS) k_bulk_allreduce(gpu_stream_bulk_args_t a)
{
    size_t lo, len;
    const unsigned long long seq = bulk_begin(a, &lo, &len);
    const int parity = (int) (seq & 1);
    char *mine = a.peer_base[a.rank] + a.region_off;

    /* my range into my slot of every peer; the fold reads my own input in
     * place where it is 16-byte aligned (in place is safe: each thread
     * reads its vector of every source before it writes it), else a copy
     * in my own slot */
    const char *in = static_cast<const char *>(a.in) + lo;
    const bool own = 0 == ((uintptr_t) a.in & 15);
    for (int k = own ? 1 : 0; k < a.nranks; ++k) {
        const int p = (a.rank + k) % a.nranks;
        block_copy(bulk_slot(a, a.peer_base[p] + a.region_off, parity, a.rank) + lo, in, len);
    }
    if (bulk_meet(a, parity, seq)) {
        auto src = [&](int r) -> const char * {
            return r == a.rank && own ? in : bulk_slot(a, mine, parity, r) + lo;
        };
        auto none = [](int) -> char * { return nullptr; };
        block_reduce<gpu_red<OP, T>, T>(src, a.nranks, len, static_cast<char *>(a.out) + lo, none,
                                        0);
    }
    call_end(a.peer_base[a.rank] + a.region_off, seq);
}

__global__ void __launch_bounds__(GPU_STREAM_BULK_THREADS) k_bulk_alltoall(gpu_stream_bulk_args_t a)
{
    size_t lo, len;
    const unsigned long long seq = bulk_begin(a, &lo, &len);
    const int parity = (int) (seq & 1);
    const char *in = static_cast<const char *>(a.in);
    char *out = static_cast<char *>(a.out), *mine = a.peer_base[a.rank] + a.region_off;

    for (int k = 1; k < a.nranks; ++k) {
        const int p = (a.rank + k) % a.nranks;
        block_copy(bulk_slot(a, a.peer_base[p] + a.region_off, parity, a.rank) + lo,
                   in + (size_t) p * a.stride + lo, len);
    }
    block_copy(out + (size_t) a.rank * a.stride + lo, in + (size_t) a.rank * a.stride + lo, len);
    if (bulk_meet(a, parity, seq)) {
        for (int k = 1; k < a.nranks; ++k) {
            const int q = (a.rank + a.nranks - k) % a.nranks;
            block_copy(out + (size_t) q * a.stride + lo, bulk_slot(a, mine, parity, q) + lo, len);
        }
    }
    call_end(a.peer_base[a.rank] + a.region_off, seq);
}

/* blocks of at least GPU_STREAM_BULK_PIECE each; the same on every rank */
static unsigned bulk_grid(size_t bytes)
{
    size_t g = (bytes + GPU_STREAM_BULK_PIECE - 1) / GPU_STREAM_BULK_PIECE;
    return (unsigned) (g < 1 ? 1 : g > GPU_STREAM_BULK_MAX_BLOCKS ? GPU_STREAM_BULK_MAX_BLOCKS : g);
}

struct bulk_launcher {
    const gpu_stream_bulk_args_t *a;
    cudaStream_t stream;
    template <gpu_op_t OP, class T> bool run()
    {
        k_bulk_allreduce<OP, T><<<bulk_grid(a->bytes), GPU_STREAM_BULK_THREADS, 0, stream>>>(*a);
        return true;
    }
};

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
            /* a warp for a few lines: the block's barriers are cheaper */
            const unsigned threads = lines <= 32 ? 32 : GPU_STREAM_THREADS;
            k_stream_allreduce<OP, T><<<(unsigned) grid, threads, 0, stream>>>(*a);
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

extern "C" gpu_status_t gpu_kernel_stream_bulk(gpu_stream_bulk_kind_t kind, gpu_op_t op,
                                               gpu_dtype_t dt, const gpu_stream_bulk_args_t *a,
                                               void *stream)
{
    const cudaStream_t s = static_cast<cudaStream_t>(stream);
    cudaError_t err;

    if (a->nranks < 2 || a->nranks > GPU_MAX_PEERS || a->rank < 0 || a->rank >= a->nranks ||
        a->bytes > a->slot_bytes || 0 != a->slot_bytes % 16) {
        GPU_ERROR("invalid stream bulk call: rank %d of %d, %zu bytes, slots of %zu", a->rank,
                  a->nranks, a->bytes, a->slot_bytes);
        return GPU_ERR_INVALID;
    }
    if (GPU_STREAM_BULK_ALLREDUCE == kind) {
        bulk_launcher l = {a, s};
        if (!gpu_dispatch(op, dt, l)) {
            return GPU_ERR_UNSUPPORTED;
        }
    } else {
        k_bulk_alltoall<<<bulk_grid(a->bytes), GPU_STREAM_BULK_THREADS, 0, s>>>(*a);
    }
    err = cudaGetLastError();
    if (cudaSuccess != err) {
        GPU_ERROR("stream bulk %s launch (%zu bytes) failed: %s",
                  GPU_STREAM_BULK_ALLREDUCE == kind ? "allreduce" : "alltoall", a->bytes,
                  cudaGetErrorString(err));
        return GPU_ERR_CUDA;
    }
    return GPU_OK;
}
