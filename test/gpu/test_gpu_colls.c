/*
 * GPU correctness of every collective except allreduce (test_gpu_allreduce
 * covers it) on device buffers, blocking and nonblocking.  Each case runs
 * twice with the same inputs: on device buffers (our component) and on
 * host buffers (the previous module, Open MPI's own code), with outputs
 * poisoned identically, and the whole receive buffers are compared byte
 * for byte (gaps between v-displacements must keep their poison).  Inputs
 * are random and non-zero; floating inputs are small integers so every
 * summation order gives the same bits.
 *
 * The extra outputs of nonblocking cases are filled by device-to-device
 * cudaMemcpy on the legacy stream without synchronizing, as OSU-style
 * code does: coll_gpu_stream_order must order the collective after it.
 *
 * Reduce from 1 to 72 MiB (the two-shot kernel to the root from 3 ranks, the chain from 64 MiB)
 * also runs on its own: reduce_ts_cases.
 *
 * Nonblocking cases start the collective, run a memset on another stream
 * and a ring of MPI_Sendrecv messages while it is outstanding, keep three
 * collectives in flight on one communicator, then MPI_Waitall.
 *
 *   test_gpu_colls [--quick]      prints "N passed, N failed" on rank 0
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "gpu_test_common.h"

static int wrank, npass, nfail, quick;

#define CK(call) do { cudaError_t e_ = (call); if (cudaSuccess != e_) { \
    fprintf(stderr, "rank %d: %s:%d %s: %s\n", wrank, __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
    MPI_Abort(MPI_COMM_WORLD, 2); } } while (0)

enum { C_BCAST, C_REDUCE, C_ALLGATHER, C_ALLGATHERV, C_ALLTOALL, C_ALLTOALLV, C_GATHER,
       C_GATHERV, C_SCATTER, C_SCATTERV, C_RSB, C_RS, C_SCAN, C_EXSCAN, C_ALLREDUCE, C_N };
static const char *cname[] = { "bcast", "reduce", "allgather", "allgatherv", "alltoall",
                               "alltoallv", "gather", "gatherv", "scatter", "scatterv",
                               "reduce_scatter_block", "reduce_scatter", "scan", "exscan",
                               "allreduce" };
static int rooted(int c) { return c == C_BCAST || c == C_REDUCE || (c >= C_GATHER && c <= C_SCATTERV); }
static int reducing(int c) { return c == C_REDUCE || c == C_RSB || c == C_RS || c == C_SCAN || c == C_EXSCAN || c == C_ALLREDUCE; }

static const type_t types[] = {
    { MPI_INT8_T, "int8", 0 }, { MPI_UINT8_T, "uint8", 0 }, { MPI_INT16_T, "int16", 0 },
    { MPI_UINT16_T, "uint16", 0 }, { MPI_INT, "int", 0 }, { MPI_UNSIGNED, "unsigned", 0 },
    { MPI_LONG, "long", 0 }, { MPI_UINT64_T, "uint64", 0 }, { MPI_CHAR, "char", 0 },
    { MPI_FLOAT, "float", 1 }, { MPI_DOUBLE, "double", 1 },
    { MPI_C_FLOAT_COMPLEX, "cfloat", 2 }, { MPI_C_DOUBLE_COMPLEX, "cdouble", 2 },
    { MPI_C_BOOL, "bool", 3 }, { MPI_BYTE, "byte", 5 },
    { MPI_FLOAT_INT, "float_int", 4 }, { MPI_DOUBLE_INT, "double_int", 4 },
    { MPI_2INT, "2int", 4 }, { MPI_SHORT_INT, "short_int", 4 },
};
#define NTYPES ((int) (sizeof(types) / sizeof(types[0])))

typedef struct {
    int coll, root, in_place, nb;
    size_t count;                /* elements per rank (per block for the all-to-all family) */
    const type_t *ty;
    const op_t *op;
    MPI_Comm comm;
    const char *comm_name;
} case_t;

