#include "engine/gpu_plan.h"
#include "kernels/gpu_ll.h"

#include <string.h>

static gpu_status_t gpu_plan_init(gpu_xchg_plan_t *p, int mode, int rank, int n)
{
    if (n < 1 || n > GPU_MAX_PEERS || rank < 0 || rank >= n) {
        return GPU_ERR_INVALID;
    }
    memset(p, 0, sizeof(*p));
    p->mode = mode;
    p->red_lo = 0;
    p->red_hi = -1;
    return GPU_OK;
}

void gpu_plan_twoshot_cut(size_t bytes, int n, int nblocks, size_t cap, size_t *shard,
                          int *blocks)
{
    const size_t per = (size_t) n * (size_t) nblocks;
    size_t s = (bytes + per - 1) / per, nchunks;

    if (s > GPU_PLAN_TS_SPLIT) {
        s = (s + 1) / 2 > GPU_PLAN_TS_SPLIT ? (s + 1) / 2 : GPU_PLAN_TS_SPLIT;
    }
    s = s > GPU_PLAN_TS_MIN_SHARD ? s : GPU_PLAN_TS_MIN_SHARD;
    s = (s + 15) / 16 * 16;
    s = s < cap ? s : cap;
    s = s > 0 ? s : 16;
    nchunks = (bytes + s * (size_t) n - 1) / (s * (size_t) n);
    *shard = s;
    *blocks = (int) (nchunks < (size_t) nblocks ? nchunks : (size_t) nblocks);
}

/* The largest of counts every rank knows: a size all ranks agree on. */
static size_t gpu_plan_max_of(const size_t *v, int n)
{
    size_t m = 0;
    for (int q = 0; q < n; ++q) {
        m = v[q] > m ? v[q] : m;
    }
    return m;
}

static void gpu_plan_self(gpu_xchg_plan_t *p, const char *src, char *dst, size_t len)
{
    if (NULL != src && src != dst) {
        p->self_src = src;
        p->self_dst = dst;
        p->self_len = len;
    }
}

/* A chain along order (rank order where NULL) through every rank, which
 * starts at root (ends: the rank after it in the order starts): this
 * rank's neighbours on it, -1 at its ends. */
static void gpu_plan_chain(int rank, int n, int root, int ends, const int *order, int *prev,
                           int *next)
{
    int mine = rank, top = root, pos;
    for (int q = 0; NULL != order && q < n; ++q) {
        mine = order[q] == rank ? q : mine;
        top = order[q] == root ? q : top;
    }
    top = ends ? (top + 1) % n : top;
    pos = (mine - top + n) % n;
    *prev = pos > 0 ? (mine - 1 + n) % n : -1;
    *next = pos < n - 1 ? (mine + 1) % n : -1;
    if (NULL != order) {
        *prev = *prev >= 0 ? order[*prev] : -1;
        *next = *next >= 0 ? order[*next] : -1;
    }
}

gpu_status_t gpu_plan_bcast(gpu_xchg_plan_t *p, int rank, int n, int root, char *buf,
                            size_t bytes, int chain, const int *order)
{
    gpu_status_t st = gpu_plan_init(p, GPU_XCHG_COPY, rank, n);
    int q;
    if (GPU_OK != st || root < 0 || root >= n) {
        return GPU_OK != st ? st : GPU_ERR_INVALID;
    }
    p->ll_bytes = bytes;
    if (chain && n > 2) {
        int prev, next;
        gpu_plan_chain(rank, n, root, 0, order, &prev, &next);
        p->relay = 1;
        if (prev >= 0) {
            p->recv_len[prev] = bytes;
            p->recv_dst[prev] = buf;
        }
        if (next >= 0) {
            p->send_len[next] = bytes;
            p->send_src[next] = buf;
        }
        return GPU_OK;
    }
    p->one_way = 1;
    if (rank == root) {
        for (q = 0; q < n; ++q) {
            if (q != root) {
                p->send_len[q] = bytes;
                p->send_src[q] = buf;
            }
        }
    } else {
        p->recv_len[root] = bytes;
        p->recv_dst[root] = buf;
    }
    return GPU_OK;
}

