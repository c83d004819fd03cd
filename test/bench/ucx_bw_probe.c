/*
 * UCX alone between 2 processes (not a test; prints GB/s): T threads, each
 * with its own worker (a coll/gpu channel, ucx_transport/gpu_ucx.c), swap
 * LEN-byte host buffers ITERS times.  Built by hand against a copy of
 * gpu_ucx.c whose wait policy is set by IDLE_S (idle seconds before the
 * first sleep) and MAXS (longest sleep, ns), see
 * docs/results/scripts/ucx_wait_probe.sh:
 *   gcc -O2 -std=gnu11 -DIDLE_S=2e-3 -DMAXS=50000 -I. -I$MPI_INCLUDE \
 *     test/bench/ucx_bw_probe.c gpu_ucx_variant.c util/gpu_status.c -lmpi -lucp -lucs -lpthread
 *   mpirun -np 2 ./ucx_bw_probe T LEN ITERS
 */
#include "ucx_transport/gpu_ucx.h"
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static int rank, size;
static gpu_net_t *nets[8];
static size_t len;
static int iters;
static gpu_status_t ag(void *c, const void *s, void *r, size_t b)
{
    (void)c;
    return MPI_Allgather(s, (int)b, MPI_BYTE, r, (int)b, MPI_BYTE, MPI_COMM_WORLD)
               ? GPU_ERR_BOOTSTRAP
               : GPU_OK;
}
static const gpu_boot_ops_t boot = {.allgather = ag};
static double now()
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static void *run(void *a)
{
    int c = (int)(long)a;
    char *sb = malloc(len), *rb = malloc(len);
    memset(sb, 1, len);
    memset(rb, 0, len);
    for (int i = 0; i < iters; i++) {
        gpu_net_req_t r[2];
        gpu_ucx_net_ops.irecv(nets[c], 1 - rank, rb, len, i, GPU_NET_MEM_HOST, &r[0]);
        gpu_ucx_net_ops.isend(nets[c], 1 - rank, sb, len, i, GPU_NET_MEM_HOST, &r[1]);
        gpu_ucx_net_ops.waitall(nets[c], r, 2, "bw");
    }
    free(sb);
    free(rb);
    return NULL;
}
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int T = atoi(argv[1]);
    len = strtoul(argv[2], 0, 0);
    iters = atoi(argv[3]);
    for (int c = 0; c < T; c++) {
        gpu_ucx_params_t p = {.timeout_s = 30,
                              .comm_id = 3,
                              .host_id = 1,
                              .channel = c,
                              .rndv_thresh = argc > 4 ? strtoul(argv[4], 0, 0) : 0};
        if (gpu_ucx_create(&boot, NULL, rank, size, &p, &nets[c])) {
            printf("create fail\n");
            return 1;
        }
    }
    pthread_t th[8];
    MPI_Barrier(MPI_COMM_WORLD);
    double t = now();
    for (int c = 0; c < T; c++)
        pthread_create(&th[c], 0, run, (void *)(long)c);
    for (int c = 0; c < T; c++)
        pthread_join(th[c], 0);
    t = now() - t;
    if (!rank)
        printf("T=%d len=%zu: %.2f GB/s per direction (%.1f us per exchange per thread)\n", T, len,
               (double)len * iters * T / t / 1e9, t / iters * 1e6);
    MPI_Finalize();
    return 0;
}