typedef struct {                 /* sizes and v-layouts of one case on this rank */
    int n, me;
    size_t ext, sbytes, rbytes, cmpbytes;   /* cmpbytes: defined prefix of the output */
    int cnt[64], dsp[64], scnt[64], sdsp[64];   /* v-collectives, in elements */
} geom_t;

static void gen(char *buf, size_t nelem, const type_t *ty, size_t ext, uint64_t seed)
{
    uint64_t s = seed;
    memset(buf, 0, nelem * ext);
    for (size_t i = 0; i < nelem; ++i) {
        char *e = buf + i * ext;
        uint64_t x = rng_next(&s);
        double v = (double) (1 + x % 7), v2 = (double) (1 + (x >> 17) % 7);
        switch (ty->cls) {
        case 0: case 5: memcpy(e, &x, ext); break;
        case 3: *e = (char) (x & 1); break;
        case 1: if (ty->t == MPI_FLOAT) *(float *) e = (float) v; else *(double *) e = v; break;
        case 2:
            if (ty->t == MPI_C_FLOAT_COMPLEX) { ((float *) e)[0] = (float) v; ((float *) e)[1] = (float) v2; }
            else { ((double *) e)[0] = v; ((double *) e)[1] = v2; }
            break;
        default:   /* pairs: value then int index; few distinct values make ties */
            if (ty->t == MPI_FLOAT_INT) { *(float *) e = (float) (x % 5); *(int *) (e + 4) = (int) (x >> 40) % 97; }
            else if (ty->t == MPI_DOUBLE_INT) { *(double *) e = (double) (x % 5); *(int *) (e + 8) = (int) (x >> 40) % 97; }
            else if (ty->t == MPI_2INT) { ((int *) e)[0] = (int) (x % 5); ((int *) e)[1] = (int) (x >> 40) % 97; }
            else { *(short *) e = (short) (x % 5); *(int *) (e + 4) = (int) (x >> 40) % 97; }
        }
    }
}

static void layout(const case_t *c, geom_t *g)
{
    MPI_Aint lb, ext;
    size_t tot = 0;
    MPI_Comm_size(c->comm, &g->n);
    MPI_Comm_rank(c->comm, &g->me);
    MPI_Type_get_extent(c->ty->t, &lb, &ext);
    g->ext = (size_t) ext;
    /* uneven v-counts (one rank contributes nothing when count > 2) with gaps */
    for (int q = 0; q < g->n; ++q) {
        g->cnt[q] = (c->count > 2 && q == 1) ? 0 : (int) (c->count + (size_t) (q * 3) % 5);
        g->dsp[q] = (int) tot + (q & 1);
        tot = (size_t) g->dsp[q] + (size_t) g->cnt[q];
    }
    const size_t n = (size_t) g->n, cnt = c->count, vtot = tot + 1;
    switch (c->coll) {
    case C_BCAST: case C_REDUCE: case C_SCAN: case C_EXSCAN: case C_ALLREDUCE:
        g->sbytes = g->rbytes = cnt * g->ext; break;
    case C_ALLGATHER: case C_GATHER: g->sbytes = cnt * g->ext; g->rbytes = n * cnt * g->ext; break;
    case C_SCATTER: g->sbytes = n * cnt * g->ext; g->rbytes = cnt * g->ext; break;
    case C_ALLTOALL: g->sbytes = g->rbytes = n * cnt * g->ext; break;
    case C_ALLGATHERV: case C_GATHERV: g->sbytes = (size_t) g->cnt[g->me] * g->ext; g->rbytes = vtot * g->ext; break;
    case C_SCATTERV: g->sbytes = vtot * g->ext; g->rbytes = (size_t) g->cnt[g->me] * g->ext; break;
    case C_RSB: g->sbytes = n * cnt * g->ext; g->rbytes = cnt * g->ext; break;
    case C_RS: {
        size_t s = 0;
        for (int q = 0; q < g->n; ++q) s += (size_t) g->cnt[q];
        g->sbytes = s * g->ext; g->rbytes = (size_t) g->cnt[g->me] * g->ext; break;
    }
    case C_ALLTOALLV: {   /* rank s sends cnt[(s + r) % n] to r: both sides agree */
        size_t so = 0, ro = 0;
        int base[64];
        memcpy(base, g->cnt, sizeof(base));
        for (int q = 0; q < g->n; ++q) {
            g->scnt[q] = base[(g->me + q) % g->n];
            g->sdsp[q] = (int) so;
            so += (size_t) g->scnt[q] + 2;
        }
        for (int q = 0; q < g->n; ++q) {
            g->cnt[q] = base[(q + g->me) % g->n];
            g->dsp[q] = (int) ro;
            ro += (size_t) g->cnt[q] + 1;
        }
        g->sbytes = so * g->ext; g->rbytes = ro * g->ext; break;
    }
    }
    g->cmpbytes = g->rbytes;
    if (c->in_place && (c->coll == C_RSB || c->coll == C_RS)) {   /* rbuf holds the input */
        g->rbytes = g->sbytes;
    }
    if (c->in_place && c->coll == C_ALLTOALLV) {   /* in place: send layout = receive layout */
        for (int q = 0; q < g->n; ++q) g->cnt[q] = g->scnt[q] = (int) cnt;
        for (int q = 0; q < g->n; ++q) g->dsp[q] = g->sdsp[q] = (int) ((size_t) q * (cnt + 1));
        g->rbytes = g->sbytes = g->cmpbytes = (size_t) g->n * (cnt + 1) * g->ext;
    }
}

