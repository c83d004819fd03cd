#!/bin/bash
# After the review refactor (one block_meet for the allreduce kernels' and
# the bulk stream kernels' barriers, one call counter for the stream
# kernels, the rank-0 descriptor in one place): the allreduce and enqueue
# suites on 2 GPUs, then the reliability suite on GPU 0 under MPS and
# without it (2 and 4 ranks, 8 B and 256 KiB).
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/review_meet_gpu.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gcarry}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --oversubscribe --bind-to none"
S() { l=$1; np=$2; shift 2; printf '%-40s %s\n' "$l" "$(timeout 150 $M -np $np "$@" 2>&1 | grep -E '^FAIL|passed,' | head -5 | tr '\n' ' ')"; }
{
  S "test_gpu_allreduce --quick, 2 GPUs" 2 $G/test/gpu/test_gpu_allreduce --quick
  S "test_gpu_enqueue, 2 GPUs" 2 $G/test/gpu/test_gpu_enqueue
  export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1
  S "test_gpu_enqueue np 4, MPS" 4 -x CUDA_MPS_PIPE_DIRECTORY $G/test/gpu/test_gpu_enqueue
  RELIABILITY_NP="2 4" RELIABILITY_SIZES="8 262144" RELIABILITY_WATCHDOG=60 \
    sh test/gpu/run_reliability.sh $G -x CUDA_MPS_PIPE_DIRECTORY > "$OUT/rel_meet_mps.log" 2>&1
  echo "reliability, MPS: $(grep -E '^FAIL' $OUT/rel_meet_mps.log | head -5) $(tail -1 $OUT/rel_meet_mps.log)"
  echo quit | nvidia-cuda-mps-control; sleep 1
  RELIABILITY_NP="2 4" RELIABILITY_SIZES="8 262144" RELIABILITY_WATCHDOG=60 \
    sh test/gpu/run_reliability.sh $G > "$OUT/rel_meet_plain.log" 2>&1
  echo "reliability, no MPS: $(grep -E '^FAIL' $OUT/rel_meet_plain.log | head -5) $(tail -1 $OUT/rel_meet_plain.log)"
} 2>&1 | tee "$OUT/review_meet.log"
