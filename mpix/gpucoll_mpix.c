/*
 * libgpucoll: MPICH's stream extension (MPIX_Stream, MPIX_*_enqueue) for
 * Open MPI with coll/gpu.
 *
 * A stream is an MPIX_Stream object: a CUDA stream given through an info
 * ("type" = "cudaStream_t", "value" = its handle in hex), or, from
 * MPI_INFO_NULL, the calling thread itself.  MPIX_Stream_comm_create dups
 * the communicator and attaches the stream to the copy as an attribute of
 * this library's keyval, with the per-communicator state below.
 *
 * An enqueued collective on a CUDA stream runs as kernels on the stream
 * where coll/gpu can (allreduce and alltoall, gpucoll_mpix_abi.h).  Else it
 * is three pieces of stream work, so it is ordered with the application's
 * kernels and can be captured into a graph: copies of the inputs into
 * pinned host memory, a host function that runs the collective on those
 * copies, and copies of the results back.  CUDA runs host functions on a
 * thread of its own, where neither Open MPI (below MPI_THREAD_MULTIPLE)
 * nor CUDA may be called, so the host function runs the library's own
 * transport between the ranks (gpucoll_mpix_shm.h: a node's shared memory,
 * or coll/gpu's network across nodes), with ops and
 * types resolved here on the application's thread.  A communicator whose
 * transport could not be made, a datatype with gaps the transport cannot
 * move, and every call of
 * a program that runs MPI_THREAD_MULTIPLE (the transport has not passed on
 * GPUs yet) go through coll/gpu's host entry (the previous coll module,
 * bounded by coll_gpu_timeout), which needs MPI_THREAD_MULTIPLE.
 * A captured call has pinned buffers of its own, kept as
 * long as its communicator (a graph may replay it any number of times);
 * eager calls share one pinned area per communicator (the stream runs them
 * one after another) and their descriptors go back to a free list once the
 * stream has passed them, so a steady stream of calls allocates nothing.
 * An error inside a host function (a timeout)
 * is reported by the next enqueue on that communicator; the stream goes on.
 * The transport's host function only hands the call to the library's
 * progress thread and the stream waits on the GPU for the call's flag
 * (gpucoll_mpix_prog.c): no host function waits for a peer.  Point to
 * point (gpucoll_mpix_p2p.c) moves device buffers between the node's ranks
 * by CUDA IPC, one copy (gpucoll_mpix_p2p_ipc.c).
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "mpix/gpucoll_mpix_abi.h"
#include "mpix/gpucoll_mpix_plan.h"
#include "mpix/gpucoll_mpix_int.h"
#include "mpix/gpucoll_mpix_shm.h"
#include "mpix/mpix_gpu.h"

typedef struct gc_desc {
    struct gc_desc *next_all;  /* every descriptor of the communicator */
    struct gc_desc *next_free; /* eager ones the stream has passed */
    gpucoll_mpix_call_t call;  /* buffers point into the pinned copies */
    MPI_Count total;           /* one-buffer calls above INT_MAX elements run in chunks */
    void *hs, *hr;             /* pinned copies (NULL when not needed) */
    void *own;                 /* a captured call's own pinned block (hs, hr in it) */
    struct gc_comm *owner;
    int persistent;            /* captured: kept until the communicator is freed */
    int shm;                   /* through the host transport (sc), else call */
    gcs_coll_t sc;
    gc_ufold_t fold;           /* fold.lay: a user op's type with gaps */
    const char *fn;
    gc_job_t job;              /* the transport's call, stepped by the progress thread */
} gc_desc_t;

struct gc_comm {
    MPIX_Stream stream;
    pthread_mutex_t lock;
    gc_desc_t *all;            /* every descriptor made for this communicator */
    gc_desc_t *free_list;      /* eager ones the stream has passed */
    /* Eager calls run one after another in the stream's order (each one's
     * copies back precede the next one's copies in), so they share one
     * pinned area.  It grows by doubling; the areas it outgrew stay until
     * the communicator is freed, as calls still queued may use them. */
    void *stage;
    size_t stage_bytes;
    struct gc_area *retired;
    int pending_error;         /* from a host function, reported once */
    gcs_t *shm;                /* the host transport; NULL across nodes */
    gc_p2p_t *p2p;             /* point-to-point descriptors (gpucoll_mpix_p2p.c) */
    struct gc_kred *kred;      /* device scratch of gc_kred_enqueue */
    gc_flags_t *flags;         /* what the stream waits on (gpucoll_mpix_prog.c) */
};

