/*
 * Datatypes with gaps on a CUDA stream: decoding and copies (design in
 * gpucoll_mpix_layout.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mpix/gpucoll_mpix_layout.h"

#define GC_LAYOUT_MAX_RUNS GC_LAYOUT_MAX_COPIES
#define GC_LAYOUT_MAX_DEPTH 32
/* blocks visited while decoding one element: a bound on the work of a
 * huge type whose blocks never fall into runs */
#define GC_LAYOUT_MAX_VISITS (1L << 24)

typedef struct {
    gc_run_t *run;
    int nrun, cap;
    MPI_Aint poff, plen;      /* the pending block: contiguous pieces merged */
    int pending, bad, padded;
    long visits;
} gc_build_t;

/* the pending block joins the last run (same length, the run's distance)
 * or starts a run */
static void gc_flush(gc_build_t *b)
{
    gc_run_t *r = b->nrun > 0 ? &b->run[b->nrun - 1] : NULL;
    const size_t len = (size_t) b->plen;

    if (!b->pending || b->bad) {
        return;
    }
    b->pending = 0;
    if (NULL != r && r->len == len &&
        (1 == r->k ? b->poff - r->off >= (MPI_Aint) len
                   : b->poff == r->off + (MPI_Aint) r->k * r->stride)) {
        if (1 == r->k) {
            r->stride = b->poff - r->off;
        }
        ++r->k;
        return;
    }
    if (b->nrun == b->cap) {
        gc_run_t *v;
        if (b->cap >= GC_LAYOUT_MAX_RUNS) {
            b->bad = 1;
            return;
        }
        b->cap = 0 == b->cap ? 16 : 2 * b->cap;
        v = realloc(b->run, sizeof(*v) * (size_t) b->cap);
        if (NULL == v) {
            b->bad = 1;
            return;
        }
        b->run = v;
    }
    b->run[b->nrun++] = (gc_run_t) { .off = b->poff, .stride = 0, .len = len, .k = 1 };
}

static void gc_block(gc_build_t *b, MPI_Aint off, MPI_Aint len)
{
    if (len <= 0 || b->bad) {
        return;
    }
    if (++b->visits > GC_LAYOUT_MAX_VISITS) {
        b->bad = 1;
        return;
    }
    if (b->pending && off == b->poff + b->plen) {
        b->plen += len;
        return;
    }
    gc_flush(b);
    b->poff = off;
    b->plen = len;
    b->pending = 1;
}

static void gc_decode(gc_build_t *b, MPI_Datatype t, MPI_Aint disp, int depth);

/* count instances of old, the i-th at disp + at(i) */
static void gc_each(gc_build_t *b, MPI_Datatype old, MPI_Aint disp, long count, MPI_Aint step,
                    int depth)
{
    for (long i = 0; i < count && !b->bad; ++i) {
        gc_decode(b, old, disp + (MPI_Aint) i * step, depth);
    }
}

static MPI_Aint gc_extent(MPI_Datatype t)
{
    MPI_Aint lb = 0, ext = 0;
    MPI_Type_get_extent(t, &lb, &ext);
    return ext;
}

