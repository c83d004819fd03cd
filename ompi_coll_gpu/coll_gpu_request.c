/*
 * Requests of nonblocking device-buffer collectives.
 *
 * A communicator's requests run one at a time, in the order they were
 * started (module queue): their host exchanges match in order and they
 * share one staging area.  Each runs as host-paced rounds (engine), whose
 * device work only copies and folds, so no kernel of a nonblocking call
 * ever waits for a peer: a rank may start nonblocking collectives on
 * different communicators in any order, or run blocking ones on other
 * communicators before it waits, and every one of them still completes.
 * The first call on a communicator also runs the engine's setup from here,
 * step by step, so that starting it never waits for the peers.
 *
 * One opal_progress callback drives them all (MPI_Wait, MPI_Test, any MPI
 * call, and the engine's own device waits of blocking calls).  It does
 * not run inside itself: a pass that reaches a wait which progresses
 * returns at once from the inner call.
 */
#include "ompi_config.h"

#include <stdio.h>
#include <string.h>

#include "coll_gpu.h"

#include "opal/runtime/opal_progress.h"
#include "opal/util/show_help.h"
#include "ompi/constants.h"
#include "ompi/request/request.h"
#include "util/gpu_clock.h"

typedef struct mca_coll_gpu_request_t {
    mca_coll_gpu_nbc_request_t super;   /* first: Open MPI casts to it */
    mca_coll_gpu_module_t *module;
    gpu_engine_req_t engine;
    int user_freed;                 /* MPI_Request_free before completion */
    int deferred;                   /* call below not handed to the engine yet */
    int restart;                    /* the setup failed: 1 to start as args say, 2 started */
    int has_args;
    mca_coll_gpu_args_t args;       /* the MPI call, to start again if the setup fails */
    ompi_request_t *inner;          /* that start's request */
    int inner_err;
    /* queued for its start (mca_coll_gpu_request_queue): the state, the
     * call whose kinds it waits for, until when, the kind decided, the
     * peer that did not come; detached: left the module's queue once
     * started, and completes with its inner request */
    int kstate;
    uint64_t kcall;
    double kdeadline;
    int kforce;
    int kfail_peer;
    int detached;
    /* work that runs elsewhere (mca_coll_gpu_request_ext): its test */
    const mca_coll_gpu_req_ext_t *ext;
    void *ext_arg;
    mca_coll_gpu_call_t call;
    gpu_xchg_plan_t plan;           /* call.plan points here */
    gpu_wide_t wide;                /* call.wide points here */
    mca_coll_gpu_trace_t trace;
    char comm_name[MPI_MAX_OBJECT_NAME];
    struct mca_coll_gpu_request_t *next;    /* every pending request */
    struct mca_coll_gpu_request_t *q_next;  /* the module's queue */
} mca_coll_gpu_request_t;

OBJ_CLASS_INSTANCE(mca_coll_gpu_request_t, ompi_request_t, NULL, NULL);

/* WAIT: my node's posts; REMOTE: across nodes, the other nodes' answers */
enum { GPU_KS_NONE = 0, GPU_KS_WAIT, GPU_KS_REMOTE, GPU_KS_READY, GPU_KS_ISSUING,
       GPU_KS_STARTED };

static mca_coll_gpu_request_t *mca_coll_gpu_pending_head, *mca_coll_gpu_pending_tail;
static int mca_coll_gpu_progress_registered;

static void mca_coll_gpu_request_release(mca_coll_gpu_request_t *r)
{
    if (NULL != r->ext) {
        r->ext->release(r->ext_arg);
    }
    OBJ_RELEASE(r->module);
    OMPI_REQUEST_FINI(&r->super.super);
    OBJ_RELEASE(r);
}

