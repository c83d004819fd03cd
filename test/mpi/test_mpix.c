/*
 * libgpucoll's MPIX stream extension on the CPU: MPIX_Info_set_hex's
 * encoding, streams from MPI_INFO_NULL (the calling thread: every enqueued
 * collective runs at once, so all six and their _c forms, in place too, are
 * checked against host references), stream communicators made by
 * MPIX_Stream_comm_create (dups: the stream stays with the copy), and the
 * errors a user meets: no stream on the communicator, a bad info, and a
 * CUDA stream when coll/gpu is not loaded (argument "noload") or is
 * (argument "loaded": the library finds coll/gpu's entry and then refuses
 * the bogus stream handle this test gives it).
 * Prints "N passed, N failed" on rank 0.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpix/mpix_gpu.h"

#include "world_check.h"

static int val(int r, int i)
{
    return world_val(r, i, 4242);
}

static int sum_at(int i)
{
    int s = 0;
    for (int r = 0; r < size; ++r) {
        s += val(r, i);
    }
    return s;
}

static void collectives(MPI_Comm sc, int large)
{
    const int n = 53;
    int *in = malloc(sizeof(int) * n * size), *out = malloc(sizeof(int) * n * size), ok, rc;
    char what[96];

    for (int i = 0; i < n * size; ++i) {
        in[i] = val(rank, i);
    }
    memset(out, 0xff, sizeof(int) * n * size);
    rc = large ? MPIX_Allreduce_enqueue_c(in, out, n, MPI_INT, MPI_SUM, sc)
               : MPIX_Allreduce_enqueue(in, out, n, MPI_INT, MPI_SUM, sc);
    ok = MPI_SUCCESS == rc;
    for (int i = 0; i < n; ++i) {
        ok &= out[i] == sum_at(i);
    }
    snprintf(what, sizeof(what), "allreduce_enqueue%s", large ? "_c" : "");
    check(ok, what);

    for (int i = 0; i < n; ++i) {
        out[i] = val(rank, i);
    }
    rc = MPIX_Allreduce_enqueue(MPI_IN_PLACE, out, n, MPI_INT, MPI_SUM, sc);
    ok = MPI_SUCCESS == rc;
    for (int i = 0; i < n; ++i) {
        ok &= out[i] == sum_at(i);
    }
    check(ok, "allreduce_enqueue in place");

    for (int root = 0; root < size; ++root) {
        for (int i = 0; i < n; ++i) {
            out[i] = rank == root ? val(root, i) : -1;
        }
        rc = large ? MPIX_Bcast_enqueue_c(out, n, MPI_INT, root, sc)
                   : MPIX_Bcast_enqueue(out, n, MPI_INT, root, sc);
        ok = MPI_SUCCESS == rc;
        for (int i = 0; i < n; ++i) {
            ok &= out[i] == val(root, i);
        }
        snprintf(what, sizeof(what), "bcast_enqueue%s root %d", large ? "_c" : "", root);
        check(ok, what);
    }

    memset(out, 0, sizeof(int) * n);
    rc = large ? MPIX_Reduce_enqueue_c(in, out, n, MPI_INT, MPI_SUM, size - 1, sc)
               : MPIX_Reduce_enqueue(in, out, n, MPI_INT, MPI_SUM, size - 1, sc);
    ok = MPI_SUCCESS == rc;
    for (int i = 0; rank == size - 1 && i < n; ++i) {
        ok &= out[i] == sum_at(i);
    }
    snprintf(what, sizeof(what), "reduce_enqueue%s", large ? "_c" : "");
    check(ok, what);

    memset(out, 0xff, sizeof(int) * n * size);
    rc = large ? MPIX_Allgather_enqueue_c(in, n, MPI_INT, out, n, MPI_INT, sc)
               : MPIX_Allgather_enqueue(in, n, MPI_INT, out, n, MPI_INT, sc);
    ok = MPI_SUCCESS == rc;
    for (int r = 0; r < size; ++r) {
        for (int i = 0; i < n; ++i) {
            ok &= out[r * n + i] == val(r, i);
        }
    }
    snprintf(what, sizeof(what), "allgather_enqueue%s", large ? "_c" : "");
    check(ok, what);

    memset(out, 0xff, sizeof(int) * n * size);
    rc = large ? MPIX_Reduce_scatter_block_enqueue_c(in, out, n, MPI_INT, MPI_SUM, sc)
               : MPIX_Reduce_scatter_block_enqueue(in, out, n, MPI_INT, MPI_SUM, sc);
    ok = MPI_SUCCESS == rc;
    for (int i = 0; i < n; ++i) {
        ok &= out[i] == sum_at(rank * n + i);
    }
    snprintf(what, sizeof(what), "reduce_scatter_block_enqueue%s", large ? "_c" : "");
    check(ok, what);

    memset(out, 0xff, sizeof(int) * n * size);
    rc = large ? MPIX_Alltoall_enqueue_c(in, n, MPI_INT, out, n, MPI_INT, sc)
               : MPIX_Alltoall_enqueue(in, n, MPI_INT, out, n, MPI_INT, sc);
    ok = MPI_SUCCESS == rc;
    for (int r = 0; r < size; ++r) {
        for (int i = 0; i < n; ++i) {
            ok &= out[r * n + i] == val(r, rank * n + i);
        }
    }
    snprintf(what, sizeof(what), "alltoall_enqueue%s", large ? "_c" : "");
    check(ok, what);
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    const char *expect = argc > 1 ? argv[1] : "";
    MPI_Info info;
    MPIX_Stream cpu = MPIX_STREAM_NULL, gpu = MPIX_STREAM_NULL, bad = MPIX_STREAM_NULL;
    MPI_Comm sc, gc;
    char got[64];
    int flag = 0, provided, x = 1, rc;
    const unsigned char bytes[4] = { 0x01, 0xab, 0x00, 0xff };
    void *fake_stream = (void *) (uintptr_t) 0x5eed;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Info_create(&info);
    MPIX_Info_set_hex(info, "k", bytes, 4);
    MPI_Info_get(info, "k", sizeof(got) - 1, got, &flag);
    check(flag && 0 == strcmp(got, "01ab00ff"), "MPIX_Info_set_hex writes two hex digits a byte");
    MPI_Info_free(&info);

    check(MPI_SUCCESS == MPIX_Stream_create(MPI_INFO_NULL, &cpu) && MPIX_STREAM_NULL != cpu,
          "MPIX_Stream_create(MPI_INFO_NULL) gives the calling thread's stream");
    check(MPI_SUCCESS == MPIX_Stream_comm_create(MPI_COMM_WORLD, cpu, &sc) && MPI_COMM_NULL != sc &&
          MPI_COMM_WORLD != sc, "MPIX_Stream_comm_create makes a new communicator");
    collectives(sc, 0);
    collectives(sc, 1);
    rc = MPIX_Allreduce_enqueue(&x, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check(MPI_ERR_COMM == rc, "enqueue on a communicator without a stream is refused");

    MPI_Info_create(&info);
    MPI_Info_set(info, "type", "hipStream_t");
    check(MPI_ERR_ARG == MPIX_Stream_create(info, &bad), "a stream type other than cudaStream_t is refused");
    MPI_Info_set(info, "type", "cudaStream_t");
    check(MPI_ERR_ARG == MPIX_Stream_create(info, &bad), "a CUDA stream without its value is refused");
    MPIX_Info_set_hex(info, "value", &fake_stream, sizeof(fake_stream));
    check(MPI_SUCCESS == MPIX_Stream_create(info, &gpu), "a CUDA stream from type and hex value");
    MPI_Info_free(&info);
    check(MPI_SUCCESS == MPIX_Stream_comm_create(MPI_COMM_WORLD, gpu, &gc), "its communicator");
    rc = MPIX_Allreduce_enqueue(&x, &x, 1, MPI_INT, MPI_SUM, gc);
    if (0 == strcmp(expect, "noload")) {
        check(MPI_ERR_OTHER == rc, "a CUDA stream without coll/gpu loaded: an error (it says why)");
    } else if (0 == strcmp(expect, "loaded")) {
        /* coll/gpu's entry is found; the handle is not a stream of this process */
        check(MPI_ERR_OTHER == rc, "a bogus CUDA stream handle: an error, no crash");
    }
    MPI_Comm_free(&gc);
    MPI_Comm_free(&sc);
    check(MPI_SUCCESS == MPIX_Stream_free(&gpu) && MPIX_STREAM_NULL == gpu, "MPIX_Stream_free");
    MPIX_Stream_free(&cpu);
    if (0 == rank) {
        printf("test_mpix np=%d: %d passed, %d failed\n", size, npass, nfail);
    }
    MPI_Finalize();
    return 0 == nfail ? 0 : 1;
}
