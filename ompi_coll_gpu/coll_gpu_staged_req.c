/*
 * The request of a nonblocking staged call.  The previous module's
 * nonblocking form runs on the host copies: starting it never waits for
 * the peers (a blocking collective inside a nonblocking start hangs a rank
 * whose peer blocks on another communicator first).  This request
 * completes once that one has: progress copies the results back and frees
 * the copies.  Like every wait of ours it is bounded: past coll_gpu_timeout
 * it completes with an error that names the rank which has not posted the
 * call (mca_coll_gpu_knet_ask), and the host library's request is left to
 * finish, or not, on its own; its copies go then, nothing copied back.
 */
#include "ompi_config.h"

#include <stdlib.h>

#include "coll_gpu.h"
#include "coll_gpu_staged.h"

#include "ompi/constants.h"
#include "opal/runtime/opal_progress.h"
#include "util/gpu_clock.h"

#define GPU_SREQ_MAGIC 0x53524551u

typedef struct gpu_sreq {
    mca_coll_gpu_nbc_request_t super;   /* first: Open MPI casts to it */
    unsigned magic;             /* GPU_SREQ_MAGIC while the request lives */
    ompi_request_t *inner;
    gpu_stage_t s, r;
    int user_freed;
    int abandoned;              /* its caller timed out: no copy back */
    /* for the bound (above): whom to ask, about which call, until when */
    mca_coll_gpu_module_t *m;
    const char *what;
    uint64_t call;
    double deadline;
    struct gpu_sreq *next;
} gpu_sreq_t;

OBJ_CLASS_INSTANCE(gpu_sreq_t, ompi_request_t, NULL, NULL);

static gpu_sreq_t *gpu_sreq_active;

static void gpu_sreq_release(gpu_sreq_t *q)
{
    GPU_LOG(50, "staged request %p released", (void *) q);
    OBJ_RELEASE(q->m);
    q->magic = 0;
    OMPI_REQUEST_FINI(&q->super.super);
    OBJ_RELEASE(q);
}

