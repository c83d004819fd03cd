/*
 * Native device-buffer collectives, data movement: bcast, allgather(v),
 * alltoall(v), gather(v), scatter(v), blocking and nonblocking.  Each
 * entry point routes like allreduce: host buffers -> previous module;
 * device buffers with contiguous datatypes -> a plan for the engine's
 * exchange kernel; anything else -> the staged path.  A nonblocking call
 * that reaches the engine returns a request completed by progress (see
 * coll_gpu_request.c); one that stages completes at initiation.
 *
 * The GPU path needs every rank to take it for the same call (as the
 * allreduce does): the deciding inputs are the buffers that MPI says the
 * rank uses, their memory kind and datatype contiguity.
 */
#include "ompi_config.h"

#include "coll_gpu.h"

#include "opal/util/show_help.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"

#include "engine/gpu_plan.h"

int mca_coll_gpu_geom(struct ompi_datatype_t *dt, mca_coll_gpu_geom_t *g)
{
    ptrdiff_t lb, ext, tlb, text;
    size_t size;

    /* "contiguous for two elements" holds for any count */
    if (!ompi_datatype_is_contiguous_memory_layout(dt, 2)) {
        return 0;
    }
    ompi_datatype_type_size(dt, &size);
    ompi_datatype_get_extent(dt, &lb, &ext);
    ompi_datatype_get_true_extent(dt, &tlb, &text);
    if (0 == size || (ptrdiff_t) size != ext) {
        return 0;
    }
    g->size = size;
    g->lb = tlb;
    return 1;
}

int mca_coll_gpu_native_ready(mca_coll_gpu_module_t *m, const char *what, ompi_request_t **req,
                              int *ret)
{
    *ret = mca_coll_gpu_bootstrap(m, what, NULL == req);
    return MPI_SUCCESS == *ret && (MCA_COLL_GPU_BOOT_READY == m->boot ||
                                   (NULL != req && MCA_COLL_GPU_BOOT_SETUP == m->boot));
}

/* the size a user would name: the largest piece this rank moves */
static size_t gpu_call_bytes(mca_coll_gpu_module_t *m, const mca_coll_gpu_call_t *call)
{
    if (NULL == call->plan) {
        return call->count * gpu_dtype_size(call->dt);
    }
    return gpu_plan_max_len(call->plan, ompi_comm_rank(m->comm), ompi_comm_size(m->comm));
}

static const char *gpu_call_algo(mca_coll_gpu_module_t *m, const mca_coll_gpu_call_t *call,
                                 size_t bytes, int blocking)
{
    if (!blocking) {
        return "host-paced, from progress";
    }
    if (gpu_engine_persistent(m->engine, call->plan, bytes, call->dt, blocking)) {
        return "persistent";
    }
    if (gpu_engine_paced_takes(m->engine, call->plan, blocking)) {
        return "host-paced";
    }
    if (NULL == call->plan) {
        return GPU_ALGO_ONESHOT == gpu_engine_choose(m->engine, bytes) ? "one-shot" : "two-shot";
    }
    if (call->plan->relay) {
        return "chain";
    }
    return GPU_XCHG_REDUCE == call->plan->mode ? "exchange-reduce" : "exchange-copy";
}

