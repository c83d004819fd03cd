/*
 * The hierarchy's gatherv, scatterv (gather, scatter), allgatherv
 * (hier/gpu_hier_v.c), alltoallv (alltoall; hier/gpu_hier_a2a.c) and
 * reduce_scatter(v) with the allreduce under it (gpu_hier_colls.c), scan
 * and exscan (gpu_hier_scan.c; interleaved nodes decline them)
 * between real processes split into virtual nodes of
 * several ranks, on device buffers of the CUDA stand-ins (test/fake: the
 * CPU cannot touch them; every byte moves by the runtime's copies), the
 * network UCX as UCX_TLS says.
 *
 * The node steps run on an emulation of the node engine's exchange plans:
 * each pair of a plan moved by MPI point-to-point within the node, through
 * host copies; a REDUCE plan's sources folded in rank order by the host
 * functors.  What is tested is the hierarchy: the plans it
 * builds, the regions, the root's counts, the slices and their copies.
 *
 * Every call: counts that differ (zeros among them), displacements out of
 * rank order with gaps, every root, in place and not, from one byte to
 * regions of many slices that wrap the slot ring; outputs poisoned first,
 * then checked against a host reference, gaps and the bytes past the end
 * still poisoned.  Rank 0 prints the trace label of each collective
 * (gpu_hier_algo, as the component's trace carries it).
 * Usage: mpirun -np N test_hier_v NODES CHANNELS [SLOT_BYTES [interleaved]]
 * (interleaved: rank r on node r mod NODES; else rank order, as
 * coll_gpu_virtual_nodes splits).  Prints "N passed, N failed".
 */
#include "test/mpi/hier_emul.h"

/* block layout of one call: counts (some zero) and displacements in reverse
 * rank order with a gap before every block */
typedef struct {
    size_t len[64], displ[64], span;
} layout_t;

static void make_layout(layout_t *l, size_t unit, unsigned seed, int uniform)
{
    size_t at = 3;
    for (int r = size - 1; r >= 0; --r) {
        const size_t k = (size_t) r + seed;
        l->len[r] = uniform ? unit : k % 4 == 1 ? 0 : unit * (k % 3 + 1) + (size_t) r;
        l->displ[r] = at;
        at += l->len[r] + 5 + (size_t) r % 3;
    }
    l->span = at;
}

/* blocks as the reference says, every other byte of out (gaps, guard) poisoned */
static int check_blocks(const unsigned char *out, size_t span, const layout_t *l, unsigned seed)
{
    unsigned char *want = malloc(span + GUARD);
    int bad = 0;
    memset(want, POISON, span + GUARD);
    for (int r = 0; r < size; ++r) {
        for (size_t i = 0; i < l->len[r]; ++i) {
            want[l->displ[r] + i] = val(r, i, seed);
        }
    }
    for (size_t i = 0; i < span + GUARD; ++i) {
        bad += out[i] != want[i];
    }
    free(want);
    return bad;
}

static unsigned char *block_of(int r, size_t len, unsigned seed)
{
    unsigned char *b = malloc(len + 1);
    for (size_t i = 0; i < len; ++i) {
        b[i] = val(r, i, seed);
    }
    return b;
}

