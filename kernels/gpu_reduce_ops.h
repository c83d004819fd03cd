/*
 * Reduction functors, one per MPI predefined op, compiled both by nvcc for
 * the kernels and by the host C++ compiler for the unit tests, so the code
 * that the tests check against MPI_Reduce_local is the code the GPU runs.
 *
 * apply(acc, x) is "acc op x" where acc holds ranks 0..r-1 and x is rank r:
 * every rank folds inputs in rank order, which makes results bit-identical
 * everywhere.  Integer arithmetic goes through the unsigned type so that
 * overflow wraps instead of being undefined behaviour.
 */
#ifndef GPU_REDUCE_OPS_H
#define GPU_REDUCE_OPS_H

#include <stdint.h>
#include <type_traits>

#include "gpu_types.h"

#ifdef __CUDACC__
#define GPU_HD __host__ __device__ __forceinline__
#else
#define GPU_HD inline
#endif

struct gpu_cfloat {
    float re, im;
};
struct gpu_cdouble {
    double re, im;
};
template <class V> struct gpu_pair {
    V v;
    int i;
};

template <class T> struct gpu_is_complex : std::false_type {};
template <> struct gpu_is_complex<gpu_cfloat> : std::true_type {};
template <> struct gpu_is_complex<gpu_cdouble> : std::true_type {};

template <class T> GPU_HD T gpu_wrap_add(T a, T b)
{
    if constexpr (std::is_integral<T>::value) {
        typedef typename std::make_unsigned<T>::type U;
        return (T) (U) ((U) a + (U) b);
    } else if constexpr (gpu_is_complex<T>::value) {
        T r;
        r.re = a.re + b.re;
        r.im = a.im + b.im;
        return r;
    } else {
        return a + b;
    }
}

template <class T> GPU_HD T gpu_wrap_mul(T a, T b)
{
    if constexpr (std::is_integral<T>::value) {
        typedef typename std::make_unsigned<T>::type U;
        /* promote narrow unsigned types past int to avoid signed overflow */
        typedef typename std::conditional<(sizeof(U) < sizeof(unsigned)), unsigned, U>::type W;
        return (T) (U) ((W) (U) a * (W) (U) b);
    } else if constexpr (gpu_is_complex<T>::value) {
        T r;
        r.re = a.re * b.re - a.im * b.im;
        r.im = a.re * b.im + a.im * b.re;
        return r;
    } else {
        return a * b;
    }
}

template <gpu_op_t OP, class T> struct gpu_red;

template <class T> struct gpu_red<GPU_OP_SUM, T> {
    static GPU_HD T apply(T a, T b) { return gpu_wrap_add(a, b); }
};
template <class T> struct gpu_red<GPU_OP_PROD, T> {
    static GPU_HD T apply(T a, T b) { return gpu_wrap_mul(a, b); }
};
template <class T> struct gpu_red<GPU_OP_MIN, T> {
    static GPU_HD T apply(T a, T b) { return (a < b) ? a : b; }
};
template <class T> struct gpu_red<GPU_OP_MAX, T> {
    static GPU_HD T apply(T a, T b) { return (a > b) ? a : b; }
};
template <class T> struct gpu_red<GPU_OP_LAND, T> {
    static GPU_HD T apply(T a, T b) { return (T) ((a != 0) && (b != 0)); }
};
template <class T> struct gpu_red<GPU_OP_LOR, T> {
    static GPU_HD T apply(T a, T b) { return (T) ((a != 0) || (b != 0)); }
};
template <class T> struct gpu_red<GPU_OP_LXOR, T> {
    static GPU_HD T apply(T a, T b) { return (T) ((a != 0) != (b != 0)); }
};
template <class T> struct gpu_red<GPU_OP_BAND, T> {
    static GPU_HD T apply(T a, T b) { return (T) (a & b); }
};
template <class T> struct gpu_red<GPU_OP_BOR, T> {
    static GPU_HD T apply(T a, T b) { return (T) (a | b); }
};
template <class T> struct gpu_red<GPU_OP_BXOR, T> {
    static GPU_HD T apply(T a, T b) { return (T) (a ^ b); }
};
/* MPI-3.1 5.9.4: on ties the smaller index wins. */
template <class T> struct gpu_red<GPU_OP_MAXLOC, T> {
    static GPU_HD T apply(T a, T b)
    {
        if (a.v > b.v) return a;
        if (b.v > a.v) return b;
        T r = a;
        r.i = (a.i < b.i) ? a.i : b.i;
        return r;
    }
};
template <class T> struct gpu_red<GPU_OP_MINLOC, T> {
    static GPU_HD T apply(T a, T b)
    {
        if (a.v < b.v) return a;
        if (b.v < a.v) return b;
        T r = a;
        r.i = (a.i < b.i) ? a.i : b.i;
        return r;
    }
};

/*
 * Calls v.template run<OP, T>() for the functor matching (op, dt), or
 * returns false for pairs MPI does not define.  Logical and bitwise ops are
 * folded onto unsigned types (and bool onto uint8_t), which keeps the
 * number of kernel instantiations, and the build time, down.
 */
/* Host and device: the persistent kernel picks (op, type) at run time. */
#ifdef __CUDACC__
#define GPU_DISPATCH_HD __host__ __device__
#define GPU_DISPATCH_NOCHECK _Pragma("nv_exec_check_disable")
#else
#define GPU_DISPATCH_HD
#define GPU_DISPATCH_NOCHECK
#endif

