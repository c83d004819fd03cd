/*
 * What libgpucoll's files share (not installed): the stream object, the
 * per-communicator state and the helpers the point-to-point file uses.
 */
#ifndef GPUCOLL_MPIX_INT_H
#define GPUCOLL_MPIX_INT_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "mpix/gpucoll_mpix_abi.h"
#include "mpix/gpucoll_mpix_shm.h"
#include "mpix/mpix_gpu.h"

struct gpucoll_mpix_stream {
    int is_cuda;
    cudaStream_t cuda;
};

/* MPI's arguments of one enqueue, counts as given */
typedef struct {
    gpucoll_mpix_coll_t coll;
    const void *sendbuf;
    void *recvbuf;
    MPI_Count scount, rcount;
    MPI_Datatype stype, rtype;
    MPI_Op op;
    int root;
    MPI_Comm comm;
    const char *fn;
} gc_args_t;

typedef struct gc_comm gc_comm_t;
typedef struct gc_p2p gc_p2p_t;

/* one enqueued collective (gpucoll_mpix.c) */
int gc_enqueue(const gc_args_t *a);
/* says why on stderr, returns code */
int gc_fail(int code, const char *fn, const char *why);
/* the stream state of comm, NULL when it has none */
gc_comm_t *gc_comm_of(MPI_Comm comm);
/* GPUCOLL_STREAM_VERBOSE > 0: say per communicator what carries its calls */
int gc_verbose(void);
/* coll/gpu's entry, NULL when it is not loaded */
const gpucoll_mpix_abi_t *gc_abi(void);
/* pinned host memory, also while the application captures; _mapped: the
 * device may read it (the flags the stream waits on) */
void *gc_pinned(size_t bytes);
void *gc_pinned_mapped(size_t bytes);
/* point-to-point staging (gpucoll_mpix_stage.c): pinned, at least bytes
 * (> 0), *cls its size class or -1 (an allocation of its own); back with
 * gc_stage_put (CUDA may wait in a free of its own for the device: only
 * eager descriptors that grow give one back) */
void *gc_stage_get(size_t bytes, int *cls, size_t *got);
void gc_stage_put(void *pin, int cls);
/* Large areas (class -1) a growing descriptor leaves are parked, not freed:
 * cudaFreeHost waits for the device, whose streams may wait for messages
 * in flight that only the progress thread completes.  (4x H100:
 * test_gpu_halo stalled in its 16 MiB eager run with or without CUDA IPC,
 * main at 501d195 too, the receiver's progress thread asleep in a futex;
 * the one such free in that run is a descriptor of the 1 MiB run growing
 * while earlier iterations were in flight.  Not yet confirmed on a GPU.)
 * The caller locks. */
typedef struct {
    void *pin;
    size_t bytes;
} gc_parked_t;
typedef struct {
    gc_parked_t *v;
    int n, cap;
} gc_park_t;
/* the smallest parked area of at least bytes (its size in *got), or NULL */
void *gc_park_take(gc_park_t *p, size_t bytes, size_t *got);
/* an old area: to its class (cls >= 0) or parked */
void gc_park_put(gc_park_t *p, void *pin, size_t bytes, int cls);
/* with the communicator: every parked area freed */
void gc_park_free(gc_park_t *p);
/* the per-communicator state the point-to-point file uses */
struct gcs;
struct gcs *gc_comm_shm(gc_comm_t *c);
MPIX_Stream gc_comm_stream(gc_comm_t *c);
gc_p2p_t **gc_comm_p2p(gc_comm_t *c);
/* pair-type reduce and reduce_scatter_block on coll/gpu's stream kernels
 * (gpucoll_mpix_entry.c): GPUCOLL_MPIX_NOT_TAKEN where they do not take
 * the call; their device scratch goes with the communicator */
struct gc_kred;
struct gc_kred **gc_comm_kred(gc_comm_t *c);
int gc_kred_enqueue(gc_comm_t *c, const gc_args_t *a);
void gc_kred_release(gc_comm_t *c);
/* an error of an earlier host function, once; MPI_SUCCESS when none */
int gc_comm_take_error(gc_comm_t *c);
/* a host function failed: the next enqueue on c reports it */
void gc_comm_set_error(gc_comm_t *c, int code);
/* the communicator goes: its point-to-point descriptors with it */
void gc_p2p_release(gc_comm_t *c);
/* MPIX_Stream_comm_create, collective, once the host transport is made:
 * which peers take this rank's device buffers by CUDA IPC */
int gc_p2p_setup(gc_comm_t *c, MPI_Comm comm, double limit_s);
/* an isend (send 1) or irecv enqueued on comm's stream; *request is a
 * handle only MPIX_Wait(all)_enqueue completes */
int gc_p2p_start(int send, const char *fn, void *buf, MPI_Count count, MPI_Datatype type,
                 int peer, int tag, MPI_Comm comm, MPI_Request *request);

/* ---- the progress thread (gpucoll_mpix_prog.c) ---- */
/* the thread's first CUDA work on a device (work, given two 64-byte areas
 * there and in pinned host memory), run at MPIX_Stream_comm_create while
 * no stream waits for the thread, waited for at most limit_s; once per
 * device of the calling thread */
typedef int (*gc_warm_fn_t)(int dev, void *dev_word, void *host_word, const char **why);
void gc_prog_warm(gc_warm_fn_t work, int rank, double limit_s);

typedef struct gc_flags gc_flags_t;

enum { GC_JOB_COLL, GC_JOB_WAIT, GC_JOB_STEP };

/* one handed-over call: a collective of the transport, a p2p wait, or
 * (GC_JOB_STEP) the caller's own step, e.g. a receive's copy */
typedef struct gc_job {
    struct gc_job *next;
    int kind;
    int (*step)(struct gc_job *j);   /* GC_JOB_STEP: as gcs_wait_test answers */
    void *arg;
    struct gcs *t;
    const char *fn;
    gc_comm_t *owner;          /* gets the error */
    const gcs_coll_t *sc;      /* GC_JOB_COLL */
    gcs_coll_state_t st;
    gcs_msg_t *const *m;       /* GC_JOB_WAIT */
    int n;
    double since;
    volatile uint32_t *flag;   /* 1 once done: the stream waits for it */
    void *flag_dev;
} gc_job_t;

/* on the application's thread, before the first hand-over */
int gc_prog_start(const char *fn);
/* in a host function: resets j's flag and hands j over; never waits */
void gc_prog_post(gc_job_t *j);
/* on the application's thread: st waits (on the GPU) for j's flag */
int gc_prog_stream_wait(cudaStream_t st, gc_job_t *j, const char *fn);
/* a flag of the communicator's pool (application's thread), given back
 * from any thread without CUDA; the pool goes with the communicator */
int gc_flag_get(gc_flags_t **pool, volatile uint32_t **flag, void **flag_dev);
void gc_flag_put(gc_flags_t *pool, volatile uint32_t *flag);
void gc_flags_free(gc_flags_t *pool);
gc_flags_t **gc_comm_flags(gc_comm_t *c);

#endif /* GPUCOLL_MPIX_INT_H */
