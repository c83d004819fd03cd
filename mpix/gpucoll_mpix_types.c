/*
 * MPIX_C_FLOAT16 and MPIX_BFLOAT16 for programs written for MPICH
 * (mpix_gpu.h turns each name into a call of gpucoll_mpix_half_type):
 * coll/gpu's handles where it is loaded (gpucoll_mpix_types.h says why
 * they come from there), else plain named 2-byte types made here, which
 * bcast, gather, alltoall and the like move but which Open MPI refuses to
 * reduce (MPI_ERR_OP, as for any derived type).  Made once, at the first
 * use after MPI_Init, and kept to the end.
 */
#include <dlfcn.h>
#include <pthread.h>

#include "mpix/gpucoll_mpix_types.h"
#include "mpix/mpix_gpu.h"

static pthread_mutex_t gc_half_lock = PTHREAD_MUTEX_INITIALIZER;
static MPI_Datatype gc_half[2] = { MPI_DATATYPE_NULL, MPI_DATATYPE_NULL };

static MPI_Datatype gc_half_plain(int which)
{
    static const char *const names[2] = { "MPIX_C_FLOAT16", "MPIX_BFLOAT16" };
    MPI_Datatype t = MPI_DATATYPE_NULL;
    if (MPI_SUCCESS != MPI_Type_contiguous(1, MPI_UINT16_T, &t) ||
        MPI_SUCCESS != MPI_Type_commit(&t) || MPI_SUCCESS != MPI_Type_set_name(t, names[which])) {
        return MPI_DATATYPE_NULL;
    }
    return t;
}

MPI_Datatype gpucoll_mpix_half_type(int which)
{
    int init = 0, fini = 0;
    MPI_Datatype t;

    if (which < 0 || which > 1) {
        return MPI_DATATYPE_NULL;
    }
    /* MPI calls before MPI_Init or after MPI_Finalize are erroneous: the
     * handle is MPI_DATATYPE_NULL then, which MPI reports at its use */
    if (MPI_SUCCESS != MPI_Initialized(&init) || !init || MPI_SUCCESS != MPI_Finalized(&fini) ||
        fini) {
        return MPI_DATATYPE_NULL;
    }
    pthread_mutex_lock(&gc_half_lock);
    if (MPI_DATATYPE_NULL == gc_half[which]) {
        gpucoll_mpix_half_fn_t make =
            (gpucoll_mpix_half_fn_t) dlsym(RTLD_DEFAULT, GPUCOLL_MPIX_HALF_SYMBOL);
        if (NULL == make || MPI_SUCCESS != make(which, &gc_half[which])) {
            gc_half[which] = gc_half_plain(which);
        }
    }
    t = gc_half[which];
    pthread_mutex_unlock(&gc_half_lock);
    return t;
}
