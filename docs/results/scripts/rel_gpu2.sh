#!/bin/bash
# Second reliability run's script (one GPU; repo root after ". .gpuhost/setup.sh";
# B = a build folder, OLD = the previous commit's build for A/B):
#   rel_gpu2.sh suites OUT   reliability suite np 2 and 4, without MPS and under MPS
#   rel_gpu2.sh regress OUT  the existing GPU suites; host-buffer and device fast-path A/B
set -u
what=$1; OUT=$2; B=${B:-$(pwd)/build}; OLD=${OLD:-}
mkdir -p "$OUT"
base=$OMPI_MCA_mca_base_component_path
export OMPI_MCA_mca_base_component_path="$base:$B/.libs"
mps_on() { export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog;
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; }
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; }
M="-x CUDA_MPS_PIPE_DIRECTORY --mca coll_gpu_paced 0 --mca coll_gpu_persist 1"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ "$what" = suites ]; then
  RELIABILITY_WATCHDOG=120 sh test/gpu/run_reliability.sh "$B" > "$OUT/reliability_plain.log" 2>&1
  tail -1 "$OUT/reliability_plain.log"; grep -E "^FAIL|no summary" "$OUT/reliability_plain.log" | head
  mps_on
  RELIABILITY_WATCHDOG=120 sh test/gpu/run_reliability.sh "$B" $M > "$OUT/reliability_mps.log" 2>&1
  mps_off
  tail -1 "$OUT/reliability_mps.log"; grep -E "^FAIL|no summary" "$OUT/reliability_mps.log" | head
else
  {
  for cfg in "test_gpu_colls 2" "test_gpu_colls 4" "test_gpu_allreduce 2" "test_gpu_allreduce 4" "test_gpu_persistent 2"; do
    set -- $cfg; echo "== $1 np $2, no MPS"
    timeout 300 mpirun --oversubscribe --bind-to none -np $2 "$B/test/gpu/$1" --quick 2>&1 | grep -E "FAIL|passed" | head -8
  done
  mps_on
  for cfg in "test_gpu_colls 2" "test_gpu_allreduce 2" "test_gpu_persistent 2"; do
    set -- $cfg; echo "== $1 np $2, MPS, paced 0 persist 1"
    timeout 300 mpirun --oversubscribe --bind-to none -np $2 $M "$B/test/gpu/$1" --quick 2>&1 | grep -E "FAIL|passed" | head -8
  done
  echo "== device allreduce fast path, MPS, resident kernel: previous commit (OLD) and this one, alternating"
  for round in 1 2; do
    for v in old new; do
      d=$B; [ $v = old ] && d=$OLD
      echo "-- $v round $round"
      OMPI_MCA_mca_base_component_path="$base:$d/.libs" timeout 120 mpirun --bind-to none -np 2 $M \
        "$B/test/bench/gpucoll_bench" -c allreduce -b 8 -e 4096 --no-nccl -r 5 2>&1 | grep -E "^ *[0-9]" | head -12
    done
  done
  mps_off
  echo "== host-buffer allreduce 8 B and 4 KiB, with and without coll/gpu, alternating"
  for round in 1 2 3; do
    for sel in "" "--mca coll ^gpu"; do
      for s in 8 4096; do
        echo "-- round $round ${sel:-with coll/gpu} $s B: $(mpirun --bind-to none -np 2 $sel "$B/test/bench/host_allreduce_lat" -s $s -n 50000 -r 7 2>&1 | tail -1)"
      done
    done
  done
  } 2>&1 | tee "$OUT/regress.log"
fi
