/*
 * Legal MPI programs that must complete with coll/gpu loaded, and faults
 * that must end in a clear error, not a hang (the runner puts a watchdog
 * around every run).  Device buffers, random non-zero integer-valued
 * floats (sums exact in any order), poisoned outputs, host references.
 *
 *   test_gpu_reliability SCENARIO [BYTES]
 *
 *   cross        even ranks Iallreduce on A then B, odd ranks B then A;
 *                also Ibcast/Iallgather pairs; Waitall
 *   blocking     even ranks: Ibcast on A, Allreduce on B, Wait; odd ranks:
 *                Allreduce on B, Ibcast on A, Wait
 *   userop       the cross program on the staged path: a user-defined op, and
 *                a bcast of a non-contiguous type (libnbc's forms on host copies)
 *   persistent   MPIX_Allreduce_init on A and B, Startall in opposite orders
 *   timeout      rank 1 stops calling: the others' Allreduce / Iallreduce
 *                return within coll_gpu_timeout + 2 s, an error string that
 *                names the collective, rank 1 and coll_gpu_timeout
 *   staged       run with coll_gpu_allreduce_algorithm staged: float sums of
 *                1..40 elements, MPI_UNSIGNED_LONG max above 2^63, int8 sums
 *   edge         count 0 and MPI_IN_PLACE in every collective that has them
 *   sticky       rank 0's CUDA context gets a sticky error (a trapping
 *                kernel); every rank's next Allreduce returns an error
 *   threads      MPI_THREAD_MULTIPLE: 2 threads per rank, each with its own
 *                communicator, device and host allreduces at once
 *   oom          run with scratch no GPU can hold: the setup stages, and
 *                blocking and nonblocking calls stay right
 *
 * BYTES (default 8) sizes the cross / blocking / persistent / timeout calls.
 * Prints "N passed, N failed" on rank 0; SKIP without a GPU.
 */
#include <mpi.h>
#include "mpi_persist_compat.h"
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "gpu_test_world.h"


static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

static float *dev_input(size_t n, int t)
{
    float *h = malloc(n * sizeof(float)), *d;
    for (size_t i = 0; i < n; ++i) {
        h[i] = val(wrank, i, t);
    }
    CK(cudaMalloc((void **) &d, n * sizeof(float) + 1));
    CK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    free(h);
    return d;
}

static float *dev_poisoned(size_t n)
{
    float *d;
    CK(cudaMalloc((void **) &d, n * sizeof(float) + 1));
    CK(cudaMemset(d, 0xff, n * sizeof(float)));
    return d;
}

static int check_sum(const float *d, size_t n, int t, int nranks)
{
    float *h = malloc(n * sizeof(float));
    int ok = 1;
    CK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n && ok; ++i) {
        float ref = 0;
        for (int r = 0; r < nranks; ++r) {
            ref += val(r, i, t);
        }
        if (h[i] != ref) {
            fprintf(stderr, "rank %d: tag %d element %zu: %g, expected %g\n", wrank, t, i,
                    (double) h[i], (double) ref);
            ok = 0;
        }
    }
    free(h);
    return ok;
}

/* out[q * n + i] == rank q's element i (allgather) or root's (bcast: q = root) */
static int check_copy(const float *d, size_t n, int t, int from, int count_ranks)
{
    float *h = malloc(n * (size_t) count_ranks * sizeof(float));
    int ok = 1;
    CK(cudaMemcpy(h, d, n * (size_t) count_ranks * sizeof(float), cudaMemcpyDeviceToHost));
    for (int q = 0; q < count_ranks && ok; ++q) {
        for (size_t i = 0; i < n && ok; ++i) {
            const float ref = val(count_ranks > 1 ? q : from, i, t);
            if (h[(size_t) q * n + i] != ref) {
                fprintf(stderr, "rank %d: tag %d block %d element %zu: %g, expected %g\n", wrank,
                        t, q, i, (double) h[(size_t) q * n + i], (double) ref);
                ok = 0;
            }
        }
    }
    free(h);
    return ok;
}

