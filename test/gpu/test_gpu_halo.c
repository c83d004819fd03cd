/*
 * A halo exchange written for MPICH's stream API, on a GPU host: plain
 * MPI_Init, ranks on a 2-D torus (MPI_Dims_create), each with a send and
 * a receive buffer per neighbour on the device; per iteration, on one CUDA
 * stream and with no host wait: a kernel writes the send buffers (bytes of
 * the rank, direction, index and iteration), the receive buffers are
 * poisoned, MPIX_Irecv_enqueue / MPIX_Isend_enqueue to every neighbour and
 * MPIX_Waitall_enqueue, then a kernel counts the received bytes that
 * differ from what the neighbour wrote, and one advances the iteration
 * number (on the device, so that a graph replay sees the next one).  Run
 * eagerly and captured once into a CUDA graph replayed, at 0 B to 64 MiB
 * per message; at the end the last iteration's receive buffers are also
 * compared on the host with the reference.  Rank 0 prints the time of an
 * iteration (kernels and exchange) at each size, eager and replayed.
 *
 *   test_gpu_halo [malloc|async|mixed]
 *     malloc  buffers from cudaMalloc: the sends go by CUDA IPC
 *     async   from cudaMallocAsync (a pool: no IPC handle): staged
 *     mixed   even ranks cudaMalloc, odd ranks cudaMallocAsync
 * With GPUCOLL_STREAM_VERBOSE=1 libgpucoll says how the messages went
 * (test/gpu/mpix_gpu.sh checks it).  "test_gpu_halo: N passed, N failed"
 * on rank 0; SKIP without a GPU.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "mpix/mpix_gpu.h"
#include "test/gpu/halo_kernels.h"
#include "test/mpi/world_check.h"

#define CK(call) do { cudaError_t e_ = (call); if (cudaSuccess != e_) { \
    fprintf(stderr, "rank %d: %s:%d %s: %s\n", rank, __FILE__, __LINE__, #call, \
            cudaGetErrorString(e_)); MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)
#define KK(call) CK((cudaError_t) (call))

enum { NDIR = 4 };

static cudaStream_t st;
static MPI_Comm sc;
static int nbr[NDIR];          /* -1: the neighbour is this rank (no message) */
static int use_async;

static int opposite(int d)
{
    return d ^ 1;
}

static void *dev_alloc(size_t bytes)
{
    void *p = NULL;
    if (use_async) {
        CK(cudaMallocAsync(&p, bytes ? bytes : 1, st));
        CK(cudaStreamSynchronize(st));
    } else {
        CK(cudaMalloc(&p, bytes ? bytes : 1));
    }
    return p;
}

static void dev_free(void *p)
{
    if (use_async) {
        CK(cudaFreeAsync(p, st));
        CK(cudaStreamSynchronize(st));
    } else {
        CK(cudaFree(p));
    }
}

/* one iteration on the stream; returns the first enqueue error */
static int iteration(unsigned char **snd, unsigned char **rcv, size_t n, unsigned *it,
                     unsigned long long *bad)
{
    MPI_Request req[2 * NDIR];
    int k = 0, rc = MPI_SUCCESS;

    for (int d = 0; d < NDIR; ++d) {
        if (nbr[d] >= 0) {
            KK(halo_fill(snd[d], n, rank, d, it, st));
            CK(cudaMemsetAsync(rcv[d], 0xA5, n, st));
        }
    }
    /* the message sent in direction d comes in from the opposite side */
    for (int d = 0; d < NDIR && MPI_SUCCESS == rc; ++d) {
        if (nbr[opposite(d)] >= 0) {
            rc = MPIX_Irecv_enqueue(rcv[d], (int) n, MPI_BYTE, nbr[opposite(d)], d, sc,
                                    &req[k++]);
        }
    }
    for (int d = 0; d < NDIR && MPI_SUCCESS == rc; ++d) {
        if (nbr[d] >= 0) {
            rc = MPIX_Isend_enqueue(snd[d], (int) n, MPI_BYTE, nbr[d], d, sc, &req[k++]);
        }
    }
    if (MPI_SUCCESS == rc) {
        rc = MPIX_Waitall_enqueue(k, req, MPI_STATUSES_IGNORE);
    }
    for (int d = 0; d < NDIR; ++d) {
        if (nbr[opposite(d)] >= 0) {
            KK(halo_check(rcv[d], n, nbr[opposite(d)], d, it, bad, st));
        }
    }
    KK(halo_advance(it, st));
    return rc;
}

