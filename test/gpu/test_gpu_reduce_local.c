/*
 * MPI_Reduce_local, and Open MPI's 3-buffer reduction (what its own
 * algorithms call), with op/gpu loaded: every predefined type a C program
 * can name x every op MPI defines for it, against reduce_local_ref.h.
 *
 *   test_gpu_reduce_local [--quick]   GPU host: counts 0/1/7/4099/1M with
 *       the operands on the device, on the host and mixed, managed memory,
 *       another GPU's memory; SKIP line without a GPU
 *   test_gpu_reduce_local host        host buffers only (no GPU needed):
 *       Open MPI's results unchanged, and op/gpu's functions installed
 *   test_gpu_reduce_local host-declined   the same, op/gpu not installed
 *   test_gpu_reduce_local standin     the CI driver stand-in's device
 *       memory (the CPU faults on it; no kernel can run): right results
 *       through the driver's copies, no crash
 *   test_gpu_reduce_local timeout     GPU host, with --mca op_gpu_timeout 1:
 *       a host function holding a blocking stream for 3 s; the call must
 *       come back after about 1 s with MPI_ERRORS_RETURN, and the queued
 *       kernel must still land afterwards
 *   test_gpu_reduce_local bench       time per call: host buffers (what
 *       op/gpu adds to them: compare with --mca op ^gpu), and on the GPU
 * The mode may also come from GPUCOLL_TEST_REDUCE_LOCAL (run_gpu_tests.sh
 * passes mpirun's arguments only).
 *
 * Each element past the count is poisoned and must stay so.  Ends with
 * "N passed, M failed" summed over the ranks.
 */
#include "ompi_config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>
#include <mpi.h>

#include "ompi/op/op.h"
#include "ompi/datatype/ompi_datatype.h"

#include "reduce_local_ref.h"

enum { W_HOST = 'h', W_DEV = 'd', W_MANAGED = 'm', W_OTHER = 'x' };

static int mode_gpu = 0, mode_standin = 0;
static int ndev = 0, mydev = 0;
static int passed = 0, failed = 0, rank = 0;

/* the driver stand-in's entry points (standin mode) */
static struct {
    int (*alloc)(unsigned long long *, size_t);
    int (*free)(unsigned long long);
    int (*htod)(unsigned long long, const void *, size_t);
    int (*dtoh)(void *, unsigned long long, size_t);
} drv;

typedef struct {
    int where;
    void *p;
    size_t bytes;
} buf_t;

static int buf_make(buf_t *b, int where, const void *init, size_t bytes)
{
    b->where = where;
    b->bytes = bytes;
    b->p = NULL;
    if (W_HOST == where) {
        b->p = malloc(bytes);
        if (NULL != b->p) {
            memcpy(b->p, init, bytes);
        }
        return NULL != b->p ? 0 : -1;
    }
    if (mode_standin) {
        unsigned long long d = 0;
        if (0 != drv.alloc(&d, bytes) || 0 != drv.htod(d, init, bytes)) {
            return -1;
        }
        b->p = (void *) (uintptr_t) d;
        return 0;
    }
    if (W_OTHER == where && cudaSuccess != cudaSetDevice((mydev + 1) % ndev)) {
        return -1;
    }
    cudaError_t err = W_MANAGED == where ? cudaMallocManaged(&b->p, bytes, cudaMemAttachGlobal)
                                         : cudaMalloc(&b->p, bytes);
    if (W_OTHER == where) {
        (void) cudaSetDevice(mydev);
    }
    if (cudaSuccess != err || cudaSuccess != cudaMemcpy(b->p, init, bytes, cudaMemcpyDefault)) {
        return -1;
    }
    return 0;
}

static int buf_read(const buf_t *b, void *dst)
{
    if (W_HOST == b->where) {
        memcpy(dst, b->p, b->bytes);
        return 0;
    }
    if (mode_standin) {
        return drv.dtoh(dst, (uintptr_t) b->p, b->bytes);
    }
    return cudaSuccess == cudaMemcpy(dst, b->p, b->bytes, cudaMemcpyDefault) ? 0 : -1;
}

static void buf_free(buf_t *b)
{
    if (NULL == b->p) {
        return;
    }
    if (W_HOST == b->where) {
        free(b->p);
    } else if (mode_standin) {
        drv.free((uintptr_t) b->p);
    } else {
        cudaFree(b->p);
    }
    b->p = NULL;
}

