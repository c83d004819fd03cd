/*
 * gpu_topo_build on hand-made rank tables: host grouping, local ranks,
 * shared GPUs and missing peer access.  Prints "N passed, N failed".
 */
#include <stdio.h>
#include <string.h>

#include "topo/gpu_topo.h"

static int npass, nfail;

#define EXPECT(cond) do { if (cond) npass++; else { nfail++; printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); } } while (0)

static void set(gpu_topo_rank_info_t *r, uint64_t host, int dev, const char *bus)
{
    memset(r, 0, sizeof(*r));
    r->host_hash = host;
    r->device = dev;
    snprintf(r->busid, sizeof(r->busid), "%s", bus);
}

/* only GPUs on the same "switch" (same first letter of the bus id) see each other */
static int same_switch(const char *a, const char *b)
{
    return a[0] == b[0];
}

int main(void)
{
    gpu_topo_rank_info_t t[8];
    gpu_topo_comm_t c;

    /* 4 ranks on 2 GPUs of one host */
    set(&t[0], 1, 0, "A:01"); set(&t[1], 1, 0, "A:01"); set(&t[2], 1, 1, "A:02"); set(&t[3], 1, 1, "A:02");
    EXPECT(GPU_OK == gpu_topo_build(t, 4, 2, NULL, &c));
    EXPECT(c.all_on_one_host && c.local_rank == 2 && c.local_size == 4 && c.ndevices == 2 && c.p2p_all);
    EXPECT(1 == c.nnodes && 0 == c.node_index);

    /* two hosts: rank 3 elsewhere */
    t[3].host_hash = 2;
    EXPECT(GPU_OK == gpu_topo_build(t, 4, 3, NULL, &c));
    EXPECT(!c.all_on_one_host && c.local_rank == 0 && c.local_size == 1 && c.ndevices == 1);
    EXPECT(GPU_OK == gpu_topo_build(t, 4, 1, NULL, &c));
    EXPECT(!c.all_on_one_host && c.local_rank == 1 && c.local_size == 3);
    EXPECT(2 == c.nnodes && 0 == c.node_index);
    /* node order follows the lowest rank of each host */
    t[0].host_hash = 7;
    EXPECT(GPU_OK == gpu_topo_build(t, 4, 1, NULL, &c));
    EXPECT(3 == c.nnodes && 1 == c.node_index);
    EXPECT(GPU_OK == gpu_topo_build(t, 4, 3, NULL, &c));
    EXPECT(3 == c.nnodes && 2 == c.node_index);
    t[0].host_hash = 1;

    /* no peer access across switches */
    set(&t[0], 1, 0, "A:01"); set(&t[1], 1, 1, "B:01");
    EXPECT(GPU_OK == gpu_topo_build(t, 2, 0, same_switch, &c));
    EXPECT(!c.p2p_all && c.ndevices == 2);
    set(&t[1], 1, 1, "A:03");
    EXPECT(GPU_OK == gpu_topo_build(t, 2, 0, same_switch, &c));
    EXPECT(c.p2p_all);

    /* bad arguments are refused and leave the output alone */
    memset(&c, 0x5a, sizeof(c));
    EXPECT(GPU_ERR_INVALID == gpu_topo_build(t, 2, 5, NULL, &c));
    EXPECT(0x5a5a5a5a == (unsigned) c.nranks);

    /* the host hash is stable within a process */
    EXPECT(gpu_topo_host_hash() == gpu_topo_host_hash());

    printf("test_topo: %d passed, %d failed\n", npass, nfail);
    return nfail ? 1 : 0;
}
