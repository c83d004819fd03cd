/*
 * The put kernel: large exchange collectives written straight into the
 * receivers' buffers, one copy instead of two.
 *
 * The exchange kernel (gpu_kernels.h) hands every chunk through a slot of
 * the receiver's scratch: the sender writes it over NVLink, the receiver
 * copies it out, and the two ends meet per chunk.  For large calls that
 * second copy and the hand-overs cost more than they save (4x H100, a 2x2
 * periodic halo of 16 MiB per neighbour: 407 us against NCCL's 304).
 * Here the host has mapped each receiver's buffer (its IPC handle,
 * exchanged for the call: engine/gpu_engine_put.c), so the sender's blocks
 * write the bytes where they end, with no flow control at all: a receiver
 * entered the call before its address was known, and its buffer stays
 * untouched by anyone else until it returns.  Or the other way round
 * (coll_gpu_put_read): each receiver reads from the senders' buffers; the
 * kernel only sees segments, source and destination, either way.
 * Reductions (reduce, reduce_scatter, scan) always read: a rank folds its
 * sources in rank order where they are, its own input among them, into
 * its output, so no partial result ever crosses a link.
 *
 * A bcast among more than two ranks is spread: the message is cut into a
 * piece per rank but the root; each rank reads its piece from the root,
 * raises a "landed" flag per block in its peers, and reads every other
 * piece from the rank that owns it once that rank's same block has landed
 * it.  The root's link carries the message once, as a pipelined ring
 * would, in two hops instead of n - 1; a block waits only after its own
 * piece is out, and only for the same block of a peer.  By default
 * (push) the same two hops are writes: the root's block b writes share b
 * of each piece into its owner and raises the owner's "landed" flag, and
 * the owner's block b, once landed, writes it on into every other rank.
 * A store goes out without waiting for an answer where a load waits for
 * its data: on 4x H100 the writes took 101 us for 16 MiB against 136 for
 * the reads (coll_gpu_put_read 1), 1056 against 1343 for 256 MiB
 * (docs/results/h100x4_2026-11-27_s7).
 *
 * Completion: every block, once its stores are out, raises its flag
 * (source, block) in every peer to the call's number.  The last block of a
 * rank to finish sending (a ticket in the rank's own memory) waits for
 * every peer's every flag, bounded like every wait of the kernels; no
 * other block waits there (a spread bcast's blocks wait above only after
 * their own piece is out), so blocks that are not resident yet never sit
 * behind waiting ones.  Every rank launches the same grid (the flags
 * count blocks), with or without bytes for a peer.
 */
#ifndef GPU_PUT_H
#define GPU_PUT_H

#include <stddef.h>

#include "gpu_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* In every rank's small area: [source][block] done flags, [source][block]
 * landed flags (a spread bcast), then its ticket */
#define GPU_PUT_FLAG_SET ((size_t) GPU_MAX_PEERS * GPU_MAX_BLOCKS * 8)
#define GPU_PUT_FLAGS_BYTES (2 * GPU_PUT_FLAG_SET + 64)
#define GPU_PUT_SEGS (2 * GPU_MAX_PEERS + 1)

typedef struct {
    const char *src;            /* this rank's bytes */
    char *dst;                  /* where they land, as mapped here */
    size_t len;
} gpu_put_seg_t;

typedef struct {
    int nranks;
    int rank;
    int nsegs;                  /* every peer's pieces and the local copy */
    gpu_put_seg_t seg[GPU_PUT_SEGS];
    int nsrc;                   /* reductions: out = src[0] op ... op src[nsrc - 1] */
    const char *src[GPU_MAX_PEERS];
    char *out;
    size_t len;
    /* a bcast spread over the ranks (root >= 0): from[q] is rank q's
     * buffer as mapped here (from[rank] = this rank's), len its bytes */
    int root;
    int push;                   /* spread by writes (root into each piece's owner, owners into
                                 * the others), not by reads */
    const char *from[GPU_MAX_PEERS];
    char *flags[GPU_MAX_PEERS]; /* each rank's put flags as mapped here */
    unsigned long long call;    /* this call's number, from 1, the same on every rank */
    unsigned long long tickets; /* this rank's blocks of every call so far, this one's
                                 * included: the last block's ticket (calls may differ in
                                 * grid, a reduction's fold from a copy's) */
    unsigned long long timeout_ns;
    gpu_kernel_error_t *err;
} gpu_put_args_t;

/* Launch it with nblocks (<= GPU_MAX_BLOCKS, every rank the same) of
 * nthreads on stream. */
gpu_status_t gpu_kernel_put(const gpu_put_args_t *args, int nblocks, int nthreads, void *stream);
/* The same for a bcast spread over the ranks (args->root). */
gpu_status_t gpu_kernel_put_spread(const gpu_put_args_t *args, int nblocks, int nthreads,
                                   void *stream);
/* The same for a reduction of (op, dt): GPU_ERR_UNSUPPORTED where the
 * kernels do not know the pair. */
gpu_status_t gpu_kernel_put_fold(gpu_op_t op, gpu_dtype_t dt, const gpu_put_args_t *args,
                                 int nblocks, int nthreads, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GPU_PUT_H */
