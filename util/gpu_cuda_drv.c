#include "util/gpu_cuda_drv.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Driver ABI subset (cuda.h values, stable since CUDA 4). */
typedef int cu_result_t;
typedef void *cu_context_t;
typedef unsigned long long cu_deviceptr_t;
typedef void *cu_stream_t;
#define CU_STREAM_LEGACY_HANDLE ((cu_stream_t) 0x1)
enum {
    CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
    CU_POINTER_ATTRIBUTE_SYNC_MEMOPS = 6,
    CU_POINTER_ATTRIBUTE_BUFFER_ID = 7,
    CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9,
    CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE = 10,
    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11,
    CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12
};
enum { CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2, CU_MEMORYTYPE_UNIFIED = 4 };

static struct {
    pthread_once_t once;
    gpu_status_t status;
    const char *why;
    cu_result_t (*init)(unsigned);
    cu_result_t (*device_get_count)(int *);
    cu_result_t (*ctx_get_current)(cu_context_t *);
    cu_result_t (*pointer_get_attributes)(unsigned, int *, void **, cu_deviceptr_t);
    cu_result_t (*device_by_busid)(int *, const char *);
    cu_result_t (*can_access_peer)(int *, int, int);
    cu_result_t (*pointer_set_attribute)(const void *, int, cu_deviceptr_t);
    cu_result_t (*stream_synchronize)(cu_stream_t);
    cu_result_t (*memcpy)(cu_deviceptr_t, cu_deviceptr_t, size_t);
    cu_result_t (*error_string)(cu_result_t, const char **);
} gpu_drv = { PTHREAD_ONCE_INIT, GPU_ERR_UNSUPPORTED, "not initialised", NULL, NULL, NULL, NULL,
              NULL, NULL, NULL, NULL, NULL, NULL };

static void gpu_drv_load(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    int ndev = 0;

    if (NULL == lib) {
        gpu_drv.why = "no CUDA driver (libcuda.so.1 not found)";
        return;
    }
    gpu_drv.init = (cu_result_t (*)(unsigned)) dlsym(lib, "cuInit");
    gpu_drv.device_get_count = (cu_result_t (*)(int *)) dlsym(lib, "cuDeviceGetCount");
    gpu_drv.ctx_get_current = (cu_result_t (*)(cu_context_t *)) dlsym(lib, "cuCtxGetCurrent");
    gpu_drv.pointer_get_attributes = (cu_result_t (*)(unsigned, int *, void **, cu_deviceptr_t))
        dlsym(lib, "cuPointerGetAttributes");
    /* optional: topology discovery asks for peer access by PCI id */
    gpu_drv.device_by_busid = (cu_result_t (*)(int *, const char *)) dlsym(lib, "cuDeviceGetByPCIBusId");
    gpu_drv.can_access_peer = (cu_result_t (*)(int *, int, int)) dlsym(lib, "cuDeviceCanAccessPeer");
    /* optional: first-use ordering of user buffers (gpu_drv_first_use) */
    gpu_drv.pointer_set_attribute = (cu_result_t (*)(const void *, int, cu_deviceptr_t))
        dlsym(lib, "cuPointerSetAttribute");
    gpu_drv.stream_synchronize = (cu_result_t (*)(cu_stream_t)) dlsym(lib, "cuStreamSynchronize");
    gpu_drv.memcpy = (cu_result_t (*)(cu_deviceptr_t, cu_deviceptr_t, size_t)) dlsym(lib, "cuMemcpy");
    gpu_drv.error_string = (cu_result_t (*)(cu_result_t, const char **)) dlsym(lib,
                                                                             "cuGetErrorString");
    if (NULL == gpu_drv.init || NULL == gpu_drv.device_get_count ||
        NULL == gpu_drv.ctx_get_current || NULL == gpu_drv.pointer_get_attributes) {
        gpu_drv.why = "CUDA driver lacks cuPointerGetAttributes (too old)";
        return;
    }
    if (0 != gpu_drv.init(0)) {
        gpu_drv.why = "cuInit failed (no usable GPU or driver/device mismatch)";
        return;
    }
    if (0 != gpu_drv.device_get_count(&ndev) || ndev < 1) {
        gpu_drv.why = "no CUDA device visible";
        return;
    }
    gpu_drv.why = NULL;
    gpu_drv.status = GPU_OK;
}

gpu_status_t gpu_drv_init(const char **why)
{
    pthread_once(&gpu_drv.once, gpu_drv_load);
    if (GPU_OK != gpu_drv.status && NULL != why) {
        *why = gpu_drv.why;
    }
    return gpu_drv.status;
}

