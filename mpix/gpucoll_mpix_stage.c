/*
 * libgpucoll's pinned staging for point-to-point messages by value
 * (gpucoll_mpix_p2p.c).
 *
 * Staging up to 128 KiB comes in power-of-two classes (256 B up) from
 * pinned chunks of 512 KiB that stay with the process, so an eager loop
 * that runs ahead of its stream (no descriptor free yet) gets a block
 * without a cudaMallocHost each; larger staging is allocated alone.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "mpix/gpucoll_mpix_int.h"

#define GC_STAGE_MIN_LOG 8
#define GC_STAGE_MAX_LOG 17
#define GC_STAGE_CHUNK ((size_t) 512 << 10)
typedef struct gc_stage_blk {
    struct gc_stage_blk *next;
} gc_stage_blk_t;
static gc_stage_blk_t *gc_stage[GC_STAGE_MAX_LOG - GC_STAGE_MIN_LOG + 1];   /* gc_stage_lock */
static pthread_mutex_t gc_stage_lock = PTHREAD_MUTEX_INITIALIZER;

void *gc_stage_get(size_t bytes, int *cls, size_t *got)
{
    int k = 0;
    gc_stage_blk_t *b;
    char *chunk;

    if (bytes > (size_t) 1 << GC_STAGE_MAX_LOG) {
        *cls = -1;
        *got = bytes;
        return gc_pinned(bytes);
    }
    while (((size_t) 1 << (GC_STAGE_MIN_LOG + k)) < bytes) {
        ++k;
    }
    *cls = k;
    *got = (size_t) 1 << (GC_STAGE_MIN_LOG + k);
    pthread_mutex_lock(&gc_stage_lock);
    b = gc_stage[k];
    if (NULL != b) {
        gc_stage[k] = b->next;
    }
    pthread_mutex_unlock(&gc_stage_lock);
    if (NULL != b) {
        return b;
    }
    chunk = gc_pinned(GC_STAGE_CHUNK);
    if (NULL == chunk) {
        return NULL;
    }
    pthread_mutex_lock(&gc_stage_lock);
    for (size_t i = GC_STAGE_CHUNK / *got - 1; i > 0; --i) {
        b = (gc_stage_blk_t *) (chunk + i * *got);
        b->next = gc_stage[k];
        gc_stage[k] = b;
    }
    pthread_mutex_unlock(&gc_stage_lock);
    return chunk;
}

void gc_stage_put(void *pin, int cls)
{
    if (NULL == pin) {
        return;
    }
    if (cls < 0) {
        (void) cudaFreeHost(pin);
        return;
    }
    pthread_mutex_lock(&gc_stage_lock);
    ((gc_stage_blk_t *) pin)->next = gc_stage[cls];
    gc_stage[cls] = pin;
    pthread_mutex_unlock(&gc_stage_lock);
}

void *gc_park_take(gc_park_t *p, size_t bytes, size_t *got)
{
    int best = -1;
    void *pin;
    for (int i = 0; i < p->n; ++i) {
        if (p->v[i].bytes >= bytes &&
            (best < 0 || p->v[i].bytes < p->v[best].bytes)) {
            best = i;
        }
    }
    if (best < 0) {
        return NULL;
    }
    pin = p->v[best].pin;
    *got = p->v[best].bytes;
    p->v[best] = p->v[--p->n];
    return pin;
}

void gc_park_put(gc_park_t *p, void *pin, size_t bytes, int cls)
{
    if (NULL == pin || cls >= 0) {
        gc_stage_put(pin, cls);
        return;
    }
    if (p->n == p->cap) {
        const int cap = p->cap ? 2 * p->cap : 8;
        gc_parked_t *q = realloc(p->v, (size_t) cap * sizeof(*q));
        if (NULL == q) {
            gc_stage_put(pin, cls);   /* no room to keep it: freed after all */
            return;
        }
        p->v = q;
        p->cap = cap;
    }
    p->v[p->n].pin = pin;
    p->v[p->n++].bytes = bytes;
}

void gc_park_free(gc_park_t *p)
{
    for (int i = 0; i < p->n; ++i) {
        gc_stage_put(p->v[i].pin, -1);
    }
    free(p->v);
    p->v = NULL;
    p->n = p->cap = 0;
}
