/*
 * Reduction functors, one per MPI predefined op, compiled both by nvcc for
 * the kernels and by the host C++ compiler for the unit tests, so the code
 * that the tests check against MPI_Reduce_local is the code the GPU runs.
 *
 * apply(acc, x) is "acc op x" where acc holds ranks 0..r-1 and x is rank r:
 * every rank folds inputs in rank order, which makes results bit-identical
 * everywhere.  Integer arithmetic goes through the unsigned type so that
 * overflow wraps instead of being undefined behaviour.
 *
 * Half precision (gpu_f16, gpu_bf16: the 16 bits, no arithmetic of their
 * own).  apply() widens both operands to fp32, operates and rounds once to
 * nearest even: fp32's 24 bits are at least twice binary16's 11 (and
 * bfloat16's 8) plus two, so that rounding twice equals rounding the exact
 * result once (sums and products of two operands are correctly rounded;
 * a bfloat16 product that falls into fp32's subnormal range excepted).
 * Kernels that fold more than two inputs at once use gpu_fold<R> instead:
 * the accumulator stays fp32 across all inputs and is rounded to 16 bits
 * once at the end, so an n-rank SUM has one rounding instead of n-1.
 * NCCL (src/device/reduce_kernel.h, read at 0180f9a) folds two operands
 * at a time with __hadd/__hadd2 and __hmul/__hmul2 (binary16 from sm_53,
 * bfloat16 from sm_80; older GPUs widen to fp32 and round back at every
 * step): one rounding per input folded in, as in its ring.  Only its NVLS
 * path (multimem.ld_reduce with .acc::f32, sm_90 and CUDA 12.2 on) sums in
 * fp32 and rounds once, as we do everywhere a kernel folds all inputs.
 * Our SUM and PROD are therefore at least as accurate as NCCL's and may
 * differ from them in the last bit; MIN and MAX never round.  The host conversions below are integer code, exact for
 * NaN (kept, quietened), infinities and subnormals; the device uses the
 * hardware's cvt instructions, which round the same way (NaN payloads may
 * differ: compare NaNs as NaNs).
 *
 * Long double (x87 80-bit extended in 16 bytes on x86-64): CUDA has no
 * long double, but MIN/MAX and MINLOC/MAXLOC only compare, which gpu_ld80
 * does on the raw bytes with integer arithmetic (C's rules: NaN and the
 * invalid x87 encodings compare false, -0 == +0).  MINLOC/MAXLOC follow
 * Open MPI's host functions (op_base_functions.c, LOC_FUNC): the incoming
 * value wins only when strictly better, equal values take the smaller
 * index, anything unordered (NaN) leaves the accumulator as it is.
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

/* IEEE 754 binary16 and bfloat16, as their bits */
struct gpu_f16 {
    uint16_t bits;
};
struct gpu_bf16 {
    uint16_t bits;
};

GPU_HD float gpu_bits_float(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
#endif
}

GPU_HD uint32_t gpu_float_bits(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    __builtin_memcpy(&u, &f, 4);
    return u;
#endif
}

GPU_HD float gpu_f16_float(gpu_f16 h)
{
#if defined(__CUDA_ARCH__)
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.bits));
    return f;
#else
    const uint32_t sign = (uint32_t) (h.bits & 0x8000) << 16;
    uint32_t exp = (h.bits >> 10) & 0x1f, man = h.bits & 0x3ff;
    if (31 == exp) { /* inf, NaN (payload kept) */
        return gpu_bits_float(sign | 0x7f800000u | (man << 13));
    }
    if (0 == exp) {
        if (0 == man) {
            return gpu_bits_float(sign);
        }
        /* subnormal: man * 2^-24, normalised for binary32 */
        exp = 113; /* 127 - 14 */
        while (0 == (man & 0x400)) {
            man <<= 1;
            --exp;
        }
        return gpu_bits_float(sign | (exp << 23) | ((man & 0x3ff) << 13));
    }
    return gpu_bits_float(sign | ((exp + 112) << 23) | (man << 13));
#endif
}

