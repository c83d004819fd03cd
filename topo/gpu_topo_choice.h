/*
 * The choice per size: which kernel a blocking device collective takes on
 * one node, one rank per GPU, with how many blocks and in which protocol.
 *
 * The component's size limits live here, not in the component: the
 * automatic ones depend on the communicator's shape (its rank count), and
 * three readers must agree on them -- the component, which fills the
 * engine's parameters from them where the user left a parameter
 * automatic; the cost model (gpu_topo_plan.c), which prices the kernel the
 * engine will run; and gpucoll-topo, which prints, before any run, the
 * kernel, protocol and block count each collective and size will get.
 * The choice is pure arithmetic on the limits, in the engine's order of
 * preference (the resident kernel, the reduce's ways, the put path, the
 * exchange kernel), and names each kernel as the timing file does
 * (coll_gpu_timing_file), so a GPU run checks the printed plan against
 * what ran (test/topo/check_choice.py).
 *
 * The limits are measured crossovers (each with its run under docs/results),
 * not minima of the model's curves: each of the model's classes is fitted
 * on the sizes its kernel runs (test/topo/calibrate_choice.py), so it does
 * not price a kernel where it never ran (docs/tuning.md, "The plan").
 */
#ifndef GPU_TOPO_CHOICE_H
#define GPU_TOPO_CHOICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The component's fixed defaults (MCA parameters of the same names) */
#define GPU_TOPO_DEF_ONESHOT_MAX ((size_t) 256 * 1024)
#define GPU_TOPO_DEF_PUT_MIN ((size_t) 1024 * 1024)
#define GPU_TOPO_DEF_XCHG_NBLOCKS 128
#define GPU_TOPO_DEF_NBLOCKS 128
#define GPU_TOPO_DEF_ONESHOT_BLOCKS 8
#define GPU_TOPO_DEF_PERSIST_BLOCKS 64
#define GPU_TOPO_DEF_REDUCE_TWOSHOT_MIN ((size_t) 1024 * 1024)
#define GPU_TOPO_DEF_REDUCE_CHAIN_MIN ((size_t) 64 * 1024 * 1024)
#define GPU_TOPO_DEF_BCAST_CHAIN_MIN ((size_t) 64 * 1024 * 1024)

typedef struct {
    size_t persist_max;         /* the resident kernel's largest pair (0: none) */
    size_t persist_reduce_max;  /* ... that it reduces */
    size_t oneshot_max;         /* launched allreduce: one-shot up to here */
    size_t put_min;             /* exchanges from this largest pair: the put path (0: never) */
    int nblocks;                /* two-shot blocks, at most */
    int oneshot_blocks;
    int persist_blocks;         /* the resident kernel's */
    int xchg_nblocks;           /* exchange kernel and put copies */
    int put_fold_nblocks;       /* a reduction's put fold (0: the exchange kernel instead) */
    size_t reduce_twoshot_min;  /* reduce among > 2 ranks: two-shot to the root from here */
    size_t reduce_chain_min;    /* ... and a chain from here */
    size_t bcast_chain_min;     /* bcast among > 2 ranks: a chain from here */
} gpu_topo_limits_t;

/* The defaults for a communicator of nranks ranks on one node. */
void gpu_topo_limits_default(int nranks, gpu_topo_limits_t *l);
/* Only the limits that depend on the shape, for a caller with its own
 * fixed ones (the MCA parameters): the resident kernel's two limits before
 * the memory caps, and the fold's block count (from l->xchg_nblocks). */
size_t gpu_topo_auto_persist_max(int nranks);
size_t gpu_topo_auto_persist_reduce_max(int nranks);
int gpu_topo_auto_put_fold_nblocks(int nranks, int xchg_nblocks);

/*
 * Which way a device-buffer reduce of bytes goes among n ranks of one
 * node: along a chain to the root from chain_min; from ts_min (0: never)
 * below chain_min the two-shot kernel's reduce-scatter with every shard
 * gathered at the root (ts: the engine takes it,
 * gpu_engine_reduce_ts_takes); else every rank straight to the root (the
 * resident kernel, the put fold or the exchange kernel).  The first two
 * need more than 2 ranks (at 2 the direct way moves the same bytes), a
 * blocking call and no host-paced rounds (paced), which move a relay one
 * hop per round.  The same answer on every rank: every argument is.
 */
typedef enum {
    GPU_REDUCE_DIRECT = 0,
    GPU_REDUCE_TWOSHOT = 1,
    GPU_REDUCE_CHAIN = 2
} gpu_reduce_way_t;
gpu_reduce_way_t gpu_topo_reduce_way(int n, size_t bytes, int blocking, int paced, int ts,
                                     size_t ts_min, size_t chain_min);

typedef enum {
    GPU_CHOICE_ALLREDUCE = 0,
    GPU_CHOICE_BCAST,
    GPU_CHOICE_REDUCE,
    GPU_CHOICE_ALLGATHER,
    GPU_CHOICE_REDUCE_SCATTER,
    GPU_CHOICE_ALLTOALL,
    GPU_CHOICE_NCOLLS
} gpu_choice_coll_t;

const char *gpu_topo_choice_coll_name(gpu_choice_coll_t c);

typedef struct {
    const char *label;          /* the kernel, as the timing file names it */
    const char *proto;          /* "LL" (lines of 8 data bytes in 16) or "simple" */
    int nblocks;                /* its thread blocks (two-shot: at most) */
    size_t pair;                /* the largest pair, bytes: what the limits compare */
} gpu_topo_choice_t;

/* The kernel a blocking call of bytes (nccl-tests' size: allgather the
 * output, reduce_scatter and alltoall the input) takes among nranks >= 2
 * ranks, one per GPU, the application idle between calls. */
void gpu_topo_choose(const gpu_topo_limits_t *l, int nranks, gpu_choice_coll_t coll,
                     size_t bytes, gpu_topo_choice_t *c);

#ifdef __cplusplus
}
#endif

#endif /* GPU_TOPO_CHOICE_H */
