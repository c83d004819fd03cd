#include "hier/gpu_hier_choice.h"

#include <stdio.h>
#include <string.h>

size_t gpu_hier_slot_bytes(size_t want)
{
    return (want < 65536 ? 65536 : want) / 64 * 64;
}

size_t gpu_hier_slice_len(const gpu_hier_model_t *m, size_t bytes, size_t esz)
{
    const size_t most = m->slot_bytes / esz * esz, chans = m->nchan > 1 ? (size_t) m->nchan : 1;
    size_t want;
    if (1 == chans) {
        return most;
    }
    /* four slices per channel, so every channel has its next slice staged
     * while it works, none below 256 KiB: a slice costs about 30 us of
     * messages whatever its size (2x H100, UCX shared memory, 8 channels:
     * 64 MiB in 1 MiB slices 14.9-17.6 GB/s, in 4 MiB 11.1-12.4; 4 MiB in
     * 64 KiB slices 4.0 GB/s, in 256 KiB 5.0-5.6) */
    want = (bytes + 4 * chans - 1) / (4 * chans);
    want = want < 262144 ? 262144 : want;
    want = (want + 64 * esz - 1) / (64 * esz) * (64 * esz);
    return want < most ? want : most;
}

size_t gpu_hier_node_slice(const gpu_hier_model_t *m, gpu_hier_coll_t coll, size_t region_bytes)
{
    if (m->nnodes < 2) {
        return 0;
    }
    if (GPU_HIER_ALLTOALL == coll || GPU_HIER_ALLTOALLV == coll || coll >= GPU_HIER_ALLTOALLW) {
        const int small = m->min_lsize > 0 ? m->min_lsize : m->lsize;
        return m->nranks > small ? m->slot_bytes / (2 * (size_t) (m->nranks - small)) : 0;
    }
    if (GPU_HIER_ALLGATHERV == coll || GPU_HIER_SCAN == coll || GPU_HIER_EXSCAN == coll) {
        /* the slot holds the same piece of every region, as allgather's */
        return gpu_hier_slice_len(m, region_bytes * (size_t) m->nnodes, 1) / (size_t) m->nnodes;
    }
    /* the root's slot holds the piece of every other node */
    return m->slot_bytes / (size_t) (m->nnodes - 1);
}

void gpu_hier_group_model(const gpu_hier_model_t *m, gpu_inter_group_t *g)
{
    g->n = m->nnodes;
    g->tmp_bytes = m->slot_bytes;
    g->piece = m->slot_bytes / 4;
    g->alpha_s = m->alpha_s;
    g->beta_Bps = m->beta_Bps;
    g->algo = m->algo;
}

/* a rank that is alone on its node copies its input instead of a node step */
static gpu_hier_step_t gpu_step(int lsize, gpu_hier_step_t step)
{
    return lsize > 1 ? step : GPU_HIER_STEP_COPY;
}

