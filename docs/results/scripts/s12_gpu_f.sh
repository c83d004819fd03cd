#!/bin/bash
# 4x H100, session 12 f: is e/'s np 3 failure of test_gpu_colls' int reduces
# the device's or the test's?  s12_probe_reduce.c (built here as
# gpurun/probe/rd): MPI_Reduce of random MPI_INT and integer-valued MPI_FLOAT,
# SUM and MAX, every root, in place and not, 1-16 MiB, on device buffers,
# against a reference folded on the host from an allgather of the inputs; at
# np 3 and 4, with the two-shot kernel to the root (default) and without
# (coll_gpu_reduce_twoshot_min 0).
. .gpuhost/setup.sh
G=$PWD/gpurun
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
M="mpirun --bind-to none --oversubscribe -x LD_LIBRARY_PATH"
for np in 3 4; do
  for m in 1048576 0; do
    echo "== np $np, coll_gpu_reduce_twoshot_min $m"
    timeout 60 $M -np $np --mca coll_gpu_reduce_twoshot_min $m $G/probe/rd 2>&1 | grep -E "BAD|probe" | head -12
  done
done
