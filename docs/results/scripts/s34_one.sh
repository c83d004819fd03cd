#!/bin/bash
# 2026-11-26, one GPU (asked for nvidia-h200), this run's build (G, sm_90,
# carried):  PART perf: issue 22's ranks-sharing-a-GPU figures:
#   under MPS, defaults: 8 B-4 KiB allreduce, gpucoll_bench np 2 three runs,
#   unmodified OSU osu_allreduce -d cuda np 2 three runs, np 4 and 8, OSU -c;
#   without MPS: default against forced staging, np 2 / 4 / 8, blocking, and
#   the nonblocking form np 4;  stage_probe (8 bytes GPU<->host after a triad).
# PART rel: the reliability suite without MPS (np 2+4, 8 B) and under MPS
#   (np 2+4, 8 B + 256 KiB): the first GPU run of commits 5e4c6f3..ad5cca6.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/s34_one.sh $OUT perf|rel
set -u
OUT=$1; PART=$2; G=${G:-$(pwd)/gnew}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export CUDA_VISIBLE_DEVICES=0
M="mpirun --oversubscribe --bind-to none"
mps_on() { export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1; }
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; unset CUDA_MPS_PIPE_DIRECTORY; }
row() { grep -E "^ *[0-9]" | awk '{print $1 ":" $2}' | tr '\n' ' '; }
if [ "$PART" = perf ]; then {
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
  echo "== stage_probe"; timeout 60 $G/stage_probe 1000
  echo "== without MPS: allreduce us, default then forced staging (median of 3 loops)"
  for np in 2 4 8; do
    mx=16777216; [ $np = 8 ] && mx=1048576
    for sel in default staged; do
      x=""; [ $sel = staged ] && x="--mca coll_gpu_allreduce_algorithm staged"
      echo "-- np $np $sel: $(timeout 150 $M -np $np $x $G/test/bench/gpucoll_bench -c allreduce -b 8 \
        -e $mx -n 40 -r 3 --no-nccl --csv $OUT/nomps_np${np}_$sel.csv 2>&1 | row)"
    done
  done
  echo "-- np 4 nonblocking default: $(timeout 100 $M -np 4 $G/test/bench/gpucoll_bench -c allreduce -b 8 \
    -e 65536 -n 100 -r 3 --no-nccl --nonblocking 2>&1 | row)"
  echo "-- osu_allreduce -d cuda np 2 / 4: $(timeout 60 $M -np 2 $G/osu/osu_allreduce -d cuda -m 4:4096 \
    -i 2000 -x 200 2>&1 | grep -vE '^#|^$' | awk '{print $1 ":" $2}' | tr '\n' ' ') / $(timeout 60 \
    $M -np 4 $G/osu/osu_allreduce -d cuda -m 4:4096 -i 1000 -x 100 2>&1 | grep -vE '^#|^$' | \
    awk '{print $1 ":" $2}' | tr '\n' ' ')"
  mps_on; X="-x CUDA_MPS_PIPE_DIRECTORY"
  echo "== under MPS, defaults: allreduce us"
  for run in 1 2 3; do
    echo "-- gpucoll_bench np 2 run $run: $(timeout 60 $M -np 2 $X $G/test/bench/gpucoll_bench -c allreduce \
      -b 8 -e 4096 -r 3 -n 1000 --no-nccl 2>&1 | row)"
    echo "-- osu_allreduce -d cuda np 2 run $run: $(timeout 60 $M -np 2 $X $G/osu/osu_allreduce -d cuda \
      -m 4:4096 -i 5000 -x 500 2>&1 | grep -vE '^#|^$' | awk '{print $1 ":" $2}' | tr '\n' ' ')"
  done
  for np in 4 8; do
    echo "-- gpucoll_bench np $np: $(timeout 90 $M -np $np $X $G/test/bench/gpucoll_bench -c allreduce \
      -b 8 -e 4096 -r 3 -n 500 --no-nccl 2>&1 | row)"
  done
  echo "-- osu_allreduce -d cuda -c np 2: $(timeout 90 $M -np 2 $X $G/osu/osu_allreduce -d cuda -c \
    -m 4:1048576 -i 100 -x 10 2>&1 | grep -vE '^#|^$' | awk '{print $1 ":" $2 ":" $NF}' | tr '\n' ' ')"
  mps_off
} 2>&1 | tee "$OUT/s34_one_perf.log"; fi
if [ "$PART" = rel ]; then {
  nvidia-smi --query-gpu=name --format=csv,noheader | head -1
  RELIABILITY_NP="2 4" RELIABILITY_SIZES="8" RELIABILITY_WATCHDOG=60 \
    sh test/gpu/run_reliability.sh "$G" > "$OUT/rel_one_plain.log" 2>&1
  echo "reliability one GPU, no MPS: $(tail -1 "$OUT/rel_one_plain.log")"; grep -E "^FAIL" "$OUT/rel_one_plain.log" | head
  mps_on
  RELIABILITY_NP="2 4" RELIABILITY_SIZES="8 262144" RELIABILITY_WATCHDOG=60 \
    sh test/gpu/run_reliability.sh "$G" -x CUDA_MPS_PIPE_DIRECTORY > "$OUT/rel_one_mps.log" 2>&1
  echo "reliability one GPU, MPS: $(tail -1 "$OUT/rel_one_mps.log")"; grep -E "^FAIL" "$OUT/rel_one_mps.log" | head
  mps_off
} 2>&1 | tee "$OUT/s34_one_rel.log"; fi
exit 0
