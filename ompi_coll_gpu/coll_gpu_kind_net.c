/*
 * Memory kinds across nodes: how the device ranks of a communicator that
 * spans nodes learn what the ranks of the other nodes passed for a call.
 *
 * Why: the kind board (util/gpu_kind_board.h) is shared memory, so it
 * tells a rank only what the ranks of its own node posted.  A node whose
 * ranks all passed host memory runs Open MPI's algorithm and never enters
 * ours, so nothing of ours would tell the device ranks elsewhere: they
 * would set up the hierarchy (a collective exchange the host ranks never
 * join) or run it, and wait until coll_gpu_timeout.
 *
 * How: every rank posts on its board as on one node (one store per call,
 * host ranks too) and keeps one receive posted on each such communicator
 * for queries (tag GPU_KNET_TAG_QUERY, any source; its completion callback
 * only raises a flag and the component's progress answers).  A device rank
 * at a blocking call first reads its own node's posts (shared memory),
 * then sends one query per other node to that node's first rank (its
 * speaker), naming the call and the node's ranks; the speaker answers
 * (GPU_KNET_TAG_REPLY) once all of them posted it: all device, or some
 * host.  So every device rank knows every rank's kind for the call before
 * it sets anything up or moves data, and all choose alike: our path when
 * all are device, else the staged path on host copies, which runs Open
 * MPI's algorithm as the host ranks do.  The speaker needs no state of its
 * own for this: the query names the ranks and the board has the posts.
 *
 * Costs: a host-buffer call posts as on one node, nothing more; a blocking
 * device call on such a communicator pays one round trip to the other
 * nodes (the queries run in parallel); a nonblocking one the hierarchy can
 * run (coll_gpu_hier_nb.c) asks the same from progress while it is queued
 * (mca_coll_gpu_knet_round_*, one round at a time per communicator), the
 * other nonblocking ones ask nothing and stage on every rank alike.  A speaker answers from inside whatever MPI call it is in
 * (Open MPI's progress), so a node whose ranks left a rooted collective
 * early answers at their next MPI call at the latest; if they freed the
 * communicator meanwhile, it stays alive for our receive among the last
 * GPU_KNET_GHOSTS freed ones, and the board keeps a freed slot's posts
 * (gpu_kind_slot_find_last).
 *
 * Tags -8 and -7 sit above Open MPI's collective tags (-10 and down, see
 * coll_gpu_xg.c for -9): no user message and no collective of Open MPI
 * can match them, on ob1 or on pml/ucx's 24-bit tags.
 */
#include "ompi_config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "coll_gpu.h"

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

#define GPU_KNET_TAG_QUERY (-8)
#define GPU_KNET_TAG_REPLY (-7)
#define GPU_KNET_MAGIC 0x6b6e657431000000ull   /* "knet1", low bytes: member count */
#define GPU_KNET_STATUS_Q (1ull << 16)         /* "who has not posted it?", answered at once */
#define GPU_KNET_MEMBERS 64                    /* of one node in one query */
#define GPU_KNET_GHOSTS 32
#define GPU_KNET_SENDS 64
#define GPU_KNET_HELD 8                        /* queries kept per communicator */

enum { GPU_KNET_DEVICE = 1, GPU_KNET_HOST = 0, GPU_KNET_ERROR = -1, GPU_KNET_STATUS = 2 };

/* a query: magic | nmem, communicator key, call, then the node's ranks */
typedef struct {
    uint64_t head, key, call;
    int32_t rank[GPU_KNET_MEMBERS];
} gpu_knet_query_t;

/* an answer: the same key and call, and the verdict; to a status query,
 * the first of the node's ranks that has not posted the call (-1: none) */
typedef struct {
    uint64_t head, key, call;
    int64_t verdict, missing;
} gpu_knet_reply_t;

