/*
 * The predefined datatypes MPI defines reductions on (C bindings, MPI 4.1
 * section 6.9.2), the predefined ops, which op is defined on which type,
 * the values each rank contributes and the host reference of each op.
 *
 * Values are chosen so that every result is exact and the same in any
 * order of evaluation: an implementation may reduce in any order (MPI
 * allows it for the predefined ops), so the reference must not depend on
 * one.  Each type's list below is an X-macro, so that the table, the
 * value writers and the reference arithmetic cannot drift apart.
 */
#include <complex.h>
#include <dlfcn.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

typedef struct { float v; int i; } cf_float_int;
typedef struct { double v; int i; } cf_double_int;
typedef struct { long v; int i; } cf_long_int;
typedef struct { int v; int i; } cf_2int;
typedef struct { short v; int i; } cf_short_int;
typedef struct { long double v; int i; } cf_ldouble_int;

/* X(id, MPI datatype, C type, signed) */
#define INT_TYPES(X)                                                   \
    X(T_SCHAR, MPI_SIGNED_CHAR, signed char, 1)                        \
    X(T_UCHAR, MPI_UNSIGNED_CHAR, unsigned char, 0)                    \
    X(T_SHORT, MPI_SHORT, short, 1)                                    \
    X(T_USHORT, MPI_UNSIGNED_SHORT, unsigned short, 0)                 \
    X(T_INT, MPI_INT, int, 1)                                          \
    X(T_UNSIGNED, MPI_UNSIGNED, unsigned, 0)                           \
    X(T_LONG, MPI_LONG, long, 1)                                       \
    X(T_ULONG, MPI_UNSIGNED_LONG, unsigned long, 0)                    \
    X(T_LLONG, MPI_LONG_LONG, long long, 1)                            \
    X(T_ULLONG, MPI_UNSIGNED_LONG_LONG, unsigned long long, 0)         \
    X(T_INT8, MPI_INT8_T, int8_t, 1)                                   \
    X(T_UINT8, MPI_UINT8_T, uint8_t, 0)                                \
    X(T_INT16, MPI_INT16_T, int16_t, 1)                                \
    X(T_UINT16, MPI_UINT16_T, uint16_t, 0)                             \
    X(T_INT32, MPI_INT32_T, int32_t, 1)                                \
    X(T_UINT32, MPI_UINT32_T, uint32_t, 0)                             \
    X(T_INT64, MPI_INT64_T, int64_t, 1)                                \
    X(T_UINT64, MPI_UINT64_T, uint64_t, 0)
/* X(id, MPI datatype, C type, scale: sums stay exact below 2^mantissa) */
#define FLOAT_TYPES(X)                                                 \
    X(T_FLOAT, MPI_FLOAT, float, 0x1p10L)                              \
    X(T_DOUBLE, MPI_DOUBLE, double, 0x1p40L)                           \
    X(T_LDOUBLE, MPI_LONG_DOUBLE, long double, LDBL_SCALE)
#define COMPLEX_TYPES(X)                                               \
    X(T_CFLOAT, MPI_C_FLOAT_COMPLEX, float _Complex, 0x1p10L)          \
    X(T_CDOUBLE, MPI_C_DOUBLE_COMPLEX, double _Complex, 0x1p40L)       \
    X(T_CLDOUBLE, MPI_C_LONG_DOUBLE_COMPLEX, long double _Complex, LDBL_SCALE)
#define PAIR_TYPES(X)                                                  \
    X(T_FLOAT_INT, MPI_FLOAT_INT, cf_float_int, 0x1p10L)               \
    X(T_DOUBLE_INT, MPI_DOUBLE_INT, cf_double_int, 0x1p40L)            \
    X(T_LONG_INT, MPI_LONG_INT, cf_long_int, 0x1p40L)                  \
    X(T_2INT, MPI_2INT, cf_2int, 0x1p20L)                              \
    X(T_SHORT_INT, MPI_SHORT_INT, cf_short_int, 0x1p8L)                \
    X(T_LDOUBLE_INT, MPI_LONG_DOUBLE_INT, cf_ldouble_int, LDBL_SCALE)

