/*
 * libgpucoll's host transport: a message by reference that its receiver
 * cannot map goes through host memory instead (design in
 * gpucoll_mpix_shm.h at gcs_bounce_ask).
 *
 * Why not close the receiver's old mapping and map again: CUDA refuses a
 * handle whose memory this process still maps under an older handle (4x
 * H100: an allocation freed and made again at the same address, of another
 * size, while this rank's mapping of the old one waited to be closed:
 * "resource already mapped"), and closing a mapping waits for the device's
 * work, which may hold the receive's own stream wait for this message: the
 * close would never return.  The sender can always read its own memory.
 *
 * How: per ordered pair, one bounce at a time.  The receiver names the
 * send (its sequence number) in breq; the sender's progress, seeing its
 * own send named, copies the message into the pair's bounce area a half at
 * a time, as the receiver frees halves; the receiver's progress copies
 * each half out into its buffer.  The pair counts halves put in (bfilled,
 * the sender's) and taken out (bdrained, the receiver's) over all its
 * bounces, never back to zero: a sender's pass that still looks at a
 * finished bounce then finds nothing to do, where counters reset for the
 * next one gave it room to copy the old message again into the new one's
 * receive (the stand-in, 100 messages in flight to one peer).  Once all is
 * in, the receive completes as any by reference does (gcs_recv_done frees
 * the area and acknowledges, which completes the send).  Nothing waits:
 * each step moves what it can.
 */
#include <stdio.h>

#include "mpix/gpucoll_mpix_shm_int.h"

void gcs_set_bounce(gcs_t *t, gcs_bounce_fn_t out, gcs_bounce_fn_t in)
{
    pthread_mutex_lock(&t->lock);
    t->bounce_out = out;
    t->bounce_in = in;
    pthread_mutex_unlock(&t->lock);
}

int gcs_bounce_ask(gcs_t *t, gcs_msg_t *m)
{
    gcs_ring_ctl_t *rc = gcs_ring(t, m->peer, t->rank);

    if (!m->remote || NULL == t->bounce_in ||
        0 != __atomic_load_n(&rc->breq, __ATOMIC_ACQUIRE)) {
        return 0;
    }
    pthread_mutex_lock(&t->lock);
    m->bmoved = 0;
    m->bounced = 0;
    m->bouncing = 1;
    __atomic_store_n(&rc->breq, m->seq, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&t->lock);
    return 1;
}

void gcs_bounce_send_step(gcs_t *t, gcs_msg_t *m)
{
    gcs_ring_ctl_t *rc = gcs_ring(t, t->rank, m->peer);
    uint64_t filled;

    if (!m->bouncing) {
        if (__atomic_load_n(&rc->breq, __ATOMIC_ACQUIRE) != m->seq) {
            return;
        }
        m->bouncing = 1;
        m->bmoved = 0;
    }
    filled = rc->bfilled;
    /* a half is free once what went into it two halves ago is out */
    while (m->bmoved < m->bytes &&
           filled - __atomic_load_n(&rc->bdrained, __ATOMIC_ACQUIRE) < 2) {
        const size_t left = m->bytes - m->bmoved;
        const size_t n = left < GCS_BOUNCE_HALF ? left : GCS_BOUNCE_HALF;
        char *half = rc->bounce + (filled % 2) * GCS_BOUNCE_HALF;
        const int ret = NULL != t->bounce_out ? t->bounce_out(m, half, m->bmoved, n)
                                              : MPI_ERR_OTHER;
        if (MPI_SUCCESS != ret) {
            /* its wait says so; the receiver's runs into the timeout naming this rank */
            fprintf(stderr, "libgpucoll on %s: rank %d could not copy a message for rank %d "
                    "into host memory (the receiver cannot map it)\n", t->name, t->rank,
                    m->peer);
            m->err = ret;
            m->complete = 1;
            return;
        }
        m->bmoved += n;
        __atomic_store_n(&rc->bfilled, ++filled, __ATOMIC_RELEASE);
    }
}

void gcs_bounce_recv_step(gcs_t *t, gcs_msg_t *m)
{
    gcs_ring_ctl_t *rc = gcs_ring(t, m->peer, t->rank);
    const uint64_t filled = __atomic_load_n(&rc->bfilled, __ATOMIC_ACQUIRE);
    uint64_t drained = rc->bdrained;

    while (m->bmoved < m->got && drained < filled) {
        const size_t left = m->got - m->bmoved;
        const size_t n = left < GCS_BOUNCE_HALF ? left : GCS_BOUNCE_HALF;
        char *half = rc->bounce + (drained % 2) * GCS_BOUNCE_HALF;
        /* a truncated receive takes what fits and lets the rest go by */
        const size_t room = m->bmoved < m->bytes ? m->bytes - m->bmoved : 0;
        if (room > 0) {
            const int ret = t->bounce_in(m, half, m->bmoved, n < room ? n : room);
            if (MPI_SUCCESS != ret) {
                m->err = ret;
                m->bounced = 1;
                return;
            }
        }
        m->bmoved += n;
        __atomic_store_n(&rc->bdrained, ++drained, __ATOMIC_RELEASE);
    }
    m->bounced = m->bmoved == m->got;
}
