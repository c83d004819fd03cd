/*
 * coll/gpu: MPI collectives on CUDA device buffers inside stock Open MPI 4.1.
 *
 * The component is a thin layer: it registers MCA parameters, decides per
 * communicator whether to run (CUDA driver and a device present), keeps
 * the previous module's function for every collective, and routes each
 * call in one place (coll_gpu_route.h):
 *
 *   host buffers                     -> previous module, untouched
 *   device buffers, every rank's part
 *     eligible (agreed)              -> engine/ on one node (GPU kernels
 *                                       over CUDA IPC), hier/ across nodes
 *   any other device-buffer call     -> staged: device -> host, previous
 *                                       module, host -> device
 *
 * Intercommunicators get a module of their own that only stages
 * (coll_gpu_inter.c): their collectives have no GPU path.
 *
 * Per-communicator GPU state is created at the first device-buffer
 * collective, through the communicator's own host allgather.
 *
 * When the user restricts the coll framework to this component alone
 * ("--mca coll gpu"), Open MPI 4.1 would fail MPI_Init because every
 * collective needs some provider; the component then opens the fallback
 * components named in coll_gpu_fallback itself (see coll_gpu_adopt.c).
 */
#ifndef MCA_COLL_GPU_H
#define MCA_COLL_GPU_H

#include "ompi_config.h"

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/mca/coll/coll.h"
#include "ompi_coll_gpu/coll_gpu_compat.h"
#include "ompi/request/request.h"
#include MCA_COLL_GPU_MUTEX_HEADER

#include "engine/gpu_engine.h"
#include "util/gpu_kind_board.h"

BEGIN_C_DECLS

typedef enum {
    MCA_COLL_GPU_ALGO_AUTO = 0,
    MCA_COLL_GPU_ALGO_ONESHOT = 1,
    MCA_COLL_GPU_ALGO_TWOSHOT = 2,
    MCA_COLL_GPU_ALGO_STAGED = 3
} mca_coll_gpu_algo_t;

/* coll_gpu_stream_order */
enum {
    MCA_COLL_GPU_ORDER_NONE = 0,
    MCA_COLL_GPU_ORDER_FIRST_USE = 1,
    MCA_COLL_GPU_ORDER_EVERY_CALL = 2
};

typedef struct mca_coll_gpu_component_t {
    mca_coll_gpu_base_component_t super;

    int priority;
    int verbose;
    int output;
    int allreduce_algorithm;
    unsigned long oneshot_max;
    unsigned long scratch_bytes;
    int nblocks;
    int nthreads;
    int oneshot_blocks;
    double timeout;
    char *fallback;
    unsigned long bcast_chain_min;
    unsigned long reduce_chain_min;
    unsigned long reduce_twoshot_min;
    unsigned long xchg_scratch_bytes;
    int xchg_nblocks;
    int xchg_split;
    unsigned long put_min;
    int put_read;
    int put_ce;
    int put_fold_nblocks;
    int stream_order;
    int persist;
    unsigned long persist_max_bytes;
    unsigned long persist_reduce_max_bytes;
    int persist_blocks;
    unsigned long persist_piece_bytes;
    double persist_idle_us;
    double persist_gap_us;
    double persist_leave_us;
    int persist_one_shot;
    unsigned long persist_busy_min_bytes;
    int paced;
    unsigned long paced_scratch_bytes;
    int scratch_lazy;
    int pool;
    unsigned long pool_comm_bytes;
    unsigned long shared_staged_max;
    int shared_direct;
    unsigned long enqueue_kernel_max;
    unsigned long enqueue_bulk_bytes;
    int nvtx;
    char *timing_file;
    char *topo_file;
    char *topo_dump;
    int hier;
    int hier_nonblocking;   /* nonblocking calls across nodes on the hierarchy's thread */
    int virtual_nodes;
    int kind_across_nodes;
    int kind_test_device;
    unsigned long net_slot_bytes;
    int net_slots;
    int net_channels;
    int net_device_fold;
    unsigned long net_rndv_thresh;
    int net_direct;
    int net_algorithm;
    double net_latency_us;
    double net_bandwidth;

    /* the request lists and progress, when MPI runs with threads
     * (OPAL_THREAD_LOCK: free otherwise) */
    opal_mutex_t lock;

    int gpu_available;   /* -1 unknown, 0 no, 1 yes */
    const char *no_gpu_reason;
} mca_coll_gpu_component_t;

MCA_COLL_GPU_DECLSPEC extern mca_coll_gpu_component_t mca_coll_gpu_component;

/* What every wait of the component is bounded by: coll_gpu_timeout, where
 * 0 (or less) means its default of 60 s, never "no limit" (one meaning in
 * every place that waits). */
static inline double mca_coll_gpu_timeout_s(void)
{
    return mca_coll_gpu_component.timeout > 0 ? mca_coll_gpu_component.timeout : 60.0;
}

typedef enum {
    MCA_COLL_GPU_BOOT_NONE = 0,
    MCA_COLL_GPU_BOOT_READY = 1,
    MCA_COLL_GPU_BOOT_STAGED = 2,  /* layout the engine cannot serve */
    MCA_COLL_GPU_BOOT_HIER = 3,    /* several nodes: hierarchical collectives */
    MCA_COLL_GPU_BOOT_SETUP = 4    /* one node: setup running from progress */
} mca_coll_gpu_boot_t;

