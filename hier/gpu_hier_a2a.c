/*
 * The hierarchy's alltoallv (alltoall is its uniform case): every pair of
 * ranks exchanges its own block, so nothing is gathered to a leader.
 *
 *   within a node   the node engine's alltoallv among the node's ranks
 *                   (the rank's own block included)
 *   across nodes    each rank straight with every rank of the other nodes,
 *                   over the transport: slice k is bytes [k s, k s + s) of
 *                   every remote block, the pieces to send side by side in
 *                   the first half of the slot, the pieces received in the
 *                   second half
 *
 * Both ends of a pair know its length (MPI's matching signatures), and s
 * depends on the layout and the slot alone (gpu_hier_node_slice: a slot
 * holds a piece to and from every remote rank of the rank with the most of
 * them), so both cut a pair's block alike.  A rank runs as many slices as
 * its longest remote block needs; slice k is channel k mod C's everywhere
 * and a channel's messages match in order (gpu_hier_chan.c), so the pieces
 * of every pair meet slice for slice.  Bytes outside the blocks are never
 * written.  In place (sbuf NULL), the blocks to send are copied out of the
 * receive buffer first (the device temporary), as MPI_Alltoallw allows.
 */
#include "hier/gpu_hier_internal.h"

#include <stdlib.h>
#include <string.h>

#include "engine/gpu_plan.h"

enum { GPU_A2A_PH = 0x24 };   /* this file's phase under the call tag */

typedef struct {
    gpu_hier_t *h;
    const char *sbuf;
    char *rbuf;
    const size_t *slen, *sdispl, *rlen, *rdispl;
    size_t s;        /* a block's piece per slice */
    size_t rbase;    /* the received pieces' half of the slot */
} gpu_a2a_t;

static size_t gpu_a2a_piece(size_t total, size_t s, size_t k)
{
    return k * s < total ? (total - k * s < s ? total - k * s : s) : 0;
}

static int gpu_a2a_remote(const gpu_a2a_t *a, int q)
{
    return a->h->node_of[q] != a->h->node;
}

static int gpu_a2a_copies(void *arg, size_t k, int up, gpu_hier_copy_t *c)
{
    gpu_a2a_t *a = arg;
    const gpu_hier_t *h = a->h;
    const size_t *len = up ? a->rlen : a->slen;
    size_t at = up ? a->rbase : 0;
    int n = 0;
    for (int q = 0; q < h->nranks; ++q) {
        const size_t l = gpu_a2a_remote(a, q) ? gpu_a2a_piece(len[q], a->s, k) : 0;
        if (l > 0) {
            c[n].dev = up ? a->rbuf + a->rdispl[q] + k * a->s
                          : (char *) a->sbuf + a->sdispl[q] + k * a->s;
            c[n].slot_off = at;
            c[n].len = l;
            at += l;
            ++n;
        }
    }
    return n;
}

/* every remote pair's pieces of slice k at once (read-only on a: channels
 * run several slices together) */
static gpu_status_t gpu_a2a_net(void *arg, size_t k, char *slot, gpu_inter_group_t *g)
{
    gpu_a2a_t *a = arg;
    const gpu_hier_t *h = a->h;
    const uint32_t tag = g->tag | GPU_A2A_PH;
    gpu_net_req_t *r = malloc(2 * (size_t) h->nranks * sizeof(*r));
    size_t sat = 0, rat = a->rbase;
    gpu_status_t st = GPU_OK;
    int n = 0;

    if (NULL == r) {
        return GPU_ERR_NO_MEMORY;
    }
    /* receives first, so that no rendezvous waits for a receive not yet
     * posted; every request is posted before any wait, since the peers
     * post theirs in their own order */
    for (int pass = 0; pass < 2 && GPU_OK == st; ++pass) {
        for (int q = 0; q < h->nranks && GPU_OK == st; ++q) {
            const size_t l = gpu_a2a_remote(a, q)
                                 ? gpu_a2a_piece(0 == pass ? a->rlen[q] : a->slen[q], a->s, k)
                                 : 0;
            if (0 == l) {
                continue;
            }
            st = 0 == pass ? g->net->irecv(g->conn, q, slot + rat, l, tag, g->mem, &r[n])
                           : g->net->isend(g->conn, q, slot + sat, l, tag, g->mem, &r[n]);
            *(0 == pass ? &rat : &sat) += l;
            n += GPU_OK == st;
        }
    }
    if (GPU_OK != st) {
        g->net->cancel(g->conn, r, n);
    } else if (n > 0) {
        st = g->net->waitall(g->conn, r, n, "inter-node alltoall pairs");
    }
    free(r);
    return st;
}

