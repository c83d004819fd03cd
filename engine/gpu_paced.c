/*
 * The host-paced schedule (declared in engine/gpu_plan.h): which bytes each
 * round stages and pulls.  No CUDA here; the engine passes copies and folds
 * on its stream, the CPU test passes memcpy and an int fold.
 */
#include "engine/gpu_plan.h"

/* Bytes of a pair of length len that round round carries. */
static size_t gpu_paced_piece(size_t len, int round, size_t chunk)
{
    const size_t off = (size_t) round * chunk;
    if (len <= off) {
        return 0;
    }
    return len - off < chunk ? len - off : chunk;
}

size_t gpu_paced_chunk(size_t region, size_t esize)
{
    if (0 == esize || region < esize) {
        return 0;
    }
    return region - region % esize;
}

/* Pair bytes [off, off + len) between a pair's pieces and a staging
 * buffer (gpu_xchg_two); out: from the pieces to the buffer. */
static gpu_status_t gpu_paced_pieces(const gpu_paced_ops_t *ops, void *ctx, int out, char *buf,
                                     const char *p1, const char *p2, size_t first, size_t off,
                                     size_t len)
{
    size_t n1, at2, o2, n2;
    gpu_status_t st = GPU_OK;

    gpu_xchg_two(first, off, len, &n1, &at2, &o2, &n2);
    if (n1 > 0) {
        st = out ? ops->copy(ctx, buf, p1 + off, n1) : ops->copy(ctx, (char *) p1 + off, buf, n1);
    }
    if (GPU_OK == st && n2 > 0) {
        st = out ? ops->copy(ctx, buf + at2, p2 + o2, n2)
                 : ops->copy(ctx, (char *) p2 + o2, buf + at2, n2);
    }
    return st;
}

gpu_status_t gpu_paced_stage(const gpu_xchg_plan_t *p, int rank, int n, int round, size_t chunk,
                             char *mine, const gpu_paced_ops_t *ops, void *ctx, int *more)
{
    const size_t off = (size_t) round * chunk, next = off + chunk;
    gpu_status_t st = GPU_OK;
    size_t longest = 0, len;

    if (p->relay || 0 == chunk) {
        return GPU_ERR_UNSUPPORTED;
    }
    for (int q = 0; q < n && GPU_OK == st; ++q) {
        longest = p->send_len[q] > longest ? p->send_len[q] : longest;
        longest = p->recv_len[q] > longest ? p->recv_len[q] : longest;
        len = q == rank ? 0 : gpu_paced_piece(p->send_len[q], round, chunk);
        if (len) {
            st = gpu_paced_pieces(ops, ctx, 1, mine + (size_t) q * chunk, p->send_src[q],
                                  p->send_src2[q], p->send_first[q], off, len);
        }
    }
    if (GPU_XCHG_REDUCE == p->mode) {
        longest = p->red_len > longest ? p->red_len : longest;
        len = NULL == p->red_self ? 0 : gpu_paced_piece(p->red_len, round, chunk);
        if (GPU_OK == st && len) {
            st = ops->copy(ctx, mine + (size_t) rank * chunk, p->red_self + off, len);
        }
    }
    *more = longest > next;
    return st;
}

gpu_status_t gpu_paced_pull(const gpu_xchg_plan_t *p, int rank, int n, int round, size_t chunk,
                            char *const *half, const gpu_paced_ops_t *ops, void *ctx)
{
    const size_t off = (size_t) round * chunk, at = (size_t) rank * chunk;
    gpu_status_t st = GPU_OK;
    size_t len;

    if (0 == round && p->self_len) {
        st = ops->copy(ctx, p->self_dst, p->self_src, p->self_len);
    }
    if (GPU_XCHG_COPY == p->mode) {
        for (int s = 0; s < n && GPU_OK == st; ++s) {
            len = s == rank ? 0 : gpu_paced_piece(p->recv_len[s], round, chunk);
            if (len) {
                st = gpu_paced_pieces(ops, ctx, 0, half[s] + at, p->recv_dst[s],
                                      p->recv_dst2[s], p->recv_first[s], off, len);
            }
        }
        return st;
    }
    len = gpu_paced_piece(p->red_len, round, chunk);
    for (int s = p->red_lo; s <= p->red_hi && len && GPU_OK == st; ++s) {
        if (s == rank && NULL == p->red_self) {
            return GPU_ERR_INVALID;
        }
        st = s == p->red_lo ? ops->copy(ctx, p->red_out + off, half[s] + at, len)
                            : ops->fold(ctx, p->red_out + off, half[s] + at, len);
    }
    return st;
}
