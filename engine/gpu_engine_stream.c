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
    if (NULL != c->sb_stage) {
        (void) cudaFree(c->sb_stage);
        c->sb_stage = NULL;
    }
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

/* The conditions every rank answers alike (the device too: a rank on the
 * wrong device would have no peer mappings). */
static int gpu_stream_serves(const gpu_engine_comm_t *c)
{
    int dev = -1;
    return NULL != c && !c->broken && 0 != c->st_bytes && NULL != c->st_err_host &&
           c->nranks >= 2 && !(gpu_engine_gpu_shared(c) && !c->mps_all) &&
           cudaSuccess == cudaGetDevice(&dev) && dev == c->device;
}

/* An earlier launch timed out: say so once; the peers' launches of that
 * call timed out or will. */
static gpu_status_t gpu_stream_pending(gpu_engine_comm_t *c, int *peer)
{
    if (0 == *(volatile int *) &c->st_err_host->raised) {
        return GPU_OK;
    }
    *peer = c->st_err_host->peer;
    GPU_LOG(1, "rank %d: a stream-ordered collective timed out waiting for rank %d", c->rank,
            *peer);
    memset(c->st_err_host, 0, sizeof(*c->st_err_host));
    return GPU_ERR_TIMEOUT;
}

static void gpu_stream_bulk_init(const gpu_engine_comm_t *c, gpu_stream_bulk_args_t *a)
{
    memset(a, 0, sizeof(*a));
    memcpy(a->peer_base, c->peer_base, sizeof(a->peer_base));
    a->region_off = c->sb_off;
    a->slot_bytes = c->sb_slot;
    a->nranks = c->nranks;
    a->rank = c->rank;
    a->timeout_ns = (unsigned long long) (c->p.timeout_s * 1e9);
    a->err = c->st_err_dev;
}

/* Pageable arguments go through a device area: in pieces, in, then out.
 * Made at the first such call, which cannot be in a graph capture (CUDA
 * does not capture pageable copies). */
static gpu_status_t gpu_stream_bulk_stage(gpu_engine_comm_t *c)
{
    gpu_status_t st = GPU_OK;
    if (NULL == c->sb_stage) {
        GPU_CUDA_CHECK(cudaMalloc((void **) &c->sb_stage, 2 * (size_t) c->nranks * c->sb_slot),
                       out);
    }
out:
    return st;
}

/* Above the small kernel's size: launches of a slot each.  A wide element
 * (32 bytes: long double int) is folded whole, as a 16-aligned structure:
 * buffers that are not go through the stage as host buffers do. */
static gpu_status_t gpu_stream_bulk_allreduce(gpu_engine_comm_t *c, const void *in, void *out,
                                              size_t bytes, gpu_op_t op, gpu_dtype_t dt,
                                              cudaStream_t s)
{
    const char *din = gpu_stream_device_view(in);
    char *dout = in == out ? (char *) din : gpu_stream_device_view(out);
    const int odd = gpu_dtype_size(dt) > 16 && 0 != (((uintptr_t) din | (uintptr_t) dout) & 15);
    const int staged = NULL == din || NULL == dout || odd;
    gpu_stream_bulk_args_t a;
    gpu_status_t st = staged ? gpu_stream_bulk_stage(c) : GPU_OK;

    gpu_stream_bulk_init(c, &a);
    for (size_t off = 0; GPU_OK == st && off < bytes; off += a.bytes) {
        a.bytes = bytes - off < c->sb_slot ? bytes - off : c->sb_slot;
        a.in = staged ? c->sb_stage : din + off;
        a.out = staged ? c->sb_stage : dout + off;
        if (staged) {
            GPU_CUDA_CHECK(cudaMemcpyAsync(c->sb_stage, (const char *) in + off, a.bytes,
                                           cudaMemcpyDefault, s), out);
        }
        st = gpu_kernel_stream_bulk(GPU_STREAM_BULK_ALLREDUCE, op, dt, &a, s);
        if (GPU_OK == st && staged) {
            GPU_CUDA_CHECK(cudaMemcpyAsync((char *) out + off, c->sb_stage, a.bytes,
                                           cudaMemcpyDefault, s), out);
        }
    }
out:
    return st;
}