struct gpu_hier;
struct gpu_net;

typedef struct mca_coll_gpu_module_t {
    mca_coll_base_module_t super;
    mca_coll_base_comm_coll_t prev;   /* previous functions and modules */
    ompi_communicator_t *comm;
    mca_coll_gpu_boot_t boot;
    int one_node;                     /* every rank on this node (or virtual node) */
    gpu_engine_comm_t *engine;
    int has_order;                    /* chain order from the topology ring */
    int chain_order[GPU_MAX_PEERS];
    /* several nodes (coll_gpu_hier.c) */
    ompi_communicator_t *node_comm;   /* my node's ranks */
    gpu_engine_comm_t *node_engine;
    struct gpu_net *net;
    struct gpu_net **nets;            /* one per channel, nets[0] == net */
    int nnets;
    struct gpu_hier *hier;
    struct mca_coll_gpu_hier_nb *hier_nb;   /* its thread for nonblocking calls */
    size_t *hier_v_layout;            /* 4 x ranks: a v call's bytes (coll_gpu_hier_v.c) */
    /* nonblocking device calls, run one at a time in start order (their
     * host exchanges match in order); a blocking device call waits for
     * them first (coll_gpu_request.c) */
    struct mca_coll_gpu_request_t *q_head, *q_tail;
    gpu_engine_setup_t *setup;        /* while boot is SETUP */
    gpu_status_t setup_status;        /* why a setup from progress failed */
    int fail_peer;                    /* the rank a failed host exchange waited for */
    int fail_timeout;
    /* memory-kind agreement (coll_gpu_kind.c): my slot (NULL: none, the
     * communicator spans nodes or has one rank), the peers' slots once
     * found, and "the next entry is a re-issue: post nothing" */
    gpu_kind_post_t kpost;
    struct gpu_kind_slot **kpeer;
    /* the call number last posted; "not agreed yet" (a blocking device
     * call left to the engine, which asks while its kernel runs); the peer
     * a wait for kinds timed out on */
    uint64_t kcall;
    int kdefer;
    int kbusy;      /* any rank busy for kcall (GPU_KIND_BUSY): -1 not read yet */
    int kpool;      /* every rank holds its pool for kcall (GPU_KIND_POOL): -1 not read */
    int kfail_peer;
    /* nonblocking calls whose start waits in the queue (coll_gpu_kind.c):
     * how many may still start a host collective (a later nonblocking
     * call queues behind them, so every rank starts Open MPI's nonblocking
     * collectives in call order) */
    int kq;
    /* made by MPIX_Stream_comm_create on a CUDA stream (coll_gpu_mpix.c):
     * its engine gets the stream-ordered allreduce's region */
    int stream_comm;
    /* the buffers of the last blocking host-buffer call (both host memory;
     * mca_coll_gpu_host_again) */
    const void *hsend, *hrecv;
    /* across nodes: the query service and this rank's node map
     * (coll_gpu_kind_net.c) */
    struct mca_coll_gpu_knet *knet;
    /* testing the queries without a GPU (coll_gpu_kind_test_device): this
     * rank's host calls ask as device calls would */
    int kpretend;
} mca_coll_gpu_module_t;

OBJ_CLASS_DECLARATION(mca_coll_gpu_module_t);

/* component */
int mca_coll_gpu_init_query(bool enable_progress_threads, bool enable_mpi_threads);
mca_coll_base_module_t *mca_coll_gpu_comm_query(struct ompi_communicator_t *comm, int *priority);
int mca_coll_gpu_adopt_fallbacks(const char *names);

/* routing helpers */
/* 1 for device or managed memory.  With coll_gpu_stream_order 1 it also
 * orders the call after the application's synchronous copies into a buffer
 * the first time it sees the allocation (gpu_drv_first_use), so every
 * entry point classifies its buffers through it before using them. */
int mca_coll_gpu_is_device(const void *buf);
int mca_coll_gpu_map(struct ompi_datatype_t *dtype, struct ompi_op_t *op, gpu_dtype_t *dt,
                     gpu_op_t *gop);
/* The pairs mca_coll_gpu_map leaves out for being wider than the kernels'
 * pieces (long double int, MINLOC/MAXLOC): the engine moves and folds them
 * (gpu_engine_wide); the host functors fold them too (gpu_reduce_host). */
int mca_coll_gpu_map_wide(struct ompi_datatype_t *dtype, struct ompi_op_t *op, gpu_dtype_t *dt,
                          gpu_op_t *gop);
/* GPU_DT_F16 / GPU_DT_BF16 for the half-precision handles libgpucoll got
 * from coll_gpu_half.c, else GPU_DT_COUNT */
gpu_dtype_t mca_coll_gpu_half_dtype(struct ompi_datatype_t *dtype);
/* blocking 0 (a nonblocking call): never waits for the peers; on one node
 * the setup then runs from progress (boot SETUP).  Blocking: first waits
 * for the communicator's nonblocking device calls. */
