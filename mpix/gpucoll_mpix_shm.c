/*
 * libgpucoll's host transport over POSIX shared memory (design in
 * gpucoll_mpix_shm.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "mpix/gpucoll_mpix_shm_int.h"

static size_t gcs_layout(int n, size_t slot, size_t ring, size_t *ctl_off, size_t *slot_off,
                         size_t *ring_off)
{
    *ctl_off = sizeof(gcs_head_t);
    *slot_off = *ctl_off + (size_t) n * sizeof(gcs_ctl_t);
    *ring_off = *slot_off + (size_t) n * slot;
    return *ring_off + (size_t) n * n * (sizeof(gcs_ring_ctl_t) + ring);
}

static gcs_ctl_t *gcs_ctl(const gcs_t *t, int r)
{
    size_t c, s, g;
    gcs_layout(t->nranks, t->slot_bytes, t->ring_bytes, &c, &s, &g);
    return (gcs_ctl_t *) (t->base + c) + r;
}

static char *gcs_slot(const gcs_t *t, int r)
{
    return t->slots[r];
}

gcs_ring_ctl_t *gcs_ring(const gcs_t *t, int src, int dst)
{
    size_t c, s, g;
    gcs_layout(t->nranks, t->slot_bytes, t->ring_bytes, &c, &s, &g);
    return (gcs_ring_ctl_t *) (t->base + g +
                               ((size_t) src * t->nranks + dst) *
                               (sizeof(gcs_ring_ctl_t) + t->ring_bytes));
}

double gcs_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + 1e-9 * (double) ts.tv_nsec;
}

size_t gcs_env_size(const char *name, size_t dflt)
{
    const char *v = getenv(name);
    char *end;
    unsigned long long x;
    if (NULL == v || '\0' == *v) {
        return dflt;
    }
    x = strtoull(v, &end, 0);
    return '\0' == *end && x >= 4096 ? (size_t) x : dflt;
}

size_t gcs_slot_size(int nranks)
{
    size_t slot = gcs_env_size("GPUCOLL_STREAM_SLOT_BYTES", (16u << 20) / (size_t) nranks);
    slot = slot > (1u << 20) ? (1u << 20) : slot < 65536 ? 65536 : slot;
    if (NULL != getenv("GPUCOLL_STREAM_SLOT_BYTES")) {
        slot = gcs_env_size("GPUCOLL_STREAM_SLOT_BYTES", slot);
    }
    return (slot + 4095) & ~(size_t) 4095;
}

static const gcs_wire_t gcs_shm_wire;

/* coll/gpu's coll_gpu_virtual_nodes (0 where unset or unreadable): the
 * node's ranks split as coll/gpu splits them, so that the transport spans
 * no two of its nodes and a test on one machine sees what a communicator
 * across nodes does.  Read through MPI_T: set on the command line, the
 * environment or a parameter file alike */
static int gcs_virtual_nodes(void)
{
    int v = 0, prov, idx, count;
    MPI_T_cvar_handle h;

    if (MPI_SUCCESS != MPI_T_init_thread(MPI_THREAD_SINGLE, &prov)) {
        return 0;
    }
    if (MPI_SUCCESS == MPI_T_cvar_get_index("coll_gpu_virtual_nodes", &idx) &&
        MPI_SUCCESS == MPI_T_cvar_handle_alloc(idx, NULL, &h, &count)) {
        if (1 != count || MPI_SUCCESS != MPI_T_cvar_read(h, &v)) {
            v = 0;
        }
        MPI_T_cvar_handle_free(&h);
    }
    MPI_T_finalize();
    return v;
}

