/*
 * Module: per-communicator selection, the previous module's functions,
 * lazy bootstrap of the engine through host exchanges on the communicator
 * (blocking, or step by step from progress for a nonblocking call).
 */
#include "ompi_config.h"

#include <stddef.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "coll_gpu.h"

#include "opal/util/output.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/proc/proc.h"
#include "ompi/runtime/mpiruntime.h"

#include "kernels/gpu_ll.h"
#include "topo/gpu_topo_choice.h"
#include "util/gpu_cuda_drv.h"
#include "util/gpu_host_ranges.h"

/* every (function, module) pair we may call: retained in enable,
 * released in the destructor */
static const size_t mca_coll_gpu_prev_modules[] = {
    offsetof(mca_coll_base_comm_coll_t, coll_allgather_module),
    offsetof(mca_coll_base_comm_coll_t, coll_allgatherv_module),
    offsetof(mca_coll_base_comm_coll_t, coll_allreduce_module),
    offsetof(mca_coll_base_comm_coll_t, coll_alltoall_module),
    offsetof(mca_coll_base_comm_coll_t, coll_alltoallv_module),
    offsetof(mca_coll_base_comm_coll_t, coll_alltoallw_module),
    offsetof(mca_coll_base_comm_coll_t, coll_bcast_module),
    offsetof(mca_coll_base_comm_coll_t, coll_exscan_module),
    offsetof(mca_coll_base_comm_coll_t, coll_gather_module),
    offsetof(mca_coll_base_comm_coll_t, coll_gatherv_module),
    offsetof(mca_coll_base_comm_coll_t, coll_reduce_module),
    offsetof(mca_coll_base_comm_coll_t, coll_reduce_scatter_block_module),
    offsetof(mca_coll_base_comm_coll_t, coll_reduce_scatter_module),
    offsetof(mca_coll_base_comm_coll_t, coll_scan_module),
    offsetof(mca_coll_base_comm_coll_t, coll_scatter_module),
    offsetof(mca_coll_base_comm_coll_t, coll_scatterv_module),
    offsetof(mca_coll_base_comm_coll_t, coll_neighbor_allgather_module),
    offsetof(mca_coll_base_comm_coll_t, coll_neighbor_allgatherv_module),
    offsetof(mca_coll_base_comm_coll_t, coll_neighbor_alltoall_module),
    offsetof(mca_coll_base_comm_coll_t, coll_neighbor_alltoallv_module),
    offsetof(mca_coll_base_comm_coll_t, coll_neighbor_alltoallw_module),
    offsetof(mca_coll_base_comm_coll_t, coll_barrier_module),
    offsetof(mca_coll_base_comm_coll_t, coll_ibarrier_module),
    offsetof(mca_coll_base_comm_coll_t, coll_iallgather_module),
    offsetof(mca_coll_base_comm_coll_t, coll_iallgatherv_module),
    offsetof(mca_coll_base_comm_coll_t, coll_iallreduce_module),
    offsetof(mca_coll_base_comm_coll_t, coll_ialltoall_module),
    offsetof(mca_coll_base_comm_coll_t, coll_ialltoallv_module),
    offsetof(mca_coll_base_comm_coll_t, coll_ialltoallw_module),
    offsetof(mca_coll_base_comm_coll_t, coll_ibcast_module),
    offsetof(mca_coll_base_comm_coll_t, coll_iexscan_module),
    offsetof(mca_coll_base_comm_coll_t, coll_igather_module),
    offsetof(mca_coll_base_comm_coll_t, coll_igatherv_module),
    offsetof(mca_coll_base_comm_coll_t, coll_ireduce_module),
    offsetof(mca_coll_base_comm_coll_t, coll_ireduce_scatter_block_module),
    offsetof(mca_coll_base_comm_coll_t, coll_ireduce_scatter_module),
    offsetof(mca_coll_base_comm_coll_t, coll_iscan_module),
    offsetof(mca_coll_base_comm_coll_t, coll_iscatter_module),
    offsetof(mca_coll_base_comm_coll_t, coll_iscatterv_module),
    offsetof(mca_coll_base_comm_coll_t, coll_ineighbor_allgather_module),
    offsetof(mca_coll_base_comm_coll_t, coll_ineighbor_allgatherv_module),
    offsetof(mca_coll_base_comm_coll_t, coll_ineighbor_alltoall_module),
    offsetof(mca_coll_base_comm_coll_t, coll_ineighbor_alltoallv_module),
    offsetof(mca_coll_base_comm_coll_t, coll_ineighbor_alltoallw_module),
    offsetof(mca_coll_base_comm_coll_t, coll_allgather_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_allgatherv_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_allreduce_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_alltoall_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_alltoallv_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_alltoallw_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_bcast_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_exscan_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_gather_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_gatherv_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_reduce_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_reduce_scatter_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_reduce_scatter_block_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_scan_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_scatter_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_scatterv_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_barrier_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_neighbor_allgather_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_neighbor_allgatherv_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_neighbor_alltoall_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_neighbor_alltoallv_init_module),
    offsetof(mca_coll_base_comm_coll_t, coll_neighbor_alltoallw_init_module),
};
#define GPU_NPREV (sizeof(mca_coll_gpu_prev_modules) / sizeof(mca_coll_gpu_prev_modules[0]))