static void scenario_cross(size_t n)
{
    char what[160];
    for (int fresh = 1; fresh >= 0; --fresh) {
        MPI_Comm a, b;
        MPI_Comm_dup(MPI_COMM_WORLD, &a);
        MPI_Comm_dup(MPI_COMM_WORLD, &b);
        if (!fresh) {
            /* set up both first: the steady state, not the first call */
            float *x = dev_input(2, 9), *y = dev_poisoned(2);
            MPI_Allreduce(x, y, 2, MPI_FLOAT, MPI_SUM, a);
            MPI_Allreduce(x, y, 2, MPI_FLOAT, MPI_SUM, b);
            CK(cudaFree(x));
            CK(cudaFree(y));
        }
        for (int rep = 0; rep < 3; ++rep) {
            float *sa = dev_input(n, 1), *sb = dev_input(n, 2);
            float *ra = dev_poisoned(n), *rb = dev_poisoned(n);
            MPI_Request rq[2];
            if (0 == wrank % 2) {
                MPI_Iallreduce(sa, ra, (int) n, MPI_FLOAT, MPI_SUM, a, &rq[0]);
                MPI_Iallreduce(sb, rb, (int) n, MPI_FLOAT, MPI_SUM, b, &rq[1]);
            } else {
                MPI_Iallreduce(sb, rb, (int) n, MPI_FLOAT, MPI_SUM, b, &rq[1]);
                MPI_Iallreduce(sa, ra, (int) n, MPI_FLOAT, MPI_SUM, a, &rq[0]);
            }
            MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
            snprintf(what, sizeof(what), "cross: Iallreduce A/B in opposite orders, %zu B, %s "
                     "communicators, round %d", n * 4, fresh ? "new" : "warm", rep);
            record(check_sum(ra, n, 1, wsize) && check_sum(rb, n, 2, wsize), what);
            /* bcast from different roots and an allgather, crossed */
            float *ga = dev_poisoned(n * (size_t) wsize), *bb = 1 == wrank ? dev_input(n, 3)
                                                                             : dev_poisoned(n);
            if (0 == wrank % 2) {
                MPI_Iallgather(sa, (int) n, MPI_FLOAT, ga, (int) n, MPI_FLOAT, a, &rq[0]);
                MPI_Ibcast(bb, (int) n, MPI_FLOAT, 1, b, &rq[1]);
            } else {
                MPI_Ibcast(bb, (int) n, MPI_FLOAT, 1, b, &rq[1]);
                MPI_Iallgather(sa, (int) n, MPI_FLOAT, ga, (int) n, MPI_FLOAT, a, &rq[0]);
            }
            MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
            snprintf(what, sizeof(what), "cross: Iallgather A / Ibcast B in opposite orders, "
                     "%zu B, %s communicators, round %d", n * 4, fresh ? "new" : "warm", rep);
            record(check_copy(ga, n, 1, 0, wsize) && check_copy(bb, n, 3, 1, 1), what);
            CK(cudaFree(sa));
            CK(cudaFree(sb));
            CK(cudaFree(ra));
            CK(cudaFree(rb));
            CK(cudaFree(ga));
            CK(cudaFree(bb));
        }
        MPI_Comm_free(&a);
        MPI_Comm_free(&b);
    }
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void) t;
    for (int i = 0; i < *len; ++i) {
        ((float *) inout)[i] += ((const float *) in)[i];
    }
}

