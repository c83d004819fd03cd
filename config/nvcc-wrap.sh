#!/bin/sh
# libtool drives compilers with gcc flags (-fPIC, -DPIC); nvcc wants host
# compiler flags behind -Xcompiler.  Usage: nvcc-wrap.sh NVCC ARGS...
nvcc=$1
shift
for a in "$@"; do
  shift
  case $a in
    -fPIC|-fpic|-fno-common|-pthread) set -- "$@" "-Xcompiler=$a" ;;
    *) set -- "$@" "$a" ;;
  esac
done
exec "$nvcc" "$@"
