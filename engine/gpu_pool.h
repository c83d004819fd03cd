/*
 * The large-message pool: one data area per process and device, shared by
 * every communicator of the process on that device, mapped by each peer
 * process once (not once per communicator).
 *
 * Why: the two-shot allreduce's blocks and the exchange kernel's slots
 * (coll_gpu_scratch_bytes + coll_gpu_xchg_scratch_bytes, 384 MiB by
 * default) were allocated and IPC-mapped per communicator: 421 MiB per
 * rank after one 4 MiB allreduce, 20 GiB per GPU for 48 communicators.
 * Only the calls that launch those kernels use the area, one at a time
 * per process, so one area serves all.
 *
 * What stays private to a communicator: every flag.  The two-shot's and
 * the exchange kernel's flags live in the communicator's small area (its
 * values only grow within one communicator; another communicator's
 * values would satisfy or stall its waits), so the pool holds data only
 * and a communicator never sees another's flags.  The LL lines (one-shot
 * slots, resident kernel) carry their flags beside the data, so they stay
 * private too; with the pool they and the paced staging are cut to fit
 * coll_gpu_pool_comm_bytes (gpu_engine_layout.c): a communicator costs
 * that plus its stream, not tens of MiB.
 *
 * Who may use the area, and when (the lease):
 *  - a process's area has one user at a time: gpu_pool_try_lease takes it
 *    without waiting, gpu_pool_return gives it back once the call's kernel
 *    has finished on this rank (a blocking call's host wait saw it);
 *  - every kernel that uses the area reads only its own process's area and
 *    writes a peer's only with data the peer waits for in the same call
 *    (two-shot: pushes to recv/gath; exchange: chunks to the receiver's
 *    slots), so when a rank's kernel has finished, no write of that call
 *    into its area is still to come;
 *  - but a peer may write into this rank's area as soon as its own kernel
 *    starts.  So before a call launches, its ranks agree over the
 *    communicator's host allgather that every one of them holds its own
 *    area for this call (gpu_pool_agree: the lease is agreed, not guessed).
 *    A rank whose area is busy (a call from a progress callback while a
 *    blocking call holds it, or a kernel that never finished) votes no,
 *    and every rank of the call takes the fallback the caller names (the
 *    engine stages the call: the same answer on every rank).
 *    Where the communicator has the kind board (util/gpu_kind_board.h:
 *    one node, a slot on every rank), the vote rides on the post every
 *    blocking device call makes anyway: the rank takes its lease before it
 *    posts (GPU_KIND_POOL), keeps it until the call returns, and the ranks
 *    read each other's bits where they read the kinds.  A rank's
 *    release is safe without telling anyone: its next call's post says so
 *    before any peer could write into its area, and every write of its
 *    earlier calls has landed (the first point).  Without a board (its join
 *    found a rank without one) a call that uses the area agrees by one host
 *    allgather of 4 bytes; so does the call that joins (its posts came
 *    before this process's area existed).  That allgather on every such
 *    call was one of the pool's two costs on GPUs (docs/results s6b); the
 *    other is the resident kernel's range cut to the small area.
 *    Only blocking calls take the area (a nonblocking start never waits
 *    for its peers: those calls stage, as before the private areas had
 *    grown).  Where
 * nonblocking calls must launch those kernels (coll_gpu_scratch_lazy 0,
 * coll_gpu_paced_scratch_bytes 0) and in the hierarchy's node engines
 * (one node must never stage alone), communicators keep their own areas.
 *
 * Mappings: a communicator's first call that needs the area exchanges
 * each rank's card (process id, the area's serial, its IPC handle);
 * gpu_pool_map opens a peer process's area once and counts the
 * communicators that use it, gpu_pool_unmap closes it with the last.  A
 * communicator over a subset of the ranks reuses the mappings.
 *
 * Lifetime and release: the pool's bookkeeping lives while a communicator
 * is attached (gpu_pool_attach at the engine's setup, gpu_pool_detach at
 * its destruction, from MPI_Comm_free); its area while a communicator
 * holds a card of it (gpu_pool_card at the communicator's first large
 * call, gpu_pool_card_put at its destruction), so a process whose large
 * calls are over gives the area back even where communicators that only
 * ran small calls stay.  A communicator's destruction closes its
 * references to peers' areas first (their memory can only return to their
 * driver once no importer holds it), then puts its card: the area is freed
 * with the last, synchronously, inside MPI_Comm_free, never deferred.  A
 * lease given back by a call that failed (a timeout: its kernel, or a
 * peer's, may still write into the area) poisons the pool: no later call
 * uses it (they stage), and its area is freed only at the last detach.
 *
 * The memory functions are a table (gpu_pool_mem_ops_t) so the unit test
 * can drive the logic on a machine without a GPU.  Thread safe: one lock
 * for every pool of the process.
 */
