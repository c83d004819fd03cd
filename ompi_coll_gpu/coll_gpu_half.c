/*
 * MPICH's half-precision handles on Open MPI: MPIX_C_FLOAT16 (IEEE
 * binary16) and MPIX_BFLOAT16, made here for libgpucoll (mpix/mpix_gpu.h,
 * mpix/gpucoll_mpix_types.c), which finds mca_coll_gpu_half_type_v1 with
 * dlsym as it finds the MPIX table.
 *
 * Why not a plain derived type.  Open MPI checks every reduction's (op,
 * datatype) in the MPI binding, before any coll component is called
 * (ompi_op_is_valid, with mpi_param_check on, the default): a derived type
 * with MPI_SUM is refused there (MPI_ERR_OP), and with the check off the
 * base functions would run MPI_BYTE's arithmetic.  A type the binding
 * accepts must look predefined: its OMPI_DATATYPE_FLAG_PREDEFINED set, and
 * an id whose entry in ompi_op_ddt_map leads to a slot of the predefined
 * ops' function tables that holds a function.
 *
 * What is borrowed.  Ids: MPI_LB's for binary16, MPI_UB's for bfloat16
 * (markers that no reduction takes: ompi_op_ddt_map has -1 for both).
 * Slots: two the build leaves empty in every predefined op, 2- and
 * 3-buffer, and that no datatype id maps to (4.1.4 on Debian: INTEGER16
 * and REAL2, no such Fortran types; 5.0 without Fortran: several),
 * searched for at run time.  Into those slots of MPI_SUM, MPI_PROD,
 * MPI_MIN and MPI_MAX go the functions below, which fold with this
 * project's functors (kernels/gpu_reduce_ops.h: fp32 arithmetic, rounded
 * to nearest even), so every caller of ompi_op_reduce is right: the
 * previous coll module on host buffers (tuned, han, libnbc: every
 * reducing collective, blocking, nonblocking and persistent),
 * MPI_Reduce_local, and coll/gpu's own staged path.  Other ops keep the
 * slot empty, so MPI_BAND on a half type is MPI_ERR_OP as MPI says.  On
 * device buffers coll/gpu maps the handles to GPU_DT_F16/GPU_DT_BF16
 * (mca_coll_gpu_half_dtype) and runs its kernels; a reduction that Open
 * MPI itself runs on device memory here (MPI_Reduce_local on device
 * buffers) is folded on host copies.
 *
 * Limits.  The handles are not MPI_Type_free'able (they are "predefined")
 * and are never released.  One-sided accumulates send a predefined type by
 * its id, which the target reads back as MPI_LB/MPI_UB: not supported with
 * these handles.  Where no empty slot is found (an Open MPI with every
 * Fortran type), the handles still move data (bcast, gather, ...) but a
 * reduction with them is refused as for any derived type, and the
 * component says so once.  Open MPI 5.0's own MPIX_C_FLOAT16 (its
 * shortfloat extension) is a real predefined type: mpix_gpu.h then uses
 * it and only MPIX_BFLOAT16 comes from here.
 */
#include "ompi_config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "coll_gpu.h"

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/datatype/ompi_datatype_internal.h"
#include "ompi/op/op.h"

#include "kernels/gpu_kernels.h"
#include "mpix/gpucoll_mpix_types.h"
#include "util/gpu_cuda_drv.h"

#define HALF_KINDS 2

static struct {
    pthread_mutex_t lock;
    int tried;                                 /* the slots were looked for */
    int slot[HALF_KINDS];                      /* -1: none */
    struct ompi_datatype_t *type[HALF_KINDS];  /* NULL until made */
} half = { PTHREAD_MUTEX_INITIALIZER, 0, { -1, -1 }, { NULL, NULL } };

static const gpu_dtype_t half_gpu[HALF_KINDS] = { GPU_DT_F16, GPU_DT_BF16 };
static const char *const half_name[HALF_KINDS] = { "MPIX_C_FLOAT16", "MPIX_BFLOAT16" };

gpu_dtype_t mca_coll_gpu_half_dtype(struct ompi_datatype_t *dtype)
{
    for (int k = 0; k < HALF_KINDS; ++k) {
        if (NULL != dtype && dtype == half.type[k]) {
            return half_gpu[k];
        }
    }
    return GPU_DT_COUNT;
}

/* in op out over count elements, on host copies where either side lies
 * in device memory (Open MPI's callers hand us whatever they were given) */
