/*
 * The conformance test's framework: start-up and options, buffers through
 * the CUDA driver API (dlopen, so that the test links no CUDA library and
 * runs on machines without one), the watchdog, and the case tally.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "conform.h"

cf_env_t cf;

/* ---- the CUDA driver, as far as the test needs it ---- */

typedef unsigned long long cf_dptr_t;
static struct {
    void *lib;
    int (*Init)(unsigned);
    int (*DeviceGetCount)(int *);
    int (*DeviceGet)(int *, int);
    int (*DevicePrimaryCtxRetain)(void **, int);
    int (*CtxSetCurrent)(void *);
    int (*MemAlloc)(cf_dptr_t *, size_t);
    int (*MemFree)(cf_dptr_t);
    int (*Memcpy)(cf_dptr_t, cf_dptr_t, size_t);
    int (*MemsetD8)(cf_dptr_t, unsigned char, size_t);
    int (*CtxSynchronize)(void);
} cu;

static const char *mem_opt = "device";
static const char *skip_opt;
static int mem_fallback;    /* --mem asked for device memory, none to be had */

static void die(const char *what, int rc)
{
    fprintf(stderr, "conform: rank %d: %s failed (CUDA error %d)\n", cf.rank, what, rc);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

/* 1 when the driver is there with a device and every entry point we use */
static int driver_open(void)
{
    int n = 0;
    cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib) {
        return 0;
    }
#define SYM(f, name) (*(void **) &cu.f = dlsym(cu.lib, name)) != NULL
    if (!(SYM(Init, "cuInit") && SYM(DeviceGetCount, "cuDeviceGetCount") &&
          SYM(DeviceGet, "cuDeviceGet") && SYM(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
          SYM(CtxSetCurrent, "cuCtxSetCurrent") && SYM(MemAlloc, "cuMemAlloc_v2") &&
          SYM(MemFree, "cuMemFree_v2") && SYM(Memcpy, "cuMemcpy") &&
          SYM(MemsetD8, "cuMemsetD8_v2") && SYM(CtxSynchronize, "cuCtxSynchronize"))) {
        return 0;
    }
#undef SYM
    if (cu.Init(0) != 0 || cu.DeviceGetCount(&n) != 0 || n < 1) {
        return 0;
    }
    return n;
}

/* the device of local rank % device count, its primary context current */
static void driver_bind(int ndev)
{
    MPI_Comm node;
    int local, dev, rc;
    void *ctx;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, cf.rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_free(&node);
    if ((rc = cu.DeviceGet(&dev, local % ndev)) != 0) die("cuDeviceGet", rc);
    if ((rc = cu.DevicePrimaryCtxRetain(&ctx, dev)) != 0) die("cuDevicePrimaryCtxRetain", rc);
    if ((rc = cu.CtxSetCurrent(ctx)) != 0) die("cuCtxSetCurrent", rc);
}

static void memory_init(void)
{
    int ndev = 0, ok, all;
    int want = strcmp(mem_opt, "host") != 0;
    if (want) {
        ndev = driver_open();
    }
    ok = !want || ndev > 0;
    /* every rank alike: a world where some ranks lack the driver runs on host */
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        mem_fallback = 1;
        if (cf.rank == 0) {
            printf("conform: no CUDA driver: host buffers only\n");
            fflush(stdout);
        }
        return;
    }
    if (!want) {
        return;
    }
    driver_bind(ndev);
    /* the stand-in of make check lacks the newer entry points */
    cf.have_gpu = dlsym(cu.lib, "cuGetProcAddress_v2") != NULL;
    cf.device = strcmp(mem_opt, "mixed") != 0 || cf.rank % 2 == 0;
}

const char *cf_mem_name(void)
{
    return mem_fallback ? "host" : mem_opt;
}

