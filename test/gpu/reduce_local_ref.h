/*
 * MPI_Reduce_local's reference, written from the standard (MPI-4.0 6.9.2
 * and 6.9.4) rather than from any implementation: every predefined type a
 * C program can name, the predefined ops MPI defines for it, an input
 * generator, inout = in op inout computed here, and a comparison that
 * looks at values, not padding (pair structs and long double have bytes
 * no operation defines).  Shared by the GPU test's device, host and
 * driver stand-in modes.
 */
#ifndef GPUCOLL_REDUCE_LOCAL_REF_H
#define GPUCOLL_REDUCE_LOCAL_REF_H

#include <complex.h>
#include <mpi.h>
#include <stdint.h>
#include <string.h>

#include "gpu_test_common.h"

/* what an element is: integers and logicals by width, floating point by
 * size (4, 8, 16 = long double), complex by size, pairs by value type */
enum { RK_SINT, RK_UINT, RK_FLOAT, RK_COMPLEX, RK_BOOL, RK_BYTE, RK_LOGICAL, RK_PAIR,
       RK_FINT /* signed, but not a C integer: Fortran's and the multi-language
                  MPI_AINT, MPI_OFFSET, MPI_COUNT, which have no logical ops */ };
enum { PV_FLOAT, PV_DOUBLE, PV_LONG, PV_INT, PV_SHORT, PV_LDOUBLE, PV_2REAL, PV_2DBL };

typedef struct {
    MPI_Datatype t;
    const char *name;
    int kind;
    int pv;          /* RK_PAIR: the value type */
    size_t size;     /* extent in bytes, filled in at run time */
    int fortran;     /* a Fortran type: only where Open MPI has Fortran */
} rtype_t;

#define RT(t, k) { t, #t, k, 0, 0, 0 }
#define RP(t, v) { t, #t, RK_PAIR, v, 0, 0 }
#define RTF(t, k) { t, #t, k, 0, 0, 1 }
#define RPF(t, v) { t, #t, RK_PAIR, v, 0, 1 }
static rtype_t rtypes[] = {
    RT(MPI_SIGNED_CHAR, RK_SINT), RT(MPI_UNSIGNED_CHAR, RK_UINT), RT(MPI_SHORT, RK_SINT),
    RT(MPI_UNSIGNED_SHORT, RK_UINT), RT(MPI_INT, RK_SINT), RT(MPI_UNSIGNED, RK_UINT),
    RT(MPI_LONG, RK_SINT), RT(MPI_UNSIGNED_LONG, RK_UINT), RT(MPI_LONG_LONG, RK_SINT),
    RT(MPI_UNSIGNED_LONG_LONG, RK_UINT), RT(MPI_INT8_T, RK_SINT), RT(MPI_UINT8_T, RK_UINT),
    RT(MPI_INT16_T, RK_SINT), RT(MPI_UINT16_T, RK_UINT), RT(MPI_INT32_T, RK_SINT),
    RT(MPI_UINT32_T, RK_UINT), RT(MPI_INT64_T, RK_SINT), RT(MPI_UINT64_T, RK_UINT),
    RT(MPI_AINT, RK_FINT), RT(MPI_OFFSET, RK_FINT), RT(MPI_COUNT, RK_FINT),
    RT(MPI_FLOAT, RK_FLOAT), RT(MPI_DOUBLE, RK_FLOAT), RT(MPI_LONG_DOUBLE, RK_FLOAT),
    RT(MPI_C_FLOAT_COMPLEX, RK_COMPLEX), RT(MPI_C_DOUBLE_COMPLEX, RK_COMPLEX),
    RT(MPI_C_LONG_DOUBLE_COMPLEX, RK_COMPLEX), RT(MPI_C_BOOL, RK_BOOL), RT(MPI_BYTE, RK_BYTE),
    RP(MPI_FLOAT_INT, PV_FLOAT), RP(MPI_DOUBLE_INT, PV_DOUBLE), RP(MPI_LONG_INT, PV_LONG),
    RP(MPI_2INT, PV_INT), RP(MPI_SHORT_INT, PV_SHORT), RP(MPI_LONG_DOUBLE_INT, PV_LDOUBLE),
    /* Fortran's, as C sees them (skipped where Open MPI was built without
     * Fortran: MPI_INTEGER's size is 0 there) */
    RTF(MPI_INTEGER, RK_FINT), RTF(MPI_REAL, RK_FLOAT), RTF(MPI_DOUBLE_PRECISION, RK_FLOAT),
    RTF(MPI_LOGICAL, RK_LOGICAL), RTF(MPI_COMPLEX, RK_COMPLEX),
    RTF(MPI_DOUBLE_COMPLEX, RK_COMPLEX), RPF(MPI_2INTEGER, PV_INT), RPF(MPI_2REAL, PV_2REAL),
    RPF(MPI_2DOUBLE_PRECISION, PV_2DBL),
};
#define NRTYPES ((int) (sizeof(rtypes) / sizeof(rtypes[0])))

