/*
 * Native device-buffer collectives that reduce: reduce, scan, exscan,
 * reduce_scatter(_block), and the nonblocking allreduce; blocking and
 * nonblocking share one function each.  They need a predefined op and
 * type (mca_coll_gpu_map), like allreduce; anything else stages.
 * In-place reduce_scatter stages on every rank: its output overlaps
 * input that peers still read, and the rule is the same everywhere.
 */
#include "ompi_config.h"

#include "coll_gpu.h"

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"

#include "engine/gpu_plan.h"

static int gpu_run_reduce_plan(mca_coll_gpu_module_t *m, const char *what,
                               const gpu_xchg_plan_t *plan, gpu_op_t op, gpu_dtype_t dt,
                               const mca_coll_gpu_args_t *args, ompi_request_t **req, int *ran)
{
    mca_coll_gpu_call_t call = { .what = what, .plan = plan, .op = op, .dt = dt, .args = args };
    return mca_coll_gpu_native_run(m, &call, req, ran);
}

static int gpu_reduce_any(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                          mca_coll_base_module_t *module, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int rank = ompi_comm_rank(comm), is_root = rank == root;
    const int in_place = is_root && MPI_IN_PLACE == sbuf;
    const int rdev = is_root && mca_coll_gpu_is_device(rbuf);
    const int sdev = in_place ? rdev : mca_coll_gpu_is_device(sbuf);
    gpu_xchg_plan_t plan;
    gpu_dtype_t dt;
    gpu_op_t gop;
    int ret = MPI_SUCCESS, ran = 0, go_dev;

    mca_coll_gpu_args_t a;   /* only where agree may keep it (coll_gpu.h) */
    const int need_args = NULL != req || rdev || sdev;
    if (need_args) {
        a = (mca_coll_gpu_args_t) { .kind = MCA_COLL_GPU_ARGS_REDUCE, .sbuf = sbuf, .rbuf = rbuf,
            .rcount = count, .rdtype = dtype, .op = op,
            .root = root };
    }
    ret = mca_coll_gpu_kind_agree(m, sdev && (rdev || !is_root), req, "reduce", need_args ? &a : NULL, &go_dev);
    if (MPI_SUCCESS != ret || go_dev < 0) {
        return ret;   /* an error, or queued */
    }

    if (!rdev && !sdev) {
        return NULL != req ? m->prev.coll_ireduce(sbuf, rbuf, count, dtype, op, root, comm, req,
                                                  m->prev.coll_ireduce_module)
                           : m->prev.coll_reduce(sbuf, rbuf, count, dtype, op, root, comm,
                                                 m->prev.coll_reduce_module);
    }
    if (go_dev) {
        const mca_coll_gpu_hier_call_t hc = { .kind = MCA_COLL_GPU_HIER_REDUCE, .sbuf = sbuf,
                                              .rbuf = rbuf, .count = count, .dtype = dtype,
                                              .op = op, .root = root };
        ret = mca_coll_gpu_hier_run(m, &hc, req, &ran);
        if (ran) {
            return ret;
        }
    }
    if (MPI_SUCCESS == ret && go_dev && mca_coll_gpu_map(dtype, op, &dt, &gop) &&
        mca_coll_gpu_native_ready(m, "reduce", req, &ret) &&
        GPU_OK == gpu_plan_reduce(&plan, rank, ompi_comm_size(comm), root,
                                  in_place ? NULL : (const char *) sbuf, (char *) rbuf,
                                  (size_t) count * gpu_dtype_size(dt))) {
        ret = gpu_run_reduce_plan(m, "reduce", &plan, gop, dt, &a, req, &ran);
        if (ran) {
            return ret;
        }
    }
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    return mca_coll_gpu_reduce_staged(sbuf, rbuf, count, dtype, op, root, comm, module, req);
}

