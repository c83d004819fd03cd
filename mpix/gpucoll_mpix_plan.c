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

static size_t gc_packed(MPI_Datatype t, const gc_layout_t *l, int on)
{
    MPI_Aint lb = 0, ext = 0;
    if (on) {
        return l->size;
    }
    MPI_Type_get_extent(t, &lb, &ext);
    return (size_t) ext;
}

static int gc_gaps_plan(const gc_args_t *a, const gpucoll_mpix_abi_t *abi, gc_gaps_t *g,
                 gcs_coll_t *sc, gc_ufold_t *u)
{
    const int one_buffer = MPI_IN_PLACE == a->sendbuf || GPUCOLL_MPIX_BCAST == a->coll;
    const MPI_Datatype in_type = one_buffer ? a->rtype : a->stype;
    size_t isize, osize;
    MPI_Count count;

    memset(g, 0, sizeof(*g));
    if (!gc_gaps_needed(in_type) && !gc_gaps_needed(a->rtype)) {
        return -1;
    }
    g->in_on = gc_gaps_needed(in_type) && gc_layout_make(in_type, &g->in);
    g->out_on = gc_gaps_needed(a->rtype) && gc_layout_make(a->rtype, &g->out);
    if (g->in_on != gc_gaps_needed(in_type) || g->out_on != gc_gaps_needed(a->rtype)) {
        gc_gaps_free(g);
        return 0;   /* a type the layouts do not take */
    }
    isize = gc_packed(in_type, &g->in, g->in_on);
    osize = gc_packed(a->rtype, &g->out, g->out_on);
    memset(sc, 0, sizeof(*sc));
    sc->coll = a->coll;
    sc->root = a->root;
    switch (a->coll) {
    case GPUCOLL_MPIX_ALLREDUCE:
    case GPUCOLL_MPIX_REDUCE:
    case GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK:
        count = GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK == a->coll ? a->rcount : a->scount;
        if (NULL == abi || abi->version < 4 || isize != osize ||
            MPI_SUCCESS != abi->host_fold(a->rtype, a->op, &u->f)) {
            break;
        }
        if (u->f.user) {
            /* the layout of the type the application's function is given */
            if (!gc_layout_make(a->rtype, &u->lay)) {
                break;
            }
            u->apply = abi->fold_apply;
            sc->apply = gc_gaps_user_apply;
        } else if ((g->in_on && g->in.padded_leaf) || (g->out_on && g->out.padded_leaf)) {
            break;   /* packed pair types do not sit where the folds read them */
        } else {
            sc->apply = abi->fold_apply;
        }
        sc->fold = &u->f;
        sc->esize = osize;
        sc->bytes = (size_t) count * osize;
        return 1;
    case GPUCOLL_MPIX_BCAST:
        sc->bytes = (size_t) a->scount * osize;
        return 1;
    default:
        /* a block moves as packed bytes: both sides' blocks must be as long */
        sc->bytes = (size_t) a->rcount * osize;
        if (one_buffer || (size_t) a->scount * isize == sc->bytes) {
            return 1;
        }
        break;
    }
    gc_gaps_free(g);
    return 0;
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

int gc_plan(const gc_args_t *a, const gpucoll_mpix_abi_t *abi, gcs_coll_t *sc, gc_ufold_t *fold,
            gc_gaps_t *g)
{
    MPI_Aint sext = 0, rext = 0;
    int sdense = 0, rdense = 0;
    const int in_place = MPI_IN_PLACE == a->sendbuf;
    const int reduces = GPUCOLL_MPIX_ALLREDUCE == a->coll || GPUCOLL_MPIX_REDUCE == a->coll ||
                        GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK == a->coll;

    memset(fold, 0, sizeof(*fold));
    switch (gc_gaps_plan(a, abi, g, sc, fold)) {
    case 1:
        return 1;
    case 0:
        return 0;
    default:   /* no side has gaps */
        break;
    }
    if (!(gc_spanned(a->rtype, &rext, &rdense) || (reduces && gc_tail_padded(a->rtype)))) {
        return 0;
    }
    memset(sc, 0, sizeof(*sc));
    sc->coll = a->coll;
    sc->root = a->root;
    switch (a->coll) {
    case GPUCOLL_MPIX_ALLREDUCE:
    case GPUCOLL_MPIX_REDUCE:
    case GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK:
        if (NULL == abi || abi->version < 4 ||
            MPI_SUCCESS != abi->host_fold(a->rtype, a->op, &fold->f) ||
            !(fold->f.user || rdense || gc_named(a->rtype))) {
            return 0;
        }
        sc->fold = &fold->f;
        sc->apply = abi->fold_apply;
        sc->esize = (size_t) rext;
        sc->bytes = (size_t) ((GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK == a->coll ? a->rcount
                                                                             : a->scount) * rext);
        return 1;
    case GPUCOLL_MPIX_BCAST:
        sc->bytes = (size_t) (a->scount * rext);
        return 1;
    default:
        if (!in_place && !gc_spanned(a->stype, &sext, &sdense)) {
            return 0;
        }
        if (!in_place && !(sdense && rdense) && a->stype != a->rtype) {
            return 0;
        }
        sc->bytes = (size_t) (a->rcount * rext);
        /* a block moves as bytes: both sides' blocks must be as long */
        return in_place || (size_t) (a->scount * sext) == sc->bytes;
    }
}

cudaError_t gc_gaps_copy(const gc_layout_t *l, MPI_Count count, char *user, char *pinned,
                         int to_pinned, cudaStream_t st)
{
    if (count <= 0) {
        return cudaSuccess;
    }
    return gc_layout_copy(l, (size_t) count, user, pinned, to_pinned, st);
}
