/*
 * Point-to-point enqueue between device buffers of ranks on one node over
 * CUDA IPC: one device-to-device copy, by the receiver's GPU's copy
 * engines over NVLink (or PCIe), no host staging.
 *
 * Why this shape: the receiver's copy needs the sender's address, known
 * only once the message is matched, after both enqueues have returned (an
 * eager call's stream work is issued, a captured one's is in a graph).  So
 * the copy is not stream work of either application stream: the library's
 * progress thread (gpucoll_mpix_prog.c), which may call CUDA as it is not
 * CUDA's host-function thread, issues it on a stream of its own once the
 * message is matched, and the application streams wait on the GPU for
 * flags, as for every other call of the transport:
 *
 *   sender's stream:   host function posts the message, whose bytes are
 *                      (IPC handle, offset, allocation id, pid) instead of
 *                      the payload -> at the wait, waits for the flag that
 *                      the receiver's "done" sets
 *   receiver's stream: host function posts the receive -> at the wait,
 *                      waits for its flag
 *   receiver's progress thread: matches the message through the host
 *                      transport (MPI's order and tags), opens the handle
 *                      (cached per allocation), cudaMemcpyAsync from the
 *                      peer's buffer into the receive buffer, an event;
 *                      when it has passed, writes the pair's "done" slot
 *                      (gcs_recv_done) and the receive's flag
 *
 * A host function runs once the stream's earlier work is done, so the
 * sender's data are in place when the receiver may read them, and the
 * receive buffer's earlier readers are done before the copy writes it.
 * Nothing waits in a host function and nothing calls Open MPI; a captured
 * call replays as it ran (its descriptor and the reference to the
 * sender's allocation live as long as the communicator); every wait is the
 * transport's, bounded by coll_gpu_timeout and naming the peer.  The same
 * progress-thread copy takes a message that came by value from the pinned
 * staging into the receive buffer: the receiver's stream cannot know at
 * enqueue time which of the two the sender chose, and so writes only the
 * bytes that came.  Why not a kernel on the receiver's stream that waits
 * for a "ready" flag and reads the sender's pointer from a pinned
 * descriptor: it would spin on SMs while the peer is late, need device
 * code in this library, and still need the progress thread to open the
 * handle; the copy engines move a large message at the link's rate with
 * no SM.  What it costs: a small message pays the progress thread's round
 * (host function, match, cudaMemcpyAsync, event) before the flag.
 *
 * Who takes which path: each sender decides per message (its buffer has a
 * legacy IPC handle: cudaMalloc'd, not a cudaMallocAsync pool, managed or
 * host memory), among the peers that opened a probe of its at
 * MPIX_Stream_comm_create (a peer that cannot open it answers no there);
 * the receiver takes either.  GPUCOLL_STREAM_IPC=0 turns the path off.
 *
 * The sender's handles are cached per allocation (address and buffer id);
 * the receiver's mappings per (sender pid, allocation base), replaced when
 * the id there changes (the sender freed and allocated again, which MPI
 * allows only after the sends from it completed, i.e. after this
 * process's copies from it are done).  A mapping keeps the sender's freed
 * memory alive, so the sender logs its allocations that are gone (each
 * export checks two cached ones: is the allocation at that address still
 * the one exported? an export replaced in the cache is gone too) and every
 * later message by reference to a peer carries the ids that peer has not
 * been told of (a cursor per peer into the log); the receiver's progress
 * thread lets its mappings of them go as the message arrives, and its
 * application's thread closes them at an enqueue that is not captured
 * while no receive of the process is under way (a close waits for the
 * device's work, 1.9 s behind a stream memory wait on 4x H100, and that
 * work may wait for a copy of the progress thread's).  A peer that gets
 * no more messages by reference from that sender keeps its mappings until
 * the process ends.
 *
 * One handle, one mapping: CUDA gives an allocation freed and made again
 * at the same address and size the same handle (4x H100: a new buffer id,
 * the same 64 bytes), so a mapping is found by (sender, base, handle) and
 * taken back from the closing list rather than opened a second time while
 * its close is pending or under way ("resource already mapped").
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "mpix/gpucoll_mpix_ipc.h"

#define GC_IPC_MAX_DEV 64
#define GC_IPC_GONE_LOG 256   /* freed exports remembered (a slow peer skips older ones) */
#define GC_IPC_CHECKS 2       /* cached exports checked per export */
#define GC_IPC_REAP_BUSY 64   /* mappings to close that a busy process closes anyway */

