/*
 * The exchange collectives (every collective but allreduce) and request
 * completion.  A plan says what this rank sends to and receives from each
 * peer; this file sizes the launch and hands it to the exchange kernel.
 */
#include "engine/gpu_engine_internal.h"

#include <stdio.h>
#include <string.h>

size_t gpu_engine_slot_bytes(const gpu_engine_comm_t *c)
{
    return c->xg_slot;
}

int gpu_engine_rank(const gpu_engine_comm_t *c)
{
    return c->rank;
}

int gpu_engine_size(const gpu_engine_comm_t *c)
{
    return c->nranks;
}

/* Blocks this rank needs: the widest pair, and enough for its local copy. */
static int gpu_xchg_grid(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *p)
{
    const int nb = c->p.xchg_nblocks;
    int grid = 1, q;
    size_t lens[2 * GPU_MAX_PEERS + 2];
    int n = 0, k;

    for (q = 0; q < c->nranks; ++q) {
        if (q != c->rank) {
            lens[n++] = p->send_len[q];
            lens[n++] = GPU_XCHG_COPY == p->mode ? p->recv_len[q] : 0;
        }
    }
    lens[n++] = (GPU_XCHG_REDUCE == p->mode && p->red_lo <= p->red_hi) ? p->red_len : 0;
    lens[n++] = p->self_src != p->self_dst ? p->self_len : 0;
    for (k = 0; k < n; ++k) {
        if (lens[k] > 0) {
            int b = gpu_xchg_pair_blocks(lens[k], gpu_xchg_chunk(lens[k], c->xg_slot, nb), nb);
            grid = b > grid ? b : grid;
        }
    }
    return grid;
}

#define GPU_XCHG_SMALL ((size_t) 64 * 1024)
#define GPU_XCHG_SMALL_THREADS 256

static size_t gpu_xchg_max_len(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *p)
{
    size_t m = p->red_len > p->self_len ? p->red_len : p->self_len;
    for (int q = 0; q < c->nranks; ++q) {
        m = p->send_len[q] > m ? p->send_len[q] : m;
        m = p->recv_len[q] > m ? p->recv_len[q] : m;
    }
    return m;
}

static int gpu_xchg_empty(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *p)
{
    int q;
    for (q = 0; q < c->nranks; ++q) {
        if (q != c->rank && (p->send_len[q] || (GPU_XCHG_COPY == p->mode && p->recv_len[q]))) {
            return 0;
        }
    }
    if (GPU_XCHG_REDUCE == p->mode && p->red_lo <= p->red_hi && p->red_len) {
        return 0;
    }
    return !(p->self_len && p->self_src != p->self_dst);
}

gpu_status_t gpu_engine_xchg(gpu_engine_comm_t *c, const char *what, const gpu_xchg_plan_t *plan,
                             gpu_op_t op, gpu_dtype_t dt, gpu_engine_req_t *req)
{
    gpu_xchg_args_t a;
    gpu_status_t st;
    char desc[96];
    int dev = -1;

    if (c->broken) {
        return GPU_ERR_INVALID;
    }
    if ((GPU_XCHG_REDUCE == plan->mode && !gpu_kernel_supported(op, dt)) ||
        cudaSuccess != cudaGetDevice(&dev) || dev != c->device) {
        return GPU_ERR_UNSUPPORTED;
    }
    snprintf(desc, sizeof(desc), "%s #%llu", what, ++c->seq);
    if (gpu_xchg_empty(c, plan)) {
        return gpu_engine_finish(c, desc, req);
    }
    st = gpu_engine_order(c);
    if (GPU_OK != st) {
        return st;
    }
    memset(&a, 0, sizeof(a));
    a.plan = *plan;
    a.nranks = c->nranks;
    a.rank = c->rank;
    a.nb_max = c->p.xchg_nblocks;
    a.nblocks = gpu_xchg_grid(c, plan);
    a.split = c->p.xchg_split && !plan->relay && !plan->in_place;
    if (a.split) {
        a.nblocks *= 2;
    }
    /* small transfers: fewer threads make each block barrier cheaper */
    a.nthreads = gpu_xchg_max_len(c, plan) <= GPU_XCHG_SMALL ? GPU_XCHG_SMALL_THREADS
                                                              : c->p.nthreads;
    a.nthreads = a.nthreads > c->p.nthreads ? c->p.nthreads : a.nthreads;
    memcpy(a.peer_base, c->peer_base, sizeof(a.peer_base));
    a.flags_off = c->xg_flags_off;
    a.slots_off = c->xg_slots_off;
    a.slot_bytes = c->xg_slot;
    a.timeout_ns = (unsigned long long) (c->p.timeout_s * 1e9);
    a.err = c->err_dev;
    GPU_LOG(20, "%s: %s, %d blocks", desc, GPU_XCHG_COPY == plan->mode ? "copy" : "reduce",
            a.nblocks);
    c->t_launch = gpu_engine_clock();
    st = gpu_kernel_xchg(op, dt, &a, c->stream);
    if (GPU_OK != st) {
        return st;
    }
    return gpu_engine_finish(c, desc, req);
}

gpu_status_t gpu_engine_req_test(gpu_engine_comm_t *c, gpu_engine_req_t *req)
{
    cudaEvent_t ev = (cudaEvent_t) req->event;
    cudaError_t e;
    gpu_status_t st = GPU_OK;

    if (NULL == ev) {
        return GPU_OK;
    }
    e = cudaEventQuery(ev);
    if (cudaErrorNotReady == e) {
        return GPU_INPROGRESS;
    }
    if (cudaSuccess != e) {
        GPU_ERROR("rank %d: %s failed: %s", c->rank, req->what, cudaGetErrorString(e));
        c->broken = 1;
        st = GPU_ERR_CUDA;
    } else if (c->err_host->raised) {
        /* the kernel gave up on a peer; the blocking wait reports who */
        st = gpu_engine_wait(c, req->what);
    }
    if (c->nevents < GPU_ENGINE_EVENTS) {
        c->events[c->nevents++] = ev;
    } else {
        (void) cudaEventDestroy(ev);
    }
    req->event = NULL;
    return st;
}
