/*
 * The large-message pool (engine/gpu_pool.c) on the CPU, through an
 * injected memory table: "allocating" hands out host memory and logs it,
 * "exporting" writes the area's address into the handle, "importing"
 * returns a fresh fake address and counts it, closing and freeing are
 * logged in order.  Checks: one pool per device, shared by its attached
 * communicators; one area per process, allocated once, never regrown; a
 * peer process's area opened once however many communicators map it and
 * closed with the last unmap; the lease taken by one holder at a time
 * (threads included), agreed only where every rank got its own; a lease
 * that never came back poisons the pool; the area goes with the last card
 * put back (communicators that ran no large call do not keep it); and the
 * last detach closes every peer's area before it frees its own, exactly
 * once.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/gpu_pool.h"
#include "test/unit/check.h"

static int nalloc, nfree, nimport, nclose, fail_alloc;
static char events[64];          /* 'a' alloc, 'i' import, 'c' close, 'f' free, in order */
static int nevents;
static uintptr_t next_map = 0x7000000000ull;

static void ev(char c)
{
    if (nevents < (int) sizeof(events) - 1) {
        events[nevents++] = c;
    }
}

static gpu_status_t t_alloc(size_t bytes, void **ptr)
{
    if (fail_alloc) {
        return GPU_ERR_NO_MEMORY;
    }
    *ptr = malloc(bytes);
    ++nalloc;
    ev('a');
    return NULL != *ptr ? GPU_OK : GPU_ERR_NO_MEMORY;
}

static void t_free(void *ptr)
{
    free(ptr);
    ++nfree;
    ev('f');
}

static gpu_status_t t_export(void *ptr, gpu_ipc_handle_t *h)
{
    memset(h, 0, sizeof(*h));
    memcpy(h->bytes, &ptr, sizeof(ptr));
    return GPU_OK;
}

static gpu_status_t t_import(const gpu_ipc_handle_t *h, void **ptr)
{
    (void) h;
    *ptr = (void *) next_map;
    next_map += 1 << 20;
    ++nimport;
    ev('i');
    return GPU_OK;
}

static void t_close(void *ptr)
{
    (void) ptr;
    ++nclose;
    ev('c');
}

static const gpu_pool_mem_ops_t ops = {
    .alloc = t_alloc, .free = t_free, .export_mem = t_export, .import_mem = t_import,
    .close = t_close,
};

/* A peer process's card, as its allgather would bring it. */
static gpu_pool_card_t peer_card(int32_t pid, uint64_t serial)
{
    gpu_pool_card_t c;
    memset(&c, 0, sizeof(c));
    c.status = GPU_OK;
    c.pid = pid;
    c.serial = serial;
    c.bytes = 1 << 20;
    memcpy(c.handle.bytes, &serial, sizeof(serial));
    return c;
}

