#!/bin/bash
# After enqueue_bulk_x2.sh: one launch for a 4 MiB allreduce (slot = 
# enqueue_bulk_bytes / (2 ranks)), the fold reading the rank's own input in
# place, up to 128 blocks of 32 KiB: test_gpu_enqueue on 2 GPUs and under
# MPS on one, and the --enqueue application benchmark; then the review
# rerun without MPS (review_gpu.sh WHERE=plain).
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/enqueue_bulk2_x2.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gcarry}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --oversubscribe --bind-to none"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
  echo "test_gpu_enqueue np 2, 2 GPUs: $(timeout 150 $M -np 2 $G/test/gpu/test_gpu_enqueue 2>&1 | grep -E '^FAIL|passed,' | tr '\n' ' ')"
  echo "-- appbench --enqueue, 2 GPUs"
  timeout 120 $M -np 2 $G/test/bench/gpucoll_appbench --enqueue -r 3 -t 150 --csv $OUT/appbench_enqueue.csv 2>&1 | grep -E "^ +[0-9]|alone"
  echo "-- gpucoll_bench: blocking allreduce 4 MiB, 2 GPUs, against NCCL"
  timeout 60 $M -np 2 $G/test/bench/gpucoll_bench -c allreduce -b 4194304 -e 4194304 -r 3 2>&1 | grep -E "^ *[0-9#]" | tail -2
} 2>&1 | tee "$OUT/enqueue_bulk2_x2.log"
WHERE=plain bash docs/results/scripts/review_gpu.sh $OUT