gpu_status_t gpu_hier_choose(const gpu_hier_model_t *s, gpu_hier_coll_t coll, size_t bytes,
                             size_t esz, gpu_hier_choice_t *c)
{
    const int L = s->lsize;
    gpu_inter_group_t g;
    size_t total, count;

    memset(c, 0, sizeof(*c));
    if (s->nnodes < 2 || L < 1 || 0 == esz || (unsigned) coll >= GPU_HIER_NCOLLS) {
        return GPU_ERR_INVALID;
    }
    memset(&g, 0, sizeof(g));
    gpu_hier_group_model(s, &g);
    switch (coll) {
    case GPU_HIER_ALLREDUCE:
    case GPU_HIER_REDUCE_SCATTER_BLOCK:
    case GPU_HIER_REDUCE_SCATTER:
        /* reduce_scatter(_block): the allreduce of every rank's block, then a
         * copy (reduce_scatter's plan takes every block alike) */
        total = GPU_HIER_ALLREDUCE != coll ? bytes * (size_t) s->nranks : bytes;
        count = total / esz;
        c->copy_after = GPU_HIER_ALLREDUCE != coll;
        c->rails = s->even;
        c->before_bytes = c->after_bytes = total;
        c->net = GPU_INTER_OP_ALLREDUCE;
        /* a rank alone on its node: its slices go from input to output
         * through the slots, no node step and no copy */
        if (s->even) {
            /* the largest shard: shards are count (q + 1) / L - count q / L */
            c->before = L > 1 ? GPU_HIER_STEP_REDUCE_SCATTER : GPU_HIER_STEP_NONE;
            c->after = L > 1 ? GPU_HIER_STEP_ALLGATHER : GPU_HIER_STEP_NONE;
            c->net_bytes = (count + (size_t) L - 1) / (size_t) L * esz;
        } else {
            c->before = L > 1 ? GPU_HIER_STEP_REDUCE : GPU_HIER_STEP_NONE;
            c->after = L > 1 ? GPU_HIER_STEP_BCAST : GPU_HIER_STEP_NONE;
            c->net_bytes = total;
        }
        c->slice = gpu_hier_slice_len(s, c->net_bytes, esz);
        break;
    case GPU_HIER_BCAST:
        c->after = L > 1 ? GPU_HIER_STEP_BCAST : GPU_HIER_STEP_NONE;
        c->after_bytes = bytes;
        c->net = GPU_INTER_OP_BCAST;
        c->net_bytes = bytes;
        c->slice = gpu_hier_slice_len(s, bytes, 1);
        break;
    case GPU_HIER_REDUCE:
        c->before = gpu_step(L, GPU_HIER_STEP_REDUCE);
        c->before_bytes = bytes;
        c->net = GPU_INTER_OP_REDUCE;
        c->net_bytes = bytes;
        c->slice = gpu_hier_slice_len(s, bytes, esz);
        break;
    case GPU_HIER_GATHER:
    case GPU_HIER_GATHERV:
    case GPU_HIER_SCATTER:
    case GPU_HIER_SCATTERV: {
        /* through node leaders, the root leading its node: a node's
         * region (its ranks' blocks) crosses once, between its leader and
         * the root; a rank alone on its node sends from its own buffer */
        const int gather = GPU_HIER_GATHER == coll || GPU_HIER_GATHERV == coll;
        c->before = gather && L > 1 ? GPU_HIER_STEP_GATHER : GPU_HIER_STEP_NONE;
        c->after = !gather && L > 1 ? GPU_HIER_STEP_SCATTER : GPU_HIER_STEP_NONE;
        c->before_bytes = c->after_bytes = (size_t) L * bytes;
        c->net = gather ? GPU_INTER_OP_GATHER : GPU_INTER_OP_SCATTER;
        c->net_bytes = (size_t) L * bytes;
        c->slice = gpu_hier_node_slice(s, coll, c->net_bytes);
        break;
    }
    case GPU_HIER_ALLGATHERV:
        /* node allgatherv into a buffer of every node's region, a ring of
         * regions among leaders, node bcast of that buffer, then each rank
         * copies the blocks out to its displacements (a bcast of the output
         * would write the leader's gaps over every other rank's) */
        c->slice = gpu_hier_node_slice(s, coll, (size_t) L * bytes);
        if (0 == c->slice) {
            return GPU_ERR_UNSUPPORTED;
        }
        c->before = gpu_step(L, GPU_HIER_STEP_ALLGATHER);
        c->before_bytes = (size_t) L * bytes;
        c->after = L > 1 ? GPU_HIER_STEP_BCAST : GPU_HIER_STEP_NONE;
        c->after_bytes = (size_t) s->nranks * bytes;
        c->net = GPU_INTER_OP_ALLGATHER;
        c->net_bytes = (size_t) L * bytes;
        c->copy_after = 1;
        break;
    case GPU_HIER_SCAN:
    case GPU_HIER_EXSCAN:
        /* node scan, the nodes' last ranks ring their totals and fold those
         * before them (the carry), node bcast of the carry, a fold */
        c->slice = gpu_hier_node_slice(s, coll, bytes) / esz * esz;
        if (0 == c->slice) {
            return GPU_ERR_UNSUPPORTED;
        }
        c->before = gpu_step(L, GPU_HIER_STEP_SCAN);
        c->before_bytes = c->after_bytes = bytes;
        c->after = L > 1 ? GPU_HIER_STEP_BCAST : GPU_HIER_STEP_NONE;
        c->net = GPU_INTER_OP_ALLGATHER;
        c->net_bytes = bytes;
        c->fold_after = 1;
        break;
    case GPU_HIER_ALLTOALL:
    case GPU_HIER_ALLTOALLV:
    case GPU_HIER_ALLTOALLW:
    case GPU_HIER_NEIGHBOR_ALLGATHER:
    case GPU_HIER_NEIGHBOR_ALLGATHERV:
    case GPU_HIER_NEIGHBOR_ALLTOALL:
    case GPU_HIER_NEIGHBOR_ALLTOALLV:
    case GPU_HIER_NEIGHBOR_ALLTOALLW:
        /* the node's pairs through the engine, every remote pair straight
         * over the transport: no leader, no node step after */
        c->pairs = 1;
        c->slice = gpu_hier_node_slice(s, coll, bytes);
        if (0 == c->slice) {
            return GPU_ERR_UNSUPPORTED;
        }
        c->before = gpu_step(L, GPU_HIER_STEP_ALLTOALL);
        c->before_bytes = (size_t) L * bytes;
        c->net = GPU_INTER_OP_ALLTOALL;
        c->net_bytes = bytes;
        break;
    default:
        /* allgather: a slice is the same bytes of every rank's block, the
         * leaders ring node blocks, and each node broadcasts the whole */
        c->slice = gpu_hier_slice_len(s, bytes * (size_t) s->nranks, 1) / (size_t) s->nranks;
        if (0 == c->slice) {
            return GPU_ERR_UNSUPPORTED;
        }
        c->before = gpu_step(L, GPU_HIER_STEP_ALLGATHER);
        c->before_bytes = (size_t) L * bytes;
        c->after = L > 1 ? GPU_HIER_STEP_BCAST : GPU_HIER_STEP_NONE;
        c->after_bytes = (size_t) s->nranks * bytes;
        c->net = GPU_INTER_OP_ALLGATHER;
        c->net_bytes = bytes;
        break;
    }
    c->nslices = 0 == c->net_bytes ? 0 : (c->net_bytes + c->slice - 1) / c->slice;
    c->last = 0 == c->nslices ? 0 : c->net_bytes - (c->nslices - 1) * c->slice;
    c->net_slice = c->nslices > 1 ? c->slice : c->last;
    c->net_last = c->last;
    if (GPU_HIER_ALLGATHER == coll || c->pairs) {
        /* allgather: a slice is one rank's part of a node block; alltoall: one
         * pair's piece, L of them to every other node */
        c->net_slice *= (size_t) L;
        c->net_last *= (size_t) L;
    }
    c->algo = c->algo_last = GPU_INTER_AUTO;
    if (GPU_INTER_OP_ALLREDUCE == c->net) {
        c->algo = gpu_inter_allreduce_choice(&g, c->net_slice);
        c->algo_last = gpu_inter_allreduce_choice(&g, c->net_last);
        /* two nodes swap their slices in one round: a kernel folds them */
        c->device_fold = s->device_fold && 2 == s->nnodes && GPU_INTER_RD == c->algo &&
                         GPU_INTER_RD == c->algo_last;
    }
    return GPU_OK;
}

