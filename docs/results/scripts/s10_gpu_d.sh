#!/bin/bash
# 4x H100, session 10 d: test_mpix_types (datatypes with gaps on a CUDA
# stream, plain MPI_Init) at np 2 and 4 and across 2 virtual nodes, and 4
# ranks on 2 GPUs under MPS; test_gpu_mixed at np 8 (c/ timed out there)
# with the kind board's new message, at coll_gpu_timeout 4 and 30; the
# reliability suite on 2 GPUs at np 1 and 2 (8 B).
. .gpuhost/setup.sh
G=$PWD/gpurun
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
mkdir -p $OUT/d
T=$G/test/mpi/test_mpix_types
for np in 2 4; do
  timeout 120 $M -np $np $T > $OUT/d/types_np$np.log 2>&1
  echo "types np $np: rc=$? $(tail -1 $OUT/d/types_np$np.log)"
done
timeout 120 $M -np 4 --mca coll_gpu_virtual_nodes 2 $T > $OUT/d/types_np4_vn2.log 2>&1
echo "types np 4 vn2: rc=$? $(tail -1 $OUT/d/types_np4_vn2.log)"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
mkdir -p /tmp/mps /tmp/mpslog && nvidia-cuda-mps-control -d
CUDA_VISIBLE_DEVICES=0,1 timeout 120 $M -np 4 -x CUDA_VISIBLE_DEVICES -x CUDA_MPS_PIPE_DIRECTORY $T > $OUT/d/types_np4_2gpu_mps.log 2>&1
echo "types np 4 on 2 GPUs, MPS: rc=$? $(tail -1 $OUT/d/types_np4_2gpu_mps.log)"
echo quit | nvidia-cuda-mps-control
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
sleep 1
for tmo in 4 30; do
  t0=$(date +%s)
  timeout 100 $M -np 8 --mca coll_gpu_timeout $tmo $G/test/gpu/test_gpu_mixed mixed 8 > $OUT/d/mixed_np8_t$tmo.log 2>&1
  echo "mixed np 8 timeout $tmo: rc=$? $(( $(date +%s) - t0 )) s, $(grep -c ^PASS $OUT/d/mixed_np8_t$tmo.log) PASS, $(grep -c ^FAIL $OUT/d/mixed_np8_t$tmo.log) FAIL"
  grep -E "kept|timed out" $OUT/d/mixed_np8_t$tmo.log | head -4
done
CUDA_VISIBLE_DEVICES=0,1 RELIABILITY_NP="1 2" RELIABILITY_SIZES="8" RELIABILITY_WATCHDOG=120 \
  timeout 200 sh test/gpu/run_reliability.sh $G > $OUT/d/reliability_2gpu_np1_2.txt 2>&1
grep -E "^FAIL|watchdog|passed, .* failed$" $OUT/d/reliability_2gpu_np1_2.txt | tail -6
