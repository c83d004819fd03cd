/*
 * Host-paced collectives, for communicators where ranks share a GPU.
 *
 * Without MPS the processes on one GPU get it in time slices, and a kernel
 * that waits for a peer on the same GPU holds its slice until it runs out:
 * with 4 ranks on 2 H200s every launched allreduce took 2.4 ms (OSU
 * osu_allreduce, docs/results/h200x2_2026-11-22_resident_kernel/osu/).
 * Here no device code ever waits for another process.  Each round (schedule in engine/gpu_paced.c)
 * a rank queues copies of what it sends into its own staging area, waits
 * for its stream on the host, meets the others in a host allgather that
 * also tells whether anyone has bytes left, then queues copies (or folds,
 * in rank order) from the senders' areas into its output and waits again.
 * A process whose work is done leaves the GPU idle, so the next one's slice
 * starts at once.
 *
 * Two staging areas alternate: round k + 2 overwrites round k's area only
 * after round k + 1's allgather, which every rank enters after its round k
 * pulls completed.  The areas are their own scratch region, so a launched
 * kernel of a later nonblocking call never writes where a slower peer is
 * still pulling from.  Blocking calls only: the allgather blocks, which a
 * nonblocking start must not do.
 */
#include <stdlib.h>

#include "engine/gpu_engine_internal.h"
#include "util/gpu_clock.h"

typedef struct {
    gpu_engine_comm_t *c;
    gpu_op_t op;
    gpu_dtype_t dt;
} gpu_hs_ctx_t;

static gpu_status_t gpu_hs_copy(void *ctx, void *dst, const void *src, size_t len)
{
    gpu_hs_ctx_t *x = ctx;
    cudaError_t e = cudaMemcpyAsync(dst, src, len, cudaMemcpyDefault, x->c->stream);
    if (cudaSuccess != e) {
        GPU_ERROR("rank %d: host-paced copy of %zu bytes: %s", x->c->rank, len,
                  cudaGetErrorString(e));
        return GPU_ERR_CUDA;
    }
    return GPU_OK;
}

static gpu_status_t gpu_hs_fold(void *ctx, void *acc, const void *src, size_t len)
{
    gpu_hs_ctx_t *x = ctx;
    return gpu_kernel_reduce_local(acc, src, len / gpu_dtype_size(x->dt), x->op, x->dt,
                                   x->c->stream);
}

static const gpu_paced_ops_t gpu_hs_ops = { .copy = gpu_hs_copy, .fold = gpu_hs_fold };

/* Shared GPUs decide it, unless the parameter forces it (before scratch is
 * laid out: the region exists only when used). */
int gpu_engine_hs_wanted(const gpu_engine_comm_t *c)
{
    /* Threads: two blocking calls of one process on different
     * communicators may each wait on the GPU at once, and kernels that wait
     * for peers can hold the SMs each other needs */
    if (c->threads_any) {
        return 1;
    }
    return c->p.paced >= 0 ? c->p.paced > 0 : gpu_engine_gpu_shared(c) && !c->mps_all;
}

int gpu_engine_shared_nomps(const gpu_engine_comm_t *c)
{
    return NULL != c && c->hs_on && c->p.paced < 0 && !c->threads_any &&
           gpu_engine_gpu_shared(c) && !c->mps_all;
}

int gpu_engine_paced(const gpu_engine_comm_t *c)
{
    return NULL != c && c->hs_on;
}

int gpu_engine_paced_takes(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *plan, int blocking)
{
    return blocking && gpu_engine_paced(c) && c->nranks > 1 && (NULL == plan || !plan->relay);
}

