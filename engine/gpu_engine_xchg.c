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

/* ---- wide elements: moved, then folded (gpu_plan_wide says why) ---- */

/* The area for this call: grown, never shrunk.  Nothing else of this
 * communicator uses it now (its calls run one at a time, and a call's fold
 * ends before it completes), nor does a peer: what peers write into it
 * are this rank's receives, all landed before its last call completed. */
static gpu_status_t gpu_engine_wide_area(gpu_engine_comm_t *c, size_t bytes)
{
    cudaError_t e;
    if (bytes <= c->wide_bytes) {
        return GPU_OK;
    }
    gpu_engine_pk_park(c);   /* cudaFree waits for the device */
    if (NULL != c->wide_area) {
        (void) cudaFree(c->wide_area);
        c->wide_area = NULL;
        c->wide_bytes = 0;
    }
    e = cudaMalloc((void **) &c->wide_area, bytes);
    if (cudaSuccess != e) {
        GPU_ERROR("rank %d: %zu bytes of device memory for a long double int reduction: %s",
                  c->rank, bytes, cudaGetErrorString(e));
        c->wide_area = NULL;
        return cudaErrorMemoryAllocation == e ? GPU_ERR_NO_MEMORY : GPU_ERR_CUDA;
    }
    c->wide_bytes = bytes;
    return GPU_OK;
}

gpu_status_t gpu_engine_wide(gpu_engine_comm_t *c, const char *what, const gpu_wide_t *w,
                             gpu_engine_req_t *req)
{
    gpu_xchg_plan_t plan;
    gpu_wide_fold_t f;
    gpu_status_t st;

    /* a healthy communicator on the caller's device (the area goes there) */
    st = gpu_engine_enter(c, 0, w->op, w->dt);
    if (GPU_OK != st) {
        return st;
    }
    /* the same on every rank: the type and op every rank passed */
    if (!gpu_op_dtype_valid(w->op, w->dt) || w->rank != c->rank || w->n != c->nranks) {
        return GPU_ERR_UNSUPPORTED;
    }
    st = gpu_engine_wide_area(c, gpu_wide_area_bytes(w));
    if (GPU_OK == st) {
        st = gpu_plan_wide(w, c->wide_area, &plan, &f);
    }
    if (GPU_OK != st) {
        /* an area one rank could not have fails the call on that rank
         * alone: its peers' movement waits for it and reports the rank */
        return st;
    }
    st = gpu_engine_xchg(c, what, &plan, GPU_OP_BOR, GPU_DT_U8, req);
    if (GPU_OK != st || NULL != req) {
        return st;
    }
    return gpu_engine_wide_fold(c, w);
}

gpu_status_t gpu_engine_wide_fold(gpu_engine_comm_t *c, const gpu_wide_t *w)
{
    const size_t esize = gpu_dtype_size(w->dt);
    gpu_engine_what_t what = { .coll = "long double int fold", .seq = c->seq };
    gpu_xchg_plan_t plan;
    gpu_wide_fold_t f;
    cudaError_t e;
    gpu_status_t st = gpu_plan_wide(w, c->wide_area, &plan, &f);
    int prev;

    if (GPU_OK != st || f.hi <= f.lo || 0 == f.len) {
        return st;
    }
    prev = gpu_engine_device_push(c);
    gpu_engine_pk_park(c);   /* a resident kernel holds the stream */
    /* acc = source lo, then acc = acc op source s in rank order: what the
     * host reference folds, element by element, with the same functors.
     * The accumulator is source lo's place in the area, aligned for the
     * element's structure whatever the output's alignment; one copy out */
    char *acc = (char *) f.area + (size_t) f.lo * f.stride;
    for (int s = f.lo + 1; GPU_OK == st && s < f.hi; ++s) {
        st = gpu_kernel_reduce_local(acc, f.area + (size_t) s * f.stride, f.len / esize, w->op,
                                     w->dt, c->stream);
    }
    if (GPU_OK == st &&
        cudaSuccess != (e = cudaMemcpyAsync(f.out, acc, f.len, cudaMemcpyDeviceToDevice,
                                            c->stream))) {
        GPU_ERROR("rank %d: %s: copy out: %s", c->rank, gpu_engine_what(&what),
                  cudaGetErrorString(e));
        st = GPU_ERR_CUDA;
    }
    if (GPU_OK == st) {
        st = gpu_engine_wait(c, &what);
    }
    gpu_engine_device_pop(c, prev);
    return st;
}
