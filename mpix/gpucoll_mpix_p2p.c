/*
 * MPICH's point-to-point enqueue (MPIX_Send/Recv/Isend/Irecv_enqueue,
 * MPIX_Wait/Waitall_enqueue) on a stream communicator.
 *
 * On a CUDA stream each call is stream work, so it orders with the
 * application's kernels and can be captured into a graph: an isend copies
 * the buffer into pinned memory and then posts the message to the host
 * transport (gpucoll_mpix_shm.h) from a host function; an irecv copies the
 * buffer's current contents into pinned memory (a shorter message then
 * leaves the rest as it was) and posts the receive; a wait hands its
 * messages to the library's progress thread (gpucoll_mpix_prog.c), which
 * progresses every posted message of the communicator until they are done,
 * while the stream waits on the GPU for the wait's flag; then the received
 * data is copied back.  No host function calls Open MPI or CUDA, or waits,
 * so no thread level is needed.  The request the
 * application holds is a generalized request (MPI_Grequest_start), so it
 * is a real MPI handle; the wait enqueue frees it and sets it to
 * MPI_REQUEST_NULL, as MPICH does.  A captured call's state lives as long
 * as its communicator: a graph may replay it any number of times.
 *
 * On a stream made from MPI_INFO_NULL the calling thread is the stream:
 * the calls are MPI's own.  Peers on other nodes are not served (the host
 * transport is a node's shared memory): the call says so.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpix/gpucoll_mpix_int.h"
#include "mpix/gpucoll_mpix_shm.h"

typedef struct gc_preq {
    gcs_msg_t m;
    gc_comm_t *c;
    MPI_Request handle;        /* the application's, until its wait */
    char *user;                /* where the data starts in the application's buffer */
    void *pin;                 /* pinned staging of pin_bytes */
    size_t pin_bytes;
    int persistent;
    struct gc_preq *next_all, *next_free, *next_live;
} gc_preq_t;

typedef struct gc_pwait {
    gc_comm_t *c;
    int n, persistent;
    const char *fn;
    gc_preq_t **r;
    gcs_msg_t **m;
    gc_job_t job;              /* stepped by the progress thread */
    struct gc_pwait *next_all;
} gc_pwait_t;

struct gc_p2p {
    gc_preq_t *all, *free_list;
    gc_pwait_t *waits;         /* captured waits, kept */
};

/* the requests handed out and not yet waited for, all communicators */
static gc_preq_t *gc_live;
static pthread_mutex_t gc_p2p_lock = PTHREAD_MUTEX_INITIALIZER;

static int gc_greq_query(void *extra, MPI_Status *status)
{
    (void) extra;
    MPI_Status_set_elements(status, MPI_BYTE, 0);
    MPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return MPI_SUCCESS;
}

static int gc_greq_free(void *extra)
{
    (void) extra;
    return MPI_SUCCESS;
}

static int gc_greq_cancel(void *extra, int complete)
{
    (void) extra;
    (void) complete;
    return MPI_SUCCESS;
}

void gc_p2p_release(gc_comm_t *c)
{
    gc_p2p_t **pp = gc_comm_p2p(c), *p = *pp;
    if (NULL == p) {
        return;
    }
    while (NULL != p->all) {
        gc_preq_t *r = p->all;
        p->all = r->next_all;
        if (NULL != r->pin) {
            (void) cudaFreeHost(r->pin);
        }
        free(r);
    }
    while (NULL != p->waits) {
        gc_pwait_t *w = p->waits;
        p->waits = w->next_all;
        free(w);
    }
    free(p);
    *pp = NULL;
}

/* a descriptor with bytes of pinned staging: a captured call's own */
static gc_preq_t *gc_preq_get(gc_comm_t *c, size_t bytes, int persistent)
{
    gc_p2p_t **pp = gc_comm_p2p(c);
    gc_preq_t *r = NULL;

    pthread_mutex_lock(&gc_p2p_lock);
    if (NULL == *pp) {
        *pp = calloc(1, sizeof(**pp));
    }
    if (NULL != *pp && !persistent && NULL != (*pp)->free_list) {
        r = (*pp)->free_list;
        (*pp)->free_list = r->next_free;
    }
    if (NULL == r && NULL != *pp && NULL != (r = calloc(1, sizeof(*r)))) {
        r->next_all = (*pp)->all;
        (*pp)->all = r;
    }
    pthread_mutex_unlock(&gc_p2p_lock);
    if (NULL == r) {
        return NULL;
    }
    r->c = c;
    r->persistent = persistent;
    if (r->pin_bytes < bytes) {
        void *p = gc_pinned(bytes);
        if (NULL == p) {
            return NULL;   /* stays on the communicator's list, freed with it */
        }
        if (NULL != r->pin) {
            /* an eager descriptor's old area: the stream has passed its use */
            (void) cudaFreeHost(r->pin);
        }
        r->pin = p;
        r->pin_bytes = bytes;
    }
    return r;
}

