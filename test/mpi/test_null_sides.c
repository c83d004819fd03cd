/*
 * A side that moves nothing may be NULL (count 0, as MPI allows), and the
 * call is still a device call: coll/gpu must take its GPU path for it (not
 * stage every rank, as it did when one rank's NULL send side made the
 * call's memory "mixed"), and a path must not read NULL as MPI_IN_PLACE.
 * On device buffers from the CUDA driver (the GPU's, or test/fake's
 * stand-in under make check), blocking and nonblocking:
 *   alltoallv      rank 0 sends nothing from NULL, receives from every rank
 *   allgatherv     rank 1 (or 0 alone) contributes nothing from NULL
 *   gatherv        a non-root sends nothing from NULL
 *   scatterv       a non-root receives nothing into NULL
 *   neighbor_allgatherv, neighbor_alltoallv on a periodic ring: rank 1
 *                  sends nothing from NULL
 * Outputs are poisoned first and compared whole (gaps keep the poison).
 * coll_gpu_timing_file names the path each call took; the runners check
 * that these calls were not staged.
 * Prints "N passed, N failed"; exit status 1 on a failure.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DRV_TEST_NAME "test_null_sides"
#include "drv_mem.h"

#define POISON ((int) 0xA5A5A5A5)

static int val(int r, int i)
{
    return 1000 * (r + 1) + i;
}

static int *dev_of(const int *h, size_t n)
{
    int *d = dalloc(n);
    put(d, h, n);
    return d;
}

static int *dev_poison(size_t n)
{
    int *d = dalloc(n);
    poison(d, n);
    return d;
}

static void compare(const char *what, int nb, const int *d, const int *want, size_t n)
{
    int *h = malloc(n * sizeof(int) + 4);
    size_t bad = n;
    get(h, d, n);
    for (size_t i = 0; i < n && bad == n; ++i) {
        bad = h[i] != want[i] ? i : bad;
    }
    CHECK(bad == n, "%s (%s): element %zu is %d, want %d", what, nb ? "nonblocking" : "blocking",
          bad, bad < n ? h[bad] : 0, bad < n ? want[bad] : 0);
    free(h);
}

static void done(MPI_Request *q, int nb)
{
    if (nb) {
        MPI_Wait(q, MPI_STATUS_IGNORE);
    }
}

/* rank 0 sends nothing (NULL); rank q > 0 sends q + 1 elements to each
 * rank p from 8 p; blocks land in reverse rank order with gaps */
static void t_alltoallv(int nb)
{
    int sc[size], sd[size], rc[size], rd[size], *want, *s = NULL, *sh, *r;
    size_t rext = 0;
    MPI_Request q = MPI_REQUEST_NULL;

    for (int p = 0; p < size; ++p) {
        sc[p] = 0 == rank ? 0 : rank + 1;
        sd[p] = 8 * p;
        rc[p] = 0 == p ? 0 : p + 1;
        rd[p] = 8 * (size - 1 - p);   /* reversed, gaps between */
        rext = (size_t) rd[p] + 8 > rext ? (size_t) rd[p] + 8 : rext;
    }
    if (0 != rank) {
        sh = malloc((size_t) 8 * size * sizeof(int));
        for (int i = 0; i < 8 * size; ++i) {
            sh[i] = val(rank, i);
        }
        s = dev_of(sh, (size_t) 8 * size);
        free(sh);
    }
    r = dev_poison(rext);
    if (nb) {
        MPI_Ialltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD, &q);
    } else {
        MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD);
    }
    done(&q, nb);
    want = malloc(rext * sizeof(int));
    for (size_t i = 0; i < rext; ++i) {
        want[i] = POISON;
    }
    for (int p = 1; p < size; ++p) {
        for (int i = 0; i < rc[p]; ++i) {
            want[rd[p] + i] = val(p, 8 * rank + i);
        }
    }
    compare("alltoallv, rank 0 sends nothing from NULL", nb, r, want, rext);
    free(want);
    dfree(r);
    if (NULL != s) {
        dfree(s);
    }
}

/* allgatherv: rank 1 (rank 0 when alone) contributes nothing from NULL */
static void t_allgatherv(int nb)
{
    const int quiet = size > 1 ? 1 : 0;
    int rc[size], rd[size], *want, *s = NULL, h[8], *r;
    size_t ext = 0;
    MPI_Request q = MPI_REQUEST_NULL;

    for (int p = 0; p < size; ++p) {
        rc[p] = p == quiet ? 0 : 3;
        rd[p] = 5 * (size - 1 - p) + 1;
        ext = (size_t) rd[p] + 5 > ext ? (size_t) rd[p] + 5 : ext;
    }
    if (rank != quiet) {
        for (int i = 0; i < 3; ++i) {
            h[i] = val(rank, i);
        }
        s = dev_of(h, 3);
    }
    r = dev_poison(ext);
    if (nb) {
        MPI_Iallgatherv(s, rc[rank], MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD, &q);
    } else {
        MPI_Allgatherv(s, rc[rank], MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD);
    }
    done(&q, nb);
    want = malloc(ext * sizeof(int));
    for (size_t i = 0; i < ext; ++i) {
        want[i] = POISON;
    }
    for (int p = 0; p < size; ++p) {
        for (int i = 0; i < rc[p]; ++i) {
            want[rd[p] + i] = val(p, i);
        }
    }
    compare("allgatherv, one rank contributes nothing from NULL", nb, r, want, ext);
    free(want);
    dfree(r);
    if (NULL != s) {
        dfree(s);
    }
}

