dnl GPUCOLL_CHECK_CUDA: nvcc, headers and the static CUDA runtime.  The
dnl component links libcudart_static so it never clashes with the
dnl application's own runtime, and never links libcuda (it dlopens it).
AC_DEFUN([GPUCOLL_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda=DIR], [CUDA toolkit (default: /usr/local/cuda)])],
    [], [with_cuda=/usr/local/cuda])
  AS_IF([test "x$with_cuda" = xno], [AC_MSG_ERROR([coll/gpu needs CUDA: --without-cuda is not supported])])
  AS_IF([test "x$with_cuda" = xyes], [with_cuda=/usr/local/cuda])
  AC_ARG_WITH([nvcc-gencode],
    [AS_HELP_STRING([--with-nvcc-gencode=FLAGS],
      [nvcc -gencode flags (default: sm_80, sm_90 and compute_90 PTX)])],
    [NVCC_GENCODE=$withval],
    [NVCC_GENCODE="-gencode=arch=compute_80,code=sm_80 -gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_90,code=compute_90"])
  AC_SUBST([NVCC_GENCODE])
  AC_PATH_PROG([NVCC], [nvcc], [no], [$with_cuda/bin:$PATH])
  AS_IF([test "x$NVCC" = xno], [AC_MSG_ERROR([nvcc not found under $with_cuda/bin])])
  CUDA_CPPFLAGS="-I$with_cuda/include"
  CUDA_LIBDIR="$with_cuda/lib64"
  AS_IF([test -f "$CUDA_LIBDIR/libcudart_static.a"], [],
        [AC_MSG_ERROR([$CUDA_LIBDIR/libcudart_static.a not found])])
  save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"
  AC_CHECK_HEADER([cuda_runtime_api.h], [], [AC_MSG_ERROR([cuda_runtime_api.h not found in $with_cuda/include])])
  dnl NVTX 3 is header-only (it ships with the toolkit): ranges cost nothing
  dnl unless a tool injects itself at run time
  AC_ARG_ENABLE([nvtx], [AS_HELP_STRING([--disable-nvtx], [no NVTX ranges around collectives])],
    [], [enable_nvtx=yes])
  have_nvtx=no
  AS_IF([test "x$enable_nvtx" != xno],
        [AC_CHECK_HEADER([nvtx3/nvToolsExt.h], [have_nvtx=yes])])
  AS_IF([test "x$have_nvtx" = xyes], [NVTX_CPPFLAGS="-DGPUCOLL_HAVE_NVTX=1"],
        [NVTX_CPPFLAGS="-DGPUCOLL_HAVE_NVTX=0"])
  AC_SUBST([NVTX_CPPFLAGS])
  CPPFLAGS=$save_CPPFLAGS
  CUDA_STATIC_LIBS="$CUDA_LIBDIR/libcudart_static.a -ldl -lrt -lpthread"
  dnl test programs behave like applications: the shared runtime
  CUDA_APP_LIBS="-L$CUDA_LIBDIR -Wl,-rpath,$CUDA_LIBDIR -lcudart"
  AC_SUBST([CUDA_CPPFLAGS])
  AC_SUBST([CUDA_STATIC_LIBS])
  AC_SUBST([CUDA_APP_LIBS])
])

dnl Optional libraries for the topology and inter-node layers.
AC_DEFUN([GPUCOLL_CHECK_OPTIONAL], [
  AC_ARG_WITH([ucx], [AS_HELP_STRING([--with-ucx=DIR], [UCX for the inter-node transport (default: guess)])],
    [], [with_ucx=guess])
  AC_ARG_WITH([hwloc], [AS_HELP_STRING([--with-hwloc=DIR], [hwloc for topology discovery (default: guess)])],
    [], [with_hwloc=guess])
  have_ucx=no
  AS_IF([test "x$with_ucx" != xno], [
    AS_IF([test "x$with_ucx" != xguess && test "x$with_ucx" != xyes], [UCX_CPPFLAGS="-I$with_ucx/include"; UCX_LDFLAGS="-L$with_ucx/lib"])
    save_CPPFLAGS=$CPPFLAGS; CPPFLAGS="$CPPFLAGS $UCX_CPPFLAGS"
    AC_CHECK_HEADER([ucp/api/ucp.h], [have_ucx=yes])
    CPPFLAGS=$save_CPPFLAGS
    AS_IF([test "x$have_ucx" = xno && test "x$with_ucx" != xguess], [AC_MSG_ERROR([UCX requested but ucp/api/ucp.h not found])])
  ])
  have_hwloc=no
  AS_IF([test "x$with_hwloc" != xno], [
    AS_IF([test "x$with_hwloc" != xguess && test "x$with_hwloc" != xyes], [HWLOC_CPPFLAGS="-I$with_hwloc/include"; HWLOC_LDFLAGS="-L$with_hwloc/lib"])
    save_CPPFLAGS=$CPPFLAGS; CPPFLAGS="$CPPFLAGS $HWLOC_CPPFLAGS"
    AC_CHECK_HEADER([hwloc.h], [have_hwloc=yes])
    CPPFLAGS=$save_CPPFLAGS
    AS_IF([test "x$have_hwloc" = xno && test "x$with_hwloc" != xguess], [AC_MSG_ERROR([hwloc requested but hwloc.h not found])])
  ])
  AC_SUBST([UCX_CPPFLAGS]) AC_SUBST([UCX_LDFLAGS]) AC_SUBST([HWLOC_CPPFLAGS]) AC_SUBST([HWLOC_LDFLAGS])
  AM_CONDITIONAL([HAVE_UCX], [test "x$have_ucx" = xyes])
  AM_CONDITIONAL([HAVE_HWLOC], [test "x$have_hwloc" = xyes])
])
