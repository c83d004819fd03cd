#!/bin/bash
# Under MPS, ranks sharing one GPU: larger allreduces (from 1 MiB for 2
# ranks, 128 KiB for 4, 8 KiB for 8) and every nonblocking one now run as
# one kernel of rank 0 over every rank's buffers. Latency against the
# previous choice (coll_gpu_shared_direct 0), the suites, the reliability
# suite; then Open MPI 5.0.9 with OSU osu_allreduce -d cuda -c, no MPS.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/mps_direct_gpu.sh $OUT
set -u
OUT=$1; G=$(pwd)/gcarry B5=$(pwd)/b5carry
BASE41=$OMPI_MCA_mca_base_component_path
export OMPI_MCA_mca_base_component_path=$BASE41:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
M="mpirun --oversubscribe --bind-to none -x CUDA_MPS_PIPE_DIRECTORY"
T() { # label, seconds, np, command...
  l=$1; s=$2; np=$3; shift 3; t0=$(date +%s.%N)
  o=$(timeout $s $M -np $np "$@" 2>&1); rc=$?
  printf '%-40s rc %3d %6.1f s  %s\n' "$l" $rc "$(awk -v a=$t0 -v b=$(date +%s.%N) 'BEGIN{print b-a}')" \
    "$(echo "$o" | grep 'passed,' | tail -1)"
  echo "$o" | grep -E "^FAIL|rror" | head -6
}
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1
  for np in 2 4 8; do
    for nb in "" --nonblocking; do
      for a in "" "--mca coll_gpu_shared_direct 0"; do
        [ $np = 8 ] && [ -n "$nb" ] && continue
        echo "MPS np $np ${nb:-blocking} ${a:-default}:"
        timeout 60 $M -np $np $a $G/test/bench/gpucoll_bench -c allreduce -b 8 -e 16777216 --no-nccl \
          -r 2 -n 50 $nb 2>&1 | grep -E "^ *[0-9]" | awk '{print "   " $1, $2}' | tr '\n' ' '; echo
      done
    done
  done
  for np in 2 4 8; do T "MPS test_gpu_direct np $np" 90 $np $G/test/gpu/test_gpu_direct 120; done
  for np in 2 4; do
    T "MPS test_gpu_allreduce np $np --quick" 90 $np $G/test/gpu/test_gpu_allreduce --quick
    T "MPS test_gpu_colls np $np --quick" 90 $np $G/test/gpu/test_gpu_colls --quick
    T "MPS test_gpu_mixed np $np 262144 B" 60 $np --mca coll_gpu_timeout 20 $G/test/gpu/test_gpu_mixed mixed 262144
  done
  echo "-- reliability suite (MPS, np 2 and 4, 8 B and 256 KiB)"
  RELIABILITY_NP="2 4" RELIABILITY_SIZES="8 262144" RELIABILITY_WATCHDOG=40 MPIRUN="mpirun -x CUDA_MPS_PIPE_DIRECTORY" \
    sh test/gpu/run_reliability.sh $G > "$OUT/rel_mps_direct.log" 2>&1
  grep -E "^FAIL" "$OUT/rel_mps_direct.log" | head; tail -1 "$OUT/rel_mps_direct.log"
  echo quit | nvidia-cuda-mps-control; sleep 1
  unset CUDA_MPS_PIPE_DIRECTORY
  (
    [ -x /opt/ompi5/bin/mpirun ] || tar -C /opt -xJf .ompi5/openmpi-5.0.9-debian12.tar.xz
    unset PMIX_MCA_mca_base_component_path PMIX_MCA_pcompress OMPI_MCA_btl_vader_single_copy_mechanism
    export OPAL_PREFIX=/opt/ompi5 PATH=/opt/ompi5/bin:$PATH
    export LD_LIBRARY_PATH=/opt/ompi5/lib:$LD_LIBRARY_PATH
    export OMPI_MCA_mca_base_component_path=/opt/ompi5/lib/openmpi:$B5/.libs
    for np in 2 4; do
      echo "== 5.0.9 osu_allreduce -d cuda -c np $np, no MPS"
      timeout 60 mpirun --oversubscribe --bind-to none -np $np "$B5/osu/osu_allreduce" -d cuda -c \
        -m 1:1048576 -i 100 -x 10 2>&1 | grep -vE "^#|^$|pmix|PMIx|----|directory|properly|Check to" | \
        awk '{print "   " $0}' | head -24
    done
  )
} 2>&1 | tee "$OUT/mps_direct.log"