/* x87's 80-bit long double keeps 64 mantissa bits in 10 of its 16 bytes */
#if LDBL_MANT_DIG >= 64
#define LDBL_SCALE 0x1p50L
#else
#define LDBL_SCALE 0x1p40L
#endif
#if LDBL_MANT_DIG == 64
#define LDBL_DATA 10
#else
#define LDBL_DATA sizeof(long double)
#endif

#define ID(id, ...) id,
enum { INT_TYPES(ID) FLOAT_TYPES(ID) COMPLEX_TYPES(ID) T_BOOL, T_BYTE, PAIR_TYPES(ID) T_F16, T_BF16,
       T_COUNT };
#undef ID

/* the names are stringified here, before MPI's macros expand */
#define ROW(id, mt, name, T, cls) { mt, name, sizeof(T), sizeof(T), cls },
#define INT_ROW(id, mt, T, s) ROW(id, mt, #mt, T, CF_INT)
#define FLOAT_ROW(id, mt, T, sc) ROW(id, mt, #mt, T, CF_FLOAT)
#define COMPLEX_ROW(id, mt, T, sc) ROW(id, mt, #mt, T, CF_COMPLEX)
#define PAIR_ROW(id, mt, T, sc) { mt, #mt, sizeof(((T *) 0)->v) + sizeof(int), sizeof(T), CF_PAIR },
cf_type_t cf_types[] = {
    INT_TYPES(INT_ROW) FLOAT_TYPES(FLOAT_ROW) COMPLEX_TYPES(COMPLEX_ROW)
    ROW(T_BOOL, MPI_C_BOOL, "MPI_C_BOOL", bool, CF_LOGICAL)
    ROW(T_BYTE, MPI_BYTE, "MPI_BYTE", unsigned char, CF_BYTE)
    PAIR_TYPES(PAIR_ROW)
    /* handles made at run time: cf_types_init */
    { MPI_DATATYPE_NULL, "MPIX_C_FLOAT16", 2, 2, CF_FLOAT },
    { MPI_DATATYPE_NULL, "MPIX_BFLOAT16", 2, 2, CF_FLOAT },
};
int cf_ntypes = T_F16;
MPI_Datatype cf_half_types[2] = { MPI_DATATYPE_NULL, MPI_DATATYPE_NULL };

/* The handles libgpucoll's MPIX_C_FLOAT16 / MPIX_BFLOAT16 are (through
 * the same entry of coll/gpu, mpix/gpucoll_mpix_types.h), so that the
 * test needs no CUDA library; missing where coll/gpu is not loaded. */
void cf_types_init(void)
{
    typedef int (*half_fn_t)(int, MPI_Datatype *);
    half_fn_t fn = (half_fn_t) dlsym(RTLD_DEFAULT, "mca_coll_gpu_half_type_v1");
    const char *want = getenv("CF_HALF");
    /* CF_HALF=0 leaves them out, to tell a finding of theirs from one of
     * the rest (their cases shift what every later case allocates where) */
    if ((NULL != want && 0 == strcmp(want, "0")) || NULL == fn ||
        MPI_SUCCESS != fn(0, &cf_half_types[0]) || MPI_SUCCESS != fn(1, &cf_half_types[1])) {
        cf_half_types[0] = cf_half_types[1] = MPI_DATATYPE_NULL;
        return;
    }
    cf_types[T_F16].type = cf_half_types[0];
    cf_types[T_BF16].type = cf_half_types[1];
    cf_ntypes = T_COUNT;
}

/* binary16 / bfloat16 <-> float for the exact values of the test (small
 * integers and halves: no rounding ever happens) */
