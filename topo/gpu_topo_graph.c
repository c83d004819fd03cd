#include "topo/gpu_topo_graph.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hwloc.h>

#include "topo/gpu_topo_nvml.h"
#include "util/gpu_cuda_drv.h"

#define GPU_TOPO_NVLINK_INFO "GPUCollNVLink"
#define GPU_TOPO_P2P_INFO "GPUCollP2PAcrossPackages"
#define GPU_TOPO_NICBW_INFO "GPUCollNICGBps"

static void gpu_topo_busid(hwloc_obj_t o, char *buf, size_t len)
{
    snprintf(buf, len, "%04x:%02x:%02x.%01x", o->attr->pcidev.domain, o->attr->pcidev.bus,
             o->attr->pcidev.dev, o->attr->pcidev.func);
}

/* Host bridge, topmost PCI bridge below it, NUMA node and package. */
static void gpu_topo_place(hwloc_topology_t t, hwloc_obj_t o, gpu_topo_dev_t *d)
{
    hwloc_obj_t p, top_pci = NULL, nonio;

    d->hostbridge = -1;
    d->pciswitch = -1;
    for (p = o->parent; NULL != p && HWLOC_OBJ_BRIDGE == p->type; p = p->parent) {
        if (HWLOC_OBJ_BRIDGE_HOST == p->attr->bridge.upstream_type) {
            d->hostbridge = (int) p->gp_index;
            break;
        }
        top_pci = p;
    }
    if (NULL != top_pci) {
        d->pciswitch = (int) top_pci->gp_index;
    }
    nonio = hwloc_get_non_io_ancestor_obj(t, o);
    d->numa = -1;
    d->package = -1;
    d->cpus[0] = '\0';
    if (NULL != nonio) {
        if (NULL != nonio->cpuset) {
            hwloc_bitmap_list_snprintf(d->cpus, sizeof(d->cpus), nonio->cpuset);
        }
        if (NULL != nonio->nodeset && 1 == hwloc_bitmap_weight(nonio->nodeset)) {
            d->numa = hwloc_bitmap_first(nonio->nodeset);
        }
        p = HWLOC_OBJ_PACKAGE == nonio->type
                ? nonio
                : hwloc_get_ancestor_obj_by_type(t, HWLOC_OBJ_PACKAGE, nonio);
        if (NULL == p && NULL != nonio->cpuset) {
            /* I/O hanging off the machine: the package whose CPUs it sees */
            p = hwloc_get_next_obj_covering_cpuset_by_type(t, nonio->cpuset, HWLOC_OBJ_PACKAGE,
                                                           NULL);
        }
        d->package = NULL != p ? (int) p->os_index : -1;
    }
}

static int gpu_topo_is_gpu(hwloc_obj_t o)
{
    const unsigned cls = o->attr->pcidev.class_id;
    return 0x10de == o->attr->pcidev.vendor_id && (0x0302 == cls || 0x0300 == cls);
}

/* The NIC's verbs name if hwloc saw one, else its network interface. */
static int gpu_topo_is_nic(hwloc_obj_t o, char *name, size_t len)
{
    const unsigned cls = o->attr->pcidev.class_id;
    hwloc_obj_t c;
    int ib = 0;

    name[0] = '\0';
    for (c = o->io_first_child; NULL != c; c = c->next_sibling) {
        if (HWLOC_OBJ_OS_DEVICE != c->type) {
            continue;
        }
        if (HWLOC_OBJ_OSDEV_OPENFABRICS == c->attr->osdev.type) {
            snprintf(name, len, "%s", c->name);
            ib = 1;
        } else if (HWLOC_OBJ_OSDEV_NETWORK == c->attr->osdev.type && '\0' == name[0]) {
            snprintf(name, len, "%s", c->name);
        }
    }
    return 0x0207 == cls || ib;
}