static void report(int ok, const rtype_t *t, int op, size_t count, const char *where,
                   const char *why)
{
    if (ok) {
        ++passed;
        return;
    }
    if (++failed <= 20) {
        printf("FAIL rank %d: %s %s count %zu placement %s: %s\n", rank, t->name, ops[op].name,
               count, where, why);
        fflush(stdout);
    }
}

/*
 * One call.  where: the placement of each operand, "IO" for 2 buffers
 * (in, inout) or "ABO" for 3 (in1, in2, out).  Every buffer holds count+1
 * elements; the last one is poison that must stay.
 */
static void run_case(const rtype_t *t, int op, size_t count, const char *where)
{
    const int three = 3 == strlen(where);
    const size_t bytes = (count + 1) * t->size;
    unsigned char *x = malloc(bytes), *y = malloc(bytes), *want = malloc(bytes);
    unsigned char *got = malloc(bytes), *o = malloc(bytes);
    buf_t bx = { 0 }, by = { 0 }, bo = { 0 };
    char why[160] = "";
    long bad;

    if (NULL == x || NULL == y || NULL == want || NULL == got || NULL == o) {
        report(0, t, op, count, where, "no host memory");
        goto out;
    }
    rgen(t, x, count + 1, 1000 * (uint64_t) op + count + 1);
    rgen(t, y, count + 1, 7000 * (uint64_t) op + count + 2);
    memset(x + count * t->size, 0x5a, t->size);
    memset(y + count * t->size, 0xa5, t->size);
    memset(o, 0xc3, bytes);
    /* 2 buffers: y = x op y; 3 buffers: o = x op y */
    memcpy(want, three ? o : y, bytes);
    if (three) {
        memcpy(want, y, count * t->size);
    }
    rref(t, op, x, want, count);
    if (0 != buf_make(&bx, where[0], x, bytes) || 0 != buf_make(&by, where[1], y, bytes) ||
        (three && 0 != buf_make(&bo, where[2], o, bytes))) {
        report(0, t, op, count, where, "could not allocate the operands");
        goto out;
    }
    if (three) {
        ompi_3buff_op_reduce(ops[op].op, bx.p, by.p, bo.p, (int) count, t->t);
    } else if (MPI_SUCCESS != MPI_Reduce_local(bx.p, by.p, (int) count, t->t, ops[op].op)) {
        report(0, t, op, count, where, "MPI_Reduce_local returned an error");
        goto out;
    }
    if (0 != buf_read(three ? &bo : &by, got)) {
        report(0, t, op, count, where, "could not read the result back");
        goto out;
    }
    if ((bad = rcompare(t, got, want, count)) >= 0) {
        snprintf(why, sizeof(why), "element %ld differs from the reference", bad);
    } else if (0 != memcmp(got + count * t->size, want + count * t->size, t->size)) {
        snprintf(why, sizeof(why), "the element past the count was written");
    }
    report('\0' == why[0], t, op, count, where, why);
out:
    buf_free(&bo);
    buf_free(&by);
    buf_free(&bx);
    free(o);
    free(got);
    free(want);
    free(y);
    free(x);
}

/* where op's function for t comes from: 1 op/gpu, 0 another library */
static int installed(const rtype_t *t, int op)
{
    struct ompi_datatype_t *dt = t->t;
    struct ompi_op_t *o = ops[op].op;
    Dl_info info;
    int slot;

    if (!ompi_datatype_is_predefined(dt) || (slot = ompi_op_ddt_map[dt->id]) < 0 ||
        NULL == o->o_func.intrinsic.fns[slot] ||
        0 == dladdr((void *) o->o_func.intrinsic.fns[slot], &info) || NULL == info.dli_fname) {
        return 0;
    }
    return NULL != strstr(info.dli_fname, "mca_op_gpu");
}

static int standin_open(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    int (*init)(unsigned);
    if (NULL == lib) {
        return -1;
    }
    init = (int (*)(unsigned)) dlsym(lib, "cuInit");
    drv.alloc = (int (*)(unsigned long long *, size_t)) dlsym(lib, "cuMemAlloc_v2");
    drv.free = (int (*)(unsigned long long)) dlsym(lib, "cuMemFree_v2");
    drv.htod = (int (*)(unsigned long long, const void *, size_t)) dlsym(lib, "cuMemcpyHtoD_v2");
    drv.dtoh = (int (*)(void *, unsigned long long, size_t)) dlsym(lib, "cuMemcpyDtoH_v2");
    if (NULL == init || NULL == drv.alloc || NULL == drv.free || NULL == drv.htod ||
        NULL == drv.dtoh || 0 != init(0)) {
        return -1;
    }
    return 0;
}

