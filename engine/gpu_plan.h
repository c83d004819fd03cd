/*
 * Plans: each collective as this rank's side of the exchange kernel's
 * pairwise transfers (gpu_xchg_plan_t, see kernels/gpu_kernels.h).  Pure
 * arithmetic on byte counts and addresses, no CUDA and no MPI, so the CPU
 * tests check every plan against a host reference by emulating it.
 *
 * Lengths and displacements are bytes.  A NULL send buffer means
 * MPI_IN_PLACE with the MPI meaning for that collective.  The chain flag
 * makes bcast a pipelined relay root -> root+1 -> ... instead of the root
 * writing to every peer (better when one link would carry n-1 copies).
 */
#ifndef GPU_PLAN_H
#define GPU_PLAN_H

#include <stddef.h>

#include "kernels/gpu_kernels.h"
#include "topo/gpu_topo_choice.h"
#include "util/gpu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The two-shot allreduce's cut of a message: shard bytes per rank and
 * chunk, and the blocks that take chunks in turn (cap: a block's scratch
 * per rank).  One chunk per block where the shard is small, but no shard
 * under 16 KiB (each costs a block two cross-GPU barriers: 2 MiB on 2x
 * H200 took 28.4 us in 128 blocks of 8 KiB, 27.0 in 64 of 16 KiB).  From
 * 128 KiB shards on at least two chunks per block, because a block's
 * single chunk puts every block's reduce-scatter, barrier and all-gather
 * in lockstep and NVLink idles at each barrier (64 MiB: 297 GB/s with one
 * chunk, 308 with two; docs/results/README.md).
 */
#define GPU_PLAN_TS_MIN_SHARD ((size_t) 16 * 1024)
#define GPU_PLAN_TS_SPLIT ((size_t) 128 * 1024)
void gpu_plan_twoshot_cut(size_t bytes, int n, int nblocks, size_t cap, size_t *shard,
                          int *blocks);

/* Allreduce as a REDUCE plan: all of in to every peer, fold every rank. */
gpu_status_t gpu_plan_allreduce(gpu_xchg_plan_t *p, int rank, int n, const char *in, char *out,
                                size_t bytes);
/* order: the chain's rank order (the topology ring), NULL for rank order */
gpu_status_t gpu_plan_bcast(gpu_xchg_plan_t *p, int rank, int n, int root, char *buf,
                            size_t bytes, int chain, const int *order);
gpu_status_t gpu_plan_reduce(gpu_xchg_plan_t *p, int rank, int n, int root, const char *sbuf,
                             char *rbuf, size_t bytes);
/* Reduce along a chain that ends at the root (order: the topology's ring,
 * NULL for rank order; n > 2): each rank folds what the ranks before it
 * folded with its own input and passes it on (relay, REDUCE: the kernel's
 * chain_reduce_round); red_lo is the rank before, the root's red_out its
 * buffer.  Each link carries the message once. */
gpu_status_t gpu_plan_reduce_chain(gpu_xchg_plan_t *p, int rank, int n, int root,
                                   const char *sbuf, char *rbuf, size_t bytes, const int *order);
/* Which way a reduce goes: gpu_topo_reduce_way (topo/gpu_topo_choice.h). */
/* The two-shot way's name in traces and timing files (the others are
 * named by their plans: "chain", "put", "exchange-reduce", ...). */
#define GPU_PLAN_REDUCE_TS_NAME "two-shot to root"
gpu_status_t gpu_plan_allgatherv(gpu_xchg_plan_t *p, int rank, int n, const char *sbuf,
                                 char *rbuf, const size_t *rlen, const size_t *rdispl);
gpu_status_t gpu_plan_alltoallv(gpu_xchg_plan_t *p, int rank, int n, const char *sbuf,
                                const size_t *slen, const size_t *sdispl, char *rbuf,
                                const size_t *rlen, const size_t *rdispl);
/* Second pieces behind an alltoallv plan's pairs (gpu_xchg_two): bytes
 * [sdispl, + slen) to peer q after what the plan sends it, likewise
 * received.  A second piece needs a first (invalid otherwise), and the
 * local copy has none. */
gpu_status_t gpu_plan_second(gpu_xchg_plan_t *p, int rank, int n, const char *sbuf,
                             const size_t *slen, const size_t *sdispl, char *rbuf,
                             const size_t *rlen, const size_t *rdispl);
