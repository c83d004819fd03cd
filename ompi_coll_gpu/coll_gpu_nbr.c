/*
 * Neighborhood collectives on the GPU path: halo exchanges move between
 * the GPUs of a node like an alltoallv whose pairs are the neighbours.
 *
 * The exchange kernel moves one block per pair of ranks and call, so the
 * blocks are cut into rounds where no pair repeats:
 *   - Cartesian: MPI pairs a block sent in the positive direction of a
 *     dimension with the block its receiver takes from its negative
 *     direction (and back).  One round holds every direction, unless a
 *     periodic dimension has extent 1 or 2 (the same neighbour both ways):
 *     then the positive directions go in a first round, the negative ones
 *     in a second.  The count depends only on the topology, so every rank
 *     cuts alike.
 *   - graphs: one round, taken only where no neighbour repeats in either
 *     list (the pairing of repeated edges is by position, which one
 *     kernel call cannot express).
 * Two rounds go as one call where they can: a neighbour met in both
 * carries two pieces, round 0's first, in the same order at both ends
 * (gpu_xchg_two), so a 2x2 periodic halo is one launch or one command of
 * the resident kernel instead of two.  Only a rank that is its own
 * neighbour in both rounds (a periodic dimension of extent 1) keeps two
 * calls: the plan has one local copy.  Those run only blocking; a
 * nonblocking one stages (the rule is the topology's, the same on every
 * rank).  Anything else this rank cannot express (derived types, negative
 * displacements, more than GPU_MAX_PEERS ranks) makes it post "stage", and
 * every rank stages.
 */
#include "ompi_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_gpu.h"
#include "coll_gpu_route.h"

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/topo/base/base.h"

#if GPUCOLL_HAVE_UCX
#include "hier/gpu_hier.h"
#endif

/* One block of the neighbourhood: which peer, which index in the list */
typedef struct {
    int peer;
    int index;
} gpu_nbr_blk_t;

/* The send and receive blocks of round r (0 or 1) of nrounds; counts in
 * *ns and *nr.  0 when the topology is not one the path takes. */
static int gpu_nbr_round(ompi_communicator_t *comm, int r, int nrounds, gpu_nbr_blk_t *snd,
                         int *ns, gpu_nbr_blk_t *rcv, int *nr)
{
    *ns = *nr = 0;
    if (OMPI_COMM_IS_CART(comm)) {
        const mca_topo_base_comm_cart_t *cart = comm->c_topo->mtc.cart;
        for (int d = 0; d < cart->ndims; ++d) {
            int src, dst;
            if (OMPI_SUCCESS != mca_topo_base_cart_shift(comm, d, 1, &src, &dst)) {
                return 0;
            }
            /* positive round: out block 2d+1 to dst, in block 2d from src */
            if ((0 == r || 1 == nrounds) && MPI_PROC_NULL != dst) {
                snd[(*ns)++] = (gpu_nbr_blk_t) { dst, 2 * d + 1 };
            }
            if ((0 == r || 1 == nrounds) && MPI_PROC_NULL != src) {
                rcv[(*nr)++] = (gpu_nbr_blk_t) { src, 2 * d };
            }
            /* negative round: out block 2d to src, in block 2d+1 from dst */
            if ((1 == r || 1 == nrounds) && MPI_PROC_NULL != src) {
                snd[(*ns)++] = (gpu_nbr_blk_t) { src, 2 * d };
            }
            if ((1 == r || 1 == nrounds) && MPI_PROC_NULL != dst) {
                rcv[(*nr)++] = (gpu_nbr_blk_t) { dst, 2 * d + 1 };
            }
        }
        return 1;
    }
    /* a neighbourhood the path takes has at most GPU_MAX_PEERS each way:
     * the lists fit on the stack */
    int nin = 0, nout = 0;
    int in[GPU_MAX_PEERS], out[GPU_MAX_PEERS], win[GPU_MAX_PEERS], wout[GPU_MAX_PEERS];
    if (OMPI_SUCCESS != mca_topo_base_neighbor_count(comm, &nin, &nout) ||
        nin > GPU_MAX_PEERS || nout > GPU_MAX_PEERS) {
        return 0;
    }
    int ok = OMPI_COMM_IS_GRAPH(comm)
                 ? OMPI_SUCCESS == mca_topo_base_graph_neighbors(comm, ompi_comm_rank(comm),
                                                                 nin, in)
                 : OMPI_COMM_IS_DIST_GRAPH(comm) &&
                       OMPI_SUCCESS == mca_topo_base_dist_graph_neighbors(comm, nin, in, win,
                                                                          nout, out, wout);
    if (ok && OMPI_COMM_IS_GRAPH(comm)) {
        memcpy(out, in, sizeof(int) * (size_t) nin);   /* a graph's lists are one */
        nout = nin;
    }
    for (int i = 0; ok && i < nout; ++i) {
        snd[(*ns)++] = (gpu_nbr_blk_t) { out[i], i };
    }
    for (int i = 0; ok && i < nin; ++i) {
        rcv[(*nr)++] = (gpu_nbr_blk_t) { in[i], i };
    }
    return ok;
}

