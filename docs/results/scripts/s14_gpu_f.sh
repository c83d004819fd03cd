#!/bin/bash
# 4x H100, session 14 f (right after e/, same machine): the staged pipeline's
# channel count at the 4-GPU layouts: 4 ranks as 2 virtual nodes x 2 and 4 x 1,
# UCX sm, allreduce 1-64 MiB, coll_gpu_net_channels 2 / 4 / 8 (e/ ran the
# default 16).  Listings in $OUT/f/.
. .gpuhost/setup.sh; G=$PWD/gpurun
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
mkdir -p $OUT/f
for vn in 2 4; do for ch in 2 4 8; do
  echo "vn$vn ch$ch"
  UCX_TLS=sm,self timeout 60 mpirun --bind-to none --oversubscribe -np 4 -x LD_LIBRARY_PATH -x UCX_TLS \
    --mca coll_gpu_virtual_nodes $vn --mca coll_gpu_net_channels $ch $G/test/bench/gpucoll_bench \
    -n 5 -r 3 --no-nccl -c allreduce -b 1048576 -e 67108864 > $OUT/f/vn${vn}_ch$ch.log 2>&1
  echo rc=$?; grep -E '^ +[0-9]+ ' $OUT/f/vn${vn}_ch$ch.log | awk '{printf "%dK:%.0f ", $1/1024, $2}'; echo
done; done
