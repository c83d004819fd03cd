/*
 * MPIX_*_enqueue on a CUDA stream (libgpucoll + coll/gpu), GPU host.
 *
 *   test_gpu_enqueue            every collective eager on device buffers, in
 *                               the stream's order (copy in, enqueue, copy out,
 *                               no host wait between), in place too; two
 *                               streams with a communicator each; blocking
 *                               collectives on another communicator while the
 *                               stream's are pending; an allreduce captured in
 *                               a CUDA graph, replayed 1000 times with a new
 *                               input each time and no MPI call in between;
 *                               the bulk kernels (allreduce above 64 KiB, every
 *                               alltoall): sizes around and over a slot, in
 *                               place, int max, 40 calls with no wait between,
 *                               pageable buffers, a captured 4 MiB allreduce
 *   test_gpu_enqueue timeout [count]
 *                               (or GPUCOLL_TEST_ENQUEUE=timeout) rank 1 enqueues
 *                               only after coll_gpu_timeout + 3 s: rank 0's
 *                               stream must go on within the timeout + 2 s and
 *                               its next enqueue report the failure (count 1:
 *                               the small kernel; 1048576: the bulk one)
 *
 * Inputs are random non-zero integers in floats (sums exact), outputs are
 * poisoned first, results compared with host references.  "N passed, N
 * failed" on rank 0; SKIP without a GPU.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "mpix/mpix_gpu.h"

#define CK(call) do { cudaError_t e_ = (call); if (cudaSuccess != e_) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

#define N 4099
#define REPLAYS 1000

#include "test/mpi/world_check.h"

static float val(int r, int i)
{
    return (float) world_val(r, i, 99);
}

static float sum_at(int i)
{
    float s = 0;
    for (int r = 0; r < size; ++r) {
        s += val(r, i);
    }
    return s;
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

/* one collective, eager: h_in -> d_in, enqueue, d_out -> h_out, one sync at the end */
static void eager(MPI_Comm sc, cudaStream_t st, float *h_in, float *h_out, float *d_in, float *d_out)
{
    const size_t bytes = sizeof(float) * N * size;
    int ok, rc;

    for (int i = 0; i < N * size; ++i) {
        h_in[i] = val(rank, i);
        h_out[i] = -1;
    }
    CK(cudaMemcpyAsync(d_in, h_in, bytes, cudaMemcpyHostToDevice, st));
    CK(cudaMemcpyAsync(d_out, h_out, bytes, cudaMemcpyHostToDevice, st));
    rc = MPIX_Allreduce_enqueue(d_in, d_out, N, MPI_FLOAT, MPI_SUM, sc);
    CK(cudaMemcpyAsync(h_out, d_out, bytes, cudaMemcpyDeviceToHost, st));
    CK(cudaStreamSynchronize(st));
    ok = MPI_SUCCESS == rc;
    for (int i = 0; i < N; ++i) {
        ok &= h_out[i] == sum_at(i);
    }
    check(ok, "allreduce_enqueue after a copy in, before a copy out");

    rc = MPIX_Allreduce_enqueue(MPI_IN_PLACE, d_in, N, MPI_FLOAT, MPI_SUM, sc);
    CK(cudaMemcpyAsync(h_out, d_in, bytes, cudaMemcpyDeviceToHost, st));
    CK(cudaStreamSynchronize(st));
    ok = MPI_SUCCESS == rc;
    for (int i = 0; i < N; ++i) {
        ok &= h_out[i] == sum_at(i);
    }
    check(ok, "allreduce_enqueue in place");

    for (int root = 0; root < size; ++root) {
        for (int i = 0; i < N; ++i) {
            h_in[i] = rank == root ? val(root, i) : -1;
        }
        CK(cudaMemcpyAsync(d_in, h_in, sizeof(float) * N, cudaMemcpyHostToDevice, st));
        rc = MPIX_Bcast_enqueue(d_in, N, MPI_FLOAT, root, sc);
        CK(cudaMemcpyAsync(h_out, d_in, sizeof(float) * N, cudaMemcpyDeviceToHost, st));
        CK(cudaStreamSynchronize(st));
        ok = MPI_SUCCESS == rc;
        for (int i = 0; i < N; ++i) {
            ok &= h_out[i] == val(root, i);
        }
        check(ok, "bcast_enqueue from every root");
    }

    for (int i = 0; i < N * size; ++i) {
        h_in[i] = val(rank, i);
        h_out[i] = -1;
    }
    CK(cudaMemcpyAsync(d_in, h_in, bytes, cudaMemcpyHostToDevice, st));
    CK(cudaMemcpyAsync(d_out, h_out, bytes, cudaMemcpyHostToDevice, st));
    rc = MPIX_Reduce_enqueue(d_in, d_out, N, MPI_FLOAT, MPI_SUM, size - 1, sc);
    CK(cudaMemcpyAsync(h_out, d_out, bytes, cudaMemcpyDeviceToHost, st));
    CK(cudaStreamSynchronize(st));
    ok = MPI_SUCCESS == rc;
    for (int i = 0; rank == size - 1 && i < N; ++i) {
        ok &= h_out[i] == sum_at(i);
    }
    check(ok, "reduce_enqueue to the last rank");

    rc = MPIX_Allgather_enqueue(d_in, N, MPI_FLOAT, d_out, N, MPI_FLOAT, sc);
    CK(cudaMemcpyAsync(h_out, d_out, bytes, cudaMemcpyDeviceToHost, st));
    CK(cudaStreamSynchronize(st));
    ok = MPI_SUCCESS == rc;
    for (int r = 0; r < size; ++r) {
        for (int i = 0; i < N; ++i) {
            ok &= h_out[r * N + i] == val(r, i);
        }
    }
    check(ok, "allgather_enqueue");

    rc = MPIX_Reduce_scatter_block_enqueue(d_in, d_out, N, MPI_FLOAT, MPI_SUM, sc);
    CK(cudaMemcpyAsync(h_out, d_out, sizeof(float) * N, cudaMemcpyDeviceToHost, st));
    CK(cudaStreamSynchronize(st));
    ok = MPI_SUCCESS == rc;
    for (int i = 0; i < N; ++i) {
        ok &= h_out[i] == sum_at(rank * N + i);
    }
    check(ok, "reduce_scatter_block_enqueue");

    rc = MPIX_Alltoall_enqueue(d_in, N, MPI_FLOAT, d_out, N, MPI_FLOAT, sc);
    CK(cudaMemcpyAsync(h_out, d_out, bytes, cudaMemcpyDeviceToHost, st));
    CK(cudaStreamSynchronize(st));
    ok = MPI_SUCCESS == rc;
    for (int r = 0; r < size; ++r) {
        for (int i = 0; i < N; ++i) {
            ok &= h_out[r * N + i] == val(r, rank * N + i);
        }
    }
    check(ok, "alltoall_enqueue");
}