gpu_status_t gpu_hier_alltoallv(gpu_hier_t *h, const void *sbuf, const size_t *slen,
                                const size_t *sdispl, void *rbuf, const size_t *rlen,
                                const size_t *rdispl)
{
    gpu_a2a_t a = { .h = h, .sbuf = sbuf, .rbuf = rbuf, .slen = slen, .sdispl = sdispl,
                    .rlen = rlen, .rdispl = rdispl };
    gpu_hier_stage_t s = { .copies = gpu_a2a_copies, .net = gpu_a2a_net, .arg = &a };
    const int L = h->lsize;
    gpu_hier_model_t m;
    gpu_inter_group_t g;
    size_t most = 0, *ll;
    gpu_status_t st = gpu_hier_begin(h);

    if (GPU_OK != st) {
        return st;
    }
    gpu_hier_model_of(h, &m);
    a.s = gpu_hier_node_slice(&m, GPU_HIER_ALLTOALLV, 0);
    if (0 == a.s) {
        return GPU_ERR_UNSUPPORTED;   /* every rank alike: the layout */
    }
    if (NULL == sbuf) {
        /* in place: the blocks to send are the receive layout's; they move
         * out of a copy, since the pairs overwrite them in any order */
        size_t span = 0;
        char *copy;
        for (int q = 0; q < h->nranks; ++q) {
            span = rlen[q] > 0 && rdispl[q] + rlen[q] > span ? rdispl[q] + rlen[q] : span;
        }
        st = gpu_hier_dvec(h, span > 0 ? span : 1, &copy);
        st = GPU_OK == st ? gpu_hier_d2d(h, copy, rbuf, span) : st;
        if (GPU_OK != st) {
            return st;
        }
        a.sbuf = sbuf = copy;
        a.slen = slen = rlen;
        a.sdispl = sdispl = rdispl;
    }
    a.rbase = m.slot_bytes / 2;   /* s times the most remote ranks a rank has fits a half */
    /* this node's pairs, my own block included, through the engine */
    ll = malloc(4 * (size_t) L * sizeof(size_t));
    if (NULL == ll) {
        return GPU_ERR_NO_MEMORY;
    }
    for (int j = 0; j < L; ++j) {
        const int q = h->rank_at[h->node * h->max_lsize + j];
        ll[j] = slen[q];
        ll[L + j] = sdispl[q];
        ll[2 * L + j] = rlen[q];
        ll[3 * L + j] = rdispl[q];
    }
    if (L > 1) {
        st = gpu_plan_alltoallv(&h->plan, h->local, L, sbuf, ll, ll + L, rbuf, ll + 2 * L,
                                ll + 3 * L);
        st = GPU_OK == st ? gpu_engine_xchg(h->intra, "hier alltoallv: intra alltoallv",
                                            &h->plan, GPU_OP_SUM, GPU_DT_U8, NULL)
                          : st;
    } else {
        st = gpu_hier_d2d(h, (char *) rbuf + rdispl[h->rank],
                          (const char *) sbuf + sdispl[h->rank], slen[h->rank]);
    }
    free(ll);
    for (int q = 0; q < h->nranks; ++q) {
        if (gpu_a2a_remote(&a, q)) {
            most = slen[q] > most ? slen[q] : most;
            most = rlen[q] > most ? rlen[q] : most;
        }
    }
    if (GPU_OK == st && most > 0) {
        s.nslices = (most + a.s - 1) / a.s;
        gpu_hier_group(h, &g);
        st = gpu_hier_pipeline(h, &g, &s);
    }
    return st;
}
