/*
 * Host-paced collectives, for communicators where ranks share a GPU.
 *
 * Without MPS the processes on one GPU get it in time slices, and a kernel
 * that waits for a peer on the same GPU holds its slice until it runs out:
 * with 4 ranks on 2 H200s every launched allreduce took 2.4 ms (OSU
 * osu_allreduce, docs/results/osu_h200x2.log).  Here no device code ever
 * waits for another process.  Each round (schedule in engine/gpu_paced.c)
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
    return c->p.paced >= 0 ? c->p.paced > 0 : gpu_engine_gpu_shared(c);
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
        if (GPU_OK != c->boot->allgather(c->boot_ctx, &mine, more, sizeof(int))) {
            GPU_ERROR("rank %d: %s: host allgather of round %d failed", c->rank,
                      gpu_engine_what(what), round);
            c->broken = 1;
            return GPU_ERR_BOOTSTRAP;
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
