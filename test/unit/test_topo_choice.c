/*
 * The choice per size (topo/gpu_topo_choice.h): the kernel each collective
 * takes at the component's defaults for 2, 3, 4 and 8 ranks, at the sizes
 * where the measured crossovers put it, and properties every shape keeps.
 */
#include <string.h>

#include "test/unit/check.h"
#include "topo/gpu_topo_choice.h"

#define K ((size_t) 1024)
#define M (K * K)

static void want(int n, gpu_choice_coll_t coll, size_t bytes, const char *label, int nblocks)
{
    gpu_topo_limits_t l;
    gpu_topo_choice_t c;
    gpu_topo_limits_default(n, &l);
    gpu_topo_choose(&l, n, coll, bytes, &c);
    CHECK(0 == strcmp(c.label, label) && (nblocks < 0 || c.nblocks == nblocks),
          "%d ranks, %s of %zu bytes: %s in %d blocks, want %s in %d",
          n, gpu_topo_choice_coll_name(coll), bytes, c.label, c.nblocks, label, nblocks);
}

static void test_four_ranks(void)
{
    /* reduce_scatter: 512 KiB a peer resident (s14 b/: 26.2 us against 42.1),
     * from 1 MiB a peer the put fold in 32 blocks */
    want(4, GPU_CHOICE_REDUCE_SCATTER, 2 * M, "persistent", 64);
    want(4, GPU_CHOICE_REDUCE_SCATTER, 4 * M, "put", 32);
    want(4, GPU_CHOICE_REDUCE_SCATTER, 1024 * M, "put", 32);
    want(4, GPU_CHOICE_ALLREDUCE, 8, "persistent", -1);
    want(4, GPU_CHOICE_ALLREDUCE, 512 * K, "persistent", -1);
    want(4, GPU_CHOICE_ALLREDUCE, 1 * M, "two-shot", 128);
    want(4, GPU_CHOICE_REDUCE, 512 * K, "persistent", -1);
    want(4, GPU_CHOICE_REDUCE, 1 * M, "two-shot to root", -1);
    want(4, GPU_CHOICE_REDUCE, 64 * M - 4, "two-shot to root", -1);
    want(4, GPU_CHOICE_REDUCE, 64 * M, "chain", 128);
    want(4, GPU_CHOICE_BCAST, 1 * M, "persistent", -1);
    want(4, GPU_CHOICE_BCAST, 2 * M, "put", 128);
    want(4, GPU_CHOICE_BCAST, 64 * M, "chain", 128);
    want(4, GPU_CHOICE_ALLGATHER, 4 * M, "persistent", -1);   /* 1 MiB a pair */
    want(4, GPU_CHOICE_ALLGATHER, 8 * M, "put", 128);
    want(4, GPU_CHOICE_ALLTOALL, 8 * M, "put", 128);
}

static void test_other_shapes(void)
{
    /* 2 ranks: no chains nor reduce two-shot; the fold in the copies' 128 */
    want(2, GPU_CHOICE_BCAST, 64 * M, "put", 128);
    want(2, GPU_CHOICE_REDUCE, 4 * M, "put", 128);
    want(2, GPU_CHOICE_REDUCE, 1 * M, "persistent", -1);
    want(2, GPU_CHOICE_REDUCE_SCATTER, 2 * M, "persistent", -1);   /* 1 MiB a pair */
    want(2, GPU_CHOICE_REDUCE_SCATTER, 4 * M, "put", 128);
    want(2, GPU_CHOICE_ALLGATHER, 4 * M, "persistent", -1);
    want(2, GPU_CHOICE_ALLREDUCE, 2 * M, "two-shot", -1);
    /* 3 ranks: the fold in 128 (32 was up to 1.7x slower, s14 c/) */
    want(3, GPU_CHOICE_REDUCE_SCATTER, 6 * M, "put", 128);
    want(3, GPU_CHOICE_REDUCE, 2 * M, "two-shot to root", -1);
    /* 8 ranks: the resident kernel reduces to 256 KiB a peer */
    want(8, GPU_CHOICE_REDUCE_SCATTER, 2 * M, "persistent", -1);
    want(8, GPU_CHOICE_REDUCE_SCATTER, 4 * M, "exchange-reduce", 128);
    want(8, GPU_CHOICE_REDUCE_SCATTER, 8 * M, "put", 32);
}

/* Every shape: one kernel per size range, and the resident kernel only at
 * the small end (a collective never returns to it once it left); a
 * reduction never takes a copy's kernel nor the other way round. */
static void test_properties(void)
{
    for (int n = 2; n <= 16; ++n) {
        for (int k = 0; k < GPU_CHOICE_NCOLLS; ++k) {
            gpu_topo_limits_t l;
            int left = 0, bad = 0, mixed = 0;
            const int reduces = GPU_CHOICE_ALLREDUCE == k || GPU_CHOICE_REDUCE == k ||
                                GPU_CHOICE_REDUCE_SCATTER == k;
            gpu_topo_limits_default(n, &l);
            for (size_t b = 8; b <= ((size_t) 1 << 31); b *= 2) {
                gpu_topo_choice_t c;
                gpu_topo_choose(&l, n, (gpu_choice_coll_t) k, b, &c);
                if (0 == c.pair) {
                    continue;   /* fewer bytes than ranks: no call of that size */
                }
                const int res = 0 == strcmp(c.label, "persistent");
                bad |= left && res;
                left |= !res;
                mixed |= reduces ? 0 == strcmp(c.label, "exchange-copy")
                                 : 0 == strcmp(c.label, "exchange-reduce") ||
                                       0 == strcmp(c.label, "two-shot");
            }
            CHECK(!bad, "%d ranks, %s: back to the resident kernel after leaving it", n,
                  gpu_topo_choice_coll_name((gpu_choice_coll_t) k));
            CHECK(!mixed, "%d ranks, %s: a kernel of the other kind", n,
                  gpu_topo_choice_coll_name((gpu_choice_coll_t) k));
        }
    }
}

int main(void)
{
    test_four_ranks();
    test_other_shapes();
    test_properties();
    printf("%d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
