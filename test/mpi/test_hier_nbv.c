/*
 * Nonblocking and persistent gather(v), scatter(v), allgatherv, alltoall(v,w),
 * reduce_scatter, scan and exscan across (virtual) nodes on device buffers,
 * through coll/gpu: on GPUs they run on the communicator's hierarchy thread
 * (ompi_coll_gpu/coll_gpu_hier_nb.c, the layout copied per call by
 * coll_gpu_hier_v.c); on the driver stand-in of make check the hierarchy is
 * not set up and they stage, which must be as right.
 *
 * What MPI lets a program pass, as a program would: blocks of length 0,
 * displacements out of rank order with gaps between the blocks (the gaps
 * must keep their poison), arguments that count only at the root given as
 * NULL elsewhere, MPI_IN_PLACE (allgatherv, alltoallv), sixteen calls
 * outstanding on two communicators (the second in reversed rank order, whose
 * scan the hierarchy declines: it must stage on every rank alike), completed
 * by MPI_Test loops and MPI_Waitall in reverse, a blocking call among them.
 * Persistent alltoallv, gatherv, allgatherv and scan started
 * three times with new inputs.  Every output is compared whole, gaps
 * included, with a host reference.
 * Usage: mpirun -np N test_hier_nbv   (OMPI_MCA_coll_gpu_virtual_nodes=N)
 * Prints "N passed, N failed"; exit status 1 on a failure.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_persist_compat.h"

#define DRV_TEST_NAME "test_hier_nbv"
#include "drv_mem.h"

#define POISON ((int) 0xA5A5A5A5)

/* comm rank r's element i of call k (sums of a few ranks stay exact) */
static int val(int r, size_t i, int k)
{
    return (r + 1) * (int) (i % 89 + 1) + 5 * k;
}

/* block q of a v layout of salt s: some empty, lengths around base */
static int blen(int q, int salt, int base)
{
    return (q + salt) % 3 == 2 ? 0 : base + (q * 5 + salt) % 7;
}

/* what rank src sends rank dst in alltoallv (symmetric where sym) */
static int pair(int src, int dst, int base, int sym)
{
    if (sym && src > dst) {
        const int t = src;
        src = dst;
        dst = t;
    }
    return (src + 2 * dst) % 4 == 3 ? 0 : base + (src * 3 + dst) % 5;
}

/* blocks placed in reverse rank order, 3 elements of gap before each;
 * returns the extent in elements */
static size_t place(int n, const int *cnt, int *dsp)
{
    size_t at = 0;
    for (int q = n - 1; q >= 0; --q) {
        dsp[q] = (int) at + 3;
        at += 3 + (size_t) cnt[q];
    }
    return at + 3;
}

/* the layout of a v call (counts by blen) */
static size_t vlayout(int n, int salt, int base, int *cnt, int *dsp)
{
    for (int q = 0; q < n; ++q) {
        cnt[q] = blen(q, salt, base);
    }
    return place(n, cnt, dsp);
}

/* rank me's alltoallv sides: send counts pair(me, q), receive pair(q, me) */
static size_t a2a_layout(int n, int me, int base, int sym, int send, int *cnt, int *dsp)
{
    for (int q = 0; q < n; ++q) {
        cnt[q] = send ? pair(me, q, base, sym) : pair(q, me, base, sym);
    }
    return place(n, cnt, dsp);
}

static int *hfill(size_t n, int r, int k)
{
    int *h = malloc(n * sizeof(int) + 4);
    for (size_t i = 0; i < n; ++i) {
        h[i] = val(r, i, k);
    }
    return h;
}

static int *dfill(size_t n, int r, int k)
{
    int *d = dalloc(n), *h = hfill(n, r, k);
    put(d, h, n);
    free(h);
    return d;
}

static int *dpoison(size_t n)
{
    int *d = dalloc(n);
    poison(d, n);
    return d;
}

static int *hpoison(size_t n)
{
    int *h = malloc(n * sizeof(int) + 4);
    for (size_t i = 0; i < n; ++i) {
        h[i] = POISON;
    }
    return h;
}

