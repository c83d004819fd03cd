/*
 * Reductions of MPI_LONG_DOUBLE_INT as the engine runs them (gpu_plan_wide,
 * engine/gpu_plan.h): the movement plans of every rank emulated, their
 * pairs cut into 16-byte pieces as the kernels cut them (a 32-byte element
 * then travels in two pieces), then the fold of the area's sources in rank
 * order with the functors the GPU runs (gpu_red on gpu_pair<gpu_ld80>),
 * checked against MINLOC/MAXLOC computed with the x87's own long double
 * comparisons.  Allreduce, reduce at every root (in place too),
 * reduce_scatter with uneven and zero blocks, scan and exscan, 1 to 5 ranks.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/gpu_plan.h"
#include "kernels/gpu_reduce_ops.h"
#include "test/unit/check.h"

#define MAXN 5
#define MAXC 40

#if defined(__x86_64__)

struct ldi {
    long double v;
    int i;
};
static_assert(sizeof(ldi) == 32, "x86-64 long double int is 32 bytes");
typedef gpu_pair<gpu_ld80> dev_ldi;
static_assert(sizeof(dev_ldi) == 32, "the functors' pair has the C layout");

static unsigned rng = 777;
static int rnd(int m)
{
    rng = rng * 1103515245u + 12345u;
    return (int) ((rng >> 8) % (unsigned) m);
}

/* values with many ties, both zeros, infinities, a NaN now and then */
static long double value(void)
{
    switch (rnd(12)) {
    case 0: return -0.0L;
    case 1: return 0.0L;
    case 2: return INFINITY;
    case 3: return -INFINITY;
    case 4: return rnd(8) == 0 ? (long double) NAN : 1.0L;
    case 5: return 1e-4940L * (rnd(3) + 1);   /* subnormal */
    default: return (long double) (rnd(7) - 3) + (rnd(2) ? 0.5L : 0.0L);
    }
}

/* MPI's MINLOC/MAXLOC with the x87's comparisons: the incoming element
 * wins only when strictly better, ties keep the smaller index */
static void ref_fold(ldi *acc, const ldi *x, int maxloc)
{
    const bool better = maxloc ? x->v > acc->v : x->v < acc->v;
    if (better) {
        *acc = *x;
    } else if (x->v == acc->v && x->i < acc->i) {
        acc->i = x->i;
    }
}

static bool same(const ldi *a, const ldi *b)
{
    /* the 10 bytes of the value and the index; padding is not data */
    return 0 == memcmp(&a->v, &b->v, 10) && a->i == b->i;
}

/* Run the n plans: pairs cut into 16-byte pieces, then every fold as
 * gpu_engine_wide_fold runs it (acc = the first source where it lies,
 * acc = acc op source for each further one with the GPU's functor, then
 * acc copied out) */
static bool emulate(const gpu_xchg_plan_t *p, const gpu_wide_fold_t *f, int n, gpu_op_t op)
{
    for (int s = 0; s < n; ++s) {
        for (int r = 0; r < n; ++r) {
            if (r == s) {
                continue;
            }
            if (p[s].send_len[r] != p[r].recv_len[s]) {
                printf("  pair %d->%d: sender %zu bytes, receiver %zu\n", s, r,
                       p[s].send_len[r], p[r].recv_len[s]);
                return false;
            }
            for (size_t off = 0; off < p[s].send_len[r]; off += 16) {
                const size_t len = p[s].send_len[r] - off < 16 ? p[s].send_len[r] - off : 16;
                memcpy(p[r].recv_dst[s] + off, p[s].send_src[r] + off, len);
            }
        }
    }
    for (int r = 0; r < n; ++r) {
        if (p[r].self_len) {
            memmove(p[r].self_dst, p[r].self_src, p[r].self_len);
        }
    }
    for (int r = 0; r < n; ++r) {
        if (f[r].hi <= f[r].lo || 0 == f[r].len) {
            continue;
        }
        const size_t ne = f[r].len / sizeof(dev_ldi);
        dev_ldi *acc = (dev_ldi *) (f[r].area + (size_t) f[r].lo * f[r].stride);
        for (int s = f[r].lo + 1; s < f[r].hi; ++s) {
            const dev_ldi *x = (const dev_ldi *) (f[r].area + (size_t) s * f[r].stride);
            for (size_t i = 0; i < ne; ++i) {
                acc[i] = GPU_OP_MAXLOC == op ? gpu_red<GPU_OP_MAXLOC, dev_ldi>::apply(acc[i], x[i])
                                             : gpu_red<GPU_OP_MINLOC, dev_ldi>::apply(acc[i], x[i]);
            }
        }
        memcpy(f[r].out, acc, f[r].len);
    }
    return true;
}

static ldi in[MAXN][MAXN * MAXC], out[MAXN][MAXN * MAXC];
alignas(32) static char area[MAXN][MAXN * MAXN * MAXC * sizeof(ldi)];

static void fill(int n, size_t per)
{
    memset(out, 0x5a, sizeof(out));
    for (int r = 0; r < n; ++r) {
        memset(in[r], 0, sizeof(in[r]));
        for (size_t k = 0; k < per; ++k) {
            in[r][k].v = value();
            in[r][k].i = rnd(4) == 0 ? r : (int) (k % 3);   /* ties of indices too */
        }
    }
}

/* rank r's expected element k: inputs lo..hi-1's element at off + k */
static ldi expect(int lo, int hi, size_t off, size_t k, int maxloc)
{
    ldi acc = in[lo][off + k];
    for (int s = lo + 1; s < hi; ++s) {
        ref_fold(&acc, &in[s][off + k], maxloc);
    }
    return acc;
}

