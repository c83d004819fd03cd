/*
 * MPICH's collective enqueue entry points (and the large-count forms):
 * each packs its arguments for gc_enqueue (gpucoll_mpix.c); its
 * point-to-point ones, which start a message (gc_p2p_start,
 * gpucoll_mpix_p2p.c) and wait for it; and the
 * reductions of pair types that gc_enqueue runs on coll/gpu's stream
 * kernels (gc_kred_enqueue, at the end).
 */
#include <stdio.h>
#include <stdlib.h>

#include "mpix/gpucoll_mpix_int.h"

/* ---- MPICH's entry points -------------------------------------------------------- */

static int gc_one(gpucoll_mpix_coll_t coll, const char *fn, const void *sendbuf, void *recvbuf,
                  MPI_Count count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm)
{
    const gc_args_t a = { .coll = coll, .sendbuf = sendbuf, .recvbuf = recvbuf, .scount = count,
                          .rcount = count, .stype = type, .rtype = type, .op = op, .root = root,
                          .comm = comm, .fn = fn };
    return gc_enqueue(&a);
}

static int gc_two(gpucoll_mpix_coll_t coll, const char *fn, const void *sendbuf, MPI_Count scount,
                  MPI_Datatype stype, void *recvbuf, MPI_Count rcount, MPI_Datatype rtype,
                  MPI_Comm comm)
{
    const gc_args_t a = { .coll = coll, .sendbuf = sendbuf, .recvbuf = recvbuf, .scount = scount,
                          .rcount = rcount, .stype = stype, .rtype = rtype, .op = MPI_OP_NULL,
                          .root = 0, .comm = comm, .fn = fn };
    return gc_enqueue(&a);
}

int MPIX_Allreduce_enqueue_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return gc_one(GPUCOLL_MPIX_ALLREDUCE, "MPIX_Allreduce_enqueue", sendbuf, recvbuf, count,
                  datatype, op, 0, comm);
}

int MPIX_Allreduce_enqueue(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                           MPI_Op op, MPI_Comm comm)
{
    return MPIX_Allreduce_enqueue_c(sendbuf, recvbuf, count, datatype, op, comm);
}

int MPIX_Bcast_enqueue_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root,
                         MPI_Comm comm)
{
    return gc_one(GPUCOLL_MPIX_BCAST, "MPIX_Bcast_enqueue", NULL, buffer, count, datatype,
                  MPI_OP_NULL, root, comm);
}

int MPIX_Bcast_enqueue(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    return MPIX_Bcast_enqueue_c(buffer, count, datatype, root, comm);
}

int MPIX_Reduce_enqueue_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                          MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm)
{
    return gc_one(GPUCOLL_MPIX_REDUCE, "MPIX_Reduce_enqueue", sendbuf, recvbuf, count, datatype,
                  op, root, comm);
}

int MPIX_Reduce_enqueue(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, int root, MPI_Comm comm)
{
    return MPIX_Reduce_enqueue_c(sendbuf, recvbuf, count, datatype, op, root, comm);
}

int MPIX_Allgather_enqueue_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                             MPI_Comm comm)
{
    return gc_two(GPUCOLL_MPIX_ALLGATHER, "MPIX_Allgather_enqueue", sendbuf, sendcount, sendtype,
                  recvbuf, recvcount, recvtype, comm);
}

int MPIX_Allgather_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return MPIX_Allgather_enqueue_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    comm);
}

int MPIX_Reduce_scatter_block_enqueue_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    const gc_args_t a = { .coll = GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK,
                          .sendbuf = sendbuf, .recvbuf = recvbuf, .scount = 0,
                          .rcount = recvcount, .stype = datatype, .rtype = datatype, .op = op,
                          .root = 0, .comm = comm, .fn = "MPIX_Reduce_scatter_block_enqueue" };
    return gc_enqueue(&a);
}

int MPIX_Reduce_scatter_block_enqueue(const void *sendbuf, void *recvbuf, int recvcount,
                                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return MPIX_Reduce_scatter_block_enqueue_c(sendbuf, recvbuf, recvcount, datatype, op, comm);
}

int MPIX_Alltoall_enqueue_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                            void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                            MPI_Comm comm)
{
    return gc_two(GPUCOLL_MPIX_ALLTOALL, "MPIX_Alltoall_enqueue", sendbuf, sendcount, sendtype,
                  recvbuf, recvcount, recvtype, comm);
}

int MPIX_Alltoall_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return MPIX_Alltoall_enqueue_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                   comm);
}

