/*
 * Reduction vocabulary shared by the host (C) and the device (CUDA).
 *
 * The component maps MPI handles onto these enums; the kernels and the
 * CPU unit tests instantiate the same functors (gpu_reduce_ops.h) for each
 * valid (op, dtype) pair.  Integer types are described by width and
 * signedness only: MPI_INT, MPI_INT32_T and MPI_LONG (on LP64) all meet
 * the same kernel.  Logical and bitwise ops never depend on signedness, so
 * they are folded onto the unsigned type of the same width.
 */
#ifndef GPU_TYPES_H
#define GPU_TYPES_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    GPU_OP_SUM = 0,
    GPU_OP_PROD,
    GPU_OP_MIN,
    GPU_OP_MAX,
    GPU_OP_LAND,
    GPU_OP_LOR,
    GPU_OP_LXOR,
    GPU_OP_BAND,
    GPU_OP_BOR,
    GPU_OP_BXOR,
    GPU_OP_MAXLOC,
    GPU_OP_MINLOC,
    GPU_OP_COUNT
} gpu_op_t;

typedef enum {
    GPU_DT_I8 = 0,
    GPU_DT_U8,
    GPU_DT_I16,
    GPU_DT_U16,
    GPU_DT_I32,
    GPU_DT_U32,
    GPU_DT_I64,
    GPU_DT_U64,
    GPU_DT_F32,
    GPU_DT_F64,
    GPU_DT_C32,        /* float _Complex */
    GPU_DT_C64,        /* double _Complex */
    GPU_DT_BOOL,       /* C _Bool: one byte, 0 or 1 */
    GPU_DT_FLOAT_INT,  /* MPI_FLOAT_INT: { float; int; } */
    GPU_DT_DOUBLE_INT, /* MPI_DOUBLE_INT: { double; int; } */
    GPU_DT_LONG_INT,   /* MPI_LONG_INT: { long; int; } */
    GPU_DT_2INT,       /* MPI_2INT: { int; int; } */
    GPU_DT_SHORT_INT,  /* MPI_SHORT_INT: { short; int; } */
    GPU_DT_F16,        /* IEEE 754 binary16 (MPIX_C_FLOAT16) */
    GPU_DT_BF16,       /* bfloat16: binary32's upper half (MPIX_BFLOAT16) */
    GPU_DT_LDOUBLE_INT, /* MPI_LONG_DOUBLE_INT: { long double; int; }, x87 80-bit, 32 bytes */
    GPU_DT_LDOUBLE,    /* MPI_LONG_DOUBLE: x87 80-bit in 16 bytes, MIN/MAX only */
    GPU_DT_COUNT
} gpu_dtype_t;

typedef enum {
    GPU_DTCLASS_INT,
    GPU_DTCLASS_FLOAT,
    GPU_DTCLASS_COMPLEX,
    GPU_DTCLASS_BOOL,
    GPU_DTCLASS_PAIR,
    GPU_DTCLASS_ORDERED /* compared, never computed with (long double) */
} gpu_dtclass_t;

static inline gpu_dtclass_t gpu_dtype_class(gpu_dtype_t dt)
{
    switch (dt) {
    case GPU_DT_F32: case GPU_DT_F64: case GPU_DT_F16: case GPU_DT_BF16:
        return GPU_DTCLASS_FLOAT;
    case GPU_DT_LDOUBLE:
        return GPU_DTCLASS_ORDERED;
    case GPU_DT_C32: case GPU_DT_C64:
        return GPU_DTCLASS_COMPLEX;
    case GPU_DT_BOOL:
        return GPU_DTCLASS_BOOL;
    case GPU_DT_FLOAT_INT: case GPU_DT_DOUBLE_INT: case GPU_DT_LONG_INT:
    case GPU_DT_2INT: case GPU_DT_SHORT_INT: case GPU_DT_LDOUBLE_INT:
        return GPU_DTCLASS_PAIR;
    default:
        return GPU_DTCLASS_INT;
    }
}

/* Element sizes as the C ABI lays the types out on LP64 Linux (x86-64:
 * long double is 16 bytes, 16-aligned, so { long double; int; } is 32). */
static inline size_t gpu_dtype_size(gpu_dtype_t dt)
{
    static const size_t sizes[GPU_DT_COUNT] = {
        1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 8, 16, 1, 8, 16, 16, 8, 8, 2, 2, 32, 16
    };
    return ((unsigned) dt < GPU_DT_COUNT) ? sizes[dt] : 0;
}

/* Which (op, type) pairs MPI defines (MPI-3.1 section 5.9.2) and the
 * functors implement.  Byte is mapped to GPU_DT_U8 by the caller and only
 * for the bitwise ops.  Half precision is a floating type (SUM, PROD, MIN,
 * MAX); long double has no device arithmetic, only MIN and MAX (a
 * comparison of its bytes), so its SUM and PROD stay Open MPI's own. */
static inline int gpu_op_dtype_valid(gpu_op_t op, gpu_dtype_t dt)
{
    gpu_dtclass_t c = gpu_dtype_class(dt);
    switch (op) {
    case GPU_OP_SUM: case GPU_OP_PROD:
        return c == GPU_DTCLASS_INT || c == GPU_DTCLASS_FLOAT || c == GPU_DTCLASS_COMPLEX;
    case GPU_OP_MIN: case GPU_OP_MAX:
        return c == GPU_DTCLASS_INT || c == GPU_DTCLASS_FLOAT || c == GPU_DTCLASS_ORDERED;
    case GPU_OP_LAND: case GPU_OP_LOR: case GPU_OP_LXOR:
        return c == GPU_DTCLASS_INT || c == GPU_DTCLASS_BOOL;
    case GPU_OP_BAND: case GPU_OP_BOR: case GPU_OP_BXOR:
        return c == GPU_DTCLASS_INT;
    case GPU_OP_MAXLOC: case GPU_OP_MINLOC:
        return c == GPU_DTCLASS_PAIR;
    default:
        return 0;
    }
}

const char *gpu_op_name(gpu_op_t op);
const char *gpu_dtype_name(gpu_dtype_t dt);

#ifdef __cplusplus
}
#endif

#endif /* GPU_TYPES_H */
