#include "hier/gpu_hier_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/gpu_kernels.h"
#include "util/gpu_clock.h"
#include "util/gpu_cuda_check.h"

/* bounded wait on a stream or an event (query is the same shape) */
static gpu_status_t gpu_hier_wait(gpu_hier_t *h, cudaStream_t s, cudaEvent_t ev, const char *what)
{
    const double deadline = gpu_clock_now() + h->p.timeout_s;
    cudaError_t e;
    unsigned spins = 0;
    while (cudaErrorNotReady == (e = NULL != ev ? cudaEventQuery(ev) : cudaStreamQuery(s))) {
        if (0 == (++spins & 1023) && gpu_clock_now() > deadline) {
            GPU_ERROR("rank %d: %s: copies still running after %.0f s", h->rank, what,
                      h->p.timeout_s);
            return GPU_ERR_TIMEOUT;
        }
    }
    if (cudaSuccess != e) {
        GPU_ERROR("rank %d: %s: %s", h->rank, what, cudaGetErrorString(e));
        return GPU_ERR_CUDA;
    }
    return GPU_OK;
}

gpu_status_t gpu_hier_sync(gpu_hier_t *h, const char *what)
{
    return gpu_hier_wait(h, h->stream, NULL, what);
}

static gpu_status_t gpu_hier_fold_host(void *ctx, void *acc, const void *x, size_t count,
                                       gpu_op_t op, gpu_dtype_t dt)
{
    (void) ctx;
    return gpu_reduce_host(acc, x, count, op, dt) ? GPU_OK : GPU_ERR_UNSUPPORTED;
}

static gpu_status_t gpu_hier_fold_device(void *ctx, void *acc, const void *x, size_t count,
                                         gpu_op_t op, gpu_dtype_t dt)
{
    gpu_hier_t *h = ctx;
    gpu_status_t st = gpu_kernel_reduce_local(acc, x, count, op, dt, h->stream);
    return GPU_OK == st ? gpu_hier_sync(h, "inter-node fold") : st;
}

static const gpu_inter_reduce_ops_t gpu_hier_red_host = { .reduce = gpu_hier_fold_host };
static const gpu_inter_reduce_ops_t gpu_hier_red_device = { .reduce = gpu_hier_fold_device };

/* what gpu_hier_layout allocated (also after a partial allocation) */
static void gpu_hier_free_layout(gpu_hier_t *h)
{
    free(h->cbuf);
    for (int i = 0; i < 2; ++i) {
        free(h->goff[i]);
        free(h->glen[i]);
    }
    free(h->rank_at);
    free(h->len);
    free(h->off);
    free(h->members);
    free(h->node_size);
    free(h->local_of);
    free(h->node_of);
}