/* ---- MPICH's point-to-point entry points ------------------------------------------ */

int MPIX_Isend_enqueue_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                         int tag, MPI_Comm comm, MPI_Request *request)
{
    return gc_p2p_start(1, "MPIX_Isend_enqueue", (void *) buf, count, datatype, dest, tag, comm,
                        request);
}

int MPIX_Isend_enqueue(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                       MPI_Comm comm, MPI_Request *request)
{
    return MPIX_Isend_enqueue_c(buf, count, datatype, dest, tag, comm, request);
}

int MPIX_Irecv_enqueue_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                         MPI_Comm comm, MPI_Request *request)
{
    return gc_p2p_start(0, "MPIX_Irecv_enqueue", buf, count, datatype, source, tag, comm,
                        request);
}

int MPIX_Irecv_enqueue(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                       MPI_Comm comm, MPI_Request *request)
{
    return MPIX_Irecv_enqueue_c(buf, count, datatype, source, tag, comm, request);
}

int MPIX_Send_enqueue_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                        int tag, MPI_Comm comm)
{
    MPI_Request r;
    int ret = MPIX_Isend_enqueue_c(buf, count, datatype, dest, tag, comm, &r);
    return MPI_SUCCESS == ret ? MPIX_Wait_enqueue(&r, MPI_STATUS_IGNORE) : ret;
}

int MPIX_Send_enqueue(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                      MPI_Comm comm)
{
    return MPIX_Send_enqueue_c(buf, count, datatype, dest, tag, comm);
}

int MPIX_Recv_enqueue_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                        MPI_Comm comm, MPI_Status *status)
{
    MPI_Request r;
    int ret = MPIX_Irecv_enqueue_c(buf, count, datatype, source, tag, comm, &r);
    return MPI_SUCCESS == ret ? MPIX_Wait_enqueue(&r, status) : ret;
}

int MPIX_Recv_enqueue(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                      MPI_Comm comm, MPI_Status *status)
{
    return MPIX_Recv_enqueue_c(buf, count, datatype, source, tag, comm, status);
}

/* ---- pair-type reductions on coll/gpu's stream kernels ---------------------------- */

/* A captured call's scratch, or one the eager calls outgrew: kept until
 * the communicator goes (a graph may replay the call; queued eager calls
 * may still use an old one). */
typedef struct gc_kred_area {
    struct gc_kred_area *next;
    void *p;
} gc_kred_area_t;

struct gc_kred {
    void *eager;               /* the eager calls' scratch: the stream runs them in order */
    size_t eager_bytes;
    gc_kred_area_t *kept;
};

static int gc_kred_pair(MPI_Datatype t, MPI_Op op)
{
    return (MPI_MINLOC == op || MPI_MAXLOC == op) &&
           (MPI_SHORT_INT == t || MPI_2INT == t || MPI_FLOAT_INT == t || MPI_DOUBLE_INT == t ||
            MPI_LONG_INT == t || MPI_LONG_DOUBLE_INT == t);
}

/* device memory on the current device, also while the application captures */
static void *gc_kred_alloc(size_t bytes)
{
    enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    void *p = NULL;
    (void) cudaThreadExchangeStreamCaptureMode(&mode);
    if (cudaSuccess != cudaMalloc(&p, bytes)) {
        (void) cudaGetLastError();
        p = NULL;
    }
    (void) cudaThreadExchangeStreamCaptureMode(&mode);
    return p;
}

static int gc_kred_keep(struct gc_kred *k, void *p)
{
    gc_kred_area_t *a = malloc(sizeof(*a));
    if (NULL == a) {
        return 0;
    }
    a->p = p;
    a->next = k->kept;
    k->kept = a;
    return 1;
}

/* scratch of bytes for one call */
static void *gc_kred_scratch(gc_comm_t *c, size_t bytes, int captured)
{
    struct gc_kred **kp = gc_comm_kred(c), *k = *kp;
    void *p;

    if (NULL == k && NULL == (k = *kp = calloc(1, sizeof(*k)))) {
        return NULL;
    }
    if (!captured && k->eager_bytes >= bytes) {
        return k->eager;
    }
    if (!captured && 2 * k->eager_bytes > bytes) {
        bytes = 2 * k->eager_bytes;
    }
    p = gc_kred_alloc(bytes);
    if (NULL == p) {
        return NULL;
    }
    if (captured || NULL != k->eager) {
        if (!gc_kred_keep(k, captured ? p : k->eager)) {
            (void) cudaFree(p);
            return NULL;
        }
    }
    if (!captured) {
        k->eager = p;
        k->eager_bytes = bytes;
    }
    return p;
}

