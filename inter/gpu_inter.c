#include "inter/gpu_inter.h"

/*
 * Message matching: every message of one call carries the call's tag plus
 * a phase number; messages between one pair in one phase are matched in
 * the order both sides post them (UCX endpoints are ordered), which is
 * how the pieces of a segment find their buffers.
 */
enum { GPU_PH_RS = 1, GPU_PH_AG = 2, GPU_PH_RD_FOLD = 3, GPU_PH_RD = 4, GPU_PH_RD_UNFOLD = 5,
       GPU_PH_BCAST = 6, GPU_PH_REDUCE = 7 };

static uint32_t gpu_tag(const gpu_inter_group_t *g, int phase)
{
    return g->tag | (uint32_t) phase;
}

/* post a receive from member `from` and a send to member `to` (-1 or an
 * empty length: none); *k counts the requests in r */
static gpu_status_t gpu_post(gpu_inter_group_t *g, int phase, int to, const void *sb, size_t sl,
                             int from, void *rb, size_t rl, gpu_net_req_t *r, int *k)
{
    gpu_status_t st;
    if (from >= 0 && rl > 0) {
        st = g->net->irecv(g->conn, g->ranks[from], rb, rl, gpu_tag(g, phase), g->mem, &r[*k]);
        if (GPU_OK != st) {
            g->net->cancel(g->conn, r, *k);
            return st;
        }
        ++*k;
    }
    if (to >= 0 && sl > 0) {
        st = g->net->isend(g->conn, g->ranks[to], sb, sl, gpu_tag(g, phase), g->mem, &r[*k]);
        if (GPU_OK != st) {
            g->net->cancel(g->conn, r, *k);
            return st;
        }
        ++*k;
    }
    return GPU_OK;
}

/* the same, waited for */
static gpu_status_t gpu_xfer(gpu_inter_group_t *g, int phase, int to, const void *sb, size_t sl,
                             int from, void *rb, size_t rl, const char *what)
{
    gpu_net_req_t r[2];
    int k = 0;
    gpu_status_t st = gpu_post(g, phase, to, sb, sl, from, rb, rl, r, &k);
    return GPU_OK == st && k > 0 ? g->net->waitall(g->conn, r, k, what) : st;
}

static size_t gpu_piece_elems(const gpu_inter_group_t *g, size_t esz)
{
    return g->tmp_bytes / esz;
}

static int gpu_mod(int a, int n)
{
    return ((a % n) + n) % n;
}

static size_t gpu_piece(size_t n, size_t pe, size_t j)
{
    return j * pe < n ? (n - j * pe < pe ? n - j * pe : pe) : 0;
}

gpu_status_t gpu_inter_reduce_scatter(gpu_inter_group_t *g, void *buf, const size_t *seg_off,
                                      const size_t *seg_count, gpu_op_t op, gpu_dtype_t dt)
{
    /* fold space in two halves: piece j is folded while piece j+1 travels */
    const size_t esz = gpu_dtype_size(dt), pe = g->tmp_bytes / 2 / esz, half = pe * esz;
    const int n = g->n, right = gpu_mod(g->me + 1, n), left = gpu_mod(g->me - 1, n);
    char *b = buf;
    gpu_status_t st = GPU_OK;

    if (0 == pe) {
        GPU_ERROR("inter reduce_scatter: %zu bytes of fold space hold no 2 %zu-byte elements",
                  g->tmp_bytes, esz);
        return GPU_ERR_INVALID;
    }
    /* step s sends segment me-s-1 on and folds segment me-s-2 in, so that
     * after n-1 steps member i holds all of segment i */
    for (int s = 0; s < n - 1 && GPU_OK == st; ++s) {
        const int ss = gpu_mod(g->me - s - 1, n), rs = gpu_mod(g->me - s - 2, n);
        const size_t ns = seg_count[ss], nr = seg_count[rs];
        const size_t np = ((ns > nr ? ns : nr) + pe - 1) / pe;
        gpu_net_req_t r[2];
        int k = 0;
        if (np > 0) {
            st = gpu_post(g, GPU_PH_RS, right, b + seg_off[ss] * esz, gpu_piece(ns, pe, 0) * esz,
                          left, g->tmp, gpu_piece(nr, pe, 0) * esz, r, &k);
        }
        for (size_t j = 0; j < np && GPU_OK == st; ++j) {
            const size_t cr = gpu_piece(nr, pe, j);
            if (k > 0) {
                st = g->net->waitall(g->conn, r, k, "inter-node reduce-scatter");
            }
            k = 0;
            if (GPU_OK == st && j + 1 < np) {
                st = gpu_post(g, GPU_PH_RS, right, b + (seg_off[ss] + (j + 1) * pe) * esz,
                              gpu_piece(ns, pe, j + 1) * esz, left, g->tmp + ((j + 1) & 1) * half,
                              gpu_piece(nr, pe, j + 1) * esz, r, &k);
            }
            if (GPU_OK == st && cr > 0) {
                st = g->red->reduce(g->red_ctx, b + (seg_off[rs] + j * pe) * esz,
                                    g->tmp + (j & 1) * half, cr, op, dt);
            }
        }
        if (GPU_OK != st && k > 0) {
            g->net->cancel(g->conn, r, k);
        }
    }
    return st;
}

