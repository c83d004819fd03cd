/*
 * Nonblocking collectives across nodes on the hierarchy (and persistent
 * ones, whose every start is a nonblocking call: coll_gpu_persistent.c).
 *
 * Why a thread: the hierarchy's steps block (UCX waits, stream
 * synchronisations, channel threads), and cutting them into steps that
 * progress could resume would mean a second copy of every algorithm.  So a
 * nonblocking call runs the same blocking steps on a thread of its
 * communicator, made at its first such call, one call at a time in start
 * order, and Open MPI's progress only reads the flag the thread raises
 * when the call is done (a request of coll_gpu_request.c whose test is
 * here).  MPI_Test, MPI_Wait(all), MPI_Request_free and persistent
 * MPI_Start/MPI_Wait cycles work as for any request of the component.
 *
 * Why one thread per communicator, not one for the process: MPI lets
 * ranks start nonblocking calls of different communicators in different
 * orders, and a process-wide queue in the order the calls reach it (after
 * their kinds are agreed, at progress's pace) hung within seconds on 4x
 * H100 (docs/results s9).  The price: two communicators' calls run at once
 * on one GPU, so no step of the hierarchy may wait for the whole device
 * (cudaFree, cudaFreeHost, cudaIpcCloseMemHandle) while a call runs: the
 * other communicator's node step may be spinning on the device for a peer
 * that is held the same way.  Its device temporary grows without freeing
 * (hier/gpu_hier.c); one freed on growth hung gatherv/allgatherv outstanding
 * on two communicators until coll_gpu_timeout (test_hier_nbv, 2 virtual
 * nodes of 2 ranks).
 *
 * What keeps it right:
 * - Order: a nonblocking device call across nodes first queues on its
 *   communicator (coll_gpu_kind.c) and learns from progress whether every
 *   rank passed device memory the hierarchy takes (my node's posts on the
 *   board, then one query per other node: coll_gpu_kind_net.c); only then
 *   does it come here, so every rank hands its thread the same calls in the
 *   same order, and where some rank passed host memory every rank stages
 *   the call alike.  The call's request holds the head of the
 *   communicator's queue until the thread is done, so the calls started
 *   after it (nonblocking on host memory too) start after it, and a
 *   blocking device call on the communicator waits for the queue before it
 *   asks its peers or touches the hierarchy.
 * - Threads: the thread calls nothing of Open MPI (the application may run
 *   MPI_THREAD_SINGLE): the call's arguments are turned into the
 *   hierarchy's on the calling thread, traces and logs come from progress.
 *   The communicator's UCX endpoints get a worker of their own
 *   (coll_gpu_hier.c, as under MPI_THREAD_MULTIPLE; docs/across-nodes.md
 *   "Threads"): the thread of one communicator and a blocking call of
 *   another on the application's thread never drive one worker at once,
 *   and on its own communicator the queue keeps them apart.
 * - Bounds: each wait of the hierarchy is bounded by coll_gpu_timeout; a
 *   call whose peer never comes completes with the error (the transport's
 *   log names the peer); the kinds' wait is bounded the same way.
 *
 * Every collective of the hierarchy runs here: its five of its own
 * (allreduce, bcast, reduce, allgather, reduce_scatter_block) from the
 * call's arguments, and gather(v), scatter(v), allgatherv, alltoall(v,w),
 * reduce_scatter, scan and exscan from a copy of the call's layout made on
 * the calling thread (coll_gpu_hier_v.c), since the communicator's layout
 * arrays serve the next call meanwhile.  A layout the hierarchy declines
 * (scan over nodes that are not runs of consecutive ranks) is declined
 * before the start and stages on every rank, as the blocking call does.
 * The neighbourhood collectives run here too, every round's spans cut at
 * the start (coll_gpu_nbr.c).  Ibarrier moves no device data: the previous
 * module's.
 */
#include "ompi_config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll_gpu.h"

#include "ompi/communicator/communicator.h"
#include "ompi/constants.h"
#include "ompi/request/request.h"
#include "opal/util/output.h"

#if GPUCOLL_HAVE_UCX
#include <cuda_runtime_api.h>

#include "hier/gpu_hier.h"

