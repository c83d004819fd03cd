#!/bin/bash
# 4x H100: the conformance matrix on the session's final build (half
# precision types on by default, test_conform_alias, the chains' new
# defaults, libgpucoll's progress thread), and test_gpu_half (fp16/bf16
# against an fp32-accumulating host reference, 8 B-256 MiB) at np 2 and 4.
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
{
for np in 2 4; do
  echo "== test_gpu_half np $np"
  timeout 120 $M -np $np $G/test/gpu/test_gpu_half 2>&1 | grep -E "FAIL|passed|differ" | head -12
done
echo "== test_conform_alias np 2, 4"
timeout 60 $M -np 2 $G/test/conform/test_conform_alias 2>&1 | tail -1
timeout 60 $M -np 4 $G/test/conform/test_conform_alias 2>&1 | tail -1
} > $OUT/half.txt 2>&1
cat $OUT/half.txt
LIMIT=60 bash test/gpu/conform_gpu.sh $G $OUT/conf > /dev/null 2>&1
cp $OUT/conf/summary.txt $OUT/summary.txt; cp $OUT/conf/failures.txt $OUT/failures.txt 2>/dev/null
tar czf $OUT/conflogs.tgz -C $OUT/conf . && rm -rf $OUT/conf
cat $OUT/summary.txt; head -30 $OUT/failures.txt 2>/dev/null