/* "busid*links;busid*links" or "nvswitch*links"; -1 on a malformed value */
static int gpu_topo_parse_nvlink(gpu_topo_node_t *n, int g, const char *v)
{
    char buf[512], *save = NULL, *tok;
    snprintf(buf, sizeof(buf), "%s", v);
    for (tok = strtok_r(buf, ";", &save); NULL != tok; tok = strtok_r(NULL, ";", &save)) {
        char *star = strchr(tok, '*'), *end;
        long links;
        int k;
        if (NULL == star) {
            return -1;
        }
        *star = '\0';
        links = strtol(star + 1, &end, 10);
        if ('\0' != *end || links < 0 || links > 64) {
            return -1;
        }
        if (0 == strcmp(tok, "nvswitch")) {
            n->nvswitch_links[g] = (int) links;
            continue;
        }
        for (k = 0; k < n->ngpus && 0 != strcasecmp(n->gpu[k].busid, tok); ++k) {
        }
        if (k == n->ngpus) {
            return -1;
        }
        n->nvlinks[g][k] = (int) links;
    }
    return 0;
}

/* hwloc's own NVLink matrix (its NVML backend, MB/s between GPU OS
 * devices), when present; our attribute, read after this, overrides it */
static void gpu_topo_hwloc_nvlink(hwloc_topology_t t, gpu_topo_node_t *n, hwloc_obj_t *gobj)
{
    struct hwloc_distances_s *dist = NULL;
    unsigned nr = 1;
    if (0 != hwloc_distances_get_by_name(t, "NVLinkBandwidth", &nr, &dist, 0) || 0 == nr) {
        return;
    }
    for (unsigned i = 0; i < dist->nbobjs; ++i) {
        for (unsigned j = 0; j < dist->nbobjs; ++j) {
            int a = -1, b = -1;
            for (int g = 0; g < n->ngpus; ++g) {
                a = dist->objs[i]->parent == gobj[g] ? g : a;
                b = dist->objs[j]->parent == gobj[g] ? g : b;
            }
            if (a >= 0 && b >= 0 && a != b && dist->values[i * dist->nbobjs + j] > 0) {
                /* 25 GB/s per NVLink 4 link and direction */
                n->nvlinks[a][b] = (int) ((double) dist->values[i * dist->nbobjs + j] / 25000.0 + 0.5);
            }
        }
    }
    hwloc_distances_release(t, dist);
}

/* the RDMA devices rdma-core reports: the names UCX_NET_DEVICES takes */
static void gpu_topo_verbs(gpu_topo_node_t *n)
{
    void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
    void **(*get_list)(int *);
    void (*free_list)(void **);
    const char *(*get_name)(void *);
    void **list;
    int num = 0;
    size_t len = 0;

    n->hcas[0] = '\0';
    if (NULL == h) {
        snprintf(n->hcas, sizeof(n->hcas), "(libibverbs.so.1 not loadable)");
        return;
    }
    *(void **) &get_list = dlsym(h, "ibv_get_device_list");
    *(void **) &free_list = dlsym(h, "ibv_free_device_list");
    *(void **) &get_name = dlsym(h, "ibv_get_device_name");
    if (NULL != get_list && NULL != free_list && NULL != get_name && NULL != (list = get_list(&num))) {
        for (int i = 0; i < num && len < sizeof(n->hcas) - 1; ++i) {
            len += (size_t) snprintf(n->hcas + len, sizeof(n->hcas) - len, "%s%s", i ? " " : "",
                                     get_name(list[i]));
        }
        free_list(list);
    }
    if (0 == num) {
        snprintf(n->hcas, sizeof(n->hcas), "(none)");
    }
    dlclose(h);
}

static void gpu_topo_note(gpu_topo_node_t *n, const char *what)
{
    size_t len = strlen(n->unseen);
    snprintf(n->unseen + len, sizeof(n->unseen) - len, "%s%s", len ? "; " : "", what);
}