typedef struct gc_area {
    struct gc_area *next;
    void *p;
} gc_area_t;

static int gc_keyval = MPI_KEYVAL_INVALID;
static pthread_mutex_t gc_global = PTHREAD_MUTEX_INITIALIZER;

int gc_fail(int code, const char *fn, const char *why)
{
    fprintf(stderr, "%s: %s\n", fn, why);
    return code;
}

/* ---- the stream communicator ------------------------------------------------- */

static void gc_desc_free(gc_desc_t *d)
{
    gc_layout_free(&d->fold.lay);
    if (NULL != d->own) {
        (void) cudaFreeHost(d->own);
    }
    free(d);
}

/* the communicator is being freed: the application synchronized its
 * stream before (as MPI_Comm_free of a stream communicator requires) */
static int gc_comm_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    gc_comm_t *c = attr;
    (void) comm;
    (void) keyval;
    (void) extra;
    while (NULL != c->all) {
        gc_desc_t *d = c->all;
        c->all = d->next_all;
        gc_desc_free(d);
    }
    while (NULL != c->retired) {
        gc_area_t *a = c->retired;
        c->retired = a->next;
        (void) cudaFreeHost(a->p);
        free(a);
    }
    if (NULL != c->stage) {
        (void) cudaFreeHost(c->stage);
    }
    gc_p2p_release(c);
    gc_kred_release(c);
    gc_flags_free(c->flags);
    gcs_destroy(c->shm);
    pthread_mutex_destroy(&c->lock);
    free(c);
    return MPI_SUCCESS;
}

int MPIX_Stream_comm_create(MPI_Comm comm, MPIX_Stream stream, MPI_Comm *newcomm)
{
    gc_comm_t *c;
    int ret;

    if (NULL == newcomm || MPIX_STREAM_NULL == stream) {
        return gc_fail(MPI_ERR_ARG, "MPIX_Stream_comm_create", "no stream or output");
    }
    pthread_mutex_lock(&gc_global);
    ret = MPI_KEYVAL_INVALID == gc_keyval
          ? MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, gc_comm_delete, &gc_keyval, NULL)
          : MPI_SUCCESS;
    pthread_mutex_unlock(&gc_global);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    c = calloc(1, sizeof(*c));
    if (NULL == c) {
        return MPI_ERR_NO_MEM;
    }
    c->stream = stream;
    pthread_mutex_init(&c->lock, NULL);
    ret = MPI_Comm_dup(comm, newcomm);
    if (MPI_SUCCESS == ret) {
        ret = MPI_Comm_set_attr(*newcomm, gc_keyval, c);
        if (MPI_SUCCESS != ret) {
            MPI_Comm_free(newcomm);
        }
    }
    if (MPI_SUCCESS == ret && stream->is_cuda) {
        /* collective: the host transport of the node's ranks */
        const double limit = NULL != gc_abi() && gc_abi()->version >= 4 ? gc_abi()->timeout_s()
                                                                         : 0.0;
        ret = gcs_create(*newcomm, limit, &c->shm);
        /* across nodes the same transport over coll/gpu's network */
        if (MPI_SUCCESS == ret && NULL == c->shm) {
            ret = gcs_net_create(*newcomm, limit, gc_abi(), &c->shm);
        }
        if (MPI_SUCCESS == ret && NULL != c->shm && gc_verbose()) {
            fprintf(stderr, "gpucoll: rank %d: host transport of a stream communicator: %s\n",
                    gcs_rank(c->shm), gcs_by_reference(c->shm)
                    ? "the node's shared memory" : "coll/gpu's network (across nodes)");
        }
        /* the same on every rank: which peers map this rank's buffers */
        if (MPI_SUCCESS == ret && NULL != c->shm) {
            ret = gc_p2p_setup(c, *newcomm, limit);
        }
        if (MPI_SUCCESS != ret) {
            MPI_Comm_free(newcomm);
            return ret;   /* the attribute's delete callback freed c */
        }
    }
    if (MPI_SUCCESS == ret && stream->is_cuda && NULL != gc_abi() && gc_abi()->version >= 2) {
        /* collective like this call: the GPU state of the kernel path now,
         * not at an enqueue (which must neither wait nor allocate) */
        ret = gc_abi()->stream_comm_prepare(*newcomm);
        if (MPI_SUCCESS != ret) {
            MPI_Comm_free(newcomm);
            return ret;   /* the attribute's delete callback freed c */
        }
    }
    if (MPI_SUCCESS != ret) {
        pthread_mutex_destroy(&c->lock);
        free(c);
    }
    return ret;
}