struct mca_coll_gpu_knet {
    mca_coll_gpu_module_t *m;
    ompi_request_t *rreq;          /* the posted query receive */
    gpu_knet_query_t q;            /* what it receives */
    struct {                       /* queries waiting for their node's posts */
        gpu_knet_query_t q;
        int src;
    } hq[GPU_KNET_HELD];
    int nheld;
    int freed;                     /* the communicator was freed: a ghost */
    int closing;                   /* the receive is being cancelled */
    /* queries answered for the newest call asked about: a speaker whose
     * call goes to the hierarchy first answers every remote rank (the
     * hierarchy's waits do not progress MPI) */
    volatile uint64_t acall;
    volatile int acount;
    /* the querier's side, made at the first blocking device call */
    int mapped, nnodes, mynode;
    int *node_of, *speaker;
    int *local, nlocal;            /* my node's ranks but me */
    int nremote;                   /* the other nodes' ranks */
    gpu_knet_query_t *out;         /* one query per node */
    gpu_knet_reply_t *in;          /* one answer per node */
    ompi_request_t **ireq;
    uint64_t rcall;                /* the round out: its call, answers due, verdict so far */
    int rleft, rverdict;
    /* who has not posted a call, asked when a wait timed out (names the
     * rank in the error): one round at a time per communicator */
    gpu_knet_query_t *sout;
    gpu_knet_reply_t *sin;
    ompi_request_t **sreq;
    int asking, ask_missing;
    uint64_t ask_call;
    double ask_until;
};

typedef struct mca_coll_gpu_knet gpu_knet_t;

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

/* ompi_request_free and ompi_request_wait leave MPI_REQUEST_NULL behind,
 * not NULL, and this file reads NULL as "nothing out": a slot left at the
 * null request looked like a fresh answer at the next scan, so one node's
 * answer was counted twice and a rank decided before every node had
 * spoken (across 4 nodes: one rank took the GPU path, the others staged) */
static void gpu_knet_release(ompi_request_t **r, int wait)
{
    if (wait) {
        (void) ompi_request_wait(r, MPI_STATUS_IGNORE);
    } else {
        (void) ompi_request_free(r);
    }
    *r = NULL;
}

/* what a query carries: the head and its node's ranks only */
static size_t gpu_knet_qbytes(const gpu_knet_query_t *q)
{
    return offsetof(gpu_knet_query_t, rank) + sizeof(int32_t) * (size_t) (q->head & 0xffff);
}

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

/* The querier's view: nodes from Open MPI's locality (my host) and host
 * names (the others), split like the hierarchy's; each node's first rank
 * speaks for it; the queries are built once. */