static void scenario_userop(size_t n)
{
    char what[160];
    MPI_Comm a, b;
    MPI_Op op;
    MPI_Datatype every2;
    MPI_Op_create(user_sum, 1, &op);
    MPI_Type_vector((int) n, 1, 2, MPI_FLOAT, &every2);
    MPI_Type_commit(&every2);
    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    for (int rep = 0; rep < 3; ++rep) {
        float *sa = dev_input(n, 40), *sb = dev_input(n, 41);
        float *ra = dev_poisoned(n), *rb = dev_poisoned(n);
        float *v = 0 == wrank ? dev_input(2 * n, 42) : dev_poisoned(2 * n);
        MPI_Request rq[3];
        if (0 == wrank % 2) {
            MPI_Iallreduce(sa, ra, (int) n, MPI_FLOAT, op, a, &rq[0]);
            MPI_Ibcast(v, 1, every2, 0, a, &rq[2]);
            MPI_Iallreduce(sb, rb, (int) n, MPI_FLOAT, op, b, &rq[1]);
        } else {
            MPI_Iallreduce(sb, rb, (int) n, MPI_FLOAT, op, b, &rq[1]);
            MPI_Iallreduce(sa, ra, (int) n, MPI_FLOAT, op, a, &rq[0]);
            MPI_Ibcast(v, 1, every2, 0, a, &rq[2]);
        }
        MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
        int ok = check_sum(ra, n, 40, wsize) && check_sum(rb, n, 41, wsize);
        {   /* the even elements came from rank 0, the odd ones stay */
            float *h = malloc(2 * n * sizeof(float));
            CK(cudaMemcpy(h, v, 2 * n * sizeof(float), cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < n && ok; ++i) {
                ok = h[2 * i] == val(0, 2 * i, 42) &&
                     (0 == wrank ? h[2 * i + 1] == val(0, 2 * i + 1, 42) : isnan(h[2 * i + 1]));
            }
            free(h);
        }
        snprintf(what, sizeof(what), "userop: user-op Iallreduce A/B and a strided Ibcast, "
                 "crossed, %zu B, round %d", n * 4, rep);
        record(ok, what);
        CK(cudaFree(sa));
        CK(cudaFree(sb));
        CK(cudaFree(ra));
        CK(cudaFree(rb));
        CK(cudaFree(v));
    }
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
    MPI_Type_free(&every2);
    MPI_Op_free(&op);
}

static void scenario_blocking(size_t n)
{
    char what[160];
    for (int rep = 0; rep < 3; ++rep) {
        MPI_Comm a, b;
        MPI_Request rq;
        MPI_Comm_dup(MPI_COMM_WORLD, &a);
        MPI_Comm_dup(MPI_COMM_WORLD, &b);
        for (int it = 0; it < 3; ++it) {
            float *bc = 0 == wrank ? dev_input(n, 4) : dev_poisoned(n);
            float *s = dev_input(n, 5), *r = dev_poisoned(n);
            if (0 == wrank % 2) {
                MPI_Ibcast(bc, (int) n, MPI_FLOAT, 0, a, &rq);
                MPI_Allreduce(s, r, (int) n, MPI_FLOAT, MPI_SUM, b);
            } else {
                MPI_Allreduce(s, r, (int) n, MPI_FLOAT, MPI_SUM, b);
                MPI_Ibcast(bc, (int) n, MPI_FLOAT, 0, a, &rq);
            }
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            snprintf(what, sizeof(what), "blocking: Ibcast A + Allreduce B in opposite orders, "
                     "%zu B, communicators %d, call %d", n * 4, rep, it);
            record(check_copy(bc, n, 4, 0, 1) && check_sum(r, n, 5, wsize), what);
            CK(cudaFree(bc));
            CK(cudaFree(s));
            CK(cudaFree(r));
        }
        MPI_Comm_free(&a);
        MPI_Comm_free(&b);
    }
}

static void scenario_persistent(size_t n)
{
    char what[160];
    MPI_Comm a, b;
    MPI_Request rq[2], order[2];
    float *sa = dev_input(n, 6), *sb = dev_input(n, 7);
    float *ra = dev_poisoned(n), *rb = dev_poisoned(n);

    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    MPIX_Allreduce_init(sa, ra, (int) n, MPI_FLOAT, MPI_SUM, a, MPI_INFO_NULL, &rq[0]);
    MPIX_Allreduce_init(sb, rb, (int) n, MPI_FLOAT, MPI_SUM, b, MPI_INFO_NULL, &rq[1]);
    for (int round = 0; round < 3; ++round) {
        CK(cudaMemset(ra, 0xff, n * sizeof(float)));
        CK(cudaMemset(rb, 0xff, n * sizeof(float)));
        order[0] = rq[wrank % 2];
        order[1] = rq[1 - wrank % 2];
        MPI_Startall(2, order);
        /* a blocking device collective on a third communicator meanwhile */
        float *x = dev_input(n, 8), *y = dev_poisoned(n);
        MPI_Allreduce(x, y, (int) n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        snprintf(what, sizeof(what), "persistent: Startall A/B in opposite orders + Allreduce "
                 "on world, %zu B, round %d", n * 4, round);
        record(check_sum(ra, n, 6, wsize) && check_sum(rb, n, 7, wsize) &&
               check_sum(y, n, 8, wsize), what);
        CK(cudaFree(x));
        CK(cudaFree(y));
    }
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);
    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
    CK(cudaFree(sa));
    CK(cudaFree(sb));
    CK(cudaFree(ra));
    CK(cudaFree(rb));
}

/* an error string that a user can act on */
static int names_it(int err, const char *coll)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(err, s, &len);
    if (0 == wrank || 2 == wrank) {
        printf("rank %d: error string: %s\n", wrank, s);
    }
    return NULL != strstr(s, coll) && NULL != strstr(s, "rank 1") &&
           NULL != strstr(s, "coll_gpu_timeout");
}