static float half_get(int id, const void *p)
{
    uint16_t h;
    memcpy(&h, p, 2);
    if (T_BF16 == id) {
        uint32_t u = (uint32_t) h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    {
        const int e = (h >> 10) & 31, m = h & 1023;
        const float v = 0 == e ? ldexpf((float) m, -24) : ldexpf((float) (1024 + m), e - 25);
        return (h & 0x8000) ? -v : v;
    }
}

static void half_put(int id, float f, void *p)
{
    uint16_t h;
    if (T_BF16 == id) {
        uint32_t u;
        memcpy(&u, &f, 4);
        h = (uint16_t) (u >> 16);
    } else {
        const float a = fabsf(f);
        int e = 0;
        h = signbit(f) ? 0x8000 : 0;
        if (a != 0) {
            const float fr = frexpf(a, &e); /* a = fr * 2^e, fr in [0.5, 1) */
            h |= (uint16_t) ((e + 14) << 10 | ((int) ldexpf(fr, 11) - 1024));
        }
    }
    memcpy(p, &h, 2);
}

enum { O_MAX, O_MIN, O_SUM, O_PROD, O_LAND, O_BAND, O_LOR, O_BOR, O_LXOR, O_BXOR, O_MAXLOC, O_MINLOC,
       O_NONE };
const cf_op_t cf_ops[] = {
    { MPI_MAX, "MPI_MAX" },   { MPI_MIN, "MPI_MIN" },   { MPI_SUM, "MPI_SUM" },
    { MPI_PROD, "MPI_PROD" }, { MPI_LAND, "MPI_LAND" }, { MPI_BAND, "MPI_BAND" },
    { MPI_LOR, "MPI_LOR" },   { MPI_BOR, "MPI_BOR" },   { MPI_LXOR, "MPI_LXOR" },
    { MPI_BXOR, "MPI_BXOR" }, { MPI_MAXLOC, "MPI_MAXLOC" }, { MPI_MINLOC, "MPI_MINLOC" },
};
const int cf_nops = O_NONE;

static int op_index(MPI_Op op)
{
    int k;
    for (k = 0; k < cf_nops; ++k) {
        if (cf_ops[k].op == op) {
            return k;
        }
    }
    return O_NONE;
}

const cf_type_t *cf_type_find(MPI_Datatype dt)
{
    int k;
    for (k = 0; k < cf_ntypes; ++k) {
        if (cf_types[k].type == dt) {
            return &cf_types[k];
        }
    }
    return NULL;
}

/* the entry's index; a copy of an entry is found by its handle */
static int type_id(const cf_type_t *t)
{
    if (t >= cf_types && t < cf_types + cf_ntypes) {
        return (int) (t - cf_types);
    }
    t = cf_type_find(t->type);
    return t ? (int) (t - cf_types) : -1;
}

int cf_op_valid(const cf_type_t *t, MPI_Op op)
{
    switch (op_index(op)) {
    case O_MAX: case O_MIN:
        return t->cls == CF_INT || t->cls == CF_FLOAT;
    case O_SUM: case O_PROD:
        return t->cls == CF_INT || t->cls == CF_FLOAT || t->cls == CF_COMPLEX;
    case O_LAND: case O_LOR: case O_LXOR:
        return t->cls == CF_INT || t->cls == CF_LOGICAL;
    case O_BAND: case O_BOR: case O_BXOR:
        return t->cls == CF_INT || t->cls == CF_BYTE;
    case O_MAXLOC: case O_MINLOC:
        return t->cls == CF_PAIR;
    default:
        return 0;
    }
}

/* ---- values ---- */

static uint64_t mix(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) * 0xC2B2AE3D27D4EB4Full ^
                 (c + 17) * 0x165667B19E3779F9ull;
    x ^= x >> 31;
    x *= 0xBF58476D1CE4E5B9ull;
    return x ^ (x >> 29);
}

/* small contributions: only ranks r % 3 == (i + s) % 3 below 9 (three at
 * most) differ from 1, so a product has at most three factors of at most
 * 5 (or 2 + 2i): 125 fits an 8-bit type, and every result is exact */
static int varies(int r, size_t i, int s)
{
    return r < 9 && (size_t) r % 3 == (i + (size_t) s) % 3;
}

static long long small_signed(int r, size_t i, int s)
{
    return varies(r, i, s) ? (long long) (((size_t) r * 7 + i * 13 + (size_t) s * 5) % 9) - 4 : 1;
}

static long long small_unsigned(int r, size_t i, int s)
{
    return varies(r, i, s) ? (long long) (((size_t) r * 7 + i * 13 + (size_t) s * 5) % 6) : 1;
}