static void run(int coll, int n, int root, int in_place, gpu_op_t op)
{
    static const char *names[] = { "", "allreduce", "reduce", "reduce_scatter", "scan",
                                   "exscan" };
    gpu_xchg_plan_t p[MAXN];
    gpu_wide_fold_t f[MAXN];
    size_t len[MAXN], count = (size_t) rnd(MAXC) + 1, total = 0;
    const int maxloc = GPU_OP_MAXLOC == op;
    bool built = true;

    for (int q = 0; q < n; ++q) {
        len[q] = GPU_WIDE_REDUCE_SCATTER == coll ? (size_t) rnd(5) : count;
        total += len[q];
    }
    fill(n, GPU_WIDE_REDUCE_SCATTER == coll ? total : count);
    for (int r = 0; r < n; ++r) {
        gpu_wide_t w;
        memset(&w, 0, sizeof(w));
        w.coll = coll;
        w.rank = r;
        w.n = n;
        w.root = root;
        w.op = op;
        w.dt = GPU_DT_LDOUBLE_INT;
        for (int q = 0; q < n; ++q) {
            w.len[q] = len[q] * sizeof(ldi);
        }
        if (in_place) {
            memcpy(out[r], in[r], sizeof(in[r]));
            w.in = reinterpret_cast<const char *>(out[r]);
        } else {
            w.in = reinterpret_cast<const char *>(in[r]);
        }
        w.out = reinterpret_cast<char *>(out[r]);
        CHECK(gpu_wide_area_bytes(&w) <= sizeof(area[r]), "area of %zu bytes",
              gpu_wide_area_bytes(&w));
        built = built && GPU_OK == gpu_plan_wide(&w, area[r], &p[r], &f[r]);
    }
    CHECK(built, "%s: plans built", names[coll]);
    const bool ok = built && emulate(p, f, n, op);
    CHECK(ok, "%s, %d ranks: pair lengths agree", names[coll], n);
    if (!ok) {
        return;
    }
    int bad = 0;
    for (int r = 0; r < n && !bad; ++r) {
        int lo = 0, hi = n;
        size_t off = 0, ne = count;
        switch (coll) {
        case GPU_WIDE_REDUCE:
            hi = r == root ? n : 0;
            break;
        case GPU_WIDE_REDUCE_SCATTER:
            for (int q = 0; q < r; ++q) {
                off += len[q];
            }
            ne = len[r];
            break;
        case GPU_WIDE_SCAN:
            hi = r + 1;
            break;
        case GPU_WIDE_EXSCAN:
            hi = r;
            break;
        default:
            break;
        }
        for (size_t k = 0; k < ne && hi > lo && !bad; ++k) {
            const ldi want = expect(lo, hi, off, k, maxloc);
            if (!same(&out[r][k], &want)) {
                printf("  %s %s, %d ranks, root %d: rank %d element %zu: (%Lg, %d), want "
                       "(%Lg, %d)\n", names[coll], maxloc ? "maxloc" : "minloc", n, root, r, k,
                       out[r][k].v, out[r][k].i, want.v, want.i);
                bad = 1;
            }
        }
        /* ranks with nothing to fold leave their output alone (exscan's
         * rank 0, a reduce's other ranks) */
        if (hi <= lo && !in_place) {
            const unsigned char *b = reinterpret_cast<const unsigned char *>(out[r]);
            bad |= b[0] != 0x5a;
        }
    }
    CHECK(!bad, "%s %s, %d ranks, root %d%s: every element as the x87 computes it",
          names[coll], maxloc ? "maxloc" : "minloc", n, root, in_place ? ", in place" : "");
}

int main(void)
{
    for (int rep = 0; rep < 20; ++rep) {
        for (int n = 1; n <= MAXN; ++n) {
            for (int o = 0; o < 2; ++o) {
                const gpu_op_t op = o ? GPU_OP_MAXLOC : GPU_OP_MINLOC;
                run(GPU_WIDE_ALLREDUCE, n, 0, 0, op);
                run(GPU_WIDE_ALLREDUCE, n, 0, 1, op);
                for (int root = 0; root < n; ++root) {
                    run(GPU_WIDE_REDUCE, n, root, root & 1, op);
                }
                run(GPU_WIDE_REDUCE_SCATTER, n, 0, 0, op);
                run(GPU_WIDE_REDUCE_SCATTER, n, 0, 1, op);
                run(GPU_WIDE_SCAN, n, 0, rep & 1, op);
                run(GPU_WIDE_EXSCAN, n, 0, rep & 1, op);
            }
        }
    }
    /* the area a rank asks for: n inputs, or n of its own block */
    gpu_wide_t w;
    memset(&w, 0, sizeof(w));
    w.coll = GPU_WIDE_REDUCE;
    w.n = 4;
    w.rank = 1;
    w.root = 2;
    w.len[0] = 64;
    CHECK(0 == gpu_wide_area_bytes(&w), "a reduce's non-root needs no area");
    w.rank = 2;
    CHECK(256 == gpu_wide_area_bytes(&w), "the reduce's root: n inputs");
    w.coll = GPU_WIDE_REDUCE_SCATTER;
    w.len[2] = 96;
    CHECK(384 == gpu_wide_area_bytes(&w), "reduce_scatter: n of this rank's block");
    printf("test_wide: %d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}

#else

int main(void)
{
    printf("SKIP test_wide: x87 long double is x86-64's\n");
    printf("test_wide: %d passed, %d failed\n", npass, nfail);
    return 0;
}

#endif