static void scenario_timeout(size_t n, double limit)
{
    char what[200];
    for (int kind = 0; kind < 3; ++kind) {
        /* 0: blocking on a set-up communicator; 1: nonblocking on one;
         * 2: the first (setting up) call of a new communicator */
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        /* Open MPI 4.1 reports a failed collective request through
         * MPI_COMM_WORLD's handler, whatever its communicator */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        float *s = dev_input(n, 10), *r = dev_poisoned(n);
        if (kind < 2) {
            MPI_Allreduce(s, r, (int) n, MPI_FLOAT, MPI_SUM, c);
        }
        int ok = 1;
        double t = 0;
        if (1 != wrank) {
            int err;
            const double t0 = now();
            if (1 == kind) {
                MPI_Request rq;
                err = MPI_Iallreduce(s, r, (int) n, MPI_FLOAT, MPI_SUM, c, &rq);
                if (MPI_SUCCESS == err) {
                    err = MPI_Wait(&rq, MPI_STATUS_IGNORE);
                }
            } else {
                err = MPI_Allreduce(s, r, (int) n, MPI_FLOAT, MPI_SUM, c);
            }
            t = now() - t0;
            ok = MPI_SUCCESS != err && t <= limit + 2.0 && names_it(err, "allreduce");
        }
        double worst = 0;
        MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        snprintf(what, sizeof(what), "timeout: rank 1 stops calling, %s, %zu B: error after "
                 "%.2f s (limit %.0f + 2 s), string names the call, rank 1 and the parameter",
                 0 == kind ? "blocking Allreduce" : 1 == kind ? "Iallreduce + Wait"
                                                              : "first call (setup)",
                 n * 4, worst, limit);
        record(ok, what);
        CK(cudaFree(s));
        CK(cudaFree(r));
        /* the communicator is broken; freeing it must not hang either */
        MPI_Comm_free(&c);
    }
}

