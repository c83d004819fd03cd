/*
 * The collectives' rows for the route (coll_gpu_route.h): which blocks of
 * a call lie in device memory, and whether the engine can take this
 * rank's part (a plan of the exchange kernel, or the allreduce).  Both
 * answers come from this rank's own arguments as MPI defines them; the
 * route agrees them across ranks.  The previous module's calls and the
 * staged ones are in coll_gpu_colls_run.c.
 */
#include "ompi_config.h"

#include "coll_gpu.h"
#include "coll_gpu_route.h"

#include "ompi/constants.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/topo/base/base.h"

/* a buffer's kind: none (nothing touched, NULL), host, device */
enum { GPU_BUF_NONE = 0, GPU_BUF_HOST = 1, GPU_BUF_DEV = 2 };

static int gpu_buf(const void *buf, size_t count, struct ompi_datatype_t *dt, ptrdiff_t disp)
{
    ptrdiff_t tlb = 0, text = 0;
    if (0 == count || NULL == dt) {
        /* nothing moves: a valid pointer still says where the rank's data
         * lives (a zero-length block of a device array) */
        if (NULL == buf || MPI_IN_PLACE == buf) {
            return GPU_BUF_NONE;
        }
        return mca_coll_gpu_is_device(buf) ? GPU_BUF_DEV : GPU_BUF_HOST;
    }
    ompi_datatype_get_true_extent(dt, &tlb, &text);
    return mca_coll_gpu_is_device((const char *) buf + disp + tlb) ? GPU_BUF_DEV : GPU_BUF_HOST;
}

int mca_coll_gpu_buf_device(const void *buf, size_t count, struct ompi_datatype_t *dt,
                            ptrdiff_t disp)
{
    return GPU_BUF_DEV == gpu_buf(buf, count, dt, disp);
}

/* a v layout: by its first block that moves data */
static int gpu_buf_v(const void *buf, int n, const int *counts, const int *displs,
                     struct ompi_datatype_t *dt)
{
    ptrdiff_t lb, ext;
    if (NULL != counts && NULL != dt) {
        ompi_datatype_get_extent(dt, &lb, &ext);
        for (int i = 0; i < n; ++i) {
            if (counts[i] > 0) {
                return gpu_buf(buf, (size_t) counts[i], dt, (ptrdiff_t) displs[i] * ext);
            }
        }
    }
    return gpu_buf(buf, 0, NULL, 0);
}

/* ANY: a side is on the device; ALL: no side is on the host.  A side that
 * moves nothing from a NULL pointer (count 0, as MPI allows) is neither:
 * it takes the other side's kind, or a rank that sends nothing would make
 * every rank stage (test_conform_nbr: neighbor_allgatherv's rank 1 sends 0
 * elements from NULL, and every such call staged).  The paths take such a
 * NULL for nothing, not for MPI_IN_PLACE (coll_gpu_nbr.c's plans) */
static int gpu_mem_of(int s, int r)
{
    const int any = GPU_BUF_DEV == s || GPU_BUF_DEV == r;
    if (GPU_BUF_NONE == s && GPU_BUF_NONE == r) {
        return GPU_MEM_EMPTY;
    }
    return (any ? GPU_MEM_ANY : 0) |
           (any && GPU_BUF_HOST != s && GPU_BUF_HOST != r ? GPU_MEM_ALL : 0);
}

static int gpu_mem_allreduce(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a)
{
    const int r = gpu_buf(a->rbuf, (size_t) a->rcount, a->rdtype, 0);
    return gpu_mem_of(MPI_IN_PLACE == a->sbuf ? r : gpu_buf(a->sbuf, (size_t) a->rcount,
                                                           a->rdtype, 0), r);
}

static int gpu_mem_reduce(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a)
{
    const int is_root = ompi_comm_rank(m->comm) == a->root;
    const int r = is_root ? gpu_buf(a->rbuf, (size_t) a->rcount, a->rdtype, 0) : GPU_BUF_NONE;
    const int s = MPI_IN_PLACE == a->sbuf ? r : gpu_buf(a->sbuf, (size_t) a->rcount, a->rdtype, 0);
    return gpu_mem_of(s, is_root ? r : s);
}

static int gpu_mem_bcast(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a)
{
    const int b = gpu_buf(a->rbuf, (size_t) a->rcount, a->rdtype, 0);
    return gpu_mem_of(b, b);
}