/* The MPI call itself; MPI_IN_PLACE substitution follows the MPI rules. */
static int call(const case_t *c, const geom_t *g, void *s, void *r, MPI_Request *req)
{
    const int root_ip = c->in_place && g->me == c->root;
    const void *sb = c->in_place && (!rooted(c->coll) || root_ip) && c->coll != C_SCATTER && c->coll != C_SCATTERV ? MPI_IN_PLACE : s;
    void *rb = root_ip && (c->coll == C_SCATTER || c->coll == C_SCATTERV) ? MPI_IN_PLACE : r;
    const int cnt = (int) c->count;
    MPI_Datatype t = c->ty->t;
    MPI_Op op = c->op ? c->op->op : MPI_OP_NULL;
    MPI_Comm m = c->comm;
#define NB(B, I, ...) (req ? I(__VA_ARGS__, req) : B(__VA_ARGS__))
    switch (c->coll) {
    case C_BCAST: return NB(MPI_Bcast, MPI_Ibcast, r, cnt, t, c->root, m);
    case C_REDUCE: return NB(MPI_Reduce, MPI_Ireduce, sb, r, cnt, t, op, c->root, m);
    case C_ALLREDUCE: return NB(MPI_Allreduce, MPI_Iallreduce, sb, r, cnt, t, op, m);
    case C_ALLGATHER: return NB(MPI_Allgather, MPI_Iallgather, sb, cnt, t, r, cnt, t, m);
    case C_ALLGATHERV: return NB(MPI_Allgatherv, MPI_Iallgatherv, sb, g->cnt[g->me], t, r, g->cnt, g->dsp, t, m);
    case C_ALLTOALL: return NB(MPI_Alltoall, MPI_Ialltoall, sb, cnt, t, r, cnt, t, m);
    case C_ALLTOALLV: return NB(MPI_Alltoallv, MPI_Ialltoallv, sb, g->scnt, g->sdsp, t, r, g->cnt, g->dsp, t, m);
    case C_GATHER: return NB(MPI_Gather, MPI_Igather, sb, cnt, t, r, cnt, t, c->root, m);
    case C_GATHERV: return NB(MPI_Gatherv, MPI_Igatherv, sb, g->cnt[g->me], t, r, g->cnt, g->dsp, t, c->root, m);
    case C_SCATTER: return NB(MPI_Scatter, MPI_Iscatter, s, cnt, t, rb, cnt, t, c->root, m);
    case C_SCATTERV: return NB(MPI_Scatterv, MPI_Iscatterv, s, g->cnt, g->dsp, t, rb, g->cnt[g->me], t, c->root, m);
    case C_RSB: return NB(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, sb, r, cnt, t, op, m);
    case C_RS: return NB(MPI_Reduce_scatter, MPI_Ireduce_scatter, sb, r, g->cnt, t, op, m);
    case C_SCAN: return NB(MPI_Scan, MPI_Iscan, sb, r, cnt, t, op, m);
    case C_EXSCAN: return NB(MPI_Exscan, MPI_Iexscan, sb, r, cnt, t, op, m);
    }
#undef NB
    return MPI_ERR_OTHER;
}

