/*
 * A program written for MPICH's stream API, built unchanged against
 * libgpucoll (mpix_gpu.h comes in with -include, as MPICH's mpi.h carries
 * these names): plain MPI_Init, a CUDA stream, MPIX_Stream_create and
 * MPIX_Stream_comm_create, then enqueued calls on device buffers, each
 * checked against a host reference:
 *   - MPIX_Allreduce_enqueue of MPI_INT/MPI_SUM and MPI_SHORT_INT/MPI_MINLOC,
 *     in place and not, small and above the host transport's slot;
 *   - the other enqueued collectives (bcast, reduce, allgather,
 *     reduce_scatter_block, alltoall) and a user op that is not commutative;
 *   - a halo exchange with MPIX_Isend/Irecv_enqueue and MPIX_Waitall_enqueue
 *     (small and above the ring), receives posted out of tag order, and
 *     MPIX_Send/Recv_enqueue with a status;
 *   - several calls in a row without a synchronize, on two streams (two
 *     stream communicators) that even and odd ranks fill in opposite order:
 *     CUDA may run every host function of a process on one thread, so no
 *     host function may wait for a peer;
 * each eagerly and captured into a CUDA graph replayed with new inputs.
 * Inputs reach the device in the stream's order: a pageable cudaMemcpy to
 * the device may return before the bytes land, and a stream made with
 * cudaStreamNonBlocking does not wait for the legacy stream it ran on.
 * No kernel is launched, so it runs on the CUDA stand-ins too (make check).
 * Prints "N passed, N failed" on rank 0; exits 77 without a CUDA device.
 * "timeout" (with coll_gpu_timeout 2): a rank leaves out a bcast, then a
 * send is never received; the others' streams go on naming that rank.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

static int rank, size, passed, failed;
static cudaStream_t stream;
static MPI_Comm sc;

#define CUDA_OK(x)                                                                        \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (cudaSuccess != e_) {                                                          \
            fprintf(stderr, "rank %d: %s: %s\n", rank, #x, cudaGetErrorString(e_));       \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                 \
        }                                                                                 \
    } while (0)

/* host bytes to the device before the stream's next work */
static void to_dev(void *d, const void *h, size_t bytes)
{
    CUDA_OK(cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
}

static void check(int ok, const char *what, int graph, int n)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    all ? ++passed : ++failed;
    if (0 == rank) {
        printf("%s %s, %d elements%s\n", all ? "PASS" : "FAIL", what, n, graph ? ", graph" : "");
    }
}

/* Runs body (which enqueues on the stream) eagerly, or captured once and
 * replayed for each of the rounds; before each round set() writes the
 * inputs of that round, after it verify() checks the results. */
typedef struct {
    void (*set)(void *ctx, int round);
    int (*enq)(void *ctx);
    int (*verify)(void *ctx, int round);
    void *ctx;
} job_t;

static int run_job(const job_t *j, int graph)
{
    cudaGraph_t g;
    cudaGraphExec_t ge;
    int ok = 1;

    if (graph) {
        CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        ok = MPI_SUCCESS == j->enq(j->ctx);
        CUDA_OK(cudaStreamEndCapture(stream, &g));
        CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
    }
    for (int round = 0; round < 3 && ok; ++round) {
        j->set(j->ctx, round);
        if (graph) {
            CUDA_OK(cudaGraphLaunch(ge, stream));
        } else {
            ok = MPI_SUCCESS == j->enq(j->ctx);
        }
        CUDA_OK(cudaStreamSynchronize(stream));
        ok = ok && j->verify(j->ctx, round);
        /* every rank stops at the same round: one that went on alone would
         * wait for the others' part of its next call (a hang, not a FAIL) */
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    }
    if (graph) {
        CUDA_OK(cudaGraphExecDestroy(ge));
        CUDA_OK(cudaGraphDestroy(g));
    }
    return ok;
}

/* ---- allreduce: MPI_INT/MPI_SUM and MPI_SHORT_INT/MPI_MINLOC ---- */