int gc_verbose(void)
{
    const char *env = getenv("GPUCOLL_STREAM_VERBOSE");
    return NULL != env && atoi(env) > 0;
}

gc_comm_t *gc_comm_of(MPI_Comm comm)
{
    void *attr = NULL;
    int flag = 0;
    if (MPI_KEYVAL_INVALID == gc_keyval || MPI_COMM_NULL == comm ||
        MPI_SUCCESS != MPI_Comm_get_attr(comm, gc_keyval, &attr, &flag) || !flag) {
        return NULL;
    }
    return attr;
}

gcs_t *gc_comm_shm(gc_comm_t *c)
{
    return c->shm;
}

MPIX_Stream gc_comm_stream(gc_comm_t *c)
{
    return c->stream;
}

gc_p2p_t **gc_comm_p2p(gc_comm_t *c)
{
    return &c->p2p;
}

struct gc_kred **gc_comm_kred(gc_comm_t *c)
{
    return &c->kred;
}

gc_flags_t **gc_comm_flags(gc_comm_t *c)
{
    return &c->flags;
}

int gc_comm_take_error(gc_comm_t *c)
{
    int ret;
    pthread_mutex_lock(&c->lock);
    ret = c->pending_error;
    c->pending_error = MPI_SUCCESS;
    pthread_mutex_unlock(&c->lock);
    return ret;
}

void gc_comm_set_error(gc_comm_t *c, int code)
{
    pthread_mutex_lock(&c->lock);
    if (MPI_SUCCESS == c->pending_error) {
        c->pending_error = code;
    }
    pthread_mutex_unlock(&c->lock);
}

/* MPICH's: the stream of a stream communicator (MPIX_STREAM_NULL for
 * others); idx is for MPICH's multiplex communicators, which this library
 * does not make: 0 (or -1) only */
int MPIX_Comm_get_stream(MPI_Comm comm, int idx, MPIX_Stream *stream)
{
    gc_comm_t *c = gc_comm_of(comm);
    if (NULL == stream || idx > 0 || idx < -1) {
        return gc_fail(MPI_ERR_ARG, "MPIX_Comm_get_stream", "no output, or an index other "
                       "than 0 (multiplex stream communicators are not made here)");
    }
    *stream = NULL != c ? c->stream : MPIX_STREAM_NULL;
    return MPI_SUCCESS;
}

/* MPICH's: progress for a stream.  Nothing here waits for it: a CUDA
 * stream's host functions drive the host transport themselves, and a
 * stream made from MPI_INFO_NULL is the calling thread, whose MPI calls
 * progress as any. */
int MPIX_Stream_progress(MPIX_Stream stream)
{
    (void) stream;
    return MPI_SUCCESS;
}

/* coll/gpu's entry, or NULL when coll/gpu is not loaded into this process */
const gpucoll_mpix_abi_t *gc_abi(void)
{
    static const gpucoll_mpix_abi_t *abi;
    static int looked;
    if (!looked) {
        const gpucoll_mpix_abi_t *a = dlsym(RTLD_DEFAULT, GPUCOLL_MPIX_ABI_SYMBOL);
        /* version 1 has the host path; the kernel path needs version 2 */
        abi = (NULL != a && a->version >= 1) ? a : NULL;
        looked = 1;
    }
    return abi;
}

/* ---- one collective ------------------------------------------------------------ */

