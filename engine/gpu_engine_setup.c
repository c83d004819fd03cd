/*
 * Setup of a communicator's engine, as a sequence of steps with a host
 * exchange between each two.  Run to the end at once (blocking: the first
 * blocking device collective), or one step per progress pass from a
 * nonblocking collective's request, so that starting a nonblocking call
 * never waits for the peers (they may be blocked in another communicator's
 * call that needs this rank's progress).
 *
 *   1  each rank's GPU and host, with its CUDA status
 *   2  agreement on peer access between all GPUs
 *   3  scratch allocated and exported: IPC handles (the large areas are the
 *      process's pool, engine/gpu_pool.h, mapped at the first call that needs them)
 *   4  peers' scratch mapped: agreement
 *   5  persistent engine set up: agreement (it is used only where all could)
 *
 * Every step ends in an exchange on every rank whatever happened locally, and
 * each verdict is agreed, so all ranks leave at the same step.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "util/gpu_cuda_wait.h"
#include "engine/gpu_engine_internal.h"
#include "kernels/gpu_put.h"
#include "kernels/gpu_stream.h"


typedef struct {
    int32_t status;
    int32_t pad;
    gpu_topo_rank_info_t info;
} gpu_boot_info_t;

enum { GPU_SETUP_INFO, GPU_SETUP_P2P, GPU_SETUP_HANDLES, GPU_SETUP_MAPPED, GPU_SETUP_PK,
       GPU_SETUP_DONE };

struct gpu_engine_setup {
    const gpu_boot_ops_t *ops;
    void *ctx;
    int blocking;
    int step;                   /* the exchange in flight ends this step */
    void *handle;               /* that exchange, when nonblocking */
    gpu_engine_comm_t *c;
    gpu_boot_info_t mine, *infos;
    gpu_boot_handle_t hmine, *handles;
    int32_t verdict, *verdicts;
};

/* The large areas of this rank, zeroed where flags live, exported. */
gpu_status_t gpu_engine_big_alloc(gpu_engine_comm_t *c, gpu_ipc_handle_t *handle)
{
    gpu_status_t st;

    if (cudaErrorMemoryAllocation == cudaMalloc((void **) &c->big, c->big_bytes)) {
        (void) cudaGetLastError();
        GPU_LOG(1, "rank %d: no room for %zu bytes of large-message scratch on device %d",
                c->rank, c->big_bytes, c->device);
        c->big = NULL;
        return GPU_ERR_NO_MEMORY;
    }
    st = GPU_OK;
    if (NULL == c->big) {
        GPU_CUDA_CHECK(cudaGetLastError(), out);
    }
    /* data only: nothing to clear (the flags are in the small area) */
    st = c->tr->export_mem(c->big, handle);
    if (GPU_OK != st) {
        goto err_free;
    }
    GPU_LOG(10, "rank %d: large-message scratch %zu bytes (two-shot block %zu, exchange slot "
            "%zu)", c->rank, c->big_bytes, c->ts_block, c->xg_slot);
    return GPU_OK;

err_free:
    (void) cudaFree(c->big);
    c->big = NULL;
out:
    return st;
}

/* Close the peers' mappings of one kind of area (small or large). */
static void gpu_engine_unmap(gpu_engine_comm_t *c, char **bases)
{
    for (int i = 0; i < c->nranks && i < GPU_MAX_PEERS; ++i) {
        if (i != c->rank && NULL != bases[i]) {
            c->tr->release_mem(bases[i]);
        }
        bases[i] = NULL;
    }
}

/* Undo gpu_engine_big_alloc and any peer mappings (pooled: this
 * communicator's references to the peers' areas, closed with the last). */
void gpu_engine_big_release(gpu_engine_comm_t *c)
{
    if (NULL != c->pool) {
        for (int i = 0; i < c->nranks && i < GPU_MAX_PEERS; ++i) {
            if (i != c->rank && NULL != c->big_base[i]) {
                gpu_pool_unmap(c->pool, &c->pool_cards[i]);
            }
            c->big_base[i] = NULL;
        }
        if (c->pool_carded) {
            gpu_pool_card_put(c->pool);   /* the last frees our area */
            c->pool_carded = 0;
        }
        return;
    }
    gpu_engine_unmap(c, c->big_base);
    if (NULL != c->big) {
        (void) cudaFree(c->big);
        c->big = NULL;
    }
}

/* Map every peer's area of kind big (or small); a failure leaves what was
 * mapped for the release. */
