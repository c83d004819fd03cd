/*
 * What a communicator costs in device memory with the large-message pool
 * (issue 37: at most 4 MiB per rank beyond the pool at any call size, 48
 * communicators after 4 MiB calls at most 1 GiB per GPU, everything back
 * within MPI_Comm_free), on the CPU: the engine's own sizing code
 * (engine/gpu_engine_layout.c: gpu_engine_fit, gpu_engine_layout, what the
 * setup allocates) and the pool (engine/gpu_pool.c) through a memory table
 * that counts the bytes allocated and not yet freed.
 *
 * Checks:
 *  - for 2-32 ranks and two parameter sets (today's defaults, and larger
 *    one-shot, resident and paced sizes), the own area with the pool fits
 *    coll_gpu_pool_comm_bytes (3 and 6 MiB), and without the pool it does
 *    not fit 4 MiB (what the targets would catch);
 *  - the cut only lowers parameters, 0 means no cut, the large area of
 *    every size fits the pool's one area;
 *  - at 2 ranks the resident kernel still takes a 256 KiB allreduce with
 *    the default 3 MiB (the 2-GPU latency target is at 256 KiB);
 *  - 48 communicators of 2 and of 4 ranks, each through the setup's
 *    allocation and the first large call's pool join (a 4 MiB allreduce,
 *    alltoall and bcast take the two-shot or exchange kernel's area:
 *    card, peers mapped), released in the engine's order: each costs at
 *    most 4 MiB beyond the pool, all 48 at most 1 GiB, peers' areas opened
 *    once, and after the last release not a byte stays allocated (nothing
 *    freed later); the private areas' cost of the same 48 is printed
 *    beside it (over 1 GiB: the check would catch it).
 * The engine and its kernels themselves run on a GPU only
 * (test/gpu/test_gpu_comm_memory measures cudaMemGetInfo there).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/gpu_engine_internal.h"
#include "engine/gpu_pool.h"
#include "test/unit/check.h"

#define MIB ((size_t) 1 << 20)
#define NCOMMS 48

/* ---- a memory table that counts what is allocated --------------------- */

typedef struct {
    void *p;
    size_t n;
} t_block_t;

static t_block_t blocks[4 * NCOMMS + 8];
static size_t live_bytes;
static int nimport, nclose;
static uintptr_t next_map = 0x7000000000ull;

static gpu_status_t t_alloc(size_t bytes, void **ptr)
{
    for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); ++i) {
        if (NULL == blocks[i].p) {
            /* only the count matters: no memory behind the address */
            blocks[i].p = (void *) (next_map += (bytes + 4095) / 4096 * 4096 + 4096);
            blocks[i].n = bytes;
            live_bytes += bytes;
            *ptr = blocks[i].p;
            return GPU_OK;
        }
    }
    return GPU_ERR_NO_MEMORY;
}

static void t_free(void *ptr)
{
    for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); ++i) {
        if (blocks[i].p == ptr) {
            live_bytes -= blocks[i].n;
            blocks[i].p = NULL;
            return;
        }
    }
    CHECK(0, "free of an address never allocated");
}

static gpu_status_t t_export(void *ptr, gpu_ipc_handle_t *h)
{
    memset(h, 0, sizeof(*h));
    memcpy(h->bytes, &ptr, sizeof(ptr));
    return GPU_OK;
}

/* a peer's area: its memory, not ours */
static gpu_status_t t_import(const gpu_ipc_handle_t *h, void **ptr)
{
    (void) h;
    *ptr = (void *) (next_map += MIB);
    ++nimport;
    return GPU_OK;
}

static void t_close(void *ptr)
{
    (void) ptr;
    ++nclose;
}

static const gpu_pool_mem_ops_t ops = {
    .alloc = t_alloc, .free = t_free, .export_mem = t_export, .import_mem = t_import,
    .close = t_close,
};

/* ---- the engine's sizing ---------------------------------------------- */

/* the component's defaults (coll_gpu_component.c), or a larger set */
static gpu_engine_params_t params(int large, int pool, size_t comm_bytes)
{
    gpu_engine_params_t p;
    memset(&p, 0, sizeof(p));
    p.oneshot_max_bytes = large ? 1 * MIB : 256 * 1024;
    p.twoshot_scratch = 128 * MIB;
    p.xchg_scratch = 256 * MIB;
    p.nblocks = 128;
    p.xchg_nblocks = 128;
    p.persist = -1;
    p.persist_max_bytes = large ? 4 * MIB : 1 * MIB;
    p.persist_reduce_max_bytes = large ? 4 * MIB : 1 * MIB;
    p.paced_scratch = large ? 64 * MIB : 16 * MIB;
    p.pool = pool;
    p.pool_comm_bytes = comm_bytes;
    return p;
}

