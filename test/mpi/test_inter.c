/*
 * The UCX transport and the inter-node algorithms on host memory between
 * real processes (UCX shared-memory or TCP on loopback, as UCX_TLS says):
 * every rank is its own "node".  Random non-zero inputs that every rank
 * can regenerate, poisoned outputs, host references folded in rank order
 * with values chosen so that every order gives the same bits.
 * Also: a wait for a peer that never sends ends in a timeout naming it,
 * and a short message is reported, not accepted.
 * Usage: mpirun -np N test_inter [--quick] [--distinct-hosts].
 * Prints "N passed, N failed".
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inter/gpu_inter.h"
#include "kernels/gpu_kernels.h"
#include "test/unit/check.h"
#include "ucx_transport/gpu_ucx.h"

static int rank, size;

static gpu_status_t boot_allgather(void *ctx, const void *sbuf, void *rbuf, size_t bytes)
{
    (void) ctx;
    return MPI_SUCCESS == MPI_Allgather(sbuf, (int) bytes, MPI_BYTE, rbuf, (int) bytes, MPI_BYTE,
                                        MPI_COMM_WORLD) ? GPU_OK : GPU_ERR_BOOTSTRAP;
}
static const gpu_boot_ops_t boot = { .allgather = boot_allgather };

static gpu_status_t host_reduce(void *ctx, void *acc, const void *x, size_t count, gpu_op_t op,
                                gpu_dtype_t dt)
{
    (void) ctx;
    return gpu_reduce_host(acc, x, count, op, dt) ? GPU_OK : GPU_ERR_UNSUPPORTED;
}
static const gpu_inter_reduce_ops_t host_red = { .reduce = host_reduce };

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* rank r's input: values whose folds are exact in any order */
static void fill(void *buf, size_t count, gpu_dtype_t dt, gpu_op_t op, int r, uint64_t seed)
{
    uint64_t s = seed * 1000003u + (uint64_t) r * 7919u + 1;
    const size_t esz = gpu_dtype_size(dt);
    char *b = buf;
    for (size_t i = 0; i < count; ++i) {
        const uint64_t v = rng_next(&s);
        /* products stay powers of two, sums small integers */
        const double f = GPU_OP_PROD == op ? (double) (1 << (v % 2)) * ((v >> 8) % 2 ? -1 : 1)
                                           : (double) ((int) (v % 15) - 7 ? (int) (v % 15) - 7 : 3);
        char *e = b + i * esz;
        switch (dt) {
        case GPU_DT_F32: *(float *) e = (float) f; break;
        case GPU_DT_F64: *(double *) e = f; break;
        case GPU_DT_C32: ((float *) e)[0] = (float) f; ((float *) e)[1] = (float) (v % 3); break;
        case GPU_DT_C64: ((double *) e)[0] = f; ((double *) e)[1] = (double) (v % 3); break;
        case GPU_DT_BOOL: *(uint8_t *) e = (uint8_t) (v & 1); break;
        case GPU_DT_FLOAT_INT: *(float *) e = (float) (v % 5); ((int *) e)[1] = r; break;
        case GPU_DT_DOUBLE_INT: *(double *) e = (double) (v % 5); ((int *) (e + 8))[0] = r; break;
        case GPU_DT_LONG_INT: *(long *) e = (long) (v % 5); ((int *) (e + 8))[0] = r; break;
        case GPU_DT_2INT: ((int *) e)[0] = (int) (v % 5); ((int *) e)[1] = r; break;
        case GPU_DT_SHORT_INT: *(short *) e = (short) (v % 5); ((int *) (e + 4))[0] = r; break;
        /* half precision: f (small integers, powers of two) is exact in both */
        case GPU_DT_F16: case GPU_DT_BF16: {
            const float ff = (float) f;
            uint32_t u;
            uint16_t h;
            memcpy(&u, &ff, 4);
            if (GPU_DT_BF16 == dt) {
                h = (uint16_t) (u >> 16);
            } else {
                const uint32_t ex = (u >> 23) & 0xff;
                h = (uint16_t) ((u >> 16 & 0x8000) | (0 == ex ? 0 : (ex - 112) << 10 | (u >> 13 & 0x3ff)));
            }
            memcpy(e, &h, 2);
            break;
        }
        case GPU_DT_LDOUBLE: case GPU_DT_LDOUBLE_INT: {
            const long double ld = (long double) (GPU_DT_LDOUBLE_INT == dt ? (double) (v % 5) : f);
            memset(e, 0, esz);
            memcpy(e, &ld, 10);
            if (GPU_DT_LDOUBLE_INT == dt) {
                ((int *) (e + 16))[0] = r;
            }
            break;
        }
        default: memcpy(e, &v, esz); break; /* integers: any bits, arithmetic wraps */
        }
    }
}

