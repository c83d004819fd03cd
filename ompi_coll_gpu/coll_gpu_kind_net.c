/*
 * Memory kinds across nodes, the speaker's side: the query receive posted
 * on every communicator that spans nodes, the answers from the component's
 * progress, freed communicators kept as ghosts (design in
 * coll_gpu_kind_net.h; the querier's side is coll_gpu_kind_ask.c).
 */
#include "ompi_config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "coll_gpu.h"
#include "coll_gpu_kind_net.h"

#include "ompi/attribute/attribute.h"
#include "ompi/runtime/mpiruntime.h"
#include "ompi/constants.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/proc/proc.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "util/gpu_clock.h"
#include "util/gpu_nodes.h"

static struct {
    opal_mutex_t lock;             /* the tables below, and progress */
    gpu_knet_t **all;              /* receives posted */
    int nall, cap;
    gpu_knet_t *ghost[GPU_KNET_GHOSTS];
    int nghost;
    struct {
        ompi_request_t *req;
        gpu_knet_reply_t msg;
    } send[GPU_KNET_SENDS];
    int registered, keyval;
    volatile int32_t arrived;
} gpu_knet = { .lock = OPAL_MUTEX_STATIC_INIT, .keyval = -1 };

static int gpu_knet_progress(void);

static int gpu_knet_arrived_cb(ompi_request_t *req)
{
    (void) req;
    gpu_knet.arrived = 1;
    return 0;
}

static int gpu_knet_post(gpu_knet_t *k)
{
    int ret = MCA_PML_CALL(irecv(&k->q, sizeof(k->q), MPI_BYTE, MPI_ANY_SOURCE,
                                 GPU_KNET_TAG_QUERY, k->m->comm, &k->rreq));
    if (OMPI_SUCCESS != ret) {
        k->rreq = NULL;
        return ret;
    }
    return ompi_request_set_callback(k->rreq, gpu_knet_arrived_cb, k);
}

/* Cancel the query receive; the communicator may then go (our receive held
 * it, so its destructor, ours included, may run inside the wait: k is not
 * touched after it).  Called without gpu_knet.lock: the wait progresses. */
static void gpu_knet_unpost(gpu_knet_t *k)
{
    ompi_request_t *r;

    OPAL_THREAD_LOCK(&gpu_knet.lock);
    k->closing = 1;
    r = k->rreq;
    k->rreq = NULL;
    OPAL_THREAD_UNLOCK(&gpu_knet.lock);
    if (NULL != r) {
        if (!REQUEST_COMPLETE(r)) {
            (void) ompi_request_cancel(r);
        }
        (void) ompi_request_wait(&r, MPI_STATUS_IGNORE);
    }
}

static void gpu_knet_free(gpu_knet_t *k)
{
    free(k->node_of);
    free(k->speaker);
    free(k->local);
    free(k->out);
    free(k->in);
    free(k->ireq);
    free(k->sout);
    free(k->sin);
    free(k->sreq);
    free(k);
}

static int gpu_knet_nmem(const gpu_knet_query_t *q)
{
    const int n = (int) (q->head & 0xffff);
    return n < GPU_KNET_MEMBERS ? n : GPU_KNET_MEMBERS;
}

/* What member i of q posted for q's call: GPU_INPROGRESS while it has not;
 * GPU_ERR_INVALID for a rank outside the communicator */
static gpu_status_t gpu_knet_member(gpu_knet_t *k, const gpu_knet_query_t *q, int i, int *kind)
{
    mca_coll_gpu_module_t *m = k->m;
    const int r = q->rank[i];

    if (r < 0 || r >= ompi_comm_size(m->comm)) {
        return GPU_ERR_INVALID;
    }
    if (r == ompi_comm_rank(m->comm)) {
        return NULL != m->kpost.slot ? gpu_kind_read(m->kpost.slot, q->call, kind)
                                     : GPU_INPROGRESS;
    }
    return mca_coll_gpu_kind_read_rank(m, r, q->call, k->freed, kind);
}

