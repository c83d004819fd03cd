/*
 * Host side of the persistent low-latency engine (protocol and its
 * reasons in kernels/gpu_ll.h): which calls it takes, the mailbox, and the
 * launch / park / relaunch state machine.
 *
 * Every rank must run the same calls through it in the same order (the LL
 * flags count collective calls), so the choice uses only what every rank
 * knows alike: blocking or not, the collective's agreed largest pair
 * (plan->ll_bytes), the element size, and settings agreed at setup.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/gpu_cuda_wait.h"
#include "engine/gpu_engine_internal.h"
#include "engine/gpu_plan.h"
#include "util/gpu_clock.h"
#include "util/gpu_cuda_drv.h"

gpu_status_t gpu_engine_pk_setup(gpu_engine_comm_t *c)
{
    gpu_status_t st = GPU_OK;
    int blocks = c->p.persist_blocks;

    c->pk_on = 0;
    if (0 == c->pk_bytes) {
        GPU_LOG(10, "rank %d: persistent engine off (%s)", c->rank,
                c->threads_any ? "MPI_THREAD_MULTIPLE"
                : gpu_engine_pk_wanted(c) ? "coll_gpu_persist" : "ranks share a GPU without MPS");
        return GPU_OK;
    }
    GPU_CUDA_CHECK(cudaHostAlloc((void **) &c->pk_mbox, sizeof(*c->pk_mbox), cudaHostAllocMapped),
                   out);
    memset((void *) c->pk_mbox, 0, sizeof(*c->pk_mbox));
    GPU_CUDA_CHECK(cudaHostGetDevicePointer((void **) &c->pk_mbox_dev, (void *) c->pk_mbox, 0),
                   out_free);
    /* at most half of the smallest GPU's SMs: the blocks must all be
     * resident at once, and the application keeps the other half */
    if (c->pk_sms > 1 && blocks > c->pk_sms / 2) {
        blocks = c->pk_sms / 2;
    }
    c->pk_blocks = blocks < 1 ? 1 : (blocks > GPU_LL_MAX_BLOCKS ? GPU_LL_MAX_BLOCKS : blocks);
    c->pk_lines = c->p.persist_max_bytes / GPU_LL_PAYLOAD;
    /* whole lines; a pair under it stays in one block */
    c->pk_piece = c->p.persist_piece_bytes / GPU_LL_PAYLOAD * GPU_LL_PAYLOAD;
    if (c->pk_piece < GPU_LL_PAYLOAD) {
        c->pk_piece = GPU_LL_PAYLOAD;
    }
    c->pk_on = 1;
    GPU_LOG(10, "rank %d: persistent engine up to %zu bytes, %d blocks, pieces of at least %zu "
            "bytes, idle exit %.0f us", c->rank, c->pk_lines * GPU_LL_PAYLOAD, c->pk_blocks,
            c->pk_piece, c->p.persist_idle_us);
    return GPU_OK;

out_free:
    (void) cudaFreeHost((void *) c->pk_mbox);
    c->pk_mbox = NULL;
out:
    return st;
}

int gpu_engine_pk_takes(const gpu_engine_comm_t *c, int mode, size_t ll_bytes, gpu_dtype_t dt)
{
    const size_t es = gpu_dtype_size(dt);
    if (!c->pk_on || 0 == ll_bytes || ll_bytes > c->pk_lines * GPU_LL_PAYLOAD ||
        (GPU_XCHG_REDUCE == mode && ll_bytes > c->p.persist_reduce_max_bytes)) {
        return 0;
    }
    /* a line carries 8 bytes: an element must not straddle two */
    return GPU_XCHG_COPY == mode || (es <= GPU_LL_PAYLOAD && 0 == GPU_LL_PAYLOAD % es);
}

int gpu_engine_pk_fits(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *plan, gpu_dtype_t dt)
{
    return !plan->relay && gpu_engine_pk_takes(c, plan->mode, plan->ll_bytes, dt);
}

static void gpu_pk_write(gpu_engine_comm_t *c, const uint32_t *w, int nw, unsigned long long d)
{
    const uint64_t tag = (uint64_t) (uint32_t) d << 32;
    /* every word carries the tag, so the order of these stores is free */
    for (int i = 0; i < nw; ++i) {
        c->pk_mbox->desc[i] = tag | w[i];
    }
}

