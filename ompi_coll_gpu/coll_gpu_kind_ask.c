/*
 * Memory kinds across nodes, the querier's side: the nodes and their
 * speakers, the rounds of queries a device call sends before it chooses
 * its path, and the status query that names a rank that has not posted a
 * call (design in coll_gpu_kind_net.h; the speaker's side is
 * coll_gpu_kind_net.c).
 */
#include "ompi_config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "coll_gpu.h"
#include "coll_gpu_kind_net.h"

#include "ompi/attribute/attribute.h"
#include "ompi/runtime/mpiruntime.h"
#include "ompi/constants.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/proc/proc.h"
#include "opal/runtime/opal_progress.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "util/gpu_clock.h"
#include "util/gpu_nodes.h"

/* The querier's view: nodes from Open MPI's locality (my host) and host
 * names (the others), split like the hierarchy's; each node's first rank
 * speaks for it; the queries are built once. */
static int gpu_knet_map(gpu_knet_t *k)
{
    ompi_communicator_t *comm = k->m->comm;
    const int n = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    uint64_t *host = malloc(sizeof(uint64_t) * (size_t) n);
    int ok = 0;

    k->node_of = malloc(sizeof(int) * (size_t) n);
    k->local = malloc(sizeof(int) * (size_t) n);
    if (NULL == host || NULL == k->node_of || NULL == k->local) {
        goto out;
    }
    for (int r = 0; r < n; ++r) {
        ompi_proc_t *p = ompi_comm_peer_lookup(comm, r);
        const char *name = NULL;
        if (r == me || (NULL != p && OPAL_PROC_ON_LOCAL_NODE(p->super.proc_flags))) {
            host[r] = 0;
            continue;
        }
        name = NULL != p ? opal_get_proc_hostname(&p->super) : NULL;
        /* no name: a node of its own, asked on its own */
        host[r] = NULL != name ? gpu_nodes_name_key(name) | 1 : ((uint64_t) r << 1) | 1;
    }
    k->nnodes = gpu_nodes_split(n, host, mca_coll_gpu_component.virtual_nodes, k->node_of);
    if (k->nnodes < 1) {
        goto out;
    }
    k->mynode = k->node_of[me];
    k->speaker = malloc(sizeof(int) * (size_t) k->nnodes);
    k->out = calloc((size_t) k->nnodes, sizeof(*k->out));
    k->in = calloc((size_t) k->nnodes, sizeof(*k->in));
    k->ireq = calloc(2 * (size_t) k->nnodes, sizeof(*k->ireq));
    k->sout = calloc((size_t) k->nnodes, sizeof(*k->sout));
    k->sin = calloc((size_t) k->nnodes, sizeof(*k->sin));
    k->sreq = calloc(2 * (size_t) k->nnodes, sizeof(*k->sreq));
    if (NULL == k->speaker || NULL == k->out || NULL == k->in || NULL == k->ireq ||
        NULL == k->sout || NULL == k->sin || NULL == k->sreq) {
        goto out;
    }
    for (int j = 0; j < k->nnodes; ++j) {
        k->speaker[j] = -1;
        k->out[j].key = mca_coll_gpu_comm_key(comm);
    }
    k->nlocal = 0;
    for (int r = 0; r < n; ++r) {
        const int j = k->node_of[r];
        const uint64_t nmem = k->out[j].head & 0xffff;
        if (j == k->mynode) {
            if (k->speaker[j] < 0) {
                k->speaker[j] = r;
            }
            if (r != me) {
                k->local[k->nlocal++] = r;
            }
            continue;
        }
        if (nmem == GPU_KNET_MEMBERS) {
            goto out;   /* a node this large: not served, see the caller */
        }
        if (k->speaker[j] < 0) {
            k->speaker[j] = r;
        }
        ++k->nremote;
        k->out[j].rank[nmem] = r;
        k->out[j].head = GPU_KNET_MAGIC | (nmem + 1);
    }
    ok = 1;
out:
    free(host);
    k->mapped = ok ? 1 : -1;
    return ok;
}

/* the node map made (at the first call that needs it) and usable */
static int gpu_knet_ready(gpu_knet_t *k)
{
    return NULL != k && (k->mapped > 0 || (0 == k->mapped && gpu_knet_map(k)));
}

int mca_coll_gpu_knet_local(mca_coll_gpu_module_t *m, const int **ranks)
{
    gpu_knet_t *k = m->knet;
    if (!gpu_knet_ready(k)) {
        return -1;
    }
    *ranks = k->local;
    return k->nlocal;
}

/* (Re)post the receive of node j's answer: also after an answer to an
 * earlier round, which is not ours. */
