/*
 * Plans checked by emulation, without a GPU: build every rank's plan for a
 * collective, check that both ends of every pair agree on its length, run
 * the transfers on host memory the way the exchange kernel defines them
 * (COPY lands bytes, REDUCE folds int32 sums in rank order), and compare
 * every rank's output with a direct host reference.  Also checks the
 * chunking rule that sender and receiver must share.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/gpu_plan.h"
#include "kernels/gpu_ll.h"
#include "kernels/gpu_stream.h"

#define MAXN 8
#include "check.h"

static unsigned rng = 12345;
static int rnd(int m)
{
    rng = rng * 1103515245u + 12345u;
    return (int) ((rng >> 8) % (unsigned) m);
}

static void fill(char *b, size_t n, int salt)
{
    for (size_t i = 0; i < n; ++i) {
        b[i] = (char) (1 + (i * 7 + (size_t) salt * 31) % 251);
    }
}

/* Nonzero: emulate runs the host-paced rounds with this chunk instead. */
static size_t paced_chunk;

static gpu_status_t host_copy(void *ctx, void *dst, const void *src, size_t len)
{
    (void) ctx;
    memmove(dst, src, len);
    return GPU_OK;
}

static gpu_status_t host_fold(void *ctx, void *acc, const void *x, size_t len)
{
    (void) ctx;
    for (size_t i = 0; i + sizeof(int) <= len; i += sizeof(int)) {
        int a, b;
        memcpy(&a, (char *) acc + i, sizeof(int));
        memcpy(&b, (const char *) x + i, sizeof(int));
        a += b;
        memcpy((char *) acc + i, &a, sizeof(int));
    }
    return GPU_OK;
}

/* Every rank stages round k, all meet, every rank pulls round k; the
 * staging areas alternate as in the engine, and the one not in use is
 * poisoned so that a pull of stale bytes shows. */
static int emulate_paced(gpu_xchg_plan_t *p, int n)
{
    static const gpu_paced_ops_t ops = { .copy = host_copy, .fold = host_fold };
    const size_t chunk = gpu_paced_chunk(paced_chunk, sizeof(int));
    char *area[2][MAXN];
    int any = 1, ok = 1;

    for (int h = 0; h < 2; ++h) {
        for (int r = 0; r < n; ++r) {
            area[h][r] = malloc(chunk * (size_t) n);
        }
    }
    for (int round = 0, h = 0; any && ok; ++round, h ^= 1) {
        any = 0;
        for (int r = 0; r < n; ++r) {
            memset(area[h ^ 1][r], 0x5a, chunk * (size_t) n);
        }
        for (int r = 0; r < n && ok; ++r) {
            int more = 0;
            ok = GPU_OK == gpu_paced_stage(&p[r], r, n, round, chunk, area[h][r], &ops, NULL,
                                           &more);
            any |= more;
        }
        for (int r = 0; r < n && ok; ++r) {
            ok = GPU_OK == gpu_paced_pull(&p[r], r, n, round, chunk, area[h], &ops, NULL);
        }
    }
    for (int h = 0; h < 2; ++h) {
        for (int r = 0; r < n; ++r) {
            free(area[h][r]);
        }
    }
    return ok;
}

/* The exchange kernel's piece of a pair: 0 moves a pair whole; else
 * pieces of this many bytes (kernel chunks are multiples of 16, LL lines
 * 8), each split between a two-piece pair's pieces as the kernels do
 * (gpu_xchg_two).  Padding bytes in a message stay poisoned. */
static size_t pair_chunk;

static void pair_out(const gpu_xchg_plan_t *p, int q, char *msg, size_t len)
{
    const size_t c = 0 == pair_chunk ? len : pair_chunk;
    memset(msg, 0x77, len);
    for (size_t off = 0; off < len; off += c) {
        size_t n1, at2, o2, n2;
        gpu_xchg_two(p->send_first[q], off, len - off < c ? len - off : c, &n1, &at2, &o2, &n2);
        memcpy(msg + off, p->send_src[q] + off, n1);
        if (n2 > 0) {
            memcpy(msg + off + at2, p->send_src2[q] + o2, n2);
        }
    }
}

static void pair_in(const gpu_xchg_plan_t *p, int s, const char *msg, size_t len)
{
    const size_t c = 0 == pair_chunk ? len : pair_chunk;
    for (size_t off = 0; off < len; off += c) {
        size_t n1, at2, o2, n2;
        gpu_xchg_two(p->recv_first[s], off, len - off < c ? len - off : c, &n1, &at2, &o2, &n2);
        memcpy(p->recv_dst[s] + off, msg + off, n1);
        if (n2 > 0) {
            memcpy(p->recv_dst2[s] + o2, msg + off + at2, n2);
        }
    }
}

/* Run n plans; returns 0 if the pair lengths disagree. */
static int emulate(gpu_xchg_plan_t *p, int n)
{
    char *msg[MAXN][MAXN] = { { 0 } };
    int s, r, ok = 1;

    for (s = 0; s < n; ++s) {
        for (r = 0; r < n; ++r) {
            size_t want;
            if (r == s) {
                continue;
            }
            want = GPU_XCHG_COPY == p[r].mode ? p[r].recv_len[s]
                   : (s >= p[r].red_lo && s <= p[r].red_hi) ? p[r].red_len : 0;
            if (p[s].send_len[r] != want) {
                printf("  pair %d->%d: sender says %zu bytes, receiver %zu\n", s, r,
                       p[s].send_len[r], want);
                ok = 0;
                continue;
            }
            if (want && ok) {
                msg[s][r] = malloc(want);
                pair_out(&p[s], r, msg[s][r], want);
            }
        }
    }
    if (ok && paced_chunk) {
        for (s = 0; s < n; ++s) {
            for (r = 0; r < n; ++r) {
                free(msg[s][r]);
                msg[s][r] = NULL;
            }
        }
        return emulate_paced(p, n);
    }
    for (r = 0; ok && r < n; ++r) {
        if (p[r].self_len) {
            memmove(p[r].self_dst, p[r].self_src, p[r].self_len);
        }
        if (GPU_XCHG_COPY == p[r].mode) {
            for (s = 0; s < n; ++s) {
                if (s != r && p[r].recv_len[s]) {
                    pair_in(&p[r], s, msg[s][r], p[r].recv_len[s]);
                }
            }
        } else if (p[r].red_lo <= p[r].red_hi && p[r].red_len) {
            const size_t ne = p[r].red_len / sizeof(int);
            int *acc = calloc(ne + 1, sizeof(int));
            for (s = p[r].red_lo; s <= p[r].red_hi; ++s) {
                const char *src = s == r ? p[r].red_self : msg[s][r];
                if (NULL == src) {
                    printf("  rank %d folds rank %d but has no data for it\n", r, s);
                    ok = 0;
                    break;
                }
                for (size_t i = 0; i < ne; ++i) {
                    int x;
                    memcpy(&x, src + i * sizeof(int), sizeof(int));
                    acc[i] = s == p[r].red_lo ? x : acc[i] + x;
                }
            }
            memcpy(p[r].red_out, acc, ne * sizeof(int));
            free(acc);
        }
    }
    for (s = 0; s < n; ++s) {
        for (r = 0; r < n; ++r) {
            free(msg[s][r]);
        }
    }
    return ok;
}