static gpu_status_t gpu_pk_launch(gpu_engine_comm_t *c, unsigned long long start, int one_shot)
{
    gpu_ll_args_t a;
    gpu_status_t st;

    memset(&a, 0, sizeof(a));
    memcpy(a.peer_base, c->peer_base, sizeof(a.peer_base));
    a.region_off = c->pk_off;
    a.slot_lines = c->pk_lines;
    a.min_piece = c->pk_piece;
    a.nranks = c->nranks;
    a.rank = c->rank;
    a.stamps = gpu_log_enabled(10);
    a.gen = ++c->pk_gen;
    a.start = start;
    a.idle_ns = (unsigned long long) (c->p.persist_idle_us * 1e3);
    /* when the application works between calls: long enough for a second
     * call right behind (two dot products), short next to a relaunch */
    a.idle_short_ns = (unsigned long long) (c->p.persist_leave_us * 1e3);
    a.idle_short_ns = a.idle_ns < a.idle_short_ns ? a.idle_ns : a.idle_short_ns;
    a.timeout_ns = (unsigned long long) (c->p.timeout_s * 1e9);
    a.mbox = c->pk_mbox_dev;
    a.err = c->err_dev;
    a.one_shot = one_shot > 0;
    st = gpu_kernel_ll_launch(&a, one_shot > 0 ? one_shot : c->pk_blocks, c->p.nthreads, c->stream);
    c->pk_alive = GPU_OK == st;
    c->pk_one_shot = GPU_OK == st && one_shot > 0;
    return st;
}

/* The application's time since our last blocking call, its GPU work on
 * the default stream included where the call waited for it: a moving
 * mean; 1 when it is above coll_gpu_persist_gap_us. */
static int gpu_pk_gap_note(gpu_engine_comm_t *c)
{
    if (c->p.persist_gap_us <= 0 || c->pk_end <= 0) {
        return 0;
    }
    c->pk_gap_us = 0.5 * c->pk_gap_us + 0.5 * (gpu_clock_now() - c->pk_end) * 1e6;
    return c->pk_gap_us > c->p.persist_gap_us;
}

int gpu_engine_app_busy(const gpu_engine_comm_t *c)
{
    return c->pk_on && c->p.persist_gap_us > 0 && c->pk_gap_us > c->p.persist_gap_us;
}

/*
 * A large call beside an application that works between calls: the
 * resident kernel's lines (16 bytes per 8 of data, through a scratch
 * area) slowed the application's next kernel by 3-10% next to a 20 us
 * triad from 256 KiB per peer, where the launched kernels cost it nothing
 * measurable and the loop no time (2x H100, docs/results); back to back
 * the resident kernel stays (twice as fast there).  Every rank must choose
 * alike, so the choice waits for what all posted for this call.  Only
 * where the launched path needs no area it does not have yet (big: the
 * large areas, which every rank got or refused in one earlier call alike):
 * a communicator that runs small calls keeps its small memory.
 */
gpu_status_t gpu_engine_pk_busy(gpu_engine_comm_t *c, size_t ll_bytes, int big, int *resident)
{
    gpu_status_t st;

    if (!*resident || 0 == c->p.persist_busy_min_bytes || ll_bytes < c->p.persist_busy_min_bytes ||
        (big && GPU_BIG_READY != c->big_state)) {
        return GPU_OK;
    }
    if (c->kind_busy < 0 && NULL != c->kind_ops) {
        st = gpu_engine_kind_settle(c);   /* sets kind_busy */
        if (GPU_OK != st) {
            return st;
        }
    }
    if (c->kind_busy > 0) {
        *resident = 0;
        /* it does not run through the resident kernel: measure here */
        (void) gpu_pk_gap_note(c);
        c->pk_busy_calls++;
    }
    GPU_LOG(20, "rank %d: call %llu, %zu bytes: %s (busy: %d, here %d)", c->rank,
            c->pk_call_seq - 1, ll_bytes, *resident ? "resident kernel" : "launched kernels",
            c->kind_busy, gpu_engine_app_busy(c));
    return GPU_OK;
}