enum {  /* CUpointer_attribute */
    GC_PA_MEMORY_TYPE = 2, GC_PA_BUFFER_ID = 7, GC_PA_IS_MANAGED = 8, GC_PA_RANGE_START = 11,
    GC_PA_MEMPOOL_HANDLE = 17
};
#define GC_MEMORYTYPE_DEVICE 2u

typedef int (*gc_attrs_fn_t)(unsigned n, int *attrs, void **vals, unsigned long long ptr);

typedef struct {
    uint64_t base, id;
    unsigned char handle[64];
} gc_export_t;

typedef struct {
    int32_t pid;
    uint64_t base, id;
    void *mapped;
    unsigned char handle[64];
} gc_import_t;

static struct {
    pthread_mutex_t lock;
    gc_export_t *ex;
    int nex, capex;
    gc_import_t *im;
    int nim, capim;
    uint64_t gone[GC_IPC_GONE_LOG];   /* ring of freed exports' ids */
    unsigned long long ngone;         /* ids ever logged */
    int check;                        /* the next cached export to check */
    gc_import_t *closing;             /* mappings whose close waits for the application */
    int nclosing, capclosing;
    gc_import_t shut;                 /* the one the application closes now */
    int shutting;
    cudaStream_t streams[GC_IPC_MAX_DEV];   /* the progress thread's, per device */
} gc_ipc = { PTHREAD_MUTEX_INITIALIZER };

static gc_attrs_fn_t gc_attrs_fn;

static void gc_attrs_find(void)
{
    void *h, *p = dlsym(RTLD_DEFAULT, "cuPointerGetAttributes");
    if (NULL == p && NULL != (h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))) {
        p = dlsym(h, "cuPointerGetAttributes");
    }
    gc_attrs_fn = (gc_attrs_fn_t) p;
}

static int gc_ipc_level(void)
{
    static int level = -1;
    if (level < 0) {
        const char *env = getenv("GPUCOLL_STREAM_VERBOSE");
        level = NULL != env ? atoi(env) : 0;
    }
    return level;
}

/* GPUCOLL_STREAM_VERBOSE=2: every mapping opened, taken again and closed */
static int gc_ipc_trace(void)
{
    return gc_ipc_level() >= 2;
}

/* GPUCOLL_STREAM_VERBOSE=3: the progress thread's CUDA calls for a
 * receive, entered and left, so that a run that stops names the call the
 * thread stopped in */
static void gc_call_say(const char *call, int left)
{
    if (gc_ipc_level() >= 3) {
        fprintf(stderr, "gpucoll: pid %d: progress thread %s %s\n", (int) getpid(),
                left ? "left" : "in", call);
    }
}

static unsigned gc_hsum(const unsigned char *h)
{
    unsigned s = 2166136261u;
    for (int i = 0; i < 64; ++i) {
        s = (s ^ h[i]) * 16777619u;
    }
    return s;
}

static void gc_ipc_say(const char *what, int32_t pid, uint64_t base, uint64_t id,
                       const unsigned char *handle, const void *mapped, const char *res)
{
    if (gc_ipc_trace()) {
        fprintf(stderr, "gpucoll: pid %d: IPC %s: pid %d base 0x%llx id %llu handle %08x -> "
                "%p%s%s\n", (int) getpid(), what, (int) pid, (unsigned long long) base,
                (unsigned long long) id, gc_hsum(handle), mapped, res ? ": " : "", res ? res : "");
    }
}

static int gc_ipc_enabled(void)
{
    const char *env = getenv("GPUCOLL_STREAM_IPC");
    return NULL == env || 0 != strcmp(env, "0");
}