static int gpu_mem_reduce_scatter(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a)
{
    const int n = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm);
    size_t total = 0, mine;
    if (NULL != a->rcounts) {
        for (int i = 0; i < n; ++i) {
            total += a->rcounts[i] > 0 ? (size_t) a->rcounts[i] : 0;
        }
        mine = a->rcounts[me] > 0 ? (size_t) a->rcounts[me] : 0;
    } else {
        mine = a->rcount > 0 ? (size_t) a->rcount : 0;
        total = mine * (size_t) n;
    }
    if (MPI_IN_PLACE == a->sbuf) {
        const int r = gpu_buf(a->rbuf, total, a->rdtype, 0);
        return gpu_mem_of(r, r);
    }
    return gpu_mem_of(gpu_buf(a->sbuf, total, a->rdtype, 0), gpu_buf(a->rbuf, mine, a->rdtype, 0));
}

static int gpu_mem_allgather(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a)
{
    const int n = ompi_comm_size(m->comm);
    const int r = NULL != a->rcounts ? gpu_buf_v(a->rbuf, n, a->rcounts, a->rdispls, a->rdtype)
                                     : gpu_buf(a->rbuf, (size_t) a->rcount * n, a->rdtype, 0);
    return gpu_mem_of(MPI_IN_PLACE == a->sbuf ? r : gpu_buf(a->sbuf, (size_t) a->scount,
                                                           a->sdtype, 0), r);
}

static int gpu_mem_alltoall(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a)
{
    const int n = ompi_comm_size(m->comm);
    const int r = NULL != a->rcounts ? gpu_buf_v(a->rbuf, n, a->rcounts, a->rdispls, a->rdtype)
                                     : gpu_buf(a->rbuf, (size_t) a->rcount * n, a->rdtype, 0);
    if (MPI_IN_PLACE == a->sbuf) {
        return gpu_mem_of(r, r);
    }
    return gpu_mem_of(NULL != a->scounts ? gpu_buf_v(a->sbuf, n, a->scounts, a->sdispls, a->sdtype)
                                         : gpu_buf(a->sbuf, (size_t) a->scount * n, a->sdtype, 0),
                      r);
}

static int gpu_mem_gather(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a)
{
    const int n = ompi_comm_size(m->comm), is_root = ompi_comm_rank(m->comm) == a->root;
    int r = GPU_BUF_NONE, s;
    if (is_root) {
        r = NULL != a->rcounts ? gpu_buf_v(a->rbuf, n, a->rcounts, a->rdispls, a->rdtype)
                               : gpu_buf(a->rbuf, (size_t) a->rcount * n, a->rdtype, 0);
    }
    s = is_root && MPI_IN_PLACE == a->sbuf ? r : gpu_buf(a->sbuf, (size_t) a->scount, a->sdtype, 0);
    return gpu_mem_of(s, is_root ? r : s);
}

static int gpu_mem_scatter(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a)
{
    const int n = ompi_comm_size(m->comm), is_root = ompi_comm_rank(m->comm) == a->root;
    int s = GPU_BUF_NONE, r;
    if (is_root) {
        s = NULL != a->scounts ? gpu_buf_v(a->sbuf, n, a->scounts, a->sdispls, a->sdtype)
                               : gpu_buf(a->sbuf, (size_t) a->scount * n, a->sdtype, 0);
    }
    r = is_root && MPI_IN_PLACE == a->rbuf ? s : gpu_buf(a->rbuf, (size_t) a->rcount, a->rdtype, 0);
    return gpu_mem_of(is_root ? s : r, r);
}

/* w layouts: any block in device memory (the call is ours) */
static int gpu_mem_w_side(const void *buf, int n, const int *counts, const int *idispls,
                          const MPI_Aint *adispls, struct ompi_datatype_t *const *types)
{
    for (int i = 0; i < n; ++i) {
        const ptrdiff_t d = NULL != adispls ? (ptrdiff_t) adispls[i] : (ptrdiff_t) idispls[i];
        if (counts[i] > 0 && GPU_BUF_DEV == gpu_buf(buf, (size_t) counts[i], types[i], d)) {
            return 1;
        }
    }
    return 0;
}

/* a w layout's kind by its first block that moves data, as gpu_buf_v */
static int gpu_buf_w(const void *buf, int n, const int *counts, const int *idispls,
                     const MPI_Aint *adispls, struct ompi_datatype_t *const *types)
{
    for (int i = 0; i < n; ++i) {
        if (counts[i] > 0) {
            return gpu_buf(buf, (size_t) counts[i], types[i],
                           NULL != adispls ? (ptrdiff_t) adispls[i] : (ptrdiff_t) idispls[i]);
        }
    }
    return gpu_buf(buf, 0, NULL, 0);
}

