/*
 * The value-index pair types with MINLOC and MAXLOC on device buffers, GPU
 * host: MPI_SHORT_INT, MPI_2INT, MPI_FLOAT_INT, MPI_DOUBLE_INT,
 * MPI_LONG_INT and MPI_LONG_DOUBLE_INT through allreduce (in place too),
 * reduce (first and last root, in place at the root), reduce_scatter_block,
 * reduce_scatter (uneven blocks, an empty one), scan and exscan, blocking,
 * nonblocking and persistent, and MPIX_Allreduce_enqueue (in place too; a
 * small and a bulk size), MPIX_Reduce_enqueue and
 * MPIX_Reduce_scatter_block_enqueue on a CUDA stream under plain MPI_Init.
 *
 * Inputs have many equal values and equal indices (ties: the smaller index
 * wins) and are known to every rank; each result is compared, value bytes
 * and index, with MPI_Reduce_local on host copies folded in rank order.
 * Outputs are poisoned first.  Which path ran is for test/run_gpu_tests.sh
 * to check (coll_gpu_timing_file names the wide path, coll_gpu_verbose the
 * stream kernels).  "N passed, N failed" on rank 0; SKIP without a GPU.
 *
 *   test_gpu_pairs [count]      elements per rank (default 1001)
 *   test_gpu_pairs count enqueue
 *                               the enqueued calls only (make check runs them
 *                               through the CUDA stand-ins: the host transport)
 */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "mpix/mpix_gpu.h"
#include "test/gpu/gpu_test_world.h"
#include "test/gpu/mpi_persist_compat.h"

typedef struct { short v; int i; } s_short;
typedef struct { int v; int i; } s_2int;
typedef struct { float v; int i; } s_float;
typedef struct { double v; int i; } s_double;
typedef struct { long v; int i; } s_long;
typedef struct { long double v; int i; } s_ldouble;

typedef struct {
    const char *name;
    MPI_Datatype t;
    size_t size, vbytes, ioff;   /* element, value bytes that carry data, index's offset */
    void (*set)(void *e, int v, int i);
} ptype_t;

#define SETTER(T, VT)                                                        \
    static void set_##T(void *e, int v, int i)                              \
    {                                                                       \
        T x;                                                                \
        memset(&x, 0, sizeof(x));                                           \
        x.v = (VT) v;                                                       \
        x.i = i;                                                            \
        memcpy(e, &x, sizeof(x));                                           \
    }
SETTER(s_short, short)
SETTER(s_2int, int)
SETTER(s_float, float)
SETTER(s_double, double)
SETTER(s_long, long)
SETTER(s_ldouble, long double)

static ptype_t types[6];

static void types_init(void)
{
    const ptype_t t[6] = {
        { "short_int", MPI_SHORT_INT, sizeof(s_short), sizeof(short), offsetof(s_short, i),
          set_s_short },
        { "2int", MPI_2INT, sizeof(s_2int), sizeof(int), offsetof(s_2int, i), set_s_2int },
        { "float_int", MPI_FLOAT_INT, sizeof(s_float), sizeof(float), offsetof(s_float, i),
          set_s_float },
        { "double_int", MPI_DOUBLE_INT, sizeof(s_double), sizeof(double),
          offsetof(s_double, i), set_s_double },
        { "long_int", MPI_LONG_INT, sizeof(s_long), sizeof(long), offsetof(s_long, i),
          set_s_long },
        /* x87 extended: 10 bytes of value in a 16-byte long double */
        { "long_double_int", MPI_LONG_DOUBLE_INT, sizeof(s_ldouble),
          sizeof(long double) >= 16 ? 10 : sizeof(long double), offsetof(s_ldouble, i),
          set_s_ldouble },
    };
    memcpy(types, t, sizeof(t));
}

/* rank r's element k for tag: values -3..3 and indices 0..3, so that equal
 * values meet often, with equal and with different indices */
static void gen(const ptype_t *t, char *buf, int r, size_t n, int tag)
{
    for (size_t k = 0; k < n; ++k) {
        const unsigned h = (unsigned) (r * 2654435761u + k * 40503u + (unsigned) tag * 977u);
        t->set(buf + k * t->size, (int) ((h >> 7) % 7) - 3, (int) ((h >> 13) % 4));
    }
}