#ifndef GPU_POOL_H
#define GPU_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "ipc/gpu_ipc.h"
#include "util/gpu_status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    /* device memory of bytes on the current device: GPU_ERR_NO_MEMORY
     * when there is no room (not an error: the caller falls back) */
    gpu_status_t (*alloc)(size_t bytes, void **ptr);
    void (*free)(void *ptr);
    gpu_status_t (*export_mem)(void *ptr, gpu_ipc_handle_t *handle);
    gpu_status_t (*import_mem)(const gpu_ipc_handle_t *handle, void **ptr);
    void (*close)(void *ptr);
} gpu_pool_mem_ops_t;

extern const gpu_pool_mem_ops_t gpu_pool_cuda_mem_ops;

typedef struct gpu_pool gpu_pool_t;

/* What a rank tells its communicator's peers about its area. */
typedef struct {
    int32_t status;             /* GPU_OK, or why this rank has none */
    int32_t pid;
    uint64_t serial;            /* the area's number in that process (never reused) */
    uint64_t bytes;
    gpu_ipc_handle_t handle;
} gpu_pool_card_t;

/* The pool of device dev (created at the first attach); NULL: no memory. */
gpu_pool_t *gpu_pool_attach(int dev, const gpu_pool_mem_ops_t *ops);
/* The last detach frees the area (synchronously) and the pool. */
void gpu_pool_detach(gpu_pool_t *pool);

/* This process's area, allocated at the first call (bytes; later calls
 * must fit in it), and its card.  GPU_ERR_NO_MEMORY: no room;
 * GPU_ERR_UNSUPPORTED: the area is smaller than bytes or poisoned. */
gpu_status_t gpu_pool_card(gpu_pool_t *pool, size_t bytes, gpu_pool_card_t *card);
/* One GPU_OK gpu_pool_card undone: the last frees the area (not while it
 * is leased or poisoned; then the last detach does). */
void gpu_pool_card_put(gpu_pool_t *pool);
/* This process's address of the area a card names: its own area, or a
 * peer's opened at most once (counted: every successful map needs one
 * unmap with the same card). */
gpu_status_t gpu_pool_map(gpu_pool_t *pool, const gpu_pool_card_t *card, void **ptr);
void gpu_pool_unmap(gpu_pool_t *pool, const gpu_pool_card_t *card);

/* The lease: 1 when this process's area is now ours, 0 when busy or
 * poisoned.  gpu_pool_return gives it back; finished 0 says the call's
 * kernel may still run (the pool is then never leased again). */
int gpu_pool_try_lease(gpu_pool_t *pool);
void gpu_pool_return(gpu_pool_t *pool, int finished);

/* The votes of every rank of a call (my lease, then the allgather's
 * answers): 1 when every rank holds its area. */
int gpu_pool_agree(const int32_t *votes, int nranks);

/* For tests and verbose output: peers' areas open now, bytes allocated
 * now (0 or the area), communicators attached. */
int gpu_pool_open_peers(const gpu_pool_t *pool);
size_t gpu_pool_bytes(const gpu_pool_t *pool);
int gpu_pool_users(const gpu_pool_t *pool);

#ifdef __cplusplus
}
#endif

#endif /* GPU_POOL_H */
