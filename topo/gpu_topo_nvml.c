#include "topo/gpu_topo_nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* the few NVML types we use, as nvml.h defines them */
typedef void *gpu_nvml_device_t;
typedef struct {
    char bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} gpu_nvml_pci_t;
#define GPU_NVML_MAX_LINKS 18

static struct {
    int (*init)(void);
    int (*shutdown)(void);
    int (*by_busid)(const char *, gpu_nvml_device_t *);
    int (*link_state)(gpu_nvml_device_t, unsigned int, int *);
    int (*remote_pci)(gpu_nvml_device_t, unsigned int, gpu_nvml_pci_t *);
    int (*remote_type)(gpu_nvml_device_t, unsigned int, int *);
} gpu_nvml;

static int gpu_nvml_open(void)
{
    static int state = 0;   /* 0 untried, 1 ok, -1 absent */
    void *h;
    if (0 != state) {
        return state > 0;
    }
    state = -1;
    h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (NULL == h) {
        return 0;
    }
    *(void **) &gpu_nvml.init = dlsym(h, "nvmlInit_v2");
    *(void **) &gpu_nvml.shutdown = dlsym(h, "nvmlShutdown");
    *(void **) &gpu_nvml.by_busid = dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **) &gpu_nvml.link_state = dlsym(h, "nvmlDeviceGetNvLinkState");
    *(void **) &gpu_nvml.remote_pci = dlsym(h, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    /* optional: tells an NVSwitch from a GPU at the far end */
    *(void **) &gpu_nvml.remote_type = dlsym(h, "nvmlDeviceGetNvLinkRemoteDeviceType");
    if (NULL == gpu_nvml.init || NULL == gpu_nvml.shutdown || NULL == gpu_nvml.by_busid ||
        NULL == gpu_nvml.link_state || NULL == gpu_nvml.remote_pci) {
        return 0;
    }
    state = 1;
    return 1;
}

/* NVML spells bus ids with an 8-digit domain */
static int gpu_nvml_same_bus(const char *nvml_id, const char *ours)
{
    size_t a = strlen(nvml_id), b = strlen(ours);
    return a >= b && 0 == strcasecmp(nvml_id + (a - b), ours);
}

gpu_status_t gpu_topo_nvml_links(gpu_topo_node_t *n, char *why, size_t len)
{
    int g;
    if (!gpu_nvml_open()) {
        snprintf(why, len, "NVLink unknown (libnvidia-ml.so.1 not loadable)");
        return GPU_ERR_UNSUPPORTED;
    }
    if (0 != gpu_nvml.init()) {
        snprintf(why, len, "NVLink unknown (nvmlInit failed)");
        return GPU_ERR_UNSUPPORTED;
    }
    for (g = 0; g < n->ngpus; ++g) {
        gpu_nvml_device_t dev;
        if (0 != gpu_nvml.by_busid(n->gpu[g].busid, &dev)) {
            continue;
        }
        for (unsigned int l = 0; l < GPU_NVML_MAX_LINKS; ++l) {
            gpu_nvml_pci_t pci;
            int active = 0, type = 0, k;
            if (0 != gpu_nvml.link_state(dev, l, &active) || !active ||
                0 != gpu_nvml.remote_pci(dev, l, &pci)) {
                continue;
            }
            for (k = 0; k < n->ngpus && !gpu_nvml_same_bus(pci.bus_id, n->gpu[k].busid); ++k) {
            }
            if (k < n->ngpus) {
                ++n->nvlinks[g][k];
            } else if (NULL == gpu_nvml.remote_type || (0 == gpu_nvml.remote_type(dev, l, &type) &&
                                                        2 == type /* NVML_NVLINK_DEVICE_TYPE_SWITCH */)) {
                ++n->nvswitch_links[g];
            }
        }
    }
    gpu_nvml.shutdown();
    return GPU_OK;
}
