#!/bin/bash
# Session 8: where test_gpu_halo (np 2) stands 30 s into its 16 MiB run (stacks of both ranks)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0,1 GPUCOLL_STREAM_VERBOSE=2
mkdir -p $OUT
timeout 50 mpirun --bind-to none -x LD_LIBRARY_PATH -x GPUCOLL_STREAM_VERBOSE -x CUDA_VISIBLE_DEVICES -np 2 $G/test/gpu/test_gpu_halo malloc > $OUT/halo_trace.log 2>&1 &
sleep 32
which gdb eu-stack 2>&1 | head -2
for p in $(pgrep -f "gpurun/test/gpu/test_gpu_halo"); do
  echo "== pid $p"; for t in /proc/$p/task/*; do echo "$(basename $t) $(cat $t/comm) $(cat $t/wchan)"; done
  if command -v gdb >/dev/null; then timeout 20 gdb -batch -p $p -ex "thread apply all bt 12" 2>/dev/null | grep -E "^Thread|^#" | head -80; fi
done > $OUT/stacks.txt 2>&1
wait
grep -n "16777216\|waited" $OUT/halo_trace.log | head
