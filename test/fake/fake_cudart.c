/*
 * A stand-in for the CUDA runtime (libcudart.so) on machines without a GPU,
 * for programs written against MPICH's stream API: make check runs them
 * with this library and the driver stand-in (fake_libcuda.c) ahead of the
 * real ones on LD_LIBRARY_PATH.
 *
 * What it keeps of CUDA: a stream is a queue run in order by a thread of
 * its own; device memory is the driver stand-in's (a PROT_NONE view: host
 * code that touches it crashes as on a GPU), reached only by the copies; a
 * capture records the stream's work into a graph that each launch queues
 * again.  There are no kernels: a program that launches one cannot run here.
 * Only what libgpucoll and the stream tests call is provided.
 *
 * Where code that passed here failed on GPUs, the stand-in now does what
 * CUDA is allowed to do (4x H100, docs/results/h100x4_2026-11-26_validation):
 *   - every host function of the process runs on ONE thread (CUDA's
 *     runtime may serialize them so): one that blocks holds back every
 *     later host function of every stream;
 *   - a CUDA call from inside a host function aborts, naming the call
 *     (CUDA forbids it: it may deadlock or fail);
 *   - cudaMemcpy from pageable host memory to the device returns once the
 *     bytes are staged and lands later on the legacy stream, which a
 *     stream made with cudaStreamNonBlocking does not wait for;
 *   - cuStreamWaitValue32 (the driver's stream memory wait) holds a stream
 *     until a 32-bit word reaches a value;
 *   - cudaMemcpyAsync between a stream's device memory and pageable host
 *     memory first waits for the stream's earlier work (to pageable memory
 *     it returns once the copy is done), and while a thread waits so, a
 *     stream or event is made nowhere else in the process: on 4x H100
 *     (docs/results/h100x4_2026-11-27_s12) libgpucoll's progress thread
 *     stopped inside cudaEventCreateWithFlags as long as the application's
 *     thread waited in such a copy queued behind a receive, and went on
 *     when the application synchronized its stream before that copy
 *     instead (GPUCOLL_FAKE_PAGEABLE_LOCK=0: no such wait).
 * Events, pointer attributes and CUDA IPC: fake_cudart_ipc.c.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "fake_cudart.h"

/* a CUDA call from a host function fails at once (FK_API) */
_Thread_local int fk_in_host_fn;

typedef struct {
    fop_t *ops;
    size_t n, cap;
} fops_t;

struct CUgraph_st {
    fops_t ops;
};

struct CUstream_st {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    pthread_t thread;
    fops_t q;
    size_t head;               /* next op to run */
    int busy, quit;
    int blocking;              /* ordered with the legacy stream (no cudaStreamNonBlocking) */
    struct CUgraph_st *capture;
    struct CUstream_st *next_all;
};

/* the process's one host-function thread: a stream that reaches a host
 * function hands it over and waits for it */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    pthread_once_t once;
    cudaHostFn_t fn;
    void *arg;
    unsigned long long posted, done;
} hostq = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_ONCE_INIT };

/* the legacy stream (0): pageable copies to the device land here late */
static struct CUstream_st *legacy;
static pthread_once_t legacy_once = PTHREAD_ONCE_INIT;
/* every stream, for the legacy stream's ordering */
static struct CUstream_st *streams;
static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;
/* pinned host memory (cudaMallocHost): its copies are not staged */
static struct pinned {
    char *p;
    size_t n;
    struct pinned *next;
} *pinned_list;
static pthread_mutex_t pinned_lock = PTHREAD_MUTEX_INITIALIZER;

static struct {
    int (*memcpy_)(cu_ptr_t, cu_ptr_t, size_t);
    int (*memset_)(cu_ptr_t, unsigned char, size_t);
    int (*alloc)(cu_ptr_t *, size_t);
    int (*release)(cu_ptr_t);
    int (*count)(int *);
    int (*init)(unsigned);
    int (*range)(cu_ptr_t *, size_t *, cu_ptr_t);
    int (*ipc_range)(cu_ptr_t, int *, size_t *, size_t *, unsigned long long *);
    int (*info)(size_t *, size_t *);
} drv;

static pthread_once_t drv_once = PTHREAD_ONCE_INIT;