/* element-wise: the padding of the pair types is not data */
static int same(const void *a, const void *b, size_t count, gpu_dtype_t dt)
{
    const size_t esz = gpu_dtype_size(dt);
    for (size_t i = 0; i < count; ++i) {
        const char *x = (const char *) a + i * esz, *y = (const char *) b + i * esz;
        size_t vbytes = esz;
        switch (dt) {
        /* numerically: another fold order may give -0 for +0 */
        case GPU_DT_F32: case GPU_DT_C32:
            for (size_t k = 0; k < esz / 4; ++k) {
                if (((const float *) x)[k] != ((const float *) y)[k]) return 0;
            }
            continue;
        case GPU_DT_F64: case GPU_DT_C64:
            for (size_t k = 0; k < esz / 8; ++k) {
                if (((const double *) x)[k] != ((const double *) y)[k]) return 0;
            }
            continue;
        case GPU_DT_FLOAT_INT: case GPU_DT_2INT: vbytes = 8; break;
        case GPU_DT_DOUBLE_INT: case GPU_DT_LONG_INT: vbytes = 12; break;
        case GPU_DT_SHORT_INT:
            if (memcmp(x, y, 2) || memcmp(x + 4, y + 4, 4)) return 0;
            continue;
        /* x87 long double: 10 value bytes (and the index at 16) */
        case GPU_DT_LDOUBLE: vbytes = 10; break;
        case GPU_DT_LDOUBLE_INT:
            if (memcmp(x, y, 10) || memcmp(x + 16, y + 16, 4)) return 0;
            continue;
        default: break;
        }
        if (memcmp(x, y, vbytes)) {
            return 0;
        }
    }
    return 1;
}

static void reference(void *ref, size_t count, gpu_dtype_t dt, gpu_op_t op, uint64_t seed)
{
    void *tmp = malloc(count * gpu_dtype_size(dt) + 1);
    fill(ref, count, dt, op, 0, seed);
    for (int r = 1; r < size; ++r) {
        fill(tmp, count, dt, op, r, seed);
        gpu_reduce_host(ref, tmp, count, op, dt);
    }
    free(tmp);
}

static void group_init(gpu_inter_group_t *g, gpu_net_t *net, int *ranks, char *tmp, size_t tmpb)
{
    memset(g, 0, sizeof(*g));
    g->net = &gpu_ucx_net_ops;
    g->conn = net;
    g->n = size;
    g->me = rank;
    g->ranks = ranks;
    g->mem = GPU_NET_MEM_HOST;
    g->red = &host_red;
    g->tmp = tmp;
    g->tmp_bytes = tmpb;
    g->alpha_s = 5e-6;
    g->beta_Bps = 10e9;
}

static uint32_t next_tag(void)
{
    static uint32_t seq;
    return (++seq & 0xffff) << 16;
}

