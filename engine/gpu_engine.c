#include "util/gpu_cuda_wait.h"
#include "engine/gpu_engine.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "engine/gpu_engine_internal.h"
#include "engine/gpu_plan.h"
#include "util/gpu_clock.h"

void gpu_engine_comm_destroy(gpu_engine_comm_t *c)
{
    if (NULL == c) {
        return;
    }
    gpu_engine_pk_park(c);
    if (NULL != c->stream) {
        /* the kernels bound their own waits; this catches one never scheduled */
        (void) gpu_cuda_stream_wait(c->stream, 2.0 * c->p.timeout_s + 5.0, c->rank,
                                    "freeing a communicator's GPU state");
    }
    gpu_engine_release(c);
    free(c);
}

void gpu_engine_times(const gpu_engine_comm_t *c, double *launch, double *submit)
{
    *launch = c->t_launch;
    *submit = c->t_submit;
}

const char *gpu_engine_rank_busid(const gpu_engine_comm_t *c, int rank)
{
    return rank >= 0 && rank < c->nranks ? c->busid[rank] : "";
}

int gpu_engine_device(const gpu_engine_comm_t *c)
{
    return c->device;
}

void gpu_engine_device_enter(gpu_engine_comm_t *c)
{
    c->prev_device = c->device;
    if (cudaSuccess == cudaGetDevice(&c->prev_device) && c->prev_device != c->device) {
        (void) cudaSetDevice(c->device);
    }
}

void gpu_engine_device_leave(gpu_engine_comm_t *c)
{
    if (c->prev_device != c->device) {
        (void) cudaSetDevice(c->prev_device);
    }
}

gpu_algo_t gpu_engine_choose(const gpu_engine_comm_t *c, size_t bytes)
{
    if (GPU_ALGO_AUTO != c->p.algo) {
        return (GPU_ALGO_ONESHOT == c->p.algo && bytes > c->ll_slot) ? GPU_ALGO_TWOSHOT : c->p.algo;
    }
    return bytes <= c->p.oneshot_max_bytes ? GPU_ALGO_ONESHOT : GPU_ALGO_TWOSHOT;
}

int gpu_engine_persistent(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *plan, size_t bytes,
                          gpu_dtype_t dt, int blocking)
{
    if (!blocking) {
        return 0;
    }
    if (NULL == plan) {
        return c->nranks > 1 && gpu_engine_pk_takes(c, GPU_XCHG_REDUCE, bytes, dt);
    }
    return gpu_engine_pk_fits(c, plan, dt);
}

const char *gpu_engine_what(gpu_engine_what_t *w)
{
    if ('\0' != w->text[0]) {
        return w->text;
    }
    if (w->reduces) {
        snprintf(w->text, sizeof(w->text), "%s #%llu (count %zu, %s, %s)", w->coll, w->seq,
                 w->count, gpu_dtype_name(w->dt), gpu_op_name(w->op));
    } else {
        snprintf(w->text, sizeof(w->text), "%s #%llu", w->coll, w->seq);
    }
    return w->text;
}

int gpu_engine_failed_peer(const gpu_engine_comm_t *c)
{
    return NULL != c && NULL != c->err_host && c->err_host->raised ? c->err_host->peer : -1;
}

void gpu_engine_kind_call(gpu_engine_comm_t *c, unsigned long long call,
                          const gpu_engine_kind_ops_t *ops, void *ctx, int busy, int pool)
{
    /* the LL sequence is the call's number (+1: never 0), exactly: the
     * same on every rank whether or not a rank ran the call before (a
     * dropped call used its number, a host rank none); consecutive calls
     * alternate slot parities as the flow control wants; an MPI call is
     * at most one engine call */
    c->pk_call_seq = call + 1;
    c->kind_ops = ops;
    c->kind_ctx = ctx;
    c->kind_busy = busy;
    c->kind_pool = pool;
}

void gpu_engine_kind_clear(gpu_engine_comm_t *c)
{
    c->pk_call_seq = 0;
    c->kind_ops = NULL;
    c->kind_ctx = NULL;
    c->kind_busy = -1;
    c->kind_pool = -1;
}

gpu_status_t gpu_engine_kind_settle(gpu_engine_comm_t *c)
{
    const gpu_engine_kind_ops_t *ops = c->kind_ops;
    int all_dev = 1, busy = -1, pool = -1;
    gpu_status_t st;

    if (NULL == ops) {
        return GPU_OK;
    }
    c->kind_ops = NULL;
    st = ops->settle(c->kind_ctx, &all_dev, &busy, &pool);
    c->kind_busy = busy;
    c->kind_pool = pool;
    if (GPU_OK != st) {
        return st;
    }
    return all_dev ? GPU_OK : GPU_ERR_UNSUPPORTED;
}

