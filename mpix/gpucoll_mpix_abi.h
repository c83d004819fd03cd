/*
 * The calls libgpucoll (the MPIX_ stream extension, mpix/) makes into
 * coll/gpu: run a collective on host buffers through the communicator's
 * previous coll module, with coll/gpu's bounded wait (version 1); set up a
 * stream communicator's GPU state and run a small allreduce as one kernel
 * on the stream (version 2); larger allreduces and alltoalls as kernels
 * on the stream (version 3); what the library's own host transport needs
 * to reduce without calling Open MPI from CUDA's host-function thread
 * (version 4); coll/gpu's network transport for that host transport where
 * a stream communicator spans nodes (version 5).  coll/gpu exports
 * the table below under GPUCOLL_MPIX_ABI_SYMBOL; the library finds it with
 * dlsym (Open MPI loads components into the global namespace) and says
 * that coll/gpu is not loaded when it is absent.  The version grows when
 * fields are added at the end.
 */
#ifndef GPUCOLL_MPIX_ABI_H
#define GPUCOLL_MPIX_ABI_H

#include <mpi.h>

#define GPUCOLL_MPIX_ABI_SYMBOL "mca_coll_gpu_mpix_v1"
#define GPUCOLL_MPIX_ABI_VERSION 5
/* stream_allreduce's answer when the call is not one its kernel takes */
#define GPUCOLL_MPIX_NOT_TAKEN (-1)
/* net_test's answer while the request runs */
#define GPUCOLL_MPIX_NET_PENDING (-2)

typedef enum {
    GPUCOLL_MPIX_ALLREDUCE = 0,
    GPUCOLL_MPIX_BCAST,
    GPUCOLL_MPIX_REDUCE,
    GPUCOLL_MPIX_ALLGATHER,
    GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK,
    GPUCOLL_MPIX_ALLTOALL,
    GPUCOLL_MPIX_NCOLLS
} gpucoll_mpix_coll_t;

/* one collective, MPI's arguments (counts fit an int here) */
typedef struct {
    gpucoll_mpix_coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    int scount, rcount;       /* count of the one-buffer calls is scount */
    MPI_Datatype stype, rtype;
    MPI_Op op;
    int root;
    MPI_Comm comm;
} gpucoll_mpix_call_t;

/* How the host transport folds count elements of a call's datatype:
 * resolved on the application's thread (host_fold), applied on any thread
 * (fold_apply) without a call into Open MPI.  Opaque to the library. */
typedef struct {
    int user;                 /* 1: the application's MPI_User_function */
    int gop, gdt;             /* else: this project's functors (gpu_op_t, gpu_dtype_t) */
    size_t per;               /* functor elements per element of the call's datatype */
    void (*fn)(void *, void *, int *, MPI_Datatype *);
    MPI_Datatype type;        /* what fn is given */
} gpucoll_mpix_fold_t;

typedef struct {
    int version;
    /* Host buffers only, never a CUDA call (it runs on CUDA's host-function
     * thread): the previous module's nonblocking form, progressed until done
     * or coll_gpu_timeout; an MPI error code (class coll/gpu on timeout). */
    int (*host_collective)(const gpucoll_mpix_call_t *call);
    /* Version 2, on the application's thread. */
    /* Collective, from MPIX_Stream_comm_create on a CUDA stream: sets up
     * comm's GPU state now, with the stream-ordered allreduce's region, so
     * that no enqueue waits for the peers or allocates (a call being
     * captured into a graph may not).  MPI_SUCCESS where coll/gpu does not
     * serve comm or cannot set it up (its calls then take the host path). */
    int (*stream_comm_prepare)(MPI_Comm comm);
    /* MPIX_Allreduce_enqueue as one kernel on cuda_stream (a cudaStream_t)
     * that orders and captures like any kernel: MPI_SUCCESS once launched;
     * GPUCOLL_MPIX_NOT_TAKEN when the call or the communicator is not one it
     * takes (the same answer on every rank of comm for the same call: the
     * library then uses the host path); an MPI error code (class coll/gpu)
     * when an earlier launch on comm timed out waiting for a peer. */
    int (*stream_allreduce)(const void *sendbuf, void *recvbuf, MPI_Count count,
                            MPI_Datatype type, MPI_Op op, MPI_Comm comm, void *cuda_stream);
    /* Version 3: MPIX_Alltoall_enqueue as kernels on cuda_stream, the same
     * answers as stream_allreduce. */
    int (*stream_alltoall)(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                           void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                           MPI_Comm comm, void *cuda_stream);
    /* Version 4.  On the application's thread: how op folds type (the
     * functors for predefined ops on predefined types, pair types and types
     * made of one predefined type; the application's function for its own
     * ops); MPI_ERR_OP where neither applies (a Fortran or C++ op, a
     * predefined op the functors lack).  On any thread, no Open MPI call:
     * inout[i] = in[i] op inout[i] for count elements, in MPI's order. */
    int (*host_fold)(MPI_Datatype type, MPI_Op op, gpucoll_mpix_fold_t *fold);
    void (*fold_apply)(const gpucoll_mpix_fold_t *fold, const void *in, void *inout,
                       size_t count);
    /* coll_gpu_timeout in seconds: the bound of every wait of the library */
    double (*timeout_s)(void);
    /* Version 5: tagged messages between the ranks of a stream communicator
     * over coll/gpu's UCX transport, on endpoints and a worker of their own
     * (libgpucoll's progress thread drives them alone).  net_open is
     * collective over comm, on the application's thread: MPI_SUCCESS and
     * *net NULL where UCX could not start on every rank (the same answer on
     * every rank).  The rest run on any one thread, never call Open MPI
     * and never wait: isend/irecv post host memory of exactly len bytes
     * (the receive's length must match the send's) and set *req; net_test
     * makes one pass of progress where asked, then answers 1 while *req
     * runs, else MPI_SUCCESS or an MPI error (logged, naming the peer) with
     * *req released and set to NULL.  net_close on the application's
     * thread, once no request is outstanding. */
    int (*net_open)(MPI_Comm comm, void **net);
    void (*net_close)(void *net);
    int (*net_isend)(void *net, int peer, const void *buf, size_t len, unsigned tag, void **req);
    int (*net_irecv)(void *net, int peer, void *buf, size_t len, unsigned tag, void **req);
    int (*net_test)(void *net, void **req, int progress);
    void (*net_cancel)(void *net, void **req);
} gpucoll_mpix_abi_t;

#endif /* GPUCOLL_MPIX_ABI_H */
