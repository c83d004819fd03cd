/*
 * One process runs a blocking allreduce for every rank, where all ranks of
 * the communicator time-slice one GPU without MPS.
 *
 * Without MPS the processes on a GPU get it in turns, so every GPU
 * operation of a process (a copy, a launch, an event) waits for a context
 * switch: an 8-byte allreduce took about 300 us staged through host copies
 * and 600 us in host-paced rounds on one H100, however little it moved.
 * Here the other ranks submit no GPU work at all.  Each names its buffers
 * (the IPC handles of their allocations, cached: ipc/gpu_ipc_cache.h); the
 * communicator's rank 0 maps them (cached too), runs one kernel that reads
 * every input and writes every output, waits for it, and tells the others:
 * two host allgathers (bounded like every exchange of ours), one launch and
 * one wait in one context.  The kernel waits for nobody.
 *
 * Both exchanges give every rank the same facts, so every rank makes the
 * same choice: a buffer that cannot be shared (managed, pool or VMM
 * memory) or a mapping rank 0 cannot open makes every rank stage this
 * call (GPU_ERR_UNSUPPORTED; nothing was written); a failed kernel is an
 * error on every rank.  Each rank waits for the application's earlier
 * work on the legacy stream on the host first (a host wait submits
 * nothing), as the other paths order after it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/gpu_cuda_wait.h"
#include "engine/gpu_engine_internal.h"
#include "ipc/gpu_ipc_cache.h"
#include "util/gpu_clock.h"

#define GPU_DIRECT_GONE 8

typedef struct {
    int32_t status;
    int32_t same;               /* in place: out is in */
    gpu_ipc_ref_t in, out;
    int32_t pid;
    int32_t ngone;              /* allocations of this process freed since its last call */
    uint64_t gone[GPU_DIRECT_GONE];
} gpu_direct_desc_t;

int gpu_engine_direct_wanted(const gpu_engine_comm_t *c)
{
    if (!c->p.direct || c->nranks < 2 || c->p.paced >= 0 || c->threads_any) {
        return 0;
    }
    for (int i = 1; i < c->nranks; ++i) {
        if (0 != strcmp(c->busid[0], c->busid[i])) {
            return 0;
        }
    }
    return 1;
}

int gpu_engine_direct(const gpu_engine_comm_t *c)
{
    return NULL != c && c->direct_on && !c->mps_all;
}

/*
 * Under MPS the ranks' own kernels run side by side, each with its share of
 * the SMs (half the GPU split among the ranks: 8 blocks each for 8 ranks on
 * an H100), which wins for small calls (the resident kernel, no host
 * exchange) and loses for larger ones to one kernel with the whole GPU.
 * Where they crossed on one H100 (docs/results/h100_2026-11-25_*): 1 MiB
 * for 2 ranks, 128 KiB for 4, 8 KiB for 8.  Nonblocking calls would run
 * host-paced rounds there: this path at every size.  Same answer on every
 * rank (bytes and rank count are).
 */
int gpu_engine_direct_takes(const gpu_engine_comm_t *c, size_t bytes, int blocking)
{
    size_t from;
    if (!c->direct_on || (!blocking && 0 == c->hs_bytes)) {
        return 0;
    }
    if (!c->mps_all || !blocking) {
        return 1;
    }
    from = c->nranks <= 2 ? (size_t) 1 << 20 : c->nranks <= 4 ? (size_t) 128 << 10 : 8192;
    return bytes >= from;
}

/* this rank's buffers as rank 0 can map them, and the allocations it
 * freed since its last call (rank 0 closes its mappings of them) */
static gpu_status_t gpu_direct_describe(gpu_engine_comm_t *c, const void *in, void *out,
                                        gpu_direct_desc_t *d)
{
    gpu_status_t st;
    memset(d, 0, sizeof(*d));
    d->same = in == out;
    st = gpu_ipc_ref_make(in, &d->in);
    if (GPU_OK == st && !d->same) {
        st = gpu_ipc_ref_make(out, &d->out);
    }
    d->pid = (int32_t) getpid();
    d->ngone = gpu_ipc_exports_gone(&c->direct_gone, d->gone, GPU_DIRECT_GONE);
    return st;
}

