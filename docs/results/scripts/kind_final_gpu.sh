#!/bin/bash
# Rerun after the review of the kind-check change (the LL call number is
# consumed once per engine call; a board the host cannot read drops the
# call like a host peer): test_gpu_mixed on 2 GPUs and under MPS on GPU 0
# (np 4), the reliability suite on 2 GPUs (np 2).
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/kind_final_gpu.sh $OUT
set -u
OUT=$1; NEW=${NEW:-$(pwd)/gnew}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$NEW/.libs
M="mpirun --oversubscribe --bind-to none --mca coll_gpu_timeout 4"
{
  for by in 8 262144; do
    echo "-- 2 GPUs np 2 mixed $by B: $(timeout 120 $M -np 2 $NEW/test/gpu/test_gpu_mixed $by 2>&1 | grep -E '^FAIL|passed,' | tr '\n' ' ')"
  done
  RELIABILITY_NP=2 RELIABILITY_SIZES="8 262144" RELIABILITY_WATCHDOG=60 \
    timeout 200 sh test/gpu/run_reliability.sh $NEW > "$OUT/rel_final_x2.log" 2>&1
  echo "-- reliability suite, 2 GPUs, np 2: $(grep -E '^FAIL' "$OUT/rel_final_x2.log" | head -3) $(tail -1 "$OUT/rel_final_x2.log")"
  export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1
  echo "-- MPS np 4 mixed 8 B: $(timeout 120 $M -np 4 -x CUDA_MPS_PIPE_DIRECTORY $NEW/test/gpu/test_gpu_mixed 8 2>&1 | grep -E '^FAIL|passed,' | tr '\n' ' ')"
  echo quit | nvidia-cuda-mps-control; sleep 1
} 2>&1 | tee "$OUT/kind_final.log"
exit 0