int mca_coll_gpu_native_run(mca_coll_gpu_module_t *m, const mca_coll_gpu_call_t *call,
                            ompi_request_t **req, int *ran)
{
    mca_coll_gpu_request_t *r = NULL;
    gpu_engine_req_t *er = NULL;
    mca_coll_gpu_trace_t trace;
    gpu_status_t st;
    int ret;

    *ran = 1;
    if (NULL != req) {
        ret = mca_coll_gpu_request_start(m, req, &r);
        if (MPI_SUCCESS != ret) {
            return ret;
        }
        er = mca_coll_gpu_request_engine(r);
        if (mca_coll_gpu_request_defer(r, call)) {
            mca_coll_gpu_trace_begin(&trace, call->what, mca_coll_gpu_trace_on() ?
                                     gpu_call_bytes(m, call) : 0, "host-paced, from progress");
            mca_coll_gpu_request_commit(r, 1, &trace);
            return MPI_SUCCESS;
        }
    }
    if (mca_coll_gpu_trace_on()) {
        const size_t bytes = gpu_call_bytes(m, call);
        mca_coll_gpu_trace_begin(&trace, call->what, bytes,
                                 gpu_call_algo(m, call, bytes, NULL == req));
    } else {
        mca_coll_gpu_trace_begin(&trace, call->what, 0, "");
    }
    mca_coll_gpu_kind_engine(m, 1);
    if (NULL != call->plan) {
        st = gpu_engine_xchg(m->engine, call->what, call->plan, call->op, call->dt, er);
    } else {
        st = gpu_engine_allreduce(m->engine, call->in, call->out, call->count, call->op, call->dt,
                                  er);
    }
    mca_coll_gpu_kind_engine(m, 0);
    if (NULL != r) {
        mca_coll_gpu_trace_started(&trace);
        mca_coll_gpu_request_commit(r, GPU_OK == st, &trace);
        if (GPU_OK != st) {
            *req = MPI_REQUEST_NULL;
        }
    } else {
        double launch, submit;
        gpu_engine_times(m->engine, &launch, &submit);
        mca_coll_gpu_trace_end(&trace, m->comm->c_name, 1, launch, submit, (int) st);
    }
    if (GPU_ERR_UNSUPPORTED == st) {
        static int told;
        if (gpu_engine_big_refused(m->engine) && !told) {
            told = 1;   /* once per process */
            mca_coll_gpu_show_help("grow-no-memory", m->comm->c_name, call->what);
        }
        *ran = 0;
        return MPI_SUCCESS;
    }
    if (GPU_OK != st) {
        mca_coll_gpu_show_help("collective-failed", call->what,
                       m->comm->c_name, ompi_comm_rank(m->comm), gpu_status_string(st));
    }
    return mca_coll_gpu_error(m->comm->c_name, call->what, st, mca_coll_gpu_failed_peer(m, st));
}

int mca_coll_gpu_fallback_done(int ret, ompi_request_t **req)
{
    if (NULL != req && MPI_SUCCESS == ret) {
        *req = &ompi_request_empty;
    }
    return ret;
}

static int gpu_run_plan(mca_coll_gpu_module_t *m, const char *what, const gpu_xchg_plan_t *plan,
                        const mca_coll_gpu_args_t *args, ompi_request_t **req, int *ran)
{
    mca_coll_gpu_call_t call = { .what = what, .plan = plan, .op = GPU_OP_BOR, .dt = GPU_DT_U8,
                                 .args = args };
    return mca_coll_gpu_native_run(m, &call, req, ran);
}

/* counts (in elements of g) to byte lengths and displacements */
static void gpu_bytes(const mca_coll_gpu_geom_t *g, int n, const int *counts, int count,
                      const int *displs, size_t *len, size_t *displ)
{
    for (int q = 0; q < n; ++q) {
        const size_t c = (size_t) (NULL != counts ? counts[q] : count);
        len[q] = c * g->size;
        displ[q] = (size_t) (NULL != displs ? (ptrdiff_t) displs[q] * (ptrdiff_t) g->size
                                            : (ptrdiff_t) q * (ptrdiff_t) len[q]) +
                   (size_t) g->lb;
    }
}