/* the neighbourhood's degrees (0, 0 where the communicator has none) */
static void gpu_degrees(mca_coll_gpu_module_t *m, int *indeg, int *outdeg)
{
    *indeg = *outdeg = 0;
    if (OMPI_SUCCESS != mca_topo_base_neighbor_count(m->comm, indeg, outdeg)) {
        *indeg = *outdeg = 0;
    }
}

static int gpu_mem_alltoallw(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a)
{
    int nin = ompi_comm_size(m->comm), nout = nin;
    const int nbr = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLW == a->kind;
    if (nbr) {
        gpu_degrees(m, &nin, &nout);
    }
    const int any = gpu_mem_w_side(a->rbuf, nin, a->rcounts, a->rdispls, nbr ? a->rdispls_w : NULL,
                                   a->rdtypes) ||
                    (MPI_IN_PLACE != a->sbuf &&
                     gpu_mem_w_side(a->sbuf, nout, a->scounts, a->sdispls,
                                    nbr ? a->sdispls_w : NULL, a->sdtypes));
    const int r = gpu_buf_w(a->rbuf, nin, a->rcounts, a->rdispls, nbr ? a->rdispls_w : NULL,
                            a->rdtypes);
    const int s = MPI_IN_PLACE == a->sbuf
                      ? r : gpu_buf_w(a->sbuf, nout, a->scounts, a->sdispls,
                                      nbr ? a->sdispls_w : NULL, a->sdtypes);
    return any ? GPU_MEM_ANY | (gpu_mem_of(s, r) & GPU_MEM_ALL) : 0;
}

static int gpu_mem_neighbor(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a)
{
    int nin, nout;
    gpu_degrees(m, &nin, &nout);
    const int gather = MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHER == a->kind ||
                       MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHERV == a->kind;
    const int s = NULL != a->scounts
                      ? gpu_buf_v(a->sbuf, nout, a->scounts, a->sdispls, a->sdtype)
                      : gpu_buf(a->sbuf, (size_t) a->scount * (gather ? 1 : nout), a->sdtype, 0);
    const int r = NULL != a->rcounts ? gpu_buf_v(a->rbuf, nin, a->rcounts, a->rdispls, a->rdtype)
                                     : gpu_buf(a->rbuf, (size_t) a->rcount * nin, a->rdtype, 0);
    return gpu_mem_of(s, r);
}

static int gpu_mem_nothing(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a)
{
    return 0;
}

/* ---- the engine's side: plans from this rank's arguments ------------------ */

/* counts (in elements of g) to byte lengths and displacements; 0 when a
 * displacement is negative (the plans take offsets from the buffer) */
static int gpu_bytes(const mca_coll_gpu_geom_t *g, int n, const int *counts, int count,
                     const int *displs, size_t *len, size_t *displ)
{
    for (int q = 0; q < n; ++q) {
        const size_t c = (size_t) (NULL != counts ? counts[q] : count);
        if ((NULL != counts && counts[q] < 0) || (NULL != displs && displs[q] < 0)) {
            return 0;
        }
        len[q] = c * g->size;
        displ[q] = (NULL != displs ? (size_t) displs[q] * g->size : (size_t) q * len[q]) +
                   (size_t) g->lb;
    }
    return 1;
}

/* A pair type wider than the kernels' pieces (long double int): its
 * inputs move as bytes and one fold in rank order writes the result
 * (gpu_engine_wide; engine/gpu_plan.h, gpu_plan_wide, says why).  Every
 * rank answers alike: the type and op are the same on all of them. */
static int gpu_native_wide(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a, int coll,
                           const char *what, mca_coll_gpu_native_t *x)
{
    gpu_wide_t *w = &x->wide;
    const int n = ompi_comm_size(m->comm);
    size_t esize;

    if (n > GPU_MAX_PEERS || !mca_coll_gpu_map_wide(a->rdtype, a->op, &w->dt, &w->op)) {
        return 0;
    }
    esize = gpu_dtype_size(w->dt);
    w->coll = coll;
    w->rank = ompi_comm_rank(m->comm);
    w->n = n;
    w->root = a->root;
    w->in = MPI_IN_PLACE == a->sbuf ? (const char *) a->rbuf : (const char *) a->sbuf;
    w->out = (char *) a->rbuf;
    for (int q = 0; q < n; ++q) {
        const int c = GPU_WIDE_REDUCE_SCATTER != coll ? (0 == q ? a->rcount : 0)
                      : NULL != a->rcounts ? a->rcounts[q] : a->rcount;
        if (c < 0) {
            return 0;
        }
        w->len[q] = (size_t) c * esize;
    }
    x->call.what = what;
    x->call.plan = NULL;
    x->call.in = w->in;
    x->call.out = w->out;
    x->call.count = w->len[GPU_WIDE_REDUCE_SCATTER == coll ? w->rank : 0] / esize;
    x->call.op = w->op;
    x->call.dt = w->dt;
    x->call.wide = w;
    return 1;
}

