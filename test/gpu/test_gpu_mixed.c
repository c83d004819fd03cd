/*
 * Mixed memory kinds across ranks (issue "never hang"): in one call some
 * ranks pass host memory and others device memory, or one rank sends from
 * device memory and receives into host memory, or passes managed memory.
 * MPI lets each rank choose; every collective must complete with the right
 * result.  Each pattern runs every blocking collective on a communicator
 * of its own, then all patterns again in turns on one communicator (the
 * ranks' kinds change call by call, more often than the kind board keeps
 * change points), and once with all device buffers as the control.  Then
 * the same nonblocking: all nine plus an Ibarrier in flight at once, one
 * rank starting late in turns, and on two communicators started in
 * opposite orders; persistent requests with mixed kinds; and host
 * nonblocking neighborhood collectives behind a queued mixed-kind call.
 *
 *   test_gpu_mixed [mixed] [bytes]     prints "N passed, N failed" on rank 0
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "gpu_test_world.h"
#include "mpi_persist_compat.h"


enum { K_HOST, K_DEV, K_MANAGED };
static const char *kname[] = { "host", "device", "managed" };

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

/* The nine collectives, each with buffers of its own so that they can all
 * be in flight at once. */
enum { C_ALLREDUCE, C_BCAST, C_REDUCE, C_ALLGATHER, C_ALLTOALL, C_RSB, C_GATHER, C_SCATTER,
       C_SCAN, NCOLL };

/* host image of what this rank sends for collective k of input t */
static void input(int k, float *hs, size_t n, int t, int root)
{
    const int me = wrank, np = wsize;
    for (int q = 0; q < np; ++q) {
        for (size_t i = 0; i < n; ++i) {
            float v = val(me, i, t);
            if (C_ALLTOALL == k) {
                v = val(me * np + q, i, t);       /* block q goes to rank q */
            } else if (C_RSB == k) {
                v = val(me, q * n + i, t);        /* block q is summed on rank q */
            } else if (C_SCATTER == k) {
                v = val(q, i, t);                 /* the root's block q */
            } else if (C_BCAST == k) {
                v = me == root ? val(root, i, t) : -12345.0f;
            }
            hs[q * n + i] = v;
        }
    }
}

/* wrong elements of collective k's result h */
static long check(int k, const float *h, size_t n, int t, int root)
{
    const int me = wrank, np = wsize;
    long bad = 0;
    switch (k) {
    case C_ALLREDUCE: for (size_t i = 0; i < n; ++i) bad += h[i] != sum(0, np, i, t); break;
    case C_BCAST: for (size_t i = 0; i < n; ++i) bad += h[i] != val(root, i, t); break;
    case C_REDUCE:
        if (me == root) for (size_t i = 0; i < n; ++i) bad += h[i] != sum(0, np, i, t);
        break;
    case C_ALLGATHER:
        for (int q = 0; q < np; ++q)
            for (size_t i = 0; i < n; ++i) bad += h[q * n + i] != val(q, i, t);
        break;
    case C_ALLTOALL:
        for (int q = 0; q < np; ++q)
            for (size_t i = 0; i < n; ++i) bad += h[q * n + i] != val(q * np + me, i, t);
        break;
    case C_RSB: for (size_t i = 0; i < n; ++i) bad += h[i] != sum(0, np, me * n + i, t); break;
    case C_GATHER:
        if (me == root)
            for (int q = 0; q < np; ++q)
                for (size_t i = 0; i < n; ++i) bad += h[q * n + i] != val(q, i, t);
        break;
    case C_SCATTER: for (size_t i = 0; i < n; ++i) bad += h[i] != val(me, i, t); break;
    case C_SCAN: for (size_t i = 0; i < n; ++i) bad += h[i] != sum(0, me + 1, i, t); break;
    }
    return bad;
}