/* What this rank's receive buffer must equal: undefined parts excluded. */
static int defined_output(const case_t *c, const geom_t *g)
{
    if ((c->coll == C_REDUCE || c->coll == C_GATHER || c->coll == C_GATHERV) && g->me != c->root) return 0;
    if (c->coll == C_EXSCAN && g->me == 0) return 0;
    if ((c->coll == C_SCATTER || c->coll == C_SCATTERV) && c->in_place && g->me == c->root) return 0;
    return 1;
}

/* MPI leaves the padding inside MPI_SHORT_INT and MPI_DOUBLE_INT undefined */
static void clear_padding(char *buf, size_t bytes, const type_t *ty, size_t ext)
{
    size_t lo = 0, hi = 0;
    if (ty->t == MPI_SHORT_INT) { lo = sizeof(short); hi = 4; }
    else if (ty->t == MPI_DOUBLE_INT) { lo = 12; hi = 16; }
    for (size_t e = 0; hi > lo && e + ext <= bytes; e += ext) memset(buf + e + lo, 0, hi - lo);
}

static char *dev_s, *dev_r, *host_s, *host_r, *ref_r, *out_r, *busy;
static cudaStream_t other;
static size_t cap;

static void run_case(const case_t *c, int id)
{
    geom_t g;
    MPI_Request rq[3];
    int ok = 1, all_ok, ret, nflight = c->nb ? 3 : 1;
    layout(c, &g);
    if (g.sbytes > cap || g.rbytes > cap) return;
    const uint64_t seed = ((uint64_t) id << 24) ^ (uint64_t) (g.me + 1) * 0x9e37;
    gen(host_s, g.sbytes / g.ext, c->ty, g.ext, seed);
    memset(ref_r, 0xA5, g.rbytes);
    if (c->in_place || c->coll == C_BCAST) gen(ref_r, g.rbytes / g.ext, c->ty, g.ext, seed ^ 0x55);
    if (c->coll == C_BCAST && g.me != c->root) memset(ref_r, 0xA5, g.rbytes);
    if (c->in_place && c->coll == C_GATHERV && g.me == c->root)   /* root's block in place */
        memcpy(ref_r + (size_t) g.dsp[g.me] * g.ext, host_s, (size_t) g.cnt[g.me] * g.ext);
    if (c->in_place && c->coll == C_ALLGATHERV)
        memcpy(ref_r + (size_t) g.dsp[g.me] * g.ext, host_s, (size_t) g.cnt[g.me] * g.ext);
    if (c->in_place && (c->coll == C_ALLGATHER || c->coll == C_GATHER))
        memcpy(ref_r + (size_t) g.me * c->count * g.ext, host_s, c->count * g.ext);
    memcpy(host_r, ref_r, g.rbytes);
    CK(cudaMemcpy(dev_s, host_s, g.sbytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dev_r, ref_r, g.rbytes, cudaMemcpyHostToDevice));
    /* reference on host buffers: the previous module */
    ret = call(c, &g, host_s, host_r, NULL);
    memcpy(ref_r, host_r, g.rbytes);
    clear_padding(ref_r, g.cmpbytes, c->ty, g.ext);
    if (getenv("TEST_TRACE"))
        fprintf(stderr, "rank %d: %s %s count %zu root %d%s%s\n", g.me, c->comm_name, cname[c->coll],
                c->count, c->root, c->in_place ? " in-place" : "", c->nb ? " nonblocking" : "");
    /* device: blocking, or three in flight with other traffic around them */
    if (!c->nb) {
        ret |= call(c, &g, dev_s, dev_r, NULL);
    } else {
        char *aux = dev_r + ((g.rbytes + 255) / 256) * 256;   /* two more private outputs */
        for (int k = 0; k < nflight; ++k) {
            char *rk = k ? aux + (size_t) (k - 1) * ((g.rbytes + 255) / 256) * 256 : dev_r;
            if (k) CK(cudaMemcpy(rk, dev_r, g.rbytes, cudaMemcpyDeviceToDevice));
        }
        for (int k = 0; k < nflight; ++k) {
            char *rk = k ? aux + (size_t) (k - 1) * ((g.rbytes + 255) / 256) * 256 : dev_r;
            ret |= call(c, &g, dev_s, rk, &rq[k]);
            CK(cudaMemsetAsync(busy, k + 1, 8 << 20, other));
            int right = (g.me + 1) % g.n, left = (g.me + g.n - 1) % g.n, x = g.me * 10 + k, y = -1;
            MPI_Sendrecv(&x, 1, MPI_INT, right, 77, &y, 1, MPI_INT, left, 77, c->comm, MPI_STATUS_IGNORE);
            ok &= y == left * 10 + k;
        }
        ret |= MPI_Waitall(nflight, rq, MPI_STATUSES_IGNORE);
        CK(cudaStreamSynchronize(other));
        for (int k = 1; k < nflight && defined_output(c, &g); ++k) {
            char *rk = aux + (size_t) (k - 1) * ((g.rbytes + 255) / 256) * 256;
            CK(cudaMemcpy(out_r, rk, g.rbytes, cudaMemcpyDeviceToHost));
            clear_padding(out_r, g.cmpbytes, c->ty, g.ext);
            ok &= 0 == memcmp(out_r, ref_r, g.cmpbytes);
        }
    }
    CK(cudaMemcpy(out_r, dev_r, g.rbytes, cudaMemcpyDeviceToHost));
    clear_padding(out_r, g.cmpbytes, c->ty, g.ext);
    if (defined_output(c, &g) && 0 != memcmp(out_r, ref_r, g.cmpbytes)) {
        size_t i = 0;
        while (out_r[i] == ref_r[i]) ++i;
        if (ok) fprintf(stderr, "rank %d: first difference at byte %zu of %zu\n", g.me, i, g.rbytes);
        ok = 0;
    }
    ok &= MPI_SUCCESS == ret;
    /* over the case's communicator: split parts may run different numbers
     * of cases (roots range over the part's size), and a world-wide call
     * here would pair one part's device collective with another part's
     * host allreduce; each case is counted once, by the part's rank 0 */
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, c->comm);
    if (0 != g.me) {
        return;
    }
    if (all_ok) {
        ++npass;
    } else {
        ++nfail;
        printf("FAIL %s %s count %zu %s %s root %d%s%s\n", c->comm_name, cname[c->coll],
                   c->count, c->ty->name, c->op ? c->op->name : "-", c->root,
                   c->in_place ? " in-place" : "", c->nb ? " nonblocking" : "");
    }
}

