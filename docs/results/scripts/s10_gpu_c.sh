#!/bin/bash
# 4x H100, session 10 c: test_gpu_mixed at np 8 (2 ranks a GPU, no MPS) with
# its whole log (b/ saw an allreduce time out there), then the reliability
# suite on 2 GPUs (CUDA_VISIBLE_DEVICES=0,1) at np 3 and 4, and at np 4
# under MPS (8 B).
. .gpuhost/setup.sh
G=$PWD/gpurun
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
mkdir -p $OUT/c
timeout 100 mpirun --bind-to none --oversubscribe -np 8 --mca coll_gpu_timeout 4 \
  $G/test/gpu/test_gpu_mixed mixed 8 > $OUT/c/mixed_np8_8B.log 2>&1
echo "mixed np 8 8 B: rc=$? $(grep -c ^PASS $OUT/c/mixed_np8_8B.log) PASS, $(grep -c ^FAIL $OUT/c/mixed_np8_8B.log) FAIL"
export CUDA_VISIBLE_DEVICES=0,1
RELIABILITY_NP="3 4" RELIABILITY_SIZES="8 16777216" RELIABILITY_WATCHDOG=240 \
  timeout 330 sh test/gpu/run_reliability.sh $G > $OUT/c/reliability_2gpu_np3_4.txt 2>&1
grep -E "^FAIL|watchdog|passed, .* failed$" $OUT/c/reliability_2gpu_np3_4.txt | tail -8
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
mkdir -p /tmp/mps /tmp/mpslog && nvidia-cuda-mps-control -d
RELIABILITY_NP="4" RELIABILITY_SIZES="8" RELIABILITY_WATCHDOG=120 \
  timeout 150 sh test/gpu/run_reliability.sh $G -x CUDA_MPS_PIPE_DIRECTORY > $OUT/c/reliability_2gpu_np4_mps.txt 2>&1
echo quit | nvidia-cuda-mps-control
grep -E "^FAIL|watchdog|passed, .* failed$" $OUT/c/reliability_2gpu_np4_mps.txt | tail -8
