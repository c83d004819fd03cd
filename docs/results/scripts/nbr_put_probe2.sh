#!/bin/bash
# 4 GPUs: bcast 1-16 MiB by path; 2 GPUs: the resident kernel's copy limit 1 MiB (default) vs 2 MiB
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$PWD/gpurun/.libs"
export LD_LIBRARY_PATH=$PWD/gpurun/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p $OUT
nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tee $OUT/gpus.txt
B=gpurun/test/bench/gpucoll_bench
run() { local np=$1 label=$2; shift 2; echo "== np $np $label"; timeout 60 mpirun --bind-to none -np $np -x LD_LIBRARY_PATH "$@" 2>&1 | grep -E "^ +[0-9]|rror" ; }
T0=$(date +%s)
{
for v in "" "--mca coll_gpu_bcast_chain_min 1048576" "--mca coll_gpu_xchg_nblocks 32" "--mca coll_gpu_xchg_nblocks 64" "--mca coll_gpu_put_min 33554432" "--mca coll_gpu_put_ce 1"; do
  run 4 "bcast ${v:-default}" $v $B -c bcast -b 1048576 -e 16777216
done
for c in bcast allgather alltoall reduce_scatter; do
  run 2 "$c default" $B -c $c -b 524288 -e 4194304
  run 2 "$c persist_max_bytes 2M" --mca coll_gpu_persist_max_bytes 2097152 $B -c $c -b 524288 -e 4194304
done
} 2>&1 | tee $OUT/probe2.txt
echo "[$(( $(date +%s) - T0 )) s]"