static gpu_status_t gpu_topo_from_hwloc(hwloc_topology_t t, const char *src, gpu_topo_node_t *n,
                                        char *err, size_t errlen)
{
    hwloc_obj_t o = NULL, root = hwloc_get_root_obj(t);
    hwloc_obj_t gobj[GPU_TOPO_MAX_GPUS];
    const char *v;
    int g;

    memset(n, 0, sizeof(*n));
    n->p2p_across_packages = 1;
    v = hwloc_obj_get_info_by_name(root, "HostName");
    snprintf(n->host, sizeof(n->host), "%s", NULL != v ? v : "?");
    v = hwloc_obj_get_info_by_name(root, GPU_TOPO_P2P_INFO);
    if (NULL != v) {
        n->p2p_across_packages = atoi(v) != 0;
    }
    while (NULL != (o = hwloc_get_next_pcidev(t, o))) {
        char name[GPU_TOPO_NAME_LEN];
        gpu_topo_dev_t *d;
        if (gpu_topo_is_gpu(o)) {
            if (n->ngpus == GPU_TOPO_MAX_GPUS) {
                snprintf(err, errlen, "%s: more than %d GPUs in one node", src, GPU_TOPO_MAX_GPUS);
                return GPU_ERR_UNSUPPORTED;
            }
            gobj[n->ngpus] = o;
            d = &n->gpu[n->ngpus];
            snprintf(d->name, sizeof(d->name), "gpu%d", n->ngpus);
            ++n->ngpus;
        } else if (gpu_topo_is_nic(o, name, sizeof(name))) {
            if (n->nnics == GPU_TOPO_MAX_NICS) {
                continue;
            }
            d = &n->nic[n->nnics];
            snprintf(d->name, sizeof(d->name), "%s", name[0] ? name : "nic");
            v = hwloc_obj_get_info_by_name(o, GPU_TOPO_NICBW_INFO);
            d->gbps = NULL != v ? atof(v) : (double) o->attr->pcidev.linkspeed;
            ++n->nnics;
        } else {
            continue;
        }
        gpu_topo_busid(o, d->busid, sizeof(d->busid));
        gpu_topo_place(t, o, d);
    }
    gpu_topo_hwloc_nvlink(t, n, gobj);
    for (g = 0; g < n->ngpus; ++g) {
        v = hwloc_obj_get_info_by_name(gobj[g], GPU_TOPO_NVLINK_INFO);
        if (NULL != v && 0 != gpu_topo_parse_nvlink(n, g, v)) {
            snprintf(err, errlen, "%s: GPU %s has a malformed %s attribute \"%s\" (want "
                     "\"<peer PCI id>*<links>;...\" or \"nvswitch*<links>\" naming GPUs of the file)",
                     src, n->gpu[g].busid, GPU_TOPO_NVLINK_INFO, v);
            return GPU_ERR_INVALID;
        }
    }
    if (0 == n->ngpus) {
        gpu_topo_note(n, "no NVIDIA GPU on the PCI bus");
    }
    if (0 == n->nnics) {
        gpu_topo_note(n, "no network adapter");
    }
    return GPU_OK;
}

gpu_status_t gpu_topo_load_file(const char *path, gpu_topo_node_t *node, char *err, size_t errlen)
{
    hwloc_topology_t t;
    gpu_topo_node_t *n;
    gpu_status_t st;

    if (0 != access(path, R_OK)) {
        snprintf(err, errlen, "cannot read topology file %s: %s", path, strerror(errno));
        return GPU_ERR_INVALID;
    }
    n = malloc(sizeof(*n));
    if (NULL == n || 0 != hwloc_topology_init(&t)) {
        free(n);
        snprintf(err, errlen, "%s: out of memory", path);
        return GPU_ERR_NO_MEMORY;
    }
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_ALL);
    if (0 != hwloc_topology_set_xml(t, path) || 0 != hwloc_topology_load(t)) {
        snprintf(err, errlen, "topology file %s is not a valid hwloc XML topology", path);
        hwloc_topology_destroy(t);
        free(n);
        return GPU_ERR_INVALID;
    }
    st = gpu_topo_from_hwloc(t, path, n, err, errlen);
    hwloc_topology_destroy(t);
    if (GPU_OK == st) {
        *node = *n;
    }
    free(n);
    return st;
}