/* integer values for op: the type's width where op allows it */
static uint64_t int_value(int op, int bits, int sgn, int r, size_t i, int s)
{
    uint64_t one = 1, x;
    int a = (int) (((size_t) r * 5 + i) % (size_t) bits), b = (int) (((size_t) r + i * 3 + (size_t) s) % (size_t) bits);
    long long base = sgn ? small_signed(r, i, s) : small_unsigned(r, i, s);
    switch (op) {
    case O_SUM: case O_MAX: case O_MIN:
        /* up to 16 ranks of (|base| * 2^(bits-8) + 3) stay below 2^(bits-2) */
        return (uint64_t) (base * (long long) (one << (bits - 8)) + (r & 3));
    case O_BAND:
        return ~((one << a) | (one << b));
    case O_BOR:
        return (one << a) | (one << b);
    case O_BXOR:
        return mix((uint64_t) r, i, (uint64_t) s);
    case O_LAND: case O_LOR: case O_LXOR:
        /* true is a high bit: a reduction that narrows the type loses it */
        x = ((size_t) r * 5 + i * 3 + (size_t) s) % 4 != 0;
        return x << (bits - 1 - (int) (i % 3));
    default:
        return (uint64_t) base;
    }
}

static void real_value(int op, long double scale, int r, size_t i, int s, long double *re, long double *im)
{
    if (op == O_SUM || op == O_MAX || op == O_MIN) {
        *re = (long double) small_signed(r, i, s) * scale + (r & 3);
        *im = (long double) small_signed(r, i + 1, s + 1) * scale - (r & 1);
    } else if (varies(r, i, s)) {
        *re = (long double) ((((size_t) r * 7 + i * 13 + (size_t) s * 5) % 5)) - 2;
        *im = (long double) ((((size_t) r * 3 + i * 11 + (size_t) s) % 5)) - 2;
    } else {
        *re = 1;
        *im = 0;
    }
}

void cf_value_op(const cf_type_t *t, MPI_Op op, int r, size_t i, int s, void *dst)
{
    int id = type_id(t), o = op == MPI_OP_NULL ? O_NONE : op_index(op);
    long double re, im;
    /* pair types: ties between ranks 2k and 2k+1, where on even i the
     * higher rank has the smaller index, so MINLOC/MAXLOC's rule shows */
    long double pv = (long double) ((i + (size_t) s + (size_t) r / 2) % 4);
    int pi = (i % 2) ? r * 3 + (int) (i % 5) : 1000 - 3 * r;
    switch (id) {
    /* sums of up to 16 ranks stay below 2^11 (binary16) and 2^8
     * (bfloat16): exact in any order, so any algorithm and accumulation
     * width must give these bits */
    case T_F16: case T_BF16:
        real_value(o, T_F16 == id ? 0x1p4L : 0x1p1L, r, i, s, &re, &im);
        half_put(id, (float) re, dst);
        break;
#define INT_STORE(id, mt, T, sg)                                                         \
    case id:                                                                             \
        *(T *) dst = (T) int_value(o, (int) sizeof(T) * 8, sg, r, i, s);                 \
        break;
        INT_TYPES(INT_STORE)
#define FLOAT_STORE(id, mt, T, sc)                                                       \
    case id:                                                                             \
        real_value(o, sc, r, i, s, &re, &im);                                            \
        *(T *) dst = (T) re;                                                             \
        break;
        FLOAT_TYPES(FLOAT_STORE)
#define COMPLEX_STORE(id, mt, T, sc)                                                     \
    case id:                                                                             \
        real_value(o, sc, r, i, s, &re, &im);                                            \
        *(T *) dst = (T) re + (T) im * I;                                                \
        break;
        COMPLEX_TYPES(COMPLEX_STORE)
    case T_BOOL:
        *(bool *) dst = ((size_t) r * 5 + i * 3 + (size_t) s) % 4 != 0;
        break;
    case T_BYTE:
        *(unsigned char *) dst = (unsigned char) mix((uint64_t) r, i, (uint64_t) s);
        break;
#define PAIR_STORE(id, mt, T, sc)                                                        \
    case id: {                                                                           \
        T p;                                                                             \
        memset(&p, 0, sizeof(p));                                                        \
        p.v = (__typeof__(p.v)) (pv * sc);                                               \
        p.i = pi;                                                                        \
        memcpy(dst, &p, sizeof(p.v));                                                    \
        memcpy((char *) dst + ((char *) &p.i - (char *) &p), &p.i, sizeof(int));         \
        break;                                                                           \
    }
        PAIR_TYPES(PAIR_STORE)
    default:
        break;
    }
}