static int gpu_knet_rearm(gpu_knet_t *k, ompi_communicator_t *comm, int j, gpu_knet_reply_t *in,
                          ompi_request_t **req)
{
    return MCA_PML_CALL(irecv(in, sizeof(*in), MPI_BYTE, k->speaker[j], GPU_KNET_TAG_REPLY, comm,
                              req));
}

/* Node j's answer is due into *in (posted first, so it cannot be missed),
 * then the query *out goes to its speaker; reqs[0] the receive, reqs[1]
 * the send.  The call's round and the status round each keep their own. */
static int gpu_knet_query_node(gpu_knet_t *k, ompi_communicator_t *comm, int j,
                               gpu_knet_query_t *out, gpu_knet_reply_t *in,
                               ompi_request_t **reqs)
{
    return OMPI_SUCCESS == gpu_knet_rearm(k, comm, j, in, &reqs[0]) &&
           OMPI_SUCCESS == MCA_PML_CALL(isend(out, (int) gpu_knet_qbytes(out), MPI_BYTE,
                                              k->speaker[j], GPU_KNET_TAG_QUERY,
                                              MCA_PML_BASE_SEND_STANDARD, comm, &reqs[1]));
}

/* One round of queries about a call: a query to every other node's speaker
 * (start), their answers read without waiting (test), what is still out
 * cancelled (end).  One round at a time per communicator: a blocking call
 * runs its own after the queued ones (coll_gpu_request.c) have left. */
gpu_status_t mca_coll_gpu_knet_round_start(mca_coll_gpu_module_t *m, uint64_t call, int *peer)
{
    gpu_knet_t *k = m->knet;

    if (!gpu_knet_ready(k)) {
        return GPU_ERR_UNSUPPORTED;
    }
    k->rcall = call;
    k->rleft = 0;
    k->rverdict = GPU_KNET_DEVICE;
    for (int j = 0; j < k->nnodes; ++j) {
        if (j == k->mynode) {
            continue;
        }
        k->out[j].call = call;
        if (!gpu_knet_query_node(k, m->comm, j, &k->out[j], &k->in[j], &k->ireq[2 * j])) {
            *peer = k->speaker[j];
            return GPU_ERR_NETWORK;
        }
        ++k->rleft;
    }
    return GPU_OK;
}

gpu_status_t mca_coll_gpu_knet_round_test(mca_coll_gpu_module_t *m, int *all_dev, int *peer)
{
    gpu_knet_t *k = m->knet;

    for (int j = 0; j < k->nnodes && k->rleft > 0; ++j) {
        ompi_request_t **rr = &k->ireq[2 * j];
        if (NULL == *rr || !REQUEST_COMPLETE(*rr)) {
            continue;
        }
        gpu_knet_release(rr, 0);
        if (k->in[j].key != k->out[j].key || k->in[j].call != k->rcall) {
            /* the answer to a query of an earlier call that gave up */
            (void) gpu_knet_rearm(k, m->comm, j, &k->in[j], rr);
            continue;
        }
        --k->rleft;
        if (GPU_KNET_ERROR == k->in[j].verdict) {
            *peer = k->speaker[j];
            return GPU_ERR_INVALID;
        }
        if (GPU_KNET_HOST == k->in[j].verdict) {
            k->rverdict = GPU_KNET_HOST;
        }
    }
    if (k->rleft > 0) {
        return GPU_INPROGRESS;
    }
    *all_dev = GPU_KNET_DEVICE == k->rverdict;
    return GPU_OK;
}

void mca_coll_gpu_knet_round_end(mca_coll_gpu_module_t *m, int *peer)
{
    gpu_knet_t *k = m->knet;

    /* what is still out: answers cancelled, queries let go; peer (non-NULL):
     * the first speaker that did not answer */
    for (int j = 0; j < k->nnodes; ++j) {
        if (NULL != k->ireq[2 * j]) {
            if (NULL != peer && *peer < 0) {
                *peer = k->speaker[j];
            }
            (void) ompi_request_cancel(k->ireq[2 * j]);
            gpu_knet_release(&k->ireq[2 * j], 1);
        }
        if (NULL != k->ireq[2 * j + 1]) {
            gpu_knet_release(&k->ireq[2 * j + 1], 1);
        }
    }
}

int mca_coll_gpu_knet_missing(mca_coll_gpu_module_t *m, uint64_t call, int peer)
{
    int missing = -1;
    while (GPU_INPROGRESS == mca_coll_gpu_knet_ask(m, call, 1.0, &missing)) {
        opal_progress();
    }
    return missing >= 0 ? missing : peer;
}

