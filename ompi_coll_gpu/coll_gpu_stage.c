/*
 * Host shadows of the blocks a staged collective touches (the why is in
 * coll_gpu_staged.h).  Copies go through the CUDA driver's unified copy
 * (gpu_drv_copy): it needs no runtime state of ours, runs in the caller's
 * context, and serves device, managed and host blocks alike, so a w layout
 * whose blocks sit in different kinds of memory (MPI_BOTTOM) stages too.
 */
#include "ompi_config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "coll_gpu.h"
#include "coll_gpu_staged.h"

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "util/gpu_cuda_drv.h"

/* shadows above this come from mmap (pages touched only where blocks are:
 * absolute displacements may leave wide gaps) */
#define GPU_STAGE_MMAP_MIN ((ptrdiff_t) 64 << 20)

void mca_coll_gpu_stage_init(gpu_stage_t *s, const void *buf, int out)
{
    s->user = (void *) buf;
    s->shadow = NULL;
    s->lo = s->hi = 0;
    s->out = out;
    s->nseg = 0;
    s->cap = (int) (sizeof(s->inl) / sizeof(s->inl[0]));
    s->seg = s->inl;
}

static int gpu_stage_add(gpu_stage_t *s, ptrdiff_t lo, ptrdiff_t hi, int in)
{
    if (s->nseg == s->cap) {
        const int cap = 2 * s->cap;
        gpu_stage_seg_t *seg = malloc((size_t) cap * sizeof(*seg));
        if (NULL == seg) {
            return MPI_ERR_NO_MEM;
        }
        memcpy(seg, s->seg, (size_t) s->nseg * sizeof(*seg));
        if (s->seg != s->inl) {
            free(s->seg);
        }
        s->seg = seg;
        s->cap = cap;
    }
    s->seg[s->nseg++] = (gpu_stage_seg_t) { .lo = lo, .hi = hi, .in = in };
    return MPI_SUCCESS;
}

int mca_coll_gpu_stage_block(gpu_stage_t *s, size_t count, struct ompi_datatype_t *dt,
                             ptrdiff_t disp, int in)
{
    ptrdiff_t true_lb, true_ext, lb, ext;
    if (0 == count || NULL == dt) {
        return MPI_SUCCESS;
    }
    ompi_datatype_get_true_extent(dt, &true_lb, &true_ext);
    ompi_datatype_get_extent(dt, &lb, &ext);
    if (0 == true_ext) {
        return MPI_SUCCESS;   /* a type of no bytes */
    }
    const ptrdiff_t lo = disp + true_lb;
    /* a receive block with holes is copied in, so the holes keep their
     * bytes when the block is copied back */
    if (s->out && !in && !ompi_datatype_is_contiguous_memory_layout(dt, (int32_t) count)) {
        in = 1;
    }
    return gpu_stage_add(s, lo, lo + true_ext + (ptrdiff_t) (count - 1) * ext, in);
}

int mca_coll_gpu_stage_vblock(gpu_stage_t *s, int count, struct ompi_datatype_t *dt, int displ,
                              int in)
{
    ptrdiff_t lb, ext;
    if (count <= 0 || NULL == dt) {
        return MPI_SUCCESS;
    }
    ompi_datatype_get_extent(dt, &lb, &ext);
    return mca_coll_gpu_stage_block(s, (size_t) count, dt, (ptrdiff_t) displ * ext, in);
}

void mca_coll_gpu_stage_move(gpu_stage_t *dst, const gpu_stage_t *src)
{
    *dst = *src;
    if (src->seg == src->inl) {
        dst->seg = dst->inl;
    }
}