static void test_allreduce(gpu_net_t *net, int *ranks, int quick)
{
    static const size_t counts[] = { 1, 3, 17, 1000, 65537 };
    static const size_t tmps[] = { 64, 1 << 20 };
    static const char *aname[] = { "auto", "ring", "recursive doubling" };
    char *tmp = malloc(1 << 20);
    for (int a = 0; a < 3; ++a) {
        for (int op = 0; op < GPU_OP_COUNT; ++op) {
            for (int dt = 0; dt < GPU_DT_COUNT; ++dt) {
                if (!gpu_op_dtype_valid((gpu_op_t) op, (gpu_dtype_t) dt)) {
                    continue;
                }
                for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ++ci) {
                    const size_t n = counts[ci], esz = gpu_dtype_size((gpu_dtype_t) dt);
                    /* small fold space (many pieces) only where it stays quick */
                    const size_t want = n > 1000 ? tmps[1] : tmps[(ci + (size_t) op) % 2];
                    const size_t tb = want < esz ? esz : want;
                    const uint64_t seed = ((uint64_t) op * 64 + (uint64_t) dt) * 16 + ci;
                    gpu_inter_group_t g;
                    if (quick && ci == 4 && dt != GPU_DT_F32) {
                        continue;
                    }
                    char *buf = malloc(n * esz), *ref = malloc(n * esz);
                    group_init(&g, net, ranks, tmp, tb);
                    g.algo = (gpu_inter_algo_t) a;
                    g.tag = next_tag();
                    fill(buf, n, (gpu_dtype_t) dt, (gpu_op_t) op, rank, seed);
                    reference(ref, n, (gpu_dtype_t) dt, (gpu_op_t) op, seed);
                    gpu_status_t st = gpu_inter_allreduce(&g, buf, n, (gpu_op_t) op, (gpu_dtype_t) dt);
                    CHECK(GPU_OK == st && same(buf, ref, n, (gpu_dtype_t) dt),
                          "allreduce %s %s %s count %zu fold space %zu: status %d", aname[a],
                          gpu_op_name((gpu_op_t) op), gpu_dtype_name((gpu_dtype_t) dt), n, tb, (int) st);
                    free(buf);
                    free(ref);
                }
            }
        }
    }
    free(tmp);
}

static void test_reduce_scatter_allgather(gpu_net_t *net, int *ranks)
{
    const size_t total = 10007;
    size_t off[64], cnt[64], boff[64], blen[64], o = 0;
    int *buf = malloc(total * sizeof(int)), *ref = malloc(total * sizeof(int));
    char tmp[256];
    gpu_inter_group_t g;

    /* uneven segments, member 1 empty when there are more than 2 */
    for (int i = 0; i < size; ++i) {
        cnt[i] = (1 == i && size > 2) ? 0 : (i == size - 1 ? total - o : total / (size_t) (size + 1));
        off[i] = o;
        o += cnt[i];
    }
    group_init(&g, net, ranks, tmp, sizeof(tmp));
    g.tag = next_tag();
    fill(buf, total, GPU_DT_I32, GPU_OP_SUM, rank, 77);
    reference(ref, total, GPU_DT_I32, GPU_OP_SUM, 77);
    gpu_status_t st = gpu_inter_reduce_scatter(&g, buf, off, cnt, GPU_OP_SUM, GPU_DT_I32);
    CHECK(GPU_OK == st && 0 == memcmp(buf + off[rank], ref + off[rank], cnt[rank] * sizeof(int)),
          "reduce_scatter uneven segments: member %d segment of %zu", rank, cnt[rank]);

    /* allgatherv of the reduced segments: everybody ends with the whole */
    for (int i = 0; i < size; ++i) {
        boff[i] = off[i] * sizeof(int);
        blen[i] = cnt[i] * sizeof(int);
    }
    for (size_t i = 0; i < total; ++i) {
        if (i < off[rank] || i >= off[rank] + cnt[rank]) {
            buf[i] = (int) 0xdeadbeef;   /* poison what must arrive */
        }
    }
    g.tag = next_tag();
    st = gpu_inter_allgatherv(&g, buf, boff, blen);
    CHECK(GPU_OK == st && 0 == memcmp(buf, ref, total * sizeof(int)), "allgatherv uneven blocks");
    free(buf);
    free(ref);
}

static void test_rooted(gpu_net_t *net, int *ranks)
{
    static const size_t counts[] = { 1, 999, 300000 };
    char *tmp = malloc(4096);
    for (int root = 0; root < size; ++root) {
        for (size_t ci = 0; ci < 3; ++ci) {
            const size_t n = counts[ci];
            double *buf = malloc(n * sizeof(double)), *ref = malloc(n * sizeof(double));
            gpu_inter_group_t g;
            group_init(&g, net, ranks, tmp, 4096);
            g.piece = 8192;   /* several pieces in flight down the tree */
            g.tag = next_tag();
            fill(ref, n, GPU_DT_F64, GPU_OP_SUM, root, 5 + ci);
            if (rank == root) {
                memcpy(buf, ref, n * sizeof(double));
            } else {
                memset(buf, 0xff, n * sizeof(double));
            }
            gpu_status_t st = gpu_inter_bcast(&g, buf, n * sizeof(double), root);
            CHECK(GPU_OK == st && 0 == memcmp(buf, ref, n * sizeof(double)),
                  "bcast root %d count %zu: status %d", root, n, (int) st);

            g.tag = next_tag();
            fill(buf, n, GPU_DT_F64, GPU_OP_MAX, rank, 9 + ci);
            reference(ref, n, GPU_DT_F64, GPU_OP_MAX, 9 + ci);
            st = gpu_inter_reduce(&g, buf, n, GPU_OP_MAX, GPU_DT_F64, root);
            CHECK(GPU_OK == st && (rank != root || 0 == memcmp(buf, ref, n * sizeof(double))),
                  "reduce max root %d count %zu: status %d", root, n, (int) st);
            free(buf);
            free(ref);
        }
    }
    free(tmp);
}