/* fills in the extents; 0 for a type this library does not have */
static void rtypes_init(void)
{
    int fsize = 0;
    (void) MPI_Type_size(MPI_INTEGER, &fsize);
    for (int i = 0; i < NRTYPES; ++i) {
        MPI_Aint lb = 0, ext = 0;
        int size = 0;
        if ((rtypes[i].fortran && fsize <= 0) ||
            MPI_SUCCESS != MPI_Type_size(rtypes[i].t, &size) || size <= 0 ||
            MPI_SUCCESS != MPI_Type_get_extent(rtypes[i].t, &lb, &ext)) {
            ext = 0;
        }
        rtypes[i].size = (size_t) ext;
    }
}

/* MPI-4.0 6.9.2: the groups each op is defined for */
static int rop_valid(int op, const rtype_t *t)
{
    const int cint = RK_SINT == t->kind || RK_UINT == t->kind;
    const int integer = cint || RK_FINT == t->kind;
    switch (op) {
    case 0: case 1: /* sum prod */
        return integer || RK_FLOAT == t->kind || RK_COMPLEX == t->kind;
    case 2: case 3: /* min max */
        return integer || RK_FLOAT == t->kind;
    case 4: case 5: case 6: /* land lor lxor */
        return cint || RK_BOOL == t->kind || RK_LOGICAL == t->kind;
    case 7: case 8: case 9: /* band bor bxor */
        return integer || RK_BYTE == t->kind;
    default: /* maxloc minloc */
        return RK_PAIR == t->kind;
    }
}

/*
 * Element i of an input, reproducible: small exact floating values and
 * few distinct pair values (ties exercise the index rule), a quarter of
 * the integers zero (the logical ops see both truth values).  Integers
 * span their whole range, unless rgen_tame: then they stay below
 * 2^(bits/2 - 1), where no sum or product overflows and signedness cannot
 * matter.  Open MPI's own host functions need that: op/avx saturates 8-
 * and 16-bit sums (4.1 and 5.0), 4.1.4 compares MPI_UNSIGNED_LONG as
 * signed, and both reduce MPI_OFFSET as unsigned.
 */
static int rgen_tame = 0;