/* start collective k (blocking when req is NULL) */
static void start(int k, float *s, float *r, size_t n, int root, MPI_Comm c, MPI_Request *req)
{
    const int cn = (int) n;
#define GO(blk, nb) (NULL == req ? (void) (blk) : (void) (nb))
    switch (k) {
    case C_ALLREDUCE:
        GO(MPI_Allreduce(s, r, cn, MPI_FLOAT, MPI_SUM, c),
           MPI_Iallreduce(s, r, cn, MPI_FLOAT, MPI_SUM, c, req)); break;
    case C_BCAST:
        GO(MPI_Bcast(r, cn, MPI_FLOAT, root, c), MPI_Ibcast(r, cn, MPI_FLOAT, root, c, req));
        break;
    case C_REDUCE:
        GO(MPI_Reduce(s, r, cn, MPI_FLOAT, MPI_SUM, root, c),
           MPI_Ireduce(s, r, cn, MPI_FLOAT, MPI_SUM, root, c, req)); break;
    case C_ALLGATHER:
        GO(MPI_Allgather(s, cn, MPI_FLOAT, r, cn, MPI_FLOAT, c),
           MPI_Iallgather(s, cn, MPI_FLOAT, r, cn, MPI_FLOAT, c, req)); break;
    case C_ALLTOALL:
        GO(MPI_Alltoall(s, cn, MPI_FLOAT, r, cn, MPI_FLOAT, c),
           MPI_Ialltoall(s, cn, MPI_FLOAT, r, cn, MPI_FLOAT, c, req)); break;
    case C_RSB:
        GO(MPI_Reduce_scatter_block(s, r, cn, MPI_FLOAT, MPI_SUM, c),
           MPI_Ireduce_scatter_block(s, r, cn, MPI_FLOAT, MPI_SUM, c, req)); break;
    case C_GATHER:
        GO(MPI_Gather(s, cn, MPI_FLOAT, r, cn, MPI_FLOAT, root, c),
           MPI_Igather(s, cn, MPI_FLOAT, r, cn, MPI_FLOAT, root, c, req)); break;
    case C_SCATTER:
        GO(MPI_Scatter(s, cn, MPI_FLOAT, r, cn, MPI_FLOAT, root, c),
           MPI_Iscatter(s, cn, MPI_FLOAT, r, cn, MPI_FLOAT, root, c, req)); break;
    case C_SCAN:
        GO(MPI_Scan(s, r, cn, MPI_FLOAT, MPI_SUM, c),
           MPI_Iscan(s, r, cn, MPI_FLOAT, MPI_SUM, c, req)); break;
    }
#undef GO
}

/* buffers of collective k: send with kind sk, receive with kind rk; the
 * input written, the output poisoned */
/* collective k's input t written into s (and r for bcast), r poisoned */
static void refill(int k, size_t n, int t, int root, float *s, float *r)
{
    const size_t tot = n * (size_t) wsize;
    float *hs = malloc(tot * sizeof(float));
    input(k, hs, n, t, root);
    CK(cudaMemcpy(s, hs, tot * sizeof(float), cudaMemcpyDefault));
    if (C_BCAST == k) {
        CK(cudaMemcpy(r, hs, tot * sizeof(float), cudaMemcpyDefault));
    } else {
        fill(r, tot, -1, 0);
    }
    free(hs);
}

static void prepare(int k, int sk, int rk, size_t n, int t, int root, float **s, float **r)
{
    *s = alloc(sk, n * (size_t) wsize);
    *r = alloc(rk, n * (size_t) wsize);
    refill(k, n, t, root, *s, *r);
}

/* wrong elements of collective k's result in r */
static long verify(int k, size_t n, int t, int root, const float *r)
{
    float *h = fetch(r, n * (size_t) wsize);
    const long bad = check(k, h, n, t, root);
    free(h);
    return bad;
}

static long finish(int k, int sk, int rk, size_t n, int t, int root, float *s, float *r)
{
    const long bad = verify(k, n, t, root, r);
    release(sk, s);
    release(rk, r);
    return bad;
}

