#!/bin/bash
# Session 9, 4x H100, run F: sides that move nothing from NULL (count 0) keep a call on its GPU
# path (gpu_mem_of) and are never read as in place (the alltoall(v) and neighbourhood plans):
# test_null_sides, test_conform_nbr and test_conform on one node (np 2, 3, 4) and across 2
# virtual nodes, this build against gpurun/old (the build of 01899f2, whose DBG line under
# GPUDBG=1 shows it is the one loaded), paths from the timing records.
#   bash docs/results/scripts/s9_gpu_f.sh OUTDIR     (repository root, gpurun/ = the build)
OUT=${1:?out}
. .gpuhost/setup.sh >/dev/null 2>&1
G=$PWD/gpurun
mkdir -p $G/oldlib && (cd $G/old && xz -dkf mca_coll_gpu.so.xz && mv -f mca_coll_gpu.so $G/oldlib/)
export LD_LIBRARY_PATH=$G/.libs:$LD_LIBRARY_PATH CUDA_VISIBLE_DEVICES=0,1,2,3
BASE=$OMPI_MCA_mca_base_component_path
mkdir -p $OUT
labels() { cat $1.* 2>/dev/null | grep -oE '"coll":"[a-z_]+","algo":"[a-z]+' | sed 's/"coll":"//; s/","algo":"/:/' | sort | uniq -c | awk '{printf "%s %s; ", $2, $1}'; echo; }
res() { echo "rc=$1 $(grep -oE '[0-9]+ passed, [0-9]+ failed' $2 | tail -1)"; grep -E '^FAIL' $2 | cut -c1-150 | head -3; }
{
for b in new old; do
  L=$G/.libs; [ $b = old ] && L=$G/oldlib
  export OMPI_MCA_mca_base_component_path="$BASE:$L"
  GPUDBG=1 timeout 60 mpirun --bind-to none -x LD_LIBRARY_PATH -x GPUDBG -np 2 $G/test/mpi/test_null_sides > $OUT/dbg_$b.log 2>&1
  echo "$b: DBG lines (old build only): $(grep -c '^DBG' $OUT/dbg_$b.log)"
  for np in 2 3 4; do
    timeout 60 mpirun --bind-to none -x LD_LIBRARY_PATH -np $np --mca coll_gpu_timing_file $OUT/n$b$np $G/test/mpi/test_null_sides > $OUT/null_${b}_np$np.log 2>&1
    echo "$b: test_null_sides np $np: $(res $? $OUT/null_${b}_np$np.log); $(labels $OUT/n$b$np)"
    timeout 100 mpirun --bind-to none -x LD_LIBRARY_PATH -np $np $G/test/conform/test_conform_nbr --quick > $OUT/nbr_${b}_np$np.log 2>&1
    echo "$b: test_conform_nbr --quick np $np: $(res $? $OUT/nbr_${b}_np$np.log)"
  done
done
export OMPI_MCA_mca_base_component_path="$BASE:$G/.libs"
timeout 100 mpirun --bind-to none -x LD_LIBRARY_PATH -np 4 $G/test/conform/test_conform --quick --mem device > $OUT/conform_np4.log 2>&1
echo "new: test_conform --quick --mem device np 4: $(res $? $OUT/conform_np4.log)"
timeout 100 mpirun --bind-to none -x LD_LIBRARY_PATH -np 3 $G/test/conform/test_conform --quick --mem device > $OUT/conform_np3.log 2>&1
echo "new: test_conform --quick --mem device np 3: $(res $? $OUT/conform_np3.log)"
timeout 100 mpirun --bind-to none -x LD_LIBRARY_PATH -np 4 --mca coll_gpu_virtual_nodes 2 $G/test/conform/test_conform --quick --mem device > $OUT/conform_vn2.log 2>&1
echo "new: test_conform --quick --mem device np 4, 2 virtual nodes: $(res $? $OUT/conform_vn2.log)"
timeout 100 mpirun --bind-to none -x LD_LIBRARY_PATH -np 4 --mca coll_gpu_virtual_nodes 2 $G/test/conform/test_conform_nbr --quick > $OUT/nbr_vn2.log 2>&1
echo "new: test_conform_nbr --quick np 4, 2 virtual nodes: $(res $? $OUT/nbr_vn2.log)"
timeout 100 mpirun --bind-to none -x LD_LIBRARY_PATH -np 4 --mca coll_gpu_virtual_nodes 2 --mca coll_gpu_timing_file $OUT/nv $G/test/mpi/test_null_sides > $OUT/null_vn2.log 2>&1
echo "new: test_null_sides np 4, 2 virtual nodes: $(res $? $OUT/null_vn2.log); $(labels $OUT/nv)"
} 2>&1 | tee $OUT/summary.txt
(cd $OUT && tar czf logs.tgz *.log; rm -rf *.log n*[0-9v].*)
