#!/bin/bash
# The one-shot launch (coll_gpu_persist_one_shot, default 1) against the
# whole resident kernel staying 3 us (0), next to a 20 us and a 200 us
# triad, a GPU per rank; the GPU suites with every call one-shot
# (coll_gpu_persist_gap_us 0.001: the application always "works between
# calls"); then the review rerun on 2 GPUs (review_gpu.sh WHERE=x2).
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/oneshot_x2.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gcarry}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none -np 2"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
  for round in 1 2; do
    for os in 1 0; do
      echo "-- appbench round $round, coll_gpu_persist_one_shot $os"
      timeout 100 $M --mca coll_gpu_persist_one_shot $os $G/test/bench/gpucoll_appbench -k 20,200 \
        -w allreduce8,alltoall1m -r 5 -t 100 --csv $OUT/oneshot${os}_r$round.csv 2>&1 | grep -E "alone|mpi|nccl"
    done
  done
  echo "-- stamps, one-shot, 20 us kernel"
  timeout 60 $M --mca coll_gpu_verbose 10 $G/test/bench/gpucoll_appbench -k 20 -w allreduce8 \
    -r 2 -t 100 --no-nccl 2>&1 | grep -E "persistent engine ran|allreduce8" | cut -c1-420
  echo "-- suites, every call one-shot (coll_gpu_persist_gap_us 0.001)"
  for t in "test_gpu_colls --quick" "test_gpu_allreduce --quick" "test_gpu_persistent --quick"; do
    printf '%-30s %s\n' "$t" "$(timeout 150 $M --mca coll_gpu_persist_gap_us 0.001 $G/test/gpu/$t 2>&1 \
      | grep -E '^FAIL|passed,' | head -5 | tr '\n' ' ')"
  done
} 2>&1 | tee "$OUT/oneshot_x2.log"
WHERE=x2 bash docs/results/scripts/review_gpu.sh $OUT
