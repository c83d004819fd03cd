/*
 * The put path (engine/gpu_engine_put.c) against what it must not get
 * wrong: buffers it may not share (cudaMallocAsync pools, managed memory)
 * on some ranks or all, which every rank must learn before anyone copies;
 * buffers inside a larger allocation (the IPC handle names the allocation,
 * the offset the buffer); a receive buffer freed and allocated again
 * between calls (a stale mapping would write into freed memory and leave
 * the new buffer untouched); lengths that are not multiples of 16 bytes;
 * bytes around the output that must stay as they were.  Every collective
 * it takes: alltoall, allgather, gather, scatter, bcast (read; spread over
 * more than 2 ranks; by the copy engines), reduce, reduce_scatter_block,
 * scan, exscan, each against a host reference.  Run it with the path
 * forced (--mca coll_gpu_put_min 1 --mca coll_gpu_persist 0) and without.
 *
 *   test_gpu_put [elements per rank pair]   prints "N passed, N failed"
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "gpu_test_world.h"

enum { M_DEV, M_ASYNC, M_MANAGED, M_NKINDS };
static const char *mname[] = { "cudaMalloc", "cudaMallocAsync", "managed" };

/* guard bytes before and after every buffer (the buffer sits inside a
 * larger allocation: its offset in it is not 0) */
#define GUARD 4100
#define POISON 0x5a

typedef struct {
    int kind;
    char *base;                 /* the allocation */
    float *p;                   /* the buffer, GUARD bytes in */
    size_t n;
} buf_t;

static void balloc(buf_t *b, int kind, size_t n)
{
    const size_t bytes = n * sizeof(float) + 2 * GUARD;
    b->kind = kind;
    b->n = n;
    if (M_DEV == kind) {
        CK(cudaMalloc((void **) &b->base, bytes));
    } else if (M_ASYNC == kind) {
        CK(cudaMallocAsync((void **) &b->base, bytes, 0));
        CK(cudaStreamSynchronize(0));
    } else {
        CK(cudaMallocManaged((void **) &b->base, bytes, cudaMemAttachGlobal));
    }
    CK(cudaMemset(b->base, POISON, bytes));
    CK(cudaDeviceSynchronize());
    b->p = (float *) (b->base + GUARD);
}

static void bfree(buf_t *b)
{
    if (M_ASYNC == b->kind) {
        CK(cudaFreeAsync(b->base, 0));
        CK(cudaStreamSynchronize(0));
    } else {
        CK(cudaFree(b->base));
    }
    b->base = NULL;
}

static void bset(buf_t *b, const float *h)
{
    CK(cudaMemcpy(b->p, h, b->n * sizeof(float), cudaMemcpyHostToDevice));
}

