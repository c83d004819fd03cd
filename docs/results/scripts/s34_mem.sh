#!/bin/bash
# 2026-11-26, one GPU (asked for nvidia-h200): issue 22's memory and
# application figures where 2 ranks share it, without MPS then under MPS:
# test_gpu_comm_memory (100 live communicators + 10000 dup/allreduce/free
# cycles; 1000 live), and under MPS the application benchmark (defaults).
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/s34_mem.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gnew}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export CUDA_VISIBLE_DEVICES=0
X=""
T() { # label, seconds, np, command...
  l=$1; s=$2; np=$3; shift 3; t0=$(date +%s.%N)
  o=$(timeout $s mpirun --oversubscribe --bind-to none -np $np $X "$@" 2>&1); rc=$?
  printf '%-44s rc %3d %6.1f s  %s\n' "$l" $rc "$(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{print b-a}')" \
    "$(echo "$o" | grep 'passed,' | tail -1)"
  echo "$o" | grep -E "^FAIL|free GPU|MiB|rror" | head -8
}
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1
  for mode in plain mps; do
    echo "== $mode"
    if [ $mode = mps ]; then
      export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
      mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1
      X="-x CUDA_MPS_PIPE_DIRECTORY"
    fi
    T "comm memory 100 live, 10000 cycles" 200 2 $G/test/gpu/test_gpu_comm_memory 100 10000 8
    T "comm memory 1000 live" 150 2 $G/test/gpu/test_gpu_comm_memory 1000 0 8
  done
  echo "-- application benchmark under MPS, 2 ranks on the GPU, defaults"
  timeout 150 mpirun --oversubscribe --bind-to none -np 2 $X $G/test/bench/gpucoll_appbench \
    -r 3 --csv "$OUT/appbench_mps.csv" 2>&1 | tail -12
  echo quit | nvidia-cuda-mps-control
} 2>&1 | tee "$OUT/s34_mem.log"
exit 0