int gcs_create(MPI_Comm comm, double timeout_s, gcs_t **out)
{
    static int counter;
    MPI_Comm node;
    gcs_t *t;
    struct {
        char name[64];
        unsigned long long slot, ring;
    } hello;
    size_t c, s, g, bytes = 0;
    int nnode, vnodes, ok = 1, all_ok = 0, fd = -1, ret, len = 0;
    const char *why = NULL;

    *out = NULL;
    ret = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    if (MPI_SUCCESS != ret) {
        return ret;
    }
    MPI_Comm_size(node, &nnode);
    vnodes = gcs_virtual_nodes();
    if (vnodes > 1) {
        /* coll/gpu's split: local ranks in order, lrank * V / size */
        MPI_Comm vnode;
        int lrank;
        MPI_Comm_rank(node, &lrank);
        ret = MPI_Comm_split(node, (int) ((long) lrank * vnodes / nnode), lrank, &vnode);
        if (MPI_SUCCESS != ret) {
            MPI_Comm_free(&node);
            return ret;
        }
        MPI_Comm_size(vnode, &nnode);
        MPI_Comm_free(&vnode);
    }
    MPI_Comm_free(&node);
    t = calloc(1, sizeof(*t));
    if (NULL == t) {
        return MPI_ERR_NO_MEM;
    }
    MPI_Comm_rank(comm, &t->rank);
    MPI_Comm_size(comm, &t->nranks);
    /* the same on every rank: no segment across nodes */
    if (nnode != t->nranks) {
        free(t);
        return MPI_SUCCESS;
    }
    t->timeout_s = timeout_s > 0 ? timeout_s : 60.0;
    MPI_Comm_get_name(comm, t->name, &len);
    if (0 == len) {
        snprintf(t->name, sizeof(t->name), "a stream communicator of %d ranks", t->nranks);
    }
    memset(&hello, 0, sizeof(hello));
    if (0 == t->rank) {
        /* a slot fits 16 MiB over the node, a ring 8 MiB over all pairs
         * (containers often give /dev/shm 64 MiB); both are touched only
         * as far as they are used */
        const size_t n = (size_t) t->nranks;
        size_t ring = gcs_env_size("GPUCOLL_STREAM_RING_BYTES", (8u << 20) / (n * n));
        ring = ring > (256u << 10) ? (256u << 10) : ring < 16384 ? 16384 : ring;
        hello.slot = gcs_slot_size(t->nranks);
        hello.ring = (ring + 4095) & ~(size_t) 4095;
        snprintf(hello.name, sizeof(hello.name), "/gpucoll-%ld-%d-%lx", (long) getpid(),
                 __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED),
                 (unsigned long) (gcs_now() * 1e9) & 0xffffffful);
        bytes = gcs_layout(t->nranks, hello.slot, hello.ring, &c, &s, &g);
        fd = shm_open(hello.name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0 || 0 != ftruncate(fd, (off_t) bytes)) {
            why = strerror(errno);
            ok = 0;
            hello.name[0] = '\0';
        }
    }
    ret = MPI_Bcast(&hello, (int) sizeof(hello), MPI_BYTE, 0, comm);
    if (MPI_SUCCESS != ret) {
        goto out_fd;
    }
    t->slot_bytes = hello.slot;
    t->ring_bytes = hello.ring;
    t->map_bytes = bytes = gcs_layout(t->nranks, hello.slot, hello.ring, &c, &s, &g);
    if ('\0' != hello.name[0] && 0 != t->rank) {
        fd = shm_open(hello.name, O_RDWR, 0600);
        if (fd < 0) {
            why = strerror(errno);
            ok = 0;
        }
    }
    if (ok && '\0' != hello.name[0]) {
        t->base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (MAP_FAILED == t->base) {
            t->base = NULL;
            why = strerror(errno);
            ok = 0;
        }
    }
    if (ok && 0 == t->rank) {
        gcs_head_t *h = (gcs_head_t *) t->base;
        h->nranks = t->nranks;
        h->slot_bytes = hello.slot;
        h->ring_bytes = hello.ring;
        __atomic_store_n(&h->magic, GCS_MAGIC, __ATOMIC_RELEASE);
    }
    /* every rank has it mapped (or failed): the name can go */
    ret = MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
    if (0 == t->rank && '\0' != hello.name[0]) {
        (void) shm_unlink(hello.name);
    }
    if (MPI_SUCCESS != ret || !all_ok) {
        if (NULL != why) {   /* the ranks share a node: worth saying */
            fprintf(stderr, "gpucoll: rank %d: no shared-memory transport for %s: %s\n",
                    t->rank, t->name, why);
        }
        goto out_fd;
    }
    if (0 != t->rank && GCS_MAGIC != __atomic_load_n(&((gcs_head_t *) t->base)->magic,
                                                     __ATOMIC_ACQUIRE)) {
        /* rank 0 wrote it before the allreduce: cannot happen */
        goto out_fd;
    }
    close(fd);
    t->wire = &gcs_shm_wire;
    pthread_mutex_init(&t->lock, NULL);
    t->rcur = calloc((size_t) t->nranks, sizeof(*t->rcur));
    t->scur = calloc((size_t) t->nranks, sizeof(*t->scur));
    t->ref_sent = calloc((size_t) t->nranks, sizeof(*t->ref_sent));
    t->slots = calloc((size_t) t->nranks, sizeof(*t->slots));
    if (NULL == t->rcur || NULL == t->scur || NULL == t->ref_sent || NULL == t->slots) {
        gcs_destroy(t);
        return MPI_ERR_NO_MEM;
    }
    for (int r = 0; r < t->nranks; ++r) {
        t->slots[r] = t->base + s + (size_t) r * t->slot_bytes;
    }
    *out = t;
    return MPI_SUCCESS;

