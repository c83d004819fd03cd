/*
 * The route of every collective call (coll_gpu_route.h says why): the
 * memory kind and the GPU path's eligibility of this rank's arguments,
 * agreed across ranks on the kind board, then the previous module, a GPU
 * path of the table below, or the staged fallback.
 */
#include "ompi_config.h"

#include "coll_gpu.h"
#include "coll_gpu_route.h"

#include "ompi/constants.h"

typedef struct {
    mca_coll_gpu_module_t *m;
    const mca_coll_gpu_coll_ops_t *ops;
    const mca_coll_gpu_args_t *a;
    ompi_request_t **req;
    const mca_coll_gpu_issue_t *issue;
    int x_final;                /* x was built on a ready engine: no second build */
    mca_coll_gpu_native_t x;    /* not zeroed: two exchange plans, written by the builder */
} gpu_route_t;

/* A GPU path: whether it serves this communicator, and its run (*ran 0:
 * it declined for a reason every rank shares; the call stages). */
typedef struct {
    const char *name;
    int (*serves)(const gpu_route_t *r);
    int (*run)(gpu_route_t *r, int *ran);
} gpu_route_path_t;

static int gpu_hier_serves(const gpu_route_t *r)
{
    return !r->m->one_node && r->ops->hier >= 0;
}

static int gpu_hier_path(gpu_route_t *r, int *ran)
{
    const mca_coll_gpu_args_t *a = r->a;
    const mca_coll_gpu_hier_call_t hc = { .kind = (mca_coll_gpu_hier_kind_t) r->ops->hier,
                                          .sbuf = a->sbuf, .rbuf = a->rbuf, .count = a->rcount,
                                          .dtype = a->rdtype, .scount = a->scount,
                                          .sdtype = a->sdtype, .op = a->op, .root = a->root,
                                          .args = a,
                                          .behind = NULL != r->issue ? r->issue->behind : NULL };
    return mca_coll_gpu_hier_run(r->m, &hc, r->req, ran);
}

static int gpu_native_serves(const gpu_route_t *r)
{
    return r->m->one_node && NULL != r->ops->native;
}

/* Ranks time-slicing one GPU without MPS: a small blocking allreduce
 * stages (fewer GPU operations, each waiting for a context switch),
 * through the nonblocking form so that the wait stays bounded (a peer
 * whose copy failed never joins the host algorithm). */
static int gpu_shared_allreduce(gpu_route_t *r, int *ran)
{
    mca_coll_gpu_module_t *m = r->m;
    const mca_coll_gpu_args_t *a = r->a;
    ompi_request_t *inner = NULL;
    int ret, go_dev = 1;

    *ran = 0;
    if (NULL != r->req || MCA_COLL_GPU_ARGS_ALLREDUCE != a->kind ||
        MCA_COLL_GPU_ALGO_AUTO != mca_coll_gpu_component.allreduce_algorithm ||
        r->x.call.count * gpu_dtype_size(r->x.call.dt) > mca_coll_gpu_component.shared_staged_max ||
        !gpu_engine_shared_nomps(m->engine) || gpu_engine_direct(m->engine)) {
        return MPI_SUCCESS;
    }
    *ran = 1;
    ret = mca_coll_gpu_kind_settle(m, "allreduce", &go_dev);
    if (MPI_SUCCESS != ret || !go_dev) {
        /* a host peer: the blocking host algorithm, as it runs */
        return MPI_SUCCESS != ret ? ret : r->ops->staged(m, a, NULL);
    }
    ret = r->ops->staged(m, a, &inner);
    return MPI_SUCCESS != ret ? ret
                              : mca_coll_gpu_staged_wait(&inner, m->comm->c_name, "allreduce");
}

static int gpu_native_path(gpu_route_t *r, int *ran)
{
    mca_coll_gpu_module_t *m = r->m;
    int ret;

    *ran = 0;
    if (!mca_coll_gpu_native_ready(m, r->ops->name, r->req, &ret)) {
        *ran = MPI_SUCCESS != ret;
        return ret;
    }
    /* the plan again where the engine was not there when it was built (a
     * bcast's chain depends on its pacing and the topology's ring) */
    if (!r->x_final) {
        r->x.rounds = 1;
        r->x.call.wide = NULL;
        r->x.call.root = -1;   /* only the two-shot reduce's builder sets a root */
        if (!r->ops->native(m, r->a, NULL == r->req, &r->x)) {
            return MPI_SUCCESS;
        }
    }
    r->x.call.args = r->a;
    r->x.call.behind = NULL != r->issue ? r->issue->behind : NULL;
    ret = gpu_shared_allreduce(r, ran);
    if (*ran) {
        return ret;
    }
    ret = mca_coll_gpu_native_run(m, &r->x.call, r->req, ran);
    if (MPI_SUCCESS == ret && *ran && 2 == r->x.rounds) {
        /* the second round of a neighbourhood (blocking only) */
        r->x.call.plan = &r->x.plan2;
        ret = mca_coll_gpu_native_run(m, &r->x.call, NULL, ran);
        *ran = 1;   /* the first round has moved data: no staging now */
    }
    return ret;
}

