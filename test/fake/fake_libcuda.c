/*
 * A stand-in for the CUDA driver on machines without a GPU (CI).  One
 * device, and no context in a thread until it sets one or allocates: so
 * coll/gpu accepts every communicator as on a GPU host and make check runs
 * its selection, module enable, entry points and request wrappers.
 *
 * cuMemAlloc's memory is what the CPU sees of a GPU's: a PROT_NONE view of
 * a memfd, so that a host load or store faults here where it would on a
 * GPU host, reached only by the driver's copies through a second, writable
 * view.  A device-buffer path that passes in CI touches device memory only
 * through the driver.  Freed ranges are reused and their pages given back
 * (tests allocate in loops).  The driver's legacy-IPC attribute stays 0,
 * so coll/gpu's IPC paths stay off; the runtime stand-in's IPC calls map an
 * allocation into another process through fake_cuda_ipc_range.
 *
 * No cuGetProcAddress, nor anything else: the CUDA runtime linked into the
 * component keeps failing to initialise here, and whatever reaches for
 * more of the driver declines, as with a broken driver.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef unsigned long long cu_ptr_t;    /* CUdeviceptr */

enum {  /* CUresult */
    CU_OK = 0, CU_INVALID_VALUE = 1, CU_OUT_OF_MEMORY = 2, CU_INVALID_DEVICE = 101,
    CU_INVALID_CONTEXT = 201, CU_NOT_FOUND = 500
};
enum {  /* CUpointer_attribute */
    CU_PA_CONTEXT = 1, CU_PA_MEMORY_TYPE = 2, CU_PA_DEVICE_POINTER = 3, CU_PA_HOST_POINTER = 4,
    CU_PA_P2P_TOKENS = 5, CU_PA_SYNC_MEMOPS = 6, CU_PA_BUFFER_ID = 7, CU_PA_IS_MANAGED = 8,
    CU_PA_DEVICE_ORDINAL = 9, CU_PA_IS_LEGACY_CUDA_IPC_CAPABLE = 10, CU_PA_RANGE_START_ADDR = 11,
    CU_PA_RANGE_SIZE = 12, CU_PA_MAPPED = 13, CU_PA_MEMPOOL_HANDLE = 17, CU_PA_MAPPING_SIZE = 18,
    CU_PA_MAPPING_BASE_ADDR = 19, CU_PA_MEMORY_BLOCK_ID = 20
};
#define CU_MEMORYTYPE_DEVICE 2u

#define ARENA_BYTES (4ull << 30)   /* sparse: only pages written cost memory */
#define ARENA_ALIGN 256            /* cuMemAlloc's documented alignment */

/* one range of the arena, in address order; id 0: free */
struct seg {
    size_t off, len, size;      /* len: rounded to ARENA_ALIGN; size: as asked */
    unsigned long long id;
    struct seg *next;
};

static struct {
    pthread_mutex_t lock;
    int state;                  /* 0: not yet opened, 1: ready, -1: failed */
    char *dev;                  /* what cuMemAlloc hands out: PROT_NONE */
    char *back;                 /* the same pages, writable, for the copies */
    int fd;
    size_t page;
    struct seg *head;
    unsigned long long last_id; /* ids are never reused, as CUDA's BUFFER_IDs */
    size_t used;                /* bytes of live allocations (cuMemGetInfo) */
} arena = { PTHREAD_MUTEX_INITIALIZER, 0, NULL, NULL, -1, 4096, NULL, 0, 0 };

/* the primary context: only its address matters */
static int fake_primary;
#define FAKE_CTX ((void *) &fake_primary)

/* current per thread, as in the driver (one context: no stack to keep) */
static _Thread_local void *ctx_current;

/* under arena.lock; the first allocation pays for the mappings, so that a
 * process that never allocates (every MPI test on host buffers) has none */
static int arena_open(void)
{
    static struct seg all = { 0, ARENA_BYTES, 0, 0, NULL };    /* stays the head */

    if (0 != arena.state) {
        return arena.state > 0;
    }
    arena.state = -1;
    arena.fd = memfd_create("fake_cuda_device", MFD_CLOEXEC);
    if (arena.fd < 0 || 0 != ftruncate(arena.fd, (off_t) ARENA_BYTES)) {
        return 0;
    }
    arena.dev = mmap(NULL, ARENA_BYTES, PROT_NONE, MAP_SHARED | MAP_NORESERVE, arena.fd, 0);
    arena.back = mmap(NULL, ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                      arena.fd, 0);
    if (MAP_FAILED == arena.dev || MAP_FAILED == arena.back) {
        return 0;
    }
    arena.head = &all;
    arena.page = (size_t) sysconf(_SC_PAGESIZE);
    arena.state = 1;
    return 1;
}