static mca_coll_base_module_t **mca_coll_gpu_prev_slot(mca_coll_gpu_module_t *m, size_t i)
{
    return (mca_coll_base_module_t **) ((char *) &m->prev + mca_coll_gpu_prev_modules[i]);
}

static void mca_coll_gpu_module_construct(mca_coll_gpu_module_t *m)
{
    memset(&m->prev, 0, sizeof(m->prev));
    m->comm = NULL;
    m->boot = MCA_COLL_GPU_BOOT_NONE;
    m->engine = NULL;
    m->has_order = 0;
    m->node_comm = NULL;
    m->node_engine = NULL;
    m->net = NULL;
    m->nets = NULL;
    m->nnets = 0;
    m->hier = NULL;
    m->hier_nb = NULL;
    m->hier_v_layout = NULL;
    m->q_head = m->q_tail = NULL;
    m->setup = NULL;
    m->setup_status = GPU_OK;
    m->fail_peer = -1;
    m->fail_timeout = 0;
    m->one_node = 1;
    m->kpost.slot = NULL;
    m->kpeer = NULL;
    m->kcall = 0;
    m->kdefer = 0;
    m->kbusy = -1;
    m->kpool = -1;
    m->kfail_peer = -1;
    m->kq = 0;
    m->stream_comm = 0;
    m->hsend = m->hrecv = NULL;
    m->knet = NULL;
    m->kpretend = 0;
}

static void mca_coll_gpu_module_destruct(mca_coll_gpu_module_t *m)
{
    size_t i;
    mca_coll_gpu_kind_detach(m);
    mca_coll_gpu_hier_free(m);
    gpu_engine_comm_destroy(m->engine);
    m->engine = NULL;
    for (i = 0; i < GPU_NPREV; ++i) {
        mca_coll_base_module_t **slot = mca_coll_gpu_prev_slot(m, i);
        if (NULL != *slot) {
            OBJ_RELEASE(*slot);
        }
    }
}

OBJ_CLASS_INSTANCE(mca_coll_gpu_module_t, mca_coll_base_module_t, mca_coll_gpu_module_construct,
                   mca_coll_gpu_module_destruct);

int mca_coll_gpu_init_query(bool enable_progress_threads, bool enable_mpi_threads)
{
    (void) enable_progress_threads;
    (void) enable_mpi_threads;
    mca_coll_gpu_kind_init();
    return OMPI_SUCCESS;
}

static int mca_coll_gpu_one_node(ompi_communicator_t *comm);