/* the allocation holding buf and its id, where it may have an IPC handle */
static int gc_range(const void *buf, uint64_t *base, uint64_t *id)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    unsigned type = 0;
    int managed = 0;
    unsigned long long start = 0, bid = 0;
    void *pool = NULL;
    int attrs[5] = { GC_PA_MEMORY_TYPE, GC_PA_IS_MANAGED, GC_PA_RANGE_START, GC_PA_BUFFER_ID,
                     GC_PA_MEMPOOL_HANDLE };
    void *vals[5] = { &type, &managed, &start, &bid, &pool };

    pthread_once(&once, gc_attrs_find);
    /* an old driver without the pool attribute fails the query: no IPC */
    if (NULL == gc_attrs_fn || NULL == buf ||
        0 != gc_attrs_fn(5, attrs, vals, (unsigned long long) (uintptr_t) buf) ||
        GC_MEMORYTYPE_DEVICE != type || managed || NULL != pool || 0 == start) {
        return 0;
    }
    *base = start;
    *id = bid;
    return 1;
}

/* under the lock: the allocation of export id is gone */
static void gc_gone_log(uint64_t id)
{
    gc_ipc.gone[gc_ipc.ngone++ % GC_IPC_GONE_LOG] = id;
}

/* under the lock: mapping p goes, closed on the application's thread
 * (gc_cuda_reap).  Not here: cudaIpcCloseMemHandle unmaps, and CUDA may
 * wait in it for the device's work, as in cudaFree; on the progress thread
 * that work includes the stream memory waits for flags only this thread
 * sets, and the close need not return (4x H100: test_mpix_stream's halo
 * at 150000 doubles, the first message after the sender freed the buffer
 * of the 5-double one, went no further; so does the CUDA runtime stand-in
 * once its close waits as cudaFree).  Where the list cannot grow the
 * mapping stays open until the process ends. */
static void gc_close_later(const gc_import_t *e)
{
    gc_ipc_say("to close", e->pid, e->base, e->id, e->handle, e->mapped, NULL);
    if (gc_ipc.nclosing == gc_ipc.capclosing) {
        const int cap = gc_ipc.capclosing ? 2 * gc_ipc.capclosing : 16;
        gc_import_t *q = realloc(gc_ipc.closing, (size_t) cap * sizeof(*q));
        if (NULL == q) {
            return;
        }
        gc_ipc.closing = q;
        gc_ipc.capclosing = cap;
    }
    gc_ipc.closing[gc_ipc.nclosing++] = *e;
}

static int gc_same(const gc_import_t *e, const gc_ipc_ref_t *ref)
{
    return e->pid == ref->pid && e->base == ref->base && 0 == memcmp(e->handle, ref->handle, 64);
}

/* a few cached exports whose allocation is no longer there are logged
 * gone and leave the cache (a query each: the cost of an export stays
 * flat however many allocations were shared) */
static void gc_exports_check(void)
{
    pthread_mutex_lock(&gc_ipc.lock);
    for (int k = 0; k < GC_IPC_CHECKS && gc_ipc.nex > 0; ++k) {
        const int i = gc_ipc.check++ % gc_ipc.nex;
        uint64_t base = 0, id = 0;
        if (!gc_range((const void *) (uintptr_t) gc_ipc.ex[i].base, &base, &id) ||
            base != gc_ipc.ex[i].base || id != gc_ipc.ex[i].id) {
            gc_gone_log(gc_ipc.ex[i].id);
            gc_ipc.ex[i] = gc_ipc.ex[--gc_ipc.nex];
        }
    }
    pthread_mutex_unlock(&gc_ipc.lock);
}

/* the ids logged gone since *cursor, at most GC_IPC_GONE_MAX (those older
 * than the log's reach are skipped); the cursor advances past them */