GPU_DISPATCH_NOCHECK
template <gpu_op_t OP, class V> GPU_DISPATCH_HD static bool gpu_dispatch_op_int(gpu_dtype_t dt, V &v)
{
    constexpr bool fold = (OP >= GPU_OP_LAND && OP <= GPU_OP_BXOR);
    switch (dt) {
    case GPU_DT_I8:
        if constexpr (fold) return v.template run<OP, uint8_t>();
        else return v.template run<OP, int8_t>();
    case GPU_DT_U8: return v.template run<OP, uint8_t>();
    case GPU_DT_I16:
        if constexpr (fold) return v.template run<OP, uint16_t>();
        else return v.template run<OP, int16_t>();
    case GPU_DT_U16: return v.template run<OP, uint16_t>();
    case GPU_DT_I32:
        if constexpr (fold) return v.template run<OP, uint32_t>();
        else return v.template run<OP, int32_t>();
    case GPU_DT_U32: return v.template run<OP, uint32_t>();
    case GPU_DT_I64:
        if constexpr (fold) return v.template run<OP, uint64_t>();
        else return v.template run<OP, int64_t>();
    case GPU_DT_U64: return v.template run<OP, uint64_t>();
    default: return false;
    }
}

GPU_DISPATCH_NOCHECK
template <class V> GPU_DISPATCH_HD static bool gpu_dispatch(gpu_op_t op, gpu_dtype_t dt, V &v)
{
#ifndef __CUDA_ARCH__
    /* on the device the host has checked already */
    if (!gpu_op_dtype_valid(op, dt)) {
        return false;
    }
#endif
    switch (op) {
    case GPU_OP_SUM:
    case GPU_OP_PROD:
        if (dt == GPU_DT_F32) return op == GPU_OP_SUM ? v.template run<GPU_OP_SUM, float>() : v.template run<GPU_OP_PROD, float>();
        if (dt == GPU_DT_F64) return op == GPU_OP_SUM ? v.template run<GPU_OP_SUM, double>() : v.template run<GPU_OP_PROD, double>();
        if (dt == GPU_DT_C32) return op == GPU_OP_SUM ? v.template run<GPU_OP_SUM, gpu_cfloat>() : v.template run<GPU_OP_PROD, gpu_cfloat>();
        if (dt == GPU_DT_C64) return op == GPU_OP_SUM ? v.template run<GPU_OP_SUM, gpu_cdouble>() : v.template run<GPU_OP_PROD, gpu_cdouble>();
        return op == GPU_OP_SUM ? gpu_dispatch_op_int<GPU_OP_SUM>(dt, v) : gpu_dispatch_op_int<GPU_OP_PROD>(dt, v);
    case GPU_OP_MIN:
    case GPU_OP_MAX:
        if (dt == GPU_DT_F32) return op == GPU_OP_MIN ? v.template run<GPU_OP_MIN, float>() : v.template run<GPU_OP_MAX, float>();
        if (dt == GPU_DT_F64) return op == GPU_OP_MIN ? v.template run<GPU_OP_MIN, double>() : v.template run<GPU_OP_MAX, double>();
        return op == GPU_OP_MIN ? gpu_dispatch_op_int<GPU_OP_MIN>(dt, v) : gpu_dispatch_op_int<GPU_OP_MAX>(dt, v);
    case GPU_OP_LAND:
        return dt == GPU_DT_BOOL ? v.template run<GPU_OP_LAND, uint8_t>() : gpu_dispatch_op_int<GPU_OP_LAND>(dt, v);
    case GPU_OP_LOR:
        return dt == GPU_DT_BOOL ? v.template run<GPU_OP_LOR, uint8_t>() : gpu_dispatch_op_int<GPU_OP_LOR>(dt, v);
    case GPU_OP_LXOR:
        return dt == GPU_DT_BOOL ? v.template run<GPU_OP_LXOR, uint8_t>() : gpu_dispatch_op_int<GPU_OP_LXOR>(dt, v);
    case GPU_OP_BAND: return gpu_dispatch_op_int<GPU_OP_BAND>(dt, v);
    case GPU_OP_BOR: return gpu_dispatch_op_int<GPU_OP_BOR>(dt, v);
    case GPU_OP_BXOR: return gpu_dispatch_op_int<GPU_OP_BXOR>(dt, v);
    case GPU_OP_MAXLOC:
    case GPU_OP_MINLOC: {
        const bool mx = (op == GPU_OP_MAXLOC);
        switch (dt) {
        case GPU_DT_FLOAT_INT: return mx ? v.template run<GPU_OP_MAXLOC, gpu_pair<float>>() : v.template run<GPU_OP_MINLOC, gpu_pair<float>>();
        case GPU_DT_DOUBLE_INT: return mx ? v.template run<GPU_OP_MAXLOC, gpu_pair<double>>() : v.template run<GPU_OP_MINLOC, gpu_pair<double>>();
        case GPU_DT_LONG_INT: return mx ? v.template run<GPU_OP_MAXLOC, gpu_pair<long>>() : v.template run<GPU_OP_MINLOC, gpu_pair<long>>();
        case GPU_DT_2INT: return mx ? v.template run<GPU_OP_MAXLOC, gpu_pair<int>>() : v.template run<GPU_OP_MINLOC, gpu_pair<int>>();
        case GPU_DT_SHORT_INT: return mx ? v.template run<GPU_OP_MAXLOC, gpu_pair<short>>() : v.template run<GPU_OP_MINLOC, gpu_pair<short>>();
        default: return false;
        }
    }
    default:
        return false;
    }
}

#endif /* GPU_REDUCE_OPS_H */
