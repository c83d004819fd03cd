/*
 * MPI_Allreduce entry point and the mapping from MPI handles to the
 * engine's (op, type) vocabulary.
 */
#include "ompi_config.h"

#include "coll_gpu.h"

#include "opal/util/output.h"
#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"

typedef struct {
    MPI_Datatype mpi;
    gpu_dtype_t gpu;
} mca_coll_gpu_type_map_t;

static int mca_coll_gpu_lookup_type(struct ompi_datatype_t *dtype, gpu_dtype_t *dt)
{
    /* MPI handles are addresses of globals, not constants: a function-local
     * table is built on each call, which the compiler keeps cheap. */
    const mca_coll_gpu_type_map_t map[] = {
        { MPI_FLOAT, GPU_DT_F32 }, { MPI_DOUBLE, GPU_DT_F64 },
        { MPI_INT, GPU_DT_I32 }, { MPI_UNSIGNED, GPU_DT_U32 },
        { MPI_LONG, GPU_DT_I64 }, { MPI_UNSIGNED_LONG, GPU_DT_U64 },
        { MPI_LONG_LONG_INT, GPU_DT_I64 }, { MPI_UNSIGNED_LONG_LONG, GPU_DT_U64 },
        { MPI_CHAR, GPU_DT_I8 }, { MPI_SIGNED_CHAR, GPU_DT_I8 },
        { MPI_UNSIGNED_CHAR, GPU_DT_U8 }, { MPI_BYTE, GPU_DT_U8 },
        { MPI_SHORT, GPU_DT_I16 }, { MPI_UNSIGNED_SHORT, GPU_DT_U16 },
        { MPI_INT8_T, GPU_DT_I8 }, { MPI_UINT8_T, GPU_DT_U8 },
        { MPI_INT16_T, GPU_DT_I16 }, { MPI_UINT16_T, GPU_DT_U16 },
        { MPI_INT32_T, GPU_DT_I32 }, { MPI_UINT32_T, GPU_DT_U32 },
        { MPI_INT64_T, GPU_DT_I64 }, { MPI_UINT64_T, GPU_DT_U64 },
        { MPI_C_BOOL, GPU_DT_BOOL },
        { MPI_C_FLOAT_COMPLEX, GPU_DT_C32 }, { MPI_C_COMPLEX, GPU_DT_C32 },
        { MPI_C_DOUBLE_COMPLEX, GPU_DT_C64 },
        { MPI_FLOAT_INT, GPU_DT_FLOAT_INT }, { MPI_DOUBLE_INT, GPU_DT_DOUBLE_INT },
        { MPI_LONG_INT, GPU_DT_LONG_INT }, { MPI_2INT, GPU_DT_2INT },
        { MPI_SHORT_INT, GPU_DT_SHORT_INT },
    };
    ptrdiff_t extent = 0;
    size_t i;

    for (i = 0; i < sizeof(map) / sizeof(map[0]); ++i) {
        if (map[i].mpi == dtype) {
            /* the kernels assume the C layout; refuse if this build differs */
            ompi_datatype_type_extent(dtype, &extent);
            if ((size_t) extent != gpu_dtype_size(map[i].gpu)) {
                return 0;
            }
            *dt = map[i].gpu;
            return 1;
        }
    }
    return 0;
}

static int mca_coll_gpu_lookup_op(struct ompi_op_t *op, gpu_op_t *gop)
{
    const struct {
        MPI_Op mpi;
        gpu_op_t gpu;
    } map[] = {
        { MPI_SUM, GPU_OP_SUM }, { MPI_PROD, GPU_OP_PROD }, { MPI_MIN, GPU_OP_MIN },
        { MPI_MAX, GPU_OP_MAX }, { MPI_LAND, GPU_OP_LAND }, { MPI_LOR, GPU_OP_LOR },
        { MPI_LXOR, GPU_OP_LXOR }, { MPI_BAND, GPU_OP_BAND }, { MPI_BOR, GPU_OP_BOR },
        { MPI_BXOR, GPU_OP_BXOR }, { MPI_MAXLOC, GPU_OP_MAXLOC }, { MPI_MINLOC, GPU_OP_MINLOC },
    };
    size_t i;
    for (i = 0; i < sizeof(map) / sizeof(map[0]); ++i) {
        if (map[i].mpi == op) {
            *gop = map[i].gpu;
            return 1;
        }
    }
    return 0;
}

int mca_coll_gpu_map(struct ompi_datatype_t *dtype, struct ompi_op_t *op, gpu_dtype_t *dt,
                     gpu_op_t *gop)
{
    gpu_dtype_t t;
    gpu_op_t o;

    if (!mca_coll_gpu_lookup_type(dtype, &t) || !mca_coll_gpu_lookup_op(op, &o)) {
        return 0;
    }
    /* MPI_BYTE is defined for the bitwise ops only */
    if (MPI_BYTE == dtype && !(GPU_OP_BAND == o || GPU_OP_BOR == o || GPU_OP_BXOR == o)) {
        return 0;
    }
    if (!gpu_op_dtype_valid(o, t)) {
        return 0;
    }
    *dt = t;
    *gop = o;
    return 1;
}

int mca_coll_gpu_allreduce_any(const void *sbuf, void *rbuf, int count,
                               struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *module,
                               ompi_request_t **req)
{
    mca_coll_gpu_module_t *m = (mca_coll_gpu_module_t *) module;
    const int in_place = (MPI_IN_PLACE == sbuf);
    const int rdev = mca_coll_gpu_is_device(rbuf);
    const int sdev = in_place ? rdev : mca_coll_gpu_is_device(sbuf);
    mca_coll_gpu_call_t call = { .what = "allreduce", .plan = NULL };
    int ret = MPI_SUCCESS, ran = 0;

    if (!rdev && !sdev) {
        return NULL != req ? m->prev.coll_iallreduce(sbuf, rbuf, count, dtype, op, comm, req,
                                                     m->prev.coll_iallreduce_module)
                           : m->prev.coll_allreduce(sbuf, rbuf, count, dtype, op, comm,
                                                    m->prev.coll_allreduce_module);
    }
    if (rdev && sdev && MCA_COLL_GPU_ALGO_STAGED != mca_coll_gpu_component.allreduce_algorithm) {
        const mca_coll_gpu_hier_call_t hc = { .kind = MCA_COLL_GPU_HIER_ALLREDUCE, .sbuf = sbuf,
                                              .rbuf = rbuf, .count = count, .dtype = dtype,
                                              .op = op };
        ret = mca_coll_gpu_hier_run(m, &hc, req, &ran);
        if (ran) {
            return ret;
        }
    }
    if (MPI_SUCCESS == ret && rdev && sdev &&
        MCA_COLL_GPU_ALGO_STAGED != mca_coll_gpu_component.allreduce_algorithm &&
        mca_coll_gpu_map(dtype, op, &call.dt, &call.op) && mca_coll_gpu_native_ready(m, req, &ret)) {
        call.in = in_place ? rbuf : sbuf;
        call.out = rbuf;
        call.count = (size_t) count;
        ret = mca_coll_gpu_native_run(m, &call, req, &ran);
        if (ran) {
            return ret;
        }
    }
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    return mca_coll_gpu_fallback_done(
        mca_coll_gpu_allreduce_staged(sbuf, rbuf, count, dtype, op, comm, m), req);
}

int mca_coll_gpu_allreduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                           struct ompi_op_t *op, struct ompi_communicator_t *comm,
                           mca_coll_base_module_t *module)
{
    return mca_coll_gpu_allreduce_any(sbuf, rbuf, count, dtype, op, comm, module, NULL);
}