static void gc_gone_take(unsigned long long *cursor, gc_ipc_ref_t *ref)
{
    pthread_mutex_lock(&gc_ipc.lock);
    if (gc_ipc.ngone - *cursor > GC_IPC_GONE_LOG) {
        *cursor = gc_ipc.ngone - GC_IPC_GONE_LOG;
    }
    ref->ngone = 0;
    while (*cursor < gc_ipc.ngone && ref->ngone < GC_IPC_GONE_MAX) {
        ref->gone[ref->ngone++] = gc_ipc.gone[(*cursor)++ % GC_IPC_GONE_LOG];
    }
    pthread_mutex_unlock(&gc_ipc.lock);
}

/* the handle of the allocation at base, cached */
static int gc_handle(uint64_t base, uint64_t id, unsigned char *handle)
{
    cudaIpcMemHandle_t h;
    cudaError_t err;
    int i;

    pthread_mutex_lock(&gc_ipc.lock);
    for (i = 0; i < gc_ipc.nex; ++i) {
        if (gc_ipc.ex[i].base == base && gc_ipc.ex[i].id == id) {
            memcpy(handle, gc_ipc.ex[i].handle, 64);
            pthread_mutex_unlock(&gc_ipc.lock);
            return 1;
        }
    }
    pthread_mutex_unlock(&gc_ipc.lock);
    err = cudaIpcGetMemHandle(&h, (void *) (uintptr_t) base);
    if (cudaSuccess != err) {
        (void) cudaGetLastError();
        return 0;
    }
    memcpy(handle, &h, 64);
    pthread_mutex_lock(&gc_ipc.lock);
    for (i = 0; i < gc_ipc.nex && !(gc_ipc.ex[i].base == base); ++i) {
    }
    if (i == gc_ipc.nex && gc_ipc.nex == gc_ipc.capex) {
        const int cap = gc_ipc.capex ? 2 * gc_ipc.capex : 16;
        gc_export_t *p = realloc(gc_ipc.ex, (size_t) cap * sizeof(*p));
        if (NULL != p) {
            gc_ipc.ex = p;
            gc_ipc.capex = cap;
        }
    }
    if (i < gc_ipc.capex) {
        /* an address freed and allocated again replaces its entry */
        if (i < gc_ipc.nex && gc_ipc.ex[i].id != id) {
            gc_gone_log(gc_ipc.ex[i].id);
        }
        gc_ipc.ex[i].base = base;
        gc_ipc.ex[i].id = id;
        memcpy(gc_ipc.ex[i].handle, handle, 64);
        gc_ipc.nex += i == gc_ipc.nex;
    }
    pthread_mutex_unlock(&gc_ipc.lock);
    return 1;
}

/* while the application captures (in global mode) a query may count as
 * unsafe: the calls on its thread are made in relaxed mode */
static int gc_cuda_export(const void *buf, size_t bytes, unsigned long long *gone_cursor,
                          gc_ipc_ref_t *ref)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    uint64_t base, id;
    int ok;

    (void) cudaThreadExchangeStreamCaptureMode(&mode);
    ok = 0 != bytes && gc_range(buf, &base, &id) && gc_handle(base, id, ref->handle);
    if (ok) {
        gc_exports_check();
    }
    (void) cudaThreadExchangeStreamCaptureMode(&mode);
    if (!ok) {
        return 0;
    }
    ref->base = base;
    ref->id = id;
    ref->offset = (uint64_t) (uintptr_t) buf - base;
    ref->pid = (int32_t) getpid();
    gc_ipc_say("export", ref->pid, base, id, ref->handle, buf, NULL);
    memset(ref->gone, 0, sizeof(ref->gone));
    if (NULL != gone_cursor) {
        gc_gone_take(gone_cursor, ref);
    } else {
        ref->ngone = 0;
    }
    return 1;
}

/* progress thread: the sender freed these; no copy from them is left
 * (MPI lets it free only after its sends from them completed, which was
 * after this process's copies), so their mappings go (closed later, on
 * the application's thread: gc_close_later says why) */
