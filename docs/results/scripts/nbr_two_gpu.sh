#!/bin/bash
# 4x H100: neighbourhood pairs of two pieces (one call per 2x2 periodic
# halo instead of two): the benchmark against NCCL, allreduce beside it
# (the resident kernel's descriptor read changed), then the whole
# conformance matrix.  Run from the repository root with gpurun/ carried.
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
T0=$(date +%s)
t() { echo "[$(( $(date +%s) - T0 )) s] $*"; }
{
t neighbor_alltoall 2x2 periodic, 4 GPUs
timeout 150 $M -np 4 $G/test/bench/gpucoll_bench -c neighbor_alltoall -e 67108864
t allreduce 4 GPUs
timeout 60 $M -np 4 $G/test/bench/gpucoll_bench -c allreduce -e 1048576
t allreduce 2 GPUs
timeout 60 env CUDA_VISIBLE_DEVICES=0,1 $M -np 2 -x CUDA_VISIBLE_DEVICES $G/test/bench/gpucoll_bench -c allreduce -e 1048576
t done
} > $OUT/bench.txt 2>&1
cat $OUT/bench.txt
LIMIT=60 bash test/gpu/conform_gpu.sh $G $OUT/conf > /dev/null 2>&1
cp $OUT/conf/summary.txt $OUT/summary.txt; cp $OUT/conf/failures.txt $OUT/failures.txt 2>/dev/null
tar czf $OUT/conflogs.tgz -C $OUT/conf . && rm -rf $OUT/conf
cat $OUT/summary.txt; head -30 $OUT/failures.txt 2>/dev/null
t end
