#!/bin/bash
# Reliability runs on a one-GPU host (repo root, after ". .gpuhost/setup.sh"):
#   rel_gpu.sh plain OUT   the suite with 2 ranks sharing the GPU, no MPS (host-paced)
#   rel_gpu.sh mps OUT     the suite under MPS with the kernels (paced 0, persist 1)
#   rel_gpu.sh regress OUT the existing GPU suites, 2 ranks, both ways
# RELIABILITY_NP etc. pass through to test/gpu/run_reliability.sh.
set -u
what=${1:-plain}
OUT=${2:-/tmp/out}
B=$(pwd)/build
mkdir -p "$OUT"
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
mps_on() {
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
  nvidia-cuda-mps-control -d && echo "MPS daemon started"
}
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; }
case $what in
plain)
  sh test/gpu/run_reliability.sh "$B" 2>&1 | tee "$OUT/reliability_plain.log" | tail -60 ;;
mps)
  mps_on
  sh test/gpu/run_reliability.sh "$B" -x CUDA_MPS_PIPE_DIRECTORY --mca coll_gpu_paced 0 \
    --mca coll_gpu_persist 1 2>&1 | tee "$OUT/reliability_mps.log" | tail -60
  mps_off ;;
regress)
  for cfg in "test_gpu_colls 2" "test_gpu_allreduce 2" "test_gpu_persistent 2" "test_gpu_colls 4"; do
    set -- $cfg
    echo "== $1 np $2 (no MPS: host-paced)"
    timeout 300 mpirun --oversubscribe --bind-to none -np $2 "$B/test/gpu/$1" --quick 2>&1 | grep -E "FAIL|passed|rank" | head -20
  done 2>&1 | tee "$OUT/regress_plain.log"
  mps_on
  for cfg in "test_gpu_colls 2" "test_gpu_allreduce 2" "test_gpu_persistent 2"; do
    set -- $cfg
    echo "== $1 np $2 (MPS: paced 0, persist 1)"
    timeout 300 mpirun --oversubscribe --bind-to none -np $2 -x CUDA_MPS_PIPE_DIRECTORY \
      --mca coll_gpu_paced 0 --mca coll_gpu_persist 1 "$B/test/gpu/$1" --quick 2>&1 | grep -E "FAIL|passed|rank" | head -20
  done 2>&1 | tee "$OUT/regress_mps.log"
  mps_off ;;
esac