/*
 * Reduce from 1 to 72 MiB, where more than 2 ranks take the two-shot
 * kernel to the root (coll_gpu_reduce_twoshot_min up to
 * coll_gpu_reduce_chain_min, 64 MiB unless the environment sets it) and
 * the chain above: roots other than 0, in place at the root,
 * non-roots passing recvbuf NULL (MPI ignores it there).  The root's
 * output is compared with the host module's (ints and integer-valued
 * floats: every order gives the same bits) or, fractional floats, with
 * the device allreduce of the same inputs bit for bit (both fold in rank
 * order; not across virtual nodes nor from the chain threshold on,
 * which fold in another order).  Non-roots' recvbufs must keep their
 * poison and every send buffer its input.
 */
enum { TS_INT, TS_FLT, TS_FRAC, TS_NKIND };
static void reduce_ts_case(MPI_Comm comm, size_t bytes, int root, int mode, int kind, int max,
                           int id)
{
    const int ip = 1 == mode, nullr = 2 == mode;
    const MPI_Datatype t = TS_INT == kind ? MPI_INT : MPI_FLOAT;
    /* the op from the case, the same on every rank: id is not (at an odd
     * rank count the split communicator above has a size per rank, and so
     * a count of cases per rank) */
    const MPI_Op op = TS_INT == kind && max ? MPI_MAX : MPI_SUM;
    const int count = (int) (bytes / 4);
    int n, me, ok = 1, all_ok;
    MPI_Comm_size(comm, &n);
    MPI_Comm_rank(comm, &me);
    const int is_root = me == root;
    uint64_t seed = ((uint64_t) id << 24) ^ (uint64_t) (me + 1) * 0x9e37;
    if (TS_FRAC == kind) {
        for (int i = 0; i < count; ++i) {
            ((float *) host_s)[i] = (float) (rng_next(&seed) % 2000003) / 997.0f - 1000.0f;
        }
    } else {
        gen(host_s, (size_t) count, TS_INT == kind ? &types[4] : &types[9], 4, seed);
    }
    char *ar = dev_r + cap;   /* the device allreduce's output */
    CK(cudaMemcpy(dev_s, host_s, bytes, cudaMemcpyHostToDevice));
    CK(cudaMemset(dev_r, 0xA5, bytes));
    if (ip && is_root) {
        CK(cudaMemcpy(dev_r, host_s, bytes, cudaMemcpyHostToDevice));
    }
    const char *chain_env = getenv("OMPI_MCA_coll_gpu_reduce_chain_min");
    const size_t chain_min = NULL != chain_env ? (size_t) strtoull(chain_env, NULL, 0)
                                               : (size_t) 64 << 20;
    const int frac_ref = TS_FRAC == kind && NULL == getenv("OMPI_MCA_coll_gpu_virtual_nodes") &&
                         bytes < chain_min;
    if (TS_FRAC == kind) {
        ok &= MPI_SUCCESS == MPI_Allreduce(dev_s, ar, count, t, op, comm);
        CK(cudaMemcpy(ref_r, ar, bytes, cudaMemcpyDeviceToHost));
    } else {
        memcpy(host_r, host_s, bytes);
        ok &= MPI_SUCCESS == MPI_Reduce(ip && is_root ? MPI_IN_PLACE : host_s, host_r, count, t,
                                        op, root, comm);
        memcpy(ref_r, host_r, bytes);
    }
    ok &= MPI_SUCCESS == MPI_Reduce(ip && is_root ? MPI_IN_PLACE : dev_s,
                                    nullr && !is_root ? NULL : dev_r, count, t, op, root, comm);
    CK(cudaMemcpy(out_r, dev_r, bytes, cudaMemcpyDeviceToHost));
    const int called = ok;
    if (is_root && (TS_FRAC != kind || frac_ref) && 0 != memcmp(out_r, ref_r, bytes)) {
        size_t i = 0;
        while (out_r[i] == ref_r[i]) {
            ++i;
        }
        fprintf(stderr, "rank %d (root): reduce of %zu bytes: byte %zu of the result is 0x%02x, "
                "the reference's 0x%02x\n", me, bytes, i, (unsigned char) out_r[i],
                (unsigned char) ref_r[i]);
        ok = 0;
    } else if (!is_root) {
        for (size_t i = 0; i < bytes && ok; ++i) {
            if ((unsigned char) out_r[i] != 0xA5) {   /* never written */
                fprintf(stderr, "rank %d: reduce of %zu bytes to root %d wrote byte %zu of this "
                        "non-root's recvbuf\n", me, bytes, root, i);
                ok = 0;
            }
        }
    }
    if (!(ip && is_root)) {
        CK(cudaMemcpy(out_r, dev_s, bytes, cudaMemcpyDeviceToHost));
        if (0 != memcmp(out_r, host_s, bytes)) {
            fprintf(stderr, "rank %d: reduce of %zu bytes changed the send buffer\n", me, bytes);
            ok = 0;
        }
    }
    if (!called) {
        fprintf(stderr, "rank %d: reduce of %zu bytes: a call returned an error\n", me, bytes);
    }
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
    if (0 != me) {
        return;
    }
    if (all_ok) {
        ++npass;
    } else {
        static const char *kn[] = { "int", "float", "fractional float" };
        ++nfail;
        printf("FAIL reduce (1-72 MiB) %zu bytes %s %s root %d%s\n", bytes, kn[kind],
               MPI_MAX == op ? "max" : "sum", root,
               ip ? " in-place" : nullr ? " non-root recvbuf NULL" : "");
    }
}

