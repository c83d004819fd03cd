/*
 * Stand-in for an Open MPI header that its devel packages do not install
 * (Debian's 4.1, a 5.0 prefix install), but that ompi/op/op.h includes:
 * op/gpu needs op.h for struct ompi_op_t (the per-type function tables),
 * and op.h's inline ompi_op_reduce uses only OMPI_INT_2_FINT from here.
 * A cast is right for every Fortran INTEGER size (the real header's
 * equal-size case is the identity).  The search path puts this folder
 * after Open MPI's own, so an installed original wins.
 */
#ifndef OMPI_FORTRAN_BASE_FINT_2_INT_H
#define OMPI_FORTRAN_BASE_FINT_2_INT_H

#include "ompi_config.h"

#define OMPI_INT_2_FINT(a) ((MPI_Fint) (a))
#define OMPI_FINT_2_INT(a) ((int) (a))

#endif /* OMPI_FORTRAN_BASE_FINT_2_INT_H */
