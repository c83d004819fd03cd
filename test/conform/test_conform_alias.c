/*
 * Staged calls whose host copies could alias.  A staged call hands the
 * host library a view of each host copy: the copy's address less the
 * lowest byte the blocks touch, so that the call's own displacements (or
 * MPI_BOTTOM's absolute addresses) land in the copy.  Two views are equal
 * whenever the distance between the two copies equals the distance
 * between the send and the receive blocks, and Open MPI's libnbc takes a
 * send buffer equal to the receive buffer for MPI_IN_PLACE: it then skips
 * the rank's own block and exchanges the receive counts' messages, which
 * the peers never send (seen in test_conform at np 2: one rank of a
 * self-only MPI_Alltoallw waited until coll_gpu_timeout, about two runs
 * in three, depending on where earlier cases had left the heap).
 *
 * Here every distance between the blocks in a window of a few KiB is
 * tried, so that the distance between the copies (whatever malloc makes
 * it) is among them: MPI_Alltoallw moving 7 ints from each rank to itself,
 * by displacements and at MPI_BOTTOM, blocking and nonblocking.  After
 * each call the ranks agree whether it was right before the next one, so
 * one rank's failure (a wrong block, or a timeout error) ends the scan on
 * every rank.  Run it with a short coll_gpu_timeout.  Ends with
 * "N passed, N failed".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

#define ALIAS_N 7                          /* ints in the rank's own block */
#define ALIAS_WINDOW 4096                  /* distances tried: -WINDOW..WINDOW */
#define ALIAS_STEP 4
#define ALIAS_MAXP 64                      /* ranks */

typedef struct {
    int bottom;              /* blocks at MPI_BOTTOM (absolute addresses) */
    int nonblocking;
} alias_t;

/* one call with the receive block at distance d bytes from the send
 * block; 0 when it was right */
static int alias_call(const alias_t *p, unsigned char *dev, ptrdiff_t d)
{
    const ptrdiff_t bytes = ALIAS_N * (ptrdiff_t) sizeof(int);
    const ptrdiff_t sofs = ALIAS_WINDOW + ALIAS_STEP, rofs = sofs + d;
    int sc[ALIAS_MAXP] = { 0 }, sd[ALIAS_MAXP] = { 0 };
    int rc[ALIAS_MAXP] = { 0 }, rd[ALIAS_MAXP] = { 0 };
    int vals[ALIAS_N], got[ALIAS_N], rcode;
    MPI_Datatype st[ALIAS_MAXP], rt[ALIAS_MAXP], sblk = MPI_DATATYPE_NULL, rblk = MPI_DATATYPE_NULL;
    void *sbuf = dev, *rbuf = dev;
    MPI_Request q;

    for (int i = 0; i < ALIAS_N; ++i) {
        vals[i] = (cf.rank + 1) * 1000 + (int) (d & 0xffff) + i;
    }
    cf_put(dev + sofs, vals, (size_t) bytes);
    cf_poison(dev + rofs, (size_t) bytes);
    for (int k = 0; k < cf.size; ++k) {
        st[k] = rt[k] = MPI_INT;
    }
    /* to itself only: nothing crosses between ranks */
    sc[cf.rank] = rc[cf.rank] = ALIAS_N;
    sd[cf.rank] = (int) sofs;
    rd[cf.rank] = (int) rofs;
    if (p->bottom) {
        MPI_Aint sa = (MPI_Aint) (uintptr_t) (dev + sofs), ra = (MPI_Aint) (uintptr_t) (dev + rofs);
        int n = ALIAS_N;
        MPI_Datatype in = MPI_INT;
        MPI_Type_create_struct(1, &n, &sa, &in, &sblk);
        MPI_Type_create_struct(1, &n, &ra, &in, &rblk);
        MPI_Type_commit(&sblk);
        MPI_Type_commit(&rblk);
        st[cf.rank] = sblk;
        rt[cf.rank] = rblk;
        sc[cf.rank] = rc[cf.rank] = 1;
        sd[cf.rank] = rd[cf.rank] = 0;
        sbuf = rbuf = MPI_BOTTOM;
    }
    if (p->nonblocking) {
        rcode = MPI_Ialltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD, &q);
        if (MPI_SUCCESS == rcode) {
            rcode = MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
    } else {
        rcode = MPI_Alltoallw(sbuf, sc, sd, st, rbuf, rc, rd, rt, MPI_COMM_WORLD);
    }
    if (MPI_DATATYPE_NULL != sblk) {
        MPI_Type_free(&sblk);
        MPI_Type_free(&rblk);
    }
    if (MPI_SUCCESS != rcode) {
        char what[64];
        snprintf(what, sizeof(what), "MPI_%s, blocks %td bytes apart",
                 p->nonblocking ? "Ialltoallw" : "Alltoallw", d);
        cf_rc(rcode, what);
        return 1;
    }
    cf_get(got, dev + rofs, (size_t) bytes);
    if (0 != memcmp(got, vals, (size_t) bytes)) {
        cf_fail("blocks %td bytes apart: the rank's own block %s", d,
                got[0] == vals[0] ? "is wrong" : "was not moved");
        return 1;
    }
    return 0;
}

static void alias_case(const alias_t *p)
{
    unsigned char *dev;
    int tried = 0;

    if (!cf_case("alias/alltoallw/%s/%s/%s", p->nonblocking ? "nonblocking" : "blocking",
                 p->bottom ? "bottom" : "displacements", cf_mem_name())) {
        return;
    }
    dev = cf_alloc(2 * (ALIAS_WINDOW + ALIAS_STEP) + 2 * ALIAS_N * sizeof(int));
    for (ptrdiff_t d = -ALIAS_WINDOW; d <= ALIAS_WINDOW; d += ALIAS_STEP) {
        int bad, any = 0;
        if (d > -(ptrdiff_t) (ALIAS_N * sizeof(int)) && d < (ptrdiff_t) (ALIAS_N * sizeof(int))) {
            continue;   /* overlapping blocks: not a legal call */
        }
        bad = alias_call(p, dev, d);
        ++tried;
        MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (any) {
            break;
        }
    }
    if (cf.verbose) {
        printf("rank %d: %d distances tried\n", cf.rank, tried);
    }
    cf_free(dev);
    cf_end();
}

int main(int argc, char **argv)
{
    cf_init(&argc, &argv);
    if (cf.size > ALIAS_MAXP) {
        if (0 == cf.rank) {
            fprintf(stderr, "conform: at most %d ranks\n", ALIAS_MAXP);
        }
        MPI_Finalize();
        return 2;
    }
    for (int b = 0; b < 2; ++b) {
        for (int nb = 0; nb < 2; ++nb) {
            const alias_t p = { .bottom = b, .nonblocking = nb };
            alias_case(&p);
        }
    }
    return cf_finish();
}
