/*
 * coll/gpu compatibility shim (see compat/ompi5/README.md): the lock and
 * condition primitives that Open MPI 5.0's opal/mca/threads/mutex.h and
 * wait_sync.h build on.  5.0's pthreads threads component defines them over
 * pthread_mutex_t / pthread_cond_t; 5.0's devel headers name this file but
 * do not install it.  The types are embedded in opal_mutex_t and
 * ompi_wait_sync_t, so they must stay the pthread types.
 */
#ifndef GPUCOLL_COMPAT_OMPI5_THREADS_PTHREADS_MUTEX_H
#define GPUCOLL_COMPAT_OMPI5_THREADS_PTHREADS_MUTEX_H

#include "opal_config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>

#include "opal/constants.h"

BEGIN_C_DECLS

typedef pthread_mutex_t opal_thread_internal_mutex_t;
typedef pthread_cond_t opal_thread_internal_cond_t;

#define OPAL_THREAD_INTERNAL_MUTEX_INITIALIZER PTHREAD_MUTEX_INITIALIZER
#define OPAL_THREAD_INTERNAL_COND_INITIALIZER PTHREAD_COND_INITIALIZER
#if defined(PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP)
#define OPAL_THREAD_INTERNAL_RECURSIVE_MUTEX_INITIALIZER PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP
#elif defined(PTHREAD_RECURSIVE_MUTEX_INITIALIZER)
#define OPAL_THREAD_INTERNAL_RECURSIVE_MUTEX_INITIALIZER PTHREAD_RECURSIVE_MUTEX_INITIALIZER
#endif

static inline int opal_thread_internal_mutex_init(opal_thread_internal_mutex_t *m, bool recursive)
{
    pthread_mutexattr_t attr;
    int rc;

    if (!recursive) {
        return 0 == pthread_mutex_init(m, NULL) ? OPAL_SUCCESS : OPAL_ERROR;
    }
    if (0 != pthread_mutexattr_init(&attr)) {
        return OPAL_ERROR;
    }
    rc = pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    if (0 == rc) {
        rc = pthread_mutex_init(m, &attr);
    }
    pthread_mutexattr_destroy(&attr);
    return 0 == rc ? OPAL_SUCCESS : OPAL_ERROR;
}

static inline void opal_thread_internal_mutex_lock(opal_thread_internal_mutex_t *m)
{
    (void) pthread_mutex_lock(m);
}

/* 0 when the lock was taken, 1 otherwise (Open MPI's convention) */
static inline int opal_thread_internal_mutex_trylock(opal_thread_internal_mutex_t *m)
{
    return 0 == pthread_mutex_trylock(m) ? 0 : 1;
}

static inline void opal_thread_internal_mutex_unlock(opal_thread_internal_mutex_t *m)
{
    (void) pthread_mutex_unlock(m);
}

static inline void opal_thread_internal_mutex_destroy(opal_thread_internal_mutex_t *m)
{
    (void) pthread_mutex_destroy(m);
}

static inline int opal_thread_internal_cond_init(opal_thread_internal_cond_t *c)
{
    return 0 == pthread_cond_init(c, NULL) ? OPAL_SUCCESS : OPAL_ERROR;
}

static inline void opal_thread_internal_cond_wait(opal_thread_internal_cond_t *c,
                                                  opal_thread_internal_mutex_t *m)
{
    (void) pthread_cond_wait(c, m);
}

static inline void opal_thread_internal_cond_signal(opal_thread_internal_cond_t *c)
{
    (void) pthread_cond_signal(c);
}

static inline void opal_thread_internal_cond_broadcast(opal_thread_internal_cond_t *c)
{
    (void) pthread_cond_broadcast(c);
}

static inline void opal_thread_internal_cond_destroy(opal_thread_internal_cond_t *c)
{
    (void) pthread_cond_destroy(c);
}

END_C_DECLS

#endif