gpu_status_t gpu_engine_stream_allreduce(gpu_engine_comm_t *c, const void *in, void *out,
                                         size_t count, gpu_op_t op, gpu_dtype_t dt, void *stream,
                                         int *peer)
{
    const size_t esize = gpu_dtype_size(dt), bytes = count * esize;
    cudaStream_t s = (cudaStream_t) stream;
    gpu_stream_args_t a;
    void *din, *dout;
    int staged, small;
    gpu_status_t st = GPU_OK;

    /* every condition is the same on every rank.  Pairs wider than the
     * kernels' 16-byte pieces (long double int) take the bulk form, whose
     * blocks' ranges are cut at 32 bytes (gpu_stream.cu, bulk_begin) and
     * whose launches take whole slots (multiples of GPU_STREAM_BULK_PIECE) */
    const int wide = esize > 16 && gpu_op_dtype_valid(op, dt) &&
                     GPU_DTCLASS_PAIR == gpu_dtype_class(dt) && 0 == 32 % esize;
    if (!gpu_stream_serves(c) || !(wide || gpu_kernel_supported(op, dt))) {
        return GPU_ERR_UNSUPPORTED;
    }
    small = !wide && gpu_stream_dtype_fits(esize) && bytes <= c->p.stream_max_bytes;
    if (!small && 0 == c->sb_slot) {
        return GPU_ERR_UNSUPPORTED;
    }
    st = gpu_stream_pending(c, peer);
    if (GPU_OK != st || 0 == bytes) {
        return st;
    }
    if (!small) {
        return gpu_stream_bulk_allreduce(c, in, out, bytes, op, dt, s);
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

gpu_status_t gpu_engine_stream_alltoall(gpu_engine_comm_t *c, const void *in, void *out,
                                        size_t bytes, void *stream, int *peer)
{
    const cudaStream_t s = (cudaStream_t) stream;
    const size_t n = NULL != c ? (size_t) c->nranks : 0;
    gpu_stream_bulk_args_t a;
    const char *din;
    char *dout;
    int staged;
    gpu_status_t st;

    if (!gpu_stream_serves(c) || 0 == c->sb_slot || in == out) {
        return GPU_ERR_UNSUPPORTED;
    }
    st = gpu_stream_pending(c, peer);
    if (GPU_OK != st || 0 == bytes) {
        return st;
    }
    din = gpu_stream_device_view(in);
    dout = gpu_stream_device_view(out);
    staged = NULL == din || NULL == dout;
    if (staged && GPU_OK != (st = gpu_stream_bulk_stage(c))) {
        return st;
    }
    gpu_stream_bulk_init(c, &a);
    for (size_t off = 0; GPU_OK == st && off < bytes; off += a.bytes) {
        /* piece off of every peer's block, contiguous in the stage */
        a.bytes = bytes - off < c->sb_slot ? bytes - off : c->sb_slot;
        a.stride = staged ? a.bytes : bytes;
        a.in = staged ? c->sb_stage : din + off;
        a.out = staged ? c->sb_stage + n * c->sb_slot : dout + off;
        if (staged) {
            GPU_CUDA_CHECK(cudaMemcpy2DAsync(c->sb_stage, a.bytes, (const char *) in + off, bytes,
                                             a.bytes, n, cudaMemcpyDefault, s), out);
        }
        st = gpu_kernel_stream_bulk(GPU_STREAM_BULK_ALLTOALL, GPU_OP_SUM, GPU_DT_U8, &a, s);
        if (GPU_OK == st && staged) {
            GPU_CUDA_CHECK(cudaMemcpy2DAsync((char *) out + off, bytes,
                                             c->sb_stage + n * c->sb_slot, a.bytes, a.bytes, n,
                                             cudaMemcpyDefault, s), out);
        }
    }
out:
    return st;
}
