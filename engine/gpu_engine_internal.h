/*
 * Engine internals shared by its files (gpu_engine.c: setup, scratch and
 * allreduce; gpu_engine_xchg.c: the exchange collectives and requests).
 */
#ifndef GPU_ENGINE_INTERNAL_H
#define GPU_ENGINE_INTERNAL_H

#include <cuda_runtime_api.h>

#include "engine/gpu_engine.h"
#include "engine/gpu_plan.h"
#include "engine/gpu_pool.h"
#include "ipc/gpu_ipc.h"
#include "kernels/gpu_ll.h"
#include "topo/gpu_topo.h"
#include "util/gpu_cuda_check.h"

#define GPU_ENGINE_EVENTS 64

enum { GPU_BIG_NONE = 0, GPU_BIG_READY, GPU_BIG_FAILED };

struct gpu_engine_comm {
    int rank;
    int nranks;
    int device;
    int prev_device;            /* the caller's, around calls from progress */
    int broken;
    gpu_engine_params_t p;
    gpu_topo_comm_t topo;
    const gpu_transport_ops_t *tr;
    char *scratch;                           /* small areas, from setup on (see gpu_engine_layout) */
    char *peer_base[GPU_MAX_PEERS];
    /* the large areas (two-shot and exchange-kernel slots, with their own
     * flags): only the launched kernels of large calls use them, so they
     * are allocated and exchanged at the first blocking call that takes
     * that path (the same call on every rank), or at setup when eager */
    char *big;                               /* private areas (coll_gpu_pool 0) */
    char *big_base[GPU_MAX_PEERS];           /* each rank's large area, private or pooled */
    size_t big_bytes;
    int big_state;                           /* GPU_BIG_* */
    int big_refused;                         /* growth failed, not yet told */
    /* the process's pool on this device (engine/gpu_pool.h; NULL: private
     * areas): data only, leased per call; each rank's card from this
     * communicator's first call that needed it */
    gpu_pool_t *pool;
    size_t pool_bytes;                       /* the pool's area size asked for */
    int pool_held;                           /* this call holds the lease */
    int pool_carded;                         /* holds a card of this process's area */
    int pool_board;                          /* every rank's lease is on the kind board
                                                (agreed at the join): no exchange per call */
    unsigned long long pool_busy;            /* calls staged: some rank's pool was busy */
    unsigned long long pool_board_calls;     /* leases agreed on the kind board */
    unsigned long long pool_xchg_calls;      /* leases agreed by host exchange */
    gpu_pool_card_t pool_cards[GPU_MAX_PEERS];
    size_t ll_off, ll_slot, ts_off, ts_block;
    cudaStream_t stream;
    gpu_kernel_error_t *err_host;
    gpu_kernel_error_t *err_dev;
    unsigned long long seq;
    unsigned long long oneshot_calls;
    size_t xg_flags_off, xg_slots_off, xg_slot;
    cudaEvent_t legacy_ev;                   /* orders us after the legacy stream */
    cudaEvent_t events[GPU_ENGINE_EVENTS];   /* free pool for requests */
    int nevents;
    double t_launch, t_submit;
    char busid[GPU_MAX_PEERS][GPU_TOPO_BUSID_LEN];   /* each rank's GPU */
    /* persistent engine (gpu_engine_pk.c) */
    size_t pk_off, pk_bytes, pk_lines, pk_piece;
    int pk_on, pk_alive, pk_blocks;
    int32_t pk_sms;                          /* SMs of the smallest GPU of the communicator */
    unsigned pk_gen;
    unsigned long long pk_dseq;              /* commands posted to our kernel */
    unsigned long long pk_seq;               /* the last call's LL sequence */
    unsigned long long pk_call_seq;          /* the current call's, from its number; 0: the
                                                next after pk_seq (gpu_engine_kind_call) */
    unsigned long long pk_runs;              /* calls run through it */
    unsigned long long pk_dropped;           /* calls dropped for a host peer */
    unsigned long long pk_busy_calls;        /* large calls launched for a busy rank */
    unsigned pk_epoch;                       /* of the last slot scrub */
    /* kinds still to agree for the current call (gpu_engine_kind_call) */
    const gpu_engine_kind_ops_t *kind_ops;
    void *kind_ctx;
    int kind_busy;                           /* any rank busy (gpu_engine_kind_call), -1 unknown */
    int kind_pool;                           /* every rank holds its pool (the same), -1 unknown */
    gpu_ll_slots_t pk_slots;                 /* slot flow control (gpu_plan.h) */
    double pk_end;                           /* when the last call through it returned */
    double pk_gap_us;                        /* moving mean of the application's time
                                                between calls (coll_gpu_persist_gap_us) */
    int pk_one_shot;                         /* the live launch takes one call only */
    unsigned long long pk_leaves;            /* calls after which it was told to leave */
    gpu_ll_mailbox_t *pk_mbox, *pk_mbox_dev;
    /* verbose 10, summed over calls: host post to GPU_LL_T_SEEN, each GPU
     * phase, the last stamp to done seen, and post to done seen (us);
     * the first and next to last compare %globaltimer with CLOCK_REALTIME */
    double pk_span[GPU_LL_STAMPS + 3];
    uint64_t pk_post_ns, pk_seen_ns;         /* the last command's */
    double pk_wait_us;
    unsigned long long pk_stamped;           /* calls accounted */
    /* host-paced rounds (gpu_engine_hs.c) */
    int hs_on;
    int threads_any;                         /* some rank runs MPI_THREAD_MULTIPLE */
    int mps_all;                             /* every rank's GPU is shared through MPS */
    unsigned hs_parity;                      /* staging area of the next round */
    size_t hs_off, hs_bytes;                 /* both areas, every receiver */
    const gpu_boot_ops_t *boot;              /* the host collectives, for the scrub */
    void *boot_ctx;
    /* one process runs the call for every rank (gpu_engine_direct.c) */
    int direct_on;
    void *direct_all;                        /* the descriptors of every rank */
    int32_t *direct_verdicts;
    unsigned long long direct_gone;          /* this rank's freed-allocation log passed on */
    /* large copy plans straight into the receivers' buffers (gpu_engine_put.c) */
    size_t put_off;                          /* its flags in every rank's small area */
    unsigned long long put_calls;
    unsigned long long put_tickets;  /* blocks of every put kernel so far (gpu_put_args_t) */
    void *put_all;                           /* every rank's descriptor, then verdict */
    /* stream-ordered allreduce (gpu_engine_stream.c, kernels/gpu_stream.h) */
    size_t st_off, st_bytes, st_lines;       /* region in every rank's scratch */
    gpu_kernel_error_t *st_err_host, *st_err_dev;   /* its own: a timeout there must not
                                                       fail the blocking paths */
    char *st_stage;                          /* device copy of host-buffer arguments */
    size_t sb_off, sb_bytes, sb_slot;        /* the bulk region, its slots */
    char *sb_stage;                          /* pageable arguments of bulk calls (at the
                                                first such call: 2 * nranks slots) */
    /* reductions of wide elements (gpu_engine_wide): the inputs they fold,
     * grown at the first call that needs more */
    char *wide_area;
    size_t wide_bytes;
};


