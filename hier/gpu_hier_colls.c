#include "hier/gpu_hier_internal.h"

#include <stdio.h>
#include <string.h>

#include "engine/gpu_plan.h"
#include "kernels/gpu_kernels.h"

typedef enum { GPU_NET_ALLREDUCE, GPU_NET_BCAST, GPU_NET_REDUCE } gpu_net_kind_t;

/* one contiguous device range through the inter-node stage */
typedef struct {
    char *dev;
    const char *src;     /* where the slices come from, when not dev (then dev is out only) */
    size_t bytes, slice;
    int down, up;
    gpu_net_kind_t kind;
    gpu_op_t op;
    gpu_dtype_t dt;
    int root;            /* member index for bcast/reduce */
    gpu_hier_t *h;       /* the device fold's: its areas and its stream */
} gpu_range_t;

static size_t gpu_slice_len(size_t total, size_t slice, size_t k)
{
    const size_t off = k * slice;
    return total - off < slice ? total - off : slice;
}

static int gpu_range_copies(void *arg, size_t k, int up, gpu_hier_copy_t *c)
{
    gpu_range_t *r = arg;
    if (up ? !r->up : !r->down) {
        return 0;
    }
    c[0].dev = (!up && NULL != r->src ? (char *) r->src : r->dev) + k * r->slice;
    c[0].slot_off = 0;
    c[0].len = gpu_slice_len(r->bytes, r->slice, k);
    return 1;
}

static gpu_status_t gpu_range_net(void *arg, size_t k, char *slot, gpu_inter_group_t *g)
{
    gpu_range_t *r = arg;
    const size_t len = gpu_slice_len(r->bytes, r->slice, k);
    switch (r->kind) {
    case GPU_NET_ALLREDUCE:
        if (NULL != r->h) {   /* the device fold: the slices swapped, nothing folded here */
            return gpu_inter_swap(g, slot, gpu_hier_peer_slot(r->h, slot), len);
        }
        return gpu_inter_allreduce(g, slot, len / gpu_dtype_size(r->dt), r->op, r->dt);
    case GPU_NET_BCAST:
        return gpu_inter_bcast(g, slot, len, r->root);
    default:
        return gpu_inter_reduce(g, slot, len / gpu_dtype_size(r->dt), r->op, r->dt, r->root);
    }
}

/* The device fold's way back: the rank's own slice (in place in dev, else
 * copied there from src first) folded with the peer's, which the kernel
 * reads from the pinned area the network filled.  own op peer, as the
 * host fold of recursive doubling does, so both ways give the same bits. */
static gpu_status_t gpu_range_up(void *arg, size_t k, char *slot, cudaStream_t stream)
{
    gpu_range_t *r = arg;
    const size_t len = gpu_slice_len(r->bytes, r->slice, k);
    char *dev = r->dev + k * r->slice;
    if (NULL != r->src) {
        const cudaError_t e = cudaMemcpyAsync(dev, r->src + k * r->slice, len,
                                              cudaMemcpyDefault, stream);
        if (cudaSuccess != e) {
            GPU_ERROR("device fold: copy of slice %zu: %s", k, cudaGetErrorString(e));
            return GPU_ERR_CUDA;
        }
    }
    return gpu_kernel_reduce_local(dev, gpu_hier_peer_slot(r->h, slot),
                                   len / gpu_dtype_size(r->dt), r->op, r->dt, stream);
}

static gpu_status_t gpu_hier_range(gpu_hier_t *h, gpu_range_t *r)
{
    gpu_inter_group_t g;
    const size_t esz = GPU_NET_BCAST == r->kind ? 1 : gpu_dtype_size(r->dt);
    gpu_hier_stage_t s = { .copies = gpu_range_copies, .net = gpu_range_net, .arg = r };

    if (0 == r->bytes || h->nnodes < 2) {
        return NULL != r->src ? gpu_hier_d2d(h, r->dev, r->src, r->bytes) : GPU_OK;
    }
    r->slice = gpu_hier_slice(h, r->bytes, esz);
    s.nslices = (r->bytes + r->slice - 1) / r->slice;
    gpu_hier_group(h, &g);
    /* as gpu_hier_choose labels it (two members, recursive doubling: one
     * swap), for a pair the kernels fold */
    if (GPU_NET_ALLREDUCE == r->kind && NULL != h->peer && 2 == g.n &&
        GPU_INTER_RD == gpu_inter_allreduce_choice(&g, r->slice) &&
        gpu_kernel_supported(r->op, r->dt)) {
        r->h = h;
        s.up = gpu_range_up;
    }
    return gpu_hier_pipeline(h, &g, &s);
}

