/*
 * The user-buffer IPC cache (ipc/gpu_ipc_cache.c) against a stand-in
 * driver and transport, on the CPU: which allocation a pointer belongs to
 * comes from a table here, "exporting" writes the allocation's base into
 * the handle, "opening" hands out a fresh address and counts it, closing
 * counts too.  Checks that handles and mappings are made once per
 * allocation, that a freed allocation (gone, or its range reused) is logged
 * by its exporter and closed by the importer, that an importer closes an
 * overlapped mapping by itself, that the mapping count is bounded, and
 * that each reader of the log (a communicator) gets every entry once.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "ipc/gpu_ipc_cache.h"
#include "test/unit/check.h"
#include "util/gpu_cuda_drv.h"

typedef struct {
    uint64_t base, size, id;
    int live;
} fake_alloc_t;

static fake_alloc_t allocs[600];
static int nallocs, nexports, nopens, ncloses, nqueries;
static uint64_t next_map = 0x700000000000ull, next_id = 1;

static int fake_alloc(uint64_t base, uint64_t size)
{
    allocs[nallocs] = (fake_alloc_t) { base, size, next_id++, 1 };
    return nallocs++;
}

/* the driver query the cache makes: which live allocation holds ptr */
int gpu_drv_ipc_range(const void *ptr, void **base, size_t *size, unsigned long long *id)
{
    const uint64_t p = (uint64_t) (uintptr_t) ptr;
    ++nqueries;
    for (int i = nallocs - 1; i >= 0; --i) {
        if (allocs[i].live && p >= allocs[i].base && p < allocs[i].base + allocs[i].size) {
            *base = (void *) (uintptr_t) allocs[i].base;
            *size = allocs[i].size;
            *id = allocs[i].id;
            return 1;
        }
    }
    return 0;
}

static gpu_status_t fake_export(void *ptr, gpu_ipc_handle_t *h)
{
    memset(h, 0, sizeof(*h));
    memcpy(h->bytes, &ptr, sizeof(ptr));
    ++nexports;
    return GPU_OK;
}

static gpu_status_t fake_import(const gpu_ipc_handle_t *h, void **ptr)
{
    (void) h;
    *ptr = (void *) (uintptr_t) next_map;
    next_map += 1ull << 32;
    ++nopens;
    return GPU_OK;
}

static void fake_release(void *ptr)
{
    (void) ptr;
    ++ncloses;
}

const gpu_transport_ops_t gpu_ipc_cuda_ops = { .name = "fake", .export_mem = fake_export,
                                               .import_mem = fake_import,
                                               .release_mem = fake_release };

static void *at(int a, uint64_t off)
{
    return (void *) (uintptr_t) (allocs[a].base + off);
}

