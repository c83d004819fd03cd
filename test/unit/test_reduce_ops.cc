/*
 * The reduction functors the kernels run, checked on the host against Open
 * MPI's own MPI_Reduce_local for every (op, type) pair MPI defines, and
 * the validity table checked against the pairs MPI rejects.  Half
 * precision, which Open MPI 4.1 has no type for, is checked against
 * independent references (test_half.h): conversions, correctly rounded
 * two-operand results, and the fp32-accumulated many-input fold.
 * Prints "N passed, N failed".
 */
#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <random>
#include <vector>

#include "gpu_reduce_ops.h"

static int npass, nfail;

#include "test_half.h"

struct host_apply {
    const void *a, *b;
    void *out;
    size_t n;
    template <gpu_op_t OP, class T> bool run()
    {
        const T *x = static_cast<const T *>(a), *y = static_cast<const T *>(b);
        T *o = static_cast<T *>(out);
        /* the accumulator is MPI_Reduce_local's inout (b below): it
         * decides which operand a NaN comparison keeps */
        for (size_t i = 0; i < n; ++i) {
            o[i] = gpu_red<OP, T>::apply(y[i], x[i]);
        }
        return true;
    }
};

static MPI_Datatype mpi_type(gpu_dtype_t dt)
{
    switch (dt) {
    case GPU_DT_I8: return MPI_INT8_T;
    case GPU_DT_U8: return MPI_UINT8_T;
    case GPU_DT_I16: return MPI_INT16_T;
    case GPU_DT_U16: return MPI_UINT16_T;
    case GPU_DT_I32: return MPI_INT32_T;
    case GPU_DT_U32: return MPI_UINT32_T;
    case GPU_DT_I64: return MPI_INT64_T;
    case GPU_DT_U64: return MPI_UINT64_T;
    case GPU_DT_F32: return MPI_FLOAT;
    case GPU_DT_F64: return MPI_DOUBLE;
    case GPU_DT_C32: return MPI_C_FLOAT_COMPLEX;
    case GPU_DT_C64: return MPI_C_DOUBLE_COMPLEX;
    case GPU_DT_BOOL: return MPI_C_BOOL;
    case GPU_DT_FLOAT_INT: return MPI_FLOAT_INT;
    case GPU_DT_DOUBLE_INT: return MPI_DOUBLE_INT;
    case GPU_DT_LONG_INT: return MPI_LONG_INT;
    case GPU_DT_2INT: return MPI_2INT;
    case GPU_DT_SHORT_INT: return MPI_SHORT_INT;
    case GPU_DT_LDOUBLE_INT: return MPI_LONG_DOUBLE_INT;
    case GPU_DT_LDOUBLE: return MPI_LONG_DOUBLE;
    default: return MPI_DATATYPE_NULL; /* half: no Open MPI 4.1 type */
    }
}

static MPI_Op mpi_op(gpu_op_t op)
{
    const MPI_Op ops[] = { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR,
                           MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC };
    return ops[op];
}

/* random, non-zero, with ties for the loc ops and small floats for prod */
static void fill(gpu_dtype_t dt, void *buf, size_t n, std::mt19937_64 &rng)
{
    const size_t es = gpu_dtype_size(dt);
    unsigned char *p = static_cast<unsigned char *>(buf);
    std::uniform_real_distribution<double> real(0.5, 2.0);
    memset(buf, 0, n * es);
    for (size_t i = 0; i < n; ++i) {
        unsigned char *e = p + i * es;
        if (GPU_DT_LDOUBLE == dt || GPU_DT_LDOUBLE_INT == dt) {
            ld_fill(e, rng);
            if (GPU_DT_LDOUBLE_INT == dt) {
                ((gpu_pair<gpu_ld80> *) e)->i = (int) (rng() % 100);
            }
            continue;
        }
        switch (gpu_dtype_class(dt)) {
        case GPU_DTCLASS_INT:
            for (size_t k = 0; k < es; ++k) e[k] = (unsigned char) (rng() | (k == 0 ? 1 : 0));
            if (i % 7 == 3) memset(e, 0, es); /* some zeros for the logical ops */
            break;
        case GPU_DTCLASS_BOOL: *e = (unsigned char) (rng() & 1); break;
        case GPU_DTCLASS_FLOAT:
        case GPU_DTCLASS_COMPLEX:
            for (size_t k = 0; k < es / (es == 4 || dt == GPU_DT_C32 ? 4 : 8); ++k) {
                if (dt == GPU_DT_F32 || dt == GPU_DT_C32) ((float *) e)[k] = (float) real(rng);
                else ((double *) e)[k] = real(rng);
            }
            break;
        case GPU_DTCLASS_ORDERED: break; /* long double: above */
        case GPU_DTCLASS_PAIR: {
            int v = (int) (rng() % 4) + 1, idx = (int) (rng() % 100);
            switch (dt) {
            case GPU_DT_FLOAT_INT: ((gpu_pair<float> *) e)->v = (float) v; ((gpu_pair<float> *) e)->i = idx; break;
            case GPU_DT_DOUBLE_INT: ((gpu_pair<double> *) e)->v = v; ((gpu_pair<double> *) e)->i = idx; break;
            case GPU_DT_LONG_INT: ((gpu_pair<long> *) e)->v = v; ((gpu_pair<long> *) e)->i = idx; break;
            case GPU_DT_2INT: ((gpu_pair<int> *) e)->v = v; ((gpu_pair<int> *) e)->i = idx; break;
            default: ((gpu_pair<short> *) e)->v = (short) v; ((gpu_pair<short> *) e)->i = idx; break;
            }
            break;
        }
        }
    }
}