static void gc_post_fn(void *arg)
{
    gc_preq_t *r = arg;
    gcs_post(gc_comm_shm(r->c), &r->m);
}

/* hands the wait over; waits for nothing */
static void gc_wait_fn(void *arg)
{
    gc_prog_post(&((gc_pwait_t *) arg)->job);
}

/* after the copies back: eager descriptors can be used again */
static void gc_wait_release_fn(void *arg)
{
    gc_pwait_t *w = arg;
    gc_p2p_t *p = *gc_comm_p2p(w->c);
    pthread_mutex_lock(&gc_p2p_lock);
    for (int i = 0; i < w->n; ++i) {
        if (!w->r[i]->persistent) {
            w->r[i]->next_free = p->free_list;
            p->free_list = w->r[i];
        }
    }
    pthread_mutex_unlock(&gc_p2p_lock);
    gc_flag_put(*gc_comm_flags(w->c), w->job.flag);
    free(w);
}

/* the start of the data and its bytes: elements end to end, no gap at
 * either end (the host transport moves bytes) */
static int gc_p2p_span(MPI_Datatype t, MPI_Count count, MPI_Aint *lb, size_t *bytes)
{
    MPI_Aint ext, tlb, text;
    if (MPI_SUCCESS != MPI_Type_get_extent(t, lb, &ext) ||
        MPI_SUCCESS != MPI_Type_get_true_extent(t, &tlb, &text) || *lb != tlb || ext != text) {
        return 0;
    }
    *bytes = (size_t) count * (size_t) ext;
    return 1;
}

static int gc_p2p_start(int send, const char *fn, void *buf, MPI_Count count, MPI_Datatype type,
                        int peer, int tag, MPI_Comm comm, MPI_Request *request)
{
    gc_comm_t *c = gc_comm_of(comm);
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    cudaStream_t st;
    MPI_Aint lb = 0;
    size_t bytes = 0;
    gc_preq_t *r;
    int ret, n;

    if (NULL == c) {
        return gc_fail(MPI_ERR_COMM, fn, "the communicator has no stream: make it with "
                       "MPIX_Stream_comm_create");
    }
    if (NULL == request || count < 0) {
        return gc_fail(MPI_ERR_ARG, fn, "no request, or a negative count");
    }
    if (!gc_comm_stream(c)->is_cuda) {
        /* the calling thread is the stream */
        if (count > INT_MAX) {
            return gc_fail(MPI_ERR_COUNT, fn, "above INT_MAX elements on a host stream");
        }
        return send ? MPI_Isend(buf, (int) count, type, peer, tag, comm, request)
                    : MPI_Irecv(buf, (int) count, type, peer, tag, comm, request);
    }
    if (NULL == gc_comm_shm(c)) {
        return gc_fail(MPI_ERR_OTHER, fn, "point-to-point enqueue on a CUDA stream serves "
                       "communicators within one node (this one spans nodes, or its "
                       "shared-memory segment could not be made)");
    }
    n = gcs_size(gc_comm_shm(c));
    if (peer < 0 || peer >= n || peer == gcs_rank(gc_comm_shm(c)) ||
        (tag < 0 && (send || MPI_ANY_TAG != tag))) {
        return gc_fail(MPI_ERR_RANK, fn, "the peer must be another rank of the communicator "
                       "(not MPI_ANY_SOURCE, MPI_PROC_NULL or itself) and the tag not negative "
                       "(MPI_ANY_TAG is taken by receives)");
    }
    if (!gc_p2p_span(type, count, &lb, &bytes)) {
        return gc_fail(MPI_ERR_TYPE, fn, "datatypes with gaps are not taken on a CUDA stream");
    }
    ret = gc_comm_take_error(c);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    st = gc_comm_stream(c)->cuda;
    if (cudaSuccess != cudaStreamIsCapturing(st, &cap)) {
        return gc_fail(MPI_ERR_OTHER, fn, "the stream given to MPIX_Stream_create is not a "
                       "valid CUDA stream of this process");
    }
    r = gc_preq_get(c, bytes > 0 ? bytes : 1, cudaStreamCaptureStatusActive == cap);
    if (NULL == r) {
        return gc_fail(MPI_ERR_NO_MEM, fn, "no pinned host memory for the staging copies");
    }
    memset(&r->m, 0, sizeof(r->m));
    r->m.send = send;
    r->m.peer = peer;
    r->m.tag = tag;
    r->m.buf = r->pin;
    r->m.bytes = bytes;
    r->m.status = MPI_STATUS_IGNORE;
    r->user = (char *) buf + lb;
    /* a receive keeps what a shorter message does not overwrite */
    if (bytes > 0 && cudaSuccess != cudaMemcpyAsync(r->pin, r->user, bytes, cudaMemcpyDefault,
                                                    st)) {
        return gc_fail(MPI_ERR_OTHER, fn, cudaGetErrorString(cudaGetLastError()));
    }
    if (cudaSuccess != cudaLaunchHostFunc(st, gc_post_fn, r)) {
        return gc_fail(MPI_ERR_OTHER, fn, cudaGetErrorString(cudaGetLastError()));
    }
    ret = MPI_Grequest_start(gc_greq_query, gc_greq_free, gc_greq_cancel, r, &r->handle);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    pthread_mutex_lock(&gc_p2p_lock);
    r->next_live = gc_live;
    gc_live = r;
    pthread_mutex_unlock(&gc_p2p_lock);
    *request = r->handle;
    return MPI_SUCCESS;
}