/* a receive nobody answers must end in a timeout that names the peer */
static void test_errors(gpu_net_t *net)
{
    /* a second communicator's endpoints on the same worker, with a short timeout */
    gpu_net_req_t r;
    char buf[64] = { 0 };
    if (size < 2) {
        return;
    }
    if (0 == rank) {
        gpu_status_t st = gpu_ucx_net_ops.irecv(net, 1, buf, sizeof(buf), 0xfff0, GPU_NET_MEM_HOST, &r);
        if (GPU_OK == st) {
            st = gpu_ucx_net_ops.waitall(net, &r, 1, "test receive nobody sends");
        }
        CHECK(GPU_ERR_TIMEOUT == st, "unanswered receive: status %d, expected timeout", (int) st);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* rank 1 sends 16 bytes where rank 0 expects 64 */
    if (0 == rank || 1 == rank) {
        gpu_status_t st = 0 == rank
            ? gpu_ucx_net_ops.irecv(net, 1, buf, sizeof(buf), 0xfff1, GPU_NET_MEM_HOST, &r)
            : gpu_ucx_net_ops.isend(net, 0, buf, 16, 0xfff1, GPU_NET_MEM_HOST, &r);
        if (GPU_OK == st) {
            st = gpu_ucx_net_ops.waitall(net, &r, 1, "test short message");
        }
        CHECK(1 == rank ? GPU_OK == st : GPU_ERR_NETWORK == st,
              "short message: status %d on rank %d", (int) st, rank);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int quick = 0, distinct = 0;
    gpu_ucx_params_t p = { .net_devices = NULL, .timeout_s = 60.0, .direct = -1, .comm_id = 7 };
    gpu_net_t *net = NULL;
    int ranks[64], ok;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; ++i) {
        quick |= 0 == strcmp(argv[i], "--quick");
        distinct |= 0 == strcmp(argv[i], "--distinct-hosts");
    }
    /* --distinct-hosts: endpoints as between hosts (peer failure detection on) */
    p.host_id = distinct ? (uint64_t) rank + 1 : 0;
    for (int i = 0; i < size && i < 64; ++i) {
        ranks[i] = i;
    }
    gpu_status_t st = gpu_ucx_create(&boot, NULL, rank, size, &p, &net);
    CHECK(GPU_OK == st, "UCX transport setup: %s", gpu_status_string(st));
    if (GPU_OK == st) {
        if (0 == rank) {
            printf("transport: %s, %d processes\n", gpu_ucx_describe(net), size);
        }
        test_allreduce(net, ranks, quick);
        test_reduce_scatter_allgather(net, ranks);
        test_rooted(net, ranks);
        gpu_net_t *impatient = NULL;
        p.timeout_s = 1.0;
        p.comm_id = 8;
        st = gpu_ucx_create(&boot, NULL, rank, size, &p, &impatient);
        CHECK(GPU_OK == st, "second transport on the same worker: %s", gpu_status_string(st));
        if (GPU_OK == st) {
            test_errors(impatient);
            gpu_ucx_destroy(impatient);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        gpu_ucx_destroy(net);
    }
    int counts[2] = { npass, nfail }, sums[2];
    MPI_Reduce(counts, sums, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    ok = 0 == nfail;
    if (0 == rank) {
        printf("%d passed, %d failed\n", sums[0], sums[1]);
        ok = 0 == sums[1];
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return ok ? 0 : 1;
}