static int gpu_bcast_any(void *buf, int count, struct ompi_datatype_t *dt, int root,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                         ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    mca_coll_gpu_geom_t g;
    gpu_xchg_plan_t plan;
    const int dev = mca_coll_gpu_is_device(buf);
    int ret, ran = 0, go_dev;

    mca_coll_gpu_args_t a;   /* only where agree may keep it (coll_gpu.h) */
    const int need_args = NULL != req || dev;
    if (need_args) {
        a = (mca_coll_gpu_args_t) { .kind = MCA_COLL_GPU_ARGS_BCAST, .rbuf = buf, .rcount = count,
            .rdtype = dt, .root = root };
    }
    ret = mca_coll_gpu_kind_agree(m, dev, req, "bcast", need_args ? &a : NULL, &go_dev);
    if (MPI_SUCCESS != ret || go_dev < 0) {
        return ret;   /* an error, or queued */
    }
    if (!dev) {
        mca_coll_gpu_host_note(m, buf, buf, req);
        return NULL != req ? m->prev.coll_ibcast(buf, count, dt, root, comm, req,
                                                 m->prev.coll_ibcast_module)
                           : m->prev.coll_bcast(buf, count, dt, root, comm,
                                                m->prev.coll_bcast_module);
    }
    const mca_coll_gpu_hier_call_t hc = { .kind = MCA_COLL_GPU_HIER_BCAST, .rbuf = buf,
                                          .count = count, .dtype = dt, .root = root };
    if (go_dev) {
        ret = mca_coll_gpu_hier_run(m, &hc, req, &ran);
        if (ran) {
            return ret;
        }
    }
    if (go_dev && mca_coll_gpu_geom(dt, &g) && mca_coll_gpu_native_ready(m, "bcast", req, &ret)) {
        const size_t bytes = (size_t) count * g.size;
        const int n = ompi_comm_size(comm);
        /* host-paced rounds move a relay one hop per round: direct from the root */
        const int chain = n > 2 && bytes >= mca_coll_gpu_component.bcast_chain_min &&
                          NULL == req && !gpu_engine_paced(m->engine);
        if (GPU_OK == gpu_plan_bcast(&plan, ompi_comm_rank(comm), n, root, (char *) buf + g.lb,
                                     bytes, chain, m->has_order ? m->chain_order : NULL)) {
            ret = gpu_run_plan(m, "bcast", &plan, &a, req, &ran);
            if (ran) {
                return ret;
            }
        }
    }
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    return mca_coll_gpu_bcast_staged(buf, count, dt, root, comm, module, req);
}

/* allgather (counts NULL) and allgatherv */
static int gpu_allgather_any(const void *sbuf, int scount, struct ompi_datatype_t *sdt,
                             void *rbuf, int rcount, const int *rcounts, const int *displs,
                             struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                             mca_coll_base_module_t *module, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int in_place = MPI_IN_PLACE == sbuf, rank = ompi_comm_rank(comm);
    const int n = ompi_comm_size(comm);
    const int rdev = mca_coll_gpu_is_device(rbuf);
    const int sdev = in_place ? rdev : mca_coll_gpu_is_device(sbuf);
    mca_coll_gpu_geom_t sg = { 0 }, rg = { 0 };   /* set where used; gcc cannot see it */
    gpu_xchg_plan_t plan;
    size_t len[GPU_MAX_PEERS], displ[GPU_MAX_PEERS];
    int ret = MPI_SUCCESS, ran = 0, go_dev;

    mca_coll_gpu_args_t a;   /* only where agree may keep it (coll_gpu.h) */
    const int need_args = NULL != req || rdev || sdev;
    if (need_args) {
        a = (mca_coll_gpu_args_t) {
            .kind = NULL == rcounts ? MCA_COLL_GPU_ARGS_ALLGATHER : MCA_COLL_GPU_ARGS_ALLGATHERV, .sbuf = sbuf,
            .scount = scount, .sdtype = sdt, .rbuf = rbuf, .rcount = rcount,
            .rcounts = rcounts, .rdispls = displs, .rdtype = rdt };
    }
    ret = mca_coll_gpu_kind_agree(m, rdev && sdev, req, NULL == rcounts ? "allgather" : "allgatherv", need_args ? &a : NULL, &go_dev);
    if (MPI_SUCCESS != ret || go_dev < 0) {
        return ret;   /* an error, or queued */
    }

    if (!rdev && !sdev) {
        if (NULL == rcounts) {
            mca_coll_gpu_host_note(m, sbuf, rbuf, req);
            return NULL != req ? m->prev.coll_iallgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm,
                                                         req, m->prev.coll_iallgather_module)
                               : m->prev.coll_allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm,
                                                        m->prev.coll_allgather_module);
        }
        return NULL != req ? m->prev.coll_iallgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt,
                                                      comm, req, m->prev.coll_iallgatherv_module)
                           : m->prev.coll_allgatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt,
                                                     comm, m->prev.coll_allgatherv_module);
    }
    if (go_dev && NULL == rcounts) {
        const mca_coll_gpu_hier_call_t hc = { .kind = MCA_COLL_GPU_HIER_ALLGATHER, .sbuf = sbuf,
                                              .rbuf = rbuf, .count = rcount, .dtype = rdt,
                                              .scount = scount, .sdtype = sdt };
        ret = mca_coll_gpu_hier_run(m, &hc, req, &ran);
        if (ran) {
            return ret;
        }
    }
    if (MPI_SUCCESS == ret && go_dev && n <= GPU_MAX_PEERS && mca_coll_gpu_geom(rdt, &rg) &&
        (in_place || mca_coll_gpu_geom(sdt, &sg)) &&
        mca_coll_gpu_native_ready(m, "allgather", req, &ret)) {
        gpu_bytes(&rg, n, rcounts, rcount, displs, len, displ);
        if ((in_place || (size_t) scount * sg.size == len[rank]) &&
            GPU_OK == gpu_plan_allgatherv(&plan, rank, n,
                                          in_place ? NULL : (const char *) sbuf + sg.lb,
                                          (char *) rbuf, len, displ)) {
            ret = gpu_run_plan(m, NULL == rcounts ? "allgather" : "allgatherv", &plan, &a, req,
                               &ran);
            if (ran) {
                return ret;
            }
        }
    }
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    return NULL == rcounts
            ? mca_coll_gpu_allgather_staged(sbuf, scount, sdt, rbuf, rcount, rdt, comm, module, req)
            : mca_coll_gpu_allgatherv_staged(sbuf, scount, sdt, rbuf, rcounts, displs, rdt, comm,
                                             module, req);
}

