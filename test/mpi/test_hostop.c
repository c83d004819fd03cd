/*
 * The host ops of the staged path (ompi_coll_gpu/coll_gpu_hostop.c), on the
 * CPU: for predefined ops and types the op handed to the previous module
 * must fold with this project's functors, whatever Open MPI's op
 * components do (Debian's 4.1.4 op/avx).  Checks, against C references:
 * every valid (op, integer/float type) pair through MPI_Reduce_local,
 * unsigned long MAX/MIN above 2^63, int8 sums that wrap, a contiguous
 * derived type, and MPI_Allreduce over the previous module (tuned) with
 * the wrapper at 1..40 elements.  Prints "N passed, N failed" on rank 0.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct ompi_op_t *mca_coll_gpu_host_op(struct ompi_op_t *op);

static int rank, size, npass, nfail;

static void record(int ok, const char *what)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    all ? ++npass : ++nfail;
    if (0 == rank && !all) {
        printf("FAIL %s\n", what);
    }
}

static uint64_t rng(uint64_t *s)
{
    uint64_t x = *s += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* the C meaning of op on two values of an integer type of width bits */
#define INT_REF(T)                                                                   \
    static T ref_##T(int op, T a, T b)                                               \
    {                                                                                \
        switch (op) {                                                                \
        case 0: return (T) (a + b);                                                  \
        case 1: return (T) (a * b);                                                  \
        case 2: return a < b ? a : b;                                                \
        case 3: return a > b ? a : b;                                                \
        case 4: return (T) (a & b);                                                  \
        case 5: return (T) (a | b);                                                  \
        case 6: return (T) (a ^ b);                                                  \
        case 7: return (T) ((a != 0) && (b != 0));                                   \
        case 8: return (T) ((a != 0) || (b != 0));                                   \
        default: return (T) ((a != 0) != (b != 0));                                  \
        }                                                                            \
    }
INT_REF(int8_t)
INT_REF(uint8_t)
INT_REF(int16_t)
INT_REF(uint16_t)
INT_REF(int32_t)
INT_REF(uint32_t)
INT_REF(int64_t)
INT_REF(uint64_t)