int mca_coll_gpu_bootstrap(mca_coll_gpu_module_t *m, const char *what, int blocking);
int mca_coll_gpu_status_to_mpi(gpu_status_t st);
/* The setup failed with st: the communicator stages from here on, and an
 * out-of-memory is said once per process.  Returns the error the call that
 * ran the setup returns (a timeout names its peer), else MPI_SUCCESS. */
int mca_coll_gpu_boot_failed(mca_coll_gpu_module_t *m, const char *what, gpu_status_t st);

/* Memory kinds (coll_gpu_kind.c; protocol in util/gpu_kind_board.h).
 * attach at enable, detach at destruct.  agree: every collective entry
 * point calls it once per call, before it routes, with dev = "this rank's
 * buffers would take the GPU path"; it posts the kind, and for a blocking
 * device call waits (bounded, progressing) for the kinds the local peers
 * posted for the same call: *go_dev is 1 only when every one is device.
 * A nonblocking call (req, with its arguments a) never waits: a device
 * call whose peers have not all posted yet, and any call behind such a
 * one, is queued (*req set, *go_dev -1: the entry returns at once) and
 * started from progress, in call order, once the kinds are known.
 * A blocking host-buffer call passes a NULL: nothing keeps it, and building
 * the arguments (a zeroed struct of 128 bytes) was the largest single cost
 * coll/gpu added to an 8-byte host allreduce.
 * A blocking device call of the symmetric collectives on a set-up engine
 * does not wait here either (*go_dev 1, m->kdefer set): the native path
 * hands the question to the engine (gpu_engine_kind_call), which lets the
 * resident kernel start the call and drops it if a peer went host; any
 * other device route must call settle first, which waits as agree did. */
struct mca_coll_gpu_args_t;
struct mca_coll_gpu_issue_t;
/* at init_query: an earlier job's board under this process's name goes
 * before any peer can open it (coll_gpu_kind.c says why) */
void mca_coll_gpu_kind_init(void);
void mca_coll_gpu_kind_attach(mca_coll_gpu_module_t *m, int one_node);
void mca_coll_gpu_kind_detach(mca_coll_gpu_module_t *m);
/* issue: a call started again (coll_gpu_route.h): it posted at its first
 * start, and its kind may be decided already */
int mca_coll_gpu_kind_agree(mca_coll_gpu_module_t *m, int dev, int stage, ompi_request_t **req,
                            const char *what, const struct mca_coll_gpu_args_t *a,
                            const struct mca_coll_gpu_issue_t *issue, int *go_dev);
/* stage: this rank passed device memory its part of the GPU path cannot
 * take (posted GPU_KIND_STAGE).  all_mem: whether every rank passed device
 * memory for the current call (a blocking staged call then runs the host
 * library's nonblocking form under a bounded wait; where a rank runs on
 * host memory, the blocking form it runs).  0 without a board or across
 * nodes. */
int mca_coll_gpu_kind_all_mem(mca_coll_gpu_module_t *m, const char *what, int *all_mem);
/* The kinds peers posted for call: GPU_OK with *all_dev, GPU_INPROGRESS
 * while one (*peer) has not reached it, or an error about *peer. */
gpu_status_t mca_coll_gpu_kind_peek(mca_coll_gpu_module_t *m, uint64_t call, int *all_dev,
                                    int *peer);
void mca_coll_gpu_kind_fini(void);
/* What rank q posted for call (GPU_INPROGRESS: not yet); freed: the
 * communicator was freed here, so q's freed slot is this one's */
gpu_status_t mca_coll_gpu_kind_read_rank(mca_coll_gpu_module_t *m, int q, uint64_t call,
                                         int freed, int *kind);
/* A peer whose board this rank reads (across nodes: of its own node) that
 * has not posted call, or -1 */
int mca_coll_gpu_kind_missing(mca_coll_gpu_module_t *m, uint64_t call);

/* Memory kinds across nodes (coll_gpu_kind_net.c).  attach (from kind
 * attach, a communicator that spans nodes): post the query receive; 0 when
 * not possible (the communicator then trusts, as before).  local: my node's
 * ranks but me (-1: no map).  remote: the other nodes' kinds for call,
 * asked of their speakers: GPU_OK with *all_dev, or an error about *peer
 * (GPU_ERR_UNSUPPORTED: no map). */
int mca_coll_gpu_knet_attach(mca_coll_gpu_module_t *m);
void mca_coll_gpu_knet_detach(mca_coll_gpu_module_t *m);
int mca_coll_gpu_knet_local(mca_coll_gpu_module_t *m, const int **ranks);
gpu_status_t mca_coll_gpu_knet_remote(mca_coll_gpu_module_t *m, uint64_t call, int *all_dev,
                                      int *peer);
/* remote in parts, for a queued nonblocking call from progress: start the
 * queries, test (GPU_INPROGRESS while answers are due), end (cancel what
 * is out; peer non-NULL: the first speaker that did not answer); missing:
 * the rank that has not posted call after a timeout (peer if none found) */
