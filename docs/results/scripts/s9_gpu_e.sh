#!/bin/bash
# Session 9, 4x H100, run E: test_conform_nbr --quick on one node (np 2, 3, 4) and across 2
# virtual nodes with NULL-side calls taking GPU paths except the neighbourhood alltoalls (this
# build), and with the build of 01899f2 (gpurun/old: every NULL side staged) for comparison.
#   bash docs/results/scripts/s9_gpu_e.sh OUTDIR     (repository root, gpurun/ = the build)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
(cd $G/old && xz -dkf mca_coll_gpu.so.xz && cp -f $G/.libs/mca_op_gpu.so $G/.libs/libgpucoll.so* .)
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0,1,2,3
BASE=$OMPI_MCA_mca_base_component_path
mkdir -p $OUT
labels() { cat $1.* 2>/dev/null | grep -oE '"coll":"neighbor_[a-z]+","algo":"[a-z]+' | sed 's/"coll":"neighbor_//; s/","algo":"/:/' | sort | uniq -c | awk '{printf "%s %s; ", $2, $1}'; echo; }
{
for b in new old; do
  L=$G/.libs; [ $b = old ] && L=$G/old
  export OMPI_MCA_mca_base_component_path="$BASE:$L"
  for np in 2 3 4; do
    timeout 120 mpirun --bind-to none -x LD_LIBRARY_PATH -np $np --mca coll_gpu_timing_file $OUT/t$b$np $G/test/conform/test_conform_nbr --quick > $OUT/nbr_${b}_np$np.log 2>&1
    echo "$b: test_conform_nbr --quick np $np: rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/nbr_${b}_np$np.log | tail -1); $(labels $OUT/t$b$np)"
    grep -E '^FAIL|FAIL ' $OUT/nbr_${b}_np$np.log | cut -c1-160 | head -4
  done
  timeout 120 mpirun --bind-to none -x LD_LIBRARY_PATH -np 4 --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_timing_file $OUT/t${b}v $G/test/conform/test_conform_nbr --quick > $OUT/nbr_${b}_vn2.log 2>&1
  echo "$b: test_conform_nbr --quick np 4, 2 virtual nodes: rc=$? $(grep -oE '[0-9]+ passed, [0-9]+ failed' $OUT/nbr_${b}_vn2.log | tail -1); $(labels $OUT/t${b}v)"
done
} 2>&1 | tee $OUT/summary.txt
(cd $OUT && tar czf logs.tgz *.log; rm -rf *.log t*[0-9v].*)
