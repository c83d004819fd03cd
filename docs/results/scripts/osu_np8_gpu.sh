#!/bin/bash
# Ranks sharing one GPU, last run of the day:
#  1. Open MPI 5.0.9 (b5carry: this commit's component built against it):
#     unmodified OSU osu_allreduce -d cuda -c, np 2 and 4, no MPS (the issue's
#     "osu_allreduce np 4: 954 us");
#  2. Open MPI 4.1.4 (gcarry): 8 ranks on the GPU, no MPS: allreduce blocking
#     and nonblocking, test_gpu_direct; under MPS: allreduce and
#     test_gpu_allreduce --quick.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/osu_np8_gpu.sh $OUT
set -u
OUT=$1; G=$(pwd)/gcarry B5=$(pwd)/b5carry
BASE41=$OMPI_MCA_mca_base_component_path
M="mpirun --oversubscribe --bind-to none"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  (
    [ -x /opt/ompi5/bin/mpirun ] || tar -C /opt -xJf .ompi5/openmpi-5.0.9-debian12.tar.xz
    unset PMIX_MCA_mca_base_component_path PMIX_MCA_pcompress OMPI_MCA_btl_vader_single_copy_mechanism
    export OPAL_PREFIX=/opt/ompi5 PATH=/opt/ompi5/bin:$PATH
    export LD_LIBRARY_PATH=/opt/ompi5/lib:$LD_LIBRARY_PATH
    export OMPI_MCA_mca_base_component_path=/opt/ompi5/lib/openmpi:$B5/.libs
    for np in 2 4; do
      echo "== 5.0.9 osu_allreduce -d cuda -c np $np, no MPS"
      timeout 150 mpirun --oversubscribe --bind-to none -np $np "$B5/osu/osu_allreduce" -d cuda -c \
        -m 1:1048576 -i 100 -x 10 2>&1 | grep -vE "^#|^$" | awk '{print "   " $0}' | head -24
    done
  )
  export OMPI_MCA_mca_base_component_path=$BASE41:$G/.libs
  export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
  for a in "" --nonblocking; do
    echo "== 4.1 np 8 allreduce ${a:-blocking}, no MPS (us)"
    timeout 150 $M -np 8 $G/test/bench/gpucoll_bench -c allreduce -b 8 -e 16777216 --no-nccl -r 3 \
      -n 100 $a 2>&1 | grep -E "^ *[0-9]" | awk '{print "   " $1, $2}' | tr '\n' ' '; echo
  done
  echo "== test_gpu_direct np 8, no MPS: $(timeout 150 $M -np 8 $G/test/gpu/test_gpu_direct 120 2>&1 | tail -1)"
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1
  echo "== 4.1 np 8 allreduce under MPS (us)"
  timeout 120 $M -np 8 -x CUDA_MPS_PIPE_DIRECTORY $G/test/bench/gpucoll_bench -c allreduce -b 8 \
    -e 1048576 --no-nccl -r 3 -n 100 2>&1 | grep -E "^ *[0-9]" | awk '{print "   " $1, $2}' | tr '\n' ' '; echo
  echo "== test_gpu_allreduce np 8 --quick under MPS: $(timeout 150 $M -np 8 -x CUDA_MPS_PIPE_DIRECTORY \
    $G/test/gpu/test_gpu_allreduce --quick 2>&1 | tail -1)"
  echo quit | nvidia-cuda-mps-control; sleep 1
} 2>&1 | tee "$OUT/osu_np8.log"
