/*
 * The hierarchy's collectives whose blocks differ in size from rank to
 * rank: gatherv and scatterv (gather and scatter are their uniform case)
 * and allgatherv, through node leaders, the root leading its node.
 *
 * A node's region is its ranks' blocks back to back in local order.  The
 * inter-node stage moves regions in slices: slice k is bytes [k s, k s + s)
 * of every region (a short or an empty piece where a region ends), the
 * pieces side by side in the slot in node order (gpu_hier_node_slice
 * gives s).
 *
 *   gatherv     node gatherv into the leader's region (on the root's node
 *               straight into the root's output), each leader's pieces to
 *               the root, which copies them out to the ranks' blocks
 *   scatterv    the mirror: the root's pieces to the leaders, node scatterv
 *   reduce_scatter(v)  the hierarchy's allreduce of every block into a
 *               temporary, then a copy of the rank's own block
 *   allgatherv  node allgatherv into a buffer P of every region (node
 *               order), a ring of the regions' pieces among the leaders,
 *               node bcast of P, then every rank copies the blocks out of P
 *               to its displacements: a bcast of the output itself would
 *               write the leader's gaps over every other rank's
 *
 * Only the root knows a gatherv's or scatterv's counts: it first sends
 * each other leader its node's lengths (one small host message a node).
 * Without the other regions' sizes a leader cannot know how many slices
 * the root runs, so each side runs as many as its own regions need: slice
 * k is channel k mod C's on both sides and a channel's messages match in
 * order (gpu_hier_chan.c), so they pair slice for slice.  Nothing is
 * written outside the blocks MPI names: gaps between displacements stay
 * as they were.
 */
#include "hier/gpu_hier_internal.h"

#include <stdlib.h>
#include <string.h>

#include "engine/gpu_plan.h"
#include "util/gpu_cuda_check.h"

/* phases of this file's messages (inter/ uses 1-7 under the same call tag) */
enum { GPU_V_PH_COUNTS = 0x21, GPU_V_PH_GATHER = 0x22, GPU_V_PH_SCATTER = 0x23 };
#define GPU_V_BATCH 64   /* requests posted before a wait */

typedef enum { GPU_V_GATHER, GPU_V_SCATTER, GPU_V_ALLGATHER } gpu_v_kind_t;

/* one call's layout of blocks; arrays from one allocation (gpu_v_alloc) */
typedef struct {
    gpu_hier_t *h;
    gpu_v_kind_t kind;
    int root_node;
    size_t s;            /* a region's piece per slice */
    size_t *blen;        /* [node] region bytes (gather/scatter: known at the root and own) */
    size_t *roff;        /* [node] allgatherv: region offset in P */
    size_t *len;         /* [rank] block bytes where known */
    size_t *pos;         /* [rank] block offset within its region */
    size_t *nl, *nd;     /* [local] this node's lengths and displacements for its plan */
    uint64_t *cnt;       /* [rank] counts on the wire, node order */
    char *ubuf;          /* the root's output (gather) or input (scatter) */
    const size_t *udispl;   /* [rank] block displacements in ubuf */
    char *region;        /* a leader's region (gather source, scatter target), or P */
} gpu_v_t;

static gpu_status_t gpu_v_alloc(gpu_hier_t *h, gpu_v_t *v)
{
    const size_t n = (size_t) h->nranks, nn = (size_t) h->nnodes;
    size_t *a = calloc(4 * n + 2 * nn + 2, sizeof(size_t));
    v->cnt = malloc(n * sizeof(uint64_t) + 1);
    if (NULL == a || NULL == v->cnt) {
        free(a);
        free(v->cnt);
        return GPU_ERR_NO_MEMORY;
    }
    v->blen = a;
    v->roff = a + nn + 1;
    v->len = v->roff + nn + 1;
    v->pos = v->len + n;
    v->nl = v->pos + n;
    v->nd = v->nl + n;
    return GPU_OK;
}

static void gpu_v_free(gpu_v_t *v)
{
    free(v->blen);
    free(v->cnt);
}

