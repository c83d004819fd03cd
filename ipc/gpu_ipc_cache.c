#include "ipc/gpu_ipc_cache.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "util/gpu_cuda_drv.h"

#define GPU_IPC_CACHE_EXPORTS 64
#define GPU_IPC_GONE_LOG 64
#define GPU_IPC_CHECKS 2          /* exports looked at per call; a check is a driver query */

typedef struct {
    uint64_t id, base, size;
    gpu_ipc_handle_t handle;
    unsigned long long used;
} gpu_ipc_export_t;

typedef struct {
    int32_t pid;
    uint64_t id, base, size;
    void *mapped;
    unsigned long long used;
} gpu_ipc_map_t;

static struct {
    pthread_mutex_t lock;
    unsigned long long clock;
    int nexp, nmap, check;
    unsigned long long gone_seq;               /* ids ever logged gone */
    uint64_t gone[GPU_IPC_GONE_LOG];           /* the last ones */
    gpu_ipc_export_t exp[GPU_IPC_CACHE_EXPORTS];
    gpu_ipc_map_t map[GPU_IPC_CACHE_MAPS];
} gpu_ipc_cache = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int gpu_ipc_overlap(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen)
{
    return a < b + blen && b < a + alen;
}

static void gpu_ipc_gone_log(uint64_t id)
{
    gpu_ipc_cache.gone[gpu_ipc_cache.gone_seq++ % GPU_IPC_GONE_LOG] = id;
}

gpu_status_t gpu_ipc_ref_make(const void *ptr, gpu_ipc_ref_t *ref)
{
    void *base = NULL;
    size_t size = 0;
    unsigned long long id = 0;
    gpu_ipc_export_t *e = NULL;
    gpu_status_t st = GPU_OK;

    if (!gpu_drv_ipc_range(ptr, &base, &size, &id)) {
        return GPU_ERR_UNSUPPORTED;
    }
    pthread_mutex_lock(&gpu_ipc_cache.lock);
    for (int i = 0; i < gpu_ipc_cache.nexp; ++i) {
        if (gpu_ipc_cache.exp[i].id == id) {
            e = &gpu_ipc_cache.exp[i];
            break;
        }
    }
    if (NULL == e) {
        /* a handle is only valid for its allocation: drop handles of freed
         * ones whose range came back, then the least recently used */
        int slot = gpu_ipc_cache.nexp;
        for (int i = 0; i < gpu_ipc_cache.nexp; ++i) {
            if (gpu_ipc_overlap(gpu_ipc_cache.exp[i].base, gpu_ipc_cache.exp[i].size,
                                (uint64_t) (uintptr_t) base, size)) {
                slot = i;
                break;
            }
        }
        if (GPU_IPC_CACHE_EXPORTS == slot) {
            slot = 0;
            for (int i = 1; i < gpu_ipc_cache.nexp; ++i) {
                slot = gpu_ipc_cache.exp[i].used < gpu_ipc_cache.exp[slot].used ? i : slot;
            }
        }
        e = &gpu_ipc_cache.exp[slot];
        if (slot < gpu_ipc_cache.nexp) {
            gpu_ipc_gone_log(e->id);    /* freed, or at least no longer cached here */
        }
        st = gpu_ipc_cuda_ops.export_mem(base, &e->handle);
        if (GPU_OK != st) {
            goto out;
        }
        e->id = id;
        e->base = (uint64_t) (uintptr_t) base;
        e->size = size;
        if (slot == gpu_ipc_cache.nexp) {
            ++gpu_ipc_cache.nexp;
        }
    }
    e->used = ++gpu_ipc_cache.clock;
    memset(ref, 0, sizeof(*ref));
    ref->handle = e->handle;
    ref->base = e->base;
    ref->size = e->size;
    ref->offset = (uint64_t) (uintptr_t) ptr - e->base;
    ref->id = e->id;
    ref->pid = (int32_t) getpid();
out:
    pthread_mutex_unlock(&gpu_ipc_cache.lock);
    return st;
}

