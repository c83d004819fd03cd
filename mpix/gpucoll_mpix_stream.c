/*
 * MPICH's stream objects: an info key holding raw bytes (MPIX_Info_set_hex:
 * how a program hands over its cudaStream_t) and MPIX_Stream_create/free.
 * Apart from the stream communicator (gpucoll_mpix.c) because nothing here
 * touches CUDA or the transport: a stream is only the handle it names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpix/gpucoll_mpix_int.h"
#include "mpix/mpix_gpu.h"

int MPIX_Info_set_hex(MPI_Info info, const char *key, const void *value, int value_size)
{
    static const char digits[] = "0123456789abcdef";
    const unsigned char *v = value;
    char *hex;
    int ret;

    if (value_size < 0 || (value_size > 0 && NULL == value) || NULL == key) {
        return gc_fail(MPI_ERR_ARG, "MPIX_Info_set_hex", "invalid key, value or size");
    }
    hex = malloc(2 * (size_t) value_size + 1);
    if (NULL == hex) {
        return MPI_ERR_NO_MEM;
    }
    for (int i = 0; i < value_size; ++i) {
        hex[2 * i] = digits[v[i] >> 4];
        hex[2 * i + 1] = digits[v[i] & 15];
    }
    hex[2 * value_size] = '\0';
    ret = MPI_Info_set(info, key, hex);
    free(hex);
    return ret;
}

static int gc_hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* the info's key as exactly size bytes written by MPIX_Info_set_hex */
static int gc_info_get_hex(MPI_Info info, const char *key, void *out, int size)
{
    char buf[2 * 64 + 1];
    int flag = 0, len = 0;

    if (size > 64 || MPI_SUCCESS != MPI_Info_get_valuelen(info, key, &len, &flag) || !flag ||
        len != 2 * size || MPI_SUCCESS != MPI_Info_get(info, key, len, buf, &flag) || !flag) {
        return 0;
    }
    for (int i = 0; i < size; ++i) {
        const int hi = gc_hexval(buf[2 * i]), lo = gc_hexval(buf[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return 0;
        }
        ((unsigned char *) out)[i] = (unsigned char) (hi << 4 | lo);
    }
    return 1;
}

int MPIX_Stream_create(MPI_Info info, MPIX_Stream *stream)
{
    struct gpucoll_mpix_stream *s;
    char type[64];
    int flag = 0;

    if (NULL == stream) {
        return gc_fail(MPI_ERR_ARG, "MPIX_Stream_create", "stream is NULL");
    }
    s = calloc(1, sizeof(*s));
    if (NULL == s) {
        return MPI_ERR_NO_MEM;
    }
    if (MPI_INFO_NULL != info &&
        MPI_SUCCESS == MPI_Info_get(info, "type", (int) sizeof(type) - 1, type, &flag) && flag) {
        if (0 != strcmp(type, "cudaStream_t")) {
            free(s);
            return gc_fail(MPI_ERR_ARG, "MPIX_Stream_create",
                           "info \"type\" must be \"cudaStream_t\" (the only GPU stream "
                           "type this library knows)");
        }
        if (!gc_info_get_hex(info, "value", &s->cuda, (int) sizeof(s->cuda))) {
            free(s);
            return gc_fail(MPI_ERR_ARG, "MPIX_Stream_create",
                           "info \"value\" must hold the cudaStream_t, set with "
                           "MPIX_Info_set_hex(info, \"value\", &stream, sizeof(stream))");
        }
        s->is_cuda = 1;
    }
    *stream = s;
    return MPI_SUCCESS;
}

int MPIX_Stream_free(MPIX_Stream *stream)
{
    if (NULL == stream || MPIX_STREAM_NULL == *stream) {
        return gc_fail(MPI_ERR_ARG, "MPIX_Stream_free", "no stream");
    }
    free(*stream);
    *stream = MPIX_STREAM_NULL;
    return MPI_SUCCESS;
}

int MPIX_GPU_query_support(int gpu_type, int *is_supported)
{
    int n = 0;
    if (NULL == is_supported || gpu_type < MPIX_GPU_SUPPORT_CUDA ||
        gpu_type > MPIX_GPU_SUPPORT_HIP) {
        return gc_fail(MPI_ERR_ARG, "MPIX_GPU_query_support", "no answer's address, or a type "
                       "other than MPIX_GPU_SUPPORT_CUDA, _ZE or _HIP");
    }
    /* a failing runtime (no driver) counts as no device */
    if (MPIX_GPU_SUPPORT_CUDA == gpu_type && NULL != gc_abi() &&
        cudaSuccess != cudaGetDeviceCount(&n)) {
        (void) cudaGetLastError();
        n = 0;
    }
    *is_supported = MPIX_GPU_SUPPORT_CUDA == gpu_type && NULL != gc_abi() && n > 0;
    return MPI_SUCCESS;
}
