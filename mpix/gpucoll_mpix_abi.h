/*
 * The one call libgpucoll (the MPIX_ stream extension, mpix/) makes into
 * coll/gpu: run a collective on host buffers through the communicator's
 * previous coll module, with coll/gpu's bounded wait.  coll/gpu exports
 * the table below under GPUCOLL_MPIX_ABI_SYMBOL; the library finds it with
 * dlsym (Open MPI loads components into the global namespace) and says
 * that coll/gpu is not loaded when it is absent.  The version grows when
 * fields are added at the end.
 */
#ifndef GPUCOLL_MPIX_ABI_H
#define GPUCOLL_MPIX_ABI_H

#include <mpi.h>

#define GPUCOLL_MPIX_ABI_SYMBOL "mca_coll_gpu_mpix_v1"
#define GPUCOLL_MPIX_ABI_VERSION 1

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

typedef struct {
    int version;
    /* Host buffers only, never a CUDA call (it runs on CUDA's host-function
     * thread): the previous module's nonblocking form, progressed until done
     * or coll_gpu_timeout; an MPI error code (class coll/gpu on timeout). */
    int (*host_collective)(const gpucoll_mpix_call_t *call);
} gpucoll_mpix_abi_t;

#endif /* GPUCOLL_MPIX_ABI_H */
