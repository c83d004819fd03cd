/*
 * A stand-in for the CUDA runtime (libcudart.so) on machines without a GPU,
 * for programs written against MPICH's stream API: make check runs them
 * with this library and the driver stand-in (fake_libcuda.c) ahead of the
 * real ones on LD_LIBRARY_PATH.
 *
 * What it keeps of CUDA: a stream is a queue run in order by a thread of
 * its own, so host functions run on a thread other than the application's
 * (where MPI below MPI_THREAD_MULTIPLE may not be called, as on a GPU);
 * device memory is the driver stand-in's (a PROT_NONE view: host code that
 * touches it crashes as on a GPU), reached only by the copies; a capture
 * records the stream's work into a graph that each launch queues again.
 * There are no kernels: a program that launches one cannot run here.
 * Only what libgpucoll and the stream tests call is provided.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

typedef unsigned long long cu_ptr_t;

enum { OP_COPY, OP_SET, OP_HOST };

typedef struct {
    int kind;
    void *dst;
    const void *src;
    size_t n;
    int value;
    cudaHostFn_t fn;
    void *arg;
} fop_t;

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
    struct CUgraph_st *capture;
};

static struct {
    int (*memcpy_)(cu_ptr_t, cu_ptr_t, size_t);
    int (*memset_)(cu_ptr_t, unsigned char, size_t);
    int (*alloc)(cu_ptr_t *, size_t);
    int (*release)(cu_ptr_t);
    int (*count)(int *);
    int (*init)(unsigned);
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
    if (NULL != drv.init) {
        drv.init(0);
    }
}

static int drv_ready(void)
{
    pthread_once(&drv_once, drv_load);
    return NULL != drv.memcpy_ && NULL != drv.alloc;
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
    default:
        o->fn(o->arg);
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

/* the legacy stream (0) runs its work at once */
static cudaError_t submit(cudaStream_t s, const fop_t *o)
{
    if (NULL == s) {
        return run_op(o);
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

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *ps, unsigned int flags)
{
    struct CUstream_st *s = calloc(1, sizeof(*s));
    (void) flags;
    if (NULL == s) {
        return cudaErrorMemoryAllocation;
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (0 != pthread_create(&s->thread, NULL, stream_main, s)) {
        free(s);
        return cudaErrorMemoryAllocation;
    }
    *ps = s;
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *ps)
{
    return cudaStreamCreateWithFlags(ps, 0);
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    if (NULL == s) {
        return cudaSuccess;
    }
    pthread_mutex_lock(&s->lock);
    while (s->head != s->q.n || s->busy) {
        pthread_cond_wait(&s->cv, &s->lock);
    }
    pthread_mutex_unlock(&s->lock);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if (NULL == s) {
        return cudaErrorInvalidValue;
    }
    pthread_mutex_lock(&s->lock);
    s->quit = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    free(s->q.ops);
    free(s);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                            cudaStream_t s)
{
    const fop_t o = { .kind = OP_COPY, .dst = dst, .src = src, .n = n };
    (void) kind;
    return submit(s, &o);
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t n, cudaStream_t s)
{
    const fop_t o = { .kind = OP_SET, .dst = dst, .value = value, .n = n };
    return submit(s, &o);
}

cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *arg)
{
    const fop_t o = { .kind = OP_HOST, .fn = fn, .arg = arg };
    return submit(s, &o);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    const fop_t o = { .kind = OP_COPY, .dst = dst, .src = src, .n = n };
    (void) kind;
    return run_op(&o);
}

cudaError_t cudaMemset(void *dst, int value, size_t n)
{
    const fop_t o = { .kind = OP_SET, .dst = dst, .value = value, .n = n };
    return run_op(&o);
}

cudaError_t cudaMalloc(void **p, size_t n)
{
    cu_ptr_t d = 0;
    if (!drv_ready() || 0 != drv.alloc(&d, n ? n : 1)) {
        return cudaErrorMemoryAllocation;
    }
    *p = (void *) (uintptr_t) d;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    return NULL == p || (drv_ready() && 0 == drv.release((uintptr_t) p)) ? cudaSuccess
                                                                         : cudaErrorInvalidValue;
}

cudaError_t cudaMallocHost(void **p, size_t n)
{
    return 0 == posix_memalign(p, 4096, n ? n : 1) ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int flags)
{
    (void) flags;
    return cudaMallocHost(p, n);
}

cudaError_t cudaFreeHost(void *p)
{
    free(p);
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *n)
{
    *n = 0;
    if (drv_ready() && NULL != drv.count) {
        drv.count(n);
    }
    return *n > 0 ? cudaSuccess : cudaErrorNoDevice;
}

cudaError_t cudaSetDevice(int dev)
{
    return 0 == dev ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaGetDevice(int *dev)
{
    *dev = 0;
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
    return cudaSuccess;
}

cudaError_t cudaPeekAtLastError(void)
{
    return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t e)
{
    return cudaSuccess == e ? "no error" : "error (CUDA runtime stand-in)";
}

cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *st)
{
    *st = NULL != s && NULL != s->capture ? cudaStreamCaptureStatusActive
                                          : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
    (void) mode;
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    (void) mode;
    if (NULL == s || NULL != s->capture) {
        return cudaErrorIllegalState;
    }
    s->capture = calloc(1, sizeof(*s->capture));
    return NULL != s->capture ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
    if (NULL == s || NULL == s->capture) {
        return cudaErrorIllegalState;
    }
    *g = s->capture;
    s->capture = NULL;
    return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags)
{
    (void) flags;
    *e = (cudaGraphExec_t) g;
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s)
{
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
    (void) e;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    free(g->ops.ops);
    free(g);
    return cudaSuccess;
}
