/*
 * The hierarchy's scan and exscan, for layouts whose nodes hold
 * consecutive ranks (node j's ranks all before node j + 1's, as
 * coll_gpu_virtual_nodes splits and by-slot mappings place them; any other
 * layout stages, every rank alike):
 *
 *   1. the node engine's scan (exscan) within the node
 *   2. the node's total at its last rank (scan: its result; exscan: its
 *      result folded with its own input, kept before an in-place step)
 *   3. the last ranks of the nodes ring their totals (allgatherv of equal
 *      pieces, pipelined in slices) and each folds those of the nodes before
 *      it in node order: the carry into its node
 *   4. node bcast of the carry from the last rank, and every rank of a node
 *      after the first folds it into its result (exscan: the node's first
 *      rank takes the carry as its result)
 *
 * Predefined ops commute, so the carry may be folded in after the node's
 * own prefix; floating-point results may differ in the last bits from a
 * rank-order fold, as the allreduce's across nodes do.
 */
#include "hier/gpu_hier_internal.h"

#include <string.h>

#include "engine/gpu_plan.h"
#include "kernels/gpu_kernels.h"

typedef struct {
    gpu_hier_t *h;
    const char *total;   /* my node's total (the last rank of a node) */
    char *carry;         /* where the carry lands (nodes after the first) */
    size_t bytes, s;     /* the vector; its piece per slice */
    gpu_op_t op;
    gpu_dtype_t dt;
} gpu_scan_t;

static size_t gpu_scan_piece(size_t total, size_t s, size_t k)
{
    return k * s < total ? (total - k * s < s ? total - k * s : s) : 0;
}

/* down: my total's piece at my node's place; up: the carry from place 0 */
static int gpu_scan_copies(void *arg, size_t k, int up, gpu_hier_copy_t *c)
{
    gpu_scan_t *a = arg;
    const size_t len = gpu_scan_piece(a->bytes, a->s, k);
    if (up && 0 == a->h->node) {
        return 0;
    }
    c[0].dev = (up ? a->carry : (char *) a->total) + k * a->s;
    c[0].slot_off = up ? 0 : (size_t) a->h->node * len;
    c[0].len = len;
    return 1;
}

static gpu_status_t gpu_scan_net(void *arg, size_t k, char *slot, gpu_inter_group_t *g)
{
    gpu_scan_t *a = arg;
    const gpu_hier_t *h = a->h;
    const size_t len = gpu_scan_piece(a->bytes, a->s, k), n = len / gpu_dtype_size(a->dt);
    size_t off[GPU_INTER_MAX_MEMBERS], lens[GPU_INTER_MAX_MEMBERS];
    gpu_status_t st;

    for (int j = 0; j < h->nnodes; ++j) {
        off[j] = (size_t) j * len;
        lens[j] = len;
    }
    st = gpu_inter_allgatherv(g, slot, off, lens);
    /* the nodes before mine, folded in node order into place 0 */
    for (int j = 1; j < h->node && GPU_OK == st; ++j) {
        st = g->red->reduce(g->red_ctx, slot, slot + off[j], n, a->op, a->dt);
    }
    return st;
}

/* the layout's answer (every rank alike): nodes of consecutive ranks */
static int gpu_scan_fits(const gpu_hier_t *h)
{
    for (int r = 1; r < h->nranks; ++r) {
        if (h->node_of[r] < h->node_of[r - 1]) {
            return 0;
        }
    }
    return h->nnodes <= GPU_INTER_MAX_MEMBERS;
}

int gpu_hier_scan_takes(const gpu_hier_t *h)
{
    return gpu_scan_fits(h);
}

static gpu_status_t gpu_scan_fold(gpu_hier_t *h, void *acc, const void *x, size_t count,
                                  gpu_op_t op, gpu_dtype_t dt)
{
    gpu_status_t st = gpu_kernel_reduce_local(acc, x, count, op, dt, h->stream);
    return GPU_OK == st ? gpu_hier_sync(h, "hier scan: fold of the carry") : st;
}

gpu_status_t gpu_hier_scan(gpu_hier_t *h, const void *in, void *out, size_t count, gpu_op_t op,
                           gpu_dtype_t dt, int exclusive)
{
    const size_t esz = gpu_dtype_size(dt), bytes = count * esz;
    const int L = h->lsize, last = h->local == L - 1;
    const char *mine = NULL != in ? in : out;
    gpu_scan_t a = { .h = h, .bytes = bytes, .op = op, .dt = dt };
    gpu_hier_stage_t s = { .copies = gpu_scan_copies, .net = gpu_scan_net, .arg = &a };
    gpu_hier_model_t m;
    gpu_inter_group_t g;
    char *tmp = NULL;
    gpu_status_t st = gpu_hier_begin(h);

    if (GPU_OK != st || 0 == count) {
        return st;
    }
    gpu_hier_model_of(h, &m);
    a.s = gpu_hier_node_slice(&m, exclusive ? GPU_HIER_EXSCAN : GPU_HIER_SCAN, bytes) / esz * esz;
    if (0 == a.s || !gpu_scan_fits(h)) {
        return GPU_ERR_UNSUPPORTED;
    }
    /* the carry, and (exscan) the node's total, in the device temporary */
    st = gpu_hier_dvec(h, 2 * bytes, &tmp);
    a.carry = tmp;
    a.total = exclusive ? tmp + bytes : out;
    if (GPU_OK == st && exclusive && last) {
        st = gpu_hier_d2d(h, tmp + bytes, mine, bytes);   /* before an in-place step */
    }
    if (GPU_OK == st && L > 1) {
        st = gpu_plan_scan(&h->plan, h->local, L, in, out, bytes, exclusive);
        st = GPU_OK == st ? gpu_engine_xchg(h->intra, exclusive ? "hier exscan: intra exscan"
                                                                : "hier scan: intra scan",
                                            &h->plan, op, dt, NULL)
                          : st;
    } else if (GPU_OK == st && !exclusive) {
        st = gpu_hier_d2d(h, out, mine, bytes);
    }
    if (GPU_OK == st && exclusive && last && L > 1) {
        st = gpu_scan_fold(h, tmp + bytes, out, count, op, dt);
    }
    if (GPU_OK == st && last) {
        for (int j = 0; j < h->nnodes; ++j) {
            h->members[j] = h->rank_at[j * h->max_lsize + h->node_size[j] - 1];
        }
        s.nslices = (bytes + a.s - 1) / a.s;
        gpu_hier_group(h, &g);
        st = gpu_hier_pipeline(h, &g, &s);
    }
    if (0 == h->node) {
        return st;   /* no carry into the first node */
    }
    if (GPU_OK == st && L > 1) {
        st = gpu_plan_bcast(&h->plan, h->local, L, L - 1, a.carry, bytes, 0, NULL);
        st = GPU_OK == st ? gpu_engine_xchg(h->intra, "hier scan: intra bcast of the carry",
                                            &h->plan, op, dt, NULL)
                          : st;
    }
    if (GPU_OK == st) {
        st = exclusive && 0 == h->local ? gpu_hier_d2d(h, out, a.carry, bytes)
                                        : gpu_scan_fold(h, out, a.carry, count, op, dt);
    }
    return st;
}
