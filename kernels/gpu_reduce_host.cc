/*
 * The reduction functors of gpu_reduce_ops.h on the CPU: the inter-node
 * stage folds network data in host bounce buffers with the very code the
 * kernels run, so staged and device results agree bit for bit.
 */
#include "gpu_kernels.h"
#include "gpu_reduce_ops.h"

namespace {
struct host_fold {
    void *acc;
    const void *x;
    size_t n;
    template <gpu_op_t OP, class T> bool run()
    {
        T *a = static_cast<T *>(acc);
        const T *b = static_cast<const T *>(x);
        for (size_t i = 0; i < n; ++i) {
            a[i] = gpu_red<OP, T>::apply(a[i], b[i]);
        }
        return true;
    }
};
} // namespace

extern "C" int gpu_reduce_host(void *acc, const void *x, size_t count, gpu_op_t op,
                               gpu_dtype_t dt)
{
    host_fold f = { acc, x, count };
    return gpu_dispatch(op, dt, f) ? 1 : 0;
}
