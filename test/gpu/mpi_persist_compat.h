/*
 * Persistent collectives in the tests: Open MPI 4.1 has them as the MPIX_
 * extension (mpi-ext.h), Open MPI 5.0 as MPI-4's MPI_*_init.  The tests
 * use the MPIX_ names; where the library has MPI-4's (Open MPI 5.0 has them
 * while it still reports MPI 3.1) they map to the standard ones.
 */
#ifndef GPUCOLL_TEST_MPI_PERSIST_COMPAT_H
#define GPUCOLL_TEST_MPI_PERSIST_COMPAT_H

#include <mpi.h>

#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define MPIX_Allreduce_init MPI_Allreduce_init
#define MPIX_Bcast_init MPI_Bcast_init
#define MPIX_Reduce_init MPI_Reduce_init
#define MPIX_Allgather_init MPI_Allgather_init
#define MPIX_Alltoall_init MPI_Alltoall_init
#define MPIX_Reduce_scatter_block_init MPI_Reduce_scatter_block_init
#define MPIX_Scan_init MPI_Scan_init
#define MPIX_Gather_init MPI_Gather_init
#define MPIX_Barrier_init MPI_Barrier_init
#define MPIX_Alltoallw_init MPI_Alltoallw_init
#define MPIX_Neighbor_allgather_init MPI_Neighbor_allgather_init
#define MPIX_Neighbor_alltoall_init MPI_Neighbor_alltoall_init
#define MPIX_Neighbor_alltoallw_init MPI_Neighbor_alltoallw_init
#define MPIX_Allgatherv_init MPI_Allgatherv_init
#define MPIX_Alltoallv_init MPI_Alltoallv_init
#define MPIX_Exscan_init MPI_Exscan_init
#define MPIX_Gatherv_init MPI_Gatherv_init
#define MPIX_Reduce_scatter_init MPI_Reduce_scatter_init
#define MPIX_Scatter_init MPI_Scatter_init
#define MPIX_Scatterv_init MPI_Scatterv_init
#define MPIX_Neighbor_allgatherv_init MPI_Neighbor_allgatherv_init
#define MPIX_Neighbor_alltoallv_init MPI_Neighbor_alltoallv_init
#else
#include <mpi-ext.h>
#endif

#endif