static int gpu_v_rank(const gpu_hier_t *h, int node, int local)
{
    return h->rank_at[node * h->max_lsize + local];
}

static size_t gpu_v_piece(size_t total, size_t s, size_t k)
{
    return k * s < total ? (total - k * s < s ? total - k * s : s) : 0;
}

static size_t gpu_v_slices(size_t total, size_t s)
{
    return (total + s - 1) / s;
}

/* regions from v->len (where known): blen, roff, pos; this node's plan arrays */
static void gpu_v_regions(gpu_v_t *v)
{
    gpu_hier_t *h = v->h;
    size_t at = 0;
    for (int j = 0; j < h->nnodes; ++j) {
        v->roff[j] = at;
        v->blen[j] = 0;
        for (int q = 0; q < h->node_size[j]; ++q) {
            const int r = gpu_v_rank(h, j, q);
            v->pos[r] = v->blen[j];
            v->blen[j] += v->len[r];
        }
        at += v->blen[j];
    }
    for (int q = 0; q < h->lsize; ++q) {
        const int r = gpu_v_rank(h, h->node, q);
        v->nl[q] = v->len[r];
        v->nd[q] = v->pos[r];
    }
}

/* members: node leaders, the root leading its node (root < 0: local 0) */
static void gpu_v_leaders(gpu_hier_t *h, int root)
{
    for (int j = 0; j < h->nnodes; ++j) {
        h->members[j] = root >= 0 && h->node_of[root] == j ? root : gpu_v_rank(h, j, 0);
    }
}

/* The root's counts to every other leader (uniform: none; every rank knows
 * them).  On a leader, v->len of its node's ranks afterwards. */
static gpu_status_t gpu_v_counts(gpu_v_t *v, int root, int uniform)
{
    gpu_hier_t *h = v->h;
    gpu_net_req_t r[GPU_V_BATCH];
    const uint32_t tag = ((h->seq & 0xffff) << 16) | GPU_V_PH_COUNTS;
    gpu_status_t st = GPU_OK;
    size_t at = 0;
    int k = 0;

    if (uniform || h->nnodes < 2 || (h->rank != root && h->rank != h->members[h->node])) {
        return GPU_OK;
    }
    if (h->rank != root) {
        st = h->net_ops->irecv(h->net, root, v->cnt, (size_t) h->lsize * sizeof(uint64_t), tag,
                               GPU_NET_MEM_HOST, &r[0]);
        if (GPU_OK == st) {
            st = h->net_ops->waitall(h->net, r, 1, "node counts from the root");
        }
        for (int q = 0; q < h->lsize && GPU_OK == st; ++q) {
            v->len[gpu_v_rank(h, h->node, q)] = (size_t) v->cnt[q];
        }
        return st;
    }
    for (int j = 0; j < h->nnodes && GPU_OK == st; ++j) {
        const size_t from = at;
        for (int q = 0; q < h->node_size[j]; ++q) {
            v->cnt[at++] = (uint64_t) v->len[gpu_v_rank(h, j, q)];
        }
        if (j == h->node) {
            continue;
        }
        st = h->net_ops->isend(h->net, h->members[j], v->cnt + from,
                               (size_t) h->node_size[j] * sizeof(uint64_t), tag, GPU_NET_MEM_HOST,
                               &r[k]);
        if (GPU_OK != st) {
            h->net_ops->cancel(h->net, r, k);
            return st;
        }
        if (++k == GPU_V_BATCH) {
            st = h->net_ops->waitall(h->net, r, k, "node counts to the leaders");
            k = 0;
        }
    }
    return GPU_OK == st && k > 0 ? h->net_ops->waitall(h->net, r, k, "node counts to the leaders")
                                 : st;
}

/* where node j's piece of slice k sits in the root's slot (gather, scatter:
 * every node but the root's) or in a leader's (allgatherv: every node) */
static size_t gpu_v_slot_off(const gpu_v_t *v, size_t k, int j)
{
    size_t at = 0;
    for (int i = 0; i < j; ++i) {
        if (GPU_V_ALLGATHER == v->kind || i != v->root_node) {
            at += gpu_v_piece(v->blen[i], v->s, k);
        }
    }
    return at;
}