gpu_status_t gpu_engine_hs_run(gpu_engine_comm_t *c, gpu_engine_what_t *what,
                               const gpu_xchg_plan_t *plan, gpu_op_t op, gpu_dtype_t dt)
{
    const int n = c->nranks;
    const size_t esize = GPU_XCHG_REDUCE == plan->mode ? gpu_dtype_size(dt) : 1;
    const size_t chunk = gpu_paced_chunk(c->hs_bytes / 2 / (size_t) n, esize);
    gpu_hs_ctx_t ctx = { .c = c, .op = op, .dt = dt };
    char *half[GPU_MAX_PEERS];
    int more[GPU_MAX_PEERS], mine, any;
    gpu_status_t st;

    if (plan->relay || 0 == chunk) {
        return GPU_ERR_UNSUPPORTED;
    }
    st = gpu_engine_order(c);
    c->t_launch = gpu_clock_now();
    /* a rank that fails keeps meeting the others until they have seen it */
    for (int round = 0;; ++round) {
        const size_t at = c->hs_off + (size_t) c->hs_parity * (c->hs_bytes / 2);
        int failed = 0;
        for (int s = 0; s < n; ++s) {
            half[s] = (s == c->rank ? c->scratch : c->peer_base[s]) + at;
        }
        mine = 0;
        if (GPU_OK == st) {
            st = gpu_paced_stage(plan, c->rank, n, round, chunk, half[c->rank], &gpu_hs_ops,
                                 &ctx, &mine);
        }
        if (GPU_OK == st) {
            st = gpu_engine_wait(c, what);
        }
        mine = GPU_OK != st ? -1 : mine;
        const gpu_status_t xs = c->boot->allgather(c->boot_ctx, &mine, more, sizeof(int));
        if (GPU_OK != xs) {
            /* a timeout names its peer in the component's error */
            if (GPU_ERR_TIMEOUT != xs) {
                GPU_ERROR("rank %d: %s: host exchange of round %d failed", c->rank,
                          gpu_engine_what(what), round);
            }
            c->broken = 1;
            return xs;
        }
        any = 0;
        for (int s = 0; s < n; ++s) {
            if (more[s] < 0 && !failed && GPU_OK == st) {
                GPU_ERROR("rank %d: %s: rank %d failed in round %d", c->rank,
                          gpu_engine_what(what), s, round);
            }
            failed |= more[s] < 0;
            any |= more[s] > 0;
        }
        if (failed) {
            st = GPU_OK == st ? GPU_ERR_CUDA : st;
            break;
        }
        st = gpu_paced_pull(plan, c->rank, n, round, chunk, half, &gpu_hs_ops, &ctx);
        if (GPU_OK == st) {
            st = gpu_engine_wait(c, what);
        }
        c->hs_parity ^= 1;
        if (!any) {
            break;
        }
    }
    c->t_submit = gpu_clock_now();
    if (GPU_OK != st) {
        c->broken = 1;
    }
    return st;
}

/* ---- the same rounds without waiting: nonblocking calls -------------------
 *
 * A nonblocking call must not block its start, and its device work must
 * never wait for a peer: a kernel that waits holds SMs that another
 * communicator's kernel may need before that peer can come (ranks may start
 * nonblocking collectives on different communicators in different orders,
 * and run blocking ones on other communicators before they wait).  So a
 * nonblocking call runs the host-paced rounds above, one phase per progress
 * pass: stage, exchange (nonblocking), pull.  The device only copies and
 * folds, and every host wait is a test.
 */
enum { GPU_HS_STAGED, GPU_HS_MET, GPU_HS_PULLED };

struct gpu_engine_hs_op {
    gpu_hs_ctx_t x;
    gpu_xchg_plan_t plan;
    size_t chunk;
    int round, phase, mine, any, failed;
    int *more;
    void *handle;
    cudaEvent_t ev;
    double t0;
    gpu_status_t st;            /* this rank's own failure, told to the others */
};

static gpu_status_t gpu_hs_record(struct gpu_engine_hs_op *o)
{
    gpu_engine_comm_t *c = o->x.c;
    const cudaError_t e = cudaEventRecord(o->ev, c->stream);
    o->t0 = gpu_clock_now();
    if (cudaSuccess != e) {
        GPU_ERROR("rank %d: host-paced round %d: cudaEventRecord: %s", c->rank, o->round,
                  cudaGetErrorString(e));
        return GPU_ERR_CUDA;
    }
    return GPU_OK;
}

static char *gpu_hs_half(gpu_engine_comm_t *c, int s)
{
    return (s == c->rank ? c->scratch : c->peer_base[s]) + c->hs_off +
           (size_t) c->hs_parity * (c->hs_bytes / 2);
}

static void gpu_hs_stage_async(struct gpu_engine_hs_op *o)
{
    gpu_engine_comm_t *c = o->x.c;
    o->mine = 0;
    if (GPU_OK == o->st) {
        o->st = gpu_paced_stage(&o->plan, c->rank, c->nranks, o->round, o->chunk,
                                gpu_hs_half(c, c->rank), &gpu_hs_ops, &o->x, &o->mine);
    }
    if (GPU_OK == o->st) {
        o->st = gpu_hs_record(o);
    }
    o->phase = GPU_HS_STAGED;
}

/* GPU_INPROGRESS while the event is ahead, bounded like gpu_engine_wait */
static gpu_status_t gpu_hs_event(struct gpu_engine_hs_op *o)
{
    gpu_engine_comm_t *c = o->x.c;
    const cudaError_t e = cudaEventQuery(o->ev);
    if (cudaSuccess == e) {
        return GPU_OK;
    }
    if (cudaErrorNotReady != e) {
        GPU_ERROR("rank %d: host-paced round %d: %s", c->rank, o->round, cudaGetErrorString(e));
        return GPU_ERR_CUDA;
    }
    if (gpu_clock_now() - o->t0 > 2.0 * c->p.timeout_s + 5.0) {
        GPU_ERROR("rank %d: host-paced round %d: copies still running after %.0f s", c->rank,
                  o->round, 2.0 * c->p.timeout_s + 5.0);
        return GPU_ERR_TIMEOUT;
    }
    return GPU_INPROGRESS;
}

