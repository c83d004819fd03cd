/*
 * MPICH's point-to-point enqueue (MPIX_Send/Recv/Isend/Irecv_enqueue,
 * MPIX_Wait/Waitall_enqueue) on a stream communicator.
 *
 * On a CUDA stream each call is stream work, so it orders with the
 * application's kernels and can be captured into a graph: an isend posts
 * the message to the host transport (gpucoll_mpix_shm.h) from a host
 * function, by reference where its device buffer has a CUDA IPC handle and
 * the peer maps it (gpucoll_mpix_p2p_ipc.c: the receiver copies straight
 * from it), else after a copy into pinned memory; an irecv posts the
 * receive and hands it to the library's progress thread
 * (gpucoll_mpix_prog.c), which, once the message is there, copies it into
 * the receive buffer (from the sender's buffer, or from the pinned staging
 * the transport filled) on a CUDA stream of its own, only the bytes that
 * came; a wait hands its messages to the progress thread too, which
 * progresses every posted message of the communicator until they are done,
 * while the stream waits on the GPU for the wait's flag.  No host function
 * calls Open MPI or CUDA, or waits, so no thread level is needed.  The
 * request the application holds is a generalized request (MPI_Grequest_start), so it
 * is a real MPI handle; the wait enqueue frees it and sets it to
 * MPI_REQUEST_NULL, as MPICH does.  A captured call's state lives as long
 * as its communicator: a graph may replay it any number of times.
 *
 * A datatype with gaps is packed on the application's stream, as the
 * collectives' sides are (gpucoll_mpix_layout.h): a send into its staging
 * before it is posted; a receive lands packed in its staging and its wait
 * spreads it over the layout after the stream's wait, so the progress
 * thread moves dense bytes only.
 *
 * On a stream made from MPI_INFO_NULL the calling thread is the stream:
 * the calls are MPI's own.  Across nodes the host transport carries every
 * message's bytes over coll/gpu's network (gpucoll_mpix_net.c): no peer
 * maps another's buffers there.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpix/gpucoll_mpix_plan.h"
#include "mpix/gpucoll_mpix_int.h"
#include "mpix/gpucoll_mpix_ipc.h"
#include "mpix/gpucoll_mpix_layout.h"
#include "mpix/gpucoll_mpix_shm.h"

typedef struct gc_preq {
    gcs_msg_t m;
    gc_comm_t *c;
    MPI_Request handle;        /* the application's, until its wait */
    char *user;                /* where the data starts in the application's buffer */
    void *pin;                 /* pinned staging of pin_bytes */
    size_t pin_bytes;
    int pin_class;             /* its size class in gc_stage, -1: an allocation of its own */
    int persistent;
    gc_ipc_ref_t ref;          /* a send by reference: its buffer */
    /* a receive: the progress thread's step (rjob), which copies into user */
    gc_job_t rjob;
    uint32_t rdone;            /* rjob's flag: 1 while not handed over */
    int copying;
    int noted;                 /* its message's arrival was taken in */
    int refused;               /* the sender's handle was: bytes through host memory */
    int told;                  /* its copy's stall was reported */
    double copy_since;         /* when its copy was issued */
    gc_ipc_copy_t cp;
    /* a receive type with gaps, else empty: its bytes land packed in pin,
     * spread over the layout by the wait on the application's stream */
    gc_layout_t lay;
    size_t lay_count;
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
    const gc_ipc_ops_t *ipc;
    unsigned char *ipc_ok;     /* per peer: it maps this rank's buffers (NULL: none) */
    unsigned long long *gone_cursor;   /* per peer: the freed exports it was told of */
    /* how the messages went (GPUCOLL_STREAM_VERBOSE=1 prints them) */
    unsigned long long sends_ipc, sends_staged, recvs_ipc, recvs_staged, recvs_bounced;
    gc_park_t parked;          /* large areas growing descriptors left (gc_p2p_lock) */
};