/* bytes [a, a + len) of node j's region to or from the ranks' blocks of ubuf */
static int gpu_v_unpack(const gpu_v_t *v, int j, size_t a, size_t len, size_t slot_off,
                        gpu_hier_copy_t *c)
{
    const gpu_hier_t *h = v->h;
    int n = 0;
    for (int q = 0; q < h->node_size[j]; ++q) {
        const int r = gpu_v_rank(h, j, q);
        const size_t lo = v->pos[r] > a ? v->pos[r] : a;
        const size_t end = v->pos[r] + v->len[r] < a + len ? v->pos[r] + v->len[r] : a + len;
        if (lo < end) {
            c[n].dev = v->ubuf + v->udispl[r] + (lo - v->pos[r]);
            c[n].slot_off = slot_off + (lo - a);
            c[n].len = end - lo;
            ++n;
        }
    }
    return n;
}

static int gpu_v_copies(void *arg, size_t k, int up, gpu_hier_copy_t *c)
{
    gpu_v_t *v = arg;
    gpu_hier_t *h = v->h;
    const size_t a = k * v->s;
    int n = 0;

    if (GPU_V_ALLGATHER == v->kind) {
        /* down: my node's piece; up: every other node's */
        for (int j = 0; j < h->nnodes; ++j) {
            const size_t len = gpu_v_piece(v->blen[j], v->s, k);
            if (len > 0 && (j == h->node) == !up) {
                c[n].dev = v->region + v->roff[j] + a;
                c[n].slot_off = gpu_v_slot_off(v, k, j);
                c[n].len = len;
                ++n;
            }
        }
        return n;
    }
    if (h->node != v->root_node) {
        /* a leader: its region's piece down before a gather, up after a scatter */
        const size_t len = gpu_v_piece(v->blen[h->node], v->s, k);
        if (len > 0 && (GPU_V_GATHER == v->kind) == !up) {
            c[0].dev = v->region + a;
            c[0].slot_off = 0;
            c[0].len = len;
            n = 1;
        }
        return n;
    }
    /* the root: every other node's piece up after a gather, down before a scatter */
    if ((GPU_V_GATHER == v->kind) != up) {
        return 0;
    }
    for (int j = 0; j < h->nnodes; ++j) {
        const size_t len = gpu_v_piece(v->blen[j], v->s, k);
        if (j != v->root_node && len > 0) {
            n += gpu_v_unpack(v, j, a, len, gpu_v_slot_off(v, k, j), c + n);
        }
    }
    return n;
}

/* gather and scatter: the root and every leader with a piece in slice k */
static gpu_status_t gpu_v_net_root(gpu_v_t *v, size_t k, char *slot, gpu_inter_group_t *g)
{
    gpu_hier_t *h = v->h;
    const int gather = GPU_V_GATHER == v->kind;
    const uint32_t tag = g->tag | (gather ? GPU_V_PH_GATHER : GPU_V_PH_SCATTER);
    const char *what = gather ? "inter-node gather to the root"
                              : "inter-node scatter from the root";
    const gpu_net_mem_t mem = g->mem;
    gpu_net_req_t r[GPU_V_BATCH];
    gpu_status_t st = GPU_OK;
    size_t at = 0;
    int n = 0;

    if (h->node != v->root_node) {
        const size_t len = gpu_v_piece(v->blen[h->node], v->s, k);
        const int root = g->ranks[v->root_node];
        if (0 == len) {
            return GPU_OK;
        }
        st = gather ? g->net->isend(g->conn, root, slot, len, tag, mem, &r[0])
                    : g->net->irecv(g->conn, root, slot, len, tag, mem, &r[0]);
        return GPU_OK == st ? g->net->waitall(g->conn, r, 1, what) : st;
    }
    for (int j = 0; j < h->nnodes && GPU_OK == st; ++j) {
        const size_t len = gpu_v_piece(v->blen[j], v->s, k);
        if (j == v->root_node || 0 == len) {
            continue;
        }
        st = gather ? g->net->irecv(g->conn, g->ranks[j], slot + at, len, tag, mem, &r[n])
                    : g->net->isend(g->conn, g->ranks[j], slot + at, len, tag, mem, &r[n]);
        at += len;
        if (GPU_OK != st) {
            g->net->cancel(g->conn, r, n);
            return st;
        }
        if (++n == GPU_V_BATCH) {
            st = g->net->waitall(g->conn, r, n, what);
            n = 0;
        }
    }
    return GPU_OK == st && n > 0 ? g->net->waitall(g->conn, r, n, what) : st;
}