gpu_status_t gpu_plan_gatherv(gpu_xchg_plan_t *p, int rank, int n, int root, const char *sbuf,
                              size_t slen, char *rbuf, const size_t *rlen, const size_t *rdispl);
gpu_status_t gpu_plan_scatterv(gpu_xchg_plan_t *p, int rank, int n, int root, const char *sbuf,
                               const size_t *slen, const size_t *sdispl, char *rbuf, size_t rlen);
/* Not in place: the caller stages in-place reduce_scatter (uniform rule). */
gpu_status_t gpu_plan_reduce_scatterv(gpu_xchg_plan_t *p, int rank, int n, const char *sbuf,
                                      char *rbuf, const size_t *len, const size_t *displ);
gpu_status_t gpu_plan_scan(gpu_xchg_plan_t *p, int rank, int n, const char *sbuf, char *rbuf,
                           size_t bytes, int exclusive);

/*
 * Reductions of elements wider than 16 bytes (MPI_LONG_DOUBLE_INT: 32).
 * Every reducing kernel (one-shot, two-shot, exchange, resident, put,
 * host-paced rounds, stream) cuts a message at 16-byte multiples and
 * folds each piece where it lands, so a 32-byte element could be cut in
 * two and folded as two halves.  Rather than teach all of those cuts a
 * wider granule for one rare type, the contributions move as bytes (a COPY
 * plan, which may cut anywhere) into an area of the engine, source s at
 * area + s * stride, and one local fold of the sources in rank order
 * writes the result (gpu_engine_wide): the same functors, in the same
 * order, as the host reference.  Each rank receives every input it folds:
 * n times the bytes of the kernels' reduce, fine for a type that is rare
 * and never large in practice.
 */
typedef enum {
    GPU_WIDE_NONE = 0,
    GPU_WIDE_ALLREDUCE,         /* everyone's input to everyone: fold all */
    GPU_WIDE_REDUCE,            /* everyone's input to the root: fold all there */
    GPU_WIDE_REDUCE_SCATTER,    /* block q of every input to q: fold all */
    GPU_WIDE_SCAN,              /* input of r to every q >= r: fold 0..q */
    GPU_WIDE_EXSCAN             /* input of r to every q > r: fold 0..q-1 */
} gpu_wide_coll_t;

typedef struct {
    int coll;                   /* gpu_wide_coll_t */
    int rank, n, root;
    const char *in;             /* this rank's input (its output buffer where in place) */
    char *out;
    size_t len[GPU_MAX_PEERS];  /* bytes: reduce_scatter each rank's block, else len[0] */
    gpu_op_t op;
    gpu_dtype_t dt;
} gpu_wide_t;

/* The fold after the movement: sources [lo, hi) of len bytes each, source
 * s at area + s * stride, to out (hi <= lo: nothing to fold here). */
typedef struct {
    int lo, hi;
    size_t stride, len;
    const char *area;
    char *out;
} gpu_wide_fold_t;

/* Bytes of the area this rank needs (0: none). */
size_t gpu_wide_area_bytes(const gpu_wide_t *w);
/* The movement into area (a COPY plan) and the fold that follows. */
gpu_status_t gpu_plan_wide(const gpu_wide_t *w, char *area, gpu_xchg_plan_t *p,
                           gpu_wide_fold_t *f);

/* The lengths this rank's side of a plan moves (each pair, the folded
 * range, the local copy), zeros left out; lens holds 2 n + 2.  Returns how
 * many; 0 means the rank has nothing to do. */
int gpu_plan_work(const gpu_xchg_plan_t *p, int rank, int n, size_t *lens);
/* The largest of them: the size a user would name for this rank. */
size_t gpu_plan_max_len(const gpu_xchg_plan_t *p, int rank, int n);

/* What a persistent-engine command carries besides the plan. */
typedef struct {
    int cmd;                /* GPU_LL_CMD_* */
    gpu_op_t op;
    gpu_dtype_t dt;
    unsigned gen;           /* kernel generation it is for */
    unsigned long long seq; /* collective call, same on every rank */
    int busy;               /* leading blocks with work on this rank */
    int sys_fence;          /* an output may be read by the CPU in place */
    int leave;              /* the kernel leaves soon after it (idle_short_ns) */
    const unsigned long long *wait_seq;  /* per peer, or NULL */
    const int *wait_blocks;              /* per peer, or NULL */
} gpu_ll_cmd_info_t;

