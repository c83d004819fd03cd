/*
 * Memory kinds across ranks: the component side of the kind board
 * (util/gpu_kind_board.h says why and how).  One board per process, made
 * at the first communicator that needs one; the peers' boards are opened
 * at the first device call that reads them.  Only communicators whose
 * ranks all sit on this node (one job) have a slot; across nodes the
 * hierarchy's choice stays local (README, Reliability).
 */
#include "ompi_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "coll_gpu.h"
#include "coll_gpu_route.h"

#include "opal/runtime/opal_progress.h"
#include "opal/util/proc.h"
#include "ompi/constants.h"
#include "ompi/proc/proc.h"
#include "util/gpu_clock.h"

static gpu_kind_board_t *gpu_kind_mine;
static int gpu_kind_failed;
static char gpu_kind_my_name[80];

/* the boards of the peers, by process name */
#define GPU_KIND_PEERS 1024
static struct {
    opal_process_name_t name;
    gpu_kind_board_t *board;
} gpu_kind_peer[GPU_KIND_PEERS];
static int gpu_kind_npeer;
/* the peer table's own lock: progress reads peers' kinds holding the
 * component's */
static opal_mutex_t gpu_kind_lock = OPAL_MUTEX_STATIC_INIT;

static void gpu_kind_name(char *buf, size_t len, const opal_process_name_t *p)
{
    snprintf(buf, len, "/gpucoll-kind-%u-%u-%u", (unsigned) getuid(), (unsigned) p->jobid,
             (unsigned) p->vpid);
}

/*
 * A board's name is not unique over time: the jobid comes from mpirun's
 * host and pid, so a later job whose mpirun gets the same pid (a fresh pid
 * namespace, pids wrapped) reuses the names, and a job that did not reach
 * MPI_Finalize (an abort, a kill) leaves its boards in /dev/shm.  The board
 * is made at the first communicator that needs one, after MPI_Init's last
 * fence, so a peer already in its first collective would open such a
 * leftover, keep it (gpu_kind_peer) and read an earlier job's calls: a
 * wrong kind, a wait until coll_gpu_timeout, or GPU_ERR_INVALID when that
 * job's change points start after call 0 ("stopped at an earlier
 * failure").  So a leftover under this process's name goes here, at the
 * coll framework's init_query, which runs before a fence every process of
 * the job passes before its MPI_Init returns (4.1: the barrier at the end
 * of MPI_Init; 5.0: the modex fence after the instance's init), while
 * peers open boards only from their first collective on.  (With
 * mpi_async_mpi_init / an async modex that fence is skipped and the window
 * stays as narrow as a process's own MPI_Init.)
 */
void mca_coll_gpu_kind_init(void)
{
    const opal_process_name_t me = opal_proc_local_get()->proc_name;
    char name[80];

    gpu_kind_name(name, sizeof(name), &me);
    gpu_kind_board_unlink(name);
}

void mca_coll_gpu_kind_attach(mca_coll_gpu_module_t *m, int one_node)
{
    const int n = ompi_comm_size(m->comm);
    const opal_process_name_t me = opal_proc_local_get()->proc_name;

    if (n < 2 || n > GPU_KIND_PEERS || (!one_node && !mca_coll_gpu_component.kind_across_nodes)) {
        return;
    }
    for (int i = 0; i < n; ++i) {
        const ompi_proc_t *p = ompi_comm_peer_lookup(m->comm, i);
        if (NULL == p || p->super.proc_name.jobid != me.jobid) {
            return;   /* spawned or connected jobs: no shared naming */
        }
    }
    OPAL_THREAD_LOCK(&mca_coll_gpu_component.lock);
    if (NULL == gpu_kind_mine && !gpu_kind_failed) {
        gpu_kind_name(gpu_kind_my_name, sizeof(gpu_kind_my_name), &me);
        if (GPU_OK != gpu_kind_board_create(gpu_kind_my_name, &gpu_kind_mine)) {
            gpu_kind_failed = 1;
            mca_coll_gpu_show_help("kind-board-failed", gpu_kind_my_name);
        }
    }
    if (NULL != gpu_kind_mine &&
        GPU_OK != gpu_kind_slot_claim(gpu_kind_mine, mca_coll_gpu_comm_key(m->comm), &m->kpost)) {
        m->kpost.slot = NULL;
        mca_coll_gpu_show_help("kind-board-full", m->comm->c_name, GPU_KIND_SLOTS);
    }
    OPAL_THREAD_UNLOCK(&mca_coll_gpu_component.lock);
    if (NULL != m->kpost.slot) {
        const int t = mca_coll_gpu_component.kind_test_device;
        m->kpretend = !one_node && (1 == t || (2 == t && ompi_comm_rank(m->comm) >= n / 2));
        m->kpeer = calloc((size_t) n, sizeof(*m->kpeer));
        /* across nodes the other nodes answer queries (coll_gpu_kind_net.c) */
        if (NULL == m->kpeer || (!one_node && !mca_coll_gpu_knet_attach(m))) {
            OPAL_THREAD_LOCK(&mca_coll_gpu_component.lock);
            gpu_kind_slot_release(&m->kpost);
            OPAL_THREAD_UNLOCK(&mca_coll_gpu_component.lock);
            free(m->kpeer);
            m->kpeer = NULL;
        }
    }
}