static int gpu_native_allreduce(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                                int blocking, mca_coll_gpu_native_t *x)
{
    if (MCA_COLL_GPU_ALGO_STAGED == mca_coll_gpu_component.allreduce_algorithm) {
        return 0;
    }
    if (!mca_coll_gpu_map(a->rdtype, a->op, &x->call.dt, &x->call.op)) {
        return gpu_native_wide(m, a, GPU_WIDE_ALLREDUCE, "allreduce", x);
    }
    x->call.what = "allreduce";
    x->call.plan = NULL;
    x->call.in = MPI_IN_PLACE == a->sbuf ? a->rbuf : a->sbuf;
    x->call.out = a->rbuf;
    x->call.count = (size_t) a->rcount;
    return 1;
}

static int gpu_native_plan(mca_coll_gpu_native_t *x, const char *what, gpu_status_t st)
{
    x->call.what = what;
    x->call.plan = &x->plan;
    x->call.in = NULL;   /* the plan holds the buffers */
    x->call.out = NULL;
    x->call.count = 0;
    if (GPU_XCHG_REDUCE != x->plan.mode) {
        x->call.op = GPU_OP_BOR;
        x->call.dt = GPU_DT_U8;
    }
    return GPU_OK == st;
}

/* Bcast along a chain of ranks (every rank decides alike: the size, the
 * rank count and the pacing are the same everywhere): more than two
 * ranks, from min bytes, blocking only, and not under host-paced rounds,
 * which move a relay one hop per round.  Reduce: the same rule in
 * gpu_topo_reduce_way. */
static int gpu_chain_takes(const mca_coll_gpu_module_t *m, int n, size_t bytes,
                           unsigned long min, int blocking)
{
    return n > 2 && bytes >= min && blocking && !gpu_engine_paced(m->engine);
}

/* the chain's order: the topology's ring, or rank order */
static const int *gpu_chain_order(const mca_coll_gpu_module_t *m)
{
    return m->has_order ? m->chain_order : NULL;
}

static int gpu_native_bcast(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a, int blocking,
                            mca_coll_gpu_native_t *x)
{
    mca_coll_gpu_geom_t g;
    if (!mca_coll_gpu_geom(a->rdtype, &g)) {
        return 0;
    }
    const size_t bytes = (size_t) a->rcount * g.size;
    const int n = ompi_comm_size(m->comm);
    return gpu_native_plan(x, "bcast",
                           gpu_plan_bcast(&x->plan, ompi_comm_rank(m->comm), n, a->root,
                                          (char *) a->rbuf + g.lb, bytes,
                                          gpu_chain_takes(m, n, bytes,
                                                          mca_coll_gpu_component.bcast_chain_min,
                                                          blocking),
                                          gpu_chain_order(m)));
}

static int gpu_native_allgather(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                                int blocking, mca_coll_gpu_native_t *x)
{
    const int in_place = MPI_IN_PLACE == a->sbuf, rank = ompi_comm_rank(m->comm);
    const int n = ompi_comm_size(m->comm);
    mca_coll_gpu_geom_t sg = { 0 }, rg;
    size_t len[GPU_MAX_PEERS], displ[GPU_MAX_PEERS];
    if (n > GPU_MAX_PEERS || !mca_coll_gpu_geom(a->rdtype, &rg) ||
        (!in_place && !mca_coll_gpu_geom(a->sdtype, &sg)) ||
        !gpu_bytes(&rg, n, a->rcounts, a->rcount, a->rdispls, len, displ) ||
        (!in_place && (size_t) a->scount * sg.size != len[rank])) {
        return 0;
    }
    return gpu_native_plan(x, MCA_COLL_GPU_ARGS_ALLGATHER == a->kind ? "allgather" : "allgatherv",
                           gpu_plan_allgatherv(&x->plan, rank, n,
                                               in_place ? NULL : (const char *) a->sbuf + sg.lb,
                                               (char *) a->rbuf, len, displ));
}

