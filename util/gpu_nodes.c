#include "util/gpu_nodes.h"

#include <stdlib.h>

int gpu_nodes_split(int n, const uint64_t *host, int V, int *node_of)
{
    int *host_of = malloc(sizeof(int) * (size_t) n), *lrank = malloc(sizeof(int) * (size_t) n);
    int *lsize = calloc((size_t) n, sizeof(int)), *raw = malloc(sizeof(int) * (size_t) n);
    int nh = 0, nn = -1;

    if (NULL == host_of || NULL == lrank || NULL == lsize || NULL == raw) {
        goto out;
    }
    V = V > 1 ? V : 1;
    /* quadratic, like the hierarchy's own setup: communicators are at most
     * a few thousand ranks and this runs once per communicator */
    for (int r = 0; r < n; ++r) {
        int q = 0;
        while (q < r && host[q] != host[r]) {
            ++q;
        }
        host_of[r] = q < r ? host_of[q] : nh++;
        lrank[r] = lsize[host_of[r]]++;
    }
    for (int r = 0; r < n; ++r) {
        raw[r] = host_of[r] * V + lrank[r] * V / lsize[host_of[r]];
    }
    nn = 0;
    for (int r = 0; r < n; ++r) {
        int q = 0;
        while (q < r && raw[q] != raw[r]) {
            ++q;
        }
        node_of[r] = q < r ? node_of[q] : nn++;
    }
out:
    free(raw);
    free(lsize);
    free(lrank);
    free(host_of);
    return nn;
}

uint64_t gpu_nodes_name_key(const char *s)
{
    uint64_t h = 14695981039346656037ull;
    for (; NULL != s && '\0' != *s; ++s) {
        h = (h ^ (unsigned char) *s) * 1099511628211ull;
    }
    return h;
}
