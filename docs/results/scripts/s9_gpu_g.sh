#!/bin/bash
# Session 9, 4x H100, run G: a rank that moves nothing at all (a gatherv non-root sending
# nothing from NULL, a scatterv non-root receiving nothing into NULL) follows its peers' device
# calls once the communicator's GPU path is set up (GPU_MEM_EMPTY) instead of making every
# rank stage: test_null_sides (timing records per collective: blocking ones name a GPU path),
# the conformance tests (zero counts with NULL buffers everywhere) on one node and across 2
# virtual nodes, test_hier_nbv.
#   bash docs/results/scripts/s9_gpu_g.sh OUTDIR     (repository root, gpurun/ = the build)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0,1,2,3
M="mpirun --bind-to none -x LD_LIBRARY_PATH"
mkdir -p $OUT
T0=$(date +%s)
blk() { cat $1.* 2>/dev/null | grep -oE '"coll":"[a-z_]+","algo":"[a-z]+[^"]*","bytes":[0-9]+,"blocking":1' | sed 's/"coll":"//; s/","algo":"/:/; s/","bytes.*//' | sort | uniq -c | awk '{printf "%s %s; ", $2, $1}'; echo; }
res() { echo "rc=$1 $(grep -oE '[0-9]+ passed, [0-9]+ failed' $2 | tail -1)"; grep -E '^FAIL' $2 | cut -c1-150 | head -3; }
{
for np in 2 3 4; do
  timeout 60 $M -np $np --mca coll_gpu_timing_file $OUT/n$np $G/test/mpi/test_null_sides > $OUT/null_np$np.log 2>&1
  echo "test_null_sides np $np: $(res $? $OUT/null_np$np.log); blocking: $(blk $OUT/n$np)"
  timeout 100 $M -np $np $G/test/conform/test_conform --quick --mem device > $OUT/conform_np$np.log 2>&1
  echo "test_conform --quick --mem device np $np: $(res $? $OUT/conform_np$np.log)"
done
timeout 100 $M -np 4 $G/test/conform/test_conform_nbr --quick > $OUT/nbr_np4.log 2>&1
echo "test_conform_nbr --quick np 4: $(res $? $OUT/nbr_np4.log)"
timeout 60 $M -np 4 --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_timing_file $OUT/nv $G/test/mpi/test_null_sides > $OUT/null_vn2.log 2>&1
echo "test_null_sides np 4, 2 virtual nodes: $(res $? $OUT/null_vn2.log); blocking: $(blk $OUT/nv)"
timeout 100 $M -np 4 --mca coll_gpu_virtual_nodes 2 $G/test/conform/test_conform --quick --mem device > $OUT/conform_vn2.log 2>&1
echo "test_conform --quick --mem device np 4, 2 virtual nodes: $(res $? $OUT/conform_vn2.log)"
timeout 100 $M -np 4 --mca coll_gpu_virtual_nodes 2 $G/test/conform/test_conform_nbr --quick > $OUT/nbr_vn2.log 2>&1
echo "test_conform_nbr --quick np 4, 2 virtual nodes: $(res $? $OUT/nbr_vn2.log)"
timeout 100 $M -np 4 --mca coll_gpu_virtual_nodes 2 $G/test/mpi/test_hier_nbv > $OUT/nbv_vn2.log 2>&1
echo "test_hier_nbv np 4, 2 virtual nodes: $(res $? $OUT/nbv_vn2.log)"
echo "[$(( $(date +%s) - T0 )) s]"
} 2>&1 | tee $OUT/summary.txt
(cd $OUT && tar czf logs.tgz *.log; rm -rf *.log n[0-9v].*)
