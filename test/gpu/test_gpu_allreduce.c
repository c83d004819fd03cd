/*
 * GPU correctness for MPI_Allreduce on device buffers, through whatever
 * coll component is selected.  Every rank generates every rank's input
 * from a seed, computes the reference on the host with MPI_Reduce_local in
 * rank order (Open MPI's own op code), and compares bytes exactly.  Outputs
 * are poisoned before each call.  Prints "N passed, N failed" on rank 0.
 *
 *   test_gpu_allreduce [--quick]
 *   GPUCOLL_TEST_ORDER=stale test_gpu_allreduce   only the ordering case, expecting stale reads
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "gpu_test_common.h"
#include <dlfcn.h>

static int wrank, npass, nfail, quick;
/* across (virtual) nodes the reduction runs node by node: floating-point
 * results may differ from the rank-order reference in the last bits, but
 * never between ranks */
static int hier_mode;

static int close_enough(const char *x, const char *y, MPI_Datatype t)
{
    /* relative to the element's magnitude: a complex component may cancel */
    const int cplx = t == MPI_C_FLOAT_COMPLEX || t == MPI_C_DOUBLE_COMPLEX;
    double a[2] = { 0, 0 }, b[2] = { 0, 0 }, tol;
    if (t == MPI_FLOAT || t == MPI_C_FLOAT_COMPLEX) {
        for (int k = 0; k < 1 + cplx; ++k) { a[k] = ((const float *) x)[k]; b[k] = ((const float *) y)[k]; }
        tol = 1e-5;
    } else if (t == MPI_DOUBLE || t == MPI_C_DOUBLE_COMPLEX) {
        for (int k = 0; k < 1 + cplx; ++k) { a[k] = ((const double *) x)[k]; b[k] = ((const double *) y)[k]; }
        tol = 1e-12;
    } else {
        return 0;
    }
    const double mag = fmax(hypot(a[0], a[1]), hypot(b[0], b[1]));
    return fabs(a[0] - b[0]) <= tol * mag && fabs(a[1] - b[1]) <= tol * mag;
}