static int gpu_native_alltoall(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                               int blocking, mca_coll_gpu_native_t *x)
{
    const int in_place = MPI_IN_PLACE == a->sbuf, n = ompi_comm_size(m->comm);
    mca_coll_gpu_geom_t sg = { 0 }, rg;
    size_t sl[GPU_MAX_PEERS], sd[GPU_MAX_PEERS], rl[GPU_MAX_PEERS], rd[GPU_MAX_PEERS];
    if (n > GPU_MAX_PEERS || !mca_coll_gpu_geom(a->rdtype, &rg) ||
        (!in_place && !mca_coll_gpu_geom(a->sdtype, &sg)) ||
        !gpu_bytes(&rg, n, a->rcounts, a->rcount, a->rdispls, rl, rd) ||
        (!in_place && !gpu_bytes(&sg, n, a->scounts, a->scount, a->sdispls, sl, sd))) {
        return 0;
    }
    const char *sbuf = in_place ? NULL : (const char *) a->sbuf;
    if (!in_place && NULL == sbuf) {
        /* NULL is the plan's in place: a rank that sends nothing from NULL
         * names its receive buffer (nothing is read); MPI_BOTTOM stages */
        for (int q = 0; q < n; ++q) {
            if (sl[q] > 0) {
                return 0;
            }
        }
        sbuf = a->rbuf;
    }
    if (!gpu_native_plan(x, MCA_COLL_GPU_ARGS_ALLTOALL == a->kind ? "alltoall" : "alltoallv",
                         gpu_plan_alltoallv(&x->plan, ompi_comm_rank(m->comm), n, sbuf, sl, sd,
                                            (char *) a->rbuf, rl, rd))) {
        return 0;
    }
    /* alltoall: every pair has the same length, known everywhere */
    x->plan.ll_bytes = MCA_COLL_GPU_ARGS_ALLTOALL == a->kind ? rl[0] : 0;
    return 1;
}

static int gpu_native_gather(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                             int blocking, mca_coll_gpu_native_t *x)
{
    const int rank = ompi_comm_rank(m->comm), n = ompi_comm_size(m->comm);
    const int is_root = rank == a->root, in_place = is_root && MPI_IN_PLACE == a->sbuf;
    mca_coll_gpu_geom_t sg = { 0 }, rg = { 0 };
    size_t len[GPU_MAX_PEERS] = { 0 }, displ[GPU_MAX_PEERS] = { 0 };
    if (n > GPU_MAX_PEERS || (is_root && !mca_coll_gpu_geom(a->rdtype, &rg)) ||
        (!in_place && !mca_coll_gpu_geom(a->sdtype, &sg)) ||
        (is_root && !gpu_bytes(&rg, n, a->rcounts, a->rcount, a->rdispls, len, displ))) {
        return 0;
    }
    const size_t slen = in_place ? 0 : (size_t) a->scount * sg.size;
    if (!gpu_native_plan(x, MCA_COLL_GPU_ARGS_GATHER == a->kind ? "gather" : "gatherv",
                         gpu_plan_gatherv(&x->plan, rank, n, a->root,
                                          in_place ? NULL : (const char *) a->sbuf + sg.lb, slen,
                                          (char *) a->rbuf, len, displ))) {
        return 0;
    }
    /* gather: one length everywhere.  The kind says which, never the
     * arrays: a gatherv's are NULL where MPI ignores them (non-roots) */
    x->plan.ll_bytes = MCA_COLL_GPU_ARGS_GATHERV == a->kind ? 0 : is_root ? len[0] : slen;
    return 1;
}

static int gpu_native_scatter(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                              int blocking, mca_coll_gpu_native_t *x)
{
    const int rank = ompi_comm_rank(m->comm), n = ompi_comm_size(m->comm);
    const int is_root = rank == a->root, in_place = is_root && MPI_IN_PLACE == a->rbuf;
    mca_coll_gpu_geom_t sg = { 0 }, rg = { 0 };
    size_t len[GPU_MAX_PEERS] = { 0 }, displ[GPU_MAX_PEERS] = { 0 };
    if (n > GPU_MAX_PEERS || (is_root && !mca_coll_gpu_geom(a->sdtype, &sg)) ||
        (!in_place && !mca_coll_gpu_geom(a->rdtype, &rg)) ||
        (is_root && !gpu_bytes(&sg, n, a->scounts, a->scount, a->sdispls, len, displ))) {
        return 0;
    }
    const size_t rlen = in_place ? 0 : (size_t) a->rcount * rg.size;
    if (!gpu_native_plan(x, MCA_COLL_GPU_ARGS_SCATTER == a->kind ? "scatter" : "scatterv",
                         gpu_plan_scatterv(&x->plan, rank, n, a->root, (const char *) a->sbuf, len,
                                           displ, in_place ? NULL : (char *) a->rbuf + rg.lb,
                                           rlen))) {
        return 0;
    }
    x->plan.ll_bytes = MCA_COLL_GPU_ARGS_SCATTERV == a->kind ? 0 : is_root ? len[0] : rlen;
    return 1;
}