/* bytes from the lowest to the highest byte count elements of t touch,
 * and where that span starts relative to the buffer (t's true lower bound,
 * whatever the count: one buffer copied in and out keeps one offset) */
static int gc_span(MPI_Datatype t, MPI_Count count, size_t *bytes, MPI_Aint *lb_out)
{
    MPI_Aint lb, ext, tlb, text;
    if (MPI_SUCCESS != MPI_Type_get_extent(t, &lb, &ext) ||
        MPI_SUCCESS != MPI_Type_get_true_extent(t, &tlb, &text)) {
        return MPI_ERR_TYPE;
    }
    *bytes = count > 0 ? (size_t) ((count - 1) * ext + text) : 0;
    *lb_out = tlb;
    return MPI_SUCCESS;
}

static int gc_run(const gpucoll_mpix_call_t *call, MPI_Count total, int cuda_thread);

/* the host function of Open MPI's path (MPI_THREAD_MULTIPLE): runs the
 * call on CUDA's thread once the stream reaches it */
static void gc_host_fn(void *arg)
{
    gc_desc_t *d = arg;
    const int ret = gc_run(&d->call, d->total, 1);
    if (MPI_SUCCESS != ret) {
        gc_comm_set_error(d->owner, ret);
    }
}

/* the transport's host function: hands the call over, waits for nothing */
static void gc_post_coll_fn(void *arg)
{
    gc_prog_post(&((gc_desc_t *) arg)->job);
}

/* after the copies back: an eager call's descriptor can be used again */
static void gc_release_fn(void *arg)
{
    gc_desc_t *d = arg;
    pthread_mutex_lock(&d->owner->lock);
    d->next_free = d->owner->free_list;
    d->owner->free_list = d;
    pthread_mutex_unlock(&d->owner->lock);
}

/* run call now: through coll/gpu's host entry on CUDA's thread, through
 * MPI on the calling thread (an MPI_INFO_NULL stream).  total is the count
 * of one-buffer calls (allreduce, bcast, reduce), which go in pieces of
 * INT_MAX elements above it; the others carry theirs in call. */
static int gc_run(const gpucoll_mpix_call_t *call, MPI_Count total, int cuda_thread)
{
    MPI_Aint lb, ext = 0;
    MPI_Count done = 0;

    if (call->coll <= GPUCOLL_MPIX_REDUCE && total > INT_MAX) {
        MPI_Type_get_extent(call->stype, &lb, &ext);
    }
    do {
        gpucoll_mpix_call_t c = *call;
        const MPI_Count piece = total - done > INT_MAX ? INT_MAX : total - done;
        int ret;
        if (call->coll <= GPUCOLL_MPIX_REDUCE) {
            c.scount = (int) piece;
            if (MPI_IN_PLACE != c.sendbuf && NULL != c.sendbuf) {
                c.sendbuf = (const char *) c.sendbuf + done * ext;
            }
            if (NULL != c.recvbuf) {
                c.recvbuf = (char *) c.recvbuf + done * ext;
            }
        }
        if (cuda_thread) {
            ret = gc_abi()->host_collective(&c);
        } else {
            switch (c.coll) {
            case GPUCOLL_MPIX_ALLREDUCE:
                ret = MPI_Allreduce(c.sendbuf, c.recvbuf, c.scount, c.stype, c.op, c.comm);
                break;
            case GPUCOLL_MPIX_BCAST:
                ret = MPI_Bcast(c.recvbuf, c.scount, c.stype, c.root, c.comm);
                break;
            case GPUCOLL_MPIX_REDUCE:
                ret = MPI_Reduce(c.sendbuf, c.recvbuf, c.scount, c.stype, c.op, c.root, c.comm);
                break;
            case GPUCOLL_MPIX_ALLGATHER:
                ret = MPI_Allgather(c.sendbuf, c.scount, c.stype, c.recvbuf, c.rcount, c.rtype,
                                    c.comm);
                break;
            case GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK:
                ret = MPI_Reduce_scatter_block(c.sendbuf, c.recvbuf, c.rcount, c.rtype, c.op,
                                               c.comm);
                break;
            default:
                ret = MPI_Alltoall(c.sendbuf, c.scount, c.stype, c.recvbuf, c.rcount, c.rtype,
                                   c.comm);
                break;
            }
        }
        if (MPI_SUCCESS != ret) {
            return ret;
        }
        done += piece;
    } while (done < total);
    return MPI_SUCCESS;
}

