/*
 * Requests of nonblocking device-buffer collectives.  The work is queued
 * on the communicator's engine stream when the call starts; a progress
 * callback registered with opal_progress (so MPI_Wait, MPI_Test and any
 * other MPI call drive it) asks the engine whether each pending request's
 * event has passed and completes it.  One stream per communicator makes
 * operations on a communicator complete in the order they were started;
 * the device side never waits on the host, so pt2pt traffic between start
 * and wait cannot deadlock with it.
 */
#include "ompi_config.h"

#include <stdio.h>

#include "coll_gpu.h"

#include "opal/runtime/opal_progress.h"
#include "opal/util/show_help.h"
#include "ompi/constants.h"
#include "ompi/request/request.h"

typedef struct mca_coll_gpu_request_t {
    ompi_request_t super;
    mca_coll_gpu_module_t *module;
    gpu_engine_req_t engine;
    int user_freed;                 /* MPI_Request_free before completion */
    mca_coll_gpu_trace_t trace;
    char comm_name[MPI_MAX_OBJECT_NAME];
    struct mca_coll_gpu_request_t *next;
} mca_coll_gpu_request_t;

OBJ_CLASS_INSTANCE(mca_coll_gpu_request_t, ompi_request_t, NULL, NULL);

static mca_coll_gpu_request_t *mca_coll_gpu_pending_head, *mca_coll_gpu_pending_tail;
static int mca_coll_gpu_progress_registered;

static void mca_coll_gpu_request_release(mca_coll_gpu_request_t *r)
{
    OBJ_RELEASE(r->module);
    OMPI_REQUEST_FINI(&r->super);
    OBJ_RELEASE(r);
}

static int mca_coll_gpu_request_free(ompi_request_t **request)
{
    mca_coll_gpu_request_t *r = (mca_coll_gpu_request_t *) *request;
    if (REQUEST_COMPLETE(&r->super)) {
        mca_coll_gpu_request_release(r);
    } else {
        r->user_freed = 1;          /* progress releases it when done */
    }
    *request = MPI_REQUEST_NULL;
    return OMPI_SUCCESS;
}

static int mca_coll_gpu_request_cancel(ompi_request_t *request, int complete)
{
    (void) request;
    (void) complete;
    return MPI_ERR_REQUEST;         /* collectives cannot be cancelled */
}

static int mca_coll_gpu_progress(void)
{
    mca_coll_gpu_request_t *r = mca_coll_gpu_pending_head, *prev = NULL, *next;
    int done = 0;

    while (NULL != r) {
        gpu_status_t st = gpu_engine_req_test(r->module->engine, &r->engine);
        next = r->next;
        if (GPU_INPROGRESS == st) {
            prev = r;
            r = next;
            continue;
        }
        if (NULL == prev) {
            mca_coll_gpu_pending_head = next;
        } else {
            prev->next = next;
        }
        if (mca_coll_gpu_pending_tail == r) {
            mca_coll_gpu_pending_tail = prev;
        }
        if (GPU_OK != st) {
            /* the communicator may be freed already: name the call only */
            mca_coll_gpu_show_help("nonblocking-failed", r->engine.what,
                           gpu_status_string(st));
        }
        r->super.req_status.MPI_ERROR = mca_coll_gpu_status_to_mpi(st);
        mca_coll_gpu_trace_end(&r->trace, r->comm_name, 0, 0.0, 0.0, (int) st);
        if (r->user_freed) {
            mca_coll_gpu_request_release(r);
        } else {
            ompi_request_complete(&r->super, true);
        }
        ++done;
        r = next;
    }
    /* persistent requests whose round just completed complete in this pass */
    return done + mca_coll_gpu_persistent_progress();
}

void mca_coll_gpu_progress_needed(void)
{
    if (!mca_coll_gpu_progress_registered) {
        opal_progress_register(mca_coll_gpu_progress);
        mca_coll_gpu_progress_registered = 1;
    }
}

void mca_coll_gpu_request_prepare(ompi_request_t *r, struct ompi_communicator_t *comm,
                                  bool persistent)
{
    OMPI_REQUEST_INIT(r, persistent);
    r->req_type = OMPI_REQUEST_COLL;
    r->req_cancel = mca_coll_gpu_request_cancel;
    r->req_mpi_object.comm = comm;
    r->req_status.MPI_SOURCE = MPI_ANY_SOURCE;
    r->req_status.MPI_TAG = MPI_ANY_TAG;
    r->req_status.MPI_ERROR = MPI_SUCCESS;
    r->req_status._cancelled = 0;
    r->req_status._ucount = 0;
}

int mca_coll_gpu_request_start(mca_coll_gpu_module_t *m, ompi_request_t **request,
                               mca_coll_gpu_request_t **out)
{
    mca_coll_gpu_request_t *r = OBJ_NEW(mca_coll_gpu_request_t);
    if (NULL == r) {
        return MPI_ERR_NO_MEM;
    }
    mca_coll_gpu_progress_needed();
    mca_coll_gpu_request_prepare(&r->super, m->comm, false);
    r->super.req_state = OMPI_REQUEST_ACTIVE;
    r->super.req_free = mca_coll_gpu_request_free;
    OBJ_RETAIN(m);                  /* the engine must outlive the request */
    r->module = m;
    r->user_freed = 0;
    r->next = NULL;
    r->engine.event = NULL;
    snprintf(r->comm_name, sizeof(r->comm_name), "%s", m->comm->c_name);
    *request = &r->super;
    *out = r;
    return MPI_SUCCESS;
}

gpu_engine_req_t *mca_coll_gpu_request_engine(mca_coll_gpu_request_t *r)
{
    return &r->engine;
}

void mca_coll_gpu_request_commit(mca_coll_gpu_request_t *r, int started,
                                 const mca_coll_gpu_trace_t *trace)
{
    r->trace = *trace;
    if (!started) {                 /* nothing was queued: never hand it out */
        mca_coll_gpu_request_release(r);
        return;
    }
    if (NULL == mca_coll_gpu_pending_tail) {
        mca_coll_gpu_pending_head = r;
    } else {
        mca_coll_gpu_pending_tail->next = r;
    }
    mca_coll_gpu_pending_tail = r;
}

void mca_coll_gpu_request_fini(void)
{
    if (mca_coll_gpu_progress_registered) {
        opal_progress_unregister(mca_coll_gpu_progress);
        mca_coll_gpu_progress_registered = 0;
    }
}
