/*
 * Channels of the staged inter-node pipeline.
 *
 * Over a transport that cannot take device memory every byte crosses host
 * memory, and over shared memory or TCP each transfer and each fold of a
 * slice is work of one core.  With one thread the pipeline is capped at one
 * core's copy-plus-fold rate (4.7 GB/s busbw for a 64 MiB allreduce over
 * UCX shared memory on 2x H200, against 27.5 for NCCL's staged path), and
 * the device copies overlap only the network, never each other's fold.
 *
 * So a staged call runs on C channels: threads of the communicator, each
 * with a UCX worker and endpoints of its own (ucx_transport/gpu_ucx.h) and
 * fold space of its own.  Slice k belongs to channel k mod C on every rank,
 * and a channel takes its slices in order, so the messages of one channel
 * match by order as they do in one thread.  The calling thread keeps every
 * CUDA call: it queues the device-to-host copy of a slice, hands the slice
 * to its channel once the copy is done (an event), and queues the
 * host-to-device copy and the next slice's copy into the same slot once
 * the channel is done with it; it drains the slices in order, and a slot's
 * refill waits on the GPU for the copy out of it (gpu_hier_stage_down).
 *
 * Channel threads sleep on a condition variable between calls (no core is
 * burnt while the application computes) and spin briefly for the next
 * slice within a call.  Every wait is bounded: the network's own waits by
 * the transport's timeout, the calling thread's by coll_gpu_timeout with
 * the channel and slice it waited for in the message.  After an error the
 * calling thread waits, bounded, for the channels to leave their slots;
 * where one does not, the hierarchy refuses every later call.
 */
#include "hier/gpu_hier_internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/gpu_clock.h"
#include "util/gpu_cuda_check.h"

struct gpu_hier_chan {
    gpu_hier_t *h;
    int idx;
    pthread_t thread;
    int started;
    pthread_mutex_t lock;
    pthread_cond_t cv;
    int quit;
    unsigned long posted;      /* slices handed over, ever (written under lock) */
    unsigned long done;        /* slices finished, ever (by the channel) */
    struct {
        size_t k;
        char *slot;
    } q[GPU_HIER_MAX_SLOTS];
    const gpu_hier_stage_t *s; /* this call's stage and group (under lock) */
    gpu_inter_group_t g;
    gpu_status_t st;           /* first failure of this call (by the channel) */
    double busy_s;             /* this call's time in network steps (by the channel) */
    char *tmp;                 /* fold space */
};