static int gpu_scan_any(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                        struct ompi_op_t *op, struct ompi_communicator_t *comm,
                        mca_coll_base_module_t *module, ompi_request_t **req, int exclusive)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int in_place = MPI_IN_PLACE == sbuf;
    const int rdev = mca_coll_gpu_is_device(rbuf);
    const int sdev = in_place ? rdev : mca_coll_gpu_is_device(sbuf);
    gpu_xchg_plan_t plan;
    gpu_dtype_t dt;
    gpu_op_t gop;
    int ret = MPI_SUCCESS, ran = 0, go_dev;

    mca_coll_gpu_args_t a;   /* only where agree may keep it (coll_gpu.h) */
    const int need_args = NULL != req || rdev || sdev;
    if (need_args) {
        a = (mca_coll_gpu_args_t) { .kind = exclusive ? MCA_COLL_GPU_ARGS_EXSCAN : MCA_COLL_GPU_ARGS_SCAN,
            .sbuf = sbuf, .rbuf = rbuf, .rcount = count,
            .rdtype = dtype, .op = op };
    }
    ret = mca_coll_gpu_kind_agree(m, sdev && rdev, req, exclusive ? "exscan" : "scan", need_args ? &a : NULL, &go_dev);
    if (MPI_SUCCESS != ret || go_dev < 0) {
        return ret;   /* an error, or queued */
    }

    if (!rdev && !sdev) {
        if (exclusive) {
            return NULL != req ? m->prev.coll_iexscan(sbuf, rbuf, count, dtype, op, comm, req,
                                                      m->prev.coll_iexscan_module)
                               : m->prev.coll_exscan(sbuf, rbuf, count, dtype, op, comm,
                                                     m->prev.coll_exscan_module);
        }
        return NULL != req ? m->prev.coll_iscan(sbuf, rbuf, count, dtype, op, comm, req,
                                                m->prev.coll_iscan_module)
                           : m->prev.coll_scan(sbuf, rbuf, count, dtype, op, comm,
                                               m->prev.coll_scan_module);
    }
    if (go_dev && mca_coll_gpu_map(dtype, op, &dt, &gop) &&
        mca_coll_gpu_native_ready(m, exclusive ? "exscan" : "scan", req, &ret) &&
        GPU_OK == gpu_plan_scan(&plan, ompi_comm_rank(comm), ompi_comm_size(comm),
                                in_place ? NULL : (const char *) sbuf, (char *) rbuf,
                                (size_t) count * gpu_dtype_size(dt), exclusive)) {
        ret = gpu_run_reduce_plan(m, exclusive ? "exscan" : "scan", &plan, gop, dt, &a, req,
                                  &ran);
        if (ran) {
            return ret;
        }
    }
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    return exclusive ? mca_coll_gpu_exscan_staged(sbuf, rbuf, count, dtype, op, comm, module, req)
                  : mca_coll_gpu_scan_staged(sbuf, rbuf, count, dtype, op, comm, module, req);
}

/* reduce_scatter_block (rcounts NULL) and reduce_scatter */
static int gpu_reduce_scatter_any(const void *sbuf, void *rbuf, int rcount, const int *rcounts,
                                  struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                  struct ompi_communicator_t *comm,
                                  mca_coll_base_module_t *module, ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int in_place = MPI_IN_PLACE == sbuf, n = ompi_comm_size(comm);
    const int rdev = mca_coll_gpu_is_device(rbuf);
    const int sdev = in_place ? rdev : mca_coll_gpu_is_device(sbuf);
    size_t len[GPU_MAX_PEERS], displ[GPU_MAX_PEERS], off = 0;
    gpu_xchg_plan_t plan;
    gpu_dtype_t dt;
    gpu_op_t gop;
    int ret = MPI_SUCCESS, ran = 0, go_dev;

    mca_coll_gpu_args_t a;   /* only where agree may keep it (coll_gpu.h) */
    const int need_args = NULL != req || rdev || sdev;
    if (need_args) {
        a = (mca_coll_gpu_args_t) {
            .kind = NULL == rcounts ? MCA_COLL_GPU_ARGS_REDUCE_SCATTER_BLOCK : MCA_COLL_GPU_ARGS_REDUCE_SCATTER,
            .sbuf = sbuf, .rbuf = rbuf, .rcount = rcount, .rcounts = rcounts,
            .rdtype = dtype, .op = op };
    }
    ret = mca_coll_gpu_kind_agree(m, sdev && rdev, req, NULL == rcounts ? "reduce_scatter_block" : "reduce_scatter", need_args ? &a : NULL, &go_dev);
    if (MPI_SUCCESS != ret || go_dev < 0) {
        return ret;   /* an error, or queued */
    }

    if (!rdev && !sdev) {
        if (NULL == rcounts) {
            return NULL != req
                       ? m->prev.coll_ireduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                                            req,
                                                            m->prev.coll_ireduce_scatter_block_module)
                       : m->prev.coll_reduce_scatter_block(sbuf, rbuf, rcount, dtype, op, comm,
                                                           m->prev.coll_reduce_scatter_block_module);
        }
        return NULL != req ? m->prev.coll_ireduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm, req,
                                                          m->prev.coll_ireduce_scatter_module)
                           : m->prev.coll_reduce_scatter(sbuf, rbuf, rcounts, dtype, op, comm,
                                                         m->prev.coll_reduce_scatter_module);
    }
    if (go_dev && NULL == rcounts) {
        const mca_coll_gpu_hier_call_t hc = { .kind = MCA_COLL_GPU_HIER_REDUCE_SCATTER_BLOCK,
                                              .sbuf = sbuf, .rbuf = rbuf, .count = rcount,
                                              .dtype = dtype, .op = op };
        ret = mca_coll_gpu_hier_run(m, &hc, req, &ran);
        if (ran) {
            return ret;
        }
    }
    if (MPI_SUCCESS == ret && !in_place && go_dev && n <= GPU_MAX_PEERS &&
        mca_coll_gpu_map(dtype, op, &dt, &gop) &&
        mca_coll_gpu_native_ready(m, NULL == rcounts ? "reduce_scatter_block" : "reduce_scatter",
                                  req, &ret)) {
        for (int q = 0; q < n; ++q) {
            len[q] = (size_t) (NULL != rcounts ? rcounts[q] : rcount) * gpu_dtype_size(dt);
            displ[q] = off;
            off += len[q];
        }
        if (GPU_OK == gpu_plan_reduce_scatterv(&plan, ompi_comm_rank(comm), n, (const char *) sbuf,
                                               (char *) rbuf, len, displ)) {
            ret = gpu_run_reduce_plan(m, NULL == rcounts ? "reduce_scatter_block"
                                                         : "reduce_scatter",
                                      &plan, gop, dt, &a, req, &ran);
            if (ran) {
                return ret;
            }
        }
    }
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    return NULL == rcounts ? mca_coll_gpu_reduce_scatter_block_staged(sbuf, rbuf, rcount, dtype, op,
                                                                   comm, module, req)
                        : mca_coll_gpu_reduce_scatter_staged(sbuf, rbuf, rcounts, dtype, op, comm,
                                                             module, req);
}