/* a periodic dimension of extent 1 or 2: its two neighbours are one */
static int gpu_nbr_rounds(ompi_communicator_t *comm)
{
    if (OMPI_COMM_IS_CART(comm)) {
        const mca_topo_base_comm_cart_t *cart = comm->c_topo->mtc.cart;
        for (int d = 0; d < cart->ndims; ++d) {
            if (cart->periods[d] && cart->dims[d] <= 2) {
                return 2;
            }
        }
    }
    return 1;
}

/* byte offset and length of list block i of a v layout (or of count each) */
static int gpu_nbr_span(const mca_coll_gpu_geom_t *g, int i, int count, const int *counts,
                        const int *displs, int same_block, size_t *off, size_t *len)
{
    const int c = NULL != counts ? counts[i] : count;
    const ptrdiff_t d = NULL != displs ? displs[i] : same_block ? 0 : (ptrdiff_t) i * count;
    if (c < 0 || d < 0) {
        return 0;
    }
    *len = (size_t) c * g->size;
    *off = (size_t) d * g->size + (size_t) g->lb;
    return 1;
}

/* list block i of a w layout: its own type and byte displacement; a type
 * that is not contiguous only for an empty block */
static int gpu_nbr_span_w(int i, const int *counts, const MPI_Aint *displs,
                          struct ompi_datatype_t *const *types, size_t *off, size_t *len)
{
    mca_coll_gpu_geom_t g;
    *off = *len = 0;
    if (counts[i] <= 0) {
        return 0 == counts[i];
    }
    if (!mca_coll_gpu_geom(types[i], &g) || displs[i] + g.lb < 0) {
        return 0;
    }
    *len = (size_t) counts[i] * g.size;
    *off = (size_t) (displs[i] + g.lb);
    return 1;
}

/* Round r's blocks as byte spans per peer (each peer once at most) */
typedef struct {
    size_t sl[GPU_MAX_PEERS], sd[GPU_MAX_PEERS], rl[GPU_MAX_PEERS], rd[GPU_MAX_PEERS];
    char sent[GPU_MAX_PEERS], got[GPU_MAX_PEERS];
} gpu_nbr_spans_t;

static int gpu_nbr_spans(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a, int r,
                         int nrounds, const mca_coll_gpu_geom_t *sg,
                         const mca_coll_gpu_geom_t *rg, gpu_nbr_spans_t *s)
{
    const int gather = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHER == a->kind ||
                       MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHERV == a->kind;
    gpu_nbr_blk_t snd[2 * GPU_MAX_PEERS], rcv[2 * GPU_MAX_PEERS];
    int ns, nr;

    memset(s, 0, sizeof(*s));
    if (!gpu_nbr_round(m->comm, r, nrounds, snd, &ns, rcv, &nr)) {
        return 0;
    }
    const int w = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLW == a->kind;
    for (int i = 0; i < ns; ++i) {
        const int q = snd[i].peer;
        if (s->sent[q]++ ||
            !(w ? gpu_nbr_span_w(snd[i].index, a->scounts, a->sdispls_w, a->sdtypes, &s->sd[q],
                                 &s->sl[q])
                : gpu_nbr_span(sg, snd[i].index, a->scount, gather ? NULL : a->scounts,
                               gather ? NULL : a->sdispls, gather, &s->sd[q], &s->sl[q]))) {
            return 0;   /* a neighbour twice in one round */
        }
    }
    for (int i = 0; i < nr; ++i) {
        const int q = rcv[i].peer;
        if (s->got[q]++ ||
            !(w ? gpu_nbr_span_w(rcv[i].index, a->rcounts, a->rdispls_w, a->rdtypes, &s->rd[q],
                                 &s->rl[q])
                : gpu_nbr_span(rg, rcv[i].index, a->rcount, a->rcounts, a->rdispls, 0, &s->rd[q],
                               &s->rl[q]))) {
            return 0;
        }
    }
    return 1;
}