static unsigned long gpu_chan_load(const unsigned long *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void *gpu_chan_main(void *arg)
{
    gpu_hier_chan_t *c = arg;
    unsigned long taken = 0;

    for (;;) {
        /* within a call the next slice comes within microseconds */
        const double spin_until = gpu_clock_now() + 100e-6;
        while (gpu_chan_load(&c->posted) == taken && gpu_clock_now() < spin_until) {
            sched_yield();
        }
        pthread_mutex_lock(&c->lock);
        while (c->posted == taken && !c->quit) {
            pthread_cond_wait(&c->cv, &c->lock);
        }
        if (c->posted == taken) {
            pthread_mutex_unlock(&c->lock);
            break;   /* quit, nothing left */
        }
        const size_t k = c->q[taken % GPU_HIER_MAX_SLOTS].k;
        char *slot = c->q[taken % GPU_HIER_MAX_SLOTS].slot;
        const gpu_hier_stage_t *s = c->s;
        gpu_inter_group_t g = c->g;
        const gpu_status_t before = c->st;
        pthread_mutex_unlock(&c->lock);
        /* after a failure the rest of the call's slices are skipped */
        if (GPU_OK == before) {
            const double t0 = gpu_clock_now();
            const gpu_status_t st = s->net(s->arg, k, slot, &g);
            c->busy_s += gpu_clock_now() - t0;
            if (GPU_OK != st) {
                __atomic_store_n(&c->st, st, __ATOMIC_RELEASE);
            }
        }
        ++taken;
        __atomic_store_n(&c->done, taken, __ATOMIC_RELEASE);
    }
    return NULL;
}

gpu_status_t gpu_hier_chan_start(gpu_hier_t *h)
{
    const int n = h->nchan;
    gpu_status_t st = GPU_OK;

    h->chan = calloc((size_t) n, sizeof(*h->chan));
    if (NULL == h->chan) {
        return GPU_ERR_NO_MEMORY;
    }
    for (int i = 0; i < n; ++i) {
        gpu_hier_chan_t *c = &h->chan[i];
        c->h = h;
        c->idx = i;
        pthread_mutex_init(&c->lock, NULL);
        pthread_cond_init(&c->cv, NULL);
        if (0 != posix_memalign((void **) &c->tmp, 64, h->p.slot_bytes)) {
            c->tmp = NULL;
            GPU_ERROR("rank %d: no %zu bytes of fold space for channel %d", h->rank,
                      h->p.slot_bytes, i);
            st = GPU_ERR_NO_MEMORY;
            break;
        }
        if (0 != pthread_create(&c->thread, NULL, gpu_chan_main, c)) {
            GPU_ERROR("rank %d: could not start channel thread %d of %d", h->rank, i, n);
            st = GPU_ERR_NO_MEMORY;
            break;
        }
        c->started = 1;
    }
    if (GPU_OK != st) {
        gpu_hier_chan_stop(h);
    }
    return st;
}

void gpu_hier_chan_stop(gpu_hier_t *h)
{
    if (NULL == h->chan) {
        return;
    }
    for (int i = 0; i < h->nchan; ++i) {
        gpu_hier_chan_t *c = &h->chan[i];
        if (c->started) {
            pthread_mutex_lock(&c->lock);
            c->quit = 1;
            pthread_cond_signal(&c->cv);
            pthread_mutex_unlock(&c->lock);
            pthread_join(c->thread, NULL);
        }
        pthread_cond_destroy(&c->cv);
        pthread_mutex_destroy(&c->lock);
        free(c->tmp);
    }
    free(h->chan);
    h->chan = NULL;
}

/* slice k to its channel; returns the channel's count that marks it done */
static unsigned long gpu_chan_post(gpu_hier_chan_t *c, size_t k, char *slot)
{
    unsigned long mark;
    pthread_mutex_lock(&c->lock);
    c->q[c->posted % GPU_HIER_MAX_SLOTS].k = k;
    c->q[c->posted % GPU_HIER_MAX_SLOTS].slot = slot;
    mark = c->posted + 1;
    __atomic_store_n(&c->posted, mark, __ATOMIC_RELEASE);
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->lock);
    return mark;
}

/* this call's stage and group on every channel (all idle) */
static void gpu_chan_arm(gpu_hier_t *h, const gpu_inter_group_t *g, const gpu_hier_stage_t *s)
{
    for (int i = 0; i < h->nchan; ++i) {
        gpu_hier_chan_t *c = &h->chan[i];
        pthread_mutex_lock(&c->lock);
        c->s = s;
        c->g = *g;
        c->g.conn = h->chan_net[i];
        c->g.tmp = c->tmp;
        c->st = GPU_OK;
        c->busy_s = 0;
        pthread_mutex_unlock(&c->lock);
    }
}

/* after a failure: every channel out of its slots, bounded */
static void gpu_chan_settle(gpu_hier_t *h)
{
    const double deadline = gpu_clock_now() + h->p.timeout_s + 5.0;
    for (int i = 0; i < h->nchan; ++i) {
        gpu_hier_chan_t *c = &h->chan[i];
        while (gpu_chan_load(&c->done) != gpu_chan_load(&c->posted)) {
            if (gpu_clock_now() > deadline) {
                GPU_ERROR("rank %d: channel %d still in its network step after %.0f s: this "
                          "communicator's inter-node stage is disabled", h->rank, i,
                          h->p.timeout_s + 5.0);
                h->broken = 1;
                return;
            }
            struct timespec ts = { 0, 100000 };
            nanosleep(&ts, NULL);
        }
    }
}