/* A communicator of n ranks, one GPU each, sized as the setup sizes it:
 * its own area's bytes (*total) and the engine state. */
static gpu_engine_comm_t *sized(int n, gpu_engine_params_t p, size_t *total)
{
    gpu_engine_comm_t *c = calloc(1, sizeof(*c));
    c->nranks = n;
    c->p = p;
    for (int i = 0; i < n; ++i) {
        snprintf(c->busid[i], sizeof(c->busid[i]), "0000:%02x:00.0", i + 1);
    }
    gpu_engine_fit(c);
    gpu_engine_layout(c, total);
    return c;
}

static void test_sizes(void)
{
    static const int ns[] = { 2, 3, 4, 8, 16, 32 };
    static const size_t budgets[] = { 3 * MIB, 6 * MIB };

    for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); ++k) {
        for (int large = 0; large < 2; ++large) {
            for (size_t b = 0; b < 2; ++b) {
                size_t total;
                gpu_engine_comm_t *c = sized(ns[k], params(large, 1, budgets[b]), &total);
                CHECK(total <= budgets[b], "%d ranks, %s parameters: own area %zu bytes with "
                      "the pool, over %zu", ns[k], large ? "large" : "default", total,
                      budgets[b]);
                CHECK(c->big_bytes <= c->pool_bytes, "%d ranks: large area %zu in the pool's "
                      "%zu", ns[k], c->big_bytes, c->pool_bytes);
                CHECK(c->pk_bytes > 0 && c->ll_slot > 0 && c->hs_bytes > 0, "%d ranks: every "
                      "region still there (resident %zu, one-shot slot %zu, paced %zu)", ns[k],
                      c->pk_bytes, c->ll_slot, c->hs_bytes);
                free(c);
            }
            {
                size_t total;
                gpu_engine_comm_t *c = sized(ns[k], params(large, 0, 3 * MIB), &total);
                CHECK(total > 4 * MIB, "%d ranks without the pool: own area %zu bytes (the "
                      "targets must be able to catch it)", ns[k], total);
                if (0 == large && ns[k] <= 4) {
                    printf("%d ranks: own area %.1f MiB without the pool (large area %.0f MiB "
                           "more)", ns[k], (double) total / MIB, (double) c->big_bytes / MIB);
                }
                free(c);
            }
            if (0 == large && ns[k] <= 4) {
                size_t total;
                gpu_engine_comm_t *c = sized(ns[k], params(0, 1, 3 * MIB), &total);
                printf(", %.2f MiB with it: resident kernel to %zu KiB (reductions %zu), "
                       "one-shot %zu KiB, paced staging %zu KiB\n", (double) total / MIB,
                       c->p.persist_max_bytes >> 10, c->p.persist_reduce_max_bytes >> 10,
                       c->p.oneshot_max_bytes >> 10, c->p.paced_scratch >> 10);
                free(c);
            }
        }
    }
    {
        size_t total;
        gpu_engine_comm_t *c = sized(2, params(0, 1, 3 * MIB), &total);
        CHECK(c->p.persist_reduce_max_bytes >= 256 * 1024, "2 ranks, 3 MiB: the resident "
              "kernel reduces up to %zu bytes, below 256 KiB", c->p.persist_reduce_max_bytes);
        free(c);
    }
    {
        /* already small: left as they are */
        gpu_engine_params_t p = params(0, 1, 3 * MIB), q;
        size_t total;
        gpu_engine_comm_t *c;
        p.oneshot_max_bytes = 4096;
        p.persist_max_bytes = p.persist_reduce_max_bytes = 8192;
        p.paced_scratch = 65536;
        q = p;
        c = sized(4, p, &total);
        CHECK(c->p.oneshot_max_bytes == q.oneshot_max_bytes &&
              c->p.persist_max_bytes == q.persist_max_bytes &&
              c->p.paced_scratch == q.paced_scratch, "the cut raised a parameter");
        free(c);
    }
    {
        /* 0: no cut, the own area as without the pool */
        size_t with, without;
        free(sized(4, params(0, 1, 0), &with));
        free(sized(4, params(0, 0, 0), &without));
        CHECK(with == without, "coll_gpu_pool_comm_bytes 0 cut the area (%zu, not %zu)", with,
              without);
    }
}

/* ---- 48 communicators through the pool --------------------------------- */

