/*
 * The persistent low-latency engine: small blocking collectives without a
 * kernel launch per call.
 *
 * Why: a launched collective costs a launch call (about 3 us on the host),
 * the GPU's launch latency and a cudaStreamQuery loop before a single byte
 * moves; on 2 NVLinked GPUs that was 14-17 us of a 15-17 us small
 * allreduce.  Here one kernel per communicator stays resident while calls
 * keep coming: the host writes a descriptor into host-mapped memory, the
 * kernel's blocks poll it, run the exchange and write per-block "done"
 * words back that the host polls.
 *
 * Data moves in LL lines (NCCL's low-latency idea, our own layout): 16
 * bytes = 8 payload bytes + two copies of a 32-bit flag (the call's 31-bit
 * sequence, top bit set), written with one 16-byte store into the reader's
 * slot.  A reader polling its own memory sees a line only when both flags
 * carry this call's value, so no fence and no separate ready flag sit
 * between the data and its reader, and a line left over from an older
 * call never matches (flags repeat only after 2^31 calls; every 2^30
 * calls the host zeroes the slots collectively, gpu_engine_pk.c), so read
 * lines are not cleared.  After reading, each reader block writes an ack
 * (the call's sequence) into the writer's memory; before a writer reuses a
 * (reader, parity) slot it waits for the acks of every reader block that
 * read the slot's previous call.  The host tracks which call and how many
 * blocks and puts both in the descriptor, and drops the wait when the
 * call in between already proves it (gpu_plan_ll_slots: those reader
 * blocks sent us their lines since, which they do only after finishing
 * their reads), as for back-to-back allreduces.  Nothing needs a
 * system-scope fence (1-2 us here) unless an output is managed memory
 * that the CPU may read in place: the host sets the command's sys_fence
 * bit then.
 *
 * Any exchange plan (gpu_xchg_plan_t, see gpu_kernels.h) without relays
 * runs here: allreduce is the REDUCE plan "everyone sends all to everyone".
 * Every pair is cut into the same pieces at both ends (gpu_ll_piece), and
 * block b only talks to block b of the other ranks.
 *
 * Lifetime: the kernel exits by itself after idle_ns without a descriptor
 * (an application's cudaDeviceSynchronize waits at most that long), when
 * the host parks it before launching other work on the stream, or when it
 * sees a descriptor of a newer generation.  Block 0 alone reads the
 * mailbox and copies each command the other blocks have work in into
 * device memory (every word tagged like the host's, so no lock), so it
 * alone decides to quit; the exit word tells the host the last command
 * taken, so the host relaunches exactly when a command was left behind
 * and no command ever runs twice.
 *
 * Descriptor: 32-bit payload words, each stored by the host as one 64-bit
 * word whose high half is the command number's low 32 bits; the kernel
 * takes a descriptor only when every word carries the same tag, so one
 * read of host memory gives it a complete command.  Measured on the 2x H200
 * host: a GPU read of host memory takes 0.7-0.8 us, a host/GPU ping-pong
 * through mapped memory 2.7 us, an empty launch + cudaStreamQuery 8.7 us.
 */
#ifndef GPU_LL_H
#define GPU_LL_H

#include <stddef.h>
#include <stdint.h>

#include "gpu_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPU_LL_MAX_BLOCKS 64
#define GPU_LL_LINE 16          /* bytes of a line */
#define GPU_LL_PAYLOAD 8        /* data bytes it carries */