static void half_fold(const void *in, void *out, size_t count, gpu_op_t op, gpu_dtype_t dt)
{
    const size_t bytes = count * 2;
    const int dev = GPU_MEM_HOST != gpu_drv_mem_kind(in, NULL, NULL) ||
                    GPU_MEM_HOST != gpu_drv_mem_kind(out, NULL, NULL);
    const char *why = "";
    void *hin, *hout;

    if (!dev) {
        gpu_reduce_host(out, in, count, op, dt);
        return;
    }
    hin = malloc(bytes);
    hout = malloc(bytes);
    if (NULL == hin || NULL == hout) {
        why = "no host memory for the copies";
    } else if (0 != gpu_drv_copy(hin, in, bytes, &why) || 0 != gpu_drv_copy(hout, out, bytes, &why)) {
        /* why set by the copy */
    } else {
        gpu_reduce_host(hout, hin, count, op, dt);
        if (0 == gpu_drv_copy(out, hout, bytes, &why)) {
            why = NULL;
        }
    }
    if (NULL != why) {
        /* Open MPI's op functions return nothing: say it where it happens */
        opal_output(0, "coll/gpu: %s %s on device memory (%zu elements) failed: %s",
                    gpu_dtype_name(dt), gpu_op_name(op), count, why);
    }
    free(hin);
    free(hout);
}

static int half_kind(struct ompi_datatype_t *dt)
{
    return dt == half.type[1] ? 1 : 0;
}

/* host to host by memcpy (no driver needed), else the driver's copy */
static int half_copy(void *dst, const void *src, size_t bytes, const char **why)
{
    if (GPU_MEM_HOST == gpu_drv_mem_kind(dst, NULL, NULL) &&
        GPU_MEM_HOST == gpu_drv_mem_kind(src, NULL, NULL)) {
        memcpy(dst, src, bytes);
        return 0;
    }
    return gpu_drv_copy(dst, src, bytes, why);
}

/* out = in1 op in2 (ompi_3buff_op_reduce; in1 takes the accumulator's
 * place, as in Open MPI's 3-buffer loops): in1 copied to out, in2 folded
 * in; through a temporary where out is in2 */
static void half_fold3(const void *in1, const void *in2, void *out, size_t count, gpu_op_t op,
                       gpu_dtype_t dt)
{
    const char *why = NULL;
    void *tmp;

    if (out != in2) {
        if (out != in1 && 0 != half_copy(out, in1, count * 2, &why)) {
            opal_output(0, "coll/gpu: %s copy failed: %s", gpu_dtype_name(dt), why);
            return;
        }
        half_fold(in2, out, count, op, dt);
        return;
    }
    tmp = malloc(count * 2);
    if (NULL == tmp) {
        opal_output(0, "coll/gpu: %s %s: no host memory", gpu_dtype_name(dt), gpu_op_name(op));
        return;
    }
    if (0 == half_copy(tmp, in1, count * 2, &why)) {
        half_fold(in2, tmp, count, op, dt);
        if (0 != half_copy(out, tmp, count * 2, &why)) {
            opal_output(0, "coll/gpu: %s copy failed: %s", gpu_dtype_name(dt), why);
        }
    } else {
        opal_output(0, "coll/gpu: %s copy failed: %s", gpu_dtype_name(dt), why);
    }
    free(tmp);
}

#define HALF_FN(name, gop)                                                                   \
    static void half_2buff_##name(const void *in, void *out, int *count,                   \
                                  struct ompi_datatype_t **dtype,                           \
                                  struct ompi_op_base_module_1_0_0_t *module)               \
    {                                                                                       \
        (void) module;                                                                      \
        half_fold(in, out, (size_t) *count, gop, half_gpu[half_kind(*dtype)]);              \
    }                                                                                       \
    static void half_3buff_##name(const void *in1, const void *in2, void *out, int *count, \
                                  struct ompi_datatype_t **dtype,                           \
                                  struct ompi_op_base_module_1_0_0_t *module)               \
    {                                                                                       \
        (void) module;                                                                      \
        half_fold3(in1, in2, out, (size_t) *count, gop, half_gpu[half_kind(*dtype)]);       \
    }
HALF_FN(sum, GPU_OP_SUM)
HALF_FN(prod, GPU_OP_PROD)
HALF_FN(min, GPU_OP_MIN)
HALF_FN(max, GPU_OP_MAX)