static gpu_status_t gpu_hier_layout(gpu_hier_t *h, const gpu_hier_layout_t *l)
{
    const int n = l->nranks;
    h->rank = l->rank;
    h->nranks = n;
    h->nnodes = 0;
    for (int r = 0; r < n; ++r) {
        h->nnodes = l->node_of[r] + 1 > h->nnodes ? l->node_of[r] + 1 : h->nnodes;
    }
    h->node_of = calloc((size_t) n, sizeof(int));
    h->local_of = calloc((size_t) n, sizeof(int));
    h->node_size = calloc((size_t) h->nnodes, sizeof(int));
    h->members = calloc((size_t) h->nnodes, sizeof(int));
    h->off = calloc((size_t) (n > h->nnodes ? n : h->nnodes) + 1, sizeof(size_t));
    h->len = calloc((size_t) (n > h->nnodes ? n : h->nnodes) + 1, sizeof(size_t));
    h->cbuf = calloc((size_t) n + 1, sizeof(*h->cbuf));
    for (int i = 0; i < 2; ++i) {
        h->goff[i] = calloc((size_t) h->nnodes + 1, sizeof(size_t));
        h->glen[i] = calloc((size_t) h->nnodes + 1, sizeof(size_t));
        if (NULL == h->goff[i] || NULL == h->glen[i]) {
            return GPU_ERR_NO_MEMORY;
        }
    }
    if (NULL == h->node_of || NULL == h->local_of || NULL == h->node_size || NULL == h->members ||
        NULL == h->off || NULL == h->len || NULL == h->cbuf) {
        return GPU_ERR_NO_MEMORY;
    }
    for (int r = 0; r < n; ++r) {
        h->node_of[r] = l->node_of[r];
        h->local_of[r] = h->node_size[l->node_of[r]]++;
    }
    h->max_lsize = 0;
    h->even = 1;
    for (int j = 0; j < h->nnodes; ++j) {
        h->max_lsize = h->node_size[j] > h->max_lsize ? h->node_size[j] : h->max_lsize;
        h->even &= h->node_size[j] == h->node_size[0];
    }
    h->rank_at = calloc((size_t) h->nnodes * (size_t) h->max_lsize, sizeof(int));
    if (NULL == h->rank_at) {
        return GPU_ERR_NO_MEMORY;
    }
    for (int r = 0; r < n; ++r) {
        h->rank_at[h->node_of[r] * h->max_lsize + h->local_of[r]] = r;
    }
    h->node = h->node_of[h->rank];
    h->local = h->local_of[h->rank];
    h->lsize = h->node_size[h->node];
    return GPU_OK;
}