/* every collective once, blocking, with this rank's send and receive
 * kinds; returns the number of wrong elements */
static long run_all(MPI_Comm c, int sk, int rk, size_t n, int t)
{
    const int root = (t / 16) % wsize;
    long bad = 0;
    for (int k = 0; k < NCOLL; ++k) {
        float *s, *r;
        prepare(k, sk, rk, n, t + k, root, &s, &r);
        start(k, s, r, n, root, c, NULL);
        bad += finish(k, sk, rk, n, t + k, root, s, r);
    }
    return bad;
}

/* allreduce, bcast, allgather and alltoall, each 5 times in a row on the
 * same buffers (a host rank's repeats take coll/gpu's shortest route: the
 * module remembers the last host pair and only counts the call), then
 * once more with this rank's kinds swapped host <-> device */
static long run_repeat(MPI_Comm c, int sk, int rk, size_t n, int t)
{
    static const int rep[4] = { C_ALLREDUCE, C_BCAST, C_ALLGATHER, C_ALLTOALL };
    long bad = 0;
    for (int swap = 0; swap < 2; ++swap) {
        const int s_k = swap ? (K_HOST == sk ? K_DEV : K_HOST) : sk;
        const int r_k = swap ? (K_HOST == rk ? K_DEV : K_HOST) : rk;
        for (int i = 0; i < 4; ++i) {
            const int k = rep[i], root = (t + i) % wsize;
            float *s, *r;
            prepare(k, s_k, r_k, n, t + i, root, &s, &r);
            for (int again = 0; again < 5; ++again) {
                if (again > 0) {
                    refill(k, n, t + i + again, root, s, r);
                }
                start(k, s, r, n, root, c, NULL);
                bad += verify(k, n, t + i + again, root, r);
            }
            release(s_k, s);
            release(r_k, r);
        }
    }
    return bad;
}

/* Device buffers on every rank, but one rank's application "works" between
 * calls (it sleeps 60 us) while the others call back to back, the sleeper
 * changing every 6 calls (wsize: nobody).  Only the busy ranks' own
 * measure says so: from coll_gpu_persist_busy_min_bytes the engine leaves
 * a call to the launched kernels when any rank posted "busy" (and those
 * kernels have their areas: the one-shot allreduce always), and every rank
 * must choose alike or the call never completes.  Inputs stay, the
 * output is checked after the last call of each collective. */
static long run_busy(MPI_Comm c, size_t n, int t)
{
    static const int ks[3] = { C_ALLREDUCE, C_ALLTOALL, C_ALLGATHER };
    const struct timespec nap = { 0, 60000 };
    long bad = 0;
    for (int i = 0; i < 3; ++i) {
        float *s, *r;
        prepare(ks[i], K_DEV, K_DEV, n, t + i, 0, &s, &r);
        for (int call = 0; call < 36; ++call) {
            if (wrank == call / 6 % (wsize + 1)) {
                nanosleep(&nap, NULL);
            }
            start(ks[i], s, r, n, 0, c, NULL);
        }
        bad += finish(ks[i], K_DEV, K_DEV, n, t + i, 0, s, r);
    }
    return bad;
}

/* The same nonblocking, all nine in flight at once with an Ibarrier among
 * them; late: the rank that starts them a few milliseconds after the
 * others (the early device ranks then find the peers' kinds not yet
 * posted and queue their calls). */