out_fd:
    if (NULL != t->base) {
        munmap(t->base, bytes);
    }
    if (fd >= 0) {
        close(fd);
    }
    free(t);
    return ret;
}

void gcs_destroy(gcs_t *t)
{
    if (NULL == t) {
        return;
    }
    t->wire->destroy(t);
    pthread_mutex_destroy(&t->lock);
    free(t->slots);
    free(t->rcur);
    free(t->scur);
    free(t->ref_sent);
    free(t);
}

static void gcs_shm_destroy(gcs_t *t)
{
    munmap(t->base, t->map_bytes);
}

int gcs_size(const gcs_t *t)
{
    return t->nranks;
}

int gcs_rank(const gcs_t *t)
{
    return t->rank;
}

int gcs_timed_out(gcs_t *t, const char *fn, const char *what, int peer)
{
    fprintf(stderr, "%s on %s: rank %d waited %g s for rank %d (%s); the communicator's "
            "enqueued calls fail from here on (coll_gpu_timeout)\n", fn, t->name, t->rank,
            t->timeout_s, peer, what);
    t->broken = 1;
    return MPI_ERR_OTHER;
}

/* publish this rank's counter (posted or done) for the current round */
static void gcs_shm_publish(gcs_t *t, const gcs_coll_t *c, size_t len, size_t piece, int done)
{
    gcs_ctl_t *me = gcs_ctl(t, t->rank);
    (void) c, (void) len, (void) piece;
    __atomic_store_n(done ? &me->done : &me->posted, t->round, __ATOMIC_RELEASE);
}

/* the first rank whose counter has not reached the round, or -1: a look,
 * never a wait (a host function may not wait, gpucoll_mpix_shm.h) */
static int gcs_shm_missing(gcs_t *t, int done)
{
    for (int k = 1; k < t->nranks; ++k) {
        const int r = (t->rank + k) % t->nranks;
        gcs_ctl_t *p = gcs_ctl(t, r);
        if (__atomic_load_n(done ? &p->done : &p->posted, __ATOMIC_ACQUIRE) < t->round) {
            return r;
        }
    }
    return -1;
}

/* out = x_0 op x_1 op ... op x_{n-1} of the slots' pieces at off */
static void gcs_fold(gcs_t *t, const gcs_coll_t *c, size_t off, size_t len, char *out)
{
    const int n = t->nranks;
    memcpy(out, gcs_slot(t, n - 1) + off, len);
    for (int r = n - 2; r >= 0; --r) {
        c->apply(c->fold, gcs_slot(t, r) + off, out, len / c->esize);
    }
}

/* bytes of a round's piece, 0 where an element does not fit a slot */
static size_t gcs_piece(const gcs_t *t, const gcs_coll_t *c)
{
    const int per_peer = GPUCOLL_MPIX_ALLTOALL == c->coll ||
                         GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK == c->coll;
    const int folds = GPUCOLL_MPIX_ALLREDUCE == c->coll || GPUCOLL_MPIX_REDUCE == c->coll ||
                      GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK == c->coll;
    size_t piece = per_peer ? t->slot_bytes / (size_t) t->nranks : t->slot_bytes;
    if (folds) {
        return 0 == c->esize ? 0 : piece - piece % c->esize;
    }
    return piece & ~(size_t) 63;
}

/* write this rank's piece(s) of the round at off into its slot */
static void gcs_write(gcs_t *t, const gcs_coll_t *c, size_t off, size_t len, size_t piece)
{
    char *mine = gcs_slot(t, t->rank);
    switch (c->coll) {
    case GPUCOLL_MPIX_BCAST:
        if (t->rank == c->root) {
            memcpy(mine, c->in + off, len);
        }
        break;
    case GPUCOLL_MPIX_ALLTOALL:
    case GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK:
        for (int q = 0; q < t->nranks; ++q) {
            memcpy(mine + (size_t) q * piece, c->in + (size_t) q * c->bytes + off, len);
        }
        break;
    default:
        memcpy(mine, c->in + off, len);
        break;
    }
}