gpu_status_t gpu_engine_event(gpu_engine_comm_t *c, cudaEvent_t *ev)
{
    cudaError_t e;
    if (c->nevents > 0) {
        *ev = c->events[--c->nevents];
        return GPU_OK;
    }
    if (cudaSuccess != (e = cudaEventCreateWithFlags(ev, cudaEventDisableTiming))) {
        GPU_ERROR("rank %d: cudaEventCreate: %s", c->rank, cudaGetErrorString(e));
        return GPU_ERR_CUDA;
    }
    return GPU_OK;
}

void gpu_engine_event_put(gpu_engine_comm_t *c, cudaEvent_t ev)
{
    if (c->nevents < GPU_ENGINE_EVENTS) {
        c->events[c->nevents++] = ev;
    } else {
        (void) cudaEventDestroy(ev);
    }
}

void gpu_engine_wait_progress(gpu_engine_comm_t *c, unsigned spins)
{
    if (spins > 1024 && NULL != c->boot && NULL != c->boot->progress) {
        c->boot->progress(c->boot_ctx);
    }
}

/* Bounded host wait: the kernel bounds its own waits, this catches a
 * kernel that never got scheduled.  Another communicator's requests keep
 * moving meanwhile (their peers may need them before they reach ours). */
gpu_status_t gpu_engine_wait(gpu_engine_comm_t *c, gpu_engine_what_t *what)
{
    const double limit = 2.0 * c->p.timeout_s + 5.0, deadline = gpu_clock_now() + limit;
    cudaError_t e;
    unsigned spins = 0;

    while (cudaErrorNotReady == (e = cudaStreamQuery(c->stream))) {
        if (0 != (++spins & 1023)) {
            continue;
        }
        gpu_engine_wait_progress(c, spins);
        if (gpu_clock_now() > deadline) {
            GPU_ERROR("rank %d: %s still running after %.0f s; giving up", c->rank,
                      gpu_engine_what(what), limit);
            c->broken = 1;
            return GPU_ERR_TIMEOUT;
        }
    }
    if (cudaSuccess != e) {
        GPU_ERROR("rank %d: %s failed: %s", c->rank, gpu_engine_what(what),
                  cudaGetErrorString(e));
        c->broken = 1;
        return GPU_ERR_CUDA;
    }
    if (c->err_host->raised) {
        static const char *stages[] = { "one-shot", "reduce-scatter", "all-gather",
                                        "exchange send", "exchange receive",
                                        "persistent receive", "persistent send", "put" };
        GPU_ERROR("rank %d: %s timed out after %.1f s waiting for rank %d (block %d, %s stage, "
                  "flag %llu, last seen %llu)", c->rank, gpu_engine_what(what), c->p.timeout_s,
                  c->err_host->peer, c->err_host->block,
                  (unsigned) c->err_host->stage < 8 ? stages[c->err_host->stage] : "?",
                  c->err_host->expected, c->err_host->seen);
        c->broken = 1;
        return GPU_ERR_TIMEOUT;
    }
    return GPU_OK;
}

gpu_status_t gpu_engine_order(gpu_engine_comm_t *c)
{
    cudaError_t e;
    gpu_engine_pk_park(c);
    if (!c->p.order_legacy) {
        return GPU_OK;
    }
    e = cudaEventRecord(c->legacy_ev, cudaStreamLegacy);
    if (cudaSuccess == e) {
        e = cudaStreamWaitEvent(c->stream, c->legacy_ev, 0);
    }
    if (cudaSuccess != e) {
        GPU_ERROR("rank %d: ordering after the default stream: %s", c->rank, cudaGetErrorString(e));
        return GPU_ERR_CUDA;
    }
    return GPU_OK;
}

gpu_status_t gpu_engine_enter(gpu_engine_comm_t *c, int reduces, gpu_op_t op, gpu_dtype_t dt)
{
    int dev = -1;
    if (c->broken) {
        return GPU_ERR_INVALID;
    }
    if ((reduces && !gpu_kernel_supported(op, dt)) || cudaSuccess != cudaGetDevice(&dev) ||
        dev != c->device) {
        return GPU_ERR_UNSUPPORTED;
    }
    return GPU_OK;
}

