/*
 * Every wait bounded, on the staged path too: rank 1 stops calling, and
 * the other ranks' collectives on device buffers that the GPU path cannot
 * take (alltoallw, a strided receive type) must fail within
 * coll_gpu_timeout (+2 s) with an error naming the call, rank 1 and the
 * parameter, blocking and nonblocking alike.  Run with --mca
 * coll_gpu_timeout T; device memory from the driver (the stand-in in
 * make check).  Ends with "N passed, N failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conform.h"

static double limit_s(void)
{
    const char *t = getenv("OMPI_MCA_coll_gpu_timeout");
    return NULL != t && atof(t) > 0 ? atof(t) : 60.0;
}

/* the others' call fails in time, naming it and rank 1 */
static void expect_named(int err, double t, const char *call)
{
    char s[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_SUCCESS != err) {
        MPI_Error_string(err, s, &len);
    }
    CF_CHECK(MPI_SUCCESS != err, "%s returned success although rank 1 never called", call);
    CF_CHECK(t <= limit_s() + 2.0, "%s returned after %.2f s (limit %.0f s)", call, t, limit_s());
    CF_CHECK(NULL != strstr(s, "rank 1") && NULL != strstr(s, "coll_gpu_timeout"),
             "%s: the error does not name rank 1 and the parameter: %s", call, s);
    if (cf.verbose) {
        printf("rank %d: %s after %.2f s: %s\n", cf.rank, call, t, s);
    }
}

/* one case: rank 1 sleeps through it, every other rank runs call */
static void one_case(const char *name, int (*call)(MPI_Comm c, void *s, void *r, int n))
{
    const int n = cf.size, cnt = 16;
    MPI_Comm c;
    void *s, *r;
    if (!cf_case("%s/rank1-absent/%s", name, cf_mem_name())) {
        return;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    s = cf_alloc((size_t) n * cnt * 2 * sizeof(int));
    r = cf_alloc((size_t) n * cnt * 2 * sizeof(int));
    if (1 != cf.rank) {
        const double t0 = MPI_Wtime();
        const int err = call(c, s, r, n);
        expect_named(err, MPI_Wtime() - t0, name);
    } else {
        usleep((useconds_t) ((limit_s() + 3.0) * 1e6));
    }
    cf_free(s);
    cf_free(r);
    MPI_Comm_free(&c);
    cf_end();
}

static int call_alltoallw(MPI_Comm c, void *s, void *r, int n)
{
    int *cnt = malloc(4 * sizeof(int) * (size_t) n), err;
    int *dsp = cnt + n, *rcnt = cnt + 2 * n, *rdsp = cnt + 3 * n;
    MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * (size_t) n);
    for (int i = 0; i < n; ++i) {
        cnt[i] = rcnt[i] = 16;
        dsp[i] = rdsp[i] = i * 16 * (int) sizeof(int);
        ty[i] = MPI_INT;
    }
    err = MPI_Alltoallw(s, cnt, dsp, ty, r, rcnt, rdsp, ty, c);
    free(ty);
    free(cnt);
    return err;
}

static int call_allgather_strided(MPI_Comm c, void *s, void *r, int n)
{
    MPI_Datatype v, vr;
    int err;
    (void) n;
    /* 16 ints received with a stride of 2: a type the GPU path does not take */
    MPI_Type_vector(16, 1, 2, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, 32 * sizeof(int), &vr);
    MPI_Type_commit(&vr);
    err = MPI_Allgather(s, 16, MPI_INT, r, 1, vr, c);
    MPI_Type_free(&vr);
    MPI_Type_free(&v);
    return err;
}

static int call_ialltoallw(MPI_Comm c, void *s, void *r, int n)
{
    int *cnt = malloc(2 * sizeof(int) * (size_t) n), err;
    int *dsp = cnt + n;
    MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * (size_t) n);
    MPI_Request q = MPI_REQUEST_NULL;
    for (int i = 0; i < n; ++i) {
        cnt[i] = 16;
        dsp[i] = i * 16 * (int) sizeof(int);
        ty[i] = MPI_INT;
    }
    err = MPI_Ialltoallw(s, cnt, dsp, ty, r, cnt, dsp, ty, c, &q);
    if (MPI_SUCCESS == err) {
        err = MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
    free(ty);
    free(cnt);
    return err;
}

int main(int argc, char **argv)
{
    cf_init(&argc, &argv);
    if (cf.size < 2) {
        printf("SKIP test_conform_timeout: needs 2 ranks or more\n");
        return cf_finish();
    }
    one_case("alltoallw/blocking", call_alltoallw);
    one_case("allgather/blocking/strided-recv", call_allgather_strided);
    one_case("alltoallw/nonblocking", call_ialltoallw);
    return cf_finish();
}