static int geti(const char *b, size_t i)
{
    int x;
    memcpy(&x, b + i * sizeof(int), sizeof(int));
    return x;
}

static void test_bcast(int n, int chain)
{
    gpu_xchg_plan_t p[MAXN];
    char *buf[MAXN];
    int order[MAXN];
    for (int i = 0; i < n; ++i) {      /* a ring order that is not rank order */
        order[i] = (i * 3 + 1) % n;
    }
    for (int i = 0; i < n; ++i) {      /* make it a permutation for any n */
        for (int j = 0; j < i; ++j) {
            if (order[j] == order[i]) {
                for (int k = 0; k < n; ++k) {
                    order[k] = n - 1 - k;
                }
                i = n;
                break;
            }
        }
    }
    const size_t bytes = (size_t) (1 + rnd(5000));
    for (int root = 0; root < n; ++root) {
        for (int r = 0; r < n; ++r) {
            buf[r] = malloc(bytes);
            fill(buf[r], bytes, r == root ? 99 : r);
            gpu_plan_bcast(&p[r], r, n, root, buf[r], bytes, chain != 0, 2 == chain ? order : NULL);
        }
        /* a chain needs as many emulation passes as hops */
        int ok = 1;
        for (int pass = 0; pass < (chain ? n : 1); ++pass) {
            ok &= emulate(p, n);
        }
        for (int r = 0; r < n; ++r) {
            char ref[8192];
            fill(ref, bytes, 99);
            CHECK(ok && 0 == memcmp(buf[r], ref, bytes), "bcast n=%d root=%d chain=%d rank %d",
                  n, root, chain, r);
            free(buf[r]);
        }
    }
}

static void test_reduce_and_scan(int n)
{
    gpu_xchg_plan_t p[MAXN];
    char *in[MAXN], *out[MAXN];
    const size_t cnt = (size_t) (1 + rnd(700)), bytes = cnt * sizeof(int);
    for (int kind = 0; kind < 4; ++kind) {           /* reduce, reduce in place, scan, exscan */
        for (int root = 0; root < (kind < 2 ? n : 1); ++root) {
            for (int r = 0; r < n; ++r) {
                in[r] = malloc(bytes);
                out[r] = malloc(bytes);
                fill(in[r], bytes, r + 1);
                fill(out[r], bytes, 77);
                if (1 == kind && r == root) {
                    memcpy(out[r], in[r], bytes);
                }
                if (kind < 2) {
                    gpu_plan_reduce(&p[r], r, n, root, (1 == kind && r == root) ? NULL : in[r],
                                    out[r], bytes);
                } else {
                    gpu_plan_scan(&p[r], r, n, in[r], out[r], bytes, 3 == kind);
                }
            }
            int ok = emulate(p, n);
            for (int r = 0; r < n; ++r) {
                int good = ok;
                const int hi = kind < 2 ? n - 1 : (2 == kind ? r : r - 1);
                if ((kind < 2 && r == root) || (kind >= 2 && hi >= 0)) {
                    for (size_t i = 0; i < cnt; ++i) {
                        int ref = 0;
                        for (int s = 0; s <= hi; ++s) {
                            ref += geti(in[s], i);
                        }
                        good &= geti(out[r], i) == ref;
                    }
                }
                CHECK(good, "reduce kind %d n=%d root=%d rank %d", kind, n, root, r);
                CHECK(0 == p[r].in_place, "out-of-place reduce/scan plans allow split roles");
            }
            for (int r = 0; r < n; ++r) {
                free(in[r]);
                free(out[r]);
            }
        }
    }
}

/* Reduce along a chain (gpu_plan_reduce_chain), emulated as the kernel
 * runs it: the first rank sends its input, each next one folds what came
 * (the ranks before, in chain order) with its own and passes it on, the
 * root folds into its buffer.  Every rank once, the chain ends at the root,
 * in place at the root too; along rank order and a shuffled ring. */
static void test_reduce_chain(int n)
{
    gpu_xchg_plan_t p[MAXN];
    char *in[MAXN], *out[MAXN];
    const size_t cnt = (size_t) (1 + rnd(300)), bytes = cnt * sizeof(int);
    int order[MAXN];
    for (int r = 0; r < n; ++r) {
        order[r] = r;
    }
    for (int r = n - 1; r > 0; --r) {
        const int k = rnd(r + 1), t = order[r];
        order[r] = order[k];
        order[k] = t;
    }
    for (int shuffled = 0; shuffled < 2; ++shuffled) {
        for (int root = 0; root < n; ++root) {
            const int in_place = root & 1;
            int built = 1, first = -1, seen = 0, ok = 1;
            for (int r = 0; r < n; ++r) {
                in[r] = malloc(bytes);
                out[r] = malloc(bytes);
                fill(in[r], bytes, r + 5);
                fill(out[r], bytes, 91);
                if (in_place && r == root) {
                    memcpy(out[r], in[r], bytes);
                }
                built &= GPU_OK == gpu_plan_reduce_chain(&p[r], r, n, root,
                                                         in_place && r == root ? NULL : in[r],
                                                         out[r], bytes,
                                                         shuffled ? order : NULL);
                if (p[r].red_lo > p[r].red_hi) {
                    first = first < 0 ? r : -2;   /* exactly one rank starts */
                }
            }
            int *acc = calloc(cnt, sizeof(int));
            for (int r = first, prev = -1; ok && r >= 0; ++seen) {
                int next = -1;
                ok = built && p[r].relay && GPU_XCHG_REDUCE == p[r].mode && seen < n &&
                     (prev < 0 ? p[r].red_lo > p[r].red_hi
                               : p[r].red_lo == prev && p[r].red_hi == prev &&
                                     p[r].red_len == bytes && p[prev].send_len[r] == bytes);
                for (int q = 0; ok && q < n; ++q) {
                    if (p[r].send_len[q]) {
                        ok = next < 0;
                        next = q;
                    }
                }
                for (size_t i = 0; ok && i < cnt; ++i) {
                    acc[i] = (prev < 0 ? 0 : acc[i]) + geti(p[r].red_self, i);
                }
                if (ok && next < 0) {
                    ok = r == root && NULL != p[r].red_out;
                    for (size_t i = 0; ok && i < cnt; ++i) {
                        memcpy(p[r].red_out + i * sizeof(int), &acc[i], sizeof(int));
                    }
                }
                prev = r;
                r = next;
            }
            ok &= seen == n && first >= 0;
            for (size_t i = 0; ok && i < cnt; ++i) {
                int ref = 0;
                for (int s = 0; s < n; ++s) {
                    ref += geti(in[s], i);
                }
                ok &= geti(out[root], i) == ref;
            }
            CHECK(ok, "reduce chain n=%d root=%d shuffled=%d in_place=%d: every rank once, "
                  "ending at the root with the sum", n, root, shuffled, in_place);
            free(acc);
            for (int r = 0; r < n; ++r) {
                free(in[r]);
                free(out[r]);
            }
        }
    }
}

