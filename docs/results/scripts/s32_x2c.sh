#!/bin/bash
# Where the resident (one-shot) kernel should stop taking exchanges when the
# application works between calls (issue 22): back-to-back latency and the
# application loop next to the ~20 us triad, the default against smaller
# coll_gpu_persist_max_bytes / coll_gpu_persist_reduce_max_bytes, a GPU per rank.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/s32_x2c.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gnew}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --bind-to none -np 2"
cfg() { case $1 in def) echo "";; 256k) echo "--mca coll_gpu_persist_max_bytes 262144";;
        512k) echo "--mca coll_gpu_persist_max_bytes 524288";; esac; }
{
  nvidia-smi --query-gpu=name --format=csv,noheader | head -1
  echo "== back to back, us (size:time)"
  for round in 1 2; do
    for c in alltoall allgather allreduce; do
      for v in def 512k 256k; do
        echo "-- $c $v round $round: $(timeout 60 $M $(cfg $v) $G/test/bench/gpucoll_bench -c $c -b 65536 \
          -e 2097152 -r 3 -n 200 --no-nccl 2>&1 | grep -E "^ *[0-9]" | awk '{print $1 ":" $2}' | tr '\n' ' ')"
      done
    done
  done
  echo "== application loop, 20 us triad"
  for round in 1 2; do
    for v in def 256k; do
      echo "-- appbench $v round $round"
      timeout 150 $M $(cfg $v) $G/test/bench/gpucoll_appbench -k 20 -w alltoall1m,alltoall256k,allreduce1m \
        -r 5 -t 150 --csv $OUT/app_${v}_r$round.csv 2>&1 | grep -vE "^#" | tail -10
    done
  done
} 2>&1 | tee "$OUT/s32_x2c.log"
exit 0