/* the live request behind h, taken off the live list; NULL if not ours */
static gc_preq_t *gc_preq_take(MPI_Request h)
{
    gc_preq_t **p, *r = NULL;
    pthread_mutex_lock(&gc_p2p_lock);
    for (p = &gc_live; NULL != *p; p = &(*p)->next_live) {
        if ((*p)->handle == h) {
            r = *p;
            *p = r->next_live;
            break;
        }
    }
    pthread_mutex_unlock(&gc_p2p_lock);
    return r;
}

int MPIX_Waitall_enqueue(int count, MPI_Request array_of_requests[],
                         MPI_Status *array_of_statuses)
{
    static const char fn[] = "MPIX_Waitall_enqueue";
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    gc_comm_t *c = NULL;
    gc_pwait_t *w;
    cudaStream_t st;
    int k = 0, ours = 0, theirs = 0;

    if (count < 0 || (count > 0 && NULL == array_of_requests)) {
        return gc_fail(MPI_ERR_ARG, fn, "invalid count or requests");
    }
    pthread_mutex_lock(&gc_p2p_lock);
    for (int i = 0; i < count; ++i) {
        gc_preq_t *r;
        if (MPI_REQUEST_NULL == array_of_requests[i]) {
            continue;
        }
        for (r = gc_live; NULL != r && r->handle != array_of_requests[i]; r = r->next_live) {
        }
        if (NULL == r) {
            ++theirs;
        } else if (NULL == c || r->c == c) {
            c = r->c;
            ++ours;
        } else {
            theirs = -1;
            break;
        }
    }
    pthread_mutex_unlock(&gc_p2p_lock);
    if (0 == ours) {
        /* MPI's own requests (a stream made from MPI_INFO_NULL) */
        return MPI_Waitall(count, array_of_requests, array_of_statuses);
    }
    if (0 != theirs) {
        return gc_fail(MPI_ERR_REQUEST, fn, "the requests must all come from enqueue calls on "
                       "one CUDA stream communicator");
    }
    st = gc_comm_stream(c)->cuda;
    if (cudaSuccess != cudaStreamIsCapturing(st, &cap)) {
        return gc_fail(MPI_ERR_OTHER, fn, cudaGetErrorString(cudaGetLastError()));
    }
    if (MPI_SUCCESS != gc_prog_start(fn)) {
        return MPI_ERR_OTHER;
    }
    w = calloc(1, sizeof(*w) + (size_t) ours * (sizeof(gc_preq_t *) + sizeof(gcs_msg_t *)));
    if (NULL == w) {
        return MPI_ERR_NO_MEM;
    }
    if (MPI_SUCCESS != gc_flag_get(gc_comm_flags(c), &w->job.flag, &w->job.flag_dev)) {
        free(w);
        return gc_fail(MPI_ERR_NO_MEM, fn, "no pinned host memory for the stream's flag");
    }
    w->c = c;
    w->fn = fn;
    w->persistent = cudaStreamCaptureStatusActive == cap;
    w->r = (gc_preq_t **) (w + 1);
    w->m = (gcs_msg_t **) (w->r + ours);
    for (int i = 0; i < count; ++i) {
        gc_preq_t *r;
        if (MPI_REQUEST_NULL == array_of_requests[i]) {
            if (MPI_STATUSES_IGNORE != array_of_statuses) {
                array_of_statuses[i].MPI_SOURCE = MPI_ANY_SOURCE;
                array_of_statuses[i].MPI_TAG = MPI_ANY_TAG;
                array_of_statuses[i].MPI_ERROR = MPI_SUCCESS;
            }
            continue;
        }
        r = gc_preq_take(array_of_requests[i]);
        if (!r->m.send && MPI_STATUSES_IGNORE != array_of_statuses) {
            r->m.status = &array_of_statuses[i];   /* filled as the stream passes */
        }
        w->r[k] = r;
        w->m[k++] = &r->m;
        /* the handle is done with: the state lives on in w */
        MPI_Grequest_complete(r->handle);
        MPI_Request_free(&array_of_requests[i]);
        r->handle = MPI_REQUEST_NULL;
    }
    w->n = k;
    w->job.kind = GC_JOB_WAIT;
    w->job.t = gc_comm_shm(c);
    w->job.fn = fn;
    w->job.owner = c;
    w->job.m = w->m;
    w->job.n = k;
    if (cudaSuccess != cudaLaunchHostFunc(st, gc_wait_fn, w)) {
        goto fail;
    }
    if (MPI_SUCCESS != gc_prog_stream_wait(st, &w->job, fn)) {
        return MPI_ERR_OTHER;   /* said there; w may be queued: it stays */
    }
    for (int i = 0; i < k; ++i) {
        if (!w->r[i]->m.send && w->r[i]->m.bytes > 0 &&
            cudaSuccess != cudaMemcpyAsync(w->r[i]->user, w->r[i]->pin, w->r[i]->m.bytes,
                                           cudaMemcpyDefault, st)) {
            goto fail;
        }
    }
    if (w->persistent) {
        gc_p2p_t *p = *gc_comm_p2p(c);
        pthread_mutex_lock(&gc_p2p_lock);
        w->next_all = p->waits;
        p->waits = w;
        pthread_mutex_unlock(&gc_p2p_lock);
        return MPI_SUCCESS;
    }
    if (cudaSuccess != cudaLaunchHostFunc(st, gc_wait_release_fn, w)) {
        goto fail;
    }
    return MPI_SUCCESS;
fail:
    /* w may be queued already: it stays (a leak on a broken stream) */
    return gc_fail(MPI_ERR_OTHER, fn, cudaGetErrorString(cudaGetLastError()));
}

