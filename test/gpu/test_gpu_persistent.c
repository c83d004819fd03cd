/*
 * Persistent collectives (MPIX_*_init) with coll/gpu loaded.  Each request
 * is started three times with new random non-zero inputs and poisoned
 * outputs, and every result is checked against a host reference.  While a
 * round is active, ranks exchange pt2pt messages around a ring.  Also:
 * MPI_Startall over two requests, a datatype freed after init (the
 * request must keep it), freeing an inactive request.
 *
 * Buffers live on the device when a GPU is present, and on the host in any
 * case (CI checks that host calls still go to Open MPI's own persistent
 * collectives).  Without a GPU the device part is skipped with a reason.
 *
 *   test_gpu_persistent        prints "N passed, N failed" on rank 0
 */
#include <mpi.h>
#include "mpi_persist_compat.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "gpu_test_common.h"

static int wrank, wsize, npass, nfail, on_device;

#define CK(call) do { cudaError_t e_ = (call); if (cudaSuccess != e_) { \
    fprintf(stderr, "rank %d: %s:%d %s: %s\n", wrank, __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

static void record(int ok, const char *what, int round)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (all) {
        ++npass;
    } else {
        ++nfail;
        if (0 == wrank) {
            printf("FAIL %s (%s buffers, round %d)\n", what, on_device ? "device" : "host", round);
        }
    }
}

static void *mem(size_t bytes)
{
    void *p = NULL;
    if (on_device) {
        CK(cudaMalloc(&p, bytes ? bytes : 1));
    } else {
        p = malloc(bytes ? bytes : 1);
    }
    return p;
}

static void mem_free(void *p)
{
    if (on_device) {
        CK(cudaFree(p));
    } else {
        free(p);
    }
}