gpu_status_t gpu_inter_allgatherv(gpu_inter_group_t *g, void *buf, const size_t *off,
                                  const size_t *len)
{
    const int n = g->n, right = gpu_mod(g->me + 1, n), left = gpu_mod(g->me - 1, n);
    char *b = buf;
    gpu_status_t st = GPU_OK;

    for (int s = 0; s < n - 1 && GPU_OK == st; ++s) {
        const int sb = gpu_mod(g->me - s, n), rb = gpu_mod(g->me - s - 1, n);
        st = gpu_xfer(g, GPU_PH_AG, right, b + off[sb], len[sb], left, b + off[rb], len[rb],
                      "inter-node allgather");
    }
    return st;
}

/* exchange the whole buffer with a partner and fold, in pieces */
static gpu_status_t gpu_swap_fold(gpu_inter_group_t *g, int phase, int peer, char *b, size_t count,
                                  gpu_op_t op, gpu_dtype_t dt)
{
    const size_t esz = gpu_dtype_size(dt), pe = gpu_piece_elems(g, esz);
    gpu_status_t st = GPU_OK;
    for (size_t j = 0; j < count && GPU_OK == st; j += pe) {
        const size_t c = count - j < pe ? count - j : pe;
        st = gpu_xfer(g, phase, peer, b + j * esz, c * esz, peer, g->tmp, c * esz,
                      "inter-node allreduce (recursive doubling)");
        if (GPU_OK == st) {
            st = g->red->reduce(g->red_ctx, b + j * esz, g->tmp, c, op, dt);
        }
    }
    return st;
}

/* fold a partner's buffer into mine (recv) or hand mine over (send), in pieces */
static gpu_status_t gpu_pass_fold(gpu_inter_group_t *g, int phase, int peer, int recv, char *b,
                                  size_t count, gpu_op_t op, gpu_dtype_t dt, const char *what)
{
    const size_t esz = gpu_dtype_size(dt), pe = gpu_piece_elems(g, esz);
    gpu_status_t st = GPU_OK;
    for (size_t j = 0; j < count && GPU_OK == st; j += pe) {
        const size_t c = count - j < pe ? count - j : pe;
        if (recv) {
            st = gpu_xfer(g, phase, -1, NULL, 0, peer, g->tmp, c * esz, what);
            if (GPU_OK == st) {
                st = g->red->reduce(g->red_ctx, b + j * esz, g->tmp, c, op, dt);
            }
        } else {
            st = gpu_xfer(g, phase, peer, b + j * esz, c * esz, -1, NULL, 0, what);
        }
    }
    return st;
}

static gpu_status_t gpu_allreduce_rd(gpu_inter_group_t *g, char *b, size_t count, gpu_op_t op,
                                     gpu_dtype_t dt)
{
    const size_t bytes = count * gpu_dtype_size(dt);
    int p = 1, rem, vme;
    gpu_status_t st = GPU_OK;

    while (2 * p <= g->n) {
        p *= 2;
    }
    rem = g->n - p;
    /* members beyond a power of two fold into a partner first */
    if (g->me < 2 * rem) {
        const int odd = g->me & 1;
        st = gpu_pass_fold(g, GPU_PH_RD_FOLD, odd ? g->me - 1 : g->me + 1, odd, b, count, op, dt,
                           "inter-node allreduce (fold)");
        vme = odd ? g->me / 2 : -1;
    } else {
        vme = g->me - rem;
    }
    for (int mask = 1; vme >= 0 && mask < p && GPU_OK == st; mask <<= 1) {
        const int vp = vme ^ mask, peer = vp < rem ? 2 * vp + 1 : vp + rem;
        st = gpu_swap_fold(g, GPU_PH_RD, peer, b, count, op, dt);
    }
    if (GPU_OK == st && g->me < 2 * rem) {
        const int odd = g->me & 1;
        st = gpu_xfer(g, GPU_PH_RD_UNFOLD, odd ? g->me - 1 : -1, b, bytes,
                      odd ? -1 : g->me + 1, b, bytes, "inter-node allreduce (unfold)");
    }
    return st;
}

