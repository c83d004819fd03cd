#!/bin/bash
# 4x H100: reduce folded along a chain ending at the root.  Correctness:
# the conformance programs with every reduce (and bcast) of more than one
# element forced onto the chains (chain minimum 1 byte), np 3, 4 and 8;
# speed: reduce on 4 and 3 GPUs with the chain from its default minimum
# against the direct plan (minimum 16 GiB), bcast without its chain.
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
CH="--mca coll_gpu_reduce_chain_min 1 --mca coll_gpu_bcast_chain_min 1"
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
t full conform np 4 default
timeout 150 $M -np 4 $G/test/conform/test_conform --quick 2>&1 | grep -E "FAIL|passed" | head -8
} > $OUT/check.txt 2>&1
cat $OUT/check.txt
{
t reduce 4 GPUs, chain from 512 KiB
timeout 120 $M -np 4 $G/test/bench/gpucoll_bench -c reduce -b 65536 -e 1073741824 --graph
t reduce 4 GPUs, direct only
timeout 120 $M -np 4 --mca coll_gpu_reduce_chain_min 17179869184 $G/test/bench/gpucoll_bench -c reduce -b 65536 -e 1073741824
t reduce 3 GPUs, chain from 512 KiB
timeout 120 env CUDA_VISIBLE_DEVICES=0,1,2 $M -np 3 -x CUDA_VISIBLE_DEVICES $G/test/bench/gpucoll_bench -c reduce -b 65536 -e 268435456
t bcast 4 GPUs, no chain
timeout 120 $M -np 4 --mca coll_gpu_bcast_chain_min 17179869184 $G/test/bench/gpucoll_bench -c bcast -b 65536 -e 1073741824
t alltoall 4 GPUs, beside the sweep before this change
timeout 120 $M -np 4 $G/test/bench/gpucoll_bench -c alltoall -b 65536 -e 1073741824
t end
} > $OUT/bench.txt 2>&1
cat $OUT/bench.txt