static int gpu_native_reduce(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                             int blocking, mca_coll_gpu_native_t *x)
{
    const int rank = ompi_comm_rank(m->comm), n = ompi_comm_size(m->comm);
    const int in_place = rank == a->root && MPI_IN_PLACE == a->sbuf;
    if (!mca_coll_gpu_map(a->rdtype, a->op, &x->call.dt, &x->call.op)) {
        return gpu_native_wide(m, a, GPU_WIDE_REDUCE, "reduce", x);
    }
    const size_t bytes = (size_t) a->rcount * gpu_dtype_size(x->call.dt);
    const char *sbuf = in_place ? NULL : (const char *) a->sbuf;
    const gpu_reduce_way_t way = gpu_topo_reduce_way(
        n, bytes, blocking, gpu_engine_paced(m->engine),
        gpu_engine_reduce_ts_takes(m->engine, bytes, x->call.op, x->call.dt, blocking),
        mca_coll_gpu_component.reduce_twoshot_min, mca_coll_gpu_component.reduce_chain_min);
    if (GPU_REDUCE_CHAIN == way) {
        return gpu_native_plan(x, "reduce",
                               gpu_plan_reduce_chain(&x->plan, rank, n, a->root, sbuf,
                                                     (char *) a->rbuf, bytes, gpu_chain_order(m)));
    }
    if (GPU_REDUCE_TWOSHOT == way) {
        /* MPI leaves a non-root's recvbuf undefined (even NULL): the kernel
         * never writes out there */
        x->call.what = "reduce";
        x->call.plan = NULL;
        x->call.in = in_place ? a->rbuf : a->sbuf;
        x->call.out = rank == a->root ? a->rbuf : NULL;
        x->call.count = (size_t) a->rcount;
        x->call.root = a->root;
        return 1;
    }
    return gpu_native_plan(x, "reduce",
                           gpu_plan_reduce(&x->plan, rank, n, a->root, sbuf, (char *) a->rbuf,
                                           bytes));
}

static int gpu_native_scan(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a, int blocking,
                           mca_coll_gpu_native_t *x)
{
    const int exclusive = MCA_COLL_GPU_ARGS_EXSCAN == a->kind;
    if (!mca_coll_gpu_map(a->rdtype, a->op, &x->call.dt, &x->call.op)) {
        return gpu_native_wide(m, a, exclusive ? GPU_WIDE_EXSCAN : GPU_WIDE_SCAN,
                               exclusive ? "exscan" : "scan", x);
    }
    return gpu_native_plan(x, exclusive ? "exscan" : "scan",
                           gpu_plan_scan(&x->plan, ompi_comm_rank(m->comm),
                                         ompi_comm_size(m->comm),
                                         MPI_IN_PLACE == a->sbuf ? NULL : (const char *) a->sbuf,
                                         (char *) a->rbuf,
                                         (size_t) a->rcount * gpu_dtype_size(x->call.dt),
                                         exclusive));
}

/* in-place reduce_scatter stages: its output overlaps input peers still
 * read (not the wide one's: its output is written after the movement) */
static int gpu_native_reduce_scatter(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                                     int blocking, mca_coll_gpu_native_t *x)
{
    const int n = ompi_comm_size(m->comm);
    size_t len[GPU_MAX_PEERS], displ[GPU_MAX_PEERS], off = 0;
    if (!mca_coll_gpu_map(a->rdtype, a->op, &x->call.dt, &x->call.op)) {
        return gpu_native_wide(m, a, GPU_WIDE_REDUCE_SCATTER,
                               MCA_COLL_GPU_ARGS_REDUCE_SCATTER_BLOCK == a->kind
                                   ? "reduce_scatter_block" : "reduce_scatter", x);
    }
    if (MPI_IN_PLACE == a->sbuf || n > GPU_MAX_PEERS) {
        return 0;
    }
    for (int q = 0; q < n; ++q) {
        const int c = NULL != a->rcounts ? a->rcounts[q] : a->rcount;
        if (c < 0) {
            return 0;
        }
        len[q] = (size_t) c * gpu_dtype_size(x->call.dt);
        displ[q] = off;
        off += len[q];
    }
    return gpu_native_plan(x, MCA_COLL_GPU_ARGS_REDUCE_SCATTER_BLOCK == a->kind
                                  ? "reduce_scatter_block" : "reduce_scatter",
                           gpu_plan_reduce_scatterv(&x->plan, ompi_comm_rank(m->comm), n,
                                                    (const char *) a->sbuf, (char *) a->rbuf,
                                                    len, displ));
}

