/*
 * Component: MCA parameters, open/close, and the per-process GPU probe.
 */
#include "ompi_config.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll_gpu.h"

#include "opal/mca/base/mca_base_var.h"
#include "opal/mca/base/mca_base_var_enum.h"
#include "opal/util/output.h"
#include "opal/util/show_help.h"
#include "ompi/constants.h"

#include "hier/gpu_hier_choice.h"
#include "topo/gpu_topo_choice.h"
#include "util/gpu_cuda_drv.h"

const char *mca_coll_gpu_component_version_string = "Open MPI coll/gpu component version 0.1.0";

static int mca_coll_gpu_open(void);
static int mca_coll_gpu_close(void);
static int mca_coll_gpu_register(void);

mca_coll_gpu_component_t mca_coll_gpu_component = {
    .super = {
        .collm_version = {
            MCA_COLL_GPU_BASE_VERSION,
            .mca_component_name = "gpu",
            MCA_BASE_MAKE_VERSION(component, OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                                  OMPI_RELEASE_VERSION),
            .mca_open_component = mca_coll_gpu_open,
            .mca_close_component = mca_coll_gpu_close,
            .mca_register_component_params = mca_coll_gpu_register,
        },
        .collm_data = {
            MCA_BASE_METADATA_PARAM_CHECKPOINT
        },
        .collm_init_query = mca_coll_gpu_init_query,
        .collm_comm_query = mca_coll_gpu_comm_query,
    },
    .priority = 80,
    .verbose = 0,
    .output = -1,
    .allreduce_algorithm = MCA_COLL_GPU_ALGO_AUTO,
    .oneshot_max = GPU_TOPO_DEF_ONESHOT_MAX,
    .scratch_bytes = 128ul * 1024 * 1024,
    .nblocks = GPU_TOPO_DEF_NBLOCKS,
    .nthreads = 1024,
    .oneshot_blocks = GPU_TOPO_DEF_ONESHOT_BLOCKS,
    .timeout = 60.0,
    .fallback = NULL,
    /* 4x H100 (docs/results/h100x4_2026-11-26_chains): below 16 MiB the
     * root writing to (reading from) every rank beat the chains */
    /* below it the put path's spread by writes is faster on 4 and 3 GPUs
     * (16 MiB: 101 us against the chain's 145; docs/results/h100x4_2026-11-27_s7) */
    .bcast_chain_min = GPU_TOPO_DEF_BCAST_CHAIN_MIN,
    .reduce_chain_min = GPU_TOPO_DEF_REDUCE_CHAIN_MIN,
    /* from 1 MiB on 4x H100 the put fold (the root reads every peer's
     * whole buffer) took 0.55-0.7x NCCL's time, bound by the root's links
     * (docs/results/h100x4_2026-11-27_s7_sweep); at 512 KiB the exchange
     * kernel beat the two-shot (27.7 us against 31.3).  The two-shot to
     * the root, 4x H100 (h100x4_2026-11-27_s12/d): 1, 2, 4, 8 MiB in 29.5,
     * 34.4, 44.8, 63.8 us against the put fold's 40.2, 48.1, 64.5, 99.3 */
    .reduce_twoshot_min = GPU_TOPO_DEF_REDUCE_TWOSHOT_MIN,
    .xchg_scratch_bytes = 256ul * 1024 * 1024,
    .xchg_nblocks = GPU_TOPO_DEF_XCHG_NBLOCKS,
    .xchg_split = 0,
    .put_min = GPU_TOPO_DEF_PUT_MIN,
    .put_ce = -1,
    .put_fold_nblocks = -1,
    .stream_order = 1,
    .persist = -1,
    .persist_max_bytes = 0,          /* automatic: by the communicator's size */
    .persist_reduce_max_bytes = 0,   /* automatic: by the communicator's size */
    .persist_blocks = GPU_TOPO_DEF_PERSIST_BLOCKS,
    .persist_piece_bytes = 4096,
    .persist_idle_us = 200.0,
    .persist_gap_us = 10.0,
    .persist_leave_us = 3.0,
    .persist_one_shot = 1,
    .persist_busy_min_bytes = 131072,
    .paced = -1,
    .paced_scratch_bytes = 16ul * 1024 * 1024,
    .scratch_lazy = 1,
    .pool = 0,
    .pool_comm_bytes = 3ul * 1024 * 1024,
    .enqueue_kernel_max = 64ul * 1024,
    .enqueue_bulk_bytes = 16ul * 1024 * 1024,
    .shared_staged_max = 512ul * 1024,
    .shared_direct = 1,
    .nvtx = 1,
    .timing_file = NULL,
    .topo_file = NULL,
    .topo_dump = NULL,
    .hier = 1,
    .hier_nonblocking = 1,
    .virtual_nodes = 0,
    .kind_across_nodes = 1,
    .kind_test_device = 0,
    .net_slot_bytes = GPU_HIER_SLOT_BYTES_DEFAULT,
    .net_slots = 4,
    .net_channels = GPU_HIER_CHANNELS_DEFAULT,
    .net_device_fold = 0,
    .net_rndv_thresh = 65536,
    .net_direct = -1,
    .net_algorithm = 0,
    .net_latency_us = GPU_INTER_ALPHA_US_DEFAULT,   /* gpucoll-topo plans with the same */
    .net_bandwidth = GPU_INTER_BETA_GBS_DEFAULT,
    .gpu_available = -1,
    .no_gpu_reason = NULL,
};