static int mca_coll_gpu_enable(mca_coll_base_module_t *module, struct ompi_communicator_t *comm)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    size_t i;

    m->comm = comm;
    m->prev = *comm->c_coll;
    for (i = 0; i < GPU_NPREV; ++i) {
        mca_coll_base_module_t **slot = mca_coll_gpu_prev_slot(m, i);
        if (NULL != *slot) {
            OBJ_RETAIN(*slot);
        }
    }
    mca_coll_gpu_persistent_enable(m);
    mca_coll_gpu_entries_enable(m);
    if (NULL == m->prev.coll_allreduce || NULL == m->prev.coll_allgather) {
        opal_output_verbose(1, mca_coll_gpu_component.output,
                            "coll/gpu: no host allreduce/allgather below us on %s; disabled",
                            comm->c_name);
        return OMPI_ERROR;
    }
    if (OMPI_COMM_IS_INTER(comm)) {
        /* every call stages: nothing to agree on, nothing to set up */
        opal_output_verbose(1, mca_coll_gpu_component.output,
                            "coll/gpu: enabled on intercommunicator %s (%d+%d ranks); device "
                            "buffers stage", comm->c_name, ompi_comm_size(comm),
                            ompi_comm_remote_size(comm));
        return OMPI_SUCCESS;
    }
    m->one_node = mca_coll_gpu_one_node(comm);
    mca_coll_gpu_kind_attach(m, m->one_node);
    opal_output_verbose(1, mca_coll_gpu_component.output,
                        "coll/gpu: enabled on %s (%d ranks); host buffers go to the previous "
                        "module", comm->c_name, ompi_comm_size(comm));
    return OMPI_SUCCESS;
}

mca_coll_base_module_t *mca_coll_gpu_comm_query(struct ompi_communicator_t *comm, int *priority)
{
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    mca_coll_gpu_module_t *m;

    if (c->priority < 0) {
        return NULL;
    }
    if (c->gpu_available < 0) {
        c->gpu_available = (GPU_OK == gpu_drv_init(&c->no_gpu_reason)) ? 1 : 0;
        if (!c->gpu_available) {
            opal_output_verbose(1, c->output, "coll/gpu: declining: %s", c->no_gpu_reason);
        }
    }
    if (!c->gpu_available) {
        return NULL;
    }
    m = OBJ_NEW(mca_coll_gpu_module_t);
    if (NULL == m) {
        return NULL;
    }
    *priority = c->priority;
    m->super.coll_module_enable = mca_coll_gpu_enable;
    mca_coll_gpu_install_entries(m);
    mca_coll_gpu_install_persistent(m);
    return &m->super;
}

/* Without touching it: process_vm_readv on ourselves fails with EFAULT
 * where a load would fault. */
static int mca_coll_gpu_cpu_readable(const void *buf)
{
    char byte;
    struct iovec local = { .iov_base = &byte, .iov_len = 1 };
    struct iovec remote = { .iov_base = (void *) buf, .iov_len = 1 };
    return 1 == process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
}

/*
 * Host buffers seen before, by address: a host-buffer program asks the
 * driver nothing after its first call per buffer (the two pointer queries
 * of an 8-byte host allreduce cost it 0.2-0.3 us of 0.45-0.65, measured on
 * the H100 host).  Only addresses that stay host memory for the life of
 * the process are kept (util/gpu_host_ranges.h): a freed mmap'd host
 * buffer's range may hold device memory next (it did on 4x H100, and the
 * host library crashed reading it).  Racy updates are harmless (a word
 * each, and a miss only asks the driver again).
 */
#define GPU_HOST_SEEN 256
static uintptr_t mca_coll_gpu_host_seen[GPU_HOST_SEEN];

/* Every byte address counts: a program's send and receive buffers are
 * often two small mallocs in one cache line, and a hash of the line alone
 * gave them one slot, so each call asked the driver twice. */
static size_t mca_coll_gpu_host_slot(uintptr_t a)
{
    return (size_t) (((uint64_t) a * 0x9e3779b97f4a7c15ull) >> 56) & (GPU_HOST_SEEN - 1);
}