static void test_gatherv(gpu_hier_t *h, size_t unit, int root, int uniform, int in_place,
                         unsigned seed)
{
    layout_t l;
    make_layout(&l, unit, seed, uniform);
    const size_t mine = l.len[rank];
    unsigned char *b = block_of(rank, mine, seed);
    char *s = dbuf(mine), *out = dbuf(rank == root ? l.span : 0);
    unsigned char *got;
    gpu_status_t st;
    int bad = 0;

    dput(s, b, mine);
    if (rank == root && in_place) {
        dput(out + l.displ[rank], b, mine);   /* MPI_IN_PLACE: my block already there */
    }
    st = gpu_hier_gatherv(h, rank == root && in_place ? NULL : s, mine, out,
                          rank == root ? l.len : NULL, rank == root ? l.displ : NULL, root,
                          uniform);
    got = dget(out, rank == root ? l.span : 0);
    if (rank == root) {
        bad = check_blocks(got, l.span, &l, seed);
    }
    for (size_t i = 0; i < GUARD && rank != root; ++i) {
        bad += POISON != got[i];   /* a rank's output buffer is the root's only */
    }
    CHECK(GPU_OK == st && 0 == bad, "%s %zu-byte unit to %d%s: %s, %d bytes wrong (gaps and guard "
          "included)", uniform ? "gather" : "gatherv", unit, root, in_place ? " in place" : "",
          gpu_status_string(st), bad);
    free(got);
    free(b);
    cudaFree(s);
    cudaFree(out);
}

static void test_scatterv(gpu_hier_t *h, size_t unit, int root, int uniform, int in_place,
                          unsigned seed)
{
    layout_t l;
    make_layout(&l, unit, seed, uniform);
    const size_t mine = l.len[rank];
    char *s = dbuf(rank == root ? l.span : 0), *out = dbuf(mine);
    unsigned char *got, *src = NULL;
    gpu_status_t st;
    int bad = 0;

    if (rank == root) {
        src = malloc(l.span + GUARD);
        memset(src, POISON, l.span + GUARD);
        for (int r = 0; r < size; ++r) {
            for (size_t i = 0; i < l.len[r]; ++i) {
                src[l.displ[r] + i] = val(r, i, seed);
            }
        }
        dput(s, src, l.span);
    }
    st = gpu_hier_scatterv(h, s, rank == root ? l.len : NULL, rank == root ? l.displ : NULL,
                           rank == root && in_place ? NULL : out, mine, root, uniform);
    got = dget(out, mine);
    for (size_t i = 0; i < mine + GUARD; ++i) {
        const unsigned char want = i < mine && !(rank == root && in_place) ? val(rank, i, seed)
                                                                           : POISON;
        bad += got[i] != want;
    }
    if (rank == root) {
        /* the root's input is read only */
        unsigned char *again = dget(s, l.span);
        bad += 0 != memcmp(again, src, l.span + GUARD);
        free(again);
    }
    CHECK(GPU_OK == st && 0 == bad, "%s %zu-byte unit from %d%s: %s, %d bytes wrong",
          uniform ? "scatter" : "scatterv", unit, root, in_place ? " in place" : "",
          gpu_status_string(st), bad);
    free(got);
    free(src);
    cudaFree(s);
    cudaFree(out);
}

static void test_allgatherv(gpu_hier_t *h, size_t unit, int in_place, unsigned seed)
{
    layout_t l;
    make_layout(&l, unit, seed, 0);
    const size_t mine = l.len[rank];
    unsigned char *b = block_of(rank, mine, seed), *got;
    char *s = dbuf(mine), *out = dbuf(l.span);
    gpu_status_t st;
    int bad;

    dput(s, b, mine);
    if (in_place) {
        dput(out + l.displ[rank], b, mine);
    }
    st = gpu_hier_allgatherv(h, in_place ? NULL : s, out, l.len, l.displ);
    got = dget(out, l.span);
    bad = check_blocks(got, l.span, &l, seed);
    CHECK(GPU_OK == st && 0 == bad, "allgatherv %zu-byte unit%s: %s, %d bytes wrong (gaps and "
          "guard included)", unit, in_place ? " in place" : "", gpu_status_string(st), bad);
    free(got);
    free(b);
    cudaFree(s);
    cudaFree(out);
}

/* the block from src to dst: some empty unless uniform */
static size_t pair_len(int src, int dst, size_t unit, unsigned seed, int uniform)
{
    const size_t k = (size_t) src * 3 + (size_t) dst * 5 + seed;
    return uniform ? unit : k % 4 == 0 ? 0 : unit * ((size_t) (src + dst) % 3 + 1) + (size_t) src;
}

