/*
 * Which ranks form a node: the ranks of one host, optionally split into V
 * "virtual nodes" in rank order (coll_gpu_virtual_nodes, for testing the
 * inter-node paths on one machine).  Pure arithmetic, shared by the
 * hierarchy's setup (hosts from an exchange) and the memory-kind agreement
 * across nodes (hosts from Open MPI's locality and host names, with no
 * exchange), so both carve the same nodes.
 */
#ifndef GPU_NODES_H
#define GPU_NODES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* host[r]: any value equal exactly for the ranks of one host.  Fills
 * node_of[r] (nodes numbered by their first rank) and returns the number of
 * nodes, or -1 when out of memory. */
int gpu_nodes_split(int n, const uint64_t *host, int V, int *node_of);

/* FNV-1a of a string: a host name as a host key */
uint64_t gpu_nodes_name_key(const char *s);

#ifdef __cplusplus
}
#endif

#endif /* GPU_NODES_H */