int gpu_drv_has_context(void)
{
    cu_context_t ctx = NULL;
    if (GPU_OK != gpu_drv.status) {
        return 0;
    }
    return 0 == gpu_drv.ctx_get_current(&ctx) && NULL != ctx;
}

gpu_mem_kind_t gpu_drv_mem_kind(const void *ptr, int *device, int *sync_memops)
{
    unsigned mem_type = 0;
    int managed = 0, ordinal = -1, sync = 0;
    int attrs[4] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                     CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS };
    void *vals[4] = { &mem_type, &managed, &ordinal, &sync };

    if (NULL == ptr || !gpu_drv_has_context()) {
        return GPU_MEM_HOST;
    }
    /* a driver that cannot tell SYNC_MEMOPS for some memory (VMM before
     * CUDA 12.1) must not turn device memory into "host": ask again
     * without it, and report it unmarked */
    if (0 != gpu_drv.pointer_get_attributes(NULL != sync_memops ? 4 : 3, attrs, vals,
                                            (cu_deviceptr_t) (uintptr_t) ptr) &&
        (NULL == sync_memops ||
         0 != gpu_drv.pointer_get_attributes(3, attrs, vals, (cu_deviceptr_t) (uintptr_t) ptr))) {
        /* cuPointerGetAttributes answers "host" for memory CUDA does not
         * know; failing means the context is gone (a sticky error) */
        return GPU_MEM_BROKEN;
    }
    if (NULL != device) {
        *device = ordinal;
    }
    if (NULL != sync_memops) {
        *sync_memops = sync;
    }
    if (managed) {
        return GPU_MEM_MANAGED;
    }
    return (CU_MEMORYTYPE_DEVICE == mem_type) ? GPU_MEM_DEVICE : GPU_MEM_HOST;
}

int gpu_drv_first_use(const void *ptr)
{
    const unsigned one = 1;
    if (GPU_OK != gpu_drv.status || NULL == gpu_drv.stream_synchronize ||
        NULL == gpu_drv.pointer_set_attribute) {
        return 0;
    }
    /* an error here is the application's own (a failed kernel of its):
     * its next CUDA call reports it, and our copies and kernels would too */
    (void) gpu_drv.stream_synchronize(CU_STREAM_LEGACY_HANDLE);
    return 0 == gpu_drv.pointer_set_attribute(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS,
                                              (cu_deviceptr_t) (uintptr_t) ptr);
}

int gpu_drv_can_access_peer(const char *busid_a, const char *busid_b)
{
    int a, b, ok = 0;
    if (GPU_OK != gpu_drv_init(NULL) || NULL == gpu_drv.device_by_busid ||
        NULL == gpu_drv.can_access_peer || 0 != gpu_drv.device_by_busid(&a, busid_a) ||
        0 != gpu_drv.device_by_busid(&b, busid_b) || 0 != gpu_drv.can_access_peer(&ok, a, b)) {
        return -1;
    }
    return ok ? 1 : 0;
}

int gpu_drv_ipc_range(const void *ptr, void **base, size_t *size, unsigned long long *id)
{
    unsigned mem_type = 0;
    int managed = 0, capable = 0;
    cu_deviceptr_t start = 0;
    size_t len = 0;
    unsigned long long buf = 0;
    int attrs[6] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                     CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE,
                     CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                     CU_POINTER_ATTRIBUTE_BUFFER_ID };
    void *vals[6] = { &mem_type, &managed, &capable, &start, &len, &buf };

    if (NULL == ptr || !gpu_drv_has_context() ||
        0 != gpu_drv.pointer_get_attributes(6, attrs, vals, (cu_deviceptr_t) (uintptr_t) ptr)) {
        return 0;
    }
    /* pool (cudaMallocAsync) and VMM memory have no legacy IPC handle */
    if (CU_MEMORYTYPE_DEVICE != mem_type || managed || !capable || 0 == start || 0 == len) {
        return 0;
    }
    *base = (void *) (uintptr_t) start;
    *size = len;
    *id = buf;
    return 1;
}

int gpu_drv_copy(void *dst, const void *src, size_t bytes, const char **why)
{
    const char *text = NULL;
    cu_result_t rc;
    if (GPU_OK != gpu_drv.status || NULL == gpu_drv.memcpy) {
        *why = "the CUDA driver has no cuMemcpy";
        return -1;
    }
    rc = gpu_drv.memcpy((cu_deviceptr_t) (uintptr_t) dst, (cu_deviceptr_t) (uintptr_t) src, bytes);
    if (0 == rc) {
        return 0;
    }
    if (NULL == gpu_drv.error_string || 0 != gpu_drv.error_string(rc, &text) || NULL == text) {
        text = "unknown CUDA driver error";
    }
    *why = text;
    return rc;
}