_Static_assert(sizeof(gc_ipc_ref_t) <= GCS_ATT_MAX, "a reference must fit a message's att");

/* the requests handed out and not yet waited for, all communicators */
static gc_preq_t *gc_live;
/* receives enqueued (captured ones: posted) whose copy has not ended: while
 * any is, closing a mapping may wait for the device's work that waits for
 * it (gc_ipc_ops_t's reap) */
static int gc_recvs_busy;
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


/* where a receive's bytes land: its buffer, or packed in its staging where
 * its type has gaps (the wait spreads them on the application's stream) */
static char *gc_recv_dst(gc_preq_t *r)
{
    return r->lay.size > 0 ? (char *) r->pin : r->user;
}

/* the bounce's copies (gcs_set_bounce), on the progress thread: a message
 * by reference that its receiver cannot map, through host memory */
static int gc_bounce_out(gcs_msg_t *m, char *host, size_t off, size_t n)
{
    gc_preq_t *r = (gc_preq_t *) m;
    gc_p2p_t *p = *gc_comm_p2p(r->c);
    const char *why = NULL;
    if (0 == off) {   /* a send's device (cp is a receive's otherwise), once a bounce */
        r->cp.dev = p->ipc->device_of(r->user);
    }
    if (0 != p->ipc->copy_sync(host, r->user + off, n, r->cp.dev, &why)) {
        fprintf(stderr, "MPIX_Isend_enqueue: %s\n", why);
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

static int gc_bounce_in(gcs_msg_t *m, char *host, size_t off, size_t n)
{
    gc_preq_t *r = (gc_preq_t *) m;
    gc_p2p_t *p = *gc_comm_p2p(r->c);
    const char *why = NULL;
    if (0 != p->ipc->copy_sync(gc_recv_dst(r) + off, host, n, r->cp.dev, &why)) {
        fprintf(stderr, "MPIX_Irecv_enqueue: %s\n", why);
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

static gc_p2p_t *gc_p2p_of(gc_comm_t *c)
{
    gc_p2p_t **pp = gc_comm_p2p(c);
    pthread_mutex_lock(&gc_p2p_lock);
    if (NULL == *pp && NULL != (*pp = calloc(1, sizeof(**pp)))) {
        (*pp)->ipc = &gc_ipc_cuda_ops;
        if (NULL != gc_comm_shm(c)) {
            gcs_set_bounce(gc_comm_shm(c), gc_bounce_out, gc_bounce_in);
        }
    }
    pthread_mutex_unlock(&gc_p2p_lock);
    return *pp;
}

int gc_p2p_setup(gc_comm_t *c, MPI_Comm comm, double limit_s)
{
    gc_p2p_t *p = gc_p2p_of(c);
    int ret, k = 0, n;
    if (NULL == p) {
        return MPI_ERR_NO_MEM;
    }
    /* over the network every message carries its bytes (the same on every
     * rank: no handle exchange) */
    if (gcs_by_reference(gc_comm_shm(c))) {
        ret = p->ipc->setup(comm, &p->ipc_ok);
    } else {
        p->ipc_ok = calloc((size_t) gcs_size(gc_comm_shm(c)), 1);
        ret = NULL == p->ipc_ok ? MPI_ERR_NO_MEM : MPI_SUCCESS;
    }
    n = gcs_size(gc_comm_shm(c));
    if (MPI_SUCCESS == ret && NULL == (p->gone_cursor = calloc((size_t) n, sizeof(long long)))) {
        ret = MPI_ERR_NO_MEM;
    }
    if (MPI_SUCCESS == ret) {
        /* the progress thread's first CUDA work, while no stream waits for it */
        gc_prog_warm(p->ipc->warm, gcs_rank(gc_comm_shm(c)), limit_s);
    }
    if (MPI_SUCCESS != ret || !gc_verbose()) {
        return ret;
    }
    for (int q = 0; q < n; ++q) {
        k += p->ipc_ok[q];
    }
    fprintf(stderr, "gpucoll: rank %d: point-to-point enqueue by %s to %d of %d peers\n",
            gcs_rank(gc_comm_shm(c)), p->ipc->name, k, n - 1);
    return MPI_SUCCESS;
}

void gc_p2p_release(gc_comm_t *c)
{
    gc_p2p_t **pp = gc_comm_p2p(c), *p = *pp;
    if (NULL == p) {
        return;
    }
    if (gc_verbose() && NULL != gc_comm_shm(c)) {
        fprintf(stderr, "gpucoll: rank %d: point-to-point enqueue: %llu sends by %s, %llu "
                "staged; %llu receives by %s (%llu of them through host memory: not "
                "mapped), %llu staged\n", gcs_rank(gc_comm_shm(c)), p->sends_ipc, p->ipc->name,
                p->sends_staged, p->recvs_ipc, p->ipc->name, p->recvs_bounced, p->recvs_staged);
    }
    while (NULL != p->all) {
        gc_preq_t *r = p->all;
        p->all = r->next_all;
        gc_stage_put(r->pin, r->pin_class);
        p->ipc->copy_free(&r->cp);
        gc_layout_free(&r->lay);
        free(r);
    }
    gc_park_free(&p->parked);
    p->ipc->reap(0 != __atomic_load_n(&gc_recvs_busy, __ATOMIC_RELAXED));
    free(p->ipc_ok);
    free(p->gone_cursor);
    while (NULL != p->waits) {
        gc_pwait_t *w = p->waits;
        p->waits = w->next_all;
        free(w);
    }
    free(p);
    *pp = NULL;
}

/* a descriptor with bytes of pinned staging (none for 0: an empty message
 * or a send by reference): a captured call's own.  An eager one is the
 * free descriptor whose staging fits best, else the largest, which grows:
 * a pinned allocation is slow and CUDA may wait in it for the device's
 * work (gc_stage keeps small areas, gc_park_put large ones), so
 * sends that need none must not
 * take the receives' areas (on 4x H100 an eager 0-byte halo iteration took
 * 1.1 ms: each of its messages took a new 1-byte area, the descriptors of
 * the iterations before still in flight) */
static gc_preq_t *gc_preq_get(gc_comm_t *c, size_t bytes, int persistent)
{
    gc_p2p_t *p = gc_p2p_of(c);
    gc_preq_t *r = NULL;

    pthread_mutex_lock(&gc_p2p_lock);
    if (NULL != p && !persistent && NULL != p->free_list) {
        gc_preq_t **best = NULL;
        for (gc_preq_t **q = &p->free_list; NULL != *q; q = &(*q)->next_free) {
            const size_t have = (*q)->pin_bytes;
            if (NULL == best ||
                (have >= bytes ? (*best)->pin_bytes < bytes || have < (*best)->pin_bytes
                               : (*best)->pin_bytes < bytes && have > (*best)->pin_bytes)) {
                best = q;
            }
        }
        r = *best;
        *best = r->next_free;
    }
    if (NULL == r && NULL != p && NULL != (r = calloc(1, sizeof(*r)))) {
        r->rdone = 1;
        r->pin_class = -1;
        r->next_all = p->all;
        p->all = r;
    }
    pthread_mutex_unlock(&gc_p2p_lock);
    if (NULL == r) {
        return NULL;
    }
    r->c = c;
    r->persistent = persistent;
    if (r->pin_bytes < bytes) {
        size_t got = 0;
        int cls = -1;
        void *pin;
        pthread_mutex_lock(&gc_p2p_lock);
        pin = gc_park_take(&p->parked, bytes, &got);
        pthread_mutex_unlock(&gc_p2p_lock);
        if (NULL == pin && NULL == (pin = gc_stage_get(bytes, &cls, &got))) {
            return NULL;   /* stays on the communicator's list, freed with it */
        }
        /* an eager descriptor's old area: the stream has passed its use */
        pthread_mutex_lock(&gc_p2p_lock);
        gc_park_put(&p->parked, r->pin, r->pin_bytes, r->pin_class);
        pthread_mutex_unlock(&gc_p2p_lock);
        r->pin = pin;
        r->pin_bytes = got;
        r->pin_class = cls;
    }
    return r;
}

/* the receive's copy into the application's buffer is done (or failed) */
static int gc_recv_end(gc_preq_t *r, int ret, const char *why)
{
    if (MPI_SUCCESS != ret) {
        fprintf(stderr, "MPIX_Irecv_enqueue: rank %d: the copy of a message from rank %d into "
                "the receive buffer failed: %s\n", gcs_rank(gc_comm_shm(r->c)), r->m.peer,
                NULL != why ? why : "the transport is broken (an earlier timeout)");
        r->m.err = ret;
    }
    r->noted = r->refused = 0;
    __atomic_sub_fetch(&gc_recvs_busy, 1, __ATOMIC_RELAXED);
    gcs_recv_done(gc_comm_shm(r->c), &r->m);
    return ret;
}

/* a receive on the progress thread: once its message is there, copy it
 * into the receive buffer (from the sender's by CUDA IPC, or from the
 * staging) and complete it when the copy is done; never waits */
static int gc_recv_step(gc_job_t *j)
{
    gc_preq_t *r = j->arg;
    gc_p2p_t *p = *gc_comm_p2p(r->c);
    const char *why = NULL;
    int ret;

    if (r->m.bouncing) {   /* through host memory: the transport's progress copies */
        if (MPI_SUCCESS != gcs_poll(gc_comm_shm(r->c))) {
            return gc_recv_end(r, MPI_ERR_OTHER, NULL);
        }
        if (!r->m.bounced) {
            return GCS_PENDING;
        }
        ret = MPI_ERR_TRUNCATE == r->m.err ? MPI_SUCCESS : r->m.err;
        return gc_recv_end(r, ret, "its copy out of host memory failed");
    }
    if (!r->copying) {
        gc_ipc_ref_t ref;
        size_t n;
        if (MPI_SUCCESS != gcs_poll(gc_comm_shm(r->c))) {
            return gc_recv_end(r, MPI_ERR_OTHER, NULL);
        }
        if (!r->m.arrived) {
            return GCS_PENDING;
        }
        n = r->m.got < r->m.bytes ? r->m.got : r->m.bytes;
        if (r->m.remote) {
            memcpy(&ref, r->m.ratt, sizeof(ref));
        }
        if (!r->noted) {
            if (r->m.remote) {
                p->ipc->forget(&ref);
            }
            __atomic_add_fetch(r->m.remote ? &p->recvs_ipc : &p->recvs_staged, 1,
                               __ATOMIC_RELAXED);
            r->noted = 1;
        }
        if (0 == n || (r->lay.size > 0 && !r->m.remote)) {
            return gc_recv_end(r, MPI_SUCCESS, NULL);   /* nothing, or packed in place */
        }
        ret = r->refused ? -2
                         : p->ipc->copy_start(&r->cp, gc_recv_dst(r), r->pin,
                                              r->m.remote ? &ref : NULL, n, &why);
        if (1 == ret) {
            return GCS_PENDING;   /* the mapping it needs is being closed: next round */
        }
        if (-2 == ret) {
            /* this rank cannot map the sender's memory: its bytes come through
             * host memory (gcs_bounce_ask), once no other bounce of the pair is
             * on; asked again each round, the handle not opened again */
            if (!r->refused) {
                r->refused = 1;
                __atomic_add_fetch(&p->recvs_bounced, 1, __ATOMIC_RELAXED);
                if (gc_verbose()) {
                    fprintf(stderr, "gpucoll: rank %d: a message of %zu bytes from rank %d "
                            "comes through host memory: %s\n", gcs_rank(gc_comm_shm(r->c)), n,
                            r->m.peer, why);
                }
            }
            (void) gcs_bounce_ask(gc_comm_shm(r->c), &r->m);
            return GCS_PENDING;
        }
        if (0 != ret) {
            return gc_recv_end(r, MPI_ERR_OTHER, why);
        }
        r->copying = 1;
        r->told = 0;
        r->copy_since = gcs_clock();
    }
    ret = p->ipc->copy_test(&r->cp, &why);
    if (0 == ret) {
        /* the wait timed out while the GPU had not run this copy: say so,
         * which tells a copy held back on the device (say, behind a kernel
         * the application's first launch loads, which may wait for the
         * device to be idle) from a message that never came */
        if (!r->told && gcs_broken(gc_comm_shm(r->c))) {
            r->told = 1;
            fprintf(stderr, "MPIX_Irecv_enqueue: rank %d: the copy of %zu bytes from rank %d "
                    "into the receive buffer, issued %.1f s ago on libgpucoll's stream, has "
                    "not run on the device: something holds it back there (a call that waits "
                    "for the device to be idle would, e.g. a kernel's first launch under "
                    "CUDA's lazy loading)\n",
                    gcs_rank(gc_comm_shm(r->c)), r->m.got < r->m.bytes ? r->m.got : r->m.bytes,
                    r->m.peer, gcs_clock() - r->copy_since);
        }
        return GCS_PENDING;
    }
    r->copying = 0;
    return gc_recv_end(r, ret > 0 ? MPI_SUCCESS : MPI_ERR_OTHER, why);
}

static void gc_post_fn(void *arg)
{
    gc_preq_t *r = arg;
    if (!r->m.send && 0 == __atomic_load_n(&r->rdone, __ATOMIC_ACQUIRE)) {
        /* its last step still runs: only after a timeout broke the transport */
        gc_comm_set_error(r->c, MPI_ERR_OTHER);
        return;
    }
    if (!r->m.send && r->persistent) {
        __atomic_add_fetch(&gc_recvs_busy, 1, __ATOMIC_RELAXED);
    }
    gcs_post(gc_comm_shm(r->c), &r->m);
    if (r->m.send) {
        gc_p2p_t *p = *gc_comm_p2p(r->c);
        __atomic_add_fetch(r->m.att_bytes > 0 ? &p->sends_ipc : &p->sends_staged, 1,
                           __ATOMIC_RELAXED);
    } else {
        gc_prog_post(&r->rjob);
    }
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
        /* a receive whose step still runs (after a timeout) is not reused */
        if (!w->r[i]->persistent && 0 != __atomic_load_n(&w->r[i]->rdone, __ATOMIC_ACQUIRE)) {
            w->r[i]->next_free = p->free_list;
            p->free_list = w->r[i];
        }
    }
    pthread_mutex_unlock(&gc_p2p_lock);
    gc_flag_put(*gc_comm_flags(w->c), w->job.flag);
    free(w);
}

/* the start of the data and its bytes: elements end to end, no gap (the
 * host transport moves bytes; a predefined pair type's inner padding rides
 * along); else the layout the bytes are packed by (lay->size > 0) */
static int gc_p2p_span(MPI_Datatype t, MPI_Count count, MPI_Aint *lb, size_t *bytes,
                       gc_layout_t *lay)
{
    MPI_Aint ext, tlb, text;
    memset(lay, 0, sizeof(*lay));
    if (gc_gaps_needed(t)) {
        /* packed on the application's stream, as the collectives' sides
         * are: a send into its staging before it is posted, a receive out
         * of its staging after its wait (the progress thread moves dense
         * bytes only; on 4x H100 a receive it spread by 2-D copies hung) */
        *lb = 0;
        if (!gc_layout_make(t, lay)) {
            return 0;
        }
        if (gc_layout_copies(lay, (size_t) count) > GC_LAYOUT_MAX_COPIES) {
            gc_layout_free(lay);
            return 0;
        }
        *bytes = (size_t) count * lay->size;
        return 1;
    }
    if (MPI_SUCCESS != MPI_Type_get_extent(t, lb, &ext) ||
        MPI_SUCCESS != MPI_Type_get_true_extent(t, &tlb, &text) || *lb != tlb || ext != text) {
        return 0;
    }
    *bytes = (size_t) count * (size_t) ext;
    return 1;
}

int gc_p2p_start(int send, const char *fn, void *buf, MPI_Count count, MPI_Datatype type,
                 int peer, int tag, MPI_Comm comm, MPI_Request *request)
{
    gc_comm_t *c = gc_comm_of(comm);
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    cudaStream_t st;
    MPI_Aint lb = 0;
    size_t bytes = 0;
    gc_preq_t *r;
    gc_p2p_t *p;
    gc_ipc_ref_t ref;
    gc_layout_t lay;
    int ret, n, byref;

    if (NULL == c) {
        return gc_fail(MPI_ERR_COMM, fn, "the communicator has no stream: make it with "
                       "MPIX_Stream_comm_create");
    }
    if (NULL == request || count < 0) {
        return gc_fail(MPI_ERR_ARG, fn, "no request, or a negative count");
    }
    /* a call that fails leaves no handle a later wait could take for one */
    *request = MPI_REQUEST_NULL;
    if (!gc_comm_stream(c)->is_cuda) {
        /* the calling thread is the stream */
        if (count > INT_MAX) {
            return gc_fail(MPI_ERR_COUNT, fn, "above INT_MAX elements on a host stream");
        }
        return send ? MPI_Isend(buf, (int) count, type, peer, tag, comm, request)
                    : MPI_Irecv(buf, (int) count, type, peer, tag, comm, request);
    }
    if (NULL == gc_comm_shm(c)) {
        return gc_fail(MPI_ERR_OTHER, fn, "point-to-point enqueue on a CUDA stream needs "
                       "the stream communicator's host transport, which could not be made "
                       "(across nodes: coll/gpu's network did not start)");
    }
    n = gcs_size(gc_comm_shm(c));
    if (peer < 0 || peer >= n || peer == gcs_rank(gc_comm_shm(c)) ||
        (tag < 0 && (send || MPI_ANY_TAG != tag))) {
        return gc_fail(MPI_ERR_RANK, fn, "the peer must be another rank of the communicator "
                       "(not MPI_ANY_SOURCE, MPI_PROC_NULL or itself) and the tag not negative "
                       "(MPI_ANY_TAG is taken by receives)");
    }
    if (!gc_p2p_span(type, count, &lb, &bytes, &lay)) {
        return gc_fail(MPI_ERR_TYPE, fn, "the datatype's layout is not taken on a CUDA stream "
                       "(a kind MPI_Type_get_contents does not describe, or more than 4096 "
                       "stream copies per call)");
    }
    ret = gc_comm_take_error(c);
    if (MPI_SUCCESS != ret) {
        gc_layout_free(&lay);
        return ret;
    }
    st = gc_comm_stream(c)->cuda;
    if (cudaSuccess != cudaStreamIsCapturing(st, &cap)) {
        gc_layout_free(&lay);
        return gc_fail(MPI_ERR_OTHER, fn, "the stream given to MPIX_Stream_create is not a "
                       "valid CUDA stream of this process");
    }
    p = gc_p2p_of(c);
    if (NULL == p || MPI_SUCCESS != gc_prog_start(fn)) {
        gc_layout_free(&lay);
        return gc_fail(MPI_ERR_NO_MEM, fn, "no memory for the point-to-point state");
    }
    if (cudaStreamCaptureStatusNone == cap) {
        /* the mappings the progress thread let go */
        p->ipc->reap(0 != __atomic_load_n(&gc_recvs_busy, __ATOMIC_RELAXED));
    }
    /* a send goes by reference where the peer maps this rank's buffers and
     * this one has a CUDA IPC handle; else by value, from pinned staging */
    byref = send && bytes > 0 && 0 == lay.size && NULL != p->ipc_ok && p->ipc_ok[peer] &&
            p->ipc->export_buf((char *) buf + lb, bytes, &p->gone_cursor[peer], &ref);
    r = gc_preq_get(c, byref ? 0 : bytes, cudaStreamCaptureStatusActive == cap);
    if (NULL == r) {
        gc_layout_free(&lay);
        return gc_fail(MPI_ERR_NO_MEM, fn, "no pinned host memory for the staging copies");
    }
    /* a receive keeps its type's layout for its wait's copy out */
    gc_layout_free(&r->lay);
    if (!send && lay.size > 0) {
        r->lay = lay;
        r->lay_count = (size_t) count;
        memset(&lay, 0, sizeof(lay));
    }
    memset(&r->m, 0, sizeof(r->m));
    r->m.send = send;
    r->m.peer = peer;
    r->m.tag = tag;
    r->m.buf = NULL != r->pin ? r->pin : (char *) &r->pin;   /* 0 bytes: never read */
    r->m.bytes = bytes;
    r->m.status = MPI_STATUS_IGNORE;
    r->user = (char *) buf + lb;
    if (byref) {
        r->ref = ref;
        r->m.att = &r->ref;
        r->m.att_bytes = sizeof(r->ref);
    }
    if (!send) {
        /* the progress thread copies what came into the buffer, on its device;
         * what that copy needs is made here, on the application's thread */
        const char *why = NULL;
        r->cp.dev = p->ipc->device_of(r->user);
        if (0 != p->ipc->copy_prepare(&r->cp, &why)) {
            return gc_fail(MPI_ERR_OTHER, fn, why);
        }
        memset(&r->rjob, 0, sizeof(r->rjob));
        r->rjob.kind = GC_JOB_STEP;
        r->rjob.step = gc_recv_step;
        r->rjob.arg = r;
        r->rjob.t = gc_comm_shm(c);
        r->rjob.fn = fn;
        r->rjob.owner = c;
        r->rjob.flag = &r->rdone;
    }
    /* a send by value: its bytes into the staging.  A receive with gaps:
     * its buffer's own bytes, so that the copy out after its wait leaves
     * what a shorter message did not reach as it was */
    const gc_layout_t *pack = lay.size > 0 ? &lay : r->lay.size > 0 ? &r->lay : NULL;
    if (((send && !byref) || NULL != pack) && bytes > 0 &&
        cudaSuccess != (NULL != pack ? gc_layout_copy(pack, (size_t) count, buf, r->pin, 1, st)
                                     : cudaMemcpyAsync(r->pin, r->user, bytes, cudaMemcpyDefault,
                                                       st))) {
        gc_layout_free(&lay);
        return gc_fail(MPI_ERR_OTHER, fn, cudaGetErrorString(cudaGetLastError()));
    }
    gc_layout_free(&lay);   /* a send's: its bytes are packed */
    if (!send && !r->persistent) {   /* captured ones count as a replay posts them */
        __atomic_add_fetch(&gc_recvs_busy, 1, __ATOMIC_RELAXED);
    }
    if (cudaSuccess != cudaLaunchHostFunc(st, gc_post_fn, r)) {
        if (!send && !r->persistent) {
            __atomic_sub_fetch(&gc_recvs_busy, 1, __ATOMIC_RELAXED);
        }
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
    /* the received bytes are in the buffers once the flag is set: the
     * progress thread copied them there, or packed into the staging of a
     * receive with gaps, spread here on the stream */
    if (MPI_SUCCESS != gc_prog_stream_wait(st, &w->job, fn)) {
        return MPI_ERR_OTHER;   /* said there; w may be queued: it stays */
    }
    for (int i = 0; i < w->n; ++i) {
        gc_preq_t *r = w->r[i];
        if (!r->m.send && r->lay.size > 0 && r->lay_count > 0 &&
            cudaSuccess != gc_layout_copy(&r->lay, r->lay_count, r->user, r->pin, 0, st)) {
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
