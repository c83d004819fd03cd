#!/bin/bash
# Issue 22 on one GPU (ranks share it), one mode per call (the two do not
# fit one 600 s command):
#   MODE=plain: no MPS: the allreduce rank 0 runs for every rank (test,
#     latency against the previous choice), communicator memory, the
#     reliability suite and the regular suites.
#   MODE=mps: under MPS: communicator memory (the lazy large areas grow
#     here), the application benchmark with the resident kernel leaving
#     between calls (default) and staying (coll_gpu_persist_gap_us 0),
#     latency, the suites and the reliability suite.
# Build machine: configure --with-nvcc-gencode="-gencode=arch=compute_90,code=sm_90" in gslim.
# GPU host: . .gpuhost/setup.sh && MODE=plain bash docs/results/scripts/direct_mem_gpu.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gslim}; MODE=${MODE:-plain}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
X=""
if [ "$MODE" = mps ]; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1
  X="-x CUDA_MPS_PIPE_DIRECTORY"
fi
T() { # label, seconds, np, command...
  l=$1; s=$2; np=$3; shift 3; t0=$(date +%s.%N)
  o=$(timeout $s mpirun --oversubscribe --bind-to none -np $np $X "$@" 2>&1); rc=$?
  printf '%-44s rc %3d %6.1f s  %s\n' "$l" $rc "$(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{print b-a}')" \
    "$(echo "$o" | grep 'passed,' | tail -1)"
  echo "$o" | grep -E "^FAIL|free GPU|MiB more|rror|coll/gpu" | head -8
}
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "MODE=$MODE"
  T "test_gpu_direct np 2" 120 2 $G/test/gpu/test_gpu_direct
  T "test_gpu_direct np 4" 150 4 $G/test/gpu/test_gpu_direct 200
  echo "-- allreduce latency (us), np 2 then 4: default, then the previous choice"
  for np in 2 4; do
    for a in "" "--mca coll_gpu_shared_direct 0"; do
      [ "$MODE" = mps ] && [ -n "$a" ] && continue
      echo "np $np ${a:-default}"
      timeout 100 mpirun --oversubscribe --bind-to none -np $np $X $a $G/test/bench/gpucoll_bench \
        -c allreduce -b 8 -e 16777216 --no-nccl -r 3 -n 200 2>&1 | grep -E "^ *[0-9]" | awk '{print "   " $0}' | head -24
    done
  done
  T "comm memory 100 live, 10000 cycles" 240 2 $G/test/gpu/test_gpu_comm_memory 100 10000 8
  T "comm memory 1000 live" 200 2 $G/test/gpu/test_gpu_comm_memory 1000 0 8
  if [ "$MODE" = mps ]; then
    echo "-- application benchmark, default (leave between calls) then coll_gpu_persist_gap_us 0"
    timeout 150 mpirun --oversubscribe --bind-to none -np 2 $X $G/test/bench/gpucoll_appbench \
      -r 3 --csv "$OUT/appbench_mps_gap.csv" 2>&1 | tail -12
    timeout 150 mpirun --oversubscribe --bind-to none -np 2 $X --mca coll_gpu_persist_gap_us 0 \
      $G/test/bench/gpucoll_appbench -r 3 --csv "$OUT/appbench_mps_stay.csv" 2>&1 | tail -12
  else
    echo "-- application benchmark"
    timeout 150 mpirun --oversubscribe --bind-to none -np 2 $G/test/bench/gpucoll_appbench \
      -r 3 --csv "$OUT/appbench_plain.csv" 2>&1 | tail -12
  fi
  T "test_gpu_allreduce np 2 --quick" 120 2 $G/test/gpu/test_gpu_allreduce --quick
  T "test_gpu_allreduce np 4 --quick" 150 4 $G/test/gpu/test_gpu_allreduce --quick
  T "test_gpu_colls np 2 --quick" 120 2 $G/test/gpu/test_gpu_colls --quick
  echo "-- reliability suite ($MODE)"
  RELIABILITY_NP="2 4" RELIABILITY_SIZES="8 262144" RELIABILITY_WATCHDOG=60 MPIRUN="mpirun $X" \
    sh test/gpu/run_reliability.sh $G > "$OUT/rel_$MODE.log" 2>&1
  grep -E "^FAIL" "$OUT/rel_$MODE.log" | head; tail -1 "$OUT/rel_$MODE.log"
  [ "$MODE" = mps ] && { echo quit | nvidia-cuda-mps-control; sleep 1; }
} 2>&1 | tee "$OUT/direct_mem_$MODE.log"