gpu_status_t mca_coll_gpu_knet_round_start(mca_coll_gpu_module_t *m, uint64_t call, int *peer);
gpu_status_t mca_coll_gpu_knet_round_test(mca_coll_gpu_module_t *m, int *all_dev, int *peer);
void mca_coll_gpu_knet_round_end(mca_coll_gpu_module_t *m, int *peer);
int mca_coll_gpu_knet_missing(mca_coll_gpu_module_t *m, uint64_t call, int peer);
void mca_coll_gpu_knet_fini(void);
/* After a wait for call timed out: which rank has not posted it (-1: none
 * found), for the error message.  My node's from the board at once, the
 * other nodes' by asking their first ranks; GPU_INPROGRESS while answers
 * are due (at most limit_s).  Never waits: progress may call it. */
gpu_status_t mca_coll_gpu_knet_ask(mca_coll_gpu_module_t *m, uint64_t call, double limit_s,
                                   int *missing);
int mca_coll_gpu_kind_settle(mca_coll_gpu_module_t *m, const char *what, int *go_dev);
/* The native path, before (1) and after (0) its engine call: the call's
 * number and, if not agreed yet, how the engine asks. */
void mca_coll_gpu_kind_engine(mca_coll_gpu_module_t *m, int before);

/*
 * A blocking call on the same buffers as the module's last host-buffer
 * call, with nothing for the kind agreement to do but count it: post and
 * say 1, and the entry hands the call to the previous module at once.
 * A host-buffer program loops over the same buffers, and the full route
 * (two pointer-cache lookups, the agreement's call) was the rest of what
 * coll/gpu added to its 8-byte allreduce.  Host memory never turns into
 * device memory (mca_coll_gpu_is_device says why), so the pair stays true.
 */
static inline int mca_coll_gpu_host_again(mca_coll_gpu_module_t *m, const void *sbuf,
                                          const void *rbuf)
{
    if (rbuf != m->hrecv || sbuf != m->hsend || NULL == rbuf) {
        return 0;
    }
    if (NULL != m->kpost.slot) {
        if (GPU_KIND_HOST != m->kpost.kind) {
            return 0;   /* a change point: the full route records it */
        }
        m->kcall = gpu_kind_post(&m->kpost, GPU_KIND_HOST);
    }
    m->kdefer = 0;
    return 1;
}

/* a blocking call whose buffers the entry found both host memory */
static inline void mca_coll_gpu_host_note(mca_coll_gpu_module_t *m, const void *sbuf,
                                          const void *rbuf, ompi_request_t **req)
{
    if (NULL == req && !m->kpretend) {
        m->hsend = sbuf;
        m->hrecv = rbuf;
    }
}

/* host exchanges over the communicator's own messages (coll_gpu_xg.c) */
typedef struct mca_coll_gpu_xg_t mca_coll_gpu_xg_t;
extern const gpu_boot_ops_t mca_coll_gpu_boot_ops;
int mca_coll_gpu_xg_start(mca_coll_gpu_module_t *m, const void *sbuf, void *rbuf, size_t bytes,
                          mca_coll_gpu_xg_t **out);
gpu_status_t mca_coll_gpu_xg_test(mca_coll_gpu_xg_t *x);
/* The MPI error code a failed device collective returns: its own code of
 * the class coll/gpu, whose MPI_Error_string names the collective, the
 * communicator, the rank waited for (peer >= 0) and what to change. */
int mca_coll_gpu_error(const char *comm_name, const char *what, gpu_status_t st, int peer);
/* the peer to name for st on m: a host exchange's, else the kernel's */
int mca_coll_gpu_failed_peer(mca_coll_gpu_module_t *m, gpu_status_t st);

/* Several nodes (coll_gpu_hier.c).  setup: collective; 1 when the
 * communicator spans nodes (m->boot then says HIER or STAGED), 0 when it is
 * one node.  run: *ran 0 when the call is not one the hierarchy serves. */
typedef enum {
    MCA_COLL_GPU_HIER_ALLREDUCE,
    MCA_COLL_GPU_HIER_BCAST,
    MCA_COLL_GPU_HIER_REDUCE,
    MCA_COLL_GPU_HIER_ALLGATHER,
    MCA_COLL_GPU_HIER_REDUCE_SCATTER_BLOCK,
    MCA_COLL_GPU_HIER_GATHER,      /* from here: coll_gpu_hier_v.c, from args */
    MCA_COLL_GPU_HIER_GATHERV,
    MCA_COLL_GPU_HIER_SCATTER,
    MCA_COLL_GPU_HIER_SCATTERV,
    MCA_COLL_GPU_HIER_ALLGATHERV,
    MCA_COLL_GPU_HIER_ALLTOALL,
    MCA_COLL_GPU_HIER_ALLTOALLV,
    MCA_COLL_GPU_HIER_REDUCE_SCATTER,
    MCA_COLL_GPU_HIER_SCAN,
    MCA_COLL_GPU_HIER_EXSCAN,
    MCA_COLL_GPU_HIER_ALLTOALLW,
    MCA_COLL_GPU_HIER_NEIGHBOR     /* coll_gpu_nbr.c: the pairs of alltoallv */
} mca_coll_gpu_hier_kind_t;
typedef struct {
    mca_coll_gpu_hier_kind_t kind;
    const void *sbuf;   /* MPI_IN_PLACE as the user passed it */
    void *rbuf;
    int count;          /* allgather: the receive count per rank */
    struct ompi_datatype_t *dtype;   /* allgather: the receive type */
    int scount;         /* allgather: the send side */
    struct ompi_datatype_t *sdtype;
    struct ompi_op_t *op;
    int root;
    const struct mca_coll_gpu_args_t *args;   /* the call as the application made it */
    struct mca_coll_gpu_request_t *behind;    /* a re-issued call's queue entry, or NULL */
} mca_coll_gpu_hier_call_t;
int mca_coll_gpu_hier_setup(mca_coll_gpu_module_t *m, const char *what, int *ret);
int mca_coll_gpu_hier_run(mca_coll_gpu_module_t *m, const mca_coll_gpu_hier_call_t *call,
                          ompi_request_t **req, int *ran);
