/*
 * The native path's run: one engine call (an exchange plan, or the
 * allreduce) that the route (coll_gpu_route.c) built from the call's
 * arguments once every rank agreed to take it.  A nonblocking call
 * returns a request completed by progress (coll_gpu_request.c).
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
    if (NULL != call->wide) {
        /* the tests look for this name (test/gpu/test_gpu_pairs.c) */
        return blocking ? "wide: moved, folded" : "wide: moved, folded, from progress";
    }
    if (!blocking) {
        return "host-paced, from progress";
    }
    if (NULL == call->plan && call->root >= 0) {
        return GPU_PLAN_REDUCE_TS_NAME;   /* the tests look for it (test/unit/test_plan.c) */
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
    if (gpu_engine_put_takes(m->engine, call->plan, blocking)) {
        /* where a buffer cannot be shared every rank takes the exchange kernel instead */
        return "put";
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
                                     gpu_call_bytes(m, call) : 0,
                                     gpu_call_algo(m, call, 0, 0));
            mca_coll_gpu_request_commit(r, 1, &trace, call->behind);
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
    if (NULL != call->wide) {
        st = gpu_engine_wide(m->engine, call->what, call->wide, er);
    } else if (NULL != call->plan) {
        st = gpu_engine_xchg(m->engine, call->what, call->plan, call->op, call->dt, er);
    } else if (call->root >= 0) {
        st = gpu_engine_reduce_ts(m->engine, call->in, call->out, call->count, call->op,
                                  call->dt, call->root, er);
    } else {
        st = gpu_engine_allreduce(m->engine, call->in, call->out, call->count, call->op, call->dt,
                                  er);
    }
    mca_coll_gpu_kind_engine(m, 0);
    if (NULL != r) {
        mca_coll_gpu_trace_started(&trace);
        mca_coll_gpu_request_commit(r, GPU_OK == st, &trace, call->behind);
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