static void drv_load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (NULL == h) {
        return;
    }
    drv.memcpy_ = (int (*)(cu_ptr_t, cu_ptr_t, size_t)) dlsym(h, "cuMemcpy");
    drv.memset_ = (int (*)(cu_ptr_t, unsigned char, size_t)) dlsym(h, "cuMemsetD8_v2");
    drv.alloc = (int (*)(cu_ptr_t *, size_t)) dlsym(h, "cuMemAlloc_v2");
    drv.release = (int (*)(cu_ptr_t)) dlsym(h, "cuMemFree_v2");
    drv.count = (int (*)(int *)) dlsym(h, "cuDeviceGetCount");
    drv.init = (int (*)(unsigned)) dlsym(h, "cuInit");
    drv.range = (int (*)(cu_ptr_t *, size_t *, cu_ptr_t)) dlsym(h, "cuMemGetAddressRange_v2");
    drv.ipc_range = (int (*)(cu_ptr_t, int *, size_t *, size_t *, unsigned long long *))
                    dlsym(h, "fake_cuda_ipc_range");
    drv.info = (int (*)(size_t *, size_t *)) dlsym(h, "cuMemGetInfo_v2");
    if (NULL != drv.init) {
        drv.init(0);
    }
}

static int drv_ready(void)
{
    pthread_once(&drv_once, drv_load);
    return NULL != drv.memcpy_ && NULL != drv.alloc;
}

static void *host_main(void *unused)
{
    (void) unused;
    fk_in_host_fn = 1;
    pthread_mutex_lock(&hostq.lock);
    for (;;) {
        while (hostq.done == hostq.posted || NULL == hostq.fn) {
            pthread_cond_wait(&hostq.cv, &hostq.lock);
        }
        cudaHostFn_t fn = hostq.fn;
        void *arg = hostq.arg;
        pthread_mutex_unlock(&hostq.lock);
        fn(arg);
        pthread_mutex_lock(&hostq.lock);
        hostq.fn = NULL;
        ++hostq.done;
        pthread_cond_broadcast(&hostq.cv);
    }
    return NULL;
}

static void host_start(void)
{
    pthread_t t;
    if (0 != pthread_create(&t, NULL, host_main, NULL)) {
        fprintf(stderr, "CUDA runtime stand-in: no host-function thread\n");
        abort();
    }
    pthread_detach(t);
}

/* one host function at a time for the whole process, in the order the
 * streams reach them; the calling stream waits until it has run */
static void run_host_fn(cudaHostFn_t fn, void *arg)
{
    unsigned long long mine;
    pthread_once(&hostq.once, host_start);
    pthread_mutex_lock(&hostq.lock);
    while (NULL != hostq.fn) {
        pthread_cond_wait(&hostq.cv, &hostq.lock);
    }
    hostq.fn = fn;
    hostq.arg = arg;
    mine = ++hostq.posted;
    pthread_cond_broadcast(&hostq.cv);
    while (hostq.done < mine) {
        pthread_cond_wait(&hostq.cv, &hostq.lock);
    }
    pthread_mutex_unlock(&hostq.lock);
}

/* cuStreamWaitValue32's test: GEQ (0), EQ (1), AND (2), NOR (3) */
static cudaError_t wait_value(const fop_t *o)
{
    const volatile uint32_t *w = o->dst;
    const uint32_t v = (uint32_t) o->value;
    unsigned spins = 0;
    for (;;) {
        const uint32_t x = __atomic_load_n(w, __ATOMIC_ACQUIRE);
        const int ok = 0 == o->flags ? (int32_t) (x - v) >= 0 : 1 == o->flags ? x == v
                       : 2 == o->flags ? 0 != (x & v) : 0 != ~(x | v);
        if (ok) {
            return cudaSuccess;
        }
        if (++spins > 64) {
            sched_yield();
        }
    }
}

/* threads inside a copy to or from pageable memory, waiting for its stream */
static int pageable_waiters;

static int pageable_lock_on(void)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("GPUCOLL_FAKE_PAGEABLE_LOCK");
        on = NULL == e || 0 != atoi(e);
    }
    return on;
}

/* a stream or an event is made once no thread waits in a pageable copy (as
 * the GPU did, top of file); unbounded, as there */
