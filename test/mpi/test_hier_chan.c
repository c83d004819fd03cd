/*
 * The staged inter-node pipeline (hier/) between real processes, each rank
 * its own node, on the channel threads of gpu_hier_chan.c or the calling
 * thread alone: slot copies, their events and the second copy stream run
 * on the CUDA runtime stand-in's stream threads (test/fake/rt), the network
 * is UCX as UCX_TLS says.  Every hierarchical collective at sizes of one
 * element up to many slices that wrap the slot ring, in place and not,
 * against host references with values whose folds are exact in any order;
 * outputs are poisoned first and the bytes past every output checked.
 * With "threads", two hierarchies whose endpoints have UCX workers of their
 * own (as under MPI_THREAD_MULTIPLE) run the same calls at once on two
 * threads.  With "devfold" (coll_gpu_net_device_fold) the allreduce of 2
 * nodes swaps its slices and folds them on the way back to the device: the
 * fold "kernel" here waits for its stream and folds on the host; every
 * allreduce and reduce_scatter_block of np 2 must fold so, no other.
 * Usage: mpirun -np N test_hier_chan CHANNELS [SLOT_BYTES [threads|devfold]]
 * Prints "N passed, N failed".
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "hier/gpu_hier.h"
#include "kernels/gpu_kernels.h"
#include "test/unit/check.h"

/* CHECK from several threads */
#undef CHECK
#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (cond) {                                                        \
            __atomic_add_fetch(&npass, 1, __ATOMIC_RELAXED);               \
        } else {                                                           \
            __atomic_add_fetch(&nfail, 1, __ATOMIC_RELAXED);               \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                    \
            printf(__VA_ARGS__);                                           \
            printf("\n");                                                  \
        }                                                                  \
    } while (0)
#include "ucx_transport/gpu_ucx.h"

static int rank, size, stray, devfold, folds;


/* Every node holds one rank: the hierarchy never runs a node step, nor a
 * device fold but with devfold.  Should it, these say so and fail the run. */
gpu_status_t gpu_engine_xchg(gpu_engine_comm_t *c, const char *what, const gpu_xchg_plan_t *plan,
                             gpu_op_t op, gpu_dtype_t dt, gpu_engine_req_t *req)
{
    (void) c, (void) plan, (void) op, (void) dt, (void) req;
    fprintf(stderr, "rank %d: unexpected node step %s\n", rank, what);
    ++stray;
    return GPU_ERR_INVALID;
}

gpu_status_t gpu_kernel_reduce_local(void *acc, const void *x, size_t count, gpu_op_t op,
                                     gpu_dtype_t dt, void *stream)
{
    if (!devfold) {
        fprintf(stderr, "rank %d: unexpected device fold\n", rank);
        ++stray;
        return GPU_ERR_INVALID;
    }
    /* in the stream's order, as a kernel: after the copy queued before it;
     * acc may be the stand-in's device memory (reduce_scatter_block's
     * temporary), which only copies reach */
    const size_t len = count * gpu_dtype_size(dt);
    char *a = malloc(len + 1), *b = malloc(len + 1);
    stray += cudaSuccess != cudaStreamSynchronize((cudaStream_t) stream);
    stray += cudaSuccess != cudaMemcpy(a, acc, len, cudaMemcpyDefault);
    stray += cudaSuccess != cudaMemcpy(b, x, len, cudaMemcpyDefault);
    stray += !gpu_reduce_host(a, b, count, op, dt);
    stray += cudaSuccess != cudaMemcpy(acc, a, len, cudaMemcpyDefault);
    /* a copy from pageable memory may land later on the legacy stream,
     * which the hierarchy's streams do not wait for (as on a GPU) */
    stray += cudaSuccess != cudaDeviceSynchronize();
    free(a);
    free(b);
    __atomic_add_fetch(&folds, 1, __ATOMIC_RELAXED);
    return GPU_OK;
}

int gpu_kernel_supported(gpu_op_t op, gpu_dtype_t dt)
{
    (void) op, (void) dt;
    return 1;
}

gpu_status_t gpu_kernel_fold_preload(void)
{
    return GPU_OK;
}

static gpu_status_t boot_allgather(void *ctx, const void *sbuf, void *rbuf, size_t bytes)
{
    (void) ctx;
    return MPI_SUCCESS == MPI_Allgather(sbuf, (int) bytes, MPI_BYTE, rbuf, (int) bytes, MPI_BYTE,
                                        MPI_COMM_WORLD) ? GPU_OK : GPU_ERR_BOOTSTRAP;
}
static const gpu_boot_ops_t boot = { .allgather = boot_allgather };

/* rank r's element i: small integers, so float sums are exact */
static float val(int r, size_t i, unsigned seed)
{
    return (float) ((int) ((i * 7 + (size_t) r * 13 + seed) % 17) - 8);
}