gpu_status_t gpu_hier_create(gpu_engine_comm_t *intra, const gpu_net_ops_t *net_ops,
                             gpu_net_t *const *nets, int direct,
                             const gpu_hier_layout_t *layout, const gpu_hier_params_t *p,
                             gpu_hier_t **out)
{
    gpu_hier_t *h = calloc(1, sizeof(*h));
    gpu_status_t st = GPU_ERR_NO_MEMORY;
    size_t slot;

    if (NULL == h) {
        return st;
    }
    h->intra = intra;
    h->net_ops = net_ops;
    h->net = nets[0];
    h->direct = direct;
    h->p = *p;
    /* the device fold's kernels loaded at setup, on the application's
     * thread, not at a first launch on the hierarchy's nonblocking thread
     * (which must never wait for the whole device); without them the host
     * folds */
    if (h->p.device_fold && !direct && GPU_OK != gpu_kernel_fold_preload()) {
        h->p.device_fold = 0;
    }
    /* device folds run on the calling thread's stream: one channel there */
    h->nchan = direct || p->channels < 1 ? 1
               : (p->channels > GPU_HIER_MAX_CHANNELS ? GPU_HIER_MAX_CHANNELS : p->channels);
    for (int i = 0; i < h->nchan; ++i) {
        h->chan_net[i] = nets[i];
    }
    /* every channel keeps a slice in the network while the next one stages */
    h->p.nslots = p->nslots < 1 ? 1 : p->nslots;
    if (h->nchan > 1 && h->p.nslots < 2 * h->nchan) {
        h->p.nslots = 2 * h->nchan;
    }
    h->p.nslots = h->p.nslots > GPU_HIER_MAX_SLOTS ? GPU_HIER_MAX_SLOTS : h->p.nslots;
    /* a slot holds whole elements of every type and a slice of every rank's block */
    slot = gpu_hier_slot_bytes(p->slot_bytes);
    h->p.slot_bytes = slot;
    h->p.timeout_s = p->timeout_s > 0 ? p->timeout_s : 60.0;
    st = gpu_hier_layout(h, layout);
    if (GPU_OK != st) {
        goto err_free;
    }
    GPU_CUDA_CHECK(cudaStreamCreateWithFlags(&h->stream, cudaStreamNonBlocking), err_free);
    GPU_CUDA_CHECK(cudaStreamCreateWithFlags(&h->up_stream, cudaStreamNonBlocking), err_stream);
    GPU_CUDA_CHECK(cudaEventCreateWithFlags(&h->legacy_ev, cudaEventDisableTiming), err_stream);
    for (int i = 0; i < h->p.nslots; ++i) {
        GPU_CUDA_CHECK(cudaEventCreateWithFlags(&h->slot_ev[i], cudaEventDisableTiming), err_events);
        GPU_CUDA_CHECK(cudaEventCreateWithFlags(&h->up_ev[i], cudaEventDisableTiming), err_events);
    }
    if (direct) {
        GPU_CUDA_CHECK(cudaMalloc((void **) &h->slots, slot * (size_t) (h->p.nslots + 1)),
                      err_events);
    } else {
        /* with the device fold, an area per slot for the peer's slice, which
         * the fold kernel reads straight from host memory (pinned memory is
         * mapped under unified addressing) */
        const size_t nslot = (size_t) h->p.nslots * (h->p.device_fold ? 2 : 1) + 1;
        GPU_CUDA_CHECK(cudaHostAlloc((void **) &h->slots, slot * nslot,
                                     cudaHostAllocPortable |
                                         (h->p.device_fold ? cudaHostAllocMapped : 0)),
                       err_events);
    }
    h->fold = h->slots + slot * (size_t) h->p.nslots;
    h->peer = !direct && h->p.device_fold ? h->fold + slot : NULL;
    if (h->nchan > 1 && GPU_OK != (st = gpu_hier_chan_start(h))) {
        goto err_slots;
    }
    snprintf(h->desc, sizeof(h->desc), "%d nodes, %s, inter-node %s, %d slots of %zu KiB, "
             "%d channel%s", h->nnodes, h->even ? "even layout (rails)" : "uneven layout (leaders)",
             direct ? "on device memory" : "staged through pinned host", h->p.nslots,
             slot >> 10, h->nchan, 1 == h->nchan ? "" : "s");
    *out = h;
    return GPU_OK;

err_slots:
    (void) cudaFreeHost(h->slots);

err_events:
    for (int i = 0; i < h->p.nslots; ++i) {
        if (NULL != h->slot_ev[i]) {
            cudaEventDestroy(h->slot_ev[i]);
        }
        if (NULL != h->up_ev[i]) {
            cudaEventDestroy(h->up_ev[i]);
        }
    }
    cudaEventDestroy(h->legacy_ev);
err_stream:
    if (NULL != h->up_stream) {
        cudaStreamDestroy(h->up_stream);
    }
    cudaStreamDestroy(h->stream);
err_free:
    gpu_hier_free_layout(h);
    free(h);
    return st;
}

void gpu_hier_destroy(gpu_hier_t *h)
{
    if (NULL == h) {
        return;
    }
    (void) gpu_hier_wait(h, h->stream, NULL, "freeing the hierarchy's state");
    (void) gpu_hier_wait(h, h->up_stream, NULL, "freeing the hierarchy's state");
    gpu_hier_chan_stop(h);
    if (h->direct) {
        (void) cudaFree(h->slots);
    } else {
        (void) cudaFreeHost(h->slots);
    }
    (void) cudaFree(h->dvec);
    for (int i = 0; i < h->ndvec_old; ++i) {
        (void) cudaFree(h->dvec_old[i]);
    }
    for (int i = 0; i < h->p.nslots; ++i) {
        (void) cudaEventDestroy(h->slot_ev[i]);
        (void) cudaEventDestroy(h->up_ev[i]);
    }
    (void) cudaEventDestroy(h->legacy_ev);
    (void) cudaStreamDestroy(h->up_stream);
    (void) cudaStreamDestroy(h->stream);
    gpu_hier_free_layout(h);
    free(h);
}

const char *gpu_hier_describe(const gpu_hier_t *h)
{
    return h->desc;
}

