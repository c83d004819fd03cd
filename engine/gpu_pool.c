/*
 * The large-message pool (design: gpu_pool.h).  Pure bookkeeping over the
 * memory table: no CUDA call here but through pool->ops.
 */
#include "engine/gpu_pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GPU_POOL_DEVICES 64
#define GPU_POOL_PEERS 64       /* peer processes' areas open at once per device */

typedef struct {
    int32_t pid;
    uint64_t serial;
    void *mapped;
    int refs;                   /* communicators' maps of it */
} gpu_pool_peer_t;

struct gpu_pool {
    int dev;
    int users;                  /* attached communicators */
    int holders;                /* communicators holding a card of the area */
    const gpu_pool_mem_ops_t *ops;
    void *area;
    size_t bytes;
    uint64_t serial;
    gpu_ipc_handle_t handle;
    int leased;
    int poisoned;
    int npeers;
    gpu_pool_peer_t peers[GPU_POOL_PEERS];
};

static pthread_mutex_t gpu_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static gpu_pool_t *gpu_pools[GPU_POOL_DEVICES];
static uint64_t gpu_pool_serials;   /* areas ever allocated by this process */

gpu_pool_t *gpu_pool_attach(int dev, const gpu_pool_mem_ops_t *ops)
{
    gpu_pool_t *p;

    if (dev < 0 || dev >= GPU_POOL_DEVICES) {
        return NULL;
    }
    pthread_mutex_lock(&gpu_pool_lock);
    p = gpu_pools[dev];
    if (NULL == p && NULL != (p = calloc(1, sizeof(*p)))) {
        p->dev = dev;
        p->ops = ops;
        gpu_pools[dev] = p;
    }
    if (NULL != p) {
        ++p->users;
    }
    pthread_mutex_unlock(&gpu_pool_lock);
    return p;
}

void gpu_pool_detach(gpu_pool_t *p)
{
    if (NULL == p) {
        return;
    }
    pthread_mutex_lock(&gpu_pool_lock);
    if (--p->users > 0) {
        pthread_mutex_unlock(&gpu_pool_lock);
        return;
    }
    gpu_pools[p->dev] = NULL;
    pthread_mutex_unlock(&gpu_pool_lock);
    /* every communicator unmapped its peers before detaching; whatever a
     * failed setup left open goes first, then our own area */
    for (int i = 0; i < p->npeers; ++i) {
        p->ops->close(p->peers[i].mapped);
    }
    if (NULL != p->area) {
        p->ops->free(p->area);
    }
    free(p);
}

gpu_status_t gpu_pool_card(gpu_pool_t *p, size_t bytes, gpu_pool_card_t *card)
{
    gpu_status_t st = GPU_OK;

    memset(card, 0, sizeof(*card));
    pthread_mutex_lock(&gpu_pool_lock);
    if (NULL == p->area && !p->poisoned) {
        void *area = NULL;
        st = p->ops->alloc(bytes, &area);
        if (GPU_OK == st) {
            st = p->ops->export_mem(area, &p->handle);
            if (GPU_OK != st) {
                p->ops->free(area);
            } else {
                p->area = area;
                p->bytes = bytes;
                p->serial = ++gpu_pool_serials;
            }
        }
    } else if (p->poisoned || bytes > p->bytes) {
        /* the area is never regrown: peers hold mappings of it */
        st = GPU_ERR_UNSUPPORTED;
    }
    if (GPU_OK == st) {
        ++p->holders;
        card->pid = (int32_t) getpid();
        card->serial = p->serial;
        card->bytes = p->bytes;
        card->handle = p->handle;
    }
    card->status = (int32_t) st;
    pthread_mutex_unlock(&gpu_pool_lock);
    return st;
}

void gpu_pool_card_put(gpu_pool_t *p)
{
    void *area = NULL;

    pthread_mutex_lock(&gpu_pool_lock);
    /* a poisoned area may still be written by a kernel: kept to the end */
    if (--p->holders <= 0 && !p->poisoned && !p->leased) {
        p->holders = 0;
        area = p->area;
        p->area = NULL;
        p->bytes = 0;
    }
    pthread_mutex_unlock(&gpu_pool_lock);
    if (NULL != area) {
        p->ops->free(area);
    }
}