static int in_arena(cu_ptr_t p)
{
    return arena.state > 0 && p >= (uintptr_t) arena.dev && p - (uintptr_t) arena.dev < ARENA_BYTES;
}

/* under arena.lock: the live allocation holding p (and the range before
 * it, for cuMemFree), NULL for host memory or a freed range of the arena */
static struct seg *arena_find(cu_ptr_t p, struct seg **prev)
{
    const size_t off = (size_t) (p - (uintptr_t) arena.dev);
    struct seg *s = NULL, *before = NULL;

    if (in_arena(p)) {
        for (s = arena.head; NULL != s && off >= s->off + s->len; s = s->next) {
            before = s;
        }
    }
    if (NULL != prev) {
        *prev = before;
    }
    return (NULL != s && 0 != s->id && off - s->off < s->size) ? s : NULL;
}

/* s and its successor are both free */
static void seg_absorb_next(struct seg *s)
{
    struct seg *n = s->next;
    s->len += n->len;
    s->next = n->next;
    free(n);
}

/* where the CPU may touch [p, p+n): 1 device (*at in the backing view),
 * 0 host (p itself), -1 in the arena but beyond one live allocation (the
 * real driver's invalid argument, not a wild write into a neighbour) */
static int reach(cu_ptr_t p, size_t n, char **at)
{
    struct seg *s;
    int r = 0;

    pthread_mutex_lock(&arena.lock);
    *at = (char *) (uintptr_t) p;
    if (in_arena(p)) {
        const size_t off = (size_t) (p - (uintptr_t) arena.dev);
        s = arena_find(p, NULL);
        r = (NULL == s || n > s->off + s->size - off) ? -1 : 1;
        *at = arena.back + off;
    }
    pthread_mutex_unlock(&arena.lock);
    return r;
}

/* want_*: 1 must be device memory, 0 must be host memory, -1 either */
static int copy(cu_ptr_t dst, int want_dst, cu_ptr_t src, int want_src, size_t n)
{
    char *d = NULL, *s = NULL;
    const int kd = reach(dst, n, &d), ks = reach(src, n, &s);

    if (kd < 0 || ks < 0 || (want_dst >= 0 && kd != want_dst) ||
        (want_src >= 0 && ks != want_src) || (n > 0 && (0 == dst || 0 == src))) {
        return CU_INVALID_VALUE;
    }
    if (n > 0) {
        memmove(d, s, n);
    }
    return CU_OK;
}

int cuInit(unsigned flags)
{
    (void) flags;
    return CU_OK;
}

int cuDeviceGetCount(int *count)
{
    *count = 1;
    return CU_OK;
}

int cuDeviceGet(int *device, int ordinal)
{
    *device = 0;
    return 0 == ordinal ? CU_OK : CU_INVALID_DEVICE;
}

int cuDevicePrimaryCtxRetain(void **pctx, int dev)
{
    *pctx = FAKE_CTX;
    return 0 == dev ? CU_OK : CU_INVALID_DEVICE;
}

int cuDevicePrimaryCtxRelease_v2(int dev)
{
    return 0 == dev ? CU_OK : CU_INVALID_DEVICE;
}

int cuDevicePrimaryCtxRelease(int dev)
{
    return cuDevicePrimaryCtxRelease_v2(dev);
}

int cuCtxSetCurrent(void *ctx)
{
    if (NULL != ctx && FAKE_CTX != ctx) {
        return CU_INVALID_CONTEXT;
    }
    ctx_current = ctx;
    return CU_OK;
}

int cuCtxPushCurrent_v2(void *ctx)
{
    return NULL == ctx ? CU_INVALID_VALUE : cuCtxSetCurrent(ctx);
}

/* without one, gpu_drv_mem_kind answers "host" without asking further */
int cuCtxGetCurrent(void **ctx)
{
    *ctx = ctx_current;
    return CU_OK;
}

/* every copy and memset here is done when it returns */
int cuCtxSynchronize(void)
{
    return CU_OK;
}

int cuStreamSynchronize(void *stream)
{
    (void) stream;
    return CU_OK;
}

