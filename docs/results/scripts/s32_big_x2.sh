#!/bin/bash
# The busy rule only where the launched path has its areas (a communicator
# that ran a large call): test_gpu_mixed at 256 KiB, then the application
# loop with the 4 MiB allreduce first (it grows the areas) and the 1 MiB
# alltoall, 20 us triad, the rule on and off.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/s32_big_x2.sh $OUT
set -u
OUT=$1; G=${G:-$(pwd)/gnew}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --bind-to none -np 2"
{
  echo "-- test_gpu_mixed np 2 262144 B: $(timeout 60 $M --mca coll_gpu_timeout 8 $G/test/gpu/test_gpu_mixed 262144 \
    2>&1 | grep -E '^FAIL|passed,' | tail -3 | tr '\n' ' ')"
  for v in "" "--mca coll_gpu_persist_busy_min_bytes 0"; do
    echo "-- appbench ${v:-default}"
    timeout 60 $M $v $G/test/bench/gpucoll_appbench -k 20 -w allreduce4m,alltoall1m -r 3 -t 100 \
      --no-nccl 2>&1 | grep -E " mpi "
  done
} 2>&1 | tee "$OUT/s32_big_x2.log"
exit 0