/* the device result d against the host reference want, whole; frees want */
static void compare(const char *what, int k, const int *d, int *want, size_t n)
{
    int *h = malloc(n * sizeof(int) + 4);
    size_t bad = n;
    get(h, d, n);
    for (size_t i = 0; i < n && bad == n; ++i) {
        if (h[i] != want[i]) {
            bad = i;
        }
    }
    CHECK(bad == n, "%s (call %d), %zu elements: element %zu is %d, want %d%s", what, k, n, bad,
          bad < n ? h[bad] : 0, bad < n ? want[bad] : 0,
          bad < n && want[bad] == POISON ? " (a gap: the poison)" : "");
    free(h);
    free(want);
}

/* the calls of one round on one communicator: buffers, layouts, checks */
typedef struct {
    MPI_Comm c;
    int n, me, base, k;
    void *host[32];           /* a call's arrays: MPI reads them until it completes */
    int *buf[32];             /* device buffers */
    int nhost, nbuf;
} round_t;

static int *keep(round_t *x, int *d)
{
    x->buf[x->nbuf++] = d;
    return d;
}

static void *harr(round_t *x, size_t elem)
{
    void *p = malloc((size_t) x->n * elem);
    x->host[x->nhost++] = p;
    return p;
}

static void round_init(round_t *x, MPI_Comm c, int base, int k)
{
    memset(x, 0, sizeof(*x));
    x->c = c;
    x->base = base;
    x->k = k;
    MPI_Comm_size(c, &x->n);
    MPI_Comm_rank(c, &x->me);
}

static void round_free(round_t *x)
{
    for (int i = 0; i < x->nhost; ++i) {
        free(x->host[i]);
    }
    for (int i = 0; i < x->nbuf; ++i) {
        dfree(x->buf[i]);
    }
    x->nhost = x->nbuf = 0;
}

/* gatherv to root k % n: the root's arguments only there */
static void start_gatherv(round_t *x, int salt, MPI_Request *q, int **out, size_t *ext)
{
    const int root = x->k % x->n, is_root = x->me == root;
    int mine = blen(x->me, salt, x->base), *cnt = harr(x, sizeof(int)), *dsp = harr(x, sizeof(int));
    *ext = vlayout(x->n, salt, x->base, cnt, dsp);
    *out = is_root ? keep(x, dpoison(*ext)) : NULL;
    MPI_Igatherv(keep(x, dfill((size_t) mine + 1, x->me, x->k)), mine, MPI_INT, *out,
                 is_root ? cnt : NULL, is_root ? dsp : NULL, MPI_INT, root, x->c, q);
}

static void check_gatherv(const round_t *x, int salt, const int *out, size_t ext)
{
    int cnt[x->n], dsp[x->n];
    int *want = hpoison(ext);
    if (x->me != x->k % x->n) {
        free(want);
        return;
    }
    vlayout(x->n, salt, x->base, cnt, dsp);
    for (int q = 0; q < x->n; ++q) {
        for (int i = 0; i < cnt[q]; ++i) {
            want[dsp[q] + i] = val(q, (size_t) i, x->k);
        }
    }
    compare("Igatherv", x->k, out, want, ext);
}

/* scatterv from root (k + 1) % n: the send side only at the root */
static void start_scatterv(round_t *x, int salt, MPI_Request *q, int **out)
{
    const int root = (x->k + 1) % x->n, is_root = x->me == root;
    int *cnt = harr(x, sizeof(int)), *dsp = harr(x, sizeof(int));
    const size_t ext = vlayout(x->n, salt, x->base, cnt, dsp);
    *out = keep(x, dpoison((size_t) cnt[x->me] + 2));
    MPI_Iscatterv(is_root ? keep(x, dfill(ext, x->me, x->k + 1)) : NULL, is_root ? cnt : NULL,
                  is_root ? dsp : NULL, MPI_INT, *out, cnt[x->me], MPI_INT, root, x->c, q);
}