static int gpu_stage_seg_cmp(const void *a, const void *b)
{
    const gpu_stage_seg_t *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* blocks sorted and overlapping ones merged: each byte is copied once */
static void gpu_stage_merge(gpu_stage_t *s)
{
    int i, n = 0;
    qsort(s->seg, (size_t) s->nseg, sizeof(*s->seg), gpu_stage_seg_cmp);
    for (i = 0; i < s->nseg; ++i) {
        if (n > 0 && s->seg[i].lo <= s->seg[n - 1].hi) {
            gpu_stage_seg_t *t = &s->seg[n - 1];
            t->hi = s->seg[i].hi > t->hi ? s->seg[i].hi : t->hi;
            t->in |= s->seg[i].in;
        } else {
            s->seg[n++] = s->seg[i];
        }
    }
    s->nseg = n;
    s->lo = n > 0 ? s->seg[0].lo : 0;
    s->hi = n > 0 ? s->seg[n - 1].hi : 0;
}

int mca_coll_gpu_stage_device(const gpu_stage_t *s)
{
    for (int i = 0; i < s->nseg; ++i) {
        if (mca_coll_gpu_is_device((char *) s->user + s->seg[i].lo)) {
            return 1;
        }
    }
    return 0;
}

static int gpu_stage_copy(void *dst, const void *src, size_t bytes, const char *dir)
{
    const char *why = NULL;
    if (0 != gpu_drv_copy(dst, src, bytes, &why)) {
        mca_coll_gpu_show_help("staging-failed", (ssize_t) bytes, dir, why);
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

static char *gpu_stage_alloc(size_t span)
{
    char *p;
    if ((ptrdiff_t) span >= GPU_STAGE_MMAP_MIN) {
        p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
        return MAP_FAILED == p ? NULL : p;
    }
    return malloc(span);
}

static void gpu_stage_release(char *p, size_t span)
{
    if ((ptrdiff_t) span >= GPU_STAGE_MMAP_MIN) {
        munmap(p, span);
    } else {
        free(p);
    }
}

static void gpu_stage_free(gpu_stage_t *s)
{
    if (NULL != s->shadow) {
        gpu_stage_release(s->shadow, (size_t) (s->hi - s->lo));
        s->shadow = NULL;
    }
    if (s->seg != s->inl) {
        free(s->seg);
        s->seg = s->inl;
        s->cap = (int) (sizeof(s->inl) / sizeof(s->inl[0]));
    }
    s->nseg = 0;
}

/* The view (the shadow less lo) is what the host library gets, and a view
 * equal to the other buffer's is MPI_IN_PLACE to Open MPI's libnbc
 * (NBC_IN_PLACE compares the pointers): it skips this rank's own block and
 * waits for messages its peers never send.  Views meet whenever the two
 * shadows lie as far apart as the two sets of blocks (displacements,
 * MPI_BOTTOM's absolute addresses), which malloc does now and then.  So a
 * view equal to avoid takes a second shadow, made while the first is
 * held: it lies elsewhere, and so does its view. */
static int gpu_stage_in(gpu_stage_t *s, void **view, const void *avoid)
{
    int ret = MPI_SUCCESS;
    *view = s->user;
    gpu_stage_merge(s);
    if (0 == s->nseg || !mca_coll_gpu_stage_device(s)) {
        gpu_stage_free(s);   /* host memory (or nothing): used as it is */
        return MPI_SUCCESS;
    }
    const size_t span = (size_t) (s->hi - s->lo);
    s->shadow = gpu_stage_alloc(span);
    if (NULL != s->shadow && s->shadow - s->lo == (const char *) avoid) {
        char *first = s->shadow;
        s->shadow = gpu_stage_alloc(span);
        gpu_stage_release(first, span);
    }
    if (NULL == s->shadow) {
        mca_coll_gpu_show_help("staging-no-memory", (ssize_t) span);
        s->nseg = 0;
        gpu_stage_free(s);
        return MPI_ERR_NO_MEM;
    }
    for (int i = 0; i < s->nseg && MPI_SUCCESS == ret; ++i) {
        const gpu_stage_seg_t *g = &s->seg[i];
        if (g->in) {
            ret = gpu_stage_copy(s->shadow + (g->lo - s->lo), (char *) s->user + g->lo,
                                 (size_t) (g->hi - g->lo), "device to host");
        }
    }
    if (MPI_SUCCESS != ret) {
        gpu_stage_free(s);
        return ret;
    }
    *view = s->shadow - s->lo;
    return MPI_SUCCESS;
}

static int gpu_stage_out(gpu_stage_t *s, int copy_out)
{
    int ret = MPI_SUCCESS;
    if (NULL != s->shadow && copy_out && s->out) {
        for (int i = 0; i < s->nseg && MPI_SUCCESS == ret; ++i) {
            const gpu_stage_seg_t *g = &s->seg[i];
            ret = gpu_stage_copy((char *) s->user + g->lo, s->shadow + (g->lo - s->lo),
                                 (size_t) (g->hi - g->lo), "host to device");
        }
    }
    gpu_stage_free(s);
    return ret;
}

int mca_coll_gpu_stage_pair(gpu_stage_t *s, gpu_stage_t *r, void **sv, void **rv)
{
    int ret = MPI_SUCCESS;
    /* each view differs from what the other buffer is handed: the user's
     * pointer where it is not staged, else its own view */
    if (NULL != s) {
        ret = gpu_stage_in(s, sv, NULL != r ? r->user : NULL);
    }
    if (MPI_SUCCESS == ret && NULL != r) {
        ret = gpu_stage_in(r, rv, NULL != s ? *sv : NULL);
        if (MPI_SUCCESS != ret && NULL != s) {
            gpu_stage_free(s);
        }
    }
    return ret;
}

int mca_coll_gpu_stage_done(gpu_stage_t *s, gpu_stage_t *r, int ret)
{
    int r2 = MPI_SUCCESS;
    if (NULL != r) {
        r2 = gpu_stage_out(r, MPI_SUCCESS == ret);
    }
    if (NULL != s) {
        int r3 = gpu_stage_out(s, MPI_SUCCESS == ret);
        r2 = MPI_SUCCESS != r2 ? r2 : r3;
    }
    return MPI_SUCCESS != ret ? ret : r2;
}
