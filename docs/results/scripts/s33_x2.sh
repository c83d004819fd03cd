#!/bin/bash
# 2026-11-25, 2 GPUs, the final engine of the busy-rule run (busy rule only where the
# launched kernels have their areas; sequence fix):
#  1. reliability suite np 2 and 4 (2 ranks per GPU), 8 B and 256 KiB;
#  2. application loop, default grid (20 and 200 us triads: allreduce 8 B,
#     allreduce 4 MiB, alltoall 1 MiB), busy rule on and off, alternating;
#  3. the engine's stamps of an 8 B allreduce in the 20 us loop (verbose 10).
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/s33_x2.sh $OUT [part]
set -u
OUT=$1; PART=${2:-all}; G=${G:-$(pwd)/gnew}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --bind-to none -np 2"
cfg() { [ $1 = off ] && echo "--mca coll_gpu_persist_busy_min_bytes 0" || echo ""; }
if [ "$PART" = all ] || [ "$PART" = rel ]; then
  nvidia-smi --query-gpu=name --format=csv,noheader
  RELIABILITY_NP="2 4" RELIABILITY_SIZES="8 262144" RELIABILITY_WATCHDOG=60 \
    sh test/gpu/run_reliability.sh "$G" > "$OUT/rel_x2.log" 2>&1
  echo "reliability x2: $(tail -1 "$OUT/rel_x2.log")"; grep -E "^FAIL" "$OUT/rel_x2.log" | head
fi
if [ "$PART" = all ] || [ "$PART" = app ]; then
  {
    for r in 1 2; do
      for v in on off; do
        echo "-- appbench round $r, busy rule $v"
        timeout 150 $M $(cfg $v) $G/test/bench/gpucoll_appbench -k 20,200 -r 3 -t 150 \
          --csv $OUT/grid_${v}_r$r.csv 2>&1 | grep -vE "^# (loop|appl)"
      done
    done
    echo "-- engine stamps, 8 B allreduce in the 20 us loop (verbose 10)"
    timeout 100 $M --mca coll_gpu_verbose 10 $G/test/bench/gpucoll_appbench -k 20 -w allreduce8 \
      -r 2 -t 100 --no-nccl 2>&1 | grep -E "persistent engine ran|mean us" | head -4
  } 2>&1 | tee "$OUT/s33_app_x2.log"
fi
exit 0
