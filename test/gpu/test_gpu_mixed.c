/*
 * Mixed memory kinds across ranks (issue "never hang"): in one call some
 * ranks pass host memory and others device memory, or one rank sends from
 * device memory and receives into host memory, or passes managed memory.
 * MPI lets each rank choose; every collective must complete with the right
 * result.  Each pattern runs every blocking collective on a communicator
 * of its own, then all patterns again in turns on one communicator (the
 * ranks' kinds change call by call, more often than the kind board keeps
 * change points), and once with all device buffers as the control.
 *
 *   test_gpu_mixed [mixed] [bytes]     prints "N passed, N failed" on rank 0
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

static int wrank, wsize, npass, nfail;

#define CK(call) do { cudaError_t e_ = (call); if (cudaSuccess != e_) { \
    fprintf(stderr, "rank %d: %s:%d %s: %s\n", wrank, __FILE__, __LINE__, #call, \
            cudaGetErrorString(e_)); MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

enum { K_HOST, K_DEV, K_MANAGED };
static const char *kname[] = { "host", "device", "managed" };

static void record(int ok, const char *what)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    all ? ++npass : ++nfail;
    if (0 == wrank) {
        printf("%s %s\n", all ? "PASS" : "FAIL", what);
        fflush(stdout);
    }
}

static float val(int r, size_t i, int t)
{
    return (float) ((((uint64_t) r + 1) * 2654435761u + i * 40503u + (uint64_t) t * 977u) % 97 + 1);
}

static float *alloc(int kind, size_t n)
{
    float *p = NULL;
    if (K_HOST == kind) {
        p = malloc(n * sizeof(float));
    } else if (K_DEV == kind) {
        CK(cudaMalloc((void **) &p, n * sizeof(float)));
    } else {
        CK(cudaMallocManaged((void **) &p, n * sizeof(float), cudaMemAttachGlobal));
    }
    return p;
}

static void release(int kind, float *p)
{
    if (K_HOST == kind) {
        free(p);
    } else {
        CK(cudaFree(p));
    }
}

/* n elements of rank r's input t (r < 0: poison) written at p */
static void fill(float *p, size_t n, int r, int t)
{
    float *h = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; ++i) {
        h[i] = r < 0 ? -12345.0f : val(r, i, t);
    }
    CK(cudaMemcpy(p, h, n * sizeof(float), cudaMemcpyDefault));
    free(h);
}

static float *fetch(const float *p, size_t n)
{
    float *h = malloc(n * sizeof(float));
    CK(cudaMemcpy(h, p, n * sizeof(float), cudaMemcpyDefault));
    return h;
}

/* element i of the sum over ranks lo..hi-1 of input t */
static float sum(int lo, int hi, size_t i, int t)
{
    float s = 0;
    for (int r = lo; r < hi; ++r) {
        s += val(r, i, t);
    }
    return s;
}

/* every blocking collective once with this rank's send and receive kinds;
 * returns the number of wrong elements */