gpu_status_t gpu_inter_swap(gpu_inter_group_t *g, const void *sbuf, void *rbuf, size_t bytes)
{
    if (2 != g->n) {
        GPU_ERROR("inter swap: %d members, not 2", g->n);
        return GPU_ERR_INVALID;
    }
    /* recursive doubling's one round, its fold left to the caller */
    return gpu_xfer(g, GPU_PH_RD, 1 - g->me, sbuf, bytes, 1 - g->me, rbuf, bytes,
                    "inter-node swap (device fold)");
}

gpu_status_t gpu_inter_allreduce(gpu_inter_group_t *g, void *buf, size_t count, gpu_op_t op,
                                 gpu_dtype_t dt)
{
    const size_t esz = gpu_dtype_size(dt);
    size_t off[GPU_INTER_MAX_MEMBERS], cnt[GPU_INTER_MAX_MEMBERS], boff[GPU_INTER_MAX_MEMBERS],
        blen[GPU_INTER_MAX_MEMBERS];
    gpu_status_t st;

    if (g->n <= 1 || 0 == count) {
        return GPU_OK;
    }
    if (g->n > GPU_INTER_MAX_MEMBERS) {
        GPU_ERROR("inter allreduce: %d members, at most %d", g->n, GPU_INTER_MAX_MEMBERS);
        return GPU_ERR_UNSUPPORTED;
    }
    if (GPU_INTER_RD == gpu_inter_allreduce_choice(g, count * esz)) {
        return gpu_allreduce_rd(g, buf, count, op, dt);
    }
    for (int i = 0; i < g->n; ++i) {
        off[i] = count * (size_t) i / (size_t) g->n;
        cnt[i] = count * (size_t) (i + 1) / (size_t) g->n - off[i];
        boff[i] = off[i] * esz;
        blen[i] = cnt[i] * esz;
    }
    st = gpu_inter_reduce_scatter(g, buf, off, cnt, op, dt);
    return GPU_OK == st ? gpu_inter_allgatherv(g, buf, boff, blen) : st;
}

gpu_status_t gpu_inter_bcast(gpu_inter_group_t *g, void *buf, size_t bytes, int root)
{
    const int n = g->n, v = gpu_mod(g->me - root, n);
    const size_t piece = 0 == g->piece || g->piece > bytes ? bytes : g->piece;
    gpu_net_req_t r[1 + 32];
    int low = 1, parent = -1, k = 0;
    gpu_status_t st = GPU_OK;
    char *b = buf;

    if (n <= 1 || 0 == bytes) {
        return GPU_OK;
    }
    while (low < n && 0 == (v & low)) {
        low <<= 1;
    }
    if (0 != v) {
        parent = gpu_mod(v - low + root, n);
    }
    /* piece j arrives while the sends of piece j-1 to the children drain */
    for (size_t j = 0; j < bytes && GPU_OK == st; j += piece) {
        const size_t c = bytes - j < piece ? bytes - j : piece;
        if (parent >= 0) {
            st = g->net->irecv(g->conn, g->ranks[parent], b + j, c, gpu_tag(g, GPU_PH_BCAST),
                               g->mem, &r[k]);
            k += GPU_OK == st;
        }
        if (GPU_OK == st && k > 0) {
            st = g->net->waitall(g->conn, r, k, "inter-node bcast");
        }
        k = 0;
        for (int m = low >> 1; m >= 1 && GPU_OK == st; m >>= 1) {
            if (v + m < n) {
                st = g->net->isend(g->conn, g->ranks[gpu_mod(v + m + root, n)], b + j, c,
                                   gpu_tag(g, GPU_PH_BCAST), g->mem, &r[k]);
                k += GPU_OK == st;
            }
        }
        if (GPU_OK != st) {
            g->net->cancel(g->conn, r, k);
            return st;
        }
    }
    return k > 0 ? g->net->waitall(g->conn, r, k, "inter-node bcast") : st;
}

gpu_status_t gpu_inter_reduce(gpu_inter_group_t *g, void *buf, size_t count, gpu_op_t op,
                              gpu_dtype_t dt, int root)
{
    const int n = g->n, v = gpu_mod(g->me - root, n);
    gpu_status_t st = GPU_OK;

    if (n <= 1 || 0 == count) {
        return GPU_OK;
    }
    for (int mask = 1; mask < n && GPU_OK == st; mask <<= 1) {
        if (v & mask) {
            return gpu_pass_fold(g, GPU_PH_REDUCE, gpu_mod(v - mask + root, n), 0, buf, count, op,
                                 dt, "inter-node reduce");
        }
        if (v + mask < n) {
            st = gpu_pass_fold(g, GPU_PH_REDUCE, gpu_mod(v + mask + root, n), 1, buf, count, op,
                               dt, "inter-node reduce");
        }
    }
    return st;
}