int main(void)
{
    gpu_ipc_ref_t r1, r2, r3;
    void *p = NULL, *q = NULL;
    uint64_t ids[8];
    unsigned long long cursor = 0, other = 0;
    int n;

    /* one allocation, two buffers in it: one handle, one mapping */
    const int a = fake_alloc(0x10000000, 1 << 20);
    CHECK(GPU_OK == gpu_ipc_ref_make(at(a, 256), &r1) && 1 == nexports, "first export");
    CHECK(GPU_OK == gpu_ipc_ref_make(at(a, 4096), &r2) && 1 == nexports,
          "same allocation: no second export (%d)", nexports);
    CHECK(256 == r1.offset && 4096 == r2.offset && r1.id == allocs[a].id &&
          r1.pid == (int32_t) getpid(), "offsets and id");
    CHECK(GPU_OK == gpu_ipc_ref_open(&r1, &p) && 1 == nopens, "first open");
    CHECK(GPU_OK == gpu_ipc_ref_open(&r2, &q) && 1 == nopens, "same allocation: no second open");
    CHECK((char *) q - (char *) p == 4096 - 256, "mapped addresses keep the offsets");
    CHECK(GPU_ERR_UNSUPPORTED == gpu_ipc_ref_make((void *) (uintptr_t) 0x5, &r3),
          "memory the driver cannot share is refused");
    n = gpu_ipc_exports_gone(&cursor, ids, 8);
    CHECK(0 == n, "nothing gone yet (%d)", n);

    /* freed, and the range comes back as another allocation: the export is
     * replaced and logged, and the importer closes the old mapping */
    allocs[a].live = 0;
    const int b = fake_alloc(0x10000000, 2 << 20);
    CHECK(GPU_OK == gpu_ipc_ref_make(at(b, 0), &r3) && 2 == nexports && r3.id != r1.id,
          "reused range: new handle");
    n = gpu_ipc_exports_gone(&cursor, ids, 8);
    CHECK(1 == n && ids[0] == allocs[a].id, "the freed allocation is logged (%d)", n);
    gpu_ipc_forget(r1.pid, ids, n);
    CHECK(1 == ncloses && 0 == gpu_ipc_cache_maps(), "its mapping closed (%d closes)", ncloses);
    CHECK(GPU_OK == gpu_ipc_ref_open(&r3, &p) && 2 == nopens, "the new one opened");
    /* a second reader of the log (another communicator) gets it too, once */
    n = gpu_ipc_exports_gone(&other, ids, 8);
    CHECK(1 == n && ids[0] == allocs[a].id, "second reader sees the entry (%d)", n);
    CHECK(0 == gpu_ipc_exports_gone(&other, ids, 8), "and only once");

    /* freed with no reuse: found by the checks made at each call */
    const int c = fake_alloc(0x40000000, 1 << 20);
    CHECK(GPU_OK == gpu_ipc_ref_make(at(c, 0), &r1) && GPU_OK == gpu_ipc_ref_open(&r1, &p),
          "third allocation shared");
    allocs[c].live = 0;
    n = 0;
    for (int call = 0; call < 4 && 0 == n; ++call) {
        /* a call: its buffer (in the live allocation b), then the log */
        (void) gpu_ipc_ref_make(at(b, 64), &r2);
        n = gpu_ipc_exports_gone(&cursor, ids, 8);
    }
    CHECK(1 == n && ids[0] == allocs[c].id, "a free without reuse is found within a few calls");

    /* steady state, the same buffer call after call: one driver query per
     * call (the buffer's own), none for the log's checks */
    {
        const int q0 = nqueries;
        for (int call = 0; call < 10; ++call) {
            (void) gpu_ipc_ref_make(at(b, 64), &r2);
            (void) gpu_ipc_exports_gone(&cursor, ids, 8);
        }
        CHECK(nqueries - q0 == 10, "reused buffers: %d driver queries in 10 calls", nqueries - q0);
    }

    /* the importer on its own: a new allocation of the same process over
     * the range of a mapped one means that one was freed */
    const int d = fake_alloc(0x80000000, 1 << 20);
    CHECK(GPU_OK == gpu_ipc_ref_make(at(d, 0), &r1) && GPU_OK == gpu_ipc_ref_open(&r1, &p),
          "fourth allocation shared");
    const int before = gpu_ipc_cache_maps(), closed = ncloses;
    allocs[d].live = 0;
    const int e = fake_alloc(0x80000000 + 4096, 1 << 20);
    CHECK(GPU_OK == gpu_ipc_ref_make(at(e, 0), &r2) && GPU_OK == gpu_ipc_ref_open(&r2, &q),
          "overlapping allocation shared");
    CHECK(ncloses == closed + 1 && gpu_ipc_cache_maps() == before,
          "the overlapped mapping was closed (%d -> %d maps)", before, gpu_ipc_cache_maps());

    /* many allocations alive at once: at most GPU_IPC_CACHE_MAPS mappings */
    for (int i = 0; i < GPU_IPC_CACHE_MAPS + 20; ++i) {
        const int f = fake_alloc(0x100000000ull + (uint64_t) i * (4 << 20), 1 << 20);
        (void) gpu_ipc_ref_make(at(f, 0), &r1);
        (void) gpu_ipc_ref_open(&r1, &p);
    }
    CHECK(gpu_ipc_cache_maps() == GPU_IPC_CACHE_MAPS, "mappings bounded (%d)",
          gpu_ipc_cache_maps());
    printf("test_ipc_cache: %d passed, %d failed\n", npass, nfail);
    return nfail > 0;
}
