/*
 * Gather(v), scatter(v), allgatherv, alltoall(v,w), reduce_scatter, scan and exscan across
 * nodes on device buffers: the
 * MPI arguments as the hierarchy's byte lengths and displacements
 * (hier/gpu_hier_v.c and gpu_hier_a2a.c run them).  Contiguous datatypes only; anything else
 * stages, decided per rank from its own arguments and agreed on the kind
 * board like every call.  Counts and displacements are read where MPI says
 * they count (a gatherv's receive side and a scatterv's send side at the
 * root only).
 */
#include "ompi_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_gpu.h"

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"

#if GPUCOLL_HAVE_UCX
#include "hier/gpu_hier.h"
#endif

/* n blocks in bytes (counts NULL: count each, displs NULL: back to back);
 * 0 where a count or a displacement is negative */
static int mca_coll_gpu_v_bytes(const mca_coll_gpu_geom_t *g, int n, const int *counts, int count,
                                const int *displs, size_t *len, size_t *displ)
{
    for (int q = 0; q < n; ++q) {
        const int c = NULL != counts ? counts[q] : count;
        if (c < 0 || (NULL != displs && displs[q] < 0)) {
            return 0;
        }
        len[q] = (size_t) c * g->size;
        displ[q] = (NULL != displs ? (size_t) displs[q] * g->size : (size_t) q * len[q]) +
                   (size_t) g->lb;
    }
    return 1;
}

/* alltoallw's side: per-rank types and byte displacements.  A block that
 * moves data needs a contiguous type (no pack kernel for the others: this
 * rank posts "stage", and every rank stages the call). */
static int mca_coll_gpu_w_bytes(int n, const int *counts, const int *displs,
                                struct ompi_datatype_t *const *types, size_t *len, size_t *displ)
{
    for (int q = 0; q < n; ++q) {
        mca_coll_gpu_geom_t g;
        len[q] = displ[q] = 0;
        if (counts[q] < 0) {
            return 0;
        }
        if (0 == counts[q]) {
            continue;
        }
        if (!mca_coll_gpu_geom(types[q], &g) || (ptrdiff_t) displs[q] + g.lb < 0) {
            return 0;
        }
        len[q] = (size_t) counts[q] * g.size;
        displ[q] = (size_t) ((ptrdiff_t) displs[q] + g.lb);
    }
    return 1;
}

/* The arguments of one call as bytes; 0: this rank's part cannot take the
 * hierarchy (a type that is not contiguous, a negative count, sides whose
 * sizes differ). */
typedef struct {
    size_t *len, *displ;   /* per rank, where this rank knows them */
    size_t *rlen, *rdispl; /* alltoall(v): the receive side */
    size_t mine;           /* this rank's block */
    const char *sbuf;      /* NULL: in place */
    char *rbuf;            /* scatter: NULL in place */
    int root, is_root, uniform;
    gpu_dtype_t dt;        /* reduce_scatter */
    gpu_op_t op;
} mca_coll_gpu_v_args_t;

/* alltoall(v,w)'s send side given as NULL, not in place: MPI lets a rank
 * that sends nothing pass it (and Open MPI's MPI_BOTTOM is NULL).  The
 * hierarchy reads a NULL send buffer as in place, so the receive buffer
 * stands for it where every send length is 0: nothing is read from it.
 * With data it is MPI_BOTTOM with absolute displacements: staged (0). */
static int mca_coll_gpu_v_null_send(int n, mca_coll_gpu_v_args_t *v)
{
    if (NULL != v->sbuf) {
        return 1;
    }
    for (int q = 0; q < n; ++q) {
        if (0 != v->len[q]) {
            return 0;
        }
    }
    v->sbuf = v->rbuf;
    return 1;
}

