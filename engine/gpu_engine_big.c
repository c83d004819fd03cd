/*
 * The large-message areas of a communicator, on demand: its own (grown at
 * the first blocking call that needs them) or the process's pool (joined
 * once, leased per call: on the kind board where every rank has one, else
 * by exchange).  Every step is agreed by all ranks through the
 * communicator's host allgather or the same posts, so all end in the same
 * state and a rank without the memory makes every rank stage.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/gpu_engine_internal.h"

/* Every rank's verdict on its mappings: GPU_OK where all succeeded,
 * GPU_ERR_UNSUPPORTED where one did not, GPU_ERR_BOOTSTRAP where the
 * exchange itself failed. */
static gpu_status_t gpu_engine_big_verdicts(gpu_engine_comm_t *c, gpu_status_t local)
{
    int32_t verdict = (int32_t) local, verdicts[GPU_MAX_PEERS];
    gpu_status_t st = GPU_OK;

    if (GPU_OK != c->boot->allgather(c->boot_ctx, &verdict, verdicts, sizeof(verdict))) {
        return GPU_ERR_BOOTSTRAP;
    }
    for (int i = 0; i < c->nranks; ++i) {
        st = GPU_OK != verdicts[i] ? GPU_ERR_UNSUPPORTED : st;
    }
    return st;
}

/* A growth or a join that failed on some rank: every rank drops what it
 * mapped; a failed exchange breaks the communicator, a refusal makes
 * every rank stage these calls from then on. */
static gpu_status_t gpu_engine_big_fail(gpu_engine_comm_t *c, gpu_status_t st, const char *what)
{
    gpu_engine_big_release(c);
    if (GPU_ERR_BOOTSTRAP == st) {
        GPU_ERROR("rank %d: exchange of the large-message %s failed", c->rank, what);
        c->broken = 1;
        return st;
    }
    c->big_state = GPU_BIG_FAILED;
    c->big_refused = 1;
    return GPU_ERR_UNSUPPORTED;
}

/*
 * Growth: every rank is in the same blocking call (the caller's choice of
 * path is one every rank makes alike), so the communicator's own host
 * allgather can carry the handles, then the verdicts; all ranks end in the
 * same state.  A rank that cannot get the memory makes every rank stage
 * these calls from then on; nothing aborts.
 */
static gpu_status_t gpu_engine_big_grow(gpu_engine_comm_t *c)
{
    const int n = c->nranks;
    gpu_boot_handle_t mine, *all = calloc((size_t) n, sizeof(*all));
    const gpu_ipc_handle_t *handles[GPU_MAX_PEERS];
    gpu_status_t st = GPU_OK, local;

    if (NULL == all) {
        return GPU_ERR_NO_MEMORY;
    }
    /* the allocation synchronises our stream: a resident kernel idling on
     * it would hold that for up to coll_gpu_persist_idle_us */
    gpu_engine_pk_park(c);
    memset(&mine, 0, sizeof(mine));
    mine.status = (int32_t) gpu_engine_big_alloc(c, &mine.handle);
    if (GPU_OK != c->boot->allgather(c->boot_ctx, &mine, all, sizeof(mine))) {
        st = GPU_ERR_BOOTSTRAP;
        goto fail;
    }
    local = GPU_OK;
    for (int i = 0; i < n; ++i) {
        handles[i] = &all[i].handle;
        if (GPU_OK != all[i].status) {
            GPU_LOG(1, "rank %d: rank %d could not allocate its large-message scratch (%s)",
                    c->rank, i, gpu_status_string((gpu_status_t) all[i].status));
            local = GPU_ERR_NO_MEMORY;
        }
    }
    if (GPU_OK == local) {
        local = gpu_engine_map(c, handles, 1);
    }
    st = gpu_engine_big_verdicts(c, local);
    if (GPU_OK != st) {
        goto fail;
    }
    free(all);
    c->big_state = GPU_BIG_READY;
    return GPU_OK;

fail:
    free(all);
    return gpu_engine_big_fail(c, st, "scratch");
}

/*
 * The join's verdicts, and whether every rank's lease comes on the kind
 * board (this call's posts were read: gpu_engine_kind_call or settle gave
 * kind_pool).  Only then do later calls skip the lease's exchange: a rank
 * without a board slot (its board full) would never post a vote.
 */
static gpu_status_t gpu_engine_pool_verdicts(gpu_engine_comm_t *c, gpu_status_t local)
{
    int32_t mine[2] = { (int32_t) local, c->kind_pool >= 0 }, all[2 * GPU_MAX_PEERS];
    gpu_status_t st = GPU_OK;

    if (GPU_OK != c->boot->allgather(c->boot_ctx, mine, all, sizeof(mine))) {
        return GPU_ERR_BOOTSTRAP;
    }
    c->pool_board = 1;
    for (int i = 0; i < c->nranks; ++i) {
        st = GPU_OK != all[2 * i] ? GPU_ERR_UNSUPPORTED : st;
        c->pool_board &= 0 != all[2 * i + 1];
    }
    return st;
}

/*
 * The pool, at this communicator's first call that needs it: every rank's
 * card (its process's area, allocated at the process's first such call),
 * each peer's area mapped (once per peer process, gpu_pool_map), and the
 * verdicts, as gpu_engine_big_grow does for private areas.
 */
