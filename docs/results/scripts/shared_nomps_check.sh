#!/bin/bash
# After the change (small blocking allreduces stage when ranks share a GPU
# without MPS): the timing comparison again (shared_nomps.sh), the
# run_gpu_tests.sh checks of shared GPUs (4 ranks on this one GPU), and the
# reliability suite without MPS.
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/shared_nomps_check.sh $OUT
set -u
OUT=$1; B=${B:-$(pwd)/gslim}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bash docs/results/scripts/shared_nomps.sh "$OUT"
{
  echo "== run_gpu_tests.sh, shared-GPU checks only (4 ranks, one GPU, no MPS)"
  ONLY_SHARED=1 MPIRUN="timeout 120 mpirun" sh test/run_gpu_tests.sh "$B" 2>&1 | tail -4
  echo "== reliability suite, no MPS, defaults: $(RELIABILITY_NP="2 4" RELIABILITY_SIZES="8 262144" \
    RELIABILITY_WATCHDOG=60 timeout 300 sh test/gpu/run_reliability.sh "$B" > "$OUT/reliability_plain.log" 2>&1;
    tail -1 "$OUT/reliability_plain.log")"
  grep -E "^FAIL" "$OUT/reliability_plain.log" | head
  grep -A3 "== np 2 timeout 8 " "$OUT/reliability_plain.log" | head -5
} 2>&1 | tee "$OUT/shared_nomps_check.log"
