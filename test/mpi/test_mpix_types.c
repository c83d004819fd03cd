/*
 * Datatypes with gaps in MPICH's stream API, written as an MPICH program
 * (plain MPI_Init, mpix_gpu.h by -include): every enqueued collective and
 * point to point on device buffers whose datatypes have gaps, each
 * against Open MPI's own answer for the same call on host buffers with the
 * same datatypes (the reference: MPI's host collectives and MPI_Sendrecv),
 * compared byte for byte over the whole span, so that a gap the call
 * wrote (poisoned before, on both sides alike) fails as a wrong value does.
 *   - a vector of int (3 blocks of 2, stride 5), 2 elements;
 *   - an indexed int type whose blocks go out of order (6, 0-1, 3);
 *   - a struct {int; double} with a hole and a trailing gap (resized to
 *     24 bytes), folded with a user op;
 *   - allgather and alltoall whose send side is plain MPI_INT and whose
 *     receive side is the vector (the same type signature);
 *   - point to point only: the vector sent into plain MPI_INT, and a short
 *     message (3 ints into a vector of 6: the rest must stay as it was);
 * in place and not, eagerly and captured into a CUDA graph (replayed with
 * new inputs); send/recv around a ring.  No kernel: the CUDA stand-ins run
 * it too (make check).
 * "multiple": the same under MPI_Init_thread(MPI_THREAD_MULTIPLE); "p2p":
 * point to point only.  The answer is read back by a copy into pageable
 * memory queued on the stream right after the call, as a program may
 * (the calling thread then waits inside CUDA for the call's end); "sync"
 * synchronizes the stream before that copy instead.
 * Prints "test_mpix_types: N passed, N failed" on rank 0; 77 without a
 * CUDA device.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

static int rank, size, passed, failed, sync_first;
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

/* the gaps of send and receive buffers hold different bytes: a call that
 * moved a gap shows */
enum { POISON = 0x7b, POISON_SEND = 0x5c };
enum { C_ALLREDUCE, C_REDUCE, C_BCAST, C_ALLGATHER, C_ALLTOALL, C_RSB, C_SENDRECV, C_N };
static const char *const cname[C_N] = { "allreduce", "reduce", "bcast", "allgather",
                                        "alltoall", "reduce_scatter_block", "send/recv" };

typedef struct {
    const char *name;
    MPI_Datatype t;           /* the receive side's type (and the send side's) */
    MPI_Datatype st;          /* the send side's where it differs (or t) */
    int scount_mul;           /* send count = recv count * scount_mul */
    int count;
    MPI_Op op;
    int ints;                 /* values are ints (else the struct's int + double) */
    int scount;               /* send count where not count * scount_mul: point to point only */
} tcase_t;

static int send_count(const tcase_t *x)
{
    return x->scount > 0 ? x->scount : x->count * x->scount_mul;
}

typedef struct {
    int a;
    double b;
} pair_t;

static void pair_sum(void *in, void *inout, int *len, MPI_Datatype *t)
{
    MPI_Aint lb, ext;
    MPI_Type_get_extent(*t, &lb, &ext);
    for (int i = 0; i < *len; ++i) {
        const pair_t *x = (const pair_t *) ((char *) in + i * ext);
        pair_t *y = (pair_t *) ((char *) inout + i * ext);
        y->a += x->a;
        y->b += x->b;
    }
}

/* fill count elements of t at buf (a host span) with values of (r, k),
 * through MPI_Unpack: the data bytes take the values, the gaps keep POISON */
static void fill(char *buf, MPI_Datatype t, int count, int ints, int r, int k)
{
    int size_b = 0, pos = 0;
    MPI_Type_size(t, &size_b);
    const size_t bytes = (size_t) size_b * (size_t) count;
    char *packed = malloc(bytes ? bytes : 1);
    if (ints) {
        for (size_t i = 0; i < bytes / sizeof(int); ++i) {
            ((int *) packed)[i] = 1000 * r + 7 * (int) i + k;
        }
    } else {
        /* the struct packs as int, double per element */
        for (int e = 0; e < count; ++e) {
            const int a = 100 * r + e + k;
            const double b = 0.5 * (r + 1) + e;
            memcpy(packed + e * 12, &a, 4);
            memcpy(packed + e * 12 + 4, &b, 8);
        }
    }
    MPI_Unpack(packed, (int) bytes, &pos, buf, count, t, MPI_COMM_SELF);
    free(packed);
}

