/*
 * What the benchmarks (gpucoll_bench, gpucoll_appbench) share: the CUDA
 * check, the median of repeated loops, and NCCL through dlopen:
 * the build never needs NCCL; a host with libnccl.so.2 gets the comparison
 * in the same run.  Only the calls the benchmarks make, with NCCL's ABI
 * (ncclUniqueId is 128 bytes; float is datatype 7, sum is op 0).
 */
#ifndef GPUCOLL_BENCH_UTIL_H
#define GPUCOLL_BENCH_UTIL_H

#include <dlfcn.h>
#include <stdio.h>

#include <mpi.h>
#include <cuda_runtime_api.h>

#define CK(call) do { cudaError_t e_ = (call); if (cudaSuccess != e_) { \
    fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

/* median of n values (sorts them) */
static double median(double *v, int n)
{
    for (int i = 1; i < n; ++i) {
        for (int j = i; j > 0 && v[j] < v[j - 1]; --j) {
            const double x = v[j];
            v[j] = v[j - 1];
            v[j - 1] = x;
        }
    }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}


#define NCCL_DL_FLOAT 7
#define NCCL_DL_SUM 0

typedef struct { char internal[128]; } nccl_id_t;
typedef void *nccl_comm_t;
static struct {
    int (*get_unique_id)(nccl_id_t *);
    int (*comm_init_rank)(nccl_comm_t *, int, nccl_id_t, int);
    int (*all_reduce)(const void *, void *, size_t, int, int, nccl_comm_t, cudaStream_t);
    int (*broadcast)(const void *, void *, size_t, int, int, nccl_comm_t, cudaStream_t);
    int (*reduce)(const void *, void *, size_t, int, int, int, nccl_comm_t, cudaStream_t);
    int (*all_gather)(const void *, void *, size_t, int, nccl_comm_t, cudaStream_t);
    int (*reduce_scatter)(const void *, void *, size_t, int, int, nccl_comm_t, cudaStream_t);
    int (*send)(const void *, size_t, int, int, nccl_comm_t, cudaStream_t);
    int (*recv)(void *, size_t, int, int, nccl_comm_t, cudaStream_t);
    int (*group_start)(void);
    int (*group_end)(void);
    int (*comm_destroy)(nccl_comm_t);
    int (*get_version)(int *);
} nccl;

/* 1 when every call above resolved */
static int nccl_load(void)
{
    void *h = dlopen("libnccl.so.2", RTLD_NOW);
    if (NULL == h) return 0;
    nccl.get_unique_id = (int (*)(nccl_id_t *)) dlsym(h, "ncclGetUniqueId");
    nccl.comm_init_rank = (int (*)(nccl_comm_t *, int, nccl_id_t, int)) dlsym(h, "ncclCommInitRank");
    nccl.all_reduce = (int (*)(const void *, void *, size_t, int, int, nccl_comm_t, cudaStream_t)) dlsym(h, "ncclAllReduce");
    nccl.comm_destroy = (int (*)(nccl_comm_t)) dlsym(h, "ncclCommDestroy");
    nccl.get_version = (int (*)(int *)) dlsym(h, "ncclGetVersion");
    *(void **) &nccl.broadcast = dlsym(h, "ncclBroadcast");
    *(void **) &nccl.reduce = dlsym(h, "ncclReduce");
    *(void **) &nccl.all_gather = dlsym(h, "ncclAllGather");
    *(void **) &nccl.reduce_scatter = dlsym(h, "ncclReduceScatter");
    *(void **) &nccl.send = dlsym(h, "ncclSend");
    *(void **) &nccl.recv = dlsym(h, "ncclRecv");
    *(void **) &nccl.group_start = dlsym(h, "ncclGroupStart");
    *(void **) &nccl.group_end = dlsym(h, "ncclGroupEnd");
    return nccl.get_unique_id && nccl.comm_init_rank && nccl.all_reduce && nccl.comm_destroy &&
           nccl.broadcast && nccl.reduce && nccl.all_gather && nccl.reduce_scatter && nccl.send &&
           nccl.recv && nccl.group_start && nccl.group_end;
}

#endif