static int mca_coll_gpu_v_args(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                               mca_coll_gpu_v_args_t *v)
{
    const int n = ompi_comm_size(m->comm), rank = ompi_comm_rank(m->comm);
    mca_coll_gpu_geom_t sg = { 0 }, rg = { 0 };

    v->root = a->root;
    v->is_root = rank == a->root;
    switch (a->kind) {
    case MCA_COLL_GPU_ARGS_GATHER:
    case MCA_COLL_GPU_ARGS_GATHERV: {
        const int in_place = v->is_root && MPI_IN_PLACE == a->sbuf;
        v->uniform = MCA_COLL_GPU_ARGS_GATHER == a->kind;
        if ((!in_place && !mca_coll_gpu_geom(a->sdtype, &sg)) ||
            (v->is_root && (!mca_coll_gpu_geom(a->rdtype, &rg) ||
                            !mca_coll_gpu_v_bytes(&rg, n, v->uniform ? NULL : a->rcounts,
                                                  a->rcount, v->uniform ? NULL : a->rdispls,
                                                  v->len, v->displ)))) {
            return 0;
        }
        v->mine = in_place ? v->len[rank] : (size_t) a->scount * sg.size;
        v->sbuf = in_place ? NULL : (const char *) a->sbuf + sg.lb;
        v->rbuf = a->rbuf;
        return a->scount >= 0 && (!v->is_root || v->mine == v->len[rank]);
    }
    case MCA_COLL_GPU_ARGS_SCATTER:
    case MCA_COLL_GPU_ARGS_SCATTERV: {
        const int in_place = v->is_root && MPI_IN_PLACE == a->rbuf;
        v->uniform = MCA_COLL_GPU_ARGS_SCATTER == a->kind;
        if ((!in_place && !mca_coll_gpu_geom(a->rdtype, &rg)) ||
            (v->is_root && (!mca_coll_gpu_geom(a->sdtype, &sg) ||
                            !mca_coll_gpu_v_bytes(&sg, n, v->uniform ? NULL : a->scounts,
                                                  a->scount, v->uniform ? NULL : a->sdispls,
                                                  v->len, v->displ)))) {
            return 0;
        }
        v->mine = in_place ? v->len[rank] : (size_t) a->rcount * rg.size;
        v->sbuf = a->sbuf;
        v->rbuf = in_place ? NULL : (char *) a->rbuf + rg.lb;
        return a->rcount >= 0 && (!v->is_root || v->mine == v->len[rank]);
    }
    case MCA_COLL_GPU_ARGS_ALLGATHERV: {
        const int in_place = MPI_IN_PLACE == a->sbuf;
        v->uniform = 0;
        if (!mca_coll_gpu_geom(a->rdtype, &rg) ||
            (!in_place && !mca_coll_gpu_geom(a->sdtype, &sg)) ||
            !mca_coll_gpu_v_bytes(&rg, n, a->rcounts, 0, a->rdispls, v->len, v->displ)) {
            return 0;
        }
        v->mine = in_place ? v->len[rank] : (size_t) a->scount * sg.size;
        v->sbuf = in_place ? NULL : (const char *) a->sbuf + sg.lb;
        v->rbuf = a->rbuf;
        return v->mine == v->len[rank];
    }
    case MCA_COLL_GPU_ARGS_ALLTOALL:
    case MCA_COLL_GPU_ARGS_ALLTOALLV: {
        const int uni = MCA_COLL_GPU_ARGS_ALLTOALL == a->kind;
        const int in_place = MPI_IN_PLACE == a->sbuf;
        v->uniform = uni;
        v->sbuf = in_place ? NULL : a->sbuf;
        v->rbuf = a->rbuf;
        v->mine = 0;
        /* in place: the receive layout is both sides (sbuf NULL for the
         * hierarchy, which sends out of a copy); a NULL send buffer that
         * is not in place is taken below only where it sends nothing */
        if (NULL == a->rbuf || !mca_coll_gpu_geom(a->rdtype, &rg) ||
            !mca_coll_gpu_v_bytes(&rg, n, uni ? NULL : a->rcounts, a->rcount,
                                  uni ? NULL : a->rdispls, v->rlen, v->rdispl)) {
            return 0;
        }
        if (in_place) {
            memcpy(v->len, v->rlen, (size_t) n * sizeof(*v->len));
            memcpy(v->displ, v->rdispl, (size_t) n * sizeof(*v->displ));
            return 1;
        }
        return mca_coll_gpu_geom(a->sdtype, &sg) &&
               mca_coll_gpu_v_bytes(&sg, n, uni ? NULL : a->scounts, a->scount,
                                    uni ? NULL : a->sdispls, v->len, v->displ) &&
               mca_coll_gpu_v_null_send(n, v);
    }
    case MCA_COLL_GPU_ARGS_ALLTOALLW:
        /* in place: the receive side is both (sbuf NULL for the hierarchy).
         * MPI_BOTTOM (absolute displacements) is NULL too: with data it
         * stages (taken for in place it sent the receive buffer's poison on
         * 4x H100), without it the receive buffer stands for it */
        if (NULL == a->rbuf) {
            return 0;
        }
        v->uniform = 0;
        v->sbuf = MPI_IN_PLACE == a->sbuf ? NULL : a->sbuf;
        v->rbuf = a->rbuf;
        v->mine = 0;
        return (MPI_IN_PLACE == a->sbuf ||
                (mca_coll_gpu_w_bytes(n, a->scounts, a->sdispls, a->sdtypes, v->len, v->displ) &&
                 mca_coll_gpu_v_null_send(n, v))) &&
               mca_coll_gpu_w_bytes(n, a->rcounts, a->rdispls, a->rdtypes, v->rlen, v->rdispl);
    case MCA_COLL_GPU_ARGS_REDUCE_SCATTER:
        /* counts as elements, in len; the input is every block, in place in rbuf */
        v->sbuf = MPI_IN_PLACE == a->sbuf ? NULL : a->sbuf;
        v->rbuf = a->rbuf;
        v->mine = 0;
        if (NULL == a->rcounts || !mca_coll_gpu_map(a->rdtype, a->op, &v->dt, &v->op)) {
            return 0;
        }
        for (int q = 0; q < n; ++q) {
            if (a->rcounts[q] < 0) {
                return 0;
            }
            v->len[q] = (size_t) a->rcounts[q];
        }
        v->mine = v->len[rank] * gpu_dtype_size(v->dt);
        return 1;
    case MCA_COLL_GPU_ARGS_SCAN:
    case MCA_COLL_GPU_ARGS_EXSCAN:
        v->sbuf = MPI_IN_PLACE == a->sbuf ? NULL : a->sbuf;
        v->rbuf = a->rbuf;
        v->mine = 0;
        if (a->rcount < 0 || !mca_coll_gpu_map(a->rdtype, a->op, &v->dt, &v->op)) {
            return 0;
        }
        v->mine = (size_t) a->rcount * gpu_dtype_size(v->dt);
        return 1;
    default:
        return 0;
    }
}

