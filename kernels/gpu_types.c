#include "gpu_types.h"

const char *gpu_op_name(gpu_op_t op)
{
    static const char *names[GPU_OP_COUNT] = {
        "sum", "prod", "min", "max", "land", "lor", "lxor",
        "band", "bor", "bxor", "maxloc", "minloc"
    };
    return ((unsigned) op < GPU_OP_COUNT) ? names[op] : "?";
}

const char *gpu_dtype_name(gpu_dtype_t dt)
{
    static const char *names[GPU_DT_COUNT] = {
        "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
        "float", "double", "float_complex", "double_complex", "bool",
        "float_int", "double_int", "long_int", "2int", "short_int",
        "float16", "bfloat16", "long_double_int", "long_double"
    };
    return ((unsigned) dt < GPU_DT_COUNT) ? names[dt] : "?";
}
