#!/bin/bash
# Two GPUs (nvidia-h100-x2), this run's build (G):
#  1. issue 22: alltoall of 1 MiB per peer next to the ~20 us triad, the
#     default (one-shot resident kernel) against the launched exchange
#     kernel (coll_gpu_persist_max_bytes 524288), 3 alternating rounds;
#  2. test_gpu_mixed np 2 (8 B, 256 KiB) and the reliability suite np 2, 8 B;
#  3. host-buffer 8 B allreduce, host repeat route against no coll/gpu.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/s32_x2.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gnew}
base=$OMPI_MCA_mca_base_component_path
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path=$base:$G/.libs
. docs/results/scripts/host_ab_rounds.sh
M="mpirun --bind-to none -np 2"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -2
  for round in 1 2 3; do
    for v in oneshot launched; do
      [ $v = launched ] && x="--mca coll_gpu_persist_max_bytes 524288" || x=""
      echo "-- appbench round $round, $v"
      timeout 100 $M $x $G/test/bench/gpucoll_appbench -k 20 -w alltoall1m -r 5 -t 150 \
        --csv $OUT/a2a_${v}_r$round.csv 2>&1 | grep -E "alone|mpi|nccl|staged"
    done
  done
  for by in 8 262144; do
    echo "-- test_gpu_mixed np 2 $by B: $(timeout 300 $M --mca coll_gpu_timeout 8 \
      $G/test/gpu/test_gpu_mixed $by 2>&1 | grep -E "^FAIL|passed," | tail -4 | tr '\n' ' ')"
  done
  RELIABILITY_NP=2 RELIABILITY_SIZES=8 RELIABILITY_WATCHDOG=60 sh test/gpu/run_reliability.sh $G \
    > "$OUT/rel_x2.log" 2>&1
  echo "-- reliability np 2, 8 B, 2 GPUs: $(tail -1 "$OUT/rel_x2.log")"
  host_ab_rounds 8
} 2>&1 | tee "$OUT/s32_x2.log"
exit 0