/* alltoall (counts NULL) and alltoallv */
static int gpu_alltoall_any(const void *sbuf, int scount, const int *scounts, const int *sdispls,
                            struct ompi_datatype_t *sdt, void *rbuf, int rcount,
                            const int *rcounts, const int *rdispls, struct ompi_datatype_t *rdt,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                            ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int in_place = MPI_IN_PLACE == sbuf, n = ompi_comm_size(comm);
    const int rdev = mca_coll_gpu_is_device(rbuf);
    const int sdev = in_place ? rdev : mca_coll_gpu_is_device(sbuf);
    mca_coll_gpu_geom_t sg = { 0 }, rg = { 0 };   /* set where used; gcc cannot see it */
    gpu_xchg_plan_t plan;
    size_t sl[GPU_MAX_PEERS], sd[GPU_MAX_PEERS], rl[GPU_MAX_PEERS], rd[GPU_MAX_PEERS];
    int ret = MPI_SUCCESS, ran = 0, go_dev;

    mca_coll_gpu_args_t a;   /* only where agree may keep it (coll_gpu.h) */
    const int need_args = NULL != req || rdev || sdev;
    if (need_args) {
        a = (mca_coll_gpu_args_t) {
            .kind = NULL == rcounts ? MCA_COLL_GPU_ARGS_ALLTOALL : MCA_COLL_GPU_ARGS_ALLTOALLV, .sbuf = sbuf,
            .scount = scount, .scounts = scounts, .sdispls = sdispls, .sdtype = sdt,
            .rbuf = rbuf, .rcount = rcount, .rcounts = rcounts, .rdispls = rdispls,
            .rdtype = rdt };
    }
    ret = mca_coll_gpu_kind_agree(m, rdev && sdev, req, NULL == rcounts ? "alltoall" : "alltoallv", need_args ? &a : NULL, &go_dev);
    if (MPI_SUCCESS != ret || go_dev < 0) {
        return ret;   /* an error, or queued */
    }

    if (!rdev && !sdev) {
        if (NULL == rcounts) {
            mca_coll_gpu_host_note(m, sbuf, rbuf, req);
            return NULL != req ? m->prev.coll_ialltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm,
                                                        req, m->prev.coll_ialltoall_module)
                               : m->prev.coll_alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm,
                                                       m->prev.coll_alltoall_module);
        }
        return NULL != req
                   ? m->prev.coll_ialltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls,
                                             rdt, comm, req, m->prev.coll_ialltoallv_module)
                   : m->prev.coll_alltoallv(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls,
                                            rdt, comm, m->prev.coll_alltoallv_module);
    }
    if (go_dev && n <= GPU_MAX_PEERS && mca_coll_gpu_geom(rdt, &rg) &&
        (in_place || mca_coll_gpu_geom(sdt, &sg)) &&
        mca_coll_gpu_native_ready(m, "alltoall", req, &ret)) {
        gpu_bytes(&rg, n, rcounts, rcount, rdispls, rl, rd);
        if (!in_place) {
            gpu_bytes(&sg, n, scounts, scount, sdispls, sl, sd);
        }
        if (GPU_OK == gpu_plan_alltoallv(&plan, ompi_comm_rank(comm), n,
                                         in_place ? NULL : (const char *) sbuf, sl, sd,
                                         (char *) rbuf, rl, rd)) {
            /* alltoall: every pair has the same length, known everywhere */
            plan.ll_bytes = NULL == rcounts ? rl[0] : 0;
            ret = gpu_run_plan(m, NULL == rcounts ? "alltoall" : "alltoallv", &plan, &a, req,
                               &ran);
            if (ran) {
                return ret;
            }
        }
    }
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    return NULL == rcounts
            ? mca_coll_gpu_alltoall_staged(sbuf, scount, sdt, rbuf, rcount, rdt, comm, module, req)
            : mca_coll_gpu_alltoallv_staged(sbuf, scounts, sdispls, sdt, rbuf, rcounts, rdispls,
                                            rdt, comm, module, req);
}

