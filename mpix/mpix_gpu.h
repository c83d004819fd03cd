/*
 * mpix_gpu.h: MPICH's stream-ordered extension for Open MPI with coll/gpu.
 *
 * The names and semantics are MPICH 4.x's, so that code written for it
 * builds unchanged against this header and -lgpucoll (pkg-config gpucoll):
 *
 *   MPI_Info info; MPIX_Stream s; MPI_Comm sc;
 *   MPI_Info_create(&info);
 *   MPI_Info_set(info, "type", "cudaStream_t");
 *   MPIX_Info_set_hex(info, "value", &cuda_stream, sizeof(cuda_stream));
 *   MPIX_Stream_create(info, &s);
 *   MPIX_Stream_comm_create(MPI_COMM_WORLD, s, &sc);
 *   MPIX_Allreduce_enqueue(d_in, d_out, n, MPI_FLOAT, MPI_SUM, sc);   // returns at once
 *
 * An enqueued collective runs in the stream's order: after the work queued
 * on the stream before it, and work queued after it sees its result.  It
 * can be captured into a CUDA graph.  A stream made from MPI_INFO_NULL is
 * the calling thread itself: its collectives run at once.  GPU streams
 * need coll/gpu loaded in Open MPI (the calls say so otherwise), and any
 * thread level (plain MPI_Init): what no kernel on the stream takes runs
 * in a host function over the library's own shared-memory transport
 * between the ranks of a node, which never calls Open MPI.  Only stream
 * communicators across nodes, and datatypes with gaps, need
 * MPI_THREAD_MULTIPLE (the calls say so).  On a stream communicator use
 * the enqueue forms (or synchronize the stream before any other
 * collective on it).
 *
 * Point to point (MPICH's too): MPIX_Isend_enqueue / MPIX_Irecv_enqueue
 * return a request that MPIX_Wait_enqueue / MPIX_Waitall_enqueue (only)
 * complete in the stream's order; peers on the same node; sends and
 * receives of a communicator progress together in any of its waits;
 * receives match in the sender's order by tag (MPI_ANY_TAG, not
 * MPI_ANY_SOURCE).  MPIX_Comm_get_stream and MPIX_Stream_progress are
 * MPICH's; its multiplex stream communicators (MPIX_Stream_send and
 * friends) are for threads, not GPU streams, and are not provided.
 */
#ifndef MPIX_GPU_H
#define MPIX_GPU_H

#include <mpi.h>

/* Half precision, MPICH's names: MPIX_C_FLOAT16 (IEEE binary16) and
 * MPIX_BFLOAT16, for every collective; SUM, PROD, MIN, MAX reduce (device
 * buffers on the GPU, fp32 accumulation).  Open MPI 5.0's own
 * MPIX_C_FLOAT16 (mpi-ext.h, its shortfloat extension) is used where it
 * exists.  Otherwise the names are handles made at their first use after
 * MPI_Init (MPI_DATATYPE_NULL before it), so they cannot initialize
 * static variables; never free them.  docs/using.md has the details. */
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#ifdef __cplusplus
extern "C"
#endif
MPI_Datatype gpucoll_mpix_half_type(int which);
#ifndef MPIX_C_FLOAT16
#define MPIX_C_FLOAT16 (gpucoll_mpix_half_type(0))
#endif
#ifndef MPIX_BFLOAT16
#define MPIX_BFLOAT16 (gpucoll_mpix_half_type(1))
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define GPUCOLL_MPIX_STREAMS 1   /* this header's extension is present */

typedef struct gpucoll_mpix_stream *MPIX_Stream;
#define MPIX_STREAM_NULL ((MPIX_Stream) 0)

int MPIX_Info_set_hex(MPI_Info info, const char *key, const void *value, int value_size);
int MPIX_Stream_create(MPI_Info info, MPIX_Stream *stream);
int MPIX_Stream_free(MPIX_Stream *stream);
int MPIX_Stream_comm_create(MPI_Comm comm, MPIX_Stream stream, MPI_Comm *newcomm);

int MPIX_Allreduce_enqueue(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                           MPI_Op op, MPI_Comm comm);
int MPIX_Bcast_enqueue(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int MPIX_Reduce_enqueue(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, int root, MPI_Comm comm);
int MPIX_Allgather_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
int MPIX_Reduce_scatter_block_enqueue(const void *sendbuf, void *recvbuf, int recvcount,
                                      MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int MPIX_Alltoall_enqueue(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

int MPIX_Comm_get_stream(MPI_Comm comm, int idx, MPIX_Stream *stream);
int MPIX_Stream_progress(MPIX_Stream stream);

/* MPICH's GPU query: *is_supported is 1 for MPIX_GPU_SUPPORT_CUDA where
 * coll/gpu is loaded and the CUDA runtime sees a device (device buffers are
 * taken by the collectives and the enqueue calls), else 0; 0 for the
 * others (Open MPI's own MPIX_Query_cuda_support, mpi-ext.h, says whether
 * Open MPI itself was built with CUDA) */
#ifndef MPIX_GPU_SUPPORT_CUDA
#define MPIX_GPU_SUPPORT_CUDA (0)
#define MPIX_GPU_SUPPORT_ZE (1)
#define MPIX_GPU_SUPPORT_HIP (2)
#endif
int MPIX_GPU_query_support(int gpu_type, int *is_supported);

int MPIX_Send_enqueue(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                      MPI_Comm comm);
int MPIX_Recv_enqueue(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                      MPI_Comm comm, MPI_Status *status);
int MPIX_Isend_enqueue(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                       MPI_Comm comm, MPI_Request *request);
int MPIX_Irecv_enqueue(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                       MPI_Comm comm, MPI_Request *request);
int MPIX_Wait_enqueue(MPI_Request *request, MPI_Status *status);
int MPIX_Waitall_enqueue(int count, MPI_Request array_of_requests[],
                         MPI_Status *array_of_statuses);

/* large-count forms */
int MPIX_Send_enqueue_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                        MPI_Comm comm);
int MPIX_Recv_enqueue_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                        MPI_Comm comm, MPI_Status *status);
int MPIX_Isend_enqueue_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                         int tag, MPI_Comm comm, MPI_Request *request);
int MPIX_Irecv_enqueue_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                         MPI_Comm comm, MPI_Request *request);
int MPIX_Allreduce_enqueue_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int MPIX_Bcast_enqueue_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root,
                         MPI_Comm comm);
int MPIX_Reduce_enqueue_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                          MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm);
int MPIX_Allgather_enqueue_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                             MPI_Comm comm);
int MPIX_Reduce_scatter_block_enqueue_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
int MPIX_Alltoall_enqueue_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                            void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                            MPI_Comm comm);

#ifdef __cplusplus
}
#endif

#endif /* MPIX_GPU_H */