GPU_HD gpu_f16 gpu_float_f16(float f)
{
    gpu_f16 r;
#if defined(__CUDA_ARCH__)
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.bits) : "f"(f));
#else
    const uint32_t u = gpu_float_bits(f), sign = (u >> 16) & 0x8000;
    const uint32_t a = u & 0x7fffffff;
    if (a > 0x7f800000u) { /* NaN: quiet, top of the payload kept */
        r.bits = (uint16_t) (sign | 0x7e00 | ((a >> 13) & 0x3ff));
        return r;
    }
    if (a >= 0x477ff000u) { /* rounds to >= 65520: infinity */
        r.bits = (uint16_t) (sign | 0x7c00);
        return r;
    }
    if (a < 0x38800000u) { /* below 2^-14: subnormal or zero */
        const uint32_t e = a >> 23;
        if (e < 102) { /* below 2^-25: rounds to zero */
            r.bits = (uint16_t) sign;
            return r;
        }
        const uint32_t m = (a & 0x7fffff) | 0x800000;
        const uint32_t shift = 126 - e; /* result = m >> shift, 14..24 */
        uint32_t q = m >> shift;
        const uint32_t rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) {
            ++q;
        }
        r.bits = (uint16_t) (sign | q);
        return r;
    }
    /* normal: drop 13 bits, to nearest even; a carry may reach infinity's
     * exponent only above 65520, excluded above */
    uint32_t v = a - 0x38000000u; /* rebias 127 -> 15 */
    const uint32_t rem = v & 0x1fff;
    v >>= 13;
    if (rem > 0x1000 || (rem == 0x1000 && (v & 1))) {
        ++v;
    }
    r.bits = (uint16_t) (sign | v);
#endif
    return r;
}

GPU_HD float gpu_bf16_float(gpu_bf16 h)
{
    return gpu_bits_float((uint32_t) h.bits << 16);
}

GPU_HD gpu_bf16 gpu_float_bf16(float f)
{
    gpu_bf16 r;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.bits) : "f"(f));
#else
    const uint32_t u = gpu_float_bits(f);
    if ((u & 0x7fffffff) > 0x7f800000u) {
        r.bits = (uint16_t) ((u >> 16) | 0x40); /* NaN stays NaN, quiet */
    } else {
        r.bits = (uint16_t) ((u + 0x7fff + ((u >> 16) & 1)) >> 16);
    }
#endif
    return r;
}

GPU_HD float gpu_widen(gpu_f16 h) { return gpu_f16_float(h); }
GPU_HD float gpu_widen(gpu_bf16 h) { return gpu_bf16_float(h); }
template <class H> GPU_HD H gpu_narrow(float f);
template <> GPU_HD gpu_f16 gpu_narrow<gpu_f16>(float f) { return gpu_float_f16(f); }
template <> GPU_HD gpu_bf16 gpu_narrow<gpu_bf16>(float f) { return gpu_float_bf16(f); }

template <class T> struct gpu_is_half : std::false_type {};
template <> struct gpu_is_half<gpu_f16> : std::true_type {};
template <> struct gpu_is_half<gpu_bf16> : std::true_type {};

/* x87 extended precision as stored in a 16-byte long double: 64-bit
 * significand (explicit integer bit 63), then sign and 15-bit exponent,
 * then 6 bytes of padding */
struct alignas(16) gpu_ld80 {
    uint64_t m;
    uint16_t se;
    uint16_t pad[3];
};

/* NaN, and what the x87 rejects as an operand (unnormals, pseudo-NaN and
 * pseudo-infinity: exponent non-zero, integer bit clear) */
GPU_HD bool gpu_ld80_unordered(const gpu_ld80 &a)
{
    const unsigned e = a.se & 0x7fff;
    if (0x7fff == e) {
        return 0 != (a.m << 1) || 0 == (a.m >> 63);
    }
    return 0 != e && 0 == (a.m >> 63);
}

/* magnitude order: exponent, then significand; a pseudo-denormal
 * (exponent 0, integer bit set) weighs as exponent 1, as on the x87 */