/* The verdict for q about this node's ranks: GPU_INPROGRESS while one has
 * not posted the call. */
static gpu_status_t gpu_knet_verdict(gpu_knet_t *k, const gpu_knet_query_t *q, int *verdict)
{
    *verdict = GPU_KNET_DEVICE;
    for (int i = 0; i < gpu_knet_nmem(q); ++i) {
        int kind = GPU_KIND_HOST;
        const gpu_status_t st = gpu_knet_member(k, q, i, &kind);
        if (GPU_INPROGRESS == st) {
            return st;
        }
        if (GPU_OK != st) {
            *verdict = GPU_KNET_ERROR;
            return GPU_OK;
        }
        if (GPU_KIND_HOST == kind || 0 != (kind & GPU_KIND_STAGE)) {
            *verdict = GPU_KNET_HOST;   /* this call stages everywhere */
        }
    }
    return GPU_OK;
}

/* The first rank of q's that has not posted q's call, or -1 */
static int gpu_knet_missing_of(gpu_knet_t *k, const gpu_knet_query_t *q)
{
    for (int i = 0; i < gpu_knet_nmem(q); ++i) {
        int kind;
        if (GPU_INPROGRESS == gpu_knet_member(k, q, i, &kind)) {
            return q->rank[i];
        }
    }
    return -1;
}

/* Answer query q from src, unless its node has not posted the call yet
 * (1: answered or dropped, 0: keep it) */
static int gpu_knet_answer(gpu_knet_t *k, const gpu_knet_query_t *q, int src)
{
    int verdict, slot = -1, missing = -1;

    if (GPU_KNET_MAGIC != (q->head & ~0x1ffffull) || q->key != mca_coll_gpu_comm_key(k->m->comm)) {
        return 1;   /* not a query of ours for this communicator: dropped */
    }
    if (q->head & GPU_KNET_STATUS_Q) {
        verdict = GPU_KNET_STATUS;
        missing = gpu_knet_missing_of(k, q);
    } else if (GPU_INPROGRESS == gpu_knet_verdict(k, q, &verdict)) {
        return 0;
    }
    for (int i = 0; i < GPU_KNET_SENDS && slot < 0; ++i) {
        if (NULL == gpu_knet.send[i].req) {
            slot = i;
        } else if (REQUEST_COMPLETE(gpu_knet.send[i].req)) {
            gpu_knet_release(&gpu_knet.send[i].req, 0);
            slot = i;
        }
    }
    if (slot < 0) {
        return 0;   /* every answer buffer in flight: later */
    }
    gpu_knet.send[slot].msg = (gpu_knet_reply_t) { .head = GPU_KNET_MAGIC, .key = q->key,
                                                   .call = q->call, .verdict = verdict,
                                                   .missing = missing };
    if (GPU_KNET_STATUS == verdict) {
        /* not counted: a status query comes from a rank that gave up */
    } else if (q->call == k->acall) {
        ++k->acount;
    } else if (q->call > k->acall || 0 == k->acount) {
        k->acall = q->call;
        k->acount = 1;
    }
    if (OMPI_SUCCESS != MCA_PML_CALL(isend(&gpu_knet.send[slot].msg, sizeof(gpu_knet_reply_t),
                                           MPI_BYTE, src, GPU_KNET_TAG_REPLY,
                                           MCA_PML_BASE_SEND_STANDARD, k->m->comm,
                                           &gpu_knet.send[slot].req))) {
        gpu_knet.send[slot].req = NULL;
        opal_output_verbose(1, mca_coll_gpu_component.output,
                            "coll/gpu: %s: could not answer a memory-kind query from rank %d",
                            k->m->comm->c_name, src);
    }
    return 1;
}

/* k's work: the queries kept for their node's posts, then the one just
 * received (kept too when it must wait, so that the receive is posted
 * again at once: a status query must never queue behind one that waits).
 * 1 while some query still waits. */