void mca_coll_gpu_hier_free(mca_coll_gpu_module_t *m);
/* Nonblocking calls on the hierarchy (coll_gpu_hier_nb.c).  takes: a
 * nonblocking call of this kind may run there (the hierarchy is up; the
 * same answer on every rank).  start: run it (*ran 0: the caller stages);
 * free: end the communicator's thread (before the hierarchy goes). */
int mca_coll_gpu_hier_nb_takes(const mca_coll_gpu_module_t *m, int kind);
int mca_coll_gpu_hier_nb_start(mca_coll_gpu_module_t *m, const mca_coll_gpu_hier_call_t *call,
                               ompi_request_t **req, int *ran);
void mca_coll_gpu_hier_nb_free(mca_coll_gpu_module_t *m);
/* the node engine's host exchanges: on the application's threads the node
 * communicator's own allgather (comm_allgather: ctx is the communicator,
 * bounded), on the hierarchy's thread the same run by progress */
gpu_status_t mca_coll_gpu_comm_allgather(void *ctx, const void *sbuf, void *rbuf, size_t bytes);
extern const gpu_boot_ops_t mca_coll_gpu_hier_nb_boot;
/* gather(v), scatter(v), allgatherv, alltoall(v,w), reduce_scatter, (ex)scan across nodes
 * (coll_gpu_hier_v.c): this rank's part can take the hierarchy; run it (*ran 0: staged) */
int mca_coll_gpu_hier_v_ok(mca_coll_gpu_module_t *m, const struct mca_coll_gpu_args_t *a);
int mca_coll_gpu_hier_run_v(mca_coll_gpu_module_t *m, const mca_coll_gpu_hier_call_t *call,
                            int *ran);
/* the same for the nonblocking thread: job copies the call's layout (NULL: no
 * memory, or the arguments cannot take the hierarchy) and says its trace's
 * name, size and algorithm; job_run runs it, calling nothing of Open MPI */
typedef struct mca_coll_gpu_hier_vjob mca_coll_gpu_hier_vjob_t;
struct gpu_hier;
mca_coll_gpu_hier_vjob_t *mca_coll_gpu_hier_v_job(mca_coll_gpu_module_t *m,
                                                  const mca_coll_gpu_hier_call_t *call,
                                                  const char **name, size_t *bytes,
                                                  char *label, size_t label_len);
gpu_status_t mca_coll_gpu_hier_v_job_run(struct gpu_hier *h, const mca_coll_gpu_hier_vjob_t *j);
/* the neighbourhood collectives across nodes (coll_gpu_nbr.c), the same two questions */
int mca_coll_gpu_hier_nbr_ok(mca_coll_gpu_module_t *m, const struct mca_coll_gpu_args_t *a);
int mca_coll_gpu_hier_run_nbr(mca_coll_gpu_module_t *m, const struct mca_coll_gpu_args_t *a,
                              int *ran);
/* and for the nonblocking thread, as the v collectives' job above */
typedef struct mca_coll_gpu_hier_nbrjob mca_coll_gpu_hier_nbrjob_t;
mca_coll_gpu_hier_nbrjob_t *mca_coll_gpu_hier_nbr_job(mca_coll_gpu_module_t *m,
                                                      const struct mca_coll_gpu_args_t *a,
                                                      const char **name, size_t *bytes,
                                                      char *label, size_t label_len);
gpu_status_t mca_coll_gpu_hier_nbr_job_run(struct gpu_hier *h,
                                           const mca_coll_gpu_hier_nbrjob_t *j);
/* a blocking barrier across nodes once the hierarchy is set up (*ran 0: the
 * previous module's; the same answer on every rank) */
int mca_coll_gpu_hier_barrier(mca_coll_gpu_module_t *m, int *ran);
unsigned long long mca_coll_gpu_node_key(ompi_communicator_t *comm);
void mca_coll_gpu_engine_params(gpu_engine_params_t *p, ompi_communicator_t *comm);
/* the NIC nearest this process's GPU as a UCX device name, "" if none known */
void mca_coll_gpu_topo_rail(char *nic, size_t len);
/* libgpucoll's network transport across nodes (coll_gpu_mpix_net.c, the
 * entry's version 5; see mpix/gpucoll_mpix_abi.h) */
int mca_coll_gpu_mpix_net_open(MPI_Comm comm, void **net);
void mca_coll_gpu_mpix_net_close(void *net);
int mca_coll_gpu_mpix_net_isend(void *net, int peer, const void *buf, size_t len, unsigned tag,
                                void **req);
int mca_coll_gpu_mpix_net_irecv(void *net, int peer, void *buf, size_t len, unsigned tag,
                                void **req);