enum {
    GPU_LL_W_CMD = 0,       /* cmd | mode << 4 | in_place << 5 | sys_fence << 6 |
                               leave << 7 | op << 8 | dt << 16 | busy blocks << 24 */
    GPU_LL_W_GEN = 1,       /* kernel generation the command is for */
    GPU_LL_W_SEQ = 2,       /* collective sequence, same on every rank (2 words) */
    GPU_LL_W_RED_SELF = 4,  /* pointers take 2 words, low half first */
    GPU_LL_W_RED_OUT = 6,
    GPU_LL_W_RED_LEN = 8,
    GPU_LL_W_RED_RANGE = 9, /* lo | hi << 16, each a signed 16-bit rank */
    GPU_LL_W_SELF_SRC = 10,
    GPU_LL_W_SELF_DST = 12,
    GPU_LL_W_SELF_LEN = 14,
    GPU_LL_W_PEERS = 15     /* per peer, GPU_LL_P_* */
};
enum {
    GPU_LL_P_SEND_SRC = 0,  /* 2 words */
    GPU_LL_P_SEND_LEN = 2,  /* bytes | (reader blocks to wait for) << 24 */
    GPU_LL_P_RECV_DST = 3,  /* 2 words */
    GPU_LL_P_RECV_LEN = 5,
    GPU_LL_P_WAIT_SEQ = 6,  /* 2 words: their acks must have reached this call */
    GPU_LL_P_SEND_FIRST = 8,  /* a pair of two pieces (gpu_xchg_two): the first's bytes */
    GPU_LL_P_SEND_SRC2 = 9,   /* 2 words */
    GPU_LL_P_RECV_FIRST = 11,
    GPU_LL_P_RECV_DST2 = 12,  /* 2 words */
    GPU_LL_PEER_WORDS = 14
};
#define GPU_LL_MAX_BYTES ((size_t) 1 << 24)   /* lengths fit in 24 bits */
#define GPU_LL_DESC_WORDS (GPU_LL_W_PEERS + GPU_LL_PEER_WORDS * GPU_MAX_PEERS)

enum { GPU_LL_CMD_WORK = 1, GPU_LL_CMD_QUIT = 2 };

/* Phase stamps of block 0 (verbose 10): where the time of a call goes. */
enum {
    GPU_LL_T_SEEN = 0,      /* the poll returned the new command */
    GPU_LL_T_DECODED,       /* decoded, work found */
    GPU_LL_T_SLOTS,         /* slot acks waited for */
    GPU_LL_T_SENT,          /* sender thread 0 issued its lines */
    GPU_LL_T_RECEIVED,      /* first receiver has its lines and results stored */
    GPU_LL_T_FENCED,        /* every receiver fenced (barrier passed) */
    GPU_LL_T_REPORT,        /* acks written, done word next */
    GPU_LL_STAMPS
};

/* Host-mapped; the host writes desc, the kernel done and exit_word. */
typedef struct {
    volatile uint64_t desc[GPU_LL_DESC_WORDS];
    volatile uint64_t done[GPU_LL_MAX_BLOCKS];   /* last command each block finished */
    volatile uint64_t exit_word;                 /* gen << 32 | last command taken (low 32) */
    volatile uint64_t stamp[GPU_LL_STAMPS];      /* block 0, %globaltimer at GPU_LL_T_*, written
                                                    after done (only with stamps) */
    volatile uint64_t stamp_cmd;                 /* the command they are of */
    volatile uint64_t cancel;                    /* commands up to this one are dropped: the
                                                    host saw a peer take the host path */
} gpu_ll_mailbox_t;

/* Per-rank scratch region, identical layout on every rank. */
#define GPU_LL_ACK_OFF 0                          /* [block][writer] u64, written by readers */
#define GPU_LL_CTL_OFF ((size_t) GPU_LL_MAX_BLOCKS * GPU_MAX_PEERS * 8)  /* block 0's quit word */
#define GPU_LL_CMD_OFF (GPU_LL_CTL_OFF + 64)     /* its tagged copy of a command for the others */
#define GPU_LL_SLOTS_OFF (GPU_LL_CTL_OFF + 4096)  /* [parity][source][line] */
/* the copy of the largest command fits before the slots */
typedef char gpu_ll_cmd_copy_fits[GPU_LL_CMD_OFF + 8 * GPU_LL_DESC_WORDS <= GPU_LL_SLOTS_OFF ? 1
                                                                                          : -1];

typedef struct {
    char *peer_base[GPU_MAX_PEERS];
    size_t region_off;          /* of the LL region in every rank's scratch */
    size_t slot_lines;          /* lines per (parity, source) slot */
    size_t min_piece;           /* smallest piece a block takes (multiple of 8) */
    int nranks;
    int rank;
    int stamps;                 /* write the phase stamps (verbose 10) */
    unsigned gen;               /* this launch's generation (16 bits used) */
    unsigned long long start;   /* first command number it may take */
    unsigned long long idle_ns;
    unsigned long long idle_short_ns;   /* after a command with the leave bit */
    int one_shot;               /* every block leaves after its first command: a
                                   launch of only the blocks one call needs, made
                                   when the application works between calls */
    unsigned long long timeout_ns;
    gpu_ll_mailbox_t *mbox;     /* device view of the host mailbox */
    gpu_kernel_error_t *err;
} gpu_ll_args_t;