typedef struct {
    short v;
    int i;
} short_int_t;

typedef struct {
    int n, in_place, minloc;
    void *d_in, *d_out;
    void *h;                   /* host staging of one buffer */
} ar_t;

static int ival(int r, int i, int round)
{
    return (r + 1) * 1000 + (i % 977) * 7 + round * 13;
}

static short sval(int r, int i, int round)
{
    return (short) (((r * 7 + i * 3 + round) % 11) - 5);
}

static void ar_set(void *p, int round)
{
    ar_t *a = p;
    for (int i = 0; i < a->n; ++i) {
        if (a->minloc) {
            ((short_int_t *) a->h)[i].v = sval(rank, i, round);
            ((short_int_t *) a->h)[i].i = rank;
        } else {
            ((int *) a->h)[i] = ival(rank, i, round);
        }
    }
    to_dev(a->in_place ? a->d_out : a->d_in, a->h,
           (size_t) a->n * (a->minloc ? sizeof(short_int_t) : sizeof(int)));
}

static int ar_enq(void *p)
{
    ar_t *a = p;
    return MPIX_Allreduce_enqueue(a->in_place ? MPI_IN_PLACE : a->d_in, a->d_out, a->n,
                                  a->minloc ? MPI_SHORT_INT : MPI_INT,
                                  a->minloc ? MPI_MINLOC : MPI_SUM, sc);
}

static int ar_verify(void *p, int round)
{
    ar_t *a = p;
    int ok = 1;
    CUDA_OK(cudaMemcpy(a->h, a->d_out,
                       (size_t) a->n * (a->minloc ? sizeof(short_int_t) : sizeof(int)),
                       cudaMemcpyDeviceToHost));
    for (int i = 0; i < a->n && ok; ++i) {
        if (a->minloc) {
            short best = sval(0, i, round);
            int at = 0;
            for (int r = 1; r < size; ++r) {
                if (sval(r, i, round) < best) {
                    best = sval(r, i, round);
                    at = r;
                }
            }
            ok = ((short_int_t *) a->h)[i].v == best && ((short_int_t *) a->h)[i].i == at;
        } else {
            int s = 0;
            for (int r = 0; r < size; ++r) {
                s += ival(r, i, round);
            }
            ok = ((int *) a->h)[i] == s;
        }
        if (!ok) {
            fprintf(stderr, "rank %d: allreduce element %d wrong\n", rank, i);
        }
    }
    return ok;
}

static void allreduce_tests(int graph)
{
    const int counts[] = { 1, 1000, 300000 };
    for (int m = 0; m < 2; ++m) {
        for (int ip = 0; ip < 2; ++ip) {
            for (int k = 0; k < 3; ++k) {
                const size_t es = m ? sizeof(short_int_t) : sizeof(int);
                ar_t a = { .n = counts[k], .in_place = ip, .minloc = m };
                job_t j = { ar_set, ar_enq, ar_verify, &a };
                char what[96];
                CUDA_OK(cudaMalloc(&a.d_in, es * a.n));
                CUDA_OK(cudaMalloc(&a.d_out, es * a.n));
                a.h = malloc(es * a.n);
                snprintf(what, sizeof(what), "MPIX_Allreduce_enqueue %s%s",
                         m ? "MPI_SHORT_INT/MPI_MINLOC" : "MPI_INT/MPI_SUM",
                         ip ? " in place" : "");
                check(run_job(&j, graph), what, graph, a.n);
                CUDA_OK(cudaFree(a.d_in));
                CUDA_OK(cudaFree(a.d_out));
                free(a.h);
            }
        }
    }
}

/* ---- the other collectives, MPI_INT, and a non-commutative user op ---- */

/* MPI_2INT pairs (a, b) as maps x -> a x + b mod 10007, x op y = y after
 * x: associative, not commutative, so only MPI's rank order gives the
 * reference's answer */
typedef struct {
    int a, b;
} two_int_t;

static two_int_t nc(two_int_t x, two_int_t y)
{
    two_int_t r = { x.a * y.a % 10007, (y.a * x.b + y.b) % 10007 };
    return r;
}

