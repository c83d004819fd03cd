/*
 * libgpucoll's host transport, inside: the segment's layout and the
 * transport's state, shared by its files (gpucoll_mpix_shm.c: rounds and
 * messages; gpucoll_mpix_bounce.c: a message by reference that its
 * receiver cannot map, moved through host memory instead).
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

struct gcs {
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

/* the ring from src to dst: its counters, then its bytes */
gcs_ring_ctl_t *gcs_ring(const gcs_t *t, int src, int dst);

/* one pass of a bounce (gpucoll_mpix_bounce.c), under the transport's
 * lock: send m puts what its receiver can take; receive m takes what came */
void gcs_bounce_send_step(gcs_t *t, gcs_msg_t *m);
void gcs_bounce_recv_step(gcs_t *t, gcs_msg_t *m);

#endif