void mca_coll_gpu_kind_detach(mca_coll_gpu_module_t *m)
{
    mca_coll_gpu_knet_detach(m);
    if (NULL != m->kpost.slot) {
        OPAL_THREAD_LOCK(&mca_coll_gpu_component.lock);
        gpu_kind_slot_release(&m->kpost);
        OPAL_THREAD_UNLOCK(&mca_coll_gpu_component.lock);
    }
    free(m->kpeer);
    m->kpeer = NULL;
}

void mca_coll_gpu_kind_fini(void)
{
    for (int i = 0; i < gpu_kind_npeer; ++i) {
        gpu_kind_board_close(gpu_kind_peer[i].board);
    }
    gpu_kind_npeer = 0;
    if (NULL != gpu_kind_mine) {
        gpu_kind_board_close(gpu_kind_mine);
        gpu_kind_board_unlink(gpu_kind_my_name);
        gpu_kind_mine = NULL;
    }
}

/* Peer q's slot for this communicator: GPU_INPROGRESS while its board or
 * slot does not exist yet.  freed: also the slot q let go when it freed the
 * communicator (only for a communicator freed here too: before that, a
 * freed slot of the same key may be an earlier communicator's). */
static gpu_status_t gpu_kind_peer_slot(mca_coll_gpu_module_t *m, int q, int freed)
{
    const ompi_proc_t *p = ompi_comm_peer_lookup(m->comm, q);
    gpu_kind_board_t *b = NULL;
    gpu_kind_slot_t *s;
    char name[80];
    gpu_status_t st = GPU_OK;
    int gone;

    OPAL_THREAD_LOCK(&gpu_kind_lock);
    for (int i = 0; i < gpu_kind_npeer && NULL == b; ++i) {
        if (gpu_kind_peer[i].name.vpid == p->super.proc_name.vpid &&
            gpu_kind_peer[i].name.jobid == p->super.proc_name.jobid) {
            b = gpu_kind_peer[i].board;
        }
    }
    if (NULL == b) {
        gpu_kind_name(name, sizeof(name), &p->super.proc_name);
        st = gpu_kind_board_open(name, &b);
        if (GPU_OK == st && gpu_kind_npeer < GPU_KIND_PEERS) {
            gpu_kind_peer[gpu_kind_npeer].name = p->super.proc_name;
            gpu_kind_peer[gpu_kind_npeer++].board = b;
        }
    }
    OPAL_THREAD_UNLOCK(&gpu_kind_lock);
    if (GPU_OK != st) {
        return st;
    }
    s = gpu_kind_slot_find_last(b, mca_coll_gpu_comm_key(m->comm), &gone);
    m->kpeer[q] = !gone || freed ? s : NULL;
    return NULL != m->kpeer[q] ? GPU_OK : GPU_INPROGRESS;
}

gpu_status_t mca_coll_gpu_kind_read_rank(mca_coll_gpu_module_t *m, int q, uint64_t call,
                                         int freed, int *kind)
{
    gpu_status_t st = NULL != m->kpeer[q] ? GPU_OK : gpu_kind_peer_slot(m, q, freed);
    return GPU_OK == st ? gpu_kind_read(m->kpeer[q], call, kind) : st;
}

