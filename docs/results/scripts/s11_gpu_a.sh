#!/bin/bash
# 4x H100, session 11 a: test_mpix_types (datatypes with gaps on a CUDA
# stream, plain MPI_Init, point to point now packed on the application's
# stream) at np 2, 3 (CUDA IPC off) and 4, across 2 virtual nodes, under
# MPI_THREAD_MULTIPLE, and 4 ranks on 2 GPUs under MPS; the staged
# inter-node pipeline over UCX sm (2 GPUs as 2 virtual nodes) with its
# per-call breakdown (coll_gpu_verbose 20) and a sweep of slice size, slices
# in flight and channels at 64 MiB; test_gpu_mixed at np 8 (coll_gpu_timeout
# 30); the reliability suite on 2 GPUs at np 1 and 2 (8 B).
. .gpuhost/setup.sh
G=$PWD/gpurun
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
mkdir -p $OUT/a
T=$G/test/mpi/test_mpix_types
t() { # tag limit args...
  local tag=$1 lim=$2; shift 2
  timeout $lim "$@" > $OUT/a/$tag.log 2>&1
  echo "$tag: rc=$? $(grep -c ^FAIL $OUT/a/$tag.log) FAIL lines; $(tail -1 $OUT/a/$tag.log)"
}
t types_np2 90 $M -np 2 $T
t types_np4 90 $M -np 4 $T
t types_np3_noipc 90 $M -np 3 -x GPUCOLL_STREAM_IPC=0 $T
t types_np4_vn2 90 $M -np 4 --mca coll_gpu_virtual_nodes 2 $T
t types_np2_multiple 90 $M -np 2 $T multiple
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
mkdir -p /tmp/mps /tmp/mpslog && nvidia-cuda-mps-control -d
CUDA_VISIBLE_DEVICES=0,1 t types_np4_2gpu_mps 90 $M -np 4 -x CUDA_VISIBLE_DEVICES -x CUDA_MPS_PIPE_DIRECTORY $T
echo quit | nvidia-cuda-mps-control
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
sleep 1
# the staged pipeline over UCX sm, 2 GPUs as 2 virtual nodes
SM="env UCX_TLS=sm,self NCCL_P2P_DISABLE=1 NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0,1"
SMX="-x UCX_TLS -x NCCL_P2P_DISABLE -x NCCL_NVLS_ENABLE -x CUDA_VISIBLE_DEVICES --mca coll_gpu_virtual_nodes 2"
BN="$G/test/bench/gpucoll_bench -n 20 -r 3"
$SM timeout 120 $M -np 2 $SMX $BN -c allreduce -b 65536 -e 67108864 > $OUT/a/sm_default.log 2>&1
echo "sm default: rc=$?"; grep -vE '^\[|^ *$|coll/gpu' $OUT/a/sm_default.log | tail -14
$SM timeout 60 $M -np 2 $SMX --mca coll_gpu_verbose 20 $BN -n 5 -r 1 --no-nccl -c allreduce -b 67108864 -e 67108864 > $OUT/a/sm_v20.log 2>&1
echo "sm verbose 20: rc=$?"; grep "staged stage" $OUT/a/sm_v20.log | tail -4
for cfg in "1048576 8 8" "2097152 8 8" "8388608 4 8" "16777216 4 8" "4194304 8 8" "4194304 16 8" \
           "4194304 4 16" "2097152 16 16" "1048576 16 16" "4194304 4 4" "2097152 8 4"; do
  set -- $cfg
  $SM timeout 60 $M -np 2 $SMX --mca coll_gpu_net_slot_bytes $1 --mca coll_gpu_net_slots $2 \
    --mca coll_gpu_net_channels $3 $BN --no-nccl -c allreduce -b 16777216 -e 67108864 > $OUT/a/sm_s$1_k$2_c$3.log 2>&1
  echo "sm slot $1 slots $2 channels $3: rc=$? $(grep -E '^ *(16777216|67108864) ' $OUT/a/sm_s$1_k$2_c$3.log | tr -s ' ' | tr '\n' '|')"
done
for tmo in 30; do
  t0=$(date +%s)
  timeout 100 $M -np 8 --mca coll_gpu_timeout $tmo $G/test/gpu/test_gpu_mixed mixed 8 > $OUT/a/mixed_np8_t$tmo.log 2>&1
  echo "mixed np 8 timeout $tmo: rc=$? $(( $(date +%s) - t0 )) s, $(grep -c ^PASS $OUT/a/mixed_np8_t$tmo.log) PASS, $(grep -c ^FAIL $OUT/a/mixed_np8_t$tmo.log) FAIL"
  grep -E "kept|timed out|waited" $OUT/a/mixed_np8_t$tmo.log | head -4
done
CUDA_VISIBLE_DEVICES=0,1 RELIABILITY_NP="1 2" RELIABILITY_SIZES="8" RELIABILITY_WATCHDOG=120 \
  timeout 200 sh test/gpu/run_reliability.sh $G > $OUT/a/reliability_2gpu_np1_2.txt 2>&1
grep -E "^FAIL|watchdog|passed, .* failed$" $OUT/a/reliability_2gpu_np1_2.txt | tail -6
