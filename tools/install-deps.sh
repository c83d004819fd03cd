#!/bin/sh
# Everything building and testing coll/gpu needs on Debian 12 (CUDA itself
# is expected at /usr/local/cuda).  Used by the README's setup command and
# by .ci/run, so that a fresh machine passes the test command.
#   install-deps.sh                 Debian packages (Open MPI 4.1, UCX, hwloc,
#                                   autotools, Lmod, Tcl) and Environment
#                                   Modules unpacked under /opt/envmodules
#   install-deps.sh --ompi5 [TARBALL [PREFIX]]
#                                   also Open MPI 5.0.9 (default: the tarball
#                                   in ../shared/ompi5, unpacked to /opt/ompi5)
set -e
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
here=$(cd "$(dirname "$0")/.." && pwd)
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq libopenmpi-dev openmpi-bin libucx-dev libhwloc-dev libibverbs-dev \
  autoconf automake libtool pkg-config make gcc g++ python3 lmod tcl >/dev/null
# Environment Modules conflicts with Lmod in Debian: its package is unpacked
# beside it so that both modulefile flavours can be tested
if [ ! -f /opt/envmodules/usr/lib/x86_64-linux-gnu/modulecmd.tcl ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -qq environment-modules && $SUDO mkdir -p /opt/envmodules &&
    $SUDO dpkg -x environment-modules_*.deb /opt/envmodules)
  rm -rf "$tmp"
fi
if [ "${1:-}" = --ompi5 ]; then
  tarball=${2:-$here/../shared/ompi5/openmpi-5.0.9-debian12.tar.xz}
  prefix=${3:-/opt/ompi5}
  [ -f "$tarball" ] || { echo "install-deps: Open MPI 5.0 tarball not found: $tarball" >&2; exit 1; }
  # its runtime needs from Debian (it was built against these)
  $SUDO apt-get install -y -qq libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7 libucx0 >/dev/null
  tmp=$(mktemp -d)
  tar -C "$tmp" -xJf "$tarball"
  $SUDO rm -rf "$prefix"
  $SUDO mkdir -p "$(dirname "$prefix")"
  $SUDO mv "$tmp/ompi5" "$prefix"
  rm -rf "$tmp"
  echo "install-deps: Open MPI $("$prefix/bin/mpicc" --showme:version 2>&1 | sed -n 's/.*Open MPI \([^ ]*\).*/\1/p') in $prefix (export PATH=$prefix/bin:\$PATH; elsewhere than /opt/ompi5 also OPAL_PREFIX=$prefix)"
fi
