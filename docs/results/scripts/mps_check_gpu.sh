#!/bin/bash
# Under MPS, after direct_mem_gpu.sh MODE=mps: the 8 B-4 KiB allreduce with
# the resident kernel's leave policy (default) and without it
# (coll_gpu_persist_gap_us 0), alternating, one verbose run that counts the
# launches; test_gpu_direct with its warm-up; what the CUDA driver keeps of
# streams, events and allocations destroyed (test/bench/retain_probe.cu).
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/mps_check_gpu.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gcarry}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
M="mpirun --oversubscribe --bind-to none -x CUDA_MPS_PIPE_DIRECTORY"
{
  echo "-- retain probe, no MPS"; $G/retain_probe 1000
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1
  for round in 1 2; do
    for a in "" "--mca coll_gpu_persist_gap_us 0"; do
      echo "round $round ${a:-default}"
      timeout 60 $M -np 2 $a $G/test/bench/gpucoll_bench -c allreduce -b 8 -e 4096 --no-nccl -r 3 \
        2>&1 | grep -E "^ *[0-9]" | awk '{print "   " $1, $2}' | tr '\n' ' '; echo
    done
  done
  echo "verbose 10 (launch count):"
  timeout 60 $M -np 2 --mca coll_gpu_verbose 10 $G/test/bench/gpucoll_bench -c allreduce -b 8 -e 8 \
    --no-nccl -r 3 2>&1 | grep -E "persistent engine ran" | cut -c1-200
  for np in 2 4; do
    echo "== test_gpu_direct np $np (MPS)"
    timeout 120 $M -np $np $G/test/gpu/test_gpu_direct 2>&1 | tail -6
  done
  echo quit | nvidia-cuda-mps-control; sleep 1
} 2>&1 | tee "$OUT/mps_check.log"