static void nc_fn(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void) t;
    for (int i = 0; i < *len; ++i) {
        ((two_int_t *) inout)[i] = nc(((two_int_t *) in)[i], ((two_int_t *) inout)[i]);
    }
}

typedef struct {
    int which, n;              /* n: elements per block */
    int *d_in, *d_out, *h;
    MPI_Op op;
} co_t;

enum { CO_BCAST, CO_REDUCE, CO_ALLGATHER, CO_RSB, CO_ALLTOALL, CO_USER, CO_N };
static const char *const co_names[CO_N] = {
    "MPIX_Bcast_enqueue", "MPIX_Reduce_enqueue (root 1)", "MPIX_Allgather_enqueue",
    "MPIX_Reduce_scatter_block_enqueue", "MPIX_Alltoall_enqueue",
    "MPIX_Allreduce_enqueue, user op (not commutative)"
};

static int cval(int r, int i, int round)
{
    return (r * 31 + i * 5 + round * 3) % 1000;
}

static void co_set(void *p, int round)
{
    co_t *c = p;
    const int total = 2 * c->n * size;
    for (int i = 0; i < total; ++i) {
        c->h[i] = cval(rank, i, round);
        if (CO_USER == c->which && 0 == i % 2) {
            c->h[i] = c->h[i] % 97 + 2;
        }
    }
    to_dev(c->d_in, c->h, sizeof(int) * total);
    memset(c->h, 0xee, sizeof(int) * total);
    to_dev(c->d_out, c->h, sizeof(int) * total);
    if (CO_BCAST == c->which && 1 % size != rank) {
        to_dev(c->d_in, c->h, sizeof(int) * total);
    }
}

static int co_enq(void *p)
{
    co_t *c = p;
    switch (c->which) {
    case CO_BCAST:
        return MPIX_Bcast_enqueue(c->d_in, c->n, MPI_INT, 1 % size, sc);
    case CO_REDUCE:
        return MPIX_Reduce_enqueue(c->d_in, c->d_out, c->n, MPI_INT, MPI_SUM, 1 % size, sc);
    case CO_ALLGATHER:
        return MPIX_Allgather_enqueue(c->d_in, c->n, MPI_INT, c->d_out, c->n, MPI_INT, sc);
    case CO_RSB:
        return MPIX_Reduce_scatter_block_enqueue(c->d_in, c->d_out, c->n, MPI_INT, MPI_SUM, sc);
    case CO_ALLTOALL:
        return MPIX_Alltoall_enqueue(c->d_in, c->n, MPI_INT, c->d_out, c->n, MPI_INT, sc);
    default:
        return MPIX_Allreduce_enqueue(c->d_in, c->d_out, c->n, MPI_2INT, c->op, sc);
    }
}

static int co_verify(void *p, int round)
{
    co_t *c = p;
    const int root = 1 % size;
    int ok = 1, *want = malloc(sizeof(int) * 2 * c->n * size), nwant = c->n;
    int *got_d = CO_BCAST == c->which ? c->d_in : c->d_out;

    for (int i = 0; i < c->n * size; ++i) {
        int s = 0;
        two_int_t x, y;
        switch (c->which) {
        case CO_BCAST:
            want[i] = cval(root, i, round);
            break;
        case CO_REDUCE:
            for (int r = 0; r < size; ++r) {
                s += cval(r, i, round);
            }
            want[i] = rank == root ? s : (int) 0xeeeeeeee;
            break;
        case CO_ALLGATHER:
            want[i] = cval(i / c->n, i % c->n, round);
            nwant = c->n * size;
            break;
        case CO_RSB:
            for (int r = 0; r < size; ++r) {
                s += cval(r, rank * c->n + i, round);
            }
            want[i] = s;
            break;
        case CO_ALLTOALL:
            want[i] = cval(i / c->n, rank * c->n + i % c->n, round);
            nwant = c->n * size;
            break;
        default:
            if (i >= c->n) {
                break;
            }
            for (int r = 0; r < size; ++r) {
                y.a = cval(r, 2 * i, round) % 97 + 2;
                y.b = cval(r, 2 * i + 1, round);
                x = 0 == r ? y : nc(x, y);
            }
            want[2 * i] = x.a;
            want[2 * i + 1] = x.b;
            nwant = 2 * c->n;
            break;
        }
    }
    CUDA_OK(cudaMemcpy(c->h, got_d, sizeof(int) * nwant, cudaMemcpyDeviceToHost));
    for (int i = 0; i < nwant && ok; ++i) {
        ok = c->h[i] == want[i];
        if (!ok) {
            fprintf(stderr, "rank %d: %s element %d: %d, want %d\n", rank, co_names[c->which],
                    i, c->h[i], want[i]);
        }
    }
    free(want);
    return ok;
}

