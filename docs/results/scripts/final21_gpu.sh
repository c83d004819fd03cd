#!/bin/bash
# Issue 21 closing figures: host-buffer 8 B allreduce with this build, the
# build before (c876f37) and without coll/gpu, alternating, 8 rounds, ranks
# bound to cores; the device fast path under MPS (2 ranks on GPU 0), old and
# new alternating, 3 more rounds.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/final21_gpu.sh $OUT
set -u
OUT=$1; NEW=${NEW:-$(pwd)/gnew}; OLD=${OLD:-$(pwd)/gcarry}
base=$OMPI_MCA_mca_base_component_path
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{
  echo "== host-buffer allreduce 8 B, 2 ranks bound to cores: new, old, no coll/gpu (median of 7 x 50000 calls)"
  for round in 1 2 3 4 5 6 7 8; do
    for sel in new old none; do
      case $sel in new) p=$base:$NEW/.libs; x="";; old) p=$base:$OLD/.libs; x="";; none) p=$base; x="--mca coll ^gpu";; esac
      echo "-- round $round $sel: $(OMPI_MCA_mca_base_component_path=$p timeout 60 mpirun --bind-to core -np 2 $x \
        "$NEW/test/bench/host_allreduce_lat" -s 8 -n 50000 -r 7 2>&1 | tail -1)"
    done
  done
  export CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1
  echo "== device allreduce under MPS, 2 ranks on GPU 0, old (c876f37) and new alternating (us)"
  for round in 4 5 6; do
    for v in old new; do
      [ $v = old ] && d=$OLD || d=$NEW
      echo "-- $v round $round"
      OMPI_MCA_mca_base_component_path=$base:$d/.libs timeout 60 mpirun --oversubscribe --bind-to none \
        -np 2 -x CUDA_MPS_PIPE_DIRECTORY "$d/test/bench/gpucoll_bench" -c allreduce -b 8 -e 4096 -r 3 \
        --no-nccl 2>&1 | grep -v "^#"
    done
  done
  echo quit | nvidia-cuda-mps-control; sleep 1
} 2>&1 | tee "$OUT/final21.log"
exit 0
