/*
 * libgpucoll's progress thread: where the host transport's calls wait.
 *
 * Why: CUDA may run every host function of a process on one thread of its
 * own and forbids CUDA calls there.  A host function that waited for a
 * peer (as the transport's did until now) held back every later host
 * function of every stream of the process; where two ranks reach their
 * parts in another order (two streams, or the peer's stream still
 * behind), each waits for the other until coll_gpu_timeout.
 *
 * How: a call's host function only resets the call's flag (a 32-bit word
 * in pinned, device-mapped memory) and hands the call to this thread; the
 * stream then waits on the GPU for the flag (cuStreamWaitValue32, which
 * holds no SM and is captured into graphs like any stream work) before
 * the copies back.  This thread steps every handed-over call of every
 * communicator in turn (gcs_coll_test, gcs_wait_test: looks, never waits),
 * and sets a call's flag once it is done or failed (the next enqueue on
 * that communicator reports the error).  Where the driver has no stream
 * wait (or GPUCOLL_STREAM_WAIT=0) a second host function waits for the
 * flag on the host, as before: correct for one stream per process.
 * This thread is not CUDA's: it may call CUDA, and does for the
 * point-to-point copies into receive buffers (gpucoll_mpix_p2p_ipc.c).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpix/gpucoll_mpix_int.h"
#include "mpix/gpucoll_mpix_shm.h"

#define GC_FLAGS_PER_PAGE 64
#define GC_FLAG_STRIDE 64   /* a flag per cache line */
#define GC_WAIT_VALUE_EQ 1u  /* CU_STREAM_WAIT_VALUE_EQ */

typedef int (*gc_waitv_t)(void *stream, unsigned long long addr, uint32_t value,
                          unsigned int flags);

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    pthread_once_t once;
    int started;
    gc_job_t *posted;          /* handed over, not yet taken by the thread */
} gc_prog = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_ONCE_INIT, 0, NULL };

/* one step of j: GCS_PENDING, MPI_SUCCESS or an error */
static int gc_job_step(gc_job_t *j)
{
    if (GC_JOB_COLL == j->kind) {
        return gcs_coll_test(j->t, j->sc, &j->st, j->fn);
    }
    if (GC_JOB_STEP == j->kind) {
        return j->step(j);
    }
    return gcs_wait_test(j->t, j->m, j->n, j->since, j->fn);
}

static void gc_job_finish(gc_job_t *j, int ret)
{
    if (MPI_SUCCESS != ret) {
        gc_comm_set_error(j->owner, ret);
    }
    /* the stream (or a host-side waiter) goes on after this store only */
    __atomic_store_n(j->flag, 1u, __ATOMIC_RELEASE);
}

static void *gc_prog_main(void *unused)
{
    gc_job_t *mine = NULL;
    unsigned spins = 0;
    (void) unused;

    for (;;) {
        int moved = 0;
        pthread_mutex_lock(&gc_prog.lock);
        while (NULL == mine && NULL == gc_prog.posted) {
            pthread_cond_wait(&gc_prog.cv, &gc_prog.lock);
        }
        /* take the posted ones, keeping the order they came in */
        while (NULL != gc_prog.posted) {
            gc_job_t *j = gc_prog.posted, **tail = &mine;
            gc_prog.posted = j->next;
            while (NULL != *tail) {
                tail = &(*tail)->next;
            }
            j->next = NULL;
            *tail = j;
        }
        pthread_mutex_unlock(&gc_prog.lock);
        for (gc_job_t **p = &mine; NULL != *p;) {
            gc_job_t *j = *p;
            const int ret = gc_job_step(j);
            if (GCS_PENDING == ret) {
                p = &j->next;
                continue;
            }
            *p = j->next;   /* off the list before its flag lets the stream on */
            gc_job_finish(j, ret);
            moved = 1;
        }
        if (moved) {
            spins = 0;
        } else {
            gcs_pause(&spins);
        }
    }
    return NULL;
}

static void gc_prog_start_once(void)
{
    pthread_t th;
    if (0 != pthread_create(&th, NULL, gc_prog_main, NULL)) {
        return;   /* gc_prog_start says so */
    }
    pthread_detach(th);
    gc_prog.started = 1;
}

int gc_prog_start(const char *fn)
{
    pthread_once(&gc_prog.once, gc_prog_start_once);
    return gc_prog.started ? MPI_SUCCESS
                           : gc_fail(MPI_ERR_OTHER, fn, "no progress thread (pthread_create)");
}