/* After the first exchange: rank 0 closes what the others freed; 1 when
 * every rank's buffers can be shared (every rank sees the same) */
static int gpu_direct_agreed(gpu_engine_comm_t *c, const gpu_direct_desc_t *all,
                             gpu_engine_what_t *what)
{
    if (0 == c->rank) {
        /* mappings of freed memory keep it alive: close them first */
        for (int r = 1; r < c->nranks; ++r) {
            gpu_ipc_forget(all[r].pid, all[r].gone, all[r].ngone);
        }
    }
    for (int r = 0; r < c->nranks; ++r) {
        if (GPU_OK != all[r].status) {
            GPU_LOG(10, "rank %d: %s: rank %d's buffers cannot be shared (%s): another path",
                    c->rank, gpu_engine_what(what), r,
                    gpu_status_string((gpu_status_t) all[r].status));
            return 0;
        }
    }
    return 1;
}

/* rank 0: map every rank's buffers and queue the kernel on our stream
 * (GPU_ERR_UNSUPPORTED, nothing queued, where a mapping fails) */
static gpu_status_t gpu_direct_launch(gpu_engine_comm_t *c, gpu_engine_what_t *what,
                                      const gpu_direct_desc_t *all, const void *in, void *out,
                                      size_t count, gpu_op_t op, gpu_dtype_t dt)
{
    gpu_direct_args_t a;

    memset(&a, 0, sizeof(a));
    a.nranks = c->nranks;
    a.in[0] = in;
    a.out[0] = out;
    for (int r = 1; r < c->nranks; ++r) {
        void *p = NULL, *q = NULL;
        if (GPU_OK != gpu_ipc_ref_open(&all[r].in, &p) ||
            (!all[r].same && GPU_OK != gpu_ipc_ref_open(&all[r].out, &q))) {
            GPU_LOG(1, "rank %d: %s: cannot map the buffers of rank %d: another path", c->rank,
                    gpu_engine_what(what), r);
            return GPU_ERR_UNSUPPORTED;
        }
        a.in[r] = p;
        a.out[r] = all[r].same ? p : q;
    }
    gpu_engine_pk_park(c);      /* a resident kernel would hold the stream */
    return gpu_kernel_allreduce_direct(&a, count, op, dt, c->stream);
}

gpu_status_t gpu_engine_direct_allreduce(gpu_engine_comm_t *c, gpu_engine_what_t *what,
                                         const void *in, void *out, size_t count, gpu_op_t op,
                                         gpu_dtype_t dt)
{
    const int n = c->nranks;
    gpu_direct_desc_t mine;
    int32_t verdict, *verdicts;
    gpu_status_t st = GPU_OK, xs;

    if (NULL == c->direct_all) {
        c->direct_all = calloc((size_t) n, sizeof(gpu_direct_desc_t));
        c->direct_verdicts = calloc((size_t) n, sizeof(int32_t));
        if (NULL == c->direct_all || NULL == c->direct_verdicts) {
            return GPU_ERR_NO_MEMORY;
        }
    }
    verdicts = c->direct_verdicts;
    c->t_launch = gpu_clock_now();
    memset(&mine, 0, sizeof(mine));
    if (c->p.order_legacy) {
        st = gpu_cuda_stream_wait(cudaStreamLegacy, 2.0 * c->p.timeout_s + 5.0, c->rank,
                                  "the application's work on the default stream before a "
                                  "collective");
    }
    if (GPU_OK == st && 0 != c->rank) {
        st = gpu_direct_describe(c, in, out, &mine);
    }
    mine.status = (int32_t) st;
    xs = c->boot->allgather(c->boot_ctx, &mine, c->direct_all, sizeof(mine));
    if (GPU_OK != xs) {
        c->broken = 1;
        return xs;
    }
    const gpu_direct_desc_t *all = c->direct_all;
    if (!gpu_direct_agreed(c, all, what)) {
        return GPU_ERR_UNSUPPORTED;
    }
    verdict = GPU_OK;
    if (0 == c->rank) {
        st = gpu_direct_launch(c, what, all, in, out, count, op, dt);
        verdict = (int32_t) (GPU_OK == st ? gpu_engine_wait(c, what) : st);
    }
    xs = c->boot->allgather(c->boot_ctx, &verdict, verdicts, sizeof(verdict));
    if (GPU_OK != xs) {
        c->broken = 1;
        return xs;
    }
    c->t_submit = gpu_clock_now();
    st = (gpu_status_t) verdicts[0];
    if (GPU_OK != st && GPU_ERR_UNSUPPORTED != st) {
        if (0 != c->rank) {
            GPU_ERROR("rank %d: %s: rank 0 ran it for every rank and failed (%s)", c->rank,
                      gpu_engine_what(what), gpu_status_string(st));
        }
        c->broken = 1;
    }
    return st;
}