/* a bulk allreduce of count floats (in place when inplace), checked */
static int bulk_allreduce_ok(MPI_Comm sc, cudaStream_t st, size_t count, int inplace, float *h,
                             float *d_in, float *d_out)
{
    int ok, rc;
    for (size_t i = 0; i < count; ++i) {
        h[i] = val(rank, (int) i);
    }
    CK(cudaMemcpyAsync(d_in, h, count * sizeof(float), cudaMemcpyHostToDevice, st));
    CK(cudaMemsetAsync(d_out, 0xff, count * sizeof(float), st));   /* NaN poison */
    rc = inplace ? MPIX_Allreduce_enqueue(MPI_IN_PLACE, d_in, (int) count, MPI_FLOAT, MPI_SUM, sc)
                 : MPIX_Allreduce_enqueue(d_in, d_out, (int) count, MPI_FLOAT, MPI_SUM, sc);
    CK(cudaMemcpyAsync(h, inplace ? d_in : d_out, count * sizeof(float), cudaMemcpyDeviceToHost, st));
    CK(cudaStreamSynchronize(st));
    ok = MPI_SUCCESS == rc;
    for (size_t i = 0; i < count && ok; ++i) {
        ok &= h[i] == sum_at((int) i);
    }
    return ok;
}

/* a bulk alltoall of count floats per peer, from device or pageable memory */
static int bulk_alltoall_ok(MPI_Comm sc, cudaStream_t st, size_t count, int pageable, float *h,
                            float *d_in, float *d_out)
{
    float *in = d_in, *out = d_out;
    int ok = 1, rc;
    const size_t all = count * (size_t) size;
    for (size_t i = 0; i < all; ++i) {
        h[i] = val(rank, (int) i);
    }
    if (pageable) {
        in = malloc(all * sizeof(float));
        out = malloc(all * sizeof(float));
        memcpy(in, h, all * sizeof(float));
        memset(out, 0xff, all * sizeof(float));
    } else {
        CK(cudaMemcpyAsync(d_in, h, all * sizeof(float), cudaMemcpyHostToDevice, st));
        CK(cudaMemsetAsync(d_out, 0xff, all * sizeof(float), st));
    }
    rc = MPIX_Alltoall_enqueue(in, (int) count, MPI_FLOAT, out, (int) count, MPI_FLOAT, sc);
    if (pageable) {
        CK(cudaStreamSynchronize(st));
        memcpy(h, out, all * sizeof(float));
        free(in);
        free(out);
    } else {
        CK(cudaMemcpyAsync(h, d_out, all * sizeof(float), cudaMemcpyDeviceToHost, st));
        CK(cudaStreamSynchronize(st));
    }
    ok = MPI_SUCCESS == rc;
    for (int r = 0; r < size && ok; ++r) {
        for (size_t i = 0; i < count && ok; ++i) {
            ok &= h[(size_t) r * count + i] == val(r, (int) ((size_t) rank * count + i));
        }
    }
    return ok;
}

