/*
 * Host-buffer collectives with coll/gpu loaded: every blocking and
 * nonblocking collective must give the same answer as a local reference.
 * Run under mpirun -np 1/2/4, with the default selection and with
 * "--mca coll gpu" alone.  Prints "N passed, N failed" per rank 0.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "world_check.h"

/* value contributed by rank r at index i: random-looking, non-zero */
static int val(int r, int i)
{
    return world_val(r, i, 12345);
}

static void test_comm(MPI_Comm comm, const char *tag)
{
    int r, n, i, j, ok, count = 37;
    int *in, *out, *ref, *counts, *displs;
    char what[128];
    MPI_Request req;

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    in = malloc(sizeof(int) * count * n);
    out = malloc(sizeof(int) * count * n);
    ref = malloc(sizeof(int) * count * n);
    counts = malloc(sizeof(int) * n);
    displs = malloc(sizeof(int) * n);
    for (i = 0; i < count * n; ++i) {
        in[i] = val(r, i);
    }

    /* allreduce sum / max, blocking and nonblocking, and in place */
    for (int nb = 0; nb < 2; ++nb) {
        memset(out, 0xff, sizeof(int) * count);
        if (nb) {
            MPI_Iallreduce(in, out, count, MPI_INT, MPI_SUM, comm, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, comm);
        }
        ok = 1;
        for (i = 0; i < count; ++i) {
            int s = 0;
            for (j = 0; j < n; ++j) s += val(j, i);
            ok &= out[i] == s;
        }
        snprintf(what, sizeof(what), "%s %sallreduce sum", tag, nb ? "i" : "");
        check(ok, what);
    }
    memcpy(out, in, sizeof(int) * count);
    MPI_Allreduce(MPI_IN_PLACE, out, count, MPI_INT, MPI_MAX, comm);
    ok = 1;
    for (i = 0; i < count; ++i) {
        int mx = 0;
        for (j = 0; j < n; ++j) mx = val(j, i) > mx ? val(j, i) : mx;
        ok &= out[i] == mx;
    }
    snprintf(what, sizeof(what), "%s allreduce in-place max", tag);
    check(ok, what);

    /* bcast from every root */
    for (int root = 0; root < n; ++root) {
        for (i = 0; i < count; ++i) out[i] = (r == root) ? val(root, i) : -1;
        MPI_Bcast(out, count, MPI_INT, root, comm);
        ok = 1;
        for (i = 0; i < count; ++i) ok &= out[i] == val(root, i);
        snprintf(what, sizeof(what), "%s bcast root %d", tag, root);
        check(ok, what);
    }

    /* reduce to the last rank */
    memset(out, 0, sizeof(int) * count);
    MPI_Reduce(in, out, count, MPI_INT, MPI_SUM, n - 1, comm);
    ok = 1;
    if (r == n - 1) {
        for (i = 0; i < count; ++i) {
            int s = 0;
            for (j = 0; j < n; ++j) s += val(j, i);
            ok &= out[i] == s;
        }
    }
    snprintf(what, sizeof(what), "%s reduce", tag);
    check(ok, what);

    /* allgather and allgatherv */
    MPI_Allgather(in, count, MPI_INT, out, count, MPI_INT, comm);
    ok = 1;
    for (j = 0; j < n; ++j)
        for (i = 0; i < count; ++i) ok &= out[j * count + i] == val(j, i);
    snprintf(what, sizeof(what), "%s allgather", tag);
    check(ok, what);
    for (j = 0; j < n; ++j) {
        counts[j] = j + 1;
        displs[j] = j * count;
    }
    memset(out, 0, sizeof(int) * count * n);
    MPI_Allgatherv(in, r + 1, MPI_INT, out, counts, displs, MPI_INT, comm);
    ok = 1;
    for (j = 0; j < n; ++j)
        for (i = 0; i < j + 1; ++i) ok &= out[j * count + i] == val(j, i);
    snprintf(what, sizeof(what), "%s allgatherv", tag);
    check(ok, what);

    /* alltoall: block j of rank r's input goes to rank j */
    MPI_Alltoall(in, count, MPI_INT, out, count, MPI_INT, comm);
    ok = 1;
    for (j = 0; j < n; ++j)
        for (i = 0; i < count; ++i) ok &= out[j * count + i] == val(j, r * count + i);
    snprintf(what, sizeof(what), "%s alltoall", tag);
    check(ok, what);

    /* gather / scatter at root 0 */
    memset(out, 0, sizeof(int) * count * n);
    MPI_Gather(in, count, MPI_INT, out, count, MPI_INT, 0, comm);
    ok = 1;
    if (0 == r)
        for (j = 0; j < n; ++j)
            for (i = 0; i < count; ++i) ok &= out[j * count + i] == val(j, i);
    snprintf(what, sizeof(what), "%s gather", tag);
    check(ok, what);
    memset(out, 0, sizeof(int) * count);
    MPI_Scatter(in, count, MPI_INT, out, count, MPI_INT, 0, comm);
    ok = 1;
    for (i = 0; i < count; ++i) ok &= out[i] == val(0, r * count + i);
    snprintf(what, sizeof(what), "%s scatter", tag);
    check(ok, what);

    /* reduce_scatter_block, scan, exscan */
    MPI_Reduce_scatter_block(in, out, count, MPI_INT, MPI_SUM, comm);
    ok = 1;
    for (i = 0; i < count; ++i) {
        int s = 0;
        for (j = 0; j < n; ++j) s += val(j, r * count + i);
        ok &= out[i] == s;
    }
    snprintf(what, sizeof(what), "%s reduce_scatter_block", tag);
    check(ok, what);
    MPI_Scan(in, out, count, MPI_INT, MPI_SUM, comm);
    ok = 1;
    for (i = 0; i < count; ++i) {
        int s = 0;
        for (j = 0; j <= r; ++j) s += val(j, i);
        ok &= out[i] == s;
    }
    snprintf(what, sizeof(what), "%s scan", tag);
    check(ok, what);
    MPI_Exscan(in, out, count, MPI_INT, MPI_SUM, comm);
    ok = 1;
    if (r > 0) {
        for (i = 0; i < count; ++i) {
            int s = 0;
            for (j = 0; j < r; ++j) s += val(j, i);
            ok &= out[i] == s;
        }
    }
    snprintf(what, sizeof(what), "%s exscan", tag);
    check(ok, what);

    /* a nonblocking barrier and bcast overlapping */
    for (i = 0; i < count; ++i) out[i] = (0 == r) ? val(0, i) : 0;
    MPI_Ibcast(out, count, MPI_INT, 0, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Ibarrier(comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    ok = 1;
    for (i = 0; i < count; ++i) ok &= out[i] == val(0, i);
    snprintf(what, sizeof(what), "%s ibcast+ibarrier", tag);
    check(ok, what);

    free(in);
    free(out);
    free(ref);
    free(counts);
    free(displs);
}

/* The nonblocking neighborhood collectives on a periodic ring: coll/gpu
 * passes them through to the module below it (in call order). */
static void test_ring(void)
{
    const int dims = size, periods = 1;
    int me, left, right, ok, ag[2], agv[3], a2a[2], a2av[2], a2aw[2], out[2], one[2] = { 1, 1 };
    int gdispls[2] = { 0, 2 }, adispls[2] = { 0, 1 };
    MPI_Aint wdispls[2] = { 0, sizeof(int) };
    MPI_Datatype types[2] = { MPI_INT, MPI_INT };
    MPI_Request req[5];
    MPI_Comm ring;

    MPI_Cart_create(MPI_COMM_WORLD, 1, &dims, &periods, 0, &ring);
    MPI_Comm_rank(ring, &me);
    MPI_Cart_shift(ring, 0, 1, &left, &right);
    out[0] = out[1] = val(me, 7);
    memset(ag, 0xff, sizeof(ag));
    memset(agv, 0xff, sizeof(agv));
    memset(a2a, 0xff, sizeof(a2a));
    memset(a2av, 0xff, sizeof(a2av));
    memset(a2aw, 0xff, sizeof(a2aw));
    MPI_Ineighbor_allgather(&out[0], 1, MPI_INT, ag, 1, MPI_INT, ring, &req[0]);
    MPI_Ineighbor_allgatherv(&out[0], 1, MPI_INT, agv, one, gdispls, MPI_INT, ring, &req[1]);
    MPI_Ineighbor_alltoall(out, 1, MPI_INT, a2a, 1, MPI_INT, ring, &req[2]);
    MPI_Ineighbor_alltoallv(out, one, adispls, MPI_INT, a2av, one, adispls, MPI_INT, ring,
                            &req[3]);
    MPI_Ineighbor_alltoallw(out, one, wdispls, types, a2aw, one, wdispls, types, ring, &req[4]);
    MPI_Waitall(5, req, MPI_STATUSES_IGNORE);
    ok = ag[0] == val(left, 7) && ag[1] == val(right, 7);
    check(ok, "ring ineighbor_allgather");
    ok = agv[0] == val(left, 7) && agv[2] == val(right, 7) && -1 == agv[1];
    check(ok, "ring ineighbor_allgatherv (the gap keeps its bytes)");
    ok = a2a[0] == val(left, 7) && a2a[1] == val(right, 7);
    check(ok, "ring ineighbor_alltoall");
    ok = a2av[0] == val(left, 7) && a2av[1] == val(right, 7);
    check(ok, "ring ineighbor_alltoallv");
    ok = a2aw[0] == val(left, 7) && a2aw[1] == val(right, 7);
    check(ok, "ring ineighbor_alltoallw");
    MPI_Comm_free(&ring);
}

/* "timeout": rank 1 stops calling; the others' blocking allreduce on a
 * new communicator must fail within coll_gpu_timeout + 2 s (limit, s)
 * naming the call, rank 1 and the parameter.  Host buffers fail that way
 * only where coll/gpu waits on them: the kind queries across nodes with
 * coll_gpu_kind_test_device (run_cpu_tests.sh). */
static void test_timeout(double limit)
{
    MPI_Comm c;
    int ok = 1;

    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    if (1 != rank) {
        char s[MPI_MAX_ERROR_STRING];
        int v = rank, sum = 0, len = 0;
        const double t0 = MPI_Wtime();
        const int err = MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c);
        const double t = MPI_Wtime() - t0;
        MPI_Error_string(err, s, &len);
        ok = MPI_SUCCESS != err && t <= limit + 2.0 && NULL != strstr(s, "allreduce") &&
             NULL != strstr(s, "rank 1") && NULL != strstr(s, "coll_gpu_timeout");
        printf("rank %d: after %.2f s: %s\n", rank, t, MPI_SUCCESS != err ? s : "no error");
    } else {
        /* out of MPI meanwhile: its next call would wait (and may time out) too */
        usleep((useconds_t) ((limit + 1.0) * 1e6));
    }
    check(ok, "rank 1 stops calling: the others' allreduce fails in time, naming rank 1");
    MPI_Comm_free(&c);
}

int main(int argc, char **argv)
{
    MPI_Comm dup, split;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 2 && 0 == strcmp(argv[1], "timeout")) {
        test_timeout(atof(argv[2]));
        if (0 == rank) {
            printf("test_host_colls timeout np=%d: %d passed, %d failed\n", size, npass, nfail);
        }
        MPI_Finalize();
        return nfail ? 1 : 0;
    }
    test_comm(MPI_COMM_WORLD, "world");
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    test_comm(dup, "dup");
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &split);
    test_comm(split, "split");
    MPI_Comm_free(&split);
    MPI_Comm_free(&dup);
    test_ring();
    /* many communicators made and freed, each with a few calls (across
     * nodes their query receives outlive them for a while: coll/gpu keeps
     * the last freed ones answering) */
    {
        int bad = 0;
        for (int i = 0; i < 100; ++i) {
            int v = rank + i, sum = 0, b = 0 == rank ? 1000 + i : -1;
            MPI_Comm_dup(MPI_COMM_WORLD, &dup);
            MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, dup);
            MPI_Bcast(&b, 1, MPI_INT, 0, dup);
            bad += sum != size * (size - 1) / 2 + size * i || b != 1000 + i;
            MPI_Comm_free(&dup);
        }
        check(0 == bad, "100 communicators made, used and freed");
    }
    if (0 == rank) {
        printf("test_host_colls np=%d: %d passed, %d failed\n", size, npass, nfail);
    }
    MPI_Finalize();
    return nfail ? 1 : 0;
}