static void random_counts(size_t *len, size_t *displ, int n, int unit, int allow_zero)
{
    size_t off = 0;
    for (int q = 0; q < n; ++q) {
        len[q] = (size_t) (allow_zero ? rnd(300) : 1 + rnd(300)) * (size_t) unit;
        displ[q] = off + (size_t) rnd(3) * (size_t) unit;   /* gaps are legal */
        off = displ[q] + len[q];
    }
}

static size_t span(const size_t *len, const size_t *displ, int n)
{
    size_t m = 0;
    for (int q = 0; q < n; ++q) {
        m = displ[q] + len[q] > m ? displ[q] + len[q] : m;
    }
    return m;
}

static void test_allgatherv(int n, int in_place)
{
    gpu_xchg_plan_t p[MAXN];
    size_t len[MAXN], displ[MAXN];
    char *sb[MAXN], *rb[MAXN];
    random_counts(len, displ, n, 1, 1);
    const size_t tot = span(len, displ, n);
    for (int r = 0; r < n; ++r) {
        sb[r] = malloc(len[r] + 1);
        rb[r] = calloc(tot + 1, 1);
        fill(sb[r], len[r], r + 5);
        if (in_place) {
            memcpy(rb[r] + displ[r], sb[r], len[r]);
        }
        gpu_plan_allgatherv(&p[r], r, n, in_place ? NULL : sb[r], rb[r], len, displ);
    }
    int ok = emulate(p, n);
    for (int r = 0; r < n; ++r) {
        int good = ok;
        for (int s = 0; s < n; ++s) {
            good &= 0 == memcmp(rb[r] + displ[s], sb[s], len[s]);
        }
        CHECK(good, "allgatherv n=%d in_place=%d rank %d", n, in_place, r);
    }
    for (int r = 0; r < n; ++r) {
        free(sb[r]);
        free(rb[r]);
    }
}

static void test_alltoallv(int n, int in_place)
{
    gpu_xchg_plan_t p[MAXN];
    /* len[s][r]: bytes s sends to r, the same as r receives from s */
    size_t len[MAXN][MAXN], sl[MAXN][MAXN], sd[MAXN][MAXN], rl[MAXN][MAXN], rd[MAXN][MAXN];
    char *sb[MAXN], *rb[MAXN], *orig[MAXN];
    for (int s = 0; s < n; ++s) {
        for (int r = 0; r < n; ++r) {
            len[s][r] = (size_t) rnd(200);
        }
    }
    if (in_place) {   /* MPI: in place alltoallv sends what it receives */
        for (int s = 0; s < n; ++s) {
            for (int r = 0; r < s; ++r) {
                len[s][r] = len[r][s];
            }
        }
    }
    for (int r = 0; r < n; ++r) {
        size_t so = 0, ro = 0;
        for (int q = 0; q < n; ++q) {
            sl[r][q] = len[r][q];
            sd[r][q] = so;
            so += sl[r][q] + 3;
            rl[r][q] = len[q][r];
            rd[r][q] = ro;
            ro += rl[r][q] + 1;
        }
        sb[r] = malloc(so + 1);
        fill(sb[r], so, r + 11);
        rb[r] = calloc(ro + 1, 1);
        orig[r] = malloc(ro + 1);
        if (in_place) {
            fill(rb[r], ro, r + 11);
        }
        memcpy(orig[r], rb[r], ro);
    }
    for (int r = 0; r < n; ++r) {
        gpu_plan_alltoallv(&p[r], r, n, in_place ? NULL : sb[r], sl[r], sd[r], rb[r], rl[r], rd[r]);
    }
    int ok = emulate(p, n);
    for (int r = 0; r < n; ++r) {
        int good = ok;
        for (int s = 0; s < n; ++s) {
            const char *want = in_place ? orig[s] + rd[s][r] : sb[s] + sd[s][r];
            good &= 0 == memcmp(rb[r] + rd[r][s], want, len[s][r]);
        }
        CHECK(good, "alltoallv n=%d in_place=%d rank %d", n, in_place, r);
        CHECK(p[r].in_place == in_place, "alltoallv plan marks in-place (no split roles)");
    }
    for (int r = 0; r < n; ++r) {
        free(sb[r]);
        free(rb[r]);
        free(orig[r]);
    }
}

/* Pairs of two pieces (a neighbourhood whose neighbour is one rank both
 * ways): random first and second lengths per pair, zeros included, the
 * blocks out of order with gaps that must stay untouched. */
static void test_two_pieces(int n)
{
    gpu_xchg_plan_t p[MAXN];
    size_t l1[MAXN][MAXN], l2[MAXN][MAXN];
    size_t sl[MAXN][MAXN], sd[MAXN][MAXN], rl[MAXN][MAXN], rd[MAXN][MAXN];
    size_t s2l[MAXN][MAXN], s2d[MAXN][MAXN], r2l[MAXN][MAXN], r2d[MAXN][MAXN];
    char *sb[MAXN], *rb[MAXN];
    size_t rtot[MAXN];
    int built = 1;

    for (int s = 0; s < n; ++s) {
        for (int r = 0; r < n; ++r) {
            l1[s][r] = (size_t) rnd(3) * (size_t) rnd(90);
            l2[s][r] = s == r || 0 == l1[s][r] ? 0 : (size_t) rnd(2) * (size_t) rnd(150);
        }
    }
    for (int r = 0; r < n; ++r) {
        size_t so = 0, ro = 0;
        /* second pieces first in memory: the order in the buffers is not
         * the order on the wire */
        for (int q = 0; q < n; ++q) {
            s2l[r][q] = l2[r][q];
            s2d[r][q] = so;
            so += l2[r][q] + 5;
            r2l[r][q] = l2[q][r];
            r2d[r][q] = ro;
            ro += l2[q][r] + 3;
        }
        for (int q = 0; q < n; ++q) {
            sl[r][q] = l1[r][q];
            sd[r][q] = so;
            so += l1[r][q] + 1;
            rl[r][q] = l1[q][r];
            rd[r][q] = ro;
            ro += l1[q][r] + 7;
        }
        sb[r] = malloc(so + 1);
        fill(sb[r], so, r + 3);
        rb[r] = malloc(ro + 1);
        memset(rb[r], 0x3c, ro + 1);
        rtot[r] = ro + 1;
    }
    for (int r = 0; r < n; ++r) {
        built &= GPU_OK == gpu_plan_alltoallv(&p[r], r, n, sb[r], sl[r], sd[r], rb[r], rl[r],
                                              rd[r]) &&
                 GPU_OK == gpu_plan_second(&p[r], r, n, sb[r], s2l[r], s2d[r], rb[r], r2l[r],
                                           r2d[r]);
    }
    CHECK(built, "two-piece plans build (n=%d)", n);
    int ok = built && emulate(p, n);
    for (int r = 0; r < n; ++r) {
        int good = ok;
        char *want = malloc(rtot[r]);
        memset(want, 0x3c, rtot[r]);
        for (int s = 0; s < n; ++s) {
            memcpy(want + rd[r][s], sb[s] + sd[s][r], l1[s][r]);
            memcpy(want + r2d[r][s], sb[s] + s2d[s][r], l2[s][r]);
        }
        good &= 0 == memcmp(rb[r], want, rtot[r]);
        CHECK(good, "two-piece pairs n=%d chunk %zu rank %d: blocks land, gaps untouched", n,
              pair_chunk, r);
        free(want);
    }
    /* a second piece needs a first, and the local copy has only one */
    size_t one[MAXN] = { 0 }, zero[MAXN] = { 0 };
    one[0] = 8;
    CHECK(GPU_ERR_INVALID == gpu_plan_second(&p[0], 0, n, sb[0], one, zero, rb[0], zero, zero),
          "a second piece to oneself is refused");
    for (int r = 0; r < n; ++r) {
        free(sb[r]);
        free(rb[r]);
    }
}

