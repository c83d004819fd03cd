/*
 * The plan the host transport (gpucoll_mpix_shm.h) runs an enqueued
 * collective by, made on the application's thread: the op and the types
 * resolved there, the transport's view of the bytes (dense, whole extents
 * of a padded pair type, or packed).
 *
 * A collective whose datatypes have gaps (a vector, a struct with holes,
 * an indexed type) runs at any thread level too.  Each side whose type has gaps is gathered on the
 * stream into pinned memory end to end and scattered back the same way
 * (gpucoll_mpix_layout.h), so the transport moves and folds dense bytes
 * and never a receive buffer's gap.  A predefined op folds the packed
 * elements as the predefined type they are made of; the application's own
 * op is handed its type's layout (the packed elements are spread into a
 * host scratch laid out as the type, folded there, and packed again).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpix/gpucoll_mpix_plan.h"

static int gc_named(MPI_Datatype t)
{
    int ni, na, nt, comb = -1;
    return MPI_SUCCESS == MPI_Type_get_envelope(t, &ni, &na, &nt, &comb) &&
           MPI_COMBINER_NAMED == comb;
}

int gc_gaps_needed(MPI_Datatype t)
{
    /* a pair type's inner padding rides along, as it always did */
    return !gc_named(t) && !gc_layout_dense(t);
}

/* the application's op on a type with gaps: its function sees the type */
static void gc_gaps_user_apply(const gpucoll_mpix_fold_t *f, const void *in, void *inout,
                               size_t count)
{
    const gc_ufold_t *u = (const gc_ufold_t *) f;
    const gc_layout_t *l = &u->lay;
    const size_t span = (size_t) (l->hi - l->lo) + (count > 0 ? count - 1 : 0) *
                        (size_t) l->extent;
    char *a = malloc(span ? span : 1), *b = malloc(span ? span : 1);

    if (NULL == a || NULL == b) {
        fprintf(stderr, "gpucoll: no host memory to fold %zu elements of a datatype with gaps "
                "with the application's op; the result is wrong\n", count);
    } else {
        gc_layout_host(l, count, a - l->lo, (char *) in, 0);
        gc_layout_host(l, count, b - l->lo, inout, 0);
        u->apply(f, a - l->lo, b - l->lo, count);
        gc_layout_host(l, count, b - l->lo, inout, 1);
    }
    free(b);
    free(a);
}

void gc_plan_free(gc_gaps_t *g, gc_ufold_t *fold)
{
    gc_gaps_free(g);
    gc_layout_free(&fold->lay);
}

void gc_gaps_free(gc_gaps_t *g)
{
    if (g->in_on) {
        gc_layout_free(&g->in);
    }
    if (g->out_on) {
        gc_layout_free(&g->out);
    }
    g->in_on = g->out_on = 0;
}

/* elements of t lie end to end without a gap at either end (padding
 * inside an element, as MPI_SHORT_INT's, rides along); dense: no padding */
static int gc_spanned(MPI_Datatype t, MPI_Aint *ext, int *dense)
{
    MPI_Aint lb, tlb, text;
    int size = 0;
    if (MPI_SUCCESS != MPI_Type_get_extent(t, &lb, ext) ||
        MPI_SUCCESS != MPI_Type_get_true_extent(t, &tlb, &text) ||
        MPI_SUCCESS != MPI_Type_size(t, &size)) {
        return 0;
    }
    *dense = (MPI_Aint) size == *ext;
    return lb == tlb && *ext == text && *ext > 0;
}

/* a predefined type whose elements end in padding (MPI_DOUBLE_INT: 12
 * bytes in a 16-byte extent, MPI_LONG_DOUBLE_INT: 20 in 32): a reduction
 * folds it by whole extents, so its staging copies get room for the last
 * element's padding (gc_enqueue), which is never copied back */
static int gc_tail_padded(MPI_Datatype t)
{
    MPI_Aint lb, ext, tlb, text;
    return gc_named(t) && MPI_SUCCESS == MPI_Type_get_extent(t, &lb, &ext) &&
           MPI_SUCCESS == MPI_Type_get_true_extent(t, &tlb, &text) && lb == tlb && text > 0 &&
           text < ext;
}

