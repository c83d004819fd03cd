/*
 * The host transport's plan of an enqueued collective (gpucoll_mpix_plan.c),
 * datatypes with gaps among them, and the stream copies around it.
 */
#ifndef GPUCOLL_MPIX_PLAN_H
#define GPUCOLL_MPIX_PLAN_H

#include "mpix/gpucoll_mpix_int.h"
#include "mpix/gpucoll_mpix_layout.h"

/* a call's sides whose types have gaps (their layouts), for the enqueue */
typedef struct {
    gc_layout_t in, out;
    int in_on, out_on;
} gc_gaps_t;

/* the fold of a call on a type with gaps; f first: the transport hands
 * the fold back by its address */
typedef struct {
    gpucoll_mpix_fold_t f;
    gc_layout_t lay;          /* the application's op: its type's layout */
    void (*apply)(const gpucoll_mpix_fold_t *, const void *, void *, size_t);
} gc_ufold_t;

/* 1 where t is neither predefined nor dense (its elements have gaps) */
int gc_gaps_needed(MPI_Datatype t);
/* On the application's thread: whether the host transport runs a, with
 * sc (but its buffers) and *fold filled, and, for sides whose types have
 * gaps, their layouts in *g (empty otherwise).  0 where it cannot: an op
 * with no host fold, a type neither dense nor one the layouts take, packed
 * pair types to fold, send and receive blocks of different lengths.  The
 * answer depends on the op and on types every rank passes alike, but for
 * movement collectives whose ranks mix dense and gapped types.  The caller
 * frees *g once the copies are issued, and fold->lay with the call's
 * descriptor (gc_plan_free where no descriptor took it). */
int gc_plan(const gc_args_t *a, const gpucoll_mpix_abi_t *abi, gcs_coll_t *sc, gc_ufold_t *fold,
            gc_gaps_t *g);
void gc_gaps_free(gc_gaps_t *g);
/* both of a plan that no descriptor took (fold->lay zeroed once one did) */
void gc_plan_free(gc_gaps_t *g, gc_ufold_t *fold);
/* count elements between the application's buffer and the packed pinned copy */
cudaError_t gc_gaps_copy(const gc_layout_t *l, MPI_Count count, char *user, char *pinned,
                         int to_pinned, cudaStream_t st);

#endif /* GPUCOLL_MPIX_PLAN_H */
