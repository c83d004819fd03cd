/*
 * What a collective costs an application: a loop of one bandwidth-bound
 * kernel that uses the whole GPU (a triad of about -k microseconds) and one
 * collective per iteration on device buffers, timed three ways on the same
 * buffers in the same run, MPI and the others taking turns:
 *
 *   mpi     kernel, stream synchronize, MPI_<coll> (coll/gpu, or whatever
 *           the selection gives: run it with --mca coll ^gpu to compare)
 *   staged  kernel, copy to pinned host memory, MPI_<coll> on host buffers,
 *           copy back: what an application does without a CUDA-aware MPI
 *   nccl    kernel, nccl<Coll> on the same stream, stream synchronize
 *           (when libnccl.so.2 can be loaded)
 *   enqueue kernel, MPIX_<Coll>_enqueue on the same stream (libgpucoll's
 *           stream extension; a small allreduce is one kernel there),
 *           stream synchronize: the stream-ordered form NCCL's loop is
 *           (with --enqueue, which initializes MPI_THREAD_MULTIPLE and
 *           runs only this mode and NCCL's; when coll/gpu serves the
 *           stream communicator)
 *
 * For each it prints the loop time per iteration (slowest rank's mean, the
 * median of -r loops), the kernel's own time inside the loop (CUDA events
 * around it) and the kernel's time alone with the component idle (the same
 * kernel loop after a pause longer than any resident kernel stays), so that
 * a component that holds SMs shows as kernel slowdown.  Workloads: 8 B
 * allreduce, 4 MiB allreduce, alltoall of 1 MiB per peer (the default grid); with -w also
 * allreduce1m and alltoall256k.
 *
 *   gpucoll_appbench [-k 20,200,2000] [-w allreduce8,allreduce4m,alltoall1m]
 *                    [-t target_ms per loop] [-r repetitions] [--no-nccl] [--enqueue]
 *                    [--csv FILE]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "bench_util.h"
#include "mpix/mpix_gpu.h"

int gpucoll_app_triad(float *a, const float *b, const float *c, float s, size_t n, int blocks,
                      cudaStream_t st);

/* the grid, then two sizes between (only with -w) */
enum { W_AR8, W_AR4M, W_A2A1M, W_AR1M, W_A2A256K, W_N };
static const char *wname[W_N] = { "allreduce8", "allreduce4m", "alltoall1m", "allreduce1m",
                                  "alltoall256k" };
static const size_t wfloats[W_N] = { 2, (4u << 20) / 4, (1u << 20) / 4, (1u << 20) / 4,
                                     (256u << 10) / 4 };
static const int walltoall[W_N] = { 0, 0, 1, 0, 1 };
enum { M_MPI, M_STAGED, M_NCCL, M_ENQ, M_N };
static const char *mname[M_N] = { "mpi", "staged", "nccl", "enqueue" };

static int nranks, rank, blocks;
static cudaStream_t st;
static float *ta, *tb, *tc;          /* the application's arrays */
static void *ds, *dr, *hs, *hr;      /* collective buffers, device and pinned host */
static nccl_comm_t nc;
static int use_nccl = 1, use_enq = 0, enq_only = 0;
static MPI_Comm scomm = MPI_COMM_NULL;   /* stream communicator on st (enqueue mode) */
static MPIX_Stream mstream;

static int mode_on(int m)
{
    return (m != M_NCCL || use_nccl) && (m != M_ENQ || use_enq) &&
           (!enq_only || m == M_NCCL || m == M_ENQ);
}

/* float elements a rank contributes (allreduce) or sends each peer (alltoall) */
static size_t wcount(int w)
{
    return wfloats[w];
}

static size_t wbytes(int w)
{
    return wcount(w) * sizeof(float) * (walltoall[w] ? (size_t) nranks : 1);
}