/* The bulk kernels: d_* hold BULK_MAX floats per rank, h as many. */
#define BULK_MAX ((size_t) 1048579 * 8)
static void bulk(MPI_Comm sc, cudaStream_t st, float *h, float *d_in, float *d_out)
{
    /* just above the small kernel, around a 64 KiB piece, a whole slot
     * (16 MiB region, 2 ranks: 4 MiB less 64 KiB), several slots, odd */
    const size_t counts[] = { 16385, 16411, 262147, 1032192, 1048576, 2359299 };
    char what[160];
    int ok, rc;

    for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); ++k) {
        snprintf(what, sizeof(what), "bulk allreduce_enqueue, %zu floats", counts[k]);
        check(bulk_allreduce_ok(sc, st, counts[k], 0, h, d_in, d_out), what);
    }
    check(bulk_allreduce_ok(sc, st, 1048579, 1, h, d_in, d_out), "bulk allreduce_enqueue in place, 1048579 floats");
    {
        /* int max at 1 MiB */
        const size_t n = 262144;
        int *hi = (int *) h;
        for (size_t i = 0; i < n; ++i) {
            hi[i] = world_val(rank, (int) i, 7) - 500;
        }
        CK(cudaMemcpyAsync(d_in, hi, n * sizeof(int), cudaMemcpyHostToDevice, st));
        rc = MPIX_Allreduce_enqueue(d_in, d_out, (int) n, MPI_INT, MPI_MAX, sc);
        CK(cudaMemcpyAsync(hi, d_out, n * sizeof(int), cudaMemcpyDeviceToHost, st));
        CK(cudaStreamSynchronize(st));
        ok = MPI_SUCCESS == rc;
        for (size_t i = 0; i < n && ok; ++i) {
            int mx = -1000;
            for (int r = 0; r < size; ++r) {
                const int v = world_val(r, (int) i, 7) - 500;
                mx = v > mx ? v : mx;
            }
            ok &= hi[i] == mx;
        }
        check(ok, "bulk allreduce_enqueue, int max, 1 MiB");
    }
    {
        /* 40 calls back to back, no host wait: both parities reused */
        const size_t n = 131072;
        const int calls = 40;
        for (int c = 0; c < calls; ++c) {
            for (size_t i = 0; i < n; ++i) {
                h[(size_t) c * n + i] = val(rank, (int) i + c);
            }
        }
        CK(cudaMemcpyAsync(d_in, h, calls * n * sizeof(float), cudaMemcpyHostToDevice, st));
        CK(cudaMemsetAsync(d_out, 0xff, calls * n * sizeof(float), st));
        rc = MPI_SUCCESS;
        for (int c = 0; c < calls; ++c) {
            rc |= MPIX_Allreduce_enqueue(d_in + (size_t) c * n, d_out + (size_t) c * n, (int) n,
                                         MPI_FLOAT, MPI_SUM, sc);
        }
        CK(cudaMemcpyAsync(h, d_out, calls * n * sizeof(float), cudaMemcpyDeviceToHost, st));
        CK(cudaStreamSynchronize(st));
        ok = MPI_SUCCESS == rc;
        for (int c = 0; c < calls && ok; ++c) {
            for (size_t i = 0; i < n && ok; ++i) {
                ok &= h[(size_t) c * n + i] == sum_at((int) i + c);
            }
        }
        check(ok, "40 bulk allreduce_enqueue of 512 KiB back to back, no wait between");
    }
    {
        /* pageable host memory: staged through the device area */
        const size_t n = 1048579;
        float *p = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; ++i) {
            p[i] = val(rank, (int) i);
        }
        rc = MPIX_Allreduce_enqueue(MPI_IN_PLACE, p, (int) n, MPI_FLOAT, MPI_SUM, sc);
        CK(cudaStreamSynchronize(st));
        ok = MPI_SUCCESS == rc;
        for (size_t i = 0; i < n && ok; ++i) {
            ok &= p[i] == sum_at((int) i);
        }
        free(p);
        check(ok, "bulk allreduce_enqueue on pageable host memory, in place, 1048579 floats");
    }
    {
        const size_t per[] = { 1, 4099, 16385, 262147, 1048579 };
        for (size_t k = 0; k < sizeof(per) / sizeof(per[0]); ++k) {
            if (per[k] * (size_t) size > BULK_MAX) {
                continue;
            }
            snprintf(what, sizeof(what), "bulk alltoall_enqueue, %zu floats per peer", per[k]);
            check(bulk_alltoall_ok(sc, st, per[k], 0, h, d_in, d_out), what);
        }
        check(bulk_alltoall_ok(sc, st, 262147, 1, h, d_in, d_out),
              "bulk alltoall_enqueue on pageable host memory, 262147 floats per peer");
    }
    {
        /* a captured 4 MiB allreduce (two launches): replays count calls
         * on the device */
        const size_t n = 1048576;
        const int replays = 20;
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
        rc = MPIX_Allreduce_enqueue(d_in, d_out, (int) n, MPI_FLOAT, MPI_SUM, sc);
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        ok = MPI_SUCCESS == rc;
        for (int k = 0; k < replays && ok; ++k) {
            for (size_t i = 0; i < n; ++i) {
                h[i] = val(rank, (int) i + 3 * k);
            }
            CK(cudaMemcpyAsync(d_in, h, n * sizeof(float), cudaMemcpyHostToDevice, st));
            CK(cudaMemsetAsync(d_out, 0xff, n * sizeof(float), st));
            CK(cudaGraphLaunch(ge, st));
            CK(cudaMemcpyAsync(h, d_out, n * sizeof(float), cudaMemcpyDeviceToHost, st));
            CK(cudaStreamSynchronize(st));
            for (size_t i = 0; i < n && ok; ++i) {
                ok &= h[i] == sum_at((int) i + 3 * k);
            }
        }
        check(ok, "bulk allreduce captured in a CUDA graph, 20 replays, each checked");
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(g));
    }
}