gpu_status_t gpu_plan_allreduce(gpu_xchg_plan_t *p, int rank, int n, const char *in, char *out,
                                size_t bytes)
{
    gpu_status_t st = gpu_plan_init(p, GPU_XCHG_REDUCE, rank, n);
    if (GPU_OK != st) {
        return st;
    }
    for (int q = 0; q < n; ++q) {
        if (q != rank) {
            p->send_len[q] = bytes;
            p->send_src[q] = in;
        }
    }
    p->in_place = in == out;
    p->red_lo = 0;
    p->red_hi = n - 1;
    p->red_len = bytes;
    p->red_self = in;
    p->red_out = out;
    p->ll_bytes = bytes;
    return GPU_OK;
}

gpu_status_t gpu_plan_reduce(gpu_xchg_plan_t *p, int rank, int n, int root, const char *sbuf,
                             char *rbuf, size_t bytes)
{
    gpu_status_t st = gpu_plan_init(p, GPU_XCHG_REDUCE, rank, n);
    if (GPU_OK != st || root < 0 || root >= n) {
        return GPU_OK != st ? st : GPU_ERR_INVALID;
    }
    p->ll_bytes = bytes;
    if (rank != root) {
        p->send_len[root] = bytes;
        p->send_src[root] = sbuf;
        return GPU_OK;
    }
    p->red_lo = 0;
    p->red_hi = n - 1;
    p->red_len = bytes;
    p->red_self = NULL == sbuf ? rbuf : sbuf;
    p->red_out = rbuf;
    return GPU_OK;
}

gpu_status_t gpu_plan_reduce_chain(gpu_xchg_plan_t *p, int rank, int n, int root,
                                   const char *sbuf, char *rbuf, size_t bytes, const int *order)
{
    gpu_status_t st = gpu_plan_init(p, GPU_XCHG_REDUCE, rank, n);
    int prev, next;
    if (GPU_OK != st || root < 0 || root >= n || n < 3) {
        return GPU_OK != st ? st : GPU_ERR_INVALID;
    }
    gpu_plan_chain(rank, n, root, 1, order, &prev, &next);
    p->relay = 1;
    p->red_self = NULL == sbuf ? rbuf : sbuf;
    if (prev >= 0) {
        p->red_lo = p->red_hi = prev;
        p->red_len = bytes;
    }
    if (next >= 0) {
        p->send_len[next] = bytes;
        p->send_src[next] = p->red_self;
    } else {
        p->red_out = rbuf;   /* the root */
    }
    return GPU_OK;
}

gpu_status_t gpu_plan_allgatherv(gpu_xchg_plan_t *p, int rank, int n, const char *sbuf,
                                 char *rbuf, const size_t *rlen, const size_t *rdispl)
{
    gpu_status_t st = gpu_plan_init(p, GPU_XCHG_COPY, rank, n);
    const char *mine = NULL == sbuf ? rbuf + rdispl[rank] : sbuf;
    int q;
    if (GPU_OK != st) {
        return st;
    }
    p->ll_bytes = gpu_plan_max_of(rlen, n);
    for (q = 0; q < n; ++q) {
        if (q != rank) {
            p->send_len[q] = rlen[rank];
            p->send_src[q] = mine;
            p->recv_len[q] = rlen[q];
            p->recv_dst[q] = rbuf + rdispl[q];
        }
    }
    gpu_plan_self(p, sbuf, rbuf + rdispl[rank], rlen[rank]);
    return GPU_OK;
}