static void gc_cuda_forget(const gc_ipc_ref_t *ref)
{
    const int n = ref->ngone < GC_IPC_GONE_MAX ? ref->ngone : GC_IPC_GONE_MAX;
    if (n <= 0) {
        return;
    }
    pthread_mutex_lock(&gc_ipc.lock);
    for (int i = 0; i < gc_ipc.nim;) {
        gc_import_t *e = &gc_ipc.im[i];
        int gone = 0;
        for (int k = 0; k < n && !gone; ++k) {
            gone = e->pid == ref->pid && e->id == ref->gone[k];
        }
        if (gone && !gc_same(e, ref)) {   /* one this message names again stays */
            gc_close_later(e);
            *e = gc_ipc.im[--gc_ipc.nim];
        } else {
            ++i;
        }
    }
    pthread_mutex_unlock(&gc_ipc.lock);
}

/* application's thread, not capturing: close the mappings that went, one
 * at a time (the progress thread may want one back meanwhile), once no
 * receive is under way (busy: one may be, whose copy the device's work
 * behind the close waits for) or when many wait */
static void gc_cuda_reap(int busy)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    const int n = __atomic_load_n(&gc_ipc.nclosing, __ATOMIC_RELAXED);

    if (0 == n || (busy && n < GC_IPC_REAP_BUSY)) {
        return;
    }
    /* relaxed: another thread's capture in global mode is not broken by it */
    (void) cudaThreadExchangeStreamCaptureMode(&mode);
    pthread_mutex_lock(&gc_ipc.lock);
    while (gc_ipc.nclosing > 0 && !gc_ipc.shutting) {
        gc_ipc.shut = gc_ipc.closing[--gc_ipc.nclosing];
        gc_ipc.shutting = 1;
        pthread_mutex_unlock(&gc_ipc.lock);
        {
            const cudaError_t err = cudaIpcCloseMemHandle(gc_ipc.shut.mapped);
            (void) cudaGetLastError();
            gc_ipc_say("closed", gc_ipc.shut.pid, gc_ipc.shut.base, gc_ipc.shut.id,
                       gc_ipc.shut.handle, gc_ipc.shut.mapped, cudaGetErrorString(err));
        }
        pthread_mutex_lock(&gc_ipc.lock);
        gc_ipc.shutting = 0;
    }
    if (0 == gc_ipc.nclosing) {
        free(gc_ipc.closing);
        gc_ipc.closing = NULL;
        gc_ipc.capclosing = 0;
    }
    pthread_mutex_unlock(&gc_ipc.lock);
    (void) cudaThreadExchangeStreamCaptureMode(&mode);
}

static int gc_cuda_device_of(const void *buf)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    struct cudaPointerAttributes a;
    int dev = 0;

    memset(&a, 0, sizeof(a));
    (void) cudaThreadExchangeStreamCaptureMode(&mode);
    if (cudaSuccess == cudaPointerGetAttributes(&a, buf) &&
        (cudaMemoryTypeDevice == a.type || cudaMemoryTypeManaged == a.type) && a.device >= 0) {
        dev = a.device;
    } else {
        (void) cudaGetLastError();
        if (cudaSuccess != cudaGetDevice(&dev)) {
            dev = 0;
        }
    }
    (void) cudaThreadExchangeStreamCaptureMode(&mode);
    return dev;
}

static cudaError_t gc_open(const unsigned char *handle, void **p)
{
    cudaIpcMemHandle_t h;
    memcpy(&h, handle, 64);
    return cudaIpcOpenMemHandle(p, h, cudaIpcMemLazyEnablePeerAccess);
}

/* progress thread: this process's address of the sender's allocation;
 * NULL with *why NULL: its mapping is being closed, ask again later */