/* ---- nonblocking: the same exchanges, one step per progress pass -------- */

enum { GPU_DX_LEGACY, GPU_DX_MEET, GPU_DX_RUN, GPU_DX_TELL };

struct gpu_engine_direct_op {
    int phase;
    const void *in;
    void *out;
    size_t count;
    gpu_op_t op;
    gpu_dtype_t dt;
    double t0;
    void *handle;               /* the exchange in flight */
    cudaEvent_t ev;             /* rank 0: its kernel */
    gpu_direct_desc_t mine, *all;   /* all and verdicts: n each, after the struct */
    int32_t verdict, *verdicts;
};

static void gpu_dx_free(gpu_engine_comm_t *c, struct gpu_engine_direct_op *o)
{
    if (NULL != o->ev) {
        gpu_engine_event_put(c, o->ev);
    }
    free(o);
}

gpu_status_t gpu_engine_direct_start(gpu_engine_comm_t *c, const void *in, void *out,
                                     size_t count, gpu_op_t op, gpu_dtype_t dt,
                                     gpu_engine_req_t *req)
{
    /* one allocation per call: the op, then every rank's descriptor and verdict */
    const size_t n = (size_t) c->nranks;
    struct gpu_engine_direct_op *o = calloc(1, sizeof(*o) + n * (sizeof(gpu_direct_desc_t) +
                                                                  sizeof(int32_t)));
    if (NULL == o) {
        return GPU_ERR_NO_MEMORY;
    }
    *o = (struct gpu_engine_direct_op) { .phase = GPU_DX_LEGACY, .in = in, .out = out,
                                         .count = count, .op = op, .dt = dt,
                                         .all = (gpu_direct_desc_t *) (o + 1),
                                         .t0 = gpu_clock_now() };
    o->verdicts = (int32_t *) (o->all + n);
    req->direct = o;
    req->event = NULL;
    c->t_launch = o->t0;
    /* everything, the first exchange included, from progress: a start
     * never waits (not even for the application's default stream) */
    return GPU_OK;
}

/* every rank's verdict is rank 0's: UNSUPPORTED turns the call into
 * host-paced rounds (nothing written yet) */
static gpu_status_t gpu_dx_fallback(gpu_engine_comm_t *c, struct gpu_engine_direct_op *o,
                                    gpu_engine_req_t *req)
{
    gpu_xchg_plan_t plan;
    gpu_status_t st = gpu_plan_allreduce(&plan, c->rank, c->nranks, o->in, o->out,
                                         o->count * gpu_dtype_size(o->dt));
    return GPU_OK != st ? st : gpu_engine_hs_start(c, &plan, o->op, o->dt, req);
}