static long run_all_nb(MPI_Comm c, int sk, int rk, size_t n, int t, int late)
{
    const int root = (t / 16) % wsize;
    float *s[NCOLL], *r[NCOLL];
    MPI_Request req[NCOLL + 1];
    long bad = 0;

    for (int k = 0; k < NCOLL; ++k) {
        prepare(k, sk, rk, n, t + k, root, &s[k], &r[k]);
    }
    if (wrank == late) {
        struct timespec ts = { 0, 3000000 };
        nanosleep(&ts, NULL);
    }
    for (int k = 0; k < NCOLL; ++k) {
        start(k, s[k], r[k], n, root, c, &req[k]);
        if (4 == k) {
            MPI_Ibarrier(c, &req[NCOLL]);
        }
    }
    MPI_Waitall(NCOLL + 1, req, MPI_STATUSES_IGNORE);
    for (int k = 0; k < NCOLL; ++k) {
        bad += finish(k, sk, rk, n, t + k, root, s[k], r[k]);
    }
    return bad;
}

/* Persistent allreduce, bcast and allgather with this rank's kinds:
 * created once, started together rounds times with new inputs. */
static long run_persistent(MPI_Comm c, int sk, int rk, size_t n, int t, int rounds)
{
    static const int ks[3] = { C_ALLREDUCE, C_BCAST, C_ALLGATHER };
    const int root = (t / 16) % wsize, cn = (int) n;
    float *s[3], *r[3];
    MPI_Request req[3];
    long bad = 0;

    for (int i = 0; i < 3; ++i) {
        prepare(ks[i], sk, rk, n, t, root, &s[i], &r[i]);
    }
    MPIX_Allreduce_init(s[0], r[0], cn, MPI_FLOAT, MPI_SUM, c, MPI_INFO_NULL, &req[0]);
    MPIX_Bcast_init(r[1], cn, MPI_FLOAT, root, c, MPI_INFO_NULL, &req[1]);
    MPIX_Allgather_init(s[2], cn, MPI_FLOAT, r[2], cn, MPI_FLOAT, c, MPI_INFO_NULL, &req[2]);
    for (int it = 0; it < rounds; ++it) {
        for (int i = 0; i < 3; ++i) {
            refill(ks[i], n, t + it, root, s[i], r[i]);
        }
        MPI_Startall(3, req);
        MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
        for (int i = 0; i < 3; ++i) {
            bad += verify(ks[i], n, t + it, root, r[i]);
        }
    }
    for (int i = 0; i < 3; ++i) {
        MPI_Request_free(&req[i]);
        release(sk, s[i]);
        release(rk, r[i]);
    }
    return bad;
}

/* Two communicators with mixed kinds, started in opposite orders by rank
 * 0 and the others, a blocking host allreduce on a third between them
 * (legal: MPI orders collectives per communicator only). */
static long run_crossed(MPI_Comm a, MPI_Comm b, MPI_Comm w, int sk, int rk, size_t n, int t)
{
    float *s[2], *r[2];
    MPI_Request req[2];
    int one = 1, all = 0;
    long bad = 0;

    for (int i = 0; i < 2; ++i) {
        prepare(C_ALLREDUCE, sk, rk, n, t + i, 0, &s[i], &r[i]);
    }
    if (0 == wrank) {
        start(C_ALLREDUCE, s[0], r[0], n, 0, a, &req[0]);
        MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, w);
        start(C_ALLREDUCE, s[1], r[1], n, 0, b, &req[1]);
    } else {
        start(C_ALLREDUCE, s[1], r[1], n, 0, b, &req[1]);
        MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, w);
        start(C_ALLREDUCE, s[0], r[0], n, 0, a, &req[0]);
    }
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    bad += all != wsize;
    for (int i = 0; i < 2; ++i) {
        bad += finish(C_ALLREDUCE, sk, rk, n, t + i, 0, s[i], r[i]);
    }
    return bad;
}

/* On a periodic ring (a Cartesian communicator): a mixed-kind iallreduce,
 * then host nonblocking neighbor allgather and alltoall, late: a rank that
 * starts a few milliseconds after the others.  An early device rank queues
 * its iallreduce for the peers' kinds; the neighbor calls must start after
 * it on that rank too (they take libnbc tags in start order). */