GPU_HD int gpu_ld80_cmpmag(const gpu_ld80 &a, const gpu_ld80 &b)
{
    unsigned ea = a.se & 0x7fff, eb = b.se & 0x7fff;
    ea += (0 == ea && (a.m >> 63)) ? 1 : 0;
    eb += (0 == eb && (b.m >> 63)) ? 1 : 0;
    if (ea != eb) {
        return ea < eb ? -1 : 1;
    }
    return a.m == b.m ? 0 : (a.m < b.m ? -1 : 1);
}

GPU_HD bool gpu_ld80_zero(const gpu_ld80 &a)
{
    return 0 == (a.se & 0x7fff) && 0 == a.m;
}

GPU_HD bool operator<(const gpu_ld80 &a, const gpu_ld80 &b)
{
    if (gpu_ld80_unordered(a) || gpu_ld80_unordered(b) ||
        (gpu_ld80_zero(a) && gpu_ld80_zero(b))) {
        return false;
    }
    const bool na = 0 != (a.se & 0x8000), nb = 0 != (b.se & 0x8000);
    if (na != nb) {
        return na;
    }
    const int c = gpu_ld80_cmpmag(a, b);
    return na ? c > 0 : c < 0;
}

GPU_HD bool operator>(const gpu_ld80 &a, const gpu_ld80 &b) { return b < a; }

GPU_HD bool operator==(const gpu_ld80 &a, const gpu_ld80 &b)
{
    if (gpu_ld80_unordered(a) || gpu_ld80_unordered(b)) {
        return false;
    }
    if (gpu_ld80_zero(a) && gpu_ld80_zero(b)) {
        return true;
    }
    return (a.se & 0x8000) == (b.se & 0x8000) && 0 == gpu_ld80_cmpmag(a, b);
}

template <class T> struct gpu_is_complex : std::false_type {};
template <> struct gpu_is_complex<gpu_cfloat> : std::true_type {};
template <> struct gpu_is_complex<gpu_cdouble> : std::true_type {};