static long run_all(MPI_Comm c, int sk, int rk, size_t n, int t)
{
    const int me = wrank, np = wsize, root = (t / 16) % np;
    long bad = 0;
    float *s = alloc(sk, n * np), *r = alloc(rk, n * np), *h;

    /* allreduce */
    fill(s, n, me, t); fill(r, n, -1, 0);
    MPI_Allreduce(s, r, (int) n, MPI_FLOAT, MPI_SUM, c);
    h = fetch(r, n);
    for (size_t i = 0; i < n; ++i) bad += h[i] != sum(0, np, i, t);
    free(h);
    /* bcast from root (receive-side buffer: the rank's receive kind) */
    fill(r, n, me == root ? root : -1, t + 1);
    MPI_Bcast(r, (int) n, MPI_FLOAT, root, c);
    h = fetch(r, n);
    for (size_t i = 0; i < n; ++i) bad += h[i] != val(root, i, t + 1);
    free(h);
    /* reduce to root */
    fill(s, n, me, t + 2); fill(r, n, -1, 0);
    MPI_Reduce(s, r, (int) n, MPI_FLOAT, MPI_SUM, root, c);
    if (me == root) {
        h = fetch(r, n);
        for (size_t i = 0; i < n; ++i) bad += h[i] != sum(0, np, i, t + 2);
        free(h);
    }
    /* allgather */
    fill(s, n, me, t + 3); fill(r, n * np, -1, 0);
    MPI_Allgather(s, (int) n, MPI_FLOAT, r, (int) n, MPI_FLOAT, c);
    h = fetch(r, n * np);
    for (int q = 0; q < np; ++q)
        for (size_t i = 0; i < n; ++i) bad += h[q * n + i] != val(q, i, t + 3);
    free(h);
    /* alltoall: block q of my send buffer is val(me * np + q) */
    {
        float *hs = malloc(n * np * sizeof(float));
        for (int q = 0; q < np; ++q)
            for (size_t i = 0; i < n; ++i) hs[q * n + i] = val(me * np + q, i, t + 4);
        CK(cudaMemcpy(s, hs, n * np * sizeof(float), cudaMemcpyDefault));
        free(hs);
    }
    fill(r, n * np, -1, 0);
    MPI_Alltoall(s, (int) n, MPI_FLOAT, r, (int) n, MPI_FLOAT, c);
    h = fetch(r, n * np);
    for (int q = 0; q < np; ++q)
        for (size_t i = 0; i < n; ++i) bad += h[q * n + i] != val(q * np + me, i, t + 4);
    free(h);
    /* reduce_scatter_block: my block is the sum of everyone's block me */
    {
        float *hs = malloc(n * np * sizeof(float));
        for (int q = 0; q < np; ++q)
            for (size_t i = 0; i < n; ++i) hs[q * n + i] = val(me, q * n + i, t + 5);
        CK(cudaMemcpy(s, hs, n * np * sizeof(float), cudaMemcpyDefault));
        free(hs);
    }
    fill(r, n, -1, 0);
    MPI_Reduce_scatter_block(s, r, (int) n, MPI_FLOAT, MPI_SUM, c);
    h = fetch(r, n);
    for (size_t i = 0; i < n; ++i) bad += h[i] != sum(0, np, me * n + i, t + 5);
    free(h);
    /* gather to root, scatter from root */
    fill(s, n, me, t + 6); fill(r, n * np, -1, 0);
    MPI_Gather(s, (int) n, MPI_FLOAT, r, (int) n, MPI_FLOAT, root, c);
    if (me == root) {
        h = fetch(r, n * np);
        for (int q = 0; q < np; ++q)
            for (size_t i = 0; i < n; ++i) bad += h[q * n + i] != val(q, i, t + 6);
        free(h);
    }
    if (me == root) {
        float *hs = malloc(n * np * sizeof(float));
        for (int q = 0; q < np; ++q)
            for (size_t i = 0; i < n; ++i) hs[q * n + i] = val(q, i, t + 7);
        CK(cudaMemcpy(s, hs, n * np * sizeof(float), cudaMemcpyDefault));
        free(hs);
    }
    fill(r, n, -1, 0);
    MPI_Scatter(s, (int) n, MPI_FLOAT, r, (int) n, MPI_FLOAT, root, c);
    h = fetch(r, n);
    for (size_t i = 0; i < n; ++i) bad += h[i] != val(me, i, t + 7);
    free(h);
    /* inclusive scan */
    fill(s, n, me, t + 8); fill(r, n, -1, 0);
    MPI_Scan(s, r, (int) n, MPI_FLOAT, MPI_SUM, c);
    h = fetch(r, n);
    for (size_t i = 0; i < n; ++i) bad += h[i] != sum(0, me + 1, i, t + 8);
    free(h);
    release(sk, s);
    release(rk, r);
    return bad;
}

/* pattern p: this rank's send and receive kinds */
#define NPAT 6
static const char *pname[NPAT] = {
    "all device (control)", "even ranks host, odd ranks device", "rank 0 device, the others host",
    "rank 0 device send + host receive, the others device", "rank 0 managed, the others device",
    "last rank host, the others device" };
static void kinds(int p, int *sk, int *rk)
{
    const int me = wrank, last = wsize - 1;
    *sk = *rk = K_DEV;
    switch (p) {
    case 1: *sk = *rk = me % 2 ? K_DEV : K_HOST; break;
    case 2: *sk = *rk = 0 == me ? K_DEV : K_HOST; break;
    case 3: if (0 == me) *rk = K_HOST; break;
    case 4: if (0 == me) *sk = *rk = K_MANAGED; break;
    case 5: if (me == last) *sk = *rk = K_HOST; break;
    }
}

int main(int argc, char **argv)
{
    /* the reliability runner names a scenario first */
    const int a = argc > 1 && 0 == strcmp(argv[1], "mixed") ? 2 : 1;
    const size_t bytes = argc > a ? strtoull(argv[a], NULL, 0) : 8;
    const size_t n = bytes / 4 ? bytes / 4 : 1;
    char what[200];
    int ndev = 0;
    MPI_Comm c;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || 0 == ndev) {
        if (0 == wrank) {
            printf("SKIP: no CUDA device (test_gpu_mixed needs a GPU)\n");
        }
        MPI_Finalize();
        return 0;
    }
    CK(cudaSetDevice(wrank % ndev));
    for (int p = 0; p < NPAT; ++p) {
        int sk, rk;
        kinds(p, &sk, &rk);
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        const long bad = run_all(c, sk, rk, n, 16 * p);
        snprintf(what, sizeof(what), "%s (rank 0: %s send, %s receive), %zu B, 9 collectives, "
                 "new communicator", pname[p], kname[sk], kname[rk], n * 4);
        record(0 == bad, what);
        MPI_Comm_free(&c);
    }
    /* the kinds change from call to call on one communicator */
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    long bad = 0;
    for (int it = 0; it < 40; ++it) {
        int sk, rk;
        kinds(it % NPAT, &sk, &rk);
        bad += run_all(c, sk, rk, n, 16 * it + 3);
    }
    snprintf(what, sizeof(what), "all patterns in turns on one communicator, 40 rounds of 9 "
             "collectives, %zu B", n * 4);
    record(0 == bad, what);
    MPI_Comm_free(&c);
    if (0 == wrank) {
        printf("test_gpu_mixed (%d ranks): %d passed, %d failed\n", wsize, npass, nfail);
    }
    MPI_Finalize();
    return nfail ? 1 : 0;
}