static size_t span_of(MPI_Datatype t, int count, MPI_Aint *lb)
{
    MPI_Aint tlb, text, xlb, ext;
    MPI_Type_get_true_extent(t, &tlb, &text);
    MPI_Type_get_extent(t, &xlb, &ext);
    *lb = tlb;
    return count > 0 ? (size_t) ((count - 1) * ext + text) : 0;
}

/* Open MPI refuses a predefined op on a derived type (MPICH takes one made
 * of one predefined type, as libgpucoll does): the reference packs the
 * elements, reduces them as MPI_INT, and unpacks the result */
static int ref_packed(int c, const tcase_t *x, int in_place, char *s, char *r, MPI_Comm cm)
{
    const int n = x->count, root = (1 + c) % size;
    const int in_n = C_RSB == c ? n * size : n, mine = C_REDUCE != c || rank == root;
    int tsize = 0, pos = 0, ret;
    MPI_Type_size(x->t, &tsize);
    const int per = tsize / (int) sizeof(int);
    int *pin = malloc(sizeof(int) * (size_t) (in_n * per));
    int *pout = malloc(sizeof(int) * (size_t) (in_n * per));
    MPI_Pack(in_place && mine ? r : s, in_n, x->t, pin, (int) sizeof(int) * in_n * per, &pos,
             MPI_COMM_SELF);
    ret = C_ALLREDUCE == c ? MPI_Allreduce(pin, pout, n * per, MPI_INT, x->op, cm)
          : C_REDUCE == c ? MPI_Reduce(pin, pout, n * per, MPI_INT, x->op, root, cm)
                          : MPI_Reduce_scatter_block(pin, pout, n * per, MPI_INT, x->op, cm);
    pos = 0;
    if (MPI_SUCCESS == ret && mine) {
        MPI_Unpack(pout, (int) sizeof(int) * n * per, &pos, r, n, x->t, MPI_COMM_SELF);
    }
    free(pout);
    free(pin);
    return ret;
}

/* one call: enqueued on device copies of the host inputs (or, ref, the
 * same call on the host buffers) */
static int call(int c, const tcase_t *x, int in_place, void *s, void *r, int ref, MPI_Comm cm)
{
    const int n = x->count, root = (1 + c) % size;
    MPI_Datatype st = x->st;
    const int sn = send_count(x);
    const void *sb = in_place ? MPI_IN_PLACE : s;
    if (ref && x->ints && (C_ALLREDUCE == c || C_REDUCE == c || C_RSB == c)) {
        return ref_packed(c, x, in_place, s, r, cm);
    }
    switch (c) {
    case C_ALLREDUCE:
        return ref ? MPI_Allreduce(sb, r, n, x->t, x->op, cm)
                   : MPIX_Allreduce_enqueue(sb, r, n, x->t, x->op, cm);
    case C_REDUCE:
        sb = in_place && rank != root ? s : sb;
        return ref ? MPI_Reduce(sb, r, n, x->t, x->op, root, cm)
                   : MPIX_Reduce_enqueue(sb, r, n, x->t, x->op, root, cm);
    case C_BCAST:
        return ref ? MPI_Bcast(r, n, x->t, root, cm) : MPIX_Bcast_enqueue(r, n, x->t, root, cm);
    case C_ALLGATHER:
        return ref ? MPI_Allgather(sb, sn, st, r, n, x->t, cm)
                   : MPIX_Allgather_enqueue(sb, sn, st, r, n, x->t, cm);
    case C_ALLTOALL:
        return ref ? MPI_Alltoall(sb, sn, st, r, n, x->t, cm)
                   : MPIX_Alltoall_enqueue(sb, sn, st, r, n, x->t, cm);
    case C_RSB:
        return ref ? MPI_Reduce_scatter_block(sb, r, n, x->t, x->op, cm)
                   : MPIX_Reduce_scatter_block_enqueue(sb, r, n, x->t, x->op, cm);
    default: {
        const int to = (rank + 1) % size, from = (rank + size - 1) % size;
        MPI_Request q[2] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL };
        if (ref) {
            return MPI_Sendrecv(s, sn, st, to, 3, r, n, x->t, from, 3, cm, MPI_STATUS_IGNORE);
        }
        if (MPI_SUCCESS != MPIX_Irecv_enqueue(r, n, x->t, from, 3, cm, &q[0]) ||
            MPI_SUCCESS != MPIX_Isend_enqueue(s, sn, st, to, 3, cm, &q[1])) {
            return MPI_ERR_OTHER;
        }
        return MPIX_Waitall_enqueue(2, q, MPI_STATUSES_IGNORE);
    }
    }
}