static void *gc_import(const gc_ipc_ref_t *ref, const char **why)
{
    void *p = NULL;
    cudaError_t err;
    int i, k;

    pthread_mutex_lock(&gc_ipc.lock);
    for (i = 0; i < gc_ipc.nim; ++i) {
        gc_import_t *e = &gc_ipc.im[i];
        if (e->pid == ref->pid && e->base == ref->base) {
            if (e->id == ref->id || gc_same(e, ref)) {
                if (e->id != ref->id) {
                    gc_ipc_say("same handle, new id", ref->pid, ref->base, ref->id, ref->handle,
                               e->mapped, NULL);
                }
                e->id = ref->id;   /* the same handle: CUDA's same allocation */
                pthread_mutex_unlock(&gc_ipc.lock);
                return e->mapped;
            }
            /* the sender's allocation there is another one now */
            gc_close_later(e);
            *e = gc_ipc.im[--gc_ipc.nim];
            break;
        }
    }
    for (k = 0; k < gc_ipc.nclosing && !gc_same(&gc_ipc.closing[k], ref); ++k) {
    }
    if (gc_ipc.shutting && gc_same(&gc_ipc.shut, ref)) {
        pthread_mutex_unlock(&gc_ipc.lock);
        *why = NULL;
        return NULL;
    }
    if (gc_ipc.nim == gc_ipc.capim) {
        const int cap = gc_ipc.capim ? 2 * gc_ipc.capim : 16;
        gc_import_t *q = realloc(gc_ipc.im, (size_t) cap * sizeof(*q));
        if (NULL == q) {
            pthread_mutex_unlock(&gc_ipc.lock);
            *why = "no memory for the CUDA IPC mapping cache";
            return NULL;
        }
        gc_ipc.im = q;
        gc_ipc.capim = cap;
    }
    if (k < gc_ipc.nclosing) {   /* still open: taken back, not opened again */
        p = gc_ipc.closing[k].mapped;
        gc_ipc.closing[k] = gc_ipc.closing[--gc_ipc.nclosing];
        gc_ipc_say("taken back", ref->pid, ref->base, ref->id, ref->handle, p, NULL);
        err = cudaSuccess;
    } else {
        gc_call_say("cudaIpcOpenMemHandle", 0);
        err = gc_open(ref->handle, &p);
        gc_call_say("cudaIpcOpenMemHandle", 1);
        gc_ipc_say("open", ref->pid, ref->base, ref->id, ref->handle, p, cudaGetErrorString(err));
    }
    if (cudaSuccess != err) {
        static __thread char text[200];
        int mine = 0;
        for (k = 0; k < gc_ipc.nim; ++k) {
            mine += gc_ipc.im[k].pid == ref->pid;
        }
        (void) cudaGetLastError();
        snprintf(text, sizeof(text), "%s (opening the handle of the sender's allocation at "
                 "0x%llx; this process maps %d of the sender's, %d wait to be closed%s)",
                 cudaGetErrorString(err), (unsigned long long) ref->base, mine,
                 gc_ipc.nclosing, gc_ipc.shutting ? ", one is being closed" : "");
        pthread_mutex_unlock(&gc_ipc.lock);
        *why = text;
        return NULL;
    }
    i = gc_ipc.nim++;
    gc_ipc.im[i] = (gc_import_t) { .pid = ref->pid, .base = ref->base, .id = ref->id,
                                   .mapped = p };
    memcpy(gc_ipc.im[i].handle, ref->handle, 64);
    pthread_mutex_unlock(&gc_ipc.lock);
    return p;
}

/* progress thread: its own stream on dev, made on first use.  Its calls
 * are made in relaxed mode: a capture of another thread does not bar them */
static cudaStream_t gc_stream(int dev, const char **why)
{
    static __thread int relaxed;
    cudaError_t err;

    if (!relaxed) {
        enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
        (void) cudaThreadExchangeStreamCaptureMode(&mode);
        relaxed = 1;
    }
    if (dev < 0 || dev >= GC_IPC_MAX_DEV) {
        *why = "a device ordinal above the library's 64";
        return NULL;
    }
    gc_call_say("cudaSetDevice", 0);
    err = cudaSetDevice(dev);
    gc_call_say("cudaSetDevice", 1);
    if (cudaSuccess == err && NULL == gc_ipc.streams[dev]) {
        err = cudaStreamCreateWithFlags(&gc_ipc.streams[dev], cudaStreamNonBlocking);
    }
    if (cudaSuccess != err) {
        (void) cudaGetLastError();
        *why = cudaGetErrorString(err);
        return NULL;
    }
    return gc_ipc.streams[dev];
}

