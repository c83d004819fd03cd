#!/bin/bash
# 4x H100, session 14 h: the 4 x 1 virtual-node layout over UCX shared memory
# (e/-g/: per-channel network times of 0.2 to 7 ms for 256 KiB slices):
# eager messages instead of rendezvous (a rendezvous is answered only
# while the peer's channel progresses), the posix transport alone (no CMA),
# with 16 and 4 channels.  Allreduce 1-16 MiB.  Logs in $OUT/h/.
. .gpuhost/setup.sh; G=$PWD/gpurun
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
mkdir -p $OUT/h
M="mpirun --bind-to none --oversubscribe -np 4 -x LD_LIBRARY_PATH -x UCX_TLS --mca coll_gpu_virtual_nodes 4"
B="$G/test/bench/gpucoll_bench -n 5 -r 3 --no-nccl -c allreduce -b 1048576 -e 16777216"
x() { local tag=$1 tls=$2; shift 2; UCX_TLS=$tls timeout 90 $M "$@" $B > $OUT/h/$tag.log 2>&1; echo "$tag rc=$?"
  grep -E '^ +[0-9]+ ' $OUT/h/$tag.log | awk '{printf "%dK:%.0f ", $1/1024, $2}'; echo; }
EAGER="--mca coll_gpu_net_rndv_thresh 67108864"
x sm_ch16 sm,self
x sm_ch16_eager sm,self $EAGER
x sm_ch4_eager sm,self $EAGER --mca coll_gpu_net_channels 4
x posix_ch16 posix,self
x posix_ch4 posix,self --mca coll_gpu_net_channels 4
x sm_ch1 sm,self --mca coll_gpu_net_channels 1
