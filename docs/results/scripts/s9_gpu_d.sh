#!/bin/bash
# Session 9, 4x H100, run D: a side that moves nothing from NULL (count 0) no longer makes a
# call stage (gpu_mem_of): the conformance tests on one node (np 2, 3, 4) and across 2 virtual
# nodes, counting from the timing file how many neighbor_allgatherv calls took a GPU path, and
# the nonblocking ones on the hierarchy's thread.
#   bash docs/results/scripts/s9_gpu_d.sh OUTDIR     (repository root, gpurun/ = the build)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0,1,2,3
M="mpirun --bind-to none -x LD_LIBRARY_PATH"
mkdir -p $OUT
T0=$(date +%s)
thr() {
  grep -oE "nonblocking [a-z_]+ ran on the hierarchy's thread \(hier [^)]*\): success" $1 | awk '{print $2}' | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}'
  echo "errors $(grep -c "hierarchy's thread.*: [a-z ]*\(timed out\|invalid\|error\)" $1)"
}
labels() { cat $1.* 2>/dev/null | grep -oE '"coll":"neighbor_[a-z]+","algo":"[a-z]+' | sort | uniq -c | awk '{printf "%s %s; ", $2, $1}'; echo; }
{
for np in 4 3 2; do
  timeout 120 $M -np $np $G/test/conform/test_conform --quick --mem device > $OUT/conform_np$np.log 2>&1
  echo "test_conform --quick --mem device np $np, one node: rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/conform_np$np.log | tail -1)"
  grep -E '^FAIL|FAIL ' $OUT/conform_np$np.log | head -3
  timeout 120 $M -np $np --mca coll_gpu_timing_file $OUT/tn$np $G/test/conform/test_conform_nbr --quick > $OUT/nbr_np$np.log 2>&1
  echo "test_conform_nbr --quick np $np, one node: rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/nbr_np$np.log | tail -1); timing records: $(labels $OUT/tn$np)"
  grep -E '^FAIL|FAIL ' $OUT/nbr_np$np.log | head -3
done
echo "[$(( $(date +%s) - T0 )) s]"
timeout 150 $M -np 4 --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_verbose 10 --mca coll_gpu_timing_file $OUT/tv $G/test/conform/test_conform_nbr --quick > $OUT/nbr_vn2.log 2>&1
echo "test_conform_nbr --quick np 4, 2 virtual nodes: rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/nbr_vn2.log | tail -1); thread: $(thr $OUT/nbr_vn2.log); timing records: $(labels $OUT/tv)"
timeout 150 $M -np 4 --mca coll_gpu_virtual_nodes 2 $G/test/conform/test_conform --quick --mem device > $OUT/conform_vn2.log 2>&1
echo "test_conform --quick --mem device np 4, 2 virtual nodes: rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/conform_vn2.log | tail -1)"
timeout 100 $M -np 4 --mca coll_gpu_virtual_nodes 2 $G/test/mpi/test_hier_nbv > $OUT/nbv_vn2.log 2>&1
echo "test_hier_nbv np 4, 2 virtual nodes: rc=$? $(grep -oE '^[0-9]+ passed, [0-9]+ failed' $OUT/nbv_vn2.log)"
echo "[$(( $(date +%s) - T0 )) s]"
} 2>&1 | tee $OUT/summary.txt
(cd $OUT && for f in *.log; do grep -v "ran on the hierarchy's thread (hier .*): success" $f > $f.x; mv $f.x $f; done; tar czf logs.tgz *.log; rm -rf *.log tn* tv*)
