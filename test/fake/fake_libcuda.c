/*
 * A stand-in for the CUDA driver on machines without a GPU (CI): one
 * device, no context, so every pointer is host memory.  With it on the
 * library path coll/gpu accepts every communicator as it does on a GPU
 * host, so that its selection, module enable (the previous module's
 * functions saved per Open MPI release), entry points and request
 * wrappers run in make check on host buffers, which they hand to the
 * previous module.  Only the entry points util/gpu_cuda_drv.c resolves
 * at start exist; anything reaching for more of the driver fails to load
 * the symbol and declines, as it would with a broken driver.
 */
#include <stddef.h>
#include <string.h>

int cuInit(unsigned flags)
{
    (void) flags;
    return 0;
}

int cuDeviceGetCount(int *count)
{
    *count = 1;
    return 0;
}

/* no context: gpu_drv_mem_kind answers "host" without asking further */
int cuCtxGetCurrent(void **ctx)
{
    *ctx = NULL;
    return 0;
}

/* CUDA answers "host" (memory type 0) for memory it does not know */
int cuPointerGetAttributes(unsigned n, int *attrs, void **vals, unsigned long long ptr)
{
    unsigned i;
    (void) attrs;
    (void) ptr;
    for (i = 0; i < n; ++i) {
        memset(vals[i], 0, sizeof(int));
    }
    return 0;
}