/* v's per-rank arrays: the communicator's, made at its first such call
 * (eligibility and run both read a call's layout; no allocation per call) */
static int mca_coll_gpu_v_layout(mca_coll_gpu_module_t *m, mca_coll_gpu_v_args_t *v)
{
    const size_t n = (size_t) ompi_comm_size(m->comm);
    if (NULL == m->hier_v_layout) {
        m->hier_v_layout = malloc(4 * n * sizeof(size_t));
        if (NULL == m->hier_v_layout) {
            return 0;
        }
    }
    v->len = m->hier_v_layout;
    v->displ = v->len + n;
    v->rlen = v->len + 2 * n;
    v->rdispl = v->len + 3 * n;
    return 1;
}

int mca_coll_gpu_hier_v_ok(mca_coll_gpu_module_t *m, const struct mca_coll_gpu_args_t *a)
{
    mca_coll_gpu_v_args_t v;
    return mca_coll_gpu_v_layout(m, &v) && mca_coll_gpu_v_args(m, a, &v);
}

#if GPUCOLL_HAVE_UCX
/* what a call's trace and log name: the collective, its size, the
 * hierarchy's algorithm for it */
typedef struct {
    const char *name;
    gpu_hier_coll_t coll;
    size_t bytes;        /* the trace's size */
    size_t algo_bytes;   /* the size the algorithm is chosen for */
    size_t esz;
} mca_coll_gpu_v_what_t;