static void mpi_coll(int w, void *s, void *r)
{
    const int c = (int) wcount(w);
    if (walltoall[w]) {
        MPI_Alltoall(s, c, MPI_FLOAT, r, c, MPI_FLOAT, MPI_COMM_WORLD);
    } else {
        MPI_Allreduce(s, r, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
}

static int enq_coll(int w)
{
    const int c = (int) wcount(w);
    if (walltoall[w]) {
        return MPIX_Alltoall_enqueue(ds, c, MPI_FLOAT, dr, c, MPI_FLOAT, scomm);
    }
    return MPIX_Allreduce_enqueue(ds, dr, c, MPI_FLOAT, MPI_SUM, scomm);
}

static int nccl_coll(int w)
{
    const size_t c = wcount(w);
    int rc = 0;
    if (!walltoall[w]) {
        return nccl.all_reduce(ds, dr, c, NCCL_DL_FLOAT, NCCL_DL_SUM, nc, st);
    }
    rc |= nccl.group_start();
    for (int p = 0; p < nranks; ++p) {
        rc |= nccl.send((float *) ds + (size_t) p * c, c, NCCL_DL_FLOAT, p, nc, st);
        rc |= nccl.recv((float *) dr + (size_t) p * c, c, NCCL_DL_FLOAT, p, nc, st);
    }
    return rc | nccl.group_end();
}

static void triad(size_t n)
{
    if (0 != gpucoll_app_triad(ta, tb, tc, 0.5f, n, blocks, st)) {
        fprintf(stderr, "gpucoll_appbench: triad launch failed\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

/* one timed loop: mode m (or -1: the kernel alone), mean per iteration of
 * the slowest rank; *kern gets the kernel's mean time inside the loop and
 * *call the host's mean time inside the collective's own call (blocking
 * MPI: the whole collective; nccl and enqueue: queuing it) */
static double run_loop(int m, int w, size_t n, int iters, double *kern, double *call)
{
    cudaEvent_t e0, e1;
    double t0, tc, dt, mx, ksum = 0, csum = 0;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
        float ms = 0;
        CK(cudaEventRecord(e0, st));
        triad(n);
        CK(cudaEventRecord(e1, st));
        if (m == M_MPI) {
            CK(cudaStreamSynchronize(st));
            tc = MPI_Wtime();
            mpi_coll(w, ds, dr);
            csum += MPI_Wtime() - tc;
        } else if (m == M_STAGED) {
            CK(cudaMemcpyAsync(hs, ds, wbytes(w), cudaMemcpyDeviceToHost, st));
            CK(cudaStreamSynchronize(st));
            tc = MPI_Wtime();
            mpi_coll(w, hs, hr);
            csum += MPI_Wtime() - tc;
            CK(cudaMemcpyAsync(dr, hr, wbytes(w), cudaMemcpyHostToDevice, st));
            CK(cudaStreamSynchronize(st));
        } else if (m == M_NCCL || m == M_ENQ) {
            int rc;
            tc = MPI_Wtime();
            rc = m == M_NCCL ? nccl_coll(w) : enq_coll(w);
            csum += MPI_Wtime() - tc;
            if (0 != rc) {
                fprintf(stderr, "gpucoll_appbench: %s call failed\n", mname[m]);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            CK(cudaStreamSynchronize(st));
        } else {
            CK(cudaStreamSynchronize(st));
        }
        CK(cudaEventElapsedTime(&ms, e0, e1));
        ksum += ms * 1e3;
    }
    dt = (MPI_Wtime() - t0) / iters * 1e6;
    MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    ksum /= iters;
    MPI_Allreduce(MPI_IN_PLACE, &ksum, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    *kern = ksum;
    csum = csum / iters * 1e6;
    MPI_Allreduce(&csum, call, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    return mx;
}

/* elements of a triad that takes about target_us on this GPU, from one
 * measured launch of nmax elements (every rank takes the smallest) */
static size_t calibrate(size_t nmax, double target_us)
{
    double k, c, n;
    unsigned long long v;
    (void) run_loop(-1, W_AR8, nmax, 3, &k, &c);
    (void) run_loop(-1, W_AR8, nmax, 10, &k, &c);
    n = (double) nmax * target_us / k;
    v = n < 1024 ? 1024 : n > (double) nmax ? nmax : (size_t) n;
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    return (size_t) v;
}

static int parse_list(const char *arg, double *v, int max)
{
    int n = 0;
    char *copy = strdup(arg), *tok, *save = NULL;
    for (tok = strtok_r(copy, ",", &save); NULL != tok && n < max; tok = strtok_r(NULL, ",", &save)) {
        v[n++] = atof(tok);
    }
    free(copy);
    return n;
}

int main(int argc, char **argv)
{
    double ktarget[8] = { 20, 200, 2000 };
    int nk = 3, wsel[W_N] = { 1, 1, 1, 0, 0 }, reps = 3, ndev, lrank, nver = 0;
    double loop_ms = 300;
    const char *csv = NULL;
    FILE *cf = NULL;
    MPI_Comm local;
    size_t nmax, maxb = 0;

    for (int i = 1; i < argc; ++i) {
        enq_only |= !strcmp(argv[i], "--enqueue");
    }
    if (enq_only) {
        /* the stream extension runs a stream's collectives on CUDA's
         * host-function thread; MPI_THREAD_MULTIPLE makes coll/gpu pace
         * every blocking call on the host, so the mpi and staged modes
         * are left to a run without --enqueue */
        int got = 0;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &got);
        use_enq = MPI_THREAD_MULTIPLE == got;
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-k") && i + 1 < argc) {
            nk = parse_list(argv[++i], ktarget, 8);
        } else if (!strcmp(argv[i], "-w") && i + 1 < argc) {
            const char *l = argv[++i];
            for (int w = 0; w < W_N; ++w) {
                wsel[w] = NULL != strstr(l, wname[w]);
            }
        } else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            loop_ms = atof(argv[++i]);
        } else if (!strcmp(argv[i], "-r") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--enqueue")) {
            continue;
        } else if (!strcmp(argv[i], "--no-nccl")) {
            use_nccl = 0;
        } else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
            csv = argv[++i];
        } else {
            if (0 == rank) {
                fprintf(stderr, "usage: %s [-k us,us,..] [-w allreduce8,allreduce4m,alltoall1m] "
                        "[-t loop_ms] [-r reps] [--no-nccl] [--enqueue] [--csv FILE]\n", argv[0]);
            }
            MPI_Finalize();
            return 2;
        }
    }
    reps = reps < 1 ? 1 : reps > 15 ? 15 : reps;
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || ndev < 1) {
        if (0 == rank) {
            printf("SKIP gpucoll_appbench: no CUDA device visible\n");
        }
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    CK(cudaSetDevice(lrank % ndev));
    CK(cudaDeviceGetAttribute(&blocks, cudaDevAttrMultiProcessorCount, lrank % ndev));
    blocks *= 4;   /* 4 blocks of 512 threads per SM: the whole GPU */
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    /* enough elements for the longest kernel asked for at 5 TB/s, at least 64 Mi */
    {
        double kmax = 0;
        for (int i = 0; i < nk; ++i) {
            kmax = ktarget[i] > kmax ? ktarget[i] : kmax;
        }
        nmax = (size_t) (kmax * 1e-6 * 5e12 / 12.0);
        nmax = nmax < (64u << 20) ? (64u << 20) : nmax;
    }
    CK(cudaMalloc((void **) &ta, nmax * sizeof(float)));
    CK(cudaMalloc((void **) &tb, nmax * sizeof(float)));
    CK(cudaMalloc((void **) &tc, nmax * sizeof(float)));
    CK(cudaMemset(tb, 0, nmax * sizeof(float)));
    CK(cudaMemset(tc, 0, nmax * sizeof(float)));
    for (int w = 0; w < W_N; ++w) {
        maxb = wbytes(w) > maxb ? wbytes(w) : maxb;
    }
    CK(cudaMalloc(&ds, maxb));
    CK(cudaMalloc(&dr, maxb));
    CK(cudaMallocHost(&hs, maxb));
    CK(cudaMallocHost(&hr, maxb));
    {
        float *h = hs;
        for (size_t i = 0; i < maxb / sizeof(float); ++i) {
            h[i] = (float) ((rank * 131 + i * 7) % 97 + 1);
        }
        CK(cudaMemcpy(ds, hs, maxb, cudaMemcpyHostToDevice));
    }
    use_nccl = use_nccl && nccl_load();
    MPI_Allreduce(MPI_IN_PLACE, &use_nccl, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (use_nccl) {
        nccl_id_t id;
        if (0 == rank) {
            nccl.get_unique_id(&id);
        }
        MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
        use_nccl = 0 == nccl.comm_init_rank(&nc, nranks, id, rank);
        MPI_Allreduce(MPI_IN_PLACE, &use_nccl, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        if (nccl.get_version) {
            nccl.get_version(&nver);
        }
    }
    {
        /* the enqueue mode's stream communicator; off where coll/gpu does
         * not serve it (every rank must agree) */
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "type", "cudaStream_t");
        MPIX_Info_set_hex(info, "value", &st, sizeof(st));
        use_enq = use_enq && MPI_SUCCESS == MPIX_Stream_create(info, &mstream) &&
                  MPI_SUCCESS == MPIX_Stream_comm_create(MPI_COMM_WORLD, mstream, &scomm);
        MPI_Info_free(&info);
        MPI_Allreduce(MPI_IN_PLACE, &use_enq, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    }
    if (0 == rank) {
        printf("# application loop: triad on the whole GPU + one collective per iteration, %d ranks, "
               "%d GPU(s) per node visible%s", nranks, ndev, use_nccl ? "" : ", NCCL not available\n");
        if (use_nccl) {
            printf(", NCCL %d\n", nver);
        }
        printf("# loop_us: per iteration (slowest rank, median of %d loops); kernel_us: the triad "
               "inside the loop; alone_us: the triad alone, component idle; call_us: host time inside "
               "the collective's call (slowest rank)\n", reps);
        printf("%9s %-12s %-7s %10s %10s %10s %8s %9s %8s\n", "kernel_us", "workload", "mode",
               "loop_us", "kernel_us", "alone_us", "slowdown", "vs_nccl", "call_us");
        if (NULL != csv && NULL == (cf = fopen(csv, "w"))) {
            perror(csv);
        }
        if (cf) {
            fprintf(cf, "kernel_target_us,workload,mode,loop_us,kernel_us,alone_us,slowdown_pct,"
                    "loop_vs_nccl,call_us\n");
        }
    }
    for (int k = 0; k < nk; ++k) {
        const size_t n = calibrate(nmax, ktarget[k]);
        double kalone, alone[15], aloop[15], dummy;
        /* about 60 ms of triads: with 20 the first launches after the pause
         * weighed in (30 us alone where every loop of the run measured
         * 27-28.6 inside) */
        int iters = (int) (60e3 / ktarget[k]);
        iters = iters < 20 ? 20 : iters > 3000 ? 3000 : iters;
        for (int r = 0; r < reps; ++r) {
            /* longer than coll_gpu_persist_idle_us (200 us by default): the
             * resident kernel of the last collective has left */
            MPI_Barrier(MPI_COMM_WORLD);
            usleep(2000);
            aloop[r] = run_loop(-1, W_AR8, n, iters, &alone[r], &dummy);
        }
        kalone = median(alone, reps);
        if (0 == rank) {
            /* what a loop costs without a collective (launch, synchronize):
             * each mode's loop_us less this is what its collective adds */
            printf("# %.0f us kernel alone: %.2f us per iteration, kernel %.2f us\n", ktarget[k],
                   median(aloop, reps), kalone);
        }
        iters = (int) (loop_ms * 1e3 / (kalone + 20.0));
        iters = iters < 20 ? 20 : iters > 20000 ? 20000 : iters;
        for (int w = 0; w < W_N; ++w) {
            double loop[M_N][15], kern[M_N][15], callt[M_N][15], lmed[M_N] = { 0 }, kmed[M_N] = { 0 },
                   cmed[M_N] = { 0 };
            if (!wsel[w]) {
                continue;
            }
            for (int m = 0; m < M_N; ++m) {
                if (mode_on(m)) {
                    (void) run_loop(m, w, n, 5, &dummy, &dummy);   /* warm-up: setup, first use */
                }
            }
            for (int r = 0; r < reps; ++r) {
                for (int m = 0; m < M_N; ++m) {
                    if (mode_on(m)) {
                        loop[m][r] = run_loop(m, w, n, iters, &kern[m][r], &callt[m][r]);
                    }
                }
            }
            for (int m = 0; m < M_N; ++m) {
                if (mode_on(m)) {
                    lmed[m] = median(loop[m], reps);
                    kmed[m] = median(kern[m], reps);
                    cmed[m] = median(callt[m], reps);
                }
            }
            for (int m = 0; m < M_N && 0 == rank; ++m) {
                const double slow = 100.0 * (kmed[m] / kalone - 1.0);
                const double vs = use_nccl ? lmed[m] / lmed[M_NCCL] : 0.0;
                if (!mode_on(m)) {
                    continue;
                }
                printf("%9.0f %-12s %-7s %10.2f %10.2f %10.2f %7.1f%% %9.3f %8.2f\n", ktarget[k],
                       wname[w], mname[m], lmed[m], kmed[m], kalone, slow, vs, cmed[m]);
                if (cf) {
                    fprintf(cf, "%.0f,%s,%s,%.3f,%.3f,%.3f,%.2f,%.4f,%.3f\n", ktarget[k], wname[w],
                            mname[m], lmed[m], kmed[m], kalone, slow, vs, cmed[m]);
                }
            }
            if (0 == rank) {
                fflush(stdout);
            }
        }
    }
    if (cf) {
        fclose(cf);
    }
    if (use_nccl) {
        nccl.comm_destroy(nc);
    }
    if (use_enq) {
        MPI_Comm_free(&scomm);
        MPIX_Stream_free(&mstream);
    }
    CK(cudaFreeHost(hs));
    CK(cudaFreeHost(hr));
    CK(cudaFree(ds));
    CK(cudaFree(dr));
    CK(cudaFree(ta));
    CK(cudaFree(tb));
    CK(cudaFree(tc));
    MPI_Comm_free(&local);
    MPI_Finalize();
    return 0;
}
