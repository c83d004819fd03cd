/*
 * Nonblocking and persistent collectives across (virtual) nodes on device
 * buffers, through coll/gpu: the hierarchy's five (allreduce, bcast,
 * reduce, allgather, reduce_scatter_block) on the communicator's thread
 * (ompi_coll_gpu/coll_gpu_hier_nb.c).  Device memory is the CUDA driver's
 * (the stand-in of test/fake under make check: one rank per node, so the
 * hierarchy needs no node engine there).
 *
 * Per size: six nonblocking calls outstanding at once on two communicators
 * (one of them in reversed rank order), a blocking allreduce on the first
 * between them (it must not overtake the nonblocking ones), a host-buffer
 * Iallreduce queued behind them, completed out of order with MPI_Test
 * loops and MPI_Waitall; an Iallreduce where rank 0 passes host memory
 * (every rank stages it alike); a request freed while active; persistent
 * allreduce, bcast, allgather and reduce_scatter_block started five times
 * with new inputs.  Outputs are poisoned first and checked element by
 * element against host references.  The runner greps coll_gpu_verbose's
 * "ran on the hierarchy's thread" lines to see the native path ran.
 * Usage: mpirun -np N test_hier_nb   (OMPI_MCA_coll_gpu_virtual_nodes=N)
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

#define DRV_TEST_NAME "test_hier_nb"
#include "drv_mem.h"

/* rank r's element i of call k: sums stay exact */
static int val(int r, size_t i, int k)
{
    return (r + 1) * (int) (i % 97 + 1) + 3 * k;
}

static int sum(size_t i, int k)
{
    int s = 0;
    for (int r = 0; r < size; ++r) {
        s += val(r, i, k);
    }
    return s;
}

static void fill(int *d, size_t n, int r, int k, size_t off)
{
    int *h = malloc(n * sizeof(int) + 1);
    for (size_t i = 0; i < n; ++i) {
        h[i] = val(r, off + i, k);
    }
    put(d, h, n);
    free(h);
}

/* what ranks r of comm c holds in world terms */
static int world_of(MPI_Comm c, int r)
{
    MPI_Group g, w;
    int out;
    MPI_Comm_group(c, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &w);
    MPI_Group_translate_ranks(g, 1, &r, w, &out);
    MPI_Group_free(&g);
    MPI_Group_free(&w);
    return out;
}

/* d holds n elements that should be want(i); first mismatch reported */
typedef int (*want_fn)(size_t i, const void *arg);

static void expect(const char *what, const int *d, size_t n, want_fn want, const void *arg)
{
    int *h = malloc(n * sizeof(int) + 1);
    size_t bad = n;
    get(h, d, n);
    for (size_t i = 0; i < n && bad == n; ++i) {
        if (h[i] != want(i, arg)) {
            bad = i;
        }
    }
    CHECK(bad == n, "%s, %zu elements: element %zu is %d, want %d", what, n, bad,
          bad < n ? h[bad] : 0, bad < n ? want(bad, arg) : 0);
    free(h);
}

typedef struct {
    int k;              /* the call's value offset */
    int r;              /* a rank (world) */
    size_t off;         /* element offset */
    size_t n;           /* block length */
    MPI_Comm c;
} ref_t;

static int want_sum(size_t i, const void *a)
{
    const ref_t *x = a;
    return sum(x->off + i, x->k);
}

static int want_val(size_t i, const void *a)
{
    const ref_t *x = a;
    return val(x->r, x->off + i, x->k);
}

/* allgather: block q is comm rank q's (world world_of(c, q)) input */
static int want_gather(size_t i, const void *a)
{
    const ref_t *x = a;
    return val(world_of(x->c, (int) (i / x->n)), i % x->n, x->k);
}

