#!/bin/bash
# 4x H100, session 11 b: test_mpix_types (datatypes with gaps on a CUDA
# stream, plain MPI_Init; point to point now packed on the application's
# stream) at np 2, 3 (CUDA IPC off) and 4, across 2 virtual nodes, under
# MPI_THREAD_MULTIPLE, and 4 ranks on 2 GPUs under MPS; then the staged
# inter-node pipeline over UCX sm (2 GPUs as 2 virtual nodes): where a
# 64 MiB allreduce's time goes (coll_gpu_verbose 20) at 8 and 16 channels and
# with the ring, and allreduce 1-64 MiB at 8 and 16 channels beside NCCL's
# SHM path in the same run.  Logs in $OUT/b.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
L=/tmp/s11b; rm -rf $L; mkdir -p $L
T=$G/test/mpi/test_mpix_types
t() { # tag limit args...
  local tag=$1 lim=$2 t0=$(date +%s); shift 2
  timeout $lim "$@" > $L/$tag.log 2>&1
  echo "$tag: rc=$? $(( $(date +%s) - t0 )) s, $(grep -c ^FAIL $L/$tag.log) FAIL lines; $(grep -E 'passed, [0-9]+ failed' $L/$tag.log | tail -1)"
}
t types_np2 60 $M -np 2 $T
t types_np4 60 $M -np 4 $T
t types_np3_noipc 60 $M -np 3 -x GPUCOLL_STREAM_IPC=0 $T
t types_np4_vn2 60 $M -np 4 --mca coll_gpu_virtual_nodes 2 $T
t types_np2_multiple 60 $M -np 2 $T multiple
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
mkdir -p /tmp/mps /tmp/mpslog && nvidia-cuda-mps-control -d
CUDA_VISIBLE_DEVICES=0,1 t types_np4_2gpu_mps 60 $M -np 4 -x CUDA_VISIBLE_DEVICES -x CUDA_MPS_PIPE_DIRECTORY $T
echo quit | nvidia-cuda-mps-control
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
grep -h "^FAIL\|rank [0-9]*: " $L/types_*.log | head -20
sleep 1
SM="env UCX_TLS=sm,self NCCL_P2P_DISABLE=1 NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0,1"
SMX="-x UCX_TLS -x NCCL_P2P_DISABLE -x NCCL_NVLS_ENABLE -x CUDA_VISIBLE_DEVICES --mca coll_gpu_virtual_nodes 2"
BN="$G/test/bench/gpucoll_bench -n 20 -r 3"
for cfg in "8 0" "16 0" "16 1" "16 2"; do
  set -- $cfg
  $SM timeout 40 $M -np 2 $SMX --mca coll_gpu_verbose 20 --mca coll_gpu_net_channels $1 --mca coll_gpu_net_algorithm $2 \
    $BN -n 5 -r 1 --no-nccl -c allreduce -b 67108864 -e 67108864 > $L/sm_v20_c$1_a$2.log 2>&1
  echo "verbose 20, $1 channels, algorithm $2: rc=$? $(grep -E '^ *67108864 ' $L/sm_v20_c$1_a$2.log | tr -s ' ')"
  grep -h "staged stage\|label\|hier" $L/sm_v20_c$1_a$2.log | grep -v "^\[.*mca" | tail -3 | cut -c1-400
done
for ch in 8 16; do
  $SM timeout 100 $M -np 2 $SMX --mca coll_gpu_net_channels $ch $BN -c allreduce -b 1048576 -e 67108864 > $L/sm_bench_c$ch.log 2>&1
  echo "bench, $ch channels: rc=$?"; grep -E '^ +[0-9]+ ' $L/sm_bench_c$ch.log
done
tar czf $OUT/b.tgz -C /tmp s11b