static long run_neighbor(MPI_Comm ring, int sk, int rk, size_t n, int t, int late)
{
    int me, left, right, ag[2] = { -1, -1 }, a2a[2] = { -1, -1 }, out[2];
    float *s, *r;
    MPI_Request req[3];
    long bad = 0;

    MPI_Comm_rank(ring, &me);
    MPI_Cart_shift(ring, 0, 1, &left, &right);
    prepare(C_ALLREDUCE, sk, rk, n, t, 0, &s, &r);
    if (wrank == late) {
        struct timespec ts = { 0, 3000000 };
        nanosleep(&ts, NULL);
    }
    start(C_ALLREDUCE, s, r, n, 0, ring, &req[0]);
    MPI_Ineighbor_allgather(&me, 1, MPI_INT, ag, 1, MPI_INT, ring, &req[1]);
    /* the same word both ways: with 2 ranks the left and right neighbor
     * are one rank, and which of its blocks lands where is its business */
    out[0] = out[1] = 1000 * me + t;
    MPI_Ineighbor_alltoall(out, 1, MPI_INT, a2a, 1, MPI_INT, ring, &req[2]);
    MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
    bad += ag[0] != left || ag[1] != right;
    bad += a2a[0] != 1000 * left + t || a2a[1] != 1000 * right + t;
    bad += finish(C_ALLREDUCE, sk, rk, n, t, 0, s, r);
    return bad;
}

/* Behind a queued call as above: persistent alltoallw and neighbor
 * alltoallw on host buffers, created and started after the mixed-kind
 * iallreduce (libnbc's own requests would take their tags at init, ahead
 * of the call an early device rank has queued).  Their types are a
 * contiguous int freed right after init: the requests must keep them. */