static void test_gather_scatter(int n, int in_place)
{
    gpu_xchg_plan_t p[MAXN];
    size_t len[MAXN], displ[MAXN];
    char *sb[MAXN], *rb[MAXN];
    random_counts(len, displ, n, 1, 1);
    const size_t tot = span(len, displ, n);
    for (int root = 0; root < n; ++root) {
        /* gatherv */
        for (int r = 0; r < n; ++r) {
            sb[r] = malloc(len[r] + 1);
            fill(sb[r], len[r], r + 21);
            rb[r] = calloc(tot + 1, 1);
            if (in_place && r == root) {
                memcpy(rb[r] + displ[r], sb[r], len[r]);
            }
            gpu_plan_gatherv(&p[r], r, n, root, (in_place && r == root) ? NULL : sb[r], len[r],
                             rb[r], len, displ);
        }
        int good = emulate(p, n);
        for (int s = 0; s < n; ++s) {
            good &= 0 == memcmp(rb[root] + displ[s], sb[s], len[s]);
        }
        CHECK(good, "gatherv n=%d root=%d in_place=%d", n, root, in_place);
        /* scatterv: the root's rb holds everything */
        for (int r = 0; r < n; ++r) {
            free(sb[r]);
            sb[r] = calloc(len[r] + 1, 1);
        }
        fill(rb[root], tot, 33);
        for (int r = 0; r < n; ++r) {
            gpu_plan_scatterv(&p[r], r, n, root, rb[root], len, displ,
                              (in_place && r == root) ? NULL : sb[r], len[r]);
        }
        good = emulate(p, n);
        for (int r = 0; r < n; ++r) {
            if (!(in_place && r == root)) {
                good &= 0 == memcmp(sb[r], rb[root] + displ[r], len[r]);
            }
        }
        CHECK(good, "scatterv n=%d root=%d in_place=%d", n, root, in_place);
        for (int r = 0; r < n; ++r) {
            free(sb[r]);
            free(rb[r]);
        }
    }
}

static void test_reduce_scatter(int n)
{
    gpu_xchg_plan_t p[MAXN];
    size_t len[MAXN], displ[MAXN];
    char *sb[MAXN], *rb[MAXN];
    random_counts(len, displ, n, (int) sizeof(int), 1);
    for (int q = 0; q < n; ++q) {   /* reduce_scatter input is packed */
        displ[q] = q ? displ[q - 1] + len[q - 1] : 0;
    }
    const size_t tot = span(len, displ, n);
    for (int r = 0; r < n; ++r) {
        sb[r] = malloc(tot + 4);
        fill(sb[r], tot, r + 41);
        rb[r] = calloc(len[r] + 4, 1);
        gpu_plan_reduce_scatterv(&p[r], r, n, sb[r], rb[r], len, displ);
    }
    int ok = emulate(p, n);
    for (int r = 0; r < n; ++r) {
        int good = ok;
        for (size_t i = 0; i < len[r] / sizeof(int); ++i) {
            int ref = 0;
            for (int s = 0; s < n; ++s) {
                ref += geti(sb[s] + displ[r], i);
            }
            good &= geti(rb[r], i) == ref;
        }
        CHECK(good, "reduce_scatterv n=%d rank %d", n, r);
    }
    for (int r = 0; r < n; ++r) {
        free(sb[r]);
        free(rb[r]);
    }
}

static void test_chunking(void)
{
    const size_t slot = 256 * 1024;
    const size_t lens[] = { 1, 15, 4096, 4097, 65536, 1 << 20, 3000001, (size_t) 1 << 31 };
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); ++k) {
        for (int relay = 0; relay < 2; ++relay) {
            const size_t c = gpu_xchg_chunk(lens[k], slot, 64, relay);
            const int nb = gpu_xchg_pair_blocks(lens[k], c, 64);
            const size_t nch = (lens[k] + c - 1) / c;
            CHECK(c % 16 == 0 && c >= GPU_XCHG_MIN_CHUNK && c <= slot,
                  "chunk %zu for %zu bytes: multiple of 16 within [min, slot]", c, lens[k]);
            CHECK(nb >= 1 && nb <= 64 && (size_t) nb <= nch, "blocks %d for %zu chunks", nb, nch);
            CHECK(nch * c >= lens[k] && (nch - 1) * c < lens[k], "chunks cover %zu bytes", lens[k]);
            /* a chain's blocks take several chunks each once the pair allows */
            CHECK(!relay || c == GPU_XCHG_MIN_CHUNK || c == slot ||
                      c * GPU_XCHG_RELAY_ROUNDS * 64 < lens[k] + 16 * GPU_XCHG_RELAY_ROUNDS * 64,
                  "relay chunking of %zu bytes: %zu chunks of %zu", lens[k], nch, c);
        }
    }
    gpu_xchg_plan_t p;
    CHECK(GPU_ERR_INVALID == gpu_plan_bcast(&p, 0, GPU_MAX_PEERS + 1, 0, NULL, 8, 0, NULL),
          "more ranks than the kernel supports are refused");
    CHECK(GPU_ERR_INVALID == gpu_plan_reduce(&p, 0, 2, 5, NULL, NULL, 8), "bad root refused");
    CHECK(GPU_ERR_INVALID == gpu_plan_reduce_chain(&p, 0, 2, 0, NULL, NULL, 8, NULL),
          "a chain of two ranks is refused (the direct plan is the same)");
}

