#!/bin/bash
# Tuning sweep on the GPU host (not a test): two-shot blocks/threads and
# one-shot blocks, printing the benchmark's lines for each setting.
B=$(pwd)/build
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$B/.libs"
for nb in 32 64; do for nt in 512 1024; do for sc in 67108864 134217728; do
  echo "## two-shot nblocks=$nb nthreads=$nt scratch=$sc"
  mpirun --bind-to none -np 2 --mca coll_gpu_nblocks $nb --mca coll_gpu_nthreads $nt --mca coll_gpu_scratch_bytes $sc \
    "$B/test/bench/gpucoll_bench" --no-nccl -b 67108864 -e 2147483648 -n 10 | grep -v "^#\|size"
done; done; done
for ob in 1 2 4 8; do
  echo "## one-shot blocks=$ob"
  mpirun --bind-to none -np 2 --mca coll_gpu_oneshot_blocks $ob "$B/test/bench/gpucoll_bench" --no-nccl -b 8 -e 1048576 -n 300 | grep -v "^#\|size"
done