static void rgen(const rtype_t *t, void *buf, size_t count, uint64_t seed)
{
    unsigned char *p = buf;
    memset(buf, 0, count * t->size);
    for (size_t i = 0; i < count; ++i, p += t->size) {
        uint64_t s = seed * 0x100000001b3ull + i, r = rng_next(&s), r2 = rng_next(&s);
        const double f = (double) ((int) (r % 2001) - 1000) / 16.0;
        const double g = (double) ((int) (r2 % 2001) - 1000) / 16.0;
        switch (t->kind) {
        case RK_SINT: case RK_UINT: case RK_FINT:
            r = (0 == (r2 & 3)) ? 0 : r;
            if (rgen_tame) {
                r &= (1ull << (4 * t->size - 1)) - 1;
            }
            memcpy(p, &r, t->size);
            break;
        case RK_BYTE: *p = (unsigned char) r; break;
        case RK_BOOL: *p = (unsigned char) (r & 1); break;
        case RK_LOGICAL: { uint64_t v = r & 1; memcpy(p, &v, t->size); break; }
        case RK_FLOAT: case RK_COMPLEX: {
            const size_t part = RK_COMPLEX == t->kind ? t->size / 2 : t->size;
            for (int k = 0; k < (RK_COMPLEX == t->kind ? 2 : 1); ++k) {
                const double v = k ? g : f;
                if (4 == part) { float x = (float) v; memcpy(p + k * part, &x, 4); }
                else if (8 == part) { memcpy(p + k * part, &v, 8); }
                else { long double x = v; memcpy(p + k * part, &x, sizeof(x)); }
            }
            break;
        }
        default: {
            const int v = (int) (r % 5) - 2, idx = (int) (r2 % 1000);
#define RGEN_PAIR(V, I)                                                               \
    do {                                                                              \
        struct { V v; I i; } e = { (V) v, (I) idx };                                  \
        memcpy(p, &e, sizeof(e));                                                     \
    } while (0)
            switch (t->pv) {
            case PV_FLOAT: RGEN_PAIR(float, int); break;
            case PV_DOUBLE: RGEN_PAIR(double, int); break;
            case PV_LONG: RGEN_PAIR(long, int); break;
            case PV_INT: RGEN_PAIR(int, int); break;
            case PV_SHORT: RGEN_PAIR(short, int); break;
            case PV_LDOUBLE: RGEN_PAIR(long double, int); break;
            case PV_2REAL: RGEN_PAIR(float, float); break;
            default: RGEN_PAIR(double, double); break;
            }
#undef RGEN_PAIR
        }
        }
    }
}

#define RREF_INT(U)                                                                   \
    do {                                                                              \
        U a, b, r = 0;                                                                \
        memcpy(&a, x, sizeof(U));                                                     \
        memcpy(&b, y, sizeof(U));                                                     \
        const int sgn = RK_SINT == t->kind || RK_FINT == t->kind;                     \
        /* a < b, signed or not */                                                    \
        const int lt = sgn ? ((a ^ sb) < (b ^ sb)) : (a < b);                         \
        switch (op) {                                                                 \
        case 0: r = (U) (a + b); break;                                               \
        case 1: r = (U) ((uint64_t) a * (uint64_t) b); break;                         \
        case 2: r = lt ? a : b; break;                                                \
        case 3: r = lt ? b : a; break;                                                \
        case 4: r = (U) (a && b); break;                                              \
        case 5: r = (U) (a || b); break;                                              \
        case 6: r = (U) (!a != !b); break;                                            \
        case 7: r = a & b; break;                                                     \
        case 8: r = a | b; break;                                                     \
        default: r = a ^ b; break;                                                    \
        }                                                                             \
        memcpy(y, &r, sizeof(U));                                                     \
    } while (0)

#define RREF_FLOAT(T)                                                                 \
    do {                                                                              \
        T a, b;                                                                       \
        memcpy(&a, x, sizeof(T));                                                     \
        memcpy(&b, y, sizeof(T));                                                     \
        T r = 0 == op ? a + b : 1 == op ? a * b : 2 == op ? (a < b ? a : b) : (a > b ? a : b); \
        memcpy(y, &r, sizeof(T));                                                     \
    } while (0)

#define RREF_COMPLEX(T)                                                               \
    do {                                                                              \
        T a[2], b[2], r[2];                                                           \
        memcpy(a, x, sizeof(a));                                                      \
        memcpy(b, y, sizeof(b));                                                      \
        if (0 == op) { r[0] = a[0] + b[0]; r[1] = a[1] + b[1]; }                      \
        else { r[0] = a[0] * b[0] - a[1] * b[1]; r[1] = a[0] * b[1] + a[1] * b[0]; }  \
        memcpy(y, r, sizeof(r));                                                      \
    } while (0)