static void put(void *dst, const void *src, size_t bytes)
{
    if (on_device) {
        CK(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
    } else {
        memcpy(dst, src, bytes);
    }
}

static void get(void *dst, const void *src, size_t bytes)
{
    if (on_device) {
        CK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
    } else {
        memcpy(dst, src, bytes);
    }
}

/* input element i of rank r in round k: non-zero, small (sums stay exact) */
static int val(int r, int k, size_t i, uint64_t salt)
{
    uint64_t s = salt ^ ((uint64_t) r << 40) ^ ((uint64_t) k << 32) ^ i;
    return 1 + (int) (rng_next(&s) % 1000);
}

static void poison(void *buf, size_t bytes)
{
    unsigned char *h = malloc(bytes);
    memset(h, 0xa5, bytes);
    put(buf, h, bytes);
    free(h);
}

/* pt2pt around the ring while a round is outstanding */
static void ring_traffic(void)
{
    int out = wrank, in = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, (wrank + 1) % wsize, 7, &in, 1, MPI_INT,
                 (wrank + wsize - 1) % wsize, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

enum { P_ALLREDUCE, P_BCAST, P_REDUCE, P_ALLGATHER, P_ALLTOALL, P_RSB, P_SCAN, P_GATHER, P_N };
static const char *pname[] = { "allreduce", "bcast", "reduce", "allgather", "alltoall",
                               "reduce_scatter_block", "scan", "gather" };

/* Reference of rank me's output (nout ints) in round k. */
static void reference(int coll, size_t count, int root, int k, uint64_t salt, int *ref)
{
    const int n = wsize, me = wrank;
    switch (coll) {
    case P_ALLREDUCE:
    case P_REDUCE:
    case P_SCAN:
        for (size_t i = 0; i < count; ++i) {
            int s = 0;
            for (int r = 0; r < (P_SCAN == coll ? me + 1 : n); ++r) {
                s += val(r, k, i, salt);
            }
            ref[i] = s;
        }
        break;
    case P_BCAST:
        for (size_t i = 0; i < count; ++i) {
            ref[i] = val(root, k, i, salt);
        }
        break;
    case P_ALLGATHER:
    case P_GATHER:
        for (int r = 0; r < n; ++r) {
            for (size_t i = 0; i < count; ++i) {
                ref[(size_t) r * count + i] = val(r, k, i, salt);
            }
        }
        break;
    case P_ALLTOALL:          /* block me of every rank's input */
        for (int r = 0; r < n; ++r) {
            for (size_t i = 0; i < count; ++i) {
                ref[(size_t) r * count + i] = val(r, k, (size_t) me * count + i, salt);
            }
        }
        break;
    case P_RSB:               /* block me of the sum */
        for (size_t i = 0; i < count; ++i) {
            int s = 0;
            for (int r = 0; r < n; ++r) {
                s += val(r, k, (size_t) me * count + i, salt);
            }
            ref[i] = s;
        }
        break;
    }
}

/* Elements this rank sends and receives for the collective. */
static void sizes(int coll, size_t count, size_t *nin, size_t *nout)
{
    const size_t n = (size_t) wsize;
    *nin = (P_ALLTOALL == coll || P_RSB == coll) ? n * count : count;
    *nout = (P_ALLGATHER == coll || P_ALLTOALL == coll || P_GATHER == coll) ? n * count : count;
}

static void init_req(int coll, const void *in, void *out, size_t count, int root,
                     MPI_Datatype t, MPI_Request *req)
{
    const int c = (int) count;
    MPI_Info info = MPI_INFO_NULL;
    switch (coll) {
    case P_ALLREDUCE: MPIX_Allreduce_init(in, out, c, t, MPI_SUM, MPI_COMM_WORLD, info, req); break;
    case P_BCAST: MPIX_Bcast_init(out, c, t, root, MPI_COMM_WORLD, info, req); break;
    case P_REDUCE: MPIX_Reduce_init(in, out, c, t, MPI_SUM, root, MPI_COMM_WORLD, info, req); break;
    case P_ALLGATHER: MPIX_Allgather_init(in, c, t, out, c, t, MPI_COMM_WORLD, info, req); break;
    case P_ALLTOALL: MPIX_Alltoall_init(in, c, t, out, c, t, MPI_COMM_WORLD, info, req); break;
    case P_RSB: MPIX_Reduce_scatter_block_init(in, out, c, t, MPI_SUM, MPI_COMM_WORLD, info, req); break;
    case P_SCAN: MPIX_Scan_init(in, out, c, t, MPI_SUM, MPI_COMM_WORLD, info, req); break;
    case P_GATHER: MPIX_Gather_init(in, c, t, out, c, t, root, MPI_COMM_WORLD, info, req); break;
    }
}

/* One persistent request, three rounds. */
static void run_case(int coll, size_t count, int root, int dup_type)
{
    size_t nin, nout;
    sizes(coll, count, &nin, &nout);
    const uint64_t salt = 0x5eed0000ull + (uint64_t) coll * 977 + count;
    int *hin = malloc(nin * sizeof(int) + 1), *hout = malloc(nout * sizeof(int) + 1);
    int *ref = malloc(nout * sizeof(int) + 1);
    void *in = mem(nin * sizeof(int)), *out = mem(nout * sizeof(int));
    MPI_Datatype t = MPI_INT;
    MPI_Request req;
    char what[128];

    if (dup_type) {
        MPI_Type_dup(MPI_INT, &t);
    }
    init_req(coll, in, out, count, root, t, &req);
    if (dup_type) {
        MPI_Type_free(&t);       /* the request keeps its own reference */
    }
    snprintf(what, sizeof(what), "%s count %zu root %d%s", pname[coll], count, root,
             dup_type ? " (type freed after init)" : "");
    for (int k = 0; k < 3; ++k) {
        /* bcast: the buffer is the input at the root, the output elsewhere */
        for (size_t i = 0; i < nin; ++i) {
            hin[i] = val(wrank, k, i, salt);
        }
        poison(out, nout * sizeof(int));
        if (P_BCAST == coll && wrank == root) {
            put(out, hin, nin * sizeof(int));
        } else {
            put(in, hin, nin * sizeof(int));
        }
        MPI_Start(&req);
        ring_traffic();
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        int ok = 1;
        const int checks = (P_REDUCE == coll || P_GATHER == coll) ? wrank == root : 1;
        if (checks) {
            get(hout, out, nout * sizeof(int));
            reference(coll, count, root, k, salt, ref);
            ok = 0 == memcmp(hout, ref, nout * sizeof(int));
        }
        record(ok, what, k);
    }
    MPI_Request_free(&req);
    record(MPI_REQUEST_NULL == req, "MPI_Request_free of an inactive request", 0);
    mem_free(in);
    mem_free(out);
    free(hin);
    free(hout);
    free(ref);
}

/* Two requests started together, twice. */
static void run_startall(size_t count)
{
    const uint64_t salt = 0xa11ull;
    int *h = malloc(count * sizeof(int)), *ref = malloc(count * sizeof(int));
    void *in = mem(count * sizeof(int)), *out = mem(count * sizeof(int));
    void *b = mem(count * sizeof(int));
    MPI_Request reqs[2];

    MPIX_Allreduce_init(in, out, (int) count, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                        &reqs[0]);
    MPIX_Bcast_init(b, (int) count, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[1]);
    for (int k = 0; k < 2; ++k) {
        for (size_t i = 0; i < count; ++i) {
            h[i] = val(wrank, k, i, salt);
        }
        put(in, h, count * sizeof(int));
        poison(out, count * sizeof(int));
        if (0 == wrank) {
            put(b, h, count * sizeof(int));
        } else {
            poison(b, count * sizeof(int));
        }
        MPI_Startall(2, reqs);
        ring_traffic();
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        reference(P_ALLREDUCE, count, 0, k, salt, ref);
        get(h, out, count * sizeof(int));
        int ok = 0 == memcmp(h, ref, count * sizeof(int));
        reference(P_BCAST, count, 0, k, salt, ref);
        get(h, b, count * sizeof(int));
        ok = ok && 0 == memcmp(h, ref, count * sizeof(int));
        record(ok, "MPI_Startall: allreduce + bcast", k);
    }
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[1]);
    mem_free(in);
    mem_free(out);
    mem_free(b);
    free(h);
    free(ref);
}

/* Host buffers only (no device form): a persistent barrier, alltoallw, and
 * neighborhood allgather, alltoall and alltoallw on a periodic ring,
 * started twice.  Where ranks may mix memory kinds coll/gpu owns them all
 * (their rounds start in call order; the alltoallw forms keep their
 * per-peer datatypes). */
static void run_host_only(void)
{
    const int dims = wsize, periods = 1;
    int *sw = malloc(sizeof(int) * (size_t) wsize), *rw = malloc(sizeof(int) * (size_t) wsize);
    int *ones = malloc(sizeof(int) * (size_t) wsize), *dis = malloc(sizeof(int) * (size_t) wsize);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t) wsize);
    int me, left, right, word, ag[2], a2a[2], out[2];
    MPI_Request req[5];
    MPI_Comm ring;
    /* neighbor alltoallw: one int each way through a contiguous type freed
     * after init (the request keeps it) */
    const MPI_Aint ndis[2] = { 0, (MPI_Aint) sizeof(int) };
    int nout[2], nin[2], none[2] = { 1, 1 };
    MPI_Datatype nty[2], ity;

    MPI_Cart_create(MPI_COMM_WORLD, 1, &dims, &periods, 0, &ring);
    MPI_Comm_rank(ring, &me);
    MPI_Cart_shift(ring, 0, 1, &left, &right);
    for (int q = 0; q < wsize; ++q) {
        ones[q] = 1;
        dis[q] = (int) sizeof(int) * q;
        types[q] = MPI_INT;
    }
    MPIX_Barrier_init(ring, MPI_INFO_NULL, &req[0]);
    MPIX_Alltoallw_init(sw, ones, dis, types, rw, ones, dis, types, ring, MPI_INFO_NULL, &req[1]);
    MPIX_Neighbor_allgather_init(&word, 1, MPI_INT, ag, 1, MPI_INT, ring, MPI_INFO_NULL, &req[2]);
    MPIX_Neighbor_alltoall_init(out, 1, MPI_INT, a2a, 1, MPI_INT, ring, MPI_INFO_NULL, &req[3]);
    MPI_Type_contiguous(1, MPI_INT, &ity);
    MPI_Type_commit(&ity);
    nty[0] = nty[1] = ity;
    MPIX_Neighbor_alltoallw_init(nout, none, ndis, nty, nin, none, ndis, nty, ring, MPI_INFO_NULL,
                                 &req[4]);
    MPI_Type_free(&ity);
    for (int k = 0; k < 2; ++k) {
        int ok = 1;
        word = val(me, k, 7, 0xb0bull);
        out[0] = out[1] = val(me, k, 9, 0xb0bull);
        for (int q = 0; q < wsize; ++q) {
            sw[q] = val(me, k, (size_t) q, 0xa2aull);
            rw[q] = -1;
        }
        ag[0] = ag[1] = a2a[0] = a2a[1] = nin[0] = nin[1] = -1;
        nout[0] = nout[1] = val(me, k, 11, 0xb0bull);
        MPI_Startall(5, req);
        ring_traffic();
        MPI_Waitall(5, req, MPI_STATUSES_IGNORE);
        for (int q = 0; q < wsize; ++q) {
            ok &= rw[q] == val(q, k, (size_t) me, 0xa2aull);
        }
        ok &= ag[0] == val(left, k, 7, 0xb0bull) && ag[1] == val(right, k, 7, 0xb0bull);
        ok &= a2a[0] == val(left, k, 9, 0xb0bull) && a2a[1] == val(right, k, 9, 0xb0bull);
        ok &= nin[0] == val(left, k, 11, 0xb0bull) && nin[1] == val(right, k, 11, 0xb0bull);
        record(ok, "host only: persistent barrier, alltoallw, neighbor allgather, alltoall and "
               "alltoallw on a ring, started together", k);
    }
    for (int i = 0; i < 5; ++i) {
        MPI_Request_free(&req[i]);
    }
    MPI_Comm_free(&ring);
    free(sw);
    free(rw);
    free(ones);
    free(dis);
    free(types);
}

