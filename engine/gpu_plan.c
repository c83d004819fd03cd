#include "engine/gpu_plan.h"

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

static void gpu_plan_self(gpu_xchg_plan_t *p, const char *src, char *dst, size_t len)
{
    if (NULL != src && src != dst) {
        p->self_src = src;
        p->self_dst = dst;
        p->self_len = len;
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
    if (chain && n > 2) {
        /* positions along the order, starting at the root */
        int mine = rank, top = root, pos;
        for (q = 0; NULL != order && q < n; ++q) {
            mine = order[q] == rank ? q : mine;
            top = order[q] == root ? q : top;
        }
        pos = (mine - top + n) % n;
        p->relay = 1;
        if (pos > 0) {
            q = (mine - 1 + n) % n;
            q = NULL != order ? order[q] : q;
            p->recv_len[q] = bytes;
            p->recv_dst[q] = buf;
        }
        if (pos < n - 1) {
            q = (mine + 1) % n;
            q = NULL != order ? order[q] : q;
            p->send_len[q] = bytes;
            p->send_src[q] = buf;
        }
        return GPU_OK;
    }
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

gpu_status_t gpu_plan_reduce(gpu_xchg_plan_t *p, int rank, int n, int root, const char *sbuf,
                             char *rbuf, size_t bytes)
{
    gpu_status_t st = gpu_plan_init(p, GPU_XCHG_REDUCE, rank, n);
    if (GPU_OK != st || root < 0 || root >= n) {
        return GPU_OK != st ? st : GPU_ERR_INVALID;
    }
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

gpu_status_t gpu_plan_allgatherv(gpu_xchg_plan_t *p, int rank, int n, const char *sbuf,
                                 char *rbuf, const size_t *rlen, const size_t *rdispl)
{
    gpu_status_t st = gpu_plan_init(p, GPU_XCHG_COPY, rank, n);
    const char *mine = NULL == sbuf ? rbuf + rdispl[rank] : sbuf;
    int q;
    if (GPU_OK != st) {
        return st;
    }
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
    p->in_place = NULL == sbuf;
    p->red_lo = 0;
    p->red_hi = exclusive ? rank - 1 : rank;
    p->red_len = p->red_lo <= p->red_hi ? bytes : 0;
    p->red_self = exclusive ? NULL : in;
    p->red_out = rbuf;
    return GPU_OK;
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
