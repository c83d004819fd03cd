/*
 * The pairwise exchange kernel behind every collective but allreduce (see
 * gpu_kernels.h for the protocol and the scratch layout).
 *
 * Block b serves chunk i = b + r * nb(pair) of every pair in round r.
 * Both ends of a pair derive nb(pair) and the chunk size from the pair's
 * length, so a chunk always meets the same block on the other side even
 * when the two ranks launch different grids.  Within a round a block
 * sends before it receives (relay plans: receives, then forwards what it
 * received), so every wait depends only on strictly earlier rounds of the
 * peer or on sends that wait for nothing in the same round: no cycles.
 */
#include <cuda_runtime.h>

#include "gpu_device.cuh"
#include "gpu_kernels.h"
#include "gpu_reduce_ops.h"

namespace {

using namespace gpu_dev;

enum { F_READY = 0, F_FREED = 1, F_SENT = 2, F_RECVD = 3 };

__device__ __forceinline__ unsigned long long *xflag(char *base, size_t off, int kind, int peer,
                                                     int block)
{
    return reinterpret_cast<unsigned long long *>(base + off) +
           ((size_t) kind * GPU_MAX_PEERS + peer) * GPU_MAX_BLOCKS + block;
}

__device__ __forceinline__ char *slot(const gpu_xchg_args_t &a, char *base, int src, int block,
                                      unsigned long long j)
{
    return base + a.slots_off +
           (((size_t) src * a.nb_max + block) * 2 + (size_t) (j & 1)) * a.slot_bytes;
}

/* This block's chunk of a pair in round r: offset and length, or false. */
__device__ __forceinline__ bool my_chunk(const gpu_xchg_args_t &a, size_t len, int r, int ch,
                                         size_t *off, size_t *clen)
{
    if (0 == len) {
        return false;
    }
    const size_t chunk = gpu_xchg_chunk(len, a.slot_bytes, a.nb_max, a.plan.relay);
    const int nb = gpu_xchg_pair_blocks(len, chunk, a.nb_max);
    if (ch >= nb) {
        return false;
    }
    const size_t i = (size_t) ch + (size_t) r * nb;
    if (i * chunk >= len) {
        return false;
    }
    *off = i * chunk;
    *clen = len - *off < chunk ? len - *off : chunk;
    return true;
}

/* Bytes [off, off + len) of a pair to or from a slot, piece by piece
 * (gpu_xchg_two); the two copies write disjoint bytes, so no barrier. */
__device__ void pack(char *slot, const char *p1, const char *p2, size_t first, size_t off,
                     size_t len)
{
    size_t n1, at2, o2, n2;
    gpu_xchg_two(first, off, len, &n1, &at2, &o2, &n2);
    if (n1 > 0) {
        block_copy(slot, p1 + off, n1);
    }
    if (n2 > 0) {
        block_copy(slot + at2, p2 + o2, n2);
    }
}

__device__ void unpack(char *p1, char *p2, size_t first, size_t off, size_t len,
                       const char *slot)
{
    size_t n1, at2, o2, n2;
    gpu_xchg_two(first, off, len, &n1, &at2, &o2, &n2);
    if (n1 > 0) {
        block_copy(p1 + off, slot, n1);
    }
    if (n2 > 0) {
        block_copy(p2 + o2, slot + at2, n2);
    }
}

/* Rounds this block takes part in, over every pair of the plan. */
__device__ int block_rounds(const gpu_xchg_args_t &a, int ch)
{
    const gpu_xchg_plan_t &p = a.plan;
    int rounds = 0;
    auto add = [&](size_t len) {
        if (0 == len) {
            return;
        }
        const size_t chunk = gpu_xchg_chunk(len, a.slot_bytes, a.nb_max, p.relay);
        const int nb = gpu_xchg_pair_blocks(len, chunk, a.nb_max);
        const size_t nch = (len + chunk - 1) / chunk;
        if (ch < nb) {
            const int r = (int) ((nch - ch + nb - 1) / nb);
            rounds = r > rounds ? r : rounds;
        }
    };
    for (int q = 0; q < a.nranks; ++q) {
        if (q != a.rank) {
            add(p.send_len[q]);
            add(GPU_XCHG_COPY == p.mode ? p.recv_len[q] : 0);
        }
    }
    if (GPU_XCHG_REDUCE == p.mode && p.red_lo <= p.red_hi) {
        add(p.red_len);
    }
    return rounds;
}

/* Push this round's chunk to every peer that gets one; false on timeout.
 * from: where the chunk is (a chain's folded chunk in this rank's slot),
 * NULL for the plan's source. */
__device__ bool send_round(const gpu_xchg_args_t &a, int r, int ch, const char *from = NULL)
{
    __shared__ unsigned long long j;
    __shared__ int ok;
    char *mine = a.peer_base[a.rank];
    for (int k = 1; k < a.nranks; ++k) {
        const int q = (a.rank + k) % a.nranks;
        size_t off, len;
        if (!my_chunk(a, a.plan.send_len[q], r, ch, &off, &len)) {
            continue;
        }
        if (0 == threadIdx.x) {
            j = *xflag(mine, a.flags_off, F_SENT, q, ch);
            /* the slot of parity j was last filled by transfer j - 2 */
            ok = j < 2 || wait_geq(xflag(mine, a.flags_off, F_FREED, q, ch), j - 1,
                                   a.timeout_ns, a.err, q, GPU_STAGE_XSEND);
        }
        __syncthreads();
        if (!ok) {
            return false;
        }
        if (NULL != from) {
            block_copy(slot(a, a.data_base[q], a.rank, ch, j), from, len);
        } else {
            pack(slot(a, a.data_base[q], a.rank, ch, j), a.plan.send_src[q], a.plan.send_src2[q],
                 a.plan.send_first[q], off, len);
        }
        __syncthreads();
        if (0 == threadIdx.x) {
            __threadfence_system();
            st_release_sys(xflag(a.peer_base[q], a.flags_off, F_READY, a.rank, ch), j + 1);
            *xflag(mine, a.flags_off, F_SENT, q, ch) = j + 1;
        }
        __syncthreads();
    }
    return true;
}

/* COPY: land this round's chunk of every source in place. */
__device__ bool recv_copy_round(const gpu_xchg_args_t &a, int r, int ch)
{
    __shared__ unsigned long long j;
    __shared__ int ok;
    char *mine = a.peer_base[a.rank];
    for (int k = 1; k < a.nranks; ++k) {
        const int s = (a.rank - k + a.nranks) % a.nranks;
        size_t off, len;
        if (!my_chunk(a, a.plan.recv_len[s], r, ch, &off, &len)) {
            continue;
        }
        if (0 == threadIdx.x) {
            j = *xflag(mine, a.flags_off, F_RECVD, s, ch);
            ok = wait_geq(xflag(mine, a.flags_off, F_READY, s, ch), j + 1, a.timeout_ns,
                          a.err, s, GPU_STAGE_XRECV);
        }
        __syncthreads();
        if (!ok) {
            return false;
        }
        unpack(a.plan.recv_dst[s], a.plan.recv_dst2[s], a.plan.recv_first[s], off, len,
               slot(a, a.data_base[a.rank], s, ch, j));
        __syncthreads();
        if (0 == threadIdx.x) {
            st_relaxed_sys(xflag(a.peer_base[s], a.flags_off, F_FREED, a.rank, ch), j + 1);
            *xflag(mine, a.flags_off, F_RECVD, s, ch) = j + 1;
        }
        __syncthreads();
    }
    return true;
}

/* REDUCE: wait for this round's chunk of every source in range, fold. */
template <class R, class T>
__device__ bool recv_reduce_round(const gpu_xchg_args_t &a, int r, int ch)
{
    __shared__ unsigned long long js[GPU_MAX_PEERS];
    __shared__ int failed;
    const gpu_xchg_plan_t &p = a.plan;
    char *mine = a.peer_base[a.rank];
    size_t off, len;
    if (p.red_lo > p.red_hi || !my_chunk(a, p.red_len, r, ch, &off, &len)) {
        return true;
    }
    const int t = threadIdx.x, s = p.red_lo + t;
    if (0 == t) {
        failed = 0;
    }
    __syncthreads();
    if (s <= p.red_hi && s != a.rank) {
        js[t] = *xflag(mine, a.flags_off, F_RECVD, s, ch);
        if (!wait_geq(xflag(mine, a.flags_off, F_READY, s, ch), js[t] + 1, a.timeout_ns,
                      a.err, s, GPU_STAGE_XRECV)) {
            failed = 1;
        }
    }
    __syncthreads();
    if (failed) {
        return false;
    }
    auto src = [&](int k) -> const char * {
        const int q = p.red_lo + k;
        return q == a.rank ? p.red_self + off : slot(a, a.data_base[a.rank], q, ch, js[k]);
    };
    fold<R, T>(src, p.red_hi - p.red_lo + 1, len, p.red_out + off);
    __syncthreads();
    if (s <= p.red_hi && s != a.rank) {
        st_relaxed_sys(xflag(a.peer_base[s], a.flags_off, F_FREED, a.rank, ch), js[t] + 1);
        *xflag(mine, a.flags_off, F_RECVD, s, ch) = js[t] + 1;
    }
    __syncthreads();
    return true;
}

/*
 * REDUCE along a chain (a reduce's pipelined ring: each rank's link carries
 * the message once, where every rank sending the root its whole buffer
 * puts n-1 times the bytes on the root's link).  The rank before this one
 * (red_lo) has folded every rank before it; its chunk is folded with ours
 * where it landed, in this rank's slot, and forwarded from there, so no
 * buffer beyond the slots is needed; the last rank (the root) folds into
 * red_out.  The first rank has no source and sends its input.  The slot is
 * freed only after the forward has read it.
 */
template <class R, class T> __device__ bool chain_reduce_round(const gpu_xchg_args_t &a, int r,
                                                               int ch)
{
    __shared__ unsigned long long j;
    __shared__ int ok;
    const gpu_xchg_plan_t &p = a.plan;
    char *mine = a.peer_base[a.rank];
    const int s = p.red_lo;
    size_t off, len;
    if (p.red_lo > p.red_hi) {
        return send_round(a, r, ch);   /* the chain's first rank */
    }
    if (!my_chunk(a, p.red_len, r, ch, &off, &len)) {
        return true;
    }
    if (0 == threadIdx.x) {
        j = *xflag(mine, a.flags_off, F_RECVD, s, ch);
        ok = wait_geq(xflag(mine, a.flags_off, F_READY, s, ch), j + 1, a.timeout_ns, a.err, s,
                      GPU_STAGE_XRECV);
    }
    __syncthreads();
    if (!ok) {
        return false;
    }
    char *in = slot(a, a.data_base[a.rank], s, ch, j);
    /* partial of the ranks before, then ours: the chain's order */
    auto src = [&](int k) -> const char * { return 0 == k ? in : p.red_self + off; };
    fold<R, T>(src, 2, len, NULL != p.red_out ? p.red_out + off : in);
    __syncthreads();
    if (NULL == p.red_out && !send_round(a, r, ch, in)) {
        return false;
    }
    if (0 == threadIdx.x) {
        st_relaxed_sys(xflag(a.peer_base[s], a.flags_off, F_FREED, a.rank, ch), j + 1);
        *xflag(mine, a.flags_off, F_RECVD, s, ch) = j + 1;
    }
    __syncthreads();
    return true;
}

/*
 * The local part (my own block of an allgather, alltoall...): this block's
 * share of it, in `parts` slices, slice k.  Copied a slice per round
 * between the round's sends and receives rather than all before the first
 * round: with 2 ranks the local half of a 1 GiB alltoall took about 0.25
 * ms of HBM time while NVLink idled (314 GB/s busbw against 328-333 for
 * NCCL); a slice per round runs while other blocks' writes are in flight.
 */
__device__ void self_copy(const gpu_xchg_plan_t &p, int k, int parts)
{
    if (0 == p.self_len || p.self_src == p.self_dst) {
        return;
    }
    const size_t per = ((p.self_len + gridDim.x - 1) / gridDim.x + 15) / 16 * 16;
    const size_t lo = (size_t) blockIdx.x * per;
    if (lo >= p.self_len) {
        return;
    }
    const size_t mine = p.self_len - lo < per ? p.self_len - lo : per;
    const size_t slice = ((mine + parts - 1) / parts + 15) / 16 * 16;
    const size_t off = (size_t) k * slice;
    if (off < mine) {
        block_copy(p.self_dst + lo + off, p.self_src + lo + off,
                   mine - off < slice ? mine - off : slice);
    }
}

/*
 * With split roles the grid is two sets of channels: blocks [0, G) only
 * send and blocks [G, 2G) only receive, so NVLink writes never pause for
 * a block's own copy-out.  A sender waits only for a peer's receiver and
 * a receiver only for a peer's sender, so the rounds argument still holds
 * per role.  Relay plans forward what they received, and in-place plans
 * must read a chunk before it is overwritten: both keep one role.
 */
template <class R, class T> __global__ void __launch_bounds__(1024) k_xchg(gpu_xchg_args_t a)
{
    const bool split = a.split && !a.plan.relay && !a.plan.in_place;
    const int nch = split ? (int) gridDim.x / 2 : (int) gridDim.x;
    const int ch = (int) blockIdx.x % nch;
    const bool sends = !split || (int) blockIdx.x < nch;
    const bool recvs = !split || (int) blockIdx.x >= nch;
    const int rounds = block_rounds(a, ch);
    if (0 == rounds) {
        self_copy(a.plan, 0, 1);
    }
    for (int r = 0; r < rounds; ++r) {
        if (sends && !a.plan.relay && !send_round(a, r, ch)) {
            return;
        }
        self_copy(a.plan, r, rounds);
        if (recvs && GPU_XCHG_COPY == a.plan.mode) {
            if (!recv_copy_round(a, r, ch)) {
                return;
            }
        } else if (a.plan.relay) {
            if (!chain_reduce_round<R, T>(a, r, ch)) {   /* it forwards too */
                return;
            }
            continue;
        } else if (recvs && !recv_reduce_round<R, T>(a, r, ch)) {
            return;
        }
        if (a.plan.relay && !send_round(a, r, ch)) {
            return;
        }
    }
}

struct launcher {
    const gpu_xchg_args_t *a;
    cudaStream_t stream;