static void check_scatterv(const round_t *x, int salt, const int *out)
{
    int cnt[x->n], dsp[x->n];
    const int root = (x->k + 1) % x->n;
    vlayout(x->n, salt, x->base, cnt, dsp);
    int *want = hpoison((size_t) cnt[x->me] + 2);
    for (int i = 0; i < cnt[x->me]; ++i) {
        want[i] = val(root, (size_t) (dsp[x->me] + i), x->k + 1);
    }
    compare("Iscatterv", x->k, out, want, (size_t) cnt[x->me] + 2);
}

/* allgatherv, in place or not: rank q's block is val(q, i) */
static void start_allgatherv(round_t *x, int salt, int in_place, MPI_Request *q, int **out,
                             size_t *ext)
{
    int *b = harr(x, sizeof(int)), *d = harr(x, sizeof(int));
    *ext = vlayout(x->n, salt, x->base, b, d);
    *out = keep(x, dpoison(*ext));
    if (in_place) {
        int *h = hfill((size_t) b[x->me], x->me, x->k + 2);
        put(*out + d[x->me], h, (size_t) b[x->me]);
        free(h);
        MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, *out, b, d, MPI_INT, x->c, q);
    } else {
        MPI_Iallgatherv(keep(x, dfill((size_t) b[x->me] + 1, x->me, x->k + 2)), b[x->me],
                        MPI_INT, *out, b, d, MPI_INT, x->c, q);
    }
}

static void check_allgatherv(const round_t *x, int salt, const int *out, size_t ext, int in_place)
{
    int cnt[x->n], dsp[x->n];
    int *want = hpoison(ext);
    vlayout(x->n, salt, x->base, cnt, dsp);
    for (int q = 0; q < x->n; ++q) {
        for (int i = 0; i < cnt[q]; ++i) {
            want[dsp[q] + i] = val(q, (size_t) i, x->k + 2);
        }
    }
    compare(in_place ? "Iallgatherv in place" : "Iallgatherv", x->k, out, want, ext);
}

/* alltoallv (w: alltoallw of MPI_INT, byte displacements), in place with
 * symmetric counts: sender s's send buffer element p is val(s, p) */
static void start_a2a(round_t *x, int w, int in_place, MPI_Request *q, int **out, size_t *ext)
{
    const int me = x->me, sym = in_place, k = x->k + 3 + w + 2 * in_place;
    int *sc = harr(x, sizeof(int)), *sd = harr(x, sizeof(int));
    int *rc = harr(x, sizeof(int)), *rd = harr(x, sizeof(int));
    const size_t sext = a2a_layout(x->n, me, x->base, sym, 1, sc, sd);
    MPI_Datatype *ty = harr(x, sizeof(MPI_Datatype));

    *ext = a2a_layout(x->n, me, x->base, sym, 0, rc, rd);
    *out = keep(x, in_place ? dfill(*ext, me, k) : dpoison(*ext));
    if (in_place) {
        MPI_Ialltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, *out, rc, rd, MPI_INT, x->c,
                       q);
        return;
    }
    if (!w) {
        MPI_Ialltoallv(keep(x, dfill(sext, me, k)), sc, sd, MPI_INT, *out, rc, rd, MPI_INT, x->c,
                       q);
        return;
    }
    for (int p = 0; p < x->n; ++p) {
        ty[p] = MPI_INT;
        sd[p] *= (int) sizeof(int);
        rd[p] *= (int) sizeof(int);
    }
    MPI_Ialltoallw(keep(x, dfill(sext, me, k)), sc, sd, ty, *out, rc, rd, ty, x->c, q);
}

static void check_a2a(const round_t *x, int w, int in_place, const int *out, size_t ext)
{
    const int me = x->me, sym = in_place, k = x->k + 3 + w + 2 * in_place;
    int rc[x->n], rd[x->n], sc[x->n], sd[x->n];
    int *want = hpoison(ext);
    static const char *const names[] = { "Ialltoallv", "Ialltoallw", "Ialltoallv in place" };

    a2a_layout(x->n, me, x->base, sym, 0, rc, rd);
    for (int s = 0; s < x->n; ++s) {
        /* where s put what it sends me: its own layout */
        if (in_place) {
            a2a_layout(x->n, s, x->base, sym, 0, sc, sd);
        } else {
            a2a_layout(x->n, s, x->base, sym, 1, sc, sd);
        }
        for (int i = 0; i < rc[s]; ++i) {
            want[rd[s] + i] = val(s, (size_t) (sd[me] + i), k);
        }
    }
    if (in_place) {
        /* the gaps of an in-place buffer keep this rank's own values */
        int *mine = hfill(ext, me, k);
        for (size_t i = 0; i < ext; ++i) {
            want[i] = want[i] == POISON ? mine[i] : want[i];
        }
        free(mine);
    }
    compare(names[in_place ? 2 : w], x->k, out, want, ext);
}

