/*
 * coll/gpu compatibility shim (see compat/ompi5/README.md): thread-specific
 * keys of Open MPI 5.0's pthreads threads component (pthread keys).
 */
#ifndef GPUCOLL_COMPAT_OMPI5_THREADS_PTHREADS_TSD_H
#define GPUCOLL_COMPAT_OMPI5_THREADS_PTHREADS_TSD_H

#include <pthread.h>

typedef pthread_key_t opal_tsd_key_t;

static inline int opal_tsd_key_delete(opal_tsd_key_t key)
{
    return 0 == pthread_key_delete(key) ? OPAL_SUCCESS : OPAL_ERROR;
}

static inline int opal_tsd_setspecific(opal_tsd_key_t key, void *value)
{
    return 0 == pthread_setspecific(key, value) ? OPAL_SUCCESS : OPAL_ERROR;
}

static inline int opal_tsd_getspecific(opal_tsd_key_t key, void **valuep)
{
    *valuep = pthread_getspecific(key);
    return OPAL_SUCCESS;
}

#endif
