/*
 * MPI_THREAD_MULTIPLE with coll/gpu loaded: threads run host-buffer
 * collectives at once, each on its own communicator (MPI forbids two
 * threads in collectives of one communicator at a time), blocking and
 * nonblocking mixed, every result checked against a host reference.  Run
 * with the CUDA driver stand-in so that coll/gpu's module takes every call
 * first (its buffer classification and hand-off run in all threads).
 * Prints "N passed, N failed" on rank 0; SKIP when the library does not
 * provide MPI_THREAD_MULTIPLE.
 */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 4
#define ITERS 200
#define MAXCOUNT 1000

typedef struct {
    MPI_Comm comm;
    int id, bad, done;
} worker_t;

static int val(int r, int i, int it, int id)
{
    uint32_t x = (uint32_t) (r * 7919 + i * 104729 + it * 31 + id * 1000003 + 12345);
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return (int) (x % 1000) + 1;
}

static void *work(void *arg)
{
    worker_t *w = arg;
    int r, n;
    int *in = malloc(sizeof(int) * MAXCOUNT), *out = malloc(sizeof(int) * MAXCOUNT * 8);
    MPI_Comm_rank(w->comm, &r);
    MPI_Comm_size(w->comm, &n);
    for (int it = 0; it < ITERS; ++it) {
        /* sizes differ per thread and iteration, the same on every rank */
        int count = 1 + (it * 37 + w->id * 101) % MAXCOUNT;
        MPI_Request req;
        for (int i = 0; i < count; ++i) {
            in[i] = val(r, i, it, w->id);
        }
        memset(out, 0xff, sizeof(int) * count);
        if (it % 2) {
            MPI_Iallreduce(in, out, count, MPI_INT, MPI_SUM, w->comm, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, w->comm);
        }
        for (int i = 0; i < count; ++i) {
            int s = 0;
            for (int j = 0; j < n; ++j) {
                s += val(j, i, it, w->id);
            }
            w->bad += out[i] != s;
        }
        int root = it % n;
        for (int i = 0; i < count; ++i) {
            out[i] = r == root ? val(root, i, it, w->id) : -1;
        }
        MPI_Bcast(out, count, MPI_INT, root, w->comm);
        for (int i = 0; i < count; ++i) {
            w->bad += out[i] != val(root, i, it, w->id);
        }
        if (n <= 8 && count <= MAXCOUNT) {
            MPI_Allgather(in, count, MPI_INT, out, count, MPI_INT, w->comm);
            for (int j = 0; j < n; ++j) {
                for (int i = 0; i < count; ++i) {
                    w->bad += out[j * count + i] != val(j, i, it, w->id);
                }
            }
        }
        w->done++;
    }
    free(in);
    free(out);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank, npass = 0, nfail = 0;
    worker_t w[NTHREADS];
    pthread_t t[NTHREADS];

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (0 == rank) {
            printf("SKIP: the MPI library gives thread level %d, not MPI_THREAD_MULTIPLE\n", provided);
        }
        MPI_Finalize();
        return 0;
    }
    /* communicators are made in the same order on every rank, before the threads */
    for (int i = 0; i < NTHREADS; ++i) {
        MPI_Comm_dup(MPI_COMM_WORLD, &w[i].comm);
        w[i].id = i;
        w[i].bad = 0;
        w[i].done = 0;
    }
    for (int i = 0; i < NTHREADS; ++i) {
        pthread_create(&t[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < NTHREADS; ++i) {
        pthread_join(t[i], NULL);
    }
    for (int i = 0; i < NTHREADS; ++i) {
        int bad = w[i].bad + (ITERS != w[i].done), all = 0;
        MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (0 == all) {
            npass++;
        } else {
            nfail++;
            if (0 == rank) {
                printf("FAIL: thread %d: %d wrong values or missing iterations\n", i, all);
            }
        }
        MPI_Comm_free(&w[i].comm);
    }
    if (0 == rank) {
        printf("test_host_threads (%d threads x %d iterations): %d passed, %d failed\n", NTHREADS,
               ITERS, npass, nfail);
    }
    MPI_Finalize();
    return 0 == nfail ? 0 : 1;
}