/* in a host function: reset the flag and hand j over; no CUDA, no wait */
void gc_prog_post(gc_job_t *j)
{
    memset(&j->st, 0, sizeof(j->st));
    j->since = gcs_clock();
    __atomic_store_n(j->flag, 0u, __ATOMIC_RELEASE);
    pthread_mutex_lock(&gc_prog.lock);
    j->next = gc_prog.posted;
    gc_prog.posted = j;
    pthread_cond_signal(&gc_prog.cv);
    pthread_mutex_unlock(&gc_prog.lock);
}

/* The thread's first CUDA work on a device.  Why at MPIX_Stream_comm_create:
 * on 4x H100 (docs/results/h100x4_2026-11-27_s11, test_mpix_types, a
 * process that launched no kernel) the first receive this thread was to
 * copy never completed, in every configuration, while every receive that
 * needed no copy of its passed.  The peer's thread, alive, timed out
 * waiting for this rank's next message, which this thread, the one that
 * carries the rank's messages, never sent on; nor did it reach the CUDA
 * IPC open that follows its stream's creation.  So the thread's first CUDA
 * call (its stream) waited, likely for the device to be idle, which it
 * never is while the application's stream waits on the GPU for this very
 * thread: CUDA's first use of a module may wait so (the s9 halo's first
 * kernel launch did).  Not yet run on a GPU.  Bounded: past limit_s the
 * communicator is made anyway, with a warning. */
static struct {
    int done[64];
    int held;                             /* a timeout left the job with the thread */
    gc_warm_fn_t work;
    void *dev_word[64], *host_word[64];   /* kept: a late step may still use them */
} gc_warm;

static int gc_warm_step(gc_job_t *j)
{
    const int dev = (int) (intptr_t) j->arg;
    const char *why = NULL;
    if (0 != gc_warm.work(dev, gc_warm.dev_word[dev], gc_warm.host_word[dev], &why)) {
        fprintf(stderr, "libgpucoll: the progress thread's first CUDA work on device %d "
                "failed: %s\n", dev, why);
    }
    return MPI_SUCCESS;
}

void gc_prog_warm(gc_warm_fn_t work, int rank, double limit_s)
{
    static volatile uint32_t flag;
    static gc_job_t job;
    const double limit = limit_s > 0 ? limit_s : 60.0;
    int dev = -1;
    double t0;
    if (cudaSuccess != cudaGetDevice(&dev) || dev < 0 || dev >= 64) {
        (void) cudaGetLastError();
        return;
    }
    if (gc_warm.done[dev] || gc_warm.held) {
        return;
    }
    if (NULL == gc_warm.dev_word[dev] && cudaSuccess != cudaMalloc(&gc_warm.dev_word[dev], 64)) {
        gc_warm.dev_word[dev] = NULL;
    }
    if (NULL == gc_warm.host_word[dev] &&
        cudaSuccess != cudaMallocHost(&gc_warm.host_word[dev], 64)) {
        gc_warm.host_word[dev] = NULL;
    }
    if (NULL == gc_warm.dev_word[dev] || NULL == gc_warm.host_word[dev] ||
        MPI_SUCCESS != gc_prog_start("MPIX_Stream_comm_create")) {
        (void) cudaGetLastError();
        return;   /* the first receive's copy does it, as before */
    }
    gc_warm.work = work;
    memset(&job, 0, sizeof(job));
    job.kind = GC_JOB_STEP;
    job.step = gc_warm_step;
    job.arg = (void *) (intptr_t) dev;
    job.fn = "MPIX_Stream_comm_create";
    job.flag = &flag;
    gc_prog_post(&job);
    t0 = gcs_clock();
    while (1u != __atomic_load_n(&flag, __ATOMIC_ACQUIRE)) {
        unsigned spins = 1000;   /* past spinning: this waits for CUDA, not a peer */
        if (gcs_clock() - t0 > limit) {
            fprintf(stderr, "MPIX_Stream_comm_create: rank %d: libgpucoll's progress thread did "
                    "not finish its first CUDA work on device %d within %.0f s; point-to-point "
                    "receives may wait for it\n", rank, dev, gcs_clock() - t0);
            gc_warm.held = 1;
            return;
        }
        gcs_pause(&spins);
    }
    gc_warm.done[dev] = 1;
    if (gc_verbose()) {
        fprintf(stderr, "gpucoll: rank %d: the progress thread's first CUDA work on device %d "
                "took %.1f ms\n", rank, dev, (gcs_clock() - t0) * 1e3);
    }
}

/* the host-side wait of the fallback: a host function that waits (see
 * the top of the file for why this is the fallback only) */
static void gc_flag_wait_fn(void *arg)
{
    const volatile uint32_t *flag = arg;
    unsigned spins = 0;
    while (1u != __atomic_load_n(flag, __ATOMIC_ACQUIRE)) {
        gcs_pause(&spins);
    }
}

static gc_waitv_t gc_waitv_fn;

