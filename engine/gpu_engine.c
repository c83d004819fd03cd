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

typedef struct {
    int32_t status;
    int32_t pad;
    gpu_ipc_handle_t handle;
} gpu_boot_handle_t;

static size_t gpu_round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

/* Every rank learns whether all succeeded; the allgather count is the
 * same on every path so no rank is left waiting in a bootstrap step. */
static gpu_status_t gpu_engine_agree(const gpu_boot_ops_t *ops, void *ctx, int nranks,
                                     gpu_status_t mine)
{
    int32_t s = (int32_t) mine, *all = malloc(sizeof(int32_t) * (size_t) nranks);
    gpu_status_t st = GPU_OK;
    int i;

    if (NULL == all) {
        return GPU_ERR_NO_MEMORY;
    }
    if (GPU_OK != ops->allgather(ctx, &s, all, sizeof(s))) {
        free(all);
        return GPU_ERR_BOOTSTRAP;
    }
    for (i = 0; i < nranks; ++i) {
        if (GPU_OK != all[i]) {
            st = (gpu_status_t) all[i];
        }
    }
    free(all);
    return st;
}

static void gpu_engine_layout(gpu_engine_comm_t *c, size_t *total)
{
    size_t n = (size_t) c->nranks, cap;

    c->ll_off = gpu_round_up(GPU_FLAGS_BYTES, 4096);
    c->ll_slot = gpu_round_up(c->p.oneshot_max_bytes, 256);
    c->ts_off = gpu_round_up(c->ll_off + 2 * n * c->ll_slot, 4096);
    cap = c->p.twoshot_scratch / (size_t) c->p.nblocks / (2 * n);
    cap = cap / 4096 * 4096;
    if (cap < 4096) {
        cap = 4096;
    }
    c->ts_block = cap * 2 * n;
    /* exchange region: flags, then [source][block][parity] slots */
    c->xg_flags_off = gpu_round_up(c->ts_off + c->ts_block * (size_t) c->p.nblocks, 4096);
    c->xg_slots_off = c->xg_flags_off + gpu_round_up(GPU_XCHG_FLAGS_BYTES, 4096);
    c->xg_slot = c->p.xchg_scratch / (n * (size_t) c->p.xchg_nblocks * 2) / 4096 * 4096;
    if (c->xg_slot < GPU_XCHG_MIN_CHUNK) {
        c->xg_slot = GPU_XCHG_MIN_CHUNK;
    }
    c->pk_off = gpu_round_up(c->xg_slots_off + c->xg_slot * n * (size_t) c->p.xchg_nblocks * 2,
                             4096);
    c->pk_bytes = gpu_engine_pk_region_bytes(&c->p, c->nranks);
    c->hs_off = gpu_round_up(c->pk_off + c->pk_bytes, 4096);
    c->hs_bytes = c->hs_on ? gpu_round_up(c->p.paced_scratch, 2 * n * 256) : 0;
    *total = c->hs_off + c->hs_bytes;
}

static gpu_status_t gpu_engine_alloc_local(gpu_engine_comm_t *c, gpu_ipc_handle_t *handle)
{
    gpu_status_t st = GPU_OK;
    size_t total;

    gpu_engine_layout(c, &total);
    GPU_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), err_out);
    GPU_CUDA_CHECK(cudaEventCreateWithFlags(&c->legacy_ev, cudaEventDisableTiming), err_stream);
    GPU_CUDA_CHECK(cudaHostAlloc((void **) &c->err_host, sizeof(*c->err_host), cudaHostAllocMapped),
                   err_stream);
    memset(c->err_host, 0, sizeof(*c->err_host));
    GPU_CUDA_CHECK(cudaHostGetDevicePointer((void **) &c->err_dev, c->err_host, 0), err_host);
    GPU_CUDA_CHECK(cudaMalloc((void **) &c->scratch, total), err_host);
    GPU_CUDA_CHECK(cudaMemsetAsync(c->scratch, 0, c->ts_off, c->stream), err_scratch);
    GPU_CUDA_CHECK(cudaMemsetAsync(c->scratch + c->xg_flags_off, 0,
                                   c->xg_slots_off - c->xg_flags_off, c->stream), err_scratch);
    if (c->pk_bytes > 0) {
        GPU_CUDA_CHECK(cudaMemsetAsync(c->scratch + c->pk_off, 0, c->pk_bytes, c->stream),
                       err_scratch);
    }
    GPU_CUDA_CHECK(cudaStreamSynchronize(c->stream), err_scratch);
    st = c->tr->export_mem(c->scratch, handle);
    if (GPU_OK != st) {
        goto err_scratch;
    }
    GPU_LOG(10, "rank %d: scratch %zu bytes on device %d (one-shot slot %zu, two-shot block %zu)",
            c->rank, total, c->device, c->ll_slot, c->ts_block);
    return GPU_OK;

