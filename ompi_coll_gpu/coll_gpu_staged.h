/*
 * The staged path's host copies of user buffers, shared by the staged
 * collectives (coll_gpu_staged.c, coll_gpu_staged_nbr.c, coll_gpu_inter.c)
 * and the request of a nonblocking staged call (coll_gpu_staged_req.c).
 *
 * A buffer argument is described by the blocks MPI says the call touches:
 * count elements of a datatype at a byte displacement from the buffer (a
 * peer's block of a v/w layout, the whole buffer of a rooted call at the
 * root, nothing at all for an argument significant only elsewhere).
 * Displacements may be negative, blocks may come in any order and leave
 * gaps, and the base may be MPI_BOTTOM with absolute displacements: the
 * memory kind is that of the bytes the blocks touch, not of the base
 * pointer, and the byte ranges are computed in ptrdiff_t, never int.
 * One host shadow covers [lo, hi) of the blocks; only the blocks are
 * copied in (inputs, and receive blocks whose datatype has holes, so the
 * holes keep their bytes) and only receive blocks are copied back: the
 * gaps between blocks are never written.
 */
#ifndef MCA_COLL_GPU_STAGED_H
#define MCA_COLL_GPU_STAGED_H

#include "coll_gpu.h"

typedef struct {
    ptrdiff_t lo, hi;   /* bytes from the user's base pointer */
    int in;             /* copy in before the call */
} gpu_stage_seg_t;

typedef struct {
    void *user;         /* the caller's buffer, as passed */
    char *shadow;       /* host copy of [lo, hi), or NULL: the call uses user */
    ptrdiff_t lo, hi;
    int out;            /* copy the blocks back after the call (a receive side) */
    int nseg, cap;
    gpu_stage_seg_t *seg;   /* inl, or malloc'd beyond GPU_STAGE_INLINE */
    gpu_stage_seg_t inl[4];
} gpu_stage_t;

/* out: this argument receives results (its blocks are copied back) */
void mca_coll_gpu_stage_init(gpu_stage_t *s, const void *buf, int out);
/* count elements of dt at byte displacement disp from the base; in: the
 * call reads them (a send block, or an in-place receive block) */
int mca_coll_gpu_stage_block(gpu_stage_t *s, size_t count, struct ompi_datatype_t *dt,
                             ptrdiff_t disp, int in);
/* the same, displacement in units of dt's extent (v layouts) */
int mca_coll_gpu_stage_vblock(gpu_stage_t *s, int count, struct ompi_datatype_t *dt, int displ,
                              int in);
/* the n blocks of a w layout: byte displacements (adispls, MPI_Aint, as
 * the neighborhood form has them, else idispls), a datatype per block */
int mca_coll_gpu_stage_w(gpu_stage_t *s, int n, const int *counts, const MPI_Aint *adispls,
                         const int *idispls, struct ompi_datatype_t *const *types, int in);
/* A copy of a staged buffer's description that outlives the caller's
 * (a request keeps it): the inline blocks move with it. */
void mca_coll_gpu_stage_move(gpu_stage_t *dst, const gpu_stage_t *src);
/* 1 when some block lies in device (or managed) memory */
int mca_coll_gpu_stage_device(const gpu_stage_t *s);
/* Make the shadows of s and r and copy their input blocks in; *sv and *rv
 * are what the host collective gets (the user's own pointer where nothing
 * needs staging).  Either may be NULL (a collective of one buffer). */
int mca_coll_gpu_stage_pair(gpu_stage_t *s, gpu_stage_t *r, void **sv, void **rv);
/* copy the results back (ret MPI_SUCCESS) and free both shadows */
int mca_coll_gpu_stage_done(gpu_stage_t *s, gpu_stage_t *r, int ret);
/* Blocking (req NULL): copy back now.  Nonblocking: hand out the inner
 * request itself when nothing was staged, else one that copies back. */
int mca_coll_gpu_stage_finish(gpu_stage_t *s, gpu_stage_t *r, int ret, ompi_request_t *inner,
                              mca_coll_gpu_module_t *m, const char *what, ompi_request_t **req);

#endif /* MCA_COLL_GPU_STAGED_H */
