#!/bin/sh
# Unmodified OSU osu_allreduce on host buffers, 8 B, with coll/gpu (a given
# component folder) and without it (--mca coll ^gpu), alternating; the test
# driver stands in for CUDA on a machine without a GPU.
# usage (in build/): osu_host_ab_cpu.sh ROUNDS OSU_DIR COMPONENT_DIR...
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
R=$1; O=$2; shift 2; SYS=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
one() { printf '%s ' "$1"; OMPI_MCA_mca_base_component_path=$SYS:$2 timeout 120 mpirun --bind-to core \
  -np 2 $3 -x LD_LIBRARY_PATH=$(pwd)/test/fake $O/osu_allreduce -m 8:8 -i 200000 -x 2000 2>&1 | awk '$1 == 8 {print $2}'; }
for i in $(seq $R); do
  one none $1 "--mca coll ^gpu"
  for d in "$@"; do one "$d" "$d" ""; done
  for d in "$@"; do one "$d" "$d" ""; done
  one none $1 "--mca coll ^gpu"
done
