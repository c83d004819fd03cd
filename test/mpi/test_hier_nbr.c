/*
 * The hierarchy's barrier, in-place alltoallv (alltoallw's pairs once its
 * types are bytes: coll_gpu_hier_v.c) and the neighbourhood collectives'
 * rounds (coll_gpu_nbr.c) between real processes split into virtual nodes
 * of several ranks, on device buffers of the CUDA stand-ins, the network
 * UCX as UCX_TLS says, the node steps emulated over MPI (hier_emul.h).
 *
 *   barrier       rank k of round k arrives late; every rank, once out of
 *                 the barrier, must see every rank's arrival flag of that
 *                 round in a shared-memory window (a barrier that let a
 *                 rank through early fails it)
 *   in place      every pair's block out of the receive buffer, counts
 *                 that differ (zeros among them), gaps left as they were
 *   neighbours    cartesian (periodic and not, extents 1, 2 and more) and
 *                 distributed-graph topologies with self loops: the rounds
 *                 as the component cuts them, each a gpu_hier_alltoallv of
 *                 the round's neighbours, checked against Open MPI's own
 *                 MPI_Neighbor_alltoallv / MPI_Neighbor_allgatherv on host
 *                 copies, outputs poisoned first, gaps and guard checked
 *
 * Rank 0 prints the labels the component's traces carry for these calls.
 * Usage: mpirun -np N test_hier_nbr NODES CHANNELS [SLOT_BYTES]
 * Prints "N passed, N failed".
 */
#include <unistd.h>

#include "test/mpi/hier_emul.h"

#define MAXN 64
#define MAXB (2 * MAXN)   /* blocks of a neighbourhood list */

/* ---- barrier -------------------------------------------------------------- */

static void test_barrier(gpu_hier_t *h, MPI_Comm shm, volatile int *flags, int rounds)
{
    for (int k = 1; k <= rounds; ++k) {
        int missing = 0;
        gpu_status_t st;
        if (rank == k % size) {
            usleep(150000);   /* late: the others must wait for it */
        }
        flags[rank] = k;
        __sync_synchronize();
        st = gpu_hier_barrier(h);
        __sync_synchronize();
        for (int q = 0; q < size; ++q) {
            missing += flags[q] < k;
        }
        CHECK(GPU_OK == st && 0 == missing, "barrier %d (rank %d late): %s, %d ranks not yet "
              "arrived when rank %d left", k, k % size, gpu_status_string(st), missing, rank);
    }
    MPI_Barrier(shm);
}

/* ---- in place ------------------------------------------------------------- */

static size_t pair_len(int src, int dst, size_t unit, unsigned seed)
{
    const size_t k = (size_t) src * 3 + (size_t) dst * 5 + seed;
    return k % 4 == 0 ? 0 : unit * ((size_t) (src + dst) % 3 + 1) + (size_t) src;
}

static void test_in_place(gpu_hier_t *h, size_t unit, unsigned seed)
{
    size_t len[MAXN], displ[MAXN], span = 2;
    unsigned char *init, *want, *got;
    char *out;
    gpu_status_t st;
    int bad = 0;

    /* in place, a pair's blocks both ways have the receive side's length */
    for (int q = size - 1; q >= 0; --q) {
        len[q] = pair_len(q < rank ? q : rank, q < rank ? rank : q, unit, seed);
        displ[q] = span;
        span += len[q] + 1 + (size_t) q % 3;
    }
    init = malloc(span + GUARD);
    want = malloc(span + GUARD);
    memset(init, POISON, span + GUARD);
    memset(want, POISON, span + GUARD);
    for (int q = 0; q < size; ++q) {
        for (size_t i = 0; i < len[q]; ++i) {
            init[displ[q] + i] = val(rank * MAXN + q, i, seed);
            want[displ[q] + i] = val(q * MAXN + rank, i, seed);
        }
    }
    out = dbuf(span);
    dput(out, init, span);
    st = gpu_hier_alltoallv(h, NULL, NULL, NULL, out, len, displ);
    got = dget(out, span);
    for (size_t i = 0; i < span + GUARD; ++i) {
        bad += got[i] != want[i];
    }
    CHECK(GPU_OK == st && 0 == bad, "alltoallv in place, %zu-byte unit: %s, %d bytes wrong "
          "(gaps and guard included)", unit, gpu_status_string(st), bad);
    free(got);
    free(want);
    free(init);
    cudaFree(out);
}