/*
 * Each communicator of n ranks (this process is rank 0; the peers are
 * processes 1..n-1, the same for all 48, as dups of one world): the
 * setup's own area, then the first 4 MiB call's pool join (every rank's
 * card, the peers' areas mapped: gpu_engine_pool_join), then the release
 * of gpu_engine_release: peers unmapped, card put, own area freed, detach.
 */
static void test_comms(int n)
{
    gpu_engine_comm_t *c[NCOMMS];
    gpu_pool_t *pool[NCOMMS];
    void *own[NCOMMS];
    gpu_pool_card_t cards[NCOMMS][GPU_MAX_PEERS];
    size_t total = 0, first = 0, pool_area = 0, priv = 0;
    const int imports0 = nimport, closes0 = nclose;
    int ok = 1;

    for (int k = 0; k < NCOMMS; ++k) {
        size_t before = live_bytes;
        c[k] = sized(n, params(0, 1, 3 * MIB), &total);
        pool[k] = gpu_pool_attach(0, &ops);
        ok &= NULL != pool[k] && GPU_OK == t_alloc(total, &own[k]);
        /* a 4 MiB allreduce (two-shot), alltoall and bcast (exchange
         * kernel) on it: the large area, joined at the first */
        ok &= GPU_OK == gpu_pool_card(pool[k], c[k]->pool_bytes, &cards[k][0]);
        for (int r = 1; r < n; ++r) {
            void *at = NULL;
            memset(&cards[k][r], 0, sizeof(cards[k][r]));
            cards[k][r].status = GPU_OK;
            cards[k][r].pid = (int32_t) getpid() + r;
            cards[k][r].serial = 1;
            cards[k][r].bytes = c[k]->pool_bytes;
            ok &= GPU_OK == gpu_pool_map(pool[k], &cards[k][r], &at);
        }
        for (int call = 0; call < 3; ++call) {
            ok &= 1 == gpu_pool_try_lease(pool[k]);
            gpu_pool_return(pool[k], 1);
        }
        if (0 == k) {
            first = live_bytes - before;
            pool_area = gpu_pool_bytes(pool[k]);
        }
        {
            /* the same communicator with its own areas (coll_gpu_pool 0) */
            size_t t;
            gpu_engine_comm_t *p = sized(n, params(0, 0, 0), &t);
            priv += t + p->big_bytes;
            free(p);
        }
    }
    CHECK(ok, "%d ranks: 48 communicators set up and joined the pool", n);
    {
        const double each = (double) (live_bytes - first) / (NCOMMS - 1) / MIB;
        const double all = (double) live_bytes / MIB;
        printf("%d ranks: the first communicator %.1f MiB (the pool %.0f), each next %.2f MiB, "
               "48 in all %.1f MiB; with their own areas %.1f MiB\n", n, (double) first / MIB,
               (double) pool_area / MIB, each, all, (double) priv / MIB);
        CHECK(each <= 4.0, "%d ranks: each communicator after the first %.2f MiB (at most 4)",
              n, each);
        CHECK(all <= 1024.0, "%d ranks: 48 communicators %.1f MiB in all (at most 1024)", n,
              all);
        CHECK(priv > 1024 * MIB, "%d ranks: with their own areas only %.1f MiB (the check "
              "would not catch that cost)", n, (double) priv / MIB);
        CHECK(nimport - imports0 == n - 1, "%d ranks: each peer's area opened once (%d opens)",
              n, nimport - imports0);
    }
    for (int k = 0; k < NCOMMS; ++k) {
        for (int r = 1; r < n; ++r) {
            gpu_pool_unmap(pool[k], &cards[k][r]);
        }
        gpu_pool_card_put(pool[k]);
        t_free(own[k]);
        gpu_pool_detach(pool[k]);
        if (NCOMMS - 2 == k) {
            CHECK(live_bytes == pool_area + total, "%d ranks: one communicator left holds the "
                  "pool and its own area (%zu bytes, not %zu)", n, live_bytes,
                  pool_area + total);
        }
        free(c[k]);
    }
    CHECK(0 == live_bytes, "%d ranks: %zu bytes still allocated after the last free", n,
          live_bytes);
    CHECK(nclose - closes0 == n - 1, "%d ranks: every peer's area closed (%d of %d)", n,
          nclose - closes0, n - 1);
}

int main(void)
{
    test_sizes();
    test_comms(2);
    test_comms(4);
    test_comms(8);
    printf("test_comm_memory: %d passed, %d failed\n", npass, nfail);
    return nfail > 0;
}