void gc_kred_release(gc_comm_t *c)
{
    struct gc_kred *k = *gc_comm_kred(c);
    if (NULL == k) {
        return;
    }
    while (NULL != k->kept) {
        gc_kred_area_t *a = k->kept;
        k->kept = a->next;
        (void) cudaFree(a->p);
        free(a);
    }
    if (NULL != k->eager) {
        (void) cudaFree(k->eager);
    }
    free(k);
    *gc_comm_kred(c) = NULL;
}

/* MPIX_Reduce_enqueue and MPIX_Reduce_scatter_block_enqueue of a pair type
 * with MPI_MINLOC or MPI_MAXLOC as coll/gpu's stream-ordered allreduce,
 * which takes the pair types: into the root's buffer (elsewhere a device
 * scratch), or, for a reduce_scatter_block, into a scratch of every block
 * (in place: the receive buffer) and then this rank's block copied device
 * to device; kernels and copy on the stream, ordered and captured like the
 * allreduce, instead of the host transport's copies through pinned memory
 * and the progress thread.  Every rank computes the whole result: for a
 * reduction that is the cost of an allreduce, below a round trip through
 * host memory.  GPUCOLL_MPIX_NOT_TAKEN (the same on every rank) where the
 * kernels do not take the call: the caller goes on to the host path. */
int gc_kred_enqueue(gc_comm_t *c, const gc_args_t *a)
{
    static int said[2];
    const int rsb = GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK == a->coll;
    const MPI_Datatype t = rsb ? a->rtype : a->stype;
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    cudaStream_t st = gc_comm_stream(c)->cuda;
    MPI_Aint lb, ext, tlb, text;
    MPI_Count total;
    int rank, n, ret;
    const char *env;
    char *out;

    if (!(rsb || GPUCOLL_MPIX_REDUCE == a->coll) || !gc_kred_pair(t, a->op) ||
        NULL == gc_abi() || gc_abi()->version < 2 ||
        MPI_SUCCESS != MPI_Type_get_extent(t, &lb, &ext) ||
        MPI_SUCCESS != MPI_Type_get_true_extent(t, &tlb, &text) ||
        cudaSuccess != cudaStreamIsCapturing(st, &cap)) {
        return GPUCOLL_MPIX_NOT_TAKEN;
    }
    MPI_Comm_rank(a->comm, &rank);
    MPI_Comm_size(a->comm, &n);
    total = rsb ? a->rcount * n : a->scount;
    if (rsb ? MPI_IN_PLACE == a->sendbuf : rank == a->root) {
        out = a->recvbuf;
    } else if (MPI_IN_PLACE == a->sendbuf) {
        return GPUCOLL_MPIX_NOT_TAKEN;   /* not MPI: the host path says so */
    } else {
        out = total > 0 ? gc_kred_scratch(c, (size_t) total * (size_t) ext,
                                          cudaStreamCaptureStatusActive == cap) : NULL;
        if (total > 0 && NULL == out) {
            return gc_fail(MPI_ERR_NO_MEM, a->fn, "no device memory for the scratch of a "
                           "reduction on the stream's kernels");
        }
    }
    ret = gc_abi()->stream_allreduce(a->sendbuf, out, total, t, a->op, a->comm, st);
    if (MPI_SUCCESS != ret) {
        return ret;   /* GPUCOLL_MPIX_NOT_TAKEN included */
    }
    if (rsb && a->rcount > 0 && (char *) a->recvbuf != out + (size_t) rank * a->rcount * ext &&
        cudaSuccess != cudaMemcpyAsync(a->recvbuf, out + (size_t) rank * a->rcount * ext,
                                       (size_t) (a->rcount - 1) * ext + (size_t) (tlb + text),
                                       cudaMemcpyDeviceToDevice, st)) {
        return gc_fail(MPI_ERR_OTHER, a->fn, cudaGetErrorString(cudaGetLastError()));
    }
    if (NULL != (env = getenv("GPUCOLL_STREAM_VERBOSE")) && atoi(env) > 0 && 0 == rank &&
        !__atomic_exchange_n(&said[rsb], 1, __ATOMIC_RELAXED)) {
        fprintf(stderr, "gpucoll: %s of a pair type: coll/gpu's stream kernels\n", a->fn);
    }
    return MPI_SUCCESS;
}
