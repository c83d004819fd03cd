/*
 * Large exchange collectives copied straight between the ranks' own
 * buffers (the kernel and why: kernels/gpu_put.h).
 *
 * A blocking copy plan (alltoall, allgather, bcast, gather, scatter,
 * neighbourhood exchanges) whose largest pair, known alike on every rank
 * (plan->ll_bytes), reaches coll_gpu_put_min takes this path on every
 * rank.  Each rank names its side of every pair (where a peer's pieces
 * land; with coll_gpu_put_read, where its pieces for a peer are): one
 * allocation's IPC handle (cached: ipc/gpu_ipc_cache.h) and an offset per
 * piece.  Every rank maps the buffers of the peers it copies to (or from)
 * and says whether it could; only when every rank could does any rank
 * launch.  A reduction (reduce, reduce_scatter, scan, exscan) always
 * reads: each rank folds its sources where they are (gpu_put.h); so does
 * a bcast (plan->one_way: reading was faster for one link's one way).  Two host
 * exchanges, bounded like every exchange of ours; where
 * a buffer cannot be shared (managed, pool or VMM memory, one side in two
 * allocations) or mapped, every rank learns it and the call takes the
 * exchange kernel instead, nothing copied.
 *
 * Peers touch this rank's buffers with nothing on its stream ordering
 * them, so before naming them a rank waits on the host for the
 * application's earlier work on the legacy stream (with coll_gpu_stream_order
 * every call, as the other paths order after it on the GPU).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/gpu_engine_internal.h"
#include "ipc/gpu_ipc_cache.h"
#include "kernels/gpu_put.h"
#include "util/gpu_clock.h"
#include "util/gpu_cuda_wait.h"

#define GPU_PUT_GONE 8

typedef struct {
    int32_t status;
    int32_t pid;
    int32_t ngone;              /* allocations of this process freed since its last call */
    int32_t pad;
    gpu_ipc_ref_t ref;          /* the allocation this rank's side of every pair is in */
    int64_t at[GPU_MAX_PEERS][2];   /* peer q's two pieces: offsets from ref's buffer */
    uint64_t gone[GPU_PUT_GONE];
} gpu_put_desc_t;

int gpu_engine_put_takes(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *plan, int blocking)
{
    return blocking && c->p.put_min > 0 && c->nranks > 1 && !plan->relay && !plan->in_place &&
           plan->ll_bytes >= c->p.put_min &&
           (GPU_XCHG_REDUCE != plan->mode || c->p.put_fold_nblocks > 0);
}

/* Does this call read from the peers (else write into them)? */
static int gpu_put_reads(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *p)
{
    return c->p.put_read || GPU_XCHG_REDUCE == p->mode || p->one_way;
}

/* This rank's send pieces for peer q (send) or where q's pieces land here
 * (receive), as the two pieces of a pair (gpu_xchg_two).  Lengths in n, 0
 * for none.  The peers see this rank's side through its descriptor: what
 * they read (reads) or where they write; this rank copies the other end. */
static void gpu_put_end(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *p, int q, int send,
                        const char *at[2], size_t n[2])
{
    size_t at2, o2;
    n[0] = n[1] = 0;
    if (q == c->rank) {
        return;
    }
    at[0] = send ? p->send_src[q] : p->recv_dst[q];
    at[1] = send ? p->send_src2[q] : p->recv_dst2[q];
    gpu_xchg_two(send ? p->send_first[q] : p->recv_first[q], 0,
                 send ? p->send_len[q] : p->recv_len[q], &n[0], &at2, &o2, &n[1]);
}

/* A bcast among more than two ranks is spread (kernels/gpu_put.h): every
 * rank's buffer is written (or read) by the others.  The same answer on
 * every rank. */
static int gpu_put_spread(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *p)
{
    return p->one_way && c->nranks > 2;
}

/* A spread bcast's root and this rank's buffer, from its plan */
static int gpu_put_spread_buf(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *p,
                              const char **buf)
{
    for (int q = 0; q < c->nranks; ++q) {
        if (q != c->rank && p->send_len[q] > 0) {
            *buf = p->send_src[q];
            return c->rank;
        }
        if (q != c->rank && p->recv_len[q] > 0) {
            *buf = p->recv_dst[q];
            return q;
        }
    }
    *buf = NULL;
    return -1;   /* nothing to move */
}