/* The stream-ordered allreduce's region: every (parity, source) slot holds
 * the largest message's lines, slots do not overlap the control words or
 * each other, and the region ends with the last line. */
static void test_stream_region(void)
{
    const size_t maxes[] = { 8, 12, 4096, 65536 };
    const int ns[] = { 2, 3, 8, GPU_MAX_PEERS };
    for (size_t k = 0; k < sizeof(maxes) / sizeof(maxes[0]); ++k) {
        for (size_t j = 0; j < sizeof(ns) / sizeof(ns[0]); ++j) {
            const int n = ns[j];
            const size_t lines = (maxes[k] + GPU_STREAM_PAYLOAD - 1) / GPU_STREAM_PAYLOAD;
            const size_t total = gpu_stream_region_bytes(maxes[k], n);
            size_t expect = GPU_STREAM_CTL_BYTES;
            int good = 1;
            for (int par = 0; par < 2; ++par) {
                for (int src = 0; src < n; ++src) {
                    /* slots follow each other: first line right after the last one before */
                    good &= gpu_stream_line_off(par, src, n, lines, 0) == expect;
                    expect = gpu_stream_line_off(par, src, n, lines, lines - 1) + GPU_STREAM_LINE;
                }
            }
            CHECK(good && expect == total, "stream region, %zu bytes, %d ranks: %zu of %zu bytes",
                  maxes[k], n, expect, total);
        }
    }
    CHECK(0 == gpu_stream_region_bytes(0, 4), "no stream region when the kernel path is off");
    /* the bulk form: flags for every peer and block of both parities
     * before the slots, which stay 16-byte aligned (whole-vector pushes) */
    CHECK(GPU_STREAM_BULK_CTL_BYTES >= GPU_STREAM_BULK_FLAGS_OFF +
                                           2 * (size_t) GPU_MAX_PEERS * GPU_STREAM_BULK_MAX_BLOCKS * 8 &&
          GPU_STREAM_BULK_FLAGS_OFF >= 64 + sizeof(unsigned) && 0 == GPU_STREAM_BULK_CTL_BYTES % 16 &&
          0 == GPU_STREAM_BULK_PIECE % 16,
          "bulk region: counter, arrivals, then %d x %d flags per parity, slots 16-byte aligned",
          GPU_MAX_PEERS, GPU_STREAM_BULK_MAX_BLOCKS);
    CHECK(0 == gpu_stream_bulk_region_bytes(0, 4) &&
          gpu_stream_bulk_region_bytes((size_t) 4 << 20, 2) ==
              GPU_STREAM_BULK_CTL_BYTES + ((size_t) 16 << 20),
          "bulk region: none without slots; two parities of a slot per source");
    CHECK(gpu_stream_dtype_fits(1) && gpu_stream_dtype_fits(4) && gpu_stream_dtype_fits(8) &&
          !gpu_stream_dtype_fits(16) && !gpu_stream_dtype_fits(3) && !gpu_stream_dtype_fits(0),
          "element sizes that tile a line's 8 payload bytes: 1, 2, 4, 8");
}

/* The two-shot cut covers the message, respects the scratch, and gives a
 * block two chunks once shards would pass GPU_PLAN_TS_SPLIT. */
static void test_twoshot_cut(void)
{
    const size_t lens[] = { 1, 16, 4097, 262145, (size_t) 1 << 20, (size_t) 32 << 20,
                            (size_t) 64 << 20, 3000000017ull, (size_t) 1 << 31 };
    const size_t caps[] = { 4096, 128 * 1024, 256 * 1024, 1 << 20 };
    const int ns[] = { 2, 3, 4, 8 }, nbs[] = { 1, 64, 128 };
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); ++i)
    for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); ++k)
    for (size_t j = 0; j < sizeof(ns) / sizeof(ns[0]); ++j)
    for (size_t b = 0; b < sizeof(nbs) / sizeof(nbs[0]); ++b) {
        size_t s = 0;
        int nb = -1;
        gpu_plan_twoshot_cut(lens[i], ns[j], nbs[b], caps[k], &s, &nb);
        const size_t chunk = s * (size_t) ns[j], nch = (lens[i] + chunk - 1) / chunk;
        const size_t steps = (nch + (size_t) nb - 1) / (size_t) nb;
        CHECK(s > 0 && s % 16 == 0 && s <= caps[k], "shard %zu (cap %zu)", s, caps[k]);
        CHECK(s >= GPU_PLAN_TS_MIN_SHARD || s == caps[k], "shard %zu under the minimum", s);
        CHECK(nb >= 1 && nb <= nbs[b] && (size_t) nb <= nch, "%d blocks for %zu chunks", nb,
              nch);
        CHECK(nch * chunk >= lens[i] && (nch - 1) * chunk < lens[i], "chunks cover %zu bytes",
              lens[i]);
        const size_t one = (lens[i] + (size_t) ns[j] * nbs[b] - 1) / ((size_t) ns[j] * nbs[b]);
        CHECK(one <= GPU_PLAN_TS_SPLIT || steps >= 2,
              "%zu bytes, %d ranks, %d blocks: shards over the split point make >= 2 chunks a block "
              "(shard %zu, %zu steps)", lens[i], ns[j], nbs[b], s, steps);
    }
    size_t s;
    int nb;
    gpu_plan_twoshot_cut((size_t) 64 << 20, 2, 128, 256 * 1024, &s, &nb);
    CHECK(s == 128 * 1024 && nb == 128, "64 MiB on 2 ranks x 128 blocks: 128 KiB shards "
          "(got %zu, %d blocks)", s, nb);
    gpu_plan_twoshot_cut((size_t) 2 << 20, 2, 128, 256 * 1024, &s, &nb);
    CHECK(s == 16384 && nb == 64, "2 MiB: 64 blocks of one 16 KiB shard (got %zu, %d)", s, nb);
    gpu_plan_twoshot_cut((size_t) 8 << 20, 2, 128, 256 * 1024, &s, &nb);
    CHECK(s == 32768 && nb == 128, "8 MiB: 128 blocks of one 32 KiB shard (got %zu, %d)", s, nb);
}

/* The reduce's way (gpu_topo_reduce_way) at the component's defaults,
 * coll_gpu_reduce_twoshot_min 1 MiB and coll_gpu_reduce_chain_min 64 MiB
 * (run_cpu_tests.sh checks ompi_info shows them), and the name the
 * timing file carries for the two-shot. */