/* ---- neighbourhoods ------------------------------------------------------- */

/* a list block: its peer, the pair's bytes, the round it goes in */
typedef struct {
    int peer, round;
    size_t len, displ;
} blk_t;

typedef struct {
    MPI_Comm comm;
    const char *name;
    int rounds;
    int nout, nin;
    blk_t out[MAXB], in[MAXB];
} nbr_t;

/* a block's bytes: by its sender and the receiver's list position's meaning
 * (cartesian: dimension and direction; graph: the edge) */
static size_t nbr_len(int sender, int key, size_t unit, unsigned seed)
{
    const size_t k = (size_t) sender * 7 + (size_t) key * 3 + seed;
    return k % 5 == 0 ? 0 : unit * (k % 3 + 1) + (size_t) key;
}

/* MPI's cartesian pairing: the block sent in the positive direction of d
 * (out index 2d+1) is the one its receiver takes from its negative side
 * (in index 2d), and back.  Two rounds where a periodic dimension has
 * extent 1 or 2, positive directions first (the component's cut). */
static void nbr_cart(nbr_t *t, int ndims, const int *dims, const int *periods, size_t unit,
                     unsigned seed)
{
    MPI_Cart_create(MPI_COMM_WORLD, ndims, (int *) dims, (int *) periods, 0, &t->comm);
    t->rounds = 1;
    for (int d = 0; d < ndims; ++d) {
        t->rounds = periods[d] && dims[d] <= 2 ? 2 : t->rounds;
    }
    t->nout = t->nin = 2 * ndims;
    for (int d = 0; d < ndims; ++d) {
        int src, dst;
        MPI_Cart_shift(t->comm, d, 1, &src, &dst);
        const int pos = 0, neg = 2 > t->rounds ? 0 : 1;
        t->out[2 * d + 1] = (blk_t) { dst, pos, nbr_len(rank, 2 * d + 1, unit, seed), 0 };
        t->out[2 * d] = (blk_t) { src, neg, nbr_len(rank, 2 * d, unit, seed), 0 };
        t->in[2 * d] = (blk_t) { src, pos, nbr_len(src, 2 * d + 1, unit, seed), 0 };
        t->in[2 * d + 1] = (blk_t) { dst, neg, nbr_len(dst, 2 * d, unit, seed), 0 };
    }
    for (int i = 0; i < t->nout; ++i) {
        if (MPI_PROC_NULL == t->out[i].peer) {
            t->out[i].len = 0;
        }
        if (MPI_PROC_NULL == t->in[i].peer) {
            t->in[i].len = 0;
        }
    }
}

/* rank r sends to r+1 and r+3 (mod n), and to itself where r is even; no
 * peer twice in a list, so one round */
static int graph_edge(int r, int j)
{
    return 0 == j ? (r + 1) % size : 1 == j ? (r + 3) % size : 0 == r % 2 ? r : -1;
}

static void nbr_graph(nbr_t *t, size_t unit, unsigned seed)
{
    int out[3], in[3 * MAXN];
    t->nout = t->nin = 0;
    t->rounds = 1;
    for (int j = 0; j < 3; ++j) {
        const int q = graph_edge(rank, j);
        int dup = q < 0;
        for (int i = 0; i < t->nout; ++i) {
            dup |= out[i] == q;
        }
        if (!dup) {
            out[t->nout] = q;
            t->out[t->nout++] = (blk_t) { q, 0, nbr_len(rank, q, unit, seed), 0 };
        }
    }
    for (int r = 0; r < size; ++r) {
        int seen[3], ns = 0;
        for (int j = 0; j < 3; ++j) {
            const int q = graph_edge(r, j);
            int dup = q < 0;
            for (int i = 0; i < ns; ++i) {
                dup |= seen[i] == q;
            }
            if (!dup) {
                seen[ns++] = q;
                if (q == rank) {
                    in[t->nin] = r;
                    t->in[t->nin++] = (blk_t) { r, 0, nbr_len(r, rank, unit, seed), 0 };
                }
            }
        }
    }
    /* MPI_UNWEIGHTED is a pointer gcc takes for an empty array */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, t->nin, in, MPI_UNWEIGHTED, t->nout, out,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &t->comm);
#pragma GCC diagnostic pop
}