/* the predefined ops, every one (an empty slot must be empty in all) */
static struct ompi_op_t *half_op(int k)
{
    MPI_Op const ops[12] = { MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_LAND, MPI_LOR,
                             MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC };
    return ops[k];
}

static int half_slot_free(int s)
{
    for (int k = 0; k < 12; ++k) {
        if (NULL != half_op(k)->o_func.intrinsic.fns[s] ||
            NULL != half_op(k)->o_3buff_intrinsic.fns[s]) {
            return 0;
        }
    }
    for (int id = 0; id < OMPI_DATATYPE_MAX_PREDEFINED; ++id) {
        if (ompi_op_ddt_map[id] == s) {
            return 0;
        }
    }
    return 1;
}

/* find two empty slots, fill them, point the borrowed ids at them; under
 * half.lock */
static void half_install(void)
{
    static const int ids[HALF_KINDS] = { OMPI_DATATYPE_MPI_LB, OMPI_DATATYPE_MPI_UB };
    ompi_op_base_handler_fn_t const f2[4] = { half_2buff_sum, half_2buff_prod, half_2buff_min,
                                              half_2buff_max };
    ompi_op_base_3buff_handler_fn_t const f3[4] = { half_3buff_sum, half_3buff_prod,
                                                    half_3buff_min, half_3buff_max };
    int k = 0;

    half.tried = 1;
    for (int id = 0; id < HALF_KINDS; ++id) {
        if (-1 != ompi_op_ddt_map[ids[id]]) {
            opal_output(0, "coll/gpu: MPIX_C_FLOAT16/MPIX_BFLOAT16 reductions unavailable: "
                           "this Open MPI reduces on MPI_LB or MPI_UB");
            return;
        }
    }
    for (int s = 0; s < OMPI_OP_BASE_TYPE_MAX && k < HALF_KINDS; ++s) {
        if (half_slot_free(s)) {
            half.slot[k++] = s;
        }
    }
    if (k < HALF_KINDS) {
        half.slot[0] = half.slot[1] = -1;
        opal_output(0, "coll/gpu: MPIX_C_FLOAT16/MPIX_BFLOAT16 reductions unavailable: "
                       "this Open MPI has no two unused op slots (they still move data)");
        return;
    }
    for (k = 0; k < HALF_KINDS; ++k) {
        /* SUM, PROD, MIN, MAX are the ops MPI defines on floating types */
        for (int o = 0; o < 4; ++o) {
            half_op(o)->o_func.intrinsic.fns[half.slot[k]] = f2[o];
            half_op(o)->o_func.intrinsic.modules[half.slot[k]] = NULL;
            half_op(o)->o_3buff_intrinsic.fns[half.slot[k]] = f3[o];
            half_op(o)->o_3buff_intrinsic.modules[half.slot[k]] = NULL;
        }
        ompi_op_ddt_map[ids[k]] = half.slot[k];
    }
}

MCA_COLL_GPU_DECLSPEC int mca_coll_gpu_half_type_v1(int which, MPI_Datatype *out)
{
    static const int ids[HALF_KINDS] = { OMPI_DATATYPE_MPI_LB, OMPI_DATATYPE_MPI_UB };
    MPI_Datatype t = MPI_DATATYPE_NULL;
    int ret = MPI_SUCCESS;

    if (which < 0 || which >= HALF_KINDS || NULL == out) {
        return MPI_ERR_ARG;
    }
    pthread_mutex_lock(&half.lock);
    if (NULL == half.type[which]) {
        if (!half.tried) {
            half_install();
        }
        ret = MPI_Type_contiguous(1, MPI_UINT16_T, &t);
        if (MPI_SUCCESS == ret) {
            ret = MPI_Type_commit(&t);
        }
        if (MPI_SUCCESS == ret) {
            ret = MPI_Type_set_name(t, half_name[which]);
        }
        if (MPI_SUCCESS == ret && half.slot[which] >= 0) {
            /* predefined-looking: the binding's check passes and
             * ompi_op_reduce finds half_*_{sum,prod,min,max} by the id */
            t->super.flags |= OMPI_DATATYPE_FLAG_PREDEFINED;
            t->id = ids[which];
        }
        if (MPI_SUCCESS == ret) {
            half.type[which] = t;
        } else if (MPI_DATATYPE_NULL != t) {
            MPI_Type_free(&t);
        }
    }
    *out = half.type[which];
    pthread_mutex_unlock(&half.lock);
    return ret;
}
