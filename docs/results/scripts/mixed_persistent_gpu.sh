#!/bin/bash
# The rerun after the persistent fix (commit after 4a7c4c7): test_gpu_mixed
# on Open MPI 4.1.4 (np 2 and 4, 8 B and 256 KiB, without and under MPS)
# and 5.0.9 (np 2, 8 B, both ways), then the reliability suite under MPS.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/mixed_persistent_gpu.sh $OUT
set -u
OUT=$1
G=$(pwd)/gslim B5=$(pwd)/build5
BASE41=$OMPI_MCA_mca_base_component_path
mps_on() { export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog;
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1; }
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; unset CUDA_MPS_PIPE_DIRECTORY; }
X() { [ "$1" = mps ] && echo "-x CUDA_MPS_PIPE_DIRECTORY"; }
S="$OUT/summary.log"
mixed() { # label, build, log, nps, sizes, extra args
  for np in $4; do
    for by in $5; do
      t0=$(date +%s.%N)
      log=$(timeout 100 mpirun --oversubscribe --bind-to none -np $np --mca coll_gpu_timeout 20 $6 \
        "$2/test/gpu/test_gpu_mixed" mixed $by 2>&1); rc=$?
      t1=$(date +%s.%N)
      { echo "=== $1 np $np $by B rc $rc"; echo "$log"; } >> "$3"
      printf '%-14s np %d %7s B: rc %3d %6.1f s  %s\n' "$1" $np $by $rc \
        "$(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}')" "$(echo "$log" | grep 'passed,' | tail -1)"
      echo "$log" | grep -E "^FAIL|rror" | head -5
    done
  done
}
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo quit | nvidia-cuda-mps-control > /dev/null 2>&1; sleep 1
  export OMPI_MCA_mca_base_component_path=$BASE41:$G/.libs
  for mode in plain mps; do
    [ $mode = mps ] && mps_on
    mixed "4.1 $mode" "$G" "$OUT/mixed41.log" "2 4" "8 262144" "$(X $mode)"
    [ $mode = mps ] && mps_off
  done
  (
    [ -x /opt/ompi5/bin/mpirun ] || tar -C /opt -xJf .ompi5/openmpi-5.0.9-debian12.tar.xz
    unset PMIX_MCA_mca_base_component_path PMIX_MCA_pcompress OMPI_MCA_btl_vader_single_copy_mechanism
    export OPAL_PREFIX=/opt/ompi5 PATH=/opt/ompi5/bin:$PATH
    export LD_LIBRARY_PATH=/opt/ompi5/lib:$LD_LIBRARY_PATH
    export OMPI_MCA_mca_base_component_path=/opt/ompi5/lib/openmpi:$B5/.libs
    for mode in plain mps; do
      [ $mode = mps ] && mps_on
      mixed "5.0.9 $mode" "$B5" "$OUT/mixed50.log" "2" "8" "$(X $mode)"
      [ $mode = mps ] && mps_off
    done
  )
  mps_on
  echo "== reliability suite 4.1 mps: $(RELIABILITY_NP="2 4" RELIABILITY_SIZES="8 262144" RELIABILITY_WATCHDOG=60 \
    timeout 150 sh test/gpu/run_reliability.sh "$G" $(X mps) > "$OUT/rel_mps.log" 2>&1; tail -1 "$OUT/rel_mps.log")"
  grep -E "^FAIL" "$OUT/rel_mps.log" | head -12
  mps_off
} 2>&1 | tee "$S"
