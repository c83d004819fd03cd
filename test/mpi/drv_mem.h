/*
 * Device memory for the MPI tests across (virtual) nodes, from the CUDA
 * driver dlopened at run time: the GPU's on a GPU host, test/fake's
 * stand-in under make check (no CUDA runtime in the test, so one binary
 * runs on both).  Each test defines DRV_TEST_NAME before including this;
 * the pass/fail counters and CHECK are the test's report.
 */
#ifndef GPUCOLL_TEST_DRV_MEM_H
#define GPUCOLL_TEST_DRV_MEM_H

#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef unsigned long long dptr_t;
static struct {
    int (*Init)(unsigned);
    int (*DeviceGetCount)(int *);
    int (*DeviceGet)(int *, int);
    int (*PrimaryCtxRetain)(void **, int);
    int (*CtxSetCurrent)(void *);
    int (*MemAlloc)(dptr_t *, size_t);
    int (*MemFree)(dptr_t);
    int (*Memcpy)(dptr_t, dptr_t, size_t);
    int (*MemsetD8)(dptr_t, unsigned char, size_t);
} cu;

static int rank, size, npass, nfail;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (cond) {                                                        \
            ++npass;                                                       \
        } else {                                                           \
            ++nfail;                                                       \
            printf("FAIL rank %d %s:%d: ", rank, __FILE__, __LINE__);     \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
        }                                                                  \
    } while (0)

static void die(const char *what)
{
    fprintf(stderr, "%s: rank %d: %s failed\n", DRV_TEST_NAME, rank, what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static int driver_init(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    int n = 0, dev;
    void *ctx;
    MPI_Comm node;
    int local;

    if (NULL == lib) {
        return 0;
    }
#define SYM(f, name) (NULL != (*(void **) &cu.f = dlsym(lib, name)))
    if (!(SYM(Init, "cuInit") && SYM(DeviceGetCount, "cuDeviceGetCount") &&
          SYM(DeviceGet, "cuDeviceGet") && SYM(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
          SYM(CtxSetCurrent, "cuCtxSetCurrent") && SYM(MemAlloc, "cuMemAlloc_v2") &&
          SYM(MemFree, "cuMemFree_v2") && SYM(Memcpy, "cuMemcpy") &&
          SYM(MemsetD8, "cuMemsetD8_v2"))) {
        return 0;
    }
#undef SYM
    if (0 != cu.Init(0) || 0 != cu.DeviceGetCount(&n) || n < 1) {
        return 0;
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    if (0 != cu.DeviceGet(&dev, local % n) || 0 != cu.PrimaryCtxRetain(&ctx, dev) ||
        0 != cu.CtxSetCurrent(ctx)) {
        die("binding a device");
    }
    return 1;
}

static int *dalloc(size_t n)
{
    dptr_t d;
    if (0 != cu.MemAlloc(&d, n * sizeof(int) + 64)) {
        die("cuMemAlloc");
    }
    return (int *) (uintptr_t) d;
}

static void dfree(int *p)
{
    cu.MemFree((dptr_t) (uintptr_t) p);
}

static void put(int *d, const int *h, size_t n)
{
    if (0 != cu.Memcpy((dptr_t) (uintptr_t) d, (dptr_t) (uintptr_t) h, n * sizeof(int))) {
        die("cuMemcpy to device");
    }
}

static void get(int *h, const int *d, size_t n)
{
    if (0 != cu.Memcpy((dptr_t) (uintptr_t) h, (dptr_t) (uintptr_t) d, n * sizeof(int))) {
        die("cuMemcpy from device");
    }
}

/* 0xA5 in every byte: no result of these values */
static void poison(int *d, size_t n)
{
    if (0 != cu.MemsetD8((dptr_t) (uintptr_t) d, 0xA5, n * sizeof(int))) {
        die("cuMemsetD8");
    }
}

/* MPI up, a device bound, a hang bounded by alarm_s; 0: no CUDA driver with
 * a device (SKIP printed, MPI finalized: the test returns 0) */
static int drv_start(int *argc, char ***argv, unsigned alarm_s)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    alarm(alarm_s);   /* a hang fails the run instead of holding it */
    if (!driver_init()) {
        if (0 == rank) {
            printf("SKIP: no CUDA driver with a device\n");
        }
        MPI_Finalize();
        return 0;
    }
    return 1;
}

/* each request completed by an MPI_Test loop, in order */
static inline void drv_wait_by_test(MPI_Request *r, int n)
{
    for (int i = 0; i < n; ++i) {
        int done = 0;
        for (long spins = 0; !done; ++spins) {
            MPI_Test(&r[i], &done, MPI_STATUS_IGNORE);
            if (!done && spins > 20000000L) {
                CHECK(0, "MPI_Test loop: request %d never completed", i);
                return;
            }
        }
    }
}

/* "N passed, N failed" over every rank on rank 0, MPI finalized; the
 * exit status */
static int drv_report(void)
{
    int mine[2] = { npass, nfail }, tot[2];
    MPI_Reduce(mine, tot, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("%d passed, %d failed\n", tot[0], tot[1]);
    }
    MPI_Finalize();
    return nfail ? 1 : 0;
}

#endif
