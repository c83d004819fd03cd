#!/bin/bash
# A CUDA-capable UCX for the inter-node path (issue 39): Debian's UCX 1.13 has
# no CUDA support, so device buffers between nodes are staged through pinned
# host memory.  This builds UCX from a source tree against the CUDA toolkit,
# installs it under a prefix, and makes a small carry-able copy (libuc*.so.0,
# lib/ucx modules, bin/ucx_info, stripped) that is picked at run time in place
# of Debian's: same soname (libucp.so.0) and a backward-compatible ABI, so
# nothing of ours is rebuilt:
#   LD_LIBRARY_PATH=$CARRY/lib:$LD_LIBRARY_PATH UCX_MODULE_DIR=$CARRY/lib/ucx
# (export both to the ranks with mpirun -x).
#   tools/build-ucx-cuda.sh UCX_SRC [PREFIX] [CARRY]
# UCX_SRC: a UCX 1.x (>= 1.20 knows CUDA 13) checkout; PREFIX default
# /work/ucx-cuda; CARRY default ./ucxcuda (ignored by git: .git/info/exclude).
# UCX's CUDA transports need nvml.h and libnvidia-ml at build time; where the
# toolkit has neither (no driver on the build machine), NVML_INCLUDE names a
# folder with nvml.h and a link-time stand-in libnvidia-ml.so.1 is made from
# its declarations: at run time the GPU host's driver provides the real one.
set -eu
SRC=${1:?usage: build-ucx-cuda.sh UCX_SRC [PREFIX] [CARRY]}
PREFIX=${2:-/work/ucx-cuda}
CARRY=${3:-$PWD/ucxcuda}
CUDA=${CUDA_HOME:-/usr/local/cuda}
BUILD=${BUILD:-$PREFIX.build}
JOBS=${JOBS:-2}
extra_cppflags="" extra_ldflags=""
if [ ! -f "$CUDA/include/nvml.h" ]; then
  inc=${NVML_INCLUDE:?no nvml.h in $CUDA/include: set NVML_INCLUDE to a folder holding one}
  stub=$BUILD/nvml-stub
  mkdir -p "$stub"
  # every nvml* function the header names (and the versioned names its
  # macros map to), each failing: only the soname and symbols matter here
  { grep -oE '\bnvml[A-Za-z0-9_]+ *\(' "$inc/nvml.h" | tr -d ' ('
    grep -oE '^ *#define +nvml[A-Za-z0-9_]+ +nvml[A-Za-z0-9_]+' "$inc/nvml.h" | awk '{print $2; print $3}'
  } | grep -v '_t$' | sort -u | sed 's/.*/int &(void) { return 999; }/' > "$stub/stub.c"
  gcc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o "$stub/libnvidia-ml.so.1" "$stub/stub.c"
  ln -sf libnvidia-ml.so.1 "$stub/libnvidia-ml.so"
  extra_cppflags="-I$inc" extra_ldflags="-L$stub"
fi
[ -x "$SRC/configure" ] || (cd "$SRC" && ./autogen.sh)
mkdir -p "$BUILD"
cd "$BUILD"
# -mt as Debian's; only the H100/H200 code for the perftest kernels
"$SRC/configure" --prefix="$PREFIX" --with-cuda="$CUDA" --without-rocm --without-java --without-go \
  --disable-doxygen-doc --enable-optimizations --disable-logging --disable-debug \
  --disable-assertions --disable-params-check --enable-mt \
  --with-nvcc-gencode="-gencode=arch=compute_90,code=sm_90" \
  ${extra_cppflags:+CPPFLAGS="$extra_cppflags"} ${extra_ldflags:+LDFLAGS="$extra_ldflags"} > configure.out
grep -E 'UCT modules|UCM modules' configure.out
make -j"$JOBS" > make.out
make install > install.out
# the carry-able copy: real files under their sonames (links may not travel)
rm -rf "$CARRY"
mkdir -p "$CARRY/lib/ucx" "$CARRY/bin"
for l in "$PREFIX"/lib/libuc*.so.0; do cp -L "$l" "$CARRY/lib/"; done
for m in "$PREFIX"/lib/ucx/lib*.so.0; do
  case $m in *perftest*) ;; *) cp -L "$m" "$CARRY/lib/ucx/" ;; esac
done
cp "$PREFIX/bin/ucx_info" "$CARRY/bin/"
strip --strip-unneeded "$CARRY"/lib/*.so.0 "$CARRY"/lib/ucx/*.so.0 "$CARRY/bin/ucx_info"
du -sh "$CARRY"
LD_LIBRARY_PATH=$CARRY/lib UCX_MODULE_DIR=$CARRY/lib/ucx "$CARRY/bin/ucx_info" -v | head -1
