/*
 * The persistent low-latency kernel (protocol in gpu_ll.h).
 */
#include <cuda_runtime.h>

#include "gpu_ll.h"
#include "gpu_reduce_ops.h"
#include "gpu_device.cuh"

namespace {

using namespace gpu_dev;

constexpr int kThreads = 512;

/*
 * The command as one block sees it, decoded into shared memory together
 * with this block's piece of every pair.  Threads decode a peer each:
 * single-thread decoding with 64-bit divisions per range took about a
 * microsecond of every small call.
 */
struct ll_cmd {
    int cmd, mode, in_place, sys_fence, op, dt;
    unsigned gen;
    unsigned long long seq;
    unsigned long long wait_seq[GPU_MAX_PEERS];
    int wait_blocks[GPU_MAX_PEERS];
    unsigned send_off[GPU_MAX_PEERS], send_n[GPU_MAX_PEERS];   /* this block's pieces */
    unsigned recv_off[GPU_MAX_PEERS], recv_n[GPU_MAX_PEERS];
    unsigned red_off, red_n, self_off, self_n;
    int work;                   /* this block has a piece of something */
    unsigned split;             /* threads [0, split) send, the rest receive (gpu_ll_split) */
    unsigned waits;             /* peers whose reader blocks' acks we wait for */
    unsigned acks;              /* peers we read from and ack */
    gpu_xchg_plan_t plan;
};

/* This block's piece of a pair (gpu_ll_block_range); 0 bytes when none. */
__device__ __forceinline__ void piece32(unsigned len, unsigned b, unsigned nb, unsigned min_piece,
                                        unsigned *off, unsigned *n)
{
    size_t o = 0, k = 0;
    (void) gpu_ll_block_range(len, (int) b, (int) nb, min_piece, &o, &k);
    *off = (unsigned) o;
    *n = (unsigned) k;
}

/*
 * The block barrier of this kernel.  __syncthreads is the "aligned" form:
 * every thread of a warp must reach the same barrier instruction.  Here
 * thread 0 of warp 0 takes paths of its own (polling, decoding) and the
 * compiler may give each path its own copy of the next barrier; measured
 * on H200, a warp then counted as arrived without thread 0, ran ahead one
 * barrier and executed an in-place command twice.  The non-aligned form
 * counts threads, and the warp reconverges first.
 */
__device__ __forceinline__ void cta_sync()
{
    __syncwarp();
    asm volatile("barrier.sync 0;" ::: "memory");
}

__device__ __forceinline__ unsigned long long ld_volatile(const volatile uint64_t *p)
{
    return *p;
}

struct ll_ctx {
    const gpu_ll_args_t &a;
    const ll_cmd &c;
    uint32_t flag;
    int parity;
    unsigned long long cmd;     /* the host's command number */