/* reduce_scatter with MAX (the largest rank's value wins): the counts of
 * salt's layout, in rank order in the input */
static void start_rs(round_t *x, int salt, MPI_Request *q, int **out)
{
    int *cnt = harr(x, sizeof(int));
    size_t tot = 0;
    for (int p = 0; p < x->n; ++p) {
        cnt[p] = blen(p, salt, x->base);
        tot += (size_t) cnt[p];
    }
    *out = keep(x, dpoison((size_t) cnt[x->me] + 2));
    MPI_Ireduce_scatter(keep(x, dfill(tot + 1, x->me, x->k + 6)), *out, cnt, MPI_INT, MPI_MAX,
                        x->c, q);
}

static void check_rs(const round_t *x, int salt, const int *out)
{
    size_t off = 0;
    const int mine = blen(x->me, salt, x->base);
    int *want = hpoison((size_t) mine + 2);
    for (int p = 0; p < x->me; ++p) {
        off += (size_t) blen(p, salt, x->base);
    }
    for (int i = 0; i < mine; ++i) {
        want[i] = val(x->n - 1, off + (size_t) i, x->k + 6);
    }
    compare("Ireduce_scatter (MAX)", x->k, out, want, (size_t) mine + 2);
}

/* scan or exscan, SUM, base + 2 elements */
static void start_scan(round_t *x, int ex, MPI_Request *q, int **out)
{
    const size_t m = (size_t) x->base + 2;
    *out = keep(x, dpoison(m + 1));
    (ex ? MPI_Iexscan : MPI_Iscan)(keep(x, dfill(m, x->me, x->k + 7 + ex)), *out, (int) m,
                                   MPI_INT, MPI_SUM, x->c, q);
}

static void check_scan(const round_t *x, int ex, const int *out)
{
    const size_t m = (size_t) x->base + 2;
    int *want = hpoison(m + 1);
    if (ex && 0 == x->me) {
        free(want);   /* undefined at rank 0 */
        return;
    }
    for (size_t i = 0; i < m; ++i) {
        int s = 0;
        for (int p = 0; p <= x->me - ex; ++p) {
            s += val(p, i, x->k + 7 + ex);
        }
        want[i] = s;
    }
    compare(ex ? "Iexscan" : "Iscan", x->k, out, want, m + 1);
}

/* the uniform forms: alltoall (u 0), gather to root k % n (1), scatter
 * from it (2); m elements a block; root-only buffers NULL elsewhere */
static void start_uni(round_t *x, int u, int m, MPI_Request *q, int **out)
{
    const int root = x->k % x->n, is_root = x->me == root, k = x->k + 10 + u;
    const size_t all = (size_t) m * (size_t) x->n;

    *out = 0 == u || (1 == u && is_root) ? keep(x, dpoison(all + 1))
                                          : 2 == u ? keep(x, dpoison((size_t) m + 1)) : NULL;
    if (0 == u) {
        MPI_Ialltoall(keep(x, dfill(all, x->me, k)), m, MPI_INT, *out, m, MPI_INT, x->c, q);
    } else if (1 == u) {
        MPI_Igather(keep(x, dfill((size_t) m, x->me, k)), m, MPI_INT, *out, m, MPI_INT, root,
                    x->c, q);
    } else {
        MPI_Iscatter(is_root ? keep(x, dfill(all, x->me, k)) : NULL, m, MPI_INT, *out, m,
                     MPI_INT, root, x->c, q);
    }
}