/* element k as "value bytes (hex) / index", for failure messages */
static const char *show(const ptype_t *t, const char *b, size_t k, char *txt)
{
    int idx;
    char *p = txt;
    b += k * t->size;
    for (size_t j = t->vbytes; j-- > 0;) {
        p += sprintf(p, "%02x", (unsigned char) b[j]);
    }
    memcpy(&idx, b + t->ioff, sizeof(idx));
    sprintf(p, " / %d", idx);
    return txt;
}

/* element k equal in its value bytes and index */
static int same(const ptype_t *t, const char *a, const char *b, size_t k)
{
    a += k * t->size;
    b += k * t->size;
    return 0 == memcmp(a, b, t->vbytes) && 0 == memcmp(a + t->ioff, b + t->ioff, sizeof(int));
}

typedef enum { C_ALLREDUCE, C_ALLREDUCE_IP, C_REDUCE0, C_REDUCE_LAST_IP, C_RSB, C_RS, C_SCAN,
               C_EXSCAN, NCOLL } coll_t;
static const char *cname[NCOLL] = { "allreduce", "allreduce in place", "reduce to rank 0",
                                    "reduce to the last rank, in place", "reduce_scatter_block",
                                    "reduce_scatter", "scan", "exscan" };
typedef enum { F_BLOCKING, F_NONBLOCKING, F_PERSISTENT, NFORM } form_t;
static const char *fname[NFORM] = { "blocking", "nonblocking", "persistent" };

/* reduce_scatter's uneven blocks: rank q gets n + q - 1 (rank 1 of 3 or
 * more an empty block) */
static int rs_count(int q, int n)
{
    return 1 == q && wsize > 2 ? 0 : n + q - 1 > 0 ? n + q - 1 : 1;
}

/* the reference: ranks lo..hi-1's element off + k folded in rank order */
static void ref(const ptype_t *t, MPI_Op op, int tag, size_t all, size_t off, size_t n, int lo,
                int hi, char *out)
{
    char *x = malloc(all * t->size);
    gen(t, x, lo, all, tag);
    memcpy(out, x + off * t->size, n * t->size);
    for (int r = lo + 1; r < hi; ++r) {
        gen(t, x, r, all, tag);
        /* inout = in op inout: the same result as acc op x for these ops
         * on ordered values (no NaN here) */
        MPI_Reduce_local(x + off * t->size, out, (int) n, t->t, op);
    }
    free(x);
}

