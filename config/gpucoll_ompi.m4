dnl GPUCOLL_CHECK_OMPI: find Open MPI's devel headers and library, and make
dnl sure the headers describe the library we will be loaded into.
AC_DEFUN([GPUCOLL_CHECK_OMPI], [
  AC_ARG_WITH([ompi],
    [AS_HELP_STRING([--with-ompi=DIR], [Open MPI install prefix (default: ask mpicc)])],
    [], [with_ompi=guess])
  AC_ARG_WITH([ompi-component-dir],
    [AS_HELP_STRING([--with-ompi-component-dir=DIR],
      [install mca_coll_gpu.so here (default: LIBDIR/openmpi); give Open MPI's own component folder to need no environment])],
    [ompicompdir=$withval], [ompicompdir='${libdir}/openmpi'])
  AC_SUBST([ompicompdir])

  OMPI_INCDIRS=""
  OMPI_LIBDIRS=""
  AS_IF([test "x$with_ompi" = xguess || test "x$with_ompi" = xyes], [
    AC_PATH_PROG([MPICC], [mpicc], [no])
    AS_IF([test "x$MPICC" = xno], [AC_MSG_ERROR([mpicc not found: install Open MPI development files (Debian: libopenmpi-dev) or pass --with-ompi=DIR])])
    OMPI_INCDIRS=`$MPICC --showme:incdirs`
    OMPI_LIBDIRS=`$MPICC --showme:libdirs`
  ], [
    for d in "$with_ompi/include" "$with_ompi/lib/x86_64-linux-gnu/openmpi/include"; do
      AS_IF([test -f "$d/mpi.h"], [OMPI_INCDIRS="$d"])
    done
    for d in "$with_ompi/lib" "$with_ompi/lib64" "$with_ompi/lib/x86_64-linux-gnu/openmpi/lib" "$with_ompi/lib/x86_64-linux-gnu"; do
      AS_IF([test -f "$d/libmpi.so"], [OMPI_LIBDIRS="$OMPI_LIBDIRS $d"])
    done
    AS_IF([test -z "$OMPI_INCDIRS"], [AC_MSG_ERROR([no mpi.h under $with_ompi])])
  ])
  OMPI_CPPFLAGS=""
  for d in $OMPI_INCDIRS; do
    OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I$d"
    AS_IF([test -d "$d/openmpi"], [OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I$d/openmpi"])
  done
  OMPI_LDFLAGS=""
  for d in $OMPI_LIBDIRS; do OMPI_LDFLAGS="$OMPI_LDFLAGS -L$d -Wl,-rpath,$d"; done
  OMPI_LIBS="-lmpi -lopen-pal"

  save_CPPFLAGS=$CPPFLAGS; save_LDFLAGS=$LDFLAGS; save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $OMPI_CPPFLAGS"; LDFLAGS="$LDFLAGS $OMPI_LDFLAGS"; LIBS="$OMPI_LIBS $LIBS"
  dnl The release series picks the coll framework interface
  dnl (ompi_coll_gpu/coll_gpu_compat.h): 4.1 has component 2.0.0 with
  dnl module 2.3.0, 5.0 has 2.4.0 for both.  Anything else is refused
  dnl here rather than crashing at MPI_Init.
  AC_MSG_CHECKING([the Open MPI release of the headers])
  AC_COMPUTE_INT([ompi_series], [OMPI_MAJOR_VERSION * 100 + OMPI_MINOR_VERSION],
    [[#include <mpi.h>]], [ompi_series=0])
  ompi_major=`expr $ompi_series / 100`; ompi_minor=`expr $ompi_series % 100`
  AC_MSG_RESULT([$ompi_major.$ompi_minor])
  AS_CASE([$ompi_series],
    [401], [ompi_coll_check='mca_coll_base_component_2_0_0_t c; struct mca_coll_base_module_2_3_0_t m;'],
    [500], [ompi_coll_check='mca_coll_base_component_2_4_0_t c; struct mca_coll_base_module_2_4_0_t m;'],
    [AC_MSG_ERROR([Open MPI $ompi_major.$ompi_minor is not supported: coll/gpu builds against Open MPI 4.1.x and 5.0.x (found in $OMPI_INCDIRS)])])
  dnl Open MPI 5.0 installs devel headers without those of its threads
  dnl component, which opal_config.h names: add this project's shim
  dnl (compat/ompi5, layout checked by make check) when they are missing.
  OMPI_COMPAT_SHIM=no
  AS_IF([test "$ompi_series" = 500], [
    have_threads_hdr=no
    for d in $OMPI_INCDIRS; do
      AS_IF([test -f "$d/openmpi/opal/mca/threads/pthreads/threads_pthreads_mutex.h" ||
             test -f "$d/opal/mca/threads/pthreads/threads_pthreads_mutex.h"], [have_threads_hdr=yes])
    done
    AS_IF([test $have_threads_hdr = no], [
      gpucoll_abs_srcdir=`cd "$srcdir" && pwd`
      OMPI_CPPFLAGS="$OMPI_CPPFLAGS -I$gpucoll_abs_srcdir/compat/ompi5"
      CPPFLAGS="$CPPFLAGS -I$gpucoll_abs_srcdir/compat/ompi5"
      OMPI_COMPAT_SHIM=yes
      AC_MSG_NOTICE([Open MPI 5.0 headers lack opal/mca/threads/pthreads: using compat/ompi5])])])
  AM_CONDITIONAL([OMPI_COMPAT_SHIM], [test $OMPI_COMPAT_SHIM = yes])
  AM_CONDITIONAL([OMPI_SERIES_5], [test "$ompi_series" = 500])
  AC_CHECK_HEADER([ompi/mca/coll/coll.h], [],
    [AC_MSG_ERROR([Open MPI devel headers (ompi/mca/coll/coll.h) not found in $OMPI_INCDIRS; Debian ships them in libopenmpi-dev])],
    [#include "ompi_config.h"])
  AC_MSG_CHECKING([that the coll framework headers are those of Open MPI $ompi_major.$ompi_minor])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include "ompi_config.h"
#include "ompi/mca/coll/coll.h"]],
    [[$ompi_coll_check (void) c; (void) m;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no]); AC_MSG_ERROR([the coll framework in these Open MPI $ompi_major.$ompi_minor headers is not the one that release ships; are the devel headers complete?])])
  OMPI_SERIES="$ompi_major.$ompi_minor"
  AC_SUBST([OMPI_SERIES])
  AC_MSG_CHECKING([that libmpi is the Open MPI release of the headers])
  AC_RUN_IFELSE([AC_LANG_PROGRAM([[#include <stdio.h>
#include <string.h>
#include <mpi.h>]], [[
    char v[MPI_MAX_LIBRARY_VERSION_STRING], want[64]; int len;
    MPI_Get_library_version(v, &len);
    snprintf(want, sizeof(want), "Open MPI v%d.%d.", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION);
    FILE *f = fopen("conftest.ver", "w"); if (f) { fprintf(f, "%s", v); fclose(f); }
    return strncmp(v, want, strlen(want)) ? 1 : 0;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([the headers in $OMPI_INCDIRS are not from the libmpi in "$OMPI_LIBDIRS" (library says: `cat conftest.ver 2>/dev/null`); point --with-ompi at one installation])],
    [AC_MSG_RESULT([cross compiling: not checked])])
  CPPFLAGS=$save_CPPFLAGS; LDFLAGS=$save_LDFLAGS; LIBS=$save_LIBS
  AC_SUBST([OMPI_CPPFLAGS])
  AC_SUBST([OMPI_LDFLAGS])
  AC_SUBST([OMPI_LIBS])
  AC_PATH_PROG([MPIRUN], [mpirun], [mpirun], [$with_ompi/bin:$PATH])
  AC_PATH_PROG([OMPI_INFO], [ompi_info], [no], [$with_ompi/bin:$PATH])
  dnl Setting OMPI_MCA_mca_base_component_path replaces Open MPI's default
  dnl search path, so the modulefiles must put it back: ask ompi_info for
  dnl it and keep the folders that exist (a missing one stops the search).
  AC_MSG_CHECKING([Open MPI's default component folders])
  OMPI_DEFAULT_COMPONENT_PATH=""
  AS_IF([test "x$OMPI_INFO" != xno], [
    for d in `$OMPI_INFO --parsable --param mca base --level 9 2>/dev/null | sed -n 's/^mca:mca:base:param:mca_base_component_path:value://p' | tr -d '"' | tr ':' ' '`; do
      AS_IF([test -d "$d"], [OMPI_DEFAULT_COMPONENT_PATH="$OMPI_DEFAULT_COMPONENT_PATH${OMPI_DEFAULT_COMPONENT_PATH:+:}$d"])
    done])
  AS_IF([test -z "$OMPI_DEFAULT_COMPONENT_PATH"], [
    for d in $OMPI_LIBDIRS; do
      for c in "$d/openmpi" "$d/openmpi3"; do
        AS_IF([test -f "$c/mca_coll_basic.so"], [OMPI_DEFAULT_COMPONENT_PATH="$c"])
      done
    done])
  AC_MSG_RESULT([${OMPI_DEFAULT_COMPONENT_PATH:-unknown}])
  AS_IF([test -z "$OMPI_DEFAULT_COMPONENT_PATH"],
    [AC_MSG_WARN([Open MPI's component folder is unknown: the modulefiles will not restore it])])
  AC_SUBST([OMPI_DEFAULT_COMPONENT_PATH])
])