/* ---- the module's entry points ------------------------------------------ */

static int gpu_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                      struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                      mca_coll_base_module_t *module)
{
    return gpu_reduce_any(sbuf, rbuf, count, dtype, op, root, comm, module, NULL);
}

static int gpu_ireduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                       ompi_request_t **req, mca_coll_base_module_t *module)
{
    return gpu_reduce_any(sbuf, rbuf, count, dtype, op, root, comm, module, req);
}

static int gpu_scan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                    struct ompi_op_t *op, struct ompi_communicator_t *comm,
                    mca_coll_base_module_t *module)
{
    return gpu_scan_any(sbuf, rbuf, count, dtype, op, comm, module, NULL, 0);
}

static int gpu_iscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                     struct ompi_op_t *op, struct ompi_communicator_t *comm, ompi_request_t **req,
                     mca_coll_base_module_t *module)
{
    return gpu_scan_any(sbuf, rbuf, count, dtype, op, comm, module, req, 0);
}

static int gpu_exscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                      struct ompi_op_t *op, struct ompi_communicator_t *comm,
                      mca_coll_base_module_t *module)
{
    return gpu_scan_any(sbuf, rbuf, count, dtype, op, comm, module, NULL, 1);
}

static int gpu_iexscan(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                       struct ompi_op_t *op, struct ompi_communicator_t *comm,
                       ompi_request_t **req, mca_coll_base_module_t *module)
{
    return gpu_scan_any(sbuf, rbuf, count, dtype, op, comm, module, req, 1);
}

static int gpu_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm,
                                    mca_coll_base_module_t *module)
{
    return gpu_reduce_scatter_any(sbuf, rbuf, rcount, NULL, dtype, op, comm, module, NULL);
}

static int gpu_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                     struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                     struct ompi_communicator_t *comm, ompi_request_t **req,
                                     mca_coll_base_module_t *module)
{
    return gpu_reduce_scatter_any(sbuf, rbuf, rcount, NULL, dtype, op, comm, module, req);
}

static int gpu_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                              struct ompi_communicator_t *comm, mca_coll_base_module_t *module)
{
    return gpu_reduce_scatter_any(sbuf, rbuf, 0, rcounts, dtype, op, comm, module, NULL);
}

static int gpu_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, ompi_request_t **req,
                               mca_coll_base_module_t *module)
{
    return gpu_reduce_scatter_any(sbuf, rbuf, 0, rcounts, dtype, op, comm, module, req);
}

static int gpu_iallreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, struct ompi_communicator_t *comm,
                          ompi_request_t **req, mca_coll_base_module_t *module)
{
    return mca_coll_gpu_allreduce_any(sbuf, rbuf, count, dtype, op, comm, module, req);
}

void mca_coll_gpu_install_native_reduce(mca_coll_gpu_module_t *m)
{
    m->super.coll_reduce = gpu_reduce;
    m->super.coll_ireduce = gpu_ireduce;
    m->super.coll_scan = gpu_scan;
    m->super.coll_iscan = gpu_iscan;
    m->super.coll_exscan = gpu_exscan;
    m->super.coll_iexscan = gpu_iexscan;
    m->super.coll_reduce_scatter_block = gpu_reduce_scatter_block;
    m->super.coll_ireduce_scatter_block = gpu_ireduce_scatter_block;
    m->super.coll_reduce_scatter = gpu_reduce_scatter;
    m->super.coll_ireduce_scatter = gpu_ireduce_scatter;
    m->super.coll_iallreduce = gpu_iallreduce;
}