static int gc_cuda_copy_start(gc_ipc_copy_t *cp, void *dst, const void *src,
                              const gc_ipc_ref_t *ref, size_t bytes, const char **why)
{
    cudaStream_t st = gc_stream(cp->dev, why);
    cudaError_t err;

    if (NULL == st) {
        return -1;
    }
    if (NULL != ref) {
        const char *base = gc_import(ref, why);
        if (NULL == base) {
            return NULL == *why ? 1 : -2;
        }
        src = base + ref->offset;
    }
    if (NULL == cp->event || cp->event_dev != cp->dev) {
        *why = "the copy's event was not made (copy_prepare)";
        return -1;
    }
    gc_call_say("cudaMemcpyAsync", 0);
    err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, st);
    gc_call_say("cudaMemcpyAsync", 1);
    if (cudaSuccess == err) {
        err = cudaEventRecord((cudaEvent_t) cp->event, st);
        gc_call_say("cudaEventRecord", 1);
    }
    if (cudaSuccess != err) {
        (void) cudaGetLastError();
        *why = cudaGetErrorString(err);
        return -1;
    }
    return 0;
}

static int gc_cuda_copy_prepare(gc_ipc_copy_t *cp, const char **why)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaError_t err = cudaSuccess;
    int cur = -1;

    if (NULL != cp->event && cp->event_dev == cp->dev) {
        return 0;
    }
    (void) cudaThreadExchangeStreamCaptureMode(&mode);
    if (NULL != cp->event) {   /* a descriptor used again for another device */
        (void) cudaEventDestroy((cudaEvent_t) cp->event);
        cp->event = NULL;
    }
    if (cudaSuccess == (err = cudaGetDevice(&cur)) && cur != cp->dev) {
        err = cudaSetDevice(cp->dev);
    }
    if (cudaSuccess == err) {
        err = cudaEventCreateWithFlags((cudaEvent_t *) &cp->event, cudaEventDisableTiming);
        cp->event_dev = cp->dev;
    }
    if (cur >= 0 && cur != cp->dev) {
        (void) cudaSetDevice(cur);
    }
    (void) cudaThreadExchangeStreamCaptureMode(&mode);
    if (cudaSuccess != err) {
        cp->event = NULL;
        (void) cudaGetLastError();
        *why = cudaGetErrorString(err);
        return -1;
    }
    return 0;
}

static int gc_cuda_copy_sync(void *dst, const void *src, size_t n, int dev, const char **why)
{
    cudaStream_t st = gc_stream(dev, why);
    cudaError_t err;

    if (NULL == st) {
        return -1;
    }
    err = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, st);
    if (cudaSuccess == err) {
        /* this thread's own stream: its copies wait for nothing else */
        err = cudaStreamSynchronize(st);
    }
    if (cudaSuccess != err) {
        (void) cudaGetLastError();
        *why = cudaGetErrorString(err);
        return -1;
    }
    return 0;
}

static int gc_cuda_warm(int dev, void *dev_word, void *host_word, const char **why)
{
    cudaStream_t st = gc_stream(dev, why);
    cudaEvent_t ev = NULL;
    cudaError_t err;

    if (NULL == st) {
        return -1;
    }
    err = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
    if (cudaSuccess == err) {
        err = cudaMemsetAsync(dev_word, 0, 64, st);
    }
    if (cudaSuccess == err) {
        err = cudaMemcpyAsync(dev_word, host_word, 64, cudaMemcpyDefault, st);
    }
    if (cudaSuccess == err) {
        err = cudaMemcpyAsync(host_word, dev_word, 64, cudaMemcpyDefault, st);
    }
    if (cudaSuccess == err) {
        err = cudaEventRecord(ev, st);
    }
    if (cudaSuccess == err) {
        /* this thread's own stream: its work waits for nothing else */
        err = cudaStreamSynchronize(st);
    }
    if (cudaSuccess == err && cudaSuccess != cudaEventQuery(ev)) {
        err = cudaGetLastError();
        err = cudaSuccess == err ? cudaErrorNotReady : err;
    }
    if (NULL != ev) {
        (void) cudaEventDestroy(ev);
    }
    if (cudaSuccess != err) {
        (void) cudaGetLastError();
        *why = cudaGetErrorString(err);
        return -1;
    }
    return 0;
}