/* The hierarchy's part across nodes (coll_gpu_hier.c serves these forms) */
static int gpu_hier_ok(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a)
{
    mca_coll_gpu_geom_t g;
    gpu_dtype_t dt;
    gpu_op_t op;
    switch (a->kind) {
    case MCA_COLL_GPU_ARGS_ALLREDUCE:
        return mca_coll_gpu_map(a->rdtype, a->op, &dt, &op);
    case MCA_COLL_GPU_ARGS_REDUCE:
        return mca_coll_gpu_map(a->rdtype, a->op, &dt, &op);
    case MCA_COLL_GPU_ARGS_REDUCE_SCATTER_BLOCK:
        return mca_coll_gpu_map(a->rdtype, a->op, &dt, &op);
    case MCA_COLL_GPU_ARGS_BCAST:
        return mca_coll_gpu_geom(a->rdtype, &g);
    case MCA_COLL_GPU_ARGS_ALLGATHER:
        return mca_coll_gpu_geom(a->rdtype, &g) &&
               (MPI_IN_PLACE == a->sbuf || (a->sdtype == a->rdtype && a->scount == a->rcount));
    case MCA_COLL_GPU_ARGS_GATHER:
    case MCA_COLL_GPU_ARGS_GATHERV:
    case MCA_COLL_GPU_ARGS_SCATTER:
    case MCA_COLL_GPU_ARGS_SCATTERV:
    case MCA_COLL_GPU_ARGS_ALLGATHERV:
    case MCA_COLL_GPU_ARGS_ALLTOALL:
    case MCA_COLL_GPU_ARGS_ALLTOALLV:
    case MCA_COLL_GPU_ARGS_REDUCE_SCATTER:
    case MCA_COLL_GPU_ARGS_SCAN:
    case MCA_COLL_GPU_ARGS_EXSCAN:
    case MCA_COLL_GPU_ARGS_ALLTOALLW:
        return mca_coll_gpu_hier_v_ok(m, a);
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHER:
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHERV:
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALL:
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLV:
    case MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLW:
        return mca_coll_gpu_hier_nbr_ok(m, a);
    default:
        return 0;
    }
}

/* A barrier moves no memory, so no rank asks its kind: across nodes it
 * takes the hierarchy where a device call has set that up (every rank
 * alike), the previous module's elsewhere and when nonblocking. */
static int gpu_host_barrier(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                            ompi_request_t **req)
{
    int ran = 0, ret = MPI_SUCCESS;
    if (NULL == req && !m->one_node) {
        ret = mca_coll_gpu_hier_barrier(m, &ran);
    }
    return ran ? ret : mca_coll_gpu_host_run(m, a, req);
}

/* ---- the table ------------------------------------------------------------ */