static int gpu_knet_serve(gpu_knet_t *k, int *done)
{
    for (int i = 0; i < k->nheld;) {
        if (gpu_knet_answer(k, &k->hq[i].q, k->hq[i].src)) {
            k->hq[i] = k->hq[--k->nheld];
            ++*done;
        } else {
            ++i;
        }
    }
    if (!k->closing && NULL != k->rreq && REQUEST_COMPLETE(k->rreq) &&
        !k->rreq->req_status._cancelled) {
        const int src = k->rreq->req_status.MPI_SOURCE;
        if (gpu_knet_answer(k, &k->q, src)) {
            ++*done;
        } else if (k->nheld < GPU_KNET_HELD) {
            k->hq[k->nheld].q = k->q;
            k->hq[k->nheld++].src = src;
        } else {
            return 1;   /* full: this one stays in the receive buffer until room */
        }
        /* the next receive first: the old one may hold the last reference
         * to a freed communicator, whose destructor would take k with it */
        ompi_request_t *old = k->rreq;
        if (OMPI_SUCCESS != gpu_knet_post(k)) {
            k->rreq = NULL;
        }
        ompi_request_free(&old);
    }
    return k->nheld > 0;
}

static int gpu_knet_progress(void)
{
    static int inside;   /* a PML call below may progress again */
    int done = 0, again = 0;

    if (!gpu_knet.arrived || inside) {
        return 0;
    }
    if (opal_using_threads() && 0 != opal_mutex_trylock(&gpu_knet.lock)) {
        return 0;   /* another thread is at it */
    }
    inside = 1;
    gpu_knet.arrived = 0;
    for (int i = 0; i < gpu_knet.nall; ++i) {
        again |= gpu_knet_serve(gpu_knet.all[i], &done);
    }
    if (again) {
        gpu_knet.arrived = 1;   /* look again at the next progress */
    }
    inside = 0;
    if (opal_using_threads()) {
        opal_mutex_unlock(&gpu_knet.lock);
    }
    return done;
}

/* MPI_Comm_dup: the new communicator's enable attaches its own */
static int gpu_knet_comm_copy(MPI_Comm comm, int keyval, void *extra, void *in, void *out,
                              int *flag)
{
    (void) comm;
    (void) keyval;
    (void) extra;
    (void) in;
    (void) out;
    *flag = 0;
    return MPI_SUCCESS;
}

#if MCA_COLL_GPU_OMPI5
typedef MPI_Comm_copy_attr_function gpu_knet_copy_fn_t;
#else
typedef MPI_Comm_internal_copy_attr_function gpu_knet_copy_fn_t;   /* one more argument */
#endif

/* The communicator is freed: stay a while as a ghost (ranks elsewhere may
 * still ask about its last calls), retiring the oldest ghost. */
static int gpu_knet_comm_delete(ompi_communicator_t *comm, int keyval, void *value, void *extra)
{
    gpu_knet_t *k = value, *old = NULL;
    (void) comm;
    (void) keyval;
    (void) extra;
    if (ompi_mpi_state >= OMPI_MPI_STATE_FINALIZE_STARTED) {
        return OMPI_SUCCESS;   /* MPI_Finalize: the module's destructor follows */
    }
    OPAL_THREAD_LOCK(&gpu_knet.lock);
    k->freed = 1;
    if (GPU_KNET_GHOSTS == gpu_knet.nghost) {
        old = gpu_knet.ghost[0];
        memmove(gpu_knet.ghost, gpu_knet.ghost + 1, sizeof(gpu_knet.ghost[0]) * (GPU_KNET_GHOSTS - 1));
        --gpu_knet.nghost;
    }
    gpu_knet.ghost[gpu_knet.nghost++] = k;
    OPAL_THREAD_UNLOCK(&gpu_knet.lock);
    if (NULL != old) {
        gpu_knet_unpost(old);   /* its communicator and module may go now */
    }
    return OMPI_SUCCESS;
}