int mca_coll_gpu_is_device(const void *buf)
{
    const uintptr_t a = (uintptr_t) buf;
    int marked = 1;
    gpu_mem_kind_t kind;
    if (MPI_IN_PLACE == buf || NULL == buf) {
        return 0;
    }
    const size_t h = mca_coll_gpu_host_slot(a);
    if ((mca_coll_gpu_host_seen[h] == a || mca_coll_gpu_host_seen[h ^ 1] == a) &&
        gpu_host_ranges_permanent(a)) {
        return 0;   /* two ways: two buffers of one call never push each other out */
    }
    kind = gpu_drv_mem_kind(buf, NULL, MCA_COLL_GPU_ORDER_FIRST_USE ==
                            mca_coll_gpu_component.stream_order ? &marked : NULL);
    if (GPU_MEM_HOST == kind) {
        /* the free way, else the second: two buffers of one set both stay */
        if (gpu_host_ranges_permanent(a)) {
            mca_coll_gpu_host_seen[0 == mca_coll_gpu_host_seen[h] ? h : h ^ 1] = a;
        }
        return 0;
    }
    if (GPU_MEM_BROKEN == kind) {
        /* the context has a sticky error and cannot say: memory the CPU
         * cannot read is a device buffer (handed to the host library it
         * would crash it; our paths fail with the CUDA error instead) */
        return !mca_coll_gpu_cpu_readable(buf);
    }
    if (!marked) {
        /* first use of this allocation, or one the driver cannot mark
         * (then every call waits) */
        (void) gpu_drv_first_use(buf);
    }
    return 1;
}

int mca_coll_gpu_status_to_mpi(gpu_status_t st)
{
    switch (st) {
    case GPU_OK: return MPI_SUCCESS;
    case GPU_ERR_NO_MEMORY: return MPI_ERR_NO_MEM;
    case GPU_ERR_INVALID: return MPI_ERR_ARG;
    default: return MPI_ERR_OTHER;
    }
}

/* Open MPI's own notion of "same node" (what MPI_COMM_TYPE_SHARED splits
 * by): the lowest communicator rank that is node-local to me */
unsigned long long mca_coll_gpu_node_key(ompi_communicator_t *comm)
{
    const int me = ompi_comm_rank(comm);
    for (int i = 0; i < ompi_comm_size(comm); ++i) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, i);
        if (i == me || (NULL != proc && OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags))) {
            return (unsigned long long) i;
        }
    }
    return (unsigned long long) me;
}