static const mca_base_var_enum_value_t mca_coll_gpu_algo_values[] = {
    { MCA_COLL_GPU_ALGO_AUTO, "auto" },
    { MCA_COLL_GPU_ALGO_ONESHOT, "oneshot" },
    { MCA_COLL_GPU_ALGO_TWOSHOT, "twoshot" },
    { MCA_COLL_GPU_ALGO_STAGED, "staged" },
    { 0, NULL }
};

static void mca_coll_gpu_reg(const char *name, const char *help, mca_base_var_type_t type,
                             mca_base_var_enum_t *enumerator, int level, void *storage)
{
    (void) mca_base_component_var_register(&mca_coll_gpu_component.super.collm_version, name,
                                           help, type, enumerator, 0, 0, level,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static int mca_coll_gpu_register(void)
{
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;
    mca_base_var_enum_t *algos = NULL;

    mca_coll_gpu_reg("priority", "Priority of coll/gpu; it must be above every other coll "
                     "component so that it sees their functions as its fallback (negative "
                     "disables it)", MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->priority);
    mca_coll_gpu_reg("verbose", "Verbosity: 1 = setup decisions and the chosen transport per "
                     "communicator, 10 = scratch layout, 20 = algorithm of every collective",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_9, &c->verbose);
    (void) mca_base_var_enum_create("coll_gpu_allreduce_algorithms", mca_coll_gpu_algo_values,
                                    &algos);
    mca_coll_gpu_reg("allreduce_algorithm", "Device-buffer allreduce algorithm: auto (one-shot "
                     "up to coll_gpu_oneshot_max bytes, two-shot above), oneshot, twoshot, or "
                     "staged (copy to host and use the previous component)",
                     MCA_BASE_VAR_TYPE_INT, algos, OPAL_INFO_LVL_5, &c->allreduce_algorithm);
    OBJ_RELEASE(algos);
    mca_coll_gpu_reg("oneshot_max", "Largest message in bytes for the one-shot (latency) "
                     "allreduce; also sizes its scratch slots", MCA_BASE_VAR_TYPE_UNSIGNED_LONG,
                     NULL, OPAL_INFO_LVL_5, &c->oneshot_max);
    mca_coll_gpu_reg("scratch_bytes", "Bytes of peer-visible scratch per rank and communicator "
                     "for the two-shot (bandwidth) allreduce", MCA_BASE_VAR_TYPE_UNSIGNED_LONG,
                     NULL, OPAL_INFO_LVL_5, &c->scratch_bytes);
    mca_coll_gpu_reg("scratch_lazy", "1: the two-shot and exchange-kernel scratch "
                     "(coll_gpu_scratch_bytes, coll_gpu_xchg_scratch_bytes) is allocated at a "
                     "communicator's first blocking call that needs it (all its ranks are in "
                     "that call), so communicators that only run calls up to about a MiB hold "
                     "tens of MiB, not hundreds; 0: at setup (also when "
                     "coll_gpu_paced_scratch_bytes is 0)",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_5, &c->scratch_lazy);
    mca_coll_gpu_reg("pool", "Experimental, off by default. 1: the two-shot and "
                     "exchange-kernel data areas (coll_gpu_scratch_bytes + "
                     "coll_gpu_xchg_scratch_bytes) are one pool per process and GPU, shared by "
                     "all its communicators and mapped once per peer process; each blocking "
                     "call that uses it agrees on it in the memory-kind posts on one node "
                     "(else, and at a communicator's first such call, one host exchange); 0 (or "
                     "coll_gpu_scratch_lazy 0, or coll_gpu_paced_scratch_bytes 0): every "
                     "communicator has its own",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_5, &c->pool);
    mca_coll_gpu_reg("pool_comm_bytes", "With coll_gpu_pool 1: the most device memory per "
                     "rank that a communicator's own area takes (the kernels' flags, the "
                     "one-shot's slots, the resident kernel's lines, the host-paced staging; "
                     "its CUDA stream comes on top). coll_gpu_oneshot_max, "
                     "coll_gpu_persist_max_bytes and coll_gpu_paced_scratch_bytes are cut to "
                     "fit it; larger calls take the pool. More keeps larger calls on the "
                     "resident kernel at that cost per communicator; 0: no cut",
                     MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, OPAL_INFO_LVL_5,
                     &c->pool_comm_bytes);
    mca_coll_gpu_reg("nblocks", "Thread blocks (channels) of the two-shot allreduce, 1-128",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->nblocks);
    mca_coll_gpu_reg("nthreads", "Threads per block of the GPU kernels (32-1024)",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->nthreads);
    mca_coll_gpu_reg("oneshot_blocks", "Thread blocks of the one-shot allreduce, 1-128",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->oneshot_blocks);
    mca_coll_gpu_reg("timeout", "Seconds a rank waits for a peer inside a device collective "
                     "(kernels, setup exchanges, host-paced rounds) before the call fails with "
                     "an error whose MPI_Error_string names the collective, the peer and this "
                     "parameter (0 or less: the default, 60 s; no wait of coll/gpu is unbounded)",
                     MCA_BASE_VAR_TYPE_DOUBLE, NULL, OPAL_INFO_LVL_5, &c->timeout);
    mca_coll_gpu_reg("xchg_scratch_bytes", "Bytes of peer-visible scratch per rank and "
                     "communicator for every other device collective (split into 2 slots per "
                     "peer and block; larger slots mean fewer hand-overs per byte)",
                     MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, OPAL_INFO_LVL_5,
                     &c->xchg_scratch_bytes);
    mca_coll_gpu_reg("xchg_nblocks", "Thread blocks (channels) of the exchange kernel behind "
                     "every collective but allreduce, 1-128",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->xchg_nblocks);
    mca_coll_gpu_reg("xchg_split", "1: the exchange kernel runs separate sender and receiver "
                     "blocks (twice coll_gpu_xchg_nblocks blocks), so peer writes never wait for "
                     "local copies; 0: each block sends, then receives",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->xchg_split);
    mca_coll_gpu_reg("put_min", "Smallest largest pair in bytes of a blocking device-buffer "
                     "alltoall, allgather or neighbourhood exchange (every rank's pair the "
                     "same size) that is written straight into the receivers' buffers, mapped "
                     "through CUDA IPC, instead of through the exchange kernel's slots (0: "
                     "never)", MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, OPAL_INFO_LVL_6,
                     &c->put_min);
    mca_coll_gpu_reg("put_read", "1: those calls are read by each receiver from the senders' "
                     "buffers instead of written by the senders into the receivers'",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->put_read);
    mca_coll_gpu_reg("put_ce", "Those calls' copies by the GPU's copy engines instead of its "
                     "SMs: -1 a bcast's from 16 MiB (one link's one way, where the copy "
                     "engines are faster), 1 every copy, 0 none", MCA_BASE_VAR_TYPE_INT, NULL,
                     OPAL_INFO_LVL_6, &c->put_ce);
    mca_coll_gpu_reg("put_fold_nblocks", "Thread blocks of a blocking device-buffer reduction "
                     "(reduce_scatter, reduce, scan) whose largest pair reaches "
                     "coll_gpu_put_min, read and folded straight from the peers' buffers; 0: "
                     "such reductions take the exchange kernel; -1: coll_gpu_xchg_nblocks on "
                     "2-3 ranks, 32 from 4 (every rank must use the same value)",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->put_fold_nblocks);
    mca_coll_gpu_reg("bcast_chain_min", "Smallest device-buffer bcast in bytes that is "
                     "pipelined along a chain of ranks when there are more than 2 (below it the "
                     "ranks spread it: each piece from the root to one rank, from there to the "
                     "others)", MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL,
                     OPAL_INFO_LVL_6, &c->bcast_chain_min);
    mca_coll_gpu_reg("reduce_chain_min", "Smallest device-buffer reduce in bytes that is "
                     "folded along a chain of ranks ending at the root when there are more than "
                     "2 (below it, from coll_gpu_reduce_twoshot_min, the two-shot kernel to the "
                     "root; below that every rank sends the root its buffer)",
                     MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, OPAL_INFO_LVL_6,
                     &c->reduce_chain_min);
    mca_coll_gpu_reg("reduce_twoshot_min", "Smallest blocking device-buffer reduce in bytes "
                     "that runs, with more than 2 ranks and below coll_gpu_reduce_chain_min, "
                     "as the two-shot allreduce's reduce-scatter with each folded shard sent "
                     "to the root alone: the root's links take in 2(n-1)/n of the message, "
                     "not every peer's whole buffer. It uses the large scratch area as a "
                     "two-shot allreduce does (0: never)",
                     MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, OPAL_INFO_LVL_6,
                     &c->reduce_twoshot_min);
    mca_coll_gpu_reg("stream_order", "Ordering after the application's own device work, "
                     "which CUDA-aware MPI leaves to the application (kernels and *Async "
                     "calls: synchronize before the call). 1: at the first use of each "
                     "allocation wait for the legacy default stream once and mark the "
                     "allocation SYNC_MEMOPS, so its cudaMemcpy/cudaMemset are complete when "
                     "they return (as Open MPI and UCX do); 2: also wait for all legacy-stream "
                     "work at every call (a kernel not synchronized; about 1.3 us per call "
                     "on H200); 0: nothing",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_5, &c->stream_order);
    mca_coll_gpu_reg("persist", "Blocking device collectives up to coll_gpu_persist_max_bytes run in a "
                     "kernel that stays resident between calls (no launch per call): -1 when "
                     "every rank of the communicator has its own GPU or shares it through MPS, "
                     "1 always, 0 never",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_5, &c->persist);
    mca_coll_gpu_reg("persist_max_bytes", "Largest message in bytes (per peer for exchanges) "
                     "for the resident kernel; its scratch is 4 x ranks x this. 0: 2 MiB "
                     "on communicators of up to 3 ranks, 1 MiB from 4 (measured on 4x H100: "
                     "a 2x2 periodic halo of 1 MiB per neighbour took 60.6 us there, 44.0 us "
                     "through the put path)",
                     MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, OPAL_INFO_LVL_5,
                     &c->persist_max_bytes);
    mca_coll_gpu_reg("persist_reduce_max_bytes", "Largest message in bytes (per peer for "
                     "exchanges) that the resident kernel reduces (allreduce, reduce, "
                     "reduce_scatter, scan); at most coll_gpu_persist_max_bytes. Above it the "
                     "launched kernels are faster: the resident kernel's lines carry 8 data "
                     "bytes in 16. 0: 1 MiB on communicators of up to 3 ranks, 512 KiB on 4, "
                     "256 KiB from 5 (measured on 4x H100: a 1 MiB allreduce took 45 us there, "
                     "29 us through two-shot; a 2 MiB reduce_scatter 26 us there, 42 through "
                     "the exchange kernel)",
                     MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, OPAL_INFO_LVL_5,
                     &c->persist_reduce_max_bytes);
    mca_coll_gpu_reg("persist_blocks", "Thread blocks of the resident kernel, 1-64, at most "
                     "half the SMs of the communicator's smallest GPU (each holds one SM while "
                     "the kernel is resident)",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->persist_blocks);
    mca_coll_gpu_reg("persist_piece_bytes", "Smallest piece of a pair (bytes, whole 8-byte "
                     "lines) that one block of the resident kernel takes: a pair is spread over "
                     "more blocks only in pieces of at least this. Each thread moves a line per "
                     "round trip, so smaller pieces mean more blocks and fewer rounds; every "
                     "rank must use the same value",
                     MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, OPAL_INFO_LVL_6,
                     &c->persist_piece_bytes);
    mca_coll_gpu_reg("persist_idle_us", "Microseconds without a call after which the resident "
                     "kernel exits (an application's cudaDeviceSynchronize or cudaFree waits "
                     "for it at most this long); the next call starts it again",
                     MCA_BASE_VAR_TYPE_DOUBLE, NULL, OPAL_INFO_LVL_5, &c->persist_idle_us);
    mca_coll_gpu_reg("persist_gap_us", "When the application's time between collectives (its "
                     "GPU work included: measured once the default stream is idle) averages "
                     "more than this many microseconds, the resident kernel leaves a few "
                     "microseconds after each call instead of after coll_gpu_persist_idle_us, "
                     "so it never holds SMs beside the application's kernels (the next call "
                     "relaunches it: a few us); 0 keeps it for coll_gpu_persist_idle_us always",
                     MCA_BASE_VAR_TYPE_DOUBLE, NULL, OPAL_INFO_LVL_5, &c->persist_gap_us);
    mca_coll_gpu_reg("persist_leave_us", "How long the resident kernel stays after a call "
                     "when coll_gpu_persist_gap_us tells it to leave: a second call within it "
                     "needs no relaunch, but an application kernel launched within it finds "
                     "SMs taken (0: leave as soon as the call is done)",
                     MCA_BASE_VAR_TYPE_DOUBLE, NULL, OPAL_INFO_LVL_6, &c->persist_leave_us);
    mca_coll_gpu_reg("persist_one_shot", "When coll_gpu_persist_gap_us finds the application "
                     "working between calls and the resident kernel has left, launch only the "
                     "blocks the call has work for, leaving as soon as it is done (1), or the "
                     "whole resident kernel, which stays coll_gpu_persist_leave_us (0)",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->persist_one_shot);
    mca_coll_gpu_reg("persist_busy_min_bytes", "Where the application works on the GPU "
                     "between collectives on any rank of a communicator (coll_gpu_persist_gap_us), "
                     "blocking calls from this many bytes (per peer for exchanges) take the "
                     "launched kernels instead of the resident kernel, whose lines slow the "
                     "application's next kernel, where those kernels have their areas (no "
                     "memory grows for it); the ranks agree through their kind posts. 0: never; "
                     "every rank must use the same value",
                     MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, OPAL_INFO_LVL_6,
                     &c->persist_busy_min_bytes);
    mca_coll_gpu_reg("paced", "Blocking device collectives run as host-paced rounds (copies, "
                     "host exchange, pulls: no kernel waits for another process): -1 when "
                     "ranks of the communicator share a GPU without MPS (a waiting kernel holds "
                     "the time-sliced GPU for the rest of its slice; under MPS kernels run side "
                     "by side), 1 always, 0 never",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_5, &c->paced);
    mca_coll_gpu_reg("paced_scratch_bytes", "Peer-visible staging per rank for host-paced "
                     "rounds: blocking calls where ranks share a GPU, and every nonblocking "
                     "call (two areas, one slot per receiver; larger messages take more "
                     "rounds); 0 turns host pacing off (nonblocking calls then launch kernels "
                     "that wait for peers)",
                     MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, OPAL_INFO_LVL_6,
                     &c->paced_scratch_bytes);
    mca_coll_gpu_reg("shared_direct", "1: where all ranks of a communicator share one GPU "
                     "without MPS, rank 0 runs each device allreduce (blocking or not) for "
                     "every rank (one kernel over every rank's buffers, mapped through CUDA "
                     "IPC; the other ranks submit no GPU work, so no context switch waits); 0: "
                     "stage small blocking ones through host copies (coll_gpu_shared_staged_max) "
                     "and pace the rest",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_5, &c->shared_direct);
    mca_coll_gpu_reg("shared_staged_max", "Largest blocking device allreduce (bytes) that "
                     "stages through host copies instead of host-paced rounds when the ranks "
                     "share a GPU without MPS (each GPU operation of a rank then waits for a "
                     "context switch; staging needs fewer: about 2x faster up to 512 KiB on one "
                     "H100); 0 never; every rank must use the same value",
                     MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, OPAL_INFO_LVL_6,
                     &c->shared_staged_max);
    mca_coll_gpu_reg("enqueue_kernel_max", "Largest MPIX_Allreduce_enqueue on a CUDA stream "
                     "(bytes) that runs as one kernel on that stream (no host round trip, "
                     "captured into CUDA graphs as a kernel) where the ranks' kernels run side "
                     "by side (a GPU per rank, or MPS); larger ones and the other enqueued "
                     "collectives stage through host copies and a host function; 0 never; "
                     "every rank must use the same value",
                     MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, OPAL_INFO_LVL_6,
                     &c->enqueue_kernel_max);
    mca_coll_gpu_reg("enqueue_bulk_bytes", "GPU memory per rank of a stream communicator (and "
                     "64 KiB of flags) for MPIX_Allreduce_enqueue above "
                     "coll_gpu_enqueue_kernel_max and MPIX_Alltoall_enqueue as kernels on the "
                     "stream: a launch moves up to this / (2 * ranks) bytes (per peer), whole "
                     "bytes pushed over NVLink; 0: those stage through host copies and a host "
                     "function; every rank must use the same value",
                     MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, OPAL_INFO_LVL_6,
                     &c->enqueue_bulk_bytes);
    mca_coll_gpu_reg("nvtx", "1: mark every device collective with an NVTX range (name, "
                     "size) so nsys timelines show it; free when no tool is attached",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_5, &c->nvtx);
    c->timing_file = "";
    mca_coll_gpu_reg("timing_file", "When set, every rank writes one JSON object per device "
                     "collective (communicator, collective, bytes, blocking, host submit and "
                     "completion times in microseconds) to <value>.<world rank>.jsonl",
                     MCA_BASE_VAR_TYPE_STRING, NULL, OPAL_INFO_LVL_5, &c->timing_file);
    c->topo_file = "";
    mca_coll_gpu_reg("topo_file", "hwloc XML file (as written by coll_gpu_topo_dump or "
                     "gpucoll-topo --dump) to read the node topology from instead of probing it",
                     MCA_BASE_VAR_TYPE_STRING, NULL, OPAL_INFO_LVL_5, &c->topo_file);
    c->topo_dump = "";
    mca_coll_gpu_reg("topo_dump", "When set, world rank 0 writes the detected node topology "
                     "(hwloc XML with NVLink counts) to this file at the first device collective",
                     MCA_BASE_VAR_TYPE_STRING, NULL, OPAL_INFO_LVL_5, &c->topo_dump);
    mca_coll_gpu_reg("hier", "1: communicators spanning several nodes run allreduce, bcast, "
                     "reduce, allgather and reduce_scatter_block on device buffers "
                     "hierarchically (NVLink within nodes, UCX between them); 0: they stage "
                     "through the previous component", MCA_BASE_VAR_TYPE_INT, NULL,
                     OPAL_INFO_LVL_5, &c->hier);
    mca_coll_gpu_reg("hier_nonblocking", "1: nonblocking and persistent collectives across "
                     "nodes that the hierarchy runs (allreduce, bcast, reduce, allgather, "
                     "reduce_scatter_block) run there too, on a thread of the communicator, "
                     "whose UCX endpoints then get a worker of their own; 0: they stage through "
                     "the previous component's nonblocking forms", MCA_BASE_VAR_TYPE_INT, NULL,
                     OPAL_INFO_LVL_5, &c->hier_nonblocking);
    mca_coll_gpu_reg("virtual_nodes", "Split the ranks of each host into this many nodes (in "
                     "rank order) as if they were separate hosts: no CUDA IPC between them, "
                     "UCX instead (for testing the inter-node path on one machine; 0 or 1: off)",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->virtual_nodes);
    mca_coll_gpu_reg("kind_across_nodes", "On a communicator that spans nodes, a blocking device "
                     "collective first asks one rank of each other node what its ranks passed "
                     "(one round trip), so that ranks passing host memory elsewhere give the "
                     "right result instead of a timeout (1); 0 trusts that every rank passes "
                     "device memory, as with NCCL; every rank must use the same value",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_5, &c->kind_across_nodes);
    mca_coll_gpu_reg("kind_test_device", "Testing the kind queries across nodes without a GPU: "
                     "blocking host-buffer calls on a communicator that spans nodes post and ask "
                     "as device calls do, on every rank (1) or on the upper half of the ranks (2: "
                     "with coll_gpu_virtual_nodes 2, a device node asking a host node), and still "
                     "run on the host (0: off)", MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_9,
                     &c->kind_test_device);
    mca_coll_gpu_reg("net_slot_bytes", "Bytes of one inter-node pipeline slice (one pinned "
                     "bounce slot, or device slot when UCX takes CUDA memory)",
                     MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL, OPAL_INFO_LVL_6, &c->net_slot_bytes);
    mca_coll_gpu_reg("net_slots", "Inter-node pipeline slices in flight (1-32): copies of the "
                     "next slices overlap the network work on the current one",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->net_slots);
    mca_coll_gpu_reg("net_channels", "Threads that move and fold slices of one staged "
                     "inter-node collective at once (1-16), each with UCX endpoints of its own; "
                     "capped by the CPUs the process may run on (bind ranks to a socket or NUMA "
                     "node, not a core, to use them); 1: the calling thread does it all",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->net_channels);
    mca_coll_gpu_reg("net_device_fold", "Staged allreduce (and reduce_scatter) between 2 "
                     "nodes: the channel threads only swap each slice over the network and a "
                     "kernel folds the peer's slice, read from pinned host memory, into the "
                     "output, instead of a host fold and a copy back (1; 0: host folds)",
                     MCA_BASE_VAR_TYPE_INT, NULL, OPAL_INFO_LVL_6, &c->net_device_fold);
    mca_coll_gpu_reg("net_rndv_thresh", "Bytes from which the inter-node stage's UCX messages "
                     "use rendezvous (UCX RNDV_THRESH of coll/gpu's own UCX context; the "
                     "environment's UCX_RNDV_THRESH wins); below it they are sent eagerly from the "
                     "pinned slots; 0: UCX's own threshold", MCA_BASE_VAR_TYPE_UNSIGNED_LONG, NULL,
                     OPAL_INFO_LVL_6, &c->net_rndv_thresh);
    mca_coll_gpu_reg("net_direct", "Device memory straight to UCX (GPUDirect RDMA): -1 when "
                     "every rank's UCX reports CUDA support, 0 never (stage through pinned host "
                     "memory), 1 required (otherwise device collectives across nodes are staged "
                     "through the previous component)", MCA_BASE_VAR_TYPE_INT, NULL,
                     OPAL_INFO_LVL_5, &c->net_direct);
    mca_coll_gpu_reg("net_algorithm", "Inter-node allreduce: 0 chosen by the latency/bandwidth "
                     "model, 1 ring, 2 recursive doubling", MCA_BASE_VAR_TYPE_INT, NULL,
                     OPAL_INFO_LVL_6, &c->net_algorithm);
    mca_coll_gpu_reg("net_latency_us", "Per-message network latency in microseconds for the "
                     "inter-node algorithm choice", MCA_BASE_VAR_TYPE_DOUBLE, NULL,
                     OPAL_INFO_LVL_6, &c->net_latency_us);
    mca_coll_gpu_reg("net_bandwidth", "Per-rank network bandwidth in GB/s for the inter-node "
                     "algorithm choice", MCA_BASE_VAR_TYPE_DOUBLE, NULL, OPAL_INFO_LVL_6,
                     &c->net_bandwidth);
    c->fallback = "tuned,basic,libnbc,self";
    mca_coll_gpu_reg("fallback", "Comma-separated coll components that coll/gpu opens itself "
                     "when the coll selection (e.g. --mca coll gpu) left them out, so that every "
                     "collective keeps a host implementation", MCA_BASE_VAR_TYPE_STRING, NULL,
                     OPAL_INFO_LVL_6, &c->fallback);
    return OMPI_SUCCESS;
}

static void mca_coll_gpu_log_sink(int level, const char *msg)
{
    if (0 == level) {
        opal_output(0, "coll/gpu: %s", msg);
    } else {
        opal_output_verbose(level, mca_coll_gpu_component.output, "coll/gpu: %s", msg);
    }
}

/* Installs move (Spack, modules, a build tree copied to another host): the
 * help file is also looked for from where this .so was loaded, as
 * PREFIX/lib/openmpi/x.so -> PREFIX/share/gpucoll and build/.libs/x.so ->
 * ompi_coll_gpu beside the build folder. */
static void mca_coll_gpu_help_beside_so(void)
{
    static const char *const rel[] = { "/../../share/gpucoll", "/../../ompi_coll_gpu" };
    char dir[4096], path[4200];
    Dl_info info;
    char *slash;

    if (0 == dladdr((void *) &mca_coll_gpu_component, &info) || NULL == info.dli_fname) {
        return;
    }
    snprintf(dir, sizeof(dir), "%s", info.dli_fname);
    if (NULL == (slash = strrchr(dir, '/'))) {
        return;
    }
    *slash = '\0';
    for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); ++i) {
        snprintf(path, sizeof(path), "%s%s", dir, rel[i]);
        if (0 == access(path, R_OK)) {
            (void) opal_show_help_add_dir(path);
        }
    }
}