/* a type a given mode covers: the stand-in runs a sample (every path of
 * the host fold: GPU-arithmetic types, long double, pairs, bool) */
static int in_mode(const rtype_t *t)
{
    static const char *const sample[] = { "MPI_INT", "MPI_UNSIGNED_CHAR", "MPI_DOUBLE",
                                          "MPI_LONG_DOUBLE", "MPI_C_DOUBLE_COMPLEX",
                                          "MPI_C_BOOL", "MPI_BYTE", "MPI_DOUBLE_INT",
                                          "MPI_LONG_DOUBLE_INT" };
    if (0 == t->size) {
        return 0;
    }
    if (!mode_standin) {
        return 1;
    }
    for (size_t i = 0; i < sizeof(sample) / sizeof(sample[0]); ++i) {
        if (0 == strcmp(sample[i], t->name)) {
            return 1;
        }
    }
    return 0;
}

static void CUDART_CB hold_stream(void *arg)
{
    const struct timespec t = { 3, 0 };
    (void) arg;
    nanosleep(&t, NULL);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + 1e-9 * (double) t.tv_nsec;
}

/* the wait's deadline: a kernel queued behind 3 s of application work */
static void run_timeout(void)
{
    const rtype_t t = RT(MPI_INT, RK_SINT);
    enum { N = 4099 };
    int *h = malloc(N * sizeof(int)), *dx = NULL, *dy = NULL, ok = 1;
    cudaStream_t s;
    double t0, dt;

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    for (int i = 0; i < N; ++i) {
        h[i] = 1;
    }
    if (cudaSuccess != cudaMalloc((void **) &dx, N * sizeof(int)) ||
        cudaSuccess != cudaMalloc((void **) &dy, N * sizeof(int)) ||
        cudaSuccess != cudaMemcpy(dx, h, N * sizeof(int), cudaMemcpyDefault) ||
        cudaSuccess != cudaMemcpy(dy, h, N * sizeof(int), cudaMemcpyDefault) ||
        cudaSuccess != cudaStreamCreate(&s)) {
        report(0, &t, 0, N, "dd", "CUDA setup failed");
        return;
    }
    /* the kernels load at the first device reduction, which may wait for
     * the device (op_gpu.h): that one runs before the stream is held */
    (void) MPI_Reduce_local(dx, dy, 1, MPI_INT, MPI_BAND);
    if (cudaSuccess != cudaLaunchHostFunc(s, hold_stream, NULL)) {
        report(0, &t, 0, N, "dd", "CUDA setup failed");
        return;
    }
    t0 = now_s();
    (void) MPI_Reduce_local(dx, dy, N, MPI_INT, MPI_SUM);
    dt = now_s() - t0;
    printf("rank %d: MPI_Reduce_local came back after %.2f s (op_gpu_timeout 1, stream held 3 s)\n",
           rank, dt);
    report(dt > 0.8 && dt < 2.5, &t, 0, N, "dd", "did not come back at the deadline");
    cudaStreamSynchronize(s);
    cudaDeviceSynchronize();
    cudaMemcpy(h, dy, N * sizeof(int), cudaMemcpyDefault);
    for (int i = 0; i < N; ++i) {
        ok &= 2 == h[i];
    }
    report(ok, &t, 0, N, "dd", "the queued kernel's result did not land after the stream freed");
    cudaStreamDestroy(s);
    cudaFree(dy);
    cudaFree(dx);
    free(h);
}

/* microseconds per MPI_Reduce_local of n doubles (MPI_SUM), x and y as given */
static double time_calls(void *x, void *y, int n, int iters)
{
    double t0;
    for (int i = 0; i < iters / 10 + 1; ++i) {
        MPI_Reduce_local(x, y, n, MPI_DOUBLE, MPI_SUM);
    }
    t0 = now_s();
    for (int i = 0; i < iters; ++i) {
        MPI_Reduce_local(x, y, n, MPI_DOUBLE, MPI_SUM);
    }
    return 1e6 * (now_s() - t0) / iters;
}