/* allgatherv: the ring of slice k's pieces (read-only on v: channels run
 * several slices at once) */
static gpu_status_t gpu_v_net_ring(gpu_v_t *v, size_t k, char *slot, gpu_inter_group_t *g)
{
    size_t off[GPU_INTER_MAX_MEMBERS], len[GPU_INTER_MAX_MEMBERS];
    size_t at = 0;
    for (int j = 0; j < v->h->nnodes; ++j) {
        off[j] = at;
        len[j] = gpu_v_piece(v->blen[j], v->s, k);
        at += len[j];
    }
    return gpu_inter_allgatherv(g, slot, off, len);
}

static gpu_status_t gpu_v_net(void *arg, size_t k, char *slot, gpu_inter_group_t *g)
{
    gpu_v_t *v = arg;
    return GPU_V_ALLGATHER == v->kind ? gpu_v_net_ring(v, k, slot, g)
                                      : gpu_v_net_root(v, k, slot, g);
}

/* the inter-node stage of a leader: nbytes of regions, in slices of v->s */
static gpu_status_t gpu_v_stage(gpu_v_t *v, size_t nbytes)
{
    gpu_hier_stage_t s = { .copies = gpu_v_copies, .net = gpu_v_net, .arg = v };
    gpu_inter_group_t g;

    s.nslices = gpu_v_slices(nbytes, v->s);
    if (0 == s.nslices) {
        return GPU_OK;
    }
    gpu_hier_group(v->h, &g);
    return gpu_hier_pipeline(v->h, &g, &s);
}

/* the layout's answer to whether these calls run here (every rank alike) */
static gpu_status_t gpu_v_fits(gpu_hier_t *h, gpu_hier_coll_t coll, size_t region, size_t *s)
{
    gpu_hier_model_t m;
    gpu_hier_model_of(h, &m);
    *s = gpu_hier_node_slice(&m, coll, region);
    return h->nnodes > GPU_INTER_MAX_MEMBERS || 0 == *s ? GPU_ERR_UNSUPPORTED : GPU_OK;
}

static gpu_status_t gpu_v_intra(gpu_hier_t *h, const char *what, gpu_status_t planned)
{
    return GPU_OK != planned ? planned
                             : gpu_engine_xchg(h->intra, what, &h->plan, GPU_OP_SUM, GPU_DT_U8,
                                               NULL);
}

/* the bytes a leader's stage moves: the root's, the largest other region */
static size_t gpu_v_stage_bytes(const gpu_v_t *v)
{
    const gpu_hier_t *h = v->h;
    size_t most = 0;
    if (h->node != v->root_node) {
        return v->blen[h->node];
    }
    for (int j = 0; j < h->nnodes; ++j) {
        if (j != v->root_node && v->blen[j] > most) {
            most = v->blen[j];
        }
    }
    return most;
}

/* gather and scatter alike: the call's layout, its leaders and every
 * rank's block (the root's from its counts, the others' own, or every one
 * where the counts are uniform); on failure nothing is left to free */