static const mca_coll_gpu_coll_ops_t gpu_colls[] = {
    [MCA_COLL_GPU_ARGS_ALLGATHER] = { .name = "allgather", .mem = gpu_mem_allgather,
        .native = gpu_native_allgather, .hier = MCA_COLL_GPU_HIER_ALLGATHER,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_ALLGATHERV] = { .name = "allgatherv", .mem = gpu_mem_allgather,
        .native = gpu_native_allgather, .hier = MCA_COLL_GPU_HIER_ALLGATHERV,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_ALLREDUCE] = { .name = "allreduce", .mem = gpu_mem_allreduce,
        .native = gpu_native_allreduce, .hier = MCA_COLL_GPU_HIER_ALLREDUCE,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_ALLTOALL] = { .name = "alltoall", .mem = gpu_mem_alltoall,
        .native = gpu_native_alltoall, .hier = MCA_COLL_GPU_HIER_ALLTOALL,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_ALLTOALLV] = { .name = "alltoallv", .mem = gpu_mem_alltoall,
        .native = gpu_native_alltoall, .hier = MCA_COLL_GPU_HIER_ALLTOALLV,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_BCAST] = { .name = "bcast", .mem = gpu_mem_bcast,
        .native = gpu_native_bcast, .hier = MCA_COLL_GPU_HIER_BCAST,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_EXSCAN] = { .name = "exscan", .mem = gpu_mem_allreduce,
        .native = gpu_native_scan, .hier = MCA_COLL_GPU_HIER_EXSCAN,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_GATHER] = { .name = "gather", .mem = gpu_mem_gather,
        .native = gpu_native_gather, .hier = MCA_COLL_GPU_HIER_GATHER,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_GATHERV] = { .name = "gatherv", .mem = gpu_mem_gather,
        .native = gpu_native_gather, .hier = MCA_COLL_GPU_HIER_GATHERV,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_REDUCE] = { .name = "reduce", .mem = gpu_mem_reduce,
        .native = gpu_native_reduce, .hier = MCA_COLL_GPU_HIER_REDUCE,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_REDUCE_SCATTER] = { .name = "reduce_scatter", .mem = gpu_mem_reduce_scatter,
        .native = gpu_native_reduce_scatter, .hier = MCA_COLL_GPU_HIER_REDUCE_SCATTER,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_REDUCE_SCATTER_BLOCK] = {
        .name = "reduce_scatter_block", .mem = gpu_mem_reduce_scatter,
        .native = gpu_native_reduce_scatter, .hier = MCA_COLL_GPU_HIER_REDUCE_SCATTER_BLOCK,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_SCAN] = { .name = "scan", .mem = gpu_mem_allreduce,
        .native = gpu_native_scan, .hier = MCA_COLL_GPU_HIER_SCAN,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_SCATTER] = { .name = "scatter", .mem = gpu_mem_scatter,
        .native = gpu_native_scatter, .hier = MCA_COLL_GPU_HIER_SCATTER,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_SCATTERV] = { .name = "scatterv", .mem = gpu_mem_scatter,
        .native = gpu_native_scatter, .hier = MCA_COLL_GPU_HIER_SCATTERV,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_ALLTOALLW] = { .name = "alltoallw", .mem = gpu_mem_alltoallw,
        .native = NULL, .hier = MCA_COLL_GPU_HIER_ALLTOALLW,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_BARRIER] = { .name = "barrier", .mem = gpu_mem_nothing,
        .native = NULL, .hier = -1,
        .host = gpu_host_barrier, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHER] = {
        .name = "neighbor_allgather", .mem = gpu_mem_neighbor,
        .native = mca_coll_gpu_native_neighbor, .hier = MCA_COLL_GPU_HIER_NEIGHBOR,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHERV] = {
        .name = "neighbor_allgatherv", .mem = gpu_mem_neighbor,
        .native = mca_coll_gpu_native_neighbor, .hier = MCA_COLL_GPU_HIER_NEIGHBOR,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALL] = { .name = "neighbor_alltoall", .mem = gpu_mem_neighbor,
        .native = mca_coll_gpu_native_neighbor, .hier = MCA_COLL_GPU_HIER_NEIGHBOR,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLV] = {
        .name = "neighbor_alltoallv", .mem = gpu_mem_neighbor,
        .native = mca_coll_gpu_native_neighbor, .hier = MCA_COLL_GPU_HIER_NEIGHBOR,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
    [MCA_COLL_GPU_ARGS_NEIGHBOR_ALLTOALLW] = {
        .name = "neighbor_alltoallw", .mem = gpu_mem_alltoallw,
        .native = NULL, .hier = MCA_COLL_GPU_HIER_NEIGHBOR,
        .host = mca_coll_gpu_host_run, .staged = mca_coll_gpu_staged_run },
};

int mca_coll_gpu_coll_eligible(mca_coll_gpu_module_t *m, const mca_coll_gpu_coll_ops_t *ops,
                                const mca_coll_gpu_args_t *a, int mem, int blocking,
                                mca_coll_gpu_native_t *x)
{
    if (!(mem & GPU_MEM_ALL)) {
        return 0;   /* a buffer of this rank's part is not device memory */
    }
    if (!m->one_node) {
        /* across nodes the hierarchy; a nonblocking call only where its
         * thread runs it (coll_gpu_hier_nb.c) */
        return (blocking || mca_coll_gpu_hier_nb_takes(m, ops->hier)) && ops->hier >= 0 &&
               gpu_hier_ok(m, a);
    }
    return NULL != ops->native && ops->native(m, a, blocking, x);
}

const mca_coll_gpu_coll_ops_t *mca_coll_gpu_coll_ops(mca_coll_gpu_args_kind_t kind)
{
    if ((unsigned) kind >= sizeof(gpu_colls) / sizeof(gpu_colls[0]) ||
        NULL == gpu_colls[kind].name) {
        return NULL;
    }
    return &gpu_colls[kind];
}
