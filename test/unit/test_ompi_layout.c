/*
 * The structures coll/gpu shares with the libmpi it is loaded into have
 * the size that libmpi itself gives them.  An Open MPI class records the
 * sizeof its library was compiled with (cls_sizeof), so comparing it with
 * this build's sizeof catches a header that does not match the library:
 * the compat/ompi5 threads shim (opal_mutex_t is embedded in communicators
 * and requests) and coll/gpu's repeated ompi_coll_base_nbc_request_t
 * layout (coll_gpu_compat.h), in which MPI_I* and *_init retain user ops.
 */
#include "ompi_config.h"

#include <stdio.h>

#include "ompi_coll_gpu/coll_gpu.h"
#include "ompi/communicator/communicator.h"
#include "ompi/request/request.h"
#include "test/unit/check.h"

/* the class of the request layout coll/gpu repeats (its header cannot be
 * included: it needs Fortran headers Open MPI does not install) */
extern opal_class_t ompi_coll_base_nbc_request_t_class;

int main(void)
{
    CHECK(sizeof(opal_mutex_t) == opal_mutex_t_class.cls_sizeof,
          "opal_mutex_t: %zu bytes here, %zu in libopen-pal", sizeof(opal_mutex_t),
          opal_mutex_t_class.cls_sizeof);
    CHECK(sizeof(ompi_communicator_t) == ompi_communicator_t_class.cls_sizeof,
          "ompi_communicator_t: %zu bytes here, %zu in libmpi", sizeof(ompi_communicator_t),
          ompi_communicator_t_class.cls_sizeof);
    CHECK(sizeof(ompi_request_t) == ompi_request_t_class.cls_sizeof,
          "ompi_request_t: %zu bytes here, %zu in libmpi", sizeof(ompi_request_t),
          ompi_request_t_class.cls_sizeof);
    CHECK(sizeof(mca_coll_gpu_nbc_request_t) == ompi_coll_base_nbc_request_t_class.cls_sizeof,
          "coll/gpu's request head: %zu bytes, ompi_coll_base_nbc_request_t %zu in libmpi",
          sizeof(mca_coll_gpu_nbc_request_t), ompi_coll_base_nbc_request_t_class.cls_sizeof);
#if MCA_COLL_GPU_OMPI5
    CHECK(sizeof(opal_thread_t) == opal_thread_t_class.cls_sizeof,
          "opal_thread_t: %zu bytes here, %zu in libopen-pal", sizeof(opal_thread_t),
          opal_thread_t_class.cls_sizeof);
#endif
    printf("Open MPI %d.%d layouts: %d passed, %d failed\n", OMPI_MAJOR_VERSION,
           OMPI_MINOR_VERSION, npass, nfail);
    return 0 == nfail ? 0 : 1;
}
