/*
 * The stream-ordered small allreduce: MPIX_Allreduce_enqueue on a CUDA
 * stream (libgpucoll) as one kernel on the application's stream.
 *
 * Why: the host-function path (pinned copies, a host function that runs
 * the collective, copies back) costs a host round trip per call, 70 us
 * of a graph replay step under MPS on one H100.  A kernel on the user's
 * stream orders with the stream's other work by itself, is captured into a
 * CUDA graph like any kernel, and replays with no host involvement.
 *
 * How: every rank's peer-visible scratch holds a stream region, [control]
 * then [parity 2][source rank][line].  Each thread takes lines of 8 payload
 * bytes, stores each line with the call's flag into every peer's slot of
 * this rank (one 16-byte store: 4 data bytes + flag, twice, as the
 * resident kernel's LL lines, gpu_ll.h), then waits for the same line of
 * every source and folds them in rank order, so every rank computes the
 * same bits.  The call number lives in device memory (the control word,
 * advanced by the last block of each launch): a replayed graph counts
 * its calls itself, and the flag of a stale line never matches.
 *
 * Two parities suffice without acks: a rank reaches call N + 2 (which
 * rewrites the parity of call N in its peers' regions) only after its call
 * N + 1 has received every peer's lines, and a peer sends those only from
 * its own call N + 1 kernel, which its stream starts after its call N
 * kernel (the reader of that parity) has finished.  One communicator is
 * bound to one stream (MPICH's MPIX_Stream_comm_create), so this holds.
 *
 * Every wait is bounded by timeout_ns; a timed-out launch records the peer
 * in host-mapped memory and returns (the host reports it at the next
 * enqueue), so a missing peer never holds the stream forever.
 */
#ifndef GPU_STREAM_H
#define GPU_STREAM_H

#include <stddef.h>

#include "gpu_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPU_STREAM_CTL_BYTES ((size_t) 256)   /* call counter, then block arrivals */
#define GPU_STREAM_LINE 16
#define GPU_STREAM_PAYLOAD 8
#define GPU_STREAM_MAX_BLOCKS 8
#define GPU_STREAM_THREADS 256

typedef struct {
    const void *in;             /* this rank's contribution (device-accessible) */
    void *out;
    size_t count;
    char *peer_base[GPU_MAX_PEERS];   /* each rank's scratch as mapped here */
    size_t region_off;          /* of the stream region in every rank's scratch */
    size_t slot_lines;          /* lines per (parity, source) slot */
    int nranks;
    int rank;
    unsigned long long timeout_ns;
    gpu_kernel_error_t *err;    /* host-mapped */
} gpu_stream_args_t;

/* host and device, like the exchange kernel's chunking (gpu_kernels.h) */
/* Bytes of the stream region for messages up to max_bytes (0: none). */
GPU_XCHG_HD size_t gpu_stream_region_bytes(size_t max_bytes, int nranks)
{
    const size_t lines = (max_bytes + GPU_STREAM_PAYLOAD - 1) / GPU_STREAM_PAYLOAD;
    return 0 == max_bytes ? 0
                          : GPU_STREAM_CTL_BYTES + 2 * (size_t) nranks * lines * GPU_STREAM_LINE;
}

/* Offset, within a region, of line idx of source src's slot of a parity. */
GPU_XCHG_HD size_t gpu_stream_line_off(int parity, int src, int nranks, size_t slot_lines,
                                         size_t idx)
{
    return GPU_STREAM_CTL_BYTES +
           (((size_t) parity * (size_t) nranks + (size_t) src) * slot_lines + idx) *
           GPU_STREAM_LINE;
}

/* Elements of dt fit a line's payload a whole number of times. */
GPU_XCHG_HD int gpu_stream_dtype_fits(size_t esize)
{
    return esize > 0 && esize <= GPU_STREAM_PAYLOAD && 0 == GPU_STREAM_PAYLOAD % esize;
}

/* Launch one allreduce on stream (a cudaStream_t). */
gpu_status_t gpu_kernel_stream_allreduce(gpu_op_t op, gpu_dtype_t dt, const gpu_stream_args_t *a,
                                         void *stream);

/*
 * The bulk form: larger allreduces and alltoalls on the stream.  LL lines
 * carry half their bytes as flags, fine for 64 KiB, not for megabytes, so
 * here whole pieces move at full width and one flag per block says they
 * are there.  A second region, [control][parity 2][source rank][slot]:
 * block b of every rank takes the same byte range of the call, pushes it
 * into its slot of every peer's region (NVLink stores), releases its flag
 * [parity][rank][b] at each peer, waits for the same flag of every source
 * in its own region, then folds (allreduce) or copies out (alltoall) from
 * local memory.  The call number and parity work as above (counter in the
 * control area, advanced by the last block): a rank rewrites a parity only
 * after every peer's next call has sent to it, which proves the peer's
 * kernel that read the old contents finished.  Calls above a slot go as
 * several launches, each a call of its own.  Every wait is bounded as in
 * the small kernel and reports into the same host-mapped error.
 */
#define GPU_STREAM_BULK_MAX_BLOCKS 128
#define GPU_STREAM_BULK_THREADS 512
#define GPU_STREAM_BULK_PIECE ((size_t) 32 * 1024)   /* bytes a block takes at least */
#define GPU_STREAM_BULK_FLAGS_OFF ((size_t) 256)
#define GPU_STREAM_BULK_CTL_BYTES \
    (GPU_STREAM_BULK_FLAGS_OFF + 2 * (size_t) GPU_MAX_PEERS * GPU_STREAM_BULK_MAX_BLOCKS * 8)

typedef enum { GPU_STREAM_BULK_ALLREDUCE, GPU_STREAM_BULK_ALLTOALL } gpu_stream_bulk_kind_t;

typedef struct {
    const void *in;             /* device-accessible */
    void *out;
    size_t bytes;               /* this launch's bytes (of each peer's block for alltoall) */
    size_t stride;              /* alltoall: bytes from one peer's block to the next */
    char *peer_base[GPU_MAX_PEERS];
    size_t region_off;          /* of the bulk region in every rank's scratch */
    size_t slot_bytes;          /* per (parity, source): the most one launch moves */
    int nranks;
    int rank;
    unsigned long long timeout_ns;
    gpu_kernel_error_t *err;    /* host-mapped */
} gpu_stream_bulk_args_t;

/* Bytes of the bulk region for slots of slot_bytes (0: none). */
GPU_XCHG_HD size_t gpu_stream_bulk_region_bytes(size_t slot_bytes, int nranks)
{
    return 0 == slot_bytes ? 0 : GPU_STREAM_BULK_CTL_BYTES + 2 * (size_t) nranks * slot_bytes;
}

/* Launch one bulk call (a->bytes <= a->slot_bytes) on stream; op and dt
 * matter for the allreduce only. */
gpu_status_t gpu_kernel_stream_bulk(gpu_stream_bulk_kind_t kind, gpu_op_t op, gpu_dtype_t dt,
                                    const gpu_stream_bulk_args_t *a, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GPU_STREAM_H */
