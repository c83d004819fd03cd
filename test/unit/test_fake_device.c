/*
 * The CUDA driver stand-in's device memory (test/fake/fake_libcuda.c), on
 * the CPU.  The MPI suites that run coll/gpu's device-buffer paths in CI
 * trust it to behave as a GPU's memory does from the host: the CPU cannot
 * read it, the driver's copies can, cuPointerGetAttributes says "device"
 * only while it is allocated (with the attribute sizes of cuda.h, since
 * the component passes ints and 8-byte values side by side), and freed
 * ranges come back, so that allocation loops never run out.  If one of
 * these broke, those suites would pass or fail for the stand-in's sake.
 * Usage: test_fake_device PATH/libcuda.so.1
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long cu_ptr_t;

enum { CU_INVALID_VALUE = 1, CU_NOT_FOUND = 500 };
enum {
    PA_CONTEXT = 1, PA_MEMORY_TYPE = 2, PA_DEVICE_POINTER = 3, PA_SYNC_MEMOPS = 6,
    PA_BUFFER_ID = 7, PA_IS_MANAGED = 8, PA_DEVICE_ORDINAL = 9, PA_IPC_CAPABLE = 10,
    PA_RANGE_START_ADDR = 11, PA_RANGE_SIZE = 12, PA_LAST = 21
};

static struct {
    int (*init)(unsigned);
    int (*device_get)(int *, int);
    int (*retain)(void **, int);
    int (*release)(int);
    int (*set_current)(void *);
    int (*get_current)(void **);
    int (*ctx_sync)(void);
    int (*stream_sync)(void *);
    int (*set_attr)(const void *, int, cu_ptr_t);
    int (*alloc)(cu_ptr_t *, size_t);
    int (*free)(cu_ptr_t);
    int (*copy)(cu_ptr_t, cu_ptr_t, size_t);
    int (*htod)(cu_ptr_t, const void *, size_t);
    int (*dtoh)(void *, cu_ptr_t, size_t);
    int (*dtod)(cu_ptr_t, cu_ptr_t, size_t);
    int (*memset8)(cu_ptr_t, unsigned char, size_t);
    int (*range)(cu_ptr_t *, size_t *, cu_ptr_t);
    int (*attrs)(unsigned, int *, void **, cu_ptr_t);
    int (*error_string)(int, const char **);
} cu;

static int npass, nfail;

static void report(int ok, const char *what, const char *detail)
{
    ok ? ++npass : ++nfail;
    printf("%s %s%s%s\n", ok ? "ok  " : "FAIL", what, ok ? "" : ": ", ok ? "" : detail);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* the value type's size of each attribute, from cuda.h's documentation */
static size_t attr_size(int attr)
{
    switch (attr) {
    case 1: case 3: case 4: case 7: case 11: case 12: case 17: case 18: case 19: case 20:
        return 8;
    case 5:
        return 16;
    default:
        return 4;
    }
}

/* one attribute into a 0xaa-filled buffer: NULL unless exactly its size
 * was written, else the value (zero-extended) */
static int query(cu_ptr_t ptr, int attr, unsigned long long *value)
{
    unsigned char buf[32];
    void *val = buf;
    const size_t size = attr_size(attr);

    memset(buf, 0xaa, sizeof(buf));
    if (0 != cu.attrs(1, &attr, &val, ptr)) {
        return 0;
    }
    for (size_t i = size; i < sizeof(buf); ++i) {
        if (0xaa != buf[i]) {
            return 0;
        }
    }
    *value = 0;
    if (4 == size) {
        *value = *(unsigned *) buf;
    } else if (8 == size) {
        *value = *(unsigned long long *) buf;
    } else {
        for (size_t i = 0; i < size; ++i) {
            *value |= buf[i];
        }
    }
    return 1;
}

/* the attributes of a pointer as the stand-in should answer them: the
 * allocation [base, base+size) with that id, or host (base 0) */
