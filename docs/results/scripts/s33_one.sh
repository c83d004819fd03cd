#!/bin/bash
# 2026-11-25, ranks sharing GPU 0: the reliability suite np 2 and 4 without MPS
# (host-paced / rank-0 paths, 8 B) and under MPS (kernels, 8 B and 256 KiB).
# GPU host: . .gpuhost/setup.sh && bash docs/results/scripts/s33_one.sh $OUT [plain|mps|all]
set -u
OUT=$1; PART=${2:-all}; G=${G:-$(pwd)/gnew}
export OMPI_MCA_mca_base_component_path=$OMPI_MCA_mca_base_component_path:$G/.libs
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export CUDA_VISIBLE_DEVICES=0
if [ "$PART" = all ] || [ "$PART" = plain ]; then
  RELIABILITY_NP="2 4" RELIABILITY_SIZES="8" RELIABILITY_WATCHDOG=60 \
    sh test/gpu/run_reliability.sh "$G" > "$OUT/rel_one_plain.log" 2>&1
  echo "reliability one GPU, no MPS: $(tail -1 "$OUT/rel_one_plain.log")"; grep -E "^FAIL" "$OUT/rel_one_plain.log" | head
fi
if [ "$PART" = all ] || [ "$PART" = mps ]; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
  mkdir -p /tmp/mps /tmp/mpslog; nvidia-cuda-mps-control -d; sleep 1
  RELIABILITY_NP="2 4" RELIABILITY_SIZES="8 262144" RELIABILITY_WATCHDOG=60 \
    sh test/gpu/run_reliability.sh "$G" -x CUDA_MPS_PIPE_DIRECTORY > "$OUT/rel_one_mps.log" 2>&1
  echo "reliability one GPU, MPS: $(tail -1 "$OUT/rel_one_mps.log")"; grep -E "^FAIL" "$OUT/rel_one_mps.log" | head
  echo quit | nvidia-cuda-mps-control; sleep 1
fi
exit 0