/* The peers whose boards this rank reads: every other rank, or across
 * nodes those of its own node (the others answer queries) */
static int gpu_kind_readers(mca_coll_gpu_module_t *m, const int **list)
{
    const int nl = NULL != m->knet ? mca_coll_gpu_knet_local(m, list) : -1;
    if (nl < 0) {
        *list = NULL;
        return ompi_comm_size(m->comm);
    }
    return nl;
}

int mca_coll_gpu_kind_missing(mca_coll_gpu_module_t *m, uint64_t call)
{
    const int me = ompi_comm_rank(m->comm);
    const int *list;
    const int n = gpu_kind_readers(m, &list);
    int kind;

    if (NULL == m->kpost.slot) {
        return -1;
    }
    for (int i = 0; i < n; ++i) {
        const int q = NULL != list ? list[i] : i;
        if (q != me && GPU_INPROGRESS == mca_coll_gpu_kind_read_rank(m, q, call, 0, &kind)) {
            return q;
        }
    }
    return -1;
}

/* Spin briefly (the peers of a tight loop post within a microsecond),
 * then progress the rest of MPI while waiting; bounded by coll_gpu_timeout. */
typedef struct {
    double deadline;
    unsigned spins;
} gpu_kind_wait_t;

static int gpu_kind_wait_more(gpu_kind_wait_t *w)
{
    if (++w->spins < 2048) {
        return 1;
    }
    if (0 == (w->spins & 63)) {
        opal_progress();
        if (0.0 == w->deadline) {
            w->deadline = gpu_clock_now() + mca_coll_gpu_timeout_s();
        } else if (gpu_clock_now() > w->deadline) {
            return 0;
        }
    }
    return 1;
}

/* What the peers posted for call: *all_dev (every rank can take the GPU
 * path), *all_mem (every rank passed device memory: none runs on host
 * memory; may be NULL), and (busy non-NULL, all device) whether any peer
 * posted GPU_KIND_BUSY and (pool) whether every peer posted GPU_KIND_POOL. */
static gpu_status_t gpu_kind_scan(mca_coll_gpu_module_t *m, uint64_t call, int *all_dev,
                                  int *all_mem, int *busy, int *pool, int *peer)
{
    const int me = ompi_comm_rank(m->comm);
    const int *list;
    const int n = gpu_kind_readers(m, &list);
    int any_busy = 0, any_stage = 0, all_pool = GPU_KIND_POOL;

    for (int i = 0; i < n; ++i) {
        const int q = NULL != list ? list[i] : i;
        int k;
        gpu_status_t st;
        if (q == me) {
            continue;
        }
        st = mca_coll_gpu_kind_read_rank(m, q, call, 0, &k);
        if (GPU_OK != st) {
            *peer = q;
            return st;
        }
        if (GPU_KIND_HOST == k) {
            *all_dev = 0;   /* this call stages on every device rank */
            if (NULL != all_mem) {
                *all_mem = 0;
            }
            return GPU_OK;
        }
        any_busy |= k & GPU_KIND_BUSY;
        any_stage |= k & GPU_KIND_STAGE;
        all_pool &= k;
    }
    *all_dev = !any_stage;
    if (NULL != all_mem) {
        *all_mem = 1;
    }
    if (NULL != busy) {
        *busy = any_busy;
    }
    if (NULL != pool) {
        *pool = 0 != all_pool;
    }
    return GPU_OK;
}

gpu_status_t mca_coll_gpu_kind_peek(mca_coll_gpu_module_t *m, uint64_t call, int *all_dev,
                                    int *peer)
{
    return gpu_kind_scan(m, call, all_dev, NULL, NULL, NULL, peer);
}

/* Many kind changes ahead of a peer: wait until every peer has passed the
 * oldest change point kept. */
