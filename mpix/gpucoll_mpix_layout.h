/*
 * Datatypes with gaps on a CUDA stream (libgpucoll): where the bytes of a
 * derived datatype lie, and the stream copies that gather them into
 * pinned host memory end to end and scatter them back.
 *
 * Why: the host transport (gpucoll_mpix_shm.h) moves and folds dense
 * bytes, and MPI forbids touching a receive buffer's gaps.  Open MPI's own
 * packing cannot run where the enqueued call's data are (on the stream,
 * later, on CUDA's or libgpucoll's threads, at any thread level), so the
 * layout is read here on the application's thread at the enqueue with
 * MPI's own type decoding (MPI_Type_get_envelope/contents) and turned
 * into stream copies issued at once: a 2-D copy per run of equal blocks
 * at equal distance, over the elements or over the run, whichever is
 * fewer.  The transport then sees dense data: a reduction of a derived
 * type made of one predefined type folds it as that type's elements.
 *
 * Taken: named types, dup, contiguous, vector, hvector, indexed,
 * hindexed, indexed_block, hindexed_block, struct and resized, nested to
 * any depth, in type-map order.  Not taken (the caller says so): subarray,
 * darray, Fortran's parameterized types, and layouts that would need more
 * than GC_LAYOUT_MAX_COPIES copies per call.
 */
#ifndef GPUCOLL_MPIX_LAYOUT_H
#define GPUCOLL_MPIX_LAYOUT_H

#include <stddef.h>

#include <cuda_runtime_api.h>
#include <mpi.h>

#define GC_LAYOUT_MAX_COPIES 4096

/* one element: runs of k blocks of len bytes, stride apart, in type-map
 * order; a run's blocks lie end to end from poff in the packed element */
typedef struct {
    MPI_Aint off, stride;
    size_t len, k, poff;
} gc_run_t;

typedef struct gc_layout {
    size_t size;              /* packed bytes of one element */
    MPI_Aint extent;
    int nrun;
    gc_run_t *run;
    int padded_leaf;          /* a predefined type whose extent is not its size (a pair
                                 type): its packed elements are not the folds' */
    MPI_Aint lo, hi;          /* the bytes one element touches: [lo, hi) */
} gc_layout_t;

/* 1 and *l filled, or 0 where the type is not taken (nothing to free) */
int gc_layout_make(MPI_Datatype t, gc_layout_t *l);
void gc_layout_free(gc_layout_t *l);
/* a copy of from's layout (the same type, not decoded again); 0 without memory */
int gc_layout_dup(const gc_layout_t *from, gc_layout_t *to);
/* 1 where count elements of t lie end to end with no gap (no layout needed) */
int gc_layout_dense(MPI_Datatype t);
/* stream copies for count elements: strided (the type's layout at base)
 * into packed (to_packed 1) or back; cudaSuccess or the error */
cudaError_t gc_layout_copy(const gc_layout_t *l, size_t count, char *strided, char *packed,
                           int to_packed, cudaStream_t st);
/* the copies gc_layout_copy issues for count elements */
size_t gc_layout_copies(const gc_layout_t *l, size_t count);
/* the same on host memory, now (a user op's fold sees the type's layout) */
void gc_layout_host(const gc_layout_t *l, size_t count, char *strided, char *packed,
                    int to_packed);

#endif /* GPUCOLL_MPIX_LAYOUT_H */