const char *gpu_hier_coll_name(gpu_hier_coll_t coll)
{
    static const char *const names[GPU_HIER_NCOLLS] = { "allreduce", "bcast", "reduce",
                                                        "allgather", "reduce_scatter_block",
                                                        "gather", "gatherv", "scatter",
                                                        "scatterv", "allgatherv", "alltoall",
                                                        "alltoallv", "reduce_scatter", "scan",
                                                        "exscan", "alltoallw",
                                                        "neighbor_allgather",
                                                        "neighbor_allgatherv",
                                                        "neighbor_alltoall",
                                                        "neighbor_alltoallv",
                                                        "neighbor_alltoallw" };
    return (unsigned) coll < GPU_HIER_NCOLLS ? names[coll] : "?";
}

const char *gpu_hier_step_name(gpu_hier_step_t step)
{
    static const char *const names[] = { "", "copy", "reduce-scatter", "allgather", "reduce",
                                         "bcast", "gather", "scatter", "alltoall", "scan" };
    return (unsigned) step < sizeof(names) / sizeof(names[0]) ? names[step] : "?";
}

const char *gpu_hier_net_name(gpu_inter_op_t op, gpu_inter_algo_t algo)
{
    switch (op) {
    case GPU_INTER_OP_ALLREDUCE:
        return GPU_INTER_RD == algo ? "recursive-doubling" : "ring";
    case GPU_INTER_OP_ALLGATHER:
        return "ring";
    case GPU_INTER_OP_GATHER:
        return "to-root";
    case GPU_INTER_OP_SCATTER:
        return "from-root";
    case GPU_INTER_OP_ALLTOALL:
        return "direct";
    default:
        return "binomial";
    }
}

void gpu_hier_label(const gpu_hier_choice_t *c, char *buf, size_t len)
{
    char net[96];

    if (c->nslices > 1 && c->algo != c->algo_last) {
        snprintf(net, sizeof(net), "%s (last slice %s)", gpu_hier_net_name(c->net, c->algo),
                 gpu_hier_net_name(c->net, c->algo_last));
    } else {
        snprintf(net, sizeof(net), "%s%s", gpu_hier_net_name(c->net, c->algo),
                 c->device_fold ? " (device fold)" : "");
    }
    snprintf(buf, len, "hier %s: %s%s%s%s%s%s", c->rails ? "rails" : c->pairs ? "pairs" : "leaders",
                 gpu_hier_step_name(c->before), GPU_HIER_STEP_NONE != c->before ? "/" : "", net,
                 GPU_HIER_STEP_NONE != c->after ? "/" : "", gpu_hier_step_name(c->after),
                 c->copy_after ? " + copy" : c->fold_after ? " + fold" : "");
}