int mca_coll_gpu_mpix_net_test(void *net, void **req, int progress);
void mca_coll_gpu_mpix_net_cancel(void *net, void **req);

/* A message of help-coll-gpu.txt, printed on this process's stderr. */
void mca_coll_gpu_show_help(const char *topic, ...);

/* topology plan of a communicator (coll_gpu_topo.c): verbose plan lines,
 * the bcast chain order, the topology dump */
void mca_coll_gpu_topo_setup(mca_coll_gpu_module_t *m);

/* native path helpers (coll_gpu_native.c) */
typedef struct {
    size_t size;        /* bytes per element; extent == size */
    ptrdiff_t lb;       /* where element 0 starts relative to the buffer */
} mca_coll_gpu_geom_t;

typedef enum {
    MCA_COLL_GPU_ARGS_ALLGATHER,
    MCA_COLL_GPU_ARGS_ALLGATHERV,
    MCA_COLL_GPU_ARGS_ALLREDUCE,
    MCA_COLL_GPU_ARGS_ALLTOALL,
    MCA_COLL_GPU_ARGS_ALLTOALLV,
    MCA_COLL_GPU_ARGS_BCAST,
    MCA_COLL_GPU_ARGS_EXSCAN,
    MCA_COLL_GPU_ARGS_GATHER,
    MCA_COLL_GPU_ARGS_GATHERV,
    MCA_COLL_GPU_ARGS_REDUCE,
    MCA_COLL_GPU_ARGS_REDUCE_SCATTER,
    MCA_COLL_GPU_ARGS_REDUCE_SCATTER_BLOCK,
    MCA_COLL_GPU_ARGS_SCAN,
    MCA_COLL_GPU_ARGS_SCATTER,
    MCA_COLL_GPU_ARGS_SCATTERV,
    MCA_COLL_GPU_ARGS_ALLTOALLW,
    MCA_COLL_GPU_ARGS_BARRIER,
    MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHER,
    MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHERV,
    MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALL,
    MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLV,
    MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLW
} mca_coll_gpu_args_kind_t;

/* One call's MPI arguments; which fields count depends on the kind.  A
 * persistent request keeps them, and so does a nonblocking call that
 * waits for its communicator's setup (should the setup fail, the call
 * starts again through the module's nonblocking entry point). */
typedef struct mca_coll_gpu_args_t {
    mca_coll_gpu_args_kind_t kind;
    const void *sbuf;
    void *rbuf;
    int scount, rcount, root;
    const int *scounts, *sdispls, *rcounts, *rdispls;
    struct ompi_datatype_t *sdtype, *rdtype;
    struct ompi_op_t *op;
    struct ompi_datatype_t *const *sdtypes, *const *rdtypes;   /* alltoallw */
    const MPI_Aint *sdispls_w, *rdispls_w;                      /* neighbor alltoallw */
} mca_coll_gpu_args_t;

/* Start the call in a as a nonblocking call again (coll_gpu_route.c),
 * uncounted (it was counted when it was first called: a queued call, a
 * restart); force: the kind decided for it (-1: its own); behind: the
 * queue entry whose place a GPU request takes (NULL: none). */
struct mca_coll_gpu_request_t;
int mca_coll_gpu_args_issue(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a, int force,
                            struct mca_coll_gpu_request_t *behind, ompi_request_t **req);

/* one engine call: an exchange plan, or an allreduce when plan is NULL
 * (a reduce by the two-shot kernel when root >= 0).  Nothing zeroes it:
 * every builder sets every field but args, behind, wide and root; the
 * route resets wide and root before any builder runs, and only their own
 * builders set them. */
typedef struct {
    const char *what;
    const gpu_xchg_plan_t *plan;
    const void *in;
    void *out;
    size_t count;
    gpu_op_t op;
    gpu_dtype_t dt;
    int root;                           /* plan NULL: -1 allreduce, else reduce to root
                                           (gpu_engine_reduce_ts); -1 with a plan */
    const mca_coll_gpu_args_t *args;    /* nonblocking: the MPI call, or NULL */
    struct mca_coll_gpu_request_t *behind;   /* a re-issued call's queue entry, or NULL */
    /* a reduction of wide elements (gpu_engine_wide: long double int): run
     * instead of plan or the allreduce; NULL for every other call */
    const gpu_wide_t *wide;
} mca_coll_gpu_call_t;

int mca_coll_gpu_geom(struct ompi_datatype_t *dt, mca_coll_gpu_geom_t *g);
/* req NULL: blocking.  True when the engine takes the call (for a
 * nonblocking call: or will, once the setup running from progress ends). */
int mca_coll_gpu_native_ready(mca_coll_gpu_module_t *m, const char *what, ompi_request_t **req,
                              int *ret);
/* req NULL: blocking.  *ran 0: the engine declined, the caller stages. */
int mca_coll_gpu_native_run(mca_coll_gpu_module_t *m, const mca_coll_gpu_call_t *call,
                            ompi_request_t **req, int *ran);
/* a staged or previous-module result as a (completed) request */
int mca_coll_gpu_fallback_done(int ret, ompi_request_t **req);

