#!/bin/bash
# Session 6, 4x H100, run A: issue 36's neighbourhood target (MPI_Neighbor_alltoall,
# 2x2 periodic, against NCCL's grouped send/recv), bcast on 4 GPUs (the spread
# kernel's turned order; the spread at every size), the enqueued 8-byte graph replay
# against NCCL's (np 2 and 4; the component before the stream kernel's change in
# gpurun/old), then the conformance matrix (test/gpu/conform_gpu.sh).
#   bash docs/results/scripts/s6_4gpu_a.sh OUTDIR     (repository root, gpurun/ = the build)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
BASEPATH=$OMPI_MCA_mca_base_component_path
export OMPI_MCA_mca_base_component_path="$BASEPATH:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --bind-to none -x LD_LIBRARY_PATH"
B=$G/test/bench/gpucoll_bench
mkdir -p $OUT
T0=$(date +%s)
nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | tee $OUT/gpus.txt
timeout 90 $M -np 4 $B -c neighbor_alltoall -e 67108864 > $OUT/bench_neighbor_alltoall_4gpu.txt 2>&1
grep -E "^ +[0-9]|^#" $OUT/bench_neighbor_alltoall_4gpu.txt
timeout 90 $M -np 4 $B -c bcast -e 67108864 > $OUT/bcast_default_4gpu.txt 2>&1
grep -E "^ +[0-9]" $OUT/bcast_default_4gpu.txt | awk '$1 >= 524288'
echo "== bcast spread at every size (--mca coll_gpu_bcast_chain_min 1073741824)" | tee $OUT/bcast_spread_4gpu.txt
timeout 90 $M -np 4 --mca coll_gpu_bcast_chain_min 1073741824 $B -c bcast -b 1048576 -e 67108864 2>&1 | tee -a $OUT/bcast_spread_4gpu.txt | grep -E "^ +[0-9]"
echo "[$(( $(date +%s) - T0 )) s]"
for np in 2 4; do
  if [ $np = 2 ]; then export CUDA_VISIBLE_DEVICES=0,1; else export CUDA_VISIBLE_DEVICES=0,1,2,3; fi
  for rep in 1 2; do
    echo "== np $np, round $rep: this build, the build before (gpurun/old), NCCL's replay"
    timeout 60 $M -x CUDA_VISIBLE_DEVICES -np $np $G/demo/mpix_enqueue_demo 2>&1 | grep -E "replay"
    OMPI_MCA_mca_base_component_path="$BASEPATH:$G/old/.libs" timeout 60 $M -x CUDA_VISIBLE_DEVICES -np $np $G/demo/mpix_enqueue_demo 2>&1 | grep -E "replay of"
    timeout 60 $M -x CUDA_VISIBLE_DEVICES -np $np $B -c allreduce -b 8 -e 8 --graph 2>&1 | tail -1
  done
done 2>&1 | tee $OUT/replay.txt
unset CUDA_VISIBLE_DEVICES
echo "[$(( $(date +%s) - T0 )) s]"
LIMIT=60 sh test/gpu/conform_gpu.sh $G $OUT/conf > /dev/null 2>&1
cat $OUT/conf/summary.txt; echo "failures:"; head -20 $OUT/conf/failures.txt 2>/dev/null
echo "[$(( $(date +%s) - T0 )) s]"
