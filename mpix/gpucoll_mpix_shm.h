/*
 * libgpucoll's host transport: what an enqueued call that no kernel takes
 * runs on, without Open MPI and so at any thread level.
 *
 * Why: CUDA runs a stream's host functions on a thread of its own.  Open
 * MPI may be called from there only under MPI_THREAD_MULTIPLE, which
 * programs written for MPICH's stream API do not ask for.  So everything
 * that needs Open MPI happens on the application's thread (the segment is
 * made at MPIX_Stream_comm_create, ops and types are resolved at the
 * enqueue) and the host function only moves bytes through shared memory
 * and folds them with this project's functors or the application's own
 * MPI_User_function.
 *
 * How: one POSIX shared-memory segment per stream communicator whose ranks
 * share a node, made by rank 0 under a unique name, mapped by every rank
 * and unlinked once all have it (nothing is left behind by a crash).  It
 * holds, per rank, two counters on cache lines of their own and a slot;
 * and per ordered pair of ranks a byte ring for point-to-point messages.
 *
 * A collective goes in rounds: every rank writes its piece into its own
 * slot, publishes the round number (release), waits until every rank has
 * (acquire), reads or folds the pieces it needs from the slots, then says
 * it is done with the round and waits for every rank's done before the
 * next round rewrites its slot.  Folds run in rank order from the last rank
 * down (inout = x_r op inout), so user ops need only be associative and
 * every rank computes the same bits.  Rounds are numbered per communicator:
 * a stream runs its communicator's calls one at a time.
 *
 * A message is a 16-byte header (bytes, tag) then its payload, padded to
 * 16, in the ring from sender to receiver (head advanced by the sender,
 * tail by the receiver).  A receive takes the first message whose tag it
 * accepts, in the order the peer sent them (MPI's non-overtaking rule);
 * sends complete once the ring holds them, so a halo exchange's sends and
 * receives progress together in any wait.  A message by reference (the
 * CUDA IPC path, gpucoll_mpix_p2p_ipc.c) carries, instead of its bytes, a
 * sequence number and the sender's opaque description of them (att); the
 * receiver says when it is done with them (gcs_recv_done) in the pair's
 * acknowledgement slot seq % GCS_ACKS, and only then does the send
 * complete (at most GCS_ACKS such sends of a pair are unacknowledged).  A
 * receive is finished by its caller in every case (the bytes still go from
 * the staging copy to the application's buffer): the transport says it has
 * arrived, gcs_recv_done completes it.
 *
 * Across nodes (gpucoll_mpix_net.c) the same rounds and messages go over
 * coll/gpu's UCX transport instead of the segment: a round's pieces are
 * sent to the ranks that read them and land in per-peer areas that stand
 * in for their slots (no "done" step: the areas are the reader's own); a
 * message is a header (bytes, tag) and its bytes, two tagged sends
 * numbered per ordered pair, so that receives still match in the order the
 * peer sent; no message goes by reference.
 *
 * Nothing here waits: a call is a state machine that the library's
 * progress thread (gpucoll_mpix_prog.c) steps until it is done.  CUDA may
 * run every host function of a process on one thread, so a host function
 * that waited for a peer would hold back every later host function of
 * every stream of the process, the peer's part among them where its
 * streams reach their calls in another order (on 4x H100 the stream test
 * got no answer).  Every wait is bounded by the timeout given at creation;
 * one that runs out names the rank it waited for, and the transport then
 * refuses every later call (its rounds are out of step with the peers').
 */
#ifndef GPUCOLL_MPIX_SHM_H
#define GPUCOLL_MPIX_SHM_H

#include <stddef.h>

#include <mpi.h>

#include "mpix/gpucoll_mpix_abi.h"

typedef struct gcs gcs_t;

/* Collective over comm, on the application's thread.  *out is NULL (and
 * MPI_SUCCESS returned) where comm's ranks span nodes or the segment could
 * not be made on every rank (the rank that failed says why). */
int gcs_create(MPI_Comm comm, double timeout_s, gcs_t **out);
/* The same transport over coll/gpu's network (gpucoll_mpix_net.c), for a
 * communicator gcs_create gave none: collective likewise, *out NULL where
 * coll/gpu has no network for it (the same on every rank). */
int gcs_net_create(MPI_Comm comm, double timeout_s, const gpucoll_mpix_abi_t *abi,
                   gcs_t **out);
/* 1 where messages may go by reference (the node's segment), 0 over the
 * network, which carries every message's bytes */
int gcs_by_reference(const gcs_t *t);
void gcs_destroy(gcs_t *t);

/* One collective on host memory laid out densely (see gcs_coll's comment
 * in the .c file for each collective's buffers); any thread, no MPI. */