err_scratch:
    cudaFree(c->scratch);
    c->scratch = NULL;
err_host:
    cudaFreeHost(c->err_host);
    c->err_host = NULL;
err_stream:
    if (NULL != c->legacy_ev) {
        cudaEventDestroy(c->legacy_ev);
        c->legacy_ev = NULL;
    }
    cudaStreamDestroy(c->stream);
    c->stream = NULL;
err_out:
    return st;
}

static void gpu_engine_release(gpu_engine_comm_t *c)
{
    int i;
    gpu_engine_pk_release(c);
    for (i = 0; i < c->nranks && i < GPU_MAX_PEERS; ++i) {
        if (i != c->rank && NULL != c->peer_base[i]) {
            c->tr->release_mem(c->peer_base[i]);
        }
        c->peer_base[i] = NULL;
    }
    if (NULL != c->scratch) {
        (void) cudaFree(c->scratch);
    }
    if (NULL != c->err_host) {
        (void) cudaFreeHost(c->err_host);
    }
    if (NULL != c->stream) {
        (void) cudaStreamDestroy(c->stream);
    }
    while (c->nevents > 0) {
        (void) cudaEventDestroy(c->events[--c->nevents]);
    }
    if (NULL != c->legacy_ev) {
        (void) cudaEventDestroy(c->legacy_ev);
    }
}

static gpu_status_t gpu_engine_map_peers(gpu_engine_comm_t *c, const gpu_boot_handle_t *all)
{
    gpu_status_t st = GPU_OK;
    int i;
    for (i = 0; i < c->nranks; ++i) {
        if (i == c->rank) {
            c->peer_base[i] = c->scratch;
            continue;
        }
        st = c->tr->import_mem(&all[i].handle, (void **) &c->peer_base[i]);
        if (GPU_OK != st) {
            GPU_ERROR("rank %d: cannot map scratch of rank %d", c->rank, i);
            break;
        }
    }
    return st;
}