static gpu_status_t gpu_v_rooted(gpu_hier_t *h, gpu_v_t *v, gpu_hier_coll_t coll,
                                 const size_t *root_len, size_t mine, int root, int uniform)
{
    const int is_root = h->rank == root;
    gpu_status_t st = gpu_hier_begin(h);

    if (GPU_OK != st || GPU_OK != (st = gpu_v_fits(h, coll, 0, &v->s)) ||
        GPU_OK != (st = gpu_v_alloc(h, v))) {
        return st;
    }
    gpu_v_leaders(h, root);
    v->root_node = h->node_of[root];
    for (int r = 0; r < h->nranks; ++r) {
        v->len[r] = is_root ? root_len[r] : uniform || r == h->rank ? mine : 0;
    }
    st = gpu_v_counts(v, root, uniform);
    gpu_v_regions(v);
    if (GPU_OK != st) {
        gpu_v_free(v);
    }
    return st;
}

gpu_status_t gpu_hier_gatherv(gpu_hier_t *h, const void *sbuf, size_t slen, void *rbuf,
                              const size_t *rlen, const size_t *rdispl, int root, int uniform)
{
    gpu_v_t v = { .h = h, .kind = GPU_V_GATHER, .ubuf = rbuf, .udispl = rdispl };
    const int is_root = h->rank == root;
    gpu_status_t st = gpu_v_rooted(h, &v, GPU_HIER_GATHERV, rlen, slen, root, uniform);
    int leader;

    if (GPU_OK != st) {
        return st;
    }
    leader = h->members[h->node];
    if (h->lsize > 1) {
        /* the root's node straight into its output; elsewhere the leader's region */
        if (h->rank == leader && !is_root) {
            st = gpu_hier_dvec(h, v.blen[h->node] > 0 ? v.blen[h->node] : 1, &v.region);
        }
        for (int q = 0; q < h->lsize && is_root; ++q) {
            v.nd[q] = rdispl[gpu_v_rank(h, h->node, q)];
        }
        if (GPU_OK == st) {
            st = gpu_v_intra(h, "hier gatherv: intra gatherv",
                             gpu_plan_gatherv(&h->plan, h->local, h->lsize, h->local_of[leader],
                                              sbuf, slen, is_root ? rbuf : v.region, v.nl, v.nd));
        }
    } else if (GPU_OK == st && is_root) {
        st = NULL != sbuf ? gpu_hier_d2d(h, (char *) rbuf + rdispl[root], sbuf, slen) : GPU_OK;
    } else {
        v.region = (char *) sbuf;   /* alone on its node: sent from the input */
    }
    if (GPU_OK == st && h->rank == leader && h->nnodes > 1) {
        st = gpu_v_stage(&v, gpu_v_stage_bytes(&v));
    }
    gpu_v_free(&v);
    return st;
}

gpu_status_t gpu_hier_scatterv(gpu_hier_t *h, const void *sbuf, const size_t *slen,
                               const size_t *sdispl, void *rbuf, size_t rlen, int root,
                               int uniform)
{
    gpu_v_t v = { .h = h, .kind = GPU_V_SCATTER, .ubuf = (char *) sbuf, .udispl = sdispl };
    const int is_root = h->rank == root;
    gpu_status_t st = gpu_v_rooted(h, &v, GPU_HIER_SCATTERV, slen, rlen, root, uniform);
    int leader;

    if (GPU_OK != st) {
        return st;
    }
    leader = h->members[h->node];
    /* a leader's region: where its node's blocks land before the node step */
    if (GPU_OK == st && h->rank == leader && !is_root) {
        if (h->lsize > 1) {
            st = gpu_hier_dvec(h, v.blen[h->node] > 0 ? v.blen[h->node] : 1, &v.region);
        } else {
            v.region = rbuf;
        }
    }
    if (GPU_OK == st && h->rank == leader && h->nnodes > 1) {
        st = gpu_v_stage(&v, gpu_v_stage_bytes(&v));
    }
    if (GPU_OK == st && h->lsize > 1) {
        for (int q = 0; q < h->lsize && is_root; ++q) {
            v.nd[q] = sdispl[gpu_v_rank(h, h->node, q)];
        }
        st = gpu_v_intra(h, "hier scatterv: intra scatterv",
                         gpu_plan_scatterv(&h->plan, h->local, h->lsize, h->local_of[leader],
                                           is_root ? sbuf : v.region, v.nl, v.nd, rbuf, rlen));
    } else if (GPU_OK == st && is_root && NULL != rbuf) {
        st = gpu_hier_d2d(h, rbuf, (const char *) sbuf + sdispl[root], slen[root]);
    }
    gpu_v_free(&v);
    return st;
}

