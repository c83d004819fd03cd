#!/bin/sh
# GPU host: the allreduce suite and the suite of every other collective
# (blocking and nonblocking) with 2 ranks on 2 GPUs and 4 ranks on 2 GPUs,
# default selection and "--mca coll gpu" alone.
# Usage: run_gpu_tests.sh BUILDDIR [--quick].  Ends with "N passed, N failed".
B=${1:-$(pwd)}
Q=$2
MPIRUN=${MPIRUN:-mpirun}
case ":$OMPI_MCA_mca_base_component_path:" in
  *":$B/.libs:"*) ;;
  *) export OMPI_MCA_mca_base_component_path="${OMPI_MCA_mca_base_component_path:+$OMPI_MCA_mca_base_component_path:}$B/.libs" ;;
esac
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
pass=0; fail=0
for cfg in "test_gpu_allreduce 2" "test_gpu_allreduce 4" "test_gpu_allreduce 2 --mca coll gpu" \
           "test_gpu_allreduce 4 --mca coll_gpu_allreduce_algorithm twoshot" \
           "test_gpu_colls 2" "test_gpu_colls 4" "test_gpu_colls 2 --mca coll gpu" \
           "test_gpu_colls 4 --mca coll_gpu_bcast_chain_min 0" \
           "test_gpu_colls 2 --mca coll_gpu_xchg_split 1 --mca coll_gpu_xchg_nblocks 64"; do
  set -- $cfg
  prog=$1; np=$2; shift 2
  echo "== $prog np $np $*"
  out=$($MPIRUN --oversubscribe --bind-to none -np $np "$@" "$B/test/gpu/$prog" $Q 2>&1)
  echo "$out" | grep -E "FAIL|passed|SKIP|coll/gpu|rank" | head -40
  p=$(echo "$out" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\1/p' | tail -1)
  f=$(echo "$out" | sed -n 's/.*: \([0-9]*\) passed, \([0-9]*\) failed.*/\2/p' | tail -1)
  [ -n "$p" ] || { p=0; f=1; echo "(no summary: crashed)"; echo "$out" | tail -20; }
  pass=$((pass+p)); fail=$((fail+f))
done
# NVTX: every device collective is a range named after it, its size (the
# largest piece a rank moves: 512 KiB of a 1 MiB allgather on 2 ranks) and
# its algorithm (a recorder
# library stands in for nsys through NVTX_INJECTION64_PATH)
rec=$(mktemp -d)
NVTX_INJECTION64_PATH="$B/test/nvtx/libnvtx_recorder.so" NVTX_RECORD_FILE="$rec/nvtx" \
  $MPIRUN -x NVTX_INJECTION64_PATH -x NVTX_RECORD_FILE -np 2 \
  "$B/test/bench/gpucoll_bench" -c allgather -e 1048576 -n 5 --no-nccl > /dev/null 2>&1
NVTX_INJECTION64_PATH="$B/test/nvtx/libnvtx_recorder.so" NVTX_RECORD_FILE="$rec/nvtx" \
  $MPIRUN -x NVTX_INJECTION64_PATH -x NVTX_RECORD_FILE -np 2 \
  "$B/test/bench/gpucoll_bench" -c allreduce -e 1048576 -n 5 --no-nccl > /dev/null 2>&1
pushes=$(cat "$rec"/nvtx.* 2>/dev/null | grep -c "^push coll/gpu")
pops=$(cat "$rec"/nvtx.* 2>/dev/null | grep -c "^pop")
echo "== NVTX ranges: $pushes pushed, $pops popped"
cat "$rec"/nvtx.* 2>/dev/null | grep "^push" | sort | uniq -c | sort -rn | head -4
if [ "$pushes" -gt 0 ] && [ "$pushes" -eq "$pops" ] &&
   grep -q "^push coll/gpu allreduce 8 B one-shot" "$rec"/nvtx.* &&
   grep -q "^push coll/gpu allreduce 1048576 B two-shot" "$rec"/nvtx.* &&
   grep -q "^push coll/gpu allgather 524288 B exchange-copy" "$rec"/nvtx.*; then
  pass=$((pass+1)); echo "PASS NVTX ranges name the collective, size and algorithm"
else
  fail=$((fail+1)); echo "FAIL NVTX ranges"
fi
rm -rf "$rec"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