static int gpu_knet_map(gpu_knet_t *k)
{
    ompi_communicator_t *comm = k->m->comm;
    const int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    uint64_t *host = malloc(sizeof(uint64_t) * (size_t) n);
    int ok = 0;

    k->node_of = malloc(sizeof(int) * (size_t) n);
    k->local = malloc(sizeof(int) * (size_t) n);
    if (NULL == host || NULL == k->node_of || NULL == k->local) {
        goto out;
    }
    for (int r = 0; r < n; ++r) {
        ompi_proc_t *p = ompi_comm_peer_lookup(comm, r);
        const char *name = NULL;
        if (r == me || (NULL != p && OPAL_PROC_ON_LOCAL_NODE(p->super.proc_flags))) {
            host[r] = 0;
            continue;
        }
        name = NULL != p ? opal_get_proc_hostname(&p->super) : NULL;
        /* no name: a node of its own, asked on its own */
        host[r] = NULL != name ? gpu_nodes_name_key(name) | 1 : ((uint64_t) r << 1) | 1;
    }
    k->nnodes = gpu_nodes_split(n, host, mca_coll_gpu_component.virtual_nodes, k->node_of);
    if (k->nnodes < 1) {
        goto out;
    }
    k->mynode = k->node_of[me];
    k->speaker = malloc(sizeof(int) * (size_t) k->nnodes);
    k->out = calloc((size_t) k->nnodes, sizeof(*k->out));
    k->in = calloc((size_t) k->nnodes, sizeof(*k->in));
    k->ireq = calloc(2 * (size_t) k->nnodes, sizeof(*k->ireq));
    k->sout = calloc((size_t) k->nnodes, sizeof(*k->sout));
    k->sin = calloc((size_t) k->nnodes, sizeof(*k->sin));
    k->sreq = calloc(2 * (size_t) k->nnodes, sizeof(*k->sreq));
    if (NULL == k->speaker || NULL == k->out || NULL == k->in || NULL == k->ireq ||
        NULL == k->sout || NULL == k->sin || NULL == k->sreq) {
        goto out;
    }
    for (int j = 0; j < k->nnodes; ++j) {
        k->speaker[j] = -1;
        k->out[j].key = mca_coll_gpu_comm_key(comm);
    }
    k->nlocal = 0;
    for (int r = 0; r < n; ++r) {
        const int j = k->node_of[r];
        const uint64_t nmem = k->out[j].head & 0xffff;
        if (j == k->mynode) {
            if (k->speaker[j] < 0) {
                k->speaker[j] = r;
            }
            if (r != me) {
                k->local[k->nlocal++] = r;
            }
            continue;
        }
        if (nmem == GPU_KNET_MEMBERS) {
            goto out;   /* a node this large: not served, see the caller */
        }
        if (k->speaker[j] < 0) {
            k->speaker[j] = r;
        }
        ++k->nremote;
        k->out[j].rank[nmem] = r;
        k->out[j].head = GPU_KNET_MAGIC | (nmem + 1);
    }
    ok = 1;
out:
    free(host);
    k->mapped = ok ? 1 : -1;
    return ok;
}

/* the node map made (at the first call that needs it) and usable */
static int gpu_knet_ready(gpu_knet_t *k)
{
    return NULL != k && (k->mapped > 0 || (0 == k->mapped && gpu_knet_map(k)));
}

int mca_coll_gpu_knet_local(mca_coll_gpu_module_t *m, const int **ranks)
{
    gpu_knet_t *k = m->knet;
    if (!gpu_knet_ready(k)) {
        return -1;
    }
    *ranks = k->local;
    return k->nlocal;
}

/* (Re)post the receive of node j's answer: also after an answer to an
 * earlier round, which is not ours. */
static int gpu_knet_rearm(gpu_knet_t *k, ompi_communicator_t *comm, int j, gpu_knet_reply_t *in,
                          ompi_request_t **req)
{
    return MCA_PML_CALL(irecv(in, sizeof(*in), MPI_BYTE, k->speaker[j], GPU_KNET_TAG_REPLY, comm,
                              req));
}

/* Node j's answer is due into *in (posted first, so it cannot be missed),
 * then the query *out goes to its speaker; reqs[0] the receive, reqs[1]
 * the send.  The call's round and the status round each keep their own. */
static int gpu_knet_query_node(gpu_knet_t *k, ompi_communicator_t *comm, int j,
                               gpu_knet_query_t *out, gpu_knet_reply_t *in,
                               ompi_request_t **reqs)
{
    return OMPI_SUCCESS == gpu_knet_rearm(k, comm, j, in, &reqs[0]) &&
           OMPI_SUCCESS == MCA_PML_CALL(isend(out, (int) gpu_knet_qbytes(out), MPI_BYTE,
                                              k->speaker[j], GPU_KNET_TAG_QUERY,
                                              MCA_PML_BASE_SEND_STANDARD, comm, &reqs[1]));
}

/* One round of queries about a call: a query to every other node's speaker
 * (start), their answers read without waiting (test), what is still out
 * cancelled (end).  One round at a time per communicator: a blocking call
 * runs its own after the queued ones (coll_gpu_request.c) have left. */
