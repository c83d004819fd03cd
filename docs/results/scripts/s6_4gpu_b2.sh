#!/bin/bash
# Session 6, 4x H100, run B2: libgpucoll under plain MPI_Init (issue 38): test/gpu/mpix_gpu.sh
# (MPICH's stream test pattern, the demo, the halo exchange on the point-to-point enqueue,
# 2 and 4 GPUs, with and without MPS), then 10 runs of the point-to-point part at np 4.
#   bash docs/results/scripts/s6_4gpu_b2.sh OUTDIR     (repository root, gpurun/ = the build)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p $OUT
T0=$(date +%s)
# the hang of run B1 (conformance across 4 virtual nodes, first gather case): the
# component's own waits bounded at 5 s, its log at verbose 20
( export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
  export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
  timeout 45 mpirun --bind-to none -x LD_LIBRARY_PATH -np 4 --mca coll_gpu_virtual_nodes 4 \
    --mca coll_gpu_timeout 5 --mca coll_gpu_verbose 20 $G/test/conform/test_conform --quick \
    > $OUT/vn4_diag.log 2>&1; echo "vn4 diag rc=$?" )
grep -nE "gather|timed out|waited|error|HANG|FAIL" $OUT/vn4_diag.log | head -60
LIMIT=${LIMIT:-30} sh test/gpu/mpix_gpu.sh $G $OUT/mpix 2>&1 | grep -vE "^    " | tail -40
echo "[$(( $(date +%s) - T0 )) s]"
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH
for i in $(seq 10); do
  timeout 30 mpirun --bind-to none -x LD_LIBRARY_PATH -np 4 $G/test/mpi/test_mpix_stream p2p 2>&1 | tail -1
done | sort | uniq -c | tee $OUT/p2p_loop.txt
echo "[$(( $(date +%s) - T0 )) s]"
