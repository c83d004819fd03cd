/*
 * Memory kinds across nodes: how the device ranks of a communicator that
 * spans nodes learn what the ranks of the other nodes passed for a call.
 *
 * Why: the kind board (util/gpu_kind_board.h) is shared memory, so it
 * tells a rank only what the ranks of its own node posted.  A node whose
 * ranks all passed host memory runs Open MPI's algorithm and never enters
 * ours, so nothing of ours would tell the device ranks elsewhere: they
 * would set up the hierarchy (a collective exchange the host ranks never
 * join) or run it, and wait until coll_gpu_timeout.
 *
 * How: every rank posts on its board as on one node (one store per call,
 * host ranks too) and keeps one receive posted on each such communicator
 * for queries (tag GPU_KNET_TAG_QUERY, any source; its completion callback
 * only raises a flag and the component's progress answers).  A device rank
 * at a blocking call first reads its own node's posts (shared memory),
 * then sends one query per other node to that node's first rank (its
 * speaker), naming the call and the node's ranks; the speaker answers
 * (GPU_KNET_TAG_REPLY) once all of them posted it: all device, or some
 * host.  So every device rank knows every rank's kind for the call before
 * it sets anything up or moves data, and all choose alike: our path when
 * all are device, else the staged path on host copies, which runs Open
 * MPI's algorithm as the host ranks do.  The speaker needs no state of its
 * own for this: the query names the ranks and the board has the posts.
 *
 * Costs: a host-buffer call posts as on one node, nothing more; a blocking
 * device call on such a communicator pays one round trip to the other
 * nodes (the queries run in parallel); a nonblocking one the hierarchy can
 * run (coll_gpu_hier_nb.c) asks the same from progress while it is queued
 * (mca_coll_gpu_knet_round_*, one round at a time per communicator), the
 * other nonblocking ones ask nothing and stage on every rank alike.  A
 * speaker answers from inside whatever MPI call it is in
 * (Open MPI's progress), so a node whose ranks left a rooted collective
 * early answers at their next MPI call at the latest; if they freed the
 * communicator meanwhile, it stays alive for our receive among the last
 * GPU_KNET_GHOSTS freed ones, and the board keeps a freed slot's posts
 * (gpu_kind_slot_find_last).
 *
 * Tags -8 and -7 sit above Open MPI's collective tags (-10 and down, see
 * coll_gpu_xg.c for -9): no user message and no collective of Open MPI
 * can match them, on ob1 or on pml/ucx's 24-bit tags.
 */
#ifndef MCA_COLL_GPU_KIND_NET_H
#define MCA_COLL_GPU_KIND_NET_H

#include <stddef.h>
#include <stdint.h>

#include "coll_gpu.h"

#include "ompi/request/request.h"

#define GPU_KNET_TAG_QUERY (-8)
#define GPU_KNET_TAG_REPLY (-7)
#define GPU_KNET_MAGIC 0x6b6e657431000000ull   /* "knet1", low bytes: member count */
#define GPU_KNET_STATUS_Q (1ull << 16)         /* "who has not posted it?", answered at once */
#define GPU_KNET_MEMBERS 64                    /* of one node in one query */
#define GPU_KNET_GHOSTS 32
#define GPU_KNET_SENDS 64
#define GPU_KNET_HELD 8                        /* queries kept per communicator */

enum { GPU_KNET_DEVICE = 1, GPU_KNET_HOST = 0, GPU_KNET_ERROR = -1, GPU_KNET_STATUS = 2 };

/* a query: magic | nmem, communicator key, call, then the node's ranks */
typedef struct {
    uint64_t head, key, call;
    int32_t rank[GPU_KNET_MEMBERS];
} gpu_knet_query_t;

/* an answer: the same key and call, and the verdict; to a status query,
 * the first of the node's ranks that has not posted the call (-1: none) */
typedef struct {
    uint64_t head, key, call;
    int64_t verdict, missing;
} gpu_knet_reply_t;

struct mca_coll_gpu_knet {
    mca_coll_gpu_module_t *m;
    ompi_request_t *rreq;          /* the posted query receive */
    gpu_knet_query_t q;            /* what it receives */
    struct {                       /* queries waiting for their node's posts */
        gpu_knet_query_t q;
        int src;
    } hq[GPU_KNET_HELD];
    int nheld;
    int freed;                     /* the communicator was freed: a ghost */
    int closing;                   /* the receive is being cancelled */
    /* queries answered for the newest call asked about: a speaker whose
     * call goes to the hierarchy first answers every remote rank (the
     * hierarchy's waits do not progress MPI) */
    volatile uint64_t acall;
    volatile int acount;
    /* the querier's side, made at the first blocking device call */
    int mapped, nnodes, mynode;
    int *node_of, *speaker;
    int *local, nlocal;            /* my node's ranks but me */
    int nremote;                   /* the other nodes' ranks */
    gpu_knet_query_t *out;         /* one query per node */
    gpu_knet_reply_t *in;          /* one answer per node */
    ompi_request_t **ireq;
    uint64_t rcall;                /* the round out: its call, answers due, verdict so far */
    int rleft, rverdict;
    /* who has not posted a call, asked when a wait timed out (names the
     * rank in the error): one round at a time per communicator */
    gpu_knet_query_t *sout;
    gpu_knet_reply_t *sin;
    ompi_request_t **sreq;
    int asking, ask_missing;
    uint64_t ask_call;
    double ask_until;
};

typedef struct mca_coll_gpu_knet gpu_knet_t;

/* ompi_request_free and ompi_request_wait leave MPI_REQUEST_NULL behind,
 * not NULL, and this file reads NULL as "nothing out": a slot left at the
 * null request looked like a fresh answer at the next scan, so one node's
 * answer was counted twice and a rank decided before every node had
 * spoken (across 4 nodes: one rank took the GPU path, the others staged) */
static inline void gpu_knet_release(ompi_request_t **r, int wait)
{
    if (wait) {
        (void) ompi_request_wait(r, MPI_STATUS_IGNORE);
    } else {
        (void) ompi_request_free(r);
    }
    *r = NULL;
}

/* what a query carries: the head and its node's ranks only */
static inline size_t gpu_knet_qbytes(const gpu_knet_query_t *q)
{
    return offsetof(gpu_knet_query_t, rank) + sizeof(int32_t) * (size_t) (q->head & 0xffff);
}

#endif