void mca_coll_gpu_engine_params(gpu_engine_params_t *p, ompi_communicator_t *comm)
{
    const mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    memset(p, 0, sizeof(*p));
    p->oneshot_max_bytes = c->oneshot_max;
    p->twoshot_scratch = c->scratch_bytes;
    p->xchg_scratch = c->xchg_scratch_bytes;
    p->xchg_nblocks = c->xchg_nblocks;
    p->xchg_split = c->xchg_split;
    p->put_min = c->put_min;
    p->put_read = c->put_read;
    p->put_ce = c->put_ce;
    /* automatic (-1, 0): by the communicator's shape (topo/gpu_topo_choice.h) */
    p->put_fold_nblocks = c->put_fold_nblocks >= 0
                              ? c->put_fold_nblocks
                              : gpu_topo_auto_put_fold_nblocks(ompi_comm_size(comm),
                                                               c->xchg_nblocks);
    p->nblocks = c->nblocks;
    p->nthreads = c->nthreads < GPU_MAX_PEERS ? GPU_MAX_PEERS
                  : (c->nthreads > 1024 ? 1024 : c->nthreads);
    p->oneshot_blocks = c->oneshot_blocks;
    p->timeout_s = mca_coll_gpu_timeout_s();
    p->order_legacy = MCA_COLL_GPU_ORDER_EVERY_CALL == c->stream_order;
    p->persist = c->persist;
    const size_t copy_max = 0 != c->persist_max_bytes ? c->persist_max_bytes
                            : gpu_topo_auto_persist_max(ompi_comm_size(comm));
    p->persist_max_bytes = (copy_max < GPU_LL_MAX_BYTES ? copy_max : GPU_LL_MAX_BYTES) /
                           GPU_LL_PAYLOAD * GPU_LL_PAYLOAD;
    const size_t reduce_max = 0 != c->persist_reduce_max_bytes
                                  ? c->persist_reduce_max_bytes
                                  : gpu_topo_auto_persist_reduce_max(ompi_comm_size(comm));
    p->persist_reduce_max_bytes = reduce_max < p->persist_max_bytes ? reduce_max
                                                                    : p->persist_max_bytes;
    p->persist_blocks = c->persist_blocks;
    p->persist_piece_bytes = c->persist_piece_bytes;
    p->persist_idle_us = c->persist_idle_us > 0 ? c->persist_idle_us : 0;
    p->paced = c->paced;
    p->paced_scratch = c->paced_scratch_bytes;
    /* without host-paced staging, nonblocking calls launch kernels: they
     * cannot grow the areas (a nonblocking start never waits for peers) */
    p->scratch_eager = !c->scratch_lazy || 0 == c->paced_scratch_bytes;
    /* the pool's lease is agreed in the call: not for those nonblocking ones */
    p->pool = 0 != c->pool && !p->scratch_eager;
    p->pool_comm_bytes = c->pool_comm_bytes;
    p->persist_gap_us = c->persist_gap_us > 0 ? c->persist_gap_us : 0;
    p->persist_leave_us = c->persist_leave_us > 0 ? c->persist_leave_us : 0;
    p->persist_one_shot = c->persist_one_shot;
    p->persist_busy_min_bytes = c->persist_busy_min_bytes;
    p->direct = c->shared_direct;
    p->threads = ompi_mpi_thread_multiple;
    p->node_key = mca_coll_gpu_node_key(comm);
    p->algo = MCA_COLL_GPU_ALGO_ONESHOT == c->allreduce_algorithm   ? GPU_ALGO_ONESHOT
              : MCA_COLL_GPU_ALGO_TWOSHOT == c->allreduce_algorithm ? GPU_ALGO_TWOSHOT
                                                                    : GPU_ALGO_AUTO;
}

int mca_coll_gpu_failed_peer(mca_coll_gpu_module_t *m, gpu_status_t st)
{
    if (GPU_ERR_TIMEOUT != st) {
        return -1;
    }
    if (m->kfail_peer >= 0) {
        const int q = m->kfail_peer;   /* the engine asked for kinds in vain */
        m->kfail_peer = -1;
        return q;
    }
    return m->fail_timeout ? m->fail_peer : gpu_engine_failed_peer(m->engine);
}

/* Open MPI's view: are all ranks on this node (and not split into virtual
 * nodes)?  Decided without a message, so a nonblocking call can. */
static int mca_coll_gpu_one_node(ompi_communicator_t *comm)
{
    if (mca_coll_gpu_component.virtual_nodes > 1) {
        return 0;
    }
    for (int i = 0; i < ompi_comm_size(comm); ++i) {
        ompi_proc_t *proc = ompi_comm_peer_lookup(comm, i);
        if (i != ompi_comm_rank(comm) &&
            (NULL == proc || !OPAL_PROC_ON_LOCAL_NODE(proc->super.proc_flags))) {
            return 0;
        }
    }
    return 1;
}