static int gpu_kind_make_room(mca_coll_gpu_module_t *m, const char *what, gpu_kind_wait_t *w)
{
    const int me = ompi_comm_rank(m->comm);
    const int *list;
    /* across nodes only the readers of this node count: a rank elsewhere
     * asks this node's speaker, which reads at once, so history it needs
     * is lost only to a node that ran 24 kind changes ahead of it */
    const int n = gpu_kind_readers(m, &list);
    for (;;) {
        uint64_t lo = UINT64_MAX;
        int i = 0, q = -1, slowest = -1;
        for (; i < n; ++i) {
            q = NULL != list ? list[i] : i;
            if (q == me) {
                continue;
            }
            if (NULL == m->kpeer[q] && GPU_OK != gpu_kind_peer_slot(m, q, 0)) {
                break;
            }
            if (m->kpeer[q]->pub < lo) {
                lo = m->kpeer[q]->pub;
                slowest = q;
            }
        }
        if (i == n && gpu_kind_room(&m->kpost, lo)) {
            return MPI_SUCCESS;
        }
        if (!gpu_kind_wait_more(w)) {
            /* whom: the peer without a slot, else the one furthest behind */
            const int peer = i < n ? q : slowest;
            opal_output(0, "coll/gpu: %s on %s: rank %d has kept %d changes of memory kind "
                        "ahead of rank %d, which entered %llu calls of this communicator "
                        "against its %llu, and waited %g s for it to catch up",
                        what, m->comm->c_name, me, GPU_KIND_CHANGES, peer,
                        (unsigned long long) (i < n ? 0 : lo),
                        (unsigned long long) m->kpost.calls, mca_coll_gpu_timeout_s());
            return mca_coll_gpu_error(m->comm->c_name, what, GPU_ERR_TIMEOUT, peer);
        }
    }
}

/* Wait (bounded, progressing) for what the peers posted for call:
 * GPU_OK with *all_dev, or an error about *peer.  For the current call it
 * also keeps whether a rank is busy (m->kbusy) and whether every rank
 * holds its pool (m->kpool, on one node only) for the engine. */
static gpu_status_t gpu_kind_wait_peers(mca_coll_gpu_module_t *m, uint64_t call, int *all_dev,
                                        int *peer)
{
    gpu_kind_wait_t w = { 0.0, 0 };
    gpu_status_t st;
    int busy = 0, pool = 0;

    while (GPU_INPROGRESS == (st = gpu_kind_scan(m, call, all_dev, NULL, &busy, &pool, peer))) {
        if (!gpu_kind_wait_more(&w)) {
            return GPU_ERR_TIMEOUT;
        }
    }
    if (GPU_OK == st && call == m->kcall) {
        /* with my own post for it, the newest */
        m->kbusy = *all_dev && (busy || 0 != (m->kpost.kind & GPU_KIND_BUSY));
        /* across nodes the other nodes' votes are not read: no answer */
        m->kpool = NULL == m->knet ? *all_dev && pool && 0 != (m->kpost.kind & GPU_KIND_POOL)
                                   : -1;
    }
    return st;
}

static int gpu_kind_wait_all(mca_coll_gpu_module_t *m, uint64_t call, const char *what,
                             int *go_dev)
{
    int all_dev, peer = -1;
    const gpu_status_t st = gpu_kind_wait_peers(m, call, &all_dev, &peer);

    if (GPU_OK != st) {
        return mca_coll_gpu_error(m->comm->c_name, what, st, peer);
    }
    *go_dev = all_dev;
    return MPI_SUCCESS;
}

/* A blocking device call on a communicator across nodes: my node's posts
 * from the board, the other nodes' from their speakers; before anything is
 * set up or moved, so that every rank goes the same way. */
static int gpu_kind_across(mca_coll_gpu_module_t *m, uint64_t call, const char *what,
                           int *go_dev)
{
    const int *list;
    int all_dev = 1, peer = -1;
    gpu_status_t st = GPU_OK;

    if (mca_coll_gpu_knet_local(m, &list) < 0) {
        return MPI_SUCCESS;   /* no map (a node of over 64 ranks): as before, trusted */
    }
    st = gpu_kind_wait_peers(m, call, &all_dev, &peer);
    if (GPU_OK == st && all_dev) {
        peer = -1;   /* the local wait may have named a peer that came since */
        st = mca_coll_gpu_knet_remote(m, call, &all_dev, &peer);
    }
    if (GPU_OK != st) {
        return mca_coll_gpu_error(m->comm->c_name, what, st, peer);
    }
    *go_dev = all_dev;
    return MPI_SUCCESS;
}

