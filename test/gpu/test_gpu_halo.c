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
 *   test_gpu_halo MODE cold
 *             the kernels are not loaded before the first enqueue (below)
 * With GPUCOLL_STREAM_VERBOSE=1 libgpucoll says how the messages went
 * (test/gpu/mpix_gpu.sh checks it).  "test_gpu_halo: N passed, N failed"
 * on rank 0; SKIP without a GPU.
 *
 * The kernels are launched once before any enqueue: under CUDA's lazy
 * loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2) a
 * kernel's first launch loads it, and CUDA says a load may synchronize
 * the context.  After an enqueued wait the device is idle only once
 * libgpucoll's progress thread has copied the messages in; if its copies
 * cannot run before the load ends, the wait ends at coll_gpu_timeout.
 * That is how we read 4x H100 at np 2 with the kernels loaded lazily (as
 * "cold" does): the 1-byte eager run, the first to launch halo_fill and
 * halo_check (halo_check right after an enqueued wait), timed out waiting
 * for the receivers' copies; the 0-byte run, which launches halo_advance
 * only (no copy to wait for), took 1.26 ms per iteration against 86 us
 * replayed.  "cold" with CUDA_MODULE_LOADING=EAGER tells whether it is so.
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

/* every kernel loaded, before any enqueue (the top of the file says why) */
static void warm_kernels(void)
{
    unsigned char *b;
    unsigned *it;
    unsigned long long *bad;

    CK(cudaMalloc((void **) &b, 1));
    CK(cudaMalloc((void **) &it, sizeof(*it)));
    CK(cudaMalloc((void **) &bad, sizeof(*bad)));
    CK(cudaMemsetAsync(it, 0, sizeof(*it), st));
    KK(halo_fill(b, 1, rank, 0, it, st));
    KK(halo_check(b, 1, rank, 0, it, bad, st));
    KK(halo_advance(it, st));
    CK(cudaStreamSynchronize(st));
    CK(cudaFree(b));
    CK(cudaFree(it));
    CK(cudaFree(bad));
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
    double t0, us[2] = { 0, 0 };   /* the first iteration, each later one */

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
            if (0 == i) {
                CK(cudaStreamSynchronize(st));
                us[0] = (MPI_Wtime() - t0) * 1e6;
                t0 = MPI_Wtime();
            }
        }
        CK(cudaStreamSynchronize(st));
        us[1] = (MPI_Wtime() - t0) * 1e6 / (iters - 1);
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
    } else {
        t0 = MPI_Wtime();
        for (int i = 0; i < iters && MPI_SUCCESS == rc; ++i) {
            rc = iteration(snd, rcv, n, it, bad);
            if (0 == i) {
                CK(cudaStreamSynchronize(st));
                us[0] = (MPI_Wtime() - t0) * 1e6;
                t0 = MPI_Wtime();
            }
        }
        CK(cudaStreamSynchronize(st));
        us[1] = (MPI_Wtime() - t0) * 1e6 / (iters - 1);
    }
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
    /* what an iteration took on the slowest rank (kernels and exchange),
     * the first apart: it opens the peers' handles and, in the first run,
     * starts libgpucoll's progress thread and makes its flags */
    MPI_Allreduce(MPI_IN_PLACE, us, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("halo %10zu B %-5s %10.1f us per iteration (the first %.1f us)\n", n,
               graph ? "graph" : "eager", us[1], us[0]);
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
    const int cold = argc > 2 && 0 == strcmp(argv[2], "cold");
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
    if (!cold) {
        warm_kernels();
    }
    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "cudaStream_t");
    MPIX_Info_set_hex(info, "value", &st, sizeof(st));
    MPIX_Stream_create(info, &ms);
    MPI_Info_free(&info);
    MPIX_Stream_comm_create(MPI_COMM_WORLD, ms, &sc);
    if (0 == rank) {
        printf("test_gpu_halo: %d ranks on a %dx%d torus, %s buffers, plain MPI_Init%s\n",
               size, dims[0], dims[1], mode, cold ? ", kernels not loaded beforehand" : "");
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