/* blocks of len[q] at displacements in reverse rank order with gaps; returns the span */
static size_t pair_layout(const size_t *len, size_t *displ)
{
    size_t at = 2;
    for (int q = size - 1; q >= 0; --q) {
        displ[q] = at;
        at += len[q] + 3 + (size_t) q % 2;
    }
    return at;
}

static void test_alltoallv(gpu_hier_t *h, size_t unit, int uniform, unsigned seed)
{
    size_t slen[64], sdispl[64], rlen[64], rdispl[64], sspan, rspan;
    unsigned char *src, *want, *got;
    char *s, *out;
    gpu_status_t st;
    int bad = 0;

    for (int q = 0; q < size; ++q) {
        slen[q] = pair_len(rank, q, unit, seed, uniform);
        rlen[q] = pair_len(q, rank, unit, seed, uniform);
    }
    sspan = pair_layout(slen, sdispl);
    rspan = pair_layout(rlen, rdispl);
    src = malloc(sspan);
    want = malloc(rspan + GUARD);
    memset(src, POISON, sspan);
    memset(want, POISON, rspan + GUARD);
    for (int q = 0; q < size; ++q) {
        for (size_t i = 0; i < slen[q]; ++i) {
            src[sdispl[q] + i] = val(rank * 64 + q, i, seed);
        }
        for (size_t i = 0; i < rlen[q]; ++i) {
            want[rdispl[q] + i] = val(q * 64 + rank, i, seed);
        }
    }
    s = dbuf(sspan);
    out = dbuf(rspan);
    dput(s, src, sspan);
    st = gpu_hier_alltoallv(h, s, slen, sdispl, out, rlen, rdispl);
    got = dget(out, rspan);
    for (size_t i = 0; i < rspan + GUARD; ++i) {
        bad += got[i] != want[i];
    }
    CHECK(GPU_OK == st && 0 == bad, "%s %zu-byte unit: %s, %d bytes wrong (gaps and guard "
          "included)", uniform ? "alltoall" : "alltoallv", unit, gpu_status_string(st), bad);
    free(got);
    free(want);
    free(src);
    cudaFree(s);
    cudaFree(out);
}

/* float element i of rank r's input: small integers, so sums are exact in any order */
static float fval(int r, size_t i, unsigned seed)
{
    return (float) ((int) ((i * 7 + (size_t) r * 13 + seed) % 17) - 8);
}