static int run_coll(MPI_Comm comm, const ptype_t *t, MPI_Op op, coll_t c, form_t f, int n,
                    int tag)
{
    const int me = wrank, last = wsize - 1;
    int rcounts[64], lo = 0, hi = wsize, root = -1, ok = 1, ret = MPI_SUCCESS;
    size_t all = (size_t) n, off = 0, nout = (size_t) n;
    MPI_Request req = MPI_REQUEST_NULL;
    char *h_in, *h_out, *h_ref, *d_in, *d_out;

    if (C_RSB == c) {
        all = (size_t) n * (size_t) wsize;
        off = (size_t) n * (size_t) me;
    } else if (C_RS == c) {
        all = 0;
        for (int q = 0; q < wsize; ++q) {
            rcounts[q] = rs_count(q, n);
            off += q < me ? (size_t) rcounts[q] : 0;
            all += (size_t) rcounts[q];
        }
        nout = (size_t) rcounts[me];
    } else if (C_SCAN == c) {
        hi = me + 1;
    } else if (C_EXSCAN == c) {
        hi = me;
    } else if (C_REDUCE0 == c || C_REDUCE_LAST_IP == c) {
        root = C_REDUCE0 == c ? 0 : last;
        hi = me == root ? wsize : 0;
    }
    const int in_place = C_ALLREDUCE_IP == c || (C_REDUCE_LAST_IP == c && me == root);
    h_in = malloc(all * t->size + 1);
    h_out = malloc(all * t->size + 1);
    h_ref = malloc(all * t->size + 1);
    CK(cudaMalloc((void **) &d_in, all * t->size + 1));
    CK(cudaMalloc((void **) &d_out, all * t->size + 1));
    gen(t, h_in, me, all, tag);
    CK(cudaMemcpy(d_in, h_in, all * t->size, cudaMemcpyHostToDevice));
    CK(cudaMemset(d_out, 0x5a, all * t->size + 1));
    if (in_place) {
        CK(cudaMemcpy(d_out, h_in, all * t->size, cudaMemcpyHostToDevice));
    }
    const void *sb = in_place ? MPI_IN_PLACE : d_in;
    switch (f) {
    case F_BLOCKING:
        switch (c) {
        case C_ALLREDUCE: case C_ALLREDUCE_IP:
            ret = MPI_Allreduce(sb, d_out, n, t->t, op, comm); break;
        case C_REDUCE0: case C_REDUCE_LAST_IP:
            ret = MPI_Reduce(sb, d_out, n, t->t, op, root, comm); break;
        case C_RSB: ret = MPI_Reduce_scatter_block(sb, d_out, n, t->t, op, comm); break;
        case C_RS: ret = MPI_Reduce_scatter(sb, d_out, rcounts, t->t, op, comm); break;
        case C_SCAN: ret = MPI_Scan(sb, d_out, n, t->t, op, comm); break;
        default: ret = MPI_Exscan(sb, d_out, n, t->t, op, comm); break;
        }
        break;
    case F_NONBLOCKING:
        switch (c) {
        case C_ALLREDUCE: case C_ALLREDUCE_IP:
            ret = MPI_Iallreduce(sb, d_out, n, t->t, op, comm, &req); break;
        case C_REDUCE0: case C_REDUCE_LAST_IP:
            ret = MPI_Ireduce(sb, d_out, n, t->t, op, root, comm, &req); break;
        case C_RSB: ret = MPI_Ireduce_scatter_block(sb, d_out, n, t->t, op, comm, &req); break;
        case C_RS: ret = MPI_Ireduce_scatter(sb, d_out, rcounts, t->t, op, comm, &req); break;
        case C_SCAN: ret = MPI_Iscan(sb, d_out, n, t->t, op, comm, &req); break;
        default: ret = MPI_Iexscan(sb, d_out, n, t->t, op, comm, &req); break;
        }
        break;
    default: {
        MPI_Info info = MPI_INFO_NULL;
        switch (c) {
        case C_ALLREDUCE: case C_ALLREDUCE_IP:
            ret = MPIX_Allreduce_init(sb, d_out, n, t->t, op, comm, info, &req); break;
        case C_REDUCE0: case C_REDUCE_LAST_IP:
            ret = MPIX_Reduce_init(sb, d_out, n, t->t, op, root, comm, info, &req); break;
        case C_RSB:
            ret = MPIX_Reduce_scatter_block_init(sb, d_out, n, t->t, op, comm, info, &req);
            break;
        case C_RS:
            ret = MPIX_Reduce_scatter_init(sb, d_out, rcounts, t->t, op, comm, info, &req);
            break;
        case C_SCAN: ret = MPIX_Scan_init(sb, d_out, n, t->t, op, comm, info, &req); break;
        default: ret = MPIX_Exscan_init(sb, d_out, n, t->t, op, comm, info, &req); break;
        }
        /* two rounds: the second must not see the first's scratch */
        for (int round = 0; round < 2 && MPI_SUCCESS == ret; ++round) {
            ret = MPI_Start(&req);
            if (MPI_SUCCESS == ret) {
                ret = MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
            if (0 == round && in_place) {   /* the input again */
                CK(cudaMemcpy(d_out, h_in, all * t->size, cudaMemcpyHostToDevice));
            }
        }
        if (MPI_REQUEST_NULL != req) {
            MPI_Request_free(&req);
        }
        break;
    }
    }
    if (F_NONBLOCKING == f && MPI_SUCCESS == ret) {
        ret = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    ok = MPI_SUCCESS == ret;
    CK(cudaMemcpy(h_out, d_out, all * t->size + 1, cudaMemcpyDeviceToHost));
    if (hi > lo) {
        ref(t, op, tag, all, off, nout, lo, hi, h_ref);
        for (size_t k = 0; k < nout && ok; ++k) {
            if (!same(t, h_out, h_ref, k)) {
                char got[64], want[64];
                printf("rank %d: %s %s %s %s: element %zu is %s, the host reference %s\n", me,
                       fname[f], cname[c], t->name, op == MPI_MINLOC ? "minloc" : "maxloc", k,
                       show(t, h_out, k, got), show(t, h_ref, k, want));
                ok = 0;
            }
        }
    }
    /* nothing written past the result (not in place: the poison stays) */
    if (!in_place && ok) {
        const unsigned char *b = (const unsigned char *) h_out;
        ok = 0x5a == b[nout * t->size] || hi <= lo;
    }
    free(h_in);
    free(h_out);
    free(h_ref);
    CK(cudaFree(d_in));
    CK(cudaFree(d_out));
    return ok;
}

static MPI_Comm stream_comm(cudaStream_t st, MPIX_Stream *ms)
{
    MPI_Info info;
    MPI_Comm c;
    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cudaStream_t");
    MPIX_Info_set_hex(info, "value", &st, sizeof(st));
    MPIX_Stream_create(info, ms);
    MPI_Info_free(&info);
    MPIX_Stream_comm_create(MPI_COMM_WORLD, *ms, &c);
    return c;
}

typedef enum { E_ALLREDUCE, E_ALLREDUCE_IP, E_REDUCE, E_RSB, NENQ } enq_t;
static const char *ename[NENQ] = { "MPIX_Allreduce_enqueue", "MPIX_Allreduce_enqueue in place",
                                   "MPIX_Reduce_enqueue to the last rank",
                                   "MPIX_Reduce_scatter_block_enqueue" };

/* one enqueued call in the stream's order: copy in, enqueue, copy out */
static int run_enqueue(MPI_Comm sc, cudaStream_t st, const ptype_t *t, MPI_Op op, enq_t e, int n,
                       int tag)
{
    const int me = wrank, last = wsize - 1;
    const size_t all = E_RSB == e ? (size_t) n * (size_t) wsize : (size_t) n;
    const size_t off = E_RSB == e ? (size_t) n * (size_t) me : 0;
    const int folds = E_REDUCE != e || me == last;
    char *h_in = malloc(all * t->size), *h_out = malloc(all * t->size);
    char *h_ref = malloc(all * t->size), *d_in, *d_out;
    int ok, ret;

    CK(cudaMalloc((void **) &d_in, all * t->size));
    CK(cudaMalloc((void **) &d_out, all * t->size));
    gen(t, h_in, me, all, tag);
    CK(cudaMemcpyAsync(d_in, h_in, all * t->size, cudaMemcpyHostToDevice, st));
    CK(cudaMemsetAsync(d_out, 0x5a, all * t->size, st));
    switch (e) {
    case E_ALLREDUCE:
        ret = MPIX_Allreduce_enqueue(d_in, d_out, n, t->t, op, sc); break;
    case E_ALLREDUCE_IP:
        ret = MPIX_Allreduce_enqueue(MPI_IN_PLACE, d_in, n, t->t, op, sc); break;
    case E_REDUCE:
        ret = MPIX_Reduce_enqueue(d_in, d_out, n, t->t, op, last, sc); break;
    default:
        ret = MPIX_Reduce_scatter_block_enqueue(d_in, d_out, n, t->t, op, sc); break;
    }
    CK(cudaMemcpyAsync(h_out, E_ALLREDUCE_IP == e ? d_in : d_out, all * t->size,
                       cudaMemcpyDeviceToHost, st));
    CK(cudaStreamSynchronize(st));
    ok = MPI_SUCCESS == ret;
    if (ok && folds) {
        const size_t nout = (size_t) n;
        ref(t, op, tag, all, off, nout, 0, wsize, h_ref);
        for (size_t k = 0; k < nout && ok; ++k) {
            if (!same(t, h_out, h_ref, k)) {
                char got[64], want[64];
                printf("rank %d: %s %s %s, %d elements: element %zu is %s, the host reference "
                       "%s\n", me, ename[e], t->name, op == MPI_MINLOC ? "minloc" : "maxloc", n,
                       k, show(t, h_out, k, got), show(t, h_ref, k, want));
                ok = 0;
            }
        }
    }
    free(h_in);
    free(h_out);
    free(h_ref);
    CK(cudaFree(d_in));
    CK(cudaFree(d_out));
    return ok;
}

int main(int argc, char **argv)
{
    const MPI_Op opsl[2] = { MPI_MINLOC, MPI_MAXLOC };
    int ndev = 0, tag = 0;
    char what[256];
    MPI_Comm comm, sc;
    MPIX_Stream ms;
    cudaStream_t st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    const int n = argc > 1 ? atoi(argv[1]) : 1001;
    const int enqueue_only = argc > 2 && 0 == strcmp(argv[2], "enqueue");
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || 0 == ndev) {
        if (0 == wrank) {
            printf("SKIP: no CUDA device (test_gpu_pairs needs a GPU)\n");
        }
        MPI_Finalize();
        return 0;
    }
    if (wsize > 64) {
        if (0 == wrank) {
            printf("SKIP: test_gpu_pairs runs up to 64 ranks\n");
        }
        MPI_Finalize();
        return 0;
    }
    CK(cudaSetDevice(wrank % ndev));
    types_init();
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    for (int ti = 0; ti < 6 && !enqueue_only; ++ti) {
        for (int o = 0; o < 2; ++o) {
            for (int f = 0; f < NFORM; ++f) {
                for (int c = 0; c < NCOLL; ++c) {
                    const int ok = run_coll(comm, &types[ti], opsl[o], (coll_t) c, (form_t) f, n,
                                            ++tag);
                    snprintf(what, sizeof(what), "%s %s %s %s, %d elements, %d ranks", fname[f],
                             cname[c], types[ti].name, o ? "maxloc" : "minloc", n, wsize);
                    record(ok, what);
                }
            }
        }
    }
    /* several nonblocking calls in flight on one communicator, then a
     * blocking one: they share the wide path's area in turn */
    if (!enqueue_only) {
        MPI_Request rq[3];
        const ptype_t *t = &types[5];
        char *d[3], *h = malloc((size_t) n * t->size), *r = malloc((size_t) n * t->size);
        int ok = 1;
        for (int k = 0; k < 3; ++k) {
            CK(cudaMalloc((void **) &d[k], (size_t) n * t->size));
            gen(t, h, wrank, (size_t) n, 5000 + k);
            CK(cudaMemcpy(d[k], h, (size_t) n * t->size, cudaMemcpyHostToDevice));
            MPI_Iallreduce(MPI_IN_PLACE, d[k], n, t->t, k & 1 ? MPI_MAXLOC : MPI_MINLOC, comm,
                           &rq[k]);
        }
        MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
        for (int k = 0; k < 3; ++k) {
            CK(cudaMemcpy(h, d[k], (size_t) n * t->size, cudaMemcpyDeviceToHost));
            ref(t, k & 1 ? MPI_MAXLOC : MPI_MINLOC, 5000 + k, (size_t) n, 0, (size_t) n, 0,
                wsize, r);
            for (int e = 0; e < n && ok; ++e) {
                ok = same(t, h, r, (size_t) e);
            }
            CK(cudaFree(d[k]));
        }
        free(h);
        free(r);
        record(ok, "three nonblocking long_double_int allreduces in flight at once");
    }
    /* enqueued, under plain MPI_Init: a small and a bulk size */
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    sc = stream_comm(st, &ms);
    for (int ti = 0; ti < 6; ++ti) {
        for (int o = 0; o < 2; ++o) {
            for (int e = 0; e < NENQ; ++e) {
                const int sizes[2] = { 7, 40000 };
                for (int s = 0; s < 2; ++s) {
                    const int ok = run_enqueue(sc, st, &types[ti], opsl[o], (enq_t) e, sizes[s],
                                               ++tag);
                    snprintf(what, sizeof(what), "%s %s %s, %d elements, %d ranks", ename[e],
                             types[ti].name, o ? "maxloc" : "minloc", sizes[s], wsize);
                    record(ok, what);
                }
            }
        }
    }
    MPI_Comm_free(&sc);
    MPIX_Stream_free(&ms);
    CK(cudaStreamDestroy(st));
    MPI_Comm_free(&comm);
    if (0 == wrank) {
        printf("test_gpu_pairs: %d passed, %d failed\n", npass, nfail);
    }
    MPI_Finalize();
    return 0;
}
