#!/bin/bash
# One H200 (nvidia-h200), this run's build (G, sm_90, carried):
#  1. host-buffer 8 B allreduce with coll/gpu's host repeat route against no
#     coll/gpu, 8 alternating rounds, ranks bound to cores;
#  2. without MPS: test_gpu_mixed np 2 and 4 (the host repeat rows among them);
#  3. under MPS (issue 22: 2 ranks, 8 B allreduce <= 8 us, defaults):
#     gpucoll_bench and unmodified OSU osu_allreduce -d cuda (4.1 build), np 2
#     three times each, np 4 and 8 once, OSU with validation, test_gpu_mixed
#     np 2 and 4, the reliability suite np 2 at 8 B.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/s32_h200.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gnew}
base=$OMPI_MCA_mca_base_component_path
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CUDA_VISIBLE_DEVICES=0
export OMPI_MCA_mca_base_component_path=$base:$G/.libs
. docs/results/scripts/host_ab_rounds.sh
M="mpirun --oversubscribe --bind-to none"
mixed() { # label, mpirun args
  l=$1; shift
  for np in 2 4; do
    for by in 8 262144; do
      echo "-- $l test_gpu_mixed np $np $by B: $(timeout 300 $M -np $np --mca coll_gpu_timeout 8 "$@" \
        $G/test/gpu/test_gpu_mixed $by 2>&1 | grep -E "^FAIL|passed," | tail -4 | tr '\n' ' ')"
    done
  done
}
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
  host_ab_rounds 8
  echo "== without MPS"
  mixed nomps
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1
  X="-x CUDA_MPS_PIPE_DIRECTORY"
  echo "== under MPS, defaults: allreduce float sum, us"
  for run in 1 2 3; do
    echo "-- gpucoll_bench np 2 run $run: $(timeout 60 $M -np 2 $X $G/test/bench/gpucoll_bench -c allreduce \
      -b 8 -e 4096 -r 3 -n 1000 --no-nccl 2>&1 | grep -E "^ *[0-9]" | awk '{print $1 ":" $2}' | tr '\n' ' ')"
    echo "-- osu_allreduce -d cuda np 2 run $run: $(timeout 60 $M -np 2 $X $G/osu/osu_allreduce -d cuda \
      -m 4:4096 -i 5000 -x 500 2>&1 | grep -vE "^#|^$" | awk '{print $1 ":" $2}' | tr '\n' ' ')"
  done
  for np in 4 8; do
    echo "-- gpucoll_bench np $np: $(timeout 90 $M -np $np $X $G/test/bench/gpucoll_bench -c allreduce \
      -b 8 -e 4096 -r 3 -n 500 --no-nccl 2>&1 | grep -E "^ *[0-9]" | awk '{print $1 ":" $2}' | tr '\n' ' ')"
  done
  echo "-- osu_allreduce -d cuda -c np 2 (validation): $(timeout 90 $M -np 2 $X $G/osu/osu_allreduce -d cuda -c \
    -m 4:1048576 -i 100 -x 10 2>&1 | grep -vE "^#|^$" | awk '{print $1 ":" $2 ":" $NF}' | tr '\n' ' ')"
  mixed mps $X
  RELIABILITY_NP=2 RELIABILITY_SIZES=8 RELIABILITY_WATCHDOG=60 sh test/gpu/run_reliability.sh $G $X \
    > "$OUT/rel_mps.log" 2>&1
  echo "-- reliability np 2, 8 B, MPS: $(tail -1 "$OUT/rel_mps.log")"
  echo quit | nvidia-cuda-mps-control
} 2>&1 | tee "$OUT/s32_h200.log"
exit 0
