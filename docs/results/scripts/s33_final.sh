#!/bin/bash
# Final code of the 2026-11-25 mixed-kinds run (kind queries, status queries naming the missing
# rank, staged nonblocking requests bounded): 2 GPUs
#  1. test_gpu_mixed over 2 virtual nodes, np 2 and 4, 8 B and 256 KiB;
#  2. a peer that stops calling, across 2 virtual nodes, np 2 and 4;
#  3. the reliability suite np 2 and 4 at 8 B (its new rows included);
#  4. one GPU under MPS: test_gpu_mixed over 2 virtual nodes np 2 and the
#     timeout program np 2 across them.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/s33_final.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gnew}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GPUCOLL_TEST_TIMEOUT=4
V="--mca coll_gpu_virtual_nodes 2"
M="mpirun --oversubscribe --bind-to none --mca coll_gpu_timeout 4"
t() { # label np prog args... (extra mpirun args in X)
  local label=$1 np=$2; shift 2
  echo "-- $label np $np: $(timeout -k 5 60 $M -np $np $V ${X:-} $G/test/gpu/"$@" 2>&1 | tee -a $OUT/final_$label.log | \
    grep -E '^FAIL|passed,|error after' | tr '\n' ' ')"
}
{
  nvidia-smi --query-gpu=name --format=csv,noheader | head -1
  for np in 2 4; do for by in 8 262144; do t mixed_$by $np test_gpu_mixed mixed $by; done; done
  for np in 2 4; do t timeout $np test_gpu_reliability timeout 8; done
  RELIABILITY_NP="2 4" RELIABILITY_SIZES="8" RELIABILITY_WATCHDOG=60 sh test/gpu/run_reliability.sh "$G" \
    > $OUT/final_rel_x2.log 2>&1
  echo "reliability x2 8 B: $(tail -1 $OUT/final_rel_x2.log)"; grep -E "^FAIL" $OUT/final_rel_x2.log | head
  export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1
  X="-x CUDA_MPS_PIPE_DIRECTORY" t mps_mixed_8 2 test_gpu_mixed mixed 8
  X="-x CUDA_MPS_PIPE_DIRECTORY" t mps_timeout 2 test_gpu_reliability timeout 8
  echo quit | nvidia-cuda-mps-control; sleep 1
} 2>&1 | tee $OUT/s33_final.log
exit 0