int main(int argc, char **argv)
{
    const char *mode = getenv("GPUCOLL_TEST_ENQUEUE");
    const int timeout_mode = (argc > 1 && 0 == strcmp(argv[1], "timeout")) ||
                             (NULL != mode && 0 == strcmp(mode, "timeout"));
    int provided, ndev = 0, lrank, ok, rc;
    cudaStream_t st, st2;
    MPIX_Stream ms, ms2;
    MPI_Comm sc, sc2, local;
    float *h_in, *h_out, *h_res, *d_in, *d_out, *d_in2, *d_out2, *d_w, *h_big, *d_bin, *d_bout;
    const size_t bytes = sizeof(float) * N * 8;
    const size_t tcount = argc > 2 ? (size_t) atol(argv[2]) : 1;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || ndev < 1 || size > 8) {
        if (0 == rank) {
            printf("SKIP test_gpu_enqueue: %s\n", size > 8 ? "more than 8 ranks" : "no CUDA device visible");
        }
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    CK(cudaSetDevice(lrank % ndev));
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&st2, cudaStreamNonBlocking));
    CK(cudaMallocHost((void **) &h_in, bytes));
    CK(cudaMallocHost((void **) &h_out, bytes));
    CK(cudaMallocHost((void **) &h_res, sizeof(float) * REPLAYS));
    CK(cudaMalloc((void **) &d_in, bytes));
    CK(cudaMalloc((void **) &d_out, bytes));
    CK(cudaMalloc((void **) &d_in2, bytes));
    CK(cudaMalloc((void **) &d_out2, bytes));
    CK(cudaMalloc((void **) &d_w, bytes));
    CK(cudaMallocHost((void **) &h_big, BULK_MAX * sizeof(float)));
    CK(cudaMalloc((void **) &d_bin, BULK_MAX * sizeof(float)));
    CK(cudaMalloc((void **) &d_bout, BULK_MAX * sizeof(float)));
    sc = stream_comm(st, &ms);

    if (timeout_mode) {
        double t0;
        const int tc = tcount < 1 ? 1 : tcount > BULK_MAX ? (int) BULK_MAX : (int) tcount;
        CK(cudaMemsetAsync(d_bin, 0, (size_t) tc * sizeof(float), st));
        if (1 == rank) {
            sleep(3 + 3);   /* run it with --mca coll_gpu_timeout 3 */
        }
        t0 = MPI_Wtime();
        rc = MPIX_Allreduce_enqueue(d_bin, d_bout, tc, MPI_FLOAT, MPI_SUM, sc);
        CK(cudaStreamSynchronize(st));
        if (0 == rank) {
            const double dt = MPI_Wtime() - t0;
            int rc2 = MPIX_Allreduce_enqueue(d_bin, d_bout, tc, MPI_FLOAT, MPI_SUM, sc);
            ok = MPI_SUCCESS == rc && dt < 3 + 2 && MPI_SUCCESS != rc2;
            printf("timeout (%d floats): stream went on after %.2f s, next enqueue returned %d\n", tc,
                   dt, rc2);
            if (MPI_SUCCESS != rc2) {
                char s[MPI_MAX_ERROR_STRING];
                int len;
                MPI_Error_string(rc2, s, &len);
                printf("timeout: %s\n", s);
            }
        } else {
            ok = 1;
        }
        check(ok, "a peer 3 s late past the timeout: the stream goes on, the error is reported");
    } else {
        eager(sc, st, h_in, h_out, d_in, d_out);

        /* two streams with a communicator each, and blocking device calls
         * on MPI_COMM_WORLD while both streams' collectives are pending */
        sc2 = stream_comm(st2, &ms2);
        for (int i = 0; i < N; ++i) {
            h_in[i] = val(rank, i);
        }
        CK(cudaMemcpy(d_in, h_in, sizeof(float) * N, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(d_in2, h_in, sizeof(float) * N, cudaMemcpyHostToDevice));
        rc = MPIX_Allreduce_enqueue(d_in, d_out, N, MPI_FLOAT, MPI_SUM, sc);
        rc |= MPIX_Allreduce_enqueue(d_in2, d_out2, N, MPI_FLOAT, MPI_MAX, sc2);
        MPI_Allreduce(d_in, d_w, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        CK(cudaStreamSynchronize(st));
        CK(cudaStreamSynchronize(st2));
        ok = MPI_SUCCESS == rc;
        CK(cudaMemcpy(h_out, d_out, sizeof(float) * N, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; ++i) {
            ok &= h_out[i] == sum_at(i);
        }
        CK(cudaMemcpy(h_out, d_w, sizeof(float) * N, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; ++i) {
            ok &= h_out[i] == sum_at(i);
        }
        CK(cudaMemcpy(h_out, d_out2, sizeof(float) * N, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; ++i) {
            float mx = 0;
            for (int r = 0; r < size; ++r) {
                mx = val(r, i) > mx ? val(r, i) : mx;
            }
            ok &= h_out[i] == mx;
        }
        check(ok, "two stream communicators and a blocking device allreduce at once");
        MPI_Comm_free(&sc2);
        MPIX_Stream_free(&ms2);

        /* captured once, replayed REPLAYS times, a new input each time */
        {
            cudaGraph_t g;
            cudaGraphExec_t ge;
            CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
            rc = MPIX_Allreduce_enqueue(d_in, d_out, 1, MPI_FLOAT, MPI_SUM, sc);
            CK(cudaStreamEndCapture(st, &g));
            CK(cudaGraphInstantiate(&ge, g, 0));
            for (int k = 0; k < REPLAYS; ++k) {
                h_in[k] = val(rank, k);
                CK(cudaMemcpyAsync(d_in, &h_in[k], sizeof(float), cudaMemcpyHostToDevice, st));
                CK(cudaGraphLaunch(ge, st));
                CK(cudaMemcpyAsync(&h_res[k], d_out, sizeof(float), cudaMemcpyDeviceToHost, st));
            }
            CK(cudaStreamSynchronize(st));
            ok = MPI_SUCCESS == rc;
            for (int k = 0; k < REPLAYS; ++k) {
                ok &= h_res[k] == sum_at(k);
            }
            check(ok, "allreduce captured in a CUDA graph, 1000 replays, each checked");
            CK(cudaGraphExecDestroy(ge));
            CK(cudaGraphDestroy(g));
        }
        bulk(sc, st, h_big, d_bin, d_bout);
    }
    if (0 == rank) {
        printf("test_gpu_enqueue%s (%d ranks): %d passed, %d failed\n", timeout_mode ? " timeout" : "",
               size, npass, nfail);
    }
    MPI_Comm_free(&sc);
    MPIX_Stream_free(&ms);
    MPI_Finalize();
    return 0 == nfail ? 0 : 1;
}