/* read what this rank keeps of the round at off */
static void gcs_read(gcs_t *t, const gcs_coll_t *c, size_t off, size_t len, size_t piece)
{
    const int n = t->nranks, me = t->rank;
    switch (c->coll) {
    case GPUCOLL_MPIX_ALLREDUCE:
        gcs_fold(t, c, 0, len, c->out + off);
        break;
    case GPUCOLL_MPIX_REDUCE:
        if (me == c->root) {
            gcs_fold(t, c, 0, len, c->out + off);
        }
        break;
    case GPUCOLL_MPIX_BCAST:
        if (me != c->root) {
            memcpy(c->out + off, gcs_slot(t, c->root), len);
        }
        break;
    case GPUCOLL_MPIX_ALLGATHER:
        for (int r = 0; r < n; ++r) {
            if (r != me) {
                memcpy(c->out + (size_t) r * c->bytes + off, gcs_slot(t, r), len);
            }
        }
        break;
    case GPUCOLL_MPIX_ALLTOALL:
        for (int r = 0; r < n; ++r) {
            memcpy(c->out + (size_t) r * c->bytes + off, gcs_slot(t, r) + (size_t) me * piece,
                   len);
        }
        break;
    default:
        gcs_fold(t, c, (size_t) me * piece, len, c->out + off);
        break;
    }
}

/*
 * The buffers, all dense host memory (in == out for in-place calls):
 *   allreduce, reduce: in and out of bytes (out only at the root for reduce);
 *   bcast: in == out, bytes;
 *   allgather: in of bytes (this rank's block), out of nranks blocks;
 *   alltoall: in and out of nranks blocks of bytes;
 *   reduce_scatter_block: in of nranks blocks of bytes, out one block.
 * Each round: write, publish "posted", (peers') read, publish "done"; a
 * round's slot is rewritten only after every rank's done.
 */
int gcs_coll_test(gcs_t *t, const gcs_coll_t *c, gcs_coll_state_t *s, const char *fn)
{
    const size_t piece = gcs_piece(t, c);
    int missing;

    if (0 == s->phase) {
        if (t->broken) {
            fprintf(stderr, "%s on %s: an earlier call timed out\n", fn, t->name);
            return MPI_ERR_OTHER;
        }
        if (0 == piece) {
            fprintf(stderr, "%s on %s: an element of %zu bytes does not fit a slot of %zu "
                    "(GPUCOLL_STREAM_SLOT_BYTES)\n", fn, t->name, c->esize, t->slot_bytes);
            return MPI_ERR_TRUNCATE;
        }
        if (GPUCOLL_MPIX_ALLGATHER == c->coll &&
            c->in != c->out + (size_t) t->rank * c->bytes) {
            memcpy(c->out + (size_t) t->rank * c->bytes, c->in, c->bytes);
        }
        s->off = 0;
        s->phase = 1;
    }
    for (;;) {
        const size_t len = c->bytes - s->off < piece ? c->bytes - s->off : piece;
        switch (s->phase) {
        case 1:   /* a round begins, or the call ends */
            if (s->off >= c->bytes) {
                return MPI_SUCCESS;
            }
            ++t->round;
            gcs_write(t, c, s->off, len, piece);
            t->wire->publish(t, c, len, piece, 0);
            s->phase = 2;
            s->since = gcs_now();
            /* fall through */
        case 2:   /* every rank's piece is there */
            missing = t->wire->missing(t, 0);
            if (t->broken) {
                return MPI_ERR_OTHER;   /* said where the wire failed */
            }
            if (missing >= 0) {
                return gcs_now() - s->since > t->timeout_s
                       ? gcs_timed_out(t, fn, "its part", missing) : GCS_PENDING;
            }
            gcs_read(t, c, s->off, len, piece);
            t->wire->publish(t, c, len, piece, 1);
            s->phase = 3;
            s->since = gcs_now();
            /* fall through */
        default:  /* every rank is done reading */
            missing = t->wire->missing(t, 1);
            if (missing >= 0) {
                return gcs_now() - s->since > t->timeout_s
                       ? gcs_timed_out(t, fn, "end of a round", missing) : GCS_PENDING;
            }
            s->off += piece;
            s->phase = 1;
            break;
        }
    }
}