int gpu_ipc_exports_gone(unsigned long long *cursor, uint64_t *ids, int max)
{
    int n = 0;
    pthread_mutex_lock(&gpu_ipc_cache.lock);
    for (int k = 0; k < GPU_IPC_CHECKS && gpu_ipc_cache.nexp > 0; ++k) {
        const int i = gpu_ipc_cache.check++ % gpu_ipc_cache.nexp;
        gpu_ipc_export_t *e = &gpu_ipc_cache.exp[i];
        void *base = NULL;
        size_t size = 0;
        unsigned long long id = 0;
        /* the call's own buffers (the last two exports used) are alive: an
         * application that reuses its buffers pays no query here */
        if (e->used + 2 > gpu_ipc_cache.clock) {
            continue;
        }
        if (!gpu_drv_ipc_range((const void *) (uintptr_t) e->base, &base, &size, &id) ||
            id != e->id) {
            gpu_ipc_gone_log(e->id);
            *e = gpu_ipc_cache.exp[--gpu_ipc_cache.nexp];
        }
    }
    if (gpu_ipc_cache.gone_seq - *cursor > GPU_IPC_GONE_LOG) {
        *cursor = gpu_ipc_cache.gone_seq - GPU_IPC_GONE_LOG;   /* older: the LRU closes them */
    }
    while (*cursor < gpu_ipc_cache.gone_seq && n < max) {
        ids[n++] = gpu_ipc_cache.gone[(*cursor)++ % GPU_IPC_GONE_LOG];
    }
    pthread_mutex_unlock(&gpu_ipc_cache.lock);
    return n;
}

static void gpu_ipc_unmap(int i)
{
    gpu_ipc_cuda_ops.release_mem(gpu_ipc_cache.map[i].mapped);
    gpu_ipc_cache.map[i] = gpu_ipc_cache.map[--gpu_ipc_cache.nmap];
}

gpu_status_t gpu_ipc_ref_open(const gpu_ipc_ref_t *ref, void **ptr)
{
    gpu_ipc_map_t *m = NULL;
    gpu_status_t st = GPU_OK;

    pthread_mutex_lock(&gpu_ipc_cache.lock);
    for (int i = 0; i < gpu_ipc_cache.nmap; ++i) {
        if (gpu_ipc_cache.map[i].pid == ref->pid && gpu_ipc_cache.map[i].id == ref->id) {
            m = &gpu_ipc_cache.map[i];
            break;
        }
    }
    if (NULL == m) {
        /* the exporter freed what overlaps this allocation */
        for (int i = 0; i < gpu_ipc_cache.nmap;) {
            const gpu_ipc_map_t *o = &gpu_ipc_cache.map[i];
            if (o->pid == ref->pid && gpu_ipc_overlap(o->base, o->size, ref->base, ref->size)) {
                gpu_ipc_unmap(i);
            } else {
                ++i;
            }
        }
        if (GPU_IPC_CACHE_MAPS == gpu_ipc_cache.nmap) {
            int lru = 0;
            for (int i = 1; i < gpu_ipc_cache.nmap; ++i) {
                lru = gpu_ipc_cache.map[i].used < gpu_ipc_cache.map[lru].used ? i : lru;
            }
            gpu_ipc_unmap(lru);
        }
        m = &gpu_ipc_cache.map[gpu_ipc_cache.nmap];
        st = gpu_ipc_cuda_ops.import_mem(&ref->handle, &m->mapped);
        if (GPU_OK != st) {
            goto out;
        }
        m->pid = ref->pid;
        m->id = ref->id;
        m->base = ref->base;
        m->size = ref->size;
        ++gpu_ipc_cache.nmap;
    }
    m->used = ++gpu_ipc_cache.clock;
    *ptr = (char *) m->mapped + ref->offset;
out:
    pthread_mutex_unlock(&gpu_ipc_cache.lock);
    return st;
}

void gpu_ipc_forget(int32_t pid, const uint64_t *ids, int n)
{
    pthread_mutex_lock(&gpu_ipc_cache.lock);
    for (int k = 0; k < n; ++k) {
        for (int i = 0; i < gpu_ipc_cache.nmap; ++i) {
            if (gpu_ipc_cache.map[i].pid == pid && gpu_ipc_cache.map[i].id == ids[k]) {
                gpu_ipc_unmap(i);
                break;
            }
        }
    }
    pthread_mutex_unlock(&gpu_ipc_cache.lock);
}

int gpu_ipc_cache_maps(void)
{
    int n;
    pthread_mutex_lock(&gpu_ipc_cache.lock);
    n = gpu_ipc_cache.nmap;
    pthread_mutex_unlock(&gpu_ipc_cache.lock);
    return n;
}