static void reduce_ts_cases(int *id)
{
    /* 24 and 48 MiB: the two-shot to the root by default (the chain where
     * OMPI_MCA_coll_gpu_reduce_chain_min is lowered below them); 72 MiB:
     * the chain */
    const size_t full[] = { 1u << 20, (1u << 20) + 12, (2u << 20) + 4, (3u << 20) + 1028,
                            4u << 20, (8u << 20) + 20, (16u << 20) - 4, (24u << 20) + 8,
                            48u << 20, (72u << 20) + 4 };
    const size_t brief[] = { (1u << 20) + 12, 4u << 20, (16u << 20) - 4 };
    const size_t *sizes = quick ? brief : full;
    const int nsizes = quick ? 3 : (int) (sizeof(full) / sizeof(full[0]));
    int n;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const int roots[2] = { n - 1, n > 2 ? 1 : n - 1 };
    for (int k = 0; k < nsizes; ++k) {
        if (sizes[k] > cap) {
            continue;
        }
        for (int r = 0; r < (roots[0] != roots[1] ? 2 : 1); ++r) {
            for (int mode = 0; mode < 3; ++mode) {
                for (int kind = 0; kind < TS_NKIND; ++kind) {
                    reduce_ts_case(MPI_COMM_WORLD, sizes[k], roots[r], mode, kind,
                                   (k + r + mode) % 2, ++*id);
                }
            }
        }
    }
}

