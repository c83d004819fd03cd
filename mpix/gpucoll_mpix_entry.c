/*
 * MPICH's collective enqueue entry points (and the large-count forms):
 * each packs its arguments for gc_enqueue (gpucoll_mpix.c).
 */
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