/* iters iterations, eagerly or as replays of one captured iteration */
static void run(size_t n, int iters, int graph)
{
    unsigned char *snd[NDIR], *rcv[NDIR], *h = malloc(n ? n : 1);
    unsigned *it;
    unsigned long long *bad, hbad = 0;
    int rc = MPI_SUCCESS, ok;
    char what[160];
    double t0, us = 0;

    for (int d = 0; d < NDIR; ++d) {
        snd[d] = dev_alloc(n);
        rcv[d] = dev_alloc(n);
    }
    CK(cudaMalloc((void **) &it, sizeof(*it)));
    CK(cudaMalloc((void **) &bad, sizeof(*bad)));
    CK(cudaMemsetAsync(it, 0, sizeof(*it), st));
    CK(cudaMemsetAsync(bad, 0, sizeof(*bad), st));
    CK(cudaStreamSynchronize(st));
    if (graph) {
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
        rc = iteration(snd, rcv, n, it, bad);
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        t0 = MPI_Wtime();
        for (int i = 0; i < iters && MPI_SUCCESS == rc; ++i) {
            CK(cudaGraphLaunch(ge, st));
        }
        CK(cudaStreamSynchronize(st));
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
    } else {
        t0 = MPI_Wtime();
        for (int i = 0; i < iters && MPI_SUCCESS == rc; ++i) {
            rc = iteration(snd, rcv, n, it, bad);
        }
    }
    CK(cudaStreamSynchronize(st));
    us = (MPI_Wtime() - t0) * 1e6 / iters;
    CK(cudaMemcpy(&hbad, bad, sizeof(hbad), cudaMemcpyDeviceToHost));
    ok = MPI_SUCCESS == rc && 0 == hbad;
    /* the last iteration's bytes, against the host reference */
    for (int d = 0; ok && d < NDIR; ++d) {
        if (nbr[opposite(d)] < 0) {
            continue;
        }
        CK(cudaMemcpy(h, rcv[d], n, cudaMemcpyDeviceToHost));
        for (size_t i = 0; ok && i < n; ++i) {
            ok = h[i] == halo_byte_host(nbr[opposite(d)], d, i, (unsigned) iters - 1);
        }
    }
    if (!ok) {
        fprintf(stderr, "rank %d: %zu B %s: enqueue %d, %llu bytes wrong\n", rank, n,
                graph ? "graph" : "eager", rc, hbad);
    }
    snprintf(what, sizeof(what), "halo exchange %zu B per message, %d %s", n, iters,
             graph ? "graph replays" : "eager iterations");
    check(ok, what);
    /* what an iteration took on the slowest rank (kernels and exchange;
     * the first includes opening the peers' handles) */
    MPI_Allreduce(MPI_IN_PLACE, &us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("halo %10zu B %-5s %10.1f us per iteration\n", n, graph ? "graph" : "eager",
               us);
    }
    for (int d = 0; d < NDIR; ++d) {
        dev_free(snd[d]);
        dev_free(rcv[d]);
    }
    CK(cudaFree(it));
    CK(cudaFree(bad));
    free(h);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = { 0, 1, 4096, 65539, 1u << 20, 16u << 20, 64u << 20 };
    const char *mode = argc > 1 ? argv[1] : "malloc";
    int dims[2] = { 0, 0 }, periods[2] = { 1, 1 }, coords[2], ndev = 0, lrank = 0;
    MPI_Comm cart, node;
    MPI_Info info;
    MPIX_Stream ms;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || 0 == ndev) {
        if (0 == rank) {
            printf("SKIP test_gpu_halo: no CUDA device visible\n");
        }
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &lrank);
    MPI_Comm_free(&node);
    CK(cudaSetDevice(lrank % ndev));
    use_async = 0 == strcmp(mode, "async") || (0 == strcmp(mode, "mixed") && rank % 2);
    /* a 2-D torus: +x, -x, +y, -y */
    MPI_Dims_create(size, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Cart_coords(cart, rank, 2, coords);
    MPI_Cart_shift(cart, 0, 1, &nbr[1], &nbr[0]);
    MPI_Cart_shift(cart, 1, 1, &nbr[3], &nbr[2]);
    MPI_Comm_free(&cart);
    for (int d = 0; d < NDIR; ++d) {
        nbr[d] = nbr[d] == rank ? -1 : nbr[d];
    }
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cudaStream_t");
    MPIX_Info_set_hex(info, "value", &st, sizeof(st));
    MPIX_Stream_create(info, &ms);
    MPI_Info_free(&info);
    MPIX_Stream_comm_create(MPI_COMM_WORLD, ms, &sc);
    if (0 == rank) {
        printf("test_gpu_halo: %d ranks on a %dx%d torus, %s buffers, plain MPI_Init\n", size,
               dims[0], dims[1], mode);
    }
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); ++s) {
        const int iters = sizes[s] >= (16u << 20) ? 4 : 12;
        run(sizes[s], iters, 0);
        run(sizes[s], iters, 1);
    }
    MPI_Comm_free(&sc);
    MPIX_Stream_free(&ms);
    CK(cudaStreamDestroy(st));
    if (0 == rank) {
        printf("test_gpu_halo: %d passed, %d failed\n", npass, nfail);
    }
    MPI_Finalize();
    return 0;
}