/* list blocks in reverse order with a gap before each; returns the span */
static size_t nbr_layout(blk_t *b, int n, int same)
{
    size_t at = 3;
    for (int i = n - 1; i >= 0; --i) {
        b[i].displ = same ? 3 : at;
        at += b[i].len + 2 + (size_t) i % 3;
    }
    return at;
}

/* gather: neighbor_allgather(v), every out block the same bytes at one place */
static void test_nbr(gpu_hier_t *h, nbr_t *t, size_t unit, int gather, unsigned seed)
{
    size_t sspan, rspan, sl[MAXN], sd[MAXN], rl[MAXN], rd[MAXN];
    int sc[MAXB], sdi[MAXB], rc[MAXB], rdi[MAXB];
    unsigned char *src, *want, *got;
    char *s, *out;
    gpu_status_t st = GPU_OK;
    int bad = 0, ok = 1;

    if (gather) {
        for (int i = 0; i < t->nout; ++i) {
            t->out[i].len = MPI_PROC_NULL == t->out[i].peer ? 0 : nbr_len(rank, 0, unit, seed);
        }
        for (int i = 0; i < t->nin; ++i) {
            t->in[i].len = MPI_PROC_NULL == t->in[i].peer ? 0
                                                          : nbr_len(t->in[i].peer, 0, unit, seed);
        }
    }
    sspan = gather ? nbr_len(rank, 0, unit, seed) + 3 : nbr_layout(t->out, t->nout, 0);
    if (gather) {
        nbr_layout(t->out, t->nout, 1);
    }
    rspan = nbr_layout(t->in, t->nin, 0);
    src = malloc(sspan + 1);
    want = malloc(rspan + GUARD);
    memset(src, POISON, sspan + 1);
    memset(want, POISON, rspan + GUARD);
    for (int i = 0; i < t->nout; ++i) {
        for (size_t j = 0; j < t->out[i].len; ++j) {
            src[t->out[i].displ + j] = val(rank * MAXB + (gather ? 0 : i), j, seed);
        }
        sc[i] = (int) t->out[i].len;
        sdi[i] = (int) t->out[i].displ;
    }
    for (int i = 0; i < t->nin; ++i) {
        rc[i] = (int) t->in[i].len;
        rdi[i] = (int) t->in[i].displ;
    }
    /* the reference: Open MPI's own neighbourhood collective on host copies */
    if (gather) {
        MPI_Neighbor_allgatherv(src + 3, (int) (sspan - 3), MPI_BYTE, want, rc, rdi, MPI_BYTE,
                                t->comm);
    } else {
        MPI_Neighbor_alltoallv(src, sc, sdi, MPI_BYTE, want, rc, rdi, MPI_BYTE, t->comm);
    }
    s = dbuf(sspan);
    out = dbuf(rspan);
    dput(s, src, sspan);
    for (int r = 0; r < t->rounds && GPU_OK == st; ++r) {
        memset(sl, 0, sizeof(sl));
        memset(rl, 0, sizeof(rl));
        memset(sd, 0, sizeof(sd));
        memset(rd, 0, sizeof(rd));
        for (int i = 0; i < t->nout; ++i) {
            const blk_t *b = &t->out[i];
            if (MPI_PROC_NULL != b->peer && b->round == r) {
                ok &= 0 == sl[b->peer];   /* a peer once per round, or zero bytes */
                sl[b->peer] = b->len;
                sd[b->peer] = b->displ;
            }
        }
        for (int i = 0; i < t->nin; ++i) {
            const blk_t *b = &t->in[i];
            if (MPI_PROC_NULL != b->peer && b->round == r) {
                ok &= 0 == rl[b->peer];
                rl[b->peer] = b->len;
                rd[b->peer] = b->displ;
            }
        }
        st = gpu_hier_alltoallv(h, s, sl, sd, out, rl, rd);
    }
    got = dget(out, rspan);
    for (size_t i = 0; i < rspan + GUARD; ++i) {
        bad += got[i] != want[i];
    }
    CHECK(ok && GPU_OK == st && 0 == bad, "neighbor_%s on %s, %d round(s), %zu-byte unit: %s, "
          "%d bytes wrong against Open MPI's (gaps and guard included)",
          gather ? "allgatherv" : "alltoallv", t->name, t->rounds, unit, gpu_status_string(st),
          bad);
    free(got);
    free(want);
    free(src);
    cudaFree(s);
    cudaFree(out);
}

