/*
 * What a communicator's engine allocates, decided before anything is
 * allocated: the parameters it runs with (gpu_engine_fit) and the offsets
 * of its small area and the size of its large one (gpu_engine_layout).
 * No CUDA call here, so that a CPU unit test (test/unit/test_comm_memory)
 * checks the very figures the setup allocates.
 *
 * Memory per communicator and rank (issue 37): the large areas (two-shot
 * blocks and exchange-kernel slots, 384 MiB by default) are the process's
 * pool where coll_gpu_pool is on (engine/gpu_pool.h), shared by every
 * communicator on the device.  What stays the communicator's own are the
 * areas whose flags or lines must not be seen by another communicator:
 * the launched kernels' flags, the one-shot's LL slots, the resident
 * kernel's lines and the host-paced staging.  Sized from the default
 * parameters alone these are 25 MiB per rank at 2 ranks and 34 MiB at 4
 * (the lines are 4 x ranks x the largest pair, the staging 16 MiB): 48
 * communicators would hold 1.2-1.6 GiB per GPU beside the pool.  So with
 * the pool, the own area is cut to fit coll_gpu_pool_comm_bytes: the flags
 * first (fixed: they count blocks and peers), then of the rest three
 * quarters for the resident kernel's lines, an eighth each for the
 * one-shot's slots and the paced staging.  Calls
 * above the cut sizes take the launched kernels over the pool (blocking)
 * or more paced rounds (nonblocking).  Every rank cuts alike: the cut
 * depends on the parameters and the communicator's size only.
 *
 * Not in the cut: stream communicators' lines and bulk slots
 * (MPIX_Stream_comm_create), the wide reductions' inputs (long double int)
 * and the hierarchy's node engines, which keep areas of their own.
 */
#include <string.h>

#include "engine/gpu_engine_internal.h"
#include "kernels/gpu_put.h"
#include "kernels/gpu_stream.h"

/* the resident kernel's lines without the pool: at most this, so that a
 * communicator of many ranks that only runs small calls stays small */
#define GPU_PK_REGION_CAP ((size_t) 32 << 20)

static size_t gpu_round_up(size_t x, size_t a)
{
    return (x + a - 1) / a * a;
}

/* The small area's flags, before its first size-dependent region. */
static size_t gpu_engine_flags_end(void)
{
    const size_t put = gpu_round_up(gpu_round_up(GPU_FLAGS_BYTES, 4096) + GPU_XCHG_FLAGS_BYTES,
                                    4096);
    return gpu_round_up(put + GPU_PUT_FLAGS_BYTES, 4096);
}

int gpu_engine_gpu_shared(const gpu_engine_comm_t *c)
{
    for (int i = 0; i < c->nranks; ++i) {
        for (int j = i + 1; j < c->nranks; ++j) {
            if (0 == strcmp(c->busid[i], c->busid[j])) {
                return 1;
            }
        }
    }
    return 0;
}

/* Ranks that time-slice one GPU (no MPS) would each hold it through every
 * slice with a resident kernel; MPI_THREAD_MULTIPLE paces every call. */
int gpu_engine_pk_wanted(const gpu_engine_comm_t *c)
{
    return !(c->p.persist < 0 && gpu_engine_gpu_shared(c) && !c->mps_all) && !c->threads_any;
}

size_t gpu_engine_pk_region_bytes(const gpu_engine_comm_t *c)
{
    const size_t lines = c->p.persist_max_bytes / GPU_LL_PAYLOAD;
    if (0 == c->p.persist || c->nranks < 2 || 0 == lines || !gpu_engine_pk_wanted(c)) {
        return 0;
    }
    return GPU_LL_SLOTS_OFF + 2 * (size_t) c->nranks * lines * GPU_LL_LINE;
}

/* With the pool: the own area's regions cut to p->pool_comm_bytes (the
 * shares: see the top).  Only ever lowers a parameter. */
static void gpu_engine_pool_cut(gpu_engine_params_t *p, int nranks)
{
    const size_t n = (size_t) nranks;
    /* the flags, and what rounding each of the three regions up to a page
     * may add */
    const size_t fixed = gpu_engine_flags_end() + 3 * 4096;
    const size_t rest = p->pool_comm_bytes > fixed ? p->pool_comm_bytes - fixed : 0;
    const size_t lines = rest / 4 * 3, eighth = rest / 8;
    size_t most;

    most = lines > GPU_LL_SLOTS_OFF
           ? (lines - GPU_LL_SLOTS_OFF) / (2 * n * GPU_LL_LINE) * GPU_LL_PAYLOAD : 0;
    if (p->persist_max_bytes > most) {
        p->persist_max_bytes = most;
    }
    if (p->persist_reduce_max_bytes > p->persist_max_bytes) {
        p->persist_reduce_max_bytes = p->persist_max_bytes;
    }
    most = eighth / (2 * n) / 256 * 256;
    if (p->oneshot_max_bytes > most) {
        p->oneshot_max_bytes = most;
    }
    /* the paced staging never goes to 0 (that would make nonblocking calls
     * launch kernels, which cannot wait for the pool's lease) */
    most = eighth / (2 * n * 256) * (2 * n * 256);
    most = most > 0 ? most : 2 * n * 256;
    if (p->paced_scratch > most) {
        p->paced_scratch = most;
    }
}