int MPIX_Wait_enqueue(MPI_Request *request, MPI_Status *status)
{
    if (NULL == request) {
        return gc_fail(MPI_ERR_ARG, "MPIX_Wait_enqueue", "no request");
    }
    return MPIX_Waitall_enqueue(1, request, MPI_STATUS_IGNORE == status ? MPI_STATUSES_IGNORE
                                                                        : status);
}

int MPIX_Isend_enqueue_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                         int tag, MPI_Comm comm, MPI_Request *request)
{
    return gc_p2p_start(1, "MPIX_Isend_enqueue", (void *) buf, count, datatype, dest, tag, comm,
                        request);
}

int MPIX_Isend_enqueue(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                       MPI_Comm comm, MPI_Request *request)
{
    return MPIX_Isend_enqueue_c(buf, count, datatype, dest, tag, comm, request);
}

int MPIX_Irecv_enqueue_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                         MPI_Comm comm, MPI_Request *request)
{
    return gc_p2p_start(0, "MPIX_Irecv_enqueue", buf, count, datatype, source, tag, comm,
                        request);
}

int MPIX_Irecv_enqueue(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                       MPI_Comm comm, MPI_Request *request)
{
    return MPIX_Irecv_enqueue_c(buf, count, datatype, source, tag, comm, request);
}

int MPIX_Send_enqueue_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                        int tag, MPI_Comm comm)
{
    MPI_Request r;
    int ret = MPIX_Isend_enqueue_c(buf, count, datatype, dest, tag, comm, &r);
    return MPI_SUCCESS == ret ? MPIX_Wait_enqueue(&r, MPI_STATUS_IGNORE) : ret;
}

int MPIX_Send_enqueue(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                      MPI_Comm comm)
{
    return MPIX_Send_enqueue_c(buf, count, datatype, dest, tag, comm);
}

int MPIX_Recv_enqueue_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                        MPI_Comm comm, MPI_Status *status)
{
    MPI_Request r;
    int ret = MPIX_Irecv_enqueue_c(buf, count, datatype, source, tag, comm, &r);
    return MPI_SUCCESS == ret ? MPIX_Wait_enqueue(&r, status) : ret;
}

int MPIX_Recv_enqueue(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                      MPI_Comm comm, MPI_Status *status)
{
    return MPIX_Recv_enqueue_c(buf, count, datatype, source, tag, comm, status);
}