static int gc_cuda_copy_test(gc_ipc_copy_t *cp, const char **why)
{
    const cudaError_t err = cudaEventQuery((cudaEvent_t) cp->event);
    if (cudaSuccess == err) {
        gc_call_say("the copy's cudaEventQuery: done", 1);
        return 1;
    }
    if (cudaErrorNotReady == err) {
        return 0;
    }
    (void) cudaGetLastError();
    *why = cudaGetErrorString(err);
    return -1;
}

static void gc_cuda_copy_free(gc_ipc_copy_t *cp)
{
    if (NULL != cp->event) {
        (void) cudaEventDestroy((cudaEvent_t) cp->event);
        cp->event = NULL;
    }
}

/* a probe of every rank opened by every other: which pairs map */
static int gc_cuda_setup(MPI_Comm comm, unsigned char **ok_out)
{
    struct {
        gc_ipc_ref_t ref;
        int valid;
    } mine, *all = NULL;
    unsigned char *can = NULL, *ok = NULL;
    void *probe = NULL;
    int n, me, ret;

    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    memset(&mine, 0, sizeof(mine));
    all = calloc((size_t) n, sizeof(*all));
    can = calloc((size_t) n, 1);
    ok = calloc((size_t) n, 1);
    if (NULL == all || NULL == can || NULL == ok) {
        free(all);
        free(can);
        free(ok);
        return MPI_ERR_NO_MEM;
    }
    /* every rank takes part, also those that do not offer the path */
    if (gc_ipc_enabled() && cudaSuccess == cudaMalloc(&probe, 256)) {
        mine.valid = gc_cuda_export(probe, 256, NULL, &mine.ref);
    }
    (void) cudaGetLastError();
    ret = MPI_Allgather(&mine, (int) sizeof(mine), MPI_BYTE, all, (int) sizeof(mine), MPI_BYTE,
                        comm);
    for (int q = 0; MPI_SUCCESS == ret && q < n; ++q) {
        void *p = NULL;
        if (q == me || !mine.valid || !all[q].valid) {
            continue;
        }
        if (cudaSuccess == gc_open(all[q].ref.handle, &p)) {
            can[q] = 1;
            gc_ipc_say("setup probe opened and closed", all[q].ref.pid, all[q].ref.base,
                       all[q].ref.id, all[q].ref.handle, p, NULL);
            (void) cudaIpcCloseMemHandle(p);
        }
        (void) cudaGetLastError();
    }
    /* rank q learns whether this rank maps q's buffers; every probe is
     * closed before any is freed */
    if (MPI_SUCCESS == ret) {
        ret = MPI_Alltoall(can, 1, MPI_BYTE, ok, 1, MPI_BYTE, comm);
    }
    if (NULL != probe) {
        (void) cudaFree(probe);
    }
    free(all);
    free(can);
    if (MPI_SUCCESS != ret) {
        free(ok);
        return ret;
    }
    *ok_out = ok;
    return MPI_SUCCESS;
}

const gc_ipc_ops_t gc_ipc_cuda_ops = {
    .name = "CUDA IPC",
    .setup = gc_cuda_setup,
    .export_buf = gc_cuda_export,
    .warm = gc_cuda_warm,
    .device_of = gc_cuda_device_of,
    .forget = gc_cuda_forget,
    .reap = gc_cuda_reap,
    .copy_prepare = gc_cuda_copy_prepare,
    .copy_start = gc_cuda_copy_start,
    .copy_sync = gc_cuda_copy_sync,
    .copy_test = gc_cuda_copy_test,
    .copy_free = gc_cuda_copy_free,
};
