/*
 * What the hierarchy's MPI tests (test_hier_v, test_hier_nbr) share: the
 * node engine emulated over MPI point-to-point on a node communicator (a
 * COPY plan's pairs through host copies, a REDUCE plan's sources folded in
 * rank order by the host functors), the scan's fold kernel the same way,
 * the transport's bootstrap over MPI_COMM_WORLD, and device buffers of the
 * CUDA runtime stand-in (test/fake/rt) seen through copies.  stray counts
 * node steps the emulation does not run and failed copies: a test checks
 * it is 0.  One translation unit per program includes it.
 */
#ifndef GPUCOLL_TEST_HIER_EMUL_H
#define GPUCOLL_TEST_HIER_EMUL_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "hier/gpu_hier.h"
#include "kernels/gpu_kernels.h"
#include "test/unit/check.h"
#include "ucx_transport/gpu_ucx.h"

static int rank, size, stray;
static MPI_Comm node_comm;

/* ---- the node engine, emulated: a COPY plan's pairs over MPI ---------- */

static void *host_copy(const void *dev, size_t len)
{
    void *p = malloc(len > 0 ? len : 1);
    if (len > 0 && cudaSuccess != cudaMemcpy(p, dev, len, cudaMemcpyDefault)) {
        ++stray;
    }
    return p;
}

gpu_status_t gpu_engine_xchg(gpu_engine_comm_t *c, const char *what, const gpu_xchg_plan_t *plan,
                             gpu_op_t op, gpu_dtype_t dt, gpu_engine_req_t *req)
{
    int n, me, k = 0;
    MPI_Request *r;
    void **tmp;

    MPI_Comm_size(node_comm, &n);
    MPI_Comm_rank(node_comm, &me);
    if ((void *) c != (void *) &node_comm || NULL != req || plan->relay) {
        fprintf(stderr, "rank %d: %s: a node step this emulation does not run\n", rank, what);
        ++stray;
        return GPU_ERR_INVALID;
    }
    r = calloc(2 * (size_t) n, sizeof(*r));
    tmp = calloc(2 * (size_t) n, sizeof(*tmp));
    for (int q = 0; q < n; ++q) {
        if (NULL != plan->send_src2[q] || NULL != plan->recv_dst2[q]) {
            ++stray;
        }
        /* REDUCE: red_len bytes from every source in [red_lo, red_hi] */
        const size_t rl = GPU_XCHG_COPY == plan->mode ? plan->recv_len[q]
                          : q != me && q >= plan->red_lo && q <= plan->red_hi ? plan->red_len : 0;
        if (rl > 0) {
            tmp[q] = malloc(rl);
            MPI_Irecv(tmp[q], (int) rl, MPI_BYTE, q, 77, node_comm, &r[k++]);
        }
        if (plan->send_len[q] > 0) {
            tmp[n + q] = host_copy(plan->send_src[q], plan->send_len[q]);
            MPI_Isend(tmp[n + q], (int) plan->send_len[q], MPI_BYTE, q, 77, node_comm, &r[k++]);
        }
    }
    if (plan->self_len > 0) {
        void *t = host_copy(plan->self_src, plan->self_len);
        stray += cudaSuccess != cudaMemcpy(plan->self_dst, t, plan->self_len, cudaMemcpyDefault);
        free(t);
    }
    MPI_Waitall(k, r, MPI_STATUSES_IGNORE);
    if (GPU_XCHG_REDUCE == plan->mode && plan->red_lo <= plan->red_hi && plan->red_len > 0) {
        /* fold the sources in rank order, mine from red_self */
        char *acc = NULL;
        for (int q = plan->red_lo; q <= plan->red_hi; ++q) {
            void *x = q == me ? host_copy(plan->red_self, plan->red_len) : tmp[q];
            if (NULL == acc) {
                acc = malloc(plan->red_len);
                memcpy(acc, x, plan->red_len);
            } else if (!gpu_reduce_host(acc, x, plan->red_len / gpu_dtype_size(dt), op, dt)) {
                ++stray;
            }
            if (q == me) {
                free(x);
            }
        }
        stray += cudaSuccess != cudaMemcpy(plan->red_out, acc, plan->red_len, cudaMemcpyDefault);
        free(acc);
    }
    for (int q = 0; q < n; ++q) {
        if (GPU_XCHG_COPY == plan->mode && plan->recv_len[q] > 0) {
            stray += cudaSuccess != cudaMemcpy(plan->recv_dst[q], tmp[q], plan->recv_len[q],
                                               cudaMemcpyDefault);
        }
        free(tmp[q]);
        free(tmp[n + q]);
    }
    /* a copy from pageable memory may land later on the legacy stream,
     * which the hierarchy's streams do not wait for (as on a GPU) */
    stray += cudaSuccess != cudaDeviceSynchronize();
    free(tmp);
    free(r);
    return GPU_OK;
}