/* gatherv to the last rank; scatterv from it: rank 0 moves nothing, NULL */
static void t_rooted(int nb)
{
    const int root = size - 1, quiet = 0 == root ? -1 : 0;
    int c[size], d[size], h[4], *want, *s = NULL, *r = NULL;
    size_t ext = 0;
    MPI_Request q = MPI_REQUEST_NULL;

    for (int p = 0; p < size; ++p) {
        c[p] = p == quiet ? 0 : 4;
        d[p] = 6 * (size - 1 - p);
        ext = (size_t) d[p] + 6 > ext ? (size_t) d[p] + 6 : ext;
    }
    if (rank != quiet) {
        for (int i = 0; i < 4; ++i) {
            h[i] = val(rank, i);
        }
        s = dev_of(h, 4);
    }
    if (rank == root) {
        r = dev_poison(ext);
    }
    if (nb) {
        MPI_Igatherv(s, c[rank], MPI_INT, r, c, d, MPI_INT, root, MPI_COMM_WORLD, &q);
    } else {
        MPI_Gatherv(s, c[rank], MPI_INT, r, c, d, MPI_INT, root, MPI_COMM_WORLD);
    }
    done(&q, nb);
    if (rank == root) {
        want = malloc(ext * sizeof(int));
        for (size_t i = 0; i < ext; ++i) {
            want[i] = POISON;
        }
        for (int p = 0; p < size; ++p) {
            for (int i = 0; i < c[p]; ++i) {
                want[d[p] + i] = val(p, i);
            }
        }
        compare("gatherv, a non-root sends nothing from NULL", nb, r, want, ext);
        free(want);
        dfree(r);
    }
    if (NULL != s) {
        dfree(s);
    }
    /* scatterv: the root's blocks are val(root, d[p] + i) */
    s = NULL;
    r = NULL;
    if (rank == root) {
        int *all = malloc(ext * sizeof(int));
        for (size_t i = 0; i < ext; ++i) {
            all[i] = val(root, (int) i);
        }
        s = dev_of(all, ext);
        free(all);
    }
    if (rank != quiet) {
        r = dev_poison(5);
    }
    if (nb) {
        MPI_Iscatterv(s, c, d, MPI_INT, r, c[rank], MPI_INT, root, MPI_COMM_WORLD, &q);
    } else {
        MPI_Scatterv(s, c, d, MPI_INT, r, c[rank], MPI_INT, root, MPI_COMM_WORLD);
    }
    done(&q, nb);
    if (rank != quiet) {
        int w[5];
        for (int i = 0; i < 5; ++i) {
            w[i] = i < 4 ? val(root, d[rank] + i) : POISON;
        }
        compare("scatterv, a non-root receives nothing into NULL", nb, r, w, 5);
        dfree(r);
    }
    if (NULL != s) {
        dfree(s);
    }
}

/* a periodic ring: neighbours left, right; rank 1 sends nothing from NULL */
static void t_neighbor(MPI_Comm ring, int v, int nb)
{
    int left, right, src[2], rc[2], rd[2] = { 7, 1 }, sc[2], sd[2] = { 0, 4 }, h[8], *s = NULL;
    int *want, *r;
    const int ext = 12;
    MPI_Request q = MPI_REQUEST_NULL;

    MPI_Cart_shift(ring, 0, 1, &left, &right);
    src[0] = left;
    src[1] = right;
    /* what p sends each neighbour: 0 from rank 1, else 3 (alltoallv: to its
     * right neighbour 2) */
#define SENDS(p, k) (1 == (p) ? 0 : v && 1 == (k) ? 2 : 3)
    for (int k = 0; k < 2; ++k) {
        sc[k] = SENDS(rank, k);
        /* from my left I get what it sends its right (k 1), and back */
        rc[k] = SENDS(src[k], 1 - k);
    }
    if (1 != rank) {
        for (int i = 0; i < 8; ++i) {
            h[i] = val(rank, i);
        }
        s = dev_of(h, 8);
    }
    r = dev_poison(ext);
    if (v) {
        if (nb) {
            MPI_Ineighbor_alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, ring, &q);
        } else {
            MPI_Neighbor_alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, ring);
        }
    } else if (nb) {
        MPI_Ineighbor_allgatherv(s, sc[0], MPI_INT, r, rc, rd, MPI_INT, ring, &q);
    } else {
        MPI_Neighbor_allgatherv(s, sc[0], MPI_INT, r, rc, rd, MPI_INT, ring);
    }
    done(&q, nb);
    want = malloc(ext * sizeof(int));
    for (int i = 0; i < ext; ++i) {
        want[i] = POISON;
    }
    for (int k = 0; k < 2; ++k) {
        for (int i = 0; i < rc[k]; ++i) {
            /* alltoallv: a sender's block for its left is at 0, for its
             * right at 4 (mine from the left is its right's); allgatherv:
             * its one block */
            want[rd[k] + i] = val(src[k], (v && 0 == k ? 4 : 0) + i);
        }
    }
    compare(v ? "neighbor_alltoallv, rank 1 sends nothing from NULL"
              : "neighbor_allgatherv, rank 1 sends nothing from NULL", nb, r, want, ext);
    free(want);
    dfree(r);
    if (NULL != s) {
        dfree(s);
    }
}

int main(int argc, char **argv)
{
    int dims[1] = { 0 }, periods[1] = { 1 };
    MPI_Comm ring;

    if (!drv_start(&argc, &argv, 120)) {
        return 0;
    }
    dims[0] = size;
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    for (int it = 0; it < 2; ++it) {
        for (int nb = 0; nb < 2; ++nb) {
            t_alltoallv(nb);
            t_allgatherv(nb);
            t_rooted(nb);
            if (size >= 3) {   /* a ring of 1 or 2 pairs its blocks its own way */
                t_neighbor(ring, 0, nb);
                t_neighbor(ring, 1, nb);
            }
        }
    }
    MPI_Comm_free(&ring);
    return drv_report();
}