/* This rank's side for every peer, as one allocation and offsets in it */
static gpu_status_t gpu_put_describe(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *p,
                                     gpu_put_desc_t *d)
{
    const char *low = NULL, *at[2];
    size_t n[2];
    gpu_status_t st;

    memset(d->at, 0xff, sizeof(d->at));   /* -1: nothing */
    if (gpu_put_spread(c, p)) {
        /* every peer reads from this rank's whole buffer */
        if (gpu_put_spread_buf(c, p, &low) < 0) {
            return GPU_OK;
        }
        memset(d->at, 0, sizeof(d->at));
        return gpu_ipc_ref_make(low, &d->ref);
    }
    for (int q = 0; q < c->nranks; ++q) {
        gpu_put_end(c, p, q, gpu_put_reads(c, p), at, n);
        for (int k = 0; k < 2; ++k) {
            low = n[k] > 0 && (NULL == low || at[k] < low) ? at[k] : low;
        }
    }
    if (NULL == low) {
        return GPU_OK;   /* no peer touches this rank's memory */
    }
    st = gpu_ipc_ref_make(low, &d->ref);
    if (GPU_OK != st) {
        return st;
    }
    const uintptr_t lo = (uintptr_t) d->ref.base, hi = lo + d->ref.size;
    for (int q = 0; q < c->nranks; ++q) {
        gpu_put_end(c, p, q, gpu_put_reads(c, p), at, n);
        for (int k = 0; k < 2; ++k) {
            if (0 == n[k]) {
                continue;
            }
            if ((uintptr_t) at[k] < lo || (uintptr_t) at[k] + n[k] > hi) {
                return GPU_ERR_UNSUPPORTED;   /* a second allocation */
            }
            d->at[q][k] = (int64_t) (at[k] - low);
        }
    }
    return GPU_OK;
}

/* Where source s's input for this rank is, mapped here */
static gpu_status_t gpu_put_open(const gpu_engine_comm_t *c, const gpu_put_desc_t *all, int q,
                                 char **base)
{
    if (GPU_OK != gpu_ipc_ref_open(&all[q].ref, (void **) base)) {
        GPU_LOG(1, "rank %d: cannot map rank %d's buffer: the exchange kernel", c->rank, q);
        return GPU_ERR_UNSUPPORTED;
    }
    return GPU_OK;
}

/* A reduction's sources in rank order: this rank's own input, the others'
 * where they are */
static gpu_status_t gpu_put_sources(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *p,
                                    const gpu_put_desc_t *all, gpu_put_args_t *a)
{
    a->out = p->red_out;
    a->len = p->red_len;
    for (int s = p->red_lo; s <= p->red_hi && p->red_len > 0; ++s) {
        char *base = NULL;
        if (s == c->rank) {
            a->src[a->nsrc++] = p->red_self;
            continue;
        }
        if (all[s].at[c->rank][0] < 0) {
            GPU_ERROR("rank %d: rank %d names no input for this rank's fold", c->rank, s);
            return GPU_ERR_INVALID;
        }
        if (GPU_OK != gpu_put_open(c, all, s, &base)) {
            return GPU_ERR_UNSUPPORTED;
        }
        a->src[a->nsrc++] = base + all[s].at[c->rank][0];
    }
    return GPU_OK;
}

/* A spread bcast: every rank's buffer, mapped here */
static gpu_status_t gpu_put_spread_args(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *p,
                                        const gpu_put_desc_t *all, gpu_put_args_t *a)
{
    const char *buf;
    a->root = gpu_put_spread_buf(c, p, &buf);
    a->push = !c->p.put_read;
    a->len = p->ll_bytes;
    if (a->root < 0 || 0 == a->len) {
        a->root = -1;   /* nothing moves: the kernel only meets the others */
        return GPU_OK;
    }
    for (int q = 0; q < c->nranks; ++q) {
        char *base = NULL;
        if (q == c->rank) {
            a->from[q] = buf;
        } else if (GPU_OK != gpu_put_open(c, all, q, &base)) {
            return GPU_ERR_UNSUPPORTED;
        } else {
            a->from[q] = base;
        }
    }
    return GPU_OK;
}