gpu_status_t gpu_engine_finish(gpu_engine_comm_t *c, gpu_engine_what_t *what,
                               gpu_engine_req_t *req)
{
    cudaEvent_t ev;
    cudaError_t e;
    gpu_status_t st;

    c->t_submit = gpu_clock_now();
    gpu_engine_pk_park(c);
    if (NULL == req) {
        st = gpu_engine_wait(c, what);
        c->pk_end = gpu_clock_now();   /* the gap to the next call counts from here */
        /* the pool's lease: back where the call ended well; after a
         * timeout a peer's kernel may still write into our area, so the
         * pool is kept off every later call (they stage) */
        gpu_engine_big_done(c, GPU_OK == st);
        return st;
    }
    if (GPU_OK != gpu_engine_event(c, &ev)) {
        return GPU_ERR_CUDA;
    }
    if (cudaSuccess != (e = cudaEventRecord(ev, c->stream))) {
        GPU_ERROR("rank %d: %s: cudaEventRecord: %s", c->rank, gpu_engine_what(what),
                  cudaGetErrorString(e));
        (void) cudaEventDestroy(ev);
        return GPU_ERR_CUDA;
    }
    req->event = ev;
    snprintf(req->what, sizeof(req->what), "%s", gpu_engine_what(what));
    return GPU_OK;
}

/* The one-shot or two-shot kernel launched for an allreduce (root -1) or,
 * two-shot only, a reduce to root; the kinds are settled and the stream
 * ordered.  Returns after the kernel (req NULL) or once it is queued. */
static gpu_status_t gpu_engine_launch(gpu_engine_comm_t *c, gpu_engine_what_t *what,
                                      const void *in, void *out, size_t count, gpu_op_t op,
                                      gpu_dtype_t dt, gpu_algo_t algo, int root,
                                      gpu_engine_req_t *req)
{
    const size_t bytes = count * gpu_dtype_size(dt);
    gpu_allreduce_args_t a;
    gpu_status_t st;

    if (GPU_ALGO_TWOSHOT == algo) {
        st = gpu_engine_big_need(c, NULL == req);
        if (GPU_OK != st) {
            return st;
        }
    }
    memset(&a, 0, sizeof(a));
    a.in = in;
    a.out = out;
    a.count = count;
    a.nranks = c->nranks;
    a.rank = c->rank;
    a.nthreads = c->p.nthreads;
    a.root = root;
    /* every flag and the one-shot's slots are in the small area, the
     * two-shot's blocks in the large one */
    memcpy(a.peer_base, c->peer_base, sizeof(a.peer_base));
    if (GPU_ALGO_TWOSHOT == algo) {
        memcpy(a.data_base, c->big_base, sizeof(a.data_base));
    }
    a.ll_off = c->ll_off;
    a.ll_slot_bytes = c->ll_slot;
    a.ts_off = c->ts_off;
    a.ts_block_bytes = c->ts_block;
    a.seq = ++c->seq;
    a.timeout_ns = (unsigned long long) (c->p.timeout_s * 1e9);
    a.err = c->err_dev;
    if (GPU_ALGO_ONESHOT == algo) {
        a.nblocks = c->p.oneshot_blocks;
        a.ll_buf = (int) (c->oneshot_calls++ & 1);
    } else {
        gpu_plan_twoshot_cut(bytes, c->nranks, c->p.nblocks,
                             c->ts_block / (2 * (size_t) c->nranks), &a.ts_shard_bytes,
                             &a.nblocks);
    }
    GPU_LOG(20, "%s: %s%s, %d blocks", gpu_engine_what(what),
            GPU_ALGO_ONESHOT == algo ? "one-shot" : "two-shot", root >= 0 ? " to the root" : "",
            a.nblocks);
    c->t_launch = gpu_clock_now();
    st = gpu_kernel_allreduce(algo, op, dt, &a, c->stream);
    if (GPU_OK != st) {
        gpu_engine_big_done(c, 1);   /* not launched */
        return st;
    }
    return gpu_engine_finish(c, what, req);
}

