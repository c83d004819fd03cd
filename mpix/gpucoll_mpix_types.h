/*
 * How libgpucoll gets MPICH's half-precision handles (MPIX_C_FLOAT16,
 * MPIX_BFLOAT16) from coll/gpu: the component makes them (it alone can
 * make Open MPI accept them with MPI_SUM, ompi_coll_gpu/coll_gpu_half.c)
 * and exports the function below under GPUCOLL_MPIX_HALF_SYMBOL; the
 * library finds it with dlsym, as it finds the MPIX table
 * (gpucoll_mpix_abi.h), and without it makes plain named 2-byte types
 * that move data but that Open MPI refuses to reduce.
 */
#ifndef GPUCOLL_MPIX_TYPES_H
#define GPUCOLL_MPIX_TYPES_H

#include <mpi.h>

#define GPUCOLL_MPIX_HALF_SYMBOL "mca_coll_gpu_half_type_v1"

/* which: 0 binary16 ("MPIX_C_FLOAT16"), 1 bfloat16 ("MPIX_BFLOAT16") */
enum { GPUCOLL_MPIX_HALF_F16 = 0, GPUCOLL_MPIX_HALF_BF16 = 1 };

/* Made at the first call, the same handle afterwards; MPI_SUCCESS or an
 * MPI error code (then *out is MPI_DATATYPE_NULL).  Thread-safe; needs
 * MPI initialized. */
typedef int (*gpucoll_mpix_half_fn_t)(int which, MPI_Datatype *out);

#endif /* GPUCOLL_MPIX_TYPES_H */
