/*
 * MPICH's half-precision names through our header and library, as a
 * program written for MPICH uses them (host buffers; no GPU needed):
 *
 *   test_mpix_half          coll/gpu loaded: MPIX_C_FLOAT16 and
 *       MPIX_BFLOAT16 exist after MPI_Init with their names and 2 bytes;
 *       SUM, PROD, MIN, MAX through MPI_Allreduce, MPI_Iallreduce,
 *       MPI_Reduce, MPI_Scan and MPI_Reduce_local give the host
 *       reference's bits (values exact in both formats); MPI_BAND is
 *       refused with MPI_ERR_OP; MPI_Bcast moves them
 *   test_mpix_half noload   --mca coll ^gpu: the handles still exist and
 *       move data; a reduction is refused (MPI_ERR_OP), not wrong
 *
 * Ends with "test_mpix_half: N passed, N failed" (rank 0).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <mpi.h>

#include "mpix/mpix_gpu.h"

static int rank, size, npass, nfail;

static void check(int ok, const char *what)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    all ? ++npass : ++nfail;
    if (0 == rank && !all) {
        printf("FAIL %s\n", what);
    }
}

/* small integers, exact in both formats: bits by hand */
static uint16_t enc(int bf, int v)
{
    float f = (float) v;
    uint32_t u;
    if (bf) {
        memcpy(&u, &f, 4);
        return (uint16_t) (u >> 16);
    }
    if (0 == v) {
        return 0;
    }
    {
        int e;
        const float fr = frexpf(fabsf(f), &e);
        return (uint16_t) ((v < 0 ? 0x8000 : 0) | (e + 14) << 10 | ((int) ldexpf(fr, 11) - 1024));
    }
}

/* element i of rank r: sums of up to 8 ranks stay below 2^8 */
static int val(int op, int r, int i)
{
    if (1 == op) { /* PROD: one rank in three differs from 1 */
        return (r + i) % 3 ? 1 : (i % 2 ? -2 : 2);
    }
    return ((r * 7 + i * 5) % 9) - 4;
}

static int ref(int op, int i, int upto)
{
    int a = val(op, 0, i);
    for (int r = 1; r < upto; ++r) {
        const int b = val(op, r, i);
        a = 0 == op ? a + b : 1 == op ? a * b : 2 == op ? (b < a ? b : a) : (b > a ? b : a);
    }
    return a;
}

int main(int argc, char **argv)
{
    const int noload = argc > 1 && 0 == strcmp(argv[1], "noload");
    const MPI_Op ops[4] = { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX };
    const char *names[4] = { "sum", "prod", "min", "max" };
    enum { N = 37 };
    uint16_t in[N], out[N], want[N];
    char what[128];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int bf = 0; bf < 2; ++bf) {
        const MPI_Datatype t = bf ? MPIX_BFLOAT16 : MPIX_C_FLOAT16;
        const char *tn = bf ? "MPIX_BFLOAT16" : "MPIX_C_FLOAT16";
#if defined(OMPI_HAVE_MPI_EXT_SHORTFLOAT)
        const int native = !bf; /* Open MPI 5.0's own, reduced by Open MPI */
#else
        const int native = 0;
#endif
        const int refused = noload && !native;
        char name[MPI_MAX_OBJECT_NAME] = "";
        int len = 0, sz = 0, rc, cls = 0;
        snprintf(what, sizeof(what), "%s exists after MPI_Init, 2 bytes, named", tn);
        if (MPI_DATATYPE_NULL == t) {
            check(0, what);
            continue;
        }
        MPI_Type_size(t, &sz);
        MPI_Type_get_name(t, name, &len);
        /* Open MPI 5.0's own MPIX_C_FLOAT16 has its own name */
        check(2 == sz && (native || 0 == strcmp(name, tn)), what);
        /* data movement: root's values reach everyone */
        for (int i = 0; i < N; ++i) {
            in[i] = enc(bf, 0 == rank ? val(0, 5, i) : 0);
        }
        rc = MPI_Bcast(in, N, t, 0, MPI_COMM_WORLD);
        {
            int ok = MPI_SUCCESS == rc;
            for (int i = 0; i < N; ++i) {
                ok = ok && in[i] == enc(bf, val(0, 5, i));
            }
            snprintf(what, sizeof(what), "%s MPI_Bcast", tn);
            check(ok, what);
        }
        for (int o = 0; o < 4; ++o) {
            MPI_Request req;
            for (int i = 0; i < N; ++i) {
                in[i] = enc(bf, val(o, rank, i));
                want[i] = enc(bf, ref(o, i, size));
            }
            for (int form = 0; form < 4; ++form) {
                const char *fn[4] = { "MPI_Allreduce", "MPI_Iallreduce", "MPI_Reduce", "MPI_Scan" };
                int ok;
                memset(out, 0xa5, sizeof(out));
                switch (form) {
                case 0: rc = MPI_Allreduce(in, out, N, t, ops[o], MPI_COMM_WORLD); break;
                case 1:
                    rc = MPI_Iallreduce(in, out, N, t, ops[o], MPI_COMM_WORLD, &req);
                    if (MPI_SUCCESS == rc) {
                        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
                    }
                    break;
                case 2: rc = MPI_Reduce(in, out, N, t, ops[o], size - 1, MPI_COMM_WORLD); break;
                default: rc = MPI_Scan(in, out, N, t, ops[o], MPI_COMM_WORLD); break;
                }
                if (refused) {
                    /* Open MPI's own check: a derived type with MPI_SUM */
                    MPI_Error_class(rc, &cls);
                    snprintf(what, sizeof(what), "%s %s %s refused without coll/gpu", tn, fn[form],
                             names[o]);
                    check(MPI_ERR_OP == cls, what);
                    continue;
                }
                ok = MPI_SUCCESS == rc;
                for (int i = 0; ok && i < N && (2 != form || rank == size - 1); ++i) {
                    ok = out[i] == (3 == form ? enc(bf, ref(o, i, rank + 1)) : want[i]);
                }
                snprintf(what, sizeof(what), "%s %s %s", tn, fn[form], names[o]);
                check(ok, what);
            }
            if (!refused) {
                /* MPI_Reduce_local: inout = in op inout */
                int ok;
                for (int i = 0; i < N; ++i) {
                    out[i] = enc(bf, val(o, 1, i));
                    in[i] = enc(bf, val(o, 0, i));
                }
                rc = MPI_Reduce_local(in, out, N, t, ops[o]);
                ok = MPI_SUCCESS == rc;
                for (int i = 0; ok && i < N; ++i) {
                    ok = out[i] == enc(bf, ref(o, i, 2));
                }
                snprintf(what, sizeof(what), "%s MPI_Reduce_local %s", tn, names[o]);
                check(ok, what);
            }
        }
        /* MPI defines no bitwise op on floating types */
        rc = MPI_Allreduce(in, out, N, t, MPI_BAND, MPI_COMM_WORLD);
        MPI_Error_class(rc, &cls);
        snprintf(what, sizeof(what), "%s MPI_BAND refused (MPI_ERR_OP)", tn);
        check(MPI_ERR_OP == cls, what);
    }
    if (0 == rank) {
        printf("test_mpix_half: %d passed, %d failed\n", npass, nfail);
    }
    MPI_Finalize();
    return nfail ? 1 : 0;
}