/* The fallback.  A blocking call where every rank passed device memory
 * (all of them stage, none runs the host algorithm directly) runs the
 * host library's nonblocking form under a bounded wait: a rank that never
 * comes is named after coll_gpu_timeout instead of holding the others. */
static int gpu_route_staged(gpu_route_t *r)
{
    ompi_request_t *inner = NULL;
    int all_mem = 0, ret;

    if (NULL != r->req) {
        return r->ops->staged(r->m, r->a, r->req);
    }
    if (r->a->kind >= MCA_COLL_GPU_ARGS_NEIGHBOR_ALLGATHER &&
        mca_coll_gpu_nbr_nb_pairs_wrong(r->m->comm)) {
        /* the nonblocking form would pair this topology's blocks wrongly */
        return r->ops->staged(r->m, r->a, NULL);
    }
    ret = mca_coll_gpu_kind_all_mem(r->m, r->ops->name, &all_mem);
    if (MPI_SUCCESS != ret || !all_mem) {
        return MPI_SUCCESS != ret ? ret : r->ops->staged(r->m, r->a, NULL);
    }
    ret = r->ops->staged(r->m, r->a, &inner);
    return MPI_SUCCESS != ret ? ret : mca_coll_gpu_staged_wait(&inner, r->m->comm->c_name,
                                                               r->ops->name);
}

/* Across nodes the hierarchy; on one node the engine. */
static const gpu_route_path_t gpu_route_paths[] = {
    { .name = "hierarchical", .serves = gpu_hier_serves, .run = gpu_hier_path },
    { .name = "native", .serves = gpu_native_serves, .run = gpu_native_path },
};

static int gpu_route_call(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                          ompi_request_t **req, const mca_coll_gpu_issue_t *issue)
{
    /* fields set one by one: an initializer would zero the two plans of x
     * at every call, host-buffer calls included */
    gpu_route_t r;
    int mem, eligible = 0, go_dev, ret;

    r.m = m;
    r.ops = mca_coll_gpu_coll_ops(a->kind);
    r.a = a;
    r.req = req;
    r.issue = issue;

    if (NULL == r.ops) {
        return MPI_ERR_INTERN;
    }
    if (OMPI_COMM_IS_INTER(m->comm)) {
        return mca_coll_gpu_inter_run(m, a, req);
    }
    mem = r.ops->mem(m, a);
    if (GPU_MEM_EMPTY == mem) {
        mem = MCA_COLL_GPU_BOOT_READY == m->boot || MCA_COLL_GPU_BOOT_HIER == m->boot
                  ? GPU_MEM_ANY | GPU_MEM_ALL : 0;
    }
    r.x.rounds = 1;
    r.x.call.wide = NULL;   /* only the wide reductions' builder sets it */
    r.x.call.root = -1;     /* only the two-shot reduce's */
    r.x_final = MCA_COLL_GPU_BOOT_READY == m->boot && NULL != m->engine;
    if (mem) {
        eligible = mca_coll_gpu_coll_eligible(m, r.ops, a, mem, NULL == req, &r.x);
    }
    /* what every rank posts: device memory the GPU path can take, device
     * memory it cannot, or host memory */
    ret = mca_coll_gpu_kind_agree(m, mem && eligible, mem && !eligible, req, r.ops->name, a,
                                  issue, &go_dev);
    if (MPI_SUCCESS != ret || go_dev < 0) {
        return ret;   /* an error, or queued */
    }
    if (!mem) {
        mca_coll_gpu_host_note(m, a->sbuf, a->rbuf, req);
        return r.ops->host(m, a, req);
    }
    if (go_dev) {
        for (size_t i = 0; i < sizeof(gpu_route_paths) / sizeof(gpu_route_paths[0]); ++i) {
            const gpu_route_path_t *p = &gpu_route_paths[i];
            int ran = 0;
            if (!p->serves(&r)) {
                continue;
            }
            ret = p->run(&r, &ran);
            if (ran) {
                return ret;
            }
        }
    }
    return gpu_route_staged(&r);
}

int mca_coll_gpu_route(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                       ompi_request_t **req, const mca_coll_gpu_issue_t *issue)
{
    const int ret = gpu_route_call(m, a, req, issue);
    /* the pool's lease a blocking call voted at its post (coll_gpu_kind.c)
     * ends with the call, whichever path it took */
    if (NULL == req && NULL != m->engine) {
        gpu_engine_pool_unvote(m->engine);
    }
    return ret;
}

int mca_coll_gpu_args_issue(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a, int force,
                            struct mca_coll_gpu_request_t *behind, ompi_request_t **req)
{
    const mca_coll_gpu_issue_t issue = { .force = force, .behind = behind };
    return mca_coll_gpu_route(m, a, req, &issue);
}