static void test_reduce_way(void)
{
    const size_t K = 1024, M = K * K, ts = M, chain = 64 * M;
    const struct { size_t bytes; gpu_reduce_way_t way; } at4[] = {
        { 512 * K, GPU_REDUCE_DIRECT }, { M - 1, GPU_REDUCE_DIRECT }, { M, GPU_REDUCE_TWOSHOT },
        { 4 * M, GPU_REDUCE_TWOSHOT }, { 16 * M, GPU_REDUCE_TWOSHOT },
        { 64 * M - 4, GPU_REDUCE_TWOSHOT }, { 64 * M, GPU_REDUCE_CHAIN },
        { 128 * M, GPU_REDUCE_CHAIN } };
    for (size_t i = 0; i < sizeof(at4) / sizeof(at4[0]); ++i) {
        const gpu_reduce_way_t w = gpu_topo_reduce_way(4, at4[i].bytes, 1, 0, 1, ts, chain);
        CHECK(w == at4[i].way, "reduce of %zu bytes at np 4: way %d (want %d)", at4[i].bytes,
              (int) w, (int) at4[i].way);
    }
    CHECK(0 == strcmp(GPU_PLAN_REDUCE_TS_NAME, "two-shot to root"),
          "the two-shot reduce's label is \"two-shot to root\" (%s)", GPU_PLAN_REDUCE_TS_NAME);
    /* coll_gpu_reduce_twoshot_min 0: never, at any size or rank count */
    int never = 1;
    for (int n = 1; n <= 32; ++n) {
        for (size_t b = 0; b <= 64 * M; b = b ? 2 * b : 1) {
            never &= GPU_REDUCE_TWOSHOT != gpu_topo_reduce_way(n, b, 1, 0, 1, 0, chain);
            never &= GPU_REDUCE_TWOSHOT != gpu_topo_reduce_way(n, b + 12, 1, 0, 1, 0, 64 * M);
        }
    }
    CHECK(never, "coll_gpu_reduce_twoshot_min 0: the two-shot is never chosen");
    CHECK(GPU_REDUCE_TWOSHOT == gpu_topo_reduce_way(3, 4 * M, 1, 0, 1, ts, chain) &&
          GPU_REDUCE_TWOSHOT == gpu_topo_reduce_way(8, 4 * M, 1, 0, 1, ts, chain),
          "3 and 8 ranks take the two-shot at 4 MiB");
    CHECK(GPU_REDUCE_DIRECT == gpu_topo_reduce_way(2, 4 * M, 1, 0, 1, ts, chain),
          "2 ranks keep the direct way (the same bytes on the root's link)");
    CHECK(GPU_REDUCE_DIRECT == gpu_topo_reduce_way(4, 4 * M, 0, 0, 1, ts, chain) &&
          GPU_REDUCE_DIRECT == gpu_topo_reduce_way(4, 128 * M, 0, 0, 1, ts, chain),
          "nonblocking reduces keep the direct way (host-paced rounds)");
    CHECK(GPU_REDUCE_DIRECT == gpu_topo_reduce_way(4, 4 * M, 1, 1, 1, ts, chain) &&
          GPU_REDUCE_DIRECT == gpu_topo_reduce_way(4, 128 * M, 1, 1, 1, ts, chain),
          "host-paced communicators keep the direct way");
    CHECK(GPU_REDUCE_DIRECT == gpu_topo_reduce_way(4, 4 * M, 1, 0, 0, ts, chain) &&
          GPU_REDUCE_CHAIN == gpu_topo_reduce_way(4, 128 * M, 1, 0, 0, ts, chain),
          "where the engine refuses the two-shot the direct way, the chain unchanged");
    CHECK(GPU_REDUCE_TWOSHOT == gpu_topo_reduce_way(4, 32 * M, 1, 0, 1, ts, 64 * M) &&
          GPU_REDUCE_CHAIN == gpu_topo_reduce_way(4, 32 * M, 1, 0, 1, ts, 16 * M) &&
          GPU_REDUCE_CHAIN == gpu_topo_reduce_way(4, 4 * M, 1, 0, 1, 8 * M, 4 * M),
          "the chain's threshold bounds the two-shot from above and wins over it");
}

static uint64_t word_ptr(const uint32_t *w, int i)
{
    return (uint64_t) w[i] | ((uint64_t) w[i + 1] << 32);
}

/* The persistent engine's pieces of the plans: the descriptor words, the
 * cut of a pair into block pieces, and the allreduce plan itself. */
