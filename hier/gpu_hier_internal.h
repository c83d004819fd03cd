/*
 * Hierarchy internals shared by gpu_hier.c (setup, groups, the staging
 * pipeline) and gpu_hier_colls.c (the collectives).
 */
#ifndef GPU_HIER_INTERNAL_H
#define GPU_HIER_INTERNAL_H

#include <cuda_runtime_api.h>

#include "hier/gpu_hier.h"

#define GPU_HIER_MAX_SLOTS 32
#define GPU_HIER_MAX_CHANNELS 16

/* outgrown device temporaries kept until the hierarchy goes: freeing one
 * waits for the whole device (gpu_hier_dvec says why that must not be) */
#define GPU_HIER_DVEC_OLD 40

typedef struct gpu_hier_chan gpu_hier_chan_t;

struct gpu_hier {
    gpu_engine_comm_t *intra;
    const gpu_net_ops_t *net_ops;
    gpu_net_t *net;
    gpu_net_t *chan_net[GPU_HIER_MAX_CHANNELS];   /* channel i's endpoints; [0] is net */
    int nchan;               /* channel threads; 1: the calling thread does it all */
    gpu_hier_chan_t *chan;
    int broken;              /* a channel never left its network step */
    int direct;
    gpu_hier_params_t p;
    int rank, nranks, nnodes, node, local, lsize, even, max_lsize;
    int *node_of, *local_of, *node_size;
    int *rank_at;            /* [node * max_lsize + local] -> rank */
    int *members;            /* a group: nnodes ranks */
    size_t *off, *len;       /* per member or per rank, scratch for plans and groups */
    size_t *goff[2], *glen[2];   /* allgather node blocks of a full and of the last slice */
    struct gpu_hier_copy *cbuf;   /* nranks + 1 copies: one slice's list */
    cudaStream_t stream;     /* device steps and copies into the slots */
    cudaStream_t up_stream;  /* copies out of the slots */
    cudaEvent_t legacy_ev;
    cudaEvent_t slot_ev[GPU_HIER_MAX_SLOTS];   /* a slot's copy in done */
    cudaEvent_t up_ev[GPU_HIER_MAX_SLOTS];     /* a slot's copy out done */
    char *slots;             /* nslots * slot_bytes: pinned host, or device when direct */
    char *fold;              /* slot_bytes of fold space, same memory as slots */
    char *peer;              /* device fold: nslots * slot_bytes, the peer's slices (pinned) */
    char *dvec;              /* device temporary for reduce / reduce_scatter */
    size_t dvec_bytes;
    char *dvec_old[GPU_HIER_DVEC_OLD];   /* outgrown, freed with the hierarchy */
    int ndvec_old;
    unsigned seq;
    gpu_xchg_plan_t plan;    /* the intra-node step being run */
    char desc[160];
    char label[160];         /* the last call's algorithm, for its trace */
};

/* a contiguous piece between a device buffer and a slot */
typedef struct gpu_hier_copy {
    char *dev;
    size_t slot_off;
    size_t len;
} gpu_hier_copy_t;

/* One inter-node stage cut into slices.  copies() lists (at most nranks + 1
 * entries), for slice k, what
 * goes into the slot before the network (up = 0) or back out after it
 * (up = 1); net() runs the inter-node algorithm on the slot.  up(), where
 * set, replaces the copies out: it queues slice k's way back onto the
 * device on stream (the device fold), on the calling thread. */
typedef struct {
    size_t nslices;
    int (*copies)(void *arg, size_t k, int up, gpu_hier_copy_t *c);
    gpu_status_t (*net)(void *arg, size_t k, char *slot, gpu_inter_group_t *g);
    gpu_status_t (*up)(void *arg, size_t k, char *slot, cudaStream_t stream);
    void *arg;
} gpu_hier_stage_t;

/* the device fold's area for the slice in slot (h->peer, same index) */
char *gpu_hier_peer_slot(const gpu_hier_t *h, const char *slot);

/* a group of one rank per node (members[node]) for this call */
void gpu_hier_group(gpu_hier_t *h, gpu_inter_group_t *g);
gpu_status_t gpu_hier_pipeline(gpu_hier_t *h, gpu_inter_group_t *g, const gpu_hier_stage_t *s);
/* the same on the channel threads (gpu_hier_chan.c) */
gpu_status_t gpu_hier_pipeline_chan(gpu_hier_t *h, gpu_inter_group_t *g,
                                    const gpu_hier_stage_t *s);
gpu_status_t gpu_hier_chan_start(gpu_hier_t *h);
void gpu_hier_chan_stop(gpu_hier_t *h);
/* queue slice k's copies into its slot (then its slot event) and out of it;
 * end: wait for both */
gpu_status_t gpu_hier_stage_down(gpu_hier_t *h, const gpu_hier_stage_t *s, size_t k);
gpu_status_t gpu_hier_stage_up(gpu_hier_t *h, const gpu_hier_stage_t *s, size_t k);
gpu_status_t gpu_hier_stage_end(gpu_hier_t *h);
/* slice length of the pipeline for a message of bytes in esz-byte elements */
size_t gpu_hier_slice(const gpu_hier_t *h, size_t bytes, size_t esz);
/* order after the application's legacy-stream work; start a call */
gpu_status_t gpu_hier_begin(gpu_hier_t *h);
gpu_status_t gpu_hier_sync(gpu_hier_t *h, const char *what);
gpu_status_t gpu_hier_d2d(gpu_hier_t *h, void *dst, const void *src, size_t bytes);
/* the device temporary, grown on first need */
gpu_status_t gpu_hier_dvec(gpu_hier_t *h, size_t bytes, char **out);
/* the job and parameters as gpu_hier_choose sees them (gpu_hier_choice.h) */
void gpu_hier_model_of(const gpu_hier_t *h, gpu_hier_model_t *m);

#endif /* GPU_HIER_INTERNAL_H */