/* SYNC_MEMOPS (the only attribute coll/gpu sets) is always on here */
int cuPointerSetAttribute(const void *value, int attr, cu_ptr_t ptr)
{
    (void) value, (void) attr, (void) ptr;
    return CU_OK;
}

int cuMemAlloc_v2(cu_ptr_t *dptr, size_t bytes)
{
    const size_t len = (bytes + ARENA_ALIGN - 1) & ~(size_t) (ARENA_ALIGN - 1);
    struct seg *s = NULL, *rest = malloc(sizeof(*rest));

    if (NULL == dptr || 0 == bytes || len < bytes) {
        free(rest);
        return CU_INVALID_VALUE;
    }
    pthread_mutex_lock(&arena.lock);
    if (NULL != rest && arena_open()) {     /* first fit */
        for (s = arena.head; NULL != s && (0 != s->id || s->len < len); s = s->next) {
        }
    }
    if (NULL != s && s->len > len) {
        *rest = (struct seg) { s->off + len, s->len - len, 0, 0, s->next };
        s->next = rest;
        s->len = len;
        rest = NULL;
    }
    if (NULL != s) {
        s->size = bytes;
        s->id = ++arena.last_id;
        arena.used += s->len;
        *dptr = (uintptr_t) (arena.dev + s->off);
        ctx_current = FAKE_CTX;     /* as cudaMalloc makes the primary one current */
    }
    pthread_mutex_unlock(&arena.lock);
    free(rest);
    return NULL == s ? CU_OUT_OF_MEMORY : CU_OK;
}

int cuMemFree_v2(cu_ptr_t dptr)
{
    struct seg *prev, *s;
    size_t lo, hi;

    pthread_mutex_lock(&arena.lock);
    s = arena_find(dptr, &prev);
    if (NULL == s || (uintptr_t) (arena.dev + s->off) != dptr) {
        pthread_mutex_unlock(&arena.lock);
        return CU_INVALID_VALUE;
    }
    s->id = 0;
    arena.used -= s->len;
    lo = s->off & ~(arena.page - 1);
    hi = (s->off + s->len + arena.page - 1) & ~(arena.page - 1);
    if (NULL != s->next && 0 == s->next->id) {
        seg_absorb_next(s);
    }
    if (NULL != prev && 0 == prev->id) {
        s = prev;
        seg_absorb_next(s);
    }
    /* the whole pages now free: their memory goes back to the system */
    lo = (lo > s->off ? lo : s->off + arena.page - 1) & ~(arena.page - 1);
    hi = (hi < s->off + s->len ? hi : s->off + s->len) & ~(arena.page - 1);
    if (lo < hi) {
        (void) fallocate(arena.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t) lo,
                         (off_t) (hi - lo));
    }
    pthread_mutex_unlock(&arena.lock);
    return CU_OK;
}

/* the device's memory as this process's allocations leave it (one
 * process per device: a CPU test sums what its ranks hold); freed bytes
 * count as free at once, as cuMemFree's do */
int cuMemGetInfo_v2(size_t *pfree, size_t *ptotal)
{
    if (NULL == pfree || NULL == ptotal) {
        return CU_INVALID_VALUE;
    }
    pthread_mutex_lock(&arena.lock);
    *ptotal = ARENA_BYTES;
    *pfree = ARENA_BYTES - arena.used;
    pthread_mutex_unlock(&arena.lock);
    return CU_OK;
}

int cuMemGetAddressRange_v2(cu_ptr_t *pbase, size_t *psize, cu_ptr_t dptr)
{
    struct seg *s;

    pthread_mutex_lock(&arena.lock);
    s = arena_find(dptr, NULL);
    if (NULL != s && NULL != pbase) {
        *pbase = (uintptr_t) (arena.dev + s->off);
    }
    if (NULL != s && NULL != psize) {
        *psize = s->size;
    }
    pthread_mutex_unlock(&arena.lock);
    return NULL != s ? CU_OK : CU_NOT_FOUND;
}

/* not CUDA's: where the allocation holding p lies in the device memory's
 * file, for the runtime stand-in's cudaIpcGetMemHandle (a process of the
 * same user opens the file through /proc/PID/fd/FD) */