void fk_resource_wait(void)
{
    while (pageable_lock_on() && 0 != __atomic_load_n(&pageable_waiters, __ATOMIC_ACQUIRE)) {
        sched_yield();
    }
}

static cudaError_t run_op(const fop_t *o)
{
    switch (o->kind) {
    case OP_COPY:
        return drv_ready() && 0 == drv.memcpy_((uintptr_t) o->dst, (uintptr_t) o->src, o->n)
               ? cudaSuccess : cudaErrorInvalidValue;
    case OP_SET:
        return drv_ready() && 0 == drv.memset_((uintptr_t) o->dst, (unsigned char) o->value,
                                               o->n) ? cudaSuccess : cudaErrorInvalidValue;
    case OP_WAIT:
        return wait_value(o);
    case OP_EVENT:
        /* n: the record this is; an event passes its records in order */
        __atomic_store_n((unsigned long long *) o->dst, (unsigned long long) o->n,
                         __ATOMIC_RELEASE);
        return cudaSuccess;
    case OP_LATE_COPY: {
        /* staged bytes of a pageable cudaMemcpy: they reach the device a
         * little later, as a DMA on the legacy stream does on a GPU */
        const struct timespec late = { 0, 3000000 };
        nanosleep(&late, NULL);
        const int ok = drv_ready() && 0 == drv.memcpy_((uintptr_t) o->dst, (uintptr_t) o->src,
                                                       o->n);
        free((void *) o->src);
        return ok ? cudaSuccess : cudaErrorInvalidValue;
    }
    default:
        run_host_fn(o->fn, o->arg);
        return cudaSuccess;
    }
}

static int ops_push(fops_t *q, const fop_t *o)
{
    if (q->n == q->cap) {
        size_t cap = q->cap ? 2 * q->cap : 64;
        fop_t *p = realloc(q->ops, cap * sizeof(*p));
        if (NULL == p) {
            return 0;
        }
        q->ops = p;
        q->cap = cap;
    }
    q->ops[q->n++] = *o;
    return 1;
}

