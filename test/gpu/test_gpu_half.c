/*
 * Half precision on device buffers (issue 38): MPIX_C_FLOAT16 and
 * MPIX_BFLOAT16 (mpix_gpu.h, libgpucoll) with SUM, PROD, MIN and MAX, for
 * messages of 8 B to 256 MiB, against a host reference that accumulates
 * in fp32 in rank order and rounds once to nearest even (what coll/gpu's
 * kernels claim to do).
 *
 *   mpirun -np N test_gpu_half [--quick]     (GPU host; SKIP without one)
 *
 * Blocking MPI_Allreduce with a GPU per rank must match the reference bit
 * for bit (its kernels, one-shot, two-shot and the resident one, fold
 * every rank at once in fp32); ranks sharing a GPU may take host-paced
 * rounds, which round per step, and get the tolerance below.  MPI_Reduce, MPI_Reduce_scatter_block and MPI_Iallreduce
 * may take paths that fold in steps (host-paced rounds round after each
 * step): they must lie within (nranks - 1) units in the last place of the
 * exact result, and the count of elements that differ from the reference
 * is printed.  Inputs: random finite values with subnormals among them;
 * for SUM also infinities and NaN at a few places.  The host reference's
 * conversions are the compiler's _Float16 where it has one, else
 * ldexp/nearbyint: no code shared with the kernels.  Each rank checks its
 * result; "N passed, N failed" counts the cases on rank 0.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <mpi.h>

#include "mpix/mpix_gpu.h"

static int wrank, wsize, npass, nfail;
static int own_gpu; /* every rank has a GPU of its own: allreduce folds in one kernel */

#define CK(call) do { cudaError_t e_ = (call); if (cudaSuccess != e_) { \
    fprintf(stderr, "rank %d: %s:%d %s: %s\n", wrank, __FILE__, __LINE__, #call, \
            cudaGetErrorString(e_)); MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

enum { F16 = 0, BF16 = 1 };
static float lut[2][65536]; /* bits -> value */