/* MPI-4.0 6.9.4: the larger (smaller) value, and on ties the smaller index */
#define RREF_PAIR(V, I)                                                               \
    do {                                                                              \
        struct { V v; I i; } a, b;                                                    \
        memcpy(&a, x, sizeof(a));                                                     \
        memcpy(&b, y, sizeof(b));                                                     \
        if (a.v == b.v) { b.i = a.i < b.i ? a.i : b.i; }                              \
        else if (10 == op ? a.v > b.v : a.v < b.v) { b = a; }                         \
        memcpy(y, &b, sizeof(b));                                                     \
    } while (0)

/* inout[i] = in[i] op inout[i]; op indexes ops[] of gpu_test_common.h */
static void rref(const rtype_t *t, int op, const void *in, void *inout, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        const unsigned char *x = (const unsigned char *) in + i * t->size;
        unsigned char *y = (unsigned char *) inout + i * t->size;
        switch (t->kind) {
        case RK_SINT: case RK_UINT: case RK_FINT: case RK_BOOL: case RK_BYTE: case RK_LOGICAL:
            if (1 == t->size) { const uint8_t sb = 0x80; RREF_INT(uint8_t); }
            else if (2 == t->size) { const uint16_t sb = 0x8000; RREF_INT(uint16_t); }
            else if (4 == t->size) { const uint32_t sb = 0x80000000u; RREF_INT(uint32_t); }
            else { const uint64_t sb = 1ull << 63; RREF_INT(uint64_t); }
            break;
        case RK_FLOAT:
            if (4 == t->size) RREF_FLOAT(float);
            else if (8 == t->size) RREF_FLOAT(double);
            else RREF_FLOAT(long double);
            break;
        case RK_COMPLEX:
            if (8 == t->size) RREF_COMPLEX(float);
            else if (16 == t->size) RREF_COMPLEX(double);
            else RREF_COMPLEX(long double);
            break;
        default:
            switch (t->pv) {
            case PV_FLOAT: RREF_PAIR(float, int); break;
            case PV_DOUBLE: RREF_PAIR(double, int); break;
            case PV_LONG: RREF_PAIR(long, int); break;
            case PV_INT: RREF_PAIR(int, int); break;
            case PV_SHORT: RREF_PAIR(short, int); break;
            case PV_LDOUBLE: RREF_PAIR(long double, int); break;
            case PV_2REAL: RREF_PAIR(float, float); break;
            default: RREF_PAIR(double, double); break;
            }
        }
    }
}

/* the first element whose value differs, or -1; long double is compared
 * by value (6 of its 16 bytes are padding), pairs field by field */
static long rcompare(const rtype_t *t, const void *got, const void *want, size_t count)
{
    for (size_t i = 0; i < count; ++i) {
        const unsigned char *g = (const unsigned char *) got + i * t->size;
        const unsigned char *w = (const unsigned char *) want + i * t->size;
        int same;
        if ((RK_FLOAT == t->kind || RK_COMPLEX == t->kind) &&
            sizeof(long double) == (RK_COMPLEX == t->kind ? t->size / 2 : t->size)) {
            long double a[2] = { 0, 0 }, b[2] = { 0, 0 };
            const int n = RK_COMPLEX == t->kind ? 2 : 1;
            memcpy(a, g, n * sizeof(long double));
            memcpy(b, w, n * sizeof(long double));
            same = a[0] == b[0] && a[1] == b[1];
        } else if (RK_PAIR == t->kind) {
            /* value bytes, then the index at its natural offset */
            static const size_t vsize[] = { 4, 8, 8, 4, 2, 10, 4, 8 };
            static const size_t ioff[] = { 4, 8, 8, 4, 4, 16, 4, 8 };
            const size_t is = t->pv >= PV_2REAL ? vsize[t->pv] : 4;
            same = 0 == memcmp(g, w, vsize[t->pv]) &&
                   0 == memcmp(g + ioff[t->pv], w + ioff[t->pv], is);
        } else {
            same = 0 == memcmp(g, w, t->size);
        }
        if (!same) {
            return (long) i;
        }
    }
    return -1;
}

#endif /* GPUCOLL_REDUCE_LOCAL_REF_H */