void cf_value(const cf_type_t *t, int r, size_t i, int s, void *dst)
{
    cf_value_op(t, MPI_OP_NULL, r, i, s, dst);
}

/* ---- the reference ---- */

#define MAXMIN(o, a, b) ((o) == O_MAX ? ((b) > (a) ? (b) : (a)) : ((b) < (a) ? (b) : (a)))

void cf_reduce1(const cf_type_t *t, MPI_Op op, void *acc, const void *in)
{
    int o = op_index(op);
    switch (type_id(t)) {
    case T_F16: case T_BF16: {
        const int id = type_id(t);
        float a = half_get(id, acc), b = half_get(id, in);
        if (o == O_MAX || o == O_MIN) a = MAXMIN(o, a, b);
        else if (o == O_SUM) a = a + b;
        else if (o == O_PROD) a = a * b;
        half_put(id, a, acc);
        break;
    }
#define INT_RED(id, mt, T, sg)                                                           \
    case id: {                                                                           \
        T a, b;                                                                          \
        memcpy(&a, acc, sizeof(T));                                                      \
        memcpy(&b, in, sizeof(T));                                                       \
        switch (o) {                                                                     \
        case O_MAX: case O_MIN: a = MAXMIN(o, a, b); break;                              \
        case O_SUM: a = (T) (a + b); break;                                              \
        case O_PROD: a = (T) (a * b); break;                                             \
        case O_LAND: a = a && b; break;                                                  \
        case O_LOR: a = a || b; break;                                                   \
        case O_LXOR: a = !a != !b; break;                                                \
        case O_BAND: a = a & b; break;                                                   \
        case O_BOR: a = a | b; break;                                                    \
        case O_BXOR: a = a ^ b; break;                                                   \
        default: break;                                                                  \
        }                                                                                \
        memcpy(acc, &a, sizeof(T));                                                      \
        break;                                                                           \
    }
        INT_TYPES(INT_RED)
#define FLOAT_RED(id, mt, T, sc)                                                         \
    case id: {                                                                           \
        T a, b;                                                                          \
        memcpy(&a, acc, sizeof(T));                                                      \
        memcpy(&b, in, sizeof(T));                                                       \
        if (o == O_MAX || o == O_MIN) a = MAXMIN(o, a, b);                               \
        else if (o == O_SUM) a = a + b;                                                  \
        else if (o == O_PROD) a = a * b;                                                 \
        memcpy(acc, &a, sizeof(T));                                                      \
        break;                                                                           \
    }
        FLOAT_TYPES(FLOAT_RED)
#define COMPLEX_RED(id, mt, T, sc)                                                       \
    case id: {                                                                           \
        T a, b;                                                                          \
        memcpy(&a, acc, sizeof(T));                                                      \
        memcpy(&b, in, sizeof(T));                                                       \
        if (o == O_SUM) a = a + b;                                                       \
        else if (o == O_PROD) a = a * b;                                                 \
        memcpy(acc, &a, sizeof(T));                                                      \
        break;                                                                           \
    }
        COMPLEX_TYPES(COMPLEX_RED)
    case T_BOOL: {
        bool a = *(const unsigned char *) acc != 0, b = *(const unsigned char *) in != 0;
        a = o == O_LAND ? a && b : o == O_LOR ? a || b : o == O_LXOR ? a != b : a;
        *(unsigned char *) acc = a;
        break;
    }
    case T_BYTE: {
        unsigned char *a = acc, b = *(const unsigned char *) in;
        *a = o == O_BAND ? *a & b : o == O_BOR ? *a | b : o == O_BXOR ? *a ^ b : *a;
        break;
    }
    /* MPI: the extreme value; on a tie the smaller index */
#define PAIR_RED(id, mt, T, sc)                                                          \
    case id: {                                                                           \
        T *a = acc;                                                                      \
        const T *b = in;                                                                 \
        if (o == O_MAXLOC ? b->v > a->v : b->v < a->v) *a = *b;                          \
        else if (b->v == a->v && b->i < a->i) a->i = b->i;                               \
        break;                                                                           \
    }
        PAIR_TYPES(PAIR_RED)
    default:
        break;
    }
}