/* Both rounds in one plan: where a peer has a block in each, round 1's
 * becomes the pair's second piece.  A first piece of 0 bytes gives way to
 * the second, at both ends alike (matching signatures: the sender's block
 * and the receiver's have the same bytes).  0: the local copy twice. */
static int gpu_nbr_merge(gpu_nbr_spans_t *s, const gpu_nbr_spans_t *t, int n, int me,
                         size_t *s2l, size_t *s2d, size_t *r2l, size_t *r2d)
{
    if ((s->sent[me] && t->sent[me]) || (s->got[me] && t->got[me])) {
        return 0;
    }
    for (int q = 0; q < n; ++q) {
        s2l[q] = r2l[q] = 0;
        if (q == me ? t->sent[q] : 0 == s->sl[q]) {
            s->sl[q] = t->sl[q];   /* round 1's, or nothing */
            s->sd[q] = t->sd[q];
        } else if (q != me) {
            s2l[q] = t->sl[q];
            s2d[q] = t->sd[q];
        }
        if (q == me ? t->got[q] : 0 == s->rl[q]) {
            s->rl[q] = t->rl[q];
            s->rd[q] = t->rd[q];
        } else if (q != me) {
            r2l[q] = t->rl[q];
            r2d[q] = t->rd[q];
        }
        s->sent[q] |= t->sent[q];
        s->got[q] |= t->got[q];
    }
    return 1;
}

/* Round r's plan in x->plan (r 0) or x->plan2 (r 1); r -1: both rounds in
 * x->plan (0 where they cannot be one) */
static int gpu_nbr_plan(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a, int r,
                        int nrounds, const mca_coll_gpu_geom_t *sg,
                        const mca_coll_gpu_geom_t *rg, gpu_xchg_plan_t *plan)
{
    const int n = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm);
    const char *sbuf = a->sbuf;
    size_t s2l[GPU_MAX_PEERS] = { 0 }, s2d[GPU_MAX_PEERS] = { 0 };
    size_t r2l[GPU_MAX_PEERS] = { 0 }, r2d[GPU_MAX_PEERS] = { 0 };
    gpu_nbr_spans_t s, t;

    if (!gpu_nbr_spans(m, a, r < 0 ? 0 : r, nrounds, sg, rg, &s)) {
        return 0;
    }
    if (r < 0 && (!gpu_nbr_spans(m, a, 1, nrounds, sg, rg, &t) ||
                  !gpu_nbr_merge(&s, &t, n, me, s2l, s2d, r2l, r2d))) {
        return 0;
    }
    /* the plan's local copy takes its length from the receive side */
    if (s.sent[me] != s.got[me] || s.sl[me] != s.rl[me]) {
        return 0;
    }
    if (NULL == sbuf) {
        /* a NULL send buffer is the plan's "in place": a rank that sends
         * nothing from NULL (count 0, as MPI allows) names its receive
         * buffer instead, from which nothing is read; NULL with bytes to
         * send (MPI_BOTTOM) stages */
        for (int q = 0; q < n; ++q) {
            if (s.sl[q] > 0 || s2l[q] > 0) {
                return 0;
            }
        }
        sbuf = a->rbuf;
    }
    if (GPU_OK != gpu_plan_alltoallv(plan, me, n, sbuf, s.sl, s.sd, (char *) a->rbuf, s.rl,
                                     s.rd) ||
        GPU_OK != gpu_plan_second(plan, me, n, sbuf, s2l, s2d, (char *) a->rbuf, r2l, r2d)) {
        return 0;
    }
    /* a round moves at most one block per pair, and without v every block
     * is the same bytes on every rank (matching signatures): the largest
     * pair is known alike everywhere, so small calls may take the resident
     * kernel (its choice must be every rank's).  One call only: an MPI
     * call is one number of the resident kernel's line flags, so a second
     * command in the same call reused the next call's number (4x H100:
     * periodic extent-2 grids lost blocks), and two rounds launch. */
    if (NULL == a->rcounts && 1 == nrounds) {
        plan->ll_bytes = (size_t) a->rcount * rg->size;
    } else if (NULL == a->rcounts && r < 0 && a->rcount > 0) {
        /* merged: every rank has a peer of two blocks (the topology's
         * extent-2 periodic dimension is every rank's) */
        plan->ll_bytes = gpu_xchg_cut((size_t) a->rcount * rg->size) +
                         (size_t) a->rcount * rg->size;
    }
    return 1;
}