static void test_sharing(void)
{
    gpu_pool_t *a = gpu_pool_attach(0, &ops), *b = gpu_pool_attach(0, &ops);
    gpu_pool_t *other = gpu_pool_attach(1, &ops);
    gpu_pool_card_t mine, again, big;
    gpu_pool_card_t p1 = peer_card(getpid() + 1, 1), p2 = peer_card(getpid() + 2, 1);
    void *x = NULL, *y = NULL, *z = NULL;

    CHECK(NULL != a && a == b, "two communicators on device 0 share one pool");
    CHECK(NULL != other && other != a, "device 1 has a pool of its own");
    CHECK(2 == gpu_pool_users(a), "2 users, got %d", gpu_pool_users(a));
    CHECK(0 == gpu_pool_bytes(a) && 0 == nalloc, "no area before the first large call");

    CHECK(GPU_OK == gpu_pool_card(a, 4096, &mine) && 1 == nalloc, "area allocated once");
    CHECK(GPU_OK == gpu_pool_card(b, 1024, &again) && 1 == nalloc,
          "the second communicator's card reuses it (allocations %d)", nalloc);
    CHECK(mine.serial == again.serial && mine.pid == (int32_t) getpid() && 4096 == mine.bytes,
          "one card per area");
    CHECK(GPU_ERR_UNSUPPORTED == gpu_pool_card(a, 8192, &big) && GPU_ERR_UNSUPPORTED ==
          big.status && 1 == nalloc, "never regrown (peers map it): a larger ask is refused");

    /* own area: no import */
    CHECK(GPU_OK == gpu_pool_map(a, &mine, &x) && 0 == nimport, "own area mapped without IPC");
    /* communicator 1 maps peer 1; communicator 2 (a subset) maps peers 1 and 2 */
    CHECK(GPU_OK == gpu_pool_map(a, &p1, &y) && 1 == nimport, "peer 1 opened");
    CHECK(GPU_OK == gpu_pool_map(b, &p1, &z) && 1 == nimport && y == z,
          "peer 1 opened once for two communicators (imports %d)", nimport);
    CHECK(GPU_OK == gpu_pool_map(b, &p2, &z) && 2 == nimport && y != z, "peer 2 opened");
    CHECK(2 == gpu_pool_open_peers(a), "2 peer areas open, got %d", gpu_pool_open_peers(a));
    {
        /* the same process's new area (its pool was freed and made again) */
        gpu_pool_card_t p1b = peer_card(p1.pid, 2);
        void *w = NULL;
        CHECK(GPU_OK == gpu_pool_map(a, &p1b, &w) && 3 == nimport && w != y,
              "a peer's new area is a new mapping");
        gpu_pool_unmap(a, &p1b);
        CHECK(1 == nclose, "and closed with its last unmap");
    }
    gpu_pool_unmap(a, &p1);
    CHECK(1 == nclose, "peer 1 stays open while communicator 2 maps it (closes %d)", nclose);
    gpu_pool_unmap(b, &p1);
    CHECK(2 == nclose && 1 == gpu_pool_open_peers(a), "peer 1 closed with the last unmap");

    /* the lease */
    CHECK(1 == gpu_pool_try_lease(a), "lease taken");
    CHECK(0 == gpu_pool_try_lease(b), "a second holder is refused");
    gpu_pool_return(a, 1);
    CHECK(1 == gpu_pool_try_lease(b), "taken again after its return");
    gpu_pool_return(b, 1);
    {
        const int32_t all[3] = { 1, 1, 1 }, one_busy[3] = { 1, 0, 1 };
        CHECK(1 == gpu_pool_agree(all, 3), "every rank holds its area: agreed");
        CHECK(0 == gpu_pool_agree(one_busy, 3), "one rank's area busy: every rank falls back");
    }

    /* detach: not the last (communicator 2 stays) */
    gpu_pool_detach(a);
    CHECK(0 == nfree && 1 == gpu_pool_users(b), "the pool lives while a communicator uses it");
    /* the last detach with peer 2 still open (a communicator that failed
     * to unmap): closed first, then our area freed, once */
    nevents = 0;
    gpu_pool_detach(b);
    events[nevents] = '\0';
    CHECK(1 == nfree && 3 == nclose, "freed once, leftovers closed (frees %d, closes %d)", nfree,
          nclose);
    CHECK(0 == strcmp(events, "cf"), "peers closed before our area is freed: '%s'", events);
    gpu_pool_detach(other);

    /* a new pool after the last detach: a new area with a new serial */
    a = gpu_pool_attach(0, &ops);
    CHECK(GPU_OK == gpu_pool_card(a, 4096, &again) && again.serial != mine.serial,
          "a new area after the pool went (serials %llu, %llu)",
          (unsigned long long) mine.serial, (unsigned long long) again.serial);
    gpu_pool_detach(a);
}