/* the blocks of the send and receive buffers, in elements of each side */
static void blocks(int c, const tcase_t *x, int in_place, int *sblocks, int *rblocks)
{
    const int all = C_ALLTOALL == c || C_RSB == c;
    *rblocks = C_ALLGATHER == c || C_ALLTOALL == c || (C_RSB == c && in_place) ? size : 1;
    *sblocks = all ? size : 1;
    if (in_place) {
        *sblocks = 0;
    }
}

static void run(int c, const tcase_t *x, int in_place, int graph)
{
    const int n = x->count;
    int sblocks, rblocks, ok = 1, bad_at = -1;
    MPI_Aint slb, rlb;
    blocks(c, x, in_place, &sblocks, &rblocks);
    const size_t sspan = span_of(x->st, send_count(x) * (sblocks ? sblocks : 1), &slb);
    const size_t rspan = span_of(x->t, n * rblocks, &rlb);
    char *hs = malloc(sspan + 1), *hr = malloc(rspan + 1), *ref = malloc(rspan + 1);
    char *got = malloc(rspan + 1), *ds = NULL, *dr = NULL;
    cudaGraph_t g;
    cudaGraphExec_t ge;

    CUDA_OK(cudaMalloc((void **) &ds, sspan + 1));
    CUDA_OK(cudaMalloc((void **) &dr, rspan + 1));
    if (graph) {
        CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        ok = MPI_SUCCESS == call(c, x, in_place, ds - slb, dr - rlb, 0, sc);
        CUDA_OK(cudaStreamEndCapture(stream, &g));
        CUDA_OK(cudaGraphInstantiate(&ge, g, 0));
    }
    for (int k = 0; k < (graph ? 2 : 1) && ok; ++k) {
        memset(hs, POISON_SEND, sspan + 1);
        memset(hr, POISON, rspan + 1);
        fill(hs - slb, x->st, send_count(x) * (sblocks ? sblocks : 1), x->ints, rank, k);
        fill(hr - rlb, x->t, n * rblocks, x->ints, rank + 50, k);
        CUDA_OK(cudaMemcpyAsync(ds, hs, sspan + 1, cudaMemcpyHostToDevice, stream));
        CUDA_OK(cudaMemcpyAsync(dr, hr, rspan + 1, cudaMemcpyHostToDevice, stream));
        if (graph) {
            CUDA_OK(cudaGraphLaunch(ge, stream));
        } else {
            ok = MPI_SUCCESS == call(c, x, in_place, ds - slb, dr - rlb, 0, sc);
        }
        if (sync_first) {
            CUDA_OK(cudaStreamSynchronize(stream));
        }
        CUDA_OK(cudaMemcpyAsync(got, dr, rspan + 1, cudaMemcpyDeviceToHost, stream));
        CUDA_OK(cudaStreamSynchronize(stream));
        /* Open MPI's answer on the host buffers */
        memcpy(ref, hr, rspan + 1);
        ok = ok && MPI_SUCCESS == call(c, x, in_place, hs - slb, ref - rlb, 1, MPI_COMM_WORLD);
        for (size_t i = 0; ok && i <= rspan; ++i) {
            if (got[i] != ref[i]) {
                ok = 0;
                bad_at = (int) i;
            }
        }
        if (bad_at >= 0) {
            fprintf(stderr, "rank %d: %s %s%s: byte %d of %zu is 0x%02x, Open MPI's 0x%02x%s\n",
                    rank, cname[c], x->name, in_place ? " in place" : "", bad_at, rspan,
                    (unsigned char) got[bad_at], (unsigned char) ref[bad_at],
                    (unsigned char) hr[bad_at] == POISON ? " (poisoned before)" : "");
        }
        MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    }
    if (graph) {
        CUDA_OK(cudaGraphExecDestroy(ge));
        CUDA_OK(cudaGraphDestroy(g));
    }
    {
        int all = 0;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        all ? ++passed : ++failed;
        if (0 == rank) {
            printf("%s %s, %s%s%s\n", all ? "PASS" : "FAIL", cname[c], x->name,
                   in_place ? ", in place" : "", graph ? ", graph" : "");
        }
    }
    CUDA_OK(cudaFree(ds));
    CUDA_OK(cudaFree(dr));
    free(got);
    free(ref);
    free(hr);
    free(hs);
}