static void check_uni(const round_t *x, int u, int m, const int *out)
{
    static const char *const names[] = { "Ialltoall", "Igather", "Iscatter" };
    const int root = x->k % x->n, k = x->k + 10 + u;
    const size_t all = (size_t) m * (size_t) x->n, len = 2 == u ? (size_t) m : all;
    int *want;

    if (1 == u && x->me != root) {
        return;
    }
    want = hpoison(len + 1);
    for (int p = 0; p < (2 == u ? 1 : x->n); ++p) {
        for (int i = 0; i < m; ++i) {
            const size_t at = (size_t) p * (size_t) m + (size_t) i;
            want[at] = 0 == u ? val(p, (size_t) x->me * (size_t) m + (size_t) i, k)
                     : 1 == u ? val(p, (size_t) i, k)
                              : val(root, (size_t) x->me * (size_t) m + (size_t) i, k);
        }
    }
    compare(names[u], x->k, out, want, len + 1);
}

/* sixteen outstanding on two communicators, a blocking call among them */
static void round_nb(MPI_Comm c1, MPI_Comm c2, int base, int k)
{
    round_t a, b;
    MPI_Request qa[8], qb[8];
    int *o[16];
    size_t e[16];
    int *h = dfill(1, rank, 0), sum = 0, got = 0;

    round_init(&a, c1, base, k);
    round_init(&b, c2, base, k + 20);
    start_gatherv(&a, 0, &qa[0], &o[0], &e[0]);
    start_scatterv(&b, 1, &qb[0], &o[1]);
    start_allgatherv(&a, 2, 0, &qa[1], &o[2], &e[2]);
    start_allgatherv(&b, 1, 1, &qb[1], &o[3], &e[3]);
    start_a2a(&a, 0, 0, &qa[2], &o[4], &e[4]);
    start_a2a(&b, 1, 0, &qb[2], &o[5], &e[5]);
    /* a blocking call on c1 among them: it must not overtake them */
    MPI_Allreduce(MPI_IN_PLACE, h, 1, MPI_INT, MPI_SUM, c1);
    get(&got, h, 1);
    for (int p = 0; p < size; ++p) {
        sum += val(p, 0, 0);
    }
    CHECK(got == sum, "blocking allreduce among nonblocking calls: %d, want %d", got, sum);
    start_rs(&a, 1, &qa[3], &o[6]);
    start_scan(&a, 0, &qa[4], &o[7]);
    start_scan(&b, 0, &qb[3], &o[8]);   /* reversed ranks: declined, staged */
    start_scan(&b, 1, &qb[4], &o[9]);
    start_a2a(&a, 0, 1, &qa[5], &o[10], &e[10]);
    start_gatherv(&b, 2, &qb[5], &o[11], &e[11]);
    start_scan(&a, 1, &qa[6], &o[12]);
    start_uni(&b, 0, base, &qb[6], &o[13]);
    start_uni(&a, 1, base, &qa[7], &o[14]);
    start_uni(&b, 2, base, &qb[7], &o[15]);
    drv_wait_by_test(qb, 8);
    for (int i = 7; i >= 0; --i) {
        MPI_Wait(&qa[i], MPI_STATUS_IGNORE);
    }
    check_gatherv(&a, 0, o[0], e[0]);
    check_scatterv(&b, 1, o[1]);
    check_allgatherv(&a, 2, o[2], e[2], 0);
    check_allgatherv(&b, 1, o[3], e[3], 1);
    check_a2a(&a, 0, 0, o[4], e[4]);
    check_a2a(&b, 1, 0, o[5], e[5]);
    check_rs(&a, 1, o[6]);
    check_scan(&a, 0, o[7]);
    check_scan(&b, 0, o[8]);
    check_scan(&b, 1, o[9]);
    check_a2a(&a, 0, 1, o[10], e[10]);
    check_gatherv(&b, 2, o[11], e[11]);
    check_scan(&a, 1, o[12]);
    check_uni(&b, 0, base, o[13]);
    check_uni(&a, 1, base, o[14]);
    check_uni(&b, 2, base, o[15]);
    round_free(&a);
    round_free(&b);
    dfree(h);
}