    __device__ char *region(int r) const { return a.peer_base[r] + a.region_off; }
    /* line of source src's slot in reader's region */
    __device__ char *line(int reader, int src, size_t idx) const
    {
        return region(reader) + GPU_LL_SLOTS_OFF +
               (((size_t) parity * a.nranks + src) * a.slot_lines + idx) * GPU_LL_LINE;
    }
    /* One thread waits for a line; false after the timeout.  The wait of
     * gpu_dev::ll_wait, written out: through the helper nvcc schedules the
     * launch arguments' loads differently in this kernel, whose generated
     * code is the one measured. */
    __device__ bool get(int src, size_t idx, unsigned long long *v) const
    {
        const char *l = line(a.rank, src, idx);
        if (ll_try(l, flag, v)) {
            return true;
        }
        const unsigned long long t0 = globaltimer();
        unsigned spins = 0;
        while (!ll_try(l, flag, v)) {
            if (0 == (++spins & 255) && globaltimer() - t0 > a.timeout_ns) {
                report_timeout(a.err, src, GPU_STAGE_LL, c.seq, 0);
                return false;
            }
            /* the host drops a command it started before the peers'
             * memory kinds were known once one of them took the host path
             * (engine/gpu_engine_pk.c): its lines never come */
            if (0 == (spins & 4095) && (gave_up(a.err) || ld_volatile(&a.mbox->cancel) >= cmd)) {
                return false;
            }
        }
        return true;
    }
};

/* Fold one line of every source in rank order (REDUCE plans). */
template <gpu_op_t OP, class T>
__device__ bool reduce_piece(const ll_ctx &x, size_t off, size_t n, unsigned tid, unsigned nt)
{
    if constexpr (sizeof(T) > GPU_LL_PAYLOAD || GPU_LL_PAYLOAD % sizeof(T) != 0) {
        return false;
    } else {
        constexpr int E = GPU_LL_PAYLOAD / sizeof(T);
        union u8 {
            unsigned long long u;
            T e[E];
        };
        const gpu_xchg_plan_t &p = x.c.plan;
        const size_t nlines = (n + GPU_LL_PAYLOAD - 1) / GPU_LL_PAYLOAD;
        const bool in = x.a.rank >= p.red_lo && x.a.rank <= p.red_hi;
        bool ok = true;
        /* our own contribution's load leaves before the first wait, and the
         * next line's before this line's: a wait is a volatile access,
         * which no later load may pass */
        u8 next;
        next.u = in && tid < nlines ? load8(p.red_self + off + tid * GPU_LL_PAYLOAD,
                                            n - tid * GPU_LL_PAYLOAD)
                                    : 0;
        for (size_t j = tid; j < nlines && ok; j += nt) {
            const size_t pos = off + j * GPU_LL_PAYLOAD, idx = pos / GPU_LL_PAYLOAD;
            const size_t valid = n - j * GPU_LL_PAYLOAD < GPU_LL_PAYLOAD ? n - j * GPU_LL_PAYLOAD
                                                                        : GPU_LL_PAYLOAD;
            const int ne = (int) (valid / sizeof(T));
            typedef gpu_fold<gpu_red<OP, T>> F;
            typename F::acc_t fa[E];
            u8 acc, v, self = next;
            if (in && j + nt < nlines) {
                next.u = load8(p.red_self + pos + nt * GPU_LL_PAYLOAD,
                               n - (j + nt) * GPU_LL_PAYLOAD);
            }
            for (int s = p.red_lo; s <= p.red_hi; ++s) {
                if (s == x.a.rank) {
                    v = self;
                } else if (!x.get(s, idx, &v.u)) {
                    ok = false;
                    break;
                }
#pragma unroll
                for (int k = 0; k < E; ++k) {
                    if (k < ne) {
                        fa[k] = s == p.red_lo ? F::load(v.e[k])
                                              : F::apply(fa[k], F::load(v.e[k]));
                    }
                }
            }
            if (ok) {
                acc.u = 0;
#pragma unroll
                for (int k = 0; k < E; ++k) {
                    if (k < ne) {
                        acc.e[k] = F::store(fa[k]);
                    }
                }
                store8(p.red_out + pos, acc.u, valid);
            }
        }
        return ok;
    }
}

struct reduce_visitor {
    const ll_ctx &x;
    size_t off, n;
    unsigned tid, nt;
    bool ok;
    template <gpu_op_t OP, class T> __device__ bool run()
    {
        ok = reduce_piece<OP, T>(x, off, n, tid, nt);
        return true;
    }
};

/* The ack only says "read"; our stores that follow cannot reach lines
 * whose reads have already returned, so a relaxed poll is enough. */
__device__ bool wait_geq_relaxed(const unsigned long long *f, unsigned long long v,
                                 unsigned long long timeout_ns, gpu_kernel_error_t *err, int peer)
{
    const volatile unsigned long long *p = f;
    unsigned long long seen = *p;
    if (seen >= v) {
        return true;
    }
    const unsigned long long t0 = globaltimer();
    unsigned spins = 0;
    while ((seen = *p) < v) {
        if (globaltimer() - t0 > timeout_ns) {
            report_timeout(err, peer, GPU_STAGE_LLACK, v, seen);
            return false;
        }
        if (0 == (++spins & 1023) && gave_up(err)) {
            return false;
        }
    }
    return true;
}

/* Wait until every reader block that read the slot's previous call from
 * us has acked it (host-computed call and block count per peer). */
__device__ bool wait_slots(const ll_ctx &x)
{
    const char *mine = x.region(x.a.rank);
    for (int i = threadIdx.x; i < x.a.nranks * GPU_LL_MAX_BLOCKS; i += blockDim.x) {
        const int q = i / GPU_LL_MAX_BLOCKS, b = i % GPU_LL_MAX_BLOCKS;
        if (q == x.a.rank || b >= x.c.wait_blocks[q] || 0 == x.c.send_n[q]) {
            continue;
        }
        const unsigned long long *ack = reinterpret_cast<const unsigned long long *>(
            mine + GPU_LL_ACK_OFF + ((size_t) b * GPU_MAX_PEERS + q) * 8);
        if (!wait_geq_relaxed(ack, x.c.wait_seq[q], x.a.timeout_ns, x.a.err, q)) {
            return false;
        }
    }
    return true;
}

/* Where pair byte pos (a line's start) lives: the address and how many
 * bytes from it up to end belong to the same piece; 0 bytes for padding
 * (gpu_xchg_two: a line never spans two pieces). */
__device__ __forceinline__ const char *line_at(const char *p1, const char *p2, size_t first,
                                               size_t pos, size_t end, size_t *valid)
{
    size_t n1, at2, o2, n2;
    gpu_xchg_two(first, pos, end - pos, &n1, &at2, &o2, &n2);
    *valid = n1 > 0 ? n1 : 0 == at2 ? n2 : 0;
    return n1 > 0 ? p1 + pos : p2 + o2;
}

__device__ __forceinline__ unsigned long long send_line(const gpu_xchg_plan_t &p, int q,
                                                        size_t pos, size_t end)
{
    size_t valid;
    const char *src = line_at(p.send_src[q], p.send_src2[q], p.send_first[q], pos, end, &valid);
    return valid > 0 ? load8(src, valid) : 0;
}

__device__ void send_pieces(const ll_ctx &x, unsigned tid, unsigned nt)
{
    const gpu_xchg_plan_t &p = x.c.plan;
    for (int k = 1; k < x.a.nranks; ++k) {
        const int q = x.a.rank + k < x.a.nranks ? x.a.rank + k : x.a.rank + k - x.a.nranks;
        const size_t off = x.c.send_off[q], n = x.c.send_n[q], end = off + n;
        if (0 == n) {
            continue;
        }
        const size_t nlines = (n + GPU_LL_PAYLOAD - 1) / GPU_LL_PAYLOAD;
        /* the next line's load leaves before this line's store, which no
         * later load passes (a volatile store) */
        unsigned long long next = tid < nlines ? send_line(p, q, off + tid * GPU_LL_PAYLOAD, end)
                                               : 0;
        for (size_t j = tid; j < nlines; j += nt) {
            const unsigned long long v = next;
            if (j + nt < nlines) {
                next = send_line(p, q, off + (j + nt) * GPU_LL_PAYLOAD, end);
            }
            ll_put(x.line(q, x.a.rank, (off + j * GPU_LL_PAYLOAD) / GPU_LL_PAYLOAD), v, x.flag);
        }
    }
}

__device__ bool recv_copies(const ll_ctx &x, unsigned tid, unsigned nt)
{
    const gpu_xchg_plan_t &p = x.c.plan;
    bool ok = true;
    for (int k = 1; k < x.a.nranks && ok; ++k) {
        const int s = x.a.rank >= k ? x.a.rank - k : x.a.rank - k + x.a.nranks;
        const size_t off = x.c.recv_off[s], n = x.c.recv_n[s], end = off + n;
        if (0 == n) {
            continue;
        }
        const size_t nlines = (n + GPU_LL_PAYLOAD - 1) / GPU_LL_PAYLOAD;
        for (size_t j = tid; j < nlines; j += nt) {
            const size_t pos = off + j * GPU_LL_PAYLOAD, idx = pos / GPU_LL_PAYLOAD;
            unsigned long long v;
            size_t valid;
            if (!x.get(s, idx, &v)) {
                ok = false;
                break;
            }
            char *dst = const_cast<char *>(line_at(p.recv_dst[s], p.recv_dst2[s],
                                                   p.recv_first[s], pos, end, &valid));
            if (valid > 0) {
                store8(dst, v, valid);
            }
        }
    }
    return ok;
}

/* Tell every writer this block read from that its slot is free again. */
__device__ void ack_readers(const ll_ctx &x)
{
    for (unsigned m = x.c.acks; 0 != m; m &= m - 1) {
        const int s = __ffs(m) - 1;
        st_relaxed_sys(reinterpret_cast<unsigned long long *>(
                           x.region(s) + GPU_LL_ACK_OFF +
                           ((size_t) blockIdx.x * GPU_MAX_PEERS + x.a.rank) * 8),
                       x.c.seq);
    }
}

/* Phase stamps of block 0, kept here and copied to the host mailbox only
 * after the done word: a store to host memory in flight would hold up the
 * next fence of its thread and distort what is measured. */
__shared__ unsigned long long t_stamp[GPU_LL_STAMPS];
/* cleared by any thread whose wait timed out; set at decode */
__shared__ int ll_ok;

/* Release at GPU scope: what this thread stored, and what it saw through a
 * barrier, is performed before its later stores (lighter than fence.sc,
 * which __threadfence is) */
__device__ __forceinline__ void fence_release_gpu()
{
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
}

/* Run one command (host command number cmd_no) and report it done; false
 * when a wait timed out. */
__device__ bool execute(const gpu_ll_args_t &a, const ll_cmd &c, unsigned long long cmd_no)
{
    const ll_ctx x = { a, c, gpu_ll_flag(c.seq), (int) (c.seq & 1), cmd_no };
    const gpu_xchg_plan_t &p = c.plan;

    /* usually none: the host drops waits that the calls in between prove */
    if (0 != c.waits) {
        if (!wait_slots(x)) {
            ll_ok = 0;
        }
        cta_sync();
        if (!ll_ok) {
            return false;
        }
    }
    /*
     * Senders and receivers are different warps.  A fence waits for every
     * store its thread has outstanding, a store over NVLink included (about
     * 1 us here): the one fence that orders the results before the done
     * word is taken by a receiver, which has local stores only.  The
     * senders need none: their lines carry their own flags, and the loads
     * of the user's data have returned before the stores leave.  How many
     * threads each side gets: gpu_ll_split (gpu_ll.h).
     */
    const unsigned half = c.split;
    const bool sender = threadIdx.x < half;
    const unsigned rtid = threadIdx.x - half, rnt = blockDim.x - half;
    if (a.stamps && 0 == threadIdx.x && 0 == blockIdx.x) {
        t_stamp[GPU_LL_T_SLOTS] = globaltimer();
    }
    if (sender) {
        send_pieces(x, threadIdx.x, half);
    }
    if (a.stamps && 0 == threadIdx.x && 0 == blockIdx.x) {
        t_stamp[GPU_LL_T_SENT] = globaltimer();
    }
    if (!sender && c.self_n > 0) {
        /* MPI forbids overlap of a send buffer with the receive buffer, so
         * the local copy may run beside the sends */
        part_copy(p.self_dst + c.self_off, p.self_src + c.self_off, c.self_n, rtid, rnt);
    }
    if (c.in_place) {
        /* output overwrites input this block sent above */
        cta_sync();
    }
    bool mine = true;
    if (sender) {
        /* nothing to receive */
    } else if (GPU_XCHG_COPY == c.mode) {
        mine = recv_copies(x, rtid, rnt);
    } else if (c.red_n > 0) {
        reduce_visitor v = { x, c.red_off, c.red_n, rtid, rnt, true };
        mine = gpu_dispatch((gpu_op_t) c.op, (gpu_dtype_t) c.dt, v) && v.ok;
    }
    if (!mine) {
        ll_ok = 0;
    }
    if (a.stamps && threadIdx.x == half && 0 == blockIdx.x) {
        t_stamp[GPU_LL_T_RECEIVED] = globaltimer();
    }
    /* no fence per receiver: the barrier makes every receiver's results
     * visible to the reporting thread, and its release fence below is
     * cumulative over what it has seen (the pattern of a grid barrier);
     * a fence in each receiver warp cost 0.3-0.45 us of every reduce and
     * allgather (docs/results/h200x2_2026-11-22_resident_kernel/
     * ab_2026-11-22_3544e71_h200x2.log) */
    cta_sync();
    if (!ll_ok) {
        return false;
    }
    if (a.stamps && 0 == threadIdx.x && 0 == blockIdx.x) {
        t_stamp[GPU_LL_T_FENCED] = globaltimer();
    }
    if (threadIdx.x == half) {
        /*
         * The first receiver reports.  Its fence after the barrier orders
         * every receiver's results before the done word (without it,
         * thread 0's store after fences in the receivers measured stale
         * bytes in the host's copy now and then); a receiver has no NVLink
         * stores outstanding, so the fence stays cheap.  Managed output may
         * live in host memory, which the CPU reads without this GPU in
         * between: then the fence is at system scope (1-2 us here, so only
         * when the host says so).  The acks only say that our reads of the
         * writer's lines have returned.
         */
        if (c.sys_fence) {
            __threadfence_system();
        } else {
            fence_release_gpu();
        }
        ack_readers(x);
        if (a.stamps && 0 == blockIdx.x) {
            t_stamp[GPU_LL_T_REPORT] = globaltimer();
        }
        a.mbox->done[blockIdx.x] = cmd_no;
        if (a.stamps && 0 == blockIdx.x) {
            for (int i = 0; i < GPU_LL_STAMPS; ++i) {
                a.mbox->stamp[i] = t_stamp[i];
            }
            a.mbox->stamp_cmd = cmd_no;
        }
    }
    return true;
}

__device__ unsigned long long ptr_of(const unsigned *w, int i)
{
    return (unsigned long long) w[i] | ((unsigned long long) w[i + 1] << 32);
}

/* Warp 0 reads a tagged copy of a command once (the host mailbox, or
 * block 0's copy in device memory); true (in every thread of the warp)
 * when every word carries the same tag, returned in *tag. */
__device__ bool read_tagged(const volatile uint64_t *src, int nw, unsigned *words, uint32_t *tag)
{
    constexpr int kLoads = (GPU_LL_DESC_WORDS + 31) / 32;
    const int lane = threadIdx.x;
    unsigned long long w[kLoads];
    bool same = true;
    /* every load leaves before the first is used: one trip to host memory
     * (0.7-0.8 us) however many peers a command describes */
#pragma unroll
    for (int k = 0; k < kLoads; ++k) {
        const int i = k * 32 + lane;
        w[k] = i < nw ? ld_volatile(&src[i]) : 0;
    }
    const uint32_t ref = __shfl_sync(0xffffffffu, (uint32_t) (w[0] >> 32), 0);
#pragma unroll
    for (int k = 0; k < kLoads; ++k) {
        const int i = k * 32 + lane;
        if (i < nw) {
            same = same && (uint32_t) (w[k] >> 32) == ref;
            words[i] = (unsigned) w[k];
        }
    }
    *tag = ref;
    return __all_sync(0xffffffffu, same);
}

/*
 * Warp 0 decodes: lane q takes peer q (nranks <= 32), every lane reads the
 * header (broadcast loads, all issued before the first store) and lane 0
 * writes it; ballots give the block's peer masks.  The other warps wait at
 * the next barrier.
 */
__device__ void decode(const gpu_ll_args_t &a, const unsigned *w, ll_cmd *c)
{
    gpu_xchg_plan_t &p = c->plan;
    const unsigned b = blockIdx.x, nb = gridDim.x, mp = (unsigned) a.min_piece;
    const int t = threadIdx.x;
    if (t >= 32) {
        return;
    }
    const unsigned cw = w[GPU_LL_W_CMD], gen = w[GPU_LL_W_GEN], range = w[GPU_LL_W_RED_RANGE];
    const unsigned red_len = w[GPU_LL_W_RED_LEN], self_len = w[GPU_LL_W_SELF_LEN];
    const unsigned long long seq = ptr_of(w, GPU_LL_W_SEQ);
    const unsigned long long red_self = ptr_of(w, GPU_LL_W_RED_SELF);
    const unsigned long long red_out = ptr_of(w, GPU_LL_W_RED_OUT);
    const unsigned long long self_src = ptr_of(w, GPU_LL_W_SELF_SRC);
    const unsigned long long self_dst = ptr_of(w, GPU_LL_W_SELF_DST);
    const int mode = (int) ((cw >> 4) & 1), lo = (short) (range & 0xffff),
              hi = (short) (range >> 16);
    unsigned red_off = 0, red_n = 0, self_off = 0, self_n = 0;
    if (GPU_XCHG_REDUCE == mode && lo <= hi) {
        piece32(red_len, b, nb, mp, &red_off, &red_n);
    }
    if (self_src != self_dst) {
        piece32(self_len, b, nb, mp, &self_off, &self_n);
    }
    bool sends = false, recvs = false, waits = false, reads = false;
    /* a side is big when it has more lines than half the threads (for
     * n ranks, one peer's share of that: ballots cost less than a sum) */
    const unsigned nt = blockDim.x, half = (nt / 2) & ~31u, npeers = (unsigned) a.nranks - 1;
    bool sbig = false, rbig = false;
    if (t < a.nranks) {
        const unsigned *e = w + GPU_LL_W_PEERS + GPU_LL_PEER_WORDS * t;
        const unsigned slw = e[GPU_LL_P_SEND_LEN], rlen = e[GPU_LL_P_RECV_LEN];
        const unsigned long long src = ptr_of(e, GPU_LL_P_SEND_SRC);
        const unsigned long long dst = ptr_of(e, GPU_LL_P_RECV_DST);
        const unsigned long long wseq = ptr_of(e, GPU_LL_P_WAIT_SEQ);
        const unsigned slen = slw & 0xffffffu;
        unsigned so, sn, ro, rn;
        piece32(slen, b, nb, mp, &so, &sn);
        piece32(rlen, b, nb, mp, &ro, &rn);
        p.send_src[t] = (const char *) src;
        p.send_len[t] = slen;
        p.recv_dst[t] = (char *) dst;
        p.recv_len[t] = rlen;
        p.send_first[t] = e[GPU_LL_P_SEND_FIRST];
        p.send_src2[t] = (const char *) ptr_of(e, GPU_LL_P_SEND_SRC2);
        p.recv_first[t] = e[GPU_LL_P_RECV_FIRST];
        p.recv_dst2[t] = (char *) ptr_of(e, GPU_LL_P_RECV_DST2);
        c->wait_blocks[t] = (int) (slw >> 24);
        c->wait_seq[t] = wseq;
        c->send_off[t] = so;
        c->send_n[t] = sn;
        c->recv_off[t] = ro;
        c->recv_n[t] = rn;
        if (t != a.rank) {
            sends = sn > 0;
            recvs = GPU_XCHG_COPY == mode && rn > 0;
            waits = (slw >> 24) > 0 && sn > 0;
            reads = recvs || (GPU_XCHG_REDUCE == mode && t >= lo && t <= hi && red_n > 0);
            sbig = sends && (sn + GPU_LL_PAYLOAD - 1) / GPU_LL_PAYLOAD * npeers > half;
            rbig = recvs && (rn + GPU_LL_PAYLOAD - 1) / GPU_LL_PAYLOAD * npeers > nt - half;
        }
    }
    const unsigned smask = __ballot_sync(0xffffffffu, sends);
    const unsigned rmask = __ballot_sync(0xffffffffu, recvs);
    const unsigned wmask = __ballot_sync(0xffffffffu, waits);
    const unsigned amask = __ballot_sync(0xffffffffu, reads);
    const unsigned bigs = __ballot_sync(0xffffffffu, sbig);
    const unsigned bigr = __ballot_sync(0xffffffffu, rbig);
    if (0 == t) {
        c->cmd = (int) (cw & 15);
        c->mode = mode;
        c->in_place = (int) ((cw >> 5) & 1);
        c->sys_fence = (int) ((cw >> 6) & 1);
        c->op = (int) ((cw >> 8) & 255);
        c->dt = (int) ((cw >> 16) & 255);
        c->gen = gen;
        c->seq = seq;
        p.mode = mode;
        p.relay = 0;
        p.in_place = c->in_place;
        p.red_self = (const char *) red_self;
        p.red_out = (char *) red_out;
        p.red_len = red_len;
        p.red_lo = lo;
        p.red_hi = hi;
        p.self_src = (const char *) self_src;
        p.self_dst = (char *) self_dst;
        p.self_len = self_len;
        c->red_off = red_off;
        c->red_n = red_n;
        c->self_off = self_off;
        c->self_n = self_n;
        c->work = 0 != smask || 0 != rmask || red_n > 0 || self_n > 0;
        c->split = gpu_ll_split(nt, 0 != smask, 0 != rmask || red_n > 0 || self_n > 0, 0 != bigs,
                                0 != bigr || (red_n + GPU_LL_PAYLOAD - 1) / GPU_LL_PAYLOAD > nt - half);
        c->waits = wmask;
        c->acks = amask;
        ll_ok = 1;
    }
}

/* The quit word: generation (16 bits), quit, last command published. */
constexpr unsigned long long kQuit = 1ull << 46, kSeqMask = kQuit - 1;

__device__ __forceinline__ unsigned long long quit_word(unsigned gen, unsigned long long seq)
{
    return ((unsigned long long) (gen & 0xffff) << 47) | kQuit | (seq & kSeqMask);
}

enum { POLL = 0, RUN = 1, LEAVE = 2 };

/* Block 0 copies command number cur to the other blocks, each word tagged
 * with the number like the host's, so a reader that catches a copy half
 * written sees mixed tags and reads again: no fence, no lock. */
__device__ void publish(volatile uint64_t *copy, const unsigned *words, int nw, unsigned long long cur)
{
    const uint64_t tag = (uint64_t) (uint32_t) cur << 32;
    for (int i = threadIdx.x; i < nw; i += blockDim.x) {
        copy[i] = tag | words[i];
    }
}

/*
 * Block 0 alone reads the host mailbox (every block polling host memory
 * made each fence cost microseconds) and decides to quit; it copies each
 * command that other blocks have work in (more than 4 KiB a pair) into
 * device memory, which they poll in L2.  Commands only block 0 has work in
 * are not copied; the other blocks skip them (their `next` jumps).  On
 * leaving, block 0 writes the quit word with the last command it copied:
 * a block leaves only once it has run that one, so a command is either
 * copied (and every block with work in it runs it, even after a quit),
 * taken by block 0 alone, or not taken at all (the exit word says so and
 * the host relaunches).
 */
__global__ void __launch_bounds__(kThreads) k_ll(gpu_ll_args_t a)
{
    __shared__ unsigned words[GPU_LL_DESC_WORDS];
    __shared__ ll_cmd c;
    __shared__ int state;
    __shared__ unsigned long long next, cur, published, idle_lim;
    char *region = a.peer_base[a.rank] + a.region_off;
    unsigned long long *quit = reinterpret_cast<unsigned long long *>(region + GPU_LL_CTL_OFF);
    volatile uint64_t *copy = reinterpret_cast<volatile uint64_t *>(region + GPU_LL_CMD_OFF);
    const int nw = GPU_LL_W_PEERS + GPU_LL_PEER_WORDS * a.nranks;
    unsigned long long idle_from = globaltimer();

    if (0 == threadIdx.x) {
        next = a.start;
        published = a.start - 1;
        idle_lim = a.idle_ns;
    }
    for (;;) {
        /* Every warp must have read last round's state, cur and command
         * before thread 0 rewrites them: without this barrier a late warp
         * read the next round's RUN on a poll round, fell one barrier out
         * of step and ran an in-place command a second time. */
        cta_sync();
        if (threadIdx.x < 32) {
            uint32_t tag;
            const bool whole = read_tagged(0 == blockIdx.x ? a.mbox->desc : copy, nw, words, &tag);
            if (0 == threadIdx.x) {
                const int ahead = (int) (tag - (uint32_t) next);
                const bool ours = (words[GPU_LL_W_GEN] & 0xffff) == (a.gen & 0xffff);
                state = POLL;
                if (0 == blockIdx.x) {
                    if (whole && ahead >= 0) {
                        if (!ours || GPU_LL_CMD_QUIT == (words[GPU_LL_W_CMD] & 15)) {
                            /* parked, or a newer launch took over: nothing
                             * of ours is outstanding (the host waited) */
                            st_release_gpu(quit, quit_word(a.gen, published));
                            state = LEAVE;
                        } else {
                            cur = next + (unsigned) ahead;
                            state = RUN;
                            /* the host saw the application busy between
                             * calls: leave soon after this one */
                            idle_lim = gpu_ll_cmd_leave(words[GPU_LL_W_CMD]) ? a.idle_short_ns
                                                                             : a.idle_ns;
                            if (a.stamps) {
                                t_stamp[GPU_LL_T_SEEN] = globaltimer();
                            }
                        }
                    } else if (globaltimer() - idle_from > idle_lim) {
                        a.mbox->exit_word = ((uint64_t) a.gen << 32) | (uint32_t) (next - 1);
                        st_release_gpu(quit, quit_word(a.gen, published));
                        state = LEAVE;
                    }
                } else if (whole && ahead >= 0 && ours) {
                    cur = next + (unsigned) ahead;
                    state = RUN;
                } else {
                    /* a quit counts once the last copied command has run
                     * here: its copy may still be on its way */
                    const unsigned long long q = ld_acquire_gpu(quit);
                    if ((unsigned) (q >> 47) == (a.gen & 0xffff) && (q & kQuit) &&
                        (q & kSeqMask) < next) {
                        state = LEAVE;
                    }
                }
            }
        }
        cta_sync();
        if (LEAVE == state) {
            return;
        }
        if (POLL == state) {
            continue;
        }
        if (0 == blockIdx.x && gpu_ll_cmd_busy(words[GPU_LL_W_CMD]) > 1) {
            publish(copy, words, nw, cur);
            if (0 == threadIdx.x) {
                published = cur;
            }
        }
        decode(a, words, &c);
        cta_sync();
        if (GPU_LL_CMD_WORK == c.cmd && c.work) {
            if (a.stamps && 0 == threadIdx.x && 0 == blockIdx.x) {
                t_stamp[GPU_LL_T_DECODED] = globaltimer();
            }
            if (!execute(a, c, cur)) {
                /* the host reports the timeout and parks block 0; blocks
                 * polling for copied commands leave on this quit word
                 * (every next is past 0), or they would poll forever */
                st_release_gpu(quit, quit_word(a.gen, 0));
                return;
            }
        }
        if (a.one_shot) {
            /* the host launched only the blocks this call needs and knows
             * the kernel is gone once it sees the call done */
            return;
        }
        if (0 == threadIdx.x) {
            next = cur + 1;
        }
        idle_from = globaltimer();
    }
}

} // namespace

extern "C" gpu_status_t gpu_kernel_ll_launch(const gpu_ll_args_t *args, int nblocks, int nthreads,
                                             void *stream)
{
    cudaError_t err;
    if (nblocks < 1 || nblocks > GPU_LL_MAX_BLOCKS || args->nranks < 2 ||
        args->nranks > GPU_MAX_PEERS) {
        GPU_ERROR("invalid persistent launch: %d blocks, %d ranks", nblocks, args->nranks);
        return GPU_ERR_INVALID;
    }
    nthreads = nthreads > kThreads ? kThreads : (nthreads < 64 ? 64 : nthreads);
    k_ll<<<nblocks, nthreads, 0, static_cast<cudaStream_t>(stream)>>>(*args);
    err = cudaGetLastError();
    if (cudaSuccess != err) {
        GPU_ERROR("persistent kernel launch (%d blocks) failed: %s", nblocks,
                  cudaGetErrorString(err));
        return GPU_ERR_CUDA;
    }
    return GPU_OK;
}
