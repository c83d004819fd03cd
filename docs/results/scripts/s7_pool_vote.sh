#!/bin/bash
# Issue 37 item 3, the pool's cost: the lease voted on the memory-kind board (no host exchange
# per large call).  allreduce 8 B-8 MiB at np 2 (GPUs 0,1) and 4 with coll_gpu_pool 1 and 0,
# and with the pool at coll_gpu_pool_comm_bytes 0 (no cut: the resident kernel's full range,
# the per-call lease alone) to tell the lease's cost from the cut's; the pool's lease counts at
# verbose 10; test_gpu_comm_memory with the pool on and off.
#   bash docs/results/scripts/s7_pool_vote.sh OUTDIR     (repository root, gpurun/ = the build)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --bind-to none -x LD_LIBRARY_PATH -x CUDA_VISIBLE_DEVICES"
B=$G/test/bench/gpucoll_bench
mkdir -p $OUT
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tee $OUT/gpus.txt
gpus() { if [ $1 = 2 ]; then export CUDA_VISIBLE_DEVICES=0,1; else export CUDA_VISIBLE_DEVICES=0,1,2,3; fi; }
for np in 2 4; do gpus $np; for cfg in "1 3145728" "0 3145728" "1 0"; do set -- $cfg
  echo "== allreduce np $np, coll_gpu_pool $1, coll_gpu_pool_comm_bytes $2"
  timeout 60 $M -np $np --mca coll_gpu_pool $1 --mca coll_gpu_pool_comm_bytes $2 \
    $B -c allreduce -e 8388608 2>&1 | grep -E "^ +[0-9]"
done; done 2>&1 | tee $OUT/allreduce_pool.txt | awk '/^==/ || $1 >= 65536'
echo "[$(( $(date +%s) - T0 )) s]"
for np in 2 4; do gpus $np
  echo "== np $np, coll_gpu_pool 1, verbose 10: how the large calls leased the pool"
  timeout 60 $M -np $np --mca coll_gpu_pool 1 --mca coll_gpu_verbose 10 \
    $B -c allreduce -b 4194304 -e 8388608 -n 20 -r 1 --no-nccl 2>&1 | grep -E "leased by|pool was busy|pool of"
done 2>&1 | tee $OUT/pool_leases.txt
for np in 2 4; do gpus $np; for pool in 1 0; do
  echo "== test_gpu_comm_memory np $np, coll_gpu_pool $pool"
  timeout 75 $M -np $np --mca coll_gpu_pool $pool $G/test/gpu/test_gpu_comm_memory 0 0 2>&1 | tail -25
  echo "rc=$?"
done; done > $OUT/comm_memory.txt 2>&1
grep -E "^==|passed|^FAIL" $OUT/comm_memory.txt
echo "[$(( $(date +%s) - T0 )) s]"
