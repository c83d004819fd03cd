/*
 * The memory-kind board (util/gpu_kind_board.h) without MPI: two processes
 * each post a pseudo-random kind per call (changing every few calls, so the
 * change-point history fills and the room rule is exercised) and read the
 * other's kind for the same call, which each can compute: every read must
 * give the kind the other posted.  Also: slot claim/find/release, reads of
 * calls not yet posted, a host-only writer never running out of room.
 * Prints "N passed, N failed".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gpu_kind_board.h"
#include "gpu_nodes.h"

static int npass, nfail;

static void check(int ok, const char *what)
{
    if (ok) {
        ++npass;
    } else {
        ++nfail;
        printf("FAIL %s\n", what);
    }
}

/* the kind process p posts at call c: runs of 1-4 calls */
static int kind_of(int p, uint64_t c)
{
    uint64_t x = (c / 3 + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t) (p + 1) * 0xbf58476d1ce4e5b9ull;
    x ^= x >> 31;
    const int dev = (int) ((x ^ (c % 3 == 2 ? x >> 7 : 0)) & 1);
    /* a device post may carry the busy bit, which changes on its own */
    return dev && ((x >> 17) & 1) ? GPU_KIND_DEVICE | GPU_KIND_BUSY : dev;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

#define CALLS 200000
#define KEY 0x1234abcdull

/* one side of the two-process run; returns the number of wrong reads */
static int side(int p, const char *mine, const char *theirs)
{
    gpu_kind_board_t *b, *o = NULL;
    gpu_kind_post_t w;
    gpu_kind_slot_t *peer = NULL;
    const double limit = now() + 60;
    int wrong = 0;

    if (GPU_OK != gpu_kind_board_create(mine, &b) || GPU_OK != gpu_kind_slot_claim(b, KEY, &w)) {
        return -1;
    }
    while (NULL == peer) {
        if (NULL == o && GPU_OK != gpu_kind_board_open(theirs, &o)) {
            o = NULL;
        }
        if (NULL != o) {
            peer = gpu_kind_slot_find(o, KEY);
        }
        if (now() > limit) {
            return -1;
        }
    }
    for (uint64_t c = 0; c < CALLS; ++c) {
        const int k = kind_of(p, c);
        int got = -1;
        gpu_status_t st;
        while (gpu_kind_full(&w, k) && !gpu_kind_room(&w, peer->pub)) {
            if (now() > limit) {
                return -1;
            }
        }
        if (c != gpu_kind_post(&w, k)) {
            return -1;
        }
        while (GPU_INPROGRESS == (st = gpu_kind_read(peer, c, &got))) {
            if (now() > limit) {
                return -1;
            }
        }
        wrong += GPU_OK != st || got != kind_of(1 - p, c);
    }
    /* stay until the other side has read everything */
    while (peer->pub < CALLS && now() < limit) {
    }
    gpu_kind_slot_release(&w);
    gpu_kind_board_close(o);
    gpu_kind_board_close(b);
    gpu_kind_board_unlink(mine);
    return wrong;
}

int main(void)
{
    char n0[64], n1[64];
    gpu_kind_board_t *b, *r;
    gpu_kind_post_t w, w2;
    int k = -1;

    snprintf(n0, sizeof(n0), "/gpucoll-kind-test-%d-0", (int) getpid());
    snprintf(n1, sizeof(n1), "/gpucoll-kind-test-%d-1", (int) getpid());

    /* one process: claim, find, read ahead, release and reclaim */
    check(GPU_INPROGRESS == gpu_kind_board_open(n0, &r), "open before create says not yet");
    check(GPU_OK == gpu_kind_board_create(n0, &b), "create");
    check(GPU_OK == gpu_kind_board_open(n0, &r), "open");
    check(NULL == gpu_kind_slot_find(r, 7), "no slot before claim");
    check(GPU_OK == gpu_kind_slot_claim(b, 7, &w), "claim");
    check(GPU_OK == gpu_kind_slot_claim(b, 7 + GPU_KIND_SLOTS, &w2), "claim a second key");
    check(gpu_kind_slot_find(r, 7) == (gpu_kind_slot_t *) ((char *) r + ((char *) w.slot - (char *) b)),
          "find gives the claimed slot");
    check(GPU_INPROGRESS == gpu_kind_read(gpu_kind_slot_find(r, 7), 0, &k), "call 0 not posted yet");
    for (int c = 0; c < 1000; ++c) {
        check(!gpu_kind_full(&w, GPU_KIND_HOST), "host-only writer always has room");
        (void) gpu_kind_post(&w, GPU_KIND_HOST);
    }
    check(GPU_OK == gpu_kind_read(gpu_kind_slot_find(r, 7), 999, &k) && GPU_KIND_HOST == k,
          "host-only history reads host");
    (void) gpu_kind_post(&w, GPU_KIND_DEVICE);
    (void) gpu_kind_post(&w, GPU_KIND_DEVICE);
    (void) gpu_kind_post(&w, GPU_KIND_HOST);
    check(GPU_OK == gpu_kind_read(w.slot, 1000, &k) && GPU_KIND_DEVICE == k, "call 1000 device");
    check(GPU_OK == gpu_kind_read(w.slot, 1001, &k) && GPU_KIND_DEVICE == k, "call 1001 device");
    check(GPU_OK == gpu_kind_read(w.slot, 1002, &k) && GPU_KIND_HOST == k, "call 1002 host");
    check(GPU_OK == gpu_kind_read(w.slot, 5, &k) && GPU_KIND_HOST == k, "call 5 host");
    (void) gpu_kind_post(&w, GPU_KIND_DEVICE | GPU_KIND_BUSY);
    (void) gpu_kind_post(&w, GPU_KIND_DEVICE);
    check(GPU_OK == gpu_kind_read(w.slot, 1003, &k) && (GPU_KIND_DEVICE | GPU_KIND_BUSY) == k,
          "call 1003 device and busy");
    check(GPU_OK == gpu_kind_read(w.slot, 1004, &k) && GPU_KIND_DEVICE == k,
          "call 1004 device, not busy (a change point of its own)");
    {
        /* the pool's lease (GPU_KIND_POOL, engine/gpu_pool.h): read back
         * beside the other bits; a post repeating it records nothing */
        const uint64_t nchg = w.slot->nchg;
        (void) gpu_kind_post(&w, GPU_KIND_DEVICE | GPU_KIND_POOL);
        (void) gpu_kind_post(&w, GPU_KIND_DEVICE | GPU_KIND_POOL);
        (void) gpu_kind_post(&w, GPU_KIND_DEVICE | GPU_KIND_BUSY | GPU_KIND_POOL);
        (void) gpu_kind_post(&w, GPU_KIND_DEVICE);
        check(w.slot->nchg == nchg + 3, "a repeated pool bit records no change point");
        check(GPU_OK == gpu_kind_read(w.slot, 1006, &k) && (GPU_KIND_DEVICE | GPU_KIND_POOL) == k,
              "call 1006 device, holding its pool");
        check(GPU_OK == gpu_kind_read(w.slot, 1007, &k) &&
              (GPU_KIND_DEVICE | GPU_KIND_BUSY | GPU_KIND_POOL) == k,
              "call 1007 device, busy, holding its pool");
        check(GPU_OK == gpu_kind_read(w.slot, 1008, &k) && GPU_KIND_DEVICE == k,
              "call 1008 device, its pool not held");
        check(GPU_OK == gpu_kind_read(w.slot, 1004, &k) && GPU_KIND_DEVICE == k,
              "call 1004 still device only");
    }
    {
        int freed = -1;
        check(gpu_kind_slot_find_last(r, 7, &freed) == gpu_kind_slot_find(r, 7) && 0 == freed,
              "find_last gives the live slot");
        gpu_kind_slot_release(&w);
        check(NULL == gpu_kind_slot_find(r, 7), "released slot not found");
        /* a rank on another node may still ask about the last calls */
        gpu_kind_slot_t *last = gpu_kind_slot_find_last(r, 7, &freed);
        check(NULL != last && 1 == freed, "find_last gives the freed slot");
        check(NULL != last && GPU_OK == gpu_kind_read(last, 1008, &k) && GPU_KIND_DEVICE == k,
              "the freed slot still reads its last call");
        check(NULL != last && GPU_INPROGRESS == gpu_kind_read(last, 1009, &k),
              "a call the owner never made reads not yet");
        check(NULL == gpu_kind_slot_find_last(r, 8, &freed), "find_last of an unknown key");
    }
    check(NULL != gpu_kind_slot_find(r, 7 + GPU_KIND_SLOTS), "the other key still found past it");
    check(GPU_OK == gpu_kind_slot_claim(b, 7, &w), "reclaim");
    {
        int freed = -1;
        check(gpu_kind_slot_find_last(r, 7, &freed) == gpu_kind_slot_find(r, 7) && 0 == freed,
              "reclaimed: find_last gives the new slot");
    }
    check(GPU_INPROGRESS == gpu_kind_read(gpu_kind_slot_find(r, 7), 0, &k), "reclaimed slot starts empty");
    /* fill the history, then a reader lagging at call 0 blocks the oldest point */
    for (int c = 0; c < GPU_KIND_CHANGES; ++c) {
        (void) gpu_kind_post(&w, c & 1 ? GPU_KIND_HOST : GPU_KIND_DEVICE);
    }
    check(gpu_kind_full(&w, GPU_KIND_DEVICE), "history full at a change");
    check(!gpu_kind_room(&w, 1), "no room while a reader needs call 0");
    check(gpu_kind_room(&w, 2), "room once every reader passed call 1");
    gpu_kind_board_close(r);
    gpu_kind_board_close(b);
    gpu_kind_board_unlink(n0);

    /* nodes: hosts split into virtual nodes in rank order */
    {
        const uint64_t host[8] = { 5, 9, 5, 9, 5, 9, 5, 9 };
        const uint64_t one[4] = { 3, 3, 3, 3 };
        int node_of[8], want2[8] = { 0, 1, 0, 1, 2, 3, 2, 3 }, want1[8] = { 0, 1, 0, 1, 0, 1, 0, 1 };
        int ok = 2 == gpu_nodes_split(8, host, 1, node_of);
        for (int i = 0; i < 8; ++i) {
            ok &= node_of[i] == want1[i];
        }
        check(ok, "two hosts interleaved: two nodes");
        ok = 4 == gpu_nodes_split(8, host, 2, node_of);
        for (int i = 0; i < 8; ++i) {
            ok &= node_of[i] == want2[i];
        }
        check(ok, "two hosts, two virtual nodes each: first half and second half of each host");
        check(2 == gpu_nodes_split(4, one, 2, node_of) && 0 == node_of[1] && 1 == node_of[2],
              "one host of 4 ranks split in 2");
        check(4 == gpu_nodes_split(4, one, 8, node_of) && 3 == node_of[3],
              "more virtual nodes than ranks: one rank each");
        check(gpu_nodes_name_key("nodeA") != gpu_nodes_name_key("nodeB") &&
              gpu_nodes_name_key("nodeA") == gpu_nodes_name_key("nodeA"), "host name keys");
    }

    /* two processes */
    {
        const pid_t pid = fork();
        if (0 == pid) {
            _exit(side(1, n1, n0) == 0 ? 0 : 1);
        }
        const int wrong = side(0, n0, n1);
        int status = 0;
        waitpid(pid, &status, 0);
        check(0 == wrong, "process 0 read every kind of process 1 right (200000 calls)");
        check(WIFEXITED(status) && 0 == WEXITSTATUS(status),
              "process 1 read every kind of process 0 right (200000 calls)");
    }
    printf("test_kind_board: %d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
