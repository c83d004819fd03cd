/*
 * The stream-ordered allreduce (kernels/gpu_stream.h says how the kernel
 * works): MPIX_Allreduce_enqueue on a CUDA stream as one launch on the
 * application's stream.  Only communicators made by MPIX_Stream_comm_create
 * have the region (engine parameter stream_max_bytes), and only where the
 * ranks' kernels run side by side (a GPU per rank, or MPS): a kernel that
 * waits for a peer on a time-sliced GPU would hold it for its slice.
 */
#include <string.h>

#include <cuda_runtime_api.h>

#include "engine/gpu_engine_internal.h"
#include "kernels/gpu_stream.h"

gpu_status_t gpu_engine_stream_setup(gpu_engine_comm_t *c)
{
    gpu_status_t st = GPU_OK;

    if (0 == c->st_bytes) {
        return GPU_OK;
    }
    /* here, not at the first call: a call being captured into a graph may
     * not allocate */
    GPU_CUDA_CHECK(cudaHostAlloc((void **) &c->st_err_host, sizeof(*c->st_err_host),
                                 cudaHostAllocMapped), err_out);
    memset(c->st_err_host, 0, sizeof(*c->st_err_host));
    GPU_CUDA_CHECK(cudaHostGetDevicePointer((void **) &c->st_err_dev, c->st_err_host, 0),
                   err_host);
    GPU_CUDA_CHECK(cudaMalloc((void **) &c->st_stage, c->p.stream_max_bytes), err_host);
    GPU_LOG(1, "rank %d: stream-ordered allreduce kernel: up to %zu bytes, %zu bytes of lines",
            c->rank, c->p.stream_max_bytes, c->st_bytes);
    return GPU_OK;

err_host:
    (void) cudaFreeHost(c->st_err_host);
    c->st_err_host = NULL;
err_out:
    return st;
}

void gpu_engine_stream_release(gpu_engine_comm_t *c)
{
    if (NULL != c->st_stage) {
        (void) cudaFree(c->st_stage);
        c->st_stage = NULL;
    }
    if (NULL != c->st_err_host) {
        (void) cudaFreeHost(c->st_err_host);
        c->st_err_host = NULL;
    }
}

/* A pointer the kernel may use for buf, or NULL when buf is pageable host
 * memory (the call then goes through the staging area). */
static void *gpu_stream_device_view(const void *buf)
{
    struct cudaPointerAttributes at;
    if (cudaSuccess != cudaPointerGetAttributes(&at, buf)) {
        (void) cudaGetLastError();
        return NULL;
    }
    switch (at.type) {
    case cudaMemoryTypeDevice:
    case cudaMemoryTypeManaged:
        return (void *) buf;
    case cudaMemoryTypeHost:
        return at.devicePointer;
    default:
        return NULL;
    }
}

gpu_status_t gpu_engine_stream_allreduce(gpu_engine_comm_t *c, const void *in, void *out,
                                         size_t count, gpu_op_t op, gpu_dtype_t dt, void *stream,
                                         int *peer)
{
    const size_t esize = gpu_dtype_size(dt), bytes = count * esize;
    cudaStream_t s = (cudaStream_t) stream;
    gpu_stream_args_t a;
    void *din, *dout;
    int dev = -1, staged;
    gpu_status_t st = GPU_OK;

    /* every condition but the current device is the same on every rank */
    if (NULL == c || c->broken || 0 == c->st_bytes || NULL == c->st_err_host || c->nranks < 2 ||
        (gpu_engine_gpu_shared(c) && !c->mps_all) || !gpu_stream_dtype_fits(esize) ||
        bytes > c->p.stream_max_bytes || !gpu_kernel_supported(op, dt)) {
        return GPU_ERR_UNSUPPORTED;
    }
    if (cudaSuccess != cudaGetDevice(&dev) || dev != c->device) {
        return GPU_ERR_UNSUPPORTED;
    }
    if (0 != *(volatile int *) &c->st_err_host->raised) {
        /* an earlier launch timed out: say so once; the peers' launches of
         * that call timed out or will */
        *peer = c->st_err_host->peer;
        GPU_LOG(1, "rank %d: a stream-ordered allreduce timed out waiting for rank %d", c->rank,
                *peer);
        memset(c->st_err_host, 0, sizeof(*c->st_err_host));
        return GPU_ERR_TIMEOUT;
    }
    if (0 == bytes) {
        return GPU_OK;
    }
    din = gpu_stream_device_view(in);
    dout = in == out ? din : gpu_stream_device_view(out);
    staged = NULL == din || NULL == dout;
    if (staged) {
        GPU_CUDA_CHECK(cudaMemcpyAsync(c->st_stage, in, bytes, cudaMemcpyDefault, s), out);
        din = dout = c->st_stage;
    }
    memset(&a, 0, sizeof(a));
    a.in = din;
    a.out = dout;
    a.count = count;
    memcpy(a.peer_base, c->peer_base, sizeof(a.peer_base));
    a.region_off = c->st_off;
    a.slot_lines = c->st_lines;
    a.nranks = c->nranks;
    a.rank = c->rank;
    a.timeout_ns = (unsigned long long) (c->p.timeout_s * 1e9);
    a.err = c->st_err_dev;
    st = gpu_kernel_stream_allreduce(op, dt, &a, s);
    if (GPU_OK == st && staged) {
        GPU_CUDA_CHECK(cudaMemcpyAsync(out, c->st_stage, bytes, cudaMemcpyDefault, s), out);
    }
out:
    return st;
}