    template <gpu_op_t OP, class T> bool run()
    {
        k_xchg<gpu_red<OP, T>, T><<<a->nblocks, a->nthreads, 0, stream>>>(*a);
        return true;
    }
};

} // namespace

extern "C" gpu_status_t gpu_kernel_xchg(gpu_op_t op, gpu_dtype_t dt, const gpu_xchg_args_t *args,
                                        void *stream)
{
    launcher l = {args, static_cast<cudaStream_t>(stream)};
    cudaError_t err;

    if (args->nranks < 1 || args->nranks > GPU_MAX_PEERS || args->nblocks < 1 ||
        args->nblocks > (args->split ? 2 : 1) * args->nb_max || args->nb_max > GPU_MAX_BLOCKS ||
        args->nthreads < GPU_MAX_PEERS) {
        GPU_ERROR("invalid exchange launch: %d ranks, %d blocks of %d, %d threads", args->nranks,
                  args->nblocks, args->nb_max, args->nthreads);
        return GPU_ERR_INVALID;
    }
    if (GPU_XCHG_COPY == args->plan.mode) {
        /* no arithmetic: one instantiation serves every datatype */
        l.run<GPU_OP_BOR, uint8_t>();
    } else if (!gpu_dispatch(op, dt, l)) {
        return GPU_ERR_UNSUPPORTED;
    }
    err = cudaGetLastError();
    if (cudaSuccess != err) {
        GPU_ERROR("exchange kernel launch (%s, %s) failed: %s",
                  GPU_XCHG_COPY == args->plan.mode ? "copy" : gpu_op_name(op),
                  gpu_dtype_name(dt), cudaGetErrorString(err));
        return GPU_ERR_CUDA;
    }
    return GPU_OK;
}