/*
 * A call as error messages name it.  Formatted the first time a message
 * needs it: a snprintf per call was about 0.1 us of a 7 us collective.
 */
typedef struct {
    const char *coll;
    unsigned long long seq;
    size_t count;               /* allreduce: elements of dt, reduced by op */
    int reduces;
    gpu_op_t op;
    gpu_dtype_t dt;
    char text[96];
} gpu_engine_what_t;
const char *gpu_engine_what(gpu_engine_what_t *w);

/* Steps run from progress, where another device may be current: make
 * ours current and give back the caller's (a local, so steps may nest). */
static inline int gpu_engine_device_push(const gpu_engine_comm_t *c)
{
    int prev = c->device;
    if (cudaSuccess == cudaGetDevice(&prev) && prev != c->device) {
        (void) cudaSetDevice(c->device);
    }
    return prev;
}
static inline void gpu_engine_device_pop(const gpu_engine_comm_t *c, int prev)
{
    if (prev != c->device) {
        (void) cudaSetDevice(prev);
    }
}

/* Do two ranks of the communicator drive the same GPU (busids known)? */
int gpu_engine_gpu_shared(const gpu_engine_comm_t *c);
/* Make the next launch wait for work the application queued on the legacy
 * default stream (the engine's stream does not block on it, so legacy work
 * queued later never waits for a collective that waits for a peer). */