int main(int argc, char **argv)
{
    int wsize, ndev, id = 0;
    MPI_Comm local, half, dup;
    setenv("OMPI_MCA_op", "^avx", 0);   /* Open MPI 4.1.4 op/avx saturates 8/16-bit sums */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    quick = argc > 1 && 0 == strcmp(argv[1], "--quick");
    if (cudaSuccess != cudaGetDeviceCount(&ndev) || ndev < 1) {
        if (0 == wrank) printf("SKIP test_gpu_colls: no CUDA device visible (0 passed, 0 failed)\n");
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    int lrank;
    MPI_Comm_rank(local, &lrank);
    CK(cudaSetDevice(lrank % ndev));
    cap = (quick ? 16u : 80u) << 20;
    CK(cudaMalloc((void **) &dev_s, cap));
    CK(cudaMalloc((void **) &dev_r, 3 * cap + 1024));
    CK(cudaMalloc((void **) &busy, 8 << 20));
    CK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
    host_s = malloc(cap); host_r = malloc(cap); ref_r = malloc(cap); out_r = malloc(cap);
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, -wrank, &half);   /* reversed order inside */

    const size_t big[] = { 0, 1, 7, 1000, 4099, 65536 + 3, (1u << 20) + 5, 4u << 20, 16u << 20 };
    const int nbig = quick ? 6 : (int) (sizeof(big) / sizeof(big[0]));
    struct { MPI_Comm c; const char *name; } comms[] = { { MPI_COMM_WORLD, "world" }, { dup, "dup" }, { half, "split" } };
    const type_t *t_int = &types[4], *t_char = &types[8], *t_dbl = &types[10], *t_flt = &types[9];
    for (int ci = 0; ci < 3; ++ci) {
        int csize;
        MPI_Comm_size(comms[ci].c, &csize);
        for (int coll = 0; coll < C_N; ++coll) {
            if (coll == C_ALLREDUCE) continue;   /* blocking allreduce: test_gpu_allreduce */
            for (int k = 0; k < nbig; ++k) {
                const type_t *ty = k % 3 == 0 ? t_int : k % 3 == 1 ? t_char : t_dbl;
                if (reducing(coll)) ty = k % 2 ? t_flt : t_int;
                /* the all-to-all family moves n x count: keep it in the buffers */
                size_t count = big[k] / (coll == C_ALLTOALL || coll == C_ALLTOALLV || coll == C_SCATTER || coll == C_RSB || coll == C_ALLGATHER || coll == C_GATHER ? (size_t) csize : 1);
                int esz;
                MPI_Type_size(ty->t, &esz);
                count = count / (size_t) esz + (big[k] & 1);
                for (int root = 0; root < (rooted(coll) ? csize : 1); ++root) {
                    for (int ip = 0; ip < 2; ++ip) {
                        if (ip && (coll == C_BCAST)) continue;
                        case_t c = { coll, root, ip, 0, count, ty, reducing(coll) ? &ops[0] : NULL, comms[ci].c, comms[ci].name };
                        run_case(&c, ++id);
                    }
                }
            }
        }
    }
    /* op x type matrix for the reducing collectives, odd count */
    for (int coll = 0; coll < C_N; ++coll) {
        if (!reducing(coll) || coll == C_ALLREDUCE) continue;
        for (int ti = 0; ti < NTYPES; ++ti) {
            for (int oi = 0; oi < NOPS; ++oi) {
                if (!ops[oi].ok[types[ti].cls]) continue;
                case_t c = { coll, wsize - 1, 0, 0, quick ? 33 : 1237, &types[ti], &ops[oi], MPI_COMM_WORLD, "world" };
                run_case(&c, ++id);
            }
        }
    }
    /* nonblocking: every native collective, small and large, in place too */
    for (int coll = 0; coll < C_N; ++coll) {
        for (int k = 1; k < nbig; k += 2) {
            for (int ip = 0; ip < 2; ++ip) {
                if (ip && coll == C_BCAST) continue;
                size_t count = big[k] / 4 / (size_t) wsize + 1;
                if (count * 4 * (size_t) wsize * 2 > cap) continue;
                case_t c = { coll, wsize > 1 ? 1 : 0, ip, 1, count, reducing(coll) ? t_int : t_flt, reducing(coll) ? &ops[0] : NULL, MPI_COMM_WORLD, "world" };
                run_case(&c, ++id);
            }
        }
    }
    reduce_ts_cases(&id);
    int mine[2] = { npass, nfail }, sum[2];
    MPI_Allreduce(mine, sum, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    npass = sum[0];
    nfail = sum[1];
    if (0 == wrank) printf("test_gpu_colls (%d ranks): %d passed, %d failed\n", wsize, npass, nfail);
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return nfail ? 1 : 0;
}