gpu_status_t gpu_engine_map(gpu_engine_comm_t *c, const gpu_ipc_handle_t *const *handles,
                            int big)
{
    char **bases = big ? c->big_base : c->peer_base;
    for (int i = 0; i < c->nranks; ++i) {
        if (i == c->rank) {
            bases[i] = big ? c->big : c->scratch;
            continue;
        }
        if (GPU_OK != c->tr->import_mem(handles[i], (void **) &bases[i])) {
            bases[i] = NULL;
            GPU_ERROR("rank %d: cannot map %s scratch of rank %d", c->rank,
                      big ? "the large-message" : "the", i);
            return GPU_ERR_CUDA;
        }
    }
    return GPU_OK;
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
    if (cudaErrorMemoryAllocation == cudaMalloc((void **) &c->scratch, total)) {
        /* not an error of ours: the component stages and says so once */
        (void) cudaGetLastError();
        GPU_LOG(1, "rank %d: no room for %zu bytes of scratch on device %d", c->rank, total,
                c->device);
        c->scratch = NULL;
        st = GPU_ERR_NO_MEMORY;
        goto err_host;
    }
    if (NULL == c->scratch) {
        GPU_CUDA_CHECK(cudaGetLastError(), err_host);
    }
    GPU_CUDA_CHECK(cudaMemsetAsync(c->scratch, 0, c->pk_off, c->stream), err_scratch);
    if (c->pk_bytes > 0) {
        GPU_CUDA_CHECK(cudaMemsetAsync(c->scratch + c->pk_off, 0, c->pk_bytes, c->stream),
                       err_scratch);
    }
    if (c->st_bytes > 0) {
        GPU_CUDA_CHECK(cudaMemsetAsync(c->scratch + c->st_off, 0, c->st_bytes, c->stream),
                       err_scratch);
    }
    if (c->sb_bytes > 0) {
        GPU_CUDA_CHECK(cudaMemsetAsync(c->scratch + c->sb_off, 0, GPU_STREAM_BULK_CTL_BYTES,
                                       c->stream), err_scratch);
    }
    st = gpu_cuda_stream_wait(c->stream, 2.0 * c->p.timeout_s + 5.0, c->rank,
                              "clearing the scratch area");
    if (GPU_OK != st) {
        goto err_scratch;
    }
    st = gpu_engine_stream_setup(c);
    if (GPU_OK != st) {
        goto err_scratch;
    }
    st = c->tr->export_mem(c->scratch, handle);
    if (GPU_OK != st) {
        goto err_stream_setup;
    }
    GPU_LOG(10, "rank %d: scratch %zu bytes on device %d (one-shot slot %zu, resident %zu, "
            "paced %zu; large-message areas %zu bytes %s)", c->rank, total, c->device, c->ll_slot,
            c->pk_bytes, c->hs_bytes, c->big_bytes,
            c->p.scratch_eager ? "now" : "at the first large call");
    return GPU_OK;

err_stream_setup:
    gpu_engine_stream_release(c);
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

void gpu_engine_release(gpu_engine_comm_t *c)
{
    free(c->direct_all);
    free(c->direct_verdicts);
    free(c->put_all);
    c->direct_all = NULL;
    c->direct_verdicts = NULL;
    c->put_all = NULL;
    gpu_engine_pk_release(c);
    gpu_engine_stream_release(c);
    if (c->pool_held) {
        gpu_engine_big_done(c, 0);   /* a call that never came back: keep it off the pool */
    }
    if (c->pool_busy > 0) {
        GPU_LOG(1, "rank %d: %llu large calls staged: a rank's large-message pool was busy",
                c->rank, c->pool_busy);
    }
    if (NULL != c->pool) {
        GPU_LOG(10, "rank %d: large-message pool leased by %llu calls on the kind board, %llu "
                "by host exchange", c->rank, c->pool_board_calls, c->pool_xchg_calls);
    }
    /* peers' areas closed before ours go: their memory returns to their
     * driver only once no importer holds it */
    gpu_engine_big_release(c);
    gpu_engine_unmap(c, c->peer_base);
    gpu_pool_detach(c->pool);        /* frees the pool's area with the last communicator */
    c->pool = NULL;
    if (NULL != c->scratch) {
        (void) cudaFree(c->scratch);
    }
    if (NULL != c->wide_area) {
        (void) cudaFree(c->wide_area);
        c->wide_area = NULL;
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

/*
 * Ranks that share a GPU and still run kernels that wait for each other
 * (under MPS with coll_gpu_paced 0) need all their blocks resident at once:
 * 4 ranks' two-shot kernels of 128 blocks of 1024 threads each on one
 * H100 waited for blocks that could never be scheduled.  So every kernel
 * gets at most half the SMs shared out among the ranks of the most shared
 * GPU.  Every rank computes the same cap (busids and the smallest SM count
 * are agreed), which the exchange kernel's slot layout needs.
 */
static void gpu_setup_share_cap(gpu_engine_comm_t *c)
{
    int share = 1, cap;
    for (int i = 0; i < c->nranks; ++i) {
        int k = 0;
        for (int j = 0; j < c->nranks; ++j) {
            k += 0 == strcmp(c->busid[i], c->busid[j]);
        }
        share = k > share ? k : share;
    }
    if (share < 2 || c->pk_sms < 2) {
        return;
    }
    cap = c->pk_sms / (2 * share) > 0 ? c->pk_sms / (2 * share) : 1;
    c->p.nblocks = c->p.nblocks > cap ? cap : c->p.nblocks;
    c->p.xchg_nblocks = c->p.xchg_nblocks > cap ? cap : c->p.xchg_nblocks;
    c->p.put_fold_nblocks = c->p.put_fold_nblocks > cap ? cap : c->p.put_fold_nblocks;
    c->p.oneshot_blocks = c->p.oneshot_blocks > cap ? cap : c->p.oneshot_blocks;
    c->p.persist_blocks = c->p.persist_blocks > cap ? cap : c->p.persist_blocks;
    GPU_LOG(10, "rank %d: %d ranks share a GPU: kernels take at most %d blocks", c->rank, share,
            cap);
}

static gpu_status_t gpu_setup_xchg(gpu_engine_setup_t *s, const void *sbuf, void *rbuf,
                                   size_t bytes)
{
    if (s->blocking || NULL == s->ops->iallgather) {
        return s->ops->allgather(s->ctx, sbuf, rbuf, bytes);
    }
    return s->ops->iallgather(s->ctx, sbuf, rbuf, bytes, &s->handle);
}

/* my verdict of this step, exchanged; the agreed one is read next step */
static gpu_status_t gpu_setup_vote(gpu_engine_setup_t *s, gpu_status_t mine)
{
    s->verdict = (int32_t) mine;
    return gpu_setup_xchg(s, &s->verdict, s->verdicts, sizeof(s->verdict));
}

static gpu_status_t gpu_setup_agreed(const gpu_engine_setup_t *s)
{
    gpu_status_t st = GPU_OK;
    for (int i = 0; i < s->c->nranks; ++i) {
        st = GPU_OK != s->verdicts[i] ? (gpu_status_t) s->verdicts[i] : st;
    }
    return st;
}

/* What the exchange that ended step s->step brought; then the next step's
 * local work and its exchange.  GPU_OK with s->step DONE: ready. */
static gpu_status_t gpu_setup_advance(gpu_engine_setup_t *s)
{
    gpu_engine_comm_t *c = s->c;
    gpu_status_t st;
    const int n = c->nranks;

    switch (s->step) {
    case GPU_SETUP_INFO:
        for (int i = 0; i < n; ++i) {
            if (GPU_OK != s->infos[i].status) {
                return (gpu_status_t) s->infos[i].status;
            }
        }
        {
            gpu_topo_rank_info_t *all = malloc(sizeof(*all) * (size_t) n);
            if (NULL == all) {
                st = GPU_ERR_NO_MEMORY;
            } else {
                for (int i = 0; i < n; ++i) {
                    all[i] = s->infos[i].info;
                }
                st = gpu_topo_build(all, n, c->rank, gpu_topo_cuda_can_access, &c->topo);
                free(all);
            }
        }
        /* peer-access answers come from each process; agree on them */
        s->step = GPU_SETUP_P2P;
        return gpu_setup_vote(s, (GPU_OK == st && n <= GPU_MAX_PEERS &&
                                  c->tr->can_connect(&c->topo)) ? GPU_OK : GPU_ERR_UNSUPPORTED);
    case GPU_SETUP_P2P:
        st = gpu_setup_agreed(s);
        if (GPU_OK != st) {
            GPU_LOG(1, "rank %d: %d ranks, one host %d, peer access %d: device buffers are "
                    "staged", c->rank, n, c->topo.all_on_one_host, c->topo.p2p_all);
            return st;
        }
        c->mps_all = 1;
        for (int i = 0; i < n; ++i) {
            snprintf(c->busid[i], sizeof(c->busid[i]), "%s", s->infos[i].info.busid);
            c->threads_any |= 0 != (s->infos[i].pad & 1);
            c->mps_all &= 0 != (s->infos[i].pad & 2);
        }
        c->hs_on = c->p.paced_scratch > 0 && gpu_engine_hs_wanted(c);
        c->direct_on = gpu_engine_direct_wanted(c);
        /* the persistent engine's blocks are cut alike everywhere, so the
         * smallest GPU bounds them */
        c->pk_sms = s->infos[0].info.sms;
        for (int i = 1; i < n; ++i) {
            c->pk_sms = s->infos[i].info.sms < c->pk_sms ? s->infos[i].info.sms : c->pk_sms;
        }
        gpu_setup_share_cap(c);
        /* NULL (no memory for its bookkeeping): this communicator's own areas */
        c->pool = c->p.pool && c->nranks > 1 ? gpu_pool_attach(c->device, &gpu_pool_cuda_mem_ops)
                                             : NULL;
        s->hmine.status = gpu_engine_alloc_local(c, &s->hmine.handle);
        if (GPU_OK == s->hmine.status && c->p.scratch_eager && c->nranks > 1 && NULL == c->pool) {
            s->hmine.status = gpu_engine_big_alloc(c, &s->hmine.big);
        }
        s->step = GPU_SETUP_HANDLES;
        return gpu_setup_xchg(s, &s->hmine, s->handles, sizeof(s->hmine));
    case GPU_SETUP_HANDLES:
        for (int i = 0; i < n; ++i) {
            if (GPU_OK != s->handles[i].status) {
                /* out of memory somewhere: every rank stages, none aborts */
                GPU_LOG(1, "rank %d: rank %d could not set up its scratch (%s): device buffers "
                        "are staged", c->rank, i,
                        gpu_status_string((gpu_status_t) s->handles[i].status));
                return GPU_ERR_NO_MEMORY == s->handles[i].status ? GPU_ERR_NO_MEMORY
                                                                  : GPU_ERR_UNSUPPORTED;
            }
        }
        s->step = GPU_SETUP_MAPPED;
        {
            const gpu_ipc_handle_t *small[GPU_MAX_PEERS], *big[GPU_MAX_PEERS];
            for (int i = 0; i < n; ++i) {
                small[i] = &s->handles[i].handle;
                big[i] = &s->handles[i].big;
            }
            st = gpu_engine_map(c, small, 0);
            if (GPU_OK == st && NULL != c->big) {
                st = gpu_engine_map(c, big, 1);
            }
        }
        return gpu_setup_vote(s, st);
    case GPU_SETUP_MAPPED:
        st = gpu_setup_agreed(s);
        if (GPU_OK != st) {
            return st;
        }
        c->big_state = NULL != c->big ? GPU_BIG_READY : GPU_BIG_NONE;
        GPU_LOG(1, "rank %d/%d: device %d (%s), %d local ranks on %d GPUs, transport %s",
                c->rank, n, c->device, c->busid[c->rank], c->topo.local_size, c->topo.ndevices,
                c->tr->name);
        if (c->hs_on) {
            GPU_LOG(1, "rank %d: ranks share a GPU: blocking calls host-paced (%zu bytes "
                    "staging)%s", c->rank, c->hs_bytes,
                    c->direct_on ? ", allreduce run by rank 0 for all" : "");
        }
        s->step = GPU_SETUP_PK;
        return gpu_setup_vote(s, gpu_engine_pk_setup(c));
    case GPU_SETUP_PK:
        if (GPU_OK != gpu_setup_agreed(s)) {
            GPU_LOG(1, "rank %d: persistent engine off (not every rank could set it up)",
                    c->rank);
            gpu_engine_pk_release(c);
        }
        /* one line per peer, like NCCL_DEBUG=INFO's channel lines */
        for (int i = 0; i < n && gpu_log_enabled(1); ++i) {
            if (i != c->rank) {
                GPU_LOG(1, "rank %d -> %d: GPU %s -> %s via %s (%s)", c->rank, i,
                        c->busid[c->rank], c->busid[i], c->tr->name,
                        0 == strcmp(c->busid[c->rank], c->busid[i]) ? "same GPU"
                                                                    : "peer access");
            }
        }
        s->step = GPU_SETUP_DONE;
        return GPU_OK;
    default:
        return GPU_ERR_INVALID;
    }
}

static void gpu_setup_free(gpu_engine_setup_t *s, int keep_comm)
{
    if (!keep_comm && NULL != s->c) {
        gpu_engine_release(s->c);
        free(s->c);
    }
    free(s->infos);
    free(s->handles);
    free(s->verdicts);
    free(s);
}

gpu_status_t gpu_engine_setup_begin(const gpu_boot_ops_t *ops, void *ctx, int rank, int nranks,
                                    const gpu_engine_params_t *params, int blocking,
                                    gpu_engine_setup_t **out)
{
    gpu_engine_setup_t *s = calloc(1, sizeof(*s));
    gpu_engine_comm_t *c = calloc(1, sizeof(*c));
    gpu_status_t local;

    if (NULL != s) {
        s->c = c;
        s->infos = calloc((size_t) nranks, sizeof(*s->infos));
        s->handles = calloc((size_t) nranks, sizeof(*s->handles));
        s->verdicts = calloc((size_t) nranks, sizeof(*s->verdicts));
    }
    if (NULL == s || NULL == c || NULL == s->infos || NULL == s->handles ||
        NULL == s->verdicts) {
        if (NULL != s) {
            gpu_setup_free(s, 0);
        } else {
            free(c);
        }
        return GPU_ERR_NO_MEMORY;
    }
    c->kind_busy = -1;   /* no board has said */
    c->kind_pool = -1;
    s->ops = ops;
    s->ctx = ctx;
    s->blocking = blocking;
    c->rank = rank;
    c->nranks = nranks;
    c->p = *params;
    c->boot = ops;
    c->boot_ctx = ctx;
    c->tr = &gpu_ipc_cuda_ops;
    gpu_engine_fit(c);   /* the same cut on every rank: sizes and parameters only */
    /* step 1: who drives which GPU where */
    local = (cudaSuccess == cudaGetDevice(&c->device))
                ? gpu_topo_local_info(c->device, &s->mine.info) : GPU_ERR_CUDA;
    s->mine.status = (int32_t) local;
    {
        /* under MPS the processes on one GPU run kernels side by side, as
         * with a GPU each: no reason to pace them through the host */
        int mps = 0;
        if (GPU_OK == local && cudaSuccess != cudaDeviceGetAttribute(&mps, cudaDevAttrMpsEnabled,
                                                                    c->device)) {
            (void) cudaGetLastError();
            mps = 0;
        }
        s->mine.pad = (c->p.threads ? 1 : 0) | (mps ? 2 : 0);
    }
    s->mine.info.host_hash = gpu_topo_host_id(s->mine.info.host_hash, c->p.node_key);
    s->step = GPU_SETUP_INFO;
    if (GPU_OK != (local = gpu_setup_xchg(s, &s->mine, s->infos, sizeof(s->mine)))) {
        gpu_setup_free(s, 0);
        return local;
    }
    *out = s;
    return GPU_OK;
}

gpu_status_t gpu_engine_setup_step(gpu_engine_setup_t *s, gpu_engine_comm_t **comm)
{
    const int dev = s->c->device;
    gpu_status_t st = GPU_OK;
    int prev = dev;

    /* a progress pass may come with another current device */
    if (!s->blocking && cudaSuccess == cudaGetDevice(&prev) && prev != dev) {
        (void) cudaSetDevice(dev);
    }
    while (GPU_SETUP_DONE != s->step) {
        if (NULL != s->handle) {
            st = s->ops->test(s->ctx, s->handle);
            if (GPU_INPROGRESS == st) {
                goto out;
            }
            s->handle = NULL;
            if (GPU_OK != st) {
                break;
            }
        }
        st = gpu_setup_advance(s);
        if (GPU_OK != st) {
            break;
        }
    }
    if (GPU_SETUP_DONE == s->step && GPU_OK == st) {
        *comm = s->c;
        gpu_setup_free(s, 1);
    } else {
        gpu_setup_free(s, 0);
    }
out:
    if (prev != dev) {
        (void) cudaSetDevice(prev);
    }
    return st;
}

gpu_status_t gpu_engine_comm_create(const gpu_boot_ops_t *ops, void *ctx, int rank, int nranks,
                                    const gpu_engine_params_t *params, gpu_engine_comm_t **comm)
{
    gpu_engine_setup_t *s;
    gpu_status_t st = gpu_engine_setup_begin(ops, ctx, rank, nranks, params, 1, &s);
    return GPU_OK == st ? gpu_engine_setup_step(s, comm) : st;
}