static void run_bench(void)
{
    static const int sizes[] = { 1, 1024, 1 << 20 };
    for (int k = 0; k < 3; ++k) {
        const int n = sizes[k], iters = n > 1024 ? 200 : 100000;
        double *hx = calloc(n, sizeof(double)), *hy = calloc(n, sizeof(double));
        void *dx = NULL, *dy = NULL;
        printf("rank %d: %8zu B host/host %9.3f us", rank, n * sizeof(double),
               time_calls(hx, hy, n, iters));
        if (mode_gpu && cudaSuccess == cudaMalloc(&dx, n * sizeof(double)) &&
            cudaSuccess == cudaMalloc(&dy, n * sizeof(double))) {
            cudaMemset(dx, 0, n * sizeof(double));
            cudaMemset(dy, 0, n * sizeof(double));
            printf("  device/device %9.3f us  host/device %9.3f us", time_calls(dx, dy, n, 2000),
                   time_calls(hx, dy, n, 2000));
        }
        printf("\n");
        cudaFree(dy);
        cudaFree(dx);
        free(hy);
        free(hx);
    }
    ++passed;
}

int main(int argc, char **argv)
{
    const char *mode = NULL != getenv("GPUCOLL_TEST_REDUCE_LOCAL") ?
                       getenv("GPUCOLL_TEST_REDUCE_LOCAL") : "gpu";
    int quick = 0, host_only = 0, expect_installed = 1, n_inst = 0, n_slots = 0, tot[2];

    for (int i = 1; i < argc; ++i) {
        if (0 == strcmp(argv[i], "--quick")) {
            quick = 1;
        } else {
            mode = argv[i];
        }
    }
    host_only = 0 == strncmp(mode, "host", 4) || 0 == strcmp(mode, "bench-host");
    expect_installed = 0 != strcmp(mode, "host-declined");
    mode_standin = 0 == strcmp(mode, "standin");
    /* host results are Open MPI's own, defects included (reduce_local_ref.h) */
    rgen_tame = host_only || mode_standin;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    rtypes_init();
    if (mode_standin && 0 != standin_open()) {
        if (0 == rank) {
            printf("SKIP test_gpu_reduce_local standin: no driver stand-in with cuMemAlloc "
                   "(0 passed, 0 failed)\n");
        }
        MPI_Finalize();
        return 0;
    }
    if (!host_only && !mode_standin) {
        if (cudaSuccess != cudaGetDeviceCount(&ndev) || ndev < 1) {
            if (0 == rank) {
                printf("SKIP test_gpu_reduce_local: no CUDA device visible (0 passed, 0 failed)\n");
            }
            MPI_Finalize();
            return 0;
        }
        mydev = rank % ndev;
        cudaSetDevice(mydev);
        mode_gpu = 1;
    }
    if (0 == strcmp(mode, "timeout")) {
        run_timeout();
        goto out;
    }
    if (0 == strncmp(mode, "bench", 5)) {
        run_bench();
        goto out;
    }
    for (int ti = 0; ti < NRTYPES; ++ti) {
        const rtype_t *t = &rtypes[ti];
        if (!in_mode(t)) {
            continue;
        }
        for (int op = 0; op < NOPS; ++op) {
            static const size_t counts[] = { 0, 1, 7, 4099, 1u << 20 };
            const int ncounts = (quick || mode_standin) ? 4 : 5;
            if (!rop_valid(op, t)) {
                continue;
            }
            ++n_slots;
            n_inst += installed(t, op);
            if (host_only) {
                for (int c = 0; c < ncounts; ++c) {
                    run_case(t, op, counts[c], "hh");
                }
                run_case(t, op, 4099, "hhh");
                continue;
            }
            for (int c = 0; c < ncounts; ++c) {
                run_case(t, op, counts[c], "dd");
                run_case(t, op, counts[c], "hd");
                run_case(t, op, counts[c], "dh");
            }
            run_case(t, op, 7, "ddd");
            run_case(t, op, 4099, "hdh");
            run_case(t, op, 4099, "dhd");
            run_case(t, op, 4099, "ddh");
            if (mode_gpu) {
                run_case(t, op, 4099, "mm");
                run_case(t, op, 4099, "md");
                run_case(t, op, 4099, "hhd");
                if (ndev > 1) {
                    run_case(t, op, 4099, "xd");
                    run_case(t, op, 4099, "dx");
                }
            }
        }
    }
    if (expect_installed != (n_inst > 0) || (expect_installed && n_inst != n_slots)) {
        printf("FAIL rank %d: op/gpu's functions are installed for %d of %d (op, type) pairs, "
               "expected %s\n", rank, n_inst, n_slots, expect_installed ? "all" : "none");
        ++failed;
    }
out:
    tot[0] = passed;
    tot[1] = failed;
    MPI_Allreduce(MPI_IN_PLACE, tot, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("test_gpu_reduce_local (%s, op/gpu on %d of %d pairs): %d passed, %d failed\n",
               mode, n_inst, n_slots, tot[0], tot[1]);
    }
    MPI_Finalize();
    return tot[1] ? 1 : 0;
}
