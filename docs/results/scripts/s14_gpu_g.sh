#!/bin/bash
# 4x H100, session 14 g: why the 4-GPU virtual-node layouts are slow (e/, f/):
# the 2-GPU layout of s11 (GPUs 0-1 as 2 virtual nodes) in the same session
# as a baseline, 4 x 1 with one channel (no channel threads contending),
# and 4 x 1 at 4 MiB with coll_gpu_verbose 20 (where each staged call's
# time went).  UCX sm, allreduce.  Logs in $OUT/g/.
. .gpuhost/setup.sh; G=$PWD/gpurun
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
mkdir -p $OUT/g
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH -x UCX_TLS -x CUDA_VISIBLE_DEVICES"
x() { local tag=$1; shift; UCX_TLS=sm,self timeout 90 "$@" > $OUT/g/$tag.log 2>&1; echo "$tag rc=$?"
  grep -E '^ +[0-9]+ ' $OUT/g/$tag.log | awk '{printf "%dK:%.0f ", $1/1024, $2}'; echo; }
B="$G/test/bench/gpucoll_bench -n 5 -r 3 --no-nccl -c allreduce"
CUDA_VISIBLE_DEVICES=0,1 x vn2_np2 $M -np 2 --mca coll_gpu_virtual_nodes 2 $B -b 1048576 -e 67108864
CUDA_VISIBLE_DEVICES=0,1,2,3 x vn4_ch1 $M -np 4 --mca coll_gpu_virtual_nodes 4 --mca coll_gpu_net_channels 1 $B -b 1048576 -e 16777216
CUDA_VISIBLE_DEVICES=0,1,2,3 x vn4_numa ${M/none/numa} -np 4 --mca coll_gpu_virtual_nodes 4 $B -b 1048576 -e 16777216
CUDA_VISIBLE_DEVICES=0,1,2,3 x vn4_verbose $M -np 4 --mca coll_gpu_virtual_nodes 4 --mca coll_gpu_verbose 20 \
  $G/test/bench/gpucoll_bench -n 3 -r 1 --no-nccl -c allreduce -b 4194304 -e 4194304
grep -c "" $OUT/g/vn4_verbose.log