#define CHECK_INT(T, MT, OPS, NOPS)                                                      \
    do {                                                                                 \
        for (int k = 0; k < NOPS; ++k) {                                                 \
            T a[37], b[37], want[37];                                                    \
            for (int i = 0; i < 37; ++i) {                                               \
                a[i] = (T) rng(&seed);                                                   \
                b[i] = (T) rng(&seed);                                                   \
                if (i % 5 == 0) {                                                        \
                    a[i] = 0;                                                            \
                }                                                                        \
                want[i] = ref_##T(k, a[i], b[i]);                                        \
            }                                                                            \
            MPI_Reduce_local(a, b, 37, MT, mca_coll_gpu_host_op(OPS[k]));                \
            ok &= 0 == memcmp(b, want, sizeof(want));                                    \
            if (0 != memcmp(b, want, sizeof(want))) {                                    \
                printf("rank %d: %s op %d differs\n", rank, #T, k);                      \
            }                                                                            \
        }                                                                                \
    } while (0)

int main(int argc, char **argv)
{
    uint64_t seed = 42;
    int ok = 1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    seed += (uint64_t) rank;
    {
        const MPI_Op ops[10] = { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND,
                                 MPI_BOR, MPI_BXOR, MPI_LAND, MPI_LOR, MPI_LXOR };
        CHECK_INT(int8_t, MPI_INT8_T, ops, 10);
        CHECK_INT(uint8_t, MPI_UINT8_T, ops, 10);
        CHECK_INT(int16_t, MPI_INT16_T, ops, 10);
        CHECK_INT(uint16_t, MPI_UINT16_T, ops, 10);
        CHECK_INT(int32_t, MPI_INT32_T, ops, 10);
        CHECK_INT(uint32_t, MPI_UINT32_T, ops, 10);
        CHECK_INT(int64_t, MPI_INT64_T, ops, 10);
        CHECK_INT(uint64_t, MPI_UINT64_T, ops, 10);
        CHECK_INT(uint64_t, MPI_UNSIGNED_LONG, ops, 10);
        record(ok, "every (op, integer type) through the wrapper is C arithmetic");
    }
    {
        unsigned long a[3] = { 0x8000000000000001ul, 5, 0xfffffffffffffff0ul };
        unsigned long b[3] = { 7, 0x9000000000000000ul, 1 }, c[3];
        memcpy(c, b, sizeof(c));
        MPI_Reduce_local(a, b, 3, MPI_UNSIGNED_LONG, mca_coll_gpu_host_op(MPI_MAX));
        MPI_Reduce_local(a, c, 3, MPI_UNSIGNED_LONG, mca_coll_gpu_host_op(MPI_MIN));
        record(b[0] == a[0] && b[1] == 0x9000000000000000ul && b[2] == a[2] && c[0] == 7 &&
               c[1] == 5 && c[2] == 1, "unsigned long max/min above 2^63 compare unsigned");
    }
    {
        ok = 1;
        for (int n = 1; n <= 40; ++n) {
            float f[40], g[40], want[40];
            double d[40], e[40];
            for (int i = 0; i < n; ++i) {
                f[i] = (float) (rng(&seed) % 1000) * 0.25f;
                g[i] = (float) (rng(&seed) % 1000) * 0.5f;
                want[i] = f[i] + g[i];
                d[i] = f[i];
                e[i] = g[i];
            }
            MPI_Reduce_local(f, g, n, MPI_FLOAT, mca_coll_gpu_host_op(MPI_SUM));
            MPI_Reduce_local(d, e, n, MPI_DOUBLE, mca_coll_gpu_host_op(MPI_PROD));
            for (int i = 0; i < n; ++i) {
                ok &= g[i] == want[i] && e[i] == d[i] * (double) (want[i] - d[i]);
            }
        }
        record(ok, "float sums and double products of 1..40 elements");
    }
    {
        MPI_Datatype pair;
        float a[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, b[8] = { 8, 7, 6, 5, 4, 3, 2, 1 };
        MPI_Type_contiguous(2, MPI_FLOAT, &pair);
        MPI_Type_commit(&pair);
        MPI_Reduce_local(a, b, 4, pair, mca_coll_gpu_host_op(MPI_SUM));
        ok = 1;
        for (int i = 0; i < 8; ++i) {
            ok &= 9.0f == b[i];
        }
        MPI_Type_free(&pair);
        record(ok, "a contiguous derived type of floats folds element by element");
    }
    {
        /* through the previous module, as the staged path uses it */
        ok = 1;
        for (int n = 1; n <= 40; ++n) {
            int32_t in[40], out[40];
            float fin[40], fout[40];
            for (int i = 0; i < n; ++i) {
                in[i] = (rank + 1) * 1000 + i;
                fin[i] = (float) ((rank + 1) * 3 + i);
            }
            MPI_Allreduce(in, out, n, MPI_INT32_T, mca_coll_gpu_host_op(MPI_SUM), MPI_COMM_WORLD);
            MPI_Allreduce(fin, fout, n, MPI_FLOAT, mca_coll_gpu_host_op(MPI_MAX), MPI_COMM_WORLD);
            for (int i = 0; i < n; ++i) {
                ok &= out[i] == 1000 * size * (size + 1) / 2 + size * i &&
                      fout[i] == (float) (size * 3 + i);
            }
        }
        record(ok, "MPI_Allreduce with the wrappers, 1..40 elements");
    }
    /* not a predefined op: left alone */
    record(MPI_REPLACE == (MPI_Op) mca_coll_gpu_host_op(MPI_REPLACE), "other ops pass through");
    if (0 == rank) {
        printf("test_hostop: %d passed, %d failed\n", npass, nfail);
    }
    MPI_Finalize();
    return nfail ? 1 : 0;
}
