#!/bin/bash
# Session 8: test_gpu_halo malloc np 2 at 16 MiB: this build, this build without CUDA IPC
# (GPUCOLL_STREAM_IPC=0), and main's libgpucoll at 501d195 (gpurun/old/.libs)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs" CUDA_VISIBLE_DEVICES=0,1
mkdir -p $OUT
for v in new ipc0 old; do
  L=$G/.libs; I=1; [ $v = old ] && L=$G/old/.libs; [ $v = ipc0 ] && I=0
  GPUCOLL_STREAM_IPC=$I LD_LIBRARY_PATH=$L:$LD_LIBRARY_PATH timeout 45 mpirun --bind-to none -x LD_LIBRARY_PATH -x GPUCOLL_STREAM_IPC -x CUDA_VISIBLE_DEVICES --mca coll_gpu_timeout 8 -np 2 $G/test/gpu/test_gpu_halo malloc > $OUT/halo_$v.log 2>&1
  echo "$v: rc=$? $(grep -oE 'test_gpu_halo: [0-9]+ passed, [0-9]+ failed' $OUT/halo_$v.log) fails: $(grep -oE 'FAIL: halo exchange [0-9]+ B per message, [0-9]+ [a-z]+' $OUT/halo_$v.log | awk '{print $4 "/" $9}' | tr '\n' ' ') $(grep -m1 -oE 'waited [0-9]+ s for rank [0-9] \([^)]*\)' $OUT/halo_$v.log)"
done