static void round_nb(MPI_Comm c1, MPI_Comm c2, size_t n, int k)
{
    int r1, r2;
    int *sa = dalloc(n), *ra = dalloc(n), *bb = dalloc(n), *sc = dalloc(n), *rc = dalloc(n);
    int *sd = dalloc(n), *rd = dalloc(n * (size_t) size), *se = dalloc(n * (size_t) size);
    int *re = dalloc(n), *rf = dalloc(n), *sg = dalloc(n), *rg = dalloc(n);
    int *hs = malloc(n * sizeof(int) + 1), *hr = malloc(n * sizeof(int) + 1);
    const int broot = k % size, rroot = size - 1;
    MPI_Request tq[2], wq[5];
    char what[96];
    ref_t x = { .n = n };

    MPI_Comm_rank(c1, &r1);
    MPI_Comm_rank(c2, &r2);
    fill(sa, n, rank, k, 0);
    fill(sc, n, rank, k + 2, 0);
    fill(sd, n, rank, k + 3, 0);
    fill(se, n * (size_t) size, rank, k + 4, 0);
    fill(rf, n, rank, k + 5, 0);
    fill(sg, n, rank, k + 6, 0);
    for (size_t i = 0; i < n; ++i) {
        hs[i] = val(rank, i, k + 7);
    }
    poison(ra, n);
    poison(rc, n);
    poison(rd, n * (size_t) size);
    poison(re, n);
    poison(rg, n);
    if (r2 == broot) {
        fill(bb, n, world_of(c2, broot), k + 1, 0);
    } else {
        poison(bb, n);
    }
    memset(hr, 0xA5, n * sizeof(int));
    /* six outstanding on two communicators, a blocking call among them */
    MPI_Iallreduce(sa, ra, (int) n, MPI_INT, MPI_SUM, c1, &wq[0]);
    MPI_Ibcast(bb, (int) n, MPI_INT, broot, c2, &tq[0]);
    MPI_Ireduce(sc, rc, (int) n, MPI_INT, MPI_SUM, rroot, c1, &wq[1]);
    MPI_Iallgather(sd, (int) n, MPI_INT, rd, (int) n, MPI_INT, c2, &tq[1]);
    MPI_Ireduce_scatter_block(se, re, (int) n, MPI_INT, MPI_SUM, c1, &wq[2]);
    MPI_Iallreduce(MPI_IN_PLACE, rf, (int) n, MPI_INT, MPI_SUM, c2, &wq[3]);
    MPI_Allreduce(sg, rg, (int) n, MPI_INT, MPI_SUM, c1);
    x.k = k + 6;
    snprintf(what, sizeof(what), "blocking allreduce after three nonblocking (call %d)", k);
    expect(what, rg, n, want_sum, &x);
    /* host buffers, queued behind the device calls on c2 */
    MPI_Iallreduce(hs, hr, (int) n, MPI_INT, MPI_SUM, c2, &wq[4]);
    /* the second communicator's two by MPI_Test, the rest in reverse */
    drv_wait_by_test(tq, 2);
    for (int i = 4; i >= 0; --i) {
        MPI_Wait(&wq[i], MPI_STATUS_IGNORE);
    }
    x.k = k;
    snprintf(what, sizeof(what), "Iallreduce (call %d)", k);
    expect(what, ra, n, want_sum, &x);
    x.k = k + 1;
    x.r = world_of(c2, broot);
    snprintf(what, sizeof(what), "Ibcast from %d (call %d)", broot, k);
    expect(what, bb, n, want_val, &x);
    if (r1 == rroot) {
        x.k = k + 2;
        snprintf(what, sizeof(what), "Ireduce to %d (call %d)", rroot, k);
        expect(what, rc, n, want_sum, &x);
    }
    x.k = k + 3;
    x.c = c2;
    snprintf(what, sizeof(what), "Iallgather (call %d)", k);
    expect(what, rd, n * (size_t) size, want_gather, &x);
    x.k = k + 4;
    x.off = (size_t) r1 * n;
    snprintf(what, sizeof(what), "Ireduce_scatter_block (call %d)", k);
    expect(what, re, n, want_sum, &x);
    x.off = 0;
    x.k = k + 5;
    snprintf(what, sizeof(what), "Iallreduce in place (call %d)", k);
    expect(what, rf, n, want_sum, &x);
    {
        size_t bad = n;
        for (size_t i = 0; i < n && bad == n; ++i) {
            bad = hr[i] == sum(i, k + 7) ? n : i;
        }
        CHECK(bad == n, "host Iallreduce behind device ones (call %d): element %zu", k, bad);
    }
    dfree(sa), dfree(ra), dfree(bb), dfree(sc), dfree(rc), dfree(sd), dfree(rd);
    dfree(se), dfree(re), dfree(rf), dfree(sg), dfree(rg);
    free(hs);
    free(hr);
}

