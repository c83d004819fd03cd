/*
 * A host address that becomes a device address.  Large host buffers are
 * mmap'd (every malloc of a few MiB) and go back to the kernel when freed;
 * the CUDA driver maps later device memory wherever the kernel gives it
 * room, that freed range included (seen on 4x H100: a 64 MiB host buffer
 * freed, a device buffer at its address, coll/gpu's memory of "host" at
 * that address handed the device buffer to the host library, which
 * crashed reading it).  Here: a host collective on a buffer in a region
 * the size of the driver stand-in's device arena, the region unmapped,
 * then the first device allocation (the stand-in maps its arena then,
 * where the kernel finds room: the hole just made), and collectives on it,
 * blocking and nonblocking, must stage and give the right answer.  On a
 * real GPU the address is not reused this way; the cases still run.
 * Ends with "N passed, N failed".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conform.h"

#define REUSE_REGION ((size_t) 4 << 30)   /* the stand-in's arena (test/fake) */
#define REUSE_COUNT 1024

static void fill(int *v, int salt)
{
    for (int i = 0; i < REUSE_COUNT; ++i) {
        v[i] = (cf.rank + 1) * salt + i;
    }
}

static int expect(int i, int salt)
{
    /* sum over ranks of (rank + 1) * salt + i */
    return salt * cf.size * (cf.size + 1) / 2 + cf.size * i;
}

static void check_sum(const int *got, int salt, const char *what)
{
    int bad = 0;
    for (int i = 0; i < REUSE_COUNT; ++i) {
        bad += got[i] != expect(i, salt);
    }
    CF_CHECK(0 == bad, "%s: %d of %d elements wrong", what, bad, REUSE_COUNT);
}

int main(int argc, char **argv)
{
    const size_t page = (size_t) sysconf(_SC_PAGESIZE);
    const size_t bytes = REUSE_COUNT * sizeof(int);
    int *host_out = malloc(bytes), *want = malloc(bytes), *dev_in, *dev_out, reused;
    char *region;
    MPI_Request q;

    cf_init(&argc, &argv);
    /* the buffer one page in: where the top-down kernel allocator puts a
     * mapping of REUSE_REGION into the hole of REUSE_REGION + one page */
    region = mmap(NULL, REUSE_REGION + page, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (MAP_FAILED == region || NULL == host_out || NULL == want) {
        fprintf(stderr, "conform: rank %d: no memory for the test\n", cf.rank);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int *host_in = (int *) (region + page);
    if (cf_case("reuse/host-allreduce-first")) {
        fill(host_in, 3);
        MPI_Allreduce(host_in, host_out, REUSE_COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        check_sum(host_out, 3, "host allreduce");
        MPI_Iallreduce(host_in, host_out, REUSE_COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        check_sum(host_out, 3, "host iallreduce");
        cf_end();
    }
    munmap(region, REUSE_REGION + page);
    dev_in = cf_alloc(bytes);
    dev_out = cf_alloc(bytes);
    reused = (void *) dev_in == (void *) host_in;
    if (cf.verbose || (0 == cf.rank && !cf.have_gpu)) {
        printf("rank %d: device buffer %s the freed host buffer's address\n", cf.rank,
               reused ? "at" : "not at");
    }
    if (cf_case("reuse/device-at-freed-host-address")) {
        /* the stand-in's arena lands in the hole; where it does not, the
         * test shows nothing and says so */
        CF_CHECK(cf.have_gpu || !cf.device || reused,
                 "the stand-in's device memory did not land at the freed host address");
        fill(want, 5);
        cf_put(dev_in, want, bytes);
        cf_poison(dev_out, bytes);
        MPI_Allreduce(dev_in, dev_out, REUSE_COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        cf_get(host_out, dev_out, bytes);
        check_sum(host_out, 5, "device allreduce at a freed host address");
        cf_poison(dev_out, bytes);
        MPI_Iallreduce(dev_in, dev_out, REUSE_COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        cf_get(host_out, dev_out, bytes);
        check_sum(host_out, 5, "device iallreduce at a freed host address");
        /* a host receive buffer, the device one sent: mixed kinds stage */
        MPI_Allreduce(dev_in, host_out, REUSE_COUNT, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        check_sum(host_out, 5, "device send, host receive");
        cf_end();
    }
    cf_free(dev_in);
    cf_free(dev_out);
    free(host_out);
    free(want);
    return cf_finish();
}
