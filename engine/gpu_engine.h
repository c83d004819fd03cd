/*
 * The engine: per-communicator GPU state and the device-buffer collective
 * algorithms.  It knows nothing of Open MPI; the component hands it a
 * bootstrap ops table (an allgather over the communicator's own host
 * collectives) and asks it to run collectives on device pointers.
 *
 * Layers: component -> engine (plan, algorithm choice, scratch) ->
 * {transport (ipc/), kernels/} -> topo/.
 *
 * Setup happens once per communicator (lazily, at its first device-buffer
 * collective): local info is gathered, a scratch buffer with flags is
 * allocated and mapped by every peer.  The steady-state path allocates
 * nothing and opens nothing: it fills a launch descriptor, launches one
 * kernel on the engine's own stream and waits for it.
 */
#ifndef GPU_ENGINE_H
#define GPU_ENGINE_H

#include <stddef.h>

#include "engine/gpu_plan.h"
#include "kernels/gpu_kernels.h"
#include "kernels/gpu_types.h"
#include "util/gpu_boot.h"
#include "util/gpu_status.h"

#ifdef __cplusplus
extern "C" {
#endif


typedef struct {
    size_t oneshot_max_bytes;   /* largest message for the one-shot */
    size_t twoshot_scratch;     /* bytes of two-shot scratch per rank */
    size_t xchg_scratch;        /* bytes of exchange-kernel slots per rank */
    int nblocks;                /* two-shot blocks (channels) */
    int xchg_nblocks;           /* exchange-kernel blocks (same on every rank) */
    int xchg_split;             /* separate sender and receiver blocks */
    size_t put_min;             /* copy plans whose largest pair has this many bytes are
                                   written into the receivers' buffers (0: never) */
    int put_read;               /* ...read from the senders' buffers instead */
    int put_ce;                 /* ...by the copy engines: -1 a bcast, 1 every copy, 0 never */
    int put_fold_nblocks;       /* blocks of a reduction read and folded from the peers'
                                   buffers (0: reductions take the exchange kernel) */
    int nthreads;
    int oneshot_blocks;
    gpu_algo_t algo;            /* GPU_ALGO_AUTO or forced */
    double timeout_s;
    int order_legacy;           /* wait for prior legacy default-stream work */
    unsigned long long node_key; /* same on ranks the MPI library calls node-local
                                    (MPI_COMM_TYPE_SHARED); folded into the host identity */
    int persist;                /* persistent engine: -1 when one rank per GPU, 0 off, 1 on */
    size_t persist_max_bytes;   /* largest pair it takes */
    size_t persist_reduce_max_bytes; /* largest pair it reduces (<= persist_max_bytes) */
    int persist_blocks;
    size_t persist_piece_bytes; /* smallest piece of a pair a block takes */
    double persist_idle_us;     /* the kernel exits after this long without a call */
    double persist_gap_us;      /* ...or soon after each call, when the application's
                                   time between calls averages more (0: never) */
    double persist_leave_us;    /* how long "soon" is */
    int persist_one_shot;       /* ...or a launch of the call's blocks alone */
    size_t persist_busy_min_bytes; /* pairs from this size take the launched kernels
                                   where any rank is busy (0: never) */
    int paced;                  /* host-paced blocking calls: -1 when ranks share a GPU */
    int threads;                /* MPI_THREAD_MULTIPLE here: if any rank has it, every
                                   call is host-paced (no kernel waits for a peer) */
    size_t paced_scratch;       /* bytes of their two staging areas per rank */
    int scratch_eager;          /* the large areas at setup, not at the first large call */
    int pool;                   /* the large areas from the process's pool, shared by its
                                   communicators (engine/gpu_pool.h), not per communicator */
    size_t pool_comm_bytes;     /* with the pool: the most this communicator's own area
                                   takes per rank (gpu_engine_layout.c cuts it to fit) */
    int direct;                 /* ranks time-slicing one GPU: one process runs each
                                   blocking allreduce for all (gpu_engine_direct.c) */
    size_t stream_max_bytes;    /* largest stream-ordered allreduce (0: none; a
                                   communicator made by MPIX_Stream_comm_create) */
    size_t stream_bulk_bytes;   /* the bulk region beside it (0: none) */
} gpu_engine_params_t;

typedef struct gpu_engine_comm gpu_engine_comm_t;

/*
 * Collective over the communicator.  GPU_ERR_UNSUPPORTED (same answer on
 * every rank) means this layout cannot use the engine: the caller stages.
 */
/*
 * The same, one step at a time: begin starts the first exchange; each call
 * of step runs what the finished exchanges allow and returns GPU_INPROGRESS
 * until the engine is ready (GPU_OK, *comm set) or setup failed (the setup
 * is freed either way).  blocking 1 runs every exchange to its end.
 */
typedef struct gpu_engine_setup gpu_engine_setup_t;
gpu_status_t gpu_engine_setup_begin(const gpu_boot_ops_t *ops, void *ctx, int rank, int nranks,
                                    const gpu_engine_params_t *params, int blocking,
                                    gpu_engine_setup_t **setup);
gpu_status_t gpu_engine_setup_step(gpu_engine_setup_t *setup, gpu_engine_comm_t **comm);
gpu_status_t gpu_engine_comm_create(const gpu_boot_ops_t *ops, void *ctx, int rank, int nranks,
                                    const gpu_engine_params_t *params, gpu_engine_comm_t **comm);
void gpu_engine_comm_destroy(gpu_engine_comm_t *comm);

/* 1 once after the large-message scratch could not be had on some rank
 * (those calls are staged from then on: tell the user once). */
int gpu_engine_big_refused(gpu_engine_comm_t *comm);

/* Device this communicator's state lives on. */
int gpu_engine_device(const gpu_engine_comm_t *comm);
/* Make it current for a call from progress (another device may be), and
 * restore the caller's afterwards. */
void gpu_engine_device_enter(gpu_engine_comm_t *comm);
void gpu_engine_device_leave(gpu_engine_comm_t *comm);

/* Blocking allreduces run by one process for all ranks (they time-slice
 * one GPU without MPS): the component need not stage small ones. */
int gpu_engine_direct(const gpu_engine_comm_t *comm);

/* Blocking calls run as host-paced rounds, no device wait (ranks share a GPU). */
int gpu_engine_paced(const gpu_engine_comm_t *comm);
/* ...because ranks time-slice one GPU without MPS (the default's choice,
 * the same on every rank): there every GPU operation of a rank waits for a
 * context switch, so the fewest operations win (the component stages small
 * allreduces through host copies then). */
int gpu_engine_shared_nomps(const gpu_engine_comm_t *comm);
/* Does this call run as host-paced rounds: a blocking one, of a plan
 * without relays (NULL: an allreduce), with a peer to pace against?  The
 * resident kernel, where it takes the call, comes first. */
int gpu_engine_paced_takes(const gpu_engine_comm_t *comm, const gpu_xchg_plan_t *plan,
                           int blocking);
/* Does this call copy straight between the ranks' buffers (the put path:
 * kernels/gpu_put.h)?  The same answer on every rank; after the resident
 * kernel and the host-paced rounds. */
int gpu_engine_put_takes(const gpu_engine_comm_t *comm, const gpu_xchg_plan_t *plan, int blocking);

/* Chosen algorithm for a message (exposed for tests and verbose output). */
gpu_algo_t gpu_engine_choose(const gpu_engine_comm_t *comm, size_t bytes);
/* Does the call run in the resident kernel: an allreduce of bytes (plan
 * NULL) or an exchange plan, blocking or not. */
int gpu_engine_persistent(const gpu_engine_comm_t *comm, const gpu_xchg_plan_t *plan, size_t bytes,
                          gpu_dtype_t dt, int blocking);

/*
 * Nonblocking use: pass a request; the call returns once the work is
 * queued on the engine's stream, and gpu_engine_req_test() reports
 * GPU_INPROGRESS until it is done.  Work completes in the order started.
 * With req NULL the call returns when the result is in place.
 */
struct gpu_engine_hs_op;
struct gpu_engine_direct_op;
typedef struct {
    void *event;                 /* cudaEvent_t, owned by the engine */
    struct gpu_engine_hs_op *async;   /* host-paced rounds still to run */
    struct gpu_engine_direct_op *direct;   /* rank 0 running it for all, in steps */
    char what[96];
} gpu_engine_req_t;

gpu_status_t gpu_engine_allreduce(gpu_engine_comm_t *comm, const void *in, void *out, size_t count,
                                  gpu_op_t op, gpu_dtype_t dt, gpu_engine_req_t *req);

/*
 * MPI_Reduce by the two-shot kernel (kernels/gpu_kernels.h): the
 * allreduce's reduce-scatter, then every rank's folded shard to the root
 * alone, whose links take in 2(n-1)/n of the message where a fold of every
 * peer's buffer takes n-1 whole ones.  Results bit-identical to the
 * allreduce's.  takes: whether this communicator runs a reduce of bytes
 * so (the same answer on every rank: blocking only, never as host-paced
 * rounds, rank 0 running it for all, or where the resident kernel takes
 * it); the component asks before it builds the call.  in: this rank's
 * input (the root's out in place); out: the root's result, ignored (may be
 * NULL) elsewhere.  GPU_ERR_UNSUPPORTED where takes says no: stage.
 */
int gpu_engine_reduce_ts_takes(const gpu_engine_comm_t *comm, size_t bytes, gpu_op_t op,
                               gpu_dtype_t dt, int blocking);
gpu_status_t gpu_engine_reduce_ts(gpu_engine_comm_t *comm, const void *in, void *out, size_t count,
                                  gpu_op_t op, gpu_dtype_t dt, int root, gpu_engine_req_t *req);

/*
 * Any other collective, as this rank's side of a set of pairwise
 * transfers (engine/gpu_plan.h builds plans from MPI arguments).  op and
 * dt matter only for GPU_XCHG_REDUCE plans.  Every rank of the
 * communicator must call it for the same collective.
 */
gpu_status_t gpu_engine_xchg(gpu_engine_comm_t *comm, const char *what,
                             const gpu_xchg_plan_t *plan, gpu_op_t op, gpu_dtype_t dt,
                             gpu_engine_req_t *req);

/*
 * A reduction of elements wider than the kernels' 16-byte pieces
 * (MPI_LONG_DOUBLE_INT; engine/gpu_plan.h, gpu_plan_wide, says why): the
 * inputs are moved as bytes into an area of this communicator's, then
 * folded there in rank order.  Blocking (req NULL): both, the result in
 * place on return.  Nonblocking: the movement; once gpu_engine_req_test
 * says GPU_OK the caller completes the call with gpu_engine_wide_fold (the
 * same w).  A communicator's calls run one at a time (its requests in
 * order, a blocking call after them), so they share the area.
 */
gpu_status_t gpu_engine_wide(gpu_engine_comm_t *comm, const char *what, const gpu_wide_t *w,
                             gpu_engine_req_t *req);
gpu_status_t gpu_engine_wide_fold(gpu_engine_comm_t *comm, const gpu_wide_t *w);

/* GPU_OK when done (the request is then released), GPU_INPROGRESS, or an
 * error (released too).  Nonblocking calls run as host-paced rounds (no
 * kernel of theirs waits for a peer); this runs their next phases. */
gpu_status_t gpu_engine_req_test(gpu_engine_comm_t *comm, gpu_engine_req_t *req);

/*
 * Stream-ordered allreduce (MPIX_Allreduce_enqueue on a CUDA stream): one
 * kernel launched on stream, no host wait; capturable in a CUDA graph.
 * GPU_ERR_UNSUPPORTED (the same answer on every rank for the same call)
 * when this communicator or call cannot take it: the caller uses its host
 * path.  A timeout of an earlier launch is returned once, naming the peer
 * (*peer), instead of launching.  in == out is in place; host buffers are
 * copied through a device staging area on the stream.
 */
gpu_status_t gpu_engine_stream_allreduce(gpu_engine_comm_t *comm, const void *in, void *out,
                                         size_t count, gpu_op_t op, gpu_dtype_t dt, void *stream,
                                         int *peer);
/* Stream-ordered alltoall, bytes to each peer (kernels/gpu_stream.h, the
 * bulk form); the same answers as above.  Not in place. */
gpu_status_t gpu_engine_stream_alltoall(gpu_engine_comm_t *comm, const void *in, void *out,
                                        size_t bytes, void *stream, int *peer);

/* Cut lengths for the exchange kernel: both are functions of the
 * communicator only (same on every rank). */
size_t gpu_engine_slot_bytes(const gpu_engine_comm_t *comm);
int gpu_engine_rank(const gpu_engine_comm_t *comm);
/* PCI bus id of the GPU a rank of the communicator drives */
const char *gpu_engine_rank_busid(const gpu_engine_comm_t *comm, int rank);
/* CLOCK_MONOTONIC seconds when the last call started its kernel launch
 * and when the launch had returned (for the timing file) */
void gpu_engine_times(const gpu_engine_comm_t *comm, double *launch, double *submit);
int gpu_engine_size(const gpu_engine_comm_t *comm);
/* The rank a failed call waited for, -1 if none is known. */
int gpu_engine_failed_peer(const gpu_engine_comm_t *comm);

/*
 * Memory kinds not yet agreed (the component's kind board): the caller
 * numbers each collective call of the communicator (call, the same on
 * every rank, host calls included) and, when it has not waited for the
 * peers' kinds, passes ops to ask for them.  The resident kernel then
 * starts a call whose completion proves every peer passed device memory
 * (each peer sends this rank lines) and asks while it waits; a peer on the
 * host path makes it drop the call.  Every other path asks (settle)
 * first.  Either way a call that must stage returns GPU_ERR_UNSUPPORTED
 * with nothing of it left running.  ops NULL: the kinds are agreed.
 *
 * busy: whether any rank posted "busy" for this call (its application
 * works on the GPU between calls: gpu_engine_app_busy, which the caller
 * posts with its kind), 0 or 1 where agreed, -1 where settle will tell or
 * no board exists.  A large call then takes the launched kernels rather
 * than the resident kernel, whose lines slow the application's next
 * kernel; every rank reads the same posts, so all choose alike.
 *
 * pool: whether every rank posted that it holds its process's
 * large-message pool for this call (gpu_engine_pool_vote), in the same
 * forms as busy.  Where the board tells it, a call over the pool needs no
 * host exchange of its own (engine/gpu_pool.h, the lease).
 */
typedef struct {
    /* GPU_OK with *all_dev, or GPU_INPROGRESS while a peer has not posted */
    gpu_status_t (*peek)(void *ctx, int *all_dev);
    /* waits (bounded) for the answer; *busy as above when all device */
    gpu_status_t (*settle)(void *ctx, int *all_dev, int *busy, int *pool);
} gpu_engine_kind_ops_t;
void gpu_engine_kind_call(gpu_engine_comm_t *comm, unsigned long long call,
                          const gpu_engine_kind_ops_t *ops, void *ctx, int busy, int pool);
/* Before a blocking call's post on the board: take this process's pool
 * for the call if it is free (1: post that this rank holds it; 0: not,
 * or no pool).  gpu_engine_pool_unvote after the call, whatever path it
 * took, gives back a lease the call still holds. */
int gpu_engine_pool_vote(gpu_engine_comm_t *comm);
void gpu_engine_pool_unvote(gpu_engine_comm_t *comm);
/* This rank's application works on the GPU between its blocking calls
 * (their mean gap is above coll_gpu_persist_gap_us). */
int gpu_engine_app_busy(const gpu_engine_comm_t *comm);
/* After the call: forget its number and ops. */
void gpu_engine_kind_clear(gpu_engine_comm_t *comm);

#ifdef __cplusplus
}
#endif

#endif /* GPU_ENGINE_H */
