/*
 * Observability of device collectives: an NVTX range around every call
 * that reaches the engine (NVTX 3 is header-only and does nothing unless a
 * tool such as nsys injects itself, so it costs nothing when unused), and
 * an optional per-collective timing record, one JSON object per line, in
 * the spirit of NCCL's profiler output (coll_gpu_timing_file).  Times are
 * microseconds from entering the engine: prep_us until the kernel launch
 * call, submit_us until it returned, done_us until the result was in
 * place (nonblocking: until progress saw it complete).
 */
#include "ompi_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coll_gpu.h"
#include "util/gpu_clock.h"

#include "opal/util/show_help.h"
#include "ompi/communicator/communicator.h"

#if GPUCOLL_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

static FILE *mca_coll_gpu_timing;
static int mca_coll_gpu_timing_failed;

/* NVTX 3 hands ranges to a tool only when NVTX_INJECTION64_PATH names one
 * (nsys sets it); without one a range's label is formatted for nothing,
 * about 0.1 us a call */
static int mca_coll_gpu_trace_nvtx(void)
{
    static int tool = -1;
    if (tool < 0) {
        const char *path = getenv("NVTX_INJECTION64_PATH");
        tool = NULL != path && '\0' != path[0];
    }
    return GPUCOLL_HAVE_NVTX && mca_coll_gpu_component.nvtx && tool;
}

int mca_coll_gpu_trace_on(void)
{
    const char *prefix = mca_coll_gpu_component.timing_file;
    return mca_coll_gpu_trace_nvtx() || (NULL != prefix && '\0' != prefix[0]);
}

void mca_coll_gpu_trace_begin(mca_coll_gpu_trace_t *t, const char *what, size_t bytes,
                              const char *algo)
{
    t->t0 = gpu_clock_now();
    t->bytes = bytes;
    t->what = what;
    t->algo = algo;
    t->pushed = 0;
#if GPUCOLL_HAVE_NVTX
    if (mca_coll_gpu_trace_nvtx()) {
        char label[96];
        snprintf(label, sizeof(label), "coll/gpu %s %zu B %s", what, bytes, algo);
        nvtxRangePushA(label);
        t->pushed = 1;
    }
#endif
}

static FILE *mca_coll_gpu_timing_open(void)
{
    const char *prefix = mca_coll_gpu_component.timing_file;
    char path[4096];

    if (NULL != mca_coll_gpu_timing || mca_coll_gpu_timing_failed || NULL == prefix ||
        '\0' == prefix[0]) {
        return mca_coll_gpu_timing;
    }
    snprintf(path, sizeof(path), "%s.%d.jsonl", prefix, ompi_comm_rank(&ompi_mpi_comm_world.comm));
    mca_coll_gpu_timing = fopen(path, "w");
    if (NULL == mca_coll_gpu_timing) {
        mca_coll_gpu_timing_failed = 1;
        mca_coll_gpu_show_help("timing-file", path, strerror(errno));
    }
    return mca_coll_gpu_timing;
}

void mca_coll_gpu_trace_end(const mca_coll_gpu_trace_t *t, const char *comm_name, int blocking,
                            double launch, double submitted, int status)
{
    FILE *f;
    const double done = gpu_clock_now();

#if GPUCOLL_HAVE_NVTX
    if (t->pushed && blocking) {
        nvtxRangePop();
    }
#endif
    f = mca_coll_gpu_timing_open();
    if (NULL == f) {
        return;
    }
    fprintf(f, "{\"comm\":\"%s\",\"coll\":\"%s\",\"algo\":\"%s\",\"bytes\":%zu,\"blocking\":%d,"
               "\"start_s\":%.9f,\"prep_us\":%.3f,\"submit_us\":%.3f,\"done_us\":%.3f,"
               "\"status\":%d}\n",
            comm_name, t->what, t->algo, t->bytes, blocking, t->t0,
            (launch > t->t0 ? launch - t->t0 : 0.0) * 1e6,
            (submitted > t->t0 ? submitted - t->t0 : 0.0) * 1e6, (done - t->t0) * 1e6, status);
}

/* A nonblocking call's NVTX range covers its start only. */
void mca_coll_gpu_trace_started(const mca_coll_gpu_trace_t *t)
{
#if GPUCOLL_HAVE_NVTX
    if (t->pushed) {
        nvtxRangePop();
    }
#else
    (void) t;
#endif
}

void mca_coll_gpu_trace_fini(void)
{
    if (NULL != mca_coll_gpu_timing) {
        fclose(mca_coll_gpu_timing);
        mca_coll_gpu_timing = NULL;
    }
}