static gpu_status_t gpu_dx_advance(gpu_engine_comm_t *c, struct gpu_engine_direct_op *o,
                                   gpu_engine_req_t *req)
{
    const double limit = 2.0 * c->p.timeout_s + 5.0;
    gpu_engine_what_t w = { .coll = NULL };   /* req->what, for the helpers' messages */
    gpu_status_t st;
    cudaError_t e;

    for (;;) {
        if (NULL != o->handle) {
            st = c->boot->test(c->boot_ctx, o->handle);
            if (GPU_INPROGRESS == st) {
                return st;
            }
            o->handle = NULL;
            if (GPU_OK != st) {
                return st;
            }
        }
        switch (o->phase) {
        case GPU_DX_LEGACY:
            /* the application's earlier default-stream work, without
             * submitting any of ours */
            e = c->p.order_legacy ? cudaStreamQuery(cudaStreamLegacy) : cudaSuccess;
            if (cudaErrorNotReady == e) {
                if (gpu_clock_now() - o->t0 > limit) {
                    GPU_ERROR("rank %d: %s: the default stream did not drain in %.0f s",
                              c->rank, req->what, limit);
                    return GPU_ERR_TIMEOUT;
                }
                return GPU_INPROGRESS;
            }
            st = cudaSuccess == e ? GPU_OK : GPU_ERR_CUDA;
            if (GPU_OK == st && 0 != c->rank) {
                st = gpu_direct_describe(c, o->in, o->out, &o->mine);
            }
            o->mine.status = (int32_t) st;
            o->phase = GPU_DX_MEET;
            st = c->boot->iallgather(c->boot_ctx, &o->mine, o->all, sizeof(o->mine), &o->handle);
            if (GPU_OK != st) {
                return st;
            }
            break;
        case GPU_DX_MEET:
            snprintf(w.text, sizeof(w.text), "%s", req->what);
            if (!gpu_direct_agreed(c, o->all, &w)) {
                return gpu_dx_fallback(c, o, req);
            }
            o->verdict = GPU_OK;
            o->phase = GPU_DX_RUN;
            if (0 == c->rank) {
                o->verdict = gpu_direct_launch(c, &w, o->all, o->in, o->out, o->count, o->op,
                                               o->dt);
                if (GPU_OK == o->verdict) {
                    o->verdict = gpu_engine_event(c, &o->ev);
                }
                if (GPU_OK == o->verdict &&
                    cudaSuccess != (e = cudaEventRecord(o->ev, c->stream))) {
                    GPU_ERROR("rank %d: %s: cudaEventRecord: %s", c->rank, req->what,
                              cudaGetErrorString(e));
                    o->verdict = GPU_ERR_CUDA;
                }
                o->t0 = gpu_clock_now();
            }
            break;
        case GPU_DX_RUN:
            if (0 == c->rank && GPU_OK == o->verdict) {
                e = cudaEventQuery(o->ev);
                if (cudaErrorNotReady == e) {
                    if (gpu_clock_now() - o->t0 > limit) {
                        GPU_ERROR("rank %d: %s still running after %.0f s", c->rank, req->what,
                                  limit);
                        o->verdict = GPU_ERR_TIMEOUT;
                    } else {
                        return GPU_INPROGRESS;
                    }
                } else if (cudaSuccess != e) {
                    GPU_ERROR("rank %d: %s failed: %s", c->rank, req->what, cudaGetErrorString(e));
                    o->verdict = GPU_ERR_CUDA;
                }
            }
            o->phase = GPU_DX_TELL;
            st = c->boot->iallgather(c->boot_ctx, &o->verdict, o->verdicts, sizeof(int32_t),
                                     &o->handle);
            if (GPU_OK != st) {
                return st;
            }
            break;
        default:
            st = (gpu_status_t) o->verdicts[0];
            if (GPU_ERR_UNSUPPORTED == st) {
                return gpu_dx_fallback(c, o, req);
            }
            if (GPU_OK != st && 0 != c->rank) {
                GPU_ERROR("rank %d: %s: rank 0 ran it for every rank and failed (%s)", c->rank,
                          req->what, gpu_status_string(st));
            }
            return st;
        }
    }
}

gpu_status_t gpu_engine_direct_step(gpu_engine_comm_t *c, gpu_engine_req_t *req)
{
    struct gpu_engine_direct_op *o = req->direct;
    const int prev = gpu_engine_device_push(c);
    const gpu_status_t st = gpu_dx_advance(c, o, req);

    gpu_engine_device_pop(c, prev);
    if (GPU_INPROGRESS == st) {
        return st;
    }
    if (GPU_OK != st) {
        c->broken = 1;
    }
    c->t_submit = gpu_clock_now();
    /* a timed-out exchange may still write into the arrays: keep them */
    if (NULL == o->handle) {
        gpu_dx_free(c, o);
    }
    req->direct = NULL;
    return st;
}
