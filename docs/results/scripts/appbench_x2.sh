#!/bin/bash
# Issue 22 item 2 with a GPU per rank (2 GPUs, the first time a 2-GPU kind
# was lent that day, little device time left): gpucoll_appbench with
# NCCL beside it, the resident kernel leaving between calls (default) and
# staying (coll_gpu_persist_gap_us 0); the small allreduce against NCCL.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/appbench_x2.sh $OUT
set -u
OUT=$1; G=$(pwd)/gcarry
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none -np 2"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "-- appbench, default"
  timeout 80 $M $G/test/bench/gpucoll_appbench -r 2 -t 150 --csv $OUT/appbench_x2_gap.csv 2>&1 | tail -3
  echo "-- appbench, coll_gpu_persist_gap_us 0"
  timeout 80 $M --mca coll_gpu_persist_gap_us 0 $G/test/bench/gpucoll_appbench -r 2 -t 150 \
    --csv $OUT/appbench_x2_stay.csv 2>&1 | tail -3
  echo "-- allreduce 8 B-64 KiB with NCCL"
  timeout 40 $M $G/test/bench/gpucoll_bench -c allreduce -b 8 -e 65536 -r 3 -n 500 2>&1 | grep -E "^ *[0-9#]" | head -16
} 2>&1 | tee $OUT/appbench_x2.log