int main(int argc, char **argv)
{
    MPI_Datatype vec, idx, pr0, pr, vec_r;
    MPI_Info info;
    MPIX_Stream s;
    MPI_Op psum;
    int ndev = 0, provided = -1, only_p2p = 0;

    if (argc > 1 && 0 == strcmp(argv[1], "multiple")) {
        /* a program that asks for threads takes the same path for these types */
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Query_thread(&provided);
    for (int i = 1; i < argc; ++i) {
        only_p2p |= 0 == strcmp(argv[i], "p2p");
        sync_first |= 0 == strcmp(argv[i], "sync");
    }
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || 0 == ndev) {
        if (0 == rank) {
            printf("SKIP test_mpix_types: no CUDA device visible\n");
        }
        MPI_Finalize();
        return 77;
    }
    CUDA_OK(cudaSetDevice(rank % ndev));
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cudaStream_t");
    MPIX_Info_set_hex(info, "value", &stream, sizeof(stream));
    MPIX_Stream_create(info, &s);
    MPI_Info_free(&info);
    MPIX_Stream_comm_create(MPI_COMM_WORLD, s, &sc);
    if (0 == rank) {
        printf("thread level %d, %d ranks\n", provided, size);
    }

    MPI_Type_vector(3, 2, 5, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    {
        const int bl[3] = { 1, 2, 1 }, dp[3] = { 6, 0, 3 };
        MPI_Type_indexed(3, bl, dp, MPI_INT, &idx);
        MPI_Type_commit(&idx);
    }
    {
        const int bl[2] = { 1, 1 };
        const MPI_Aint dp[2] = { 0, 8 };
        const MPI_Datatype ty[2] = { MPI_INT, MPI_DOUBLE };
        MPI_Type_create_struct(2, bl, dp, ty, &pr0);
        MPI_Type_create_resized(pr0, 0, 24, &pr);
        MPI_Type_commit(&pr);
    }
    /* the vector with a gap before its first block: lb below the data */
    MPI_Type_create_resized(vec, -8, 13 * sizeof(int), &vec_r);
    MPI_Type_commit(&vec_r);
    MPI_Op_create(pair_sum, 1, &psum);
    const tcase_t cases[] = {
        { "vector of int (3 x 2, stride 5) x 2", vec, vec, 1, 2, MPI_SUM, 1 },
        { "indexed int out of order (6, 0-1, 3) x 2", idx, idx, 1, 2, MPI_SUM, 1 },
        { "struct {int; double} resized to 24 x 3, user op", pr, pr, 1, 3, psum, 0 },
        { "vector resized (lb -8, extent 52) x 2, MPI_MAX", vec_r, vec_r, 1, 2, MPI_MAX, 1 },
        { "send MPI_INT x 6, receive the vector", vec, MPI_INT, 6, 1, MPI_SUM, 1 },
        { "send the vector x 2, receive MPI_INT x 12", MPI_INT, vec, 1, 12, MPI_SUM, 1, 2 },
        { "send MPI_INT x 3, receive the vector x 1 (a short message)", vec, MPI_INT, 3, 1,
          MPI_SUM, 1, 3 },
    };
    const int ncase = (int) (sizeof(cases) / sizeof(cases[0]));
    for (int k = 0; k < ncase; ++k) {
        for (int c = 0; c < C_N; ++c) {
            const int reduces = C_ALLREDUCE == c || C_REDUCE == c || C_RSB == c;
            if (cases[k].st != cases[k].t && (reduces || C_BCAST == c)) {
                continue;   /* one datatype for both sides */
            }
            if ((C_SENDRECV == c && 1 == size) ||
                ((cases[k].scount > 0 || only_p2p) && C_SENDRECV != c)) {
                continue;
            }
            run(c, &cases[k], 0, 0);
            if (C_BCAST != c && C_SENDRECV != c && cases[k].st == cases[k].t) {
                run(c, &cases[k], 1, 0);
            }
        }
        if (size > 1) {
            run(C_SENDRECV, &cases[k], 0, 1);
        }
        if (cases[k].scount > 0 || only_p2p) {
            continue;
        }
        run(C_ALLGATHER, &cases[k], 0, 1);
        if (cases[k].st == cases[k].t) {
            run(C_ALLREDUCE, &cases[k], 1, 1);
        }
    }
    MPI_Op_free(&psum);
    MPI_Type_free(&vec_r);
    MPI_Type_free(&pr);
    MPI_Type_free(&pr0);
    MPI_Type_free(&idx);
    MPI_Type_free(&vec);
    MPI_Comm_free(&sc);
    MPIX_Stream_free(&s);
    if (0 == rank) {
        printf("test_mpix_types: %d passed, %d failed\n", passed, failed);
    }
    MPI_Finalize();
    return failed ? 1 : 0;
}
