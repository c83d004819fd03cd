#include "util/gpu_status.h"

#include <stdarg.h>
#include <stdio.h>

static gpu_log_sink_fn_t gpu_log_sink = NULL;
static int gpu_log_verbosity = 0;

const char *gpu_status_string(gpu_status_t st)
{
    switch (st) {
    case GPU_OK: return "success";
    case GPU_INPROGRESS: return "in progress";
    case GPU_ERR_CUDA: return "CUDA error";
    case GPU_ERR_NO_MEMORY: return "out of memory";
    case GPU_ERR_UNSUPPORTED: return "not supported";
    case GPU_ERR_TIMEOUT: return "timed out waiting for a peer";
    case GPU_ERR_INVALID: return "invalid argument";
    case GPU_ERR_BOOTSTRAP: return "bootstrap exchange failed";
    case GPU_ERR_NETWORK: return "network peer failed";
    }
    return "unknown status";
}

void gpu_log_set_sink(gpu_log_sink_fn_t sink, int verbosity)
{
    gpu_log_sink = sink;
    gpu_log_verbosity = verbosity;
}

int gpu_log_enabled(int level)
{
    return level <= gpu_log_verbosity;
}

void gpu_log(int level, const char *file, int line, const char *fmt, ...)
{
    char msg[1024];
    int n;
    va_list ap;

    n = snprintf(msg, sizeof(msg), "%s:%d: ", file, line);
    if (n < 0 || (size_t) n >= sizeof(msg)) {
        n = 0;
    }
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof(msg) - (size_t) n, fmt, ap);
    va_end(ap);

    if (NULL != gpu_log_sink) {
        gpu_log_sink(level, msg);
    } else {
        fprintf(stderr, "coll/gpu: %s\n", msg);
    }
}