/* One call for the thread, in the hierarchy's terms. */
typedef struct gpu_hnb_job {
    mca_coll_gpu_hier_kind_t kind;
    const char *in;             /* NULL: in place (as gpu_hier.h says per call) */
    char *out;
    size_t count;               /* elements of dt (reductions) */
    size_t bytes;               /* bcast, allgather: bytes per rank */
    gpu_op_t op;
    gpu_dtype_t dt;
    int root;
    struct gpu_hier *hier;      /* its communicator's */
    mca_coll_gpu_hier_vjob_t *v;   /* the v collectives: the call's layout */
    mca_coll_gpu_hier_nbrjob_t *nbr;   /* the neighbourhoods: every round's spans */
    int device;                 /* the caller's CUDA device */
    gpu_status_t st;
    int done;                   /* raised by the thread, last (release order) */
    char what[32];
    char comm_name[MPI_MAX_OBJECT_NAME];
    char label[160];            /* the hierarchy's algorithm, for the trace and log */
    struct mca_coll_gpu_hier_nb *t;   /* its thread, whose host exchanges progress serves */
    struct gpu_hnb_job *next;
} gpu_hnb_job_t;

/* a host exchange of the node engine that the thread asked progress for */
enum { GPU_HNB_MB_NONE, GPU_HNB_MB_POSTED, GPU_HNB_MB_STARTED, GPU_HNB_MB_DONE,
       GPU_HNB_MB_ABANDONED };

struct mca_coll_gpu_hier_nb {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;         /* jobs for the thread */
    gpu_hnb_job_t *head, *tail;
    int stop;
    struct {                     /* under lock */
        int state;
        ompi_communicator_t *comm;
        const void *sbuf;
        void *rbuf;
        size_t bytes;
        char *tmp;               /* mine, then every rank's: stays with a request given up */
        ompi_request_t *req;
        gpu_status_t st;
        pthread_cond_t done;
    } mb;
};

/* the thread's own, on the thread (NULL elsewhere) */
static __thread struct mca_coll_gpu_hier_nb *gpu_hnb_self;

static const char *const gpu_hnb_names[] = { "allreduce", "bcast", "reduce", "allgather",
                                             "reduce_scatter_block" };

/* on the thread: the blocking steps, nothing of Open MPI */
static gpu_status_t gpu_hnb_exec(struct gpu_hier *h, const gpu_hnb_job_t *j)
{
    if (NULL != j->v) {
        return mca_coll_gpu_hier_v_job_run(h, j->v);
    }
    if (NULL != j->nbr) {
        return mca_coll_gpu_hier_nbr_job_run(h, j->nbr);
    }
    switch (j->kind) {
    case MCA_COLL_GPU_HIER_ALLREDUCE:
        return gpu_hier_allreduce(h, j->in, j->out, j->count, j->op, j->dt);
    case MCA_COLL_GPU_HIER_REDUCE_SCATTER_BLOCK:
        return gpu_hier_reduce_scatter_block(h, j->in, j->out, j->count, j->op, j->dt);
    case MCA_COLL_GPU_HIER_REDUCE:
        return gpu_hier_reduce(h, j->in, j->out, j->count, j->op, j->dt, j->root);
    case MCA_COLL_GPU_HIER_BCAST:
        return gpu_hier_bcast(h, j->out, j->bytes, j->root);
    case MCA_COLL_GPU_HIER_ALLGATHER:
        return gpu_hier_allgather(h, j->in, j->out, j->bytes);
    default:
        return GPU_ERR_INVALID;
    }
}

static void *gpu_hnb_main(void *arg)
{
    struct mca_coll_gpu_hier_nb *t = arg;

    gpu_hnb_self = t;
    for (;;) {
        gpu_hnb_job_t *j;
        pthread_mutex_lock(&t->lock);
        while (NULL == t->head && !t->stop) {
            pthread_cond_wait(&t->cond, &t->lock);
        }
        j = t->head;
        if (NULL == j) {
            pthread_mutex_unlock(&t->lock);
            return NULL;   /* stopped, nothing left */
        }
        t->head = j->next;
        if (NULL == t->head) {
            t->tail = NULL;
        }
        pthread_mutex_unlock(&t->lock);
        /* the device the application called on (a thread starts on device 0) */
        j->st = cudaSuccess == cudaSetDevice(j->device) ? gpu_hnb_exec(j->hier, j)
                                                         : GPU_ERR_CUDA;
        __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);   /* j is progress's from here */
    }
}

static struct mca_coll_gpu_hier_nb *gpu_hnb_thread(mca_coll_gpu_module_t *m)
{
    struct mca_coll_gpu_hier_nb *t = m->hier_nb;

