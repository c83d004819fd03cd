#!/bin/sh
# The installed modulefiles, under Lmod and under Environment Modules:
# "make install" into a scratch prefix, load, check that Open MPI finds the
# component (ompi_info) with its own default path kept and the tools on
# PATH and its man pages on MANPATH (man's own search path kept), unload,
# check the environment is what it was.  Both with the variables unset and
# already set.  Usage: test_modulefiles.sh BUILDDIR lmod|tcl
# Lmod comes from Debian's lmod package; Environment Modules conflicts with
# it there, so its modulecmd.tcl is used from the unpacked Debian package
# (ENVMODULES_CMD, default /opt/envmodules/usr/lib/x86_64-linux-gnu/modulecmd.tcl).
B=$1
FLAVOR=$2
LMOD_CMD=${LMOD_CMD:-/usr/share/lmod/lmod/libexec/lmod}
ENVMODULES_CMD=${ENVMODULES_CMD:-/opt/envmodules/usr/lib/x86_64-linux-gnu/modulecmd.tcl}
case $FLAVOR in
  lmod) [ -x "$LMOD_CMD" ] || { echo "Lmod not installed ($LMOD_CMD)"; exit 1; } ;;
  tcl) [ -f "$ENVMODULES_CMD" ] || { echo "Environment Modules not found ($ENVMODULES_CMD)"; exit 1; } ;;
  *) echo "usage: $0 BUILDDIR lmod|tcl"; exit 2 ;;
esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
make -s -C "$B" install prefix="$tmp/prefix" > "$tmp/install.log" 2>&1 || { tail -20 "$tmp/install.log"; exit 1; }
P=$tmp/prefix
[ -f "$P/lib/openmpi/mca_coll_gpu.so" ] || { echo "component not installed under $P/lib/openmpi"; exit 1; }
[ -x "$P/bin/gpucoll_bench" ] || { echo "gpucoll_bench not installed"; exit 1; }
module() {   # the shell code a module command emits, run here
  if [ "$FLAVOR" = lmod ]; then
    eval "$("$LMOD_CMD" sh "$@" 2>"$tmp/err")"
  else
    eval "$(tclsh "$ENVMODULES_CMD" sh "$@" 2>"$tmp/err")"
  fi
}
if [ "$FLAVOR" = lmod ]; then export MODULEPATH=$P/share/modulefiles; else export MODULEPATH=$P/share/modulefiles-tcl; fi
# Lmod drops duplicate PATH entries on any change: compare without them
dedup() { echo "$1" | tr ':' '\n' | awk '!seen[$0]++' | paste -sd: -; }
fail() { echo "FAIL ($FLAVOR): $*"; cat "$tmp/err" 2>/dev/null; exit 1; }
default=$(ompi_info --parsable --param mca base --level 9 | sed -n 's/^mca:mca:base:param:mca_base_component_path:value://p' | tr -d '"')
for preset in unset set; do
  if [ $preset = set ]; then
    export OMPI_MCA_mca_base_component_path=$(echo "$default" | tr ':' '\n' | while read -r d; do [ -d "$d" ] && printf '%s:' "$d"; done | sed 's/:$//')
    export MANPATH=/usr/share/man
  else
    unset OMPI_MCA_mca_base_component_path MANPATH
  fi
  before_man=${MANPATH-UNSET}
  # what man finds on its own before the module (none where man is missing)
  sys_page=$(command -v man > /dev/null && man -w ls 2>/dev/null)
  before_path=$PATH
  before_var=${OMPI_MCA_mca_base_component_path-UNSET}
  module load gpucoll
  case ":$OMPI_MCA_mca_base_component_path:" in *":$P/lib/openmpi:"*) ;; *) fail "component folder not on the path after load ($preset): $OMPI_MCA_mca_base_component_path" ;; esac
  case "$PATH" in "$P/bin:"*) ;; *) fail "bindir not first on PATH" ;; esac
  ompi_info --param coll gpu --level 9 2>/dev/null | grep -q "MCA coll: gpu" || fail "ompi_info does not list coll gpu after load ($preset)"
  ompi_info 2>/dev/null | grep -q "MCA coll: tuned" || fail "Open MPI's own components lost after load ($preset)"
  command -v gpucoll_bench > /dev/null || fail "gpucoll_bench not found on PATH"
  case ":${MANPATH-}:" in *":$P/share/man:"*) ;; *) fail "man folder not on MANPATH after load ($preset): '${MANPATH-UNSET}'" ;; esac
  [ -f "$P/share/man/man3/MPIX_Allreduce_enqueue.3" ] || fail "MPIX_Allreduce_enqueue.3 not installed under $P/share/man"
  if command -v man > /dev/null; then
    for page in MPIX_Allreduce_enqueue MPIX_Stream_free gpucoll-topo gpucoll_bench; do
      case "$(man -w $page 2>/dev/null)" in "$P/share/man/"*) ;; *) fail "man -w $page does not find the installed page ($preset, MANPATH '$MANPATH')" ;; esac
    done
    [ -z "$sys_page" ] || [ "$(man -w ls 2>/dev/null)" = "$sys_page" ] || fail "man's own pages lost after load ($preset, MANPATH '$MANPATH')"
  fi
  # MPICH's stream extension: an unchanged MPICH program builds against the
  # installed header and library through pkg-config, and runs (no GPU here:
  # it says so); CPATH alone finds the header
  pkg-config --libs gpucoll 2>/dev/null | grep -q -- "-lgpucoll" || fail "pkg-config gpucoll not found after load ($preset)"
  echo '#include <mpix_gpu.h>' | ${CC:-cc} -E $(mpicc --showme:compile) - > /dev/null 2>&1 || fail "mpix_gpu.h not on CPATH after load"
  if [ $preset = unset ] && [ -d "${CUDA_HOME:-/usr/local/cuda}/include" ]; then
    cu=${CUDA_HOME:-/usr/local/cuda}
    mpicc "$(dirname "$0")/../../demo/mpix_enqueue_demo.c" -I"$cu/include" $(pkg-config --cflags --libs gpucoll) \
      -L"$cu/lib64" -Wl,-rpath,"$cu/lib64" -lcudart -o "$tmp/mpix_demo" 2> "$tmp/err" || fail "the MPICH-style demo does not build"
    ${MPIRUN:-mpirun} --oversubscribe -np 2 "$tmp/mpix_demo" 2>&1 | grep -q "no GPU present\|correct" || fail "the MPICH-style demo did not run"
  fi
  module unload gpucoll
  [ "${OMPI_MCA_mca_base_component_path-UNSET}" = "$before_var" ] || fail "component path not restored ($preset): '${OMPI_MCA_mca_base_component_path-UNSET}' vs '$before_var'"
  [ "$(dedup "$PATH")" = "$(dedup "$before_path")" ] || fail "PATH not restored: $PATH vs $before_path"
  [ "${MANPATH-UNSET}" = "$before_man" ] || fail "MANPATH not restored ($preset): '${MANPATH-UNSET}' vs '$before_man'"
  [ -z "${GPUCOLL_MANPATH_ADDED:-}" ] || fail "MANPATH marker variable left behind ($preset)"
  [ -z "${GPUCOLL_OMPI_DEFAULT_ADDED:-}" ] || fail "marker variable left behind"
done
echo "modulefile ($FLAVOR): load, ompi_info, unload restore the environment"