/* what this rank copies in and out, in elements of stype (in) and rtype (out) */
static void gc_extents(const gc_args_t *a, int rank, int n, MPI_Count *in_count,
                       MPI_Count *out_count,
                       int *in_from_recvbuf)
{
    *in_from_recvbuf = MPI_IN_PLACE == a->sendbuf;
    switch (a->coll) {
    case GPUCOLL_MPIX_ALLREDUCE:
        *in_count = a->scount;
        *out_count = a->scount;
        break;
    case GPUCOLL_MPIX_BCAST:
        *in_count = rank == a->root ? a->scount : 0;
        *out_count = rank == a->root ? 0 : a->scount;
        *in_from_recvbuf = 1;
        break;
    case GPUCOLL_MPIX_REDUCE:
        *in_count = a->scount;
        *out_count = rank == a->root ? a->scount : 0;
        break;
    case GPUCOLL_MPIX_ALLGATHER:
        /* in place: this rank's block sits in recvbuf; the whole buffer goes */
        *in_count = *in_from_recvbuf ? a->rcount * n : a->scount;
        *out_count = a->rcount * n;
        break;
    case GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK:
        *in_count = a->rcount * n;
        *out_count = a->rcount;
        break;
    default:
        *in_count = *in_from_recvbuf ? a->rcount * n : a->scount * n;
        *out_count = a->rcount * n;
        break;
    }
}

/* pinned host memory, also while the application captures in global mode
 * (an allocation is an unsafe call there: this thread's is the library's own) */
void *gc_pinned(size_t bytes)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    void *p = NULL;
    (void) cudaThreadExchangeStreamCaptureMode(&mode);
    if (cudaSuccess != cudaMallocHost(&p, bytes)) {
        p = NULL;
    }
    (void) cudaThreadExchangeStreamCaptureMode(&mode);
    return p;
}

void *gc_pinned_mapped(size_t bytes)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    void *p = NULL;
    (void) cudaThreadExchangeStreamCaptureMode(&mode);
    if (cudaSuccess != cudaHostAlloc(&p, bytes, cudaHostAllocMapped | cudaHostAllocPortable)) {
        p = NULL;
    }
    (void) cudaThreadExchangeStreamCaptureMode(&mode);
    return p;
}

/* a descriptor whose hs (hs_bytes) and hr (hr_bytes) are pinned: a captured
 * call's own, an eager call's in the communicator's shared area */
static gc_desc_t *gc_desc_get(gc_comm_t *c, size_t hs_bytes, size_t hr_bytes, int persistent)
{
    const size_t hs_room = (hs_bytes + 255) & ~(size_t) 255;
    const size_t need = hs_room + hr_bytes;
    gc_desc_t *d = NULL;
    char *base = NULL;

    pthread_mutex_lock(&c->lock);
    if (!persistent && NULL != c->free_list) {
        d = c->free_list;
        c->free_list = d->next_free;
    }
    pthread_mutex_unlock(&c->lock);
    if (NULL == d) {
        d = calloc(1, sizeof(*d));
        if (NULL == d) {
            return NULL;
        }
        d->owner = c;
        pthread_mutex_lock(&c->lock);
        d->next_all = c->all;
        c->all = d;
        pthread_mutex_unlock(&c->lock);
    }
    if (NULL == d->job.flag &&
        MPI_SUCCESS != gc_flag_get(&c->flags, &d->job.flag, &d->job.flag_dev)) {
        d->job.flag = NULL;   /* the descriptor stays on the list: tried again */
        return NULL;
    }
    d->persistent = persistent;
    if (persistent && need > 0) {
        base = d->own = gc_pinned(need);
    } else if (need > 0) {
        pthread_mutex_lock(&c->lock);
        if (c->stage_bytes < need) {
            const size_t grow = 2 * c->stage_bytes > need ? 2 * c->stage_bytes : need;
            gc_area_t *old = NULL != c->stage ? malloc(sizeof(*old)) : NULL;
            void *p = (NULL == c->stage || NULL != old) ? gc_pinned(grow) : NULL;
            if (NULL != p) {
                if (NULL != old) {
                    old->p = c->stage;
                    old->next = c->retired;
                    c->retired = old;
                }
                c->stage = p;
                c->stage_bytes = grow;
            } else {
                free(old);
            }
        }
        base = c->stage_bytes >= need ? c->stage : NULL;
        pthread_mutex_unlock(&c->lock);
    }
    if (need > 0 && NULL == base) {
        /* back to the free list: the descriptor itself is sound */
        pthread_mutex_lock(&c->lock);
        d->next_free = c->free_list;
        c->free_list = d;
        pthread_mutex_unlock(&c->lock);
        return NULL;
    }
    d->hs = 0 != hs_bytes ? base : NULL;
    d->hr = 0 != hr_bytes ? base + hs_room : NULL;
    return d;
}

