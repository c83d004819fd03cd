#!/bin/bash
# Session 6, 4x H100, run C: after 1d460cf (a node of one rank stages the new hierarchical
# collectives) and 49839a3 (pool off by default): the conformance test across 4 and 2
# virtual nodes, MPICH's stream test pattern under plain MPI_Init (np 2, 4), the
# point-to-point enqueue part at np 4.
#   bash docs/results/scripts/s6_4gpu_c.sh OUTDIR     (repository root, gpurun/ = the build)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --bind-to none -x LD_LIBRARY_PATH"
mkdir -p $OUT
T0=$(date +%s)
{
for vn in 4 2; do
  timeout 90 $M -np 4 --mca coll_gpu_virtual_nodes $vn --mca coll_gpu_timeout 10 $G/test/conform/test_conform --quick > $OUT/conform_np4_vn$vn.log 2>&1
  echo "conform np 4, $vn virtual nodes: rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/conform_np4_vn$vn.log | tail -1)"
  grep -h "^FAIL\|HANG" $OUT/conform_np4_vn$vn.log | head -5
done
for np in 2 4; do
  timeout 40 $M -np $np stdbuf -oL $G/test/mpi/test_mpix_stream > $OUT/stream_np$np.log 2>&1
  echo "test_mpix_stream np $np (plain MPI_Init): rc=$? $(grep -oE 'test_mpix_stream: [0-9]+ passed, [0-9]+ failed' $OUT/stream_np$np.log | tail -1)"
done
for i in 1 2; do
  timeout 30 $M -np 4 stdbuf -oL $G/test/mpi/test_mpix_stream p2p > $OUT/p2p_np4_$i.log 2>&1
  echo "test_mpix_stream p2p np 4, run $i: rc=$? $(grep -oE 'test_mpix_stream: [0-9]+ passed, [0-9]+ failed' $OUT/p2p_np4_$i.log | tail -1)"
done
echo "[$(( $(date +%s) - T0 )) s]"
} 2>&1 | tee $OUT/summary.txt