/* reduce_scatter(v) (counts differ, some zero) and, with every block, allreduce */
static void test_reduce_scatterv(gpu_hier_t *h, size_t unit, int in_place, unsigned seed)
{
    size_t counts[64] = { 0 }, total = 0, off = 0;
    for (int q = 0; q < size; ++q) {
        counts[q] = ((size_t) q + seed) % 3 == 2 ? 0 : unit + (size_t) q;
        off = q < rank ? off + counts[q] : off;
        total += counts[q];
    }
    const size_t mine = counts[rank];
    float *in = malloc(total * sizeof(float) + 4), *got;
    char *s = dbuf(total * sizeof(float)), *out = dbuf(total * sizeof(float));
    gpu_status_t st;
    int bad = 0;

    for (size_t i = 0; i < total; ++i) {
        in[i] = fval(rank, i, seed);
    }
    dput(in_place ? out : s, (unsigned char *) in, total * sizeof(float));
    st = gpu_hier_reduce_scatterv(h, in_place ? NULL : s, out, counts, GPU_OP_SUM, GPU_DT_F32);
    got = (float *) dget(out, total * sizeof(float));
    for (size_t i = 0; i < mine; ++i) {
        float ref = 0;
        for (int r = 0; r < size; ++r) {
            ref += fval(r, off + i, seed);
        }
        bad += got[i] != ref;
    }
    /* past my block: the input where in place, else poison */
    for (size_t i = mine * sizeof(float); i < total * sizeof(float) + GUARD; ++i) {
        const unsigned char want = in_place && i < total * sizeof(float)
                                       ? ((unsigned char *) in)[i] : POISON;
        bad += ((unsigned char *) got)[i] != want;
    }
    CHECK(GPU_OK == st && 0 == bad, "reduce_scatter %zu-float unit%s: %s, %d wrong",
          unit, in_place ? " in place" : "", gpu_status_string(st), bad);
    free(got);
    free(in);
    cudaFree(s);
    cudaFree(out);
    /* the allreduce of every block, as the hierarchy runs it on these nodes */
    in = malloc(total * sizeof(float) + 4);
    s = dbuf(total * sizeof(float));
    out = dbuf(total * sizeof(float));
    for (size_t i = 0; i < total; ++i) {
        in[i] = fval(rank, i, seed + 1);
    }
    dput(s, (unsigned char *) in, total * sizeof(float));
    st = gpu_hier_allreduce(h, s, out, total, GPU_OP_SUM, GPU_DT_F32);
    got = (float *) dget(out, total * sizeof(float));
    bad = 0;
    for (size_t i = 0; i < total; ++i) {
        float ref = 0;
        for (int r = 0; r < size; ++r) {
            ref += fval(r, i, seed + 1);
        }
        bad += got[i] != ref;
    }
    for (size_t i = total * sizeof(float); i < total * sizeof(float) + GUARD; ++i) {
        bad += POISON != ((unsigned char *) got)[i];
    }
    CHECK(GPU_OK == st && 0 == bad, "allreduce %zu floats: %s, %d wrong", total,
          gpu_status_string(st), bad);
    free(got);
    free(in);
    cudaFree(s);
    cudaFree(out);
}

/* scan and exscan (in place and not); interleaved nodes: declined, every rank alike */
static void test_scan(gpu_hier_t *h, size_t n, int exclusive, int in_place, int interleaved,
                      unsigned seed)
{
    float *in = malloc(n * sizeof(float) + 4), *got;
    char *s = dbuf(n * sizeof(float)), *out = dbuf(n * sizeof(float));
    gpu_status_t st;
    int bad = 0;

    for (size_t i = 0; i < n; ++i) {
        in[i] = fval(rank, i, seed);
    }
    dput(in_place ? out : s, (unsigned char *) in, n * sizeof(float));
    st = gpu_hier_scan(h, in_place ? NULL : s, out, n, GPU_OP_SUM, GPU_DT_F32, exclusive);
    got = (float *) dget(out, n * sizeof(float));
    if (interleaved) {
        CHECK(GPU_ERR_UNSUPPORTED == st, "%s, nodes interleaved: declined (%s)",
              exclusive ? "exscan" : "scan", gpu_status_string(st));
    } else {
        for (size_t i = 0; i < n; ++i) {
            float ref = 0;
            for (int r = 0; r < rank + !exclusive; ++r) {
                ref += fval(r, i, seed);
            }
            if (exclusive && 0 == rank) {
                /* undefined at rank 0: left as it was */
                uint32_t w, want = 0x5a5a5a5a;
                memcpy(&w, &got[i], 4);
                if (in_place) {
                    memcpy(&want, &in[i], 4);
                }
                bad += w != want;
            } else {
                bad += got[i] != ref;
            }
        }
        for (size_t i = n * sizeof(float); i < n * sizeof(float) + GUARD; ++i) {
            bad += POISON != ((unsigned char *) got)[i];
        }
        CHECK(GPU_OK == st && 0 == bad, "%s %zu floats%s: %s, %d wrong",
              exclusive ? "exscan" : "scan", n, in_place ? " in place" : "",
              gpu_status_string(st), bad);
    }
    free(got);
    free(in);
    cudaFree(s);
    cudaFree(out);
}