gpu_status_t gpu_plan_alltoallv(gpu_xchg_plan_t *p, int rank, int n, const char *sbuf,
                                const size_t *slen, const size_t *sdispl, char *rbuf,
                                const size_t *rlen, const size_t *rdispl)
{
    gpu_status_t st = gpu_plan_init(p, GPU_XCHG_COPY, rank, n);
    int q;
    if (GPU_OK != st) {
        return st;
    }
    p->in_place = NULL == sbuf;
    for (q = 0; q < n; ++q) {
        if (q != rank) {
            /* in place: what goes to q is taken from where q's data lands,
             * chunk by chunk, before it lands (same block, same round) */
            p->send_len[q] = NULL == sbuf ? rlen[q] : slen[q];
            p->send_src[q] = NULL == sbuf ? rbuf + rdispl[q] : sbuf + sdispl[q];
            p->recv_len[q] = rlen[q];
            p->recv_dst[q] = rbuf + rdispl[q];
        }
    }
    if (NULL != sbuf) {
        gpu_plan_self(p, sbuf + sdispl[rank], rbuf + rdispl[rank], rlen[rank]);
    }
    return GPU_OK;
}

gpu_status_t gpu_plan_second(gpu_xchg_plan_t *p, int rank, int n, const char *sbuf,
                             const size_t *slen, const size_t *sdispl, char *rbuf,
                             const size_t *rlen, const size_t *rdispl)
{
    for (int q = 0; q < n; ++q) {
        if ((slen[q] > 0 && (q == rank || 0 == p->send_len[q])) ||
            (rlen[q] > 0 && (q == rank || 0 == p->recv_len[q]))) {
            return GPU_ERR_INVALID;   /* no first piece to follow */
        }
        if (slen[q] > 0) {
            p->send_first[q] = p->send_len[q];
            p->send_src2[q] = sbuf + sdispl[q];
            p->send_len[q] = gpu_xchg_cut(p->send_len[q]) + slen[q];
        }
        if (rlen[q] > 0) {
            p->recv_first[q] = p->recv_len[q];
            p->recv_dst2[q] = rbuf + rdispl[q];
            p->recv_len[q] = gpu_xchg_cut(p->recv_len[q]) + rlen[q];
        }
    }
    return GPU_OK;
}

gpu_status_t gpu_plan_gatherv(gpu_xchg_plan_t *p, int rank, int n, int root, const char *sbuf,
                              size_t slen, char *rbuf, const size_t *rlen, const size_t *rdispl)
{
    gpu_status_t st = gpu_plan_init(p, GPU_XCHG_COPY, rank, n);
    int q;
    if (GPU_OK != st || root < 0 || root >= n) {
        return GPU_OK != st ? st : GPU_ERR_INVALID;
    }
    if (rank != root) {
        p->send_len[root] = slen;
        p->send_src[root] = sbuf;
        return GPU_OK;
    }
    for (q = 0; q < n; ++q) {
        if (q != root) {
            p->recv_len[q] = rlen[q];
            p->recv_dst[q] = rbuf + rdispl[q];
        }
    }
    gpu_plan_self(p, sbuf, rbuf + rdispl[root], rlen[root]);
    return GPU_OK;
}

gpu_status_t gpu_plan_scatterv(gpu_xchg_plan_t *p, int rank, int n, int root, const char *sbuf,
                               const size_t *slen, const size_t *sdispl, char *rbuf, size_t rlen)
{
    gpu_status_t st = gpu_plan_init(p, GPU_XCHG_COPY, rank, n);
    int q;
    if (GPU_OK != st || root < 0 || root >= n) {
        return GPU_OK != st ? st : GPU_ERR_INVALID;
    }
    if (rank != root) {
        p->recv_len[root] = rlen;
        p->recv_dst[root] = rbuf;
        return GPU_OK;
    }
    for (q = 0; q < n; ++q) {
        if (q != root) {
            p->send_len[q] = slen[q];
            p->send_src[q] = sbuf + sdispl[q];
        }
    }
    /* in place at the root: rbuf is MPI_IN_PLACE (NULL here), nothing moves */
    if (NULL != rbuf) {
        gpu_plan_self(p, sbuf + sdispl[root], rbuf, slen[root]);
    }
    return GPU_OK;
}

