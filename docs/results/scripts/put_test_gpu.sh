#!/bin/bash
# test_gpu_put (memory kinds the put path may not share, buffers inside
# allocations, freed and remade buffers, guards) on 2 GPUs: np 2 default and
# with the put path forced (written, read, copy engines), np 3 and 4 under MPS
# forced (spread bcast).  One line per run in $1/summary.txt.
OUT=${1:?out}
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CUDA_VISIBLE_DEVICES=0,1
M="mpirun --bind-to none --oversubscribe -x CUDA_VISIBLE_DEVICES"
F="--mca coll_gpu_put_min 1 --mca coll_gpu_persist 0"
mkdir -p $OUT/logs
run() { tag=$1; shift; timeout 150 "$@" > $OUT/logs/$tag.log 2>&1; rc=$?
  printf '%-22s %-30s rc=%d\n' $tag "$(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/logs/$tag.log | tail -1)" $rc | tee -a $OUT/summary.txt
  grep '^FAIL' $OUT/logs/$tag.log | head -5 | tee -a $OUT/summary.txt; }
run np2_default $M -np 2 $G/test/gpu/test_gpu_put
run np2_forced $M -np 2 $F $G/test/gpu/test_gpu_put
run np2_forced_read $M -np 2 $F --mca coll_gpu_put_read 1 $G/test/gpu/test_gpu_put
run np2_forced_ce $M -np 2 $F --mca coll_gpu_put_ce 1 $G/test/gpu/test_gpu_put
run np2_forced_odd $M -np 2 $F $G/test/gpu/test_gpu_put 1001
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps CUDA_MPS_LOG_DIRECTORY=/tmp/mpslog
mkdir -p /tmp/mps /tmp/mpslog && nvidia-cuda-mps-control -d
run np3_forced_mps $M -np 3 -x CUDA_MPS_PIPE_DIRECTORY $F $G/test/gpu/test_gpu_put
run np4_forced_mps $M -np 4 -x CUDA_MPS_PIPE_DIRECTORY $F $G/test/gpu/test_gpu_put
run np4_default_mps $M -np 4 -x CUDA_MPS_PIPE_DIRECTORY $G/test/gpu/test_gpu_put
echo quit | nvidia-cuda-mps-control
(cd $OUT && tar czf logs.tgz logs && rm -rf logs)