static void other_tests(int graph)
{
    const int counts[] = { 3, 200000 };
    MPI_Op op;
    MPI_Op_create(nc_fn, 0, &op);
    for (int w = 0; w < CO_N; ++w) {
        for (int k = 0; k < 2; ++k) {
            co_t c = { .which = w, .n = counts[k], .op = op };
            job_t j = { co_set, co_enq, co_verify, &c };
            CUDA_OK(cudaMalloc((void **) &c.d_in, sizeof(int) * 2 * c.n * size));
            CUDA_OK(cudaMalloc((void **) &c.d_out, sizeof(int) * 2 * c.n * size));
            c.h = malloc(sizeof(int) * 2 * c.n * size);
            check(run_job(&j, graph), co_names[w], graph, c.n);
            CUDA_OK(cudaFree(c.d_in));
            CUDA_OK(cudaFree(c.d_out));
            free(c.h);
        }
    }
    MPI_Op_free(&op);
}

/* ---- point to point ---- */

enum { PP_MANY = 100 };

typedef struct {
    int n, kind;               /* 0: halo, 1: tags out of order, 2: send/recv, 3: many */
    double *d_send, *d_recv;   /* send: one block; recv: two (left, right) */
    double *h;
    MPI_Status st[4];
} pp_t;

static double pval(int r, int i, int round, int tag)
{
    return r * 1e6 + i + round * 0.25 + tag * 0.125;
}

static void pp_set(void *p, int round)
{
    pp_t *a = p;
    for (int i = 0; i < a->n; ++i) {
        a->h[i] = pval(rank, i, round, 0);
        a->h[a->n + i] = pval(rank, i, round, 1);
    }
    to_dev(a->d_send, a->h, sizeof(double) * 2 * a->n);
    memset(a->h, 0, sizeof(double) * 2 * a->n);
    to_dev(a->d_recv, a->h, sizeof(double) * 2 * a->n);
}