/* rank 0 passes host memory: every rank stages the call alike */
static void round_mixed(MPI_Comm c, size_t n, int k)
{
    int *s = 0 == rank ? malloc(n * sizeof(int) + 1) : dalloc(n);
    int *r = 0 == rank ? malloc(n * sizeof(int) + 1) : dalloc(n);
    int *h = malloc(n * sizeof(int) + 1);
    MPI_Request q;
    ref_t x = { .k = k };

    for (size_t i = 0; i < n; ++i) {
        h[i] = val(rank, i, k);
    }
    if (0 == rank) {
        memcpy(s, h, n * sizeof(int));
        memset(r, 0xA5, n * sizeof(int));
    } else {
        put(s, h, n);
        poison(r, n);
    }
    MPI_Iallreduce(s, r, (int) n, MPI_INT, MPI_SUM, c, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    if (0 == rank) {
        size_t bad = n;
        for (size_t i = 0; i < n && bad == n; ++i) {
            bad = r[i] == sum(i, k) ? n : i;
        }
        CHECK(bad == n, "Iallreduce with host memory on rank 0: element %zu", bad);
        free(s);
        free(r);
    } else {
        expect("Iallreduce with host memory on rank 0", r, n, want_sum, &x);
        dfree(s);
        dfree(r);
    }
    free(h);
}

/* freed while active: a blocking call on the communicator after it is
 * right, and the freed call still completes from progress (its output is
 * polled, progress driven by MPI_Iprobe, for at most 20 s; MPI says
 * nothing about when, so its buffers are kept until it has) */
static void round_freed(MPI_Comm c, size_t n, int k)
{
    int *s = dalloc(n), *r = dalloc(n), *s2 = dalloc(n), *r2 = dalloc(n);
    int *h = malloc(n * sizeof(int) + 1);
    MPI_Request q;
    ref_t x = { .k = k };
    size_t bad = 0;
    double until;

    fill(s, n, rank, k, 0);
    fill(s2, n, rank, k + 1, 0);
    poison(r, n);
    MPI_Iallreduce(s, r, (int) n, MPI_INT, MPI_SUM, c, &q);
    MPI_Request_free(&q);
    CHECK(MPI_REQUEST_NULL == q, "MPI_Request_free leaves MPI_REQUEST_NULL");
    MPI_Allreduce(s2, r2, (int) n, MPI_INT, MPI_SUM, c);
    x.k = k + 1;
    expect("the blocking allreduce after a freed Iallreduce", r2, n, want_sum, &x);
    for (until = MPI_Wtime() + 20.0; MPI_Wtime() < until;) {
        int flag;
        get(h, r, n);
        for (bad = 0; bad < n && h[bad] == sum(bad, k); ++bad) {
        }
        if (bad == n) {
            break;
        }
        MPI_Iprobe(MPI_ANY_SOURCE, 4242, c, &flag, MPI_STATUS_IGNORE);
        usleep(1000);
    }
    CHECK(bad == n, "Iallreduce freed while active never completed (element %zu is %d, want %d)",
          bad, bad < n ? h[bad] : 0, bad < n ? sum(bad, k) : 0);
    if (bad == n) {
        dfree(s), dfree(r);
    }
    dfree(s2), dfree(r2);
    free(h);
}

static void round_persistent(MPI_Comm c1, MPI_Comm c2, size_t n, int k0)
{
    int *sa = dalloc(n), *ra = dalloc(n), *bb = dalloc(n), *sd = dalloc(n);
    int *rd = dalloc(n * (size_t) size), *se = dalloc(n * (size_t) size), *re = dalloc(n);
    const int broot = 0;
    MPI_Request q[4];
    int r1, r2;
    char what[96];

    MPI_Comm_rank(c1, &r1);
    MPI_Comm_rank(c2, &r2);
    MPIX_Allreduce_init(sa, ra, (int) n, MPI_INT, MPI_SUM, c1, MPI_INFO_NULL, &q[0]);
    MPIX_Bcast_init(bb, (int) n, MPI_INT, broot, c2, MPI_INFO_NULL, &q[1]);
    MPIX_Allgather_init(sd, (int) n, MPI_INT, rd, (int) n, MPI_INT, c2, MPI_INFO_NULL, &q[2]);
    MPIX_Reduce_scatter_block_init(se, re, (int) n, MPI_INT, MPI_SUM, c1, MPI_INFO_NULL, &q[3]);
    for (int it = 0; it < 5; ++it) {
        const int k = k0 + 10 * it;
        ref_t x = { .n = n, .c = c2 };
        fill(sa, n, rank, k, 0);
        fill(sd, n, rank, k + 3, 0);
        fill(se, n * (size_t) size, rank, k + 4, 0);
        poison(ra, n);
        poison(rd, n * (size_t) size);
        poison(re, n);
        if (r2 == broot) {
            fill(bb, n, world_of(c2, broot), k + 1, 0);
        } else {
            poison(bb, n);
        }
        if (it % 2) {
            MPI_Startall(4, q);
        } else {
            for (int i = 3; i >= 0; --i) {
                MPI_Start(&q[i]);
            }
        }
        MPI_Waitall(4, q, MPI_STATUSES_IGNORE);
        x.k = k;
        snprintf(what, sizeof(what), "persistent allreduce, start %d", it);
        expect(what, ra, n, want_sum, &x);
        x.k = k + 1;
        x.r = world_of(c2, broot);
        snprintf(what, sizeof(what), "persistent bcast, start %d", it);
        expect(what, bb, n, want_val, &x);
        x.k = k + 3;
        snprintf(what, sizeof(what), "persistent allgather, start %d", it);
        expect(what, rd, n * (size_t) size, want_gather, &x);
        x.k = k + 4;
        x.off = (size_t) r1 * n;
        snprintf(what, sizeof(what), "persistent reduce_scatter_block, start %d", it);
        expect(what, re, n, want_sum, &x);
    }
    for (int i = 0; i < 4; ++i) {
        MPI_Request_free(&q[i]);
    }
    dfree(sa), dfree(ra), dfree(bb), dfree(sd), dfree(rd), dfree(se), dfree(re);
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = { 1, 1000, 40000 };
    MPI_Comm c1, c2;
    int *s, *r;

    if (!drv_start(&argc, &argv, 240)) {
        return 0;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &c1);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &c2);
    /* the first blocking device call on each sets the hierarchy up */
    s = dalloc(1);
    r = dalloc(1);
    fill(s, 1, rank, 0, 0);
    MPI_Allreduce(s, r, 1, MPI_INT, MPI_SUM, c1);
    MPI_Allreduce(s, r, 1, MPI_INT, MPI_SUM, c2);
    dfree(s);
    dfree(r);
    for (int i = 0; i < (int) (sizeof(sizes) / sizeof(sizes[0])); ++i) {
        round_nb(c1, c2, sizes[i], 100 * i);
        round_mixed(c2, sizes[i], 100 * i + 50);
        round_freed(c1, sizes[i], 100 * i + 60);
        round_persistent(c1, c2, sizes[i], 100 * i + 1000);
    }
    MPI_Comm_free(&c1);
    MPI_Comm_free(&c2);
    return drv_report();
}