static void test_failures(void)
{
    gpu_pool_t *p = gpu_pool_attach(2, &ops);
    gpu_pool_card_t c, bad = peer_card(getpid() + 9, 1);
    void *x = NULL;
    const int frees = nfree;

    fail_alloc = 1;
    CHECK(GPU_ERR_NO_MEMORY == gpu_pool_card(p, 4096, &c) && GPU_ERR_NO_MEMORY == c.status,
          "no room: the card says so");
    CHECK(0 == gpu_pool_try_lease(p), "no area, no lease");
    fail_alloc = 0;
    CHECK(GPU_OK == gpu_pool_card(p, 4096, &c), "room later: allocated then");
    bad.status = GPU_ERR_NO_MEMORY;
    CHECK(GPU_OK != gpu_pool_map(p, &bad, &x), "a peer without an area is not mapped");

    CHECK(1 == gpu_pool_try_lease(p), "leased");
    gpu_pool_return(p, 0);   /* its kernel may still run */
    CHECK(0 == gpu_pool_try_lease(p), "poisoned: never leased again");
    CHECK(GPU_ERR_UNSUPPORTED == gpu_pool_card(p, 4096, &c), "nor joined by a new communicator");
    gpu_pool_detach(p);
    CHECK(frees + 1 == nfree, "its area still freed at the last detach");
    CHECK(NULL == gpu_pool_attach(-1, &ops) && NULL == gpu_pool_attach(64, &ops),
          "devices out of range have none");
}

static void test_cards(void)
{
    gpu_pool_t *a = gpu_pool_attach(4, &ops), *small_only = gpu_pool_attach(4, &ops);
    gpu_pool_card_t c1, c2, c3;
    const int allocs = nalloc, frees = nfree;

    CHECK(GPU_OK == gpu_pool_card(a, 4096, &c1) && GPU_OK == gpu_pool_card(a, 4096, &c2) &&
          allocs + 1 == nalloc, "two large communicators, one area");
    gpu_pool_card_put(a);
    CHECK(frees == nfree && 4096 == gpu_pool_bytes(a), "the area stays with one holder left");
    CHECK(1 == gpu_pool_try_lease(a), "leased by the last holder");
    gpu_pool_card_put(a);
    CHECK(frees == nfree, "not freed while leased");
    gpu_pool_return(a, 1);
    CHECK(GPU_OK == gpu_pool_card(a, 4096, &c3) && c3.serial == c1.serial && allocs + 1 == nalloc,
          "the same area for a new holder");
    gpu_pool_card_put(a);
    CHECK(frees + 1 == nfree && 0 == gpu_pool_bytes(a),
          "freed with the last card although a communicator stays attached (frees %d)",
          nfree - frees);
    CHECK(GPU_OK == gpu_pool_card(a, 4096, &c3) && c3.serial != c1.serial && allocs + 2 == nalloc,
          "a later large call makes a new area with a new serial");
    gpu_pool_card_put(a);
    gpu_pool_detach(a);
    gpu_pool_detach(small_only);
    CHECK(frees + 2 == nfree, "nothing freed twice (frees %d)", nfree - frees);
}

/* threads of one process (MPI_THREAD_MULTIPLE): never two holders */
static gpu_pool_t *shared;
static int holders, most, leases;
static pthread_mutex_t count_lock = PTHREAD_MUTEX_INITIALIZER;

static void *leaser(void *arg)
{
    (void) arg;
    for (int k = 0; k < 20000; ++k) {
        if (!gpu_pool_try_lease(shared)) {
            continue;
        }
        pthread_mutex_lock(&count_lock);
        most = ++holders > most ? holders : most;
        ++leases;
        pthread_mutex_unlock(&count_lock);
        pthread_mutex_lock(&count_lock);
        --holders;
        pthread_mutex_unlock(&count_lock);
        gpu_pool_return(shared, 1);
    }
    return NULL;
}

static void test_threads(void)
{
    pthread_t t[4];
    gpu_pool_card_t c;
    shared = gpu_pool_attach(3, &ops);
    (void) gpu_pool_card(shared, 4096, &c);
    for (int i = 0; i < 4; ++i) {
        pthread_create(&t[i], NULL, leaser, NULL);
    }
    for (int i = 0; i < 4; ++i) {
        pthread_join(t[i], NULL);
    }
    CHECK(1 == most && leases > 0, "4 threads: at most %d holder at once over %d leases", most,
          leases);
    gpu_pool_detach(shared);
}

int main(void)
{
    test_sharing();
    test_failures();
    test_cards();
    test_threads();
    printf("test_pool: %d passed, %d failed\n", npass, nfail);
    return nfail > 0;
}
