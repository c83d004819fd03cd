#!/bin/bash
# Session 7, 4x H100, run A: conformance across 4 virtual nodes of one rank after 3137fd0 (an
# answer counted twice hung the first in-place gather); the spread bcast by writes (push, the
# new default) against the reading spread (coll_gpu_put_read 1) and NCCL in the same run, np 3
# and 4; test_gpu_put and the conformance test with the put path forced, both spreads.
#   bash docs/results/scripts/s7_4gpu_a.sh OUTDIR     (repository root, gpurun/ = the build)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --bind-to none -x LD_LIBRARY_PATH"
B=$G/test/bench/gpucoll_bench
FORCE="--mca coll_gpu_put_min 1 --mca coll_gpu_persist 0"
mkdir -p $OUT
T0=$(date +%s)
{
nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c
for vn in 4 2; do
  timeout 100 $M -np 4 --mca coll_gpu_virtual_nodes $vn --mca coll_gpu_timeout 10 $G/test/conform/test_conform --quick > $OUT/conform_np4_vn$vn.log 2>&1
  echo "conform np 4, $vn virtual nodes: rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/conform_np4_vn$vn.log | tail -1)"
  grep -h "^FAIL\|HANG" $OUT/conform_np4_vn$vn.log | head -5
done
echo "[$(( $(date +%s) - T0 )) s]"
for rd in 0 1; do for np in 3 4; do
  timeout 60 $M -np $np $FORCE --mca coll_gpu_put_read $rd $G/test/gpu/test_gpu_put > $OUT/put_np${np}_read$rd.log 2>&1
  echo "test_gpu_put np $np forced, put_read $rd: rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/put_np${np}_read$rd.log | tail -1)"
done; done
timeout 100 $M -np 4 $FORCE $G/test/conform/test_conform --quick > $OUT/conform_np4_forced.log 2>&1
echo "conform np 4, put path forced (push spread): rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/conform_np4_forced.log | tail -1)"
grep -h "^FAIL\|HANG" $OUT/conform_np4_forced.log | head -5
echo "[$(( $(date +%s) - T0 )) s]"
} 2>&1 | tee $OUT/summary.txt
for np in 4 3; do for rd in 0 1; do
  echo "== bcast np $np, coll_gpu_put_read $rd"
  timeout 90 $M -np $np --mca coll_gpu_put_read $rd $B -c bcast -b 262144 -e 268435456 2>&1 | grep -E "^ +[0-9]|size"
done; done > $OUT/bcast.txt 2>&1
awk '/^==/ || $1 >= 1048576' $OUT/bcast.txt | head -60
echo "[$(( $(date +%s) - T0 )) s]"