static int pp_enq(void *p)
{
    pp_t *a = p;
    const int left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Request r[4];
    int ret = MPI_SUCCESS;

    switch (a->kind) {
    case 0:   /* my block to both neighbours; theirs into [left][right] */
        ret |= MPIX_Irecv_enqueue(a->d_recv, a->n, MPI_DOUBLE, left, 7, sc, &r[0]);
        ret |= MPIX_Irecv_enqueue(a->d_recv + a->n, a->n, MPI_DOUBLE, right, 7, sc, &r[1]);
        ret |= MPIX_Isend_enqueue(a->d_send, a->n, MPI_DOUBLE, right, 7, sc, &r[2]);
        ret |= MPIX_Isend_enqueue(a->d_send, a->n, MPI_DOUBLE, left, 7, sc, &r[3]);
        return ret | MPIX_Waitall_enqueue(4, r, a->st);
    case 1:   /* to the right: tag 1 then tag 2; from the left: tag 2 first */
        ret |= MPIX_Isend_enqueue(a->d_send, a->n, MPI_DOUBLE, right, 1, sc, &r[0]);
        ret |= MPIX_Isend_enqueue(a->d_send + a->n, a->n, MPI_DOUBLE, right, 2, sc, &r[1]);
        ret |= MPIX_Irecv_enqueue(a->d_recv + a->n, a->n, MPI_DOUBLE, left, 2, sc, &r[2]);
        ret |= MPIX_Irecv_enqueue(a->d_recv, a->n, MPI_DOUBLE, left, MPI_ANY_TAG, sc, &r[3]);
        ret |= MPIX_Wait_enqueue(&r[3], &a->st[3]);
        ret |= MPIX_Wait_enqueue(&r[0], MPI_STATUS_IGNORE);
        ret |= MPIX_Wait_enqueue(&r[1], MPI_STATUS_IGNORE);
        return ret | MPIX_Wait_enqueue(&r[2], &a->st[2]);
    case 3: { /* PP_MANY messages in flight to the right, more than the 64 sends by
               * CUDA IPC a pair may have unacknowledged; message k is block k */
        const int m = 2 * a->n / PP_MANY;
        MPI_Request q[2 * PP_MANY];
        for (int k = 0; k < PP_MANY; ++k) {
            ret |= MPIX_Irecv_enqueue(a->d_recv + k * m, m, MPI_DOUBLE, left, k, sc, &q[k]);
        }
        for (int k = 0; k < PP_MANY; ++k) {
            ret |= MPIX_Isend_enqueue(a->d_send + k * m, m, MPI_DOUBLE, right, k, sc,
                                      &q[PP_MANY + k]);
        }
        return ret | MPIX_Waitall_enqueue(2 * PP_MANY, q, MPI_STATUSES_IGNORE);
    }
    default:  /* even ranks send to the next, which receives */
        if (0 == rank % 2 && rank + 1 < size) {
            return MPIX_Send_enqueue(a->d_send, a->n, MPI_DOUBLE, rank + 1, 3, sc);
        }
        if (1 == rank % 2) {
            return MPIX_Recv_enqueue(a->d_recv, 2 * a->n, MPI_DOUBLE, rank - 1, 3, sc, &a->st[0]);
        }
        return MPI_SUCCESS;
    }
}