/* ---- point to point ---------------------------------------------------------- */

/* copy len bytes between a ring and flat memory, across its end */
static void gcs_ring_copy(char *ring, size_t rbytes, uint64_t pos, char *flat, size_t len,
                          int to_ring)
{
    const size_t at = (size_t) (pos % rbytes), first = rbytes - at < len ? rbytes - at : len;
    if (to_ring) {
        memcpy(ring + at, flat, first);
        memcpy(ring, flat + first, len - first);
    } else {
        memcpy(flat, ring + at, first);
        memcpy(flat + first, ring, len - first);
    }
}

static size_t gcs_pad(size_t b)
{
    return (b + GCS_HDR - 1) & ~(size_t) (GCS_HDR - 1);
}

/* a send by reference: header, sequence number and att in one piece,
 * once the ring has room and the pair's slot for it is free */
static void gcs_push_ref(gcs_t *t, gcs_msg_t *m, gcs_ring_ctl_t *rc, char *ring, size_t room)
{
    const uint64_t seq = t->ref_sent[m->peer] + 1;
    const size_t len = 2 * GCS_HDR + gcs_pad(m->att_bytes);
    uint64_t h[4] = { m->bytes, (uint64_t) (uint32_t) m->tag | (uint64_t) m->att_bytes << 32,
                      seq, 0 };
    uint64_t at = rc->head;

    if (room < len || (seq > GCS_ACKS &&
                       __atomic_load_n(&rc->ack[seq % GCS_ACKS], __ATOMIC_ACQUIRE) !=
                       seq - GCS_ACKS)) {
        return;
    }
    gcs_ring_copy(ring, t->ring_bytes, at, (char *) h, sizeof(h), 1);
    gcs_ring_copy(ring, t->ring_bytes, at + sizeof(h), (char *) m->att, m->att_bytes, 1);
    __atomic_store_n(&rc->head, at + len, __ATOMIC_RELEASE);
    t->ref_sent[m->peer] = seq;
    m->seq = seq;
    m->hdr = m->pushed = 1;
}

/* as much of send m as its ring takes now */
static void gcs_push(gcs_t *t, gcs_msg_t *m)
{
    gcs_ring_ctl_t *rc = gcs_ring(t, t->rank, m->peer);
    char *ring = (char *) (rc + 1);
    const uint64_t head = rc->head, tail = __atomic_load_n(&rc->tail, __ATOMIC_ACQUIRE);
    size_t room = t->ring_bytes - (size_t) (head - tail), len;
    uint64_t at = head;

    if (m->att_bytes > 0) {
        gcs_push_ref(t, m, rc, ring, room);
        return;
    }
    if (!m->hdr) {
        uint64_t h[2] = { m->bytes, (uint64_t) (uint32_t) m->tag };
        if (room < GCS_HDR) {
            return;
        }
        gcs_ring_copy(ring, t->ring_bytes, at, (char *) h, GCS_HDR, 1);
        at += GCS_HDR;
        room -= GCS_HDR;
        m->hdr = 1;
    }
    len = gcs_pad(m->bytes) - m->moved;
    len = len < room ? len : room;
    if (len > 0) {
        /* the padding is never read: only the message's own bytes go */
        const size_t real = m->moved < m->bytes ? m->bytes - m->moved : 0;
        gcs_ring_copy(ring, t->ring_bytes, at, m->buf + m->moved, len < real ? len : real, 1);
        at += len;
        m->moved += len;
    }
    __atomic_store_n(&rc->head, at, __ATOMIC_RELEASE);
    m->pushed = m->complete = m->moved == gcs_pad(m->bytes);
}

/* the first posted receive from src that takes tag */
gcs_msg_t *gcs_match(gcs_t *t, int src, int tag)
{
    for (gcs_msg_t *m = t->active; NULL != m; m = m->next) {
        if (!m->send && !m->hdr && m->peer == src && (MPI_ANY_TAG == m->tag || m->tag == tag)) {
            return m;
        }
    }
    return NULL;
}