int mca_coll_gpu_knet_attach(mca_coll_gpu_module_t *m)
{
    gpu_knet_t *k = calloc(1, sizeof(*k));
    int ret = OMPI_ERROR;

    if (NULL == k) {
        return 0;
    }
    k->m = m;
    OPAL_THREAD_LOCK(&gpu_knet.lock);
    if (gpu_knet.keyval < 0) {
        ompi_attribute_fn_ptr_union_t copy, del;
        copy.attr_communicator_copy_fn = (gpu_knet_copy_fn_t *) gpu_knet_comm_copy;
        del.attr_communicator_delete_fn = (MPI_Comm_delete_attr_function *) gpu_knet_comm_delete;
        if (OMPI_SUCCESS != ompi_attr_create_keyval(COMM_ATTR, copy, del, &gpu_knet.keyval, NULL,
                                                    0, NULL)) {
            gpu_knet.keyval = -1;
        }
    }
    if (gpu_knet.nall == gpu_knet.cap) {
        const int cap = gpu_knet.cap ? 2 * gpu_knet.cap : 64;
        gpu_knet_t **all = realloc(gpu_knet.all, sizeof(*all) * (size_t) cap);
        if (NULL != all) {
            gpu_knet.all = all;
            gpu_knet.cap = cap;
        }
    }
    if (gpu_knet.keyval >= 0 && gpu_knet.nall < gpu_knet.cap &&
        OMPI_SUCCESS == ompi_attr_set_c(COMM_ATTR, m->comm, &m->comm->c_keyhash, gpu_knet.keyval,
                                        k, false)) {
        ret = gpu_knet_post(k);
        gpu_knet.all[gpu_knet.nall++] = k;   /* detach takes it out again */
        if (!gpu_knet.registered) {
            opal_progress_register(gpu_knet_progress);
            gpu_knet.registered = 1;
        }
    }
    m->knet = k;
    OPAL_THREAD_UNLOCK(&gpu_knet.lock);
    if (OMPI_SUCCESS != ret) {
        opal_output_verbose(1, mca_coll_gpu_component.output,
                            "coll/gpu: %s: no memory-kind service across nodes; every rank must "
                            "pass device memory in its device collectives", m->comm->c_name);
        mca_coll_gpu_knet_detach(m);
        return 0;
    }
    return 1;
}

void mca_coll_gpu_knet_detach(mca_coll_gpu_module_t *m)
{
    gpu_knet_t *k = m->knet;

    if (NULL == k) {
        return;
    }
    m->knet = NULL;
    OPAL_THREAD_LOCK(&gpu_knet.lock);
    for (int i = 0; i < gpu_knet.nall; ++i) {
        if (gpu_knet.all[i] == k) {
            gpu_knet.all[i] = gpu_knet.all[--gpu_knet.nall];
            break;
        }
    }
    for (int i = 0; i < gpu_knet.nghost; ++i) {
        if (gpu_knet.ghost[i] == k) {
            memmove(gpu_knet.ghost + i, gpu_knet.ghost + i + 1,
                    sizeof(gpu_knet.ghost[0]) * (size_t) (gpu_knet.nghost - i - 1));
            --gpu_knet.nghost;
            break;
        }
    }
    OPAL_THREAD_UNLOCK(&gpu_knet.lock);
    gpu_knet_unpost(k);
    gpu_knet_free(k);
}

/* Component close: the communicators went at MPI_Finalize (each module's
 * destructor cancelled its receive, ghosts' too); answers still in flight
 * are left to the PML. */
void mca_coll_gpu_knet_fini(void)
{
    for (int i = 0; i < GPU_KNET_SENDS; ++i) {
        if (NULL != gpu_knet.send[i].req && REQUEST_COMPLETE(gpu_knet.send[i].req)) {
            gpu_knet_release(&gpu_knet.send[i].req, 0);
        }
    }
    free(gpu_knet.all);
    gpu_knet.all = NULL;
    gpu_knet.nall = gpu_knet.cap = gpu_knet.nghost = 0;
    if (gpu_knet.registered) {
        opal_progress_unregister(gpu_knet_progress);
        gpu_knet.registered = 0;
    }
}
