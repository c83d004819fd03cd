/*
 * The CUDA IPC path of libgpucoll's point-to-point enqueue (not
 * installed): how a sender names its device buffer to a receiver on the
 * node and how the receiver copies from it, behind an ops table so that
 * gpucoll_mpix_p2p.c knows no CUDA IPC call.  Design and why at the top of
 * gpucoll_mpix_p2p_ipc.c.
 */
#ifndef GPUCOLL_MPIX_IPC_H
#define GPUCOLL_MPIX_IPC_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

/* the sender's freed allocations one message by reference names */
#define GC_IPC_GONE_MAX 4

/* a message's bytes by reference: what goes through the host transport
 * instead of them (gcs_msg_t's att, at most 128 bytes).  A mapping keeps
 * the sender's memory alive after its cudaFree, so each message also names
 * up to GC_IPC_GONE_MAX allocations of the sender that are gone and that
 * this receiver has not been told of: it closes its mappings of them. */
typedef struct {
    unsigned char handle[64];  /* the allocation's cudaIpcMemHandle_t */
    uint64_t base;             /* the allocation in the sender's address space */
    uint64_t id;               /* its buffer id there: an address comes back after a free */
    uint64_t offset;           /* the message in it */
    int32_t pid;               /* the sender */
    int32_t ngone;             /* entries of gone */
    uint64_t gone[GC_IPC_GONE_MAX];   /* buffer ids of the sender's freed allocations */
} gc_ipc_ref_t;

/* one copy of the progress thread into a receive buffer */
typedef struct {
    void *event;               /* cudaEvent_t, made by copy_prepare */
    int event_dev;             /* the device it was made on */
    int dev;                   /* the receive buffer's device */
} gc_ipc_copy_t;

typedef struct {
    const char *name;
    /* MPIX_Stream_comm_create, collective: ok[q] (n bytes, malloc'd) says
     * whether peer q maps this rank's buffers (it opened a probe's handle) */
    int (*setup)(MPI_Comm comm, unsigned char **ok);
    /* application's thread: describe [buf, buf + bytes); 0 where the memory
     * has no IPC handle (host, managed, cudaMallocAsync pools, VMM).  The
     * freed allocations logged since *gone_cursor (the receiver's, which
     * advances) go with it */
    int (*export_buf)(const void *buf, size_t bytes, unsigned long long *gone_cursor,
                      gc_ipc_ref_t *ref);
    /* application's thread: the device a copy into buf runs on */
    int (*device_of)(const void *buf);
    /* application's thread, as a receive is enqueued: what the progress
     * thread's copy needs made (its event, on cp->dev).  Never made on the
     * progress thread: on 4x H100 an event made there waited, as long as
     * the application's thread waited inside a copy to pageable memory
     * queued behind the receive (the stream then waits for that very
     * thread); 0, else -1 and why */
    int (*copy_prepare)(gc_ipc_copy_t *cp, const char **why);
    /* progress thread: copy bytes into dst from src, or, with ref, from the
     * sender's buffer it names (mapped once per allocation); 0 when
     * started, 1 when not yet (its mapping is being closed: ask again),
     * -2 and why when this process cannot map the sender's buffer (its
     * bytes can come another way), else -1 and why */
    int (*copy_start)(gc_ipc_copy_t *cp, void *dst, const void *src, const gc_ipc_ref_t *ref,
                      size_t bytes, const char **why);
    /* progress thread, as a message by reference arrives: this process's
     * mappings of the sender's allocations that ref names gone are to close */
    void (*forget)(const gc_ipc_ref_t *ref);
    /* application's thread, not capturing: close them (CUDA waits there
     * for the device's work, so never on the progress thread); busy: a
     * receive of the process is under way, whose copy that work may wait
     * for, so only when many wait */
    void (*reap)(int busy);
    /* progress thread: n bytes from src to dst (one of them host memory, the
     * other on device dev), done on return; 0, else -1 and why */
    int (*copy_sync)(void *dst, const void *src, size_t n, int dev, const char **why);
    /* progress thread: 1 done, 0 not yet, -1 failed (why) */
    int (*copy_test)(gc_ipc_copy_t *cp, const char **why);
    /* the descriptor goes (application's thread) */
    void (*copy_free)(gc_ipc_copy_t *cp);
    /* progress thread, at MPIX_Stream_comm_create while no stream waits for
     * it: this thread's first CUDA work on dev (its stream, an event, a
     * memset and a copy each way between dev_word and host_word, two
     * 64-byte areas of the caller's) done; 0, else -1 and why */
    int (*warm)(int dev, void *dev_word, void *host_word, const char **why);
} gc_ipc_ops_t;

extern const gc_ipc_ops_t gc_ipc_cuda_ops;

#endif /* GPUCOLL_MPIX_IPC_H */