static int mca_coll_gpu_request_free(ompi_request_t **request)
{
    mca_coll_gpu_request_t *r = (mca_coll_gpu_request_t *) *request;
    if (REQUEST_COMPLETE(&r->super.super)) {
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

/* hand a deferred call to the engine on its own device */
static gpu_status_t mca_coll_gpu_request_launch(mca_coll_gpu_request_t *r)
{
    gpu_engine_comm_t *e = r->module->engine;
    const mca_coll_gpu_call_t *call = &r->call;
    gpu_status_t st;

    r->deferred = 0;
    gpu_engine_device_enter(e);
    if (NULL != call->wide) {
        st = gpu_engine_wide(e, call->what, call->wide, &r->engine);
    } else if (NULL != call->plan) {
        st = gpu_engine_xchg(e, call->what, call->plan, call->op, call->dt, &r->engine);
    } else if (call->root >= 0) {
        /* never built for a nonblocking call (blocking only); the engine
         * refuses it alike on every rank */
        st = gpu_engine_reduce_ts(e, call->in, call->out, call->count, call->op, call->dt,
                                  call->root, &r->engine);
    } else {
        st = gpu_engine_allreduce(e, call->in, call->out, call->count, call->op, call->dt,
                                  &r->engine);
    }
    gpu_engine_device_leave(e);
    if (GPU_OK == st) {
        mca_coll_gpu_trace_started(&r->trace);
    }
    return st;
}

/* Communicators whose setup runs from progress, whether or not a request
 * of theirs waits for it (a nonblocking call that then staged started it
 * too); each holds a reference to its module until the setup ends. */
static mca_coll_gpu_module_t *mca_coll_gpu_setups[64];
static int mca_coll_gpu_nsetups;

int mca_coll_gpu_setup_track(mca_coll_gpu_module_t *m)
{
    int ok;
    OPAL_THREAD_LOCK(&mca_coll_gpu_component.lock);
    ok = mca_coll_gpu_nsetups < (int) (sizeof(mca_coll_gpu_setups) /
                                       sizeof(mca_coll_gpu_setups[0]));
    if (ok) {
        OBJ_RETAIN(m);
        mca_coll_gpu_setups[mca_coll_gpu_nsetups++] = m;
    }
    OPAL_THREAD_UNLOCK(&mca_coll_gpu_component.lock);
    return ok;
}

/* Step every setup in flight; the lock is held. */
static void mca_coll_gpu_setups_progress(void)
{
    for (int i = 0; i < mca_coll_gpu_nsetups;) {
        mca_coll_gpu_module_t *m = mca_coll_gpu_setups[i];
        const gpu_status_t st = gpu_engine_setup_step(m->setup, &m->engine);
        if (GPU_INPROGRESS == st) {
            ++i;
            continue;
        }
        mca_coll_gpu_setups[i] = mca_coll_gpu_setups[--mca_coll_gpu_nsetups];
        m->setup = NULL;
        if (GPU_OK == st) {
            m->boot = MCA_COLL_GPU_BOOT_READY;
            mca_coll_gpu_topo_setup(m);
        } else {
            /* the calls waiting for it start again and stage, as later
             * ones do */
            m->setup_status = st;
            (void) mca_coll_gpu_boot_failed(m, "setup", st);
            /* a timeout fails the waiting calls instead (each says so) */
            if (NULL != m->q_head && GPU_ERR_NO_MEMORY != st && GPU_ERR_TIMEOUT != st) {
                mca_coll_gpu_show_help("setup-failed-nonblocking", m->comm->c_name,
                                       gpu_status_string(st));
            }
        }
        OBJ_RELEASE(m);
    }
}

/* What a pass can do for the head request of its communicator. */
/* A queued call: learn the kinds, have the pass start it (restarts
 * below), then complete with what it started. */
static gpu_status_t mca_coll_gpu_request_kind_advance(mca_coll_gpu_request_t *r)
{
    mca_coll_gpu_module_t *m = r->module;

    if (GPU_KS_WAIT == r->kstate) {
        int all_dev, peer = -1;
        const gpu_status_t st = mca_coll_gpu_kind_peek(m, r->kcall, &all_dev, &peer);
        if (GPU_INPROGRESS == st) {
            const double now = gpu_clock_now();
            if (0.0 == r->kdeadline) {
                r->kdeadline = now + mca_coll_gpu_timeout_s();
                return GPU_INPROGRESS;
            }
            if (now <= r->kdeadline) {
                return GPU_INPROGRESS;
            }
        }
        if (GPU_OK != st) {
            r->kfail_peer = peer;
            --m->kq;
            r->kstate = GPU_KS_NONE;
            return GPU_INPROGRESS == st ? GPU_ERR_TIMEOUT : st;
        }
        r->kforce = all_dev;
        r->kstate = GPU_KS_READY;
        if (all_dev && NULL != m->knet) {
            /* my node is all device: now the other nodes' speakers */
            const gpu_status_t rs = mca_coll_gpu_knet_round_start(m, r->kcall, &peer);
            if (GPU_OK == rs) {
                r->kstate = GPU_KS_REMOTE;
                r->kdeadline = gpu_clock_now() + mca_coll_gpu_timeout_s();
            } else if (GPU_ERR_UNSUPPORTED != rs) {   /* no map: trusted, as blocking */
                mca_coll_gpu_knet_round_end(m, NULL);
                r->kfail_peer = peer;
                --m->kq;
                r->kstate = GPU_KS_NONE;
                return rs;
            }
        }
    }
    if (GPU_KS_REMOTE == r->kstate) {
        int all_dev = 0, peer = -1;
        gpu_status_t st = mca_coll_gpu_knet_round_test(m, &all_dev, &peer);
        if (GPU_INPROGRESS == st && gpu_clock_now() <= r->kdeadline) {
            return GPU_INPROGRESS;
        }
        mca_coll_gpu_knet_round_end(m, GPU_INPROGRESS == st ? &peer : NULL);
        if (GPU_INPROGRESS == st) {
            st = GPU_ERR_TIMEOUT;
            peer = mca_coll_gpu_knet_missing(m, r->kcall, peer);
        }
        if (GPU_OK != st) {
            r->kfail_peer = peer;
            --m->kq;
            r->kstate = GPU_KS_NONE;
            return st;
        }
        r->kforce = all_dev;
        r->kstate = GPU_KS_READY;
    }
    if (GPU_KS_READY == r->kstate) {
        r->kstate = GPU_KS_ISSUING;     /* the pass starts it, lock let go */
        r->restart = 1;
        return GPU_INPROGRESS;
    }
    if (GPU_KS_STARTED == r->kstate && (NULL == r->inner || REQUEST_COMPLETE(r->inner))) {
        if (NULL != r->inner) {
            r->inner_err = r->inner->req_status.MPI_ERROR;
            (void) ompi_request_free(&r->inner);
        }
        return GPU_OK;
    }
    return GPU_INPROGRESS;
}

static gpu_status_t mca_coll_gpu_request_advance(mca_coll_gpu_request_t *r)
{
    mca_coll_gpu_module_t *m = r->module;
    gpu_status_t st;

    if (GPU_KS_NONE != r->kstate) {
        return mca_coll_gpu_request_kind_advance(r);
    }
    if (NULL != r->ext) {
        return r->ext->test(r->ext_arg, &r->kfail_peer);
    }
    if (MCA_COLL_GPU_BOOT_SETUP == m->boot) {
        return GPU_INPROGRESS;
    }
    if (NULL == m->engine) {
        /* the setup failed under this call: it starts again through the
         * module's nonblocking entry point, which now stages (outside this
         * pass, see below), and completes with what it started; not after a
         * timeout: the host library would wait for that peer unbounded */
        if (r->deferred && r->has_args && GPU_ERR_TIMEOUT != m->setup_status) {
            if (0 == r->restart) {
                r->restart = 1;
            } else if (2 == r->restart && (NULL == r->inner || REQUEST_COMPLETE(r->inner))) {
                if (NULL != r->inner) {
                    r->inner_err = r->inner->req_status.MPI_ERROR;
                    (void) ompi_request_free(&r->inner);
                }
                return GPU_OK;
            }
            return GPU_INPROGRESS;
        }
        st = m->setup_status;
        return GPU_OK == st || GPU_ERR_UNSUPPORTED == st ? GPU_ERR_INVALID : st;
    }
    if (r->deferred) {
        st = mca_coll_gpu_request_launch(r);
        if (GPU_OK != st) {
            return GPU_ERR_UNSUPPORTED == st ? GPU_ERR_INVALID : st;
        }
    }
    st = gpu_engine_req_test(m->engine, &r->engine);
    if (GPU_OK == st && NULL != r->call.wide) {
        /* the inputs are in: the fold completes the call */
        st = gpu_engine_wide_fold(m->engine, r->call.wide);
    }
    return st;
}

static void mca_coll_gpu_request_done(mca_coll_gpu_request_t *r, gpu_status_t st)
{
    mca_coll_gpu_module_t *m = r->module;

    if (!r->detached) {
        m->q_head = r->q_next;
        if (NULL == m->q_head) {
            m->q_tail = NULL;
        }
    }
    if (0 != r->restart) {
        r->super.super.req_status.MPI_ERROR = r->inner_err;
    } else if (GPU_OK != st) {
        const int peer = r->kfail_peer >= 0 ? r->kfail_peer : mca_coll_gpu_failed_peer(m, st);
        /* the communicator may be freed already: its name was kept */
        mca_coll_gpu_show_help("nonblocking-failed", r->engine.what, gpu_status_string(st));
        r->super.super.req_status.MPI_ERROR = mca_coll_gpu_error(r->comm_name, r->engine.what,
                                                                 st, peer);
    } else {
        r->super.super.req_status.MPI_ERROR = MPI_SUCCESS;
    }
    mca_coll_gpu_trace_end(&r->trace, r->comm_name, 0, 0.0, 0.0, (int) st);
    if (r->user_freed) {
        mca_coll_gpu_request_release(r);
    } else {
        ompi_request_complete(&r->super.super, true);
    }
}

/* Start again the calls whose setup failed.  The entry point takes the
 * lock itself (a staged request goes on its list), so it runs with the
 * lock let go; restart 1 keeps every other pass off these requests. */
static void mca_coll_gpu_restarts(void)
{
    mca_coll_gpu_request_t *todo[16];
    int n = 0;

    for (mca_coll_gpu_request_t *r = mca_coll_gpu_pending_head; NULL != r && n < 16;
         r = r->next) {
        if (1 == r->restart) {
            todo[n++] = r;
        }
    }
    if (0 == n) {
        return;
    }
    OPAL_THREAD_UNLOCK(&mca_coll_gpu_component.lock);
    for (int i = 0; i < n; ++i) {
        mca_coll_gpu_request_t *r = todo[i];
        mca_coll_gpu_module_t *m = r->module;
        ompi_request_t *inner = NULL;
        int ret;
        /* a queued call that goes to the GPU takes this one's place at
         * the head of the queue: the calls queued after it come after it */
        ret = mca_coll_gpu_args_issue(m, &r->args, GPU_KS_ISSUING == r->kstate ? r->kforce : -1,
                                      GPU_KS_ISSUING == r->kstate ? r : NULL, &inner);
        r->inner_err = ret;
        r->inner = MPI_SUCCESS == ret ? inner : NULL;
    }
    OPAL_THREAD_LOCK(&mca_coll_gpu_component.lock);
    for (int i = 0; i < n; ++i) {
        mca_coll_gpu_request_t *r = todo[i];
        mca_coll_gpu_module_t *m = r->module;
        r->restart = 2;
        if (GPU_KS_ISSUING == r->kstate) {
            /* started: the next queued call may go (it is at the head) */
            r->kstate = GPU_KS_STARTED;
            --m->kq;
            r->detached = 1;
            m->q_head = r->q_next;
            if (NULL == m->q_head) {
                m->q_tail = NULL;
            }
        }
    }
}

static int mca_coll_gpu_progress(void)
{
    static int busy;
    mca_coll_gpu_request_t *r, *prev = NULL, *next;
    int done = 0;

    /* another thread is in this pass, or this thread is, further out; or
     * this is CUDA's host-function thread (an enqueued collective waiting
     * in coll_gpu_mpix.c), where the CUDA calls of device requests are not
     * allowed: the application's threads progress them */
    if (busy || mca_coll_gpu_in_cuda_callback || OPAL_THREAD_TRYLOCK(&mca_coll_gpu_component.lock)) {
        return 0;
    }
    busy = 1;
    mca_coll_gpu_setups_progress();
    for (r = mca_coll_gpu_pending_head; NULL != r; r = next) {
        gpu_status_t st = GPU_INPROGRESS;
        next = r->next;
        if (r == r->module->q_head || r->detached) {
            st = mca_coll_gpu_request_advance(r);
        }
        if (GPU_INPROGRESS == st) {
            prev = r;
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
        /* the next request of this communicator may go in this same pass:
         * it comes later in the list */
        mca_coll_gpu_request_done(r, st);
        ++done;
    }
    /* persistent requests whose round just completed complete in this pass */
    done += mca_coll_gpu_persistent_progress();
    done += mca_coll_gpu_staged_progress();
    mca_coll_gpu_restarts();
    busy = 0;
    OPAL_THREAD_UNLOCK(&mca_coll_gpu_component.lock);
    return done;
}

int mca_coll_gpu_drain(mca_coll_gpu_module_t *m)
{
    /* each request bounds its own waits; this bound catches one that
     * would not, and says which call it was */
    const double limit = 2.0 * mca_coll_gpu_timeout_s() + 5.0;
    const double deadline = gpu_clock_now() + limit;
    for (;;) {
        char what[sizeof(m->q_head->engine.what)] = "the communicator's setup";
        OPAL_THREAD_LOCK(&mca_coll_gpu_component.lock);
        const int empty = NULL == m->q_head && MCA_COLL_GPU_BOOT_SETUP != m->boot;
        if (NULL != m->q_head) {
            memcpy(what, m->q_head->engine.what, sizeof(what));
        }
        OPAL_THREAD_UNLOCK(&mca_coll_gpu_component.lock);
        if (empty) {
            return MPI_SUCCESS;
        }
        if (gpu_clock_now() > deadline) {
            GPU_ERROR("%s: a blocking call waited %.0f s for the nonblocking %s started before "
                      "it; giving up", m->comm->c_name, limit, what);
            return mca_coll_gpu_error(m->comm->c_name, what, GPU_ERR_TIMEOUT, -1);
        }
        opal_progress();
    }
}

void mca_coll_gpu_progress_needed(void)
{
    if (!mca_coll_gpu_progress_registered) {
        opal_progress_register(mca_coll_gpu_progress);
        mca_coll_gpu_progress_registered = 1;
    }
}

void mca_coll_gpu_request_prepare(mca_coll_gpu_nbc_request_t *q, struct ompi_communicator_t *comm,
                                  bool persistent)
{
    ompi_request_t *r = &q->super;
    OMPI_REQUEST_INIT(r, persistent);
    q->cb.req_complete_cb = NULL;
    q->req_complete_cb_data = NULL;
    memset(&q->data, 0, sizeof(q->data));
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
    r->super.super.req_state = OMPI_REQUEST_ACTIVE;
    r->super.super.req_free = mca_coll_gpu_request_free;
    OBJ_RETAIN(m);                  /* the engine must outlive the request */
    r->module = m;
    r->user_freed = 0;
    r->deferred = 0;
    r->restart = 0;
    r->has_args = 0;
    r->inner = NULL;
    r->inner_err = MPI_SUCCESS;
    r->kstate = GPU_KS_NONE;
    r->kcall = 0;
    r->kdeadline = 0.0;
    r->kforce = -1;
    r->kfail_peer = -1;
    r->detached = 0;
    r->ext = NULL;
    r->ext_arg = NULL;
    r->next = NULL;
    r->q_next = NULL;
    r->call.wide = NULL;            /* set by defer, which every started call passes */
    r->call.root = -1;              /* ...and root */
    r->engine.event = NULL;
    r->engine.async = NULL;
    r->engine.direct = NULL;
    r->engine.what[0] = '\0';
    snprintf(r->comm_name, sizeof(r->comm_name), "%s", m->comm->c_name);
    *request = &r->super.super;
    *out = r;
    return MPI_SUCCESS;
}

gpu_engine_req_t *mca_coll_gpu_request_engine(mca_coll_gpu_request_t *r)
{
    return &r->engine;
}

void mca_coll_gpu_request_commit(mca_coll_gpu_request_t *r, int started,
                                 const mca_coll_gpu_trace_t *trace,
                                 mca_coll_gpu_request_t *behind)
{
    mca_coll_gpu_module_t *m = r->module;

    r->trace = *trace;
    if (!started) {                 /* nothing was queued: never hand it out */
        mca_coll_gpu_request_release(r);
        return;
    }
    OPAL_THREAD_LOCK(&mca_coll_gpu_component.lock);
    if (NULL == mca_coll_gpu_pending_tail) {
        mca_coll_gpu_pending_head = r;
    } else {
        mca_coll_gpu_pending_tail->next = r;
    }
    mca_coll_gpu_pending_tail = r;
    if (NULL != behind) {
        /* a queued call re-issued to the GPU: right behind its queue entry,
         * which leaves the queue once this is in */
        r->q_next = behind->q_next;
        behind->q_next = r;
        if (m->q_tail == behind) {
            m->q_tail = r;
        }
    } else if (NULL == m->q_tail) {
        m->q_head = r;
        m->q_tail = r;
    } else {
        m->q_tail->q_next = r;
        m->q_tail = r;
    }
    OPAL_THREAD_UNLOCK(&mca_coll_gpu_component.lock);
}

int mca_coll_gpu_request_queue(mca_coll_gpu_module_t *m, ompi_request_t **request,
                               const mca_coll_gpu_args_t *a, const char *what, uint64_t call,
                               int wait)
{
    mca_coll_gpu_request_t *r;
    mca_coll_gpu_trace_t trace;
    const int ret = mca_coll_gpu_request_start(m, request, &r);

    if (MPI_SUCCESS != ret) {
        return ret;
    }
    r->args = *a;
    r->has_args = 1;
    r->kcall = call;
    r->kstate = wait ? GPU_KS_WAIT : GPU_KS_READY;
    r->kforce = wait ? -1 : 0;
    snprintf(r->engine.what, sizeof(r->engine.what), "%s", what);
    mca_coll_gpu_trace_begin(&trace, what, 0, "queued for the peers' memory kinds");
    OPAL_THREAD_LOCK(&mca_coll_gpu_component.lock);
    ++m->kq;
    OPAL_THREAD_UNLOCK(&mca_coll_gpu_component.lock);
    mca_coll_gpu_request_commit(r, 1, &trace, NULL);
    GPU_LOG(50, "%s on %s queued (call %llu, %s)", what, m->comm->c_name,
            (unsigned long long) call, wait ? "waits for the kinds" : "waits for its turn");
    return MPI_SUCCESS;
}

void mca_coll_gpu_request_ext(mca_coll_gpu_request_t *r, const mca_coll_gpu_req_ext_t *ops,
                              void *arg, const char *what)
{
    r->ext = ops;
    r->ext_arg = arg;
    snprintf(r->engine.what, sizeof(r->engine.what), "%s", what);
}

int mca_coll_gpu_request_defer(mca_coll_gpu_request_t *r, const mca_coll_gpu_call_t *call)
{
    mca_coll_gpu_module_t *m = r->module;

    r->call = *call;
    r->call.args = NULL;
    if (NULL != call->args) {
        r->args = *call->args;
        r->has_args = 1;
    }
    if (NULL != call->plan) {
        r->plan = *call->plan;
        r->call.plan = &r->plan;
    }
    if (NULL != call->wide) {
        r->wide = *call->wide;
        r->call.wide = &r->wide;
    }
    snprintf(r->engine.what, sizeof(r->engine.what), "%s", call->what);
    /* first in line on a ready engine: start now, and a call the engine
     * turns down can still stage */
    OPAL_THREAD_LOCK(&mca_coll_gpu_component.lock);
    r->deferred = NULL != m->q_head || MCA_COLL_GPU_BOOT_READY != m->boot;
    OPAL_THREAD_UNLOCK(&mca_coll_gpu_component.lock);
    return r->deferred;
}

void mca_coll_gpu_request_fini(void)
{
    if (mca_coll_gpu_progress_registered) {
        opal_progress_unregister(mca_coll_gpu_progress);
        mca_coll_gpu_progress_registered = 0;
    }
}