int mca_coll_gpu_boot_failed(mca_coll_gpu_module_t *m, const char *what, gpu_status_t st)
{
    static int told;
    if (GPU_ERR_NO_MEMORY == st && !told) {
        told = 1;   /* once per process, whatever the number of communicators */
        mca_coll_gpu_show_help("setup-no-memory", m->comm->c_name);
    }
    m->boot = MCA_COLL_GPU_BOOT_STAGED;
    m->engine = NULL;
    opal_output_verbose(1, mca_coll_gpu_component.output,
                        "coll/gpu: %s: device collectives staged through host (%s)",
                        m->comm->c_name, gpu_status_string(st));
    if (GPU_ERR_TIMEOUT == st) {
        return mca_coll_gpu_error(m->comm->c_name, what, st, m->fail_timeout ? m->fail_peer : -1);
    }
    return (GPU_ERR_BOOTSTRAP == st) ? MPI_ERR_INTERN : MPI_SUCCESS;
}


int mca_coll_gpu_bootstrap(mca_coll_gpu_module_t *m, const char *what, int blocking)
{
    gpu_engine_params_t p;
    gpu_status_t st;
    int ret = MPI_SUCCESS;

    if (!blocking && (MCA_COLL_GPU_BOOT_NONE != m->boot || !mca_coll_gpu_one_node(m->comm))) {
        /* set up, setting up, or several nodes: the hierarchy's setup
         * blocks (a split, UCX endpoints), so a nonblocking call leaves it
         * to the first blocking one and stages meanwhile */
        return MPI_SUCCESS;
    }
    if (blocking) {
        /* the setup (or anything else) a nonblocking call left running */
        ret = mca_coll_gpu_drain(m);
        if (MPI_SUCCESS != ret) {
            return ret;
        }
    }
    if (MCA_COLL_GPU_BOOT_NONE != m->boot) {
        return MPI_SUCCESS;
    }
    mca_coll_gpu_engine_params(&p, m->comm);
    if (m->stream_comm) {
        p.stream_max_bytes = mca_coll_gpu_component.enqueue_kernel_max;
        p.stream_bulk_bytes = mca_coll_gpu_component.enqueue_bulk_bytes;
    }
    if (!blocking) {
        /* one node by Open MPI's locality (the engine's setup checks the
         * hosts itself): no exchange before the steps from progress.  Every
         * rank takes this branch at the same call, so all begin it there. */
        st = gpu_engine_setup_begin(&mca_coll_gpu_boot_ops, m, ompi_comm_rank(m->comm),
                                    ompi_comm_size(m->comm), &p, 0, &m->setup);
        if (GPU_OK != st) {
            return mca_coll_gpu_boot_failed(m, what, st);
        }
        m->boot = MCA_COLL_GPU_BOOT_SETUP;
        mca_coll_gpu_progress_needed();
        if (!mca_coll_gpu_setup_track(m)) {
            /* 64 setups in flight: finish this one here (rare; it blocks) */
            while (GPU_INPROGRESS == (st = gpu_engine_setup_step(m->setup, &m->engine))) {
                opal_progress();
            }
            m->setup = NULL;
            if (GPU_OK != st) {
                return mca_coll_gpu_boot_failed(m, what, st);
            }
            m->boot = MCA_COLL_GPU_BOOT_READY;
            mca_coll_gpu_topo_setup(m);
        }
        return MPI_SUCCESS;
    }
    /* several nodes (or virtual nodes): the hierarchy decides */
    if (mca_coll_gpu_hier_setup(m, what, &ret)) {
        return ret;
    }
    st = gpu_engine_comm_create(&mca_coll_gpu_boot_ops, m, ompi_comm_rank(m->comm),
                                ompi_comm_size(m->comm), &p, &m->engine);
    if (GPU_OK == st) {
        m->boot = MCA_COLL_GPU_BOOT_READY;
        /* the node graph is probed once per process: one thread at a time
         * (progress holds the lock where it sets up a communicator) */
        OPAL_THREAD_LOCK(&mca_coll_gpu_component.lock);
        mca_coll_gpu_topo_setup(m);
        OPAL_THREAD_UNLOCK(&mca_coll_gpu_component.lock);
        return MPI_SUCCESS;
    }
    return mca_coll_gpu_boot_failed(m, what, st);
}