static mca_coll_gpu_v_what_t mca_coll_gpu_v_what(mca_coll_gpu_hier_kind_t kind,
                                                 const mca_coll_gpu_v_args_t *v)
{
    mca_coll_gpu_v_what_t w = { .bytes = v->mine, .algo_bytes = v->mine, .esz = 1 };

    switch (kind) {
    case MCA_COLL_GPU_HIER_GATHER:
    case MCA_COLL_GPU_HIER_GATHERV:
        w.coll = MCA_COLL_GPU_HIER_GATHER == kind ? GPU_HIER_GATHER : GPU_HIER_GATHERV;
        break;
    case MCA_COLL_GPU_HIER_SCATTER:
    case MCA_COLL_GPU_HIER_SCATTERV:
        w.coll = MCA_COLL_GPU_HIER_SCATTER == kind ? GPU_HIER_SCATTER : GPU_HIER_SCATTERV;
        break;
    case MCA_COLL_GPU_HIER_ALLTOALL:
    case MCA_COLL_GPU_HIER_ALLTOALLV:
    case MCA_COLL_GPU_HIER_ALLTOALLW:
        /* alltoall's block, alltoall(v,w)'s first to send (alltoallw: the
         * pairs of alltoallv, every length and displacement in bytes) */
        w.coll = MCA_COLL_GPU_HIER_ALLTOALL == kind ? GPU_HIER_ALLTOALL : GPU_HIER_ALLTOALLV;
        w.bytes = MCA_COLL_GPU_HIER_ALLTOALLW == kind && NULL == v->sbuf ? v->rlen[0] : v->len[0];
        w.algo_bytes = w.bytes > 0 ? w.bytes : 1;
        break;
    case MCA_COLL_GPU_HIER_REDUCE_SCATTER:
        w.coll = GPU_HIER_REDUCE_SCATTER;
        w.esz = gpu_dtype_size(v->dt);
        break;
    case MCA_COLL_GPU_HIER_SCAN:
    case MCA_COLL_GPU_HIER_EXSCAN:
        w.coll = MCA_COLL_GPU_HIER_SCAN == kind ? GPU_HIER_SCAN : GPU_HIER_EXSCAN;
        w.esz = gpu_dtype_size(v->dt);
        break;
    default:
        w.coll = GPU_HIER_ALLGATHERV;
        break;
    }
    w.name = MCA_COLL_GPU_HIER_ALLTOALLW == kind ? "alltoallw" : gpu_hier_coll_name(w.coll);
    return w;
}

/* the hierarchy's run of the call: nothing of Open MPI, so that the
 * nonblocking thread runs it too */
static gpu_status_t mca_coll_gpu_v_exec(gpu_hier_t *h, mca_coll_gpu_hier_kind_t kind,
                                        const mca_coll_gpu_v_args_t *v)
{
    switch (kind) {
    case MCA_COLL_GPU_HIER_GATHER:
    case MCA_COLL_GPU_HIER_GATHERV:
        return gpu_hier_gatherv(h, v->sbuf, v->mine, v->rbuf, v->is_root ? v->len : NULL,
                                v->is_root ? v->displ : NULL, v->root, v->uniform);
    case MCA_COLL_GPU_HIER_SCATTER:
    case MCA_COLL_GPU_HIER_SCATTERV:
        return gpu_hier_scatterv(h, v->sbuf, v->is_root ? v->len : NULL,
                                 v->is_root ? v->displ : NULL, v->rbuf, v->mine, v->root,
                                 v->uniform);
    case MCA_COLL_GPU_HIER_ALLTOALL:
    case MCA_COLL_GPU_HIER_ALLTOALLV:
    case MCA_COLL_GPU_HIER_ALLTOALLW:
        return gpu_hier_alltoallv(h, v->sbuf, v->len, v->displ, v->rbuf, v->rlen, v->rdispl);
    case MCA_COLL_GPU_HIER_REDUCE_SCATTER:
        return gpu_hier_reduce_scatterv(h, v->sbuf, v->rbuf, v->len, v->op, v->dt);
    case MCA_COLL_GPU_HIER_SCAN:
    case MCA_COLL_GPU_HIER_EXSCAN:
        return gpu_hier_scan(h, v->sbuf, v->rbuf, v->mine / gpu_dtype_size(v->dt), v->op, v->dt,
                             MCA_COLL_GPU_HIER_EXSCAN == kind);
    case MCA_COLL_GPU_HIER_ALLGATHERV:
        return gpu_hier_allgatherv(h, v->sbuf, v->rbuf, v->len, v->displ);
    default:
        return GPU_ERR_INVALID;
    }
}
#endif