/* observability (coll_gpu_trace.c) */
typedef struct {
    double t0;
    size_t bytes;
    const char *what;
    const char *algo;
    int pushed;         /* an NVTX range is open */
} mca_coll_gpu_trace_t;
/* Does anything consume traces (an NVTX tool attached, a timing file)?
 * When not, callers skip working out what a trace would say. */
int mca_coll_gpu_trace_on(void);
void mca_coll_gpu_trace_begin(mca_coll_gpu_trace_t *t, const char *what, size_t bytes,
                              const char *algo);
void mca_coll_gpu_trace_started(const mca_coll_gpu_trace_t *t);
void mca_coll_gpu_trace_end(const mca_coll_gpu_trace_t *t, const char *comm_name, int blocking,
                            double launch, double submitted, int status);
void mca_coll_gpu_trace_fini(void);

/* nonblocking requests (coll_gpu_request.c): start hands out the request
 * and its engine handle; commit queues it (started) or drops it */
typedef struct mca_coll_gpu_request_t mca_coll_gpu_request_t;
int mca_coll_gpu_request_start(mca_coll_gpu_module_t *m, ompi_request_t **request,
                               mca_coll_gpu_request_t **out);
/*
 * What every request of this component starts with.  Open MPI casts the
 * request of a nonblocking or persistent collective to its
 * ompi_coll_base_nbc_request_t and, for a user op or a derived datatype,
 * keeps the object alive in the fields after ompi_request_t until the
 * request completes (ompi_coll_base_retain_op and friends).  Its header
 * needs ones Open MPI does not install, so the layout is repeated here
 * (the data part per release: coll_gpu_compat.h); a request that did not
 * leave room had its own fields overwritten.
 */
typedef struct {
    ompi_request_t super;
    union {
        ompi_request_complete_fn_t req_complete_cb;
        ompi_request_free_fn_t req_free;
    } cb;
    void *req_complete_cb_data;
    mca_coll_gpu_nbc_data_t data;
} mca_coll_gpu_nbc_request_t;

/* The fields every request of this component starts with: a collective
 * request on comm that cannot be cancelled, empty status, nothing retained;
 * persistent ones start inactive (coll_gpu_persistent.c). */
void mca_coll_gpu_request_prepare(mca_coll_gpu_nbc_request_t *r, struct ompi_communicator_t *comm,
                                  bool persistent);
gpu_engine_req_t *mca_coll_gpu_request_engine(mca_coll_gpu_request_t *r);
/* Queue a nonblocking call whose start must wait (coll_gpu_kind.c): with
 * wait, until the peers' kinds for call are known (then it starts on the
 * GPU or staged, as they say), else only for its turn (it starts as
 * itself).  Either way it starts after the calls queued before it. */
int mca_coll_gpu_request_queue(mca_coll_gpu_module_t *m, ompi_request_t **request,
                               const mca_coll_gpu_args_t *a, const char *what, uint64_t call,
                               int wait);
/* Keep the call in the request.  1: it waits for its turn (the setup, or
 * earlier calls of the communicator) and progress hands it to the engine;
 * 0: the caller runs it now. */
int mca_coll_gpu_request_defer(mca_coll_gpu_request_t *r, const mca_coll_gpu_call_t *call);
/* behind: the queue entry a re-issued call takes the place of (NULL: the
 * request goes to the end of the communicator's queue) */
void mca_coll_gpu_request_commit(mca_coll_gpu_request_t *r, int started,
                                 const mca_coll_gpu_trace_t *trace,
                                 mca_coll_gpu_request_t *behind);
void mca_coll_gpu_request_fini(void);
/* A request whose work runs elsewhere (coll_gpu_hier_nb.c): progress asks
 * test (GPU_INPROGRESS until done; then its status and, on an error, the
 * peer to name) and the request's release calls release(arg).  Set
 * between start and commit. */
typedef struct {
    gpu_status_t (*test)(void *arg, int *peer);
    void (*release)(void *arg);
} mca_coll_gpu_req_ext_t;
void mca_coll_gpu_request_ext(mca_coll_gpu_request_t *r, const mca_coll_gpu_req_ext_t *ops,
                              void *arg, const char *what);
/* One opal_progress callback serves every request of this component (it
 * is unregistered at component close): registered at the first start. */
void mca_coll_gpu_progress_needed(void);
/* A blocking device call on m first lets m's nonblocking ones finish (they
 * use the same staging and host exchanges); bounded by their own waits and
 * by twice coll_gpu_timeout: past it an error naming the queued call. */
int mca_coll_gpu_drain(mca_coll_gpu_module_t *m);
/* A setup begun for a nonblocking call runs from progress: 0 when too many
 * are in flight already (the caller then does not begin one). */
int mca_coll_gpu_setup_track(mca_coll_gpu_module_t *m);
/* set while this thread runs an enqueued collective for libgpucoll on
 * CUDA's host-function thread (coll_gpu_mpix.c): no CUDA call there */
extern __thread int mca_coll_gpu_in_cuda_callback;
/* completes persistent requests whose round is done; called from it */
int mca_coll_gpu_persistent_progress(void);
/* returns what persistent requests still hold at component close */
void mca_coll_gpu_persistent_fini(void);
/* completes nonblocking staged requests whose host collective is done */
int mca_coll_gpu_staged_progress(void);