gpu_status_t gpu_plan_reduce_scatterv(gpu_xchg_plan_t *p, int rank, int n, const char *sbuf,
                                      char *rbuf, const size_t *len, const size_t *displ)
{
    gpu_status_t st = gpu_plan_init(p, GPU_XCHG_REDUCE, rank, n);
    int q;
    if (GPU_OK != st || NULL == sbuf) {
        return GPU_OK != st ? st : GPU_ERR_INVALID;
    }
    p->ll_bytes = gpu_plan_max_of(len, n);
    for (q = 0; q < n; ++q) {
        if (q != rank) {
            p->send_len[q] = len[q];
            p->send_src[q] = sbuf + displ[q];
        }
    }
    p->red_lo = 0;
    p->red_hi = n - 1;
    p->red_len = len[rank];
    p->red_self = sbuf + displ[rank];
    p->red_out = rbuf;
    return GPU_OK;
}

gpu_status_t gpu_plan_scan(gpu_xchg_plan_t *p, int rank, int n, const char *sbuf, char *rbuf,
                           size_t bytes, int exclusive)
{
    gpu_status_t st = gpu_plan_init(p, GPU_XCHG_REDUCE, rank, n);
    const char *in = NULL == sbuf ? rbuf : sbuf;
    int q;
    if (GPU_OK != st) {
        return st;
    }
    for (q = rank + 1; q < n; ++q) {
        p->send_len[q] = bytes;
        p->send_src[q] = in;
    }
    p->ll_bytes = bytes;
    p->in_place = NULL == sbuf;
    p->red_lo = 0;
    p->red_hi = exclusive ? rank - 1 : rank;
    p->red_len = p->red_lo <= p->red_hi ? bytes : 0;
    p->red_self = exclusive ? NULL : in;
    p->red_out = rbuf;
    return GPU_OK;
}

/* The bytes each source puts in the area: this rank's block for a
 * reduce_scatter, the whole input otherwise */
static size_t gpu_wide_stride(const gpu_wide_t *w)
{
    return GPU_WIDE_REDUCE_SCATTER == w->coll ? w->len[w->rank] : w->len[0];
}

size_t gpu_wide_area_bytes(const gpu_wide_t *w)
{
    if (GPU_WIDE_REDUCE == w->coll && w->rank != w->root) {
        return 0;   /* sends only */
    }
    return (size_t) w->n * gpu_wide_stride(w);
}

gpu_status_t gpu_plan_wide(const gpu_wide_t *w, char *area, gpu_xchg_plan_t *p,
                           gpu_wide_fold_t *f)
{
    const int rank = w->rank, n = w->n;
    const size_t stride = gpu_wide_stride(w);
    size_t slen[GPU_MAX_PEERS], sdispl[GPU_MAX_PEERS], rlen[GPU_MAX_PEERS];
    size_t rdispl[GPU_MAX_PEERS], off = 0;
    gpu_status_t st;

    if (n < 1 || n > GPU_MAX_PEERS || rank < 0 || rank >= n || NULL == w->in) {
        return GPU_ERR_INVALID;
    }
    f->lo = 0;
    f->hi = n;
    f->stride = stride;
    f->len = stride;
    f->area = area;
    f->out = w->out;
    for (int q = 0; q < n; ++q) {
        rdispl[q] = (size_t) q * stride;
    }
    switch (w->coll) {
    case GPU_WIDE_ALLREDUCE:
        for (int q = 0; q < n; ++q) {
            rlen[q] = stride;
        }
        return gpu_plan_allgatherv(p, rank, n, w->in, area, rlen, rdispl);
    case GPU_WIDE_REDUCE:
        for (int q = 0; q < n; ++q) {
            rlen[q] = stride;
        }
        if (rank != w->root) {
            f->hi = 0;
        }
        st = gpu_plan_gatherv(p, rank, n, w->root, w->in, stride, area, rlen, rdispl);
        p->ll_bytes = stride;   /* every pair, known everywhere */
        return st;
    case GPU_WIDE_REDUCE_SCATTER:
        for (int q = 0; q < n; ++q) {
            slen[q] = w->len[q];
            sdispl[q] = off;
            off += w->len[q];
            rlen[q] = stride;
        }
        st = gpu_plan_alltoallv(p, rank, n, w->in, slen, sdispl, area, rlen, rdispl);
        p->ll_bytes = gpu_plan_max_of(w->len, n);
        return st;
    case GPU_WIDE_SCAN:
    case GPU_WIDE_EXSCAN: {
        const int ex = GPU_WIDE_EXSCAN == w->coll;
        for (int q = 0; q < n; ++q) {
            slen[q] = (ex ? q > rank : q >= rank) ? stride : 0;
            sdispl[q] = 0;
            rlen[q] = (ex ? q < rank : q <= rank) ? stride : 0;
        }
        f->hi = ex ? rank : rank + 1;
        st = gpu_plan_alltoallv(p, rank, n, w->in, slen, sdispl, area, rlen, rdispl);
        p->ll_bytes = stride;
        return st;
    }
    default:
        return GPU_ERR_INVALID;
    }
}

