/*
 * What coll/gpu costs a host-buffer program: the latency of an 8-byte (or
 * -s BYTES) MPI_Allreduce on host memory, median of -r loops of -n calls.
 * Run it with and without the component (--mca coll ^gpu) and compare.
 *   host_allreduce_lat [-s BYTES] [-n ITERS] [-r LOOPS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    const double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    size_t bytes = 8;
    int iters = 20000, loops = 7, rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-s")) bytes = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "-n")) iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-r")) loops = atoi(argv[i + 1]);
    }
    const int count = (int) (bytes / sizeof(float) ? bytes / sizeof(float) : 1);
    float *in = calloc((size_t) count, sizeof(float)), *out = calloc((size_t) count, sizeof(float));
    double *t = calloc((size_t) loops, sizeof(double));
    for (int i = 0; i < 1000; ++i) {
        MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    for (int l = 0; l < loops; ++l) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        for (int i = 0; i < iters; ++i) {
            MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        }
        t[l] = (MPI_Wtime() - t0) / iters * 1e6;
    }
    qsort(t, (size_t) loops, sizeof(double), cmp);
    if (0 == rank) {
        printf("host allreduce %zu B: median %.3f us (min %.3f, max %.3f) over %d loops of %d\n",
               (size_t) count * sizeof(float), t[loops / 2], t[0], t[loops - 1], loops, iters);
    }
    free(in);
    free(out);
    free(t);
    MPI_Finalize();
    return 0;
}
