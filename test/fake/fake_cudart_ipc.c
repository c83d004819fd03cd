/*
 * The CUDA runtime stand-in (fake_cudart.c), continued: events, pointer
 * attributes and CUDA IPC between the processes of one user.  An event is
 * a count of its records that its streams have passed.  An IPC handle
 * names the driver stand-in's device-memory file and the allocation's
 * place in it; opening maps that range (through /proc/PID/fd) into the
 * opener, where copies reach it as host memory (a host load there does
 * not fault, as it would on a GPU).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "fake_cudart.h"

/* ---- events: how many records of it the streams have passed ---------------- */

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
    FK_API();
    (void) flags;
    fk_resource_wait();
    *e = calloc(1, sizeof(**e));
    return NULL != *e ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    FK_API();
    const fop_t o = { .kind = OP_EVENT, .dst = &e->passed,
                      .n = (size_t) __atomic_add_fetch(&e->recorded, 1, __ATOMIC_ACQ_REL) };
    return fk_submit(s, &o);
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
    FK_API();
    return __atomic_load_n(&e->passed, __ATOMIC_ACQUIRE) >=
           __atomic_load_n(&e->recorded, __ATOMIC_ACQUIRE) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    FK_API();
    free(e);
    return cudaSuccess;
}

/* ---- pointers and CUDA IPC ----------------------------------------------------- */

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    FK_API();
    memset(a, 0, sizeof(*a));
    a->device = -2;
    if (fk_is_device(p)) {
        a->type = cudaMemoryTypeDevice;
        a->device = 0;
        a->devicePointer = (void *) p;
    } else if (fk_is_pinned(p)) {
        a->type = cudaMemoryTypeHost;
        a->device = 0;
        a->devicePointer = a->hostPointer = (void *) p;
    }
    return cudaSuccess;
}

#define FAKE_IPC_MAGIC 0x66697063u   /* "fipc" */

typedef struct {
    uint32_t magic;
    int32_t pid, fd, pad;
    uint64_t off, size, id;
} fake_ipc_t;

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;

/* mappings opened here, for cudaIpcCloseMemHandle, with what they map */
static struct fake_map {
    char *map, *user;
    size_t len;
    fake_ipc_t from;
    struct fake_map *next;
} *maps;

/* As CUDA (4x H100): an allocation the exporter freed and made again where
 * one this process still maps was (another buffer id) is refused, "resource
 * already mapped", until that mapping is closed. */
static int fake_ipc_overlaps(const fake_ipc_t *f)
{
    int hit = 0;
    pthread_mutex_lock(&maps_lock);
    for (struct fake_map *m = maps; NULL != m && !hit; m = m->next) {
        hit = m->from.pid == f->pid && m->from.fd == f->fd && m->from.id != f->id &&
              m->from.off < f->off + f->size && f->off < m->from.off + m->from.size;
    }
    pthread_mutex_unlock(&maps_lock);
    return hit;
}

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p)
{
    FK_API();
    fake_ipc_t f = { FAKE_IPC_MAGIC, (int32_t) getpid(), -1, 0, 0, 0, 0 };
    cu_ptr_t base = 0;
    size_t size = 0, off = 0;
    int fd = -1;

    if (0 != fk_drv_range(&base, &size, (uintptr_t) p) || base != (uintptr_t) p ||
        0 != fk_drv_ipc_range((uintptr_t) p, &fd, &off, &size, (unsigned long long *) &f.id)) {
        return cudaErrorInvalidValue;   /* the real one too, for memory it cannot share */
    }
    f.fd = fd;
    f.off = off;
    f.size = size;
    memset(h, 0, sizeof(*h));
    memcpy(h, &f, sizeof(f));
    return cudaSuccess;
}

cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t h, unsigned int flags)
{
    FK_API();
    const size_t page = (size_t) sysconf(_SC_PAGESIZE);
    struct fake_map *m;
    fake_ipc_t f;
    char path[64];
    size_t lo;
    int fd;

    (void) flags;
    memcpy(&f, &h, sizeof(f));
    if (FAKE_IPC_MAGIC != f.magic || f.pid == (int32_t) getpid()) {
        return cudaErrorInvalidValue;   /* CUDA does not open a process's own either */
    }
    if (fake_ipc_overlaps(&f)) {
        return cudaErrorAlreadyMapped;
    }
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int) f.pid, (int) f.fd);
    fd = open(path, O_RDWR | O_CLOEXEC);
    m = calloc(1, sizeof(*m));
    if (fd < 0 || NULL == m) {
        if (fd >= 0) {
            close(fd);
        }
        free(m);
        return cudaErrorInvalidValue;
    }
    lo = f.off & ~(page - 1);
    m->len = f.off - lo + f.size;
    m->map = mmap(NULL, m->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t) lo);
    close(fd);
    if (MAP_FAILED == m->map) {
        free(m);
        return cudaErrorInvalidValue;
    }
    m->user = m->map + (f.off - lo);
    m->from = f;
    pthread_mutex_lock(&maps_lock);
    m->next = maps;
    maps = m;
    pthread_mutex_unlock(&maps_lock);
    *p = m->user;
    return cudaSuccess;
}

/* Closing unmaps, and is taken to wait, as cudaFree does, until the
 * device's work so far is done (every stream, stream memory waits among
 * them): a close on a thread that such a wait needs never returns.  So did
 * libgpucoll's on 4x H100 (test_mpix_stream's halo at 150000 doubles); the
 * stand-in without this wait passed it. */
cudaError_t cudaIpcCloseMemHandle(void *p)
{
    FK_API();
    struct fake_map *m = NULL;
    (void) cudaDeviceSynchronize();
    pthread_mutex_lock(&maps_lock);
    for (struct fake_map **q = &maps; NULL != *q; q = &(*q)->next) {
        if ((*q)->user == p) {
            m = *q;
            *q = m->next;
            break;
        }
    }
    pthread_mutex_unlock(&maps_lock);
    if (NULL == m) {
        return cudaErrorInvalidValue;
    }
    munmap(m->map, m->len);
    free(m);
    return cudaSuccess;
}

/* the mappings open now: a test's way to see that a receiver closed those
 * of allocations the exporter freed (no CUDA call tells it) */
int fake_cudart_ipc_maps(void)
{
    int n = 0;
    pthread_mutex_lock(&maps_lock);
    for (struct fake_map *m = maps; NULL != m; m = m->next) {
        ++n;
    }
    pthread_mutex_unlock(&maps_lock);
    return n;
}