gpu_status_t mca_coll_gpu_knet_round_start(mca_coll_gpu_module_t *m, uint64_t call, int *peer)
{
    gpu_knet_t *k = m->knet;

    if (!gpu_knet_ready(k)) {
        return GPU_ERR_UNSUPPORTED;
    }
    k->rcall = call;
    k->rleft = 0;
    k->rverdict = GPU_KNET_DEVICE;
    for (int j = 0; j < k->nnodes; ++j) {
        if (j == k->mynode) {
            continue;
        }
        k->out[j].call = call;
        if (!gpu_knet_query_node(k, m->comm, j, &k->out[j], &k->in[j], &k->ireq[2 * j])) {
            *peer = k->speaker[j];
            return GPU_ERR_NETWORK;
        }
        ++k->rleft;
    }
    return GPU_OK;
}

gpu_status_t mca_coll_gpu_knet_round_test(mca_coll_gpu_module_t *m, int *all_dev, int *peer)
{
    gpu_knet_t *k = m->knet;

    for (int j = 0; j < k->nnodes && k->rleft > 0; ++j) {
        ompi_request_t **rr = &k->ireq[2 * j];
        if (NULL == *rr || !REQUEST_COMPLETE(*rr)) {
            continue;
        }
        gpu_knet_release(rr, 0);
        if (k->in[j].key != k->out[j].key || k->in[j].call != k->rcall) {
            /* the answer to a query of an earlier call that gave up */
            (void) gpu_knet_rearm(k, m->comm, j, &k->in[j], rr);
            continue;
        }
        --k->rleft;
        if (GPU_KNET_ERROR == k->in[j].verdict) {
            *peer = k->speaker[j];
            return GPU_ERR_INVALID;
        }
        if (GPU_KNET_HOST == k->in[j].verdict) {
            k->rverdict = GPU_KNET_HOST;
        }
    }
    if (k->rleft > 0) {
        return GPU_INPROGRESS;
    }
    *all_dev = GPU_KNET_DEVICE == k->rverdict;
    return GPU_OK;
}

void mca_coll_gpu_knet_round_end(mca_coll_gpu_module_t *m, int *peer)
{
    gpu_knet_t *k = m->knet;

    /* what is still out: answers cancelled, queries let go; peer (non-NULL):
     * the first speaker that did not answer */
    for (int j = 0; j < k->nnodes; ++j) {
        if (NULL != k->ireq[2 * j]) {
            if (NULL != peer && *peer < 0) {
                *peer = k->speaker[j];
            }
            (void) ompi_request_cancel(k->ireq[2 * j]);
            gpu_knet_release(&k->ireq[2 * j], 1);
        }
        if (NULL != k->ireq[2 * j + 1]) {
            gpu_knet_release(&k->ireq[2 * j + 1], 1);
        }
    }
}

int mca_coll_gpu_knet_missing(mca_coll_gpu_module_t *m, uint64_t call, int peer)
{
    int missing = -1;
    while (GPU_INPROGRESS == mca_coll_gpu_knet_ask(m, call, 1.0, &missing)) {
        opal_progress();
    }
    return missing >= 0 ? missing : peer;
}

