/*
 * libgpucoll's host transport across nodes: the rounds and messages of
 * gpucoll_mpix_shm.h carried by coll/gpu's network transport (UCX, lent
 * through its entry's version 5: ompi_coll_gpu/coll_gpu_mpix_net.c)
 * instead of a node's shared-memory segment.
 *
 * Why a wire and not another transport: the state machines that never wait
 * (a collective's rounds, the list of posted messages, the bounded waits
 * that name the peer) are what MPICH's stream programs rely on at any
 * thread level, and they do not care what carries the bytes.  Only the
 * steps that touch the segment differ, so they are the wire (gcs_wire_t).
 *
 * Rounds: where a rank on the segment writes its piece into its slot and
 * its peers read it there, here it sends the piece to the ranks that read
 * it (all of them, the root, or one block to each), which receive it into
 * an area of their own for that peer, read through the same slots[] as on
 * the segment.  The areas belong to the reader, so there is no "done" step;
 * a round ends once this rank's sends and receives are complete (its slot
 * is rewritten only then).  Tags are round numbers: a communicator's
 * rounds go in the same order on every rank.
 *
 * Messages: a header (bytes, tag) and then the bytes, two sends tagged with
 * the pair's message number.  The receiver has one header receive posted
 * per peer; a header that no posted receive takes waits, and the next is
 * not received before it, so receives match in the order the peer sent
 * (MPI's non-overtaking rule) with MPI_ANY_TAG as on the segment.  A send
 * completes when the network has taken both parts.  Nothing goes by
 * reference: the bytes are the pinned copies the caller made.
 *
 * The network's worker is this transport's alone and is driven only on
 * libgpucoll's progress thread (each step takes the transport's lock).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpix/gpucoll_mpix_shm_int.h"

#define GCN_SEQ 0x3fffffffu   /* round or message number bits of a tag */
#define GCN_MSG 0x80000000u   /* a message's header, not a round */
#define GCN_BYTES 0x40000000u /* a message's bytes */

struct gcn {
    const gpucoll_mpix_abi_t *abi;
    void *net;
    char *mine, *land;        /* this rank's slot; the peers' areas, slot_bytes each */
    void **creq;              /* the round's requests: [2q] to q, [2q + 1] from q */
    unsigned *sseq, *rseq;    /* per peer: messages sent to it, received from it */
    unsigned long long (*hin)[2];   /* per peer: the header of its next message */
    void **hreq;              /* per peer: that header's receive */
    int *held;                /* per peer: a header no posted receive took yet */
};

/* a request that failed (logged by coll/gpu, naming the peer) breaks the
 * transport as a timeout does: the ranks' rounds are out of step */
static int gcn_test(gcs_t *t, void **req, int progress)
{
    const int rc = t->net->abi->net_test(t->net->net, req, progress);
    if (MPI_SUCCESS != rc && GPUCOLL_MPIX_NET_PENDING != rc) {
        if (!t->broken) {
            fprintf(stderr, "gpucoll: rank %d: a message on %s failed; the communicator's "
                    "enqueued calls fail from here on\n", t->rank, t->name);
        }
        t->broken = 1;
    }
    return rc;
}

static void gcn_post(gcs_t *t, int send, int peer, void *buf, size_t len, unsigned tag,
                     void **req)
{
    struct gcn *g = t->net;
    const int rc = send ? g->abi->net_isend(g->net, peer, buf, len, tag, req)
                        : g->abi->net_irecv(g->net, peer, buf, len, tag, req);
    if (MPI_SUCCESS != rc) {
        if (!t->broken) {
            fprintf(stderr, "gpucoll: rank %d: a %s rank %d on %s could not be posted; the "
                    "communicator's enqueued calls fail from here on\n", t->rank,
                    send ? "send to" : "receive from", peer, t->name);
        }
        t->broken = 1;
    }
}

/* this rank's pieces of the round go to the ranks that read them, and the
 * receives of what it reads are posted (gcs_read's view: slots[q]) */
static void gcn_publish(gcs_t *t, const gcs_coll_t *c, size_t len, size_t piece, int done)
{
    struct gcn *g = t->net;
    const int me = t->rank, n = t->nranks;
    const unsigned tag = (unsigned) (t->round & GCN_SEQ);

    if (done) {
        return;
    }
    pthread_mutex_lock(&t->lock);
    for (int k = 1; k < n && !t->broken; ++k) {
        const int q = (me + k) % n, from = (me + n - k) % n;
        char *out = g->mine, *in = t->slots[from];
        int send = 1, recv = 1;
        switch (c->coll) {
        case GPUCOLL_MPIX_BCAST:
            send = me == c->root;
            recv = from == c->root;
            break;
        case GPUCOLL_MPIX_REDUCE:
            send = q == c->root;
            recv = me == c->root;
            break;
        case GPUCOLL_MPIX_ALLTOALL:
        case GPUCOLL_MPIX_REDUCE_SCATTER_BLOCK:
            out += (size_t) q * piece;
            in += (size_t) me * piece;
            break;
        default:
            break;
        }
        if (recv) {
            gcn_post(t, 0, from, in, len, tag, &g->creq[2 * from + 1]);
        }
        if (send) {
            gcn_post(t, 1, q, out, len, tag, &g->creq[2 * q]);
        }
    }
    pthread_mutex_unlock(&t->lock);
}