void gpu_hier_model_of(const gpu_hier_t *h, gpu_hier_model_t *m)
{
    m->nnodes = h->nnodes;
    m->nranks = h->nranks;
    m->lsize = h->lsize;
    m->min_lsize = h->node_size[0];
    for (int j = 1; j < h->nnodes; ++j) {
        m->min_lsize = h->node_size[j] < m->min_lsize ? h->node_size[j] : m->min_lsize;
    }
    m->even = h->even;
    m->slot_bytes = h->p.slot_bytes;
    m->nchan = h->nchan;
    m->alpha_s = h->p.alpha_s;
    m->beta_Bps = h->p.beta_Bps;
    m->algo = h->p.algo;
    m->device_fold = NULL != h->peer;
}

char *gpu_hier_peer_slot(const gpu_hier_t *h, const char *slot)
{
    return h->peer + (slot - h->slots);
}

void gpu_hier_group(gpu_hier_t *h, gpu_inter_group_t *g)
{
    gpu_hier_model_t m;

    memset(g, 0, sizeof(*g));
    g->net = h->net_ops;
    g->conn = h->net;
    g->n = h->nnodes;
    g->me = h->node;
    g->ranks = h->members;
    g->mem = h->direct ? GPU_NET_MEM_CUDA : GPU_NET_MEM_HOST;
    g->red = h->direct ? &gpu_hier_red_device : &gpu_hier_red_host;
    g->red_ctx = h;
    g->tmp = h->fold;
    g->tag = (h->seq & 0xffff) << 16;
    gpu_hier_model_of(h, &m);
    gpu_hier_group_model(&m, g);
}

gpu_status_t gpu_hier_begin(gpu_hier_t *h)
{
    gpu_status_t st = GPU_OK;
    ++h->seq;
    if (h->p.order_legacy) {
        GPU_CUDA_CHECK(cudaEventRecord(h->legacy_ev, cudaStreamLegacy), out);
        GPU_CUDA_CHECK(cudaStreamWaitEvent(h->stream, h->legacy_ev, 0), out);
    }
out:
    return st;
}

gpu_status_t gpu_hier_d2d(gpu_hier_t *h, void *dst, const void *src, size_t bytes)
{
    gpu_status_t st = GPU_OK;
    if (dst != src && bytes > 0) {
        GPU_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, h->stream), out);
        st = gpu_hier_sync(h, "device copy");
    }
out:
    return st;
}

/*
 * The device temporary grows and is never freed until the hierarchy goes.
 * cudaFree waits for the whole device, and a nonblocking call of another
 * communicator may be spinning there for a node peer that is itself held
 * in such a wait (coll_gpu_hier_nb.c): on 4x H100 that hung two
 * communicators' calls until coll_gpu_timeout.  Doubling keeps the kept
 * ones below the current size in all.
 */
gpu_status_t gpu_hier_dvec(gpu_hier_t *h, size_t bytes, char **out)
{
    gpu_status_t st = GPU_OK;
    if (bytes > h->dvec_bytes) {
        size_t want = 2 * h->dvec_bytes > bytes ? 2 * h->dvec_bytes : bytes;
        char *p = NULL;
        GPU_CUDA_CHECK(cudaMalloc((void **) &p, want), out_err);
        if (NULL != h->dvec) {
            if (h->ndvec_old < GPU_HIER_DVEC_OLD) {
                h->dvec_old[h->ndvec_old++] = h->dvec;
            } else {
                (void) cudaFree(h->dvec);   /* 40 doublings: not reached */
            }
        }
        h->dvec = p;
        h->dvec_bytes = want;
    }
    *out = h->dvec;
out_err:
    return st;
}

