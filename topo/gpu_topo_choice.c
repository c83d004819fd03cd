/*
 * The choice per size (see gpu_topo_choice.h for who reads it and why).
 */
#include "topo/gpu_topo_choice.h"

size_t gpu_topo_auto_persist_max(int nranks)
{
    /* the put path beats the resident kernel's half-rate lines above 1 MiB
     * per peer from 4 ranks (4x H100, a 2x2 periodic halo of 1 MiB per
     * neighbour: 60.6 us resident, 44.0 put), not below 2 MiB on 2 (2x
     * H100, a 4 MiB allgather: 23.1 us resident, 26.9 put):
     * docs/results/h100x4_2026-11-26_nbr_put */
    return nranks >= 4 ? (size_t) 1024 * 1024 : (size_t) 2048 * 1024;
}

size_t gpu_topo_auto_persist_reduce_max(int nranks)
{
    /* where the resident kernel's half-rate lines still beat the launched
     * kernels (docs/results/h100x4_2026-11-26_allreduce_thresholds): at 4
     * ranks to 512 KiB a peer, where a rank takes in 1.5 MiB (a 2 MiB
     * reduce_scatter on 4x H100: 26.2 us against 42.1 in the exchange
     * kernel, NCCL 31.4: h100x4_2026-11-27_s14 b/; a 1 MiB allreduce 45 us
     * against 29 two-shot); more ranks are not measured */
    return nranks <= 3    ? (size_t) 1024 * 1024
           : nranks == 4 ? (size_t) 512 * 1024
                         : (size_t) 256 * 1024;
}

int gpu_topo_auto_put_fold_nblocks(int nranks, int xchg_nblocks)
{
    /* from 4 ranks the fold in 32 blocks (4x H100 reduce_scatter 4-128 MiB
     * 1-5% faster than the exchange kernel, which was 4-12% faster than the
     * fold in 128: docs/results/h100x4_2026-11-27_s14 b/, s13 e/, f/); at 3
     * ranks 32 blocks were up to 1.7x slower (s14 c/): the copies' count */
    return nranks <= 3 ? xchg_nblocks : 32;
}

void gpu_topo_limits_default(int nranks, gpu_topo_limits_t *l)
{
    l->persist_max = gpu_topo_auto_persist_max(nranks);
    l->persist_reduce_max = gpu_topo_auto_persist_reduce_max(nranks);
    l->oneshot_max = GPU_TOPO_DEF_ONESHOT_MAX;
    l->put_min = GPU_TOPO_DEF_PUT_MIN;
    l->nblocks = GPU_TOPO_DEF_NBLOCKS;
    l->oneshot_blocks = GPU_TOPO_DEF_ONESHOT_BLOCKS;
    l->persist_blocks = GPU_TOPO_DEF_PERSIST_BLOCKS;
    l->xchg_nblocks = GPU_TOPO_DEF_XCHG_NBLOCKS;
    l->put_fold_nblocks = gpu_topo_auto_put_fold_nblocks(nranks, l->xchg_nblocks);
    l->reduce_twoshot_min = GPU_TOPO_DEF_REDUCE_TWOSHOT_MIN;
    l->reduce_chain_min = GPU_TOPO_DEF_REDUCE_CHAIN_MIN;
    l->bcast_chain_min = GPU_TOPO_DEF_BCAST_CHAIN_MIN;
}

gpu_reduce_way_t gpu_topo_reduce_way(int n, size_t bytes, int blocking, int paced, int ts,
                                     size_t ts_min, size_t chain_min)
{
    if (n <= 2 || !blocking || paced) {
        return GPU_REDUCE_DIRECT;
    }
    if (bytes >= chain_min) {
        return GPU_REDUCE_CHAIN;
    }
    return ts && 0 != ts_min && bytes >= ts_min ? GPU_REDUCE_TWOSHOT : GPU_REDUCE_DIRECT;
}

const char *gpu_topo_choice_coll_name(gpu_choice_coll_t c)
{
    static const char *names[] = { "allreduce", "bcast", "reduce", "allgather",
                                   "reduce_scatter", "alltoall" };
    return (unsigned) c < GPU_CHOICE_NCOLLS ? names[c] : "?";
}

static void gpu_choice_set(gpu_topo_choice_t *c, const char *label, const char *proto,
                           int nblocks)
{
    c->label = label;
    c->proto = proto;
    c->nblocks = nblocks;
}

/* A plan of the exchange kernel's kind (every collective but allreduce and
 * the reduce's two ways): the resident kernel, the put path, or the
 * exchange kernel, as gpu_engine_xchg tries them. */
static void gpu_choice_exchange(const gpu_topo_limits_t *l, int reduces, gpu_topo_choice_t *c)
{
    const size_t res_max = reduces && l->persist_reduce_max < l->persist_max
                               ? l->persist_reduce_max
                               : l->persist_max;
    if (c->pair > 0 && c->pair <= res_max) {
        gpu_choice_set(c, "persistent", "LL", l->persist_blocks);
    } else if (0 != l->put_min && c->pair >= l->put_min && (!reduces || l->put_fold_nblocks > 0)) {
        gpu_choice_set(c, "put", "simple", reduces ? l->put_fold_nblocks : l->xchg_nblocks);
    } else {
        gpu_choice_set(c, reduces ? "exchange-reduce" : "exchange-copy", "simple",
                       l->xchg_nblocks);
    }
}

void gpu_topo_choose(const gpu_topo_limits_t *l, int nranks, gpu_choice_coll_t coll,
                     size_t bytes, gpu_topo_choice_t *c)
{
    const size_t n = nranks > 0 ? (size_t) nranks : 1;
    const size_t res_reduce = l->persist_reduce_max < l->persist_max ? l->persist_reduce_max
                                                                     : l->persist_max;
    c->pair = bytes;
    switch (coll) {
    case GPU_CHOICE_ALLREDUCE:
        if (bytes <= res_reduce) {
            gpu_choice_set(c, "persistent", "LL", l->persist_blocks);
        } else if (bytes <= l->oneshot_max) {
            gpu_choice_set(c, "one-shot", "LL", l->oneshot_blocks);
        } else {
            gpu_choice_set(c, "two-shot", "simple", l->nblocks);
        }
        return;
    case GPU_CHOICE_REDUCE:
        switch (gpu_topo_reduce_way(nranks, bytes, 1, 0, bytes > res_reduce,
                                    l->reduce_twoshot_min, l->reduce_chain_min)) {
        case GPU_REDUCE_CHAIN:
            gpu_choice_set(c, "chain", "simple", l->xchg_nblocks);
            return;
        case GPU_REDUCE_TWOSHOT:
            gpu_choice_set(c, "two-shot to root", "simple", l->nblocks);
            return;
        default:
            gpu_choice_exchange(l, 1, c);
            return;
        }
    case GPU_CHOICE_BCAST:
        if (nranks > 2 && bytes >= l->bcast_chain_min) {
            gpu_choice_set(c, "chain", "simple", l->xchg_nblocks);
        } else {
            gpu_choice_exchange(l, 0, c);
        }
        return;
    case GPU_CHOICE_REDUCE_SCATTER:
        c->pair = bytes / n;
        gpu_choice_exchange(l, 1, c);
        return;
    default:   /* allgather, alltoall: a block per pair */
        c->pair = bytes / n;
        gpu_choice_exchange(l, 0, c);
        return;
    }
}