/* the plan just built into h->plan, run by the node's engine */
static gpu_status_t gpu_hier_intra(gpu_hier_t *h, const char *what, gpu_status_t planned,
                                   gpu_op_t op, gpu_dtype_t dt)
{
    return GPU_OK != planned ? planned : gpu_engine_xchg(h->intra, what, &h->plan, op, dt, NULL);
}

static int gpu_rank_at(const gpu_hier_t *h, int node, int local)
{
    return h->rank_at[node * h->max_lsize + local];
}

/* members: local index `local` of every node (a rail), or node leaders
 * with the root leading its node (root < 0: local 0 everywhere) */
static void gpu_members_rail(gpu_hier_t *h, int local)
{
    for (int j = 0; j < h->nnodes; ++j) {
        h->members[j] = gpu_rank_at(h, j, local);
    }
}

static void gpu_members_leaders(gpu_hier_t *h, int root)
{
    for (int j = 0; j < h->nnodes; ++j) {
        h->members[j] = (root >= 0 && h->node_of[root] == j) ? root : gpu_rank_at(h, j, 0);
    }
}

const char *gpu_hier_algo(gpu_hier_t *h, gpu_hier_coll_t coll, size_t bytes, size_t esz)
{
    gpu_hier_model_t m;
    gpu_hier_choice_t c;

    gpu_hier_model_of(h, &m);
    if (GPU_OK == gpu_hier_choose(&m, coll, bytes, esz, &c)) {
        gpu_hier_label(&c, h->label, sizeof(h->label));
    } else {
        snprintf(h->label, sizeof(h->label), "hier %s: not run here", gpu_hier_coll_name(coll));
    }
    return h->label;
}

gpu_status_t gpu_hier_allreduce(gpu_hier_t *h, const void *in, void *out, size_t count,
                                gpu_op_t op, gpu_dtype_t dt)
{
    const size_t esz = gpu_dtype_size(dt), bytes = count * esz;
    const int L = h->lsize;
    gpu_range_t r = { .bytes = bytes, .down = 1, .up = 1, .kind = GPU_NET_ALLREDUCE, .op = op,
                      .dt = dt };
    gpu_status_t st = gpu_hier_begin(h);

    if (GPU_OK != st || 0 == count) {
        return st;
    }
    if (h->even) {
        /* shard q: elements [count q / L, count (q + 1) / L) */
        for (int q = 0; q < L; ++q) {
            h->off[q] = count * (size_t) q / (size_t) L * esz;
            h->len[q] = count * (size_t) (q + 1) / (size_t) L * esz - h->off[q];
        }
        /* one rank a node: the slices go from in to out through the slots */
        st = L > 1 ? gpu_hier_intra(h, "hier allreduce: intra reduce-scatter",
                                    gpu_plan_reduce_scatterv(&h->plan, h->local, L, in,
                                                             (char *) out + h->off[h->local],
                                                             h->len, h->off), op, dt)
                   : GPU_OK;
        if (GPU_OK == st) {
            gpu_members_rail(h, h->local);
            r.dev = (char *) out + h->off[h->local];
            r.src = 1 == L && in != out ? in : NULL;
            r.bytes = h->len[h->local];
            st = gpu_hier_range(h, &r);
        }
        if (GPU_OK == st && L > 1) {
            st = gpu_hier_intra(h, "hier allreduce: intra allgather",
                                gpu_plan_allgatherv(&h->plan, h->local, L, NULL, out, h->len, h->off),
                                op, dt);
        }
        return st;
    }
    /* uneven nodes: through node leaders (local 0) */
    st = L > 1 ? gpu_hier_intra(h, "hier allreduce: intra reduce",
                                gpu_plan_reduce(&h->plan, h->local, L, 0,
                                                (in == out && 0 == h->local) ? NULL : in, out,
                                                bytes), op, dt)
               : GPU_OK;
    if (GPU_OK == st && 0 == h->local) {
        gpu_members_leaders(h, -1);
        r.dev = out;
        r.src = 1 == L && in != out ? in : NULL;
        st = gpu_hier_range(h, &r);
    }
    if (GPU_OK == st && L > 1) {
        st = gpu_hier_intra(h, "hier allreduce: intra bcast",
                            gpu_plan_bcast(&h->plan, h->local, L, 0, out, bytes, 0, NULL), op, dt);
    }
    return st;
}