static void test_ll(void)
{
    uint32_t w[GPU_LL_DESC_WORDS];
    unsigned long long waits[GPU_MAX_PEERS];
    int wblocks[GPU_MAX_PEERS];
    gpu_xchg_plan_t p[MAXN];
    static char in[MAXN][4096], out[MAXN][4096];
    const int n = 5;

    /* allreduce plan: emulated fold equals the reference, every rank */
    for (int r = 0; r < n; ++r) {
        fill(in[r], sizeof(in[r]), r + 1);
        CHECK(GPU_OK == gpu_plan_allreduce(&p[r], r, n, in[r], out[r], 4000), "allreduce plan");
        CHECK(p[r].ll_bytes == 4000 && !p[r].in_place, "allreduce plan sizes the LL path");
    }
    if (emulate(p, n)) {
        int good = 1;
        for (int r = 0; r < n; ++r) {
            for (int i = 0; i < 1000; ++i) {
                int32_t want = 0, got;
                for (int q = 0; q < n; ++q) {
                    int32_t x;
                    memcpy(&x, in[q] + 4 * i, 4);
                    want = (int32_t) ((uint32_t) want + (uint32_t) x);
                }
                memcpy(&got, out[r] + 4 * i, 4);
                good = good && got == want;
            }
        }
        CHECK(good, "allreduce plan folds every rank's input on every rank");
    } else {
        CHECK(0, "allreduce plan pairs agree");
    }
    CHECK(GPU_OK == gpu_plan_allreduce(&p[0], 0, 2, in[0], in[0], 64) && p[0].in_place,
          "allreduce in place is marked");

    /* descriptor words round-trip */
    gpu_plan_scan(&p[0], 2, n, in[0], out[0], 1000, 1);
    for (int q = 0; q < n; ++q) {
        waits[q] = 0x100000000ull * (unsigned) q + 7;
        wblocks[q] = q;
    }
    const gpu_ll_cmd_info_t info = { .cmd = GPU_LL_CMD_WORK, .op = GPU_OP_MAX, .dt = GPU_DT_F64,
                                     .gen = 77, .seq = 0x1234567890ull, .busy = 32,
                                     .sys_fence = 1, .wait_seq = waits, .wait_blocks = wblocks };
    const int nw = gpu_plan_ll_encode(&p[0], n, &info, w);
    CHECK(nw == GPU_LL_W_PEERS + GPU_LL_PEER_WORDS * n, "descriptor length %d", nw);
    CHECK((w[GPU_LL_W_CMD] & 15) == GPU_LL_CMD_WORK && ((w[GPU_LL_W_CMD] >> 4) & 1) == GPU_XCHG_REDUCE &&
          ((w[GPU_LL_W_CMD] >> 6) & 1) == 1 &&
          ((w[GPU_LL_W_CMD] >> 8) & 255) == GPU_OP_MAX && ((w[GPU_LL_W_CMD] >> 16) & 255) == GPU_DT_F64 &&
          32 == gpu_ll_cmd_busy(w[GPU_LL_W_CMD]),
          "command word: cmd, mode, system fence, op, type, busy blocks");
    CHECK(w[GPU_LL_W_GEN] == 77 && word_ptr(w, GPU_LL_W_SEQ) == 0x1234567890ull, "gen and 64-bit seq");
    CHECK((short) (w[GPU_LL_W_RED_RANGE] & 0xffff) == 0 && (short) (w[GPU_LL_W_RED_RANGE] >> 16) == 1,
          "exscan range 0..rank-1");
    CHECK(word_ptr(w, GPU_LL_W_RED_OUT) == (uint64_t) (uintptr_t) out[0] &&
          w[GPU_LL_W_RED_LEN] == 1000, "reduce output and length");
    int peers_ok = 1;
    for (int q = 0; q < n; ++q) {
        const uint32_t *e = w + GPU_LL_W_PEERS + GPU_LL_PEER_WORDS * q;
        peers_ok = peers_ok && (e[GPU_LL_P_SEND_LEN] & 0xffffff) == p[0].send_len[q] &&
                   (int) (e[GPU_LL_P_SEND_LEN] >> 24) == q &&
                   word_ptr(e, GPU_LL_P_SEND_SRC) == (uint64_t) (uintptr_t) p[0].send_src[q] &&
                   word_ptr(e, GPU_LL_P_WAIT_SEQ) == waits[q];
    }
    CHECK(peers_ok, "per-peer words: source, length, blocks to wait for, call to wait for");
    gpu_plan_scan(&p[0], 0, n, in[0], out[0], 1000, 1);
    const gpu_ll_cmd_info_t plain = { .cmd = GPU_LL_CMD_WORK, .op = GPU_OP_SUM, .dt = GPU_DT_I32,
                                      .gen = 1, .seq = 1, .busy = 1 };
    gpu_plan_ll_encode(&p[0], n, &plain, w);
    CHECK((short) (w[GPU_LL_W_RED_RANGE] >> 16) == -1, "empty range (rank 0 exscan) survives");
    CHECK(0 == ((w[GPU_LL_W_CMD] >> 6) & 1) && 1 == gpu_ll_cmd_busy(w[GPU_LL_W_CMD]) &&
          0 == (w[GPU_LL_W_PEERS + GPU_LL_P_SEND_LEN] >> 24), "no fence, one block, no waits");

    /* pieces: blocks cover a pair exactly once, 8-byte aligned cuts, at
     * every smallest piece coll_gpu_persist_piece_bytes may give (whole lines) */
    const size_t lens[] = { 1, 8, 9, 127, 4095, 4096, 4099, 65536, 262144, 262147 };
    const size_t pieces[] = { 8, 1024, 4096 };
    for (size_t m = 0; m < sizeof(pieces) / sizeof(pieces[0]); ++m) {
        for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); ++k) {
            for (int nb = 1; nb <= 32; nb *= 2) {
                size_t covered = 0, off, len;
                int busy = 0;
                for (int b = 0; b < nb; ++b) {
                    if (gpu_ll_block_range(lens[k], b, nb, pieces[m], &off, &len)) {
                        covered += (off == covered) ? len : 0;
                        busy = b + 1;
                        CHECK(off % 8 == 0 && (len >= pieces[m] || off + len == lens[k]),
                              "piece starts on a line, no smaller than the minimum but the last");
                    }
                }
                CHECK(covered == lens[k] && busy == gpu_ll_blocks_for(lens[k], nb, pieces[m]),
                      "%zu bytes in %d blocks, pieces >= %zu: covered %zu, busy %d", lens[k], nb,
                      pieces[m], covered, busy);
            }
        }
    }
    CHECK(1 == gpu_ll_blocks_for(4096, 8, 4096) && 2 == gpu_ll_blocks_for(4097, 8, 4096),
          "up to 4 KiB one block");
    CHECK(32 == gpu_ll_blocks_for(4096, 32, 8) && 1 == gpu_ll_blocks_for(8, 32, 8) &&
              2 == gpu_ll_blocks_for(9, 32, 8),
          "8-byte pieces: a 4 KiB pair over all 32 blocks, a line per block at the smallest");
    /* the agreed size each collective's plan carries */
    size_t rl[3] = { 10, 300, 20 }, rd[3] = { 0, 10, 310 };
    gpu_plan_allgatherv(&p[0], 0, 3, in[0], out[0], rl, rd);
    CHECK(p[0].ll_bytes == 300, "allgatherv: largest count, known everywhere");
    gpu_plan_bcast(&p[0], 1, 3, 0, out[0], 123, 0, NULL);
    CHECK(p[0].ll_bytes == 123 && 1 == gpu_plan_ll_busy_blocks(&p[0], 1, 3, 8, 4096),
          "bcast receiver: one busy block");
}

/* Slot flow control: which acks a writer waits for before it rewrites a
 * (peer, parity) slot, emulated over call sequences on rank 0 of 2. */
static unsigned long long slot_call(gpu_ll_slots_t *s, gpu_xchg_plan_t *p, unsigned long long seq,
                                    size_t bytes, int *wblocks)
{
    static char in[1 << 20], out[1 << 20];
    unsigned long long waits[GPU_MAX_PEERS];
    gpu_plan_allreduce(p, 0, 2, in, out, bytes);
    gpu_plan_ll_slots(s, p, 0, 2, 32, 4096, seq, waits, wblocks);
    return waits[1];
}

/* the resident kernel's sender/receiver split: even while small, the
 * waiting side's share when big, whole warps, someone always reports */
static void test_ll_split(void)
{
    CHECK(256 == gpu_ll_split(512, 1, 1, 0, 0) && 256 == gpu_ll_split(512, 1, 1, 1, 0),
          "two-sided block, small receive side: even split");
    CHECK(128 == gpu_ll_split(512, 1, 1, 0, 1) && 128 == gpu_ll_split(512, 1, 1, 1, 1),
          "two-sided block, big receive side: a quarter sends");
    CHECK(0 == gpu_ll_split(512, 0, 1, 0, 1) && 256 == gpu_ll_split(512, 0, 1, 0, 0),
          "receiving-only block: every thread receives once big");
    CHECK(480 == gpu_ll_split(512, 1, 0, 1, 0) && 256 == gpu_ll_split(512, 1, 0, 0, 0),
          "sending-only block: all but the last warp send once big");
    /* the smallest block the launcher allows (64 threads): a quarter would
     * be no warp at all, so it stays even */
    CHECK(32 == gpu_ll_split(64, 1, 1, 1, 1) && 32 == gpu_ll_split(64, 1, 0, 1, 0) &&
          0 == gpu_ll_split(64, 0, 1, 0, 1), "64-thread blocks");
    for (unsigned nt = 64; nt <= 512; nt += 32) {
        for (int k = 0; k < 16; ++k) {
            const int s = k & 1, r = (k >> 1) & 1;
            const unsigned sp = gpu_ll_split(nt, s, r, (k >> 2) & 1, (k >> 3) & 1);
            CHECK(0 == sp % 32 && sp < nt && (!s || sp > 0) && (!r || sp <= nt - 32 || 0 == sp),
                  "nt %u case %d: split %u is whole warps, leaves a reporter, gives senders a warp",
                  nt, k, sp);
        }
    }
}