static gpu_status_t gpu_hier_copy(gpu_hier_t *h, const gpu_hier_stage_t *s, size_t k, int up,
                                  char *slot)
{
    gpu_hier_copy_t *c = h->cbuf;
    gpu_status_t st = GPU_OK;
    const cudaStream_t q = up ? h->up_stream : h->stream;
    int n = s->copies(s->arg, k, up, c);
    for (int i = 0; i < n; ++i) {
        void *dst = up ? (void *) c[i].dev : (void *) (slot + c[i].slot_off);
        const void *src = up ? (const void *) (slot + c[i].slot_off) : (const void *) c[i].dev;
        GPU_CUDA_CHECK(cudaMemcpyAsync(dst, src, c[i].len, cudaMemcpyDefault, q), out);
    }
out:
    return st;
}

/* Copies into and out of the slots run on two streams, so the copy engines
 * of both directions work at once: slice k's copy down, then its event
 * (the network may start); a slot refilled waits for the copy out of the
 * slice before it. */
gpu_status_t gpu_hier_stage_down(gpu_hier_t *h, const gpu_hier_stage_t *s, size_t k)
{
    const size_t ns = (size_t) h->p.nslots;
    gpu_status_t st = GPU_OK;
    if (k >= ns) {
        GPU_CUDA_CHECK(cudaStreamWaitEvent(h->stream, h->up_ev[k % ns], 0), out);
    }
    st = gpu_hier_copy(h, s, k, 0, h->slots + (k % ns) * h->p.slot_bytes);
    if (GPU_OK == st) {
        GPU_CUDA_CHECK(cudaEventRecord(h->slot_ev[k % ns], h->stream), out);
    }
out:
    return st;
}

gpu_status_t gpu_hier_stage_up(gpu_hier_t *h, const gpu_hier_stage_t *s, size_t k)
{
    const size_t ns = (size_t) h->p.nslots;
    char *slot = h->slots + (k % ns) * h->p.slot_bytes;
    gpu_status_t st = NULL != s->up ? s->up(s->arg, k, slot, h->up_stream)
                                    : gpu_hier_copy(h, s, k, 1, slot);
    if (GPU_OK == st) {
        GPU_CUDA_CHECK(cudaEventRecord(h->up_ev[k % ns], h->up_stream), out);
    }
out:
    return st;
}

gpu_status_t gpu_hier_stage_end(gpu_hier_t *h)
{
    gpu_status_t st = gpu_hier_wait(h, h->up_stream, NULL, "staging copy from the network");
    return GPU_OK == st ? gpu_hier_sync(h, "staging copy to the network") : st;
}

size_t gpu_hier_slice(const gpu_hier_t *h, size_t bytes, size_t esz)
{
    gpu_hier_model_t m;
    gpu_hier_model_of(h, &m);
    return gpu_hier_slice_len(&m, bytes, esz);
}

gpu_status_t gpu_hier_pipeline(gpu_hier_t *h, gpu_inter_group_t *g, const gpu_hier_stage_t *s)
{
    const size_t ns = (size_t) h->p.nslots;
    gpu_status_t st = GPU_OK;
    size_t k;

    /* one slice: no hand-over to a thread that may be asleep (every rank
     * sees the same count; channel 0's endpoints are the calling thread's) */
    if (h->nchan > 1 && s->nslices > 1) {
        return gpu_hier_pipeline_chan(h, g, s);
    }
    /* fill the ring: slices 0..ns-1 on their way down */
    for (k = 0; k < s->nslices && k < ns && GPU_OK == st; ++k) {
        st = gpu_hier_stage_down(h, s, k);
    }
    for (k = 0; k < s->nslices && GPU_OK == st; ++k) {
        char *slot = h->slots + (k % ns) * h->p.slot_bytes;
        st = gpu_hier_wait(h, NULL, h->slot_ev[k % ns], "staging copy to the network");
        if (GPU_OK == st) {
            st = s->net(s->arg, k, slot, g);
        }
        if (GPU_OK == st) {
            st = gpu_hier_stage_up(h, s, k);
        }
        if (GPU_OK == st && k + ns < s->nslices) {
            st = gpu_hier_stage_down(h, s, k + ns);
        }
    }
    return GPU_OK == st ? gpu_hier_stage_end(h) : st;
}