/* Did the kernel quit before taking command d? */
static int gpu_pk_left_behind(const gpu_engine_comm_t *c, unsigned long long d)
{
    const uint64_t ew = c->pk_mbox->exit_word;
    return (unsigned) (ew >> 32) == c->pk_gen && (int32_t) ((uint32_t) ew - (uint32_t) d) < 0;
}

void gpu_engine_pk_park(gpu_engine_comm_t *c)
{
    uint32_t w[GPU_LL_DESC_WORDS];
    gpu_xchg_plan_t none;
    const gpu_ll_cmd_info_t quit = { .cmd = GPU_LL_CMD_QUIT, .op = GPU_OP_SUM, .dt = GPU_DT_U8,
                                     .gen = c->pk_gen };
    int nw;

    if (!c->pk_alive) {
        return;
    }
    memset(&none, 0, sizeof(none));
    nw = gpu_plan_ll_encode(&none, c->nranks, &quit, w);
    gpu_pk_write(c, w, nw, ++c->pk_dseq);
    c->pk_alive = 0;
}

static uint64_t gpu_pk_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

/*
 * The kernel writes a command's stamps after its done word, so the host
 * takes them at its next post (post_ns), which also closes the host's own
 * leg: from seeing the last call done to posting this one (the return to
 * the application, its loop, MPI and this component's routing).
 * %globaltimer and the host's realtime clock differ by an offset: the
 * legs host to GPU and GPU to host each carry it, their sum does not.
 */
static void gpu_pk_account(gpu_engine_comm_t *c, unsigned long long last, uint64_t post_ns)
{
    volatile uint64_t *t = c->pk_mbox->stamp;
    double *s = c->pk_span;
    if (0 == c->pk_seen_ns || c->pk_mbox->stamp_cmd != last) {
        return;
    }
    s[0] += ((double) t[0] - (double) c->pk_post_ns) * 1e-3;
    for (int i = 1; i < GPU_LL_STAMPS; ++i) {
        s[i] += ((double) t[i] - (double) t[i - 1]) * 1e-3;
    }
    s[GPU_LL_STAMPS] += ((double) c->pk_seen_ns - (double) t[GPU_LL_STAMPS - 1]) * 1e-3;
    s[GPU_LL_STAMPS + 1] += c->pk_wait_us;
    s[GPU_LL_STAMPS + 2] += ((double) post_ns - (double) c->pk_seen_ns) * 1e-3;
    ++c->pk_stamped;
}

/*
 * May this call start before the peers' memory kinds are known?  Only where
 * its completion proves them: every peer sends this rank lines, which a
 * peer on the host path never does, so no rank finishes it unless all
 * passed device memory; and no output lands on an input still to be sent,
 * so a dropped call leaves its inputs for the staged path that runs it
 * instead (a fold writes a line only once every source's line is in).
 */
static int gpu_pk_may_guess(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *p)
{
    for (int q = 0; q < c->nranks; ++q) {
        const int heard = GPU_XCHG_COPY == p->mode
                              ? p->recv_len[q] > 0
                              : p->red_len > 0 && q >= p->red_lo && q <= p->red_hi;
        if (q != c->rank && !heard) {
            return 0;
        }
    }
    return GPU_XCHG_REDUCE == p->mode || !p->in_place;
}

/* A peer took the host path: the kernel drops command d (its blocks give
 * up waiting for lines that never come) and leaves; nothing of the call
 * runs any more, and the slots forget it (gpu_plan_ll_slots_drop). */
