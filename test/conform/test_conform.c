/*
 * The conformance test of the intra-communicator collectives: every
 * collective MPI defines, blocking, nonblocking and persistent, on
 * MPI_COMM_WORLD, a communicator in reversed rank order, an odd/even
 * split and MPI_COMM_SELF, checked against the MPI standard's definition
 * of each (see conform.h for the framework).  The other files:
 *   conform_move.c       Bcast, Gather(v), Scatter(v), Allgather(v), Alltoall(v)
 *   conform_w.c          Alltoallw; different datatypes, same type signature
 *   conform_reduce.c     the reductions; several requests outstanding at once
 *   conform_nbr.c        neighborhood and intercommunicator collectives,
 *                        MPI_Reduce_local (its own main)
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "conform_coll.h"

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- Barrier: no rank leaves it before every rank entered it ---- */

typedef struct {
    const cf_comm_t *c;
    int64_t enter;
} barrier_ctx;

static void barrier_fill(void *ctx, int round)
{
    barrier_ctx *b = ctx;
    (void) round;
    /* the last rank comes late: the others must wait for it */
    if (b->c->rank == b->c->size - 1) {
        usleep(cf.quick ? 5000 : 20000);
    }
    b->enter = now_ns();
}

static void barrier_check(void *ctx, int round)
{
    barrier_ctx *b = ctx;
    int64_t left = now_ns(), last = 0;
    (void) round;
    cf_rc(MPI_Allreduce(&b->enter, &last, 1, MPI_INT64_T, MPI_MAX, b->c->comm),
          "MPI_Allreduce of the entry times");
    /* CLOCK_MONOTONIC is one clock for every process of a host */
    if (b->c->one_node) {
        CF_CHECK(left >= last, "left the barrier %.3f ms before the last rank entered it",
                 (double) (last - left) / 1e6);
    }
}

/* when: "" before the communicator's first collective on buffers, "/again"
 * after them (across nodes coll/gpu's barrier is the hierarchy's only once
 * a device call has set it up) */
void cf_test_barrier(const cf_comm_t *c, const char *when)
{
    barrier_ctx b = { c, 0 };
    cf_hooks_t h = { barrier_fill, barrier_check, &b };
    cf_call_t call = { .coll = C_BARRIER, .comm = c->comm };
    int f;
    for (f = 0; f < CF_NFORMS; ++f) {
        if (!cf_case("barrier/%s/%s/%s%s", cf_form_names[f], c->name, cf_mem_name(), when)) {
            continue;
        }
        cf_run(&call, (cf_form_t) f, &h);
        cf_end();
    }
}

/* ---- the communicators ---- */

static void comm_describe(cf_comm_t *c, MPI_Comm comm, const char *name)
{
    MPI_Comm node;
    int nsize, one;
    c->comm = comm;
    c->name = name;
    if (comm != MPI_COMM_WORLD && comm != MPI_COMM_SELF) {
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    }
    MPI_Comm_rank(comm, &c->rank);
    MPI_Comm_size(comm, &c->size);
    MPI_Allreduce(&c->size, &c->maxsize, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, c->rank, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &nsize);
    MPI_Comm_free(&node);
    one = nsize == c->size;
    MPI_Allreduce(&one, &c->one_node, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
}

/* cf_types' sizes and extents are the C compiler's: MPI must agree */
static void check_types(void)
{
    int k, size;
    MPI_Aint lb, ext;
    if (!cf_case("types/sizes-and-extents")) {
        return;
    }
    for (k = 0; k < cf_ntypes; ++k) {
        MPI_Type_size(cf_types[k].type, &size);
        MPI_Type_get_extent(cf_types[k].type, &lb, &ext);
        CF_CHECK((size_t) size == cf_types[k].size && (size_t) ext == cf_types[k].extent,
                 "%s: MPI says size %d extent %ld, the test assumes %zu and %zu", cf_types[k].name,
                 size, (long) ext, cf_types[k].size, cf_types[k].extent);
    }
    cf_end();
}

int main(int argc, char **argv)
{
    MPI_Comm rev, split;
    cf_comm_t comms[4];
    int k;

    cf_init(&argc, &argv);
    if (cf.size > CF_MAXP) {
        if (cf.rank == 0) fprintf(stderr, "conform: at most %d ranks\n", CF_MAXP);
        MPI_Finalize();
        return 2;
    }
    check_types();
    /* key -rank: the new communicator's rank order is the world's backwards */
    MPI_Comm_split(MPI_COMM_WORLD, 0, -cf.rank, &rev);
    MPI_Comm_split(MPI_COMM_WORLD, cf.rank % 2, cf.rank, &split);
    comm_describe(&comms[0], MPI_COMM_WORLD, "world");
    comm_describe(&comms[1], rev, "reversed");
    comm_describe(&comms[2], split, "evenodd");
    comm_describe(&comms[3], MPI_COMM_SELF, "self");
    for (k = 0; k < 4; ++k) {
        cf_test_barrier(&comms[k], "");
        cf_test_move(&comms[k]);
        cf_test_alltoallw(&comms[k]);
        cf_test_signatures(&comms[k]);
        cf_test_reduce(&comms[k]);
        cf_test_outstanding(&comms[k]);
        cf_test_barrier(&comms[k], "/again");
    }
    MPI_Comm_free(&rev);
    MPI_Comm_free(&split);
    return cf_finish();
}