static int gpu_sreq_free(ompi_request_t **request)
{
    gpu_sreq_t *q = (gpu_sreq_t *) *request;
    if (REQUEST_COMPLETE(&q->super.super) && NULL == q->inner) {
        gpu_sreq_release(q);
    } else {
        q->user_freed = 1;          /* progress releases it when done */
    }
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

/* Blocking (req NULL): copy back now.  Nonblocking: hand out the inner
 * request itself when nothing was staged, else one that copies back. */
int mca_coll_gpu_stage_finish(gpu_stage_t *s, gpu_stage_t *r, int ret, ompi_request_t *inner,
                              mca_coll_gpu_module_t *m, const char *what, ompi_request_t **req)
{
    struct ompi_communicator_t *comm = m->comm;
    gpu_sreq_t *q;

    if (NULL == req || MPI_SUCCESS != ret) {
        return mca_coll_gpu_stage_done(s, r, ret);
    }
    if ((NULL == s || NULL == s->shadow) && NULL == r->shadow) {
        *req = inner;
        return MPI_SUCCESS;
    }
    if (NULL == (q = OBJ_NEW(gpu_sreq_t))) {
        ret = ompi_request_wait(&inner, MPI_STATUS_IGNORE);
        return mca_coll_gpu_stage_done(s, r, ret);
    }
    mca_coll_gpu_request_prepare(&q->super, comm, false);
    q->super.super.req_state = OMPI_REQUEST_ACTIVE;
    q->super.super.req_free = gpu_sreq_free;
    q->magic = GPU_SREQ_MAGIC;
    q->inner = inner;
    if (NULL != s) {
        mca_coll_gpu_stage_move(&q->s, s);
    } else {
        mca_coll_gpu_stage_init(&q->s, NULL, 0);
    }
    mca_coll_gpu_stage_move(&q->r, r);
    q->user_freed = 0;
    q->abandoned = 0;
    OBJ_RETAIN(m);
    q->m = m;
    q->what = what;
    q->call = m->kcall;
    q->deadline = gpu_clock_now() + mca_coll_gpu_timeout_s();
    OPAL_THREAD_LOCK(&mca_coll_gpu_component.lock);
    q->next = gpu_sreq_active;
    gpu_sreq_active = q;
    OPAL_THREAD_UNLOCK(&mca_coll_gpu_component.lock);
    mca_coll_gpu_progress_needed();
    *req = &q->super.super;
    GPU_LOG(50, "staged request %p: inner %p", (void *) q, (void *) inner);
    return MPI_SUCCESS;
}

int mca_coll_gpu_staged_progress(void)
{
    gpu_sreq_t **link = &gpu_sreq_active;
    int done = 0;

    while (NULL != *link) {
        gpu_sreq_t *q = *link;
        if (GPU_SREQ_MAGIC != q->magic) {
            GPU_ERROR("staged request %p on the list is not one (magic %x, inner %p)",
                      (void *) q, q->magic, (void *) q->inner);
            *link = NULL;
            break;
        }
        if (!REQUEST_COMPLETE(q->inner)) {
            int missing = -1;
            if (!q->abandoned && gpu_clock_now() > q->deadline &&
                GPU_INPROGRESS != mca_coll_gpu_knet_ask(q->m, q->call, 1.0, &missing)) {
                /* the host library would wait for that rank forever */
                q->abandoned = 1;
                q->super.super.req_status.MPI_ERROR =
                    mca_coll_gpu_error(q->m->comm->c_name, q->what, GPU_ERR_TIMEOUT, missing);
                ompi_request_complete(&q->super.super, true);
                ++done;
            }
            link = &q->next;
            continue;
        }
        *link = q->next;
        const int status = q->inner->req_status.MPI_ERROR;
        const int was_abandoned = q->abandoned && REQUEST_COMPLETE(&q->super.super);
        GPU_LOG(50, "staged request %p: inner %p done", (void *) q, (void *) q->inner);
        (void) ompi_request_free(&q->inner);
        /* MPI_REQUEST_NULL is not NULL: the user's free looks for NULL to
         * release a completed request (else the request, and the module
         * it holds, would never go: its kind slot with it) */
        q->inner = NULL;
        if (was_abandoned) {
            /* its error was reported: the copies go, nothing copied back */
            (void) mca_coll_gpu_stage_done(&q->s, &q->r, MPI_ERR_OTHER);
        } else {
            q->super.super.req_status.MPI_ERROR =
                mca_coll_gpu_stage_done(&q->s, &q->r, q->abandoned ? MPI_ERR_OTHER : status);
        }
        if (q->user_freed) {
            gpu_sreq_release(q);
        } else if (!was_abandoned) {
            ompi_request_complete(&q->super.super, true);
        }
        ++done;
    }
    return done;
}

int mca_coll_gpu_staged_wait(ompi_request_t **req, const char *comm_name, const char *what)
{
    const double deadline = gpu_clock_now() + mca_coll_gpu_timeout_s();
    int done = 0, ret;

    for (unsigned spins = 0;; ++spins) {
        ret = ompi_request_test(req, &done, MPI_STATUS_IGNORE);
        if (OMPI_SUCCESS != ret || done) {
            return ret;   /* the request is freed */
        }
        if (0 == (spins & 255) && gpu_clock_now() > deadline) {
            break;
        }
    }
    /* a peer never came (or failed before it could): the host algorithm
     * would wait for it forever.  The request stays with progress, which
     * frees it (and the host copies) if it ever completes, without copying
     * into the caller's buffers any more. */
    {
        gpu_sreq_t *q = (gpu_sreq_t *) *req;
        int missing = -1;
        OPAL_THREAD_LOCK(&mca_coll_gpu_component.lock);
        if (gpu_sreq_free == q->super.super.req_free && GPU_SREQ_MAGIC == q->magic) {
            q->abandoned = 1;
        } else {
            q = NULL;
        }
        OPAL_THREAD_UNLOCK(&mca_coll_gpu_component.lock);
        while (NULL != q && GPU_INPROGRESS == mca_coll_gpu_knet_ask(q->m, q->call, 1.0, &missing)) {
            opal_progress();
        }
        (void) ompi_request_free(req);
        return mca_coll_gpu_error(comm_name, what, GPU_ERR_TIMEOUT, missing);
    }
}
