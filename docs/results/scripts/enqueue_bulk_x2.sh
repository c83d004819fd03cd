#!/bin/bash
# The bulk stream kernels (MPIX_Allreduce_enqueue above 64 KiB, every
# MPIX_Alltoall_enqueue) on 2 GPUs: test_gpu_enqueue (with its bulk
# section), the bulk timeout, the application benchmark in its default
# (blocking MPI) and --enqueue forms; then on GPU 0 shared by 2 and 4 ranks
# under MPS and without it (the stream kernels are off there: host path).
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/enqueue_bulk_x2.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gcarry}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --oversubscribe --bind-to none"
E() { # label, np, args...
  l=$1; np=$2; shift 2
  printf '%-44s %s\n' "$l" "$(timeout 150 $M -np $np "$@" 2>&1 | grep -E '^FAIL|passed,|timeout' | head -8 | tr '\n' ' ')"
}
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
  E "test_gpu_enqueue np 2, 2 GPUs" 2 $G/test/gpu/test_gpu_enqueue
  E "bulk timeout np 2, 2 GPUs" 2 --mca coll_gpu_timeout 3 $G/test/gpu/test_gpu_enqueue timeout 1048576
  echo "-- appbench (blocking MPI), 2 GPUs"
  timeout 120 $M -np 2 $G/test/bench/gpucoll_appbench -r 3 -t 150 --csv $OUT/appbench_mpi.csv 2>&1 | grep -E "^ +[0-9]|alone"
  echo "-- appbench --enqueue, 2 GPUs"
  timeout 120 $M -np 2 $G/test/bench/gpucoll_appbench --enqueue -r 3 -t 150 --csv $OUT/appbench_enqueue.csv 2>&1 | grep -E "^ +[0-9]|alone"
  export CUDA_VISIBLE_DEVICES=0
  E "test_gpu_enqueue np 2, one GPU, no MPS" 2 $G/test/gpu/test_gpu_enqueue
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1
  for np in 2 4; do
    E "test_gpu_enqueue np $np, one GPU, MPS" $np -x CUDA_MPS_PIPE_DIRECTORY $G/test/gpu/test_gpu_enqueue
  done
  E "bulk timeout np 2, one GPU, MPS" 2 -x CUDA_MPS_PIPE_DIRECTORY --mca coll_gpu_timeout 3 $G/test/gpu/test_gpu_enqueue timeout 1048576
  echo quit | nvidia-cuda-mps-control; sleep 1
} 2>&1 | tee "$OUT/enqueue_bulk_x2.log"