static int mca_coll_gpu_open(void)
{
    mca_coll_gpu_component_t *c = &mca_coll_gpu_component;

    OBJ_CONSTRUCT(&c->lock, opal_mutex_t);
    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    gpu_log_set_sink(mca_coll_gpu_log_sink, c->verbose);
    /* the first folder with the file wins: the one that belongs to the
     * .so actually loaded comes before the folders configure named, which
     * a moved or reinstalled tree may have left stale */
    mca_coll_gpu_help_beside_so();
#ifdef GPUCOLL_HELP_DIR
    (void) opal_show_help_add_dir(GPUCOLL_HELP_DIR);
#endif
#ifdef GPUCOLL_HELP_DIR_BUILD
    (void) opal_show_help_add_dir(GPUCOLL_HELP_DIR_BUILD);
#endif
    if (c->priority >= 0 && NULL != c->fallback && '\0' != c->fallback[0]) {
        (void) mca_coll_gpu_adopt_fallbacks(c->fallback);
    }
    return OMPI_SUCCESS;
}

/*
 * Help text goes out through opal_output rather than opal_show_help: Open
 * MPI 4.1.4 forwards show_help to mpirun, which now and then fails to
 * unpack the message ("Data unpack would read past end of buffer", about
 * one run in six here) and the user sees nothing; stderr is forwarded
 * reliably.  The price is that identical messages of several ranks are
 * not folded into one.
 */
void mca_coll_gpu_show_help(const char *topic, ...)
{
    va_list ap;
    char *msg;

    va_start(ap, topic);
    msg = opal_show_help_vstring("help-coll-gpu.txt", topic, true, ap);
    va_end(ap);
    if (NULL != msg) {
        opal_output(0, "%s", msg);
        free(msg);
    }
}

static int mca_coll_gpu_close(void)
{
    mca_coll_gpu_request_fini();
    mca_coll_gpu_persistent_fini();
    mca_coll_gpu_knet_fini();
    mca_coll_gpu_kind_fini();
    mca_coll_gpu_trace_fini();
    gpu_log_set_sink(NULL, 0);
    if (mca_coll_gpu_component.output >= 0) {
        opal_output_close(mca_coll_gpu_component.output);
        mca_coll_gpu_component.output = -1;
    }
    OBJ_DESTRUCT(&mca_coll_gpu_component.lock);
    return OMPI_SUCCESS;
}