    if (NULL != t) {
        return t;
    }
    t = calloc(1, sizeof(*t));
    if (NULL == t) {
        return NULL;
    }
    pthread_mutex_init(&t->lock, NULL);
    pthread_cond_init(&t->cond, NULL);
    pthread_cond_init(&t->mb.done, NULL);
    if (0 != pthread_create(&t->thread, NULL, gpu_hnb_main, t)) {
        pthread_cond_destroy(&t->mb.done);
        pthread_cond_destroy(&t->cond);
        pthread_mutex_destroy(&t->lock);
        free(t);
        return NULL;
    }
    m->hier_nb = t;
    return t;
}

/*
 * The node engine's host exchanges (a node step of a node of several
 * ranks may agree on something with its node: coll_gpu_hier.c gives the
 * node engine these ops).  On an application's thread: the communicator's
 * own bounded allgather.  On the hierarchy's thread, where nothing of Open
 * MPI may run: posted here, started and finished by progress on the
 * application's thread (gpu_hnb_serve, from the running call's test), the
 * thread waiting for it at most coll_gpu_timeout.
 */
static gpu_status_t gpu_hnb_boot_allgather(void *ctx, const void *sbuf, void *rbuf, size_t bytes)
{
    struct mca_coll_gpu_hier_nb *t = gpu_hnb_self;
    struct timespec until;
    gpu_status_t st = GPU_ERR_TIMEOUT;

    if (NULL == t) {
        return mca_coll_gpu_comm_allgather(ctx, sbuf, rbuf, bytes);
    }
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t) mca_coll_gpu_timeout_s() + 1;
    pthread_mutex_lock(&t->lock);
    t->mb.comm = ctx;
    t->mb.sbuf = sbuf;
    t->mb.rbuf = rbuf;
    t->mb.bytes = bytes;
    t->mb.state = GPU_HNB_MB_POSTED;
    while (GPU_HNB_MB_DONE != t->mb.state) {
        if (ETIMEDOUT == pthread_cond_timedwait(&t->mb.done, &t->lock, &until)) {
            break;
        }
    }
    if (GPU_HNB_MB_DONE == t->mb.state) {
        st = t->mb.st;
        t->mb.state = GPU_HNB_MB_NONE;
    } else {
        /* progress never finished it: rbuf is not written from here on
         * (the node engine's error names the step) */
        t->mb.state = GPU_HNB_MB_STARTED == t->mb.state ? GPU_HNB_MB_ABANDONED
                                                        : GPU_HNB_MB_NONE;
    }
    pthread_mutex_unlock(&t->lock);
    return st;
}

const gpu_boot_ops_t mca_coll_gpu_hier_nb_boot = { .allgather = gpu_hnb_boot_allgather };

/* progress: start or finish the exchange the thread posted */
static void gpu_hnb_serve(struct mca_coll_gpu_hier_nb *t)
{
    pthread_mutex_lock(&t->lock);
    if (GPU_HNB_MB_POSTED == t->mb.state) {
        ompi_communicator_t *comm = t->mb.comm;
        const size_t n = (size_t) ompi_comm_size(comm), b = t->mb.bytes;
        t->mb.tmp = malloc(b * (n + 1));
        t->mb.req = MPI_REQUEST_NULL;
        if (NULL != t->mb.tmp) {
            memcpy(t->mb.tmp, t->mb.sbuf, b);
        }
        if (NULL == t->mb.tmp ||
            MPI_SUCCESS != comm->c_coll->coll_iallgather(t->mb.tmp, (int) b, MPI_BYTE,
                                                         t->mb.tmp + b, (int) b, MPI_BYTE, comm,
                                                         &t->mb.req,
                                                         comm->c_coll->coll_iallgather_module)) {
            t->mb.st = NULL == t->mb.tmp ? GPU_ERR_NO_MEMORY : GPU_ERR_BOOTSTRAP;
            free(t->mb.tmp);
            t->mb.tmp = NULL;
            t->mb.state = GPU_HNB_MB_DONE;
            pthread_cond_signal(&t->mb.done);
        } else {
            t->mb.state = GPU_HNB_MB_STARTED;
        }
    }
    if (GPU_HNB_MB_STARTED == t->mb.state || GPU_HNB_MB_ABANDONED == t->mb.state) {
        int done = 0;
        const int ret = ompi_request_test(&t->mb.req, &done, MPI_STATUS_IGNORE);
        if (OMPI_SUCCESS != ret || done) {
            if (GPU_HNB_MB_STARTED == t->mb.state) {
                if (OMPI_SUCCESS == ret) {
                    memcpy(t->mb.rbuf, t->mb.tmp + t->mb.bytes,
                           t->mb.bytes * (size_t) ompi_comm_size(t->mb.comm));
                }
                t->mb.st = OMPI_SUCCESS == ret ? GPU_OK : GPU_ERR_BOOTSTRAP;
                t->mb.state = GPU_HNB_MB_DONE;
                pthread_cond_signal(&t->mb.done);
            } else {
                t->mb.state = GPU_HNB_MB_NONE;
            }
            free(t->mb.tmp);
            t->mb.tmp = NULL;
        }
    }
    pthread_mutex_unlock(&t->lock);
}

