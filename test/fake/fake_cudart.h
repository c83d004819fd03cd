/*
 * What the CUDA runtime stand-in's two files share (fake_cudart.c:
 * streams, copies, memory, graphs; fake_cudart_ipc.c: events, pointer
 * attributes, CUDA IPC).  Hidden: the library exports CUDA's names only.
 */
#ifndef FAKE_CUDART_H
#define FAKE_CUDART_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#define FK_HIDDEN __attribute__((visibility("hidden")))

typedef unsigned long long cu_ptr_t;

enum { OP_COPY, OP_SET, OP_HOST, OP_WAIT, OP_LATE_COPY, OP_EVENT };

typedef struct {
    int kind;
    void *dst;
    const void *src;
    size_t n;
    int value;
    cudaHostFn_t fn;
    void *arg;
    unsigned flags;            /* OP_WAIT: CU_STREAM_WAIT_VALUE_* */
} fop_t;

/* a CUDA call from a host function: CUDA forbids it, so it fails here at once */
extern _Thread_local int fk_in_host_fn FK_HIDDEN;
#define FK_API()                                                                         \
    do {                                                                                  \
        if (fk_in_host_fn) {                                                              \
            fprintf(stderr, "CUDA runtime stand-in: %s called from a host function "     \
                    "(cudaLaunchHostFunc: no CUDA call is allowed there)\n", __func__);  \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

/* an event: how many records of it its streams have passed */
struct CUevent_st {
    unsigned long long recorded, passed;
};

/* work for stream s (NULL: the legacy stream) */
FK_HIDDEN cudaError_t fk_submit(cudaStream_t s, const fop_t *o);
/* returns once no thread waits inside a copy to or from pageable memory
 * (making a stream or an event waits so, as on the GPU) */
FK_HIDDEN void fk_resource_wait(void);
/* device memory of the driver stand-in; pinned host memory of this runtime */
FK_HIDDEN int fk_is_device(const void *p);
FK_HIDDEN int fk_is_pinned(const void *p);
/* the driver stand-in's cuMemGetAddressRange and fake_cuda_ipc_range (0: found) */
FK_HIDDEN int fk_drv_range(cu_ptr_t *base, size_t *size, cu_ptr_t p);
FK_HIDDEN int fk_drv_ipc_range(cu_ptr_t p, int *fd, size_t *off, size_t *size,
                               unsigned long long *id);

#endif /* FAKE_CUDART_H */