gpu_status_t gpu_hier_bcast(gpu_hier_t *h, void *buf, size_t bytes, int root)
{
    gpu_range_t r = { .dev = buf, .bytes = bytes, .down = h->rank == root,
                      .up = h->rank != root, .kind = GPU_NET_BCAST, .dt = GPU_DT_U8 };
    gpu_status_t st = gpu_hier_begin(h);
    int leader;

    if (GPU_OK != st || 0 == bytes) {
        return st;
    }
    gpu_members_leaders(h, root);
    leader = h->members[h->node];
    r.root = h->node_of[root];
    if (h->rank == leader) {
        st = gpu_hier_range(h, &r);
    }
    if (GPU_OK == st && h->lsize > 1) {
        st = gpu_hier_intra(h, "hier bcast: intra bcast",
                            gpu_plan_bcast(&h->plan, h->local, h->lsize, h->local_of[leader], buf,
                                           bytes, 0, NULL), GPU_OP_SUM, GPU_DT_U8);
    }
    return st;
}

gpu_status_t gpu_hier_reduce(gpu_hier_t *h, const void *in, void *out, size_t count, gpu_op_t op,
                             gpu_dtype_t dt, int root)
{
    const size_t bytes = count * gpu_dtype_size(dt);
    gpu_range_t r = { .bytes = bytes, .down = 1, .up = h->rank == root, .kind = GPU_NET_REDUCE,
                      .op = op, .dt = dt };
    gpu_status_t st = gpu_hier_begin(h);
    char *target = out;
    int leader;

    if (GPU_OK != st || 0 == count) {
        return st;
    }
    gpu_members_leaders(h, root);
    leader = h->members[h->node];
    r.root = h->node_of[root];
    /* a leader that is not the root collects its node into a temporary */
    if (h->rank == leader && h->rank != root) {
        st = gpu_hier_dvec(h, bytes, &target);
    }
    if (GPU_OK == st) {
        st = h->lsize > 1
                 ? gpu_hier_intra(h, "hier reduce: intra reduce",
                                  gpu_plan_reduce(&h->plan, h->local, h->lsize, h->local_of[leader],
                                                  in, target, bytes), op, dt)
                 : gpu_hier_d2d(h, target, NULL == in ? target : in, bytes);
    }
    if (GPU_OK == st && h->rank == leader) {
        r.dev = target;
        st = gpu_hier_range(h, &r);
    }
    return st;
}

/* allgather: slice k is bytes [k s, (k + 1) s) of every rank's block,
 * packed in node order in the slot */
typedef struct {
    gpu_hier_t *h;
    char *out;
    size_t blk, s;
} gpu_gather_t;

static int gpu_gather_copies(void *arg, size_t k, int up, gpu_hier_copy_t *c)
{
    gpu_gather_t *a = arg;
    gpu_hier_t *h = a->h;
    const size_t sl = gpu_slice_len(a->blk, a->s, k);
    size_t pos = 0;
    int n = 0;
    for (int j = 0; j < h->nnodes; ++j) {
        for (int q = 0; q < h->node_size[j]; ++q, pos += sl) {
            if ((j == h->node) == !up) {
                c[n].dev = a->out + (size_t) gpu_rank_at(h, j, q) * a->blk + k * a->s;
                c[n].slot_off = pos;
                c[n].len = sl;
                ++n;
            }
        }
    }
    return n;
}

/* the node blocks of a slice of sl bytes per rank into goff/glen[which] */
static void gpu_gather_blocks(gpu_hier_t *h, int which, size_t sl)
{
    size_t pos = 0;
    for (int j = 0; j < h->nnodes; ++j) {
        h->goff[which][j] = pos;
        h->glen[which][j] = (size_t) h->node_size[j] * sl;
        pos += h->glen[which][j];
    }
}