int mca_coll_gpu_nbr_nb_pairs_wrong(ompi_communicator_t *comm)
{
    return 2 == gpu_nbr_rounds(comm);
}

int mca_coll_gpu_native_neighbor(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                                 int blocking, mca_coll_gpu_native_t *x)
{
    const int rounds = gpu_nbr_rounds(m->comm);
    mca_coll_gpu_geom_t sg, rg;
    int merged = 0;

    if (MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLW == a->kind ||
        ompi_comm_size(m->comm) > GPU_MAX_PEERS || !mca_coll_gpu_geom(a->sdtype, &sg) ||
        !mca_coll_gpu_geom(a->rdtype, &rg)) {
        return 0;
    }
    if (rounds > 1) {
        merged = gpu_nbr_plan(m, a, -1, rounds, &sg, &rg, &x->plan);
        if (!merged && !blocking) {
            return 0;
        }
    }
    x->call.what = mca_coll_gpu_coll_ops(a->kind)->name;
    x->call.plan = &x->plan;
    x->call.in = NULL;   /* the plans hold the buffers */
    x->call.out = NULL;
    x->call.count = 0;
    x->call.op = GPU_OP_BOR;
    x->call.dt = GPU_DT_U8;
    x->rounds = merged ? 1 : rounds;
    for (int r = 0; !merged && r < rounds; ++r) {
        if (!gpu_nbr_plan(m, a, r, rounds, &sg, &rg, 0 == r ? &x->plan : &x->plan2)) {
            return 0;
        }
    }
    return 1;
}

/* ---- across nodes: the hierarchy's alltoallv pairs --------------------------
 * A round (gpu_nbr_round: the same cut as on one node, so a cartesian
 * periodic dimension of extent 1 or 2 pairs its directions as MPI says) is
 * an alltoallv whose pairs are the round's neighbours and every other pair
 * empty: same-node neighbours through the node engine, the others straight
 * over the transport, no leader (hier/gpu_hier_a2a.c).  What this rank
 * cannot express (a neighbour twice in a round of a graph, a type that is
 * not contiguous, more than GPU_MAX_PEERS ranks) makes it post "stage". */

static int gpu_nbr_hier_spans(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a, int r,
                              int rounds, gpu_nbr_spans_t *s)
{
    const int me = ompi_comm_rank(m->comm);
    mca_coll_gpu_geom_t sg = { 0 }, rg = { 0 };
    if (MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLW != a->kind &&
        (!mca_coll_gpu_geom(a->sdtype, &sg) || !mca_coll_gpu_geom(a->rdtype, &rg))) {
        return 0;
    }
    /* the local copy, where I am my own neighbour, takes the receive length */
    return gpu_nbr_spans(m, a, r, rounds, &sg, &rg, s) && s->sent[me] == s->got[me] &&
           s->sl[me] == s->rl[me];
}

int mca_coll_gpu_hier_nbr_ok(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a)
{
    const int rounds = gpu_nbr_rounds(m->comm);
    gpu_nbr_spans_t s;
    /* MPI_BOTTOM is NULL, which the hierarchy's alltoallv takes for in
     * place: such a call stages */
    if (ompi_comm_size(m->comm) > GPU_MAX_PEERS || MPI_IN_PLACE == a->sbuf || NULL == a->sbuf ||
        NULL == a->rbuf) {
        return 0;
    }
    for (int r = 0; r < rounds; ++r) {
        if (!gpu_nbr_hier_spans(m, a, r, rounds, &s)) {
            return 0;
        }
    }
    return 1;
}