gpu_status_t gpu_engine_order(gpu_engine_comm_t *c);
/* May this call run here: the communicator is healthy (else INVALID), the
 * caller's current device is ours and, when reducing, the kernels know
 * (op, dt) (else UNSUPPORTED: the caller stages). */
gpu_status_t gpu_engine_enter(gpu_engine_comm_t *c, int reduces, gpu_op_t op, gpu_dtype_t dt);
/* Wait for everything launched so far; what names the call in errors. */
gpu_status_t gpu_engine_wait(gpu_engine_comm_t *c, gpu_engine_what_t *what);
/* Blocking (req NULL): wait; otherwise record completion into req. */
gpu_status_t gpu_engine_finish(gpu_engine_comm_t *c, gpu_engine_what_t *what,
                               gpu_engine_req_t *req);

/* What the communicator allocates (gpu_engine_layout.c): its parameters
 * made valid and cut to its size (with the pool: to coll_gpu_pool_comm_bytes),
 * then its small area's offsets (*total: its bytes) and its large area's size. */
void gpu_engine_fit(gpu_engine_comm_t *c);
void gpu_engine_layout(gpu_engine_comm_t *c, size_t *total);
/* The resident kernel's lines, and whether it may run here at all. */
size_t gpu_engine_pk_region_bytes(const gpu_engine_comm_t *c);
int gpu_engine_pk_wanted(const gpu_engine_comm_t *c);

/* Persistent engine (gpu_engine_pk.c). */
gpu_status_t gpu_engine_pk_setup(gpu_engine_comm_t *c);
void gpu_engine_pk_release(gpu_engine_comm_t *c);
/* May a blocking call with this plan run there (same answer on every rank)? */
int gpu_engine_pk_fits(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *plan, gpu_dtype_t dt);
/* The same for a plan not built yet: its mode and agreed size (no relay). */
int gpu_engine_pk_takes(const gpu_engine_comm_t *c, int mode, size_t ll_bytes, gpu_dtype_t dt);
gpu_status_t gpu_engine_pk_run(gpu_engine_comm_t *c, gpu_engine_what_t *what,
                               const gpu_xchg_plan_t *plan, gpu_op_t op, gpu_dtype_t dt);
/* Before other work goes on the stream: tell a running kernel to exit. */
void gpu_engine_pk_park(gpu_engine_comm_t *c);

/* Setup helpers (gpu_engine_setup.c): everything the setup acquired. */
void gpu_engine_release(gpu_engine_comm_t *c);
/* What a rank sends in the setup's and the growth's exchange of areas. */
typedef struct {
    int32_t status;
    int32_t pad;
    gpu_ipc_handle_t handle;
    gpu_ipc_handle_t big;       /* the large areas, when made at setup */
} gpu_boot_handle_t;

/* gpu_engine_setup.c, for the large areas' growth (gpu_engine_big.c): this
 * rank's large area allocated and exported; it and every peer mapping of
 * it undone; every peer's area of kind big (or small) mapped. */
gpu_status_t gpu_engine_big_alloc(gpu_engine_comm_t *c, gpu_ipc_handle_t *handle);
void gpu_engine_big_release(gpu_engine_comm_t *c);
gpu_status_t gpu_engine_map(gpu_engine_comm_t *c, const gpu_ipc_handle_t *const *handles,
                            int big);
/* The large areas for a call about to launch a two-shot or exchange
 * kernel (a choice every rank makes alike): GPU_OK when they exist; a
 * blocking call allocates and exchanges them with the peers (all ranks
 * are in this call); GPU_ERR_UNSUPPORTED (the caller stages) for a
 * nonblocking call before that, or once a growth failed on some rank. */
gpu_status_t gpu_engine_big_need(gpu_engine_comm_t *c, int blocking);
/* After a call that passed gpu_engine_big_need: give the pool's lease back
 * (finished 0: its kernel may still run, the pool is never leased again). */
void gpu_engine_big_done(gpu_engine_comm_t *c, int finished);
/* An event from the engine's pool, and back. */
gpu_status_t gpu_engine_event(gpu_engine_comm_t *c, cudaEvent_t *ev);
void gpu_engine_event_put(gpu_engine_comm_t *c, cudaEvent_t ev);
/* While a host wait of the engine lasts: let the MPI library progress
 * (other communicators' requests need this rank).  Called every 1024th
 * spin, from the second on, so calls that end quickly never pay it. */