static void *stream_main(void *arg)
{
    struct CUstream_st *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (s->head == s->q.n && !s->quit) {
            pthread_cond_wait(&s->cv, &s->lock);
        }
        if (s->head == s->q.n) {
            break;
        }
        fop_t o = s->q.ops[s->head];
        s->busy = 1;
        pthread_mutex_unlock(&s->lock);
        (void) run_op(&o);
        pthread_mutex_lock(&s->lock);
        s->busy = 0;
        if (++s->head == s->q.n) {
            s->head = s->q.n = 0;
        }
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static void legacy_drain(void);
static void blocking_drain(void);

/* the legacy stream (0): its work waits for the blocking streams' and the
 * earlier legacy work, then runs at once on the calling thread */
static cudaError_t submit(cudaStream_t s, const fop_t *o)
{
    if (NULL == s) {
        blocking_drain();
        legacy_drain();
        return run_op(o);
    }
    if (s->blocking && NULL == s->capture) {
        legacy_drain();
    }
    pthread_mutex_lock(&s->lock);
    if (NULL != s->capture) {
        const int ok = ops_push(&s->capture->ops, o);
        pthread_mutex_unlock(&s->lock);
        return ok ? cudaSuccess : cudaErrorMemoryAllocation;
    }
    if (!ops_push(&s->q, o)) {
        pthread_mutex_unlock(&s->lock);
        return cudaErrorMemoryAllocation;
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->lock);
    return cudaSuccess;
}

static struct CUstream_st *stream_new(unsigned flags)
{
    struct CUstream_st *s = calloc(1, sizeof(*s));
    if (NULL == s) {
        return NULL;
    }
    s->blocking = 0 == (flags & cudaStreamNonBlocking);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (0 != pthread_create(&s->thread, NULL, stream_main, s)) {
        free(s);
        return NULL;
    }
    return s;
}

static void legacy_start(void)
{
    legacy = stream_new(cudaStreamNonBlocking);
    if (NULL == legacy) {
        fprintf(stderr, "CUDA runtime stand-in: no legacy stream\n");
        abort();
    }
}

static void stream_drain(struct CUstream_st *s)
{
    pthread_mutex_lock(&s->lock);
    while (s->head != s->q.n || s->busy) {
        pthread_cond_wait(&s->cv, &s->lock);
    }
    pthread_mutex_unlock(&s->lock);
}

/* the legacy stream's work so far is done (a blocking stream's op waits
 * for it, as CUDA orders them) */
static void legacy_drain(void)
{
    pthread_once(&legacy_once, legacy_start);
    stream_drain(legacy);
}

/* work on the legacy stream waits for every blocking stream */
static void blocking_drain(void)
{
    pthread_mutex_lock(&streams_lock);
    for (struct CUstream_st *s = streams; NULL != s; s = s->next_all) {
        if (s->blocking) {
            stream_drain(s);
        }
    }
    pthread_mutex_unlock(&streams_lock);
}

static int is_pinned(const void *p)
{
    int hit = 0;
    pthread_mutex_lock(&pinned_lock);
    for (struct pinned *q = pinned_list; NULL != q && !hit; q = q->next) {
        hit = (const char *) p >= q->p && (const char *) p < q->p + q->n;
    }
    pthread_mutex_unlock(&pinned_lock);
    return hit;
}

static int is_device(const void *p)
{
    cu_ptr_t base = 0;
    size_t size = 0;
    return drv_ready() && NULL != drv.range && 0 == drv.range(&base, &size, (uintptr_t) p);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *ps, unsigned int flags)
{
    FK_API();
    fk_resource_wait();
    struct CUstream_st *s = stream_new(flags);
    if (NULL == s) {
        return cudaErrorMemoryAllocation;
    }
    pthread_mutex_lock(&streams_lock);
    s->next_all = streams;
    streams = s;
    pthread_mutex_unlock(&streams_lock);
    *ps = s;
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *ps)
{
    FK_API();
    return cudaStreamCreateWithFlags(ps, 0);
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    FK_API();
    if (NULL == s) {
        legacy_drain();
        return cudaSuccess;
    }
    stream_drain(s);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    FK_API();
    if (NULL == s) {
        return cudaErrorInvalidValue;
    }
    pthread_mutex_lock(&s->lock);
    s->quit = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    pthread_mutex_lock(&streams_lock);
    for (struct CUstream_st **p = &streams; NULL != *p; p = &(*p)->next_all) {
        if (*p == s) {
            *p = s->next_all;
            break;
        }
    }
    pthread_mutex_unlock(&streams_lock);
    free(s->q.ops);
    free(s);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    FK_API();
    const fop_t o = { .kind = OP_COPY, .dst = dst, .src = src, .n = n };
    cudaError_t e;
    (void) kind;
    if (0 == n || NULL == s || NULL != s->capture || !pageable_lock_on() ||
        (is_device(dst) || is_pinned(dst)) == (is_device(src) || is_pinned(src))) {
        return submit(s, &o);
    }
    /* one side pageable: the copy waits for the stream's earlier work, and
     * the thread with it (CUDA's "API synchronization behavior") */
    __atomic_add_fetch(&pageable_waiters, 1, __ATOMIC_ACQ_REL);
    e = submit(s, &o);
    if (cudaSuccess == e) {
        stream_drain(s);
    }
    __atomic_sub_fetch(&pageable_waiters, 1, __ATOMIC_ACQ_REL);
    return e;
}

/* row by row, in the stream's order (libgpucoll's datatypes with gaps) */
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind,
                              cudaStream_t s)
{
    cudaError_t e = width > dpitch || width > spitch ? cudaErrorInvalidPitchValue : cudaSuccess;
    for (size_t r = 0; r < height && cudaSuccess == e; ++r) {
        e = cudaMemcpyAsync((char *) dst + r * dpitch, (const char *) src + r * spitch, width,
                            kind, s);
    }
    return e;
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t n, cudaStream_t s)
{
    FK_API();
    const fop_t o = { .kind = OP_SET, .dst = dst, .value = value, .n = n };
    return submit(s, &o);
}

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *arg)
{
    FK_API();
    const fop_t o = { .kind = OP_HOST, .fn = fn, .arg = arg };
    return submit(s, &o);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    FK_API();
    const fop_t o = { .kind = OP_COPY, .dst = dst, .src = src, .n = n };
    (void) kind;
    if (n > 0 && is_device(dst) && !is_device(src) && !is_pinned(src)) {
        /* pageable to device: staged now, on the device later (CUDA's "API
         * synchronization behavior": the DMA may not have completed) */
        fop_t late = o;
        void *stage = malloc(n);
        if (NULL == stage) {
            return cudaErrorMemoryAllocation;
        }
        memcpy(stage, src, n);
        late.kind = OP_LATE_COPY;
        late.src = stage;
        blocking_drain();
        pthread_once(&legacy_once, legacy_start);
        return submit(legacy, &late);
    }
    blocking_drain();
    legacy_drain();
    return run_op(&o);
}

