/*
 * MPI handles in the engine's (op, type) vocabulary, and the host ops of
 * the staged path.
 *
 * The staged reductions fold on the CPU with this project's own functors
 * (kernels/gpu_reduce_ops.h, the code the kernels run), not with Open
 * MPI's op components.  Open MPI 4.1.4's op/avx gets some predefined
 * (op, type) pairs wrong (osu_allreduce -c fails at 16 B with it), and a
 * staged call must be as right as the GPU path whatever the host library.
 *
 * The previous module runs the staged collective on host copies; it is
 * handed, in place of a predefined op, a commutative "user" op made here
 * whose function maps the datatype it is given (predefined, or a derived
 * type made of one predefined type) to the functors.  A pair the functors
 * do not know (long double, say) goes back to Open MPI's own op.  The
 * wrappers live as long as the process (Open MPI's finalize frees ops).
 */
#include "ompi_config.h"

#include "coll_gpu.h"

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"

#include "kernels/gpu_kernels.h"

typedef struct {
    MPI_Datatype mpi;
    gpu_dtype_t gpu;
} mca_coll_gpu_type_map_t;

#if OMPI_MAJOR_VERSION >= 5
/* Open MPI 5.0's MPIX_C_FLOAT16 (mpi-ext.h, shortfloat extension): in
 * libmpi whether or not the extension is built; its extent says whether
 * it is binary16 here (0 where the compiler had no short float) */
OMPI_DECLSPEC extern struct ompi_predefined_datatype_t ompi_mpi_short_float;
#define GPU_OMPI_SHORT_FLOAT ((MPI_Datatype) &ompi_mpi_short_float)
#endif

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
#if defined(__x86_64__)
        /* the kernels compare x87 extended bytes (kernels/gpu_reduce_ops.h) */
        { MPI_LONG_DOUBLE_INT, GPU_DT_LDOUBLE_INT }, { MPI_LONG_DOUBLE, GPU_DT_LDOUBLE },
#endif
#if OMPI_MAJOR_VERSION >= 5
        { GPU_OMPI_SHORT_FLOAT, GPU_DT_F16 },
#endif
    };
    ptrdiff_t extent = 0;
    size_t i;

    /* libgpucoll's MPIX_C_FLOAT16 / MPIX_BFLOAT16 (coll_gpu_half.c) */
    *dt = mca_coll_gpu_half_dtype(dtype);
    if (GPU_DT_COUNT != *dt) {
        return 1;
    }

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

/* The (op, type) pair in the functors' vocabulary, for the host functors:
 * every pair they implement */
static int mca_coll_gpu_map_host(struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                 gpu_dtype_t *dt, gpu_op_t *gop)
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

int mca_coll_gpu_map(struct ompi_datatype_t *dtype, struct ompi_op_t *op, gpu_dtype_t *dt,
                     gpu_op_t *gop)
{
    /* The kernels cut a message into pieces of 16-byte multiples (one-shot
     * slices, two-shot shards, exchange chunks, stream pieces): a wider
     * element (long double int, 32 bytes) could straddle two pieces.  It
     * stages, folded by the same functors on the host (MPI_Reduce_local on
     * device memory runs it on the GPU: op/gpu folds element-wise). */
    return mca_coll_gpu_map_host(dtype, op, dt, gop) && gpu_dtype_size(*dt) <= 16;
}

int mca_coll_gpu_map_wide(struct ompi_datatype_t *dtype, struct ompi_op_t *op, gpu_dtype_t *dt,
                          gpu_op_t *gop)
{
    return mca_coll_gpu_map_host(dtype, op, dt, gop) &&
           GPU_DTCLASS_PAIR == gpu_dtype_class(*dt) && gpu_dtype_size(*dt) > 16;
}

#define GPU_HOSTOPS 12

static MPI_Op mca_coll_gpu_hostop[GPU_HOSTOPS];

/* the predefined op behind wrapper k (MPI handles are addresses of
 * globals: not constants, so looked up by function) */
static MPI_Op mca_coll_gpu_hostop_orig(int k)
{
    MPI_Op const ops[GPU_HOSTOPS] = { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND,
                                          MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR,
                                          MPI_MAXLOC, MPI_MINLOC };
    return ops[k];
}

static void mca_coll_gpu_hostop_apply(int k, void *in, void *inout, int *len,
                                      MPI_Datatype *type)
{
    MPI_Op orig = mca_coll_gpu_hostop_orig(k);
    ompi_datatype_t *dt = *type;
    size_t count = (size_t) *len;
    gpu_dtype_t gdt;
    gpu_op_t gop;

    if (!ompi_datatype_is_predefined(dt)) {
        ompi_datatype_t *base = ompi_datatype_get_single_predefined_type_from_args(dt);
        size_t size = 0, bsize = 0;
        if (NULL != base) {
            ompi_datatype_type_size(dt, &size);
            ompi_datatype_type_size(base, &bsize);
        }
        if (NULL != base && bsize > 0 && 0 == size % bsize) {
            count *= size / bsize;
            dt = base;
        }
    }
    if (mca_coll_gpu_map_host(dt, orig, &gdt, &gop) &&
        gpu_reduce_host(inout, in, count, gop, gdt)) {
        return;
    }
    (void) MPI_Reduce_local(in, inout, *len, *type, orig);
}

#define GPU_HOSTOP_FN(k)                                                               \
    static void mca_coll_gpu_hostop_fn##k(void *in, void *inout, int *len, MPI_Datatype *t) \
    {                                                                                  \
        mca_coll_gpu_hostop_apply(k, in, inout, len, t);                               \
    }
GPU_HOSTOP_FN(0)
GPU_HOSTOP_FN(1)
GPU_HOSTOP_FN(2)
GPU_HOSTOP_FN(3)
GPU_HOSTOP_FN(4)
GPU_HOSTOP_FN(5)
GPU_HOSTOP_FN(6)
GPU_HOSTOP_FN(7)
GPU_HOSTOP_FN(8)
GPU_HOSTOP_FN(9)
GPU_HOSTOP_FN(10)
GPU_HOSTOP_FN(11)

struct ompi_op_t *mca_coll_gpu_host_op(struct ompi_op_t *op)
{
    static MPI_User_function *const fns[GPU_HOSTOPS] = {
        mca_coll_gpu_hostop_fn0, mca_coll_gpu_hostop_fn1, mca_coll_gpu_hostop_fn2,
        mca_coll_gpu_hostop_fn3, mca_coll_gpu_hostop_fn4, mca_coll_gpu_hostop_fn5,
        mca_coll_gpu_hostop_fn6, mca_coll_gpu_hostop_fn7, mca_coll_gpu_hostop_fn8,
        mca_coll_gpu_hostop_fn9, mca_coll_gpu_hostop_fn10, mca_coll_gpu_hostop_fn11,
    };
    for (int k = 0; k < GPU_HOSTOPS; ++k) {
        if (mca_coll_gpu_hostop_orig(k) != op) {
            continue;
        }
        if (NULL == mca_coll_gpu_hostop[k] &&
            MPI_SUCCESS != MPI_Op_create(fns[k], 1, &mca_coll_gpu_hostop[k])) {
            mca_coll_gpu_hostop[k] = NULL;
        }
        return NULL != mca_coll_gpu_hostop[k] ? mca_coll_gpu_hostop[k] : op;
    }
    return op;
}