static gpu_status_t gpu_pk_drop(gpu_engine_comm_t *c, gpu_engine_what_t *what,
                                const gpu_xchg_plan_t *plan, unsigned long long d)
{
    const double deadline = gpu_clock_now() + c->p.timeout_s + 2.0;
    cudaError_t e;

    c->pk_mbox->cancel = d;
    gpu_engine_pk_park(c);   /* blocks done or idle leave too */
    for (unsigned spins = 1; cudaErrorNotReady == (e = cudaStreamQuery(c->stream)); ++spins) {
        if (gpu_clock_now() > deadline) {
            GPU_ERROR("rank %d: %s: persistent kernel did not drop the call in %.0f s", c->rank,
                      gpu_engine_what(what), c->p.timeout_s + 2.0);
            c->broken = 1;
            return GPU_ERR_TIMEOUT;
        }
        if (0 == (spins & 1023)) {
            gpu_engine_wait_progress(c, spins);
        }
    }
    c->pk_alive = 0;
    c->pk_one_shot = 0;
    if (cudaSuccess != e || c->err_host->raised) {
        /* a timeout or a fault of its own came first */
        return gpu_engine_wait(c, what);
    }
    gpu_plan_ll_slots_drop(&c->pk_slots, plan, c->rank, c->nranks);
    ++c->pk_dropped;
    GPU_LOG(20, "rank %d: %s: a peer passed host memory, call dropped for the staged path",
            c->rank, gpu_engine_what(what));
    return GPU_ERR_UNSUPPORTED;
}

/* Spin until the busy blocks report command d (blocking calls only). */
static gpu_status_t gpu_pk_wait(gpu_engine_comm_t *c, gpu_engine_what_t *what,
                                const gpu_xchg_plan_t *plan, uint32_t *w, int nw,
                                unsigned long long d, int busy)
{
    const double limit = 2.0 * c->p.timeout_s + 5.0, deadline = gpu_clock_now() + limit;
    int ended = 0;
    for (unsigned spins = 1;; ++spins) {
        int b = 0;
        while (b < busy && c->pk_mbox->done[b] >= d) {
            ++b;
        }
        if (b == busy) {
            c->kind_ops = NULL;   /* done: every peer's lines came */
            if (gpu_log_enabled(10)) {
                c->pk_seen_ns = gpu_pk_realtime_ns();
                c->pk_wait_us = (gpu_clock_now() - c->t_submit) * 1e6;
            }
            return GPU_OK;
        }
        if (gpu_pk_left_behind(c, d)) {
            /* it went idle just before the command arrived; the command
             * names the next generation before that one can read it */
            w[GPU_LL_W_GEN] = c->pk_gen + 1;
            gpu_pk_write(c, w, nw, d);
            gpu_status_t st = gpu_pk_launch(c, d, 0);
            if (GPU_OK != st) {
                return st;
            }
            ended = 0;
            continue;
        }
        if (NULL != c->kind_ops && 0 == (spins & 255)) {
            /* started before the kinds were known; a call this small is
             * done long before the first look */
            int all_dev = 1;
            const gpu_status_t st = c->kind_ops->peek(c->kind_ctx, &all_dev);
            if (GPU_OK == st) {
                c->kind_ops = NULL;
                if (!all_dev) {
                    return gpu_pk_drop(c, what, plan, d);
                }
            } else if (GPU_INPROGRESS != st) {
                /* the board cannot say: the call must not run on here */
                c->kind_ops = NULL;
                (void) gpu_pk_drop(c, what, plan, d);
                return st;
            }
        }
        if (0 != (spins & 1023)) {
            continue;
        }
        gpu_engine_wait_progress(c, spins);
        if (c->err_host->raised || gpu_clock_now() > deadline) {
            /* blocks still polling must leave too; the kernel's own report
             * names the peer and gpu_engine_wait logs it */
            gpu_engine_pk_park(c);
            if (c->err_host->raised) {
                return gpu_engine_wait(c, what);
            }
            GPU_ERROR("rank %d: %s: persistent kernel did not answer in %.0f s", c->rank,
                      gpu_engine_what(what), limit);
            c->broken = 1;
            return GPU_ERR_TIMEOUT;
        }
        const cudaError_t e = cudaStreamQuery(c->stream);
        if (cudaSuccess == e && !ended) {
            /* it may have finished our command, or left it behind, between
             * the checks above and this query: look once more */
            ended = 1;
            continue;
        }
        if (cudaErrorNotReady != e) {
            /* gone without the exit word: an error, or blocks that timed out */
            gpu_engine_pk_park(c);
            if (cudaSuccess == e && !c->err_host->raised) {
                GPU_ERROR("rank %d: %s: persistent kernel ended without finishing", c->rank,
                          gpu_engine_what(what));
                c->broken = 1;
                return GPU_ERR_CUDA;
            }
            return gpu_engine_wait(c, what);
        }
    }
}

