#!/bin/bash
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
CH="--mca coll_gpu_reduce_chain_min 1 --mca coll_gpu_bcast_chain_min 1"
for np in 3 4; do
  timeout 90 $M -np $np $CH $G/test/conform/test_conform --quick --only reduce 2>&1 | grep -E "FAIL|passed" | head -4
  timeout 90 $M -np $np $CH $G/test/conform/test_conform --quick --only bcast 2>&1 | grep -E "FAIL|passed" | head -4
done
for c in reduce bcast; do
  timeout 60 $M -np 4 $G/test/bench/gpucoll_bench -c $c -b 67108864 -e 67108864 -n 10 --no-nccl | tail -1
done
