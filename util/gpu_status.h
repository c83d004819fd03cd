/*
 * One status type for every layer below the MPI component, and the single
 * log sink they report through.  The component installs a sink that goes
 * to opal_output; unit tests keep the default (stderr).
 */
#ifndef GPU_STATUS_H
#define GPU_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    GPU_INPROGRESS = 1,       /* started, not finished: ask again */
    GPU_OK = 0,
    GPU_ERR_CUDA = -1,        /* a CUDA call failed; logged with its string */
    GPU_ERR_NO_MEMORY = -2,
    GPU_ERR_UNSUPPORTED = -3, /* not an error: caller falls back */
    GPU_ERR_TIMEOUT = -4,     /* a peer did not arrive in time */
    GPU_ERR_INVALID = -5,
    GPU_ERR_BOOTSTRAP = -6,   /* host-side exchange failed */
    GPU_ERR_NETWORK = -7      /* a network peer or endpoint failed; logged with the peer */
} gpu_status_t;

const char *gpu_status_string(gpu_status_t st);

typedef void (*gpu_log_sink_fn_t)(int level, const char *msg);

/* level 0 = error, 1 = warning/info for users, 10+ = debug */
void gpu_log_set_sink(gpu_log_sink_fn_t sink, int verbosity);
int gpu_log_enabled(int level);
void gpu_log(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define GPU_LOG(level, ...) \
    do { if (gpu_log_enabled(level)) gpu_log((level), __FILE__, __LINE__, __VA_ARGS__); } while (0)
#define GPU_ERROR(...) gpu_log(0, __FILE__, __LINE__, __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif /* GPU_STATUS_H */
