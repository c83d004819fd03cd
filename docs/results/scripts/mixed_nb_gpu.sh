#!/bin/bash
# Mixed memory kinds with nonblocking calls (queued until the peers' kinds
# are known, started in call order) on one GPU: test_gpu_mixed at 2 and 4
# ranks, 8 B, 256 KiB and 16 MiB, then the whole reliability suite, without
# and under MPS.
# Build machine: configure --with-nvcc-gencode="-gencode=arch=compute_90,code=sm_90";
# carry the build without object files as gslim.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/mixed_nb_gpu.sh $OUT
# (MODES, NPS, SIZES, REL=0, MIXED_TIMEOUT narrow it to fit one device call)
set -u
OUT=$1; B=${B:-$(pwd)/gslim}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$B/.libs
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mps_on() { export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog;
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; }
mps_off() { echo quit | nvidia-cuda-mps-control; sleep 1; }
mixed() { # label, extra mpirun args
  for np in ${NPS:-2 4}; do
    for by in ${SIZES:-8 262144 16777216}; do
      t0=$(date +%s.%N)
      log=$(timeout ${MIXED_TIMEOUT:-120} mpirun --oversubscribe --bind-to none -np $np --mca coll_gpu_timeout 20 $2 \
        "$B/test/gpu/test_gpu_mixed" mixed $by 2>&1); rc=$?
      t1=$(date +%s.%N)
      echo "$log" > "$OUT/mixed_$1_np${np}_${by}.log"
      printf '%-8s np %d %9s B: rc %3d %6.1f s  %s\n' "$1" $np $by $rc "$(awk -v a=$t0 -v b=$t1 'BEGIN{print b-a}')" \
        "$(echo "$log" | grep 'passed,' | tail -1)"
      echo "$log" | grep -E "^FAIL|rror" | head -5
    done
  done
}
rel() { # label, log, extra args
  echo "== reliability suite, $1: $(RELIABILITY_NP="2 4" RELIABILITY_SIZES="8 262144" RELIABILITY_WATCHDOG=60 \
    timeout ${REL_TIMEOUT:-250} sh test/gpu/run_reliability.sh "$B" $3 > "$OUT/$2" 2>&1; tail -1 "$OUT/$2")"
  grep -E "^FAIL" "$OUT/$2" | head -12
}
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo quit | nvidia-cuda-mps-control > /dev/null 2>&1; sleep 1   # one left by a killed run
  for mode in ${MODES:-plain mps}; do
    if [ $mode = mps ]; then
      mps_on
      mixed mps "-x CUDA_MPS_PIPE_DIRECTORY"
      [ "${REL:-1}" = 1 ] && rel "MPS (defaults)" reliability_mps.log "-x CUDA_MPS_PIPE_DIRECTORY"
      mps_off
    else
      mixed plain ""
      [ "${REL:-1}" = 1 ] && rel "no MPS" reliability_plain.log ""
    fi
  done
} 2>&1 | tee "$OUT/mixed_nb_gpu.log"