static long run_persistent_w(MPI_Comm ring, int sk, int rk, size_t n, int t, int late)
{
    int *sw = malloc(sizeof(int) * (size_t) wsize), *rw = malloc(sizeof(int) * (size_t) wsize);
    int *ones = malloc(sizeof(int) * (size_t) wsize), *dis = malloc(sizeof(int) * (size_t) wsize);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t) wsize), ty, nty[2];
    const MPI_Aint ndis[2] = { 0, (MPI_Aint) sizeof(int) };
    int me, left, right, nout[2], nin[2] = { -1, -1 }, none[2] = { 1, 1 };
    MPI_Request req[3];
    float *s, *r;
    long bad = 0;

    MPI_Comm_rank(ring, &me);
    MPI_Cart_shift(ring, 0, 1, &left, &right);
    MPI_Type_contiguous(1, MPI_INT, &ty);
    MPI_Type_commit(&ty);
    for (int q = 0; q < wsize; ++q) {
        ones[q] = 1;
        dis[q] = (int) sizeof(int) * q;
        types[q] = ty;
        sw[q] = 1000 * me + 10 * q + t;
        rw[q] = -1;
    }
    nty[0] = nty[1] = ty;
    nout[0] = nout[1] = 2000 * me + t;   /* both ways alike (see run_neighbor) */
    prepare(C_ALLREDUCE, sk, rk, n, t, 0, &s, &r);
    if (wrank == late) {
        struct timespec ts = { 0, 3000000 };
        nanosleep(&ts, NULL);
    }
    start(C_ALLREDUCE, s, r, n, 0, ring, &req[0]);
    MPIX_Alltoallw_init(sw, ones, dis, types, rw, ones, dis, types, ring, MPI_INFO_NULL, &req[1]);
    MPIX_Neighbor_alltoallw_init(nout, none, ndis, nty, nin, none, ndis, nty, ring, MPI_INFO_NULL,
                                 &req[2]);
    MPI_Type_free(&ty);
    MPI_Startall(2, &req[1]);
    MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
    for (int q = 0; q < wsize; ++q) {
        bad += rw[q] != 1000 * q + 10 * me + t;
    }
    bad += nin[0] != 2000 * left + t || nin[1] != 2000 * right + t;
    bad += finish(C_ALLREDUCE, sk, rk, n, t, 0, s, r);
    MPI_Request_free(&req[1]);
    MPI_Request_free(&req[2]);
    free(sw);
    free(rw);
    free(ones);
    free(dis);
    free(types);
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
    /* large messages: fewer rounds (the host reference dominates); the
     * change-point history is exercised at small sizes */
    const int big = n * 4 >= (1 << 20), rounds = big ? 6 : 40, nb_rounds = big ? 6 : 24;
    long bad = 0;
    for (int it = 0; it < rounds; ++it) {
        int sk, rk;
        kinds(it % NPAT, &sk, &rk);
        bad += run_all(c, sk, rk, n, 16 * it + 3);
    }
    snprintf(what, sizeof(what), "all patterns in turns on one communicator, %d rounds of 9 "
             "collectives, %zu B", rounds, n * 4);
    record(0 == bad, what);
    MPI_Comm_free(&c);
    /* the same buffers call after call: host repeats next to device ranks */
    for (int p = 1; p < NPAT; ++p) {
        int sk, rk;
        if (3 == p || 4 == p) {
            continue;   /* the patterns with a host rank, both ways by the swap */
        }
        kinds(p, &sk, &rk);
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        bad = run_repeat(c, sk, rk, n, 16 * p + 2);
        snprintf(what, sizeof(what), "blocking allreduce, bcast, allgather, alltoall 5 times on "
                 "the same buffers: %s, then kinds swapped, %zu B", pname[p], n * 4);
        record(0 == bad, what);
        MPI_Comm_free(&c);
    }
    /* one rank busy between calls, the others not: the engine's choice
     * for large calls must still agree */
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    bad = run_busy(c, n, 5);
    snprintf(what, sizeof(what), "blocking allreduce, alltoall, allgather 36 times, device "
             "buffers, one rank sleeping 60 us before each call in turn, %zu B", n * 4);
    record(0 == bad, what);
    MPI_Comm_free(&c);
    /* blocking, a host rank late: on a communicator whose GPU engine is up
     * the device ranks' resident kernel starts before the kinds are known
     * and must drop the call once the late rank posts "host"; all-device
     * rounds in between must find the LL sequences still agreed */
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    bad = run_all(c, K_DEV, K_DEV, n, 1);
    for (int it = 0; it < (big ? 4 : 3 * wsize); ++it) {
        static const int sym[4] = { C_ALLREDUCE, C_ALLGATHER, C_ALLTOALL, C_RSB };
        const int host = it % wsize, k = sym[it % 4];
        for (int dev_round = 0; dev_round < 2; ++dev_round) {
            const int kk = dev_round || wrank != host ? K_DEV : K_HOST;
            float *s, *r;
            prepare(k, kk, kk, n, 16 * it + 13 + dev_round, 0, &s, &r);
            if (!dev_round && wrank == host) {
                const struct timespec ms = { 0, 3000000 };
                nanosleep(&ms, NULL);
            }
            start(k, s, r, n, 0, c, NULL);
            bad += finish(k, kk, kk, n, 16 * it + 13 + dev_round, 0, s, r);
        }
    }
    snprintf(what, sizeof(what), "blocking allreduce, allgather, alltoall, reduce_scatter_block "
             "with one rank host and 3 ms late in turn, each followed by an all-device call, "
             "%zu B", n * 4);
    record(0 == bad, what);
    MPI_Comm_free(&c);
    /* nonblocking: each pattern, the ranks late in turns */
    for (int p = 0; p < NPAT; ++p) {
        int sk, rk;
        long nbad = 0;
        kinds(p, &sk, &rk);
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        for (int it = 0; it < (big ? 1 : 2 * wsize); ++it) {
            nbad += run_all_nb(c, sk, rk, n, 16 * (p + it) + 5, (p + it) % wsize);
        }
        snprintf(what, sizeof(what), "nonblocking: %s, %d rounds of 9 collectives + ibarrier in "
                 "flight at once, a rank late in turn, %zu B", pname[p],
                 big ? 1 : 2 * wsize, n * 4);
        record(0 == nbad, what);
        MPI_Comm_free(&c);
    }
    /* nonblocking, the kinds changing call by call on one communicator */
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    bad = 0;
    for (int it = 0; it < nb_rounds; ++it) {
        int sk, rk;
        kinds(it % NPAT, &sk, &rk);
        bad += run_all_nb(c, sk, rk, n, 16 * it + 7, (it / NPAT) % wsize);
    }
    snprintf(what, sizeof(what), "nonblocking: all patterns in turns on one communicator, %d "
             "rounds, %zu B", nb_rounds, n * 4);
    record(0 == bad, what);
    MPI_Comm_free(&c);
    /* persistent: each pattern, then a nonblocking host allreduce on the
     * same communicator after them (the libnbc tags must still agree) */
    for (int p = 0; p < NPAT; ++p) {
        int sk, rk, one = 1, all = 0;
        MPI_Request q;
        kinds(p, &sk, &rk);
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        bad = run_persistent(c, sk, rk, n, 16 * p + 11, big ? 2 : 5);
        MPI_Iallreduce(&one, &all, 1, MPI_INT, MPI_SUM, c, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        bad += all != wsize;
        snprintf(what, sizeof(what), "persistent allreduce, bcast and allgather: %s, %d rounds, "
                 "then a host iallreduce, %zu B", pname[p], big ? 2 : 5, n * 4);
        record(0 == bad, what);
        MPI_Comm_free(&c);
    }
    /* nonblocking neighborhood collectives behind a queued call */
    {
        const int dims = wsize, periods = 1;
        MPI_Comm ring;
        MPI_Cart_create(MPI_COMM_WORLD, 1, &dims, &periods, 0, &ring);
        for (int p = 0; p < NPAT; ++p) {
            int sk, rk;
            kinds(p, &sk, &rk);
            bad = 0;
            for (int late = 0; late < wsize; ++late) {
                bad += run_neighbor(ring, sk, rk, n, 16 * p + late, late);
            }
            snprintf(what, sizeof(what), "iallreduce then host ineighbor_allgather and "
                     "ineighbor_alltoall on a ring: %s, each rank late in turn, %zu B",
                     pname[p], n * 4);
            record(0 == bad, what);
            bad = 0;
            for (int late = 0; late < wsize; ++late) {
                bad += run_persistent_w(ring, sk, rk, n, 16 * p + late + 3, late);
            }
            snprintf(what, sizeof(what), "iallreduce then host persistent alltoallw and "
                     "neighbor_alltoallw created and started on a ring: %s, each rank late in "
                     "turn, types freed after init, %zu B", pname[p], n * 4);
            record(0 == bad, what);
        }
        MPI_Comm_free(&ring);
    }
    /* nonblocking on two communicators in opposite orders, mixed kinds */
    {
        MPI_Comm ca, cb;
        MPI_Comm_dup(MPI_COMM_WORLD, &ca);
        MPI_Comm_dup(MPI_COMM_WORLD, &cb);
        bad = 0;
        for (int p = 0; p < NPAT; ++p) {
            int sk, rk;
            kinds(p, &sk, &rk);
            bad += run_crossed(ca, cb, MPI_COMM_WORLD, sk, rk, n, 16 * p + 9);
        }
        snprintf(what, sizeof(what), "nonblocking allreduce on two communicators started in "
                 "opposite orders, a blocking host allreduce between, all patterns, %zu B",
                 n * 4);
        record(0 == bad, what);
        MPI_Comm_free(&ca);
        MPI_Comm_free(&cb);
    }
    if (0 == wrank) {
        printf("test_gpu_mixed (%d ranks): %d passed, %d failed\n", wsize, npass, nfail);
    }
    MPI_Finalize();
    return nfail ? 1 : 0;
}
