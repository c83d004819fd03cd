#!/bin/bash
# The stream extension and the application benchmark on the GPU host, one
# GPU (2 ranks share it) or two; without MPS and under MPS.  NOT RUN YET
# (written when no device time was left).
#
# Build machine: ./configure --with-nvcc-gencode="-gencode=arch=compute_90,code=sm_90" && make -j2
# GPU host (carry .gpuhost and build):
#   . .gpuhost/setup.sh && bash docs/results/scripts/enqueue_app_gpu.sh $OUT
set -u
OUT=$1; B=${B:-$(pwd)/build}
mkdir -p "$OUT"
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
export LD_LIBRARY_PATH="$B/.libs:$LD_LIBRARY_PATH"
R="mpirun --oversubscribe --bind-to none -np 2"
mps_on() { export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog;
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; }
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; }
one() { # label, extra mpirun args
  echo "== $1"
  for np in 2 4; do
    echo "-- test_gpu_enqueue np $np: $(timeout 90 mpirun --oversubscribe --bind-to none -np $np $2 \
      "$B/test/gpu/test_gpu_enqueue" 2>&1 | grep -E "passed|FAIL" | tr '\n' ' ')"
  done
  echo "-- timeout: $(GPUCOLL_TEST_ENQUEUE=timeout timeout 60 $R $2 --mca coll_gpu_timeout 3 \
    "$B/test/gpu/test_gpu_enqueue" 2>&1 | grep -E "timeout:|passed|FAIL" | tr '\n' ' ')"
  echo "-- MPICH-style demo: $(timeout 60 $R $2 "$B/demo/mpix_enqueue_demo" 2>&1 | tail -2 | tr "\n" " ")"
  echo "-- application benchmark"
  timeout 150 $R $2 "$B/test/bench/gpucoll_appbench" -r 3 --csv "$OUT/appbench_$3.csv" 2>&1 | tail -14
}
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  one "no MPS" "" plain
  mps_on
  one "under MPS" "-x CUDA_MPS_PIPE_DIRECTORY" mps
  mps_off
} 2>&1 | tee "$OUT/enqueue_app_gpu.log"