/* progress: the thread's flag; the log line says the call ran here */
static gpu_status_t gpu_hnb_test(void *arg, int *peer)
{
    gpu_hnb_job_t *j = arg;

    if (NULL != j->t) {
        gpu_hnb_serve(j->t);
    }
    if (!__atomic_load_n(&j->done, __ATOMIC_ACQUIRE)) {
        return GPU_INPROGRESS;
    }
    *peer = -1;
    if (GPU_ERR_UNSUPPORTED == j->st) {
        /* declined on the thread, where staging is too late: the layout
         * checks before the start missed a case */
        opal_output(0, "coll/gpu: %s: nonblocking %s: the hierarchy declined the layout after "
                    "the start (%s); set coll_gpu_hier_nonblocking 0 to stage such calls",
                    j->comm_name, j->what, j->label);
    }
    opal_output_verbose(10, mca_coll_gpu_component.output,
                        "coll/gpu: %s: nonblocking %s ran on the hierarchy's thread (%s): %s",
                        j->comm_name, j->what, j->label, gpu_status_string(j->st));
    return j->st;
}

static void gpu_hnb_release(void *arg)
{
    gpu_hnb_job_t *j = arg;
    free(j->v);
    free(j->nbr);
    free(j);
}

static const mca_coll_gpu_req_ext_t gpu_hnb_ops = { .test = gpu_hnb_test,
                                                    .release = gpu_hnb_release };

static gpu_hier_coll_t gpu_hnb_coll(mca_coll_gpu_hier_kind_t kind)
{
    switch (kind) {
    case MCA_COLL_GPU_HIER_BCAST:
        return GPU_HIER_BCAST;
    case MCA_COLL_GPU_HIER_REDUCE:
        return GPU_HIER_REDUCE;
    case MCA_COLL_GPU_HIER_ALLGATHER:
        return GPU_HIER_ALLGATHER;
    case MCA_COLL_GPU_HIER_REDUCE_SCATTER_BLOCK:
        return GPU_HIER_REDUCE_SCATTER_BLOCK;
    default:
        return GPU_HIER_ALLREDUCE;
    }
}

/* The call in the hierarchy's terms, as the blocking run takes it
 * (coll_gpu_hier.c, coll_gpu_hier_v.c); 0 where it cannot be (the
 * eligibility said it can, so: no memory, or a layout the hierarchy
 * declines on every rank alike).  The label is asked for here: the thread
 * is idle or runs an earlier call, neither of which writes it. */
static int gpu_hnb_prep(mca_coll_gpu_module_t *m, const mca_coll_gpu_hier_call_t *call,
                        gpu_hnb_job_t *j)
{
    const int in_place = MPI_IN_PLACE == call->sbuf;
    const char *sbuf = in_place ? NULL : call->sbuf;
    mca_coll_gpu_geom_t g;

    j->kind = call->kind;
    j->root = call->root;
    j->hier = m->hier;
    if (MCA_COLL_GPU_HIER_NEIGHBOR == call->kind) {
        const char *name = "";
        j->nbr = mca_coll_gpu_hier_nbr_job(m, call->args, &name, &j->bytes, j->label,
                                           sizeof(j->label));
        snprintf(j->what, sizeof(j->what), "%s", name);
        return NULL != j->nbr;
    }
    if (call->kind >= MCA_COLL_GPU_HIER_GATHER) {
        const char *name = "";
        if ((MCA_COLL_GPU_HIER_SCAN == call->kind || MCA_COLL_GPU_HIER_EXSCAN == call->kind) &&
            !gpu_hier_scan_takes(m->hier)) {
            return 0;
        }
        j->v = mca_coll_gpu_hier_v_job(m, call, &name, &j->bytes, j->label, sizeof(j->label));
        snprintf(j->what, sizeof(j->what), "%s", name);
        return NULL != j->v;
    }
    snprintf(j->what, sizeof(j->what), "%s", gpu_hnb_names[call->kind]);
    if (MCA_COLL_GPU_HIER_BCAST == call->kind || MCA_COLL_GPU_HIER_ALLGATHER == call->kind) {
        if (!mca_coll_gpu_geom(call->dtype, &g)) {
            return 0;
        }
        j->bytes = (size_t) call->count * g.size;
        j->in = NULL != sbuf ? sbuf + g.lb : NULL;
        j->out = (char *) call->rbuf + g.lb;
        snprintf(j->label, sizeof(j->label), "%s",
                 gpu_hier_algo(m->hier, gpu_hnb_coll(call->kind), j->bytes, 1));
        return 1;
    }
    if (!mca_coll_gpu_map(call->dtype, call->op, &j->dt, &j->op)) {
        return 0;
    }
    j->count = (size_t) call->count;
    j->bytes = j->count * gpu_dtype_size(j->dt);
    j->in = MCA_COLL_GPU_HIER_ALLREDUCE == call->kind && in_place ? call->rbuf : sbuf;
    j->out = call->rbuf;
    snprintf(j->label, sizeof(j->label), "%s",
             gpu_hier_algo(m->hier, gpu_hnb_coll(call->kind), j->bytes, gpu_dtype_size(j->dt)));
    return 1;
}

