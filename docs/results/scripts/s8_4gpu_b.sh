#!/bin/bash
# Session 8, 4x H100, run B: libgpucoll's point-to-point enqueue after a refused CUDA IPC
# handle goes through host memory (the pair's bounce area): test_gpu_halo (buffers made
# again per size), test_mpix_p2p (realloc, nodes), test_mpix_stream, at np 2 and 4, and
# np 4 on 2 GPUs with and without MPS.
#   bash docs/results/scripts/s8_4gpu_b.sh OUTDIR     (repository root, gpurun/ = the build)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GPUCOLL_STREAM_VERBOSE=1
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH -x GPUCOLL_STREAM_VERBOSE -x CUDA_VISIBLE_DEVICES -x CUDA_MPS_PIPE_DIRECTORY"
mkdir -p $OUT
T0=$(date +%s)
gpus() { if [ $1 = 2 ]; then export CUDA_VISIBLE_DEVICES=0,1; else export CUDA_VISIBLE_DEVICES=0,1,2,3; fi; }
sum() { # log: the pass line, mapping errors, messages through host memory
  echo "$(grep -oE '(test_gpu_halo|test_mpix_p2p|test_mpix_stream): [0-9]+ passed, [0-9]+ failed' $1 | tail -1); $(grep -c 'already mapped\|invalid argument' $1) mapping errors; $(grep -c 'comes through host memory' $1) through host memory"
}
{
for np in 2 4; do gpus $np
  for mode in malloc mixed; do
    timeout 150 $M -np $np stdbuf -oL $G/test/gpu/test_gpu_halo $mode > $OUT/halo_${mode}_np$np.log 2>&1
    echo "test_gpu_halo $mode np $np: rc=$? $(sum $OUT/halo_${mode}_np$np.log)"
  done
  timeout 90 $M -np $np stdbuf -oL $G/test/mpi/test_mpix_p2p > $OUT/p2p_np$np.log 2>&1
  echo "test_mpix_p2p np $np: rc=$? $(sum $OUT/p2p_np$np.log)"
  timeout 90 $M -np $np stdbuf -oL $G/test/mpi/test_mpix_stream > $OUT/stream_np$np.log 2>&1
  echo "test_mpix_stream np $np: rc=$? $(sum $OUT/stream_np$np.log)"
done
echo "[$(( $(date +%s) - T0 )) s]"
# 4 ranks on 2 GPUs (two per GPU), without and with MPS
gpus 2
for mps in 0 1; do
  if [ $mps = 1 ]; then
    export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
    mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d
  fi
  timeout 150 $M -np 4 stdbuf -oL $G/test/gpu/test_gpu_halo malloc > $OUT/halo_shared_mps$mps.log 2>&1
  echo "test_gpu_halo malloc np 4 on 2 GPUs, MPS $mps: rc=$? $(sum $OUT/halo_shared_mps$mps.log)"
  timeout 90 $M -np 4 stdbuf -oL $G/test/mpi/test_mpix_p2p > $OUT/p2p_shared_mps$mps.log 2>&1
  echo "test_mpix_p2p np 4 on 2 GPUs, MPS $mps: rc=$? $(sum $OUT/p2p_shared_mps$mps.log)"
  if [ $mps = 1 ]; then echo quit | nvidia-cuda-mps-control; unset CUDA_MPS_PIPE_DIRECTORY; fi
done
echo "[$(( $(date +%s) - T0 )) s]"
} 2>&1 | tee $OUT/summary.txt
(cd $OUT && tar czf logs.tgz *.log && rm -f *.log)