static void gc_decode_contents(gc_build_t *b, int comb, const int *in, const MPI_Aint *ad,
                               const MPI_Datatype *ty, MPI_Aint disp, int depth)
{
    const MPI_Aint ext = gc_extent(ty[0]);
    switch (comb) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED:   /* the bytes stay where they were */
        gc_decode(b, ty[0], disp, depth);
        break;
    case MPI_COMBINER_CONTIGUOUS:
        gc_each(b, ty[0], disp, in[0], ext, depth);
        break;
    case MPI_COMBINER_VECTOR:
        for (long i = 0; i < in[0] && !b->bad; ++i) {
            gc_each(b, ty[0], disp + (MPI_Aint) i * in[2] * ext, in[1], ext, depth);
        }
        break;
    case MPI_COMBINER_HVECTOR:
        for (long i = 0; i < in[0] && !b->bad; ++i) {
            gc_each(b, ty[0], disp + (MPI_Aint) i * ad[0], in[1], ext, depth);
        }
        break;
    case MPI_COMBINER_INDEXED:
        for (long i = 0; i < in[0] && !b->bad; ++i) {
            gc_each(b, ty[0], disp + (MPI_Aint) in[1 + in[0] + i] * ext, in[1 + i], ext, depth);
        }
        break;
    case MPI_COMBINER_HINDEXED:
        for (long i = 0; i < in[0] && !b->bad; ++i) {
            gc_each(b, ty[0], disp + ad[i], in[1 + i], ext, depth);
        }
        break;
    case MPI_COMBINER_INDEXED_BLOCK:
        for (long i = 0; i < in[0] && !b->bad; ++i) {
            gc_each(b, ty[0], disp + (MPI_Aint) in[2 + i] * ext, in[1], ext, depth);
        }
        break;
    case MPI_COMBINER_HINDEXED_BLOCK:
        for (long i = 0; i < in[0] && !b->bad; ++i) {
            gc_each(b, ty[0], disp + ad[i], in[1], ext, depth);
        }
        break;
    case MPI_COMBINER_STRUCT:
        for (long i = 0; i < in[0] && !b->bad; ++i) {
            gc_each(b, ty[i], disp + ad[i], in[1 + i], gc_extent(ty[i]), depth);
        }
        break;
    default:   /* subarray, darray, Fortran's: not taken */
        b->bad = 1;
        break;
    }
}

static void gc_decode(gc_build_t *b, MPI_Datatype t, MPI_Aint disp, int depth)
{
    int ni = 0, na = 0, nt = 0, comb = -1, *in = NULL;
    MPI_Aint *ad = NULL;
    MPI_Datatype *ty = NULL;

    if (b->bad || depth > GC_LAYOUT_MAX_DEPTH ||
        MPI_SUCCESS != MPI_Type_get_envelope(t, &ni, &na, &nt, &comb)) {
        b->bad = 1;
        return;
    }
    if (MPI_COMBINER_NAMED == comb) {
        /* a predefined type moves whole, a pair type's inner padding too */
        MPI_Aint tlb = 0, text = 0;
        int size = 0;
        MPI_Type_get_true_extent(t, &tlb, &text);
        MPI_Type_size(t, &size);
        b->padded |= (MPI_Aint) size != gc_extent(t);
        gc_block(b, disp + tlb, text);
        return;
    }
    in = malloc(sizeof(*in) * (size_t) (ni > 0 ? ni : 1));
    ad = malloc(sizeof(*ad) * (size_t) (na > 0 ? na : 1));
    ty = malloc(sizeof(*ty) * (size_t) (nt > 0 ? nt : 1));
    if (NULL == in || NULL == ad || NULL == ty || nt < 1 ||
        MPI_SUCCESS != MPI_Type_get_contents(t, ni, na, nt, in, ad, ty)) {
        b->bad = 1;
        nt = 0;
    } else {
        gc_decode_contents(b, comb, in, ad, ty, disp, depth + 1);
    }
    /* the types MPI_Type_get_contents made are the caller's to free */
    for (int i = 0; i < nt; ++i) {
        int a, c, d, cb = MPI_COMBINER_NAMED;
        MPI_Type_get_envelope(ty[i], &a, &c, &d, &cb);
        if (MPI_COMBINER_NAMED != cb) {
            MPI_Type_free(&ty[i]);
        }
    }
    free(ty);
    free(ad);
    free(in);
}

int gc_layout_make(MPI_Datatype t, gc_layout_t *l)
{
    gc_build_t b;
    size_t poff = 0;

    memset(&b, 0, sizeof(b));
    memset(l, 0, sizeof(*l));
    gc_decode(&b, t, 0, 0);
    gc_flush(&b);
    if (b.bad || 0 == b.nrun) {
        free(b.run);
        return 0;
    }
    l->lo = b.run[0].off;
    l->hi = b.run[0].off;
    for (int i = 0; i < b.nrun; ++i) {
        const gc_run_t *r = &b.run[i];
        const MPI_Aint end = r->off + (MPI_Aint) (r->k - 1) * r->stride + (MPI_Aint) r->len;
        if ((MPI_Aint) r->len > gc_extent(t)) {
            free(b.run);   /* elements that overlap: no copy takes them */
            return 0;
        }
        l->lo = r->off < l->lo ? r->off : l->lo;
        l->hi = end > l->hi ? end : l->hi;
        b.run[i].poff = poff;
        poff += b.run[i].len * b.run[i].k;
    }
    l->size = poff;
    l->extent = gc_extent(t);
    l->nrun = b.nrun;
    l->run = b.run;
    l->padded_leaf = b.padded;
    return 1;
}