/* 0 when the buffer holds want[0..n) and both guards are untouched */
static long bcheck(const buf_t *b, const float *want, size_t n)
{
    const size_t bytes = b->n * sizeof(float) + 2 * GUARD;
    unsigned char *h = malloc(bytes);
    long bad = 0;
    CK(cudaMemcpy(h, b->base, bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < GUARD; ++i) {
        bad += POISON != h[i] || POISON != h[bytes - 1 - i];
    }
    for (size_t i = 0; NULL != want && i < n; ++i) {
        float v;
        memcpy(&v, h + GUARD + i * sizeof(float), sizeof(v));
        bad += v != want[i];
    }
    free(h);
    return bad;
}

/* rank r's element i of input t */
static float in(int r, size_t i, int t)
{
    return val(r, i, t);
}

/* One collective with the send and receive buffers of kind sk / rk on this
 * rank; returns the number of wrong elements and touched guard bytes here */
static long one(MPI_Comm c, int coll, int sk, int rk, size_t n, int t)
{
    const int me = wrank, np = wsize, root = (t + 1) % np;
    buf_t s, r;
    size_t sn = n, rn = n;
    float *hs, *want;
    long bad = 0;

    switch (coll) {
    case 0: case 1: case 2: sn = (size_t) np * n; rn = (size_t) np * n; break; /* alltoall/gather/allgather */
    case 3: sn = (size_t) np * n; rn = n; break;                            /* scatter */
    case 6: sn = (size_t) np * n; rn = n; break;                            /* reduce_scatter_block */
    default: break;
    }
    if (1 == coll || 2 == coll) {
        sn = n;
    }
    balloc(&s, sk, sn);
    balloc(&r, rk, rn);
    hs = malloc(sn * sizeof(float));
    want = calloc(rn, sizeof(float));
    for (size_t i = 0; i < sn; ++i) {
        hs[i] = in(me, i, t);
    }
    bset(&s, hs);
    switch (coll) {
    case 0:
        MPI_Alltoall(s.p, (int) n, MPI_FLOAT, r.p, (int) n, MPI_FLOAT, c);
        for (int q = 0; q < np; ++q) {
            for (size_t i = 0; i < n; ++i) {
                want[q * n + i] = in(q, me * n + i, t);
            }
        }
        bad += bcheck(&r, want, rn);
        break;
    case 1:
        MPI_Allgather(s.p, (int) n, MPI_FLOAT, r.p, (int) n, MPI_FLOAT, c);
        for (int q = 0; q < np; ++q) {
            for (size_t i = 0; i < n; ++i) {
                want[q * n + i] = in(q, i, t);
            }
        }
        bad += bcheck(&r, want, rn);
        break;
    case 2:
        MPI_Gather(s.p, (int) n, MPI_FLOAT, r.p, (int) n, MPI_FLOAT, root, c);
        for (int q = 0; q < np; ++q) {
            for (size_t i = 0; i < n; ++i) {
                want[q * n + i] = in(q, i, t);
            }
        }
        bad += bcheck(&r, me == root ? want : NULL, rn);
        break;
    case 3:
        MPI_Scatter(s.p, (int) n, MPI_FLOAT, r.p, (int) n, MPI_FLOAT, root, c);
        for (size_t i = 0; i < n; ++i) {
            want[i] = in(root, me * n + i, t);
        }
        bad += bcheck(&r, want, rn);
        break;
    case 4:
        /* bcast in the receive buffer: the root's input first */
        if (me == root) {
            bset(&r, hs);
        }
        MPI_Bcast(r.p, (int) n, MPI_FLOAT, root, c);
        for (size_t i = 0; i < n; ++i) {
            want[i] = in(root, i, t);
        }
        bad += bcheck(&r, want, rn);
        break;
    case 5:
        MPI_Reduce(s.p, r.p, (int) n, MPI_FLOAT, MPI_SUM, root, c);
        for (size_t i = 0; i < n; ++i) {
            for (int q = 0; q < np; ++q) {
                want[i] += in(q, i, t);
            }
        }
        bad += bcheck(&r, me == root ? want : NULL, rn);
        break;
    case 6:
        MPI_Reduce_scatter_block(s.p, r.p, (int) n, MPI_FLOAT, MPI_SUM, c);
        for (size_t i = 0; i < n; ++i) {
            for (int q = 0; q < np; ++q) {
                want[i] += in(q, me * n + i, t);
            }
        }
        bad += bcheck(&r, want, rn);
        break;
    default:
        if (7 == coll) {
            MPI_Scan(s.p, r.p, (int) n, MPI_FLOAT, MPI_MAX, c);
        } else {
            MPI_Exscan(s.p, r.p, (int) n, MPI_FLOAT, MPI_MAX, c);
        }
        for (size_t i = 0; i < n; ++i) {
            want[i] = 0.0f;
            for (int q = 0; q < (7 == coll ? me + 1 : me); ++q) {
                want[i] = 0 == q || in(q, i, t) > want[i] ? in(q, i, t) : want[i];
            }
        }
        /* exscan leaves rank 0's output undefined: only its guards count */
        bad += bcheck(&r, 8 == coll && 0 == me ? NULL : want, rn);
        break;
    }
    free(hs);
    free(want);
    bfree(&s);
    bfree(&r);
    return bad;
}

static const char *cname[] = { "alltoall", "allgather", "gather", "scatter", "bcast", "reduce",
                               "reduce_scatter_block", "scan", "exscan" };
#define NCOLLS 9

/* the kinds of rank 0 and of the others, per pattern */
static const int pat[][2] = { { M_DEV, M_DEV }, { M_ASYNC, M_DEV }, { M_DEV, M_ASYNC },
                              { M_ASYNC, M_ASYNC }, { M_MANAGED, M_DEV } };
#define NPAT 5

int main(int argc, char **argv)
{
    int ndev = 0;
    char what[200];
    MPI_Comm c;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    /* a pair just past 1 MiB and not a multiple of 16 bytes by default */
    const size_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : (size_t) 262147;
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || 0 == ndev) {
        if (0 == wrank) {
            printf("SKIP: no CUDA device (test_gpu_put needs a GPU)\n");
        }
        MPI_Finalize();
        return 0;
    }
    CK(cudaSetDevice(wrank % ndev));
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    for (int p = 0; p < NPAT; ++p) {
        const int k = 0 == wrank ? pat[p][0] : pat[p][1];
        for (int coll = 0; coll < NCOLLS; ++coll) {
            /* send and receive of the same kind, then the other way round
             * for the receive side (pool memory received, device sent) */
            const long bad = one(c, coll, k, k, n, 10 * p + coll) +
                             one(c, coll, M_DEV, k, n, 10 * p + coll + 100);
            snprintf(what, sizeof(what), "%s, %zu floats per pair, rank 0 %s, others %s, "
                     "buffers inside their allocations", cname[coll], n, mname[pat[p][0]],
                     mname[pat[p][1]]);
            record(0 == bad, what);
        }
    }
    /* the same receive address twice with a free in between: each call must
     * land in the live allocation (alltoall and bcast, reused pointers) */
    for (int rep = 0; rep < 3; ++rep) {
        long bad = 0;
        for (int coll = 0; coll < NCOLLS; ++coll) {
            bad += one(c, coll, M_DEV, M_DEV, n, 300 + 10 * rep + coll);
        }
        snprintf(what, sizeof(what), "every collective again, allocations freed and made anew "
                 "(round %d)", rep);
        record(0 == bad, what);
    }
    MPI_Comm_free(&c);
    if (0 == wrank) {
        printf("test_gpu_put: %d passed, %d failed\n", npass, nfail);
    }
    MPI_Finalize();
    return 0;
}
