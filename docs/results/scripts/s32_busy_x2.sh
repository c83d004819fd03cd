#!/bin/bash
# Large calls leave the resident kernel where any rank's application works
# between calls (coll_gpu_persist_busy_min_bytes, default 128 KiB; 0: the
# behaviour before), a GPU per rank:
#  1. the application loop next to the ~20 us and ~200 us triads, new and old
#     alternating; the engine's count of calls it left to launched kernels;
#  2. back to back (no application work): 64 KiB - 2 MiB, new and old;
#  3. test_gpu_mixed np 2 (its busy row: one rank sleeping between calls) at
#     8 B (also with the threshold at 8 B) and 256 KiB; the reliability suite
#     np 2 at 256 KiB.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/s32_busy_x2.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gnew}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --bind-to none -np 2"
cfg() { [ $1 = old ] && echo "--mca coll_gpu_persist_busy_min_bytes 0" || echo ""; }
{
  nvidia-smi --query-gpu=name --format=csv,noheader | head -1
  echo "== application loop"
  for k in 20 20 200; do
    for v in new old; do
      echo "-- appbench -k $k $v"
      timeout 150 $M $(cfg $v) $G/test/bench/gpucoll_appbench -k $k \
        -w allreduce8,alltoall1m,alltoall256k,allreduce1m -r 5 -t 120 --csv $OUT/busy_${v}_k${k}_$RANDOM.csv \
        2>&1 | grep -vE "^#" | grep -E " mpi | nccl "
    done
  done
  echo "-- engine counts, new, 20 us triad (verbose 10)"
  timeout 100 $M --mca coll_gpu_verbose 10 $G/test/bench/gpucoll_appbench -k 20 -w alltoall1m,allreduce1m \
    -r 2 -t 60 --no-nccl 2>&1 | grep -oE "rank [0-9]: persistent engine ran [0-9]+ calls \([^)]*\) with [0-9]+ launches"
  echo "== back to back, us (size:time)"
  for c in alltoall allreduce; do
    for v in new old new old; do
      echo "-- $c $v: $(timeout 60 $M $(cfg $v) $G/test/bench/gpucoll_bench -c $c -b 65536 \
        -e 2097152 -r 3 -n 200 --no-nccl 2>&1 | grep -E "^ *[0-9]" | awk '{print $1 ":" $2}' | tr '\n' ' ')"
    done
  done
  echo "== suites"
  for a in "8" "262144" "8 --mca coll_gpu_persist_busy_min_bytes 8"; do
    set -- $a; by=$1; shift
    echo "-- test_gpu_mixed np 2 $by B $*: $(timeout 300 $M --mca coll_gpu_timeout 8 "$@" \
      $G/test/gpu/test_gpu_mixed $by 2>&1 | grep -E "^FAIL|busy|passed," | tail -4 | tr '\n' ' ')"
  done
  RELIABILITY_NP=2 RELIABILITY_SIZES=262144 RELIABILITY_WATCHDOG=60 sh test/gpu/run_reliability.sh $G \
    > "$OUT/rel_busy_x2.log" 2>&1
  echo "-- reliability np 2, 256 KiB: $(tail -1 "$OUT/rel_busy_x2.log")"
} 2>&1 | tee "$OUT/s32_busy_x2.log"
exit 0