template <class T> GPU_HD T gpu_wrap_add(T a, T b)
{
    if constexpr (gpu_is_half<T>::value) {
        return gpu_narrow<T>(gpu_widen(a) + gpu_widen(b));
    } else if constexpr (std::is_integral<T>::value) {
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
    if constexpr (gpu_is_half<T>::value) {
        return gpu_narrow<T>(gpu_widen(a) * gpu_widen(b));
    } else if constexpr (std::is_integral<T>::value) {
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
/* a NaN on either side: the second operand, as Open MPI's host loops */
template <class T> struct gpu_red<GPU_OP_MIN, T> {
    static GPU_HD T apply(T a, T b)
    {
        if constexpr (gpu_is_half<T>::value) {
            return (gpu_widen(a) < gpu_widen(b)) ? a : b;
        } else {
            return (a < b) ? a : b;
        }
    }
};
template <class T> struct gpu_red<GPU_OP_MAX, T> {
    static GPU_HD T apply(T a, T b)
    {
        if constexpr (gpu_is_half<T>::value) {
            return (gpu_widen(a) > gpu_widen(b)) ? a : b;
        } else {
            return (a > b) ? a : b;
        }
    }
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
/* MPI-3.1 5.9.4: on ties the smaller index wins.  a is the accumulator:
 * b replaces it only when strictly better, and an unordered pair (NaN)
 * leaves it alone, as Open MPI's host functions do. */
template <class T> struct gpu_red<GPU_OP_MAXLOC, T> {
    static GPU_HD T apply(T a, T b)
    {
        if (b.v > a.v) return b;
        if (b.v == a.v && b.i < a.i) a.i = b.i;
        return a;
    }
};
template <class T> struct gpu_red<GPU_OP_MINLOC, T> {
    static GPU_HD T apply(T a, T b)
    {
        if (b.v < a.v) return b;
        if (b.v == a.v && b.i < a.i) a.i = b.i;
        return a;
    }
};

/*
 * Folding many inputs: acc = load(src 0), acc = apply(acc, load(src r))
 * for each further source, store(acc).  The identity for every type but
 * half precision, whose accumulator is fp32 (rounded once, in store).
 */
template <class R> struct gpu_fold;
template <gpu_op_t OP, class T> struct gpu_fold<gpu_red<OP, T>> {
    typedef T acc_t;
    static GPU_HD acc_t load(T x) { return x; }
    static GPU_HD acc_t apply(acc_t a, acc_t b) { return gpu_red<OP, T>::apply(a, b); }
    static GPU_HD T store(acc_t a) { return a; }
};
template <gpu_op_t OP> struct gpu_fold<gpu_red<OP, gpu_f16>> {
    typedef float acc_t;
    static GPU_HD acc_t load(gpu_f16 x) { return gpu_f16_float(x); }
    static GPU_HD acc_t apply(acc_t a, acc_t b) { return gpu_red<OP, float>::apply(a, b); }
    static GPU_HD gpu_f16 store(acc_t a) { return gpu_float_f16(a); }
};
template <gpu_op_t OP> struct gpu_fold<gpu_red<OP, gpu_bf16>> {
    typedef float acc_t;
    static GPU_HD acc_t load(gpu_bf16 x) { return gpu_bf16_float(x); }
    static GPU_HD acc_t apply(acc_t a, acc_t b) { return gpu_red<OP, float>::apply(a, b); }
    static GPU_HD gpu_bf16 store(acc_t a) { return gpu_float_bf16(a); }
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
        if (dt == GPU_DT_F16) return op == GPU_OP_SUM ? v.template run<GPU_OP_SUM, gpu_f16>() : v.template run<GPU_OP_PROD, gpu_f16>();
        if (dt == GPU_DT_BF16) return op == GPU_OP_SUM ? v.template run<GPU_OP_SUM, gpu_bf16>() : v.template run<GPU_OP_PROD, gpu_bf16>();
        return op == GPU_OP_SUM ? gpu_dispatch_op_int<GPU_OP_SUM>(dt, v) : gpu_dispatch_op_int<GPU_OP_PROD>(dt, v);
    case GPU_OP_MIN:
    case GPU_OP_MAX:
        if (dt == GPU_DT_F32) return op == GPU_OP_MIN ? v.template run<GPU_OP_MIN, float>() : v.template run<GPU_OP_MAX, float>();
        if (dt == GPU_DT_F64) return op == GPU_OP_MIN ? v.template run<GPU_OP_MIN, double>() : v.template run<GPU_OP_MAX, double>();
        if (dt == GPU_DT_F16) return op == GPU_OP_MIN ? v.template run<GPU_OP_MIN, gpu_f16>() : v.template run<GPU_OP_MAX, gpu_f16>();
        if (dt == GPU_DT_BF16) return op == GPU_OP_MIN ? v.template run<GPU_OP_MIN, gpu_bf16>() : v.template run<GPU_OP_MAX, gpu_bf16>();
        if (dt == GPU_DT_LDOUBLE) return op == GPU_OP_MIN ? v.template run<GPU_OP_MIN, gpu_ld80>() : v.template run<GPU_OP_MAX, gpu_ld80>();
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
        case GPU_DT_LDOUBLE_INT: return mx ? v.template run<GPU_OP_MAXLOC, gpu_pair<gpu_ld80>>() : v.template run<GPU_OP_MINLOC, gpu_pair<gpu_ld80>>();
        default: return false;
        }
    }
    default:
        return false;
    }
}

/* On the host: v.run<OP, T>() for every pair MPI defines, in order, up to
 * the first that fails (a preload of kernels: loading each one).  true when
 * all ran; else false with that pair in *op, *dt. */
template <class V> static bool gpu_dispatch_every(V &v, gpu_op_t *op, gpu_dtype_t *dt)
{
    for (int o = 0; o < GPU_OP_COUNT; ++o) {
        for (int d = 0; d < GPU_DT_COUNT; ++d) {
            if (gpu_op_dtype_valid((gpu_op_t) o, (gpu_dtype_t) d) &&
                !gpu_dispatch((gpu_op_t) o, (gpu_dtype_t) d, v)) {
                *op = (gpu_op_t) o;
                *dt = (gpu_dtype_t) d;
                return false;
            }
        }
    }
    return true;
}

#endif /* GPU_REDUCE_OPS_H */