void *cf_alloc(size_t bytes)
{
    cf_dptr_t d;
    int rc;
    void *p;
    if (bytes == 0) {
        return NULL;
    }
    if (!cf.device) {
        if (!(p = malloc(bytes))) {
            fprintf(stderr, "conform: rank %d: malloc(%zu) failed\n", cf.rank, bytes);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        return p;
    }
    if ((rc = cu.MemAlloc(&d, bytes)) != 0) die("cuMemAlloc_v2", rc);
    return (void *) (uintptr_t) d;
}

void cf_free(void *p)
{
    int rc;
    if (!p) {
        return;
    }
    if (!cf.device) {
        free(p);
    } else if ((rc = cu.MemFree((cf_dptr_t) (uintptr_t) p)) != 0) {
        die("cuMemFree_v2", rc);
    }
}

/* cuMemcpy takes any pair of addresses (unified addressing); the sync
 * makes the data visible to whatever MPI does next */
static void copy(void *dst, const void *src, size_t bytes)
{
    int rc;
    if (bytes == 0) {
        return;
    }
    if (!cf.device) {
        memcpy(dst, src, bytes);
        return;
    }
    if ((rc = cu.Memcpy((cf_dptr_t) (uintptr_t) dst, (cf_dptr_t) (uintptr_t) src, bytes)) != 0)
        die("cuMemcpy", rc);
    if ((rc = cu.CtxSynchronize()) != 0) die("cuCtxSynchronize", rc);
}

void cf_put(void *dst, const void *host_src, size_t bytes)
{
    copy(dst, host_src, bytes);
}

void cf_get(void *host_dst, const void *src, size_t bytes)
{
    copy(host_dst, src, bytes);
}

void cf_poison(void *dst, size_t bytes)
{
    int rc;
    if (bytes == 0) {
        return;
    }
    if (!cf.device) {
        memset(dst, CF_POISON, bytes);
        return;
    }
    if ((rc = cu.MemsetD8((cf_dptr_t) (uintptr_t) dst, CF_POISON, bytes)) != 0) die("cuMemsetD8_v2", rc);
    if ((rc = cu.CtxSynchronize()) != 0) die("cuCtxSynchronize", rc);
}

/* ---- cases, the watchdog and crash reports ---- */

static char case_name[256] = "(before the first case)";
static char hang_msg[400], crash_msg[400];
static size_t hang_len, crash_len;
static int case_failed, case_skipped, case_lines, npass, nfail, nskip, skip_said;
static struct sigaction prev_act[32];
static const int crash_sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };

/* only write() and _exit(): a hang may be anywhere, MPI's locks held */
static void on_alarm(int sig)
{
    (void) sig;
    if (write(2, hang_msg, hang_len) < 0) {
        /* nothing left to tell it with */
    }
    _exit(3);
}

/* names the case, then hands the signal to whoever had it before (Open
 * MPI's backtrace printer), which sees the fault again as we return */
static void on_crash(int sig)
{
    if (write(2, crash_msg, crash_len) < 0) {
        /* as above */
    }
    sigaction(sig, &prev_act[sig], NULL);
}

static void arm(double seconds)
{
    struct itimerval it = { { 0, 0 }, { 0, 0 } };
    it.it_value.tv_sec = (time_t) seconds;
    it.it_value.tv_usec = (suseconds_t) ((seconds - (double) it.it_value.tv_sec) * 1e6);
    setitimer(ITIMER_REAL, &it, NULL);
}

static void set_messages(void)
{
    int n = snprintf(hang_msg, sizeof(hang_msg), "conform: rank %d: HANG in case %s\n", cf.rank,
                     case_name);
    hang_len = n < 0 ? 0 : (size_t) n < sizeof(hang_msg) ? (size_t) n : sizeof(hang_msg) - 1;
    n = snprintf(crash_msg, sizeof(crash_msg), "conform: rank %d: CRASH in case %s\n", cf.rank,
                 case_name);
    crash_len = n < 0 ? 0 : (size_t) n < sizeof(crash_msg) ? (size_t) n : sizeof(crash_msg) - 1;
}

static void signals_init(void)
{
    struct sigaction sa;
    size_t i;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGALRM, &sa, NULL);
    sa.sa_handler = on_crash;
    sa.sa_flags = SA_NODEFER;
    for (i = 0; i < sizeof(crash_sigs) / sizeof(crash_sigs[0]); ++i) {
        sigaction(crash_sigs[i], &sa, &prev_act[crash_sigs[i]]);
    }
    set_messages();
}

static int selected(const char *name)
{
    char buf[256];
    const char *p, *q;
    if (cf.only && !strstr(name, cf.only)) {
        return 0;
    }
    /* --skip A,B: runs past cases known to hang, to find the next finding */
    for (p = skip_opt; p && *p; p = *q ? q + 1 : q) {
        q = strchr(p, ',');
        q = q ? q : p + strlen(p);
        if ((size_t) (q - p) < sizeof(buf) && q > p) {
            memcpy(buf, p, (size_t) (q - p));
            buf[q - p] = '\0';
            if (strstr(name, buf)) {
                return 0;
            }
        }
    }
    return 1;
}

