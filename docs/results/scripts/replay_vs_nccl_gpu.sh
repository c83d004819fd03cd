#!/bin/bash
# 4x H100, one script: the MPICH-style demo's graph replay of an 8-byte
# MPIX_Allreduce_enqueue under plain MPI_Init against NCCL's graph replay of
# an 8-byte ncclAllReduce (gpucoll_bench --graph), np 2 (GPUs 0,1) and np 4
# (NPS="2" on a 2-GPU machine).
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH -x CUDA_VISIBLE_DEVICES"
for rep in 1 2; do
  for np in ${NPS:-2 4}; do
    if [ $np = 2 ]; then export CUDA_VISIBLE_DEVICES=0,1; else export CUDA_VISIBLE_DEVICES=0,1,2,3; fi
    echo "== np $np, round $rep"
    timeout 60 $M -np $np $G/demo/mpix_enqueue_demo 2>&1 | grep -E "replay|correct"
    timeout 60 $M -np $np $G/test/bench/gpucoll_bench -c allreduce -b 8 -e 8 --graph 2>&1 | tail -2
  done
done