static void test_ll_slots(void)
{
    gpu_ll_slots_t s;
    gpu_xchg_plan_t p;
    int wb[GPU_MAX_PEERS];
    unsigned long long ws;

    memset(&s, 0, sizeof(s));
    slot_call(&s, &p, 1, 8, wb);
    CHECK(0 == wb[1], "first use of a slot waits for nothing");
    slot_call(&s, &p, 2, 8, wb);
    ws = slot_call(&s, &p, 3, 8, wb);
    CHECK(0 == wb[1] && 1 == ws, "back-to-back allreduces: call 2 proved call 1 read (%d)", wb[1]);
    /* the call in between read fewer blocks than the slot's last call had */
    memset(&s, 0, sizeof(s));
    slot_call(&s, &p, 1, 65536, wb);
    slot_call(&s, &p, 2, 8, wb);
    ws = slot_call(&s, &p, 3, 65536, wb);
    CHECK(16 == wb[1] && 1 == ws, "16 reader blocks of call 1 to wait for, got %d", wb[1]);
    /* pieces cut differently: our block b writes what their block b' read */
    memset(&s, 0, sizeof(s));
    slot_call(&s, &p, 1, 65536, wb);
    slot_call(&s, &p, 2, 262144, wb);
    slot_call(&s, &p, 3, 262144, wb);
    CHECK(16 == wb[1], "other piece size: wait (%d)", wb[1]);
    /* a bcast root never hears from the readers: always waits */
    memset(&s, 0, sizeof(s));
    static char buf[4096];
    for (unsigned long long q = 1; q <= 3; ++q) {
        unsigned long long waits[GPU_MAX_PEERS];
        gpu_plan_bcast(&p, 0, 2, 0, buf, 100, 0, NULL);
        gpu_plan_ll_slots(&s, &p, 0, 2, 32, 4096, q, waits, wb);
        ws = waits[1];
    }
    CHECK(1 == wb[1] && 1 == ws, "bcast root waits for the reader's ack of call 1");
    /* a call with nothing for this rank proves nothing */
    memset(&s, 0, sizeof(s));
    slot_call(&s, &p, 1, 8, wb);
    {
        unsigned long long waits[GPU_MAX_PEERS];
        gpu_plan_bcast(&p, 0, 2, 0, buf, 100, 0, NULL);
        gpu_plan_ll_slots(&s, &p, 0, 2, 32, 4096, 2, waits, wb);
    }
    slot_call(&s, &p, 3, 8, wb);
    CHECK(1 == wb[1], "root of call 2 heard nothing: waits for call 1's reader");
    /* sequences that skip (calls numbered by the kind board, host calls between):
     * the call before may share the slot's parity and be its last write,
     * so it proves nothing about its own lines */
    memset(&s, 0, sizeof(s));
    slot_call(&s, &p, 4, 8, wb);
    ws = slot_call(&s, &p, 8, 8, wb);
    CHECK(1 == wb[1] && 4 == ws, "call 8 after 4 (same slot): waits for 4's reader (%d)", wb[1]);
    ws = slot_call(&s, &p, 13, 8, wb);
    CHECK(0 == wb[1] && 0 == ws, "call 13: first use of the odd slot");
    ws = slot_call(&s, &p, 16, 8, wb);
    CHECK(0 == wb[1] && 8 == ws, "call 16 after 13: 13 proved 8 read (%d)", wb[1]);
    /* a dropped call: its lines may never be read; the slot's call before
     * it is waited for again, and it proves nothing */
    memset(&s, 0, sizeof(s));
    slot_call(&s, &p, 4, 8, wb);
    slot_call(&s, &p, 5, 8, wb);
    slot_call(&s, &p, 8, 8, wb);
    gpu_plan_ll_slots_drop(&s, &p, 0, 2);
    ws = slot_call(&s, &p, 12, 8, wb);
    CHECK(1 == wb[1] && 4 == ws, "after dropped call 8: call 12 waits for 4's reader (%llu, %d)",
          ws, wb[1]);
    ws = slot_call(&s, &p, 13, 8, wb);
    CHECK(0 == wb[1] && 5 == ws, "call 13 after 12: 12 proved 5 read (%d)", wb[1]);
}

static void test_paced_refusals(void)
{
    static const gpu_paced_ops_t ops = { .copy = host_copy, .fold = host_fold };
    gpu_xchg_plan_t p;
    char buf[64], area[4 * 64];
    int more = -1;
    gpu_plan_bcast(&p, 1, 4, 0, buf, sizeof(buf), 1, NULL);
    CHECK(GPU_ERR_UNSUPPORTED == gpu_paced_stage(&p, 1, 4, 0, 64, area, &ops, NULL, &more) &&
          -1 == more, "paced rounds refuse a relay plan");
    CHECK(0 == gpu_paced_chunk(3, 4) && 12 == gpu_paced_chunk(14, 4) && 256 == gpu_paced_chunk(256, 8),
          "paced chunk is whole elements");
}

int main(void)
{
    /* the plans through the exchange kernel's rules, then through the
     * host-paced rounds with chunks from one element to more than any pair */
    static const size_t chunks[] = { 0, 4, 100, 4096, 1 << 20 };
    for (size_t ci = 0; ci < sizeof(chunks) / sizeof(chunks[0]); ++ci) {
    paced_chunk = chunks[ci];
    for (int n = 1; n <= MAXN; ++n) {
        for (int rep = 0; rep < 3; ++rep) {
            test_bcast(n, 0);
            if (!paced_chunk) {    /* relays are refused by the paced rounds */
                test_bcast(n, 1);
                test_bcast(n, 2);   /* chain along a topology order */
            }
            test_reduce_and_scan(n);
            if (n > 2) {
                test_reduce_chain(n);
            }
            test_allgatherv(n, rep & 1);
            test_alltoallv(n, rep & 1);
            for (int c = 0; c < 3; ++c) {
                static const size_t pc[] = { 0, 16, 8 };   /* whole, kernel chunks, LL lines */
                pair_chunk = pc[c];
                test_two_pieces(n);
            }
            pair_chunk = 0;
            test_gather_scatter(n, rep & 1);
            test_reduce_scatter(n);
        }
    }
    }
    paced_chunk = 0;
    test_paced_refusals();
    test_chunking();
    test_stream_region();
    test_twoshot_cut();
    test_reduce_way();
    test_ll();
    test_ll_split();
    test_ll_slots();
    printf("test_plan: %d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