/* compare value bytes, skipping the padding of the pair types */
static int same(gpu_dtype_t dt, const void *x, const void *y, size_t n)
{
    const size_t es = gpu_dtype_size(dt);
    size_t vbytes = es;
    if (GPU_DT_LDOUBLE == dt || GPU_DT_LDOUBLE_INT == dt) {
        /* 10 value bytes; the index at 16 */
        for (size_t i = 0; i < n; ++i) {
            const unsigned char *a = (const unsigned char *) x + i * es, *b = (const unsigned char *) y + i * es;
            if (memcmp(a, b, 10) || (GPU_DT_LDOUBLE_INT == dt && memcmp(a + 16, b + 16, 4))) return 0;
        }
        return 1;
    }
    if (gpu_dtype_class(dt) == GPU_DTCLASS_PAIR) {
        for (size_t i = 0; i < n; ++i) {
            const unsigned char *a = (const unsigned char *) x + i * es, *b = (const unsigned char *) y + i * es;
            size_t voff = 0, vlen = (dt == GPU_DT_SHORT_INT) ? 2 : (es == 16 ? 8 : 4);
            size_t ioff = (dt == GPU_DT_SHORT_INT) ? 4 : (es == 16 ? 8 : 4);
            if (memcmp(a + voff, b + voff, vlen) || memcmp(a + ioff, b + ioff, 4)) return 0;
        }
        return 1;
    }
    (void) vbytes;
    return 0 == memcmp(x, y, n * es);
}

int main(int argc, char **argv)
{
    const size_t n = 1031;
    std::mt19937_64 rng(20261122);
    int valid_pairs = 0;

    /* Open MPI 4.1's op/avx adds 8- and 16-bit integers with saturation
     * (_mm256_adds_epi8), which is not C or MPI arithmetic: the reference
     * must be the plain C implementation. */
    setenv("OMPI_MCA_op", "^avx", 0);
    MPI_Init(&argc, &argv);
    for (int o = 0; o < GPU_OP_COUNT; ++o) {
        for (int d = 0; d < GPU_DT_COUNT; ++d) {
            gpu_op_t op = (gpu_op_t) o;
            gpu_dtype_t dt = (gpu_dtype_t) d;
            const size_t es = gpu_dtype_size(dt);
            std::vector<unsigned char> a(n * es), b(n * es), ours(n * es), ref(n * es);
            host_apply v = { a.data(), b.data(), ours.data(), n };
            if (!gpu_op_dtype_valid(op, dt)) {
                /* the dispatcher must refuse what the table refuses */
                if (gpu_dispatch(op, dt, v)) {
                    printf("FAIL: %s/%s dispatched but invalid\n", gpu_op_name(op), gpu_dtype_name(dt));
                    nfail++;
                } else {
                    npass++;
                }
                continue;
            }
            valid_pairs++;
            if (GPU_DT_F16 == dt || GPU_DT_BF16 == dt) {
                half_check_op(op, dt, rng); /* no MPI type to compare with */
                continue;
            }
            fill(dt, a.data(), n, rng);
            fill(dt, b.data(), n, rng);
            memset(ours.data(), 0xa5, ours.size());
            if (!gpu_dispatch(op, dt, v)) {
                printf("FAIL: %s/%s not dispatched\n", gpu_op_name(op), gpu_dtype_name(dt));
                nfail++;
                continue;
            }
            ref = b; /* MPI_Reduce_local(in, inout): inout = in op inout */
            if (MPI_SUCCESS != MPI_Reduce_local(a.data(), ref.data(), (int) n, mpi_type(dt), mpi_op(op))) {
                printf("FAIL: MPI_Reduce_local refused %s/%s\n", gpu_op_name(op), gpu_dtype_name(dt));
                nfail++;
                continue;
            }
            if (same(dt, ours.data(), ref.data(), n)) {
                npass++;
            } else {
                printf("FAIL: %s/%s differs from MPI_Reduce_local\n", gpu_op_name(op), gpu_dtype_name(dt));
                nfail++;
            }
        }
    }
    /* MPI_BYTE with the bitwise ops goes to the uint8 functors */
    {
        unsigned char a[64], b[64], o1[64], o2[64];
        for (int i = 0; i < 64; ++i) { a[i] = (unsigned char) rng(); b[i] = (unsigned char) rng(); }
        host_apply v = { a, b, o1, 64 };
        memcpy(o2, b, 64);
        gpu_dispatch(GPU_OP_BXOR, GPU_DT_U8, v);
        MPI_Reduce_local(a, o2, 64, MPI_BYTE, MPI_BXOR);
        if (0 == memcmp(o1, o2, 64)) npass++; else { nfail++; printf("FAIL: byte bxor\n"); }
    }
    half_check_conversions(rng);
    half_check_fold(rng);
    printf("test_reduce_ops: %d valid (op, type) pairs; %d passed, %d failed\n", valid_pairs, npass, nfail);
    MPI_Finalize();
    return nfail ? 1 : 0;
}
