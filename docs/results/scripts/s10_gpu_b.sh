#!/bin/bash
# 4x H100, session 10 b: the conformance matrix (test/gpu/conform_gpu.sh:
# 2 GPUs np 1-4 and np 3/4 under MPS, 4 GPUs np 4 full and np 8, the put
# path, mixed kinds, reuse, the timeout), then the reliability suite
# (test/gpu/run_reliability.sh) on 4 GPUs at np 4 and 8 (2 ranks a GPU).
. .gpuhost/setup.sh
G=$PWD/gpurun
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
LIMIT=60 bash test/gpu/conform_gpu.sh $G $OUT/b/conf > /dev/null 2>&1
cat $OUT/b/conf/summary.txt; head -30 $OUT/b/conf/failures.txt 2>/dev/null
RELIABILITY_NP="4 8" RELIABILITY_SIZES="8 16777216" RELIABILITY_WATCHDOG=120 \
  timeout 290 sh test/gpu/run_reliability.sh $G > $OUT/b/reliability_4gpu_np4_8.txt 2>&1
grep -E "^FAIL|passed, .* failed$" $OUT/b/reliability_4gpu_np4_8.txt | tail -12