/* read-only: channels run several slices at once */
static gpu_status_t gpu_gather_net(void *arg, size_t k, char *slot, gpu_inter_group_t *g)
{
    gpu_gather_t *a = arg;
    gpu_hier_t *h = a->h;
    const int last = a->s != gpu_slice_len(a->blk, a->s, k);
    return gpu_inter_allgatherv(g, slot, h->goff[last], h->glen[last]);
}

gpu_status_t gpu_hier_allgather(gpu_hier_t *h, const void *in, void *out, size_t bytes)
{
    gpu_gather_t a = { .h = h, .out = out, .blk = bytes,
                       .s = gpu_hier_slice(h, bytes * (size_t) h->nranks, 1) / (size_t) h->nranks };
    gpu_hier_stage_t s = { .copies = gpu_gather_copies, .net = gpu_gather_net, .arg = &a };
    const int L = h->lsize;
    gpu_inter_group_t g;
    gpu_status_t st = gpu_hier_begin(h);

    if (GPU_OK != st || 0 == bytes) {
        return st;
    }
    if (0 == a.s) {
        return GPU_ERR_UNSUPPORTED;   /* more ranks than slot bytes */
    }
    for (int q = 0; q < L; ++q) {
        h->len[q] = bytes;
        h->off[q] = (size_t) gpu_rank_at(h, h->node, q) * bytes;
    }
    st = L > 1 ? gpu_hier_intra(h, "hier allgather: intra allgather",
                                gpu_plan_allgatherv(&h->plan, h->local, L, in, out, h->len, h->off),
                                GPU_OP_SUM, GPU_DT_U8)
               : gpu_hier_d2d(h, (char *) out + (size_t) h->rank * bytes,
                              NULL == in ? (char *) out + (size_t) h->rank * bytes : in, bytes);
    if (GPU_OK == st && 0 == h->local) {
        gpu_members_leaders(h, -1);
        gpu_hier_group(h, &g);
        s.nslices = (bytes + a.s - 1) / a.s;
        gpu_gather_blocks(h, 0, a.s);
        gpu_gather_blocks(h, 1, gpu_slice_len(bytes, a.s, s.nslices - 1));
        st = gpu_hier_pipeline(h, &g, &s);
    }
    if (GPU_OK == st && L > 1) {
        st = gpu_hier_intra(h, "hier allgather: intra bcast",
                            gpu_plan_bcast(&h->plan, h->local, L, 0, out, bytes * (size_t) h->nranks,
                                           0, NULL), GPU_OP_SUM, GPU_DT_U8);
    }
    return st;
}

gpu_status_t gpu_hier_reduce_scatter_block(gpu_hier_t *h, const void *in, void *out,
                                           size_t count, gpu_op_t op, gpu_dtype_t dt)
{
    const size_t esz = gpu_dtype_size(dt), total = count * (size_t) h->nranks * esz;
    char *tmp = NULL;
    gpu_status_t st = GPU_OK;

    if (0 == count) {
        return gpu_hier_begin(h);   /* keep the call sequence in step */
    }
    st = gpu_hier_dvec(h, total, &tmp);
    if (GPU_OK == st) {
        st = gpu_hier_allreduce(h, NULL == in ? out : in, tmp, count * (size_t) h->nranks, op, dt);
    }
    return GPU_OK == st ? gpu_hier_d2d(h, out, tmp + (size_t) h->rank * count * esz, count * esz)
                        : st;
}

/* One byte's allreduce rather than a handshake of its own: it is the node
 * engine step and the exchange among node leaders (or rails) that every
 * other collective uses, bounded and naming its peers like them, and never
 * waits in Open MPI's pml.  Its result needs every rank's byte, so no rank
 * leaves before the last has come. */
gpu_status_t gpu_hier_barrier(gpu_hier_t *h)
{
    char *tmp = NULL;
    gpu_status_t st = gpu_hier_dvec(h, 2, &tmp);
    if (GPU_OK != st) {
        return st;
    }
    return gpu_hier_allreduce(h, tmp, tmp + 1, 1, GPU_OP_MAX, GPU_DT_U8);
}