void gpu_engine_fit(gpu_engine_comm_t *c)
{
    gpu_engine_params_t *p = &c->p;

    if (p->nblocks < 1 || p->nblocks > GPU_MAX_BLOCKS) {
        p->nblocks = GPU_MAX_BLOCKS < 32 ? GPU_MAX_BLOCKS : 32;
    }
    if (p->xchg_nblocks < 1 || p->xchg_nblocks > GPU_MAX_BLOCKS) {
        p->xchg_nblocks = GPU_MAX_BLOCKS;
    }
    if (p->put_fold_nblocks < 0 || p->put_fold_nblocks > GPU_MAX_BLOCKS) {
        p->put_fold_nblocks = p->xchg_nblocks;
    }
    if (p->oneshot_blocks < 1 || p->oneshot_blocks > GPU_MAX_BLOCKS) {
        p->oneshot_blocks = 4;
    }
    {
        /* 4 x ranks x its largest pair: at most GPU_PK_REGION_CAP */
        const size_t most = GPU_PK_REGION_CAP / (4 * (size_t) c->nranks) / GPU_LL_PAYLOAD *
                            GPU_LL_PAYLOAD;
        if (p->persist_max_bytes > most) {
            p->persist_max_bytes = most;
        }
        if (p->persist_reduce_max_bytes > p->persist_max_bytes) {
            p->persist_reduce_max_bytes = p->persist_max_bytes;
        }
    }
    if (p->pool && c->nranks > 1 && p->pool_comm_bytes > 0) {
        gpu_engine_pool_cut(p, c->nranks);
    }
}

/*
 * Two allocations per rank.  The small one, made at setup: every flag of
 * the launched kernels (one-shot, two-shot, exchange kernel: they must stay
 * the communicator's own), the one-shot's LL slots, the resident kernel's
 * lines, the host-paced staging (every nonblocking call) and, on stream
 * communicators, the stream-ordered lines and bulk slots: what calls up to
 * about a MiB use.  The large one, made at the first blocking call that
 * launches a two-shot or exchange kernel: their pipelined data slots only
 * (coll_gpu_scratch_bytes, coll_gpu_xchg_scratch_bytes), from the
 * process's pool (coll_gpu_pool 1, shared by every communicator on the
 * device) or the communicator's own.  A communicator that never runs a
 * large call never maps the large one.
 */
void gpu_engine_layout(gpu_engine_comm_t *c, size_t *total)
{
    size_t n = (size_t) c->nranks, cap;

    c->xg_flags_off = gpu_round_up(GPU_FLAGS_BYTES, 4096);
    c->put_off = gpu_round_up(c->xg_flags_off + GPU_XCHG_FLAGS_BYTES, 4096);
    c->ll_off = gpu_round_up(c->put_off + GPU_PUT_FLAGS_BYTES, 4096);
    c->ll_slot = gpu_round_up(c->p.oneshot_max_bytes, 256);
    c->pk_off = gpu_round_up(c->ll_off + 2 * n * c->ll_slot, 4096);
    c->pk_bytes = gpu_engine_pk_region_bytes(c);
    c->hs_off = gpu_round_up(c->pk_off + c->pk_bytes, 4096);
    /* the staging of host-paced rounds: blocking calls where ranks share a
     * GPU, every nonblocking call (no kernel of theirs waits for a peer) */
    c->hs_bytes = c->p.paced_scratch > 0 ? gpu_round_up(c->p.paced_scratch, 2 * n * 256) : 0;
    /* the stream-ordered allreduce's lines (stream communicators only) */
    c->st_off = gpu_round_up(c->hs_off + c->hs_bytes, 4096);
    c->st_bytes = gpu_stream_region_bytes(c->p.stream_max_bytes, c->nranks);
    c->st_lines = (c->p.stream_max_bytes + GPU_STREAM_PAYLOAD - 1) / GPU_STREAM_PAYLOAD;
    /* and its bulk form's: two parities of a slot per source */
    c->sb_off = gpu_round_up(c->st_off + c->st_bytes, 4096);
    c->sb_slot = 0;
    if (c->st_bytes > 0) {
        c->sb_slot = c->p.stream_bulk_bytes / (2 * n) / GPU_STREAM_BULK_PIECE *
                     GPU_STREAM_BULK_PIECE;
    }
    c->sb_bytes = gpu_stream_bulk_region_bytes(c->sb_slot, c->nranks);
    *total = c->sb_off + c->sb_bytes;

    /* large, data only: the two-shot's blocks, then the exchange kernel's
     * [source][block][parity] slots (their flags are in the small area:
     * values only grow, so its fresh zeros serve whatever call comes first) */
    c->ts_off = 0;
    cap = c->p.twoshot_scratch / (size_t) c->p.nblocks / (2 * n);
    cap = cap / 4096 * 4096;
    if (cap < 4096) {
        cap = 4096;
    }
    c->ts_block = cap * 2 * n;
    c->xg_slots_off = gpu_round_up(c->ts_off + c->ts_block * (size_t) c->p.nblocks, 4096);
    c->xg_slot = c->p.xchg_scratch / (n * (size_t) c->p.xchg_nblocks * 2) / 4096 * 4096;
    if (c->xg_slot < GPU_XCHG_MIN_CHUNK) {
        c->xg_slot = GPU_XCHG_MIN_CHUNK;
    }
    c->big_bytes = gpu_round_up(c->xg_slots_off + c->xg_slot * n * (size_t) c->p.xchg_nblocks * 2,
                                4096);
    /* the pool's area is one size for every communicator of the process
     * (never regrown: peers map it), so it is cut from the parameters, not
     * from this communicator's size; each layout above fits in it */
    c->pool_bytes = gpu_round_up(c->p.twoshot_scratch, 4096) +
                    gpu_round_up(c->p.xchg_scratch, 4096) + 2 * 4096;
    if (c->big_bytes > c->pool_bytes) {
        c->pool_bytes = c->big_bytes;
    }
}