/* One side of a call as the transport sees it: packed by its layout where
 * t has gaps (*l made, *on set; packed bytes are dense), else whole
 * extents of a type with no gap at either end (a padded pair type's last
 * one too where tail_ok: the folds take whole extents).  *unit: its bytes
 * per element; 0 where the side cannot run on the transport. */
static int gc_side(MPI_Datatype t, int tail_ok, const gc_layout_t *same, gc_layout_t *l,
                   int *on, size_t *unit, int *dense)
{
    MPI_Aint ext = 0;
    if (gc_gaps_needed(t)) {
        /* a side of the type already decoded (one buffer, or both sides
         * alike) takes a copy of that layout */
        *on = NULL != same ? gc_layout_dup(same, l) : gc_layout_make(t, l);
        *unit = l->size;
        *dense = 1;
        return *on;
    }
    if (!(gc_spanned(t, &ext, dense) || (tail_ok && gc_tail_padded(t)))) {
        return 0;
    }
    *unit = (size_t) ext;
    return 1;
}

int gc_plan(const gc_args_t *a, const gpucoll_mpix_abi_t *abi, gcs_coll_t *sc, gc_ufold_t *fold,
            gc_gaps_t *g)
{
    const int one_buffer = MPI_IN_PLACE == a->sendbuf || GPUCOLL_MPIX_BCAST == a->coll;
    const MPI_Datatype in_type = one_buffer ? a->rtype : a->stype;
    const int reduces = GPUCOLL_MPIX_ALLREDUCE == a->coll || GPUCOLL_MPIX_REDUCE == a->coll ||
                        GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK == a->coll;
    size_t isize = 0, osize = 0;
    int idense = 0, odense = 0;

    memset(fold, 0, sizeof(*fold));
    memset(g, 0, sizeof(*g));
    memset(sc, 0, sizeof(*sc));
    sc->coll = a->coll;
    sc->root = a->root;
    if (!gc_side(a->rtype, reduces, NULL, &g->out, &g->out_on, &osize, &odense) ||
        !gc_side(in_type, reduces, in_type == a->rtype && g->out_on ? &g->out : NULL, &g->in,
                 &g->in_on, &isize, &idense)) {
        goto not_taken;
    }
    switch (a->coll) {
    case GPUCOLL_MPIX_ALLREDUCE:
    case GPUCOLL_MPIX_REDUCE:
    case GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK:
        if (NULL == abi || abi->version < 4 || isize != osize ||
            MPI_SUCCESS != abi->host_fold(a->rtype, a->op, &fold->f)) {
            goto not_taken;
        }
        sc->apply = abi->fold_apply;
        if (fold->f.user && g->out_on) {
            /* the layout of the type the application's function is given */
            if (!gc_layout_dup(&g->out, &fold->lay)) {
                goto not_taken;
            }
            fold->apply = abi->fold_apply;
            sc->apply = gc_gaps_user_apply;
        } else if (!fold->f.user &&
                   ((g->in_on && g->in.padded_leaf) || (g->out_on && g->out.padded_leaf))) {
            goto not_taken;   /* packed pair types do not sit where the folds read them */
        }
        sc->fold = &fold->f;
        sc->esize = osize;
        sc->bytes = (size_t) (GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK == a->coll ? a->rcount
                                                                            : a->scount) * osize;
        return 1;
    case GPUCOLL_MPIX_BCAST:
        sc->bytes = (size_t) a->scount * osize;
        return 1;
    default:
        /* blocks move as bytes: where neither side is packed, types that
         * differ must both be dense (a pair type's padding is not a peer's
         * data), and both sides' blocks must be as long */
        if (!one_buffer && !g->in_on && !g->out_on && !(idense && odense) &&
            a->stype != a->rtype) {
            goto not_taken;
        }
        sc->bytes = (size_t) a->rcount * osize;
        if (one_buffer || (size_t) a->scount * isize == sc->bytes) {
            return 1;
        }
        break;
    }
not_taken:
    gc_plan_free(g, fold);
    return 0;
}

cudaError_t gc_gaps_copy(const gc_layout_t *l, MPI_Count count, char *user, char *pinned,
                         int to_pinned, cudaStream_t st)
{
    if (count <= 0) {
        return cudaSuccess;
    }
    return gc_layout_copy(l, (size_t) count, user, pinned, to_pinned, st);
}
