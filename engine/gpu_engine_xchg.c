/*
 * The exchange collectives (every collective but allreduce) and request
 * completion.  A plan says what this rank sends to and receives from each
 * peer; this file sizes the launch and hands it to the exchange kernel.
 */
#include "engine/gpu_engine_internal.h"
#include "util/gpu_clock.h"
#include "engine/gpu_plan.h"

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

#define GPU_XCHG_SMALL ((size_t) 64 * 1024)
#define GPU_XCHG_SMALL_THREADS 256

gpu_status_t gpu_engine_xchg(gpu_engine_comm_t *c, const char *what, const gpu_xchg_plan_t *plan,
                             gpu_op_t op, gpu_dtype_t dt, gpu_engine_req_t *req)
{
    const int nb = c->p.xchg_nblocks;
    size_t lens[2 * GPU_MAX_PEERS + 2], longest = 0;
    gpu_xchg_args_t a;
    gpu_engine_what_t desc = { .coll = what };
    gpu_status_t st;
    int nwork, grid = 1;

    st = gpu_engine_enter(c, GPU_XCHG_REDUCE == plan->mode, op, dt);
    if (GPU_OK != st) {
        return st;
    }
    /* c->seq numbers the launched kernels' flags (the allreduce's): it
     * counts only calls every rank runs here, so not one a rank leaves to
     * the staged path for a host peer (a host rank never counts it) nor the
     * resident kernel's, which has its own numbers */
    desc.seq = c->seq + 1;
    if (NULL == req && gpu_engine_pk_fits(c, plan, dt)) {
        int resident = 1;
        st = gpu_engine_pk_busy(c, plan->ll_bytes, 1, &resident);
        if (GPU_OK != st) {
            return st;
        }
        if (resident) {
            return gpu_engine_pk_run(c, &desc, plan, op, dt);
        }
    }
    /* only the resident kernel starts before the kinds are agreed */
    st = gpu_engine_kind_settle(c);
    if (GPU_OK != st) {
        return st;
    }
    ++c->seq;
    if (gpu_engine_paced_takes(c, plan, NULL == req)) {
        return gpu_engine_hs_run(c, &desc, plan, op, dt);
    }
    if (NULL != req && c->nranks > 1 && gpu_engine_hs_async_takes(c, plan)) {
        st = gpu_engine_hs_start(c, plan, op, dt, req);
        snprintf(req->what, sizeof(req->what), "%s", gpu_engine_what(&desc));
        return st;
    }
    if (gpu_engine_put_takes(c, plan, NULL == req)) {
        st = gpu_engine_put_run(c, &desc, plan, op, dt);
        if (GPU_ERR_UNSUPPORTED != st) {
            return st;
        }
    }
    /* before any choice of this rank alone (a rank with nothing to do
     * still meets the others when the areas grow) */
    st = c->nranks > 1 ? gpu_engine_big_need(c, NULL == req) : GPU_OK;   /* alone: a copy */
    if (GPU_OK != st) {
        return st;
    }
    nwork = gpu_plan_work(plan, c->rank, c->nranks, lens);
    if (0 == nwork) {
        return gpu_engine_finish(c, &desc, req);
    }
    /* blocks: the widest pair, or enough for the local copy */
    for (int k = 0; k < nwork; ++k) {
        const size_t chunk = gpu_xchg_chunk(lens[k], c->xg_slot, nb, plan->relay);
        const int b = gpu_xchg_pair_blocks(lens[k], chunk, nb);
        grid = b > grid ? b : grid;
        longest = lens[k] > longest ? lens[k] : longest;
    }
    st = gpu_engine_order(c);
    if (GPU_OK != st) {
        gpu_engine_big_done(c, 1);   /* nothing launched */
        return st;
    }
    memset(&a, 0, sizeof(a));
    a.plan = *plan;
    a.nranks = c->nranks;
    a.rank = c->rank;
    a.nb_max = c->p.xchg_nblocks;
    a.nblocks = grid;
    a.split = c->p.xchg_split && !plan->relay && !plan->in_place;
    if (a.split) {
        a.nblocks *= 2;
    }
    /* small transfers: fewer threads make each block barrier cheaper */
    a.nthreads = longest <= GPU_XCHG_SMALL ? GPU_XCHG_SMALL_THREADS : c->p.nthreads;
    a.nthreads = a.nthreads > c->p.nthreads ? c->p.nthreads : a.nthreads;
    /* flags in the communicator's small area, slots in the large one */
    memcpy(a.peer_base, c->peer_base, sizeof(a.peer_base));
    memcpy(a.data_base, c->big_base, sizeof(a.data_base));
    a.flags_off = c->xg_flags_off;
    a.slots_off = c->xg_slots_off;
    a.slot_bytes = c->xg_slot;
    a.timeout_ns = (unsigned long long) (c->p.timeout_s * 1e9);
    a.err = c->err_dev;
    GPU_LOG(20, "%s: %s, %d blocks", gpu_engine_what(&desc),
            GPU_XCHG_COPY == plan->mode ? "copy" : "reduce", a.nblocks);
    c->t_launch = gpu_clock_now();
    st = gpu_kernel_xchg(op, dt, &a, c->stream);
    if (GPU_OK != st) {
        gpu_engine_big_done(c, 1);   /* not launched */
        return st;
    }
    return gpu_engine_finish(c, &desc, req);
}

gpu_status_t gpu_engine_req_test(gpu_engine_comm_t *c, gpu_engine_req_t *req)
{
    cudaEvent_t ev = (cudaEvent_t) req->event;
    cudaError_t e;
    gpu_status_t st = GPU_OK;

    if (NULL != req->direct) {
        const gpu_status_t st = gpu_engine_direct_step(c, req);
        /* turned into host-paced rounds (a buffer could not be shared) */
        if (GPU_OK != st || NULL == req->async) {
            return st;
        }
    }
    if (NULL != req->async) {
        return gpu_engine_hs_step(c, req);
    }
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
        gpu_engine_what_t w = { .coll = NULL };
        snprintf(w.text, sizeof(w.text), "%s", req->what);
        st = gpu_engine_wait(c, &w);
    }
    gpu_engine_event_put(c, ev);
    req->event = NULL;
    return st;
}