/* This rank's copies: its end of every pair and the peer's, mapped here;
 * and its local copy */
static gpu_status_t gpu_put_segments(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *p,
                                     const gpu_put_desc_t *all, gpu_put_args_t *a)
{
    if (GPU_XCHG_REDUCE == p->mode) {
        return gpu_put_sources(c, p, all, a);
    }
    if (gpu_put_spread(c, p)) {
        return gpu_put_spread_args(c, p, all, a);
    }
    for (int q = 0; q < c->nranks; ++q) {
        size_t n[2];
        const char *mine[2];
        char *base = NULL;
        gpu_put_end(c, p, q, !gpu_put_reads(c, p), mine, n);
        if (0 == n[0] + n[1]) {
            continue;
        }
        if (GPU_OK != gpu_put_open(c, all, q, &base)) {
            return GPU_ERR_UNSUPPORTED;
        }
        for (int k = 0; k < 2; ++k) {
            if (0 == n[k]) {
                continue;
            }
            if (all[q].at[c->rank][k] < 0) {
                GPU_ERROR("rank %d: rank %d has no piece %d for %zu bytes of this rank's",
                          c->rank, q, k, n[k]);
                return GPU_ERR_INVALID;
            }
            char *there = base + all[q].at[c->rank][k];
            a->seg[a->nsegs++] = gpu_put_reads(c, p)
                ? (gpu_put_seg_t) { .src = there, .dst = (char *) mine[k], .len = n[k] }
                : (gpu_put_seg_t) { .src = mine[k], .dst = there, .len = n[k] };
        }
    }
    if (p->self_len > 0 && p->self_src != p->self_dst) {
        a->seg[a->nsegs++] = (gpu_put_seg_t) { .src = p->self_src, .dst = p->self_dst,
                                               .len = p->self_len };
    }
    return GPU_OK;
}

/*
 * The copy engines move one link's one way faster than SMs do (2x H100, GPU
 * 0 to 1, test/bench/bw_probe.cu: 392-396 GB/s at 256 MiB-1 GiB against
 * 368-375 by SM stores or loads), so a bcast between two ranks from 16 MiB
 * (and every copy plan with coll_gpu_put_ce 1) queues its segments as copies on the
 * stream; the kernel behind them then only tells the peers.  Each rank
 * chooses for itself: the kernel's flags count blocks, not bytes.
 */
static gpu_status_t gpu_put_engines(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *p,
                                    gpu_put_args_t *a)
{
    /* below it a copy's start costs more than it saves (2x H100: an 8 MiB
     * bcast 47.2 us by the engines, 45.0 by SMs; 16 MiB 64.6 against 68.0) */
    const size_t from = (size_t) 16 << 20;
    if (!(c->p.put_ce > 0 || (c->p.put_ce < 0 && p->one_way && p->ll_bytes >= from))) {
        return GPU_OK;
    }
    for (int i = 0; i < a->nsegs; ++i) {
        const cudaError_t e = cudaMemcpyAsync(a->seg[i].dst, a->seg[i].src, a->seg[i].len,
                                              cudaMemcpyDeviceToDevice, c->stream);
        if (cudaSuccess != e) {
            GPU_ERROR("rank %d: copy of %zu bytes for the put path: %s", c->rank, a->seg[i].len,
                      cudaGetErrorString(e));
            return GPU_ERR_CUDA;
        }
    }
    a->nsegs = 0;
    return GPU_OK;
}

/* Every rank's verdict, GPU_OK only where all are */
static gpu_status_t gpu_put_agree(gpu_engine_comm_t *c, int32_t mine, int32_t *all)
{
    gpu_status_t st = c->boot->allgather(c->boot_ctx, &mine, all, sizeof(mine));
    if (GPU_OK != st) {
        c->broken = 1;
        return st;
    }
    for (int r = 0; r < c->nranks; ++r) {
        if (GPU_OK != all[r]) {
            /* an error anywhere is one everywhere; otherwise stage alike */
            return GPU_ERR_UNSUPPORTED == all[r] ? GPU_ERR_UNSUPPORTED : (gpu_status_t) all[r];
        }
    }
    return GPU_OK;
}