int cf_case(const char *fmt, ...)
{
    char name[sizeof(case_name)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    if (!selected(name)) {
        return 0;
    }
    memcpy(case_name, name, sizeof(name));
    case_failed = 0;
    case_skipped = 0;
    case_lines = 0;
    set_messages();
    if (cf.verbose && cf.rank == 0) {
        printf("case %s\n", case_name);
        fflush(stdout);
    }
    arm(cf.timeout);
    return 1;
}

void cf_fail(const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    case_failed = 1;
    if (++case_lines > 5) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    printf("FAIL [%s] rank %d: %s%s\n", case_name, cf.rank, msg,
           case_lines == 5 ? " (further failures of this case on this rank not shown)" : "");
    fflush(stdout);
}

void cf_rc(int rc, const char *call)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (rc == MPI_SUCCESS) {
        return;
    }
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) {
        snprintf(s, sizeof(s), "error %d", rc);
    }
    cf_fail("%s returned %d: %s", call, rc, s);
}

void cf_skip(const char *why)
{
    case_skipped = 1;
    if (!skip_said++) {
        printf("SKIP [%s] rank %d: %s (such cases are counted as skipped)\n", case_name, cf.rank, why);
        fflush(stdout);
    }
}

int cf_end(void)
{
    int mine[2] = { case_failed, case_skipped }, any[2] = { 1, 0 }, rc;
    /* the watchdog stays armed: a rank stuck in the case stops the others here */
    rc = MPI_Allreduce(mine, any, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    arm(0);
    if (rc != MPI_SUCCESS) {
        cf_rc(rc, "the verdict's MPI_Allreduce");
        any[0] = 1;
    }
    if (cf.rank == 0) {
        if (any[0]) {
            ++nfail;
            if (!case_failed) {
                printf("FAIL [%s] (on another rank)\n", case_name);
            }
        } else if (any[1]) {
            ++nskip;
        } else {
            ++npass;
        }
        fflush(stdout);
    }
    return !any[0];
}

int cf_same(const void *got, const void *want, size_t n, const char *what)
{
    const unsigned char *g = got, *w = want;
    size_t i, first = 0, bad = 0;
    for (i = 0; i < n; ++i) {
        if (g[i] != w[i] && bad++ == 0) {
            first = i;
        }
    }
    if (bad) {
        cf_fail("%s: %zu of %zu bytes differ, first at byte %zu: 0x%02x, want 0x%02x%s", what, bad, n,
                first, g[first], w[first], w[first] == CF_POISON ? " (untouched)" : "");
    }
    return bad == 0;
}

/* ---- start and end ---- */

static void usage(void)
{
    if (cf.rank == 0) {
        fprintf(stderr, "usage: test_conform [--mem device|host|mixed] [--timeout S] [--only SUBSTR]\n"
                        "                    [--skip SUBSTR[,SUBSTR...]] [--quick] [-v]\n");
    }
    MPI_Finalize();
    exit(2);
}

void cf_init(int *argc, char ***argv)
{
    const char *tm = getenv("CF_THREAD_MULTIPLE");
    int i, provided;
    if (tm && strcmp(tm, "1") == 0) {
        MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(argc, argv);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    cf_types_init();
    MPI_Comm_rank(MPI_COMM_WORLD, &cf.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &cf.size);
    cf.timeout = 60;
    for (i = 1; i < *argc; ++i) {
        const char *a = (*argv)[i], *v = i + 1 < *argc ? (*argv)[i + 1] : NULL;
        if (strcmp(a, "--quick") == 0) {
            cf.quick = 1;
        } else if (strcmp(a, "-v") == 0) {
            cf.verbose = 1;
        } else if (strcmp(a, "--mem") == 0 && v &&
                   (!strcmp(v, "device") || !strcmp(v, "host") || !strcmp(v, "mixed"))) {
            mem_opt = v;
            ++i;
        } else if (strcmp(a, "--timeout") == 0 && v && atof(v) > 0) {
            cf.timeout = atof(v);
            ++i;
        } else if (strcmp(a, "--only") == 0 && v) {
            cf.only = v;
            ++i;
        } else if (strcmp(a, "--skip") == 0 && v) {
            skip_opt = v;
            ++i;
        } else {
            usage();
        }
    }
    memory_init();
    signals_init();
    setvbuf(stdout, NULL, _IOLBF, 0);
}

int cf_finish(void)
{
    int verdict = 0;
    if (cf.rank == 0) {
        if (nskip) {
            printf("%d skipped on some rank (see the SKIP lines)\n", nskip);
        }
        printf("%d passed, %d failed\n", npass, nfail);
        fflush(stdout);
        verdict = nfail != 0;
    }
    /* every rank exits alike, so mpirun's status is rank 0's verdict */
    MPI_Bcast(&verdict, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return verdict;
}
