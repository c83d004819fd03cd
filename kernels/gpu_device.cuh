/*
 * Device-side building blocks shared by the collective kernels: system-
 * scope flag access (peers live in other processes and GPUs, so release/
 * acquire are .sys), the global timer that bounds every wait, and a
 * block-wide copy that picks the widest access the addresses allow.
 */
#ifndef GPU_DEVICE_CUH
#define GPU_DEVICE_CUH

#include <stddef.h>
#include <stdint.h>

#include "gpu_kernels.h"
#include "gpu_reduce_ops.h"

namespace gpu_dev {

constexpr int kUnroll = 4;

__device__ __forceinline__ unsigned long long ld_acquire_sys(const unsigned long long *p)
{
    unsigned long long v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_release_sys(unsigned long long *p, unsigned long long v)
{
    asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/* GPU scope: flags that only this GPU's blocks read (the resident
 * kernel's quit word) */
__device__ __forceinline__ unsigned long long ld_acquire_gpu(const unsigned long long *p)
{
    unsigned long long v;
    asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_release_gpu(unsigned long long *p, unsigned long long v)
{
    asm volatile("st.release.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/* For hand-backs that publish no data: the reads they follow have already
 * returned their values (a block barrier separates them), so no fence. */
__device__ __forceinline__ void st_relaxed_sys(unsigned long long *p, unsigned long long v)
{
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ unsigned long long globaltimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

template <int U> struct unit;
template <> struct unit<16> { typedef uint4 type; };
template <> struct unit<8> { typedef unsigned long long type; };
template <> struct unit<4> { typedef unsigned int type; };
template <> struct unit<2> { typedef unsigned short type; };
template <> struct unit<1> { typedef unsigned char type; };

/* Threads tid of nt (a part of the block, or all of it) copy bytes. */
template <int U>
__device__ __forceinline__ void copy_units(char *dst, const char *src, size_t bytes, unsigned tid,
                                           unsigned nt)
{
    typedef typename unit<U>::type V;
    const size_t n = bytes / U;
    V *d = reinterpret_cast<V *>(dst);
    const V *s = reinterpret_cast<const V *>(src);
    const size_t stride = (size_t) nt * kUnroll;
    size_t i = tid;
    for (; i + (kUnroll - 1) * nt < n; i += stride) {
        V r[kUnroll];
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            r[k] = s[i + k * nt];
        }
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            d[i + k * nt] = r[k];
        }
    }
    for (; i < n; i += nt) {
        d[i] = s[i];
    }
}

/* Copy at the widest access both pointers and the length allow, by
 * threads tid of nt. */
__device__ inline void part_copy(char *dst, const char *src, size_t bytes, unsigned tid,
                                 unsigned nt)
{
    const unsigned a = (unsigned) (((uintptr_t) dst | (uintptr_t) src | bytes) & 15);
    if (0 == a) {
        copy_units<16>(dst, src, bytes, tid, nt);
    } else if (0 == (a & 7)) {
        copy_units<8>(dst, src, bytes, tid, nt);
    } else if (0 == (a & 3)) {
        copy_units<4>(dst, src, bytes, tid, nt);
    } else if (0 == (a & 1)) {
        copy_units<2>(dst, src, bytes, tid, nt);
    } else {
        copy_units<1>(dst, src, bytes, tid, nt);
    }
}

/* Block-wide copy. */
__device__ inline void block_copy(char *dst, const char *src, size_t bytes)
{
    part_copy(dst, src, bytes, threadIdx.x, blockDim.x);
}

template <class T> union vec16 {
    uint4 v;
    T e[16 / sizeof(T)];
};

/*
 * out[0:bytes] = src(0) op src(1) op ... op src(n-1), folded in rank order
 * through gpu_fold<R> (half precision accumulates in fp32, rounded once);
 * the result also goes to every extra destination.  Sources and extras are
 * scratch (16-byte aligned); out may be any T-aligned address.  Elements
 * wider than 16 bytes (long double int) go element by element.
 */
template <class R, class T, class Src, class Extra>
__device__ void block_reduce(const Src &src, int n, size_t bytes, char *out, const Extra &extra,
                             int nextra)
{
    typedef gpu_fold<R> F;
    typedef typename F::acc_t A;
    size_t done = 0;
    if constexpr (sizeof(T) <= 16) {
        constexpr int E = 16 / sizeof(T);
        const size_t nvec = bytes / 16;
        const bool out_aligned = 0 == ((uintptr_t) out & 15);
        for (size_t i = threadIdx.x; i < nvec; i += blockDim.x) {
            vec16<T> res, x;
            A acc[E];
            x.v = reinterpret_cast<const uint4 *>(src(0))[i];
#pragma unroll
            for (int k = 0; k < E; ++k) {
                acc[k] = F::load(x.e[k]);
            }
            for (int r = 1; r < n; ++r) {
                x.v = reinterpret_cast<const uint4 *>(src(r))[i];
#pragma unroll
                for (int k = 0; k < E; ++k) {
                    acc[k] = F::apply(acc[k], F::load(x.e[k]));
                }
            }
#pragma unroll
            for (int k = 0; k < E; ++k) {
                res.e[k] = F::store(acc[k]);
            }
            if (out_aligned) {
                reinterpret_cast<uint4 *>(out)[i] = res.v;
            } else {
#pragma unroll
                for (int k = 0; k < E; ++k) {
                    reinterpret_cast<T *>(out)[i * E + k] = res.e[k];
                }
            }
            for (int k = 0; k < nextra; ++k) {
                reinterpret_cast<uint4 *>(extra(k))[i] = res.v;
            }
        }
        done = nvec * E;
    }
    /* tail (fewer than 16 bytes), or wide elements: element by element */
    const size_t nelem = bytes / sizeof(T);
    for (size_t j = done + threadIdx.x; j < nelem; j += blockDim.x) {
        A acc = F::load(reinterpret_cast<const T *>(src(0))[j]);
        for (int r = 1; r < n; ++r) {
            acc = F::apply(acc, F::load(reinterpret_cast<const T *>(src(r))[j]));
        }
        const T res = F::store(acc);
        reinterpret_cast<T *>(out)[j] = res;
        for (int k = 0; k < nextra; ++k) {
            reinterpret_cast<T *>(extra(k))[j] = res;
        }
    }
}

/* out = fold of n sources in order (through gpu_fold: half precision in
 * fp32, rounded once); any pointer may be merely T-aligned (the exchange kernel's slots,
 * the put kernel's user buffers). */
template <class R, class T, class Src>
__device__ void fold(const Src &src, int n, size_t bytes, char *out)
{
    typedef gpu_fold<R> F;
    typedef typename F::acc_t A;
    uintptr_t mis = (uintptr_t) out;
    for (int k = 0; k < n; ++k) {
        mis |= (uintptr_t) src(k);
    }
    size_t done = 0;
    if constexpr (sizeof(T) <= 16) {
        if (0 == (mis & 15)) {
            constexpr int E = 16 / sizeof(T);
            const size_t nvec = bytes / 16;
            for (size_t i = threadIdx.x; i < nvec; i += blockDim.x) {
                vec16<T> x;
                A acc[E];
                x.v = reinterpret_cast<const uint4 *>(src(0))[i];
#pragma unroll
                for (int e = 0; e < E; ++e) {
                    acc[e] = F::load(x.e[e]);
                }
                for (int k = 1; k < n; ++k) {
                    x.v = reinterpret_cast<const uint4 *>(src(k))[i];
#pragma unroll
                    for (int e = 0; e < E; ++e) {
                        acc[e] = F::apply(acc[e], F::load(x.e[e]));
                    }
                }
#pragma unroll
                for (int e = 0; e < E; ++e) {
                    x.e[e] = F::store(acc[e]);
                }
                reinterpret_cast<uint4 *>(out)[i] = x.v;
            }
            done = nvec * E;
        }
    }
    for (size_t i = done + threadIdx.x; i < bytes / sizeof(T); i += blockDim.x) {
        A acc = F::load(reinterpret_cast<const T *>(src(0))[i]);
        for (int k = 1; k < n; ++k) {
            acc = F::apply(acc, F::load(reinterpret_cast<const T *>(src(k))[i]));
        }
        reinterpret_cast<T *>(out)[i] = F::store(acc);
    }
}

/* Bytes of [off, off + len) that lie below total. */
__device__ __forceinline__ size_t clamp_len(size_t total, size_t off, size_t len)
{
    return off >= total ? 0 : (total - off < len ? total - off : len);
}

/* Record the first timeout of the launch in host-mapped memory. */
__device__ __forceinline__ void report_timeout(gpu_kernel_error_t *err, int peer, int stage,
                                               unsigned long long expected,
                                               unsigned long long seen)
{
    if (0 == atomicCAS_system(&err->raised, 0, 1)) {
        err->peer = peer;
        err->block = blockIdx.x;
        err->stage = stage;
        err->expected = expected;
        err->seen = seen;
        __threadfence_system();
    }
}

/* Has another thread of the launch given up?  Then every other wait ends
 * too: each wait keeps its own clock, and waits one after another would
 * otherwise add their timeouts up (a call must fail within one).  Read in
 * slow polls only: err is host memory. */
__device__ __forceinline__ bool gave_up(const gpu_kernel_error_t *err)
{
    return 0 != *(const volatile int *) &err->raised;
}

/* One thread waits until *f >= v or the timeout expires; false on expiry. */
__device__ __forceinline__ bool wait_geq(const unsigned long long *f, unsigned long long v,
                                         unsigned long long timeout_ns, gpu_kernel_error_t *err,
                                         int peer, int stage)
{
    unsigned long long seen = ld_acquire_sys(f);
    if (seen >= v) {
        return true;
    }
    const unsigned long long start = globaltimer();
    unsigned spins = 0;
    while ((seen = ld_acquire_sys(f)) < v) {
        if (globaltimer() - start > timeout_ns) {
            report_timeout(err, peer, stage, v, seen);
            return false;
        }
        if (0 == (++spins & 1023) && gave_up(err)) {
            return false;
        }
    }
    return true;
}

/*
 * Cross-rank barrier of block blockIdx.x with the same block on every rank:
 * thread p releases to(p) (our flag in rank p's memory) once the block's
 * stores are out, then waits, bounded, for from(p) (p's flag in ours) to
 * reach v.  False in every thread when some rank did not arrive.
 */
template <class To, class From>
__device__ bool block_meet(int nranks, const To &to, const From &from, unsigned long long v,
                           unsigned long long timeout_ns, gpu_kernel_error_t *err, int stage)
{
    __shared__ int failed;
    const int t = threadIdx.x;
    if (0 == t) {
        failed = 0;
    }
    __syncthreads();
    if (t < nranks) {
        __threadfence_system();
        st_release_sys(to(t), v);
        if (!wait_geq(from(t), v, timeout_ns, err, t, stage)) {
            failed = 1;
        }
    }
    __syncthreads();
    return 0 == failed;
}

/*
 * LL lines (the resident kernel, kernels/gpu_ll.h, and the stream-ordered
 * allreduce, kernels/gpu_stream.h): 8 payload bytes and two copies of the
 * call's flag in one 16-byte store; a reader takes a line only when both
 * flags match.  And up to 8 bytes of user memory at the widest access the
 * address allows.
 */
__device__ __forceinline__ void ll_put(char *dst, unsigned long long v, uint32_t flag)
{
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(dst),
                 "r"((uint32_t) v), "r"(flag), "r"((uint32_t) (v >> 32)), "r"(flag)
                 : "memory");
}

__device__ __forceinline__ bool ll_try(const char *src, uint32_t flag, unsigned long long *v)
{
    uint32_t a, f0, b, f1;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a), "=r"(f0), "=r"(b), "=r"(f1)
                 : "l"(src)
                 : "memory");
    if (f0 != flag || f1 != flag) {
        return false;
    }
    *v = (unsigned long long) a | ((unsigned long long) b << 32);
    return true;
}

/* Up to 8 bytes of user memory, at the widest access the address allows. */
__device__ __forceinline__ unsigned long long load8(const char *p, size_t valid)
{
    const uintptr_t a = (uintptr_t) p;
    if (valid >= 8 && 0 == (a & 7)) {
        return *reinterpret_cast<const unsigned long long *>(p);
    }
    if (valid >= 8 && 0 == (a & 3)) {
        const unsigned *q = reinterpret_cast<const unsigned *>(p);
        return (unsigned long long) q[0] | ((unsigned long long) q[1] << 32);
    }
    unsigned long long v = 0;
    for (size_t i = 0; i < valid && i < 8; ++i) {
        v |= (unsigned long long) (unsigned char) p[i] << (8 * i);
    }
    return v;
}

__device__ __forceinline__ void store8(char *p, unsigned long long v, size_t valid)
{
    const uintptr_t a = (uintptr_t) p;
    if (valid >= 8 && 0 == (a & 7)) {
        *reinterpret_cast<unsigned long long *>(p) = v;
        return;
    }
    if (valid >= 8 && 0 == (a & 3)) {
        unsigned *q = reinterpret_cast<unsigned *>(p);
        q[0] = (unsigned) v;
        q[1] = (unsigned) (v >> 32);
        return;
    }
    for (size_t i = 0; i < valid && i < 8; ++i) {
        p[i] = (char) (v >> (8 * i));
    }
}

/* One thread waits for LL line l to carry flag, bounded by the launch's
 * a.timeout_ns (a timeout is recorded in a.err against src and call seq);
 * false on expiry or once another thread of the launch gave up. */
template <class Args>
__device__ __forceinline__ bool ll_wait(const char *l, uint32_t flag, unsigned long long *v,
                                        const Args &a, int src, unsigned long long seq)
{
    if (ll_try(l, flag, v)) {
        return true;
    }
    const unsigned long long t0 = globaltimer();
    unsigned spins = 0;
    while (!ll_try(l, flag, v)) {
        if (0 == (++spins & 255) && globaltimer() - t0 > a.timeout_ns) {
            report_timeout(a.err, src, GPU_STAGE_LL, seq, 0);
            return false;
        }
        if (0 == (spins & 4095) && gave_up(a.err)) {
            return false;
        }
    }
    return true;
}

} // namespace gpu_dev

#endif /* GPU_DEVICE_CUH */