/* gather (counts NULL) and gatherv */
static int gpu_gather_any(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                          int rcount, const int *rcounts, const int *displs,
                          struct ompi_datatype_t *rdt, int root, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int rank = ompi_comm_rank(comm), n = ompi_comm_size(comm), is_root = rank == root;
    const int in_place = is_root && MPI_IN_PLACE == sbuf;
    const int rdev = is_root && mca_coll_gpu_is_device(rbuf);
    const int sdev = in_place ? rdev : mca_coll_gpu_is_device(sbuf);
    mca_coll_gpu_geom_t sg = { 0 }, rg = { 0 };   /* set where used; gcc cannot see it */
    gpu_xchg_plan_t plan;
    size_t len[GPU_MAX_PEERS] = { 0 }, displ[GPU_MAX_PEERS] = { 0 };
    int ret = MPI_SUCCESS, ran = 0, go_dev;

    mca_coll_gpu_args_t a;   /* only where agree may keep it (coll_gpu.h) */
    const int need_args = NULL != req || rdev || sdev;
    if (need_args) {
        a = (mca_coll_gpu_args_t) {
            .kind = NULL == rcounts ? MCA_COLL_GPU_ARGS_GATHER : MCA_COLL_GPU_ARGS_GATHERV, .sbuf = sbuf, .scount = scount,
            .sdtype = sdt, .rbuf = rbuf, .rcount = rcount, .rcounts = rcounts,
            .rdispls = displs, .rdtype = rdt, .root = root };
    }
    ret = mca_coll_gpu_kind_agree(m, sdev && (rdev || !is_root), req, NULL == rcounts ? "gather" : "gatherv", need_args ? &a : NULL, &go_dev);
    if (MPI_SUCCESS != ret || go_dev < 0) {
        return ret;   /* an error, or queued */
    }

    if (!rdev && !sdev) {
        if (NULL == rcounts) {
            return NULL != req ? m->prev.coll_igather(sbuf, scount, sdt, rbuf, rcount, rdt, root,
                                                      comm, req, m->prev.coll_igather_module)
                               : m->prev.coll_gather(sbuf, scount, sdt, rbuf, rcount, rdt, root,
                                                     comm, m->prev.coll_gather_module);
        }
        return NULL != req ? m->prev.coll_igatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt,
                                                   root, comm, req, m->prev.coll_igatherv_module)
                           : m->prev.coll_gatherv(sbuf, scount, sdt, rbuf, rcounts, displs, rdt,
                                                  root, comm, m->prev.coll_gatherv_module);
    }
    if (go_dev && n <= GPU_MAX_PEERS &&
        (!is_root || mca_coll_gpu_geom(rdt, &rg)) && (in_place || mca_coll_gpu_geom(sdt, &sg)) &&
        mca_coll_gpu_native_ready(m, "gather", req, &ret)) {
        if (is_root) {
            gpu_bytes(&rg, n, rcounts, rcount, displs, len, displ);
        }
        if (GPU_OK == gpu_plan_gatherv(&plan, rank, n, root,
                                       in_place ? NULL : (const char *) sbuf + sg.lb,
                                       in_place ? 0 : (size_t) scount * sg.size, (char *) rbuf,
                                       len, displ)) {
            plan.ll_bytes = NULL != rcounts ? 0 : is_root ? len[0] : (size_t) scount * sg.size;
            ret = gpu_run_plan(m, NULL == rcounts ? "gather" : "gatherv", &plan, &a, req, &ran);
            if (ran) {
                return ret;
            }
        }
    }
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    return NULL == rcounts ? mca_coll_gpu_gather_staged(sbuf, scount, sdt, rbuf, rcount, rdt, root,
                                                     comm, module, req)
                        : mca_coll_gpu_gatherv_staged(sbuf, scount, sdt, rbuf, rcounts, displs,
                                                      rdt, root, comm, module, req);
}

