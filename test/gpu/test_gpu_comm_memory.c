/*
 * What communicators cost in GPU memory (issue: what coll/gpu costs the
 * application), GPU host.
 *
 *   test_gpu_comm_memory [live] [cycles] [bytes] [big]
 *
 * live communicators (default 100, dups of MPI_COMM_WORLD) each run one
 * device allreduce of bytes (default 8) and stay alive; then they are
 * freed; then cycles (default 1000) dup / allreduce / free rounds.  Every
 * result is checked against a host reference (random non-zero integers,
 * poisoned output), so a communicator that ran out of GPU memory at setup
 * and staged must still be right.  Prints the free GPU memory (after a
 * barrier and a device synchronize) at each point and the cost per live
 * communicator and rank; fails when memory does not come back after the
 * frees (more than 64 MiB + 1 MiB per communicator and rank, what the
 * driver keeps of destroyed streams, below the start), when a second round
 * of as many communicators leaves less than the first (a loss, not the
 * driver's reuse), or when it grows over the cycles.
 * With bytes up to 1 MiB, fails when a live communicator costs more than
 * 64 MiB per rank.  With big (default 16 MiB; 0: none), a big-byte allreduce runs on four of the
 * live communicators before they are freed (the large areas appear then,
 * and must go with them).
 *
 * First, the large-message pool (engine/gpu_pool.h, issue 37): pool
 * communicators (default 48, env GPU_TEST_POOL_COMMS; 0: skip) each run a
 * pool-byte allreduce, alltoall and bcast (default 4 MiB, env
 * GPU_TEST_POOL_BYTES) before any other large call of the process.  Checks: what each communicator after
 * the first costs per rank (the first brings the pool) at most 4 MiB, the
 * whole set at most 1 GiB per GPU (the targets); two of them
 * running large nonblocking allreduces interleaved (posted in opposite
 * orders on even and odd ranks) and a blocking one on a third while a
 * nonblocking one is in flight, all right; overlapping pairs of ranks
 * (split by r / 2 and by (r + 1) / 2) running large blocking allreduces
 * in turn, so one process's area serves communicators of different
 * peers back to back, all right; after MPI_Comm_free of all of
 * them, the memory that comes back has come back at once (measured right
 * after the frees and again a second later: no more than 1 MiB per
 * communicator and rank later) and all of it but the pool's (measured
 * from the first communicator) is back.
 * "N passed, N failed" on rank 0; SKIP without a GPU.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "gpu_test_world.h"

#define SLACK ((size_t) 64 << 20)
/* what the CUDA driver keeps of a destroyed communicator's stream and
 * launches for its next ones, per communicator and rank: 0.55 MiB a bare
 * stream (retain_probe), 0.92 MiB measured under MPS after 100 live
 * communicators; a second round shows it reused */
#define STREAM_KEPT ((size_t) 1 << 20)

