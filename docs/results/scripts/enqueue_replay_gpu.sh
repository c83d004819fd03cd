#!/bin/bash
# Graph replay time per step of an enqueued 8-byte allreduce (the MPICH-style
# demo's last line), 2 ranks on one GPU, without and under MPS.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/enqueue_replay_gpu.sh $OUT
set -u
OUT=$1; B=${B:-$(pwd)/gslim}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$B/.libs
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$B/.libs:${LD_LIBRARY_PATH:-}
echo quit | nvidia-cuda-mps-control > /dev/null 2>&1
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  for r in 1 2 3; do
    echo "-- no MPS, run $r: $(timeout 120 mpirun --bind-to none -np 2 "$B/demo/mpix_enqueue_demo" 2>&1 | tail -2 | tr '\n' ' ')"
  done
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d
  for r in 1 2 3; do
    echo "-- MPS, run $r: $(timeout 120 mpirun --bind-to none -np 2 -x CUDA_MPS_PIPE_DIRECTORY "$B/demo/mpix_enqueue_demo" 2>&1 | tail -2 | tr '\n' ' ')"
  done
  echo quit | nvidia-cuda-mps-control
} 2>&1 | tee "$OUT/enqueue_replay.log"