/* scatter (counts NULL) and scatterv */
static int gpu_scatter_any(const void *sbuf, int scount, const int *scounts, const int *displs,
                           struct ompi_datatype_t *sdt, void *rbuf, int rcount,
                           struct ompi_datatype_t *rdt, int root, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int rank = ompi_comm_rank(comm), n = ompi_comm_size(comm), is_root = rank == root;
    const int in_place = is_root && MPI_IN_PLACE == rbuf;
    const int sdev = is_root && mca_coll_gpu_is_device(sbuf);
    const int rdev = in_place ? sdev : mca_coll_gpu_is_device(rbuf);
    mca_coll_gpu_geom_t sg = { 0 }, rg = { 0 };   /* set where used; gcc cannot see it */
    gpu_xchg_plan_t plan;
    size_t len[GPU_MAX_PEERS] = { 0 }, displ[GPU_MAX_PEERS] = { 0 };
    int ret = MPI_SUCCESS, ran = 0, go_dev;

    mca_coll_gpu_args_t a;   /* only where agree may keep it (coll_gpu.h) */
    const int need_args = NULL != req || rdev || sdev;
    if (need_args) {
        a = (mca_coll_gpu_args_t) {
            .kind = NULL == scounts ? MCA_COLL_GPU_ARGS_SCATTER : MCA_COLL_GPU_ARGS_SCATTERV, .sbuf = sbuf,
            .scount = scount, .scounts = scounts, .sdispls = displs, .sdtype = sdt,
            .rbuf = rbuf, .rcount = rcount, .rdtype = rdt, .root = root };
    }
    ret = mca_coll_gpu_kind_agree(m, rdev && (sdev || !is_root), req, NULL == scounts ? "scatter" : "scatterv", need_args ? &a : NULL, &go_dev);
    if (MPI_SUCCESS != ret || go_dev < 0) {
        return ret;   /* an error, or queued */
    }

    if (!rdev && !sdev) {
        if (NULL == scounts) {
            return NULL != req ? m->prev.coll_iscatter(sbuf, scount, sdt, rbuf, rcount, rdt, root,
                                                       comm, req, m->prev.coll_iscatter_module)
                               : m->prev.coll_scatter(sbuf, scount, sdt, rbuf, rcount, rdt, root,
                                                      comm, m->prev.coll_scatter_module);
        }
        return NULL != req ? m->prev.coll_iscatterv(sbuf, scounts, displs, sdt, rbuf, rcount, rdt,
                                                    root, comm, req, m->prev.coll_iscatterv_module)
                           : m->prev.coll_scatterv(sbuf, scounts, displs, sdt, rbuf, rcount, rdt,
                                                   root, comm, m->prev.coll_scatterv_module);
    }
    if (go_dev && n <= GPU_MAX_PEERS &&
        (!is_root || mca_coll_gpu_geom(sdt, &sg)) && (in_place || mca_coll_gpu_geom(rdt, &rg)) &&
        mca_coll_gpu_native_ready(m, "scatter", req, &ret)) {
        if (is_root) {
            gpu_bytes(&sg, n, scounts, scount, displs, len, displ);
        }
        if (GPU_OK == gpu_plan_scatterv(&plan, rank, n, root, (const char *) sbuf, len, displ,
                                        in_place ? NULL : (char *) rbuf + rg.lb,
                                        in_place ? 0 : (size_t) rcount * rg.size)) {
            plan.ll_bytes = NULL != scounts ? 0 : is_root ? len[0] : (size_t) rcount * rg.size;
            ret = gpu_run_plan(m, NULL == scounts ? "scatter" : "scatterv", &plan, &a, req, &ran);
            if (ran) {
                return ret;
            }
        }
    }
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    return NULL == scounts ? mca_coll_gpu_scatter_staged(sbuf, scount, sdt, rbuf, rcount, rdt, root,
                                                      comm, module, req)
                        : mca_coll_gpu_scatterv_staged(sbuf, scounts, displs, sdt, rbuf, rcount,
                                                       rdt, root, comm, module, req);
}

