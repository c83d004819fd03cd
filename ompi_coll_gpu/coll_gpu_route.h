/*
 * Routing: one place decides where a collective call runs.
 *
 * Every entry point (coll_gpu_entry.c) only packs its MPI arguments into
 * the call's argument struct and hands it to mca_coll_gpu_route.  The
 * route asks the collective's row (coll_gpu_colls.c, one per argument
 * kind) three local questions:
 *
 *   mem     does any block this rank's call touches lie in device memory?
 *           (no: the previous module runs the call as it would without us)
 *   native  can the GPU path take this rank's part: predefined type and
 *           op, contiguous datatypes, a plan for the engine?  (The answer
 *           depends on this rank's own arguments: MPI lets ranks pass
 *           different datatypes with matching type signatures, zero
 *           counts, NULL buffers.)
 *   staged  the fallback that is always right: host copies around the
 *           previous module.
 *
 * "Device memory and the GPU path can take my part" is what a rank posts
 * on the kind board (coll_gpu_kind.c) for the call, so every rank takes
 * the GPU path only when every rank can, and otherwise every device rank
 * stages: the ranks always meet in the same algorithm.
 *
 * The GPU paths form a table (gpu_route_paths in coll_gpu_route.c): the
 * hierarchy across nodes, the engine on one node.  A path's run may
 * decline (*ran 0) only for reasons every rank shares (the communicator's
 * setup, the engine's areas), after which the call stages.
 *
 * A queued or persistent call is started again from its argument struct
 * with an issue record (mca_coll_gpu_issue_t): whether its kind was
 * already posted and decided, and the queue entry it replaces.  Nothing
 * travels through fields of the module.
 */
#ifndef MCA_COLL_GPU_ROUTE_H
#define MCA_COLL_GPU_ROUTE_H

#include "coll_gpu.h"
#include "engine/gpu_plan.h"

/* A call started again (NULL for a call as the application made it). */
typedef struct mca_coll_gpu_issue_t {
    int force;          /* the kind decided for it: 1 all device, 0 stage, -1 its own */
    struct mca_coll_gpu_request_t *behind;   /* the queue entry it takes the place of */
} mca_coll_gpu_issue_t;

/* What the native question builds for the run. */
typedef struct {
    mca_coll_gpu_call_t call;
    gpu_xchg_plan_t plan;
    int rounds;                 /* 2: a second engine call with plan2 (blocking) */
    gpu_xchg_plan_t plan2;
    gpu_wide_t wide;            /* call.wide points here */
} mca_coll_gpu_native_t;

/* What a row's mem answers.  Bit 0: some block is device memory (the
 * call is ours); bit 1: every buffer MPI says this rank uses is device
 * memory holding its blocks (the GPU path may take it).  The GPU path's
 * questions start from this answer: the route asks it once per call. */
enum { GPU_MEM_ANY = 1, GPU_MEM_ALL = 2 };
/* Alone: this rank moves nothing (every side NULL or of count 0).  The
 * route makes it a device call where the communicator has set up its GPU
 * path (it follows its peers' device calls instead of making every rank
 * stage, as a gatherv non-root that contributes nothing did), and a host
 * call elsewhere (a host program never sets that path up). */
enum { GPU_MEM_EMPTY = 4 };

/* One collective's row. */
typedef struct {
    const char *name;
    int (*mem)(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a);
    /* NULL: no GPU path.  Asked only where mem said GPU_MEM_ALL.  Fills n
     * (n->call.args is set by the route). */
    int (*native)(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a, int blocking,
                  mca_coll_gpu_native_t *n);
    int hier;           /* mca_coll_gpu_hier_kind_t served across nodes, or -1 */
    int (*host)(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a, ompi_request_t **req);
    int (*staged)(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a, ompi_request_t **req);
} mca_coll_gpu_coll_ops_t;

/* The row of an argument kind (NULL: none) */
const mca_coll_gpu_coll_ops_t *mca_coll_gpu_coll_ops(mca_coll_gpu_args_kind_t kind);

/* This rank's part can take the communicator's GPU path (one node: the
 * engine, x filled; across nodes: the hierarchy) */
int mca_coll_gpu_coll_eligible(mca_coll_gpu_module_t *m, const mca_coll_gpu_coll_ops_t *ops,
                                const mca_coll_gpu_args_t *a, int mem, int blocking,
                                mca_coll_gpu_native_t *x);
/* The previous module's call, and the staged one (coll_gpu_colls_run.c) */
int mca_coll_gpu_host_run(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                          ompi_request_t **req);
int mca_coll_gpu_staged_run(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                            ompi_request_t **req);

/* The neighborhood collectives' GPU path (coll_gpu_nbr.c) */
int mca_coll_gpu_native_neighbor(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                                 int blocking, mca_coll_gpu_native_t *x);

/* Open MPI's nonblocking neighborhood collectives pair the blocks of a
 * periodic dimension of extent 1 or 2 by list position, not by direction
 * (open-mpi/ompi#14416): 1 for such a topology, whose blocking calls then
 * stage through the blocking form only. */
int mca_coll_gpu_nbr_nb_pairs_wrong(ompi_communicator_t *comm);

/* An intercommunicator's call: staged (coll_gpu_inter.c) */
int mca_coll_gpu_inter_run(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                           ompi_request_t **req);

/* Route one call: req NULL for a blocking call. */
int mca_coll_gpu_route(mca_coll_gpu_module_t *m, const mca_coll_gpu_args_t *a,
                       ompi_request_t **req, const mca_coll_gpu_issue_t *issue);

/* 1 when count elements of dt at buf (+ disp bytes) touch device memory */
int mca_coll_gpu_buf_device(const void *buf, size_t count, struct ompi_datatype_t *dt,
                            ptrdiff_t disp);

#endif /* MCA_COLL_GPU_ROUTE_H */