#define CK(call) do { cudaError_t e_ = (call); if (cudaSuccess != e_) { \
    fprintf(stderr, "rank %d: %s:%d %s: %s\n", wrank, __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

typedef enum { MEM_DEVICE, MEM_ASYNC, MEM_MANAGED, MEM_VMM } mem_t;
static const char *mem_name[] = { "cudaMalloc", "cudaMallocAsync", "managed", "cuMemCreate" };

static type_t types[] = {
    { MPI_INT8_T, "int8", 0 }, { MPI_UINT8_T, "uint8", 0 }, { MPI_INT16_T, "int16", 0 },
    { MPI_UINT16_T, "uint16", 0 }, { MPI_INT, "int", 0 }, { MPI_UNSIGNED, "unsigned", 0 },
    { MPI_LONG, "long", 0 }, { MPI_UNSIGNED_LONG, "ulong", 0 }, { MPI_LONG_LONG, "longlong", 0 },
    { MPI_CHAR, "char", 0 }, { MPI_SHORT, "short", 0 },
    { MPI_FLOAT, "float", 1 }, { MPI_DOUBLE, "double", 1 },
    { MPI_C_FLOAT_COMPLEX, "cfloat", 2 }, { MPI_C_DOUBLE_COMPLEX, "cdouble", 2 },
    { MPI_C_BOOL, "bool", 3 }, { MPI_BYTE, "byte", 5 },
    { MPI_FLOAT_INT, "float_int", 4 }, { MPI_DOUBLE_INT, "double_int", 4 },
    { MPI_LONG_INT, "long_int", 4 }, { MPI_2INT, "2int", 4 }, { MPI_SHORT_INT, "short_int", 4 },
    { MPI_LONG_DOUBLE, "long_double", 1 },
};

/* rank r's input for test number id; non-zero, small floats, ties for loc */
static void gen(char *buf, size_t count, MPI_Datatype t, int cls, int r, int id)
{
    MPI_Aint lb, ext;
    uint64_t s = ((uint64_t) id << 20) ^ (uint64_t) (r + 1) * 7919;
    size_t i;
    MPI_Type_get_extent(t, &lb, &ext);
    memset(buf, 0, count * (size_t) ext);
    for (i = 0; i < count; ++i) {
        char *e = buf + i * (size_t) ext;
        uint64_t x = rng_next(&s);
        if (cls == 0 || cls == 5) {
            memcpy(e, &x, (size_t) ext);
            if (0 == x % 11) memset(e, 0, (size_t) ext);
        } else if (cls == 3) {
            *e = (char) (x & 1);
        } else if (cls == 1 || cls == 2) {
            double v = 0.5 + (double) (x % 1536) / 1024.0;
            double v2 = 0.5 + (double) ((x >> 20) % 1536) / 1024.0;
            if (t == MPI_FLOAT) *(float *) e = (float) v;
            else if (t == MPI_DOUBLE) *(double *) e = v;
            else if (t == MPI_LONG_DOUBLE) *(long double *) e = v;
            else if (t == MPI_C_FLOAT_COMPLEX) { ((float *) e)[0] = (float) v; ((float *) e)[1] = (float) v2; }
            else { ((double *) e)[0] = v; ((double *) e)[1] = v2; }
        } else {
            int v = (int) (x % 5) + 1, idx = (int) ((x >> 8) % 1000);
            if (t == MPI_FLOAT_INT) { *(float *) e = (float) v; *(int *) (e + 4) = idx; }
            else if (t == MPI_DOUBLE_INT) { *(double *) e = v; *(int *) (e + 8) = idx; }
            else if (t == MPI_LONG_INT) { *(long *) e = v; *(int *) (e + 8) = idx; }
            else if (t == MPI_2INT) { ((int *) e)[0] = v; ((int *) e)[1] = idx; }
            else { *(short *) e = (short) v; *(int *) (e + 4) = idx; }
        }
    }
}

/* VMM (cuMemCreate + cuMemMap) through the driver, opened like the
 * component does, so the test needs no -lcuda */
static struct {
    CUresult (*granularity)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult (*access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    CUresult (*unmap)(CUdeviceptr, size_t);
    CUresult (*release)(CUmemGenericAllocationHandle);
    CUresult (*addr_free)(CUdeviceptr, size_t);
} vmm;
static size_t vmm_size[64];
static void *vmm_ptr[64];
static CUmemGenericAllocationHandle vmm_handle[64];

static int vmm_load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (NULL == h) return 0;
    *(void **) &vmm.granularity = dlsym(h, "cuMemGetAllocationGranularity");
    *(void **) &vmm.create = dlsym(h, "cuMemCreate");
    *(void **) &vmm.reserve = dlsym(h, "cuMemAddressReserve");
    *(void **) &vmm.map = dlsym(h, "cuMemMap");
    *(void **) &vmm.access = dlsym(h, "cuMemSetAccess");
    *(void **) &vmm.unmap = dlsym(h, "cuMemUnmap");
    *(void **) &vmm.release = dlsym(h, "cuMemRelease");
    *(void **) &vmm.addr_free = dlsym(h, "cuMemAddressFree");
    return vmm.granularity && vmm.create && vmm.reserve && vmm.map && vmm.access && vmm.unmap &&
           vmm.release && vmm.addr_free;
}

#define CU(call) do { CUresult r_ = (call); if (CUDA_SUCCESS != r_) { \
    fprintf(stderr, "rank %d: %s:%d %s: CUresult %d\n", wrank, __FILE__, __LINE__, #call, (int) r_); \
    MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

static void *vmm_alloc(size_t bytes)
{
    CUmemAllocationProp prop;
    CUmemAccessDesc acc;
    CUdeviceptr va;
    size_t gran;
    int dev, slot;
    for (slot = 0; slot < 64 && vmm_ptr[slot]; ++slot) {}
    CK(cudaGetDevice(&dev));
    memset(&prop, 0, sizeof(prop));
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    CU(vmm.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    bytes = (bytes + gran - 1) / gran * gran;
    CU(vmm.create(&vmm_handle[slot], bytes, &prop, 0));
    CU(vmm.reserve(&va, bytes, gran, 0, 0));
    CU(vmm.map(va, bytes, 0, vmm_handle[slot], 0));
    memset(&acc, 0, sizeof(acc));
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CU(vmm.access(va, bytes, &acc, 1));
    vmm_ptr[slot] = (void *) va;
    vmm_size[slot] = bytes;
    return vmm_ptr[slot];
}

static void vmm_free(void *p)
{
    for (int slot = 0; slot < 64; ++slot) {
        if (vmm_ptr[slot] == p) {
            CU(vmm.unmap((CUdeviceptr) p, vmm_size[slot]));
            CU(vmm.release(vmm_handle[slot]));
            CU(vmm.addr_free((CUdeviceptr) p, vmm_size[slot]));
            vmm_ptr[slot] = NULL;
        }
    }
}

static void *dalloc(mem_t m, size_t bytes)
{
    void *p = NULL;
    if (0 == bytes) bytes = 1;
    if (MEM_VMM == m) return vmm_alloc(bytes);
    if (MEM_DEVICE == m) CK(cudaMalloc(&p, bytes));
    else if (MEM_ASYNC == m) { CK(cudaMallocAsync(&p, bytes, 0)); CK(cudaStreamSynchronize(0)); }
    else CK(cudaMallocManaged(&p, bytes, cudaMemAttachGlobal));
    return p;
}

static void dfree(mem_t m, void *p)
{
    if (MEM_VMM == m) vmm_free(p);
    else if (MEM_ASYNC == m) { CK(cudaFreeAsync(p, 0)); CK(cudaStreamSynchronize(0)); }
    else CK(cudaFree(p));
}

static void record(MPI_Comm comm, int ok, const char *what)
{
    int all = 0, r;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, comm);
    MPI_Comm_rank(comm, &r);
    if (0 == r) {
        if (all) npass++;
        else { nfail++; printf("FAIL %s\n", what); fflush(stdout); }
    }
}

/* one allreduce check; offset in elements, in_place, memory kind */
static void one(MPI_Comm comm, MPI_Datatype t, int cls, MPI_Op op, const char *tag, size_t count,
                int in_place, int offset, mem_t mem, int id)
{
    int r, n, j, ok = 1;
    MPI_Aint lb, ext;
    size_t bytes, i, bad = (size_t) -1;
    char *h_in, *h_ref, *h_tmp, *h_out, *d_in = NULL, *d_out, *d_in0 = NULL, *d_out0;
    char what[256];

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    MPI_Type_get_extent(t, &lb, &ext);
    bytes = count * (size_t) ext;
    h_in = malloc(bytes + 1); h_ref = malloc(bytes + 1); h_tmp = malloc(bytes + 1); h_out = malloc(bytes + 1);
    /* reference in rank order: acc = acc op x_j.  Open MPI 4.1.4 compares
     * MPI_UNSIGNED_LONG as signed in MIN/MAX; uint64_t has the same layout
     * and the right semantics. */
    MPI_Datatype rt = (t == MPI_UNSIGNED_LONG) ? MPI_UINT64_T : t;
    gen(h_ref, count, t, cls, 0, id);
    for (j = 1; j < n; ++j) {
        gen(h_tmp, count, t, cls, j, id);
        memcpy(h_in, h_ref, bytes);
        MPI_Reduce_local(h_in, h_tmp, (int) count, rt, op); /* tmp = acc op x_j */
        memcpy(h_ref, h_tmp, bytes);
    }
    gen(h_in, count, t, cls, r, id);
    d_out0 = dalloc(mem, bytes + (size_t) ext);
    d_out = d_out0 + offset * ext;
    if (in_place) {
        CK(cudaMemcpy(d_out, h_in, bytes, cudaMemcpyDefault));
    } else {
        d_in0 = dalloc(mem, bytes + (size_t) ext);
        d_in = d_in0 + offset * ext;
        CK(cudaMemcpy(d_in, h_in, bytes, cudaMemcpyDefault));
        CK(cudaMemset(d_out0, 0xcb, bytes + (size_t) ext));
    }
    CK(cudaDeviceSynchronize());
    if (MPI_SUCCESS != MPI_Allreduce(in_place ? MPI_IN_PLACE : d_in, d_out, (int) count, t, op, comm)) ok = 0;
    CK(cudaMemcpy(h_out, d_out, bytes, cudaMemcpyDefault));
    for (i = 0; ok && i < count; ++i) {
        /* pair types: compare the value and index, not the padding */
        const char *x = h_out + i * (size_t) ext, *y = h_ref + i * (size_t) ext;
        size_t cmp = (size_t) ext;
        if (cls == 4) cmp = (t == MPI_DOUBLE_INT || t == MPI_LONG_INT) ? 12 : 8;
        if (t == MPI_LONG_DOUBLE) cmp = 10;
        if (t == MPI_SHORT_INT) {
            if (memcmp(x, y, 2) || memcmp(x + 4, y + 4, 4)) { ok = 0; bad = i; }
        } else if (memcmp(x, y, cmp) && !(hier_mode && close_enough(x, y, t))) { ok = 0; bad = i; }
    }
    /* every rank holds the same bits */
    {
        uint64_t h = 1469598103934665603ull, lo, hi;
        for (i = 0; i < count; ++i) {
            const size_t cmp = cls == 4 ? ((t == MPI_DOUBLE_INT || t == MPI_LONG_INT) ? 12 : 8)
                               : (t == MPI_LONG_DOUBLE ? 10 : (size_t) ext);
            for (size_t k = 0; k < cmp; ++k) {
                if (t == MPI_SHORT_INT && (k == 2 || k == 3)) continue;
                h = (h ^ (unsigned char) h_out[i * (size_t) ext + k]) * 1099511628211ull;
            }
        }
        MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, comm);
        MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, comm);
        if (lo != hi) { ok = 0; fprintf(stderr, "rank %d: results differ between ranks\n", r); }
    }
    snprintf(what, sizeof(what), "%s %s/%s count %zu%s%s %s%s", tag, ops[0].name == NULL ? "" : "",
             "", count, in_place ? " in-place" : "", offset ? " offset+1" : "", mem_name[mem],
             ok ? "" : " (mismatch)");
    if (!ok && bad != (size_t) -1) {
        /* the bytes of the first bad element: got, expected, this rank's input */
        fprintf(stderr, "rank %d: %s first bad element %zu: got", r, what, bad);
        for (size_t k = 0; k < (size_t) ext && k < 8; ++k) fprintf(stderr, " %02x", (unsigned char) h_out[bad * (size_t) ext + k]);
        fprintf(stderr, ", want");
        for (size_t k = 0; k < (size_t) ext && k < 8; ++k) fprintf(stderr, " %02x", (unsigned char) h_ref[bad * (size_t) ext + k]);
        fprintf(stderr, ", input");
        for (size_t k = 0; k < (size_t) ext && k < 8; ++k) fprintf(stderr, " %02x", (unsigned char) h_in[bad * (size_t) ext + k]);
        fprintf(stderr, "\n");
    }
    record(comm, ok, what);
    if (d_in0) dfree(mem, d_in0);
    dfree(mem, d_out0);
    free(h_in); free(h_ref); free(h_tmp); free(h_out);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    float *a = in, *b = inout;
    int i;
    (void) dt;
    for (i = 0; i < *len; ++i) b[i] = a[i] + b[i];
}