cudaError_t cudaMemset(void *dst, int value, size_t n)
{
    FK_API();
    const fop_t o = { .kind = OP_SET, .dst = dst, .value = value, .n = n };
    blocking_drain();
    legacy_drain();
    return run_op(&o);
}

cudaError_t cudaMalloc(void **p, size_t n)
{
    FK_API();
    cu_ptr_t d = 0;
    if (!drv_ready() || 0 != drv.alloc(&d, n ? n : 1)) {
        return cudaErrorMemoryAllocation;
    }
    *p = (void *) (uintptr_t) d;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void);

cudaError_t cudaFree(void *p)
{
    FK_API();
    (void) cudaDeviceSynchronize();
    return NULL == p || (drv_ready() && 0 == drv.release((uintptr_t) p)) ? cudaSuccess
                                                                         : cudaErrorInvalidValue;
}

/* what the driver stand-in's allocations of this process leave free */
cudaError_t cudaMemGetInfo(size_t *pfree, size_t *ptotal)
{
    FK_API();
    return drv_ready() && NULL != drv.info && 0 == drv.info(pfree, ptotal)
           ? cudaSuccess : cudaErrorInvalidValue;
}

/* pinned allocations and frees so far: a test's way to see that a hot
 * path makes none (on a GPU each is slow, and CUDA waits in a free for the
 * device) */
static unsigned long long pinned_allocs, pinned_frees;

unsigned long long fake_cudart_pinned_allocs(void)
{
    return __atomic_load_n(&pinned_allocs, __ATOMIC_RELAXED);
}

unsigned long long fake_cudart_pinned_frees(void)
{
    return __atomic_load_n(&pinned_frees, __ATOMIC_RELAXED);
}

cudaError_t cudaMallocHost(void **p, size_t n)
{
    FK_API();
    struct pinned *q = malloc(sizeof(*q));
    __atomic_add_fetch(&pinned_allocs, 1, __ATOMIC_RELAXED);
    if (NULL == q || 0 != posix_memalign(p, 4096, n ? n : 1)) {
        free(q);
        return cudaErrorMemoryAllocation;
    }
    q->p = *p;
    q->n = n ? n : 1;
    pthread_mutex_lock(&pinned_lock);
    q->next = pinned_list;
    pinned_list = q;
    pthread_mutex_unlock(&pinned_lock);
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int flags)
{
    FK_API();
    (void) flags;
    return cudaMallocHost(p, n);
}

cudaError_t cudaFreeHost(void *p)
{
    FK_API();
    __atomic_add_fetch(&pinned_frees, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&pinned_lock);
    for (struct pinned **q = &pinned_list; NULL != *q; q = &(*q)->next) {
        if ((*q)->p == p) {
            struct pinned *gone = *q;
            *q = gone->next;
            free(gone);
            break;
        }
    }
    pthread_mutex_unlock(&pinned_lock);
    free(p);
    return cudaSuccess;
}

cudaError_t cudaHostGetDevicePointer(void **pdev, void *host, unsigned int flags)
{
    FK_API();
    (void) flags;
    if (!is_pinned(host)) {
        return cudaErrorInvalidValue;
    }
    *pdev = host;   /* unified addressing: the same address */
    return cudaSuccess;
}

/* the driver's stream memory wait (CUresult, CUstream, CUdeviceptr); the
 * stand-in's streams are the runtime's, so it lives here */
int cuStreamWaitValue32_v2(cudaStream_t s, unsigned long long addr, uint32_t value,
                           unsigned int flags)
{
    FK_API();
    const fop_t o = { .kind = OP_WAIT, .dst = (void *) (uintptr_t) addr, .value = (int) value,
                      .flags = flags & 3u };
    if (NULL == s || !is_pinned((void *) (uintptr_t) addr)) {
        return 1;   /* CUDA_ERROR_INVALID_VALUE: here only pinned host words */
    }
    return cudaSuccess == submit(s, &o) ? 0 : 1;
}