/* Managed memory may be resident in host memory, where the CPU reads it
 * without this GPU in between: then the kernel fences at system scope
 * before it reports.  A collective's receive buffer is one allocation, so
 * its lowest address stands for all of it. */
static int gpu_pk_cpu_reads_output(const gpu_xchg_plan_t *p, int rank, int n)
{
    const char *lo = NULL;
    if (p->red_len > 0 && p->red_lo <= p->red_hi) {
        lo = p->red_out;
    }
    if (p->self_len > 0 && p->self_src != p->self_dst && (NULL == lo || p->self_dst < lo)) {
        lo = p->self_dst;
    }
    for (int q = 0; q < n; ++q) {
        if (q != rank && p->recv_len[q] > 0 && GPU_XCHG_COPY == p->mode &&
            (NULL == lo || p->recv_dst[q] < lo)) {
            lo = p->recv_dst[q];
        }
    }
    return NULL != lo && GPU_MEM_DEVICE != gpu_drv_mem_kind(lo, NULL, NULL);
}

/* Flags repeat every 2^31 sequences: at the first call of each 2^30 every
 * rank zeroes its slots, then all meet, so no stale line can ever carry a
 * live flag.  Every rank reaches this at the same call; nothing is in
 * flight (each rank's earlier calls are complete or dropped, and what
 * peers wrote to us we read or will never read). */
static gpu_status_t gpu_pk_scrub(gpu_engine_comm_t *c)
{
    char dummy = 0, *all = malloc((size_t) c->nranks);
    gpu_status_t st = GPU_OK;

    if (NULL == all) {
        return GPU_ERR_NO_MEMORY;
    }
    gpu_engine_pk_park(c);
    st = gpu_cuda_stream_wait(c->stream, 2.0 * c->p.timeout_s + 5.0, c->rank,
                              "persistent engine: parking before the scrub");
    if (GPU_OK != st) {
        goto out;
    }
    GPU_CUDA_CHECK(cudaMemsetAsync(c->scratch + c->pk_off + GPU_LL_SLOTS_OFF, 0,
                                   c->pk_bytes - GPU_LL_SLOTS_OFF, c->stream), out);
    st = gpu_cuda_stream_wait(c->stream, 2.0 * c->p.timeout_s + 5.0, c->rank,
                              "persistent engine: scrubbing its slots");
    if (GPU_OK != st) {
        goto out;
    }
    if (GPU_OK != c->boot->allgather(c->boot_ctx, &dummy, all, 1)) {
        GPU_ERROR("rank %d: persistent engine: scrub barrier failed", c->rank);
        st = GPU_ERR_BOOTSTRAP;
    }
    GPU_LOG(10, "rank %d: persistent engine slots zeroed at call %llu", c->rank, c->pk_seq);
out:
    free(all);
    return st;
}