gpu_status_t gpu_engine_allreduce(gpu_engine_comm_t *c, const void *in, void *out, size_t count,
                                  gpu_op_t op, gpu_dtype_t dt, gpu_engine_req_t *req)
{
    const size_t esize = gpu_dtype_size(dt), bytes = count * esize;
    gpu_engine_what_t what = { .coll = "allreduce", .seq = c->seq + 1, .count = count,
                               .reduces = 1, .op = op, .dt = dt };
    gpu_status_t st;

    st = gpu_engine_enter(c, 1, op, dt);
    if (GPU_OK != st) {
        return st;
    }
    const int direct = gpu_engine_direct_takes(c, bytes, NULL == req);
    int resident = !direct && gpu_engine_persistent(c, NULL, bytes, dt, NULL == req);
    st = gpu_engine_pk_busy(c, bytes, GPU_ALGO_TWOSHOT == gpu_engine_choose(c, bytes), &resident);
    if (GPU_OK != st) {
        return st;
    }
    if (!resident || 0 == count) {
        /* only the resident kernel starts before the kinds are agreed */
        st = gpu_engine_kind_settle(c);
        if (GPU_OK != st) {
            return st;
        }
    }
    if (0 == count) {
        return gpu_engine_finish(c, &what, req);
    }
    /* nonblocking: rounds stand behind it where a buffer cannot be shared */
    if (direct) {
        if (NULL != req) {
            st = gpu_engine_direct_start(c, in, out, count, op, dt, req);
            snprintf(req->what, sizeof(req->what), "%s", gpu_engine_what(&what));
            return st;
        }
        return gpu_engine_direct_allreduce(c, &what, in, out, count, op, dt);
    }
    const int async = NULL != req && c->nranks > 1 && gpu_engine_hs_async_takes(c, NULL);
    if (resident || async || gpu_engine_paced_takes(c, NULL, NULL == req)) {
        gpu_xchg_plan_t plan;
        if (GPU_OK == gpu_plan_allreduce(&plan, c->rank, c->nranks, in, out, bytes)) {
            /* the resident kernel first, as for exchanges and as traces name it */
            if (async) {
                st = gpu_engine_hs_start(c, &plan, op, dt, req);
                snprintf(req->what, sizeof(req->what), "%s", gpu_engine_what(&what));
                return st;
            }
            return resident ? gpu_engine_pk_run(c, &what, &plan, op, dt)
                            : gpu_engine_hs_run(c, &what, &plan, op, dt);
        }
    }
    st = gpu_engine_kind_settle(c);   /* a plan the resident kernel could not take */
    if (GPU_OK == st) {
        st = gpu_engine_order(c);
    }
    if (GPU_OK != st) {
        return st;
    }
    if (1 == c->nranks) {
        if (in != out) {
            cudaError_t e = cudaMemcpyAsync(out, in, bytes, cudaMemcpyDefault, c->stream);
            if (cudaSuccess != e) {
                GPU_ERROR("%s: cudaMemcpyAsync: %s", gpu_engine_what(&what),
                          cudaGetErrorString(e));
                return GPU_ERR_CUDA;
            }
        }
        return gpu_engine_finish(c, &what, req);
    }
    return gpu_engine_launch(c, &what, in, out, count, op, dt, gpu_engine_choose(c, bytes), -1,
                             req);
}

/*
 * A reduce only the two-shot kernel's way takes, where every rank answers
 * alike (the communicator's state, the size and the type are the same
 * everywhere): not where rank 0 runs allreduces for all (its kernel writes
 * every rank's out), not as host-paced rounds, not where the resident
 * kernel takes the size (it is faster there), not after the large areas
 * were refused (the put fold needs none), and blocking only (a pool lease
 * or the areas' growth needs every rank at once).
 */
int gpu_engine_reduce_ts_takes(const gpu_engine_comm_t *c, size_t bytes, gpu_op_t op,
                               gpu_dtype_t dt, int blocking)
{
    return NULL != c && blocking && c->nranks > 1 && gpu_kernel_supported(op, dt) &&
           GPU_BIG_FAILED != c->big_state && !gpu_engine_direct_takes(c, bytes, blocking) &&
           !gpu_engine_paced_takes(c, NULL, blocking) &&
           !gpu_engine_persistent(c, NULL, bytes, dt, blocking);
}

gpu_status_t gpu_engine_reduce_ts(gpu_engine_comm_t *c, const void *in, void *out, size_t count,
                                  gpu_op_t op, gpu_dtype_t dt, int root, gpu_engine_req_t *req)
{
    const size_t bytes = count * gpu_dtype_size(dt);
    gpu_engine_what_t what = { .coll = "reduce", .seq = c->seq + 1, .count = count,
                               .reduces = 1, .op = op, .dt = dt };
    gpu_status_t st;

    st = gpu_engine_enter(c, 1, op, dt);
    if (GPU_OK != st) {
        return st;
    }
    /* the caller asked gpu_engine_reduce_ts_takes: this is the same answer
     * on every rank, so staging here keeps them together */
    if (root < 0 || root >= c->nranks ||
        !gpu_engine_reduce_ts_takes(c, bytes, op, dt, NULL == req)) {
        return GPU_ERR_UNSUPPORTED;
    }
    st = gpu_engine_kind_settle(c);
    if (GPU_OK == st) {
        st = gpu_engine_order(c);
    }
    if (GPU_OK != st) {
        return st;
    }
    if (0 == count) {
        return gpu_engine_finish(c, &what, req);
    }
    return gpu_engine_launch(c, &what, in, out, count, op, dt, GPU_ALGO_TWOSHOT, root, req);
}