/* ---- the module's entry points ------------------------------------------ */

static int gpu_bcast(void *buf, int count, struct ompi_datatype_t *dt, int root,
                     struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (mca_coll_gpu_host_again(m, buf, buf)) {
        return m->prev.coll_bcast(buf, count, dt, root, comm, m->prev.coll_bcast_module);
    }
    return gpu_bcast_any(buf, count, dt, root, comm, module, NULL);
}

static int gpu_ibcast(void *buf, int count, struct ompi_datatype_t *dt, int root,
                      struct ompi_communicator_t *comm, ompi_request_t **req,
                      mca_coll_base_module_t *module)
{
    return gpu_bcast_any(buf, count, dt, root, comm, module, req);
}

static int gpu_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                         int rcount, struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                         mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (mca_coll_gpu_host_again(m, sbuf, rbuf)) {
        return m->prev.coll_allgather(sbuf, scount, sdt, rbuf, rcount, rdt, comm,
                                      m->prev.coll_allgather_module);
    }
    return gpu_allgather_any(sbuf, scount, sdt, rbuf, rcount, NULL, NULL, rdt, comm, module, NULL);
}

static int gpu_iallgather(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                          int rcount, struct ompi_datatype_t *rdt,
                          struct ompi_communicator_t *comm, ompi_request_t **req,
                          mca_coll_base_module_t *module)
{
    return gpu_allgather_any(sbuf, scount, sdt, rbuf, rcount, NULL, NULL, rdt, comm, module, req);
}

static int gpu_allgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                          const int *rcounts, const int *displs, struct ompi_datatype_t *rdt,
                          struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return gpu_allgather_any(sbuf, scount, sdt, rbuf, 0, rcounts, displs, rdt, comm, module, NULL);
}

static int gpu_iallgatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                           const int *rcounts, const int *displs, struct ompi_datatype_t *rdt,
                           struct ompi_communicator_t *comm, ompi_request_t **req,
                           mca_coll_base_module_t *module)
{
    return gpu_allgather_any(sbuf, scount, sdt, rbuf, 0, rcounts, displs, rdt, comm, module, req);
}

static int gpu_alltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                        int rcount, struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                        mca_coll_base_module_t *module)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    if (mca_coll_gpu_host_again(m, sbuf, rbuf)) {
        return m->prev.coll_alltoall(sbuf, scount, sdt, rbuf, rcount, rdt, comm,
                                     m->prev.coll_alltoall_module);
    }
    return gpu_alltoall_any(sbuf, scount, NULL, NULL, sdt, rbuf, rcount, NULL, NULL, rdt, comm,
                            module, NULL);
}

static int gpu_ialltoall(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                         int rcount, struct ompi_datatype_t *rdt, struct ompi_communicator_t *comm,
                         ompi_request_t **req, mca_coll_base_module_t *module)
{
    return gpu_alltoall_any(sbuf, scount, NULL, NULL, sdt, rbuf, rcount, NULL, NULL, rdt, comm,
                            module, req);
}

static int gpu_alltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                         struct ompi_datatype_t *sdt, void *rbuf, const int *rcounts,
                         const int *rdispls, struct ompi_datatype_t *rdt,
                         struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return gpu_alltoall_any(sbuf, 0, scounts, sdispls, sdt, rbuf, 0, rcounts, rdispls, rdt, comm,
                            module, NULL);
}

static int gpu_ialltoallv(const void *sbuf, const int *scounts, const int *sdispls,
                          struct ompi_datatype_t *sdt, void *rbuf, const int *rcounts,
                          const int *rdispls, struct ompi_datatype_t *rdt,
                          struct ompi_communicator_t *comm, ompi_request_t **req,
                          mca_coll_base_module_t *module)
{
    return gpu_alltoall_any(sbuf, 0, scounts, sdispls, sdt, rbuf, 0, rcounts, rdispls, rdt, comm,
                            module, req);
}

