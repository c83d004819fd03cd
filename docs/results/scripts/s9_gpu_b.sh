#!/bin/bash
# Session 9, 4x H100, run B: the nonblocking hierarchy on one thread per process (not one per
# communicator, B1) and then per communicator with the device temporary never freed in flight
# (B2): test_hier_nbv (three times) and test_hier_nb across 2 virtual nodes of 2 ranks,
# test_hier_nbv across 4; then the conformance test (blocking and nonblocking forms of every
# collective, v layouts with zero counts, gaps, in place, root-only arguments) across 2 and 4
# virtual nodes, counting the nonblocking calls that ran on the hierarchy's thread per kind.
#   bash docs/results/scripts/s9_gpu_b.sh OUTDIR     (repository root, gpurun/ = the build)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
export OMPI_MCA_mca_base_component_path="$OMPI_MCA_mca_base_component_path:$G/.libs"
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0,1,2,3
M="mpirun --bind-to none -x LD_LIBRARY_PATH -np 4"
mkdir -p $OUT
T0=$(date +%s)
kinds="gather gatherv scatter scatterv allgatherv alltoall alltoallv alltoallw reduce_scatter scan exscan"
thr() { # log: per kind, the nonblocking calls that ran on the hierarchy's thread
  for c in allreduce bcast reduce allgather reduce_scatter_block $kinds; do
    n=$(grep -c "nonblocking $c ran on the hierarchy's thread (hier .*): success" $1); [ $n -gt 0 ] && printf '%s %s, ' $c $n
  done; echo "errors $(grep -c "hierarchy's thread.*: [a-z ]*\(timed out\|invalid\|error\)" $1)"
}
{
for r in "2 a" "2 b" "2 c" "4 a"; do set -- $r
  timeout 120 $M --mca coll_gpu_virtual_nodes $1 --mca coll_gpu_verbose 10 $G/test/mpi/test_hier_nbv > $OUT/nbv_vn$1$2.log 2>&1
  echo "test_hier_nbv np 4, $1 virtual nodes: rc=$? $(grep -oE '^[0-9]+ passed, [0-9]+ failed' $OUT/nbv_vn$1$2.log); $(thr $OUT/nbv_vn$1$2.log)"
done
timeout 120 $M --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_verbose 10 $G/test/mpi/test_hier_nb > $OUT/nb_vn2.log 2>&1
echo "test_hier_nb np 4, 2 virtual nodes: rc=$? $(grep -oE '^[0-9]+ passed, [0-9]+ failed' $OUT/nb_vn2.log); $(thr $OUT/nb_vn2.log)"
echo "[$(( $(date +%s) - T0 )) s]"
for nv in 2 4; do
  timeout 170 $M --mca coll_gpu_virtual_nodes $nv --mca coll_gpu_verbose 10 $G/test/conform/test_conform --quick --mem device > $OUT/conform_vn$nv.log 2>&1
  echo "test_conform --quick --mem device np 4, $nv virtual nodes: rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/conform_vn$nv.log | tail -1); $(thr $OUT/conform_vn$nv.log)"
  grep -E '^FAIL|FAIL ' $OUT/conform_vn$nv.log | head -5
  echo "[$(( $(date +%s) - T0 )) s]"
done
} 2>&1 | tee $OUT/summary.txt
(cd $OUT && for f in *.log; do grep -v "ran on the hierarchy's thread (hier .*): success" $f > $f.x; mv $f.x $f; done; tar czf logs.tgz *.log; rm -f *.log)