gpu_status_t mca_coll_gpu_knet_remote(mca_coll_gpu_module_t *m, uint64_t call, int *all_dev,
                                      int *peer)
{
    gpu_knet_t *k = m->knet;
    ompi_communicator_t *comm = m->comm;
    const double deadline = gpu_clock_now() + mca_coll_gpu_timeout_s();
    gpu_status_t st = mca_coll_gpu_knet_round_start(m, call, peer);
    int dev = 0;

    if (GPU_ERR_UNSUPPORTED == st) {
        return st;
    }
    while (GPU_OK == st) {
        st = mca_coll_gpu_knet_round_test(m, &dev, peer);
        if (GPU_INPROGRESS != st) {
            break;
        }
        opal_progress();
        st = gpu_clock_now() > deadline ? GPU_ERR_TIMEOUT : GPU_OK;
    }
    mca_coll_gpu_knet_round_end(m, GPU_ERR_TIMEOUT == st ? peer : NULL);
    if (GPU_ERR_TIMEOUT == st) {
        /* name the rank that has not come, not just its node's speaker */
        *peer = mca_coll_gpu_knet_missing(m, call, *peer);
    }
    if (GPU_OK == st && dev && k->nremote > 0 && k->speaker[k->mynode] == ompi_comm_rank(comm)) {
        /* every rank is device, so every remote rank asks me (my node's
         * speaker) for this call: answer them all before the hierarchy,
         * whose waits do not progress MPI */
        while ((k->acall < call || (k->acall == call && k->acount < k->nremote)) &&
               GPU_OK == st) {
            opal_progress();
            if (gpu_clock_now() > deadline) {
                st = GPU_ERR_TIMEOUT;
                *peer = -1;
            }
        }
    }
    if (GPU_OK == st) {
        *all_dev = dev;
    }
    opal_output_verbose(30, mca_coll_gpu_component.output,
                        "coll/gpu: %s: rank %d, call %llu: the other %d node(s) say %s (%s)",
                        comm->c_name, ompi_comm_rank(comm), (unsigned long long) call,
                        k->nnodes - 1, dev ? "all device" : "host", gpu_status_string(st));
    return st;
}

gpu_status_t mca_coll_gpu_knet_ask(mca_coll_gpu_module_t *m, uint64_t call, double limit_s,
                                   int *missing)
{
    gpu_knet_t *k = m->knet;
    ompi_communicator_t *comm = m->comm;
    int left = 0;

    if (!k || !k->asking) {
        *missing = mca_coll_gpu_kind_missing(m, call);
        if (*missing >= 0 || !gpu_knet_ready(k)) {
            return GPU_OK;
        }
        k->asking = 1;
        k->ask_call = call;
        k->ask_missing = -1;
        k->ask_until = gpu_clock_now() + limit_s;
        for (int j = 0; j < k->nnodes; ++j) {
            if (j == k->mynode) {
                continue;
            }
            k->sout[j] = k->out[j];
            k->sout[j].head |= GPU_KNET_STATUS_Q;
            k->sout[j].call = call;
            if (!gpu_knet_query_node(k, comm, j, &k->sout[j], &k->sin[j], &k->sreq[2 * j])) {
                break;
            }
        }
    }
    if (k->ask_call != call) {
        *missing = -1;   /* another call's round is on: no name this time */
        return GPU_OK;
    }
    for (int j = 0; j < k->nnodes; ++j) {
        ompi_request_t **rr = &k->sreq[2 * j];
        if (NULL == *rr) {
            continue;
        }
        if (!REQUEST_COMPLETE(*rr)) {
            ++left;
            continue;
        }
        gpu_knet_release(rr, 0);
        if (k->sin[j].key != k->sout[j].key || k->sin[j].call != call ||
            GPU_KNET_STATUS != k->sin[j].verdict) {
            /* an answer of another round: ours is still due */
            (void) gpu_knet_rearm(k, comm, j, &k->sin[j], rr);
            ++left;
        } else if (k->sin[j].missing >= 0 && k->ask_missing < 0) {
            k->ask_missing = (int) k->sin[j].missing;
        }
    }
    if (left > 0 && k->ask_missing < 0 && gpu_clock_now() < k->ask_until) {
        return GPU_INPROGRESS;
    }
    for (int j = 0; j < k->nnodes; ++j) {
        if (NULL != k->sreq[2 * j]) {
            (void) ompi_request_cancel(k->sreq[2 * j]);   /* a posted receive: done at once */
            if (REQUEST_COMPLETE(k->sreq[2 * j])) {
                gpu_knet_release(&k->sreq[2 * j], 0);
            }
        }
        if (NULL != k->sreq[2 * j + 1]) {
            gpu_knet_release(&k->sreq[2 * j + 1], 0);   /* a small send: finishes on its own */
        }
    }
    k->asking = 0;
    *missing = k->ask_missing;
    return GPU_OK;
}