static gpu_status_t gpu_topo_load_live(hwloc_topology_t *t, char *err, size_t errlen)
{
    if (0 != hwloc_topology_init(t)) {
        snprintf(err, errlen, "hwloc_topology_init failed");
        return GPU_ERR_NO_MEMORY;
    }
    hwloc_topology_set_io_types_filter(*t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (0 != hwloc_topology_load(*t)) {
        snprintf(err, errlen, "hwloc could not discover this machine: %s", strerror(errno));
        hwloc_topology_destroy(*t);
        return GPU_ERR_UNSUPPORTED;
    }
    return GPU_OK;
}

/* cudaDeviceCanAccessPeer between GPUs of different packages decides
 * whether cross-socket traffic may go GPU to GPU */
static void gpu_topo_peer_access(gpu_topo_node_t *n)
{
    for (int a = 0; a < n->ngpus; ++a) {
        for (int b = 0; b < n->ngpus; ++b) {
            if (n->gpu[a].package != n->gpu[b].package && 0 == gpu_topo_links(n, a, b)) {
                const int ok = gpu_drv_can_access_peer(n->gpu[a].busid, n->gpu[b].busid);
                if (ok < 0) {
                    gpu_topo_note(n, "peer access unknown (no CUDA driver)");
                    return;
                }
                n->p2p_across_packages &= ok;
            }
        }
    }
}

gpu_status_t gpu_topo_detect(gpu_topo_node_t *node, char *err, size_t errlen)
{
    hwloc_topology_t t;
    gpu_topo_node_t *n = malloc(sizeof(*n));
    gpu_status_t st;
    char why[96];

    if (NULL == n) {
        return GPU_ERR_NO_MEMORY;
    }
    st = gpu_topo_load_live(&t, err, errlen);
    if (GPU_OK == st) {
        st = gpu_topo_from_hwloc(t, "this machine", n, err, errlen);
        hwloc_topology_destroy(t);
    }
    if (GPU_OK == st && n->ngpus > 0 &&
        GPU_OK != gpu_topo_nvml_links(n, why, sizeof(why))) {
        gpu_topo_note(n, why);
    }
    if (GPU_OK == st) {
        gpu_topo_verbs(n);
        gpu_topo_peer_access(n);
    }
    if (GPU_OK == st) {
        *node = *n;
    }
    free(n);
    return st;
}

gpu_status_t gpu_topo_dump(const char *path, char *err, size_t errlen)
{
    hwloc_topology_t t;
    hwloc_obj_t o = NULL;
    gpu_topo_node_t *n = malloc(sizeof(*n));
    gpu_status_t st;
    char why[96];
    int g = 0;

    if (NULL == n) {
        return GPU_ERR_NO_MEMORY;
    }
    st = gpu_topo_load_live(&t, err, errlen);
    if (GPU_OK != st) {
        free(n);
        return st;
    }
    st = gpu_topo_from_hwloc(t, "this machine", n, err, errlen);
    if (GPU_OK == st && n->ngpus > 0 && GPU_OK != gpu_topo_nvml_links(n, why, sizeof(why))) {
        gpu_topo_note(n, why);
    }
    /* the same PCI order as from_hwloc: GPU g is the g-th GPU object */
    while (GPU_OK == st && NULL != (o = hwloc_get_next_pcidev(t, o))) {
        char val[512] = "";
        size_t len = 0;
        if (!gpu_topo_is_gpu(o)) {
            continue;
        }
        for (int k = 0; k < n->ngpus; ++k) {
            if (n->nvlinks[g][k] > 0) {
                len += (size_t) snprintf(val + len, sizeof(val) - len, "%s%s*%d", len ? ";" : "",
                                         n->gpu[k].busid, n->nvlinks[g][k]);
            }
        }
        if (n->nvswitch_links[g] > 0) {
            snprintf(val + len, sizeof(val) - len, "%snvswitch*%d", len ? ";" : "",
                     n->nvswitch_links[g]);
        }
        if ('\0' != val[0]) {
            hwloc_obj_add_info(o, GPU_TOPO_NVLINK_INFO, val);
        }
        ++g;
    }
    if (GPU_OK == st) {
        hwloc_obj_add_info(hwloc_get_root_obj(t), GPU_TOPO_P2P_INFO,
                           n->p2p_across_packages ? "1" : "0");
        if (0 != hwloc_topology_export_xml(t, path, 0)) {
            snprintf(err, errlen, "cannot write topology file %s: %s", path, strerror(errno));
            st = GPU_ERR_INVALID;
        }
    }
    hwloc_topology_destroy(t);
    free(n);
    return st;
}