static int attrs_are(cu_ptr_t ptr, cu_ptr_t base, size_t size, unsigned long long id,
                     char *why, size_t whylen)
{
    for (int attr = 1; attr <= PA_LAST; ++attr) {
        unsigned long long v, want = 0;
        if (!query(ptr, attr, &v)) {
            snprintf(why, whylen, "attribute %d: wrong size written or call failed", attr);
            return 0;
        }
        if (0 != base) {
            switch (attr) {
            case PA_MEMORY_TYPE: want = 2; break;
            case PA_DEVICE_POINTER: want = ptr; break;
            case PA_SYNC_MEMOPS: want = 1; break;
            case PA_BUFFER_ID: want = id; break;
            case PA_RANGE_START_ADDR: want = base; break;
            case PA_RANGE_SIZE: want = size; break;
            case PA_IS_MANAGED: case PA_DEVICE_ORDINAL: case PA_IPC_CAPABLE: want = 0; break;
            default: continue;  /* beyond what the component asks */
            }
        }
        if (v != want) {
            snprintf(why, whylen, "pointer 0x%llx attribute %d: %llu, want %llu", ptr, attr, v, want);
            return 0;
        }
    }
    return 1;
}

static unsigned long long buffer_id(cu_ptr_t p)
{
    unsigned long long id = 0;
    return query(p, PA_BUFFER_ID, &id) ? id : 0;
}

static sigjmp_buf fault_jump;
static void *volatile fault_addr;

static void on_segv(int sig, siginfo_t *info, void *uc)
{
    (void) sig;
    (void) uc;
    fault_addr = info->si_addr;
    siglongjmp(fault_jump, 1);
}

/* 1 when a host load (store) of p faults at p */
static int host_access_faults(cu_ptr_t p, int store)
{
    struct sigaction sa, old;
    volatile int faulted = 0;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &old);
    fault_addr = NULL;
    if (0 == sigsetjmp(fault_jump, 1)) {
        volatile char *c = (volatile char *) (uintptr_t) p;
        if (store) {
            *c = 1;
        } else {
            (void) *c;
        }
    } else {
        faulted = 1;
    }
    sigaction(SIGSEGV, &old, NULL);
    return faulted && fault_addr == (void *) (uintptr_t) p;
}

/* allocation rounds of many sizes with up to 16 buffers live: the marks at
 * both ends of each buffer survive until it is freed, no two overlap */
static void check_reuse(int rounds)
{
    enum { SLOTS = 16 };
    cu_ptr_t ptr[SLOTS] = { 0 };
    size_t size[SLOTS] = { 0 };
    uint64_t mark[SLOTS] = { 0 };
    char why[200] = "";
    int bad = 0;

    for (int r = 0; r < rounds && !bad; ++r) {
        const int i = (int) (next_random() % SLOTS);
        uint64_t head = 0, tail = 0;
        if (0 != ptr[i]) {
            if (0 != cu.dtoh(&head, ptr[i], 8) || 0 != cu.dtoh(&tail, ptr[i] + size[i] - 8, 8) ||
                head != mark[i] || tail != ~mark[i]) {
                snprintf(why, sizeof(why), "round %d: marks of a live buffer changed", r);
                bad = 1;
            }
            bad |= 0 != cu.free(ptr[i]);
            ptr[i] = 0;
        }
        size[i] = 8 + next_random() % (16u << 20);
        mark[i] = (uint64_t) r * 0x100000001ull;
        tail = ~mark[i];
        if (0 != cu.alloc(&ptr[i], size[i])) {
            snprintf(why, sizeof(why), "round %d: %zu bytes not allocated (arena exhausted?)", r,
                     size[i]);
            bad = 1;
            break;
        }
        if (0 != ptr[i] % 256) {
            snprintf(why, sizeof(why), "round %d: 0x%llx not 256-byte aligned", r, ptr[i]);
            bad = 1;
        }
        for (int j = 0; j < SLOTS; ++j) {
            if (j != i && 0 != ptr[j] && ptr[i] < ptr[j] + size[j] && ptr[j] < ptr[i] + size[i]) {
                snprintf(why, sizeof(why), "round %d: new buffer overlaps a live one", r);
                bad = 1;
            }
        }
        bad |= 0 != cu.htod(ptr[i], &mark[i], 8) || 0 != cu.htod(ptr[i] + size[i] - 8, &tail, 8);
    }
    for (int i = 0; i < SLOTS; ++i) {
        if (0 != ptr[i]) {
            bad |= 0 != cu.free(ptr[i]);
        }
    }
    report(!bad, "10000 allocations of 8 B to 16 MiB, up to 16 live: aligned, disjoint, "
           "contents kept, arena never exhausted", why[0] ? why : "a call failed");
}

