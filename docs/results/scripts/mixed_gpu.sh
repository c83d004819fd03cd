#!/bin/bash
# Mixed memory kinds across ranks (the kind board) on one GPU, 2 and 4 ranks
# sharing it: the reliability suite with test_gpu_mixed, without and under
# MPS; what the board costs a host-buffer program (8 B host allreduce with
# this build, the build before it and without coll/gpu, alternating) and
# the device fast path (resident kernel under MPS, before/after alternating).
# Build machine: configure --with-nvcc-gencode="-gencode=arch=compute_90,code=sm_90";
# carry the build without object files as gslim, the previous commit's as gslim_old.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/mixed_gpu.sh $OUT
set -u
OUT=$1; B=${B:-$(pwd)/gslim}; OLD=${OLD:-$(pwd)/gslim_old}
base=$OMPI_MCA_mca_base_component_path
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mps_on() { export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog;
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; }
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; }
rel() { # label, log, extra args
  echo "== reliability suite with mixed kinds, $1: $(OMPI_MCA_mca_base_component_path=$base:$B/.libs \
    RELIABILITY_NP="2 4" RELIABILITY_SIZES="8 262144" RELIABILITY_WATCHDOG=60 \
    timeout 280 sh test/gpu/run_reliability.sh "$B" $3 > "$OUT/$2" 2>&1; tail -1 "$OUT/$2")"
  grep -E "^(FAIL|== np [0-9] mixed)" "$OUT/$2" | head -12
}
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  rel "no MPS" reliability_mixed_plain.log ""
  echo "== host-buffer allreduce 8 B, 2 ranks: this build (new), previous (old), no coll/gpu (none)"
  for round in 1 2 3; do
    for sel in new old none; do
      case $sel in new) p=$base:$B/.libs; x="";; old) p=$base:$OLD/.libs; x="";; none) p=$base; x="--mca coll ^gpu";; esac
      echo "-- round $round $sel: $(OMPI_MCA_mca_base_component_path=$p timeout 60 mpirun --bind-to none -np 2 $x \
        "$B/test/bench/host_allreduce_lat" -s 8 -n 50000 -r 7 2>&1 | tail -1)"
    done
  done
  mps_on
  rel "MPS (defaults)" reliability_mixed_mps.log "-x CUDA_MPS_PIPE_DIRECTORY"
  echo "== device allreduce under MPS (resident kernel), old and new alternating"
  for round in 1 2 3; do
    for v in old new; do
      [ $v = old ] && d=$OLD || d=$B
      echo "-- $v round $round"
      OMPI_MCA_mca_base_component_path=$base:$d/.libs timeout 60 mpirun --oversubscribe --bind-to none \
        -np 2 -x CUDA_MPS_PIPE_DIRECTORY "$d/test/bench/gpucoll_bench" -c allreduce -b 8 -e 65536 -r 3 \
        --no-nccl 2>&1 | grep -v "^#"
    done
  done
  mps_off
} 2>&1 | tee "$OUT/mixed_gpu.log"
