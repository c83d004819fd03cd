/*
 * The memory-kind board: how the ranks of a communicator agree, call by
 * call, whether all of them passed device memory.
 *
 * Why: MPI lets each rank pick its own memory, so one rank may pass host
 * buffers (and go to Open MPI's host algorithm) while the others pass
 * device buffers (and would meet in the GPU protocol): neither side would
 * ever see the other.  The ranks must make the same choice, but a
 * host-buffer program must not pay for it and the device fast path must
 * not gain a message.
 *
 * How: every process owns one shared-memory board (a file in /dev/shm
 * named by job and rank) holding a slot per communicator.  At every
 * collective call a rank *posts* its kind in its own slot: one store of
 * its call counter, plus a "change point" when its kind differs from its
 * previous call's.  Posting never waits, so host ranks pay a store per call
 * and read nothing.  A rank with device buffers *reads* the slots of its
 * peers for the same call number (their counter must have passed it; the
 * kind is the newest change point at or before it) and takes the GPU path
 * only when every peer posted "device"; otherwise it stages through host
 * copies and Open MPI's algorithm, which is what the host ranks run.  The
 * ranks thus decide from the same words and always match.
 *
 * A writer records at most GPU_KIND_CHANGES change points that a lagging
 * reader may still need; a rank that changes kind that often ahead of a
 * peer waits (bounded) until the peer's counter shows it has passed them.
 * A host-only program never records a change, so it never waits.
 *
 * Slots are found by communicator key (open addressing); a freed slot is
 * reused only after a grace period, so a slow reader never mistakes a new
 * communicator's slot for the old one's.
 */
#ifndef GPU_KIND_BOARD_H
#define GPU_KIND_BOARD_H

#include <stdint.h>

#include "gpu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPU_KIND_SLOTS 4096
#define GPU_KIND_CHANGES 24

/* A device post may carry GPU_KIND_BUSY: this rank's application works on
 * the GPU between its calls (the engine's measure), which every rank must
 * see alike before it picks the resident kernel for a large call
 * (gpu_engine_kind_call).  GPU_KIND_STAGE: device memory, but this rank's
 * part cannot take the GPU path (its datatype, its layout): the call
 * stages everywhere, and since no rank runs on host memory, the ranks
 * stage through the host library's nonblocking form, a wait they bound.
 * GPU_KIND_POOL (device posts only): this rank holds its process's
 * large-message pool for this blocking call (engine/gpu_pool.h, the
 * lease); other calls repeat the last post's bit, so that it records no
 * change point of its own. */
enum { GPU_KIND_HOST = 0, GPU_KIND_DEVICE = 1, GPU_KIND_BUSY = 2, GPU_KIND_STAGE = 4,
       GPU_KIND_POOL = 8 };
#define GPU_KIND_BITS 4

typedef struct gpu_kind_slot {
    volatile uint64_t key;        /* communicator key + 1; 0 never used; GPU_KIND_FREED */
    volatile uint64_t pub;        /* calls entered (the next call's number) */
    volatile uint64_t nchg;       /* change points recorded */
    volatile uint64_t freed_at;   /* seconds (CLOCK_MONOTONIC) the slot was let go */
    volatile uint64_t was_key;    /* key + 1 of a freed slot, until it is taken again */
    uint64_t pad[3];
    volatile uint64_t chg[GPU_KIND_CHANGES];   /* call << GPU_KIND_BITS | kind */
} gpu_kind_slot_t;

typedef struct gpu_kind_board {
    volatile uint64_t magic;
    uint64_t pad[7];
    gpu_kind_slot_t slot[GPU_KIND_SLOTS];
} gpu_kind_board_t;

/* The writer's side of one slot, kept in the owner's private memory. */
typedef struct {
    gpu_kind_slot_t *slot;
    uint64_t calls;
    int kind;                     /* of the last call posted */
} gpu_kind_post_t;

/* Create (owner) or open (peer) the board called name.  open: GPU_INPROGRESS
 * while the owner has not made it yet. */
gpu_status_t gpu_kind_board_create(const char *name, gpu_kind_board_t **out);
gpu_status_t gpu_kind_board_open(const char *name, gpu_kind_board_t **out);
void gpu_kind_board_close(gpu_kind_board_t *b);
void gpu_kind_board_unlink(const char *name);

/* Owner: claim a slot for key (GPU_ERR_NO_MEMORY when full); let it go. */
gpu_status_t gpu_kind_slot_claim(gpu_kind_board_t *b, uint64_t key, gpu_kind_post_t *w);
void gpu_kind_slot_release(gpu_kind_post_t *w);
/* Peer: the slot of key, or NULL while the owner has not claimed it. */
gpu_kind_slot_t *gpu_kind_slot_find(gpu_kind_board_t *b, uint64_t key);
/* The same, or the slot the owner let go (its communicator freed) and has
 * not taken again: a rank on another node may still ask what the owner
 * posted for one of its last calls (a rooted collective completes early).
 * *freed says which. */
gpu_kind_slot_t *gpu_kind_slot_find_last(gpu_kind_board_t *b, uint64_t key, int *freed);

/* Post this call's kind; returns its number.  A change of kind records a
 * change point: when gpu_kind_full says the points are all kept, first wait
 * for gpu_kind_room.  Inline: every collective call of every rank posts. */
static inline uint64_t gpu_kind_post(gpu_kind_post_t *w, int kind)
{
    gpu_kind_slot_t *s = w->slot;
    const uint64_t call = w->calls++;
    if (kind != w->kind) {
        const uint64_t n = s->nchg;
        s->chg[n % GPU_KIND_CHANGES] = call << GPU_KIND_BITS | (uint64_t) kind;
        __atomic_store_n(&s->nchg, n + 1, __ATOMIC_RELEASE);
        w->kind = kind;
    }
    __atomic_store_n(&s->pub, call + 1, __ATOMIC_RELEASE);
    return call;
}

static inline int gpu_kind_full(const gpu_kind_post_t *w, int kind)
{
    return kind != w->kind && w->slot->nchg >= GPU_KIND_CHANGES;
}
/* Room for one more change point, given the smallest counter of the
 * readers (their pub): 1 when the oldest kept point is no longer needed. */
int gpu_kind_room(const gpu_kind_post_t *w, uint64_t min_reader_pub);
/* The kind a peer posted for call number call: GPU_OK with *kind, or
 * GPU_INPROGRESS while the peer has not reached it; GPU_ERR_INVALID when
 * the history needed was dropped (cannot happen while writers respect
 * gpu_kind_room). */
gpu_status_t gpu_kind_read(const gpu_kind_slot_t *s, uint64_t call, int *kind);

#ifdef __cplusplus
}
#endif

#endif
