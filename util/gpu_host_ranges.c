/* Permanent host ranges (util/gpu_host_ranges.h), from /proc/self/maps. */
#include "util/gpu_host_ranges.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct {
    uintptr_t exe_lo, exe_hi;       /* the executable's mappings and its .bss */
    uintptr_t heap_lo;              /* the brk heap's start (0: none seen) */
    uintptr_t stack_lo, stack_hi;   /* the main stack as mapped when read */
} gpu_ranges;

static pthread_once_t gpu_ranges_once = PTHREAD_ONCE_INIT;

static void gpu_ranges_read(void)
{
    char exe[PATH_MAX], line[PATH_MAX + 128];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    FILE *f = fopen("/proc/self/maps", "r");
    uintptr_t prev_end = 0;
    int prev_exe = 0;

    if (n <= 0 || NULL == f) {
        if (NULL != f) {
            fclose(f);
        }
        return;   /* nothing is permanent: every address is asked for */
    }
    exe[n] = '\0';
    while (NULL != fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        char path[PATH_MAX] = "";
        if (2 > sscanf(line, "%lx-%lx %*s %*s %*s %*s %4095s", &lo, &hi, path)) {
            continue;
        }
        const int is_exe = 0 == strcmp(path, exe);
        if (is_exe || (prev_exe && '\0' == path[0] && lo == prev_end)) {
            /* the image, and the anonymous .bss right after it */
            gpu_ranges.exe_lo = 0 == gpu_ranges.exe_lo ? lo : gpu_ranges.exe_lo;
            gpu_ranges.exe_hi = hi;
        } else if (0 == strcmp(path, "[heap]")) {
            gpu_ranges.heap_lo = lo;
        } else if (0 == strcmp(path, "[stack]")) {
            gpu_ranges.stack_lo = lo;
            gpu_ranges.stack_hi = hi;
        }
        prev_exe = is_exe;
        prev_end = hi;
    }
    fclose(f);
}

int gpu_host_ranges_permanent(uintptr_t a)
{
    volatile char here = 0;
    const uintptr_t sp = (uintptr_t) &here;

    (void) pthread_once(&gpu_ranges_once, gpu_ranges_read);
    if (a >= gpu_ranges.exe_lo && a < gpu_ranges.exe_hi) {
        return 1;
    }
    /* the break only moves down by trimming, and above it nothing is kept */
    if (0 != gpu_ranges.heap_lo && a >= gpu_ranges.heap_lo && a < (uintptr_t) sbrk(0)) {
        return 1;
    }
    /* the caller's frames lie above ours, on the main thread's stack only
     * (another thread's stack is an mmap that may go) */
    return sp >= gpu_ranges.stack_lo && sp < gpu_ranges.stack_hi && a >= sp &&
           a < gpu_ranges.stack_hi;
}
