/*
 * The one clock every layer bounds its waits with and the timing file
 * reports in: CLOCK_MONOTONIC seconds.
 */
#ifndef GPU_CLOCK_H
#define GPU_CLOCK_H

#include <time.h>

static inline double gpu_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

#endif /* GPU_CLOCK_H */