/* the fold kernel (scan's carry), through host copies and the host functors */
gpu_status_t gpu_kernel_reduce_local(void *acc, const void *x, size_t count, gpu_op_t op,
                                     gpu_dtype_t dt, void *stream)
{
    const size_t len = count * gpu_dtype_size(dt);
    void *a = host_copy(acc, len), *b = host_copy(x, len);
    (void) stream;
    stray += !gpu_reduce_host(a, b, count, op, dt);
    stray += len > 0 && cudaSuccess != cudaMemcpy(acc, a, len, cudaMemcpyDefault);
    stray += cudaSuccess != cudaDeviceSynchronize();
    free(a);
    free(b);
    return GPU_OK;
}

/* the device fold (coll_gpu_net_device_fold) is not asked for here */
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

/* ---- device buffers of the stand-in, seen through copies ---------------- */

#define GUARD 64
#define POISON 0x5a

/* byte i of rank r's block (seed: the call) */
static unsigned char val(int r, size_t i, unsigned seed)
{
    return (unsigned char) (i * 7 + (size_t) r * 31 + seed * 13 + 1);
}

/* a device buffer of len bytes plus a guard, all poisoned */
static char *dbuf(size_t len)
{
    char *d = NULL;
    if (cudaSuccess != cudaMalloc((void **) &d, len + GUARD) ||
        cudaSuccess != cudaMemset(d, POISON, len + GUARD) ||
        cudaSuccess != cudaDeviceSynchronize()) {
        ++stray;
    }
    return d;
}

static void dput(char *d, const unsigned char *h, size_t len)
{
    stray += len > 0 && cudaSuccess != cudaMemcpy(d, h, len, cudaMemcpyDefault);
    stray += cudaSuccess != cudaDeviceSynchronize();
}

static unsigned char *dget(const char *d, size_t len)
{
    return host_copy(d, len + GUARD);
}

/* The hierarchy over nnodes virtual nodes (interleaved: rank r on node
 * r mod nnodes; else rank order, as coll_gpu_virtual_nodes splits), nchan
 * UCX channels, pipeline slots of slot bytes; node_comm is this rank's
 * node.  NULL where a step failed (a CHECK says which). */
static gpu_hier_t *emul_hier_create(int nnodes, int nchan, size_t slot, int interleaved,
                                    gpu_net_t **nets, int **node_of)
{
    gpu_hier_params_t hp;
    gpu_hier_t *h = NULL;
    gpu_status_t st = GPU_OK;

    *node_of = malloc(sizeof(int) * (size_t) size);
    for (int r = 0; r < size; ++r) {
        (*node_of)[r] = interleaved ? r % nnodes : (int) ((long) r * nnodes / size);
    }
    MPI_Comm_split(MPI_COMM_WORLD, (*node_of)[rank], rank, &node_comm);
    for (int i = 0; i < nchan && i < GPU_UCX_MAX_CHANNELS && GPU_OK == st; ++i) {
        gpu_ucx_params_t p = { .timeout_s = 30.0, .direct = 0, .comm_id = 21, .host_id = 1,
                               .channel = i };
        st = gpu_ucx_create(&boot, NULL, rank, size, &p, &nets[i]);
        CHECK(GPU_OK == st, "UCX endpoints of channel %d: %s", i, gpu_status_string(st));
    }
    memset(&hp, 0, sizeof(hp));
    hp.slot_bytes = slot;
    hp.nslots = 4;
    hp.timeout_s = 30.0;
    hp.alpha_s = 10e-6;
    hp.beta_Bps = 12.5e9;
    hp.channels = nchan;
    const gpu_hier_layout_t layout = { .nranks = size, .rank = rank, .node_of = *node_of };
    if (GPU_OK == st) {
        st = gpu_hier_create((gpu_engine_comm_t *) (void *) &node_comm, &gpu_ucx_net_ops, nets, 0,
                             &layout, &hp, &h);
        CHECK(GPU_OK == st, "hierarchy: %s", gpu_status_string(st));
    }
    return GPU_OK == st ? h : NULL;
}

/* everything emul_hier_create made; the pass and failure counts summed at
 * rank 0, which prints them; returns the process's exit status */
static int emul_finish(gpu_hier_t *h, gpu_net_t **nets, int nchan, int *node_of)
{
    int counts[2], sums[2];
    CHECK(0 == stray, "%d node steps the emulation does not run, stray folds or failed copies",
          stray);
    gpu_hier_destroy(h);
    for (int i = 0; i < nchan && i < GPU_UCX_MAX_CHANNELS; ++i) {
        gpu_ucx_destroy(nets[i]);
    }
    MPI_Comm_free(&node_comm);
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

#endif /* GPUCOLL_TEST_HIER_EMUL_H */