/* one device allreduce of n floats on c, checked: 0 when right */
static int one_allreduce(MPI_Comm c, float *d_in, float *d_out, float *h, size_t n, int t)
{
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
        h[i] = val(wrank, i, t);
    }
    CK(cudaMemcpy(d_in, h, n * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemset(d_out, 0xff, n * sizeof(float)));
    if (MPI_SUCCESS != MPI_Allreduce(d_in, d_out, (int) n, MPI_FLOAT, MPI_SUM, c)) {
        return 1;
    }
    CK(cudaMemcpy(h, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) {
        float ref = 0;
        for (int r = 0; r < wsize; ++r) {
            ref += val(r, i, t);
        }
        bad += h[i] != ref;
    }
    return bad != 0;
}

/* A device alltoall of n floats in all (n / ranks to each) and a bcast of
 * n floats from root on c, checked: 0 when both are right. */
static int one_alltoall_bcast(MPI_Comm c, float *d_in, float *d_out, float *h, size_t n, int t,
                              int root)
{
    const size_t blk = n / (size_t) wsize;
    int bad = 0;

    for (size_t i = 0; i < blk * (size_t) wsize; ++i) {
        h[i] = val(wrank, i, t);
    }
    CK(cudaMemcpy(d_in, h, blk * wsize * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemset(d_out, 0xff, n * sizeof(float)));
    if (blk > 0 && MPI_SUCCESS != MPI_Alltoall(d_in, (int) blk, MPI_FLOAT, d_out, (int) blk,
                                               MPI_FLOAT, c)) {
        return 1;
    }
    CK(cudaMemcpy(h, d_out, blk * wsize * sizeof(float), cudaMemcpyDeviceToHost));
    for (int s = 0; s < wsize; ++s) {
        for (size_t j = 0; j < blk; ++j) {
            bad += h[(size_t) s * blk + j] != val(s, (size_t) wrank * blk + j, t);
        }
    }
    for (size_t i = 0; i < n; ++i) {
        h[i] = val(root, i, t + 1);
    }
    if (wrank == root) {
        CK(cudaMemcpy(d_out, h, n * sizeof(float), cudaMemcpyHostToDevice));
    } else {
        CK(cudaMemset(d_out, 0xff, n * sizeof(float)));
    }
    if (MPI_SUCCESS != MPI_Bcast(d_out, (int) n, MPI_FLOAT, root, c)) {
        return 1;
    }
    CK(cudaMemcpy(h, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; ++i) {
        bad += h[i] != val(root, i, t + 1);
    }
    return bad != 0;
}

static size_t env_size(const char *name, size_t dflt)
{
    const char *v = getenv(name);
    return NULL != v && '\0' != v[0] ? (size_t) atoll(v) : dflt;
}

/* reference element i of the sum over ranks of val(r, i, t) */
static float ref_sum(size_t i, int t)
{
    float ref = 0;
    for (int r = 0; r < wsize; ++r) {
        ref += val(r, i, t);
    }
    return ref;
}

/* MiB per communicator and rank from a drop in free memory (ranks sharing
 * a GPU split what it lost) */
static double per_comm_mib(size_t before, size_t after, int comms, int ndev)
{
    const double share = wsize < ndev ? 1.0 : (double) wsize / ndev;
    return before > after && comms > 0 ? (double) (before - after) / comms / share / 1048576.0
                                       : 0.0;
}

/*
 * Two large nonblocking allreduces on a and b, posted a-then-b on even
 * ranks and b-then-a on odd ones (legal: each communicator sees its calls
 * in one order), then a blocking one on c while one on a is in flight.
 * 0 when every result matches the host reference.
 */
static int pool_concurrent(MPI_Comm a, MPI_Comm b, MPI_Comm c, size_t n, float *h)
{
    float *d[6];
    MPI_Request rq[2];
    int bad = 0;

    for (int k = 0; k < 6; ++k) {
        CK(cudaMalloc((void **) &d[k], n * sizeof(float)));
    }
    for (int k = 0; k < 3; ++k) {
        for (size_t i = 0; i < n; ++i) {
            h[i] = val(wrank, i, 500 + k);
        }
        CK(cudaMemcpy(d[2 * k], h, n * sizeof(float), cudaMemcpyHostToDevice));
        CK(cudaMemset(d[2 * k + 1], 0xff, n * sizeof(float)));
    }
    if (0 == wrank % 2) {
        MPI_Iallreduce(d[0], d[1], (int) n, MPI_FLOAT, MPI_SUM, a, &rq[0]);
        MPI_Iallreduce(d[2], d[3], (int) n, MPI_FLOAT, MPI_SUM, b, &rq[1]);
    } else {
        MPI_Iallreduce(d[2], d[3], (int) n, MPI_FLOAT, MPI_SUM, b, &rq[1]);
        MPI_Iallreduce(d[0], d[1], (int) n, MPI_FLOAT, MPI_SUM, a, &rq[0]);
    }
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    /* a blocking large call (the pool's lease) while a's next is in flight */
    CK(cudaMemset(d[1], 0xff, n * sizeof(float)));
    MPI_Iallreduce(d[0], d[1], (int) n, MPI_FLOAT, MPI_SUM, a, &rq[0]);
    if (MPI_SUCCESS != MPI_Allreduce(d[4], d[5], (int) n, MPI_FLOAT, MPI_SUM, c)) {
        bad = 1;
    }
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    for (int k = 0; k < 3; ++k) {
        CK(cudaMemcpy(h, d[2 * k + 1], n * sizeof(float), cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; ++i) {
            bad += h[i] != ref_sum(i, 500 + k);
        }
    }
    for (int k = 0; k < 6; ++k) {
        CK(cudaFree(d[k]));
    }
    return bad != 0;
}

/* Large blocking allreduces in turn on two splits whose groups overlap
 * (r / 2 and (r + 1) / 2): 0 when every result is right. */
static int pool_overlapping(size_t n, float *h)
{
    MPI_Comm pair[2];
    float *d_in, *d_out;
    int bad = 0;

    MPI_Comm_split(MPI_COMM_WORLD, wrank / 2, wrank, &pair[0]);
    MPI_Comm_split(MPI_COMM_WORLD, (wrank + 1) / 2, wrank, &pair[1]);
    CK(cudaMalloc((void **) &d_in, n * sizeof(float)));
    CK(cudaMalloc((void **) &d_out, n * sizeof(float)));
    for (int k = 0; k < 20; ++k) {
        for (int j = 0; j < 2; ++j) {
            const int color = 0 == j ? wrank / 2 : (wrank + 1) / 2;
            for (size_t i = 0; i < n; ++i) {
                h[i] = val(wrank, i, 700 + k);
            }
            CK(cudaMemcpy(d_in, h, n * sizeof(float), cudaMemcpyHostToDevice));
            CK(cudaMemset(d_out, 0xff, n * sizeof(float)));
            if (MPI_SUCCESS != MPI_Allreduce(d_in, d_out, (int) n, MPI_FLOAT, MPI_SUM, pair[j])) {
                bad = 1;
            }
            CK(cudaMemcpy(h, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < n; ++i) {
                float ref = 0;
                for (int r = 0; r < wsize; ++r) {
                    ref += (0 == j ? r / 2 : (r + 1) / 2) == color ? val(r, i, 700 + k) : 0;
                }
                bad += h[i] != ref;
            }
        }
    }
    CK(cudaFree(d_in));
    CK(cudaFree(d_out));
    MPI_Comm_free(&pair[0]);
    MPI_Comm_free(&pair[1]);
    return bad != 0;
}

/* The pool phase (see the top): before any other large call. */
static void pool_phase(int ndev)
{
    const int ncomm = (int) env_size("GPU_TEST_POOL_COMMS", 48);
    const size_t bytes = env_size("GPU_TEST_POOL_BYTES", (size_t) 4 << 20);
    const size_t n = bytes / sizeof(float) > 0 ? bytes / sizeof(float) : 1;
    MPI_Comm *comms;
    float *d_in, *d_out, *h;
    size_t fa, f1 = 0, fb, fc, fd;
    int bad = 0;
    char what[240];

    if (ncomm < 3) {
        return;
    }
    comms = calloc((size_t) ncomm, sizeof(MPI_Comm));
    h = malloc(n * sizeof(float));
    CK(cudaMalloc((void **) &d_in, n * sizeof(float)));
    CK(cudaMalloc((void **) &d_out, n * sizeof(float)));
    fa = world_free_gpu();
    for (int k = 0; k < ncomm; ++k) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[k]);
        MPI_Comm_set_errhandler(comms[k], MPI_ERRORS_RETURN);
        bad += one_allreduce(comms[k], d_in, d_out, h, n, 9000 + k);
        bad += one_alltoall_bcast(comms[k], d_in, d_out, h, n, 9100 + 2 * k, k % wsize);
        if (0 == k) {
            f1 = world_free_gpu();   /* the pool came with the first */
        }
    }
    fb = world_free_gpu();
    snprintf(what, sizeof(what), "pool: %d communicators, a %zu-byte device allreduce, "
             "alltoall and bcast each: results right", ncomm, n * sizeof(float));
    record(0 == bad, what);
    {
        const double first = per_comm_mib(fa, f1, 1, ndev);
        const double each = per_comm_mib(f1, fb, ncomm - 1, ndev);
        const double all = fa > fb ? (double) (fa - fb) / 1048576.0 : 0.0;
        if (0 == wrank) {
            printf("pool: the first communicator %.1f MiB per rank (with the pool), each next "
                   "%.1f MiB, %d in all %.1f MiB per GPU\n", first, each, ncomm, all);
        }
        snprintf(what, sizeof(what), "pool: each communicator after the first costs %.1f MiB "
                 "per rank after %zu-byte calls (at most 4)", each, n * sizeof(float));
        record(each <= 4.0, what);
        snprintf(what, sizeof(what), "pool: %d communicators after %zu-byte calls cost %.1f MiB "
                 "per GPU in all (at most 1024)", ncomm, n * sizeof(float), all);
        record(all <= 1024.0, what);
    }
    snprintf(what, sizeof(what), "pool: large nonblocking allreduces on two communicators "
             "interleaved, a blocking one on a third meanwhile: results right");
    record(0 == pool_concurrent(comms[0], comms[1], comms[2], n, h), what);
    snprintf(what, sizeof(what), "pool: large blocking allreduces in turn on overlapping pairs "
             "of ranks: results right");
    record(0 == pool_overlapping(n, h), what);

    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < ncomm; ++k) {
        MPI_Comm_free(&comms[k]);
    }
    /* right after the frees (every rank's: a peer's mapping holds our
     * memory), then a second later: nothing may come back late */
    MPI_Barrier(MPI_COMM_WORLD);
    {
        size_t f = 0, t = 0;
        unsigned long long mine, least = 0;
        CK(cudaMemGetInfo(&f, &t));
        mine = (unsigned long long) f;
        MPI_Allreduce(&mine, &least, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
        fc = (size_t) least;
    }
    sleep(1);
    fd = world_free_gpu();
    {
        const size_t share = wsize < ndev ? 1 : (size_t) (wsize / ndev);
        const size_t kept = (size_t) ncomm * STREAM_KEPT * share;
        /* what the first communicator's pool holds stays (the world
         * communicator is attached to it); the rest comes back */
        const size_t pool = fa > f1 ? (fa - f1) - (f1 > fb ? (f1 - fb) / (size_t) (ncomm - 1) : 0)
                                    : 0;
        if (0 == wrank) {
            printf("pool: free GPU memory %.1f MiB before, %.1f with %d communicators, %.1f right "
                   "after MPI_Comm_free, %.1f a second later (the pool about %.1f MiB)\n",
                   fa / 1048576.0, fb / 1048576.0, ncomm, fc / 1048576.0, fd / 1048576.0,
                   pool / 1048576.0);
        }
        snprintf(what, sizeof(what), "pool: memory back within MPI_Comm_free (a second later "
                 "at most 1 MiB per communicator and rank more)");
        record(fd <= fc + kept, what);
        snprintf(what, sizeof(what), "pool: all but the pool back after freeing %d communicators "
                 "(within %zu MiB + 1 MiB per communicator and rank)", ncomm, SLACK >> 20);
        record(fc + kept + SLACK + pool >= fa, what);
    }
    CK(cudaFree(d_in));
    CK(cudaFree(d_out));
    free(h);
    free(comms);
}

int main(int argc, char **argv)
{
    /* run_gpu_tests.sh may pass --quick: the defaults then */
    const int nargs = argc > 1 && '-' == argv[1][0] ? 1 : argc;
    const int live = nargs > 1 ? atoi(argv[1]) : 100;
    const int cycles = nargs > 2 ? atoi(argv[2]) : 1000;
    const size_t bytes = nargs > 3 ? (size_t) atoll(argv[3]) : 8;
    const size_t big = nargs > 4 ? (size_t) atoll(argv[4]) : (size_t) 16 << 20;
    const size_t n = bytes / sizeof(float) > 0 ? bytes / sizeof(float) : 1;
    int ndev = 0, bad = 0;
    size_t f0, f1, f2, f3;
    MPI_Comm *comms;
    float *d_in, *d_out, *h;
    char what[200];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || ndev < 1) {
        if (0 == wrank) {
            printf("SKIP test_gpu_comm_memory: no CUDA device visible\n");
        }
        MPI_Finalize();
        return 0;
    }
    CK(cudaSetDevice(wrank % ndev));
    CK(cudaMalloc((void **) &d_in, n * sizeof(float)));
    CK(cudaMalloc((void **) &d_out, n * sizeof(float)));
    h = malloc(n * sizeof(float));
    comms = calloc((size_t) (live > 0 ? live : 1), sizeof(MPI_Comm));
    /* MPI_COMM_WORLD's own state first, so it does not count below */
    bad += one_allreduce(MPI_COMM_WORLD, d_in, d_out, h, n, 0);
    pool_phase(ndev);
    f0 = world_free_gpu();

    for (int k = 0; k < live; ++k) {
        /* dups and splits, as a 2D/3D decomposition makes them (with the
         * ranks of one node each split keeps them all) */
        if (k % 2) {
            MPI_Comm_split(MPI_COMM_WORLD, 0, wsize - wrank, &comms[k]);
        } else {
            MPI_Comm_dup(MPI_COMM_WORLD, &comms[k]);
        }
        MPI_Comm_set_errhandler(comms[k], MPI_ERRORS_RETURN);
        bad += one_allreduce(comms[k], d_in, d_out, h, n, k + 1);
    }
    f1 = world_free_gpu();
    snprintf(what, sizeof(what), "%d live communicators, one %zu-byte device allreduce each: "
             "results right", live, n * sizeof(float));
    record(0 == bad, what);
    bad = 0;
    if (bytes <= ((size_t) 1 << 20) && live > 0) {
        /* the target: at most 64 MiB per rank for a communicator that only
         * runs calls up to 1 MiB (ranks sharing a GPU split what it lost) */
        const double per = f0 > f1 ? (double) (f0 - f1) / live /
                                         (wsize < ndev ? 1 : (double) wsize / ndev) : 0.0;
        snprintf(what, sizeof(what), "%d live communicators: %.1f MiB per communicator and rank "
                 "(at most 64)", live, per / 1048576.0);
        record(per <= 64.0 * 1048576.0, what);
    }
    if (big > 0 && live > 0) {
        /* a large call on a few of them: their large areas appear now
         * (where the path needs them) and go at MPI_Comm_free below */
        const size_t nb = big / sizeof(float);
        const int few = live < 4 ? live : 4;
        float *b_in, *b_out, *hb = malloc(nb * sizeof(float));
        size_t fb, fa;
        CK(cudaMalloc((void **) &b_in, nb * sizeof(float)));
        CK(cudaMalloc((void **) &b_out, nb * sizeof(float)));
        fb = world_free_gpu();
        for (int k = 0; k < few; ++k) {
            bad += one_allreduce(comms[k], b_in, b_out, hb, nb, 7000 + k);
        }
        fa = world_free_gpu();
        if (0 == wrank) {
            printf("a %zu-byte allreduce on %d of them: %.1f MiB more per communicator and "
                   "rank\n", big, few, fb > fa ? (double) (fb - fa) / few /
                   (wsize < ndev ? 1 : (double) wsize / ndev) / 1048576.0 : 0.0);
        }
        snprintf(what, sizeof(what), "a %zu-byte allreduce on %d live communicators: results "
                 "right", big, few);
        record(0 == bad, what);
        bad = 0;
        CK(cudaFree(b_in));
        CK(cudaFree(b_out));
        free(hb);
    }
    for (int k = 0; k < live; ++k) {
        MPI_Comm_free(&comms[k]);
    }
    f2 = world_free_gpu();
    if (0 == wrank) {
        const double per = live > 0 && f0 > f1
                           ? (double) (f0 - f1) / live / (wsize < ndev ? 1 : (double) wsize / ndev)
                           : 0.0;
        printf("free GPU memory: %.1f MiB at start, %.1f with %d communicators (%.1f MiB per "
               "communicator and rank), %.1f after freeing them\n", f0 / 1048576.0,
               f1 / 1048576.0, live, per / 1048576.0, f2 / 1048576.0);
    }
    /* the CUDA driver keeps the memory of destroyed streams for its next
     * streams (test/bench/retain_probe.cu: 0.55 MiB a stream, 546 MiB kept
     * after 1000 were destroyed, all reused by the next 1000); each
     * communicator's engine has one, so that much stays with the process */
    const size_t kept = SLACK + (size_t) live * STREAM_KEPT * (wsize < ndev ? 1 : wsize / ndev);
    snprintf(what, sizeof(what), "GPU memory back after freeing %d communicators (within %zu MiB "
             "+ 1 MiB per communicator and rank the driver keeps)", live, SLACK >> 20);
    record(f2 + kept >= f0, what);
    if (live > 0) {
        /* the same again: what the driver kept is reused, nothing is lost */
        for (int k = 0; k < live; ++k) {
            MPI_Comm_dup(MPI_COMM_WORLD, &comms[k]);
            bad += one_allreduce(comms[k], d_in, d_out, h, n, 3000 + k);
        }
        for (int k = 0; k < live; ++k) {
            MPI_Comm_free(&comms[k]);
        }
        f3 = world_free_gpu();
        if (0 == wrank) {
            printf("free GPU memory after a second round of %d: %.1f MiB\n", live,
                   f3 / 1048576.0);
        }
        snprintf(what, sizeof(what), "a second round of %d communicators: results right, GPU "
                 "memory where the first round left it (within 64 MiB)", live);
        record(0 == bad && f3 + SLACK >= f2, what);
        bad = 0;
        f2 = f3;   /* the cycles start from here */
    }

    for (int k = 0; k < cycles; ++k) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        bad += one_allreduce(c, d_in, d_out, h, n, 1000 + k);
        MPI_Comm_free(&c);
    }
    f3 = world_free_gpu();
    if (0 == wrank) {
        printf("free GPU memory after %d dup/allreduce/free cycles: %.1f MiB\n", cycles,
               f3 / 1048576.0);
    }
    snprintf(what, sizeof(what), "%d dup/allreduce/free cycles: results right", cycles);
    record(0 == bad, what);
    snprintf(what, sizeof(what), "%d dup/allreduce/free cycles: GPU memory flat (within %zu MiB)",
             cycles, SLACK >> 20);
    record(f3 + SLACK >= f2, what);

    if (0 == wrank) {
        printf("test_gpu_comm_memory (%d ranks): %d passed, %d failed\n", wsize, npass, nfail);
    }
    free(comms);
    free(h);
    CK(cudaFree(d_in));
    CK(cudaFree(d_out));
    MPI_Finalize();
    return nfail > 0;
}