/* Across nodes.  A blocking device call asks at once, after the nonblocking
 * calls started before it have left the queue (their rounds of queries and
 * their runs on the hierarchy use what it would use).  A nonblocking device
 * call the hierarchy can take (native) queues and asks from progress
 * (coll_gpu_request.c), and while one is queued every later nonblocking
 * call queues behind it: every rank starts Open MPI's nonblocking forms in
 * call order.  Other nonblocking calls start at once and stage or run on
 * host memory on every rank alike. */
static int gpu_kind_across_call(mca_coll_gpu_module_t *m, uint64_t call, ompi_request_t **req,
                                const char *what, const mca_coll_gpu_args_t *a, int dev,
                                int native, int *go_dev)
{
    int ret;

    if (NULL == req) {
        if (!dev) {
            return MPI_SUCCESS;
        }
        ret = mca_coll_gpu_drain(m);
        return MPI_SUCCESS != ret ? ret : gpu_kind_across(m, call, what, go_dev);
    }
    if (NULL == a || (!native && 0 == m->kq)) {
        return MPI_SUCCESS;
    }
    ret = mca_coll_gpu_request_queue(m, req, a, what, call, native);
    if (MPI_SUCCESS == ret) {
        *go_dev = -1;
    }
    return ret;
}

/* Only where the native path decides at once: the resident kernel may take
 * these from a set-up engine, and the entry points route nothing else to
 * the GPU before it (hierarchy calls need several nodes, no board). */
static int gpu_kind_may_defer(const mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a)
{
    if (NULL == a || 0 != m->kq || MCA_COLL_GPU_BOOT_READY != m->boot || NULL == m->engine) {
        return 0;
    }
    return MCA_COLL_GPU_ARGS_ALLREDUCE == a->kind || MCA_COLL_GPU_ARGS_ALLGATHER == a->kind ||
           MCA_COLL_GPU_ARGS_ALLTOALL == a->kind ||
           MCA_COLL_GPU_ARGS_REDUCE_SCATTER_BLOCK == a->kind;
}

int mca_coll_gpu_kind_settle(mca_coll_gpu_module_t *m, const char *what, int *go_dev)
{
    if (!m->kdefer) {
        return MPI_SUCCESS;
    }
    m->kdefer = 0;
    return gpu_kind_wait_all(m, m->kcall, what, go_dev);
}

static gpu_status_t gpu_kind_engine_peek(void *ctx, int *all_dev)
{
    mca_coll_gpu_module_t *m = ctx;
    int peer = -1;
    const gpu_status_t st = mca_coll_gpu_kind_peek(m, m->kcall, all_dev, &peer);
    if (GPU_OK != st && GPU_INPROGRESS != st) {
        m->kfail_peer = peer;
    }
    return st;
}

static gpu_status_t gpu_kind_engine_settle(void *ctx, int *all_dev, int *busy, int *pool)
{
    mca_coll_gpu_module_t *m = ctx;
    int peer = -1;
    gpu_status_t st;

    m->kdefer = 0;
    st = gpu_kind_wait_peers(m, m->kcall, all_dev, &peer);
    if (GPU_OK != st) {
        m->kfail_peer = peer;
    } else {
        *busy = m->kbusy;
        *pool = m->kpool;
    }
    return st;
}

static const gpu_engine_kind_ops_t gpu_kind_engine_ops = {
    .peek = gpu_kind_engine_peek,
    .settle = gpu_kind_engine_settle,
};

void mca_coll_gpu_kind_engine(mca_coll_gpu_module_t *m, int before)
{
    if (NULL != m->kpost.slot && NULL != m->engine) {
        if (before) {
            gpu_engine_kind_call(m->engine, m->kcall, m->kdefer ? &gpu_kind_engine_ops : NULL, m,
                                 m->kdefer ? -1 : m->kbusy, m->kdefer ? -1 : m->kpool);
        } else {
            gpu_engine_kind_clear(m->engine);
        }
    }
    m->kdefer = 0;
}