#define GUARD 64
#define POISON 0x5a

static int guard_ok(const char *after)
{
    for (int i = 0; i < GUARD; ++i) {
        if (POISON != (unsigned char) after[i]) {
            return 0;
        }
    }
    return 1;
}

/* float buffer of n elements plus a poisoned guard */
static float *fbuf(size_t n)
{
    char *p = malloc(n * sizeof(float) + GUARD);
    memset(p, POISON, n * sizeof(float) + GUARD);
    return (float *) p;
}

static void test_allreduce(gpu_hier_t *h, size_t n, int in_place, unsigned seed)
{
    float *in = fbuf(n), *out = fbuf(n);
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
        (in_place ? out : in)[i] = val(rank, i, seed);
    }
    const gpu_status_t st = gpu_hier_allreduce(h, in_place ? out : in, out, n, GPU_OP_SUM,
                                               GPU_DT_F32);
    for (size_t i = 0; i < n && GPU_OK == st; ++i) {
        float ref = 0;
        for (int r = 0; r < size; ++r) {
            ref += val(r, i, seed);
        }
        bad += out[i] != ref;
    }
    CHECK(GPU_OK == st && 0 == bad && guard_ok((char *) (out + n)),
          "allreduce %zu floats%s: %s, %d wrong", n, in_place ? " in place" : "",
          gpu_status_string(st), bad);
    free(in);
    free(out);
}

static void test_bcast(gpu_hier_t *h, size_t n, int root, unsigned seed)
{
    float *b = fbuf(n);
    int bad = 0;
    for (size_t i = 0; i < n && rank == root; ++i) {
        b[i] = val(root, i, seed);
    }
    const gpu_status_t st = gpu_hier_bcast(h, b, n * sizeof(float), root);
    for (size_t i = 0; i < n && GPU_OK == st; ++i) {
        bad += b[i] != val(root, i, seed);
    }
    CHECK(GPU_OK == st && 0 == bad && guard_ok((char *) (b + n)), "bcast %zu floats from %d: %s, "
          "%d wrong", n, root, gpu_status_string(st), bad);
    free(b);
}

static void test_reduce(gpu_hier_t *h, size_t n, int root, unsigned seed)
{
    float *in = fbuf(n), *out = fbuf(n);
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
        in[i] = val(rank, i, seed);
    }
    const gpu_status_t st = gpu_hier_reduce(h, in, out, n, GPU_OP_SUM, GPU_DT_F32, root);
    for (size_t i = 0; i < n && GPU_OK == st && rank == root; ++i) {
        float ref = 0;
        for (int r = 0; r < size; ++r) {
            ref += val(r, i, seed);
        }
        bad += out[i] != ref;
    }
    CHECK(GPU_OK == st && 0 == bad && guard_ok((char *) (out + n)), "reduce %zu floats to %d: "
          "%s, %d wrong", n, root, gpu_status_string(st), bad);
    free(in);
    free(out);
}

static void test_allgather(gpu_hier_t *h, size_t n, unsigned seed)
{
    float *in = fbuf(n), *out = fbuf(n * (size_t) size);
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
        in[i] = val(rank, i, seed);
    }
    const gpu_status_t st = gpu_hier_allgather(h, in, out, n * sizeof(float));
    for (int r = 0; r < size && GPU_OK == st; ++r) {
        for (size_t i = 0; i < n; ++i) {
            bad += out[(size_t) r * n + i] != val(r, i, seed);
        }
    }
    CHECK(GPU_OK == st && 0 == bad && guard_ok((char *) (out + n * (size_t) size)),
          "allgather %zu floats a rank: %s, %d wrong", n, gpu_status_string(st), bad);
    free(in);
    free(out);
}

static void test_reduce_scatter_block(gpu_hier_t *h, size_t n, unsigned seed)
{
    const size_t total = n * (size_t) size;
    float *in = fbuf(total), *out = fbuf(n);
    int bad = 0;
    for (size_t i = 0; i < total; ++i) {
        in[i] = val(rank, i, seed);
    }
    const gpu_status_t st = gpu_hier_reduce_scatter_block(h, in, out, n, GPU_OP_SUM, GPU_DT_F32);
    for (size_t i = 0; i < n && GPU_OK == st; ++i) {
        float ref = 0;
        for (int r = 0; r < size; ++r) {
            ref += val(r, (size_t) rank * n + i, seed);
        }
        bad += out[i] != ref;
    }
    CHECK(GPU_OK == st && 0 == bad && guard_ok((char *) (out + n)), "reduce_scatter_block %zu "
          "floats a rank: %s, %d wrong", n, gpu_status_string(st), bad);
    free(in);
    free(out);
}