int fake_cuda_ipc_range(cu_ptr_t p, int *fd, size_t *off, size_t *size, unsigned long long *id)
{
    struct seg *s;

    pthread_mutex_lock(&arena.lock);
    s = arena_find(p, NULL);
    if (NULL != s) {
        *fd = arena.fd;
        *off = s->off;
        *size = s->size;
        *id = s->id;
    }
    pthread_mutex_unlock(&arena.lock);
    return NULL != s ? CU_OK : CU_INVALID_VALUE;
}

int cuMemcpy(cu_ptr_t dst, cu_ptr_t src, size_t n)
{
    return copy(dst, -1, src, -1, n);
}

int cuMemcpyHtoD_v2(cu_ptr_t dst, const void *src, size_t n)
{
    return copy(dst, 1, (uintptr_t) src, 0, n);
}

int cuMemcpyDtoH_v2(void *dst, cu_ptr_t src, size_t n)
{
    return copy((uintptr_t) dst, 0, src, 1, n);
}

int cuMemcpyDtoD_v2(cu_ptr_t dst, cu_ptr_t src, size_t n)
{
    return copy(dst, 1, src, 1, n);
}

int cuMemsetD8_v2(cu_ptr_t dst, unsigned char value, size_t n)
{
    char *d;
    if (1 != reach(dst, n, &d)) {
        return CU_INVALID_VALUE;
    }
    memset(d, value, n);
    return CU_OK;
}

/* each attribute's value type in cuda.h: writing 8 bytes where the caller
 * has an int would overwrite its neighbour, as 4 would leave half stale */
static size_t attr_size(int attr)
{
    switch (attr) {
    case CU_PA_CONTEXT: case CU_PA_DEVICE_POINTER: case CU_PA_HOST_POINTER:
    case CU_PA_BUFFER_ID: case CU_PA_RANGE_START_ADDR: case CU_PA_RANGE_SIZE:
    case CU_PA_MEMPOOL_HANDLE: case CU_PA_MAPPING_SIZE: case CU_PA_MAPPING_BASE_ADDR:
    case CU_PA_MEMORY_BLOCK_ID: return 8;
    case CU_PA_P2P_TOKENS: return 16;
    default: return 4;  /* unsigned int, int or a boolean int */
    }
}

/* the real driver answers all zeros (memory type 0) for memory it does not know */
int cuPointerGetAttributes(unsigned n, int *attrs, void **vals, cu_ptr_t ptr)
{
    struct seg a = { 0 }, *s;
    int device = 0;
    unsigned i;

    if (n > 0 && (NULL == attrs || NULL == vals)) {
        return CU_INVALID_VALUE;
    }
    pthread_mutex_lock(&arena.lock);
    if (NULL != (s = arena_find(ptr, NULL))) {
        a = *s;
        device = 1;
    }
    pthread_mutex_unlock(&arena.lock);
    for (i = 0; i < n; ++i) {
        const size_t size = attr_size(attrs[i]);
        unsigned long long v = 0;
        if (device) {
            switch (attrs[i]) {
            case CU_PA_CONTEXT: v = (uintptr_t) FAKE_CTX; break;
            case CU_PA_MEMORY_TYPE: v = CU_MEMORYTYPE_DEVICE; break;
            case CU_PA_DEVICE_POINTER: v = ptr; break;
            case CU_PA_SYNC_MEMOPS: case CU_PA_MAPPED: v = 1; break;
            case CU_PA_BUFFER_ID: v = a.id; break;
            case CU_PA_RANGE_START_ADDR: v = (uintptr_t) (arena.dev + a.off); break;
            case CU_PA_RANGE_SIZE: v = a.size; break;
            default: break;     /* not managed, ordinal 0, no legacy IPC */
            }
        }
        memset(vals[i], 0, size);
        if (4 == size) {
            *(unsigned *) vals[i] = (unsigned) v;
        } else if (8 == size) {
            *(unsigned long long *) vals[i] = v;
        }
    }
    return CU_OK;
}

/* the driver's texts for the codes returned here */
int cuGetErrorString(int error, const char **str)
{
    switch (error) {
    case CU_OK: *str = "no error"; break;
    case CU_INVALID_VALUE: *str = "invalid argument"; break;
    case CU_OUT_OF_MEMORY: *str = "out of memory"; break;
    case CU_INVALID_DEVICE: *str = "invalid device ordinal"; break;
    case CU_INVALID_CONTEXT: *str = "invalid device context"; break;
    case CU_NOT_FOUND: *str = "named symbol not found"; break;
    default: *str = NULL; return CU_INVALID_VALUE;
    }
    return CU_OK;
}