static float decode(int k, uint16_t h)
{
    if (BF16 == k) {
        uint32_t u = (uint32_t) h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    const int e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (31 == e) {
        v = m ? NAN : INFINITY;
    } else {
        v = 0 == e ? ldexpf((float) m, -24) : ldexpf((float) (1024 + m), e - 25);
    }
    return (h & 0x8000) ? -v : v;
}

/* float -> 16 bits, to nearest even */
static uint16_t encode(int k, float f)
{
    if (isnan(f)) {
        return BF16 == k ? 0x7fc0 : 0x7e00;
    }
    if (BF16 == k) {
        uint32_t u;
        memcpy(&u, &f, 4);
        return (uint16_t) ((u + 0x7fff + ((u >> 16) & 1)) >> 16);
    }
#if defined(__FLT16_MAX__)
    {
        _Float16 h = (_Float16) f;
        uint16_t b;
        memcpy(&b, &h, 2);
        return b;
    }
#else
    {
        const double a = fabs((double) f);
        uint16_t s = signbit(f) ? 0x8000 : 0;
        int e;
        if (isinf(f) || a >= 65520.0) {
            return s | 0x7c00;
        }
        if (0 == a) {
            return s;
        }
        (void) frexp(a, &e);
        e = e - 1 < -14 ? -14 : e - 1;
        const double q = ldexp(1.0, e - 10), r = nearbyint(a / q) * q;
        if (r < ldexp(1.0, -14)) {
            return s | (uint16_t) ldexp(r, 24);
        }
        (void) frexp(r, &e);
        return s | (uint16_t) ((e + 14) << 10 | ((unsigned) ldexp(r, 11 - e) - 1024));
    }
#endif
}

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* element i of rank r for op o: 16-bit patterns of finite values (PROD:
 * near 1, so that products stay in range); SUM gets an infinity or a NaN
 * at a few places */
static uint16_t input(int k, int o, int r, size_t i)
{
    const uint64_t x = mix(((uint64_t) r << 40) ^ i ^ ((uint64_t) o << 56) ^ ((uint64_t) k << 60));
    const uint16_t sign = (x & 1) ? 0x8000 : 0;
    if (1 != o) { /* SUM, MIN, MAX */
        if (0 == o && 0 == (x >> 8) % 100003) {
            return (x & 2) ? (BF16 == k ? 0x7f80 : 0x7c00) | sign : (BF16 == k ? 0x7fc1 : 0x7e01);
        }
        /* magnitudes 2^-20 .. 2^3 (binary16: subnormals below 2^-14) */
        const float v = ldexpf(1.0f + (float) ((x >> 12) & 1023) / 1024.0f, (int) ((x >> 24) % 24) - 20);
        return encode(k, sign ? -v : v);
    }
    /* PROD: 1 + small, either sign */
    const float v = 1.0f + ((float) ((x >> 12) % 257) - 128.0f) / 2048.0f;
    return encode(k, sign ? -v : v);
}

static MPI_Op op_of(int o)
{
    return 0 == o ? MPI_SUM : 1 == o ? MPI_PROD : 2 == o ? MPI_MIN : MPI_MAX;
}
static const char *const op_names[4] = { "sum", "prod", "min", "max" };

/* the reference for element i: fp32 in rank order, one rounding; the
 * exact value (double), and the magnitude no intermediate result of any
 * order exceeds (the sum of magnitudes; for the others the result's) */
static uint16_t reference(int k, int o, size_t i, double *exact, double *bound)
{
    float acc = lut[k][input(k, o, 0, i)];
    double ex = acc, mag = fabs((double) acc);
    for (int r = 1; r < wsize; ++r) {
        const float x = lut[k][input(k, o, r, i)];
        switch (o) {
        case 0: acc = acc + x; ex += x; mag += fabs((double) x); break;
        case 1: acc = acc * x; ex *= x; break;
        case 2: acc = acc < x ? acc : x; ex = acc; break;
        default: acc = acc > x ? acc : x; ex = acc; break;
        }
    }
    *exact = ex;
    *bound = 0 == o ? mag : fabs(ex);
    return encode(k, acc);
}

/* one unit in the last place at the magnitude of v */
static double ulp(int k, double v)
{
    int e;
    const int mbits = BF16 == k ? 7 : 10, emin = BF16 == k ? -126 : -14;
    (void) frexp(fabs(v), &e);
    e = e - 1 < emin ? emin : e - 1;
    return ldexp(1.0, e - mbits);
}

enum { C_ALLREDUCE, C_IALLREDUCE, C_REDUCE, C_RSB };
static const char *const coll_names[] = { "MPI_Allreduce", "MPI_Iallreduce", "MPI_Reduce",
                                          "MPI_Reduce_scatter_block" };

static void run_case(int k, int o, int coll, size_t count, uint16_t *d_in, uint16_t *d_out,
                     uint16_t *h)
{
    const MPI_Datatype t = F16 == k ? MPIX_C_FLOAT16 : MPIX_BFLOAT16;
    const size_t per = C_RSB == coll ? count / (size_t) wsize : count;
    const size_t base = C_RSB == coll ? per * (size_t) wrank : 0;
    const int checks = !(C_REDUCE == coll && 0 != wrank);
    size_t bad = 0, inexact = 0, i;
    int rc, ok;
    MPI_Request req;
    char what[160];

    for (i = 0; i < count; ++i) {
        h[i] = input(k, o, wrank, i);
    }
    CK(cudaMemcpy(d_in, h, count * 2, cudaMemcpyHostToDevice));
    CK(cudaMemset(d_out, 0xa5, count * 2));
    switch (coll) {
    case C_ALLREDUCE: rc = MPI_Allreduce(d_in, d_out, (int) count, t, op_of(o), MPI_COMM_WORLD); break;
    case C_IALLREDUCE:
        rc = MPI_Iallreduce(d_in, d_out, (int) count, t, op_of(o), MPI_COMM_WORLD, &req);
        if (MPI_SUCCESS == rc) {
            rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        break;
    case C_REDUCE: rc = MPI_Reduce(d_in, d_out, (int) count, t, op_of(o), 0, MPI_COMM_WORLD); break;
    default: rc = MPI_Reduce_scatter_block(d_in, d_out, (int) per, t, op_of(o), MPI_COMM_WORLD); break;
    }
    CK(cudaMemcpy(h, d_out, per * 2, cudaMemcpyDeviceToHost));
    for (i = 0; checks && MPI_SUCCESS == rc && i < per; ++i) {
        double exact, mag;
        const uint16_t want = reference(k, o, base + i, &exact, &mag);
        const float g = lut[k][h[i]], w = lut[k][want];
        if (h[i] == want || (isnan(g) && isnan(w))) {
            continue;
        }
        ++inexact;
        /* a path that rounds in steps: nranks - 1 roundings of at most an
         * ulp of the largest intermediate, and the last one */
        if ((C_ALLREDUCE == coll && own_gpu) || isnan(g) != isnan(w) || isinf(g) != isinf(w) ||
            fabs((double) g - exact) > (double) (wsize - 1) * ulp(k, mag) + ulp(k, exact)) {
            if (0 == bad++) {
                fprintf(stderr, "rank %d: %s %s %s n=%zu [%zu]: got 0x%04x (%g), want 0x%04x (%g)\n",
                        wrank, coll_names[coll], F16 == k ? "float16" : "bfloat16", op_names[o],
                        count, base + i, h[i], (double) g, want, (double) w);
            }
        }
    }
    ok = MPI_SUCCESS == rc && 0 == bad;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &inexact, 1, MPI_UNSIGNED_LONG, MPI_SUM, MPI_COMM_WORLD);
    snprintf(what, sizeof(what), "%s %s %s %zu B (%zu elements not the fp32 reference's bits)",
             coll_names[coll], F16 == k ? "float16" : "bfloat16", op_names[o], count * 2, inexact);
    if (ok) {
        ++npass;
    } else {
        ++nfail;
    }
    if (0 == wrank) {
        printf("%s %s%s\n", ok ? "PASS" : "FAIL", what, MPI_SUCCESS != rc ? " (call failed)" : "");
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    const int quick = argc > 1 && 0 == strcmp(argv[1], "--quick");
    int ndev = 0, has = 0, all;
    size_t maxbytes = (size_t) 256 << 20, bytes;
    uint16_t *d_in = NULL, *d_out = NULL, *h = NULL;
    char name[MPI_MAX_OBJECT_NAME];
    int len = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    has = cudaSuccess == cudaGetDeviceCount(&ndev) && ndev > 0;
    MPI_Allreduce(&has, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all) {
        if (0 == wrank) {
            printf("SKIP test_gpu_half: no CUDA device on every rank\n"
                   "test_gpu_half: 0 passed, 0 failed\n");
        }
        MPI_Finalize();
        return 0;
    }
    if (MPI_DATATYPE_NULL == MPIX_C_FLOAT16 || MPI_DATATYPE_NULL == MPIX_BFLOAT16) {
        if (0 == wrank) {
            printf("FAIL: MPIX_C_FLOAT16/MPIX_BFLOAT16 are MPI_DATATYPE_NULL after MPI_Init\n"
                   "test_gpu_half: 0 passed, 1 failed\n");
        }
        MPI_Finalize();
        return 1;
    }
    /* which library made each handle: Open MPI 5.0 names its own
     * MPIX_C_FLOAT16 (shortfloat extension), coll/gpu names the rest */
    MPI_Type_get_name(MPIX_C_FLOAT16, name, &len);
    if (0 == wrank) {
        printf("MPIX_C_FLOAT16 is \"%s\"\n", name);
    }
    MPI_Type_get_name(MPIX_BFLOAT16, name, &len);
    if (0 == wrank) {
        printf("MPIX_BFLOAT16 is \"%s\"\n", name);
    }
    CK(cudaSetDevice(wrank % ndev));
    {
        int mine = ndev >= wsize;
        MPI_Allreduce(&mine, &own_gpu, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        if (0 == wrank) {
            printf("test_gpu_half: %d ranks, %s\n", wsize,
                   own_gpu ? "a GPU each: blocking allreduce must be bit-exact"
                           : "GPUs shared: every result within the step-rounding bound");
        }
    }
    for (int k = 0; k < 2; ++k) {
        for (uint32_t b = 0; b < 65536; ++b) {
            lut[k][b] = decode(k, (uint16_t) b);
        }
    }
    if (quick) {
        maxbytes = (size_t) 4 << 20;
    }
    CK(cudaMalloc((void **) &d_in, maxbytes));
    CK(cudaMalloc((void **) &d_out, maxbytes));
    h = malloc(maxbytes);
    if (NULL == h) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* 8 B, then x8 up to 256 MiB; every op and collective up to 1 MiB,
     * beyond it SUM (the op that rounds) with the allreduces, beyond
     * 32 MiB with the blocking one (the host reference is the cost) */
    for (bytes = 8; bytes <= maxbytes; bytes = bytes * 8 > maxbytes && bytes < maxbytes ? maxbytes : bytes * 8) {
        const size_t count = bytes / 2;
        for (int k = 0; k < 2; ++k) {
            for (int o = 0; o < 4; ++o) {
                for (int coll = 0; coll < 4; ++coll) {
                    if (bytes > ((size_t) 1 << 20) && (0 != o || coll > C_IALLREDUCE)) {
                        continue;
                    }
                    if (bytes > ((size_t) 32 << 20) && coll != C_ALLREDUCE) {
                        continue;
                    }
                    if (C_RSB == coll && count % (size_t) wsize) {
                        continue;
                    }
                    run_case(k, o, coll, count, d_in, d_out, h);
                }
            }
        }
    }
    free(h);
    CK(cudaFree(d_in));
    CK(cudaFree(d_out));
    if (0 == wrank) {
        printf("test_gpu_half: %d passed, %d failed\n", npass, nfail);
    }
    MPI_Finalize();
    return nfail ? 1 : 0;
}