/* one shape of sizes through every collective of h */
static void *run_all(void *arg)
{
    gpu_hier_t *h = arg;
    /* one element, one slot, a slot ring's worth and more, odd ends */
    static const size_t sizes[] = { 1, 1000, 16384, 16384 * 9 + 3, (1u << 20) + 5 };
    for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); ++k) {
        const size_t n = sizes[k];
        test_allreduce(h, n, 0, k);
        test_allreduce(h, n, 1, k + 100);
        test_bcast(h, n, (int) (k % (unsigned) size), k);
        test_reduce(h, n, (int) ((k + 1) % (unsigned) size), k);
        test_allgather(h, n / (size_t) size + 1, k);
        test_reduce_scatter_block(h, n / (size_t) size + 1, k + 7);
    }
    return NULL;
}

/* endpoints of nchan channels and a hierarchy over them (every rank a node) */
static gpu_hier_t *make(int nchan, size_t slot, int own, uint16_t id, gpu_net_t **nets,
                        const int *node_of)
{
    gpu_hier_params_t hp;
    gpu_hier_t *h = NULL;
    for (int i = 0; i < nchan && i < GPU_UCX_MAX_CHANNELS; ++i) {
        gpu_ucx_params_t p = { .timeout_s = 30.0, .direct = 0, .comm_id = id, .host_id = 1,
                               .channel = i, .own_worker = own };
        const gpu_status_t st = gpu_ucx_create(&boot, NULL, rank, size, &p, &nets[i]);
        CHECK(GPU_OK == st, "UCX endpoints of channel %d: %s", i, gpu_status_string(st));
        if (GPU_OK != st) {
            return NULL;
        }
    }
    memset(&hp, 0, sizeof(hp));
    hp.slot_bytes = slot;
    hp.nslots = 4;
    hp.timeout_s = 30.0;
    hp.alpha_s = 10e-6;
    hp.beta_Bps = 12.5e9;
    hp.channels = nchan;
    hp.device_fold = devfold;
    const gpu_hier_layout_t layout = { .nranks = size, .rank = rank, .node_of = node_of };
    const gpu_status_t st = gpu_hier_create(NULL, &gpu_ucx_net_ops, nets, 0, &layout, &hp, &h);
    CHECK(GPU_OK == st, "hierarchy with %d channels: %s", nchan, gpu_status_string(st));
    if (0 == rank && GPU_OK == st) {
        printf("test_hier_chan np=%d: %s%s\n", size, gpu_hier_describe(h),
               own ? ", workers of its own" : "");
    }
    return GPU_OK == st ? h : NULL;
}

int main(int argc, char **argv)
{
    const int nchan = argc > 1 ? atoi(argv[1]) : 4;
    const size_t slot = argc > 2 ? strtoul(argv[2], NULL, 0) : 65536;
    const int threads = argc > 3 && 0 == strcmp(argv[3], "threads");
    gpu_net_t *nets[2][GPU_UCX_MAX_CHANNELS] = { { 0 } };
    gpu_hier_t *h[2] = { NULL, NULL };
    pthread_t t;
    int *node_of, provided, counts[2], sums[2];

    devfold = argc > 3 && 0 == strcmp(argv[3], "devfold");
    MPI_Init_thread(&argc, &argv, threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    node_of = malloc(sizeof(int) * (size_t) size);
    for (int r = 0; r < size; ++r) {
        node_of[r] = r;
    }
    h[0] = make(nchan, slot, threads, 11, nets[0], node_of);
    if (threads) {
        h[1] = make(nchan, slot, 1, 12, nets[1], node_of);
    }
    if (threads && NULL != h[0] && NULL != h[1]) {
        /* the two hierarchies at once, as two communicators on two threads */
        CHECK(0 == pthread_create(&t, NULL, run_all, h[1]), "second thread");
        run_all(h[0]);
        pthread_join(t, NULL);
    } else if (!threads && NULL != h[0]) {
        run_all(h[0]);
    }
    CHECK(0 == stray, "the hierarchy ran %d node steps or device folds", stray);
    /* np 2 with devfold: every allreduce slice folds on the way back (the
     * 1-element calls too); else none */
    CHECK(devfold && 2 == size ? folds > 0 : 0 == folds, "%d device folds (devfold %d, np %d)",
          folds, devfold, size);
    if (devfold && 0 == rank) {
        printf("device folds on rank 0: %d\n", folds);
    }
    for (int j = 0; j < 2; ++j) {
        gpu_hier_destroy(h[j]);
        for (int i = 0; i < nchan && i < GPU_UCX_MAX_CHANNELS; ++i) {
            gpu_ucx_destroy(nets[j][i]);
        }
    }
    free(node_of);
    counts[0] = npass;
    counts[1] = nfail;
    MPI_Reduce(counts, sums, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        printf("%d passed, %d failed\n", sums[0], sums[1]);
    }
    MPI_Finalize();
    return 0 == rank && 0 != sums[1];
}
