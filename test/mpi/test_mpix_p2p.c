/*
 * MPICH's point-to-point enqueue (libgpucoll) in the cases test_mpix_stream
 * leaves out, each checked against a host reference:
 *   forget   the receiver's CUDA IPC mappings of allocations the sender has
 *            freed are closed: rank 0 sends from 8 allocations at once to
 *            rank 1 (8 mappings there), frees them, then sends from a new
 *            one; rank 1's open mappings (the CUDA runtime stand-in's count,
 *            fake_cudart_ipc_maps) must fall back to at most one more than
 *            before.  Skipped where that count is not there (a GPU host) or
 *            GPUCOLL_STREAM_IPC=0.
 *   eager    a ring exchange of empty messages, EG_ITERS iterations enqueued
 *            back to back with no synchronize, then one of EG_N doubles
 *            (sends by CUDA IPC): the pinned allocations the library makes
 *            in each loop (the stand-in's count, fake_cudart_pinned_allocs)
 *            stay a few, not one per message (on 4x H100 each made one: an
 *            eager 0-byte halo iteration took 1.1 ms); the data of the
 *            last iteration arrive.  Skipped without that count.
 *   realloc  a ring exchange from a send buffer, which is then freed and
 *            made again larger (64 doubles, then 4099; 2 MiB, then 1 MiB and
 *            24 bytes): CUDA then refuses the new buffer's handle on a
 *            receiver whose mapping of the old one waits to be closed
 *            ("resource already mapped", 4x H100), and its bytes come
 *            through host memory; the second round from it maps again.
 *            The data of every round arrive.
 *   grow     ring exchanges of 200000 doubles, then of 2 Mi doubles, the
 *            iterations after the first enqueued back to back, as
 *            test_gpu_halo's sizes: no pinned staging is freed while they
 *            are in flight (cudaFreeHost waits for the device; the stand-in
 *            counts frees, fake_cudart_pinned_frees); the data arrive.
 *            Skipped without that count.
 *   nodes    MPIX_Send/Recv_enqueue and MPIX_Isend/Irecv_enqueue between
 *            ranks of a stream communicator that spans nodes (run with
 *            --mca coll_gpu_virtual_nodes 2, which libgpucoll's transport
 *            honours): the data arrive, over coll/gpu's network (before
 *            it, every call returned an error at once); never a hang.
 *            Each rank on one node
 *            then exchanges with the node's other ranks on a communicator of
 *            that node (it must work).
 * Prints "test_mpix_p2p: N passed, N failed" on rank 0; exits 77 without a
 * CUDA device.
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

static int rank, size, passed, failed;
static cudaStream_t stream;

#define CUDA_OK(x)                                                                        \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (cudaSuccess != e_) {                                                          \
            fprintf(stderr, "rank %d: %s: %s\n", rank, #x, cudaGetErrorString(e_));       \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                 \
        }                                                                                 \
    } while (0)

static void check(int ok, const char *what)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    all ? ++passed : ++failed;
    if (0 == rank) {
        printf("%s %s\n", all ? "PASS" : "FAIL", what);
    }
}

static double val(int from, int i, int round)
{
    return from * 1e6 + i + round * 0.5;
}

/* a stream communicator of comm on this process's stream */
static MPI_Comm stream_comm(MPI_Comm comm, MPIX_Stream *s)
{
    MPI_Info info;
    MPI_Comm c;
    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cudaStream_t");
    MPIX_Info_set_hex(info, "value", &stream, sizeof(stream));
    MPIX_Stream_create(info, s);
    MPI_Info_free(&info);
    if (MPI_SUCCESS != MPIX_Stream_comm_create(comm, *s, &c)) {
        fprintf(stderr, "rank %d: MPIX_Stream_comm_create failed\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return c;
}

/* n doubles of rank from's round to the device, in the stream's order */
static void fill(double *d, double *h, int n, int from, int round)
{
    for (int i = 0; i < n; ++i) {
        h[i] = val(from, i, round);
    }
    CUDA_OK(cudaMemcpyAsync(d, h, sizeof(double) * n, cudaMemcpyHostToDevice, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
}

static int holds(const double *d, double *h, int n, int from, int round)
{
    CUDA_OK(cudaMemcpy(h, d, sizeof(double) * n, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; ++i) {
        if (h[i] != val(from, i, round)) {
            fprintf(stderr, "rank %d: element %d from rank %d is %g, not %g\n", rank, i, from,
                    h[i], val(from, i, round));
            return 0;
        }
    }
    return 1;
}

/* ---- forget ---- */

enum { FG_ALLOCS = 8, FG_N = 1024, FG_AFTER = 40 };

static void forget_test(void)
{
    int (*maps)(void) = (int (*)(void)) dlsym(RTLD_DEFAULT, "fake_cudart_ipc_maps");
    const char *ipc = getenv("GPUCOLL_STREAM_IPC"), *vn = getenv("OMPI_MCA_coll_gpu_virtual_nodes");
    double *d[FG_ALLOCS], *e, *h = malloc(sizeof(double) * FG_N);
    int ok = 1, before = 0, peak = 0, after = 0, skip;
    MPIX_Stream s;
    MPI_Comm c;

    /* across virtual nodes no pair maps the other's buffers */
    skip = NULL == maps || (NULL != ipc && 0 == strcmp(ipc, "0")) ||
           (NULL != vn && atoi(vn) > 1);
    MPI_Allreduce(MPI_IN_PLACE, &skip, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (skip) {
        if (0 == rank) {
            printf("SKIP forget: no stand-in mapping count (a GPU host) or CUDA IPC off\n");
        }
        free(h);
        return;
    }
    c = stream_comm(MPI_COMM_WORLD, &s);
    before = maps();
    for (int k = 0; k < FG_ALLOCS; ++k) {
        CUDA_OK(cudaMalloc((void **) &d[k], sizeof(double) * FG_N));
    }
    /* every allocation at once: distinct ones, one mapping each on rank 1 */
    for (int k = 0; k < FG_ALLOCS && ok; ++k) {
        if (0 == rank) {
            fill(d[k], h, FG_N, 0, k);
            ok = MPI_SUCCESS == MPIX_Send_enqueue(d[k], FG_N, MPI_DOUBLE, 1, k, c);
        } else if (1 == rank) {
            ok = MPI_SUCCESS == MPIX_Recv_enqueue(d[k], FG_N, MPI_DOUBLE, 0, k, c,
                                                  MPI_STATUS_IGNORE);
        }
        CUDA_OK(cudaStreamSynchronize(stream));
        ok = ok && (1 != rank || holds(d[k], h, FG_N, 0, k));
    }
    peak = maps();
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < FG_ALLOCS; ++k) {
        CUDA_OK(cudaFree(d[k]));
    }
    CUDA_OK(cudaMalloc((void **) &e, sizeof(double) * FG_N));
    /* the sender finds its freed exports a few per send and names them to
     * the receiver in the messages that follow */
    for (int k = 0; k < FG_AFTER && ok; ++k) {
        if (0 == rank) {
            fill(e, h, FG_N, 0, 100 + k);
            ok = MPI_SUCCESS == MPIX_Send_enqueue(e, FG_N, MPI_DOUBLE, 1, 100 + k, c);
        } else if (1 == rank) {
            ok = MPI_SUCCESS == MPIX_Recv_enqueue(e, FG_N, MPI_DOUBLE, 0, 100 + k, c,
                                                  MPI_STATUS_IGNORE);
        }
        CUDA_OK(cudaStreamSynchronize(stream));
        ok = ok && (1 != rank || holds(e, h, FG_N, 0, 100 + k));
    }
    after = maps();
    if (1 == rank) {
        printf("forget: rank 1 maps %d before, %d with %d allocations of rank 0, %d after they "
               "were freed\n", before, peak, FG_ALLOCS, after);
        ok = ok && peak >= before + FG_ALLOCS && after <= before + 1;
    }
    check(ok, "the receiver closes its CUDA IPC mappings of allocations the sender freed");
    MPI_Comm_free(&c);
    MPIX_Stream_free(&s);
    CUDA_OK(cudaFree(e));
    free(h);
}

/* ---- realloc ---- */

enum { RA_MOST = 262144 };

/* one ring exchange of n doubles from ds into dr, checked */
static int ring_round(MPI_Comm c, double *ds, double *dr, int n, double *h, int round)
{
    const int left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Request r[2];
    int ok;

    fill(ds, h, n, rank, round);
    CUDA_OK(cudaMemsetAsync(dr, 0, sizeof(double) * (size_t) n, stream));
    ok = MPI_SUCCESS == MPIX_Irecv_enqueue(dr, n, MPI_DOUBLE, left, round, c, &r[0]) &&
         MPI_SUCCESS == MPIX_Isend_enqueue(ds, n, MPI_DOUBLE, right, round, c, &r[1]) &&
         MPI_SUCCESS == MPIX_Waitall_enqueue(2, r, MPI_STATUSES_IGNORE);
    CUDA_OK(cudaStreamSynchronize(stream));
    return ok && holds(dr, h, n, left, round);
}

static void realloc_test(void)
{
    static const int first[2] = { 64, RA_MOST }, then[2] = { 4099, 131075 };
    double *dr, *h = malloc(sizeof(double) * RA_MOST);
    MPIX_Stream s;
    MPI_Comm c = stream_comm(MPI_COMM_WORLD, &s);
    int ok = 1;

    CUDA_OK(cudaMalloc((void **) &dr, sizeof(double) * RA_MOST));
    for (int k = 0; k < 2 && ok; ++k) {
        double *a, *b;
        CUDA_OK(cudaMalloc((void **) &a, sizeof(double) * (size_t) first[k]));
        ok = ring_round(c, a, dr, first[k], h, 10 * k);
        CUDA_OK(cudaFree(a));
        CUDA_OK(cudaMalloc((void **) &b, sizeof(double) * (size_t) then[k]));
        for (int round = 1; round <= 2 && ok; ++round) {
            ok = ring_round(c, b, dr, then[k], h, 10 * k + round);
        }
        CUDA_OK(cudaFree(b));
    }
    check(ok, "a send buffer freed and made again larger: every round's data arrive");
    MPI_Comm_free(&c);
    MPIX_Stream_free(&s);
    CUDA_OK(cudaFree(dr));
    free(h);
}

/* ---- grow ---- */

static void grow_test(void)
{
    unsigned long long (*frees)(void) =
        (unsigned long long (*)(void)) dlsym(RTLD_DEFAULT, "fake_cudart_pinned_frees");
    static const int counts[2] = { 200000, 2 << 20 }, iters[2] = { 6, 4 };
    const int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double *ds, *dr, *h;
    unsigned long long before, during = 0;
    MPIX_Stream s;
    MPI_Comm c;
    int ok = 1;

    if (NULL == frees) {
        if (0 == rank) {
            printf("SKIP grow: no stand-in count of pinned frees (a GPU host)\n");
        }
        return;
    }
    h = malloc(sizeof(double) * (size_t) counts[1]);
    c = stream_comm(MPI_COMM_WORLD, &s);
    CUDA_OK(cudaMalloc((void **) &ds, sizeof(double) * (size_t) counts[1]));
    CUDA_OK(cudaMalloc((void **) &dr, sizeof(double) * (size_t) counts[1]));
    for (int k = 0; k < 2 && ok; ++k) {
        const int n = counts[k];
        fill(ds, h, n, rank, 20 + k);
        before = frees();
        for (int it = 0; it < iters[k] && ok; ++it) {
            MPI_Request r[4];
            /* two messages each way per pair, as a halo's two directions */
            ok = MPI_SUCCESS == MPIX_Irecv_enqueue(dr, n / 2, MPI_DOUBLE, left, 1, c, &r[0]) &&
                 MPI_SUCCESS == MPIX_Irecv_enqueue(dr + n / 2, n - n / 2, MPI_DOUBLE, left, 2, c,
                                                   &r[1]) &&
                 MPI_SUCCESS == MPIX_Isend_enqueue(ds, n / 2, MPI_DOUBLE, right, 1, c, &r[2]) &&
                 MPI_SUCCESS == MPIX_Isend_enqueue(ds + n / 2, n - n / 2, MPI_DOUBLE, right, 2,
                                                   c, &r[3]) &&
                 MPI_SUCCESS == MPIX_Waitall_enqueue(4, r, MPI_STATUSES_IGNORE);
            if (0 == it) {
                CUDA_OK(cudaStreamSynchronize(stream));
            }
        }
        CUDA_OK(cudaStreamSynchronize(stream));
        during += frees() - before;
        ok = ok && holds(dr, h, n, left, 20 + k);
    }
    printf("grow: rank %d: %llu pinned frees while the exchanges were in flight\n", rank, during);
    check(ok && 0 == during, "growing staging frees no pinned memory while messages are in flight");
    MPI_Comm_free(&c);
    MPIX_Stream_free(&s);
    CUDA_OK(cudaFree(ds));
    CUDA_OK(cudaFree(dr));
    free(h);
}

/* ---- eager ---- */

enum { EG_ITERS = 50, EG_N = 1000, EG_MAX_ALLOCS = 4 };

static void eager_test(void)
{
    unsigned long long (*allocs)(void) =
        (unsigned long long (*)(void)) dlsym(RTLD_DEFAULT, "fake_cudart_pinned_allocs");
    const int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double *ds, *dr, *h = malloc(sizeof(double) * EG_N);
    unsigned long long before, empty = 0, full = 0;
    MPI_Request r[2];
    MPIX_Stream s;
    MPI_Comm c;
    int ok = 1;

    if (NULL == allocs) {
        if (0 == rank) {
            printf("SKIP eager: no stand-in count of pinned allocations (a GPU host)\n");
        }
        free(h);
        return;
    }
    c = stream_comm(MPI_COMM_WORLD, &s);
    CUDA_OK(cudaMalloc((void **) &ds, sizeof(double) * EG_N));
    CUDA_OK(cudaMalloc((void **) &dr, sizeof(double) * EG_N));
    /* one round first: the flags' first page, the progress thread */
    ok = MPI_SUCCESS == MPIX_Irecv_enqueue(dr, 0, MPI_DOUBLE, left, 1, c, &r[0]) &&
         MPI_SUCCESS == MPIX_Isend_enqueue(ds, 0, MPI_DOUBLE, right, 1, c, &r[1]) &&
         MPI_SUCCESS == MPIX_Waitall_enqueue(2, r, MPI_STATUSES_IGNORE);
    CUDA_OK(cudaStreamSynchronize(stream));
    before = allocs();
    for (int it = 0; it < EG_ITERS && ok; ++it) {
        ok = MPI_SUCCESS == MPIX_Irecv_enqueue(dr, 0, MPI_DOUBLE, left, 2, c, &r[0]) &&
             MPI_SUCCESS == MPIX_Isend_enqueue(ds, 0, MPI_DOUBLE, right, 2, c, &r[1]) &&
             MPI_SUCCESS == MPIX_Waitall_enqueue(2, r, MPI_STATUSES_IGNORE);
    }
    CUDA_OK(cudaStreamSynchronize(stream));
    empty = allocs() - before;
    for (int it = 0; it < EG_ITERS && ok; ++it) {
        if (EG_ITERS - 1 == it) {
            CUDA_OK(cudaStreamSynchronize(stream));
            fill(ds, h, EG_N, rank, 7);
            CUDA_OK(cudaMemsetAsync(dr, 0, sizeof(double) * EG_N, stream));
        }
        ok = MPI_SUCCESS == MPIX_Irecv_enqueue(dr, EG_N, MPI_DOUBLE, left, 3, c, &r[0]) &&
             MPI_SUCCESS == MPIX_Isend_enqueue(ds, EG_N, MPI_DOUBLE, right, 3, c, &r[1]) &&
             MPI_SUCCESS == MPIX_Waitall_enqueue(2, r, MPI_STATUSES_IGNORE);
    }
    CUDA_OK(cudaStreamSynchronize(stream));
    full = allocs() - before - empty;
    ok = ok && holds(dr, h, EG_N, left, 7);
    printf("eager: rank %d: %llu pinned allocations in %d empty iterations, %llu in %d of %d "
           "doubles\n", rank, empty, EG_ITERS, full, EG_ITERS, EG_N);
    /* the receives of EG_N doubles need staging (the sender could have
     * sent by value): blocks of the library's pinned chunks */
    ok = ok && empty <= EG_MAX_ALLOCS && full <= EG_MAX_ALLOCS;
    check(ok, "eager back-to-back enqueues make no pinned allocation per message");
    MPI_Comm_free(&c);
    MPIX_Stream_free(&s);
    CUDA_OK(cudaFree(ds));
    CUDA_OK(cudaFree(dr));
    free(h);
}

/* ---- nodes ---- */

enum { ND_N = 5000 };

static void nodes_test(void)
{
    const char *vn = getenv("OMPI_MCA_coll_gpu_virtual_nodes");
    double *ds, *dr, *h = malloc(sizeof(double) * ND_N);
    MPI_Comm node, c, cn;
    MPIX_Stream s, sn;
    MPI_Request r[2];
    int ok = 1, provided = 0, nnode, lrank, works, err1, err2, left, right;
    double t0;

    MPI_Query_thread(&provided);
    CUDA_OK(cudaMalloc((void **) &ds, sizeof(double) * ND_N));
    CUDA_OK(cudaMalloc((void **) &dr, sizeof(double) * ND_N));
    c = stream_comm(MPI_COMM_WORLD, &s);
    /* a ring over every rank: with 2 virtual nodes at least two of the
     * pairs are across nodes */
    left = (rank + size - 1) % size;
    right = (rank + 1) % size;
    fill(ds, h, ND_N, rank, 0);
    /* on the stream: the library copies on a stream of its own once this one
     * reaches the receive, and a memset on the legacy stream is ordered with
     * neither (4x H100, np 4: the zeros landed after the data) */
    CUDA_OK(cudaMemsetAsync(dr, 0, sizeof(double) * ND_N, stream));
    t0 = MPI_Wtime();
    r[0] = r[1] = MPI_REQUEST_NULL;
    err1 = MPIX_Irecv_enqueue(dr, ND_N, MPI_DOUBLE, left, 9, c, &r[0]);
    err2 = MPIX_Isend_enqueue(ds, ND_N, MPI_DOUBLE, right, 9, c, &r[1]);
    works = MPI_SUCCESS == err1 && MPI_SUCCESS == err2;
    if (works) {
        ok = MPI_SUCCESS == MPIX_Waitall_enqueue(2, r, MPI_STATUSES_IGNORE);
        CUDA_OK(cudaStreamSynchronize(stream));
        ok = ok && holds(dr, h, ND_N, left, 0);
    } else {
        /* the same answer on every rank, at once, and no request left */
        ok = MPI_SUCCESS != err1 && MPI_SUCCESS != err2 && MPI_REQUEST_NULL == r[0] &&
             MPI_REQUEST_NULL == r[1] && MPI_Wtime() - t0 < 5.0;
        /* the blocking forms too */
        ok = ok && MPI_SUCCESS != MPIX_Send_enqueue(ds, ND_N, MPI_DOUBLE, right, 10, c);
        ok = ok && MPI_SUCCESS != MPIX_Recv_enqueue(dr, ND_N, MPI_DOUBLE, left, 10, c,
                                                    MPI_STATUS_IGNORE);
        CUDA_OK(cudaStreamSynchronize(stream));
    }
    MPI_Allreduce(MPI_IN_PLACE, &works, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("nodes: point to point across the nodes %s (thread level %d)\n",
               works ? "moved the data" : "returned errors", provided);
    }
    check(ok && works, "point-to-point enqueue on a communicator across nodes: the data arrive");
    MPI_Comm_free(&c);
    MPIX_Stream_free(&s);

    /* within a node: must work.  Not under virtual nodes, which split
     * every communicator's ranks of a host (as coll/gpu does), a node's own
     * communicator too */
    if (NULL != vn && atoi(vn) > 1) {
        if (0 == rank) {
            printf("SKIP within a node: virtual nodes split every communicator\n");
        }
    } else {
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        cn = stream_comm(node, &sn);
        MPI_Comm_size(cn, &nnode);
        MPI_Comm_rank(cn, &lrank);
        ok = 1;
        if (nnode > 1) {
            const int l = (lrank + nnode - 1) % nnode, rt = (lrank + 1) % nnode;
            fill(ds, h, ND_N, lrank, 1);
            CUDA_OK(cudaMemsetAsync(dr, 0, sizeof(double) * ND_N, stream));
            ok = MPI_SUCCESS == MPIX_Irecv_enqueue(dr, ND_N, MPI_DOUBLE, l, 11, cn, &r[0]) &&
                 MPI_SUCCESS == MPIX_Isend_enqueue(ds, ND_N, MPI_DOUBLE, rt, 11, cn, &r[1]) &&
                 MPI_SUCCESS == MPIX_Waitall_enqueue(2, r, MPI_STATUSES_IGNORE);
            CUDA_OK(cudaStreamSynchronize(stream));
            ok = ok && holds(dr, h, ND_N, l, 1);
        }
        check(ok, "point-to-point enqueue within each node");
        MPI_Comm_free(&cn);
        MPIX_Stream_free(&sn);
        MPI_Comm_free(&node);
    }
    CUDA_OK(cudaFree(ds));
    CUDA_OK(cudaFree(dr));
    free(h);
}

int main(int argc, char **argv)
{
    int ndev = 0, provided;
    const int multiple = argc > 2 && 0 == strcmp(argv[2], "multiple");

    if (multiple) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || 0 == ndev) {
        if (0 == rank) {
            printf("SKIP test_mpix_p2p: no CUDA device visible\n");
        }
        MPI_Finalize();
        return 77;
    }
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if (size >= 2 && (argc < 2 || 0 == strcmp(argv[1], "forget"))) {
        forget_test();
    }
    if (size >= 2 && (argc < 2 || 0 == strcmp(argv[1], "realloc"))) {
        realloc_test();
    }
    if (size >= 2 && (argc < 2 || 0 == strcmp(argv[1], "grow"))) {
        grow_test();
    }
    if (size >= 2 && (argc < 2 || 0 == strcmp(argv[1], "eager"))) {
        eager_test();
    }
    if (size >= 2 && (argc < 2 || 0 == strcmp(argv[1], "nodes"))) {
        nodes_test();
    }
    CUDA_OK(cudaStreamDestroy(stream));
    if (0 == rank) {
        printf("test_mpix_p2p: %d passed, %d failed\n", passed, failed);
    }
    MPI_Finalize();
    return failed ? 1 : 0;
}