/* as much of the message from src as has arrived */
static void gcs_pull(gcs_t *t, int src)
{
    gcs_ring_ctl_t *rc = gcs_ring(t, src, t->rank);
    char *ring = (char *) (rc + 1);
    uint64_t tail = rc->tail;
    const uint64_t head = __atomic_load_n(&rc->head, __ATOMIC_ACQUIRE);
    gcs_msg_t *m = t->rcur[src];
    size_t len;

    if (NULL == m) {
        uint64_t h[4];
        size_t att;
        if (head - tail < GCS_HDR) {
            return;
        }
        gcs_ring_copy(ring, t->ring_bytes, tail, (char *) h, GCS_HDR, 0);
        att = (size_t) (h[1] >> 32);
        m = gcs_match(t, src, (int) (uint32_t) h[1]);
        if (NULL == m) {
            return;   /* its receive is not posted yet */
        }
        m->hdr = 1;
        m->got = (size_t) h[0];
        m->got_tag = (int) (uint32_t) h[1];
        if (m->got > m->bytes) {
            m->err = MPI_ERR_TRUNCATE;
        }
        if (att > 0) {
            /* by reference: the sender wrote it in one piece */
            const size_t len = 2 * GCS_HDR + gcs_pad(att);
            gcs_ring_copy(ring, t->ring_bytes, tail, (char *) h, sizeof(h), 0);
            m->seq = h[2];
            m->remote = 1;
            gcs_ring_copy(ring, t->ring_bytes, tail + sizeof(h), m->ratt,
                          att < GCS_ATT_MAX ? att : GCS_ATT_MAX, 0);
            __atomic_store_n(&rc->tail, tail + len, __ATOMIC_RELEASE);
            m->arrived = 1;
            return;
        }
        tail += GCS_HDR;
        t->rcur[src] = m;
    }
    len = gcs_pad(m->got) - m->moved;
    len = len < head - tail ? len : (size_t) (head - tail);
    if (len > 0) {
        const size_t want = m->moved < m->bytes && m->moved < m->got
                            ? (m->bytes < m->got ? m->bytes : m->got) - m->moved : 0;
        gcs_ring_copy(ring, t->ring_bytes, tail, m->buf + m->moved, len < want ? len : want, 0);
        m->moved += len;
        tail += len;
    }
    __atomic_store_n(&rc->tail, tail, __ATOMIC_RELEASE);
    if (m->moved == gcs_pad(m->got)) {
        m->arrived = 1;   /* its caller completes it */
        t->rcur[src] = NULL;
    }
}

void gcs_post(gcs_t *t, gcs_msg_t *m)
{
    gcs_msg_t **p;
    if (t->broken) {
        return;   /* its wait says so; m may still be on the list */
    }
    m->moved = m->got = 0;
    m->hdr = m->complete = m->err = 0;
    m->pushed = m->arrived = m->remote = 0;
    m->bouncing = m->bounced = 0;
    m->bmoved = 0;
    m->seq = 0;
    m->nreq[0] = m->nreq[1] = NULL;
    m->tmp = NULL;
    m->next = NULL;
    pthread_mutex_lock(&t->lock);
    for (p = &t->active; NULL != *p; p = &(*p)->next) {
    }
    *p = m;
    pthread_mutex_unlock(&t->lock);
}

/* one pass over every posted message (the lock held) */
static void gcs_shm_progress(gcs_t *t)
{
    for (gcs_msg_t *m = t->active; NULL != m; m = m->next) {
        if (m->send && !m->pushed && (NULL == t->scur[m->peer] || m == t->scur[m->peer])) {
            t->scur[m->peer] = m;
            gcs_push(t, m);
            if (m->pushed) {
                t->scur[m->peer] = NULL;
            }
        }
        if (m->send && m->pushed && !m->complete && m->att_bytes > 0) {
            gcs_bounce_send_step(t, m);   /* where its receiver asked for that */
        }
        if (!m->send && m->bouncing && !m->bounced) {
            gcs_bounce_recv_step(t, m);
        }
        if (m->send && m->pushed && !m->complete) {
            /* by reference: done once the receiver says so.  At least seq,
             * not equal: later in this same pass the send GCS_ACKS after
             * this one may see this ack, go, and be acknowledged in the same
             * slot before this send looks again (seen at np 4: the send never
             * completed, its wait ran into coll_gpu_timeout) */
            gcs_ring_ctl_t *rc = gcs_ring(t, t->rank, m->peer);
            m->complete = __atomic_load_n(&rc->ack[m->seq % GCS_ACKS], __ATOMIC_ACQUIRE) >=
                          m->seq;
        }
    }
    for (int r = 0; r < t->nranks; ++r) {
        if (r != t->rank) {
            gcs_pull(t, r);
        }
    }
}