/* the trace label of each collective, as the component's trace carries it */
static void labels(gpu_hier_t *h)
{
    static const gpu_hier_coll_t colls[] = { GPU_HIER_GATHER, GPU_HIER_GATHERV, GPU_HIER_SCATTER,
                                             GPU_HIER_SCATTERV, GPU_HIER_ALLGATHERV,
                                             GPU_HIER_ALLTOALL, GPU_HIER_ALLTOALLV,
                                             GPU_HIER_REDUCE_SCATTER, GPU_HIER_SCAN,
                                             GPU_HIER_EXSCAN };
    for (unsigned i = 0; i < sizeof(colls) / sizeof(colls[0]); ++i) {
        const char *label = gpu_hier_algo(h, colls[i], 1000, 1);
        const char *want = colls[i] >= GPU_HIER_REDUCE_SCATTER ? "hier "
                           : colls[i] >= GPU_HIER_ALLTOALL ? "hier pairs: " : "hier leaders: ";
        CHECK(0 == strncmp(label, want, strlen(want)), "%s: a hierarchical label (%s)",
              gpu_hier_coll_name(colls[i]), label);
        if (0 == rank) {
            printf("label %s: %s\n", gpu_hier_coll_name(colls[i]), label);
        }
    }
}

int main(int argc, char **argv)
{
    const int nnodes = argc > 1 ? atoi(argv[1]) : 2;
    const int nchan = argc > 2 ? atoi(argv[2]) : 2;
    const size_t slot = argc > 3 ? strtoul(argv[3], NULL, 0) : 65536;
    const int interleaved = argc > 4 && 0 == strcmp(argv[4], "interleaved");
    /* one byte, small, one slice, several that wrap the ring of 4 slots */
    static const size_t units[] = { 1, 100, 5000, 70000 };
    gpu_net_t *nets[GPU_UCX_MAX_CHANNELS] = { 0 };
    gpu_hier_t *h;
    int *node_of;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 64 || nnodes < 2 || nnodes > size) {
        if (0 == rank) {
            printf("usage: 2 <= NODES <= np <= 64\n");
        }
        MPI_Finalize();
        return 1;
    }
    h = emul_hier_create(nnodes, nchan, slot, interleaved, nets, &node_of);
    if (NULL != h) {
        if (0 == rank) {
            printf("test_hier_v np=%d, %s nodes: %s\n", size,
                   interleaved ? "interleaved" : "rank-order", gpu_hier_describe(h));
        }
        labels(h);
        for (unsigned k = 0; k < sizeof(units) / sizeof(units[0]); ++k) {
            const size_t u = units[k];
            for (int root = 0; root < size; ++root) {
                test_gatherv(h, u, root, 0, 0, k + (unsigned) root);
                test_scatterv(h, u, root, 0, 0, k + (unsigned) root + 3);
            }
            test_gatherv(h, u, (int) k % size, 1, 0, k + 5);
            test_gatherv(h, u, size - 1, 1, 1, k + 6);
            test_gatherv(h, u, (int) (k + 1) % size, 0, 1, k + 7);
            test_scatterv(h, u, (int) k % size, 1, 0, k + 8);
            test_scatterv(h, u, size - 1, 1, 1, k + 9);
            test_scatterv(h, u, (int) (k + 1) % size, 0, 1, k + 10);
            test_allgatherv(h, u, 0, k + 11);
            test_allgatherv(h, u, 1, k + 12);
            test_alltoallv(h, u, 0, k + 13);
            test_alltoallv(h, u, 1, k + 14);
            test_reduce_scatterv(h, u, 0, k + 15);
            test_reduce_scatterv(h, u, 1, k + 16);
            for (int x = 0; x < 2; ++x) {
                test_scan(h, u, x, 0, interleaved, k + 17);
                test_scan(h, u, x, 1, interleaved, k + 18);
            }
        }
    }
    return emul_finish(h, nets, nchan, node_of);
}