/* MPI_Type_vector(3, 2, 4, MPI_INT): ints at 0,1,4,5,8,9 of each element */
static void user_vec_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    static const int off[6] = { 0, 1, 4, 5, 8, 9 };
    MPI_Aint lb, ext;
    int i, k;
    MPI_Type_get_extent(*dt, &lb, &ext);
    for (i = 0; i < *len; ++i) {
        int *a = (int *) ((char *) in + i * ext), *b = (int *) ((char *) inout + i * ext);
        for (k = 0; k < 6; ++k) b[off[k]] += a[off[k]];
    }
}

/*
 * Ordering after the application's synchronous copies (coll_gpu_stream_order
 * 1): a device-to-device cudaMemcpy returns before it runs when it waits
 * behind about 3 ms of memsets on the legacy stream; the collective must
 * still read what it copies -- at the allocation's first use through the
 * component's one wait, later because the allocation is then marked
 * SYNC_MEMOPS and the copy itself waits.  With GPUCOLL_TEST_ORDER=stale
 * (run with coll_gpu_stream_order 0, nothing ordered) the same calls must
 * read stale data: the check can fail.
 */
static void order_case(void)
{
    const size_t count = 4096, bytes = count * sizeof(int), big_bytes = (size_t) 256 << 20;
    const char *mode = getenv("GPUCOLL_TEST_ORDER");
    const int expect_stale = NULL != mode && 0 == strcmp(mode, "stale");
    int n, stale = 0, *h = malloc(bytes), *out = malloc(bytes);
    void *big, *src, *in, *res;
    char what[96];

    MPI_Comm_size(MPI_COMM_WORLD, &n);
    CK(cudaMalloc(&big, big_bytes));
    CK(cudaMalloc(&src, bytes));
    CK(cudaMalloc(&in, bytes));
    CK(cudaMalloc(&res, bytes));
    CK(cudaMemset(in, 0, bytes));
    CK(cudaDeviceSynchronize());
    for (int it = 1; it <= 3; ++it) {
        int ok = 1;
        for (size_t k = 0; k < count; ++k) h[k] = (wrank + 1) * it + (int) (k % 13);
        CK(cudaMemcpy(src, h, bytes, cudaMemcpyHostToDevice));
        CK(cudaDeviceSynchronize());
        for (int j = 0; j < 40; ++j) CK(cudaMemsetAsync(big, j, big_bytes, cudaStreamLegacy));
        CK(cudaMemcpy(in, src, bytes, cudaMemcpyDeviceToDevice));
        MPI_Allreduce(in, res, (int) count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CK(cudaMemcpy(out, res, bytes, cudaMemcpyDeviceToHost));
        for (size_t k = 0; k < count; ++k) {
            ok = ok && out[k] == it * n * (n + 1) / 2 + n * (int) (k % 13);
        }
        stale += !ok;
        if (!expect_stale) {
            snprintf(what, sizeof(what), "world order after a queued cudaMemcpy, call %d (%s use)",
                     it, 1 == it ? "first" : "later");
            record(MPI_COMM_WORLD, ok, what);
        }
    }
    if (expect_stale) {
        int any = 0;
        MPI_Allreduce(&stale, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        record(MPI_COMM_WORLD, any > 0, "world stream_order 0 reads stale data (negative control)");
    }
    CK(cudaFree(res));
    CK(cudaFree(in));
    CK(cudaFree(src));
    CK(cudaFree(big));
    free(out);
    free(h);
}

static void matrix(MPI_Comm comm, const char *ctag, int *id)
{
    size_t counts_full[] = { 1, 37, 4099, 65537 };
    size_t counts_quick[] = { 37, 4099 };
    size_t *counts = quick ? counts_quick : counts_full;
    int ncounts = quick ? 2 : 4;
    size_t o, t, c;
    char tag[128];

    for (o = 0; o < sizeof(ops) / sizeof(ops[0]); ++o) {
        for (t = 0; t < sizeof(types) / sizeof(types[0]); ++t) {
            if (!ops[o].ok[types[t].cls]) continue;
            snprintf(tag, sizeof(tag), "%s %s/%s", ctag, ops[o].name, types[t].name);
            for (c = 0; c < (size_t) ncounts; ++c) {
                one(comm, types[t].t, types[t].cls, ops[o].op, tag, counts[c], (int) (c & 1), 0, MEM_DEVICE, ++*id);
            }
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Comm local, dup, split;
    int lrank, ndev, wsize, id = 0, i;
    char tag[128];

    /* Open MPI 4.1's op/avx adds 8- and 16-bit integers with saturation
     * (_mm256_adds_epi8), which is not C or MPI arithmetic: the reference
     * must be the plain C implementation. */
    setenv("OMPI_MCA_op", "^avx", 0);
    MPI_Init(&argc, &argv);
    for (i = 1; i < argc; ++i) if (0 == strcmp(argv[i], "--quick")) quick = 1;
    hier_mode = NULL != getenv("OMPI_MCA_coll_gpu_virtual_nodes") &&
                atoi(getenv("OMPI_MCA_coll_gpu_virtual_nodes")) > 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || ndev < 1) {
        if (0 == wrank) printf("test_gpu_allreduce: SKIP: no CUDA device visible (%s)\n0 passed, 0 failed\n",
                               cudaGetErrorString(cudaGetDeviceCount(&ndev)));
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    CK(cudaSetDevice(lrank % ndev));
    int vmm_ok = vmm_load(), vmm_all = 0;
    MPI_Allreduce(&vmm_ok, &vmm_all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    vmm_ok = vmm_all;
    if (!vmm_ok && 0 == wrank) printf("note: libcuda has no VMM entry points; cuMemCreate buffers not tested\n");

    order_case();
    if (NULL != getenv("GPUCOLL_TEST_ORDER")) {
        goto done;
    }
    /* size 0 and the full op x type matrix on MPI_COMM_WORLD */
    one(MPI_COMM_WORLD, MPI_FLOAT, 1, MPI_SUM, "world sum/float", 0, 0, 0, MEM_DEVICE, ++id);
    matrix(MPI_COMM_WORLD, "world", &id);

    /* sizes up to 256 MiB, odd counts, both algorithms, offsets */
    {
        size_t sizes[] = { 1, 2, 3, 255, 1025, 65535, 262143, 1048577, 4194305, 16777217, 67108864 };
        int ns = quick ? 8 : (int) (sizeof(sizes) / sizeof(sizes[0]));
        for (i = 0; i < ns; ++i) {
            one(MPI_COMM_WORLD, MPI_FLOAT, 1, MPI_SUM, "world sum/float", sizes[i], i & 1, 0, MEM_DEVICE, ++id);
            one(MPI_COMM_WORLD, MPI_INT, 0, MPI_MAX, "world max/int", sizes[i], 0, 1, MEM_DEVICE, ++id);
            one(MPI_COMM_WORLD, MPI_DOUBLE, 1, MPI_SUM, "world sum/double", sizes[i] / 2 + 1, 1, 1, MEM_DEVICE, ++id);
        }
        /* other allocators */
        for (int m = MEM_ASYNC; m <= (vmm_ok ? MEM_VMM : MEM_MANAGED); ++m) {
            one(MPI_COMM_WORLD, MPI_FLOAT, 1, MPI_SUM, "world sum/float", 1001, 0, 0, (mem_t) m, ++id);
            one(MPI_COMM_WORLD, MPI_FLOAT, 1, MPI_SUM, "world sum/float", 3000017, 1, 0, (mem_t) m, ++id);
        }
    }

    /* staged paths: a user op and a derived (vector) type */
    {
        MPI_Op uop;
        MPI_Datatype vec;
        MPI_Op_create(user_sum, 1, &uop);
        one(MPI_COMM_WORLD, MPI_FLOAT, 1, uop, "world user-op/float", 12345, 0, 0, MEM_DEVICE, ++id);
        MPI_Op vop;
        MPI_Op_create(user_vec_sum, 1, &vop);
        MPI_Type_vector(3, 2, 4, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        /* gaps must keep their poison: compare through the host path */
        {
            int n, r, ok = 1, j;
            size_t cnt = 1000, ext = 10 * sizeof(int) * cnt + 64, k;
            int *h = malloc(ext), *ref = malloc(ext), *tmp = malloc(ext), *d;
            MPI_Comm_size(MPI_COMM_WORLD, &n);
            MPI_Comm_rank(MPI_COMM_WORLD, &r);
            for (j = 0; j < n; ++j) {
                for (k = 0; k < ext / sizeof(int); ++k) tmp[k] = (int) (k * 31 + (size_t) j * 7 + 1);
                if (j == 0) memcpy(ref, tmp, ext);
                else MPI_Reduce_local(tmp, ref, (int) cnt, vec, vop);
                if (j == r) memcpy(h, tmp, ext);
            }
            CK(cudaMalloc((void **) &d, ext));
            CK(cudaMemcpy(d, h, ext, cudaMemcpyDefault));
            MPI_Allreduce(MPI_IN_PLACE, d, (int) cnt, vec, vop, MPI_COMM_WORLD);
            CK(cudaMemcpy(h, d, ext, cudaMemcpyDefault));
            /* ref reduced in order 0..n-1 into rank 0's data; gaps hold rank 0's
             * values in ref but this rank's own values in h: compare data only */
            for (k = 0; k < cnt * 6; ++k) {
                size_t blk = k / 6, w = k % 6, e = blk * 10 + (w / 2) * 4 + (w % 2);
                if (h[e] != ref[e]) ok = 0;
            }
            record(MPI_COMM_WORLD, ok, "world derived vector type in-place");
            CK(cudaFree(d));
            free(h); free(ref); free(tmp);
        }
        MPI_Op_free(&vop);
        MPI_Type_free(&vec);
        MPI_Op_free(&uop);
    }

    /* sub-communicators: dup and an odd/even split */
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    one(dup, MPI_FLOAT, 1, MPI_SUM, "dup sum/float", 777777, 0, 0, MEM_DEVICE, ++id);
    one(dup, MPI_DOUBLE, 1, MPI_MAX, "dup max/double", 33, 1, 0, MEM_DEVICE, ++id);
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wsize - wrank, &split);
    snprintf(tag, sizeof(tag), "split(%d)", wrank % 2);
    if (!quick) matrix(split, tag, &id);
    one(split, MPI_FLOAT, 1, MPI_SUM, "split sum/float", 5000001, 0, 1, MEM_DEVICE, ++id);
    MPI_Comm_free(&split);
    MPI_Comm_free(&dup);
done:
    MPI_Comm_free(&local);

    {
        int tot[2] = { npass, nfail }, all[2];
        /* rank 0 counted world checks; split leaders counted theirs */
        MPI_Reduce(tot, all, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        if (0 == wrank) printf("test_gpu_allreduce np=%d: %d passed, %d failed\n", wsize, all[0], all[1]);
        MPI_Finalize();
        return (0 == wrank && all[1]) ? 1 : 0;
    }
}