/* host and device, like the exchange kernel's chunking (gpu_kernels.h) */
/* Leave soon after this command (the application works between calls). */
GPU_XCHG_HD int gpu_ll_cmd_leave(uint32_t cmd_word)
{
    return (int) ((cmd_word >> 7) & 1);
}

/* Blocks with work on the issuing rank, from the command word. */
GPU_XCHG_HD int gpu_ll_cmd_busy(uint32_t cmd_word)
{
    return (int) ((cmd_word >> 24) & 127);
}

/*
 * Piece of a len-byte pair that each block takes: the same at both ends.
 * 32-bit arithmetic, exact for a pair under GPU_LL_MAX_BYTES: the kernel
 * cuts every pair of every command, and a 64-bit division costs about
 * 160 ns on an SM (docs/results/h200x2_2026-11-22_resident_kernel/probe_sm_h200x2.log).
 */
GPU_XCHG_HD size_t gpu_ll_piece(size_t len, int nblocks, size_t min_piece)
{
    const unsigned nb = (unsigned) nblocks, mp = (unsigned) min_piece;
    unsigned p = ((unsigned) len + nb - 1) / nb;
    p = (p + GPU_LL_PAYLOAD - 1) / GPU_LL_PAYLOAD * GPU_LL_PAYLOAD;
    return p < mp ? mp : p;
}

/* Block b's range [*off, *off + *n) of a len-byte pair; 0 when empty. */
GPU_XCHG_HD int gpu_ll_block_range(size_t len, int b, int nblocks, size_t min_piece, size_t *off,
                                 size_t *n)
{
    const unsigned l = (unsigned) len, p = (unsigned) gpu_ll_piece(len, nblocks, min_piece);
    const unsigned lo = (unsigned) b * p;
    if (0 == l || lo >= l) {
        return 0;
    }
    *off = lo;
    *n = l - lo < p ? l - lo : p;
    return 1;
}

/* How many leading blocks have a piece of a len-byte pair. */
GPU_XCHG_HD int gpu_ll_blocks_for(size_t len, int nblocks, size_t min_piece)
{
    const size_t p = gpu_ll_piece(len, nblocks, min_piece);
    return 0 == len ? 0 : (int) ((len + p - 1) / p);
}

/*
 * How many of a block's nt threads send (threads [0, split)).  A sender
 * stores its lines and goes on; a receiver waits for each of its lines in
 * turn, so once a side is big (more lines than half the threads) the
 * receivers get the larger share: a one-sided block (a reduce's root, a
 * bcast's leaves, ...) gives its side every warp but one, a two-sided
 * block three quarters to its receivers (an eighth or 3/8 as senders
 * measured slower; docs/results/h200x2_2026-11-22_resident_kernel/
 * ab_2026-11-22_9d82d59_h200x2.log: a 256 KiB reduce
 * 10.3 -> 8.7 us with 64 blocks).  Below that every thread has at most one
 * line either way and the split stays even.  A sending-only block keeps
 * its last warp out, so the reporting thread (the first one at or past the
 * split) has no NVLink stores outstanding when it fences.
 */
GPU_XCHG_HD unsigned gpu_ll_split(unsigned nt, int sends, int recvs, int sbig, int rbig)
{
    const unsigned half = (nt / 2) & ~31u, quarter = (nt / 4) & ~31u;
    if (!recvs) {
        return sbig ? nt - 32 : half;
    }
    if (!sends) {
        return rbig ? 0 : half;
    }
    return rbig && quarter >= 32 ? quarter : half;
}

GPU_XCHG_HD uint32_t gpu_ll_flag(unsigned long long seq)
{
    return 0x80000000u | (uint32_t) (seq & 0x7fffffffu);
}

/* Launch the persistent kernel (nblocks x nthreads) on stream. */
gpu_status_t gpu_kernel_ll_launch(const gpu_ll_args_t *args, int nblocks, int nthreads,
                                  void *stream);

#ifdef __cplusplus
}
#endif

#endif /* GPU_LL_H */
