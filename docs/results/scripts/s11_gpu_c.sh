#!/bin/bash
# 4x H100, session 11 c: test_mpix_types after its receives with gaps take
# messages by reference through host memory: the whole program at np 2,
# point to point only ("p2p") at np 4, np 3 with CUDA IPC off, across 2
# virtual nodes, under MPI_THREAD_MULTIPLE and 4 ranks on 2 GPUs under MPS;
# a probe of the stall b/ met (GPUCOLL_STREAM_GAPS_BY_IPC=1, IPC trace,
# coll_gpu_timeout 8); then the staged pipeline with 16 channels (the new
# default) over UCX sm and tcp, 2 GPUs as 2 virtual nodes, beside NCCL's SHM
# and socket paths in the same run.  Logs in $OUT/c.tgz.
. .gpuhost/setup.sh
G=$PWD/gpurun
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
L=/tmp/s11c; rm -rf $L; mkdir -p $L
trap 'tar czf $OUT/c.tgz -C /tmp s11c' EXIT
T=$G/test/mpi/test_mpix_types
t() { # tag limit args...
  local tag=$1 lim=$2 t0=$(date +%s); shift 2
  timeout $lim "$@" > $L/$tag.log 2>&1
  echo "$tag: rc=$? $(( $(date +%s) - t0 )) s, $(grep -c ^FAIL $L/$tag.log) FAIL lines; $(grep -E 'passed, [0-9]+ failed' $L/$tag.log | tail -1)"
}
t probe_by_ipc_np2 40 $M -np 2 -x GPUCOLL_STREAM_GAPS_BY_IPC=1 -x GPUCOLL_STREAM_VERBOSE=2 --mca coll_gpu_timeout 8 $T p2p
grep -v "^\[" $L/probe_by_ipc_np2.log | grep -v "^PASS" | tail -12 | cut -c1-300
t types_np2 170 $M -np 2 $T
t p2p_np4 40 $M -np 4 $T p2p
t p2p_np3_noipc 40 $M -np 3 -x GPUCOLL_STREAM_IPC=0 $T p2p
t p2p_np4_vn2 40 $M -np 4 --mca coll_gpu_virtual_nodes 2 $T p2p
t p2p_np2_multiple 40 $M -np 2 $T multiple p2p
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
mkdir -p /tmp/mps /tmp/mpslog && nvidia-cuda-mps-control -d
CUDA_VISIBLE_DEVICES=0,1 t p2p_np4_2gpu_mps 40 $M -np 4 -x CUDA_VISIBLE_DEVICES -x CUDA_MPS_PIPE_DIRECTORY $T p2p
echo quit | nvidia-cuda-mps-control
unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
grep -h "^FAIL\|rank [0-9]*: \|waited" $L/types_*.log $L/p2p_*.log | head -10
sleep 1
BN="$G/test/bench/gpucoll_bench -n 20 -r 3 -c allreduce"
X="-x UCX_TLS -x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE -x NCCL_NVLS_ENABLE -x CUDA_VISIBLE_DEVICES --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_verbose 1"
env UCX_TLS=sm,self NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=0 NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0,1 \
  timeout 100 $M -np 2 $X $BN -b 65536 -e 67108864 > $L/sm_bench_default.log 2>&1
echo "UCX sm, default channels: rc=$? $(grep -m1 -oE '[0-9]+ channels?' $L/sm_bench_default.log)"; grep -E '^ +[0-9]+ ' $L/sm_bench_default.log
env UCX_TLS=tcp,self NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0,1 \
  timeout 120 $M -np 2 $X $BN -b 8 -e 67108864 > $L/tcp_bench_default.log 2>&1
echo "UCX tcp, default channels: rc=$? $(grep -m1 -oE '[0-9]+ channels?' $L/tcp_bench_default.log)"; grep -E '^ +[0-9]+ ' $L/tcp_bench_default.log
