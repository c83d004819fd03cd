/*
 * The memory-kind board (see gpu_kind_board.h for the protocol).
 */
#include "gpu_kind_board.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GPU_KIND_MAGIC 0x676b696e64763034ull   /* "gkindv04": four kind bits */
#define GPU_KIND_FREED (~0ull)
/* a freed slot stays unused this long: any reader of the old communicator
 * finished its read long before (it read a counter already past its call) */
#define GPU_KIND_GRACE_S 10

static uint64_t gpu_kind_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec;
}

static gpu_status_t gpu_kind_map(int fd, gpu_kind_board_t **out)
{
    void *p = mmap(NULL, sizeof(gpu_kind_board_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (MAP_FAILED == p) {
        GPU_ERROR("kind board: mmap of %zu bytes failed: %s", sizeof(gpu_kind_board_t),
                  strerror(errno));
        return GPU_ERR_NO_MEMORY;
    }
    *out = (gpu_kind_board_t *) p;
    return GPU_OK;
}

gpu_status_t gpu_kind_board_create(const char *name, gpu_kind_board_t **out)
{
    gpu_kind_board_t *b;
    gpu_status_t st;
    int fd;

    shm_unlink(name);   /* a crashed run's leftover of the same name */
    fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        GPU_ERROR("kind board: shm_open(%s) failed: %s", name, strerror(errno));
        return GPU_ERR_NO_MEMORY;
    }
    /* sparse: pages appear as slots are used */
    if (0 != ftruncate(fd, (off_t) sizeof(gpu_kind_board_t))) {
        GPU_ERROR("kind board: ftruncate(%s) failed: %s", name, strerror(errno));
        close(fd);
        shm_unlink(name);
        return GPU_ERR_NO_MEMORY;
    }
    st = gpu_kind_map(fd, &b);
    if (GPU_OK != st) {
        shm_unlink(name);
        return st;
    }
    __atomic_store_n(&b->magic, GPU_KIND_MAGIC, __ATOMIC_RELEASE);
    *out = b;
    return GPU_OK;
}

gpu_status_t gpu_kind_board_open(const char *name, gpu_kind_board_t **out)
{
    struct stat sb;
    gpu_kind_board_t *b;
    gpu_status_t st;
    const int fd = shm_open(name, O_RDWR, 0);

    if (fd < 0) {
        return ENOENT == errno ? GPU_INPROGRESS : GPU_ERR_INVALID;
    }
    /* the owner may not have sized it yet */
    if (0 != fstat(fd, &sb) || sb.st_size < (off_t) sizeof(gpu_kind_board_t)) {
        close(fd);
        return GPU_INPROGRESS;
    }
    st = gpu_kind_map(fd, &b);
    if (GPU_OK != st) {
        return st;
    }
    if (GPU_KIND_MAGIC != __atomic_load_n(&b->magic, __ATOMIC_ACQUIRE)) {
        gpu_kind_board_close(b);
        return GPU_INPROGRESS;
    }
    *out = b;
    return GPU_OK;
}

void gpu_kind_board_close(gpu_kind_board_t *b)
{
    if (NULL != b) {
        munmap(b, sizeof(*b));
    }
}

void gpu_kind_board_unlink(const char *name)
{
    shm_unlink(name);
}

static size_t gpu_kind_hash(uint64_t key)
{
    key *= 0x9e3779b97f4a7c15ull;
    return (size_t) (key >> 40) % GPU_KIND_SLOTS;
}

gpu_status_t gpu_kind_slot_claim(gpu_kind_board_t *b, uint64_t key, gpu_kind_post_t *w)
{
    const uint64_t now = gpu_kind_now_s();
    const size_t h = gpu_kind_hash(key);
    gpu_kind_slot_t *take = NULL, *oldest = NULL;

    /* a never-used slot ends the probe; before it, a slot freed longer than
     * the grace period ago is best, else the one freed longest ago (with
     * thousands of communicators made and freed per second) */
    for (size_t i = 0; i < GPU_KIND_SLOTS && NULL == take; ++i) {
        gpu_kind_slot_t *s = &b->slot[(h + i) % GPU_KIND_SLOTS];
        const uint64_t k = s->key;
        if (k == key + 1) {
            take = s;   /* ours still live: its id came back before it was let go */
        } else if (GPU_KIND_FREED == k) {
            if (NULL == oldest || s->freed_at < oldest->freed_at) {
                oldest = s;
            }
        } else if (0 == k) {
            take = NULL != oldest && now - oldest->freed_at >= GPU_KIND_GRACE_S ? oldest : s;
        }
    }
    if (NULL == take) {
        take = oldest;
    }
    if (NULL == take) {
        return GPU_ERR_NO_MEMORY;
    }
    take->was_key = 0;
    take->pub = 0;
    take->nchg = 0;
    __atomic_store_n(&take->key, key + 1, __ATOMIC_RELEASE);
    w->slot = take;
    w->calls = 0;
    w->kind = GPU_KIND_HOST;
    return GPU_OK;
}

void gpu_kind_slot_release(gpu_kind_post_t *w)
{
    if (NULL != w->slot) {
        w->slot->freed_at = gpu_kind_now_s();
        w->slot->was_key = w->slot->key;
        __atomic_store_n(&w->slot->key, GPU_KIND_FREED, __ATOMIC_RELEASE);
        w->slot = NULL;
    }
}

gpu_kind_slot_t *gpu_kind_slot_find_last(gpu_kind_board_t *b, uint64_t key, int *freed)
{
    const size_t h = gpu_kind_hash(key);
    gpu_kind_slot_t *gone = NULL;
    /* a live slot of the key wins: the owner made the key's communicator
     * again (a freed one of it may lie earlier on the probe) */
    for (size_t i = 0; i < GPU_KIND_SLOTS; ++i) {
        gpu_kind_slot_t *s = &b->slot[(h + i) % GPU_KIND_SLOTS];
        const uint64_t k = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
        if (k == key + 1) {
            *freed = 0;
            return s;
        }
        if (GPU_KIND_FREED == k && s->was_key == key + 1 && NULL == gone) {
            gone = s;
        }
        if (0 == k) {
            break;
        }
    }
    *freed = NULL != gone;
    return gone;
}

gpu_kind_slot_t *gpu_kind_slot_find(gpu_kind_board_t *b, uint64_t key)
{
    int freed;
    gpu_kind_slot_t *s = gpu_kind_slot_find_last(b, key, &freed);
    return freed ? NULL : s;
}

int gpu_kind_room(const gpu_kind_post_t *w, uint64_t min_reader_pub)
{
    /* the point to drop is needed by a reader of a call before the next
     * point's call; a reader at counter p reads calls >= p - 1 */
    const gpu_kind_slot_t *s = w->slot;
    const uint64_t next = s->chg[(s->nchg - GPU_KIND_CHANGES + 1) % GPU_KIND_CHANGES] >>
                          GPU_KIND_BITS;
    return min_reader_pub >= next + 1;
}

gpu_status_t gpu_kind_read(const gpu_kind_slot_t *s, uint64_t call, int *kind)
{
    uint64_t n, lo;
    if (__atomic_load_n(&s->pub, __ATOMIC_ACQUIRE) <= call) {
        return GPU_INPROGRESS;
    }
    n = __atomic_load_n(&s->nchg, __ATOMIC_ACQUIRE);
    lo = n > GPU_KIND_CHANGES ? n - GPU_KIND_CHANGES : 0;
    /* newest point at or before call; points only get newer calls */
    for (uint64_t i = n; i > lo; --i) {
        const uint64_t c = s->chg[(i - 1) % GPU_KIND_CHANGES];
        if (c >> GPU_KIND_BITS <= call) {
            *kind = (int) (c & ((1u << GPU_KIND_BITS) - 1));
            return GPU_OK;
        }
    }
    if (0 == lo) {
        *kind = GPU_KIND_HOST;   /* before the first change: the initial kind */
        return GPU_OK;
    }
    return GPU_ERR_INVALID;
}