/* several threads allocating, copying and freeing at once */
static void *thread_rounds(void *arg)
{
    uintptr_t bad = 0;
    unsigned char out[4096], in[4096];
    for (int r = 0; r < 2000; ++r) {
        cu_ptr_t p = 0;
        const size_t n = 1 + (size_t) ((uintptr_t) arg * 977 + (size_t) r * 131) % sizeof(out);
        memset(out, (int) (r + (int) (uintptr_t) arg), n);
        bad |= 0 != cu.alloc(&p, n) || 0 != cu.htod(p, out, n) || 0 != cu.dtoh(in, p, n) ||
               0 != memcmp(in, out, n) || 0 != cu.free(p);
    }
    return (void *) bad;
}

/* a fresh thread has no context until its first allocation */
static void *thread_context(void *arg)
{
    void *before = (void *) 1, *after = NULL;
    cu_ptr_t p = 0;
    (void) arg;
    cu.get_current(&before);
    if (0 != cu.alloc(&p, 100) || 0 != cu.free(p)) {
        return (void *) 0;
    }
    cu.get_current(&after);
    return (void *) (uintptr_t) (NULL == before && NULL != after);
}

#define LOAD(field, name) (cu.field = (__typeof__(cu.field)) dlsym(lib, name))

int main(int argc, char **argv)
{
    void *lib, *ctx = NULL, *cur = (void *) 1;
    char why[200] = "";
    int dev = -1, ok;

    if (argc < 2 || NULL == (lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL))) {
        fprintf(stderr, "usage: %s PATH/libcuda.so.1 (%s)\n", argv[0], argc < 2 ? "" : dlerror());
        return 2;
    }
    ok = LOAD(init, "cuInit") && LOAD(device_get, "cuDeviceGet") &&
         LOAD(retain, "cuDevicePrimaryCtxRetain") &&
         LOAD(release, "cuDevicePrimaryCtxRelease_v2") && LOAD(set_current, "cuCtxSetCurrent") &&
         LOAD(get_current, "cuCtxGetCurrent") && LOAD(ctx_sync, "cuCtxSynchronize") &&
         LOAD(stream_sync, "cuStreamSynchronize") && LOAD(set_attr, "cuPointerSetAttribute") &&
         LOAD(alloc, "cuMemAlloc_v2") && LOAD(free, "cuMemFree_v2") && LOAD(copy, "cuMemcpy") &&
         LOAD(htod, "cuMemcpyHtoD_v2") && LOAD(dtoh, "cuMemcpyDtoH_v2") &&
         LOAD(dtod, "cuMemcpyDtoD_v2") && LOAD(memset8, "cuMemsetD8_v2") &&
         LOAD(range, "cuMemGetAddressRange_v2") && LOAD(attrs, "cuPointerGetAttributes") &&
         LOAD(error_string, "cuGetErrorString");
    report(ok, "every entry point the tests use is there", dlerror());
    if (!ok) {
        printf("test_fake_device: %d passed, %d failed\n", npass, nfail);
        return 1;
    }
    /* the CUDA runtime initialises through these: with them it would try */
    report(NULL == dlsym(lib, "cuGetProcAddress") && NULL == dlsym(lib, "cuGetProcAddress_v2") &&
           NULL == dlsym(lib, "cuDriverGetVersion"),
           "no cuGetProcAddress or cuDriverGetVersion (the CUDA runtime must keep failing)",
           "found one");

    /* contexts */
    cu.get_current(&cur);
    report(0 == cu.init(0) && NULL == cur, "no context before one is set", "a context");
    report(0 == cu.device_get(&dev, 0) && 0 == dev && 0 != cu.device_get(&dev, 1) &&
           0 == cu.retain(&ctx, 0) && NULL != ctx && 0 == cu.set_current(ctx) &&
           0 == cu.get_current(&cur) && cur == ctx && 0 == cu.set_current(NULL) &&
           0 == cu.get_current(&cur) && NULL == cur && 0 == cu.release(0) &&
           0 == cu.ctx_sync() && 0 == cu.stream_sync(NULL),
           "device 0 only, its primary context current after cuCtxSetCurrent, NULL unsets it",
           "wrong answer");
    {
        pthread_t t;
        void *res = NULL;
        pthread_create(&t, NULL, thread_context, NULL);
        pthread_join(t, &res);
        report(NULL != res, "a thread's first allocation makes the context current there",
               "no context after cuMemAlloc, or one before");
    }

    /* copies */
    {
        enum { N = 1 << 20 };
        unsigned char *h = malloc(N), *back = malloc(N), *h2 = malloc(N);
        cu_ptr_t a = 0, b = 0;
        int c;
        for (size_t i = 0; i < N; ++i) {
            h[i] = (unsigned char) next_random();
        }
        ok = 0 == cu.alloc(&a, N) && 0 == cu.alloc(&b, N);
        report(ok && 0 == cu.htod(a, h, N) && 0 == cu.dtoh(back, a, N) && 0 == memcmp(h, back, N),
               "cuMemcpyHtoD then cuMemcpyDtoH: 1 MiB round trip", "differs");
        memset(back, 0, N);
        report(0 == cu.dtod(b + 100, a + 7, N - 1000) && 0 == cu.dtoh(back, b + 100, N - 1000) &&
               0 == memcmp(h + 7, back, N - 1000), "cuMemcpyDtoD at odd offsets", "differs");
        memset(back, 0, N);
        report(0 == cu.copy(b, (uintptr_t) h, N) && 0 == cu.copy(a, b, N) &&
               0 == cu.copy((uintptr_t) back, a, N) && 0 == memcmp(h, back, N) &&
               0 == cu.copy((uintptr_t) h2, (uintptr_t) back, N) && 0 == memcmp(h, h2, N),
               "cuMemcpy (UVA): host to device, device to device, device to host, host to host",
               "differs");
        c = 0 == cu.memset8(a + 1000, 0x5a, 3000) && 0 == cu.dtoh(back, a, N);
        for (size_t i = 0; c && i < N; ++i) {
            c = back[i] == (i >= 1000 && i < 4000 ? 0x5a : h[i]);
        }
        report(c, "cuMemsetD8 sets its range and nothing beside", "wrong bytes");
        report(CU_INVALID_VALUE == cu.htod(a + N - 10, h, 11) &&
               CU_INVALID_VALUE == cu.dtoh(back, a + 1, N) &&
               CU_INVALID_VALUE == cu.memset8(a, 0, N + 1) &&
               CU_INVALID_VALUE == cu.htod((uintptr_t) h, back, 10) &&
               CU_INVALID_VALUE == cu.dtoh((void *) (uintptr_t) a, b, 10) &&
               CU_INVALID_VALUE == cu.dtod((uintptr_t) h, a, 10) && 0 == cu.htod(a, h, 0),
               "copies past an allocation's end or with the wrong kind of pointer fail (invalid "
               "argument)", "accepted");
        report(0 == cu.free(a) && 0 == cu.free(b), "cuMemFree", "failed");
        free(h);
        free(back);
        free(h2);
    }

    /* what the driver says of pointers */
    {
        cu_ptr_t a = 0, base = 0, again = 0;
        size_t size = 0;
        int on_stack = 0;
        char *heap = malloc(64);
        unsigned long long id;
        cu.alloc(&a, 1000);
        id = buffer_id(a);
        report(0 != id && attrs_are(a, a, 1000, id, why, sizeof(why)) &&
               attrs_are(a + 1, a, 1000, id, why, sizeof(why)) &&
               attrs_are(a + 999, a, 1000, id, why, sizeof(why)),
               "device allocation: type device, its range and id, not managed, ordinal 0, sync "
               "memops on, not IPC capable, interior pointers too", why);
        report(attrs_are(a + 1000, 0, 0, 0, why, sizeof(why)) &&
               attrs_are((uintptr_t) heap, 0, 0, 0, why, sizeof(why)) &&
               attrs_are((uintptr_t) &on_stack, 0, 0, 0, why, sizeof(why)) &&
               attrs_are(0, 0, 0, 0, why, sizeof(why)),
               "past the allocation's end, heap, stack, NULL: all zeros (host)", why);
        report(0 == cu.range(&base, &size, a + 500) && base == a && 1000 == size &&
               CU_NOT_FOUND == cu.range(&base, &size, (uintptr_t) heap),
               "cuMemGetAddressRange: the allocation, not found for host memory", "wrong");
        report(host_access_faults(a, 0) && host_access_faults(a + 999, 0) &&
               host_access_faults(a + 500, 1),
               "host load and store of device memory raise SIGSEGV at that address",
               "no fault, or elsewhere");
        report(CU_INVALID_VALUE == cu.free(a + 256) && 0 == cu.free(a) &&
               CU_INVALID_VALUE == cu.free(a) && CU_INVALID_VALUE == cu.free((uintptr_t) heap),
               "cuMemFree refuses interior, freed and host pointers", "accepted");
        report(attrs_are(a, 0, 0, 0, why, sizeof(why)) &&
               CU_NOT_FOUND == cu.range(&base, &size, a) &&
               CU_INVALID_VALUE == cu.dtoh(heap, a, 8),
               "a freed allocation answers host and cannot be copied from", why);
        cu.alloc(&again, 1000);
        report(again == a && 0 != buffer_id(again) && buffer_id(again) != id,
               "the freed range is reused first, under a new buffer id", "not reused or same id");
        report(0 == cu.set_attr(&on_stack, PA_SYNC_MEMOPS, again), "cuPointerSetAttribute",
               "failed");
        cu.free(again);
        free(heap);
    }

    check_reuse(10000);
    {
        /* what a CPU test measures a communicator's device memory with */
        int (*info)(size_t *, size_t *) = (int (*)(size_t *, size_t *)) dlsym(lib,
                                                                            "cuMemGetInfo_v2");
        size_t f0 = 0, f1 = 0, f2 = 0, t = 0;
        cu_ptr_t a = 0, b = 0;
        ok = NULL != info && 0 == info(&f0, &t) && 0 == cu.alloc(&a, 3 << 20) &&
             0 == cu.alloc(&b, 1000) && 0 == info(&f1, &t) && 0 == cu.free(a) &&
             0 == cu.free(b) && 0 == info(&f2, &t);
        report(ok && f0 - f1 == (3u << 20) + 1024 && f2 == f0 && t >= f0,
               "cuMemGetInfo: an allocation's bytes (256-byte granules) leave free memory and "
               "come back at cuMemFree", "free memory not accounted");
    }
    {
        cu_ptr_t big = 0;
        report(0 == cu.alloc(&big, 3ull << 30) && 0 == cu.free(big),
               "after everything is freed, one 3 GiB allocation fits (free ranges merged)",
               "arena fragmented");
    }
    {
        pthread_t t[4];
        void *res;
        uintptr_t bad = 0;
        for (uintptr_t i = 0; i < 4; ++i) {
            pthread_create(&t[i], NULL, thread_rounds, (void *) i);
        }
        for (int i = 0; i < 4; ++i) {
            pthread_join(t[i], &res);
            bad |= (uintptr_t) res;
        }
        report(!bad, "4 threads allocating, copying and freeing 2000 buffers each",
               "a copy differed or a call failed");
    }
    {
        const char *s = NULL, *u = (const char *) 1;
        report(0 == cu.error_string(CU_INVALID_VALUE, &s) && NULL != s &&
               0 == strcmp(s, "invalid argument") && 0 != cu.error_string(12345, &u) && NULL == u,
               "cuGetErrorString", "wrong");
    }
    printf("test_fake_device: %d passed, %d failed\n", npass, nfail);
    return 0 == nfail ? 0 : 1;
}