gpu_status_t gpu_engine_comm_create(const gpu_boot_ops_t *ops, void *ctx, int rank, int nranks,
                                    const gpu_engine_params_t *params, gpu_engine_comm_t **comm)
{
    gpu_engine_comm_t *c;
    gpu_topo_rank_info_t mine, *infos = NULL;
    gpu_boot_handle_t hmine, *handles = NULL;
    gpu_status_t st, local;

    c = calloc(1, sizeof(*c));
    infos = calloc((size_t) nranks, sizeof(*infos));
    handles = calloc((size_t) nranks, sizeof(*handles));
    if (NULL == c || NULL == infos || NULL == handles) {
        st = GPU_ERR_NO_MEMORY;
        goto out_free;
    }
    c->rank = rank;
    c->nranks = nranks;
    c->p = *params;
    c->boot = ops;
    c->boot_ctx = ctx;
    c->tr = &gpu_ipc_cuda_ops;
    if (c->p.nblocks < 1 || c->p.nblocks > GPU_MAX_BLOCKS) {
        c->p.nblocks = GPU_MAX_BLOCKS < 32 ? GPU_MAX_BLOCKS : 32;
    }
    if (c->p.xchg_nblocks < 1 || c->p.xchg_nblocks > GPU_MAX_BLOCKS) {
        c->p.xchg_nblocks = GPU_MAX_BLOCKS;
    }
    if (c->p.oneshot_blocks < 1 || c->p.oneshot_blocks > GPU_MAX_BLOCKS) {
        c->p.oneshot_blocks = 4;
    }

    /* step 1: who drives which GPU where */
    memset(&mine, 0, sizeof(mine));
    local = (cudaSuccess == cudaGetDevice(&c->device)) ? gpu_topo_local_info(c->device, &mine)
                                                        : GPU_ERR_CUDA;
    mine.host_hash = gpu_topo_host_id(mine.host_hash, c->p.node_key);
    st = gpu_engine_agree(ops, ctx, nranks, local);
    if (GPU_OK != st) {
        goto out_free;
    }
    if (GPU_OK != ops->allgather(ctx, &mine, infos, sizeof(mine))) {
        st = GPU_ERR_BOOTSTRAP;
        goto out_free;
    }
    st = gpu_topo_build(infos, nranks, rank, gpu_topo_cuda_can_access, &c->topo);
    /* peer-access answers come from each process; agree on them */
    st = gpu_engine_agree(ops, ctx, nranks,
                          (GPU_OK == st && nranks <= GPU_MAX_PEERS && c->tr->can_connect(&c->topo))
                              ? GPU_OK : GPU_ERR_UNSUPPORTED);
    if (GPU_OK != st) {
        GPU_LOG(1, "rank %d: %d ranks, one host %d, peer access %d: device buffers are staged",
                rank, nranks, c->topo.all_on_one_host, c->topo.p2p_all);
        goto out_free;
    }

    for (int i = 0; i < nranks; ++i) {
        snprintf(c->busid[i], sizeof(c->busid[i]), "%s", infos[i].busid);
    }
    c->hs_on = c->p.paced_scratch > 0 && gpu_engine_hs_wanted(c);

    /* step 2: scratch, exported to every peer */
    memset(&hmine, 0, sizeof(hmine));
    hmine.status = gpu_engine_alloc_local(c, &hmine.handle);
    if (GPU_OK != ops->allgather(ctx, &hmine, handles, sizeof(hmine))) {
        st = GPU_ERR_BOOTSTRAP;
        goto out_release;
    }
    for (int i = 0; i < nranks; ++i) {
        if (GPU_OK != handles[i].status) {
            st = (gpu_status_t) handles[i].status;
            goto out_release;
        }
    }

    /* step 3: map every peer's scratch */
    st = gpu_engine_agree(ops, ctx, nranks, gpu_engine_map_peers(c, handles));
    if (GPU_OK != st) {
        goto out_release;
    }
    GPU_LOG(1, "rank %d/%d: device %d (%s), %d local ranks on %d GPUs, transport %s",
            rank, nranks, c->device, mine.busid, c->topo.local_size, c->topo.ndevices,
            c->tr->name);
    if (c->hs_on) {
        GPU_LOG(1, "rank %d: ranks share a GPU: blocking calls host-paced (%zu bytes staging)",
                rank, c->hs_bytes);
    }
    /* step 4: the persistent engine, where every rank could set it up; its
     * blocks are cut alike everywhere, so the smallest GPU bounds them */
    c->pk_sms = infos[0].sms;
    for (int i = 1; i < nranks; ++i) {
        c->pk_sms = infos[i].sms < c->pk_sms ? infos[i].sms : c->pk_sms;
    }
    if (GPU_OK != gpu_engine_agree(ops, ctx, nranks, gpu_engine_pk_setup(c))) {
        GPU_LOG(1, "rank %d: persistent engine off (not every rank could set it up)", rank);
        gpu_engine_pk_release(c);
    }
    /* one line per peer, like NCCL_DEBUG=INFO's channel lines */
    for (int i = 0; i < nranks && gpu_log_enabled(1); ++i) {
        if (i != rank) {
            GPU_LOG(1, "rank %d -> %d: GPU %s -> %s via %s (%s)", rank, i, mine.busid,
                    infos[i].busid, c->tr->name,
                    0 == strcmp(mine.busid, infos[i].busid) ? "same GPU" : "peer access");
        }
    }
    free(handles);
    free(infos);
    *comm = c;
    return GPU_OK;

out_release:
    gpu_engine_release(c);
out_free:
    free(handles);
    free(infos);
    free(c);
    return st;
}

