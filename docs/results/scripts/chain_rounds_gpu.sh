#!/bin/bash
# 4x H100: chains (bcast, reduce) with several chunks per block
# (GPU_XCHG_RELAY_ROUNDS).  Correctness with every bcast and reduce forced
# onto the chains (np 3, 4, 8), then each against its direct plan, 256 KiB
# to 1 GiB, so the thresholds can be read off.
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
CH="--mca coll_gpu_reduce_chain_min 1 --mca coll_gpu_bcast_chain_min 1"
NO="--mca coll_gpu_reduce_chain_min 17179869184 --mca coll_gpu_bcast_chain_min 17179869184"
T0=$(date +%s)
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
{
for np in 3 4 8; do
  t conform np $np, chains forced
  timeout 120 $M -np $np $CH $G/test/conform/test_conform --quick --only reduce 2>&1 | grep -E "FAIL|passed" | head -8
  timeout 120 $M -np $np $CH $G/test/conform/test_conform --quick --only bcast 2>&1 | grep -E "FAIL|passed" | head -8
done
t colls np 4, chains forced
timeout 120 $M -np 4 $CH $G/test/gpu/test_gpu_colls 2>&1 | grep -E "FAIL|passed" | head -8
} > $OUT/check.txt 2>&1
cat $OUT/check.txt
B="$G/test/bench/gpucoll_bench -b 262144 -e 1073741824"
{
for c in reduce bcast; do
  t $c 4 GPUs, chains always; timeout 120 $M -np 4 $CH $B -c $c
  t $c 4 GPUs, direct always; timeout 120 $M -np 4 $NO $B -c $c
done
t reduce 3 GPUs, chains always
timeout 120 env CUDA_VISIBLE_DEVICES=0,1,2 $M -np 3 -x CUDA_VISIBLE_DEVICES $CH $B -c reduce
t end
} > $OUT/bench.txt 2>&1
cat $OUT/bench.txt