/* The persistent engine's descriptor of a plan (words of kernels/gpu_ll.h);
 * returns how many words. */
int gpu_plan_ll_encode(const gpu_xchg_plan_t *p, int nranks, const gpu_ll_cmd_info_t *info,
                       uint32_t *w);

/*
 * Slot flow control of the persistent engine, kept by the host per
 * communicator: before this rank rewrites its (peer, parity) slot, the
 * reader blocks of the slot's previous call must have acked.  The wait is
 * dropped when the call just before this one proves it: if each of those
 * reader blocks sent us lines in that call (which it does only after
 * finishing its earlier reads) and the pieces are cut the same way (so
 * our block b writes what their block b read), our block b has already
 * waited for exactly that.  Sequences may skip (calls another path ran,
 * gpu_engine_kind_call), so "that call" must come after the slot's write.
 */
typedef struct {
    unsigned long long last_seq[GPU_MAX_PEERS][2];  /* last call that wrote the slot */
    int last_blocks[GPU_MAX_PEERS][2];              /* its reader blocks */
    size_t last_piece[GPU_MAX_PEERS][2];            /* its piece size */
    int prev_recv[GPU_MAX_PEERS];   /* blocks that read from each peer in the last call */
    unsigned long long prev_seq;    /* that call (0: none proves anything) */
    /* what the last call replaced, for gpu_plan_ll_slots_drop */
    unsigned long long undo_seq[GPU_MAX_PEERS];
    int undo_blocks[GPU_MAX_PEERS];
    size_t undo_piece[GPU_MAX_PEERS];
    int undo_par;
} gpu_ll_slots_t;

/* Call seq (every call, also those this rank has nothing in): fills the
 * acks to wait for per peer (wait_seq, wait_blocks; 0 blocks: none) and
 * records the call. */
void gpu_plan_ll_slots(gpu_ll_slots_t *s, const gpu_xchg_plan_t *p, int rank, int n,
                       int nblocks, size_t min_piece, unsigned long long seq,
                       unsigned long long *wait_seq, int *wait_blocks);
/* The last call was dropped (a peer took the host path): its readers may
 * never read what it wrote, so the slots' previous calls are waited for
 * again, and it proves nothing about the next call. */
void gpu_plan_ll_slots_drop(gpu_ll_slots_t *s, const gpu_xchg_plan_t *p, int rank, int n);
/* Leading blocks of nblocks with a piece of this rank's side of the plan. */
int gpu_plan_ll_busy_blocks(const gpu_xchg_plan_t *p, int rank, int nranks, int nblocks,
                            size_t min_piece);

/*
 * Host-paced rounds (engine/gpu_engine_hs.c runs them where ranks share a
 * GPU, so that no device code waits for a peer).  In round k every rank
 * stages bytes [k c, k c + c) of each pair it sends into its own region
 * for that receiver (REDUCE: its own contribution into its own region too),
 * the ranks meet on the host, then each pulls its pairs' round-k bytes from
 * the senders' regions: COPY lands them, REDUCE folds the sources in rank
 * order.  Both ends of a pair cut it at the same offsets, so a plan whose
 * output overwrites its input (in place) is safe: round k's bytes are
 * staged before round k lands.  Relay (chain) plans need one round per hop
 * and are refused.  Pure schedule; the copies and folds are the caller's.
 */
typedef struct {
    gpu_status_t (*copy)(void *ctx, void *dst, const void *src, size_t len);
    gpu_status_t (*fold)(void *ctx, void *acc, const void *x, size_t len);   /* acc op= x */
} gpu_paced_ops_t;

/* Bytes per pair and round for a region of region bytes per receiver (a
 * whole number of elements, same on every rank). */
size_t gpu_paced_chunk(size_t region, size_t esize);
/* Round round's staging into mine (region of receiver q at mine + q chunk);
 * *more: this rank has bytes after this round. */
gpu_status_t gpu_paced_stage(const gpu_xchg_plan_t *p, int rank, int n, int round, size_t chunk,
                             char *mine, const gpu_paced_ops_t *ops, void *ctx, int *more);
/* Round round's pulls: half[s] is rank s's staging area of this round. */
gpu_status_t gpu_paced_pull(const gpu_xchg_plan_t *p, int rank, int n, int round, size_t chunk,
                            char *const *half, const gpu_paced_ops_t *ops, void *ctx);

#ifdef __cplusplus
}
#endif

#endif /* GPU_PLAN_H */
