/*
 * The staged path's internals shared by coll_gpu_staged.c (the copies and
 * the collectives) and coll_gpu_staged_req.c (the request of a nonblocking
 * staged call, completed from progress, bounded by coll_gpu_timeout).
 */
#ifndef MCA_COLL_GPU_STAGED_H
#define MCA_COLL_GPU_STAGED_H

#include "coll_gpu.h"

typedef struct {
    void *user;     /* the caller's buffer, as passed */
    char *shadow;   /* host copy of [lo, hi) of the user buffer */
    ptrdiff_t lo, hi;
} gpu_stage_t;

/* copy the results back (ret MPI_SUCCESS) and free both shadows */
int mca_coll_gpu_stage_done(gpu_stage_t *s, gpu_stage_t *r, int ret);
/* Blocking (req NULL): copy back now.  Nonblocking: hand out the inner
 * request itself when nothing was staged, else one that copies back. */
int mca_coll_gpu_stage_finish(gpu_stage_t *s, gpu_stage_t *r, int ret, ompi_request_t *inner,
                              mca_coll_gpu_module_t *m, const char *what, ompi_request_t **req);

#endif /* MCA_COLL_GPU_STAGED_H */