/* persistent alltoallv, gatherv, allgatherv, scan: three starts, new inputs */
static void round_persistent(MPI_Comm c, int base, int k0)
{
    const int n = size, me = rank, root = n - 1;
    int sc[n], sd[n], rc[n], rd[n], gc[n], gd[n];
    const size_t sext = a2a_layout(n, me, base, 0, 1, sc, sd);
    const size_t rext = a2a_layout(n, me, base, 0, 0, rc, rd);
    const size_t gext = vlayout(n, 3, base, gc, gd), m = (size_t) base + 2;
    const int mine = gc[me];
    int *s1 = dalloc(sext), *r1 = dalloc(rext), *s2 = dalloc((size_t) mine + 1);
    int *r2 = dalloc(gext), *r3 = dalloc(gext), *s4 = dalloc(m), *r4 = dalloc(m + 1);
    MPI_Request q[4];
    round_t x;

    MPIX_Alltoallv_init(s1, sc, sd, MPI_INT, r1, rc, rd, MPI_INT, c, MPI_INFO_NULL, &q[0]);
    MPIX_Gatherv_init(s2, mine, MPI_INT, me == root ? r2 : NULL, me == root ? gc : NULL,
                      me == root ? gd : NULL, MPI_INT, root, c, MPI_INFO_NULL, &q[1]);
    MPIX_Allgatherv_init(s2, mine, MPI_INT, r3, gc, gd, MPI_INT, c, MPI_INFO_NULL, &q[2]);
    MPIX_Scan_init(s4, r4, (int) m, MPI_INT, MPI_SUM, c, MPI_INFO_NULL, &q[3]);
    round_init(&x, c, base, 0);
    for (int it = 0; it < 3; ++it) {
        const int k = k0 + 10 * it;
        int *h;
        x.k = k;
        h = hfill(sext, me, k + 3), put(s1, h, sext), free(h);
        h = hfill((size_t) mine, me, k), put(s2, h, (size_t) mine), free(h);
        h = hfill(m, me, k + 7), put(s4, h, m), free(h);
        poison(r1, rext);
        poison(r2, gext);
        poison(r3, gext);
        poison(r4, m + 1);
        MPI_Startall(4, q);
        MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
        check_a2a(&x, 0, 0, r1, rext);
        {
            int *want = hpoison(gext);
            for (int p = 0; p < n; ++p) {
                for (int i = 0; i < gc[p]; ++i) {
                    want[gd[p] + i] = val(p, (size_t) i, k);
                }
            }
            if (me == root) {
                int *w2 = hpoison(gext);
                memcpy(w2, want, gext * sizeof(int));
                compare("persistent gatherv", k, r2, w2, gext);
            }
            compare("persistent allgatherv", k, r3, want, gext);
        }
        x.k = k;
        x.base = base;
        check_scan(&x, 0, r4);
    }
    for (int i = 0; i < 4; ++i) {
        MPI_Request_free(&q[i]);
    }
    round_free(&x);
    dfree(s1), dfree(r1), dfree(s2), dfree(r2), dfree(r3), dfree(s4), dfree(r4);
}

int main(int argc, char **argv)
{
    static const int bases[] = { 1, 300, 20000 };
    MPI_Comm c1, c2;
    int *s, *r;

    if (!drv_start(&argc, &argv, 240)) {
        return 0;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &c1);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &c2);
    /* the first blocking device call on each sets the hierarchy up */
    s = dfill(1, rank, 0);
    r = dalloc(1);
    MPI_Allreduce(s, r, 1, MPI_INT, MPI_SUM, c1);
    MPI_Allreduce(s, r, 1, MPI_INT, MPI_SUM, c2);
    dfree(s);
    dfree(r);
    for (int i = 0; i < (int) (sizeof(bases) / sizeof(bases[0])); ++i) {
        round_nb(c1, c2, bases[i], 100 * i + 1);
        round_persistent(c1, bases[i], 100 * i + 1000);
    }
    MPI_Comm_free(&c1);
    MPI_Comm_free(&c2);
    return drv_report();
}