static int gcn_missing(gcs_t *t, int done)
{
    struct gcn *g = t->net;
    int first = -1;

    if (done) {
        return -1;
    }
    pthread_mutex_lock(&t->lock);
    (void) gcn_test(t, &(void *) { NULL }, 1);
    for (int k = 1; k < t->nranks; ++k) {
        const int q = (t->rank + k) % t->nranks;
        const int to = GPUCOLL_MPIX_NET_PENDING == gcn_test(t, &g->creq[2 * q], 0);
        const int from = GPUCOLL_MPIX_NET_PENDING == gcn_test(t, &g->creq[2 * q + 1], 0);
        if ((to || from) && first < 0) {
            first = q;
        }
    }
    pthread_mutex_unlock(&t->lock);
    return first;
}

/* a send: its header and bytes go out at once, in the pair's order */
static void gcn_send_step(gcs_t *t, gcs_msg_t *m)
{
    struct gcn *g = t->net;
    if (!m->pushed) {
        const unsigned seq = g->sseq[m->peer]++ & GCN_SEQ;
        m->nhdr[0] = m->bytes;
        m->nhdr[1] = (unsigned long long) (unsigned) m->tag;
        m->hdr = m->pushed = 1;
        gcn_post(t, 1, m->peer, m->nhdr, sizeof(m->nhdr), GCN_MSG | seq, &m->nreq[0]);
        if (m->bytes > 0) {
            gcn_post(t, 1, m->peer, m->buf, m->bytes, GCN_MSG | GCN_BYTES | seq, &m->nreq[1]);
        }
    }
    (void) gcn_test(t, &m->nreq[0], 0);
    (void) gcn_test(t, &m->nreq[1], 0);
    m->moved = NULL == m->nreq[1] ? m->bytes : 0;
    m->complete = NULL == m->nreq[0] && NULL == m->nreq[1];
}

/* the next header from src, once its receive is posted: the bytes' receive */
static void gcn_match_step(gcs_t *t, int src)
{
    struct gcn *g = t->net;
    gcs_msg_t *m;

    if (!g->held[src]) {
        if (NULL == g->hreq[src]) {
            gcn_post(t, 0, src, g->hin[src], sizeof(g->hin[src]),
                     GCN_MSG | (g->rseq[src] & GCN_SEQ), &g->hreq[src]);
        }
        if (0 != gcn_test(t, &g->hreq[src], 0) || t->broken) {
            return;
        }
        g->held[src] = 1;
    }
    m = gcs_match(t, src, (int) (unsigned) g->hin[src][1]);
    if (NULL == m) {
        return;   /* its receive is not posted yet */
    }
    m->hdr = 1;
    m->got = (size_t) g->hin[src][0];
    m->got_tag = (int) (unsigned) g->hin[src][1];
    if (m->got > m->bytes) {
        /* the whole message is received (the network matches lengths), its
         * first m->bytes kept */
        m->err = MPI_ERR_TRUNCATE;
        m->tmp = malloc(m->got);
        if (NULL == m->tmp) {
            fprintf(stderr, "gpucoll: rank %d: no memory for a truncated message of %zu bytes "
                    "from rank %d\n", t->rank, m->got, src);
            t->broken = 1;
            return;
        }
    }
    if (m->got > 0) {
        gcn_post(t, 0, src, NULL != m->tmp ? m->tmp : m->buf, m->got,
                 GCN_MSG | GCN_BYTES | (g->rseq[src] & GCN_SEQ), &m->nreq[1]);
    }
    ++g->rseq[src];
    g->held[src] = 0;
}

static void gcn_recv_step(gcs_t *t, gcs_msg_t *m)
{
    if (!m->hdr || m->arrived || GPUCOLL_MPIX_NET_PENDING == gcn_test(t, &m->nreq[1], 0)) {
        return;
    }
    if (NULL != m->tmp) {
        memcpy(m->buf, m->tmp, m->bytes);
        free(m->tmp);
        m->tmp = NULL;
    }
    m->moved = m->got;
    m->arrived = 1;   /* its caller completes it */
}

/* one pass over the posted messages (the transport's lock held) */
static void gcn_progress(gcs_t *t)
{
    (void) gcn_test(t, &(void *) { NULL }, 1);
    for (int r = 0; r < t->nranks && !t->broken; ++r) {
        if (r != t->rank) {
            gcn_match_step(t, r);
        }
    }
    for (gcs_msg_t *m = t->active; NULL != m && !t->broken; m = m->next) {
        if (m->send) {
            gcn_send_step(t, m);
        } else {
            gcn_recv_step(t, m);
        }
    }
}