int gpu_plan_work(const gpu_xchg_plan_t *p, int rank, int n, size_t *lens)
{
    int k = 0;
    for (int q = 0; q < n; ++q) {
        if (q == rank) {
            continue;
        }
        if (p->send_len[q]) {
            lens[k++] = p->send_len[q];
        }
        if (GPU_XCHG_COPY == p->mode && p->recv_len[q]) {
            lens[k++] = p->recv_len[q];
        }
    }
    if (GPU_XCHG_REDUCE == p->mode && p->red_lo <= p->red_hi && p->red_len) {
        lens[k++] = p->red_len;
    }
    if (p->self_len && p->self_src != p->self_dst) {
        lens[k++] = p->self_len;
    }
    return k;
}

size_t gpu_plan_max_len(const gpu_xchg_plan_t *p, int rank, int n)
{
    size_t lens[2 * GPU_MAX_PEERS + 2], m = 0;
    const int k = gpu_plan_work(p, rank, n, lens);
    for (int i = 0; i < k; ++i) {
        m = lens[i] > m ? lens[i] : m;
    }
    return m;
}

static void gpu_plan_put_ptr(uint32_t *w, int i, const void *p)
{
    const uint64_t v = (uint64_t) (uintptr_t) p;
    w[i] = (uint32_t) v;
    w[i + 1] = (uint32_t) (v >> 32);
}

/* The descriptor words of a command (layout in kernels/gpu_ll.h). */
int gpu_plan_ll_encode(const gpu_xchg_plan_t *p, int nranks, const gpu_ll_cmd_info_t *info,
                       uint32_t *w)
{
    const int nw = GPU_LL_W_PEERS + GPU_LL_PEER_WORDS * nranks;
    memset(w, 0, sizeof(uint32_t) * (size_t) nw);
    w[GPU_LL_W_CMD] = (uint32_t) info->cmd | (uint32_t) (p->mode & 1) << 4 |
                      (uint32_t) (p->in_place ? 1 : 0) << 5 |
                      (uint32_t) (info->sys_fence ? 1 : 0) << 6 |
                      (uint32_t) (info->leave ? 1 : 0) << 7 | (uint32_t) info->op << 8 |
                      (uint32_t) info->dt << 16 | (uint32_t) (info->busy & 127) << 24;
    w[GPU_LL_W_GEN] = info->gen;
    w[GPU_LL_W_SEQ] = (uint32_t) info->seq;
    w[GPU_LL_W_SEQ + 1] = (uint32_t) (info->seq >> 32);
    gpu_plan_put_ptr(w, GPU_LL_W_RED_SELF, p->red_self);
    gpu_plan_put_ptr(w, GPU_LL_W_RED_OUT, p->red_out);
    w[GPU_LL_W_RED_LEN] = (uint32_t) p->red_len;
    w[GPU_LL_W_RED_RANGE] = (uint32_t) (uint16_t) (int16_t) p->red_lo |
                            (uint32_t) (uint16_t) (int16_t) p->red_hi << 16;
    gpu_plan_put_ptr(w, GPU_LL_W_SELF_SRC, p->self_src);
    gpu_plan_put_ptr(w, GPU_LL_W_SELF_DST, p->self_dst);
    w[GPU_LL_W_SELF_LEN] = (uint32_t) p->self_len;
    for (int q = 0; q < nranks; ++q) {
        uint32_t *e = w + GPU_LL_W_PEERS + GPU_LL_PEER_WORDS * q;
        const int wb = NULL != info->wait_blocks ? info->wait_blocks[q] : 0;
        const unsigned long long ws = NULL != info->wait_seq ? info->wait_seq[q] : 0;
        gpu_plan_put_ptr(e, GPU_LL_P_SEND_SRC, p->send_src[q]);
        e[GPU_LL_P_SEND_LEN] = (uint32_t) p->send_len[q] | (uint32_t) wb << 24;
        gpu_plan_put_ptr(e, GPU_LL_P_RECV_DST, p->recv_dst[q]);
        e[GPU_LL_P_RECV_LEN] = (uint32_t) p->recv_len[q];
        e[GPU_LL_P_WAIT_SEQ] = (uint32_t) ws;
        e[GPU_LL_P_WAIT_SEQ + 1] = (uint32_t) (ws >> 32);
        e[GPU_LL_P_SEND_FIRST] = (uint32_t) p->send_first[q];
        gpu_plan_put_ptr(e, GPU_LL_P_SEND_SRC2, p->send_src2[q]);
        e[GPU_LL_P_RECV_FIRST] = (uint32_t) p->recv_first[q];
        gpu_plan_put_ptr(e, GPU_LL_P_RECV_DST2, p->recv_dst2[q]);
    }
    return nw;
}

