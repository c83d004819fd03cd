#!/bin/bash
# test_gpu_comm_memory with its second round (what the driver keeps of
# destroyed communicators is reused, not lost), 2 ranks on GPU 0 under MPS
# and without it, and with a GPU per rank.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/comm_memory_mps.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gcarry}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --oversubscribe --bind-to none -np 2"
C() { timeout 150 $M "$@" $G/test/gpu/test_gpu_comm_memory 100 1000 8 2>&1 | grep -E "MiB|FAIL|passed"; }
{
  echo "-- a GPU per rank"; C
  export CUDA_VISIBLE_DEVICES=0
  echo "-- GPU 0 shared, no MPS"; C
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1
  echo "-- GPU 0 shared, MPS"; C -x CUDA_MPS_PIPE_DIRECTORY
  echo quit | nvidia-cuda-mps-control; sleep 1
} 2>&1 | tee "$OUT/comm_memory_mps.log"