int gc_layout_dup(const gc_layout_t *from, gc_layout_t *to)
{
    *to = *from;
    to->run = malloc(sizeof(*to->run) * (size_t) from->nrun);
    if (NULL == to->run) {
        memset(to, 0, sizeof(*to));
        return 0;
    }
    memcpy(to->run, from->run, sizeof(*to->run) * (size_t) from->nrun);
    return 1;
}

void gc_layout_free(gc_layout_t *l)
{
    free(l->run);
    memset(l, 0, sizeof(*l));
}

int gc_layout_dense(MPI_Datatype t)
{
    MPI_Aint lb, ext, tlb, text;
    int size = 0;
    return MPI_SUCCESS == MPI_Type_get_extent(t, &lb, &ext) &&
           MPI_SUCCESS == MPI_Type_get_true_extent(t, &tlb, &text) &&
           MPI_SUCCESS == MPI_Type_size(t, &size) && lb == tlb && ext == text &&
           (MPI_Aint) size == ext;
}

/* over the elements (one 2-D copy per block of the run) or over the run's
 * blocks (one 2-D copy per element), whichever issues fewer */
static int gc_over_elements(const gc_run_t *r, size_t count)
{
    return count <= r->k;
}

size_t gc_layout_copies(const gc_layout_t *l, size_t count)
{
    size_t n = 0;
    for (int i = 0; i < l->nrun; ++i) {
        n += gc_over_elements(&l->run[i], count) ? count : l->run[i].k;
    }
    return n;
}

cudaError_t gc_layout_copy(const gc_layout_t *l, size_t count, char *strided, char *packed,
                           int to_packed, cudaStream_t st)
{
    for (int i = 0; i < l->nrun; ++i) {
        const gc_run_t *r = &l->run[i];
        const int elems = gc_over_elements(r, count);
        const size_t outer = elems ? count : r->k, rows = elems ? r->k : count;
        /* the pitches of one 2-D copy: between the rows it moves */
        const size_t spitch = elems ? (size_t) (1 == r->k ? r->len : (size_t) r->stride)
                                    : (size_t) l->extent;
        const size_t ppitch = elems ? r->len : l->size;
        for (size_t o = 0; o < outer; ++o) {
            char *s = strided + r->off + (elems ? (MPI_Aint) o * l->extent
                                                : (MPI_Aint) o * r->stride);
            char *p = packed + r->poff + (elems ? o * l->size : o * r->len);
            const cudaError_t e = to_packed
                ? cudaMemcpy2DAsync(p, ppitch, s, spitch, r->len, rows, cudaMemcpyDefault, st)
                : cudaMemcpy2DAsync(s, spitch, p, ppitch, r->len, rows, cudaMemcpyDefault, st);
            if (cudaSuccess != e) {
                return e;
            }
        }
    }
    return cudaSuccess;
}

void gc_layout_host(const gc_layout_t *l, size_t count, char *strided, char *packed,
                    int to_packed)
{
    for (size_t e = 0; e < count; ++e) {
        char *se = strided + (MPI_Aint) e * l->extent, *pe = packed + e * l->size;
        for (int i = 0; i < l->nrun; ++i) {
            const gc_run_t *r = &l->run[i];
            for (size_t j = 0; j < r->k; ++j) {
                char *s = se + r->off + (MPI_Aint) j * r->stride, *p = pe + r->poff + j * r->len;
                memcpy(to_packed ? p : s, to_packed ? s : p, r->len);
            }
        }
    }
}
