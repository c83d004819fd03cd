/*
 * Host addresses that can never hold device memory while the process
 * lives: the executable's image, the brk heap up to the current break, and
 * the main thread's stack above the caller.  An answer "host" about them
 * may be kept.  Any other host address may not: large host buffers are
 * mmap'd (a malloc of a few MiB), their range goes back to the kernel when
 * freed, and the CUDA driver maps later device memory wherever the kernel
 * finds room, that range included (seen on 4x H100: a 64 MiB host buffer
 * freed, a device buffer at its address).
 */
#ifndef GPU_HOST_RANGES_H
#define GPU_HOST_RANGES_H

#include <stdint.h>

/* 1: a never reads device memory at a; reads /proc/self/maps once */
int gpu_host_ranges_permanent(uintptr_t a);

#endif /* GPU_HOST_RANGES_H */