static int gpu_gather(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                      int rcount, struct ompi_datatype_t *rdt, int root,
                      struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return gpu_gather_any(sbuf, scount, sdt, rbuf, rcount, NULL, NULL, rdt, root, comm, module,
                          NULL);
}

static int gpu_igather(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                       int rcount, struct ompi_datatype_t *rdt, int root,
                       struct ompi_communicator_t *comm, ompi_request_t **req,
                       mca_coll_base_module_t *module)
{
    return gpu_gather_any(sbuf, scount, sdt, rbuf, rcount, NULL, NULL, rdt, root, comm, module,
                          req);
}

static int gpu_gatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                       const int *rcounts, const int *displs, struct ompi_datatype_t *rdt,
                       int root, struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return gpu_gather_any(sbuf, scount, sdt, rbuf, 0, rcounts, displs, rdt, root, comm, module,
                          NULL);
}

static int gpu_igatherv(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                        const int *rcounts, const int *displs, struct ompi_datatype_t *rdt,
                        int root, struct ompi_communicator_t *comm, ompi_request_t **req,
                        mca_coll_base_module_t *module)
{
    return gpu_gather_any(sbuf, scount, sdt, rbuf, 0, rcounts, displs, rdt, root, comm, module,
                          req);
}

static int gpu_scatter(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                       int rcount, struct ompi_datatype_t *rdt, int root,
                       struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return gpu_scatter_any(sbuf, scount, NULL, NULL, sdt, rbuf, rcount, rdt, root, comm, module,
                           NULL);
}

static int gpu_iscatter(const void *sbuf, int scount, struct ompi_datatype_t *sdt, void *rbuf,
                        int rcount, struct ompi_datatype_t *rdt, int root,
                        struct ompi_communicator_t *comm, ompi_request_t **req,
                        mca_coll_base_module_t *module)
{
    return gpu_scatter_any(sbuf, scount, NULL, NULL, sdt, rbuf, rcount, rdt, root, comm, module,
                           req);
}

static int gpu_scatterv(const void *sbuf, const int *scounts, const int *displs,
                        struct ompi_datatype_t *sdt, void *rbuf, int rcount,
                        struct ompi_datatype_t *rdt, int root, struct ompi_communicator_t *comm,
                        mca_coll_base_module_t *module)
{
    return gpu_scatter_any(sbuf, 0, scounts, displs, sdt, rbuf, rcount, rdt, root, comm, module,
                           NULL);
}

static int gpu_iscatterv(const void *sbuf, const int *scounts, const int *displs,
                         struct ompi_datatype_t *sdt, void *rbuf, int rcount,
                         struct ompi_datatype_t *rdt, int root, struct ompi_communicator_t *comm,
                         ompi_request_t **req, mca_coll_base_module_t *module)
{
    return gpu_scatter_any(sbuf, 0, scounts, displs, sdt, rbuf, rcount, rdt, root, comm, module,
                           req);
}

void mca_coll_gpu_install_native(mca_coll_gpu_module_t *m)
{
    m->super.coll_bcast = gpu_bcast;
    m->super.coll_ibcast = gpu_ibcast;
    m->super.coll_allgather = gpu_allgather;
    m->super.coll_iallgather = gpu_iallgather;
    m->super.coll_allgatherv = gpu_allgatherv;
    m->super.coll_iallgatherv = gpu_iallgatherv;
    m->super.coll_alltoall = gpu_alltoall;
    m->super.coll_ialltoall = gpu_ialltoall;
    m->super.coll_alltoallv = gpu_alltoallv;
    m->super.coll_ialltoallv = gpu_ialltoallv;
    m->super.coll_gather = gpu_gather;
    m->super.coll_igather = gpu_igather;
    m->super.coll_gatherv = gpu_gatherv;
    m->super.coll_igatherv = gpu_igatherv;
    m->super.coll_scatter = gpu_scatter;
    m->super.coll_iscatter = gpu_iscatter;
    m->super.coll_scatterv = gpu_scatterv;
    m->super.coll_iscatterv = gpu_iscatterv;
    mca_coll_gpu_install_native_reduce(m);
}