int mca_coll_gpu_hier_run_v(mca_coll_gpu_module_t *m, const mca_coll_gpu_hier_call_t *call,
                            int *ran)
{
#if GPUCOLL_HAVE_UCX
    mca_coll_gpu_v_args_t v;
    mca_coll_gpu_v_what_t w;
    mca_coll_gpu_trace_t trace;
    gpu_status_t st;

    *ran = 0;
    if (!mca_coll_gpu_v_layout(m, &v) || !mca_coll_gpu_v_args(m, call->args, &v)) {
        return MPI_SUCCESS;   /* eligibility said otherwise: not reached */
    }
    w = mca_coll_gpu_v_what(call->kind, &v);
    mca_coll_gpu_trace_begin(&trace, w.name, w.bytes,
                             gpu_hier_algo(m->hier, w.coll, w.algo_bytes, w.esz));
    st = mca_coll_gpu_v_exec(m->hier, call->kind, &v);
    mca_coll_gpu_trace_end(&trace, m->comm->c_name, 1, trace.t0, trace.t0, (int) st);
    if (GPU_ERR_UNSUPPORTED == st) {
        return MPI_SUCCESS;   /* the layout cannot take it, on every rank alike: staged */
    }
    *ran = 1;
    return mca_coll_gpu_fallback_done(mca_coll_gpu_status_to_mpi(st), NULL);
#else
    (void) m;
    (void) call;
    *ran = 0;
    return MPI_SUCCESS;
#endif
}

#if GPUCOLL_HAVE_UCX
/* A call held for the communicator's nonblocking thread: the layout's
 * arrays are its own (the communicator's serve the next call's
 * eligibility meanwhile). */
struct mca_coll_gpu_hier_vjob {
    mca_coll_gpu_hier_kind_t kind;
    mca_coll_gpu_v_args_t v;
    size_t arrays[];
};

mca_coll_gpu_hier_vjob_t *mca_coll_gpu_hier_v_job(mca_coll_gpu_module_t *m,
                                                  const mca_coll_gpu_hier_call_t *call,
                                                  const char **name, size_t *bytes,
                                                  char *label, size_t label_len)
{
    const size_t n = (size_t) ompi_comm_size(m->comm);
    mca_coll_gpu_hier_vjob_t *j = malloc(sizeof(*j) + 4 * n * sizeof(size_t));
    mca_coll_gpu_v_what_t w;

    if (NULL == j) {
        return NULL;
    }
    j->kind = call->kind;
    j->v.len = j->arrays;
    j->v.displ = j->arrays + n;
    j->v.rlen = j->arrays + 2 * n;
    j->v.rdispl = j->arrays + 3 * n;
    memset(j->arrays, 0, 4 * n * sizeof(size_t));
    if (!mca_coll_gpu_v_args(m, call->args, &j->v)) {
        free(j);
        return NULL;
    }
    w = mca_coll_gpu_v_what(call->kind, &j->v);
    *name = w.name;
    *bytes = w.bytes;
    snprintf(label, label_len, "%s", gpu_hier_algo(m->hier, w.coll, w.algo_bytes, w.esz));
    return j;
}

gpu_status_t mca_coll_gpu_hier_v_job_run(struct gpu_hier *h, const mca_coll_gpu_hier_vjob_t *j)
{
    return mca_coll_gpu_v_exec(h, j->kind, &j->v);
}
#endif