static void gcn_recv_done(gcs_t *t, gcs_msg_t *m)
{
    (void) t;
    free(m->tmp);   /* a receive that ended without its bytes */
    m->tmp = NULL;
}

static void gcn_destroy(gcs_t *t)
{
    struct gcn *g = t->net;
    if (NULL == g) {
        return;
    }
    /* what a timeout left in flight goes before the endpoints */
    for (int q = 0; NULL != g->creq && q < 2 * t->nranks; ++q) {
        g->abi->net_cancel(g->net, &g->creq[q]);
    }
    for (int q = 0; NULL != g->hreq && q < t->nranks; ++q) {
        g->abi->net_cancel(g->net, &g->hreq[q]);
    }
    for (gcs_msg_t *m = t->active; NULL != m; m = m->next) {
        g->abi->net_cancel(g->net, &m->nreq[0]);
        g->abi->net_cancel(g->net, &m->nreq[1]);
    }
    if (NULL != g->net) {
        g->abi->net_close(g->net);
    }
    free(g->held);
    free(g->hreq);
    free(g->hin);
    free(g->rseq);
    free(g->sseq);
    free(g->creq);
    free(g->land);
    free(g->mine);
    free(g);
    t->net = NULL;
}

static const gcs_wire_t gcs_net_wire = {
    .publish = gcn_publish,
    .missing = gcn_missing,
    .progress = gcn_progress,
    .recv_done = gcn_recv_done,
    .destroy = gcn_destroy,
    .by_reference = 0,
};

int gcs_net_create(MPI_Comm comm, double timeout_s, const gpucoll_mpix_abi_t *abi,
                   gcs_t **out)
{
    struct gcn *g = NULL;
    gcs_t *t = NULL;
    void *net = NULL;
    unsigned long long slot, least = 0;
    int ret, ok, all_ok = 0, len = 0;
    size_t n = 0;

    *out = NULL;
    if (NULL == abi || abi->version < 5) {
        return MPI_SUCCESS;   /* the same coll/gpu on every rank */
    }
    ret = abi->net_open(comm, &net);
    if (MPI_SUCCESS != ret || NULL == net) {
        return ret;
    }
    t = calloc(1, sizeof(*t));
    g = calloc(1, sizeof(*g));
    ok = NULL != t && NULL != g;
    if (ok) {
        MPI_Comm_rank(comm, &t->rank);
        MPI_Comm_size(comm, &t->nranks);
        n = (size_t) t->nranks;
    }
    /* the same piece sizes on every rank: the least asked for */
    slot = ok ? gcs_slot_size(t->nranks) : ~0ull;
    ret = MPI_Allreduce(&slot, &least, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm);
    if (ok && MPI_SUCCESS == ret) {
        t->slot_bytes = (size_t) least;
        g->mine = malloc(t->slot_bytes);
        g->land = malloc(n * t->slot_bytes);
        g->creq = calloc(2 * n, sizeof(*g->creq));
        g->sseq = calloc(n, sizeof(*g->sseq));
        g->rseq = calloc(n, sizeof(*g->rseq));
        g->hin = calloc(n, sizeof(*g->hin));
        g->hreq = calloc(n, sizeof(*g->hreq));
        g->held = calloc(n, sizeof(*g->held));
        t->slots = calloc(n, sizeof(*t->slots));
        t->rcur = calloc(n, sizeof(*t->rcur));
        t->scur = calloc(n, sizeof(*t->scur));
        t->ref_sent = calloc(n, sizeof(*t->ref_sent));
        ok = NULL != g->mine && NULL != g->land && NULL != g->creq && NULL != g->sseq &&
             NULL != g->rseq && NULL != g->hin && NULL != g->hreq && NULL != g->held &&
             NULL != t->slots && NULL != t->rcur && NULL != t->scur && NULL != t->ref_sent;
    }
    if (MPI_SUCCESS == ret) {
        ret = MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, comm);
    }
    if (NULL == t || NULL == g) {
        free(g);
        free(t);
        abi->net_close(net);
        return MPI_SUCCESS == ret ? MPI_SUCCESS : ret;
    }
    g->abi = abi;
    g->net = net;
    t->net = g;
    t->wire = &gcs_net_wire;
    pthread_mutex_init(&t->lock, NULL);
    if (MPI_SUCCESS != ret || !all_ok) {
        if (!ok) {
            fprintf(stderr, "gpucoll: rank %d: no memory for the network transport of a stream "
                    "communicator\n", t->rank);
        }
        gcs_destroy(t);
        return ret;
    }
    for (int r = 0; r < t->nranks; ++r) {
        t->slots[r] = r == t->rank ? g->mine : g->land + (size_t) r * t->slot_bytes;
    }
    t->timeout_s = timeout_s > 0 ? timeout_s : 60.0;
    MPI_Comm_get_name(comm, t->name, &len);
    if (0 == len) {
        snprintf(t->name, sizeof(t->name), "a stream communicator of %d ranks", t->nranks);
    }
    *out = t;
    return MPI_SUCCESS;
}