#endif

int mca_coll_gpu_hier_nb_takes(const mca_coll_gpu_module_t *m, int kind)
{
#if GPUCOLL_HAVE_UCX
    return mca_coll_gpu_component.hier_nonblocking && MCA_COLL_GPU_BOOT_HIER == m->boot &&
           NULL != m->hier && kind >= 0 && kind <= MCA_COLL_GPU_HIER_NEIGHBOR;
#else
    (void) m;
    (void) kind;
    return 0;
#endif
}

int mca_coll_gpu_hier_nb_start(mca_coll_gpu_module_t *m, const mca_coll_gpu_hier_call_t *call,
                               ompi_request_t **req, int *ran)
{
    *ran = 0;
#if GPUCOLL_HAVE_UCX
    struct mca_coll_gpu_hier_nb *t;
    mca_coll_gpu_request_t *r;
    mca_coll_gpu_trace_t trace;
    gpu_hnb_job_t *j;
    int ret;

    /* the same answer on every rank: the eligibility asked the same */
    if (!mca_coll_gpu_hier_nb_takes(m, call->kind)) {
        return MPI_SUCCESS;
    }
    j = calloc(1, sizeof(*j));
    if (NULL == j || !gpu_hnb_prep(m, call, j)) {
        free(j);
        return NULL == j ? MPI_ERR_NO_MEM : MPI_SUCCESS;
    }
    *ran = 1;   /* from here the peers count on this rank's part */
    if (cudaSuccess != cudaGetDevice(&j->device)) {
        j->device = 0;
    }
    snprintf(j->comm_name, sizeof(j->comm_name), "%s", m->comm->c_name);
    ret = mca_coll_gpu_request_start(m, req, &r);
    if (MPI_SUCCESS != ret) {
        gpu_hnb_release(j);
        return ret;
    }
    t = gpu_hnb_thread(m);
    if (NULL == t) {
        /* no thread on this rank: the call fails here, and its peers time
         * out naming this rank */
        j->st = GPU_ERR_NO_MEMORY;
        j->done = 1;
    }
    j->t = t;
    mca_coll_gpu_request_ext(r, &gpu_hnb_ops, j, j->what);
    mca_coll_gpu_trace_begin(&trace, j->what, j->bytes, j->label);
    mca_coll_gpu_request_commit(r, 1, &trace, call->behind);
    if (NULL != t) {
        pthread_mutex_lock(&t->lock);
        if (NULL == t->tail) {
            t->head = j;
        } else {
            t->tail->next = j;
        }
        t->tail = j;
        pthread_cond_signal(&t->cond);
        pthread_mutex_unlock(&t->lock);
    }
    return MPI_SUCCESS;
#else
    (void) m;
    (void) call;
    (void) req;
    return MPI_SUCCESS;
#endif
}

void mca_coll_gpu_hier_nb_free(mca_coll_gpu_module_t *m)
{
#if GPUCOLL_HAVE_UCX
    struct mca_coll_gpu_hier_nb *t = m->hier_nb;

    if (NULL == t) {
        return;
    }
    /* every request holds the module: none is left when it goes, so the
     * thread has nothing queued and ends at once */
    pthread_mutex_lock(&t->lock);
    t->stop = 1;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    if (GPU_HNB_MB_ABANDONED == t->mb.state) {
        /* a host exchange given up on: its request keeps its buffer */
        t->mb.tmp = NULL;
    }
    pthread_cond_destroy(&t->mb.done);
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
    free(t);
#endif
    m->hier_nb = NULL;
}