typedef struct {
    gpucoll_mpix_coll_t coll;
    const char *in;
    char *out;
    size_t bytes;             /* per block (allgather, alltoall, reduce_scatter_block) or all */
    size_t esize;             /* bytes of one element of the fold (reductions) */
    int root;
    const gpucoll_mpix_fold_t *fold;
    void (*apply)(const gpucoll_mpix_fold_t *, const void *, void *, size_t);
} gcs_coll_t;

/* where a call stands; zeroed before its first step */
typedef struct {
    int phase;
    size_t off;
    double since;
} gcs_coll_state_t;

/* the answer of a step that is not done yet (MPI's codes are >= 0) */
#define GCS_PENDING (-1)

/* One step of a collective, never a wait: GCS_PENDING, MPI_SUCCESS or the
 * error (a timeout names the rank).  A communicator's calls go one at a
 * time, in the same order on every rank. */
int gcs_coll_test(gcs_t *t, const gcs_coll_t *c, gcs_coll_state_t *s, const char *fn);

/* the most bytes a message by reference carries instead of its own */
#define GCS_ATT_MAX 128

/* A point-to-point message on host memory, or by reference. */
typedef struct gcs_msg {
    int send;
    int peer, tag;            /* tag MPI_ANY_TAG: a receive takes any */
    char *buf;
    size_t bytes;             /* send: its size; receive: the room */
    MPI_Status *status;       /* receive: filled when complete, or MPI_STATUS_IGNORE */
    const void *att;          /* send by reference: what goes instead of buf */
    size_t att_bytes;         /* 0: by value */
    /* progress, reset when posted */
    size_t moved, got;
    int hdr, complete, err, got_tag;
    int pushed;               /* send: all of it is in the ring */
    int arrived;              /* receive: all of it (or the reference) is here */
    int remote;               /* receive: by reference, the sender's att in ratt */
    unsigned long long seq;   /* by reference: the pair's acknowledgement number */
    int bouncing;             /* by reference, its bytes go through host memory */
    int bounced;              /* receive: and all of them are in its buffer */
    size_t bmoved;            /* the bytes of it bounced so far */
    char ratt[GCS_ATT_MAX];
    void *nreq[2];            /* over the network: header and bytes in flight */
    unsigned long long nhdr[2];   /* over the network: the header a send carries */
    char *tmp;                /* over the network: a truncated receive's whole message */
    struct gcs_msg *next;     /* the transport's active list */
} gcs_msg_t;

/* The stream reached the call that posted m. */
void gcs_post(gcs_t *t, gcs_msg_t *m);
/* One pass over every posted message (progress thread): MPI_SUCCESS, or
 * an error once the transport is broken (an earlier timeout). */
int gcs_poll(gcs_t *t);
/* whether a timeout broke the transport (a look: no progress) */
int gcs_broken(const gcs_t *t);
/* Receive m has arrived and its caller is done with it (its bytes are
 * where they go): it completes, and a sender by reference may go on. */
void gcs_recv_done(gcs_t *t, gcs_msg_t *m);
/* One pass over every posted message: GCS_PENDING until the n given are
 * complete, then MPI_SUCCESS or their first error (MPI_ERR_TRUNCATE); a
 * timeout counted from since (gcs_clock) names the peer. */
int gcs_wait_test(gcs_t *t, gcs_msg_t *const *m, int n, double since, const char *fn);

/* A receive by reference whose sender's memory this rank cannot map (a
 * CUDA IPC handle refused: the sender freed and made again at the same
 * address an allocation this rank still maps, and closing that mapping
 * would wait for the device, whose stream waits for this very message) gets
 * its bytes through host memory instead: the receiver asks, the sender's
 * progress copies the message into the pair's bounce area half by half,
 * the receiver's out of it.  The copies are the caller's (CUDA): out puts n
 * bytes of send m from offset off into host memory, in takes them into
 * receive m; 0 or an MPI error.  One bounce per pair at a time. */
typedef int (*gcs_bounce_fn_t)(gcs_msg_t *m, char *host, size_t off, size_t n);
void gcs_set_bounce(gcs_t *t, gcs_bounce_fn_t out, gcs_bounce_fn_t in);
/* receive m (arrived, by reference): 1 asked, 0 another bounce from that
 * peer is under way (ask again later); progress then fills it, and
 * m->bounced says when its bytes are in place (then gcs_recv_done) */
int gcs_bounce_ask(gcs_t *t, gcs_msg_t *m);

double gcs_clock(void);
/* a short spin, then the core goes to others (ranks may share cores) */
void gcs_pause(unsigned *spins);

int gcs_size(const gcs_t *t);
int gcs_rank(const gcs_t *t);

#endif /* GPUCOLL_MPIX_SHM_H */
