/*
 * Device-buffer collectives (float, sum), 8 B .. max, nccl-tests style:
 * MPI_<coll> through the selected coll component, and in the same run on
 * the same buffers the NCCL counterpart + stream synchronize when
 * libnccl.so.2 can be loaded (dlopen: the build never needs NCCL).  Time
 * per size is the slowest rank's mean over the timed iterations; the timed
 * loop runs -r times (default 3), MPI and NCCL taking turns, and each side
 * reports its median loop: a one-off stall of the shared host (seen in both
 * columns at random sizes, up to 4x) then moves no figure.  Size
 * and busbw follow nccl-tests: size is the largest buffer of a rank
 * (allgather: the output; reduce_scatter, alltoall: the input); busbw =
 * algbw x 2(n-1)/n for allreduce, (n-1)/n for allgather, reduce_scatter
 * and alltoall, 1 for bcast and reduce.  neighbor_alltoall runs on a 2-D
 * periodic Cartesian grid of the ranks (MPI_Dims_create): size is the
 * block per neighbour, busbw what a rank sends to its 4 neighbours per
 * second; NCCL's counterpart is ncclSend/ncclRecv to the same neighbours
 * in one group.
 *
 *   gpucoll_bench [-c allreduce|bcast|reduce|allgather|reduce_scatter|alltoall|neighbor_alltoall]
 *                 [-b min_bytes] [-e max_bytes] [-n iters] [-r repetitions] [--no-nccl] [--nonblocking]
 *                 [--graph] [--csv FILE] [--json FILE]
 *
 * --graph adds NCCL's time per call when 20 calls are replayed as one CUDA
 * graph (nccl-tests' -G: its best case, no launch or host wait per call).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "bench_util.h"

enum { B_ALLREDUCE, B_BCAST, B_REDUCE, B_ALLGATHER, B_REDUCE_SCATTER, B_ALLTOALL,
       B_NEIGHBOR_ALLTOALL, B_N };
static const char *bname[] = { "allreduce", "bcast", "reduce", "allgather", "reduce_scatter",
                               "alltoall", "neighbor_alltoall" };
static int coll, nranks, nonblocking;
/* neighbor_alltoall: the grid and each dimension's two neighbours */
static MPI_Comm grid = MPI_COMM_NULL;
static int nbr_src[2], nbr_dst[2];

/* elements per rank-to-rank unit for a size in bytes (see the header) */
static size_t unit_count(size_t bytes)
{
    const size_t n = (size_t) nranks;
    if (B_NEIGHBOR_ALLTOALL == coll) {
        return bytes / sizeof(float);   /* per neighbour */
    }
    return (coll >= B_ALLGATHER ? bytes / n : bytes) / sizeof(float);
}

static double bus_factor(void)
{
    const double n = nranks;
    if (B_NEIGHBOR_ALLTOALL == coll) {
        return 4.0;
    }
    return coll == B_ALLREDUCE ? 2.0 * (n - 1) / n : coll >= B_ALLGATHER ? (n - 1) / n : 1.0;
}