void gpu_engine_wait_progress(gpu_engine_comm_t *c, unsigned spins);

/* The current call's memory kinds, where they are not agreed yet: GPU_OK
 * when every peer passed device memory, GPU_ERR_UNSUPPORTED (stage) when
 * one did not. */
gpu_status_t gpu_engine_kind_settle(gpu_engine_comm_t *c);
/* A blocking call the resident kernel would take (*resident): where it is
 * large (ll_bytes), any rank is busy and the launched path has its areas
 * (big: it needs the large ones), the launched kernels instead; settles
 * the kinds to know.  GPU_ERR_UNSUPPORTED: a peer went host. */
gpu_status_t gpu_engine_pk_busy(gpu_engine_comm_t *c, size_t ll_bytes, int big, int *resident);

/* One process for every rank of a time-sliced GPU (gpu_engine_direct.c):
 * wanted (busids known; the same answer on every rank), and a blocking
 * allreduce run that way (GPU_ERR_UNSUPPORTED, alike everywhere: stage). */
int gpu_engine_direct_wanted(const gpu_engine_comm_t *c);
/* Does an allreduce of bytes take it (under MPS only the larger ones)? */
int gpu_engine_direct_takes(const gpu_engine_comm_t *c, size_t bytes, int blocking);
gpu_status_t gpu_engine_direct_allreduce(gpu_engine_comm_t *c, gpu_engine_what_t *what,
                                         const void *in, void *out, size_t count, gpu_op_t op,
                                         gpu_dtype_t dt);
/* The same for a nonblocking one: start queues the first exchange (never
 * waits), step runs what is ready from progress (GPU_INPROGRESS until
 * done; req->direct is then NULL).  Where a buffer cannot be shared the
 * step hands the call to host-paced rounds (req->async), alike on every
 * rank, before anything was written. */
gpu_status_t gpu_engine_direct_start(gpu_engine_comm_t *c, const void *in, void *out,
                                     size_t count, gpu_op_t op, gpu_dtype_t dt,
                                     gpu_engine_req_t *req);
gpu_status_t gpu_engine_direct_step(gpu_engine_comm_t *c, gpu_engine_req_t *req);

/* Large plans copied or folded between the ranks' own buffers (gpu_engine_put.c;
 * whether it takes a call: gpu_engine.h): GPU_ERR_UNSUPPORTED, alike
 * everywhere and nothing written: the exchange kernel instead. */
gpu_status_t gpu_engine_put_run(gpu_engine_comm_t *c, gpu_engine_what_t *what,
                                const gpu_xchg_plan_t *plan, gpu_op_t op, gpu_dtype_t dt);

/* Stream-ordered allreduce (gpu_engine_stream.c): its error record. */
gpu_status_t gpu_engine_stream_setup(gpu_engine_comm_t *c);
void gpu_engine_stream_release(gpu_engine_comm_t *c);

/* Host-paced rounds (gpu_engine_hs.c): wanted here (busids known), and a
 * blocking plan run that way.  Nonblocking calls: hs_async_takes says
 * whether a plan (NULL: an allreduce) can run as rounds from progress,
 * hs_start queues the first and hangs the rest on req, hs_step runs what
 * is ready (GPU_INPROGRESS until done; then req->async is NULL). */
int gpu_engine_hs_async_takes(const gpu_engine_comm_t *c, const gpu_xchg_plan_t *plan);
gpu_status_t gpu_engine_hs_start(gpu_engine_comm_t *c, const gpu_xchg_plan_t *plan, gpu_op_t op,
                                 gpu_dtype_t dt, gpu_engine_req_t *req);
gpu_status_t gpu_engine_hs_step(gpu_engine_comm_t *c, gpu_engine_req_t *req);
int gpu_engine_hs_wanted(const gpu_engine_comm_t *c);
gpu_status_t gpu_engine_hs_run(gpu_engine_comm_t *c, gpu_engine_what_t *what,
                               const gpu_xchg_plan_t *plan, gpu_op_t op, gpu_dtype_t dt);

#endif /* GPU_ENGINE_INTERNAL_H */