static int gpu_pool_mine(const gpu_pool_t *p, const gpu_pool_card_t *card)
{
    return card->pid == (int32_t) getpid() && card->serial == p->serial && NULL != p->area;
}

gpu_status_t gpu_pool_map(gpu_pool_t *p, const gpu_pool_card_t *card, void **ptr)
{
    gpu_status_t st = GPU_OK;
    gpu_pool_peer_t *e = NULL;

    if (GPU_OK != card->status) {
        return GPU_ERR_INVALID;
    }
    pthread_mutex_lock(&gpu_pool_lock);
    if (gpu_pool_mine(p, card)) {
        *ptr = p->area;
        goto out;
    }
    for (int i = 0; i < p->npeers; ++i) {
        if (p->peers[i].pid == card->pid && p->peers[i].serial == card->serial) {
            e = &p->peers[i];
            break;
        }
    }
    if (NULL == e) {
        if (GPU_POOL_PEERS == p->npeers) {
            st = GPU_ERR_UNSUPPORTED;
            goto out;
        }
        e = &p->peers[p->npeers];
        st = p->ops->import_mem(&card->handle, &e->mapped);
        if (GPU_OK != st) {
            goto out;
        }
        e->pid = card->pid;
        e->serial = card->serial;
        e->refs = 0;
        ++p->npeers;
    }
    ++e->refs;
    *ptr = e->mapped;
out:
    pthread_mutex_unlock(&gpu_pool_lock);
    return st;
}

void gpu_pool_unmap(gpu_pool_t *p, const gpu_pool_card_t *card)
{
    void *close_it = NULL;

    pthread_mutex_lock(&gpu_pool_lock);
    for (int i = 0; i < p->npeers; ++i) {
        gpu_pool_peer_t *e = &p->peers[i];
        if (e->pid == card->pid && e->serial == card->serial) {
            if (--e->refs <= 0) {
                close_it = e->mapped;
                *e = p->peers[--p->npeers];
            }
            break;
        }
    }
    pthread_mutex_unlock(&gpu_pool_lock);
    /* the last communicator between us and that process: its memory can
     * return to its driver now (not when our pool goes) */
    if (NULL != close_it) {
        p->ops->close(close_it);
    }
}

int gpu_pool_try_lease(gpu_pool_t *p)
{
    int got;
    pthread_mutex_lock(&gpu_pool_lock);
    got = !p->leased && !p->poisoned && NULL != p->area;
    if (got) {
        p->leased = 1;
    }
    pthread_mutex_unlock(&gpu_pool_lock);
    return got;
}

void gpu_pool_return(gpu_pool_t *p, int finished)
{
    pthread_mutex_lock(&gpu_pool_lock);
    if (!finished) {
        /* a kernel that may still run owns it for good */
        p->poisoned = 1;
    } else {
        p->leased = 0;
    }
    pthread_mutex_unlock(&gpu_pool_lock);
}

int gpu_pool_agree(const int32_t *votes, int nranks)
{
    for (int i = 0; i < nranks; ++i) {
        if (1 != votes[i]) {
            return 0;
        }
    }
    return 1;
}

int gpu_pool_open_peers(const gpu_pool_t *p)
{
    int n;
    pthread_mutex_lock(&gpu_pool_lock);
    n = p->npeers;
    pthread_mutex_unlock(&gpu_pool_lock);
    return n;
}

size_t gpu_pool_bytes(const gpu_pool_t *p)
{
    size_t n;
    pthread_mutex_lock(&gpu_pool_lock);
    n = NULL != p->area ? p->bytes : 0;
    pthread_mutex_unlock(&gpu_pool_lock);
    return n;
}

int gpu_pool_users(const gpu_pool_t *p)
{
    int n;
    pthread_mutex_lock(&gpu_pool_lock);
    n = p->users;
    pthread_mutex_unlock(&gpu_pool_lock);
    return n;
}
