#!/bin/bash
# Issue 39 item 1, follow-up of stage_chan_gpu.sh: the staged allreduce across 2 virtual nodes
# with coll_gpu_net_rndv_thresh at its default (64 KiB), against NCCL on its socket (UCX tcp)
# and SHM (UCX sm) paths, same run.  Prints size:ours_us/nccl_us per size.
# GPU host, repo root, gpurun/ carried:  bash docs/results/scripts/stage_rndv_gpu.sh
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0,1
b() { tag=$1; tls=$2; lo=$3; hi=$4; shift 4; printf '%-22s' "$tag"; env UCX_TLS=$tls NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=$SHMOFF timeout 60 mpirun --bind-to none -np 2 -x LD_LIBRARY_PATH -x CUDA_VISIBLE_DEVICES -x UCX_TLS -x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE --mca coll_gpu_virtual_nodes 2 "$@" $G/test/bench/gpucoll_bench -c allreduce -b $lo -e $hi -n 20 -r 3 > /tmp/o.txt 2>&1; grep -E "^ +[0-9]" /tmp/o.txt | awk '{printf "%s:%s/%s ", $1, $2, $5} END {print ""}'; }
SHMOFF=1
b tcp_def tcp,self 4096 262144
SHMOFF=0
b sm_def sm,self 65536 1048576
SHMOFF=1; b tcp_ch8_big tcp,self 262144 67108864
SHMOFF=0; b sm_big sm,self 1048576 67108864
