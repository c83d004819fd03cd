/*
 * The inter-node algorithms' alpha-beta model (gpu_inter.h).  Pure: the
 * runtime's allreduce choice and gpucoll-topo's prices both come from
 * here, so a plan printed before a run names what the run will do.
 */
#include "inter/gpu_inter.h"

/* ceil(log2 n): rounds of a binomial tree over n members */
static int gpu_rounds(int n)
{
    int d = 0;
    while ((1 << d) < n) {
        ++d;
    }
    return d;
}

static double gpu_pieces(size_t bytes, size_t piece)
{
    return 0 == piece || piece >= bytes ? 1.0 : (double) ((bytes + piece - 1) / piece);
}

static double gpu_beta(const gpu_inter_group_t *g)
{
    return g->beta_Bps > 0 ? g->beta_Bps : 1e10;
}

/* ring: reduce-scatter then allgather, 2 (n - 1) steps of a 1/n segment;
 * recursive doubling: a swap of the whole buffer per round, plus a fold
 * and an unfold when n is not a power of two */
static gpu_inter_terms_t gpu_allreduce_terms(int n, gpu_inter_algo_t algo, double s)
{
    gpu_inter_terms_t t;
    int p = 1, steps = 0;
    while (2 * p <= n) {
        p *= 2;
        ++steps;
    }
    steps += p < n ? 2 : 0;
    if (GPU_INTER_RD == algo) {
        t.msgs = steps;
        t.bytes = steps * s;
    } else {
        t.msgs = 2.0 * (n - 1);
        t.bytes = 2.0 * (n - 1) * s / n;
    }
    return t;
}

double gpu_inter_time_s(const gpu_inter_group_t *g, gpu_inter_terms_t t)
{
    return t.msgs * g->alpha_s + t.bytes / gpu_beta(g);
}

gpu_inter_algo_t gpu_inter_allreduce_choice(const gpu_inter_group_t *g, size_t bytes)
{
    if (GPU_INTER_AUTO != g->algo) {
        return g->algo;
    }
    const double rd = gpu_inter_time_s(g, gpu_allreduce_terms(g->n, GPU_INTER_RD, (double) bytes));
    const double ring = gpu_inter_time_s(g, gpu_allreduce_terms(g->n, GPU_INTER_RING,
                                                                (double) bytes));
    return rd <= ring ? GPU_INTER_RD : GPU_INTER_RING;
}

gpu_inter_terms_t gpu_inter_terms(const gpu_inter_group_t *g, gpu_inter_op_t op, size_t bytes)
{
    const int n = g->n, d = gpu_rounds(n);
    const double s = (double) bytes;
    gpu_inter_terms_t t = { 0.0, 0.0 };

    if (n <= 1 || 0 == bytes) {
        return t;
    }
    switch (op) {
    case GPU_INTER_OP_ALLREDUCE:
        return gpu_allreduce_terms(n, gpu_inter_allreduce_choice(g, bytes), s);
    case GPU_INTER_OP_ALLGATHER:
        t.msgs = n - 1;
        t.bytes = (n - 1) * s;
        return t;
    case GPU_INTER_OP_BCAST:
        /* the root sends every piece to its d children over one link, and the
         * last piece still descends the tree behind it */
        t.msgs = gpu_pieces(bytes, g->piece) + d - 1;
        t.bytes = d * s;
        return t;
    case GPU_INTER_OP_GATHER:
    case GPU_INTER_OP_SCATTER:
    case GPU_INTER_OP_ALLTOALL:
        /* the root's link carries every other member's piece (alltoall: a
         * rank's, its messages to one node counted as one: they leave together) */
        t.msgs = n - 1;
        t.bytes = (n - 1) * s;
        return t;
    default:
        /* the root folds in d children, each in pieces of the fold space */
        t.msgs = d * gpu_pieces(bytes, g->tmp_bytes);
        t.bytes = d * s;
        return t;
    }
}