gpu_status_t gpu_engine_put_run(gpu_engine_comm_t *c, gpu_engine_what_t *what,
                                const gpu_xchg_plan_t *plan, gpu_op_t op, gpu_dtype_t dt)
{
    const size_t n = (size_t) c->nranks;
    gpu_put_desc_t mine, *all;
    int32_t *verdicts;
    gpu_put_args_t a;
    gpu_status_t st = GPU_OK;
    int nblocks;

    if (NULL == c->put_all) {
        c->put_all = calloc(n, sizeof(gpu_put_desc_t) + sizeof(int32_t));
        if (NULL == c->put_all) {
            return GPU_ERR_NO_MEMORY;
        }
    }
    all = c->put_all;
    verdicts = (int32_t *) (all + n);
    memset(&mine, 0, sizeof(mine));
    if (c->p.order_legacy) {
        st = gpu_cuda_stream_wait(cudaStreamLegacy, 2.0 * c->p.timeout_s + 5.0, c->rank,
                                  "the application's work on the default stream before a "
                                  "collective");
    }
    if (GPU_OK == st) {
        st = gpu_put_describe(c, plan, &mine);
    }
    mine.status = (int32_t) st;
    mine.pid = (int32_t) getpid();
    mine.ngone = gpu_ipc_exports_gone(&c->direct_gone, mine.gone, GPU_PUT_GONE);
    st = c->boot->allgather(c->boot_ctx, &mine, all, sizeof(mine));
    if (GPU_OK != st) {
        c->broken = 1;
        return st;
    }
    memset(&a, 0, sizeof(a));
    a.root = -1;
    st = GPU_OK;
    for (int r = 0; r < c->nranks; ++r) {
        /* mappings of freed memory keep it alive: close them first */
        if (r != c->rank) {
            gpu_ipc_forget(all[r].pid, all[r].gone, all[r].ngone);
        }
        st = GPU_OK == st ? (gpu_status_t) all[r].status : st;
    }
    if (GPU_OK == st) {
        st = gpu_put_segments(c, plan, all, &a);
    } else {
        GPU_LOG(10, "rank %d: %s: a receive buffer cannot be shared (%s): the exchange kernel",
                c->rank, gpu_engine_what(what), gpu_status_string(st));
        return GPU_ERR_UNSUPPORTED;   /* every rank saw the same statuses */
    }
    st = gpu_put_agree(c, (int32_t) st, verdicts);
    if (GPU_OK != st) {
        return st;
    }
    st = gpu_engine_order(c);
    if (GPU_OK != st) {
        c->broken = 1;   /* the peers launch: they will time out, name this rank */
        return st;
    }
    a.nranks = c->nranks;
    a.rank = c->rank;
    for (int r = 0; r < c->nranks; ++r) {
        a.flags[r] = c->peer_base[r] + c->put_off;
    }
    a.call = ++c->put_calls;
    nblocks = GPU_XCHG_REDUCE == plan->mode ? c->p.put_fold_nblocks : c->p.xchg_nblocks;
    c->put_tickets += (unsigned long long) nblocks;
    a.tickets = c->put_tickets;
    a.timeout_ns = (unsigned long long) (c->p.timeout_s * 1e9);
    a.err = c->err_dev;
    GPU_LOG(20, "%s: put (%s), %d segments, %d sources, %s, %d blocks", gpu_engine_what(what),
            gpu_put_reads(c, plan) && !a.push ? "read" : "write", a.nsegs, a.nsrc,
            a.root >= 0 ? "spread" : "direct", nblocks);
    c->t_launch = gpu_clock_now();
    if (GPU_XCHG_REDUCE == plan->mode) {
        st = gpu_kernel_put_fold(op, dt, &a, nblocks, c->p.nthreads, c->stream);
    } else if (a.root >= 0) {
        st = gpu_kernel_put_spread(&a, nblocks, c->p.nthreads, c->stream);
    } else {
        st = gpu_put_engines(c, plan, &a);
        if (GPU_OK == st) {
            st = gpu_kernel_put(&a, nblocks, c->p.nthreads, c->stream);
        }
    }
    if (GPU_OK != st) {
        c->broken = 1;
        return st;
    }
    return gpu_engine_finish(c, what, NULL);
}
