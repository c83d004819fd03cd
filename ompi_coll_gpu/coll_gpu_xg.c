/*
 * Host exchanges of the component, and the errors users see when one fails.
 *
 * The engine's bootstrap steps and host-paced rounds need an allgather of a
 * few bytes.  The previous module's allgather cannot serve them: it blocks
 * (a nonblocking start must not: a blocking exchange on communicator A
 * while the peer blocks on B hangs a legal program), it waits forever for a
 * rank that never comes, and it cannot say which rank that is.  So the
 * exchange is built on the communicator's point-to-point messages on a tag
 * of our own: started without waiting, tested without calling progress (the
 * test runs inside our own opal_progress callback), bounded by
 * coll_gpu_timeout, and it names the first rank whose message is missing.
 *
 * Messages between two ranks on one tag match in order, so every rank must
 * start its exchanges on a communicator in the same order: the setup steps
 * and host-paced rounds are the only users, and a communicator runs its
 * requests one at a time, in the order they were started.
 */
#include "ompi_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_gpu.h"

#include "ompi/constants.h"
#include "ompi/errhandler/errcode.h"
#include "ompi/mca/pml/pml.h"
#include "opal/runtime/opal_progress.h"

#include "util/gpu_clock.h"

/* Just above Open MPI's collective tags (-10 and down): no user tag can be
 * negative, and pml/ucx, which keeps 24 bits of a tag, maps it above any
 * user tag it allows (MPI_TAG_UB 2^23 - 1) */
#define MCA_COLL_GPU_TAG (-9)

struct mca_coll_gpu_xg_t {
    mca_coll_gpu_module_t *m;
    int n;
    double t0;
    ompi_request_t **reqs;          /* n receives, then n sends */
    char sbuf[];
};