void gpu_plan_ll_slots(gpu_ll_slots_t *s, const gpu_xchg_plan_t *p, int rank, int n,
                       int nblocks, size_t min_piece, unsigned long long seq,
                       unsigned long long *wait_seq, int *wait_blocks)
{
    const int par = (int) (seq & 1);
    s->undo_par = par;
    for (int q = 0; q < n; ++q) {
        const size_t piece = gpu_ll_piece(p->send_len[q], nblocks, min_piece);
        wait_seq[q] = s->last_seq[q][par];
        wait_blocks[q] = s->last_blocks[q][par];
        if (piece == s->last_piece[q][par] && s->prev_recv[q] >= wait_blocks[q] &&
            s->prev_seq > wait_seq[q]) {
            wait_blocks[q] = 0;
        }
        s->undo_seq[q] = s->last_seq[q][par];
        s->undo_blocks[q] = s->last_blocks[q][par];
        s->undo_piece[q] = s->last_piece[q][par];
        if (q != rank && p->send_len[q] > 0) {
            s->last_seq[q][par] = seq;
            s->last_blocks[q][par] = gpu_ll_blocks_for(p->send_len[q], nblocks, min_piece);
            s->last_piece[q][par] = piece;
        }
    }
    for (int q = 0; q < n; ++q) {
        size_t got = 0;
        if (q == rank) {
            /* nothing from ourselves */
        } else if (GPU_XCHG_COPY == p->mode) {
            got = p->recv_len[q];
        } else if (q >= p->red_lo && q <= p->red_hi) {
            got = p->red_len;
        }
        s->prev_recv[q] = gpu_ll_blocks_for(got, nblocks, min_piece);
    }
    s->prev_seq = seq;
}

void gpu_plan_ll_slots_drop(gpu_ll_slots_t *s, const gpu_xchg_plan_t *p, int rank, int n)
{
    const int par = s->undo_par;
    for (int q = 0; q < n; ++q) {
        if (q != rank && p->send_len[q] > 0) {
            s->last_seq[q][par] = s->undo_seq[q];
            s->last_blocks[q][par] = s->undo_blocks[q];
            s->last_piece[q][par] = s->undo_piece[q];
        }
    }
    s->prev_seq = 0;
}

/* Leading blocks with a piece of this rank's side of the plan. */
int gpu_plan_ll_busy_blocks(const gpu_xchg_plan_t *p, int rank, int nranks, int nblocks,
                            size_t min_piece)
{
    size_t lens[2 * GPU_MAX_PEERS + 2];
    const int k = gpu_plan_work(p, rank, nranks, lens);
    int busy = 0;
    for (int i = 0; i < k; ++i) {
        const int b = gpu_ll_blocks_for(lens[i], nblocks, min_piece);
        busy = b > busy ? b : busy;
    }
    return busy;
}