/* one pass over every posted message; completed ones leave the list */
static void gcs_progress(gcs_t *t)
{
    gcs_msg_t **p;
    pthread_mutex_lock(&t->lock);
    t->wire->progress(t);
    for (p = &t->active; NULL != *p;) {
        if ((*p)->complete) {
            *p = (*p)->next;
        } else {
            p = &(*p)->next;
        }
    }
    pthread_mutex_unlock(&t->lock);
}

int gcs_poll(gcs_t *t)
{
    if (t->broken) {
        return MPI_ERR_OTHER;
    }
    gcs_progress(t);
    return MPI_SUCCESS;
}

int gcs_broken(const gcs_t *t)
{
    return t->broken;
}

static void gcs_shm_recv_done(gcs_t *t, gcs_msg_t *m)
{
    if (m->remote) {
        gcs_ring_ctl_t *rc = gcs_ring(t, m->peer, t->rank);
        if (m->bouncing) {   /* the pair's bounce area is free again */
            __atomic_store_n(&rc->breq, 0, __ATOMIC_RELEASE);
        }
        __atomic_store_n(&rc->ack[m->seq % GCS_ACKS], m->seq, __ATOMIC_RELEASE);
    }
}

void gcs_recv_done(gcs_t *t, gcs_msg_t *m)
{
    t->wire->recv_done(t, m);
    pthread_mutex_lock(&t->lock);
    m->complete = 1;
    pthread_mutex_unlock(&t->lock);
}

/* what a message that is not complete waits for, for the timeout's message */
static const char *gcs_waits_for(const gcs_msg_t *m)
{
    if (m->send) {
        return m->att_bytes > 0 && m->pushed ? "its copy of a message sent by CUDA IPC"
               : m->pushed ? "its receive of a message sent" : "room for a send";
    }
    if (m->bouncing) {
        return "the sender's copies through host memory of a message it could not map";
    }
    return m->arrived ? "this rank's copy into the receive buffer" : "a message it receives";
}

int gcs_wait_test(gcs_t *t, gcs_msg_t *const *m, int n, double since, const char *fn)
{
    int ret = MPI_SUCCESS;

    if (t->broken) {
        fprintf(stderr, "%s on %s: an earlier call timed out\n", fn, t->name);
        return MPI_ERR_OTHER;
    }
    gcs_progress(t);
    for (int i = 0; i < n; ++i) {
        if (!m[i]->complete) {
            return gcs_now() - since > t->timeout_s
                   ? gcs_timed_out(t, fn, gcs_waits_for(m[i]), m[i]->peer) : GCS_PENDING;
        }
    }
    for (int i = 0; i < n; ++i) {
        /* here, not when the message arrived: a receive may complete in an
         * earlier wait's pass, before its own wait named the status */
        if (!m[i]->send && MPI_STATUS_IGNORE != m[i]->status) {
            m[i]->status->MPI_SOURCE = m[i]->peer;
            m[i]->status->MPI_TAG = m[i]->got_tag;
            m[i]->status->MPI_ERROR = m[i]->err;
            /* Open MPI's count field (MPI_Status_set_elements is an MPI call) */
            m[i]->status->_ucount = m[i]->got < m[i]->bytes ? m[i]->got : m[i]->bytes;
            m[i]->status->_cancelled = 0;
        }
        if (MPI_SUCCESS != m[i]->err && MPI_SUCCESS == ret) {
            ret = m[i]->err;
            fprintf(stderr, "%s on %s: rank %d sent %zu bytes to a receive of %zu\n", fn,
                    t->name, m[i]->peer, m[i]->got, m[i]->bytes);
        }
    }
    return ret;
}

double gcs_clock(void)
{
    return gcs_now();
}

/* a short spin, then the core goes to others (ranks may share cores) */
void gcs_pause(unsigned *spins)
{
    if (++*spins > 256) {
        sched_yield();
    }
}

int gcs_by_reference(const gcs_t *t)
{
    return t->wire->by_reference;
}

static const gcs_wire_t gcs_shm_wire = {
    .publish = gcs_shm_publish,
    .missing = gcs_shm_missing,
    .progress = gcs_shm_progress,
    .recv_done = gcs_shm_recv_done,
    .destroy = gcs_shm_destroy,
    .by_reference = 1,
};