gpu_status_t gpu_hier_allgatherv(gpu_hier_t *h, const void *sbuf, void *rbuf, const size_t *rlen,
                                 const size_t *rdispl)
{
    gpu_v_t v = { .h = h, .kind = GPU_V_ALLGATHER, .root_node = -1 };
    const char *mine = NULL != sbuf ? sbuf : (const char *) rbuf + rdispl[h->rank];
    gpu_status_t st = gpu_hier_begin(h);
    size_t total, most = 0;

    if (GPU_OK != st || GPU_OK != (st = gpu_v_alloc(h, &v))) {
        return st;
    }
    gpu_v_leaders(h, -1);
    memcpy(v.len, rlen, sizeof(size_t) * (size_t) h->nranks);
    gpu_v_regions(&v);
    total = v.roff[h->nnodes - 1] + v.blen[h->nnodes - 1];
    for (int j = 0; j < h->nnodes; ++j) {
        most = v.blen[j] > most ? v.blen[j] : most;
    }
    if (0 == total || GPU_OK != (st = gpu_v_fits(h, GPU_HIER_ALLGATHERV, most, &v.s)) ||
        GPU_OK != (st = gpu_hier_dvec(h, total, &v.region))) {
        gpu_v_free(&v);
        return st;
    }
    /* my node's blocks into its region of P */
    for (int q = 0; q < h->lsize; ++q) {
        v.nd[q] += v.roff[h->node];
    }
    st = h->lsize > 1
             ? gpu_v_intra(h, "hier allgatherv: intra allgatherv",
                           gpu_plan_allgatherv(&h->plan, h->local, h->lsize, mine, v.region, v.nl,
                                               v.nd))
             : gpu_hier_d2d(h, v.region + v.roff[h->node], mine, rlen[h->rank]);
    if (GPU_OK == st && 0 == h->local && h->nnodes > 1) {
        st = gpu_v_stage(&v, most);
    }
    if (GPU_OK == st && h->lsize > 1) {
        st = gpu_v_intra(h, "hier allgatherv: intra bcast",
                         gpu_plan_bcast(&h->plan, h->local, h->lsize, 0, v.region, total, 0, NULL));
    }
    /* every block out of P to its displacement (mine too, unless in place) */
    for (int r = 0; r < h->nranks && GPU_OK == st; ++r) {
        if (rlen[r] > 0 && !(r == h->rank && NULL == sbuf)) {
            GPU_CUDA_CHECK(cudaMemcpyAsync((char *) rbuf + rdispl[r],
                                           v.region + v.roff[h->node_of[r]] + v.pos[r], rlen[r],
                                           cudaMemcpyDefault, h->stream), out);
        }
    }
    st = GPU_OK == st ? gpu_hier_sync(h, "hier allgatherv: blocks out") : st;
out:
    gpu_v_free(&v);
    return st;
}

gpu_status_t gpu_hier_reduce_scatterv(gpu_hier_t *h, const void *in, void *out,
                                      const size_t *counts, gpu_op_t op, gpu_dtype_t dt)
{
    const size_t esz = gpu_dtype_size(dt);
    size_t total = 0, mine = 0;
    char *tmp = NULL;
    gpu_status_t st;

    for (int r = 0; r < h->nranks; ++r) {
        mine = r == h->rank ? total : mine;
        total += counts[r];
    }
    if (0 == total) {
        return gpu_hier_begin(h);   /* keep the call sequence in step */
    }
    st = gpu_hier_dvec(h, total * esz, &tmp);
    if (GPU_OK == st) {
        st = gpu_hier_allreduce(h, NULL == in ? out : in, tmp, total, op, dt);
    }
    return GPU_OK == st ? gpu_hier_d2d(h, out, tmp + mine * esz, counts[h->rank] * esz) : st;
}
