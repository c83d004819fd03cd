/*
 * NVLink discovery through NVML, opened with dlopen (libnvidia-ml.so.1
 * comes with the driver, never with the toolkit we build against).
 */
#ifndef GPU_TOPO_NVML_H
#define GPU_TOPO_NVML_H

#include <stddef.h>

#include "topo/gpu_topo_graph.h"

/* Fill n->nvlinks / n->nvswitch_links for the GPUs of n; on failure say
 * why in one short phrase (no driver, no NVML, ...). */
gpu_status_t gpu_topo_nvml_links(gpu_topo_node_t *n, char *why, size_t len);

#endif /* GPU_TOPO_NVML_H */