static int pp_verify(void *p, int round)
{
    pp_t *a = p;
    const int left = (rank + size - 1) % size, right = (rank + 1) % size;
    int ok = 1, cnt = -1, n = a->n;

    CUDA_OK(cudaMemcpy(a->h, a->d_recv, sizeof(double) * 2 * n, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n && ok; ++i) {
        switch (a->kind) {
        case 0:
            ok = a->h[i] == pval(left, i, round, 0) && a->h[n + i] == pval(right, i, round, 0);
            break;
        case 1:
            ok = a->h[i] == pval(left, i, round, 0) && a->h[n + i] == pval(left, i, round, 1);
            break;
        case 3:   /* the blocks sent, the rest (5 elements: empty messages) untouched */
            if (2 * n / PP_MANY * PP_MANY == 2 * n) {
                ok = a->h[i] == pval(left, i, round, 0) && a->h[n + i] == pval(left, i, round, 1);
            } else {
                ok = 0 == a->h[i] && 0 == a->h[n + i];
            }
            break;
        default:
            ok = 1 != rank % 2 || (a->h[i] == pval(rank - 1, i, round, 0) && 0 == a->h[n + i]);
            break;
        }
    }
    if (0 == a->kind) {
        MPI_Get_count(&a->st[1], MPI_DOUBLE, &cnt);
        ok = ok && a->st[0].MPI_SOURCE == left && a->st[1].MPI_SOURCE == right &&
             a->st[1].MPI_TAG == 7 && cnt == n;
    } else if (1 == a->kind) {
        ok = ok && a->st[3].MPI_TAG == 1 && a->st[2].MPI_TAG == 2;
    } else if (2 == a->kind && 1 == rank % 2) {
        /* a message shorter than the receive: its count, the rest untouched */
        MPI_Get_count(&a->st[0], MPI_DOUBLE, &cnt);
        ok = ok && cnt == n && a->st[0].MPI_SOURCE == rank - 1;
    }
    if (!ok) {
        fprintf(stderr, "rank %d: point-to-point kind %d, %d doubles wrong (count %d)\n", rank,
                a->kind, n, cnt);
    }
    return ok;
}

static void p2p_tests(int graph)
{
    static const char *const names[4] = {
        "halo exchange MPIX_Isend/Irecv_enqueue + MPIX_Waitall_enqueue",
        "receives posted out of tag order, MPIX_Wait_enqueue", "MPIX_Send/Recv_enqueue",
        "100 messages in flight to one peer, MPIX_Waitall_enqueue"
    };
    const int counts[] = { 5, 150000 };
    if (size < 2) {
        return;
    }
    for (int kind = 0; kind < 4; ++kind) {
        for (int k = 0; k < 2; ++k) {
            pp_t a = { .n = counts[k], .kind = kind };
            job_t j = { pp_set, pp_enq, pp_verify, &a };
            CUDA_OK(cudaMalloc((void **) &a.d_send, sizeof(double) * 2 * a.n));
            CUDA_OK(cudaMalloc((void **) &a.d_recv, sizeof(double) * 2 * a.n));
            a.h = malloc(sizeof(double) * 2 * a.n);
            check(run_job(&j, graph), names[kind], graph, a.n);
            CUDA_OK(cudaFree(a.d_send));
            CUDA_OK(cudaFree(a.d_recv));
            free(a.h);
        }
    }
}

/* ---- several calls in a row, two streams filled in opposite order ---- */

enum { TS_CALLS = 4, TS_N = 1000 };

/* TS_CALLS bcasts (root k % size) and an allgather per stream, no
 * synchronize in between; even ranks fill stream 0 first, odd ranks
 * stream 1, with a pause between, so each process's first host function
 * belongs to a call the other's reaches last */
static void two_stream_tests(int graph)
{
    cudaStream_t st[2];
    MPI_Comm cm[2];
    MPIX_Stream ms[2];
    int *d[2], *h = malloc(sizeof(int) * (TS_CALLS + size) * TS_N), ok = 1;
    cudaGraph_t g[2];
    cudaGraphExec_t ge[2];

    for (int k = 0; k < 2; ++k) {
        MPI_Info info;
        CUDA_OK(cudaStreamCreateWithFlags(&st[k], cudaStreamNonBlocking));
        MPI_Info_create(&info);
        MPI_Info_set(info, "type", "cudaStream_t");
        MPIX_Info_set_hex(info, "value", &st[k], sizeof(st[k]));
        MPIX_Stream_create(info, &ms[k]);
        MPI_Info_free(&info);
        MPIX_Stream_comm_create(MPI_COMM_WORLD, ms[k], &cm[k]);
        CUDA_OK(cudaMalloc((void **) &d[k], sizeof(int) * (TS_CALLS + size) * TS_N));
    }
    for (int round = 0; round < 2 && ok; ++round) {
        for (int k = 0; k < 2; ++k) {
            for (int i = 0; i < (TS_CALLS + size) * TS_N; ++i) {
                h[i] = i < TS_CALLS * TS_N ? -1 : (rank + 1) * 100000 + k * 1000 + i % TS_N;
            }
            for (int c = 0; c < TS_CALLS; ++c) {
                if (c % size == rank) {
                    for (int i = 0; i < TS_N; ++i) {
                        h[c * TS_N + i] = c * 7919 + k * 31 + i + round;
                    }
                }
            }
            /* this rank's allgather block in place */
            for (int i = 0; i < TS_N; ++i) {
                h[(TS_CALLS + rank) * TS_N + i] = (rank + 1) * 100000 + k * 1000 + i + round;
            }
            CUDA_OK(cudaMemcpyAsync(d[k], h, sizeof(int) * (TS_CALLS + size) * TS_N,
                                    cudaMemcpyHostToDevice, st[k]));
            CUDA_OK(cudaStreamSynchronize(st[k]));
        }
        for (int j = 0; j < 2 && ok; ++j) {
            const int k = rank % 2 ? 1 - j : j;
            if (graph && 0 == round) {
                CUDA_OK(cudaStreamBeginCapture(st[k], cudaStreamCaptureModeGlobal));
            }
            if (!graph || 0 == round) {
                for (int c = 0; c < TS_CALLS && ok; ++c) {
                    ok = MPI_SUCCESS == MPIX_Bcast_enqueue(d[k] + c * TS_N, TS_N, MPI_INT,
                                                           c % size, cm[k]);
                }
                ok = ok && MPI_SUCCESS == MPIX_Allgather_enqueue(MPI_IN_PLACE, 0, MPI_INT,
                                                                 d[k] + TS_CALLS * TS_N, TS_N,
                                                                 MPI_INT, cm[k]);
            }
            if (graph && 0 == round) {
                CUDA_OK(cudaStreamEndCapture(st[k], &g[k]));
                CUDA_OK(cudaGraphInstantiate(&ge[k], g[k], 0));
            }
            if (graph) {
                CUDA_OK(cudaGraphLaunch(ge[k], st[k]));
            }
            if (0 == j) {
                const struct timespec pause = { 0, 100000000 };
                nanosleep(&pause, NULL);
            }
        }
        for (int k = 0; k < 2; ++k) {
            CUDA_OK(cudaStreamSynchronize(st[k]));
            CUDA_OK(cudaMemcpy(h, d[k], sizeof(int) * (TS_CALLS + size) * TS_N,
                               cudaMemcpyDeviceToHost));
            for (int i = 0; i < (TS_CALLS + size) * TS_N && ok; ++i) {
                const int c = i / TS_N, e = i % TS_N;
                const int want = c < TS_CALLS ? c * 7919 + k * 31 + e + round
                                 : (c - TS_CALLS + 1) * 100000 + k * 1000 + e + round;
                ok = h[i] == want;
                if (!ok) {
                    fprintf(stderr, "rank %d: stream %d, element %d: %d, want %d\n", rank, k,
                            i, h[i], want);
                }
            }
        }
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    }
    check(ok, "two streams filled in opposite order, 4 bcasts + an allgather each, "
          "no synchronize between", graph, TS_N);
    for (int k = 0; k < 2; ++k) {
        if (graph) {
            CUDA_OK(cudaGraphExecDestroy(ge[k]));
            CUDA_OK(cudaGraphDestroy(g[k]));
        }
        CUDA_OK(cudaStreamSynchronize(st[k]));
        MPI_Comm_free(&cm[k]);
        MPIX_Stream_free(&ms[k]);
        CUDA_OK(cudaFree(d[k]));
        CUDA_OK(cudaStreamDestroy(st[k]));
    }
    free(h);
}

/* rank 1 leaves out one bcast (run with coll_gpu_timeout 2): the others'
 * streams go on after the timeout, which stderr names with rank 1, and
 * their next enqueue returns the error; rank 1 is not waited for.  Across
 * (virtual) nodes an allgather: there a bcast's root sends without waiting
 * for its receivers, as MPI allows, so only the ranks that receive from
 * rank 1 can miss it */
static void timeout_test(void)
{
    const int across = NULL != getenv("OMPI_MCA_coll_gpu_virtual_nodes");
    int *d, ok = 1;
    CUDA_OK(cudaMalloc((void **) &d, sizeof(int) * 64 * (size_t) (size + 1)));
    if (1 != rank) {
        for (int k = 0; k < 2; ++k) {
            const int ret = across ? MPIX_Allgather_enqueue(d, 64, MPI_INT, d + 64, 64,
                                                            MPI_INT, sc)
                                   : MPIX_Bcast_enqueue(d, 64, MPI_INT, 0, sc);
            ok = ok && (0 == k) == (MPI_SUCCESS == ret);
            CUDA_OK(cudaStreamSynchronize(stream));
        }
    }
    check(ok, across ? "a rank missing from an enqueued allgather: the others' next enqueue fails"
                     : "a rank missing from an enqueued bcast: the others' next enqueue fails",
          0, 64);
    CUDA_OK(cudaFree(d));
}

/* rank 0 sends 1 MiB to rank 1, which never receives (run with
 * coll_gpu_timeout 2): by CUDA IPC the send waits for the receiver's copy,
 * staged for room in the ring; either way rank 0's stream goes on after
 * the timeout, which stderr names with rank 1, and its next enqueue fails */
static void p2p_timeout_test(MPIX_Stream s)
{
    enum { N = 1 << 18 };
    MPI_Comm c;
    int *d, ok = 1;
    MPIX_Stream_comm_create(MPI_COMM_WORLD, s, &c);
    CUDA_OK(cudaMalloc((void **) &d, sizeof(int) * N));
    if (0 == rank && size > 1) {
        ok = MPI_SUCCESS == MPIX_Send_enqueue(d, N, MPI_INT, 1, 5, c);
        CUDA_OK(cudaStreamSynchronize(stream));
        ok = ok && MPI_SUCCESS != MPIX_Send_enqueue(d, N, MPI_INT, 1, 5, c);
        CUDA_OK(cudaStreamSynchronize(stream));
    }
    check(ok, "a send never received: the sender's stream goes on, its next enqueue fails", 0,
          N);
    MPI_Comm_free(&c);
    CUDA_OK(cudaFree(d));
}

int main(int argc, char **argv)
{
    MPI_Info info;
    MPIX_Stream s, got;
    MPI_Comm node;
    int ndev = 0, lrank = 0, provided = -1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Query_thread(&provided);
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || 0 == ndev) {
        if (0 == rank) {
            printf("SKIP test_mpix_stream: no CUDA device visible\n");
        }
        MPI_Finalize();
        return 77;
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &lrank);
    MPI_Comm_free(&node);
    CUDA_OK(cudaSetDevice(lrank % ndev));
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cudaStream_t");
    MPIX_Info_set_hex(info, "value", &stream, sizeof(stream));
    MPIX_Stream_create(info, &s);
    MPI_Info_free(&info);
    MPIX_Stream_comm_create(MPI_COMM_WORLD, s, &sc);
    check(MPI_SUCCESS == MPIX_Comm_get_stream(sc, 0, &got) && got == s &&
          MPI_SUCCESS == MPIX_Stream_progress(s), "MPIX_Comm_get_stream, MPIX_Stream_progress",
          0, 0);
    {   /* coll/gpu is loaded (the enqueued collectives below need it) and a device seen */
        int cu = -1, ze = -1, hip = -1;
        check(MPI_SUCCESS == MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &cu) && 1 == cu &&
              MPI_SUCCESS == MPIX_GPU_query_support(MPIX_GPU_SUPPORT_ZE, &ze) && 0 == ze &&
              MPI_SUCCESS == MPIX_GPU_query_support(MPIX_GPU_SUPPORT_HIP, &hip) && 0 == hip &&
              MPI_SUCCESS != MPIX_GPU_query_support(7, &cu), "MPIX_GPU_query_support", 0, 0);
    }
    if (0 == rank) {
        printf("thread level %d (MPI_THREAD_MULTIPLE is %d), %d ranks\n", provided,
               MPI_THREAD_MULTIPLE, size);
    }
    if (argc > 1 && 0 == strcmp(argv[1], "timeout")) {
        timeout_test();
        p2p_timeout_test(s);
    } else if (argc > 1 && 0 == strcmp(argv[1], "p2p")) {
        /* point to point alone (it needs no coll/gpu): for loops */
        for (int graph = 0; graph < 2; ++graph) {
            p2p_tests(graph);
        }
    } else {
        for (int graph = 0; graph < 2; ++graph) {
            allreduce_tests(graph);
            other_tests(graph);
            p2p_tests(graph);
            if (size > 1) {
                two_stream_tests(graph);
            }
        }
    }
    MPI_Comm_free(&sc);
    MPIX_Stream_free(&s);
    CUDA_OK(cudaStreamDestroy(stream));
    if (0 == rank) {
        printf("test_mpix_stream: %d passed, %d failed\n", passed, failed);
    }
    MPI_Finalize();
    return failed ? 1 : 0;
}
