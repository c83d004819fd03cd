/*
 * MPI_Allreduce on device buffers (float, sum), 8 B .. max, nccl-tests
 * style, and in the same run on the same buffers ncclAllReduce + stream
 * synchronize when libnccl.so.2 can be loaded (dlopen: the build never
 * needs NCCL).  Time per size is the slowest rank's mean over the timed
 * iterations.  busbw = algbw * 2 (n-1) / n.
 *
 *   gpucoll_bench [-b min_bytes] [-e max_bytes] [-n iters] [--no-nccl] [--csv FILE]
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#define CK(call) do { cudaError_t e_ = (call); if (cudaSuccess != e_) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

typedef struct { char internal[128]; } nccl_id_t;
typedef void *nccl_comm_t;
static struct {
    int (*get_unique_id)(nccl_id_t *);
    int (*comm_init_rank)(nccl_comm_t *, int, nccl_id_t, int);
    int (*all_reduce)(const void *, void *, size_t, int, int, nccl_comm_t, cudaStream_t);
    int (*comm_destroy)(nccl_comm_t);
    int (*get_version)(int *);
} nccl;

static int nccl_load(void)
{
    void *h = dlopen("libnccl.so.2", RTLD_NOW);
    if (NULL == h) return 0;
    nccl.get_unique_id = (int (*)(nccl_id_t *)) dlsym(h, "ncclGetUniqueId");
    nccl.comm_init_rank = (int (*)(nccl_comm_t *, int, nccl_id_t, int)) dlsym(h, "ncclCommInitRank");
    nccl.all_reduce = (int (*)(const void *, void *, size_t, int, int, nccl_comm_t, cudaStream_t)) dlsym(h, "ncclAllReduce");
    nccl.comm_destroy = (int (*)(nccl_comm_t)) dlsym(h, "ncclCommDestroy");
    nccl.get_version = (int (*)(int *)) dlsym(h, "ncclGetVersion");
    return nccl.get_unique_id && nccl.comm_init_rank && nccl.all_reduce && nccl.comm_destroy;
}

static double time_mpi(void *s, void *r, size_t count, int iters, int warm)
{
    double t0, dt, mx;
    int i;
    for (i = 0; i < warm; ++i) MPI_Allreduce(s, r, (int) count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (i = 0; i < iters; ++i) MPI_Allreduce(s, r, (int) count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
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
        if (0 != nccl.all_reduce(s, r, count, 7 /* ncclFloat32 */, 0 /* ncclSum */, c, st)) {
            fprintf(stderr, "ncclAllReduce failed\n");
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        CK(cudaStreamSynchronize(st));
    }
    dt = (MPI_Wtime() - t0) / iters;
    MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return mx;
}

int main(int argc, char **argv)
{
    size_t minb = 8, maxb = 1ul << 31, bytes;
    int iters_arg = 0, use_nccl = 1, rank, size, ndev, i, nver = 0;
    const char *csv = NULL;
    FILE *cf = NULL;
    MPI_Comm local;
    int lrank;
    void *s, *r;
    nccl_comm_t nc = NULL;
    cudaStream_t st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (i = 1; i < argc; ++i) {
        if (!strcmp(argv[i], "-b") && i + 1 < argc) minb = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-e") && i + 1 < argc) maxb = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) iters_arg = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-nccl")) use_nccl = 0;
        else if (!strcmp(argv[i], "--csv") && i + 1 < argc) csv = argv[++i];
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
    CK(cudaMalloc(&s, maxb));
    CK(cudaMalloc(&r, maxb));
    {   /* random non-zero floats: never time zeros */
        size_t n = maxb / sizeof(float), chunk = 1 << 24, k;
        float *h = malloc(chunk * sizeof(float));
        for (k = 0; k < chunk; ++k) h[k] = 1.0f + (float) ((k * 2654435761u + (unsigned) rank) % 1000) / 1000.0f;
        for (k = 0; k < n; k += chunk) {
            size_t m = n - k < chunk ? n - k : chunk;
            CK(cudaMemcpy((float *) s + k, h, m * sizeof(float), cudaMemcpyHostToDevice));
        }
        free(h);
    }
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
        printf("# MPI_Allreduce (float, sum, device buffers), %d ranks, %d GPU(s) per node visible%s",
               size, ndev, use_nccl ? "" : ", NCCL not available\n");
        if (use_nccl) printf(", NCCL %d\n", nver);
        printf("%12s %10s %10s %10s", "size(B)", "time(us)", "algbw", "busbw");
        if (use_nccl) printf(" %10s %10s %8s", "nccl(us)", "nccl_bus", "speedup");
        printf("\n");
        if (csv) {
            cf = fopen(csv, "w");
            if (cf) fprintf(cf, "bytes,time_us,algbw_GBs,busbw_GBs,nccl_time_us,nccl_busbw_GBs\n");
        }
    }
    for (bytes = minb; bytes <= maxb; bytes *= 2) {
        size_t count = bytes / sizeof(float);
        int iters = iters_arg ? iters_arg : (bytes <= (1u << 20) ? 200 : (bytes <= (64u << 20) ? 50 : 10));
        int warm = iters / 10 + 2;
        double t = time_mpi(s, r, count, iters, warm), tn = 0;
        double alg = (double) bytes / t / 1e9, bus = alg * 2.0 * (size - 1) / size;
        if (use_nccl) tn = time_nccl(nc, st, s, r, count, iters, warm);
        if (0 == rank) {
            printf("%12zu %10.2f %10.2f %10.2f", bytes, t * 1e6, alg, bus);
            if (use_nccl) {
                double nb = (double) bytes / tn / 1e9 * 2.0 * (size - 1) / size;
                printf(" %10.2f %10.2f %8.2f", tn * 1e6, nb, tn / t);
                if (cf) fprintf(cf, "%zu,%.3f,%.3f,%.3f,%.3f,%.3f\n", bytes, t * 1e6, alg, bus, tn * 1e6, nb);
            } else if (cf) {
                fprintf(cf, "%zu,%.3f,%.3f,%.3f,,\n", bytes, t * 1e6, alg, bus);
            }
            printf("\n");
            fflush(stdout);
        }
    }
    if (cf) fclose(cf);
    if (use_nccl) nccl.comm_destroy(nc);
    CK(cudaFree(s));
    CK(cudaFree(r));
    MPI_Comm_free(&local);
    MPI_Finalize();
    return 0;
}
