/*
 * coll/gpu compatibility shim (see compat/ompi5/README.md): Open MPI 5.0's
 * opal/mca/threads/threads.h declares struct opal_thread_t itself; the
 * component's header brings pthread_t and defines opal_thread_yield over
 * the yield function libopen-pal picks at start (sched_yield or nanosleep,
 * mca threads_pthreads_yield_strategy).
 */
#ifndef GPUCOLL_COMPAT_OMPI5_THREADS_PTHREADS_THREADS_H
#define GPUCOLL_COMPAT_OMPI5_THREADS_PTHREADS_THREADS_H

#include <pthread.h>
#include <signal.h>

#include "opal_config.h"

OPAL_DECLSPEC extern void (*opal_threads_pthreads_yield_fn)(void);

static inline void opal_thread_yield(void)
{
    opal_threads_pthreads_yield_fn();
}

#endif