/* collectives (blocking) */
int mca_coll_gpu_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module);
int mca_coll_gpu_allreduce_staged(const void *sbuf, void *rbuf, int count,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm, mca_coll_gpu_module_t *m,
                                  ompi_request_t **req);
/* staged versions: device -> host, previous module, host -> device; req
 * non-NULL: the previous module's nonblocking form, completed (and copied
 * back) by progress */
int mca_coll_gpu_reduce_staged(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t
    *dtype, struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
    mca_coll_base_module_t *module, ompi_request_t **req);
int mca_coll_gpu_scan_staged(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t
    *dtype, struct ompi_op_t *op, struct ompi_communicator_t *comm, mca_coll_base_module_t
    *module, ompi_request_t **req);
int mca_coll_gpu_exscan_staged(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t
    *dtype, struct ompi_op_t *op, struct ompi_communicator_t *comm, mca_coll_base_module_t
    *module, ompi_request_t **req);
int mca_coll_gpu_bcast_staged(void *buf, int count, struct ompi_datatype_t *dtype, int root, struct
    ompi_communicator_t *comm, mca_coll_base_module_t *module, ompi_request_t **req);
int mca_coll_gpu_allgather_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
    void *rbuf, int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
    mca_coll_base_module_t *module, ompi_request_t **req);
int mca_coll_gpu_allgatherv_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
    void *rbuf, const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype, struct
    ompi_communicator_t *comm, mca_coll_base_module_t *module, ompi_request_t **req);
int mca_coll_gpu_alltoall_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void
    *rbuf, int rcount, struct ompi_datatype_t *rdtype, struct ompi_communicator_t *comm,
    mca_coll_base_module_t *module, ompi_request_t **req);
int mca_coll_gpu_alltoallv_staged(const void *sbuf, const int *scounts, const int *sdispls, struct
    ompi_datatype_t *sdtype, void *rbuf, const int *rcounts, const int *rdispls, struct
    ompi_datatype_t *rdtype, struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
    ompi_request_t **req);
int mca_coll_gpu_alltoallw_staged(const void *sbuf, const int *scounts, const int *sdispls, struct
    ompi_datatype_t *const *sdtypes, void *rbuf, const int *rcounts, const int *rdispls, struct
    ompi_datatype_t *const *rdtypes, struct ompi_communicator_t *comm, mca_coll_base_module_t
    *module, ompi_request_t **req);
int mca_coll_gpu_alltoallw_self(const void *sbuf, const int *scounts, const int *sdispls,
                                struct ompi_datatype_t *const *sdtypes, void *rbuf,
                                const int *rcounts, const int *rdispls,
                                struct ompi_datatype_t *const *rdtypes);
int mca_coll_gpu_gather_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void
    *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
    mca_coll_base_module_t *module, ompi_request_t **req);
int mca_coll_gpu_gatherv_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void
    *rbuf, const int *rcounts, const int *displs, struct ompi_datatype_t *rdtype, int root, struct
    ompi_communicator_t *comm, mca_coll_base_module_t *module, ompi_request_t **req);
int mca_coll_gpu_scatter_staged(const void *sbuf, int scount, struct ompi_datatype_t *sdtype, void
    *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root, struct ompi_communicator_t *comm,
    mca_coll_base_module_t *module, ompi_request_t **req);
int mca_coll_gpu_scatterv_staged(const void *sbuf, const int *scounts, const int *displs, struct
    ompi_datatype_t *sdtype, void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
    struct ompi_communicator_t *comm, mca_coll_base_module_t *module, ompi_request_t **req);
int mca_coll_gpu_reduce_scatter_block_staged(const void *sbuf, void *rbuf, int rcount, struct
    ompi_datatype_t *dtype, struct ompi_op_t *op, struct ompi_communicator_t *comm,
    mca_coll_base_module_t *module, ompi_request_t **req);
int mca_coll_gpu_reduce_scatter_staged(const void *sbuf, void *rbuf, const int *rcounts, struct
    ompi_datatype_t *dtype, struct ompi_op_t *op, struct ompi_communicator_t *comm,
    mca_coll_base_module_t *module, ompi_request_t **req);
/* Wait for a nonblocking staged call (or the previous module's own
 * request) at most coll_gpu_timeout: its status, or a timeout error (the
 * request is then left to progress, which drops its results). */
int mca_coll_gpu_staged_wait(ompi_request_t **req, const char *comm_name, const char *what);
/* The op a staged reduction hands the previous module: for a predefined op
 * one that folds with this project's functors (coll_gpu_hostop.c). */
struct ompi_op_t *mca_coll_gpu_host_op(struct ompi_op_t *op);
/* every collective's entry point (coll_gpu_entry.c); enable drops those
 * the modules below us do not provide */
void mca_coll_gpu_install_entries(mca_coll_gpu_module_t *m);
void mca_coll_gpu_entries_enable(mca_coll_gpu_module_t *m);
/* persistent collectives (coll_gpu_persistent.c); enable drops those the
 * modules below us do not provide for host buffers */
void mca_coll_gpu_install_persistent(mca_coll_gpu_module_t *m);
void mca_coll_gpu_persistent_enable(mca_coll_gpu_module_t *m);

END_C_DECLS

#endif /* MCA_COLL_GPU_H */
