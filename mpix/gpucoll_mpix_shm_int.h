/*
 * libgpucoll's host transport, inside: the segment's layout and the
 * transport's state, shared by its files (gpucoll_mpix_shm.c: rounds and
 * messages; gpucoll_mpix_bounce.c: a message by reference that its
 * receiver cannot map, moved through host memory instead;
 * gpucoll_mpix_net.c: the same rounds and messages over coll/gpu's network
 * transport where the ranks span nodes).  The rounds' state machine, the
 * folds and the message list are the transport's; what carries them is a
 * wire (below): the node's segment or the network.
 */
#ifndef GPUCOLL_MPIX_SHM_INT_H
#define GPUCOLL_MPIX_SHM_INT_H

#include <pthread.h>
#include <stdint.h>

#include "mpix/gpucoll_mpix_shm.h"

#define GCS_LINE 64
#define GCS_HDR 16
#define GCS_MAGIC 0x67637333u   /* "gcs3": the bounce areas */
#define GCS_ACKS 64             /* unacknowledged sends by reference per pair */
#define GCS_BOUNCE_HALF (64u << 10)

/* per rank: two counters, each on a line of its own */
typedef struct {
    uint64_t posted;
    char pad0[GCS_LINE - 8];
    uint64_t done;
    char pad1[GCS_LINE - 8];
} gcs_ctl_t;

/* per ordered pair: the ring's counters, acknowledgements of sends by
 * reference, and the bounce area of one such send that the receiver could
 * not map (gpucoll_mpix_bounce.c): its two halves carry the message in
 * turn, counted in halves put in (sender) and taken out (receiver) */
typedef struct {
    uint64_t head;
    char pad0[GCS_LINE - 8];
    uint64_t tail;
    char pad1[GCS_LINE - 8];
    uint64_t ack[GCS_ACKS];   /* by the receiver: slot seq % GCS_ACKS = seq once done */
    uint64_t breq;            /* by the receiver: the send (seq) it asks to bounce, 0: none */
    char pad2[GCS_LINE - 8];
    uint64_t bfilled;         /* by the sender: halves put in, all bounces so far */
    char pad3[GCS_LINE - 8];
    uint64_t bdrained;        /* by the receiver: halves taken out, all bounces so far */
    char pad4[GCS_LINE - 8];
    char bounce[2 * GCS_BOUNCE_HALF];
} gcs_ring_ctl_t;

typedef struct {
    uint32_t magic;
    int nranks;
    uint64_t slot_bytes, ring_bytes;
    char pad[GCS_LINE - 24];
} gcs_head_t;

/* what carries a transport's rounds and messages */
typedef struct {
    /* done 0: this rank's pieces of the round (written into its slot) go
     * out; done 1: this rank has read the round's pieces */
    void (*publish)(gcs_t *t, const gcs_coll_t *c, size_t len, size_t piece, int done);
    /* the first rank this rank still waits for in the round's step (done as
     * above), -1 when none: a look, never a wait */
    int (*missing)(gcs_t *t, int done);
    /* one pass over the posted messages, the transport's lock held */
    void (*progress)(gcs_t *t);
    /* receive m is done with (before it completes) */
    void (*recv_done)(gcs_t *t, gcs_msg_t *m);
    void (*destroy)(gcs_t *t);
    /* messages may go by reference (CUDA IPC between ranks of a node) */
    int by_reference;
} gcs_wire_t;

struct gcn;

struct gcs {
    const gcs_wire_t *wire;
    char **slots;             /* per rank: where its round pieces are read */
    struct gcn *net;          /* the network wire's state (gpucoll_mpix_net.c) */
    char *base;
    size_t map_bytes;
    int rank, nranks;
    size_t slot_bytes, ring_bytes;
    double timeout_s;
    uint64_t round;           /* the last round this rank began */
    int broken;
    char name[MPI_MAX_OBJECT_NAME];
    pthread_mutex_t lock;     /* the active list */
    gcs_msg_t *active;
    gcs_msg_t **rcur;         /* per source: the receive being filled */
    gcs_msg_t **scur;         /* per destination: the send being written */
    uint64_t *ref_sent;       /* per destination: sends by reference so far */
    gcs_bounce_fn_t bounce_out, bounce_in;   /* the bounce's copies (gcs_set_bounce) */
};

/* the first posted receive from src that takes tag (the lock held) */
gcs_msg_t *gcs_match(gcs_t *t, int src, int tag);
/* a wait that ran out: says whom for, breaks the transport, an MPI error */
int gcs_timed_out(gcs_t *t, const char *fn, const char *what, int peer);
double gcs_now(void);
size_t gcs_env_size(const char *name, size_t dflt);
/* the round piece size of both wires: GPUCOLL_STREAM_SLOT_BYTES within its
 * bounds, else 16 MiB over the ranks, at most 1 MiB */
size_t gcs_slot_size(int nranks);

/* the ring from src to dst: its counters, then its bytes */
gcs_ring_ctl_t *gcs_ring(const gcs_t *t, int src, int dst);

/* one pass of a bounce (gpucoll_mpix_bounce.c), under the transport's
 * lock: send m puts what its receiver can take; receive m takes what came */
void gcs_bounce_send_step(gcs_t *t, gcs_msg_t *m);
void gcs_bounce_recv_step(gcs_t *t, gcs_msg_t *m);

#endif