int cuStreamWaitValue32(cudaStream_t s, unsigned long long addr, uint32_t value,
                        unsigned int flags)
{
    return cuStreamWaitValue32_v2(s, addr, value, flags);
}

cudaError_t cudaGetDeviceCount(int *n)
{
    FK_API();
    *n = 0;
    if (drv_ready() && NULL != drv.count) {
        drv.count(n);
    }
    return *n > 0 ? cudaSuccess : cudaErrorNoDevice;
}

cudaError_t cudaSetDevice(int dev)
{
    FK_API();
    return 0 == dev ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaGetDevice(int *dev)
{
    FK_API();
    *dev = 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    FK_API();
    pthread_mutex_lock(&streams_lock);
    for (struct CUstream_st *s = streams; NULL != s; s = s->next_all) {
        stream_drain(s);
    }
    pthread_mutex_unlock(&streams_lock);
    legacy_drain();
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
    FK_API();
    return cudaSuccess;
}

cudaError_t cudaPeekAtLastError(void)
{
    FK_API();
    return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t e)
{
    FK_API();
    return cudaSuccess == e ? "no error" : "error (CUDA runtime stand-in)";
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *st)
{
    FK_API();
    *st = NULL != s && NULL != s->capture ? cudaStreamCaptureStatusActive
                                          : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    FK_API();
    (void) mode;
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    FK_API();
    (void) mode;
    if (NULL == s || NULL != s->capture) {
        return cudaErrorIllegalState;
    }
    s->capture = calloc(1, sizeof(*s->capture));
    return NULL != s->capture ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
    FK_API();
    if (NULL == s || NULL == s->capture) {
        return cudaErrorIllegalState;
    }
    *g = s->capture;
    s->capture = NULL;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags)
{
    FK_API();
    (void) flags;
    *e = (cudaGraphExec_t) g;
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s)
{
    FK_API();
    struct CUgraph_st *g = (struct CUgraph_st *) e;
    for (size_t i = 0; i < g->ops.n; ++i) {
        cudaError_t err = submit(s, &g->ops.ops[i]);
        if (cudaSuccess != err) {
            return err;
        }
    }
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e)
{
    FK_API();
    (void) e;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    FK_API();
    free(g->ops.ops);
    free(g);
    return cudaSuccess;
}

/* ---- what fake_cudart_ipc.c uses ----------------------------------------------- */

cudaError_t fk_submit(cudaStream_t s, const fop_t *o)
{
    return submit(s, o);
}

int fk_is_device(const void *p)
{
    return is_device(p);
}

int fk_is_pinned(const void *p)
{
    return is_pinned(p);
}

int fk_drv_range(cu_ptr_t *base, size_t *size, cu_ptr_t p)
{
    return drv_ready() && NULL != drv.range ? drv.range(base, size, p) : 1;
}

int fk_drv_ipc_range(cu_ptr_t p, int *fd, size_t *off, size_t *size, unsigned long long *id)
{
    return drv_ready() && NULL != drv.ipc_range ? drv.ipc_range(p, fd, off, size, id) : 1;
}

/* ---- a stream's state and its waits on events (the staged pipeline's) ----- */

cudaError_t cudaStreamQuery(cudaStream_t s)
{
    FK_API();
    struct CUstream_st *q = NULL != s ? s : legacy;
    int idle;
    if (NULL == q) {
        return cudaSuccess;   /* the legacy stream has had no work */
    }
    pthread_mutex_lock(&q->lock);
    idle = q->head == q->q.n && !q->busy;
    pthread_mutex_unlock(&q->lock);
    return idle ? cudaSuccess : cudaErrorNotReady;
}

/* the stream holds until the event has passed its latest record (the low
 * 32 bits of its count, compared as cuStreamWaitValue32's GEQ does) */
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
    FK_API();
    const unsigned long long target = __atomic_load_n(&e->recorded, __ATOMIC_ACQUIRE);
    const fop_t o = { .kind = OP_WAIT, .dst = &e->passed, .value = (int) (uint32_t) target,
                      .flags = 0 };
    (void) flags;
    return 0 == target ? cudaSuccess : submit(s, &o);
}