void gpu_engine_comm_destroy(gpu_engine_comm_t *c)
{
    if (NULL == c) {
        return;
    }
    gpu_engine_pk_park(c);
    if (NULL != c->stream) {
        (void) cudaStreamSynchronize(c->stream);
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

int gpu_engine_gpu_shared(const gpu_engine_comm_t *c)
{
    for (int i = 0; i < c->nranks; ++i) {
        for (int j = i + 1; j < c->nranks; ++j) {
            if (0 == strcmp(c->busid[i], c->busid[j])) {
                return 1;
            }
        }
    }
    return 0;
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

/* Bounded host wait: the kernel bounds its own waits, this catches a
 * kernel that never got scheduled. */
gpu_status_t gpu_engine_wait(gpu_engine_comm_t *c, gpu_engine_what_t *what)
{
    const double limit = 2.0 * c->p.timeout_s + 5.0, deadline = gpu_clock_now() + limit;
    cudaError_t e;
    unsigned spins = 0;

    while (cudaErrorNotReady == (e = cudaStreamQuery(c->stream))) {
        if (0 == (++spins & 1023) && gpu_clock_now() > deadline) {
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
                                        "persistent receive", "persistent send" };
        GPU_ERROR("rank %d: %s timed out after %.1f s waiting for rank %d (block %d, %s stage, "
                  "flag %llu, last seen %llu)", c->rank, gpu_engine_what(what), c->p.timeout_s,
                  c->err_host->peer, c->err_host->block,
                  (unsigned) c->err_host->stage < 7 ? stages[c->err_host->stage] : "?",
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

    c->t_submit = gpu_clock_now();
    gpu_engine_pk_park(c);
    if (NULL == req) {
        return gpu_engine_wait(c, what);
    }
    if (c->nevents > 0) {
        ev = c->events[--c->nevents];
    } else if (cudaSuccess != (e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming))) {
        GPU_ERROR("rank %d: %s: cudaEventCreate: %s", c->rank, gpu_engine_what(what),
                  cudaGetErrorString(e));
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

gpu_status_t gpu_engine_allreduce(gpu_engine_comm_t *c, const void *in, void *out, size_t count,
                                  gpu_op_t op, gpu_dtype_t dt, gpu_engine_req_t *req)
{
    const size_t esize = gpu_dtype_size(dt), bytes = count * esize;
    gpu_allreduce_args_t a;
    gpu_algo_t algo;
    gpu_engine_what_t what = { .coll = "allreduce", .seq = c->seq + 1, .count = count,
                               .reduces = 1, .op = op, .dt = dt };
    gpu_status_t st;

    st = gpu_engine_enter(c, 1, op, dt);
    if (GPU_OK != st) {
        return st;
    }
    if (0 == count) {
        return gpu_engine_finish(c, &what, req);
    }
    const int resident = gpu_engine_persistent(c, NULL, bytes, dt, NULL == req);
    if (resident || gpu_engine_paced_takes(c, NULL, NULL == req)) {
        gpu_xchg_plan_t plan;
        if (GPU_OK == gpu_plan_allreduce(&plan, c->rank, c->nranks, in, out, bytes)) {
            /* the resident kernel first, as for exchanges and as traces name it */
            return resident ? gpu_engine_pk_run(c, &what, &plan, op, dt)
                            : gpu_engine_hs_run(c, &what, &plan, op, dt);
        }
    }
    st = gpu_engine_order(c);
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

    memset(&a, 0, sizeof(a));
    a.in = in;
    a.out = out;
    a.count = count;
    a.nranks = c->nranks;
    a.rank = c->rank;
    a.nthreads = c->p.nthreads;
    memcpy(a.peer_base, c->peer_base, sizeof(a.peer_base));
    a.ll_off = c->ll_off;
    a.ll_slot_bytes = c->ll_slot;
    a.ts_off = c->ts_off;
    a.ts_block_bytes = c->ts_block;
    a.seq = ++c->seq;
    a.timeout_ns = (unsigned long long) (c->p.timeout_s * 1e9);
    a.err = c->err_dev;

    algo = gpu_engine_choose(c, bytes);
    if (GPU_ALGO_ONESHOT == algo) {
        a.nblocks = c->p.oneshot_blocks;
        a.ll_buf = (int) (c->oneshot_calls++ & 1);
    } else {
        gpu_plan_twoshot_cut(bytes, c->nranks, c->p.nblocks,
                             c->ts_block / (2 * (size_t) c->nranks), &a.ts_shard_bytes,
                             &a.nblocks);
    }
    GPU_LOG(20, "%s: %s, %d blocks", gpu_engine_what(&what),
            GPU_ALGO_ONESHOT == algo ? "one-shot" : "two-shot", a.nblocks);
    c->t_launch = gpu_clock_now();
    st = gpu_kernel_allreduce(algo, op, dt, &a, c->stream);
    if (GPU_OK != st) {
        return st;
    }
    return gpu_engine_finish(c, &what, req);
}
