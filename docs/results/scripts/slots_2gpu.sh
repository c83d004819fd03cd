#!/bin/bash
# 2x H100: bcast and reduce (one direction per pair) from 1 MiB under
# smaller exchange slots (more chunks per block), against the default.
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
for c in bcast reduce; do
  for s in 268435456 33554432 8388608; do
    echo "== $c xchg_scratch_bytes $s"
    timeout 60 $M -np 2 --mca coll_gpu_xchg_scratch_bytes $s $G/test/bench/gpucoll_bench -c $c -b 1048576 -e 1073741824 | tail -11
  done
done
