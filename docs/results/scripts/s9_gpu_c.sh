#!/bin/bash
# Session 9, 4x H100, run C: nonblocking and persistent neighbourhood collectives across nodes
# on the hierarchy's thread: test_conform_nbr --quick (blocking, nonblocking, persistent forms on
# cartesian, graph and distributed-graph topologies, periodic extent 1-2 in two rounds) across 2
# and 4 virtual nodes, counting the calls that ran on the thread per collective; test_hier_nbv and
# test_conform across 2 virtual nodes again (no regression).
#   bash docs/results/scripts/s9_gpu_c.sh OUTDIR     (repository root, gpurun/ = the build)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0,1,2,3
M="mpirun --bind-to none -x LD_LIBRARY_PATH -np 4"
mkdir -p $OUT
T0=$(date +%s)
thr() { # log: per collective, the nonblocking calls that ran on the hierarchy's thread
  grep -oE "nonblocking [a-z_]+ ran on the hierarchy's thread \(hier [^)]*\): success" $1 | awk '{print $2}' | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}'
  echo "errors $(grep -c "hierarchy's thread.*: [a-z ]*\(timed out\|invalid\|error\)" $1)"
}
{
for nv in 2 4; do
  timeout 150 $M --mca coll_gpu_virtual_nodes $nv --mca coll_gpu_verbose 10 $G/test/conform/test_conform_nbr --quick > $OUT/nbr_vn$nv.log 2>&1
  echo "test_conform_nbr --quick np 4, $nv virtual nodes: rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/nbr_vn$nv.log | tail -1); $(thr $OUT/nbr_vn$nv.log)"
  grep -E '^FAIL|FAIL ' $OUT/nbr_vn$nv.log | head -5
  echo "[$(( $(date +%s) - T0 )) s]"
done
timeout 100 $M --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_verbose 10 $G/test/mpi/test_hier_nbv > $OUT/nbv_vn2.log 2>&1
echo "test_hier_nbv np 4, 2 virtual nodes: rc=$? $(grep -oE '^[0-9]+ passed, [0-9]+ failed' $OUT/nbv_vn2.log); $(thr $OUT/nbv_vn2.log)"
timeout 150 $M --mca coll_gpu_virtual_nodes 2 $G/test/conform/test_conform --quick --mem device > $OUT/conform_vn2.log 2>&1
echo "test_conform --quick --mem device np 4, 2 virtual nodes: rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/conform_vn2.log | tail -1)"
timeout 150 $M $G/test/conform/test_conform_nbr --quick > $OUT/nbr_1node.log 2>&1
echo "test_conform_nbr --quick np 4, one node: rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/nbr_1node.log | tail -1)"
echo "[$(( $(date +%s) - T0 )) s]"
} 2>&1 | tee $OUT/summary.txt
(cd $OUT && for f in *.log; do grep -v "ran on the hierarchy's thread (hier .*): success" $f > $f.x; mv $f.x $f; done; tar czf logs.tgz *.log; rm -f *.log)