static void scenario_staged(void)
{
    char what[160];
    /* float sums of every short length (Open MPI 4.1.4's op/avx fails at 16 B) */
    int ok = 1;
    for (size_t n = 1; n <= 40; ++n) {
        float *s = dev_input(n, 11), *r = dev_poisoned(n);
        MPI_Allreduce(s, r, (int) n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        ok &= check_sum(r, n, 11, wsize);
        CK(cudaFree(s));
        CK(cudaFree(r));
    }
    record(ok, "staged: float sum allreduce, 1..40 elements");
    /* unsigned long max: values above 2^63 must compare as unsigned */
    {
        unsigned long h[4], *d, got[4];
        for (int i = 0; i < 4; ++i) {
            h[i] = (0 == wrank ? 0x8000000000000000ul : 0x10ul) + (unsigned long) (i + wrank);
        }
        CK(cudaMalloc((void **) &d, sizeof(h)));
        CK(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice));
        MPI_Allreduce(MPI_IN_PLACE, d, 4, MPI_UNSIGNED_LONG, MPI_MAX, MPI_COMM_WORLD);
        CK(cudaMemcpy(got, d, sizeof(got), cudaMemcpyDeviceToHost));
        ok = 1;
        for (int i = 0; i < 4; ++i) {
            ok &= got[i] == 0x8000000000000000ul + (unsigned long) i;
        }
        record(ok, "staged: MPI_UNSIGNED_LONG max above 2^63 compares unsigned");
        CK(cudaFree(d));
    }
    /* int8 sums that stay in range, 1..64 elements */
    ok = 1;
    for (int n = 1; n <= 64; ++n) {
        int8_t h[64], got[64], *d;
        for (int i = 0; i < n; ++i) {
            h[i] = (int8_t) ((i * 7 + wrank * 3) % 11 - 5);
        }
        CK(cudaMalloc((void **) &d, 64));
        CK(cudaMemcpy(d, h, (size_t) n, cudaMemcpyHostToDevice));
        MPI_Allreduce(MPI_IN_PLACE, d, n, MPI_INT8_T, MPI_SUM, MPI_COMM_WORLD);
        CK(cudaMemcpy(got, d, (size_t) n, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; ++i) {
            int ref = 0;
            for (int r = 0; r < wsize; ++r) {
                ref += (i * 7 + r * 3) % 11 - 5;
            }
            ok &= got[i] == (int8_t) ref;
        }
        CK(cudaFree(d));
    }
    record(ok, "staged: int8 sum allreduce, 1..64 elements");
}

static void scenario_edge(void)
{
    const size_t n = 6;
    float *p = dev_poisoned(n * (size_t) wsize), *q = dev_poisoned(n * (size_t) wsize);
    int ok = MPI_SUCCESS == MPI_Allreduce(p, q, 0, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) &&
             MPI_SUCCESS == MPI_Bcast(p, 0, MPI_FLOAT, 0, MPI_COMM_WORLD) &&
             MPI_SUCCESS == MPI_Reduce(p, q, 0, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD) &&
             MPI_SUCCESS == MPI_Allgather(p, 0, MPI_FLOAT, q, 0, MPI_FLOAT, MPI_COMM_WORLD) &&
             MPI_SUCCESS == MPI_Alltoall(p, 0, MPI_FLOAT, q, 0, MPI_FLOAT, MPI_COMM_WORLD) &&
             MPI_SUCCESS == MPI_Reduce_scatter_block(p, q, 0, MPI_FLOAT, MPI_SUM,
                                                     MPI_COMM_WORLD) &&
             MPI_SUCCESS == MPI_Scan(p, q, 0, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) &&
             MPI_SUCCESS == MPI_Gather(p, 0, MPI_FLOAT, q, 0, MPI_FLOAT, 0, MPI_COMM_WORLD) &&
             MPI_SUCCESS == MPI_Scatter(p, 0, MPI_FLOAT, q, 0, MPI_FLOAT, 0, MPI_COMM_WORLD);
    MPI_Request rq;
    ok = ok && MPI_SUCCESS == MPI_Iallreduce(p, q, 0, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &rq) &&
         MPI_SUCCESS == MPI_Wait(&rq, MPI_STATUS_IGNORE);
    {   /* outputs untouched: still the poison */
        unsigned char h[24];
        CK(cudaMemcpy(h, q, sizeof(h), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < sizeof(h); ++i) {
            ok &= 0xff == h[i];
        }
    }
    record(ok, "edge: count 0 in every collective (and Iallreduce) leaves buffers alone");
    CK(cudaFree(p));
    CK(cudaFree(q));

    /* MPI_IN_PLACE */
    float *a = dev_input(n, 13);
    MPI_Allreduce(MPI_IN_PLACE, a, (int) n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    ok = check_sum(a, n, 13, wsize);
    CK(cudaFree(a));
    a = dev_input(n, 14);
    MPI_Request r2;
    MPI_Iallreduce(MPI_IN_PLACE, a, (int) n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r2);
    MPI_Wait(&r2, MPI_STATUS_IGNORE);
    ok &= check_sum(a, n, 14, wsize);
    CK(cudaFree(a));
    a = dev_input(n, 15);
    MPI_Reduce(0 == wrank ? MPI_IN_PLACE : a, a, (int) n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
    ok &= 0 != wrank || check_sum(a, n, 15, wsize);
    CK(cudaFree(a));
    {   /* allgather in place: my block already sits at my slot */
        float *h = malloc(n * (size_t) wsize * sizeof(float));
        for (int r = 0; r < wsize; ++r) {
            for (size_t i = 0; i < n; ++i) {
                h[(size_t) r * n + i] = r == wrank ? val(wrank, i, 16) : -1.0f;
            }
        }
        CK(cudaMalloc((void **) &a, n * (size_t) wsize * sizeof(float)));
        CK(cudaMemcpy(a, h, n * (size_t) wsize * sizeof(float), cudaMemcpyHostToDevice));
        MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, a, (int) n, MPI_FLOAT, MPI_COMM_WORLD);
        ok &= check_copy(a, n, 16, 0, wsize);
        CK(cudaFree(a));
        free(h);
    }
    {   /* reduce_scatter_block and scan in place */
        float *h = malloc(n * (size_t) wsize * sizeof(float)), *got = malloc(n * sizeof(float));
        for (size_t i = 0; i < n * (size_t) wsize; ++i) {
            h[i] = val(wrank, i, 17);
        }
        CK(cudaMalloc((void **) &a, n * (size_t) wsize * sizeof(float)));
        CK(cudaMemcpy(a, h, n * (size_t) wsize * sizeof(float), cudaMemcpyHostToDevice));
        MPI_Reduce_scatter_block(MPI_IN_PLACE, a, (int) n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        CK(cudaMemcpy(got, a, n * sizeof(float), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; ++i) {
            float ref = 0;
            for (int r = 0; r < wsize; ++r) {
                ref += val(r, (size_t) wrank * n + i, 17);
            }
            ok &= got[i] == ref;
        }
        CK(cudaMemcpy(a, h, n * sizeof(float), cudaMemcpyHostToDevice));
        MPI_Scan(MPI_IN_PLACE, a, (int) n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        CK(cudaMemcpy(got, a, n * sizeof(float), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; ++i) {
            float ref = 0;
            for (int r = 0; r <= wrank; ++r) {
                ref += val(r, i, 17);
            }
            ok &= got[i] == ref;
        }
        CK(cudaFree(a));
        free(h);
        free(got);
    }
    record(ok, "edge: MPI_IN_PLACE in allreduce, iallreduce, reduce, allgather, "
               "reduce_scatter_block, scan");
}

/* A kernel that traps, loaded from PTX through the driver: the CUDA
 * context of the process is then unusable (a sticky error). */
static int trap_context(void)
{
    static const char ptx[] = ".version 7.0\n.target sm_50\n.address_size 64\n"
                              ".visible .entry gpucoll_trap()\n{\n\ttrap;\n}\n";
    typedef int (*load_fn)(void **, const void *);
    typedef int (*func_fn)(void **, void *, const char *);
    typedef int (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, void *, void **, void **);
    typedef int (*sync_fn)(void);
    void *lib = dlopen("libcuda.so.1", RTLD_NOW), *mod = NULL, *fn = NULL;
    if (NULL == lib) {
        return 0;
    }
    load_fn load = (load_fn) dlsym(lib, "cuModuleLoadData");
    func_fn func = (func_fn) dlsym(lib, "cuModuleGetFunction");
    launch_fn launch = (launch_fn) dlsym(lib, "cuLaunchKernel");
    sync_fn sync = (sync_fn) dlsym(lib, "cuCtxSynchronize");
    CK(cudaFree(NULL));   /* the primary context is current */
    if (NULL == load || NULL == func || NULL == launch || NULL == sync || 0 != load(&mod, ptx) ||
        0 != func(&fn, mod, "gpucoll_trap") ||
        0 != launch(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL)) {
        return 0;
    }
    return 0 != sync();   /* the trap: an error, sticky from here on */
}

static void scenario_sticky(size_t n, double limit)
{
    MPI_Comm c;
    float *s = dev_input(n, 18), *r = dev_poisoned(n);
    int ok = 1, err;
    double t0, t;

    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Allreduce(s, r, (int) n, MPI_FLOAT, MPI_SUM, c);
    if (0 == wrank) {
        ok = trap_context();
        if (!ok) {
            fprintf(stderr, "rank 0: could not trap the context\n");
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now();
    err = MPI_Allreduce(s, r, (int) n, MPI_FLOAT, MPI_SUM, c);
    t = now() - t0;
    ok = ok && MPI_SUCCESS != err && t <= limit + 2.0;
    if (MPI_SUCCESS != err && wrank < 2) {
        char str[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(err, str, &len);
        printf("rank %d: after %.2f s: %s\n", wrank, t, str);
    }
    record(ok, "sticky: rank 0's context has a sticky error; every rank's Allreduce returns an "
               "error within the timeout");
    /* rank 0 cannot free device memory any more; the others can */
    if (0 != wrank) {
        CK(cudaFree(s));
        CK(cudaFree(r));
    }
}

static void scenario_oom(size_t n)
{
    MPI_Comm c;
    MPI_Request rq;
    {   /* a nonblocking call first: its setup runs from progress and fails */
        float *s0 = dev_input(n, 32), *r0 = dev_poisoned(n);
        float *b0 = 0 == wrank ? dev_input(n, 33) : dev_poisoned(n);
        MPI_Request q[2];
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Iallreduce(s0, r0, (int) n, MPI_FLOAT, MPI_SUM, c, &q[0]);
        MPI_Ibcast(b0, (int) n, MPI_FLOAT, 0, c, &q[1]);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
        record(check_sum(r0, n, 32, wsize) && check_copy(b0, n, 33, 0, 1),
               "oom: iallreduce and ibcast waiting for a setup that fails: staged, right");
        MPI_Comm_free(&c);
        CK(cudaFree(s0));
        CK(cudaFree(r0));
        CK(cudaFree(b0));
    }
    float *s = dev_input(n, 30), *r = dev_poisoned(n), *r2 = dev_poisoned(n);
    float *bc = 0 == wrank ? dev_input(n, 31) : dev_poisoned(n);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Allreduce(s, r, (int) n, MPI_FLOAT, MPI_SUM, c);
    MPI_Iallreduce(s, r2, (int) n, MPI_FLOAT, MPI_SUM, c, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    MPI_Bcast(bc, (int) n, MPI_FLOAT, 0, c);
    record(check_sum(r, n, 30, wsize) && check_sum(r2, n, 30, wsize) &&
           check_copy(bc, n, 31, 0, 1), "oom: allreduce, iallreduce, bcast right without "
                                        "GPU scratch");
    MPI_Comm_free(&c);
    CK(cudaFree(s));
    CK(cudaFree(r));
    CK(cudaFree(r2));
    CK(cudaFree(bc));
}

typedef struct {
    MPI_Comm comm;
    int id, ok, dev;
    size_t n;
} thread_arg_t;

static void *thread_body(void *p)
{
    thread_arg_t *a = p;
    /* a new thread starts on device 0: CUDA's rule, not ours */
    CK(cudaSetDevice(a->dev));
    a->ok = 1;
    for (int it = 0; it < 20; ++it) {
        const int t = 20 + a->id * 100 + it;
        float *s = dev_input(a->n, t), *r = dev_poisoned(a->n);
        MPI_Allreduce(s, r, (int) a->n, MPI_FLOAT, MPI_SUM, a->comm);
        a->ok &= check_sum(r, a->n, t, wsize);
        CK(cudaFree(s));
        CK(cudaFree(r));
        float hs[4], hr[4];
        for (int i = 0; i < 4; ++i) {
            hs[i] = val(wrank, (size_t) i, t);
        }
        MPI_Allreduce(hs, hr, 4, MPI_FLOAT, MPI_SUM, a->comm);
        for (int i = 0; i < 4; ++i) {
            float ref = 0;
            for (int q = 0; q < wsize; ++q) {
                ref += val(q, (size_t) i, t);
            }
            a->ok &= hr[i] == ref;
        }
    }
    return NULL;
}

static void scenario_threads(size_t n, int provided)
{
    pthread_t th[2];
    thread_arg_t arg[2];
    int dev = 0;
    if (MPI_THREAD_MULTIPLE != provided) {
        record(0, "threads: MPI_THREAD_MULTIPLE not provided");
        return;
    }
    CK(cudaGetDevice(&dev));
    for (int i = 0; i < 2; ++i) {
        MPI_Comm_dup(MPI_COMM_WORLD, &arg[i].comm);
        arg[i].id = i;
        arg[i].n = n;
        arg[i].dev = dev;
    }
    for (int i = 0; i < 2; ++i) {
        pthread_create(&th[i], NULL, thread_body, &arg[i]);
    }
    for (int i = 0; i < 2; ++i) {
        pthread_join(th[i], NULL);
    }
    record(arg[0].ok && arg[1].ok, "threads: two threads, own communicators, device and host "
                                   "allreduces at once (20 each)");
    for (int i = 0; i < 2; ++i) {
        MPI_Comm_free(&arg[i].comm);
    }
}

int main(int argc, char **argv)
{
    const char *sc = argc > 1 ? argv[1] : "cross";
    const size_t bytes = argc > 2 ? strtoull(argv[2], NULL, 0) : 8;
    const size_t n = bytes / 4 ? bytes / 4 : 1;
    const char *lim = getenv("GPUCOLL_TEST_TIMEOUT");
    const double limit = NULL != lim ? atof(lim) : 60.0;
    int provided = 0, ndev = 0;

    if (0 == strcmp(sc, "threads")) {
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || 0 == ndev) {
        if (0 == wrank) {
            printf("SKIP: no CUDA device (test_gpu_reliability needs a GPU)\n");
        }
        MPI_Finalize();
        return 0;
    }
    CK(cudaSetDevice(wrank % ndev));
    if (0 == strcmp(sc, "cross")) {
        scenario_cross(n);
    } else if (0 == strcmp(sc, "userop")) {
        scenario_userop(n);
    } else if (0 == strcmp(sc, "blocking")) {
        scenario_blocking(n);
    } else if (0 == strcmp(sc, "persistent")) {
        scenario_persistent(n);
    } else if (0 == strcmp(sc, "timeout")) {
        scenario_timeout(n, limit);
    } else if (0 == strcmp(sc, "staged")) {
        scenario_staged();
    } else if (0 == strcmp(sc, "edge")) {
        scenario_edge();
    } else if (0 == strcmp(sc, "sticky")) {
        scenario_sticky(n, limit);
    } else if (0 == strcmp(sc, "threads")) {
        scenario_threads(n, provided);
    } else if (0 == strcmp(sc, "oom")) {
        scenario_oom(n);
    } else {
        if (0 == wrank) {
            fprintf(stderr, "unknown scenario %s\n", sc);
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (0 == wrank) {
        printf("test_gpu_reliability %s: %d passed, %d failed\n", sc, npass, nfail);
    }
    MPI_Finalize();
    return nfail ? 1 : 0;
}