static gpu_status_t gpu_engine_pool_join(gpu_engine_comm_t *c)
{
    const int n = c->nranks;
    gpu_pool_card_t mine;
    gpu_status_t st = GPU_OK, local;

    gpu_engine_pk_park(c);   /* the allocation may synchronise the device */
    c->pool_carded = GPU_OK == gpu_pool_card(c->pool, c->pool_bytes, &mine);
    if (GPU_OK != c->boot->allgather(c->boot_ctx, &mine, c->pool_cards, sizeof(mine))) {
        st = GPU_ERR_BOOTSTRAP;
        goto fail;
    }
    local = GPU_OK;
    for (int i = 0; i < n && GPU_OK == local; ++i) {
        if (GPU_OK != c->pool_cards[i].status) {
            GPU_LOG(1, "rank %d: rank %d has no large-message pool (%s)", c->rank, i,
                    gpu_status_string((gpu_status_t) c->pool_cards[i].status));
            local = GPU_ERR_NO_MEMORY;
        } else if (c->pool_cards[i].bytes < c->big_bytes) {
            local = GPU_ERR_UNSUPPORTED;   /* cut from other parameters */
        }
    }
    for (int i = 0; i < n && GPU_OK == local; ++i) {
        local = gpu_pool_map(c->pool, &c->pool_cards[i], (void **) &c->big_base[i]);
        if (GPU_OK != local) {
            c->big_base[i] = NULL;
            GPU_ERROR("rank %d: cannot map the large-message pool of rank %d", c->rank, i);
        }
    }
    st = gpu_engine_pool_verdicts(c, local);
    if (GPU_OK != st) {
        goto fail;
    }
    c->big_state = GPU_BIG_READY;
    GPU_LOG(10, "rank %d: large-message pool of %zu bytes mapped (%d peer processes open on "
            "device %d, %d communicators share it; leases %s)", c->rank, c->pool_bytes,
            gpu_pool_open_peers(c->pool), c->device, gpu_pool_users(c->pool),
            c->pool_board ? "on the kind board" : "agreed per call");
    return GPU_OK;

fail:
    return gpu_engine_big_fail(c, st, "pool");
}

/* Every rank of the call holds its area (all 1) or the call stages, each
 * rank giving back what it took (the same answer everywhere). */
static gpu_status_t gpu_engine_pool_verdict(gpu_engine_comm_t *c, int all)
{
    if (!all) {
        gpu_engine_pool_unvote(c);
        c->pool_busy++;
        GPU_LOG(10, "rank %d: a rank's large-message pool is busy: this call stages",
                c->rank);
        return GPU_ERR_UNSUPPORTED;
    }
    return GPU_OK;
}

/*
 * The lease of one call (gpu_pool.h): every rank takes its own process's
 * area without waiting and says whether it got it; the call uses the pool
 * only where all did, otherwise every rank gives back what it took and the
 * call stages (the same answer everywhere).
 */
static gpu_status_t gpu_engine_pool_lease(gpu_engine_comm_t *c)
{
    int32_t vote, votes[GPU_MAX_PEERS];

    c->pool_held = c->pool_held || gpu_pool_try_lease(c->pool);
    vote = c->pool_held;
    if (GPU_OK != c->boot->allgather(c->boot_ctx, &vote, votes, sizeof(vote))) {
        gpu_engine_pool_unvote(c);
        GPU_ERROR("rank %d: agreement on the large-message pool failed", c->rank);
        c->broken = 1;
        return GPU_ERR_BOOTSTRAP;
    }
    c->pool_xchg_calls++;
    return gpu_engine_pool_verdict(c, gpu_pool_agree(votes, c->nranks));
}

int gpu_engine_pool_vote(gpu_engine_comm_t *c)
{
    if (NULL == c || NULL == c->pool || GPU_BIG_FAILED == c->big_state) {
        return 0;
    }
    c->pool_held = c->pool_held || gpu_pool_try_lease(c->pool);
    return c->pool_held;
}

void gpu_engine_pool_unvote(gpu_engine_comm_t *c)
{
    if (NULL != c && c->pool_held) {
        gpu_pool_return(c->pool, 1);
        c->pool_held = 0;
    }
}

void gpu_engine_big_done(gpu_engine_comm_t *c, int finished)
{
    if (c->pool_held) {
        gpu_pool_return(c->pool, finished);
        c->pool_held = 0;
    }
}

gpu_status_t gpu_engine_big_need(gpu_engine_comm_t *c, int blocking)
{
    if (NULL != c->pool) {
        gpu_status_t st;
        /* every lease is agreed by all ranks: a nonblocking start never
         * waits for its peers, so those calls stage */
        if (GPU_BIG_FAILED == c->big_state || !blocking) {
            return GPU_ERR_UNSUPPORTED;
        }
        if (GPU_BIG_READY != c->big_state) {
            /* the join's call: its votes were posted before this rank's
             * area existed, so this one call agrees its lease by exchange */
            st = gpu_engine_pool_join(c);
            return GPU_OK != st ? st : gpu_engine_pool_lease(c);
        }
        if (c->pool_board && c->kind_pool >= 0) {
            /* every rank read the same posts of this call: no exchange */
            c->pool_board_calls++;
            return gpu_engine_pool_verdict(c, 1 == c->kind_pool);
        }
        return gpu_engine_pool_lease(c);
    }
    if (GPU_BIG_READY == c->big_state) {
        return GPU_OK;
    }
    /* a nonblocking start never waits for its peers: such a call stages
     * until a blocking one has grown the areas */
    if (GPU_BIG_FAILED == c->big_state || !blocking) {
        return GPU_ERR_UNSUPPORTED;
    }
    return gpu_engine_big_grow(c);
}

int gpu_engine_big_refused(gpu_engine_comm_t *c)
{
    const int r = NULL != c && c->big_refused;
    if (r) {
        c->big_refused = 0;
    }
    return r;
}