int mca_coll_gpu_kind_agree(mca_coll_gpu_module_t *m, int dev_in, int stage,
                            ompi_request_t **req, const char *what,
                            const mca_coll_gpu_args_t *a, const mca_coll_gpu_issue_t *issue,
                            int *go_dev)
{
    /* a host call of a pretending rank asks as a device call (the entry
     * still sends its host buffers to the previous module) */
    const int dev = dev_in || (m->kpretend && NULL != m->knet && NULL == req);
    /* a device call says whether this rank's application works on the GPU
     * between calls (the engine's measure), for the engine's choice */
    int kind = dev ? GPU_KIND_DEVICE | (NULL != m->engine && gpu_engine_app_busy(m->engine)
                                            ? GPU_KIND_BUSY : 0)
                   : stage ? GPU_KIND_DEVICE | GPU_KIND_STAGE : GPU_KIND_HOST;
    gpu_kind_wait_t w = { 0.0, 0 };
    uint64_t call;
    gpu_status_t st;
    int all_dev, peer = -1, ret;

    *go_dev = dev_in;
    m->kdefer = 0;
    if (NULL != issue) {
        /* a re-issued call: it posted when it was started */
        if (issue->force >= 0) {
            *go_dev = dev && issue->force;
        }
        return MPI_SUCCESS;
    }
    if (NULL == m->kpost.slot) {
        return MPI_SUCCESS;
    }
    if (GPU_KIND_HOST != kind) {
        /* a blocking device call on one node votes its pool lease (held
         * until the call ends: mca_coll_gpu_route); any other device post
         * repeats the last one's bit, which nobody reads for it */
        kind |= dev && NULL == req && NULL == m->knet
                ? (gpu_engine_pool_vote(m->engine) ? GPU_KIND_POOL : 0)
                : m->kpost.kind & GPU_KIND_POOL;
    }
    if (gpu_kind_full(&m->kpost, kind)) {
        ret = gpu_kind_make_room(m, what, &w);
        if (MPI_SUCCESS != ret) {
            return ret;
        }
    }
    call = gpu_kind_post(&m->kpost, kind);
    m->kcall = call;
    m->kbusy = -1;   /* not known until the peers' posts are read */
    m->kpool = -1;
    if (NULL != m->knet) {
        return gpu_kind_across_call(m, call, req, what, a, dev, dev_in, go_dev);
    }
    if (NULL != req) {
        /* a host call with nothing queued starts now: the fast path of a
         * host-buffer program; a device call starts now when its peers
         * have all posted (it was the last to come) */
        if (0 == m->kq && (!dev || NULL == a)) {
            return MPI_SUCCESS;
        }
        if (0 == m->kq) {
            st = mca_coll_gpu_kind_peek(m, call, &all_dev, &peer);
            if (GPU_OK == st) {
                *go_dev = all_dev;
                return MPI_SUCCESS;
            }
            if (GPU_INPROGRESS != st) {
                return mca_coll_gpu_error(m->comm->c_name, what, st, peer);
            }
        }
        if (NULL == a) {
            return MPI_SUCCESS;
        }
        ret = mca_coll_gpu_request_queue(m, req, a, what, call, dev);
        if (MPI_SUCCESS == ret) {
            *go_dev = -1;
        }
        return ret;
    }
    if (!dev) {
        return MPI_SUCCESS;
    }
    if (gpu_kind_may_defer(m, a)) {
        /* no wait on the fast path: the engine asks while its kernel runs
         * (mca_coll_gpu_kind_engine), or settles first where it cannot */
        m->kdefer = 1;
        return MPI_SUCCESS;
    }
    return gpu_kind_wait_all(m, call, what, go_dev);
}

int mca_coll_gpu_kind_all_mem(mca_coll_gpu_module_t *m, const char *what, int *all_mem)
{
    gpu_kind_wait_t w = { 0.0, 0 };
    gpu_status_t st;
    int all_dev, peer = -1;

    *all_mem = 0;
    if (NULL == m->kpost.slot || NULL != m->knet) {
        return MPI_SUCCESS;   /* no board, or other nodes: not known alike */
    }
    while (GPU_INPROGRESS ==
           (st = gpu_kind_scan(m, m->kcall, &all_dev, all_mem, NULL, NULL, &peer))) {
        if (!gpu_kind_wait_more(&w)) {
            st = GPU_ERR_TIMEOUT;
            break;
        }
    }
    return GPU_OK == st ? MPI_SUCCESS : mca_coll_gpu_error(m->comm->c_name, what, st, peer);
}