/* Persistent alltoallw, started three times: peer q gets q + 1 elements
 * of a two-int type that is freed right after init (the request must keep
 * it); every rank receives rank + 1 elements from each peer. */
static void run_alltoallw(void)
{
    int *sc = malloc(sizeof(int) * (size_t) wsize), *sd = malloc(sizeof(int) * (size_t) wsize);
    int *rc = malloc(sizeof(int) * (size_t) wsize), *rd = malloc(sizeof(int) * (size_t) wsize);
    MPI_Datatype ty, *types = malloc(sizeof(MPI_Datatype) * (size_t) wsize);
    size_t sbytes = 0, rbytes = 0;
    MPI_Request req;

    MPI_Type_contiguous(2, MPI_INT, &ty);
    MPI_Type_commit(&ty);
    for (int q = 0; q < wsize; ++q) {
        sc[q] = q + 1;
        sd[q] = (int) sbytes;
        sbytes += (size_t) (q + 1) * 8;
        rc[q] = wrank + 1;
        rd[q] = (int) rbytes;
        rbytes += (size_t) (wrank + 1) * 8;
        types[q] = ty;
    }
    int *hs = malloc(sbytes), *hr = malloc(rbytes);
    void *sb = mem(sbytes), *rb = mem(rbytes);
    MPIX_Alltoallw_init(sb, sc, sd, types, rb, rc, rd, types, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    MPI_Type_free(&ty);
    for (int k = 0; k < 3; ++k) {
        int ok = 1;
        for (int q = 0; q < wsize; ++q) {
            for (int e = 0; e < 2 * (q + 1); ++e) {
                hs[sd[q] / 4 + e] = val(wrank, k, (size_t) (1000 * q + e), 0x77ull);
            }
        }
        put(sb, hs, sbytes);
        poison(rb, rbytes);
        MPI_Start(&req);
        ring_traffic();
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        get(hr, rb, rbytes);
        for (int q = 0; q < wsize; ++q) {
            for (int e = 0; e < 2 * (wrank + 1); ++e) {
                ok &= hr[rd[q] / 4 + e] == val(q, k, (size_t) (1000 * wrank + e), 0x77ull);
            }
        }
        record(ok, "persistent alltoallw, per-peer counts, its type freed after init", k);
    }
    MPI_Request_free(&req);
    mem_free(sb);
    mem_free(rb);
    free(hs);
    free(hr);
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(types);
}

static void run_all(void)
{
    const size_t counts[] = { 1, 1000, 300001 };
    for (int c = 0; c < P_N; ++c) {
        for (size_t j = 0; j < sizeof(counts) / sizeof(counts[0]); ++j) {
            run_case(c, counts[j], (int) (j % (size_t) wsize), 0);
        }
    }
    run_case(P_ALLGATHER, 1000, 0, 1);   /* Open MPI: no MPI_SUM on a dup of MPI_INT */
    run_case(P_BCAST, 1000, wsize - 1, 1);
    run_startall(4096);
    run_alltoallw();
}

int main(int argc, char **argv)
{
    int ndev = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);

    on_device = 0;
    run_all();
    run_host_only();
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || ndev < 1) {
        if (0 == wrank) {
            printf("SKIP device buffers: no CUDA device visible (host buffers were tested)\n");
        }
    } else {
        CK(cudaSetDevice(wrank % ndev));
        on_device = 1;
        run_all();
    }
    if (0 == wrank) {
        printf("test_gpu_persistent (%d ranks): %d passed, %d failed\n", wsize, npass, nfail);
    }
    MPI_Finalize();
    return nfail > 0;
}