gpu_status_t gpu_engine_pk_run(gpu_engine_comm_t *c, gpu_engine_what_t *what,
                               const gpu_xchg_plan_t *plan, gpu_op_t op, gpu_dtype_t dt)
{
    uint32_t w[GPU_LL_DESC_WORDS];
    unsigned long long wait_seq[GPU_MAX_PEERS];
    int wait_blocks[GPU_MAX_PEERS];
    const int busy = gpu_plan_ll_busy_blocks(plan, c->rank, c->nranks, c->pk_blocks, c->pk_piece);
    /* numbered by the caller where ranks may skip calls (gpu_engine_kind_call) */
    const unsigned long long seq = 0 != c->pk_call_seq ? c->pk_call_seq : c->pk_seq + 1;
    c->pk_call_seq = 0;   /* one engine call per number: never reused */
    const unsigned epoch = (unsigned) (seq >> 30);
    gpu_ll_cmd_info_t info = { .cmd = GPU_LL_CMD_WORK, .op = op, .dt = dt, .seq = seq, .busy = busy, .wait_seq = wait_seq,
                               .wait_blocks = wait_blocks };
    unsigned long long d;
    gpu_status_t st;
    int nw;

    c->t_launch = gpu_clock_now();
    if (NULL != c->kind_ops && (0 == busy || epoch != c->pk_epoch || !gpu_pk_may_guess(c, plan))) {
        st = gpu_engine_kind_settle(c);
        if (GPU_OK != st) {
            return st;
        }
    }
    c->pk_seq = seq;
    ++c->pk_runs;
    GPU_LOG(20, "rank %d: %s: resident kernel, sequence %llu", c->rank, gpu_engine_what(what), seq);
    if (epoch != c->pk_epoch) {
        /* every rank that runs this call crosses here: the kinds are
         * agreed above, so the scrub's meeting has all of them */
        c->pk_epoch = epoch;
        st = gpu_pk_scrub(c);
        if (GPU_OK != st) {
            c->broken = 1;
            return st;
        }
    }
    /* a slot is rewritten only after every reader block of its last call
     * acked, or the call in between proved it */
    gpu_plan_ll_slots(&c->pk_slots, plan, c->rank, c->nranks, c->pk_blocks, c->pk_piece, seq,
                      wait_seq, wait_blocks);
    if (0 == busy) {
        /* nothing for this rank; the others skip our share too */
        c->t_submit = c->t_launch;
        return GPU_OK;
    }
    if (c->p.order_legacy) {
        /* prior work of the application on the legacy stream first */
        const gpu_status_t ws = gpu_cuda_stream_wait(cudaStreamLegacy,
                                                     2.0 * c->p.timeout_s + 5.0, c->rank,
                                                     "the application's work on the default "
                                                     "stream before a collective");
        if (GPU_OK != ws) {
            return ws;
        }
    }
    info.sys_fence = gpu_pk_cpu_reads_output(plan, c->rank, c->nranks);
    /* where the application works long between calls, blocks polling
     * through it would hold SMs its kernels want */
    info.leave = gpu_pk_gap_note(c);
    c->pk_leaves += (unsigned long long) info.leave;
    d = ++c->pk_dseq;
    if (!c->pk_alive || gpu_pk_left_behind(c, d)) {
        /* the application works between calls: launch only the blocks
         * this call has work for, gone the moment it is done, so no SM is
         * held while the application's next kernel starts */
        st = gpu_pk_launch(c, d, info.leave && c->p.persist_one_shot ? busy : 0);
        if (GPU_OK != st) {
            return st;
        }
    }
    info.gen = c->pk_gen;
    nw = gpu_plan_ll_encode(plan, c->nranks, &info, w);
    if (gpu_log_enabled(10)) {
        const uint64_t now = gpu_pk_realtime_ns();
        gpu_pk_account(c, d - 1, now);
        c->pk_seen_ns = 0;
        c->pk_post_ns = now;
    }
    gpu_pk_write(c, w, nw, d);
    c->t_submit = gpu_clock_now();
    st = gpu_pk_wait(c, what, plan, w, nw, d, busy);
    if (c->pk_one_shot) {
        /* every block returned after this command (or on an error) */
        c->pk_alive = 0;
        c->pk_one_shot = 0;
    }
    c->pk_end = gpu_clock_now();
    return st;
}

void gpu_engine_pk_release(gpu_engine_comm_t *c)
{
    if (c->pk_on) {
        /* a launch per call here would mean the idle exit is too short */
        const double n = c->pk_stamped > 0 ? (double) c->pk_stamped : 1.0;
        char line[512];
        int len = 0;
        for (int i = 0; i < GPU_LL_STAMPS + 3 && len < (int) sizeof(line) - 32; ++i) {
            len += snprintf(line + len, sizeof(line) - (size_t) len, " %.2f", c->pk_span[i] / n);
        }
        GPU_LOG(10, "rank %d: persistent engine ran %llu calls (%llu dropped for a host "
                "peer, %llu large ones left to launched kernels for a busy rank) with %u "
                "launches (%llu told to leave soon); mean us of %llu: host post "
                "to seen, GPU phases (gpu_ll.h), done to seen by host, post to done seen, done "
                "seen to next post:%s", c->rank, c->pk_runs, c->pk_dropped, c->pk_busy_calls, c->pk_gen,
                c->pk_leaves, c->pk_stamped, line);
    }
    if (NULL != c->pk_mbox) {
        (void) cudaFreeHost((void *) c->pk_mbox);
        c->pk_mbox = NULL;
    }
    c->pk_on = 0;
}