int mca_coll_gpu_hier_run_nbr(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a, int *ran)
{
#if GPUCOLL_HAVE_UCX
    const int rounds = gpu_nbr_rounds(m->comm);
    const char *what = mca_coll_gpu_coll_ops(a->kind)->name;
    gpu_status_t st = GPU_OK;
    gpu_nbr_spans_t s;

    *ran = 0;
    /* every round's spans passed the route's eligibility check
     * (mca_coll_gpu_hier_nbr_ok), on every rank: each is cut once more here,
     * not checked twice */
    for (int r = 0; r < rounds && GPU_OK == st; ++r) {
        mca_coll_gpu_trace_t trace;
        if (!gpu_nbr_hier_spans(m, a, r, rounds, &s)) {
            if (0 == r) {
                return MPI_SUCCESS;   /* not reached: the route staged such a call */
            }
            st = GPU_ERR_INVALID;
            break;
        }
        mca_coll_gpu_trace_begin(&trace, what, s.rl[0],
                                 gpu_hier_algo(m->hier, GPU_HIER_ALLTOALLV, 1, 1));
        st = gpu_hier_alltoallv(m->hier, a->sbuf, s.sl, s.sd, a->rbuf, s.rl, s.rd);
        mca_coll_gpu_trace_end(&trace, m->comm->c_name, 1, trace.t0, trace.t0, (int) st);
        if (GPU_ERR_UNSUPPORTED == st && 0 == r) {
            return MPI_SUCCESS;   /* the layout cannot take it, on every rank alike: staged */
        }
    }
    *ran = 1;
    return mca_coll_gpu_fallback_done(mca_coll_gpu_status_to_mpi(st), NULL);
#else
    (void) m;
    (void) a;
    *ran = 0;
    return MPI_SUCCESS;
#endif
}

#if GPUCOLL_HAVE_UCX
/* A neighbourhood call held for the communicator's nonblocking thread
 * (coll_gpu_hier_nb.c): every round's spans, cut at the start on the
 * calling thread (the topology and the arguments are Open MPI's). */
struct mca_coll_gpu_hier_nbrjob {
    int rounds;
    const void *sbuf;
    void *rbuf;
    gpu_nbr_spans_t s[2];
};

mca_coll_gpu_hier_nbrjob_t *mca_coll_gpu_hier_nbr_job(mca_coll_gpu_module_t *m,
                                                      const mca_coll_gpu_args_t *a,
                                                      const char **name, size_t *bytes,
                                                      char *label, size_t label_len)
{
    const int rounds = gpu_nbr_rounds(m->comm);
    mca_coll_gpu_hier_nbrjob_t *j = calloc(1, sizeof(*j));

    if (NULL == j) {
        return NULL;
    }
    for (int r = 0; r < rounds; ++r) {
        if (!gpu_nbr_hier_spans(m, a, r, rounds, &j->s[r])) {
            free(j);   /* not reached: the route's eligibility cut them too */
            return NULL;
        }
    }
    j->rounds = rounds;
    j->sbuf = a->sbuf;
    j->rbuf = a->rbuf;
    *name = mca_coll_gpu_coll_ops(a->kind)->name;
    *bytes = j->s[0].rl[0];
    snprintf(label, label_len, "%s", gpu_hier_algo(m->hier, GPU_HIER_ALLTOALLV, 1, 1));
    return j;
}

gpu_status_t mca_coll_gpu_hier_nbr_job_run(struct gpu_hier *h, const mca_coll_gpu_hier_nbrjob_t *j)
{
    gpu_status_t st = GPU_OK;
    for (int r = 0; r < j->rounds && GPU_OK == st; ++r) {
        st = gpu_hier_alltoallv(h, j->sbuf, j->s[r].sl, j->s[r].sd, j->rbuf, j->s[r].rl,
                                j->s[r].rd);
    }
    return st;
}
#endif
