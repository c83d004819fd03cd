#!/bin/bash
# Issue 39 item 1, after the UCX wait change (spin up to 2 ms idle, sleeps up to 50 us): the staged
# collectives across 2 virtual nodes, 8 channels, against NCCL SHM (UCX sm) and socket (UCX tcp)
# paths, same run; size:ours_us/nccl_us.  GPU host, repo root, gpurun/ carried.
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0,1
b() { tag=$1; tls=$2; lo=$3; hi=$4; shift 4; printf '%-12s' "$tag"; env UCX_TLS=$tls NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=$SHMOFF timeout 60 mpirun --bind-to none -np 2 -x LD_LIBRARY_PATH -x CUDA_VISIBLE_DEVICES -x UCX_TLS -x NCCL_P2P_DISABLE -x NCCL_SHM_DISABLE --mca coll_gpu_virtual_nodes 2 "$@" $G/test/bench/gpucoll_bench -c $C -b $lo -e $hi -n 20 -r 3 > /tmp/o.txt 2>&1; grep -E "^ +[0-9]" /tmp/o.txt | awk '{printf "%s:%s/%s ", $1, $2, $5} END {print ""}'; }
C=allreduce; SHMOFF=0; b sm sm,self 65536 67108864
C=allreduce; SHMOFF=1; b tcp tcp,self 8 67108864
C=bcast; SHMOFF=0; b sm_bcast sm,self 1048576 67108864
C=allgather; SHMOFF=0; b sm_allgather sm,self 1048576 67108864
mpirun --bind-to none -np 2 --mca coll_gpu_virtual_nodes 2 -x LD_LIBRARY_PATH -x CUDA_VISIBLE_DEVICES $G/test/gpu/test_gpu_allreduce 2>&1 | grep -E "passed|failed" | tail -1