gpu_status_t gpu_hier_pipeline_chan(gpu_hier_t *h, gpu_inter_group_t *g,
                                    const gpu_hier_stage_t *s)
{
    const size_t ns = (size_t) h->p.nslots, nc = (size_t) h->nchan;
    unsigned long mark[GPU_HIER_MAX_SLOTS];
    size_t queued = 0, posted = 0, drained = 0;
    double last = gpu_clock_now(), t_start = last, t_posted = 0;
    gpu_status_t st = GPU_OK;
    cudaError_t e;

    if (h->broken) {
        GPU_ERROR("rank %d: the inter-node stage was disabled by an earlier failure", h->rank);
        return GPU_ERR_NETWORK;
    }
    gpu_chan_arm(h, g, s);
    while (GPU_OK == st && queued < s->nslices && queued < ns) {
        st = gpu_hier_stage_down(h, s, queued++);
    }
    while (GPU_OK == st && drained < s->nslices) {
        int moved = 0;
        /* hand over every slice whose copy down has landed */
        while (posted < queued &&
               cudaErrorNotReady != (e = cudaEventQuery(h->slot_ev[posted % ns]))) {
            if (cudaSuccess != e) {
                GPU_ERROR("rank %d: staging copy of slice %zu: %s", h->rank, posted,
                          cudaGetErrorString(e));
                st = GPU_ERR_CUDA;
                break;
            }
            mark[posted % ns] = gpu_chan_post(&h->chan[posted % nc], posted,
                                              h->slots + (posted % ns) * h->p.slot_bytes);
            ++posted;
            moved = 1;
            t_posted = gpu_clock_now();
        }
        /* in order: a slice the network is done with goes up, its slot refills */
        while (GPU_OK == st && drained < posted &&
               gpu_chan_load(&h->chan[drained % nc].done) >= mark[drained % ns]) {
            st = __atomic_load_n(&h->chan[drained % nc].st, __ATOMIC_ACQUIRE);
            if (GPU_OK == st) {
                st = gpu_hier_stage_up(h, s, drained);
            }
            if (GPU_OK == st && drained + ns < s->nslices) {
                st = gpu_hier_stage_down(h, s, queued++);
            }
            ++drained;
            moved = 1;
        }
        const double now = gpu_clock_now();
        if (moved) {
            last = now;
            continue;
        }
        if (GPU_OK == st && now - last > h->p.timeout_s) {
            GPU_ERROR("rank %d: staged inter-node stage: no progress after %.0f s waiting for %s "
                      "(slice %zu of %zu, channel %zu)", h->rank, h->p.timeout_s,
                      posted == drained ? "a staging copy" : "the network", drained,
                      s->nslices, drained % nc);
            st = GPU_ERR_TIMEOUT;
        }
        /* the channels do the work: a sleep would cost a timer slack (50 us)
         * per slice, so yield the core instead */
        sched_yield();
    }
    if (GPU_OK != st) {
        gpu_chan_settle(h);
        return st;
    }
    st = gpu_hier_stage_end(h);
    if (gpu_log_enabled(20)) {
        /* where a staged call's time went: copies in, network, copies out */
        char busy[16 * GPU_HIER_MAX_CHANNELS];
        size_t off = 0;
        const double t_end = gpu_clock_now();
        for (int i = 0; i < h->nchan && off + 16 < sizeof(busy); ++i) {
            off += (size_t) snprintf(busy + off, sizeof(busy) - off, " %.0f",
                                     h->chan[i].busy_s * 1e6);
        }
        GPU_LOG(20, "rank %d: staged stage, %zu slices of %zu slots: last handed over at %.0f "
                "us, drained at %.0f us, end %.0f us; network us per channel:%s", h->rank,
                s->nslices, ns, (t_posted - t_start) * 1e6, (last - t_start) * 1e6,
                (t_end - t_start) * 1e6, busy);
    }
    return st;
}