static void gc_waitv_find(void)
{
    const char *env = getenv("GPUCOLL_STREAM_WAIT");
    void *p, *h;
    if (NULL != env && 0 == strcmp(env, "0")) {
        return;
    }
    /* the runtime loads the driver privately: look in the process, then
     * open the driver (already loaded: no second copy) */
    p = dlsym(RTLD_DEFAULT, "cuStreamWaitValue32_v2");
    if (NULL == p && NULL != (h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))) {
        p = dlsym(h, "cuStreamWaitValue32_v2");
        p = NULL != p ? p : dlsym(h, "cuStreamWaitValue32");
    }
    gc_waitv_fn = (gc_waitv_t) p;
}

/* the driver's stream wait, NULL where there is none */
static gc_waitv_t gc_waitv(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, gc_waitv_find);
    return gc_waitv_fn;
}

int gc_prog_stream_wait(cudaStream_t st, gc_job_t *j, const char *fn)
{
    static int said;
    gc_waitv_t w = gc_waitv();
    if (NULL != w && 0 == w(st, (unsigned long long) (uintptr_t) j->flag_dev, 1u,
                            GC_WAIT_VALUE_EQ)) {
        return MPI_SUCCESS;
    }
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) {
        fprintf(stderr, "%s: no stream memory wait (cuStreamWaitValue32%s): enqueued calls "
                "wait in a host function, which holds back the process's other streams' "
                "host functions while it waits\n", fn, NULL == w ? " not found" : " failed");
    }
    return cudaSuccess == cudaLaunchHostFunc(st, gc_flag_wait_fn, (void *) j->flag)
           ? MPI_SUCCESS : gc_fail(MPI_ERR_OTHER, fn, cudaGetErrorString(cudaGetLastError()));
}

/* ---- flags: pinned words the GPU can wait on ---------------------------------- */

struct gc_flags {
    pthread_mutex_t lock;
    void **pages;
    int npages;
    volatile uint32_t **free_stack;   /* room for every flag: puts never allocate */
    int nfree;
};

int gc_flag_get(gc_flags_t **pool, volatile uint32_t **flag, void **flag_dev)
{
    gc_flags_t *f = *pool;
    volatile uint32_t *got = NULL;

    if (NULL == f) {
        f = calloc(1, sizeof(*f));
        if (NULL == f) {
            return MPI_ERR_NO_MEM;
        }
        pthread_mutex_init(&f->lock, NULL);
        *pool = f;
    }
    pthread_mutex_lock(&f->lock);
    if (0 == f->nfree) {
        const int cap = (f->npages + 1) * GC_FLAGS_PER_PAGE;
        void **pages = realloc(f->pages, (size_t) (f->npages + 1) * sizeof(*pages));
        volatile uint32_t **stack = NULL;
        char *page = NULL;
        if (NULL != pages) {
            f->pages = pages;
            stack = realloc((void *) f->free_stack, (size_t) cap * sizeof(*stack));
        }
        if (NULL != stack) {
            f->free_stack = stack;
            page = gc_pinned_mapped(GC_FLAGS_PER_PAGE * GC_FLAG_STRIDE);
        }
        if (NULL != page) {
            memset(page, 0, GC_FLAGS_PER_PAGE * GC_FLAG_STRIDE);
            f->pages[f->npages++] = page;
            for (int i = GC_FLAGS_PER_PAGE - 1; i >= 0; --i) {
                f->free_stack[f->nfree++] = (volatile uint32_t *) (page + i * GC_FLAG_STRIDE);
            }
        }
    }
    if (f->nfree > 0) {
        got = f->free_stack[--f->nfree];
    }
    pthread_mutex_unlock(&f->lock);
    if (NULL == got) {
        return MPI_ERR_NO_MEM;
    }
    if (cudaSuccess != cudaHostGetDevicePointer(flag_dev, (void *) got, 0)) {
        (void) cudaGetLastError();
        gc_flag_put(f, got);
        return MPI_ERR_NO_MEM;
    }
    *flag = got;
    return MPI_SUCCESS;
}

/* any thread, a host function too: no CUDA, no allocation */
void gc_flag_put(gc_flags_t *f, volatile uint32_t *flag)
{
    pthread_mutex_lock(&f->lock);
    f->free_stack[f->nfree++] = flag;
    pthread_mutex_unlock(&f->lock);
}

void gc_flags_free(gc_flags_t *f)
{
    if (NULL == f) {
        return;
    }
    for (int i = 0; i < f->npages; ++i) {
        (void) cudaFreeHost(f->pages[i]);
    }
    free(f->pages);
    free((void *) f->free_stack);
    pthread_mutex_destroy(&f->lock);
    free(f);
}