/* every topology at this unit: cartesian ones whose dims multiply to np */
static void test_topologies(gpu_hier_t *h, size_t unit, unsigned seed)
{
    const int even = 0 == size % 2;
    const struct {
        const char *name;
        int ndims, dims[2], periods[2];
    } carts[] = {
        { "a periodic ring", 1, { size, 0 }, { 1, 0 } },
        { "an open line", 1, { size, 0 }, { 0, 0 } },
        { even ? "a 2 x np/2 grid, periodic extent 2" : "a 1 x np grid, periodic extent 1", 2,
          { even ? 2 : 1, even ? size / 2 : size }, { 1, 0 } },
        { even ? "an np/2 x 2 torus" : "an np x 1 torus", 2,
          { even ? size / 2 : size, even ? 2 : 1 }, { 1, 1 } },
    };
    for (unsigned c = 0; c < sizeof(carts) / sizeof(carts[0]); ++c) {
        for (int gather = 0; gather < 2; ++gather) {
            nbr_t t;
            nbr_cart(&t, carts[c].ndims, carts[c].dims, carts[c].periods, unit, seed + c);
            t.name = carts[c].name;
            test_nbr(h, &t, unit, gather, seed + c);
            MPI_Comm_free(&t.comm);
        }
    }
    for (int gather = 0; gather < 2; ++gather) {
        nbr_t t;
        nbr_graph(&t, unit, seed + 7);
        t.name = "a distributed graph with self loops";
        test_nbr(h, &t, unit, gather, seed + 7);
        MPI_Comm_free(&t.comm);
    }
}

/* the labels of these calls' traces (the component's: barrier the
 * allreduce's, alltoallw and the neighbourhoods alltoallv's pairs) */
static void labels(gpu_hier_t *h)
{
    static const char *const names[] = { "barrier", "alltoallw", "neighbor" };
    for (int i = 0; i < 3; ++i) {
        const char *label = gpu_hier_algo(h, 0 == i ? GPU_HIER_ALLREDUCE : GPU_HIER_ALLTOALLV,
                                          1, 1);
        const char *want = 0 == i ? "hier " : "hier pairs: ";
        CHECK(0 == strncmp(label, want, strlen(want)), "%s: a hierarchical label (%s)", names[i],
              label);
        if (0 == rank) {
            printf("label %s: %s\n", names[i], label);
        }
    }
}

int main(int argc, char **argv)
{
    const int nnodes = argc > 1 ? atoi(argv[1]) : 2;
    const int nchan = argc > 2 ? atoi(argv[2]) : 2;
    const size_t slot = argc > 3 ? strtoul(argv[3], NULL, 0) : 65536;
    /* one byte, small, several slices that wrap the ring of 4 slots */
    static const size_t units[] = { 1, 100, 70000 };
    gpu_net_t *nets[GPU_UCX_MAX_CHANNELS] = { 0 };
    volatile int *flags = NULL;
    MPI_Comm shm;
    MPI_Win win;
    gpu_hier_t *h;
    int *node_of, shm_size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > MAXN || nnodes < 2 || nnodes > size) {
        if (0 == rank) {
            printf("usage: 2 <= NODES <= np <= %d\n", MAXN);
        }
        MPI_Finalize();
        return 1;
    }
    /* the barrier's arrival flags: one host's shared memory */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
    MPI_Comm_size(shm, &shm_size);
    {
        MPI_Aint bytes;
        int disp;
        void *base;
        MPI_Win_allocate_shared(0 == rank ? (MPI_Aint) (sizeof(int) * (size_t) size) : 0,
                                sizeof(int), MPI_INFO_NULL, shm, &base, &win);
        MPI_Win_shared_query(win, 0, &bytes, &disp, &base);
        flags = base;
    }
    if (0 == rank) {
        for (int q = 0; q < size; ++q) {
            flags[q] = 0;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    h = emul_hier_create(nnodes, nchan, slot, 0, nets, &node_of);
    if (NULL != h) {
        if (0 == rank) {
            printf("test_hier_nbr np=%d: %s\n", size, gpu_hier_describe(h));
        }
        labels(h);
        if (shm_size == size) {
            test_barrier(h, shm, flags, size + 1);
        }
        for (unsigned k = 0; k < sizeof(units) / sizeof(units[0]); ++k) {
            test_in_place(h, units[k], k + 1);
            test_topologies(h, units[k], 10 * k + 2);
        }
    }
    MPI_Win_free(&win);
    MPI_Comm_free(&shm);
    return emul_finish(h, nets, nchan, node_of);
}