int gpu_engine_hs_async_takes(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *plan)
{
    return c->hs_bytes > 0 && (NULL == plan || !plan->relay);
}

gpu_status_t gpu_engine_hs_start(gpu_engine_comm_t *c, const gpu_xchg_plan_t *plan, gpu_op_t op,
                                 gpu_dtype_t dt, gpu_engine_req_t *req)
{
    const size_t esize = GPU_XCHG_REDUCE == plan->mode ? gpu_dtype_size(dt) : 1;
    struct gpu_engine_hs_op *o = calloc(1, sizeof(*o));
    gpu_status_t st;

    if (NULL == o || NULL == (o->more = calloc((size_t) c->nranks, sizeof(int)))) {
        free(o);
        return GPU_ERR_NO_MEMORY;
    }
    o->x = (gpu_hs_ctx_t) { .c = c, .op = op, .dt = dt };
    o->plan = *plan;
    o->chunk = gpu_paced_chunk(c->hs_bytes / 2 / (size_t) c->nranks, esize);
    st = gpu_engine_event(c, &o->ev);
    if (GPU_OK == st) {
        st = gpu_engine_order(c);
    }
    if (GPU_OK != st) {
        if (NULL != o->ev) {
            gpu_engine_event_put(c, o->ev);
        }
        free(o->more);
        free(o);
        return st;
    }
    c->t_launch = gpu_clock_now();
    gpu_hs_stage_async(o);
    c->t_submit = gpu_clock_now();
    req->async = o;
    return GPU_OK;
}

static gpu_status_t gpu_hs_advance(struct gpu_engine_hs_op *o)
{
    gpu_engine_comm_t *c = o->x.c;
    gpu_status_t st;

    for (;;) {
        switch (o->phase) {
        case GPU_HS_STAGED:
            st = GPU_OK == o->st ? gpu_hs_event(o) : GPU_OK;
            if (GPU_INPROGRESS == st) {
                return st;
            }
            o->st = GPU_OK == o->st ? st : o->st;
            o->mine = GPU_OK != o->st ? -1 : o->mine;
            st = c->boot->iallgather(c->boot_ctx, &o->mine, o->more, sizeof(int), &o->handle);
            if (GPU_OK != st) {
                return st;
            }
            o->phase = GPU_HS_MET;
            break;
        case GPU_HS_MET:
            st = c->boot->test(c->boot_ctx, o->handle);
            if (GPU_INPROGRESS == st) {
                return st;
            }
            o->handle = NULL;
            if (GPU_OK != st) {
                return st;          /* names the peer in the component */
            }
            o->any = 0;
            for (int s = 0; s < c->nranks; ++s) {
                o->failed |= o->more[s] < 0;
                o->any |= o->more[s] > 0;
            }
            if (o->failed) {
                return GPU_OK != o->st ? o->st : GPU_ERR_CUDA;
            }
            {
                char *half[GPU_MAX_PEERS];
                for (int s = 0; s < c->nranks; ++s) {
                    half[s] = gpu_hs_half(c, s);
                }
                o->st = gpu_paced_pull(&o->plan, c->rank, c->nranks, o->round, o->chunk, half,
                                       &gpu_hs_ops, &o->x);
            }
            if (GPU_OK == o->st) {
                o->st = gpu_hs_record(o);
            }
            if (GPU_OK != o->st) {
                return o->st;
            }
            o->phase = GPU_HS_PULLED;
            break;
        default:
            st = gpu_hs_event(o);
            if (GPU_OK != st) {
                return st;
            }
            c->hs_parity ^= 1;
            if (!o->any) {
                return GPU_OK;
            }
            ++o->round;
            gpu_hs_stage_async(o);
            break;
        }
    }
}

gpu_status_t gpu_engine_hs_step(gpu_engine_comm_t *c, gpu_engine_req_t *req)
{
    struct gpu_engine_hs_op *o = req->async;
    const int prev = gpu_engine_device_push(c);
    const gpu_status_t st = gpu_hs_advance(o);

    gpu_engine_device_pop(c, prev);
    if (GPU_INPROGRESS == st) {
        return st;
    }
    if (GPU_OK != st) {
        c->broken = 1;
    }
    if (GPU_ERR_TIMEOUT != st || NULL == o->handle) {
        gpu_engine_event_put(c, o->ev);
    }
    free(o->more);
    free(o);
    req->async = NULL;
    return st;
}