gpu_status_t mca_coll_gpu_knet_remote(mca_coll_gpu_module_t *m, uint64_t call, int *all_dev,
                                      int *peer)
{
    gpu_knet_t *k = m->knet;
    ompi_communicator_t *comm = m->comm;
    const double deadline = gpu_clock_now() + mca_coll_gpu_timeout_s();
    gpu_status_t st = mca_coll_gpu_knet_round_start(m, call, peer);
    int dev = 0;

    if (GPU_ERR_UNSUPPORTED == st) {
        return st;
    }
    while (GPU_OK == st) {
        st = mca_coll_gpu_knet_round_test(m, &dev, peer);
        if (GPU_INPROGRESS != st) {
            break;
        }
        opal_progress();
        st = gpu_clock_now() > deadline ? GPU_ERR_TIMEOUT : GPU_OK;
    }
    mca_coll_gpu_knet_round_end(m, GPU_ERR_TIMEOUT == st ? peer : NULL);
    if (GPU_ERR_TIMEOUT == st) {
        /* name the rank that has not come, not just its node's speaker */
        *peer = mca_coll_gpu_knet_missing(m, call, *peer);
    }
    if (GPU_OK == st && dev && k->nremote > 0 && k->speaker[k->mynode] == ompi_comm_rank(comm)) {
        /* every rank is device, so every remote rank asks me (my node's
         * speaker) for this call: answer them all before the hierarchy,
         * whose waits do not progress MPI */
        while ((k->acall < call || (k->acall == call && k->acount < k->nremote)) &&
               GPU_OK == st) {
            opal_progress();
            if (gpu_clock_now() > deadline) {
                st = GPU_ERR_TIMEOUT;
                *peer = -1;
            }
        }
    }
    if (GPU_OK == st) {
        *all_dev = dev;
    }
    opal_output_verbose(30, mca_coll_gpu_component.output,
                        "coll/gpu: %s: rank %d, call %llu: the other %d node(s) say %s (%s)",
                        comm->c_name, ompi_comm_rank(comm), (unsigned long long) call,
                        k->nnodes - 1, dev ? "all device" : "host", gpu_status_string(st));
    return st;
}

gpu_status_t mca_coll_gpu_knet_ask(mca_coll_gpu_module_t *m, uint64_t call, double limit_s,
                                   int *missing)
{
    gpu_knet_t *k = m->knet;
    ompi_communicator_t *comm = m->comm;
    int left = 0;

    if (!k || !k->asking) {
        *missing = mca_coll_gpu_kind_missing(m, call);
        if (*missing >= 0 || !gpu_knet_ready(k)) {
            return GPU_OK;
        }
        k->asking = 1;
        k->ask_call = call;
        k->ask_missing = -1;
        k->ask_until = gpu_clock_now() + limit_s;
        for (int j = 0; j < k->nnodes; ++j) {
            if (j == k->mynode) {
                continue;
            }
            k->sout[j] = k->out[j];
            k->sout[j].head |= GPU_KNET_STATUS_Q;
            k->sout[j].call = call;
            if (!gpu_knet_query_node(k, comm, j, &k->sout[j], &k->sin[j], &k->sreq[2 * j])) {
                break;
            }
        }
    }
    if (k->ask_call != call) {
        *missing = -1;   /* another call's round is on: no name this time */
        return GPU_OK;
    }
    for (int j = 0; j < k->nnodes; ++j) {
        ompi_request_t **rr = &k->sreq[2 * j];
        if (NULL == *rr) {
            continue;
        }
        if (!REQUEST_COMPLETE(*rr)) {
            ++left;
            continue;
        }
        gpu_knet_release(rr, 0);
        if (k->sin[j].key != k->sout[j].key || k->sin[j].call != call ||
            GPU_KNET_STATUS != k->sin[j].verdict) {
            /* an answer of another round: ours is still due */
            (void) gpu_knet_rearm(k, comm, j, &k->sin[j], rr);
            ++left;
        } else if (k->sin[j].missing >= 0 && k->ask_missing < 0) {
            k->ask_missing = (int) k->sin[j].missing;
        }
    }
    if (left > 0 && k->ask_missing < 0 && gpu_clock_now() < k->ask_until) {
        return GPU_INPROGRESS;
    }
    for (int j = 0; j < k->nnodes; ++j) {
        if (NULL != k->sreq[2 * j]) {
            (void) ompi_request_cancel(k->sreq[2 * j]);   /* a posted receive: done at once */
            if (REQUEST_COMPLETE(k->sreq[2 * j])) {
                gpu_knet_release(&k->sreq[2 * j], 0);
            }
        }
        if (NULL != k->sreq[2 * j + 1]) {
            gpu_knet_release(&k->sreq[2 * j + 1], 0);   /* a small send: finishes on its own */
        }
    }
    k->asking = 0;
    *missing = k->ask_missing;
    return GPU_OK;
}