static void mpi_call(void *s, void *r, size_t c)
{
    const int n = (int) c;
    if (nonblocking && B_ALLREDUCE == coll) {
        /* OSU's osu_iallreduce without compute: start and wait */
        MPI_Request q;
        MPI_Iallreduce(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        return;
    }
    switch (coll) {
    case B_ALLREDUCE: MPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case B_BCAST: MPI_Bcast(s, n, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case B_REDUCE: MPI_Reduce(s, r, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD); break;
    case B_ALLGATHER: MPI_Allgather(s, n, MPI_FLOAT, r, n, MPI_FLOAT, MPI_COMM_WORLD); break;
    case B_REDUCE_SCATTER: MPI_Reduce_scatter_block(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case B_ALLTOALL: MPI_Alltoall(s, n, MPI_FLOAT, r, n, MPI_FLOAT, MPI_COMM_WORLD); break;
    case B_NEIGHBOR_ALLTOALL: MPI_Neighbor_alltoall(s, n, MPI_FLOAT, r, n, MPI_FLOAT, grid); break;
    }
}

static int nccl_call(nccl_comm_t nc, cudaStream_t st, void *s, void *r, size_t c)
{
    int rc = 0;
    switch (coll) {
    case B_ALLREDUCE: return nccl.all_reduce(s, r, c, 7 /* float */, 0 /* sum */, nc, st);
    case B_BCAST: return nccl.broadcast(s, s, c, 7, 0, nc, st);
    case B_REDUCE: return nccl.reduce(s, r, c, 7, 0, 0, nc, st);
    case B_ALLGATHER: return nccl.all_gather(s, r, c, 7, nc, st);
    case B_REDUCE_SCATTER: return nccl.reduce_scatter(s, r, c, 7, 0, nc, st);
    case B_ALLTOALL:
        rc |= nccl.group_start();
        for (int p = 0; p < nranks; ++p) {
            rc |= nccl.send((float *) s + (size_t) p * c, c, 7, p, nc, st);
            rc |= nccl.recv((float *) r + (size_t) p * c, c, 7, p, nc, st);
        }
        return rc | nccl.group_end();
    case B_NEIGHBOR_ALLTOALL:
        /* MPI's block order: per dimension the negative, then the positive neighbour */
        rc |= nccl.group_start();
        for (int d = 0; d < 2; ++d) {
            rc |= nccl.send((float *) s + (size_t) (2 * d) * c, c, 7, nbr_src[d], nc, st);
            rc |= nccl.send((float *) s + (size_t) (2 * d + 1) * c, c, 7, nbr_dst[d], nc, st);
            rc |= nccl.recv((float *) r + (size_t) (2 * d) * c, c, 7, nbr_src[d], nc, st);
            rc |= nccl.recv((float *) r + (size_t) (2 * d + 1) * c, c, 7, nbr_dst[d], nc, st);
        }
        return rc | nccl.group_end();
    }
    return 1;
}

#define MAX_REPS 15

static double time_mpi(void *s, void *r, size_t count, int iters, int warm)
{
    double t0, dt, mx;
    int i;
    for (i = 0; i < warm; ++i) mpi_call(s, r, count);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (i = 0; i < iters; ++i) mpi_call(s, r, count);
    dt = (MPI_Wtime() - t0) / iters;
    MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return mx;
}

static double time_nccl(nccl_comm_t c, cudaStream_t st, void *s, void *r, size_t count, int iters, int warm)
{
    double t0, dt, mx;
    int i;
    for (i = 0; i < warm + iters; ++i) {
        if (i == warm) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        if (0 != nccl_call(c, st, s, r, count)) {
            fprintf(stderr, "NCCL %s failed\n", bname[coll]);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        CK(cudaStreamSynchronize(st));
    }
    dt = (MPI_Wtime() - t0) / iters;
    MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return mx;
}

/* NCCL's best time per call: GPU_GRAPH_CALLS calls captured in one CUDA
 * graph and the graph replayed (what nccl-tests' -G reports): no launch
 * and no host wait per call.  0 where capture fails. */
#define GPU_GRAPH_CALLS 20
static double time_nccl_graph(nccl_comm_t c, cudaStream_t st, void *s, void *r, size_t count,
                              int iters)
{
    const int launches = iters / GPU_GRAPH_CALLS > 0 ? iters / GPU_GRAPH_CALLS : 1;
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    double t0, dt, mx;
    int ok = cudaSuccess == cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal);
    for (int i = 0; ok && i < GPU_GRAPH_CALLS; ++i) {
        ok = 0 == nccl_call(c, st, s, r, count);
    }
    ok = cudaSuccess == cudaStreamEndCapture(st, &g) && ok;
    ok = ok && cudaSuccess == cudaGraphInstantiate(&ge, g, 0);
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (ok) {
        CK(cudaGraphLaunch(ge, st));   /* warm */
        CK(cudaStreamSynchronize(st));
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
        for (int i = 0; i < launches; ++i) {
            CK(cudaGraphLaunch(ge, st));
        }
        CK(cudaStreamSynchronize(st));
        dt = (MPI_Wtime() - t0) / (launches * GPU_GRAPH_CALLS);
    }
    if (NULL != ge) {
        CK(cudaGraphExecDestroy(ge));
    }
    if (NULL != g) {
        CK(cudaGraphDestroy(g));
    }
    if (!ok) {
        (void) cudaGetLastError();
        return 0;
    }
    MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return mx;
}

int main(int argc, char **argv)
{
    size_t minb = 8, maxb = 1ul << 31, bytes;
    int iters_arg = 0, use_nccl = 1, rank, size, ndev, i, nver = 0, reps = 3, graph = 0;
    const char *csv = NULL, *json = NULL;
    FILE *cf = NULL, *jf = NULL;
    int nrows = 0;
    MPI_Comm local;
    int lrank;
    void *s, *r;
    nccl_comm_t nc = NULL;
    cudaStream_t st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    nranks = size;
    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-b") && i + 1 < argc) minb = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-e") && i + 1 < argc) maxb = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) iters_arg = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-nccl")) use_nccl = 0;
        else if (!strcmp(argv[i], "--nonblocking")) nonblocking = 1;   /* allreduce only */
        else if (!strcmp(argv[i], "--graph")) graph = 1;
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
            const char *name = argv[++i];
            for (coll = 0; coll < B_N && strcmp(bname[coll], name); ++coll) {}
            if (coll == B_N) {
                if (0 == rank) fprintf(stderr, "gpucoll_bench: unknown collective %s\n", name);
                MPI_Finalize();
                return 1;
            }
        } else {
            /* --help, or an option the benchmark does not know: the usage, before any
             * device is looked for (so that it answers on a machine without GPU too) */
            int help = !strcmp(argv[i], "-h") || !strcmp(argv[i], "--help");
            if (0 == rank) {
                FILE *o = help ? stdout : stderr;
                if (!help) {
                    fprintf(o, "gpucoll_bench: unknown option or missing value: %s\n", argv[i]);
                }
                fprintf(o, "usage: gpucoll_bench [-c collective] [-b min_bytes] [-e max_bytes] "
                        "[-n iters] [-r repetitions] [--no-nccl] [--nonblocking] [--graph] "
                        "[--csv file] [--json file]\ncollectives:");
                for (int c = 0; c < B_N; ++c) fprintf(o, " %s", bname[c]);
                fprintf(o, "\n");
            }
            MPI_Finalize();
            return help ? 0 : 1;
        }
    }
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || ndev < 1) {
        if (0 == rank) printf("gpucoll_bench: no CUDA device visible; nothing to measure\n");
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    CK(cudaSetDevice(lrank % ndev));
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    if (B_NEIGHBOR_ALLTOALL == coll) {
        int dims[2] = { 0, 0 }, periods[2] = { 1, 1 };
        MPI_Dims_create(size, 2, dims);
        MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
        for (int d = 0; d < 2; ++d) {
            MPI_Cart_shift(grid, d, 1, &nbr_src[d], &nbr_dst[d]);
        }
    }
    const size_t blocks = B_NEIGHBOR_ALLTOALL == coll ? 4 : 1;
    CK(cudaMalloc(&s, maxb * blocks));
    CK(cudaMalloc(&r, maxb * blocks));
    {   /* random non-zero floats: never time zeros */
        size_t n = maxb * blocks / sizeof(float), chunk = 1 << 24, k;
        float *h = malloc(chunk * sizeof(float));
        for (k = 0; k < chunk; ++k) h[k] = 1.0f + (float) ((k * 2654435761u + (unsigned) rank) % 1000) / 1000.0f;
        for (k = 0; k < n; k += chunk) {
            size_t m = n - k < chunk ? n - k : chunk;
            CK(cudaMemcpy((float *) s + k, h, m * sizeof(float), cudaMemcpyHostToDevice));
        }
        free(h);
    }
    reps = reps < 1 ? 1 : (reps > MAX_REPS ? MAX_REPS : reps);
    use_nccl = use_nccl && nccl_load();
    MPI_Allreduce(MPI_IN_PLACE, &use_nccl, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (use_nccl) {
        nccl_id_t id;
        if (0 == rank) nccl.get_unique_id(&id);
        MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
        if (0 != nccl.comm_init_rank(&nc, size, id, rank)) use_nccl = 0;
        if (nccl.get_version) nccl.get_version(&nver);
    }
    if (0 == rank) {
        printf("# MPI_%s (float, sum, device buffers), %d ranks, %d GPU(s) per node visible, "
               "median of %d timed loops%s", bname[coll], size, ndev, reps,
               use_nccl ? "" : ", NCCL not available\n");
        if (use_nccl) printf(", NCCL %d\n", nver);
        printf("%12s %10s %10s %10s", "size(B)", "time(us)", "algbw", "busbw");
        if (use_nccl) printf(" %10s %10s %8s", "nccl(us)", "nccl_bus", "speedup");
        if (use_nccl && graph) printf(" %10s %8s", "graph(us)", "vs_graph");
        printf("\n");
        if (csv) {
            cf = fopen(csv, "w");
            if (cf) fprintf(cf, "coll,bytes,time_us,algbw_GBs,busbw_GBs,nccl_time_us,nccl_busbw_GBs,nccl_graph_us\n");
        }
        if (json) {
            jf = fopen(json, "w");
            if (jf) fprintf(jf, "{\"coll\": \"%s\", \"ranks\": %d, \"nccl_version\": %d, \"rows\": [\n",
                            bname[coll], size, use_nccl ? nver : 0);
        }
    }
    for (bytes = minb; bytes <= maxb; bytes *= 2) {
        size_t count = unit_count(bytes);
        if (0 == count) {
            continue;   /* smaller than one element per rank */
        }
        int iters = iters_arg ? iters_arg : (bytes <= (1u << 20) ? 200 : (bytes <= (64u << 20) ? 50 : 10));
        int warm = iters / 10 + 2;
        double tr[MAX_REPS], tnr[MAX_REPS], tgr[MAX_REPS], t, tn = 0, tg = 0;
        for (int k = 0; k < reps; ++k) {
            tr[k] = time_mpi(s, r, count, iters, warm);
            if (use_nccl) tnr[k] = time_nccl(nc, st, s, r, count, iters, warm);
            if (use_nccl && graph) tgr[k] = time_nccl_graph(nc, st, s, r, count, iters);
        }
        t = median(tr, reps);
        if (use_nccl) tn = median(tnr, reps);
        if (use_nccl && graph) tg = median(tgr, reps);
        double alg = (double) bytes / t / 1e9, bus = alg * bus_factor();
        if (0 == rank) {
            printf("%12zu %10.2f %10.2f %10.2f", bytes, t * 1e6, alg, bus);
            if (use_nccl) {
                double nb = (double) bytes / tn / 1e9 * bus_factor();
                printf(" %10.2f %10.2f %8.2f", tn * 1e6, nb, tn / t);
                if (graph) printf(" %10.2f %8.2f", tg * 1e6, tg / t);
                if (cf) fprintf(cf, "%s,%zu,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n", bname[coll], bytes, t * 1e6, alg, bus, tn * 1e6, nb, tg * 1e6);
            } else if (cf) {
                fprintf(cf, "%s,%zu,%.3f,%.3f,%.3f,,,\n", bname[coll], bytes, t * 1e6, alg, bus);
            }
            printf("\n");
            fflush(stdout);
            if (jf) {
                fprintf(jf, "%s  {\"bytes\": %zu, \"time_us\": %.3f, \"busbw_GBs\": %.3f", nrows++ ? ",\n" : "",
                        bytes, t * 1e6, bus);
                if (use_nccl) fprintf(jf, ", \"nccl_time_us\": %.3f, \"nccl_busbw_GBs\": %.3f", tn * 1e6,
                                      (double) bytes / tn / 1e9 * bus_factor());
                fprintf(jf, "}");
            }
        }
    }
    if (cf) fclose(cf);
    if (jf) {
        fprintf(jf, "\n]}\n");
        fclose(jf);
    }
    if (use_nccl) nccl.comm_destroy(nc);
    CK(cudaFree(s));
    CK(cudaFree(r));
    if (MPI_COMM_NULL != grid) {
        MPI_Comm_free(&grid);
    }
    MPI_Comm_free(&local);
    MPI_Finalize();
    return 0;
}