int mca_coll_gpu_xg_start(mca_coll_gpu_module_t *m, const void *sbuf, void *rbuf, size_t bytes,
                          mca_coll_gpu_xg_t **out)
{
    const int n = ompi_comm_size(m->comm), me = ompi_comm_rank(m->comm);
    mca_coll_gpu_xg_t *x = malloc(sizeof(*x) + bytes);
    int ret = OMPI_SUCCESS;

    if (NULL == x || NULL == (x->reqs = calloc(2 * (size_t) n, sizeof(ompi_request_t *)))) {
        free(x);
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    x->m = m;
    x->n = n;
    x->t0 = gpu_clock_now();
    memcpy(x->sbuf, sbuf, bytes);
    memcpy((char *) rbuf + (size_t) me * bytes, sbuf, bytes);
    for (int q = 0; q < n && OMPI_SUCCESS == ret; ++q) {
        if (q != me) {
            ret = MCA_PML_CALL(irecv((char *) rbuf + (size_t) q * bytes, bytes, MPI_BYTE, q,
                                     MCA_COLL_GPU_TAG, m->comm, &x->reqs[q]));
        }
    }
    for (int q = 0; q < n && OMPI_SUCCESS == ret; ++q) {
        if (q != me) {
            ret = MCA_PML_CALL(isend(x->sbuf, bytes, MPI_BYTE, q, MCA_COLL_GPU_TAG,
                                     MCA_PML_BASE_SEND_STANDARD, m->comm, &x->reqs[n + q]));
        }
    }
    if (OMPI_SUCCESS != ret) {
        /* what was posted may still complete into rbuf: the communicator
         * is broken from here on, and x stays allocated for the sends */
        m->fail_peer = -1;
        return ret;
    }
    *out = x;
    return OMPI_SUCCESS;
}

gpu_status_t mca_coll_gpu_xg_test(mca_coll_gpu_xg_t *x)
{
    int missing = -1, failed = 0;

    for (int i = 0; i < 2 * x->n; ++i) {
        if (NULL != x->reqs[i] && !REQUEST_COMPLETE(x->reqs[i]) && missing < 0) {
            missing = i % x->n;
        }
    }
    if (missing >= 0) {
        if (gpu_clock_now() - x->t0 <= mca_coll_gpu_timeout_s()) {
            return GPU_INPROGRESS;
        }
        /* receives not matched yet are taken back, so that the caller may
         * free its buffer; the sends keep x (a leak on a broken path) */
        for (int q = 0; q < x->n; ++q) {
            if (NULL != x->reqs[q] && !REQUEST_COMPLETE(x->reqs[q])) {
                (void) ompi_request_cancel(x->reqs[q]);
            }
        }
        x->m->fail_peer = missing;
        x->m->fail_timeout = 1;
        return GPU_ERR_TIMEOUT;
    }
    for (int i = 0; i < 2 * x->n; ++i) {
        if (NULL != x->reqs[i]) {
            failed |= MPI_SUCCESS != x->reqs[i]->req_status.MPI_ERROR;
            (void) ompi_request_free(&x->reqs[i]);
        }
    }
    free(x->reqs);
    free(x);
    return failed ? GPU_ERR_BOOTSTRAP : GPU_OK;
}

/* ---- the engine's bootstrap table ---------------------------------------- */

static gpu_status_t mca_coll_gpu_boot_iallgather(void *ctx, const void *sbuf, void *rbuf,
                                                 size_t bytes, void **handle)
{
    mca_coll_gpu_xg_t *x;
    if (OMPI_SUCCESS != mca_coll_gpu_xg_start(ctx, sbuf, rbuf, bytes, &x)) {
        return GPU_ERR_BOOTSTRAP;
    }
    *handle = x;
    return GPU_OK;
}

static gpu_status_t mca_coll_gpu_boot_test(void *ctx, void *handle)
{
    (void) ctx;
    return mca_coll_gpu_xg_test(handle);
}

static gpu_status_t mca_coll_gpu_boot_allgather(void *ctx, const void *sbuf, void *rbuf,
                                                size_t bytes)
{
    mca_coll_gpu_xg_t *x;
    gpu_status_t st;

    if (OMPI_SUCCESS != mca_coll_gpu_xg_start(ctx, sbuf, rbuf, bytes, &x)) {
        return GPU_ERR_BOOTSTRAP;
    }
    while (GPU_INPROGRESS == (st = mca_coll_gpu_xg_test(x))) {
        opal_progress();
    }
    return st;
}

static void mca_coll_gpu_boot_progress(void *ctx)
{
    (void) ctx;
    opal_progress();
}

const gpu_boot_ops_t mca_coll_gpu_boot_ops = {
    .allgather = mca_coll_gpu_boot_allgather,
    .iallgather = mca_coll_gpu_boot_iallgather,
    .test = mca_coll_gpu_boot_test,
    .progress = mca_coll_gpu_boot_progress,
};

/* ---- errors users see ------------------------------------------------------ */

/*
 * A failed device collective returns an error code of the class
 * "coll/gpu" whose MPI_Error_string says what happened: the collective,
 * the communicator, the rank waited for and what to change.  Each failure
 * gets its own code (failures break the communicator, so they are few).
 */
int mca_coll_gpu_error(const char *comm, const char *what, gpu_status_t st, int peer)
{
    /* two threads failing at once may make two classes: harmless */
    static int errclass = -1;
    char text[MPI_MAX_ERROR_STRING];
    int code;

    if (GPU_OK == st) {
        return MPI_SUCCESS;
    }
    if (GPU_ERR_TIMEOUT == st && peer >= 0) {
        snprintf(text, sizeof(text), "coll/gpu: %s on %s timed out after %g s waiting for rank %d"
                 " (raise --mca coll_gpu_timeout, or check that rank %d calls the same "
                 "collective)", what, comm, mca_coll_gpu_timeout_s(), peer, peer);
    } else if (GPU_ERR_TIMEOUT == st) {
        snprintf(text, sizeof(text), "coll/gpu: %s on %s timed out after %g s (raise --mca "
                 "coll_gpu_timeout)", what, comm, mca_coll_gpu_timeout_s());
    } else if (GPU_ERR_INVALID == st) {
        snprintf(text, sizeof(text), "coll/gpu: %s on %s refused: the communicator's device "
                 "collectives stopped at an earlier failure (its error names the cause)", what,
                 comm);
    } else {
        snprintf(text, sizeof(text), "coll/gpu: %s on %s failed: %s%s", what, comm,
                 gpu_status_string(st), GPU_ERR_CUDA == st ? " (the CUDA error is logged above;"
                 " the communicator's device collectives are off from here on)" : "");
    }
    if (errclass < 0) {
        errclass = ompi_mpi_errclass_add();
    }
    if (errclass < 0 || (code = ompi_mpi_errcode_add(errclass)) < 0 ||
        OMPI_SUCCESS != ompi_mpi_errnum_add_string(code, text, (int) strlen(text) + 1)) {
        return mca_coll_gpu_status_to_mpi(st);
    }
    return code;
}