int gc_enqueue(const gc_args_t *a)
{
    gc_comm_t *c = gc_comm_of(a->comm);
    MPI_Count in_count, out_count;
    size_t in_bytes, out_bytes, in_room, out_room;
    MPI_Aint in_lb, out_lb;
    int rank, n, in_from_recvbuf, level, ret, one_buffer, shm, gapped;
    gc_gaps_t gaps;
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    cudaStream_t st;
    gc_desc_t *d, plan;
    gpucoll_mpix_call_t call;
    char *hin, *hout;
    const char *uin;

    if (NULL == c) {
        return gc_fail(MPI_ERR_COMM, a->fn, "the communicator has no stream: make it with "
                       "MPIX_Stream_comm_create");
    }
    if (a->scount < 0 || a->rcount < 0) {
        return gc_fail(MPI_ERR_COUNT, a->fn, "negative count");
    }
    if (a->coll > GPUCOLL_MPIX_REDUCE && (a->scount > INT_MAX || a->rcount > INT_MAX)) {
        return gc_fail(MPI_ERR_COUNT, a->fn, "counts above INT_MAX are taken by the allreduce, "
                       "bcast and reduce forms only (Open MPI's coll interface counts in int)");
    }
    call.coll = a->coll;
    call.sendbuf = a->sendbuf;
    call.recvbuf = a->recvbuf;
    call.scount = a->scount > INT_MAX ? INT_MAX : (int) a->scount;   /* gc_run cuts above */
    call.rcount = (int) a->rcount;
    call.stype = a->stype;
    call.rtype = a->rtype;
    call.op = a->op;
    call.root = a->root;
    call.comm = a->comm;
    if (!c->stream->is_cuda) {
        /* the calling thread is the stream: in its order means now */
        return gc_run(&call, a->scount, 0);
    }
    if (NULL == gc_abi()) {
        return gc_fail(MPI_ERR_OTHER, a->fn, "coll/gpu is not loaded into this Open MPI "
                       "(ompi_info | grep 'coll: gpu'; module load gpucoll): enqueued "
                       "collectives on a CUDA stream need it");
    }
    ret = gc_comm_take_error(c);
    if (MPI_SUCCESS != ret) {
        return ret;   /* an earlier enqueued call of this communicator failed */
    }
    if (GPUCOLL_MPIX_ALLREDUCE == a->coll && gc_abi()->version >= 2) {
        /* an allreduce as kernels on the stream, where coll/gpu can */
        ret = gc_abi()->stream_allreduce(a->sendbuf, a->recvbuf, a->scount, a->stype, a->op,
                                         a->comm, c->stream->cuda);
        if (GPUCOLL_MPIX_NOT_TAKEN != ret) {
            return ret;
        }
    }
    ret = gc_kred_enqueue(c, a);   /* pair-type reduce(_scatter_block) on the kernels */
    if (GPUCOLL_MPIX_NOT_TAKEN != ret) {
        return ret;
    }
    if (GPUCOLL_MPIX_ALLTOALL == a->coll && gc_abi()->version >= 3) {
        ret = gc_abi()->stream_alltoall(a->sendbuf, a->scount, a->stype, a->recvbuf, a->rcount,
                                        a->rtype, a->comm, c->stream->cuda);
        if (GPUCOLL_MPIX_NOT_TAKEN != ret) {
            return ret;
        }
    }
    /* The host transport only where Open MPI may not be called from CUDA's
     * thread (below MPI_THREAD_MULTIPLE): on 4x H100 test_mpix_stream failed
     * through it (no answer at one rank per GPU, wrong MPI_INT sums with
     * ranks sharing a GPU), so programs that ask for MPI_THREAD_MULTIPLE
     * keep the path that has run on GPUs.  A datatype with gaps always takes
     * the transport: Open MPI's path would copy the gaps back. */
    MPI_Query_thread(&level);
    memset(&gaps, 0, sizeof(gaps));
    memset(&plan.fold, 0, sizeof(plan.fold));
    gapped = gc_gaps_needed(MPI_IN_PLACE == a->sendbuf || GPUCOLL_MPIX_BCAST == a->coll
                            ? a->rtype : a->stype) || gc_gaps_needed(a->rtype);
    shm = (level < MPI_THREAD_MULTIPLE || gapped) && NULL != c->shm &&
          gc_plan(a, gc_abi(), &plan.sc, &plan.fold, &gaps);
    if (!shm && gapped) {
        return gc_fail(MPI_ERR_TYPE, a->fn, "this datatype with gaps is not taken on a CUDA "
                       "stream (a subarray, darray or Fortran type, a layout of more than "
                       "4096 runs, a pair type folded inside a derived type, or send and "
                       "receive blocks of different lengths)");
    }
    if (!shm) {
        if (level < MPI_THREAD_MULTIPLE) {
            return gc_fail(MPI_ERR_OTHER, a->fn, NULL == c->shm
                           ? "this stream communicator has no host transport (its ranks "
                             "span nodes and coll/gpu's network could not start there, or its "
                             "shared-memory segment could not be made): its collectives run "
                             "through Open MPI on CUDA's host-function thread, which needs "
                             "MPI_Init_thread(MPI_THREAD_MULTIPLE)"
                           : "this op or datatype (a Fortran op, or a type with gaps) runs "
                             "through Open MPI on CUDA's host-function thread, which needs "
                             "MPI_Init_thread(MPI_THREAD_MULTIPLE)");
        }
    }
    if (shm && MPI_SUCCESS != (ret = gc_prog_start(a->fn))) {
        gc_plan_free(&gaps, &plan.fold);
        return ret;
    }
    MPI_Comm_rank(a->comm, &rank);
    MPI_Comm_size(a->comm, &n);
    gc_extents(a, rank, n, &in_count, &out_count, &in_from_recvbuf);
    /* bcast and in-place calls have one buffer, in and out */
    one_buffer = in_from_recvbuf;
    if (MPI_SUCCESS != gc_span(one_buffer ? a->rtype : a->stype, in_count, &in_bytes, &in_lb) ||
        MPI_SUCCESS != gc_span(a->rtype, out_count, &out_bytes, &out_lb)) {
        gc_plan_free(&gaps, &plan.fold);
        return gc_fail(MPI_ERR_TYPE, a->fn, "datatype without an extent");
    }
    /* a side with gaps is copied packed: its bytes only, from offset 0 */
    if (gaps.in_on) {
        in_bytes = (size_t) in_count * gaps.in.size;
        in_lb = 0;
    }
    if (gaps.out_on) {
        out_bytes = (size_t) out_count * gaps.out.size;
        out_lb = 0;
    }
    st = c->stream->cuda;
    if (cudaSuccess != cudaStreamIsCapturing(st, &cap)) {
        gc_plan_free(&gaps, &plan.fold);
        return gc_fail(MPI_ERR_OTHER, a->fn, "the stream given to MPIX_Stream_create is not a "
                       "valid CUDA stream of this process");
    }
    /* the staging copies' room: the transport folds whole extents (a padded
     * pair type's last one too), the copies move the true spans */
    in_room = in_bytes;
    out_room = out_bytes;
    if (shm && plan.sc.esize > 0) {
        in_room = (size_t) in_count * plan.sc.esize > in_room ? (size_t) in_count * plan.sc.esize
                                                             : in_room;
        out_room = (size_t) out_count * plan.sc.esize > out_room
                       ? (size_t) out_count * plan.sc.esize : out_room;
    }
    d = gc_desc_get(c, one_buffer ? (in_room > out_room ? in_room : out_room) : in_room,
                    one_buffer ? 0 : out_room, cudaStreamCaptureStatusActive == cap);
    if (NULL == d) {
        gc_plan_free(&gaps, &plan.fold);
        return gc_fail(MPI_ERR_NO_MEM, a->fn, "no pinned host memory for the staging copies");
    }
    d->call = call;
    d->total = a->scount;
    d->fn = a->fn;
    d->shm = shm;
    /* the copies keep the user's offsets: the collective sees the same layout */
    hin = (char *) d->hs - in_lb;
    hout = one_buffer ? (char *) d->hs - out_lb : NULL != d->hr ? (char *) d->hr - out_lb : NULL;
    uin = one_buffer ? (const char *) a->recvbuf : (const char *) a->sendbuf;
    if (gaps.in_on ? cudaSuccess != gc_gaps_copy(&gaps.in, in_count, (char *) uin, d->hs, 1, st)
                   : in_bytes > 0 && cudaSuccess != cudaMemcpyAsync(hin + in_lb, uin + in_lb,
                                                                   in_bytes, cudaMemcpyDefault,
                                                                   st)) {
        goto fail_stream;
    }
    if (one_buffer) {
        d->call.sendbuf = a->coll == GPUCOLL_MPIX_BCAST ? NULL : MPI_IN_PLACE;
        d->call.recvbuf = (char *) d->hs - in_lb;
    } else {
        d->call.sendbuf = hin;
        d->call.recvbuf = out_bytes > 0 ? hout : NULL;
    }
    if (shm) {
        /* the transport's dense view: the spans start at the pinned copies */
        d->sc = plan.sc;
        gc_layout_free(&d->fold.lay);   /* a reused descriptor's */
        d->fold = plan.fold;
        memset(&plan.fold.lay, 0, sizeof(plan.fold.lay));   /* the descriptor's now */
        d->sc.fold = &d->fold.f;
        d->sc.in = (const char *) d->hs;
        d->sc.out = one_buffer ? (char *) d->hs : (char *) d->hr;
        if (GPUCOLL_MPIX_ALLGATHER == a->coll && one_buffer) {
            d->sc.in = (const char *) d->hs + (size_t) rank * d->sc.bytes;
        }
    }
    if (shm) {
        /* the progress thread runs the call; the stream waits for its flag */
        d->job.kind = GC_JOB_COLL;
        d->job.t = c->shm;
        d->job.fn = a->fn;
        d->job.owner = c;
        d->job.sc = &d->sc;
        if (cudaSuccess != cudaLaunchHostFunc(st, gc_post_coll_fn, d)) {
            goto fail_stream;
        }
        ret = gc_prog_stream_wait(st, &d->job, a->fn);
        if (MPI_SUCCESS != ret) {
            gc_plan_free(&gaps, &plan.fold);
            return ret;
        }
    } else if (cudaSuccess != cudaLaunchHostFunc(st, gc_host_fn, d)) {
        goto fail_stream;
    }
    if (gaps.out_on ? cudaSuccess != gc_gaps_copy(&gaps.out, out_count, a->recvbuf,
                                                  one_buffer ? d->hs : d->hr, 0, st)
                    : out_bytes > 0 &&
                      cudaSuccess != cudaMemcpyAsync((char *) a->recvbuf + out_lb, hout + out_lb,
                                                     out_bytes, cudaMemcpyDefault, st)) {
        goto fail_stream;
    }
    if (!d->persistent && cudaSuccess != cudaLaunchHostFunc(st, gc_release_fn, d)) {
        goto fail_stream;
    }
    gc_plan_free(&gaps, &plan.fold);
    return MPI_SUCCESS;
fail_stream:
    gc_plan_free(&gaps, &plan.fold);
    return gc_fail(MPI_ERR_OTHER, a->fn, cudaGetErrorString(cudaGetLastError()));
}