/* ---- comparing data bytes only ---- */

/* the byte ranges of one element that carry data: at most two */
static int data_segments(int id, size_t seg[2][2])
{
    switch (id) {
    case T_LDOUBLE:
        seg[0][0] = 0, seg[0][1] = LDBL_DATA;
        return 1;
    case T_CLDOUBLE:
        seg[0][0] = 0, seg[0][1] = LDBL_DATA;
        seg[1][0] = sizeof(long double), seg[1][1] = LDBL_DATA;
        return 2;
#define PAIR_SEG(id, mt, T, sc)                                                          \
    case id:                                                                             \
        seg[0][0] = 0;                                                                   \
        seg[0][1] = id == T_LDOUBLE_INT ? LDBL_DATA : sizeof(((T *) 0)->v);              \
        seg[1][0] = offsetof(T, i), seg[1][1] = sizeof(int);                             \
        return 2;
        PAIR_TYPES(PAIR_SEG)
    default:
        seg[0][0] = 0, seg[0][1] = cf_types[id].size;
        return 1;
    }
}

/* A zero of either sign: every byte zero but the sign bit, the top bit of
 * the last byte (little endian; long double's data ends with it too). */
static int signed_zero(const unsigned char *x, size_t n)
{
    for (size_t b = 0; b < n; ++b) {
        if (0 != (x[b] & (b + 1 == n ? 0x7f : 0xff))) {
            return 0;
        }
    }
    return 1;
}

/* Floating-point results equal as values: +0 and -0 compare equal (a sum
 * or product folded in another order may end with either; MPI fixes no
 * order), everything else must match byte for byte. */
static int same_value(const unsigned char *g, const unsigned char *w, size_t n,
                      const cf_type_t *t)
{
    const size_t comp = CF_COMPLEX == t->cls && n == t->size ? n / 2 : n;
    if (CF_FLOAT != t->cls && CF_COMPLEX != t->cls) {
        return 0;
    }
    for (size_t c = 0; c < n; c += comp) {
        if (0 != memcmp(g + c, w + c, comp) &&
            !(signed_zero(g + c, comp) && signed_zero(w + c, comp))) {
            return 0;
        }
    }
    return 1;
}

int cf_same_typed(const void *got, const void *want, size_t count, const cf_type_t *t,
                  const char *what)
{
    const unsigned char *g = got, *w = want;
    size_t seg[2][2], i, bad = 0, first = 0, b;
    int id = type_id(t), ns, k;
    char hg[80], hw[80];
    if (id < 0) {
        return cf_same(got, want, count * t->extent, what);
    }
    ns = data_segments(id, seg);
    for (i = 0; i < count; ++i) {
        for (k = 0; k < ns; ++k) {
            size_t off = i * t->extent + seg[k][0];
            if (memcmp(g + off, w + off, seg[k][1]) != 0 &&
                !same_value(g + off, w + off, seg[k][1], t)) {
                if (bad++ == 0) {
                    first = i;
                }
                break;
            }
        }
    }
    if (bad) {
        /* the first differing element's bytes, as they lie in memory */
        hg[0] = hw[0] = '\0';
        for (b = 0; b < t->extent && b < 24; ++b) {
            snprintf(hg + 3 * b, sizeof(hg) - 3 * b, "%02x ", g[first * t->extent + b]);
            snprintf(hw + 3 * b, sizeof(hw) - 3 * b, "%02x ", w[first * t->extent + b]);
        }
        cf_fail("%s: %zu of %zu %s elements differ, first [%zu]: got %swant %s", what, bad, count,
                t->name, first, hg, hw);
    }
    return bad == 0;
}
